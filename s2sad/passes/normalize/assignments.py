"""Assignments: ``=`` (chained, unpacking), ``op=``, annotated ones, and the walrus
operator ``:=``, hoisted into an assignment before its statement."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

import libcst as cst
import numpy as np

from ... import runtime
from ...ir import Assign, Call, Const, If, Opaque, Operand, Var, operand_reads
from .aliasing import may_alias
from .constructs import AUGMENTED_OPS
from .naming import target_hint
from .syntax import flat_targets, has_walrus, is_pop, variable_names, walk, walrus_places
from .views import linked_names

if TYPE_CHECKING:
    from .normalizer import Normalizer


class AssignmentLowering:
    """Lowering ``=``, ``op=`` and unpacking, and the walrus operator, hoisted into assignments."""

    def assign(self, node: cst.Assign, at: cst.CSTNode | None = None) -> None:
        if id(node) in self.res.aliases:  # act = np.tanh: a name for a function (see resolve)
            if not isinstance(node.value, cst.Call):  # (dloss = grad(loss): calls of dloss call
                self.out.append(Assign(None, Opaque(node, (), "nondiff"), self.loc))  # its code)
            return
        if has_walrus(node.value):
            node = node.with_changes(value=self.hoist(node.value))
        self.check_expression(node.value)
        targets = [t.target for t in node.targets]
        if len(targets) == 1 and self.attribute_store(targets[0], node):
            return
        if len(targets) == 1 and isinstance(targets[0], (cst.Tuple, cst.List)) and any(
                isinstance(e, cst.StarredElement) for e in targets[0].elements):
            self.starred_unpack(targets[0], node.value)
            return
        for t in targets:
            self.check_target(t)
        first, rest = targets[0], targets[1:]
        if rest and any(isinstance(t, cst.Subscript) for t in targets):
            self.chained_stores(targets, node.value)
            return
        if isinstance(first, cst.Subscript):
            self.setitem(first, node.value)
            return
        if isinstance(first, cst.Name) and not rest and self.bind_application(first.value, node.value):
            return  # f = functools.partial(g, a), d = st.norm(mu, s): calls through f or d follow
        if isinstance(first, cst.Name) and not rest and self.bind_choice(first.value, node.value):
            return  # act = np.tanh if c else relu: calls through act are ifs
        if isinstance(first, cst.Name) and isinstance(node.value, cst.Lambda) and not rest:
            self.nested_function(first.value, node.value)
            return
        if is_pop(node.value, self.res.locals) and not rest:
            node = node.with_changes(value=self.pop(node.value))
        if isinstance(first, cst.Name):
            self.check_iterator(first.value, node.value, node)  # g = (... for ...), m = map(...)
            if not rest and self.out_argument(node.value) is not None:  # w = np.exp(a, out=z)
                node = node.with_changes(value=self.out_call(node.value))
            if not rest:
                self.rebind(first.value)
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

    def chained_stores(self, targets: list[cst.BaseAssignTargetExpression], value: cst.BaseExpression) -> None:
        """``u[0] = u[-1] = <value>``: the value computed once (a name as it is), then assigned to
        each target, left to right, as Python does."""
        held = value
        if not isinstance(value, cst.Name):
            held = cst.Name(self.temporary("value"))
            self.lower(value, held.value, held.value)
        for t in targets:
            self.assign(cst.Assign([cst.AssignTarget(t)], held))

    def starred_unpack(self, target: cst.Tuple | cst.List, value: cst.BaseExpression) -> None:
        """``a, *b, c = value`` as ``a = t[0]; b = list(t[1:-1]); c = t[-1]``, the value held
        once in ``t`` (b is a list, as Python makes it)."""
        elements = list(target.elements)
        star = next(i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement))
        held = self.lower(value, self.temporary("items"), "items")
        assert isinstance(held, Var)
        after = len(elements) - star - 1
        statements: list[cst.BaseStatement] = []
        for i, e in enumerate(elements):
            index = str(i) if i < star else str(i - len(elements)) if i > star else f"{star}:{-after or ''}"
            item: cst.BaseExpression = cst.parse_expression(f"{held.name}[{index}]")
            if i == star:
                convert = cst.Name("list")
                self.res.objects[convert] = builtins.list
                item = cst.Call(convert, [cst.Arg(item)])
            statements.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(e.value)], item)]))
        self.block(statements)

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
                b for t in targets for b in flat_targets(t)}}  # (as the right side reads them)
            held = [self.lower(e.value, self.new_version(t.value) if isinstance(t, cst.Name) else
                               self.temporary(target_hint(t)), t.value if isinstance(t, cst.Name) else "")
                    for e, t in zip(value.elements, targets)]
            for k, (t, e, op) in enumerate(zip(targets, value.elements, held)):
                written = {b for u in targets[:k] for b in _element_bases(u)}
                if written and may_alias(e.value, self.res) and {  # (an item of a list is no view of it)
                        n for n in written & set(variable_names(e.value)) if bases.get(n) not in self.lists}:
                    op = self.reread(t, e.value, op, bases, {n for u in targets[:k] for n in flat_targets(u)})
                self.store(t, op, e.value)
                if isinstance(t, cst.Name) and isinstance(op, Var):  # th, om = s[0], s[1]
                    self.link_view(t.value, e.value, op.name)
            self.unlink_swapped(targets, [e.value for e in value.elements], bases)
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
        news = tuple(self.new_version(t.value) if isinstance(t, cst.Name) else self.temporary(target_hint(t))
                     for t in targets)
        self.out.append(Assign(news, source, self.loc))
        for t, new in zip(targets, news):
            if isinstance(source, Var) and source.name not in self.fresh_items:
                # an array's rows are views of it, a list's items what it holds
                if source.name in self.views:  # a, b = np.split(z, 2): views of z
                    self.views.add(new)
                self.share(new, [source.name])
            self.store(t, Var(new))
        return Const(self.parsed.code(value), ())

    def reread(self, target: cst.BaseExpression, value: cst.BaseExpression, held: Var,
               bases: dict[str, str], rebound: set[str]) -> Var:
        """``B[0], B[1] = B[1], B[0]``: the value held for ``B[1]`` is ``B[0]`` as it was, unless
        it is a view of B (B has more than one dimension), which then shows the store into
        ``B[0]`` (Python's semantics: the second row gets the new first row)."""
        numpy = next((n for n, v in sorted(self.fn.free.items()) if v is np), None)
        base = value.value if isinstance(value, cst.Subscript) else None
        index_names = {n for e in value.slice for n in variable_names(e)} if base is not None else set()
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
        if not has_walrus(node):
            return node
        for walrus, where in walrus_places(node, ""):
            if where:
                raise self.unsupported(walrus, f"the walrus operator ':=' {where} is not supported; "
                                               f"assign on its own line before this statement")
            name = walrus.target.value
            start = self.parsed.positions[walrus].start
            earlier = [n for n in walk(node) if isinstance(n, cst.Name) and n.value == name
                       and n is not walrus.target and n in self.parsed.positions
                       and _before(self.parsed.positions[n].start, start)
                       and not any(n is m for m in walk(walrus))]
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

    def augmented_assign(self, node: cst.AugAssign) -> None:
        if has_walrus(node.value):
            node = node.with_changes(value=self.hoist(node.value, flat_targets(node.target)))
        self.check_expression(node.value)
        if self.attribute_store(node.target, node):
            return
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
        operator_code = self.parsed.code(node.operator).strip()
        if isinstance(node.target, cst.Subscript):
            self.check_item_in_place(node.target, node, operator_code)
            self.setitem(node.target, expr)
            return
        name = node.target.value
        linked = self.linked(name)
        refusal = self.check_in_place(name, node, f"'{name} {operator_code} ...'",
                                      f"{name} = {name} {operator_code[:-1]} ...", at_run_time=True,
                                      linked=linked_names(linked))
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
            last.value.number_check = (str(loc), refusal)
        if linked:
            self.same_array(new, old)
        self.relaid(new, old)
        self.follow_views(name, node, linked)

    def attribute_store(self, target: cst.BaseExpression, node: cst.Assign | cst.AugAssign) -> bool:
        """``obj.n = v``, ``self.calls += 1`` or ``n_calls += 1`` after ``global n_calls``: the
        statement as written (an error where what it stores carries a gradient: reads of the
        attribute or global would not carry it); False for another target."""
        if not (isinstance(target, cst.Attribute) and target.attr.value not in ("real", "imag")
                or isinstance(target, cst.Name) and target.value in self.res.declared_global):
            return False
        self.check_expression(target)
        op, value = self.operand(node.value)  # (lowered first: what carries a gradient is known then)
        statement = node.with_changes(value=value, **({"targets": [cst.AssignTarget(self.rename(target))]}
                                                      if isinstance(node, cst.Assign) else {"target": self.rename(target)}))
        reads = tuple(dict.fromkeys((*self.local_reads(target), *operand_reads(op))))
        self.out.append(Assign(None, Opaque(statement, reads, "stores"), self.loc))
        return True

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
        if isinstance(target, cst.Attribute) and target.attr.value in ("real", "imag"):
            z, part = self.parsed.code(target.value).strip(), target.attr.value
            other = "imag" if part == "real" else "real"
            raise self.unsupported(target, f"assignment to '.{part}' changes {z} in place, which s2sad does not "
                                           f"follow; build a new array: {z} = " + (
                                               f"v + 1j * {z}.{other}" if part == "real" else f"{z}.{other} + 1j * v"))
        raise self.unsupported(target, "assignment to an attribute is not supported; use a local "
                                       "variable")


class _Hoister(cst.CSTTransformer):
    """Lower each ``(name := value)``, innermost first, into an assignment; leave ``name``."""

    def __init__(self, normalizer: Normalizer, root: cst.CSTNode) -> None:
        super().__init__()
        self.n = normalizer
        # only the walruses and what holds them are rebuilt: other nodes keep their identity,
        # by which the resolution knows the functions they name
        self.path = {id(n) for n in walk(root) if any(isinstance(m, cst.NamedExpr) for m in walk(n))}

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) in self.path

    def leave_NamedExpr(self, original: cst.NamedExpr, updated: cst.NamedExpr) -> cst.BaseExpression:
        n, name = self.n, updated.target.value
        n.check_expression(updated.value)
        new = n.new_version(name)
        n.lower(updated.value, new, name)
        n.version[name] = new
        return cst.Name(name)


def _before(a: Any, b: Any) -> bool:
    return (a.line, a.column) < (b.line, b.column)


def _element_bases(target: cst.BaseExpression) -> list[str]:
    """The arrays that the element targets (``x[i]``) of a target change."""
    if isinstance(target, cst.Subscript):
        return flat_targets(target.value)
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _element_bases(e.value)]
    return []
