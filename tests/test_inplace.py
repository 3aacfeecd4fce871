"""``x op= v`` where x may be shared with another name (a view, an alias, an argument):
s2sad writes a new value, which is what Python does when x is a number; when x turns out to
be an array at run time, the generated code refuses it at the user's line (issue 18)."""
from __future__ import annotations

import numpy as np
import pytest

from s2sad import grad, hvp

from gradcheck import numerical_grad


def newton_scalar(x):
    x_prev = x
    x -= 0.1 * x ** 2
    return x * x_prev


def first_item_bumped(x):
    t = x[0]
    t += 1.0
    return t * x[1]


def _bumps_its_argument(s):
    s += 1.0
    return s * 2.0


def calls_a_helper_that_bumps(x):
    return np.sum(_bumps_its_argument(x[0]) * x)


def row_bumped(A):
    t = A[0]
    t += 1.0
    return np.sum(A ** 2)


X = np.array([0.3, -0.5, 0.7])


@pytest.mark.parametrize("f, args", [(newton_scalar, (0.7,)), (first_item_bumped, (X,)),
                                     (calls_a_helper_that_bumps, (X,))])
def test_a_number_updated_in_place_is_a_new_value(f, args):
    np.testing.assert_allclose(grad(f)(*args), numerical_grad(f, args, 0), rtol=1e-6, atol=1e-9)


def test_second_order_through_the_check():
    v = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(hvp(first_item_bumped)(X, v), [v[1], v[0], 0.0])


def test_an_array_updated_in_place_through_a_view_writes_its_base():
    # (refused until s2sad followed writes through views: see tests/test_views.py)
    M = np.array([[0.3, -0.5], [0.7, 0.2]])
    bumped = M.copy()
    bumped[0] += 1.0
    np.testing.assert_allclose(grad(row_bumped)(M.copy()), 2 * bumped)


def row_bumped_in_a_loop(A):
    t = A[0]
    for _ in range(2):
        t += 1.0
    return np.sum(A ** 2)


def test_an_array_updated_in_place_through_a_view_in_a_loop_writes_its_base():
    # (refused until a view taken before a loop was followed inside it)
    M = np.array([[0.3, -0.5], [0.7, 0.2]])
    bumped = M.copy()
    bumped[0] += 2.0
    np.testing.assert_allclose(grad(row_bumped_in_a_loop)(M.copy()), 2 * bumped)
