"""NumPy's spellings on another library's arrays: what ``np`` means in generated code rebound
to PyTorch or JAX (see s2sad.array_api).

A :class:`Namespace` answers the NumPy functions that generated code and the rules' templates
call (``np.exp``, ``np.sum(x, axis=..., keepdims=...)``, ``np.transpose``, ``np.where``, ...)
with the array library's own, through its Array API namespace (``array_api_compat``).  A
call on Python numbers alone is NumPy's, its result a Python number.  A NumPy function it
does not answer, or an argument it does not take (``out=``, ``where=``), raises
:class:`UnmappedFunctionError` naming it and the library.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..errors import S2SADError


class UnmappedFunctionError(S2SADError):
    """Generated code, rebound to another array library, called a NumPy function (or passed
    an argument) that s2sad does not translate to that library."""


#: NumPy's name -> the Array API's, for the elementwise functions that are only renamed.
_ELEMENTWISE = {name: name for name in (
    "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "abs", "sign", "sin", "cos",
    "tan", "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "round", "negative", "positive", "add",
    "subtract", "multiply", "divide", "maximum", "minimum", "logaddexp", "isfinite", "isnan", "isinf",
    "logical_not", "logical_and", "logical_or", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "real", "imag", "conj", "floor_divide", "remainder", "copysign",
    "hypot", "atan2")}
_ELEMENTWISE.update(absolute="abs", true_divide="divide", power="pow", arcsin="asin", arccos="acos",
                    arctan="atan", arcsinh="asinh", arccosh="acosh", arctanh="atanh", arctan2="atan2",
                    conjugate="conj", fabs="abs", mod="remainder")
_REDUCTIONS = {"sum": "sum", "mean": "mean", "max": "max", "amax": "max", "min": "min", "amin": "min",
               "prod": "prod", "var": "var", "std": "std", "all": "all", "any": "any"}
_CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan, "newaxis": None}
_DTYPES = ("float64", "float32", "float16", "complex128", "complex64", "int64", "int32", "int16",
           "int8", "uint8", "bool")


class Namespace:
    """NumPy's spellings (``ns.exp``, ``ns.sum``, ``ns.float64``...) on the arrays of one library,
    whose Array API namespace is ``xp``; ``library`` names it in messages.  A method named
    like a NumPy function takes that function's arguments (the ones listed in its signature)."""

    def __init__(self, xp: Any, library: str, array_type: type) -> None:
        self.xp = xp
        self.library = library
        self.array_type = array_type
        for name in _DTYPES:
            setattr(self, name, getattr(xp, name))
        self.bool_ = xp.bool
        self.float_ = xp.float64
        self.linalg = Unmapped(library, "np.linalg")
        self.random = Unmapped(library, "np.random")
        self.fft = Unmapped(library, "np.fft")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # (Python's own probes: copy, pickle, hasattr)
            raise AttributeError(name)
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name in _ELEMENTWISE:
            made = self._elementwise(name, getattr(self.xp, _ELEMENTWISE[name]))
        elif name in _REDUCTIONS:
            made = self._reduction(name, getattr(self.xp, _REDUCTIONS[name]))
        else:
            raise UnmappedFunctionError(f"np.{name} is not translated to {self.library} arrays by s2sad; "
                                        f"call it on NumPy arrays, or write it with the functions s2sad "
                                        f"translates (README: Dask and other array libraries)")
        setattr(self, name, made)  # found once: the next lookup is an attribute's
        return made

    def __repr__(self) -> str:
        return f"<NumPy's spellings on {self.library} arrays>"

    # ---- what arrays are ----------------------------------------------------------------

    def is_array(self, x: Any) -> bool:
        """Whether ``x`` is an array of this library."""
        return isinstance(x, self.array_type)

    def refuse(self, what: str) -> UnmappedFunctionError:
        """The error for ``what`` (a NumPy call or argument) on this library's arrays."""
        return UnmappedFunctionError(f"{what} is not translated to {self.library} arrays by s2sad")

    def dtype(self, dtype: Any) -> Any:
        """The library's dtype for a NumPy dtype, type or name (its own dtypes as they are)."""
        if dtype is None or not isinstance(dtype, (np.dtype, type, str)):
            return dtype
        return getattr(self.xp, "bool" if np.dtype(dtype) == np.bool_ else np.dtype(dtype).name)

    def shape(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape) if self.is_array(x) else np.shape(x)

    def ndim(self, x: Any) -> int:
        return x.ndim if self.is_array(x) else np.ndim(x)

    def size(self, x: Any) -> int:
        return math.prod(x.shape) if self.is_array(x) else np.size(x)

    def isrealobj(self, x: Any) -> bool:
        if self.is_array(x):
            return not self.xp.isdtype(x.dtype, "complex floating")
        return np.isrealobj(x)

    def iscomplexobj(self, x: Any) -> bool:
        return not self.isrealobj(x)

    def result_type(self, *values: Any) -> Any:
        arrays = [v.dtype if self.is_array(v) else v for v in values]
        return self.xp.result_type(*arrays)

    # ---- elementwise functions and reductions -------------------------------------------

    def _elementwise(self, name: str, fun: Callable[..., Any]) -> Callable[..., Any]:
        numpy_fun = getattr(np, name)

        def elementwise(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                raise self.refuse(f"np.{name}(..., {', '.join(f'{k}=' for k in kwargs)})")
            if not any(self.is_array(a) for a in args):
                return _number(numpy_fun(*args))
            return fun(*self._operands(args))

        elementwise.__name__ = elementwise.__qualname__ = name
        return elementwise

    def _operands(self, args: tuple[Any, ...]) -> list[Any]:
        """``args`` as the library's arrays: a number takes the dtype of the arrays' (as NumPy
        2 promotes a Python number), other values the library's conversion."""
        like = next(a for a in args if self.is_array(a))
        out = []
        for a in args:
            if self.is_array(a):
                out.append(a)
            elif isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic):
                out.append(self.xp.asarray(a, dtype=_promoted(self.xp, like.dtype, a), device=_device(like)))
            else:
                out.append(self.xp.asarray(a, device=_device(like)))
        return out

    def _reduction(self, name: str, fun: Callable[..., Any]) -> Callable[..., Any]:
        numpy_fun = getattr(np, name)

        def reduction(a: Any, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
            extra = {k: v for k, v in kwargs.items() if not (k in ("dtype", "out", "where", "initial")
                                                              and v is None) and k != "ddof"}
            if extra:
                raise self.refuse(f"np.{name}(..., {', '.join(f'{k}=' for k in extra)})")
            if not self.is_array(a):
                if isinstance(a, (list, tuple)) and any(self.is_array(v) for v in a):
                    a = self.xp.stack([self.asarray(v) for v in a])
                else:
                    return _number(numpy_fun(a, axis=axis, keepdims=keepdims, **kwargs))
            options = {"correction": kwargs["ddof"]} if kwargs.get("ddof") else {}
            return fun(a, axis=_axis(axis), keepdims=keepdims, **options)

        reduction.__name__ = reduction.__qualname__ = name
        return reduction

    def where(self, condition: Any, x: Any = None, y: Any = None) -> Any:
        if x is None or y is None:
            raise self.refuse("np.where(condition) (one argument)")
        if not any(self.is_array(a) for a in (condition, x, y)):
            return np.where(condition, x, y)
        if self.is_array(x) or self.is_array(y):
            x, y = self._operands((x, y))
        else:  # numbers chosen by an array of conditions: NumPy's dtype for them
            x, y = (self.asarray(v, np.result_type(x, y)) for v in (x, y))
        return self.xp.where(self.asarray(condition), x, y)

    def clip(self, a: Any, a_min: Any = None, a_max: Any = None) -> Any:
        return self.xp.clip(self.asarray(a), a_min, a_max)

    # ---- making arrays ------------------------------------------------------------------

    def asarray(self, a: Any, dtype: Any = None) -> Any:
        if self.is_array(a) and dtype is None:
            return a
        if isinstance(a, np.generic):
            a = a.item()
        if dtype is None and _numbers(a):  # NumPy's dtype (float64 for floats; torch's default is float32)
            dtype = np.asarray(a).dtype
        return self.xp.asarray(a, dtype=self.dtype(dtype))

    array = asarray

    def zeros(self, shape: Any, dtype: Any = float) -> Any:
        return self.xp.zeros(_shape(shape), dtype=self.dtype(dtype))

    def ones(self, shape: Any, dtype: Any = float) -> Any:
        return self.xp.ones(_shape(shape), dtype=self.dtype(dtype))

    def full(self, shape: Any, fill_value: Any, dtype: Any = None) -> Any:
        if dtype is None and isinstance(fill_value, (int, float)):
            dtype = np.result_type(fill_value)
        return self.xp.full(_shape(shape), fill_value, dtype=self.dtype(dtype))

    def zeros_like(self, a: Any, dtype: Any = None) -> Any:
        return self.full_like(a, 0, dtype)

    def ones_like(self, a: Any, dtype: Any = None) -> Any:
        return self.full_like(a, 1, dtype)

    def full_like(self, a: Any, fill_value: Any, dtype: Any = None) -> Any:
        if self.is_array(a):
            return self.xp.full_like(a, fill_value, dtype=self.dtype(dtype))
        return self.full(np.shape(a), fill_value, np.result_type(a) if dtype is None else dtype)

    empty_like = zeros_like

    # ---- shapes -------------------------------------------------------------------------

    def reshape(self, a: Any, shape: Any, order: str = "C") -> Any:
        if order != "C":
            raise self.refuse(f"np.reshape(..., order={order!r})")
        return self.xp.reshape(self.asarray(a), _shape(shape))

    def ravel(self, a: Any) -> Any:
        return self.xp.reshape(self.asarray(a), (-1,))

    def transpose(self, a: Any, axes: Any = None) -> Any:
        a = self.asarray(a)
        return self.xp.permute_dims(a, tuple(range(a.ndim))[::-1] if axes is None else tuple(axes))

    def swapaxes(self, a: Any, axis1: int, axis2: int) -> Any:
        a = self.asarray(a)
        order = list(range(a.ndim))
        order[axis1], order[axis2] = order[axis2], order[axis1]
        return self.xp.permute_dims(a, tuple(order))

    def moveaxis(self, a: Any, source: Any, destination: Any) -> Any:
        return self.xp.moveaxis(self.asarray(a), source, destination)

    def expand_dims(self, a: Any, axis: Any) -> Any:
        a = self.asarray(a)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        ndim = a.ndim + len(axes)
        for position in sorted(n % ndim for n in axes):
            a = self.xp.expand_dims(a, axis=position)
        return a

    def squeeze(self, a: Any, axis: Any = None) -> Any:
        a = self.asarray(a)
        if axis is None:
            axis = tuple(i for i, n in enumerate(a.shape) if n == 1)
        return self.xp.squeeze(a, axis=_axis(axis))

    def broadcast_to(self, a: Any, shape: Any) -> Any:
        return self.xp.broadcast_to(self.asarray(a), _shape(shape))

    def concatenate(self, arrays: Any, axis: int = 0) -> Any:
        return self.xp.concat([self.asarray(a) for a in arrays], axis=axis)

    def stack(self, arrays: Any, axis: int = 0) -> Any:
        return self.xp.stack([self.asarray(a) for a in arrays], axis=axis)

    # ---- products -----------------------------------------------------------------------

    def matmul(self, a: Any, b: Any) -> Any:
        return self.xp.matmul(self.asarray(a), self.asarray(b))

    def dot(self, a: Any, b: Any) -> Any:
        if self.ndim(a) == 0 or self.ndim(b) == 0:
            return a * b
        if self.ndim(a) > 2 or self.ndim(b) > 2:
            raise self.refuse("np.dot of arrays of more than two dimensions (np.matmul is)")
        return self.matmul(a, b)

    def outer(self, a: Any, b: Any) -> Any:
        return self.ravel(a)[:, None] * self.ravel(b)[None, :]

    def tensordot(self, a: Any, b: Any, axes: Any = 2) -> Any:
        return self.xp.tensordot(self.asarray(a), self.asarray(b), axes=axes)

    # ---- writes -------------------------------------------------------------------------

    def index_add(self, acc: Any, index: Any, g: Any) -> Any:
        """``acc`` with ``g`` added at ``index``: in place where the library writes in place
        (``acc`` is a gradient generated code made), a new array where its arrays are
        immutable (JAX's ``acc.at[index].add(g)``, which adds repeated indices as often)."""
        if hasattr(acc, "at"):
            return acc.at[index].add(g)
        if not _basic(index):
            raise self.refuse("the gradient of x[index] with an index of integer or boolean arrays "
                              "(np.add.at)")
        acc[index] += g
        return acc


class Unmapped:
    """A NumPy submodule (``np.linalg``...) none of whose functions is translated."""

    def __init__(self, library: str, prefix: str) -> None:
        self.library = library
        self.prefix = prefix

    def __getattr__(self, name: str) -> Any:
        raise UnmappedFunctionError(f"{self.prefix}.{name} is not translated to {self.library} arrays "
                                    f"by s2sad; call it on NumPy arrays")


def _numbers(a: Any) -> bool:
    """Whether ``a`` is a Python number or a (nested) list or tuple of them."""
    if isinstance(a, (list, tuple)):
        return all(_numbers(item) for item in a)
    return isinstance(a, (bool, int, float, complex))


def _number(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds (a NumPy scalar times another library's
    array would be NumPy's array); anything else as it is."""
    return value.item() if isinstance(value, np.generic) else value


def _promoted(xp: Any, dtype: Any, number: Any) -> Any:
    """The dtype of ``number`` beside an array of ``dtype`` (NumPy 2's promotion of Python numbers)."""
    if isinstance(number, bool) or (isinstance(number, int) and not xp.isdtype(dtype, "bool")):
        return dtype
    if isinstance(number, complex):
        return dtype if xp.isdtype(dtype, "complex floating") else xp.complex128
    return dtype if xp.isdtype(dtype, ("real floating", "complex floating")) else xp.float64


def _device(a: Any) -> Any:
    return getattr(a, "device", None) if not callable(getattr(a, "device", None)) else None


def _basic(index: Any) -> bool:
    """Whether ``index`` selects without integer or boolean arrays (no position twice)."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in items)


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _shape(shape: Any) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(shape)
