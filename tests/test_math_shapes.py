"""What the math module's functions and any ufunc give is known to specialisation
(rules/shapes.py, ``numpy_elementwise``): a number's gradient through math.sin, math.exp,
math.sqrt ... and an array's through SciPy's ufuncs are plain NumPy, and right."""
from __future__ import annotations

import math

import numpy as np
import pytest

import s2sad
from gradcheck import numerical_grad


def _body(fn, wrt, example):
    text = s2sad.adjoint_source(fn, wrt, example=example)
    return "\n".join(line for line in text.splitlines() if not line.startswith("#"))


def _agrees(fn, args, wrt):
    specialised, generic = s2sad.grad(fn, wrt), s2sad.grad(fn, wrt, specialize=False)
    for _ in range(2):
        got, want = specialised(*args), generic(*args)
        assert type(got) is type(want)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(specialised(*args), numerical_grad(fn, args, wrt), rtol=1e-6, atol=1e-9)


def of_floats(x, y):
    return math.sin(x) * y - math.exp(-x * y) + math.sqrt(x * x + y * y) + math.atan2(y, x) * math.tanh(x)


def of_a_float64(x):
    return math.log1p(x * x) + np.cos(x) * math.cosh(x)


@pytest.mark.parametrize("wrt", [0, 1])
def test_math_functions_of_floats_leave_no_helper(wrt):
    assert "s2sad" not in _body(of_floats, wrt, (0.6, 1.4))
    _agrees(of_floats, (0.6, 1.4), wrt)


@pytest.mark.parametrize("x", [0.3, np.float64(0.3)])
def test_math_functions_of_numpy_floats_give_python_floats(x):
    assert "s2sad" not in _body(of_a_float64, 0, (x,))
    _agrees(of_a_float64, (x,), 0)


def of_a_one_element_array(x):
    return math.exp(x[0]) + math.sin(np.sum(x))


def test_a_math_function_of_an_array_is_not_followed_and_stays_right():
    _agrees(of_a_one_element_array, (np.array([0.4]),), 0)


def test_scipy_ufuncs_of_arrays_leave_no_helper():
    special = pytest.importorskip("scipy.special")

    def loss(w, x):
        return np.sum(special.expit(x @ w) ** 2) * np.sum(special.gammaln(1.5 + w * w))

    rng = np.random.default_rng(1)
    args = (rng.normal(size=3), rng.normal(size=(4, 3)))
    body = _body(loss, 0, args)
    assert "unbroadcast" not in body and "grad_like" not in body, body
    _agrees(loss, args, 0)
