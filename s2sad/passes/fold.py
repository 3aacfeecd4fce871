"""Specialised backward code written out as a person writes it: a constant assigned once
(the seed ``dvalue = 1.0``) is written where it is read (and a product by 1.0 left out), and
a copy ``a = b`` between adjoints is left out, the lines after it reading ``b``."""
from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from dataclasses import replace

from ..rules.shapes import Known
from .adjoint import Adjoint, Block, Line, Out, lines
from .parsed_lines import Spans, line_names, parsed_line, rename
from .shapes import Shapes, assignment_targets, code_statements, loop_header


_NAME = re.compile(r"[^\W\d]\w*(\.[^\W\d]\w*)*")


@functools.lru_cache(maxsize=1 << 12)
def atomic(code: str) -> bool:
    """Whether ``code`` needs no parentheses as an operand: a name, a literal, a call, an
    attribute or an item."""
    if _NAME.fullmatch(code):
        return True
    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript))


def fold_constants(adj: Adjoint, shapes: Shapes) -> bool:
    """A backward variable assigned a float literal once (the seed ``dvalue = 1.0``, say) is
    written into the lines that read it: ``dvalue * e`` is ``e`` (for a float ``e``: the
    product is exact, and of e's type), other reads are the literal.  Whether any was."""
    count = _assignment_counts(adj)
    constants = [(x, x.code.partition(" = ")) for x in adj.backward if isinstance(x, Line)]
    found = [(x, target, value) for x, (target, _, value) in constants
             if target.isidentifier() and count.get(target) == 1 and _float_literal(value)]
    if adj.seed and count.get(adj.seed.partition(" = ")[0]) == 1 and _float_literal(adj.seed.partition(" = ")[2]):
        target, _, value = adj.seed.partition(" = ")
        found.insert(0, (None, target, value))
    divided = _numerators_of_python_numbers(adj.backward, shapes)
    if divided:
        _as_numpy_scalars(adj, [(x, target, value) for x, target, value in found if target in divided])
        found = [(x, target, value) for x, target, value in found if target not in divided]
    constants = {target: value for _, target, value in found}  # (in the order found)
    dropped = {id(line) for line, _, _ in found}
    adj.backward = [x for x in _constants_written(adj.backward, constants, shapes) if id(x) not in dropped]
    adj.results = [_with_constants(r, constants, shapes) for r in adj.results]
    if found and found[0][0] is None:
        adj.seed = None
    return bool(found)


def _with_constants(code: str, constants: dict[str, str], shapes: Shapes) -> str:
    """``code`` with each constant it reads written as its value, one after the other."""
    for target, value in constants.items():
        if target in line_names(code):
            code = _with_constant(code, target, value, shapes)
    return code


def _numerators_of_python_numbers(outs: list[Out], shapes: Shapes) -> set[str]:
    """Names divided by a Python number that may be 0 (``dvalue / d``, d a float argument)."""
    names: set[str] = set()
    for x in lines(outs):
        for node in ast.walk(parsed_line(x.code)) if isinstance(x, Line) else ():
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and isinstance(
                    node.left, ast.Name):
                if isinstance(node.right, ast.Constant) and node.right.value:
                    continue  # (a number that is not 0: no error)
                known = _value_or_none(shapes, node.right)
                if known is None or known.python and not known.int_value:
                    names.add(node.left.id)
    return names


def _as_numpy_scalars(adj: Adjoint, constants: list[tuple[Line | None, str, str]]) -> None:
    """Float constants (``dvalue = 1.0``) divided by a Python number assigned as NumPy scalars:
    ``1.0 / d`` raises ZeroDivisionError where ``np.float64(1.0) / d`` is inf, as the function's own
    NumPy arithmetic gives."""
    np_ = adj.use("np")
    new = {id(x): f"{target} = {np_}.float64({value})" for x, target, value in constants if x is not None}
    for x, target, value in constants:
        if x is None:
            adj.seed = f"{target} = {np_}.float64({value})"

    def rewritten(outs: list[Out]) -> list[Out]:
        for i, x in enumerate(outs):
            if isinstance(x, Block):
                x.body, x.orelse = rewritten(x.body), rewritten(x.orelse)
            elif id(x) in new:
                outs[i] = replace(x, code=new[id(x)])
        return outs
    if new:
        adj.backward = rewritten(adj.backward)


def _float_literal(code: str) -> bool:
    if code[:1].isalpha() or code[:1] == "_":
        return False  # a name, a call: not parsed
    try:
        return type(ast.literal_eval(code)) is float
    except (ValueError, SyntaxError):
        return False


def _assignment_counts(adj: Adjoint) -> dict[str, int]:
    count: dict[str, int] = {p: 1 for p in adj.fn.params}
    for targets in assignment_targets(adj):
        for name in targets:
            count[name] = count.get(name, 0) + 1
    return count


def _constants_written(outs: list[Out], constants: dict[str, str], shapes: Shapes) -> list[Out]:
    out: list[Out] = []
    for x in outs:
        if isinstance(x, Block):
            x.body, x.orelse = (_constants_written(x.body, constants, shapes),
                                _constants_written(x.orelse, constants, shapes))
        elif not x.reads.isdisjoint(constants):
            reads = x.reads
            code = x.code
            for target, value in constants.items():
                if target in reads:
                    code = _with_constant(code, target, value, shapes)
                    names = line_names(code)
                    reads = frozenset(n for n in reads if n in names)
            x = replace(x, code=code, reads=reads)
        out.append(x)
    return out


#: helpers that may return their first argument itself (a gradient already in its shape)
_RETURN_THEIR_ARGUMENT = frozenset({"unbroadcast", "grad_like", "reduce_to", "real_like"})


def _with_constant(code: str, seed: str, value: str, shapes: Shapes) -> str:
    """``code`` with the constant ``seed`` (the seed, or another) written as ``value`` (and a
    product by 1.0 left out)."""
    spans = Spans(code)
    span = spans.span
    tree = ast.parse(code)
    # ``d = 1.0 * a`` makes a new array, which later lines may update in place (d += ...):
    # written ``d = a``, d would be a itself, an argument say; so would ``d = unbroadcast(a, x)``
    assigned = {id(s.value) for s in tree.body if isinstance(s, ast.Assign)}
    assigned |= {id(s.value.args[0]) for s in tree.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                 and isinstance(s.value.func, ast.Name) and s.value.func.id in _RETURN_THEIR_ARGUMENT and s.value.args}
    edits: list[tuple[int, int, str]] = []
    done: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and id(node) not in done \
                and ast.literal_eval(value) == 1.0:
            sides = [(node.left, node.right), (node.right, node.left)]
            for one, other in sides:
                known = _value_or_none(shapes, other)
                if known is not None and known.array and id(node) in assigned and not isinstance(
                        other, (ast.BinOp, ast.UnaryOp)):
                    continue
                if isinstance(one, ast.Name) and one.id == seed and known is not None and known.dtype.kind == "f" \
                        and known.kind is not int:
                    text = spans.text(other)
                    edits.append((*span(node), text if atomic(text) else f"({text})"))
                    done.update(id(n) for n in ast.walk(node))
                    break
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == seed and isinstance(node.ctx, ast.Load) and not any(
                s <= span(node)[0] < e for s, e, _ in edits):
            edits.append((*span(node), value if atomic(value) else f"({value})"))
    return spans.replaced(edits)


def _value_or_none(shapes: Shapes, node: ast.expr) -> Known | None:
    """What is known of ``node``, a part of an expression the analysis may not have evaluated
    (its evaluator is settled: no name is pending)."""
    try:
        return shapes.evaluator.value(node)
    except (ValueError, TypeError):  # a slice step of 0 (x[::0]); an unhashable literal ({[0]: 1})
        return None


def drop_copies(adj: Adjoint) -> bool:
    """A backward line ``a = b`` is left out, and the lines after it read ``b``, when ``a`` is
    assigned nowhere else and read only by those lines (of the same block), and nothing
    assigns ``b`` before the last of them: one name per adjoint, as a person writes it."""
    count = _assignment_counts(adj)
    reads: dict[str, int] = {}
    for x in lines(adj.backward):
        for name in x.reads:
            reads[name] = reads.get(name, 0) + 1
    for name in {n for r in adj.results for n in line_names(r)} | set(line_names(adj.seed or "")):
        reads[name] = reads.get(name, 0) + 1
    before = sum(1 for _ in lines(adj.backward))
    adj.backward = _without_copies(adj.backward, count, reads, adj)
    return sum(1 for _ in lines(adj.backward)) < before


def drop_copy_backs(outs: list[Out]) -> list[Out]:
    """``outs`` without each line ``b = a`` that follows a line ``a = b`` of the same block
    with neither name assigned in between: the two names hold the same object already."""
    kept: list[Out] = []
    copies: set[tuple[str, str]] = set()
    for x in outs:
        if isinstance(x, Block):
            x.body, x.orelse = drop_copy_backs(x.body), drop_copy_backs(x.orelse)
            copies = set()  # (a loop restores saved values, at each iteration)
            kept.append(x)
            continue
        copy = _copy(x)
        if copy is not None and copy[::-1] in copies:
            continue
        assigned = {n for targets in _assigned(x) for n in targets}
        copies = {c for c in copies if not assigned & set(c)}
        if copy is not None:
            copies.add(copy)
        kept.append(x)
    return kept


def _without_copies(outs: list[Out], count: dict[str, int], reads: dict[str, int], adj: Adjoint) -> list[Out]:
    kept: list[Out] = []
    renamed: dict[str, str] = {}
    uses: _Uses | None = None  # (built at the first copy: where outs read and assign each name)
    for i, x in enumerate(outs):
        if renamed:
            x = _renamed(x, renamed)
        if isinstance(x, Block):
            x.body = _without_copies(x.body, count, reads, adj)
            x.orelse = _without_copies(x.orelse, count, reads, adj)
        copy = _copy(x)
        if copy is not None and count.get(copy[0]) == 1:
            uses = uses or _Uses(outs)
            if _only_read_after(copy, i, uses, reads, adj, outs):
                a, b = copy
                renamed = {**({k: (b if v == a else v) for k, v in renamed.items()} if a in renamed.values()
                              else renamed), a: renamed.get(b, b)}
                continue
        kept.append(x)
    if renamed and outs is adj.backward:
        adj.results = [rename(r, renamed) for r in adj.results]
    return kept


def _copy(x: Out) -> tuple[str, str] | None:
    """``(a, b)`` for a line ``a = b``."""
    if not isinstance(x, Line) or " = " not in x.code or "\n" in x.code:
        return None
    target, _, value = x.code.partition(" = ")
    return (target, value) if target.isidentifier() and value.isidentifier() and target != value else None


class _Uses:
    """Where the outs of a list read and assign each name: ``reads[name]`` is a list of
    (index, lines reading it there), ``assigns[name]`` the indices that assign it."""

    def __init__(self, outs: list[Out]) -> None:
        self.reads: dict[str, list[tuple[int, int]]] = {}
        self.assigns: dict[str, list[int]] = {}
        for j, x in enumerate(outs):
            for name, n in Counter(name for y in lines([x]) for name in y.reads).items():
                self.reads.setdefault(name, []).append((j, n))
            for name in {name for targets in _assigned(x) for name in targets}:
                self.assigns.setdefault(name, []).append(j)


def _only_read_after(copy: tuple[str, str], i: int, uses: _Uses, reads: dict[str, int], adj: Adjoint,
                     outs: list[Out]) -> bool:
    """Whether every read of ``a`` is in the outs after the ``i``-th (results count for the
    top level), and none of them up to the last of those reads assigns ``b``."""
    a, b = copy
    after = [(j, n) for j, n in uses.reads.get(a, ()) if j > i]
    last = after[-1][0] if after else -1
    in_results = sum(1 for r in adj.results if a in line_names(r)) if outs is adj.backward else 0
    if sum(n for _, n in after) + in_results != reads.get(a, 0):
        return False
    return not any(i < j and (in_results or j <= last) for j in uses.assigns.get(b, ()))


def _assigned(x: Out) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for y in lines([x]):
        if isinstance(y, Line):
            found += [targets for targets, _, _ in code_statements(y.code)]
        else:
            found += [targets for targets, _, _ in loop_header(y.header)]
    return found


def _renamed(x: Out, renamed: dict[str, str]) -> Out:
    if isinstance(x, Block):
        header = x.header.rstrip(":")
        x.header = rename(header + ": pass", renamed)[: -len(": pass")] + x.header[len(header):]
        x.reads = frozenset(renamed.get(n, n) for n in x.reads)
        x.body = [_renamed(y, renamed) for y in x.body]
        x.orelse = [_renamed(y, renamed) for y in x.orelse]
        return x
    code = rename(x.code, renamed)
    return x if code == x.code else replace(x, code=code, reads=frozenset(renamed.get(n, n) for n in x.reads))
