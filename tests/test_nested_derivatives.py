"""``grad(fun)(x)`` inside a differentiated function where ``fun`` is a lambda or a nested
function of it, reading its variables or not: meta-learning (MAML's inner step), adversarial
examples (the sign of an input gradient), gradient penalties.  The gradient, its Hessian-vector
product and its forward mode are checked against central finite differences in float64."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

import s2sad
from s2sad import grad, stop_gradient, value_and_grad
from tests.gradcheck import assert_grad_matches, numerical_grad


def loss(w: np.ndarray, x: np.ndarray) -> float:
    return np.sum(np.tanh(x @ w) ** 2)


def maml_step(w, x):
    w1 = w - 0.1 * grad(lambda v: loss(v, x))(w)
    return loss(w1, x)


def maml_two_steps(w, x):
    for _ in range(2):
        w = w - 0.1 * grad(lambda v: loss(v, x))(w)
    return loss(w, x)


def adversarial(w, x):
    gx = grad(lambda z: loss(w, z))(x)
    return loss(w, x + 0.1 * np.sign(gx))


def stopped_lambda_gradient(w, x):
    g = grad(lambda v: np.sum(v ** 3))(w)
    return np.sum(stop_gradient(g) * w) + loss(w, x)


def nested_def(w, x):
    def inner(v):
        return np.sum(np.sin(v) * v)
    return np.sum(grad(inner)(w) * w)


def nested_def_reading_x(w, x):
    def inner(v):
        return loss(v, x)
    return np.sum(grad(inner)(w) ** 2)


def penalty_value_and_grad(w, x):
    value, g = value_and_grad(lambda v: loss(v, x))(w)
    return value + np.sum(g ** 2)


def lambda_reading_w_in_a_loop(w, x):
    total = 0.0
    for i in range(2):
        g = grad(lambda v: np.sum(x[i] * v ** 2) * np.sum(w))(w)
        total = total + np.sum(g * w)
    return total


def lambda_with_wrt(w, x):
    gx = grad(lambda a, b: np.sum(np.cos(a @ b)), wrt=1)(x, w)
    return np.sum(gx * w)


PROGRAMS: list[Callable] = [maml_step, maml_two_steps, adversarial, stopped_lambda_gradient, nested_def,
                            nested_def_reading_x, penalty_value_and_grad, lambda_reading_w_in_a_loop,
                            lambda_with_wrt]
W = np.array([0.5, -0.3])
X = np.array([[0.2, 0.4], [1.0, -0.5]])
V = np.array([0.3, 1.0])


def reference(f: Callable) -> Callable:
    """``f`` with its stop_gradient frozen at (W, X), for finite differences."""
    if f is stopped_lambda_gradient:
        return lambda w, x: np.sum(3 * W ** 2 * w) + loss(w, x)
    return f


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_matches_finite_differences(f: Callable) -> None:
    if f is stopped_lambda_gradient:
        np.testing.assert_allclose(grad(f)(W, X), numerical_grad(reference(f), (W, X), 0), rtol=1e-6, atol=1e-8)
    else:
        assert_grad_matches(f, (W, X), 0)


@pytest.mark.parametrize("f", [f for f in PROGRAMS if f is not adversarial], ids=lambda f: f.__name__)
def test_hvp_matches_finite_differences_of_the_gradient(f: Callable) -> None:
    """(stop_gradient stops every order: the stopped term's gradient is constant in the hvp)"""
    eps = 1e-5
    g = grad(loss) if f is stopped_lambda_gradient else grad(f)
    expected = (g(W + eps * V, X) - g(W - eps * V, X)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f)(W, X, V), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_forward_mode_matches_finite_differences(f: Callable) -> None:
    value, slope = s2sad.jvp(f)(W, X, V)
    assert value == pytest.approx(f(W, X))
    assert slope == pytest.approx(numerical_grad(reference(f), (W, X), 0) @ V, rel=1e-6, abs=1e-8)


def test_standalone_module_runs_the_lambdas_gradient(tmp_path) -> None:
    namespace: dict = {}
    exec(compile(s2sad.adjoint_source(maml_step, standalone=True), str(tmp_path / "m.py"), "exec"), namespace)
    np.testing.assert_allclose(namespace["grad_maml_step"](W, X), grad(maml_step)(W, X), rtol=1e-12)


def test_a_derivative_of_a_lambda_bound_to_a_name_is_followed_at_its_calls() -> None:
    def bound(w, x):
        dl = grad(lambda v: loss(v, x))  # each call through dl: grad(lambda v: ...)(w), as it stands
        return loss(w - 0.1 * dl(w), x)

    assert_grad_matches(bound, (W, X), 0)


def test_a_derivative_bound_to_a_name_and_used_otherwise_is_refused() -> None:
    def kept(w, x):
        dl = grad(lambda v: loss(v, x))
        gradients = [dl]
        return loss(w - 0.1 * gradients[0](w), x)

    with pytest.raises(s2sad.S2SADError, match=r"'dl' is bound to the gradient of a lambda or nested function") as info:
        grad(kept)(W, X)
    assert info.value.location.line == kept.__code__.co_firstlineno + 2


def _apply(f: Callable, v: np.ndarray) -> np.ndarray:
    return f(v)


def test_a_derivative_of_a_lambda_bound_to_a_name_is_followed_through_map() -> None:
    def mapped(w, x):
        dl = grad(lambda v: loss(v, x))
        return loss(w - 0.1 * list(map(dl, [w]))[0], x)

    assert_grad_matches(mapped, (W, X), 0)


def test_a_derivative_of_a_lambda_bound_to_a_name_is_refused_where_it_is_passed_on() -> None:
    def passed_on(w, x):
        dl = grad(lambda v: loss(v, x))
        return loss(w - 0.1 * _apply(dl, w), x)

    with pytest.raises(s2sad.S2SADError, match=r"'dl' is bound to the gradient of a lambda .* "
                                                 r"write grad\(\.\.\.\)\(x\) there") as info:
        grad(passed_on)(W, X)
    assert (info.value.location.line, info.value.location.column) == (passed_on.__code__.co_firstlineno + 2, 38)