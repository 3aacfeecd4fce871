"""stop_gradient: constant for differentiation, identity at run time."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad
import s2sad as ad
from s2sad import ZeroGradientWarning, adjoint_source, grad, stop_gradient
from s2sad import stop_gradient as sg

from gradcheck import numerical_grad

sg_alias = s2sad.stop_gradient
rng = np.random.default_rng(0)


def stable_softmax_loss(x):
    z = x - stop_gradient(np.max(x, axis=-1, keepdims=True))
    numerator = np.exp(z)
    denominator = np.sum(numerator, axis=-1, keepdims=True)
    return np.sum(numerator / denominator * np.arange(x.shape[-1]))


def naive_softmax_loss(x):
    numerator = np.exp(x)
    denominator = np.sum(numerator, axis=-1, keepdims=True)
    return np.sum(numerator / denominator * np.arange(x.shape[-1]))


def backward_of(code: str) -> str:
    """The backward half of a generated gradient function: after its blank line."""
    return code.split("\ndef ", 1)[1].split("\n\n", 1)[1]


def test_runtime_identity():
    x = rng.normal(size=3)
    assert stop_gradient(x) is x
    assert stop_gradient(2.5) == 2.5
    pair = (x, [1.0, x])
    assert stop_gradient(pair) is pair


def test_stable_softmax_has_no_adjoint_of_max():
    code = adjoint_source(stable_softmax_loss)
    backward = [line for line in backward_of(code).splitlines() if "#" not in line]
    assert not any("max" in line for line in backward)
    assert "extremum_grad" not in code
    assert "stop_gradient(np.max(x, axis=-1, keepdims=True))" in code


def test_stable_softmax_gradient_equals_naive():
    x = rng.normal(size=(4, 5))
    np.testing.assert_allclose(grad(stable_softmax_loss)(x), grad(naive_softmax_loss)(x), rtol=1e-10)
    np.testing.assert_allclose(grad(stable_softmax_loss)(x), numerical_grad(naive_softmax_loss, (x,), 0),
                               rtol=1e-6, atol=1e-9)


def test_stable_softmax_large_logits_stay_finite():
    x = np.array([[1000.0, 1001.0, 999.0]])
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.all(np.isfinite(grad(stable_softmax_loss)(x)))


def x_times_stopped_x(x):
    return np.sum(x * stop_gradient(x))


def test_nested_gives_stopped_value_not_2x():
    x = rng.normal(size=5)
    np.testing.assert_allclose(grad(x_times_stopped_x)(x), x)


def straight_through(x):
    return np.sum(x + stop_gradient(np.round(x) - x))


def test_straight_through_estimator_has_gradient_one():
    x = rng.normal(size=6) * 3
    np.testing.assert_array_equal(grad(straight_through)(x), np.ones(6))
    assert straight_through(x) == pytest.approx(np.sum(np.round(x)))


def only_stopped(x):
    return np.sum(stop_gradient(x) ** 2)


def test_stopped_wrt_argument_gives_zeros_and_warns():
    x = rng.normal(size=(2, 3))
    with pytest.warns(ZeroGradientWarning, match=r"'x'.*stop_gradient"):
        g = grad(only_stopped)(x)
    assert g.shape == x.shape and g.dtype == x.dtype
    assert not np.any(g)


def stopped_tuple(x, y):
    a, b = stop_gradient((x * 2.0, y))
    return np.sum(a * y + b * x)


def test_stop_gradient_on_a_tuple():
    x, y = rng.normal(size=3), rng.normal(size=3)
    gx, gy = grad(stopped_tuple, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(gx, y)  # d/dx of b*x with b = y frozen
    np.testing.assert_allclose(gy, 2 * x)  # d/dy of a*y with a = 2x frozen


def feeds_only_stop(x, w):
    scale = np.exp(w) * np.sum(x ** 2)
    return np.sum(w * x * stop_gradient(scale))


def test_values_that_only_feed_stop_gradient_get_no_adjoint():
    code = adjoint_source(feeds_only_stop, wrt=("x", "w"))
    backward = "".join(line for line in backward_of(code).splitlines() if "#" not in line)
    assert "dscale" not in code and "exp" not in backward
    x, w = rng.normal(size=3), rng.normal(size=3)
    frozen = np.exp(w) * np.sum(x ** 2)

    def oracle(x, w):
        return np.sum(w * x * frozen)

    gx, gw = grad(feeds_only_stop, wrt=("x", "w"))(x, w)
    np.testing.assert_allclose(gx, numerical_grad(oracle, (x, w), 0), rtol=1e-6)
    np.testing.assert_allclose(gw, numerical_grad(oracle, (x, w), 1), rtol=1e-6)


def module_alias(x):
    return np.sum(x * ad.stop_gradient(x))


def from_import_alias(x):
    return np.sum(x * sg(x))


def assigned_alias(x):
    return np.sum(x * sg_alias(x))


@pytest.mark.parametrize("f", [module_alias, from_import_alias, assigned_alias],
                         ids=["module-alias", "from-import-as", "assigned-global"])
def test_aliases_are_recognised_by_identity(f):
    x = rng.normal(size=4)
    np.testing.assert_allclose(grad(f)(x), x)
    assert "stop" in adjoint_source(f)


def local_shadow(x):
    stop_gradient = np.exp
    return np.sum(stop_gradient(x))


def local_shadow_chosen_at_run_time(x):
    stop_gradient = np.exp if x[0] > 0 else np.sin
    return np.sum(stop_gradient(x))


def test_local_variable_named_stop_gradient_is_not_stop_gradient():
    # A local that merely shares the name is a different object: s2sad must not treat
    # it as stop_gradient (that would be a silently wrong zero gradient).  Bound once to
    # np.exp, it is np.exp; chosen at run time, it is the function chosen.
    x = rng.normal(size=4)
    np.testing.assert_allclose(grad(local_shadow)(x), np.exp(x))
    assert "stop_gradient(x)" in adjoint_source(local_shadow)
    x = np.array([0.5, -0.3, 1.2])
    np.testing.assert_allclose(grad(local_shadow_chosen_at_run_time)(x), np.exp(x))
    np.testing.assert_allclose(grad(local_shadow_chosen_at_run_time)(-x), np.cos(-x))


def _fake_stop_gradient(x):
    return x * 3.0


def global_shadow(x):
    return np.sum(x * fake(x))


fake = _fake_stop_gradient


def test_global_function_named_like_stop_gradient_is_not_treated_as_stop():
    # fake is an ordinary Python function: it is differentiated through (d/dx 3x^2 = 6x)
    x = rng.normal(size=4)
    np.testing.assert_allclose(grad(global_shadow)(x), 6 * x)


def mixed(x, w):
    h = np.tanh(x * w)
    baseline = stop_gradient(np.mean(h))
    return np.sum((h - baseline) ** 2) + np.sum(stop_gradient(w) * x)


def test_combined_with_ordinary_ops_against_frozen_finite_differences():
    x, w = rng.normal(size=5), rng.normal(size=5)
    frozen_baseline = np.mean(np.tanh(x * w))
    frozen_w = w.copy()

    def oracle(x, w):
        h = np.tanh(x * w)
        return np.sum((h - frozen_baseline) ** 2) + np.sum(frozen_w * x)

    gx, gw = grad(mixed, wrt=("x", "w"))(x, w)
    np.testing.assert_allclose(gx, numerical_grad(oracle, (x, w), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gw, numerical_grad(oracle, (x, w), 1), rtol=1e-6, atol=1e-9)
    # without the stop the gradient differs: the test can fail
    def unstopped(x, w):
        h = np.tanh(x * w)
        return np.sum((h - np.mean(h)) ** 2) + np.sum(w * x)
    assert not np.allclose(gw, numerical_grad(unstopped, (x, w), 1), rtol=1e-4)


def test_no_warning_when_gradient_flows():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grad(mixed)(rng.normal(size=3), rng.normal(size=3))


class _Recorder:
    """Keeps what it is called with (as a probe or a logger would) and returns it."""

    def __init__(self) -> None:
        self.seen: list = []

    def __call__(self, x):
        self.seen.append(np.copy(x))
        return x


_RECORD = _Recorder()
_record = lambda x: _RECORD(x)  # noqa: E731 - (a lambda bound at module level, on a line of its own)
_HISTORY: list = []


def _e_step(h):
    _HISTORY.append(float(np.sum(h)))  # (state of its own, changed: no gradient asked through it)
    r = np.exp(h - np.max(h))
    return r / np.sum(r)


def _stopped_calls_that_keep_state(x):
    r = stop_gradient(_e_step(x * 2.0))
    z = stop_gradient(_record(np.tanh(x)))
    return np.sum(r * x ** 2) + np.sum(z * x)


def test_a_stopped_call_that_changes_state_of_its_own_runs():
    """(It was refused at second order and first: 'it may change state read later'; inside
    stop_gradient no gradient is asked through it, and it changes none of its arguments.)"""
    x = np.array([0.3, -0.5, 1.2])
    r, z = np.exp(2 * x - np.max(2 * x)), np.tanh(x)
    r = r / np.sum(r)
    np.testing.assert_allclose(s2sad.grad(_stopped_calls_that_keep_state)(x), 2 * r * x + z, rtol=1e-12)
    np.testing.assert_allclose(s2sad.hvp(_stopped_calls_that_keep_state)(x, np.ones(3)), 2 * r, rtol=1e-12)
