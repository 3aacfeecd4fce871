"""Specialised gradients of dicts, lists and tuples of arrays (parameters as a tree).

Where a call's signature says what a container argument holds (rules/shapes.py,
``KnownTree``), the gradient of the container is kept as one variable per leaf instead of a
container the helpers rebuild: ``dparams = getitem_grad(g, params, "means")`` then
``dparams = add_at(dparams, "logits", da)`` become ``dmeans = g`` and ``dlogits = da`` (the
other leaves zeros, written only where they are read), and the returned gradient is a dict
(list, tuple) display of the leaves, each in its argument's type, shape and dtype, an array
the caller owns.  The helpers' semantics are kept: a sum of contributions is a new array,
never an update in place of one another name may hold.  When any use of such a gradient is
not one of these forms, nothing is rewritten (the helpers stay).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Any, Optional

import libcst as cst
import numpy as np

from ..ir import Assign, Function, If, Loop, Opaque, Stmt
from ..runtime import check_sequence, check_shared_item, check_slice_length
from ..rules.shapes import FloatScalar, Known, KnownTree
from .adjoint import Adjoint, Block, Line, Out, lines
from .codegen import expression_code
from .fold import atomic
from .parsed_lines import line_names, parsed_line
from .shapes import READ_ONLY, Evaluator

Path = tuple[Any, ...]  # keys and indices from the container to a leaf
Part = Optional[str]  # a leaf's contribution (its code), None for zero
Where = tuple[int, int]  # a backward line's place: its index among all lines, and its top-level line's
TREE_HELPERS = ("getitem_grad", "add_at", "added_at", "add_grads", "unpack_grad", "zeros_grad")


class _Unsplit(Exception):
    """A use of a container's gradient this module does not rewrite: the helpers stay."""


def leaves(tree: KnownTree, path: Path = ()) -> list[tuple[Path, Known]]:
    """The leaves of ``tree``, with their paths, in order."""
    out: list[tuple[Path, Known]] = []
    for key, item in zip(tree.keys or range(len(tree.items)), tree.items):
        out += leaves(item, (*path, key)) if isinstance(item, KnownTree) else [((*path, key), item)]
    return out


def plain(tree: KnownTree) -> bool:
    """Whether every leaf is a real array or a Python float (what the rewrites cover)."""
    return all(k.real and (k.array or k.kind is float) for _, k in leaves(tree))


def checked(known: Known | KnownTree | None) -> bool:
    """Whether ``check_wrt`` passes every value ``known`` describes (real floats only)."""
    if isinstance(known, KnownTree):
        return all(k.real for _, k in leaves(known))
    return known is not None and known.real


def describe(known: Known | KnownTree) -> str:
    """``3x2 float64``, ``float float64``; ``dict(means: 3x2 float64, ...)`` for a container."""
    if isinstance(known, KnownTree):
        keys = known.keys or ("",) * len(known.items)
        inner = ", ".join(f"{k}: {describe(i)}" if k else describe(i) for k, i in zip(keys, known.items))
        return f"{known.kind.__name__}({inner})"
    return f"{'x'.join(map(str, known.shape)) or known.kind.__name__} {known.dtype}"


def zeros_code(np_name: str, known: Known) -> str:
    """Zeros of ``known``'s shape and dtype (``0.0`` for a float)."""
    if not known.array:
        return "0.0"
    dtype = "" if known.dtype == np.float64 else f", dtype={np_name}.{known.dtype.name}"
    return f"{np_name}.zeros({known.shape}{dtype})"


def display(tree: KnownTree, leaf: Any, path: Path = ()) -> str:
    """The dict, list or tuple display of ``tree`` whose leaf at a path is ``leaf(path, known)``."""
    return joined(tree, [display(item, leaf, (*path, key)) if isinstance(item, KnownTree) else leaf((*path, key), item)
                         for key, item in zip(tree.keys or range(len(tree.items)), tree.items)])


def joined(tree: KnownTree, parts: list[str]) -> str:
    """The display of a container of ``tree``'s kind and keys, of items ``parts``."""
    if tree.keys is not None:
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(tree.keys, parts)) + "}"
    if tree.kind is list:
        return "[" + ", ".join(parts) + "]"
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def tree_zeros(np_name: str, ev: Evaluator, node: ast.expr) -> str | None:
    """``zeros_grad(x)`` of a known container of real arrays and floats: its display of zeros."""
    tree = ev.tree(node)
    if tree is None or not plain(tree):
        return None
    return display(tree, lambda path, known: zeros_code(np_name, known))


@dataclass
class _Split:
    """The backward code's container gradients, split into one variable per leaf."""

    adj: Adjoint
    ev: Evaluator
    names: dict[str, str]  # spelling in the code -> runtime helper
    mutated: dict[str, list[Where]]  # names whose arrays the code updates in place, and where
    where: dict[int, Where]  # id of a backward line -> where it is
    trees: dict[str, KnownTree] = field(default_factory=dict)  # a container's gradient -> the container's tree
    leaf: dict[tuple[str, Path], str] = field(default_factory=dict)  # (gradient, path) -> variable
    pending: dict[str, tuple[Known, Line]] = field(default_factory=dict)  # zero leaves not written yet
    at_line: Where = (0, 0)  # where the line being rewritten is
    zeros: dict[int, str] = field(default_factory=dict)  # id of a line writing zeros -> its variable

    def variable(self, d: str, path: Path) -> str:
        """The variable holding leaf ``path`` of gradient ``d`` (``dmeans``)."""
        if (d, path) not in self.leaf:
            words = ["".join(c if c.isalnum() else "_" for c in str(p)) for p in path]
            hints = [f"d{'_'.join(words)}"] if isinstance(path[0], str) else []
            self.leaf[d, path] = self.adj.fn.fresh(hints + [f"{d}_{'_'.join(words)}"])
        return self.leaf[d, path]

    def parts(self, tree: KnownTree, g: ast.expr | None) -> list[tuple[Path, Part]]:
        """The contribution ``g`` (None: zero; else a split gradient) to a gradient of ``tree``."""
        if g is None or isinstance(g, ast.Constant) and g.value is None:
            return [(path, None) for path, _ in leaves(tree)]
        if isinstance(g, ast.Name) and self.trees.get(g.id) == tree:
            return [(path, None if (v := self.leaf[g.id, path]) in self.pending else v) for path, _ in leaves(tree)]
        raise _Unsplit

    def part(self, known: Known | KnownTree, g: ast.expr | None) -> list[tuple[Path, Part]]:
        """The contribution ``g`` to a leaf (path ``()``) or subtree of argument kind ``known``."""
        if isinstance(known, KnownTree):
            return self.parts(known, g)
        if g is None or isinstance(g, ast.Constant) and g.value is None:
            return [((), None)]
        k = self.ev.value(g)
        if k is None or (k != known if known.array else not (
                k.shape == () and k.dtype == np.float64 and k.kind in (float, np.float64, FloatScalar))):
            raise _Unsplit
        if isinstance(g, ast.Name) and known.array and any(
                not _before(m, self.at_line) for m in self.mutated.get(g.id, ())):
            raise _Unsplit  # (a leaf holding it would change with it)
        return [((), ast.unparse(g))]

    def assign(self, d: str, tree: KnownTree, parts: list[tuple[Path, Part]], x: Line) -> list[Line]:
        """``d = <the gradient of tree made of parts>``, leaf by leaf."""
        if not plain(tree) or self.trees.get(d, tree) != tree:
            raise _Unsplit
        self.trees[d] = tree
        out: list[Line] = []
        kinds = dict(leaves(tree))
        for path, part in parts:
            variable = self.variable(d, path)
            if part is None:
                self.pending[variable] = kinds[path], x
            else:
                self.pending.pop(variable, None)
                out.append(self.line(variable, part, x))
        return out

    def add(self, d: str, parts: list[tuple[Path, Part]], x: Line) -> list[Line]:
        """``d = <d plus the parts>``, leaf by leaf: a new array wherever one is added."""
        out: list[Line] = []
        for path, part in parts:
            variable = self.variable(d, path)
            if part is None:
                continue
            if self.pending.pop(variable, None) is None:
                part = f"{variable} + {part if _atomic(part) else '(' + part + ')'}"
            out.append(self.line(variable, part, x))
        return out

    def line(self, variable: str, code: str, x: Line) -> Line:
        return replace(x, code=f"{variable} = {code}", reads=line_names(code))

    def flush(self) -> list[Out]:
        """The zeros of the leaves not written yet (before a block, and at the end of one)."""
        np_name = self.adj.use("np")
        out: list[Out] = [replace(x, code=f"{v} = {zeros_code(np_name, k)}", reads=frozenset())
                          for v, (k, x) in self.pending.items()]
        self.zeros.update((id(x), v) for x, v in zip(out, self.pending))
        self.pending.clear()
        return out

    def unread(self, outs: list[Out], read: set[str]) -> list[Out]:
        """``outs`` without the zeros written to a leaf no line reads, nor any result (a
        nested container's, added into its parent's gradient as zero)."""
        for x in outs:
            if isinstance(x, Block):
                x.body, x.orelse = self.unread(x.body, read), self.unread(x.orelse, read)
        return [x for x in outs if (v := self.zeros.get(id(x))) is None or v in read]

    def statement(self, x: Line) -> list[Line] | None:
        """The lines ``x`` becomes when it assigns a container's gradient; None if it does not."""
        self.at_line = self.where[id(x)]
        body = parsed_line(x.code).body
        s = body[0] if len(body) == 1 else None
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                and isinstance(s.value, ast.Call) and not s.value.keywords):
            return None
        if _called(s.value) not in self.names:
            tree = self.ev.known(s.value)  # a callee's gradient of a known container
            return self.received(s.targets[0].id, tree, x) if isinstance(tree, KnownTree) and plain(tree) else None
        d, helper, args = s.targets[0].id, self.names[_called(s.value)], s.value.args
        if helper in ("add_at", "added_at", "add_grads"):
            if not (len(args) == {"add_at": 3, "added_at": 4}.get(helper, 2) and isinstance(args[0], ast.Name)
                    and args[0].id in self.trees):
                return None  # (an array's)
            if args[0].id != d:
                raise _Unsplit
            tree = self.trees[d]
            if helper == "add_at":
                return self.add(d, self.at(tree, args[1], args[2]), x)
            if helper == "added_at":
                if self.ev.tree(args[1]) != tree:
                    raise _Unsplit
                return self.add(d, self.at(tree, args[2], args[3]), x)
            inner = args[1]
            made = self.made(self.names.get(_called(inner), ""), inner.args) if isinstance(inner, ast.Call) else None
            if made is not None and made[0] == tree:
                return self.add(d, made[1], x)
            return self.add(d, self.parts(tree, inner), x)
        made = self.made(helper, args)
        return None if made is None else self.assign(d, *made, x)

    def received(self, d: str, tree: KnownTree, x: Line) -> list[Line]:
        """``d = backward(g)``, a callee's gradient of ``tree``: held under a name of its own,
        its leaves read into ``d``'s variables."""
        held = self.adj.fn.fresh(d)
        self.adj.fn.names.add(held)
        call = x.code.split(" = ", 1)[1]
        parts = [(path, held + "".join(f"[{p!r}]" for p in path)) for path, _ in leaves(tree)]
        return [replace(x, code=f"{held} = {call}"), *self.assign(d, tree, list(parts), x)]

    def made(self, helper: str, args: list[ast.expr]) -> tuple[KnownTree, list[tuple[Path, Part]]] | None:
        """The tree and the parts of a container's gradient that ``getitem_grad``,
        ``unpack_grad`` or ``zeros_grad`` makes; None for an array's."""
        at = {"getitem_grad": 1, "unpack_grad": 0, "zeros_grad": 0}.get(helper)
        tree = self.ev.tree(args[at]) if at is not None and len(args) > at else None
        if tree is None:
            return None
        if helper == "zeros_grad":
            return tree, self.parts(tree, None)
        if helper == "getitem_grad" and len(args) == 3:
            return tree, self.at(tree, args[2], args[0])
        sequence = args[1] if len(args) == 2 else None
        if tree.keys is not None or not isinstance(sequence, ast.Tuple) or len(sequence.elts) != len(tree.items):
            raise _Unsplit
        return tree, [((i, *path), part) for i, (item, g) in enumerate(zip(tree.items, sequence.elts))
                      for path, part in self.part(item, g)]

    def at(self, tree: KnownTree, index: ast.expr, g: ast.expr) -> list[tuple[Path, Part]]:
        """The parts of the gradient of ``tree`` that is ``g`` at a constant key, zero elsewhere."""
        key: Any = index.value if isinstance(index, ast.Constant) else None
        item = tree.item(key)
        if item is None:
            raise _Unsplit
        if tree.keys is None:
            key %= len(tree.items)  # (a negative index)
        under = {(key, *path): part for path, part in self.part(item, g)}
        return [(path, under.get(path)) for path, _ in leaves(tree)]

    def block(self, outs: list[Out]) -> list[Out]:
        """``outs`` with the containers' gradients split (zeros written before a block and at the end).
        A block is rewritten as a copy: a later use that is not split leaves ``outs`` as they were."""
        out: list[Out] = []
        for x in outs:
            if isinstance(x, Block):
                out += self.flush()
                out.append(replace(x, body=self.block(x.body), orelse=self.block(x.orelse)))
                continue
            made = self.statement(x)
            out += [x] if made is None else made
        return out + self.flush()

    def result(self, code: str) -> tuple[str, KnownTree | None]:
        """A returned ``grad_like(d, x)`` of a split gradient: the display of its leaves, and x's tree."""
        node = ast.parse(code, mode="eval").body
        if not (isinstance(node, ast.Call) and self.names.get(_called(node)) == "grad_like" and len(node.args) == 2
                and isinstance(node.args[0], ast.Name) and node.args[0].id in self.trees):
            return code, None
        d, tree = node.args[0].id, self.trees[node.args[0].id]
        if self.ev.tree(node.args[1]) != tree:
            raise _Unsplit
        return display(tree, lambda path, known: self.leaf[d, path]), tree


def split_trees(adj: Adjoint, ev: Evaluator) -> dict[int, KnownTree]:
    """Split the gradients of the known containers of ``adj``'s backward code into one
    variable per leaf; the results that return one, with its argument's tree (none: nothing
    was changed)."""
    if not any(isinstance(v, KnownTree) for v in ev.env.values()):
        return {}  # (no container is known: nothing to split)
    names = {adj.runtime[h]: h for h in (*TREE_HELPERS, "grad_like") if h in adj.runtime}
    mutating: dict[str, str] = {adj.runtime[h]: h for h in ("add_at", "mul_into") if h in adj.runtime}
    where = _places(adj.backward)
    split = _Split(adj, ev, names, _mutated(adj.backward, mutating, where), where)
    try:
        backward = split.block(adj.backward)
        results = [split.result(r) for r in adj.results]
        left = {n for x in lines(backward) for n in _names(x)}
        left |= {n for r, tree in results if tree is None for n in line_names(r)}
        if not split.trees or left & set(split.trees):
            return {}
    except _Unsplit:
        return {}
    read = {n for x in lines(backward) for n in x.reads} | {n for r, _ in results for n in line_names(r)}
    adj.backward, adj.results = split.unread(backward, read), [r for r, _ in results]
    return {i: tree for i, (_, tree) in enumerate(results) if tree is not None}


def tree_result(code: str, tree: KnownTree, ev: Evaluator, owned: dict[str, frozenset[str] | None],
                taken: set[str]) -> str:
    """A returned display of leaves (``split_trees``), each in its argument's type, an array
    the caller owns that no other returned leaf is (else a copy); ``taken``: the arrays
    returned so far."""
    def leaf(node: ast.expr, known: Known | KnownTree) -> str:
        if isinstance(known, KnownTree):
            items = node.values if isinstance(node, ast.Dict) else getattr(node, "elts", [])
            return joined(known, [leaf(n, k) for n, k in zip(items, known.items)])  # type: ignore[arg-type]
        text = ast.unparse(node)
        if not known.array:
            value = ev.value(node)
            return text if isinstance(node, ast.Constant) or value is not None and value.kind is float \
                else f"float({text})"
        made = owned.get(text) if isinstance(node, ast.Name) else None
        if made is None or READ_ONLY in made or made & taken:
            return f"{text}.copy()"
        taken.update(made)
        return text
    return leaf(ast.parse(code, mode="eval").body, tree)


def _called(node: ast.expr) -> str:
    return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else ""


def _atomic(code: str) -> bool:
    node = ast.parse(code, mode="eval").body
    return isinstance(node, (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript))


def _mutated(outs: list[Out], spelled: dict[str, str], where: dict[int, Where]) -> dict[str, list[Where]]:
    """Names the backward code updates in place (``a += b``, ``a[i] = b``, ``add_at(a, ...)``,
    ``mul_into(g, a)``), and where."""
    found: dict[str, list[Where]] = {}
    for x in lines(outs):
        for node in ast.walk(parsed_line(x.code) if isinstance(x, Line) else ast.Module([], [])):
            names: list[ast.expr] = []
            if isinstance(node, ast.AugAssign):
                names = [node.target]
            elif isinstance(node, ast.Assign):
                names = [t.value for t in node.targets if isinstance(t, ast.Subscript)]
            elif isinstance(node, ast.Call) and _called(node) in spelled and len(node.args) > 1:
                names = [node.args[1 if spelled[_called(node)] == "mul_into" else 0]]
            for n in names:
                if isinstance(n, ast.Name):
                    found.setdefault(n.id, []).append(where[id(x)])
    return found


def _places(outs: list[Out]) -> dict[int, Where]:
    """Where each line and block of ``outs`` is (by id)."""
    where: dict[int, Where] = {}
    for top, outer in enumerate(outs):
        for x in lines([outer]):
            where[id(x)] = (len(where), top)
    return where


def _before(mutation: Where, line: Where) -> bool:
    """Whether an update in place at ``mutation`` is done before ``line`` runs and never
    after it: earlier, and not in a block (a loop) that holds the line too."""
    return mutation[0] < line[0] and mutation[1] != line[1]


def _names(x: Out) -> frozenset[str]:
    return line_names(x.code) if isinstance(x, Line) else x.reads


def tree_sum(ev: Evaluator, adj: Adjoint, args: list[ast.expr], texts: list[str]) -> str | None:
    """``add_grads(a, b)`` of two gradients of one known dict, list or tuple of arrays (a
    callee's, say), leaf by leaf as a comprehension; None otherwise."""
    if len(args) != 2:
        return None
    a, b = (ev.known(x) for x in args)
    if not (isinstance(a, KnownTree) and a == b and all(isinstance(i, Known) for i in a.items)):
        return None
    u, v = adj.fn.fresh("u"), adj.fn.fresh("v")
    adj.fn.names.update((u, v))
    left, right = (t if atomic(t) else f"({t})" for t in texts)
    if a.kind is dict:
        return f"{{{u}: {left}[{u}] + {right}[{u}] for {u} in {left}}}"
    pairs = f"{u} + {v} for {u}, {v} in zip({left}, {right})"
    return f"[{pairs}]" if a.kind is list else f"tuple({pairs})"


def tree_known(ev: Evaluator, args: list[ast.expr]) -> KnownTree | None:
    """What ``add_grads(a, b)`` of two such gradients is: the tree."""
    a, b = (ev.known(x) for x in args) if len(args) == 2 else (None, None)
    return a if isinstance(a, KnownTree) and a == b else None



def without_passing_checks(stmts: list[Stmt], fn: Function, ev: Evaluator) -> list[Stmt]:
    """``stmts`` without the run-time checks the known values pass (nested statements too):
    ``check_sequence(xs)`` of loops over a value known to be a list, a tuple or an array, and
    ``check_shared_item(c, ...)`` of ``c[k] += v`` and ``check_slice_length(c, ...)`` of ``c[i:j] = v``
    on a ``c`` known to be an array."""
    kept: list[Stmt] = []
    for s in stmts:
        if isinstance(s, If):
            s.body, s.orelse = (without_passing_checks(s.body, fn, ev), without_passing_checks(s.orelse, fn, ev))
        elif isinstance(s, Loop):
            s.body = without_passing_checks(s.body, fn, ev)
        elif isinstance(s, Assign) and isinstance(s.value, Opaque) and _check_passes(s.value.node, fn, ev):
            continue
        kept.append(s)
    return kept


def _check_passes(node: cst.BaseExpression, fn: Function, ev: Evaluator) -> bool:
    """Whether ``node`` is ``check_sequence(xs)`` of an ``xs`` known to be a list, a tuple or an
    array, or ``check_shared_item(c, ...)`` or ``check_slice_length(c, ...)`` of a ``c`` known to be
    no list, tuple or dict."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.args):
        return False
    check = fn.free.get(node.func.value)
    if check is not check_sequence and check is not check_shared_item and check is not check_slice_length:
        return False
    known = ev.known(ast.parse(expression_code(node.args[0].value), mode="eval").body)
    if check is not check_sequence:
        return isinstance(known, Known)
    return len(node.args) == 1 and (isinstance(known, KnownTree) and known.kind is not dict or isinstance(
        known, Known) and (known.array or known.kind is tuple))
