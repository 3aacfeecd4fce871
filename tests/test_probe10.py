"""Realistic programs (probe 10), of the kind other projects' test suites hold: a GP negative
log marginal likelihood, a Kalman filter, RK4, Sinkhorn, attention with layer norm, a mixture
density network, a Poisson GLM, robust losses, the heat equation, a VAE's ELBO, polynomial and
spline fits, convolutions, batch norm, a triplet loss, logistic regression, einsum
contractions, cumulative and sorting functions, parameters in dicts, lists and named tuples,
random draws inline, and np.errstate guards.  Each gradient is checked against central finite differences in float64, for several
arguments; some Hessian-vector products against finite differences of the gradient; every
gradient function is called twice, and again with other shapes."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np
import pytest
import scipy.linalg as sla
from scipy.special import gammaln, logsumexp

import s2sad
from tests.gradcheck import numerical_grad

RNG = np.random.default_rng(2026)


# --- programs --------------------------------------------------------------------------------

def gp_nlml(log_ls: np.ndarray, log_sf: float, log_sn: float, X: np.ndarray, y: np.ndarray) -> float:
    d = X[:, None, :] - X[None, :, :]
    r2 = np.sum(d ** 2 / np.exp(2 * log_ls), axis=-1)
    K = np.exp(2 * log_sf) * np.exp(-0.5 * r2) + np.exp(2 * log_sn) * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = sla.solve_triangular(L, y, lower=True)
    return 0.5 * alpha @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * np.log(2 * np.pi)


def gp_solve_logdet(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    K = theta[0] ** 2 * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / theta[1] ** 2) + 0.1 * np.eye(len(x))
    alpha = np.linalg.solve(K, y)
    _, logdet = np.linalg.slogdet(K)
    return 0.5 * y @ alpha + 0.5 * logdet


def kalman_nll(q: float, r: float, ys: np.ndarray, F: np.ndarray, H: np.ndarray) -> float:
    n = F.shape[0]
    m, P = np.zeros(n), np.eye(n)
    ll = 0.0
    for t in range(len(ys)):
        m = F @ m
        P = F @ P @ F.T + q * np.eye(n)
        S = H @ P @ H.T + r
        K = P @ H.T / S
        v = ys[t] - H @ m
        ll = ll - 0.5 * (np.log(2 * np.pi * S) + v ** 2 / S)
        m = m + K * v
        P = P - np.outer(K, H @ P)
    return -ll


def lotka_volterra(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    return np.array([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]])


def rk4_fit(p: np.ndarray, y0: np.ndarray, h: float, n: int) -> float:
    y = y0
    path = []
    for _ in range(n):
        k1 = lotka_volterra(y, p)
        k2 = lotka_volterra(y + h / 2 * k1, p)
        k3 = lotka_volterra(y + h / 2 * k2, p)
        k4 = lotka_volterra(y + h * k3, p)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        path.append(y)
    return np.sum((np.stack(path) - 1.0) ** 2)


def sinkhorn_loss(C: np.ndarray, a: np.ndarray, b: np.ndarray, eps: float) -> float:
    f, g = np.zeros_like(a), np.zeros_like(b)
    for _ in range(20):
        f = eps * np.log(a) - eps * logsumexp((g[None, :] - C) / eps, axis=1)
        g = eps * np.log(b) - eps * logsumexp((f[:, None] - C) / eps, axis=0)
    P = np.exp((f[:, None] + g[None, :] - C) / eps)
    return np.sum(P * C)


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return g * (x - mu) / np.sqrt(var + eps) + b


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def causal_attention(params: dict, x: np.ndarray, n_heads: int = 2) -> float:
    T, D = x.shape
    dh = D // n_heads
    h = layer_norm(x, params["g"], params["b"])
    q = (h @ params["Wq"]).reshape(T, n_heads, dh).transpose(1, 0, 2)
    k = (h @ params["Wk"]).reshape(T, n_heads, dh).transpose(1, 0, 2)
    v = (h @ params["Wv"]).reshape(T, n_heads, dh).transpose(1, 0, 2)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
    s = np.where(np.triu(np.ones((T, T)), 1).astype(bool), -1e9, s)
    o = (softmax(s) @ v).transpose(1, 0, 2).reshape(T, D)
    return np.sum((x + o @ params["Wo"]) ** 2) / T


def mdn_nll(W: np.ndarray, x: np.ndarray, y: np.ndarray, K: int = 3) -> float:
    out = x @ W
    logits, mu, log_s = out[:, :K], out[:, K:2 * K], out[:, 2 * K:]
    log_pi = logits - logsumexp(logits, axis=1, keepdims=True)
    z = (y[:, None] - mu) / np.exp(log_s)
    log_n = -0.5 * z ** 2 - log_s - 0.5 * np.log(2 * np.pi)
    return -np.mean(logsumexp(log_pi + log_n, axis=1))


def poisson_glm(beta: np.ndarray, X: np.ndarray, y: np.ndarray, offset: np.ndarray) -> float:
    eta = X @ beta + offset
    return np.sum(np.exp(eta) - y * eta + gammaln(y + 1))


def huber(r: np.ndarray, delta: float) -> float:
    a = np.abs(r)
    return np.sum(np.where(a <= delta, 0.5 * r ** 2, delta * (a - 0.5 * delta)))


def robust_fit(w: np.ndarray, X: np.ndarray, y: np.ndarray, delta: float) -> float:
    r = X @ w - y
    u = np.clip(r / 1.5, -1.0, 1.0)
    tukey = np.sum(1.5 ** 2 / 6 * (1 - (1 - u ** 2) ** 3))
    return huber(r, delta) + tukey + 0.01 * np.sum(np.clip(w, -0.5, 0.5) ** 2)


def heat_roll(u0: np.ndarray, kappa: float) -> float:
    u = u0.copy()
    for _ in range(15):
        u = u + 0.001 * kappa * (np.roll(u, 1) - 2 * u + np.roll(u, -1)) / 0.01
    return np.sum(u ** 2)


def heat_in_place(u0: np.ndarray, kappa: float) -> float:
    u = u0.copy()
    for _ in range(10):
        u[1:-1] += kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
        u[0] = u[1]
    return np.sum(np.sin(u))


def vae_elbo(params: dict, x: np.ndarray) -> float:
    rng = np.random.default_rng(0)
    h = np.tanh(x @ params["W1"] + params["b1"])
    mu, logvar = h @ params["Wmu"], h @ params["Wlv"]
    z = mu + np.exp(0.5 * logvar) * rng.standard_normal(mu.shape)
    xr = 1 / (1 + np.exp(-(z @ params["Wd"])))
    rec = np.sum(x * np.log(xr + 1e-9) + (1 - x) * np.log(1 - xr + 1e-9))
    kl = -0.5 * np.sum(1 + logvar - mu ** 2 - np.exp(logvar))
    return -(rec - kl) / x.shape[0]


def polynomial_fit(c: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    V = np.vander(x, len(c))
    return np.mean((np.polyval(c, x) - y) ** 2) + np.sum((V @ c - y) ** 2)


def cubic_spline_fit(c: np.ndarray, x: np.ndarray) -> float:
    knots = np.linspace(-1, 1, 5)
    basis = np.maximum(x[:, None] - knots[None, :], 0.0) ** 3
    return np.sum((basis @ c - np.sin(3 * x)) ** 2)


def conv_losses(w: np.ndarray, x: np.ndarray) -> float:
    valid = np.convolve(x, w, mode="valid")
    k = len(w)
    windows = np.array([np.dot(x[i:i + k], w[::-1]) for i in range(len(x) - k + 1)])
    strided = np.lib.stride_tricks.sliding_window_view(x, k) @ w[::-1]
    return (np.sum(np.tanh(valid) ** 2) + np.sum(np.correlate(x, w, mode="full") ** 3) + np.sum(windows * valid)
            + np.sum(strided ** 3))


def batch_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> float:
    mu = np.mean(x, axis=0)
    var = np.mean((x - mu) ** 2, axis=0)
    return np.sum(np.sin(gamma * (x - mu) / np.sqrt(var + 1e-5) + beta))


def triplet_loss(A: np.ndarray, P: np.ndarray, N: np.ndarray, margin: float = 1.0) -> float:
    dp = np.linalg.norm(A - P, axis=-1)
    dn = np.linalg.norm(A - N, ord=2, axis=-1, keepdims=True)[:, 0]
    return np.mean(np.maximum(dp - dn + margin, 0.0)) + np.sum(np.clip(dp - dn, 0, None))


def logistic_regression(w: np.ndarray, b: float, X: np.ndarray, y: np.ndarray) -> float:
    z = X @ w + b
    return np.mean(np.logaddexp(0, -y * z)) + 0.1 * w @ w


def contractions(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> float:
    T = np.einsum("ijk,jl,km->ilm", A, B, C)
    t = np.einsum("ilm,il->m", T, np.ones((A.shape[0], B.shape[1])))
    return (np.sum(t ** 2) + np.einsum("ij,ij->", A[:, :, 0], A[:, :, 1]) + np.einsum("ii", B[:2, :2])
            + np.einsum("i,i", t, t) + np.sum(np.einsum("...i,ij->...j", A, C) ** 2))


def drawdown_and_order(r: np.ndarray, w: np.ndarray) -> float:
    wealth = np.cumprod(1 + r)
    peak = np.maximum.accumulate(wealth)
    s = np.sort(r)
    order = np.argsort(r)
    return (np.max((peak - wealth) / peak) + np.sum(np.diff(wealth) ** 2) + np.mean(s[2:-2] ** 2)
            + np.sum(w * r[order] ** 2) + np.sum(np.cumsum(s) * w))


def rows_sorted(X: np.ndarray, W: np.ndarray) -> float:
    idx = np.argsort(X, axis=1)
    S = np.take_along_axis(X, idx, axis=1)
    top = np.take_along_axis(X * W, np.argmax(X, axis=1)[:, None], axis=1)
    return np.sum(S * W ** 2) + np.sum(top ** 2) + np.sum(np.diff(X, axis=0) ** 3)


class Layer(NamedTuple):
    W: np.ndarray
    b: np.ndarray


def mlp_layers(layers: list, x: np.ndarray, y: np.ndarray) -> float:
    h = x
    for layer in layers:
        h = np.tanh(h @ layer.W + layer.b)
    return np.mean((h[:, 0] - y) ** 2) + 0.01 * sum(np.sum(layer.W ** 2) for layer in layers)


def tree_params(theta: tuple, x: np.ndarray) -> float:
    a, (b, c) = theta
    return np.sum((a * x + b) ** 2) + c * np.sum(x)


def gp_posterior(log_ls: np.ndarray, X: np.ndarray, y: np.ndarray, Xs: np.ndarray) -> float:
    ls = np.exp(log_ls)

    def kernel(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        d = (A[:, None, :] - B[None, :, :]) / ls
        return np.exp(-0.5 * np.sum(d * d, axis=-1))
    L = np.linalg.cholesky(kernel(X, X) + 1e-2 * np.eye(len(X)))
    mean = kernel(Xs, X) @ sla.cho_solve((L, True), y)
    v = sla.solve_triangular(L, kernel(X, Xs), lower=True)
    axes = (0,)
    return np.sum(mean ** 2) + np.sum(1.0 - np.sum(v * v, axis=axes))


def elbo_inline_noise(mu: np.ndarray, log_s: np.ndarray, x: np.ndarray) -> float:
    np.random.seed(0)
    np.random.randn(2)  # (numbers skipped, as a script that draws something first would)
    unused = np.random.randn(3)
    z = mu + np.exp(log_s) * np.random.randn(3)
    z2 = mu + np.exp(log_s) * np.random.randn(3)
    rec = np.sum((x - z) ** 2) + np.sum((x - z2) ** 2)
    return rec + 0.5 * np.sum(np.exp(2 * log_s) + mu ** 2 - 1 - 2 * log_s)


def guarded_log_likelihood(x: np.ndarray, w: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):  # (the gradient code warns as NumPy does)
        logs = np.where(x > 0, np.log(x), 0.0)
        roots = np.nan_to_num(np.sqrt(x))
    return np.sum(w * logs) + np.sum(roots * w)


# --- arguments --------------------------------------------------------------------------------

def _cases() -> list[tuple[Callable[..., float], Callable[[np.random.Generator], list], tuple]]:
    """(function, arguments made from a generator, arguments to differentiate)."""
    F, H = np.array([[1.0, 0.1], [0.0, 0.9]]), np.array([1.0, 0.0])
    D = 4

    def attention_args(r: np.random.Generator, T: int = 3) -> list:
        params = {k: 0.5 * r.normal(size=(D, D)) for k in ["Wq", "Wk", "Wv", "Wo"]}
        params["g"], params["b"] = 1 + 0.1 * r.normal(size=D), 0.1 * r.normal(size=D)
        return [params, r.normal(size=(T, D))]

    def vae_args(r: np.random.Generator) -> list:
        params = {"W1": 0.3 * r.normal(size=(6, 5)), "b1": np.zeros(5), "Wmu": 0.3 * r.normal(size=(5, 2)),
                  "Wlv": 0.3 * r.normal(size=(5, 2)), "Wd": 0.3 * r.normal(size=(2, 6))}
        return [params, (r.random((4, 6)) > 0.5).astype(float)]

    return [
        (gp_nlml, lambda r: [np.array([0.1, -0.2]), 0.3, -1.0, r.normal(size=(5, 2)), r.normal(size=5)],
         (0, 1, 2, 3)),
        (gp_solve_logdet, lambda r: [np.array([1.2, 0.7]), r.normal(size=5), r.normal(size=5)], (0, 1, 2)),
        (kalman_nll, lambda r: [0.3, 0.5, r.normal(size=6), F, H], (0, 1, 2, 3)),
        (rk4_fit, lambda r: [np.array([1.0, 0.5, 0.8, 0.3]), np.array([1.2, 0.7]), 0.05, 8], (0, 1)),
        (sinkhorn_loss, lambda r: [r.random((3, 4)), np.full(3, 1 / 3), np.full(4, 0.25), 0.5], (0, 1, 3)),
        (causal_attention, attention_args, (0, 1)),
        (mdn_nll, lambda r: [0.3 * r.normal(size=(4, 9)), r.normal(size=(6, 4)), r.normal(size=6)], (0, 1, 2)),
        (poisson_glm, lambda r: [0.3 * r.normal(size=3), r.normal(size=(8, 3)),
                                 r.poisson(2.0, size=8).astype(float), np.log(r.random(8) + 0.5)], (0, 1, 3)),
        (robust_fit, lambda r: [np.array([0.3, -0.8, 0.21]), r.normal(size=(10, 3)), 2 * r.normal(size=10), 0.7],
         (0, 1, 3)),
        (heat_roll, lambda r: [np.sin(np.linspace(0, 3, 9)), 0.2], (0, 1)),
        (heat_in_place, lambda r: [np.sin(np.linspace(0, 3, 9)), 0.2], (0, 1)),
        (vae_elbo, vae_args, (0,)),
        (polynomial_fit, lambda r: [r.normal(size=4), np.linspace(-1, 1, 7), r.normal(size=7)], (0, 1)),
        (cubic_spline_fit, lambda r: [r.normal(size=5), np.linspace(-0.95, 0.95, 7)], (0, 1)),
        (conv_losses, lambda r: [r.normal(size=3), r.normal(size=9)], (0, 1)),
        (batch_norm, lambda r: [r.normal(size=(5, 3)), r.normal(size=3), r.normal(size=3)], (0, 1, 2)),
        (triplet_loss, lambda r: [r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 3))], (0, 1, 2)),
        (logistic_regression, lambda r: [r.normal(size=3), 0.2, r.normal(size=(8, 3)),
                                         np.sign(r.normal(size=8))], (0, 1, 2)),
        (contractions, lambda r: [r.normal(size=(2, 3, 4)), r.normal(size=(3, 2)), r.normal(size=(4, 5))],
         (0, 1, 2)),
        (drawdown_and_order, lambda r: [0.1 * r.normal(size=9), r.normal(size=9)], (0, 1)),
        (rows_sorted, lambda r: [r.normal(size=(3, 4)), r.normal(size=(3, 4))], (0, 1)),
        (mlp_layers, lambda r: [[Layer(r.normal(size=(3, 4)), r.normal(size=4)),
                                 Layer(r.normal(size=(4, 2)), r.normal(size=2))],
                                r.normal(size=(5, 3)), r.normal(size=5)], (0, 1)),
        (tree_params, lambda r: [(1.5, (r.normal(size=2), 0.7)), r.normal(size=2)], (0, 1)),
        (gp_posterior, lambda r: [np.array([0.1, -0.3]), r.normal(size=(4, 2)), r.normal(size=4),
                                  r.normal(size=(3, 2))], (2, 3)),
        (elbo_inline_noise, lambda r: [r.normal(size=3), 0.3 * r.normal(size=3), r.normal(size=3)], (0, 1)),
        (guarded_log_likelihood, lambda r: [np.array([0.5, -1.0, 2.0, -0.2]), r.normal(size=4)], (0, 1)),
    ]


CASES = _cases()


# --- checks -----------------------------------------------------------------------------------

def _leaves(x: Any) -> list:
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def _with_leaves(x: Any, leaves: list) -> Any:
    """``x`` with its leaves (in ``_leaves`` order) replaced, popped from ``leaves``."""
    if isinstance(x, dict):
        return {k: _with_leaves(x[k], leaves) for k in sorted(x)}
    if isinstance(x, (list, tuple)):
        items = [_with_leaves(v, leaves) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    return leaves.pop(0)


def numerical_tree_grad(f: Callable[..., float], args: list, argnum: int) -> list:
    """Finite differences leaf by leaf, for an argument that is a float, an array or a tree."""
    leaves = _leaves(args[argnum])
    out = []
    for i, leaf in enumerate(leaves):
        def of_leaf(value: Any, i: int = i) -> float:
            moved = list(args)
            moved[argnum] = _with_leaves(args[argnum], [*leaves[:i], value, *leaves[i + 1:]])
            return f(*moved)
        out.append(numerical_grad(of_leaf, [leaf], 0))
    return out


def assert_tree_close(got: Any, expected: list, rtol: float = 1e-5, atol: float = 1e-7) -> None:
    got_leaves = _leaves(got)
    assert len(got_leaves) == len(expected)
    for g, e in zip(got_leaves, expected):
        np.testing.assert_allclose(np.asarray(g, dtype=float), e, rtol=rtol, atol=atol)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("f, make, wrts", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient_matches_finite_differences(f, make, wrts) -> None:
    args = make(np.random.default_rng(10))
    for wrt in wrts:
        g = s2sad.grad(f, wrt)
        first = g(*args)
        assert_tree_close(first, numerical_tree_grad(f, args, wrt))
        assert_tree_close(g(*args), [np.asarray(leaf, dtype=float) for leaf in _leaves(first)], 1e-13, 0)
    both = s2sad.grad(f, wrts)(*args)
    for wrt, g in zip(wrts, both):
        assert_tree_close(g, [np.asarray(leaf, dtype=float) for leaf in _leaves(s2sad.grad(f, wrt)(*args))],
                          1e-12, 1e-14)


OTHER_SHAPES = [
    (gp_nlml, lambda r: [np.array([0.3]), 0.1, -0.5, r.normal(size=(3, 1)), r.normal(size=3)], 0),
    (kalman_nll, lambda r: [0.2, 0.4, r.normal(size=2), np.array([[0.9]]), np.array([1.0])], 0),
    (rk4_fit, lambda r: [np.array([1.0, 0.5, 0.8, 0.3]), np.array([0.9, 1.1]), 0.1, 3], 0),
    (causal_attention, lambda r: _cases()[5][1](r)[:1] + [r.normal(size=(5, 4))], 0),
    (heat_in_place, lambda r: [np.cos(np.linspace(0, 2, 5)), 0.1], 0),
    (logistic_regression, lambda r: [r.normal(size=1), -0.3, r.normal(size=(1, 1)), np.array([1.0])], 0),
    (batch_norm, lambda r: [r.normal(size=(2, 1)), r.normal(size=1), r.normal(size=1)], 0),
    (mlp_layers, lambda r: [[Layer(r.normal(size=(3, 2)), r.normal(size=2))], r.normal(size=(4, 3)),
                            r.normal(size=4)], 0),
]


@pytest.mark.parametrize("f, make, wrt", OTHER_SHAPES, ids=[c[0].__name__ for c in OTHER_SHAPES])
def test_gradient_at_other_shapes_after_the_first(f, make, wrt) -> None:
    """The code specialised to the first call's shapes is not reused for others."""
    first = next(c for c in CASES if c[0] is f)
    s2sad.grad(f, wrt)(*first[1](np.random.default_rng(10)))
    args = make(np.random.default_rng(11))
    assert_tree_close(s2sad.grad(f, wrt)(*args), numerical_tree_grad(f, args, wrt))


HVP = [(conv_losses, 1), (gp_nlml, 0), (kalman_nll, 0), (rk4_fit, 0), (sinkhorn_loss, 0), (mdn_nll, 0), (robust_fit, 0),
       (heat_in_place, 0), (batch_norm, 0), (triplet_loss, 0), (contractions, 1), (rows_sorted, 1),
       (gp_posterior, 3), (elbo_inline_noise, 1)]


@pytest.mark.parametrize("f, wrt", HVP, ids=[h[0].__name__ for h in HVP])
def test_hvp_matches_finite_differences_of_the_gradient(f, wrt: int) -> None:
    args = next(c for c in CASES if c[0] is f)[1](np.random.default_rng(10))
    x = args[wrt]
    v = np.random.default_rng(3).normal(size=np.shape(x))
    g = s2sad.grad(f, wrt)
    eps = 1e-5

    def at(t: float) -> np.ndarray:
        moved = list(args)
        moved[wrt] = x + t * v
        return g(*moved)
    np.testing.assert_allclose(s2sad.hvp(f, wrt)(*args, v), (at(eps) - at(-eps)) / (2 * eps),
                               rtol=1e-5, atol=1e-6)


def pendulum(theta: float, steps: int = 50, dt: float = 0.05) -> float:
    omega = 0.0
    for _ in range(steps):
        omega = omega - dt * np.sin(theta)
        theta = theta + dt * omega
    return theta ** 2


def rnn_loss(W: np.ndarray, U: np.ndarray, xs: np.ndarray, h0: np.ndarray) -> float:
    h = h0
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
        loss = loss + np.sum(h ** 2) * (t + 1)
    return loss


def kernel_sum(a: np.ndarray, b: np.ndarray) -> float:
    out = 0.0
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            d = a[i] - b[j]
            out += np.exp(-np.sum(d * d))
    return out


JIT = [(pendulum, lambda r: [1.0], 0), (kalman_nll, CASES[2][1], 0), (kalman_nll, CASES[2][1], 3),
       (rnn_loss, lambda r: [0.5 * r.normal(size=(3, 3)), r.normal(size=(3, 2)), r.normal(size=(5, 2)),
                             np.zeros(3)], 0),
       (kernel_sum, lambda r: [r.normal(size=(3, 2)), r.normal(size=(4, 2))], 1)]


@pytest.mark.parametrize("f, make, wrt", JIT, ids=[f"{j[0].__name__}-{j[2]}" for j in JIT])
def test_jit_gradient_matches_finite_differences(f, make, wrt: int) -> None:
    pytest.importorskip("numba")
    args = make(np.random.default_rng(10))
    got = s2sad.grad(f, wrt, jit=True)(*args)
    np.testing.assert_allclose(got, numerical_grad(f, args, wrt), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got, s2sad.grad(f, wrt)(*args), rtol=1e-10, atol=1e-13)
