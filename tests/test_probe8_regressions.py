"""Defects found by probing s2sad with realistic programs (probe 8): scientific code, models,
and the Python people write around them, checked against central finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad.errors import NoGradientRuleError

X = np.array([0.7, -1.2, 0.4])


def act(t: np.ndarray) -> np.ndarray:
    """A global function whose name a comprehension variable reuses below."""
    return t ** 3


def activations_summed(x: np.ndarray) -> float:
    return np.sum(np.stack([act(x) for act in (np.sin, np.cos)]))


def generator_of_activations(x: np.ndarray) -> float:
    return np.sum(sum(act(x) for act in [np.sin, np.cos]))


@pytest.mark.parametrize("f", [activations_summed, generator_of_activations])
def test_comprehension_variable_is_not_the_global_of_its_name(f) -> None:
    # the call act(x) in the comprehension was resolved to the global act: the value and the
    # gradient were act's, silently; the variable is a local function now, refused at the call
    with pytest.raises(NoGradientRuleError) as info:
        s2sad.value_and_grad(f)(X)
    assert info.value.location.line == f.__code__.co_firstlineno + 1
    assert "'act' is a local variable" in info.value.message


def comprehension_over_data(x: np.ndarray) -> float:
    return sum(act * act for act in x) + np.sum(act(x))


def test_comprehension_variable_shadowing_a_global_reads_the_data() -> None:
    expected = 2 * X + 3 * X ** 2
    np.testing.assert_allclose(s2sad.grad(comprehension_over_data)(X), expected)



SCALE = np.array([10.0, 20.0, 30.0])


def global_read_after_comprehension(x: np.ndarray) -> float:
    s = sum(SCALE * 2 for SCALE in x)
    return s + np.sum(SCALE * x ** 2)


def global_read_after_dict_comprehension(x: np.ndarray) -> float:
    d = {SCALE: x[SCALE] ** 2 for SCALE in range(3)}
    return d[0] + d[2] * np.sum(SCALE * x)


@pytest.mark.parametrize("f, expected", [
    (global_read_after_comprehension, 2 + 2 * SCALE * X),
    (global_read_after_dict_comprehension, 2 * X * (np.arange(3) == 0)
     + 2 * X * (np.arange(3) == 2) * np.sum(SCALE * X) + X[2] ** 2 * SCALE)])
def test_global_read_beside_a_comprehension_variable_of_its_name(f, expected: np.ndarray) -> None:
    # after the comprehension, SCALE is the global again; the generated code read the
    # comprehension's last item there (value and gradient both wrong, silently)
    value, gradient = s2sad.value_and_grad(f)(X)
    np.testing.assert_allclose(value, f(X))
    np.testing.assert_allclose(gradient, expected)
    np.testing.assert_allclose(s2sad.grad(f, specialize=False)(X), expected)
