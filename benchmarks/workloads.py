"""The benchmark workloads: NumPy functions for s2sad and their handwritten gradients.

Every workload is a scalar-valued NumPy function written the way a user of
s2sad would write it (``stop_gradient`` where the math says so), together with
a gradient written by hand with care: shared subexpressions, in-place updates
where they save an allocation, no work that the gradient does not need.  The
handwritten gradient is the reference of correctness and the practical limit of
speed.  The same workloads for the peer systems live in ``impl_*.py``.

All data are float64 and are made by a seeded generator, so every system sees
the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import s2sad
from s2sad import stop_gradient


@dataclass
class Workload:
    name: str
    title: str
    fn: Callable[..., Any]            # the function s2sad differentiates (also the "plain" run)
    wrt: tuple[str, ...]              # parameters to differentiate with respect to
    inputs: Callable[[bool], dict[str, Any]]   # quick -> arguments, in fn's parameter order
    handwritten: Callable[..., tuple[Any, ...]] | None   # same signature; a tuple, one per wrt
    notes: list[str] = field(default_factory=list)
    kind: str = "gradient"            # "gradient" or "compile"
    gemm: tuple[str, str] | None = None   # the inputs whose matrix product dominates the time

    @property
    def s2sad_wrt(self) -> Any:
        """``wrt`` as a user passes it: a name for one parameter, a tuple for several."""
        return self.wrt[0] if len(self.wrt) == 1 else self.wrt


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _one_hot(labels: np.ndarray, classes: int) -> np.ndarray:
    out = np.zeros((labels.size, classes))
    out[np.arange(labels.size), labels] = 1.0
    return out


# ------------------------------------------------------------------------------------------------
# softmax_ce: stable softmax cross-entropy, stop_gradient on the row maximum
# ------------------------------------------------------------------------------------------------

def softmax_ce(logits, Y):
    z = logits - stop_gradient(np.max(logits, axis=1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * log_p) / logits.shape[0]


def softmax_ce_hand(logits, Y):
    # (softmax(logits) - Y) / n; the rows of Y sum to one (one-hot labels).
    n = logits.shape[0]
    p = logits - np.max(logits, axis=1, keepdims=True)
    np.exp(p, out=p)
    p /= np.sum(p, axis=1, keepdims=True)
    p -= Y
    p *= 1.0 / n
    return (p,)


def softmax_ce_inputs(quick: bool) -> dict[str, Any]:
    rng = _rng(1)
    n, c = 64, 1000
    return {"logits": rng.normal(size=(n, c)) * 3.0, "Y": _one_hot(rng.integers(0, c, n), c)}


# ------------------------------------------------------------------------------------------------
# mlp: 784-256-10 tanh MLP, softmax cross-entropy
# ------------------------------------------------------------------------------------------------

def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - stop_gradient(np.max(logits, axis=1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * log_p) / X.shape[0]


def mlp_hand(W1, b1, W2, b2, X, Y):
    n = X.shape[0]
    h = X @ W1
    h += b1
    np.tanh(h, out=h)
    d = h @ W2
    d += b2
    d -= np.max(d, axis=1, keepdims=True)
    np.exp(d, out=d)
    d /= np.sum(d, axis=1, keepdims=True)
    d -= Y
    d *= 1.0 / n                      # d loss / d logits
    dW2 = h.T @ d
    db2 = np.sum(d, axis=0)
    dh = d @ W2.T
    h *= h
    np.subtract(1.0, h, out=h)
    dh *= h                           # d loss / d (X @ W1 + b1)
    dW1 = X.T @ dh
    db1 = np.sum(dh, axis=0)
    return dW1, db1, dW2, db2


def mlp_inputs(quick: bool) -> dict[str, Any]:
    rng = _rng(2)
    n, d, hdim, c = 128, 784, 256, 10
    return {
        "W1": rng.normal(size=(d, hdim)) / np.sqrt(d),
        "b1": rng.normal(size=hdim) * 0.1,
        "W2": rng.normal(size=(hdim, c)) / np.sqrt(hdim),
        "b2": rng.normal(size=c) * 0.1,
        "X": rng.random((n, d)),
        "Y": _one_hot(rng.integers(0, c, n), c),
    }


# ------------------------------------------------------------------------------------------------
# rbm_cd1: contrastive divergence (CD-1) for a binary RBM
# ------------------------------------------------------------------------------------------------

def rbm_cd1(W, b_h, b_v, v, u_h, u_v):
    # One Gibbs step v -> h -> v_model from the data, as a constant (CD-1).  The uniform
    # numbers u_h, u_v are drawn outside, so every system samples the same v_model.
    Wc = stop_gradient(W)
    h_prob = 1.0 / (1.0 + np.exp(-(v @ Wc + b_h)))
    h = (u_h < h_prob) * 1.0
    v_prob = 1.0 / (1.0 + np.exp(-(h @ Wc.T + b_v)))
    v_model = stop_gradient((u_v < v_prob) * 1.0)
    # free energy F(v) = -v.b_v - sum_j softplus(v W + b_h)_j; CD-1 loss = mean F(data) - mean F(model)
    f_data = -(v @ b_v) - np.sum(np.log(1.0 + np.exp(v @ W + b_h)), axis=1)
    f_model = -(v_model @ b_v) - np.sum(np.log(1.0 + np.exp(v_model @ W + b_h)), axis=1)
    return np.mean(f_data) - np.mean(f_model)


def rbm_cd1_hand(W, b_h, b_v, v, u_h, u_v):
    n = v.shape[0]
    s_data = v @ W                    # sigmoid(v W + b_h): the Gibbs step's h_prob and dF/da
    s_data += b_h
    np.negative(s_data, out=s_data)
    np.exp(s_data, out=s_data)
    s_data += 1.0
    np.reciprocal(s_data, out=s_data)
    h = (u_h < s_data) * 1.0
    vp = h @ W.T
    vp += b_v
    np.negative(vp, out=vp)
    np.exp(vp, out=vp)
    vp += 1.0
    np.reciprocal(vp, out=vp)
    v_model = (u_v < vp) * 1.0
    s_model = v_model @ W
    s_model += b_h
    np.negative(s_model, out=s_model)
    np.exp(s_model, out=s_model)
    s_model += 1.0
    np.reciprocal(s_model, out=s_model)
    dW = v_model.T @ s_model
    dW -= v.T @ s_data
    dW *= 1.0 / n
    return (dW,)


def rbm_cd1_inputs(quick: bool) -> dict[str, Any]:
    rng = _rng(3)
    n, nv, nh = 64, 784, 128
    return {
        "W": rng.normal(size=(nv, nh)) * 0.05,
        "b_h": rng.normal(size=nh) * 0.1,
        "b_v": rng.normal(size=nv) * 0.1,
        "v": (rng.random((n, nv)) < 0.3) * 1.0,
        "u_h": rng.random((n, nh)),
        "u_v": rng.random((n, nv)),
    }


# ------------------------------------------------------------------------------------------------
# gmm_em: the EM surrogate of a diagonal Gaussian mixture, responsibilities as constants
# ------------------------------------------------------------------------------------------------

def gmm_em(means, X, log_weights, variances):
    diff = X[:, None, :] - means[None, :, :]                  # (n, k, d)
    log_comp = (-0.5 * np.sum(diff ** 2 / variances, axis=2)
                - 0.5 * np.sum(np.log(2.0 * np.pi * variances), axis=1) + log_weights)
    e = np.exp(log_comp - np.max(log_comp, axis=1, keepdims=True))
    resp = stop_gradient(e / np.sum(e, axis=1, keepdims=True))
    return -np.sum(resp * log_comp) / X.shape[0]


def gmm_em_hand(means, X, log_weights, variances):
    n = X.shape[0]
    inv = 1.0 / variances                                     # (k, d)
    # sum_d (x_d - mu_kd)^2 / var_kd, expanded into matrix products (no (n, k, d) temporary)
    lc = (X * X) @ inv.T
    lc -= X @ (2.0 * means * inv).T
    lc += np.sum(means * means * inv, axis=1)
    lc *= -0.5
    lc += log_weights - 0.5 * np.sum(np.log(2.0 * np.pi * variances), axis=1)
    lc -= np.max(lc, axis=1, keepdims=True)
    np.exp(lc, out=lc)
    lc /= np.sum(lc, axis=1, keepdims=True)                  # responsibilities (n, k)
    dmeans = np.sum(lc, axis=0)[:, None] * means
    dmeans -= lc.T @ X
    dmeans *= inv
    dmeans *= 1.0 / n
    return (dmeans,)


def gmm_em_inputs(quick: bool) -> dict[str, Any]:
    rng = _rng(4)
    n, k, d = 1000, 8, 2
    centers = rng.normal(size=(k, d)) * 3.0
    X = centers[rng.integers(0, k, n)] + rng.normal(size=(n, d))
    return {
        "means": centers + rng.normal(size=(k, d)) * 0.5,
        "X": X,
        "log_weights": np.log(np.full(k, 1.0 / k)),
        "variances": 0.5 + rng.random((k, d)),
    }


# ------------------------------------------------------------------------------------------------
# fgsm: logistic regression trained on FGSM adversarial inputs
# ------------------------------------------------------------------------------------------------

def logistic_loss(x, w, b, y_sign):
    z = x @ w + b
    return np.mean(np.log(1.0 + np.exp(-y_sign * z)))


def fgsm(w, b, X, y_sign, eps):
    # The input gradient comes from s2sad itself, called inside the differentiated function;
    # the adversarial inputs are a constant for the gradient with respect to w.
    g_x = s2sad.grad(logistic_loss, wrt="x")(X, w, b, y_sign)
    x_adv = stop_gradient(X + eps * np.sign(g_x))
    return logistic_loss(x_adv, w, b, y_sign)


def fgsm_hand(w, b, X, y_sign, eps):
    n = X.shape[0]
    # input gradient: outer(dz, w) with dz = -y / (1 + exp(y z)) / n; sign(outer) = outer of signs
    dz = y_sign * (X @ w + b)
    np.exp(dz, out=dz)
    dz += 1.0
    np.divide(-y_sign, dz, out=dz)
    X_adv = np.sign(dz)[:, None] * np.sign(w)
    X_adv *= eps
    X_adv += X
    dz = y_sign * (X_adv @ w + b)
    np.exp(dz, out=dz)
    dz += 1.0
    np.divide(-y_sign / n, dz, out=dz)
    return (dz @ X_adv,)


def fgsm_inputs(quick: bool) -> dict[str, Any]:
    rng = _rng(5)
    n, d = 256, 784
    return {
        "w": rng.normal(size=d) * 0.05,
        "b": 0.1,
        "X": rng.random((n, d)),
        "y_sign": np.where(rng.random(n) < 0.5, -1.0, 1.0),
        "eps": 0.05,
    }


# ------------------------------------------------------------------------------------------------
# rnn_loop: a small RNN unrolled by a Python for loop
# ------------------------------------------------------------------------------------------------

def rnn_loop(W, U, b, xs, h0, y):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum((h - y) ** 2)


def rnn_loop_hand(W, U, b, xs, h0, y):
    steps, hidden = xs.shape[0], h0.shape[0]
    pre = xs @ U.T                    # U @ xs[t] + b for all t at once
    pre += b
    hs = np.empty((steps + 1, hidden))
    hs[0] = h0
    h = h0
    for t in range(steps):
        h = np.tanh(W @ h + pre[t])
        hs[t + 1] = h
    WT = W.T.copy()
    da = np.empty((steps, hidden))    # d loss / d (pre-activation) at every step
    dh = 2.0 * (h - y)
    for t in range(steps - 1, -1, -1):
        d = dh * (1.0 - hs[t + 1] ** 2)
        da[t] = d
        dh = WT @ d
    return (da.T @ hs[:-1],)


def rnn_loop_inputs(quick: bool) -> dict[str, Any]:
    rng = _rng(6)
    hidden, inp, steps = 8, 4, 200
    return {
        "W": rng.normal(size=(hidden, hidden)) * (0.9 / np.sqrt(hidden)),
        "U": rng.normal(size=(hidden, inp)) * 0.5,
        "b": rng.normal(size=hidden) * 0.1,
        "xs": rng.normal(size=(steps, inp)),
        "h0": np.zeros(hidden),
        "y": rng.normal(size=hidden) * 0.5,
    }


# ------------------------------------------------------------------------------------------------
# scalar: a Python float through NumPy's scalar functions
# ------------------------------------------------------------------------------------------------

def scalar(x):
    return np.sin(x) * x ** 2 + np.exp(-x)


def scalar_hand(x):
    # the same NumPy primitives as the function (math.sin would be a different, faster choice
    # for both the function and its gradient)
    return (np.cos(x) * x * x + 2.0 * x * np.sin(x) - np.exp(-x),)


def scalar_inputs(quick: bool) -> dict[str, Any]:
    return {"x": 0.7}


# ------------------------------------------------------------------------------------------------
# compile: generation time of a 30-line function's gradient
# ------------------------------------------------------------------------------------------------

def thirty_lines(W1, b1, W2, b2, X, Y, scale, lam):
    a1 = X @ W1 + b1
    mu = np.mean(a1, axis=1, keepdims=True)
    centered = a1 - mu
    var = np.mean(centered ** 2, axis=1, keepdims=True)
    normed = centered / np.sqrt(var + 1e-5)
    h1 = np.tanh(normed * scale)
    gate = 1.0 / (1.0 + np.exp(-a1))
    h2 = h1 * gate + 0.1 * h1
    a2 = h2 @ W2 + b2
    m = np.max(a2, axis=1, keepdims=True)
    z = a2 - m
    ez = np.exp(z)
    sz = np.sum(ez, axis=1, keepdims=True)
    log_p = z - np.log(sz)
    p = ez / sz
    nll = -np.sum(Y * log_p, axis=1)
    entropy = -np.sum(p * log_p, axis=1)
    margin = np.sum(Y * a2, axis=1) - np.max(a2 - 1e3 * Y, axis=1)
    hinge = np.maximum(0.0, 1.0 - margin)
    data_term = np.mean(nll) + 0.01 * np.mean(hinge)
    reg1 = np.sum(W1 ** 2)
    reg2 = np.sum(W2 ** 2)
    l1 = np.sum(np.abs(b1)) + np.sum(np.abs(b2))
    smooth = np.sum((h2[1:] - h2[:-1]) ** 2) / X.shape[0]
    sharp = np.mean(entropy)
    total = data_term + lam * (reg1 + reg2) + 1e-3 * l1
    total = total + 1e-3 * smooth - 1e-3 * sharp
    out = total * 1.0
    return out


def thirty_lines_inputs(quick: bool) -> dict[str, Any]:
    rng = _rng(7)
    n, d, hdim, c = 16, 12, 10, 5
    return {
        "W1": rng.normal(size=(d, hdim)) * 0.3, "b1": rng.normal(size=hdim) * 0.1,
        "W2": rng.normal(size=(hdim, c)) * 0.3, "b2": rng.normal(size=c) * 0.1,
        "X": rng.normal(size=(n, d)), "Y": _one_hot(rng.integers(0, c, n), c),
        "scale": 1.5, "lam": 1e-3,
    }


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    Workload("softmax_ce", "stable softmax cross-entropy, logits 64x1000, stop_gradient on the row max; d/d logits",
             softmax_ce, ("logits",), softmax_ce_inputs, softmax_ce_hand),
    Workload("mlp", "tanh MLP 784-256-10, batch 128, softmax cross-entropy; d/d W1, b1, W2, b2",
             mlp, ("W1", "b1", "W2", "b2"), mlp_inputs, mlp_hand, gemm=("X", "W1")),
    Workload("rbm_cd1", "RBM 784x128, batch 64, CD-1 free-energy difference, Gibbs step under "
             "stop_gradient (uniforms drawn outside); d/d W",
             rbm_cd1, ("W",), rbm_cd1_inputs, rbm_cd1_hand,
             notes=["handwritten reuses sigmoid(v W + b_h) of the Gibbs step for dF/dW "
                    "(one matmul fewer than the function as written)"]),
    Workload("gmm_em", "GMM EM surrogate, 1000 points in 2-D, 8 diagonal components, "
             "responsibilities under stop_gradient; d/d means",
             gmm_em, ("means",), gmm_em_inputs, gmm_em_hand,
             notes=["handwritten expands |x - mu|^2 / var into matrix products (no (n, k, d) temporary)"]),
    Workload("fgsm", "logistic regression, 256x784 inputs, FGSM inputs from an input gradient "
             "under stop_gradient; d/d w",
             fgsm, ("w",), fgsm_inputs, fgsm_hand,
             notes=["s2sad: input gradient by s2sad.grad(logistic_loss, wrt='x') called inside the "
                    "differentiated function, under stop_gradient (what a user would write); "
                    "every peer likewise uses its own input gradient",
                    "handwritten: sign(outer(dz, w)) computed as outer(sign(dz), sign(w))"]),
    Workload("rnn_loop", "RNN hidden 8, input 4, 200 steps as a Python for loop, loss on the "
             "final state; d/d W",
             rnn_loop, ("W",), rnn_loop_inputs, rnn_loop_hand,
             notes=["handwritten hoists U @ xs[t] + b out of the loop and forms dW with one "
                    "matrix product after the backward loop"]),
    Workload("scalar", "sin(x) * x**2 + exp(-x) on a Python float (np.sin, np.exp)",
             scalar, ("x",), scalar_inputs, scalar_hand),
    Workload("compile", "first grad(f) of a 30-line function (caches cleared) and a cached grad(f) lookup",
             thirty_lines, ("W1", "b1", "W2", "b2"), thirty_lines_inputs, None, kind="compile"),
]}
