"""Run-time helpers for complex numbers and ``np.fft``, called by generated gradient code
(rules in :mod:`s2sad.rules.complex_rules`).

The gradient of a real ``L`` with respect to a complex ``z = x + iy`` is autograd's
``dL/dx - i dL/dy``.  Under it a holomorphic function's adjoint is ``g`` times its complex
derivative (no conjugate), a complex-linear map's adjoint is its plain transpose, and the
adjoint of a real-linear map's adjoint is the map itself.  A real value's gradient is real:
where a rule's output is complex and its input real, the helper keeps the real part.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import S2SADError


#: The norm whose scale is the other direction's: an FFT's adjoint scales like its inverse.
_DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _is_complex(x: Any) -> bool:
    return isinstance(x, complex) or np.iscomplexobj(x)


def real_like(ct: Any, x: Any) -> Any:
    """``ct`` as the gradient of ``x``: its real part when ``x`` is real."""
    if _is_complex(x) or not _is_complex(ct):
        return ct
    return float(np.real(ct)) if isinstance(x, (int, float)) and not np.ndim(ct) else np.real(ct)


def real_input(ct: Any, x: Any, name: str) -> Any:
    """``ct``, the gradient or tangent of ``x`` through ``name``, which differentiates real
    values only (its rule takes no conjugates): an error for a complex ``x``."""
    if _is_complex(x):
        raise S2SADError(f"a gradient reaches {name} of complex values, which s2sad differentiates "
                         f"for real values only; apply it to np.real(...), np.imag(...) or "
                         f"np.abs(...) of them")
    return ct


def real_grad(ct: Any, x: Any) -> Any:
    """Gradient of ``np.real(x)``: the real part of ``ct``, complex when ``x`` is."""
    part = np.real(ct)
    return part + 0j if _is_complex(x) else part


def imag_grad(ct: Any, x: Any) -> Any:
    """Gradient of ``np.imag(x)``: ``-i`` times the real part of ``ct`` (0 for a real ``x``)."""
    part = np.real(ct)
    return -1j * part if _is_complex(x) else np.zeros_like(part)


def fft_lengths(s: Any) -> Any:
    """An n-d FFT's ``s`` from a 1-d FFT's ``n`` (None, or a length) or an n-d one's ``s``."""
    return (s,) if s is not None and np.ndim(s) == 0 else s


def _axes(x: Any, s: Any, axes: Any) -> tuple[int, ...]:
    """The axes an n-d FFT of ``x`` transforms, as NumPy reads ``s`` and ``axes``."""
    s = fft_lengths(s)
    ndim = np.ndim(x)
    if axes is None:
        axes = range(ndim - (len(s) if s is not None else ndim), ndim)
    return tuple(a % ndim for a in (axes if np.ndim(axes) else (axes,)))


def _fit(a: Any, shape: tuple[int, ...]) -> Any:
    """``a`` cut or padded with zeros at the end of each axis to ``shape``."""
    a = np.asarray(a)
    a = a[tuple(slice(0, n) for n in shape)]
    pad = [(0, n - m) for m, n in zip(a.shape, shape)]
    return np.pad(a, pad) if any(p for _, p in pad) else a


def fftn_grad(g: Any, x: Any, s: Any, axes: Any, norm: Any, inverse: bool) -> Any:
    """Gradient of ``np.fft.fftn(x, s, axes, norm)`` (``ifftn`` if ``inverse``) and of the
    1-d and 2-d forms (``s`` a length ``n``): the same transform of ``g`` (its matrix is
    symmetric), cut or padded back to x's shape."""
    transform = np.fft.ifftn if inverse else np.fft.fftn
    out = _fit(transform(g, axes=_axes(x, s, axes), norm=norm), np.shape(x))
    return real_like(out, x)


def rfftn_grad(g: Any, x: Any, s: Any, axes: Any, norm: Any) -> Any:
    """Gradient of ``np.fft.rfftn(x, s, axes, norm)``: the half spectrum ``g`` padded with
    zeros to the full length, transformed back by ``fftn``, real part (x's imaginary part,
    which rfftn discards, gets none)."""
    axes, s = _axes(x, s, axes), fft_lengths(s)
    lengths = [np.shape(x)[a] for a in axes] if s is None else list(s)
    g = np.asarray(g)
    shape = list(g.shape)
    shape[axes[-1]] = lengths[-1]
    out = np.real(np.fft.fftn(_fit(g, tuple(shape)), axes=axes, norm=norm))
    out = _fit(out, np.shape(x))
    return out + 0j if _is_complex(x) else out


def _half_weights(n: int, m: int, ndim: int, axis: int, dtype: Any) -> np.ndarray:
    """1 for the entries of a half spectrum of length ``m`` (of a signal of length ``n``) that
    stand for one frequency (0, and n/2 for an even n), 2 for those that stand for two."""
    w = np.full(m, 2.0, dtype=dtype)
    w[0] = 1.0
    if n % 2 == 0 and m > n // 2:
        w[n // 2] = 1.0
    shape = [1] * ndim
    shape[axis] = m
    return np.reshape(w, shape)


def irfftn_grad(g: Any, x: Any, s: Any, axes: Any, norm: Any) -> Any:
    """Gradient of ``np.fft.irfftn(x, s, axes, norm)``: along the last axis, the conjugate
    half spectrum of ``g`` (at the inverse's scale) weighted by how many frequencies each
    entry stands for; along the others, ``ifftn``; cut or padded back to x's shape."""
    axes, s = _axes(x, s, axes), fft_lengths(s)
    last = axes[-1]
    n = s[-1] if s is not None else 2 * (np.shape(x)[last] - 1)
    half = np.conj(np.fft.rfft(np.real(g), n, axis=last, norm=_DUAL[norm]))
    half = half * _half_weights(n, n // 2 + 1, np.ndim(half), last, np.real(half).dtype)
    if len(axes) > 1:
        half = np.fft.ifftn(half, axes=axes[:-1], norm=norm)
    return real_like(_fit(half, np.shape(x)), x)


def hfft_grad(g: Any, x: Any, n: Any, axis: int, norm: Any) -> Any:
    """Gradient of ``np.fft.hfft(x, n, axis, norm)``, which is ``irfft`` of ``conj(x)`` at the
    other direction's scale: the conjugate of irfft's gradient."""
    return np.conj(irfftn_grad(g, x, n, (axis,), _DUAL[norm]))


def ihfft_grad(g: Any, x: Any, n: Any, axis: int, norm: Any) -> Any:
    """Gradient of ``np.fft.ihfft(x, n, axis, norm)``, which is the conjugate of ``rfft`` of
    x at the other direction's scale."""
    return rfftn_grad(np.conj(g), x, n, (axis,), _DUAL[norm])


#: The DCT type whose matrix (up to the weights of its ends) is a type's transpose.
_DCT_TRANSPOSE = {1: 1, 2: 3, 3: 2, 4: 4}


def _along(w: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = w.size
    return np.reshape(w, shape)


def _dct_grad_1d(g: np.ndarray, length: int, type: int, axis: int, norm: Any, inverse: bool) -> Any:
    """The transpose of one DCT along ``axis``, cut or padded back to ``length``."""
    from scipy import fft

    if inverse:
        type, norm = _DCT_TRANSPOSE[type], _DUAL[norm]
    other = _DCT_TRANSPOSE[type]
    if norm == "ortho" or type == 4:  # (type 4's matrix is symmetric)
        out = fft.dct(g, other, axis=axis, norm=norm)
    else:
        w = np.ones(g.shape[axis], dtype=np.real(g).dtype)
        w[0] = 2.0
        if type == 1:
            w[-1] = 2.0
            out = fft.dct(g * _along(w, g.ndim, axis), 1, axis=axis, norm=norm) / _along(w, g.ndim, axis)
        elif type == 2:
            out = fft.dct(g * _along(w, g.ndim, axis), 3, axis=axis, norm=norm)
        else:
            out = fft.dct(g, 2, axis=axis, norm=norm) / _along(w, g.ndim, axis)
    shape = list(out.shape)
    shape[axis] = length
    return _fit(out, tuple(shape))


def dct_grad(g: Any, x: Any, type: int, s: Any, axes: Any, norm: Any, inverse: bool) -> Any:
    """Gradient of ``scipy.fft.dctn(x, type, s, axes, norm)`` (``idctn`` if ``inverse``) and of
    ``dct`` (``s`` a length ``n``, ``axes`` its axis): the transpose of each axis's matrix applied
    to ``g``, cut or padded back to x's length.  An inverse is the dct of the transposed type at
    the other direction's scale; an orthonormal matrix's transpose is the transposed type's, the
    others differ from it by the weights of the first (and for type 1 the last) entry."""
    g = np.asarray(g)
    axes, s = _axes(x, s, axes), fft_lengths(s)
    for axis in axes:
        g = _dct_grad_1d(g, np.shape(x)[axis], type, axis, norm, inverse)
    return g


def dct_transform(x: Any, type: int, s: Any, axes: Any, norm: Any, inverse: bool) -> Any:
    """``scipy.fft.dctn(x, type, s, axes, norm)`` (``idctn`` if ``inverse``): the adjoint of
    ``dct_grad``, for higher orders."""
    from scipy import fft

    return (fft.idctn if inverse else fft.dctn)(x, type, fft_lengths(s), _axes(x, s, axes), norm)
