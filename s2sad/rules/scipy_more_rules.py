"""Gradient rules for SciPy, continued: ``scipy.fft``, ``scipy.integrate``.

Imported by :mod:`s2sad.rules.scipy_rules` (so loaded with it, once SciPy is imported).
``scipy.fft``'s FFTs are ``np.fft``'s (the same helpers differentiate them); their
``workers`` and ``plan`` choose how they run, and ``overwrite_x=True`` is refused (gradients
read the input).  The DCTs are real-linear: each one's adjoint is its transpose
(``dct_grad``).
"""
from __future__ import annotations

from scipy import fft

from .complex_rules import transform
from .registry import REGISTRY

_OVERWRITE = {"overwrite_x": "SciPy may write over the input in place, where gradients read it; leave "
                             "overwrite_x=False"}
_HOW = "overwrite_x=False, workers=None, *, plan=None"
_ONE = "n, (axis,)"  # a 1-d FFT as an n-d one: its n for s, its axis for axes
_RUN = {"workers": None, "plan": None, "unsupported": _OVERWRITE}


def _fft(fun, params: str, result: str, template: str) -> None:
    transform(fun, f"x, {params}, norm=None, {_HOW}", result, name=f"scipy.fft.{fun.__name__}", x=template, **_RUN)


# --- scipy.fft ---------------------------------------------------------------------------------
for fun, inverse in ((fft.fft, False), (fft.ifft, True)):
    _fft(fun, "n=None, axis=-1", "complex", f"fftn_grad(g, x, {_ONE}, norm, {inverse})")
for fun, inverse in ((fft.fft2, False), (fft.ifft2, True)):
    _fft(fun, "s=None, axes=(-2, -1)", "complex", f"fftn_grad(g, x, s, axes, norm, {inverse})")
for fun, inverse in ((fft.fftn, False), (fft.ifftn, True)):
    _fft(fun, "s=None, axes=None", "complex", f"fftn_grad(g, x, s, axes, norm, {inverse})")
_fft(fft.rfft, "n=None, axis=-1", "complex", f"rfftn_grad(g, x, {_ONE}, norm)")
_fft(fft.irfft, "n=None, axis=-1", "real", f"irfftn_grad(g, x, {_ONE}, norm)")
_fft(fft.rfft2, "s=None, axes=(-2, -1)", "complex", "rfftn_grad(g, x, s, axes, norm)")
_fft(fft.irfft2, "s=None, axes=(-2, -1)", "real", "irfftn_grad(g, x, s, axes, norm)")
_fft(fft.rfftn, "s=None, axes=None", "complex", "rfftn_grad(g, x, s, axes, norm)")
_fft(fft.irfftn, "s=None, axes=None", "real", "irfftn_grad(g, x, s, axes, norm)")
_fft(fft.hfft, "n=None, axis=-1", "real", "hfft_grad(g, x, n, axis, norm)")
_fft(fft.ihfft, "n=None, axis=-1", "complex", "ihfft_grad(g, x, n, axis, norm)")
transform(fft.fftshift, "x, axes=None", None, name="scipy.fft.fftshift", x="np.fft.ifftshift(g, axes)")
transform(fft.ifftshift, "x, axes=None", None, name="scipy.fft.ifftshift", x="np.fft.fftshift(g, axes)")
REGISTRY.declare_nondifferentiable(fft.fftfreq, fft.rfftfreq, fft.next_fast_len)

# the DCTs of every type and norm (orthogonalize: as the norm says), their adjoint the transpose
_DCT = ("x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, orthogonalize=None")
_ORTHOGONALIZE = {"orthogonalize": "s2sad differentiates the DCT with orthogonalize as its norm implies only; "
                                   "leave orthogonalize out"}
for fun, inverse in ((fft.dct, False), (fft.idct, True)):
    transform(fun, _DCT, None, name=f"scipy.fft.{fun.__name__}", workers=None, type=None, n=None, axis=None,
              unsupported={**_OVERWRITE, **_ORTHOGONALIZE}, x=f"dct_grad(g, x, type, n, axis, norm, {inverse})")
