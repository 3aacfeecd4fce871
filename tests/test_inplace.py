"""``x op= v`` where x may be shared with another name (a view, an alias, an argument):
s2sad writes a new value, which is what Python does when x is a number; when x turns out to
be an array at run time, the generated code refuses it at the user's line (issue 18)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import s2sad
from s2sad import UnsupportedSyntaxError, grad, hvp

from gradcheck import assert_grad_matches, numerical_grad


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


def gauss_seidel(b):
    x = np.zeros(4)
    for _ in range(3):
        for i in range(4):
            left = x[i - 1] if i > 0 else 0.0  # (assigned before it is read, in every iteration)
            right = x[i + 1] if i < 3 else 0.0
            x[i] = (b[i] + left + right) / 3.0
    return np.sum(x * b)


def test_a_name_each_iteration_assigns_before_reading_it_does_not_see_the_next_write():
    """Refused until a name read in a loop counted as read after a write only when the next
    iteration may read the value it holds ('left' may be a view of x, read later in the loop)."""
    b = np.array([0.3, -0.7, 1.1, 0.5])
    np.testing.assert_allclose(grad(gauss_seidel)(b.copy()), numerical_grad(gauss_seidel, (b,), 0),
                               rtol=1e-6, atol=1e-9)


def alias_read_by_the_next_iteration(x):
    y = x * 1.0
    z = y
    s = 0.0
    for i in range(2):
        s = s + np.sum(z)
        y[i] = x[i] ** 2
    return s + np.sum(y)


def test_an_alias_the_next_iteration_reads_is_still_refused():
    with pytest.raises(UnsupportedSyntaxError, match="'y' and 'z' are the same object, and 'z' is read later"):
        grad(alias_read_by_the_next_iteration)(np.array([0.3, -0.7]))


# ---- an array stored into a list or dict, then changed in place --------------------------------

def stored_in_a_dict_then_scaled(x):
    d = {}
    y = x * 1.0
    d["a"] = y
    y *= 2.0
    return np.sum(d["a"] * x)


def stored_in_a_dict_each_iteration(x):
    d = {}
    y = x * 1.0
    for i in range(3):
        d[i] = y
        y *= 2.0
    return np.sum(d[0] * x) + np.sum(d[2])


def stored_in_an_array_each_iteration(x):
    rows = np.zeros((3, x.size))
    y = x * 1.0
    for t in range(3):
        rows[t] = y  # (an array's row is a copy)
        y *= 0.5
    return np.sum(rows * x)


def a_number_stored_in_a_dict(x):
    d = {}
    y = x[0] * 1.0
    d["a"] = y
    y *= 2.0
    return np.sum(d["a"] * x) + y


def written_the_next_iteration_before_the_store(x):
    d = {}
    y = x * 1.0
    for i in range(3):
        y[0] = x[i]
        d[i] = y
    return np.sum(d[0] * x)


def stored_as_a_view_then_its_base_changed(x):
    d = {}
    A = np.outer(x, x)
    r = A[0]
    d["r"] = r
    A[0, 0] = 3.0
    return np.sum(d["r"] * x)


def rebound_in_a_branch_only(x):
    d = {}
    y = x * 1.0
    for i in range(3):
        if i > 0:
            y = np.zeros(3)
        y[0] = x[i]
        d[i] = y
    return np.sum(d[0] * x)


BUFFER = np.zeros(3)


def zeros(n):
    """Named like NumPy's, but returns the same array at every call."""
    return BUFFER


def stored_from_a_function_named_like_numpys(x):
    d = {}
    for i in range(2):
        y = zeros(3)
        y[0] = x[i]
        d[i] = y
    return np.sum(d[0] * x)


@pytest.mark.parametrize("f, line", [(stored_in_a_dict_then_scaled, 'd["a"] = y'),
                                     (stored_from_a_function_named_like_numpys, "d[i] = y"),
                                     (stored_in_a_dict_each_iteration, "d[i] = y"),
                                     (written_the_next_iteration_before_the_store, "d[i] = y"),
                                     (rebound_in_a_branch_only, "d[i] = y")])
def test_an_array_a_dict_holds_changed_in_place_is_refused(f, line):
    # the dict holds y itself: the in-place change reached what the function reads from it
    # (value and gradient wrong, silently); a call of the user's zeros was taken for NumPy's,
    # a new array, by its name
    with pytest.raises(s2sad.S2SADError, match=r"holds the array 'y' itself") as info:
        s2sad.grad(f)(np.array([0.5, -1.0, 1.5]))
    lines, first = inspect.getsourcelines(f)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if line in s)


def test_a_view_stored_then_its_base_changed_is_refused_at_the_write():
    # d holds a view of A: writing A changes what d holds (s2sad reads d as stored)
    with pytest.raises(s2sad.S2SADError, match=r"'d' holds 'A' or a view of it, and is read later") as info:
        s2sad.grad(stored_as_a_view_then_its_base_changed)(np.array([0.5, -1.0, 1.5]))
    lines, first = inspect.getsourcelines(stored_as_a_view_then_its_base_changed)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if "A[0, 0] = 3.0" in s)


@pytest.mark.parametrize("f", [stored_in_an_array_each_iteration, a_number_stored_in_a_dict])
def test_a_copy_stored_then_changed_in_place_is_differentiated(f):
    assert_grad_matches(f, (np.array([0.5, -1.0, 1.5]),), 0)


# ---- an array built in place, then stored: nothing changes it afterwards -------------------------

def built_then_stored(x):
    d = {}
    y = np.zeros(2)
    y[0] = x[0]
    y += x[1]
    d["a"] = y
    return np.sum(d["a"] ** 2)


def built_afresh_each_iteration(x):
    ys = [None, None, None]
    for i in range(3):
        y = np.zeros(2)
        y[0] = x[i]
        y[1] = x[i] ** 2
        ys[i] = y
    return np.sum(ys[0] * ys[1] + ys[2])


def stored_then_bound_afresh(x):
    d = {}
    y = x * 1.0
    y[0] = 2.0 * x[1]
    d["first"] = y
    y = x ** 2
    y[1] = 0.0
    d["second"] = y
    return np.sum(d["first"] * d["second"])


@pytest.mark.parametrize("f", [built_then_stored, built_afresh_each_iteration, stored_then_bound_afresh])
def test_an_array_changed_in_place_only_before_it_is_stored_is_differentiated(f):
    # these were refused: the check was emitted wherever the function changed y in place
    assert_grad_matches(f, (np.array([0.5, -1.0, 1.5]),), 0)
