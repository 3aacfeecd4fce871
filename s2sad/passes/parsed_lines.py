"""The syntax trees of generated lines, parsed once: the passes that read and rewrite the
backward code (shape analysis, specialisation, cleanups) parse the same lines many times.
A tree is shared by every reader: none may change it."""
from __future__ import annotations

import ast
import functools


@functools.lru_cache(maxsize=1 << 14)
def parsed_line(code: str) -> ast.Module:
    """``ast.parse(code)``, the same tree for the same code."""
    return ast.parse(code)


@functools.lru_cache(maxsize=1 << 14)
def line_names(code: str) -> frozenset[str]:
    """The names ``code`` reads or writes (not attributes)."""
    return frozenset(n.id for n in ast.walk(parsed_line(code)) if isinstance(n, ast.Name))
