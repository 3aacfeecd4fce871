"""Expressions and operands: each sub-expression that carries a gradient gets its
own statement."""
from __future__ import annotations

import operator
from typing import Any

import libcst as cst
import numpy as np

from ... import runtime
from ...ir import Assign, Call, Const, If, Opaque, Operand, Var, operand_code, operand_reads
from ...rules import GENERATOR_MAKERS
from ...rules import draws as random_draws
from ...rules.registry import pack_rule
from ..resolve import MISSING
from .aliasing import may_alias
from .constructs import BINARY_OPS, UNARY_OPS, UNSUPPORTED
from .library import python_method, returns_sequence
from .naming import user_name
from .syntax import describe, literal_key, strip_parens
from .unknown_callees import UnknownMethod


_DISPLAYS = (cst.List, cst.Tuple)


class ExpressionLowering:
    """Lowering expressions to one primitive per statement, and emitting the statements."""

    def lower(self, node: cst.BaseExpression, target: str | None, hint: str = "") -> Operand:
        """Emit statements computing ``node``; return the operand that holds it."""
        if target is not None and self.is_list(strip_parens(node)):
            self.lists.add(target)
        elif target is not None and self.yields_sequence(strip_parens(node)):
            self.maybe_sequences.add(target)
        reads = self.local_reads(node)
        if not reads:
            empty = strip_parens(node)
            if target is not None and self.out is self.fn.body:  # f(*t, **d) with a constant t or d
                self.sizes.update({target: size} if (size := _display_size(empty)) is not None else {})
            if target is not None and isinstance(empty, (cst.List, cst.Dict)) and not empty.elements:
                self.holders[target] = frozenset()  # an empty list or dict: what d[k] = v puts in, it holds
            const = Const(self.parsed.code(strip_parens(node)).strip())
            if self.draws(node):  # drawn once, where it stands: the adjoint reads the same numbers
                name = self.fn.fresh(self.hint(node)) if target is None else target
                self.out.append(Assign(name, const, self.loc, target is None, draws=True))
                self.note_generator(node, name)
                return Var(name)
            return self.emit_operand(const, target)
        if self.in_place_draw(node):  # r = np.random.shuffle(a): a changed in place
            return self.shuffle(node, target or self.temporary("shuffled"))
        kind = self.inactive_kind(node)
        if kind is not None:
            opaque = Opaque(self.rename(strip_parens(node)), reads, kind, self.stopped_copy(node))
            result = self.emit(opaque, target, self.hint(node) if target is None else hint, node)
            if kind == "stopped" and may_alias(node, self.res):  # stop_gradient(b) is b itself
                self.share(result.name, reads)
            return result
        if isinstance(node, cst.Name):
            version = self.version.get(node.value, node.value)
            if self.deleted.get(node.value) == version:
                raise self.unsupported(node, f"'{node.value}' is read after 'del {node.value}' (Python "
                                             f"raises NameError here); remove the 'del' or the read")
            if version in self.unbound_in:
                # read after a branch that binds it on one path only (under the same condition again,
                # say): the adjoint starts from its zero before that read, so it must exist on every path
                self.bind_everywhere(version)
            return self.emit_operand(Var(version), target)
        if isinstance(node, cst.BinaryOperation):
            return self.binary(node, target)
        if isinstance(node, cst.UnaryOperation):
            return self.unary(node, target)
        if isinstance(node, cst.Call):
            return self.call_or_display(node, target)
        if isinstance(node, cst.Subscript):
            return self.subscript(node, target)
        if isinstance(node, cst.Attribute):
            return self.attribute(node, target)
        if isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
            return self.container(node, target)
        if isinstance(node, cst.IfExp):
            return self.conditional(node, target)
        if isinstance(node, cst.BooleanOperation):
            return self.boolean(node, target)
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.DictComp)):
            return self.comprehension(node, target)
        if isinstance(node, cst.Lambda) and (made := self.lambda_value(node, target)) is not None:
            return made  # fs.append(lambda z, k=k: z ** k)
        raise self.unsupported(node, UNSUPPORTED.get(type(node), f"'{describe(node)}' is not supported"))

    def operand(self, node: cst.BaseExpression) -> tuple[Operand, cst.BaseExpression]:
        """Lower a sub-expression; also return the node that stands for it in its parent."""
        op = self.lower(node, None, self.hint(node))
        if isinstance(op, Var):
            return op, cst.Name(op.name)
        return op, self.rename(node)

    def product_into(self, node: cst.Call, target: str | None) -> Operand | None:
        """Generated code's ``mul_into(a, b)``, a product written into a dead buffer:
        differentiated (and, when replayed, computed) as the product itself, so the buffer
        keeps its value; None for any other call."""
        if self.res.object(node.func) is not runtime.mul_into or len(node.args) != 2 or any(
                a.keyword or a.star for a in node.args):
            return None
        return self.binary(cst.BinaryOperation(node.args[0].value, cst.Multiply(), node.args[1].value), target)

    def call_or_display(self, node: cst.Call, target: str | None) -> Operand:
        """A call, or ``dict(k=v)`` as a display; what may return a list or tuple noted."""
        display = self.keyword_dict(node)
        if display is not None:
            return self.container(display, target)
        chosen = self.chosen_call(node, target)  # act(x) after act = np.tanh if c else relu
        if chosen is not None:
            return chosen
        result = self.call(node, target)
        if isinstance(result, Var) and self.returns_sequence(node):
            self.maybe_sequences.add(result.name)
        return result

    def conditional(self, node: cst.IfExp, target: str | None) -> Operand:
        """``a if c else b``: an if statement that assigns one name in both branches."""
        test = self.condition(node.test)
        name = target or self.fn.fresh(["chosen"])
        body, _ = self.nested(lambda: self.lower(node.body, name))
        orelse, _ = self.nested(lambda: self.lower(node.orelse, name))
        self.out.append(If(test, body, orelse, self.location(node)))
        return Var(name)

    def boolean(self, node: cst.BooleanOperation, target: str | None) -> Operand:
        """``a or b`` (``a and b``): the operand Python returns, ``a if a else b`` (``b if a else a``),
        with ``a`` computed once and ``b`` only where Python computes it."""
        name = target or self.fn.fresh(["either"])
        first = self.lower(node.left, None, self.hint(node.left))
        test = first if isinstance(first, Const) else self.emit(
            Opaque(cst.Name(first.name), (first.name,), "nondiff"), None, "cond", node)
        keep, _ = self.nested(lambda: self.emit_operand(first, name))
        other, _ = self.nested(lambda: self.lower(node.right, name))
        both = (keep, other) if isinstance(node.operator, cst.Or) else (other, keep)
        self.out.append(If(test, *both, self.location(node)))
        return Var(name)

    def binary(self, node: cst.BinaryOperation, target: str | None) -> Operand:
        key, word = BINARY_OPS.get(type(node.operator), (None, ""))
        if key is operator.add and (isinstance(node.left, _DISPLAYS) or isinstance(node.right, _DISPLAYS)
                                    or node in self.concatenations):
            key = runtime.concat  # xs + [v]: a concatenation (unless xs turns out to be an array)
        first, second = node.left, node.right
        if key is operator.mul and any(self.is_sequence(n) or self.may_be_sequence(n, o)
                                       for n, o in ((first, second), (second, first))):
            key = runtime.repeat_items  # [x] * n: the items n times over (l * 2: picked as it runs)
            if not (self.is_sequence(first) or self.may_be_sequence(first, second)):
                first, second = second, first  # n * [x]: the sequence first, as the helper takes it
        (left, lnode), (right, rnode) = self.operand(first), self.operand(second)
        primal = node.with_changes(left=lnode, right=rnode, operator=_one_line(node.operator),
                                   lpar=[], rpar=[])
        problem = self.no_arithmetic(node, key)
        if problem is not None:  # run as written; refused where a gradient reaches it
            call = Call(None, self.parsed.code(node).strip(), {"0": left, "1": right}, primal, problem)
            return self.emit(call, target, self.hint(node), node)
        return self.apply(key, [left, right], {}, primal, node, target, word, [lnode, rnode])

    def no_arithmetic(self, node: cst.BinaryOperation, key: Any) -> str | None:
        """Why ``node`` has no gradient, if it is no arithmetic: ``m & n`` combines masks
        (``d | e`` merges dicts)."""
        if key is None:
            return (f"the operator '{self.parsed.code(node.operator).strip()}' is not supported on "
                    f"values that carry a gradient")
        name = getattr(key, "__name__", "").strip("_")
        for operand, order in ((node.left, ("", "r")), (node.right, ("r", ""))):
            for cls in self.held_classes(operand):
                written = [d for d in (f"__{r}{name}__" for r in order) if python_method(cls, d)]
                if written:
                    return (f"{self.parsed.code(operand).strip()} is a {cls.__name__}, whose "
                            f"'{self.parsed.code(node.operator).strip()}' is its own {written[0]}, which "
                            f"s2sad does not differentiate as an operator; call it as a method "
                            f"({self.parsed.code(operand).strip()}.{written[0]}(...)) or a function")
        return None

    def held_classes(self, node: cst.BaseExpression) -> list[type]:
        """The classes of the objects ``node`` may hold that are known here: a global's or a
        closure variable's, or those of the constructor calls it is made by."""
        node = strip_parens(node)
        if isinstance(node, (cst.Name, cst.Attribute)) and not self.local_reads(node):
            held = self.res.object(node)
            return [] if held is MISSING else [type(held)]
        return self.made_classes(node)

    def is_sequence(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` is certainly a list or tuple: a display, a comprehension, a list."""
        return isinstance(node, cst.Tuple) or self.is_list(node)

    def may_be_sequence(self, node: cst.BaseExpression, other: cst.BaseExpression) -> bool:
        """Whether ``node * other`` may repeat a list or tuple that compiling cannot tell from an
        array: ``node`` what a Python function, ``list`` or ``tuple`` returns (or a name bound to
        it), ``other`` an int without a gradient (an int literal, a global holding an int: a
        list times anything else is Python's TypeError)."""
        node, other = strip_parens(node), strip_parens(other)
        held = self.res.object(other) if isinstance(other, cst.Name) and not self.local_reads(other) else None
        if not (isinstance(other, cst.Integer) or isinstance(held, (int, np.integer)) and not isinstance(held, bool)):
            return False
        if isinstance(node, cst.Name):
            return self.version.get(node.value, node.value) in self.maybe_sequences
        return isinstance(node, cst.Call) and self.returns_sequence(node) or self.yields_sequence(node)

    def yields_sequence(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` may be a list or tuple by how it is built: a tuple display, an item
        or slice of a list, tuple or dict built here (or of one a call returned), or a
        concatenation of a sequence."""
        if isinstance(node, cst.Tuple):
            return True
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
            version = self.version.get(node.value.value, node.value.value)
            return any(version in known for known in (self.lists, self.maybe_sequences, self.holders, self.sizes))
        return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add) and any(
            self.is_sequence(n) or self.yields_sequence(n) for n in (strip_parens(node.left), strip_parens(node.right)))

    def returns_sequence(self, node: cst.Call) -> bool:
        """Whether the call ``node`` may return a list or tuple: one of ``list``, ``tuple`` or a
        Python function."""
        return not self.local_reads(node.func) and returns_sequence(self.res.object(node.func))

    def is_list(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` is certainly a list: a display, a comprehension, a name holding a
        list, or one of those repeated (``[x] * n``)."""
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            return self.is_list(node.left) or self.is_list(node.right)
        return isinstance(node, (cst.List, cst.ListComp)) or isinstance(node, cst.Name) and (
            self.version.get(node.value, node.value) in self.lists)

    def unary(self, node: cst.UnaryOperation, target: str | None) -> Operand:
        key, word = UNARY_OPS.get(type(node.operator), (None, ""))
        if key is None:
            raise self.unsupported(node, f"the operator '{self.parsed.code(node.operator).strip()}' "
                                         "is not supported on values that carry a gradient")
        arg, anode = self.operand(node.expression)
        primal = node.with_changes(expression=anode, lpar=[], rpar=[])
        return self.apply(key, [arg], {}, primal, node, target, word, [anode])

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
        directive = literal_key(strip_parens(node.slice[0].slice.value)) if isinstance(
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
        codes = [operand_code(p) for p in parts]
        index = codes[0] if len(codes) == 1 else "(" + ", ".join(codes) + ")"
        index_reads = tuple(dict.fromkeys(n for p in parts for n in operand_reads(p)))
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
                codes = [operand_code(bounds[f][0]) for f in ("lower", "upper", "step")]
                if codes[2] == "None":  # slice(a, b); slice(b) when a is None
                    codes = codes[1:2] if codes[0] == "None" else codes[:2]
                parts.append(Const(f"slice({', '.join(codes)})",
                                   tuple(n for f in bounds for n in operand_reads(bounds[f][0]))))
                nodes.append(element.with_changes(slice=s.with_changes(
                    **{f: bounds[f][1] for f in bounds if bounds[f][1] is not None})))
        return parts, nodes

    def attribute(self, node: cst.Attribute, target: str | None) -> Operand:
        """``x.T`` (an array's attribute, or a record's field of that name: records.py), else
        ``p.W``: a field of a named tuple, read as written (``s.mean`` too: an array's method is
        no value its rule could apply to); its gradient is the named tuple's, refused for other
        values as it runs."""
        value, vnode = self.operand(node.value)
        key = getattr(np.ndarray, node.attr.value, UnknownMethod(node.attr.value))
        primal = node.with_changes(value=vnode, lpar=[], rpar=[])
        if not isinstance(key, UnknownMethod) and not callable(key):
            return self.array_attribute(key, value, vnode, primal, node, target)
        loc = self.location(node.attr)
        where = Const(repr(str(loc)))
        return self.apply(runtime.field_of, [value, Const(repr(node.attr.value)), where], {}, primal,
                          node, target, node.attr.value, [vnode, None, None])

    def emit(self, value: Call | Opaque, target: str | None, hint: str | list[str],
             node: cst.CSTNode) -> Var:
        temporary = target is None
        name = self.fn.fresh(hint) if temporary else target
        self.note_generator(node, name)
        draws = self.draws(node) or isinstance(value, Call) and value.rule is not None and random_draws(
            value.rule.fun)
        self.out.append(Assign(name, value, self.location(node), temporary, draws))
        return Var(name)

    def note_generator(self, node: cst.CSTNode, name: str) -> None:
        """``name`` holds a generator ``node`` makes (``np.random.default_rng(0)``): its methods'
        calls take their rules (the code is not chosen as it runs, to run again for a vjp)."""
        maker = self.res.object(node.func) if isinstance(node, cst.Call) else None
        if maker in GENERATOR_MAKERS:
            self.generators[name] = GENERATOR_MAKERS[maker]

    def emit_operand(self, op: Operand, target: str | None) -> Operand:
        if target is None:
            return op
        if isinstance(op, Var):
            self.copies.update((target, op.name))
            self.partners.setdefault(target, set()).add(user_name(op.name, self.res.locals))
            self.partners.setdefault(op.name, set()).add(user_name(target, self.res.locals))
            self.share(target, [op.name])
            if op.name in self.sizes and self.out is self.fn.body:
                self.sizes[target] = self.sizes[op.name]
        self.out.append(Assign(target, op, self.loc))
        return Var(target)


def _one_line(op: cst.CSTNode) -> cst.CSTNode:
    """An operator with plain spaces around it, for an expression rebuilt on one line."""
    return op.with_changes(whitespace_before=cst.SimpleWhitespace(" "),
                           whitespace_after=cst.SimpleWhitespace(" "))


def _display_size(node: cst.BaseExpression) -> int | tuple[str, ...] | None:
    """The length of a tuple or list display, or the keys of a dict display of string keys."""
    if isinstance(node, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in node.elements):
        return len(node.elements)
    if isinstance(node, cst.Dict):
        keys = [literal_key(e.key) if isinstance(e, cst.DictElement) else None for e in node.elements]
        return tuple(keys) if all(isinstance(k, str) for k in keys) else None
    return None
