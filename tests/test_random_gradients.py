"""Random numbers: the pathwise (reparameterisation) gradients of NumPy's location-scale
samplers, from the sample itself, against central finite differences of functions that draw
from a fixed seed (grad, jvp, hvp; parameters that ``size`` broadcasts), and the refusal, at
the call, of every other sampler parameter a gradient reaches."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError
from test_rules import F, Row, build

from gradcheck import assert_grad_matches, make_function, numerical_grad

#: Each location-scale sampler, with the domains of its parameters.
SAMPLERS = {
    "normal": ("real", "positive"), "laplace": ("real", "positive"), "logistic": ("real", "positive"),
    "gumbel": ("real", "positive"), "uniform": ("small", "above1"), "lognormal": ("small", "positive"),
    "exponential": ("positive",),
}
#: How each form draws: a fresh seeded Generator or RandomState, or the seeded global state.
FORMS = {
    "Generator": ("", "np.random.Generator.{name}(np.random.default_rng(0), {args}, size=(2, 3, 4))",
                  np.random.Generator),
    "RandomState": ("", "np.random.RandomState.{name}(np.random.RandomState(0), {args}, size=(2, 3, 4))",
                    np.random.RandomState),
    "np.random": ("np.random.seed(0)", "np.random.{name}({args}, size=(2, 3, 4))", np.random),
}


def _row(name: str, form: str) -> Row:
    pre, expr, owner = FORMS[form]
    domains = SAMPLERS[name]
    shapes = ((4,), (3, 1))[:len(domains)]
    args = ", ".join("xy"[:len(domains)])
    return Row(expr.format(name=name, args=args), shapes, (getattr(owner, name),), domains, pre=pre)


ROWS = [_row(name, form) for name in SAMPLERS for form in FORMS]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_pathwise_gradient_matches_finite_differences(row: Row) -> None:
    f, args = build(row)
    assert_grad_matches(f, args, wrt=tuple(range(len(args))), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_pathwise_jvp_matches_finite_differences(row: Row) -> None:
    f, args = build(row)
    rng = np.random.default_rng(1)
    for i, arg in enumerate(args):
        v = rng.standard_normal(np.shape(arg))
        value, derivative = s2sad.jvp(f, i)(*args, v)
        plus, minus = list(args), list(args)
        plus[i], minus[i] = arg + 1e-6 * v, arg - 1e-6 * v
        np.testing.assert_allclose(value, f(*args), rtol=1e-12)
        np.testing.assert_allclose(derivative, (f(*plus) - f(*minus)) / 2e-6, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_pathwise_hvp_matches_finite_differences_of_the_gradient(row: Row) -> None:
    """Second order, through a nonlinear function of the sample: each parameter's Hessian-vector
    product against central differences of the gradient."""
    _, args = build(row)
    names = ", ".join("xy"[:len(args)])
    f = make_function(f"def f({names}):\n    {row.pre}\n    return np.sum(np.sin({row.expr}))\n", {"np": np})
    rng = np.random.default_rng(2)
    for i, arg in enumerate(args):
        v = rng.standard_normal(np.shape(arg))
        gradient = s2sad.grad(f, i)
        plus, minus = list(args), list(args)
        plus[i], minus[i] = arg + 1e-5 * v, arg - 1e-5 * v
        expected = (gradient(*plus) - gradient(*minus)) / 2e-5
        np.testing.assert_allclose(s2sad.hvp(f, i)(*args, v), expected, rtol=1e-5, atol=1e-7)


def draw_inside(mu: float, sigma: float) -> float:
    rng = np.random.default_rng(0)
    z = rng.normal(mu, sigma, size=1000)
    return np.mean(np.tanh(z))


def draw_globally(mu: float, sigma: float) -> float:
    np.random.seed(0)
    z = np.random.normal(mu, sigma, size=1000)
    return np.mean(np.tanh(z))


def draw_from_a_random_state(mu: np.ndarray, sigma: float) -> float:
    z = np.random.RandomState(0).normal(mu, sigma, size=(1000, 3))
    return np.mean(np.tanh(z) * np.arange(3.0))


@pytest.mark.parametrize("f, args", [(draw_inside, (0.3, 1.2)), (draw_globally, (0.3, 1.2)),
                                     (draw_from_a_random_state, (np.array([0.3, -0.2, 0.5]), 1.2))],
                         ids=["local Generator", "np.random.seed", "RandomState(0).normal"])
def test_the_forms_of_a_seeded_draw(f: Any, args: tuple) -> None:
    """A generator made in the function, the seeded global state, a RandomState called at once:
    the gradient is the pathwise one, not zero."""
    assert_grad_matches(f, args, wrt=(0, 1), rtol=1e-6, atol=1e-9)
    assert abs(np.sum(numerical_grad(f, args, 0))) > 1e-3  # (a zero gradient would be wrong)


REFUSED = [  # (the draw, what the error says)
    ("rng.permutation(x)", "index x with rng.permutation(len(x))"),
    ("rng.choice(x, 2)", "index x with rng.choice(len(x), k)"),
    ("rng.choice(3, 2, p=x / np.sum(x))", "with respect to 'p'"),
    ("rng.gamma(x, 1.0, size=3)", "np.random.Generator.gamma with respect to 'shape'"),
    ("rng.gamma(2.0, x)", "np.random.Generator.gamma with respect to 'scale'"),
    ("rng.beta(1.0, x)", "np.random.Generator.beta with respect to 'b'"),
    ("rng.poisson(x)", "np.random.Generator.poisson with respect to 'lam'"),
    ("rng.binomial(10, x / 4.0)", "np.random.Generator.binomial with respect to 'p'"),
    ("rng.integers(0, x)", "an integer sample has no gradient"),
    ("np.random.dirichlet(x)", "np.random.dirichlet with respect to 'alpha'"),
    ("np.random.RandomState(0).weibull(x)", "np.random.RandomState.weibull with respect to 'a'"),
    ("RNG.multivariate_normal(x, np.eye(3))", "np.random.Generator.multivariate_normal with respect to 'mean'"),
]


@pytest.mark.parametrize("draw, complaint", REFUSED, ids=[r[0] for r in REFUSED])
def test_other_sampler_parameters_are_refused_at_the_call(draw: str, complaint: str) -> None:
    source = ("def f(x):\n"
              "    rng = np.random.default_rng(0)\n"
              f"    z = {draw}\n"
              "    return np.sum(z * x)\n")
    f = make_function(source, {"np": np, "RNG": np.random.default_rng(0)})
    with pytest.raises(S2SADError, match=complaint.replace("(", r"\(").replace(")", r"\)")) as info:
        s2sad.grad(f)(np.array([1.5, 2.5, 3.5]))
    assert info.value.location.line == 3
    if "respect to" in complaint and "'p'" not in complaint:
        assert "transform of a standard sample" in str(info.value)


def test_samplers_with_constant_parameters_stay_constants() -> None:
    """rng.normal(0.0, 1.0, size), rng.integers, rng.random: no gradient flows through them."""
    def f(x: np.ndarray) -> float:
        rng = np.random.default_rng(0)
        noise = rng.normal(0.0, 1.0, 3) + rng.random(3) + rng.integers(0, 3, size=3)
        return np.sum(noise * x)

    rng = np.random.default_rng(0)
    expected = rng.normal(0.0, 1.0, 3) + rng.random(3) + rng.integers(0, 3, size=3)
    np.testing.assert_allclose(s2sad.grad(f)(np.array([0.5, 1.5, 2.5])), expected, rtol=1e-12)


RNG = np.random.default_rng(0)


def _draws_from_a_global_generator(mu, s):
    return np.sum(RNG.normal(mu, s, size=3) ** 3)


def test_a_kept_gradient_draws_from_the_generator_the_global_holds_when_it_runs():
    # the generated code called the bound method found at generation (RNG_normal): after
    # the global was bound to a new generator, a kept gradient drew from the old one
    global RNG
    g = s2sad.grad(_draws_from_a_global_generator, 1)
    for _ in range(3):
        RNG = np.random.default_rng(0)
        got = g(0.3, 1.2)
        RNG = np.random.default_rng(0)
        up = _draws_from_a_global_generator(0.3, 1.2 + 1e-6)
        RNG = np.random.default_rng(0)
        down = _draws_from_a_global_generator(0.3, 1.2 - 1e-6)
        np.testing.assert_allclose(got, (up - down) / 2e-6, rtol=1e-6)


# --- shuffling in place ------------------------------------------------------------------

GLOBAL_RNG = np.random.default_rng(0)


def shuffled_index_np(w, X):
    np.random.seed(1)
    idx = np.arange(X.shape[0])
    np.random.shuffle(idx)
    return np.sum((X[idx[:2]] @ w) ** 2)


def shuffled_index_local_generator(w, X):
    rng = np.random.default_rng(1)
    idx = np.arange(X.shape[0])
    rng.shuffle(idx)  # (was refused: an expression statement whose result is unused)
    return np.sum((X[idx[:2]] @ w) ** 2)


def shuffled_index_assigned(w, X):
    rng = np.random.default_rng(1)
    idx = np.arange(X.shape[0])
    unused = rng.shuffle(idx)  # (kept: it changes idx)
    return np.sum((X[idx[:2]] @ w) ** 2)


def shuffled_index_list(w, X):
    import random
    random.seed(1)
    idx = list(range(X.shape[0]))
    random.shuffle(idx)
    return np.sum((X[idx[:2]] @ w) ** 2)


@pytest.mark.parametrize("f", [shuffled_index_np, shuffled_index_local_generator, shuffled_index_assigned,
                               shuffled_index_list],
                         ids=lambda f: f.__name__)
def test_an_index_array_shuffled_in_place_selects_a_minibatch(f: Any) -> None:
    assert_grad_matches(f, (np.array([0.5, -1.0]), np.arange(8.0).reshape(4, 2)), 0)


def shuffles_a_value_with_a_gradient(x):
    y = x * 2.0
    np.random.shuffle(y)
    return np.sum(y * np.arange(3.0))


def generator_shuffles_a_value_with_a_gradient(x):
    rng = np.random.default_rng(0)
    y = x * 2.0
    rng.shuffle(y)
    return np.sum(y * np.arange(3.0))


def shuffle_assigned(x):
    y = x * 2.0
    r = np.random.shuffle(y)
    return np.sum(y * np.arange(3.0))


def generator_shuffle_assigned(x):
    rng = np.random.default_rng(0)
    y = x * 2.0
    _ = rng.shuffle(y)
    return np.sum(y * np.arange(3.0))


def shuffles_what_stop_gradient_shares(x):
    y = x * 2.0
    c = s2sad.stop_gradient(y)
    np.random.shuffle(c)
    return np.sum(y * np.arange(3.0))


@pytest.mark.parametrize("f, line, column, words", [
    (shuffles_a_value_with_a_gradient, 2, 5, r"'np.random.shuffle\(y\)' changes y in place, and y carries a gradient"),
    (generator_shuffles_a_value_with_a_gradient, 3, 5, r"write y = y\[rng.permutation\(len\(y\)\)\]"),
    (shuffles_what_stop_gradient_shares, 3, 5, "'y' may share memory with 'c'"),
    (shuffle_assigned, 2, 5, r"'np.random.shuffle\(y\)' changes y in place"),
    (generator_shuffle_assigned, 3, 5, r"'rng.shuffle\(y\)' changes y in place"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_shuffling_a_value_whose_gradient_is_needed_is_refused_where_it_stands(f: Any, line: int, column: int,
                                                                               words: str) -> None:
    """(The gradient ignored the shuffle: silently wrong for np.random.shuffle.)"""
    for mode in ("grad", "jvp"):
        with pytest.raises(S2SADError, match=words) as info:
            s2sad.grad(f)(np.array([0.5, -1.0, 2.0])) if mode == "grad" else s2sad.jvp(f)(
                np.array([0.5, -1.0, 2.0]), np.ones(3))
        loc = info.value.location
        assert (loc.line - f.__code__.co_firstlineno, loc.column) == (line, column)
