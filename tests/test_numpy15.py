"""Valid NumPy forms s2sad refused or misreported (tests/test_numpy15.py): ufunc keywords that do
not change the math, np.einsum of five or more operands, math.hypot of three or more arguments,
np.linalg.qr(a, mode='r'), np.piecewise with constant pieces. Gradients against central finite
differences in float64, forward mode against reverse mode, Hessian-vector products against
differences of the gradient.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import s2sad

from gradcheck import check_all_orders, make_function, numerical_grad

_RNG = np.random.default_rng(15)
_X = np.array([0.3, -1.2, 0.5, 0.8])
_M = np.array([[0.9, -0.4, 0.2], [0.3, 1.1, -0.5], [0.2, 0.4, 0.8]])
_GLOBALS = {"np": np, "math": __import__("math")}


_check_all_orders = functools.partial(check_all_orders, globals_dict=_GLOBALS, rng=_RNG)


UFUNC_KEYWORDS = [
    "np.sum(np.exp(x, dtype=np.float64))",
    "np.sum(np.sin(x, out=None))",
    "np.sum(np.sin(x, None) ** 2)",
    "np.sum(np.add(x, x ** 2, dtype=np.float64))",
    "np.sum(np.multiply(x, 2.0, dtype='float64') * x)",
    "np.sum(np.exp(x, casting='same_kind', order='K', subok=True))",
    "np.sum(np.tanh(x, where=True, out=None, dtype=float))",
    "np.sum(np.cos(x, dtype=None) * x)",
    "np.sum(np.clip(x, None, 0.6, dtype=np.float64, casting='same_kind') ** 2)",
    "np.sum(np.clip(x ** 3, min=-0.5, max=0.6, dtype=np.float64, out=None) ** 2)",
    "np.sum(np.maximum(x, 0.1, dtype=np.float64, casting='unsafe') ** 2)",
]


@pytest.mark.parametrize("body", UFUNC_KEYWORDS)
def test_ufunc_keywords_that_do_not_change_the_math(body: str) -> None:
    """They were refused ("s2sad does not differentiate np.exp with argument 'dtype'")."""
    _check_all_orders(body, _X)


def test_ufunc_dtype_casts_the_inputs_first() -> None:
    """dtype=np.float32 computes in float32, as NumPy does; the gradient is in x's dtype."""
    f = make_function("def f(x):\n    return np.sum(np.exp(x, dtype=np.float32))\n", _GLOBALS)
    assert f(_X).dtype == np.float32
    g = s2sad.grad(f)(_X)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, np.exp(_X), rtol=1e-6)


@pytest.mark.parametrize("call, message", [
    ("np.exp(x, where=x > 0)", r"np.exp\(\.\.\., where=\.\.\.\) without out= leaves the entries"),
    ("np.exp(x, dtype=np.int64)", r"dtype= a float dtype it can read here"),
])
def test_ufunc_keywords_that_change_the_math_are_refused_at_the_call(call: str, message: str) -> None:
    f = make_function(f"def f(x):\n    y = x * 2\n    return np.sum({call})\n", _GLOBALS)
    with pytest.raises(s2sad.S2SADError, match=message) as info:
        s2sad.grad(f)(_X)
    assert (info.value.location.line, info.value.location.column) == (3, 19)


_A = _RNG.standard_normal((3, 3))
EINSUMS = [
    "np.sum(np.einsum('ab,bc,cd,de,ef->af', x, A, x, A, x) ** 2)",
    "np.sum(np.einsum('ab,bc,cd,de,ef,fg->ag', x, x, A, x, A, x, optimize=True) * A)",
    "np.einsum('ab,bc,cd,de,ea', x, A, x, x, A)",  # implicit output (a scalar)
    "np.sum(np.einsum('ij,jk,kl,lm,mi->i', x, x.T, A, x, A) ** 2)",
    "np.sum(np.einsum('...j,jk,kl,lm,m...->...', x, A, x, A, x))",
    "np.sum(np.einsum('ii,ij,jk,kl,lm->m', x, A, x, A, x))",  # a diagonal among them
    "np.sum(np.einsum('ab,bc,cd,de,ef,fg,gh,hi,ia->a', x, A, x, A, x, A, x, A, x))",
]


@pytest.mark.parametrize("body", EINSUMS)
def test_einsum_of_five_or_more_operands(body: str) -> None:
    """The fifth operand bound to out=: refused as "np.einsum(..., out=...) writes its result
    into an existing array"; the operands after the third are contracted first."""
    _GLOBALS["A"] = _A
    _check_all_orders(body, _M)


def test_einsum_of_five_operands_with_out() -> None:
    f = make_function("def f(x):\n    z = np.zeros((3, 3))\n    np.einsum('ab,bc,cd,de,ef->af', x, x, x, x, x, out=z)\n"
                      "    return np.sum(z * np.arange(9.0).reshape(3, 3))\n", _GLOBALS)
    np.testing.assert_allclose(s2sad.grad(f)(_M), numerical_grad(f, [_M], 0), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("body", [
    "math.hypot(x[0], x[1], x[2])",
    "math.hypot(x[0], 2.0 * x[1], x[2], x[3] ** 2)",
    "math.hypot(x[0], x[1], x[2]) * x[3]",
])
def test_math_hypot_of_three_or_more(body: str) -> None:
    """Refused: "math.hypot takes at most 2 positional arguments" (Python 3.8 takes any number)."""
    _check_all_orders(body, _X)


def test_einsum_of_five_operands_with_subscripts_not_written_in_the_call_is_refused() -> None:
    f = make_function("def f(x):\n    s = 'ab,bc,cd,de,ef->af'\n    return np.sum(np.einsum(s, x, x, x, x, x))\n",
                      _GLOBALS)
    with pytest.raises(s2sad.S2SADError, match=r"np.einsum\(\.\.\.\): s2sad differentiates more than four operands .*"
                                               r"when the subscripts are a string literal") as info:
        s2sad.grad(f)(_M)
    assert (info.value.location.line, info.value.location.column) == (3, 19)


_TALL = _RNG.standard_normal((4, 3))


@pytest.mark.parametrize("body", [
    "np.sum(np.linalg.qr(x, mode='r') * np.arange(9.0).reshape(3, 3))",
    "np.sum(np.linalg.qr(x, 'r') ** 2 * np.triu(np.ones((3, 3))))",
    "np.sum(np.diag(np.linalg.qr(x @ x.T[:, :3], mode='r')) ** 3)",
])
def test_qr_mode_r_is_r_of_the_reduced_factorization(body: str) -> None:
    """It was refused when the gradient ran ("not mode='r'"): R alone, a zero Q cotangent."""
    _check_all_orders(body, _TALL)


@pytest.mark.parametrize("body", [
    "np.sum(np.piecewise(x, [x > 0], [1.0, 2.0]) * x ** 3)",
    "np.sum(np.piecewise(x, [x < -1.0, x > 0.6], [-1, 3.5, 0.0]) * x ** 2)",
    "np.sum(np.piecewise(x, [x > 0], (np.pi, -np.e)) * np.sin(x))",
])
def test_piecewise_with_constant_pieces_is_a_step_function(body: str) -> None:
    """It was refused as if NumPy called Python code: the pieces are numbers, so its value is
    constant in x away from the conditions' boundaries (gradient zero)."""
    _check_all_orders(body, _X)


@pytest.mark.parametrize("pieces", ["[np.sin, 2.0]", "[lambda v: v ** 2, 2.0]", "[y, 2.0]"])
def test_piecewise_with_callable_or_varying_pieces_stays_refused(pieces: str) -> None:
    f = make_function(f"def f(x):\n    y = x[0] * 2\n    return np.sum(np.piecewise(x, [x > 0], {pieces}))\n",
                      _GLOBALS)
    with pytest.raises(s2sad.S2SADError, match="np.piecewise") as info:
        s2sad.grad(f)(_X)
    assert info.value.location.line == 3


@pytest.mark.parametrize("body, x", [
    ("np.dot(x, x ** 2, out=None)", _X),
    ("np.sum(np.dot(x.T, x, out=None) ** 2)", _M),
    ("math.hypot(x[1]) * x[0] ** 2", _X),
    ("math.hypot(x[1] * x[0]) + math.hypot(x[2], x[3], x[0])", _X),
])
def test_out_none_where_the_rule_takes_no_out_and_hypot_of_one(body: str, x: np.ndarray) -> None:
    """np.dot(a, b, out=None) was refused ("does not differentiate np.dot with argument 'out'"),
    math.hypot(x) ("missing its argument 'y'")."""
    _check_all_orders(body, x)


@pytest.mark.parametrize("body, x", [
    ("np.sum(np.concatenate([x, x ** 2], dtype=np.float64) ** 2)", _X),
    ("np.sum(np.concatenate((x, x ** 3), axis=None, casting='same_kind', out=None) * np.arange(8.0))", _X),
    ("np.sum(np.concatenate([x, x ** 2], axis=None) ** 2)", _M),
    ("np.sum(np.stack([x, x ** 2], axis=-1, dtype=np.float64) * np.arange(8.0).reshape(4, 2))", _X),
    ("np.sum(np.stack((x, np.sin(x)), 1, out=None) ** 2)", _M),
    ("np.sum(np.asarray(x ** 2, order='C') ** 2)", _X),
    ("np.sum(np.asarray(x ** 2, None, 'F') * x)", _M),
    ("np.sum(np.array(x ** 2, order='F', subok=True) * x)", _M),
])
def test_join_and_conversion_keywords(body: str, x: np.ndarray) -> None:
    """np.concatenate/np.stack with dtype=, casting= or out=None, np.asarray with order=,
    np.array with order= or subok= were refused ("does not differentiate ... with argument")."""
    _check_all_orders(body, x)


def test_join_to_an_integer_dtype_is_refused_where_the_gradient_reaches_it() -> None:
    f = make_function("def f(x):\n    return np.sum(np.concatenate([x, x], dtype=int, casting='unsafe') * x[0])\n",
                      _GLOBALS)
    with pytest.raises(s2sad.S2SADError, match=r"np.concatenate\(\.\.\., dtype=int\), a conversion to int") as info:
        s2sad.grad(f)(_X)
    assert info.value.location.line == 2


def test_einsum_sublist_form_of_three_operands_is_refused_at_the_call() -> None:
    f = make_function("def f(x):\n    return np.sum(np.einsum(x, [0, 1], x, [1, 2], x, [2, 3], [0, 3]))\n", _GLOBALS)
    with pytest.raises(s2sad.S2SADError, match=r"in the sublist form, more than two") as info:
        s2sad.grad(f)(_M)
    assert (info.value.location.line, info.value.location.column) == (2, 19)


def test_a_rewritten_call_is_refused_where_it_stands() -> None:
    """A call rewritten without its out=None or casting= reported its statement's column."""
    f = make_function("def f(x):\n    return np.sum(np.exp(x, where=x > 0, out=None, casting='same_kind'))\n", _GLOBALS)
    with pytest.raises(s2sad.S2SADError, match=r"without out= leaves the entries") as info:
        s2sad.grad(f)(_X)
    assert (info.value.location.line, info.value.location.column) == (2, 19)


def test_an_argument_of_a_rewritten_call_keeps_its_own_location() -> None:
    f = make_function("def f(x):\n    return np.sum(np.exp(np.piecewise(x, [x > 0], [np.sin, 1.0]), dtype=np.float64))\n",
                      _GLOBALS)
    with pytest.raises(s2sad.S2SADError, match=r"np.piecewise") as info:
        s2sad.grad(f)(_X)
    assert (info.value.location.line, info.value.location.column) == (2, 26)


_KINK = np.array([0.0, 1.0, -1.0, 0.25])


@pytest.mark.parametrize("body, x, expected", [
    ("np.sum(np.maximum(x, 0) * 3.0)", _KINK, [1.5, 3.0, 0.0, 3.0]),  # a tie at 0 shares
    ("np.sum(np.maximum(0, x) ** 2)", _KINK, [0.0, 2.0, 0.0, 0.5]),
    ("np.sum(np.round(x * 3) * x)", _X, np.round(_X * 3)),  # round, floor: piecewise constant
    ("np.sum(np.floor(x * 2) * x ** 2)", _X, np.floor(_X * 2) * 2 * _X),
    ("np.sum(np.where(x > 0, x, 0) ** 2)", _X, np.where(_X > 0, 2 * _X, 0.0)),  # an int branch
    ("np.sum(np.where(x > 0, 1, 0) * x)", _X, np.where(_X > 0, 1.0, 0.0)),
    ("np.sum(np.exp(x.astype(np.float32)) * x)", _X,
     np.exp(_X.astype(np.float32)) * (1 + _X)),  # float32 values, the gradient in float64
])
def test_kinks_steps_int_branches_and_float32_casts(body: str, x: np.ndarray, expected: list) -> None:
    f = make_function(f"def f(x):\n    return {body}\n", _GLOBALS)
    g = s2sad.grad(f)(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("body, x", [
    ("np.sum(np.array(x, ndmin=2) ** 2 * np.arange(4.0)[:, None])", _X),
    ("np.sum(np.array(x ** 2, ndmin=1) ** 2)", _X),
    ("np.sum(np.array(x[0] ** 3, ndmin=2) * x)", _X),
    ("np.sum(np.array(x, dtype=np.float64, ndmin=0) ** 3)", _M),
])
def test_array_with_ndmin(body: str, x: np.ndarray) -> None:
    """np.array(x, ndmin=2) was refused ("does not differentiate np.array with argument 'ndmin'")."""
    _check_all_orders(body, x)


@pytest.mark.parametrize("body", [
    "math.hypot(*[x[0], x[1], x[2]])",
    "math.hypot(*(x[0], x[1]), x[2] ** 2, *[x[3]])",
    "np.sum(np.exp(*[x], dtype=np.float64) * x)",
])
def test_spread_arguments_of_rewritten_calls(body: str) -> None:
    """math.hypot(*[a, b, c]) was refused ("takes at most 2 positional arguments")."""
    _check_all_orders(body, _X)
