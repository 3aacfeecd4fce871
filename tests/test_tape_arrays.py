"""Specialised code keeps the tape of a ``for t in range(n)`` loop in preallocated arrays
(s2sad/passes/tape_arrays.py), and a list where anything is not known.

Each gradient is checked against central finite differences (float64) and against the
generic code, with the same types, shapes and dtypes.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad
from gradcheck import numerical_grad


def rnn(W, U, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h ** 2)


def float_carry(x, a):
    s = 1.0
    for t in range(4):
        s = s * a + 0.5
    return s * np.sum(x ** 2)


def float64_carry(x, a):
    s = np.sum(x)
    for t in range(3):
        s = s * a + np.sum(np.sin(x))
    return s


def counted(x, n):
    h = x
    for t in range(n):
        h = np.sin(h) * 1.5
    return np.sum(h)


def with_break(x):
    h = x
    for t in range(5):
        if np.sum(h) > 3.0:
            break
        h = np.tanh(h) * 2.0 + 0.4
    return np.sum(h ** 2)


def nested(x, w):
    h = x
    for i in range(3):
        g = h
        for j in range(2):
            g = np.tanh(g * w + h)
        h = g + 0.5 * h
    return np.sum(h ** 2)


def rows(W, X):
    out = 0.0
    for row in X:
        h = W @ row
        out = out + np.sum(np.exp(-h ** 2))
    return out


def two_loops(x, w):
    h = x
    for t in range(3):
        h = np.sin(h * w)
    g = h * 2.0
    for t in range(2):
        g = np.tanh(g) + h
    return np.sum(g ** 2)


def running_max(x):
    m = x[0]
    for v in x:
        if v > m:
            m = v
    return m * 2.0 + np.sum(x)


def skip_negative(x, w):
    s = 0.0
    for i in range(len(x)):
        if x[i] < 0:
            continue
        s = s + np.tanh(x[i] * w)
    return s


def _rnn_args(steps=12, dtype=np.float64):
    rng = np.random.default_rng(3)
    shapes = [(8, 8), (8, 4), (8,), (steps, 4), (8,)]
    return tuple((rng.normal(size=s) * 0.5).astype(dtype) for s in shapes)


def _same(a, b, rtol=1e-12):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v, rtol)
        return
    assert np.shape(a) == np.shape(b) and getattr(a, "dtype", None) == getattr(b, "dtype", None)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-300 if rtol < 1e-6 else 1e-6)


def _check(f, wrt, args, preallocated):
    """The specialised gradient: its form, and its values against finite differences and the
    generic code."""
    text = s2sad.adjoint_source(f, wrt, example=args)
    assert ("in reversed(range(" in text) is preallocated, text
    assert ("tape = []" not in text) is preallocated, text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        got = s2sad.grad(f, wrt, specialize=True)(*args)
        generic = s2sad.grad(f, wrt, specialize=False)(*args)
    _same(got, generic)
    names = wrt if isinstance(wrt, tuple) else (wrt,)
    params = f.__code__.co_varnames[:f.__code__.co_argcount]
    for name, value in zip(names, got if isinstance(wrt, tuple) else (got,)):
        i = name if isinstance(name, int) else params.index(name)
        np.testing.assert_allclose(value, numerical_grad(f, args, i), rtol=1e-6, atol=1e-8)
    return text


def test_the_rnn_keeps_its_states_in_one_preallocated_array():
    text = _check(rnn, ("W", "U", "b", "h0"), _rnn_args(), preallocated=True)
    assert "h_tape = np.empty((steps + 1, 8))" in text
    assert "h_tape[t + 1] = h_2" in text and "h_2 = h_tape[t + 1]" in text
    assert "dadd_b_all = np.empty((steps, 8))" in text and "dadd_b_all[t] = dadd_b" in text
    assert "xs[:steps]" in text and "h_tape[:steps]" in text
    assert "h_2_tape" not in text and "item_xs_tape" not in text  # saved once, a row of xs read again
    assert ".append(" not in text and "reshape" not in text


def test_value_and_grad_of_the_rnn():
    args = _rnn_args()
    value, grads = s2sad.value_and_grad(rnn, ("W", "U", "b"), specialize=True)(*args)
    assert value == rnn(*args) and type(value) is type(rnn(*args))
    _same(grads, s2sad.grad(rnn, ("W", "U", "b"), specialize=False)(*args))


@pytest.mark.parametrize("steps", [0, 1])
def test_a_loop_of_no_or_one_iteration(steps):
    _check(rnn, ("W", "U", "b", "h0"), _rnn_args(steps), preallocated=True)


@pytest.mark.parametrize("n", [0, -2, 3])
def test_a_trip_count_from_an_argument(n):
    text = _check(counted, 0, (np.array([0.3, -1.2, 2.0]), n), preallocated=True)
    assert "steps = max(n, 0)" in text


def test_a_python_float_carried_through_the_loop_is_read_back_as_a_float():
    text = _check(float_carry, ("x", "a"), (np.array([0.5, -1.0, 2.0]), 0.7), preallocated=True)
    assert "float(s_tape[t])" in text
    assert type(s2sad.grad(float_carry, "a", specialize=True)(np.ones(3), 0.7)) is float


def test_a_numpy_scalar_carried_through_the_loop_keeps_its_type():
    text = _check(float64_carry, ("x", "a"), (np.array([0.5, -1.0, 2.0]), 0.7), preallocated=True)
    assert "s = s_tape[t]" in text


def test_a_loop_with_break_keeps_its_list():
    for x in (np.array([0.1, -0.2, 0.3]), np.array([2.0, 1.5, 0.5])):
        _check(with_break, 0, (x,), preallocated=False)


def test_nested_loops_keep_their_lists():
    _check(nested, ("x", "w"), (np.array([0.1, -0.4, 0.3]), 0.9), preallocated=False)


def test_a_loop_over_rows_reads_its_row_again():
    rng = np.random.default_rng(4)
    text = _check(rows, ("W", "X"), (rng.normal(size=(2, 3)), rng.normal(size=(5, 3))), preallocated=True)
    assert "row_all = X[:steps]" in text


def test_two_loops_one_after_the_other():
    text = _check(two_loops, ("x", "w"), (np.array([0.1, -0.4, 0.3]), 0.8), preallocated=True)
    assert text.count("in reversed(range(") == 2


def test_float32_inputs_keep_float32_tapes_and_gradients():
    args = _rnn_args(dtype=np.float32)
    text = s2sad.adjoint_source(rnn, ("W", "U", "b"), example=args)
    assert "np.empty((steps + 1, 8), dtype=np.float32)" in text
    got = s2sad.grad(rnn, ("W", "U", "b"), specialize=True)(*args)
    generic = s2sad.grad(rnn, ("W", "U", "b"), specialize=False)(*args)
    assert all(g.dtype == np.float32 for g in got)
    _same(got, generic, rtol=1e-5)


def test_a_saved_array_changed_afterwards_does_not_change_the_tape():
    def f(x):
        h = x
        for t in range(3):
            h = np.sin(h) + 1.0
        return np.sum(h ** 2)
    x = np.array([0.2, 0.5, -0.7])
    g = s2sad.grad(f, specialize=True)
    first = g(x)
    first_copy = first.copy()
    first *= 10.0  # the caller owns the gradient
    np.testing.assert_allclose(g(x), first_copy, rtol=1e-15)


def test_hvp_of_a_preallocating_loop():
    x = np.array([0.2, 0.5, -0.7])
    v = np.array([1.0, -1.0, 0.5])
    got = s2sad.hvp(counted, 0, specialize=True)(x, 3, v)
    generic = s2sad.hvp(counted, 0, specialize=False)(x, 3, v)
    np.testing.assert_allclose(got, generic, rtol=1e-12)


def test_a_branch_in_the_loop_saves_its_condition_in_a_boolean_array():
    text = _check(running_max, 0, (np.array([0.3, 1.2, -0.5, 2.0, 1.9, 0.1]),), preallocated=True)
    assert "cond_tape = np.empty(steps, dtype=bool)" in text
    assert "x_tape" not in text and "v = x[i]" in text  # x is the same each step; v a row of it


def test_a_loop_with_continue_keeps_its_list():  # (its branch saves values of its own)
    _check(skip_negative, ("x", "w"), (np.array([0.3, -1.2, 0.5, 2.0]), 0.7), preallocated=False)
