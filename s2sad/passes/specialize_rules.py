"""Specialised forms of rules' helpers: the gradients of products of stacked matrices
(``matmul_grad_lhs``/``_rhs`` of 3-d operands), where a maximum's or minimum's operand
won (``balanced_eq``), the gradient and tangent of ``x.T`` on what may be a record
(``attribute_grad``, ``attribute_tangent``) of a real array, and an item's gradient added
to what may be a container's (``added_at``) of an array, as the NumPy a person writes
(see passes/specialize.py)."""
from __future__ import annotations

import ast

import numpy as np

from typing import Callable

from ..rules.shapes import Known, KnownTree, broadcast_shapes, matmul_shape
from .fold import atomic
from .shapes import Evaluator
from .specialize_containers import tree_known


def ambiguous(g: Known, x: Known) -> bool:
    """Whether the dtype of ``g`` spread over ``x`` depends on g being a float or a float64."""
    return g.weak_or_strong and x.dtype != np.float64


def getitem_grad_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    """``getitem_grad(g, x, index)``: zeros shaped like x, of g's and x's dtype, with g at index."""
    if len(args) != 3:
        return None
    g, x = ev.value(args[0]), ev.value(args[1])
    if g is None or x is None or not (x.array and x.real and g.real) or ambiguous(g, x):
        return None
    return Known(x.shape, np.result_type(g.probe(), np.zeros((), x.dtype)), np.ndarray)


def added_at_known(ev: Evaluator, args: list[ast.expr]) -> Known | KnownTree | None:
    """``added_at(acc, x, index, g)``: the gradient of the container x; of an array x, the sum
    of acc and ``getitem_grad(g, x, index)``."""
    if len(args) != 4:
        return None
    tree = tree_known(ev, args[:2])
    scattered, acc = getitem_grad_known(ev, [args[3], args[1], args[2]]), ev.value(args[0])
    if tree is not None or scattered is None or acc is None or not acc.array or acc.shape != scattered.shape:
        return tree
    return Known(acc.shape, np.result_type(acc.probe(), scattered.probe()), np.ndarray)


def added_at(ev: Evaluator, args: list[ast.expr], texts: list[str], use: Callable[[str], str]) -> str | None:
    """``added_at(acc, x, index, g)`` of a known array x: ``acc + getitem_grad(g, x, index)``."""
    if not isinstance(added_at_known(ev, args), Known):
        return None
    acc = texts[0] if atomic(texts[0]) else f"({texts[0]})"
    return f"{acc} + {use('getitem_grad')}({texts[3]}, {texts[1]}, {texts[2]})"


def summed_axes(g: tuple[int, ...], x: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The axes of ``g`` to sum to get back shape ``x``: leading ones, and ones x has as 1."""
    extra = len(g) - len(x)
    if extra < 0 or any(m != n and m != 1 for m, n in zip(x, g[extra:])):
        return None
    return tuple(range(extra)), tuple(i for i, (m, n) in enumerate(zip(x, g[extra:])) if m == 1 and n != 1)


def axes_text(axes: tuple[int, ...]) -> str:
    return str(axes[0]) if len(axes) == 1 else str(axes)


def stacked_product(g: Known | None, a: Known | None, b: Known | None) -> bool:
    """``a @ b`` of stacks of real matrices of one dtype (broadcast batch axes), whose gradient is ``g``."""
    if g is None or a is None or b is None or not (a.array and b.array and a.real and b.real):
        return False
    return (a.dtype == b.dtype == g.dtype and min(len(a.shape), len(b.shape)) >= 2
            and max(len(a.shape), len(b.shape)) >= 3 and matmul_shape(a.shape, b.shape) == g.shape)


def stacked_grad(position: int, g: Known, a: Known, b: Known, texts: list[str]) -> str:
    """``g @ b.swapaxes(-1, -2)`` (or ``a.swapaxes(-1, -2) @ g``), summed over the batch axes
    the operand was broadcast along."""
    gt, at, bt = (t if atomic(t) else f"({t})" for t in texts)
    code, made, x = (f"({gt} @ {bt}.swapaxes(-1, -2))", matmul_shape(g.shape, (*b.shape[:-2], b.shape[-1], b.shape[-2])), a) \
        if position == 1 else (f"({at}.swapaxes(-1, -2) @ {gt})", matmul_shape((*a.shape[:-2], a.shape[-1], a.shape[-2]), g.shape), b)
    assert made is not None
    axes = summed_axes(made, x.shape)
    assert axes is not None
    leading, ones = axes
    if not leading + ones:
        return code[1:-1]
    if leading:
        code += f".sum(axis={axes_text(leading)})"
    if ones:
        code += f".sum(axis={axes_text(ones)}, keepdims=True)"
    return code


def balanced_eq_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    if len(args) != 3:
        return None
    x, ans, y = (ev.value(a) for a in args)
    if x is None or ans is None or y is None or not x.array or not x.real or "c" in (ans.dtype.kind + y.dtype.kind):
        return None
    shape = broadcast_shapes([x.shape, ans.shape, y.shape])
    if shape is None:
        return None
    return Known(shape, np.result_type(x.probe(), y.probe()), np.ndarray)


def balanced_eq(ev: Evaluator, args: list[ast.expr], texts: list[str]) -> str | None:
    """Where x made a maximum or minimum: ``(x == ans) / (1.0 + (x == y))`` in float64 (a
    tie shares the gradient)."""
    known = balanced_eq_known(ev, args)
    if known is None or known.dtype != np.float64:
        return None
    x, ans, y = (t if atomic(t) else f"({t})" for t in texts)
    return f"({x} == {ans}) / (1.0 + ({x} == {y}))"


#: The gradient of ``x.name`` on a real array x, for ``attribute_grad(g, x, name, where)``.
_ARRAY_ATTRIBUTE_GRADS = {"T": "{np}.transpose({g})", "mT": "{np}.swapaxes({g}, -1, -2)", "real": "{g}"}


def attribute_grad_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    if len(args) != 4 or not isinstance(args[2], ast.Constant) or args[2].value not in _ARRAY_ATTRIBUTE_GRADS:
        return None
    g, x = ev.value(args[0]), ev.value(args[1])
    if g is None or x is None or not (x.array and x.real and g.real) or (g.array and len(x.shape) != len(g.shape)):
        return None
    return Known(x.shape, g.dtype, np.ndarray) if g.array else g


def attribute_grad(ev: Evaluator, args: list[ast.expr], texts: list[str], np_name: str) -> str | None:
    """``np.transpose(g)`` (the rule of ``.T``) where ``x`` is known to be a real array."""
    if attribute_grad_known(ev, args) is None:
        return None
    assert isinstance(args[2], ast.Constant)
    return _ARRAY_ATTRIBUTE_GRADS[str(args[2].value)].format(np=np_name, g=texts[0])


def _attribute_of_array(ev: Evaluator, args: list[ast.expr]) -> tuple[str, Known] | None:
    """``(name, t)`` for ``attribute_tangent(t, x, name, where)`` of a real array x and a real t
    shaped like it."""
    if len(args) != 4 or not isinstance(args[2], ast.Constant) or args[2].value not in _ARRAY_ATTRIBUTE_GRADS:
        return None
    t, x = ev.value(args[0]), ev.value(args[1])
    if t is None or x is None or not (x.array and t.array and x.real and t.real) or t.shape != x.shape:
        return None
    return args[2].value, t


def attribute_tangent_known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
    found = _attribute_of_array(ev, args)
    if found is None:
        return None
    name, t = found
    if name == "mT" and len(t.shape) < 2:
        return None
    shape = t.shape[::-1] if name == "T" else (*t.shape[:-2], t.shape[-1], t.shape[-2]) if name == "mT" else t.shape
    return Known(shape, t.dtype, np.ndarray)


def attribute_tangent(ev: Evaluator, args: list[ast.expr], texts: list[str]) -> str | None:
    """``t.T`` (the tangent of ``x.T``) where ``x`` and ``t`` are known to be real arrays."""
    if attribute_tangent_known(ev, args) is None:
        return None
    name = args[2].value  # type: ignore[attr-defined]
    return texts[0] if name == "real" else f"{texts[0] if atomic(texts[0]) else '(' + texts[0] + ')'}.{name}"
