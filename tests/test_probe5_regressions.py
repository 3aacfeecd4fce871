"""Defects found by probing s2sad with functions written as JAX/autograd/PyTorch users write
NumPy code (probe 5), as small functions checked against central finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad

from gradcheck import make_function, numerical_grad

X = np.array([0.5, 2.0, 3.0])


def check(source: str, args: tuple, wrt: int = 0, specialize: bool | None = None) -> None:
    """s2sad's gradient against finite differences, twice (the second call runs the cached code)."""
    f = make_function(source, {"np": np})
    with warnings.catch_warnings():
        warnings.simplefilter("error", s2sad.ZeroGradientWarning)
        for _ in range(2):
            g = s2sad.grad(f, wrt, specialize=specialize)(*args)
            np.testing.assert_allclose(g, numerical_grad(f, args, wrt), rtol=1e-6, atol=1e-8)


BOOLEAN_VALUES = {
    "or_default": ("def f(x, scale=None):\n    s = scale or x[0]\n    return s ** 2 + np.sum(x)\n", (X,)),
    "or_parameter": ("def f(w, x):\n    w = w or x\n    return np.sum(w * x)\n", (None, X), 1),
    "and_value": ("def f(x):\n    y = (x[0] > 0) and x[1] * 3\n    return y + x[2]\n", (X,)),
    "and_false": ("def f(x):\n    y = (x[0] > 1) and x[1] * 3\n    return y + x[2]\n", (X,)),
    "or_in_expression": ("def f(x):\n    return np.sum((x[0] or x[1]) * x + (0.0 or x[2]))\n", (X,)),
    "or_array": ("def f(x, y):\n    return np.sum(x and y)\n", (1.0, X), 1),
    "or_chain": ("def f(x):\n    return (x[0] < 0 and x[1]) or x[2] ** 2\n", (X,)),
}


@pytest.mark.parametrize("specialize", [None, False])
@pytest.mark.parametrize("name", sorted(BOOLEAN_VALUES))
def test_boolean_operator_value_carries_gradient(name: str, specialize: bool | None) -> None:
    """``a or b`` and ``a and b`` are one of their operands, which carries its gradient (it was
    classified as a boolean, and its gradient silently zero)."""
    source, args, *wrt = BOOLEAN_VALUES[name]
    check(source, args, *wrt, specialize=specialize)


def test_boolean_operator_hvp_and_jvp() -> None:
    f = make_function("def f(x, scale=None):\n    s = scale or x[0]\n    return s ** 3 + np.sum(x)\n",
                      {"np": np})
    v = np.array([1.0, -1.0, 0.5])
    np.testing.assert_allclose(s2sad.hvp(f)(X, v), [6 * X[0], 0.0, 0.0])
    np.testing.assert_allclose(s2sad.jvp(f)(X, v)[1], 3 * X[0] ** 2 + 0.5)


HELPER_WRITES_VIEW = """def helper(x):
    y = x[2:]
    y *= x[0]
    return np.sum(x ** 2)


def f(x):
    return helper(x * 1.0) * 2
"""


def _located(error: s2sad.S2SADError) -> tuple[int, int]:
    assert error.location is not None
    return error.location.line, error.location.column


@pytest.mark.parametrize("specialize", [None, False])
def test_callee_writing_through_a_view_of_its_argument_is_refused(specialize: bool | None) -> None:
    """A called function that writes through a view of its argument (the caller would see the
    change) is refused when it runs: the check was dropped when a temporary was folded into the
    statement that carries it, and the gradient silently missed the write."""
    f = make_function(HELPER_WRITES_VIEW, {"np": np})
    f = f.__globals__["f"]
    with pytest.raises(s2sad.S2SADError, match="'y' may be a view") as info:
        s2sad.grad(f, specialize=specialize)(np.array([0.5, -1.0, 2.0, 1.5]))
    assert _located(info.value) == (3, 5)


def test_jvp_writing_through_a_view_of_the_argument_is_refused() -> None:
    """Forward mode reads the function as a callee: the same write was silently lost (a wrong
    value and tangent)."""
    f = make_function(HELPER_WRITES_VIEW, {"np": np})
    helper = f.__globals__["helper"]
    with pytest.raises(s2sad.S2SADError, match="'y' may be a view") as info:
        s2sad.jvp(helper)(np.array([0.5, -1.0, 2.0, 1.5]), np.ones(4))
    assert _located(info.value) == (3, 5)


STATEMENTS = {
    "warnings.warn": ("import warnings\n\n\ndef f(x):\n    if np.any(x > 10):\n"
                      "        warnings.warn('large input')\n    return np.sum(x ** 3)\n"),
    "logger method": ("import logging\nlog = logging.getLogger('s2sad-probe5')\n\n\ndef f(x):\n"
                      "    y = np.tanh(x)\n    log.debug('y=%s', y)\n    return np.sum(y ** 2)\n"),
    "logging function": ("import logging\n\n\ndef f(x):\n    logging.info('x=%s', x)\n"
                         "    return np.sum(np.sin(x) * x)\n"),
    "array assert": ("def f(x):\n    y = x * 2.0\n    np.testing.assert_allclose(y, x + x)\n"
                     "    np.testing.assert_array_less(-np.inf, y)\n    return np.sum(np.sin(y) * x)\n"),
}


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_warnings_and_logging_calls_stand_as_statements(name: str) -> None:
    """``warnings.warn(...)`` and a logger's ``log.debug(...)`` change nothing, as ``print`` (they
    were refused as statements that might change their arguments in place)."""
    x = np.array([0.5, -1.0, 20.0])
    source = STATEMENTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(source, (x,))
        check(source, (x,), specialize=False)
        f = make_function(source, {"np": np})
        f = f.__globals__["f"]
        v = np.array([1.0, 0.5, -1.0])
        eps = 1e-5
        g = s2sad.grad(f, specialize=False)
        expected = (g(x + eps * v) - g(x - eps * v)) / (2 * eps)
        np.testing.assert_allclose(s2sad.hvp(f)(x, v), expected, rtol=1e-5, atol=1e-6)


def test_warn_still_warns() -> None:
    f = make_function(STATEMENTS["warnings.warn"], {"np": np})
    f = f.__globals__["f"]
    with pytest.warns(UserWarning, match="large input"):
        s2sad.grad(f)(np.array([0.5, 20.0]))


REPEATS = {
    "list display": "def f(w):\n    xs = [w] * 2\n    return np.sum(xs[1] ** 2 * xs[0])\n",
    "int first": "def f(w):\n    t = 3 * (w, w ** 2)\n    return np.sum(t[3] ** 2 * t[2])\n",
    "list name": "def f(w):\n    xs = [w, w]\n    ys = xs * 2\n    return np.sum(ys[3] * ys[0] ** 2)\n",
}


@pytest.mark.parametrize("name", sorted(REPEATS))
@pytest.mark.parametrize("specialize", [None, False])
def test_repeating_a_list_that_carries_a_gradient(name: str, specialize: bool | None) -> None:
    """``[w] * 2`` was differentiated as arithmetic: the gradient list was repeated in turn and
    the gradient silently missed all but one copy (then it was refused); now each item's
    gradient is the sum over its copies (tests/test_lang10.py checks every mode)."""
    check(REPEATS[name], (X,), specialize=specialize)


def test_repeating_a_constant_list_still_runs() -> None:
    """A repeated list that carries no gradient (a shape, flags) is left as written."""
    check("def f(w):\n    n = w.shape[0]\n    z = np.zeros([n] * 2)\n    flags = [w[0] > 0] * 3\n"
          "    return np.sum(z) + np.sum(w ** 2) * len(flags) + sum(flags) * w[1]\n", (X,))


MASKS = {
    "and of names": "def f(x):\n    m = x > 0\n    n = x < 1\n    return np.sum(x ** 2 * (m & n))\n",
    "or with a comparison": ("def f(x):\n    m = x > 0\n    return np.sum(x[m | (x < -1)] ** 2) + "
                             "np.sum(x[~m])\n"),
    "xor in where": ("def f(x):\n    a = x > 0.4\n    b = x < 1.5\n"
                     "    return np.sum(np.where(a ^ b, np.sin(x), x ** 3))\n"),
}


@pytest.mark.parametrize("specialize", [None, False])
@pytest.mark.parametrize("name", sorted(MASKS))
def test_masks_combined_with_bitwise_operators(name: str, specialize: bool | None) -> None:
    """``m & n`` of boolean masks carries no gradient and runs as written (it was refused as an
    operator on values that carry a gradient whenever an operand was a variable)."""
    x = np.array([0.5, -1.5, 2.0, -0.3, 1.2])
    check(MASKS[name], (x,), specialize=specialize)
    f = make_function(MASKS[name], {"np": np})
    v = np.array([1.0, 0.5, -1.0, 2.0, 0.3])
    np.testing.assert_allclose(s2sad.jvp(f)(x, v)[1], np.sum(s2sad.grad(f)(x) * v), rtol=1e-12)


def test_dict_merge_that_carries_a_gradient_is_refused() -> None:
    f = make_function("def f(w):\n    p = {'a': 1.0} | {'w': w}\n    return np.sum(p['w'] ** 2)\n", {"np": np})
    with pytest.raises(s2sad.S2SADError, match="the operator '\\|' is not supported") as info:
        s2sad.grad(f)(np.array([0.5, 2.0]))
    assert _located(info.value) == (2, 9)
