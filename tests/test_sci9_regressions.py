"""Defects found by probing s2sad with realistic scientific programs (probe sci9): Gaussian
processes, spectral methods, integrators and the linear algebra around them, checked against
central finite differences."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.stats as stats
from gradcheck import assert_grad_matches, make_function, numerical_grad

import s2sad
from s2sad.errors import NoGradientRuleError

Y = np.array([0.3, -1.1, 0.8])


def unpacked_scales_into_cho_solve(theta: np.ndarray) -> float:
    scale, _ = np.exp(theta)
    k = scale * np.eye(3)
    a = sl.cho_solve((k, True), Y)
    return Y @ a


def unpacked_argument_into_cho_solve(theta: np.ndarray) -> float:
    scale, _ = theta
    k = scale * np.eye(3)
    a = sl.cho_solve((k, True), Y)
    return Y @ a


def unpacked_row_into_cho_solve(theta: np.ndarray) -> float:
    scale, _ = theta[0]
    k = scale * np.eye(3)
    a = sl.cho_solve((k, True), Y)
    return Y @ a


def unpacked_split_into_cho_solve(theta: np.ndarray) -> float:
    scale, _ = np.split(theta.ravel(), 2)
    k = scale * np.eye(3)
    a = sl.cho_solve((k, True), Y)
    return Y @ a


def unpacked_loop_rows_into_cho_solve(theta: np.ndarray) -> float:
    for scale, _ in theta:
        k = scale * np.eye(3)
        a = sl.cho_solve((k, True), Y)
    return Y @ a


@pytest.mark.parametrize("f, x", [
    (unpacked_scales_into_cho_solve, np.array([0.1, 0.2])),
    (unpacked_argument_into_cho_solve, np.array([1.1, 1.2])),
    (unpacked_row_into_cho_solve, np.array([[1.1, 1.2]])),
    (unpacked_split_into_cho_solve, np.array([[1.1, 1.2]])),
    (unpacked_loop_rows_into_cho_solve, np.array([[1.1, 1.2]])),
])
def test_value_unpacked_from_an_array_reaches_the_factor_of_cho_solve(f, x: np.ndarray) -> None:
    # a value unpacked from an array (GP hyperparameters: ls, sf, sn = np.exp(theta)) was not
    # "surely" varied, so cho_solve's factor was a silent cut (a zero gradient), then refused;
    # cho_solve differentiates its factor now: the gradient through the unpacked value
    assert_grad_matches(f, [x], 0)


def unpacked_pair_with_an_integer(w: np.ndarray) -> float:
    pair = (w, 2)
    x, n = pair
    return np.sum(np.arange(4.0)[n] * x ** 2)


def test_integer_unpacked_from_a_tuple_stays_an_index() -> None:
    w = np.array([0.5, -1.5])
    np.testing.assert_allclose(s2sad.grad(unpacked_pair_with_an_integer)(w), 4.0 * w)


def real_part_after_a_complex_write(x: np.ndarray) -> float:
    z = x * (1.0 + 0.5j)
    z[0] = z[0] * 2j
    return np.sum(z.real ** 2) + np.sum(z.imag)


def test_real_part_of_an_array_written_in_place_is_real() -> None:
    # z.real of an array written in place is read by attribute_of (z might be a record), which
    # the complex analysis took for a complex result: the real output was refused as complex
    x = np.array([0.3, -0.2, 0.5])
    assert_grad_matches(real_part_after_a_complex_write, [x], 0)
    v = np.array([1.0, 2.0, 3.0])
    gradient = s2sad.grad(real_part_after_a_complex_write)
    expected = numerical_grad(lambda x: gradient(x) @ v, [x], 0)  # H v, H symmetric
    np.testing.assert_allclose(s2sad.hvp(real_part_after_a_complex_write)(x, v), expected, rtol=1e-6)


@pytest.mark.parametrize("expr", [
    "np.sum(a[np.tril_indices_from(a)] ** 2)",
    "np.sum(a[np.triu_indices_from(a, k=1)] ** 2)",
    "np.sum(a[np.diag_indices_from(a)] ** 3)",
    "np.sum(a[0][np.lexsort(a)] * np.arange(3))",
    "np.sum(a * np.isin(np.round(a), [0.0]))",
    "np.sum(a.ravel()[np.ravel_multi_index(np.unravel_index(np.argmax(a), a.shape), a.shape)])",
    "np.sum(a.astype(np.result_type(a, 1.0)) ** 2)",
    "np.sum(a.astype(np.promote_types(a.dtype, np.float32)) ** 2)",
])
def test_index_and_dtype_functions_of_an_array_carry_no_gradient(expr: str) -> None:
    # an index made by np.tril_indices_from(a) (and the like) of an active a was taken for an
    # active index, refused; these functions carry no gradient
    f = make_function(f"def f(a):\n    return {expr}\n", {"np": np})
    a = np.array([[0.3, -1.2, 0.8], [0.1, 0.9, -0.4], [1.4, -0.7, 0.2]])
    assert_grad_matches(f, [a], 0)


def hyperparameters(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.exp(theta[0]), np.exp(theta[1])


def rates_and_count(theta: np.ndarray) -> tuple[np.ndarray, int]:
    return np.exp(theta), 2


def gp_factor_from_a_helper(theta: np.ndarray) -> float:
    scale, noise = hyperparameters(theta)
    k = scale * np.eye(3) + noise
    return Y @ sl.cho_solve((k, True), Y)


def factor_from_a_list(theta: np.ndarray) -> float:
    scales = []
    scales.append(np.exp(theta[0]))
    scale, = scales
    return Y @ sl.cho_solve((scale * np.eye(3), True), Y)


def knots_from_a_comprehension(theta: np.ndarray) -> float:
    a, b = [np.exp(v) for v in theta]
    return np.interp(0.5, np.array([0.0, a, a + b]), np.array([1.0, 2.0, 0.5]))


def write_into_integers(theta: np.ndarray) -> float:
    scale, noise = hyperparameters(theta)
    counts = np.zeros(3, dtype=int)
    counts[0] = scale * 10
    return np.sum(counts * 1.0) + noise


@pytest.mark.parametrize("f", [gp_factor_from_a_helper, factor_from_a_list])
def test_value_unpacked_from_a_call_reaches_the_factor_of_cho_solve(f) -> None:
    # (factor_from_a_list unpacks one name, scale, = scales: it was run as scale = scales)
    assert_grad_matches(f, [np.array([0.1, 0.2])], 0)


@pytest.mark.parametrize("f, line, message", [
    (knots_from_a_comprehension, 2, "np.interp with respect to xp"),
    (write_into_integers, 3, "written into an array of dtype int64"),
])
def test_value_unpacked_from_a_call_reaches_what_has_no_gradient(f, line: int, message: str) -> None:
    # values unpacked from what a function, a list or a comprehension gave were not "surely"
    # varied, so a refused parameter (or a write into integers) was a silent cut: zero
    # gradients (or a truncated value's slope); they are refused now
    with pytest.raises(NoGradientRuleError) as info:
        s2sad.grad(f)(np.array([0.1, 0.2]))
    assert info.value.location.line == f.__code__.co_firstlineno + line
    assert message in info.value.message


def count_written_beside_rates(theta: np.ndarray) -> float:
    rates, k = rates_and_count(theta)
    counts = np.zeros(3, dtype=int)
    counts[1] = k
    return np.sum(counts * rates)


def test_integer_unpacked_beside_values_that_carry_a_gradient_is_written() -> None:
    theta = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(s2sad.grad(count_written_beside_rates)(theta), [0.0, 2 * np.exp(0.2), 0.0])


def count_beside_rates_into_poisson(theta: np.ndarray) -> float:
    rates, k = rates_and_count(theta)
    return np.sum(stats.poisson.logpmf(k, rates))


def test_number_a_function_returns_beside_rates_is_a_constant() -> None:
    # the count 2 that rates_and_count returns is a literal in its return: a constant, which
    # poisson's count parameter takes (it was refused as a value that may carry a gradient)
    theta = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(s2sad.grad(count_beside_rates_into_poisson)(theta), 2.0 - np.exp(theta))


def stiffness_by_add_at(k: np.ndarray) -> float:
    n = k.size + 1
    stiffness = np.zeros((n, n))
    rows = np.array([[e, e, e + 1, e + 1] for e in range(k.size)]).ravel()
    cols = np.array([[e, e + 1, e, e + 1] for e in range(k.size)]).ravel()
    np.add.at(stiffness, (rows, cols), (k[:, None] * np.array([1.0, -1.0, -1.0, 1.0])).ravel())
    return np.sum(np.linalg.solve(stiffness[1:, 1:], np.ones(n - 1)))


def test_two_comprehensions_of_one_variable_over_an_argument_s_size() -> None:
    # the second comprehension's loop over range(k.size) looked for its variable's reads after
    # the loop s2sad made for it, which has no place in the source: an internal KeyError
    assert_grad_matches(stiffness_by_add_at, [np.array([1.2, 1.7, 1.4])], 0)


def stiffness_by_ix(k: np.ndarray) -> float:
    n = k.size + 1
    stiffness = np.zeros((n, n))
    for e in range(k.size):
        idx = np.array([e, e + 1])
        stiffness[np.ix_(idx, idx)] += k[e] * np.array([[1.0, -1.0], [-1.0, 1.0]])
    f = np.ones(n - 1)
    return f @ np.linalg.solve(stiffness[1:, 1:], f)


def test_hessian_through_an_assembly_indexed_by_ix() -> None:
    # the gradient's forward mode met np.ix_ (no rule) and refused it; it carries no gradient
    k = np.array([1.2, 1.7, 1.4])
    gradient = s2sad.grad(stiffness_by_ix)
    expected = np.stack([numerical_grad(lambda k: gradient(k)[i], [k], 0) for i in range(3)])
    np.testing.assert_allclose(s2sad.hessian(stiffness_by_ix)(k), expected, rtol=1e-5, atol=1e-8)


def test_sort_in_place_inside_an_expression_is_refused() -> None:
    # (b.sort() on its own line is followed on a list and refused on an array as the code runs)
    f = make_function("def f(a):\n    b = a * 2.0\n    r = b.sort(axis=1)\n    return np.sum(b * np.arange(2.0))\n",
                      {"np": np})
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=r"'b.sort\(\.\.\.\)' inside an expression .* "
                                                           r"on its own line \(b.sort\(\.\.\.\)\)") as info:
        s2sad.grad(f)(np.array([[0.5, 0.2], [0.3, 0.9]]))
    assert info.value.location.line == 3


@pytest.mark.parametrize("statement, callee", [
    ("r = b.fill(1.0)", "b.fill"),
    ("r = np.copyto(b, a ** 2)", "np.copyto"),
    ("r = np.fill_diagonal(b, 0.0)", "np.fill_diagonal"),
])
def test_library_call_that_may_change_an_argument_in_place_is_refused(statement: str, callee: str) -> None:
    # the call's result is unused, so nothing was differentiated through it, but it changes b
    # in place: the gradient was that of the unchanged b, silently
    f = make_function(f"def f(a):\n    b = a * 2.0\n    {statement}\n    return np.sum(b * np.arange(2.0))\n",
                      {"np": np})
    with pytest.raises(NoGradientRuleError) as info:
        s2sad.grad(f)(np.array([[0.5, 0.2], [0.3, 0.9]]))
    assert info.value.location.line == 3
    assert f"{callee} has no gradient rule" in info.value.message and "in place" in info.value.message
