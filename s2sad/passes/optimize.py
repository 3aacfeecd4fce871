"""Pass 7: light cleanup of the generated function.

* forward statements whose values nothing reads are dropped (pure ones only);
* a temporary that is read once, by a later forward statement, and never by
  the backward pass, is folded back into that statement, so the forward pass
  reads like the user's code.
"""
from __future__ import annotations

from collections import Counter

import libcst as cst

from ..ir import Assign, Call, Opaque, Var, operand_reads, reads
from .reverse import Adjoint

_LOOSE = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BooleanOperation,
          cst.IfExp, cst.Lambda)


def _pure(stmt: Assign) -> bool:
    v = stmt.value
    if isinstance(v, Call):
        return v.rule is not None
    if isinstance(v, Opaque):
        return stmt.target is not None
    return True


def optimize(adj: Adjoint) -> Adjoint:
    _drop_dead(adj)
    _fold_temporaries(adj)
    return adj


def _drop_dead(adj: Adjoint) -> None:
    needed = set(operand_reads(adj.value)) | {n for line in adj.backward for n in line.reads}
    needed |= set(adj.wrt)
    kept = []
    for stmt in reversed(adj.forward):
        if _pure(stmt) and not any(t in needed for t in stmt.targets):
            continue
        kept.append(stmt)
        needed.update(reads(stmt.value))
    adj.forward = kept[::-1]


def _fold_temporaries(adj: Adjoint) -> None:
    uses = Counter(n for s in adj.forward for n in reads(s.value))
    pinned = set(operand_reads(adj.value)) | {n for line in adj.backward for n in line.reads}
    out: list[Assign] = []
    pending: dict[str, cst.BaseExpression] = {}
    for stmt in adj.forward:
        stmt = _substitute(stmt, pending)
        name = stmt.target
        if (stmt.temporary and isinstance(name, str) and uses[name] == 1 and name not in pinned
                and _pure(stmt) and isinstance(stmt.value, (Call, Opaque))):
            pending[name] = stmt.value.node
            continue
        out.append(stmt)
    adj.forward = out


def _substitute(stmt: Assign, pending: dict[str, cst.BaseExpression]) -> Assign:
    value = stmt.value
    hits = [n for n in reads(value) if n in pending]
    if not hits:
        return stmt
    if isinstance(value, Var):
        node = pending[value.name]
        return Assign(stmt.target, Opaque(node, (), "folded"), stmt.loc, stmt.temporary)
    new_node = value.node.visit(_Inliner({n: pending.pop(n) for n in hits}))
    if isinstance(value, Call):
        folded = Call(value.rule, value.callee, value.args, new_node, value.problem)
    else:
        folded = Opaque(new_node, value.reads, value.kind)
    return Assign(stmt.target, folded, stmt.loc, stmt.temporary)


class _Inliner(cst.CSTTransformer):
    """Replace names by expressions, parenthesized where the context needs it."""

    def __init__(self, exprs: dict[str, cst.BaseExpression]) -> None:
        self.exprs = exprs

    def _bare(self, original: cst.CSTNode) -> cst.BaseExpression | None:
        value = getattr(original, "value", None)
        if isinstance(value, cst.Name) and value.value in self.exprs:
            return self.exprs[value.value]
        return None

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        expr = self.exprs.get(original.value)
        if expr is None:
            return updated
        if isinstance(expr, _LOOSE) and not expr.lpar:
            return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return expr

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        updated = updated.with_changes(keyword=original.keyword)
        bare = self._bare(original)
        return updated if bare is None else updated.with_changes(value=bare)

    def leave_Element(self, original: cst.Element, updated: cst.Element) -> cst.Element:
        bare = self._bare(original)
        return updated if bare is None else updated.with_changes(value=bare)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)
