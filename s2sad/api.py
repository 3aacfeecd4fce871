"""The public API: grad, value_and_grad, differentiate, adjoint_source."""
from __future__ import annotations

import ast
import functools
import inspect
import linecache
import re
import sys
import threading
import types
import warnings
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence, Union

import numpy as np

from .cache import Check, absolute_checks, bind, hold, holds, merge, own_checks, relative_checks
from .errors import HasAuxError, Location, RecursionDepthError, S2SADError, SourceError, UnsupportedSyntaxError, WrtError, ZeroGradientWarning
from .runtime import check_wrt, check_wrt_item, seed, zeros_grad
from .tracebacks import debugging, user_errors
from .passes.source import call_signature, forwarding_signature, no_source_message, read_source, relocate

if TYPE_CHECKING:
    from .passes.codegen import Generated

Wrt = Union[int, str, Sequence[Union[int, str]]]
_FUNCTION = types.FunctionType

_lock = threading.RLock()
_compiling = threading.local()  # the (function, key) pairs this thread is generating code for


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


def _wrt_names(fn: Callable[..., Any], wrt: Wrt) -> tuple[tuple[str, ...], bool]:
    """Normalize ``wrt`` to parameter names of ``fn`` as it is called (a bound method's or a
    partial's remaining parameters); the flag says a tuple was asked for."""
    multiple = isinstance(wrt, (tuple, list))
    items = list(wrt) if multiple else [wrt]
    try:
        params = list(call_signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    allowed = [p.name for p in params]  # *args and **kwargs too: a tuple or dict of gradients
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    stars = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
    what = _describe(fn)
    names = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise WrtError(f"wrt must be a parameter index, a parameter name, or a tuple of them; got {item!r}")
        if isinstance(item, int):
            if star is not None and item >= len(positional):  # an argument passed through *args
                names.append(f"{star}[{item - len(positional)}]")
            elif star is not None and item < 0:
                raise WrtError(
                    f"wrt={item}: {what} takes *{star}, so positions counted from the end are not "
                    f"known before the call; count from the start (wrt=0 is the first argument)")
            elif not -len(positional) <= item < len(positional):
                raise WrtError(
                    f"wrt={item} is out of range: {what} has {len(positional)} positional "
                    f"parameter(s) ({', '.join(positional) or 'none'})")
            else:
                names.append(positional[item])
        elif item in allowed:
            names.append(item)
        elif _passed_through(item, star, stars) is not None:
            names.append(_passed_through(item, star, stars))
        else:
            raise WrtError(
                f"wrt={item!r} names no parameter of {what}; its parameters are "
                f"{', '.join(allowed) or 'none'}" + _bound_note(fn, item))
    if len(set(names)) != len(names):
        raise WrtError(f"wrt={wrt!r} names a parameter twice")
    if not names:
        raise WrtError("wrt is empty; name at least one parameter")
    return tuple(names), multiple


def _passed_through(item: str, star: str | None, stars: str | None) -> str | None:
    """``item`` as the wrt name of an argument passed through ``*star`` (``"args[1]"``) or
    ``**stars`` (``"kw['scale']"``, or just ``"scale"``); None if it names none."""
    if stars is not None and item.isidentifier():
        return f"{stars}[{item!r}]"
    match = re.fullmatch(r"(\w+)\[(\d+|'\w+'|\"\w+\")\]", item)
    if match is None:
        return None
    key = ast.literal_eval(match.group(2))
    if match.group(1) == (star if isinstance(key, int) else stars):
        return f"{match.group(1)}[{key!r}]"
    return None


def _describe(f: Any) -> str:
    """How messages name the callable ``f``."""
    if isinstance(f, types.MethodType):
        return f"{f.__func__.__qualname__} (bound to a {type(f.__self__).__name__})"
    if isinstance(f, functools.partial):
        return f"functools.partial({_describe(f.func)}, ...)"
    if isinstance(f, (types.FunctionType, type)):
        return f.__qualname__
    return getattr(f, "__qualname__", None) or f"{type(f).__name__} object"


def _bound_note(fn: Any, name: str) -> str:
    """Why ``name`` may be missing from ``fn``'s parameters: bound by a method or a partial."""
    if name == "self" and (isinstance(fn, types.MethodType) or not isinstance(
            fn, (types.FunctionType, functools.partial))):
        return ("; the instance of a bound method is a constant: to differentiate with respect to "
                "it, pass the unbound function (type(obj).method) and the instance as an argument")
    if isinstance(fn, functools.partial):
        return "; arguments that functools.partial binds are constants"
    return ""


# ---- what to differentiate: the Python function behind a callable -----------------------

@dataclass(frozen=True)
class _Target:
    """``f(*a, **k)`` is ``fn(*args, *a, **{**kwargs, **k})``; ``wrt`` names ``fn``'s parameters."""

    fn: types.FunctionType
    wrt: Any  # a name, or a tuple of names
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _target(f: Any, wrt: Wrt) -> _Target:
    """The Python function behind ``f`` (a function, lambda, bound method, functools.partial or
    object with ``__call__``), with what is bound to it: constants of the differentiation."""
    fn, args, kwargs = _parts(f, f)
    names, multiple = _wrt_names(_unwrap(f), wrt)
    return _Target(fn, names if multiple else names[0], args, kwargs)


def _parts(f: Any, given: Any) -> tuple[types.FunctionType, tuple[Any, ...], dict[str, Any]]:
    f = _unwrap(f)
    if isinstance(f, types.FunctionType):
        return f, (), {}
    if isinstance(f, types.MethodType):
        fn, args, kwargs = _parts(f.__func__, given)
        return fn, (*args, f.__self__), kwargs
    if isinstance(f, functools.partial):
        fn, args, kwargs = _parts(f.func, given)
        return fn, (*args, *f.args), {**kwargs, **f.keywords}
    call = getattr(type(f), "__call__", None)
    if not isinstance(f, type) and isinstance(call, types.FunctionType):
        fn, args, kwargs = _parts(call, given)
        return fn, (*args, f), kwargs
    raise SourceError(no_source_message(f, given))


def _generate(f: Any, wrt: Wrt, kind: str) -> Callable[..., Any]:
    """``_build`` for any callable: the generated code, with ``f``'s bound arguments bound."""
    if isinstance(_unwrap(f), types.FunctionType):
        return _build(f, wrt, kind)  # (the cached path: no signature to read)
    t = _target(f, wrt)
    out = _build(t.fn, t.wrt, kind)
    if not t.args and not t.kwargs:
        return out
    if kind == "vjp":  # the cotangent comes first
        def bound(cotangent: Any, *args: Any, **kwargs: Any) -> Any:
            return out(cotangent, *t.args, *args, **{**t.kwargs, **kwargs})
    else:
        bound = functools.partial(out, *t.args, **t.kwargs)
    bound.__s2sad_source__ = out.__s2sad_source__  # type: ignore[attr-defined]
    return bound


class MethodOfSelf:
    """``self.name(...)`` in a method: the function is the instance's class's, known at run time.

    Generated code calls a :class:`_Dispatch`, which reads ``type(self).name`` and calls the
    code generated for it (cached like any callee's).  ``chain`` lists the transformations
    (wrt, kind, split) applied in turn: code that calls a dispatcher can be differentiated
    again, and its dispatcher then transforms the generated code once more."""

    def __init__(self, name: str, where: Location, chain: tuple[tuple[Any, str, bool], ...] = ()) -> None:
        self.__name__ = name
        self.where = where
        self.chain = chain

    def adjoint(self, wrt: tuple[str, ...], kind: str, split: bool) -> "_Dispatch":
        # the callee's parameters, by name or by position in the call ("1": the first after self)
        items = tuple(int(p) if p.isdigit() else p for p in wrt)
        chain = (*self.chain, (items if len(items) > 1 else items[0], kind, split))
        key = (self.__name__, str(self.where), chain)
        known = _dispatchers.get(key)
        if known is None:
            known = _dispatchers[key] = _Dispatch(MethodOfSelf(self.__name__, self.where, chain))
        return known

    def generated_for(self, receiver: Any) -> Callable[..., Any]:
        """The generated code for ``receiver``'s method, transformed by ``chain``."""
        out = inspect.getattr_static(type(receiver), self.__name__, None)
        if not isinstance(out, types.FunctionType):
            raise UnsupportedSyntaxError(
                f"self.{self.__name__} is not a method defined with 'def' in "
                f"{type(receiver).__qualname__} (it is {type(out).__name__}); call a module-level "
                f"function instead", self.where)
        for wrt, kind, split in self.chain:
            out = _build(out, wrt, kind, split=split)
        return out


class _Dispatch:
    """What generated code calls for ``self.name(...)``: the code generated for the
    instance's method, chosen at each call."""

    def __init__(self, method: MethodOfSelf) -> None:
        self.method = method
        kinds = [kind for _, kind, _ in method.chain]
        self.receiver = kinds.count("vjp")  # a vjp's first argument is the cotangent
        last = kinds[-1]
        prefix = "forward" if last == "split" else last.removeprefix("callee_")
        self.__name__ = f"{prefix}_{method.__name__}"
        self.__s2sad_source__ = (f"# {self.__name__}: calls the code generated for "
                                 f"type(self).{method.__name__}, chosen when it is called\n")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.method.generated_for(args[self.receiver])
        if self.method.chain[-1][1] == "jvp":  # the tangent, passed by keyword
            kwargs[_tangent_parameter(out)] = kwargs.pop("tangent")
        return out(*args, **kwargs)


_dispatchers: dict[tuple[Any, ...], _Dispatch] = {}


class _Recursive:
    """A recursive call in generated code: the code generated for ``fn`` (transformed in turn
    by each ``(wrt, kind, split)`` of ``chain``), looked up when called, since it is being
    generated when the call is compiled.  Each activation of the generated code keeps its own
    tape.  Code that calls it can be differentiated again: its chain then grows by one."""

    _depth = threading.local()  # recursive calls running in this thread

    def __init__(self, fn: types.FunctionType, chain: tuple[tuple[Any, str, bool], ...]) -> None:
        from .ir import CALLEE_KINDS

        self.fn = fn
        self.chain = chain
        lambda_name = read_source(fn).lambda_name  # a lambda is named by the name it is bound to
        self.shown = lambda_name or fn.__qualname__
        name = lambda_name or fn.__name__
        for i, (wrt, kind, _) in enumerate(chain):  # the name the generated code has
            names = wrt if isinstance(wrt, tuple) else (wrt,)
            suffix = "_wrt_" + "_".join(re.sub(r"\W", "", p) for p in names) if (
                i == 0 and kind in CALLEE_KINDS and set(names) != set(inspect.signature(fn).parameters)) else ""
            name = f"{'forward' if kind == 'split' else kind.removeprefix('callee_')}_{name}{suffix}"
        self.__name__ = name
        self.__s2sad_source__ = (f"# {self.__name__}: calls the code generated for "
                                 f"{self.shown} (a recursive call)\n")
        self.__signature__ = _generated_signature(fn, chain)

    def adjoint(self, wrt: tuple[str, ...], kind: str, split: bool) -> "_Recursive":
        # the parameters of the generated code, by name or by position in the call
        items = tuple(int(p) if p.isdigit() else p for p in wrt)
        return _recursive(self.fn, (*self.chain, (items if len(items) > 1 else items[0], kind, split)))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out: Any = self.fn
        for wrt, kind, split in self.chain:
            out = _build(out, wrt, kind, split=split)
        if self.chain[-1][1] == "jvp":  # the tangent, passed by keyword
            kwargs[_tangent_parameter(out)] = kwargs.pop("tangent")
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        try:
            return out(*args, **kwargs)
        except RecursionError:
            if depth:  # the outermost recursive call reports it, with the stack unwound
                raise
            raise RecursionDepthError(
                f"{self.shown} recursed past Python's recursion limit "
                f"(sys.getrecursionlimit() = {sys.getrecursionlimit()}) in its generated "
                f"derivative code, which takes about two Python frames per level of recursion; "
                f"write the recursion as a loop, or raise the limit with sys.setrecursionlimit(...)",
                _definition(self.fn)) from None
        finally:
            self._depth.n = depth


def _generated_signature(fn: types.FunctionType, chain: tuple[tuple[Any, str, bool], ...]) -> inspect.Signature:
    """The parameters of the code generated for ``fn`` by ``chain``: ``fn``'s, after a
    cotangent per vjp, with a keyword-only tangent for a jvp (their names are not known
    before the code is generated: callers pass them by position, and the tangent as ``tangent=``)."""
    params = list(call_signature(fn).parameters.values())
    for i, (_, kind, _) in enumerate(chain):
        if kind == "vjp":
            params.insert(0, inspect.Parameter(f"s2sad_cotangent_{i}", inspect.Parameter.POSITIONAL_ONLY))
        elif kind == "jvp":
            at = next((k for k, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
            params.insert(at, inspect.Parameter("tangent", inspect.Parameter.KEYWORD_ONLY))
    return inspect.Signature(params)


_recursions: "weakref.WeakKeyDictionary[types.FunctionType, dict[tuple[Any, ...], _Recursive]]" = (
    weakref.WeakKeyDictionary())


def _recursive(fn: types.FunctionType, chain: tuple[tuple[Any, str, bool], ...]) -> _Recursive:
    """The one :class:`_Recursive` for ``fn`` and ``chain`` (generated code names each callee once)."""
    known = _recursions.setdefault(fn, {})
    if chain not in known:
        known[chain] = _Recursive(fn, chain)
    return known[chain]


def _definition(fn: types.FunctionType) -> Location:
    """Where ``fn`` is defined: its ``def`` line."""
    code = fn.__code__
    return Location(code.co_filename, code.co_firstlineno, 1,
                    linecache.getline(code.co_filename, code.co_firstlineno))


def _argnums(wrt: Wrt | None, argnums: int | Sequence[int] | None) -> Wrt:
    """``wrt``, or JAX's ``argnums`` (parameter indices) in its place; by default the first."""
    if argnums is None:
        return 0 if wrt is None else wrt
    if wrt is not None:
        raise WrtError(f"give either wrt={wrt!r} or argnums={argnums!r}, not both (argnums is "
                       f"JAX's name for wrt)")
    items = argnums if isinstance(argnums, (tuple, list)) else [argnums]
    if any(isinstance(i, bool) or not isinstance(i, int) for i in items):
        raise WrtError(f"argnums takes a parameter index or a tuple of them, got {argnums!r}; "
                       f"use wrt= to name parameters")
    return tuple(argnums) if isinstance(argnums, (tuple, list)) else argnums


def _build(f: Any, wrt: Wrt, kind: str, show: Callable[[str, str], None] | None = None,
           split: bool = True) -> Callable[..., Any]:
    """The generated ``kind`` of ``f``; ``split=False`` for code that will itself be
    differentiated: a callee's vjp then recomputes the callee's forward pass."""
    fn = _unwrap(f)
    debug = debugging()
    fast = (tuple(wrt) if isinstance(wrt, list) else wrt, kind, split, debug)
    if show is None:
        try:
            out, valid = _bound[fn][fast]  # the cached call path: a lookup, a few identity checks
            if valid():
                return out
        except (KeyError, TypeError):
            pass
    # the compiler (and libcst) load on the first generation, not with ``import s2sad``
    from .ir import CALLEE_KINDS
    from .passes.codegen import instantiate
    from .pipeline import State, run

    replay = getattr(fn, "__s2sad_replay__", None)
    if replay is not None:
        # generated code that keeps a callee's forward values for its backward pass, when it
        # is differentiated itself, is read in its replayable form (each callee's vjp recomputes)
        return _build(replay(), wrt, kind, show, split)
    if not isinstance(fn, types.FunctionType):
        read_source(fn)  # raises the appropriate SourceError
    names, multiple = _wrt_names(fn, wrt)
    key = (names, multiple, kind, split, debug)
    # functions, not code objects: one decorator's wrapper code serves many functions
    in_progress = _compiling.__dict__.setdefault("functions", [])
    if (fn, key) in in_progress:  # a recursive call: the code being generated, looked up when called
        return _recursive(fn, ((names if multiple else names[0], kind, split),))
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
            nested = bool(in_progress)
            in_progress.append((fn, key))
            try:
                with warnings.catch_warnings():
                    if kind in CALLEE_KINDS or nested:  # the caller decided what is active
                        warnings.simplefilter("ignore", ZeroGradientWarning)
                    try:
                        state = run(State(fn, names, multiple, kind, split, debug), show)
                    except S2SADError as exc:
                        relocate(exc)  # (found in generated code differentiated again)
                        raise
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


@user_errors
def grad(f: Callable[..., Any], wrt: Wrt | None = None, *, argnums: int | Sequence[int] | None = None,
         has_aux: bool = False, jit: Union[bool, str] = False) -> Callable[..., Any]:
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``wrt``.

    ``f`` is a function, a lambda, a bound method, a ``functools.partial`` or an object
    with ``__call__``; what a method or partial binds is a constant.  ``wrt`` is a
    parameter index, a parameter name, or a tuple of them (then a tuple of gradients is
    returned); ``argnums`` is JAX's name for it.  The result is a generated Python
    function with ``f``'s signature; ``adjoint_source(f, wrt)`` shows its code.  With
    ``has_aux=True``, ``f`` returns ``(output, aux)`` and the gradient function returns
    ``(gradient, aux)``.  ``jit=True`` compiles the gradient with numba (see s2sad.jit;
    ``jit="auto"`` runs the NumPy code where numba cannot compile it).
    """
    if argnums is None and not has_aux and not jit and type(f) is _FUNCTION:  # the common, cached call
        return _build(f, 0 if wrt is None else wrt, "grad")
    wrt = _argnums(wrt, argnums)
    if jit:
        return _jit(f, wrt, "grad", jit, has_aux)
    if has_aux:
        return _with_aux(f, wrt, value=False)
    return _generate(f, wrt, "grad")


@user_errors
def value_and_grad(f: Callable[..., Any], wrt: Wrt | None = None, *,
                   argnums: int | Sequence[int] | None = None, has_aux: bool = False,
                   jit: Union[bool, str] = False) -> Callable[..., Any]:
    """Like :func:`grad`, but the function returns ``(f(...), gradient)`` from one pass
    (``((output, aux), gradient)`` with ``has_aux=True``)."""
    if argnums is None and not has_aux and not jit and type(f) is _FUNCTION:
        return _build(f, 0 if wrt is None else wrt, "value_and_grad")
    wrt = _argnums(wrt, argnums)
    if jit:
        return _jit(f, wrt, "value_and_grad", jit, has_aux)
    if has_aux:
        return _with_aux(f, wrt, value=True)
    return _generate(f, wrt, "value_and_grad")


def _jit(f: Callable[..., Any], wrt: Wrt, kind: str, mode: Union[bool, str], has_aux: bool) -> Callable[..., Any]:
    """The generated ``kind`` of ``f`` compiled by numba (s2sad.jit), ``f``'s bound arguments bound."""
    from .jit import compiled, refuse_aux

    if has_aux:
        refuse_aux(mode)
        return _with_aux(f, wrt, value=kind == "value_and_grad")
    t = _target(f, wrt)
    out = compiled(_build(t.fn, t.wrt, kind), t.fn, t.wrt, kind, mode)
    if not t.args and not t.kwargs:
        return out
    bound = functools.partial(out, *t.args, **t.kwargs)
    bound.__s2sad_source__ = out.__s2sad_source__  # type: ignore[attr-defined]
    return bound


def _with_aux(f: Callable[..., Any], wrt: Wrt, value: bool) -> Callable[..., Any]:
    """``f`` returns ``(output, aux)``: one forward pass, then the backward pass of the output
    alone (aux gets a zero cotangent)."""
    forward = _generate(f, wrt, "split")
    names, _ = _wrt_names(_unwrap(f), wrt)
    signature = inspect.signature(_unwrap(f))

    def aux_call(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs).arguments
        for name in names:  # as grad checks them (the split form leaves that to its caller)
            param = name.split("[", 1)[0]  # args for args[0]: an argument passed through *args
            if param != name:
                check_wrt_item(given.get(param, ()), ast.literal_eval(name[len(param) + 1:-1]), name)
            elif name in given:
                check_wrt(given[name], name)
        out, backward = forward(*args, **kwargs)
        output, aux = _output_and_aux(f, out)
        g = backward((seed(output), zeros_grad(aux)))
        return ((output, aux), g) if value else (g, aux)

    aux_call.__s2sad_source__ = forward.__s2sad_source__  # type: ignore[attr-defined]
    return aux_call


def _output_and_aux(f: Any, out: Any) -> tuple[Any, Any]:
    if not (isinstance(out, tuple) and len(out) == 2):
        raise HasAuxError(
            f"has_aux=True, but {_describe(_unwrap(f))} returned a {type(out).__name__}, not a pair "
            f"(output, aux); return 'loss, aux', or drop has_aux=True")
    return out


@user_errors
def jvp(f: Callable[..., Any], wrt: Wrt | None = None, *,
        argnums: int | Sequence[int] | None = None) -> Callable[..., Any]:
    """Forward mode: a function ``(*args, tangent) -> (f(*args), directional derivative)``.

    ``tangent`` has the shape of the ``wrt`` argument (a tuple of them when ``wrt`` is a
    tuple); it is the last positional argument, or the keyword ``tangent=``.  The code is
    generated by source transformation, tangent statements interleaved with the original
    ones; ``jvp_source(f, wrt)`` shows it, with the same parameter order.
    """
    generated = _generate(f, _argnums(wrt, argnums), "jvp")
    return _with_tangent(generated, "jvp", "tangent")


def _with_tangent(generated: Callable[..., Any], what: str, word: str) -> Callable[..., Any]:
    """``generated`` (whose last parameter is the tangent) called as ``(*args, tangent)`` or
    ``(*args, tangent=...)``: the tangent is passed by keyword, which works after defaults
    and ``*args`` too."""
    name = _tangent_parameter(generated)

    def tangent_call(*args: Any, **kwargs: Any) -> Any:
        if name not in kwargs:
            if not args:
                raise TypeError(f"{what}: pass the arguments, then the {word}")
            args, kwargs = args[:-1], {**kwargs, name: args[-1]}
        try:
            return generated(*args, **kwargs)
        except TypeError as error:
            try:
                inspect.signature(generated).bind(*args, **kwargs)
            except TypeError:
                raise WrtError(f"{what}: {error}; pass the function's arguments, then one {word} "
                               f"(a tuple of {word}s, one per wrt argument, for several)") from None
            raise

    tangent_call.__s2sad_source__ = generated.__s2sad_source__  # type: ignore[attr-defined]
    tangent_call.__wrapped__ = generated  # type: ignore[attr-defined]
    return tangent_call


def _tangent_parameter(generated: Callable[..., Any]) -> str:
    """The generated jvp's tangent parameter: its last one before a ``**kwargs``."""
    if isinstance(generated, (_Dispatch, _Recursive)):
        return "tangent"
    params = [p for p in inspect.signature(generated).parameters.values() if p.kind != p.VAR_KEYWORD]
    return params[-1].name


@user_errors
def vjp(f: Callable[..., Any], wrt: Wrt | None = None, *, argnums: int | Sequence[int] | None = None,
        has_aux: bool = False) -> Callable[..., Any]:
    """Reverse mode for any output: ``vjp(f)(*args) -> (f(*args), pullback)``.

    ``pullback(cotangent)`` (a cotangent shaped like the output) returns the
    gradient(s) of ``<cotangent, f(*args)>`` with respect to ``wrt``.  The forward
    pass runs once, keeping what the first pullback reads; a later call recomputes it.
    With ``has_aux=True``, ``f`` returns ``(output, aux)`` and the call returns
    ``(output, pullback, aux)``, the cotangent being shaped like the output alone.
    """
    wrt = _argnums(wrt, argnums)
    forward = _generate(f, wrt, "split")

    def vjp_call(*args: Any, **kwargs: Any) -> Any:
        value, backward = forward(*args, **kwargs)
        aux = None
        if has_aux:
            value, aux = _output_and_aux(f, value)
        fresh = [backward]  # runs once: its backward pass consumes what it kept

        def pullback(cotangent: Any) -> Any:
            if has_aux:
                cotangent = (cotangent, zeros_grad(aux))
            if fresh:
                return fresh.pop()(cotangent)
            return _generate(f, wrt, "vjp")(cotangent, *args, **kwargs)

        return (value, pullback, aux) if has_aux else (value, pullback)

    return vjp_call


@user_errors
def hvp(f: Callable[..., Any], wrt: Wrt | None = None, *,
        argnums: int | Sequence[int] | None = None) -> Callable[..., Any]:
    """Hessian-vector product ``hvp(f)(*args, v)``, forward over reverse: the generated
    gradient code is itself differentiated in forward mode."""
    wrt = _argnums(wrt, argnums)
    names, multiple = _wrt_names(_unwrap(f), wrt)
    gradient = _generate(f, wrt, "grad")
    forward = _with_tangent(_generate(gradient, names if multiple else names[0], "jvp"), "hvp", "vector")

    def hvp_call(*args: Any, **kwargs: Any) -> Any:
        return forward(*args, **kwargs)[1]

    hvp_call.__s2sad_source__ = forward.__s2sad_source__  # type: ignore[attr-defined]
    return hvp_call


def _single_position(fn: types.FunctionType, wrt: Wrt, what: str) -> tuple[str, int]:
    names, multiple = _wrt_names(fn, wrt)
    params = call_signature(fn).parameters.values()
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((f"{p.name}[" for p in params if p.kind is p.VAR_POSITIONAL), None)
    refusal = WrtError(f"{what} takes one positional wrt argument; call it once per argument")
    if multiple and len(names) != 1:
        raise refusal
    if star is not None and names[0].startswith(star):  # args[k]: k arguments after the named ones
        return names[0], len(positional) + int(names[0][len(star):-1])
    if names[0] not in positional:
        raise refusal
    return names[0], positional.index(names[0])


def _real_only(*values: Any) -> None:
    """Refuse complex values: real unit vectors would miss the imaginary directions."""
    if any(np.iscomplexobj(v) for v in values):
        raise WrtError("jacobian and hessian take real inputs and outputs; for a complex one, use "
                       "its real and imaginary parts")


def _basis(x: Any) -> Any:
    """Unit vectors shaped like ``x``, one per entry."""
    x = np.asarray(x, dtype=float) if not isinstance(x, np.ndarray) else x
    eye = np.eye(x.size, dtype=x.dtype)
    return [row.reshape(x.shape) if x.shape else row[0] for row in eye]


@user_errors
def jacobian(f: Callable[..., Any], wrt: Wrt | None = None, mode: str = "auto", *,
             argnums: int | None = None) -> Callable[..., Any]:
    """The dense Jacobian of ``f`` with respect to one argument, shaped ``out.shape + x.shape``.

    ``mode="forward"`` builds it column by column with :func:`jvp`, ``"reverse"`` row by
    row with :func:`vjp`; ``"auto"`` picks the one with fewer passes.  For small problems.
    """
    if mode not in ("auto", "forward", "reverse"):
        raise ValueError(f"mode must be 'auto', 'forward' or 'reverse', not {mode!r}")
    fn = _unwrap(f)
    name, index = _single_position(fn, _argnums(wrt, argnums), "jacobian")

    def jacobian_call(*args: Any, **kwargs: Any) -> Any:
        out = np.asarray(fn(*args, **kwargs))
        x = args[index]
        _real_only(x, out)
        forward_mode = mode == "forward" or mode == "auto" and np.size(x) <= out.size
        if forward_mode:
            push = jvp(f, name)
            columns = [np.asarray(push(*args, v, **kwargs)[1]) for v in _basis(x)]
            return np.moveaxis(np.stack(columns), 0, -1).reshape(out.shape + np.shape(x))
        pull = _generate(f, name, "vjp")
        rows = [np.asarray(pull(u, *args, **kwargs)) for u in _basis(out)]
        return np.stack(rows).reshape(out.shape + np.shape(x))

    return jacobian_call


@user_errors
def hessian(f: Callable[..., Any], wrt: Wrt | None = None, *, argnums: int | None = None) -> Callable[..., Any]:
    """The dense Hessian of scalar ``f`` with respect to one argument (forward over reverse)."""
    fn = _unwrap(f)
    name, index = _single_position(fn, _argnums(wrt, argnums), "hessian")
    product = hvp(f, name)

    def hessian_call(*args: Any, **kwargs: Any) -> Any:
        x = args[index]
        _real_only(x)
        columns = [np.asarray(product(*args, v, **kwargs)) for v in _basis(x)]
        return np.moveaxis(np.stack(columns), 0, -1).reshape(np.shape(x) + np.shape(x))

    return hessian_call


@user_errors
def jvp_source(f: Callable[..., Any], wrt: Wrt = 0) -> str:
    """The source of the generated forward-mode (Jacobian-vector product) function."""
    return _generate(f, wrt, "jvp").__s2sad_source__


@user_errors
def adjoint_source(f: Callable[..., Any], wrt: Wrt = 0, *, standalone: bool = False) -> str:
    """The source of the generated gradient function, exactly as the CLI prints it.

    ``standalone=True``: a module whose only import is NumPy (s2sad's helpers, the user's
    functions it calls and the constants it reads are copied into it)."""
    text = grad(f, wrt).__s2sad_source__
    if not standalone:
        return text
    from .standalone import make_standalone

    return make_standalone(text, _unwrap(f))


class Differentiable:
    """A function that also knows its gradient; made by :func:`differentiate`.

    Calling it calls the original function.  ``.grad``, ``.value_and_grad``
    and ``.source`` are generated on first use (and again when the code changes).
    """

    def __init__(self, fn: Callable[..., Any], wrt: Wrt, jit: Union[bool, str] = False) -> None:
        functools.update_wrapper(self, fn)
        self._wrt = wrt
        self._jit = jit

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<differentiable {self.__wrapped__.__qualname__} wrt={self._wrt!r}>"

    @property
    def grad(self) -> Callable[..., Any]:
        """The generated gradient function."""
        return grad(self.__wrapped__, self._wrt, jit=self._jit)

    @property
    def value_and_grad(self) -> Callable[..., Any]:
        """The generated function returning ``(value, gradient)``."""
        return value_and_grad(self.__wrapped__, self._wrt, jit=self._jit)

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


def differentiate(fn: Callable[..., Any] | None = None, *, wrt: Wrt = 0,
                  jit: Union[bool, str] = False) -> Any:
    """Decorator: ``@differentiate`` or ``@differentiate(wrt="w")``.

    The decorated function behaves exactly as before and gains ``.grad``,
    ``.value_and_grad`` and ``.source`` (``jit=True``: ``.grad`` and ``.value_and_grad``
    compiled by numba, as ``grad(f, jit=True)``).
    """
    if fn is None:
        return lambda f: Differentiable(f, wrt, jit)
    return Differentiable(fn, wrt, jit)
