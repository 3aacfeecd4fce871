"""In-place writes through views: ``r = A[i]; r *= 2`` changes ``A`` too (slices, ``.T``,
``transpose``, ``swapaxes``, ``reshape``, ``ravel``)."""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import libcst as cst
import numpy as np

from ... import runtime
from ...ir import Assign, Call, Const, If, Opaque, Stmt, Var, operand_code, operand_reads
from ...rules.registry import SETITEM
from .naming import renamed, user_name
from .syntax import EMPTY_MODULE, strip_parens


@dataclass(frozen=True)
class Replay:
    """How to tell whether NumPy's reshape of an array s2sad wrote anew is a view: the same
    reshape of the version laid out in memory as NumPy's array is."""

    reshape: cst.BaseExpression  # the reshape, of the origin
    reads: tuple[str, ...]  # the versions it reads, the origin first

    @property
    def origin(self) -> str:
        """The version laid out in memory as NumPy's array is."""
        return self.reads[0]


@dataclass
class ViewLink:
    """``view = base[i]`` (or ``base.T``, a reshape...): a view s2sad follows, writing a change
    of either array into the other (PyTorch's semantics), in the block that took it."""

    base: str  # the user's name of the array viewed
    back: str  # how the view is taken: "index", "transpose", "swapaxes" or "reshape"
    operands: tuple[Const, ...]  # the index, or the two axes of swapaxes
    taken: tuple[str, str]  # (base, view) versions when the view was taken
    now: tuple[str, str]  # the versions the link holds between: a plain assignment ends it
    block: list[Stmt]  # the statements the view was taken among: only writes there follow it
    flag: str | None = None  # variable: whether the view shares the base's memory when run
    replay: Replay | None = None  # for a reshape of an array s2sad wrote anew


#: Functions that take a view s2sad follows through writes, by the method they stand for.
_VIEW_FUNCTIONS = ((np.reshape, "reshape"), (np.ravel, "ravel"), (np.transpose, "transpose"),
                   (np.swapaxes, "swapaxes"))


class ViewFollowing:
    """Views s2sad follows through writes: a write into a view is written into its base,
    and into the other views of it, as NumPy would see it."""

    def link_view(self, name: str, value: cst.BaseExpression, new: str) -> None:
        """After ``name = value``: follow ``name`` as a view of a local array when ``value``
        takes one in a way s2sad can undo (a basic or any index, ``.T``, ``transpose()``,
        ``swapaxes`` by literal axes, ``reshape``, ``ravel``)."""
        self.links.pop(name, None)
        form = self.view_form(value)
        stmt = next((s for s in reversed(self.out) if isinstance(s, Assign) and s.target == new), None)
        if (form is None or self.generated() or stmt is None or not isinstance(stmt.value, Call)
                or stmt.value.rule is None):
            return
        base, back, operands = form
        current = self.version.get(base)
        if base == name or base not in self.res.locals or current is None or current in self.lists:
            return
        args = list(stmt.value.args.values())
        if not args or not isinstance(args[0], Var) or args[0].name != current:
            return
        replay = None
        if back == "reshape" and self.loops:  # (a carried array may be s2sad's copy of it)
            return
        if back == "reshape" and current in self.layout:
            # whether NumPy's reshape is a view depends on how NumPy's array is laid out, which
            # s2sad's new value of it may not be: ask the version that is
            origin = self.layout[current]
            if origin is None:
                return
            reads = [origin, *(n for op in stmt.value.args.values() for n in operand_reads(op) if n != current)]
            replay = Replay(renamed(stmt.value.node, {current: origin}), tuple(dict.fromkeys(reads)))
        if back == "index":
            operands = (stmt.value.args["index"],)
        self.links[name] = ViewLink(base, back, operands, (current, new), (current, new), self.out,
                                    replay=replay)

    def view_form(self, node: cst.BaseExpression) -> tuple[str, str, tuple[Const, ...]] | None:
        """(base name, kind, operands) when ``node`` takes a view of a local name as s2sad follows."""
        node = strip_parens(node)
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
            return node.value.value, "index", ()
        if isinstance(node, cst.Attribute) and node.attr.value == "T" and isinstance(node.value, cst.Name):
            return node.value.value, "transpose", ()
        if not isinstance(node, cst.Call) or any(a.keyword or a.star for a in node.args):
            return None
        func, args = node.func, [a.value for a in node.args]
        if isinstance(func, cst.Attribute) and func not in self.res.objects and isinstance(func.value, cst.Name):
            method, base = func.attr.value, func.value.value
        elif _view_function(self.res.object(func)) and args and isinstance(args[0], cst.Name):
            method, base, args = _view_function(self.res.object(func)), args[0].value, args[1:]
        else:
            return None
        if method == "swapaxes" and len(args) == 2 and all(_literal_int(a) is not None for a in args):
            return base, "swapaxes", tuple(Const(str(_literal_int(a))) for a in args)
        if (method, len(args)) in (("transpose", 0), ("ravel", 0)) or method == "reshape" and args:
            return base, "transpose" if method == "transpose" else "reshape", ()
        return None

    def generated(self) -> bool:
        """Whether the function is s2sad's own code (which changes in place only what nothing
        reads afterwards)."""
        return getattr(self.parsed.source.fn, "__s2sad_generated__", False)

    def linked(self, name: str) -> dict[str, ViewLink]:
        """The views linked to ``name`` (its base, its views, theirs...) that a write into
        ``name`` changes too: followed by s2sad (empty when there is none, when the write is not
        in the block that took the view or in a loop or a branch inside it, when either array
        was rebound since, or when one of them is an argument of a function compiled for a
        caller, which would see it)."""
        if self.generated():
            return {}
        valid = {v: link for v, link in self.links.items() if self.in_scope(link)
                 and link.now == (self.version.get(link.base), self.version.get(v))}
        found, todo = {}, [name]
        while todo:
            n = todo.pop()
            for v, link in valid.items():
                if v not in found and n in (v, link.base):
                    found[v] = link
                    todo += [v, link.base]
        if self.callee and any(self.version.get(n) in self.res.params for n in linked_names(found)):
            # a view of an argument: the calling function would see the write (refused as before,
            # or checked when run for x op= v, which changes nothing in place on a number)
            return {}
        return found

    def relaid(self, new: str, old: str) -> None:
        """``new`` is s2sad's new value of the array ``old`` the user changed in place: laid out
        in memory as ``old``'s NumPy array is laid out, or not."""
        self.layout[new] = self.layout.get(old, old)

    def in_scope(self, link: ViewLink) -> bool:
        """Whether ``link`` was taken in the current block or in one around it."""
        return link.block is self.out or any(link.block is block for block in self.enclosing)

    def save_links(self, scoped: bool = False) -> dict[str, tuple[ViewLink, tuple[str, str]]]:
        """The links and the versions they hold between, before branches or a loop body lower
        (``scoped``: only those taken in the current block or in one around it)."""
        return {v: (link, link.now) for v, link in self.links.items() if not scoped or self.in_scope(link)}

    def restore_links(self, saved: dict[str, tuple[ViewLink, tuple[str, str]]]) -> None:
        """The links as they were before a branch (a view taken in it is no view after it)."""
        self.links = {v: link for v, (link, _) in saved.items()}
        for link, now in saved.values():
            link.now = now

    def links_held(self, saved: dict[str, tuple[ViewLink, tuple[str, str]]]) -> set[str]:
        """The views of ``saved`` whose link still holds at the end of a branch just lowered."""
        return {v for v, (link, _) in saved.items() if self.links.get(v) is link
                and link.now == (self.version.get(link.base), self.version.get(v))}

    def hold_links(self, views: set[str]) -> None:
        """After branches joined: the links that held at the end of each hold between the joined
        versions (the phi copies keep the view relation)."""
        for v in views:
            link = self.links[v]
            link.now = (self.version[link.base], self.version[v])

    def carried_links(self, written: set[str]) -> set[str]:
        """The arrays linked to those a loop body writes in place, which the loop carries too."""
        return set().union(*(linked_names(self.linked(name)) for name in written))

    def check_carried_links(self, entry: dict[str, tuple[ViewLink, tuple[str, str]]],
                            node: cst.CSTNode) -> set[str]:
        """After a loop body: a link from outside it that the body wrote through must still hold
        at its end, or the next iteration would write into an array the view no longer shares.
        Returns the views whose link holds on after the loop."""
        held = set()
        for v, (link, now) in entry.items():
            if link.now == now:
                continue
            if self.links.get(v) is not link or link.now != (self.version.get(link.base), self.version.get(v)):
                raise self.unsupported(node, f"this loop writes through the view '{v}' of '{link.base}', "
                                             f"then rebinds one of them, so a later iteration would write "
                                             f"into an array the other no longer shares; take the view "
                                             f"again inside the loop, or write {v} = {v}.copy() first")
            held.add(v)
        return held

    def follow_views(self, name: str, node: cst.CSTNode, linked: dict[str, ViewLink]) -> None:
        """``name`` has just changed in place: write the change into the arrays ``linked``
        to it, as NumPy would see it (each guarded by whether, when run, the view does share its
        base's memory: a number or a copy taken by fancy indexing does not)."""
        if not linked:
            return
        where = self.location(node)
        for view, link in linked.items():
            if link.flag is None:
                code = self.parsed.code(node).strip().splitlines()[0]
                refusal = (f"'{view}' was taken from '{link.base}', which is not an array here, so "
                           f"s2sad cannot tell whether '{code}' changes '{link.base}' too; write "
                           f"{view} = {view}.copy() before changing it, or make '{link.base}' an array")
                base, taken, reads = link.taken[0], link.taken[1], link.taken
                if link.replay is not None:
                    base, reads = link.replay.origin, link.replay.reads
                    taken = EMPTY_MODULE.code_for_node(link.replay.reshape)
                test = cst.parse_expression(
                    f"{self.helper(runtime.view_flag)}({base}, {taken}, "
                    f"{f'{where.filename}:{where.line}:{where.column}'!r}, {refusal!r})")
                # computed where the view was taken, so that every later write, in a branch
                # or a loop too, reads it
                flag, _ = self.nested(lambda: self.emit(Opaque(test, reads, "nondiff"), None,
                                                        f"{view}_is_view", node))
                taken = next(i for i, s in enumerate(link.block)
                             if isinstance(s, Assign) and s.target == link.taken[1])
                link.block[taken + 1:taken + 1] = flag
                link.flag = flag[0].target
        self.spread(name, None, linked, node)
        for view, link in linked.items():
            link.now = (self.version[link.base], self.version[view])

    def spread(self, name: str, source: str | None, linked: dict[str, ViewLink], node: cst.CSTNode) -> None:
        """Write the new value of ``name`` back into its base and into its views that are read
        later (not into ``source``, whence the change came)."""
        link = linked.get(name)
        if link is not None and link.base != source:
            self.when(link.flag, node, lambda: (self.write_back(name, link, node),
                                                self.spread(link.base, name, linked, node)))
        for view, other in linked.items():
            if other.base == name and view != source and self.live(view, linked, node):
                self.when(other.flag, node, lambda view=view, other=other: (
                    self.rederive(view, other, node), self.spread(view, name, linked, node)))

    def live(self, view: str, linked: dict[str, ViewLink], node: cst.CSTNode) -> bool:
        """Whether ``view``, or a view taken from it, is read after ``node`` (later on its line too)."""
        return self.read_later(node, view) or self.read_on_line_after(node, view) or any(
            link.base == view and self.live(v, linked, node) for v, link in linked.items())

    def when(self, flag: str, node: cst.CSTNode, lower: Callable[[], Any]) -> None:
        """``if flag: <lower>`` with the versions it changes joined after it."""
        before = dict(self.version)
        body, _ = self.nested(lower)
        orelse: list[Stmt] = []
        self.version = self.join(before, [(body, self.version, False), (orelse, before, False)])
        self.out.append(If(Var(flag), body, orelse, self.location(node)))

    def write_back(self, view: str, link: ViewLink, node: cst.CSTNode) -> None:
        """The base of ``view`` with the view's new value written into it."""
        base, value = link.base, self.version[view]
        new = self.new_version(base)
        if link.back == "index":
            index = link.operands[0]
            call = Call(self.registry.rule(SETITEM), f"{base}[...] =",
                        {"x": Var(self.version[base]), "index": index, "v": Var(value)},
                        cst.parse_expression(f"{new}[{index.code}]"))
            self.out.append(Assign(new, call, self.location(node)))
        elif link.back == "reshape":
            self.view_call(np.ndarray.reshape, value, [self.shape(link.taken[0], node)], "reshape", new, node)
        else:
            self.view_call(*self.reversal(link, value), new, node)
        self.same_array(new, self.version[base])
        self.relaid(new, self.version[base])
        self.version[base] = new

    def rederive(self, view: str, link: ViewLink, node: cst.CSTNode) -> None:
        """``view`` taken again from its base's new value."""
        base = self.version[link.base]
        new = self.new_version(view)
        if link.back == "index":
            index = link.operands[0]
            item = cst.parse_expression(f"{base}[{index.code}]")
            self.apply(operator.getitem, [Var(base), index], {}, item, node, new, "item", [item.value, None])
        elif link.back == "reshape":
            self.view_call(np.ndarray.reshape, base, [self.shape(link.taken[1], node)], "reshape", new, node)
        else:
            self.view_call(*self.reversal(link, base), new, node)
        self.relaid(new, self.version[view])
        self.version[view] = new

    def shape(self, version: str, node: cst.CSTNode) -> Var:
        """``version.shape``, which carries no gradient, in a variable."""
        return self.emit(Opaque(cst.parse_expression(f"{version}.shape"), (version,), "nondiff"), None,
                         f"{user_name(version, self.res.locals)}_shape", node)

    def reversal(self, link: ViewLink, receiver: str) -> tuple[Any, str, tuple[Const, ...], str]:
        """How a transposed view and its base are taken from each other (the same way)."""
        if link.back == "transpose":
            return np.ndarray.T, receiver, (), "T"
        return np.ndarray.swapaxes, receiver, link.operands, "swapaxes"

    def view_call(self, key: Any, receiver: str, operands: Any, word: str, new: str,
                  node: cst.CSTNode) -> None:
        """``new = receiver.word(operands)`` (``receiver.T`` for the attribute)."""
        code = f"{receiver}.T" if word == "T" else f"{receiver}.{word}({', '.join(operand_code(op) for op in operands)})"
        primal = cst.parse_expression(code)
        names = [primal.value if word == "T" else primal.func.value]
        self.apply(key, [Var(receiver), *operands], {}, primal, node, new, word, [*names, *(None for _ in operands)])


def linked_names(linked: dict[str, ViewLink]) -> set[str]:
    """The names of the views in ``linked`` and of their bases."""
    return set(linked) | {link.base for link in linked.values()}


def _view_function(obj: Any) -> str | None:
    return next((method for function, method in _VIEW_FUNCTIONS if obj is function), None)


def _literal_int(node: cst.BaseExpression) -> int | None:
    """The value of an integer literal (``-1`` too)."""
    node = strip_parens(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal_int(node.expression)
        return None if inner is None else -inner
    return int(node.value) if isinstance(node, cst.Integer) else None
