"""Arrays of other libraries (Dask, CuPy, ...) in the run-time helpers.

Generated code and the helpers work on the arrays they are given: NumPy's functions
dispatch to another library's array through ``__array_function__`` and
``__array_ufunc__``.  What the protocols do not cover is spelled here: an array made
from a shape takes the library of a ``like`` array (``np.zeros_like(like, shape=...)``),
and a value is converted to NumPy only when it is NumPy's already (``np.asarray`` of a
Dask array would compute it, of a CuPy array copy it to the host).

The seed of a call whose output is such an array is an array of that library, so every
gradient computed from it is one too: the decision is made once per call, and the
in-place updates and buffer reuse of NumPy code stay for NumPy arrays.
"""
from __future__ import annotations

from typing import Any

import numpy as np


#: Types whose values are never another library's array (decided without a call).
_NATIVE = frozenset({np.ndarray, float, int, complex, bool, type(None), str, list, tuple, dict,
                     slice, np.float64, np.float32, np.int64, np.bool_, np.complex128})


def is_foreign(x: Any) -> bool:
    """Whether ``x`` is an array of another library that NumPy's functions dispatch to."""
    kind = type(x)
    return (kind not in _NATIVE and hasattr(kind, "__array_function__")
            and not isinstance(x, (np.ndarray, np.generic)))


def first_foreign(*values: Any) -> Any:
    """The first of ``values`` that is another library's array, or None."""
    for v in values:
        if type(v) is not np.ndarray and is_foreign(v):
            return v
    return None


def zeros(shape: Any, dtype: Any, like: Any = None) -> Any:
    """``np.zeros(shape, dtype)``, of ``like``'s library when it is another library's array."""
    if like is None or not is_foreign(like):
        return np.zeros(shape, dtype)
    return np.zeros_like(like, shape=shape, dtype=dtype)


def one(like: Any, dtype: Any = None) -> Any:
    """A 0-d one of ``like``'s library (``like``'s dtype when it is floating, else float64)."""
    if dtype is None:
        dtype = like.dtype if np.dtype(like.dtype).kind == "f" else np.float64
    return np.ones_like(like, shape=(), dtype=dtype)


def kind(x: Any) -> str:
    """The dtype kind of another library's array."""
    return np.dtype(x.dtype).kind


def size(x: Any) -> int:
    """The number of elements of an array of any library (or of what NumPy makes of ``x``)."""
    shape = getattr(x, "shape", None)
    if shape is None:
        return np.size(x)
    count = 1
    for n in shape:
        count *= n
    return count
