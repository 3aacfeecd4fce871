"""The public API: grad, value_and_grad, differentiate, adjoint_source."""
from __future__ import annotations

import functools
import threading
import types
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

import numpy as np

from .cache import Check, absolute_checks, bind, hold, holds, merge, own_checks, relative_checks
from .errors import UnsupportedSyntaxError, WrtError, ZeroGradientWarning
from .ir import CALLEE_KINDS
from .passes.codegen import Generated, instantiate
from .pipeline import State, run
from .passes.source import call_signature, forwarding_signature, read_source

Wrt = Union[int, str, Sequence[Union[int, str]]]

_lock = threading.RLock()
_compiling = threading.local()  # the functions this thread is generating code for


@dataclass(frozen=True)
class _Compiled:
    """Generated code, and what it depends on (see s2sad.cache)."""

    generated: Generated
    globals: dict[str, Any]  # held: the key has its id
    relative: tuple[tuple[str, Any, Any, int], ...]
    absolute: tuple[Check, ...]


_compiled: dict[tuple[Any, ...], _Compiled] = {}
# function -> wrt/kind key -> (generated function, the checks it is valid under)
_bound: "weakref.WeakKeyDictionary[types.FunctionType, dict[tuple[Any, ...], tuple[Callable[..., Any], Callable[[], bool]]]]" = (
    weakref.WeakKeyDictionary())


def _unwrap(f: Any) -> Any:
    return f.__wrapped__ if isinstance(f, Differentiable) else f


def _wrt_names(fn: types.FunctionType, wrt: Wrt) -> tuple[tuple[str, ...], bool]:
    """Normalize ``wrt`` to parameter names; the flag says a tuple was asked for."""
    multiple = isinstance(wrt, (tuple, list))
    items = list(wrt) if multiple else [wrt]
    try:
        params = list(call_signature(fn).parameters.values())
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


def _build(f: Any, wrt: Wrt, kind: str, show: Callable[[str, str], None] | None = None,
           split: bool = True) -> Callable[..., Any]:
    """The generated ``kind`` of ``f``; ``split=False`` for code that will itself be
    differentiated: a callee's vjp then recomputes the callee's forward pass."""
    fn = _unwrap(f)
    fast = (tuple(wrt) if isinstance(wrt, list) else wrt, kind, split)
    if show is None:
        try:
            out, valid = _bound[fn][fast]  # the cached call path: a lookup, a few identity checks
            if valid():
                return out
        except (KeyError, TypeError):
            pass
    replay = getattr(fn, "__s2sad_replay__", None)
    if replay is not None:
        # generated code that keeps a callee's forward values for its backward pass, when it
        # is differentiated itself, is read in its replayable form (each callee's vjp recomputes)
        return _build(replay(), wrt, kind, show, split)
    if not isinstance(fn, types.FunctionType):
        read_source(fn)  # raises the appropriate SourceError
    names, multiple = _wrt_names(fn, wrt)
    key = (names, multiple, kind, split)
    # functions, not code objects: one decorator's wrapper code serves many functions
    in_progress = _compiling.__dict__.setdefault("functions", [])
    if fn in in_progress:
        raise UnsupportedSyntaxError(
            f"{fn.__qualname__} calls itself (directly or through other functions); recursion is "
            f"not supported: write it as a loop")
    with _lock:
        bound = _bound.get(fn)
        if bound is not None and key in bound and show is None and bound[key][1]():
            return bound[key][0]
        signature = forwarding_signature(fn)
        # (a wrapper's code is compiled with the parameters of the function it wraps)
        code_key = (fn.__code__, fn.__code__.co_filename, id(fn.__globals__), str(signature), *key)
        entry = _compiled.get(code_key)
        if entry is not None and (show is not None or not hold(bind(fn, entry.relative) + entry.absolute)):
            entry = None
        if entry is None:
            in_progress.append(fn)
            try:
                with warnings.catch_warnings():
                    if kind in CALLEE_KINDS:  # the caller decided what is active
                        warnings.simplefilter("ignore", ZeroGradientWarning)
                    state = run(State(fn, names, multiple, kind, split), show)
            finally:
                in_progress.pop()
            generated = state.generated
            entry = _Compiled(generated, fn.__globals__, relative_checks(fn, state.resolution),
                              absolute_checks(state.resolution, generated.runtime.values()))
            _compiled[code_key] = entry
        out = instantiate(entry.generated, fn)
        if signature is not None:  # a wrapper compiled with the wrapped function's parameters
            params = signature.parameters.values()
            out.__defaults__ = tuple(p.default for p in params if p.default is not p.empty
                                     and p.kind is not p.KEYWORD_ONLY) or None
            out.__kwdefaults__ = {p.name: p.default for p in params if p.default is not p.empty
                                  and p.kind is p.KEYWORD_ONLY} or None
        checks = merge(own_checks(fn), bind(fn, entry.relative), entry.absolute)
        out.__s2sad_checks__ = checks
        valid = holds(checks)
        if entry.generated.splits:
            out.__s2sad_replay__ = functools.partial(_build, fn, wrt, kind, None, False)
        cache = _bound.setdefault(fn, {})
        cache[key] = (out, valid)
        try:
            cache[fast] = (out, valid)
        except TypeError:  # an unhashable wrt: only the normalized key is cached
            pass
        return out


def clear_cache() -> None:
    """Forget every generated function: the next ``grad(f)`` generates code again.

    Rarely needed: generated code is regenerated by itself when a function it was made
    from, a global or closure variable it resolved, or a default it copied changes.
    """
    with _lock:
        _compiled.clear()
        _bound.clear()


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


def jvp(f: Callable[..., Any], wrt: Wrt = 0) -> Callable[..., Any]:
    """Forward mode: a function ``(*args, tangent) -> (f(*args), directional derivative)``.

    ``tangent`` has the shape of the ``wrt`` argument (a tuple of them when ``wrt`` is a
    tuple).  The code is generated by source transformation, tangent statements
    interleaved with the original ones; ``jvp_source(f, wrt)`` shows it.
    """
    generated = _build(f, wrt, "jvp")

    def jvp_call(*args: Any, **kwargs: Any) -> Any:
        if not args:
            raise TypeError("jvp: pass the arguments, then the tangent")
        return generated(args[-1], *args[:-1], **kwargs)

    jvp_call.__s2sad_source__ = generated.__s2sad_source__  # type: ignore[attr-defined]
    jvp_call.__wrapped__ = generated  # type: ignore[attr-defined]
    return jvp_call


def vjp(f: Callable[..., Any], wrt: Wrt = 0) -> Callable[..., Any]:
    """Reverse mode for any output: ``vjp(f)(*args) -> (f(*args), pullback)``.

    ``pullback(cotangent)`` (a cotangent shaped like the output) returns the
    gradient(s) of ``<cotangent, f(*args)>`` with respect to ``wrt``.  The forward
    pass runs once, keeping what the first pullback reads; a later call recomputes it.
    """
    forward = _build(f, wrt, "split")

    def vjp_call(*args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
        value, backward = forward(*args, **kwargs)
        fresh = [backward]  # runs once: its backward pass consumes what it kept

        def pullback(cotangent: Any) -> Any:
            if fresh:
                return fresh.pop()(cotangent)
            return _build(f, wrt, "vjp")(cotangent, *args, **kwargs)

        return value, pullback

    return vjp_call


def hvp(f: Callable[..., Any], wrt: Wrt = 0) -> Callable[..., Any]:
    """Hessian-vector product ``hvp(f)(*args, v)``, forward over reverse: the generated
    gradient code is itself differentiated in forward mode."""
    fn = _unwrap(f)
    names, multiple = _wrt_names(fn, wrt)
    gradient = _build(f, wrt, "grad")
    forward = _build(gradient, names if multiple else names[0], "jvp")

    def hvp_call(*args: Any, **kwargs: Any) -> Any:
        if not args:
            raise TypeError("hvp: pass the arguments, then the vector")
        return forward(args[-1], *args[:-1], **kwargs)[1]

    hvp_call.__s2sad_source__ = forward.__s2sad_source__  # type: ignore[attr-defined]
    return hvp_call


def _single_position(fn: types.FunctionType, wrt: Wrt, what: str) -> tuple[str, int]:
    names, multiple = _wrt_names(fn, wrt)
    positional = [p.name for p in call_signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if multiple and len(names) != 1 or names[0] not in positional:
        raise WrtError(f"{what} takes one positional wrt argument; call it once per argument")
    return names[0], positional.index(names[0])


def _basis(x: Any) -> Any:
    """Unit vectors shaped like ``x``, one per entry."""
    x = np.asarray(x, dtype=float) if not isinstance(x, np.ndarray) else x
    eye = np.eye(x.size, dtype=x.dtype)
    return [row.reshape(x.shape) if x.shape else row[0] for row in eye]


def jacobian(f: Callable[..., Any], wrt: Wrt = 0, mode: str = "auto") -> Callable[..., Any]:
    """The dense Jacobian of ``f`` with respect to one argument, shaped ``out.shape + x.shape``.

    ``mode="forward"`` builds it column by column with :func:`jvp`, ``"reverse"`` row by
    row with :func:`vjp`; ``"auto"`` picks the one with fewer passes.  For small problems.
    """
    if mode not in ("auto", "forward", "reverse"):
        raise ValueError(f"mode must be 'auto', 'forward' or 'reverse', not {mode!r}")
    fn = _unwrap(f)
    name, index = _single_position(fn, wrt, "jacobian")

    def jacobian_call(*args: Any, **kwargs: Any) -> Any:
        out = np.asarray(fn(*args, **kwargs))
        x = args[index]
        forward_mode = mode == "forward" or mode == "auto" and np.size(x) <= out.size
        if forward_mode:
            push = jvp(f, name)
            columns = [np.asarray(push(*args, v, **kwargs)[1]) for v in _basis(x)]
            return np.moveaxis(np.stack(columns), 0, -1).reshape(out.shape + np.shape(x))
        pull = _build(f, name, "vjp")
        rows = [np.asarray(pull(u, *args, **kwargs)) for u in _basis(out)]
        return np.stack(rows).reshape(out.shape + np.shape(x))

    return jacobian_call


def hessian(f: Callable[..., Any], wrt: Wrt = 0) -> Callable[..., Any]:
    """The dense Hessian of scalar ``f`` with respect to one argument (forward over reverse)."""
    fn = _unwrap(f)
    name, index = _single_position(fn, wrt, "hessian")
    product = hvp(f, name)

    def hessian_call(*args: Any, **kwargs: Any) -> Any:
        x = args[index]
        columns = [np.asarray(product(*args, v, **kwargs)) for v in _basis(x)]
        return np.moveaxis(np.stack(columns), 0, -1).reshape(np.shape(x) + np.shape(x))

    return hessian_call


def jvp_source(f: Callable[..., Any], wrt: Wrt = 0) -> str:
    """The source of the generated forward-mode (Jacobian-vector product) function."""
    return _build(f, wrt, "jvp").__s2sad_source__


def adjoint_source(f: Callable[..., Any], wrt: Wrt = 0) -> str:
    """The source of the generated gradient function, exactly as the CLI prints it."""
    return grad(f, wrt).__s2sad_source__


class Differentiable:
    """A function that also knows its gradient; made by :func:`differentiate`.

    Calling it calls the original function.  ``.grad``, ``.value_and_grad``
    and ``.source`` are generated on first use (and again when the code changes).
    """

    def __init__(self, fn: Callable[..., Any], wrt: Wrt) -> None:
        functools.update_wrapper(self, fn)
        self._wrt = wrt

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<differentiable {self.__wrapped__.__qualname__} wrt={self._wrt!r}>"

    @property
    def grad(self) -> Callable[..., Any]:
        """The generated gradient function."""
        return grad(self.__wrapped__, self._wrt)

    @property
    def value_and_grad(self) -> Callable[..., Any]:
        """The generated function returning ``(value, gradient)``."""
        return value_and_grad(self.__wrapped__, self._wrt)

    @property
    def jvp(self) -> Callable[..., Any]:
        """The generated forward-mode function ``(*args, tangent) -> (value, jvp)``."""
        return jvp(self.__wrapped__, self._wrt)

    @property
    def hvp(self) -> Callable[..., Any]:
        """The Hessian-vector product ``(*args, v) -> H v`` (forward over reverse)."""
        return hvp(self.__wrapped__, self._wrt)

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
