"""Pass 4: normalize the body to A-normal form.

Each statement of the result applies one primitive to variables and constant
code.  Temporaries get readable names (``exp_z``, ``sum_e``).  A variable that
is assigned again gets a new version (``h``, ``h_2``), so that every value the
adjoint may read is still there: straight-line code needs no tape.

Expressions that carry no gradient by construction -- comparisons, calls to
``stop_gradient`` and to declared non-differentiable functions, ``x.shape`` --
are kept whole, as the user wrote them.
"""
from __future__ import annotations

import ast
import builtins
import functools
import linecache
import math
import operator
import os
import sys
import sysconfig
import textwrap
import types
from dataclasses import dataclass
from typing import Any, Callable

import libcst as cst
import numpy as np

from .. import runtime
from ..errors import Location, S2SADError, UnsupportedSyntaxError
from ..ir import Assign, Call, Const, Function, If, Loop, Opaque, Operand, Return, Stmt, Var
from ..rules import NONDIFF_ATTRIBUTES
from ..rules.registry import APPEND, RUNTIME_NAMES, SETITEM, USER_OBJECTS, Registry, pack_rule
from .parse import Parsed, children, parse
from .resolve import MISSING, Resolution, resolve
from .source import call_signature, read_source, wrapping

BINARY_OPS: dict[type, tuple[Any, str]] = {
    cst.Add: (operator.add, "add"),
    cst.Subtract: (operator.sub, "sub"),
    cst.Multiply: (operator.mul, "mul"),
    cst.Divide: (operator.truediv, "div"),
    cst.Power: (operator.pow, "pow"),
    cst.MatrixMultiply: (operator.matmul, "matmul"),
    cst.Modulo: (operator.mod, "mod"),
    cst.FloorDivide: (operator.floordiv, "floordiv"),
}
AUGMENTED_OPS: dict[type, type] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply, cst.ModuloAssign: cst.Modulo,
    cst.FloorDivideAssign: cst.FloorDivide,
}
UNARY_OPS: dict[type, tuple[Any, str]] = {
    cst.Minus: (operator.neg, "neg"),
    cst.Plus: (operator.pos, "pos"),
}
#: Statements and expressions s2sad does not differentiate, with what to write instead.
UNSUPPORTED: dict[type, str] = {
    cst.Try: "'try' statements are not supported; handle errors outside the differentiated function",
    cst.With: "'with' statements are not supported; move the context manager outside the "
              "differentiated function",
    cst.ClassDef: "class definitions inside a differentiated function are not supported; define "
                  "the class at module level",
    cst.Del: "'del' is not supported; let the variable go out of scope instead",
    cst.Global: "'global' is not supported; pass the value as an argument and return the result",
    cst.Nonlocal: "'nonlocal' is not supported; pass the value as an argument and return the result",
    cst.Import: "imports inside a differentiated function are not supported; import at module level",
    cst.ImportFrom: "imports inside a differentiated function are not supported; import at module "
                    "level",
    cst.Raise: "'raise' is not supported; check inputs before calling the differentiated function",
    cst.Yield: "generators ('yield') cannot be differentiated; return a value instead",
    cst.Await: "'await' is not supported; differentiate a synchronous function",
    cst.SetComp: "a set of values that carry a gradient is not supported (a set has no order to "
                 "give gradients back in); build a list, or a dict comprehension",
    cst.Lambda: "a lambda used other than bound to a name ('f = lambda v: ...') is not "
                "supported; define a function with 'def'",
    cst.NamedExpr: "the walrus operator ':=' is not supported; assign on its own line",
    cst.Set: "set values are not supported",
    cst.Match: "'match' statements are not supported",
}


#: Calls that may stand as statements: they print or check and change nothing.
STATEMENT_CALLS = (builtins.print, runtime.check_wrt, runtime.check_float_write, runtime.seed,
                   runtime.check_assignment_order, runtime.check_number, runtime.check_wrt_item,
                   runtime.check_out)

#: Builtins that run or inspect code behind s2sad's back.
HIDDEN_CODE = (builtins.exec, builtins.eval, builtins.globals, builtins.locals, builtins.vars,
               builtins.compile, builtins.__import__)


@dataclass
class _ViewLink:
    """``view = base[i]`` (or ``base.T``, a reshape...): a view s2sad follows, writing a change
    of either array into the other (PyTorch's semantics), in the block that took it."""

    base: str  # the user's name of the array viewed
    back: str  # how the view is taken: "index", "transpose", "swapaxes" or "reshape"
    operands: tuple[Const, ...]  # the index, or the two axes of swapaxes
    taken: tuple[str, str]  # (base, view) versions when the view was taken
    now: tuple[str, str]  # the versions the link holds between: a plain assignment ends it
    block: list[Stmt]  # the statements the view was taken among: only writes there follow it
    flag: str | None = None  # variable: whether the view shares the base's memory when run


class Normalizer:
    def __init__(self, parsed: Parsed, res: Resolution, registry: Registry, callee: bool = False) -> None:
        self.parsed = parsed
        self.res = res
        self.registry = registry
        fdef = parsed.function
        self.fn = Function(fdef.name.value, res.params, fdef.params)
        self.fn.user_names = _all_names(fdef)
        registry.load_lazy()  # (so that the names its rules' templates call are known below)
        self.fn.names |= self.fn.user_names | set(RUNTIME_NAMES) | set(USER_OBJECTS) | set(dir(builtins))
        self.fn.free = {name: free.value for name, free in res.free.items()}
        self.fn.closure = {name for name, free in res.free.items() if free.kind == "closure"}
        self.version: dict[str, str] = {p: p for p in res.params}
        self.loc: Location | None = None
        self.out: list[Stmt] = self.fn.body
        self.loops: list[tuple[str | None, str | None]] = []  # (break flag, continue flag)
        self.result = self.fn.fresh("value")  # the returned value, when returns are nested
        self.returning: str | None = None  # set when a 'return' inside a loop has run
        self.copies: set[str] = set()  # versions assigned from another variable (aliases)
        self.stored: set[str] = set()  # versions put into a list, tuple or dict
        # versions that certainly hold a tuple or list of this length: only those assigned in
        # the function's straight-line top level, where a version is assigned once
        self.sizes: dict[str, int | tuple[str, ...]] = {}  # a length, or a dict's keys
        self.views: set[str] = set()  # versions that may be views into another array
        self.partners: dict[str, set[str]] = {}  # version -> user names bound to the same object
        self.bases: dict[str, frozenset[str]] = {}  # version -> earlier versions it may share memory with
        self.holders: dict[str, frozenset[str]] = {}  # container version -> what its items may share
        self.callee = callee  # compiled for a caller: changes to arguments would be visible
        self.local_functions: dict[str, types.FunctionType] = {}  # nested defs and lambdas
        # versions that branches outside any loop bind on some paths only -> the blocks that
        # leave them unbound (see bind_everywhere)
        self.unbound_in: dict[str, list[list[Stmt]]] = {}
        self.concatenations: set[cst.BinaryOperation] = set()  # + that code built here uses on lists
        self.closure_args: dict[str, list[str]] = {}  # nested function -> the variables it reads
        self.lists: set[str] = set()  # versions that certainly hold a list (for xs.pop(i))
        self.links: dict[str, _ViewLink] = {}  # the user's name of a view -> how it views its base
        self.helpers: dict[Any, str] = {}  # runtime function -> the free name generated code calls
        # an in-place write has been lowered: the arrays s2sad writes as new values may from now on
        # be laid out in memory unlike NumPy's (a copy is C-contiguous), so that whether a
        # reshape is a view can no longer be read off them
        self.rewrote = False

    # --- statements -----------------------------------------------------------
    def run(self) -> Function:
        fdef = self.parsed.function
        if fdef.asynchronous is not None:
            raise self.unsupported(fdef, "async functions cannot be differentiated; use 'def'")
        body = _suite(fdef.body)
        if not self.block(body, docstring=True):
            last = body[-1] if body else fdef
            raise UnsupportedSyntaxError(
                f"{self.fn.name} must end with 'return <scalar>' to be differentiated",
                self.location(last))
        if not (self.fn.body and isinstance(self.fn.body[-1], Return)):
            self.out.append(Return(Var(self.version[self.result]), self.loc))
        return self.fn

    def block(self, stmts: list[cst.BaseStatement], docstring: bool = False) -> bool:
        """Lower ``stmts`` into ``self.out``; True if every path through them returns.

        A statement that may ``break`` or ``continue`` guards the statements after it
        with the loop's flags; an ``if`` that returns on some path takes the
        statements after it into its other branches.
        """
        for i, stmt in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(stmt, cst.SimpleStatementLine):
                for j, small in enumerate(stmt.body):
                    ended = self.small_statement(small, docstring=docstring and i == 0 and j == 0)
                    if ended:
                        dead = stmt.body[j + 1:] or rest
                        if dead:
                            raise self.unsupported(dead[0], f"code after '{ended}' is never run; "
                                                            "remove it")
                        return ended == "return"
                continue
            self.loc = self.location(stmt)
            if isinstance(stmt, cst.FunctionDef):
                self.nested_function(stmt.name.value, stmt)
            elif isinstance(stmt, cst.If):
                returns, took_rest = self.if_statement(stmt, rest)
                if took_rest:
                    return returns
            elif isinstance(stmt, (cst.For, cst.While)):
                if not self.loops and _may_return([stmt]):
                    self.returning = self.fn.fresh("returning")
                    self.out.append(Assign(self.returning, Const("False"), self.loc, temporary=True))
                self.for_loop(stmt) if isinstance(stmt, cst.For) else self.while_loop(stmt)
                if _may_return([stmt]):
                    if not self.loops:  # the loop returned, or the statements after it run
                        return self.after_returning_loop(rest)
                    returned = Opaque(cst.Name(self.returning), (self.returning,), "nondiff")
                    self.out.append(Assign(self.loops[-1][0], returned, self.loc, temporary=True))
            else:
                raise self.unsupported(stmt, UNSUPPORTED.get(type(stmt), f"'{_describe(stmt)}' is not supported"))
            if rest and self.loops and _may_jump(stmt):
                guard = self.guard_condition()
                before = dict(self.version)
                body, _ = self.nested(lambda: self.block(rest))
                else_body: list[Stmt] = []
                self.version = self.join(before, [(body, self.version, False), (else_body, before, False)])
                self.out.append(If(guard, body, else_body, self.loc))
                return False
        return False

    def after_returning_loop(self, rest: list[cst.BaseStatement]) -> bool:
        """``if returning: <the value is returned> else: rest``; True if every path returns."""
        test = Var(self.returning)
        before = dict(self.version)
        else_body, else_ret = self.nested(lambda: self.block(rest))
        branches = [([], before, True), (else_body, self.version, else_ret)]
        if else_ret:  # only the returned value flows on, to the final return
            branches = [(body, {self.result: v[self.result]}, ret) for body, v, ret in branches]
        self.version = self.join(before, branches)
        self.out.append(If(test, branches[0][0], else_body, self.loc))
        return else_ret

    def nested(self, lower: Any) -> tuple[list[Stmt], Any]:
        """Lower into a fresh block; returns the block and what ``lower`` returned."""
        saved, self.out = self.out, []
        try:
            result = lower()
            return self.out, result
        finally:
            self.out = saved

    def guard_condition(self) -> Var:
        """A recorded ``not (breaking or skipping)`` for the innermost loop."""
        flags = [f for f in self.loops[-1] if f]
        code = f"not {flags[0]}" if len(flags) == 1 else f"not ({' or '.join(flags)})"
        return self.emit(Opaque(cst.parse_expression(code), tuple(flags), "nondiff"), None, "go_on",
                         cst.Name("_"))

    def condition(self, node: cst.BaseExpression) -> Operand:
        """Record a branch condition in a variable, so the adjoint can replay the branch."""
        node = self.hoist(node)
        self.check_expression(node)
        reads = self.local_reads(node)
        code = self.rename(_strip_parens(node))
        if not reads:
            return Const(self.parsed.code(_strip_parens(node)).strip())
        return self.emit(Opaque(code, reads, "nondiff"), None, "cond", node)

    def if_statement(self, node: cst.If, rest: list[cst.BaseStatement]) -> tuple[bool, bool]:
        """Lower an if/elif/else; returns (every path returns, took the following statements)."""
        then_stmts = _suite(node.body)
        else_stmts: list[cst.BaseStatement] = []
        if isinstance(node.orelse, cst.If):
            else_stmts = [node.orelse]
        elif isinstance(node.orelse, cst.Else):
            else_stmts = _suite(node.orelse.body)
        then_returns, else_returns = _always_returns(then_stmts), _always_returns(else_stmts)
        take_rest = bool(rest) and (then_returns or else_returns or _may_return(then_stmts)
                                    or _may_return(else_stmts))
        if take_rest:
            then_stmts = then_stmts if then_returns else then_stmts + rest
            else_stmts = else_stmts if else_returns else else_stmts + rest
        test = self.condition(node.test)
        loc = self.location(node)
        before = dict(self.version)
        then_body, then_ret = self.nested(lambda: self.block(then_stmts))
        then_versions, self.version = self.version, dict(before)
        else_body, else_ret = self.nested(lambda: self.block(else_stmts))
        else_versions = self.version
        branches = [(then_body, then_versions, then_ret), (else_body, else_versions, else_ret)]
        if then_ret and else_ret:  # only the returned value flows on, to the final return
            branches = [(body, {self.result: v[self.result]}, ret) for body, v, ret in branches]
        self.version = self.join(before, branches)
        self.out.append(If(test, then_body, else_body, loc))
        return then_ret and else_ret, take_rest

    def join(self, before: dict[str, str], branches: list[tuple[list[Stmt], dict[str, str], bool]]
             ) -> dict[str, str]:
        """Versions after branches meet; phi copies go at the ends of the branches."""
        if not branches:
            return before
        if len(branches) == 1:
            return branches[0][1]
        (body_a, va, _), (body_b, vb, _) = branches
        joined = dict(before)
        for name in dict.fromkeys([*va, *vb]):
            a, b = va.get(name), vb.get(name)
            if (a is None or b is None) and self.loops:
                # bound on one path only (the other jumped out): None there, since the loop's
                # record of the iteration may save it
                (body_a if a is None else body_b).append(
                    Assign(a or b, Const("None"), self.loc, temporary=True))
            elif a is None or b is None:
                self.unbound_in.setdefault(a or b, []).append(body_a if a is None else body_b)
            if a == b or b is None:
                joined[name] = a
            elif a is None:
                joined[name] = b
            elif a != before.get(name):
                joined[name] = a
                self.bind_everywhere(b)
                body_b.append(Assign(a, Var(b), self.loc))
            else:
                joined[name] = b
                self.bind_everywhere(a)
                body_a.append(Assign(b, Var(a), self.loc))
            if a and b and a != b:  # the value of one path or the other: what it shares, it shares
                if {a, b} & self.views:
                    self.views.add(joined[name])
                for v in {a, b} - {joined[name]}:
                    self.same_array(joined[name], v)
        return joined

    def bind_everywhere(self, version: str) -> None:
        """Before generated code copies ``version``: None on the paths that leave it unbound
        (the user's code never reads it there; the copy would)."""
        for block in self.unbound_in.pop(version, []):
            if not (block and isinstance(block[-1], Return)):
                block.append(Assign(version, Const("None"), self.loc, temporary=True))

    def for_loop(self, node: cst.For) -> None:
        if node.asynchronous is not None:
            raise self.unsupported(node, "'async for' is not supported")
        if _has_walrus(node.iter):
            node = node.with_changes(iter=self.hoist(node.iter))
        self.check_expression(node.iter)
        prefix: list[tuple[str, Any, str]] = []  # (name, sequence or None for the index itself, index)
        iterable = node.iter
        func = iterable.func if isinstance(iterable, cst.Call) else None
        kind = "plain"
        if not self.local_reads(iterable) or self.inactive_kind(iterable) is not None:
            kind = "plain"
        elif func is not None and self.res.object(func) is range:
            kind = "plain"
        elif func is not None and self.res.object(func) in (enumerate, zip, reversed):
            kind = self.res.object(func).__name__
        else:
            kind = "sequence"
        target = node.target
        names = _target_names(target)
        body = _suite(node.body)
        method = iterable.func.attr.value if isinstance(func, cst.Attribute) and not iterable.args else None
        if kind == "sequence" and isinstance(target, (cst.Tuple, cst.List)) and (
                method == "items" and names is None or method == "values"):
            # for k, (a, b) in d.items(), for a, b in d.values(): the value unpacked in the body
            names, body = self.loop_target(target, "sequence" if method == "values" else "items", body)
        mapping = _dict_iteration(iterable, names, node.body) if kind == "sequence" else None
        if mapping is not None:  # keys carry no gradient: a loop over them, values by key
            self.dict_loop(node, *mapping, body)
            return
        zipped = _enumerate_zip(iterable, target, self.res) if kind == "enumerate" else None
        if zipped is None and (names is None or kind in ("sequence", "reversed") and len(names) != 1):
            names, body = self.loop_target(target, kind, body)
        if kind == "plain":
            header_iter = self.rename(iterable)
            # a loop that runs no iteration leaves a bound target as it was: one read after the
            # loop is carried through it, assigned from a fresh loop variable in the body
            kept = [n for n in names if n in self.version and self.read_after(node, n)]
            targets = [self.fn.fresh(n) if n in kept else self.new_version(n) for n in names]
            self.version.update((n, t) for n, t in zip(names, targets) if n not in kept)
            header = f"for {', '.join(targets)} in {_EMPTY.code_for_node(header_iter).strip()}"
            reads = self.local_reads(iterable)
            prefix = [(n, None, t) for n, t in zip(names, targets) if n in kept]
        else:
            if zipped is not None:  # for i, (a, b) in enumerate(zip(xs, ys))
                index_name, pairs = zipped
                index = self.new_version(index_name)
                self.version[index_name] = index
                sequences = pairs
            elif kind == "enumerate":
                if names is None or len(names) != 2 or len(iterable.args) != 1 or iterable.args[0].keyword:
                    raise self.unsupported(iterable, "use 'for i, item in enumerate(sequence)'")
                index = self.new_version(names[0])
                self.version[names[0]] = index
                sequences = [(names[1], iterable.args[0].value)]
            elif kind == "zip":
                if len(names) != len(iterable.args) or any(a.keyword or a.star for a in iterable.args):
                    raise self.unsupported(iterable, "use 'for a, b in zip(xs, ys)' with one name per sequence")
                index = self.fn.fresh("k")
                sequences = list(zip(names, (a.value for a in iterable.args)))
            else:
                if len(names) != 1:
                    raise self.unsupported(target, "unpacking the items of a sequence in a 'for' "
                                                   "header is not supported; unpack in the body")
                index = self.fn.fresh("i")
                if kind == "reversed":
                    if len(iterable.args) != 1 or iterable.args[0].keyword or iterable.args[0].star:
                        raise self.unsupported(iterable, "use 'for item in reversed(sequence)'")
                    iterable = iterable.args[0].value
                sequences = [(names[0], iterable)]
            seq_ops = []
            # the loop's own names are rebound each iteration too (``for x in x``)
            rebound = _assigned_in(body) | _changed_in(body) & self.res.locals | {name for name, _ in sequences} | set(names or ())
            for name, seq in sequences:
                op, seq_node = self.operand(seq)
                if isinstance(op, Var) and _user_name(op.name, self.res.locals) in rebound:
                    # the loop iterates over the sequence as it was when the loop started
                    snapshot = self.fn.fresh(f"{op.name}_items")
                    self.out.append(Assign(snapshot, op, self.loc, temporary=True))
                    op, seq_node = Var(snapshot), cst.Name(snapshot)
                seq_ops.append((name, op, _EMPTY.code_for_node(seq_node).strip()))
            lengths = [f"len({code})" for _, _, code in seq_ops]
            bound = lengths[0] if len(lengths) == 1 else f"min({', '.join(lengths)})"
            steps = f"{bound} - 1, -1, -1" if kind == "reversed" else bound
            header = f"for {index} in range({steps})"
            targets = [index]
            reads = tuple(dict.fromkeys(n for _, op, _ in seq_ops for n in _reads(op)))
            prefix = [(name, op, index) for name, op, _ in seq_ops]
        self.loop(node, header, reads, targets, prefix, body)

    def loop_target(self, target: cst.BaseExpression, kind: str, body: list[cst.BaseStatement]
                    ) -> tuple[list[str], list[cst.BaseStatement]]:
        """``for W, b in layers`` as ``for W_b in layers`` with ``W, b = W_b`` first in the body
        (and ``for i, (W, b) in enumerate(layers)`` likewise): the names the loop header binds,
        and the body."""
        if isinstance(target, (cst.Tuple, cst.List)) and kind not in ("sequence", "reversed"):
            parts = [e.value for e in target.elements]
        else:
            parts = [target]
        names, unpacks = [], []
        for part in parts:
            if isinstance(part, cst.Name):
                names.append(part.value)
                continue
            if not isinstance(part, (cst.Tuple, cst.List)) or any(
                    isinstance(e, cst.StarredElement) for e in _walk(part)):
                raise self.unsupported(part, "loop targets must be names or tuples of names "
                                             "(nested ones too); assign elements in the body")
            names.append(self.fn.fresh(_target_hint(part)))
            self.res.locals = self.res.locals | {names[-1]}
            unpacks.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(part)], cst.Name(names[-1]))]))
        return names, unpacks + body

    def dict_loop(self, node: cst.For, mapping: cst.BaseExpression, key: str | None,
                  value: str | None, body: list[cst.BaseStatement]) -> None:
        """``for k in d``, ``for k in d.keys()``, ``for v in d.values()``, ``for k, v in d.items()``:
        ``for k in d`` over the keys, and ``v = d[k]`` first in the body."""
        op, seq_node = self.operand(mapping)
        rebound = _assigned_in(body) | _changed_in(body) & self.res.locals | {key, value}
        if isinstance(op, Var) and _user_name(op.name, self.res.locals) in rebound:
            snapshot = self.fn.fresh(f"{op.name}_items")  # the dict as it was when the loop started
            self.out.append(Assign(snapshot, op, self.loc, temporary=True))
            op, seq_node = Var(snapshot), cst.Name(snapshot)
        index = self.fn.fresh("k") if key is None else self.new_version(key)
        if key is not None:
            self.version[key] = index
        header = f"for {index} in {_EMPTY.code_for_node(seq_node).strip()}"
        prefix = [] if value is None else [(value, op, index)]
        self.loop(node, header, _reads(op), [index], prefix, body)

    def while_loop(self, node: cst.While) -> None:
        body, test = _suite(node.body), node.test
        if _has_walrus(test):
            # while (r := f(r)) > tol: each ':=' runs before the loop, and again as the last
            # statement of the body (so that a 'continue', which would skip it, is refused)
            walruses = [w for w, _ in _walrus_places(test, "")]
            if _jumps(body)[1]:
                raise self.unsupported(walruses[0], "the walrus operator ':=' in the condition of a "
                                                    "'while' loop that uses 'continue' is not supported; "
                                                    "assign before the loop and again before each 'continue'")
            test = self.hoist(test)
            inner = {id(m) for w in walruses for m in _walk(w.value)}
            body = body + [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(w.target)], w.value)])
                           for w in walruses if id(w) not in inner]
        self.check_expression(test)
        test = _strip_parens(test)
        self.loop(node, "", self.local_reads(test), [], [], body, test=test)

    def loop(self, node: cst.CSTNode, header: str, reads: tuple[str, ...], targets: list[str],
             prefix: list[Any], body: list[cst.BaseStatement],
             test: cst.BaseExpression | None = None) -> None:
        loc = self.location(node)
        assigned = _assigned_in(body) | _changed_in(body) & self.res.locals | {name for name, _, _ in prefix}
        outside = self.loads_outside(node)
        live_out = {n for n in assigned if n in self.version or n in outside or (
            n not in {p for p, _, _ in prefix} and _read_before_assigned(body, n))}
        if _may_return(body):  # the value returned inside flows out of the loop
            live_out.add(self.result)
        for name in sorted(live_out - set(self.version)):
            # read after the loop (or by a later iteration) but first assigned inside it: it
            # starts as None, so that every iteration can hand it on
            self.out.append(Assign(name, Const("None"), loc, temporary=True))
            self.version[name] = name
        for name in sorted(live_out & set(self.version)):
            # bound before the loop on some paths only: an iteration that returns or breaks
            # before assigning it hands it on all the same
            self.bind_everywhere(self.version[name])
        before = dict(self.version)
        for name in live_out:  # a carried container may grow from one iteration to the next
            self.sizes.pop(before[name], None)
        for name in live_out & set(_view_bases(body)):  # a view taken by an earlier iteration
            self.views.add(before[name])
        has_break, has_continue = _jumps(body)
        breaking = self.fn.fresh("breaking") if has_break else None
        skipping = self.fn.fresh("skipping") if has_continue else None
        if breaking:
            self.out.append(Assign(breaking, Const("False"), loc, temporary=True))
        if test is not None:
            header = f"while {_EMPTY.code_for_node(self.rename(test)).strip()}"
        self.loops.append((breaking, skipping))

        def lower_body() -> None:
            if skipping:
                self.out.append(Assign(skipping, Const("False"), loc, temporary=True))
            for name, op, index in prefix:
                new = self.new_version(name)
                if op is None:  # the loop variable itself
                    self.out.append(Assign(new, Var(index), loc))
                    self.version[name] = new
                    continue
                item = cst.parse_expression(f"{_code(self.parsed, op)}[{index}]")
                self.apply(operator.getitem, [op, Const(index, (index,))], {}, item, node, new, "item",
                           [item.value, None])
                self.version[name] = new
            self.block(body)

        block, _ = self.nested(lower_body)
        self.loops.pop()
        after = self.version
        carried = [(before[n], after[n]) for n in sorted(live_out)]
        self.version = {**after, **{n: before[n] for n in live_out}}
        self.out.append(Loop(header, tuple(reads), tuple(targets), block, carried, loc, breaking))
        if getattr(node, "orelse", None) is not None:
            self.loop_else(node.orelse, breaking, "for" if isinstance(node, cst.For) else "while")

    def loop_else(self, orelse: cst.Else, breaking: str | None, kind: str) -> None:
        """The ``else`` of a loop runs when no ``break`` (or ``return``) left the loop: under
        ``if not breaking``, the flag the loop already keeps."""
        stmts = _suite(orelse.body)
        jump = next((n for n in _walk(orelse) if isinstance(n, (cst.Return, cst.Break, cst.Continue))), None)
        if jump is not None:
            word = type(jump).__name__.lower()
            raise self.unsupported(jump, f"'{word}' in the else of a '{kind} ... else' is not supported; "
                                         f"move the else's code after the loop, under a flag the loop sets")
        if breaking is None:  # nothing leaves the loop early: the else always runs
            self.block(stmts)
            return
        loc = self.location(orelse)
        test = self.emit(Opaque(cst.parse_expression(f"not {breaking}"), (breaking,), "nondiff"), None,
                         "completed", orelse)
        before = dict(self.version)
        body, _ = self.nested(lambda: self.block(stmts))
        # a name the else first binds is None when the loop broke (then only a path that
        # returned, or jumped, goes on; the adjoint reads it all the same)
        fresh = {n: v for n, v in self.version.items() if n not in before}
        else_body: list[Stmt] = [Assign(v, Const("None"), loc, temporary=True) for v in fresh.values()]
        self.version = self.join(before, [(body, self.version, False), (else_body, {**before, **fresh}, False)])
        self.out.append(If(test, body, else_body, loc))

    def loads_outside(self, node: cst.CSTNode) -> set[str]:
        """Local names read anywhere in the function outside ``node``."""
        inside = set(_walk(node))
        return {n.value for n in _walk(self.parsed.function.body)
                if isinstance(n, cst.Name) and n not in inside and n.value in self.res.locals}

    def small_statement(self, node: cst.BaseSmallStatement, docstring: bool) -> str | None:
        """Lower one simple statement; returns "return", "break" or "continue" if it jumps."""
        self.loc = self.location(node)
        if isinstance(node, cst.Pass):
            return None
        if isinstance(node, cst.Expr):
            if docstring and isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
                return None
            self.expression_statement(node)
        elif isinstance(node, cst.Assign):
            self.assign(node)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.assign(cst.Assign([cst.AssignTarget(node.target)], node.value), node)
        elif isinstance(node, cst.AugAssign):
            self.augmented_assign(node)
        elif isinstance(node, cst.Return):
            self.return_statement(node)
            if self.loops:  # leave every loop: the value is returned after the outermost one
                self.out.append(Assign(self.returning, Const("True"), self.loc, temporary=True))
                self.out.append(Assign(self.loops[-1][0], Const("True"), self.loc, temporary=True))
                return "break"
            return "return"
        elif isinstance(node, (cst.Break, cst.Continue)) and self.loops:
            breaking, skipping = self.loops[-1]
            flag = breaking if isinstance(node, cst.Break) else skipping
            self.out.append(Assign(flag, Const("True"), self.loc, temporary=True))
            return "break" if isinstance(node, cst.Break) else "continue"
        elif isinstance(node, cst.Assert):
            self.check_expression(node.test)
            if node.msg is not None:
                self.check_expression(node.msg)
            self.out.append(Assign(None, Opaque(self.rename(node), self.local_reads(node), "nondiff"), self.loc))
        else:
            raise self.unsupported(node, UNSUPPORTED.get(type(node), f"'{_describe(node)}' is not supported"))
        return None

    def return_statement(self, node: cst.Return) -> None:
        if node.value is None:
            raise self.unsupported(node, "'return' without a value; return the scalar to differentiate")
        value = self.hoist(node.value)
        self.check_expression(value)
        nested = self.out is not self.fn.body
        if not nested and self.result not in self.version:
            target = None if isinstance(value, cst.Name) or not self.local_reads(value) else self.result
            self.out.append(Return(self.lower(value, target, "value"), self.loc))
            return
        new = self.new_version(self.result)
        self.lower(value, new, self.result)
        self.version[self.result] = new

    def expression_statement(self, node: cst.Expr) -> None:
        value = node.value
        func = value.func if isinstance(value, cst.Call) else None
        if isinstance(func, cst.Attribute) and func.attr.value == "append" and isinstance(
                func.value, cst.Name) and func.value.value in self.res.locals:
            self.check_expression(value)
            self.append(value)
            return
        if isinstance(func, cst.Attribute) and func.attr.value in _LIST_METHODS[1:] and isinstance(
                func.value, cst.Name) and func.value.value in self.res.locals:
            self.check_expression(value)
            self.pop(value) if func.attr.value == "pop" and not value.args else self.list_method(value)
            return
        if isinstance(value, cst.Call) and _ufunc_at(self.res.object(value.func)) is not None:
            self.check_expression(value)
            self.ufunc_at(value)
            return
        if isinstance(value, cst.Call) and self.out_argument(value) is not None:  # np.add(a, b, out=z)
            self.check_expression(value)
            self.out_call(value)
            return
        if isinstance(value, cst.Call) and any(self.res.object(value.func) is f for f in STATEMENT_CALLS):
            self.check_expression(value)
            self.out.append(Assign(None, Opaque(self.rename(value), self.local_reads(value), "nondiff"), self.loc))
            return
        for bad in (cst.Yield, cst.Await):
            if isinstance(value, bad):
                raise self.unsupported(value, UNSUPPORTED[bad])
        raise self.unsupported(
            node, "an expression statement whose result is unused may change its arguments in "
                  "place, which s2sad cannot see; assign its result to a variable or remove it")

    def assign(self, node: cst.Assign, at: cst.CSTNode | None = None) -> None:
        if _has_walrus(node.value):
            node = node.with_changes(value=self.hoist(node.value))
        self.check_expression(node.value)
        targets = [t.target for t in node.targets]
        for t in targets:
            self.check_target(t)
        first, rest = targets[0], targets[1:]
        if isinstance(first, cst.Subscript):
            if rest:
                raise self.unsupported(rest[0], "chained assignment into an element is not supported")
            self.setitem(first, node.value)
            return
        if isinstance(first, cst.Name) and isinstance(node.value, cst.Lambda) and not rest:
            self.nested_function(first.value, node.value)
            return
        if _is_pop(node.value, self.res.locals) and not rest:
            node = node.with_changes(value=self.pop(node.value))
        if isinstance(first, cst.Name):
            if not rest and self.out_argument(node.value) is not None:  # w = np.exp(a, out=z)
                node = node.with_changes(value=self.out_call(node.value))
            new = self.new_version(first.value)
            value = self.lower(node.value, new, first.value)
            self.version[first.value] = new
            if not rest:
                self.link_view(first.value, node.value, new)
        elif rest:  # t, u = v = <value>: every target gets the one value, left to right
            value = self.lower(node.value, self.temporary("items"), "items")
            self.unpack(first, cst.Name(value.name))
        else:
            value = self.unpack(first, node.value)
        for t in rest:
            if not isinstance(t, cst.Name):
                raise self.unsupported(t, "chained assignment to a tuple is not supported; assign "
                                          "on separate lines")
            target = self.new_version(t.value)
            # a = b = <value>: both names hold the one object
            self.emit_operand(Var(self.version[first.value]) if isinstance(first, cst.Name) else value,
                              target)
            self.version[t.value] = target

    def unpack(self, target: cst.Tuple | cst.List, value: cst.BaseExpression | Const) -> Operand:
        """``a, (b, c), x[i] = value``: Python evaluates the whole right side, then stores
        left to right.  A nested tuple or an element target is first bound to a temporary,
        then unpacked or stored from it, so that only one-level unpacking reaches the IR."""
        targets = [e.value for e in target.elements]
        if isinstance(value, Const):
            value = cst.parse_expression(value.code)
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(targets) and not any(
                isinstance(e, cst.StarredElement) for e in value.elements):
            bases = {n: self.version.get(n, n) for n in self.res.locals & {
                b for t in targets for b in _flat_targets(t)}}  # (as the right side reads them)
            held = [self.lower(e.value, self.new_version(t.value) if isinstance(t, cst.Name) else
                               self.temporary(_target_hint(t)), t.value if isinstance(t, cst.Name) else "")
                    for e, t in zip(value.elements, targets)]
            for k, (t, e, op) in enumerate(zip(targets, value.elements, held)):
                written = {b for u in targets[:k] for b in _element_bases(u)}
                if written and _may_alias(e.value, self.res) and {  # (an item of a list is no view of it)
                        n for n in written & set(_variable_names(e.value)) if bases.get(n) not in self.lists}:
                    op = self.reread(t, e.value, op, bases, {n for u in targets[:k] for n in _flat_targets(u)})
                self.store(t, op, e.value)
                if isinstance(t, cst.Name) and isinstance(op, Var):  # th, om = s[0], s[1]
                    self.link_view(t.value, e.value, op.name)
            return held[-1]
        written: set[str] = set()
        for t in targets:
            again = {b for b in _element_bases(t) if self.version.get(b, b) not in self.lists} & written
            if again:  # an unpacked value may be a view of it, changed by the earlier store
                raise self.unsupported(t, f"'{sorted(again)[0]}' is changed by an earlier target of this "
                                          f"assignment, and the value unpacked into this one may be a view "
                                          f"of it; write the values out as a tuple (x[0], x[1] = x[1], x[0])")
            written |= set(_element_bases(t))
        kind = self.inactive_kind(value)
        if kind is None and not self.local_reads(value):
            kind = "nondiff"
        source: Opaque | Var = Opaque(self.rename(value), self.local_reads(value), kind) \
            if kind is not None else self.lower(value, None, "items")
        news = tuple(self.new_version(t.value) if isinstance(t, cst.Name) else self.temporary(_target_hint(t))
                     for t in targets)
        self.out.append(Assign(news, source, self.loc))
        for t, new in zip(targets, news):
            self.store(t, Var(new))
        return Const(self.parsed.code(value), ())

    def reread(self, target: cst.BaseExpression, value: cst.BaseExpression, held: Var,
               bases: dict[str, str], rebound: set[str]) -> Var:
        """``B[0], B[1] = B[1], B[0]``: the value held for ``B[1]`` is ``B[0]`` as it was, unless
        it is a view of B (B has more than one dimension), which then shows the store into
        ``B[0]`` (Python's semantics: the second row gets the new first row)."""
        numpy = next((n for n, v in sorted(self.fn.free.items()) if v is np), None)
        base = value.value if isinstance(value, cst.Subscript) else None
        index_names = {n for e in value.slice for n in _variable_names(e)} if base is not None else set()
        if (numpy is None or not isinstance(base, cst.Name) or base.value not in bases
                or index_names & rebound or not isinstance(target, cst.Subscript)):
            code = self.parsed.code(value).strip()
            raise self.unsupported(value, f"{code} may be a view of an array that this assignment "
                                          f"changes before storing it; assign a copy "
                                          f"({code}.copy()) or use separate lines")
        old = bases[base.value]
        test = cst.parse_expression(f"isinstance({old}, {numpy}.ndarray) and "
                                    f"{numpy}.shares_memory({old}, {held.name})")
        view = self.emit(Opaque(test, (old, held.name), "nondiff"), None, "is_view", value)
        name = self.temporary(held.name)
        body, _ = self.nested(lambda: self.lower(value, name))
        orelse, _ = self.nested(lambda: self.emit_operand(held, name))
        self.out.append(If(view, body, orelse, self.location(value)))
        return Var(name)

    def hoist(self, node: cst.BaseExpression, read_first: list[str] = ()) -> cst.BaseExpression:
        """``f((y := g(x)) * 2)`` as ``y = g(x)`` first, then ``f(y * 2)``: each ':=' becomes
        an assignment before the statement, in evaluation order (inner ones first).  Refused
        where that would change what runs: inside a comprehension or lambda, where it may not
        run, or after a read of its name in the same statement (``read_first`` names the
        statement reads before the expression)."""
        if not _has_walrus(node):
            return node
        for walrus, where in _walrus_places(node, ""):
            if where:
                raise self.unsupported(walrus, f"the walrus operator ':=' {where} is not supported; "
                                               f"assign on its own line before this statement")
            name = walrus.target.value
            start = self.parsed.positions[walrus].start
            earlier = [n for n in _walk(node) if isinstance(n, cst.Name) and n.value == name
                       and n is not walrus.target and n in self.parsed.positions
                       and _before(self.parsed.positions[n].start, start)
                       and not any(n is m for m in _walk(walrus))]
            if earlier or name in read_first:
                raise self.unsupported(walrus, f"this statement reads '{name}' before the walrus "
                                               f"operator ':=' assigns it; assign on its own line")
        return node.visit(_Hoister(self, node))

    def store(self, target: cst.BaseExpression, op: Operand, shown: cst.CSTNode | None = None) -> None:
        """Bind one unpacked target to the value ``op`` holds (a new version already named
        after a plain name's target); ``shown`` is the value as the user wrote it."""
        if isinstance(target, cst.Name):
            self.version[target.value] = op.name
        elif isinstance(target, cst.Subscript):
            self.setitem(target, cst.Name(op.name), shown)
        else:
            self.unpack(target, cst.Name(op.name))

    def temporary(self, hint: str) -> str:
        """A fresh local variable that s2sad introduces (it appears in no user code)."""
        name = self.fn.fresh(hint)
        self.res.locals = self.res.locals | {name}
        self.version[name] = name
        return name

    def augmented_assign(self, node: cst.AugAssign) -> None:
        if _has_walrus(node.value):
            node = node.with_changes(value=self.hoist(node.value, _flat_targets(node.target)))
        self.check_expression(node.value)
        self.check_target(node.target)
        op_type = AUGMENTED_OPS.get(type(node.operator))
        if op_type is None:
            raise self.unsupported(node, f"the operator '{self.parsed.code(node.operator).strip()}' "
                                         "is not supported")
        value = node.value  # x /= a + b is x / (a + b)
        if not value.lpar and isinstance(value, (cst.BinaryOperation, cst.BooleanOperation, cst.Comparison,
                                                 cst.IfExp, cst.UnaryOperation, cst.Lambda)):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        expr = cst.BinaryOperation(left=node.target, operator=op_type(), right=value)
        if isinstance(node.target, cst.Subscript):
            self.setitem(node.target, expr)
            return
        name = node.target.value
        operator_code = self.parsed.code(node.operator).strip()
        linked = self.linked(name)
        self.rewrote = True
        refusal = self.check_in_place(name, node, f"'{name} {operator_code} ...'",
                                      f"{name} = {name} {operator_code[:-1]} ...", at_run_time=True,
                                      linked=_members(linked))
        old, new = self.version.get(name, name), self.new_version(name)
        if refusal is not None and self.out is not self.fn.body:
            # (in a loop or a branch the check also stands on its own: a write there that
            # s2sad sees reach nothing would otherwise lose it, and change the array unseen)
            where = self.location(node)
            check = cst.parse_expression(f"{self.helper(runtime.check_number)}({old}, "
                                         f"{f'{where.filename}:{where.line}:{where.column}'!r}, {refusal!r})")
            self.out.append(Assign(None, Opaque(check, (old,), "nondiff"), where))
        self.lower(expr, new, name)
        self.version[name] = new
        if refusal is not None:  # the generated code refuses it where the value is an array
            loc = self.location(node)
            last = self.out[-1]
            assert isinstance(last, Assign) and last.target == new and isinstance(last.value, Call)
            last.value.number_check = (f"{loc.filename}:{loc.line}:{loc.column}", refusal)
        if linked:
            self.same_array(new, old)
        self.follow_views(name, node, linked)

    def nested_function(self, name: str, node: cst.FunctionDef | cst.Lambda) -> None:
        """A ``def`` (or a lambda bound to a name) inside the function.

        It is compiled on its own, with the function's globals, and differentiated
        like any called Python function.  The variables of the function it reads become
        keyword-only parameters, which each call passes (their values at the call, as
        Python's closures read them).
        """
        if isinstance(node, cst.FunctionDef) and node.decorators:
            raise self.unsupported(node, "decorated nested functions are not supported; define "
                                         "the function at module level")
        if name in self.version or name in self.local_functions:
            raise self.unsupported(node, f"'{name}' is defined twice; use another name")
        declared = [n for n in _walk(node.body) if isinstance(n, (cst.Nonlocal, cst.Global))]
        if declared:  # the nested function is compiled on its own: it has no enclosing scope
            raise self.unsupported(declared[0], UNSUPPORTED[type(declared[0])])
        own = {n.value for n in _walk(node.params) if isinstance(n, cst.Name)} | _assigned_in(
            _suite(node.body) if isinstance(node, cst.FunctionDef) else [])
        read = {n.value for n in _walk(node.body) if isinstance(n, cst.Name)}
        recursive = name in read - own  # its own name is bound to it when it is compiled, below
        outer = sorted(read & (self.res.locals - own - {name}))
        loc = self.location(node)
        if outer:
            why = ("calls itself" if recursive else next((f"calls the nested function '{n}'" for n in outer
                                                          if n in self.local_functions), None)) or self.used_uncalled(name, node)
            if why:
                raise self.unsupported(node, f"the nested function '{name}' {why} and reads "
                                             f"{', '.join(outer)} from the enclosing function; pass "
                                             f"{'it as an argument' if len(outer) == 1 else 'them as arguments'}")
            star = node.params.star_arg
            node = node.with_changes(params=node.params.with_changes(
                star_arg=cst.ParamStar() if isinstance(star, cst.MaybeSentinel) else star,
                kwonly_params=[*node.params.kwonly_params, *(cst.Param(cst.Name(n)) for n in outer)]))
            self.closure_args[name] = outer
        if isinstance(node, cst.FunctionDef) and outer:  # its source, as compiled, at its lines
            text = "\n" * (loc.line - 1) + textwrap.dedent(_EMPTY.code_for_node(node.with_changes(leading_lines=[])))
            filename, first = f"{loc.filename} (nested function {name}, as compiled)", 1
            linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        elif isinstance(node, cst.FunctionDef):
            text = textwrap.dedent(_EMPTY.code_for_node(node.with_changes(leading_lines=[])))
            filename, first = loc.filename, loc.line
        else:
            body = _EMPTY.code_for_node(node.body).strip()
            text = f"def {name}({_EMPTY.code_for_node(node.params).strip()}):\n    return {body}\n"
            filename, first = f"<s2sad: lambda {name} at {loc.filename}:{loc.line}>", 1
            linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        tree = ast.parse(text)
        ast.increment_lineno(tree, first - 1)
        if recursive:  # defined inside a maker function, so that its own name is a closure cell
            maker = ast.FunctionDef(name=_MAKER, args=ast.arguments([], [], None, [], [], None, []),
                                    body=[*tree.body, ast.Return(ast.Name(name, ast.Load()))],
                                    decorator_list=[], returns=None,
                                    **({"type_params": []} if sys.version_info >= (3, 12) else {}))
            tree.body = [ast.copy_location(maker, tree.body[0])]
            ast.fix_missing_locations(tree)
        namespace: dict[str, Any] = {}
        exec(compile(tree, filename, "exec"), self.parsed.source.fn.__globals__, namespace)
        self.local_functions[name] = namespace[_MAKER]() if recursive else namespace[name]
        self.version[name] = name
        statement = node.with_changes(leading_lines=[]) if isinstance(node, cst.FunctionDef) else \
            cst.Assign([cst.AssignTarget(cst.Name(name))], node)
        self.out.append(Assign(None, Opaque(statement, (), "nondiff"), loc))

    def used_uncalled(self, name: str, node: cst.CSTNode) -> str | None:
        """Why the nested function ``name`` cannot get parameters added: a use other than a call."""
        called = {id(n.func) for n in _walk(self.parsed.function.body) if isinstance(n, cst.Call)}
        defined = {id(node.name)} if isinstance(node, cst.FunctionDef) else set()
        stores = _store_names(self.parsed.function.body)
        if any(isinstance(n, cst.Name) and n.value == name and id(n) not in called | defined | stores
               for n in _variable_names_nodes(self.parsed.function.body)):
            return "is used other than called"
        return None

    def comprehension(self, node: cst.ListComp | cst.GeneratorExp | cst.DictComp, target: str | None) -> Operand:
        """``[e for v in xs if c]`` as a loop that appends to a new list; ``{k: e for ...}``
        as one that assigns ``d[k] = e`` into a new dict."""
        items = target or self.fn.fresh("items")
        comp_names = []
        clause = node.for_in
        while clause is not None:
            names = _target_names(clause.target)
            if names is None:
                raise self.unsupported(clause.target, "comprehension targets must be names")
            clash = [n for n in names if n in self.res.locals]
            if clash:
                raise self.unsupported(clause.target, f"the comprehension variable '{clash[0]}' is "
                                                      f"also a variable of the function; rename it")
            comp_names += names
            clause = clause.inner_for_in
        self.res.locals = self.res.locals | set(comp_names) | {items}
        self.fn.names.update(comp_names)
        statement: cst.BaseStatement = cst.SimpleStatementLine([cst.Expr(cst.Call(
            cst.Attribute(cst.Name(items), cst.Name("append")), [cst.Arg(node.elt)]))] if not isinstance(
            node, cst.DictComp) else [cst.Assign([cst.AssignTarget(_item(cst.Name(items), node.key))], node.value)])
        clauses = []
        clause = node.for_in
        while clause is not None:
            clauses.append(clause)
            clause = clause.inner_for_in
        for clause in reversed(clauses):
            for cond in reversed(clause.ifs):
                statement = cst.If(test=cond.test, body=cst.IndentedBlock([statement]))
            statement = cst.For(target=clause.target, iter=clause.iter,
                                body=cst.IndentedBlock([statement]))
        self.out.append(Assign(items, Const("{}" if isinstance(node, cst.DictComp) else "[]"), self.loc))
        self.version[items] = items
        self.block([statement])
        return Var(self.version[items])

    def setitem(self, target: cst.Subscript, value: cst.BaseExpression, shown: cst.CSTNode | None = None) -> None:
        """``x[i] = v`` as a new version of x: ``x_2 = x.copy(); x_2[i] = v``.

        The caller's arrays are never written to.  An alias of x (``y = x``) would
        not see the change, so assigning into one is an error.
        """
        name = target.value.value
        current = self.version.get(name, name)
        linked = self.linked(name)
        self.rewrote = True
        self.check_in_place(name, target, f"'{self.parsed.code(target).strip()} = ...'",
                            f"{name} = {name}.copy() before changing it", linked=_members(linked))
        v = self.lower(value, None, "value")
        index_op, slice_nodes = self.index(target)
        new = self.new_version(name)
        node = target.with_changes(value=cst.Name(new), slice=slice_nodes)
        call = Call(self.registry.rule(SETITEM), f"{name}[...] =",
                    {"x": Var(current), "index": index_op, "v": v}, node)
        if isinstance(v, Var) and self.sharers(v.name) & self.sharers(current):
            # NumPy may copy a view of x into x element by element: the generated code checks
            loc = self.location(target)
            call.overlap = (f"{os.path.basename(loc.filename)}:{loc.line}:{loc.column}: "
                            f"{self.parsed.code(target).strip()} = {self.parsed.code(shown or value).strip()}")
        self.out.append(Assign(new, call, self.location(target)))
        self.version[name] = new
        self.same_array(new, current)
        self.follow_views(name, target, linked)

    def append(self, call: cst.Call) -> None:
        """``xs.append(x)`` as a new version of the list: ``xs_2 = xs + [x]``."""
        receiver = call.func.value
        if len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
            raise self.unsupported(call, "append takes one value")
        name = receiver.value
        current = self.version.get(name, name)
        self.check_in_place(name, call, f"'{name}.append(...)'", f"{name} = {name} + [...]")
        op, node = self.operand(call.args[0].value)
        if isinstance(op, Var):
            self.stored.add(op.name)
        new = self.new_version(name)
        xs_node = cst.Name(current)
        primal = cst.BinaryOperation(xs_node, cst.Add(), cst.List([cst.Element(node)]))
        self.out.append(Assign(new, Call(self.registry.rule(APPEND), f"{name}.append",
                                         {"xs": Var(current), "x": op}, primal,
                                         slots={"xs": xs_node, "x": node}), self.loc))
        self.version[name] = new
        self.lists.add(new)

    def pop(self, call: cst.Call) -> cst.BaseExpression:
        """``v = xs.pop()`` as ``v = xs[-1]`` and a new version ``xs_2 = xs[:-1]``."""
        name = call.func.value.value
        if call.args:
            return self.list_method(call)
        self.check_in_place(name, call, f"'{name}.pop()'", f"{name}[-1] and {name} = {name}[:-1]")
        current = self.version.get(name, name)
        item = self.fn.fresh(f"{name}_last")
        last = cst.parse_expression(f"{current}[-1]")
        self.apply(operator.getitem, [Var(current), Const("-1")], {}, last, call, item, "item",
                   [last.value, None])
        new = self.new_version(name)
        rest = cst.parse_expression(f"{current}[:-1]")
        self.apply(operator.getitem, [Var(current), Const("slice(-1)")], {}, rest, call, new, "item",
                   [rest.value, None])
        self.views.discard(new)  # a slice of a list is a new list
        self.version[name] = new
        self.lists.add(new)
        self.res.locals = self.res.locals | {item}
        self.version[item] = item
        return cst.Name(item)

    def list_method(self, call: cst.Call) -> cst.BaseExpression:
        """``xs.insert(i, v)``, ``xs.extend(ys)`` and ``xs.pop(i)`` on a local list, as new
        versions of the list (``xs = xs[:i] + [v] + xs[i:]``, ``xs = xs + list(ys)``,
        ``xs = xs[:i] + xs[i:][1:]`` after ``v = xs[i]``); returns what the call returns."""
        name, method = call.func.value.value, call.func.attr.value
        forms = {"insert": (f"{name} = {name}[:i] + [v] + {name}[i:]", 2), "extend": (f"{name} = {name} + list(ys)", 1),
                 "pop": (f"v = {name}[i] and {name} = {name}[:i] + {name}[i:][1:]", 1)}
        form, count = forms[method]
        if len(call.args) != count or any(a.keyword or a.star for a in call.args):
            raise self.unsupported(call, f"'{name}.{method}' takes {count} positional "
                                         f"argument{'s' if count > 1 else ''} here; write {form}")
        self.check_in_place(name, call, f"'{name}.{method}(...)'", form)
        if method == "pop" and self.version.get(name, name) not in self.lists:  # d.pop(key) of a dict?
            raise self.unsupported(call, f"s2sad cannot tell that '{name}' is a list here (pop of "
                                         f"a dict takes a key); write {form}")
        held = [self.held(a.value) for a in call.args]
        result = cst.Name("None")
        if method == "pop":
            item = self.temporary(f"{name}_item")
            self.lower(cst.parse_expression(f"{name}[{held[0]}]"), item, item)
            result = cst.Name(item)
            code = f"{name}[:{held[0]}] + {name}[{held[0]}:][1:]"
        elif method == "insert":
            code = f"{name}[:{held[0]}] + [{held[1]}] + {name}[{held[0]}:]"
        elif isinstance(call.args[0].value, cst.List):
            code = f"{name} + {held[0]}"
        elif "list" not in self.res.locals and self.fn.free.get("list", builtins.list) is builtins.list:
            code = f"{name} + list({held[0]})"
        else:
            raise self.unsupported(call, f"'list' is not the builtin here; write {name} = {name} + [...]")
        value = cst.parse_expression(code)
        for n in _walk(value):  # the builtin, whatever the function's globals call 'list'
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "list":
                self.res.objects[n.func] = builtins.list
            if isinstance(n, cst.BinaryOperation):  # + of lists
                self.concatenations.add(n)
        new = self.new_version(name)
        self.lower(value, new, name)
        self.version[name] = new
        self.lists.add(new)
        return result

    def held(self, node: cst.BaseExpression) -> str:
        """Code for the value of an argument that code built here reads: as written when it
        reads no local variable (or is one), else a temporary that holds it."""
        if isinstance(node, cst.Name) or not self.local_reads(node):
            return self.parsed.code(node).strip() if not isinstance(node, cst.Name) else node.value
        return self.lower(node, self.temporary(self.hint(node)), "").name

    def check_in_place(self, name: str, node: cst.CSTNode, what: str, instead: str,
                       at_run_time: bool = False, linked: set[str] = frozenset()) -> str | None:
        """Refuse an in-place update that another name or the caller would see.

        s2sad writes ``x += v``, ``x[i] = v`` and ``x.append(v)`` as new values; that
        is only faithful when nothing else holds the old object.  ``at_run_time``: return
        the refusal instead, for a check the generated code runs (``x += v`` changes
        nothing in place when x is a number, whatever else holds it).
        """
        if getattr(self.parsed.source.fn, "__s2sad_generated__", False):
            # s2sad's own code changes in place only what nothing reads afterwards (a tape
            # popped once, a buffer no later statement reads): read as new values, it means
            # what it computes
            return None
        current = self.version.get(name, name)
        why = None
        if current in self.stored:
            why = f"'{name}' is also stored in a list, tuple or dict"
        elif current in self.views and name not in linked:
            why = f"'{name}' may be a view into another array (it comes from indexing or reshaping)"
        elif self.callee and current in self.res.params:
            why = f"'{name}' is an argument, so the calling function would see the change"
        else:
            partners = sorted(p for p in self.partners.get(current, set()) - {name} if self.read_later(node, p))
            if partners:
                why = f"'{name}' and '{partners[0]}' are the same object, and '{partners[0]}' is read later"
            else:
                shared = sorted(u for u in self.sharers(current) - {name} - linked if self.read_later(node, u))
                mine = self.bases.get(current, frozenset()) | {current}
                holding = sorted(u for u in {_user_name(c, self.res.locals) for c, held in self.holders.items()
                                             if held & mine} & self.res.locals - {name} - linked
                                 if self.read_later(node, u))
                if shared:
                    why = (f"'{shared[0]}' may share memory with '{name}' (it is a view of it, "
                           f"stop_gradient of it, or a function's result computed from it) and "
                           f"'{shared[0]}' is read later")
                elif holding:
                    why = (f"'{holding[0]}' holds '{name}' or a view of it, and is read later")
        if not why:
            return None
        message = f"{why}: {what} would change it in place, which s2sad does not follow; write {instead}"
        if at_run_time:
            return message
        raise self.unsupported(node, message)

    # --- in-place writes through views ------------------------------------------------
    def link_view(self, name: str, value: cst.BaseExpression, new: str) -> None:
        """After ``name = value``: follow ``name`` as a view of a local array when ``value``
        takes one in a way s2sad can undo (a basic or any index, ``.T``, ``transpose()``,
        ``swapaxes`` by literal axes, ``reshape``, ``ravel``)."""
        self.links.pop(name, None)
        form = self.view_form(value)
        stmt = next((s for s in reversed(self.out) if isinstance(s, Assign) and s.target == new), None)
        if (form is None or self.generated() or stmt is None or not isinstance(stmt.value, Call)
                or stmt.value.rule is None):
            return
        base, back, operands = form
        if back == "reshape" and (self.rewrote or self.loops):
            return
        current = self.version.get(base)
        if base == name or base not in self.res.locals or current is None or current in self.lists:
            return
        args = list(stmt.value.args.values())
        if not args or not isinstance(args[0], Var) or args[0].name != current:
            return
        if back == "index":
            operands = (stmt.value.args["index"],)
        self.links[name] = _ViewLink(base, back, operands, (current, new), (current, new), self.out)

    def view_form(self, node: cst.BaseExpression) -> tuple[str, str, tuple[Const, ...]] | None:
        """(base name, kind, operands) when ``node`` takes a view of a local name as s2sad follows."""
        node = _strip_parens(node)
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
            return node.value.value, "index", ()
        if isinstance(node, cst.Attribute) and node.attr.value == "T" and isinstance(node.value, cst.Name):
            return node.value.value, "transpose", ()
        if not isinstance(node, cst.Call) or any(a.keyword or a.star for a in node.args):
            return None
        func, args = node.func, [a.value for a in node.args]
        if isinstance(func, cst.Attribute) and func not in self.res.objects and isinstance(func.value, cst.Name):
            method, base = func.attr.value, func.value.value
        elif _view_function(self.res.object(func)) and args and isinstance(args[0], cst.Name):
            method, base, args = _view_function(self.res.object(func)), args[0].value, args[1:]
        else:
            return None
        if method == "swapaxes" and len(args) == 2 and all(_literal_int(a) is not None for a in args):
            return base, "swapaxes", tuple(Const(str(_literal_int(a))) for a in args)
        if (method, len(args)) in (("transpose", 0), ("ravel", 0)) or method == "reshape" and args:
            return base, "transpose" if method == "transpose" else "reshape", ()
        return None

    def generated(self) -> bool:
        """Whether the function is s2sad's own code (which changes in place only what nothing
        reads afterwards)."""
        return getattr(self.parsed.source.fn, "__s2sad_generated__", False)

    def linked(self, name: str) -> dict[str, _ViewLink]:
        """The views linked to ``name`` (its base, its views, theirs...) that a write into
        ``name`` changes too: followed by s2sad (empty when there is none, when the write is not
        in the block that took the view -- inside a loop or a branch after it, say -- or when
        one of them is an argument of a function compiled for a caller, which would see it)."""
        if self.generated():
            return {}
        valid = {v: link for v, link in self.links.items() if link.block is self.out
                 and link.now == (self.version.get(link.base), self.version.get(v))}
        found, todo = {}, [name]
        while todo:
            n = todo.pop()
            for v, link in valid.items():
                if v not in found and n in (v, link.base):
                    found[v] = link
                    todo += [v, link.base]
        if self.callee and any(self.version.get(n) in self.res.params for n in _members(found)):
            # a view of an argument: the calling function would see the write (refused as before,
            # or checked when run for x op= v, which changes nothing in place on a number)
            return {}
        return found

    def follow_views(self, name: str, node: cst.CSTNode, linked: dict[str, _ViewLink]) -> None:
        """``name`` has just changed in place: write the change into the arrays ``linked``
        to it, as NumPy would see it (each guarded by whether, when run, the view does share its
        base's memory: a number or a copy taken by fancy indexing does not)."""
        if not linked:
            return
        where = self.location(node)
        for view, link in linked.items():
            if link.flag is None:
                code = self.parsed.code(node).strip().splitlines()[0]
                refusal = (f"'{view}' was taken from '{link.base}', which is not an array here, so "
                           f"s2sad cannot tell whether '{code}' changes '{link.base}' too; write "
                           f"{view} = {view}.copy() before changing it, or make '{link.base}' an array")
                test = cst.parse_expression(
                    f"{self.helper(runtime.view_flag)}({link.taken[0]}, {link.taken[1]}, "
                    f"{f'{where.filename}:{where.line}:{where.column}'!r}, {refusal!r})")
                link.flag = self.emit(Opaque(test, link.taken, "nondiff"), None, f"{view}_is_view", node).name
        self.spread(name, None, linked, node)
        for view, link in linked.items():
            link.now = (self.version[link.base], self.version[view])

    def spread(self, name: str, source: str | None, linked: dict[str, _ViewLink], node: cst.CSTNode) -> None:
        """Write the new value of ``name`` back into its base and into its views that are read
        later (not into ``source``, whence the change came)."""
        link = linked.get(name)
        if link is not None and link.base != source:
            self.when(link.flag, node, lambda: (self.write_back(name, link, node),
                                                self.spread(link.base, name, linked, node)))
        for view, other in linked.items():
            if other.base == name and view != source and self.live(view, linked, node):
                self.when(other.flag, node, lambda view=view, other=other: (
                    self.rederive(view, other, node), self.spread(view, name, linked, node)))

    def live(self, view: str, linked: dict[str, _ViewLink], node: cst.CSTNode) -> bool:
        """Whether ``view``, or a view taken from it, is read after ``node`` (later on its line too)."""
        return self.read_later(node, view) or self.read_on_line_after(node, view) or any(
            link.base == view and self.live(v, linked, node) for v, link in linked.items())

    def read_on_line_after(self, node: cst.CSTNode, name: str) -> bool:
        """Whether ``name`` is read on the line of ``node``, after its start (``x[0] = v; s = y``)."""
        if node not in self.parsed.positions:
            return False
        start = self.parsed.positions[node].start
        stores = _store_names(self.parsed.function.body)
        return any(isinstance(n, cst.Name) and n.value == name and id(n) not in stores
                   and n in self.parsed.positions and self.parsed.positions[n].start.line == start.line
                   and self.parsed.positions[n].start.column > start.column
                   for n in _walk(self.parsed.function.body))

    def when(self, flag: str, node: cst.CSTNode, lower: Callable[[], Any]) -> None:
        """``if flag: <lower>`` with the versions it changes joined after it."""
        before = dict(self.version)
        body, _ = self.nested(lower)
        orelse: list[Stmt] = []
        self.version = self.join(before, [(body, self.version, False), (orelse, before, False)])
        self.out.append(If(Var(flag), body, orelse, self.location(node)))

    def write_back(self, view: str, link: _ViewLink, node: cst.CSTNode) -> None:
        """The base of ``view`` with the view's new value written into it."""
        base, value = link.base, self.version[view]
        new = self.new_version(base)
        if link.back == "index":
            index = link.operands[0]
            call = Call(self.registry.rule(SETITEM), f"{base}[...] =",
                        {"x": Var(self.version[base]), "index": index, "v": Var(value)},
                        cst.parse_expression(f"{new}[{index.code}]"))
            self.out.append(Assign(new, call, self.location(node)))
        elif link.back == "reshape":
            self.view_call(np.ndarray.reshape, value, [self.shape(link.taken[0], node)], "reshape", new, node)
        else:
            self.view_call(*self.reversal(link, value), new, node)
        self.same_array(new, self.version[base])
        self.version[base] = new

    def rederive(self, view: str, link: _ViewLink, node: cst.CSTNode) -> None:
        """``view`` taken again from its base's new value."""
        base = self.version[link.base]
        new = self.new_version(view)
        if link.back == "index":
            index = link.operands[0]
            item = cst.parse_expression(f"{base}[{index.code}]")
            self.apply(operator.getitem, [Var(base), index], {}, item, node, new, "item", [item.value, None])
        elif link.back == "reshape":
            self.view_call(np.ndarray.reshape, base, [self.shape(link.taken[1], node)], "reshape", new, node)
        else:
            self.view_call(*self.reversal(link, base), new, node)
        self.version[view] = new

    def shape(self, version: str, node: cst.CSTNode) -> Var:
        """``version.shape``, which carries no gradient, in a variable."""
        return self.emit(Opaque(cst.parse_expression(f"{version}.shape"), (version,), "nondiff"), None,
                         f"{_user_name(version, self.res.locals)}_shape", node)

    def reversal(self, link: _ViewLink, receiver: str) -> tuple[Any, str, tuple[Const, ...], str]:
        """How a transposed view and its base are taken from each other (the same way)."""
        if link.back == "transpose":
            return np.ndarray.T, receiver, (), "T"
        return np.ndarray.swapaxes, receiver, link.operands, "swapaxes"

    def view_call(self, key: Any, receiver: str, operands: Any, word: str, new: str,
                  node: cst.CSTNode) -> None:
        """``new = receiver.word(operands)`` (``receiver.T`` for the attribute)."""
        code = f"{receiver}.T" if word == "T" else f"{receiver}.{word}({', '.join(_code(self.parsed, op) for op in operands)})"
        primal = cst.parse_expression(code)
        names = [primal.value if word == "T" else primal.func.value]
        self.apply(key, [Var(receiver), *operands], {}, primal, node, new, word, [*names, *(None for _ in operands)])

    def ufunc_at(self, call: cst.Call) -> None:
        """``np.add.at(z, i, v)`` as ``z = ufunc_add_at(z, i, v)``: z changes in place (a new version,
        written through the views linked to it)."""
        function = _ufunc_at(self.res.object(call.func))
        spelled = self.parsed.code(call.func).strip()
        if function is MISSING:
            raise self.unsupported(call, f"{spelled}(...) changes its first argument in place, which s2sad "
                                         f"differentiates for np.add.at and np.subtract.at only; write the "
                                         f"update as a loop (z[i] = z[i] * v[k] for each index)")
        target = call.args[0].value if call.args else None
        if (len(call.args) != 3 or any(a.keyword or a.star for a in call.args)
                or not isinstance(target, cst.Name) or target.value not in self.version):
            raise self.unsupported(call, f"write {spelled}(z, indices, values), with z a local array")
        name = target.value
        linked = self.linked(name)
        self.rewrote = True
        self.check_in_place(name, call, f"'{spelled}({name}, ...)'", f"{name} = {name}.copy() first",
                            linked=_members(linked))
        func = cst.Name(self.helper(function))
        self.res.objects[func] = function
        old, new = self.version[name], self.new_version(name)
        self.lower(call.with_changes(func=func), new, name)
        self.same_array(new, old)
        self.version[name] = new
        self.follow_views(name, call, linked)

    def out_argument(self, call: cst.BaseExpression) -> cst.Arg | None:
        """The ``out=`` argument of a call to a ufunc, or a function whose rule takes one (not
        ``out=None``)."""
        if not isinstance(call, cst.Call):
            return None
        out = next((a for a in call.args if a.keyword is not None and a.keyword.value == "out"), None)
        if out is None or isinstance(out.value, cst.Name) and out.value.value == "None":
            return None
        function = self.res.object(call.func)
        rule = self.registry.rule(function)
        return out if rule is not None and (isinstance(function, np.ufunc) or any(
            p.name == "out" for p in rule.params)) else None

    def out_call(self, call: cst.Call) -> cst.BaseExpression:
        """``f(a, b, out=z)`` as ``z = f(a, b)`` (z changes in place: a new version, written
        through the views linked to it), ``f(a, out=z[i])`` as ``z[i] = f(a)``; returns ``z``
        (or ``z[i]``), which is the call's value."""
        out = self.out_argument(call)
        assert out is not None
        spelled = self.parsed.code(call.func).strip()
        target = _strip_parens(out.value)
        where = self.location(call)
        check_call = f"{self.helper(runtime.check_out)}({{}}, {{}}, " \
                     f"{f'{where.filename}:{where.line}:{where.column}'!r}, {spelled!r})"
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and (
                target.value.value in self.version and target.value.value in self.res.locals):
            value = self.temporary(spelled.rsplit(".", 1)[-1])
            self.lower(_without_argument(call, out), value, value)
            check = cst.parse_expression(check_call.format(_EMPTY.code_for_node(self.rename(target)), value))
            self.out.append(Assign(None, Opaque(check, (*self.local_reads(target), value), "nondiff"), where))
            self.setitem(target, cst.Name(value))
            return target
        if not isinstance(target, cst.Name) or target.value not in self.version or target.value not in self.res.locals:
            raise self.unsupported(out, f"{spelled}(..., out={self.parsed.code(target).strip()}) writes into an "
                                        f"array that is not a local variable, which s2sad does not follow; "
                                        f"write z = {spelled}(...) instead, with z a new name")
        if any(a.keyword is not None and a.keyword.value == "where" for a in call.args):
            raise self.unsupported(call, f"{spelled}(..., out=..., where=...) keeps the old values of the out "
                                         f"array where the condition is false; write z = np.where(condition, "
                                         f"{spelled}(...), z)")
        name = target.value
        linked = self.linked(name)
        self.rewrote = True
        self.check_in_place(name, call, f"'{spelled}(..., out={name})'", f"{name} = {spelled}(...)",
                            linked=_members(linked))
        old, new = self.version[name], self.new_version(name)
        self.lower(_without_argument(call, out), new, name)
        self.same_array(new, old)
        self.version[name] = new
        self.out.append(Assign(None, Opaque(cst.parse_expression(check_call.format(old, new)), (old, new),
                                            "nondiff"), where))
        self.follow_views(name, call, linked)
        return cst.Name(name)

    def helper(self, function: Any) -> str:
        """The name by which generated code calls the runtime ``function``."""
        if function not in self.helpers:
            name = function.__name__
            if name in self.fn.user_names or self.fn.free.get(name, function) is not function:
                name = self.fn.fresh(name)
            self.helpers[function] = name
            self.fn.free[name] = function
        return self.helpers[function]

    def read_after(self, node: cst.CSTNode, name: str) -> bool:
        """Whether ``name`` is read after ``node`` ends, or in a loop around it outside it."""
        end = self.parsed.positions[node].end.line
        inside = {id(x) for x in _walk(node)}
        loops = [n for n in _walk(self.parsed.function.body) if isinstance(n, _LOOPS)
                 and n is not node and id(n) not in inside and any(x is node for x in _walk(n))]
        stores = _store_names(self.parsed.function.body)
        for n in _walk(self.parsed.function.body):
            if (isinstance(n, cst.Name) and n.value == name and id(n) not in stores
                    and id(n) not in inside and n in self.parsed.positions):
                if self.parsed.positions[n].start.line > end or any(
                        any(x is n for x in _walk(loop)) for loop in loops):
                    return True
        return False

    def read_later(self, node: cst.CSTNode, name: str) -> bool:
        """Whether ``name`` is read after ``node``, or anywhere in a loop around it."""
        line = self.location(node).line
        loops = [n for n in _walk(self.parsed.function.body) if isinstance(n, _LOOPS)
                 and any(x is node for x in _walk(n))]
        stores = _store_names(self.parsed.function.body)
        for n in _walk(self.parsed.function.body):
            if isinstance(n, cst.Name) and n.value == name and id(n) not in stores and n in self.parsed.positions:
                if self.location(n).line > line or any(any(x is n for x in _walk(loop)) for loop in loops):
                    return True
        return False

    def check_target(self, target: cst.BaseAssignTargetExpression) -> None:
        if isinstance(target, cst.Name):
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for e in target.elements:
                if isinstance(e, cst.StarredElement):
                    raise self.unsupported(e, "starred unpacking is not supported; index the "
                                              "sequence instead (first, rest = t[0], t[1:])")
                self.check_target(e.value)
            return
        if isinstance(target, cst.Subscript):
            if not isinstance(target.value, cst.Name) or target.value.value not in self.res.locals:
                raise self.unsupported(target, "assign into an element of a local variable only "
                                               "(x[i] = v with x a local name)")
            return
        raise self.unsupported(target, "assignment to an attribute is not supported; use a local "
                                       "variable")

    # --- expressions ----------------------------------------------------------
    def lower(self, node: cst.BaseExpression, target: str | None, hint: str = "") -> Operand:
        """Emit statements computing ``node``; return the operand that holds it."""
        if target is not None and isinstance(_strip_parens(node), (cst.List, cst.ListComp)):
            self.lists.add(target)
        reads = self.local_reads(node)
        if not reads:
            empty = _strip_parens(node)
            if (target is not None and self.out is self.fn.body
                    and isinstance(empty, (cst.Tuple, cst.List, cst.Dict)) and not empty.elements):
                self.sizes[target] = () if isinstance(empty, cst.Dict) else 0  # f(*t, **d) passes nothing
            return self.emit_operand(Const(self.parsed.code(_strip_parens(node)).strip()), target)
        kind = self.inactive_kind(node)
        if kind is not None:
            opaque = Opaque(self.rename(_strip_parens(node)), reads, kind, self.stopped_copy(node))
            result = self.emit(opaque, target, self.hint(node) if target is None else hint, node)
            if kind == "stopped" and _may_alias(node, self.res):  # stop_gradient(b) is b itself
                self.share(result.name, reads)
            return result
        if isinstance(node, cst.Name):
            version = self.version.get(node.value, node.value)
            if version in self.unbound_in:
                # read after a branch that binds it on one path only (under the same condition
                # again, say): the adjoint starts from its zero before that read, so it must
                # exist on every path
                self.bind_everywhere(version)
            return self.emit_operand(Var(version), target)
        if isinstance(node, cst.BinaryOperation):
            return self.binary(node, target)
        if isinstance(node, cst.UnaryOperation):
            return self.unary(node, target)
        if isinstance(node, cst.Call):
            return self.call(node, target)
        if isinstance(node, cst.Subscript):
            return self.subscript(node, target)
        if isinstance(node, cst.Attribute):
            return self.attribute(node, target)
        if isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
            return self.container(node, target)
        if isinstance(node, cst.IfExp):
            return self.conditional(node, target)
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.DictComp)):
            return self.comprehension(node, target)
        raise self.unsupported(node, UNSUPPORTED.get(type(node), f"'{_describe(node)}' is not supported"))

    def operand(self, node: cst.BaseExpression) -> tuple[Operand, cst.BaseExpression]:
        """Lower a sub-expression; also return the node that stands for it in its parent."""
        op = self.lower(node, None, self.hint(node))
        if isinstance(op, Var):
            return op, cst.Name(op.name)
        return op, self.rename(node)

    def conditional(self, node: cst.IfExp, target: str | None) -> Operand:
        """``a if c else b``: an if statement that assigns one name in both branches."""
        test = self.condition(node.test)
        name = target or self.fn.fresh(["chosen"])
        body, _ = self.nested(lambda: self.lower(node.body, name))
        orelse, _ = self.nested(lambda: self.lower(node.orelse, name))
        self.out.append(If(test, body, orelse, self.location(node)))
        return Var(name)

    def binary(self, node: cst.BinaryOperation, target: str | None) -> Operand:
        key, word = BINARY_OPS.get(type(node.operator), (None, ""))
        if key is None:
            raise self.unsupported(node, f"the operator '{self.parsed.code(node.operator).strip()}' "
                                         "is not supported on values that carry a gradient")
        if key is operator.add and (isinstance(node.left, _DISPLAYS) or isinstance(node.right, _DISPLAYS)
                                    or node in self.concatenations):
            key = runtime.concat  # xs + [v]: a concatenation (unless xs turns out to be an array)
        (left, lnode), (right, rnode) = self.operand(node.left), self.operand(node.right)
        primal = node.with_changes(left=lnode, right=rnode, operator=_one_line(node.operator),
                                   lpar=[], rpar=[])
        return self.apply(key, [left, right], {}, primal, node, target, word, [lnode, rnode])

    def unary(self, node: cst.UnaryOperation, target: str | None) -> Operand:
        key, word = UNARY_OPS.get(type(node.operator), (None, ""))
        if key is None:
            raise self.unsupported(node, f"the operator '{self.parsed.code(node.operator).strip()}' "
                                         "is not supported on values that carry a gradient")
        arg, anode = self.operand(node.expression)
        primal = node.with_changes(expression=anode, lpar=[], rpar=[])
        return self.apply(key, [arg], {}, primal, node, target, word, [anode])

    def call(self, node: cst.Call, target: str | None) -> Operand:
        if self.res.object(node.func) is runtime.mul_into and len(node.args) == 2 and not any(
                a.keyword or a.star for a in node.args):
            # generated code's product written into a dead buffer: differentiated (and, when
            # replayed, computed) as the product itself, so the buffer keeps its value
            product = cst.BinaryOperation(node.args[0].value, cst.Multiply(), node.args[1].value)
            return self.binary(product, target)
        if any(a.star for a in node.args):
            spread: list[cst.Arg] = []
            for a in node.args:
                spread += self.unstar(a, keep=self.fills_varargs(node, a, spread))
            node = node.with_changes(args=spread)
        if self.out_argument(node) is not None:  # np.sum(np.exp(a, out=z)): z = np.exp(a) first
            return self.lower(self.out_call(node), target)
        called = self.res.object(node.func)
        plain = not any(a.keyword or a.star for a in node.args)
        if (called is builtins.min or called is builtins.max) and plain and len(node.args) > 2:
            # max(a, b, c) as max((a, b, c)): tied arguments share the gradient equally
            items = cst.Tuple([cst.Element(a.value) for a in node.args], lpar=[cst.LeftParen()],
                              rpar=[cst.RightParen()])
            node = node.with_changes(args=[cst.Arg(items)])
        if called is math.log and plain and len(node.args) == 2:
            # math.log(x, base) is math.log(x) / math.log(base), as Python computes it
            x, base = (node.with_changes(args=[cst.Arg(a.value)], lpar=[], rpar=[]) for a in node.args)
            return self.binary(cst.BinaryOperation(x, cst.Divide(), base), target)
        func = node.func
        looked_up = self.dict_get(node)
        if looked_up is not None:
            return self.lower(looked_up, target)
        if isinstance(func, cst.Attribute) and func.attr.value in _LIST_METHODS and isinstance(
                func.value, cst.Name) and func.value.value in self.res.locals:
            raise self.unsupported(node, f"'{func.value.value}.{func.attr.value}(...)' inside an "
                                         f"expression is not supported; call it on its own line "
                                         f"(v = {func.value.value}.pop(i) for pop)")
        args: list[Operand] = []
        nodes: list[cst.CSTNode | None] = []
        if isinstance(func, cst.Attribute) and func not in self.res.objects:
            receiver, rnode = self.operand(func.value)
            args.append(receiver)
            nodes.append(rnode)
            key = getattr(np.ndarray, func.attr.value, _UnknownMethod(func.attr.value))
            if isinstance(key, _UnknownMethod) and self.is_self(func.value):
                key = _method_of_self(func.attr.value, self.location(node))
            fnode = func.with_changes(value=rnode)
        else:
            key = self.res.object(func)
            fnode = self.rename(func)
            if self.registry.rule(key) is not None and _through_an_instance(func, self.res):
                # ``config.act(x)``: the generated code calls the function whose rule it
                # applies, bound by name, even if the attribute is rebound later
                fnode = cst.Name(self.fn.fresh("_".join(_attribute_path(func))))
                self.fn.free[fnode.value] = key
            if isinstance(func, cst.Name) and func.value in self.local_functions:
                key = self.local_functions[func.value]
                node = node.with_changes(args=[*node.args, *(
                    cst.Arg(cst.Name(n), keyword=cst.Name(n), equal=cst.AssignEqual(
                        cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
                    for n in self.closure_args.get(func.value, ()))])
            elif key is MISSING and (made := self.derivative(func)) is not None:
                # ``grad(fun)(x)`` in the differentiated code: the generated gradient is a
                # function with source like any other callee (differentiated at second order)
                key = made
                fnode = cst.Name(self.fn.fresh(made.__name__))
                self.fn.free[fnode.value] = made
            elif key is MISSING:
                key = _LocalCallee(self.parsed.code(func).strip())
            elif isinstance(func, cst.Attribute) and isinstance(getattr(key, "__self__", None), np.ndarray):
                args.append(Const(self.parsed.code(func.value).strip()))
                nodes.append(None)
                key = getattr(np.ndarray, func.attr.value, _UnknownMethod(func.attr.value))
            elif self.registry.rule(key) is None and _callable_object(key):
                # an object whose __call__ is written in Python: that method, the object first
                args.append(Const(_EMPTY.code_for_node(fnode).strip()))
                nodes.append(None)
                key = types.MethodType(type(key).__call__, key)
            elif (self.registry.rule(key) is None and isinstance(key, types.MethodType)
                  and isinstance(key.__func__, types.FunctionType)):
                # a method of a constant object (a global, a closure, a class for a classmethod):
                # the object is the first argument of the method's function
                spelled = fnode.value if isinstance(fnode, cst.Attribute) else cst.Attribute(
                    fnode, cst.Name("__self__"))
                args.append(Const(_EMPTY.code_for_node(spelled).strip()))
                nodes.append(None)
        lowered = [(a, *(self.operand(a.value) if a.star != "*" else self.splat(a.value))) for a in node.args]
        args += [op for a, op, _ in lowered if a.keyword is None]
        nodes += [n for a, _, n in lowered if a.keyword is None]
        kwargs = {a.keyword.value: op for a, op, _ in lowered if a.keyword is not None}
        kw_nodes = {a.keyword.value: n for a, _, n in lowered if a.keyword is not None}
        primal = node.with_changes(func=fnode, args=[a.with_changes(value=n) for a, _, n in lowered],
                                   lpar=[], rpar=[])
        word = func.attr.value if isinstance(func, cst.Attribute) else (
            func.value if isinstance(func, cst.Name) else "call")
        return self.apply(key, args, kwargs, primal, node, target, word, nodes, kw_nodes)

    def derivative(self, func: cst.BaseExpression) -> Any:
        """The function ``grad(fun, ...)`` / ``value_and_grad(fun, ...)`` makes, when ``func``
        is such a call of s2sad's API on a function s2sad can name and literal options."""
        if not isinstance(func, cst.Call) or not func.args or func.args[0].keyword or any(a.star for a in func.args):
            return None
        api = self.res.object(func.func)
        if getattr(api, "__module__", None) != "s2sad.api" or getattr(api, "__name__", None) not in _DERIVATIVES:
            return None
        target = self.res.object(func.args[0].value)
        if target is MISSING or not callable(target):
            return None
        try:
            options = [ast.literal_eval(self.parsed.code(a.value).strip()) for a in func.args[1:]]
        except (ValueError, SyntaxError):
            return None
        positional = [v for a, v in zip(func.args[1:], options) if a.keyword is None]
        keywords = {a.keyword.value: v for a, v in zip(func.args[1:], options) if a.keyword is not None}
        return api(target, *positional, **keywords)

    def dict_get(self, node: cst.Call) -> cst.BaseExpression | None:
        """``d.get(k, default)`` on a dict whose keys are known here (a display at the top
        level, not changed since) with a literal key: ``d[k]`` or ``default``."""
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "get" and isinstance(func.value, cst.Name)
                and func.value.value in self.res.locals and 1 <= len(node.args) <= 2
                and not any(a.keyword or a.star for a in node.args)):
            return None
        keys = self.sizes.get(self.version.get(func.value.value, func.value.value))
        key = _literal_key(_strip_parens(node.args[0].value))
        if not isinstance(keys, tuple) or key is None:
            return None
        if key in keys:
            return _item(func.value, node.args[0].value)
        return node.args[1].value if len(node.args) == 2 else cst.Name("None")

    def fills_varargs(self, node: cst.Call, arg: cst.Arg, before: list[cst.Arg]) -> bool:
        """Whether ``*t`` (``arg``, after the arguments ``before``) is the last positional
        argument of a call to a Python function, and is exactly its ``*args``."""
        from ..api import _Recursive

        func = node.func
        key = self.local_functions.get(func.value, MISSING) if isinstance(func, cst.Name) else MISSING
        key = self.res.object(func) if key is MISSING else key
        # (a function called directly: a method's instance would come first)
        if arg.star != "*" or not isinstance(key, (types.FunctionType, _Recursive)) or _python_function(key) is None:
            return False
        params = call_signature(key).parameters.values()
        named = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        positional = [a for a in node.args if a.keyword is None and a.star != "**"]
        return any(p.kind is p.VAR_POSITIONAL for p in params) and positional[-1] is arg and sum(
            a.keyword is None for a in before) == named

    def splat(self, value: cst.BaseExpression) -> tuple["_Splat", cst.Name]:
        """``*t`` passed to a function's ``*args``: ``tuple(t)``, which the callee's
        ``*args`` is, differentiated by the rule of ``tuple``."""
        op, node = self.operand(value)
        packed = self.apply(builtins.tuple, [op], {}, cst.Call(cst.Name("tuple"), [cst.Arg(node)]),
                            value, None, "tuple", [node])
        return _Splat(packed.name), cst.Name(packed.name)

    def unstar(self, arg: cst.Arg, keep: bool = False) -> list[cst.Arg]:
        """``*t`` as ``t[0], t[1], ...`` when t's length is known; ``**{"k": v}`` as ``k=v``.
        ``keep``: a ``*t`` of a length not known here stays (it fills a function's ``*args``)."""
        value = _strip_parens(arg.value)
        if arg.star == "":
            return [arg]
        if arg.star == "*" and isinstance(value, (cst.Tuple, cst.List)) and not any(
                isinstance(e, cst.StarredElement) for e in value.elements):
            return [cst.Arg(e.value) for e in value.elements]
        known = self.sizes.get(self.version.get(value.value, value.value)) if isinstance(
            value, cst.Name) and value.value in self.res.locals else None
        if arg.star == "*" and isinstance(known, int):
            return [cst.Arg(_item(value, cst.Integer(str(k)))) for k in range(known)]
        if arg.star == "**" and isinstance(value, cst.Dict) and all(
                isinstance(e, cst.DictElement) and (_literal_key(e.key) or "").isidentifier() for e in value.elements):
            return [cst.Arg(e.value, keyword=cst.Name(_literal_key(e.key))) for e in value.elements]
        if arg.star == "**" and isinstance(known, tuple) and all(k.isidentifier() for k in known):
            return [cst.Arg(_item(value, cst.SimpleString(repr(k))), keyword=cst.Name(k)) for k in known]
        if keep:
            return [arg]
        what = "a tuple or list whose length" if arg.star == "*" else "a dict display whose keys"
        splat = " (or, for a Python function's *args, that it is exactly them)" if arg.star == "*" else ""
        raise self.unsupported(arg, f"'{arg.star}' in a call needs {what} s2sad can see here (a "
                                    f"display, or a name assigned one at the function's top level){splat}; "
                                    f"pass the arguments one by one")

    def subscript(self, node: cst.Subscript, target: str | None) -> Operand:
        subject = MISSING if self.local_reads(node.value) else self.res.object(node.value)
        if subject is not MISSING and self.registry.rule(subject) is not None:  # np.r_[...]
            return self.index_concatenation(node, subject, target)
        value, vnode = self.operand(node.value)
        index, nodes = self.index(node)
        primal = node.with_changes(value=vnode, slice=nodes, lpar=[], rpar=[])
        return self.apply(operator.getitem, [value, index], {}, primal, node, target, "item",
                          [vnode, None])

    def index_concatenation(self, node: cst.Subscript, concat: Any, target: str | None) -> Operand:
        """``np.r_[a, 0.0, 1:3]`` as ``np.r_[items]`` with ``items = (a, 0.0, slice(1, 3))``
        (the same call: a subscript's entries reach ``__getitem__`` as one tuple), so that
        the rule of the concatenation applies to what ``__getitem__`` receives."""
        name = self.parsed.code(node.value).strip()
        word = name.rsplit(".", 1)[-1].strip("_")
        only = node.slice[0].slice if len(node.slice) == 1 else None
        if isinstance(only, cst.Index) and only.star is None:  # np.r_[a]: a, or a tuple of entries
            items, item_node = self.operand(only.value)
            primal = node.with_changes(value=self.rename(node.value), lpar=[], rpar=[],
                                       slice=[cst.SubscriptElement(cst.Index(item_node))])
            return self.apply(concat, [items], {}, primal, node, target, word, [item_node])
        parts, _ = self.index_parts(node)
        directive = _literal_key(_strip_parens(node.slice[0].slice.value)) if isinstance(
            node.slice[0].slice, cst.Index) else None
        if directive is not None and directive.strip() in ("r", "c"):
            raise self.unsupported(node.slice[0], f"{name}[{directive!r}, ...] builds an np.matrix, "
                                                  f"which s2sad does not differentiate; leave out the "
                                                  f"{directive!r} directive (np.atleast_2d gives a 2-d array)")
        rule = pack_rule(list(range(len(parts))))
        elements = [cst.Element(cst.Name(p.name) if isinstance(p, Var) else cst.parse_expression(p.code))
                    for p in parts]
        for p in parts:
            if isinstance(p, Var):
                self.stored.add(p.name)
        display = cst.Tuple(elements) if len(elements) != 1 else cst.Tuple(
            elements, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        call = Call(rule, "display", {q.name: op for q, op in zip(rule.params, parts)}, display,
                    slots={q.name: e.value for q, e in zip(rule.params, elements)})
        items = self.emit(call, None, "items", node)
        item_node = cst.Name(items.name)
        primal = node.with_changes(value=self.rename(node.value), lpar=[], rpar=[],
                                   slice=[cst.SubscriptElement(cst.Index(item_node))])
        return self.apply(concat, [items], {}, primal, node, target, word, [item_node])

    def index(self, node: cst.Subscript) -> tuple[Const, list[cst.SubscriptElement]]:
        """The index of ``x[...]`` as code for the adjoint, and the lowered elements."""
        parts, nodes = self.index_parts(node)
        codes = [_code(self.parsed, p) for p in parts]
        index = codes[0] if len(codes) == 1 else "(" + ", ".join(codes) + ")"
        index_reads = tuple(dict.fromkeys(n for p in parts for n in _reads(p)))
        return Const(index, index_reads), nodes

    def index_parts(self, node: cst.Subscript) -> tuple[list[Operand], list[cst.SubscriptElement]]:
        """The entries of the index of ``x[...]`` (a slice as ``slice(a, b)`` code), and the
        lowered elements."""
        parts, nodes = [], []
        for element in node.slice:
            s = element.slice
            if isinstance(s, cst.Index):
                if s.star is not None:
                    raise self.unsupported(s, "starred indices are not supported")
                op, inode = self.operand(s.value)
                parts.append(op)
                nodes.append(element.with_changes(slice=s.with_changes(value=inode)))
            else:
                bounds = {}
                for field in ("lower", "upper", "step"):
                    b = getattr(s, field)
                    bounds[field] = (Const("None"), None) if b is None else self.operand(b)
                codes = [_code(self.parsed, bounds[f][0]) for f in ("lower", "upper", "step")]
                if codes[2] == "None":  # slice(a, b); slice(b) when a is None
                    codes = codes[1:2] if codes[0] == "None" else codes[:2]
                parts.append(Const(f"slice({', '.join(codes)})",
                                   tuple(n for f in bounds for n in _reads(bounds[f][0]))))
                nodes.append(element.with_changes(slice=s.with_changes(
                    **{f: bounds[f][1] for f in bounds if bounds[f][1] is not None})))
        return parts, nodes

    def attribute(self, node: cst.Attribute, target: str | None) -> Operand:
        value, vnode = self.operand(node.value)
        key = getattr(np.ndarray, node.attr.value, _UnknownMethod(node.attr.value))
        primal = node.with_changes(value=vnode, lpar=[], rpar=[])
        return self.apply(key, [value], {}, primal, node, target, node.attr.value, [vnode])

    def container(self, node: cst.Tuple | cst.List | cst.Dict, target: str | None) -> Operand:
        """A tuple, list or dict display: element ``k`` gets the gradient's item ``k``."""
        elements, operands, keys = [], [], []
        for i, e in enumerate(node.elements):
            if isinstance(e, (cst.StarredElement, cst.StarredDictElement)):
                raise self.unsupported(e, "starred elements in displays are not supported; build "
                                          "the container element by element")
            if isinstance(e, cst.DictElement):
                key = _literal_key(e.key)
                if key is None:
                    raise self.unsupported(e.key, "dict keys must be string literals")
                keys.append(key)
            else:
                keys.append(i)
            op, enode = self.operand(e.value)
            if isinstance(op, Var):
                self.stored.add(op.name)
            operands.append(op)
            elements.append(e.with_changes(value=enode))
        primal = node.with_changes(elements=elements)
        if isinstance(node, cst.Tuple) and not primal.lpar:
            primal = primal.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        rule = pack_rule(keys)
        slots = {p.name: e.value for p, e in zip(rule.params, elements)}
        call = Call(rule, "display", {p.name: op for p, op in zip(rule.params, operands)}, primal,
                    slots=slots)
        result = self.emit(call, target, self.hint(node), node)
        # the container holds its elements themselves: views among them still see their array
        self.holders[result.name] = frozenset().union(
            *({op.name} | self.bases.get(op.name, frozenset()) | self.holders.get(op.name, frozenset())
              for op in operands if isinstance(op, Var)))
        if self.out is self.fn.body:
            self.sizes[result.name] = tuple(keys) if isinstance(node, cst.Dict) else len(elements)
        return result

    def apply(self, key: Any, args: list[Operand], kwargs: dict[str, Operand],
              primal: cst.BaseExpression, node: cst.CSTNode, target: str | None, word: str,
              nodes: list[cst.CSTNode | None] | None = None,
              kw_nodes: dict[str, cst.CSTNode] | None = None) -> Operand:
        """Emit one primitive application; ``nodes`` are the arguments' nodes in ``primal``."""
        rule = self.registry.rule(key)
        callee = self.parsed.code(node.func).strip() if isinstance(node, cst.Call) else (
            rule.name if rule is not None else self.parsed.code(node).strip())
        problem = None
        slots: dict[str, cst.CSTNode] = {}
        if rule is not None:
            try:
                bound = rule.bind(args, kwargs, default=Const, pack=_pack)
                positions = rule.bind(list(range(len(args))), {k: k for k in kwargs},
                                      default=lambda code: None, pack=lambda items: None)
                all_nodes = {**dict(enumerate(nodes or [])), **(kw_nodes or {})}
                slots = {p: all_nodes[i] for p, i in positions.items()
                         if i is not None and all_nodes.get(i) is not None}
                out = bound.get("out")
                if out is not None and not (isinstance(out, Const) and out.code == "None"):
                    problem = (f"{callee}(..., out=...) writes its result into an existing array, "
                               f"which s2sad does not follow; assign the result instead "
                               f"(y = {callee}(...))")
            except ValueError as exc:
                bound, problem = _positional(args, kwargs), (
                    f"{exc}; write the call without that argument (for where=, select with "
                    f"np.where(...) first), or wrap the call in stop_gradient(...) if no gradient "
                    f"should flow through it")
        elif _python_function(key) is not None:
            receiver = isinstance(key, (types.MethodType, _method_type()))
            result = self.emit(self.user_call(_python_function(key), callee, args, kwargs, primal, receiver),
                               target, _name_hint(word, args, False), node)
            if _returns_alias(_python_function(key)):  # it may return (a view of) an argument
                self.share(result.name, [op.name for op in [*args, *kwargs.values()] if isinstance(op, Var)])
            return result
        else:
            bound = _positional(args, kwargs)
            problem = _no_rule_message(key, callee)
        call = Call(rule if problem is None else None, callee, bound, primal, problem, slots=slots)
        result = self.emit(call, target, _name_hint(word, args, isinstance(node, cst.BinaryOperation)), node)
        if rule is not None and rule.fun in _VIEWS:
            self.views.add(result.name)
            self.share(result.name, [op.name for op in bound.values() if isinstance(op, Var)])
        return result

    def share(self, name: str, sources: list[str] | tuple[str, ...]) -> None:
        """Record that ``name`` may share memory with each of ``sources`` (and what they share)."""
        self.bases[name] = self.bases.get(name, frozenset()).union(
            *({s} | self.bases.get(s, frozenset()) | self.holders.get(s, frozenset()) for s in sources))

    def same_array(self, new: str, old: str) -> None:
        """``new`` is ``old`` changed in place (for NumPy, the same array): what shares memory with
        ``old`` shares it with ``new`` too (a list's items are no views of it)."""
        if old not in self.lists:
            self.bases[new] = self.bases.get(new, frozenset()) | {old} | self.bases.get(old, frozenset())

    def sharers(self, version: str) -> set[str]:
        """User variables that may share memory with ``version``: views, aliases, results."""
        mine = self.bases.get(version, frozenset()) | {version}
        found = set(mine) | {w for w, b in self.bases.items() if (b | {w}) & mine}
        return {_user_name(v, self.res.locals) for v in found} & self.res.locals

    def user_call(self, function: types.FunctionType, callee: str, args: list[Operand],
                  kwargs: dict[str, Operand], primal: cst.BaseExpression, receiver: bool = False) -> Call:
        """A call to a Python function: differentiated through that function's own adjoint
        (``receiver``: a method, called with the instance first)."""
        if isinstance(function, _method_type()):  # a method of self: bound at run time
            return Call(None, callee, _positional(args, kwargs), primal, function=function,
                        receiver=receiver)
        signature = call_signature(function)
        # a recursive call in generated code: positional parameters by position (their
        # names are not known before the code is generated)
        position = {} if isinstance(function, types.FunctionType) else {
            p.name: str(i) for i, p in enumerate(signature.parameters.values())
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
        splat = [Var(op.name) for op in args if isinstance(op, _Splat)]  # f(a, *t): t fills *args
        args = [op for op in args if not isinstance(op, _Splat)]
        try:
            bound = signature.bind_partial(*args, **kwargs) if splat else signature.bind(*args, **kwargs)
        except TypeError as exc:
            return Call(None, callee, _positional(args, kwargs), primal, f"calling {callee}: {exc}")
        if splat:
            star = next(p.name for p in signature.parameters.values() if p.kind is p.VAR_POSITIONAL)
            bound.arguments[star] = splat[0]
        plain: dict[str, Operand] = {}
        for name, value in bound.arguments.items():
            if isinstance(value, (Var, Const)):  # (a splat: the callee's whole *args)
                plain[position.get(name, name)] = value
            else:  # *args or **kwargs: each value is the item of the callee's tuple or dict
                items = value.items() if isinstance(value, dict) else enumerate(value)
                plain.update((f"{name}[{key!r}]", op) for key, op in items)
        return Call(None, callee, plain, primal, function=function, receiver=receiver)

    def is_self(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` is the instance parameter of a method: its first, named ``self``."""
        params = self.res.params
        return isinstance(node, cst.Name) and node.value == "self" and bool(params) and params[0] == "self" \
            and self.version.get("self", "self") == "self"

    def emit(self, value: Call | Opaque, target: str | None, hint: str | list[str],
             node: cst.CSTNode) -> Var:
        temporary = target is None
        name = self.fn.fresh(hint) if temporary else target
        self.out.append(Assign(name, value, self.location(node), temporary))
        return Var(name)

    def emit_operand(self, op: Operand, target: str | None) -> Operand:
        if target is None:
            return op
        if isinstance(op, Var):
            self.copies.update((target, op.name))
            self.partners.setdefault(target, set()).add(_user_name(op.name, self.res.locals))
            self.partners.setdefault(op.name, set()).add(_user_name(target, self.res.locals))
            self.share(target, [op.name])
            if op.name in self.sizes and self.out is self.fn.body:
                self.sizes[target] = self.sizes[op.name]
        self.out.append(Assign(target, op, self.loc))
        return Var(target)

    # --- classification -----------------------------------------------------------
    def inactive_kind(self, node: cst.BaseExpression) -> str | None:
        """"stopped" or "nondiff" if ``node`` carries no gradient by construction."""
        if isinstance(node, (cst.Comparison, cst.BooleanOperation, cst.FormattedString)):
            return "nondiff"
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, (cst.Not, cst.BitInvert)):
                return "nondiff"
            return self.inactive_kind(node.expression)
        if isinstance(node, cst.Call):
            func = node.func
            obj = self.res.object(func)
            if obj is runtime.stop_gradient:
                return "stopped"
            if obj is not MISSING:
                unbound = getattr(obj, "__func__", None)  # rng.normal (rng a global): Generator.normal
                nondiff = self.registry.is_nondifferentiable(obj) or self.registry.is_nondifferentiable(unbound)
                return "nondiff" if nondiff else None
            if isinstance(func, cst.Attribute) and func not in self.res.objects:
                method = getattr(np.ndarray, func.attr.value, None)
                if method is not None and self.registry.is_nondifferentiable(method):
                    return "nondiff"
                # a method of an inactive receiver is inactive only if its arguments are too
                return self.combined_kind([func.value, *(a.value for a in node.args)])
            return None
        if isinstance(node, cst.Attribute):
            if node in self.res.objects:
                return None
            if node.attr.value in NONDIFF_ATTRIBUTES:
                return "nondiff"
            return self.inactive_kind(node.value)
        if isinstance(node, cst.Subscript):
            if not self.local_reads(node.value):  # a global indexed: as inactive as the index
                return self.combined_kind([n for e in node.slice for n in _index_nodes(e.slice)])
            return self.inactive_kind(node.value)
        if isinstance(node, cst.BinaryOperation):
            key = BINARY_OPS.get(type(node.operator), (None,))[0]
            if key is not None and self.registry.is_nondifferentiable(key):  # x // y
                return "nondiff"
            return self.combined_kind([node.left, node.right])
        return None

    def stopped_copy(self, node: cst.BaseExpression) -> str | None:
        """The local variable ``x`` (its current version) if ``node`` is exactly ``stop_gradient(x)``."""
        node = _strip_parens(node)
        if (isinstance(node, cst.Call) and self.res.object(node.func) is runtime.stop_gradient
                and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star):
            arg = _strip_parens(node.args[0].value)
            if isinstance(arg, cst.Name) and self.local_reads(arg):
                return self.version.get(arg.value, arg.value)
        return None

    def combined_kind(self, nodes: list[cst.BaseExpression]) -> str | None:
        """The kind of a value computed from ``nodes``: inactive only if each of them is."""
        kinds = [self.inactive_kind(n) if self.local_reads(n) else "const" for n in nodes]
        if None in kinds:
            return None
        return "stopped" if "stopped" in kinds else "nondiff"

    def local_reads(self, node: cst.CSTNode) -> tuple[str, ...]:
        """Local variables ``node`` reads, in order, by their current version."""
        locals_ = self.res.locals
        found = dict.fromkeys(n for n in _variable_names(node) if n in locals_)
        return tuple(self.version.get(n, n) for n in found)

    def check_expression(self, node: cst.CSTNode) -> None:
        """Reject constructs that no part of s2sad can follow, wherever they stand."""
        for n in _walk(node):
            if isinstance(n, (cst.Yield, cst.Await, cst.NamedExpr)):
                raise self.unsupported(n, UNSUPPORTED[type(n)])
            if isinstance(n, cst.Call) and any(self.res.object(n.func) is f for f in HIDDEN_CODE):
                raise self.unsupported(n, f"'{self.parsed.code(n.func).strip()}' runs code s2sad "
                                          "cannot see; write that code in the function itself")

    # --- helpers ------------------------------------------------------------------
    def rename(self, node: cst.CSTNode) -> Any:
        """``node`` with local names replaced by their current versions."""
        renames = {n: self.version[n] for n in _variable_names(node)
                   if n in self.res.locals and self.version.get(n, n) != n}
        return node.visit(_Renamer(renames)) if renames else node

    def new_version(self, name: str) -> str:
        """The name a new assignment to ``name`` writes (the caller then switches to it)."""
        if name not in self.version:
            return name
        return self.fn.fresh(name)

    def hint(self, node: cst.CSTNode) -> str:
        """A readable name for the value of ``node``."""
        if isinstance(node, cst.Name):
            return self.version.get(node.value, node.value)
        if isinstance(node, cst.Call):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else "call")
            if self.res.object(func) is runtime.stop_gradient:
                inner = self.hint(node.args[0].value) if node.args else "value"
                return _join("sg", inner)
            subject = node.func.value if isinstance(func, cst.Attribute) and func not in self.res.objects else (
                node.args[0].value if node.args else None)
            return _join(name, self.hint(subject) if isinstance(subject, cst.Name) else "")
        if isinstance(node, cst.BinaryOperation):
            word = BINARY_OPS.get(type(node.operator), (None, "op"))[1]
            left, right = node.left, node.right
            if isinstance(left, cst.Name) and isinstance(right, cst.Name):
                return _join(self.hint(left), word, self.hint(right))
            return word
        if isinstance(node, cst.UnaryOperation):
            inner = self.hint(node.expression) if isinstance(node.expression, cst.Name) else ""
            return _join(UNARY_OPS.get(type(node.operator), (None, "op"))[1], inner)
        if isinstance(node, cst.Subscript):
            return _join(self.hint(node.value) if isinstance(node.value, cst.Name) else "", "item")
        if isinstance(node, cst.Attribute):
            return _join(self.hint(node.value) if isinstance(node.value, cst.Name) else "", node.attr.value)
        if isinstance(node, cst.Comparison):
            return "mask"
        if isinstance(node, (cst.Tuple, cst.List)):
            return "items"
        return "t"

    def location(self, node: cst.CSTNode) -> Location:
        """Where ``node`` is in the file; nodes built here report their statement."""
        try:
            return self.parsed.location(node)
        except KeyError:
            assert self.loc is not None
            return self.loc

    def unsupported(self, node: cst.CSTNode, message: str) -> UnsupportedSyntaxError:
        return UnsupportedSyntaxError(message, self.location(node))


class _Hoister(cst.CSTTransformer):
    """Lower each ``(name := value)``, innermost first, into an assignment; leave ``name``."""

    def __init__(self, normalizer: Normalizer, root: cst.CSTNode) -> None:
        super().__init__()
        self.n = normalizer
        # only the walruses and what holds them are rebuilt: other nodes keep their identity,
        # by which the resolution knows the functions they name
        self.path = {id(n) for n in _walk(root) if any(isinstance(m, cst.NamedExpr) for m in _walk(n))}

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) in self.path

    def leave_NamedExpr(self, original: cst.NamedExpr, updated: cst.NamedExpr) -> cst.BaseExpression:
        n, name = self.n, updated.target.value
        n.check_expression(updated.value)
        new = n.new_version(name)
        n.lower(updated.value, new, name)
        n.version[name] = new
        return cst.Name(name)


def _walrus_places(node: cst.CSTNode, where: str) -> list[tuple[cst.NamedExpr, str]]:
    """Each ':=' under ``node`` with where it stands: "" when it always runs, in order."""
    if isinstance(node, cst.NamedExpr):
        return [*_walrus_places(node.value, where), (node, where)]
    if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
        where = where or "inside a comprehension or lambda"
    short = where or "where it may not run (right of 'and'/'or', a branch of '... if ... else ...')"
    if isinstance(node, cst.BooleanOperation):
        return [*_walrus_places(node.left, where), *_walrus_places(node.right, short)]
    if isinstance(node, cst.IfExp):
        return [*_walrus_places(node.test, where), *_walrus_places(node.body, short),
                *_walrus_places(node.orelse, short)]
    return [w for child in children(node) for w in _walrus_places(child, where)]


def _has_walrus(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.NamedExpr) for n in _walk(node))


def _before(a: Any, b: Any) -> bool:
    return (a.line, a.column) < (b.line, b.column)


#: s2sad functions whose result a differentiated function may call: ``grad(fun)(x)``
_DERIVATIVES = ("grad", "value_and_grad")


@dataclass(frozen=True)
class _Splat(Var):
    """A tuple passed as ``*name``: a called Python function's ``*args``."""


class _LocalCallee:
    """A call through a local variable (or an unbound name): no rule can apply."""

    def __init__(self, code: str) -> None:
        self.code = code


class _UnknownMethod:
    def __init__(self, name: str) -> None:
        self.name = name


def _no_rule_message(key: Any, callee: str) -> str:
    if isinstance(key, _LocalCallee):
        return (f"'{callee}' is a local variable (or an unknown name), so s2sad cannot know which "
                f"function it calls; call the function by its global name")
    if isinstance(key, _UnknownMethod):
        return (f"'.{key.name}' is not a NumPy array method or attribute s2sad can differentiate; "
                f"wrap the value in stop_gradient(...) if no gradient should flow through it (a "
                f"method of your own class is followed when called on self, or on an object "
                f"bound at module level)")
    if isinstance(key, functools.partial):
        return (f"'{callee}' is a functools.partial: inside the differentiated function, call the "
                f"function it wraps, with the arguments it binds written out")
    if _library_function(key):
        return (f"no gradient rule for '{callee}', which is library code ({key.__module__}): s2sad "
                f"never differentiates through a library's source; register a rule with "
                f"s2sad.defvjp, or wrap the call in stop_gradient(...) if no gradient should flow "
                f"through it")
    return (f"no gradient rule for '{callee}'{wrapping(key)}; register one with s2sad.defvjp, or wrap the call "
            f"in stop_gradient(...) if no gradient should flow through it")


#: Functions whose result may share memory with their argument.
_VIEWS = (operator.getitem, np.reshape, np.ndarray.reshape, np.ravel, np.ndarray.ravel,
          np.transpose, np.ndarray.transpose, np.ndarray.T, np.squeeze, np.ndarray.squeeze,
          np.expand_dims, np.swapaxes, np.ndarray.swapaxes)
#: Functions that take a view s2sad follows through writes, by the method they stand for.
_VIEW_FUNCTIONS = ((np.reshape, "reshape"), (np.ravel, "ravel"), (np.transpose, "transpose"),
                   (np.swapaxes, "swapaxes"))
#: ``ufunc.at`` s2sad differentiates, as the functional helper it writes instead.
_UFUNC_AT = ((np.add, runtime.ufunc_add_at), (np.subtract, runtime.ufunc_subtract_at))


def _without_argument(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """``call`` without the argument ``arg`` (and without a comma after the last one left)."""
    args = [a for a in call.args if a is not arg]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def _members(linked: dict[str, _ViewLink]) -> set[str]:
    """The names of the views in ``linked`` and of their bases."""
    return set(linked) | {link.base for link in linked.values()}


def _view_function(obj: Any) -> str | None:
    return next((method for function, method in _VIEW_FUNCTIONS if obj is function), None)


def _ufunc_at(obj: Any) -> Any:
    """The helper for ``obj`` when it is ``np.add.at`` or ``np.subtract.at``; MISSING for the
    ``at`` of another ufunc; None for anything else."""
    ufunc = getattr(obj, "__self__", None)
    if not isinstance(ufunc, np.ufunc) or getattr(obj, "__name__", None) != "at":
        return None
    return next((helper for u, helper in _UFUNC_AT if ufunc is u), MISSING)


def _literal_int(node: cst.BaseExpression) -> int | None:
    """The value of an integer literal (``-1`` too)."""
    node = _strip_parens(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal_int(node.expression)
        return None if inner is None else -inner
    return int(node.value) if isinstance(node, cst.Integer) else None


_VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "flat"})
_VIEW_METHODS = frozenset({"reshape", "ravel", "transpose", "squeeze", "swapaxes", "view", "diagonal"})


def _may_alias(node: cst.BaseExpression, res: Resolution) -> bool:
    """Whether the value of ``node`` may share memory with a variable it reads, by its form:
    a name, ``stop_gradient`` of one, or an index, view attribute or view method of one."""
    node = _strip_parens(node)
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Subscript):
        return _may_alias(node.value, res)
    if isinstance(node, cst.Attribute):
        return node.attr.value in _VIEW_ATTRIBUTES and _may_alias(node.value, res)
    if isinstance(node, (cst.Tuple, cst.List)):
        return any(_may_alias(e.value, res) for e in node.elements)
    if isinstance(node, cst.IfExp):
        return _may_alias(node.body, res) or _may_alias(node.orelse, res)
    if isinstance(node, cst.Call):
        func, obj = node.func, res.object(node.func)
        if obj is runtime.stop_gradient or obj in _VIEWS or obj in (np.asarray, np.asanyarray):
            return bool(node.args) and _may_alias(node.args[0].value, res)
        if obj is MISSING and isinstance(func, cst.Attribute) and func.attr.value in _VIEW_METHODS:
            return _may_alias(func.value, res)
    return False


def _returns_alias(function: types.FunctionType) -> bool:
    """Whether ``function`` may return one of its arguments, or a view of one."""
    if not isinstance(function, types.FunctionType):  # a method of self: not known here
        return True
    try:
        parsed = parse(read_source(function))
    except S2SADError:  # no source: the call is refused elsewhere
        return True
    res = resolve(parsed)
    returns = [n for n in _statements(list(_suite(parsed.function.body)), into_loops=True)
               if isinstance(n, cst.Return) and n.value is not None]
    return any(_may_alias(r.value, res) for r in returns)


def _store_names(body: cst.CSTNode) -> set[int]:
    """ids of the names that ``=`` and ``for`` only write to (not ``+=``, which also reads)."""
    targets: list[cst.CSTNode] = []
    for n in _walk(body):
        if isinstance(n, cst.Assign):
            targets += [t.target for t in n.targets]
        elif isinstance(n, cst.For):
            targets.append(n.target)
    found: set[int] = set()
    while targets:
        t = targets.pop()
        if isinstance(t, cst.Name):
            found.add(id(t))
        elif isinstance(t, (cst.Tuple, cst.List)):
            targets += [e.value for e in t.elements]
    return found


def _user_name(version: str, user_names: frozenset[str] | set[str]) -> str:
    """The user's variable behind an SSA version (``h_2`` -> ``h``), as far as it can tell."""
    base = version
    while base not in user_names and "_" in base and base.rsplit("_", 1)[1].isdigit():
        base = base.rsplit("_", 1)[0]
    return base


def _is_pop(node: cst.BaseExpression, local_names: frozenset[str] | set[str]) -> bool:
    """``xs.pop()`` or ``xs.pop(i)`` on a local list."""
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "pop" and isinstance(node.func.value, cst.Name)
            and node.func.value.value in local_names and len(node.args) <= 1)


def _item(value: cst.Name, index: cst.BaseExpression) -> cst.Subscript:
    return cst.Subscript(value, [cst.SubscriptElement(cst.Index(index))])


_DISPLAYS = (cst.List, cst.Tuple)
_MAKER = "__s2sad_nested__"  # makes a recursive nested function, its name bound in a closure
_LIST_METHODS = ("append", "insert", "extend", "pop")


def _literal_key(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


def _index_nodes(s: cst.BaseSlice) -> list[cst.BaseExpression]:
    """The expressions of one entry of an index (a slice's bounds)."""
    if isinstance(s, cst.Index):
        return [s.value]
    return [b for b in (s.lower, s.upper, s.step) if b is not None]


def _python_function(key: Any) -> Any:
    """The Python function behind ``key`` (a decorated one is unwrapped; a method's function),
    a method of ``self`` (bound at run time), or None."""
    from ..api import Differentiable, MethodOfSelf, _Dispatch, _Recursive

    if isinstance(key, Differentiable):
        key = key.__wrapped__
    if isinstance(key, _Dispatch):  # generated code calling a method of self, differentiated again
        key = key.method
    if isinstance(key, types.MethodType):
        key = key.__func__
    if _library_function(key):
        return None
    # (_Recursive: generated code making a recursive call, differentiated again)
    return key if isinstance(key, (types.FunctionType, MethodOfSelf, _Recursive)) else None


def _callable_object(key: Any) -> bool:
    """Whether ``key`` is an instance of a class whose ``__call__`` is a Python function."""
    from ..api import Differentiable, _Dispatch, _Recursive

    return not isinstance(key, (type, types.FunctionType, types.MethodType, functools.partial,
                                Differentiable, _Dispatch, _Recursive)) and isinstance(
        getattr(type(key), "__call__", None), types.FunctionType) and not _library_function(type(key).__call__)


def _method_of_self(name: str, where: Location) -> Any:
    from ..api import MethodOfSelf

    return MethodOfSelf(name, where)


def _method_type() -> type:
    from ..api import MethodOfSelf

    return MethodOfSelf


#: Where the standard library and installed packages live: code there is never traced into.
_LIBRARY_DIRS = tuple(sorted({os.path.join(os.path.realpath(path), "") for path in (
    sysconfig.get_path(name, vars=base) for name in ("stdlib", "platstdlib", "purelib", "platlib")
    for base in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix})) if path}))


def _library_function(key: Any) -> bool:
    """Whether ``key`` is a Python function of the standard library or an installed package
    (NumPy's and SciPy's included), not the user's own code."""
    if not isinstance(key, types.FunctionType):
        return False
    filename = os.path.realpath(key.__code__.co_filename)
    return filename.startswith(_LIBRARY_DIRS) or bool(
        {"site-packages", "dist-packages"} & set(filename.split(os.sep)))


def _positional(args: list[Operand], kwargs: dict[str, Operand]) -> dict[str, Operand]:
    return {**{str(i): a for i, a in enumerate(args)}, **kwargs}


def _pack(ops: list[Operand]) -> Const:
    codes = [o.name if isinstance(o, Var) else o.code for o in ops]
    reads = tuple(n for o in ops for n in ((o.name,) if isinstance(o, Var) else o.reads))
    return Const("(" + "".join(c + ", " for c in codes) + ")" if codes else "()", reads)


def _code(parsed: Parsed, op: Operand) -> str:
    return op.name if isinstance(op, Var) else op.code


def _reads(op: Operand) -> tuple[str, ...]:
    return (op.name,) if isinstance(op, Var) else op.reads


def _name_hint(word: str, args: list[Operand], binop: bool) -> list[str]:
    """Candidate names for a temporary, best first: ``x_mul_y``, ``exp_z``, ``sum``."""
    names = [a.name if isinstance(a, Var) else a.code if a.code.isdigit() else "" for a in args]
    if binop:
        left, right = (names + ["", ""])[:2]
        candidates = [_join(left, word, right), _join(left, word), _join(word, right)]
    else:
        candidates = [_join(word, names[0] if names else "")]
    return [c for c in candidates if c and len(c) <= 16] + [word]


def _join(*parts: str) -> str:
    return "_".join(p for p in parts if p)


def _strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` without redundant outer parentheses (a tuple keeps, or gets, its own; an
    expression that spans lines keeps them, since they are what lets it span lines)."""
    if isinstance(node, cst.Tuple):
        return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    if getattr(node, "lpar", None) and "\n" not in _EMPTY.code_for_node(node):
        return node.with_changes(lpar=[], rpar=[])
    return node


def _one_line(op: cst.CSTNode) -> cst.CSTNode:
    """An operator with plain spaces around it, for an expression rebuilt on one line."""
    return op.with_changes(whitespace_before=cst.SimpleWhitespace(" "),
                           whitespace_after=cst.SimpleWhitespace(" "))


_EMPTY = cst.Module(body=[])
_LOOPS = (cst.For, cst.While)


def _enumerate_zip(iterable: cst.Call, target: cst.BaseExpression, res: Resolution
                   ) -> tuple[str, list[tuple[str, cst.BaseExpression]]] | None:
    """``(i, [(a, xs), (b, ys)])`` for ``for i, (a, b) in enumerate(zip(xs, ys))``, else None."""
    if not (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
            and len(iterable.args) == 1 and not iterable.args[0].keyword):
        return None
    first, second = (e.value for e in target.elements)
    inner = iterable.args[0].value
    names = _target_names(second)
    if not (isinstance(first, cst.Name) and names is not None and isinstance(second, (cst.Tuple, cst.List))
            and isinstance(inner, cst.Call) and res.object(inner.func) is zip
            and len(inner.args) == len(names) and not any(a.keyword or a.star for a in inner.args)):
        return None
    return first.value, [(name, a.value) for name, a in zip(names, inner.args)]


def _dict_iteration(iterable: cst.BaseExpression, names: list[str] | None,
                    body: cst.BaseSuite) -> tuple[cst.BaseExpression, str | None, str | None] | None:
    """For a loop over a dict's keys, values or items: (the dict, the key's name, the
    value's name).  A loop over a name ``d`` is one when its body reads ``d[k]`` with k
    the loop variable (the items of a list or an array cannot index it)."""
    if names is None:
        return None
    if (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)
            and not iterable.args):
        method, mapping = iterable.func.attr.value, iterable.func.value
        if method == "keys" and len(names) == 1:
            return mapping, names[0], None
        if method == "values" and len(names) == 1:
            return mapping, None, names[0]
        if method == "items" and len(names) == 2:
            return mapping, names[0], names[1]
        return None
    if isinstance(iterable, cst.Name) and len(names) == 1 and any(
            isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name)
            and n.value.value == iterable.value and len(n.slice) == 1
            and isinstance(n.slice[0].slice, cst.Index)
            and isinstance(n.slice[0].slice.value, cst.Name)
            and n.slice[0].slice.value.value == names[0] for n in _walk(body)):
        return iterable, names[0], None
    return None


def _target_hint(target: cst.BaseExpression) -> str:
    """A readable name for the temporary that holds what a nested target unpacks: ``a_b``."""
    if isinstance(target, cst.Subscript):
        return _join(target.value.value if isinstance(target.value, cst.Name) else "", "value")
    names = _flat_targets(target, False)
    return "_".join(names) if names and len(names) <= 3 else "items"


def _element_bases(target: cst.BaseExpression) -> list[str]:
    """The arrays that the element targets (``x[i]``) of a target change."""
    if isinstance(target, cst.Subscript):
        return _flat_targets(target.value)
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _element_bases(e.value)]
    return []


def _flat_targets(target: cst.BaseExpression, bases: bool = True) -> list[str]:
    """The names an assignment target writes, through nested tuples (and with ``bases``,
    the array that an element target ``x[i]`` changes)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Subscript):
        return _flat_targets(target.value, bases) if bases else []
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _flat_targets(e.value, bases)]
    return []


def _target_names(target: cst.BaseExpression) -> list[str] | None:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)) and all(
            isinstance(e.value, cst.Name) and not isinstance(e, cst.StarredElement) for e in target.elements):
        return [e.value.value for e in target.elements]
    return None


def _statements(stmts: list[cst.CSTNode], into_loops: bool = False) -> list[cst.CSTNode]:
    """All nodes under ``stmts``, in order, not descending into nested loops unless asked."""
    nodes: list[cst.CSTNode] = []
    stack = list(reversed(stmts))
    while stack:
        n = stack.pop()
        nodes.append(n)
        if into_loops or not isinstance(n, _LOOPS) or any(n is st for st in stmts):
            stack.extend(reversed(children(n)))
    return nodes


def _jumps(body: list[cst.BaseStatement]) -> tuple[bool, bool]:
    """Whether a loop body breaks (or returns, at any depth) and whether it continues."""
    nodes = [n for n in _statements(body) if not isinstance(n, _LOOPS)]
    inner = [n for n in _statements(body) if isinstance(n, _LOOPS)]
    inner_nodes = {id(x) for loop in inner for x in _walk(loop.body)}
    nodes = [n for n in nodes if id(n) not in inner_nodes]
    breaks = _may_return(body) or any(isinstance(n, cst.Break) for n in nodes)
    return breaks, any(isinstance(n, cst.Continue) for n in nodes)


def _may_jump(stmt: cst.BaseStatement) -> bool:
    if isinstance(stmt, _LOOPS):
        return _may_return([stmt])
    return any(_jumps([stmt]))


def _always_returns(stmts: list[cst.BaseStatement]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, cst.Return) for s in last.body)
    if isinstance(last, cst.If):
        orelse = [last.orelse] if isinstance(last.orelse, cst.If) else (
            _suite(last.orelse.body) if last.orelse else [])
        return _always_returns(_suite(last.body)) and _always_returns(orelse)
    return False


def _may_return(stmts: list[cst.BaseStatement]) -> bool:
    return any(isinstance(n, cst.Return) for st in stmts for n in _walk(st))


def _assigned_in(body: list[cst.BaseStatement]) -> set[str]:
    """User names assigned anywhere in a loop body (targets of =, +=, for)."""
    names: set[str] = set()
    for n in _statements(body, into_loops=True):
        targets: list[cst.CSTNode] = []
        if isinstance(n, cst.Assign):
            targets = [t.target for t in n.targets]
            if _is_pop(n.value, {n.value.func.value.value} if isinstance(n.value, cst.Call) and isinstance(
                    n.value.func, cst.Attribute) and isinstance(n.value.func.value, cst.Name) else set()):
                targets.append(n.value.func.value)
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            targets = [n.target]
        elif isinstance(n, cst.For):
            targets = [n.target]
        if isinstance(n, cst.Expr) and isinstance(n.value, cst.Call):
            func = n.value.func
            if isinstance(func, cst.Attribute) and func.attr.value in _LIST_METHODS:
                targets = [func.value]
        for t in targets:
            names.update(_flat_targets(t))
    return names


def _view_bases(body: list[cst.BaseStatement]) -> dict[str, set[str]]:
    """Names a loop body assigns a view to (``r = A[i]``, ``t = x.T``, ``r = np.reshape(x, s)``),
    with the names each may be a view of, as far as the syntax tells."""
    bases: dict[str, set[str]] = {}
    for n in _statements(body, into_loops=True):
        if not isinstance(n, cst.Assign) or len(n.targets) != 1 or not isinstance(n.targets[0].target, cst.Name):
            continue
        value = _strip_parens(n.value)
        taken = [value.value] if isinstance(value, cst.Subscript) or isinstance(value, cst.Attribute) and (
            value.attr.value in _VIEW_ATTRIBUTES) else []
        if isinstance(value, cst.Call) and isinstance(value.func, (cst.Attribute, cst.Name)) and (
                (_attribute_path(value.func) or [""])[-1] in _VIEW_METHODS):
            # x.reshape(...) or np.reshape(x, ...): (the module is no local, so never counted)
            taken = [value.func.value] if isinstance(value.func, cst.Attribute) else []
            taken += [value.args[0].value] if value.args else []
        if taken:
            bases.setdefault(n.targets[0].target.value, set()).update(
                t.value for t in taken if isinstance(t, cst.Name))
    return bases


def _changed_in(body: list[cst.BaseStatement]) -> set[str]:
    """User names a loop body may change in place without assigning them: the array of
    ``np.add.at(z, ...)`` or ``f(..., out=z)``, and the base of a view written there
    (``r = A[i]; r *= 2.0`` changes A), as far as the syntax tells."""
    written: set[str] = set()
    bases = _view_bases(body)
    for n in _statements(body, into_loops=True):
        targets: list[cst.CSTNode] = []
        if isinstance(n, cst.AugAssign):
            targets = [n.target]
        elif isinstance(n, cst.Assign):
            targets = [t.target for t in n.targets]
        elif isinstance(n, cst.Call):
            targets = [a.value for a in n.args if a.keyword is not None and a.keyword.value == "out"]
            if isinstance(n.func, cst.Attribute) and n.func.attr.value == "at" and n.args:
                targets.append(n.args[0].value)
        for t in targets:
            t = t.value if isinstance(t, cst.Subscript) else t
            if isinstance(t, cst.Name):
                written.add(t.value)
    changed, todo = set(written), list(written)
    while todo:
        for base in bases.get(todo.pop(), ()):
            if base not in changed:
                changed.add(base)
                todo.append(base)
    return changed


def _read_before_assigned(stmts: list[cst.CSTNode], name: str) -> bool:
    """Whether some path through ``stmts`` reads ``name`` before assigning it."""
    for st in stmts:
        first = _first_use(st, name)
        if first is not None:
            return first
    return False


def _first_use(node: cst.CSTNode, name: str) -> bool | None:
    """True if ``node`` may read ``name`` first, False if it surely assigns it first."""
    if isinstance(node, cst.SimpleStatementLine):
        for small in node.body:
            first = _first_use(small, name)
            if first is not None:
                return first
        return None
    if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        assigned = any(name in _flat_targets(t, False) for t in targets)
        if isinstance(node, cst.AugAssign) and assigned:
            return True
        if node.value is not None and _mentions(node.value, name):
            return True
        return False if assigned else None
    if isinstance(node, cst.If):
        if _mentions(node.test, name):
            return True
        orelse = [node.orelse] if isinstance(node.orelse, cst.If) else (
            _suite(node.orelse.body) if node.orelse else [])
        branches = [_read_first(_suite(node.body), name), _read_first(orelse, name)]
        if True in branches:
            return True
        return False if branches == [False, False] else None
    if isinstance(node, (cst.For, cst.While)):
        head = node.iter if isinstance(node, cst.For) else node.test
        if _mentions(head, name):
            return True
        if isinstance(node, cst.For) and name in _flat_targets(node.target, False):
            return False
        return True if _read_first(_suite(node.body), name) else None
    return True if _mentions(node, name) else None


def _read_first(stmts: list[cst.CSTNode], name: str) -> bool | None:
    for st in stmts:
        first = _first_use(st, name)
        if first is not None:
            return first
    return None


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in _walk(node))


def _suite(suite: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block; ``if c: a = 1; b = 2`` on one line counts as one."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    return list(suite.body)


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node`` and everything under it, in source order."""
    nodes: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        n = stack.pop()
        nodes.append(n)
        stack.extend(reversed(children(n)))
    return nodes


def _variable_names_nodes(node: cst.CSTNode) -> list[cst.Name]:
    """The Name nodes used as variables under ``node`` (not attribute or keyword names)."""
    found: list[cst.Name] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            found.append(n)
        elif isinstance(n, (cst.Attribute, cst.Arg)):
            stack.append(n.value)
        else:
            stack.extend(reversed(children(n)))
    return found


def _variable_names(node: cst.CSTNode) -> list[str]:
    """Names used as variables under ``node``, in order (not attribute or keyword names)."""
    names: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        kind = type(n)  # (libcst's classes are ABCs: isinstance is slow here)
        if kind is cst.Name:
            names.append(n.value)
        elif kind is cst.Attribute or kind is cst.Arg:
            stack.append(n.value)
        else:
            stack.extend(reversed(children(n)))
    return names


def _all_names(node: cst.CSTNode) -> set[str]:
    """Every variable name the source mentions (not attribute or keyword names)."""
    return set(_variable_names(node))


class _Renamer(cst.CSTTransformer):
    """Rename variables (not attribute or keyword names)."""

    def __init__(self, renames: dict[str, str]) -> None:
        super().__init__()
        self.renames = renames

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.renames.get(original.value)
        return updated if new is None else updated.with_changes(value=new)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


def _describe(node: cst.CSTNode) -> str:
    return type(node).__name__


def normalize(parsed: Parsed, res: Resolution, registry: Registry, callee: bool = False) -> Function:
    return Normalizer(parsed, res, registry, callee).run()


def _attribute_path(node: cst.BaseExpression) -> list[str]:
    """``a.b.c`` as ``["a", "b", "c"]`` (empty when the chain does not start with a name)."""
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, cst.Attribute):
        base = _attribute_path(node.value)
        return base + [node.attr.value] if base else []
    return []


def _through_an_instance(node: cst.BaseExpression, res: Resolution) -> bool:
    """Whether an attribute chain reaches its object through an object that is neither a
    module nor a class (a configuration object, a model), whose attributes may be rebound."""
    while isinstance(node, cst.Attribute):
        base = res.object(node.value)
        if base is not MISSING and base is not None and not isinstance(base, (types.ModuleType, type)):
            return True
        node = node.value
    return False
