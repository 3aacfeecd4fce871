"""Gradient code specialised to one call's argument shapes and dtypes.

Where the shape analysis (passes/shapes.py) knows the operands, a runtime helper of the
backward pass is replaced by the NumPy a person would write: ``unbroadcast(g, b)`` by
``g.sum(axis=0)`` (or by ``g`` when nothing was broadcast), ``matmul_grad_rhs(g, X, W)`` by
``X.T.dot(g)``, a mean's gradient by ``np.full(shape, g / n)``; the seed becomes ``1.0``, the
argument checks go (the entry guard of the specialised code checks the types), and gradients
the code made itself are returned as they are.  Where a shape is not known, the helper stays.
The backward lines keep reading what they read before, less what the helper read only for
its shape, so the tape and stand-ins that only served shapes go too.
"""
from __future__ import annotations

import ast
from collections import Counter
from dataclasses import replace
from typing import Any, Callable, Optional

import numpy as np

from ..ir import Assign, Loop, Raw, Stmt, statements
from ..rules.shapes import NEW_ARRAY_FUNCTIONS, NEW_ARRAY_METHODS, TANGENT, FloatScalar, Known, KnownTree, matmul_shape
from .adjoint import FRESH_HELPERS, Adjoint, Block, Out
from .batch import batch_loops
from .fold import atomic, drop_copies, fold_constants
from .number_sums import sum_numbers
from .parsed_lines import Spans, line_names, parsed_line, rename
from .shapes import READ_ONLY, Evaluator, Helper, Shapes, analyze, assignment_targets, code_statements, origins
from .specialize_rules import (added_at, added_at_known, ambiguous, attribute_grad, attribute_grad_known,
                               attribute_tangent, attribute_tangent_known, axes_text, balanced_eq, balanced_eq_known,
                               getitem_grad_known, stacked_grad, stacked_product, summed_axes)
from .unstop import unstop
from .specialize_callees import CalleeSpecializer
from .specialize_containers import (checked, describe, split_trees, tree_known, tree_result, tree_sum, tree_zeros,
                                    without_passing_checks)

Rewrite = Callable[["_Writer", list[ast.expr], list[str]], Optional[str]]

# what a helper returns, from its arguments' kinds (None: not known)


_FLOATS = (float, np.float64, FloatScalar)  # (unbroadcast returns g for a number g of a number x)


def _unbroadcast_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    if len(args) != 2:
        return None
    g, x = ev.value(args[0]), ev.value(args[1])
    if g is None or x is None or not (g.real and x.real):
        return None
    if x.array and g.array and g.dtype == x.dtype and summed_axes(g.shape, x.shape) is not None:
        return x
    if x.kind in _FLOATS and g.kind in _FLOATS:
        return g
    if x.kind in _FLOATS and g.array and g.dtype == np.float64:
        return Known((), g.dtype, np.float64)  # (summed to a number: g.sum())
    return None


def _reduction_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    """``reduce_grad(g, x, ...)``, ``mean_grad``: g spread over x's shape, in x's dtype for a
    Python number g, else in g's."""
    if len(args) < 2:
        return None
    g, x = ev.value(args[0]), ev.value(args[1])
    if g is None or x is None or not (x.array and x.real and g.real) or ambiguous(g, x):
        return None
    return Known(x.shape, x.dtype if g.python else g.dtype, np.ndarray)


def _matmul_known(position: int) -> Helper:
    def known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
        if len(args) != 3:
            return None
        g, a, b = (ev.value(x) for x in args)
        if not (_plain_product(g, a, b) or stacked_product(g, a, b)):
            return None
        return a if position == 1 else b
    return known


def _zeros_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    x = ev.value(args[0]) if args else None
    return x if x is not None and x.real and (x.array or x.kind is float) else None


def _seed_for_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    values = [ev.value(a) for a in args]
    if all(v is not None and v.dtype.kind in "iuf" for v in values):
        return Known((), np.dtype(np.float64), float)
    return None


def _seed_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    v = ev.value(args[0]) if len(args) == 1 else None
    if v is not None and v.kind is np.float64 and not v.shape:
        return Known((), np.dtype(np.float64), float)  # written 1.0: a float (a np.float64 x's gradient was one)
    return v if v is not None and not v.shape and v.kind in (float, FloatScalar) else None


def _grad_like_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    x = ev.value(args[1]) if len(args) == 2 else None
    return x if x is not None and x.real and (x.array or x.kind is float) else None


def _add_grads_known(ev: Evaluator, args: list[ast.expr]) -> Known | KnownTree | None:
    """``add_grads(a, b)`` of two values that are no containers: ``a + b``; of two gradients
    of one container: that container."""
    return tree_known(ev, args) or (ev.value(ast.BinOp(args[0], ast.Add(), args[1])) if len(args) == 2 else None)


def _reshape_back_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    """``reshape_back(g, a, order)``: g in a's shape (order "A" follows a's layout: not known)."""
    g, a = (ev.value(x) for x in args[:2]) if len(args) == 3 else (None, None)
    order = ev.keyword(args[2]) if len(args) == 3 else None
    if g is None or a is None or not (g.array and a.array) or order not in ("C", "F") or \
            int(np.prod(g.shape)) != int(np.prod(a.shape)):
        return None
    return Known(a.shape, g.dtype, np.ndarray)


HELPERS: dict[str, Helper] = {
    "unbroadcast": _unbroadcast_known, "reduce_grad": _reduction_known, "mean_grad": _reduction_known,
    "matmul_grad_lhs": _matmul_known(1), "matmul_grad_rhs": _matmul_known(2),
    "zeros_grad": _zeros_known, "seed_for": _seed_for_known, "seed": _seed_known,
    "grad_like": _grad_like_known, "getitem_grad": getitem_grad_known, "added_at": added_at_known, "balanced_eq": balanced_eq_known,
    "add_grads": _add_grads_known, "reshape_back": _reshape_back_known, "attribute_grad": attribute_grad_known}


def _plain_product(g: Known | None, a: Known | None, b: Known | None) -> bool:
    """``a @ b`` of real matrices or vectors of one dtype, whose gradient is ``g``."""
    if g is None or a is None or b is None or not (a.array and b.array and a.real and b.real):
        return False
    return (a.dtype == b.dtype == g.dtype and 1 <= len(a.shape) <= 2 and 1 <= len(b.shape) <= 2
            and matmul_shape(a.shape, b.shape) == g.shape)


class _Writer:
    """Rewrites helper calls of one function's backward code."""

    def __init__(self, adj: Adjoint, shapes: Shapes, rewrites: dict[str, Rewrite] | None = None) -> None:
        self.adj = adj
        self.shapes = shapes
        self.np = adj.use("np")
        self.rewrites = {adj.runtime[name]: rewrite for name, rewrite in (rewrites or REWRITES).items()
                         if name in adj.runtime}

    def value(self, node: ast.expr) -> Known | None:
        return self.shapes.evaluator.value(node)

    def code(self, code: str) -> str:
        """``code`` (statements) with every helper call that can be specialised replaced."""
        code = self._branches(code)
        spans = Spans(code)
        edits: list[tuple[int, int, str]] = []
        for node, whole in self._calls(parsed_line(code)):
            assert isinstance(node.func, ast.Name)
            texts = [self.code(spans.text(a)) if self._rewritable(a) else spans.text(a)
                     for a in node.args]  # (a helper's arguments first)
            new = self.rewrites[node.func.id](self, node.args, texts)
            if new is None:
                edits += [(*spans.span(a), t) for a, t in zip(node.args, texts) if t != spans.text(a)]
                continue
            edits.append((*spans.span(node), new if whole or atomic(new) else f"({new})"))
        return spans.replaced(edits)

    def _rewritable(self, node: ast.expr) -> bool:
        """Whether ``node`` holds a call of a helper this can rewrite, or a rule's branches."""
        return any(isinstance(n, ast.IfExp) or isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                   and n.func.id in self.rewrites for n in ast.walk(node))

    def _branches(self, code: str) -> str:
        """``code`` with each ``a if np.isrealobj(x) else b`` of a rule's, whose ``x`` is known
        real or complex, as its branch."""
        if " if " not in code:
            return code
        spans = Spans(code)
        edits: list[tuple[int, int, str]] = []
        tree = ast.parse(code)
        whole = {id(n.value) for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign))}
        for node in ast.walk(tree):
            if not isinstance(node, ast.IfExp) or (real := self.shapes.evaluator.realness(node.test)) is None:
                continue
            start, end = spans.span(node)
            if any(s <= start and end <= e for s, e, _ in edits):
                continue
            text = spans.text(node.body if real else node.orelse)
            edits.append((start, end, text if atomic(text) or id(node) in whole else f"({text})"))
        return spans.replaced(edits)

    def _calls(self, tree: ast.AST) -> list[tuple[ast.Call, bool]]:
        """The outermost calls of helpers this can rewrite, and whether each is a whole
        statement's value (no parentheses needed)."""
        found: list[tuple[ast.Call, bool]] = []

        def visit(node: ast.AST, whole: bool) -> None:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.rewrites \
                    and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
                found.append((node, whole))
                return
            for child in ast.iter_child_nodes(node):
                visit(child, isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr, ast.Module))
                      and child is getattr(node, "value", None) or isinstance(node, ast.Module))
        visit(tree, True)
        return found


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return _Unknown


class _Unknown:
    """A helper argument that is not a literal."""


def _dtype_argument(w: _Writer, dtype: np.dtype) -> str:
    return "" if dtype == np.float64 else f", dtype={w.np}.{dtype.name}"


def _unbroadcast(w: _Writer, args: list[ast.expr], texts: list[str]) -> str | None:
    if _unbroadcast_known(w.shapes.evaluator, args) is None:
        return None
    g, x = w.value(args[0]), w.value(args[1])
    assert g is not None and x is not None
    if not x.array:
        return f"{texts[0] if atomic(texts[0]) else f'({texts[0]})'}.sum()" if g.array else texts[0]
    axes = summed_axes(g.shape, x.shape)
    assert axes is not None
    leading, ones = axes
    code = texts[0] if atomic(texts[0]) or not leading + ones else f"({texts[0]})"
    if leading:
        code += f".sum(axis={axes_text(leading)})"
    if ones:
        code += f".sum(axis={axes_text(ones)}, keepdims=True)"
    return code


def _reduce_grad(w: _Writer, args: list[ast.expr], texts: list[str], mean: bool = False) -> str | None:
    if len(args) != 4:
        return None
    g, x = w.value(args[0]), w.value(args[1])
    axis, keepdims = _literal(texts[2]), _literal(texts[3])
    if g is None or x is None or not (x.array and x.real and g.real and x.shape) or type(keepdims) is not bool \
            or ambiguous(g, x):
        return None
    ndim = len(x.shape)
    if axis is None:
        axes: tuple[int, ...] = tuple(range(ndim))
    elif type(axis) is int or isinstance(axis, tuple) and all(type(a) is int for a in axis):
        items = axis if isinstance(axis, tuple) else (axis,)
        if not all(-ndim <= a < ndim for a in items):
            return None
        axes = tuple(sorted({a % ndim for a in items}))
    else:
        return None
    reduced = tuple(1 if i in axes else n for i, n in enumerate(x.shape)) if keepdims else tuple(
        n for i, n in enumerate(x.shape) if i not in axes)
    if g.shape != reduced and not (axis is None and not g.shape):
        return None
    value = texts[0]
    if mean:
        count = int(np.prod([x.shape[i] for i in axes]))
        value = f"{value if atomic(value) else '(' + value + ')'} / {count}"
    # as reduce_grad: a read-only view of a large array with long rows, else a new array
    view = int(np.prod(x.shape)) >= 4096 and (axis is None or x.shape[-1] >= 64)
    if not g.shape:
        dtype = x.dtype if g.python else g.dtype
        if view and dtype == np.result_type(g.probe()):
            return f"{w.np}.broadcast_to({value}, {x.shape})"
        return f"{w.np}.full({x.shape}, {value}{_dtype_argument(w, dtype)})"
    if not keepdims and axis is not None:
        value = f"{w.np}.expand_dims({value}, {axes_text(axes)})"
    return f"{w.np}.broadcast_to({value}, {x.shape})" + ("" if view else ".copy()")


def _getitem_grad(w: _Writer, args: list[ast.expr], texts: list[str]) -> str | None:
    """The gradient of ``x[None, :, :]`` (new axes and whole slices): g in x's shape."""
    if getitem_grad_known(w.shapes.evaluator, args) is None:
        return None
    index = args[2].elts if isinstance(args[2], ast.Tuple) else [args[2]]
    whole = all(isinstance(i, ast.Constant) and i.value is None or isinstance(i, ast.Call)
                and isinstance(i.func, ast.Name) and i.func.id == "slice" and not i.keywords
                and len(i.args) <= 1 and all(isinstance(a, ast.Constant) and a.value is None for a in i.args)
                for i in index)
    g, x = w.value(args[0]), w.value(args[1])
    if not whole or g is None or x is None or g.dtype != x.dtype or int(np.prod(g.shape)) != int(np.prod(x.shape)):
        return None
    if not x.shape:  # a number's .reshape(()) is a number: the gradient of a 0-d array is one
        return f"{w.np}.array({texts[0]})"
    code = f"{texts[0] if atomic(texts[0]) else '(' + texts[0] + ')'}.reshape({x.shape})"
    return code if isinstance(args[0], (ast.BinOp, ast.UnaryOp)) else code + ".copy()"


def _reshape_back(w: _Writer, args: list[ast.expr], texts: list[str]) -> str | None:
    known = _reshape_back_known(w.shapes.evaluator, args)
    if known is None:
        return None
    order = "" if _literal(texts[2]) == "C" else ", order='F'"
    return f"{texts[0] if atomic(texts[0]) else '(' + texts[0] + ')'}.reshape({known.shape}{order})"


def _matmul_grad(position: int) -> Rewrite:
    def rewrite(w: _Writer, args: list[ast.expr], texts: list[str]) -> str | None:
        if len(args) != 3:
            return None
        g, a, b = (w.value(x) for x in args)
        if stacked_product(g, a, b):
            assert g is not None and a is not None and b is not None
            return stacked_grad(position, g, a, b, texts)
        if not _plain_product(g, a, b):
            return None
        assert a is not None and b is not None
        gt, at, bt = (t if atomic(t) else f"({t})" for t in texts)
        vector_a, vector_b = len(a.shape) == 1, len(b.shape) == 1
        # (ndarray.dot: matmul for these ranks, with a fraction of @'s cost on small arrays)
        if position == 1:  # d/da of a @ b
            if vector_a:
                return f"{gt} * {bt}" if vector_b else f"{bt}.dot({gt})"
            return f"{gt}[:, None].dot({bt}[None])" if vector_b else f"{gt}.dot({bt}.T)"
        if vector_b:
            return f"{gt} * {at}" if vector_a else f"{gt}.dot({at})"
        return f"{at}[:, None].dot({gt}[None])" if vector_a else f"{at}.T.dot({gt})"
    return rewrite


def _zeros_grad(w: _Writer, args: list[ast.expr], texts: list[str]) -> str | None:
    x = _zeros_known(w.shapes.evaluator, args[:1])
    if x is None:
        return tree_zeros(w.np, w.shapes.evaluator, args[0]) if args else None
    return f"{w.np}.zeros({x.shape}{_dtype_argument(w, x.dtype)})" if x.array else "0.0"


REWRITES: dict[str, Rewrite] = {
    "unbroadcast": _unbroadcast, "reduce_grad": _reduce_grad,
    "mean_grad": lambda w, args, texts: _reduce_grad(w, args, texts, mean=True),
    "matmul_grad_lhs": _matmul_grad(1), "matmul_grad_rhs": _matmul_grad(2),
    "zeros_grad": _zeros_grad, "getitem_grad": _getitem_grad,
    "added_at": lambda w, args, texts: added_at(w.shapes.evaluator, args, texts, w.adj.use), "balanced_eq": lambda w, args, texts: balanced_eq(w.shapes.evaluator, args, texts), "reshape_back": _reshape_back,
    "attribute_grad": lambda w, args, texts: attribute_grad(w.shapes.evaluator, args, texts, w.np),
    "seed_for": lambda w, args, texts: "1.0" if _seed_for_known(w.shapes.evaluator, args) else None,
    "seed": lambda w, args, texts: "1.0" if _seed_known(w.shapes.evaluator, args) else None,
    "add_grads": lambda w, args, texts: tree_sum(w.shapes.evaluator, w.adj, args, texts) or (
        " + ".join(t if atomic(t) else f"({t})" for t in texts) if _add_grads_known(w.shapes.evaluator, args) else None)}


def specialize(adj: Adjoint, arguments: dict[str, Known | None]) -> None:
    """Specialise ``adj`` (before its loops' tapes are decided) to arguments as ``arguments``."""
    if TANGENT in arguments and adj.kind == "split":  # the cotangent its closure is called with
        cotangent = arguments[TANGENT]
        arguments = {p: k for p, k in arguments.items() if p != TANGENT}
        if adj.seed_param is not None:
            arguments[adj.seed_param] = cotangent
    callees = CalleeSpecializer(adj)
    helpers = {adj.runtime[name]: known for name, known in HELPERS.items() if name in adj.runtime}
    shapes = analyze(adj, arguments, {**helpers, **callees.helpers}, callees.tuples, callees.returns)
    callees.settle(shapes)
    adj.specialized_to = _described(arguments)
    writer = _Writer(adj, shapes)
    if adj.split:  # (code made to be differentiated again keeps its stop_gradient calls)
        unstop(adj.forward, adj.fn)
    adj.forward = without_passing_checks(adj.forward, adj.fn, shapes.evaluator)
    trees = split_trees(adj, shapes.evaluator)  # (a dict's gradient: one variable per key)
    adj.backward = _lines(adj.backward, writer)
    if adj.seed:
        seed = writer.code(adj.seed)
        if seed != adj.seed and adj.kind == "grad":
            adj.value_needed = False  # the seed no longer reads the output
        # (a seed that only checked the output, of an output known to pass, goes)
        adj.seed = seed if seed == adj.seed or " = " in seed else None
    while fold_constants(adj, shapes) | drop_copies(adj):
        pass
    batch_loops(adj, shapes)
    sum_numbers(adj, shapes)
    adj.trusted = frozenset(p for p in adj.wrt if checked(arguments.get(p)))
    owned = origins(adj, shapes, lambda node: _making(adj, shapes, node) or callees.makes(node))
    adj.known, adj.owned = shapes.known, owned
    taken: set[str] = set()  # (the arrays of the containers' gradients returned)
    results = [tree_result(r, trees[i], shapes.evaluator, owned, taken) if i in trees else _result(writer, r, owned)
               for i, r in enumerate(adj.results)]
    adj.results = [new or old for new, old in zip(results, adj.results)]
    if any(new is None for new in results):
        return
    for i, r in enumerate(adj.results):
        if i in trees:
            continue
        made = owned.get(r) if r.isidentifier() else frozenset()
        if made is None:
            return
        if made & taken:  # the same array as an earlier gradient's (x and y in np.sum(x + y))
            adj.results[i] = f"{r}.copy()"
        taken |= made
    adj.shared_results = False


def _described(arguments: dict[str, Known | None]) -> str:
    """What the code is specialised to, for its file name: ``W: 64x10 float64, x: float float64``."""
    return ", ".join(f"{p}: {describe(k)}" for p, k in arguments.items() if k is not None)


def _lines(outs: list[Out], writer: _Writer) -> list[Out]:
    out: list[Out] = []
    for x in outs:
        if isinstance(x, Block):
            x.body, x.orelse = _lines(x.body, writer), _lines(x.orelse, writer)
            out.append(x)
            continue
        code = writer.code(x.code)
        if code == x.code:
            out.append(x)
        else:
            out.append(replace(x, code=code, reads=x.reads & line_names(code)))
    return out


def _result(w: _Writer, code: str, owned: dict[str, frozenset[str] | None]) -> str | None:
    """A returned gradient without ``grad_like`` when it is already of its argument's type,
    shape and dtype and the code made it (``zeros_grad`` as zeros); None if it must stay."""
    node = ast.parse(code, mode="eval").body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    args = node.args
    if node.func.id == w.adj.runtime.get("zeros_grad") and len(args) == 1:
        return _zeros_grad(w, args, [code])
    if node.func.id != w.adj.runtime.get("grad_like") or len(args) != 2 or not all(
            isinstance(a, ast.Name) for a in args):
        return None
    g, x = w.value(args[0]), w.value(args[1])
    name = args[0].id  # type: ignore[attr-defined]
    if isinstance(tree := w.shapes.evaluator.known(args[0]), KnownTree) and tree == w.shapes.evaluator.known(args[1]):
        return name if owned.get(name) is not None else None  # (a callee's gradient, or a sum of them)
    if g is None or x is None or not x.real:
        return None
    made = owned.get(name)
    if x.array and g.array and (g.shape, g.dtype) == (x.shape, x.dtype) and made is not None \
            and READ_ONLY not in made:
        return name
    if x.kind is float and g.kind is float:
        return name
    if x.kind is float and g.kind in _FLOATS:
        return f"float({name})"
    if x.kind is np.float64 and g.kind in _FLOATS:
        return name if g.kind is np.float64 else f"np.float64({name})"
    if x.kind is np.float32 and g.kind is np.float32:
        return name
    return None


def _making(adj: Adjoint, shapes: Shapes, node: ast.expr) -> bool:
    """Whether a call makes a new array: NumPy's functions and array methods that do
    (rules/shapes.py), helpers that make their result."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in {adj.runtime[h] for h in FRESH_HELPERS if h in adj.runtime}
    if not isinstance(func, ast.Attribute):
        return False
    owner = shapes.evaluator.callee(func.value)
    if owner is np:
        fun = getattr(np, func.attr, None)
        return isinstance(fun, np.ufunc) or fun in NEW_ARRAY_FUNCTIONS
    return func.attr in NEW_ARRAY_METHODS


# --- forward mode ------------------------------------------------------------------------------

def _broadcast_tangent_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    if len(args) != 2:
        return None
    t, ans = ev.value(args[0]), ev.value(args[1])
    if t is None or ans is None:
        return None
    return t if t.shape == ans.shape else Known(ans.shape, t.dtype, np.ndarray)


def _checked_tangent_known(ev: Evaluator, args: list[ast.expr]) -> Known | KnownTree | None:
    """What ``check_tangent(t, x, name)`` returns: t (a container's as it is), or a number t
    spread over array x's shape."""
    if len(args) == 3 and ev.tree(args[1]) is not None:
        return ev.known(args[0])
    t, x = (ev.value(args[0]), ev.value(args[1])) if len(args) == 3 else (None, None)
    if t is None or x is None or t.shape == x.shape:
        return t
    if t.shape != () or not x.array:
        return None
    number = t.kind(0) if t.python else np.zeros((), t.dtype)[()]
    return Known(x.shape, np.result_type(np.empty(0, x.dtype), number), np.ndarray)


def _broadcast_tangent(w: _Writer, args: list[ast.expr], texts: list[str]) -> str | None:
    known = _broadcast_tangent_known(w.shapes.evaluator, args)
    if known is None:
        return None
    t = w.value(args[0])
    return texts[0] if t is not None and t.shape == known.shape else f"{w.np}.broadcast_to({texts[0]}, {known.shape})"


TANGENT_HELPERS: dict[str, Helper] = {"broadcast_tangent": _broadcast_tangent_known, "zeros_grad": _zeros_known,
                                      "attribute_tangent": attribute_tangent_known,
                                      "check_tangent": _checked_tangent_known}
TANGENT_REWRITES: dict[str, Rewrite] = {"broadcast_tangent": _broadcast_tangent, "zeros_grad": _zeros_grad,
                                        "attribute_tangent": lambda w, args, texts: attribute_tangent(
                                            w.shapes.evaluator, args, texts)}


def specialize_tangents(adj: Adjoint, arguments: dict[str, Known | None]) -> None:
    """Specialise forward-mode code to arguments (and tangent) as ``arguments``: a tangent's
    broadcast is the tangent itself or ``np.broadcast_to``, the checks the entry guard makes
    go, ``stop_gradient(x)`` is ``x``."""
    helpers = {adj.runtime[name]: known for name, known in TANGENT_HELPERS.items() if name in adj.runtime}
    shapes = analyze(adj, arguments, helpers)
    adj.specialized_to = _described(arguments)
    writer = _Writer(adj, shapes, TANGENT_REWRITES)
    unstop(adj.forward, adj.fn)
    adj.forward = [s for s in without_passing_checks(adj.forward, adj.fn, shapes.evaluator)
                   if not _passing_check(writer, s)]
    for s in statements(adj.forward):
        if isinstance(s, Raw):
            code = writer.code(s.code)
            if code != s.code:
                s.code, s.reads = code, s.reads & line_names(code)
    adj.results = [writer.code(r) for r in adj.results]
    _without_tangent_copies(adj)


def _without_tangent_copies(adj: Adjoint) -> None:
    """The tangent copies ``a_dot = b_dot`` of the straight-line code before any branch or
    loop go, where each name is assigned once: ``b_dot``'s statement assigns ``a_dot``
    instead (the first copy's name, the user's where the copied value is a temporary), and the
    code after reads it."""
    count = Counter(name for targets in assignment_targets(adj) for name in targets)
    params = set(adj.fn.params)
    same: dict[str, str] = {}  # name -> the one name its value keeps
    copies: list[Stmt] = []
    tangents: set[str] = set()  # assigned by the tangent statements so far
    for s in adj.forward:
        if not isinstance(s, (Raw, Assign)):
            break
        target, _, value = s.code.partition(" = ") if isinstance(s, Raw) else ("", "", "")
        if target.isidentifier() and value.isidentifier() and value != adj.seed_param \
                and count[target] == 1 and (count[value] == 1 and value in tangents or value in params):
            if value not in same and value not in params:
                same[value] = target
            same[target] = same.get(value, value)
            copies.append(s)
        if isinstance(s, Raw):
            tangents.update(n for targets, _, _ in code_statements(s.code) for n in targets)
    renamed = {a: b for a, b in same.items() if a != b}
    if not renamed:
        return
    adj.forward = [s for s in adj.forward if all(s is not c for c in copies)]
    for s in statements(adj.forward):
        if isinstance(s, Raw):
            s.code = rename(s.code, renamed)
            s.reads = frozenset(renamed.get(n, n) for n in s.reads)
        elif isinstance(s, Loop):
            s.carried = [(c, renamed.get(last, last)) for c, last in s.carried]
    adj.results = [rename(r, renamed) for r in adj.results]


def _passing_check(w: _Writer, s: Stmt) -> bool:
    """Whether ``s`` is a ``t = check_tangent(t, x, name)`` that the known shapes pass (with
    ``t`` unchanged: shaped as ``x``)."""
    check = w.adj.runtime.get("check_tangent")
    if not isinstance(s, Raw) or check is None or f" = {check}(" not in s.code:
        return False
    call = ast.parse(s.code.split(" = ", 1)[1], mode="eval").body
    assert isinstance(call, ast.Call)
    if w.shapes.evaluator.tree(call.args[1]) is not None:
        return True  # (a container's tangents meet its leaves where the code reads them)
    t, x = w.value(call.args[0]), w.value(call.args[1])
    return t is not None and x is not None and t.shape == x.shape
