"""Soundness: every use of a value that carries a gradient goes through a rule, or is a
located error (issue 17, point 1).

A gradient is never dropped silently: an index computed from such a value, a subscript
of an object that is not an array, an argument no rule parameter covers, a keyword such as
``where=`` or ``out=``, or a write of such a value into an integer array is refused with
the user's file, line and column.  The rules users need instead (``np.r_``, ``np.c_``, the
bounds of ``np.clip``, ``np.reshape``'s positional ``order``) are checked against finite
differences, in reverse and forward mode and at second order.
"""
from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError

from gradcheck import assert_grad_matches, make_function, numerical_grad

X3 = np.array([0.3, -0.5, 0.7])
A23 = np.array([[0.3, -0.5, 0.7], [1.1, 0.2, -0.4]])


def function(body: str, params: str = "x", **names: Any) -> Any:
    """``def f(<params>): return <body>`` (or a body of statements) with np in its globals."""
    lines = body if "\n" in body else f"return {body}"
    text = f"def f({params}):\n" + "".join(f"    {line}\n" for line in lines.splitlines())
    return make_function(text, {"np": np, **names})


def check_orders(f: Any, x: np.ndarray) -> None:
    """The gradient, the jvp and the hvp of ``f`` at ``x`` against finite differences."""
    assert_grad_matches(f, [x], wrt=0)
    rng = np.random.default_rng(1)
    v = rng.standard_normal(np.shape(x))
    eps = 1e-6
    _, slope = s2sad.jvp(f)(x, v)
    np.testing.assert_allclose(slope, (f(x + eps * v) - f(x - eps * v)) / (2 * eps), rtol=1e-5,
                               atol=1e-7)
    gf = s2sad.grad(f)
    eps = 1e-5
    np.testing.assert_allclose(s2sad.hvp(f)(x, v), (gf(x + eps * v) - gf(x - eps * v)) / (2 * eps),
                               rtol=1e-4, atol=1e-6)


def refusal(f: Any, *args: Any) -> S2SADError:
    with pytest.raises(S2SADError) as info:
        s2sad.grad(f)(*args)
    return info.value


# --- np.r_ and np.c_ ------------------------------------------------------------------

CONCATENATIONS = [  # (expression of x, x): every entry kind and directive
    ("np.sum(np.r_[x, 0.0, x[::-1]] ** 2)", X3),
    ("np.sum(np.r_[0.0, x, 0.0] ** 2) + np.sum(x)", X3),
    ("np.sum(np.c_[x, x ** 2] ** 2)", X3),
    ("np.sum(np.r_[0:3, x, x[0]] ** 2 * np.arange(7.0))", X3),
    ("np.sum(np.r_[1:2:3j, x] ** 3)", X3),
    ("np.sum(np.r_[x[0] * 2.0, x, 1.5] ** 3)", X3),
    ("np.sum(np.r_[x] ** 3)", X3),
    ("np.sum(np.r_['0', x, x * 2] ** 3)", A23),
    ("np.sum(np.r_['1', x, x ** 2] * np.arange(12.0).reshape(2, 6))", A23),
    ("np.sum(np.r_['-1', x, x[:, :1]] ** 3)", A23),
    ("np.sum(np.r_['0,2', x, x ** 2] * np.arange(6.0).reshape(2, 3))", X3),
    ("np.sum(np.r_['0,2,0', x, x ** 2] * np.arange(6.0).reshape(6, 1))", X3),
    ("np.sum(np.c_[x, 0:3, x ** 2] * np.arange(9.0).reshape(3, 3))", X3),
    ("np.sum(np.c_[x, x * 3.0] ** 3 * np.arange(12.0).reshape(3, 4))", A23.T),
]


@pytest.mark.parametrize("expr, x", CONCATENATIONS, ids=[c[0] for c in CONCATENATIONS])
def test_index_concatenation_matches_finite_differences(expr: str, x: np.ndarray) -> None:
    check_orders(function(expr), x)
