#!/usr/bin/env python3
"""Time code generation, cold and from the disk cache, for functions of n lines.

    python benchmarks/generation.py               # n = 10, 100, 300, 1000
    python benchmarks/generation.py --sizes 1000 --repeat 5

The function is the chain ``h = np.tanh(W @ h) + 0.1 * h`` repeated n times.  Each time
is measured inside a fresh Python process (after ``import numpy, s2sad`` and the user's
module): ``grad(f)``, then its first call:

* cold: the disk cache is off (``S2SAD_CACHE=0``): the compiler runs (libcst loads), and
  the first call generates the code specialised to its arguments' shapes;
* warm: a previous process stored the generated code (both): this one loads it.

The median over ``--repeat`` processes is shown, with wall-clock time (other processes
holding the CPU count) and, for the cold processes, the process's CPU time, from which the
cost per primitive between the smallest and the largest size is computed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """\
import json, sys, time
import numpy as np
import chain, s2sad
x = np.linspace(-1.0, 1.0, 8)
start, start_cpu = time.perf_counter(), time.process_time()
g = s2sad.grad(chain.f)
made, made_cpu = time.perf_counter(), time.process_time()
g(chain.W, x)
print(json.dumps({"grad": made - start, "call": time.perf_counter() - made, "compiled": "libcst" in sys.modules,
                  "grad_cpu": made_cpu - start_cpu, "call_cpu": time.process_time() - made_cpu}))
"""


#: W @ h, np.tanh, 0.1 * h and + on each line
PRIMITIVES_PER_LINE = 4


def module(n: int) -> str:
    body = "".join("    h = np.tanh(W @ h) + 0.1 * h\n" for _ in range(n))
    return (f"import numpy as np\n\nW = np.eye(8) * 0.5\n\n\ndef f(W, h):\n{body}"
            f"    return np.sum(h ** 2)\n")


def measure(folder: str, cache: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S2SAD_")}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, folder])
    if cache is None:
        env["S2SAD_CACHE"] = "0"
    else:
        env["S2SAD_CACHE_DIR"] = cache
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=folder, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,300,1000", help="numbers of lines, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="processes per measurement")
    args = parser.parse_args()
    print(f"{'lines':>6} {'cold grad(f)':>13} {'cold call':>10} {'warm grad(f)':>13} {'warm call':>10}   (ms)")
    cold_times: dict[int, list[float]] = {}
    for n in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "chain.py"), "w") as f:
                f.write(module(n))
            cache = os.path.join(folder, "cache")
            cold = [measure(folder, None) for _ in range(args.repeat)]
            measure(folder, cache)  # stores the entry
            warm = [measure(folder, cache) for _ in range(args.repeat)]
            if any(w["compiled"] for w in warm) or not all(c["compiled"] for c in cold):
                raise SystemExit(f"n={n}: the warm processes compiled, or the cold ones did not")
            times = [statistics.median(r[what] for r in runs) * 1e3
                     for runs, what in ((cold, "grad"), (cold, "call"), (warm, "grad"), (warm, "call"),
                                        (cold, "grad_cpu"), (cold, "call_cpu"))]
            print(f"{n:>6} {times[0]:>13.1f} {times[1]:>10.1f} {times[2]:>13.1f} {times[3]:>10.1f}"
                  f"   (cold, CPU time: {times[4]:.1f} and {times[5]:.1f})", flush=True)
            cold_times[n] = times[4:]
    if len(cold_times) > 1:  # the cost that grows with size: fixed costs (imports) cancel
        small, large = min(cold_times), max(cold_times)
        primitives = (large - small) * PRIMITIVES_PER_LINE
        grad, call = ((cold_times[large][i] - cold_times[small][i]) / primitives for i in (0, 1))
        print(f"per primitive, from {small} to {large} lines (CPU time): grad(f) {grad:.3f} ms, "
              f"first call {call:.3f} ms")

if __name__ == "__main__":
    main()
