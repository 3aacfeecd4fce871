"""The disk cache of generated code: a second process reuses what a first one generated,
and a stale or damaged entry is never trusted (s2sad/disk_cache.py).

Each test runs the user's code in fresh Python processes, with its own cache directory."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

MODULE = """\
import numpy as np

ACT = np.tanh
W = np.eye(3) * 0.5


def f(x):
    h = ACT(W @ x) + 0.1 * x
    return np.sum(h ** 2)
"""

PROBE = """\
import json, sys, warnings
import numpy as np
import mod, s2sad
{before}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    g = s2sad.grad(mod.{name})
    value = g(np.array([0.3, -1.2, 2.0]))
print(json.dumps({{"grad": np.asarray(value).tolist(), "source": g.__s2sad_source__,
                  "compiled": "libcst" in sys.modules or "s2sad.pipeline" in sys.modules,
                  "warnings": len(caught)}}))
"""

X = np.array([0.3, -1.2, 2.0])


def expected(act, dact, scale=0.1):
    """The gradient of MODULE's f with ACT = act."""
    W = np.eye(3) * 0.5
    u = W @ X
    h = act(u) + scale * X
    return W.T @ (2 * h * dact(u)) + scale * 2 * h


TANH = expected(np.tanh, lambda u: 1 - np.tanh(u) ** 2)
SIN = expected(np.sin, np.cos)


def write(folder: Path, text: str, name: str = "mod.py") -> None:
    (folder / name).write_text(text)  # (no bytecode is cached: PYTHONDONTWRITEBYTECODE)


def env(folder: Path, cache: Path | str | None, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("S2SAD_")}
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(folder)])
    out["PYTHONDONTWRITEBYTECODE"] = "1"
    if cache is not None:
        out["S2SAD_CACHE_DIR"] = str(cache)
    out.update(extra)
    return out


def start(folder: Path, cache: Path | str | None, before: str = "", name: str = "f",
          **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PROBE.format(before=textwrap.dedent(before), name=name)],
                            cwd=folder, env=env(folder, cache, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=240)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def run(folder: Path, cache: Path | str | None, before: str = "", name: str = "f", **extra: str) -> dict:
    return finish(start(folder, cache, before, name, **extra))


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.s2sad")) if cache.is_dir() else []


def test_a_second_process_reuses_the_generated_code_without_the_compiler(tmp_path):
    write(tmp_path, MODULE)
    cache = tmp_path / "cache"
    first = run(tmp_path, cache)
    assert first["compiled"]
    assert len(entries(cache)) == 2  # the generic code, and the code specialised to the call's shapes
    second = run(tmp_path, cache)
    assert not second["compiled"]  # neither libcst nor the pipeline was imported
    assert second["source"] == first["source"]
    assert second["grad"] == first["grad"]
    np.testing.assert_allclose(second["grad"], TANH)


def test_editing_the_functions_file_regenerates(tmp_path):
    write(tmp_path, MODULE)
    cache = tmp_path / "cache"
    run(tmp_path, cache)
    write(tmp_path, MODULE.replace("ACT = np.tanh", "ACT = np.sin"))
    edited = run(tmp_path, cache)
    assert edited["compiled"]
    np.testing.assert_allclose(edited["grad"], SIN)
    write(tmp_path, MODULE.replace("0.1 * x", "0.3 * x"))
    edited = run(tmp_path, cache)
    assert edited["compiled"]
    np.testing.assert_allclose(edited["grad"], expected(np.tanh, lambda u: 1 - np.tanh(u) ** 2, 0.3))


def test_editing_a_module_the_function_reads_regenerates(tmp_path):
    """The function's file is unchanged: the dependency checks find the edit."""
    write(tmp_path, MODULE.replace("ACT = np.tanh", "import helpers").replace("ACT(", "helpers.ACT("))
    write(tmp_path, "import numpy as np\nACT = np.tanh\n", "helpers.py")
    cache = tmp_path / "cache"
    np.testing.assert_allclose(run(tmp_path, cache)["grad"], TANH)
    assert not run(tmp_path, cache)["compiled"]
    write(tmp_path, "import numpy as np\nACT = np.sin\n", "helpers.py")
    edited = run(tmp_path, cache)
    assert edited["compiled"]
    np.testing.assert_allclose(edited["grad"], SIN)


def test_editing_a_helper_function_is_a_miss(tmp_path):
    write(tmp_path, MODULE.replace("import numpy as np\n", "import numpy as np\nfrom helpers import scale\n")
          .replace("return np.sum(h ** 2)", "return np.sum(h ** 2) * scale()"))
    write(tmp_path, "def scale():\n    return 1.0\n", "helpers.py")
    cache = tmp_path / "cache"
    run(tmp_path, cache)
    assert not run(tmp_path, cache)["compiled"]
    write(tmp_path, "def scale():\n    return 2.0\n", "helpers.py")
    edited = run(tmp_path, cache)
    assert edited["compiled"]
    np.testing.assert_allclose(edited["grad"], 2 * TANH)


def test_a_global_rebound_in_the_second_process(tmp_path):
    write(tmp_path, MODULE)
    cache = tmp_path / "cache"
    run(tmp_path, cache)
    rebound = run(tmp_path, cache, before="mod.ACT = np.sin")
    np.testing.assert_allclose(rebound["grad"], SIN)
    # the entry now holds the code for np.sin: a process with np.tanh does not take it
    np.testing.assert_allclose(run(tmp_path, cache)["grad"], TANH)


def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path):
    write(tmp_path, MODULE)
    cache = tmp_path / "cache"
    first = run(tmp_path, cache, S2SAD_SPECIALIZE="0")  # (one entry: the generic code)
    [entry] = entries(cache)
    good = entry.read_bytes()
    for damaged in (b"\x00\xffgarbage" * 50, good[:len(good) // 2], good.replace(b"tanh", b"sinh")):
        entry.write_bytes(damaged)
        again = run(tmp_path, cache, S2SAD_SPECIALIZE="0")
        assert again["compiled"]
        assert again["source"] == first["source"]
        np.testing.assert_allclose(again["grad"], TANH)
        assert entry.read_bytes() == good  # rewritten
    assert not run(tmp_path, cache, S2SAD_SPECIALIZE="0")["compiled"]


def test_turned_off_it_writes_nothing(tmp_path):
    write(tmp_path, MODULE)
    cache = tmp_path / "cache"
    run(tmp_path, cache, S2SAD_CACHE="0")
    assert run(tmp_path, cache, S2SAD_CACHE="0")["compiled"]
    assert entries(cache) == []


def test_concurrent_writers_leave_a_valid_entry(tmp_path):
    write(tmp_path, MODULE)
    cache = tmp_path / "cache"
    results = [finish(p) for p in [start(tmp_path, cache) for _ in range(2)]]
    assert results[0]["grad"] == results[1]["grad"]
    assert len(entries(cache)) == 2  # the generic and the specialised code, each written once
    assert [p.name for p in cache.iterdir() if p.name.startswith(".tmp")] == []
    reused = run(tmp_path, cache)
    assert not reused["compiled"]
    np.testing.assert_allclose(reused["grad"], TANH)


def test_an_unwritable_directory_means_no_cache(tmp_path):
    write(tmp_path, MODULE)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for _ in range(2):
        out = run(tmp_path, blocker / "cache")
        assert out["compiled"]
        np.testing.assert_allclose(out["grad"], TANH)


def test_a_function_with_a_differentiated_callee_is_not_stored(tmp_path):
    write(tmp_path, MODULE + "\n\ndef act(u):\n    return np.tanh(u)\n\n\ndef g(x):\n"
          "    return np.sum((act(W @ x) + 0.1 * x) ** 2)\n")
    cache = tmp_path / "cache"
    first = run(tmp_path, cache, name="g")
    np.testing.assert_allclose(first["grad"], TANH)
    assert entries(cache) == []
    assert run(tmp_path, cache, name="g")["compiled"]


def test_a_function_that_warns_is_not_stored(tmp_path):
    """A zero gradient is warned about at generation: a cached copy would stay silent."""
    write(tmp_path, MODULE + "\n\ndef zero(x):\n    return np.sum(W) + 0.0 * len(x)\n")
    cache = tmp_path / "cache"
    for _ in range(2):
        out = run(tmp_path, cache, name="zero")
        assert out["warnings"] == 1
    assert entries(cache) == []


def test_a_user_rule_turns_the_cache_off(tmp_path):
    write(tmp_path, MODULE)
    cache = tmp_path / "cache"
    declare = "s2sad.nondifferentiable(len)"
    run(tmp_path, cache, before=declare)
    assert entries(cache) == []


def test_a_closure_reads_its_data_live(tmp_path):
    write(tmp_path, MODULE + "\n\ndef make(scale):\n    def inner(x):\n"
          "        return np.sum(np.tanh(x) * scale)\n    return inner\n\n\n"
          "SCALE = float(__import__('os').environ.get('SCALE', '1'))\nnested = make(SCALE)\n")
    cache = tmp_path / "cache"
    dtanh = 1 - np.tanh(X) ** 2
    np.testing.assert_allclose(run(tmp_path, cache, name="nested")["grad"], dtanh)
    again = run(tmp_path, cache, name="nested", SCALE="3")
    assert not again["compiled"]
    np.testing.assert_allclose(again["grad"], 3 * dtanh)


def test_a_library_function_replaced_in_the_second_process(tmp_path):
    write(tmp_path, MODULE + "\n\ndef norm2(x):\n    return np.linalg.norm(x) ** 2\n")
    write(tmp_path, "import numpy as np\n\n\ndef norm(x):\n    return 2 * np.sqrt(np.sum(x * x))\n",
          "helpers.py")
    cache = tmp_path / "cache"
    np.testing.assert_allclose(run(tmp_path, cache, name="norm2")["grad"], 2 * X)
    assert not run(tmp_path, cache, name="norm2")["compiled"]
    patched = run(tmp_path, cache, before="import helpers\nnp.linalg.norm = helpers.norm", name="norm2")
    assert patched["compiled"]
    np.testing.assert_allclose(patched["grad"], 8 * X)
