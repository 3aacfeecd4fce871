"""Run-time helpers for ``scipy.ndimage``'s linear filters (rules in
:mod:`s2sad.rules.scipy_more_rules`).

A filter with a boundary mode is the same filter with zeros outside (``mode='constant'``,
``cval=0``) applied to its input extended by that mode (``np.pad``'s matching mode), then cut
back.  With zeros outside, the filter's matrix is Toeplitz along each axis, so its transpose
is the filter applied to the flipped array, flipped back; the extension's transpose adds each
padded entry's cotangent to the entry it copies.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import S2SADError

#: ndimage's boundary modes as np.pad's (None: zeros outside, what the filter adds is constant).
_PADS = {"reflect": "symmetric", "grid-mirror": "symmetric", "mirror": "reflect", "nearest": "edge",
         "wrap": "wrap", "grid-wrap": "wrap", "constant": None, "grid-constant": None}


def filter_apply(x: Any, kind: str, params: tuple, mode: Any, axes: Any) -> Any:
    """The filter ``kind`` of ``scipy.ndimage`` (``'gaussian'``, ``'uniform'``, ``'correlate'``,
    ``'convolve'``, or their ``1d`` forms, ``axes`` then the axis) applied to ``x`` with its
    ``params``, zeros (cval=0) outside in constant mode: its linear part."""
    from scipy import ndimage

    if kind.endswith("1d"):
        fun = getattr(ndimage, f"{kind[:-2]}_filter1d" if kind[:-2] in ("gaussian", "uniform") else kind)
        first, *rest = params
        if kind == "gaussian1d":
            return fun(x, first, axes, rest[0], mode=mode, truncate=rest[1], radius=rest[2])
        return fun(x, first, axes, mode=mode, origin=rest[0])
    if kind == "gaussian":
        sigma, order, truncate, radius = params
        return ndimage.gaussian_filter(x, sigma, order, mode=mode, truncate=truncate, radius=radius, axes=axes)
    fun = ndimage.uniform_filter if kind == "uniform" else getattr(ndimage, kind)
    return fun(x, params[0], mode=mode, origin=params[1], axes=axes)


def _reach(kind: str, params: tuple) -> int:
    """How far from an output entry the filter reads (at least)."""
    if kind.startswith("gaussian"):
        sigma, *_, truncate, radius = params
        if radius is not None:
            return int(np.max(radius)) + 1
        return int(truncate * float(np.max(sigma)) + 0.5) + 1
    size = np.max(np.shape(params[0])) if kind.startswith(("correlate", "convolve")) else np.max(params[0])
    return int(size) + int(np.max(np.abs(params[1]))) + 1


def _filtered_axes(ndim: int, kind: str, axes: Any) -> tuple[int, ...]:
    if kind.endswith("1d"):
        return (axes % ndim,)
    if axes is None:
        return tuple(range(ndim))
    return tuple(sorted({a % ndim for a in (axes if np.ndim(axes) else (axes,))}))


def _fold(h: np.ndarray, axis: int, n: int, reach: int, pad: str) -> np.ndarray:
    """The transpose of ``np.pad(., reach, pad)`` along ``axis`` (to length ``n``)."""
    source = np.pad(np.arange(n), reach, pad)
    moved = np.moveaxis(h, axis, 0)
    out = np.zeros((n, *moved.shape[1:]), dtype=h.dtype)
    np.add.at(out, source, moved)
    return np.moveaxis(out, 0, axis)


def filter_grad(g: Any, x: Any, kind: str, params: tuple, mode: Any, axes: Any) -> Any:
    """The gradient of the filter ``kind`` of ``x`` (see ``filter_apply``): its transpose
    applied to ``g``."""
    g = np.asarray(g)
    filtered = _filtered_axes(g.ndim, kind, axes)
    modes = [mode] * len(filtered) if isinstance(mode, str) else list(mode)
    unknown = [m for m in modes if m not in _PADS]
    if unknown or len(modes) != len(filtered):
        raise S2SADError(f"s2sad differentiates scipy.ndimage's filters with the modes {sorted(_PADS)} only "
                         f"(one, or one per filtered axis), not {mode!r}")
    reach = _reach(kind, params)
    pads = {a: _PADS[m] for a, m in zip(filtered, modes) if _PADS[m] is not None}
    h = np.pad(g, [(reach, reach) if a in pads else (0, 0) for a in range(g.ndim)])
    h = np.flip(filter_apply(np.flip(h, filtered), kind, params, "constant", axes), filtered)
    for a, pad in pads.items():
        h = _fold(h, a, np.shape(x)[a], reach, pad)
    return h
