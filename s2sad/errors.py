"""Errors and warnings raised by s2sad.

Every error that concerns the user's code carries a :class:`Location`, and
prints like a compiler diagnostic::

    model.py:12:9: no gradient rule for scipy.special.expit
        y = expit(x)
            ^
"""
from __future__ import annotations

import linecache
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A place in the user's source: file name, 1-based line and column."""

    filename: str
    line: int
    column: int
    source_line: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}"


#: For each file of generated code, the user's source line each of its lines comes from
#: (an error found in generated code, when it is differentiated again, is shown there).
GENERATED_LINES: dict[str, Mapping[int, Location]] = {}
_PACKAGE = __file__.rsplit("errors.py", 1)[0]


class S2SADError(Exception):
    """Base class of every error s2sad raises about the user's code or call.  Raised without
    a location while generated code runs (a run-time check of a helper), it is shown at the
    user's line that the innermost generated code running comes from."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location or _running_generated_line()

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        loc = self.location
        text = f"{loc}: {self.message}"
        # (a check that generated code runs knows the place only: the line is read from the file)
        source_line = loc.source_line or linecache.getline(loc.filename, loc.line)
        if source_line.strip():
            stripped = source_line.rstrip("\n")
            caret = " " * max(loc.column - 1, 0) + "^"
            text += f"\n    {stripped}\n    {caret}"
        return text


def user_line(loc: Location | None) -> Location | None:
    """The user's line that ``loc``, a line of generated code, comes from: through each code
    generated from generated code (the jvp of a gradient's code, for an hvp) to the user's."""
    for _ in range(16):  # (a chain of transformations, each code made from the one before)
        origin = GENERATED_LINES.get(loc.filename, {}).get(loc.line) if loc is not None else None
        if origin is None:
            return loc
        loc = origin
    return loc


def _running_generated_line() -> Location | None:
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        origins = GENERATED_LINES.get(frame.f_code.co_filename)
        if origins is not None:
            return user_line(origins.get(frame.f_lineno))
        frame = frame.f_back
    return None


def failing_generated_line(tb: types.TracebackType | None) -> Location | None:
    """The user's line of the innermost generated code in traceback ``tb`` if the error was
    raised there, by an operation of its own (a method or operator, in an array library's
    code), not in one of s2sad's helpers; else None."""
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename in GENERATED_LINES:
            found = user_line(GENERATED_LINES[filename].get(tb.tb_lineno))
        elif found is not None and filename.startswith(_PACKAGE):
            return None
        tb = tb.tb_next
    return found


class SourceError(S2SADError):
    """The function's source cannot be read (builtin, C extension, REPL, exec)."""


class UnsupportedSyntaxError(S2SADError):
    """The function uses a Python construct s2sad does not differentiate."""


class NoGradientRuleError(S2SADError):
    """An active value flows into a function that has no gradient rule."""


class WrtError(S2SADError):
    """``wrt`` names no parameter, is out of range, or is not differentiable."""


class RecursionDepthError(S2SADError):
    """Generated code for a recursive function recursed past Python's recursion limit."""


class NonScalarOutputError(S2SADError):
    """The differentiated function did not return a scalar."""


class HasAuxError(S2SADError):
    """``has_aux=True``, but the function did not return a pair ``(output, aux)``."""


class NonDifferentiableInputError(S2SADError):
    """A gradient was asked for with respect to an integer or boolean value."""


class RuleError(S2SADError):
    """A gradient rule declaration is malformed."""


class InternalRuleError(S2SADError):
    """Generated code calls one of s2sad's own helpers that has no declared rule (a bug in s2sad)."""


class JitError(S2SADError):
    """``jit=True``: numba is not installed, or cannot compile a construct of the function."""


class ZeroGradientWarning(UserWarning):
    """Some ``wrt`` argument cannot influence the output: its gradient is zero."""


class JitWarning(UserWarning):
    """``jit="auto"``: numba cannot compile the function; the NumPy code runs instead."""
