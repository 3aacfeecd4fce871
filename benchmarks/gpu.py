#!/usr/bin/env python3
"""s2sad's gradients on CuPy against PyTorch eager on the same GPU (run on purpose).

    python benchmarks/gpu.py                   # softmax_ce and mlp, float64, on the GPU
    python benchmarks/gpu.py --float32 --rounds 51
    python benchmarks/gpu.py --device cpu      # the same code on NumPy and CPU tensors

For the softmax_ce and mlp workloads of benchmarks/workloads.py, three gradients run on
the same data: s2sad's ``grad(workload.fn, wrt)`` on CuPy arrays, PyTorch eager autograd
on CUDA tensors (the functions of impl_torch.py), and the handwritten NumPy gradient given
CuPy arrays (NumPy hands them to CuPy through ``__array_function__`` and
``__array_ufunc__``).  Each is first checked against the handwritten gradient computed by
NumPy in float64 on the host.  Then all are warmed up and timed in interleaved rounds, a
batch of calls per round with the device synchronised before and after it; reported is
the median time per call and the median over rounds of the ratios timed in the same round.

Without CuPy or a CUDA device the script says what is missing and exits with status 0.
``--device cpu`` runs the same code path with NumPy arrays and CPU tensors (one thread),
so the script can be exercised on a machine without a GPU.
"""
from __future__ import annotations

import os
import sys

# One CPU thread for --device cpu, as in run.py; set before NumPy is imported.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import argparse  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

import s2sad  # noqa: E402
from benchmarks.workloads import WORKLOADS, Workload  # noqa: E402

NAMES = ("softmax_ce", "mlp")
KEYS = ("s2sad", "torch", "handwritten")
TOLERANCE = {"float64": (1e-6, 1e-9), "float32": (1e-4, 1e-5)}  # rtol, atol / max|reference|


@dataclass(frozen=True)
class Backend:
    """Where the arrays live: their module, how to wait for the device, and torch's device."""
    array_label: str                  # "CuPy" or "NumPy", for the table
    xp: ModuleType
    synchronize: Callable[[], None]
    torch_device: str                 # "cuda" or "cpu"
    torch_label: str                  # "CUDA" or "CPU"
    device_name: str

    def to_host(self, value: Any) -> np.ndarray:
        return self.xp.asnumpy(value) if hasattr(self.xp, "asnumpy") else np.asarray(value)


def cpu_backend() -> Backend:
    return Backend("NumPy", np, lambda: None, "cpu", "CPU",
                   f"CPU ({platform.machine()}, {os.cpu_count()} cores, one thread used)")


def cuda_backend() -> Backend | str:
    """The CuPy backend, or what is missing for it."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no driver, no runtime: CuPy raises its own errors
        return f"CuPy finds no CUDA device ({type(exc).__name__}: {exc})"
    if count < 1:
        return "CuPy finds no CUDA device"
    torch = _torch()
    torch_synchronize = torch.cuda.synchronize if torch is not None and torch.cuda.is_available() else None

    def synchronize() -> None:
        cupy.cuda.Device().synchronize()
        if torch_synchronize is not None:
            torch_synchronize()

    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    return Backend("CuPy", cupy, synchronize, "cuda", "CUDA",
                   name.decode() if isinstance(name, bytes) else str(name))


def _torch() -> ModuleType | None:
    try:
        import torch
    except ImportError:
        return None
    return torch


@dataclass
class Entry:
    """One gradient on one workload."""
    key: str
    call: Callable[[], Any] | None = None
    extract: Callable[[Any], tuple[Any, ...]] = tuple
    status: str = "ok"                # ok | n/a | failed | MISMATCH
    reason: str = ""
    max_rel_err: float | None = None
    number: int = 1                   # calls per timed batch
    samples: list[float] = field(default_factory=list)


def build_entries(w: Workload, inputs: dict[str, np.ndarray], backend: Backend,
                  dtype: str) -> dict[str, Entry]:
    """The three gradients of ``w``, on the backend's arrays and tensors of ``dtype``."""
    hand = w.handwritten
    assert hand is not None
    args = tuple(backend.xp.asarray(v.astype(dtype)) for v in inputs.values())
    to_host = lambda result: tuple(backend.to_host(g) for g in result)  # noqa: E731
    single = len(w.wrt) == 1
    gradient = s2sad.grad(w.fn, w.s2sad_wrt)
    entries = {
        "s2sad": Entry("s2sad", lambda: gradient(*args),
                       (lambda r: to_host((r,))) if single else to_host),
        "handwritten": Entry("handwritten", lambda: hand(*args), to_host),
        "torch": Entry("torch"),
    }
    torch = _torch()
    if torch is None:
        entries["torch"].status, entries["torch"].reason = "n/a", "PyTorch is not installed"
    elif backend.torch_device == "cuda" and not torch.cuda.is_available():
        entries["torch"].status, entries["torch"].reason = "n/a", "PyTorch has no CUDA device"
    else:
        from benchmarks import impl_torch
        entries["torch"].call = impl_torch.build(
            w.name, inputs, w.wrt, device=backend.torch_device,
            dtype=getattr(torch, dtype))
        entries["torch"].extract = impl_torch.to_numpy
    return entries


def check(entries: dict[str, Entry], reference: tuple[np.ndarray, ...], dtype: str) -> None:
    """Compare every gradient with ``reference``; a failing or wrong one loses its call."""
    rtol, atol_scale = TOLERANCE[dtype]
    for e in entries.values():
        if e.call is None:
            continue
        try:
            got = e.extract(e.call())
        except Exception as exc:  # noqa: BLE001 - reported in the table
            e.call, e.status = None, "failed"
            e.reason = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"
            continue
        ok, e.max_rel_err = True, 0.0
        for g, r in zip(got, reference, strict=True):
            g = np.asarray(g, dtype=np.float64)
            scale = float(np.max(np.abs(r)))
            ok = ok and g.shape == r.shape and bool(np.allclose(g, r, rtol=rtol, atol=atol_scale * scale))
            if g.shape == r.shape:
                e.max_rel_err = max(e.max_rel_err, float(np.max(np.abs(g - r))) / scale)
        if not ok:
            e.call, e.status = None, "MISMATCH"
            e.reason = f"max |error| / max|reference| = {e.max_rel_err:.3g}"


def batch(call: Callable[[], Any], number: int, synchronize: Callable[[], None]) -> float:
    """Seconds per call over ``number`` calls, the device idle before and finished after."""
    synchronize()
    start = time.perf_counter()
    for _ in range(number):
        call()
    synchronize()
    return (time.perf_counter() - start) / number


def time_entries(entries: dict[str, Entry], backend: Backend, rounds: int, sample_s: float,
                 warmup_s: float) -> None:
    """Warm up, size each batch to last about ``sample_s``, then time interleaved rounds."""
    live = [(e, e.call) for e in entries.values() if e.call is not None]
    if not live:
        return
    for e, call in live:
        deadline = time.perf_counter() + warmup_s
        warm: list[float] = []
        while len(warm) < 3 or time.perf_counter() < deadline:
            warm.append(batch(call, 1, backend.synchronize))
        e.number = max(1, math.ceil(sample_s / max(statistics.median(warm[2:]), 1e-9)))
    for r in range(rounds):
        shift = r % len(live)
        for e, call in live[shift:] + live[:shift]:  # rotated, so drift hits every entry alike
            e.samples.append(batch(call, e.number, backend.synchronize))


def fmt_time(e: Entry) -> str:
    if not e.samples:
        return e.status
    t = statistics.median(e.samples)
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def fmt_ratio(a: Entry, b: Entry) -> str:
    """The median over rounds of a's time over b's, timed in the same round."""
    if not a.samples or not b.samples:
        return "-"
    return f"{statistics.median(x / y for x, y in zip(a.samples, b.samples)):.2f}x"


def fmt_check(entries: dict[str, Entry]) -> str:
    wrong = [e.key for e in entries.values() if e.status == "MISMATCH"]
    if wrong:
        return "MISMATCH: " + ", ".join(wrong)
    checked = [e.max_rel_err for e in entries.values() if e.status == "ok" and e.max_rel_err is not None]
    return f"agree (max rel. error {max(checked):.1e})" if checked else "-"


def row(name: str, entries: dict[str, Entry]) -> list[str]:
    s2, torch, hand = (entries[k] for k in KEYS)
    return [name, fmt_time(s2), fmt_time(torch), fmt_time(hand),
            fmt_ratio(s2, torch), fmt_ratio(s2, hand), fmt_check(entries)]


def print_table(backend: Backend, rows: list[list[str]]) -> None:
    headers = ["workload", f"s2sad on {backend.array_label}", f"PyTorch {backend.torch_label}",
               f"handwritten on {backend.array_label}", "s2sad / PyTorch", "s2sad / handwritten",
               "gradients vs NumPy"]
    print("| " + " | ".join(headers) + " |")
    print("|---|" + "---:|" * (len(headers) - 2) + "---|")
    for cells in rows:
        print("| " + " | ".join(cells) + " |")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 21, 5 with --quick)")
    parser.add_argument("--quick", action="store_true", help="short warm-up and batches")
    parser.add_argument("--float32", action="store_true", help="float32 arrays and tensors (default float64)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: NumPy arrays and CPU tensors on the same code path")
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = 5 if args.quick else 21
    return args


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    args = parse_args(argv)
    backend = cpu_backend() if args.device == "cpu" else cuda_backend()
    if isinstance(backend, str):
        print(f"benchmarks/gpu.py: nothing timed: {backend} (--device cpu runs the same code on the CPU)")
        return []
    dtype = "float32" if args.float32 else "float64"
    sample_s, warmup_s = (0.005, 0.05) if args.quick else (0.05, 0.5)
    print(f"device: {backend.device_name}; {dtype}; median of {args.rounds} "
          f"interleaved rounds, time per call")
    results: list[dict[str, Any]] = []
    rows: list[list[str]] = []
    notes: list[str] = []
    for name in NAMES:
        w = WORKLOADS[name]
        inputs = w.inputs(args.quick)
        assert w.handwritten is not None
        reference = w.handwritten(*inputs.values())
        entries = build_entries(w, inputs, backend, dtype)
        check(entries, reference, dtype)
        time_entries(entries, backend, args.rounds, sample_s, warmup_s)
        rows.append(row(name, entries))
        notes += [f"{name}, {e.key}: {e.status}: {e.reason}" for e in entries.values() if e.reason]
        results.append({"workload": name, **{k: {"status": entries[k].status, "samples": entries[k].samples}
                                             for k in KEYS}})
    print_table(backend, rows)
    for note in notes:
        print("  " + note)
    return results


if __name__ == "__main__":
    main()
