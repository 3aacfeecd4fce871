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

import warnings
from typing import Any

import numpy as np

from ..errors import S2SADError


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


def in_numpy(*values: Any) -> tuple[Any, ...]:
    """``values`` with another library's arrays as NumPy's: for a gradient computed where NumPy
    computed the function itself, since that library does not implement it (Dask's np.sort,
    np.argsort and np.take_along_axis run in NumPy, on the computed array)."""
    return tuple(np.asarray(v) if type(v) is not np.ndarray and is_foreign(v) else v for v in values)


#: NumPy functions that another library computes otherwise when they dispatch to it:
#: (the library's module, the function as written) -> how it differs
DIFFERENT: dict[tuple[str, str], str] = {
    ("dask", "np.percentile"): "of a 1-d array, Dask computes approximate percentiles (merged from "
                               "each chunk's)",
    ("dask", "np.linalg.cholesky"): "Dask returns the upper triangular factor, NumPy the lower one",
}


def refuse_different(name: str, x: Any) -> None:
    """Refuse ``name`` on ``x`` when x's library computes it otherwise than NumPy (DIFFERENT):
    the gradient s2sad computes would be NumPy's function's, not the library's."""
    library = type(x).__module__.split(".")[0]
    how = DIFFERENT.get((library, name))
    if how is not None and is_foreign(x):
        raise S2SADError(f"{name} of a {library} array differs from NumPy's: {how}; s2sad does not "
                         f"differentiate it. Apply {name} to a NumPy array (np.asarray(...)), or "
                         f"write what the library computes with NumPy's functions")


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


def added_rows(out: Any, indices: Any, g: Any) -> Any:
    """``np.add.at(out, indices, g)`` (``indices`` an integer array, ``g``'s leading axes
    shaped like it), in place for NumPy arrays; for another library's ``g``, which
    ``np.add.at`` does not dispatch to, ``out`` plus the one-hot matrix of ``indices``
    times ``g``, in that library (a new array)."""
    if first_foreign(g) is None:
        np.add.at(out, indices, g)
        return out
    indices = np.ravel(indices)
    onehot = (indices[:, None] == np.arange(np.shape(out)[0])).astype(g.dtype)
    return out + np.reshape(onehot.T @ np.reshape(g, (indices.size, -1)), np.shape(out))


def computed_by_numpy(fun: Any, a: Any) -> bool:
    """Whether ``fun(a)`` of another library's array ``a`` is NumPy's (Dask computes
    np.linalg.det and slogdet by NumPy, on the computed array): its gradient is computed
    there too, with NumPy's functions, which take any chunks."""
    if first_foreign(a) is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # (Dask's: 'not implemented by Dask array')
        out = fun(a)
    return first_foreign(out[-1] if isinstance(out, tuple) else out) is None
