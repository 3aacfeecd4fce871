"""Defects found by probing s2sad with realistic programs (probe 9): classes, closures,
containers, control flow and the scalars of the Python people write around NumPy, checked
against central finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from tests.gradcheck import numerical_grad

X = np.array([0.7, -1.2, 0.4, -0.3, 1.1])


def signed_total(x: np.ndarray) -> float:
    total = 0
    for i in range(len(x)):
        if x[i] > 0:
            total += x[i]
        else:
            total -= 2 * x[i]
    return total


def integer_array_accumulator(x: np.ndarray) -> float:
    acc = np.zeros(3, dtype=int)
    for i in range(3):
        if x[i] > 0:
            acc += 2
        else:
            acc = acc + x[:3] * i
    return np.sum(acc ** 2)


@pytest.mark.parametrize("f", [signed_total, integer_array_accumulator])
@pytest.mark.parametrize("specialize", [True, False])
def test_accumulator_that_starts_as_an_int(f, specialize: bool) -> None:
    # the zero gradient of the int (or int array) the loop starts from was an int array, and
    # adding the float gradient of a later iteration to it in place failed (UFuncTypeError)
    expected = numerical_grad(f, [X], 0)
    np.testing.assert_allclose(s2sad.grad(f, specialize=specialize)(X), expected, rtol=1e-6)
    np.testing.assert_allclose(s2sad.value_and_grad(f)(X)[1], expected, rtol=1e-6)
