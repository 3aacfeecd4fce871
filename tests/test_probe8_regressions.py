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
