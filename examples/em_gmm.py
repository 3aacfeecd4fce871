"""EM for a Gaussian mixture on the iris flowers, with an M-step driven by s2sad gradients.

The E-step computes each flower's responsibilities (the posterior over the components);
the M-step objective, the expected complete-data log-likelihood Q, uses them through
``stop_gradient``, so no gradient flows back into the E-step.  At the current parameters
the gradient of Q is then exactly the gradient of the log-likelihood (Fisher's identity);
without ``stop_gradient`` it is the gradient of another function, and ascent ends elsewhere.
Run: ``python examples/em_gmm.py [--quick] [--features 2|4] [--out DIR]``.
"""
from __future__ import annotations

import argparse
import pathlib
import warnings

import numpy as np

from s2sad import adjoint_source, check_grad, grad, stop_gradient, value_and_grad



# --- the model: the functions s2sad differentiates ------------------------------------------

def precision_cholesky(params):
    """Upper-triangular P_k with a positive diagonal; component k's precision matrix is P_k P_k^T."""
    d = params["means"].shape[1]
    strictly_upper = np.triu(np.ones((d, d)), 1)
    diagonal = np.exp(params["log_diagonal"])[:, :, None] * np.eye(d)
    return params["off_diagonal"] * strictly_upper + diagonal


def log_weights(params):
    """log pi_k: a log-softmax of unconstrained logits, so the weights stay positive and sum to 1."""
    a = params["logits"]
    z = a - stop_gradient(np.max(a))
    return z - np.log(np.sum(np.exp(z)))


def log_joint(params, X):
    """log p(x_n, z_n = k) = log pi_k + log N(x_n | mu_k, Sigma_k), an array of shape (n, K)."""
    d = X.shape[1]
    diff = X[None, :, :] - params["means"][:, None, :]  # (K, n, d)
    y = diff @ precision_cholesky(params)  # whitened: |y|^2 is the Mahalanobis distance
    log_det = np.sum(params["log_diagonal"], axis=1)  # log det P_k = 1/2 log det precision_k
    log_pdf = log_det[:, None] - 0.5 * np.sum(y ** 2, axis=2) - 0.5 * d * np.log(2 * np.pi)
    return (log_weights(params)[:, None] + log_pdf).T


def responsibilities(log_p):
    """The E-step: p(z_n = k | x_n), a softmax of the log joint over the components."""
    p = np.exp(log_p - np.max(log_p, axis=1, keepdims=True))
    return p / np.sum(p, axis=1, keepdims=True)


def m_step_objective(params, X):
    """Q: the expected complete-data log-likelihood per point, responsibilities held constant."""
    log_p = log_joint(params, X)
    r = stop_gradient(responsibilities(log_p))
    return np.mean(np.sum(r * log_p, axis=1))


def m_step_objective_without_stop_gradient(params, X):
    """The same expression, but the gradient also flows into the E-step."""
    log_p = log_joint(params, X)
    r = responsibilities(log_p)
    return np.mean(np.sum(r * log_p, axis=1))


def log_likelihood(params, X):
    """Mean log p(x_n) = log sum_k p(x_n, z_n = k), the quantity EM increases."""
    log_p = log_joint(params, X)
    m = np.max(log_p, axis=1, keepdims=True)
    return np.mean(m[:, 0] + np.log(np.sum(np.exp(log_p - m), axis=1)))


# --- the driver --------------------------------------------------------------------------------

def flat(tree: dict) -> np.ndarray:
    return np.concatenate([np.ravel(v) for v in tree.values()])


def initial_parameters(X: np.ndarray, k: int, seed: int) -> tuple[dict, dict]:
    """From a k-means clustering: our parameters, and the same start for scikit-learn."""
    from sklearn.cluster import KMeans

    labels = KMeans(k, n_init=10, random_state=seed).fit_predict(X)
    weights = np.bincount(labels, minlength=k) / len(X)
    means = np.stack([X[labels == j].mean(axis=0) for j in range(k)])
    covariances = np.stack([np.cov(X[labels == j].T, bias=True) for j in range(k)])
    # precision = P P^T with P = inverse(cholesky(covariance))^T, upper triangular
    P = np.transpose(np.linalg.inv(np.linalg.cholesky(covariances)), (0, 2, 1))
    d = X.shape[1]
    params = {
        "logits": np.log(weights),
        "means": means,
        "off_diagonal": P * np.triu(np.ones((d, d)), 1),
        "log_diagonal": np.log(np.diagonal(P, axis1=1, axis2=2)),
    }
    sklearn_init = {"weights_init": weights, "means_init": means,
                    "precisions_init": np.linalg.inv(covariances)}
    return params, sklearn_init


def covariances(params: dict) -> np.ndarray:
    P = precision_cholesky(params)
    return np.linalg.inv(P @ np.transpose(P, (0, 2, 1)))


def gradient_em(objective, params: dict, X: np.ndarray, iterations: int, lr: float, label: str):
    """Each iteration: the E-step inside ``objective``, then one Adam ascent step on Q.

    The learning rate decays geometrically to 1% of ``lr`` so the last steps settle.
    """
    from tqdm import tqdm

    step = value_and_grad(objective, wrt="params")
    params = {k: v.copy() for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(v) for k, v in params.items()}
    history = [log_likelihood(params, X)]
    bar = tqdm(total=iterations, desc=label, disable=None)
    for t in range(1, iterations + 1):
        _, g = step(params, X)
        rate = lr * 0.01 ** ((t - 1) / iterations)
        for k in params:  # Adam, going up
            m[k] = 0.9 * m[k] + 0.1 * g[k]
            v[k] = 0.999 * v[k] + 0.001 * g[k] ** 2
            m_hat, v_hat = m[k] / (1 - 0.9 ** t), v[k] / (1 - 0.999 ** t)
            params[k] = params[k] + rate * m_hat / (np.sqrt(v_hat) + 1e-8)
        history.append(log_likelihood(params, X))
        bar.set_postfix_str(f"log-likelihood {history[-1]:.5f}", refresh=False)
        bar.update()
    bar.close()
    return params, history


def sklearn_em(X: np.ndarray, k: int, init: dict, max_iter: int = 1000):
    """scikit-learn's GaussianMixture from the same start, one EM iteration at a time."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    model = GaussianMixture(k, covariance_type="full", reg_covar=0.0, max_iter=1, warm_start=True,
                            tol=0.0, **init)
    history = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(max_iter):
            model.fit(X)
            history.append(model.score(X))
            if len(history) > 1 and abs(history[-1] - history[-2]) < 1e-12:
                break
    return model, history


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2 features and 200 iterations: a few seconds")
    parser.add_argument("--features", type=int, choices=(2, 4), default=None,
                        help="2: petal length and width; 4: all (default 4, quick 2)")
    parser.add_argument("--iterations", type=int, default=None, help="default 1000, quick 200")
    parser.add_argument("--lr", type=float, default=0.02, help="Adam learning rate")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).parent / "output",
                        help="folder for the PNG plot (default examples/output/)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.features is None:
        args.features = 2 if args.quick else 4
    if args.iterations is None:
        args.iterations = 200 if args.quick else 1000
    return args


def main(argv: list[str] | None = None) -> dict:
    """Fit, compare with scikit-learn, plot; return the measured numbers (the tests check them)."""
    from sklearn.datasets import load_iris
    from sklearn.metrics import adjusted_rand_score

    args = parse_args(argv)
    iris = load_iris()
    columns = [2, 3] if args.features == 2 else [0, 1, 2, 3]
    X, species = iris.data[:, columns], iris.target
    K = 3
    print(f"Gaussian mixture, {K} components with full covariances, on {len(X)} iris flowers "
          f"({', '.join(iris.feature_names[c] for c in columns)})")
    params0, sklearn_init = initial_parameters(X, K, args.seed)

    # The generated gradient of Q: the E-step appears only in the forward pass.
    code = adjoint_source(m_step_objective, wrt="params")
    print("\nThe gradient of the M-step objective (its first function):\n")
    print(code[:code.index("\n\n\n# Generated")])
    check_grad(log_likelihood, params0, X, wrt="params")
    print("\ncheck_grad: the generated gradient of log_likelihood matches finite differences")

    # What stop_gradient changes, at the k-means start.
    with_sg = flat(grad(m_step_objective, wrt="params")(params0, X))
    without_sg = flat(grad(m_step_objective_without_stop_gradient, wrt="params")(params0, X))
    of_loglik = flat(grad(log_likelihood, wrt="params")(params0, X))
    fisher_error = float(np.max(np.abs(with_sg - of_loglik)))
    difference = float(np.linalg.norm(without_sg - with_sg))
    print(f"at the start: |grad Q - grad log-likelihood|_max = {fisher_error:.1e} (Fisher's identity)")
    print(f"              |grad Q without stop_gradient - grad Q| = {difference:.4f} "
          f"(|grad Q| = {np.linalg.norm(with_sg):.4f})\n")

    params, history = gradient_em(m_step_objective, params0, X, args.iterations, args.lr, "EM")
    wrong, wrong_history = gradient_em(m_step_objective_without_stop_gradient, params0, X,
                                       args.iterations, args.lr, "EM without stop_gradient")
    model, sklearn_history = sklearn_em(X, K, sklearn_init)

    ours = np.argmax(log_joint(params, X), axis=1)
    theirs = model.predict(X)
    wrong_labels = np.argmax(log_joint(wrong, X), axis=1)
    at_optimum = np.linalg.norm(flat(grad(m_step_objective, wrt="params")(params, X)))
    wrong_at_optimum = np.linalg.norm(flat(grad(m_step_objective_without_stop_gradient,
                                                wrt="params")(params, X)))
    results = {
        "gradient_code": code,
        "fisher_error": fisher_error,
        "gradient_difference": difference,
        "log_likelihood": history[-1],
        "history": history,
        "sklearn_log_likelihood": sklearn_history[-1],
        "sklearn_iterations": len(sklearn_history),
        "sklearn_history": sklearn_history,
        "ari_vs_sklearn": adjusted_rand_score(theirs, ours),
        "ari_vs_species": adjusted_rand_score(species, ours),
        "sklearn_ari_vs_species": adjusted_rand_score(species, theirs),
        "without_stop_gradient_log_likelihood": wrong_history[-1],
        "without_stop_gradient_ari_vs_species": adjusted_rand_score(species, wrong_labels),
    }
    print(f"\n{'':30} {'log-likelihood':>15} {'ARI vs species':>15}")
    for name, key, ari_key, iterations in (
            ("s2sad gradient EM", "log_likelihood", "ari_vs_species", args.iterations),
            ("scikit-learn GaussianMixture", "sklearn_log_likelihood", "sklearn_ari_vs_species",
             len(sklearn_history)),
            ("s2sad, without stop_gradient", "without_stop_gradient_log_likelihood",
             "without_stop_gradient_ari_vs_species", args.iterations)):
        print(f"{name:30} {results[key]:>15.6f} {results[ari_key]:>15.3f}   ({iterations} iterations)")
    print(f"log-likelihood difference from scikit-learn: "
          f"{results['log_likelihood'] - results['sklearn_log_likelihood']:.1e}; adjusted Rand index "
          f"between the two clusterings: {results['ari_vs_sklearn']:.3f}")
    print(f"at the EM solution |grad Q| = {at_optimum:.1e}, but without stop_gradient "
          f"|grad| = {wrong_at_optimum:.3f}:\nEM's fixed point is not a stationary point of that function")

    results["plot"] = plot(args.out, X, columns, iris.feature_names, ours, params, model,
                           history, wrong_history, sklearn_history)
    print(f"\nwrote {results['plot']}")
    return results


def plot(out, X, columns, names, labels, params, model, history, wrong_history, sklearn_history):
    """The clusters with their covariance ellipses, and the log-likelihood per iteration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    i, j = (0, 1) if len(columns) == 2 else (2, 3)  # plot petal length against petal width
    ax = axes[0]
    ax.scatter(X[:, i], X[:, j], c=[f"C{c}" for c in labels], s=14, alpha=0.7)
    angle = np.linspace(0, 2 * np.pi, 100)
    circle = np.stack([np.cos(angle), np.sin(angle)])
    for means, covs, style, name in (
            (model.means_, model.covariances_, dict(color="0.6", lw=4, alpha=0.6), "scikit-learn"),
            (params["means"], covariances(params), dict(color="k", lw=1, ls="--"), "s2sad")):
        for k in range(len(means)):
            block = covs[k][np.ix_([i, j], [i, j])]
            ellipse = means[k][[i, j], None] + 2 * np.linalg.cholesky(block) @ circle
            ax.plot(*ellipse, **style, label=f"{name}, 2 sd" if k == 0 else None)
    ax.set(xlabel=names[columns[i]], ylabel=names[columns[j]],
           title="clusters found by s2sad gradient EM")
    ax.legend(loc="upper left")
    ax = axes[1]
    ax.plot(np.arange(len(history)), history, label="s2sad gradient EM (stop_gradient)")
    ax.plot(np.arange(len(wrong_history)), wrong_history, label="without stop_gradient")
    ax.plot(np.arange(1, len(sklearn_history) + 1), sklearn_history, "k.", ms=4,
            label="scikit-learn EM")
    ax.set(xscale="symlog", xlabel="iteration", ylabel="mean log-likelihood",
           title="log-likelihood per iteration")
    lo = min(history[0], sklearn_history[0])
    ax.set_ylim(lo - 0.05 * (history[-1] - lo), history[-1] + 0.15 * (history[-1] - lo))
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = out / "em_gmm.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
