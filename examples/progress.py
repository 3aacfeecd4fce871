"""A minimal progress bar, shared by the example scripts (no dependency needed)."""
from __future__ import annotations

import sys
import time


class Progress:
    """A minimal progress bar on stderr; one summary line when stderr is not a terminal."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done = total, label, 0
        self.start = self.drawn = time.perf_counter()
        self.tty = sys.stderr.isatty()

    def update(self, note: str = "") -> None:
        self.done += 1
        now = time.perf_counter()
        sys.stdout.flush()
        if self.tty and (now - self.drawn > 0.1 or self.done == self.total):
            bar = "#" * (30 * self.done // self.total)
            sys.stderr.write(f"\r{self.label} [{bar:.<30}] {self.done}/{self.total} {note}  ")
            self.drawn = now
        if self.done == self.total:
            elapsed = now - self.start
            sys.stderr.write(f" {elapsed:.1f}s\n" if self.tty else
                             f"{self.label}: {self.done}/{self.total}, {note}, {elapsed:.1f}s\n")

    def print(self, text: str) -> None:
        """Print a line of text above the bar."""
        if self.tty:
            sys.stderr.write("\r\033[K")
        print(text, flush=True)
        self.drawn = 0.0
