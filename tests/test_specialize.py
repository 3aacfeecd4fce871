"""Gradient code specialised to the arguments' shapes and dtypes (s2sad.specializing).

The specialised code must compute what the generic code computes (the same values, types,
shapes and dtypes) for every corpus function, read like NumPy a person writes (golden
files), be made once per signature, and fall back to the generic helpers where a shape
depends on the data.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import corpus
import s2sad
from golden_functions import rnn
from gradcheck import numerical_grad

HERE = pathlib.Path(__file__).parent
GOLDEN_DIR = HERE / "golden" / "specialized"
sys.path.insert(0, str(HERE.parent))

from benchmarks.workloads import WORKLOADS  # noqa: E402


def _specializations(g):
    return g.__s2sad_specialized__


def mlp(W1, b1, W2, b2, X, Y):
    H = np.tanh(X @ W1 + b1)
    out = H @ W2 + b2
    return 0.5 * np.mean((out - Y) ** 2)


def softmax_cross_entropy(W, b, X, Y):
    logits = X @ W + b
    z = logits - s2sad.stop_gradient(np.max(logits, axis=1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * log_p) / X.shape[0]


def scalar(x):
    return np.sin(x) * x ** 2 + np.exp(-x)


def _inputs(name):
    rng = np.random.default_rng(0)
    shapes = {"mlp": [(64, 10), (10,), (10, 3), (3,), (128, 64), (128, 3)],
              "softmax_cross_entropy": [(20, 5), (5,), (32, 20), (32, 5)],
              "rnn": [(8, 8), (8, 4), (8,), (30, 4), (8,)]}
    if name == "scalar":
        return (0.7,)
    return tuple(rng.normal(size=s) for s in shapes[name])


GOLDEN = {"mlp": (mlp, ("W1", "b1", "W2", "b2")), "softmax_cross_entropy": (softmax_cross_entropy, ("W", "b")),
          "rnn": (rnn, ("W", "U", "b")), "scalar": (scalar, "x")}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_specialised_code_matches_golden_file(name):
    fn, wrt = GOLDEN[name]
    text = s2sad.adjoint_source(fn, wrt, example=_inputs(name))
    path = GOLDEN_DIR / f"{name}.py"
    if os.environ.get("S2SAD_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()
    assert "s2sad" not in _code(text)  # no helper, no import of s2sad


def _code(text):
    """The generated text without its comments (which quote the user's lines)."""
    return "\n".join(line for line in text.split("\n") if not line.strip().startswith("#"))


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_specialised_code_is_what_grad_runs_and_is_right(name):
    fn, wrt = GOLDEN[name]
    args = _inputs(name)
    g = s2sad.grad(fn, wrt, specialize=True)
    got = g(*args)
    made = list(_specializations(g).values())
    assert len(made) == 1 and made[0].__s2sad_source__ == s2sad.adjoint_source(fn, wrt, example=args)
    names = wrt if isinstance(wrt, tuple) else (wrt,)
    got = got if isinstance(wrt, tuple) else (got,)
    params = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    for name_, value in zip(names, got):
        i = params.index(name_)
        np.testing.assert_allclose(value, numerical_grad(fn, args, i), rtol=1e-6, atol=1e-8)
        assert type(value) is type(args[i]) and np.shape(value) == np.shape(args[i])


def test_specialised_gradients_are_plain_numpy_for_the_benchmark_workloads():
    for name, w in WORKLOADS.items():
        args = tuple(w.inputs(True).values())
        text = s2sad.adjoint_source(w.fn, w.s2sad_wrt, example=args)
        if name in ("mlp", "softmax_ce", "rnn_loop", "scalar", "gmm_em", "rbm_cd1"):
            assert "s2sad" not in _code(text), (name, text)


def _same(a, b, what):
    assert type(a) is type(b), f"{what}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for i, (u, v) in enumerate(zip(a, b)):
            _same(u, v, f"{what}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k], f"{what}[{k!r}]")
    else:
        assert np.shape(a) == np.shape(b) and getattr(a, "dtype", None) == getattr(b, "dtype", None), what
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300, err_msg=what)


def _cases():
    return [pytest.param(c, id=c.id) for c in corpus.CASES if c.xfail is None]


@pytest.mark.parametrize("case", _cases())
def test_specialised_and_generic_code_agree_on_the_corpus(case):
    args = case.inputs()
    wrt = tuple(i for i, a in enumerate(args) if corpus.has_float(a))
    if not wrt:
        pytest.skip("no float argument")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        try:
            generic = s2sad.grad(case.fn, wrt, specialize=False)(*args)
        except s2sad.S2SADError:
            pytest.skip("refused (the corpus tests check the refusal)")
        specialised = s2sad.grad(case.fn, wrt, specialize=True)(*args)
    _same(specialised, generic, case.id)


def test_a_new_signature_makes_a_new_specialisation_and_an_old_one_reuses_it():
    g = s2sad.grad(mlp, ("W1", "b1", "W2", "b2"), specialize=True)
    small = tuple(np.ones(s) for s in [(5, 4), (4,), (4, 2), (2,), (7, 5), (7, 2)])
    g(*_inputs("mlp"))
    g(*small)
    g(*_inputs("mlp"))
    assert len(_specializations(g)) == 2
    as_float32 = tuple(a.astype(np.float32) for a in small)
    grads = g(*as_float32)
    assert len(_specializations(g)) == 3 and all(d.dtype == np.float32 for d in grads)
    assert s2sad.grad(mlp, ("W1", "b1", "W2", "b2"), specialize=True) is g  # the dispatcher, and what it made, are kept


def test_a_one_parameter_gradient_dispatches_on_its_argument_alone():
    # (its dispatcher reads the argument's item, without a tuple; the table lists signatures)
    def summed(x):
        return np.sum(np.sin(x) * x ** 2 + np.exp(-x))

    g = s2sad.grad(summed, specialize=True)
    generic = s2sad.grad(summed, specialize=False)
    calls = [0.7, np.linspace(0.1, 1.0, 3), 0.2, np.linspace(0.1, 1.0, 4), np.linspace(0.1, 1.0, 3),
             np.float64(0.3), np.linspace(0.1, 1.0, 3).astype(np.float32)]
    for x in calls * 2:
        got, want = g(x), generic(x)
        assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    arrays = {(((n,), np.dtype(t)),) for n, t in [(3, np.float64), (4, np.float64), (3, np.float32)]}
    assert set(_specializations(g)) == {(float,), (np.float64,)} | arrays


def masked(x):
    y = x[x > 0]  # a shape known only from the data
    return np.sum(y ** 2) + np.sum(np.append(x, y))


def test_a_shape_that_depends_on_the_data_keeps_the_generic_helper_and_stays_right():
    x = np.array([1.5, -0.5, 2.0, -1.0])
    text = s2sad.adjoint_source(masked, example=(x,))
    # y's shape is not known: the helper (x's gradient plus dy at the mask) reads it when the code runs
    assert "dx = added_at(dx, x, mask, dy)" in text
    g = s2sad.grad(masked, specialize=True)
    for point in (x, -x, np.array([3.0, 1.0])):
        np.testing.assert_allclose(g(point), numerical_grad(masked, (point,), 0), rtol=1e-6, atol=1e-8)
    assert len(_specializations(g)) == 2  # (4,) and (2,)


def test_keyword_arguments_and_defaults_reach_the_specialised_code():
    def f(x, scale=2.0):
        return np.sum(np.tanh(x) * scale)
    g = s2sad.grad(f, specialize=True)
    x = np.linspace(-1, 1, 5)
    expected = 2.0 * (1 - np.tanh(x) ** 2)
    np.testing.assert_allclose(g(x), expected)
    np.testing.assert_allclose(g(x=x), expected)
    np.testing.assert_allclose(g(x, scale=2.0), expected)


def test_an_integer_argument_is_still_refused():
    with pytest.raises(s2sad.S2SADError, match="cannot differentiate with respect to 'x'"):
        s2sad.grad(lambda x: np.sum(x * 1.0), specialize=True)(np.arange(3))
    with pytest.raises(s2sad.S2SADError, match="cannot differentiate with respect to 'x'"):
        s2sad.grad(scalar, specialize=True)(3)


def test_specialisation_can_be_turned_off(tmp_path):
    assert not hasattr(s2sad.grad(mlp, specialize=False), "__s2sad_specialized__")
    script = tmp_path / "off.py"
    script.write_text("import numpy as np, s2sad\n\n\ndef f(x):\n    return np.sum(x ** 2)\n\n\n"
                      "g = s2sad.grad(f)\nprint(hasattr(g, '__s2sad_specialized__'), g(np.ones(3)))\n")
    for setting, expected in (("0", "False [2. 2. 2.]"), ("1", "True [2. 2. 2.]")):
        env = dict(os.environ, S2SAD_SPECIALIZE=setting, PYTHONPATH=str(HERE.parent))
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.startswith(expected)


def test_a_gradient_of_a_specialising_gradient_differentiates_the_generic_code():
    def f(x):
        return np.sum(np.sin(x) * x)
    g = s2sad.grad(f, specialize=True)
    x = np.linspace(0.1, 1.0, 4)
    g(x)
    second = s2sad.grad(lambda x: np.sum(g(x)))
    np.testing.assert_allclose(second(x), numerical_grad(lambda x: np.sum(g(x)), (x,), 0), rtol=1e-6)


def test_the_cli_prints_specialised_code_for_shapes_and_refuses_bad_ones(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import numpy as np\n\n\ndef mlp(W1, b1, W2, b2, X, Y):\n"
                    "    H = np.tanh(X @ W1 + b1)\n    out = H @ W2 + b2\n"
                    "    return 0.5 * np.mean((out - Y) ** 2)\n")
    cli = [sys.executable, str(HERE.parent / "cli.py"), f"{path}:mlp", "--wrt", "W1", "b1", "W2", "b2"]
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    out = subprocess.run([*cli, "--shapes", "W1=64x10", "b1=10", "W2=10x3", "b2=3", "X=128x64", "Y=128x3"],
                         env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "dW1 = X.T.dot(dX_matmul_W1_add)" in out.stdout and "db2 = dout_sub_Y.sum(axis=0)" in out.stdout
    assert "s2sad" not in _code(out.stdout)
    out32 = subprocess.run([*cli, "--shapes", "W1=64x10", "b1=10", "W2=10x3", "b2=3", "X=128x64", "Y=128x3",
                            "--dtype", "float32"], env=env, capture_output=True, text=True)
    assert "dtype=np.float32" in out32.stdout
    bad = subprocess.run([*cli, "--shapes", "Q=3"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "--shapes Q=3: write NAME=DIMS for a positional parameter of mlp" in bad.stderr
    alone = subprocess.run([*cli, "--dtype", "float32"], env=env, capture_output=True, text=True)
    assert alone.returncode == 2 and "--dtype float32 is the dtype of the --shapes arrays" in alone.stderr


def rnn_reading_its_weight_gradient_target(W, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        total = total + np.sum(h * h)
    return total


def test_a_loop_s_sums_become_one_product_after_it_and_stay_right_for_any_trip_count():
    text = s2sad.adjoint_source(rnn, ("W", "U", "b"), example=_inputs("rnn"))
    assert "dW += dadd_b_all.T.dot(h_all)" in text and "dU += np.outer" not in text
    g = s2sad.grad(rnn, ("W", "U", "b"), specialize=True)
    W, U, b, xs, h0 = _inputs("rnn")
    for steps in (0, 1, 7):
        args = (W, U, b, xs[:steps], h0)
        got = g(*args)
        for i, value in enumerate(got):
            np.testing.assert_allclose(value, numerical_grad(rnn, args, i), rtol=1e-6, atol=1e-8)
    g2 = s2sad.grad(rnn_reading_its_weight_gradient_target, "W", specialize=True)
    rng = np.random.default_rng(3)
    args = (rng.normal(size=(5, 5)) * 0.5, rng.normal(size=(6, 5)), rng.normal(size=5))
    np.testing.assert_allclose(g2(*args), numerical_grad(rnn_reading_its_weight_gradient_target, args, 0),
                               rtol=1e-6, atol=1e-8)


def products_of_vectors(A, v, u):
    return (v @ A @ u) + np.sum(A @ u) + u @ u


def test_a_gradient_started_from_an_argument_is_a_new_array_not_the_argument():
    """``u @ u``'s gradient starts as ``1.0 * u``, which later lines add to in place: written
    as ``u`` itself, the seed folded away, the code changed the caller's ``u``."""
    rng = np.random.default_rng(5)
    args = (rng.normal(size=(3, 4)), rng.normal(size=3), rng.normal(size=4))
    kept = tuple(a.copy() for a in args)
    got = s2sad.grad(products_of_vectors, (0, 1, 2), specialize=True)(*args)
    for a, b in zip(args, kept):
        np.testing.assert_array_equal(a, b)
    for i, value in enumerate(got):
        np.testing.assert_allclose(value, numerical_grad(products_of_vectors, args, i), rtol=1e-6, atol=1e-8)


# --- vjp, jvp and hvp -------------------------------------------------------------------------

def _tangent(arg, rng):
    return float(rng.normal()) if isinstance(arg, float) else rng.normal(size=np.shape(arg))


@pytest.mark.parametrize("case", _cases())
def test_specialised_vjp_jvp_and_hvp_agree_with_generic_code_on_the_corpus(case):
    args = case.inputs()
    wrt = next((i for i, a in enumerate(args) if isinstance(a, float)
                or isinstance(a, np.ndarray) and a.dtype == np.float64), None)
    if wrt is None:
        pytest.skip("no float argument")
    v = _tangent(args[wrt], np.random.default_rng(7))
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        for specialize in (False, True):
            try:
                value, pullback = s2sad.vjp(case.fn, wrt, specialize=specialize)(*args)
                results.append((value, pullback(1.0), s2sad.jvp(case.fn, wrt, specialize=specialize)(*args, v),
                                s2sad.hvp(case.fn, wrt, specialize=specialize)(*args, v)))
            except s2sad.S2SADError:
                if not specialize:
                    pytest.skip("refused (the corpus tests check the refusal)")
                raise
    _same(results[1], results[0], case.id)


def test_specialised_jvp_is_plain_numpy_and_made_once_per_signature():
    args = _inputs("softmax_cross_entropy")
    v = np.random.default_rng(5).normal(size=args[0].shape)
    text = s2sad.jvp_source(softmax_cross_entropy, "W", example=(*args, v))
    assert "s2sad" not in _code(text) and "stop_gradient" not in text, text
    assert "logits_dot = X @ W_dot\n" in text and "exp_z_dot = logits_dot * exp_z" in text, text  # no copies
    jvp = s2sad.jvp(softmax_cross_entropy, "W", specialize=True)
    value, tangent = jvp(*args, v)
    assert s2sad.jvp(softmax_cross_entropy, "W", specialize=True)(*args, v)[1] == tangent
    eps = 1e-6
    shifted = [(softmax_cross_entropy(args[0] + s * eps * v, *args[1:])) for s in (1, -1)]
    np.testing.assert_allclose(tangent, (shifted[0] - shifted[1]) / (2 * eps), rtol=1e-6, atol=1e-9)
    W, b, X, Y = args  # a second signature: three classes
    small = (W[:, :3], b[:3], X, Y[:, :3], v[:, :3])
    np.testing.assert_allclose(jvp(*small)[1], s2sad.jvp(softmax_cross_entropy, "W", specialize=False)(*small)[1],
                               rtol=1e-12)
    assert len(_specializations(s2sad.api._generated(softmax_cross_entropy, "W", "jvp", True))) == 2


def test_specialised_hvp_keeps_stop_gradient_in_the_gradient_it_differentiates():
    w = WORKLOADS["rbm_cd1"]
    args = tuple(w.inputs(True).values())
    v = np.random.default_rng(3).normal(size=args[0].shape)
    np.testing.assert_allclose(s2sad.hvp(w.fn, "W", specialize=True)(*args, v),
                               s2sad.hvp(w.fn, "W", specialize=False)(*args, v), rtol=1e-12, atol=1e-14)


def summed_in_a_loop(w, xs):
    total = 0.0  # a float, then a float64: its loop's gradient still specialises
    for t in range(xs.shape[0]):
        total = total + np.sum(np.sin(w * xs[t]))
    return total


def squared_in_a_loop(w, xs):
    acc = 0.0
    for t in range(xs.shape[0]):
        acc = acc * 0.5 + np.sum(w * xs[t]) ** 2
    return acc * w[0]


@pytest.mark.parametrize("fn", [summed_in_a_loop, squared_in_a_loop])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_scalar_carried_from_a_float_to_a_float64_specialises_and_stays_right(fn, dtype):
    rng = np.random.default_rng(9)
    w, xs = rng.normal(size=3).astype(dtype), rng.normal(size=(4, 3)).astype(dtype)
    for steps in (4, 1, 0):
        _same(s2sad.grad(fn, specialize=True)(w, xs[:steps]), s2sad.grad(fn, specialize=False)(w, xs[:steps]),
              f"{fn.__name__} {dtype.__name__} {steps}")
    text = s2sad.adjoint_source(summed_in_a_loop, example=(np.ones(3), np.ones((4, 3))))
    assert "s2sad" not in _code(text), text


def test_code_generated_for_one_function_twice_differentiates_its_own_text():
    """grad(f, 0) and grad(f, (0,)) differ in text only: each is read back as itself when hvp
    differentiates it again (one file name per text in linecache)."""
    x, v = np.full(6, 0.1), np.ones(6)
    s2sad.grad(corpus.break_on_threshold, 0, specialize=False)(x)
    s2sad.grad(corpus.break_on_threshold, (0,), specialize=False)(x)
    assert type(s2sad.hvp(corpus.break_on_threshold, 0, specialize=False)(x, v)) is np.ndarray


@pytest.mark.parametrize("case", _cases())
def test_code_specialised_from_the_generic_build_is_the_code_a_whole_build_makes(case):
    # (a specialised build starts from a copy of what the generic build's reverse pass left:
    # the copy must be complete, and the generic build's later passes must not have changed it)
    from s2sad import compiler

    args = case.inputs()
    wrt = tuple(i for i, a in enumerate(args) if corpus.has_float(a))
    if not wrt:
        pytest.skip("no float argument")
    s2sad.clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        g = s2sad.grad(case.fn, wrt, specialize=True)
        try:
            g(*args)
            g(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        except s2sad.S2SADError:
            pytest.skip("refused (the corpus tests check the refusal)")
        made = [(signature, code) for signature, code in _specializations(g).items()
                if hasattr(code, "__s2sad_source__")]
        if not made:
            pytest.skip("nothing specialised")
        s2sad.clear_cache()
        for signature, code in made:  # without a generic build: every pass
            assert compiler.build(case.fn, wrt, "grad", shapes=signature).__s2sad_source__ == code.__s2sad_source__


def divided_by_a_python_float(x, d=0.0):
    return x[0] ** 2 / d + np.sum(x) / d + x[1]


def test_a_gradient_divided_by_a_python_zero_is_inf_as_numpy_gives_not_a_zero_division_error() -> None:
    # (the seed, written 1.0 in specialised code, was a Python float: 1.0 / 0.0 raised)
    x = np.array([1.0, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        assert np.isinf(divided_by_a_python_float(x))
        specialised = s2sad.grad(divided_by_a_python_float)(x)
        generic = s2sad.grad(divided_by_a_python_float, specialize=False)(x)
        np.testing.assert_array_equal(specialised, generic)
        np.testing.assert_array_equal(s2sad.grad(divided_by_a_python_float)(x, 2.0), [1.5, 1.5])
