"""Realistic programs (probe 11), of the kind other projects' test suites hold: meta-learning
through unrolled gradient descent and Adam, an n-body and a spring-mass simulation with velocity
Verlet, a log posterior from scipy.stats densities with priors, an FFT convolution with a power
spectrum, the 2-d heat equation with np.roll and boundary writes, LSTM and GRU cells with
parameters in dicts, a Gaussian mixture's log-likelihood, a hinge loss, a ranking loss through
np.argsort, a physics-informed loss whose helper calls s2sad.grad, methods and properties of
classes, math.* on scalars in a loop, and Newton iterations that stop on a stopped check.  Each
gradient (and value_and_grad) is checked against central finite differences in float64; some
Hessian-vector products against finite differences of the gradient; some with jit=True; the
standalone module the CLI prints is imported and run."""
from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import logsumexp

import s2sad
from s2sad import stop_gradient
from tests.gradcheck import assert_grad_matches, assert_hvp_matches, numerical_grad

ROOT = Path(__file__).resolve().parent.parent


# --- programs --------------------------------------------------------------------------------

def meta_gd(lr: float, x0: np.ndarray, A: np.ndarray) -> float:
    x = x0
    for _ in range(5):
        x = x - lr * (A @ x)
    return 0.5 * x @ A @ x


def meta_adam(lr: float, x0: np.ndarray, A: np.ndarray) -> float:
    x, m, v = x0, np.zeros_like(x0), np.zeros_like(x0)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in range(1, 5):
        g = A @ x + np.sin(x)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        mh, vh = m / (1 - b1 ** t), v / (1 - b2 ** t)
        x = x - lr * mh / (np.sqrt(vh) + eps)
    return np.sum(x ** 2)


def nbody(pos: np.ndarray, vel: np.ndarray, mass: np.ndarray, dt: float) -> float:
    def acc(p: np.ndarray) -> np.ndarray:
        d = p[None, :, :] - p[:, None, :]
        inv = (np.sum(d ** 2, axis=-1) + 0.1) ** -1.5
        return np.sum(mass[None, :, None] * d * inv[:, :, None], axis=1)
    a = acc(pos)
    for _ in range(4):
        vel = vel + 0.5 * dt * a
        pos = pos + dt * vel
        a = acc(pos)
        vel = vel + 0.5 * dt * a
    return 0.5 * np.sum(mass[:, None] * vel ** 2) + np.sum(pos ** 2)


def springs(x0: np.ndarray, k: float, dt: float) -> float:
    x, v = x0.copy(), np.zeros_like(x0)
    for _ in range(6):
        v = v + dt * (-k * (x - np.roll(x, 1)) - k * (x - np.roll(x, -1)))
        x = x + dt * v
    return np.sum(x ** 2) + np.sum(v ** 2)


def log_posterior(theta: np.ndarray, y: np.ndarray) -> float:
    mu, log_s, a = theta[0], theta[1], theta[2]
    s = np.exp(log_s)
    lp = st.norm.logpdf(mu, 0.0, 10.0) + st.gamma.logpdf(s, 2.0, scale=1.0)
    lp = lp + st.beta.logpdf(1 / (1 + np.exp(-a)), 2.0, 3.0)
    lp = lp + np.sum(st.t.logpdf(y, 4.0, loc=mu, scale=s))
    return lp + np.sum(st.norm.logpdf(y, loc=mu, scale=s))


def fft_conv(x: np.ndarray, k: np.ndarray) -> float:
    n = len(x)
    y = np.fft.irfft(np.fft.rfft(x) * np.fft.rfft(k, n), n)
    return np.sum(y ** 2) + 0.01 * np.sum(np.abs(np.fft.rfft(y)) ** 2)


def heat2d(u0: np.ndarray, kappa: float) -> float:
    u = u0
    for _ in range(5):
        lap = (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1)
               + np.roll(u, -1, axis=1) - 4 * u)
        u = u + kappa * lap
        u[0, :] = 0.0
        u[:, -1] = u[:, -2]
    return np.sum(u[1:-1, 1:-1] ** 2)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


def lstm(params: dict, xs: np.ndarray) -> float:
    h = np.zeros(params["Wf"].shape[0])
    c = np.zeros_like(h)
    for t in range(xs.shape[0]):
        z = np.concatenate([h, xs[t]])
        f = sigmoid(params["Wf"] @ z + params["bf"])
        i = sigmoid(params["Wi"] @ z + params["bi"])
        o = sigmoid(params["Wo"] @ z + params["bo"])
        c = f * c + i * np.tanh(params["Wc"] @ z + params["bc"])
        h = o * np.tanh(c)
    return np.sum(h ** 2)


def gru(p: dict, xs: np.ndarray, h0: np.ndarray) -> float:
    h = h0
    for x in xs:
        z = sigmoid(p["Wz"] @ x + p["Uz"] @ h)
        r = sigmoid(p["Wr"] @ x + p["Ur"] @ h)
        h = (1 - z) * h + z * np.tanh(p["Wh"] @ x + p["Uh"] @ (r * h))
    return np.sum(h)


def gmm_ll(mu: np.ndarray, log_sig: np.ndarray, logits: np.ndarray, x: np.ndarray) -> float:
    lw = logits - logsumexp(logits)
    z = (x[:, None] - mu[None, :]) / np.exp(log_sig)[None, :]
    comp = -0.5 * z ** 2 - log_sig[None, :] - 0.5 * np.log(2 * np.pi)
    return np.sum(logsumexp(comp + lw[None, :], axis=1))


def svm(w: np.ndarray, b: float, X: np.ndarray, y: np.ndarray, C: float) -> float:
    margins = y * (X @ w + b)
    return 0.5 * w @ w + C * np.sum(np.maximum(0.0, 1.0 - margins))


def ranking(s: np.ndarray, rel: np.ndarray) -> float:
    order = np.argsort(-s)
    ss, rr = s[order], rel[order]
    disc = 1.0 / np.log2(np.arange(2, len(s) + 2))
    soft = np.exp(ss) / np.sum(np.exp(ss))
    return np.sum(soft * rr * disc) + np.sum(np.maximum(0, 1 - (ss[:-1] - ss[1:])))


def u_net(x: np.ndarray, w: float) -> float:
    return np.sum(np.tanh(w * x) ** 2)


def du_dx(x: float, w: float) -> float:
    return s2sad.grad(u_net, 0)(x, w)


def pinn(w: float, xs: np.ndarray) -> float:
    total = 0.0
    for x in xs:
        total = total + (du_dx(x, w) - np.cos(x)) ** 2
    return total


def pinn_vector(w: float, xs: np.ndarray) -> float:
    r = s2sad.grad(u_net, 0)(xs, w) - np.cos(xs)
    return np.sum(r ** 2) + u_net(xs, w)


def inner_loss(x: np.ndarray, A: np.ndarray) -> float:
    return 0.5 * x @ A @ x + np.sum(np.cos(x))


def meta_grad_alias(lr: float, x0: np.ndarray, A: np.ndarray) -> float:
    dloss = s2sad.grad(inner_loss, 0)  # (a name for the function grad makes, bound once)
    both = s2sad.value_and_grad(inner_loss, wrt=0)
    x = x0
    for _ in range(3):
        x = x - lr * dloss(x, A)
    value, g = both(x, A)
    return value + 0.1 * np.sum(g ** 2)


def apply_to(fn: Callable[..., np.ndarray], x: np.ndarray, A: np.ndarray) -> np.ndarray:
    return fn(x, A)


def meta_grad_passed_on(lr: float, x0: np.ndarray, A: np.ndarray) -> float:
    dloss = s2sad.grad(inner_loss, 0)
    x = x0 - lr * apply_to(dloss, x0, A)
    again = dloss
    return inner_loss(x, A) + np.sum(again(x, A))


def grad_with_a_variable_option(x: np.ndarray, A: np.ndarray) -> float:
    k = 0
    dloss = s2sad.grad(inner_loss, k)
    return np.sum(dloss(x, A))


def mse(p: dict, x: np.ndarray, y: np.ndarray) -> float:
    return np.mean((np.tanh(x @ p["W"] + p["b"]) - y) ** 2)


def adam_dict(lr: float, params: dict, x: np.ndarray, y: np.ndarray) -> float:
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v2 = {k: np.zeros_like(v) for k, v in params.items()}
    p = dict(params)
    for _ in range(2):
        grads = s2sad.grad(mse, 0)(p, x, y)
        for k in p:
            m[k] = 0.9 * m[k] + 0.1 * grads[k]
            v2[k] = 0.99 * v2[k] + 0.01 * grads[k] ** 2
            p[k] = p[k] - lr * m[k] / (np.sqrt(v2[k]) + 1e-8)
    return mse(p, x, y)


def conv2d_fft(img: np.ndarray, ker: np.ndarray) -> float:
    out = np.fft.irfft2(np.fft.rfft2(img) * np.fft.rfft2(ker, s=img.shape), s=img.shape)
    return np.sum(np.fft.fftshift(out) ** 2) + np.sum(np.abs(np.fft.rfft(img[0], norm="ortho")))


def burgers(u0: np.ndarray, c: float) -> float:
    u = u0
    for _ in range(3):
        u = u - c * u * np.gradient(u) + 0.1 * np.diff(np.pad(u, 1, mode="wrap"), 2)
    return np.sum(u ** 2)


def gmm_full(means: np.ndarray, covs: np.ndarray, logits: np.ndarray, X: np.ndarray) -> float:
    lw = logits - logsumexp(logits)
    out = []
    for k in range(len(logits)):
        d = X - means[k]
        _, logdet = np.linalg.slogdet(covs[k])
        q = np.einsum("ni,ij,nj->n", d, np.linalg.inv(covs[k]), d)
        out.append(lw[k] - 0.5 * q - 0.5 * logdet)
    return np.sum(logsumexp(np.array(out), axis=0))


def pairwise_rank(s: np.ndarray, y: np.ndarray) -> float:
    ranks = np.argsort(np.argsort(-s))
    pos = np.searchsorted(np.sort(y), y)
    pairs = s[:, None] - s[None, :]
    mask = y[:, None] > y[None, :]
    return np.sum(s * pos / (1.0 + ranks)) + np.sum(np.where(mask, np.log1p(np.exp(-pairs)), 0.0))


def kepler(M: np.ndarray, e: float) -> float:
    E = M
    for _ in range(50):
        dE = (E - e * np.sin(E) - M) / (1 - e * np.cos(E))
        E = E - dE
        if stop_gradient(np.max(np.abs(dE))) < 1e-13:
            break
    return np.sum(np.cos(E))


class Net:
    def __init__(self, depth: int) -> None:
        self.depth = depth

    @property
    def n(self) -> int:
        return self.depth

    def apply(self, W: np.ndarray, x: np.ndarray) -> np.ndarray:
        for _ in range(self.n):
            x = np.tanh(W @ x)
        return x

    def loss(self, W: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
        return np.sum((self.apply(W, x) - y) ** 2)


NET = Net(3)


def net_loss(W: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    net = Net(2)
    return NET.loss(W, x, y) + net.apply(W, x).sum()


def math_loop(a: float, b: float) -> float:
    s = 0.0
    for i in range(5):
        s = s + math.sin(a * i) * math.exp(-b * i) + math.sqrt(a * a + i) + math.log(1 + b * b) * math.cos(i)
    return s + math.atan2(a, b) + math.hypot(a, b) + math.tanh(a) + a ** 2.5


def newton_sqrt(a: float) -> float:
    x, it = a, 0
    while stop_gradient(abs(x * x - a)) > 1e-12 and it < 50:
        x = 0.5 * (x + a / x)
        it += 1
    return 3.0 * x


def newton_root(c: float, x0: float) -> float:
    x = x0
    for _ in range(30):
        fx = x ** 3 + c * x - 1.0
        if stop_gradient(abs(fx)) < 1e-13:
            break
        x = x - fx / (3 * x ** 2 + c)
    return x ** 2


# --- arguments --------------------------------------------------------------------------------

R = np.random.default_rng(11)
SPD = R.normal(size=(4, 4)) @ R.normal(size=(4, 4)).T / 4 + np.eye(4)
LSTM = {k: 0.5 * R.normal(size=(3, 5)) for k in ["Wf", "Wi", "Wo", "Wc"]} | {
    k: 0.1 * R.normal(size=3) for k in ["bf", "bi", "bo", "bc"]}
GRU = {k: 0.5 * R.normal(size=(3, 2)) for k in ["Wz", "Wr", "Wh"]} | {
    k: 0.5 * R.normal(size=(3, 3)) for k in ["Uz", "Ur", "Uh"]}
X8, Y8 = R.normal(size=(8, 3)), np.sign(R.normal(size=8))
W33 = 0.5 * R.normal(size=(3, 3))

CASES: list[tuple[Callable[..., float], list, tuple[int, ...]]] = [
    (meta_gd, [0.05, R.normal(size=4), SPD], (0, 1, 2)),
    (meta_adam, [0.05, R.normal(size=4), SPD], (0, 1)),
    (nbody, [R.normal(size=(3, 2)), 0.1 * R.normal(size=(3, 2)), np.abs(R.normal(size=3)) + 0.5, 0.05],
     (0, 1, 2, 3)),
    (springs, [R.normal(size=5), 1.3, 0.1], (0, 1, 2)),
    (log_posterior, [np.array([0.3, -0.2, 0.4]), R.normal(size=6)], (0, 1)),
    (fft_conv, [R.normal(size=8), R.normal(size=3)], (0, 1)),
    (heat2d, [R.normal(size=(5, 6)), 0.1], (0, 1)),
    (lstm, [LSTM, R.normal(size=(4, 2))], (1,)),
    (gru, [GRU, R.normal(size=(4, 2)), R.normal(size=3)], (1, 2)),
    (gmm_ll, [R.normal(size=3), 0.3 * R.normal(size=3), R.normal(size=3), R.normal(size=10)], (0, 1, 2, 3)),
    (svm, [R.normal(size=3), 0.1, X8, Y8, 0.7], (0, 1, 2, 4)),
    (ranking, [R.normal(size=6), R.random(6)], (0, 1)),
    (pinn, [0.7, R.normal(size=4)], (0, 1)),
    (pinn_vector, [0.7, R.normal(size=4)], (0, 1)),
    (meta_grad_alias, [0.1, R.normal(size=4), SPD], (0, 1, 2)),
    (meta_grad_passed_on, [0.1, R.normal(size=4), SPD], (0, 1)),
    (adam_dict, [0.05, {"W": R.normal(size=(3, 2)), "b": R.normal(size=2)}, R.normal(size=(5, 3)),
                 R.normal(size=(5, 2))], (0, 2, 3)),
    (conv2d_fft, [R.normal(size=(4, 6)), R.normal(size=(2, 2))], (0, 1)),
    (burgers, [0.3 * R.normal(size=7), 0.1], (0, 1)),
    (gmm_full, [R.normal(size=(2, 2)), np.array([1.3 * np.eye(2), [[1.0, 0.3], [0.3, 0.8]]]), R.normal(size=2),
                R.normal(size=(6, 2))], (0, 1, 2, 3)),
    (pairwise_rank, [R.normal(size=5), R.normal(size=5)], (0,)),
    (kepler, [3 * R.random(4), 0.3], (0, 1)),
    (net_loss, [W33, R.normal(size=3), R.normal(size=3)], (0, 1, 2)),
    (math_loop, [0.7, 0.4], (0, 1)),
    (newton_sqrt, [2.3], (0,)),
    (newton_root, [1.5, 0.5], (0, 1)),
]


# --- checks -----------------------------------------------------------------------------------

@pytest.mark.parametrize("f, args, wrts", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient_matches_finite_differences(f, args, wrts) -> None:
    for wrt in wrts:
        if any(isinstance(a, dict) for a in args):  # (assert_grad_matches compares arrays only)
            value, both = s2sad.value_and_grad(f, wrt)(*args)
            expected = numerical_grad(f, args, wrt)
            np.testing.assert_allclose(s2sad.grad(f, wrt)(*args), expected, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(both, expected, rtol=1e-5, atol=1e-7)
            assert value == pytest.approx(f(*args), rel=1e-12)
        else:
            assert_grad_matches(f, args, wrt)


DICT_ENTRIES = [(lstm, "Wf"), (lstm, "bo"), (lstm, "Wc"), (adam_dict, "W"), (adam_dict, "b")]


@pytest.mark.parametrize("f, key", DICT_ENTRIES, ids=[f"{f.__name__}-{k}" for f, k in DICT_ENTRIES])
def test_gradient_of_a_dict_entry(f, key: str) -> None:
    args = next(c[1] for c in CASES if c[0] is f)
    argnum = next(i for i, a in enumerate(args) if isinstance(a, dict))
    g = s2sad.grad(f, argnum)(*args)
    assert sorted(g) == sorted(args[argnum])

    def of_entry(value: np.ndarray) -> float:
        moved = list(args)
        moved[argnum] = args[argnum] | {key: value}
        return f(*moved)
    expected = numerical_grad(of_entry, [args[argnum][key]], 0)
    np.testing.assert_allclose(g[key], expected, rtol=1e-5, atol=1e-8)


HVP = [(adam_dict, 0), (adam_dict, 2), (conv2d_fft, 1), (burgers, 0), (gmm_full, 1), (kepler, 1),
       (meta_grad_alias, 1), (meta_adam, 0), (meta_gd, 1), (nbody, 2), (springs, 1), (log_posterior, 0),
       (fft_conv, 0), (heat2d, 0), (gmm_ll, 1), (math_loop, 1), (newton_root, 0), (pinn_vector, 0)]


@pytest.mark.parametrize("f, wrt", HVP, ids=[f"{h[0].__name__}-{h[1]}" for h in HVP])
def test_hvp_matches_finite_differences_of_the_gradient(f, wrt: int) -> None:
    assert_hvp_matches(f, next(c[1] for c in CASES if c[0] is f), wrt, rng=R)


JIT = [(meta_adam, 0), (meta_gd, 1), (svm, 0), (math_loop, 0), (math_loop, 1), (newton_sqrt, 0)]


@pytest.mark.parametrize("f, wrt", JIT, ids=[f"{j[0].__name__}-{j[1]}" for j in JIT])
def test_jit_gradient_matches_finite_differences(f, wrt: int) -> None:
    pytest.importorskip("numba")
    args = next(c[1] for c in CASES if c[0] is f)
    g = s2sad.grad(f, wrt, jit=True)
    g(*args)
    np.testing.assert_allclose(g(*args), numerical_grad(f, args, wrt), rtol=1e-5, atol=1e-7)


def test_a_derivative_bound_with_options_not_literals_is_refused_at_its_call() -> None:
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(grad_with_a_variable_option)(np.ones(4), SPD)
    line = grad_with_a_variable_option.__code__.co_firstlineno + 3
    assert (info.value.location.line, info.value.location.column) == (line, 19), str(info.value)
    assert "'dloss' is a local variable" in info.value.message


# --- jit: the slopes of maxima and of divisions by what may be 0 ------------------------------

def hinge_ties(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    return np.sum(np.maximum(0.0, 1.0 - y * (X @ w))) + np.sum(np.minimum(w, 0.5))


def row_maximum(A: np.ndarray, b: np.ndarray) -> float:
    return np.sum(np.maximum(A, b) ** 2)


def hypot_at_zero(x: np.ndarray, c: float) -> float:
    return np.sum(np.hypot(x, c)) + np.sum(np.abs(x))


def scalar_hypot_maximum(a: float, b: float) -> float:
    return np.hypot(a, b) * np.maximum(a, b)


TIES = [
    (hinge_ties, (np.array([1.0, 0.5]), np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]),
                  np.array([1.0, -1.0, 1.0])), (0,)),  # a margin of exactly 1, w == 0.5
    (row_maximum, (np.array([[1.0, 2.0], [3.0, 0.0]]), np.array([1.0, 0.5])), (0, 1)),
    (hypot_at_zero, (np.array([0.0, 3.0, -1.0]), 0.0), (0, 1)),
    (scalar_hypot_maximum, (0.0, 0.0), (0, 1)),
    (scalar_hypot_maximum, (1.5, 1.5), (0, 1)),
]


@pytest.mark.parametrize("f, args, wrts", TIES, ids=[f"{t[0].__name__}-{i}" for i, t in enumerate(TIES)])
def test_jit_maximum_and_safe_division_equal_numpys_at_ties_and_zeros(f, args, wrts) -> None:
    """balanced_eq (1/2 to each side of a tie) and safe_divide (0 where the divisor is 0) compile,
    broadcasting as NumPy does, and give the NumPy code's numbers, types included."""
    pytest.importorskip("numba")
    for wrt in wrts:
        expected, got = s2sad.grad(f, wrt)(*args), s2sad.grad(f, wrt, jit=True)(*args)
        assert type(got) is type(expected) and np.array_equal(got, expected), (wrt, got, expected)


# --- the CLI's standalone module --------------------------------------------------------------

@pytest.mark.parametrize("name, wrt", [("meta_adam", "x0"), ("heat2d", "u0"), ("log_posterior", "theta"),
                                       ("pinn", "w"), ("lstm", "params"),
                                       ("meta_grad_alias", "x0")])
def test_standalone_module_gives_the_same_gradient(name: str, wrt: str, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "cli.py"), f"{__file__}:{name}", "--wrt", wrt,
                          "--standalone"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    (tmp_path / f"sa_{name}.py").write_text(out)
    spec = importlib.util.spec_from_file_location(f"sa_{name}", tmp_path / f"sa_{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    f, args, _ = next(c for c in CASES if c[0].__name__ == name)
    got, expected = getattr(module, f"grad_{name}")(*args), s2sad.grad(f, wrt)(*args)
    if isinstance(expected, dict):
        assert sorted(got) == sorted(expected)
        for key in expected:
            np.testing.assert_allclose(got[key], expected[key], rtol=1e-12, atol=1e-14)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_standalone_refuses_a_derivative_passed_on_as_a_value() -> None:
    """The code reads the function grad made, which no module defines: refused, not a KeyError."""
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), f"{__file__}:meta_grad_passed_on", "--wrt",
                           "x0", "--standalone"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "the code reads again, which is not a module-level value" in done.stderr
