"""numba implementations of the runtime helpers that generated code calls (``jit=True``).

Each helper of :mod:`s2sad.runtime` decides at run time, from its arguments' Python types,
what to do.  Under numba the types are known when a function is compiled, so each helper
here is a numba ``overload`` of the runtime function itself: the decision is made once per
signature, and what remains is plain arithmetic (often nothing: ``stand_in``, ``check_wrt``
and ``grad_like`` of a float64 array are identities).  A helper, or a combination of types,
with no implementation here fails numba's typing; :mod:`s2sad.jit` reports that as the
construct of the user's line that cannot be compiled.

Importing this module registers the overloads (and :mod:`s2sad.jit_arrays`', for reductions
over an axis and broadcasting); it imports numba.  (numba requires an
overload and its implementations to have the same parameters, annotations included: they
have none.)
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np import numpy_support

from . import runtime as rt
from .errors import NonDifferentiableInputError, NonScalarOutputError
from .runtime.elementwise import SINC_SERIES_BELOW, SINC_TERMS, sinc_series_coefficient
from .jit_arrays import Impl, cached_overload, is_float, is_float_array, is_number, not_compiled


# ---- checks on the arguments and the output ---------------------------------------------

@cached_overload(rt.check_wrt)
def _check_wrt(x, name) -> Impl:
    if is_float(x) or is_float_array(x):
        return lambda x, name: None
    if is_number(x) or isinstance(x, types.Array) and is_number(x.dtype):
        message = (f"cannot differentiate with respect to an argument of numba type {x}; pass a "
                   f"float or a float array (for example float(...) or .astype(float))")

        def refuse(x, name) -> None:
            raise NonDifferentiableInputError(message)
        return refuse
    raise not_compiled(f"an argument of type {x} to differentiate with respect to")


@cached_overload(rt.check_sequence)
def _check_sequence(items) -> Impl:
    if isinstance(items, (types.Array, types.List, types.BaseTuple)):
        return lambda items: None
    raise not_compiled(f"a loop over a {items}")


@cached_overload(rt.check_stored_array)
def _check_stored_array(container, value, message, where) -> Impl:
    if isinstance(container, types.Array) or not isinstance(value, types.Array):
        return lambda container, value, message, where: None  # (an array's item is a copy)
    raise not_compiled(f"an array stored into a {container}")


@cached_overload(rt.check_shared_item)
def _check_shared_item(container, index, message, where, elsewhere=True) -> Impl:
    if isinstance(container, types.Array):
        return lambda container, index, message, where, elsewhere=True: None  # (an array's item is a copy)
    raise not_compiled(f"an item of a {container} changed in place")


@cached_overload(rt.check_slice_length)
def _check_slice_length(x, index, v, message, where) -> Impl:
    if isinstance(x, types.Array):
        return lambda x, index, v, message, where: None  # (an array's slice assignment keeps its length)
    raise not_compiled(f"a slice of a {x} assigned")


@cached_overload(rt.seed)
def _seed(ans) -> Impl:
    if is_float(ans):
        return lambda ans: 1.0
    if is_float_array(ans):
        def one(ans) -> Any:
            if ans.size != 1:
                raise NonScalarOutputError("the differentiated function must return a scalar; "
                                           "reduce the array first (for example with .sum())")
            return np.ones_like(ans)
        return one
    raise not_compiled(f"an output of type {ans}")


@cached_overload(rt.seed_for)
def _seed_for(*reduced) -> Impl:
    if any(isinstance(t, types.Complex) or isinstance(t, types.Array) and isinstance(t.dtype, types.Complex)
           for t in _star(reduced)):
        raise not_compiled("a complex output")
    return lambda *reduced: 1.0


def _star(items: tuple[Any, ...]) -> tuple[Any, ...]:
    """The types of an overload's ``*args`` (numba passes them one by one, or as one tuple)."""
    if len(items) == 1 and isinstance(items[0], types.StarArgTuple):
        return tuple(items[0].types)
    return items


# ---- identities once the types are known ----------------------------------------------

@cached_overload(rt.stop_gradient)
def _stop_gradient(x) -> Impl:
    return lambda x: x


@cached_overload(rt.stand_in)
def _stand_in(x) -> Impl:
    return lambda x: x


@cached_overload(rt.own_grad)
def _own_grad(g) -> Impl:
    if isinstance(g, types.Array) and not g.mutable:
        return lambda g: g.copy()
    return lambda g: g


def square(x: Any) -> Any:
    """``x ** 2`` (what compiled code calls for it)."""
    return x ** 2


@cached_overload(square)
def _square(x) -> Impl:
    dtype = x.dtype if isinstance(x, types.Array) else x
    if isinstance(dtype, types.Boolean):
        return lambda x: x ** 2  # (True * True is True for NumPy's booleans, True ** 2 is 1)
    if is_number(dtype):
        return lambda x: x * x
    raise not_compiled(f"x ** 2 for x a {x}")


def power(x: Any, y: Any) -> Any:
    """``x ** y`` for an exponent that is not a non-negative integer literal (what compiled
    code calls for it)."""
    return x ** y


def _integer(t: Any) -> bool:
    return isinstance(t.dtype if isinstance(t, types.Array) else t, types.Integer)  # (True ** -1 is 1)


@cached_overload(power)
def _power(x, y) -> Impl:
    if not (_integer(x) and _integer(y)):
        return lambda x, y: x ** y
    if not isinstance(x, types.Array) and not isinstance(y, types.Array):
        # Python: an int to a negative int power is a float (numba's integer power gives 0);
        # one float type, whatever the exponent's sign (the same value: a float to an int power)
        return lambda x, y: float(x) ** y

    def integers(x, y) -> Any:  # NumPy refuses a negative power of integers (numba's gives 0)
        if np.any(np.asarray(y) < 0):
            raise ValueError("Integers to negative integer powers are not allowed.")
        return x ** y
    return integers


@cached_overload(rt.mul_into)
def _mul_into(g, dead) -> Impl:
    if (is_float_array(dead) and dead.mutable and dead.layout == "C" and isinstance(g, types.Array)
            and g.dtype == dead.dtype and g.ndim == dead.ndim and g.layout == "C"):
        def into(g, dead) -> Any:  # as in NumPy: into dead's buffer, when it fits
            if g.shape == dead.shape and not _overlap(g, dead):
                np.multiply(g, dead, dead)
                return dead
            return g * dead
        return into
    return lambda g, dead: g * dead


@njit(cache=True)
def _overlap(a: Any, b: Any) -> bool:
    """Whether the buffers of two C-contiguous arrays overlap."""
    start_a, start_b = a.ctypes.data, b.ctypes.data
    return start_a < start_b + b.nbytes and start_b < start_a + a.nbytes


@cached_overload(rt.add_grads)
def _add_grads(a, b) -> Impl:
    if (is_number(a) or isinstance(a, types.Array)) and (is_number(b) or isinstance(b, types.Array)):
        return lambda a, b: a + b
    raise not_compiled(f"adding gradients of types {a} and {b}")


@cached_overload(rt.zeros_grad)
def _zeros_grad(x, seed=None) -> Impl:  # seed: the array library, always NumPy's here
    if is_float(x):
        return lambda x, seed=None: 0.0
    if is_float_array(x):
        return lambda x, seed=None: np.zeros_like(x)
    raise not_compiled(f"a zero gradient of type {x}")


@cached_overload(rt.pow_slope)
def _pow_slope(x, y, n=1) -> Impl:
    if (is_float(x) or is_float_array(x)) and is_number(y):
        def pow_slope(x, y, n=1):
            coefficient = y
            for k in range(1, n):
                coefficient = coefficient * (y - k)
            if coefficient == 0:
                return x * 0.0
            return coefficient * np.power(x, y - n)
        return pow_slope
    raise not_compiled(f"the slope of a power of types {x} and {y}")


def _real64(*ts: Any) -> bool:
    """Whether each type is a real number, or an array of float64 (what NumPy's result keeps)."""
    return all(is_number(t) or (isinstance(t, types.Array) and t.dtype == types.float64) for t in ts)


@cached_overload(rt.safe_divide)
def _safe_divide(x, y) -> Impl:
    if _real64(x, y) and is_number(y):
        if isinstance(x, types.Array):
            return lambda x, y: np.zeros_like(x) if y == 0 else x / y
        return lambda x, y: 0.0 if y == 0 else x / y
    if _real64(x, y):
        def safe_divide(x, y):
            zero = y == 0
            return np.where(zero, 0.0, x) / np.where(zero, 1.0, y)
        return safe_divide
    raise not_compiled(f"a division by what may be 0 of types {x} and {y}")


@cached_overload(rt.sinc_slope)
def _sinc_slope(x, n=1) -> Impl:
    if not _real64(x):
        raise not_compiled(f"the slope of np.sinc of type {x}")
    below, terms = SINC_SERIES_BELOW, SINC_TERMS
    # the series' coefficients of the first derivatives (grad of grad... compiles a few)
    table = np.array([[sinc_series_coefficient(k, n) for k in range((n + 1) // 2, (n + 1) // 2 + terms)]
                      for n in range(8)])

    def sinc_slope(x, n=1):
        near = np.abs(x) < below
        small, large = np.where(near, x, below), np.where(near, 1.0, x)
        series = small * 0.0
        for j in range(terms):
            series = series + table[n, j] * small ** (2 * ((n + 1) // 2 + j) - n)
        slope = np.sinc(large)
        for m in range(1, n + 1):
            slope = (np.pi ** (m - 1) * np.sin(np.pi * large + m * np.pi / 2) - m * slope) / large
        return np.where(near, series, slope)
    if is_float_array(x):
        return sinc_slope
    of_array = njit(sinc_slope)
    return lambda x, n=1: of_array(np.array([x]), n)[0]


@cached_overload(rt.real_like)
def _real_like(ct, x) -> Impl:
    if _real64(x):  # a real x's gradient or tangent is real (np.sign's rule: 0 there)
        return lambda ct, x: np.real(ct)
    raise not_compiled(f"the gradient of a value of type {x} that may be complex")


@cached_overload(rt.balanced_eq)
def _balanced_eq(x, ans, y) -> Impl:
    if _real64(x, ans, y):
        return lambda x, ans, y: (x == ans) * 1.0 / ((x == y) + 1.0)
    raise not_compiled(f"the slope of a maximum or minimum of types {x} and {y}")


@cached_overload(rt.grad_like)
def _grad_like(g, x) -> Impl:
    if is_float(x) and is_number(g):
        return lambda g, x: float(g)
    if is_float(x) and isinstance(g, types.Array) and g.ndim == 0:
        return lambda g, x: float(g[()])
    if is_float_array(x) and isinstance(g, types.Array) and g.ndim == x.ndim:
        if g.dtype == x.dtype:
            if g.mutable:
                return lambda g, x: g
            return lambda g, x: g.copy()
        return lambda g, x: g.astype(x.dtype)
    raise not_compiled(f"a gradient of type {g} for an argument of type {x}")


@overload(rt.distinct)  # (its implementation is made by exec: no file for numba's cache)
def _distinct(*grads) -> Impl:
    items = _star(grads)
    names = [f"g{i}" for i in range(len(items))]
    lines = ["def impl(*grads):", f"    {', '.join(names)}{',' if len(names) == 1 else ''} = grads"]
    for i, t in enumerate(items):  # an array that is an earlier one is copied
        for j in range(i):
            if isinstance(t, types.Array) and items[j] == t:
                lines.append(f"    if _same(g{i}, g{j}):\n        g{i} = g{i}.copy()")
    lines.append(f"    return ({', '.join(names)},)")
    namespace: dict[str, Any] = {"_same": _same}
    exec("\n".join(lines), namespace)  # noqa: S102 - one line per argument, made above
    return namespace["impl"]


def _same(a, b) -> bool:
    return a is b  # (compiled: the overload below compares the buffers)


@cached_overload(_same)
def _same_impl(a, b) -> Impl:
    if a == b:
        return lambda a, b: a.ctypes.data == b.ctypes.data and a.size > 0
    return lambda a, b: False


# ---- products ----------------------------------------------------------------------------
# Matrix-vector products and outer products are loops: numba's own (BLAS) implementations
# take seconds to compile, and at the sizes of loop bodies a call costs more than the loop.
# Matrix-matrix products of more than _SMALL multiply-adds call BLAS through np.dot.

_SMALL = 4096


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` (what compiled code calls for the operator)."""
    return a @ b


@njit(cache=True)
def _mv(a: Any, x: Any) -> Any:
    if a.shape[1] != x.shape[0]:
        raise ValueError("matmul: mismatch in its core dimension (compiled by s2sad.jit)")
    out = np.empty(a.shape[0], a.dtype)
    for i in range(a.shape[0]):
        acc = 0.0
        for j in range(a.shape[1]):
            acc += a[i, j] * x[j]
        out[i] = acc
    return out


@njit(cache=True)
def _vm(x: Any, a: Any) -> Any:
    if a.shape[0] != x.shape[0]:
        raise ValueError("matmul: mismatch in its core dimension (compiled by s2sad.jit)")
    out = np.zeros(a.shape[1], a.dtype)
    for i in range(a.shape[0]):
        xi = x[i]
        for j in range(a.shape[1]):
            out[j] += xi * a[i, j]
    return out


@njit(cache=True)
def _vv(x: Any, y: Any) -> Any:
    if x.shape[0] != y.shape[0]:
        raise ValueError("matmul: mismatch in its core dimension (compiled by s2sad.jit)")
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i] * y[i]
    return acc


@njit(cache=True)
def _outer(x: Any, y: Any) -> Any:
    out = np.empty((x.shape[0], y.shape[0]), x.dtype)
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            out[i, j] = x[i] * y[j]
    return out


@njit(cache=True)
def _mm(a: Any, b: Any) -> Any:
    if a.shape[1] != b.shape[0]:
        raise ValueError("matmul: mismatch in its core dimension (compiled by s2sad.jit)")
    if a.shape[0] * a.shape[1] * b.shape[1] > _SMALL:
        return np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))
    out = np.zeros((a.shape[0], b.shape[1]), a.dtype)
    for i in range(a.shape[0]):
        for k in range(a.shape[1]):
            aik = a[i, k]
            for j in range(b.shape[1]):
                out[i, j] += aik * b[k, j]
    return out


def _products(a: Any, b: Any) -> bool:
    return is_float_array(a) and is_float_array(b) and a.dtype == b.dtype


@cached_overload(matmul)
def _matmul(a, b) -> Impl:
    if _products(a, b):
        if a.ndim == 2 and b.ndim == 1:
            return lambda a, b: _mv(a, b)
        if a.ndim == 1 and b.ndim == 2:
            return lambda a, b: _vm(a, b)
        if a.ndim == 1 and b.ndim == 1:
            return lambda a, b: _vv(a, b)
        if a.ndim == 2 and b.ndim == 2:
            return lambda a, b: _mm(a, b)
    raise not_compiled(f"a @ b for a {a} and b {b}")


@cached_overload(rt.matmul_grad_lhs)
def _matmul_grad_lhs(g, a, b) -> Impl:
    if _products(a, b) and a.ndim == 1 and b.ndim == 1 and is_number(g):  # a dot product
        return lambda g, a, b: g * b
    if _products(a, b) and is_float_array(g):
        if a.ndim == 2 and b.ndim == 1 and g.ndim == 1:
            return lambda g, a, b: _outer(g, b)
        if a.ndim == 2 and b.ndim == 2 and g.ndim == 2:
            return lambda g, a, b: _mm(g, b.T)
        if a.ndim == 1 and b.ndim == 2 and g.ndim == 1:
            return lambda g, a, b: _mv(b, g)
        if a.ndim == 1 and b.ndim == 1:
            return lambda g, a, b: g * b
    raise not_compiled(f"the gradient of a @ b for a {a} and b {b}")


@cached_overload(rt.matmul_grad_rhs)
def _matmul_grad_rhs(g, a, b) -> Impl:
    if _products(a, b) and a.ndim == 1 and b.ndim == 1 and is_number(g):
        return lambda g, a, b: g * a
    if _products(a, b) and is_float_array(g):
        if a.ndim == 2 and b.ndim == 1 and g.ndim == 1:
            return lambda g, a, b: _vm(g, a)
        if a.ndim == 2 and b.ndim == 2 and g.ndim == 2:
            return lambda g, a, b: _mm(a.T, g)
        if a.ndim == 1 and b.ndim == 2 and g.ndim == 1:
            return lambda g, a, b: _outer(a, g)
        if a.ndim == 1 and b.ndim == 1:
            return lambda g, a, b: g * a
    raise not_compiled(f"the gradient of a @ b for a {a} and b {b}")


@cached_overload(rt.dot_grad_lhs)
def _dot_grad_lhs(g, a, b) -> Impl:
    if _products(a, b) and a.ndim <= 2 and b.ndim <= 2:  # np.dot is a @ b for these ranks
        return lambda g, a, b: rt.matmul_grad_lhs(g, a, b)
    raise not_compiled(f"the gradient of np.dot(a, b) for a {a} and b {b}")


@cached_overload(rt.dot_grad_rhs)
def _dot_grad_rhs(g, a, b) -> Impl:
    if _products(a, b) and a.ndim <= 2 and b.ndim <= 2:
        return lambda g, a, b: rt.matmul_grad_rhs(g, a, b)
    raise not_compiled(f"the gradient of np.dot(a, b) for a {a} and b {b}")


@cached_overload(rt.attribute_grad, prefer_literal=True)
def _attribute_grad(g, x, name, where) -> Impl:
    """The gradient of ``x.T`` (or ``.real``, ``.imag``) of a real array or number x."""
    attribute = name.literal_value if isinstance(name, types.StringLiteral) else None
    if is_float_array(x) and attribute == "T":
        return lambda g, x, name, where: np.transpose(g)
    if (is_float(x) or is_float_array(x)) and attribute == "real":
        return lambda g, x, name, where: g
    if (is_float(x) or is_float_array(x)) and attribute == "imag":
        return lambda g, x, name, where: g * 0.0
    raise not_compiled(f"the gradient of .{attribute} of a {x}")


# ---- indexing ----------------------------------------------------------------------------

def _basic_index(index: Any) -> bool:
    """An index that selects each entry at most once: integers, slices and None (an integer array
    may repeat an entry, whose gradients must then add up: not compiled)."""
    items = index.types if isinstance(index, types.BaseTuple) else (index,)
    return all(isinstance(t, (types.Integer, types.SliceType, types.NoneType)) for t in items)


@cached_overload(rt.getitem_grad)
def _getitem_grad(g, x, index) -> Impl:
    if is_float_array(x) and _basic_index(index):
        def impl(g, x, index) -> Any:
            out = np.zeros_like(x)
            out[index] = g
            return out
        return impl
    raise not_compiled(f"the gradient of indexing a {x} with {index}")


@cached_overload(rt.added_at)
def _added_at(acc, x, index, g) -> Impl:
    if is_float_array(acc) and is_float_array(x) and acc.dtype == x.dtype == types.float64 and _basic_index(index):
        def impl(acc, x, index, g) -> Any:
            out = acc + np.zeros_like(x)  # (acc unchanged; the dtype add_grads gives)
            out[index] += g
            return out
        return impl
    raise not_compiled(f"adding a gradient at {index} to a {acc}")


@cached_overload(rt.add_at)
def _add_at(acc, index, g) -> Impl:
    if is_float_array(acc) and _basic_index(index):
        def impl(acc, index, g) -> Any:
            acc[index] += g
            return acc
        return impl
    raise not_compiled(f"accumulating a gradient into a {acc} at {index}")


# ---- the tape of a loop with a known trip count (s2sad.jit_tape) -------------------------

def column(value: Any, n: int) -> Any:
    """Room for ``n`` values like ``value``, one per iteration (compiled: an array for arrays
    and numbers, see the overload)."""
    return [value] * n


def put(col: Any, k: int, value: Any) -> None:
    """``value`` as entry ``k`` of ``col``."""
    col[k] = value


def get(col: Any, k: int) -> Any:
    """Entry ``k`` of ``col``."""
    return col[k]


def _is_column_array(t: Any) -> bool:
    return isinstance(t, types.Array) and t.ndim > 0 and is_number(t.dtype)


@cached_overload(column)
def _column(value, n) -> Impl:
    if _is_column_array(value):
        def arrays(value, n) -> Any:
            spill = [np.ascontiguousarray(value)]  # where entries go if the shape changes
            spill.pop()
            return np.empty((n,) + value.shape, value.dtype), spill
        return arrays
    if is_number(value):
        dtype = numpy_support.as_dtype(value)
        return lambda value, n: np.empty(n, dtype)
    return lambda value, n: [value] * n


@cached_overload(put)
def _put(col, k, value) -> Impl:
    if _is_column_array(value):
        def arrays(col, k, value) -> None:
            rows, spill = col
            if not spill and value.shape == rows.shape[1:]:
                rows[k] = value
                return
            if not spill:
                for i in range(k):
                    spill.append(rows[i])
            spill.append(np.ascontiguousarray(value))
        return arrays

    def one(col, k, value) -> None:
        col[k] = value
    return one


@cached_overload(get)
def _get(col, k) -> Impl:
    if isinstance(col, types.BaseTuple):
        def arrays(col, k) -> Any:
            rows, spill = col
            if spill:
                return spill[k]
            return rows[k]
        return arrays
    return lambda col, k: col[k]
