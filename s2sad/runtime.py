"""Run-time helpers called by generated gradient code.

Generated code is plain NumPy plus the few functions below.  Each helper is a
small, pure function of arrays and a primitive of its own: s2sad differentiates
generated code (for higher orders) through the rules declared for the helpers in
``s2sad/rules/runtime_rules.py``, never by reading their source.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .errors import NonDifferentiableInputError, NonScalarOutputError, S2SADError
from .runtime_namespace import is_foreign, one, size, zeros

__all__ = [
    "stop_gradient",
    "seed",
    "seed_for",
    "check_wrt",
    "check_assignment_order",
    "zeros_grad",
    "stand_in",
    "stand_in_for",
    "unbroadcast",
    "broadcast_tangent",
    "extremum_jvp",
    "invert_axes",
    "balanced_eq",
    "clip_mask",
    "branch_mask",
    "reduce_grad",
    "mean_grad",
    "own_grad",
    "grad_like",
    "distinct",
    "extremum_grad",
    "getitem_grad",
    "add_at",
    "add_grads",
    "mul_into",
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
    "safe_divide",
    "cast_grad",
    "var_grad",
    "prod_grad",
    "cumsum_grad",
    "cumprod_grad",
    "ptp_grad",
    "sort_grad",
    "diagonal_grad",
    "repeat_grad",
    "take_grad",
    "tile_grad",
    "pad_grad",
    "rollaxis_grad",
    "diff_grad",
    "as_column",
    "join_grad",
    "linspace_grad",
    "tensordot_grad_lhs",
    "tensordot_grad_rhs",
    "kron_grad_lhs",
    "kron_grad_rhs",
    "einsum_grad",
    "norm_grad",
    "cholesky_grad",
    "eigh_grad",
    "solve_grad_a",
    "solve_grad_b",
    "pinv_grad",
    "qr_grad",
    "svd_grad",
    "choice_grad",
    "choice_jvp",
    "slogdet_grad",
    "rot90_grad",
    "log_or_zero",
    "pow_slope",
    "reshape_grad",
    "cumprod_jvp",
    "sort_jvp",
    "cholesky_jvp",
    "eigh_jvp",
    "pinv_jvp",
    "qr_jvp",
    "svd_jvp",
    "concat",
    "concat_grad",
    "scatter_value",
    "diff_embed",
    "step_jvp",
    "column_vjp",
    "no_third_order",
]


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


_CONTAINERS = (list, tuple, dict)


def check_assignment_order(x: Any, index: Any, v: Any, where: str) -> None:
    """Refuse ``x[index] = v``, with ``v`` a view of ``x``, when NumPy's in-place assignment
    differs from assigning a copy of ``v`` (what s2sad differentiates).

    NumPy copies some overlapping one-dimensional assignments element by element, so that
    later elements read values it has already overwritten (``x[::2] = x[:3]``).  The check
    repeats the assignment on numbered elements laid out like ``x``'s memory (NumPy copies
    elements of one dtype as bytes, so unsigned integers of the same size stand in).
    """
    if type(x) is not np.ndarray or type(v) is not np.ndarray or not np.shares_memory(x, v):
        return
    low, high = _byte_bounds(x)
    v_low, v_high = _byte_bounds(v)
    numbers = np.dtype(f"u{x.itemsize}") if x.itemsize in (1, 2, 4, 8) else x.dtype
    fits = numbers.kind == "u" and x.size - 1 <= np.iinfo(numbers).max or (
        numbers.kind in "fc" and x.size <= 2 ** (np.finfo(numbers).nmant + 1))
    if x.dtype != v.dtype or x.dtype.hasobject or not fits or v_low < low or v_high > high:
        why = "s2sad cannot tell whether NumPy's in-place assignment reads elements it has already overwritten"
    else:
        scratch = np.zeros(high - low, np.uint8)

        def laid_out(a: np.ndarray) -> np.ndarray:
            return np.ndarray(a.shape, numbers, scratch, a.ctypes.data - low, a.strides)

        numbered, value = laid_out(x), laid_out(v)
        numbered[...] = np.arange(x.size).reshape(x.shape)
        copied = numbered.copy()
        copied[index] = value.copy()
        numbered[index] = value
        if np.array_equal(numbered, copied):
            return
        why = "NumPy's in-place assignment reads elements it has already overwritten, which s2sad does not follow"
    raise S2SADError(f"{where}: the value assigned shares memory with the array it is assigned "
                     f"into, and {why}; assign a copy of the value (... = (...).copy())")


def _byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """The first and one-past-the-last byte addresses of ``a``'s elements."""
    low = high = a.ctypes.data
    for n, stride in zip(a.shape, a.strides):
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    return low, high + a.itemsize


def check_wrt(x: Any, name: str) -> None:
    """Refuse a gradient with respect to an integer or boolean value (a complex one has
    autograd's gradient: d/d(real part) - i d/d(imaginary part)).

    Tuples, lists and dicts are checked leaf by leaf.
    """
    if type(x) is float or type(x) is np.ndarray and x.dtype.kind in "fc":
        return
    if isinstance(x, _CONTAINERS):
        items = x.items() if isinstance(x, dict) else enumerate(x)
        for key, value in items:
            check_wrt(value, f"{name}[{key!r}]")
        return
    kind = np.asarray(x).dtype.kind if isinstance(x, (np.ndarray, np.generic)) else (
        np.dtype(x.dtype).kind if is_foreign(x) else None)
    if kind in ("f", "c"):
        return
    if kind is None and isinstance(x, (float, complex)):
        return
    raise NonDifferentiableInputError(
        f"cannot differentiate with respect to '{name}': it is "
        f"{type(x).__name__}{'' if kind is None else ' of dtype ' + str(x.dtype)}; "
        f"pass a float or complex value (for example {name}=float(...) or an array with "
        f".astype(float))"
    )


def zeros_grad(x: Any, seed: Any = None) -> Any:
    """A zero gradient shaped like ``x``; of the same structure for tuples, lists, dicts.

    ``seed``, the call's seed, gives an array of ``x`` the library of the gradients
    added to it (a NumPy parameter's gradient on Dask data is a Dask array)."""
    if type(x) is float or x is None:  # None: a loop variable no iteration assigned
        return 0.0
    if type(x) is complex:
        return 0j
    if isinstance(x, np.generic):  # a NumPy scalar: one of its type
        return x.dtype.type(0)
    if isinstance(x, dict):
        return {k: zeros_grad(v, seed) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return _rebuild(x, [zeros_grad(v, seed) for v in x])
    if seed is not None and type(seed) is not float and type(x) is np.ndarray and is_foreign(seed):
        return zeros(x.shape, x.dtype, seed)
    return np.zeros_like(x)


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
        axes = {i % ndim for i in ((axis,) if isinstance(axis, (int, np.integer)) else axis)}
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


def _rebuild(like: Any, items: list[Any]) -> Any:
    """A tuple or list of ``items`` of the type of ``like`` (a named tuple too)."""
    return type(like)(*items) if hasattr(like, "_fields") else type(like)(items)


def add_grads(a: Any, b: Any) -> Any:
    """``a + b`` for gradients, leaf by leaf for tuples, lists and dicts.

    A key only one dict has is zero in the other: the gradient of a dict before
    ``d[key] = v`` added the key has that key too (``grad_like`` drops it from results).
    """
    if isinstance(a, dict):
        out = {k: add_grads(v, b[k]) if k in b else v for k, v in a.items()}
        return {**out, **{k: v for k, v in b.items() if k not in a}}
    if isinstance(a, (list, tuple)):
        return _rebuild(a, [add_grads(u, v) for u, v in zip(a, b)])
    return a + b


def unbroadcast(g: Any, x: Any) -> Any:
    """Sum ``g`` over the axes along which ``x`` was broadcast, giving x's shape; for a real
    ``x``, the real part of a complex ``g`` (x * 1j: the gradient of a real x is real)."""
    kind = type(x)
    if kind is np.ndarray:
        if type(g) is np.ndarray and g.shape == x.shape and g.dtype == x.dtype:
            return g  # the commonest case, decided first
    elif (kind is float or kind is np.float64) and (type(g) is float or type(g) is np.float64):
        return g
    out = _reduce_to(g, x)
    if (out.dtype.kind if type(out) is np.ndarray else _kind(out)) == "c" and _kind(x) != "c":
        part = np.real(out)
        return float(part) if kind is float else _in_dtype_of(part, x)
    return out


def _kind(x: Any) -> str:
    """The dtype kind of an array, NumPy scalar or Python number."""
    if isinstance(x, (np.ndarray, np.generic)) or is_foreign(x):
        return np.dtype(x.dtype).kind
    return "c" if isinstance(x, complex) else "f" if isinstance(x, float) else np.asarray(x).dtype.kind


def _reduce_to(g: Any, x: Any) -> Any:
    """Sum ``g`` over the axes along which ``x`` was broadcast (a complex step keeps its
    imaginary part)."""
    kind = type(x)
    if (kind is float or kind is np.float64) and type(g) is not np.ndarray and not is_foreign(g):
        return g
    shape = getattr(x, "shape", None)
    if shape is None:
        if isinstance(x, _CONTAINERS):
            raise S2SADError(
                f"arithmetic on a {type(x).__name__} cannot be differentiated (in Python, + on "
                f"lists and tuples concatenates them); use np.concatenate, or arrays")
        shape = ()
    gshape = getattr(g, "shape", ())
    if gshape == shape:
        if kind is not np.ndarray and type(g) is np.ndarray:
            return g[()]  # a number's gradient is a number, not a 0-d array
        if kind is float or kind is np.float64 or kind is type(g) and (
                kind is not np.ndarray or g.dtype == x.dtype):
            return g  # the common cases, decided without a call
        return _in_dtype_of(g, x)
    extra = len(gshape) - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and gshape[i + extra] != 1
    )
    if not extra and type(g) is np.ndarray and g.dtype.kind in "fc":  # no reshape needed
        g = np.add.reduce(g, axis=axes, keepdims=True) if axes else g
        if kind is np.ndarray and g.dtype == x.dtype:
            return g
        return _in_dtype_of(g, x)
    g = np.sum(g, axis=axes) if axes else g
    return _in_dtype_of(np.reshape(g, shape), x)


def _in_dtype_of(g: Any, x: Any) -> Any:
    """``g`` in the floating dtype of array ``x`` (a float32 input gets a float32 gradient)."""
    if (isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind == "f" and np.result_type(g) != x.dtype
            and np.result_type(g).kind != "c"):  # a complex step (step_jvp) keeps its imaginary part
        return g.astype(x.dtype) if is_foreign(g) else np.asarray(g).astype(x.dtype)[()]
    return g


def broadcast_tangent(t: Any, ans: Any) -> Any:
    """A tangent in the output's shape: ``t`` broadcast against ``ans`` (forward mode)."""
    shape = np.shape(ans)
    return t if np.shape(t) == shape else np.broadcast_to(t, shape)


def balanced_eq(x: Any, ans: Any, y: Any) -> Any:
    """Where ``x`` produced ``ans``: 1, or 1/2 where ``x`` and ``y`` tie."""
    _real_only("a maximum or minimum", x, y)
    dtype = np.result_type(x, y)
    return _as_dtype(x == ans, dtype) / _as_dtype(1 + (x == y), dtype)


def _as_dtype(a: Any, dtype: Any) -> Any:
    """``np.asarray(a, dtype)``, for another library's array too (without converting it)."""
    return a.astype(dtype) if is_foreign(a) else np.asarray(a, dtype)


def clip_mask(a: Any, a_min: Any, a_max: Any) -> Any:
    """Where ``np.clip(a, a_min, a_max)`` passes ``a`` through (strictly inside the bounds)."""
    _real_only("np.clip", a)
    lo = True if a_min is None else np.greater(a, a_min)
    hi = True if a_max is None else np.less(a, a_max)
    return np.logical_and(lo, hi)


def branch_mask(mask: Any, x: Any) -> Any:
    """Where ``x``'s gradient may be nonzero when the output reads ``x`` only where ``mask``
    holds (``np.where``'s branches): the mask in a shape that broadcasts to x's, reduced by
    ``any`` over the axes along which ``x`` was broadcast against it."""
    shape, mshape = np.shape(x), np.shape(mask)
    extra = len(mshape) - len(shape)
    if extra <= 0 and all(m == 1 or m == n for m, n in zip(mshape[::-1], shape[::-1])):
        return mask
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and mshape[i + extra] != 1)
    return np.any(mask, axis=axes, keepdims=False).reshape(shape) if axes else mask


def _expand(g: Any, ndim: int, axis: Any, keepdims: bool) -> Any:
    """Give a reduced gradient back the axes that the reduction removed."""
    if keepdims or axis is None and np.ndim(g) == ndim:
        return g
    if axis is None:
        return np.reshape(g, (1,) * ndim)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return np.expand_dims(g, tuple(a % ndim for a in axes))


def reduce_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.sum(x, axis, keepdims=keepdims)``: g broadcast back to x.

    For a large array whose rows are long (or a full sum), the result is a read-only
    broadcast view, not a copy: generated code never updates it in place, and wraps it
    in :func:`grad_like` before returning it.  Otherwise a copy is cheaper to make and
    to compute with (NumPy loops over short rows of a view slowly).
    """
    shape = np.shape(x)
    if type(g) is not np.ndarray and type(g) is not float and is_foreign(g) or (
            type(x) is not np.ndarray and is_foreign(x)):
        return _filled(_expand(g, len(shape), axis, keepdims), x, shape)
    if not shape:  # a number: a number, not a 0-d array
        return np.asarray(g)[()]
    if type(g) is float and type(x) is np.ndarray and x.dtype.kind == "f":
        g = np.asarray(g, x.dtype)  # a plain number (the seed 1.0): the gradient takes x's dtype
    g = np.asarray(g) if axis is None and np.ndim(g) == 0 else _expand(g, len(shape), axis, keepdims)
    if np.size(x) >= _VIEW_SIZE and (axis is None or shape[-1] >= _VIEW_ROW):
        return _broadcast_view(g, shape)
    out = np.empty(shape, dtype=np.result_type(g))
    out[...] = g
    return out


_VIEW_SIZE, _VIEW_ROW = 4096, 64  # reduce_grad returns views of at least so many entries, rows


def _filled(g: Any, x: Any, shape: tuple[int, ...]) -> Any:
    """``g`` broadcast to ``shape``, as a new array of another library: of x's library (and
    Dask chunks) when ``x`` is that library's array, else of g's."""
    if type(g) is float and _kind(x) == "f":
        g = np.asarray(g, dtype=x.dtype, like=x) if is_foreign(x) else np.asarray(g, x.dtype)
    dtype = np.result_type(g)
    if is_foreign(x):
        return np.zeros_like(x, dtype=dtype) + g
    return np.zeros_like(g, shape=shape, dtype=dtype) + g


def _broadcast_view(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``np.broadcast_to(g, shape)`` (read-only), for g of no axes or of len(shape) axes,
    made directly when g is contiguous (np.broadcast_to costs microseconds)."""
    if g.ndim and g.ndim != len(shape) or not g.flags.c_contiguous:
        return np.broadcast_to(g, shape)
    strides = (0,) * len(shape) if not g.ndim else tuple(
        [0 if n == 1 else step for n, step in zip(g.shape, g.strides)])
    out = np.ndarray(shape, g.dtype, g, 0, strides)
    out.flags.writeable = False
    return out


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
    if type(g) is not np.ndarray and type(g) is not float and is_foreign(g) and not isinstance(x, _CONTAINERS):
        return _foreign_like(g, x)
    if kind is np.ndarray:
        g = _real(np.asarray(g), x)
        if g.dtype.kind == "f" and x.dtype.kind == "f" and g.dtype.itemsize < x.dtype.itemsize:
            return g
        return g.astype(x.dtype)
    if isinstance(x, dict):
        return {k: grad_like(g[k], v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and isinstance(g, (list, tuple)):
        return _rebuild(x, [grad_like(u, v) for u, v in zip(g, x)])
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
    if np.dtype(g.dtype).kind == "c" and _kind(x) != "c":
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
    return np.real(g) if g.dtype.kind == "c" and _kind(x) != "c" else g


def distinct(*grads: Any) -> tuple[Any, ...]:
    """The gradients of several arguments, as a tuple in which no array appears twice
    (a later occurrence, in a container too, is copied)."""
    seen: set[int] = set()

    def one(g: Any) -> Any:
        if type(g) is np.ndarray or is_foreign(g):
            if id(g) in seen:
                return g.copy()
            seen.add(id(g))
            return g
        if isinstance(g, dict):
            return {k: one(v) for k, v in g.items()}
        if isinstance(g, (list, tuple)):
            return _rebuild(g, [one(v) for v in g])
        return g

    return tuple([one(g) for g in grads])


def own_grad(g: Any) -> Any:
    """``g`` as a gradient the caller may keep and update: read-only views are copied.

    Tuples, lists and dicts are copied leaf by leaf where a leaf is a view.
    """
    if type(g) is np.ndarray:
        return g if g.flags.writeable else g.copy()
    if isinstance(g, dict):
        return {k: own_grad(v) for k, v in g.items()}
    if isinstance(g, (list, tuple)):
        return _rebuild(g, [own_grad(v) for v in g])
    return g


def mean_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.mean(x, axis, keepdims=keepdims)``."""
    if axis is None:
        return reduce_grad(g / (x.size if type(x) is np.ndarray else size(x)), x, None, keepdims)
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


def _as_array(x: Any) -> Any:
    """A list or tuple (``np.max([a, 2 * b])``) as the array NumPy makes of it; else ``x``."""
    return np.asarray(x) if isinstance(x, (list, tuple)) else x


def extremum_grad(g: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of max/min: shared equally among the entries that tie for it."""
    _real_only("a maximum or minimum", x)
    x = _as_array(x)
    ndim = np.ndim(x)
    ans = _expand(ans, ndim, axis, keepdims)
    mask = _as_dtype(x == ans, np.result_type(g, x))
    count = np.sum(mask, axis=axis, keepdims=True)
    return _expand(g, ndim, axis, keepdims) * mask / count


def getitem_grad(g: Any, x: Any, index: Any) -> Any:
    """Gradient of ``x[index]``: ``g`` scattered into zeros shaped like x.

    Repeated integer indices accumulate (``np.add.at`` semantics).  For a tuple,
    list or dict ``x``, the result has x's structure.
    """
    if isinstance(x, _CONTAINERS):
        return add_at(zeros_grad(x), index, g)
    out = zeros(np.shape(x), np.result_type(g, x), g if type(g) is not np.ndarray else x)
    if type(out) is not np.ndarray:
        return _foreign_set(out, index, g, "x[index]")
    if _is_basic_index(index):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


def _foreign_set(out: Any, index: Any, g: Any, what: str) -> Any:
    """``out[index] = g`` for another library's array ``out``, by its own item assignment
    (which takes no new axes: the index without its Nones, g without their axes)."""
    if not _is_basic_index(index):
        raise S2SADError(
            f"the gradient of {what} with an index of integer or boolean arrays is not computed on "
            f"{type(out).__module__}.{type(out).__name__} arrays (it needs np.add.at); index with "
            f"slices, or convert the array with np.asarray(...) first")
    parts = index if isinstance(index, tuple) else (index,)
    if any(p is None for p in parts):
        index = tuple(p for p in parts if p is not None)
        g = np.reshape(g, out[index].shape)
    out[index] = g
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
        return _rebuild(acc, out)
    if type(acc) is not np.ndarray and is_foreign(acc):
        return _foreign_set(acc, index, acc[index] + g, "x[index]")
    if _is_basic_index(index):
        acc[index] += g
    else:
        np.add.at(acc, index, g)
    return acc


def unpack_grad(x: Any, grads: tuple[Any, ...]) -> Any:
    """Gradient of ``a, b, ... = x`` from the gradients of the names (None: zero)."""
    parts = [zeros_grad(v) if g is None else g for v, g in zip(x, grads)]
    if isinstance(x, (list, tuple)):
        return _rebuild(x, list(distinct(*parts)))  # a, b in np.sum(a + b) share one array
    return np.stack([np.broadcast_to(p, np.shape(x)[1:]) for p in parts])


def setitem_grad_x(g: Any, index: Any) -> Any:
    """Gradient of ``out = x.copy(); out[index] = v`` with respect to x: g, zero at index."""
    if isinstance(g, dict):
        return {**g, index: zeros_grad(g[index])}
    if isinstance(g, (list, tuple)):
        out = list(g)
        out[index] = zeros_grad(out[index])
        return _rebuild(g, out)
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


def concat(x: Any, y: Any) -> Any:
    """``x + y`` where one operand is a list or tuple display (``xs + [v]``): generated code
    spells it so, and differentiating generated code knows it is no arithmetic."""
    return x + y


def concat_grad(g: Any, x: Any, y: Any, right: bool) -> Any:
    """Gradient of ``x + y`` with respect to y (``right``) or x, where one operand is a list
    or tuple display: its part of g when both are lists or tuples (a concatenation), g
    reduced to the operand's shape otherwise (an array plus a list adds elementwise)."""
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return g[len(x):] if right else g[:len(x)]
    return unbroadcast(g, y if right else x)


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
    return g if np.ndim(obj) or not isinstance(g, np.ndarray) else g[()]


def _is_basic_index(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(
        p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer)) for p in parts
    )


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


def matmul_grad_lhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``a @ b`` with respect to ``a``."""
    if type(a) is np.ndarray and type(b) is np.ndarray and type(g) is np.ndarray and a.ndim == 2:
        # ndarray.dot is matmul for these ranks, with less per-call overhead on small arrays
        if b.ndim == 1 and g.ndim == 1:  # matrix times vector: the outer product
            return g[:, None].dot(b[None])
        if b.ndim == 2 and g.ndim == 2:
            return g.dot(b.T)
    if np.ndim(a) == 2 and np.ndim(b) <= 2 and np.ndim(g) == np.ndim(b):  # matrix times vector or matrix
        return np.outer(g, b) if np.ndim(b) == 1 else g @ b.T
    if np.ndim(b) == 1:
        if np.ndim(a) == 1:
            return g * b
        return unbroadcast(np.expand_dims(g, -1) * b, a)
    if np.ndim(a) == 1:
        return unbroadcast(np.matmul(b, np.expand_dims(g, -1))[..., 0], a)
    return unbroadcast(np.matmul(g, np.swapaxes(b, -1, -2)), a)


def matmul_grad_rhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``a @ b`` with respect to ``b``."""
    if type(a) is np.ndarray and type(b) is np.ndarray and type(g) is np.ndarray and a.ndim == 2:
        if b.ndim == 1 and g.ndim == 1:
            return g.dot(a)
        if b.ndim == 2 and g.ndim == 2:
            return a.T.dot(g)
    if np.ndim(a) == 2 and np.ndim(b) <= 2 and np.ndim(g) == np.ndim(b):  # matrix times vector or matrix
        return g @ a if np.ndim(b) == 1 else a.T @ g
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
    if type(g) is not np.ndarray and is_foreign(g):  # (Dask takes axes as a tuple, not an array)
        return np.transpose(g, tuple(int(a) for a in np.argsort(axes)))
    return np.transpose(g, np.argsort(axes))


# --- helpers of the wider NumPy coverage ------------------------------------------------


def _t(m: Any) -> Any:
    """The matrix transpose of a stack of matrices (the last two axes swapped)."""
    return np.swapaxes(m, -1, -2)


def reshape_grad(g: Any, x: Any) -> Any:
    """Gradient of a reshape of ``x``: g in x's shape (a NumPy scalar for a scalar x)."""
    out = np.reshape(g, np.shape(x))
    return out[()] if out.ndim == 0 else out


def _share(mask: Any, axis: Any, dtype: Any) -> Any:
    """Weights that share 1 equally among the True entries of ``mask`` along ``axis``."""
    weights = np.asarray(mask, dtype=dtype)
    return weights / np.sum(weights, axis=axis, keepdims=True)


def _count(shape: tuple[int, ...], axis: Any) -> int:
    """How many entries of an array of ``shape`` a reduction over ``axis`` combines."""
    count = 1
    for i, n in enumerate(shape):
        if _reduced(i, len(shape), axis):
            count *= n
    return count


def safe_divide(x: Any, y: Any) -> Any:
    """``x / y``, and 0 where ``y`` is 0."""
    zero = np.equal(y, 0)
    return np.where(zero, 0, x) / np.where(zero, 1, y)


def cast_grad(g: Any, x: Any, ans: Any) -> Any:
    """Gradient of converting ``x`` to ans's dtype: g in x's dtype (to a non-float dtype: an error)."""
    if np.result_type(ans).kind not in "fc":  # an integer or boolean result: not a silent zero
        raise S2SADError(
            f"a gradient reaches a conversion to {np.result_type(ans)}, which is not "
            f"differentiable; convert to a float dtype, or wrap the conversion in stop_gradient(...)")
    if isinstance(x, (np.ndarray, np.generic)):
        return _real(np.asarray(g), x).astype(x.dtype)[()]
    return g


def var_grad(g: Any, x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """Gradient of ``np.var(x, axis, ddof=ddof, keepdims=keepdims)``: 2 g (x - mean) / (n - ddof)."""
    _real_only("np.var", x)
    shape = np.shape(x)
    centered = x - np.mean(x, axis=axis, keepdims=True)
    return 2 * _expand(g, len(shape), axis, keepdims) * centered / (_count(shape, axis) - ddof)


def prod_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.prod(x, axis)``: g times the product of the other entries (exact at zeros)."""
    ndim = np.ndim(x)
    reduced = [i for i in range(ndim) if _reduced(i, ndim, axis)]
    kept = [i for i in range(ndim) if i not in reduced]
    moved = np.transpose(x, kept + reduced)
    rows = np.reshape(moved, np.shape(moved)[:len(kept)] + (-1,))
    ones = np.ones_like(rows[..., :1])
    before = np.cumprod(np.concatenate([ones, rows[..., :-1]], axis=-1), axis=-1)
    after = np.flip(np.cumprod(np.concatenate([ones, np.flip(rows[..., 1:], -1)], axis=-1), axis=-1), -1)
    others = np.transpose(np.reshape(before * after, np.shape(moved)), np.argsort(kept + reduced))
    return _expand(g, ndim, axis, keepdims) * others


def cumsum_grad(g: Any, x: Any, axis: Any = None) -> Any:
    """Gradient of ``np.cumsum(x, axis)``: the cumulative sum of g taken backwards."""
    return np.reshape(np.flip(np.cumsum(np.flip(g, axis), axis), axis), np.shape(x))


def cumprod_grad(g: Any, x: Any, axis: Any = None) -> Any:
    """Gradient of ``np.cumprod(x, axis)``, exact where x has zeros (quadratic in the axis length)."""
    shape = np.shape(x)
    if axis is None:
        x, axis = np.ravel(x), 0
    x, g = np.moveaxis(x, axis, -1), np.moveaxis(g, axis, -1)
    full = np.ones((np.shape(x)[-1],) * 2, dtype=bool)
    rows = np.expand_dims(x, -2)  # rows[..., i, k] = x[..., k]
    before = np.prod(np.where(np.tril(full, -1), rows, 1), axis=-1)  # x[k] for k < i
    between = np.cumprod(np.where(np.triu(full, 1), rows, 1), axis=-1)  # [i, j]: x[k], i < k <= j
    later = np.sum(np.where(np.triu(full), np.expand_dims(g, -2) * between, 0), axis=-1)
    return np.reshape(np.moveaxis(before * later, -1, axis), shape)


def ptp_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.ptp(x, axis)``: the max's gradient minus the min's, each shared among ties."""
    top = np.max(x, axis=axis, keepdims=keepdims)
    bottom = np.min(x, axis=axis, keepdims=keepdims)
    return extremum_grad(g, x, top, axis, keepdims) - extremum_grad(g, x, bottom, axis, keepdims)


def sort_grad(g: Any, x: Any, axis: Any = -1) -> Any:
    """Gradient of ``np.sort(x, axis)``: g back in x's order; equal entries share their gradients."""
    _real_only("np.sort", x)
    shape = np.shape(x)
    if axis is None:
        x, axis = np.ravel(x), 0
    x, g = np.moveaxis(x, axis, -1), np.moveaxis(g, axis, -1)
    order = np.argsort(x, axis=-1, kind="stable")
    ordered = np.take_along_axis(x, order, axis=-1)
    starts = np.concatenate([np.ones_like(ordered[..., :1], dtype=bool),
                             ordered[..., 1:] != ordered[..., :-1]], axis=-1)
    n = np.shape(x)[-1]
    rows = np.reshape(np.arange(np.size(x) // max(n, 1)), np.shape(x)[:-1] + (1,)) * n
    groups = np.ravel(np.cumsum(starts, axis=-1) - 1 + rows)  # tie groups, numbered across rows
    mean = np.bincount(groups, weights=np.ravel(g))[groups] / np.bincount(groups)[groups]
    out = np.empty_like(g)
    np.put_along_axis(out, order, np.reshape(mean, np.shape(g)).astype(out.dtype), axis=-1)
    return np.reshape(np.moveaxis(out, -1, axis), shape)


def diagonal_grad(g: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """Gradient of ``np.diagonal(x, offset, axis1, axis2)``: g on that diagonal of zeros like x."""
    out = np.zeros(np.shape(x), dtype=np.result_type(g, x))
    matrices = np.moveaxis(out, (axis1, axis2), (-2, -1))  # a view of out
    k = np.arange(np.shape(np.diagonal(matrices, offset, -2, -1))[-1])
    matrices[..., k + max(-offset, 0), k + max(offset, 0)] = g
    return out


def repeat_grad(g: Any, x: Any, repeats: Any, axis: Any = None) -> Any:
    """Gradient of ``np.repeat(x, repeats, axis)``: the gradients of each entry's copies, summed."""
    n = np.size(x) if axis is None else np.shape(x)[axis]
    axis = 0 if axis is None else axis
    source = np.repeat(np.arange(n), repeats)  # the entry each copy comes from
    copies = np.moveaxis(g, axis, 0)
    out = np.zeros((n,) + np.shape(copies)[1:], dtype=np.result_type(g))
    np.add.at(out, source, copies)
    return reshape_grad(np.moveaxis(out, 0, axis), x)


def take_grad(g: Any, x: Any, indices: Any, axis: Any = None, mode: str = "raise") -> Any:
    """Gradient of ``np.take(x, indices, axis, mode=mode)``: g added into zeros where it was taken."""
    shape = np.shape(x)
    n = np.size(x) if axis is None else shape[axis]
    indices = np.asarray(indices)
    if mode == "wrap":
        indices = indices % n
    elif mode == "clip":
        indices = np.clip(indices, 0, n - 1)
    if axis is None:
        out = np.zeros(n, dtype=np.result_type(g))
        np.add.at(out, indices, g)
        return reshape_grad(out, x)
    axis = axis % len(shape)
    taken = tuple(range(axis, axis + indices.ndim))
    out = np.zeros((n,) + shape[:axis] + shape[axis + 1:], dtype=np.result_type(g))
    np.add.at(out, indices, np.moveaxis(g, taken, tuple(range(indices.ndim))))
    return np.moveaxis(out, 0, axis)


def tile_grad(g: Any, x: Any, reps: Any) -> Any:
    """Gradient of ``np.tile(x, reps)``: the gradients of the tiles, summed."""
    reps = tuple(np.atleast_1d(reps))
    ndim = max(np.ndim(x), len(reps))
    shape = (1,) * (ndim - np.ndim(x)) + np.shape(x)
    reps = (1,) * (ndim - len(reps)) + reps
    tiles = np.reshape(g, [n for pair in zip(reps, shape) for n in pair])  # [r0, s0, r1, s1, ...]
    return reshape_grad(np.sum(tiles, axis=tuple(range(0, 2 * ndim, 2))), x)


def pad_grad(g: Any, x: Any, pad_width: Any, mode: Any = "constant", reflect_type: str = "even") -> Any:
    """Gradient of ``np.pad(x, pad_width, mode)`` for copying modes: copies' gradients summed."""
    if not (isinstance(mode, str) and mode in ("constant", "edge", "reflect", "symmetric", "wrap")
            and reflect_type == "even"):
        raise S2SADError(f"s2sad differentiates np.pad with mode 'constant', 'edge', 'reflect', "
                         f"'symmetric' or 'wrap' (reflect_type 'even'), not mode={mode!r}, "
                         f"reflect_type={reflect_type!r}")
    source = np.reshape(np.arange(np.size(x)), np.shape(x))  # where each padded entry comes from
    if mode == "constant":
        source = np.pad(source, pad_width, mode, constant_values=-1)
    else:
        source = np.pad(source, pad_width, mode)
    copied = source >= 0
    out = np.zeros(np.size(x), dtype=np.result_type(g))
    np.add.at(out, source[copied], np.asarray(g)[copied])
    return reshape_grad(out, x)


def rollaxis_grad(g: Any, x: Any, axis: int, start: int = 0) -> Any:
    """Gradient of ``np.rollaxis(x, axis, start)``: the axis moved back."""
    ndim = np.ndim(x)
    axis = axis % ndim
    start = start + ndim if start < 0 else start
    return np.moveaxis(g, start - 1 if start > axis else start, axis)


def diff_grad(g: Any, x: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None,
              part: str = "a") -> Any:
    """Gradient of ``np.diff(a, n, axis, prepend, append)`` w.r.t. part "a", "prepend" or "append"."""
    before = 0 if prepend is None else (np.shape(prepend)[axis] if np.ndim(prepend) else 1)
    after = 0 if append is None else (np.shape(append)[axis] if np.ndim(append) else 1)
    size = np.shape(x)[axis]
    g = np.asarray(g)
    for k in reversed(range(n)):  # the k-th difference shortened the axis by one, unless empty
        if before + size + after - k > 0:
            edge = np.zeros(g.shape[:axis % g.ndim] + (1,) + g.shape[axis % g.ndim + 1:], g.dtype)
            g = np.concatenate([edge, g], axis=axis) - np.concatenate([g, edge], axis=axis)
    if part == "prepend":
        return unbroadcast(np.take(g, np.arange(before), axis=axis), prepend)
    if part == "append":
        return unbroadcast(np.take(g, np.arange(before + size, np.shape(g)[axis]), axis=axis), append)
    return np.take(g, np.arange(before, before + size), axis=axis)


def as_column(a: Any) -> Any:
    """``a`` as ``np.column_stack`` takes it: an array of fewer than 2 dimensions becomes a column."""
    return np.reshape(a, (-1, 1)) if np.ndim(a) < 2 else a


def join_grad(g: Any, arrays: Any, axis: int, lift: Any) -> Any:
    """Gradient of ``np.concatenate([lift(a) for a in arrays], axis)``: hstack, vstack, dstack, ..."""
    sizes = [np.shape(lift(a))[axis] for a in arrays]
    parts = [reshape_grad(p, a) for p, a in zip(np.split(g, np.cumsum(sizes)[:-1], axis=axis), arrays)]
    return type(arrays)(parts) if isinstance(arrays, (list, tuple)) else np.stack(parts)


def linspace_grad(g: Any, end: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
                  axis: int = 0, at_stop: bool = True) -> Any:
    """Gradient of ``np.linspace(start, stop, num, ...)`` with respect to stop (``at_stop``) or start."""
    if retstep:
        g, g_step = g
    weight = np.linspace(0, 1, num, endpoint=endpoint, dtype=np.result_type(g))  # stop's share
    total = np.sum(np.moveaxis(g, axis, -1) * (weight if at_stop else 1 - weight), axis=-1)
    if retstep:  # step = (stop - start) / divisions
        total = total + (g_step if at_stop else -g_step) / (num - 1 if endpoint else num)
    return unbroadcast(total, end)


def norm_grad(g: Any, x: Any, ans: Any, ord: Any = None, axis: Any = None,
              keepdims: bool = False) -> Any:
    """Gradient of ``np.linalg.norm(x, ord, axis, keepdims)``; ties share, 0 where the norm is 0.

    Written with |x| as x sign(re x), so that a complex step (step_jvp) differentiates it."""
    _real_only("np.linalg.norm", x)
    x = _as_array(x)
    ndim = np.ndim(x)
    axes = tuple(range(ndim)) if axis is None else tuple(int(a) % ndim for a in np.atleast_1d(axis))
    g = _expand(g, ndim, axes, keepdims)
    ans = _expand(ans, ndim, axes, keepdims)
    dtype = np.result_type(g, x)
    sign = np.sign(np.real(x))
    if len(axes) != 2 or ord in (None, "fro"):  # vector norms, and the Frobenius norm
        if ord is None or ord == "fro" or ord == 2:
            return g * safe_divide(x, ans)
        if ord in (np.inf, -np.inf):
            return g * sign * _share(np.real(x * sign) == np.real(ans), axes, dtype)
        if ord == 0:
            return g * np.zeros_like(x)
        return g * sign * safe_divide((x * sign) ** (ord - 1), ans ** (ord - 1))
    xm, gm = np.moveaxis(x, axes, (-2, -1)), np.moveaxis(g, axes, (-2, -1))
    if ord in (1, -1, np.inf, -np.inf):  # the largest (smallest) column or row sum of |x|
        summed = -2 if ord in (1, -1) else -1
        sums = np.real(np.sum(xm * np.sign(np.real(xm)), axis=summed, keepdims=True))
        best = (np.max if ord > 0 else np.min)(sums, axis=-1 if summed == -2 else -2, keepdims=True)
        grad = gm * np.sign(np.real(xm)) * _share(sums == best, -1 if summed == -2 else -2, dtype)
    else:
        if np.iscomplexobj(xm):
            raise S2SADError(f"s2sad differentiates np.linalg.norm of a matrix with ord={ord!r} "
                             f"once, not twice; for second derivatives write it with the singular "
                             f"values of np.linalg.svd(x) (compute_uv=True)")
        u, _, vt = np.linalg.svd(xm, full_matrices=False)
        if ord == "nuc":
            grad = gm * (u @ vt)
        else:  # 2 or -2: the largest or smallest singular value
            k = 0 if ord == 2 else -1
            grad = gm * (u[..., :, [k]] @ vt[..., [k], :])
    return np.moveaxis(grad, (-2, -1), axes)


def _triangle(m: Any, lower: bool) -> Any:
    """The gradient ``m`` of a function of a symmetric matrix, moved to the triangle it reads."""
    both = m + _t(m)
    return (np.tril(both, -1) if lower else np.triu(both, 1)) + np.triu(np.tril(m))


def cholesky_grad(g: Any, ans: Any, upper: bool = False) -> Any:
    """Gradient of ``np.linalg.cholesky`` (Murray 2016), on the triangle of the input NumPy reads."""
    _real_only("np.linalg.cholesky", ans)
    low, g = (_t(ans), _t(g)) if upper else (ans, g)
    phi = np.tril(_t(low) @ g)
    phi = phi - 0.5 * np.triu(phi)  # the diagonal halved
    inner = _t(np.linalg.solve(_t(low), _t(np.linalg.solve(_t(low), phi))))  # L^-T phi L^-1
    return _triangle(inner, not upper)


def eigh_grad(g: Any, a: Any, ans: Any, UPLO: str = "L") -> Any:
    """Gradient of ``np.linalg.eigh(a, UPLO)``, on the triangle NumPy reads (distinct eigenvalues)."""
    _real_only("np.linalg.eigh", a)
    w, v = ans
    g_w, g_v = g
    gaps = w[..., None, :] - w[..., :, None]
    gaps = safe_divide(np.ones_like(gaps), gaps)  # [i, j]: 1 / (w_j - w_i), 0 where they are equal
    inner = (v * g_w[..., None, :]) @ _t(v) + v @ (gaps * (_t(v) @ g_v)) @ _t(v)
    return _triangle(inner, UPLO == "L")


def slogdet_grad(g: Any, a: Any) -> Any:
    """Gradient of ``np.linalg.slogdet(a)``, g = (g_sign, g_logabsdet): g_logabsdet a^-T."""
    _real_only("np.linalg.slogdet", a)
    _, g_logdet = g  # the sign is piecewise constant
    return np.expand_dims(g_logdet, (-2, -1)) * _t(np.linalg.inv(a))


def solve_grad_b(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.linalg.solve(a, b)`` with respect to b: solve(a^T, g)."""
    return _reduce_to(_solve_transposed(g, a, b), b)


def solve_grad_a(g: Any, a: Any, b: Any, ans: Any) -> Any:
    """Gradient of ``np.linalg.solve(a, b)`` with respect to a: -solve(a^T, g) ans^T."""
    g_b = _solve_transposed(g, a, b)
    if np.ndim(b) == 1:
        return _reduce_to(-g_b[..., :, None] * ans[..., None, :], a)
    return _reduce_to(-g_b @ _t(ans), a)


def _solve_transposed(g: Any, a: Any, b: Any) -> Any:
    if np.ndim(b) == 1:
        return np.linalg.solve(_t(a), g[..., None])[..., 0]
    return np.linalg.solve(_t(a), g)


def pinv_grad(g: Any, a: Any, ans: Any) -> Any:
    """Gradient of ``np.linalg.pinv(a)`` (Golub and Pereyra), where a's rank does not change."""
    _real_only("np.linalg.pinv", a)
    p, g_t = ans, _t(g)
    return (-_t(p) @ g @ _t(p) + (g_t - a @ p @ g_t) @ p @ _t(p)
            + _t(p) @ p @ (g_t - g_t @ p @ a))


def qr_grad(g: Any, a: Any, ans: Any, mode: str = "reduced") -> Any:
    """Gradient of ``np.linalg.qr(a, mode)``: mode 'reduced' (or square 'complete'), rows >= columns."""
    _real_only("np.linalg.qr", a)
    rows, cols = np.shape(a)[-2:]
    if mode not in ("reduced", "complete") or rows < cols or mode == "complete" and rows != cols:
        raise S2SADError(f"s2sad differentiates np.linalg.qr with mode 'reduced' of a matrix with at "
                         f"least as many rows as columns, not mode={mode!r} of shape {np.shape(a)}")
    q, r = ans
    g_q, g_r = g
    m = r @ _t(g_r) - _t(g_q) @ q
    sym = np.tril(m) + _t(np.tril(m, -1))  # the lower triangle of m, copied to the upper
    return _t(np.linalg.solve(r, _t(g_q + q @ sym)))  # (g_q + q sym) r^-T


def svd_grad(g: Any, a: Any, ans: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Gradient of ``np.linalg.svd(a, full_matrices, compute_uv)`` (distinct singular values)."""
    _real_only("np.linalg.svd", a)
    if not compute_uv:
        _real_svd_input(a)
        u, _, vt = np.linalg.svd(a, full_matrices=False)
        return (u * g[..., None, :]) @ vt
    u, s, vt = ans
    g_u, g_s, g_vt = g
    k = np.shape(s)[-1]
    if full_matrices:
        if np.any(g_u[..., :, k:]) or np.any(g_vt[..., k:, :]):
            raise S2SADError("a gradient reaches the columns of u (rows of vh) that "
                             "np.linalg.svd(full_matrices=True) adds, which are not unique; "
                             "use full_matrices=False")
        u, g_u, vt, g_vt = u[..., :, :k], g_u[..., :, :k], vt[..., :k, :], g_vt[..., :k, :]
    gaps = s[..., None, :] ** 2 - s[..., :, None] ** 2
    gaps = safe_divide(np.ones_like(gaps), gaps)  # [i, j]: 1 / (s_j^2 - s_i^2), 0 where equal
    ut_gu, vt_gv = _t(u) @ g_u, vt @ _t(g_vt)
    j, k_ = gaps * ut_gu, gaps * vt_gv
    inner = (j + _t(j)) * s[..., None, :] + s[..., :, None] * (k_ + _t(k_))
    return (u @ inner @ vt + (u * g_s[..., None, :]) @ vt
            + ((g_u - u @ ut_gu) / s[..., None, :]) @ vt
            + (u / s[..., None, :]) @ (g_vt - _t(vt_gv) @ vt))


def _real_svd_input(a: Any) -> None:
    if np.iscomplexobj(a):  # a complex step (step_jvp): the singular vectors are not analytic in a
        raise S2SADError("s2sad differentiates np.linalg.svd(..., compute_uv=False) once, not "
                         "twice; for second derivatives, use compute_uv=True")


def tensordot_grad_lhs(g: Any, a: Any, b: Any, axes: Any = 2) -> Any:
    """Gradient of ``np.tensordot(a, b, axes)`` with respect to a."""
    a_sum, b_sum = _tensordot_axes(a, b, axes)
    a_free = [i for i in range(np.ndim(a)) if i not in a_sum]
    b_free = [i for i in range(np.ndim(b)) if i not in b_sum]
    grad = np.tensordot(g, b, (list(range(len(a_free), np.ndim(g))), b_free))
    order = a_free + [a_sum[b_sum.index(i)] for i in sorted(b_sum)]  # grad's axes, as axes of a
    return np.transpose(grad, np.argsort(order))


def tensordot_grad_rhs(g: Any, a: Any, b: Any, axes: Any = 2) -> Any:
    """Gradient of ``np.tensordot(a, b, axes)`` with respect to b."""
    a_sum, b_sum = _tensordot_axes(a, b, axes)
    a_free = [i for i in range(np.ndim(a)) if i not in a_sum]
    b_free = [i for i in range(np.ndim(b)) if i not in b_sum]
    grad = np.tensordot(a, g, (a_free, list(range(len(a_free)))))
    order = [b_sum[a_sum.index(i)] for i in sorted(a_sum)] + b_free  # grad's axes, as axes of b
    return np.transpose(grad, np.argsort(order))


def _tensordot_axes(a: Any, b: Any, axes: Any) -> tuple[list[int], list[int]]:
    """The summed axes of a and of b, in matching order, as non-negative numbers."""
    if np.ndim(axes) == 0:
        n = int(axes)
        return list(range(np.ndim(a) - n, np.ndim(a))), list(range(n))
    a_axes, b_axes = axes
    return ([int(i) % np.ndim(a) for i in np.atleast_1d(a_axes)],
            [int(i) % np.ndim(b) for i in np.atleast_1d(b_axes)])


def kron_grad_lhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.kron(a, b)`` with respect to a."""
    return _kron_grad(g, a, b, True)


def kron_grad_rhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.kron(a, b)`` with respect to b."""
    return _kron_grad(g, a, b, False)


def _kron_grad(g: Any, a: Any, b: Any, lhs: bool) -> Any:
    ndim = max(np.ndim(a), np.ndim(b))
    shape_a = (1,) * (ndim - np.ndim(a)) + np.shape(a)
    shape_b = (1,) * (ndim - np.ndim(b)) + np.shape(b)
    blocks = np.reshape(g, [n for pair in zip(shape_a, shape_b) for n in pair])  # [i0, j0, i1, j1, ...]
    if lhs:
        other = np.reshape(b, [n for m in shape_b for n in (1, m)])
        return reshape_grad(np.sum(blocks * other, axis=tuple(range(1, 2 * ndim, 2))), a)
    other = np.reshape(a, [n for m in shape_a for n in (m, 1)])
    return reshape_grad(np.sum(blocks * other, axis=tuple(range(0, 2 * ndim, 2))), b)


def einsum_grad(g: Any, i: int, subscripts: str, *operands: Any) -> Any:
    """Gradient of ``np.einsum(subscripts, *operands)`` w.r.t. operand ``i`` (None operands: absent)."""
    if not isinstance(subscripts, str):  # the sublist form: einsum(op0, sub0, op1, sub1, out)
        from .runtime_more import einsum_sublists

        subscripts, i, operands = einsum_sublists(i, subscripts, *operands)
    operands = tuple(op for op in operands if op is not None)
    terms, out, unused = _einsum_terms(subscripts, [np.ndim(op) for op in operands])
    others = [t for j, t in enumerate(terms) if j != i]
    inputs, extra, wanted = [out, *others], [], ""
    seen = set(out + "".join(others))
    dtype = np.result_type(g)
    for letter, n in zip(terms[i], np.shape(operands[i])):
        if letter in wanted:  # a repeated index: g goes on that diagonal
            fresh = unused.pop()
            inputs.append(letter + fresh)
            extra.append(np.eye(n, dtype=dtype))
            letter = fresh
        elif letter not in seen:  # summed over in this operand alone: g is constant along it
            inputs.append(letter)
            extra.append(np.ones(n, dtype=dtype))
            seen.add(letter)
        wanted += letter
    others_ops = [op for j, op in enumerate(operands) if j != i]
    grad = np.einsum(",".join(inputs) + "->" + wanted, g, *others_ops, *extra)
    return unbroadcast(grad, operands[i])


def _einsum_terms(subscripts: str, ndims: list[int]) -> tuple[list[str], str, list[str]]:
    """The input terms and output term of an einsum, '...' spelled out; and unused letters."""
    spec = subscripts.replace(" ", "")
    inputs, arrow, out = spec.partition("->")
    terms = inputs.split(",")
    if not arrow:  # implicit output: the letters used once, in order, after the broadcast axes
        letters = inputs.replace(".", "").replace(",", "")
        out = ("..." if "..." in inputs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    unused = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec]
    widths = [n - len(t) + 3 if "..." in t else 0 for t, n in zip(terms, ndims)]
    dots = "".join(unused[:max(widths, default=0)])
    del unused[:len(dots)]
    terms = [t.replace("...", dots[len(dots) - w:] if w else "") for t, w in zip(terms, widths)]
    return terms, out.replace("...", dots), unused


def choice_jvp(t: Any, items: Any, ans: Any, other: Any = None) -> Any:
    """Tangent of Python's ``max(items)`` or ``max(items, other)`` (or min) from items' tangent t."""
    if other is not None:
        return t * balanced_eq(items, ans, other)
    if isinstance(items, (list, tuple)):
        return sum(ti * s for ti, s in zip(t, choice_grad(1.0, items, ans)))
    return np.sum(t * extremum_grad(1.0, items, ans, 0, False))


def rot90_grad(g: Any, k: int = 1, axes: Any = None) -> Any:
    """Gradient of ``np.rot90(m, k, axes)``: g rotated back."""
    return np.rot90(g, -k, (0, 1) if axes is None else axes)


def pow_slope(x: Any, y: Any, n: int = 1) -> Any:
    """``y (y - 1) ... (y - n + 1) x ** (y - n)``, the n-th derivative of ``x ** y`` in x:
    0 where that coefficient is 0 (``x ** 0`` is the constant 1, also at x = 0), and NumPy's
    inf, not ZeroDivisionError, at x = 0 where the derivative is infinite."""
    coefficient = y
    for k in range(1, n):
        coefficient = coefficient * (y - k)
    return coefficient * np.power(x, np.where(coefficient == 0, 1, y - n))


def log_or_zero(x: Any, y: Any = None) -> Any:
    """``np.log(x)`` as the derivative of ``x ** y`` in y: 0 where x is 0, and 0 throughout
    when y has an integer type (an integer has no derivative, so its tangent, always zero,
    must not meet ``log`` of a negative x); a float stays a float."""
    if isinstance(y, (bool, int, np.integer)) or getattr(y, "dtype", np.dtype(float)).kind in "biu":
        return np.zeros_like(x, dtype=float) if np.ndim(x) else 0.0
    out = np.log(np.where(x == 0, 1, x))
    return float(out) if isinstance(x, (int, float)) else out


def choice_grad(g: Any, items: Any, ans: Any, other: Any = None) -> Any:
    """Gradient of Python's ``max(items)`` or ``max(items, other)`` (or min) w.r.t. items; ties share."""
    if other is not None:
        return g * balanced_eq(items, ans, other)
    if isinstance(items, (list, tuple)):
        hits = [bool(v == ans) for v in items]
        return _rebuild(items, [g * (1.0 if hit else 0.0) / sum(hits) for hit in hits])
    return extremum_grad(g, items, ans, 0, False)


# --- forward mode ------------------------------------------------------------------


def extremum_jvp(t: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Tangent of max/min: the mean of the tangent over the entries that tie for it."""
    _real_only("a maximum or minimum", x)
    x, t = _as_array(x), _as_array(t)
    ndim = np.ndim(x)
    mask = _as_dtype(x == _expand(ans, ndim, axis, keepdims), np.result_type(t, x))
    count = np.sum(mask, axis=axis, keepdims=keepdims)
    return np.sum(t * mask, axis=axis, keepdims=keepdims) / count


def invert_axes(axes: Any) -> Any:
    """The permutation that undoes ``np.transpose(x, axes)``."""
    return None if axes is None else tuple(np.argsort(axes))


def cumprod_jvp(t: Any, x: Any, axis: Any = None) -> Any:
    """Tangent of ``np.cumprod(x, axis)``, exact where x has zeros (quadratic in the axis length)."""
    if axis is None:
        x, t, axis = np.ravel(x), np.ravel(t), 0
    x, t = np.moveaxis(x, axis, -1), np.moveaxis(t, axis, -1)
    full = np.ones((np.shape(x)[-1],) * 2, dtype=bool)
    rows = np.expand_dims(x, -2)  # rows[..., i, k] = x[..., k]
    before = np.prod(np.where(np.tril(full, -1), rows, 1), axis=-1)  # x[k] for k < i
    between = np.cumprod(np.where(np.triu(full, 1), rows, 1), axis=-1)  # [i, j]: x[k], i < k <= j
    out = np.sum(np.where(np.triu(full), np.expand_dims(t * before, -1) * between, 0), axis=-2)
    return np.moveaxis(out, -1, axis)


def sort_jvp(t: Any, x: Any, axis: Any = -1) -> Any:
    """Tangent of ``np.sort(x, axis)``: t in sorted order; equal entries share their tangents."""
    _real_only("np.sort", x)
    if axis is None:
        x, t, axis = np.ravel(x), np.ravel(t), 0
    x, t = np.moveaxis(x, axis, -1), np.moveaxis(t, axis, -1)
    order = np.argsort(x, axis=-1, kind="stable")
    ordered = np.take_along_axis(x, order, axis=-1)
    moved = np.take_along_axis(np.broadcast_to(t, np.shape(x)), order, axis=-1)
    starts = np.concatenate([np.ones_like(ordered[..., :1], dtype=bool),
                             ordered[..., 1:] != ordered[..., :-1]], axis=-1)
    n = np.shape(x)[-1]
    rows = np.reshape(np.arange(np.size(x) // max(n, 1)), np.shape(x)[:-1] + (1,)) * n
    groups = np.ravel(np.cumsum(starts, axis=-1) - 1 + rows)  # tie groups, numbered across rows
    mean = np.bincount(groups, weights=np.ravel(moved))[groups] / np.bincount(groups)[groups]
    return np.moveaxis(np.reshape(mean, np.shape(moved)).astype(moved.dtype), -1, axis)


def _read_symmetric(t: Any, lower: bool) -> Any:
    """The symmetric matrix a function reading one triangle of its input sees of ``t``."""
    if lower:
        return np.tril(t) + _t(np.tril(t, -1))
    return np.triu(t) + _t(np.triu(t, 1))


def cholesky_jvp(t: Any, ans: Any, upper: bool = False) -> Any:
    """Tangent of ``np.linalg.cholesky``, from the triangle of t NumPy reads: L phi(L^-1 S L^-T)."""
    _real_only("np.linalg.cholesky", ans)
    low = _t(ans) if upper else ans
    inner = np.linalg.solve(low, _t(np.linalg.solve(low, _read_symmetric(t, not upper))))
    phi = np.tril(inner) - 0.5 * np.triu(np.tril(inner))  # the lower triangle, diagonal halved
    out = low @ phi
    return _t(out) if upper else out


def eigh_jvp(t: Any, a: Any, ans: Any, UPLO: str = "L") -> Any:
    """Tangent ``(w_dot, v_dot)`` of ``np.linalg.eigh(a, UPLO)``, from the triangle NumPy reads."""
    _real_only("np.linalg.eigh", a)
    w, v = ans
    inner = _t(v) @ _read_symmetric(t, UPLO == "L") @ v
    gaps = w[..., None, :] - w[..., :, None]
    gaps = safe_divide(np.ones_like(gaps), gaps)  # [i, j]: 1 / (w_j - w_i), 0 where they are equal
    return np.diagonal(inner, 0, -2, -1).copy(), v @ (gaps * inner)


def pinv_jvp(t: Any, a: Any, ans: Any) -> Any:
    """Tangent of ``np.linalg.pinv(a)`` (Golub and Pereyra), where a's rank does not change."""
    _real_only("np.linalg.pinv", a)
    p, t_t = ans, _t(t)
    pp, p_p = p @ _t(p), _t(p) @ p
    return -p @ t @ p + pp @ t_t - pp @ t_t @ a @ p + t_t @ p_p - p @ a @ t_t @ p_p


def qr_jvp(t: Any, a: Any, ans: Any, mode: str = "reduced") -> Any:
    """Tangent ``(q_dot, r_dot)`` of ``np.linalg.qr(a, mode)``, for the modes ``qr_grad`` takes."""
    _real_only("np.linalg.qr", a)
    rows, cols = np.shape(a)[-2:]
    if mode not in ("reduced", "complete") or rows < cols or mode == "complete" and rows != cols:
        raise S2SADError(f"s2sad differentiates np.linalg.qr with mode 'reduced' of a matrix with at "
                         f"least as many rows as columns, not mode={mode!r} of shape {np.shape(a)}")
    q, r = ans
    t_rinv = _t(np.linalg.solve(_t(r), _t(t)))  # t r^-1
    inner = _t(q) @ t_rinv
    low = np.tril(inner, -1)
    spin = low - _t(low)  # q^T q_dot: antisymmetric
    return q @ (spin - inner) + t_rinv, (inner - spin) @ r


def svd_jvp(t: Any, a: Any, ans: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Tangent of ``np.linalg.svd(a, full_matrices, compute_uv)`` (distinct singular values).

    With full_matrices and a non-square a, the added columns of u (rows of vh), which are
    not unique, get the tangent that keeps them orthogonal to the others and turns them least.
    """
    _real_only("np.linalg.svd", a)
    if not compute_uv:
        _real_svd_input(a)
        u, _, vt = np.linalg.svd(a, full_matrices=False)
        return np.sum(u * (t @ _t(vt)), axis=-2)
    u_all, s, vt_all = ans
    k = np.shape(s)[-1]
    u, vt = u_all[..., :, :k], vt_all[..., :k, :]
    v = _t(vt)
    inner = _t(u) @ t @ v  # u^T t v
    gaps = s[..., None, :] ** 2 - s[..., :, None] ** 2
    gaps = safe_divide(np.ones_like(gaps), gaps)  # [i, j]: 1 / (s_j^2 - s_i^2), 0 where equal
    right, left = inner * s[..., None, :], s[..., :, None] * inner  # inner s, s inner
    u_dot = u @ (gaps * (right + _t(right)))
    v_dot = v @ (gaps * (left + _t(left)))
    rows, cols = np.shape(a)[-2:]
    if rows > k:
        t_v = t @ v
        u_dot = u_dot + (t_v - u @ (_t(u) @ t_v)) / s[..., None, :]
    if cols > k:
        t_u = _t(t) @ u
        v_dot = v_dot + (t_u - v @ (_t(v) @ t_u)) / s[..., None, :]
    if full_matrices and rows > k:
        rest = u_all[..., :, k:]
        u_dot = np.concatenate([u_dot, -u @ (_t(u_dot) @ rest)], axis=-1)
    if full_matrices and cols > k:
        rest = _t(vt_all[..., k:, :])
        v_dot = np.concatenate([v_dot, -v @ (_t(v_dot) @ rest)], axis=-1)
    return u_dot, np.diagonal(inner, 0, -2, -1).copy(), _t(v_dot)


# --- higher order: the transposes and derivatives the helpers' own rules call ---------


def scatter_value(u: Any, index: Any, like: Any) -> Any:
    """The transpose of ``setitem_grad_value(g, index, v)`` in g: ``u`` written at ``index``
    of zeros shaped like ``like`` (where an integer index repeats, at the write that sticks)."""
    if isinstance(like, (list, tuple, dict)):
        out = zeros_grad(like)
        if isinstance(out, dict):
            return {**out, index: u}
        items = list(out)
        items[index] = u
        return _rebuild(like, items)
    out = np.zeros(np.shape(like), dtype=np.result_type(u, like))
    picked = np.broadcast_to(u, np.shape(out[index]))
    if not _is_basic_index(index):
        order = np.arange(picked.size).reshape(picked.shape)
        slot = np.full(np.shape(out), -1)
        slot[index] = order
        picked = picked * (slot[index] == order)
    out[index] = picked
    return out


def diff_embed(u: Any, x: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None,
               part: str = "a") -> Any:
    """The transpose of ``diff_grad(g, x, n, axis, prepend, append, part)`` in g: the n-th
    difference of ``u`` placed as that part, the other parts zero."""
    shape = np.shape(x)

    def edge(value: Any) -> Any:
        if value is None:
            return None
        edge_shape = list(shape)
        edge_shape[axis] = 1
        return np.shape(value) if np.ndim(value) else tuple(edge_shape)

    shapes = {"prepend": edge(prepend), "a": shape, "append": edge(append)}
    dtype = np.result_type(u, x)
    pieces = [np.broadcast_to(u, s).astype(dtype) if name == part else np.zeros(s, dtype)
              for name, s in shapes.items() if s is not None]
    return np.diff(np.concatenate(pieces, axis=axis), n, axis)


_STEP = 1e-20  # f(x + i h t).imag / h is f'(x) t, with an error of order h ** 2: none in floats


def _leaves(tree: Any) -> list[Any]:
    """The arrays and numbers of a tuple, list or dict, in order (None left out)."""
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in _leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in _leaves(v)]
    return [] if tree is None else [tree]


def _map(fun: Any, *trees: Any) -> Any:
    """``fun`` applied leaf by leaf to trees of one structure (None stays None)."""
    first = trees[0]
    if first is None:
        return None
    if isinstance(first, dict):
        return {k: _map(fun, *(t[k] for t in trees)) for k in first}
    if isinstance(first, (list, tuple)):
        return _rebuild(first, [_map(fun, *items) for items in zip(*trees)])
    return fun(*trees)


def step_jvp(fun: Any, which: int, t: Any, args: tuple[Any, ...]) -> Any:
    """The derivative of ``fun(*args)`` along ``t`` in argument ``which``, by a complex step:
    exact to rounding for a helper analytic in that argument (arithmetic, matmul, solve)."""
    if any(_kind(leaf) == "c" for leaf in (*_leaves(args), *_leaves(t)) if leaf is not None):
        raise S2SADError(f"s2sad differentiates {fun.__name__} of complex values once, not twice "
                         f"(its second derivative is taken by a complex step, which needs real values)")
    scale = max((float(np.max(np.abs(leaf))) for leaf in _leaves(t) if np.size(leaf)), default=0.0)
    scale = scale or 1.0
    moved = list(args)
    moved[which] = _map(lambda a, d: a + (1j * _STEP / scale) * (0.0 if d is None else d), args[which], t)
    _STEPPING.append(fun)
    try:
        out = fun(*moved)
    finally:
        _STEPPING.pop()
    dtype = np.result_type(*[leaf for leaf in _leaves(args[which])], *_leaves(t))

    def real(v: Any) -> Any:
        part = np.imag(v) * (scale / _STEP)
        if isinstance(v, complex):
            return float(part)
        return np.asarray(part).astype(dtype if dtype.kind == "f" else np.float64)[()]

    return _map(real, out)


#: The helpers a complex step is running (their complex arguments are no complex data).
_STEPPING: list[Any] = []


def _real_only(name: str, *values: Any) -> None:
    """Refuse complex values in a rule that differentiates real ones only: under autograd's
    convention its gradient would need conjugates it does not take (a sort, a norm, a
    factorization), so it would be silently wrong."""
    if not _STEPPING and any(_kind(v) == "c" for v in values if v is not None):
        raise S2SADError(f"a gradient reaches {name} of complex values, which s2sad differentiates "
                         f"for real values only; apply it to np.real(...), np.imag(...) or "
                         f"np.abs(...) of them")


def column_vjp(fun: Any, which: int, g: Any, args: tuple[Any, ...], linear: bool = False) -> Any:
    """The transpose of the derivative of ``fun(*args)`` in argument ``which``, applied to
    ``g``: one derivative per entry of that argument (a direct call where fun is linear in
    it, a complex step otherwise).  For the reverse mode of generated code over small inputs."""
    x = args[which]
    count = len(_leaves(x))

    def along(k: int, i: tuple[int, ...]) -> Any:
        """The unit vector at entry ``i`` of leaf ``k`` of x, zeros elsewhere."""
        seen = iter(range(count))
        return _map(lambda leaf: _unit(leaf, i if next(seen) == k else None), x)

    def dot(a: Any, b: Any) -> float:
        return float(sum(np.sum(np.real(u) * np.real(v)) for u, v in zip(_leaves(a), _leaves(b))))

    grads = []
    for k, leaf in enumerate(_leaves(x)):
        out = np.zeros(np.shape(leaf), dtype=np.result_type(leaf, 0.0))
        for i in np.ndindex(*np.shape(leaf)):
            if linear:
                moved = list(args)
                moved[which] = along(k, i)
                column = fun(*moved)
            else:
                column = step_jvp(fun, which, along(k, i), args)
            out[i] = dot(g, column)
        grads.append(out[()] if not np.ndim(leaf) else out)
    result = iter(grads)
    return _map(lambda leaf: next(result), x)


def _unit(like: Any, i: tuple[int, ...] | None) -> Any:
    """Zeros shaped like ``like`` (a float for a float), with a one at ``i`` unless it is None."""
    out = np.zeros(np.shape(like), dtype=np.result_type(like, 0.0))
    if i is not None:
        out[i] = 1.0
    return float(out) if isinstance(like, float) else out if np.ndim(like) else out[()]


def no_third_order(fun: Any) -> Any:
    """What a third derivative through ``fun`` is: refused."""
    raise S2SADError(
        f"s2sad differentiates generated gradient code once more (second order: hvp, hessian, "
        f"grad of grad), but not a third time: a third derivative reaches its helper "
        f"{getattr(fun, '__name__', fun)}; differentiate at most twice")
# --- np.r_ and np.c_ ------------------------------------------------------------------


def _entry_codes(items: Any) -> tuple[list[Any], int]:
    """The entries of ``concat[items]`` with each element of an array or number replaced by
    its number (from 0, in C order), and slices by -1s: ``concat`` places the numbers where
    it places the elements.  Also the count of numbered elements."""
    codes: list[Any] = []
    total = 0
    for item in items:
        if isinstance(item, str):
            codes.append(item)
        elif isinstance(item, slice):
            codes.append(np.full(np.size(np.r_[item]), -1))
        elif type(item) in np.ScalarType:
            codes.append(np.int64(total))
            total += 1
        else:
            size = int(np.size(item))
            codes.append(np.arange(total, total + size).reshape(np.shape(item)))
            total += size
    return codes, total


def index_concat_grad(g: Any, items: Any, concat: Any) -> Any:
    """Gradient of ``concat[items]`` (``np.r_``, ``np.c_``) with respect to the entries: each
    entry gets the elements of g where its own elements went (None for slices and directives)."""
    entries = items if isinstance(items, tuple) else (items,)  # what __getitem__ receives
    codes, total = _entry_codes(entries)
    placed = concat[tuple(codes)]
    if isinstance(placed, np.matrix):
        raise S2SADError("a gradient reaches an np.matrix built by np.r_ or np.c_ with an 'r' or "
                         "'c' directive, which s2sad does not differentiate; leave out the directive")
    placed = np.ravel(placed)
    where = np.empty(total, dtype=np.intp)
    numbered = placed >= 0
    where[placed[numbered]] = np.flatnonzero(numbered)
    flat = np.ravel(g)
    grads = []
    for item, code in zip(entries, codes):
        if isinstance(item, (str, slice)):
            grads.append(None)
        else:
            grads.append(np.reshape(flat[where[np.ravel(code)]], np.shape(item))[()])
    return tuple(grads) if isinstance(items, tuple) else grads[0]


def index_concat_jvp(t: Any, items: Any, concat: Any) -> Any:
    """Tangent of ``concat[items]``: the same concatenation of the entries' tangents ``t``
    (zeros in place of slices)."""
    if not isinstance(items, tuple):
        return concat[t]
    entries = []
    for item, tangent in zip(items, t):
        if isinstance(item, str):
            entries.append(item)
        elif isinstance(item, slice):
            entries.append(np.zeros(np.size(np.r_[item])))
        else:
            entries.append(tangent)
    return concat[tuple(entries)]


__all__ += ["index_concat_grad", "index_concat_jvp"]


# --- the bounds of np.clip -------------------------------------------------------------


def clip_min_mask(a: Any, a_min: Any, a_max: Any) -> Any:
    """Where ``np.clip(a, a_min, a_max)`` is ``a_min``: ``a`` at or below it, and ``a_min``
    below ``a_max`` (with clip_mask and clip_max_mask, every element has one source)."""
    at = np.less_equal(a, a_min)
    return at if a_max is None else np.logical_and(at, np.less(a_min, a_max))


def clip_max_mask(a: Any, a_min: Any, a_max: Any) -> Any:
    """Where ``np.clip(a, a_min, a_max)`` is ``a_max``: ``a`` or ``a_min`` at or above it."""
    at = np.greater_equal(a, a_max)
    return at if a_min is None else np.logical_or(at, np.greater_equal(a_min, a_max))


__all__ += ["clip_min_mask", "clip_max_mask"]


# --- np.reshape's order ------------------------------------------------------------------


def reshape_back(g: Any, like: Any, order: str = "C", source: Any = None) -> Any:
    """``g`` reshaped to ``like``'s shape, reading and writing elements in ``order``: the
    gradient of ``np.reshape(a, shape, order)`` (``like`` is a) and its tangent (``like`` is
    the result).  Order "A" is the order NumPy chose from the reshaped array's layout
    (``source``, by default ``like``)."""
    if order == "A":
        flags = np.asarray(like if source is None else source).flags
        order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    return np.reshape(g, np.shape(like), order=order)


__all__ += ["reshape_back"]


# --- writes into arrays ------------------------------------------------------------------


def check_float_write(x: Any, where: str) -> None:
    """Refuse ``x[i] = v``, with ``v`` carrying a gradient, when ``x`` is an array of a dtype
    that is not floating point: the write converts ``v`` (an integer truncates it), so
    passing ``v`` its gradient would be silently wrong.  ``where`` is "file:line:col"."""
    if type(x) is np.ndarray:
        if x.dtype.kind in "fcO":
            return
    elif not is_foreign(x) or np.dtype(x.dtype).kind in "fcO":
        return
    from .errors import Location, NoGradientRuleError

    filename, line, column = where.rsplit(":", 2)
    raise NoGradientRuleError(
        f"a value that carries a gradient is written into an array of dtype {x.dtype}, which "
        f"converts it, so it has no gradient; create the array with a float dtype (for example "
        f"np.zeros(n) or dtype=float), or write stop_gradient(...) of the value",
        Location(filename, int(line), int(column)))


__all__ += ["check_float_write"]


def check_number(x: Any, where: str, refusal: str) -> None:
    """``x op= v`` where x may be shared (a view, another name's object, an argument): a
    new value when x is a number, as s2sad writes it; for an array, which would change in
    place, ``refusal`` (at ``where``, "file:line:col")."""
    if isinstance(x, (int, float, complex, np.generic)):
        return
    from .errors import Location, UnsupportedSyntaxError

    filename, line, column = where.rsplit(":", 2)
    raise UnsupportedSyntaxError(refusal, Location(filename, int(line), int(column)))


__all__ += ["check_number"]
