"""Pass 5: activity analysis.

A variable is *varied* if it depends on a ``wrt`` argument through
differentiable operations (forward sweep), *useful* if the return value
depends on it through differentiable operations (backward sweep), and
*active* if both.  Adjoint code is generated for active variables only.
``stop_gradient(...)``, non-differentiable functions and comparisons are never
varied, so nothing that only feeds them is useful.

Soundness is checked here: in a statement the output depends on, every varied value
must reach the result through a parameter its rule differentiates, or one the rule
declares inert (an axis, a shape, a condition).  Any other use -- an index, a subscript
of an object that is not an array, a rule parameter without a template -- would drop a
gradient silently, so it is a located error.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import operator
import textwrap
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import numpy as np

from ..errors import Location, NoGradientRuleError, ZeroGradientWarning
from ..ir import (Assign, Call, Const, Function, Loop, Opaque, Operand, Return, Var, assigns, display_node, operand_reads,
                  reads)
from ..rules.registry import APPEND, SETITEM, Rule
from ..tracebacks import user_stacklevel
from .side_effects import check_callee_effects


@dataclass
class Activity:
    varied: set[str]
    useful: set[str]
    active: set[str]
    #: Statements where a varied value enters stop_gradient or a non-differentiable operation.
    cuts: list[tuple[Location, str, tuple[str, ...]]] = field(default_factory=list)
    forward: bool = False  # forward mode: tangents flow through forward-only parameters too


def _differentiated(rule: Rule, forward: bool) -> set[str]:
    """The parameters of ``rule`` a gradient (forward: a tangent) flows through."""
    return rule.differentiable() if forward else set(rule.vjps)


def _flows(stmt: Assign, forward: bool = False) -> tuple[str, ...]:
    """The variables whose gradient may flow into ``stmt``'s targets."""
    value = stmt.value
    if isinstance(value, Var):
        return (value.name,)
    if isinstance(value, Call):
        if value.rule is None:
            return reads(value) if value.function is None else tuple(
                n for op in value.args.values() for n in _var(op))
        through = _differentiated(value.rule, forward)
        return tuple(n for p, op in value.args.items() if p in through for n in _var(op))
    if isinstance(value, Opaque) and value.kind == "container":
        return value.reads
    return ()


def _code(op: Operand) -> str:
    return op.name if isinstance(op, Var) else op.code


def _var(op: object) -> tuple[str, ...]:
    return (op.name,) if isinstance(op, Var) else ()


def _varied(fn: Function, seeds: set[str], forward: bool = False, unpack: bool = True
            ) -> tuple[set[str], list[tuple[Location, str, tuple[str, ...]]]]:
    """Names that depend on ``seeds`` through differentiable operations (to a fixpoint,
    since a loop's phi copies feed its next iteration).  Unpacking a varied container
    (``a, i = pair``) varies every name it assigns, unless ``unpack`` is False: then only
    names that surely depend on ``seeds`` are varied (those unpacked from an array)."""
    varied = set(seeds)
    stmts = list(assigns(fn.body))
    constant = _constant_items(stmts)
    appended = _appended_positions(fn, stmts)
    if not unpack:
        arrays = _arrays(stmts, seeds)
        stmts = [s for s in stmts if not (isinstance(s.target, tuple) and isinstance(s.value, Var)
                                          and s.value.name not in arrays)]
    while True:
        size = len(varied)
        for stmt in stmts:
            if id(stmt) in appended:
                varied.update(t for t, names in zip(stmt.targets, appended[id(stmt)])
                              if any(n in varied for n in names))
            elif any(n in varied for n in _flows(stmt, forward)):
                varied.update(t for t in stmt.targets if t not in constant.get(id(stmt), ()))
        if len(varied) == size:
            break
    cuts = []
    for stmt in stmts:
        if not any(n in varied for n in _flows(stmt, forward)):
            blocked = tuple(n for n in reads(stmt.value) if n in varied)
            if blocked:
                kind = stmt.value.kind if isinstance(stmt.value, Opaque) else "nondiff"
                cuts.append((stmt.loc, kind, blocked))
    return varied, cuts


def _arrays(stmts: list[Assign], seeds: set[str]) -> set[str]:
    """The ``wrt`` arguments (whose leaves are all floating point), the names assigned once by
    a rule of arrays (``np.exp(theta)``, ``np.split(x, 2)``) and items of those: every name
    unpacked from them carries a gradient, where unpacking a tuple (``x, n = pair``) may give
    an integer."""
    counts = Counter(t for stmt in stmts for t in stmt.targets)
    found = {name for name in seeds if counts[name] == 0}
    size = -1
    while len(found) != size:
        size = len(found)
        for stmt in stmts:
            v = stmt.value
            if isinstance(stmt.target, str) and counts[stmt.target] == 1 and isinstance(v, Call) \
                    and v.rule is not None and v.rule.fun is not None and (not v.rule.containers or (
                        v.rule.fun is operator.getitem and isinstance(x := v.args.get("x"), Var)
                        and x.name in found)):
                found.add(stmt.target)
    return found


def _constant_items(stmts: list[Assign]) -> dict[int, frozenset[str]]:
    """The targets a statement reading a tuple, list or dict display assigned once gives a
    constant element of it (by id of the statement): ``t = c[k]``, or ``a, p = c``, with
    ``c = (x, 2.0)`` or ``{"v": x, "p": 2.0}``, or ``c = items[i]`` of a list of such tuples
    (``for v, p in [(x, 2.0), (y, 3.0)]``).  They are not varied by the display's other
    elements (``g(*args)`` passes ``args[1]``, a constant: its tangent, a zero, is no symbolic
    zero, and a rule's local derivative there may be NaN, as ``x ** p``'s in ``p`` for a
    negative ``x``)."""
    positions, sizes = _constant_positions(stmts)
    found: dict[int, frozenset[str]] = {}
    for stmt in stmts:
        v = stmt.value
        if isinstance(stmt.target, tuple) and isinstance(v, Var) and sizes.get(v.name) == len(stmt.target):
            found[id(stmt)] = frozenset(t for i, t in enumerate(stmt.target) if i in positions[v.name])
        elif isinstance(v, Call) and v.rule is not None and v.rule.fun is operator.getitem and isinstance(
                v.args.get("x"), Var) and v.args["x"].name in positions and isinstance(v.args.get("index"), Const):
            name = v.args["x"].name
            try:
                key = ast.literal_eval(v.args["index"].code)
            except (ValueError, SyntaxError):
                continue
            if isinstance(key, int) and key < 0 and name in sizes:
                key += sizes[name]
            if isinstance(key, (int, str)) and not isinstance(key, bool) and key in positions[name]:
                found[id(stmt)] = frozenset(stmt.targets)
    return found


def _appended_positions(fn: Function, stmts: list[Assign]) -> dict[int, list[tuple[str, ...]]]:
    """For each ``a, b, c = r`` of an item ``r = xs[i]`` of a list only ever built by appending
    tuple displays of its length to ``[]`` (a loop's tape in generated code), the variables
    each position may hold (by id of the statement): an inactive value saved beside active ones
    (a loop counter) is not varied by them when it is read back."""
    counts = Counter(t for stmt in stmts for t in stmt.targets)
    tuples = {stmt.target: list(stmt.value.args.values()) for stmt in stmts
              if counts[stmt.target] == 1 and isinstance(node := display_node(stmt.value), cst.Tuple)
              and len(node.elements) == len(stmt.value.args)
              and not any(isinstance(e, cst.StarredElement) for e in node.elements)}
    counters = {t for loop in _loops(fn.body) if loop.header.startswith("for ") and " in range(" in loop.header
                for t in loop.targets}
    items: dict[str, str] = {}  # r = xs[i] -> xs
    for stmt in stmts:
        v = stmt.value
        if isinstance(v, Call) and v.rule is not None and v.rule.fun is operator.getitem \
                and isinstance(xs := v.args.get("x"), Var) and counts[stmt.target] == 1 \
                and isinstance(i := v.args.get("index"), Const) and (i.code in counters or _integer(i)):
            items[stmt.target] = xs.name
    lists = _tape_lists(fn, stmts, tuples, items)
    found: dict[int, list[tuple[str, ...]]] = {}
    for stmt in stmts:
        v = stmt.value
        if isinstance(stmt.target, tuple) and isinstance(v, Var) and items.get(v.name) in lists:
            shown = [tuples[d] for d in lists[items[v.name]]]
            if shown and all(len(e) == len(stmt.target) for e in shown):
                found[id(stmt)] = [tuple(n for e in shown for n in _var(e[k])) for k in range(len(stmt.target))]
    return found


def _tape_lists(fn: Function, stmts: list[Assign], tuples: dict[str, list[Operand]],
                items: dict[str, str]) -> dict[str, set[str]]:
    """Each version of a list whose versions are only ``[]``, copies of each other, appends of
    the tuple displays ``tuples``, or read back from such a list's tuples (a nested loop's tape
    on its outer loop's) -> the displays appended to any of them (None: the list a branch that
    does not make it leaves unbound)."""
    def appends(v: Any) -> bool:
        return isinstance(v, Call) and v.rule is not None and v.rule.fun is APPEND and isinstance(
            v.args.get("xs"), Var) and isinstance(v.args.get("x"), Var) and v.args["x"].name in tuples

    group: dict[str, str] = {}  # a version -> its list's representative

    def find(n: str) -> str:
        while group.setdefault(n, n) != n:
            n = group[n]
        return n

    def shown() -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for stmt in stmts:
            if appends(stmt.value) and stmt.target in members:
                out.setdefault(find(stmt.target), set()).add(stmt.value.args["x"].name)
        return out

    links = [(stmt.target, stmt.value.args["xs"].name) if appends(stmt.value) else (stmt.target, stmt.value.name)
             for stmt in stmts if isinstance(stmt.target, str) and (appends(stmt.value) or isinstance(stmt.value, Var))]
    members = {t for stmt in stmts if appends(stmt.value) for t in (stmt.target, stmt.value.args["xs"].name)}
    while True:  # a copy of a version, or one a version copies, is a version
        grown = members | {n for a, b in links if {a, b} & members for n in (a, b)}
        if grown == members:
            break
        members = grown
    for a, b in links:
        if a in members:
            group[find(a)] = find(b)
    unpacked = [(t, k, items[stmt.value.name]) for stmt in stmts if isinstance(stmt.target, tuple)
                and isinstance(stmt.value, Var) and items.get(stmt.value.name) in members
                for k, t in enumerate(stmt.target) if t in members]
    invalid = {find(n) for n in members if n in fn.params or _assignments(stmts, n) == 0}
    displays = shown()
    for t, k, xs in unpacked:  # a list read back from position k of another's tuples is the lists put there
        there = [tuples[d][k] if k < len(tuples[d]) else None for d in displays.get(find(xs), ())]
        if there and all(isinstance(e, Var) and e.name in members for e in there):
            for e in there:
                group[find(t)] = find(e.name)
        else:
            invalid.add(find(t))
    displays, invalid = shown(), {find(n) for n in invalid}
    for stmt in stmts:
        for t in stmt.targets:
            v = stmt.value
            if t in members and not (appends(v) or isinstance(v, Var) and (v.name in members or isinstance(
                    stmt.target, tuple) and items.get(v.name) in members) or isinstance(v, Const) and v.code in ("[]", "None")):
                invalid.add(find(t))
    while True:  # read back from a list that is not one of these: not one either
        more = {find(t) for t, _, xs in unpacked if find(xs) in invalid} - invalid
        if not more:
            break
        invalid |= more
    return {n: displays.get(find(n), set()) for n in members if find(n) not in invalid}


def _assignments(stmts: list[Assign], name: str) -> int:
    """How many statements assign ``name``."""
    return sum(name in stmt.targets for stmt in stmts)


def _loops(stmts: list[Any]) -> list[Loop]:
    """Every loop in ``stmts``, nested ones included."""
    out = []
    for s in stmts:
        if isinstance(s, Loop):
            out += [s, *_loops(s.body)]
        elif hasattr(s, "orelse"):
            out += _loops(s.body) + _loops(s.orelse)
    return out


def _constant_positions(stmts: list[Assign]) -> tuple[dict[str, frozenset[Any]], dict[str, int]]:
    """For each display assigned once (and each item of a list of tuple displays of one
    length), the keys of its constant elements; and each tuple or list display's length."""
    counts = Counter(t for stmt in stmts for t in stmt.targets)
    positions: dict[str, frozenset[Any]] = {}  # name -> the keys of its constant elements
    sizes: dict[str, int] = {}  # a tuple or list display -> its length
    elements: dict[str, list[Operand]] = {}  # a list or tuple display -> its elements
    for stmt in stmts:
        v = stmt.value
        if not (isinstance(stmt.target, str) and counts[stmt.target] == 1 and isinstance(v, Call)):
            continue
        returned = _returned_numbers(v.function) if v.rule is None and v.function is not None else None
        if returned is not None:  # what a Python function returns: (mean, 2)
            sizes[stmt.target], positions[stmt.target] = returned
            continue
        node = display_node(v)
        if node is not None:
            items = list(node.elements)
            if len(items) != len(v.args) or any(
                    isinstance(e, (cst.StarredElement, cst.StarredDictElement)) for e in items):
                continue
            keys = [getattr(e.key, "evaluated_value", None) if isinstance(e, cst.DictElement) else i
                    for i, e in enumerate(items)]
            positions[stmt.target] = frozenset(k for k, e in zip(keys, v.args.values()) if isinstance(e, Const))
            if not isinstance(node, cst.Dict):
                sizes[stmt.target] = len(items)
                elements[stmt.target] = list(v.args.values())
        elif v.rule is not None and v.rule.fun is operator.getitem and isinstance(x := v.args.get("x"), Var) \
                and x.name in elements and (isinstance(v.args.get("index"), Var) or _integer(v.args.get("index"))):
            inner = elements[x.name]  # any item of a list of tuple displays: their common constants
            if inner and all(isinstance(e, Var) and e.name in sizes for e in inner) and len(
                    {sizes[e.name] for e in inner}) == 1:
                positions[stmt.target] = frozenset.intersection(*(positions[e.name] for e in inner))
                sizes[stmt.target] = sizes[inner[0].name]
    return positions, sizes


def _returned_numbers(fn: Any) -> tuple[int, frozenset[int]] | None:
    """For a function each of whose returns is a tuple display of one length: that length and
    the positions where each return has a number literal; None for any other function."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    returns, todo = [], list(tree.body[0].body)
    while todo:  # the function's own returns, not those of functions it defines
        node = todo.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return None
        if isinstance(node, ast.Return):
            returns.append(node.value)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    if not returns or not all(isinstance(r, ast.Tuple) and len(r.elts) == len(returns[0].elts)
                              and not any(isinstance(e, ast.Starred) for e in r.elts) for r in returns):
        return None
    numbers = frozenset(i for i in range(len(returns[0].elts)) if all(
        isinstance(r.elts[i], ast.Constant) and type(r.elts[i].value) in (int, float) for r in returns))
    return len(returns[0].elts), numbers


def _integer(index: object) -> bool:
    """Whether ``index`` is a name or an integer literal (not a slice)."""
    if not isinstance(index, Const) or index.code.isidentifier():
        return isinstance(index, Const)
    try:
        return type(ast.literal_eval(index.code)) is int
    except (ValueError, SyntaxError):
        return False


def analyze(fn: Function, wrt: tuple[str, ...], forward: bool = False, generated: bool = False) -> Activity:
    varied, cuts = _varied(fn, set(wrt), forward)
    ret = fn.body[-1]
    assert isinstance(ret, Return)
    useful = set(operand_reads(ret.value)) if isinstance(ret.value, Var) else set()
    stmts = list(assigns(fn.body))
    while True:
        size = len(useful)
        for stmt in reversed(stmts):
            if any(t in useful for t in stmt.targets):
                useful.update(_flows(stmt, forward))
        if len(useful) == size:
            break
    active = varied & useful
    surely, _ = _varied(fn, set(wrt), forward, unpack=False)
    for stmt in stmts:
        if any(t in active for t in stmt.targets):
            _check_differentiable(stmt, active)
        if any(t in useful for t in stmt.targets):
            _check_uses(stmt, surely, varied, forward)
    _check_float_writes(fn, stmts, surely, varied, active)
    _check_unused_calls(stmts, useful, active)
    _check_changed_in_place(stmts, active, varied)
    if not generated:  # (s2sad's own code calls what it differentiates for its effect on nothing)
        check_callee_effects(fn, stmts, varied, useful, _flows)
    return Activity(varied, useful, active, cuts, forward)


def _check_differentiable(stmt: Assign, active: set[str]) -> None:
    value = stmt.value
    if isinstance(value, Call) and value.rule is None and value.function is None:
        raise NoGradientRuleError(value.problem or f"no gradient rule for {value.callee}", stmt.loc)
    if isinstance(value, Opaque) and value.kind == "container":
        names = ", ".join(n for n in value.reads if n in active)
        raise NoGradientRuleError(
            f"a tuple or list holding values that carry a gradient ({names}) is not supported yet; "
            f"use np.stack or np.concatenate on arrays, or wrap the values in stop_gradient(...)",
            stmt.loc)


def _check_uses(stmt: Assign, varied: set[str], maybe: set[str], forward: bool) -> None:
    """Refuse a use of a varied value that no rule differentiates (the invariant above); a
    parameter the rule refuses is refused for a value that may be varied (``maybe``: unpacked
    from what a function returned, say) too."""
    value = stmt.value
    if not isinstance(value, Call) or value.rule is None:
        return
    rule = value.rule
    through = _differentiated(rule, forward)
    for p, op in value.args.items():
        if p in rule.refused and any(n in maybe for n in operand_reads(op)):  # (inert or not)
            raise NoGradientRuleError(f"{value.callee}: {rule.refused[p]}", stmt.loc)
        if p in rule.inert or p in through and isinstance(op, Var):
            continue
        if not any(n in varied for n in operand_reads(op)):
            continue
        if p in through:
            why = (f"argument '{p}' of {value.callee} is built from values that carry a gradient "
                   f"in a way s2sad does not differentiate yet; assign it to a variable first")
        elif p == "index" and rule.fun in (operator.getitem, SETITEM):
            subject = _code(value.args["x"])
            why = (f"the index of {subject}[...] is computed from values that carry a gradient, "
                   f"and s2sad passes no gradient through an index (nor through a subscript of an "
                   f"object that is not an array); wrap the index in stop_gradient(...) if no "
                   f"gradient should flow through it, or build the value with NumPy functions")
        else:
            why = (f"argument '{p}' of {value.callee} is computed from values that carry a "
                   f"gradient, but s2sad has no gradient rule for that argument (its gradient "
                   f"would be silently zero); wrap it in stop_gradient(...) if no gradient "
                   f"should flow through it")
        raise NoGradientRuleError(why, stmt.loc)


def _check_unused_calls(stmts: list[Assign], useful: set[str], active: set[str]) -> None:
    """A library call without a rule whose result the output does not need, passed a value
    whose gradient it does need (``r = B.sort()``, ``np.copyto(B, A)``), may change that value
    in place, which s2sad cannot see: an error rather than the gradient of the unchanged value."""
    for stmt in stmts:
        v = stmt.value
        if isinstance(v, Call) and v.rule is None and v.function is None and not any(
                t in useful for t in stmt.targets):
            names = [n for n in reads(v) if n in active]
            if names:
                raise NoGradientRuleError(
                    f"{v.callee} has no gradient rule and is passed {', '.join(names)}, which carries a "
                    f"gradient, and may change it in place, which s2sad cannot see; write the change "
                    f"as an assignment (B = np.sort(B), B[...] = ...), or wrap the argument in "
                    f"stop_gradient(...)", stmt.loc)


def _check_changed_in_place(stmts: list[Assign], active: set[str], varied: set[str]) -> None:
    """``np.random.shuffle(a)`` (a change in place without a rule) of a value whose gradient is
    needed, or ``self.last = h`` storing a value that carries a gradient (which reads of the
    attribute, anywhere later, would not carry): an error, not a gradient ignoring the change."""
    for stmt in stmts:
        v = stmt.value
        if not (isinstance(v, Opaque) and v.kind in ("changes", "stores")):
            continue
        if v.kind == "stores" and any(n in varied for n in v.reads):
            attribute = v.node.targets[0].target if isinstance(v.node, cst.Assign) else v.node.target
            raise NoGradientRuleError(
                f"the value stored in '{cst.Module([]).code_for_node(attribute).strip()}' carries a gradient, and "
                f"s2sad passes none through an attribute or a global variable; keep it in a local variable "
                f"(and return it as aux if it is needed outside)", stmt.loc)
        changed = [n for n in v.reads if n in active] if v.kind == "changes" else []
        if changed:
            a = changed[0]
            raise NoGradientRuleError(
                f"'{cst.Module([]).code_for_node(v.node).strip()}' changes {a} in place, and {a} carries a "
                f"gradient here, which would not follow the change; write {a} = {a}[rng.permutation(len({a}))] "
                f"(the permutation carries no gradient, indexing does), or shuffle an index array", stmt.loc)


def _check_float_writes(fn: Function, stmts: list[Assign], varied: set[str], maybe: set[str],
                        active: set[str]) -> None:
    """``x[i] = v`` with v varied and x of a dtype that is not floating point converts v (an
    integer truncates it): an error where x's dtype is known here, else a check the
    generated code runs (x varied is floating point, or its conversion is checked).  A v that
    may be varied (``maybe``: unpacked from what a function returned, say) is checked as the
    code runs, where an integer v is no value that carries a gradient."""
    defs: dict[str, list[Assign]] = {}
    for stmt in stmts:
        for t in stmt.targets:
            defs.setdefault(t, []).append(stmt)
    for stmt in stmts:
        v = stmt.value
        if not (isinstance(v, Call) and v.rule is not None and v.rule.fun is SETITEM
                and stmt.target in active and isinstance(v.args["v"], Var)
                and v.args["v"].name in maybe):
            continue
        x = v.args["x"]
        if isinstance(x, Var) and x.name in varied:
            continue
        dtype = _StaticDtype(fn, defs, varied).of(x)
        if isinstance(dtype, str) or dtype is not None and dtype.kind in "fcO":
            continue
        if dtype is not None and v.args["v"].name in varied:
            raise NoGradientRuleError(
                f"a value that carries a gradient is written into an array of dtype "
                f"{dtype}, which converts it, so it has no gradient; create the array "
                f"with a float dtype (for example np.zeros(n) or dtype=float), or write "
                f"stop_gradient(...) of the value", stmt.loc)
        v.float_check = f"{stmt.loc.filename}:{stmt.loc.line}:{stmt.loc.column}"


class _StaticDtype:
    """The dtype of a value where the code shows it ("list" for a list or tuple display), or
    None: array constructors and their dtype, copies; a varied value is floating point."""

    #: Array constructors and where their dtype may stand positionally (None: keyword only).
    _DTYPE_AT = ((np.zeros, 1), (np.ones, 1), (np.empty, 1), (np.eye, 3), (np.identity, 1),
                 (np.full, 2), (np.zeros_like, 1), (np.ones_like, 1), (np.empty_like, 1),
                 (np.full_like, 2), (np.array, 1), (np.asarray, 1), (np.arange, None),
                 (np.linspace, None))

    def __init__(self, fn: Function, defs: dict[str, list[Assign]], varied: set[str]) -> None:
        self.fn, self.defs, self.varied = fn, defs, varied
        self.seen: set[str] = set()

    def of(self, op: Operand) -> Any:
        if isinstance(op, Var):
            return self.name(op.name)
        return self.code(op.code)

    def name(self, name: str) -> Any:
        if name in self.varied:
            return np.dtype(float)
        if name in self.seen or name in self.fn.params or name not in self.defs:
            return None
        self.seen.add(name)
        kinds = {self.value(s.value) for s in self.defs[name]}
        return kinds.pop() if len(kinds) == 1 else None

    def value(self, value: Any) -> Any:
        if isinstance(value, (Var, Const)):
            return self.of(value)
        if isinstance(value, Opaque) and value.kind == "nondiff":
            return self.code(cst.Module([]).code_for_node(value.node))
        if isinstance(value, Call) and value.rule is not None and value.rule.fun is SETITEM:
            return self.of(value.args["x"])
        if isinstance(value, Call) and value.rule is not None and value.rule.fun is operator.getitem:
            return self.item(self.of(value.args["x"]))
        return None

    @staticmethod
    def item(dtype: Any) -> Any:
        """The dtype of an item of an array of ``dtype`` (of a list's item: unknown)."""
        return None if isinstance(dtype, str) else dtype

    def code(self, code: str) -> Any:
        try:
            node = ast.parse(code.strip(), mode="eval").body
        except SyntaxError:
            return None
        return self.expr(node)

    def expr(self, node: ast.expr) -> Any:
        if isinstance(node, (ast.List, ast.Tuple)):
            return "list"
        if isinstance(node, ast.Name) and node.id not in self.fn.free:
            return self.name(node.id)
        if isinstance(node, ast.Constant) and type(node.value) in (bool, int, float, complex):
            return np.dtype(type(node.value))
        if isinstance(node, ast.Subscript):
            return self.item(self.expr(node.value))
        if not isinstance(node, ast.Call):
            return None
        fun = self.resolve(node.func)
        at = next((i for f, i in self._DTYPE_AT if f is fun), -1)
        if at == -1:
            return None
        keywords = {k.arg: k.value for k in node.keywords}
        dtype = keywords.get("dtype", node.args[at] if at is not None and len(node.args) > at else None)
        if dtype is not None and not (isinstance(dtype, ast.Constant) and dtype.value is None):
            obj = dtype.value if isinstance(dtype, ast.Constant) else self.resolve(dtype)
            try:
                return None if obj is None else np.dtype(obj)
            except TypeError:
                return None
        if fun in (np.zeros_like, np.ones_like, np.empty_like, np.full_like):
            return self.expr(node.args[0]) if node.args else None  # full_like: a's dtype
        if fun is np.full:
            fill = keywords.get("fill_value", node.args[1] if len(node.args) > 1 else None)
            return None if fill is None else self.expr(fill)
        return np.dtype(float) if fun in (np.zeros, np.ones, np.empty, np.eye, np.identity) else None

    def resolve(self, node: ast.expr) -> Any:
        """The object a name or attribute chain of the function's free names denotes."""
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return None if base is None else getattr(base, node.attr, None)
        if isinstance(node, ast.Name):
            return self.fn.free.get(node.id, getattr(builtins, node.id, None))
        return None


def warn_zero_gradients(fn: Function, wrt: tuple[str, ...], activity: Activity, generated: bool = False) -> bool:
    """Warn, once per ``wrt`` argument, when the output cannot depend on it; whether it warned.
    For ``generated`` code (a gradient's, differentiated again) the warning names no line of it."""
    warned = False
    for name in wrt:
        if name in activity.active:
            continue
        if generated:
            warnings.warn(ZeroGradientWarning(
                f"the derivative of {fn.name}, the code s2sad generated, is zero in '{name}': it does not "
                f"depend on '{name}' through differentiable operations (the function it differentiates is "
                f"at most linear in '{name}', or a stop_gradient cuts the path)"), stacklevel=user_stacklevel())
            warned = True
            continue
        _, cuts = _varied(fn, {name}, activity.forward)
        where = "; ".join(
            f"line {loc.line} ({'stop_gradient' if kind == 'stopped' else 'no gradient'}: "
            f"{loc.source_line.strip()})" for loc, kind, _ in cuts)
        reason = f" the path is cut at {where}" if where else " it does not reach the return value"
        warnings.warn(ZeroGradientWarning(
            f"the output of {fn.name} does not depend on '{name}' through differentiable "
            f"operations, so its gradient is zero:{reason}"), stacklevel=user_stacklevel())
        warned = True
    return warned
