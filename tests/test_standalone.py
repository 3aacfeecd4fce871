"""``--standalone`` / ``adjoint_source(..., standalone=True)``: a module whose only import is
NumPy.  For the four examples' losses the module is imported in a fresh process in which
s2sad cannot be imported, and its gradient is compared with s2sad's and with finite
differences."""
from __future__ import annotations

import ast
import importlib.util
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from s2sad import adjoint_source, grad
from s2sad.cli import main
from s2sad.standalone import StandaloneError
from tests.gradcheck import numerical_grad

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

RUNNER = textwrap.dedent('''
    import importlib.abc, importlib.util, pickle, sys

    class NoS2SAD(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "s2sad" or name.startswith("s2sad."):
                raise ImportError("s2sad is not installed here")
            return None

    sys.meta_path.insert(0, NoS2SAD())
    module_path, function, data = sys.argv[1:]
    spec = importlib.util.spec_from_file_location("written", module_path)
    written = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(written)
    with open(data, "rb") as fh:
        args = pickle.load(fh)
    with open(data, "wb") as fh:
        pickle.dump(getattr(written, function)(*args), fh)
''')


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def softmax_case():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 4))
    Y = np.eye(3)[rng.integers(0, 3, 6)]
    return "stable_softmax", "loss", ("W", "b"), (rng.normal(size=(4, 3)), rng.normal(size=3), X, Y)


def em_case():
    rng = np.random.default_rng(1)
    k, d = 2, 2
    params = {"means": rng.normal(size=(k, d)), "log_diagonal": 0.1 * rng.normal(size=(k, d)),
              "off_diagonal": 0.1 * rng.normal(size=(k, d, d)), "logits": rng.normal(size=k)}
    return "em_gmm", "m_step_objective", "params", (params, rng.normal(size=(5, d)))


def rbm_case():
    rng = np.random.default_rng(2)
    v = 1.0 * (rng.random((4, 5)) < 0.5)
    return ("rbm_cd", "cd_loss", ("W", "b", "c"),
            (0.1 * rng.normal(size=(5, 3)), np.zeros(5), np.zeros(3), v, 1, np.random.default_rng(7)))


def adversarial_case():
    rng = np.random.default_rng(3)
    params = [0.3 * rng.normal(size=(4, 5)), np.zeros(5), 0.3 * rng.normal(size=(5, 3)), np.zeros(3)]
    X = rng.random((6, 4))
    return "adversarial", "adversarial_loss", "params", (params, X, np.eye(3)[rng.integers(0, 3, 6)], 0.1)


def flatten(g) -> np.ndarray:
    if isinstance(g, dict):
        return np.concatenate([flatten(g[k]) for k in sorted(g)])
    if isinstance(g, (list, tuple)):
        return np.concatenate([flatten(v) for v in g])
    return np.ravel(g)


@pytest.mark.parametrize("case", [softmax_case, em_case, rbm_case, adversarial_case],
                         ids=["softmax", "em", "rbm", "adversarial"])
def test_standalone_module_runs_without_s2sad(tmp_path, case):
    name, function, wrt, args = case()
    loss = getattr(load(name), function)
    text = adjoint_source(loss, wrt, standalone=True)
    tree = ast.parse(text)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "numpy" in imported and not any(m.split(".")[0] == "s2sad" for m in imported)
    assert imported - {"numpy"} <= sys.stdlib_module_names  # NumPy and the standard library
    module = tmp_path / f"grad_{name}.py"
    module.write_text(text)
    data = tmp_path / "args.pkl"
    data.write_bytes(pickle.dumps(args))
    generated = next(n.name for n in reversed(tree.body) if isinstance(n, ast.FunctionDef)
                     and n.name == f"grad_{function}")
    run = subprocess.run([sys.executable, "-c", RUNNER, str(module), generated, str(data)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    written = pickle.loads(data.read_bytes())
    fresh = pickle.loads(pickle.dumps(args))  # (the RBM's random generator, in the same state)
    expected = grad(loss, wrt)(*fresh)
    np.testing.assert_allclose(flatten(written), flatten(expected), rtol=1e-12, atol=1e-12)
    if name == "stable_softmax":  # (elsewhere stop_gradient makes the gradient differ from the
        # function's: there s2sad's own gradient, tested against its definition, is the reference)
        for index in (0, 1):
            numeric = numerical_grad(loss, list(args), index)
            np.testing.assert_allclose(written[index], numeric, rtol=1e-6, atol=1e-8)


def test_cli_standalone_writes_a_numpy_only_module(tmp_path, capsys):
    out = tmp_path / "dloss.py"
    assert main([str(EXAMPLES / "stable_softmax.py") + ":loss", "--wrt", "W", "b", "--standalone",
                 "--output", str(out)]) == 0
    text = out.read_text()
    assert "s2sad" not in "\n".join(l for l in text.splitlines() if l.startswith(("import", "from")))
    assert "def grad_loss(W, b, X, Y):" in text and "def stop_gradient(x):" in text


def user_function(tmp_path, module: str, source: str, function: str = "loss"):
    """``function`` from a module written from ``source`` (importable while it is differentiated)."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(module, tmp_path / f"{module}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return getattr(loaded, function)


def test_constants_of_the_users_module_are_copied(tmp_path):
    loss = user_function(tmp_path, "user_consts", '''
        import numpy as np

        SCALE = 0.25
        SHIFT = (1.0, 2.0)


        def loss(x):
            return SCALE * np.sum((x - SHIFT[0]) ** 2)
    ''')
    text = adjoint_source(loss, standalone=True)
    assert "SCALE = 0.25" in text and "SHIFT = (1.0, 2.0)" in text
    namespace: dict = {}
    exec(compile(text, "written", "exec"), namespace)
    np.testing.assert_allclose(namespace["grad_loss"](np.array([1.0, 3.0])), [0.0, 1.0])


def test_an_array_global_is_refused_with_advice(tmp_path):
    loss = user_function(tmp_path, "user_array", '''
        import numpy as np

        OFFSETS = np.array([1.0, 2.0])


        def loss(x):
            return np.sum((x - OFFSETS) ** 2)
    ''')
    with pytest.raises(StandaloneError, match="pass the array as an argument"):
        adjoint_source(loss, standalone=True)


def test_helpers_are_copied_with_what_they_use_from_other_runtime_modules(tmp_path):
    """The helpers live in the modules of the package s2sad.runtime and use each other's
    names (extremum_grad: reductions, stepping, dtypes; norm_grad: linalg; getitem_grad:
    indexing, trees, foreign): the module copies each definition, from whichever module."""
    loss = user_function(tmp_path, "user_spread", '''
        import numpy as np


        def loss(x, w):
            h = np.tanh(x @ w)
            return np.sum(np.max(h, axis=1)) + np.linalg.norm(h) + np.sum(np.sort(x[1:], axis=0) ** 2)
    ''')
    text = adjoint_source(loss, ("x", "w"), standalone=True)
    copied = {n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    assert {"extremum_grad", "expand_reduced", "real_only", "dtype_kind", "norm_grad", "getitem_grad", "rebuild",
            "is_foreign"} <= copied
    rng = np.random.default_rng(4)
    args = (rng.normal(size=(4, 3)), rng.normal(size=(3, 2)))
    module = tmp_path / "grad_spread.py"
    module.write_text(text)
    data = tmp_path / "args.pkl"
    data.write_bytes(pickle.dumps(args))
    run = subprocess.run([sys.executable, "-c", RUNNER, str(module), "grad_loss", str(data)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    written = pickle.loads(data.read_bytes())
    np.testing.assert_allclose(flatten(written), flatten(grad(loss, ("x", "w"))(*args)), rtol=1e-12, atol=1e-12)


def test_a_ufunc_method_is_bound_by_its_path(tmp_path):
    loss = user_function(tmp_path, "user_reduce", '''
        import numpy as np


        def loss(x):
            return np.add.reduce(np.multiply.outer(x, x) ** 2, axis=None)
    ''')
    text = adjoint_source(loss, standalone=True)
    assert "np_add_reduce = np.add.reduce" in text
    namespace: dict = {}
    exec(compile(text, "written", "exec"), namespace)
    x = np.array([0.5, -1.5, 2.0])
    np.testing.assert_allclose(namespace["grad_loss"](x), 4 * x * np.sum(x ** 2), rtol=1e-12)  # (sum x^2)^2
