"""s2sad's gradient compiled by numba (``s2sad.grad(f, jit="auto")``): the ``s2sad jit`` column.

Where numba cannot compile a workload's gradient, the column times the NumPy code that
``jit="auto"`` runs instead, and says why.

The caches start empty: numba's and s2sad's disk caches point to a directory made for
this run, so the first call's time is a cold compile (numba compile and one run).  numba is
imported and initialised here, with one trivial compile, as jax's backend is before its
first timed call; that one-time cost is not in any workload's compile time.
"""
from __future__ import annotations

import os
import tempfile
import time
import warnings
from typing import Any, Callable

_CACHE = tempfile.mkdtemp(prefix="s2sad-bench-jit-")
os.environ["NUMBA_CACHE_DIR"] = os.path.join(_CACHE, "numba")
os.environ["S2SAD_JIT_CACHE"] = os.path.join(_CACHE, "s2sad")

import numba  # noqa: E402

import s2sad  # noqa: E402
import s2sad.jit  # noqa: E402
import s2sad.jit_runtime  # noqa: E402,F401

numba.njit(lambda x: x + 1.0)(1.0)

NOTES = [f"s2sad jit: s2sad.grad(f, jit=\"auto\") (the NumPy code where numba cannot compile the gradient), numba {numba.__version__}, caches emptied for this run "
         f"({_CACHE}); its compile time is the first call's (numba compile + one run)"]


class Call:
    """One workload's compiled gradient, called with the workload's arguments."""

    def __init__(self, fn: Callable[..., Any], wrt: Any, args: tuple[Any, ...]) -> None:
        with warnings.catch_warnings():  # jit="auto" warns where numba cannot compile: the
            warnings.simplefilter("ignore", s2sad.JitWarning)  # table says so instead
            self.gradient = s2sad.grad(fn, wrt, jit="auto")
        self.args = args
        self.first = True

    def __call__(self) -> Any:
        if self.first:  # compiles, or finds that numba cannot
            self.first = False
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", s2sad.JitWarning)
                return self.gradient(*self.args)
        return self.gradient(*self.args)

    @property
    def fallback(self) -> str:
        """Why the NumPy code runs instead of compiled code ("" when it does not)."""
        return getattr(self.gradient, "reason", "")

    def first_call_from_cache(self) -> float:
        """Seconds of the first call of a new compiled function for the same code, as in a
        new process: numba loads the machine code from the disk cache."""
        g = self.gradient
        fresh = s2sad.jit.Compiled(g.generated, g.fn, g.wrt, g.kind, g.mode)
        start = time.perf_counter()
        fresh(*self.args)
        return time.perf_counter() - start


def build(fn: Callable[..., Any], wrt: Any, args: tuple[Any, ...]) -> Call:
    return Call(fn, wrt, args)
