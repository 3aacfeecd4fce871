"""Callees whose generated code is chosen when they are called, and how generated code is named.

A method of ``self`` is known only once the instance is (:class:`MethodOfSelf`, called
through a :class:`Dispatch`); a recursive call reaches code that is still being generated
(:class:`RecursiveCall`).  Both look up the generated code at each call through ``build``,
the compiler's entry point, which the pipeline hands to the passes: nothing here imports the
compiler.  :class:`Decorated` marks a function wrapped by s2sad itself (``@differentiate``),
compiled as the function it wraps.
"""
from __future__ import annotations

import inspect
import keyword
import linecache
import re
import sys
import threading
import types
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Collection, Protocol

from ..errors import Location, RecursionDepthError, S2SADError, UnsupportedSyntaxError, ZeroGradientWarning
from ..rules import REGISTRY
from .source import call_signature, read_source

Chain = tuple[tuple[Any, str, bool], ...]  # the (wrt, kind, split) transformations, in turn


class Build(Protocol):
    """The compiler's entry point: the generated ``kind`` of ``f`` with respect to ``wrt``."""

    def __call__(self, f: Any, wrt: Any, kind: str, show: Any = None,
                 split: bool = True) -> Callable[..., Any]: ...


class Decorated:
    """A function decorated by s2sad (``@differentiate``): compiled as ``__wrapped__``."""

    __wrapped__: Callable[..., Any]


def unwrap(f: Any) -> Any:
    """The function behind an s2sad decoration (the generic code behind a gradient that
    specialises itself, see s2sad.specializing), or ``f``."""
    if isinstance(f, Decorated) or type(f) is types.FunctionType and "__s2sad_specialized__" in f.__dict__:
        return f.__wrapped__
    return f


def generated_name(name: str, wrt: Any, kind: str, params: Collection[str] | None = None) -> str:
    """The name of the code generated for function ``name``: ``grad_f``, ``forward_f``, and
    for a callee differentiated in some of its ``params`` only, ``vjp_f_wrt_x_y``."""
    from ..ir import CALLEE_KINDS  # (ir loads libcst: not with ``import s2sad``)

    names = wrt if isinstance(wrt, tuple) else (wrt,)
    suffix = "_wrt_" + "_".join(re.sub(r"\W", "", str(p)) for p in names) if (
        params is not None and kind in CALLEE_KINDS and set(names) != set(params)) else ""
    return f"{'forward' if kind == 'split' else kind.removeprefix('callee_')}_{name}{suffix}"


def tangent_parameter(generated: Callable[..., Any]) -> str:
    """A generated jvp's tangent parameter: its last one before a ``**kwargs``."""
    if isinstance(generated, (Dispatch, RecursiveCall)):
        return "tangent"
    params = [p for p in inspect.signature(generated).parameters.values() if p.kind != p.VAR_KEYWORD]
    return params[-1].name


def with_function_arguments(fn: types.FunctionType, bound: dict[str, Any]) -> types.FunctionType:
    """``fn`` specialised to the functions its caller passes for the parameters in ``bound``:
    a function with ``fn``'s code that reads each such parameter as the constant it is bound
    to (a call through it is differentiated as a direct call).  One per ``fn`` and functions."""
    key = tuple((name, id(value)) for name, value in sorted(bound.items()))
    made = _specialised.setdefault(fn, {})
    known = made.pop(key, None)
    if known is None:  # (the entry keeps the functions alive: their ids stay theirs)
        known = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        known.__kwdefaults__ = fn.__kwdefaults__
        known.__qualname__, known.__module__ = fn.__qualname__, fn.__module__
        known.__dict__.update(fn.__dict__, __s2sad_arguments__=dict(bound))
    made[key] = known  # (the most recently used last)
    if len(made) > _SPECIALISED_PER_FUNCTION:
        del made[next(iter(made))]
    return known


def with_forwarded_parameters(fn: types.FunctionType, signature: Any) -> types.FunctionType:
    """``fn``, whose ``*args``/``**kwargs`` it passes on whole, compiled with the parameters of
    one call (``signature``, from source.forwarded_call).  One per ``fn`` and signature."""
    made = _forwarded.setdefault(fn, {})
    key = str(signature)
    if key not in made:
        known = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        known.__kwdefaults__ = fn.__kwdefaults__
        known.__qualname__, known.__module__ = fn.__qualname__, fn.__module__
        known.__dict__.update(fn.__dict__, __s2sad_forwarded__=signature)
        made[key] = known
    return made[key]


_forwarded: weakref.WeakKeyDictionary[types.FunctionType, dict[str, types.FunctionType]] = \
    weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class Closure:
    """A nested function passed as an argument that reads variables of the function passing
    it (``outer``): ``function`` is compiled with them as keyword-only parameters, and the
    parameter it is passed as holds their values, as a tuple (see normalize/closures.py)."""

    function: types.FunctionType
    outer: tuple[str, ...]


def function_arguments(fn: Any) -> dict[str, Any]:
    """The parameters of ``fn`` bound to known functions by :func:`with_function_arguments`."""
    return getattr(fn, "__s2sad_arguments__", None) or {} if isinstance(fn, types.FunctionType) else {}


#: fn -> (the ids of the functions bound, for the most recently used) -> fn specialised to them;
#: forgotten with fn (a caller passing a new lambda at each call makes new entries)
_specialised: weakref.WeakKeyDictionary[types.FunctionType, dict[tuple[tuple[str, int], ...], types.FunctionType]] = \
    weakref.WeakKeyDictionary()
_SPECIALISED_PER_FUNCTION = 64


class MethodOfSelf:
    """``self.name(...)`` in a method: the function is the instance's class's, known at run time.

    Generated code calls a :class:`Dispatch`, which reads ``type(self).name`` and calls the
    code generated for it (cached like any callee's).  ``chain`` lists the transformations
    (wrt, kind, split) applied in turn: code that calls a dispatcher can be differentiated
    again, and its dispatcher then transforms the generated code once more."""

    def __init__(self, name: str, where: Location, chain: Chain = (), after: type | None = None,
                 spelled: str = "self", arity: Arity | None = None) -> None:
        self.__name__ = name
        self.where = where
        self.chain = chain
        self.after = after  # super().name(...) in a method of this class: looked up after it
        self.spelled = spelled  # the receiver as written (a local variable holding an object)
        self.arity = arity  # the call's arguments after the receiver (None: with * or **)

    def adjoint(self, wrt: tuple[str, ...], kind: str, split: bool, build: Build) -> Dispatch:
        # the callee's parameters, by name or by position in the call ("1": the first after self)
        items = tuple(int(p) if p.isdigit() else p for p in wrt)
        chain = (*self.chain, (items if len(items) > 1 else items[0], kind, split))
        key = (self.__name__, str(self.where), chain, self.after)
        known = _dispatchers.get(key)
        if known is None:
            known = _dispatchers[key] = Dispatch(
                MethodOfSelf(self.__name__, self.where, chain, self.after, self.spelled, self.arity), build)
        return known

    def generated_for(self, receiver: Any, build: Build) -> tuple[Any, Callable[..., Any]]:
        """The receiver to pass and the generated code for its method, transformed by ``chain``:
        ``receiver``'s method, or for an attribute of the instance holding an object whose
        ``__call__`` is written in Python (``self.fc1(x)``), that object and its ``__call__``;
        a function called through the receiver without it (``self.act(x)`` with ``self.act =
        np.tanh``, a static or class method, ``type(self).f(x)``) is called by a function that
        takes the receiver first (:func:`calling`)."""
        name = self.__name__
        if self.after is None:
            receiver, out = self.found(receiver)
            if not isinstance(out, types.FunctionType) and REGISTRY.rule(out) is not None:
                out = self.calling(getattr(receiver, name))  # a compiled method with a rule (rng.normal)
        else:  # as super() finds it: in the classes after ``after`` in the instance's MRO
            mro = type(receiver).__mro__
            out = next((vars(c)[self.__name__] for c in mro[mro.index(self.after) + 1:]
                        if self.__name__ in vars(c)), None)
            if isinstance(out, (staticmethod, classmethod)):
                out = self.calling(out.__get__(receiver, type(receiver)))
        if not isinstance(out, types.FunctionType):
            spelled = self.spelled if self.after is None else "super()"
            if out is None and name in getattr(receiver, "__dict__", {}):
                why = ("a function, called with * or **; pass its arguments one by one"
                       if callable(receiver.__dict__[name]) else "not a function; call a function by its name")
                raise UnsupportedSyntaxError(
                    f"{spelled}.{self.__name__}(...) calls what an attribute of the "
                    f"{type(receiver).__qualname__} holds, which is {why}", self.where)
            what = "it has no such attribute" if out is None else f"it is {type(out).__name__}"
            raise UnsupportedSyntaxError(
                f"{spelled}.{self.__name__} is not a method defined with 'def' in "
                f"{type(receiver).__qualname__} ({what}); call a module-level function instead",
                self.where)
        try:
            out = transformed(out, self.chain, build)
        except S2SADError as exc:  # found in the function that calls the held one: at the call
            if exc.location is not None and exc.location.filename.startswith(_CALLING):
                exc.location = self.where
            raise
        return receiver, out

    def found(self, receiver: Any) -> tuple[Any, Any]:
        """``receiver.name`` as Python finds it: the receiver and the function to call with it."""
        name = self.__name__
        if name == "__call__" and isinstance(receiver, type):  # cls(x) for cls in a list: an instance made
            return receiver, self.calling(receiver)
        if isinstance(receiver, type):  # type(self).f(x): what the class holds, called as it is
            held = inspect.getattr_static(receiver, name, None)
            return receiver, None if held is None else self.calling(getattr(receiver, name))
        out = inspect.getattr_static(type(receiver), name, None)
        own = getattr(receiver, "__dict__", {})
        if name in own and not hasattr(type(out), "__set__"):  # the instance's own attribute
            held = own[name]
            call = inspect.getattr_static(type(held), "__call__", None)
            if isinstance(call, types.FunctionType) and not isinstance(held, type):
                return held, call
            return receiver, self.calling(held) if callable(held) else None
        if isinstance(out, (staticmethod, classmethod)):
            return receiver, self.calling(getattr(receiver, name))
        if name == "__call__" and not isinstance(out, types.FunctionType) and callable(receiver):
            return receiver, self.calling(receiver)  # layer(x) of a function (a lambda, a ufunc) in a list
        return receiver, out

    def calling(self, held: Any) -> types.FunctionType | None:
        """A function ``name(receiver, a1, ..., *, k)`` that returns ``spelled.name(a1, ..., k=k)``
        with ``spelled.name`` bound to ``held`` (a ufunc, a function with a rule, a Python
        function or a lambda): s2sad differentiates that call as any other."""
        if self.arity is None:
            return None
        count, keywords = self.arity
        taken = set(keywords) | {self.__name__}
        named = re.sub(r"\W+", "_", self.spelled).strip("_")  # (ACTS["sin"]: ACTS_sin, in messages)
        spelled = _fresh(named if named.isidentifier() else "receiver", taken)
        try:  # (a class method is a new bound method at each lookup, equal to the last)
            key: tuple[Any, ...] = (self.__name__, spelled, self.arity, held)
            known = _callings.get(key)
        except TypeError:  # unhashable: by identity (the entry keeps it alive)
            key = (self.__name__, spelled, self.arity, id(held))
            known = _callings.get(key)
            known = known if known is not None and known[0] is held else None
        if known is not None:
            return known[1]
        positional = [_fresh(f"a{i}", taken | {spelled}) for i in range(1, count + 1)]
        params = [_fresh("receiver", taken | {spelled, *positional}), *positional] + (
            ["*", *keywords] if keywords else [])
        args = positional + [f"{k}={k}" for k in keywords]
        text = f"def {self.__name__}({', '.join(params)}):\n    return {spelled}.{self.__name__}({', '.join(args)})\n"
        filename = f"{_CALLING} {spelled}.{self.__name__} #{len(_callings)}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        scope: dict[str, Any] = {spelled: types.SimpleNamespace(**{self.__name__: held})}
        defined: dict[str, Any] = {}  # (the def binds its name here: never the receiver's global)
        exec(compile(text, filename, "exec"), scope, defined)
        function = defined[self.__name__]
        _callings[key] = (held, function)
        return function


def transformed(fn: Any, chain: Chain, build: Build) -> Any:
    """The code generated for ``fn`` by each transformation of ``chain`` in turn.  What is
    active was decided by the code that calls it: no ZeroGradientWarning (at second order, a
    callable read back from a tape, the receiver, is an argument of the callee's gradient)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroGradientWarning)
        for wrt, kind, split in chain:
            fn = build(fn, wrt, kind, split=split)
    return fn


def _fresh(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... the first not in ``taken`` (nor a Python keyword)."""
    out, k = name, 1
    while out in taken or keyword.iskeyword(out):
        k += 1
        out = f"{name}_{k}"
    return out


Arity = tuple[int, tuple[str, ...]]  # a call's positional arguments (how many) and keywords
_CALLING = "<s2sad calling"
_callings: dict[tuple[Any, ...], tuple[Any, types.FunctionType]] = {}


class Dispatch:
    """What generated code calls for ``self.name(...)``: the code generated for the
    instance's method, chosen at each call."""

    def __init__(self, method: MethodOfSelf, build: Build) -> None:
        self.method = method
        self.build = build
        kinds = [kind for _, kind, _ in method.chain]
        self.receiver = kinds.count("vjp")  # a vjp's first argument is the cotangent
        last = kinds[-1]
        prefix = "forward" if last == "split" else last.removeprefix("callee_")
        self.__name__ = f"{prefix}_{method.__name__}"
        found = "type(self)" if method.after is None else f"super({method.after.__name__}, self)"
        self.__s2sad_source__ = (f"# {self.__name__}: calls the code generated for "
                                 f"{found}.{method.__name__}, chosen when it is called\n")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        receiver, out = self.method.generated_for(args[self.receiver], self.build)
        args = (*args[:self.receiver], receiver, *args[self.receiver + 1:])
        if self.method.chain[-1][1] == "jvp":  # the tangent, passed by keyword
            kwargs[tangent_parameter(out)] = kwargs.pop("tangent")
        return out(*args, **kwargs)


_dispatchers: dict[tuple[Any, ...], Dispatch] = {}


class RecursiveCall:
    """A recursive call in generated code: the code generated for ``fn`` (transformed in turn
    by each ``(wrt, kind, split)`` of ``chain``), looked up when called, since it is being
    generated when the call is compiled.  Each activation of the generated code keeps its own
    tape.  Code that calls it can be differentiated again: its chain then grows by one."""

    _depth = threading.local()  # recursive calls running in this thread

    def __init__(self, fn: types.FunctionType, chain: Chain, build: Build) -> None:
        self.fn = fn
        self.chain = chain
        self.build = build
        lambda_name = read_source(fn).lambda_name  # a lambda is named by the name it is bound to
        self.shown = lambda_name or fn.__qualname__
        name = lambda_name or fn.__name__
        params = inspect.signature(fn).parameters
        for i, (wrt, kind, _) in enumerate(chain):  # the name the generated code has
            name = generated_name(name, wrt, kind, params if i == 0 else None)
        self.__name__ = name
        self.__s2sad_source__ = (f"# {self.__name__}: calls the code generated for "
                                 f"{self.shown} (a recursive call)\n")
        self.__signature__ = _generated_signature(fn, chain)

    def adjoint(self, wrt: tuple[str, ...], kind: str, split: bool, build: Build) -> RecursiveCall:
        # the parameters of the generated code, by name or by position in the call
        items = tuple(int(p) if p.isdigit() else p for p in wrt)
        return recursive_call(self.fn, (*self.chain, (items if len(items) > 1 else items[0], kind, split)), build)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = transformed(self.fn, self.chain, self.build)
        if self.chain[-1][1] == "jvp":  # the tangent, passed by keyword
            kwargs[tangent_parameter(out)] = kwargs.pop("tangent")
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


def _generated_signature(fn: types.FunctionType, chain: Chain) -> inspect.Signature:
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


_recursions: weakref.WeakKeyDictionary[types.FunctionType, dict[Chain, RecursiveCall]] = (
    weakref.WeakKeyDictionary())


def recursive_call(fn: types.FunctionType, chain: Chain, build: Build) -> RecursiveCall:
    """The one :class:`RecursiveCall` for ``fn`` and ``chain`` (generated code names each callee once)."""
    known = _recursions.setdefault(fn, {})
    if chain not in known:
        known[chain] = RecursiveCall(fn, chain, build)
    return known[chain]


def _definition(fn: types.FunctionType) -> Location:
    """Where ``fn`` is defined: its ``def`` line."""
    code = fn.__code__
    return Location(code.co_filename, code.co_firstlineno, 1,
                    linecache.getline(code.co_filename, code.co_firstlineno))
