"""L2-regularised logistic regression on a Dask data set larger than the workers' memory.

The loss is plain NumPy code; s2sad's generated gradient, given Dask arrays, builds a
lazy Dask graph that a 2-worker ``dask.distributed.LocalCluster`` computes chunk by
chunk: the data (generated chunk by chunk from a seed) are never held in memory whole.
L-BFGS (``scipy.optimize.minimize``) drives the fit; each loss-and-gradient evaluation is
one pass over the data.  The same code fitted on an in-memory subsample is checked
against scikit-learn's ``LogisticRegression`` on that subsample (the same objective).
Run: ``python examples/dask_logistic.py [--quick] [--rows N] [--out DIR]``
(needs the ``dask`` and ``examples`` extras).
"""
from __future__ import annotations

import argparse
import pathlib
import time
from functools import partial

import numpy as np

from s2sad import adjoint_source, value_and_grad


def loss(w, b, X, y, lam):
    """Mean logistic loss of ``X @ w + b`` against labels y in {0, 1}, plus (lam / 2) |w|^2."""
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * lam * np.sum(w ** 2)


def make_data(rows: int, features: int, chunk: int, seed: int):
    """Lazy Dask arrays X (rows x features) and y (labels of a noisy linear model), made
    chunk by chunk from ``seed`` (each chunk is generated again whenever it is read)."""
    import dask.array as da

    w_true = np.random.default_rng(seed).normal(size=features)
    state = da.random.RandomState(seed)
    X = state.standard_normal((rows, features), chunks=(chunk, features))
    noise = state.logistic(size=rows, chunks=chunk)
    y = (X @ w_true + noise > 0).astype(float)
    return X, y, w_true


def fit(X, y, lam: float, max_iter: int, label: str, compute):
    """Minimise the loss by L-BFGS with s2sad's gradient on Dask arrays, ``compute`` turning
    the lazy results into NumPy values; a progress bar over iterations.  Returns
    (w, b, loss per iteration, seconds per evaluation)."""
    from scipy.optimize import minimize
    from tqdm import tqdm

    features = X.shape[1]
    step = value_and_grad(loss, wrt=("w", "b"))
    seconds: list[float] = []

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        start = time.perf_counter()
        value, (dw, db) = step(w, b, X, y, lam)  # lazy: a Dask graph, nothing computed yet
        value, dw, db = compute(value, dw, db)  # one pass over the data
        seconds.append(time.perf_counter() - start)
        return float(value), np.append(dw, db)

    losses: list[float] = []
    bar = tqdm(total=max_iter, desc=label, disable=None)

    def progress(intermediate_result) -> None:  # (scipy passes the result under this name)
        losses.append(float(intermediate_result.fun))
        bar.set_postfix_str(f"loss {intermediate_result.fun:.5f}", refresh=False)
        bar.update()

    theta0 = np.zeros(features + 1)
    losses.append(objective(theta0)[0])
    result = minimize(objective, theta0, jac=True, method="L-BFGS-B", callback=progress,
                      options={"maxiter": max_iter, "gtol": 1e-8, "ftol": 1e-12})
    bar.close()
    return result.x[:-1], float(result.x[-1]), losses, seconds


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="50,000 rows, 10 features, 8 iterations: under a minute")
    parser.add_argument("--rows", type=int, default=None, help="default 20,000,000, quick 50,000")
    parser.add_argument("--features", type=int, default=None, help="default 20, quick 10")
    parser.add_argument("--chunk", type=int, default=None,
                        help="rows per chunk (default 200,000, quick 12,500)")
    parser.add_argument("--lam", type=float, default=1e-3, help="L2 regularisation strength")
    parser.add_argument("--iterations", type=int, default=None, help="L-BFGS iterations (default 50, quick 8)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="500MiB", help="memory limit of each worker")
    parser.add_argument("--subsample", type=int, default=None,
                        help="rows of the in-memory subsample checked against scikit-learn "
                             "(default 20,000, quick 5,000)")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).parent / "output",
                        help="folder for the PNG plot (default examples/output/)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    defaults = {"rows": (50_000, 20_000_000), "features": (10, 20), "chunk": (12_500, 200_000),
                "iterations": (8, 50), "subsample": (5_000, 20_000)}
    for name, (quick, full) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


def main(argv: list[str] | None = None) -> dict:
    """Fit on the cluster, check against scikit-learn, plot; return the measured numbers."""
    import dask
    import dask.array as da
    from dask.utils import parse_bytes
    from distributed import Client, LocalCluster

    args = parse_args(argv)
    X, y, w_true = make_data(args.rows, args.features, args.chunk, args.seed)
    data_bytes = X.nbytes + y.nbytes
    limit = parse_bytes(args.worker_memory)
    print(f"logistic regression: {args.rows:,} rows x {args.features} features in chunks of "
          f"{args.chunk:,} rows ({data_bytes / 2 ** 20:,.0f} MiB of data; {args.workers} workers "
          f"of {limit / 2 ** 20:,.0f} MiB each)")
    print("\nThe gradient s2sad generates (plain NumPy code; given Dask arrays, it builds a Dask graph):\n")
    code = adjoint_source(loss, wrt=("w", "b"))
    print(code)

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=limit,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        # 1. The check: the same fit on an in-memory subsample against scikit-learn's.
        sub = min(args.subsample, args.rows)
        X_sub, y_sub = client.compute([X[:sub], y[:sub]], sync=True)
        # (in memory: computed by threads in this process, not on the cluster)
        w_sub, b_sub, _, _ = fit(da.from_array(X_sub, chunks=(max(sub // 4, 1), -1)),
                                 da.from_array(y_sub, chunks=max(sub // 4, 1)),
                                 args.lam, 200, "subsample", partial(dask.compute, scheduler="threads"))
        reference = sklearn_fit(X_sub, y_sub, args.lam)
        difference = float(np.max(np.abs(np.append(w_sub, b_sub) - reference)) / np.max(np.abs(reference)))
        agrees = difference < 1e-3
        print(f"subsample of {sub:,} rows: largest difference from scikit-learn's coefficients, "
              f"relative to the largest: {difference:.1e} ({'agrees' if agrees else 'DIFFERS'})")

        # 2. The fit on all the data, chunk by chunk on the workers.
        w, b, losses, seconds = fit(X, y, args.lam, args.iterations, "all rows",
                                    lambda *values: client.compute(list(values), sync=True))
        peak = _peak_worker_memory(client)
    per_gradient = float(np.median(seconds))
    cosine = float(w @ w_true / (np.linalg.norm(w) * np.linalg.norm(w_true)))
    print(f"final loss {losses[-1]:.5f} after {len(losses) - 1} iterations ({len(seconds)} gradient "
          f"evaluations, {per_gradient:.2f} s each, median); cosine(w, true weights) {cosine:.4f}")
    if peak:
        print(f"peak resident memory of a worker process: {peak / 2 ** 20:,.0f} MiB (limit {limit / 2 ** 20:,.0f} MiB, "
              f"data {data_bytes / 2 ** 20:,.0f} MiB)")
    path = plot(args.out, losses, w, w_true, reference[:-1], args)
    if path:
        print(f"\nwrote {path}")
    return {"gradient_code": code, "losses": losses, "w": w, "b": b, "sklearn_difference": difference,
            "agrees_with_sklearn": agrees, "seconds_per_gradient": per_gradient, "cosine": cosine,
            "data_bytes": data_bytes, "worker_memory": limit, "peak_worker_memory": peak, "plot": path}


def sklearn_fit(X: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """scikit-learn's coefficients and intercept for the same objective: its C multiplies
    the summed loss against (1/2) |w|^2, so C = 1 / (lam n)."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0 / (lam * len(y)), tol=1e-10, max_iter=10_000).fit(X, y)
    return np.append(model.coef_[0], model.intercept_[0])


def _peak_worker_memory(client) -> int | None:
    """The largest peak resident memory of a worker process since it started, in bytes
    (None where the system does not tell)."""
    try:
        import resource

        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    except (ImportError, OSError):
        return None
    return max(peaks.values(), default=None)


def plot(out, losses, w, w_true, w_sklearn, args):
    """The loss per L-BFGS iteration, and the fitted weights against the true ones."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return None
    out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    axes[0].plot(losses, "o-", markersize=3)
    axes[0].set(xlabel="L-BFGS iteration", ylabel="regularised logistic loss", yscale="log",
                title=f"{args.rows:,} rows on {args.workers} Dask workers")
    scale = np.linalg.norm(w) / np.linalg.norm(w_true)
    axes[1].plot(w_true * scale, w, "o", label="all rows (s2sad on Dask)")
    axes[1].plot(w_true * scale, w_sklearn, "x", label=f"subsample (scikit-learn)")
    axes[1].set(xlabel="true weights (scaled)", ylabel="fitted weights", title="weights")
    axes[1].legend()
    fig.tight_layout()
    path = out / "dask_logistic.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
