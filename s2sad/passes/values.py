"""Facts about the values of a normalized function, known at generation time, that the
derivative generators (reverse, forward) and the optimizer share: which variables certainly
hold scalars, whether a call converts its result's dtype, whether code is a number."""
from __future__ import annotations

import ast
import builtins
import functools
import operator
from typing import Any

import libcst as cst
import numpy as np

from .. import runtime
from ..errors import S2SADError
from ..ir import (Assign, Call, Const, Function, If, Loop, Opaque, Operand, Stmt, Var, assigns,
                  display_node)
from ..rules.complex_rules import COMPLEX_AS_X, COMPLEX_RESULTS, REAL_RESULTS
from ..rules.registry import REGISTRY


def converts(stmt: Assign, v: Call, fn: Function) -> bool:
    """Whether the call converts its result with a ``dtype=`` argument that may not be a
    float dtype, so that the generated code must check the result's dtype before passing a
    gradient through.  A dtype known at generation time is checked here: an integer or
    boolean one is an error where a gradient reaches it."""
    dtype = v.args.get("dtype")
    if dtype is None or isinstance(dtype, Const) and dtype.code == "None":
        return False
    if isinstance(dtype, Var) or dtype.reads:
        return True
    try:
        to = np.dtype(eval(dtype.code, {"__builtins__": builtins}, dict(fn.free)))
    except Exception:  # noqa: BLE001 - not a dtype known here: checked when the code runs
        return True
    if to.kind not in "fc":
        raise S2SADError(
            f"a gradient reaches {v.callee}(..., dtype={dtype.code}), a conversion to {to}, "
            f"which is not differentiable; use a float dtype, or wrap the call in "
            f"stop_gradient(...)", stmt.loc)
    return False


@functools.lru_cache(maxsize=4096)
def is_number(code: str) -> bool:
    try:
        value = ast.literal_eval(code)
    except (ValueError, SyntaxError):
        return False
    return type(value) in (int, float)


FULL_REDUCTIONS = {id(f) for f in (np.sum, np.mean, np.max, np.min, np.amax, np.amin,
                                    np.ndarray.sum, np.ndarray.mean, np.ndarray.max,
                                    np.ndarray.min, builtins.float)}


def scalars(stmts: list[Stmt], params: tuple[str, ...]) -> set[str]:
    """Variables that certainly hold scalars: full reductions, numbers, and elementwise
    functions of scalars (every definition of the name must qualify; a parameter's value
    is not known)."""
    definitions: dict[str, list[Any]] = {}
    for s in assigns(stmts):
        for t in s.targets:
            definitions.setdefault(t, []).append(s.value if isinstance(s.target, str) else None)

    def scalar(value: Any, known: set[str]) -> bool:
        if isinstance(value, Var):
            return value.name in known
        if isinstance(value, Const):
            return is_number(value.code)
        if isinstance(value, Opaque):  # a size: x.shape[0], len(x)
            node = value.node
            return (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute)
                    and node.value.attr.value == "shape") or (
                isinstance(node, cst.Call) and isinstance(node.func, cst.Name)
                and node.func.value == "len")
        if isinstance(value, Call) and value.rule is not None:
            args = value.args
            if id(value.rule.fun) in FULL_REDUCTIONS:
                axis, keepdims = args.get("axis", Const("None")), args.get("keepdims", Const("False"))
                return isinstance(axis, Const) and axis.code == "None" and isinstance(
                    keepdims, Const) and keepdims.code == "False"
            if value.rule.elementwise:
                return all(isinstance(op, Const) and is_number(op.code) or
                           isinstance(op, Var) and op.name in known for op in args.values())
        return False

    known = set(definitions) - set(params)
    changed = True
    while changed:  # (in program order: one pass settles code without loops)
        changed = False
        for n in definitions:
            if n in known and not all(scalar(v, known) for v in definitions[n]):
                known.discard(n)
                changed = True
    return known


def complex_values(fn: Function, stmts: list[Stmt]) -> set[str]:
    """Variables that may hold complex values: results of the FFTs, and of functions of
    complex literals, complex globals or such variables (but for those whose result is real:
    abs, real, imag, angle, the inverse real FFTs)."""
    found: set[str] = set()
    size = -1
    while size != len(found):  # a loop may carry a complex value around
        size = len(found)
        for s in assigns(stmts):
            if isinstance(s.target, str) and _makes_complex(fn, s.value, found):
                found.add(s.target)
    return found


def surely_complex_values(fn: Function, stmts: list[Stmt]) -> set[str]:
    """Variables that hold complex values on every path: each of their assignments (a loop's
    first value too) makes one, as :func:`complex_values` decides."""
    found = {s.target for s in assigns(stmts) if isinstance(s.target, str)}
    changed = True
    while changed:  # the largest such set: drop those with a real definition, in program order
        changed = False
        for s in assigns(stmts):
            if s.target in found and not _makes_complex(fn, s.value, found, surely=True):
                found.discard(s.target)
                changed = True
    return found


def _makes_complex(fn: Function, value: Any, found: set[str], surely: bool = False) -> bool:
    """Whether ``value`` is complex when the variables ``found`` are (``surely``: a gradient in
    the type of its argument x only when x is)."""
    def complex_operand(op: Operand) -> bool:
        if isinstance(op, Var):
            return op.name in found
        return isinstance(op, Const) and (_has_complex_literal(op.code) or any(
            np.iscomplexobj(fn.free[n]) for n in op.reads if n in fn.free and not callable(fn.free[n])))

    if isinstance(value, Var):
        return value.name in found
    if surely and isinstance(value, Call) and _function_key(value) in COMPLEX_AS_X:
        return "x" in value.args and complex_operand(value.args["x"])
    return isinstance(value, Call) and value.rule is not None and _function_key(value) not in REAL_RESULTS and (
        _function_key(value) in COMPLEX_RESULTS or any(map(complex_operand, value.args.values())))


def _function_key(call: Call) -> int:
    """The registry key of the function ``call`` applies: for ``x.real`` read on what may be a
    record (``attribute_of(x, 'real', where)``), the array attribute's."""
    if call.rule is not None and call.rule.fun is runtime.attribute_of and isinstance(
            name := call.args.get("name"), Const):
        attribute = getattr(np.ndarray, ast.literal_eval(name.code), None)
        if attribute is not None:
            return REGISTRY.key(attribute)
    return REGISTRY.key(call.rule.fun if call.rule is not None else None)


@functools.lru_cache(maxsize=4096)
def _has_complex_literal(code: str) -> bool:
    if "j" not in code:
        return False
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return False
    steps = {id(n.args[2]) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "slice" and len(n.args) == 3}  # np.r_[0:1:5j]: a count, not a value
    steps |= {id(n.step) for n in ast.walk(tree) if isinstance(n, ast.Slice) and n.step is not None}
    return any(isinstance(n, ast.Constant) and isinstance(n.value, complex) and id(n) not in steps
               for n in ast.walk(tree))


def shape_classes(stmts: list[Stmt], params: tuple[str, ...], scalars: set[str]) -> dict[str, str]:
    """For variables whose shape certainly equals another's: that variable (a representative).

    A parameter or a variable assigned once represents itself; an elementwise function of
    one operand, and a broadcasting operator whose operands share a representative (or are
    numbers and scalars), has its operands' representative.  Variables assigned more than
    once (loops, branches) have none, nor does anything computed from them.
    """
    definitions: dict[str, list[Any]] = {}
    for s in assigns(stmts):
        for t in s.targets:
            definitions.setdefault(t, []).append(s.value if isinstance(s.target, str) else None)
    classes: dict[str, str] = {p: p for p in params if p not in definitions}

    def number(op: Operand) -> bool:
        return isinstance(op, Const) and is_number(op.code) or isinstance(op, Var) and op.name in scalars

    def of(value: Any) -> str | None:
        if isinstance(value, Var):
            return classes.get(value.name)
        if not isinstance(value, Call) or value.rule is None:
            return None
        rule = value.rule
        if rule.broadcast:
            operands = [value.args[p] for p in rule.broadcast if p in value.args]
        elif rule.elementwise and (isinstance(rule.fun, np.ufunc) or rule.fun in (operator.neg, operator.pos)):
            operands = list(value.args.values())
        else:
            return None
        found = {classes.get(op.name) if isinstance(op, Var) else None
                 for op in operands if not number(op)}
        return found.pop() if len(found) == 1 else None

    for s in assigns(stmts):
        if isinstance(s.target, str) and len(definitions[s.target]) == 1:
            classes[s.target] = of(s.value) or s.target
    return classes


def structural(stmts: list[Stmt], params: tuple[str, ...]) -> set[str]:
    """Variables that may hold tuples, lists or dicts: their adjoints add leaf by leaf.

    A variable is one if code uses it as a container (indexes, unpacks, appends to,
    stacks it, or passes it to a Python function) and it may be one: a parameter,
    or a value that indexing, unpacking, a display or a call produced.  Results of
    NumPy functions and arithmetic are arrays.
    """
    used: set[str] = set()
    maybe: set[str] = set(params)
    copies: list[tuple[str, str]] = []
    for s in assigns(stmts):
        v = s.value
        if isinstance(s.target, tuple) and isinstance(v, Var):
            used.add(v.name)
            maybe.update(s.targets)
        elif isinstance(v, Var) and isinstance(s.target, str):
            copies.append((s.target, v.name))
        elif isinstance(v, Call):
            if v.function is not None:
                used.update(op.name for op in v.args.values() if isinstance(op, Var))
                maybe.update(s.targets)
            elif v.rule is not None:
                used.update(op.name for p, op in v.args.items()
                            if isinstance(op, Var) and p in v.rule.containers)
                if v.rule.returns_container:
                    maybe.update(s.targets)
        elif isinstance(v, Const) and v.code[:1] in "([{":
            maybe.update(s.targets)
    for names in (used, maybe):
        while True:
            size = len(names)
            for a, b in copies:
                if a in names or b in names:
                    names |= {a, b}
            if len(names) == size:
                break
    return used & maybe


def bound_before(stmts: list[Stmt], bound: set[str], found: dict[int, frozenset[str]]) -> set[str]:
    """Record in ``found`` the names surely bound before each if and loop; return those bound after ``stmts``."""
    for s in stmts:
        if isinstance(s, Assign):
            bound |= set(s.targets)
        elif isinstance(s, If):
            found[id(s)] = frozenset(bound)
            bound |= bound_before(s.body, set(bound), found) & bound_before(s.orelse, set(bound), found)
        elif isinstance(s, Loop):
            found[id(s)] = frozenset(bound)
            bound_before(s.body, bound | set(s.targets), found)
    return bound


def sequences(stmts: list[Stmt]) -> set[str]:
    """Variables that hold a tuple or list display (``ys = [a, 2 * b]``), and their copies.

    A NumPy function reads such a value as the array NumPy makes of it, and so do the
    templates of its rule (``balanced_eq(ys, ans, 0.1)`` for ``np.maximum(ys, 0.1)``), which
    get ``np.asarray(ys)``: the runtime helpers they call take arrays.
    """
    found: set[str] = set()
    copies: list[tuple[str, str]] = []
    for s in assigns(stmts):
        v = s.value
        if not isinstance(s.target, str):
            continue
        if isinstance(display_node(v), (cst.List, cst.Tuple)):
            found.add(s.target)
        elif isinstance(v, Const) and v.code[:1] in "([":
            found.add(s.target)
        elif isinstance(v, Var):
            copies.append((s.target, v.name))
    while True:
        size = len(found)
        found |= {a for a, b in copies if b in found}
        if len(found) == size:
            return found


def reads_arrays(fun: Any) -> bool:
    """Whether ``fun`` (a rule's function) is NumPy's or SciPy's, which read a list argument as an array."""
    if isinstance(fun, np.ufunc):
        return True
    module = getattr(fun, "__module__", None) or getattr(getattr(fun, "__objclass__", None), "__module__", "") or ""
    return module.split(".")[0] in ("numpy", "scipy")


def as_arrays(v: Call, seqs: set[str], use: Any) -> dict[str, str]:
    """The differentiable operands of NumPy's or SciPy's ``v`` that are tuple or list
    displays, as its rule's templates read them: ``np.asarray(ys)`` (the helpers they call
    take arrays).  The others (an ``axis=`` tuple) are passed as they are, as to NumPy."""
    if not seqs or v.rule is None or not reads_arrays(v.rule.fun):
        return {}
    differentiable = set(v.rule.vjps) | set(v.rule.jvps) | set(v.rule.forward_only)
    return {p: f"{use('np')}.asarray({op.name})" for p, op in v.args.items()
            if isinstance(op, Var) and op.name in seqs and p not in v.rule.containers and p in differentiable}
