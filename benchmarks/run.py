#!/usr/bin/env python3
"""Time s2sad's gradients against a handwritten NumPy gradient and other AD systems.

    python benchmarks/run.py                      # every workload, every installed system
    python benchmarks/run.py --quick              # fewer repetitions, under a minute
    python benchmarks/run.py --workloads mlp,scalar --systems s2sad,torch
    python benchmarks/run.py --json results.json  # also write the results as JSON

Everything runs in one process on one thread.  Per workload, every system's
gradient is first checked against the handwritten one (rtol 1e-6); a wrong one
shows MISMATCH instead of a time.  Then each system is warmed up and timed in
interleaved rounds: every round runs every system once (a batch of calls sized
to take a few milliseconds), in an order rotated from round to round, so
machine noise hits all systems alike.  Reported: the median time per call, the
median over rounds of the ratio to the handwritten gradient timed in the same
round, the ratio to the plain function, the spread (interquartile range over
median), and the peak memory of one call under tracemalloc as a ratio to the
handwritten gradient's.

Times are CPU time of the process by default (``--clock wall`` for elapsed
time), so time during which other processes hold the CPU is not counted; the
closing line says how contended the run was.  glibc malloc is
told to keep freed memory (``--system-malloc`` to leave it alone), so that
systems that allocate more are not charged for the machine's page faults; both
choices are printed in the header.

The peers run from ``impl_*.py`` and are n/a, with the reason, when they are
not installed or fail to import.  For a separate environment with all of them:

    python3 -m venv /tmp/bench && /tmp/bench/bin/pip install -e . numpy autograd "jax[cpu]" tangent-ad
    /tmp/bench/bin/pip install torch==2.13.0
"""
from __future__ import annotations

import os
import sys

# One thread everywhere.  This must happen before NumPy (or any peer) is imported.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["TANGENT_DISK_CACHE"] = "0"  # compile times must not come from tangent's disk cache
os.environ["S2SAD_CACHE"] = "0"  # nor s2sad's (benchmarks/generation.py times that cache)



def keep_freed_memory() -> str:
    """Ask glibc malloc to keep freed memory instead of returning it to the OS at once.

    By default glibc serves arrays of more than ~128 KiB with mmap (or trims the heap top) and
    hands the pages back when they are freed, so the next array of that size page-faults them in
    again.  On a VM where a page fault is expensive that cost exceeds the arithmetic and swamps
    the difference between AD systems, in favour of whatever allocates least.  With the heap kept,
    every system reuses memory as it would on a machine with cheap page faults.
    """
    if "--system-malloc" in sys.argv[1:]:
        return "glibc malloc with its default settings (--system-malloc)"
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        ok = (libc.mallopt(-1, 1 << 30)      # M_TRIM_THRESHOLD: never trim the heap top
              and libc.mallopt(-3, 32 << 20))  # M_MMAP_THRESHOLD: heap for blocks up to 32 MiB
    except (OSError, AttributeError) as exc:
        return f"default malloc (could not tune it: {exc})"
    if not ok:
        return "default malloc (mallopt refused)"
    return "glibc malloc keeps freed memory (M_TRIM_THRESHOLD 1 GiB, M_MMAP_THRESHOLD 32 MiB)"


MALLOC = keep_freed_memory()

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

import s2sad  # noqa: E402
import s2sad.api  # noqa: E402
from benchmarks.workloads import WORKLOADS, Workload  # noqa: E402

warnings.filterwarnings("ignore", category=SyntaxWarning)   # tangent's generated code
warnings.filterwarnings("ignore", category=DeprecationWarning)

RTOL = 1e-6
ATOL_SCALE = 1e-9   # atol = ATOL_SCALE * max|reference|, for entries that cancel to about zero

# Timed columns, in table order.  "group" is what --systems selects.
COLUMNS = ["s2sad", "s2sad.generic", "s2sad.vag", "s2sad.jit", "autograd", "torch", "jax", "jax.jit", "tangent"]
GROUP = {"s2sad": "s2sad", "s2sad.generic": "s2sad", "s2sad.vag": "s2sad", "s2sad.jit": "jit", "autograd": "autograd", "torch": "torch",
         "jax": "jax", "jax.jit": "jax", "tangent": "tangent"}
PEERS = {"autograd": ("benchmarks.impl_autograd", "autograd"),
         "torch": ("benchmarks.impl_torch", "torch"),
         "jax": ("benchmarks.impl_jax", "jax"),
         "tangent": ("benchmarks.impl_tangent", "tangent-ad"),
         "jit": ("benchmarks.impl_jit", "numba")}
LABEL = {"plain": "plain function", "handwritten": "handwritten grad", "s2sad": "s2sad grad",
         "s2sad.generic": "s2sad grad, generic (specialize=False)",
         "s2sad.vag": "s2sad value_and_grad", "s2sad.jit": "s2sad jit", "autograd": "autograd", "torch": "torch eager",
         "jax": "jax.grad (no jit)", "jax.jit": "jax.jit(jax.grad)", "tangent": "tangent"}
ARRAY_WORKLOADS = ("softmax_ce", "mlp", "rbm_cd1", "gmm_em", "fgsm")
SPEED_TARGET = {**{w: 1.3 for w in ARRAY_WORKLOADS}, "rnn_loop": 2.0, "scalar": 2.5}
FASTER_THAN = ("autograd", "torch", "tangent")
FIRST_GRAD_TARGET_MS = 50.0
CACHED_TARGET_US = 5.0
MEMORY_TARGET = 1.5
QUICK_RNN_STEPS = 25   # jax.jit unrolls the loop: its compile time grows with the steps


@dataclass
class Settings:
    quick: bool
    rounds: int
    sample_s: float     # a timed batch of calls lasts at least this long
    warmup_s: float
    compile_reps: int
    clock: str = "cpu"


@dataclass
class Entry:
    """One system on one workload."""
    key: str
    status: str = "ok"          # ok | n/a | error | mismatch
    reason: str = ""
    call: Callable[[], Any] | None = None
    extract: Callable[[Any], tuple[Any, ...]] | None = None
    tracked: bool = True        # allocations visible to tracemalloc
    samples: list[float] = field(default_factory=list)     # seconds per call, one per round
    wall: list[float] = field(default_factory=list)        # the same batches by the wall clock
    ratios: list[float] = field(default_factory=list)      # to handwritten, same round
    ratios_plain: list[float] = field(default_factory=list)
    number: int = 1
    max_rel_err: float | None = None
    peak_bytes: int | None = None
    compile_s: float | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    @property
    def spread(self) -> float | None:
        if len(self.samples) < 4:
            return None
        q = statistics.quantiles(self.samples, n=4)
        return (q[2] - q[0]) / statistics.median(self.samples)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status, "reason": self.reason, "median_s": self.median,
            "ratio_handwritten": statistics.median(self.ratios) if self.ratios else None,
            "ratio_plain": statistics.median(self.ratios_plain) if self.ratios_plain else None,
            "iqr_over_median": self.spread, "rounds": len(self.samples), "calls_per_round": self.number,
            "median_wall_s": statistics.median(self.wall) if self.wall else None,
            "max_rel_err": self.max_rel_err, "peak_bytes": self.peak_bytes, "compile_s": self.compile_s,
        }


# ------------------------------------------------------------------------------------------------
# peers
# ------------------------------------------------------------------------------------------------

def load_peers(wanted: set[str]) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """Import the peer modules; returns (modules, why each missing one is n/a, versions)."""
    modules: dict[str, Any] = {}
    missing: dict[str, str] = {}
    versions: dict[str, str] = {}
    for group, (module, dist) in PEERS.items():
        if group not in wanted:
            missing[group] = "not selected (--systems)"
            continue
        try:
            versions[group] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            missing[group] = f"not installed (no distribution '{dist}')"
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                modules[group] = importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any import failure makes the peer n/a
            missing[group] = f"{dist} {versions.pop(group)} fails to import: {_one_line(exc)}"
    if "jax" in versions:
        try:
            versions["jax"] += f" (jaxlib {importlib.metadata.version('jaxlib')})"
        except importlib.metadata.PackageNotFoundError:
            pass
    return modules, missing, versions


def git_state() -> str:
    import subprocess
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=_ROOT, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "s2sad"], cwd=_ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "git state unknown"
    if not head:
        return "git state unknown"
    return f"commit {head}" + (" + uncommitted changes in s2sad/" if dirty else "")


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " | ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------------------------------------
# building and checking
# ------------------------------------------------------------------------------------------------

def build_entries(w: Workload, inputs: dict[str, Any], columns: list[str], peers: dict[str, Any],
                  missing: dict[str, str]) -> dict[str, Entry]:
    args = tuple(inputs.values())
    single = len(w.wrt) == 1
    entries: dict[str, Entry] = {}

    plain = Entry("plain", call=lambda: w.fn(*args))
    hand = Entry("handwritten", call=lambda: w.handwritten(*args), extract=tuple)
    entries["plain"], entries["handwritten"] = plain, hand

    for key in columns:
        e = Entry(key)
        entries[key] = e
        group = GROUP[key]
        if group in missing:
            e.status, e.reason = "n/a", missing[group]
            continue
        try:
            if key in ("s2sad", "s2sad.generic"):
                g = s2sad.grad(w.fn, w.s2sad_wrt, specialize=key == "s2sad")
                e.call = lambda g=g: g(*args)
                e.extract = (lambda r: (r,)) if single else tuple
            elif key == "s2sad.vag":
                vg = s2sad.value_and_grad(w.fn, w.s2sad_wrt)
                e.call = lambda vg=vg: vg(*args)
                e.extract = (lambda r: (r[1],)) if single else (lambda r: tuple(r[1]))
            elif key == "s2sad.jit":
                e.call = peers[group].build(w.fn, w.s2sad_wrt, args)
                e.tracked = False  # numba allocates outside tracemalloc
                e.extract = (lambda r: (r,)) if single else tuple
            else:
                mod = peers[group]
                extra = {"jit": key == "jax.jit"} if group == "jax" else {}
                e.call = mod.build(w.name, inputs, w.wrt, **extra)
                e.extract = mod.to_numpy
                e.tracked = group in ("autograd", "tangent")
        except Exception as exc:  # noqa: BLE001 - reported in the table
            e.status = "error" if group == "s2sad" else "n/a"
            e.reason = _one_line(exc, 2000 if group == "s2sad" else 300)
            e.call = None
    return entries


def compare(got: tuple[Any, ...], ref: tuple[Any, ...]) -> tuple[bool, float]:
    """Whether ``got`` matches ``ref`` (rtol 1e-6), and the largest error relative to max|ref|."""
    if len(got) != len(ref):
        return False, math.inf
    ok, worst = True, 0.0
    for g, r in zip(got, ref):
        g, r = np.asarray(g, dtype=float), np.asarray(r, dtype=float)
        if g.shape != r.shape:
            return False, math.inf
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        ok = ok and bool(np.allclose(g, r, rtol=RTOL, atol=ATOL_SCALE * scale))
        err = float(np.max(np.abs(g - r))) / scale if scale else float(np.max(np.abs(g - r)))
        worst = max(worst, err if err == err else math.inf)
    return ok, worst


def check(entries: dict[str, Entry], plain_value: Any, clock: Callable[[], float]) -> None:
    ref = entries["handwritten"].call()
    for key, e in entries.items():
        if key in ("plain", "handwritten") or e.status != "ok":
            continue
        try:
            start = clock()
            result = e.call()
            first = clock() - start
            got = e.extract(result)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            e.status = "error" if GROUP[key] == "s2sad" else "n/a"
            e.reason = "raised when called: " + _one_line(exc, 2000 if GROUP[key] == "s2sad" else 300)
            e.call = None
            continue
        if key in ("jax.jit", "s2sad.jit"):
            e.compile_s = first
        ok, e.max_rel_err = compare(got, ref)
        if ok and key == "s2sad.vag":
            value_ok, _ = compare((result[0],), (plain_value,))
            if not value_ok:
                ok, e.reason = False, f"value {result[0]!r} differs from the function's {plain_value!r}"
        if not ok:
            e.status = "mismatch"
            e.reason = e.reason or f"max |error| / max|reference| = {e.max_rel_err:.3g}"
            e.call = None


# ------------------------------------------------------------------------------------------------
# timing and memory
# ------------------------------------------------------------------------------------------------

CLOCK = {"cpu": time.process_time, "wall": time.perf_counter}


def _batch(call: Callable[[], Any], number: int, clock: Callable[[], float] = time.perf_counter
           ) -> tuple[float, float]:
    """Seconds per call by ``clock`` and by the wall clock, over ``number`` calls."""
    start_wall, start = time.perf_counter(), clock()
    for _ in range(number):
        call()
    end = clock()
    return (end - start) / number, (time.perf_counter() - start_wall) / number


def time_entries(entries: dict[str, Entry], s: Settings) -> None:
    live = [e for e in entries.values() if e.status == "ok" and e.call is not None]
    for e in live:  # warm up, then size a batch to last about sample_s
        deadline = time.perf_counter() + s.warmup_s
        warm: list[float] = []
        while len(warm) < 3 or time.perf_counter() < deadline:
            warm.append(_batch(e.call, 1)[1])
        per_call = statistics.median(warm[2:])
        e.number = max(1, math.ceil(s.sample_s / max(per_call, 1e-9)))
    hand, plain = entries["handwritten"], entries["plain"]
    gc.collect()
    for r in range(s.rounds):
        shift = r % len(live)
        this_round: dict[str, float] = {}
        for e in live[shift:] + live[:shift]:
            this_round[e.key], wall = _batch(e.call, e.number, CLOCK[s.clock])
            e.wall.append(wall)
        for e in live:
            e.samples.append(this_round[e.key])
            e.ratios.append(this_round[e.key] / this_round[hand.key])
            e.ratios_plain.append(this_round[e.key] / this_round[plain.key])


def gemm_note(w: Workload, inputs: dict[str, Any], torch: Any, s: Settings) -> str:
    """NumPy's and PyTorch's matrix product on the workload's dominant GEMM, timed
    interleaved: when the peer is faster there, that is its BLAS, not its AD."""
    a, b = (inputs[k] for k in w.gemm)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    calls = {"numpy": lambda: a @ b, "torch": lambda: ta @ tb}
    number = max(1, math.ceil(s.sample_s / max(_batch(calls["numpy"], 3)[1], 1e-9)))
    ratios = []
    for _ in range(s.rounds):
        times = {k: _batch(c, number, CLOCK[s.clock])[0] for k, c in calls.items()}
        ratios.append(times["torch"] / times["numpy"])
    return (f"{w.gemm[0]} @ {w.gemm[1]} ({'x'.join(map(str, a.shape))} @ {'x'.join(map(str, b.shape))}): "
            f"torch's matmul takes {statistics.median(ratios):.2f}x NumPy's time (median of {s.rounds} "
            "interleaved rounds; a BLAS difference, not an AD one)")


def measure_memory(entries: dict[str, Entry]) -> None:
    for e in entries.values():
        if e.status != "ok" or e.call is None or not e.tracked:
            continue
        e.call()  # nothing first-time (caches, compilation) in the measured call
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            result = e.call()
            e.peak_bytes = tracemalloc.get_traced_memory()[1] - base
            del result
        finally:
            tracemalloc.stop()


# ------------------------------------------------------------------------------------------------
# the compile workload
# ------------------------------------------------------------------------------------------------

def run_compile(w: Workload, s: Settings, columns: list[str], peers: dict[str, Any],
                missing: dict[str, str]) -> dict[str, Any]:
    inputs = w.inputs(s.quick)
    args = tuple(inputs.values())
    out: dict[str, Any] = {"lines": len(_source_lines(w.fn)), "systems": {}}
    res = out["systems"]
    clock = CLOCK[s.clock]

    if "s2sad" in columns:
        entry: dict[str, Any] = {"status": "ok", "reason": ""}
        try:
            firsts = []
            for _ in range(s.compile_reps):
                s2sad.clear_cache()
                gc.collect()
                start = clock()
                s2sad.grad(w.fn, w.s2sad_wrt)
                firsts.append(clock() - start)
            entry["first_s"] = statistics.median(firsts)
            entry["first_min_s"] = min(firsts)
            entry["first_iqr_over_median"] = _spread(firsts)
            entry["passes_s"] = pass_times(w, max(3, s.compile_reps // 3), clock)
            s2sad.grad(w.fn, w.s2sad_wrt)
            gc.collect()
            start = clock()
            for _ in range(100):
                s2sad.grad(w.fn, w.s2sad_wrt)
            estimate = (clock() - start) / 100
            number = max(100, math.ceil(s.sample_s / estimate))
            cached = []
            for _ in range(max(5, s.rounds)):
                start = clock()
                for _ in range(number):
                    s2sad.grad(w.fn, w.s2sad_wrt)
                cached.append((clock() - start) / number)
            entry["cached_s"] = statistics.median(cached)
            entry["cached_iqr_over_median"] = _spread(cached)
            try:
                s2sad.check_grad(w.fn, *args, wrt=w.s2sad_wrt)
                entry["check"] = "ok (s2sad.check_grad: finite differences)"
            except AssertionError as exc:
                entry["status"], entry["reason"] = "mismatch", _one_line(exc)
        except Exception as exc:  # noqa: BLE001
            entry = {"status": "error", "reason": _one_line(exc, 2000)}
        res["s2sad"] = entry

    if "tangent" in columns:
        if "tangent" in missing:
            res["tangent"] = {"status": "n/a", "reason": missing["tangent"]}
        else:
            mod = peers["tangent"]
            try:
                reps = 1 if s.quick else max(2, s.compile_reps // 10)
                firsts = [mod.compile_once(w.fn, inputs, w.wrt, clock) for _ in range(reps)]
                entry = {"status": "ok", "reason": "", "first_s": statistics.median(firsts)}
                try:
                    g = mod.tangent.grad(w.fn, wrt=tuple(list(inputs).index(n) for n in w.wrt))
                    g(*args)
                except Exception as exc:  # noqa: BLE001
                    entry["reason"] = "its generated gradient fails when called: " + _one_line(exc, 160)
                res["tangent"] = entry
            except Exception as exc:  # noqa: BLE001
                res["tangent"] = {"status": "n/a", "reason": _one_line(exc)}

    if "jax.jit" in columns:
        if "jax" in missing:
            res["jax.jit"] = {"status": "n/a", "reason": missing["jax"]}
        else:
            try:
                reps = 1 if s.quick else max(2, s.compile_reps // 10)
                firsts = [peers["jax"].compile_once(inputs, w.wrt, clock) for _ in range(reps)]
                res["jax.jit"] = {"status": "ok", "reason": "", "first_s": statistics.median(firsts)}
            except Exception as exc:  # noqa: BLE001
                res["jax.jit"] = {"status": "n/a", "reason": _one_line(exc)}
    for key in ("autograd", "torch", "jax"):
        if key in columns:
            res[key] = {"status": "n/a", "reason": "no code generation step (traces at every call)"}
    return out


def pass_times(w: Workload, reps: int, clock: Callable[[], float]) -> dict[str, float] | None:
    """Median seconds per compiler pass for a first grad(f), by wrapping s2sad's pipeline passes."""
    try:
        import s2sad.pipeline as pipeline
        original = pipeline.PIPELINE
        times: dict[str, list[float]] = {p.name: [] for p in original}

        def timed(p: Any) -> Any:
            def run(state: Any) -> None:
                start = clock()
                p.run(state)
                times[p.name].append(clock() - start)
            return pipeline.Pass(p.name, run, p.show)

        pipeline.PIPELINE = tuple(timed(p) for p in original)
        try:
            for _ in range(reps):
                s2sad.clear_cache()
                gc.collect()
                s2sad.grad(w.fn, w.s2sad_wrt)
        finally:
            pipeline.PIPELINE = original
        return {name: statistics.median(ts) for name, ts in times.items() if ts}
    except Exception:  # noqa: BLE001 - the breakdown is optional
        return None


def _source_lines(fn: Callable[..., Any]) -> list[str]:
    import inspect
    return [line for line in inspect.getsource(fn).splitlines() if line.strip()]


def _spread(xs: list[float]) -> float | None:
    if len(xs) < 4:
        return None
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


# ------------------------------------------------------------------------------------------------
# printing
# ------------------------------------------------------------------------------------------------

def fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.2f} us" if t < 1e-5 else f"{t * 1e6:.1f} us"
    if t < 1.0:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def fmt_bytes(n: int) -> str:
    if n < 10 * 1024:
        return f"{n} B"
    if n < 2**20:
        return f"{n / 1024:.0f} KiB"
    return f"{n / 2**20:.2f} MiB"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    right = right if right is not None else set(range(1, len(headers)))
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def cell(e: Entry) -> str:
    if e.status == "mismatch":
        return "!!! MISMATCH !!!"
    if e.status == "error":
        return "FAIL"
    if e.status == "n/a":
        return "n/a"
    return fmt_ratio(statistics.median(e.ratios)) if e.ratios else "-"


def peers_jit_cached(e: Entry) -> float | None:
    """The first call of a new compiled function for the same code: numba loads it from disk."""
    timer = getattr(e.call, "first_call_from_cache", None)
    return timer() if timer is not None else None


def print_workload(w: Workload, entries: dict[str, Entry], notes: list[str]) -> None:
    hand_peak = entries["handwritten"].peak_bytes
    rows = []
    for key, e in entries.items():
        if e.status == "ok":
            mem = ("untracked" if not e.tracked else
                   "-" if e.peak_bytes is None or not hand_peak else
                   f"{e.peak_bytes / hand_peak:.2f}x ({fmt_bytes(e.peak_bytes)})")
            spread = e.spread
            rows.append([LABEL[key], fmt_time(e.median),
                         fmt_ratio(statistics.median(e.ratios)), fmt_ratio(statistics.median(e.ratios_plain)),
                         "-" if spread is None else f"{100 * spread:.1f}%", mem,
                         "ref" if key == "handwritten" else "-" if key == "plain"
                         else f"ok ({e.max_rel_err:.1e})"])
        else:
            text = {"mismatch": "!!! MISMATCH !!!", "error": "FAIL", "n/a": "n/a"}[e.status]
            rows.append([LABEL[key], text, "", "", "", "", text])
    print(table(["system", "median/call", "x hand", "x plain", "IQR/med", "peak mem x hand", "check"],
                rows, right={1, 2, 3, 4, 5}))
    jit = entries.get("jax.jit")
    if jit is not None and jit.compile_s is not None:
        print(f"jax.jit compile (first call: trace + compile + one run): {fmt_time(jit.compile_s)}")
    numba = entries.get("s2sad.jit")
    if numba is not None and getattr(numba.call, "fallback", ""):
        print(f"s2sad jit runs the NumPy code: numba cannot compile {numba.call.fallback}")
    elif numba is not None and numba.compile_s is not None:
        cached = peers_jit_cached(numba)
        print(f"s2sad jit compile (first call: numba compile + one run, empty disk cache): "
              f"{fmt_time(numba.compile_s)}" + (f"; first call from the disk cache: {fmt_time(cached)}"
                                                 if cached is not None else ""))
    for key, e in entries.items():
        if e.status != "ok":
            print(f"  {LABEL[key]}: {e.status.upper()}: {e.reason}")
    for note in notes:
        print(f"  note: {note}")


def print_compile(res: dict[str, Any], w: Workload) -> None:
    rows = []
    for key, e in res["systems"].items():
        if e["status"] != "ok":
            rows.append([LABEL[key], e["status"], "", e["reason"]])
            continue
        first = fmt_time(e.get("first_s"))
        cached = fmt_time(e.get("cached_s")) if "cached_s" in e else "-"
        what = {"s2sad": "s2sad.grad(f), memory cache cleared, disk cache off",
                "tangent": "tangent.grad(f), memory cache cleared, disk cache off",
                "jax.jit": "first call of jax.jit(jax.grad(f)), jax.clear_caches()"}[key]
        extra = "; " + e["reason"] if e.get("reason") else ""
        rows.append([LABEL[key], first, cached, what + extra])
    print(table(["system", "first grad(f)", "cached grad(f)", "what"], rows, right={1, 2}))
    s = res["systems"].get("s2sad")
    if s and s["status"] == "ok":
        spread = s.get("first_iqr_over_median")
        print(f"  s2sad first grad(f): median {fmt_time(s['first_s'])}, min {fmt_time(s['first_min_s'])}"
              + ("" if spread is None else f", IQR/median {100 * spread:.1f}%")
              + f"; cached lookup IQR/median {100 * (s['cached_iqr_over_median'] or 0):.1f}%"
              + f"; gradient check: {s.get('check')}")
    if s and s["status"] == "ok" and s.get("passes_s"):
        print("  s2sad first grad(f) by compiler pass (median): "
              + ", ".join(f"{k} {fmt_time(v)}" for k, v in s["passes_s"].items()))
    print(f"  note: the function has {res['lines']} lines (def line included); gc.collect() before "
          "every first grad(f)")


def summary(results: dict[str, Any], columns: list[str]) -> list[str]:
    headers = ["workload", "plain", *columns]
    rows = []
    for name, r in results.items():
        if r["kind"] == "compile":
            sys_ = r["systems"]
            row = [name, ""]
            for key in columns:
                e = sys_.get(key)
                if e is None or e["status"] != "ok":
                    row.append("n/a" if e is None or e["status"] == "n/a" else e["status"].upper())
                elif key == "s2sad":
                    row.append(f"{fmt_time(e['first_s'])} / {fmt_time(e['cached_s'])}")
                else:
                    row.append(fmt_time(e["first_s"]) + ("*" if e.get("reason") else ""))
            rows.append(row)
            continue
        entries = r["entries"]
        rows.append([name, cell(entries["plain"]), *[cell(entries[k]) for k in columns]])
    return [table(headers, rows)]


def targets(results: dict[str, Any], columns: list[str]) -> list[tuple[str, str, str]]:
    """(target, met/MISSED/not measured, detail) for every target of issue 7."""
    out = []

    def s2sad_ratio(name: str) -> tuple[float | None, str]:
        r = results.get(name)
        if r is None:
            return None, "not run"
        e = r["entries"].get("s2sad")
        if e is None:
            return None, "s2sad not selected"
        if e.status != "ok":
            return None, f"s2sad {e.status.upper()}"
        return statistics.median(e.ratios), ""

    for name, limit in SPEED_TARGET.items():
        ratio, why = s2sad_ratio(name)
        label = f"{name}: s2sad <= {limit}x handwritten"
        if ratio is None:
            out.append((label, "MISSED" if "FAIL" in why or "MISMATCH" in why else "not measured", why))
        else:
            out.append((label, "met" if ratio <= limit else "MISSED", f"{ratio:.2f}x"))

    for peer in FASTER_THAN:
        label = f"s2sad faster than {LABEL[peer]} on every workload"
        slower, unmeasured, faster = [], [], []
        for name, r in results.items():
            if r["kind"] != "gradient":
                continue
            e, p = r["entries"].get("s2sad"), r["entries"].get(peer)
            if e is None or p is None or e.status != "ok" or p.status != "ok":
                why = ("s2sad " + e.status.upper() if e is not None and e.status != "ok" else
                       f"{peer} {p.status}" if p is not None else "not selected")
                unmeasured.append(f"{name} ({why})")
                continue
            ratio = statistics.median([a / b for a, b in zip(e.samples, p.samples)])
            (faster if ratio < 1.0 else slower).append(f"{name} {1 / ratio:.2f}x")
        if slower:
            status = "MISSED"
        elif not faster:
            status = "not measured"
        else:
            status = "met" if not unmeasured else "met where measured"
        detail = "; ".join(filter(None, [
            "slower on: " + ", ".join(slower) if slower else "",
            "faster on: " + ", ".join(faster) if faster else "",
            "not measured: " + ", ".join(unmeasured) if unmeasured else ""]))
        out.append((label, status, detail + (" (peer time / s2sad time)" if faster or slower else "")))

    comp = results.get("compile", {}).get("systems", {}).get("s2sad")
    if comp is None or comp.get("status") != "ok":
        why = "not run" if comp is None else comp["status"].upper() + ": " + comp["reason"]
        out.append((f"first grad(f) of a 30-line function < {FIRST_GRAD_TARGET_MS:g} ms", "not measured", why))
        out.append((f"cached grad(f) lookup < {CACHED_TARGET_US:g} us", "not measured", why))
    else:
        first_ms, cached_us = comp["first_s"] * 1e3, comp["cached_s"] * 1e6
        out.append((f"first grad(f) of a 30-line function < {FIRST_GRAD_TARGET_MS:g} ms",
                    "met" if first_ms < FIRST_GRAD_TARGET_MS else "MISSED", f"{first_ms:.1f} ms"))
        out.append((f"cached grad(f) lookup < {CACHED_TARGET_US:g} us",
                    "met" if cached_us < CACHED_TARGET_US else "MISSED", f"{cached_us:.2f} us"))

    over, ok, unmeasured = [], [], []
    for name, r in results.items():
        if r["kind"] != "gradient":
            continue
        e, h = r["entries"].get("s2sad"), r["entries"]["handwritten"]
        if e is None or e.status != "ok" or e.peak_bytes is None or not h.peak_bytes:
            unmeasured.append(name + (f" (s2sad {e.status.upper()})" if e is not None and e.status != "ok" else ""))
            continue
        ratio = e.peak_bytes / h.peak_bytes
        (ok if ratio <= MEMORY_TARGET else over).append(f"{name} {ratio:.2f}x")
    status = "MISSED" if over or any("FAIL" in u or "MISMATCH" in u for u in unmeasured) else (
        "met" if ok else "not measured")
    detail = "; ".join(filter(None, ["over: " + ", ".join(over) if over else "",
                                     "within: " + ", ".join(ok) if ok else "",
                                     "not measured: " + ", ".join(unmeasured) if unmeasured else ""]))
    out.append((f"peak memory of the s2sad gradient call <= {MEMORY_TARGET}x handwritten", status, detail))
    return out


# ------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help=f"few rounds and short samples (and a {QUICK_RNN_STEPS}-step rnn_loop): under a minute")
    p.add_argument("--workloads", default="all",
                   help=f"comma-separated, from: {', '.join(WORKLOADS)} (default: all)")
    p.add_argument("--systems", default="all",
                   help="comma-separated peers to run besides plain and handwritten NumPy, from: "
                        "s2sad, jit (s2sad jit: numba), autograd, torch, jax, tangent (default: all)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per workload (default 41, quick 7)")
    p.add_argument("--clock", choices=sorted(CLOCK), default="cpu",
                   help="cpu: CPU time of this process (user + system, all its threads), which other "
                        "processes' load does not inflate; wall: elapsed time (default: cpu)")
    p.add_argument("--system-malloc", action="store_true",
                   help="leave glibc malloc at its defaults (freed memory goes back to the OS and is "
                        "page-faulted in again: expensive on some VMs)")
    p.add_argument("--json", metavar="PATH", help="also write the results to PATH as JSON")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    names = list(WORKLOADS) if a.workloads == "all" else [n.strip() for n in a.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    groups = {"s2sad", *PEERS} if a.systems == "all" else {n.strip() for n in a.systems.split(",") if n.strip()}
    bad = groups - {"s2sad", *PEERS}
    if unknown or bad:
        if unknown:
            print(f"unknown workload(s): {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}",
                  file=sys.stderr)
        if bad:
            print(f"unknown system(s): {', '.join(sorted(bad))}; choose from s2sad, {', '.join(PEERS)}",
                  file=sys.stderr)
        return 2
    names.sort(key=lambda n: WORKLOADS[n].kind == "compile")  # compiling leaves garbage: run it last
    s = Settings(quick=a.quick, rounds=a.rounds or (7 if a.quick else 41),
                 sample_s=0.002 if a.quick else 0.01, warmup_s=0.02 if a.quick else 0.2,
                 compile_reps=5 if a.quick else 31, clock=a.clock)
    columns = [k for k in COLUMNS if GROUP[k] in groups]

    started = time.perf_counter()
    peers, missing, versions = load_peers(groups)
    import_s = time.perf_counter() - started
    # Move everything the imports made to the permanent generation: a collection during a timed
    # call then scans only what the workloads made, not the peers' module-level objects.
    gc.collect()
    gc.freeze()
    print(f"s2sad benchmarks ({'quick' if a.quick else 'full'}): {s.rounds} interleaved rounds, "
          f"samples >= {s.sample_s * 1e3:g} ms, one thread, "
          + ("CPU time of the process (--clock cpu)" if s.clock == "cpu" else "wall-clock time (--clock wall)"))
    print(f"s2sad from {os.path.dirname(s2sad.__file__)} ({git_state()})")
    print(f"python {platform.python_version()}, numpy {np.__version__}, s2sad {s2sad.__version__}, "
          f"{platform.machine()}, {os.cpu_count()} cpus; {MALLOC}")
    print(f"peers (imported in {import_s:.1f} s):")
    for group in PEERS:
        if group in groups:
            print(f"  {group}: {versions[group] if group in versions else 'n/a: ' + missing[group]}")
    print("times are per call; 'x hand' is the median over rounds of time / handwritten time in the same "
          "round; IQR/med is the spread of the per-round times; gradients checked against the "
          f"handwritten one with rtol {RTOL:g} (atol {ATOL_SCALE:g} x max|ref|)")
    peer_notes = [n for g, m in peers.items() for n in getattr(m, "NOTES", [])]
    for note in peer_notes:
        print(f"  note: {note}")

    results: dict[str, Any] = {}
    for name in names:
        w = WORKLOADS[name]
        workload_start = time.perf_counter()
        gc.collect()
        gc.freeze()
        print(f"\n=== {name}: {w.title} ===")
        if w.kind == "compile":
            res = run_compile(w, s, columns, peers, missing)
            results[name] = {"kind": "compile", **res}
            print_compile(res, w)
            print(f"  ({time.perf_counter() - workload_start:.1f} s)")
            continue
        inputs = w.inputs(s.quick)
        if s.quick and name == "rnn_loop":
            inputs["xs"] = inputs["xs"][:QUICK_RNN_STEPS]
        entries = build_entries(w, inputs, columns, peers, missing)
        plain_value = entries["plain"].call()
        check(entries, plain_value, CLOCK[s.clock])
        time_entries(entries, s)
        measure_memory(entries)
        notes = list(w.notes)
        if s.quick and name == "rnn_loop":
            notes.append(f"quick mode: {QUICK_RNN_STEPS} steps instead of 200")
        if w.gemm and "torch" in peers:
            notes.append(gemm_note(w, inputs, peers["torch"].torch, s))
        results[name] = {"kind": "gradient", "entries": entries, "notes": notes}
        print_workload(w, entries, notes)
        print(f"  ({time.perf_counter() - workload_start:.1f} s)")

    print("\n=== summary: time / handwritten gradient time (median over interleaved rounds) ===")
    for line in summary(results, columns):
        print(line)
    print("FAIL: s2sad raised; MISMATCH: wrong gradient; n/a: the peer is missing or cannot run the "
          "workload (reasons above).  compile row: s2sad first / cached grad(f); tangent and "
          "jax.jit: first generation / compile (* = see the compile table)")
    print("\n=== targets ===")
    rows = targets(results, columns)
    print(table(["target", "status", "detail"], [list(r) for r in rows], right=set()))
    elapsed = time.perf_counter() - started
    cpu = sum(sum(e.samples) for r in results.values() if r["kind"] == "gradient" for e in r["entries"].values())
    wall = sum(sum(e.wall) for r in results.values() if r["kind"] == "gradient" for e in r["entries"].values())
    contention = wall / cpu if cpu and s.clock == "cpu" else None
    print(f"\ntotal time {elapsed:.1f} s"
          + ("" if contention is None else
             f"; timed batches took {contention:.2f}x their CPU time by the wall clock "
             "(1.00 = this process had a CPU to itself)"))

    if a.json:
        doc = {"quick": a.quick, "rounds": s.rounds, "malloc": MALLOC, "clock": s.clock,
               "wall_over_cpu": contention, "versions": versions, "missing": missing,
               "elapsed_s": elapsed, "targets": [dict(zip(("target", "status", "detail"), r)) for r in rows],
               "workloads": {}}
        for name, r in results.items():
            if r["kind"] == "compile":
                doc["workloads"][name] = {"kind": "compile", "systems": r["systems"], "lines": r["lines"]}
            else:
                doc["workloads"][name] = {"kind": "gradient", "notes": r["notes"],
                                          "systems": {k: e.to_json() for k, e in r["entries"].items()}}
        with open(a.json, "w") as fh:
            json.dump(doc, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        traceback.print_exc()
        sys.exit(130)
