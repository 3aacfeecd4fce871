"""``functools.partial`` and frozen scipy.stats distributions made inside the differentiated
function: calls through them are lowered as the calls they stand for, their bound arguments
computed where the binding stands.  Gradients, Hessian-vector products and forward mode are
checked against central finite differences in float64; what is not followed is refused at
its location."""
from __future__ import annotations

import functools
from functools import partial
from typing import Callable

import numpy as np
import pytest

import s2sad
from s2sad import grad
from tests.gradcheck import assert_grad_matches, numerical_grad

st = pytest.importorskip("scipy.stats")


def model(w, X, b=0.0):
    return np.tanh(X @ w + b)


def bound_first(w, X, y):
    f = functools.partial(model, w)
    return np.sum((f(X) - y) ** 2)


def bound_keyword(w, X, y):
    f = partial(model, b=w[0])
    return np.sum((f(w, X) - y) ** 2)


def numpy_function(w, X, y):
    s = partial(np.sum, axis=0)
    return np.sum(s(X * w[None, :]) ** 2)


def lambda_bound(w, X, y):
    f = partial(lambda a, v: np.sum(np.sin(a * v)), w[0])
    return f(w) + f(2 * w)


def keyword_replaced_at_the_call(w, X, y):
    f = partial(model, b=1.0)
    return np.sum(f(w, X, b=w[1]) ** 2)


def bound_then_rebound_argument(w, X, y):
    v = w * 2.0
    f = partial(model, v)  # binds the value v has here
    v = w * 3.0
    return np.sum(f(X)) * np.sum(v)


def called_in_a_loop(w, X, y):
    f = partial(model, w)
    t = 0.0
    for i in range(2):
        t = t + np.sum(f(X * (i + 1)) ** 2)
    return t


def frozen_normal(w, X, y):
    d = st.norm(w[0], np.exp(w[1]))
    return -np.sum(d.logpdf(y))


def frozen_in_a_chain(w, X, y):
    return -np.sum(st.norm(loc=w[0], scale=np.exp(w[1])).logpdf(y))


def frozen_prior_and_likelihood(w, X, y):
    prior = st.norm(0.0, 2.0)
    lik = st.t(df=4.0, loc=w[0], scale=np.exp(w[1]))
    return -(np.sum(lik.logpdf(y)) + np.sum(prior.logpdf(w)))


def frozen_gamma(w, X, y):
    d = st.gamma(np.exp(w[0]), scale=np.exp(w[1]))
    return -np.sum(d.logpdf(np.abs(y) + 0.1))


PROGRAMS = [bound_first, bound_keyword, numpy_function, lambda_bound, keyword_replaced_at_the_call,
            bound_then_rebound_argument, called_in_a_loop, frozen_normal, frozen_in_a_chain,
            frozen_prior_and_likelihood, frozen_gamma]
rng = np.random.default_rng(0)
W, X, Y = np.array([0.3, -0.2]), rng.normal(size=(4, 2)), rng.normal(size=4)
V = np.array([0.4, -1.0])


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_matches_finite_differences(f: Callable) -> None:
    assert_grad_matches(f, (W, X, Y), 0)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_hvp_and_jvp_match_finite_differences(f: Callable) -> None:
    eps = 1e-5
    expected = (grad(f)(W + eps * V, X, Y) - grad(f)(W - eps * V, X, Y)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f)(W, X, Y, V), expected, rtol=1e-5, atol=1e-7)
    assert s2sad.jvp(f)(W, X, Y, V)[1] == pytest.approx(numerical_grad(f, (W, X, Y), 0) @ V, rel=1e-6)


def passed_on(w, X, y):
    f = partial(model, w)
    g = f
    return np.sum(g(X))


def assigned_twice(w, X, y):
    f = partial(model, w)
    f = partial(model, 2 * w)
    return np.sum(f(X))


def in_a_branch(w, X, y):
    if w[0] > 0:
        f = partial(model, w)
    else:
        f = partial(model, -w)
    return np.sum(f(X))


def read_in_a_lambda(w, X, y):
    f = partial(model, w)
    return np.sum((lambda v: f(v))(X))


def bound_array_changed_in_place(w, X, y):
    a = w * 2.0
    f = partial(model, a)  # (holds the array a: Python's call sees the change below)
    a[0] = 5.0
    return np.sum(f(X))


def draws_from_a_frozen_distribution(w, X, y):
    d = st.norm(w[0], 1.0)
    return np.sum(d.rvs(size=3, random_state=0))


@pytest.mark.parametrize("f, line, column, words", [
    (passed_on, 2, 9, "'f' is a functools.partial made in the function"),
    (assigned_twice, 2, 5, "'f' is a functools.partial made in the function"),
    (in_a_branch, 2, 13, "made at the top level of the function"),
    (read_in_a_lambda, 2, 30, "read in a nested function"),
    (draws_from_a_frozen_distribution, 2, 19, "'.rvs' of a frozen scipy.stats distribution"),
    (bound_array_changed_in_place, 3, 5, "'f' may share memory with 'a'"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_what_is_not_followed_is_refused_where_it_stands(f: Callable, line: int, column: int, words: str) -> None:
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=words) as info:
        grad(f)(W, X, Y)
    loc = info.value.location
    assert (loc.line - f.__code__.co_firstlineno, loc.column) == (line, column)


PRIOR = st.norm(0.0, 2.0)


def global_frozen(w, X, y):
    return -np.sum(PRIOR.logpdf(w))


def test_a_frozen_distribution_made_outside_is_refused_with_the_call_to_write() -> None:
    with pytest.raises(s2sad.NoGradientRuleError, match=r"scipy\.stats\.norm\.logpdf\(x, 0\.0, 2\.0\)") as info:
        grad(global_frozen)(W, X, Y)
    assert info.value.location.line == global_frozen.__code__.co_firstlineno + 1
