"""The workloads for autograd (HIPS/autograd), written as its users write them.

autograd has no public stop_gradient; ``autograd.tracer.getval`` (unbox the
value) is the usual recipe and is used here.
"""
from __future__ import annotations

from typing import Any, Callable

import autograd
import autograd.numpy as anp
from autograd.tracer import getval as stop_gradient

NOTES = ["autograd: stop_gradient is autograd.tracer.getval (autograd has no public stop_gradient)"]


def softmax_ce(logits, Y):
    z = logits - stop_gradient(anp.max(logits, axis=1, keepdims=True))
    log_p = z - anp.log(anp.sum(anp.exp(z), axis=1, keepdims=True))
    return -anp.sum(Y * log_p) / logits.shape[0]


def mlp(W1, b1, W2, b2, X, Y):
    h = anp.tanh(anp.dot(X, W1) + b1)
    logits = anp.dot(h, W2) + b2
    z = logits - stop_gradient(anp.max(logits, axis=1, keepdims=True))
    log_p = z - anp.log(anp.sum(anp.exp(z), axis=1, keepdims=True))
    return -anp.sum(Y * log_p) / X.shape[0]


def rbm_cd1(W, b_h, b_v, v, u_h, u_v):
    Wc = stop_gradient(W)
    h_prob = 1.0 / (1.0 + anp.exp(-(anp.dot(v, Wc) + b_h)))
    h = (u_h < h_prob) * 1.0
    v_prob = 1.0 / (1.0 + anp.exp(-(anp.dot(h, Wc.T) + b_v)))
    v_model = stop_gradient((u_v < v_prob) * 1.0)
    f_data = -anp.dot(v, b_v) - anp.sum(anp.log(1.0 + anp.exp(anp.dot(v, W) + b_h)), axis=1)
    f_model = -anp.dot(v_model, b_v) - anp.sum(anp.log(1.0 + anp.exp(anp.dot(v_model, W) + b_h)), axis=1)
    return anp.mean(f_data) - anp.mean(f_model)


def gmm_em(means, X, log_weights, variances):
    diff = X[:, None, :] - means[None, :, :]
    log_comp = (-0.5 * anp.sum(diff ** 2 / variances, axis=2)
                - 0.5 * anp.sum(anp.log(2.0 * anp.pi * variances), axis=1) + log_weights)
    e = anp.exp(log_comp - anp.max(log_comp, axis=1, keepdims=True))
    resp = stop_gradient(e / anp.sum(e, axis=1, keepdims=True))
    return -anp.sum(resp * log_comp) / X.shape[0]


def logistic_loss(x, w, b, y_sign):
    z = anp.dot(x, w) + b
    return anp.mean(anp.log(1.0 + anp.exp(-y_sign * z)))


_input_grad = autograd.grad(logistic_loss, 0)


def fgsm(w, b, X, y_sign, eps):
    g_x = _input_grad(X, w, b, y_sign)
    x_adv = stop_gradient(X + eps * anp.sign(g_x))
    return logistic_loss(x_adv, w, b, y_sign)


def rnn_loop(W, U, b, xs, h0, y):
    h = h0
    for t in range(xs.shape[0]):
        h = anp.tanh(anp.dot(W, h) + anp.dot(U, xs[t]) + b)
    return anp.sum((h - y) ** 2)


def scalar(x):
    return anp.sin(x) * x ** 2 + anp.exp(-x)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "softmax_ce": softmax_ce, "mlp": mlp, "rbm_cd1": rbm_cd1, "gmm_em": gmm_em,
    "fgsm": fgsm, "rnn_loop": rnn_loop, "scalar": scalar,
}


def build(name: str, inputs: dict[str, Any], wrt: tuple[str, ...]) -> Callable[[], Any]:
    """A zero-argument function that returns the gradient(s) of workload ``name``."""
    fn = FUNCTIONS[name]
    names = list(inputs)
    argnum = tuple(names.index(w) for w in wrt)
    g = autograd.grad(fn, argnum if len(argnum) > 1 else argnum[0])
    args = tuple(inputs.values())
    return lambda: g(*args)


def to_numpy(result: Any) -> tuple[Any, ...]:
    return tuple(result) if isinstance(result, tuple) else (result,)
