"""A line-based reducer for a failing program, after hypothesis has shrunk it.

Hypothesis shrinks the *choices* that built a program; removing a statement often changes
the draws after it, so a shrunk program can keep statements that do not matter.
:func:`reduce_program` removes lines (a compound statement with its block) one at a time
(or replaces an ``if``/``else`` by its body) while the program still fails the same way and
still reads only names it assigns somewhere, then drops helpers nobody calls.
"""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import replace
from typing import Callable

from .generator import Program

_COUNTER = re.compile(r"^k\d+ (\+= 1|= k\d+ \+ 1)$")  # a while loop's counter: keep it


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block_end(lines: list[str], i: int) -> int:
    """The index after the statement starting at line ``i`` (with its indented block)."""
    j = i + 1
    if lines[i].rstrip().endswith(":"):
        while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > _indent(lines[i])):
            j += 1
    return j


def _valid(source: str) -> bool:
    """Parses, and every function reads only names it assigns, its parameters and globals."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    known = set(dir(builtins)) | {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            known |= {(a.asname or a.name).split(".")[0] for a in node.names}
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        local = {a.arg for a in fn.args.args}
        local |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        loads = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if loads - local - known:
            return False
    return True


def reduce_program(program: Program, still_fails: Callable[[Program], bool], rounds: int = 4) -> Program:
    """Remove lines of ``program`` while ``still_fails`` holds."""
    best = program
    for _ in range(rounds):
        changed = False
        lines = best.source.split("\n")
        i = len(lines) - 1
        while i >= 0:
            line = lines[i]
            stripped = line.strip()
            if not stripped or stripped.startswith(("import ", "from ", "def ")) or _COUNTER.match(stripped):
                i -= 1
                continue
            end = _block_end(lines, i)
            candidates = [lines[:i] + lines[end:]]
            if stripped.startswith(("if ", "elif ", "else:")) and not stripped.startswith("elif"):
                # keep the body, one level less indented, without the header
                body = [ln[4:] for ln in lines[i + 1:end]]
                candidates.append(lines[:i] + body + lines[end:])
            for cand in candidates:
                text = "\n".join(cand)
                if text == best.source or not _valid(text):
                    continue
                trial = replace(best, source=text)
                try:
                    fails = still_fails(trial)
                except Exception:  # noqa: BLE001
                    fails = False
                if fails:
                    best, lines, changed = trial, cand, True
                    break
            i = min(i - 1, len(lines) - 1)
        # helpers nobody calls any more
        lines = best.source.split("\n")
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].startswith("def ") and not lines[i].startswith("def f("):
                name = lines[i][4:lines[i].index("(")]
                rest = "\n".join(lines[:i] + lines[_block_end(lines, i):])
                if f"{name}(" not in rest:
                    trial = replace(best, source=rest)
                    if _valid(rest) and still_fails(trial):
                        best, lines, changed = trial, rest.split("\n"), True
        if not changed:
            break
    return best
