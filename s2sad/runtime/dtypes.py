"""Gradients in the type and dtype of what they are the gradients of."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import S2SADError
from .foreign import is_foreign
from .trees import CONTAINERS, rebuild


def dtype_kind(x: Any) -> str:
    """The dtype kind of an array, NumPy scalar or Python number."""
    if isinstance(x, (np.ndarray, np.generic)) or is_foreign(x):
        return np.dtype(x.dtype).kind
    return "c" if isinstance(x, complex) else "f" if isinstance(x, float) else np.asarray(x).dtype.kind


def in_dtype_of(g: Any, x: Any) -> Any:
    """``g`` in the floating dtype of array ``x`` (a float32 input gets a float32 gradient)."""
    if (isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind == "f" and np.result_type(g) != x.dtype
            and np.result_type(g).kind != "c"):  # a complex step (step_jvp) keeps its imaginary part
        return g.astype(x.dtype) if is_foreign(g) else np.asarray(g).astype(x.dtype)[()]
    return g


def as_dtype(a: Any, dtype: Any) -> Any:
    """``np.asarray(a, dtype)``, for another library's array too (without converting it)."""
    return a.astype(dtype) if is_foreign(a) else np.asarray(a, dtype)


def grad_like(g: Any, x: Any) -> Any:
    """``g``, the gradient of ``x``, in x's type and dtype, as a value the caller owns.

    Generated gradients whose output is a scalar by construction start from a plain
    ``1.0`` instead of computing the output; a plain number can widen a float32 gradient
    or turn a float's gradient into a NumPy scalar, which this undoes (as NumPy scalars
    that widen float32 arithmetic).  A float gradient narrower than x is left as it is:
    NumPy's promotion only widens, so only a wrong rule narrows, which tests must see.
    """
    kind = type(x)
    if kind is np.ndarray:
        if type(g) is np.ndarray and g.dtype == x.dtype:
            return g if g.flags.writeable else g.copy()
    elif kind is float and (type(g) is float or type(g) is np.float64):
        return float(g)  # (exact: the commonest case of a float, decided without a call)
    if type(g) is not np.ndarray and type(g) is not float and is_foreign(g) and not isinstance(x, CONTAINERS):
        return _foreign_like(g, x)
    if kind is np.ndarray:
        g = _real(np.asarray(g), x)
        if g.dtype.kind == "f" and x.dtype.kind == "f" and g.dtype.itemsize < x.dtype.itemsize:
            return g
        return g.astype(x.dtype)
    if isinstance(x, dict):
        return {k: grad_like(g[k], v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and type(g) is np.ndarray and g.shape[:1] == (len(x),):
        g = list(g)  # (a rule that read the sequence as an array gives its gradient as one)
    if isinstance(x, (list, tuple)) and isinstance(g, (list, tuple)):
        if len(g) != len(x):  # (zip would drop items: a gradient for other items than x's)
            raise S2SADError(
                f"the gradient of this {type(x).__name__} of {len(x)} items came out with {len(g)}: the code "
                f"repeats it with '*' where s2sad took it for an array (a parameter times an int); repeat "
                f"it as a display ([a, b] * n) or with a comprehension, or pass an array")
        return rebuild(x, [grad_like(u, v) for u, v in zip(g, x)])
    if kind is float:
        return g if type(g) is float else float(_real(np.asarray(g), x))
    if kind is complex:
        return complex(g)
    if isinstance(x, np.generic) and type(g) is not kind:
        return kind(_real(np.asarray(g), x))
    return g


def _foreign_like(g: Any, x: Any) -> Any:
    """``g``, another library's array, as the gradient of ``x``: real for a real x, in x's
    floating dtype, and of x's shape (a 0-d array for a number)."""
    if np.dtype(g.dtype).kind == "c" and dtype_kind(x) != "c":
        g = np.real(g)
    dtype = getattr(x, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind in "fc" and g.dtype != dtype and not (
            np.dtype(g.dtype).kind == "f" and np.dtype(dtype).kind == "f"
            and np.dtype(g.dtype).itemsize < np.dtype(dtype).itemsize):
        g = g.astype(dtype)
    return g


def _real(g: np.ndarray, x: Any) -> np.ndarray:
    """``g`` for a real ``x``: its real part (the output is real, checked by the seed, so an
    imaginary part a gradient picked up on the way has no meaning)."""
    return np.real(g) if g.dtype.kind == "c" and dtype_kind(x) != "c" else g


def cast_grad(g: Any, x: Any, ans: Any) -> Any:
    """Gradient of converting ``x`` to ans's dtype: g in x's dtype (to a non-float dtype: an error)."""
    if np.result_type(ans).kind not in "fc":  # an integer or boolean result: not a silent zero
        raise S2SADError(
            f"a gradient reaches a conversion to {np.result_type(ans)}, which is not "
            f"differentiable; convert to a float dtype, or wrap the conversion in stop_gradient(...)")
    if isinstance(x, (np.ndarray, np.generic)):
        return _real(np.asarray(g), x).astype(x.dtype)[()]
    return g
