"""The syntax trees of generated lines, parsed once: the passes that read and rewrite the
backward code (shape analysis, specialisation, cleanups) parse the same lines many times.
A tree is shared by every reader: none may change it.  Also where a line's nodes stand in
its text (``Spans``), and the line with names replaced (``rename``)."""
from __future__ import annotations

import ast
import functools
import re


@functools.lru_cache(maxsize=1 << 14)
def parsed_line(code: str) -> ast.Module:
    """``ast.parse(code)``, the same tree for the same code."""
    return ast.parse(code)


@functools.lru_cache(maxsize=1 << 14)
def line_names(code: str) -> frozenset[str]:
    """The names ``code`` reads or writes (not attributes)."""
    return frozenset(n.id for n in ast.walk(parsed_line(code)) if isinstance(n, ast.Name))


_WORD = re.compile(r"[^\W\d]\w*")  # (every name the code may read, and more)


def rename(code: str, renamed: dict[str, str]) -> str:
    """``code`` reading ``renamed[a]`` wherever it reads ``a``."""
    if renamed.keys().isdisjoint(_WORD.findall(code)):
        return code  # (no name to rename: parsed for nothing)
    spans = Spans(code)
    return spans.replaced([(*spans.span(n), renamed[n.id]) for n in ast.walk(parsed_line(code))
                           if isinstance(n, ast.Name) and n.id in renamed])


class Spans:
    """Where the nodes of an ast of ``code`` stand in it (ast's columns count bytes), and
    ``code`` with some of those spans replaced."""

    def __init__(self, code: str) -> None:
        self.source = code.encode()
        self.starts = [0]
        for line in code.split("\n"):
            self.starts.append(self.starts[-1] + len(line.encode()) + 1)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.starts[node.lineno - 1] + node.col_offset,  # type: ignore[attr-defined]
                self.starts[node.end_lineno - 1] + node.end_col_offset)  # type: ignore[attr-defined]

    def text(self, node: ast.AST) -> str:
        return self.source[slice(*self.span(node))].decode()

    def replaced(self, edits: list[tuple[int, int, str]]) -> str:
        """The code with each ``(start, end, new)`` span replaced (spans do not overlap)."""
        source = self.source
        for start, end, new in sorted(edits, reverse=True):
            source = source[:start] + new.encode() + source[end:]
        return source.decode()
