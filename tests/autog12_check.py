"""Checks for the autograd-style sweep (tests/test_autog12.py): one case is an expression of
``x`` (and ``y``) with the inputs' shapes and domain; its loss is ``np.real(np.sum(W * expr))``
with ``W`` a fixed random array (complex when the expression is), and the verdict of each mode
(reverse, forward, Hessian-vector product, autograd) is "correct", "refused" (an S2SADError with
a location), "WRONG" (a gradient unlike central finite differences) or "CRASH" (any other error).
"""
from __future__ import annotations

import warnings
import zlib
from typing import Any, Callable, NamedTuple

import numpy as np

import s2sad
from s2sad.errors import S2SADError

from gradcheck import make_function


F = "float"  # the "shape" of a Python float input


class Case(NamedTuple):
    expr: str
    shapes: tuple  # one shape per input x, y
    domain: str = "real"
    complex_in: bool = False  # complex inputs x (and y)
    dtype: str = "float64"  # float32: the gradient in float32, near float64's finite differences

    @property
    def id(self) -> str:
        kind = ("C" if self.complex_in else "") + ("f32" if self.dtype == "float32" else "") + (
            " zeros" if self.domain == "zeros" else "")
        shapes = ", ".join(s if s == F else "x".join(map(str, s)) or "()" for s in self.shapes)
        return f"{self.expr} [{shapes}]{kind}"


DOMAINS: dict[str, Callable[[np.random.Generator, tuple], np.ndarray]] = {
    "real": lambda rng, shape: rng.standard_normal(shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, shape),
    "unit": lambda rng, shape: rng.uniform(-0.8, 0.8, shape),
    "prob": lambda rng, shape: rng.uniform(0.15, 0.85, shape),
    "above1": lambda rng, shape: rng.uniform(1.3, 3.0, shape),
    # a quarter of the entries exactly zero (products)
    "zeros": lambda rng, shape: rng.standard_normal(shape) * (rng.permutation(int(np.prod(shape))).reshape(shape) % 4 != 0),
    "offgrid": lambda rng, shape: np.round(rng.uniform(-1.5, 1.5, shape), 1) + rng.uniform(0.03, 0.07, shape),
    # distinct values at least 0.2 apart (sorting, extrema, order statistics)
    "distinct": lambda rng, shape: (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.3
                                    + rng.uniform(0.0, 0.05, shape) - 1.0),
}

NAMESPACE: dict[str, Any] = {"np": np}


def _namespace() -> dict[str, Any]:
    try:
        import scipy.linalg
        import scipy.signal
        import scipy.special
        import scipy.stats
    except ImportError:  # pragma: no cover
        return dict(NAMESPACE)
    return dict(NAMESPACE, special=scipy.special, stats=scipy.stats, sla=scipy.linalg, signal=scipy.signal)


def inputs(case: Case, dtype: str | None = None) -> list[Any]:
    """The case's inputs (in float64 unless ``dtype`` says otherwise)."""
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    values: list[Any] = []
    for shape in case.shapes:
        value = DOMAINS[case.domain](rng, () if shape == F else shape)
        if case.complex_in:
            value = value + 1j * DOMAINS[case.domain](rng, () if shape == F else shape)
        if shape == F:
            values.append(complex(value) if case.complex_in else float(value))
        else:
            values.append(np.asarray(value) if dtype in (None, "float64") else
                          np.asarray(value, dtype=np.complex64 if case.complex_in else np.float32))
    return values


def loss_function(case: Case, namespace: dict[str, Any] | None = None) -> tuple[Callable[..., Any], Any]:
    """``f(x[, y])`` of the case (None where NumPy itself rejects the expression), and its
    output's value."""
    space = dict(namespace or _namespace())
    args = inputs(case, case.dtype)
    names = ", ".join("xy"[: len(args)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = eval(case.expr, space, dict(zip("xy", args)))
    rng = np.random.default_rng(zlib.crc32(case.expr.encode()) + 1)
    weight = rng.standard_normal(np.shape(out))
    if np.iscomplexobj(out):
        weight = weight + 1j * rng.standard_normal(np.shape(out))
    space["W"] = weight
    source = f"def f({names}):\n    return np.real(np.sum(W * ({case.expr})))\n"
    return make_function(source, space), args


def numerical(f: Callable[..., Any], args: list[Any], k: int, eps: float = 1e-6) -> np.ndarray:
    """Central differences of real ``f`` in argument ``k``: dL/dRe - i dL/dIm for complex."""
    x = args[k]
    if isinstance(x, (float, complex)):
        return complex(numerical(f, [*args[:k], np.asarray(x), *args[k + 1:]], k, eps)) if isinstance(
            x, complex) else float(numerical(f, [*args[:k], np.asarray(x), *args[k + 1:]], k, eps))

    def at(i: tuple, step: complex) -> float:
        moved = list(args)
        moved[k] = x.copy()
        moved[k][i] += step
        return float(f(*moved))

    out = np.zeros(x.shape, dtype=x.dtype)
    for i in np.ndindex(*x.shape):
        out[i] = (at(i, eps) - at(i, -eps)) / (2 * eps)
        if np.iscomplexobj(x):
            out[i] -= 1j * (at(i, 1j * eps) - at(i, -1j * eps)) / (2 * eps)
    return out


def _close(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol * scale))


def verdict(run: Callable[[], Any], expected: Callable[[Any], bool]) -> str:
    """What ``run()`` gives: correct, refused (with a location), WRONG or CRASH (with details)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run()
    except S2SADError as error:
        if error.location is None:
            return f"CRASH (no location) {type(error).__name__}: {str(error)[:200]}"
        return f"refused: {str(error)[:300]}"
    except Exception as error:  # noqa: BLE001 - any other exception is the bug we look for
        return f"CRASH {type(error).__name__}: {str(error)[:300]}"
    return "correct" if expected(result) else f"WRONG {str(result)[:300]}"


def _typed_like(g: Any, x: Any) -> bool:
    """A gradient has its input's type: a Python number for one, else the array's shape and dtype."""
    if isinstance(x, (float, complex)):
        return type(g) is type(x)
    return np.shape(g) == np.shape(x) and np.result_type(g) == np.result_type(x)


def reverse(case: Case) -> str:
    """s2sad.grad with respect to every input against finite differences (shape and dtype too)."""
    f, args = loss_function(case)
    wrt = tuple(range(len(args)))
    exact = inputs(case)  # finite differences in float64
    single = case.dtype == "float32" or "float32" in case.expr  # (computed in float32)
    want = [numerical(f, exact, k, 1e-3 if single else 1e-6) for k in wrt]
    rtol, atol = (1e-2, 1e-3) if single else (1e-5, 1e-6)

    def ok(grads: Any) -> bool:
        return all(_typed_like(g, a) and _close(g, w, rtol, atol) for g, a, w in zip(grads, args, want))
    return verdict(lambda: s2sad.grad(f, wrt)(*args), ok)


def _direction(x: Any) -> Any:
    rng = np.random.default_rng(7)
    if isinstance(x, (float, complex)):
        return type(x)(_direction(np.asarray(x))[()])
    v = rng.standard_normal(x.shape)
    return v + 1j * rng.standard_normal(x.shape) if np.iscomplexobj(x) else v


def forward(case: Case) -> str:
    """s2sad.jvp in the first input along a random direction against finite differences."""
    f, args = loss_function(case)
    v = _direction(args[0])
    eps = 1e-6
    slope = (f(args[0] + eps * v, *args[1:]) - f(args[0] - eps * v, *args[1:])) / (2 * eps)
    return verdict(lambda: s2sad.jvp(f, 0)(*args, v)[1], lambda out: _close(out, slope))


def second(case: Case) -> str:
    """s2sad.hvp in the first input against finite differences of s2sad's own gradient (which
    the reverse check compares with finite differences)."""
    f, args = loss_function(case)
    v = _direction(args[0])
    eps = 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            gradient = s2sad.grad(f, 0)
            slope = (gradient(args[0] + eps * v, *args[1:]) - gradient(args[0] - eps * v, *args[1:])) / (2 * eps)
        except S2SADError:
            return "refused: first order"
    return verdict(lambda: s2sad.hvp(f, 0)(*args, v), lambda out: _close(out, slope, 1e-4, 1e-5))


def against_autograd(case: Case) -> str:
    """s2sad.grad against autograd.grad where autograd differentiates the case and agrees with
    finite differences; "skipped" where it does not."""
    try:
        import autograd
        import autograd.numpy as anp
        import autograd.scipy.linalg as asla
        import autograd.scipy.special as aspecial
        import autograd.scipy.stats as astats
    except ImportError:  # pragma: no cover
        return "skipped"
    f, args = loss_function(case)
    space = {"np": anp, "special": aspecial, "stats": astats, "sla": asla, "signal": None}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g, _ = loss_function(case, space)
            theirs = autograd.grad(g, 0)(*args)
    except Exception:  # noqa: BLE001 - autograd does not cover every function
        return "skipped"
    if not _close(theirs, numerical(f, args, 0)):
        return "skipped (autograd disagrees with finite differences)"
    return verdict(lambda: s2sad.grad(f, 0)(*args), lambda ours: _close(ours, theirs))
