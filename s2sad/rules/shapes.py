"""What a primitive's result is, from what its operands are: shape, dtype and Python type,
by NumPy's own rules, for code specialised to one call's argument types (passes/shapes.py).

A shape function takes the operands' :class:`Known` values (None where an operand is not
known) and the literal keyword values, and returns the result's ``Known`` or None (not
known: the generic code is kept).  This module is the library of them; a gradient rule
declares its function's (``defvjp(..., shape=...)``), and ``REGISTRY.defshape`` that of a
function without a rule (a comparison, say).  A function with neither has an unknown result.
It also says which results are new arrays and which are views of an operand, for what
specialised code may update in place.
"""
from __future__ import annotations

import functools
import operator
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

import numpy as np


class FloatScalar(float):
    """The type of a scalar that is a Python float on some paths and a NumPy float64 on
    others (``total = 0.0``, then ``total = total + np.sum(x)`` in a loop): NumPy computes
    with the two alike except against arrays of a narrower dtype."""


@dataclass(frozen=True)
class Known:
    """A value's shape, dtype and Python type (``np.ndarray``, ``float``, ``int``, or a NumPy
    scalar type), the same wherever the value is read; of a Python int, or a tuple of them
    (``x.shape``: kind ``tuple``, shape its length), also its ``value`` where every path gives
    the same one (None where not known).  An array's dtype (``x.dtype``) is of kind ``np.dtype``."""

    shape: tuple[int, ...]
    dtype: np.dtype
    kind: type
    value: int | tuple[int, ...] | None = None

    @property
    def array(self) -> bool:
        return self.kind is np.ndarray

    @property
    def int_value(self) -> int | None:
        """The value of a Python int, where known."""
        return self.value if self.kind is int and isinstance(self.value, int) else None

    @property
    def ints(self) -> tuple[int, ...] | None:
        """The values of a tuple of ints, where known."""
        return self.value if self.kind is tuple and isinstance(self.value, tuple) else None

    @property
    def python(self) -> bool:
        return self.kind in (float, int)

    @property
    def real(self) -> bool:
        """A real floating-point value."""
        return self.dtype.kind == "f"

    @property
    def weak_or_strong(self) -> bool:
        """A float64 scalar that is a Python float (weak) on some paths only."""
        return self.kind is FloatScalar

    def probe(self) -> Any:
        """A value of this dtype and Python type, for NumPy to compute a result's dtype."""
        if self.weak_or_strong:
            return np.float64(1)
        if self.python:
            return self.kind(1)
        return np.ones((), self.dtype) if self.array else self.dtype.type(1)


_SCALARS: dict[Any, Any] = {float: np.float64, int: np.int64, np.float64: np.float64,
                            np.float32: np.float32, np.int64: np.int64}


@dataclass(frozen=True)
class KnownTree:
    """A dict (of str keys), list or tuple of values each known (an array, a number, or such a
    container), as a call's signature says it: what is known of each item, in order."""

    kind: type  # dict, list or tuple
    keys: tuple[str, ...] | None  # a dict's keys, in order (None for a list or tuple)
    items: tuple[Known | KnownTree, ...]

    def item(self, key: Any) -> Known | KnownTree | None:
        """What is known of ``self[key]`` (a constant key or index), None if not known."""
        if self.keys is not None:
            return self.items[self.keys.index(key)] if type(key) is str and key in self.keys else None
        return self.items[key] if type(key) is int and -len(self.items) <= key < len(self.items) else None


TREE_KINDS = (dict, list, tuple)


def known_of(item: Any) -> Known | KnownTree | None:
    """What a signature item (``(shape, dtype)`` of an array, ``(kind, keys, items)`` of a
    dict, list or tuple of such values, or the type of anything else) says of a value:
    arrays of numbers, floats, ints, NumPy scalars, containers of them; None for anything
    else (other containers, other libraries' arrays, bools)."""
    if isinstance(item, tuple) and len(item) == 3:
        items = [known_of(i) for i in item[2]]
        known = [i for i in items if i is not None]
        return KnownTree(item[0], item[1], tuple(known)) if len(known) == len(items) else None
    if isinstance(item, tuple):
        shape, dtype = item
        return Known(shape, dtype, np.ndarray) if dtype.kind in "iuf" and dtype.isnative else None
    if item is np.random.Generator:  # (what its samplers make: rules/array_shapes.py)
        return Known((), np.dtype(object), item)
    return Known((), np.dtype(_SCALARS[item]), item) if item in _SCALARS else None


def signature_item(known: Known | KnownTree | None) -> Any:
    """The signature item that :func:`known_of` reads as ``known`` (None for None)."""
    if isinstance(known, KnownTree):
        return known.kind, known.keys, tuple(signature_item(i) for i in known.items)
    if known is None:
        return None
    return (known.shape, known.dtype) if known.array else known.kind


def of_value(x: Any) -> Known | None:
    """What is known of a value (as of an argument; None for a container)."""
    known = known_of((x.shape, x.dtype) if type(x) is np.ndarray else type(x))
    return known if isinstance(known, Known) else None


#: The key of a jvp's tangent in :func:`known_arguments` (the parameter after the function's own).
TANGENT = "<tangent>"


def known_arguments(params: tuple[str, ...], signature: tuple[Any, ...]) -> dict[str, Known | KnownTree | None]:
    """What a call signature says of each parameter (and of a jvp's tangent, passed after
    them, under ``TANGENT``); None where it assumes nothing."""
    known = {name: known_of(item) for name, item in zip(params, signature)}
    if len(signature) == len(params) + 1:
        known[TANGENT] = known_of(signature[-1])
    return known


Operands = list[Optional[Known]]
ShapeFunction = Callable[[Operands, dict[str, Any]], Optional[Known]]


def result(fun: Callable[..., Any], operands: Operands, shape: tuple[int, ...],
           **kwargs: Any) -> Known | None:
    """The result of ``fun`` on operands of these kinds, taking ``shape``: its dtype and type
    computed by NumPy on probe values of the operands' dtypes (weak Python scalars included)."""
    if any(o is None or o.kind in (tuple, np.dtype, np.random.Generator) for o in operands):
        return None
    if any(o.weak_or_strong for o in operands if o is not None):
        # the result of either scalar: known where they agree, a FloatScalar where they differ
        # only as a float and a float64 do
        both = [result(fun, [_as(o, kind) for o in operands], shape, **kwargs) for kind in (float, np.float64)]
        if both[0] == both[1] or None in both:
            return both[0] if both[0] == both[1] else None
        joined = join(both[0], both[1])
        return joined if isinstance(joined, Known) else None
    probes = tuple((o.dtype, o.kind) for o in operands if o is not None)
    try:
        value = _probed(fun, probes, tuple(kwargs.items()))
    except TypeError:  # an unhashable keyword value (a list): probed each time
        value = _probe(fun, probes, tuple(kwargs.items()))
    if value is _REFUSED:
        return None
    kind = type(value)
    if kind is np.ndarray:
        kind = np.ndarray if shape else np.dtype(value.dtype).type
    elif shape:
        kind = np.ndarray
    if kind not in (np.ndarray, float, int) and not issubclass(kind, np.generic):
        return None
    return Known(shape, np.dtype(getattr(value, "dtype", None) or np.result_type(value)), kind)


_REFUSED = object()


def _probe(fun: Callable[..., Any], probes: tuple[tuple[np.dtype, type], ...],
           kwargs: tuple[tuple[str, Any], ...]) -> Any:
    """``fun`` applied to probe values of these dtypes and types; _REFUSED if it raises."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fun(*[Known((), dtype, kind).probe() for dtype, kind in probes], **dict(kwargs))
    except Exception:  # noqa: BLE001 - an operation NumPy refuses: the generic code reports it
        return _REFUSED


# (the result's dtype and type depend on the operands' only: each primitive of a function
# is probed once per signature, not once per statement)
_probed = functools.lru_cache(maxsize=1024)(_probe)


def _as(o: Known | None, kind: type) -> Known | None:
    return Known(o.shape, o.dtype, kind) if o is not None and o.weak_or_strong else o


def join(a: Known | KnownTree | None, b: Known | KnownTree | None) -> Known | KnownTree | None:
    """What is known of a value that is ``a`` on some paths and ``b`` on others."""
    if a == b:
        return a
    if isinstance(a, KnownTree) or isinstance(b, KnownTree):
        return None
    if a is not None and b is not None and a.value != b.value:
        return join(replace(a, value=None), replace(b, value=None))
    scalars = (float, np.float64, FloatScalar)
    if a is not None and b is not None and a.shape == b.shape == () and a.dtype == b.dtype == np.float64 \
            and a.kind in scalars and b.kind in scalars:
        return Known((), np.dtype(np.float64), FloatScalar)
    return None


def broadcast(operands: Operands) -> tuple[int, ...] | None:
    if any(o is None for o in operands):
        return None
    return broadcast_shapes([o.shape for o in operands if o is not None])


def broadcast_shapes(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """``np.broadcast_shapes(*shapes)``, None where they do not broadcast (without NumPy's
    arrays: the analysis asks it for every elementwise operation)."""
    out = [1] * max(map(len, shapes), default=0)
    for shape in shapes:
        for i, d in enumerate(shape, len(out) - len(shape)):
            if d != out[i]:
                if out[i] != 1 and d != 1:
                    return None
                if out[i] == 1:
                    out[i] = d
    return tuple(out)


def elementwise(fun: Callable[..., Any]) -> ShapeFunction:
    """A ufunc's rule: the operands broadcast, the dtype and type as ``fun`` gives them."""
    def shape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
        if kwargs:
            return None  # (out=, where=, dtype=: not followed)
        shaped = broadcast(operands)
        return None if shaped is None else valued(fun, operands, result(fun, operands, shaped))
    return shape


def array_result(shape_function: ShapeFunction) -> ShapeFunction:
    """``shape_function``'s result as an array, also of 0 dimensions (np.where returns one where
    a ufunc returns a NumPy scalar)."""
    def shape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
        known = shape_function(operands, kwargs)
        return replace(known, kind=np.ndarray) if isinstance(known, Known) else known
    return shape


def valued(fun: Callable[..., Any], operands: Operands, known: Known | None) -> Known | None:
    """``known``, the result of ``fun`` on Python ints, with its value where theirs are known."""
    values = [v for o in operands if o is not None and (v := o.int_value) is not None]
    if known is None or known.kind is not int or len(values) != len(operands):
        return known
    if fun is operator.pow and not 0 <= values[-1] <= 64:
        return known  # (a float, or an int too large to be a shape)
    try:
        value = fun(*values)
    except ArithmeticError:  # (x // 0: the code raises it when it runs)
        return known
    return replace(known, value=value) if type(value) is int else known


def _axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    if not all(type(a) is int and -ndim <= a < ndim for a in items):
        return None
    return tuple(sorted({a % ndim for a in items}))


def reduction(fun: Callable[..., Any], axis: int | None = None) -> ShapeFunction:
    """A reduction's rule (``sum``, ``max``): the array less its ``axis`` (``axis`` where the
    call gives none: 0 for a ufunc's ``reduce``; kept as 1 with ``keepdims``), of the dtype
    ``fun`` gives."""
    def shape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
        if len(operands) != 1 or operands[0] is None or set(kwargs) - {"axis", "keepdims"}:
            return None
        x = operands[0]
        keepdims = kwargs.get("keepdims", False)
        axes = _axes(kwargs.get("axis", axis), len(x.shape))
        if axes is None or type(keepdims) is not bool or not x.array and x.python:
            return None
        shaped = tuple(1 if i in axes else n for i, n in enumerate(x.shape)) if keepdims else tuple(
            n for i, n in enumerate(x.shape) if i not in axes)
        return result(lambda p: fun(np.zeros((1,) * len(x.shape), x.dtype)), [x], shaped)
    return shape


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape of ``a @ b`` (vectors and stacks of matrices included)."""
    if not a or not b:
        return None
    left, right = (a if len(a) > 1 else (1, *a)), (b if len(b) > 1 else (*b, 1))
    if left[-1] != right[-2]:
        return None
    batch = broadcast_shapes([left[:-2], right[:-2]])
    if batch is None:
        return None
    rows = left[-2:-1] if len(a) > 1 else ()
    columns = right[-1:] if len(b) > 1 else ()
    return (*batch, *rows, *columns)


def matmul(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``a @ b`` of two arrays."""
    if kwargs or len(operands) != 2 or any(o is None or not o.array for o in operands):
        return None
    a, b = operands
    assert a is not None and b is not None
    shaped = matmul_shape(a.shape, b.shape)
    return None if shaped is None else _product(a, b, shaped)


def dot(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.dot`` of vectors and matrices (where it is ``@``)."""
    if len(operands) == 2 and all(o is not None and o.array and len(o.shape) <= 2 for o in operands):
        return matmul(operands, kwargs)
    return None


def outer(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.outer``: a matrix of the flattened operands' sizes."""
    if kwargs or len(operands) != 2 or any(o is None or not o.array for o in operands):
        return None
    a, b = operands
    assert a is not None and b is not None
    return _product(a, b, (int(np.prod(a.shape)), int(np.prod(b.shape))))


def _product(a: Known, b: Known, shape: tuple[int, ...]) -> Known:
    """A product of two arrays (a scalar for two vectors)."""
    dtype = np.result_type(a.dtype, b.dtype)
    return Known(shape, dtype, np.ndarray if shape else dtype.type)


def transpose(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """An array's transpose (its axes reversed)."""
    if kwargs or len(operands) != 1 or operands[0] is None or not operands[0].array:
        return None
    x = operands[0]
    return Known(x.shape[::-1], x.dtype, np.ndarray)


def copy(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """A copy of an array."""
    if kwargs or len(operands) != 1 or operands[0] is None or not operands[0].array:
        return None
    return operands[0]


def same(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """The operand itself, whatever it is (``stop_gradient``)."""
    return operands[0] if len(operands) == 1 and not kwargs else None


#: NumPy's ufuncs of one output and one or two inputs, whose rule is :func:`elementwise`
NUMPY_UFUNCS: tuple[np.ufunc, ...] = tuple(dict.fromkeys(
    f for f in vars(np).values() if isinstance(f, np.ufunc) and f.nout == 1 and f.nin in (1, 2)
    and f.signature is None))  # (not np.matmul, np.vecdot...: generalized ufuncs, over core axes)
#: Python's operators that NumPy computes with a ufunc on arrays
ELEMENTWISE_OPERATORS: tuple[Callable[..., Any], ...] = (
    operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.floordiv, operator.mod,
    operator.neg, operator.pos, operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne)


def numpy_elementwise(fun: Callable[..., Any]) -> ShapeFunction | None:
    """NumPy's rule for ``fun`` if it is a ufunc (NumPy's, SciPy's) or an operator NumPy
    computes with one (:func:`elementwise`); the math module's for its functions
    (:func:`math_function`); None for other elementwise functions (their results are not
    followed)."""
    if isinstance(fun, np.ufunc) and fun.nout == 1 and fun.signature is None or any(fun is f for f in (*NUMPY_UFUNCS, *ELEMENTWISE_OPERATORS)):
        return elementwise(fun)
    return math_function(fun) if getattr(fun, "__module__", None) == "math" else None


def math_function(fun: Callable[..., Any]) -> ShapeFunction:
    """A math module function's rule: of numbers, the Python number it gives for them (of an
    array, not followed)."""
    def shape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
        if kwargs or any(o is None or o.array for o in operands):
            return None
        return result(fun, operands, ())
    return shape


# What specialised code may update in place (passes/shapes.py, ``origins``): results that are new
# arrays, and results that are views of an operand (which share its memory).
#: NumPy's functions whose result is a new array: its ufuncs, and these
NEW_ARRAY_FUNCTIONS: tuple[Callable[..., Any], ...] = (
    np.full, np.zeros, np.outer, np.matmul, np.dot, np.where, np.clip, np.sum, np.mean, np.copy)
#: Array methods whose result is a new array
NEW_ARRAY_METHODS: tuple[str, ...] = ("sum", "mean", "max", "min", "prod", "dot", "copy")
#: Array methods whose result is a view of the array
VIEW_METHODS: tuple[str, ...] = ("reshape", "ravel", "transpose", "squeeze")
#: NumPy's functions whose result is a view of their first argument, and whether it is read-only
VIEW_FUNCTIONS: dict[str, bool] = {"broadcast_to": True, "expand_dims": False}
