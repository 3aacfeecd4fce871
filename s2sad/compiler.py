"""The compiler's entry point: ``build(f, wrt, kind)``, the generated code for a function,
cached while what it was made from is unchanged (see s2sad.cache).

Below the public API (s2sad.api) and above the pipeline: the pipeline's passes reach
``build`` only through the state it hands them (to compile a callee), never by import.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import gc
import inspect
import re
import threading
import types
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, Union

from . import disk_cache
from .cache import Check, absolute_checks, bind, hold, holds, merge, own_checks, relative_checks
from .errors import S2SADError, SourceError, WrtError, ZeroGradientWarning
from .generated import Generated, instantiate
from .passes.callees import Closure, function_arguments, recursive_call, unwrap
from .passes.source import call_signature, forwarding_signature, no_source_message, read_source, relocate
from .tracebacks import debugging

Wrt = Union[int, str, Sequence[Union[int, str]]]

_lock = threading.RLock()
_compiling = threading.local()  # the (function, key) pairs this thread is generating code for


@dataclass(frozen=True)
class _Compiled:
    """Generated code, and what it depends on (see s2sad.cache)."""

    generated: Generated
    globals: dict[str, Any]  # held: the key has its id
    relative: tuple[tuple[str, Any, Any, int], ...]
    absolute: tuple[Check, ...]
    template: Any = None  # a generic build's pipeline.Template, for the builds specialised later


_compiled: dict[tuple[Any, ...], _Compiled] = {}
# function -> wrt/kind key -> (generated function, the checks it is valid under)
_bound: "weakref.WeakKeyDictionary[types.FunctionType, dict[tuple[Any, ...], tuple[Callable[..., Any], Callable[[], bool]]]]" = (
    weakref.WeakKeyDictionary())


def wrt_names(fn: Callable[..., Any], wrt: Wrt) -> tuple[tuple[str, ...], bool]:
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
    what = describe(fn)
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
        elif (passed := _passed_through(item, star, stars)) is not None:
            names.append(passed)
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


def describe(f: Any) -> str:
    """How messages name the callable ``f``."""
    if isinstance(f, types.MethodType):
        return f"{f.__func__.__qualname__} (bound to a {type(f.__self__).__name__})"
    if isinstance(f, functools.partial):
        return f"functools.partial({describe(f.func)}, ...)"
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
class Target:
    """``f(*a, **k)`` is ``fn(*args, *a, **{**kwargs, **k})``; ``wrt`` names ``fn``'s parameters."""

    fn: types.FunctionType
    wrt: Any  # a name, or a tuple of names
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def target(f: Any, wrt: Wrt) -> Target:
    """The Python function behind ``f`` (a function, lambda, bound method, functools.partial or
    object with ``__call__``), with what is bound to it: constants of the differentiation."""
    fn, args, kwargs = _parts(f, f)
    names, multiple = wrt_names(unwrap(f), wrt)
    return Target(fn, names if multiple else names[0], args, kwargs)


def _parts(f: Any, given: Any) -> tuple[types.FunctionType, tuple[Any, ...], dict[str, Any]]:
    f = unwrap(f)
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


def generate(f: Any, wrt: Wrt, kind: str) -> Callable[..., Any]:
    """``build`` for any callable: the generated code, with ``f``'s bound arguments bound."""
    if isinstance(unwrap(f), types.FunctionType):
        return build(f, wrt, kind)  # (the cached path: no signature to read)
    t = target(f, wrt)
    out = build(t.fn, t.wrt, kind)
    if not t.args and not t.kwargs:
        return out
    if kind == "vjp":  # the cotangent comes first
        def bound(cotangent: Any, *args: Any, **kwargs: Any) -> Any:
            return out(cotangent, *t.args, *args, **{**t.kwargs, **kwargs})
    else:
        bound = functools.partial(out, *t.args, **t.kwargs)
    bound.__s2sad_source__ = out.__s2sad_source__  # type: ignore[attr-defined]
    return bound


def build(f: Any, wrt: Wrt, kind: str, show: Callable[[str, str], None] | None = None,
          split: bool = True, shapes: tuple[Any, ...] | None = None) -> Callable[..., Any]:
    """The generated ``kind`` of ``f``; ``split=False`` for code that will itself be
    differentiated: a callee's vjp then recomputes the callee's forward pass.  ``shapes``:
    code specialised to arguments of these types, shapes and dtypes (see s2sad.specializing)."""
    fn = unwrap(f)
    debug = debugging()
    fast = (tuple(wrt) if isinstance(wrt, list) else wrt, kind, split, debug, shapes)
    if show is None:
        try:
            # the cached call path: a lookup, a few identity checks (the weak dict's own dict,
            # read without the frame of its __getitem__)
            out, valid = _bound.data[weakref.ref(fn)][fast]
            if valid():
                return out
        except (KeyError, TypeError):
            pass
    replay = getattr(fn, "__s2sad_replay__", None)
    if replay is not None:
        # generated code that keeps a callee's forward values for its backward pass, when it
        # is differentiated itself, is read in its replayable form (each callee's vjp recomputes)
        return build(replay(), wrt, kind, show, split, shapes)
    if not isinstance(fn, types.FunctionType):
        read_source(fn)  # raises the appropriate SourceError
    names, multiple = wrt_names(fn, wrt)
    key = (names, multiple, kind, split, debug) + ((shapes,) if shapes is not None else ())
    if (fn, key) in _in_progress():  # a recursive call: the code being generated, looked up when called
        return recursive_call(fn, ((names if multiple else names[0], kind, split),), build)
    with _lock:
        bound = _bound.get(fn)
        if bound is not None and key in bound and show is None and bound[key][1]():
            return bound[key][0]
        signature = forwarding_signature(fn)
        # (a wrapper's code is compiled with the parameters of the function it wraps)
        out, valid = _instantiate(fn, _entry(fn, key, signature, shapes, show), signature, wrt, kind)
        cache = _bound.setdefault(fn, {})
        cache[key] = (out, valid)
        try:
            cache[fast] = (out, valid)
        except TypeError:  # an unhashable wrt: only the normalized key is cached
            pass
        return out


def _in_progress() -> list[tuple[types.FunctionType, tuple[Any, ...]]]:
    """The (function, key) pairs this thread is generating code for, innermost last."""
    # functions, not code objects: one decorator's wrapper code serves many functions
    return _compiling.__dict__.setdefault("functions", [])


def _entry(fn: types.FunctionType, key: tuple[Any, ...], signature: inspect.Signature | None,
           shapes: tuple[Any, ...] | None, show: Callable[[str, str], None] | None) -> _Compiled:
    """The generated code for ``fn`` under ``key``: the one kept for its code while still
    valid, else the disk cache's, else new; kept for the next function with that code."""
    # (a callee specialised to its function arguments: by their identities too)
    arguments = tuple((n, id(v)) for n, v in sorted(function_arguments(fn).items()))
    code_key = (fn.__code__, fn.__code__.co_filename, id(fn.__globals__), str(signature), arguments, *key)
    entry = _compiled.get(code_key)
    if entry is not None and (show is not None or not hold(bind(fn, entry.relative) + entry.absolute)):
        entry = None
    # (a callee's code is not stored: its caller's would depend on a generated function)
    stored = disk_cache.key(fn, key) if entry is None and show is None and signature is None \
        and not _in_progress() else None
    if stored is not None:
        entry = _from_disk(fn, stored)
    if entry is None:
        generic = _compiled.get(code_key[:-1]) if shapes is not None and show is None else None
        template = generic.template if generic is not None and hold(
            bind(fn, generic.relative) + generic.absolute) else None
        entry, warned = _compile(fn, key, shapes, show, template)
        if stored is not None and not warned:  # (a cached copy would not warn)
            disk_cache.store(stored, (entry.generated, entry.relative, entry.absolute))
    _compiled[code_key] = entry
    return entry


def _compile(fn: types.FunctionType, key: tuple[Any, ...], shapes: tuple[Any, ...] | None,
             show: Callable[[str, str], None] | None, template: Any = None) -> tuple[_Compiled, bool]:
    """``fn`` through the pipeline, for ``key`` (names, multiple, kind, split, debug[, shapes]):
    the new entry, and whether generating it warned.  Code specialised to ``shapes`` starts
    from ``template``, when given: what the generic build for ``key[:5]`` left."""
    # the compiler (and libcst) load on the first generation, not with ``import s2sad``
    from .ir import CALLEE_KINDS
    from .pipeline import State, run

    names, multiple, kind, split, debug = key[:5]
    in_progress = _in_progress()
    nested = bool(in_progress)
    in_progress.append((fn, key))
    try:
        with warnings.catch_warnings(), _collector_paused():
            if kind in CALLEE_KINDS or nested:  # the caller decided what is active
                warnings.simplefilter("ignore", ZeroGradientWarning)
            try:
                state = run(State(fn, names, multiple, kind, split, debug, build=build,
                                  arguments=_arguments(fn, shapes), template=template), show)
            except S2SADError as exc:
                relocate(exc)  # (found in generated code differentiated again)
                raise
    finally:
        in_progress.pop()
    generated = state.generated
    kept = state.template if shapes is None and show is None else None
    return _Compiled(generated, fn.__globals__, relative_checks(fn, state.resolution),
                     absolute_checks(state.resolution, generated.runtime.values()), kept), state.warned


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the compiler runs (as it was after): the
    compiler makes many objects that live until it returns, and the collector's passes over
    them took a third of the time generating a function of 1,000 lines."""
    if not gc.isenabled():  # (off already: by the user, or by a compilation around this one)
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _instantiate(fn: types.FunctionType, entry: _Compiled, signature: inspect.Signature | None,
                 wrt: Wrt, kind: str) -> tuple[types.FunctionType, Callable[[], bool]]:
    """``entry``'s code as a function for ``fn``, holding the checks it is valid under (and,
    when it is differentiated as another build, how to make that build); and whether they hold."""
    out = instantiate(entry.generated, fn)
    if signature is not None:  # a wrapper compiled with the wrapped function's parameters
        params = signature.parameters.values()
        out.__defaults__ = tuple(p.default for p in params if p.default is not p.empty
                                 and p.kind is not p.KEYWORD_ONLY) or None
        out.__kwdefaults__ = {p.name: p.default for p in params if p.default is not p.empty
                              and p.kind is p.KEYWORD_ONLY} or None
    checks = merge(own_checks(fn), bind(fn, entry.relative), entry.absolute)
    out.__s2sad_checks__ = checks
    # (differentiated again, it reads those parameters as fn does; one bound to a nested function
    # of the caller holds the values that function reads, and the code calls the function itself)
    constants = {n: v for n, v in function_arguments(fn).items() if not isinstance(v, Closure)}
    if constants:
        out.__s2sad_arguments__ = constants
    valid = holds(checks)
    if entry.generated.replayed_unsplit:
        out.__s2sad_replay__ = functools.partial(build, fn, wrt, kind, None, False)
    return out, valid


def _arguments(fn: types.FunctionType, shapes: tuple[Any, ...] | None) -> dict[str, Any] | None:
    if shapes is None:
        return None
    from .rules.shapes import known_arguments  # (the rules load with the compiler)

    return known_arguments(fn.__code__.co_varnames[:fn.__code__.co_argcount], shapes)


def _from_disk(fn: types.FunctionType, stored: str) -> _Compiled | None:
    """The entry the disk cache holds for ``fn``, if it is valid for ``fn`` now."""
    found = disk_cache.load(stored, fn)
    if found is None:
        return None
    generated, relative, absolute = found
    if not hold(bind(fn, relative) + absolute):
        return None  # (stored for a global, helper or attribute that is now another object)
    return _Compiled(generated, fn.__globals__, relative, absolute)


def forget() -> None:
    """Forget every generated function (``s2sad.clear_cache``)."""
    with _lock:
        _compiled.clear()
        _bound.clear()
