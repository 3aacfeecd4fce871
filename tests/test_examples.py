"""The examples in examples/, run in --quick mode: each does what it says it shows.

Each example's ``main(argv)`` is called in-process once (a module-scoped fixture) and
returns the numbers it printed; the tests below check the claims on them.  Every script is
also run as ``python examples/NAME.py --quick``, the command the README gives.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NAMES = ["stable_softmax", "em_gmm", "rbm_cd", "adversarial"]

os.environ.setdefault("MPLBACKEND", "Agg")
needs_examples_extra = pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None or importlib.util.find_spec("matplotlib") is None,
    reason="the examples need the 'examples' extra: pip install -e '.[examples]'")


def load(name: str):
    """Import examples/NAME.py as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """``run(name, *args)``: the results of ``main(["--quick", "--out", DIR, *args])``, cached."""
    cache: dict = {}

    def run_example(name: str, *args: str) -> dict:
        key = (name, args)
        if key not in cache:
            out = tmp_path_factory.mktemp(name)
            cache[key] = load(name).main(["--quick", "--out", str(out), *args])
        return cache[key]

    return run_example


def is_png(path) -> bool:
    return path is not None and pathlib.Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- stable_softmax -------------------------------------------------------------------------

@needs_examples_extra
def test_stable_softmax_trains(run):
    r = run("stable_softmax")
    assert r["train_losses"][-1] < 0.5 * r["train_losses"][0]
    assert r["test_accuracy"] > 0.8
    assert r["reference_accuracy"] is not None and r["test_accuracy"] > r["reference_accuracy"] - 0.1
    assert is_png(r["plot"])


@needs_examples_extra
def test_stable_softmax_gradient_code_has_no_adjoint_of_max(run):
    code = run("stable_softmax")["gradient_code"]
    assert "def grad_loss(W, b, X, Y):" in code
    assert "stop_gradient(np.max(logits, axis=-1, keepdims=True))" in code
    assert "extremum_grad" not in code and "dmax" not in code
    assert not run("stable_softmax")["adjoint_of_max"]


@needs_examples_extra
def test_naive_softmax_overflows_and_gradients_agree_where_finite(run):
    r = run("stable_softmax")
    naive, stable, differences = (np.array(r[k]) for k in ("naive_losses", "stable_losses", "grad_differences"))
    assert np.isnan(naive).any()
    assert np.all(np.isfinite(stable))
    finite = np.isfinite(naive)
    assert finite.sum() >= 2
    assert np.allclose(naive[finite], stable[finite], rtol=1e-10)
    assert np.all(differences[finite] < 1e-12)
    assert r["closed_form_error"] < 1e-12


def test_stable_softmax_without_scikit_learn(monkeypatch, tmp_path, capsys):
    for module in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")] + ["sklearn"]:
        monkeypatch.setitem(sys.modules, module, None)  # every sklearn import raises ImportError
    r = load("stable_softmax").main(["--quick", "--out", str(tmp_path)])
    assert "Gaussian blobs" in capsys.readouterr().out
    assert r["reference_accuracy"] is None
    assert r["train_losses"][-1] < r["train_losses"][0]


# --- em_gmm ---------------------------------------------------------------------------------

EM_TOLERANCE = 1e-4  # mean log-likelihood per flower, against scikit-learn's


@needs_examples_extra
def test_em_matches_scikit_learn(run):
    r = run("em_gmm")
    assert r["history"][-1] > r["history"][0]
    assert abs(r["log_likelihood"] - r["sklearn_log_likelihood"]) < EM_TOLERANCE
    assert r["ari_vs_sklearn"] > 0.99
    assert is_png(r["plot"])


@needs_examples_extra
def test_em_stop_gradient_makes_the_gradient_that_of_the_log_likelihood(run):
    r = run("em_gmm")
    assert r["fisher_error"] < 1e-10
    assert r["gradient_difference"] > 1e-2  # without stop_gradient the gradient changes...
    # ...and ascent on that function ends at a worse log-likelihood
    assert r["without_stop_gradient_log_likelihood"] < r["log_likelihood"] - 1e-3
    assert "stop_gradient(responsibilities(log_p))" in r["gradient_code"]
    assert "_responsibilities(" not in r["gradient_code"]  # no vjp_ or grad_ of it


# --- rbm_cd ---------------------------------------------------------------------------------

@needs_examples_extra
def test_rbm_reconstruction_error_decreases(run):
    r = run("rbm_cd")
    assert r["recon"][-1] < 0.8 * r["recon"][0]
    assert r["pl"][-1] > r["pl"][0]
    # close to scikit-learn's BernoulliRBM trained from the same weights on the same batches
    assert abs(r["recon"][-1] - r["sklearn_recon"][-1]) < 0.25 * r["sklearn_recon"][-1]
    assert is_png(r["plot"])


@needs_examples_extra
def test_rbm_gibbs_chain_is_not_differentiated(run):
    r = run("rbm_cd")
    mine, theirs = r["pseudo_likelihood_check"]
    assert mine == pytest.approx(theirs, rel=1e-12)
    code = r["gradient_code"]
    assert "stop_gradient(gibbs_chain(v_data, W, b, c, k, rng))" in code
    assert "_gibbs_chain(" not in code and "_sigmoid(" not in code  # no vjp_ or grad_ of them


# --- adversarial ----------------------------------------------------------------------------

@needs_examples_extra
def test_adversarial_training_is_more_robust(run):
    r = run("adversarial")
    adv, clean = r["adversarial_accuracy"], r["clean_accuracy"]
    assert adv["adversarial"] > adv["normal"] + 0.1
    assert clean["normal"] > 0.9 and clean["adversarial"] > 0.9
    for history in r["loss_history"].values():
        assert history[-1] < history[0]
    assert is_png(r["plot"])


@needs_examples_extra
def test_adversarial_reference_is_the_same_model(run):
    r = run("adversarial")
    assert r["same_function"]
    assert abs(r["clean_accuracy"]["normal"] - r["clean_accuracy"]["sklearn"]) < 0.05
    code = r["gradient_code"]
    assert "stop_gradient(fgsm(params, X, Y, eps))" in code
    assert "_fgsm(" not in code  # no vjp_ or grad_ of it


# --- the command lines ----------------------------------------------------------------------

@needs_examples_extra
def test_scripts_run(tmp_path):
    """``python examples/NAME.py --quick --out DIR`` for the four scripts, two at a time."""
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def start(name: str) -> subprocess.Popen:
        command = [sys.executable, str(EXAMPLES / f"{name}.py"), "--quick", "--out", str(tmp_path)]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    for pair in (NAMES[:2], NAMES[2:]):
        running = {name: start(name) for name in pair}
        for name, process in running.items():
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, f"{name}: {err}"
            assert "wrote" in out, name
            assert is_png(tmp_path / f"{name}.png"), name


def _example_inputs(name: str):
    """Each example's loss, the wrt it differentiates, and arguments of the example's shapes."""
    rng = np.random.default_rng(0)
    X = rng.random((50, 64))
    Y = np.eye(10)[rng.integers(0, 10, 50)]
    module = load(name)
    if name == "stable_softmax":
        return module.loss, ("W", "b"), (rng.normal(size=(64, 10)), np.zeros(10), X, Y)
    if name == "em_gmm":
        params = {"means": rng.normal(size=(3, 2)), "log_diagonal": rng.normal(size=(3, 2)) * 0.1,
                  "off_diagonal": rng.normal(size=(3, 2, 2)) * 0.1, "logits": rng.normal(size=3)}
        return module.m_step_objective, "params", (params, rng.normal(size=(40, 2)))
    if name == "adversarial":
        params = [rng.normal(size=(64, 32)) * 0.1, np.zeros(32), rng.normal(size=(32, 10)) * 0.1, np.zeros(10)]
        return module.adversarial_loss, "params", (params, X, Y, 0.1)
    return module.cd_loss, ("W", "b", "c"), (rng.normal(size=(64, 16)) * 0.1, np.zeros(64), np.zeros(16),
                                             (X > 0.5) * 1.0, 1, np.random.default_rng(1))


def _same(a, b):
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        a, b = list(a.values()), list(b.values())
    if isinstance(a, (list, tuple)):
        for u, v in zip(a, b, strict=True):
            _same(u, v)
        return
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["stable_softmax", "em_gmm", "adversarial", "rbm_cd"])
def test_example_gradients_specialised_to_their_shapes(name):
    """The loss functions' gradients, specialised to the examples' shapes, are plain NumPy
    (the callees' code too: log_joint, free_energy, cross_entropy), and agree with the
    generic code."""
    import s2sad

    fn, wrt, args = _example_inputs(name)
    text = s2sad.adjoint_source(fn, wrt, example=args)
    code = "\n".join(line for line in text.split("\n") if not line.strip().startswith("#"))
    assert "s2sad" not in code, text
    specialised = s2sad.grad(fn, wrt)(*args)
    fn, wrt, args = _example_inputs(name)  # (the RBM's random generator afresh)
    _same(specialised, s2sad.grad(fn, wrt, specialize=False)(*args))


@pytest.mark.parametrize("name", ["stable_softmax", "em_gmm", "adversarial", "rbm_cd"])
def test_example_gradients_match_golden_files(name):
    """The specialised gradient each example prints for its example shapes, as a person
    would read it (run with S2SAD_UPDATE_GOLDEN=1 to rewrite the files)."""
    import s2sad

    fn, wrt, args = _example_inputs(name)
    text = s2sad.adjoint_source(fn, wrt, example=args)
    path = ROOT / "tests" / "golden" / "examples" / f"{name}.py"
    if os.environ.get("S2SAD_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()
