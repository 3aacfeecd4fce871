"""Generation does work linear in the function's length: the number of Python and C calls
the compiler makes for a chain of n lines, and for the first call of its gradient (which
generates code specialised to the arguments' shapes), grows in proportion to n.

Counted, not timed (times on a shared machine are noise): a pass that rescans the whole
function for each line (quadratic) shows up as a count that grows with n squared.  The
chain is ``benchmarks/generation.py``'s.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import s2sad

ROOT = Path(__file__).resolve().parents[1]


def _chain_module(tmp_path: Path, n: int):
    spec = importlib.util.spec_from_file_location("generation", ROOT / "benchmarks" / "generation.py")
    generation = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generation)
    path = tmp_path / f"chain_scaling_{n}.py"
    path.write_text(generation.module(n))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _calls(run) -> int:
    count = 0

    def profile(frame, event, arg) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("S2SAD_CACHE", "0")


def _work(tmp_path: Path, n: int) -> tuple[int, int]:
    module = _chain_module(tmp_path, n)
    made: list = []
    generic = _calls(lambda: made.append(s2sad.grad(module.f)))
    x = np.linspace(-1.0, 1.0, 8)
    specialised = _calls(lambda: made[0](module.W, x))
    return generic, specialised


def test_generation_work_grows_linearly_with_the_function(tmp_path):
    small, large = _work(tmp_path, 40), _work(tmp_path, 120)
    for what, a, b in (("grad(f)", small[0], large[0]), ("its first call", small[1], large[1])):
        # three times the lines: at most 3.5 times the calls (a fixed part makes it less than 3)
        assert b <= 3.5 * a, f"{what}: {a} calls at 40 lines, {b} at 120 ({b / a:.2f}x for 3x)"
