"""Sums a reversed loop accumulates, done once after it as matrix products (specialised code).

In ``for t ...: h = tanh(W @ h + ...)`` the backward pass adds an outer product to ``dW``
every iteration (``dW += da[:, None].dot(h[None])``) and a vector to ``db``.  Each step's
factors are kept in a list instead, and after the loop ``dW += A.T.dot(H)`` adds them all in
one product (A and H stacking the steps' rows), as a person writes the gradient of an RNN.
Only vectors of known shapes qualify, and an accumulator the loop body reads or assigns
elsewhere does not.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .adjoint import Adjoint, Block, Line, Out, lines
from .parsed_lines import line_names
from .shapes import Shapes, code_statements

_OUTER = re.compile(r"(\w+) \+= (\w+)\[:, None\]\.dot\((\w+)\[None\]\)")
_SUM = re.compile(r"(\w+) \+= (\w+)")
_MADE = re.compile(r"(\w+) = \[\]")
_PUSHED = re.compile(r"(\w+)\.append\((\w+)\)")
_STACKED = re.compile(r"(\w+) = \w+\.reshape\((\w+), \(-1, (\d+)\)\)")


@dataclass
class _Sum:
    line: Line
    target: str
    factors: tuple[str, ...]  # (a,) for += a; (a, b) for += outer(a, b)


def batch_loops(adj: Adjoint, shapes: Shapes) -> None:
    adj.backward = _batched(adj.backward, adj, shapes)


def _batched(outs: list[Out], adj: Adjoint, shapes: Shapes) -> list[Out]:
    out: list[Out] = []
    for x in outs:
        if isinstance(x, Block):
            x.body, x.orelse = _batched(x.body, adj, shapes), _batched(x.orelse, adj, shapes)
            if x.loop is not None:
                before, after = _batch(x, adj, shapes)
                out += before + [x] + after
                continue
        out.append(x)
    return out


def _batch(block: Block, adj: Adjoint, shapes: Shapes) -> tuple[list[Out], list[Out]]:
    sums = [s for s in map(lambda x: _sum(x, shapes), block.body) if s is not None]
    sums = [s for s in sums if _alone(s, block)]
    if not sums:
        return [], []
    np_ = adj.use("np")
    steps: dict[str, str] = {}
    for s in sums:
        for name in s.factors:
            if name not in steps:
                steps[name] = adj.fn.fresh(f"{name}_steps")
    first = sums[0].line
    before = [Line(f"{steps[n]} = []", frozenset(), first.group, first.source) for n in steps]
    body: list[Out] = []
    appended: set[str] = set()
    for x in block.body:
        s = next((s for s in sums if s.line is x), None)
        if s is None:
            body.append(x)
            continue
        for name in s.factors:
            if name not in appended:  # (a step's row is kept once, whatever sums read it)
                appended.add(name)
                body.append(Line(f"{steps[name]}.append({name})", frozenset({name}), x.group, x.source))
    block.body = body
    stacked = {n: adj.fn.fresh(f"{n}_all") for n in steps}
    after: list[Out] = []
    for name, all_ in stacked.items():
        width = shapes.known[name].shape[0]  # type: ignore[union-attr]
        after.append(Line(f"{all_} = {np_}.reshape({steps[name]}, (-1, {width}))", frozenset({steps[name]}),
                          first.group, first.source))
    for s in sums:
        if len(s.factors) == 1:
            code = f"{s.target} += {stacked[s.factors[0]]}.sum(axis=0)"
        else:
            code = f"{s.target} += {stacked[s.factors[0]]}.T.dot({stacked[s.factors[1]]})"
        after.append(Line(code, frozenset({s.target, *(stacked[n] for n in s.factors)}), s.line.group, s.line.source))
    return before, after


def _sum(x: Out, shapes: Shapes) -> _Sum | None:
    """A line adding a step's vector (or outer product of two) to an accumulator of known shape."""
    if not isinstance(x, Line):
        return None
    outer, plain = _OUTER.fullmatch(x.code), _SUM.fullmatch(x.code)
    match = outer or plain
    if match is None:
        return None
    target, factors = match.group(1), match.groups()[1:]
    acc = shapes.known.get(target)
    vectors = [shapes.known.get(n) for n in factors]
    if acc is None or not acc.array or any(v is None or not v.array or len(v.shape) != 1 or v.dtype != acc.dtype
                                             for v in vectors):
        return None
    expected = tuple(v.shape[0] for v in vectors if v is not None)
    return _Sum(x, target, tuple(factors)) if acc.shape == expected else None


def _alone(s: _Sum, block: Block) -> bool:
    """The accumulator is read and assigned only by this line in the loop, and its factors
    are not assigned after it in an iteration (the list keeps the step's own array)."""
    others = [y for y in lines(block.body) if y is not s.line]
    if any(s.target in y.reads or isinstance(y, Block) and s.target in line_names(f"{y.header} pass") for y in others):
        return False
    later = block.body[block.body.index(s.line) + 1:]
    assigned = {t for y in lines(later) if isinstance(y, Line) for targets, _, _ in code_statements(y.code)
                for t in targets}
    return s.target not in {t for y in others if isinstance(y, Line) for ts, _, _ in code_statements(y.code)
                            for t in ts} and not assigned & set(s.factors)


@dataclass
class Stack:
    """One list of step rows that :func:`batch_loops` keeps for a reversed loop: made before
    it, appended ``row`` to in its body, stacked into the array ``name`` after it."""

    row: str
    name: str
    made: Line
    pushed: Line
    stacked: Line


def stacks(outs: list[Out], block: Block) -> list[Stack] | None:
    """The lists kept for ``block`` (an item of ``outs``), or None if its body appends to a
    list that is not one of them."""
    at = next(i for i, x in enumerate(outs) if x is block)
    made: dict[str, Line] = {}
    for x in reversed(outs[:at]):
        if not (isinstance(x, Line) and (m := _MADE.fullmatch(x.code))):
            break
        made[m.group(1)] = x
    stacked: dict[str, tuple[str, Line]] = {}
    for x in outs[at + 1:]:
        if not (isinstance(x, Line) and (m := _STACKED.fullmatch(x.code))):
            break
        stacked[m.group(2)] = (m.group(1), x)
    found: list[Stack] = []
    for x in lines(block.body):
        if not isinstance(x, Line) or (m := _PUSHED.fullmatch(x.code)) is None:
            continue
        if m.group(1) not in made or m.group(1) not in stacked \
                or all(x is not y for y in block.body):
            return None
        name, line = stacked[m.group(1)]
        found.append(Stack(m.group(2), name, made[m.group(1)], x, line))
    return found
