"""The tape of a ``for ... in range(...)`` loop as preallocated columns (``jit=True``).

The generated code saves one tuple per iteration on a list (``tape.append((a, b))``) and
reads it back in reverse (``for a, b in reversed(tape):``).  When the trip count is known
at the loop's entry (``range(...)``, no ``break`` or ``continue``, one push per iteration),
the code given to numba keeps one column per saved value instead, made at the first push
for ``len(range(...))`` entries: an array of shape (n, *value shape) for arrays, of n
numbers for numbers, a list of n items otherwise (:func:`s2sad.jit_runtime.column`, which
decides by the value's type; an array whose shape changes moves to a list).  Other tapes
(``while`` loops, pushes in branches, a loop's tape saved by an outer loop) stay lists,
which numba grows as they are appended to.

This module rewrites the syntax tree only; it does not import numba.
"""
from __future__ import annotations

import ast
import copy
from collections import Counter

COLUMN, PUT, GET = "_jit_column", "_jit_put", "_jit_get"  # jit_runtime.column, put, get


def preallocate(func: ast.FunctionDef) -> None:
    """Rewrite, in place, each tape of ``func`` that can be preallocated."""
    uses = Counter(n.id for n in ast.walk(func) if isinstance(n, ast.Name))
    backward = {n.iter.args[0].id: n for n in ast.walk(func) if isinstance(n, ast.For) and _reversed_name(n.iter)}
    for block in _blocks(func):
        for i, stmt in enumerate(list(block)):
            tape = _empty_list(stmt)
            if tape is None or uses[tape] != 3 or tape not in backward:
                continue  # (3: made, pushed to, read back; anything else keeps the list)
            loop = next((s for s in block[i + 1:] if tape in _names(s)), None)
            push = _push(loop, tape) if isinstance(loop, ast.For) else None
            if push is None or not _matches(push.value.args[0], backward[tape].target):
                continue
            _rewrite(block, stmt, loop, push, backward[tape], tape)


def _rewrite(block: list[ast.stmt], init: ast.stmt, loop: ast.For, push: ast.Expr, back: ast.For,
             tape: str) -> None:
    items = _items(push.value.args[0])
    count, k, at = f"_jit_{tape}_n", f"_jit_{tape}_k", f"_jit_{tape}_at"
    columns = [f"_jit_{tape}_{i}" for i in range(len(items))]
    trips = ast.Call(ast.Name("len", ast.Load()), [copy.deepcopy(loop.iter)], [])
    start = [ast.Assign([ast.Name(count, ast.Store())], trips), _parse(f"{k} = 0")]
    made = [ast.Assign([ast.Name(c, ast.Store())], _call(COLUMN, item, ast.Name(count, ast.Load())))
            for c, item in zip(columns, items)]
    stores = [ast.Expr(_call(PUT, ast.Name(c, ast.Load()), ast.Name(k, ast.Load()), copy.deepcopy(item)))
              for c, item in zip(columns, items)]
    pushed = [ast.If(_parse(f"{k} == 0").value, made, []), *stores, _parse(f"{k} += 1")]
    at_push = loop.body.index(push)
    loop.body[at_push:at_push + 1] = pushed
    at_init = block.index(init)
    block[at_init:at_init + 1] = start
    targets = back.target.elts if isinstance(back.target, ast.Tuple) else [back.target]
    loads = [ast.Assign([t], _call(GET, ast.Name(c, ast.Load()), ast.Name(at, ast.Load())))
             for t, c in zip(targets, columns)]
    back.target = ast.Name(at, ast.Store())
    back.iter = _parse(f"range({k} - 1, -1, -1)").value
    back.body[:0] = loads  # (the new lines take their loop's line number: plan fills them in)


def _blocks(func: ast.FunctionDef) -> list[list[ast.stmt]]:
    """Every list of statements in ``func``."""
    return [block for node in ast.walk(func) for field in ("body", "orelse", "finalbody")
            if isinstance(block := getattr(node, field, None), list) and block and isinstance(block[0], ast.stmt)]


def _empty_list(stmt: ast.stmt) -> str | None:
    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.List) and not stmt.value.elts):
        return stmt.targets[0].id
    return None


def _reversed_name(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "reversed"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and not node.keywords)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _push(loop: ast.For, tape: str) -> ast.Expr | None:
    """The statement ``tape.append(...)`` of ``loop``'s body, when it runs once per iteration
    and the loop runs ``len(range(...))`` times."""
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range") or loop.orelse:
        return None
    if _jumps(loop.body):
        return None
    pushes = [s for s in loop.body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
              and isinstance(s.value.func, ast.Attribute) and s.value.func.attr == "append"
              and isinstance(s.value.func.value, ast.Name) and s.value.func.value.id == tape
              and len(s.value.args) == 1 and not s.value.keywords]
    return pushes[0] if len(pushes) == 1 else None


def _jumps(stmts: list[ast.stmt]) -> bool:
    """Whether a ``break``, ``continue`` or ``return`` leaves these statements' loop early
    (nested loops' own ``break`` and ``continue`` aside)."""
    for stmt in stmts:
        if isinstance(stmt, (ast.Break, ast.Continue, ast.Return)):
            return True
        if isinstance(stmt, (ast.For, ast.While)):
            if any(isinstance(n, ast.Return) for n in ast.walk(stmt)):
                return True
            continue
        inner = [s for field in ("body", "orelse", "finalbody") for s in getattr(stmt, field, []) or []
                 if isinstance(s, ast.stmt)]
        if inner and _jumps(inner):
            return True
    return False


def _items(value: ast.expr) -> list[ast.expr]:
    return list(value.elts) if isinstance(value, ast.Tuple) else [value]


def _matches(value: ast.expr, target: ast.expr) -> bool:
    """Whether the pushed ``value`` and the backward loop's ``target`` have the same items."""
    if isinstance(target, ast.Tuple):
        return (isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts)
                and all(isinstance(t, ast.Name) for t in target.elts))
    return isinstance(target, ast.Name) and not isinstance(value, ast.Tuple)


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _parse(code: str) -> ast.stmt:
    return ast.parse(code).body[0]
