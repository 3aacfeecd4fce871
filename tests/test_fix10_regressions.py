"""Regressions: ``*`` on a list or tuple that a call returns (repeated, not multiplied, in the
gradient too); ``det`` at singular matrices.

Gradients are checked against central finite differences.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import grad, hvp, jvp

from gradcheck import numerical_grad

rng = np.random.default_rng(10)
SCALE = np.array([1.0, -2.0, 0.5])


def check(f, args, wrt=0):
    """``grad(f, wrt)`` against central finite differences, argument by argument."""
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    got = grad(f, wrt)(*args)
    got = got if isinstance(wrt, tuple) else (got,)
    for g, k in zip(got, wrts):
        np.testing.assert_allclose(g, numerical_grad(f, args, k), rtol=1e-6, atol=1e-8)


def check_hvp(f, x, eps=1e-5):
    """``hvp(f)`` against finite differences of the gradient."""
    v = rng.normal(size=np.shape(x))
    want = (grad(f)(x + eps * v) - grad(f)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hvp(f)(x, v), want, rtol=1e-5, atol=1e-7)


# --- a list a call returns, times an int ------------------------------------------------

def pair(a, b):
    return [a, b]


def both(a):
    return (a, np.sin(a))


def same(a):
    return np.sin(a)


def repeated_pair(w, x):
    l = pair(w, x)
    m = l * 2
    return np.sum(m[0] * m[3])


def repeated_inline(w, x):
    m = 3 * pair(w, x)
    return np.sum(m[1] * m[4] * m[5])


def repeated_list_of_array(w):
    l = list(w)
    m = l * 2
    return np.sum(np.asarray(m) ** 3)


def repeated_tuple(w):
    m = both(w) * 2
    return np.sum(m[0] * m[3] + m[2] ** 2)


def array_times_int(w):
    return np.sum(same(w) * 2 * same(w))


def array_times_global(w):
    return np.sum(same(w) * SCALE)


def test_a_list_a_function_returns_is_repeated_in_the_gradient():
    check(repeated_pair, (1.5, 2.5), (0, 1))
    assert grad(repeated_pair, (0, 1))(1.5, 2.5) == (2.5, 1.5)
    check(repeated_inline, (1.5, 2.5), (0, 1))


def test_list_of_an_array_repeated():
    w = rng.normal(size=2)
    check(repeated_list_of_array, (w,))
    check_hvp(repeated_list_of_array, w)


def test_a_tuple_a_function_returns_is_repeated():
    w = rng.normal(size=3)
    check(repeated_tuple, (w,))
    check_hvp(repeated_tuple, w)


def test_an_array_a_function_returns_is_still_multiplied():
    w = rng.normal(size=3)
    for f in (array_times_int, array_times_global):
        check(f, (w,))
        check_hvp(f, w)
        v = rng.normal(size=3)
        eps = 1e-6
        _, t = jvp(f)(w, v)
        np.testing.assert_allclose(t, (f(w + eps * v) - f(w - eps * v)) / (2 * eps), rtol=1e-6)


def times_a_float(w):
    return np.sum(same(w) * 0.5 + 1.5 * same(w))


def test_a_value_a_function_returns_times_a_float_stays_a_product():
    # a list times a float is Python's TypeError: only an int may repeat a list
    w = rng.normal(size=3)
    check(times_a_float, (w,))
    assert "repeat_items" not in grad(times_a_float).__s2sad_source__
    assert "repeat_items" in grad(array_times_int).__s2sad_source__


# --- det at singular matrices -----------------------------------------------------------

SINGULAR = [np.array([[1.0, 2.0], [2.0, 4.0]]), np.outer([1.0, 2.0, 3.0], [2.0, -1.0, 0.5]),
            np.zeros((3, 3)), np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
            np.stack([np.diag([1.0, 0.0, 2.0]), np.eye(3)])]


def det(a):
    return np.sum(np.linalg.det(a))


def scipy_det(a):
    import scipy.linalg
    return scipy.linalg.det(a)


def test_det_gradient_and_tangent_at_singular_matrices():
    for a in SINGULAR:
        for f in (det, scipy_det) if a.ndim == 2 else (det,):
            check(f, (a,))
            v = rng.normal(size=a.shape)
            eps = 1e-6
            _, t = jvp(f)(a, v)
            np.testing.assert_allclose(t, (f(a + eps * v) - f(a - eps * v)) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_det_gradient_at_an_invertible_matrix():
    a = rng.normal(size=(2, 3, 3))
    check(det, (a,))
    check_hvp(det, a)


def test_det_second_order_at_singular_matrices():
    for a in SINGULAR:
        check_hvp(det, a)
    a, eps = np.diag([1.0, 0.0, 0.0, 2.0]), 1e-5
    columns = [(grad(det)(a + eps * e) - grad(det)(a - eps * e)).ravel() / (2 * eps)
               for e in np.eye(16).reshape(16, 4, 4)]
    np.testing.assert_allclose(np.reshape(s2sad.hessian(det)(a), (16, 16)), np.transpose(columns), atol=1e-8)


def _repeat(l):
    return l * 2


def list_repeated_in_a_helper(w, x):
    m = _repeat([w, x])
    return np.sum(m[0] * m[3])


def list_argument_repeated(l):
    m = l * 2
    return m[0] * m[3]


def test_a_list_parameter_repeated_by_an_int_is_refused_as_it_runs():
    # the gradient of the list came out repeated (zip then kept its first items): (2.5, 0.0)
    # where (2.5, 1.5) is right; nothing at compile time says the parameter may be a list
    for f, args, wrt, line in ((list_repeated_in_a_helper, (1.5, 2.5), (0, 1), _repeat.__code__.co_firstlineno + 1),
                               (list_argument_repeated, ([1.5, 2.5],), 0,
                                list_argument_repeated.__code__.co_firstlineno + 1)):
        for specialize in (True, False):
            with pytest.raises(s2sad.S2SADError, match="repeat it as a display") as info:
                grad(f, wrt, specialize=specialize)(*args)
            assert info.value.location.line == line


# --- a list or tuple compiling took for an array, repeated by an int: ``* 2`` multiplied the
# gradient list, a silently wrong gradient (probe of session 11)

def _item_changed_then_repeated(x):
    xs = [x[0], x[1]]
    xs[0] += x[2]
    ys = xs * 2
    return ys[0] * ys[3]


def _slice_repeated(x):
    xs = [x[0], x[1], x[2]]
    zs = xs[1:]
    ys = zs * 2
    return ys[0] * ys[3]


def _concatenation_repeated(x):
    xs = [x[0]] + [x[1]]
    ys = xs * 2
    return ys[0] * ys[3]


def _dict_value_repeated(x):
    d = {"l": [x[0], x[1]]}
    ys = d["l"] * 2
    return ys[0] * ys[3]


def _tuple_from_a_branch_repeated(x):
    t = (x[0], x[1])
    if x[2] > 0:
        t = (t[1], t[0])
    ys = t * 2
    return ys[0] * ys[3]


def _list_item_array_doubled(x):
    xs = [x * 1.5, x]
    return np.sum(xs[0] * 2 * xs[1])


@pytest.mark.parametrize("f", [_item_changed_then_repeated, _slice_repeated, _concatenation_repeated,
                               _dict_value_repeated, _tuple_from_a_branch_repeated, _list_item_array_doubled],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_sequence_built_here_repeated_by_an_int(f):
    x = np.array([0.53, -1.2, 2.0])
    check(f, (x,))
    v = np.array([0.3, 1.0, -0.5])
    assert jvp(f)(x, v)[1] == pytest.approx(numerical_grad(f, (x,), 0) @ v, rel=1e-6, abs=1e-9)
