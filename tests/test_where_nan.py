"""NaN-safe ``np.where`` (issue 17, point 5): the untaken branch's NaN or inf never reaches
the gradient, at any order; std, var and norm where they are identically constant.

Every check runs with floating-point warnings ignored: the user's functions themselves
compute NaN and inf in the branch that ``np.where`` does not take.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import grad, hessian, hvp, jvp, value_and_grad

from gradcheck import numerical_grad


@pytest.fixture(autouse=True)
def _quiet() -> None:
    with np.errstate(all="ignore"):
        yield


def where_sqrt(x):
    return np.sum(np.where(x > 0, np.sqrt(x), 0.0))


def where_sinc(x):
    return np.sum(np.where(x == 0, 1.0, np.sin(x) / x))


def where_log_chain(x):  # several operations only feed the branch
    y = np.log(x)
    z = y * 2 + 1
    return np.sum(np.where(x > 0, z, x))


def where_else_branch(x):  # the y branch is the one that can be NaN
    return np.sum(np.where(x <= 0, -x, np.log(x) * x))


def where_scalar_branch(x):  # a scalar branch broadcast against a vector mask
    s = x[1]
    return np.sum(np.where(x > 0, np.log(s), 1.0))


def where_row_mask(x):  # a mask broadcast against the branch
    a = x.reshape(2, 3)
    return np.sum(np.where(a[:, :1] > 0, np.sqrt(a), a))


def where_nested(x):
    return np.sum(np.where(x > 0, np.where(x > 1, np.log(x - 1), np.sqrt(x)), -x))


def where_in_loop(x):
    t = 0.0
    for i in range(3):
        t = t + np.sum(np.where(x > i * 0.3, np.log(x - i * 0.3), 0.0))
    return t


def where_in_branch(x):
    if np.sum(x) > 0:
        y = np.where(x > 0, np.sqrt(x), x)
    else:
        y = x
    return np.sum(y * y)


def where_shared_reciprocal(x):  # one value feeds two wheres with different masks
    r = 1.0 / x
    return np.sum(np.where(x != 0, r, 0.0)) + np.sum(np.where(x > 1, r ** 2, 0.0))


def where_long_chain(x):
    return np.sum(np.where(x > 0, x ** 0.5 * 3 + np.arcsin(x / 4), 0.0))


CASES = [where_sqrt, where_sinc, where_log_chain, where_else_branch, where_scalar_branch,
         where_row_mask, where_nested, where_in_loop, where_in_branch, where_shared_reciprocal,
         where_long_chain]
# no entry on a branch's edge (finite differences would straddle it), several where a
# branch is NaN or inf
X = np.array([-0.5, 0.4, 1.7, -2.0, 0.9, 2.5])


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_is_finite_and_matches_finite_differences(f):
    g = grad(f)(X)
    assert np.isfinite(g).all(), g
    np.testing.assert_allclose(g, numerical_grad(f, [X], 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(value_and_grad(f)(X)[1], g, rtol=1e-12)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_second_order_is_finite_and_matches_finite_differences(f):
    v = np.linspace(-1.0, 1.0, X.size)
    Hv = hvp(f)(X, v)
    assert np.isfinite(Hv).all(), Hv
    eps = 1e-5
    fd = (grad(f)(X + eps * v) - grad(f)(X - eps * v)) / (2 * eps)
    np.testing.assert_allclose(Hv, fd, rtol=1e-5, atol=1e-5)
    H = hessian(f)(X)
    assert np.isfinite(H).all()
    np.testing.assert_allclose(H @ v, Hv, rtol=1e-8, atol=1e-10)
    value, slope = jvp(f)(X, v)
    assert np.isfinite(slope)


def test_the_issue_examples_have_zero_gradient_where_the_branch_is_not_taken():
    x = np.array([-1.0, 0.0, 0.25, 4.0])
    np.testing.assert_array_equal(grad(where_sqrt)(x), [0.0, 0.0, 1.0, 0.25])
    g = grad(where_sinc)(np.array([0.0, 0.5, 1.0]))
    assert g[0] == 0.0
    np.testing.assert_allclose(g[1:], [(np.cos(0.5) * 0.5 - np.sin(0.5)) / 0.25, np.cos(1.0) - np.sin(1.0)])
    assert np.isfinite(hessian(where_sqrt)(x)).all()
    assert np.isfinite(hessian(where_sinc)(np.array([0.0, 0.5, 1.0]))).all()
    np.testing.assert_array_equal(hessian(where_sqrt)(x)[:2], 0.0)


def test_scalar_where_at_second_order_by_reverse_over_reverse():
    def f(x):
        return np.where(x > 0, np.sqrt(x), 0.0) * 1.0

    assert grad(f)(-1.0) == 0.0
    assert grad(grad(f))(-1.0) == 0.0
    assert grad(grad(f))(4.0) == pytest.approx(-0.25 * 4.0 ** -1.5)


def test_if_expression_evaluates_only_the_branch_taken():
    def f(x):
        return np.sqrt(x) if x > 0 else 0.0 * x

    assert grad(f)(-1.0) == 0.0
    assert grad(f)(4.0) == 0.25


def test_a_value_also_used_outside_the_where_keeps_its_gradient():
    # sqrt(x) reaches the output unmasked too: its NaN is the function's (its value is NaN)
    def f(x):
        s = np.sqrt(x)
        return np.sum(np.where(x > 0, s, 0.0)) + np.sum(s * 0.0)

    assert np.isnan(grad(f)(np.array([-1.0, 4.0]))[0])


def test_code_without_where_computes_no_mask():
    def f(x):
        return np.sum(np.log(x) * 2.0 + np.sqrt(x))

    assert "branch_mask" not in s2sad.adjoint_source(f)
    assert "np.where" not in s2sad.adjoint_source(f)


def test_masked_generated_code_reads_as_the_math():
    src = s2sad.adjoint_source(where_sqrt)
    assert "sqrt_x_taken = branch_mask(mask, sqrt_x)" in src
    assert "dx = np.where(sqrt_x_taken, dsqrt_x * 0.5 / sqrt_x, 0)" in src


# --- identically constant: std, var and norm ------------------------------------------
def std_one(x):
    return np.std(x[:1]) + np.sum(x)


def std_axis(x):
    return np.sum(np.std(x.reshape(1, 4), axis=0)) + np.sum(x ** 2)


def std_method(x):
    return x[2:3].std() * 3.0 + np.sum(x)


def var_one(x):
    return np.var(x[:1]) + np.sum(x)


@pytest.mark.parametrize("f", [std_one, std_axis, std_method, var_one], ids=lambda f: f.__name__)
def test_std_and_var_of_one_entry_have_gradient_zero(f):
    x = np.array([0.3, 0.5, 0.7, 0.2])
    g = grad(f)(x)
    np.testing.assert_allclose(g, numerical_grad(f, [x], 0), rtol=1e-6, atol=1e-8)
    H = hessian(f)(x)
    assert np.isfinite(H).all()
    np.testing.assert_allclose(H, np.diag([2.0] * 4) if f is std_axis else 0.0, atol=1e-12)


def test_std_of_several_entries_is_unchanged():
    def f(x):
        return np.std(x) + np.std(x, ddof=1)

    x = np.array([0.3, 0.5, 0.7, 0.2])
    np.testing.assert_allclose(grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-6)


def test_norm_at_the_zero_vector_has_subgradient_zero():
    def f(x):
        return np.linalg.norm(x) + np.linalg.norm(x, 1) + np.linalg.norm(x, np.inf) * 0.0

    g = grad(f)(np.zeros(3))
    np.testing.assert_array_equal(g, 0.0)
    assert np.isfinite(jvp(f)(np.zeros(3), np.ones(3))[1])


def where_after_a_loop_that_unpacks_the_branch(x):
    s = np.sin(x)
    acc = 0.0
    for i in range(2):
        a, b = s  # the loop's contributions to s's adjoint are not masked
        acc = acc + a * b
    return acc + np.sum(np.where(x > 0, s, 0.0))


def test_a_loop_contribution_ends_the_support():
    x = np.array([-0.5, 0.7])
    f = where_after_a_loop_that_unpacks_the_branch
    np.testing.assert_allclose(grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-6)


def sqrt_in_two_wheres(x):
    r = np.sqrt(x)
    return np.sum(np.where(x > 0.5, r, 0.0) + np.where(x > 0.2, 2.0 * r, x ** 2))


def test_a_value_in_two_masked_branches_keeps_the_union_of_the_masks():
    """sqrt's adjoint is masked where either where takes it: 0, not NaN, at x < 0."""
    x, v = np.array([0.8, 0.3, -0.4]), np.array([1.0, -0.5, 2.0])
    f = sqrt_in_two_wheres
    np.testing.assert_allclose(grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-6)
    eps = 1e-6
    slope = (grad(f)(x + eps * v) - grad(f)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hvp(f)(x, v), slope, rtol=1e-6)
    np.testing.assert_allclose(hessian(f)(x) @ v, slope, rtol=1e-6)


# --- NaN-ignoring reductions: an entry they skip sends no gradient back -------------------
# (missing data: the gradient in x where y is NaN is 0, as the value does not depend on it;
# without the reduction's mask, abs's sign(nan), or (nan - x) from the square, made it NaN)
def nansum_abs(x, y):
    return np.nansum(np.abs(x - y))


def nanmean_square(x, y):
    return np.nanmean((x - y) ** 2)


def nan_moments(x, y):
    d = np.exp(x) - y
    return np.nanstd(d) + np.nanvar(d, axis=0).sum() + np.nanmax(d) + np.nanprod(np.tanh(d))


def nan_cumulative(x, y):
    d = np.sin(x * y)
    return np.sum(np.nancumsum(d, axis=1) ** 2) + np.nansum(np.nancumprod(d, axis=0))


@pytest.mark.parametrize("f", [nansum_abs, nanmean_square, nan_moments, nan_cumulative])
def test_nan_reductions_send_no_gradient_to_the_entries_they_skip(f):
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    y[1, 2] = y[0, 0] = np.nan
    g = grad(f)(x, y)
    assert np.all(np.isfinite(g)) and g[1, 2] == 0.0 and g[0, 0] == 0.0
    np.testing.assert_allclose(g, numerical_grad(f, (x, y), 0), rtol=1e-6, atol=1e-8)
    v = rng.normal(size=x.shape)
    hv = hvp(f)(x, y, v)
    assert np.all(np.isfinite(hv))
    fd = (grad(f)(x + 1e-6 * v, y) - grad(f)(x - 1e-6 * v, y)) / 2e-6
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-6)


def nan_order_statistics(x, y):
    d = np.abs(x - y) + np.sin(x)
    return np.nanmedian(d) + np.nanquantile(d, 0.3, axis=1).sum() + np.nanpercentile(d, 80.0)


def test_nan_order_statistics_send_no_gradient_to_the_entries_they_skip():
    test_nan_reductions_send_no_gradient_to_the_entries_they_skip(nan_order_statistics)
