"""Attributes of arrays read on values that may be records: ``p.T`` is the transpose of an
array but the field ``T`` of a named tuple.  The array's rule applies where the receiver is
certainly an array or a number (every assignment of it a primitive that makes one); elsewhere
(a parameter, an item of a container, a copy of either) ``attribute_of`` picks the field's
gradient or the array's as the code runs."""
from __future__ import annotations

from typing import Any

import libcst as cst

from ... import runtime
from ...ir import Assign, Call, Const, Loop, Opaque, Operand, Stmt, Var, assigns, statements


class RecordAttributes:
    """Lowering ``x.name`` for ``name`` an attribute of arrays, and settling, once the function
    is lowered, which of those reads may be of a record."""

    def array_attribute(self, key: Any, value: Operand, vnode: cst.BaseExpression, primal: cst.BaseExpression,
                        node: cst.Attribute, target: str | None) -> Operand:
        """``x.name`` with the array attribute's rule ``key``; the read that picks as it runs is
        kept aside, for :meth:`settle_attributes` to put in its place if x may be a record."""
        name = node.attr.value
        result = self.apply(key, [value], {}, primal, node, target, name, [vnode])
        assign = self.out[-1]
        if not isinstance(value, Var) or not isinstance(result, Var) or not (
                isinstance(assign, Assign) and assign.target == result.name):
            return result
        loc = self.location(node.attr)
        where = Const(repr(str(loc)))
        out, self.out = self.out, []
        self.apply(runtime.attribute_of, [value, Const(repr(name)), where], {}, primal, node, result.name,
                   name, [vnode, None, None])
        picking, self.out = self.out[-1], out
        assert isinstance(picking, Assign) and isinstance(picking.value, Call)
        self.attribute_reads.append((assign, value.name, picking.value))
        return result

    def record(self, node: cst.Call, target: str | None) -> Operand | None:
        """``P(a, b=c)`` with ``P`` a named tuple class: ``make_record(P, (a, c))``, its first
        fields in order (those after them: their defaults); None for any other call, or for
        one that leaves out a field before one it gives (or that Python refuses)."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "_replace" and node.args and all(
                a.keyword is not None and not a.star for a in node.args):  # p._replace(b=v)
            names, values = (cst.Tuple([cst.Element(e) for e in elements]) for elements in (
                [cst.SimpleString(repr(a.keyword.value)) for a in node.args], [a.value for a in node.args]))
            return self.lower(self.helper_call(runtime.replace_fields, [
                cst.Arg(func.value), cst.Arg(names), cst.Arg(values)]), target)
        cls = self.res.object(func)
        fields = getattr(cls, "_fields", None)
        if not (isinstance(cls, type) and issubclass(cls, tuple) and isinstance(fields, tuple)) or any(
                a.star for a in node.args):
            return None
        given = {a.keyword.value if a.keyword else fields[i] if i < len(fields) else None: a.value
                 for i, a in enumerate(node.args)}
        n = len(given)
        if len(node.args) != n or set(given) != set(fields[:n]) or set(fields[n:]) - set(getattr(
                cls, "_field_defaults", {})):
            return None
        display = cst.Tuple([cst.Element(given[f]) for f in fields[:n]], lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return self.lower(self.helper_call(runtime.make_record, [cst.Arg(node.func), cst.Arg(display)]), target)

    def settle_attributes(self) -> None:
        """Each read of an array attribute whose receiver may be a record picks as it runs
        (which may make another receiver, assigned from it, one that may be a record)."""
        while self.attribute_reads:
            arrays = _certain_arrays(self.fn.body, self.fn.params)
            picking = [(a, c) for a, receiver, c in self.attribute_reads if receiver not in arrays]
            if not picking:
                return
            for assign, call in picking:
                assign.value = call
            self.attribute_reads = [r for r in self.attribute_reads if r[0].value is not r[2]]


def _certain_arrays(body: list[Stmt], params: tuple[str, ...]) -> set[str]:
    """The variables that certainly hold an array or a number: every assignment of each is a
    primitive that makes one (its rule's result is no container), or a copy of such a variable."""
    values: dict[str, list[Call | Opaque | Var | Const | None]] = {}
    for a in assigns(body):
        for t in a.targets:
            values.setdefault(t, []).append(a.value if isinstance(a.target, str) else None)
    for s in statements(body):
        for t in s.targets if isinstance(s, Loop) else ():
            values.setdefault(t, []).append(None)
    arrays = {name for name, vs in values.items() if name not in params and all(
        isinstance(v, Var) or isinstance(v, Const) and v.code == "None" or isinstance(v, Call) and _makes_array(v)
        for v in vs)}
    changed = True
    while changed:
        changed = False
        for name in list(arrays):
            if any(isinstance(v, Var) and v.name not in arrays for v in values[name]):
                arrays.discard(name)
                changed = True
    return arrays


def _makes_array(call: Call) -> bool:
    return call.rule is not None and call.problem is None and call.function is None and not call.rule.returns_container
