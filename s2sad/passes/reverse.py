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
from collections import Counter
from typing import Any

import libcst as cst

from ..errors import NonScalarOutputError, S2SADError
from ..ir import (VALUE_KINDS, Assign, Call, Const, Function, If, Loop, Operand, Return, Stmt, Var,
                  assigned_names, assigns, if_header, operand_code, operand_reads, wrt_parameter)
from ..rules.complex_rules import COMPLEX_RESULTS, REAL_ONLY, REAL_RESULTS
from ..rules.registry import REGISTRY, is_atomic
from ..rules.shapes import Known
from .activity import Activity
from .adjoint import (FRESH_HELPERS, Adjoint, Block, Line, Out, Support, entry_values, joined, lines,
                      mask_position)
from .callees import Build, generated_name
from .fold import drop_copies, drop_copy_backs
from .loop_tapes import finish_loops
from .simplify import plus, simplify
from .specialize import specialize
from .source import FunctionSource
from .values import (FULL_REDUCTIONS, bound_before, complex_values, converts, is_number, as_arrays,
                     scalars, sequences, shape_classes, structural, surely_complex_values)

_EMPTY = cst.Module(body=[])


class Reverser:
    def __init__(self, adj: Adjoint, activity: Activity) -> None:
        self.adj = adj
        self.fn = adj.fn
        self.active = activity.active
        self.names: dict[str, str] = {}
        self.defined: set[str] = set()
        self.depth = 0  # loops around the statement being reversed
        self.owned: set[str] = set()  # adjoints holding a fresh array that may be updated in place
        self.structural = structural(adj.forward, adj.fn.params)
        self.sequences = sequences(adj.forward)
        self.scalars = scalars(adj.forward, adj.fn.params)
        self.shapes = shape_classes(adj.forward, adj.fn.params, self.scalars)
        self.bound: dict[int, frozenset[str]] = {}
        bound_before(adj.forward, set(adj.fn.params), self.bound)
        self.once = {t for t, times in Counter(t for s in assigns(adj.forward) for t in s.targets).items()
                     if times == 1}
        # in a loop body, adjoints defined as exactly ``unbroadcast(e, y)`` (e an adjoint's
        # name): their line, and e
        self.reduced: dict[str, tuple[Line, str]] = {}
        self.support: dict[str, Support] = {}  # adjoint name -> where it may be nonzero
        self.changed: set[str] = set()  # adjoints assigned (in the loop being reversed)
        self.complex = complex_values(adj.fn, adj.forward)
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
        old = self.support.pop(d, None)
        support = joined(old, support, out, var) if support is not None and d in self.defined else support
        if support is not None:
            self.support[d] = support
        owned = d in self.owned
        line = None
        if d in self.defined:
            if scatter is not None and owned:
                code = f"{self.adj.use('add_at')}({d}, {scatter[0]}, {scatter[1]})"
            elif scatter is not None and var in self.structural:  # (a list's: no zero per item)
                code = f"{self.adj.use('added_at')}({d}, {var}, {scatter[0]}, {scatter[1]})"
                reads = reads | {var}
            elif var in self.structural:
                code = f"{self.adj.use('add_grads')}({d}, {code})"
            elif owned:  # an array this code made: add in place, no new array per term
                line = f"{d} += {code}"
            else:
                code = plus(d, code)
            reads = reads | {d}
        owned = d in self.defined or self.fresh(code)
        self.defined.add(d)
        (self.owned.add if owned else self.owned.discard)(d)
        out.append(Line(line or f"{d} = {code}", reads, stmt_loc.line, stmt_loc.source_line.strip()))

    def fresh(self, code: str) -> bool:
        """Whether ``code`` makes a new array that no other name holds."""
        node = _expression(code)
        runtime = self.adj.runtime
        if _called(node) is not None and _called(node) == runtime.get("unbroadcast") and node.args:
            node = node.args[0]  # unbroadcast(new, x) is new, or a sum of it
        return isinstance(node, (ast.BinOp, ast.UnaryOp)) or _called(node) in {
            runtime.get(n) for n in FRESH_HELPERS} - {None}

    def mask(self, support: Support) -> str:
        """The name of the backward variable holding ``support``'s mask, computed at first use."""
        if support.name is None:
            code, reads = support.code, support.reads
            if support.parts:
                names = [self.mask(p) for p in support.parts]
                code, reads = f"{self.adj.use('np')}.logical_or({', '.join(names)})", frozenset(names)
            if support.parent is not None:
                outer = self.mask(support.parent)
                code = outer if code is None else f"{self.adj.use('np')}.logical_and({outer}, {code})"
                reads |= {outer}
            support.name = self.fn.fresh(f"{support.operand}_taken")
            outs, anchor = support.anchored()
            support.line = Line(f"{support.name} = {self.adj.use('branch_mask')}({code}, {support.operand})",
                                reads | {support.operand}, anchor.group, anchor.source)
            outs.insert(mask_position(outs, anchor, support.parts), support.line)
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
        """Reverse ``stmt``: its target's adjoint contributes to those of the values it reads."""
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
        elif isinstance(v, Call) and v.function is not None:
            self.user_call(stmt, v, g, out)
        elif isinstance(v, Call) and v.rule is not None:
            self.rule_call(stmt, v, g, support, out)

    def rule_call(self, stmt: Assign, v: Call, g: str, support: Support | None, out: list[Out]) -> None:
        """``y = f(a, b)`` by f's rule, ``g`` y's adjoint: each active operand's adjoint gets its vjp."""
        values = {p: operand_code(op) for p, op in v.args.items()} | as_arrays(v, self.sequences, self.adj.use)
        values["g"], values["ans"] = g, stmt.target
        converting = converts(stmt, v, self.fn)
        if converting:  # dtype=...: to an integer dtype, an error rather than a gradient
            values["g"] = f"{self.adj.use('cast_grad')}({g}, {stmt.target}, {stmt.target})"
        aliases: list[str] = []  # adjoints this statement sets to g itself
        differentiated = [(p, op) for p, op in v.args.items() if p in v.rule.vjps and isinstance(op, Var)
                          and op.name in self.active]
        chained = self.reduced.pop(g, None)
        if chained is not None and (len(differentiated) != 1 or converting
                                    or not any(x is chained[0] for x in out)):
            chained = None
        for p, op in differentiated:
            code, reads = self.vjp_code(stmt, v, p, g, values, support)
            if converting:
                reads.add(stmt.target)
            passes_support = support is not None and v.rule.elementwise
            reduced_from = None  # an adjoint's name this operand's adjoint is reduced from
            if p in v.rule.broadcast and not all(
                    self.is_scalar(v.args[q]) for q in v.rule.broadcast if q != p and q in v.args
            ) and not self.same_shape(op.name, stmt.target):
                code, reads, reduced_from = self.reduce_to(op.name, code, reads, g, chained, out, values[p])
                passes_support = passes_support and "reduced"
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

    def vjp_code(self, stmt: Assign, v: Call, p: str, g: str, values: dict[str, str],
                 support: Support | None) -> tuple[str, set[str | None]]:
        """The contribution through parameter ``p`` as its rule's template gives it; the names it reads."""
        template = v.rule.vjps[p]
        code = simplify(template.render(values, {n: self.adj.use(n) for n in template.runtime}))
        reads = {g if h == "g" else stmt.target if h == "ans" else None for h in template.holes}
        reads |= {n for h in template.holes if h in v.args for n in operand_reads(v.args[h])}
        # g is zero outside the support: so is the contribution, also where the local
        # derivative is inf or NaN (0 * inf would be NaN)
        if support is not None and v.rule.elementwise and any(h == "ans" or h in v.args and not (
                isinstance(v.args[h], Const) and is_number(v.args[h].code)) for h in template.holes):
            mask = self.mask(support)
            code = f"{self.adj.use('np')}.where({mask}, {code}, 0)"
            reads.add(mask)
        return code, reads

    def reduce_to(self, operand: str, code: str, reads: set[str | None], g: str,
                  chained: tuple[Line, str] | None, out: list[Out], like: str) -> tuple[str, set[str | None], str | None]:
        """``code`` reduced to ``operand``'s shape (``like``: np.asarray(ys) for a list); its reads; the adjoint reduced."""
        negated = code.startswith("-") and code[1:].isidentifier()
        reduced = code[1:] if negated else code
        if chained is not None and reduced == g:
            # g = unbroadcast(e, ans), and operand broadcasts to ans's shape: reduce e to
            # operand's shape at once (one call and one saved shape less per iteration)
            out[:] = [x for x in out if x is not chained[0]]
            reduced = chained[1]
            reads = {reduced}
        code = f"{self.adj.use('unbroadcast')}({reduced}, {like})"
        code = f"-{code}" if negated else code  # negate after reducing: a smaller array
        reads.add(operand)
        return code, reads, reduced if not negated and reduced.isidentifier() else None

    def narrow(self, p: str, v: Call, values: dict[str, str], support: Support | None,
               passes: bool | str) -> Support | None:
        """Where the contribution through parameter ``p`` may be nonzero: the rule's mask for
        ``p``, or the output adjoint's ``support`` that an elementwise function passes on
        (reduced to the operand's shape where its contribution was, ``passes == "reduced"``)."""
        operand = v.args[p].name
        template = v.rule.masks.get(p)
        if template is not None:  # np.where(c, x, y) under a support s: x's is s & c
            code = template.render(values, {n: self.adj.use(n) for n in template.runtime})
            reads = frozenset(n for h in template.holes for n in operand_reads(v.args[h]))
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
        return is_number(op.code)

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
                          {g} - {None} | {n for op in v.args.values() for n in operand_reads(op)})
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
        return pre + [Block(if_header(stmt), frozenset(operand_reads(stmt.test)), body, orelse,
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


def callee_args(v: Call) -> list[cst.Arg]:
    """The arguments with which generated code calls the code generated for ``v``'s callee:
    a method's gets the instance first."""
    if v.receiver:
        instance = next(iter(v.args.values()))
        return [cst.Arg(cst.parse_expression(operand_code(instance))), *v.node.args]
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
            elif id(v.rule.fun) in FULL_REDUCTIONS and v.rule.fun is not builtins.float:
                a = next(iter(v.args.values()))
                if not isinstance(a, Var) or a.name not in active:
                    return None
                found.append(a.name)
            elif REGISTRY.key(v.rule.fun) in REAL_RESULTS:  # maybe real of complex: seed() checks
                return None
            else:  # elementwise, or float(): what it reads decides
                todo += [op.name for op in v.args.values() if isinstance(op, Var)]
    return sorted(set(found)) or None


@functools.lru_cache(maxsize=4096)
def _expression(code: str) -> ast.expr:
    return ast.parse(code, mode="eval").body


def _called(node: ast.expr) -> str | None:
    """The name a call expression calls, if it is a plain name."""
    return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None


def _seed(adj: Adjoint, rev: Reverser, activity: Activity) -> list[Out]:
    """Seed the returned value's adjoint: a vjp's argument, one, or a returned call's own gradient (its lines)."""
    fn, kind, value = adj.fn, adj.kind, adj.value
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
        code = operand_code(value)
        adj.seed = f"{adj.use('seed')}({code if is_atomic(code) else '(' + code + ')'})"
    return head


def differentiate(fn: Function, source: FunctionSource, wrt: tuple[str, ...], multiple: bool,
                  kind: str, activity: Activity, split: bool = True, build: Build | None = None) -> Adjoint:
    """The adjoint of ``fn`` before it is specialised to its arguments: the same for all."""
    ret = fn.body[-1]
    assert isinstance(ret, Return)
    adj = Adjoint(fn, source, wrt, multiple, fn.fresh(generated_name(fn.name, wrt, kind, fn.params)),
                  fn.body[:-1], ret.value, None, [], [], kind=kind, split=split, build=build)
    if kind == "split":
        adj.backward_name = fn.fresh("backward")
    rev = Reverser(adj, activity)
    if kind not in ("vjp", "split") and isinstance(ret.value, Var) and ret.value.name in rev.complex and (
            ret.value.name in surely_complex_values(fn, adj.forward)):  # (seed checks one that may be real)
        raise NonScalarOutputError(
            "the differentiated function must return a real floating-point scalar, but this value "
            "is complex; return np.real(...), np.imag(...) or np.abs(...) of it", ret.loc)
    head = _seed(adj, rev, activity)
    adj.backward = head + rev.block(adj.forward)
    for stmt, saved in adj.split_calls:
        stmt.target = (stmt.target, saved)
    entry = entry_values(adj, {wrt_parameter(p) for p in wrt})
    for p in wrt:  # each gradient in its argument's type, shape and dtype, owned by the caller
        param = wrt_parameter(p)  # args[0]: the gradient of args, at [0]
        given = entry.get(param, param) + p[len(param):]  # (the value on entry)
        reached = param in activity.active and rev.names.get(param) in rev.defined
        adj.results.append(f"{adj.use('grad_like')}({rev.dname(param)}{p[len(param):]}, {given})" if reached
                           else f"{adj.use('zeros_grad')}({given})")
    adj.backward = drop_copy_backs(adj.backward)
    drop_copies(adj)
    return adj


def finish(adj: Adjoint, arguments: dict[str, Known | None] | None) -> Adjoint:
    """``adj`` specialised to ``arguments`` (shapes, dtypes; None: any), loops' tapes decided."""
    if arguments is not None:
        specialize(adj, arguments)
    finish_loops(adj)
    restored = {n for b in lines(adj.backward) if isinstance(b, Block) and b.loop for n in b.loop.saved}
    adj.value_copy = adj.fn.fresh("value_out") if isinstance(adj.value, Var) and adj.value.name in restored else None
    return adj

