"""Lists, tuples and dicts: displays, ``xs.append``/``insert``/``extend``/``pop`` as new
versions of the list, and ``d.get`` on a dict whose keys are known."""
from __future__ import annotations

import builtins
import operator

import libcst as cst

from ... import runtime
from ...ir import Assign, Call, Const, Operand, Var
from ...rules.registry import APPEND, Rule, pack_rule
from .syntax import item_of, literal_key, strip_parens, walk


class ContainerLowering:
    """Lists, tuples and dicts: displays, the list methods that change a list, and ``d.get``."""

    def append(self, call: cst.Call) -> None:
        """``xs.append(x)`` as a new version of the list: ``xs_2 = xs + [x]``."""
        receiver = call.func.value
        if len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
            raise self.unsupported(call, "append takes one value")
        name = receiver.value
        current = self.version.get(name, name)
        self.check_in_place(name, call, f"'{name}.append(...)'", f"{name} = {name} + [...]", list_method=True)
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
        self.holders[new] = self.holders.get(current, frozenset()).union(*(
            {op.name} | self.bases.get(op.name, frozenset()) | self.holders.get(op.name, frozenset())
            for op in [op] if isinstance(op, Var)))

    def dict_view(self, node: cst.Call, target: str | None) -> Operand | None:
        """``d.values()`` or ``d.items()`` of a local dict, outside a ``for``: the list of them
        (``[v for v in d.values()]``), which the loop over a dict's values gives by key."""
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("values", "items") and not node.args
                and isinstance(func.value, cst.Name) and func.value.value in self.res.locals):
            return None
        names = [cst.Name(self.fn.fresh(n)) for n in (("key", "value") if func.attr.value == "items" else ("value",))]
        element = cst.Tuple([cst.Element(n) for n in names]) if len(names) == 2 else names[0]
        loop = cst.CompFor(target=element, iter=node)
        return self.lower(cst.ListComp(elt=element, for_in=loop), target)

    def note_items(self, result: str, rule: Rule | None, bound: dict[str, Operand]) -> None:
        """What the items of a call's result are: new arrays (``np.linalg.qr``), or, given a list
        or dict the function made (``d.copy()``, ``dict(d)``, ``l + m``, an unknown function),
        maybe its very items."""
        if rule is not None and rule.returns_container and not rule.containers:
            self.fresh_items.add(result)
            return
        copied = [op for p, op in bound.items() if isinstance(op, Var)
                  and (rule is None or rule.returns_container and p in rule.containers)]
        held = [op for op in copied if op.name in self.holders]
        if copied:  # (whose items, a parameter's, may be arrays: c[k] += v is checked as it runs)
            self.copied_from[result] = frozenset().union(
                *({op.name} | self.copied_from.get(op.name, frozenset()) for op in copied))
        if held:
            self.holders[result] = frozenset().union(*(
                {op.name} | self.holders[op.name] | self.bases.get(op.name, frozenset()) for op in held))

    def pop(self, call: cst.Call) -> cst.BaseExpression:
        """``v = xs.pop()`` as ``v = xs[-1]`` and a new version ``xs_2 = xs[:-1]``."""
        name = call.func.value.value
        if call.args:
            return self.list_method(call)
        self.check_in_place(name, call, f"'{name}.pop()'", f"{name}[-1] and {name} = {name}[:-1]",
                            list_method=True)
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
        ``xs = xs[:i] + xs[i:][1:]`` after ``v = xs[i]``; ``d.pop(k)`` of what may be a dict,
        ``d = without_item(d, k)`` after ``v = d[k]``); returns what the call returns."""
        name, method = call.func.value.value, call.func.attr.value
        forms = {"insert": (f"{name} = {name}[:i] + [v] + {name}[i:]", 2), "extend": (f"{name} = {name} + list(ys)", 1),
                 "pop": (f"v = {name}[i] and {name} = {name}[:i] + {name}[i:][1:]", 1)}
        form, count = forms[method]
        if len(call.args) != count or any(a.keyword or a.star for a in call.args):
            raise self.unsupported(call, f"'{name}.{method}' takes {count} positional "
                                         f"argument{'s' if count > 1 else ''} here; write {form}")
        self.check_in_place(name, call, f"'{name}.{method}(...)'", form, list_method=True)
        held = [self.held(a.value) for a in call.args]
        result = cst.Name("None")
        if method == "pop":
            item = self.temporary(f"{name}item_of")
            self.lower(cst.parse_expression(f"{name}[{held[0]}]"), item, item)
            result = cst.Name(item)
        if method == "pop" and self.version.get(name, name) not in self.lists:  # (a dict's, d.pop(key), too)
            self.new_list_version(name, self.helper_call(runtime.without_item, [
                cst.Arg(cst.Name(name)), cst.Arg(cst.parse_expression(held[0]))]), False)
            return result
        if method == "pop":
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
        for n in walk(value):  # the builtin, whatever the function's globals call 'list'
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

    def dict_get(self, node: cst.Call) -> cst.BaseExpression | None:
        """``d.get(k, default)`` on a local dict: ``d[k]`` or ``default`` where its keys are
        known here (a display at the top level, not changed since) and ``k`` is a literal,
        else chosen when the code runs."""
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "get" and isinstance(func.value, cst.Name)
                and func.value.value in self.res.locals and 1 <= len(node.args) <= 2
                and not any(a.keyword or a.star for a in node.args)):
            return None
        keys = self.sizes.get(self.version.get(func.value.value, func.value.value))
        key = literal_key(strip_parens(node.args[0].value))
        default = node.args[1].value if len(node.args) == 2 else cst.Name("None")
        if isinstance(keys, tuple) and key is not None:
            return item_of(func.value, node.args[0].value) if key in keys else default
        return self.looked_up(node, func.value, default)

    def looked_up(self, node: cst.Call, mapping: cst.Name, default: cst.BaseExpression) -> cst.IfExp:
        """``d.get(k, default)`` on a dict whose keys are known when the code runs (a
        parameter): ``d[k] if has_key(d, k, where) else default``, which refuses a ``d``
        that is no dict, as it runs."""
        key = cst.parse_expression(self.held(node.args[0].value))
        loc = self.location(node)
        where = cst.SimpleString(repr(str(loc)))
        test = self.helper_call(runtime.has_key, [cst.Arg(mapping), cst.Arg(key), cst.Arg(where)])
        return cst.IfExp(test, item_of(mapping, key), default)

    def keyword_dict(self, node: cst.Call) -> cst.Dict | None:
        """``dict(a=x, b=y)`` as the display ``{'a': x, 'b': y}``, ``dict(d, a=x, **e)`` as
        ``{**d, 'a': x, **e}``, else None."""
        first = [cst.StarredDictElement(a.value) for a in node.args[:1] if a.keyword is None and not a.star]
        keywords = node.args[len(first):]
        pairs = first and (self.is_sequence(first[0].value) or isinstance(first[0].value, cst.GeneratorExp))
        if pairs or not (keywords and self.res.object(node.func) is builtins.dict
                and all(a.keyword is not None or a.star == "**" for a in keywords)):
            return None
        return cst.Dict([*first, *(cst.StarredDictElement(a.value) if a.star else cst.DictElement(
            cst.SimpleString(repr(a.keyword.value)), a.value) for a in keywords)])

    def merged_dict(self, node: cst.Dict, target: str | None) -> Operand:
        """``{**d, 'k': v, **e}``: its parts (the dicts unpacked, displays of the items between
        them) merged left to right, ``merge_dicts(a, b)`` each: a key of ``b`` replaces
        ``a``'s, whose value then gets no gradient."""
        parts: list[cst.BaseExpression] = []
        for e in node.elements:
            if isinstance(e, cst.StarredDictElement):
                parts.append(e.value)
            elif parts and isinstance(parts[-1], cst.Dict):
                parts[-1] = parts[-1].with_changes(elements=[*parts[-1].elements, e])
            else:
                parts.append(cst.Dict([e]))
        acc, acc_node = self.operand(parts[0])
        held = [acc]
        for i, part in enumerate(parts[1:] or [cst.Dict([])]):  # ({**d} alone: a copy of d)
            op, part_node = self.operand(part)
            held.append(op)
            primal = cst.Dict([cst.StarredDictElement(acc_node), cst.StarredDictElement(part_node)])
            last = i == max(len(parts) - 2, 0)
            acc = self.apply(runtime.merge_dicts, [acc, op], {}, primal, node, target if last else None,
                             "merged", [acc_node, part_node])
            acc_node = cst.Name(acc.name)
        self.holders[acc.name] = frozenset().union(*(self.holders.get(op.name, frozenset())
                                                     for op in held if isinstance(op, Var)))
        return acc

    def container(self, node: cst.Tuple | cst.List | cst.Dict, target: str | None) -> Operand:
        """A tuple, list or dict display: element ``k`` gets the gradient's item ``k``."""
        if isinstance(node, cst.Dict) and any(isinstance(e, cst.StarredDictElement) for e in node.elements):
            return self.merged_dict(node, target)
        elements, operands, keys = [], [], []
        for i, e in enumerate(node.elements):
            if isinstance(e, (cst.StarredElement, cst.StarredDictElement)):
                raise self.unsupported(e, "starred elements in displays are not supported; build "
                                          "the container element by element")
            if isinstance(e, cst.DictElement):
                key = literal_key(e.key)
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
