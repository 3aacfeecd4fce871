"""The workloads for PyTorch in eager mode (float64 tensors on the CPU, one thread).

``build`` takes another device and dtype for benchmarks/gpu.py.

stop_gradient is ``.detach()``.  Gradients are taken with ``torch.autograd.grad``
so nothing accumulates in ``.grad`` between calls.  Inputs are converted to
tensors once, outside the timed call.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

torch.set_num_threads(1)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:  # already set, or work already started
    pass

NOTES = ["torch: eager mode, float64, stop_gradient is .detach(), gradients by torch.autograd.grad"]


def softmax_ce(logits, Y):
    z = logits - torch.amax(logits, dim=1, keepdim=True).detach()
    log_p = z - torch.log(torch.sum(torch.exp(z), dim=1, keepdim=True))
    return -torch.sum(Y * log_p) / logits.shape[0]


def mlp(W1, b1, W2, b2, X, Y):
    h = torch.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - torch.amax(logits, dim=1, keepdim=True).detach()
    log_p = z - torch.log(torch.sum(torch.exp(z), dim=1, keepdim=True))
    return -torch.sum(Y * log_p) / X.shape[0]


def rbm_cd1(W, b_h, b_v, v, u_h, u_v):
    Wc = W.detach()
    h_prob = 1.0 / (1.0 + torch.exp(-(v @ Wc + b_h)))
    h = (u_h < h_prob).to(torch.float64)
    v_prob = 1.0 / (1.0 + torch.exp(-(h @ Wc.T + b_v)))
    v_model = (u_v < v_prob).to(torch.float64).detach()
    f_data = -(v @ b_v) - torch.sum(torch.log(1.0 + torch.exp(v @ W + b_h)), dim=1)
    f_model = -(v_model @ b_v) - torch.sum(torch.log(1.0 + torch.exp(v_model @ W + b_h)), dim=1)
    return torch.mean(f_data) - torch.mean(f_model)


def gmm_em(means, X, log_weights, variances):
    diff = X[:, None, :] - means[None, :, :]
    log_comp = (-0.5 * torch.sum(diff ** 2 / variances, dim=2)
                - 0.5 * torch.sum(torch.log(2.0 * math.pi * variances), dim=1) + log_weights)
    e = torch.exp(log_comp - torch.amax(log_comp, dim=1, keepdim=True))
    resp = (e / torch.sum(e, dim=1, keepdim=True)).detach()
    return -torch.sum(resp * log_comp) / X.shape[0]


def logistic_loss(x, w, b, y_sign):
    z = x @ w + b
    return torch.mean(torch.log(1.0 + torch.exp(-y_sign * z)))


def fgsm(w, b, X, y_sign, eps):
    x = X.detach().requires_grad_(True)
    (g_x,) = torch.autograd.grad(logistic_loss(x, w, b, y_sign), x)
    x_adv = (X + eps * torch.sign(g_x)).detach()
    return logistic_loss(x_adv, w, b, y_sign)


def rnn_loop(W, U, b, xs, h0, y):
    h = h0
    for t in range(xs.shape[0]):
        h = torch.tanh(W @ h + U @ xs[t] + b)
    return torch.sum((h - y) ** 2)


def scalar(x):
    return torch.sin(x) * x ** 2 + torch.exp(-x)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "softmax_ce": softmax_ce, "mlp": mlp, "rbm_cd1": rbm_cd1, "gmm_em": gmm_em,
    "fgsm": fgsm, "rnn_loop": rnn_loop, "scalar": scalar,
}


def _tensor(value: Any, requires_grad: bool, device: str, dtype: torch.dtype) -> Any:
    if isinstance(value, float) and not requires_grad:
        return value  # a Python float stays a Python float
    return torch.tensor(value, dtype=dtype, device=device, requires_grad=requires_grad)


def build(name: str, inputs: dict[str, Any], wrt: tuple[str, ...], device: str = "cpu",
          dtype: torch.dtype = torch.float64) -> Callable[[], Any]:
    fn = FUNCTIONS[name]
    args = tuple(_tensor(v, k in wrt, device, dtype) for k, v in inputs.items())
    params = tuple(args[list(inputs).index(w)] for w in wrt)

    def call() -> Any:
        return torch.autograd.grad(fn(*args), params)

    return call


def to_numpy(result: Any) -> tuple[Any, ...]:
    return tuple(g.detach().cpu().numpy() if g.ndim else float(g) for g in result)
