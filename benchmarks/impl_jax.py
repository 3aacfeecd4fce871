"""The workloads for JAX (CPU, float64, one thread), as ``jax.grad`` with and without ``jax.jit``.

stop_gradient is ``jax.lax.stop_gradient``.  Inputs are converted to JAX
arrays once, outside the timed call; every timed call waits for its result
(``jax.block_until_ready``).  The first call of the jitted gradient (trace,
compile and one run) is timed on its own and reported as the compile time.
"""
from __future__ import annotations

from typing import Any, Callable

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.lax import stop_gradient  # noqa: E402

NOTES = ["jax: float64 (jax_enable_x64), stop_gradient is jax.lax.stop_gradient; "
         "'jax' is jax.grad op by op, 'jax.jit' is jax.jit(jax.grad(f)); "
         "jit compile time (first call: trace + compile + run) is reported separately"]


def softmax_ce(logits, Y):
    z = logits - stop_gradient(jnp.max(logits, axis=1, keepdims=True))
    log_p = z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True))
    return -jnp.sum(Y * log_p) / logits.shape[0]


def mlp(W1, b1, W2, b2, X, Y):
    h = jnp.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - stop_gradient(jnp.max(logits, axis=1, keepdims=True))
    log_p = z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True))
    return -jnp.sum(Y * log_p) / X.shape[0]


def rbm_cd1(W, b_h, b_v, v, u_h, u_v):
    Wc = stop_gradient(W)
    h_prob = 1.0 / (1.0 + jnp.exp(-(v @ Wc + b_h)))
    h = (u_h < h_prob) * 1.0
    v_prob = 1.0 / (1.0 + jnp.exp(-(h @ Wc.T + b_v)))
    v_model = stop_gradient((u_v < v_prob) * 1.0)
    f_data = -(v @ b_v) - jnp.sum(jnp.log(1.0 + jnp.exp(v @ W + b_h)), axis=1)
    f_model = -(v_model @ b_v) - jnp.sum(jnp.log(1.0 + jnp.exp(v_model @ W + b_h)), axis=1)
    return jnp.mean(f_data) - jnp.mean(f_model)


def gmm_em(means, X, log_weights, variances):
    diff = X[:, None, :] - means[None, :, :]
    log_comp = (-0.5 * jnp.sum(diff ** 2 / variances, axis=2)
                - 0.5 * jnp.sum(jnp.log(2.0 * jnp.pi * variances), axis=1) + log_weights)
    e = jnp.exp(log_comp - jnp.max(log_comp, axis=1, keepdims=True))
    resp = stop_gradient(e / jnp.sum(e, axis=1, keepdims=True))
    return -jnp.sum(resp * log_comp) / X.shape[0]


def logistic_loss(x, w, b, y_sign):
    z = x @ w + b
    return jnp.mean(jnp.log(1.0 + jnp.exp(-y_sign * z)))


def fgsm(w, b, X, y_sign, eps):
    g_x = jax.grad(logistic_loss)(X, w, b, y_sign)
    x_adv = stop_gradient(X + eps * jnp.sign(g_x))
    return logistic_loss(x_adv, w, b, y_sign)


def rnn_loop(W, U, b, xs, h0, y):
    h = h0
    for t in range(xs.shape[0]):
        h = jnp.tanh(W @ h + U @ xs[t] + b)
    return jnp.sum((h - y) ** 2)


def scalar(x):
    return jnp.sin(x) * x ** 2 + jnp.exp(-x)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "softmax_ce": softmax_ce, "mlp": mlp, "rbm_cd1": rbm_cd1, "gmm_em": gmm_em,
    "fgsm": fgsm, "rnn_loop": rnn_loop, "scalar": scalar,
}


def _array(value: Any) -> Any:
    return value if isinstance(value, float) else jnp.asarray(value)


def build(name: str, inputs: dict[str, Any], wrt: tuple[str, ...], jit: bool) -> Callable[[], Any]:
    fn = FUNCTIONS[name]
    names = list(inputs)
    argnums = tuple(names.index(w) for w in wrt)
    g = jax.grad(fn, argnums=argnums if len(argnums) > 1 else argnums[0])
    if jit:
        g = jax.jit(g)
    args = tuple(_array(v) for v in inputs.values())
    block = jax.block_until_ready
    return lambda: block(g(*args))


def to_numpy(result: Any) -> tuple[Any, ...]:
    parts = result if isinstance(result, tuple) else (result,)
    return tuple(np.asarray(p) for p in parts)


def thirty_lines(W1, b1, W2, b2, X, Y, scale, lam):
    a1 = X @ W1 + b1
    mu = jnp.mean(a1, axis=1, keepdims=True)
    centered = a1 - mu
    var = jnp.mean(centered ** 2, axis=1, keepdims=True)
    normed = centered / jnp.sqrt(var + 1e-5)
    h1 = jnp.tanh(normed * scale)
    gate = 1.0 / (1.0 + jnp.exp(-a1))
    h2 = h1 * gate + 0.1 * h1
    a2 = h2 @ W2 + b2
    m = jnp.max(a2, axis=1, keepdims=True)
    z = a2 - m
    ez = jnp.exp(z)
    sz = jnp.sum(ez, axis=1, keepdims=True)
    log_p = z - jnp.log(sz)
    p = ez / sz
    nll = -jnp.sum(Y * log_p, axis=1)
    entropy = -jnp.sum(p * log_p, axis=1)
    margin = jnp.sum(Y * a2, axis=1) - jnp.max(a2 - 1e3 * Y, axis=1)
    hinge = jnp.maximum(0.0, 1.0 - margin)
    data_term = jnp.mean(nll) + 0.01 * jnp.mean(hinge)
    reg1 = jnp.sum(W1 ** 2)
    reg2 = jnp.sum(W2 ** 2)
    l1 = jnp.sum(jnp.abs(b1)) + jnp.sum(jnp.abs(b2))
    smooth = jnp.sum((h2[1:] - h2[:-1]) ** 2) / X.shape[0]
    sharp = jnp.mean(entropy)
    total = data_term + lam * (reg1 + reg2) + 1e-3 * l1
    total = total + 1e-3 * smooth - 1e-3 * sharp
    out = total * 1.0
    return out


def compile_once(inputs: dict[str, Any], wrt: tuple[str, ...], clock: Callable[[], float]) -> float:
    """Seconds for the first call of a fresh jax.jit(jax.grad(thirty_lines)), caches cleared."""
    jax.clear_caches()
    names = list(inputs)
    g = jax.jit(jax.grad(thirty_lines, argnums=tuple(names.index(w) for w in wrt)))
    args = tuple(_array(v) for v in inputs.values())
    start = clock()
    jax.block_until_ready(g(*args))
    return clock() - start
