"""The entry points and backends besides ``grad`` on NumPy (probe backend12), on realistic
programs: an MLP, softmax cross-entropy with ``stop_gradient(np.max(...))``, logistic
regression, an RNN unrolled in a loop, Gaussian log-likelihoods, least squares, a heat-equation
step, FFT and complex losses.

Each program's default gradient is checked against central finite differences (float64) and
JAX; then ``jit=True`` (numba), Dask arrays, PyTorch and JAX arrays (the Array API path),
``vjp``, ``jvp``, ``hvp``, ``hessian`` and ``jacobian`` against it (or against JAX), the
``--standalone`` module imported fresh in a process without s2sad, the disk cache's second
process against the first (bit for bit), and the command line's answers to bad input.
The regression tests of what this probe fixed close the file.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import s2sad
from s2sad import S2SADError, stop_gradient
from s2sad.cli import main
from s2sad.standalone import StandaloneError
from tests.gradcheck import numerical_grad

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve()


# --- programs -----------------------------------------------------------------------------------

def mlp(W1, b1, W2, b2, X, y):
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2 + b2 - y) ** 2)


def softmax_ce(W, b, X, Y):
    logits = X @ W + b
    z = logits - stop_gradient(np.max(logits, axis=-1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=-1))


def logreg(w, X, y):
    z = X @ w
    return np.mean(np.log1p(np.exp(-y * z))) + 0.01 * np.sum(w ** 2)


def rnn(W, U, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h ** 2)


def gauss_ll(mu, log_sigma, x):
    s = np.exp(log_sigma)
    return -np.sum(-0.5 * ((x - mu) / s) ** 2 - log_sigma - 0.5 * np.log(2 * np.pi))


def lstsq(w, A, b):
    r = A @ w - b
    return 0.5 * np.dot(r, r)


def heat(u, nu):
    for _ in range(4):
        v = u.copy()
        v[1:-1] = u[1:-1] + nu * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u = v
    return np.sum(u ** 3)


def fft_loss(x):
    X = np.fft.rfft(x)
    return np.sum(np.abs(X) ** 2 * np.arange(X.shape[0]))


def complex_loss(x):
    z = x * np.exp(1j * x)
    return np.real(np.sum(z * np.conj(z) + z ** 2))


def pendulum(theta, dt):
    omega = 0.0
    for _ in range(20):
        omega = omega - dt * np.sin(theta)
        theta = theta + dt * omega
    return theta ** 2


def _data() -> dict[str, tuple[Callable[..., Any], list[Any], tuple[int, ...]]]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 4))
    return {
        "mlp": (mlp, [rng.normal(size=(4, 5)), rng.normal(size=5), rng.normal(size=(5, 2)),
                      rng.normal(size=2), X, rng.normal(size=(10, 2))], (0, 1, 2, 3)),
        "softmax_ce": (softmax_ce, [rng.normal(size=(4, 3)), rng.normal(size=3), X,
                                    np.eye(3)[rng.integers(0, 3, size=10)]], (0, 1)),
        "logreg": (logreg, [rng.normal(size=4), X, np.sign(rng.normal(size=10))], (0,)),
        "rnn": (rnn, [rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(3, 2)), rng.normal(size=3),
                      rng.normal(size=(6, 2)), rng.normal(size=3)], (0, 1, 2, 4)),
        "gauss_ll": (gauss_ll, [0.3, -0.2, rng.normal(size=8)], (0, 1)),
        "gauss_ll_arrays": (gauss_ll, [rng.normal(size=8), 0.1 * rng.normal(size=8), rng.normal(size=8)], (0, 1)),
        "lstsq": (lstsq, [rng.normal(size=3), rng.normal(size=(6, 3)), rng.normal(size=6)], (0,)),
        "heat": (heat, [rng.normal(size=8), 0.2], (0, 1)),
        "fft_loss": (fft_loss, [rng.normal(size=8)], (0,)),
        "complex_loss": (complex_loss, [rng.normal(size=5)], (0,)),
        "pendulum": (pendulum, [1.0, 0.05], (0, 1)),
    }


CASES = _data()
NAMES = sorted(CASES)


def _close(a: Any, b: Any, rtol: float = 1e-9, atol: float = 1e-11) -> bool:
    return np.shape(a) == np.shape(b) and np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _reference(name: str) -> tuple[Any, ...]:
    f, args, wrt = CASES[name]
    return s2sad.grad(f, wrt)(*args)


# --- the default gradient against finite differences and JAX ------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_default_gradient_matches_finite_differences(name):
    f, args, wrt = CASES[name]
    for i, g in zip(wrt, _reference(name)):
        assert _close(g, numerical_grad(f, args, i), rtol=1e-5, atol=1e-7), (name, i)


def test_default_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def j_softmax_ce(W, b, X, Y):
        logits = X @ W + b
        z = logits - jax.lax.stop_gradient(jnp.max(logits, axis=-1, keepdims=True))
        return -jnp.mean(jnp.sum(Y * (z - jnp.log(jnp.sum(jnp.exp(z), axis=-1, keepdims=True))), axis=-1))

    def j_rnn(W, U, b, xs, h0):
        h = h0
        for t in range(xs.shape[0]):
            h = jnp.tanh(W @ h + U @ xs[t] + b)
        return jnp.sum(h ** 2)

    def j_fft_loss(x):
        X = jnp.fft.rfft(x)
        return jnp.sum(jnp.abs(X) ** 2 * jnp.arange(X.shape[0]))

    for name, jf in [("softmax_ce", j_softmax_ce), ("rnn", j_rnn), ("fft_loss", j_fft_loss)]:
        _, args, wrt = CASES[name]
        expected = jax.grad(jf, wrt)(*[jnp.asarray(a) for a in args])
        for g, e in zip(_reference(name), expected):
            assert _close(g, np.asarray(e)), name


# --- jit=True -------------------------------------------------------------------------------------

JIT_COMPILED = ["mlp", "rnn", "pendulum"]  # (softmax_ce and more: tests/test_jit.py)
JIT_REFUSED = {"heat": "setitem_grad_x", "fft_loss": "rfftn_grad", "complex_loss": "real_grad"}


@pytest.mark.parametrize("name", JIT_COMPILED)
def test_jit_gives_the_numpy_gradient(name):
    pytest.importorskip("numba")
    f, args, wrt = CASES[name]
    value, grads = s2sad.value_and_grad(f, wrt, jit=True)(*args)
    assert _close(value, f(*args))
    for g, e in zip(grads, _reference(name)):
        assert _close(g, e), name


@pytest.mark.parametrize("name", sorted(JIT_REFUSED))
def test_jit_refuses_with_the_line(name):
    pytest.importorskip("numba")
    f, args, wrt = CASES[name]
    with pytest.raises(s2sad.JitError, match=JIT_REFUSED[name]) as info:
        s2sad.grad(f, wrt, jit=True)(*args)
    assert info.value.location is not None and info.value.location.filename == str(HERE)


# --- Dask arrays ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mlp", "softmax_ce", "logreg", "rnn", "gauss_ll_arrays", "lstsq", "heat",
                                  "complex_loss"])
def test_dask_arrays_give_the_numpy_gradient(name):
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    f, args, wrt = CASES[name]
    lazy = [da.from_array(a, chunks=max(1, a.shape[0] // 3)) if isinstance(a, np.ndarray) else a for a in args]
    value, grads = s2sad.value_and_grad(f, wrt)(*lazy)
    assert any(isinstance(g, da.Array) for g in grads)  # nothing computed yet
    value, *grads = dask.compute(value, *grads)
    assert _close(value, f(*args))
    for g, e in zip(grads, _reference(name)):
        assert _close(g, e), name


# --- PyTorch tensors and JAX arrays (the Array API path) ------------------------------------------

def _library(name: str) -> tuple[Callable[[np.ndarray], Any], Callable[[Any], np.ndarray]]:
    pytest.importorskip("array_api_compat")
    if name == "torch":
        torch = pytest.importorskip("torch")
        return torch.from_numpy, lambda t: t.numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax.numpy.asarray, np.asarray


@pytest.mark.parametrize("library", ["torch", "jax"])
@pytest.mark.parametrize("name", ["mlp", "softmax_ce", "logreg", "rnn", "gauss_ll_arrays", "pendulum"])
def test_array_api_gives_the_numpy_gradient(monkeypatch, library, name):
    monkeypatch.setenv("S2SAD_SPECIALIZE", "1")
    convert, back = _library(library)
    f, args, wrt = CASES[name]
    grads = s2sad.grad(f, wrt)(*[convert(a) if isinstance(a, np.ndarray) else a for a in args])
    for g, e in zip(grads, _reference(name)):
        assert _close(back(g), e), (library, name)


@pytest.mark.parametrize("library", ["torch", "jax"])
def test_array_api_refuses_what_it_does_not_translate(monkeypatch, library):
    monkeypatch.setenv("S2SAD_SPECIALIZE", "1")
    convert, _ = _library(library)
    f, args, wrt = CASES["fft_loss"]
    with pytest.raises(S2SADError, match="not translated") as info:
        s2sad.grad(f, wrt)(convert(args[0]))
    assert info.value.location is not None and info.value.location.line > 0


# --- vjp, jvp, hvp, hessian, jacobian -----------------------------------------------------------

def _direction(x: Any, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    return float(rng.normal()) if isinstance(x, float) else rng.normal(size=np.shape(x))


def _moved(args: list[Any], i: int, x: Any) -> list[Any]:
    out = list(args)
    out[i] = x
    return out


@pytest.mark.parametrize("name", NAMES)
def test_vjp_jvp_hvp_agree_with_the_gradient(name):
    f, args, wrt = CASES[name]
    eps = 1e-6
    for k, (i, g) in enumerate(zip(wrt, _reference(name))):
        value, pullback = s2sad.vjp(f, i)(*args)
        assert _close(value, f(*args)) and _close(pullback(1.0), g) and _close(pullback(2.0), 2 * np.asarray(g))
        v = _direction(args[i], k)
        value, slope = s2sad.jvp(f, i)(*args, v)
        assert _close(value, f(*args)) and _close(slope, np.sum(np.asarray(g) * v)), (name, i)
        hv = s2sad.hvp(f, i)(*args, v)
        gradient = s2sad.grad(f, i)
        expected = (np.asarray(gradient(*_moved(args, i, args[i] + eps * v)))
                    - np.asarray(gradient(*_moved(args, i, args[i] - eps * v)))) / (2 * eps)
        assert _close(hv, expected, rtol=1e-4, atol=1e-6), (name, i)


def test_hessian_and_jacobian_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(6, 4)), np.sign(rng.normal(size=6))

    def j_logreg(w):
        z = X @ w
        return jnp.mean(jnp.log1p(jnp.exp(-y * z))) + 0.01 * jnp.sum(w ** 2)

    w = rng.normal(size=4)
    expected = np.asarray(jax.hessian(j_logreg)(jnp.asarray(w)))
    assert _close(s2sad.hessian(logreg)(w, X, y), expected)

    def layer(W, x):
        return np.tanh(W @ x)

    def softmax(x):
        e = np.exp(x - stop_gradient(np.max(x)))
        return e / np.sum(e)

    W, x = rng.normal(size=(3, 4)), rng.normal(size=4)
    for fn, jfn, args in [(layer, lambda W: jnp.tanh(W @ x), (W, x)), (softmax, jax.nn.softmax, (x,))]:
        expected = np.asarray(jax.jacobian(jfn)(jnp.asarray(args[0])))
        for mode in ("forward", "reverse", "auto"):
            assert _close(s2sad.jacobian(fn, 0, mode=mode)(*args), expected), (fn.__name__, mode)


# --- the standalone module, imported fresh --------------------------------------------------------

RUNNER = textwrap.dedent('''
    import importlib.util, pickle, sys
    sys.modules["s2sad"] = None  # (importing it fails)
    sys.modules["tests"] = None
    folder, data = sys.argv[1:]
    with open(data, "rb") as fh:
        calls = pickle.load(fh)
    results = {}
    for name, function, args in calls:
        spec = importlib.util.spec_from_file_location(name, f"{folder}/{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        results[name] = getattr(module, function)(*args)
    with open(data, "wb") as fh:
        pickle.dump(results, fh)
''')


def _run_fresh(folder: Path, calls: list[tuple[str, str, list[Any]]]) -> dict[str, Any]:
    data = folder / "calls.pkl"
    data.write_bytes(pickle.dumps(calls))
    run = subprocess.run([sys.executable, "-c", RUNNER, str(folder), str(data)], capture_output=True,
                         text=True, cwd=folder, timeout=120)
    assert run.returncode == 0, run.stderr
    return pickle.loads(data.read_bytes())


def test_standalone_modules_give_the_gradient_in_a_fresh_process(tmp_path):
    calls, expected = [], {}
    for name in NAMES:
        f, args, wrt = CASES[name]
        for form, example in (("generic", None), ("specialised", args)):
            (tmp_path / f"{name}_{form}.py").write_text(s2sad.adjoint_source(f, wrt, standalone=True,
                                                                             example=example))
            calls.append((f"{name}_{form}", f"grad_{f.__name__}", args))
            expected[f"{name}_{form}"] = _reference(name)
    for name, got in _run_fresh(tmp_path, calls).items():
        for g, e in zip(got, expected[name]):
            assert _close(g, e, rtol=1e-12, atol=1e-13), name


def test_standalone_forward_mode_in_a_fresh_process(tmp_path):
    from s2sad.standalone import make_standalone

    calls, expected = [], {}
    for name in ("rnn", "heat", "fft_loss"):
        f, args, wrt = CASES[name]
        v = _direction(args[0], 3)
        (tmp_path / f"{name}.py").write_text(make_standalone(s2sad.jvp_source(f, 0), f))
        calls.append((name, f"jvp_{f.__name__}", [*args, v]))
        expected[name] = s2sad.jvp(f, 0)(*args, v)
    for name, got in _run_fresh(tmp_path, calls).items():
        assert _close(got[0], expected[name][0]) and _close(got[1], expected[name][1]), name


# --- the disk cache: a second process gives the first's results -------------------------------

CACHE_RUN = textwrap.dedent('''
    import pickle, sys
    import numpy as np
    import s2sad
    from tests.test_backend12 import CASES
    results = {}
    for name, (f, args, wrt) in sorted(CASES.items()):
        results[name, "grad"] = s2sad.grad(f, wrt)(*args)
        results[name, "value_and_grad"] = s2sad.value_and_grad(f, wrt, specialize=False)(*args)
        v = np.ones_like(args[0]) if isinstance(args[0], np.ndarray) else 1.0
        results[name, "hvp"] = s2sad.hvp(f, 0)(*args, v)
        results[name, "vjp"] = s2sad.vjp(f, 0)(*args)[1](1.0)
    with open(sys.argv[1], "wb") as fh:
        pickle.dump(results, fh)
''')


def _identical(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_identical, a, b))
    return (type(a) is type(b) and getattr(a, "dtype", None) == getattr(b, "dtype", None)
            and np.array_equal(np.asarray(a), np.asarray(b)))


def test_the_disk_cache_gives_a_second_process_the_same_results(tmp_path):
    env = {**os.environ, "S2SAD_CACHE": "1", "S2SAD_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    results = []
    for run in ("first", "second"):
        out = tmp_path / f"{run}.pkl"
        done = subprocess.run([sys.executable, "-c", CACHE_RUN, str(out)], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        results.append(pickle.loads(out.read_bytes()))
        if run == "first":
            assert any((tmp_path / "cache").iterdir())  # written
    first, second = results
    assert first.keys() == second.keys()
    assert [k for k in first if not _identical(first[k], second[k])] == []


# --- the command line -----------------------------------------------------------------------------

USER_MODULE = '''
import functools
import numpy as np
from s2sad import stop_gradient


def loss(w, x):
    z = x * w
    z = z - stop_gradient(np.max(z))
    return -np.log(np.exp(z[0]) / np.sum(np.exp(z)))


class Model:
    def __call__(self, x):
        return np.sum(x ** 2)


model = Model()
bound = functools.partial(loss, x=np.ones(3))
NUMBER = 3
'''


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "user_cli.py"
    path.write_text(USER_MODULE)
    return str(path)


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, code, words", [
    (["{f}:NUMBER"], 1, "is not a function"),
    (["{f}:nothing"], 1, "has no function 'nothing'"),
    (["{f}:loss", "--wrt", "7"], 1, "out of range"),
    (["{f}:loss", "--wrt", "nope"], 1, "names no parameter"),
    (["{f}:loss", "--shapes", "w=3x"], 2, "integers joined by x"),
    (["{f}:loss", "--shapes", "w=3", "--dtype", "bogus"], 2, "not a NumPy dtype"),
    (["{f}:loss", "--jit", "--standalone"], 2, "--jit shows the compiled gradient"),
    (["{f}:loss", "--dtype", "float32"], 2, "give --shapes too"),
    (["{f}"], 2, "expected FILE.py:FUNCTION"),
    (["missing.py:loss"], 1, "no such file"),
])
def test_cli_bad_input_is_a_message_and_an_exit_code(capsys, user_file, argv, code, words):
    got, out, err = _cli(capsys, *[a.format(f=user_file) for a in argv])
    assert got == code and words in err and "Traceback" not in err and out == ""


def test_cli_script_entry_point_reports_without_traceback(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x:\n    return x\n")
    run = subprocess.run([sys.executable, str(ROOT / "cli.py"), f"{bad}:f"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 1 and "bad.py:1:" in run.stderr and "Traceback" not in run.stderr


# --- regressions ----------------------------------------------------------------------------------

def int_power(x, n):
    return np.sum(x) * n ** -1


def int_power_computed(x, n):
    k = n - 3
    return np.sum(x * 2 ** k)


def int_array_power(x, m, n):
    return np.sum(x * m ** n)


@pytest.mark.parametrize("f, n", [(int_power, 2), (int_power, 3), (int_power_computed, 1), (int_power_computed, 5)])
def test_jit_an_int_to_a_negative_int_power_is_a_float_as_in_python(f, n):
    """numba's integer power gave 2 ** -1 == 0: value and gradient 0 (silently wrong)."""
    pytest.importorskip("numba")
    x = np.array([0.5, -1.5, 2.0])
    value, g = s2sad.value_and_grad(f, jit=True)(x, n)
    expected_value, expected = s2sad.value_and_grad(f)(x, n)
    assert _close(value, expected_value) and _close(g, expected) and _close(g, numerical_grad(f, [x, n], 0))


def test_jit_integer_arrays_to_a_negative_power_raise_as_numpy():
    pytest.importorskip("numba")
    x, m = np.array([0.5, -1.5, 2.0]), np.array([1, 2, 3])
    assert _close(s2sad.grad(int_array_power, jit=True)(x, m, 2), m ** 2)
    with pytest.raises(ValueError, match="negative integer powers"):
        s2sad.grad(int_array_power)(x, m, -1)
    with pytest.raises(ValueError, match="negative integer powers"):
        s2sad.grad(int_array_power, jit=True)(x, m, -1)


def _user_function(tmp_path: Path, module: str, source: str, function: str = "loss") -> Any:
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    sys.path.insert(0, str(tmp_path))
    try:
        spec = importlib.util.spec_from_file_location(module, tmp_path / f"{module}.py")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[module] = loaded
        spec.loader.exec_module(loaded)
    finally:
        sys.path.remove(str(tmp_path))
    return getattr(loaded, function)


def test_standalone_copies_list_and_dict_constants(tmp_path):
    """A list or dict global was imported from the user's module (``from user import WEIGHTS``):
    the module failed to import where the user's module is not."""
    loss = _user_function(tmp_path, "b12_lists", '''
        import numpy as np

        WEIGHTS = [1.0, 2.0]
        CONFIG = {"scale": 0.5, "sizes": (1, 2)}


        def helper(z):
            return np.sin(z) * WEIGHTS[1]


        def loss(x):
            return np.sum(helper(x)) * CONFIG["scale"] + WEIGHTS[0] * np.sum(x ** 2)
    ''')
    x = np.array([0.3, -0.7, 1.1])
    text = s2sad.adjoint_source(loss, standalone=True)
    assert "WEIGHTS = [1.0, 2.0]" in text and "import b12_lists" not in text and "from b12_lists" not in text
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "written.py").write_text(text)
    got = _run_fresh(tmp_path / "out", [("written", "grad_loss", [x])])["written"]
    assert _close(got, s2sad.grad(loss)(x)) and _close(got, numerical_grad(loss, [x], 0), rtol=1e-6)


def test_standalone_refuses_what_needs_the_users_module(tmp_path):
    """``m.LAM`` of the user's module ``m`` was an ``import m`` dropped from the module (a
    NameError when it ran); an instance of the user's class an import of the user's module."""
    _user_function(tmp_path, "b12_config", '''
        LAM = 0.1


        class Options:
            scale = 2.0


        OPTIONS = Options()
    ''', "LAM")
    through_module = _user_function(tmp_path, "b12_reads_module", '''
        import numpy as np
        import b12_config


        def loss(x):
            return np.sum(x ** 2) * b12_config.LAM
    ''')
    with pytest.raises(StandaloneError, match="reads the module 'b12_config'.*import what"):
        s2sad.adjoint_source(through_module, standalone=True)
    instance = _user_function(tmp_path, "b12_reads_instance", '''
        import numpy as np
        from b12_config import OPTIONS


        def loss(x):
            return np.sum(x ** 2) * OPTIONS.scale
    ''')
    with pytest.raises(StandaloneError, match="'OPTIONS' \\(Options\\) from b12_config.*pass it as an argument"):
        s2sad.adjoint_source(instance, standalone=True)


def test_cli_differentiates_an_object_with_call_and_a_partial(capsys, user_file):
    """The command line refused them ("has no Python source"), which grad and --shapes take."""
    code, out, err = _cli(capsys, f"{user_file}:model")
    assert code == 0 and "def grad___call__(self, x):" in out, err
    code, out, err = _cli(capsys, f"{user_file}:bound", "--standalone")
    assert code == 0 and "def grad_loss(w, x):" in out and "import s2sad" not in out, err
    code, out, err = _cli(capsys, f"{user_file}:model", "--mode", "hvp")
    assert code == 0 and "Jacobian-vector product" in out, err


@pytest.mark.parametrize("argv, words", [
    (["--mode", "hvp", "--shapes", "w=3"], "--shapes specialises the gradient"),
    (["--mode", "hvp", "--dtype", "float32"], "give --shapes too"),
    (["--shapes", "w=-3", "x=3"], "non-negative integers"),
])
def test_cli_refuses_options_it_would_ignore_or_misread(capsys, user_file, argv, words):
    """--mode hvp printed the generic code, ignoring --shapes and --dtype; w=-3 printed code
    specialised to a negative length."""
    code, out, err = _cli(capsys, f"{user_file}:loss", *argv)
    assert code == 2 and words in err and out == ""


def test_cli_shapes_of_a_function_without_named_parameters(capsys, tmp_path):
    """--shapes for ``def f(*xs)`` was an IndexError (the message's example parameter)."""
    path = tmp_path / "star.py"
    path.write_text("def total(*xs):\n    return sum(xs)\n")
    code, out, err = _cli(capsys, f"{path}:total", "--shapes", "xs=3")
    assert code == 2 and "has no named positional parameter" in err and out == ""


def test_cli_a_script_that_exits_when_imported(capsys, tmp_path):
    """sys.exit at import ended the command silently with the script's own exit code."""
    script = tmp_path / "script.py"
    script.write_text("import sys\n\ndef f(x):\n    return x * x\n\nsys.exit(3)\n")
    code, out, err = _cli(capsys, f"{script}:f")
    assert code == 1 and "importing it exited (SystemExit: 3)" in err and "__main__" in err


def _parts(x):
    return np.sin(x), np.sum(x ** 2)


def _named(x):
    return {"a": x * 2.0}


@pytest.mark.parametrize("f", [_parts, _named])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_jacobian_of_a_tuple_or_dict_output_is_refused(f, mode):
    """A dict output was a TypeError from inside jacobian, a ragged tuple NumPy's ValueError."""
    with pytest.raises(s2sad.NonScalarOutputError, match="returns one array or number"):
        s2sad.jacobian(f, mode=mode)(np.array([0.3, -0.8, 1.2]))


def test_jacobian_of_same_shaped_outputs_stacks_them():
    def pair(x):
        return np.sin(x), np.cos(x)

    x = np.array([0.3, -0.8, 1.2])
    expected = np.stack([np.diag(np.cos(x)), np.diag(-np.sin(x))])
    for mode in ("forward", "reverse"):
        assert _close(s2sad.jacobian(pair, mode=mode)(x), expected)


def test_standalone_writes_non_finite_and_enum_constants_as_python_reads_them(tmp_path):
    """``inf``, ``nan``, ``np.float64(inf)`` and ``(1+infj)`` were written by their repr, names
    the module does not define (a NameError on import); an IntEnum member as ``<Mode.A: 2>``."""
    loss = _user_function(tmp_path, "b12_constants", '''
        import enum
        import numpy as np

        BIG = float("inf")
        NAN = float("nan")
        LIMITS = (np.float64(-np.inf), float("inf"))
        SCALE = complex(1.0, float("inf"))


        class Mode(enum.IntEnum):
            CUBE = 3


        MODE = Mode.CUBE


        def loss(x):
            y = np.where(np.isnan(x), NAN, np.minimum(x, BIG))
            return np.sum(np.clip(y, LIMITS[0], LIMITS[1]) ** MODE) * SCALE.real
    ''')
    x = np.array([0.3, -0.7, 1.1])
    (tmp_path / "out").mkdir()
    for form, example in (("generic", None), ("specialised", (x,))):
        (tmp_path / "out" / f"{form}.py").write_text(s2sad.adjoint_source(loss, standalone=True, example=example))
    got = _run_fresh(tmp_path / "out", [("generic", "grad_loss", [x]), ("specialised", "grad_loss", [x])])
    for g in got.values():
        assert _close(g, 3 * x ** 2) and _close(g, numerical_grad(loss, [x], 0), rtol=1e-6)


def test_vjp_pullback_reads_the_call_not_later_writes():
    """The pullback read the caller's arrays when called: writing into the input, into the
    returned value (tanh's backward pass reads it) or into a dict argument between the call
    and the pullback changed the gradient (silently wrong), the first pullback and the
    recomputing second one alike."""
    x0 = np.array([0.3, -0.7, 1.1])
    expected = 1 - np.tanh(x0) ** 2

    x = x0.copy()
    value, pullback = s2sad.vjp(lambda t: np.tanh(t))(x)
    x[:] = 5.0
    value *= 0.0
    assert _close(pullback(np.ones(3)), expected) and _close(pullback(np.ones(3)), expected)

    def layer(p):
        return np.tanh(p["w"]) * 2.0

    params = {"w": x0.copy()}
    value, pullback, aux = s2sad.vjp(lambda p: (layer(p), p["w"]), has_aux=True)(params)
    params["w"][:] = 9.0
    aux[:] = 7.0
    assert _close(pullback(np.ones(3))["w"], 2 * expected)
    params["w"] = np.zeros(3)
    assert _close(pullback(np.ones(3))["w"], 2 * expected)


def test_a_function_whose_file_changed_since_import_is_refused(tmp_path):
    """The file edited after the import (sin to cos): the gradient was generated from the new
    text while the function ran the old code, cos' for sin (silently wrong)."""
    loss = _user_function(tmp_path, "b12_edited", '''
        import numpy as np


        class Model:
            def energy(self, x):
                """A docstring, which the class indents."""
                return np.sum(np.sin(x) * 2.0)

            def loss(self, x):
                return self.energy(x)


        def loss(x):
            return np.sum(np.sin(x))
    ''')
    model = sys.modules["b12_edited"].Model()
    x = np.array([0.3, 0.5])
    text = (tmp_path / "b12_edited.py").read_text()
    (tmp_path / "b12_edited.py").write_text(text.replace("np.sin(x))\n", "np.cos(x))\n"))
    with pytest.raises(s2sad.SourceError, match="the file changed since its module was imported") as info:
        s2sad.grad(loss)(x)
    assert info.value.location.filename.endswith("b12_edited.py") and info.value.location.line == 14
    assert _close(s2sad.grad(model.loss)(x), 2 * np.cos(x))  # (their text is unchanged)


def test_a_function_whose_lines_moved_since_import_is_refused(tmp_path):
    """Lines inserted above the function: its code's first line then pointed at another
    function of the file, whose gradient was returned (silently wrong)."""
    loss = _user_function(tmp_path, "b12_moved", '''
        import numpy as np


        def loss(x):
            return np.sum(np.sin(x))


        def other(x):
            return np.sum(np.cos(x))
    ''')
    path = tmp_path / "b12_moved.py"
    text = path.read_text()
    path.write_text(text.replace("def loss", "def other(x):\n    return np.sum(np.cos(x))\n\n\ndef loss", 1))
    with pytest.raises(s2sad.SourceError, match="not the code it runs"):
        s2sad.grad(loss)(np.array([0.3, 0.5]))


class _Private:
    def __init__(self):
        self.__scale = 2.0

    def __energy(self, x):
        __terms = np.sin(x) * self.__scale
        return np.sum(__terms)

    def loss(self, x):
        """Reads __scale (a docstring is left as written)."""
        return self.__energy(x) + np.sum(self.__scale * x ** 2)


def test_private_names_of_a_method_are_mangled_as_python_does():
    """``self.__scale`` in a method was read unmangled by the generated code, compiled outside
    the class: AttributeError; ``self.__energy(x)`` an UnsupportedSyntaxError."""
    model, x = _Private(), np.array([0.3, -0.5, 1.2])
    expected = 2 * np.cos(x) + 4 * x
    assert _close(s2sad.grad(model.loss)(x), expected)
    assert _close(s2sad.grad(model.loss, specialize=False)(x), expected)
    assert _close(s2sad.jvp(model.loss)(x, np.ones(3))[1], np.sum(expected))
    assert _close(s2sad.grad(model.loss)(x), numerical_grad(model.loss, [x], 0), rtol=1e-6)


def _checks_its_input(x):
    assert x.ndim == 1, "a vector"
    return np.sum(np.sin(x) * x)


def test_a_function_in_a_module_whose_asserts_pytest_rewrote_is_differentiated():
    """This module's code is not what its text compiles to (pytest rewrites asserts): that is no
    file changed since import (it was refused as one)."""
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(s2sad.grad(_checks_its_input)(x), np.cos(x) * x + np.sin(x), rtol=1e-12)
