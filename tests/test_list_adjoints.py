"""Gradients of lists, tuples and dicts read item by item: each read adds its gradient at
its index (``added_at``), not a zero gradient of the whole container per read, so a loop
that appends to a list and reads its last item is linear in its steps, at any order."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from gradcheck import count_calls, numerical_grad


def rnn_over_a_list(W, xs):
    hs = [np.zeros(W.shape[0])]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(W @ hs[-1] + xs[t]))
    return np.sum(np.stack(hs) ** 2)


def read_each_key(p, x):
    total = 0.0
    for k in range(3):
        total = total + np.sum(np.tanh(p["w"] * x + p["b"]) ** 2) * (k + 1)
    return total


def helper(v):
    return np.sum(v ** 3)


def array_also_passed(x):
    return helper(x) + x[0] ** 2 * x[1] + x[-1]


def items_of_a_tuple(t, x):
    return np.sum(t[0] * x) + np.sum(t[1] * t[0] * x) + np.sum(np.sin(t[1]))


RNG = np.random.default_rng(5)


def _leaf_grads(f, args, wrt):
    """Central finite differences of ``f`` in each array leaf of ``args[wrt]`` (a dict or tuple too)."""
    x = args[wrt]
    keys = list(x) if isinstance(x, dict) else list(range(len(x))) if isinstance(x, tuple) else [None]

    def with_leaf(key, value):
        if key is None:
            return value
        if isinstance(x, dict):
            return {**x, key: value}
        return tuple(value if i == key else item for i, item in enumerate(x))

    out = {}
    for key in keys:
        leaf = x if key is None else x[key]
        out[key] = numerical_grad(lambda v, *rest: f(*args[:wrt], with_leaf(key, v), *args[wrt + 1:]), [leaf], 0)
    return out


def _fd_check(f, args, wrt):
    grad = s2sad.grad(f, wrt=wrt)
    expected = _leaf_grads(f, args, wrt)
    for _ in range(2):  # the generic code, then the code specialised to the arguments
        got = grad(*args)
        for key, value in expected.items():
            np.testing.assert_allclose(got if key is None else got[key], value, rtol=1e-6, atol=1e-8)


def test_rnn_over_a_list_reads_its_last_item_by_index():
    W, xs = RNG.normal(size=(4, 4)) * 0.5, RNG.normal(size=(6, 4))
    assert "added_at(dhs, hs, -1, " in s2sad.adjoint_source(rnn_over_a_list, wrt="W")
    _fd_check(rnn_over_a_list, [W, xs], 0)
    _fd_check(rnn_over_a_list, [W, xs], 1)


def test_second_order_through_an_item_read():
    W, xs, v = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(4, 3)), RNG.normal(size=(3, 3))
    grad = s2sad.grad(rnn_over_a_list)
    eps = 1e-5
    expected = (grad(W + eps * v, xs) - grad(W - eps * v, xs)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(rnn_over_a_list)(W, xs, v), expected, rtol=1e-6, atol=1e-8)


def test_dicts_tuples_and_arrays_that_may_be_containers():
    p = {"w": RNG.normal(size=3), "b": RNG.normal(size=3)}
    _fd_check(read_each_key, [p, RNG.normal(size=3)], 0)
    _fd_check(array_also_passed, [RNG.normal(size=4)], 0)
    _fd_check(items_of_a_tuple, [(RNG.normal(size=3), RNG.normal(size=3)), RNG.normal(size=3)], 0)


def test_the_callers_gradient_is_not_changed():
    x = RNG.normal(size=4)
    before = x.copy()
    g = s2sad.grad(array_also_passed)(x)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(g, numerical_grad(array_also_passed, [x], 0), rtol=1e-6)


@pytest.mark.parametrize("specialize", [False, True])
def test_the_gradient_of_a_list_loop_is_linear_in_its_steps(specialize):
    W = RNG.normal(size=(4, 4)) * 0.5
    grad = s2sad.grad(rnn_over_a_list, specialize=specialize)
    short, long = RNG.normal(size=(40, 4)), RNG.normal(size=(160, 4))
    grad(W, short), grad(W, long)  # (generated and specialised before counting)
    a, b = count_calls(lambda: grad(W, short)), count_calls(lambda: grad(W, long))
    # four times the steps: four times the work, not sixteen (a zero per item per step)
    assert b <= 4.6 * a, f"{a} calls for 40 steps, {b} for 160"


def one_name_from_a_call(x):
    a, = np.split(x, 1)
    return np.sum(np.tanh(a) * x)


def one_name_from_a_list(x):
    scales = []
    scales.append(np.exp(x[0]))
    (scale,) = scales
    return np.sum(scale * x)


@pytest.mark.parametrize("f", [one_name_from_a_call, one_name_from_a_list])
def test_unpacking_into_one_name_takes_the_item(f):
    # a, = xs ran as a = xs: the list itself (a crash, or a refusal of 'arithmetic on a list')
    x = RNG.normal(size=3)
    _fd_check(f, [x], 0)
    v = RNG.normal(size=3)
    grad, eps = s2sad.grad(f), 1e-5
    expected = (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f)(x, v), expected, rtol=1e-6, atol=1e-8)
    slope = s2sad.jvp(f)(x, v)[1]
    np.testing.assert_allclose(slope, (f(x + eps * v) - f(x - eps * v)) / (2 * eps), rtol=1e-6)
