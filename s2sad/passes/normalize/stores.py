"""Which stores ``d[k] = y`` may leave ``d`` holding an array the function changes in place
afterwards, as far as the syntax tells: s2sad reads ``d`` as it was stored, so those stores
get a run-time check (``check_stored_array``), which refuses them when ``d`` is a list or
dict (an array's item is a copy)."""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import numpy as np

from ..resolve import MISSING, Resolution
from .aliasing import returns_same
from .flow import in_place_targets, view_bases
from .syntax import statements_of, strip_parens, walk

#: functions (and array methods) that return a new array, whose result no other name holds
FRESH_FUNCTIONS = frozenset(id(f) for f in (
    np.array, np.copy, np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
    np.full_like, np.eye, np.identity, np.arange, np.linspace, np.concatenate, np.stack, np.vstack,
    np.hstack, np.column_stack, np.tile, np.repeat, np.outer, np.dot, np.matmul, np.einsum, np.exp, np.log,
    np.sqrt, np.tanh, np.where, np.clip, np.cumsum, np.cumprod, np.diff, np.sort, np.pad, np.roll, np.kron,
    np.cross, np.ndarray.copy, np.ndarray.clip, np.ndarray.cumsum, np.ndarray.cumprod, np.ndarray.repeat,
    np.ndarray.dot))


@dataclass(frozen=True)
class _Event:
    kind: str  # "write" (in place), "store" (d[k] = name), "fresh" (name = a new array), "jump"
    name: str
    path: tuple[int, ...]  # the blocks around it, outermost first: ids of loops and branches
    node: cst.CSTNode | None = None  # a store's target, d[k]


def _is_fresh(value: cst.BaseExpression, res: Resolution) -> bool:
    """Whether ``value`` is certainly a new array (or number), held by no other name: an
    operator's result, or a call of one of FRESH_FUNCTIONS (``x.copy()``: a method of x, a
    local variable, is taken to be the array's)."""
    value = strip_parens(value)
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    if not isinstance(value, cst.Call) or any(a.keyword is not None and a.keyword.value == "out" for a in value.args):
        return False  # (np.exp(a, out=b) is b)
    func = res.object(value.func)
    if func is MISSING and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name) \
            and value.func.value.value in res.locals:
        func = getattr(np.ndarray, value.func.attr.value, None)
    return id(func) in FRESH_FUNCTIONS and not returns_same(func, value)  # (np.array(y, copy=False): y)


def views_a_new_array(node: cst.CSTNode, res: Resolution) -> bool:
    """Whether ``node``, which takes a view (``v.reshape(...)``, ``np.reshape(v, ...)``,
    ``v[i]``), takes it of a new array no name holds (``(w * 2.0).reshape(3, 1)``): writing
    into the view then changes nothing else the function could read."""
    viewed: cst.BaseExpression | None = None
    if isinstance(node, cst.Subscript):
        viewed = node.value
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func not in res.objects:
        viewed = node.func.value  # (a method of the value)
    elif isinstance(node, cst.Call) and node.args and not node.args[0].keyword and not node.args[0].star:
        viewed = node.args[0].value
    return viewed is not None and _is_fresh(viewed, res)


class _Recorder:
    """The events of a function body, in source order, and where its loops' bodies start."""

    def __init__(self, res: Resolution) -> None:
        self.res = res
        self.events: list[_Event] = []
        self.loops: dict[int, int] = {}  # a loop's id -> where the events of its body start

    def block(self, stmts: list[cst.BaseStatement], path: tuple[int, ...]) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.small(small, path)
            elif isinstance(stmt, (cst.For, cst.While)):
                self.writes(stmt.iter if isinstance(stmt, cst.For) else stmt.test, path)
                self.loops[id(stmt)] = len(self.events)
                self.block(statements_of(stmt.body), path + (id(stmt),))
                if stmt.orelse is not None:
                    self.block(statements_of(stmt.orelse.body), path + (id(stmt.orelse),))
            elif isinstance(stmt, cst.If):
                self.writes(stmt.test, path)
                self.block(statements_of(stmt.body), path + (id(stmt.body),))
                if isinstance(stmt.orelse, cst.If):
                    self.block([stmt.orelse], path + (id(stmt.orelse),))
                elif stmt.orelse is not None:
                    self.block(statements_of(stmt.orelse.body), path + (id(stmt.orelse),))
            else:  # with, try, a nested def...: its writes, with no store or fresh value counted
                self.writes(stmt, path + (id(stmt),))

    def writes(self, node: cst.CSTNode, path: tuple[int, ...]) -> None:
        for n in walk(node):
            self.events += [_Event("write", name, path) for name in in_place_targets(n)]
            if isinstance(n, (cst.Break, cst.Continue)):
                self.events.append(_Event("jump", "", path))

    def small(self, node: cst.BaseSmallStatement, path: tuple[int, ...]) -> None:
        self.writes(node, path)
        if not isinstance(node, cst.Assign):
            return
        value = strip_parens(node.value)
        for t in node.targets:
            if isinstance(t.target, cst.Subscript) and isinstance(value, cst.Name):
                self.events.append(_Event("store", value.value, path, t.target))
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and _is_fresh(value, self.res):
            self.events.append(_Event("fresh", node.targets[0].target.value, path))


def stores_changed_later(body: list[cst.BaseStatement], res: Resolution) -> set[int]:
    """The stores ``d[k] = y`` (ids of their ``d[k]`` nodes) after which the array ``y`` holds
    may change in place: by a write into y (or a view of it, or what it views) later in the
    function, unless y is first bound to a new array on every path; or by one earlier in an
    enclosing loop's body, which its next iteration runs, unless that body first binds y to
    a new array."""
    if not _has_store(body):
        return set()
    recorder = _Recorder(res)
    recorder.block(body, ())
    events, shared = recorder.events, _sharing(body)
    found: set[int] = set()
    for i, store in enumerate(events):
        if store.kind != "store":
            continue
        names = shared.get(store.name, set()) | {store.name}
        later = any(e.kind == "write" and e.name in names and not _rebound_between(events, i, j, store)
                    for j, e in enumerate(events[i + 1:], i + 1))
        again = any(_written_next_iteration(events, recorder.loops[loop], i, store, store.path[:n + 1], names)
                    for n, loop in enumerate(store.path) if loop in recorder.loops)
        if later or again:
            found.add(id(store.node))
    return found


def _has_store(stmts: list[cst.BaseStatement]) -> bool:
    """Whether ``stmts`` (their loops' and branches' bodies too) hold a store ``d[k] = name``."""
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            if any(isinstance(s, cst.Assign) and isinstance(strip_parens(s.value), cst.Name)
                   and any(isinstance(t.target, cst.Subscript) for t in s.targets) for s in stmt.body):
                return True
        elif isinstance(stmt, (cst.For, cst.While, cst.If)):
            orelse = stmt.orelse
            if _has_store(statements_of(stmt.body)) or isinstance(orelse, cst.If) and _has_store([orelse]) \
                    or isinstance(orelse, cst.Else) and _has_store(statements_of(orelse.body)):
                return True
    return False


def _rebound_between(events: list[_Event], i: int, j: int, store: _Event) -> bool:
    """Whether, after the store ``events[i]``, every path to the write ``events[j]`` of the
    stored name first binds it to a new array: a binding in the store's block or one around
    it, with no break or continue between."""
    if events[j].name != store.name:
        return False
    for k in range(i + 1, j):
        e = events[k]
        if e.kind == "jump":
            return False
        if e.kind == "fresh" and e.name == store.name and store.path[:len(e.path)] == e.path:
            return True
    return False


def _written_next_iteration(events: list[_Event], start: int, i: int, store: _Event, top: tuple[int, ...],
                            names: set[str]) -> bool:
    """Whether the body of the loop around the store ``events[i]`` (its events from ``start``,
    its top-level blocks' path ``top``) writes into the stored array before the store, which
    its next iteration runs, without first binding the stored name to a new array at the
    body's top level."""
    rebound = False
    for e in events[start:i]:
        if e.kind == "fresh" and e.name == store.name and e.path == top:
            rebound = True
        if e.kind == "write" and e.name in names and not (rebound and e.name == store.name):
            return True
    return False


def _sharing(body: list[cst.BaseStatement]) -> dict[str, set[str]]:
    """For each name, the names that may share its memory as far as the syntax tells: the
    views taken of it and the arrays it views, transitively."""
    bases = view_bases(body)
    linked: dict[str, set[str]] = {}
    for view, of in bases.items():
        for base in of:
            linked.setdefault(view, set()).add(base)
            linked.setdefault(base, set()).add(view)
    shared: dict[str, set[str]] = {}
    for name in linked:
        seen, todo = {name}, [name]
        while todo:
            for other in linked.get(todo.pop(), ()):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        shared[name] = seen - {name}
    return shared
