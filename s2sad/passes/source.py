"""Pass 1: read the function's source, dedent it, and remember where it came from."""
from __future__ import annotations

import inspect
import textwrap
import types
from dataclasses import dataclass

from ..errors import Location, SourceError


@dataclass(frozen=True)
class FunctionSource:
    """A function's dedented source and the map back to its file."""

    fn: types.FunctionType
    text: str  # dedented source, decorators included (the parser skips them)
    filename: str
    first_line: int  # file line number of the first line of ``text``
    indent: int  # columns removed by dedenting
    file_lines: tuple[str, ...]  # the source lines as they are in the file

    def location(self, line: int, column: int) -> Location:
        """Map a 1-based line and 0-based column in ``text`` to the file."""
        source_line = self.file_lines[line - 1] if 0 < line <= len(self.file_lines) else ""
        return Location(self.filename, self.first_line + line - 1, column + self.indent + 1,
                        source_line)


def read_source(fn: object) -> FunctionSource:
    """Get the source of a Python function, or a clear :class:`SourceError`."""
    if not isinstance(fn, types.FunctionType):
        kind = type(fn).__name__
        raise SourceError(
            f"s2sad differentiates Python functions defined with 'def'; {fn!r} is a {kind}, "
            f"which has no Python source. Register a rule for it with s2sad.defvjp, or call it "
            f"from a Python function"
        )
    if fn.__name__ == "<lambda>":
        raise SourceError(
            f"cannot differentiate a lambda ({fn.__code__.co_filename}:{fn.__code__.co_firstlineno}); "
            f"define the function with 'def'"
        )
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise SourceError(
            f"cannot read the source of {fn.__qualname__} (defined in {fn.__code__.co_filename}): "
            f"{exc}. s2sad reads source code, so define the function in a file (or a notebook "
            f"cell), not in the interactive prompt or with exec()"
        ) from None
    raw = "".join(lines)
    text = textwrap.dedent(raw)
    first = lines[0] if lines else ""
    indent = len(first) - len(first.lstrip()) if text.strip() else 0
    return FunctionSource(fn, text, fn.__code__.co_filename, max(first_line, 1), indent,
                          tuple(lines))
