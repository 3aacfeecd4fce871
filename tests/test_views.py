"""In-place writes through views (issue 18, point 3): a write into a view changes its base and
every other view of it, as in NumPy and PyTorch; s2sad writes each as a new value of every
array it changes.  ``np.add.at`` / ``np.subtract.at`` and ``out=`` are functional updates too.
Each function is checked three ways: its gradient against central finite differences, its
value against plain Python, and the caller's arrays left as they were."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import s2sad
from s2sad import grad, hessian, hvp, value_and_grad

from gradcheck import assert_grad_matches, numerical_grad

rng = np.random.default_rng(18)
W3 = rng.normal(size=3)
W23 = rng.normal(size=(2, 3))


# --- a write into a view changes its base ----------------------------------------------------
def slice_bumped(x):
    y = x[1:]
    y += 1.0
    return np.sum(W3 * x ** 2)


def slice_scaled_by_a_value(x):
    x = x * 1.0
    y = x[1:]
    y *= x[0]
    return np.sum(W3 * x ** 3)


def transpose_row_set(A):
    t = A.T
    t[0] = 0.0
    return np.sum(W23 * A ** 2)


def transpose_row_from_a_value(A):
    t = np.transpose(A)
    t[1] = t[1] * A[0, 0]
    return np.sum(W23 * np.sin(A))


def swapaxes_row_set(A):
    t = A.swapaxes(0, 1)
    t[2] = A[1, 0] * 3.0
    return np.sum(W23 * A ** 2)


def reshape_item_set(x):
    r = x.reshape(3, 1)
    r[0] = 5.0 * x[2]
    return np.sum(W3 * x ** 2)


def ravel_item_set(A):
    v = A.ravel()
    v[2] = v[0] * v[4]
    return np.sum(W23 * A ** 2)


def np_reshape_bumped(A):
    r = np.reshape(A, (3, 2))
    r[1:] += A[0, 0]
    return np.sum(W23 * A ** 3)


def view_of_a_view(A):
    r = A[1]
    s = r[1:]
    s *= 2.0
    return np.sum(W23 * A ** 2) + np.sum(r)


def sibling_views(x):
    head = x[:2]
    tail = x[1:]
    head[1] = 4.0 * x[0]
    return np.sum(tail ** 2) + np.sum(W3 * x)


# --- a write into the base changes the views read later ------------------------------------------
def base_written_after_view(x):
    y = x[1:]
    x[0] = 2.0 * x[2]
    x[2] *= 2.0
    return np.sum(y ** 2) + np.sum(W3 * x)


def base_bumped_after_view(x):
    b = x * 1.0
    a = b[:]
    b *= 2.0
    return np.sum(a * x)


def base_written_under_transpose(A):
    t = A.T
    A[0] = A[1] ** 2
    return np.sum(W23.T * t ** 2)


def base_written_under_reshape(x):
    r = x.reshape(3, 1)
    x[1] = x[0] * x[2]
    return np.sum(r * W3[:, None] ** 2)


def base_written_and_view_read_on_one_line(x):
    y = x[1:]; x[1] = 5.0 * x[0]; s = np.sum(y ** 2)  # noqa: E702
    return s + np.sum(W3 * x)


def view_bumped_by_its_base(x):
    # (NumPy reads x[:-1] before it writes: gave a wrong gradient)
    y = x[1:]
    y += x[:-1]
    return np.sum(W3 * x ** 2)


# --- copies: nothing to write back ---------------------------------------------------------------
def item_of_a_vector(x):
    t = x[0]
    t += 1.0
    return t * x[1]


def fancy_index_copy(x):
    y = x[[0, 2]]
    y[0] = 10.0
    return np.sum(y ** 2) + np.sum(W3 * x ** 2)


def reshape_of_a_transpose_copies(A):
    # NumPy copies here (A.T is not contiguous): the write stays in r
    t = A.T
    r = t.reshape(6)
    r[0] = 7.0
    return np.sum(r ** 2) + np.sum(W23 * A ** 2)


# --- np.add.at, np.subtract.at, out= -----------------------------------------------------------
def add_at_repeated(x):
    z = np.zeros(3)
    np.add.at(z, [0, 0, 2], x)
    return np.sum(z ** 2)


def subtract_at_scalar_value(x):
    z = x * 2.0
    np.subtract.at(z, [1, 1], x[0])
    return np.sum(W3 * z ** 2)


def add_at_rows(A):
    z = np.ones((2, 3))
    np.add.at(z, [1, 1, 0], np.stack([A[0], A[1], A[0]]))
    return np.sum(W23 * z ** 2)


def add_at_into_a_view(A):
    z = np.zeros((2, 3))
    row = z[1]
    np.add.at(row, [0, 2, 2], A[0])
    return np.sum(W23 * z ** 2) + np.sum(A)


def out_multiply(x):
    z = np.empty(3)
    np.multiply(x, x, out=z)
    return np.sum(W3 * z)


def out_add_value_aliases(x):
    z = np.zeros(3)
    w = np.add(x, 1.0, out=z)
    return np.sum(w ** 2)


def out_exp(x):
    z = np.empty(3)
    w = np.exp(x, out=z)
    return np.sum(W3 * w) + np.sum(z)


def out_matmul(A):
    C = np.empty((2, 2))
    np.matmul(A, A.T, out=C)
    return np.sum(C ** 2)


def out_of_a_rule_with_an_out_parameter(x):
    buf = np.zeros(3)
    return np.sum(W3 * np.cumsum(x ** 2, out=buf)) + np.sum(buf)


def out_into_a_view(x):
    z = np.zeros((2, 3))
    np.sin(x, out=z[0])
    return np.sum(W23 * z)


def unpacked_rows(A):
    A = A * 1.0
    th, om = A[0], A[1]
    A[0] += om
    return np.sum(th ** 2)


def unpacked_items_are_copies(x):
    th, om = x[0], x[1]
    x[0] += om
    return th * np.sum(x)


def out_inside_an_expression(x):
    z = np.empty(3)
    return np.sum(np.exp(x, out=z)) + np.sum(W3 * z)


# --- in a loop or a branch: the view taken and written in the same block ----------------------------
def rows_scaled_in_a_loop(A):
    A = A * 1.0
    for i in range(2):
        r = A[i]
        r *= A[1 - i, 0] + 1.0
    return np.sum(W23 * A ** 2)


def view_in_a_while_loop(x):
    k = 0
    while k < 2:
        y = x[k:]
        y *= 1.5
        k += 1
    return np.sum(W3 * x ** 2)


def views_in_nested_loops(A):
    for i in range(2):
        for j in range(2):
            r = A[i]
            r[j + 1] = r[j] * A[1 - i, j]
    return np.sum(W23 * A ** 2)


def view_in_a_branch(x):
    if x[0] > 0:
        y = x[1:]
        y *= 2.0
    return np.sum(W3 * x ** 2)


def add_at_in_a_loop(x):
    z = np.zeros(3)
    for k in range(3):
        np.add.at(z, [k, 0], x[k] * x[:2])
    return np.sum(z ** 2)


def out_in_a_loop(x):
    z = np.ones(3)
    for _ in range(2):
        np.multiply(z, x, out=z)
    return np.sum(W3 * z ** 2)


X = np.array([0.3, -0.5, 0.7])
A = np.array([[0.3, -0.5, 0.7], [1.1, 0.2, -0.4]])

CASES = [
    (slice_bumped, X), (slice_scaled_by_a_value, X), (transpose_row_set, A),
    (transpose_row_from_a_value, A), (swapaxes_row_set, A), (reshape_item_set, X), (ravel_item_set, A),
    (np_reshape_bumped, A), (view_of_a_view, A), (sibling_views, X), (base_written_after_view, X),
    (base_bumped_after_view, X), (base_written_under_transpose, A), (base_written_under_reshape, X),
    (base_written_and_view_read_on_one_line, X), (view_bumped_by_its_base, X),
    (item_of_a_vector, X), (fancy_index_copy, X), (reshape_of_a_transpose_copies, A),
    (add_at_repeated, X), (subtract_at_scalar_value, X), (add_at_rows, A), (add_at_into_a_view, A),
    (out_multiply, X), (out_add_value_aliases, X), (out_exp, X), (out_matmul, A), (out_into_a_view, X), (out_of_a_rule_with_an_out_parameter, X),
    (unpacked_rows, A), (unpacked_items_are_copies, X), (out_inside_an_expression, X),
    (rows_scaled_in_a_loop, A), (view_in_a_while_loop, X), (views_in_nested_loops, A), (view_in_a_branch, X),
    (add_at_in_a_loop, X), (out_in_a_loop, X),
]


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_and_value_match_plain_python(f, x):
    given = x.copy()
    value, g = value_and_grad(f)(given)
    np.testing.assert_array_equal(given, x)  # the caller's array is not written to
    np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(lambda v: f(v.copy()), (x,), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(given, x)


def _fd_of_grad(f, x, v, eps=1e-6):
    return (grad(f)(x + eps * v) - grad(f)(x - eps * v)) / (2 * eps)


SECOND = [(slice_scaled_by_a_value, X), (transpose_row_from_a_value, A), (base_written_after_view, X),
          (view_of_a_view, A), (add_at_repeated, X), (subtract_at_scalar_value, X), (out_exp, X),
          (out_matmul, A), (rows_scaled_in_a_loop, A), (views_in_nested_loops, A), (out_in_a_loop, X)]


@pytest.mark.parametrize("f, x", SECOND, ids=[f.__name__ for f, _ in SECOND])
def test_hessian_vector_products(f, x):
    v = rng.normal(size=x.shape)
    np.testing.assert_allclose(hvp(f)(x.copy(), v), _fd_of_grad(f, x, v), rtol=1e-5, atol=1e-7)


FORWARD = [(slice_scaled_by_a_value, X), (base_bumped_after_view, X), (add_at_repeated, X),
           (subtract_at_scalar_value, X), (out_exp, X), (out_into_a_view, X), (rows_scaled_in_a_loop, A)]


@pytest.mark.parametrize("f, x", FORWARD, ids=[f.__name__ for f, _ in FORWARD])
def test_forward_mode(f, x):
    """(Forward mode compiles the function as for a caller: its own arrays only are written.)"""
    v = rng.normal(size=x.shape)
    value, tangent = s2sad.jvp(f)(x.copy(), v)
    np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
    expected = np.sum(numerical_grad(lambda u: f(u.copy()), (x,), 0) * v)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-8)


def test_hessian_through_a_view_write():
    H = hessian(slice_scaled_by_a_value)(X.copy())
    columns = [_fd_of_grad(slice_scaled_by_a_value, X, e) for e in np.eye(3)]
    np.testing.assert_allclose(H, np.stack(columns, axis=1), rtol=1e-5, atol=1e-7)


def test_base_array_after_the_write_is_what_numpy_gives():
    """The value the function returns is the base itself (summed with distinct weights), so it
    pins down every entry the write changed."""
    def bumped_rows(A):
        t = A.T
        t[1:] *= 3.0
        return np.sum(A * np.arange(1.0, 7.0).reshape(2, 3))

    plain = A.copy()
    plain.T[1:] *= 3.0
    value, _ = value_and_grad(bumped_rows)(A.copy())
    np.testing.assert_allclose(value, np.sum(plain * np.arange(1.0, 7.0).reshape(2, 3)))


# --- refusals ---------------------------------------------------------------------------------
def view_rebound_in_the_loop_that_writes_it(x):
    y = x * 1.0
    v = y[1:]
    for _ in range(2):
        v += x[:-1]
        v = v * 1.0  # (the next iteration writes a copy: y no longer changes)
    return np.sum(y ** 2) + np.sum(v)


def view_from_an_earlier_iteration(x):
    r = None
    for i in range(2):
        if i > 0:
            r *= 2.0
        r = x[i:]
    return np.sum(x ** 2)


def reshape_after_writes_in_a_loop(x):
    y = x * 1.0
    for i in range(2):
        y[i] = y[i] * x[2]
    r = y.reshape(3, 1)  # (the loop's last copy, or none: how NumPy's y is laid out is unknown)
    r[1, 0] = x[0]
    return np.sum(y ** 3)


def view_of_a_list_item(x):
    rows = [x * 1.0, x * 2.0]
    r = rows[0]
    r[0] = 5.0
    return np.sum(rows[0] ** 2)


def multiply_at(x):
    z = np.ones(3)
    np.multiply.at(z, [0, 1], x[:2])
    return np.sum(z)


def out_of_another_dtype(x):
    z = np.empty(3, dtype=np.float32)
    np.multiply(x, x, out=z)
    return np.sum(z)


def out_of_a_global(x):
    np.multiply(x, x, out=W3)
    return np.sum(W3)


def piece_of_a_split(x):
    z = x * 2.0
    a, b = np.array_split(z, 2)
    a[0] = 5.0
    return np.sum(z ** 2) + np.sum(b)


def unpacked_split_pieces(x):
    z = np.concatenate([x, x])
    pieces = np.split(z, 2)
    first, second = pieces
    second *= 3.0
    return np.sum(z) + np.sum(first)


def meshgrid_without_copies(x):
    z = x * 2.0
    a, b = np.meshgrid(z, z, copy=False)
    a[0, 0] = 1.0
    return np.sum(z ** 2) + np.sum(a * b)


def meshgrid_with_copies(x):
    z = x * 2.0
    a, b = np.meshgrid(z, z)
    a[0, 0] = 1.0
    return np.sum(z ** 2) + np.sum(a * b)


def test_a_write_into_meshgrids_copies_is_differentiated():
    assert_grad_matches(meshgrid_with_copies, (X.copy(),), 0)


def _line(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("f, text, column, advice", [
    (view_rebound_in_the_loop_that_writes_it, "for _ in range(2):", 5, "write v = v.copy() first"),
    (view_of_a_list_item, "r[0] = 5.0", 5, "write r = r.copy() before changing it"),
    (view_from_an_earlier_iteration, "r *= 2.0", 13, "write r = r * ..."),
    (reshape_after_writes_in_a_loop, "r[1, 0] = x[0]", 5, "write r = r.copy() before changing it"),
    (multiply_at, "np.multiply.at", 5, "write the update as a loop"),
    (out_of_another_dtype, "np.multiply(x, x, out=z)", 5, "write the result to a new name (z = np.multiply(...))"),
    (out_of_a_global, "np.multiply(x, x, out=W3)", 23, "write z = np.multiply(...) instead, with z a new name"),
    (piece_of_a_split, "a[0] = 5.0", 5, "write a = a.copy() before changing it"),  # (the pieces are views)
    (unpacked_split_pieces, "second *= 3.0", 5, "write second = second * ..."),
    (meshgrid_without_copies, "a[0, 0] = 1.0", 5, "write a = a.copy() before changing it"),
], ids=lambda p: getattr(p, "__name__", None))
def test_refusals_are_located_with_advice(f, text, column, advice):
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        grad(f)(X.copy())
    where = info.value.location
    assert (where.filename, where.line, where.column) == (__file__, _line(f, text), column), str(info.value)
    assert advice in str(info.value)
    assert text in str(info.value)  # the source line is shown, with its caret


def test_a_view_of_an_argument_in_a_called_function_is_refused():
    def bump(p):
        q = p[1:]
        q += 1.0
        return np.sum(q)

    def caller(x):
        return bump(x * 1.0) + np.sum(x)

    with pytest.raises(s2sad.UnsupportedSyntaxError, match="'q' may be a view into another array"):
        grad(caller)(X.copy())


def test_swapaxes_view_gave_a_wrong_gradient():
    """``np.swapaxes`` was not known to return a view: the write into it was lost silently."""
    def f(A):
        A = A * 1.0
        t = np.swapaxes(A, 0, 1)
        t[0] = 0.0
        return np.sum(A ** 2)

    M = np.arange(4.0).reshape(2, 2)
    np.testing.assert_allclose(grad(f)(M), 2 * M * [[0.0, 1.0], [0.0, 1.0]])


# --- a view taken before a loop or a branch, written inside it (issue 18) ----------------------
def argument_view_written_in_a_loop(x):
    y = x[1:]
    for _ in range(2):
        y += 1.0
    return np.sum(W3 * x ** 2)


def view_written_in_a_loop_only(x):
    a = x * 1.0
    t = a[1:]
    for _ in range(2):
        t *= x[0]
    return np.sum(np.cos(a))


def view_written_in_a_loop_after_a_branch(x):
    a = x * 1.0
    t = a[1:]
    if x[0] > 0:
        t += 1.0
    for _ in range(2):
        t *= 2.0
    return np.sum(a ** 2)


def view_written_in_nested_loops_and_a_while(x):
    a = x * 1.0
    t = a[:2]
    for i in range(2):
        for j in range(2):
            t[j] = t[j] * x[2] + i
    k = 0
    while True:
        t -= 0.5 * x[1:]
        k += 1
        if k >= 2:
            break
    return np.sum(a ** 2)


def base_written_in_a_loop_view_read(x):
    a = x * 1.0
    t = a[1:]
    s = 0.0
    for _ in range(2):
        a *= x[1]
        s = s + np.sum(t ** 2)
    return s + np.sum(t)


def transpose_written_in_a_branch(A):
    B = A * 1.0
    t = B.T
    if A[0, 0] < 5.0:
        t[0] = t[0] * A[1, 1]
    else:
        t[1] = 0.0
    t += A.T
    return np.sum(B ** 2) + np.sum(np.sin(t))


def fancy_copy_written_in_a_loop(x):
    a = x * 1.0
    t = a[[0, 2]]
    for _ in range(2):
        t *= x[1]
    return np.sum(a ** 2) + np.sum(t)


AROUND = [(argument_view_written_in_a_loop, X), (view_written_in_a_loop_only, X),
          (view_written_in_a_loop_only, -X), (view_written_in_a_loop_after_a_branch, X),
          (view_written_in_a_loop_after_a_branch, -X), (view_written_in_nested_loops_and_a_while, X),
          (base_written_in_a_loop_view_read, X), (transpose_written_in_a_branch, A),
          (fancy_copy_written_in_a_loop, X)]


@pytest.mark.parametrize("f, x", AROUND, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(AROUND)])
def test_a_view_taken_before_a_loop_or_branch_is_followed_inside_it(f, x):
    """Refused until the link between a view and its base held in the loops and branches
    after the statement that took the view; a loop carries the base with the view."""
    test_gradient_and_value_match_plain_python(f, x)
    v = rng.normal(size=x.shape)
    np.testing.assert_allclose(hvp(f)(x.copy(), v), _fd_of_grad(f, x, v), rtol=1e-5, atol=1e-7)


# --- a reshape or ravel after in-place writes (issue 18) ---------------------------------------
def fortran_array_written_then_reshaped(A):
    y = A.T * 1.0  # (laid out in Fortran order: NumPy's reshape(-1) copies it)
    y[0, 0] = A[1, 0] ** 2
    r = y.reshape(-1)
    r[1] = A[0, 0] * 3.0
    return np.sum(W23.T * y ** 3) + np.sum(r ** 2)


def c_array_written_then_raveled(A):
    y = A * 1.0
    y[0, 0] = A[1, 0] ** 2
    r = y.ravel()
    r[1] = A[0, 0] * 3.0
    return np.sum(W23 * y ** 3) + np.sum(r ** 2)


def fortran_array_bumped_then_raveled(A):
    y = A.T * 1.0
    y += A[0, 1]
    r = np.ravel(y)
    r[1] = A[0, 0] * 3.0
    return np.sum(W23.T * y ** 3) + np.sum(r ** 2)


def ravel_after_a_write(x):
    # (found by a fuzzer: after a write, s2sad's copies may be laid out unlike NumPy's arrays;
    # whether a ravel is a view is read off the array as NumPy lays it out)
    A = np.stack([x, x ** 2])
    t = A.T
    t[0] = 2.0
    v = A.ravel()
    t[0] = 3.0
    return np.sum(np.sin(v))


AFTER_WRITES = [(fortran_array_written_then_reshaped, A), (c_array_written_then_raveled, A),
                (fortran_array_bumped_then_raveled, A), (ravel_after_a_write, X)]


@pytest.mark.parametrize("f, x", AFTER_WRITES, ids=[f.__name__ for f, _ in AFTER_WRITES])
def test_a_reshape_after_in_place_writes_is_a_view_as_numpy_decides(f, x):
    """Refused until whether NumPy's reshape is a view was read off the array laid out as
    NumPy's is, not off s2sad's (C-ordered) copy of it."""
    test_gradient_and_value_match_plain_python(f, x)
    v = rng.normal(size=x.shape)
    np.testing.assert_allclose(hvp(f)(x.copy(), v), _fd_of_grad(f, x, v), rtol=1e-5, atol=1e-7)


def test_a_write_through_a_view_in_a_branch_is_followed_after_it():
    def f(x):
        a = x * 1.0
        t = a[1:]
        if x[0] > 0:
            t *= 2.0
        else:
            t += x[0]
        t[0] = t[0] * x[2]
        return np.sum(a ** 2)

    for x in (X, -X):
        test_gradient_and_value_match_plain_python(f, x)
