"""Realistic programs, as an ML or scientific-computing user writes them: an MLP with its
parameters as a dict, a list of (W, b) pairs and a named tuple; LSTM and GRU cells unrolled;
causal multi-head attention; layer and batch norm; convolution and max-pooling; Gaussian
processes (cholesky and cho_factor/cho_solve); GLMs; mixtures (EM with stop_gradient); an RBM
step; FGSM; an RK4 spring system; a heat-equation solver; Newton iterations; scipy.optimize.

Gradients and Hessian-vector products against central finite differences in float64
(against JAX too when it is installed).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.linalg  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.stats  # noqa: E402
from numpy.lib.stride_tricks import sliding_window_view  # noqa: E402
from scipy.linalg import cho_factor, cho_solve  # noqa: E402
from scipy.special import expit, gammaln, logsumexp  # noqa: E402

import s2sad  # noqa: E402
from s2sad import stop_gradient  # noqa: E402
from tests.gradcheck import numerical_tree_grad, tree_flat  # noqa: E402

RNG = np.random.default_rng(13)


# --- checking helpers ------------------------------------------------------------------------


def check_grad(f: Callable[..., float], args: tuple, i: int = 0, rtol: float = 1e-5) -> Any:
    """s2sad's gradient of ``f`` in argument ``i`` against finite differences; returns it."""
    g = s2sad.grad(f, i)(*args)
    assert type(g) is type(args[i]) or isinstance(args[i], np.ndarray) and isinstance(g, np.ndarray)
    ref = numerical_tree_grad(f, args, i)
    np.testing.assert_allclose(tree_flat(g), ref, rtol=rtol, atol=rtol * np.max(np.abs(ref)) + 1e-8)
    return g


def check_hvp(f: Callable[..., float], args: tuple, i: int = 0, rtol: float = 1e-5) -> None:
    """s2sad's Hessian-vector product against differences of its gradients."""
    x = np.asarray(args[i], dtype=float)
    v = RNG.normal(size=x.shape)
    got = s2sad.hvp(f, i)(*args, v)
    grad = s2sad.grad(f, i)
    eps = 1e-5
    ref = (grad(*args[:i], x + eps * v, *args[i + 1:]) - grad(*args[:i], x - eps * v, *args[i + 1:])) / (2 * eps)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * np.max(np.abs(ref)))


# --- an MLP, its parameters in three containers ------------------------------------------------

def log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - stop_gradient(np.max(z, axis=-1, keepdims=True))
    return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))


def mlp_dict(params: dict, X: np.ndarray, Y: np.ndarray, mask: np.ndarray, lam: float = 1e-3) -> float:
    h = np.tanh(X @ params["W1"] + params["b1"])
    h = h * mask / 0.8  # dropout with a fixed mask
    lp = log_softmax(h @ params["W2"] + params["b2"])
    reg = lam * (np.sum(params["W1"] ** 2) + np.sum(params["W2"] ** 2))
    return -np.mean(np.sum(Y * lp, axis=1)) + reg


def mlp_layers(layers: list, X: np.ndarray, y: np.ndarray) -> float:
    h = X
    for W, b in layers[:-1]:
        h = np.maximum(h @ W + b, 0.0)
    W, b = layers[-1]
    lp = log_softmax(h @ W + b)
    return -np.mean(lp[np.arange(X.shape[0]), y]) + 1e-3 * sum(np.sum(W ** 2) for W, _ in layers)


class Params(NamedTuple):
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


def mlp_named(p: Params, X: np.ndarray, y: np.ndarray) -> float:
    h = 1.0 / (1.0 + np.exp(-(X @ p.W1 + p.b1)))
    logits = h @ p.W2 + p.b2
    m = stop_gradient(logits.max(axis=1, keepdims=True))
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))
    return np.mean(lse - logits[np.arange(len(y)), y])


def _mlp_data() -> tuple:
    X = RNG.normal(size=(12, 4))
    y = RNG.integers(0, 3, size=12)
    params = {"W1": RNG.normal(size=(4, 6)) * 0.5, "b1": RNG.normal(size=6) * 0.1,
              "W2": RNG.normal(size=(6, 3)) * 0.5, "b2": np.zeros(3)}
    return X, y, params


def test_mlp_with_parameters_in_a_dict_a_list_of_pairs_and_a_named_tuple() -> None:
    X, y, params = _mlp_data()
    mask = (RNG.uniform(size=(12, 6)) > 0.2).astype(float)
    g = check_grad(mlp_dict, (params, X, np.eye(3)[y], mask))
    assert set(g) == set(params)
    layers = [(RNG.normal(size=(4, 5)) * 0.5, RNG.normal(size=5) * 0.1),
              (RNG.normal(size=(5, 3)) * 0.5, np.zeros(3))]
    g = check_grad(mlp_layers, (layers, X, y))
    assert isinstance(g, list) and isinstance(g[0], tuple)
    p = Params(**params)
    g = check_grad(mlp_named, (p, X, y))
    assert isinstance(g, Params)
    check_hvp(mlp_dict, (params, X, np.eye(3)[y], mask), 1)


def test_mlp_training_loop_and_has_aux() -> None:
    X, y, params = _mlp_data()
    Y = np.eye(3)[y]
    mask = np.ones((12, 6))

    def loss_and_accuracy(params: dict, X: np.ndarray, Y: np.ndarray, mask: np.ndarray) -> tuple:
        loss = mlp_dict(params, X, Y, mask)
        return loss, np.mean(np.argmax(X @ params["W1"] @ params["W2"], axis=1) == np.argmax(Y, axis=1))

    step = s2sad.value_and_grad(loss_and_accuracy, has_aux=True)
    losses = []
    for _ in range(30):
        (loss, accuracy), g = step(params, X, Y, mask)
        params = {k: params[k] - 0.5 * g[k] for k in params}
        losses.append(loss)
    assert losses[-1] < 0.7 * losses[0] and 0.0 <= accuracy <= 1.0


# --- recurrent cells, attention, normalisation -----------------------------------------------

def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def lstm(W: np.ndarray, U: np.ndarray, b: np.ndarray, xs: np.ndarray, target: np.ndarray) -> float:
    H = U.shape[0]
    h, c = np.zeros(H), np.zeros(H)
    for x in xs:
        i, f, o, g = np.split(W @ x + U.T @ h + b, 4)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
    return np.sum((h - target) ** 2)


def gru(Wz: np.ndarray, Wr: np.ndarray, Wh: np.ndarray, U: np.ndarray, xs: np.ndarray) -> float:
    H = U.shape[0]
    h = np.zeros(H)
    for t in range(len(xs)):
        z = sigmoid(Wz @ xs[t] + U[:, :H] @ h)
        r = sigmoid(Wr @ xs[t] + U[:, H:2 * H] @ h)
        hh = np.tanh(Wh @ xs[t] + U[:, 2 * H:] @ (r * h))
        h = (1 - z) * h + z * hh
    return np.sum(h * np.arange(1.0, H + 1))


def test_lstm_and_gru_unrolled_over_20_steps() -> None:
    H, D, T = 3, 2, 20
    xs = RNG.normal(size=(T, D))
    args = (RNG.normal(size=(4 * H, D)) * 0.4, RNG.normal(size=(H, 4 * H)) * 0.4, RNG.normal(size=4 * H) * 0.1,
            xs, RNG.normal(size=H))
    check_grad(lstm, args, 1)
    check_grad(lstm, args, 3)
    check_hvp(lstm, args, 0)
    args = (*(RNG.normal(size=(H, D)) * 0.5 for _ in range(3)), RNG.normal(size=(H, 3 * H)) * 0.5, xs)
    check_grad(gru, args, 3)
    check_hvp(gru, args, 0)


def multi_head_attention(Wqkv: np.ndarray, Wo: np.ndarray, X: np.ndarray, heads: int) -> float:
    B, T, D = X.shape
    hd = D // heads
    q, k, v = np.split(X @ Wqkv, 3, axis=-1)
    q = q.reshape(B, T, heads, hd).transpose(0, 2, 1, 3)
    k = k.reshape(B, T, heads, hd).transpose(0, 2, 1, 3)
    v = v.reshape(B, T, heads, hd).transpose(0, 2, 1, 3)
    att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    causal = np.triu(np.ones((T, T)), k=1) == 1
    att = np.where(causal[None, None], -np.inf, att)
    att = np.exp(att - stop_gradient(att.max(axis=-1, keepdims=True)))
    att /= att.sum(axis=-1, keepdims=True)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, D) @ Wo
    return np.mean(y ** 2)


def layer_norm_then_batch_norm(gamma: np.ndarray, beta: np.ndarray, x: np.ndarray, W: np.ndarray) -> float:
    mu = x.mean(axis=-1, keepdims=True)
    h = gamma * (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) + beta
    h = h @ W
    mean = np.mean(h, axis=0)
    var = np.mean((h - mean) ** 2, axis=0)
    return np.sum(np.sin((h - mean) / np.sqrt(var + 1e-5)) * np.arange(h.shape[1]))


def test_causal_multi_head_attention_and_norms() -> None:
    X = RNG.normal(size=(2, 4, 6))
    args = (RNG.normal(size=(6, 18)) * 0.3, RNG.normal(size=(6, 6)) * 0.3, X, 2)
    check_grad(multi_head_attention, args, 0)
    check_grad(multi_head_attention, args, 2)
    check_hvp(multi_head_attention, args, 2)
    args = (RNG.normal(size=5), RNG.normal(size=5), RNG.normal(size=(6, 5)), RNG.normal(size=(5, 3)))
    for i in range(4):
        check_grad(layer_norm_then_batch_norm, args, i)
    check_hvp(layer_norm_then_batch_norm, args, 2)


# --- convolution and pooling ------------------------------------------------------------------

def conv_pool(K: np.ndarray, x: np.ndarray) -> float:
    windows = sliding_window_view(x, K.shape[2:], axis=(2, 3))  # B, Ci, Ho, Wo, kh, kw
    out = np.maximum(np.tensordot(windows, K, axes=([1, 4, 5], [1, 2, 3])), 0.0)  # B, Ho, Wo, Co
    B, Ho, Wo, Co = out.shape
    pooled = out[:, :Ho // 2 * 2, :Wo // 2 * 2].reshape(B, Ho // 2, 2, Wo // 2, 2, Co).max(axis=(2, 4))
    return np.sum(pooled ** 2)


def conv_loops(K: np.ndarray, x: np.ndarray) -> float:
    kh, kw = K.shape
    out = np.zeros((x.shape[0] - kh + 1, x.shape[1] - kw + 1))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = np.sum(x[i:i + kh, j:j + kw] * K)
    return np.sum(np.tanh(out) ** 2)


def test_convolution_by_windows_and_by_loops_with_max_pooling() -> None:
    args = (RNG.normal(size=(3, 2, 3, 3)), RNG.normal(size=(2, 2, 6, 6)))
    check_grad(conv_pool, args, 0)
    check_grad(conv_pool, args, 1)
    args = (RNG.normal(size=(2, 2)), RNG.normal(size=(5, 5)))
    check_grad(conv_loops, args, 0)
    check_grad(conv_loops, args, 1)
    check_hvp(conv_loops, args, 0)


# --- Gaussian processes ---------------------------------------------------------------------

def _kernel(log_params: np.ndarray, X: np.ndarray) -> np.ndarray:
    ell, sf, sn = np.exp(log_params)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    return sf ** 2 * np.exp(-0.5 * d2 / ell ** 2) + sn ** 2 * np.eye(len(X))


def gp_by_cholesky(log_params: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    L = np.linalg.cholesky(_kernel(log_params, X))
    alpha = scipy.linalg.solve_triangular(L, y, lower=True)
    return 0.5 * alpha @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * np.log(2 * np.pi)


def gp_by_cho_factor(log_params: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    c, low = cho_factor(_kernel(log_params, X), lower=True)
    alpha = cho_solve((c, low), y)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(c)))


def gp_by_upper_cho_factor(log_params: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    factor = cho_factor(_kernel(log_params, X))
    return 0.5 * y @ cho_solve(factor, y) + np.sum(np.log(np.diagonal(factor[0])))


def gp_several_outputs(log_params: np.ndarray, X: np.ndarray, Y: np.ndarray) -> float:
    L = scipy.linalg.cholesky(_kernel(log_params, X), lower=True)
    return np.sum(cho_solve((L, True), Y) * Y)


def cho_factor_both_triangles(a: np.ndarray) -> float:
    c, _ = cho_factor(a)  # its lower triangle is a's, as SciPy leaves it
    return np.sum(c * np.arange(a.size).reshape(a.shape))


def _gp_data() -> tuple:
    X = RNG.normal(size=(7, 2))
    return np.log(np.array([1.0, 1.2, 0.3])), X, np.sin(X[:, 0])


@pytest.mark.parametrize("f", [gp_by_cholesky, gp_by_cho_factor, gp_by_upper_cho_factor])
def test_gaussian_process_negative_log_marginal_likelihood(f: Callable[..., float]) -> None:
    args = _gp_data()
    check_grad(f, args, 0)
    check_grad(f, args, 1)
    check_hvp(f, args, 0)


def test_cho_solve_differentiates_its_factor_and_cho_factor_its_matrix() -> None:
    # these were refused ("cho_solve with respect to b only", "does not differentiate cho_factor")
    log_params, X, _ = _gp_data()
    args = (log_params, X, RNG.normal(size=(7, 2)))
    check_grad(gp_several_outputs, args, 0)
    check_hvp(gp_several_outputs, args, 0)
    M = RNG.normal(size=(3, 3))
    A = M @ M.T + 3 * np.eye(3)
    check_grad(cho_factor_both_triangles, (A,))
    check_hvp(cho_factor_both_triangles, (A,))
    v = RNG.normal(size=3)
    args = _gp_data()
    tangent = s2sad.jvp(gp_by_upper_cho_factor)(*args, v)[1]
    np.testing.assert_allclose(tangent, s2sad.grad(gp_by_upper_cho_factor)(*args) @ v, rtol=1e-10)


def test_cho_factor_with_overwrite_a_is_refused_at_the_call() -> None:
    def f(a: np.ndarray) -> float:
        return np.sum(cho_factor(a * 1.0, overwrite_a=True)[0])

    with pytest.raises(s2sad.errors.NoGradientRuleError, match="leave overwrite_a=False") as info:
        s2sad.grad(f)(np.eye(2))
    assert info.value.location.line == f.__code__.co_firstlineno + 1


# --- likelihoods --------------------------------------------------------------------------------

def bayesian_logistic(w: np.ndarray, X: np.ndarray, y: np.ndarray, prior_var: float = 2.0) -> float:
    z = X @ w
    ll = np.sum(y * np.log(expit(z)) + (1 - y) * np.log1p(-expit(z)))
    return -ll + 0.5 * np.sum(w ** 2) / prior_var


def poisson_glm(beta: np.ndarray, X: np.ndarray, counts: np.ndarray) -> float:
    eta = X @ beta
    return -np.sum(counts * eta - np.exp(eta) - gammaln(counts + 1))


def student_t(params: np.ndarray, x: np.ndarray) -> float:
    mu, log_s, log_nu = params
    s, nu = np.exp(log_s), np.exp(log_nu)
    z = (x - mu) / s
    lp = (gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi) - np.log(s)
          - (nu + 1) / 2 * np.log1p(z ** 2 / nu))
    return -np.sum(lp)


def test_glm_and_student_t_likelihoods() -> None:
    X = RNG.normal(size=(20, 3))
    check_grad(bayesian_logistic, (RNG.normal(size=3) * 0.3, X, (RNG.uniform(size=20) < 0.5) * 1.0))
    args = (RNG.normal(size=3) * 0.2, X, RNG.poisson(2.0, size=20).astype(float))
    check_grad(poisson_glm, args)
    check_hvp(poisson_glm, args)
    args = (np.array([0.1, 0.2, 1.0]), RNG.standard_t(3, size=25))
    check_grad(student_t, args)
    check_hvp(student_t, args)


# --- mixtures, an RBM, an adversarial loss -----------------------------------------------------

def _mixture_log_probs(means: np.ndarray, log_sig: np.ndarray, logits: np.ndarray, x: np.ndarray) -> np.ndarray:
    sig = np.exp(log_sig)
    logw = logits - logsumexp(logits)
    return -0.5 * ((x[:, None] - means[None, :]) / sig) ** 2 - np.log(sig) - 0.5 * np.log(2 * np.pi) + logw


def gmm_nll(means: np.ndarray, log_sig: np.ndarray, logits: np.ndarray, x: np.ndarray) -> float:
    return -np.sum(logsumexp(_mixture_log_probs(means, log_sig, logits, x), axis=1))


def gmm_m_step_objective(means: np.ndarray, log_sig: np.ndarray, logits: np.ndarray, x: np.ndarray) -> float:
    lp = _mixture_log_probs(means, log_sig, logits, x)
    r = stop_gradient(np.exp(lp - logsumexp(lp, axis=1, keepdims=True)))  # the E-step's responsibilities
    return -np.sum(r * lp)


def gmm_fixed_responsibilities(means: np.ndarray, log_sig: np.ndarray, logits: np.ndarray, x: np.ndarray,
                               r: np.ndarray) -> float:
    return -np.sum(r * _mixture_log_probs(means, log_sig, logits, x))


def test_mixture_likelihood_and_em_m_step() -> None:
    x = np.concatenate([RNG.normal(-2, 0.5, 10), RNG.normal(1, 1, 10)])
    args = (np.array([-1.0, 0.5]), np.array([0.0, 0.1]), np.array([0.2, -0.1]), x)
    lp = _mixture_log_probs(*args)
    r = np.exp(lp - logsumexp(lp, axis=1, keepdims=True))
    for i in range(3):
        check_grad(gmm_nll, args, i)
        ref = check_grad(gmm_fixed_responsibilities, args + (r,), i)
        np.testing.assert_allclose(s2sad.grad(gmm_m_step_objective, i)(*args), ref, rtol=1e-12)
    check_hvp(gmm_nll, args, 0)


def rbm_contrastive_divergence(W: np.ndarray, v0: np.ndarray, h_u: np.ndarray, v_u: np.ndarray,
                               b: np.ndarray, c: np.ndarray) -> float:
    h0 = stop_gradient((h_u < expit(v0 @ W + c)).astype(float))
    v1 = stop_gradient((v_u < expit(h0 @ W.T + b)).astype(float))

    def free_energy(v: np.ndarray) -> np.ndarray:
        return -v @ b - np.sum(np.logaddexp(0, v @ W + c), axis=-1)

    return np.mean(free_energy(v0)) - np.mean(free_energy(v1))


def fgsm(w: np.ndarray, X: np.ndarray, y: np.ndarray, eps: float = 0.1) -> float:
    def loss(w: np.ndarray, X: np.ndarray) -> float:
        return np.mean(np.logaddexp(0, -y * (X @ w)))

    gx = -y[:, None] * expit(-y * (X @ w))[:, None] * w[None, :] / len(y)
    return loss(w, X) + loss(w, X + eps * stop_gradient(np.sign(gx)))


def test_rbm_contrastive_divergence_and_fgsm() -> None:
    nv, nh, n = 5, 3, 8
    args = (RNG.normal(size=(nv, nh)) * 0.3, (RNG.uniform(size=(n, nv)) < 0.5) * 1.0, RNG.uniform(size=(n, nh)),
            RNG.uniform(size=(n, nv)), RNG.normal(size=nv) * 0.1, RNG.normal(size=nh) * 0.1)
    check_grad(rbm_contrastive_divergence, args, 0)
    check_grad(rbm_contrastive_divergence, args, 5)
    X = RNG.normal(size=(15, 3))
    args = (RNG.normal(size=3), X, np.sign(RNG.normal(size=15)))
    check_grad(fgsm, args)
    check_hvp(fgsm, args)


# --- an HMM's log partition function, as autograd's hmm_em example writes it ------------------

def hmm_log_partition(natural_params: list, data: Any) -> float:
    if isinstance(data, list):  # several sequences: the sum of their log partition functions
        return sum(map(functools.partial(hmm_log_partition, natural_params), data))
    log_pi, log_A, log_B = natural_params
    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]
    return logsumexp(log_alpha)


def hmm_by_generator(natural_params: list, data: Any) -> float:
    if isinstance(data, list):
        return sum(hmm_by_generator(natural_params, seq) for seq in data)
    log_alpha = natural_params[0]
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + natural_params[1], axis=0) + natural_params[2][:, y]
    return logsumexp(log_alpha)


def hmm_partial_by_name(natural_params: list, data: list) -> float:
    one = functools.partial(hmm_log_partition, natural_params)
    return sum(map(one, data)) + functools.reduce(functools.partial(_weighted, natural_params[0]), data, 0.0)


def _weighted(log_pi: np.ndarray, acc: float, seq: np.ndarray) -> float:
    return acc + np.sum(np.exp(log_pi)) * len(seq)


def _hmm_data() -> tuple:
    S, O = 3, 4
    params = [RNG.uniform(size=S), RNG.uniform(size=(S, S)), RNG.uniform(size=(S, O))]
    natural = [np.log(p / p.sum(-1, keepdims=True)) for p in params]
    return natural, [RNG.integers(0, O, size=5), RNG.integers(0, O, size=3)]


@pytest.mark.parametrize("f", [hmm_log_partition, hmm_by_generator, hmm_partial_by_name])
def test_hmm_log_partition_over_several_sequences(f: Callable[..., float]) -> None:
    # map(functools.partial(f, params), data) was refused ("calls an instance of partial made in
    # the function"); a recursive call in a generator over the sequences crashed in the code
    # specialised to a list of arrays (UnboundLocalError: the leaves of its gradient)
    natural, data = _hmm_data()
    g = check_grad(f, (natural, data))
    assert isinstance(g, list) and [x.shape for x in g] == [x.shape for x in natural]
    value, expected = s2sad.value_and_grad(f)(natural, data)
    assert value == pytest.approx(f(natural, data))
    for a, b in zip(s2sad.grad(f, specialize=False)(natural, data), expected):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_partial_in_map_computes_its_arguments_once_where_it_stands() -> None:
    def f(w: np.ndarray, xs: list) -> float:
        rng = np.random.default_rng(0)  # one draw, bound by the partial, for every item
        return sum(map(functools.partial(_scaled, w * rng.normal()), xs))

    xs = [RNG.normal(size=3) for _ in range(3)]
    check_grad(f, (RNG.normal(size=3), xs))


def _scaled(w: np.ndarray, x: np.ndarray) -> float:
    return np.sum(np.tanh(w * x))


# --- factories: a loss made by a function, with nested helpers (autograd's mixture VI) --------

def make_mixture_elbo(log_density: Callable, num_samples: int, k: int) -> Callable:
    def unpack(mixture_params: np.ndarray) -> tuple:
        log_weights = mixture_params[:k] - logsumexp(mixture_params[:k])
        return log_weights, np.reshape(mixture_params[k:], (k, -1))

    def mixture_log_density(mixture_params: np.ndarray, x: np.ndarray) -> np.ndarray:
        log_weights, var_params = unpack(mixture_params)
        densities = np.vstack([_diag_gaussian_log_density(p, x) for p in var_params]).T
        return logsumexp(densities + log_weights, axis=1)

    def elbo(mixture_params: np.ndarray, t: int) -> float:
        def lower_bound(params: np.ndarray) -> float:
            # reads mixture_log_density, log_density and num_samples from the factory's scope
            # (these were "a local variable (or an unknown name)", and a value a NameError)
            samples = _sample_diag_gaussian(params, num_samples, np.random.RandomState(t))
            return np.mean(log_density(samples) - mixture_log_density(mixture_params, samples))

        log_weights, var_params = unpack(mixture_params)
        return np.sum(np.stack([lower_bound(p) for p in var_params]) * np.exp(log_weights))

    return elbo


def _diag_gaussian_log_density(params: np.ndarray, x: np.ndarray) -> np.ndarray:
    d = np.shape(params)[0] // 2
    return np.sum(scipy.stats.norm.logpdf(x, params[:d], np.exp(params[d:])), axis=-1)


def _sample_diag_gaussian(params: np.ndarray, n: int, rs: np.random.RandomState) -> np.ndarray:
    d = np.shape(params)[0] // 2
    return rs.randn(n, d) * np.exp(params[d:]) + params[:d]


def _banana(x: np.ndarray) -> np.ndarray:
    return scipy.stats.norm.logpdf(x[:, 1], 0, 1.35) + scipy.stats.norm.logpdf(x[:, 0], -0.5, np.exp(x[:, 1]))


def test_loss_made_by_a_factory_with_nested_helpers() -> None:
    elbo = make_mixture_elbo(_banana, 10, 2)
    params = np.concatenate([np.ones(2), -1.0 + 0.3 * RNG.normal(size=8)])
    check_grad(elbo, (params, 0))

    def make(scale: float, act: Callable) -> Callable:
        def inner(w: np.ndarray) -> float:
            return np.sum(act(w)) * scale

        def loss(w: np.ndarray, x: np.ndarray) -> float:
            def nested(v: np.ndarray) -> float:
                return inner(v * x) + scale * np.sum(act(v))

            return nested(w) * scale

        return loss

    args = (RNG.normal(size=3), RNG.normal(size=3))
    check_grad(make(2.0, np.tanh), args)
    check_hvp(make(2.0, np.tanh), args)


def test_hvp_through_a_callee_drawing_from_a_generator_passed_in_is_refused() -> None:
    # the Hessian-vector product runs the callee's forward pass again, and its draws from the
    # RandomState passed in then differed: a wrong result; now refused at the draw
    def lower_bound(params: np.ndarray) -> float:
        samples = _sample_diag_gaussian(params, 10, np.random.RandomState(0))
        return np.mean(_banana(samples))

    params = np.array([0.1, -0.2, -0.5, 0.3])
    check_grad(lower_bound, (params,))
    with pytest.raises(s2sad.errors.NoGradientRuleError, match="draw other random numbers") as info:
        s2sad.hvp(lower_bound)(params, np.ones(4))
    assert info.value.location.line == _sample_diag_gaussian.__code__.co_firstlineno + 2
    # a second pullback runs the forward pass again too (it gave another gradient)
    _, pullback = s2sad.vjp(_sample_diag_gaussian)(params, 3, np.random.RandomState(0))
    np.testing.assert_allclose(pullback(np.ones((3, 2)))[:2], [3.0, 3.0])
    with pytest.raises(s2sad.errors.NoGradientRuleError, match="draw other random numbers"):
        pullback(np.ones((3, 2)))


def hmc_with_its_potential_inside(q: np.ndarray, p: np.ndarray, eps: float) -> float:
    def potential(v: np.ndarray) -> float:
        return 0.5 * np.sum(v ** 2) + 0.1 * np.sum(v ** 4)

    force = s2sad.grad(potential)  # (was refused: "bound to the gradient of a nested function")
    for _ in range(5):
        p = p - 0.5 * eps * force(q)
        q = q + eps * p
        p = p - 0.5 * eps * force(q)
    return potential(q) + 0.5 * np.sum(p ** 2)


def test_leapfrog_with_the_gradient_of_a_nested_potential_bound_to_a_name() -> None:
    args = (RNG.normal(size=3), RNG.normal(size=3), 0.1)
    check_grad(hmc_with_its_potential_inside, args, 0)
    check_grad(hmc_with_its_potential_inside, args, 2)
    check_hvp(hmc_with_its_potential_inside, args, 1)


# --- physics ------------------------------------------------------------------------------------

def spring_rhs(state: np.ndarray, k: np.ndarray, m: np.ndarray, c: float) -> np.ndarray:
    n = len(state) // 2
    x, v = state[:n], state[n:]
    f = -k[0] * x
    f[1:] -= k[1:] * (x[1:] - x[:-1])
    f[:-1] += k[1:] * (x[1:] - x[:-1])
    return np.concatenate([v, (f - c * v) / m])


def rk4_springs(params: np.ndarray, state: np.ndarray, m: np.ndarray, dt: float = 0.01) -> float:
    k, c = params[:-1], params[-1]
    for _ in range(100):
        k1 = spring_rhs(state, k, m, c)
        k2 = spring_rhs(state + 0.5 * dt * k1, k, m, c)
        k3 = spring_rhs(state + 0.5 * dt * k2, k, m, c)
        k4 = spring_rhs(state + dt * k3, k, m, c)
        state = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum(state ** 2)


def heat_equation(u0: np.ndarray, alpha: float, dx: float = 0.1, dt: float = 0.001) -> float:
    u = u0.copy()
    r = alpha * dt / dx ** 2
    for _ in range(100):
        un = u.copy()
        u[1:-1] = un[1:-1] + r * (un[2:] - 2 * un[1:-1] + un[:-2])
        u[0] = 0.0
        u[-1] = 0.0
    return np.sum(u ** 2 * np.linspace(1.0, 2.0, u.size))


def newton_sqrt(a: np.ndarray) -> float:
    x = stop_gradient(a)
    for _ in range(20):
        x = stop_gradient(x - (x * x - a) / (2 * x))
    x = x - (x * x - a) / (2 * x)  # one differentiable step at the root: the implicit gradient
    return np.sum(x)


def newton_while(theta: np.ndarray) -> float:
    x = np.ones_like(theta)
    it = 0
    while np.max(np.abs(x ** 3 + theta * x - 1.0)) > 1e-12 and it < 50:
        x = x - (x ** 3 + theta * x - 1.0) / (3 * x ** 2 + theta)
        it += 1
    return np.sum(x ** 2)


def test_rk4_spring_system_over_100_steps() -> None:
    args = (np.array([1.5, 1.2, 0.1]), RNG.normal(size=4), RNG.uniform(1.0, 2.0, size=2))
    for i in range(3):
        check_grad(rk4_springs, args, i)
    check_hvp(rk4_springs, args, 0)


def test_heat_equation_and_newton_iterations() -> None:
    u0 = np.sin(np.linspace(0, np.pi, 10)) + 0.1 * RNG.normal(size=10)
    check_grad(heat_equation, (u0, 0.5), 0)
    check_grad(heat_equation, (u0, 0.5), 1)
    check_hvp(heat_equation, (u0, 0.5), 0)
    a = np.array([2.0, 3.0, 5.0])
    np.testing.assert_allclose(s2sad.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-12)
    check_grad(newton_while, (np.array([1.0, 2.0]),))
    check_hvp(newton_while, (np.array([1.0, 2.0]),))


# --- optimisation users -------------------------------------------------------------------------

def rosenbrock(x: np.ndarray, a: float = 1.0, b: float = 100.0) -> float:
    return np.sum(b * (x[1:] - x[:-1] ** 2) ** 2 + (a - x[:-1]) ** 2)


def test_scipy_minimize_with_generated_derivatives() -> None:
    res = scipy.optimize.minimize(rosenbrock, np.zeros(4), jac=s2sad.grad(rosenbrock), method="L-BFGS-B",
                                  bounds=[(-2.0, 0.8)] * 4)
    assert res.success and np.all(res.x <= 0.8) and res.x[0] == pytest.approx(0.8)
    res = scipy.optimize.minimize(rosenbrock, np.zeros(4), args=(1.0, 100.0), jac=s2sad.grad(rosenbrock),
                                  hess=s2sad.hessian(rosenbrock), method="trust-exact")
    np.testing.assert_allclose(res.x, np.ones(4), atol=1e-3)
    res = scipy.optimize.minimize(s2sad.value_and_grad(rosenbrock), np.zeros(4), jac=True,
                                  hessp=s2sad.hvp(rosenbrock), method="trust-krylov")
    np.testing.assert_allclose(res.x, np.ones(4), atol=1e-5)

    def residuals(x: np.ndarray, t: np.ndarray) -> np.ndarray:
        return x[0] * np.exp(-x[1] * t) - np.exp(-0.7 * t)

    t = np.linspace(0.0, 2.0, 10)
    res = scipy.optimize.least_squares(residuals, np.array([0.5, 0.2]), jac=s2sad.jacobian(residuals), args=(t,))
    np.testing.assert_allclose(res.x, [1.0, 0.7], atol=1e-8)


# --- against JAX, where it is installed ---------------------------------------------------------

def test_models_against_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def jax_gp(log_params: Any, X: Any, y: Any) -> Any:
        ell, sf, sn = jnp.exp(log_params)
        d2 = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
        K = sf ** 2 * jnp.exp(-0.5 * d2 / ell ** 2) + sn ** 2 * jnp.eye(len(X))
        c, low = jax.scipy.linalg.cho_factor(K, lower=True)
        return 0.5 * y @ jax.scipy.linalg.cho_solve((c, low), y) + jnp.sum(jnp.log(jnp.diag(c)))

    args = _gp_data()
    np.testing.assert_allclose(s2sad.grad(gp_by_cho_factor)(*args), jax.grad(jax_gp)(*args), rtol=1e-6)
    v = RNG.normal(size=3)
    np.testing.assert_allclose(s2sad.hvp(gp_by_cho_factor)(*args, v),
                               jax.jvp(jax.grad(jax_gp), args, (v, np.zeros_like(args[1]), np.zeros(7)))[1],
                               rtol=1e-6)


# --- refused with the place and what to write ----------------------------------------------------

def _unpack_layers(weights: np.ndarray, shapes: list) -> Any:
    for m, n in shapes:
        yield weights[:m * n].reshape((m, n)), weights[m * n:m * n + n]
        weights = weights[(m + 1) * n:]


def test_layers_unpacked_by_a_generator_are_refused_at_the_yield() -> None:
    # (an InternalCompilerError: "'Yield' object has no attribute 'func'")
    def predictions(weights: np.ndarray, inputs: np.ndarray) -> float:
        for W, b in _unpack_layers(weights, [(2, 3), (3, 1)]):
            inputs = np.tanh(inputs @ W + b)
        return np.sum(inputs)

    with pytest.raises(s2sad.errors.UnsupportedSyntaxError, match="yield") as info:
        s2sad.grad(predictions)(RNG.normal(size=13), RNG.normal(size=(4, 2)))
    assert info.value.location.line == _unpack_layers.__code__.co_firstlineno + 2
