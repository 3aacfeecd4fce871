"""NumPy's keyword arguments and argument combinations that the rule table
(tests/test_rules_numpy_more.py) does not reach: what is refused says so, and the
conventions at ties are exact.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import s2sad
from s2sad.errors import NoGradientRuleError, S2SADError
from s2sad.passes.simplify import simplify

from gradcheck import make_function, numerical_grad


def _f(body: str) -> Any:
    return make_function(f"def f(x):\n    return {body}\n", {"np": np})


def test_max_initial_that_wins_takes_the_gradient() -> None:
    """initial= is one more candidate: where it is the result, the entries get nothing."""
    x = np.array([[0.2, 0.7], [-0.4, -0.1]])
    g = s2sad.grad(_f("np.sum(np.max(x, axis=1, initial=0.0))"))(x)
    np.testing.assert_array_equal(g, [[0.0, 1.0], [0.0, 0.0]])
    # a tie with initial shares, as ties among entries do
    g = s2sad.grad(_f("np.sum(np.max(x, axis=1, initial=0.7))"))(x)
    np.testing.assert_array_equal(g, [[0.0, 0.5], [0.0, 0.0]])


def test_where_masks_the_gradient_even_at_the_extremum() -> None:
    x = np.array([3.0, 1.0, 2.0])
    g = s2sad.grad(_f("np.max(x, initial=-5.0, where=np.array([False, True, True]))"))(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])
    g = s2sad.grad(_f("np.mean(x, where=np.array([False, True, True]))"))(x)
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5])


def test_an_unknown_keyword_is_refused_at_the_call() -> None:
    f = make_function("def f(x):\n    m = x > 1.5\n    return np.var(x, where=m)\n", {"np": np})
    with pytest.raises(NoGradientRuleError, match="np.var with argument 'where'") as info:
        s2sad.grad(f)(np.array([1.0, 2.0, 4.0]))
    assert (info.value.location.line, info.value.location.column) == (3, 12)


def test_eig_with_complex_eigenvalues_is_refused() -> None:
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    with pytest.raises(S2SADError, match="np.linalg.eig of a matrix with complex eigenvalues"):
        s2sad.grad(_f("np.sum(np.abs(np.linalg.eig(x)[0]))"))(rotation)


def test_lstsq_of_a_rank_deficient_matrix_is_refused() -> None:
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    f = _f("np.sum(np.linalg.lstsq(x, np.ones(3), rcond=None)[0] ** 2)")
    with pytest.raises(S2SADError, match="rank 1.*full rank only"):
        s2sad.grad(f)(a)


def test_lstsq_residuals_and_singular_values_second_order() -> None:
    """The table checks second order on the solution; here the other outputs."""
    rng = np.random.default_rng(3)
    a, v = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    b = rng.standard_normal(5)
    f = make_function("def f(x, b):\n    sol, res, rank, sv = np.linalg.lstsq(x, b, rcond=None)\n"
                      "    return np.sum(res) + np.sum(sv ** 3) + np.sum(sol ** 2)\n", {"np": np})
    gradient = s2sad.grad(f)
    eps = 1e-6
    expected = (gradient(a + eps * v, b) - gradient(a - eps * v, b)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f)(a, b, v), expected, rtol=1e-5, atol=1e-7)


def test_dict_of_pairs_gives_each_value_its_gradient() -> None:
    """dict([(k, v), ...]) with a repeated key keeps the last value: the replaced one gets none."""
    f = make_function("def f(x):\n    d = dict([('a', x), ('b', 2.0 * x), ('a', 3.0 * x)])\n"
                      "    return np.sum(d['a'] * d['b'])\n", {"np": np})
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(s2sad.grad(f)(x), 12.0 * x)
    np.testing.assert_allclose(s2sad.jvp(f)(x, np.ones(2))[1], np.sum(12.0 * x))
    np.testing.assert_allclose(s2sad.hvp(f)(x, np.ones(2)), [12.0, 12.0])


@pytest.mark.parametrize("code, folded", [
    ("f(a) if None is None else h(a)", "f(a)"),
    ("f(a) if mask is True else h(a)", "f(a) if mask is True else h(a)"),
    ("u if True is True and None is None else w", "u"),
    ("u if False is not None else w", "u"),
    ("u if -0.5 is None else w", "w"),
    ("u if x is None else w", "u if x is None else w"),
])
def test_the_branches_of_an_omitted_keyword_fold_away(code: str, folded: str) -> None:
    assert simplify(code) == folded


@pytest.mark.parametrize("code, folded", [
    ("u if None in (2, -2, 'nuc') and np.ndim(x) == 2 else w", "w"),  # a literal ord that is no matrix norm's
    ("u if 2 in (2, -2, 'nuc') and np.ndim(x) == 2 else w", "u if np.ndim(x) == 2 else w"),
    ("u if None == 'nuc' else w", "w"),
    ("u if f(x) or 'fro' != None else w", "u"),
    ("u if 1 in 'ab' else w", "u if 1 in 'ab' else w"),  # (Python's TypeError, where the code runs)
    ("x and True", "x and True"),  # (a value, not a test: x when x is falsy)
])
def test_tests_of_literal_options_fold_away(code: str, folded: str) -> None:
    assert simplify(code) == folded


def test_the_gradient_of_a_vector_norm_is_one_helper_call() -> None:
    f = _f("np.linalg.norm(x) ** 2 + np.sum(np.linalg.norm(x, axis=1))")
    code = s2sad.adjoint_source(f)
    assert "svd" not in code and code.count("norm_grad(") == 2
    x = np.array([[0.3, -1.2, 0.5], [1.1, 0.4, -0.7]])
    np.testing.assert_allclose(s2sad.grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-6)
