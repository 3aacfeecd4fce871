"""A binary restricted Boltzmann machine on binarised digits, trained by contrastive divergence.

The CD-k loss is the mean free energy of the data minus the mean free energy of samples from
the model.  The samples come from k Gibbs steps started at the data and are wrapped in
``stop_gradient``: they are fixed draws, so the gradient is exactly the CD update and nothing is
differentiated through the (random, non-differentiable) sampling chain, for which s2sad
generates no code at all.  Compared with scikit-learn's BernoulliRBM from the same weights.
Run: ``python examples/rbm_cd.py [--quick] [--k K] [--out DIR]``.
"""
from __future__ import annotations

import argparse
import pathlib

import numpy as np

from s2sad import adjoint_source, check_grad, stop_gradient, value_and_grad



# --- the model: the functions s2sad differentiates ------------------------------------------

def sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1)


def softplus(x):
    """log(1 + exp(x)), written so that exp never overflows."""
    return np.maximum(x, 0) + np.log(1 + np.exp(-np.abs(x)))


def free_energy(v, W, b, c):
    """F(v) = -b.v - sum_j log(1 + exp(c_j + v.W_j)), one value per row of v."""
    return -v @ b - np.sum(softplus(v @ W + c), axis=1)


def gibbs_chain(v, W, b, c, k, rng):
    """k steps of block Gibbs sampling v -> h -> v, started at v."""
    for _ in range(k):
        h = 1.0 * (rng.random((v.shape[0], W.shape[1])) < sigmoid(v @ W + c))
        v = 1.0 * (rng.random(v.shape) < sigmoid(h @ W.T + b))
    return v


def cd_loss(W, b, c, v_data, k, rng):
    """The contrastive-divergence loss; its gradient is the CD-k update."""
    v_model = stop_gradient(gibbs_chain(v_data, W, b, c, k, rng))
    return np.mean(free_energy(v_data, W, b, c)) - np.mean(free_energy(v_model, W, b, c))


# --- evaluation, the same for both models -----------------------------------------------------

def reconstruction_error(W, b, c, V):
    """Mean squared difference between V and its mean-field reconstruction p(v | E[h | V])."""
    return float(np.mean((V - sigmoid(sigmoid(V @ W + c) @ W.T + b)) ** 2))


def pseudo_likelihood(W, b, c, V, seed):
    """scikit-learn's estimator (BernoulliRBM.score_samples with random_state=seed), averaged.

    One random pixel per image is flipped; D * log sigmoid(F(flipped) - F(v)) estimates the
    log pseudo-likelihood.  The same pixels are flipped for every model and every epoch.
    """
    flip = (np.arange(len(V)), np.random.RandomState(seed).randint(0, V.shape[1], len(V)))
    flipped = V.copy()
    flipped[flip] = 1 - flipped[flip]
    gap = free_energy(flipped, W, b, c) - free_energy(V, W, b, c)
    return float(np.mean(-V.shape[1] * np.logaddexp(0, -gap)))


# --- the driver --------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="400 images, 32 hidden units, 3 epochs: a few seconds")
    parser.add_argument("--hidden", type=int, default=None, help="hidden units (default 100, quick 32)")
    parser.add_argument("--epochs", type=int, default=None, help="default 20, quick 3")
    parser.add_argument("--k", type=int, default=1, help="Gibbs steps per update (CD-k)")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate (as BernoulliRBM's)")
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).parent / "output",
                        help="folder for the PNG plot (default examples/output/)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.hidden is None:
        args.hidden = 32 if args.quick else 100
    if args.epochs is None:
        args.epochs = 3 if args.quick else 20
    return args


def main(argv: list[str] | None = None) -> dict:
    """Train both RBMs, compare, plot; return the measured numbers (the tests check them)."""
    from sklearn.datasets import load_digits
    from sklearn.neural_network import BernoulliRBM
    from tqdm import tqdm

    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    X = 1.0 * (load_digits().data / 16.0 > 0.5)  # binarised 8x8 digits
    X = X[rng.permutation(len(X))[:400 if args.quick else None]]
    n, D = X.shape
    H, bs = args.hidden, args.batch_size
    print(f"binary RBM, {D} visible and {H} hidden units, on {n} binarised digits: CD-{args.k}, "
          f"learning rate {args.lr}, batch size {bs}, {args.epochs} epochs")

    code = adjoint_source(cd_loss, wrt=("W", "b", "c"))
    print("\nThe generated gradient of the CD loss (its first function; no code for gibbs_chain):\n")
    print(code[:code.index("\n\n\n# Generated")])

    # Both models start from the same weights; scikit-learn's is driven batch by batch with
    # partial_fit, which runs exactly the update BernoulliRBM.fit runs (persistent CD-1).
    W = rng.normal(0, 0.01, (D, H))
    b, c = np.zeros(D), np.zeros(H)
    reference = BernoulliRBM(n_components=H, learning_rate=args.lr, batch_size=bs,
                             random_state=args.seed)
    reference.components_ = W.T.copy()
    reference.intercept_hidden_, reference.intercept_visible_ = c.copy(), b.copy()
    reference.h_samples_ = np.zeros((bs, H))
    reference.random_state_ = np.random.RandomState(args.seed)

    def sklearn_params():
        return reference.components_.T, reference.intercept_visible_, reference.intercept_hidden_

    def free_energy_mean(W, b, c, V):
        return np.mean(free_energy(V, W, b, c))

    check_grad(free_energy_mean, W, b, c, X[:20], wrt=("W", "b", "c"))
    mine = pseudo_likelihood(*sklearn_params(), X, args.seed)
    theirs = float(np.mean(reference.score_samples(X)))
    print(f"\ncheck_grad: the generated gradient of the free energy matches finite differences; "
          f"pseudo-likelihood {mine:.6f} = scikit-learn's score_samples {theirs:.6f}\n")

    curves = {"loss": [], "recon": [], "pl": [], "sklearn_recon": [], "sklearn_pl": []}

    def evaluate():
        curves["recon"].append(reconstruction_error(W, b, c, X))
        curves["pl"].append(pseudo_likelihood(W, b, c, X, args.seed))
        curves["sklearn_recon"].append(reconstruction_error(*sklearn_params(), X))
        curves["sklearn_pl"].append(pseudo_likelihood(*sklearn_params(), X, args.seed))

    evaluate()
    step = value_and_grad(cd_loss, wrt=("W", "b", "c"))
    chain_rng = np.random.default_rng(args.seed + 1)
    batches = (n + bs - 1) // bs
    bar = tqdm(total=args.epochs * batches, desc="training", disable=None)
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(n)
        losses = []
        for start in range(0, n, bs):
            batch = X[order[start:start + bs]]
            value, (dW, db, dc) = step(W, b, c, batch, args.k, chain_rng)
            W -= args.lr * dW
            b -= args.lr * db
            c -= args.lr * dc
            losses.append(value)
            reference.partial_fit(batch)
            bar.set_postfix_str(f"epoch {epoch}, CD loss {np.mean(losses):.3f}", refresh=False)
            bar.update()
        curves["loss"].append(float(np.mean(losses)))
        evaluate()
        tqdm.write(f"epoch {epoch:3d}  CD loss {curves['loss'][-1]:7.3f}   reconstruction error "
                   f"{curves['recon'][-1]:.4f} (scikit-learn {curves['sklearn_recon'][-1]:.4f})   "
                   f"pseudo-likelihood {curves['pl'][-1]:8.3f} "
                   f"(scikit-learn {curves['sklearn_pl'][-1]:8.3f})")
    bar.close()

    print(f"\n{'':28} {'reconstruction error':>21} {'pseudo-likelihood':>18}")
    print(f"{'initial weights':28} {curves['recon'][0]:>21.4f} {curves['pl'][0]:>18.3f}")
    print(f"{'s2sad CD-' + str(args.k):28} {curves['recon'][-1]:>21.4f} {curves['pl'][-1]:>18.3f}")
    print(f"{'scikit-learn BernoulliRBM':28} {curves['sklearn_recon'][-1]:>21.4f} "
          f"{curves['sklearn_pl'][-1]:>18.3f}")
    path = plot(args.out, W, reference.components_.T, curves)
    print(f"\nwrote {path}")
    return {"gradient_code": code, "pseudo_likelihood_check": (mine, theirs), "plot": path, **curves}


def plot(out, W, W_sklearn, curves):
    """The first 64 filters of each model, and the curves per epoch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def mosaic(W):  # each filter scaled to [-1, 1], in a grid of 8 columns
        tiles = [np.pad(W[:, j].reshape(8, 8) / np.max(np.abs(W[:, j])), 1, constant_values=np.nan)
                 for j in range(min(64, W.shape[1]))]
        tiles += [np.full((10, 10), np.nan)] * (-len(tiles) % 8)
        return np.block([tiles[i:i + 8] for i in range(0, len(tiles), 8)])

    out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.9), gridspec_kw={"width_ratios": [1, 1, 1.15, 1.15]})
    for ax, weights, name in ((axes[0], W, "s2sad CD"), (axes[1], W_sklearn, "scikit-learn")):
        ax.imshow(mosaic(weights), cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
        ax.set(title=f"{name}: filters", xticks=[], yticks=[])
    epochs = np.arange(len(curves["recon"]))
    axes[2].plot(epochs, curves["recon"], "o-", label="s2sad CD")
    axes[2].plot(epochs, curves["sklearn_recon"], "s--", label="scikit-learn BernoulliRBM")
    axes[2].set(xlabel="epoch", ylabel="mean squared error", title="reconstruction error")
    axes[2].legend()
    axes[3].plot(epochs[1:], curves["pl"][1:], "o-", label="s2sad CD")
    axes[3].plot(epochs[1:], curves["sklearn_pl"][1:], "s--", label="scikit-learn BernoulliRBM")
    axes[3].set(xlabel="epoch", ylabel="per image", title="pseudo-log-likelihood")
    axes[3].legend()
    fig.tight_layout()
    path = out / "rbm_cd.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
