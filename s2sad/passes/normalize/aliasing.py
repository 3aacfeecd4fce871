"""Aliasing: which variables may share memory, and whether a name is read later.

s2sad lowers an in-place write as a new value; that is faithful only when nothing
else that is read later holds the old object."""
from __future__ import annotations

import builtins
import operator
import types

import libcst as cst
import numpy as np

from ... import runtime
from ...errors import S2SADError
from ..parse import parse
from ..resolve import MISSING, Resolution, resolve
from ..source import read_source
from .naming import user_name
from .syntax import (LOOP_NODES, flat_targets, nodes_under, read_before_assigned, statements_of, store_names,
                     strip_parens, walk)


#: Functions whose result may share memory with their argument.
VIEWING_FUNCTIONS = (operator.getitem, np.reshape, np.ndarray.reshape, np.ravel, np.ndarray.ravel,
                     np.transpose, np.ndarray.transpose, np.ndarray.T, np.squeeze, np.ndarray.squeeze,
                     np.expand_dims, np.swapaxes, np.ndarray.swapaxes, np.moveaxis, np.rollaxis, np.flip,
                     np.fliplr, np.flipud, np.rot90, np.real, np.imag, np.ndarray.real, np.ndarray.imag,
                     np.ndarray.view, np.diagonal, np.ndarray.diagonal, np.lib.stride_tricks.as_strided,
                     # lists or tuples of views
                     np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.broadcast_arrays)
#: Functions that return an array argument itself (a list or tuple they copy).
SAME_ARRAY_FUNCTIONS = (np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.atleast_1d,
                        np.atleast_2d, np.atleast_3d)


VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "flat"})
VIEW_METHODS = frozenset({"reshape", "ravel", "transpose", "squeeze", "swapaxes", "view", "diagonal"})


class Aliasing:
    """What may share memory with what, and whether a name is read later: whether an
    in-place write may be lowered as a new value."""

    def check_in_place(self, name: str, node: cst.CSTNode, what: str, instead: str,
                       at_run_time: bool = False, linked: set[str] = frozenset(),
                       list_method: bool = False) -> str | None:
        """Refuse an in-place update that another name or the caller would see.

        s2sad writes ``x += v``, ``x[i] = v`` and ``x.append(v)`` as new values; that
        is only faithful when nothing else holds the old object.  ``at_run_time``: return
        the refusal instead, for a check the generated code runs (``x += v`` changes
        nothing in place when x is a number, whatever else holds it).  ``list_method``:
        ``xs.pop()``, ``xs.append(v)``..., which change the list, not its items: what was
        read from it by indexing (an item, a slice, which is a new list), or from such a
        value, does not see it.
        """
        if getattr(self.parsed.source.fn, "__s2sad_generated__", False):
            # s2sad's own code changes in place only what nothing reads afterwards (a tape
            # popped once, a buffer no later statement reads): read as new values, it means
            # what it computes
            return None
        self.refuse_changing_iterated(name, node, what)
        current = self.version.get(name, name)
        why = None
        if current in self.stored:
            why = f"'{name}' is also stored in a list, tuple or dict"
        elif current in self.views and name not in linked:
            why = f"'{name}' may be a view into another array (it comes from indexing or reshaping)"
            loop = next((loop for loop in self.for_loops if name in flat_targets(loop.target)
                         and isinstance(strip_parens(loop.iter), cst.Name)), None)
            if loop is not None:  # for row in A: row *= 2 (a copy of row would leave A as it was)
                rows = strip_parens(loop.iter).value
                instead = f"the rows of '{rows}' by index: for i in range(len({rows})): {rows}[i] = ..."
        elif self.callee and current in self.res.params:
            why = f"'{name}' is an argument, so the calling function would see the change"
        else:
            partners = sorted(p for p in self.partners.get(current, set()) - {name} if self.read_later(node, p))
            if partners:
                why = f"'{name}' and '{partners[0]}' are the same object, and '{partners[0]}' is read later"
            else:
                read = {w for w, b in self.bases.items() if (b | {w}) & self.views} if list_method else set()
                shared = sorted(u for u in self.sharers(current, read | self.swapped.get(current, set())) - {name}
                                - linked if self.read_later(node, u))
                mine = self.bases.get(current, frozenset()) | {current}
                holding = sorted(u for u in {user_name(c, self.res.locals) for c, held in self.holders.items()
                                             if held & mine and c not in self.superseded}
                                 & self.res.locals - {name} - linked
                                 if self.read_later(node, u))
                if shared:
                    why = (f"'{shared[0]}' may share memory with '{name}' (it is a view of it, "
                           f"stop_gradient of it, or a function's result computed from it) and "
                           f"'{shared[0]}' is read later")
                elif holding:
                    why = (f"'{holding[0]}' holds '{name}' or a view of it, and is read later")
        if not why:
            return None
        message = f"{why}: {what} would change it in place, which s2sad does not follow; write {instead}"
        if at_run_time:
            return message
        raise self.unsupported(node, message)

    def refuse_changing_iterated(self, name: str, node: cst.CSTNode, what: str) -> None:
        """Refuse changing ``name`` in place in the body of a ``for`` loop that iterates over
        it (``for y in ys: ys.append(v)``): Python's loop sees the change as it goes, s2sad's
        runs over what it iterated when it began.  Writing the loop's own item (``ys[i] = v``
        in ``for i, y in enumerate(ys)``, ``d[k] = v`` in ``for k in d``) changes nothing it
        iterates over later."""
        index = node.slice[0].slice if isinstance(node, cst.Subscript) and len(node.slice) == 1 else None
        own = index.value.value if isinstance(index, cst.Index) and isinstance(index.value, cst.Name) else None
        for loop in self.for_loops:
            if name in self.iterated(loop.iter) and own not in flat_targets(loop.target) and any(
                    x is node for x in walk(loop.body)):
                raise self.unsupported(node, f"{what} changes '{name}' in a loop over it, which Python's "
                                             f"loop sees as it goes on and s2sad's does not (it runs over "
                                             f"'{name}' as the loop found it); loop over a copy: "
                                             f"for ... in list({name}), or over range(len({name}))")

    def iterated(self, node: cst.BaseExpression) -> set[str]:
        """The local names whose very object a ``for`` loop over ``node`` iterates, live: ``ys``,
        ``enumerate(ys)``, ``zip(xs, ys)``, ``reversed(ys)``, ``d.items()`` (not a copy, such as
        ``list(ys)`` or ``ys[:]``, nor ``range(len(ys))``)."""
        node = strip_parens(node)
        if isinstance(node, cst.Name):
            return {node.value} & self.res.locals
        if not isinstance(node, cst.Call):
            return set()
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("items", "values", "keys") and not node.args:
            return self.iterated(func.value)
        if self.res.object(func) in (builtins.enumerate, builtins.zip, builtins.reversed, builtins.iter):
            return set().union(*(self.iterated(a.value) for a in node.args if not a.keyword))
        return set()

    def check_item_in_place(self, target: cst.Subscript, node: cst.CSTNode, operator_code: str) -> None:
        """Refuse ``c[k] += v`` on a list or dict that may hold an array another name reads
        later: on an array item, ``+=`` changes that array in place (and so every container
        sharing it: a copy of c, c's source, another display of the array)."""
        if not isinstance(target.value, cst.Name) or getattr(self.parsed.source.fn, "__s2sad_generated__", False):
            return
        name = target.value.value
        current = self.version.get(name, name)
        # (every version's: a loop's last version of a list, copied to its name, holds them too)
        held = frozenset().union(*(h for v, h in self.holders.items() if user_name(v, self.res.locals) == name))
        readers = sorted(u for u in {user_name(h, self.res.locals) for h in held if h not in self.holders}
                         & self.res.locals - {name} if self.read_later(node, u))
        code = self.parsed.code(target).strip()
        why = ""
        if readers:
            why = f"'{name}' holds '{readers[0]}', which is read later"
        elif any(user_name(v, self.res.locals) == name for v in self.holders):  # a list or dict
            shared = held | self.bases.get(current, frozenset())
            shared |= frozenset().union(*(self.holders.get(b, frozenset()) for b in shared))
            sharers = {w for w, h in self.holders.items() if h & shared and w != current}
            readers = sorted(u for u in {user_name(v, self.res.locals) for v in shared | sharers}
                             & self.res.locals - {name} if self.read_later(node, u))
            why = f"'{name}' shares the arrays it holds with '{readers[0]}', which is read later" if readers else ""
        if why:
            raise self.unsupported(node, f"{why}: '{code} {operator_code} ...' would change an array it holds "
                                         f"in place, which s2sad does not follow; write {code} = {code} "
                                         f"{operator_code[:-1]} ...")
        self.check_copied_item(target, node, operator_code)

    def check_copied_item(self, target: cst.Subscript, node: cst.CSTNode, operator_code: str) -> None:
        """``c[k] += v`` where c may be a copy of a list or dict (``dict(p)``, ``p.copy()``) that
        is read later (an argument of a callee: by the calling function), or any list or dict,
        which may hold the same array twice (``[y] * 2``, an argument ``[a, a]``): the item,
        changed in place if it is an array, is also the other one; checked as the code runs (an
        array's item, or a number, is a new value)."""
        name = target.value.value  # type: ignore[attr-defined]
        sources = frozenset().union(*(s for v, s in self.copied_from.items()
                                      if user_name(v, self.res.locals) == name and v not in self.superseded))
        # (and what else was taken from them: another copy, an item read before, w = p["w"])
        sharing = {user_name(s, self.res.locals) for s in sources | {
            v for v, s in self.copied_from.items() if s & sources}}.union(*(self.sharers(s) for s in sources))
        readers = sorted(u for u in sharing & self.res.locals - {name} if self.read_later(node, u))
        arguments = sorted(sharing & set(self.res.params)) if self.callee else []
        made = any(user_name(v, self.res.locals) == name for v in [*self.holders, *self.lists])  # (made here)
        one_key = len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index)
        if not (readers or arguments or made or one_key):  # (x[i, j] += v: an array's item)
            return
        code = self.parsed.code(target).strip()
        why = (f"'{name}' may be a copy of '{readers[0]}', which is read later, and share its items" if readers
               else f"'{name}' may be a copy of the argument '{arguments[0]}', whose items the calling "
                    f"function holds" if arguments
               else f"that item of '{name}' is another of its items too (or a view of one)")
        message = (f"{why}: '{code} {operator_code} ...' would change it in place, which s2sad does not "
                   f"follow; write {code} = {code} {operator_code[:-1]} ...")
        index, _ = self.index(target)
        held, loc = self.version.get(name, name), self.location(node)
        self.run_time_check(runtime.check_shared_item, [
            cst.Name(held), cst.parse_expression(index.code), cst.SimpleString(repr(message)),
            cst.SimpleString(repr(str(loc))), cst.Name(str(bool(readers or arguments)))], (held, *index.reads), loc)

    def read_on_line_after(self, node: cst.CSTNode, name: str) -> bool:
        """Whether ``name`` is read on the line of ``node``, after its start (``x[0] = v; s = y``)."""
        if node not in self.parsed.positions:
            return False
        start = self.parsed.positions[node].start
        stores = store_names(self.parsed.function.body)
        return any(isinstance(n, cst.Name) and n.value == name and id(n) not in stores
                   and n in self.parsed.positions and self.parsed.positions[n].start.line == start.line
                   and self.parsed.positions[n].start.column > start.column
                   for n in self.body_nodes)

    def read_after(self, node: cst.CSTNode, name: str) -> bool:
        """Whether ``name`` is read after ``node`` ends, or in a loop around it outside it."""
        end = self.parsed.positions[node].end.line
        inside = {id(x) for x in walk(node)}
        loops = [n for n in self.body_nodes if isinstance(n, LOOP_NODES)
                 and n is not node and id(n) not in inside and any(x is node for x in walk(n))]
        stores = store_names(self.parsed.function.body)
        for n in self.body_nodes:
            if (isinstance(n, cst.Name) and n.value == name and id(n) not in stores
                    and id(n) not in inside and n in self.parsed.positions):
                if self.parsed.positions[n].start.line > end or any(
                        any(x is n for x in walk(loop)) for loop in loops):
                    return True
        return False

    def read_later(self, node: cst.CSTNode, name: str) -> bool:
        """Whether ``name`` is read after ``node``, or anywhere in a loop around it whose next
        iteration may read the value this one leaves (``left = x[i - 1]`` at the top of the body
        is read in no other iteration)."""
        line = self.location(node).line
        loops = [n for n in self.body_nodes if isinstance(n, LOOP_NODES)
                 and any(x is node for x in walk(n)) and self.loop_carries(n, name)]
        stores = store_names(self.parsed.function.body)
        for n in self.body_nodes:
            if isinstance(n, cst.Name) and n.value == name and id(n) not in stores and n in self.parsed.positions:
                if self.location(n).line > line or any(any(x is n for x in walk(loop)) for loop in loops):
                    return True
        return False

    def loop_carries(self, loop: cst.For | cst.While, name: str) -> bool:
        """Whether an iteration of ``loop`` may read the value of ``name`` the one before left
        (``_carried``), walked once per loop of the function and name."""
        if (loop, name) not in self.loop_carrying:
            self.loop_carrying[loop, name] = _carried(loop, name)
        return self.loop_carrying[loop, name]

    def share(self, name: str, sources: list[str] | tuple[str, ...]) -> None:
        """Record that ``name`` may share memory with each of ``sources`` (and what they share)."""
        self.bases[name] = self.bases.get(name, frozenset()).union(
            *({s} | self.bases.get(s, frozenset()) | self.holders.get(s, frozenset()) for s in sources))

    def same_array(self, new: str, old: str) -> None:
        """``new`` is ``old`` changed in place (for NumPy, the same array): what shares memory with
        ``old`` shares it with ``new`` too (a list's items are no views of it)."""
        if old not in self.lists:
            self.bases[new] = self.bases.get(new, frozenset()) | {old} | self.bases.get(old, frozenset())

    def sharers(self, version: str, besides: frozenset[str] | set[str] = frozenset()) -> set[str]:
        """User variables that may share memory with ``version``: views, aliases, results (not
        the versions in ``besides``)."""
        mine = self.bases.get(version, frozenset()) | {version}
        found = set(mine) | {w for w, b in self.bases.items() if (b | {w}) & mine}
        return {user_name(v, self.res.locals) for v in found - self.superseded - set(besides)} & self.res.locals

    def unlink_swapped(self, targets: list[cst.BaseExpression], values: list[cst.BaseExpression],
                       before: dict[str, str]) -> None:
        """After ``A, B = B, A`` (values of a display, stored in turn; ``before``: the versions
        the names had): the name ``B`` read into the new ``A`` is rebound by the same statement,
        so it no longer holds A's object (unless it is given it again: ``A, B = B, B``); what
        else shares B's old object still does."""
        given = {t.value: strip_parens(v) for t, v in zip(targets, values) if isinstance(t, cst.Name)}
        for name, value in given.items():
            read = value.value if isinstance(value, cst.Name) else None
            if read in given and read != name and read in before and not (
                    isinstance(given[read], cst.Name) and given[read].value == read):
                self.partners.get(self.version[name], set()).discard(read)
                self.swapped.setdefault(self.version[name], set()).add(before[read])

    def rebind(self, name: str) -> None:
        """``name`` is about to be assigned anew in the function's straight-line top level:
        no later read of it sees the object its earlier versions held (in a branch or a loop,
        a later read may still see it)."""
        if self.out is not self.fn.body or name not in self.version:
            return
        for names in self.partners.values():
            names.discard(name)
        for v in self.fn.names - self.versioned:  # (names only grow: each is looked at once)
            self.versions_of.setdefault(user_name(v, self.res.locals), set()).add(v)
        self.versioned |= self.fn.names
        self.superseded |= self.versions_of.get(name, set())
        if user_name(self.version[name], self.res.locals) == name:
            self.superseded.add(self.version[name])


def _carried(loop: cst.For | cst.While, name: str) -> bool:
    """Whether an iteration of ``loop`` may read the value of ``name`` the one before left (a
    name a nested loop assigns as its target counts: that loop may not run)."""
    if isinstance(loop, cst.While) and any(isinstance(n, cst.Name) and n.value == name for n in walk(loop.test)):
        return True
    body = statements_of(loop.body)
    return read_before_assigned(body, name) or any(
        isinstance(n, cst.For) and name in flat_targets(n.target, False) for n in nodes_under(body, into_loops=True))


def may_alias(node: cst.BaseExpression, res: Resolution) -> bool:
    """Whether the value of ``node`` may share memory with a variable it reads, by its form:
    a name, ``stop_gradient`` of one, or an index, view attribute or view method of one."""
    node = strip_parens(node)
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Subscript):
        return may_alias(node.value, res)
    if isinstance(node, cst.Attribute):
        return node.attr.value in VIEW_ATTRIBUTES and may_alias(node.value, res)
    if isinstance(node, (cst.Tuple, cst.List)):
        return any(may_alias(e.value, res) for e in node.elements)
    if isinstance(node, cst.IfExp):
        return may_alias(node.body, res) or may_alias(node.orelse, res)
    if isinstance(node, cst.Call):
        func, obj = node.func, res.object(node.func)
        if obj is runtime.stop_gradient or obj in VIEWING_FUNCTIONS or obj in SAME_ARRAY_FUNCTIONS:
            return bool(node.args) and may_alias(node.args[0].value, res)
        if obj is MISSING and isinstance(func, cst.Attribute) and func.attr.value in VIEW_METHODS:
            return may_alias(func.value, res)
    return False


def returns_alias(function: types.FunctionType) -> bool:
    """Whether ``function`` may return one of its arguments, or a view of one."""
    if not isinstance(function, types.FunctionType):  # a method of self: not known here
        return True
    try:
        parsed = parse(read_source(function))
    except S2SADError:  # no source: the call is refused elsewhere
        return True
    res = resolve(parsed)
    returns = [n for n in nodes_under(list(statements_of(parsed.function.body)), into_loops=True)
               if isinstance(n, cst.Return) and n.value is not None]
    return any(may_alias(r.value, res) for r in returns)


def returns_same(fun: object, node: cst.CSTNode) -> bool:
    """Whether the call ``node`` of ``fun`` may return one of its arguments itself
    (``np.asarray(y)``, ``y.astype(t, copy=False)``, ``max(y, w, key=...)``; not
    ``np.asarray([a, b])``)."""
    if not isinstance(node, cst.Call):
        return False
    if fun is builtins.max or fun is builtins.min:
        return True
    if fun is np.ndarray.astype:
        return any(a.keyword is not None and a.keyword.value == "copy" and isinstance(a.value, cst.Name)
                   and a.value.value == "False" for a in node.args)
    if fun is np.array:  # (copy=False, copy=None: the argument itself when it needs no copy)
        return any(a.keyword is not None and a.keyword.value == "copy" and not (
            isinstance(a.value, cst.Name) and a.value.value == "True") for a in node.args)
    return fun in SAME_ARRAY_FUNCTIONS and bool(node.args) and not isinstance(
        strip_parens(node.args[0].value), (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp))
