"""Loops whose variables are first assigned inside them, and other control-flow corners."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import grad

from gradcheck import assert_grad_matches, numerical_grad


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


def loop_target_bound_before(x, n):
    y = x * 2.0
    for y in range(n):
        pass
    return np.sum(y * x)


def inner_target_handed_on(x, n):
    s = 0.0
    j = 0
    for i in range(n):
        for j in range(i):
            s = s + x[j] * x[i]
    return s + j * np.sum(x)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_loop_that_runs_no_iteration_leaves_its_target_as_it_was(n):
    """The target keeps its earlier value (and gradient) when the loop body never runs; it is
    an int, with no gradient, once it has (the zero-trip case was an UnboundLocalError)."""
    x = np.array([0.3, -0.5, 0.8])
    for f in (loop_target_bound_before, inner_target_handed_on):
        np.testing.assert_allclose(grad(f)(x, n), numerical_grad(f, (x, n), 0), rtol=1e-6, atol=1e-9)


def same_condition(x):
    c = np.sum(x) > 0
    if c:
        a = x * x
    else:
        b = -x
    if c:
        y = np.sum(a * x)
    else:
        y = np.sum(b * x)
    return y


def cubic_or_square(x):
    if x > 0:
        y = x * x * x
    else:
        y = -x * x
    return y


@pytest.mark.parametrize("x", [np.array([1.0, 2.0]), np.array([-1.0, -2.0])])
def test_a_name_bound_on_one_path_and_read_under_the_same_condition(x):
    """``a`` is bound only where c holds and read only where c holds again: the adjoint's
    zero for it, made before the second if, raised UnboundLocalError where c is false."""
    assert_grad_matches(same_condition, [x], wrt=0)
    h = 1e-5
    g = s2sad.grad(same_condition)
    v = np.array([0.3, -0.7])
    np.testing.assert_allclose(s2sad.hvp(same_condition)(x, v), (g(x + h * v) - g(x - h * v)) / (2 * h),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("x, expected", [(2.0, 12.0), (-2.0, -2.0)])
def test_reverse_over_reverse_through_a_branch(x, expected):
    """grad(grad(f)) of a branch: the second pass reads the first's branch-local values."""
    assert s2sad.grad(s2sad.grad(cubic_or_square))(x) == pytest.approx(expected)
