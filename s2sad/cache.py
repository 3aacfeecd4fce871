"""What a generated function depends on, and the check that it still holds.

Generated code is specialised to the objects its function's names denoted when it was
generated: the rule of ``np.tanh`` (found through the global ``np``), the adjoint of a
helper ``act`` (compiled from the helper then bound to that name), the defaults it was
made with.  A :data:`Check` records one such read; a generated function is reused only
while all of its checks hold.  Objects s2sad resolved (functions, modules, classes,
dtypes) are compared by identity, so a redefined helper or a rebound global means new
code even when the new function's code object equals the old one (a re-run notebook
cell).  Data (arrays, numbers, lists, dicts, tuples) is read live by the generated code,
so only its type is checked: rebinding a global array does not regenerate anything.
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from .sentinel import MISSING

if TYPE_CHECKING:
    from .passes.resolve import Resolution

SAME, TYPE, EQUAL = 0, 1, 2  # how a value is compared with the one generation read

#: ``(where, key, expected, how)``: ``where.get(key)`` for a dict (globals, a module's
#: namespace), ``getattr(where, key)`` otherwise (a closure cell, a function's defaults).
Check = tuple[Any, Any, Any, int]

_DATA = (np.ndarray, np.generic, int, float, complex, list, dict, tuple)


def _expect(value: Any) -> tuple[Any, int]:
    if isinstance(value, _DATA):
        return type(value), TYPE
    if type(value) is str:
        return value, EQUAL
    return value, SAME


def holds(checks: tuple[Check, ...]) -> Callable[[], bool]:
    """A function telling whether every check still sees what generation saw: one
    expression of a few identity comparisons (compiled once per shape of checks)."""
    shape = tuple((key, -1 if expected is MISSING else how, type(where) is dict)
                  for where, key, expected, how in checks)
    factory = _FACTORIES.get(shape)
    if factory is None:
        factory = _FACTORIES[shape] = _factory(checks)
    return factory(*(x for where, _, expected, _ in checks for x in (where, expected)), MISSING)


def _factory(checks: tuple[Check, ...]) -> Callable[..., Callable[[], bool]]:
    terms = []
    for i, (where, key, expected, how) in enumerate(checks):
        if type(where) is dict and expected is MISSING:
            terms.append(f"{key!r} not in w{i}")
            continue
        if type(where) is dict:
            now = f"w{i}[{key!r}]"
        elif expected is MISSING:
            now = f"getattr(w{i}, {key!r}, MISSING)"
        else:
            now = f"w{i}.{key}"  # an attribute name: a function's, a closure cell's, a class's
        terms.append(f"{now} is e{i}" if how == SAME else f"type({now}) is e{i}" if how == TYPE
                     else f"type(v := {now}) is str and v == e{i}")
    params = "".join(f"w{i}, e{i}, " for i in range(len(checks)))
    source = (f"def factory({params}MISSING):\n"
              f"    def holds():\n"
              f"        try:\n"
              f"            return {' and '.join(terms) or 'True'}\n"
              f"        except (KeyError, AttributeError, ValueError):  # a name deleted, a cell emptied\n"
              f"            return False\n"
              f"    return holds\n")
    namespace: dict[str, Any] = {}
    exec(compile(source, "<s2sad cache check>", "exec"), namespace)
    return namespace["factory"]


def hold(checks: Iterable[Check]) -> bool:
    """Whether every check holds now (for a one-off check: :func:`holds` compiles)."""
    try:
        for where, key, expected, how in checks:
            now = where.get(key, MISSING) if type(where) is dict else getattr(where, key, MISSING)
            if now is not expected and (how == SAME or how == TYPE and type(now) is not expected
                                        or how == EQUAL and (type(now) is not str or now != expected)):
                return False
    except ValueError:  # a closure cell emptied
        return False
    return True


_FACTORIES: dict[tuple[Any, ...], Callable[..., Callable[[], bool]]] = {}


def own_checks(fn: types.FunctionType) -> tuple[Check, ...]:
    """The function's code and defaults: generated code is made from the one and copies
    the other."""
    checks: list[Check] = [(fn, "__code__", fn.__code__, SAME), (fn, "__defaults__", fn.__defaults__, SAME),
                           (fn, "__kwdefaults__", fn.__kwdefaults__, SAME)]
    if "__wrapped__" in vars(fn):  # a wrapper is compiled with the wrapped function's parameters
        checks.append((vars(fn), "__wrapped__", fn.__wrapped__, SAME))
    if fn.__kwdefaults__:  # a dict: it can also change in place
        checks += [(fn.__kwdefaults__, k, v, SAME) for k, v in fn.__kwdefaults__.items()]
    return tuple(checks)


def relative_checks(fn: types.FunctionType, res: Resolution) -> tuple[tuple[str, Any, Any, int], ...]:
    """The free names generation resolved, as checks that hold for any function with the
    same code: ``("global", name, ...)`` or ``("closure", index, ...)``."""
    freevars = fn.__code__.co_freevars
    out = []
    for free in res.free.values():
        expected, how = _expect(free.value)
        if free.kind == "closure":
            out.append(("closure", freevars.index(free.name), expected, how))
        elif free.kind == "global":
            out.append(("global", free.name, expected, how))
        elif free.kind in ("import", "alias", "argument"):  # bound by the function (or its caller)
            continue
        else:  # a builtin, or nothing: until a global of that name is defined
            out.append(("global", free.name, MISSING, SAME))
    return tuple(out)


def bind(fn: types.FunctionType, relative: Iterable[tuple[str, Any, Any, int]]) -> tuple[Check, ...]:
    """``relative`` checks, made concrete for ``fn``."""
    cells = fn.__closure__ or ()
    return tuple((fn.__globals__, key, expected, how) if kind == "global"
                 else (cells[key], "cell_contents", expected, how)
                 for kind, key, expected, how in relative)


def absolute_checks(res: Resolution, callees: Iterable[Any]) -> tuple[Check, ...]:
    """Attribute chains through modules, classes and instances (``helpers.act``,
    ``np.linalg.norm``, ``config.act``), and everything the callees' generated code depends on."""
    checks: list[Check] = []
    for base, attr, value in res.attributes:
        expected, how = _expect(value)
        if isinstance(base, types.ModuleType) and vars(base).get(attr, MISSING) is value:
            checks.append((vars(base), attr, expected, how))
        elif isinstance(base, (types.ModuleType, type)) and (how != SAME or getattr(base, attr, MISSING) is value):
            # (not a classmethod, say: it is a new object each time it is read)
            checks.append((base, attr, expected, how))
        elif not isinstance(base, (types.ModuleType, type, *_DATA)):  # an instance: a config, a model
            if getattr(base, attr, MISSING) is value:
                checks.append((base, attr, expected, how))
            elif isinstance(value, types.MethodType) and value.__self__ is base:
                # a method: the class's function, and no instance attribute hiding it
                checks.append((type(base), attr, value.__func__, SAME))
                if isinstance(getattr(base, "__dict__", None), dict):
                    checks.append((vars(base), attr, MISSING, SAME))
    for callee in callees:
        checks += getattr(callee, "__s2sad_checks__", ())
    return tuple(checks)


def merge(*groups: tuple[Check, ...]) -> tuple[Check, ...]:
    """The checks of all groups, each read once."""
    seen: dict[tuple[int, Any], Check] = {}
    for group in groups:
        for check in group:
            seen.setdefault((id(check[0]), check[1]), check)
    return tuple(seen.values())
