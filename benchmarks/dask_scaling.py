#!/usr/bin/env python3
"""How s2sad's gradient on Dask arrays scales with the number of rows (run on purpose).

    python benchmarks/dask_scaling.py                          # 10^5 .. 10^7 rows, 1 and 2 workers
    python benchmarks/dask_scaling.py --rows 1e5,1e6,1e7,1e8   # the target: up to 10^8 rows
    python benchmarks/dask_scaling.py --features 20 --chunk 250000 --worker-memory 1GiB

For each size, the data (``rows x features`` float64, normal, and labels of a noisy linear
model) are generated lazily, chunk by chunk from a seed, and the gradient of the
L2-regularised logistic loss of examples/dask_logistic.py is computed on a
``LocalCluster`` of 1 and of 2 worker processes (one thread each, a memory limit each).
Reported: seconds per gradient (the median of ``--repeats`` evaluations, each generating
the data again), microseconds per row, and the peak resident memory of a worker process
since it started (sizes run in increasing order on a fresh cluster per worker count):
time per row should stay about constant, and memory per worker bounded by the chunk
size, not the data size.
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))


def measure(client, rows: int, features: int, chunk: int, repeats: int) -> tuple[float, int | None]:
    """Median seconds per gradient evaluation and the peak worker memory, on ``client``."""
    from dask_logistic import _peak_worker_memory, loss, make_data

    from s2sad import grad

    X, y, _ = make_data(rows, features, chunk, seed=0)
    gradient = grad(loss, wrt=("w", "b"))
    w, b = np.zeros(features), 0.0
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        dw, db = gradient(w, b, X, y, 1e-3)
        client.compute([dw, db], sync=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times), _peak_worker_memory(client)


def main(argv: list[str] | None = None) -> list[dict]:
    from dask.utils import parse_bytes
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e5,1e6,1e7", help="comma-separated row counts")
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=250_000, help="rows per chunk")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--worker-memory", default="1GiB")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [int(float(r)) for r in args.rows.split(",")]
    limit = parse_bytes(args.worker_memory)
    print(f"gradient of the L2-regularised logistic loss, {args.features} features, chunks of "
          f"{args.chunk:,} rows ({args.chunk * args.features * 8 / 2 ** 20:,.0f} MiB), worker memory "
          f"limit {limit / 2 ** 20:,.0f} MiB, median of {args.repeats}")
    header = f"| {'rows':>13} | {'chunks':>6} | {'workers':>7} | {'s / gradient':>12} | {'us / row':>8} | {'peak MiB / worker':>17} |"
    print(header)
    print("|" + "|".join("-" * (len(cell)) for cell in header.split("|")[1:-1]) + "|")
    results = []
    for workers in [int(n) for n in args.workers.split(",")]:
        with LocalCluster(n_workers=workers, threads_per_worker=1, memory_limit=limit,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            for rows in sizes:
                chunk = min(args.chunk, rows)
                seconds, peak = measure(client, rows, args.features, chunk, args.repeats)
                chunks = -(-rows // chunk)
                peak_mib = "?" if peak is None else f"{peak / 2 ** 20:,.0f}"
                print(f"| {rows:>13,} | {chunks:>6} | {workers:>7} | {seconds:>12.2f} | "
                      f"{seconds / rows * 1e6:>8.2f} | {peak_mib:>17} |", flush=True)
                results.append({"rows": rows, "chunks": chunks, "workers": workers, "seconds": seconds,
                                "peak_worker_memory": peak})
    return results


if __name__ == "__main__":
    main()
