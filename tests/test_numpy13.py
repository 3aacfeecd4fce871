"""The rules of s2sad/rules/numpy2_rules.py (NumPy 2's array-API functions, cumulative sums and
products, delete/insert, logspace/geomspace, the polynomial coefficient functions, divmod,
math.prod, x.item(i)), as a table run like tests/test_rules.py's: finite differences in float64
and float32, forward mode against reverse mode, and second order against finite differences
of the gradient.  Also: what is refused is refused at the user's call, with advice.
"""
from __future__ import annotations

import math
import operator
import re

import numpy as np
import pytest

import s2sad
import test_rules
from test_rules_numpy_more import table_tests
from s2sad.errors import S2SADError
from s2sad.rules import REGISTRY
from test_rules import F, Row

from gradcheck import make_function, numerical_grad

test_rules.NAMESPACE["math"] = math

ROWS: list[Row] = [
    # vector products: generalized ufuncs over their last (core) axes, broadcast over the others
    Row("np.vecdot(x, y)", ((3, 4), (3, 4)), (np.vecdot,)),
    Row("np.vecdot(x, y, axis=0)", ((3, 4), (3, 4)), (np.vecdot,)),
    Row("np.vecdot(x, y)", ((2, 3, 4), (4,)), (np.vecdot,)),
    Row("np.linalg.vecdot(x, y)", ((3, 4), (2, 3, 4)), (np.linalg.vecdot,)),
    Row("np.linalg.vecdot(x, y, axis=-2)", ((3, 4), (2, 3, 4)), (np.linalg.vecdot,)),
    Row("np.matvec(x, y)", ((2, 3, 4), (4,)), (np.matvec,)),
    Row("np.matvec(x, y)", ((3, 4), (2, 4)), (np.matvec,)),
    Row("np.vecmat(x, y)", ((3,), (2, 3, 4)), (np.vecmat,)),
    Row("np.vecmat(x, y)", ((2, 3), (3, 4)), (np.vecmat,)),
    Row("np.linalg.matrix_transpose(x) * y", ((2, 3, 4), (4, 3)), (np.linalg.matrix_transpose, operator.mul)),
    Row("np.linalg.cross(x, y)", ((4, 3), (4, 3)), (np.linalg.cross,)),
    Row("np.linalg.cross(x, y, axis=0)", ((3, 4), (3, 1)), (np.linalg.cross,)),
    Row("np.linalg.svdvals(x)", ((4, 3),), (np.linalg.svdvals,)),
    Row("np.linalg.svdvals(x)", ((2, 3, 3),), (np.linalg.svdvals,)),
    # cumulative sums and products, with the empty sum (product) first
    Row("np.cumulative_sum(x, axis=1)", ((3, 4),), (np.cumulative_sum,)),
    Row("np.cumulative_sum(x, include_initial=True)", ((5,),), (np.cumulative_sum,)),
    Row("np.cumulative_sum(x, axis=0, include_initial=True)", ((3, 4),), (np.cumulative_sum,)),
    Row("np.cumulative_prod(x, axis=1)", ((3, 4),), (np.cumulative_prod,), "nonzero"),
    Row("np.cumulative_prod(x, include_initial=True)", ((5,),), (np.cumulative_prod,), "nonzero"),
    Row("np.cumulative_prod(x, axis=0, include_initial=True)", ((3, 4),), (np.cumulative_prod,), "nonzero"),
    # unstack, delete, insert
    Row("a * b + c", ((3, 4),), (np.unstack,), pre="a, b, c = np.unstack(x)"),
    Row("np.unstack(x, axis=1)[2] * y", ((3, 4), (3,)), (np.unstack, operator.mul)),
    Row("np.delete(x, 1, axis=0)", ((3, 4),), (np.delete,)),
    Row("np.delete(x, [0, 5, 6])", ((3, 4),), (np.delete,)),
    Row("np.delete(x, slice(0, 4, 2), axis=1)", ((3, 4),), (np.delete,)),
    Row("np.delete(x, np.array([True, False, True, False]), axis=-1)", ((3, 4),), (np.delete,)),
    Row("np.insert(x, 1, y, axis=0)", ((3, 4), (4,)), (np.insert,)),
    Row("np.insert(x, [0, 2], y, axis=1)", ((3, 4), (3, 1)), (np.insert,)),
    Row("np.insert(x, 1, y, axis=1)", ((3, 4), (3,)), (np.insert,)),
    Row("np.insert(x, 2, y)", ((5,), F), (np.insert,)),
    Row("np.insert(x, [1, 1, 3], y)", ((5,), (3,)), (np.insert,)),
    # grids
    Row("np.logspace(x, y, 5)", (F, F), (np.logspace,), "small"),
    Row("np.logspace(x, y, 4, base=2.0, axis=1)", ((3,), (3,)), (np.logspace,), "small"),
    Row("np.geomspace(x, y, 5)", (F, F), (np.geomspace,), "positive"),
    Row("np.geomspace(x, y, 4, endpoint=False, axis=-1)", ((3,), (3,)), (np.geomspace,), "positive"),
    Row("np.geomspace(-x, -y, 3)", (F, F), (np.geomspace, operator.neg), "positive"),
    # polynomial coefficients
    Row("np.polyder(x)", ((5,),), (np.polyder,)),
    Row("np.polyder(x, 3) * y", ((5,), F), (np.polyder,)),
    Row("np.polyint(x)", ((4,),), (np.polyint,)),
    Row("np.polyint(x, 2) * y", ((4,), F), (np.polyint,)),
    Row("np.polyadd(x, y)", ((4,), (2,)), (np.polyadd,)),
    Row("np.polyadd(x, y)", ((2,), (4,)), (np.polyadd,)),
    Row("np.polysub(x, y)", ((2,), (4,)), (np.polysub,)),
    Row("np.polysub(x, y)", ((3,), (3,)), (np.polysub,)),
    Row("np.polymul(x, y)", ((4,), (3,)), (np.polymul,), "nonzero"),
    Row("np.polyfit(np.linspace(0.0, 1.0, 5), x, 2)", ((5,),), (np.polyfit,)),
    Row("np.polyfit(np.arange(4.0), x, 1)", ((4, 3),), (np.polyfit,)),
    # divmod: the remainder's gradient (the quotient is piecewise constant)
    Row("divmod(x, y)[1]", ((3, 4), (4,)), (divmod,), ("real", "positive")),
    Row("q * x + r * y", ((3,), (3,)), (np.divmod, operator.mul), ("real", "positive"),
        pre="q, r = np.divmod(x, y)"),
    Row("divmod(x, y)[1]", (F, F), (divmod,), ("real", "positive")),
    # math.prod of numbers and of arrays (broadcast against each other)
    Row("math.prod([x, y, x])", (F, F), (math.prod,)),
    Row("math.prod([x, y])", ((3, 4), (4,)), (math.prod,)),
    Row("math.prod((x, 2.0, y), start=3.0)", ((3,), (3,)), (math.prod,)),
    Row("math.prod(x)", ((3, 4),), (math.prod,), "nonzero"),  # an array: the product of its rows
    # vector norms over a tuple of axes (a vector norm of those entries, whatever their number)
    Row("np.linalg.vector_norm(x, axis=(0, 1))", ((2, 3, 4),), (np.linalg.vector_norm,)),
    Row("np.linalg.vector_norm(x, ord=1, axis=(-2, -1), keepdims=True)", ((2, 3, 4),), (np.linalg.vector_norm,),
        "nonzero"),
    Row("np.linalg.vector_norm(x, ord=np.inf, axis=(0, 2))", ((2, 3, 4),), (np.linalg.vector_norm,), "distinct"),
    Row("np.linalg.vector_norm(x, ord=3, axis=(1, 0))", ((3, 4),), (np.linalg.vector_norm,), "nonzero"),
    # spectral and nuclear norms of matrices: through the singular vectors (second order too)
    Row("np.linalg.matrix_norm(x, ord=2)", ((3, 4),), (np.linalg.matrix_norm,)),
    Row("np.linalg.matrix_norm(x, ord='nuc')", ((2, 3, 3),), (np.linalg.matrix_norm,)),
    Row("np.linalg.matrix_norm(x, ord=-2, keepdims=True)", ((2, 4, 3),), (np.linalg.matrix_norm,)),
    Row("np.linalg.norm(x, 2) * y", ((3, 4), F), (np.linalg.norm, operator.mul)),
    Row("np.linalg.norm(x, 'nuc', keepdims=True)", ((4, 3),), (np.linalg.norm,)),
    Row("np.linalg.norm(x, -2)", ((3, 3),), (np.linalg.norm,)),
    # np.interp in the points and the values together (its second derivative crosses them)
    Row("np.interp(x, np.array([-1.5, -0.5, 0.2, 1.5]), y)", ((3, 4), (4,)), (np.interp,), ("small", "real")),
    # x.item(...): one entry, by flat index or by index
    Row("x.item(4) * y", ((3, 4), F), (np.ndarray.item, operator.mul)),
    Row("x.item((1, 2)) * x.item(-1)", ((3, 4),), (np.ndarray.item,)),
    Row("x.item(0, 1) + y.item()", ((2, 2), (1, 1)), (np.ndarray.item,)),
]


# --- the same checks as tests/test_rules.py's table, and second order -----------------------
globals().update(table_tests(ROWS))


# --- refused at the call, with what to write instead ----------------------------------------

REFUSED = [  # (function body, argument, the error's words); the call is on line 3, column 11
    ("return np.sum(np.polyfit(x, x ** 2, 1))", np.arange(4.0), "not the sample points x"),
    ("return np.sum(np.polyfit(np.arange(4.0), x, 1, w=np.ones(4)))", np.arange(4.0), "w=None only"),
    ("return np.sum(np.logspace(0.0, 1.0, 3, base=x[0]))", np.arange(1.0, 3.0), "not base"),
    ("return np.sum(np.polyint(np.ones(3), 1, k=x[0]))", np.arange(1.0, 3.0), "integration constants"),
    ("return np.sum(np.vecdot(x, x, axes=[(0,), (0,), ()]))", np.ones((3, 2)), "default core axes"),
    ("return np.sum(np.matvec(x, x[0], axis=0))", np.ones((3, 3)), "default core axes"),
    ("return np.sum(math.prod([x, x], start=x))", np.ones(3), "not start"),
]


@pytest.mark.parametrize("body, x, complaint", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_at_the_call(body: str, x: np.ndarray, complaint: str) -> None:
    f = make_function(f"def f(x):\n    y = x\n    {body}\n", {"np": np, "math": math})
    with pytest.raises(S2SADError, match=complaint) as info:
        s2sad.grad(f)(x)
    assert info.value.location is not None and info.value.location.line == 3


@pytest.mark.parametrize("statement", [
    "np.put_along_axis(y, np.array([[0], [1]]), x[:, :1] ** 2, axis=1)", "np.put(y, [0, 2], x[0])",
    "np.putmask(y, y > 0, x)", "np.copyto(y, x ** 2)"])
def test_numpy_functions_that_write_in_place_are_refused_with_what_to_write(statement: str) -> None:
    f = make_function(f"def f(x):\n    y = x.copy()\n    {statement}\n    return np.sum(y)\n", {"np": np})
    name = statement.split("(")[0]
    with pytest.raises(S2SADError, match=re.escape(f"{name}(...) changes its first argument in place, which "
                                                   f"s2sad does not follow; ")) as info:
        s2sad.grad(f)(np.ones((2, 2)))
    assert info.value.location.line == 3 and info.value.location.column == 5


def test_polymul_with_a_leading_zero_is_refused_when_it_runs() -> None:
    """NumPy strips a leading zero coefficient, so the product's length jumps there."""
    def f(x):
        return np.sum(np.polymul(x, np.array([1.0, 2.0])) ** 2)

    np.testing.assert_allclose(s2sad.grad(f)(np.array([1.0, 0.5])), numerical_grad(f, [np.array([1.0, 0.5])], 0),
                               rtol=1e-6)
    with pytest.raises(S2SADError, match="leading one is 0"):
        s2sad.grad(f)(np.array([0.0, 0.5]))


def test_norm_of_complex_values_is_refused_as_a_norm_not_as_a_complex_output() -> None:
    """np.linalg.norm's result is real: the error names the norm (which s2sad differentiates
    for real values), not the function's output as if it were complex."""
    def f(x):
        return np.linalg.norm(x[0] + 1j * x[1])

    with pytest.raises(S2SADError, match="np.linalg.norm of complex values") as info:
        s2sad.grad(f)(np.ones((2, 3)))
    assert info.value.location is not None


def test_generalized_ufuncs_are_not_declared_elementwise() -> None:
    """np.vecdot's result drops its core axis: specialised code must not take it as broadcast."""
    for gufunc in (np.vecdot, np.matvec, np.vecmat):
        shape = REGISTRY.shape(gufunc)
        assert shape is None or shape.__qualname__.split(".")[0] != "elementwise"


def test_integer_functions_carry_no_gradient() -> None:
    for fun in (np.left_shift, np.right_shift, np.bitwise_count, np.gcd, np.lcm):
        assert REGISTRY.is_nondifferentiable(fun)


# --- against JAX (a development oracle; not installed in CI) ------------------------------------

def composite(x):
    a = np.cumulative_sum(x, axis=1, include_initial=True)
    b = np.vecdot(np.swapaxes(x, 0, 1), np.sin(np.swapaxes(x, 0, 1)))
    return np.sum(np.matvec(a[:, 1:], b) ** 2) + np.sum(np.linalg.svdvals(x) ** 3)


def test_against_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def composite_jax(x):  # noqa: ANN001, ANN202
        a = jnp.cumulative_sum(x, axis=1, include_initial=True)
        b = jnp.vecdot(jnp.swapaxes(x, 0, 1), jnp.sin(jnp.swapaxes(x, 0, 1)))
        return jnp.sum(jnp.matvec(a[:, 1:], b) ** 2) + jnp.sum(jnp.linalg.svdvals(x) ** 3)

    x = np.random.default_rng(3).standard_normal((3, 4))
    v = np.random.default_rng(4).standard_normal((3, 4))
    np.testing.assert_allclose(s2sad.grad(composite)(x), np.asarray(jax.grad(composite_jax)(x)), rtol=1e-9)
    want = jax.jvp(jax.grad(composite_jax), (x,), (v,))[1]
    np.testing.assert_allclose(s2sad.hvp(composite)(x, v), np.asarray(want), rtol=1e-8)
