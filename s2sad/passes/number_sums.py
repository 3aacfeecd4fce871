"""A number's gradient written as one expression, as a person writes it (specialised code).

``dx = -a`` followed by ``dx += b`` and ``dx += c`` (one source line's contributions, each
a line of its own) becomes ``dx = b + c - a`` when ``dx`` is known to be a number: a number
is immutable, so ``dx += b`` is ``dx = dx + b``, and the sum saves NumPy a negation and a
call per term.  In a product of numbers, Python numbers are multiplied first
(``g * 2 * x`` is ``2 * x * g`` for a Python float ``x``): Python multiplies them without
NumPy's overhead.  Arrays are left alone (``+=`` keeps their dtype and updates in place).
"""
from __future__ import annotations

import ast
from dataclasses import replace

import numpy as np

from ..rules.shapes import Known
from .adjoint import Adjoint, Block, Line, Out
from .parsed_lines import Spans, parsed_line
from .shapes import Shapes

# terms written without parentheses in a sum (their operators bind tighter than + and -)
_TIGHT = (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript, ast.UnaryOp)
_DOUBLE = (np.dtype(np.float64), np.dtype(np.complex128))
_PRODUCT_OPS = (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.MatMult, ast.Pow)


def sum_numbers(adj: Adjoint, shapes: Shapes) -> None:
    """Merge each number's adjacent accumulations in ``adj``'s backward lines."""
    adj.backward = _merged(adj.backward, shapes)


def _merged(outs: list[Out], shapes: Shapes) -> list[Out]:
    out: list[Out] = []
    for x in outs:
        if isinstance(x, Block):
            x.body, x.orelse = _merged(x.body, shapes), _merged(x.orelse, shapes)
        elif isinstance(x, Line) and (found := _into(out, x, shapes)) is not None:
            out[found[0]] = found[1]
            continue
        elif isinstance(x, Line):
            x = _tidied(x, shapes)
        out.append(x)
    return out


def _tidied(x: Line, shapes: Shapes) -> Line:
    """``d = e`` or ``d += e`` for a number ``d`` with its sum written as :func:`_sum` writes
    it: ``d = -1.0 * a`` is ``d = -a``, ``d += -a`` is ``d -= a``."""
    node = _statement(x.code)
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, operator = node.targets[0], "="
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
        target, operator = node.target, "+=" if isinstance(node.op, ast.Add) else "-="
    else:
        return x
    if not (isinstance(target, ast.Name) and _number(shapes.known.get(target.id))):
        return x
    terms = _terms(node.value, Spans(x.code), shapes)
    if len(terms) == 1 and terms[0][0]:
        return x  # (one term: nothing to tidy but its parentheses, which may be needed)
    if operator != "=" and not any(positive for positive, _ in terms):
        operator, terms = "-=" if operator == "+=" else "+=", [(True, text) for _, text in terms]
    code = f"{target.id} {operator} {_sum(terms)}"
    return x if code == x.code else replace(x, code=code)


def _into(out: list[Out], then: Line, shapes: Shapes) -> tuple[int, Line] | None:
    """Where ``then`` (``d += t``) merges into an earlier line ``d = e`` of ``out``, and the
    merged line: the lines between are plain assignments of the same source line that do
    not touch ``d`` nor assign what ``t`` reads."""
    tail = _statement(then.code)
    if not (isinstance(tail, ast.AugAssign) and isinstance(tail.target, ast.Name)
            and isinstance(tail.op, (ast.Add, ast.Sub))):
        return None
    name = tail.target.id
    between: set[str] = set()
    for i in range(len(out) - 1, -1, -1):
        first = out[i]
        if not isinstance(first, Line) or first.group != then.group:
            return None
        head = _statement(first.code)
        if not (isinstance(head, ast.Assign) and all(isinstance(t, ast.Name) for t in head.targets)):
            return None
        targets = {t.id for t in head.targets}  # type: ignore[attr-defined]
        if targets == {name}:
            merged = _added(first, head, then, tail, shapes)
            return None if merged is None or between & then.reads else (i, merged)
        if name in targets or name in first.reads:
            return None
        between |= targets
    return None


def _added(first: Line, head: ast.Assign, then: Line, tail: ast.AugAssign, shapes: Shapes) -> Line | None:
    """``first`` (``d = e``) and ``then`` (``d += t`` or ``d -= t``) as one line, for a number
    ``d``; None where they do not merge."""
    name = tail.target.id  # type: ignore[attr-defined]
    if not _number(shapes.known.get(name)) or name in _names(tail.value):
        return None
    terms = _terms(head.value, Spans(first.code), shapes) + [
        (sign if isinstance(tail.op, ast.Add) else not sign, text)
        for sign, text in _terms(tail.value, Spans(then.code), shapes)]
    code = f"{name} = {_sum(terms)}"
    return replace(first, code=code, reads=first.reads | (then.reads - {name}))


def _statement(code: str) -> ast.stmt | None:
    try:
        body = parsed_line(code).body
    except SyntaxError:
        return None
    return body[0] if len(body) == 1 else None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _number(known: Known | None) -> bool:
    return known is not None and (known.kind in (float, int, complex) or issubclass(known.kind, np.number)
                                  or known.weak_or_strong)


def _terms(node: ast.expr, spans: Spans, shapes: Shapes) -> list[tuple[bool, str]]:
    """The terms of a sum, each (positive, text): a - b is [(True, a), (False, b)]."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        added = isinstance(node.op, ast.Add)
        return _terms(node.left, spans, shapes) + [(sign == added, text)
                                                   for sign, text in _terms(node.right, spans, shapes)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return [(not sign, text) for sign, text in _terms(node.operand, spans, shapes)]
    return [_product(node, spans, shapes)]


def _product(node: ast.expr, spans: Spans, shapes: Shapes) -> tuple[bool, str]:
    """A term as (positive, text): a product of numbers with its sign taken out (``-a * b``,
    ``-1.0 * b``), a factor 1.0 left out, and its Python numbers first."""
    factors: list[ast.expr] = []
    chain = node
    while isinstance(chain, ast.BinOp) and isinstance(chain.op, ast.Mult):
        factors.insert(0, chain.right)
        chain = chain.left
    factors.insert(0, chain)
    values = [_value(f, shapes) for f in factors]
    if len(factors) == 1 or not all(_number(v) for v in values):
        tight = isinstance(node, _TIGHT) or isinstance(node, ast.BinOp) and isinstance(node.op, _PRODUCT_OPS)
        return True, spans.text(node) if tight else f"({spans.text(node)})"
    positive = True
    if isinstance(factors[0], ast.UnaryOp) and isinstance(factors[0].op, ast.USub):
        positive, factors[0] = False, factors[0].operand
    # (a product of double-precision numbers has their type in any order, 1.0 or not: in
    # NumPy 1's promotion, 1.0 * a float32 scalar is a float64)
    if _one(factors[0]) and all(v.dtype in _DOUBLE and v.kind is not int
                                for v in values[1:]):  # type: ignore[union-attr]
        factors, values = factors[1:], values[1:]
    python = [f for f, v in zip(factors, values) if v.python]  # type: ignore[union-attr]
    if len(python) > 1 and all(v.python or v.dtype in _DOUBLE for v in values):  # type: ignore[union-attr]
        factors = python + [f for f in factors if all(f is not p for p in python)]
    return positive, " * ".join(_factor(f, spans) for f in factors)


def _one(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is float and node.value == 1.0


def _factor(node: ast.expr, spans: Spans) -> str:
    if isinstance(node, _TIGHT) or isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return spans.text(node)
    return f"({spans.text(node)})"


def _value(node: ast.expr, shapes: Shapes) -> Known | None:
    try:
        return shapes.evaluator.value(node)
    except (ValueError, TypeError):
        return None


def _sum(terms: list[tuple[bool, str]]) -> str:
    """``a + b - c`` of the terms, the positive ones first."""
    ordered = [t for t in terms if t[0]] + [t for t in terms if not t[0]]
    first_sign, first = ordered[0]
    text = first if first_sign else f"-{first}"
    for sign, term in ordered[1:]:
        text += f" + {term}" if sign else f" - {term}"
    return text
