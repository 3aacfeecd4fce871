"""A function passed as an argument to a Python function the differentiated function calls
(``rk4_step(decay, y, h)``, ``apply(np.tanh, z)``): the callee is compiled specialised to
that function, and calls through its parameter are differentiated as direct calls; a
function argument s2sad cannot know where it compiles the call stays refused, located."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import grad, hvp, jvp, value_and_grad, vjp

from gradcheck import assert_grad_matches, numerical_grad

rng = np.random.default_rng(29)


def directional(f, x, v, eps=1e-6):
    """Central finite difference of ``f`` at ``x`` along ``v``."""
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


def rk4_step(rhs, y, h):
    k1 = rhs(y)
    k2 = rhs(y + 0.5 * h * k1)
    k3 = rhs(y + 0.5 * h * k2)
    k4 = rhs(y + h * k3)
    return y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def decay(y):
    return -0.5 * y ** 3


def integrate(y0):
    y = y0
    for _ in range(10):
        y = rk4_step(decay, y, 0.1)
    return np.sum(y ** 2)


def apply(f, x):
    return f(x)


def apply_twice(g, x):
    return apply(g, apply(g, x))  # the function argument passed on to another helper


def with_numpy_function(z):
    return np.sum(apply(np.tanh, z) * apply(np.sin, z))


def with_user_function(z):
    return np.sum(apply(decay, z))


def with_lambda(z):
    return np.sum(apply(lambda t: t ** 2 * np.cos(t), z))


def with_nested_def(z):
    def cubic(t):
        return t ** 3 - 2.0 * t
    return np.sum(apply(cubic, z) ** 2)


def two_functions(z):
    return np.sum(apply(np.exp, z) + 3.0 * apply(decay, z) * rk4_step(np.sin, z, 0.2))


def fold(f, x, n):
    if n == 0:
        return x
    return fold(f, f(x), n - 1)  # recursive, passing its function argument on


def folded(z):
    return np.sum(fold(np.sin, z, 3) * fold(decay, z, 2))


def activate(x, act=np.tanh):
    return act(x) * 2.0


def with_default(z):
    return np.sum(activate(z) + activate(z, act=decay))


def passed_on(z):
    return np.sum(apply_twice(np.tanh, z) + apply_twice(decay, z))


@pytest.mark.parametrize("f", [integrate, with_numpy_function, with_user_function, with_lambda,
                               with_nested_def, two_functions, passed_on, folded, with_default])
def test_gradient_matches_finite_differences(f):
    assert_grad_matches(f, (rng.normal(size=3) * 0.8,), 0)


@pytest.mark.parametrize("f", [integrate, two_functions, passed_on])
def test_value_and_grad(f):
    z = rng.normal(size=3) * 0.8
    value, g = value_and_grad(f)(z)
    assert value == pytest.approx(f(z))
    np.testing.assert_allclose(g, numerical_grad(f, (z,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [integrate, two_functions, passed_on, with_lambda, folded])
def test_forward_and_second_order(f):
    z, v = rng.normal(size=3) * 0.8, rng.normal(size=3)
    value, slope = jvp(f)(z, v)
    assert value == pytest.approx(f(z))
    assert slope == pytest.approx(directional(f, z, v), rel=1e-6)
    gradient = grad(f)
    np.testing.assert_allclose(hvp(f)(z, v), directional(gradient, z, v), rtol=1e-5, atol=1e-7)


def test_vjp_of_a_vector_output():
    def step(y):
        return rk4_step(decay, y, 0.1) * apply(np.tanh, y)
    y, c = rng.normal(size=3), rng.normal(size=3)
    out, pullback = vjp(step)(y)
    np.testing.assert_allclose(out, step(y))
    np.testing.assert_allclose(pullback(c), numerical_grad(lambda t: c @ step(t), (y,), 0), rtol=1e-6)


def test_jit_auto():
    z = rng.normal(size=3) * 0.8
    np.testing.assert_allclose(grad(integrate, jit="auto")(z), numerical_grad(integrate, (z,), 0), rtol=1e-6)


def test_specialisations_are_kept_apart():
    """The same helper with two functions: each call differentiates its own function."""
    z = rng.normal(size=3)
    np.testing.assert_allclose(grad(with_numpy_function)(z), numerical_grad(with_numpy_function, (z,), 0),
                               rtol=1e-6)
    np.testing.assert_allclose(grad(with_user_function)(z), -1.5 * z ** 2, rtol=1e-12)


def held_in_a_container(z):
    functions = [np.tanh, np.sin]
    return np.sum(apply(functions[0], z))


def test_function_in_a_container_is_refused_where_it_is_called():
    with pytest.raises(s2sad.NoGradientRuleError) as info:
        grad(held_in_a_container)(np.ones(2))
    loc = info.value.location
    assert loc.filename == __file__
    assert loc.line == apply.__code__.co_firstlineno + 1
    assert loc.source_line[loc.column - 1:].startswith("f(x)")
    assert "'f' is a parameter called as a function" in str(info.value)


def closure_over_an_argument(z):
    def scaled(t):
        return t * z
    return np.sum(apply(scaled, z))


def lambda_over_an_argument(z):
    return np.sum(apply(lambda t: t * z, z))


@pytest.mark.parametrize("f", [closure_over_an_argument, lambda_over_an_argument])
def test_function_reading_the_callers_variables(f):
    """A nested function or lambda reading the caller's variables was refused where it was
    written; the callee is now compiled for it, and the values it reads get their gradients
    (tests/test_lang10.py checks every mode)."""
    z = np.array([0.5, -1.5])
    np.testing.assert_allclose(grad(f)(z), numerical_grad(f, (z,), 0), rtol=1e-6)


def test_functions_specialised_to_their_arguments_are_bounded_and_forgotten_with_the_function():
    import gc
    import weakref

    from s2sad.passes import callees

    def apply(g, x):
        return g(x)

    passed = [lambda x, k=k: x * k for k in range(100)]  # (kept alive: their ids stay theirs)
    made = [callees.with_function_arguments(apply, {"g": g}) for g in passed]
    assert callees.with_function_arguments(apply, {"g": passed[-1]}) is made[-1]
    assert len(callees._specialised[apply]) == callees._SPECIALISED_PER_FUNCTION
    assert made[-1].__s2sad_arguments__ == {"g": passed[-1]}
    alive = weakref.ref(apply)
    del apply, made
    gc.collect()
    assert alive() is None  # (no cache entry keeps it alive)
