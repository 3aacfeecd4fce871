"""Specialised code: the tape of a ``for t in range(n)`` loop as preallocated arrays.

The generic code saves a tuple per iteration on a list (``tape.append((h, item_xs, h_2))``)
and reads it back with ``for h, item_xs, h_2 in reversed(tape)``: each small array costs an
object's overhead besides its data, and the per-step lists that passes/batch.py stacks after
the reversed loop (``np.reshape(h_steps, (-1, 8))``) copy the rows once more.  Where the trip
count is known when the loop starts (``for t in range(...)``, no ``break`` or early return)
and passes/shapes.py knows the shape, dtype and type of each saved value, the code keeps what
a person would::

    steps = xs.shape[0]
    h_tape = np.empty((steps + 1, 8))  # row t: h at step t; row t + 1: its h_2
    h_tape[0] = h
    for t in range(steps):
        ...
        h_tape[t + 1] = h_2

and reads ``h_2 = h_tape[t + 1]`` in ``for t in reversed(range(steps)):``.  A carried value and
the value it is carried from share one array; a row of an argument (``item_xs = xs[t]``) is
read again instead of saved; the stacked rows are views of those arrays (``h_tape[:steps]``,
``xs[:steps]``) or arrays the reversed loop fills row by row.  Anything else (a ``while`` loop,
a ``break``, a branch that saves values of its own, a nested loop, a value of unknown shape,
a Python int or bool) keeps its list.  Storing into a row copies the value, so a value changed after
it was saved cannot change the tape; a Python float is read back as one (``float(...)``).
"""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

from ..ir import If, Loop, Raw, Stmt, Var, assigned_names, assigns, statements, surely_assigned
from ..rules.shapes import Known
from .adjoint import Adjoint, Block, Line, Out, lines
from .batch import Stack, stacks
from .codegen import statement_code
from .parsed_lines import line_names
from .shapes import code_statements

_PYTHON: dict[type, str] = {float: "float"}  # Python numbers a row is read back as (a row is a NumPy scalar)
_SIZE = re.compile(r"\w+\.shape\[\d+\]|len\(\w+\)|\d+")  # a trip count that cannot be negative


@dataclass
class _Row:
    """Where the reversed loop finds one saved value of step t: row ``t + offset`` of
    ``array`` (a tape, or the argument it is read from again)."""

    array: str
    offset: int
    known: Known
    shared: bool = False  # the tape has steps + 1 rows (a carried value and its source)
    again: bool = False  # a row of an argument, read again


@dataclass
class _Counted:
    """A loop ``for target in range(bound)`` and its reversed block (in the backward code's
    top level)."""

    loop: Loop
    target: str
    bound: str
    block: Block
    stacks: list[Stack]


def preallocate_tapes(adj: Adjoint) -> None:
    """Keep the tapes of ``adj``'s counted top-level loops in arrays where all is known."""
    if adj.known is None or not adj.split or adj.kind == "split":
        return  # (code made to be differentiated again keeps its lists)
    for loop in [s for s in adj.forward if isinstance(s, Loop)]:
        counted = _counted(adj, loop)
        if counted is not None:
            _preallocate(adj, counted)


def _counted(adj: Adjoint, loop: Loop) -> _Counted | None:
    """``loop`` when it runs ``range(bound)`` times, pushes once per iteration, and its
    reversed block keeps no list but those of batch_loops."""
    if not loop.tape or loop.break_flag or loop.pushed not in ((), loop.saved) or any(
            isinstance(s, Loop) or isinstance(s, If) and any(s.saves) for s in statements(loop.body)):
        return None
    tree = ast.parse(f"{loop.header}: pass").body[0]
    if not (isinstance(tree, ast.For) and isinstance(tree.target, ast.Name) and isinstance(tree.iter, ast.Call)
            and isinstance(tree.iter.func, ast.Name) and tree.iter.func.id == "range"
            and len(tree.iter.args) == 1 and not isinstance(tree.iter.args[0], ast.Starred)
            and not tree.iter.keywords and loop.targets == (tree.target.id,)):
        return None
    if "range" in assigned_names(adj.forward) or adj.fn.free.get("range", range) is not builtins.range:
        return None
    block = next((x for x in adj.backward if isinstance(x, Block) and x.loop is loop), None)
    kept = stacks(adj.backward, block) if block is not None else None
    bound = ast.get_source_segment(f"{loop.header}: pass", tree.iter.args[0])
    if block is None or kept is None or bound is None or tree.target.id in _read_after(adj, block):
        return None
    return _Counted(loop, tree.target.id, bound, block, kept)


def _read_after(adj: Adjoint, block: Block) -> set[str]:
    """Names the backward code after ``block`` (a top-level block) reads, its gradients included."""
    at = next(i for i, x in enumerate(adj.backward) if x is block)
    return {n for x in lines(adj.backward[at + 1:]) for n in x.reads} | {
        n for r in adj.results for n in line_names(r)}


def _storable(known: Known | None) -> bool:
    """A value a row of an array keeps exactly: an array (not 0-d) of numbers or booleans, a
    NumPy scalar, a Python float."""
    if known is None or known.dtype.kind not in "biufc":
        return False
    if known.array:
        return bool(known.shape)
    return known.kind in _PYTHON or known.kind is known.dtype.type


def _argument_row(adj: Adjoint, c: _Counted, name: str) -> str | None:
    """The argument ``xs`` when the loop's only assignment of ``name`` is ``name = xs[t]`` at
    the top of its body, and nothing assigns ``xs``."""
    made = [s for s in assigns(c.loop.body) if name in s.targets]
    if len(made) != 1 or all(s is not made[0] for s in c.loop.body):
        return None
    m = re.fullmatch(rf"{name} = (\w+)\[{c.target}\]", statement_code(made[0]))
    base = m.group(1) if m else None
    known = adj.known.get(base) if adj.known is not None and base else None
    if base not in adj.fn.params or base in _rebound(adj.forward) or known is None \
            or not known.array or not known.shape:
        return None
    return base


def _unchanged(adj: Adjoint, loop: Loop) -> set[str]:
    """Names the loop carries as they are (``(x, x)``) and nothing assigns after it: each
    step's value is the one the reversed loop finds (the list saved the same array each step)."""
    later = _rebound(loop.body) | _rebound(adj.forward[adj.forward.index(loop) + 1:]) | {
        t for x in lines(adj.backward) if isinstance(x, Line) for targets, _, _ in code_statements(x.code)
        for t in targets}
    return {name for name, last in loop.carried if name == last} - later


def _rebound(stmts: list[Stmt]) -> set[str]:
    """Names ``stmts`` assign, a loop carrying a name as it is (``(x, x)``) aside."""
    names = {t for s in assigns(stmts) if not (isinstance(s.value, Var) and s.targets == (s.value.name,))
             for t in s.targets}
    names |= {t for s in statements(stmts) if isinstance(s, Raw) for targets, _, _ in code_statements(s.code)
              for t in targets}
    return names | {t for s in statements(stmts) if isinstance(s, Loop) for t in s.targets}


def _preallocate(adj: Adjoint, c: _Counted) -> None:
    """Keep the tape of ``c`` in arrays if every value it saves can be kept in one."""
    known = adj.known or {}
    unchanged = _unchanged(adj, c.loop)
    saved = [n for n in c.loop.saved if n != c.target and n not in unchanged]
    again = {n: base for n in saved if (base := _argument_row(adj, c, n))}
    if not all(n in again or _storable(known.get(n)) for n in saved) or not all(
            _storable(known.get(s.row)) for s in c.stacks):
        return
    assigned = {t for x in lines(c.block.body) if isinstance(x, Line)
                for targets, _, _ in code_statements(x.code) for t in targets}
    views = [s for s in c.stacks if s.row in saved and s.row not in assigned]
    dropped = {id(s.pushed) for s in views}
    reads = {n for x in lines(c.block.body) if id(x) not in dropped for n in x.reads} | _read_after(adj, c.block)
    read = [n for n in saved if n in reads]
    steps = adj.fn.fresh("steps")
    rows = {n: _Row(base, 0, known[n], again=True) for n, base in again.items()}
    stored = [n for n in saved if n not in again and (n in read or any(s.row == n for s in views))]
    before, stores = _tapes(adj, c, stored, steps, rows)
    at = adj.forward.index(c.loop)
    adj.forward[at:at] = before
    c.loop.body += stores
    c.loop.header, c.loop.reads = f"for {c.target} in range({steps})", (steps,)
    c.loop.tape, c.loop.saved, c.loop.pushed = None, (), ()
    for s in statements(c.loop.body):
        if isinstance(s, If):
            s.tape = None
    _reverse(adj, c, steps, {n: rows[n] for n in read}, views, rows)


def _tapes(adj: Adjoint, c: _Counted, stored: list[str], steps: str,
           rows: dict[str, _Row]) -> tuple[list[Raw], list[Raw]]:
    """The statements before the loop (the trip count, the tapes) and at the end of its body
    (each step's rows); ``rows`` gets where each stored value is."""
    np_ = adj.use("np")
    known = adj.known or {}
    loc = c.loop.loc
    bound = c.bound if _SIZE.fullmatch(c.bound) else f"max({c.bound}, 0)"
    before = [Raw(f"{steps} = {bound}", frozenset(c.loop.reads), loc)]
    stores: list[Raw] = []
    pairs = _pairs(adj, c, stored)
    for name in stored:
        if name in rows or name in pairs.values():
            continue
        array = adj.fn.fresh(f"{name}_tape")
        k = known[name]
        if name in pairs:
            last = pairs[name]
            rows[name], rows[last] = _Row(array, 0, k, shared=True), _Row(array, 1, k, shared=True)
            before += [Raw(f"{array} = {_empty(np_, f'{steps} + 1', k)}  # row t: {name} at step t; "
                           f"row t + 1: its {last}", frozenset({steps}), loc),
                       Raw(f"{array}[0] = {name}", frozenset({array, name}), loc)]
            stores.append(Raw(f"{array}[{c.target} + 1] = {last}", frozenset({array, c.target, last}), loc))
        else:
            rows[name] = _Row(array, 0, k)
            before.append(Raw(f"{array} = {_empty(np_, steps, k)}", frozenset({steps}), loc))
            stores.append(Raw(f"{array}[{c.target}] = {name}", frozenset({array, c.target, name}), loc))
    return before, stores


def _pairs(adj: Adjoint, c: _Counted, stored: list[str]) -> dict[str, str]:
    """Carried values ``name`` that share a tape with the value ``last`` each iteration
    carries to them (``h`` at step t + 1 is ``h_2`` of step t): disjoint pairs, ``name``
    bound before the loop."""
    known = adj.known or {}
    before = surely_assigned(adj.forward[:adj.forward.index(c.loop)]) | set(adj.fn.params)
    pairs: dict[str, str] = {}
    for name, last in c.loop.carried:
        if name != last and name in stored and last in stored and name in before and known[name] == known[last] \
                and not {name, last} & {*pairs, *pairs.values()}:
            pairs[name] = last
    return pairs


def _empty(np_: str, rows: str, known: Known) -> str:
    """``np.empty`` of ``rows`` rows of values as ``known``."""
    shape = rows if not known.shape else f"({rows}, {', '.join(map(str, known.shape))})"
    name = known.dtype.name
    dtype = "" if name == "float64" else ", dtype=bool" if name == "bool" else f", dtype={np_}.{name}"
    return f"{np_}.empty({shape}{dtype})"


def _reverse(adj: Adjoint, c: _Counted, steps: str, read: dict[str, _Row], views: list[Stack],
             rows: dict[str, _Row]) -> None:
    """The reversed loop over ``range(steps)``, reading ``read`` at its top; the stacked rows
    as views of the tapes (``views``) or filled row by row."""
    group, source = c.loop.loc.line, c.loop.loc.source_line.strip()
    top: list[Out] = []
    for name, row in read.items():
        value = f"{row.array}[{c.target}{f' + {row.offset}' if row.offset else ''}]"
        python = _PYTHON.get(row.known.kind)
        top.append(Line(f"{name} = {f'{python}({value})' if python else value}",
                        frozenset({row.array, c.target}), group, source))
    c.block.header = f"for {c.target} in reversed(range({steps})):"
    c.block.reads = frozenset({steps})
    c.block.body = top + c.block.body
    for s in c.stacks:
        view = rows[s.row] if any(s is v for v in views) else None
        _stack(adj, c, s, steps, view)


def _stack(adj: Adjoint, c: _Counted, s: Stack, steps: str, view: _Row | None) -> None:
    """One list of step rows as a view of the tape ``view`` (its list and appends go), or as
    an array the reversed loop fills (``dadd_b_all[t] = dadd_b``)."""
    backward, body = adj.backward, c.block.body
    made = next(i for i, x in enumerate(backward) if x is s.made)
    stacked = next(i for i, x in enumerate(backward) if x is s.stacked)
    pushed = next(i for i, x in enumerate(body) if x is s.pushed)
    if view is not None:
        backward[stacked] = Line(f"{s.name} = {_view(view, steps)}", frozenset({view.array, steps}),
                                 s.stacked.group, s.stacked.source)
        del body[pushed], backward[made]
        return
    known = (adj.known or {})[s.row]
    backward[made] = Line(f"{s.name} = {_empty(adj.use('np'), steps, known)}", frozenset({steps}),
                          s.made.group, s.made.source)
    body[pushed] = Line(f"{s.name}[{c.target}] = {s.row}", frozenset({s.name, s.row, c.target}),
                        s.pushed.group, s.pushed.source)
    del backward[stacked]


def _view(row: _Row, steps: str) -> str:
    """All steps' rows of a value: a view of its tape, or of the argument it is read from."""
    if row.again or row.shared and not row.offset:
        return f"{row.array}[:{steps}]"
    return f"{row.array}[1:]" if row.shared else row.array
