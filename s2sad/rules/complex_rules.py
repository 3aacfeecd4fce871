"""Gradient rules for complex numbers and ``np.fft``.

The convention is autograd's: the gradient of a real ``L`` with respect to a complex
``z = x + iy`` is ``dL/dx - i dL/dy`` (step along its conjugate to increase ``L``).  So a
holomorphic function's adjoint is ``g`` times its complex derivative, with no conjugate:
the rules of ``+ - * / **``, ``exp``, ``log``, ``sin`` and the other analytic functions,
of sums, products, ``@`` and the shape functions hold for complex values as written.  The
rules here are for what is not holomorphic (``real``, ``imag``, ``conj``, ``angle``,
``abs`` in numpy_rules.py) and for the FFTs, which are linear: each one's adjoint is its
transpose (the same transform: the DFT matrix is symmetric), and a real input keeps the
real part of its gradient.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import runtime as rt
from . import shapes
from .registry import REGISTRY

defvjp = REGISTRY.defvjp

# --- real and imaginary parts --------------------------------------------------------
defvjp(np.real, "val", linear="joint", val="real_grad(g, val)")
defvjp(np.imag, "val", linear="joint", val="imag_grad(g, val)")
defvjp(np.ndarray.real, "a", name=".real", linear="joint", a="real_grad(g, a)")
defvjp(np.ndarray.imag, "a", name=".imag", linear="joint", a="imag_grad(g, a)")
for conj in dict.fromkeys((np.conj, np.conjugate)):  # one ufunc in NumPy 2
    defvjp(conj, "x", elementwise=True, shape=shapes.elementwise(conj), x="np.conj(g)")
for conj in (np.ndarray.conj, np.ndarray.conjugate):
    defvjp(conj, "a", name="conj", linear="joint", a="np.conj(g)")
# real_if_close returns a real array when every imaginary part is negligible
defvjp(np.real_if_close, "a, tol=100", jvp={"a": "t if np.iscomplexobj(ans) else real_like(t, ans)"},
       a="g if np.iscomplexobj(ans) else real_grad(g, a)")
# angle(z) is the imaginary part of log(z): -i g / z for the real part of g (0 at 0)
_DEG = "(180 / np.pi if deg else 1.0)"
defvjp(np.angle, "z, deg=False", jvp={"z": f"np.imag(safe_divide(t, z)) * {_DEG}"},
       z=f"real_like(np.real(g) * safe_divide(-1j, z), z) * {_DEG}")
REGISTRY.declare_nondifferentiable(np.iscomplexobj, np.isrealobj, np.iscomplex, np.isreal)

# --- np.fft ----------------------------------------------------------------------------
#: Functions whose rules differentiate real values only (no conjugates): complex values are
#: refused when a gradient or tangent passes (``real_input``).  The runtime helpers of the
#: others (var_grad, norm_grad, the factorizations, max and min) refuse them themselves.
REAL_ONLY: frozenset[int] = frozenset(map(REGISTRY.key, (np.nanvar, np.nanstd, np.linalg.eigvalsh)))
#: Functions whose result is complex, and those whose result may be real, whatever their
#: arguments (real_if_close: when it is close): reverse mode keeps the real part of a
#: complex contribution to what may be real, and refuses a surely complex output.  The
#: transforms add themselves where their rules are declared (``transform``).
COMPLEX_RESULTS: set[int] = set()
REAL_RESULTS: set[int] = set(map(REGISTRY.key, (
    np.abs, abs, np.real, np.imag, np.ndarray.real, np.ndarray.imag, np.angle, np.real_if_close, np.linalg.norm,
    np.linalg.vector_norm, np.linalg.matrix_norm, np.linalg.svdvals)))


def transform(fun: Any, params: str, result: str | None, **kwargs: Any) -> None:
    """The rule of a linear transform (an FFT), and what its result is: ``"complex"`` or
    ``"real"`` whatever its input, or None (complex when its input is)."""
    REGISTRY.defvjp(fun, params, linear="joint", **kwargs)
    if result is not None:
        (COMPLEX_RESULTS if result == "complex" else REAL_RESULTS).add(REGISTRY.key(fun))


_ONE = "n, (axis,)"  # a 1-d FFT as an n-d one: its n for s, its axis for axes
for fun, inverse in ((np.fft.fft, False), (np.fft.ifft, True)):
    transform(fun, "a, n=None, axis=-1, norm=None", "complex", a=f"fftn_grad(g, a, {_ONE}, norm, {inverse})")
for fun, inverse in ((np.fft.fft2, False), (np.fft.ifft2, True)):
    transform(fun, "a, s=None, axes=(-2, -1), norm=None", "complex", a=f"fftn_grad(g, a, s, axes, norm, {inverse})")
for fun, inverse in ((np.fft.fftn, False), (np.fft.ifftn, True)):
    transform(fun, "a, s=None, axes=None, norm=None", "complex", a=f"fftn_grad(g, a, s, axes, norm, {inverse})")
transform(np.fft.rfft, "a, n=None, axis=-1, norm=None", "complex", a=f"rfftn_grad(g, a, {_ONE}, norm)")
transform(np.fft.irfft, "a, n=None, axis=-1, norm=None", "real", a=f"irfftn_grad(g, a, {_ONE}, norm)")
transform(np.fft.rfft2, "a, s=None, axes=(-2, -1), norm=None", "complex", a="rfftn_grad(g, a, s, axes, norm)")
transform(np.fft.irfft2, "a, s=None, axes=(-2, -1), norm=None", "real", a="irfftn_grad(g, a, s, axes, norm)")
transform(np.fft.rfftn, "a, s=None, axes=None, norm=None", "complex", a="rfftn_grad(g, a, s, axes, norm)")
transform(np.fft.irfftn, "a, s=None, axes=None, norm=None", "real", a="irfftn_grad(g, a, s, axes, norm)")
transform(np.fft.hfft, "a, n=None, axis=-1, norm=None", "real", a="hfft_grad(g, a, n, axis, norm)")
transform(np.fft.ihfft, "a, n=None, axis=-1, norm=None", "complex", a="ihfft_grad(g, a, n, axis, norm)")
transform(np.fft.fftshift, "x, axes=None", None, x="np.fft.ifftshift(g, axes)")
transform(np.fft.ifftshift, "x, axes=None", None, x="np.fft.fftshift(g, axes)")
REGISTRY.declare_nondifferentiable(np.fft.fftfreq, np.fft.rfftfreq)

#: Functions whose result is complex exactly when their argument ``x`` is (a gradient given in
#: x's type): the generated gradients of real values through complex ones are real.
COMPLEX_AS_X: frozenset[int] = frozenset(map(REGISTRY.key, (
    rt.real_like, rt.real_grad, rt.imag_grad, rt.fftn_grad, rt.rfftn_grad, rt.irfftn_grad, rt.hfft_grad,
    rt.ihfft_grad, rt.unbroadcast, rt.grad_like)))

# --- the helpers above (so that s2sad can differentiate its own output) -------------------
# each is the adjoint of a real-linear map, so its own adjoint is that map; a real x's
# gradient is real (the incoming one may carry an imaginary part of no meaning: real_like)
defvjp(rt.real_like, "ct, x", linear="joint", ct="real_like(g, x)")
defvjp(rt.real_input, "ct, x, name", linear="joint", ct="real_input(g, x, name)")
defvjp(rt.real_grad, "ct, x", linear="joint", ct="np.real(g)")
defvjp(rt.imag_grad, "ct, x", linear="joint", ct="np.imag(real_like(g, x))")
defvjp(rt.fftn_grad, "ct, x, s, axes, norm, inverse", linear="joint",
       ct="np.fft.ifftn(real_like(g, x), fft_lengths(s), axes, norm) if inverse else "
          "np.fft.fftn(real_like(g, x), fft_lengths(s), axes, norm)")
defvjp(rt.rfftn_grad, "ct, x, s, axes, norm", linear="joint", ct="np.fft.rfftn(np.real(g), fft_lengths(s), axes, norm)")
defvjp(rt.irfftn_grad, "ct, x, s, axes, norm", linear="joint",
       ct="np.fft.irfftn(real_like(g, x), fft_lengths(s), axes, norm)")
defvjp(rt.hfft_grad, "ct, x, n, axis, norm", linear="joint", ct="np.fft.hfft(real_like(g, x), n, axis, norm)")
defvjp(rt.ihfft_grad, "ct, x, n, axis, norm", linear="joint", ct="np.fft.ihfft(np.real(g), n, axis, norm)")
# (scipy.fft's DCTs) dct_grad applies a transpose: its adjoint is the transform, and back
_DCT = "type, s, axes, norm, inverse"
defvjp(rt.dct_grad, f"ct, x, {_DCT}", linear="joint", ct=f"dct_transform(g, {_DCT})")
defvjp(rt.dct_transform, f"x, {_DCT}", linear="joint", x=f"dct_grad(g, x, {_DCT})")
REGISTRY.declare_nondifferentiable(rt.fft_lengths)
