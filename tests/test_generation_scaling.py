"""Generation does work linear in the function's length: the number of Python and C calls
the compiler makes for a function of n lines, and for the first call of its gradient (which
generates code specialised to the arguments' shapes), grows in proportion to n.

Counted, not timed (times on a shared machine are noise): a pass that rescans the whole
function for each line (quadratic) shows up as a count that grows with n squared.  The
chain is ``benchmarks/generation.py``'s; the other shapes each once hid such a rescan.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import s2sad
from gradcheck import count_calls

ROOT = Path(__file__).resolve().parents[1]


def _benchmark_chain(n: int) -> str:
    spec = importlib.util.spec_from_file_location("generation", ROOT / "benchmarks" / "generation.py")
    generation = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generation)
    return generation.module(n)


SHAPES: dict[str, Callable[[int], str]] = {
    "chain": _benchmark_chain,
    # a list built line by line (each change is checked against the loops over the list)
    "appends": lambda n: "import numpy as np\n\ndef f(W, x):\n    hs = [x]\n"
    + "    hs.append(np.tanh(W @ hs[-1]))\n" * n + "    return np.sum(np.stack(hs))\n",
    # a Python function called on each line (each argument may pass a closure)
    "calls": lambda n: "import numpy as np\n\ndef g(h, W):\n    return np.tanh(W @ h)\n\n"
    "def f(W, x):\n    h = x\n" + "    h = g(h, W) + h\n" * n + "    return np.sum(h)\n",
    # a long loop body (its tape kept in arrays, each saved name looked at once)
    "loop": lambda n: "import numpy as np\n\ndef f(W, x):\n    h = x\n    for i in range(3):\n"
    + "        h = np.tanh(W @ h) + 0.1 * h\n" * n + "    return np.sum(h)\n",
}


def _module(tmp_path: Path, shape: str, n: int):
    path = tmp_path / f"scaling_{shape}_{n}.py"
    path.write_text(SHAPES[shape](n))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _work(tmp_path: Path, shape: str, n: int) -> tuple[int, int]:
    module = _module(tmp_path, shape, n)
    made: list = []
    generic = count_calls(lambda: made.append(s2sad.grad(module.f)))
    W, x = np.eye(8) * 0.5, np.linspace(-1.0, 1.0, 8)
    specialised = count_calls(lambda: made[0](W, x))
    return generic, specialised


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_generation_work_grows_linearly_with_the_function(tmp_path, monkeypatch, shape):
    monkeypatch.setenv("S2SAD_CACHE", "0")
    small, large = _work(tmp_path, shape, 30), _work(tmp_path, shape, 90)
    what = ("grad(f)", "its first call")
    for i in (0, 1):
        # three times the lines: at most 3.5 times the calls (a fixed part makes it less than 3)
        assert large[i] <= 3.5 * small[i], (f"{shape}, {what[i]}: {small[i]} calls at 30 lines, {large[i]} "
                                            f"at 90 ({large[i] / small[i]:.2f}x for 3x)")
