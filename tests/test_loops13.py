"""Loops, branches and what the fuzzer found in them (helper loops13): gradients and
Hessian-vector products against central finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad

from gradcheck import make_function, numerical_grad

X0 = np.array([0.6, -0.4, 1.3])
X1 = np.array([0.3, 0.5, -0.2])


def check(source: str, args: tuple, wrt: int) -> None:
    """s2sad's gradient and Hessian-vector product of ``f`` in ``source`` with respect to
    argument ``wrt``, against central finite differences (of f, and of the gradient)."""
    f = make_function(source, {"np": np, "stop_gradient": s2sad.stop_gradient})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        gradient = s2sad.grad(f, wrt)
        np.testing.assert_allclose(gradient(*args), numerical_grad(f, args, wrt), rtol=1e-6, atol=1e-8)
        v = np.linspace(-1.0, 1.0, np.size(args[wrt])).reshape(np.shape(args[wrt]))
        eps = 1e-6

        def moved(t: float) -> np.ndarray:
            a = list(args)
            a[wrt] = args[wrt] + t * v
            return gradient(*a)

        np.testing.assert_allclose(s2sad.hvp(f, wrt)(*args, v), (moved(eps) - moved(-eps)) / (2 * eps),
                                   rtol=1e-5, atol=1e-7)


# fuzz seed 27183: a view taken by a tuple assignment in a loop body (v, w = x1[:], x0), then
# rebound by a nested loop.  The nested loop carried x1 with its view although it only
# rebinds v; the outer loop, blind to the tuple's view, did not carry x1, so its tape
# started each iteration with x1 = None (TypeError), and dropped dx1 once that was avoided.
TUPLE_VIEW_REBOUND = """
def f(x0, x1):
    for i in range(2):
        v, w = x1[:], x0
        for j in range(3):
            if j == K:
                return np.sum(v * w)
            v = np.tanh(v + x1)
    if np.sum(x0) > 0.5:
        x1 = x1 + x0
    return np.sum(x1 * x0)
"""


@pytest.mark.parametrize("k", [0, 1, 5])
def test_view_rebound_in_nested_loop_with_return(k):
    check(TUPLE_VIEW_REBOUND.replace("K", str(k)), (X0, X1), 1)


def test_view_rebound_in_nested_loop_without_return():
    check("""
def f(x0, x1):
    s = 0.0
    for i in range(2):
        v, w = x1[:], x0
        for j in range(3):
            v = np.tanh(v + x1)
        s = s + np.sum(v * w)
    return s
""", (X0, X1), 1)


def test_view_by_tuple_assignment_written_in_nested_loop():
    # the nested loop writes through the view: the outer loop must carry its base
    check("""
def f(x0, x1):
    y = x1 * 1.0
    s = 0.0
    for i in range(2):
        v, w = y[:], x0
        for j in range(3):
            v[j] = np.tanh(v[j] + w[j])
        s = s + np.sum(y * w)
    return s + np.sum(y)
""", (X0, X1), 1)


def test_views_by_tuple_assignment_written_before_a_return():
    check("""
def f(x):
    A = x * 1.0
    for i in range(2):
        r, q = A[i], A[1 - i]
        for j in range(3):
            r[j] = r[j] * q[j] + 0.5
            if j == 2 and i == 1:
                return np.sum(A * x)
    return np.sum(A)
""", (np.array([[0.6, -0.4, 1.3], [0.2, 0.9, -0.7]]),), 0)


# A loop whose else returns, as the function's first statement: the statements s2sad builds
# for it had no location, and the normalize pass failed (InternalCompilerError).
@pytest.mark.parametrize("source", ["""
def f(x):
    for i in range(4):
        if x[i] > 2.0:
            break
    else:
        return np.sum(x ** 2)
    return x[i]
""", """
def f(x):
    for i in range(3):
        x = x * 1.5
    else:
        return np.sum(x ** 2)
""", """
def f(x):
    while np.sum(x) < 3.0:
        x = x * 1.5 + 0.2
        if np.sum(x) > 100.0:
            break
    else:
        return np.sum(x ** 2)
    return x[0]
"""])
def test_loop_else_that_returns_first_in_the_function(source):
    check(source, (np.array([0.6, -0.4, 1.3, 0.2]),), 0)


def test_loop_else_that_returns_is_located_at_the_loop():
    # (after another statement it was located there: at line 3)
    f = make_function("""
def f(x):
    s = x[0]
    for i in range(3):
        if x[i] > 2.0:
            break
    else:
        return np.sum(x ** 2) * s
    return x[i]
""", {"np": np})
    lines = s2sad.adjoint_source(f).splitlines()
    assert "# grad of line 7: else:" in [line.strip() for line in lines]


def test_view_rebound_in_nested_while_loop():
    check("""
def f(x0, x1):
    s = 0.0
    k = 0
    while k < 2:
        v, w = x1[1:], x0[1:]
        while np.sum(v) < 4.0:
            v = v * 1.5 + np.abs(w) + 0.5
        s = s + np.sum(v * w)
        k += 1
    return s
""", (X0, X1), 1)
