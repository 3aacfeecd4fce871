"""Regression tests of the bugs the autograd-style sweep found."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from gradcheck import make_function, numerical_grad as numerical


# --- regressions ------------------------------------------------------------------------------

def _f(body: str, params: str = "x") -> object:
    return make_function(f"def f({params}):\n    return {body}\n", {"np": np})


@pytest.mark.parametrize("x", [np.array(0.4), np.array([0.4, 0.4]), np.array([[1.0, np.nan], [1.0, 2.0]])])
def test_nanstd_without_deviation_has_a_zero_gradient_like_std(x) -> None:
    """np.nanstd of a single value (or equal values) gave NaN gradients (0.5 / ans with ans 0),
    where np.std gives 0 (the subgradient at a norm's origin); every mode agrees now."""
    f = _f("np.sum(np.nanstd(x, axis=0) * np.array([1.5, -2.0])[:np.size(np.nanstd(x, axis=0))])")
    g = s2sad.grad(f)(x)
    assert not np.any(np.isnan(g))
    if x.ndim == 2:  # column 0 is constant, column 1 one value: both 0
        np.testing.assert_array_equal(g, np.zeros_like(x))
    _, slope = s2sad.jvp(f)(x, np.ones_like(x))
    assert slope == 0.0
    assert not np.any(np.isnan(s2sad.hvp(f)(x, np.ones_like(x))))


def test_a_cast_to_float32_gives_the_gradient_in_the_inputs_dtype() -> None:
    """np.asarray(x, dtype=np.float32) gave a float64 x a float32 gradient."""
    x = np.array([0.1, 0.2, 0.3])
    g = s2sad.grad(_f("np.sum(np.asarray(x, dtype=np.float32) * np.array([1.0, 2.0, 3.0]))"))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, [1.0, 2.0, 3.0])
    g = s2sad.grad(_f("np.sum(np.array(x, dtype=np.float32) ** 2)"))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * x, rtol=1e-6)
