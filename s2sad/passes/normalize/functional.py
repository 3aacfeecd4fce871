"""Python's functional builtins written as the code they stand for: ``map(f, xs)`` as the
generator expression ``(f(v) for v in xs)``, ``functools.reduce(f, xs)`` as a loop that
folds, ``sorted(xs, key=k)`` as the items taken in the order the sort finds (an order that
carries no gradient).  Each is recognised by identity (``map`` is the builtin only where
the function's scope does not rebind it); a lambda passed is a nested function, a
``functools.partial(g, a)`` the calls of ``g`` it stands for."""
from __future__ import annotations

import builtins
import functools
import itertools
import operator

import libcst as cst

from ... import runtime
from ...ir import Operand, Var
from .syntax import flat_targets, item_of, store_names, strip_parens, variable_name_nodes, variable_names, walk


#: The functions lowered as the code they stand for, each with its method (by identity: the
#: objects a call may resolve to need not be hashable).
_LOWERINGS = ((builtins.map, "map_call"), (functools.reduce, "reduce_call"), (builtins.sorted, "sorted_call"),
              (builtins.max, "extreme_call"), (builtins.min, "extreme_call"), (builtins.zip, "zip_call"),
              (builtins.reversed, "reversed_call"), (itertools.accumulate, "accumulate_call"),
              (builtins.filter, "filter_call"), (itertools.product, "product_call"))
_EQUAL = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
#: Methods that change a list or dict in place.
_CHANGING_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
                               "update", "setdefault", "popitem"})


class FunctionalLowering:
    """``map``, ``functools.reduce`` and ``sorted``, lowered as the loops they run."""

    def functional(self, node: cst.Call, target: str | None) -> Operand | None:
        """The call lowered as the code it stands for, or None if it is none of these."""
        called = self.res.object(node.func)
        lowering = next((getattr(self, method) for key, method in _LOWERINGS if called is key), None)
        if lowering is None:
            return None
        if called is builtins.zip and len(node.args) == 1 and node.args[0].star == "*":
            return self.zip_rows_call(node, target)
        if any(a.star for a in node.args):
            name = self.parsed.code(node.func).strip()
            raise self.unsupported(node, f"'*' or '**' in a call of {name} is not supported; pass "
                                         f"the arguments one by one")
        return lowering(node, target)

    def check_iterator(self, name: str, value: cst.BaseExpression, statement: cst.CSTNode) -> None:
        """Refuse ``name = <generator expression or map(...)>`` unless the name is read once,
        not again by a later iteration of a loop: s2sad lowers the iterator as a list, which a
        second reader would find full where Python's iterator is used up."""
        written, value = value, strip_parens(value)
        if name not in self.fn.user_names or not (isinstance(value, cst.GeneratorExp) or isinstance(
                value, cst.Call) and any(self.res.object(value.func) is f for f in (
                builtins.map, builtins.zip, builtins.reversed, itertools.accumulate, builtins.filter,
                itertools.product))):
            return
        body = self.parsed.function.body
        stores = store_names(body)
        reads = [n for n in variable_name_nodes(body) if n.value == name and id(n) not in stores]
        inside = {id(n) for n in walk(statement)}
        repeated = [region for region in _repeated_regions(body) if id(reads[0]) in region
                    and not inside <= region] if len(reads) == 1 else []
        what = "a generator" if isinstance(value, cst.GeneratorExp) else f"a {self.parsed.code(value.func)} object"
        if len(reads) != 1 or repeated:
            raise self.unsupported(written, f"{what} bound to a name is an iterator, used up by its "
                                          f"first reader, which s2sad follows only where the name is "
                                          f"read once; write a list comprehension (or list(map(...)))")
        changed = self.changed_before(statement, reads[0], set(variable_names(value)) & self.res.locals)
        if changed is not None:
            raise self.unsupported(written, f"{what} bound to a name runs when it is read, after '{changed[0]}' "
                                          f"changes on line {changed[1]}, which s2sad's (computed where it "
                                          f"stands) would not see; write a list comprehension (or "
                                          f"list(map(...)))")

    def changed_before(self, statement: cst.CSTNode, read: cst.Name, names: set[str]) -> tuple[str, int] | None:
        """One of ``names`` that code after ``statement`` and before ``read`` assigns or changes
        in place (``ys[0] = v``, ``ys.append(v)``), and the line, if any."""
        after, before = self.parsed.positions[statement].end, self.parsed.positions[read].start
        for n in self.body_nodes:
            if n not in self.parsed.positions or not (
                    (after.line, after.column) <= _start(self.parsed.positions[n]) < (before.line, before.column)):
                continue
            if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                written = {w for t in targets for w in flat_targets(t)}
            elif isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and isinstance(n.func.value, cst.Name):
                written = {n.func.value.value} if n.func.attr.value in _CHANGING_METHODS else set()
            else:
                written = set()
            if written & names:
                return sorted(written & names)[0], self.location(n).line
        return None

    def function_argument(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """A function passed to map or reduce, as code that calls it: a lambda becomes a nested
        function, named; ``functools.partial(g, a)`` a name that calls through it call ``g`` by."""
        node = strip_parens(node)
        if isinstance(node, cst.Call) and self.res.object(node.func) is functools.partial:
            return self.partial_argument(node)
        return self.anonymous_function(node) if isinstance(node, cst.Lambda) else node

    def listed(self, node: cst.BaseExpression) -> cst.Name:
        """A variable holding ``items_in_order(xs)``: the items a loop over ``xs`` sees, as a
        list (a dict's keys, which a loop by index could not read)."""
        call = self.helper_call(runtime.items_in_order, [cst.Arg(node)])
        held = self.temporary(f"{self.hint(node)}_items" if isinstance(node, cst.Name) else "listed")
        self.lower(call, held, held)
        return cst.Name(held)

    def map_call(self, node: cst.Call, target: str | None) -> Operand:
        """``map(f, xs, ys)`` as ``(f(a, b) for a, b in zip(xs, ys))``, which s2sad lowers
        as a list: refused where its value is bound to a name (an iterator, used up once)."""
        if len(node.args) < 2 or any(a.keyword for a in node.args):
            raise self.unsupported(node, "map takes a function and one or more sequences, "
                                         "passed by position")
        func = self.function_argument(node.args[0].value)
        names = [self.fn.fresh("mapped") for _ in node.args[1:]]
        sequences = [self.listed(a.value) for a in node.args[1:]]
        if len(sequences) == 1:
            iterable, loop_target = sequences[0], cst.Name(names[0])
        else:
            zip_name = cst.Name("zip")
            self.res.objects[zip_name] = builtins.zip
            iterable = cst.Call(zip_name, [cst.Arg(s) for s in sequences])
            loop_target = cst.Tuple([cst.Element(cst.Name(n)) for n in names])
        call = cst.Call(func, [cst.Arg(cst.Name(n)) for n in names])
        return self.comprehension(cst.GeneratorExp(call, cst.CompFor(loop_target, iterable)), target)

    def filter_call(self, node: cst.Call, target: str | None) -> Operand:
        """``filter(f, xs)`` as ``(v for v in xs if f(v))`` (``filter(None, xs)``: ``if v``), a
        list as ``map``'s is; the test carries no gradient."""
        if len(node.args) != 2 or any(a.keyword for a in node.args):
            raise self.unsupported(node, "filter takes a function (or None) and a sequence, passed by position")
        item = cst.Name(self.fn.fresh("kept"))
        test = strip_parens(node.args[0].value)
        test = item if isinstance(test, cst.Name) and test.value == "None" else cst.Call(
            self.function_argument(test), [cst.Arg(item)])
        return self.comprehension(cst.GeneratorExp(item, cst.CompFor(
            item, self.listed(node.args[1].value), ifs=[cst.CompIf(test)])), target)

    def zip_call(self, node: cst.Call, target: str | None) -> Operand:
        """``zip(xs, ys)`` where it is no loop's iterable (``sorted(zip(xs, ys), key=...)``,
        ``list(zip(...))``) as ``((a, b) for a, b in zip(xs, ys))``: refused, as ``map``, where
        its value is bound to a name that is read more than once."""
        if not node.args or any(a.keyword for a in node.args):
            raise self.unsupported(node, "zip takes sequences passed by position here; write the "
                                         "pairs with a comprehension")
        names = [cst.Name(self.fn.fresh("zipped")) for _ in node.args]
        zip_name = cst.Name("zip")
        self.res.objects[zip_name] = builtins.zip
        iterable = cst.Call(zip_name, [cst.Arg(self.listed(a.value)) for a in node.args])
        items = cst.Tuple([cst.Element(n) for n in names])
        return self.comprehension(cst.GeneratorExp(items, cst.CompFor(items, iterable)), target)

    def product_call(self, node: cst.Call, target: str | None) -> Operand:
        """``itertools.product(xs, ys)`` as ``((a, b) for a in xs for b in ys)``, a list as
        ``zip``'s is."""
        if not node.args or any(a.keyword for a in node.args):
            raise self.unsupported(node, "itertools.product takes sequences passed by position here "
                                         "(no repeat=); write the loops out, or a comprehension")
        names = [cst.Name(self.fn.fresh("picked")) for _ in node.args]
        loops: cst.CompFor | None = None
        for name, a in reversed(list(zip(names, [self.listed(a.value) for a in node.args]))):
            loops = cst.CompFor(name, a, inner_for_in=loops)
        assert loops is not None
        return self.comprehension(cst.GeneratorExp(cst.Tuple([cst.Element(n) for n in names]), loops), target)

    def zip_rows_call(self, node: cst.Call, target: str | None) -> Operand:
        """``zip(*rows)`` as the list of the rows' columns (``transposed_rows``)."""
        return self.comprehension(self.transposed_rows(node), target)

    def transposed_rows(self, node: cst.Call) -> cst.ListComp:
        """``zip(*rows)``, the rows' transpose, as ``[tuple(items_in_order(row)[k] for row in
        rows) for k in range(n)]``, n the length of the shortest row (none: no tuple); the
        rows are lowered here."""
        rows = self.listed(node.args[0].value)
        row, shortest, k = (cst.Name(self.fn.fresh(hint)) for hint in ("row", "row", "k"))
        self.res.locals = self.res.locals | {row.value, shortest.value, k.value}
        column = cst.GeneratorExp(item_of(self.helper_call(runtime.items_in_order, [cst.Arg(row)]), k),
                                  cst.CompFor(row, rows))
        lengths = cst.GeneratorExp(self.helper_call(builtins.len, [cst.Arg(shortest)]), cst.CompFor(shortest, rows))
        n = self.helper_call(builtins.min, [cst.Arg(lengths), cst.Arg(cst.Integer("0"), keyword=cst.Name("default"),
                                                                             equal=_EQUAL)])
        count = self.helper_call(builtins.range, [cst.Arg(n)])
        return cst.ListComp(self.helper_call(builtins.tuple, [cst.Arg(column)]), cst.CompFor(k, count))

    def reduce_call(self, node: cst.Call, target: str | None) -> Operand:
        """``functools.reduce(f, xs)`` as ``acc = xs[0]`` and ``for v in xs[1:]: acc = f(acc, v)``
        (with an initial value: ``acc = init`` and a loop over all of xs)."""
        if not 2 <= len(node.args) <= 3 or any(a.keyword for a in node.args):
            raise self.unsupported(node, "functools.reduce takes a function, a sequence and an "
                                         "optional initial value, passed by position")
        func = self.function_argument(node.args[0].value)
        items = self.listed(node.args[1].value).value
        acc, item = self.temporary("folded"), self.fn.fresh("item")
        self.res.locals = self.res.locals | {item}
        start = node.args[2].value if len(node.args) == 3 else cst.parse_expression(f"{items}[0]")
        rest = cst.parse_expression(items if len(node.args) == 3 else f"{items}[1:]")
        fold = cst.Call(func, [cst.Arg(cst.Name(acc)), cst.Arg(cst.Name(item))])
        self.block([
            cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(acc))], start)]),
            cst.For(cst.Name(item), rest, cst.IndentedBlock([
                cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(acc))], fold)])]))])
        return self.emit_operand(Var(self.version[acc]), target)

    def accumulate_call(self, node: cst.Call, target: str | None) -> Operand:
        """``itertools.accumulate(xs, f, initial=a)`` as the list of the running folds: a loop
        that sets ``acc`` to the first item (or to ``a``, listed first), then ``f(acc, v)``."""
        positional = [a for a in node.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if not 1 <= len(positional) <= 2 or set(keywords) - {"func", "initial"} or len(positional) == 2 and (
                "func" in keywords):
            raise self.unsupported(node, "itertools.accumulate takes a sequence, a function, and initial= "
                                         "by keyword")
        func = positional[1].value if len(positional) == 2 else keywords.get("func")
        func = None if func is None or self.res.object(func) is operator.add else self.function_argument(func)
        items = self.listed(positional[0].value).value
        acc, out, item, k = (self.fn.fresh(n) for n in ("running", "accumulated", "item", "k"))
        self.res.locals = self.res.locals | {acc, out, item, k}  # (bound by the code below, as a user's)
        fold = cst.BinaryOperation(cst.Name(acc), cst.Add(), cst.Name(item)) if func is None else cst.Call(
            func, [cst.Arg(cst.Name(acc)), cst.Arg(cst.Name(item))])
        initial = keywords.get("initial")
        first = cst.parse_statement(f"{out} = []") if initial is None else cst.parse_statement(f"{out} = [{acc}]")
        start = [] if initial is None else [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(acc))], initial)])]
        step = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(acc))], fold)])
        body = [step] if initial is not None else [cst.If(cst.parse_expression(f"{k} == 0"), cst.IndentedBlock(
            [cst.parse_statement(f"{acc} = {item}")]), orelse=cst.Else(cst.IndentedBlock([step])))]
        loop = cst.For(cst.parse_expression(f"{k}, {item}"), cst.parse_expression(f"enumerate({items})"),
                       cst.IndentedBlock([*body, cst.parse_statement(f"{out}.append({acc})")]))
        self.res.objects[loop.iter.func] = builtins.enumerate
        self.block([*start, first, loop])
        return self.emit_operand(Var(self.version[out]), target)

    def sorted_call(self, node: cst.Call, target: str | None) -> Operand:
        """``sorted(xs, key=k, reverse=r)`` as ``items_in_order(xs, order)``, with ``order`` the
        indices in the order the sort puts the items (Python's sort is stable, so sorting the
        indices by ``k(xs[i])`` finds the same order), which carries no gradient; each item's
        gradient goes back where the sort found it."""
        positional = [a for a in node.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if len(positional) != 1 or set(keywords) - {"key", "reverse"}:
            raise self.unsupported(node, "sorted takes a sequence, and key= and reverse= by keyword")
        items = self.held(positional[0].value)
        order_call = self.helper_call(runtime.sort_order, [cst.Arg(cst.parse_expression(items)), *(
            cst.Arg(keywords[k], keyword=cst.Name(k), equal=_EQUAL) for k in ("key", "reverse") if k in keywords)])
        order = self.temporary("order")
        self.lower(order_call, order, order)
        picked = self.helper_call(runtime.items_in_order, [cst.Arg(cst.parse_expression(items)),
                                                           cst.Arg(cst.Name(order))])
        return self.lower(picked, target, "ordered")

    def reversed_call(self, node: cst.Call, target: str | None) -> Operand:
        """``reversed(xs)`` where it is no loop's own iterable (``list(reversed(xs))``,
        ``zip(xs, reversed(xs))``) as ``items_in_order(xs, order)``, the positions last first:
        the items Python's iterator gives (a dict's keys, an array's rows), as a list."""
        if len(node.args) != 1 or node.args[0].keyword:
            raise self.unsupported(node, "reversed takes one sequence")
        items = self.held(node.args[0].value)
        order = self.temporary("order")
        self.lower(self.helper_call(runtime.reversed_order, [cst.Arg(cst.parse_expression(items))]), order, order)
        picked = self.helper_call(runtime.items_in_order, [cst.Arg(cst.parse_expression(items)),
                                                           cst.Arg(cst.Name(order))])
        return self.lower(picked, target, "reversed")

    def extreme_call(self, node: cst.Call, target: str | None) -> Operand | None:
        """``max(xs, key=k)`` (``min``) as the first item of ``sorted(xs, key=k, reverse=True)``
        (``reverse=False``): Python's sort is stable, so that is the first item with the largest
        key, which max returns; None without ``key`` (max and min have their own rules)."""
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if "key" not in keywords:
            return None
        positional = [a.value for a in node.args if a.keyword is None]
        if set(keywords) != {"key"} or not positional:
            raise self.unsupported(node, "max and min with key= are followed without default=: pass "
                                         "the items, and key= by keyword")
        items = positional[0] if len(positional) == 1 else cst.Tuple([cst.Element(p) for p in positional])
        biggest = self.res.object(node.func) is builtins.max
        ordered = self.helper_call(builtins.sorted, [cst.Arg(items), cst.Arg(keywords["key"], keyword=cst.Name("key"),
                                                                             equal=_EQUAL),
                                                     cst.Arg(cst.Name(str(biggest)), keyword=cst.Name("reverse"),
                                                             equal=_EQUAL)])
        return self.lower(cst.Subscript(ordered, [cst.SubscriptElement(cst.Index(cst.Integer("0")))]), target,
                          "largest" if biggest else "smallest")


def _repeated_regions(body: cst.CSTNode) -> list[set[int]]:
    """The ids of the nodes under each part of ``body`` that may run more than once: a loop's
    body (a while loop's test), a comprehension but for its first iterable."""
    regions = []
    for n in walk(body):
        if isinstance(n, cst.For):
            parts: list[cst.CSTNode] = [n.body]
        elif isinstance(n, cst.While):
            parts = [n.test, n.body]
        elif isinstance(n, (cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)):
            parts = [n.key, n.value, n.for_in.inner_for_in, *n.for_in.ifs] if isinstance(n, cst.DictComp) else [
                n.elt, n.for_in.inner_for_in, *n.for_in.ifs]
        else:
            continue
        regions.append({id(m) for part in parts if part is not None for m in walk(part)})
    return regions


def _start(position: object) -> tuple[int, int]:
    start = position.start  # type: ignore[attr-defined]
    return start.line, start.column
