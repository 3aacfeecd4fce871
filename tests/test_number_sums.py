"""A number's gradient as one sum, Python numbers multiplied first (passes/number_sums.py).

Each case checks the specialised text (what a person writes) and the gradient against
central finite differences and against the generic code, in value and in type.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from gradcheck import numerical_grad


def _body(fn, example, wrt):
    text = s2sad.adjoint_source(fn, wrt, example=example)
    return [line.strip() for line in text.splitlines() if line.startswith("    ") and not line.strip().startswith("#")]


def _agrees(fn, args, wrt=0):
    specialised = s2sad.grad(fn, wrt)
    generic = s2sad.grad(fn, wrt, specialize=False)
    for _ in range(2):  # the second call runs the specialised code
        got, want = specialised(*args), generic(*args)
        assert type(got) is type(want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    if np.asarray(args[wrt]).dtype == np.float64:
        np.testing.assert_allclose(specialised(*args), numerical_grad(fn, args, wrt), rtol=1e-6, atol=1e-9)


def scalar(x):
    return np.sin(x) * x ** 2 + np.exp(-x)


def three_lines(x, y):
    a = np.sin(x) * y
    b = a * x
    return b + np.cos(x)


def of_array(w):
    return np.sum(np.sin(w) * w + np.exp(-w))


def in_a_loop(x, xs):
    total = 0.0  # a float, then a NumPy float64
    for i in range(xs.shape[0]):
        total = total + np.sin(x * xs[i]) * x - np.exp(-x)
    return np.cos(x) * total + x * np.sin(x) - x * x


def float32(x):
    return np.tanh(x) * x + x * x


def test_one_sum_with_negations_last():
    assert "dx = 2 * x * sin_x + x_pow_2 * np.cos(x) - exp_neg_x" in _body(scalar, (0.7,), "x")
    _agrees(scalar, (0.7,))


def test_lines_of_other_source_lines_stay_apart():
    body = _body(three_lines, (0.3, 1.2), wrt="x")
    assert body.count("dx = -np.sin(x)") == 1  # (not -1.0 * np.sin(x))
    assert sum(line.startswith("dx = ") for line in body) == 1
    assert any(line.startswith("dx += ") for line in body)
    _agrees(three_lines, (0.3, 1.2))
    _agrees(three_lines, (0.3, 1.2), wrt=1)


def test_arrays_keep_their_in_place_sums():
    body = _body(of_array, (np.linspace(0.1, 1.0, 5),), "w")
    assert any(line.startswith("dw += ") for line in body)
    _agrees(of_array, (np.linspace(0.1, 1.0, 5),))


def test_numbers_in_a_reversed_loop():
    xs = np.linspace(-1.0, 2.0, 6)
    body = _body(in_a_loop, (0.4, xs), "x")
    assert "unbroadcast" not in " ".join(body) and body[-1] == "return float(dx)"
    assert "dx -= dneg_x" in body  # (not dx += -dneg_x)
    _agrees(in_a_loop, (0.4, xs))


@pytest.mark.parametrize("x", [np.float32(0.3), np.float64(0.3), 0.3])
def test_the_gradient_keeps_its_type(x):
    _agrees(float32, (x,))


def mixed(x, y):
    z = x * (1.0 + 2.0j)
    a = np.abs(z) ** 2 + np.real(z * np.conj(z)) * y
    b = np.maximum(x, y) * x ** 3 - np.where(x > y, x * y, -x) / y
    return a - b * 2 + x * 3 - (y - x) * (x + y)


@pytest.mark.parametrize("wrt", [0, 1])
@pytest.mark.parametrize("args", [(0.7, 1.3), (1.3, 0.7), (np.float64(-0.4), 2.0)])
def test_sums_of_many_kinds_of_terms_agree(args, wrt):
    _agrees(mixed, args, wrt)
