"""Softmax regression with the numerically stable softmax.

The stable softmax subtracts the row maximum before exponentiating.  The
maximum is wrapped in ``stop_gradient``: it does not change the softmax, so
no gradient should flow through it (and through ``np.max`` a gradient would
go to a single, arbitrary entry when the maximum is tied).  s2sad then
generates no adjoint code at all for the maximum.

    python examples/stable_softmax.py            # train and print the gradient code
    s2sad examples/stable_softmax.py:loss --wrt W b
"""
from __future__ import annotations

import argparse

import numpy as np

from s2sad import adjoint_source, stop_gradient, value_and_grad


def loss(W, b, X, Y):
    """Mean softmax cross-entropy of the linear model ``X @ W + b`` against one-hot ``Y``."""
    logits = X @ W + b
    z = logits - stop_gradient(np.max(logits, axis=-1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=-1))


def load_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits (8x8 images, 10 classes) if scikit-learn is installed, else Gaussian blobs."""
    rng = np.random.default_rng(seed)
    try:
        from sklearn.datasets import load_digits

        data = load_digits()
        X, y = data.data / 16.0, data.target
    except ImportError:
        centers = rng.normal(size=(10, 64))
        y = rng.integers(0, 10, size=1797)
        X = centers[y] + rng.normal(scale=1.5, size=(1797, 64))
    order = rng.permutation(len(y))
    X, y = X[order], y[order]
    split = int(0.8 * len(y))
    return X[:split], y[:split], X[split:], y[split:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--quick", action="store_true", help="a few steps only")
    args = parser.parse_args()
    steps = 20 if args.quick else args.steps

    X_train, y_train, X_test, y_test = load_data()
    Y_train = np.eye(10)[y_train]
    W = np.zeros((X_train.shape[1], 10))
    b = np.zeros(10)

    print(adjoint_source(loss, wrt=("W", "b")))
    step = value_and_grad(loss, wrt=("W", "b"))
    for i in range(steps + 1):
        value, (dW, db) = step(W, b, X_train, Y_train)
        if i % max(steps // 10, 1) == 0:
            print(f"step {i:4d}  loss {value:.4f}")
        W -= args.lr * dW
        b -= args.lr * db
    accuracy = np.mean(np.argmax(X_test @ W + b, axis=1) == y_test)
    print(f"test accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
