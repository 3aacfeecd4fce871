"""Rules for the functional forms of NumPy's in-place writes (issue 18): ``np.add.at(z, i, v)``
and ``np.subtract.at`` are written ``z = ufunc_add_at(z, i, v)``.  Each is linear in ``(a, b)``:
``a`` gets ``g`` itself, ``b`` the entries ``g[indices]`` (a repeated index passes its entry
once per occurrence), summed back to ``b``'s shape."""
from __future__ import annotations

from .. import runtime as rt
from .registry import REGISTRY

defvjp = REGISTRY.defvjp

defvjp(rt.ufunc_add_at, "a, indices, b", linear="joint", a="g", b="unbroadcast(g[indices], b)",
       jvp={"a": "t", "b": "ufunc_add_at(np.zeros_like(ans), indices, t)"})
defvjp(rt.ufunc_subtract_at, "a, indices, b", linear="joint", a="g", b="-unbroadcast(g[indices], b)",
       jvp={"a": "t", "b": "ufunc_subtract_at(np.zeros_like(ans), indices, t)"})
REGISTRY.declare_nondifferentiable(rt.view_flag, rt.check_out)
