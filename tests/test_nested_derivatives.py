"""``grad(fun)(x)`` inside a differentiated function: s2sad generates the inner gradient and
differentiates that code as a callee (second order), as autograd and JAX users write
``grad(lambda x: grad(f)(x) * 3.0)``."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import NoGradientRuleError, grad, value_and_grad
from gradcheck import assert_grad_matches, numerical_grad


def fun(x):
    return np.sin(x) * x ** 2


def scaled_slope(x):
    return grad(fun)(x) * 3.0


def value_times_slope(x):
    v, g = value_and_grad(fun)(x)
    return v * g


def cubic(x, y):
    return np.sum(x * y ** 3)


def slope_in_y(x, y):
    return np.sum(grad(cubic, wrt="y")(x, y) ** 2)


def make_closure():
    def f(x):
        return np.sum(np.tanh(x) ** 2)

    def outer(x):
        return np.sum(grad(f)(x) * x)
    return outer


def through_a_parameter(x, g):
    return grad(g)(x)


CASES = [(scaled_slope, [0.7]), (value_times_slope, [0.7]),
         (make_closure(), [np.array([0.3, -0.2])]),
         (slope_in_y, [np.array([0.5, 1.5]), np.array([0.4, -0.3])])]


@pytest.mark.parametrize("f, args", CASES, ids=["grad", "value_and_grad", "closure", "wrt"])
def test_a_gradient_called_inside_is_differentiated(f, args):
    assert_grad_matches(f, args, wrt=tuple(range(len(args))) if len(args) > 1 else 0)


@pytest.mark.parametrize("f, args", CASES[:3], ids=["grad", "value_and_grad", "closure"])
def test_and_at_second_order(f, args):
    x = args[0]
    v = np.ones_like(x) if isinstance(x, np.ndarray) else 1.0
    gradient = grad(f)
    h = 1e-5
    expected = (gradient(x + h * v) - gradient(x - h * v)) / (2 * h)
    np.testing.assert_allclose(s2sad.hvp(f)(x, v), expected, rtol=1e-6, atol=1e-8)


def test_the_exact_value_of_a_known_case():
    x = 0.7
    # d/dx 3 f'(x) = 3 f''(x), f = x^2 sin x: f'' = 2 sin x + 4 x cos x - x^2 sin x
    expected = 3 * (2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x))
    assert grad(scaled_slope)(x) == pytest.approx(expected, rel=1e-12)
    assert numerical_grad(scaled_slope, [x], 0) == pytest.approx(expected, rel=1e-7)


def test_a_function_held_in_a_parameter_is_still_refused_with_its_location():
    with pytest.raises(NoGradientRuleError, match=r"test_nested_derivatives.py:\d+:\d+: 'grad\(g\)' is a local"):
        grad(through_a_parameter)(0.5, fun)
