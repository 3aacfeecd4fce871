"""The workloads for tangent (the ``tangent-ad`` package), which also transforms NumPy source.

The functions are the NumPy ones of ``workloads.py`` with ``tangent.stop_gradient``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tangent
from tangent import stop_gradient
from tangent.non_differentiable import register_non_differentiable_functions

NOTES = ["tangent: tangent.grad of the NumPy functions, stop_gradient is tangent.stop_gradient; "
         "rewritten where tangent refused: x.shape -> np.shape(x), W.T -> np.transpose(W) on "
         "active values; fgsm's input gradient (a tangent.grad function) registered as "
         "non-differentiable and called on stop_gradient(w)"]


def softmax_ce(logits, Y):
    z = logits - stop_gradient(np.max(logits, axis=1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * log_p) / np.shape(logits)[0]  # tangent: no attributes of active values


def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(np.dot(X, W1) + b1)
    logits = np.dot(h, W2) + b2
    z = logits - stop_gradient(np.max(logits, axis=1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * log_p) / X.shape[0]


def rbm_cd1(W, b_h, b_v, v, u_h, u_v):
    Wc = stop_gradient(W)
    h_prob = 1.0 / (1.0 + np.exp(-(np.dot(v, Wc) + b_h)))
    h = (u_h < h_prob) * 1.0
    v_prob = 1.0 / (1.0 + np.exp(-(np.dot(h, np.transpose(Wc)) + b_v)))
    v_model = stop_gradient((u_v < v_prob) * 1.0)
    f_data = -np.dot(v, b_v) - np.sum(np.log(1.0 + np.exp(np.dot(v, W) + b_h)), axis=1)
    f_model = -np.dot(v_model, b_v) - np.sum(np.log(1.0 + np.exp(np.dot(v_model, W) + b_h)), axis=1)
    return np.mean(f_data) - np.mean(f_model)


def gmm_em(means, X, log_weights, variances):
    diff = X[:, None, :] - means[None, :, :]
    log_comp = (-0.5 * np.sum(diff ** 2 / variances, axis=2)
                - 0.5 * np.sum(np.log(2.0 * np.pi * variances), axis=1) + log_weights)
    e = np.exp(log_comp - np.max(log_comp, axis=1, keepdims=True))
    resp = stop_gradient(e / np.sum(e, axis=1, keepdims=True))
    return -np.sum(resp * log_comp) / X.shape[0]


def logistic_loss(x, w, b, y_sign):
    z = np.dot(x, w) + b
    return np.mean(np.log(1.0 + np.exp(-y_sign * z)))


input_grad = tangent.grad(logistic_loss, wrt=(0,))
# tangent cannot differentiate its own generated code (np.ndim has no adjoint); declare the
# input gradient non-differentiable, and call it on a stopped w
register_non_differentiable_functions(input_grad)


def fgsm(w, b, X, y_sign, eps):
    wc = stop_gradient(w)
    g_x = input_grad(X, wc, b, y_sign)
    x_adv = stop_gradient(X + eps * np.sign(g_x))
    return logistic_loss(x_adv, w, b, y_sign)


def rnn_loop(W, U, b, xs, h0, y):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(np.dot(W, h) + np.dot(U, xs[t]) + b)
    return np.sum((h - y) ** 2)


def scalar(x):
    return np.sin(x) * x ** 2 + np.exp(-x)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "softmax_ce": softmax_ce, "mlp": mlp, "rbm_cd1": rbm_cd1, "gmm_em": gmm_em,
    "fgsm": fgsm, "rnn_loop": rnn_loop, "scalar": scalar,
}


def build(name: str, inputs: dict[str, Any], wrt: tuple[str, ...]) -> Callable[[], Any]:
    fn = FUNCTIONS[name]
    names = list(inputs)
    g = tangent.grad(fn, wrt=tuple(names.index(w) for w in wrt))
    args = tuple(inputs.values())
    return lambda: g(*args)


def to_numpy(result: Any) -> tuple[Any, ...]:
    return tuple(result) if isinstance(result, tuple) else (result,)


def compile_once(fn: Callable[..., Any], inputs: dict[str, Any], wrt: tuple[str, ...],
                 clock: Callable[[], float]) -> float:
    """Seconds for tangent.grad(fn) with tangent's in-memory cache cleared (disk cache off)."""
    from tangent.function_cache import clear_cache

    clear_cache()
    names = list(inputs)
    start = clock()
    tangent.grad(fn, wrt=tuple(names.index(w) for w in wrt))
    return clock() - start
