"""Errors and warnings that point at the user's code, not at s2sad's insides.

Like JAX's traceback filtering: a refusal raised deep inside the compiler reaches
the user with s2sad's own frames removed, and a warning is attributed to the
user's line that asked for the gradient.  ``S2SAD_DEBUG=1`` keeps every frame.
"""
from __future__ import annotations

import functools
import os
import sys
import types
from typing import Any, Callable, TypeVar

from .environment import variable
from .errors import S2SADError

F = TypeVar("F", bound=Callable[..., Any])

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def is_internal(filename: str) -> bool:
    """Whether a frame's file is s2sad's own code or code s2sad generated."""
    return filename.startswith(PACKAGE_DIR) or filename.startswith("<s2sad ")


def debugging() -> bool:
    return variable("S2SAD_DEBUG") not in (None, "", "0")


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes ``warnings.warn`` name the first frame outside s2sad."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level


def _user_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    frames = []
    while tb is not None:
        if not is_internal(tb.tb_frame.f_code.co_filename):
            frames.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(frames):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def user_errors(fn: F) -> F:
    """Re-raise an :class:`S2SADError` from ``fn`` without s2sad's frames (unless debugging)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except S2SADError as exc:
            if debugging() or type(exc).__name__ == "InternalCompilerError":
                raise
            raise exc.with_traceback(_user_frames(exc.__traceback__)) from None

    return wrapper  # type: ignore[return-value]
