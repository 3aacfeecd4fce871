"""Pass 6 in forward mode: tangent generation.

Every active statement is followed by the statement that computes its
tangent (``z_dot``), from the same rule registry as the adjoints: elementwise
rules reuse their adjoint templates (they are linear in ``g``), linear rules
apply the function to the tangents, and the rest declare ``jvp`` templates.
Control flow keeps its shape: a loop carries tangents like values.  No tape.
"""
from __future__ import annotations

import re
from typing import Any

import libcst as cst

from ..errors import NoGradientRuleError, S2SADError
from ..ir import (Assign, Call, Function, If, Loop, Opaque, Operand, Raw, Return, Stmt, Var, operand_code,
                  operand_reads, targets_code, wrt_parameter)
from ..rules.complex_rules import REAL_ONLY
from ..rules.registry import REGISTRY, SETITEM
from ..rules.shapes import TANGENT, Known
from .activity import Activity
from .callees import Build, tangent_parameter
from .adjoint import Adjoint
from .reverse import callee_args
from .values import as_arrays, bound_before, converts, is_number, scalars, sequences
from .simplify import simplify
from .specialize import specialize_tangents
from .source import FunctionSource

_EMPTY = cst.Module(body=[])


class _Substitute(cst.CSTTransformer):
    """Replace given nodes (by identity) with code."""

    def __init__(self, replace: dict[int, str]) -> None:
        self.replace = replace

    def on_leave(self, original: cst.CSTNode, updated: Any) -> Any:
        code = self.replace.get(id(original))
        if code is None:
            return updated
        expr = cst.parse_expression(code)
        if not isinstance(expr, (cst.Name, cst.Call, cst.Attribute, cst.Subscript)):
            expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return expr


class Forward:
    def __init__(self, adj: Adjoint, activity: Activity) -> None:
        self.adj = adj
        self.fn = adj.fn
        self.active = activity.active
        self.names: dict[str, str] = {}
        self.defined: set[str] = set()
        self.scalars = scalars(adj.forward, adj.fn.params)
        self.sequences = sequences(adj.forward)
        self.bound: dict[int, frozenset[str]] = {}
        bound_before(adj.forward, set(adj.fn.params), self.bound)

    def tname(self, var: str) -> str:
        if var not in self.names:
            self.names[var] = self.fn.fresh(f"{var}_dot")
        return self.names[var]

    def tangent(self, op: Operand) -> str | None:
        """The tangent of an operand as code, or None where it is zero (an inactive
        value, or one no tangent statement has set, such as a loop counter)."""
        if isinstance(op, Var) and op.name in self.active and self.tname(op.name) in self.defined:
            return self.tname(op.name)
        return None

    def zero(self, code: str) -> str:
        if code == "None":  # no value (a gradient generated code leaves out): no tangent either
            return "None"
        return f"{self.adj.use('zeros_grad')}({code})"

    def set(self, var: str, code: str, reads: set[str], loc: Any) -> Raw:
        self.defined.add(self.tname(var))
        return Raw(f"{self.tname(var)} = {code}", frozenset(reads), loc)

    # --- statements -------------------------------------------------------------
    def block(self, stmts: list[Stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        for s in stmts:
            if isinstance(s, Assign):
                out += self.assign(s)
            elif isinstance(s, If):
                before = set(self.defined)
                s.body = self.block(s.body)
                after_body, self.defined = self.defined, set(before)
                s.orelse = self.block(s.orelse)
                if not s.context:  # (a ``with`` block has no other branch: it always runs)
                    self.zero_in_other_branch(s, after_body, self.defined)
                self.defined |= after_body  # a value set in one branch only is read only after it
                out.append(s)
            elif isinstance(s, Loop):
                out += self.loop(s)
            else:
                out.append(s)
        return out

    def zero_in_other_branch(self, s: If, after_body: set[str], after_orelse: set[str]) -> None:
        """A parameter whose tangent one branch starts (it becomes varied there only) has a
        zero tangent on the other branch: code after the branches reads it either way."""
        for var in self.fn.params:
            tname = self.names.get(var)
            if tname is None or var not in self.active:
                continue
            if tname in after_body and tname not in after_orelse:
                s.orelse.append(self.set(var, self.zero(var), {var}, s.loc))
            elif tname in after_orelse and tname not in after_body:
                s.body.append(self.set(var, self.zero(var), {var}, s.loc))

    def loop(self, s: Loop) -> list[Stmt]:
        pre: list[Stmt] = []
        for c, last in s.carried:
            if c in self.active and self.tname(c) not in self.defined:
                # (a name only an earlier loop's iterations bind may be unbound: its tangent is 0.0)
                bound = c in self.bound.get(id(s), (c,))
                pre.append(self.set(c, self.zero(c if bound else "None"), {c} if bound else set(), s.loc))
        s.body = self.block(s.body)
        tangents = []
        for c, last in s.carried:
            if c not in self.active:
                continue
            if last not in self.active:
                s.body.append(self.set(last, self.zero(last), {last}, s.loc))
            if c != last:
                tangents.append((self.tname(c), self.tname(last)))
        s.carried = s.carried + tangents
        return pre + [s]

    def assign(self, s: Assign) -> list[Stmt]:
        v = s.value
        if isinstance(s.target, tuple):
            if isinstance(v, Var) and self.tangent(v):
                names = targets_code([self.tname(t) for t in s.target])
                self.defined.update(self.tname(t) for t in s.target)
                return [s, Raw(f"{names} = {self.tname(v.name)}", frozenset({self.tname(v.name)}), s.loc)]
            if isinstance(v, (Var, Opaque)):  # unpacking a constant: zero tangents (a branch may vary them)
                return [s] + [self.set(t, self.zero(t), {t}, s.loc) for t in s.target if t in self.active]
            return [s]
        if s.target is None or s.target not in self.active:
            return [s]
        t = s.target
        if isinstance(v, Var):
            src = self.tangent(v)
            return [s, self.set(t, src or self.zero(t), {src} if src else {t}, s.loc)]
        if isinstance(v, Call) and v.function is not None:
            if not any(self.tangent(op) for op in v.args.values()):
                return [s, self.set(t, self.zero(t), {t}, s.loc)]  # no varied argument here
            return [self.user_call(s, v)]
        if not isinstance(v, Call) or v.rule is None:
            return [s, self.set(t, self.zero(t), {t}, s.loc)]
        if v.rule.fun is SETITEM:
            return [s] + self.setitem(s, v)
        code, reads = self.rule_tangent(s, v)
        return [s, self.set(t, code, reads, s.loc)]

    def rule_tangent(self, s: Assign, v: Call) -> tuple[str, set[str]]:
        rule = v.rule
        values = {p: operand_code(op) for p, op in v.args.items()}
        arrays = as_arrays(v, self.sequences, self.adj.use)
        values.update(arrays)
        values["ans"] = s.target
        reads: set[str] = set()
        terms: list[str] = []
        differentiable = rule.differentiable()
        active = {p: self.tangent(op) for p, op in v.args.items() if p in differentiable}
        active = {p: tan for p, tan in active.items() if tan}
        if not active:
            return self.zero(s.target), {s.target}
        if rule.linear == "joint" and not rule.jvps:
            replace = {}
            for p in differentiable:
                node = v.slots.get(p)
                if node is None:
                    if p in active:
                        raise NoGradientRuleError(
                            f"cannot write the tangent of {v.callee}: the argument '{p}' is not "
                            f"found in the expression", s.loc)
                    continue
                replace[id(node)] = active.get(p) or self.zero(operand_code(v.args[p]))
            terms.append(_EMPTY.code_for_node(v.node.visit(_Substitute(replace))).strip())
            reads |= {n for op in v.args.values() for n in operand_reads(op)} | set(active.values())
        else:
            for p, tan in active.items():
                if p in arrays:  # a list's tangent is a list: as an array, as NumPy reads it
                    tan = f"{self.adj.use('np')}.asarray({tan})"
                if p in rule.jvps:
                    template = rule.jvps[p]
                    code = template.render({**values, "t": tan},
                                           {n: self.adj.use(n) for n in template.runtime})
                elif rule.elementwise:
                    template = rule.vjps[p]
                    code = template.render({**values, "g": tan},
                                           {n: self.adj.use(n) for n in template.runtime})
                    if p in rule.broadcast and not all(
                            self.is_scalar(v.args[q]) for q in rule.broadcast if q != p and q in v.args):
                        code = f"{self.adj.use('broadcast_tangent')}({code}, {s.target})"
                elif rule.linear == "each" and p in v.slots:
                    node = v.node.visit(_Substitute({id(v.slots[p]): tan}))
                    code = _EMPTY.code_for_node(node).strip()
                else:
                    raise NoGradientRuleError(
                        f"no forward-mode rule for {v.callee}; declare it elementwise, linear, or "
                        f"give jvp templates (s2sad.defvjp)", s.loc)
                if REGISTRY.key(rule.fun) in REAL_ONLY:
                    code = f"{self.adj.use('real_input')}({code}, {operand_code(v.args[p])}, {v.callee!r})"
                terms.append(simplify(code))
                reads |= {n for op in v.args.values() for n in operand_reads(op)} | {tan, s.target}
        code = _sum_terms(terms, self.adj.use("add_grads") if rule.returns_container else None)
        if converts(s, v, self.fn):  # dtype=...: to an integer dtype, an error rather than a tangent
            code = f"{self.adj.use('cast_grad')}({code}, {s.target}, {s.target})"
            reads.add(s.target)
        return code, reads

    def is_scalar(self, op: Operand) -> bool:
        return op.name in self.scalars if isinstance(op, Var) else is_number(op.code)

    def setitem(self, s: Assign, v: Call) -> list[Stmt]:
        tx = self.tangent(v.args["x"]) or self.zero(operand_code(v.args["x"]))
        tv = self.tangent(v.args["v"]) or self.zero(operand_code(v.args["v"]))
        target = self.tname(s.target)
        self.defined.add(target)
        place = _EMPTY.code_for_node(v.node.with_changes(value=cst.Name(target))).strip()
        reads = frozenset({operand_code(v.args["x"]), operand_code(v.args["v"])} | set(v.args["index"].reads))
        return [Raw(f"{target} = {tx}.copy()", reads, s.loc), Raw(f"{place} = {tv}", reads, s.loc)]

    def user_call(self, s: Assign, v: Call) -> Raw:
        """``y, y_dot = jvp_f((a_dot, b_dot), a, b)``: the callee's own tangent code."""
        active = [(p, tan) for p, op in v.args.items() if (tan := self.tangent(op))]
        try:
            jvp = self.adj.callee(v.function, tuple(p for p, _ in active), "jvp")
        except S2SADError as exc:
            if exc.location is None:
                exc.location = s.loc
            raise
        tangents = active[0][1] if len(active) == 1 else "(" + ", ".join(t for _, t in active) + ")"
        # the tangent is the callee's last parameter, passed by keyword (it may be keyword-only)
        keyword = tangent_parameter(self.adj.callees[jvp])
        call = v.node.with_changes(func=cst.Name(jvp), args=[
            *callee_args(v), cst.Arg(cst.parse_expression(tangents), keyword=cst.Name(keyword),
                                     equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))])
        self.defined.add(self.tname(s.target))
        reads = frozenset({n for op in v.args.values() for n in operand_reads(op)} | {t for _, t in active})
        return Raw(f"{s.target}, {self.tname(s.target)} = {_EMPTY.code_for_node(call).strip()}",
                   reads, s.loc)


def _sum_terms(terms: list[str], add_grads: str | None) -> str:
    """The sum of a call's tangent terms; of a rule returning a list or tuple, leaf by leaf by
    ``add_grads`` (``+`` would join the two lists)."""
    if add_grads is not None and len(terms) > 1:
        code = terms[0]
        for t in terms[1:]:
            code = f"{add_grads}({code}, {t})"
        return code
    return " + ".join(t if len(terms) == 1 or _safe_term(t) else f"({t})" for t in terms)


def _safe_term(term: str) -> bool:
    return not any(op in term for op in (" + ", " - ", " if "))


def generate(fn: Function, source: FunctionSource, wrt: tuple[str, ...], multiple: bool,
             kind: str, activity: Activity, build: Build | None = None,
             arguments: dict[str, Known | None] | None = None) -> Adjoint:
    """The forward-mode code of ``fn``; ``arguments``: what is known of the arguments (and,
    under ``TANGENT``, the tangent) of the calls it is specialised to, or None."""
    ret = fn.body[-1]
    assert isinstance(ret, Return)
    adj = Adjoint(fn, source, wrt, multiple, fn.fresh(f"jvp_{fn.name}"), fn.body[:-1], ret.value,
                  None, [], [], kind="jvp", build=build)
    fwd = Forward(adj, activity)
    tangent = fn.fresh("tangent")
    adj.seed_param = tangent
    names = []
    items: dict[str, list[tuple[str, str]]] = {}  # args -> (key, tangent) for args[0], ...
    for p in wrt:
        param = wrt_parameter(p)
        if param == p:
            names.append(fwd.tname(p))
        else:
            names.append(fn.fresh(f"{fwd.tname(param)}_{re.sub(r'[^0-9a-zA-Z]', '', p[len(param):])}"))
            items.setdefault(param, []).append((p[len(param) + 1:-1], names[-1]))
    first = [Raw(f"{', '.join(names)} = {tangent}" + ("," if len(names) == 1 and multiple else ""),
                 frozenset({tangent}), ret.loc)]
    first += [Raw(f"{name} = {adj.use('check_tangent')}({name}, {p}, {p!r})", frozenset({name, wrt_parameter(p)}),
                  ret.loc) for p, name in zip(wrt, names)]
    for param, entries in items.items():  # the tangent of args: zero but at the items
        code = f"{adj.use('zeros_grad')}({param})"
        for key, name in entries:
            code = f"{adj.use('add_at')}({code}, {key}, {name})"
        first.append(Raw(f"{fwd.tname(param)} = {code}", frozenset({param, *(n for _, n in entries)}), ret.loc))
    fwd.defined.update(names, (fwd.tname(param) for param in items))
    body = fwd.block(adj.forward)
    adj.forward = first + body
    value = ret.value
    if isinstance(value, Var) and value.name in activity.active:
        adj.results = [fwd.tname(value.name)]
    else:
        adj.results = [fwd.zero(operand_code(value))]
    if arguments is not None:
        known = {p: k for p, k in arguments.items() if p != TANGENT}
        specialize_tangents(adj, {**known, tangent: arguments.get(TANGENT)})
    return adj
