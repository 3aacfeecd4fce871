"""Higher orders against central finite differences in float64: regressions found by
comparing s2sad's second and third derivatives with JAX's."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from s2sad import grad

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::s2sad.ZeroGradientWarning")


def contracted(gradient: Callable[[Any], Any], w: np.ndarray) -> Callable[[Any], Any]:
    """``x -> sum(gradient(x) * w)``: a scalar made of a gradient, to differentiate again."""
    def contraction(x):
        return np.sum(gradient(x) * w)
    return contraction


def directional(f: Callable[[Any], Any], x: np.ndarray, v: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Central finite difference of ``f`` at ``x`` along ``v``."""
    return (np.asarray(f(x + eps * v)) - np.asarray(f(x - eps * v))) / (2 * eps)


def numeric_grad(f: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    """Central finite differences of scalar ``f`` at ``x``, entry by entry."""
    out = np.zeros(x.shape)
    for i in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[i] = 1.0
        out[i] = directional(f, x, e)
    return out


def close(got: Any, want: Any, what: str, rtol: float = 1e-6) -> None:
    """``got`` has ``want``'s shape and matches it to ``rtol``, relative to its largest entry (at least 1)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, not {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=what)


# --- regressions found by the catalogue ------------------------------------------------


def trace_of_square(x):
    return np.trace(x @ x) + np.trace(x) ** 2


def products_in_a_list(x):
    parts = []
    for i in range(3):
        parts.append(x[i] * x[i + 1])
    return np.sum(np.array(parts) ** 2)


def sqrt_where_positive(x):
    return np.sum(np.where(x > 0.1, np.sqrt(x), x ** 2))


def test_grad_of_grad_through_trace():
    """np.trace's gradient puts g (one entry, broadcast) on the diagonal: reverse over that
    reduces the diagonal back to one entry (it raised a reshape error)."""
    x, w = np.array([[0.3, -1.2, 0.5], [0.7, 0.1, -0.4], [1.1, 0.2, 0.9]]), np.arange(9.0).reshape(3, 3)
    gdot = contracted(grad(trace_of_square), w)
    close(grad(gdot)(x), numeric_grad(gdot, x), "grad of grad of trace")


def test_third_order_through_a_list_built_in_a_loop():
    """The gradient of a list appended to in a loop is a list: reverse over reverse over
    reverse adds two such gradients leaf by leaf (``+`` joined them: a length error)."""
    x, v, w = np.array([0.3, -1.2, 0.5, 0.8]), np.array([1.0, 0.5, -0.3, 0.2]), np.array([0.4, 1.0, -0.6, 0.3])
    twice = contracted(grad(contracted(grad(products_in_a_list), w)), v)
    close(grad(twice)(x), numeric_grad(twice, x), "third derivative through a list", 1e-5)


def test_third_order_of_a_where_is_nan_free():
    """A value feeding several masked ``np.where`` branches (sqrt's in second-order code) keeps
    the union of their masks: its adjoint is 0, not NaN, where no branch takes it."""
    x, v, w = np.array([0.5, -0.3, 1.2]), np.array([1.0, -0.5, 0.3]), np.array([0.7, 0.2, -1.1])
    twice = contracted(grad(contracted(grad(sqrt_where_positive), w)), v)
    got = grad(twice)(x)
    assert np.all(np.isfinite(got)), got
    close(got, numeric_grad(twice, x), "third derivative of a where", 1e-5)
