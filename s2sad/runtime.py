"""Run-time helpers called by generated gradient code.

Generated code is plain NumPy plus the few functions below.  Each helper is a
small, pure function of arrays, so that s2sad can later differentiate the
generated code itself.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import NonDifferentiableInputError, NonScalarOutputError, S2SADError

__all__ = [
    "stop_gradient",
    "seed",
    "check_wrt",
    "zeros_grad",
    "unbroadcast",
    "broadcast_tangent",
    "balanced_eq",
    "clip_mask",
    "reduce_grad",
    "mean_grad",
    "extremum_grad",
    "getitem_grad",
    "add_at",
    "add_grads",
    "unpack_grad",
    "setitem_grad_x",
    "setitem_grad_value",
    "stack_grad",
    "concatenate_grad",
    "array_grad",
    "sum_items_grad",
    "matmul_grad_lhs",
    "matmul_grad_rhs",
    "dot_grad_lhs",
    "dot_grad_rhs",
    "transpose_grad",
]


def stop_gradient(x: Any) -> Any:
    """Return ``x`` unchanged; s2sad treats the result as a constant.

    Works for floats, arrays, and tuples or lists of them.  When a function is
    differentiated, no gradient flows through ``x`` and no adjoint code is
    generated for the computation that only feeds it.
    """
    return x


def seed(ans: Any) -> Any:
    """The gradient of the output with respect to itself: a one of its type.

    Raises :class:`NonScalarOutputError` unless ``ans`` is a real scalar.
    """
    if type(ans) is float:
        return 1.0
    if type(ans) in (np.float64, np.float32):
        return type(ans)(1.0)
    if isinstance(ans, (bool, int)) or not isinstance(ans, (float, np.ndarray, np.generic)):
        raise NonScalarOutputError(
            f"the differentiated function must return a float scalar, got {type(ans).__name__} "
            f"{ans!r:.60}; return a float or a 0-d/size-1 float array (for example x.sum())"
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


_CONTAINERS = (list, tuple, dict)


def check_wrt(x: Any, name: str) -> None:
    """Refuse a gradient with respect to an integer, boolean or complex value.

    Tuples, lists and dicts are checked leaf by leaf.
    """
    if type(x) is float:
        return
    if isinstance(x, _CONTAINERS):
        items = x.items() if isinstance(x, dict) else enumerate(x)
        for key, value in items:
            check_wrt(value, f"{name}[{key!r}]")
        return
    kind = np.asarray(x).dtype.kind if isinstance(x, (np.ndarray, np.generic)) else None
    if kind == "f":
        return
    if kind is None and isinstance(x, float):
        return
    raise NonDifferentiableInputError(
        f"cannot differentiate with respect to '{name}': it is "
        f"{type(x).__name__}{'' if kind is None else ' of dtype ' + str(np.asarray(x).dtype)}; "
        f"pass a float (for example {name}=float(...) or an array with .astype(float))"
    )


def zeros_grad(x: Any) -> Any:
    """A zero gradient shaped like ``x``; of the same structure for tuples, lists, dicts."""
    if isinstance(x, float):
        return 0.0
    if isinstance(x, dict):
        return {k: zeros_grad(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(zeros_grad(v) for v in x)
    return np.zeros_like(x)


def add_grads(a: Any, b: Any) -> Any:
    """``a + b`` for gradients, leaf by leaf for tuples, lists and dicts."""
    if isinstance(a, dict):
        return {k: add_grads(v, b[k]) for k, v in a.items()}
    if isinstance(a, (list, tuple)):
        return type(a)(add_grads(u, v) for u, v in zip(a, b))
    return a + b


def unbroadcast(g: Any, x: Any) -> Any:
    """Sum ``g`` over the axes along which ``x`` was broadcast, giving x's shape."""
    if isinstance(x, _CONTAINERS):
        raise S2SADError(
            f"arithmetic on a {type(x).__name__} cannot be differentiated (in Python, + on lists "
            f"and tuples concatenates them); use np.concatenate, or arrays")
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape == shape:
        return g
    extra = len(gshape) - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and gshape[i + extra] != 1
    )
    g = np.sum(g, axis=axes) if axes else g
    return np.reshape(g, shape)


def broadcast_tangent(t: Any, ans: Any) -> Any:
    """A tangent in the output's shape: ``t`` broadcast against ``ans`` (forward mode)."""
    shape = np.shape(ans)
    return t if np.shape(t) == shape else np.broadcast_to(t, shape)


def balanced_eq(x: Any, ans: Any, y: Any) -> Any:
    """Where ``x`` produced ``ans``: 1, or 1/2 where ``x`` and ``y`` tie."""
    dtype = np.result_type(x, y)
    return np.asarray((x == ans), dtype) / np.asarray(1 + (x == y), dtype)


def clip_mask(a: Any, a_min: Any, a_max: Any) -> Any:
    """Where ``np.clip(a, a_min, a_max)`` passes ``a`` through (strictly inside the bounds)."""
    lo = True if a_min is None else np.greater(a, a_min)
    hi = True if a_max is None else np.less(a, a_max)
    return np.logical_and(lo, hi)


def _expand(g: Any, ndim: int, axis: Any, keepdims: bool) -> Any:
    """Give a reduced gradient back the axes that the reduction removed."""
    if keepdims or axis is None and np.ndim(g) == ndim:
        return g
    if axis is None:
        return np.reshape(g, (1,) * ndim)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return np.expand_dims(g, tuple(a % ndim for a in axes))


def reduce_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.sum(x, axis, keepdims=keepdims)``: g broadcast back to x."""
    shape = np.shape(x)
    out = np.empty(shape, dtype=np.result_type(g))
    out[...] = _expand(g, len(shape), axis, keepdims)
    return out


def mean_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.mean(x, axis, keepdims=keepdims)``."""
    shape = np.shape(x)
    count = 1
    for i, n in enumerate(shape):
        if _reduced(i, len(shape), axis):
            count *= n
    return reduce_grad(g / count, x, axis, keepdims)


def _reduced(i: int, ndim: int, axis: Any) -> bool:
    if axis is None:
        return True
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return any(a % ndim == i for a in axes)


def extremum_grad(g: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of max/min: shared equally among the entries that tie for it."""
    ndim = np.ndim(x)
    ans = _expand(ans, ndim, axis, keepdims)
    mask = np.asarray(x == ans, dtype=np.result_type(g, x))
    count = np.sum(mask, axis=axis, keepdims=True)
    return _expand(g, ndim, axis, keepdims) * mask / count


def getitem_grad(g: Any, x: Any, index: Any) -> Any:
    """Gradient of ``x[index]``: ``g`` scattered into zeros shaped like x.

    Repeated integer indices accumulate (``np.add.at`` semantics).  For a tuple,
    list or dict ``x``, the result has x's structure.
    """
    if isinstance(x, _CONTAINERS):
        return add_at(zeros_grad(x), index, g)
    out = np.zeros(np.shape(x), dtype=np.result_type(g, x))
    if _is_basic_index(index):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


def add_at(acc: Any, index: Any, g: Any) -> Any:
    """``acc[index] += g`` on a gradient ``acc`` that generated code owns.

    Arrays are updated in place; tuples, lists and dicts are rebuilt.
    """
    if isinstance(acc, dict):
        return {**acc, index: add_grads(acc[index], g)}
    if isinstance(acc, (list, tuple)):
        out = list(acc)
        if isinstance(index, slice):
            positions = range(len(out))[index]
            for i, gi in zip(positions, g):
                out[i] = add_grads(out[i], gi)
        else:
            out[index] = add_grads(out[index], g)
        return type(acc)(out)
    if _is_basic_index(index):
        acc[index] += g
    else:
        np.add.at(acc, index, g)
    return acc


def unpack_grad(x: Any, grads: tuple[Any, ...]) -> Any:
    """Gradient of ``a, b, ... = x`` from the gradients of the names (None: zero)."""
    parts = [zeros_grad(v) if g is None else g for v, g in zip(x, grads)]
    if isinstance(x, (list, tuple)):
        return type(x)(parts)
    return np.stack([np.broadcast_to(p, np.shape(x)[1:]) for p in parts])


def setitem_grad_x(g: Any, index: Any) -> Any:
    """Gradient of ``out = x.copy(); out[index] = v`` with respect to x: g, zero at index."""
    if isinstance(g, dict):
        return {**g, index: zeros_grad(g[index])}
    if isinstance(g, (list, tuple)):
        out = list(g)
        out[index] = zeros_grad(out[index])
        return type(g)(out)
    out = np.array(g, copy=True)
    out[index] = 0
    return out


def setitem_grad_value(g: Any, index: Any, v: Any) -> Any:
    """Gradient of ``out[index] = v`` with respect to v.

    Where an integer index repeats, only the write that stuck gets the gradient.
    """
    if isinstance(g, (list, tuple, dict)):
        return g[index]
    picked = np.asarray(g)[index]
    if not _is_basic_index(index):
        order = np.arange(picked.size).reshape(picked.shape)
        slot = np.full(np.shape(g), -1)
        slot[index] = order
        picked = picked * (slot[index] == order)
    return unbroadcast(picked, v)


def stack_grad(g: Any, arrays: Any, axis: int = 0) -> Any:
    """Gradient of ``np.stack(arrays, axis)``: one slice of g per array."""
    parts = [np.take(g, i, axis=axis) for i in range(len(arrays))]
    return type(arrays)(parts) if isinstance(arrays, (list, tuple)) else np.stack(parts)


def concatenate_grad(g: Any, arrays: Any, axis: Any = 0) -> Any:
    """Gradient of ``np.concatenate(arrays, axis)``: g split back into the pieces."""
    if axis is None:
        sizes = [np.size(a) for a in arrays]
        parts = [np.reshape(p, np.shape(a)) for p, a in zip(np.split(g, np.cumsum(sizes)[:-1]), arrays)]
    else:
        sizes = [np.shape(a)[axis] for a in arrays]
        parts = np.split(g, np.cumsum(sizes)[:-1], axis=axis)
    return type(arrays)(parts) if isinstance(arrays, (list, tuple)) else np.stack(parts)


def sum_items_grad(g: Any, items: Any) -> Any:
    """Gradient of Python's ``sum(items)``: every item gets g, reduced to its shape."""
    if isinstance(items, (list, tuple)):
        return type(items)(unbroadcast(g, v) for v in items)
    out = np.empty(np.shape(items), dtype=np.result_type(g))
    out[...] = g
    return out


def array_grad(g: Any, obj: Any) -> Any:
    """Gradient of ``np.array(obj)`` for nested lists/tuples of scalars and arrays."""
    if isinstance(obj, (list, tuple)):
        return type(obj)(array_grad(g[i], o) for i, o in enumerate(obj))
    return g if np.ndim(obj) else g[()]


def _is_basic_index(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(
        p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer)) for p in parts
    )


def matmul_grad_lhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``a @ b`` with respect to ``a``."""
    if np.ndim(b) == 1:
        if np.ndim(a) == 1:
            return g * b
        return unbroadcast(np.expand_dims(g, -1) * b, a)
    if np.ndim(a) == 1:
        return unbroadcast(np.matmul(b, np.expand_dims(g, -1))[..., 0], a)
    return unbroadcast(np.matmul(g, np.swapaxes(b, -1, -2)), a)


def matmul_grad_rhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``a @ b`` with respect to ``b``."""
    if np.ndim(a) == 1:
        if np.ndim(b) == 1:
            return g * a
        return unbroadcast(np.expand_dims(a, -1) * np.expand_dims(g, -2), b)
    if np.ndim(b) == 1:
        return unbroadcast(np.matmul(np.swapaxes(a, -1, -2), np.expand_dims(g, -1))[..., 0], b)
    return unbroadcast(np.matmul(np.swapaxes(a, -1, -2), g), b)


def dot_grad_lhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.dot(a, b)`` with respect to ``a``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(b) <= 2 and np.ndim(a) <= 2:
        return matmul_grad_lhs(g, a, b)
    # dot(a, b)[i..., j...] = sum_k a[i..., k] * b[j..., k, :]
    b_axes = [ax for ax in range(np.ndim(b)) if ax != _dot_axis(b)]
    g_axes = list(range(np.ndim(a) - 1, np.ndim(g)))
    return np.tensordot(g, b, (g_axes, b_axes))


def dot_grad_rhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.dot(a, b)`` with respect to ``b``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    if np.ndim(b) <= 2 and np.ndim(a) <= 2:
        return matmul_grad_rhs(g, a, b)
    a_axes = list(range(np.ndim(a) - 1))
    g_axes = list(range(np.ndim(a) - 1))
    gb = np.tensordot(a, g, (a_axes, g_axes))  # shape (k, j..., m) with j... of b's batch axes
    return np.moveaxis(gb, 0, _dot_axis(b))


def _dot_axis(b: Any) -> int:
    """The axis of ``b`` that ``np.dot(a, b)`` sums over: its second-to-last, or its only one."""
    return max(np.ndim(b) - 2, 0)


def transpose_grad(g: Any, axes: Any = None) -> Any:
    """Gradient of ``np.transpose(x, axes)``; ``axes`` may be the ``*axes`` of ``x.transpose``."""
    if axes is None:
        return np.transpose(g)
    if len(axes) == 1 and (axes[0] is None or np.ndim(axes[0]) == 1):  # x.transpose((1, 0))
        return transpose_grad(g, axes[0])
    return np.transpose(g, np.argsort(axes))
