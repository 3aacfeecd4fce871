"""Realistic scientific and ML programs (ODE integrators, state-space models, Gaussian
processes, mixtures, networks, optimal transport, dynamic programming, survival and count
models), and the regressions they found: ``np.fill_diagonal``, ``np.array(x, copy=...)``,
``scipy.spatial.distance.pdist`` and ``squareform``.

Each gradient is checked against central finite differences in float64 (leaf by leaf
for containers), and a third of them also a Hessian-vector product against differences of
gradients; against JAX when it is installed.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.linalg  # noqa: E402
import scipy.signal  # noqa: E402
import scipy.special as sp  # noqa: E402
import scipy.stats as st  # noqa: E402
from numpy.lib.stride_tricks import as_strided, sliding_window_view  # noqa: E402
from scipy.linalg import cho_factor, cho_solve, solve_triangular  # noqa: E402
from scipy.spatial.distance import pdist, squareform  # noqa: E402
from scipy.special import expit, gammaln, logsumexp  # noqa: E402

import s2sad  # noqa: E402
from s2sad import stop_gradient  # noqa: E402
from tests.gradcheck import moved, numerical_tree_grad, tree_flat, tree_unflat  # noqa: E402

R = np.random.default_rng(14)


def _normal(*shape: int) -> np.ndarray:
    return R.normal(size=shape)


# --- checking: finite differences over trees of arrays ---------------------------------------

def check(f: Callable[..., float], args: tuple, i: int = 0, hvp: bool = False, rtol: float = 1e-6) -> Any:
    """s2sad's gradient of ``f`` in argument ``i`` against finite differences (and its
    Hessian-vector product against differences of gradients when ``hvp``); returns it."""
    g = s2sad.grad(f, i)(*args)
    assert type(g) is type(args[i]) or isinstance(g, np.ndarray) and isinstance(args[i], np.ndarray)
    ref = numerical_tree_grad(f, args, i)
    np.testing.assert_allclose(tree_flat(g), ref, rtol=rtol, atol=rtol * np.max(np.abs(ref)) + 1e-9)
    if hvp:
        x = tree_flat(args[i])
        v = R.normal(size=x.shape)
        got = s2sad.hvp(f, i)(*args, tree_unflat(args[i], v))
        gf, eps = s2sad.grad(f, i), 1e-5
        want = (tree_flat(gf(*moved(args, i, x + eps * v))) - tree_flat(gf(*moved(args, i, x - eps * v)))) / (2 * eps)
        np.testing.assert_allclose(tree_flat(got), want, rtol=1e-5, atol=1e-5 * np.max(np.abs(want)))
    return g


# --- regressions: in-place diagonals, np.array's copy, pdist and squareform ------------------

def nca(A: np.ndarray, X: np.ndarray, labels: np.ndarray) -> float:
    """Neighbourhood components analysis: a point is never its own neighbour."""
    Z = X @ A.T
    D = np.sum((Z[:, None, :] - Z[None, :, :]) ** 2, axis=2)
    np.fill_diagonal(D, np.inf)
    P = sp.softmax(-D, axis=1)
    return -np.sum(P * (labels[:, None] == labels[None, :]))


def diagonal_in_a_loop(a: np.ndarray, v: Any) -> float:
    M = np.outer(a, a[:3])  # 4 x 3: the diagonal has 3 entries
    for i in range(2):
        np.fill_diagonal(M, v * (i + 1), wrap=False)
        M = M * 1.5
    return np.sum(M ** 2)


def test_fill_diagonal_is_differentiated_as_an_indexed_write() -> None:
    # np.fill_diagonal was refused ("changes its first argument in place")
    check(nca, (_normal(2, 3), _normal(8, 3), R.integers(0, 2, 8)), hvp=True)
    for v in (_normal(3), 0.7):
        args = (_normal(4), v)
        check(diagonal_in_a_loop, args, 0)
        check(diagonal_in_a_loop, args, 1)


def test_fill_diagonal_of_a_shared_array_or_with_wrap_is_refused_where_it_stands() -> None:
    def shared(a: np.ndarray) -> float:
        M = np.outer(a, a)
        N = M
        np.fill_diagonal(M, 0.0)
        return np.sum(N)

    def wrapped(a: np.ndarray) -> float:
        M = np.outer(a, a)
        np.fill_diagonal(M, 0.0, wrap=True)
        return np.sum(M)

    for f, line, says in ((shared, 3, "'np.fill_diagonal(M, ...)' would change it in place"),
                          (wrapped, 2, "wrap=True")):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match=re.escape(says)) as info:
            s2sad.grad(f)(np.ones(3))
        assert info.value.location.line == f.__code__.co_firstlineno + line and info.value.location.column == 9


def copies(x: np.ndarray) -> float:
    a = np.asarray(x, dtype=np.float64)
    b = np.array(a, copy=True)
    b[0] = 3.0
    return np.sum(b.astype(np.float64) ** 3) + np.sum(np.array([x[1], x[2] * 2], copy=True) ** 2)


def test_np_array_with_copy_is_differentiated() -> None:
    # np.array(a, copy=True) was refused ("does not differentiate np.array with argument 'copy'")
    check(copies, (_normal(3),), hvp=True)
    check(lambda x: np.sum(np.array(x * 2.0, copy=None) ** 3), (_normal(3),))


def test_np_array_without_a_copy_shares_its_argument() -> None:
    def aliased(x: np.ndarray) -> float:
        a = x * 2.0
        b = np.array(a, copy=False)
        b[0] = 3.0
        return np.sum(a ** 3)

    with pytest.raises(s2sad.UnsupportedSyntaxError, match="'a' may share memory with 'b'") as info:
        s2sad.grad(aliased)(np.ones(3))
    assert info.value.location.line == aliased.__code__.co_firstlineno + 3


def mds_stress(Y: np.ndarray, target: np.ndarray) -> float:
    D = squareform(pdist(Y))
    upper = np.triu_indices(Y.shape[0], 1)
    return np.sum((D[upper] - target[upper]) ** 2)


def kernel_by_pdist(Y: np.ndarray, w: np.ndarray) -> float:
    K = np.exp(-squareform(pdist(Y, metric="sqeuclidean")))
    return w @ K @ w + np.sum(np.sin(squareform(K, checks=False)))


def test_pdist_and_squareform_are_differentiated() -> None:
    # pdist had no rule: "no gradient rule for 'pdist', which is library code"
    Y = _normal(5, 2)
    check(mds_stress, (Y, np.abs(_normal(5, 5)) + 1.0), hvp=True)
    check(kernel_by_pdist, (Y, _normal(5)), hvp=True)
    check(kernel_by_pdist, (Y, _normal(5)), 1)


def smoothed_spectrum(x: np.ndarray, k: np.ndarray) -> float:
    y = scipy.signal.fftconvolve(x, k, mode="same") + scipy.signal.oaconvolve(x, k[::-1], mode="valid").sum()
    return np.sum(y ** 2)


def log_euclidean(A: np.ndarray, B: np.ndarray) -> float:
    """The log-Euclidean distance between two SPD matrices made from A and B."""
    S, T = A @ A.T + np.eye(3), B @ B.T + np.eye(3)
    return np.sum((scipy.linalg.logm(S) - scipy.linalg.logm(T)) ** 2)


def test_fftconvolve_oaconvolve_and_logm_are_differentiated() -> None:
    # all three had no rule: "no gradient rule for 'scipy.signal.fftconvolve', which is library code"
    x, k = _normal(8), _normal(3)
    check(smoothed_spectrum, (x, k), hvp=True)
    check(smoothed_spectrum, (x, k), 1)
    check(log_euclidean, (_normal(3, 3), _normal(3, 3)), hvp=True)


def test_fftconvolve_along_some_axes_is_refused_at_the_call() -> None:
    def f(x: np.ndarray) -> float:
        return np.sum(scipy.signal.fftconvolve(x, np.ones((1, 2)), axes=1))

    with pytest.raises(s2sad.S2SADError, match="along every axis only") as info:
        s2sad.grad(f)(np.ones((2, 3)))
    assert info.value.location.line == f.__code__.co_firstlineno + 1


def im2col_conv(x: np.ndarray, K: np.ndarray) -> float:
    """A valid 2-d convolution by windows that as_strided lays over the image."""
    H, W = x.shape
    kh, kw = K.shape
    s0, s1 = x.strides
    windows = as_strided(x, (H - kh + 1, W - kw + 1, kh, kw), (s0, s1, s0, s1), writeable=False)
    return np.sum(np.tanh(np.einsum("ijkl,kl->ij", windows, K)) ** 2)


def test_as_strided_windows_are_differentiated() -> None:
    # as_strided had no rule, and x.strides counted as a value that carries a gradient
    args = (_normal(5, 4), _normal(2, 3))
    check(im2col_conv, args, 0, hvp=True)
    check(im2col_conv, args, 1)
    x32 = _normal(9).astype(np.float32)
    g = s2sad.grad(lambda x: np.sum(as_strided(x, (7, 3), (x.itemsize, x.itemsize)) ** 2))(x32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x32 * np.array([1, 2, 3, 3, 3, 3, 3, 2, 1]), rtol=1e-6)


def test_as_strided_writes_and_views_of_other_layouts_are_refused() -> None:
    def written(x: np.ndarray) -> float:
        y = x * 1.0
        w = as_strided(y, (3, 2), (y.itemsize, y.itemsize))
        w[0, 1] = 5.0  # (w[1, 0] is the same entry)
        return np.sum(w)

    with pytest.raises(s2sad.UnsupportedSyntaxError, match="'w' may be a view") as info:
        s2sad.grad(written)(np.ones(4))
    assert info.value.location.line == written.__code__.co_firstlineno + 3

    def transposed(x: np.ndarray) -> float:
        return np.sum(as_strided(x.T, (2, 2), (8, 8)))

    with pytest.raises(s2sad.S2SADError, match="of a C-contiguous array only") as info:
        s2sad.grad(transposed)(np.ones((3, 3)))
    assert info.value.location.line == transposed.__code__.co_firstlineno + 1

    def outside(x: np.ndarray) -> float:
        return np.sum(as_strided(x, (3, 3), (8, 8)))

    with pytest.raises(s2sad.S2SADError, match="reads memory outside it"):
        s2sad.grad(outside)(np.ones(4))


# --- ODE integrators and PDE stencils --------------------------------------------------------

def euler_logistic(theta: np.ndarray, y0: float, observed: np.ndarray) -> float:
    r, K = np.exp(theta[0]), np.exp(theta[1])
    y, path = y0, []
    for _ in range(40):
        y = y + 0.05 * r * y * (1.0 - y / K)
        path.append(y)
    return np.sum((np.array(path)[::10] - observed) ** 2)


def lotka_volterra(z: np.ndarray, p: np.ndarray) -> np.ndarray:
    a, b, c, d = p
    return np.array([a * z[0] - b * z[0] * z[1], c * z[0] * z[1] - d * z[1]])


def rk4_lotka_volterra(p: np.ndarray, z0: np.ndarray, target: np.ndarray) -> float:
    z, h = z0.copy(), 0.02
    for _ in range(50):
        k1 = lotka_volterra(z, p)
        k2 = lotka_volterra(z + 0.5 * h * k1, p)
        k3 = lotka_volterra(z + 0.5 * h * k2, p)
        k4 = lotka_volterra(z + h * k3, p)
        z = z + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum((z - target) ** 2)


def leapfrog_nbody(pos: np.ndarray, vel: np.ndarray, masses: np.ndarray) -> float:
    def accel(p: np.ndarray) -> np.ndarray:
        d = p[None, :, :] - p[:, None, :]
        inv = (np.sum(d ** 2, axis=-1) + 0.01) ** -1.5
        return np.einsum("ij,ijk,j->ik", inv, d, masses)

    a = accel(pos)
    for _ in range(10):
        vel = vel + 0.005 * a
        pos = pos + 0.01 * vel
        a = accel(pos)
        vel = vel + 0.005 * a
    return np.sum(pos ** 2) + 0.1 * np.sum(vel[:, 0])


def heat_dirichlet(kappa: float, u0: np.ndarray) -> float:
    u = u0.copy()
    for _ in range(30):
        lap = np.zeros_like(u)
        lap[1:-1] = (u[2:] - 2 * u[1:-1] + u[:-2]) / 0.01
        u = u + 0.002 * kappa * lap
        u[0] = 0.0
        u[-1] = 0.0
    return np.sum(u ** 2)


def heat_periodic_2d(u0: np.ndarray, kappa: float) -> float:
    u = u0.copy()
    for _ in range(10):
        u += 0.1 * kappa * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u)
    return np.sum(u ** 4)


def bouncing_ball(v0: float, restitution: float) -> float:
    y = np.zeros(60)
    y[0], v = 1.0, v0
    for t in range(59):
        v = v - 9.81 * 0.05
        y[t + 1] = y[t] + 0.05 * v
        if y[t + 1] < 0:  # the bounce: a branch on the state
            y[t + 1] = -y[t + 1]
            v = -restitution * v
    return np.sum(y)


def spring_network(k: np.ndarray, x0: np.ndarray, edges: np.ndarray) -> float:
    x, v = x0, np.zeros_like(x0)
    for _ in range(10):
        d = x[edges[:, 1]] - x[edges[:, 0]]
        L = np.linalg.norm(d, axis=1)
        f = (k * (L - 1.0) / L)[:, None] * d
        F = np.zeros_like(x)
        np.add.at(F, edges[:, 0], f)
        np.add.at(F, edges[:, 1], -f)
        v = 0.9 * v + 0.05 * F
        x = x + 0.05 * v
    return np.sum(x[:, 1])


def test_ode_integrators_and_stencils() -> None:
    check(euler_logistic, (np.array([0.2, 0.5]), 0.1, np.abs(_normal(4))), hvp=True)
    check(rk4_lotka_volterra, (np.array([1.0, 0.4, 0.3, 0.8]), np.array([1.0, 0.5]), np.array([0.9, 0.6])),
          hvp=True)
    nbody = (_normal(4, 2), 0.1 * _normal(4, 2), np.abs(_normal(4)) + 0.5)
    check(leapfrog_nbody, nbody)
    check(leapfrog_nbody, nbody, 2)
    check(heat_dirichlet, (0.7, np.sin(np.linspace(0, 3, 12))), 1, hvp=True)
    check(heat_dirichlet, (0.7, np.sin(np.linspace(0, 3, 12))), 0)
    check(heat_periodic_2d, (_normal(6, 6), 0.8), hvp=True)
    check(bouncing_ball, (1.5, 0.8), 0, hvp=True)
    check(bouncing_ball, (1.5, 0.8), 1)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])
    check(spring_network, (np.abs(_normal(5)) + 0.5, _normal(4, 2), edges))
    check(spring_network, (np.abs(_normal(5)) + 0.5, _normal(4, 2), edges), 1)


# --- Gaussian processes and state-space models -----------------------------------------------

def gp_by_solve_triangular(log_hyp: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    ell, sf, sn = np.exp(log_hyp)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = sf ** 2 * np.exp(-0.5 * d2 / ell ** 2) + (sn ** 2 + 1e-6) * np.eye(len(y))
    L = np.linalg.cholesky(K)
    a = solve_triangular(L, y, lower=True)
    return 0.5 * a @ a + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * np.log(2 * np.pi)


def gp_by_cho_solve_and_slogdet(log_hyp: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    ell, sf = np.exp(log_hyp[0]), np.exp(log_hyp[1])
    K = sf ** 2 * np.exp(-np.abs(x[:, None] - x[None, :]) / ell) + 0.1 * np.eye(x.shape[0])
    alpha = cho_solve(cho_factor(K, lower=True), y)
    return 0.5 * np.dot(y, alpha) + 0.5 * np.linalg.slogdet(K)[1]


def kalman_scalar(params: np.ndarray, ys: np.ndarray) -> float:
    a, log_q, log_r = params
    q, r = np.exp(log_q), np.exp(log_r)
    m, P, ll = 0.0, 1.0, 0.0
    for y in ys:
        m, P = a * m, a * a * P + q
        S = P + r
        v = y - m
        ll = ll - 0.5 * (np.log(2 * np.pi * S) + v ** 2 / S)
        m, P = m + P / S * v, (1 - P / S) * P
    return -ll


def kalman_matrix(A: np.ndarray, ys: np.ndarray, Q: np.ndarray, Rn: np.ndarray, H: np.ndarray) -> float:
    m, P, nll = np.zeros(A.shape[0]), np.eye(A.shape[0]), 0.0
    for t in range(ys.shape[0]):
        m = A @ m
        P = A @ P @ A.T + Q
        S = H @ P @ H.T + Rn
        v = ys[t] - H @ m
        nll += 0.5 * (v @ np.linalg.solve(S, v) + np.linalg.slogdet(S)[1])
        gain = P @ H.T @ np.linalg.inv(S)
        m = m + gain @ v
        P = P - gain @ H @ P
    return nll


def rts_smoother(log_q: float, ys: np.ndarray) -> float:
    q, r = np.exp(log_q), 0.5
    means, covs, predicted, predicted_covs = [], [], [], []
    m, P = 0.0, 1.0
    for y in ys:
        m_pred, P_pred = m, P + q
        K = P_pred / (P_pred + r)
        m, P = m_pred + K * (y - m_pred), (1 - K) * P_pred
        means.append(m)
        covs.append(P)
        predicted.append(m_pred)
        predicted_covs.append(P_pred)
    smoothed = [means[-1]]
    for t in range(len(ys) - 2, -1, -1):
        G = covs[t] / predicted_covs[t + 1]
        smoothed.insert(0, means[t] + G * (smoothed[0] - predicted[t + 1]))
    return np.sum((np.array(smoothed) - ys) ** 2)


def test_gaussian_processes_and_state_space_models() -> None:
    check(gp_by_solve_triangular, (np.array([0.1, 0.2, -1.0]), _normal(7, 2), _normal(7)), hvp=True)
    check(gp_by_cho_solve_and_slogdet, (np.array([0.1, 0.2]), _normal(6), _normal(6)))
    check(kalman_scalar, (np.array([0.8, -1.0, -0.5]), _normal(15)), hvp=True)
    check(kalman_matrix, (0.5 * np.eye(2) + 0.1 * _normal(2, 2), _normal(8, 1), 0.1 * np.eye(2),
                          0.2 * np.eye(1), _normal(1, 2)))
    check(rts_smoother, (-0.5, _normal(10)))


# --- mixtures, EM and special functions ------------------------------------------------------

def _gmm_log_joint(params: np.ndarray, x: np.ndarray) -> np.ndarray:
    mu, log_s, logits = params[:3], params[3:6], params[6:]
    log_w = logits - logsumexp(logits)
    return log_w - 0.5 * ((x[:, None] - mu) / np.exp(log_s)) ** 2 - log_s - 0.5 * np.log(2 * np.pi)


def gmm_em_objective(params: np.ndarray, x: np.ndarray) -> float:
    lp = _gmm_log_joint(params, x)
    resp = stop_gradient(np.exp(lp - logsumexp(lp, axis=1, keepdims=True)))
    return -np.sum(resp * lp)


def gmm_marginal(params: np.ndarray, x: np.ndarray) -> float:
    return -np.sum(logsumexp(_gmm_log_joint(params, x), axis=1))


def poisson_mixture(params: np.ndarray, counts: np.ndarray) -> float:
    K = params.shape[0] // 2
    lam, logits = np.exp(params[:K]), params[K:]
    log_w = logits - np.log(np.sum(np.exp(logits)))
    L = np.stack([log_w[k] + counts * np.log(lam[k]) - lam[k] - gammaln(counts + 1) for k in range(K)], axis=1)
    m = np.max(L, axis=1, keepdims=True)  # logsumexp by hand
    return -np.sum(m[:, 0] + np.log(np.sum(np.exp(L - m), axis=1)))


def dirichlet_multinomial(log_alpha: np.ndarray, counts: np.ndarray) -> float:
    alpha = np.exp(log_alpha)
    A, N = np.sum(alpha), counts.sum(axis=1)
    ll = gammaln(A) - gammaln(N + A) + np.sum(gammaln(counts + alpha) - gammaln(alpha), axis=1)
    return -np.sum(ll) + 0.01 * np.sum(sp.digamma(alpha)) + sp.betaln(alpha[0], alpha[1])


def stick_breaking_mixture(v_logit: np.ndarray, x: np.ndarray, means: np.ndarray) -> float:
    v = expit(v_logit)
    w = v * np.concatenate([[1.0], np.cumprod(1 - v)[:-1]])
    lik = st.norm.logpdf(x[:, None], loc=means[None, :], scale=1.0)
    return -np.sum(logsumexp(lik + np.log(w), axis=1))


def test_mixtures_and_em_with_stopped_responsibilities() -> None:
    params, x = np.concatenate([_normal(3), 0.1 * _normal(3), _normal(3)]), _normal(20)
    # at the current parameters the EM objective's gradient is the marginal likelihood's
    np.testing.assert_allclose(s2sad.grad(gmm_em_objective)(params, x), check(gmm_marginal, (params, x), hvp=True),
                               rtol=1e-10, atol=1e-12)
    check(poisson_mixture, (np.array([0.5, 1.5, 0.1, -0.2]), R.poisson(3, 15).astype(float)), hvp=True)
    check(dirichlet_multinomial, (0.3 * _normal(4), R.integers(0, 5, size=(6, 4)).astype(float)))
    check(stick_breaking_mixture, (_normal(4), _normal(10), _normal(4)), hvp=True)
    check(stick_breaking_mixture, (_normal(4), _normal(10), _normal(4)), 2)


# --- neural networks -------------------------------------------------------------------------

def mlp_layer_norm_dropout(params: tuple, X: np.ndarray, y: np.ndarray) -> float:
    W1, b1, W2, b2 = params
    h = X @ W1 + b1
    h = (h - h.mean(axis=-1, keepdims=True)) / np.sqrt(h.var(axis=-1, keepdims=True) + 1e-5)
    h = np.maximum(h, 0.01 * h)
    keep = np.random.default_rng(0).random(h.shape) > 0.3  # the same mask at every call
    h = np.where(keep, h / 0.7, 0.0)
    return np.mean(((h @ W2 + b2)[:, 0] - y) ** 2)


def padded_attention(Wq: np.ndarray, Wk: np.ndarray, Wv: np.ndarray, X: np.ndarray, lengths: np.ndarray) -> float:
    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    scores = np.einsum("btd,bsd->bts", Q, K) / np.sqrt(Q.shape[-1])
    valid = np.arange(X.shape[1])[None, None, :] < lengths[:, None, None]
    scores = np.where(valid, scores, -1e9)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return np.sum(np.tanh(w @ V) ** 2)


def transformer_block(Wqkv: np.ndarray, Wo: np.ndarray, X: np.ndarray) -> float:
    T, D = X.shape
    q, k, v = (part.reshape(T, 2, D // 2).transpose(1, 0, 2) for part in np.split(X @ Wqkv, 3, axis=1))
    causal = np.triu(np.full((T, T), -1e9), 1)
    att = sp.softmax(q @ k.transpose(0, 2, 1) / math.sqrt(D // 2) + causal, axis=-1)
    y = X + (att @ v).transpose(1, 0, 2).reshape(T, D) @ Wo
    y = (y - y.mean(-1, keepdims=True)) / y.std(-1, keepdims=True)
    return np.sum(y[-1] ** 2) + np.sum(y[:, 0])


def cnn_windows(K: np.ndarray, W: np.ndarray, images: np.ndarray, y: np.ndarray) -> float:
    windows = sliding_window_view(images, (3, 3), axis=(1, 2))
    fmap = np.maximum(np.einsum("nijkl,ckl->ncij", windows, K), 0)
    pooled = fmap.reshape(fmap.shape[0], fmap.shape[1], 3, 2, 3, 2).mean(axis=(3, 5))
    logits = pooled.reshape(pooled.shape[0], -1) @ W
    return np.mean(logsumexp(logits, axis=1) - logits[np.arange(len(y)), y])


def conv1d_loops(w: np.ndarray, x: np.ndarray) -> float:
    out = np.zeros(x.shape[0] - w.shape[0] + 1)
    for i in range(out.shape[0]):
        s = 0.0
        for j in range(w.shape[0]):
            s = s + w[j] * x[i + j]
        out[i] = s
    return np.sum(np.tanh(out) ** 2)


def lstm_dict(p: dict, xs: list, target: np.ndarray) -> float:
    h = np.zeros(p["U"].shape[1])
    c = np.zeros_like(h)
    states = []
    for x in xs:
        i, f, g, o = np.split(p["W"] @ x + p["U"] @ h + p["b"], 4)
        c = expit(f) * c + expit(i) * np.tanh(g)
        h = expit(o) * np.tanh(c)
        states.append(h)
    return np.mean((np.stack(states) @ p["V"] - target) ** 2)


def rnn_into_preallocated_states(Wh: np.ndarray, Wx: np.ndarray, xs: np.ndarray) -> float:
    T = xs.shape[0]
    H = np.zeros((T + 1, Wh.shape[0]))
    for t in range(T):
        H[t + 1] = np.tanh(Wh @ H[t] + Wx @ xs[t])
    return np.sum(H[1:] ** 2 * np.arange(1, T + 1)[:, None])


def batch_norm_softplus(gamma: np.ndarray, beta: np.ndarray, X: np.ndarray, W: np.ndarray) -> float:
    h = X @ W
    mean = np.mean(h, axis=0)
    var = np.mean((h - mean) ** 2, axis=0)
    return np.sum(np.log1p(np.exp(gamma * (h - mean) / np.sqrt(var + 1e-5) + beta)))


def vae_elbo(enc: tuple, dec: np.ndarray, x: np.ndarray, eps: np.ndarray) -> float:
    h = np.tanh(x @ enc[0])
    mu, logvar = h @ enc[1], h @ enc[2]
    logits = (mu + np.exp(0.5 * logvar) * eps) @ dec
    kl = -0.5 * np.sum(1 + logvar - mu ** 2 - np.exp(logvar))
    return np.sum(np.logaddexp(0, logits) - x * logits) + kl


def deep_net_with_string_keys(parameters: dict, X: np.ndarray, Y: np.ndarray) -> float:
    A = X
    L = len(parameters) // 2
    for layer in range(1, L):
        A = np.maximum(0, np.dot(parameters["W" + str(layer)], A) + parameters["b" + str(layer)])
    AL = 1 / (1 + np.exp(-(np.dot(parameters[f"W{L}"], A) + parameters[f"b{L}"])))
    m = Y.shape[1]
    return np.squeeze((-1.0 / m) * np.sum(np.multiply(Y, np.log(AL)) + np.multiply(1 - Y, np.log(1 - AL))))


def test_networks() -> None:
    check(mlp_layer_norm_dropout, ((_normal(3, 5), _normal(5), _normal(5, 1), _normal(1)), _normal(6, 3), _normal(6)),
          hvp=True)
    att = (0.5 * _normal(4, 4), 0.5 * _normal(4, 4), 0.5 * _normal(4, 4), _normal(2, 5, 4), np.array([3, 5]))
    check(padded_attention, att)
    check(padded_attention, att, 3)
    check(transformer_block, (0.5 * _normal(4, 12), 0.5 * _normal(4, 4), _normal(5, 4)), hvp=True)
    check(cnn_windows, (_normal(2, 3, 3), _normal(18, 3), _normal(4, 8, 8), R.integers(0, 3, 4)))
    check(conv1d_loops, (_normal(3), _normal(10)), hvp=True)
    lstm = ({"W": 0.5 * _normal(12, 2), "U": 0.5 * _normal(12, 3), "b": _normal(12), "V": _normal(3, 1)},
            [_normal(2) for _ in range(4)], _normal(4, 1))
    assert set(check(lstm_dict, lstm)) == {"W", "U", "b", "V"}
    check(rnn_into_preallocated_states, (0.5 * _normal(3, 3), _normal(3, 2), _normal(5, 2)), hvp=True)
    check(batch_norm_softplus, (np.abs(_normal(3)) + 0.5, _normal(3), _normal(10, 4), _normal(4, 3)), hvp=True)
    vae = ((_normal(5, 4), _normal(4, 2), _normal(4, 2)), _normal(2, 5), (R.random((3, 5)) > 0.5).astype(float),
           _normal(3, 2))
    check(vae_elbo, vae)
    check(vae_elbo, vae, 1)
    parameters = {"W1": 0.5 * _normal(4, 3), "b1": _normal(4, 1), "W2": 0.5 * _normal(3, 4), "b2": _normal(3, 1),
                  "W3": 0.5 * _normal(1, 3), "b3": _normal(1, 1)}
    check(deep_net_with_string_keys, (parameters, _normal(3, 7), (R.random((1, 7)) > 0.5).astype(float)), hvp=True)


# --- optimisation inside the loss, transport, dynamic programming, robust and spectral losses --

def unrolled_gradient_descent(w0: np.ndarray, X: np.ndarray, y: np.ndarray, Xv: np.ndarray, yv: np.ndarray) -> float:
    w = w0
    for _ in range(5):
        w = w - 0.1 * 2 * X.T @ (X @ w - y) / len(y)
    return np.mean((Xv @ w - yv) ** 2)


def unrolled_adam(log_lr: float, w0: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    lr, w = np.exp(log_lr), w0.copy()
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, 6):
        g = X.T @ (X @ w - y) / len(y)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return np.mean((X @ w - y) ** 2)


def sinkhorn(scale: float, x: np.ndarray, y: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    C = scale * (x[:, None] - y[None, :]) ** 2
    K = np.exp(-C / 0.5)
    u = np.ones_like(a)
    for _ in range(30):
        v = b / (K.T @ u)
        u = a / (K @ v)
    return np.sum(u[:, None] * K * v[None, :] * C)


def sinkhorn_log_domain(x: np.ndarray, y: np.ndarray, eps: float = 0.3) -> float:
    C = (x[:, None] - y[None, :]) ** 2
    n, m = C.shape
    f, g = np.zeros(n), np.zeros(m)
    for _ in range(20):
        f = -eps * logsumexp((g[None, :] - C) / eps - np.log(m), axis=1)
        g = -eps * logsumexp((f[:, None] - C) / eps - np.log(n), axis=0)
    return np.sum(f) / n + np.sum(g) / m


def soft_dtw(x: np.ndarray, y: np.ndarray, gamma: float = 0.5) -> float:
    n, m = len(x), len(y)
    D = (x[:, None] - y[None, :]) ** 2
    table = np.full((n + 1, m + 1), np.inf)
    table[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            z = -np.array([table[i - 1, j - 1], table[i - 1, j], table[i, j - 1]]) / gamma
            zmax = np.max(z)
            table[i, j] = D[i - 1, j - 1] - gamma * (zmax + np.log(np.sum(np.exp(z - zmax))))
    return table[n, m]


def huber_and_quantile(w: np.ndarray, X: np.ndarray, y: np.ndarray, delta: float = 1.0, tau: float = 0.3) -> float:
    r = y - X @ w
    huber = np.where(np.abs(r) <= delta, 0.5 * r ** 2, delta * (np.abs(r) - 0.5 * delta))
    return np.mean(huber) + np.mean(np.where(r >= 0, tau * r, (tau - 1) * r))


def total_variation(u: np.ndarray, f: np.ndarray, lam: float = 0.2) -> float:
    dx, dy = np.diff(u, axis=0), np.diff(u, axis=1)
    return 0.5 * np.sum((u - f) ** 2) + lam * np.sum(np.sqrt(dx[:, :-1] ** 2 + dy[:-1, :] ** 2 + 1e-3))


def spectral_residual(u: np.ndarray, forcing: np.ndarray) -> float:
    n = u.shape[0]
    k = np.fft.rfftfreq(n, d=1.0 / n) * 2 * np.pi
    uxx = np.fft.irfft(-(k ** 2) * np.fft.rfft(u), n=n)
    return np.mean((uxx - u ** 3 + forcing) ** 2)


def power_spectrum(x: np.ndarray, target: np.ndarray) -> float:
    return np.sum((np.log(np.abs(np.fft.fft(x)) ** 2 + 1e-3) - target) ** 2)


def phase_retrieval(phase: np.ndarray, amplitude: np.ndarray, measured: np.ndarray) -> float:
    return np.sum((np.abs(np.fft.fft(amplitude * np.exp(1j * phase))) - measured) ** 2)


def test_inner_optimisation_transport_dynamic_programming_and_spectra() -> None:
    check(unrolled_gradient_descent, (_normal(3), _normal(10, 3), _normal(10), _normal(6, 3), _normal(6)), hvp=True)
    check(unrolled_adam, (-2.0, _normal(3), _normal(10, 3), _normal(10)))
    check(sinkhorn, (1.3, _normal(5), _normal(4), np.ones(5) / 5, np.ones(4) / 4))
    check(sinkhorn, (1.3, _normal(5), _normal(4), np.ones(5) / 5, np.ones(4) / 4), 1)
    check(sinkhorn_log_domain, (_normal(5), _normal(4)), hvp=True)
    check(soft_dtw, (_normal(4), _normal(5)))
    check(huber_and_quantile, (_normal(3), _normal(20, 3), 2 * _normal(20)))
    check(total_variation, (_normal(5, 6), _normal(5, 6)), hvp=True)
    check(spectral_residual, (0.3 * _normal(16), _normal(16)), hvp=True)
    check(power_spectrum, (_normal(8), _normal(8)))
    check(phase_retrieval, (_normal(8), np.abs(_normal(8)) + 0.5, 3 * np.abs(_normal(8))), hvp=True)


# --- statistical models ----------------------------------------------------------------------

def student_t(theta: np.ndarray, x: np.ndarray) -> float:
    mu, log_s, log_nu = theta
    s, nu = np.exp(log_s), np.exp(log_nu)
    z = (x - mu) / s
    return -np.sum(gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi) - log_s
                   - (nu + 1) / 2 * np.log1p(z ** 2 / nu))


def poisson_with_offsets(beta: np.ndarray, X: np.ndarray, counts: np.ndarray, exposure: np.ndarray) -> float:
    eta = X @ beta + np.log(exposure)
    return np.sum(np.exp(eta) - counts * eta + gammaln(counts + 1))


def ordinal_logit(params: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    w, raw = params[:X.shape[1]], params[X.shape[1]:]
    thresholds = np.cumsum(np.concatenate([raw[:1], np.exp(raw[1:])]))
    cdf = expit(thresholds[None, :] - (X @ w)[:, None])
    cdf = np.concatenate([np.zeros((len(y), 1)), cdf, np.ones((len(y), 1))], axis=1)
    return -np.sum(np.log((cdf[:, 1:] - cdf[:, :-1])[np.arange(len(y)), y] + 1e-12))


def cox_partial_likelihood(beta: np.ndarray, X: np.ndarray, times: np.ndarray, events: np.ndarray) -> float:
    order = np.argsort(-times)
    eta = X[order] @ beta
    return -np.sum((eta - np.log(np.cumsum(np.exp(eta)))) * events[order])


def weibull_censored(params: np.ndarray, X: np.ndarray, t: np.ndarray, observed: np.ndarray) -> float:
    k, lam = np.exp(params[-1]), np.exp(X @ params[:-1])
    z = (t / lam) ** k
    log_density = np.log(k) - np.log(lam) + (k - 1) * (np.log(t) - np.log(lam)) - z
    return -np.sum(np.where(observed, log_density, -z))


def negative_binomial(params: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    r, mu = np.exp(params[-1]), np.exp(X @ params[:-1])
    return -np.sum(gammaln(y + r) - gammaln(r) - gammaln(y + 1) + r * np.log(r / (r + mu))
                   + y * np.log(mu / (r + mu)))


def hierarchical_normal(params: np.ndarray, y: np.ndarray, group: np.ndarray) -> float:
    mu, log_tau, theta = params[0], params[1], params[2:]
    lp = st.norm.logpdf(theta, mu, np.exp(log_tau)).sum() + st.norm.logpdf(y, theta[group], 1.0).sum()
    return -(lp + st.cauchy.logpdf(np.exp(log_tau), 0, 2.5) + log_tau)


def test_statistical_models() -> None:
    check(student_t, (np.array([0.1, 0.2, 1.0]), _normal(12)), hvp=True)
    check(poisson_with_offsets, (0.3 * _normal(3), _normal(10, 3), R.poisson(2, 10).astype(float),
                                 np.abs(_normal(10)) + 0.5))
    check(ordinal_logit, (np.array([0.5, -0.3, -0.5, 0.0, 0.2]), _normal(12, 2), R.integers(0, 4, 12)), hvp=True)
    check(cox_partial_likelihood, (_normal(3), _normal(10, 3), np.abs(_normal(10)),
                                   (R.random(10) > 0.3).astype(float)))
    check(weibull_censored, (np.array([0.1, -0.2, 0.3]), _normal(10, 2), np.abs(_normal(10)) + 0.2,
                             R.random(10) > 0.3), hvp=True)
    check(negative_binomial, (np.array([0.3, -0.2, 0.5]), _normal(15, 2), R.poisson(2, 15).astype(float)))
    check(hierarchical_normal, (np.concatenate([[0.1, -0.3], _normal(3)]), _normal(9), np.repeat(np.arange(3), 3)),
          hvp=True)


# --- simulations: molecular, finite elements, finance, epidemics, filtering --------------------

def lennard_jones(pos: np.ndarray, box: float = 4.0) -> float:
    d = pos[:, None, :] - pos[None, :, :]
    d = d - box * np.round(d / box)  # the minimum image
    upper = np.triu_indices(pos.shape[0], 1)
    inv6 = (1.0 / np.sum(d ** 2, axis=-1)[upper]) ** 3
    return np.sum(4 * (inv6 ** 2 - inv6))


def fem_compliance(log_E: np.ndarray, f: np.ndarray) -> float:
    E = np.exp(log_E)
    n = E.shape[0]
    K = np.zeros((n + 1, n + 1))
    for e in range(n):
        idx = np.array([e, e + 1])
        K[np.ix_(idx, idx)] += E[e] * np.array([[1.0, -1.0], [-1.0, 1.0]])
    return f @ np.linalg.solve(K[1:, 1:], f)


def black_scholes(sigma: np.ndarray, S: float, K: np.ndarray, T: float, r: float, market: np.ndarray) -> float:
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    price = S * sp.ndtr(d1) - K * np.exp(-r * T) * sp.ndtr(d1 - sigma * np.sqrt(T))
    return np.sum((price - market) ** 2)


def sir_poisson(log_params: np.ndarray, cases: np.ndarray) -> float:
    beta, gamma = np.exp(log_params)
    S, I, ll, dt = 0.99, 0.01, 0.0, 0.5
    for c in cases:
        for _ in range(2):  # midpoint steps
            Sm = S - 0.5 * dt * beta * S * I
            Im = I + 0.5 * dt * (beta * S * I - gamma * I)
            new = dt * beta * Sm * Im
            S, I = S - new, I + new - dt * gamma * Im
        ll += c * np.log(1000 * new) - 1000 * new - gammaln(c + 1)
    return -ll


def particle_filter(theta: np.ndarray, ys: np.ndarray, noise: np.ndarray, u: np.ndarray) -> float:
    a, log_s = theta
    N, x, ll = noise.shape[1], noise[0], 0.0
    for t in range(len(ys)):
        x = a * x + 0.5 * noise[t + 1]
        logw = -0.5 * ((ys[t] - x) / np.exp(log_s)) ** 2 - log_s
        m = np.max(logw)
        w = np.exp(logw - m)
        ll = ll + m + np.log(np.mean(w))
        cdf = np.cumsum(stop_gradient(w / np.sum(w)))  # resampling: no gradient through the indices
        x = x[np.minimum(np.searchsorted(cdf, (u[t] + np.arange(N)) / N), N - 1)]
    return -ll


def test_simulations() -> None:
    grid = np.stack(np.meshgrid(np.arange(3.0), np.arange(2.0)), -1).reshape(-1, 2) * 1.2 + 0.05 * _normal(6, 2)
    check(lennard_jones, (grid,), hvp=True)
    check(fem_compliance, (0.3 * _normal(4), _normal(4)), hvp=True)
    check(black_scholes, (np.abs(_normal(5)) * 0.2 + 0.1, 100.0, np.linspace(80, 120, 5), 0.5, 0.03,
                          np.linspace(22, 3, 5)), hvp=True)
    check(sir_poisson, (np.log(np.array([0.6, 0.2])), R.poisson(20, 8).astype(float)), hvp=True)
    check(particle_filter, (np.array([0.8, -0.3]), _normal(6), _normal(7, 20), R.random(6)))


# --- against JAX -----------------------------------------------------------------------------

def test_models_against_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def kalman_jax(params: Any, ys: np.ndarray) -> Any:
        a, q, r = params[0], jnp.exp(params[1]), jnp.exp(params[2])
        m, P, ll = 0.0, 1.0, 0.0
        for y in ys:
            m, P = a * m, a * a * P + q
            S = P + r
            ll = ll - 0.5 * (jnp.log(2 * jnp.pi * S) + (y - m) ** 2 / S)
            m, P = m + P / S * (y - m), (1 - P / S) * P
        return -ll

    def sinkhorn_jax(x: Any, y: np.ndarray) -> Any:
        C = (x[:, None] - y[None, :]) ** 2
        f, g = jnp.zeros(C.shape[0]), jnp.zeros(C.shape[1])
        for _ in range(20):
            f = -0.3 * jax.scipy.special.logsumexp((g[None, :] - C) / 0.3 - np.log(C.shape[1]), axis=1)
            g = -0.3 * jax.scipy.special.logsumexp((f[:, None] - C) / 0.3 - np.log(C.shape[0]), axis=0)
        return jnp.sum(f) / C.shape[0] + jnp.sum(g) / C.shape[1]

    params, ys = np.array([0.8, -1.0, -0.5]), _normal(15)
    np.testing.assert_allclose(s2sad.grad(kalman_scalar)(params, ys), jax.grad(kalman_jax)(params, ys), rtol=1e-10)
    v = _normal(3)
    np.testing.assert_allclose(s2sad.hvp(kalman_scalar)(params, ys, v),
                               jax.jvp(jax.grad(kalman_jax), (params, ys), (v, np.zeros_like(ys)))[1], rtol=1e-9)
    x, y = _normal(5), _normal(4)
    np.testing.assert_allclose(s2sad.grad(sinkhorn_log_domain)(x, y), jax.grad(sinkhorn_jax)(x, y), rtol=1e-9)


# --- zip(*rows) outside a loop ---------------------------------------------------------------

def layers_unzipped(layers: list, x: np.ndarray) -> float:
    weights, biases = zip(*layers)
    h = x
    for W, b in zip(weights, biases):
        h = np.tanh(W @ h + b)
    return np.sum(h ** 2) + 1e-2 * sum(np.sum(W ** 2) for W in weights)


def columns_of_rows(A: np.ndarray, rows: list) -> float:
    a, b, c = zip(*A)  # the rows of an array, as tuples of their columns
    pairs = sorted(zip(a, b), key=lambda p: p[1])
    first, second = zip(*pairs)
    return np.sum(np.array(first) * np.arange(len(second)) * np.array(second)) + sum(c) + sum(
        col[0] * col[-1] ** 2 for col in zip(*rows))


def test_zip_of_starred_rows_is_their_transpose() -> None:
    # 'ws, bs = zip(*pairs)' was refused ("'*' or '**' in a call of zip is not supported")
    layers = [(0.5 * _normal(3, 2), _normal(3)), (0.5 * _normal(2, 3), _normal(2))]
    g = check(layers_unzipped, (layers, _normal(2)), hvp=True)
    assert isinstance(g, list) and isinstance(g[0], tuple)
    rows = [[0.5, 1.2, 0.3], [0.3, -0.7], [1.1, 0.2, 0.8]]  # ragged: zip stops at the shortest
    check(columns_of_rows, (_normal(4, 3), rows))
    check(columns_of_rows, (_normal(4, 3), rows), 1)


def test_zip_of_starred_rows_read_twice_is_refused() -> None:
    def twice(x: np.ndarray) -> float:
        columns = zip(*[x, 2 * x])
        return sum(a * b for a, b in columns) + sum(a for a, _ in columns)

    with pytest.raises(s2sad.UnsupportedSyntaxError, match="iterator, used up by its first reader") as info:
        s2sad.grad(twice)(np.ones(3))
    assert info.value.location.line == twice.__code__.co_firstlineno + 1


# --- more styles: classes, inner solvers, event processes, policy gradients, im2col ------------

class _Classifier:
    """Data held by the object; the parameters passed to its method."""

    def __init__(self, X: np.ndarray, y: np.ndarray) -> None:
        self.X, self.y = X, y

    @staticmethod
    def link(z: np.ndarray) -> np.ndarray:
        return expit(z)

    def loss(self, w: np.ndarray) -> float:
        p = self.link(self.X @ w)
        return -np.mean(sp.xlogy(self.y, p) + sp.xlogy(1 - self.y, 1 - p))


def implicit_layer(W: np.ndarray, x: np.ndarray) -> float:
    z = np.zeros(W.shape[0])
    for _ in range(100):  # a fixed point, iterated until it settles
        z_new = np.tanh(W @ z + x)
        if np.max(np.abs(z_new - z)) < 1e-10:
            z = z_new
            break
        z = z_new
    return np.sum(z ** 2)


def newton_logistic(w0: np.ndarray, X: np.ndarray, y: np.ndarray, Xv: np.ndarray, yv: np.ndarray) -> float:
    w = w0
    for _ in range(3):
        p = expit(X @ w)
        H = (X * (p * (1 - p))[:, None]).T @ X + 0.1 * np.eye(len(w))
        w = w - np.linalg.solve(H, X.T @ (p - y) + 0.1 * w)
    pv = expit(Xv @ w)
    return -np.mean(yv * np.log(pv) + (1 - yv) * np.log(1 - pv))


def hawkes(params: np.ndarray, times: np.ndarray, T: float) -> float:
    mu, alpha, beta = np.exp(params)
    ll, A = 0.0, 0.0
    for i in range(len(times)):
        if i > 0:
            A = np.exp(-beta * (times[i] - times[i - 1])) * (1 + A)
        ll = ll + np.log(mu + alpha * A)
    return mu * T + alpha / beta * np.sum(1 - np.exp(-beta * (T - times))) - ll


def reinforce(theta: np.ndarray, feats: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> float:
    T = len(rewards)
    discount = 0.9 ** np.arange(T)
    returns = np.cumsum((rewards * discount)[::-1])[::-1] / discount
    logits = feats @ theta
    log_p = logits[np.arange(T), actions] - logsumexp(logits, axis=1)
    return -np.sum(log_p * stop_gradient(returns - returns.mean()))


def ppo_clipped(theta: np.ndarray, feats: np.ndarray, actions: np.ndarray, old_log_p: np.ndarray,
                advantage: np.ndarray) -> float:
    log_p = np.take_along_axis(sp.log_softmax(feats @ theta, axis=1), actions[:, None], axis=1)[:, 0]
    ratio = np.exp(log_p - old_log_p)
    return -np.mean(np.minimum(ratio * advantage, np.clip(ratio, 0.8, 1.2) * advantage))


def cnn_im2col(Wc: np.ndarray, Wfc: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    N, C, H, W = x.shape
    F, _, kh, kw = Wc.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="constant")
    rows = np.tile(np.repeat(np.arange(kh), kw), C)[:, None] + np.repeat(np.arange(H), W)[None, :]
    cols = np.tile(np.arange(kw), kh * C)[:, None] + np.tile(np.arange(W), H)[None, :]
    channel = np.repeat(np.arange(C), kh * kw)[:, None]
    out = np.einsum("fc,ncp->nfp", Wc.reshape(F, -1), padded[:, channel, rows, cols]).reshape(N, F, H, W)
    pooled = np.maximum(out, 0).reshape(N, F, H // 2, 2, W // 2, 2).max(axis=(3, 5))
    scores = pooled.reshape(N, -1) @ Wfc
    return np.mean(logsumexp(scores, axis=1) - scores[np.arange(N), y])


def distribution_zoo(params: np.ndarray, x: np.ndarray) -> float:
    loc, s = params[0], np.exp(params[1])
    return -(st.norm.logcdf(x, loc, s).sum() + st.expon.logpdf(np.abs(x), scale=s).sum()
             + st.laplace.logpdf(x, loc, s).sum() + st.logistic.logpdf(x, loc, s).sum()
             + st.multivariate_normal.logpdf(x[:3], mean=np.full(3, loc), cov=s * np.eye(3)))


def test_more_styles() -> None:
    model = _Classifier(_normal(10, 3), (R.random(10) > 0.5).astype(float))
    check(model.loss, (_normal(3),), hvp=True)
    check(implicit_layer, (0.3 * _normal(4, 4), _normal(4)))
    check(newton_logistic, (0.1 * _normal(3), _normal(20, 3), (R.random(20) > 0.5).astype(float), _normal(8, 3),
                            (R.random(8) > 0.5).astype(float)), rtol=1e-5)
    check(hawkes, (np.log(np.array([0.5, 0.3, 1.2])), np.sort(R.uniform(0, 10, 12)), 10.0), hvp=True)
    check(reinforce, (_normal(3, 4), _normal(6, 3), R.integers(0, 4, 6), _normal(6)))
    check(ppo_clipped, (_normal(3, 4), _normal(8, 3), R.integers(0, 4, 8), -np.abs(_normal(8)), _normal(8)))
    cnn = (0.3 * _normal(2, 2, 3, 3), 0.3 * _normal(8, 3), _normal(2, 2, 4, 4), np.array([0, 2]))
    check(cnn_im2col, cnn, hvp=True)
    check(cnn_im2col, cnn, 2)
    check(distribution_zoo, (np.array([0.2, -0.1]), _normal(6)), hvp=True)


# --- scatter maximum and minimum (graph pooling) ---------------------------------------------

def graph_max_pool(W: np.ndarray, X: np.ndarray, edges: np.ndarray) -> float:
    """Each node keeps the largest message along its incoming edges (or its own features)."""
    H = np.tanh(X @ W)
    pooled = H.copy()
    np.maximum.at(pooled, edges[:, 1], H[edges[:, 0]])
    low = np.zeros(X.shape[0])
    np.minimum.at(low, edges[:, 1], H[edges[:, 0], 0] * 2.0)
    return np.sum(pooled ** 2 * np.arange(1, pooled.shape[1] + 1)) + np.sum(low ** 3)


def graph_attention(a: np.ndarray, W: np.ndarray, X: np.ndarray, edges: np.ndarray) -> float:
    src, dst = edges[:, 0], edges[:, 1]
    H = X @ W
    e = np.tanh(H[src] @ a[:H.shape[1]] + H[dst] @ a[H.shape[1]:])
    e_max = np.full(X.shape[0], -np.inf)
    np.maximum.at(e_max, dst, e)  # a segment softmax, stabilised
    ex = np.exp(e - stop_gradient(e_max)[dst])
    total = np.zeros(X.shape[0])
    np.add.at(total, dst, ex)
    out = np.zeros_like(H)
    np.add.at(out, dst, (ex / total[dst])[:, None] * H[src])
    return np.sum(out ** 2)


def test_maximum_at_and_minimum_at_are_differentiated() -> None:
    # np.maximum.at was refused ("differentiates for np.add.at and np.subtract.at only")
    edges = np.array([[0, 1], [1, 2], [2, 0], [3, 1], [2, 3], [1, 0], [4, 2]])
    check(graph_max_pool, (_normal(3, 2), _normal(5, 3), edges), hvp=True)
    check(graph_max_pool, (_normal(3, 2), _normal(5, 3), edges), 1)
    check(graph_attention, (_normal(6), _normal(3, 3), _normal(5, 3), edges), hvp=True)

    def tied(v: np.ndarray) -> float:
        z = np.zeros(2)
        np.maximum.at(z, np.array([0, 0, 1]), v)  # v[0] == v[1]: they share slot 0's gradient
        return np.sum(z * np.array([3.0, 5.0]))

    np.testing.assert_allclose(s2sad.grad(tied)(np.array([2.0, 2.0, -1.0])), [1.5, 1.5, 0.0])
    np.testing.assert_allclose(s2sad.grad(tied)(np.array([2.0, 1.0, 4.0])), [3.0, 0.0, 5.0])


# --- banded solves (smoothing splines, implicit time steps) ----------------------------------

def crank_nicolson(kappa: float, u0: np.ndarray) -> float:
    """The heat equation by implicit steps: a tridiagonal system in banded storage each step."""
    n, r = u0.shape[0], 0.5 * kappa
    ab = np.zeros((3, n))
    ab[0, 1:] = -r
    ab[1, :] = 1 + 2 * r
    ab[2, :-1] = -r
    u = u0
    for _ in range(5):
        rhs = (1 - 2 * r) * u
        rhs[1:] += r * u[:-1]
        rhs[:-1] += r * u[1:]
        u = scipy.linalg.solve_banded((1, 1), ab, rhs)
    return np.sum(u ** 2 * np.arange(n))


def banded_smoother(ab: np.ndarray, Y: np.ndarray) -> float:
    F = scipy.linalg.solve_banded((0, 2), ab, Y)
    return np.sum(F ** 3)


def test_solve_banded_is_differentiated() -> None:
    # scipy.linalg.solve_banded had no rule: "no gradient rule for 'scipy.linalg.solve_banded'"
    check(crank_nicolson, (0.8, np.sin(np.linspace(0, 3, 7))), 0, hvp=True)
    check(crank_nicolson, (0.8, np.sin(np.linspace(0, 3, 7))), 1, hvp=True)
    ab = _normal(3, 5) + np.array([[0.0], [0.0], [4.0]])
    check(banded_smoother, (ab, _normal(5, 2)), hvp=True)
    check(banded_smoother, (ab, _normal(5, 2)), 1)

    def overwriting(ab: np.ndarray, y: np.ndarray) -> float:
        return np.sum(scipy.linalg.solve_banded((0, 2), ab, y, overwrite_b=True))

    with pytest.raises(s2sad.S2SADError, match="leave overwrite_b=False") as info:
        s2sad.grad(overwriting, 1)(ab, np.ones(5))
    assert info.value.location.line == overwriting.__code__.co_firstlineno + 1


# --- chained stores (boundary conditions) ----------------------------------------------------

def wave_equation(c: float, u0: np.ndarray) -> float:
    prev, cur = u0.copy(), u0.copy()
    for _ in range(15):
        nxt = np.empty_like(cur)
        nxt[1:-1] = 2 * cur[1:-1] - prev[1:-1] + c ** 2 * 0.25 * (cur[2:] - 2 * cur[1:-1] + cur[:-2])
        nxt[0] = nxt[-1] = 0.0  # both ends held at zero
        prev, cur = cur, nxt
    return np.sum(cur ** 2)


def chained_into_names_and_items(w: np.ndarray) -> float:
    a = np.zeros(4)
    a[0] = b = w[0] * 2  # the value once, then each target left to right
    i = a[1] = w[1]
    a[2] = i * w[0]
    xs, ys = [np.zeros(2)], [np.zeros(2)]
    xs[0] = ys[0] = w * 2  # one array in both lists
    ys[0] += 1.0
    return np.sum(a * 3) + b ** 2 + np.sum(xs[0] * np.array([1.0, 3.0])) + np.sum(ys[0] ** 2)


def test_chained_assignment_into_elements() -> None:
    # 'nxt[0] = nxt[-1] = 0.0' was refused ("chained assignment into an element is not supported")
    check(wave_equation, (0.9, np.sin(np.linspace(0, 3, 10))), 0, hvp=True)
    check(wave_equation, (0.9, np.sin(np.linspace(0, 3, 10))), 1)
    check(chained_into_names_and_items, (np.array([0.3, -0.7]),), hvp=True)


# --- writes into a view of a new array -------------------------------------------------------

def reshaped_new_array(w: np.ndarray) -> float:
    x = (w * 2.0).reshape(3, 1)  # a view of an array no name holds
    x[0] += x[1]
    y = np.reshape(w ** 2, (1, 3))
    z = y.T  # (a view of y: it sees the write)
    y[0, 2] = 5.0
    return np.sum(x ** 3) + np.sum(z * w[:, None]) + np.sum(w.copy().reshape(3, 1)[1:] ** 2)


def test_writing_into_a_view_of_a_new_array() -> None:
    # 'x = (w * 2.0).reshape(3, 1); x[0] += ...' was refused ("'x' may be a view into another array")
    check(reshaped_new_array, (np.array([0.3, -0.2, 0.5]),), hvp=True)

    def of_an_argument(w: np.ndarray) -> float:
        x = np.asarray(w).reshape(3, 1)  # (w itself, reshaped: the caller's array)
        x[0] = 5.0
        return np.sum(x)

    def not_copied(w: np.ndarray) -> float:
        x = np.array(w, copy=False).reshape(3, 1)  # (w itself: no copy)
        x[0] = 5.0
        return np.sum(x)

    def into_out(w: np.ndarray) -> float:
        b = np.zeros(3)
        x = np.exp(w, out=b).reshape(3, 1)  # (b itself, reshaped)
        x[0] = 5.0
        return np.sum(b * w)

    for f in (of_an_argument, not_copied, into_out):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match="'x' may be a view") as info:
            s2sad.grad(f)(np.ones(3))
        assert info.value.location.line == f.__code__.co_firstlineno + 2 + (f is into_out)


def robust_pca_spectrum(A: np.ndarray) -> float:
    """Nuclear norm by scipy's SVD, the leading singular pair, and a softplus hinge."""
    U, s, Vh = scipy.linalg.svd(A, full_matrices=False)
    hinge = sp.softplus(s - 1.0) if hasattr(sp, "softplus") else np.logaddexp(0.0, s - 1.0)
    return np.sum(s) + np.sum(U[:, 0] ** 2 * np.arange(A.shape[0])) + np.sum(np.abs(Vh[0])) + np.sum(hinge)


def test_scipy_svd_and_softplus_are_differentiated() -> None:
    # scipy.linalg.svd (and scipy.special.softplus, SciPy 1.15) had no rule
    check(robust_pca_spectrum, (_normal(5, 3),), hvp=True)


def test_changing_the_rows_a_loop_goes_over_is_refused_with_a_faithful_rewrite() -> None:
    def scaled_rows(A: np.ndarray) -> float:
        B = A.copy()
        for row in B:
            row *= 2.0  # changes B
        return np.sum(B ** 3)

    # the advice was 'write row = row * ...', which would leave B unchanged
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=re.escape("for i in range(len(B)): B[i] = ...")) as info:
        s2sad.grad(scaled_rows)(np.ones((2, 3)))
    assert info.value.location.line == scaled_rows.__code__.co_firstlineno + 3

    def by_index(A: np.ndarray) -> float:
        B = A.copy()
        for i in range(len(B)):
            B[i] = B[i] * 2.0
        return np.sum(B ** 3)

    check(by_index, (_normal(2, 3),))
