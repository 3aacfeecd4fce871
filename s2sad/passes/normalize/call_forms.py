"""Calls written in forms their rules do not bind, rewritten as the calls they compute: a ufunc's
keywords that do not change its math (``np.exp(x, dtype=np.float64, out=None)``), ``np.einsum``
of more than four operands (as einsums of at most four), ``math.hypot`` of more than two and
``np.linalg.qr(a, mode='r')`` (R of the reduced factorization); and which ``np.piecewise`` calls
are step functions (constant pieces)."""
from __future__ import annotations

import ast
import math
from typing import Any

import libcst as cst
import numpy as np

from ...ir import Operand
from ..resolve import MISSING, Resolution
from .syntax import EMPTY_MODULE, strip_parens, walk

#: A ufunc's keywords that choose how its result is checked or laid out, not what it is.
_LAYOUT = ("casting", "order", "subok")
#: ``np.clip``'s inputs passed by keyword (cast, as its positional inputs, by ``dtype=``).
_CLIP_BOUNDS = ("a_min", "a_max", "min", "max")
#: The operands ``np.einsum``'s rule binds, each of which may carry a gradient.
_EINSUM_OPERANDS = 4


class CallForms:
    """Rewrites the forms of calls above (the mixin of :class:`Normalizer` that does)."""

    def formed(self, node: cst.Call, target: str | None) -> Operand | None:
        """``node`` lowered as the call its rule binds, if it is written in another form."""
        called = self.res.object(node.func)
        spread = node.with_changes(args=[each for a in node.args for each in self.unstar(a, keep=True)]) if any(
            a.star for a in node.args) else node  # math.hypot(*[a, b, c])
        if any(a.star for a in spread.args) or called is MISSING:
            return None
        formed = self.call_form(spread, called)
        if formed is spread:
            return None
        for made in walk(formed):  # (the calls made here report where the call stands)
            if isinstance(made, (cst.Call, cst.Subscript)) and not _placed(self.parsed, made):
                self.stand_ins.setdefault(made, self.stand_ins.get(node, node))
        return self.lower(formed, target)

    def call_form(self, node: cst.Call, called: Any) -> cst.BaseExpression:
        """``node``, a call of ``called``, as a call its rule binds (or an item of one), or
        ``node`` itself."""
        rule = self.registry.rule(called)
        if (isinstance(called, np.ufunc) or called is np.clip) and rule is not None:
            return self.ufunc_keywords(node, getattr(called, "nin", 3))
        if rule is not None and not any(p.name == "out" for p in rule.params) and any(
                a.keyword is not None and a.keyword.value == "out" and _is(a.value, "None") for a in node.args):
            return node.with_changes(args=_commas([a for a in node.args if not (  # np.dot(a, b, out=None)
                a.keyword is not None and a.keyword.value == "out")]))
        if called is math.hypot and len(node.args) == 1 and node.args[0].keyword is None:  # math.hypot(x): |x|
            return self.helper_call(abs, [node.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)])
        if called is np.einsum and _plain(node) > _EINSUM_OPERANDS + 1:
            return _grouped_einsum(node)
        if called is math.hypot and not any(a.keyword for a in node.args) and len(node.args) > 2:
            inner = node.with_changes(args=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in node.args[:-1]],
                                      lpar=[], rpar=[])
            self.res.objects[inner.func] = math.hypot
            return node.with_changes(args=[cst.Arg(inner), node.args[-1]])
        ndmin = next((a for a in node.args if a.keyword is not None and a.keyword.value == "ndmin"), None)
        if called is np.array and ndmin is not None and _literal(ndmin.value) in (0, 1, 2):
            # np.array(x, ndmin=2): np.atleast_2d(np.array(x)), the axes added in front
            made = node.with_changes(args=_commas([a for a in node.args if a is not ndmin]), lpar=[], rpar=[])
            atleast = {1: np.atleast_1d, 2: np.atleast_2d}.get(_literal(ndmin.value))
            return made if atleast is None else self.helper_call(atleast, [cst.Arg(made)])
        if called is np.linalg.qr and len(node.args) == 2 and _literal(node.args[1].value) == "r" and (
                node.args[1].keyword is None or node.args[1].keyword.value == "mode"):
            reduced = node.with_changes(args=_commas(node.args[:1]), lpar=[], rpar=[])
            return cst.Subscript(reduced, [cst.SubscriptElement(cst.Index(cst.Integer("1")))])
        return node

    def ufunc_keywords(self, node: cst.Call, nin: int) -> cst.Call:
        """``np.exp(x, out=None, where=True, casting=..., order=..., subok=...)`` without those
        keywords; with ``dtype=`` a float dtype, its ``nin`` inputs cast to it first (as NumPy
        computes: the gradient goes back in each input's dtype, as ``x.astype``'s).  ``np.clip``
        passes them to its ufunc."""
        kept, dtype = [], None
        for i, arg in enumerate(node.args):
            key = arg.keyword.value if arg.keyword is not None else None
            if key is None and i >= nin and _is(arg.value, "None"):  # np.exp(x, None): out=None
                continue
            if key in ("out", "dtype") and _is(arg.value, "None") or key == "where" and _is(arg.value, "True") or (
                    key in _LAYOUT):
                continue
            if key == "dtype" and _is_float_dtype(self.dtype_object(arg.value)):
                dtype = arg
                continue
            kept.append(arg)
        if dtype is not None:
            kept = [a.with_changes(value=self.helper_call(np.asarray, _commas([
                cst.Arg(a.value), cst.Arg(dtype.value, keyword=cst.Name("dtype"), equal=dtype.equal)])))
                if (a.keyword is None or a.keyword.value in _CLIP_BOUNDS) and not _is(a.value, "None") else a
                for a in kept]
        if len(kept) == len(node.args) and dtype is None:
            return node
        return node.with_changes(args=_commas(kept))

    def dtype_object(self, node: cst.BaseExpression) -> Any:
        """What a ``dtype=`` argument denotes when the syntax says (a name, ``np.float32``, a
        string literal), else MISSING."""
        value = _literal(node)
        return self.res.object(strip_parens(node)) if value is MISSING else value


def constant_pieces(node: cst.Call, res: Resolution) -> bool:
    """Whether ``np.piecewise(x, condlist, funclist)``'s pieces are all values known not to be
    callable (numbers, constants read from globals): a step function of x, which NumPy computes
    without calling Python code."""
    pieces = node.args[2].value if len(node.args) > 2 and node.args[2].keyword is None else next(
        (a.value for a in node.args if a.keyword is not None and a.keyword.value == "funclist"), None)
    pieces = strip_parens(pieces) if pieces is not None else None
    if not isinstance(pieces, (cst.List, cst.Tuple)) or not pieces.elements:
        return False
    for element in pieces.elements:
        value, node = _literal(element.value), strip_parens(element.value)
        while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
            node = strip_parens(node.expression)  # (-np.pi: a number as np.pi is)
        if value is MISSING:
            value = res.object(node)
        if value is MISSING or callable(value) or isinstance(element, cst.StarredElement):
            return False
    return True


def binding_advice(callee: str, problem: str, keywords: set[str], fun: Any) -> str:
    """What to write instead of a call to ``fun`` its rule does not bind (``problem``, with the
    call's ``keywords``)."""
    if not isinstance(fun, np.ufunc) and fun is not np.clip:
        keywords = set()
    if "where" in keywords and "out" not in keywords:
        return (f"{callee}(..., where=...) without out= leaves the entries where the condition is false "
                f"uninitialised; write np.where(condition, {callee}(...), fallback)")
    if "dtype" in keywords and "dtype" in problem:
        return (f"{problem}: s2sad follows dtype= a float dtype it can read here (np.float64, "
                f"'float32'); cast the arguments instead (x.astype(dtype)), or wrap the call in "
                f"stop_gradient(...) if no gradient should flow through it")
    return (f"{problem}; write the call without that argument (for where=, select with np.where(...) "
            f"first), or wrap the call in stop_gradient(...) if no gradient should flow through it")


def _placed(parsed: Any, node: cst.CSTNode) -> bool:
    """Whether ``node`` is in the user's source (not built here)."""
    try:
        parsed.location(node)
    except KeyError:
        return False
    return True


def _is(node: cst.BaseExpression, name: str) -> bool:
    node = strip_parens(node)
    return isinstance(node, cst.Name) and node.value == name


def _literal(node: cst.BaseExpression) -> Any:
    """The value of a literal (``'r'``, ``-1.0``), else MISSING."""
    try:
        return ast.literal_eval(EMPTY_MODULE.code_for_node(strip_parens(node)))
    except (ValueError, SyntaxError, TypeError):
        return MISSING


def _is_float_dtype(value: Any) -> bool:
    if value is MISSING or value is None:
        return False
    try:
        return np.dtype(value).kind == "f"
    except (TypeError, ValueError):
        return False


def _plain(node: cst.Call) -> int:
    """How many positional arguments ``node`` has."""
    return sum(a.keyword is None for a in node.args)


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    """``args`` with a comma after each but the last."""
    sep = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [a.with_changes(comma=sep if i < len(args) - 1 else cst.MaybeSentinel.DEFAULT) for i, a in enumerate(args)]


def _grouped_einsum(node: cst.Call) -> cst.Call:
    """``np.einsum('ab,bc,cd,de,ef->af', a, b, c, d, e)`` as ``np.einsum('ab,bc,cd,df->af', a, b,
    c, np.einsum('de,ef->df', d, e))``: the operands after the third contracted first, over the
    letters no other operand nor the output reads (a sum of products, regrouped); ``node``
    itself unless its subscripts are a string literal."""
    spec = strip_parens(node.args[0].value)
    if not isinstance(spec, cst.SimpleString) or node.args[0].keyword is not None:
        return node
    text = ast.literal_eval(spec.value).replace(" ", "")
    inputs, arrow, out = text.partition("->")
    terms = inputs.split(",")
    operands = [a for a in node.args[1:] if a.keyword is None]
    if len(terms) != len(operands):
        return node  # (NumPy's own error, as the call runs)
    if not arrow:  # implicit output: the letters used once, in order, after the broadcast axes
        letters = inputs.replace(".", "").replace(",", "")
        out = ("..." if "..." in inputs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    head, tail = terms[:_EINSUM_OPERANDS - 1], terms[_EINSUM_OPERANDS - 1:]
    outside = "".join(head) + out
    joined = ("..." if any("..." in t for t in tail) else "") + "".join(dict.fromkeys(
        c for c in "".join(tail) if c != "." and c in outside))
    inner = cst.Call(node.func, _commas([cst.Arg(cst.SimpleString(repr(",".join(tail) + "->" + joined))),
                                         *operands[_EINSUM_OPERANDS - 1:]]))
    keywords = [a for a in node.args if a.keyword is not None]
    outer = [cst.Arg(cst.SimpleString(repr(",".join([*head, joined]) + "->" + out))),
             *operands[:_EINSUM_OPERANDS - 1], cst.Arg(inner), *keywords]
    return node.with_changes(args=_commas(outer))
