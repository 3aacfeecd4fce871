"""Shape functions (rules/shapes.py) of NumPy's functions whose result's shape is given by
ints, whose values the analysis knows where the argument shapes and the code's literals
determine them (``Known.value``): the array constructors (``np.ones((n, d))``, ``np.eye(d)``,
``np.arange(n)``, ``np.linspace``), ``reshape``, ``broadcast_to``, the views that move axes,
and ``np.shape``, ``np.ndim``, ``np.size`` and ``max``/``min`` of ints, which give such ints;
also of ``triu``/``tril``, ``ravel`` and ``astype``, which keep or flatten a shape, and of a
random ``Generator``'s samplers given a ``size``.
"""
from __future__ import annotations

import builtins
import math
from typing import Any, Callable

import numpy as np

from .registry import REGISTRY
from .shapes import Known, Operands, ShapeFunction

_INT64 = np.dtype(np.int64)
_NOT_NUMBERS = (tuple, np.dtype)  # kinds of Known that are not numbers nor arrays


def _dims(known: Known | None) -> tuple[int, ...] | None:
    """The shape an operand gives (an int ``n`` or a tuple ``(n, d)`` of known value)."""
    if known is None:
        return None
    dims = known.ints if known.int_value is None else (known.int_value,)
    return dims if dims is not None and all(n >= 0 for n in dims) else None


def _dtype(kwargs: dict[str, Any], default: Any) -> np.dtype | None:
    """The ``dtype=`` a constructor is given (``default`` without one), if a number's or a bool's."""
    try:
        dtype = np.dtype(kwargs.get("dtype", default))
    except TypeError:
        return None
    return dtype if dtype.kind in "biuf" and dtype.isnative else None


def _int(known: Known | None) -> int | None:
    return None if known is None else known.int_value


def filled(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.zeros(shape, dtype=float)``, ``np.ones``, ``np.empty``."""
    given = operands[1] if len(operands) == 2 else None  # np.zeros(shape, x.dtype)
    dims = _dims(operands[0]) if len(operands) == 1 or given is not None and given.kind is np.dtype else None
    dtype = _dtype(kwargs, float if given is None else given.dtype)
    if dims is None or dtype is None or set(kwargs) - {"dtype", "order"}:
        return None
    return Known(dims, dtype, np.ndarray)


def full(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.full(shape, fill_value, dtype=None)``: of the fill's dtype without one."""
    if len(operands) != 2 or operands[1] is None or set(kwargs) - {"dtype", "order"}:
        return None
    dims, fill = _dims(operands[0]), operands[1]
    if dims is None or fill.kind in _NOT_NUMBERS or not _fits(fill.shape, dims):
        return None
    dtype = _dtype(kwargs, np.asarray(fill.probe()).dtype)
    return None if dtype is None else Known(dims, dtype, np.ndarray)


def _fits(shape: tuple[int, ...], dims: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` broadcasts to ``dims``."""
    try:
        return np.broadcast_shapes(shape, dims) == dims
    except ValueError:
        return False


def liking(fills: bool) -> ShapeFunction:
    """``np.zeros_like(a, dtype=None, shape=None)`` (``ones_like``, ``empty_like``; with
    ``fills``, ``full_like(a, fill_value)``): an array of a's shape and dtype unless given."""
    def shape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
        if len(operands) != 1 + fills or any(o is None or o.kind in _NOT_NUMBERS for o in operands) \
                or set(kwargs) - {"dtype", "order", "subok", "shape"}:
            return None
        a = operands[0]
        assert a is not None
        given = kwargs.get("shape", a.shape)
        dims = given if isinstance(given, tuple) else (given,)
        dtype = _dtype(kwargs, a.dtype)
        if dtype is None or not all(type(n) is int and n >= 0 for n in dims):
            return None
        return Known(dims, dtype, np.ndarray)
    return shape


def eye(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.eye(N, M=None, k=0, dtype=float)``."""
    ints = [_int(o) for o in operands]
    rows = ints[0] if ints else None
    columns = ints[1] if len(ints) > 1 else kwargs.get("M", rows)
    dtype = _dtype(kwargs, float)
    if rows is None or not 1 <= len(ints) <= 3 or None in ints or set(kwargs) - {"M", "k", "dtype", "order"} \
            or type(columns) is not int or dtype is None or min(rows, columns) < 0:
        return None
    return Known((rows, columns), dtype, np.ndarray)


def identity(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.identity(n, dtype=None)``."""
    if len(operands) != 1 or set(kwargs) - {"dtype"}:
        return None
    return eye(operands, kwargs)


def arange(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.arange(start, stop, step)`` of Python ints."""
    ints = [v for o in operands if (v := _int(o)) is not None]
    if not 1 <= len(ints) == len(operands) <= 3 or 0 in ints[2:] or set(kwargs) - {"dtype"}:
        return None
    dtype = _dtype(kwargs, np.arange(1).dtype)
    return None if dtype is None else Known((len(range(*ints)),), dtype, np.ndarray)


def linspace(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.linspace(start, stop, num=50)`` of numbers (not ``retstep``)."""
    ends, num = operands[:2], _int(operands[2]) if len(operands) == 3 else kwargs.get("num", 50)
    if len(operands) not in (2, 3) or any(o is None or o.shape or o.kind in _NOT_NUMBERS for o in ends) \
            or type(num) is not int or num < 0 or set(kwargs) - {"num", "endpoint", "dtype"}:
        return None
    start, stop = (o.probe() for o in ends if o is not None)
    dtype = _dtype(kwargs, np.result_type(start, stop, 1.0))  # (as np.linspace computes it)
    return None if dtype is None else Known((num,), dtype, np.ndarray)


def astype(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``a.astype(dtype)``: an array of a's shape."""
    a, given = operands if len(operands) == 2 else (None, None)
    if a is None or given is None or not a.array or given.kind is not np.dtype or set(kwargs) - {"copy", "order"}:
        return None
    return Known(a.shape, given.dtype, np.ndarray)


def triangle(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.triu(m, k=0)``, ``np.tril``: m's shape (a vector's: a square)."""
    m = operands[0] if 1 <= len(operands) <= 2 else None
    if m is None or not m.array or not m.shape or set(kwargs) - {"k"} or (
            len(operands) == 2 and (operands[1] is None or operands[1].kind is not int)):
        return None
    return Known(m.shape if len(m.shape) > 1 else m.shape * 2, m.dtype, np.ndarray)


def reshape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.reshape(a, shape)``, ``a.reshape(shape)`` and ``a.reshape(n, d)``, with one ``-1``."""
    a, rest = (operands[0], operands[1:]) if operands else (None, [])
    if a is None or not a.array or set(kwargs) - {"order", "shape", "newshape"}:
        return None
    given = [kwargs[k] for k in ("shape", "newshape") if k in kwargs]
    if bool(given) == bool(rest) or len(given) > 1:  # the shape, given once
        return None
    if given:
        shape = given[0]
    elif len(rest) == 1:
        shape = None if rest[0] is None else rest[0].value
    else:
        shape = tuple(_int(o) for o in rest)
    dims = shape if isinstance(shape, tuple) else (shape,)
    if not all(type(n) is int and n >= -1 for n in dims) or dims.count(-1) > 1:
        return None
    size, known = math.prod(a.shape), math.prod(n for n in dims if n != -1)
    if -1 in dims:
        if known == 0 or size % known:
            return None
        dims = tuple(size // known if n == -1 else n for n in dims)
    return Known(dims, a.dtype, np.ndarray) if math.prod(dims) == size else None


def viewing(fun: Callable[..., Any]) -> ShapeFunction:
    """A function that returns a view of an array with its axes moved or added
    (``broadcast_to``, ``expand_dims``, ``squeeze``, ``swapaxes``, ``moveaxis``): its result
    on an array of the operand's shape and dtype that takes no memory."""
    def shape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
        a, rest = (operands[0], operands[1:]) if operands else (None, [])
        if a is None or a.kind in _NOT_NUMBERS or any(o is None or o.value is None for o in rest):
            return None
        empty = np.broadcast_to(np.zeros((), a.dtype if a.array else np.asarray(a.probe()).dtype), a.shape)
        try:
            view = fun(empty, *[o.value for o in rest if o is not None], **kwargs)
        except (ValueError, TypeError, IndexError):
            return None
        return Known(view.shape, view.dtype, np.ndarray) if type(view) is np.ndarray else None
    return shape


def shape_of(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.shape(a)`` of an array."""
    a = operands[0] if len(operands) == 1 and not kwargs else None
    return Known((len(a.shape),), _INT64, tuple, a.shape) if a is not None and a.array else None


def counting(count: Callable[[tuple[int, ...]], int]) -> ShapeFunction:
    """``np.ndim(a)``, ``np.size(a)`` of an array: an int of known value."""
    def shape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
        a = operands[0] if len(operands) == 1 and not kwargs else None
        return Known((), _INT64, int, count(a.shape)) if a is not None and a.array else None
    return shape


def flat(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
    """``np.ravel(a)``, ``a.ravel()``, ``a.flatten()`` of an array: a vector of its size."""
    a = operands[0] if len(operands) == 1 and set(kwargs) <= {"order"} else None
    return Known((math.prod(a.shape),), a.dtype, np.ndarray) if a is not None and a.array else None


def choosing(choose: Callable[..., int]) -> ShapeFunction:
    """``max(a, b)``, ``min``, and of a tuple (``max(x.shape)``), of ints of known values."""
    def shape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
        if kwargs or not operands or operands[0] is None:
            return None
        ints = [_int(o) for o in operands]
        values = operands[0].ints if len(operands) == 1 else None if None in ints else tuple(ints)
        return Known((), _INT64, int, choose(values)) if values else None
    return shape


def sampling(size_at: int, dtype: Any, numbers: int = 0) -> ShapeFunction:
    """A random Generator's method (``rng.random(size)``, ``rng.normal(0.0, 1.0, size)``):
    an array of ``size``, given by value, whose ``numbers`` first parameters (location,
    scale, bounds), if given, are numbers."""
    def shape(operands: Operands, kwargs: dict[str, Any]) -> Known | None:
        if set(kwargs) - {"size"} or len(operands) > size_at + 1 or any(
                o is None or not o.python for o in operands[:numbers]):
            return None
        size = operands[size_at] if len(operands) > size_at else None
        given = kwargs.get("size")
        dims = _dims(size) if size is not None else (given,) if type(given) is int else given
        if not isinstance(dims, tuple) or not dims or not all(type(n) is int and n >= 0 for n in dims):
            return None
        return Known(dims, np.dtype(dtype), np.ndarray)
    return shape


for _method, _shape in ((np.random.Generator.random, sampling(0, np.float64)),
                        (np.random.Generator.standard_normal, sampling(0, np.float64)),
                        (np.random.Generator.normal, sampling(2, np.float64, 2)),
                        (np.random.Generator.uniform, sampling(2, np.float64, 2))):
    REGISTRY.defshape(_method, _shape)
for _constructor in (np.zeros, np.ones, np.empty):
    REGISTRY.defshape(_constructor, filled)
for _like in (np.zeros_like, np.ones_like, np.empty_like):
    REGISTRY.defshape(_like, liking(False))
REGISTRY.defshape(np.full_like, liking(True))
for _triangle in (np.triu, np.tril):
    REGISTRY.defshape(_triangle, triangle)
for _reshape in (np.reshape, np.ndarray.reshape):
    REGISTRY.defshape(_reshape, reshape)
for _view in (np.broadcast_to, np.expand_dims, np.squeeze, np.swapaxes, np.moveaxis):
    REGISTRY.defshape(_view, viewing(_view))
REGISTRY.defshape(np.ndarray.squeeze, viewing(np.squeeze))
REGISTRY.defshape(np.ndarray.swapaxes, viewing(np.swapaxes))
for _flat in (np.ravel, np.ndarray.ravel, np.ndarray.flatten):
    REGISTRY.defshape(_flat, flat)
REGISTRY.defshape(np.full, full)
REGISTRY.defshape(np.eye, eye)
REGISTRY.defshape(np.identity, identity)
REGISTRY.defshape(np.arange, arange)
REGISTRY.defshape(np.linspace, linspace)
REGISTRY.defshape(np.ndarray.astype, astype)
REGISTRY.defshape(np.shape, shape_of)
REGISTRY.defshape(np.ndim, counting(len))
REGISTRY.defshape(np.size, counting(math.prod))
REGISTRY.defshape(builtins.max, choosing(max))
REGISTRY.defshape(builtins.min, choosing(min))
