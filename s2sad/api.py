"""The public API: grad, value_and_grad, differentiate, adjoint_source."""
from __future__ import annotations

import functools
import inspect
import threading
import types
import warnings
import weakref
from typing import Any, Callable, Sequence, Union

from .errors import UnsupportedSyntaxError, WrtError, ZeroGradientWarning
from .passes.codegen import Generated, instantiate
from .pipeline import State, run
from .passes.source import read_source

Wrt = Union[int, str, Sequence[Union[int, str]]]

_lock = threading.RLock()
_compiling = threading.local()  # the functions this thread is generating code for
_compiled: dict[tuple[Any, ...], Generated] = {}
_bound: "weakref.WeakKeyDictionary[types.FunctionType, dict[tuple[Any, ...], Callable[..., Any]]]" = (
    weakref.WeakKeyDictionary())


def _unwrap(f: Any) -> Any:
    return f.__wrapped__ if isinstance(f, Differentiable) else f


def _wrt_names(fn: types.FunctionType, wrt: Wrt) -> tuple[tuple[str, ...], bool]:
    """Normalize ``wrt`` to parameter names; the flag says a tuple was asked for."""
    multiple = isinstance(wrt, (tuple, list))
    items = list(wrt) if multiple else [wrt]
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    allowed = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise WrtError(f"wrt must be a parameter index, a parameter name, or a tuple of them; got {item!r}")
        if isinstance(item, int):
            if not -len(positional) <= item < len(positional):
                raise WrtError(
                    f"wrt={item} is out of range: {fn.__qualname__} has {len(positional)} positional "
                    f"parameter(s) ({', '.join(positional) or 'none'})")
            names.append(positional[item])
        elif item not in allowed:
            raise WrtError(
                f"wrt={item!r} names no parameter of {fn.__qualname__}; its parameters are "
                f"{', '.join(allowed) or 'none'}")
        else:
            names.append(item)
    if len(set(names)) != len(names):
        raise WrtError(f"wrt={wrt!r} names a parameter twice")
    if not names:
        raise WrtError("wrt is empty; name at least one parameter")
    return tuple(names), multiple


def _build(f: Any, wrt: Wrt, kind: str, show: Callable[[str, str], None] | None = None) -> Callable[..., Any]:
    fn = _unwrap(f)
    if not isinstance(fn, types.FunctionType):
        read_source(fn)  # raises the appropriate SourceError
    names, multiple = _wrt_names(fn, wrt)
    key = (names, multiple, kind)
    in_progress = _compiling.__dict__.setdefault("codes", [])
    if fn.__code__ in in_progress:
        raise UnsupportedSyntaxError(
            f"{fn.__qualname__} calls itself (directly or through other functions); recursion is "
            f"not supported: write it as a loop")
    with _lock:
        bound = _bound.get(fn)
        if bound is not None and key in bound and show is None:
            return bound[key]
        code_key = (fn.__code__, id(fn.__globals__), *key)
        generated = _compiled.get(code_key)
        if generated is None or show is not None:
            in_progress.append(fn.__code__)
            try:
                with warnings.catch_warnings():
                    if kind == "vjp":  # the caller decided what is active; zeros are expected
                        warnings.simplefilter("ignore", ZeroGradientWarning)
                    generated = run(State(fn, names, multiple, kind), show).generated
            finally:
                in_progress.pop()
            _compiled[code_key] = generated
        out = instantiate(generated, fn)
        _bound.setdefault(fn, {})[key] = out
        return out


def grad(f: Callable[..., Any], wrt: Wrt = 0) -> Callable[..., Any]:
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``wrt``.

    ``wrt`` is a parameter index, a parameter name, or a tuple of them (then a
    tuple of gradients is returned).  The result is a generated Python function
    with ``f``'s signature; ``adjoint_source(f, wrt)`` shows its code.
    """
    return _build(f, wrt, "grad")


def value_and_grad(f: Callable[..., Any], wrt: Wrt = 0) -> Callable[..., Any]:
    """Like :func:`grad`, but the function returns ``(f(...), gradient)`` from one pass."""
    return _build(f, wrt, "value_and_grad")


def adjoint_source(f: Callable[..., Any], wrt: Wrt = 0) -> str:
    """The source of the generated gradient function, exactly as the CLI prints it."""
    return grad(f, wrt).__s2sad_source__


class Differentiable:
    """A function that also knows its gradient; made by :func:`differentiate`.

    Calling it calls the original function.  ``.grad``, ``.value_and_grad``
    and ``.source`` are generated on first use.
    """

    def __init__(self, fn: Callable[..., Any], wrt: Wrt) -> None:
        functools.update_wrapper(self, fn)
        self._wrt = wrt

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<differentiable {self.__wrapped__.__qualname__} wrt={self._wrt!r}>"

    @functools.cached_property
    def grad(self) -> Callable[..., Any]:
        """The generated gradient function."""
        return grad(self.__wrapped__, self._wrt)

    @functools.cached_property
    def value_and_grad(self) -> Callable[..., Any]:
        """The generated function returning ``(value, gradient)``."""
        return value_and_grad(self.__wrapped__, self._wrt)

    @property
    def source(self) -> str:
        """The generated gradient's source code."""
        return self.grad.__s2sad_source__


def differentiate(fn: Callable[..., Any] | None = None, *, wrt: Wrt = 0) -> Any:
    """Decorator: ``@differentiate`` or ``@differentiate(wrt="w")``.

    The decorated function behaves exactly as before and gains ``.grad``,
    ``.value_and_grad`` and ``.source``.
    """
    if fn is None:
        return lambda f: Differentiable(f, wrt)
    return Differentiable(fn, wrt)
