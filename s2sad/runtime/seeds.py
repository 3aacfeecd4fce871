"""Where a gradient starts, at the output's seed, and where it stops (``stop_gradient``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import NonScalarOutputError
from .foreign import is_foreign, one, size


def stop_gradient(x: Any) -> Any:
    """Return ``x`` unchanged; s2sad treats the result as a constant.

    Works for floats, arrays, and tuples or lists of them.  When a function is
    differentiated, no gradient flows through ``x`` and no adjoint code is
    generated for the computation that only feeds it.
    """
    return x


_ONE64, _ONE32 = np.float64(1.0), np.float32(1.0)  # NumPy scalars are immutable: shared


def seed(ans: Any) -> Any:
    """The gradient of the output with respect to itself: a one of its type.

    Raises :class:`NonScalarOutputError` unless ``ans`` is a real scalar.
    """
    if type(ans) is float:
        return 1.0
    if type(ans) is np.float64:
        return _ONE64
    if type(ans) is np.float32:
        return _ONE32
    if is_foreign(ans):  # another library's array: a one of its library
        return _foreign_seed(ans)
    if isinstance(ans, (bool, int)) or not isinstance(ans, (float, np.ndarray, np.generic)):
        pair = isinstance(ans, tuple) and len(ans) == 2
        raise NonScalarOutputError(
            f"the differentiated function must return a float scalar, got {type(ans).__name__} "
            f"{ans!r:.60}; return a float or a 0-d/size-1 float array (for example x.sum())"
            + ("; if it returns (output, aux), pass has_aux=True" if pair else "")
        )
    if np.size(ans) != 1:
        raise NonScalarOutputError(
            f"the differentiated function must return a scalar, got an array of shape "
            f"{np.shape(ans)}; reduce it first (for example with .sum() or .mean())"
        )
    if np.asarray(ans).dtype.kind != "f":
        raise NonScalarOutputError(
            f"the differentiated function must return a real floating-point scalar, got dtype "
            f"{np.asarray(ans).dtype}"
        )
    return np.ones_like(ans)


def _foreign_seed(ans: Any) -> Any:
    """The seed of an output that is another library's array (checked by shape and dtype,
    which such an array knows without computing it)."""
    if size(ans) != 1:
        raise NonScalarOutputError(
            f"the differentiated function must return a scalar, got an array of shape "
            f"{ans.shape}; reduce it first (for example with .sum() or .mean())")
    if np.dtype(ans.dtype).kind != "f":
        raise NonScalarOutputError(
            f"the differentiated function must return a real floating-point scalar, got dtype "
            f"{ans.dtype}")
    return np.ones_like(ans)


def seed_for(*reduced: Any) -> Any:
    """The seed of an output that is a scalar by construction (full reductions of
    ``reduced``, numbers and sizes), computed without the output: 1.0, after checking
    that what is reduced is not complex (a 0-d one of another library when what is reduced
    is that library's array: the gradients computed from it are then of that library)."""
    foreign = None
    for a in reduced:
        if type(a) is np.ndarray:
            kind = a.dtype.kind
        elif is_foreign(a):
            foreign = a
            kind = np.dtype(a.dtype).kind
        else:
            try:
                kind = np.asarray(a).dtype.kind
            except (ValueError, TypeError):  # ragged: reducing it fails in the function itself
                continue
        if kind == "c":
            raise NonScalarOutputError(
                "the differentiated function must return a real floating-point scalar, but it "
                "reduces complex values; take np.real(...) or np.abs(...) of them first")
    return 1.0 if foreign is None else one(foreign)
