"""Pass 6: reverse-mode generation.

Walks the normalized body backwards and, for every active variable, emits the
adjoint statements its rule declares.  The first contribution to an adjoint
assigns it and later ones add to it, so straight-line code never initialises
an adjoint to zero.  Later contributions are added in place (``+=``) when the
adjoint holds an array only this code holds: one its first contribution made,
or one a dead adjoint handed over to its sole alias.

Control flow is reversed structurally: an ``if`` replays the recorded branch;
a loop becomes a loop that runs its iterations backwards.  A loop saves, once
per iteration, only the values its adjoint reads and the body overwrites (a
plain Python list used as a stack); when the adjoint reads none, it only counts
iterations.  An adjoint that receives contributions inside a branch or a loop
but was not yet assigned is set to zero first (``zeros_grad``), because a
branch or a loop may not run.

An adjoint that is zero outside a mask (``np.where``'s branches, and what only
feeds one through elementwise functions) keeps that mask as its support: the
local derivatives it multiplies are masked too, so the untaken branch's inf or
NaN never reaches the gradient (no 0 * inf).
"""
from __future__ import annotations

import ast
import builtins
import functools
import operator
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, Union

import libcst as cst

import numpy as np

from .. import runtime as runtime_module
from ..errors import InternalRuleError, NonScalarOutputError, S2SADError
from ..ir import (CALLEE_KINDS, VALUE_KINDS, Assign, Call, Const, Function, If, Loop, Opaque, Operand,
                  Return, Stmt, Var, assigned_names, assigns, surely_assigned, wrt_parameter)
from ..rules.complex_rules import COMPLEX_RESULTS, REAL_ONLY, REAL_RESULTS
from ..rules.registry import REGISTRY, USER_OBJECTS, is_atomic


from .activity import Activity
from .simplify import simplify
from .source import FunctionSource

MISSING = object()
_EMPTY = cst.Module(body=[])


def runtime_object(name: str) -> object:
    """The object generated code means by runtime name ``name``."""
    if name == "np":
        return np
    return USER_OBJECTS[name] if name in USER_OBJECTS else getattr(runtime_module, name)


@dataclass(frozen=True)
class Line:
    """One generated statement of the backward pass."""

    code: str
    reads: frozenset[str]
    group: int  # file line of the user statement it differentiates
    source: str  # that statement's text


@dataclass
class Block:
    """A compound statement of the backward pass: a replayed ``if`` or a reversed loop."""

    header: str
    reads: frozenset[str]
    body: list["Out"]
    orelse: list["Out"] = field(default_factory=list)
    loop: Loop | None = None  # for a reversed loop: its first body line pops ``loop.saved``
    branch: If | None = None  # for a replayed if: its branches first pop ``branch.saves``


Out = Union[Line, Block]


@dataclass(eq=False)
class Support:
    """Where an adjoint may be nonzero: a boolean mask in a shape that broadcasts to the
    variable's, computed by a backward line (after ``anchor``) the first time it is needed.

    An adjoint has one when every contribution to it is zero outside the mask: the branch of
    an ``np.where``, and what only feeds one through elementwise functions.
    """

    code: str | None  # a rule's mask ("condition" for np.where's x)
    reads: frozenset[str]
    operand: str  # the variable whose shape the mask takes
    anchor: tuple[list[Out], Line] | None  # the contribution the mask is computed after
    parent: "Support | None" = None  # the output adjoint's support, which the mask narrows
    name: str | None = None  # the backward variable holding it, once computed


@dataclass
class Adjoint:
    """The generated function, before cleanup and code generation."""

    fn: Function
    source: FunctionSource
    wrt: tuple[str, ...]
    multiple: bool  # wrt was given as a tuple: return a tuple of gradients
    name: str  # the generated function's name
    forward: list[Stmt]
    value: Operand
    seed: str | None  # the seed statement
    backward: list[Out]
    results: list[str]  # one expression per wrt argument
    runtime: dict[str, str] = field(default_factory=dict)  # runtime name -> name in the code
    value_copy: str | None = None  # a copy of the value, when backward loops overwrite it
    seed_param: str | None = None  # for a vjp: the parameter that brings the output's gradient
    callees: dict[str, Any] = field(default_factory=dict)  # name -> generated vjp of a callee
    kind: str = "grad"
    value_needed: bool = True  # whether the seed reads the output's value
    split: bool = True  # callees called mid-expression keep their forward values (kind "split")
    backward_name: str | None = None  # kind "split": the closure that runs the backward pass
    split_calls: list[tuple[Assign, str]] = field(default_factory=list)  # (call, its closure's name)

    def callee(self, function: Any, wrt: tuple[str, ...], kind: str = "vjp") -> str:
        """The name under which this code calls the vjp (or jvp, ...) of ``function``."""
        from ..api import _build

        if hasattr(function, "adjoint"):  # a method whose class is known at run time only
            vjp = function.adjoint(wrt, kind, self.split)
        elif (getattr(function, "__module__", None) or "").split(".")[0] == "s2sad":
            # generated code calls s2sad's helpers as primitives, through their declared rules
            raise InternalRuleError(
                f"s2sad's own function {function.__module__}.{function.__qualname__} has no "
                f"declared rule (s2sad/rules/runtime_rules.py), so the code that calls it cannot be "
                f"differentiated; this is a bug in s2sad, please report it")
        else:
            vjp = _build(function, wrt if len(wrt) > 1 else wrt[0], kind, split=self.split)
        for name, known in self.callees.items():
            if known is vjp:
                return name
        name = vjp.__name__ if vjp.__name__ not in self.fn.names else self.fn.fresh(vjp.__name__)
        self.fn.names.add(name)
        self.callees[name] = vjp
        return name

    def use(self, name: str) -> str:
        """Record that the code uses runtime name ``name``; return its spelling."""
        if name not in self.runtime:
            mine = runtime_object(name)
            taken = name in self.fn.user_names and self.fn.free.get(name, MISSING) is not mine
            self.runtime[name] = self.fn.fresh(name) if taken else name
        return self.runtime[name]


def _code(op: Operand) -> str:
    return op.name if isinstance(op, Var) else op.code


def _reads(op: Operand) -> tuple[str, ...]:
    return (op.name,) if isinstance(op, Var) else op.reads


def _plus(acc: str, term: str) -> str:
    """``acc + term`` with parentheses only where the sum would regroup."""
    try:
        node = ast.parse(term, mode="eval").body
    except SyntaxError:
        return f"{acc} + ({term})"
    loose = isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) or isinstance(
        node, (ast.IfExp, ast.Lambda, ast.BoolOp, ast.Compare, ast.NamedExpr))
    return f"{acc} + ({term})" if loose else f"{acc} + {term}"


def lines(outs: list[Out]) -> Iterator[Line | Block]:
    """Every line and block in ``outs``, nested ones included."""
    for out in outs:
        yield out
        if isinstance(out, Block):
            yield from lines(out.body)
            yield from lines(out.orelse)


class Reverser:
    def __init__(self, adj: Adjoint, activity: Activity) -> None:
        self.adj = adj
        self.fn = adj.fn
        self.active = activity.active
        self.names: dict[str, str] = {}
        self.defined: set[str] = set()
        self.depth = 0  # loops around the statement being reversed
        self.owned: set[str] = set()  # adjoints holding a fresh array that may be updated in place
        self.structural = _structural(adj.forward, adj.fn.params)
        self.scalars = _scalars(adj.forward, adj.fn.params)
        self.shapes = _shape_classes(adj.forward, adj.fn.params, self.scalars)
        self.bound: dict[int, frozenset[str]] = {}
        _bound_before(adj.forward, set(adj.fn.params), self.bound)
        self.once = {t for t, times in Counter(t for s in assigns(adj.forward) for t in s.targets).items()
                     if times == 1}
        # in a loop body, adjoints defined as exactly ``unbroadcast(e, y)`` (e an adjoint's
        # name): their line, and e
        self.reduced: dict[str, tuple[Line, str]] = {}
        self.support: dict[str, Support] = {}  # adjoint name -> where it may be nonzero
        self.changed: set[str] = set()  # adjoints assigned (in the loop being reversed)
        self.complex = _complex_values(adj.fn, adj.forward)
        # the name holding the call's seed: zeros take its array library (see zeros_grad)
        self.seed: str | None = None

    def dname(self, var: str) -> str:
        if var not in self.names:
            self.names[var] = self.fn.fresh("d" + var)
        return self.names[var]

    def contribute(self, var: str, code: str, reads: frozenset[str], stmt_loc: object,
                   out: list[Out], scatter: tuple[str, str] | None = None,
                   support: Support | None = None) -> None:
        """Add ``code`` to the adjoint of ``var``.

        ``scatter`` (the index and the gradient of ``x[index]``) lets an adjoint this
        code owns take the contribution in place, without a zero array per read.
        ``support``: where ``code`` may be nonzero, if known; the adjoint keeps it while
        every contribution has it.
        """
        d = self.dname(var)
        self.reduced.pop(d, None)
        self.changed.add(d)
        if support is not None and (d not in self.defined or self.support.get(d) is support):
            self.support[d] = support
        else:
            self.support.pop(d, None)
        owned = d in self.owned
        line = None
        if d in self.defined:
            if scatter is not None and owned:
                code = f"{self.adj.use('add_at')}({d}, {scatter[0]}, {scatter[1]})"
            elif var in self.structural:
                code = f"{self.adj.use('add_grads')}({d}, {code})"
            elif owned:  # an array this code made: add in place, no new array per term
                line = f"{d} += {code}"
            else:
                code = _plus(d, code)
            reads = reads | {d}
        owned = d in self.defined or self.fresh(code)
        self.defined.add(d)
        if owned:
            self.owned.add(d)
        else:
            self.owned.discard(d)
        out.append(Line(line or f"{d} = {code}", reads, stmt_loc.line, stmt_loc.source_line.strip()))

    def fresh(self, code: str) -> bool:
        """Whether ``code`` makes a new array that no other name holds."""
        node = _expression(code)
        runtime = self.adj.runtime
        if _called(node) is not None and _called(node) == runtime.get("unbroadcast") and node.args:
            node = node.args[0]  # unbroadcast(new, x) is new, or a sum of it
        return isinstance(node, (ast.BinOp, ast.UnaryOp)) or _called(node) in {
            runtime.get(n) for n in _FRESH} - {None}

    def mask(self, support: Support) -> str:
        """The name of the backward variable holding ``support``'s mask, computed at first use."""
        if support.name is None:
            code, reads = support.code, support.reads
            if support.parent is not None:
                outer = self.mask(support.parent)
                code = outer if code is None else f"{self.adj.use('np')}.logical_and({outer}, {code})"
                reads |= {outer}
            support.name = self.fn.fresh(f"{support.operand}_taken")
            outs, anchor = support.anchor
            line = Line(f"{support.name} = {self.adj.use('branch_mask')}({code}, {support.operand})",
                        reads | {support.operand}, anchor.group, anchor.source)
            outs.insert(next(i for i, x in enumerate(outs) if x is anchor) + 1, line)
        return support.name

    def zero(self, var: str, loc: object) -> Line:
        d = self.dname(var)
        self.reduced.pop(d, None)
        self.support.pop(d, None)
        self.changed.add(d)
        self.defined.add(d)
        self.owned.add(d)
        if self.seed is None:
            return Line(f"{d} = {self.adj.use('zeros_grad')}({var})", frozenset({var}), loc.line,
                        loc.source_line.strip())
        return Line(f"{d} = {self.adj.use('zeros_grad')}({var}, {self.seed})", frozenset({var, self.seed}),
                    loc.line, loc.source_line.strip())

    # --- statements -------------------------------------------------------------
    def block(self, stmts: list[Stmt]) -> list[Out]:
        out: list[Out] = []
        for stmt in reversed(stmts):
            if isinstance(stmt, Assign):
                self.assign(stmt, out)
            elif isinstance(stmt, If):
                out += self.branch(stmt)
            elif isinstance(stmt, Loop):
                out += self.loop(stmt)
        return out

    def assign(self, stmt: Assign, out: list[Out]) -> None:
        if isinstance(stmt.target, tuple) and isinstance(stmt.value, Var):
            self.unpack(stmt, out)
            return
        if not isinstance(stmt.target, str) or stmt.target not in self.active:
            return
        g = self.dname(stmt.target)
        if g not in self.defined:  # no later use on this path: its adjoint is zero
            return
        # earlier code on this path sees an earlier value of the name (a None placeholder or
        # a phi target), whose adjoint starts afresh
        self.defined.discard(g)
        support = self.support.pop(g, None)
        v = stmt.value
        if isinstance(v, Var):
            if v.name in self.active:
                first = self.dname(v.name) not in self.defined
                self.contribute(v.name, g, frozenset({g}), stmt.loc, out, support=support)
                self.hand_over(stmt.target, [self.dname(v.name)] if first else [])
            return
        if isinstance(v, Call) and v.function is not None:
            self.user_call(stmt, v, g, out)
            return
        if not isinstance(v, Call) or v.rule is None:
            return
        values = {p: _code(op) for p, op in v.args.items()}
        values["g"], values["ans"] = g, stmt.target
        converts = _converts(stmt, v, self.fn)
        if converts:  # dtype=...: to an integer dtype, an error rather than a gradient
            values["g"] = f"{self.adj.use('cast_grad')}({g}, {stmt.target}, {stmt.target})"
        aliases: list[str] = []  # adjoints this statement sets to g itself
        differentiated = [p for p, op in v.args.items() if p in v.rule.vjps and isinstance(op, Var)
                          and op.name in self.active]
        chained = self.reduced.pop(g, None)
        if chained is not None and (len(differentiated) != 1 or converts
                                    or not any(x is chained[0] for x in out)):
            chained = None
        for p in differentiated:
            op, template = v.args[p], v.rule.vjps[p]
            code = simplify(template.render(values, {n: self.adj.use(n) for n in template.runtime}))
            reads = {g if h == "g" else stmt.target if h == "ans" else None for h in template.holes}
            if converts:
                reads.add(stmt.target)
            reads |= {n for h in template.holes if h in v.args for n in _reads(v.args[h])}
            # g is zero outside the support: so is the contribution, also where the local
            # derivative is inf or NaN (0 * inf would be NaN)
            passes_support = support is not None and v.rule.elementwise
            if passes_support and any(h == "ans" or h in v.args and not (
                    isinstance(v.args[h], Const) and _is_number(v.args[h].code)) for h in template.holes):
                mask = self.mask(support)
                code = f"{self.adj.use('np')}.where({mask}, {code}, 0)"
                reads.add(mask)
            reduced_from = None  # an adjoint's name this operand's adjoint is reduced from
            if p in v.rule.broadcast and not all(
                    self.is_scalar(v.args[q]) for q in v.rule.broadcast if q != p and q in v.args
            ) and not self.same_shape(op.name, stmt.target):
                negated = code.startswith("-") and code[1:].isidentifier()
                reduced = code[1:] if negated else code
                if chained is not None and reduced == g:
                    # g = unbroadcast(e, ans), and op broadcasts to ans's shape: reduce e to
                    # op's shape at once (one call and one saved shape less per iteration)
                    out[:] = [x for x in out if x is not chained[0]]
                    reduced = chained[1]
                    reads = {reduced}
                code = f"{self.adj.use('unbroadcast')}({reduced}, {op.name})"
                code = f"-{code}" if negated else code  # negate after reducing: a smaller array
                reads.add(op.name)
                passes_support = passes_support and "reduced"
                if not negated and reduced.isidentifier():
                    reduced_from = reduced
            if REGISTRY.key(v.rule.fun) in REAL_ONLY:
                code = f"{self.adj.use('real_input')}({code}, {op.name}, {v.callee!r})"
                reads.add(op.name)
            if (stmt.target in self.complex and op.name not in self.complex and "unbroadcast(" not in code
                    and REGISTRY.key(v.rule.fun) not in COMPLEX_RESULTS):  # (whose rules see to it)
                # a complex result's gradient reaching what may be real (x * 1j): its real part
                code = f"{self.adj.use('real_like')}({code}, {op.name})"
                reads.add(op.name)
            scatter = (values["index"], g) if v.rule.fun is operator.getitem else None
            first = self.dname(op.name) not in self.defined
            if first and code in (g, f"{self.adj.runtime.get('unbroadcast')}({g}, {op.name})"):
                aliases.append(self.dname(op.name))
            chain = first and reduced_from is not None and self.depth and op.name in self.once
            narrowed = None if chain else self.narrow(p, v, values, support, passes_support)
            self.contribute(op.name, code, frozenset(reads - {None}), stmt.loc, out, scatter, narrowed)
            if narrowed is not None and narrowed.anchor is None:
                narrowed.anchor = (out, out[-1])
            if chain:
                self.reduced[self.dname(op.name)] = (out[-1], reduced_from)
        self.hand_over(stmt.target, aliases)

    def narrow(self, p: str, v: Call, values: dict[str, str], support: Support | None,
               passes: bool | str) -> Support | None:
        """Where the contribution through parameter ``p`` may be nonzero: the rule's mask for
        ``p``, or the output adjoint's ``support`` that an elementwise function passes on
        (reduced to the operand's shape where its contribution was, ``passes == "reduced"``)."""
        operand = v.args[p].name
        template = v.rule.masks.get(p)
        if template is not None:  # np.where(c, x, y) under a support s: x's is s & c
            code = template.render(values, {n: self.adj.use(n) for n in template.runtime})
            reads = frozenset(n for h in template.holes for n in _reads(v.args[h]))
            return Support(code, reads, operand, None, parent=support)
        if passes == "reduced":
            return Support(None, frozenset(), operand, None, parent=support)
        return support if passes else None

    def hand_over(self, target: str, aliases: list[str]) -> None:
        """Once ``target``'s statement is reversed, its adjoint is dead: a sole alias of an
        owned adjoint may update the array in place.  Straight-line code only, where every
        statement is the one definition of its target."""
        g = self.dname(target)
        if (self.depth == 0 and len(aliases) == 1 and aliases[0] != g and g in self.owned
                and target not in self.fn.params):
            self.owned.add(aliases[0])
            self.owned.discard(g)

    def unpack(self, stmt: Assign, out: list[Out]) -> None:
        """``a, b = t``: t's adjoint gathers those of the names (zero where there is none)."""
        source = stmt.value.name
        if source not in self.active:
            return
        grads = [self.dname(t) if t in self.active and self.dname(t) in self.defined else "None"
                 for t in stmt.targets]
        if all(g == "None" for g in grads):
            return
        code = f"{self.adj.use('unpack_grad')}({source}, ({', '.join(grads)}{',' if len(grads) == 1 else ''}))"
        reads = frozenset({source, *(g for g in grads if g != "None")})
        self.defined -= set(grads)
        self.contribute(source, code, reads, stmt.loc, out)

    def same_shape(self, operand: str, target: str) -> bool:
        """Whether ``operand`` surely has the shape of ``target``, so its gradient needs no
        unbroadcast (parameters keep theirs, which also gives their dtype back)."""
        rep = self.shapes.get(operand)
        return rep is not None and rep == self.shapes.get(target) and operand not in self.fn.params

    def is_scalar(self, op: Operand) -> bool:
        if isinstance(op, Var):
            return op.name in self.scalars
        return _is_number(op.code)

    def user_call(self, stmt: Assign, v: Call, g: str | None, out: list[Out],
                  value: str | None = None) -> None:
        """``da, db = vjp_f(dy, a, b)``: the callee's own adjoint, for the active arguments;
        with no ``g``, ``da, db = grad_f(a, b)``, the callee's gradient, seeded by itself (and
        with ``value``, ``value, (da, db) = value_and_grad_f(a, b)``)."""
        active = [(p, op.name) for p, op in v.args.items()
                  if isinstance(op, Var) and op.name in self.active]
        if not active:
            return
        split = g is not None and self.adj.split
        try:
            vjp = self.adj.callee(v.function, tuple(p for p, _ in active),
                                  "split" if split else "vjp" if g is not None
                                  else "callee_value_and_grad" if value else "callee_grad")
        except S2SADError as exc:
            if exc.location is None:
                exc.location = stmt.loc
            raise
        if split:
            # the forward pass calls forward_f, which also returns its backward pass
            saved = self.fn.fresh(f"{stmt.target}_backward")
            self.adj.split_calls.append((stmt, saved))
            v.node = v.node.with_changes(func=cst.Name(vjp), args=callee_args(v))
            code = f"{saved}({g})"
        else:
            seed = [cst.Arg(cst.Name(g))] if g is not None else []
            code = _EMPTY.code_for_node(v.node.with_changes(func=cst.Name(vjp), args=[*seed, *callee_args(v)])).strip()
        targets, adds = [], []
        for _, var in active:
            d = self.dname(var)
            if d in self.defined or d in targets:
                temp = self.fn.fresh(f"{d}_{v.function.__name__}")
                targets.append(temp)
                adds.append((var, temp))
            else:
                targets.append(d)
        reads = frozenset({g, saved} if split else
                          {g} - {None} | {n for op in v.args.values() for n in _reads(op)})
        lhs = ", ".join(targets)
        if value:
            lhs = f"{value}, {lhs if len(targets) == 1 else '(' + lhs + ')'}"
        out.append(Line(f"{lhs} = {code}", reads, stmt.loc.line, stmt.loc.source_line.strip()))
        self.defined.update(t for t in targets if t not in {temp for _, temp in adds})
        for t in targets:
            self.support.pop(t, None)
        self.changed.update(targets)
        for var, temp in adds:
            self.contribute(var, temp, frozenset({temp}), stmt.loc, out)

    def touched(self, stmts: list[Stmt]) -> list[str]:
        """Variables whose adjoints receive contributions inside ``stmts``, in order."""
        found: dict[str, None] = {}
        for s in assigns(stmts):
            if not isinstance(s.target, str) or s.target not in self.active:
                continue
            v = s.value
            if isinstance(v, Var) and v.name in self.active:
                found[v.name] = None
            elif isinstance(v, Call) and (v.rule is not None or v.function is not None):
                for p, op in v.args.items():
                    differentiable = v.rule is None or p in v.rule.vjps
                    if differentiable and isinstance(op, Var) and op.name in self.active:
                        found[op.name] = None
        return list(found)

    def branch(self, stmt: If) -> list[Out]:
        # names bound before the if (a loop in the branch may reassign them) are not local
        local = (assigned_names(stmt.body) | assigned_names(stmt.orelse)) - self.bound[id(stmt)]
        pre = [self.zero(v, stmt.loc) for v in self.touched(stmt.body + stmt.orelse)
               if v not in local and self.dname(v) not in self.defined]
        before, owned, support = set(self.defined), set(self.owned), dict(self.support)
        body = self.block(stmt.body)
        self.defined, owned_body, self.owned = set(before), self.owned, owned
        support_body, self.support = self.support, dict(support)
        orelse = self.block(stmt.orelse)
        self.defined = before
        # after the if, what both branches kept
        self.support = {d: s for d, s in support.items()
                        if support_body.get(d) is s and self.support.get(d) is s}
        self.owned &= owned_body  # in place after the if only what both branches own
        if not body and not orelse and not self.depth:
            return pre
        return pre + [Block(f"if {_code(stmt.test)}:", frozenset(_reads(stmt.test)), body, orelse,
                            branch=stmt)]

    def loop(self, stmt: Loop) -> list[Out]:
        carried = [(c, last) for c, last in stmt.carried if c in self.active]
        carried_names = {c for c, _ in carried}
        local = assigned_names(stmt.body) | set(stmt.targets)
        pre = [self.zero(v, stmt.loc) for v in self.touched(stmt.body)
               if v not in local and v not in carried_names and self.dname(v) not in self.defined]
        pre += [self.zero(c, stmt.loc) for c, _ in carried if self.dname(c) not in self.defined]
        after_loop, owned = set(self.defined), set(self.owned)
        # iterations share names: a mask read in the body holds one iteration's value
        support, self.support = self.support, {}
        changed_outside, self.changed = self.changed, set()
        self.defined -= {self.names[v] for v in local if v in self.names and v not in carried_names}
        body: list[Out] = []
        for c, last in reversed(carried):
            if last == c:  # carried through a nested loop, which reverses it
                continue
            if last in self.active:
                self.contribute(last, self.dname(c), frozenset({self.dname(c)}), stmt.loc, body)
            self.defined.discard(self.dname(c))
        self.depth += 1
        body += self.block(stmt.body)
        self.depth -= 1
        for c, _ in carried:
            if self.dname(c) not in self.defined:
                body.append(self.zero(c, stmt.loc))
        self.defined = after_loop
        self.owned &= owned  # the loop may run no iteration
        self.support = {d: s for d, s in support.items() if d not in self.changed}
        self.changed |= changed_outside
        if not body:
            return pre
        stmt.tape = self.fn.fresh("tape")
        return pre + [Block(f"while {stmt.tape}:", frozenset({stmt.tape}), body, loop=stmt)]


Path = tuple[tuple[int, int], ...]  # nested branches inside a loop body: (id of the If, 0 or 1)


def _common(paths: list[Path]) -> Path:
    first = paths[0]
    n = 0
    while n < len(first) and all(len(p) > n and p[n] == first[n] for p in paths):
        n += 1
    return first[:n]


def _assignment_paths(stmts: list[Stmt], path: Path, found: dict[str, list[Path]]) -> None:
    """Where each name is assigned in a loop body (nested loops count where they stand)."""
    for s in stmts:
        if isinstance(s, Assign):
            for t in s.targets:
                found.setdefault(t, []).append(path)
        elif isinstance(s, If):
            _assignment_paths(s.body, path + ((id(s), 0),), found)
            _assignment_paths(s.orelse, path + ((id(s), 1),), found)
        elif isinstance(s, Loop):
            for name in [s.tape, s.counter, *(c for c, _ in s.carried), *s.targets]:
                if name:
                    found.setdefault(name, []).append(path)
            inner: dict[str, list[Path]] = {}
            _assignment_paths(s.body, path, inner)
            for name in inner:
                found.setdefault(name, []).append(path)


def _read_paths(outs: list[Out], path: Path, found: dict[str, list[Path]]) -> None:
    """Where the reversed loop body reads each name; a nested reversed loop restores its own."""
    for x in outs:
        for n in x.reads:
            found.setdefault(n, []).append(path)
        if isinstance(x, Block) and x.branch is not None:
            _read_paths(x.body, path + ((id(x.branch), 0),), found)
            _read_paths(x.orelse, path + ((id(x.branch), 1),), found)
        elif isinstance(x, Block) and x.loop is not None:
            inner: dict[str, list[Path]] = {}
            _read_paths(x.body, path, inner)
            own = set(_variant_order(x.loop))
            for n in inner:
                if n not in own:
                    found.setdefault(n, []).append(path)


def callee_args(v: Call) -> list[cst.Arg]:
    """The arguments with which generated code calls the code generated for ``v``'s callee:
    a method's gets the instance first."""
    if v.receiver:
        instance = next(iter(v.args.values()))
        return [cst.Arg(cst.parse_expression(_code(instance))), *v.node.args]
    return list(v.node.args)


def _returned_call(fn: Function, stmts: list[Stmt], value: Operand, activity: Activity
                   ) -> Assign | None:
    """``value = f(...)``, the last statement, when ``value`` (active, and no parameter)
    is what is returned, f is a Python function differentiated by its own adjoint, and
    no other statement assigns ``value`` (so none can read it)."""
    last = stmts[-1] if stmts else None
    if not (isinstance(value, Var) and value.name in activity.active and isinstance(last, Assign)
            and last.target == value.name and isinstance(last.value, Call)
            and last.value.function is not None and last.value.rule is None
            and last.value.problem is None):
        return None
    if value.name in fn.params or value.name in assigned_names(stmts[:-1]):
        return None
    return last


def _reduced_operands(stmts: list[Stmt], name: str, scalars: set[str],
                      active: set[str]) -> list[str] | None:
    """For an output that is a scalar by construction, computed by top-level statements
    (so on every path): the arrays its full reductions reduce, all active (so the
    gradient keeps them, at least as stand-ins); else None."""
    definitions: dict[str, list[Any]] = {}
    for s in assigns(stmts):
        for t in s.targets:
            definitions.setdefault(t, []).append(s)
    top = {id(s) for s in stmts}
    found: list[str] = []
    todo, seen = [name], set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n not in scalars or len(definitions.get(n, ())) > 1 or any(
                id(s) not in top for s in definitions.get(n, ())):
            return None
        for v in (s.value for s in definitions.get(n, ())):
            if isinstance(v, Var):
                todo.append(v.name)
            elif not isinstance(v, Call) or v.rule is None:
                continue
            elif id(v.rule.fun) in _FULL_REDUCTIONS and v.rule.fun is not builtins.float:
                a = next(iter(v.args.values()))
                if not isinstance(a, Var) or a.name not in active:
                    return None
                found.append(a.name)
            elif REGISTRY.key(v.rule.fun) in REAL_RESULTS:  # maybe real of complex: seed() checks
                return None
            else:  # elementwise, or float(): what it reads decides
                todo += [op.name for op in v.args.values() if isinstance(op, Var)]
    return sorted(set(found)) or None


def _complex_values(fn: Function, stmts: list[Stmt]) -> set[str]:
    """Variables that surely hold complex values: results of the FFTs, and of functions of
    complex literals, complex globals or such variables (but for those whose result is real:
    abs, real, imag, angle, the inverse real FFTs)."""
    found: set[str] = set()

    def complex_operand(op: Operand) -> bool:
        if isinstance(op, Var):
            return op.name in found
        return isinstance(op, Const) and (_has_complex_literal(op.code) or any(
            np.iscomplexobj(fn.free[n]) for n in op.reads if n in fn.free and not callable(fn.free[n])))

    size = -1
    while size != len(found):  # a loop may carry a complex value around
        size = len(found)
        for s in assigns(stmts):
            v = s.value
            if not isinstance(s.target, str):
                continue
            if isinstance(v, Var) and v.name in found:
                found.add(s.target)
            elif isinstance(v, Call) and v.rule is not None and REGISTRY.key(v.rule.fun) not in REAL_RESULTS and (
                    REGISTRY.key(v.rule.fun) in COMPLEX_RESULTS or any(map(complex_operand, v.args.values()))):
                found.add(s.target)
    return found


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


def _converts(stmt: Assign, v: Call, fn: Function) -> bool:
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
def _is_number(code: str) -> bool:
    try:
        value = ast.literal_eval(code)
    except (ValueError, SyntaxError):
        return False
    return type(value) in (int, float)


_FULL_REDUCTIONS = {id(f) for f in (np.sum, np.mean, np.max, np.min, np.amax, np.amin,
                                    np.ndarray.sum, np.ndarray.mean, np.ndarray.max,
                                    np.ndarray.min, builtins.float)}


def _scalars(stmts: list[Stmt], params: tuple[str, ...]) -> set[str]:
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
            return _is_number(value.code)
        if isinstance(value, Opaque):  # a size: x.shape[0], len(x)
            node = value.node
            return (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute)
                    and node.value.attr.value == "shape") or (
                isinstance(node, cst.Call) and isinstance(node.func, cst.Name)
                and node.func.value == "len")
        if isinstance(value, Call) and value.rule is not None:
            args = value.args
            if id(value.rule.fun) in _FULL_REDUCTIONS:
                axis, keepdims = args.get("axis", Const("None")), args.get("keepdims", Const("False"))
                return isinstance(axis, Const) and axis.code == "None" and isinstance(
                    keepdims, Const) and keepdims.code == "False"
            if value.rule.elementwise:
                return all(isinstance(op, Const) and _is_number(op.code) or
                           isinstance(op, Var) and op.name in known for op in args.values())
        return False

    known = set(definitions) - set(params)
    while True:
        keep = {n for n in known if all(scalar(v, known) for v in definitions[n])}
        if keep == known:
            return known
        known = keep


def _shape_classes(stmts: list[Stmt], params: tuple[str, ...], scalars: set[str]) -> dict[str, str]:
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
        return isinstance(op, Const) and _is_number(op.code) or isinstance(op, Var) and op.name in scalars

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


def _structural(stmts: list[Stmt], params: tuple[str, ...]) -> set[str]:
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


def _bound_before(stmts: list[Stmt], bound: set[str], found: dict[int, frozenset[str]]) -> set[str]:
    """Record in ``found`` the names surely bound before each if; return those bound after ``stmts``."""
    for s in stmts:
        if isinstance(s, Assign):
            bound |= set(s.targets)
        elif isinstance(s, If):
            found[id(s)] = frozenset(bound)
            bound |= _bound_before(s.body, set(bound), found) & _bound_before(s.orelse, set(bound), found)
        elif isinstance(s, Loop):
            _bound_before(s.body, bound | set(s.targets), found)
    return bound


def _variant_order(loop: Loop) -> list[str]:
    """Names a loop's iterations overwrite, in a fixed order: carried first."""
    found: dict[str, list[Path]] = {}
    _assignment_paths(loop.body, (), found)
    return list(dict.fromkeys([c for c, _ in loop.carried] + list(loop.targets) + list(found)))


def _ifs_in(stmts: list[Stmt]) -> list[If]:
    """The ifs of a loop body, nested loops aside."""
    out: list[If] = []
    for s in stmts:
        if isinstance(s, If):
            out += [s] + _ifs_in(s.body) + _ifs_in(s.orelse)
    return out


@functools.lru_cache(maxsize=4096)
def _expression(code: str) -> ast.expr:
    return ast.parse(code, mode="eval").body


def _called(node: ast.expr) -> str | None:
    """The name a call expression calls, if it is a plain name."""
    return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None


_FRESH = ("zeros_grad", "getitem_grad", "seed", "matmul_grad_lhs", "matmul_grad_rhs",
          "dot_grad_lhs", "dot_grad_rhs")  # runtime helpers that return new arrays


def _finish_loops(adj: Adjoint) -> None:
    """Decide what each reversed loop saves per iteration (or that it only counts).

    A loop saves the values its reversed body reads and the iterations overwrite,
    and the carried values that backward code outside it reads (popping restores
    them).  Each value is pushed at the end of the block that defines it -- the
    body, or a branch inside it, so that a branch not taken pushes nothing -- and
    popped where the reversed block starts.
    """
    params = set(adj.fn.params)
    blocks = [b for b in lines(adj.backward) if isinstance(b, Block) and b.loop is not None]
    for block in reversed(blocks):  # inner loops first: outer loops save what they decide
        loop = block.loop
        inside = {id(x) for x in lines(block.body)}
        reads_out = {n for x in lines(adj.backward) if id(x) not in inside and x is not block
                     for n in x.reads} | params
        assigned: dict[str, list[Path]] = {}
        _assignment_paths(loop.body, (), assigned)
        for name in [*(c for c, _ in loop.carried), *loop.targets]:
            assigned.setdefault(name, []).append(())
        read: dict[str, list[Path]] = {}
        _read_paths(block.body, (), read)
        carried = {c for c, _ in loop.carried}
        saves: dict[Path, list[str]] = {}
        for name in _variant_order(loop):
            if name in read:
                where = _common(assigned[name] + read[name])
            elif name in carried and name in reads_out:
                where = ()
            else:
                continue
            saves.setdefault(where, []).append(name)
        for where, names in saves.items():
            # a name some paths through its block leave unbound is None on those (the push
            # at the block's end reads it; the reversed block reads it only where it was bound)
            stmts = _block_at(loop.body, where)
            bound = surely_assigned(stmts) | carried | set(loop.targets)
            stmts[:0] = [Assign(n, Const("None"), loop.loc, temporary=True) for n in names if n not in bound]
        loop.saved = tuple(saves.get((), ()))
        for branch in _ifs_in(loop.body):
            branch.saves = (tuple(saves.get(_path_of(loop.body, branch) + ((id(branch), 0),), ())),
                            tuple(saves.get(_path_of(loop.body, branch) + ((id(branch), 1),), ())))
        if not any(saves.values()):
            loop.counter = adj.fn.fresh("iterations")
            block.header = f"for _ in range({loop.counter}):"
            block.reads = frozenset({loop.counter})
            loop.tape = None
        for branch in _ifs_in(loop.body):
            branch.tape = loop.tape


def _block_at(stmts: list[Stmt], path: Path) -> list[Stmt]:
    """The statements of the branch at ``path`` in a loop body."""
    for if_id, side in path:
        branch = next(s for s in stmts if isinstance(s, If) and id(s) == if_id)
        stmts = branch.orelse if side else branch.body
    return stmts


def _path_of(stmts: list[Stmt], target: If, path: Path = ()) -> Path:
    for s in stmts:
        if s is target:
            return path
        if isinstance(s, If):
            for i, branch in enumerate((s.body, s.orelse)):
                found = _path_of(branch, target, path + ((id(s), i),))
                if found != ("missing",):
                    return found
    return ("missing",)


def generate(fn: Function, source: FunctionSource, wrt: tuple[str, ...], multiple: bool,
             kind: str, activity: Activity, split: bool = True) -> Adjoint:
    ret = fn.body[-1]
    assert isinstance(ret, Return)
    suffix = "_wrt_" + "_".join(re.sub(r"\W", "", p) for p in wrt) if kind in CALLEE_KINDS and set(
        wrt) != set(fn.params) else ""
    prefix = "forward" if kind == "split" else kind.removeprefix("callee_")
    adj = Adjoint(fn, source, wrt, multiple, fn.fresh(f"{prefix}_{fn.name}{suffix}"), fn.body[:-1],
                  ret.value, None, [], [], kind=kind, split=split)
    if kind == "split":
        adj.backward_name = fn.fresh("backward")
    rev = Reverser(adj, activity)
    value = ret.value
    if kind not in ("vjp", "split") and isinstance(value, Var) and value.name in rev.complex:
        raise NonScalarOutputError(
            "the differentiated function must return a real floating-point scalar, but this value "
            "is complex; return np.real(...), np.imag(...) or np.abs(...) of it", ret.loc)
    seeded = kind in ("vjp", "split")  # the caller passes the output's gradient
    returned_call = None if seeded else _returned_call(fn, adj.forward, value, activity)
    head: list[Out] = []
    if returned_call is not None:
        # return f(...): f's own gradient, which seeds itself, instead of its value (the
        # seed) and then its vjp (which would compute f's forward pass a second time)
        adj.forward = adj.forward[:-1]
        with_value = kind in VALUE_KINDS
        adj.value_needed = with_value
        rev.user_call(returned_call, returned_call.value, None, head,
                      value=value.name if with_value else None)
    elif seeded:
        live = isinstance(value, Var) and value.name in activity.active
        adj.seed_param = rev.seed = rev.dname(value.name) if live else fn.fresh("g")
        rev.defined.add(adj.seed_param)
    elif isinstance(value, Var) and value.name in activity.active:
        reduced = _reduced_operands(fn.body[:-1], value.name, rev.scalars, activity.active)
        if kind in ("grad", "callee_grad") and reduced:
            # a scalar by construction (full reductions, numbers, sizes): the seed needs no
            # value, so the code that only computes it is left out; what is reduced must
            # still be real (a complex constant could make the output complex)
            adj.seed, adj.value_needed = (
                f"{rev.dname(value.name)} = {adj.use('seed_for')}({', '.join(reduced)})", False)
        else:
            adj.seed = f"{rev.dname(value.name)} = {adj.use('seed')}({value.name})"
        rev.defined.add(rev.dname(value.name))
        rev.seed = rev.dname(value.name)
    else:
        code = _code(value)
        adj.seed = f"{adj.use('seed')}({code if is_atomic(code) else '(' + code + ')'})"
    adj.backward = head + rev.block(adj.forward)
    for stmt, saved in adj.split_calls:
        stmt.target = (stmt.target, saved)
    for p in wrt:  # each gradient in its argument's type, shape and dtype, owned by the caller
        param = wrt_parameter(p)  # args[0]: the gradient of args, at [0]
        if param not in activity.active:
            adj.results.append(f"{adj.use('zeros_grad')}({p})")
        else:
            adj.results.append(f"{adj.use('grad_like')}({rev.dname(param)}{p[len(param):]}, {p})")
    _finish_loops(adj)
    restored = {n for b in lines(adj.backward) if isinstance(b, Block) and b.loop for n in b.loop.saved}
    if isinstance(value, Var) and value.name in restored:
        adj.value_copy = fn.fresh("value_out")
    return adj
