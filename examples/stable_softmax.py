"""Softmax regression on scikit-learn's digits with the numerically stable softmax.

The stable softmax subtracts each row's largest logit before exponentiating, so
``np.exp`` never overflows.  The maximum is wrapped in ``stop_gradient``: it does not
change the softmax, so no gradient should flow through it (through ``np.max`` it would
reach one arbitrary entry when the maximum is tied), and s2sad emits no adjoint code for it.
Run: ``python examples/stable_softmax.py [--quick] [--out DIR]``.
"""
from __future__ import annotations

import argparse
import pathlib

import numpy as np

from s2sad import adjoint_source, grad, stop_gradient, value_and_grad



def loss(W, b, X, Y):
    """Mean softmax cross-entropy of the linear model ``X @ W + b`` against one-hot ``Y``."""
    logits = X @ W + b
    z = logits - stop_gradient(np.max(logits, axis=-1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=-1))


def naive_loss(W, b, X, Y):
    """The same loss with the textbook softmax, which overflows for large logits."""
    logits = X @ W + b
    p = np.exp(logits) / np.sum(np.exp(logits), axis=-1, keepdims=True)
    return -np.mean(np.sum(Y * np.log(p), axis=-1))


def load_data(seed: int = 0, n: int | None = None):
    """Digits (8x8 images, 10 classes) if scikit-learn is installed, else Gaussian blobs.

    An 80/20 train/test split of a fixed shuffle; ``n`` keeps only the first n examples.
    """
    rng = np.random.default_rng(seed)
    try:
        from sklearn.datasets import load_digits

        data = load_digits()
        X, y = data.data / 16.0, data.target
    except ImportError:
        print("scikit-learn is not installed: using Gaussian blobs instead of the digits")
        centers = rng.normal(size=(10, 64))
        y = rng.integers(0, 10, size=1797)
        X = centers[y] + rng.normal(scale=1.5, size=(1797, 64))
    order = rng.permutation(len(y))[:n]
    X, y = X[order], y[order]
    split = int(0.8 * len(y))
    return X[:split], y[:split], X[split:], y[split:]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 images and 50 steps: a few seconds")
    parser.add_argument("--steps", type=int, default=None,
                        help="gradient steps (default 1000, quick 50)")
    parser.add_argument("--lr", type=float, default=0.5, help="learning rate of gradient descent")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).parent / "output",
                        help="folder for the PNG plot (default examples/output/)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.steps is None:
        args.steps = 50 if args.quick else 1000
    return args


def main(argv: list[str] | None = None) -> dict:
    """Train, compare, plot; return the measured numbers (the tests check them)."""
    from tqdm import tqdm

    args = parse_args(argv)
    X_train, y_train, X_test, y_test = load_data(args.seed, n=300 if args.quick else None)
    Y_train, Y_test = np.eye(10)[y_train], np.eye(10)[y_test]
    print(f"softmax regression: {len(y_train)} training and {len(y_test)} test images, "
          f"{args.steps} steps of gradient descent (lr {args.lr})")

    # 1. The generated gradient: the maximum appears only in the forward pass.
    code = adjoint_source(loss, wrt=("W", "b"))
    print("\nThe gradient s2sad generates for the stable loss:\n")
    print(code)
    adjoint_of_max = "extremum_grad" in code or "dmax" in code
    print(f"adjoint of np.max in the generated code: {'yes' if adjoint_of_max else 'none'}\n")

    # 2. Training, driven only by the generated gradient.
    W = np.zeros((X_train.shape[1], 10))
    b = np.zeros(10)
    step = value_and_grad(loss, wrt=("W", "b"))
    train_losses, test_losses = [], []
    bar = tqdm(total=args.steps, desc="training", disable=None)
    for i in range(args.steps):
        value, (dW, db) = step(W, b, X_train, Y_train)
        train_losses.append(value)
        test_losses.append(loss(W, b, X_test, Y_test))
        W -= args.lr * dW
        b -= args.lr * db
        bar.set_postfix_str(f"loss {value:.4f}", refresh=False)
        bar.update()
    bar.close()
    train_losses.append(loss(W, b, X_train, Y_train))
    test_losses.append(loss(W, b, X_test, Y_test))
    accuracy = float(np.mean(np.argmax(X_test @ W + b, axis=1) == y_test))
    print(f"final training loss {train_losses[-1]:.4f}, test loss {test_losses[-1]:.4f}, "
          f"test accuracy {accuracy:.3f}")

    # 3. The reference: scikit-learn's multinomial logistic regression (L-BFGS, C=1).
    reference = None
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        print("scikit-learn is not installed: no reference accuracy")
    else:
        model = LogisticRegression(C=1.0, max_iter=5000).fit(X_train, y_train)
        reference = float(model.score(X_test, y_test))
        print(f"reference: scikit-learn LogisticRegression test accuracy {reference:.3f}")

    # 4. The gradient against the closed form X^T (softmax - Y) / n, and the two softmaxes.
    logits = X_train @ W + b
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dW, db = grad(loss, wrt=("W", "b"))(W, b, X_train, Y_train)
    closed_form_error = float(np.max(np.abs(dW - X_train.T @ (p - Y_train) / len(X_train))))
    print(f"\nmax |s2sad gradient - closed form X^T (softmax - Y) / n| = {closed_form_error:.1e}")

    scales = [1, 3, 10, 30, 100, 300, 1000]
    print("\nScaling the trained weights up makes the logits large:")
    print(f"{'scale':>6} {'max |logit|':>12} {'naive loss':>11} {'stable loss':>12} "
          f"{'max |grad difference|':>22}")
    naive_values, stable_values, grad_differences = [], [], []
    for s in scales:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            naive = naive_loss(s * W, s * b, X_train, Y_train)
            naive_dW, _ = grad(naive_loss, wrt=("W", "b"))(s * W, s * b, X_train, Y_train)
        stable = loss(s * W, s * b, X_train, Y_train)
        stable_dW, _ = grad(loss, wrt=("W", "b"))(s * W, s * b, X_train, Y_train)
        difference = float(np.max(np.abs(naive_dW - stable_dW)))
        naive_values.append(float(naive))
        stable_values.append(float(stable))
        grad_differences.append(difference)
        print(f"{s:>6} {np.max(np.abs(s * logits)):>12.1f} {naive:>11.4g} {stable:>12.4g} "
              f"{difference:>22.2e}")
    finite = [d for d in grad_differences if np.isfinite(d)]
    print(f"where both are finite, the gradients agree to {max(finite):.1e}")
    if np.isnan(naive_values).any():
        print(f"the naive loss is nan from scale {scales[int(np.argmax(np.isnan(naive_values)))]} on; "
              f"the stable loss and its gradient stay finite")

    path = plot(args.out, train_losses, test_losses, scales, naive_values, stable_values, W,
                accuracy, reference)
    if path:
        print(f"\nwrote {path}")
    return {
        "gradient_code": code,
        "adjoint_of_max": adjoint_of_max,
        "train_losses": train_losses,
        "test_accuracy": accuracy,
        "reference_accuracy": reference,
        "closed_form_error": closed_form_error,
        "scales": scales,
        "naive_losses": naive_values,
        "stable_losses": stable_values,
        "grad_differences": grad_differences,
        "plot": path,
    }


def plot(out, train_losses, test_losses, scales, naive_values, stable_values, W, accuracy, reference):
    """Loss curves, naive against stable softmax as logits grow, and the learned weights."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return None
    out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), gridspec_kw={"width_ratios": [1, 1, 1.2]})
    axes[0].plot(train_losses, label="training")
    axes[0].plot(test_losses, label="test")
    title = f"test accuracy {accuracy:.3f}"
    if reference is not None:
        title += f" (scikit-learn {reference:.3f})"
    axes[0].set(xlabel="gradient step", ylabel="cross-entropy", yscale="log", title=title)
    axes[0].legend()
    axes[1].plot(scales, stable_values, "o-", label="stable softmax")
    naive = np.array(naive_values)
    axes[1].plot(scales, naive, "x--", label="naive softmax", markersize=9)
    for s, v in zip(scales, naive):
        if not np.isfinite(v):
            axes[1].annotate("nan", (s, stable_values[scales.index(s)]), textcoords="offset points",
                             xytext=(0, -16), ha="center", color="C1")
    axes[1].set(xscale="log", yscale="log", xlabel="weights scaled by", ylabel="loss",
                title="naive softmax overflows")
    axes[1].legend()
    # the ten columns of W as 8x8 images, in two rows of five
    if W.shape[0] == 64:
        tiles = [np.pad(W[:, k].reshape(8, 8), 1, constant_values=np.nan) for k in range(10)]
        limit = np.max(np.abs(W))
        axes[2].imshow(np.block([tiles[:5], tiles[5:]]), cmap="RdBu_r", vmin=-limit, vmax=limit,
                       interpolation="nearest")
        axes[2].set(title="learned weights, digits 0-9", xticks=[], yticks=[])
    fig.tight_layout()
    path = out / "stable_softmax.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
