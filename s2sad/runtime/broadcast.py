"""Gradients reduced back over the axes NumPy broadcast, and tangents broadcast forward."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import S2SADError
from .dtypes import dtype_kind, in_dtype_of
from .foreign import is_foreign
from .trees import CONTAINERS


def unbroadcast(g: Any, x: Any) -> Any:
    """Sum ``g`` over the axes along which ``x`` was broadcast, giving x's shape; for a real
    ``x``, the real part of a complex ``g`` (x * 1j: the gradient of a real x is real)."""
    kind = type(x)
    if kind is np.ndarray:
        if type(g) is np.ndarray and g.shape == x.shape and g.dtype == x.dtype:
            return g  # the commonest case, decided first
    elif (kind is float or kind is np.float64) and (type(g) is float or type(g) is np.float64):
        return g
    out = reduce_to(g, x)
    if (out.dtype.kind if type(out) is np.ndarray else dtype_kind(out)) == "c" and dtype_kind(x) != "c":
        part = np.real(out)
        return float(part) if kind is float else in_dtype_of(part, x)
    return out


def reduce_to(g: Any, x: Any) -> Any:
    """Sum ``g`` over the axes along which ``x`` was broadcast (a complex step keeps its
    imaginary part)."""
    kind = type(x)
    if (kind is float or kind is np.float64) and type(g) is not np.ndarray and not is_foreign(g):
        return g
    shape = getattr(x, "shape", None)
    if shape is None:
        if isinstance(x, CONTAINERS):
            raise S2SADError(
                f"arithmetic on a {type(x).__name__} cannot be differentiated (in Python, + on "
                f"lists and tuples concatenates them); use np.concatenate, or arrays")
        shape = np.shape(x) if isinstance(x, np.flatiter) else ()  # (x.flat: a vector of x's items)
    gshape = getattr(g, "shape", ())
    if gshape == shape:
        if kind is not np.ndarray and type(g) is np.ndarray:
            return g[()]  # a number's gradient is a number, not a 0-d array
        if kind is float or kind is np.float64 or kind is type(g) and (
                kind is not np.ndarray or g.dtype == x.dtype):
            return g  # the common cases, decided without a call
        return in_dtype_of(g, x)
    extra = len(gshape) - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and gshape[i + extra] != 1
    )
    if not extra and type(g) is np.ndarray and g.dtype.kind in "fc":  # no reshape needed
        g = np.add.reduce(g, axis=axes, keepdims=True) if axes else g
        if kind is np.ndarray and g.dtype == x.dtype:
            return g
        return in_dtype_of(g, x)
    g = np.sum(g, axis=axes) if axes else g
    return in_dtype_of(np.reshape(g, shape), x)


def broadcast_tangent(t: Any, ans: Any) -> Any:
    """A tangent in the output's shape: ``t`` broadcast against ``ans`` (forward mode)."""
    shape, given = np.shape(ans), np.shape(t)
    if given == shape or len(given) == len(shape) and all(a == b or a != a and b != b for a, b in zip(given, shape)):
        return t  # (a Dask array's unknown lengths are NaN, each unequal to itself)
    return np.broadcast_to(t, shape)
