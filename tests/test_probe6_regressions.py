"""Defects found by probing s2sad with functions written as autograd/Tangent/JAX users write
NumPy code (probe 6), as small functions checked against central finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad

from gradcheck import make_function, numerical_grad

X = np.array([0.7, -1.2, 0.4])


def check(source: str, args: tuple, wrt: int = 0, specialize: bool | None = None) -> None:
    """s2sad's gradient against finite differences, twice (the second call runs the cached
    code), value_and_grad's too, and the jvp along a direction against the gradient's."""
    f = make_function(source, {"np": np})
    expected = numerical_grad(f, args, wrt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", s2sad.ZeroGradientWarning)
        for _ in range(2):
            g = s2sad.grad(f, wrt, specialize=specialize)(*args)
            np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
            _, g = s2sad.value_and_grad(f, wrt, specialize=specialize)(*args)
            np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
        t = np.linspace(-1.0, 1.0, np.size(args[wrt])).reshape(np.shape(args[wrt]))
        _, slope = s2sad.jvp(f, wrt)(*args, t)
        np.testing.assert_allclose(slope, np.sum(expected * t), rtol=1e-6, atol=1e-8)


LIST_TWICE = {
    # the gradient of a list read by two calls was added with +: the lists were concatenated
    "max_and_min": "def f(x):\n    ys = [x[0] * 2, x[1] ** 2, x[2] + 1.5]\n    return max(ys) + min(ys)\n",
    "max_and_index": "def f(x):\n    ys = [x[0] * 2, x[1] ** 2, x[2] + 1.5]\n    return max(ys) * ys[0]\n",
    "fsum_and_sum": ("import math\n"
                     "def f(x):\n    ys = [x[0] * 2, x[1] ** 2, x[2]]\n    return math.fsum(ys) * sum(ys) + ys[1]\n"),
}

LIST_AS_ARRAY = {
    # a list passed to a NumPy function whose rule's helpers take arrays: a crash in the helper
    "dot": "def f(x):\n    ys = [x[0], x[1] * 3]\n    return np.dot(ys, ys) + ys[0]\n",
    "maximum": "def f(x):\n    ys = [x[0], x[1] * 3, x[2]]\n    return np.sum(np.maximum(ys, 0.1)) + ys[1]\n",
    "det_trace": ("def f(x):\n    ys = [[x[0], x[1]], [x[2], 1.0]]\n"
                  "    return np.linalg.det(ys) + np.trace(ys) + ys[0][1]\n"),
    "interp": "def f(x):\n    ys = [x[0], x[1] * 3, x[2]]\n    return np.interp(0.5, [0, 1, 2], ys) + ys[1]\n",
    "multiply_broadcast": ("def f(x):\n    ys = [x[0], x[1] * 3]\n"
                           "    return np.sum(np.multiply(ys, x[:, None])) + np.sum(np.subtract(ys, x[2]))\n"),
    "tuple_where": ("def f(x):\n    ys = (x[0], x[1] * 3, x[2])\n"
                    "    return np.sum(np.where(x > 0, ys, 0.0)) + np.sum(np.clip(ys, -1, 1)) + ys[1]\n"),
}


@pytest.mark.parametrize("specialize", [None, False])
@pytest.mark.parametrize("name", sorted(LIST_TWICE))
def test_list_gradient_from_two_reads_adds_leaf_by_leaf(name: str, specialize: bool | None) -> None:
    check(LIST_TWICE[name], (X,), specialize=specialize)


@pytest.mark.parametrize("specialize", [None, False])
@pytest.mark.parametrize("name", sorted(LIST_AS_ARRAY))
def test_list_passed_to_numpy_function(name: str, specialize: bool | None) -> None:
    check(LIST_AS_ARRAY[name], (X,), specialize=specialize)


def test_list_passed_to_numpy_function_hvp() -> None:
    f = make_function("def f(x):\n    ys = [x[0], x[1] * 3, x[2]]\n    return np.dot(ys, ys) * ys[0]\n", {"np": np})
    v = np.array([1.0, -1.0, 0.5])
    # f = (x0^2 + 9 x1^2 + x2^2) x0
    H = np.array([[6 * X[0], 18 * X[1], 2 * X[2]], [18 * X[1], 18 * X[0], 0.0], [2 * X[2], 0.0, 2 * X[0]]])
    np.testing.assert_allclose(s2sad.hvp(f)(X, v), H @ v)


@pytest.mark.parametrize("source", [
    "def f(x):\n    y = x\n    for i in range(3):\n        y = y * 1.7 + 0.1\n    return y\n",
    "def f(x):\n    y = x\n    while y < 10.0:\n        y = y * 1.7 + 0.1\n    return y\n",
])
def test_numpy_float64_argument_gets_numpy_float64_gradient(source: str) -> None:
    """Specialised code seeds a np.float64 output with 1.0 and took the gradient it computed
    from it for a np.float64: a np.float64 argument got a float gradient."""
    f = make_function(source, {"np": np})
    for _ in range(2):
        g = s2sad.grad(f)(np.float64(0.8))
        assert type(g) is np.float64
        _, g = s2sad.value_and_grad(f)(np.float64(0.8))
        assert type(g) is np.float64


@pytest.mark.parametrize("specialize", [None, False])
def test_hvp_after_a_loop_that_never_runs(specialize: bool | None) -> None:
    """The jvp of gradient code zeroed, before its backward loop, the tangent of the loop
    counter that only the forward loop's iterations bind: UnboundLocalError for range(0)."""
    f = make_function("def f(x):\n    s = np.sum(x)\n    for i in range(0):\n        s = s * x[i]\n"
                      "    return s * np.sum(x ** 2)\n", {"np": np})
    v = np.array([1.0, -1.0, 0.5])
    # f = sum(x) * sum(x^2): H = 2 (1 x^T + x 1^T) + 2 sum(x) I
    H = 2 * (np.outer(np.ones(3), X) + np.outer(X, np.ones(3))) + 2 * np.sum(X) * np.eye(3)
    np.testing.assert_allclose(s2sad.hvp(f, specialize=specialize)(X, v), H @ v)
    g = make_function("def f(x):\n    s = np.sum(x)\n    for i in range(2):\n        s = s * x[i]\n"
                      "    for j in range(0):\n        s = s + x[j]\n    return s\n", {"np": np})
    # f = (x0 + x1 + x2) x0 x1
    Hg = np.array([[2 * X[1], 2 * X[0] + 2 * X[1] + X[2], X[1]],
                   [2 * X[0] + 2 * X[1] + X[2], 2 * X[0], X[0]], [X[1], X[0], 0.0]])
    np.testing.assert_allclose(s2sad.hvp(g, specialize=specialize)(X, v), Hg @ v)


@pytest.mark.parametrize("source, column", [
    ("def f(x, scale=2.0):\n    def g(v, s=scale):\n        return v * s\n    return np.sum(g(x) ** 2)\n", 16),
    ("def f(x, scale=2.0):\n    g = lambda v, s=scale: v * s\n    return np.sum(g(x) ** 2)\n", 21),
])
def test_nested_function_default_reading_a_local_is_refused(source: str, column: int) -> None:
    """A nested function compiled on its own evaluated its defaults without the enclosing
    function's variables: an internal NameError."""
    f = make_function(source, {"np": np})
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="default value of the nested function 'g' reads scale") as e:
        s2sad.grad(f)(X)
    assert (e.value.location.line, e.value.location.column) == (2, column)


def test_nested_function_constant_default_still_works() -> None:
    check("def f(x):\n    def g(v, s=2.0):\n        return v * s\n    return np.sum(g(x) ** 2)\n", (X,))


STAR_CONSTANT = {
    # g(*args) with args = (x, 2.0): the constant exponent was differentiated (its tangent a zero
    # times log of a negative base: a NaN jvp and hvp)
    "star_call": ("def f(x):\n    args = (x, 2.0)\n    def g(v, p):\n        return np.sum(v ** p)\n"
                  "    return g(*args)\n"),
    "index_call": ("def f(x):\n    args = [x, 3.0]\n    return g(args[0], args[-1])\n"
                   "def g(v, p):\n    return np.sum(v ** p)\n"),
    "keyword_call": ("def f(x):\n    kw = {'v': x, 'p': 2.0}\n    return g(**kw)\n"
                     "def g(v, p):\n    return np.sum(v ** p)\n"),
    "unpacked": ("def f(x):\n    args = (x, 3.0)\n    v, p = args\n    return np.sum(v ** p)\n"),
}


@pytest.mark.parametrize("name", sorted(STAR_CONSTANT))
def test_constant_item_of_a_display_is_inactive(name: str) -> None:
    check(STAR_CONSTANT[name], (X,))
    f = make_function(STAR_CONSTANT[name], {"np": np})
    v = np.array([1.0, -1.0, 0.5])
    p = 2.0 if name in ("star_call", "keyword_call") else 3.0
    np.testing.assert_allclose(s2sad.hvp(f)(X, v), p * (p - 1) * X ** (p - 2) * v)


@pytest.mark.parametrize("source, arg", [
    ("def f(p):\n    return np.sum(np.maximum(p, 0.1)) + p[0]\n", [0.5, -1.2, 0.3]),
    ("def f(p):\n    return np.dot(p, p) + np.sum(np.exp(p))\n", [0.5, -1.2]),
    ("def f(p):\n    return np.interp(0.5, [0, 1, 2], p) + np.sum(np.convolve(p, p) ** 2)\n", [0.5, -1.2, 0.3]),
])
def test_list_argument_passed_to_numpy_function(source: str, arg: list) -> None:
    """A list argument read by NumPy's np.maximum, np.interp or np.convolve reached a helper that
    gave it to np.result_type, which took it for a dtype."""
    f = make_function(source, {"np": np})
    for specialize in (None, False):
        g = s2sad.grad(f, specialize=specialize)(arg)
        assert isinstance(g, list)
        np.testing.assert_allclose(g, numerical_grad(lambda a: f(list(a)), (np.array(arg),), 0), rtol=1e-6)


def test_explicit_ufunc_of_tuples_is_refused_not_crashed() -> None:
    """np.multiply(p, p) of a tuple was described by a stand-in computing p * p, which Python
    refuses for tuples (a TypeError); now computed, its gradient reaches the refusal of
    arithmetic on a tuple."""
    f = make_function("def f(p):\n    return np.sum(np.multiply(p, p))\n", {"np": np})
    for specialize in (None, False):
        with pytest.raises(s2sad.S2SADError, match="arithmetic on a tuple"):
            s2sad.grad(f, specialize=specialize)((0.5, -1.2))


def test_constant_item_of_tuples_in_a_list_loop() -> None:
    """``for v, p in [(x, 2.0), (2 * x, 3.0)]``: p is constant in every tuple (its zero tangent
    met log of a negative base: a NaN jvp)."""
    source = ("def f(x):\n    items = [(x, 2.0), (x * 2, 3.0)]\n    s = 0.0\n    for v, p in items:\n"
              "        s = s + g(v, p)\n    return s\n"
              "def g(v, p):\n    return np.sum(v ** p)\n")
    check(source, (X,))
    f = make_function(source, {"np": np})
    v = np.array([1.0, -1.0, 0.5])
    np.testing.assert_allclose(s2sad.hvp(f)(X, v), (2.0 + 8 * 6 * X) * v)
