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


@pytest.mark.parametrize("axis, shape", [((0, 2), (2, 4)), ((2, 0), (4, 2)), ((-1, 0), (4, 2)), ((1,), (3,))])
def test_average_over_a_tuple_of_axes_with_weights(axis, shape) -> None:
    """np.average(a, axis=(0, 2), weights=w) with w shaped like those axes was a TypeError in
    the generated code (axis_shape took one axis); the weights are laid along the axes, in the
    order the tuple names them, in every mode."""
    rng = np.random.default_rng(3)
    a, w = rng.standard_normal((2, 3, 4)), rng.uniform(0.5, 2.0, shape)
    f = make_function(f"def f(a, w):\n    return np.sum(np.sin(np.average(a, axis={axis}, weights=w)))\n",
                      {"np": np})
    ga, gw = s2sad.grad(f, (0, 1))(a, w)
    np.testing.assert_allclose(ga, numerical(f, [a, w], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, numerical(f, [a, w], 1), rtol=1e-6, atol=1e-8)
    v = rng.standard_normal(shape)
    _, slope = s2sad.jvp(f, 1)(a, w, v)
    np.testing.assert_allclose(slope, np.sum(gw * v), rtol=1e-9)
    eps = 1e-6
    want = (s2sad.grad(f, 1)(a, w + eps * v) - s2sad.grad(f, 1)(a, w - eps * v)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f, 1)(a, w, v), want, rtol=1e-5, atol=1e-8)
