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
    lines = body if "\n" in body or body.startswith("return ") else f"return {body}"
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
    with warnings.catch_warnings():  # piecewise linear functions have a zero Hessian
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        hv = s2sad.hvp(f)(x, v)
    np.testing.assert_allclose(hv, (gf(x + eps * v) - gf(x - eps * v)) / (2 * eps), rtol=1e-4,
                               atol=1e-6)


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


def test_a_matrix_directive_is_refused_where_written() -> None:
    f = function("np.sum(np.r_['r', x, x])")
    error = refusal(f, X3)
    assert (error.location.line, error.location.column) == (2, 25)  # at the directive
    assert "np.r_['r', ...] builds an np.matrix" in error.message
    assert "leave out the 'r' directive" in error.message


# --- np.clip and np.minimum / np.maximum with bounds that carry a gradient -----------------

X5 = np.array([-1.33, -0.46, 0.14, 0.57, 1.26])
BOUNDED = [  # (expression of x, x): the bounds are the ones selected somewhere
    ("np.sum(np.clip(x[0] * 3, x[1], x[2]))", np.array([0.3, -0.5, 0.7])),
    ("np.sum(np.clip(np.array([5.0, -5.0, 0.1]), -x[0], x[0]) * np.array([1.0, 2.0, 3.0]))",
     np.array([0.3, -0.5, 0.7])),
    ("np.sum(x.clip(-x[2], x[2]) * np.arange(1.0, 6.0))", X5),
    ("np.sum(np.clip(x, x[::-1] * 0.5, 1.0) * np.arange(1.0, 6.0))", X5),
    ("np.sum(np.clip(x, None, np.cos(x)) * np.arange(1.0, 6.0))", X5),
    ("np.sum(np.clip(x, np.sin(x), None) * np.arange(1.0, 6.0))", X5),
    ("np.sum(np.clip(np.outer(x, x), -x[:, None] * 0.3, x[None, :] ** 2 * 0.5) ** 2)", X5),
    ("np.sum(np.clip(x[:2, None] * np.ones((2, 5)), x[3], x[4] * x) * np.arange(10.0).reshape(2, 5))", X5),
    ("np.sum(np.maximum(np.outer(x, x), x[:, None] * 0.3) ** 2)", X5),
    ("np.sum(np.minimum(x[:, None] * np.arange(1.0, 4.0), x[None, :3] * 0.5) ** 2)", X5),
]


@pytest.mark.parametrize("expr, x", BOUNDED, ids=[b[0] for b in BOUNDED])
def test_bounds_carry_their_gradient(expr: str, x: np.ndarray) -> None:
    check_orders(function(expr), x)


@pytest.mark.parametrize("expr", ["np.clip(x, y, z)", "x.clip(y, z)"])
def test_clip_gives_each_element_one_source_at_ties(expr: str) -> None:
    """The bound at a tie (the input passes nothing at a bound), a_max where a_min > a_max."""
    f = function(f"np.sum({expr} * np.arange(1.0, 6.0))", "x, y, z")
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    y = np.array([-0.5, -0.5, -0.5, -0.5, 2.0])
    z = np.array([0.5, 0.5, 0.5, 0.5, 1.5])
    gx, gy, gz = s2sad.grad(f, (0, 1, 2))(x, y, z)
    np.testing.assert_array_equal(gx, [0.0, 0.0, 3.0, 0.0, 0.0])
    np.testing.assert_array_equal(gy, [1.0, 2.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(gz, [0.0, 0.0, 0.0, 4.0, 5.0])


# --- np.reshape's order -------------------------------------------------------------------

RESHAPES = [
    ("np.sum(np.reshape(np.r_[x, x], (3, 2), 'F')[:, 0] * np.array([1.0, 2.0, 3.0]))", X3),
    ("np.sum(np.reshape(np.concatenate([x, x * 2]), (3, 2), 'F') @ np.array([1.0, 3.0]) "
     "* np.array([1.0, 2.0, 3.0]))", X3),
    ("np.sum(np.reshape(x ** 2, (3, 2), order='F') * np.arange(6.0).reshape(3, 2))", A23),
    ("np.sum(np.reshape(x ** 2, (3, 2), 'C') * np.arange(6.0).reshape(3, 2))", A23),
    ("np.sum(x.reshape(3, 2, order='F') ** 3 * np.arange(6.0).reshape(3, 2))", A23),
    ("np.sum(np.reshape(x.T, (6,), 'A') ** 3 * np.arange(6.0))", A23),
    ("np.sum(np.reshape(x, (6,), 'A') ** 3 * np.arange(6.0))", A23),
]


@pytest.mark.parametrize("expr, x", RESHAPES, ids=[r[0] for r in RESHAPES])
def test_reshape_reads_elements_in_its_order(expr: str, x: np.ndarray) -> None:
    check_orders(function(expr), x)


# --- refusals: a use of a value that carries a gradient that no rule covers ---------------

W = np.arange(10.0)

REFUSALS = [  # (body, (line, column) of the error, what it says)
    ("i = (x * 3.0).astype(int)\nreturn np.sum(W[i] * x)", (3, 19),
     "the index of W[...] is computed from values that carry a gradient"),
    ("y = x * 2.0\ni = (x * 3.0).astype(int)\nreturn np.sum(y[i])", (4, 19),
     "the index of y[...] is computed from values that carry a gradient"),
    ("return np.sum(np.s_[x] * 2.0)", (2, 19), "the index of np.s_[...] is computed from values"),
    ("return np.sum(np.roll(x, (x[0] * 3).astype(int)))", (2, 19),
     "argument 'shift' of np.roll is computed from values that carry a gradient, but s2sad has "
     "no gradient rule for that argument"),
    ("return np.std(x, where=x > 0.0)", (2, 12),
     "s2sad does not differentiate np.std with argument 'where'; write the call without that "
     "argument (for where=, select with np.where(...) first)"),
    ("return np.var(x, where=x > 0.0)", (2, 12), "s2sad does not differentiate np.var with argument 'where'"),
    # (out= into a local array is written as a new value of it: tests/test_views.py)
    ("return np.sum(np.cumsum(x, out=W))", (2, 32),
     "np.cumsum(..., out=W) writes into an array that is not a local variable, which s2sad does not "
     "follow; write z = np.cumsum(...) instead"),
    ("y = np.zeros(3, dtype=int)\ny[0] = x[0] * 2.7\nreturn np.sum(y * 1.0) + np.sum(x)", (3, 5),
     "a value that carries a gradient is written into an array of dtype int64, which converts it"),
    ("y = np.full(3, 0)\ny[1:] = x[1:] ** 2\nreturn np.sum(y * 1.0)", (3, 5),
     "written into an array of dtype int64"),
    ("y = np.zeros_like(np.arange(3), dtype=np.int32)\ny[0] = x[0]\nreturn np.sum(y * 1.0)", (3, 5),
     "written into an array of dtype int32"),
]


@pytest.mark.parametrize("body, where, message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refused_where_written(body: str, where: tuple[int, int], message: str) -> None:
    f = function(body, W=W)
    error = refusal(f, X3)
    assert (error.location.line, error.location.column) == where
    assert message in error.message
    assert "stop_gradient" in error.message or "instead" in error.message or "float dtype" in error.message


def test_refused_in_forward_mode_too() -> None:
    f = function("i = (x * 3.0).astype(int)\nreturn np.sum(W[i] * x)", W=W)
    with pytest.raises(S2SADError, match=re.escape("the index of W[...] is computed")) as info:
        s2sad.jvp(f)(X3, np.ones(3))
    assert (info.value.location.line, info.value.location.column) == (3, 19)


def test_write_into_an_array_of_unknown_dtype_is_checked_when_it_runs() -> None:
    """The dtype of an argument is known only at run time: the generated code checks it."""
    f = function("y = np.full(3, fill)\ny[0] = x[0] ** 2 * 2.7\nreturn np.sum(y * 1.0) + np.sum(x)",
                 "x, fill")
    assert "check_float_write(y, " in s2sad.adjoint_source(f)
    np.testing.assert_allclose(s2sad.grad(f)(X3, 0.0), [5.4 * X3[0] + 1.0, 1.0, 1.0])
    np.testing.assert_allclose(s2sad.hvp(f)(X3, 0.0, np.ones(3)), [5.4, 0.0, 0.0])
    with pytest.raises(s2sad.NoGradientRuleError, match="written into an array of dtype int64") as info:
        s2sad.grad(f)(X3, np.int64(0))
    assert (info.value.location.line, info.value.location.column) == (3, 5)
    with pytest.raises(s2sad.NoGradientRuleError, match="written into an array of dtype bool"):
        s2sad.jvp(f)(X3, False, np.ones(3))


def test_write_into_a_float_array_needs_no_check() -> None:
    f = function("z = np.zeros(2)\nz[0] = x[0] ** 2\nw = np.zeros_like(x)\nw[1] = z[0] * x[1]\n"
                 "return np.sum(z ** 2) + np.sum(w)")
    assert "check_float_write" not in s2sad.adjoint_source(f)
    check_orders(f, np.array([0.5, 0.3]))


def test_hvp_through_an_element_write() -> None:
    """Forward mode differentiates the generated code's helpers through every parameter a
    tangent flows through (here setitem_grad_value's incoming gradient)."""
    f = function("z = np.zeros(2)\nz[0] = x[0] ** 2\nreturn np.sum(z ** 2)")
    np.testing.assert_allclose(s2sad.hvp(f)(np.array([0.5, 0.3]), np.array([1.0, 0.0])), [3.0, 0.0])


STATIC_DTYPES = [  # (how y is made, what s2sad does with y[0] = x[0] ** 2): where the dtype shows
    ("np.zeros(3, None)", "nothing"), ("np.zeros(3, np.float32)", "nothing"),
    ("np.full(3, 0.0)", "nothing"), ("np.ones_like(x)", "nothing"),
    ("np.arange(3, dtype=float)", "nothing"), ("[0, 0, 0]", "nothing"),  # a list keeps the value
    ("np.eye(3, 3, 0, int)[0]", "refuses"), ("np.full(3, fill_value=2)", "refuses"),
    ("np.identity(3, bool)[0]", "refuses"),
    ("np.array([0, 0, 0])", "checks"), ("np.arange(3)", "checks"), ("W[:3].copy()", "checks"),
]


@pytest.mark.parametrize("init, outcome", STATIC_DTYPES, ids=[d[0] for d in STATIC_DTYPES])
def test_the_dtype_of_a_written_array_where_the_code_shows_it(init: str, outcome: str) -> None:
    f = function(f"y = {init}\ny[0] = x[0] ** 2\nreturn np.sum(x * y)", W=W)
    if outcome == "refuses":
        assert "written into an array of dtype" in refusal(f, X3).message
        return
    assert ("check_float_write" in s2sad.adjoint_source(f)) == (outcome == "checks")
    if outcome == "nothing" and not init.startswith("[") and "float32" not in init:
        assert_grad_matches(f, [X3], wrt=0)


def scaled(x: Any, s: Any) -> Any:
    return x * np.floor(s)


def test_a_user_rule_parameter_without_a_rule_refuses_a_gradient() -> None:
    """s2sad.defvjp: None declares a parameter inert; a parameter given no rule refuses."""
    s2sad.defvjp(scaled, "g * np.floor(s)")
    try:
        f = function("np.sum(scaled(x, x[2] * 3.0))", scaled=scaled)
        error = refusal(f, X3)
        assert "argument 's' of scaled is computed from values that carry a gradient" in error.message
        assert (error.location.line, error.location.column) == (2, 19)
        s2sad.defvjp(scaled, "g * np.floor(s)", None)
        g = function("np.sum(scaled(x, x[2] * 3.0))", scaled=scaled)
        np.testing.assert_allclose(s2sad.grad(g)(X3), [2.0, 2.0, 2.0])
    finally:
        from s2sad.rules import REGISTRY
        del REGISTRY.rules[id(scaled)]


def _views_in_a_tuple(B):
    B = B.copy()
    t = (B[1], B[0])
    B[0] = t[0] * 2.0
    B[1] = t[1] * 3.0
    return np.sum(B ** 2)


def _a_view_taken_out_of_a_list(B):
    B = B.copy()
    t = [B[1], B[0]]
    u = t[0]
    B[1] = B[0] * 2.0
    return np.sum(u ** 2) + np.sum(B)


def _a_view_in_a_nested_container(B):
    B = B.copy()
    d = {"a": (B[1],)}
    B[1] = B[0] * 2.0
    return np.sum(d["a"][0] ** 2) + np.sum(B)


@pytest.mark.parametrize("f, holder", [(_views_in_a_tuple, "'t' holds 'B'"),
                                       (_a_view_taken_out_of_a_list, "'u' may share memory with 'B'"),
                                       (_a_view_in_a_nested_container, "'d' holds 'B'")])
def test_a_write_into_an_array_a_container_holds_views_of_is_refused(f, holder):
    """Rows of a 2-d array kept in a tuple, list or dict are views: writing into the array
    changes them (these gave wrong gradients, silently)."""
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=holder):
        s2sad.grad(f)(np.array([[0.3, -0.5], [0.7, 0.2]]))


@pytest.mark.parametrize("fill", [0, np.int64(0), True])
def test_specialised_code_keeps_the_write_check_where_the_array_is_otherwise_dead(fill) -> None:
    # (specialised code knows y's shape, so y itself is not needed: the checked write stays)
    f = function("y = np.full(3, fill)\ny[0] = x[0] ** 2 * 2.7\nreturn np.sum(y * 1.0) + np.sum(x)",
                 "x, fill")
    g = s2sad.grad(f, specialize=True)
    for _ in range(2):
        with pytest.raises(s2sad.NoGradientRuleError, match="written into an array of dtype") as info:
            g(X3, fill)
        assert (info.value.location.line, info.value.location.column) == (3, 5)
