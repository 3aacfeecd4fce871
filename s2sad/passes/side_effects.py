"""Calls s2sad runs without differentiating them, and the state they may change.

A Python function called with values that carry a gradient, whose result the output does
not need, is run as written and never compiled, so nothing refuses what it does to state its
caller reads later (``self.total += t``, ``out[0] = v``, ``items.append(v)``): the gradient of
what it stored would be silently lost.  :func:`state_change` reads such a function's source
(and that of the module-level functions it calls by name) for statements that change state
outside it.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any, Callable

import libcst as cst

from ..errors import GENERATED_LINES, UnsupportedSyntaxError
from ..ir import Assign, Call, Function, If, Loop, Opaque, Raw, Return, operand_reads, reads, statements
from .callees import unwrap
from .normalize.syntax import walk
from .source import library_function

#: Methods that change their object in place (lists, dicts, sets, arrays).
_MUTATING = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                       "sort", "reverse", "fill", "resize", "popitem", "add", "discard", "itemset",
                       "put", "setflags", "__setitem__", "__iadd__", "__imul__"})
#: Methods of arrays, lists and dicts that change nothing (any other method of an object the
#: function is passed may change it: ``box.store(v)``).
_READING = frozenset({"sum", "mean", "max", "min", "std", "var", "prod", "cumsum", "cumprod", "copy",
                      "reshape", "ravel", "flatten", "transpose", "swapaxes", "squeeze", "astype", "dot",
                      "clip", "round", "conj", "conjugate", "tolist", "item", "any", "all", "argmax",
                      "argmin", "argsort", "nonzero", "diagonal", "trace", "view", "get", "keys", "values",
                      "items", "count", "index", "__len__", "__getitem__", "__contains__",
                      # a random generator's draws: the state they change carries no gradient
                      "random", "normal", "uniform", "integers", "choice", "permutation", "standard_normal",
                      "binomial", "poisson", "exponential", "beta", "gamma", "laplace", "logistic",
                      "lognormal", "multinomial", "multivariate_normal", "dirichlet", "geometric",
                      "rand", "randn", "randint", "random_sample", "standard_t", "chisquare"})
#: What an expression statement may call without changing its arguments.
_HARMLESS_ROOTS = frozenset({"print", "warnings", "logging", "log", "logger"})


def check_callee_effects(fn: Function, stmts: list[Assign], varied: set[str], useful: set[str],
                         flows: Callable[[Assign], tuple[str, ...]]) -> None:
    """A Python function passed values that carry a gradient, whose result the output does not
    need, runs as written, never compiled: one that may change state its caller reads later
    (an object's attribute, an argument in place) is an error, rather than a lost gradient."""
    read = {n for s in statements(fn.body) for n in _statement_reads(s)}
    for stmt in stmts:
        v = stmt.value
        if isinstance(v, Opaque) and any(n in varied for n in v.reads):
            _check_kept_whole(fn, v, stmt)
        if not isinstance(v, Call) or v.function is None or any(t in useful for t in stmt.targets):
            continue
        if not any(n in varied for n in flows(stmt)):
            continue
        callee = unwrap(v.function)
        if isinstance(callee, types.FunctionType):
            what = state_change(callee)
        elif getattr(callee, "__name__", None) in _MUTATING:  # (ys.reverse(), d.update(...))
            what = f"'{v.callee}(...)' changes its object in place: write the change as an assignment"
        else:  # (a method found as the code runs)
            what = None if any(t in read for t in stmt.targets) else "its result is unused"
        if what is not None:
            _refuse(v.callee, what, stmt)


def _check_kept_whole(fn: Function, value: Opaque, stmt: Assign) -> None:
    """The Python functions called by name in an expression that carries no gradient (a
    comparison, ``stop_gradient(...)``), which runs as written: an error where one changes an
    argument in place (what it does to other state, no gradient was asked to follow)."""
    for node in walk(value.node):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            what = state_change(fn.free.get(node.func.value), arguments_only=True)
            if what is not None:
                _refuse(node.func.value, what, stmt)


def _refuse(callee: str, what: str, stmt: Assign) -> None:
    raise UnsupportedSyntaxError(
        f"{callee}(...) is passed values that carry a gradient, but the output does not depend on "
        f"its result, so s2sad runs it without differentiating it; it may change state read later "
        f"({what}), whose gradient s2sad would not follow: return what it changes and use the "
        f"result, or wrap the arguments in stop_gradient(...)", stmt.loc)


def _statement_reads(stmt: Any) -> tuple[str, ...]:
    if isinstance(stmt, Assign):
        return reads(stmt.value)
    if isinstance(stmt, (Return, If)):
        return operand_reads(stmt.value if isinstance(stmt, Return) else stmt.test)
    return tuple(stmt.reads) if isinstance(stmt, (Loop, Raw)) else ()


def state_change(fn: Any, arguments_only: bool = False) -> str | None:
    """Where ``fn``, or a Python function it calls by name, may change state its caller sees
    ('file:line: what'), or only its arguments with ``arguments_only``; None where its source
    shows no such statement (or cannot be read)."""
    return _scan(fn, set(), arguments_only)


def _scan(fn: Any, seen: set[int], arguments_only: bool) -> str | None:
    if not isinstance(fn, types.FunctionType) or library_function(fn) or id(fn) in seen \
            or fn.__code__.co_filename in GENERATED_LINES:  # (s2sad's own code: a gradient grad(f) made)
        return None
    seen.add(id(fn))
    try:
        lines, first = inspect.getsourcelines(fn.__code__)
        tree: ast.AST = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    if fn.__name__ == "<lambda>":  # (its lines hold the statement around it too: f = lambda ...)
        tree = ast.Module([ast.Expr(n) for n in ast.walk(tree) if isinstance(n, ast.Lambda)], [])
    where = f"{fn.__code__.co_filename}:"
    arguments = {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    objects = {n for n, v in fn.__globals__.items() if not isinstance(v, (types.ModuleType, type, types.FunctionType))}
    locals_ = _fresh_locals(tree)
    # (what it may change: anything not made in it, or only what it is passed)
    outside = (arguments if arguments_only else None, locals_)
    receivers = (arguments | (set() if arguments_only else objects)) - locals_
    for node in ast.walk(tree):
        what = _changes(node, outside) or _method_of(node, receivers)
        if what is not None:
            return f"{where}{first + node.lineno - 1}: {what}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called = fn.__globals__.get(node.func.id)
            found = _scan(called, seen, arguments_only)
            if found is not None:
                return found
    return None


def _fresh_locals(tree: ast.AST) -> set[str]:
    """Names the function binds only to new objects (a call's result, a display, arithmetic):
    writing into them changes nothing the caller sees."""
    fresh: set[str] = set()
    aliased: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            new = not isinstance(node.value, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred))
            for target in node.targets:
                if isinstance(target, ast.Name):
                    (fresh if new else aliased).add(target.id)
        elif isinstance(node, (ast.For, ast.comprehension, ast.NamedExpr)):
            aliased.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            aliased.update(n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name))
    return fresh - aliased


def _method_of(node: ast.AST, receivers: set[str]) -> str | None:
    """A call of a method of an object the function is passed or reads (a parameter, a global
    object) that is not known to change nothing."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr not in _READING \
            and _root(node.func) in receivers:
        return f"'{ast.unparse(node.func)}(...)', a method that may change its object"
    return None


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _changes(node: ast.AST, outside: tuple[set[str] | None, set[str]]) -> str | None:
    """What ``node`` changes outside the function, in words; None if nothing.  ``outside``:
    the names whose objects count (None: any), and those the function made itself."""
    only, fresh = outside

    def seen(root: str | None) -> bool:
        return root not in fresh and (only is None or root in only)

    if isinstance(node, (ast.Global, ast.Nonlocal)) and only is None:
        return f"'{type(node).__name__.lower()}'"
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, (ast.Attribute, ast.Subscript)) and seen(_root(t)):
                    return f"a write into '{ast.unparse(t)}'"
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and seen(node.target.id):
            return f"'{ast.unparse(node)}', in place on a list or an array"
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        root = _root(node.value.func)
        if root not in _HARMLESS_ROOTS and seen(root):
            return f"the call '{ast.unparse(node.value)}', which may change its arguments"
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _MUTATING and seen(_root(func)):
            return f"'{ast.unparse(func)}(...)', which changes its object"
        if any(k.arg == "out" for k in node.keywords):
            return f"'out=' in '{ast.unparse(node)}'"
    return None
