"""What saves memory in generated code: stand-ins for arrays the gradient reads only for
their type, shape and dtype, and products written into buffers no longer read."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np


_NO_DATA = bytes(16)  # the buffer every stand-in views: no dtype stand_in takes is wider
_STAND_INS: dict[tuple[tuple[int, ...], int], np.ndarray] = {}  # (shape, dtype number) -> one


def stand_in(x: Any) -> Any:
    """What the gradient keeps of an array it reads only for its type, shape and dtype:
    a read-only array of all strides zero over 16 shared bytes (one per shape and dtype),
    so ``x`` itself can be freed.  Anything else (numbers, containers, arrays of objects or
    of a non-native dtype) is returned as it is."""
    if type(x) is not np.ndarray:
        return x
    try:
        return _STAND_INS[x.shape, x.dtype.num]  # the commonest case, without a call
    except KeyError:
        known = _stand_in_of(x.shape, x.dtype)
        return x if known is None else known


def _stand_in_of(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
    """The stand-in of an array of this shape and dtype; None for a dtype it cannot be."""
    try:
        return _STAND_INS[shape, dtype.num]
    except KeyError:
        pass
    if dtype.isbuiltin != 1 or dtype.hasobject or dtype.itemsize > 16:
        return None
    if len(_STAND_INS) >= 256:
        _STAND_INS.clear()
    known = _STAND_INS[shape, dtype.num] = np.ndarray(shape, dtype, _NO_DATA, 0, (0,) * len(shape))
    return known


def stand_in_for(fun: Any, *operands: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """A stand-in (see :func:`stand_in`) for ``fun(*operands)``, a ufunc or ``np.sum`` /
    ``np.mean`` (with ``axis`` and ``keepdims``), made from the operands' shapes and dtypes
    without computing it: for a result the gradient reads only for its type, shape and
    dtype.  Numbers, and operands other than plain arrays, are computed."""
    if not isinstance(fun, np.ufunc):
        return _reduced_stand_in(fun, operands[0], axis, keepdims)
    kinds = []
    shape = None
    for o in operands:
        if type(o) is np.ndarray:
            kinds.append(o.dtype)
            shape = o.shape if shape is None or shape == o.shape else _broadcast_shapes(shape, o.shape)
        elif isinstance(o, (int, float, np.generic)):
            kinds.append(o.dtype if isinstance(o, np.generic) else type(o))
        else:
            shape = None  # lists: + concatenates
            break
    if shape is None:
        return OPERATORS.get(fun, fun)(*operands)
    dtype = _result_dtype((fun, *kinds), lambda: fun(
        *[np.ones((), o.dtype) if type(o) is np.ndarray else o for o in operands]))
    known = _stand_in_of(shape, dtype)
    return fun(*operands) if known is None else known


def _broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if len(a) == len(b) and all(m == n or m == 1 or n == 1 for m, n in zip(a, b)):
        return tuple(n if m == 1 else m for m, n in zip(a, b))
    return np.broadcast_shapes(a, b)


def _reduced_stand_in(fun: Any, a: Any, axis: Any, keepdims: bool) -> Any:
    if type(a) is not np.ndarray or a.dtype.hasobject:
        return fun(a, axis=axis, keepdims=keepdims)
    ndim = a.ndim
    try:
        key: tuple[Any, ...] | None = (fun, a.dtype, ndim, axis, keepdims)
        hash(key)
    except TypeError:  # an axis given as a list
        key = None
    # from a one-element array: which also checks the axes as the real call would
    dtype = _result_dtype(key, lambda: fun(np.ones((1,) * ndim, a.dtype), axis=axis, keepdims=keepdims))
    if axis is None:
        shape = (1,) * ndim if keepdims else ()
    else:
        axes = {i % ndim for i in ((axis,) if isinstance(axis, (int, np.integer)) else axis)} if ndim else set()
        shape = tuple(1 if i in axes else n for i, n in enumerate(a.shape) if keepdims or i not in axes)
    known = _stand_in_of(shape, dtype)
    return fun(a, axis=axis, keepdims=keepdims) if known is None else known


def _result_dtype(key: tuple[Any, ...] | None, compute: Any) -> np.dtype:
    """The dtype of ``compute()`` (a call on one-element operands), remembered by ``key``."""
    dtype = _RESULT_DTYPES.get(key) if key is not None else None
    if dtype is None:
        with np.errstate(all="ignore"):
            dtype = np.result_type(compute())
        if key is not None and len(_RESULT_DTYPES) < 1024:
            _RESULT_DTYPES[key] = dtype
    return dtype


_RESULT_DTYPES: dict[tuple[Any, ...], np.dtype] = {}
#: Python's operator for each ufunc that one stands for (numbers keep Python's types).
OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
             np.true_divide: operator.truediv, np.negative: operator.neg,
             np.positive: operator.pos, np.power: operator.pow}


def mul_into(g: Any, dead: Any) -> Any:
    """``g * dead``, written into ``dead``'s buffer when ``dead`` is a writeable array of the
    product's shape and dtype that ``g`` does not overlap (no new array, and memory the
    cache already holds).  Generated code passes as ``dead`` only an array it made and
    never reads again; s2sad differentiates this call as the product ``g * dead``."""
    if type(dead) is np.ndarray and dead.flags.writeable:
        kind = type(g)
        if kind is np.ndarray:
            fits = (g.shape == dead.shape and g.dtype == dead.dtype
                    and not np.may_share_memory(g, dead))
        else:
            fits = kind is float and dead.dtype.kind == "f" or (
                kind is np.float64 and dead.dtype == np.float64)
        if fits:
            return np.multiply(g, dead, out=dead)
    return g * dead
