"""Rules for the functional forms of NumPy's in-place writes (issue 18): ``np.add.at(z, i, v)``
and ``np.subtract.at`` are written ``z = ufunc_add_at(z, i, v)``.  Each is linear in ``(a, b)``:
``a`` gets ``g`` itself, ``b`` the entries ``g[indices]`` (a repeated index passes its entry
once per occurrence), summed back to ``b``'s shape.  ``np.maximum.at`` and ``np.minimum.at``
pass each entry of ``g`` to the value its slot kept (shared among ties: extremum_at_shares)."""
from __future__ import annotations

from .. import runtime as rt
from .registry import REGISTRY

defvjp = REGISTRY.defvjp

defvjp(rt.ufunc_add_at, "a, indices, b", linear="joint", a="g", b="unbroadcast(g[indices], b)",
       jvp={"a": "t", "b": "ufunc_add_at(np.zeros_like(ans), indices, t)"})
defvjp(rt.ufunc_subtract_at, "a, indices, b", linear="joint", a="g", b="-unbroadcast(g[indices], b)",
       jvp={"a": "t", "b": "ufunc_subtract_at(np.zeros_like(ans), indices, t)"})
_SHARES = "extremum_at_shares(a, indices, b, ans)"
for extremum_at in (rt.ufunc_maximum_at, rt.ufunc_minimum_at):
    defvjp(extremum_at, "a, indices, b", a=f"g * {_SHARES}[0]", b=f"unbroadcast(g[indices] * {_SHARES}[1], b)",
           jvp={"a": f"t * {_SHARES}[0]", "b": f"ufunc_add_at(np.zeros_like(ans), indices, t * {_SHARES}[1])"})
REGISTRY.declare_nondifferentiable(rt.view_flag, rt.check_out, rt.extremum_at_shares)
