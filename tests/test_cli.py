"""The command line, driven in-process: output and exit codes."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from s2sad.cli import highlight, main

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "stable_softmax.py")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_prints_generated_gradient(capsys):
    code, out, err = run(capsys, f"{EXAMPLE}:loss", "--wrt", "W", "b")
    assert code == 0
    assert "def grad_loss(W, b, X, Y):" in out
    assert "return distinct(grad_like(dW, W), grad_like(db, b))" in out
    assert "\x1b[" not in out  # not a terminal: no colour
    assert "stop_gradient(np.max(logits, axis=-1, keepdims=True))" in out


def test_wrt_by_index_and_default(capsys):
    _, by_name, _ = run(capsys, f"{EXAMPLE}:loss", "--wrt", "W")
    _, by_index, _ = run(capsys, f"{EXAMPLE}:loss", "--wrt", "0")
    _, default, _ = run(capsys, f"{EXAMPLE}:loss")
    assert by_name == by_index == default


def test_a_method_named_through_its_class(capsys, tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import numpy as np\n\n\nclass Model:\n    scale = 2.0\n\n"
                    "    def loss(self, w):\n        return self.scale * np.sum(np.sin(w))\n")
    code, out, _ = run(capsys, f"{path}:Model.loss", "--wrt", "w")
    assert code == 0 and "def grad_loss(self, w):" in out and "np.cos(w)" in out
    code, _, err = run(capsys, f"{path}:Model.fit")
    assert code != 0 and "has no function 'Model.fit'" in err


def test_output_file(capsys, tmp_path):
    out_file = tmp_path / "dloss.py"
    code, out, err = run(capsys, f"{EXAMPLE}:loss", "--output", str(out_file))
    assert code == 0 and out == "" and "wrote" in err
    text = out_file.read_text()
    namespace: dict = {}
    exec(compile(text, str(out_file), "exec"), namespace)
    assert callable(namespace["grad_loss"])


def test_color_always(capsys):
    code, out, _ = run(capsys, f"{EXAMPLE}:loss", "--color", "always")
    assert code == 0 and "\x1b[34mdef\x1b[39;49;00m" in out  # Pygments' terminal colours


def test_highlight_keeps_text():
    src = "def f(x):\n    # note\n    return x + 1.5  # tail\n"
    coloured = highlight(src)
    assert coloured != src and re.sub(r"\x1b\[[0-9;]*m", "", coloured) == src


def test_stages(capsys):
    code, out, _ = run(capsys, f"{EXAMPLE}:loss", "--stages")
    assert code == 0
    names = [line.split()[4] for line in out.splitlines() if line.startswith("# ---- after pass")]
    assert names == ["source", "parse", "resolve", "normalize", "activity", "reverse", "optimize",
                     "codegen"]
    assert "# stopped by stop_gradient" in out


def test_module_path_target(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    code, out, _ = run(capsys, "golden_functions:scalar")
    assert code == 0 and "def grad_scalar(x):" in out


@pytest.mark.parametrize("target, words", [
    ("nope.py:f", "no such file"),
    (f"{EXAMPLE}:missing", "has no function 'missing'"),
    ("no_such_module_xyz:f", "cannot import module"),
])
def test_bad_targets_exit_1(capsys, target, words):
    code, out, err = run(capsys, target)
    assert code == 1 and words in err and "Traceback" not in err


def test_syntax_error_in_file(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    return x +\n")
    code, _, err = run(capsys, f"{bad}:f")
    assert code == 1
    assert err.startswith(f"{bad}:2:") and "invalid syntax" in err and "Traceback" not in err


def test_unsupported_construct_exit_1_with_location(capsys, tmp_path):
    src = tmp_path / "loopy.py"
    src.write_text("import numpy as np\n\ndef f(x):\n    try:\n        y = x\n        y = 2 * y\n    except ValueError:\n"
                   "        y = 0 * x\n    return np.sum(y)\n")
    code, _, err = run(capsys, f"{src}:f")
    assert code == 1
    assert err.splitlines()[0].startswith(f"{src}:4:5: 'try' ... 'except' is followed when its body is one statement")
    assert "Traceback" not in err


def test_debug_shows_traceback(capsys, tmp_path):
    src = tmp_path / "loopy.py"
    src.write_text("def f(x):\n    del x.flat\n    return 1.0\n")
    code, _, err = run(capsys, f"{src}:f", "--debug")
    assert code == 1 and "Traceback" in err


def test_bad_wrt_exit_1(capsys):
    code, _, err = run(capsys, f"{EXAMPLE}:loss", "--wrt", "nope")
    assert code == 1 and "names no parameter" in err


@pytest.mark.parametrize("target", ["justafile", "mod.py", "m.py:", ":f"])
def test_malformed_target_is_a_usage_error(capsys, target):
    code, out, err = run(capsys, target)
    assert code == 2 and "expected FILE.py:FUNCTION" in err and err.startswith("usage: s2sad")
    assert "Traceback" not in err


def test_wrt_repeated_or_several(capsys):
    _, several, _ = run(capsys, f"{EXAMPLE}:loss", "--wrt", "W", "b")
    code, repeated, _ = run(capsys, f"{EXAMPLE}:loss", "--wrt", "W", "--wrt", "b")
    assert code == 0 and repeated == several and "def grad_loss(W, b, X, Y):" in repeated
    assert "gradient with respect to W, b." in repeated


def test_version_and_help(capsys):
    import s2sad

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"s2sad {s2sad.__version__}"
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0 and "s2sad explain FILE.py:FUNCTION" in out


def test_output_into_missing_folder(capsys, tmp_path):
    target = tmp_path / "no" / "such" / "dloss.py"
    code, out, err = run(capsys, f"{EXAMPLE}:loss", "--output", str(target))
    assert code == 1 and err.startswith(f"s2sad: error: cannot write {target}: No such file")
    assert "Traceback" not in err


def test_console_script_imports_from_current_directory(tmp_path):
    """``s2sad pkg.sub.m:f`` finds the package in the current directory, as ``python -m`` does."""
    pkg = tmp_path / "pkg" / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x ** 2)\n")
    script = "import sys\nfrom s2sad.cli import main\nsys.exit(main())\n"
    # run as an installed console script runs: sys.path[0] is the script's folder, not the cwd
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "s2sad_script.py").write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(tmp_path / "bin" / "s2sad_script.py"), "pkg.sub.m:f"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "def grad_f(x):" in done.stdout


def test_usage_error_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--color", "sometimes", f"{EXAMPLE}:loss"])
    assert info.value.code == 2


def test_cli_entry_points():
    """``python cli.py`` from a checkout and ``python -m s2sad`` run the same CLI."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    a = subprocess.run([sys.executable, str(ROOT / "cli.py"), f"{EXAMPLE}:loss"], capture_output=True,
                       text=True, env=env, cwd=ROOT)
    b = subprocess.run([sys.executable, "-m", "s2sad", f"{EXAMPLE}:loss"], capture_output=True,
                       text=True, env=env, cwd=ROOT)
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout and "def grad_loss" in a.stdout


def test_explain_subcommand(capsys):
    code, out, err = run(capsys, "explain", f"{EXAMPLE}:loss", "--wrt", "W", "b")
    assert code == 0
    assert "stop_gradient: no adjoint for its argument" in out
    assert "no loop: the gradient saves nothing" in out


def test_explain_bad_target_exit_1(capsys):
    code, out, err = run(capsys, "explain", "nope.py:f")
    assert code == 1 and "no such file" in err and "Traceback" not in err


@pytest.mark.parametrize("mode, signature", [
    ("forward", "def jvp_loss(W, b, X, Y, tangent):"),
    ("hvp", "def jvp_grad_loss(W, b, X, Y, tangent):"),
    ("reverse", "def grad_loss(W, b, X, Y):"),
])
def test_modes(capsys, mode, signature):
    code, out, _ = run(capsys, f"{EXAMPLE}:loss", "--wrt", "W", "--mode", mode)
    assert code == 0 and signature in out
