"""Loops whose variables are first assigned inside them, and other control-flow corners."""
from __future__ import annotations

import numpy as np

from s2sad import grad

from gradcheck import numerical_grad


def read_in_next_iteration(x):
    for i in range(3):
        if i > 0:
            x = x * prev
        prev = x + 1.0
    return np.sum(x)


def assigned_in_loop_used_after(x):
    for i in range(3):
        last = x * (i + 1.0)
    return np.sum(last ** 2)


def test_a_value_handed_to_the_next_iteration():
    x = np.array([0.3, -0.5, 0.8])
    np.testing.assert_allclose(grad(read_in_next_iteration)(x),
                               numerical_grad(read_in_next_iteration, (x,), 0), rtol=1e-6)


def test_a_value_first_assigned_in_the_loop_and_read_after_it():
    x = np.array([0.3, -0.5, 0.8])
    np.testing.assert_allclose(grad(assigned_in_loop_used_after)(x), 2 * 9 * x, rtol=1e-12)


def one_line(x): return x * x


def one_line_blocks(x):
    if x > 0: y = x * 3.0
    else: y = -x
    for i in range(2): y = y * x
    return y


def test_one_line_bodies():
    assert grad(one_line)(3.0) == 6.0
    assert grad(one_line_blocks)(2.0) == 36.0
    assert grad(one_line_blocks)(-2.0) == -12.0


def added_to_in_one_branch(x, y, c):
    z = x + y
    if c > 0:
        w = z * 2.0
    else:
        w = z * 3.0
    return np.sum(w + z)


def added_to_in_a_loop(x, y, n):
    z = x + y
    a = np.sin(z)
    s = a
    for i in range(n):
        s = s + z * 2.0
    return np.sum(s + z)


def test_in_place_accumulation_only_where_every_path_owns_the_adjoint():
    """An adjoint that one branch (or a loop's iterations) replaced by a new array may still
    share the incoming gradient on the other path: no += into it after the if or loop."""
    x, y = np.array([0.3, -0.5]), np.array([0.1, 0.4])
    for c in (1.0, -1.0):
        np.testing.assert_allclose(grad(added_to_in_one_branch)(x, y, c),
                                   numerical_grad(added_to_in_one_branch, (x, y, c), 0), rtol=1e-6)
    for n in (0, 2):
        np.testing.assert_allclose(grad(added_to_in_a_loop)(x, y, n),
                                   numerical_grad(added_to_in_a_loop, (x, y, n), 0), rtol=1e-6)
