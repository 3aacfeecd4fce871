"""numba implementations of reductions over an axis and of broadcasting (``jit=True``).

numba's ``np.sum``, ``np.max``, ``np.min`` and ``np.mean`` take no ``keepdims=`` and, for
some of them, no ``axis=``; :mod:`s2sad.jit` rewrites such calls in the code it gives numba
to calls of :data:`AXIS_REDUCTIONS`, implemented here for any number of dimensions and an
integer axis (``keepdims`` a constant: it decides the result's number of dimensions).  The
gradients of reductions (``reduce_grad``, ``mean_grad``) and of broadcasting
(``unbroadcast``) are here too: each views its array as (before, along, after) the axis.

Also the type predicates the overloads of :mod:`s2sad.jit_runtime` share.  Importing this
module registers its overloads; it imports numba.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

from . import runtime as rt

Impl = Callable[..., Any]


def is_float(t: Any) -> bool:
    return isinstance(t, types.Float)


def is_float_array(t: Any) -> bool:
    return isinstance(t, types.Array) and isinstance(t.dtype, types.Float)


def is_number(t: Any) -> bool:
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


def absent(t: Any) -> bool:
    """An optional argument left out, or passed as None."""
    return t is None or isinstance(t, (types.Omitted, types.NoneType))


def cached_overload(func: Any, **options: Any) -> Callable[[Impl], Impl]:
    """numba's ``overload``, its implementations' machine code kept on disk: typing and
    compiling them is most of a small gradient's first compile."""
    return overload(func, jit_options={"cache": True}, **options)


def not_compiled(what: str) -> TypingError:
    """The error numba's typing reports; :mod:`s2sad.jit` shows ``what`` to the user."""
    return TypingError(f"s2sad.jit: {what}")


# ---- kernels over an array viewed as (before, along, after) the axis ----------------------

@njit(cache=True, error_model="numpy")
def _normal_axis(axis: int, ndim: int) -> int:
    if axis < -ndim or axis >= ndim:
        raise ValueError("axis is out of bounds for the array (compiled by s2sad.jit)")
    return axis % ndim


@njit(cache=True, error_model="numpy")
def _around(shape: Any, axis: int) -> tuple[int, int]:
    """The numbers of entries before and after ``axis`` in an array of ``shape``."""
    before, after = 1, 1
    for i in range(axis):
        before *= shape[i]
    for i in range(axis + 1, len(shape)):
        after *= shape[i]
    return before, after


@njit(cache=True, error_model="numpy")
def _block(a: Any, lo: int, n: int) -> Any:
    """The sum of ``a[lo:lo + n]``, ``n <= 128``, as NumPy adds it (eight partial sums)."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    end = lo + n - n % 8
    for i in range(lo + 8, end, 8):  # (a range, not a while: a third faster)
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for j in range(end, lo + n):
        res += a[j]
    return res


@njit(cache=True, error_model="numpy")
def _pairwise(a: Any, n: int, starts: Any, sizes: Any, values: Any) -> Any:
    """The sum of the contiguous row ``a[:n]`` as NumPy computes it (halves summed apart down
    to blocks of 128), so that compiled sums equal NumPy's.  (A stack, not recursion: numba
    cannot load a recursive function from its cache; the caller allocates it, see _sum3.)"""
    if n <= 128:
        return _block(a, 0, n)
    starts[0], sizes[0] = 0, n
    top, held = 1, 0
    while top:
        top -= 1
        lo, size = starts[top], sizes[top]
        if size == -1:
            held -= 1
            values[held - 1] += values[held]
        elif size <= 128:
            values[held] = _block(a, lo, size)
            held += 1
        else:
            half = size // 2
            half -= half % 8
            starts[top], sizes[top] = 0, -1
            starts[top + 1], sizes[top + 1] = lo + half, size - half
            starts[top + 2], sizes[top + 2] = lo, half
            top += 3
    return values[0]


@njit(cache=True, error_model="numpy")
def _sum3(a: Any) -> Any:
    """``a.sum(axis=1)`` of a C-contiguous 3-d array."""
    before, n, after = a.shape
    out = np.zeros((before, after), a.dtype)
    if after == 1:  # rows: summed as NumPy sums them
        rows = a.reshape((before, n))
        starts, sizes = np.empty(192, np.int64), np.empty(192, np.int64)  # size -1: add two values
        values = np.empty(64, np.float64)
        for i in range(before):
            out[i, 0] = _pairwise(rows[i], n, starts, sizes, values)
        return out
    for i in range(before):
        for k in range(n):
            for j in range(after):
                out[i, j] += a[i, k, j]
    return out


@njit(cache=True, error_model="numpy")
def _extreme3(a: Any, largest: bool) -> Any:
    """``a.max(axis=1)`` (``largest``) or ``a.min(axis=1)`` of a C-contiguous 3-d array (a NaN
    wins, as in NumPy)."""
    before, n, after = a.shape
    if n == 0:
        raise ValueError("zero-size array to reduction operation maximum which has no identity"
                         if largest else "zero-size array to reduction operation minimum which has no identity")
    out = a[:, 0, :].copy()
    if after == 1:
        rows = a.reshape((before, n))
        for i in range(before):
            acc = rows[i, 0]
            for k in range(1, n):
                v = rows[i, k]
                if (v > acc if largest else v < acc) or v != v:
                    acc = v
            out[i, 0] = acc
        return out
    for i in range(before):
        for k in range(1, n):
            for j in range(after):
                v = a[i, k, j]
                if (v > out[i, j] if largest else v < out[i, j]) or v != v:
                    out[i, j] = v
    return out


@njit(cache=True, error_model="numpy")
def _max3(a: Any) -> Any:
    return _extreme3(a, True)


@njit(cache=True, error_model="numpy")
def _min3(a: Any) -> Any:
    return _extreme3(a, False)


# ---- np.sum, np.max, np.min, np.mean with axis= and keepdims= ------------------------------

def sum_axis(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.sum(x, axis, keepdims=keepdims)`` (what compiled code calls for it)."""
    return np.sum(x, axis=axis, keepdims=keepdims)


def max_axis(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.max(x, axis, keepdims=keepdims)``."""
    return np.max(x, axis=axis, keepdims=keepdims)


def min_axis(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.min(x, axis, keepdims=keepdims)``."""
    return np.min(x, axis=axis, keepdims=keepdims)


def mean_axis(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.mean(x, axis, keepdims=keepdims)``."""
    return np.mean(x, axis=axis, keepdims=keepdims)


AXIS_REDUCTIONS = {"sum": sum_axis, "max": max_axis, "min": min_axis, "mean": mean_axis}


def _constant_bool(t: Any, what: str) -> bool:
    if absent(t):
        return bool(getattr(t, "value", False))
    if isinstance(t, types.BooleanLiteral):
        return bool(t.literal_value)
    raise not_compiled(f"np.{what}(..., keepdims=) with a keepdims that is not the constant True or False")


def _reduction(what: str, kernel: Any, floats_only: bool) -> Impl:
    """The overload of ``np.<what>(x, axis, keepdims)``; ``kernel`` reduces the middle axis
    of a 3-d array (the whole array is (1, size, 1))."""
    def typer(x, axis=None, keepdims=False) -> Impl:
        ok = is_float_array(x) if floats_only else isinstance(x, types.Array) and is_number(x.dtype)
        if not ok:
            raise not_compiled(f"np.{what} over an axis of a {x}")
        keep, ndim = _constant_bool(keepdims, what), x.ndim
        if absent(axis):
            if keep:
                ones = (1,) * ndim
                return lambda x, axis=None, keepdims=False: kernel(_view3(x.ravel(), 0)).reshape(ones)
            return lambda x, axis=None, keepdims=False: kernel(_view3(x.ravel(), 0))[0, 0]
        if not isinstance(axis, types.Integer):
            raise not_compiled(f"np.{what} over an axis of type {axis} (an integer axis compiles)")
        if keep:
            def kept(x, axis=None, keepdims=False) -> Any:
                a = _normal_axis(axis, ndim)
                return kernel(_view3(x, a)).reshape(tuple_setitem(x.shape, a, 1))
            return kept
        if ndim == 1:
            return lambda x, axis=None, keepdims=False: kernel(_view3(x, _normal_axis(axis, 1)))[0, 0]

        out_ndim = ndim - 1  # (a constant, as to_fixed_tuple needs)

        def dropped(x, axis=None, keepdims=False) -> Any:
            a = _normal_axis(axis, ndim)
            shape = np.empty(out_ndim, np.int64)
            for i in range(out_ndim):
                shape[i] = x.shape[i if i < a else i + 1]
            return kernel(_view3(x, a)).reshape(to_fixed_tuple(shape, out_ndim))
        return dropped
    return typer


@njit(cache=True, error_model="numpy")
def _view3(x: Any, axis: int) -> Any:
    """``x`` as a C-contiguous (before, along, after) array around ``axis``."""
    before, after = _around(x.shape, axis)
    return np.ascontiguousarray(x).reshape((before, x.shape[axis], after))


@njit(cache=True, error_model="numpy")
def _mean3(a: Any) -> Any:
    """``a.mean(axis=1)`` of a C-contiguous 3-d array."""
    out = _sum3(a)
    out /= a.shape[1]
    return out


cached_overload(sum_axis, prefer_literal=True)(_reduction("sum", _sum3, True))
cached_overload(mean_axis, prefer_literal=True)(_reduction("mean", _mean3, True))
cached_overload(max_axis, prefer_literal=True)(_reduction("max", _max3, False))
cached_overload(min_axis, prefer_literal=True)(_reduction("min", _min3, False))


# ---- their gradients ----------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def _spread(g: Any, shape: Any, axis: int) -> Any:
    """The (reduced) ``g`` repeated along ``axis`` of an array of ``shape``."""
    before, after = _around(shape, axis)
    flat = np.ascontiguousarray(g).ravel()
    if flat.size != before * after:
        raise ValueError("the gradient of a reduction has the wrong size (compiled by s2sad.jit)")
    n = shape[axis]
    if after == 1:  # (two indices: a loop of one is not free)
        rows = np.empty((before, n), flat.dtype)
        for i in range(before):
            v = flat[i]
            for k in range(n):
                rows[i, k] = v
        return rows.reshape(shape)
    out = np.empty((before, n, after), flat.dtype)
    for i in range(before):
        for k in range(n):
            for j in range(after):
                out[i, k, j] = flat[i * after + j]
    return out.reshape(shape)


@cached_overload(rt.reduce_grad)
def _reduce_grad(g, x, axis=None, keepdims=False) -> Impl:
    if is_number(x) and absent(axis):
        return lambda g, x, axis=None, keepdims=False: g
    if not is_float_array(x):
        raise not_compiled(f"the gradient of a sum over a value of type {x}")
    if is_number(g) and (absent(axis) or x.ndim == 1):
        return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g, x.dtype)
    if absent(axis) and isinstance(g, types.Array) and g.ndim in (0, x.ndim):
        return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g.ravel()[0], x.dtype)
    if isinstance(axis, types.Integer) and isinstance(g, types.Array):
        def impl(g, x, axis=None, keepdims=False) -> Any:
            return _spread(g.astype(x.dtype), x.shape, _normal_axis(axis, x.ndim))
        return impl
    raise not_compiled(f"the gradient of a sum over axis of type {axis} of a {x.ndim}-d array")


@cached_overload(rt.mean_grad)
def _mean_grad(g, x, axis=None, keepdims=False) -> Impl:
    if is_float_array(x) and absent(axis):
        return lambda g, x, axis=None, keepdims=False: rt.reduce_grad(g / x.size, x)
    if is_float_array(x) and isinstance(axis, types.Integer):
        def impl(g, x, axis=None, keepdims=False) -> Any:
            return rt.reduce_grad(g / x.shape[_normal_axis(axis, x.ndim)], x, axis, keepdims)
        return impl
    raise not_compiled(f"the gradient of a mean over a value of type {x}")


@njit(cache=True, error_model="numpy")
def _sum_to(g: Any, target: Any) -> Any:
    """``g`` summed over the axes along which an array of shape ``target`` was broadcast to
    g's shape (C-contiguous)."""
    lead = g.ndim - len(target)
    shape = np.empty(len(target), np.int64)
    count, leading = 1, 1
    for d in range(lead):
        leading *= g.shape[d]
    for d in range(len(target)):
        shape[d] = g.shape[lead + d]
        count *= shape[d]
    if lead:
        flat = _sum3(np.ascontiguousarray(g).reshape((1, leading, count))).ravel()
    else:
        flat = np.ascontiguousarray(g).ravel()
    for d in range(len(target)):
        if target[d] == 1 and shape[d] != 1:
            before, after = 1, 1
            for i in range(d):
                before *= shape[i]
            for i in range(d + 1, len(target)):
                after *= shape[i]
            flat = _sum3(flat.reshape((before, shape[d], after))).ravel()
            shape[d] = 1
        elif target[d] != shape[d]:
            raise ValueError("a gradient does not broadcast to its argument's shape (compiled by s2sad.jit)")
    return flat.reshape(target)


@cached_overload(rt.unbroadcast)
def _unbroadcast(g, x) -> Impl:
    if is_number(x):
        if is_number(g):
            return lambda g, x: g
        if is_float_array(g):
            return lambda g, x: g.sum()
    if is_float_array(x) and is_float_array(g) and g.ndim >= x.ndim:
        if g.ndim == x.ndim:
            def same(g, x) -> Any:
                if g.shape == x.shape:
                    return np.ascontiguousarray(g)
                return _sum_to(g, x.shape)
            return same
        return lambda g, x: _sum_to(g, x.shape)
    if is_float_array(x) and x.ndim == 0 and is_number(g):
        return lambda g, x: np.full((), g)
    raise not_compiled(f"unbroadcasting a gradient of type {g} to an argument of type {x}")


# ---- stand-ins ------------------------------------------------------------------------------

def one(x: Any) -> Any:
    """A number of x's type (an entry of x's dtype, for an array): what a ufunc is applied
    to, to learn the dtype of its result."""
    return np.ones((), np.result_type(x))[()]


def blank(example: Any, a: Any, b: Any = None) -> Any:
    """A stand-in for a ufunc of ``a`` (and ``b``) whose result is read only for its shape
    and dtype: ``example`` (of the result's type) broadcast to the operands' shape, a view
    of one number, so nothing is computed or filled."""
    return np.broadcast_to(example, np.broadcast_shapes(np.shape(a), np.shape(b)))


@cached_overload(one)
def _one(x) -> Impl:
    if is_number(x):
        return lambda x: x
    if isinstance(x, types.Array):
        return lambda x: np.ones(1, x.dtype)[0]
    raise not_compiled(f"a stand-in for a ufunc of a {x}")


@cached_overload(blank)
def _blank(example, a, b=None) -> Impl:
    if is_number(a) and (absent(b) or is_number(b)):
        return lambda example, a, b=None: example
    if absent(b):
        return lambda example, a, b=None: np.broadcast_to(example, a.shape)
    if is_number(b):
        return lambda example, a, b=None: np.broadcast_to(example, a.shape)
    if is_number(a):
        return lambda example, a, b=None: np.broadcast_to(example, b.shape)
    return lambda example, a, b=None: np.broadcast_to(example, np.broadcast_shapes(a.shape, b.shape))
