"""Adversarial training (FGSM) of a small multilayer perceptron on scikit-learn's digits.

The adversarial example x + eps * sign(grad_x loss) is computed inside the training loss
with an s2sad input gradient and enters the loss through ``stop_gradient``: the attack is a
fixed perturbation of the batch, so no gradient flows through its generation (that would
mean differentiating the gradient code itself), and s2sad generates no code for it.
The normally trained model is compared with scikit-learn's MLPClassifier of the same shape.
Run: ``python examples/adversarial.py [--quick] [--eps EPS] [--out DIR]``.
"""
from __future__ import annotations

import argparse
import pathlib
import warnings

import numpy as np

from s2sad import adjoint_source, check_grad, grad, stop_gradient, value_and_grad



# --- the model: the functions s2sad differentiates ------------------------------------------

def predict(params, X):
    """Logits of a one-hidden-layer tanh network."""
    W1, b1, W2, b2 = params
    h = np.tanh(X @ W1 + b1)
    return h @ W2 + b2


def cross_entropy(params, X, Y):
    """Mean softmax cross-entropy against one-hot Y (with the stable softmax)."""
    logits = predict(params, X)
    z = logits - stop_gradient(np.max(logits, axis=1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def fgsm(params, X, Y, eps):
    """The fast gradient sign method: one step of size eps up the loss's gradient in X."""
    dX = grad(cross_entropy, wrt="X")(params, X, Y)
    return np.clip(X + eps * np.sign(dX), 0.0, 1.0)


def adversarial_loss(params, X, Y, eps):
    """Half the loss on the clean batch, half on its adversarial version (a constant)."""
    X_adv = stop_gradient(fgsm(params, X, Y, eps))
    return 0.5 * cross_entropy(params, X, Y) + 0.5 * cross_entropy(params, X_adv, Y)


# --- the driver --------------------------------------------------------------------------------

def initial_parameters(hidden: int, seed: int) -> list[np.ndarray]:
    """Glorot-uniform weights and zero biases, as scikit-learn's MLPClassifier draws them."""
    rng = np.random.default_rng(seed)
    limit1, limit2 = np.sqrt(6 / (64 + hidden)), np.sqrt(6 / (hidden + 10))
    return [rng.uniform(-limit1, limit1, (64, hidden)), np.zeros(hidden),
            rng.uniform(-limit2, limit2, (hidden, 10)), np.zeros(10)]


def train(loss, extra, X, Y, args, label):
    """Adam on mini-batches with the gradient s2sad generates for ``loss``.

    Returns the parameters and the mean loss of each epoch.
    """
    from tqdm import tqdm

    params = initial_parameters(args.hidden, args.seed)
    step = value_and_grad(loss, wrt="params")
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    rng = np.random.default_rng(args.seed + 1)
    t = 0
    history = []
    bar = tqdm(total=args.epochs, desc=label, disable=None)
    for epoch in range(args.epochs):
        order = rng.permutation(len(X))
        losses = []
        for start in range(0, len(X), args.batch_size):
            batch = order[start:start + args.batch_size]
            value, g = step(params, X[batch], Y[batch], *extra)
            losses.append(value)
            t += 1
            for i in range(len(params)):  # Adam
                m[i] = 0.9 * m[i] + 0.1 * g[i]
                v[i] = 0.999 * v[i] + 0.001 * g[i] ** 2
                m_hat, v_hat = m[i] / (1 - 0.9 ** t), v[i] / (1 - 0.999 ** t)
                params[i] = params[i] - args.lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        history.append(float(np.mean(losses)))
        bar.set_postfix_str(f"loss {history[-1]:.4f}", refresh=False)
        bar.update()
    bar.close()
    return params, history


def accuracy(params, X, y, eps):
    """Test accuracy under an FGSM attack of size eps against these very parameters."""
    X_attacked = fgsm(params, X, np.eye(10)[y], eps) if eps > 0 else X
    return float(np.mean(np.argmax(predict(params, X_attacked), axis=1) == y))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="800 images, 15 epochs: a few seconds")
    parser.add_argument("--eps", type=float, default=0.1,
                        help="size of the attack, pixels being in [0, 1] (default 0.1)")
    parser.add_argument("--epochs", type=int, default=None, help="default 60, quick 15")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.003, help="Adam learning rate")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).parent / "output",
                        help="folder for the PNG plot (default examples/output/)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.epochs is None:
        args.epochs = 15 if args.quick else 60
    return args


def main(argv: list[str] | None = None) -> dict:
    """Train both models and the reference, attack them, plot; return the measured numbers."""
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    args = parse_args(argv)
    digits = load_digits()
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(digits.target))[:800 if args.quick else None]
    X, y = digits.data[order] / 16.0, digits.target[order]
    split = int(0.8 * len(y))
    X_train, y_train, X_test, y_test = X[:split], y[:split], X[split:], y[split:]
    Y_train = np.eye(10)[y_train]
    print(f"MLP 64-{args.hidden}-10 (tanh) on {len(y_train)} training and {len(y_test)} test digits, "
          f"{args.epochs} epochs of Adam; FGSM with eps = {args.eps}")

    code = adjoint_source(adversarial_loss, wrt="params")
    print("\nThe generated gradient of the adversarial loss (its first function; fgsm runs in the "
          "forward pass only):\n")
    print(code[:code.index("\n\n\n# Generated")])
    params0 = initial_parameters(args.hidden, args.seed)
    check_grad(cross_entropy, params0, X_test[:20], np.eye(10)[y_test[:20]], wrt="X")
    check_grad(cross_entropy, params0, X_test[:20], np.eye(10)[y_test[:20]], wrt="params")
    print("\ncheck_grad: the input and parameter gradients match finite differences\n")

    normal, normal_losses = train(cross_entropy, (), X_train, Y_train, args, "normal training")
    robust, robust_losses = train(adversarial_loss, (args.eps,), X_train, Y_train, args,
                                "adversarial training")
    reference = MLPClassifier(hidden_layer_sizes=(args.hidden,), activation="tanh", solver="adam",
                              alpha=0.0, batch_size=args.batch_size, learning_rate_init=args.lr,
                              max_iter=args.epochs, tol=0.0, n_iter_no_change=args.epochs + 1,
                              random_state=args.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference.fit(X_train, y_train)
    sklearn_params = [reference.coefs_[0], reference.intercepts_[0], reference.coefs_[1],
                      reference.intercepts_[1]]
    logits = predict(sklearn_params, X_test)
    probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    same_function = np.allclose(probabilities, reference.predict_proba(X_test))
    print(f"scikit-learn MLPClassifier is the same function as predict(): {same_function}")

    epsilons = [0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2]
    table = {name: [accuracy(p, X_test, y_test, e) for e in epsilons]
             for name, p in (("normal", normal), ("adversarial", robust), ("sklearn", sklearn_params))}
    print("\ntest accuracy under an FGSM attack of size eps")
    print(f"{'eps':>6} {'s2sad normal':>13} {'s2sad adversarial':>18} {'scikit-learn MLP':>17}")
    for i, e in enumerate(epsilons):
        print(f"{e:>6.3f} {table['normal'][i]:>13.3f} {table['adversarial'][i]:>18.3f} "
              f"{table['sklearn'][i]:>17.3f}")
    results = {
        "gradient_code": code,
        "epsilons": epsilons,
        "accuracy": table,
        "clean_accuracy": {k: v[0] for k, v in table.items()},
        "adversarial_accuracy": {name: accuracy(p, X_test, y_test, args.eps) for name, p in
                                 (("normal", normal), ("adversarial", robust),
                                  ("sklearn", sklearn_params))},
        "loss_history": {"normal": normal_losses, "adversarial": robust_losses},
        "same_function": bool(same_function),
    }
    adv = results["adversarial_accuracy"]
    print(f"\nat eps = {args.eps}: the adversarially trained model keeps {adv['adversarial']:.3f} "
          f"accuracy,\nthe normally trained one {adv['normal']:.3f} (scikit-learn's {adv['sklearn']:.3f})")
    results["plot"] = plot(args.out, epsilons, table, normal, robust, X_test, y_test, args.eps)
    print(f"\nwrote {results['plot']}")
    return results


def plot(out, epsilons, table, normal, robust, X, y, eps):
    """Accuracy against eps, and a few digits with their attacked versions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig = plt.figure(figsize=(13, 4.4))
    grid = fig.add_gridspec(3, 9, width_ratios=[1.1] * 3 + [0.25] + [1] * 5)
    ax = fig.add_subplot(grid[:, :3])
    ax.plot(epsilons, table["normal"], "o-", label="s2sad, normal training")
    ax.plot(epsilons, table["adversarial"], "o-", label=f"s2sad, adversarial training (eps {eps})")
    ax.plot(epsilons, table["sklearn"], "k.--", label="scikit-learn MLPClassifier")
    ax.set(xlabel="attack size eps", ylabel="test accuracy", title="accuracy under FGSM", ylim=(0, 1.02))
    ax.legend(loc="lower left")
    Y = np.eye(10)[y[:5]]
    rows = [("clean", X[:5], normal), ("attacked, normal", fgsm(normal, X[:5], Y, eps), normal),
            ("attacked, robust", fgsm(robust, X[:5], Y, eps), robust)]
    for r, (name, images, params) in enumerate(rows):
        labels = np.argmax(predict(params, images), axis=1)
        for i in range(5):
            cell = fig.add_subplot(grid[r, 4 + i])
            cell.imshow(images[i].reshape(8, 8), cmap="gray_r", vmin=0, vmax=1, interpolation="nearest")
            cell.set_xticks([])
            cell.set_yticks([])
            cell.set_title(f"{labels[i]}", color="k" if labels[i] == y[i] else "red", fontsize=10, pad=2)
            if i == 0:
                cell.set_ylabel(name, fontsize=9)
    fig.suptitle(f"left: FGSM accuracy;  right: test digits, each titled by the model's prediction "
                 f"(red: wrong), attack eps {eps}", fontsize=10)
    fig.tight_layout()
    path = out / "adversarial.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
