"""Functions whose generated gradient code is checked against tests/golden/."""
import numpy as np

from s2sad import stop_gradient


def softmax_cross_entropy(logits, labels):
    z = logits - stop_gradient(np.max(logits, axis=-1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(labels * log_p, axis=-1))


def mlp(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return 0.5 * np.sum((out - y) ** 2) / x.shape[0]


def scalar(x):
    return np.sin(x) * x ** 2 + np.exp(-x)


def reassigned(x, w):
    h = x * w
    h = np.tanh(h)
    h = h * w
    n, m = x.shape
    return np.sum(h[:, 0]) + np.sum(h.T @ h) / (n * m)


def straight_through(x):
    return np.sum((x + stop_gradient(np.round(x) - x)) ** 2)




def rnn(W, U, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h ** 2)


def logsumexp_loop(x):
    m = stop_gradient(np.max(x))
    s = 0.0
    for xi in x:
        s = s + np.exp(xi - m)
    return np.log(s) + m


def branches(x, w):
    if np.sum(x) > 0:
        y = x * w
    elif np.sum(w) > 0:
        return np.sum(np.sin(x))
    else:
        y = np.tanh(x) - w
    return np.sum(y ** 2)


def early_stop(x):
    acc = 0.0
    for i in range(x.shape[0]):
        if x[i] > 2.0:
            break
        if x[i] < -2.0:
            continue
        acc = acc + x[i] ** 2
    return acc


def diagonal(S0, d):
    S = S0.copy()
    for i in range(d.shape[0]):
        if d[i] > 0:
            S[i, i] += d[i]
    return np.sum(S ** 2)


def _layer(h, W, b):
    return np.tanh(h @ W + b)


def calls_and_containers(params, x):
    h = x
    outs = []
    for layer in params:
        W, b = layer
        h = _layer(h, W, b)
        outs.append(np.sum(h))
    return sum(outs) + np.mean(np.stack([o ** 2 for o in outs]))


def conditional_value(x):
    y = x ** 2 if np.mean(x) > 0 else -x
    return np.sum(y)


GOLDEN = {
    "softmax_cross_entropy": (softmax_cross_entropy, "logits"),
    "mlp": (mlp, ("W1", "b1", "W2", "b2")),
    "scalar": (scalar, 0),
    "reassigned": (reassigned, ("x", "w")),
    "straight_through": (straight_through, 0),
    "rnn": (rnn, ("W", "U", "b", "xs", "h0")),
    "logsumexp_loop": (logsumexp_loop, 0),
    "branches": (branches, ("x", "w")),
    "early_stop": (early_stop, 0),
    "diagonal": (diagonal, ("S0", "d")),
    "calls_and_containers": (calls_and_containers, ("params", "x")),
    "conditional_value": (conditional_value, 0),
}
