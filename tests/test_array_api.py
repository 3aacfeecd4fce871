"""Generated gradients on PyTorch tensors and JAX arrays (s2sad.array_api), against NumPy's
gradients on the same float64 data.

These tests need ``array-api-compat`` and, for each library, ``torch`` or ``jax``: each part is
skipped where its library is not installed (as in CI, which installs neither).  Install them
with ``pip install "s2sad[array-api]" torch "jax[cpu]"`` to run them.
"""
from __future__ import annotations

import pathlib
import sys
from typing import Any, Callable

import numpy as np
import pytest

import s2sad
from s2sad import S2SADError

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from benchmarks.workloads import mlp, softmax_ce  # noqa: E402  (the benchmark's functions)

pytest.importorskip("array_api_compat")


class Library:
    """One array library: how to make its arrays from NumPy's, and how to read them back."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "torch":
            torch = pytest.importorskip("torch")
            self.array_type: type = torch.Tensor
            self.convert: Callable[[np.ndarray], Any] = torch.from_numpy
        else:
            jax = pytest.importorskip("jax")
            jax.config.update("jax_enable_x64", True)  # float64, as NumPy's data
            self.array_type = jax.Array
            self.convert = jax.numpy.asarray

    def args(self, *values: Any) -> list[Any]:
        return [self.convert(v) if isinstance(v, np.ndarray) else v for v in values]

    def dtype_name(self, a: Any) -> str:
        return str(a.dtype).removeprefix("torch.")


@pytest.fixture(autouse=True)
def specialising(monkeypatch: pytest.MonkeyPatch) -> None:
    """Other libraries' arrays are rebound by the specialising dispatcher: on here even in a
    run with S2SAD_SPECIALIZE=0 (the refusal without it is tested with specialize=False)."""
    monkeypatch.setenv("S2SAD_SPECIALIZE", "1")


@pytest.fixture(params=["torch", "jax"])
def library(request: pytest.FixtureRequest) -> Library:
    return Library(request.param)


def ridge(w, X, y):
    r = X @ w - y
    return np.mean(r ** 2) + 0.1 * np.sum(w ** 2)


def loop_loss(w, S, scale):
    total = 0.0
    h = w
    for i in range(3):
        h = np.tanh(S @ h) * scale
        total = total + np.sum(h ** 2) + h[i] * w[i]
    return total / 3.0 + np.max(w)


def inner(a, b):
    return np.sum(np.exp(a) * b)


def with_callee(w, X):
    z = X @ w
    leaky = np.where(z > 0, z, 0.5 * z)
    return inner(z, z) + np.sqrt(np.sum(w * w)) + np.mean(np.maximum(z, 0.0)) + np.sum(leaky)


def cumulative(x):
    return np.sum(np.cumsum(x))


def norm_loss(x):
    return np.linalg.norm(x) * 2.0


def _one_hot(labels: np.ndarray, classes: int) -> np.ndarray:
    return np.eye(classes)[labels]


RNG = np.random.default_rng(7)
CASES = {
    "softmax_ce": (softmax_ce, 0, (RNG.normal(size=(8, 5)) * 3.0, _one_hot(RNG.integers(0, 5, 8), 5))),
    "mlp": (mlp, (0, 1, 2, 3), (RNG.normal(size=(6, 4)) / 2, RNG.normal(size=4) * 0.1,
                                RNG.normal(size=(4, 3)) / 2, RNG.normal(size=3) * 0.1,
                                RNG.normal(size=(9, 6)), _one_hot(RNG.integers(0, 3, 9), 3))),
    "ridge": (ridge, 0, (RNG.normal(size=3), RNG.normal(size=(7, 3)), RNG.normal(size=7))),
    "loop": (loop_loss, (0, 2), (RNG.normal(size=3), RNG.normal(size=(3, 3)), 0.7)),
    "callee": (with_callee, (0, 1), (RNG.normal(size=3), RNG.normal(size=(5, 3)))),
}


def _as_tuple(g: Any, wrt: Any) -> tuple[Any, ...]:
    return g if isinstance(wrt, tuple) else (g,)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_match_numpys(library: Library, case: str) -> None:
    f, wrt, data = CASES[case]
    expected = _as_tuple(s2sad.grad(f, wrt)(*data), wrt)
    got = _as_tuple(s2sad.grad(f, wrt)(*library.args(*data)), wrt)
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    for position, g, e in zip(positions, got, expected):
        if isinstance(data[position], float):  # a Python float's gradient stays a float
            assert type(g) is float
        else:
            assert isinstance(g, library.array_type)
            assert library.dtype_name(g) == "float64"
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-10, atol=1e-14)


def test_value_and_grad(library: Library) -> None:
    data = CASES["ridge"][2]
    value, g = s2sad.value_and_grad(ridge)(*library.args(*data))
    expected_value, expected = s2sad.value_and_grad(ridge)(*data)
    assert isinstance(g, library.array_type)
    np.testing.assert_allclose(float(value), expected_value, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-10)


def test_float32_stays_float32(library: Library) -> None:
    data = [a.astype(np.float32) for a in CASES["softmax_ce"][2]]
    g = s2sad.grad(softmax_ce)(*library.args(*data))
    assert library.dtype_name(g) == "float32"
    np.testing.assert_allclose(np.asarray(g), s2sad.grad(softmax_ce)(*data), rtol=1e-5, atol=1e-7)


def test_numpy_calls_are_unchanged_after_another_librarys(library: Library) -> None:
    data = CASES["ridge"][2]
    gradient = s2sad.grad(ridge)
    gradient(*library.args(*data))
    assert type(gradient(*data)) is np.ndarray
    rebound = gradient(*library.args(*data)), gradient(*library.args(*data))
    assert all(isinstance(g, library.array_type) for g in rebound)


@pytest.mark.parametrize("f, name", [(cumulative, "np.cumsum"), (norm_loss, "np.linalg.norm")])
def test_a_function_not_translated_is_refused_by_name(library: Library, f: Any, name: str) -> None:
    x = RNG.normal(size=4)
    with pytest.raises(S2SADError, match=f"{name}.*{library.name}"):
        s2sad.grad(f)(*library.args(x))


def test_numpy_code_refuses_the_librarys_arrays(library: Library) -> None:
    data = CASES["ridge"][2]
    with pytest.raises(S2SADError, match=f"{library.name} array.*specialisation on"):
        s2sad.grad(ridge, specialize=False)(*library.args(*data))



@pytest.mark.filterwarnings("ignore:__array_wrap__:DeprecationWarning")  # (NumPy's, on a tensor)
@pytest.mark.parametrize("transform", ["jvp", "vjp"])
def test_forward_mode_and_vjp_refuse_torch_tensors(transform: str) -> None:
    library = Library("torch")  # (JAX arrays there go through NumPy's own conversions, as before)
    x = library.convert(RNG.normal(size=3))
    with pytest.raises(S2SADError, match=f"{library.name} array.*not by jvp, vjp or hvp"):
        if transform == "jvp":
            s2sad.jvp(inner, wrt=0)(x, x, x)
        else:
            s2sad.vjp(inner, wrt=0)(x, x)[1](1.0)


def test_a_numpy_array_among_the_librarys_is_refused(library: Library) -> None:
    w, X, y = CASES["ridge"][2]
    with pytest.raises(S2SADError, match=f"'w' is a NumPy array in a call with {library.name} arrays"):
        s2sad.grad(ridge)(w, *library.args(X, y))
