"""Loops and comprehensions: a ``for`` over a sequence as a loop over its indices, a
``while`` as such, each with what its iterations carry."""
from __future__ import annotations

import operator
from typing import Any

import libcst as cst

from ... import runtime
from ...errors import Location
from ...ir import Assign, Const, If, Loop, Opaque, Operand, Stmt, Var, operand_code, operand_reads
from ..resolve import Resolution
from .flow import assigned_in, changed_in, jumps, may_return, stored_in, view_bases, written_in_place
from .naming import renamed, target_hint, user_name
from .syntax import (EMPTY_MODULE, has_walrus, item_of, read_before_assigned, statements_of, strip_parens, walk,
                     walrus_places)


CompNode = cst.ListComp | cst.GeneratorExp | cst.DictComp
_KEY_ORDERS = (sorted, reversed, list, tuple)  # what a loop over a dict's keys may run them through


class LoopLowering:
    """Lowering ``for`` and ``while`` loops (and their ``else``), and comprehensions,
    which become loops."""

    def for_loop(self, node: cst.For) -> None:
        if node.asynchronous is not None:
            raise self.unsupported(node, "'async for' is not supported")
        if has_walrus(node.iter):
            node = node.with_changes(iter=self.hoist(node.iter))
        self.check_expression(node.iter)
        node = self.enumerate_from(node)
        iterable = self.spread_rows(node.iter, node.target)
        func = iterable.func if isinstance(iterable, cst.Call) else None
        kind = self.iteration_kind(iterable)
        target = node.target
        names = _target_names(target)
        body = statements_of(node.body)
        method = iterable.func.attr.value if isinstance(func, cst.Attribute) and not iterable.args else None
        if kind == "sequence" and isinstance(target, (cst.Tuple, cst.List)) and (
                method == "items" and names is None or method == "values"):
            # for k, (a, b) in d.items(), for a, b in d.values(): the value unpacked in the body
            names, body = self.loop_target(target, "sequence" if method == "values" else "items", body)
        if self.keyed_loop(node, iterable, kind, names, body):
            return
        zipped = _enumerate_zip(iterable, target, self.res) if kind == "enumerate" else None
        if zipped is None and (names is None or kind in ("sequence", "reversed") and len(names) != 1):
            names, body = self.loop_target(target, kind, body)
        if kind == "plain":
            header, reads, targets, prefix = self.plain_header(node, names)
        else:
            index, sequences = self.loop_sequences(iterable, target, kind, names, zipped)
            header, reads, prefix = self.indexed_header(index, sequences, kind, names, body)
            targets = [index]
        self.loop(node, header, reads, targets, prefix, body)

    def enumerate_from(self, node: cst.For) -> cst.For:
        """``for i, v in enumerate(xs, start)`` as ``for k, v in enumerate(xs)`` with
        ``i = k + start`` first in the body, ``start`` computed once, before the loop."""
        iterable, target = node.iter, node.target
        if not (isinstance(iterable, cst.Call) and self.res.object(iterable.func) is enumerate
                and len(iterable.args) == 2 and not any(a.star for a in iterable.args)
                and iterable.args[0].keyword is None
                and getattr(iterable.args[1].keyword, "value", "start") == "start" and isinstance(target, (cst.Tuple, cst.List))
                and len(target.elements) == 2 and isinstance(target.elements[0].value, cst.Name)):
            return node
        start, counter = self.temporary("start"), self.temporary("k")
        self.block([cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(start))],
                                                        iterable.args[1].value)])])
        shifted = cst.SimpleStatementLine([cst.Assign(
            [cst.AssignTarget(target.elements[0].value)],
            cst.BinaryOperation(cst.Name(counter), cst.Add(), cst.Name(start)))])
        return node.with_changes(
            iter=iterable.with_changes(args=[iterable.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)]),
            target=target.with_changes(elements=[target.elements[0].with_changes(value=cst.Name(counter)),
                                                 *target.elements[1:]]),
            body=cst.IndentedBlock([shifted, *statements_of(node.body)]))

    def spread_rows(self, iterable: cst.BaseExpression, target: cst.BaseExpression) -> cst.BaseExpression:
        """``zip(*rows)`` with the rows passed one by one, ``zip(rows[0], rows[1])``: as many as
        rows holds where that is known here, else as many as the names the loop unpacks each
        item into, checked as the code runs (with more or fewer, Python fails to unpack); else
        the rows' transpose (``for col in zip(*rows)``)."""
        if not (isinstance(iterable, cst.Call) and self.res.object(iterable.func) is zip
                and any(a.star == "*" for a in iterable.args)):
            return iterable
        names = _target_names(target)
        args: list[cst.Arg] = []
        for a in iterable.args:
            known = self.sizes.get(self.version.get(a.value.value, a.value.value)) if isinstance(
                a.value, cst.Name) else None
            if a.star != "*" or isinstance(strip_parens(a.value), (cst.Tuple, cst.List)) or isinstance(known, int):
                args += self.unstar(a)
                continue
            if len(iterable.args) == 1 and (names is None or not isinstance(target, (cst.Tuple, cst.List))):
                return self.transposed_rows(iterable)
            if names is None or not isinstance(target, (cst.Tuple, cst.List)) or len(iterable.args) != 1:
                raise self.unsupported(a, "zip(*rows) needs rows whose length s2sad can see here, or "
                                          "a loop that unpacks each item into names (for a, b in "
                                          "zip(*rows)); pass the rows one by one")
            rows = cst.parse_expression(self.held(a.value))
            self.length_check(rows, len(names), a)
            args += [cst.Arg(item_of(rows, cst.Integer(str(k)))) for k in range(len(names))]
        return iterable.with_changes(args=args)

    def length_check(self, items: cst.BaseExpression, n: int, node: cst.CSTNode) -> None:
        """A statement that refuses, as the code runs, ``items`` of a length other than ``n``."""
        loc = self.location(node)
        self.run_time_check(runtime.check_length, [self.rename(items), cst.Integer(str(n)),
                                                   cst.SimpleString(repr(str(loc)))], self.local_reads(items), loc)

    def sequence_check(self, items: cst.BaseExpression) -> None:
        """A statement that refuses, as the code runs, ``items`` that a loop by position would
        not iterate as Python does (a dict, a set, an iterator)."""
        self.run_time_check(runtime.check_sequence, [items], self.local_reads(items), self.loc)

    def iteration_kind(self, iterable: cst.BaseExpression) -> str:
        """How a ``for`` iterates: "plain" (as written: over a range, or over what carries no
        gradient), "enumerate", "zip" or "reversed" (over sequences, by index), or "sequence"
        (over one sequence, by index)."""
        func = iterable.func if isinstance(iterable, cst.Call) else None
        if not self.local_reads(iterable) or self.inactive_kind(iterable) is not None:
            return "plain"
        if func is not None and self.res.object(func) is range:
            return "plain"
        if func is not None and self.res.object(func) in (enumerate, zip, reversed):
            return self.res.object(func).__name__
        return "sequence"

    def plain_header(self, node: cst.For, names: list[str]) -> tuple[str, tuple[str, ...], list[str], list[Any]]:
        """The header of a loop kept as written (its targets renamed), what it reads, its
        targets, and the prefix that hands a kept target on."""
        iterable = node.iter
        header_iter = self.rename(iterable)
        # a loop that runs no iteration leaves a bound target as it was: one read after the
        # loop is carried through it, assigned from a fresh loop variable in the body (a
        # comprehension's variables are its own: none is read after it)
        kept = [] if self.comprehensions else [
            n for n in names if n in self.version and self.read_after(node, n)]
        targets = [self.fn.fresh(n) if n in kept else self.new_version(n) for n in names]
        self.version.update((n, t) for n, t in zip(names, targets) if n not in kept)
        header = f"for {', '.join(targets)} in {EMPTY_MODULE.code_for_node(header_iter).strip()}"
        prefix = [(n, None, t) for n, t in zip(names, targets) if n in kept]
        return header, self.local_reads(iterable), targets, prefix

    def loop_sequences(self, iterable: cst.BaseExpression, target: cst.BaseExpression, kind: str,
                       names: list[str] | None, zipped: tuple[str, list[tuple[str, cst.BaseExpression]]] | None
                       ) -> tuple[str, list[tuple[str, cst.BaseExpression]]]:
        """A loop over sequences by index: the index, and each item's name with its sequence."""
        if zipped is not None:  # for i, (a, b) in enumerate(zip(xs, ys))
            index_name, pairs = zipped
            index = self.new_version(index_name)
            self.version[index_name] = index
            return index, pairs
        if kind == "enumerate":
            if names is None or len(names) != 2 or len(iterable.args) != 1 or iterable.args[0].keyword:
                raise self.unsupported(iterable, "use 'for i, item in enumerate(sequence)'")
            index = self.new_version(names[0])
            self.version[names[0]] = index
            return index, [(names[1], iterable.args[0].value)]
        if kind == "zip":
            if not isinstance(target, (cst.Tuple, cst.List)) or len(names) != len(iterable.args) or any(
                    a.keyword or a.star for a in iterable.args):  # (for p in zip(xs): p is a tuple)
                raise self.unsupported(iterable, "use 'for a, b in zip(xs, ys)' with one name per sequence")
            return self.fn.fresh("k"), list(zip(names, (a.value for a in iterable.args)))
        if len(names) != 1:
            raise self.unsupported(target, "unpacking the items of a sequence in a 'for' "
                                           "header is not supported; unpack in the body")
        index = self.fn.fresh("i")
        if kind == "reversed":
            if len(iterable.args) != 1 or iterable.args[0].keyword or iterable.args[0].star:
                raise self.unsupported(iterable, "use 'for item in reversed(sequence)'")
            iterable = iterable.args[0].value
        return index, [(names[0], iterable)]

    def indexed_header(self, index: str, sequences: list[tuple[str, cst.BaseExpression]], kind: str,
                       names: list[str] | None, body: list[cst.BaseStatement]
                       ) -> tuple[str, tuple[str, ...], list[Any]]:
        """The header ``for index in range(...)`` of a loop over sequences, what it reads, and
        the prefix that reads each item."""
        seq_ops = []
        # the loop's own names are rebound each iteration too (``for x in x``)
        rebound = assigned_in(body) | changed_in(body) & self.res.locals | {name for name, _ in sequences} | set(names or ())
        for name, seq in sequences:
            op, seq_node = self.operand(seq)
            if isinstance(op, Var) and not isinstance(self.sizes.get(op.name), int):  # (not a list built here)
                self.sequence_check(seq_node)
            if isinstance(op, Var) and user_name(op.name, self.res.locals) in rebound:
                # the loop iterates over the sequence as it was when the loop started
                snapshot = self.fn.fresh(f"{op.name}_items")
                self.out.append(Assign(snapshot, op, self.loc, temporary=True))
                op, seq_node = Var(snapshot), cst.Name(snapshot)
            seq_ops.append((name, op, EMPTY_MODULE.code_for_node(seq_node).strip()))
        lengths = [f"len({code})" for _, _, code in seq_ops]
        bound = lengths[0] if len(lengths) == 1 else f"min({', '.join(lengths)})"
        steps = f"{bound} - 1, -1, -1" if kind == "reversed" else bound
        reads = tuple(dict.fromkeys(n for _, op, _ in seq_ops for n in operand_reads(op)))
        return f"for {index} in range({steps})", reads, [(name, op, index) for name, op, _ in seq_ops]

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
                    isinstance(e, cst.StarredElement) for e in walk(part)):
                raise self.unsupported(part, "loop targets must be names or tuples of names "
                                             "(nested ones too); assign elements in the body")
            names.append(self.fn.fresh(target_hint(part)))
            self.res.locals = self.res.locals | {names[-1]}
            unpacks.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(part)], cst.Name(names[-1]))]))
        return names, unpacks + body

    def keyed_loop(self, node: cst.For, iterable: cst.BaseExpression, kind: str, names: list[str] | None,
                   body: list[cst.BaseStatement]) -> bool:
        """A loop over a dict's keys, values or items (``for k in d``, ``sorted(d)``, ``reversed(d)``,
        ``list(d.items())``, ``for i, k in enumerate(sorted(d))``...) as a loop over its keys,
        which carry no gradient, reading the values by key; True if ``node`` was lowered so."""
        counter = None
        if kind == "enumerate":
            if names is None or len(names) != 2 or len(iterable.args) != 1 or iterable.args[0].keyword or \
                    iterable.args[0].star:
                return False
            counter, names, iterable = names[0], names[1:], strip_parens(iterable.args[0].value)
        elif kind not in ("sequence", "reversed"):
            return False
        inner, order = self.key_order(iterable)
        mapping = _dict_iteration(inner, names, node.body)
        if mapping is None or counter is not None and mapping[1] is None:
            return False
        if mapping[1] is None and any(fun is sorted for fun, _ in order):  # sorted by value, not by key
            if len(order) != 1:
                return False
            key = cst.Name(self.fn.fresh("k"))  # (a comprehension's own variable)
            values = cst.ListComp(cst.Subscript(mapping[0], [cst.SubscriptElement(cst.Index(key))]),
                                  cst.CompFor(key, mapping[0]))  # sorted([d[k] for k in d]), as a list
            self.for_loop(node.with_changes(iter=iterable.with_changes(
                args=[iterable.args[0].with_changes(value=values), *iterable.args[1:]])))
            return True
        self.dict_loop(node, *mapping, body, order, counter)
        return True

    def key_order(self, iterable: cst.BaseExpression) -> tuple[cst.BaseExpression, list[tuple[Any, bool]]]:
        """``sorted(...)`` (``reverse=True`` too), ``reversed(...)``, ``list(...)``, ``tuple(...)``
        around an iterable: the iterable inside, and the functions, outermost first, each with
        whether it sorts in reverse."""
        order: list[tuple[Any, bool]] = []
        while isinstance(iterable, cst.Call) and self.res.object(iterable.func) in _KEY_ORDERS and \
                iterable.args and iterable.args[0].keyword is None and not any(a.star for a in iterable.args):
            fun, extra = self.res.object(iterable.func), iterable.args[1:]
            reverse = [a.value.value for a in extra if a.keyword is not None and a.keyword.value == "reverse"
                       and isinstance(a.value, cst.Name) and a.value.value in ("True", "False")]
            if len(extra) != len(reverse) or reverse and fun is not sorted:
                break
            order.append((fun, reverse == ["True"]))
            iterable = strip_parens(iterable.args[0].value)
        return iterable, order

    def dict_loop(self, node: cst.For, mapping: cst.BaseExpression, key: str | None,
                  value: str | None, body: list[cst.BaseStatement], order: list[tuple[Any, bool]],
                  counter: str | None = None) -> None:
        """``for k in d``, ``for k in d.keys()``, ``for v in d.values()``, ``for k, v in d.items()``:
        ``for k in d`` over the keys (in the ``order`` of :meth:`key_order`: ``for k in sorted(d)``),
        and ``v = d[k]`` first in the body; with a ``counter``, ``for i, k in enumerate(d)``."""
        op, seq_node = self.operand(mapping)
        rebound = assigned_in(body) | changed_in(body) & self.res.locals | {key, value, counter}
        if isinstance(op, Var) and user_name(op.name, self.res.locals) in rebound:
            snapshot = self.fn.fresh(f"{op.name}_items")  # the dict as it was when the loop started
            self.out.append(Assign(snapshot, op, self.loc, temporary=True))
            op, seq_node = Var(snapshot), cst.Name(snapshot)
        index = self.fn.fresh("k") if key is None else self.new_version(key)
        if key is not None:
            self.version[key] = index
        keys = EMPTY_MODULE.code_for_node(seq_node).strip()
        for fun, reverse in reversed(order):  # (innermost first)
            keys = f"{self.helper(fun)}({keys}{', reverse=True' if reverse else ''})"
        targets = [index]
        if counter is not None:
            targets.insert(0, self.new_version(counter))
            self.version[counter] = targets[0]
            keys = f"{self.helper(enumerate)}({keys})"
        # (the keys carry no gradient, which the code generated from this loop, differentiated
        # again, must see without the body's d[k]: it reads d's versions, not the snapshot)
        keys = f"{self.helper(runtime.stop_gradient)}({keys})"
        prefix = [] if value is None else [(value, op, index)]
        self.loop(node, f"for {', '.join(targets)} in {keys}", operand_reads(op), targets, prefix, body)

    def while_loop(self, node: cst.While) -> None:
        body, test = statements_of(node.body), node.test
        if has_walrus(test):
            # while (r := f(r)) > tol: each ':=' runs before the loop, and again as the last
            # statement of the body (so that a 'continue', which would skip it, is refused)
            walruses = [w for w, _ in walrus_places(test, "")]
            if jumps(body)[1]:
                raise self.unsupported(walruses[0], "the walrus operator ':=' in the condition of a "
                                                    "'while' loop that uses 'continue' is not supported; "
                                                    "assign before the loop and again before each 'continue'")
            test = self.hoist(test)
            inner = {id(m) for w in walruses for m in walk(w.value)}
            body = body + [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(w.target)], w.value)])
                           for w in walruses if id(w) not in inner]
        self.check_expression(test)
        test = strip_parens(test)
        self.loop(node, "", self.local_reads(test), [], [], body, test=test)

    def loop(self, node: cst.CSTNode, header: str, reads: tuple[str, ...], targets: list[str],
             prefix: list[Any], body: list[cst.BaseStatement],
             test: cst.BaseExpression | None = None) -> None:
        """Emit the loop of ``header`` (a ``while`` loop's: from ``test``) over ``body``, each
        iteration first binding its ``prefix``: (name, sequence or None for the index itself,
        index)."""
        loc = self.location(node)
        live_out = self.carried_names(node, prefix, body, loc)
        before = dict(self.version)
        for name in live_out:  # a carried container may grow from one iteration to the next
            self.sizes.pop(before[name], None)
        for name in live_out & set(view_bases(body)):  # a view taken by an earlier iteration
            self.views.add(before[name])
        for name in live_out & stored_in(body):  # put into a container by an earlier iteration
            self.stored.add(before[name])
        has_break, has_continue = jumps(body)
        breaking = self.fn.fresh("breaking") if has_break else None
        skipping = self.fn.fresh("skipping") if has_continue else None
        if breaking:
            self.out.append(Assign(breaking, Const("False"), loc, temporary=True))
        if test is not None:
            header = f"while {EMPTY_MODULE.code_for_node(self.rename(test)).strip()}"
        self.loops.append((breaking, skipping))
        links = self.save_links(scoped=True)
        block, _ = self.nested(lambda: self.loop_body(node, prefix, body, skipping, loc))
        self.loops.pop()
        held = self.check_carried_links(links, node)
        after = self.version
        carried = [(before[n], after[n]) for n in sorted(live_out)]
        self.version = {**after, **{n: before[n] for n in live_out}}
        for n in live_out:  # the carried name holds the array of the last iteration, or of none
            if after[n] != before[n] and {after[n], before[n]} & set(self.layout):
                self.layout[before[n]] = None
        self.hold_links({v for v in held if {v, self.links[v].base} <= live_out})
        self.out.append(Loop(header, tuple(reads), tuple(targets), block, carried, loc, breaking))
        if getattr(node, "orelse", None) is not None:
            self.loop_else(node.orelse, breaking)

    def carried_names(self, node: cst.CSTNode, prefix: list[Any], body: list[cst.BaseStatement],
                      loc: Location) -> set[str]:
        """The names an iteration hands on (to the next one, or to the code after the loop),
        each made bound before the loop."""
        assigned = assigned_in(body) | changed_in(body) & self.res.locals | {name for name, _, _ in prefix}
        # a write through a view changes its base (and a write into a base its views); a
        # view only rebound changes nothing it was linked to
        assigned |= self.carried_links(written_in_place(body))
        outside = self.loads_outside(node)
        live_out = {n for n in assigned if n in self.version or n in outside or (
            n not in {p for p, _, _ in prefix} and read_before_assigned(body, n))}
        if may_return(body):  # the value returned inside flows out of the loop
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
        return live_out

    def loop_body(self, node: cst.CSTNode, prefix: list[Any], body: list[cst.BaseStatement],
                  skipping: str | None, loc: Location) -> None:
        """One iteration: the ``continue`` flag reset, the prefix (each item read, or a kept
        target handed on), then the body."""
        if skipping:
            self.out.append(Assign(skipping, Const("False"), loc, temporary=True))
        for name, op, index in prefix:
            new = self.new_version(name)
            if op is None:  # the loop variable itself
                self.out.append(Assign(new, Var(index), loc))
                self.version[name] = new
                continue
            item = cst.parse_expression(f"{operand_code(op)}[{index}]")
            self.apply(operator.getitem, [op, Const(index, (index,))], {}, item, node, new, "item",
                       [item.value, None])
            self.version[name] = new
        self.block(body)

    def loop_else(self, orelse: cst.Else, breaking: str | None) -> None:
        """The ``else`` of a loop runs when no ``break`` (or ``return``) left the loop: under
        ``if not breaking``, the flag the loop already keeps."""
        stmts = statements_of(orelse.body)  # (one that jumps is lowered after the loop: statements.py)
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
        inside = set(walk(node))
        return {n.value for n in self.body_nodes
                if isinstance(n, cst.Name) and n not in inside and n.value in self.res.locals}

    def comprehension(self, node: CompNode, target: str | None) -> Operand:
        """``[e for v in xs if c]`` as a loop that appends to a new list; ``{k: e for ...}``
        as one that assigns ``d[k] = e`` into a new dict."""
        items = target or self.fn.fresh("items")
        comp_names = []
        clause = node.for_in
        while clause is not None:
            names = _bound_names(clause.target)
            if names is None:
                raise self.unsupported(clause.target, "comprehension targets must be names")
            comp_names += names
            clause = clause.inner_for_in
        node, comp_names = self.apart(node, comp_names)
        self.res.locals = self.res.locals | set(comp_names) | {items}
        self.fn.names.update(comp_names)
        statement: cst.BaseStatement = cst.SimpleStatementLine([cst.Expr(cst.Call(
            cst.Attribute(cst.Name(items), cst.Name("append")), [cst.Arg(node.elt)]))] if not isinstance(
            node, cst.DictComp) else [cst.Assign([cst.AssignTarget(item_of(cst.Name(items), node.key))], node.value)])
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
        self.holders[items] = frozenset()  # (it holds what its loop puts in)
        self.comprehension_names.update(comp_names)
        self.comprehensions.append(set(comp_names))
        try:
            self.block([statement])
        finally:
            self.comprehensions.pop()
        return Var(self.version[items])

    def apart(self, node: CompNode, names: list[str]) -> tuple[CompNode, list[str]]:
        """The comprehension with its variables renamed where the function also reads a
        global or builtin of that name (after it, say), or has a variable of that name (an
        enclosing comprehension's too): the comprehension has its own scope in Python, but its
        loop here assigns the function's variables.  Its first iterable is read outside it."""
        renames = {}
        for name in dict.fromkeys(names):
            # (a finished comprehension's variable is free again: its loop assigns it before any read)
            local = name in self.res.locals and (name not in self.comprehension_names or any(
                name in active for active in self.comprehensions))
            if name in self.res.free or local:
                self.fn.names.add(name)
                renames[name] = self.fn.fresh(name)
        if not renames:
            return node, names
        moved = renamed(node, renames, self.res.objects)
        return moved.with_changes(for_in=moved.for_in.with_changes(iter=node.for_in.iter)), [
            renames.get(n, n) for n in names]


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
            and n.slice[0].slice.value.value == names[0] for n in walk(body)):
        return iterable, names[0], None
    return None


def _target_names(target: cst.BaseExpression) -> list[str] | None:
    """The names of a target that is a name or a flat tuple of names; None for another."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)) and all(
            isinstance(e.value, cst.Name) and not isinstance(e, cst.StarredElement) for e in target.elements):
        return [e.value.value for e in target.elements]
    return None


def _bound_names(target: cst.BaseExpression) -> list[str] | None:
    """The names a comprehension's target binds, through nested tuples (``i, (k, v)``: its loop
    unpacks them as a ``for`` does); None for another target (a starred one)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in target.elements):
        names = [_bound_names(e.value) for e in target.elements]
        return None if None in names else [n for part in names for n in part]
    return None
