"""Specialised code where shapes come from ints the argument shapes determine (``d = X.shape[1]``,
``n, d = X.shape``, ``len(x)``, literals and their arithmetic): the arrays made from them
(``np.ones((d, d))``, ``np.eye(d)``, ``x.reshape(n, -1)``, ``x[:n - 1]``) are known, and the
gradient is plain NumPy, right, and of the generic code's types, shapes and dtypes; an int
assigned different values (a loop's counter, a counter a loop steps) has none.
"""
from __future__ import annotations

import ast
import builtins

import numpy as np
import pytest

import s2sad
from gradcheck import numerical_grad
from s2sad.passes.shapes import Evaluator, int_known
from s2sad.rules.shapes import of_value


def triangular(M, L):
    d = M.shape[1]
    U = np.triu(np.ones((d, d), dtype=M.dtype), 1)
    P = L * U + np.exp(L) * np.eye(d, dtype=L.dtype)
    return np.sum(M @ P) + 0.5 * d * np.sum(L ** 2)


def cholesky_factors(off_diagonal, log_diagonal, X):
    """em_gmm's precision_cholesky, and log_joint's constant."""
    d = X.shape[-1]
    strictly_upper = np.triu(np.ones((d, d), dtype=X.dtype), 1)
    diagonal = np.exp(log_diagonal)[:, :, None] * np.identity(d, dtype=X.dtype)
    P = off_diagonal * strictly_upper + diagonal
    log_pdf = np.sum(log_diagonal, axis=1)[:, None] - 0.5 * np.sum(P ** 2, axis=2) - 0.5 * d * np.log(2 * np.pi)
    return np.sum(log_pdf)


def unpacked(X, w, Y):
    n, d = X.shape
    centred = X - np.sum(X, axis=0) / n
    C = centred.T @ centred / (n - 1)
    lagged = Y[: n - 1] * Y[1:]  # (Y: not differentiated)
    return np.sum(C * np.eye(d, dtype=X.dtype)) + np.sum(lagged @ w * Y[n - 1, -1]) / len(X)


def reshaped(X):
    n = X.shape[0]
    Y = X.reshape(n, -1)
    Z = np.reshape(Y, (-1, 2))
    ramp = np.arange(Z.shape[-1], dtype=X.dtype) + 1
    return np.sum(Z ** 2 * ramp) + np.sum(Z.reshape(X.size) * np.arange(X.size, dtype=X.dtype)) / X.ndim


def constructed(x, b):
    n, d = len(x), b.shape[0]
    B = np.broadcast_to(b, (n, d))
    filled = np.full((n, d), 2.0, dtype=b.dtype) + np.zeros_like(B) + np.eye(n, d, dtype=b.dtype)
    filled = filled + np.ones(B.shape, dtype=b.dtype)
    lower = np.tril(np.ones((max(n, d), max(n, d)), dtype=b.dtype))[:n, :d]
    return np.sum(B * filled * lower * x[:, None] * min(n, d))


def growing(x, y):
    """k takes 1, 2, 3: a fixed value would divide by the wrong count."""
    total = np.sum(x) * 0.0
    k = 1
    for _ in range(3):
        total = total + np.mean(x[:, None] * y[:k])
        k = k + 1
    return total


def counted(x):
    """A loop's counter t takes every value of the range."""
    total = np.sum(x) * 0.0
    for t in range(x.shape[0]):
        total = total + np.mean(x[: t + 1]) * x[t]
    return total


def reassigned(x, y):
    """Two names in the code: each of one value."""
    k = 2
    head = np.sum(x[:2] * y[:k])
    k = 3
    return head + np.sum(x * y[:k])


_RNG = np.random.default_rng(0)
CASES = {
    "triangular": (triangular, (0, 1), lambda: (_RNG.normal(size=(4, 3)), _RNG.normal(size=(3, 3)))),
    "cholesky_factors": (cholesky_factors, (0, 1), lambda: (
        _RNG.normal(size=(2, 3, 3)), _RNG.normal(size=(2, 3)), _RNG.normal(size=(5, 3)))),
    "unpacked": (unpacked, (0, 1), lambda: (
        _RNG.normal(size=(5, 3)), _RNG.normal(size=(3,)), _RNG.normal(size=(5, 3)))),
    "reshaped": (reshaped, (0,), lambda: (_RNG.normal(size=(3, 2, 2)),)),
    "constructed": (constructed, (0, 1), lambda: (_RNG.normal(size=(4,)), _RNG.normal(size=(3,)))),
}
LOOPS = {"growing": growing, "counted": counted, "reassigned": reassigned}


def _code(text):
    """The generated text without its comments (which quote the user's lines)."""
    return "\n".join(line for line in text.split("\n") if not line.strip().startswith("#"))


def _same(a, b):
    assert type(a) is type(b) and np.shape(a) == np.shape(b) and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def _check(fn, wrt, args, rtol=1e-6):
    got = s2sad.grad(fn, wrt)(*args)
    generic = s2sad.grad(fn, wrt, specialize=False)(*args)
    got, generic = (got, generic) if isinstance(wrt, tuple) else ((got,), (generic,))
    for i, g, h in zip(wrt if isinstance(wrt, tuple) else (wrt,), got, generic):
        assert type(g) is type(args[i]) and g.shape == args[i].shape and g.dtype == args[i].dtype
        if g.dtype == np.float64:
            _same(g, h)
        else:
            np.testing.assert_allclose(g, h, rtol=1e-5)
        if args[i].dtype == np.float64:
            np.testing.assert_allclose(g, numerical_grad(fn, args, i), rtol=rtol, atol=1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_arrays_made_from_known_ints_specialise_to_plain_numpy(name):
    fn, wrt, inputs = CASES[name]
    args = inputs()
    text = s2sad.adjoint_source(fn, wrt, example=args)
    assert "s2sad" not in _code(text), text
    _check(fn, wrt, args)


#: float32 code that keeps a helper for what is not a shape: the seed of a float32 output
#: computed for its type (reshaped's), an np.float64 constant (np.log(2 * np.pi)) that makes
#: the output float64
HELPERS_IN_FLOAT32 = {"reshaped", "cholesky_factors"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_arguments_keep_their_dtype(name):
    fn, wrt, inputs = CASES[name]
    args = tuple(a.astype(np.float32) for a in inputs())
    if name not in HELPERS_IN_FLOAT32:
        assert "s2sad" not in _code(s2sad.adjoint_source(fn, wrt, example=args))
    _check(fn, wrt, args)


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_an_int_assigned_several_values_has_none_and_stays_right(name):
    fn = LOOPS[name]
    for n in (3, 6):
        args = (_RNG.normal(size=(3,)), _RNG.normal(size=(n,))) if fn is not counted else (_RNG.normal(size=(n,)),)
        _check(fn, 0, args)


def test_an_int_of_one_value_makes_the_slice_it_bounds_known():
    def fixed(x, y):
        k = 2
        return np.sum(x * y[:k]) + np.sum(x * y[k - 1:][:k])
    assert "s2sad" not in _code(s2sad.adjoint_source(fixed, 0, example=(np.ones(2), np.ones(5))))
    # k is 1, 2, then 3: the product's shape is not known before the code runs
    assert "mean_grad" in _code(s2sad.adjoint_source(growing, 0, example=(np.ones(3), np.ones(5))))


EXPRESSIONS = [
    "X.shape", "X.shape[1]", "X.shape[-1]", "X.shape[n - 4]", "X.shape[1:]", "len(X)", "X.ndim", "X.size",
    "n * 2 - 1", "-n", "n // 3", "n % 3", "n ** 2", "max(n, X.shape[1])", "min(X.shape)", "0.5 * n",
    "np.ones((n, X.shape[1]))", "np.zeros(X.shape, dtype=np.float32)", "np.empty(n)", "np.ones(n, X.dtype)",
    "np.full((2, n), 1.5)", "np.full(X.shape, n)", "np.zeros_like(X)", "np.ones_like(X, dtype=np.float32)",
    "np.full_like(X, 2)", "np.eye(n)", "np.eye(n, 2, 1)", "np.identity(X.shape[1], dtype=X.dtype)",
    "np.arange(n)", "np.arange(1, n, 2)", "np.arange(n, dtype=float)", "np.linspace(0.0, 1.0, n)",
    "np.triu(np.ones((n, n)), 1)", "np.tril(X)", "X.reshape(-1)", "X.reshape(3, -1)", "np.reshape(X, (5, -1, 3))",
    "X.reshape((X.shape[1], n + 1))", "X.ravel()", "np.broadcast_to(X[0], (n, 5, 3))", "np.expand_dims(X, 1)",
    "np.swapaxes(X, 0, 1)", "X.astype(np.float32)", "X[:n]", "X[n - 1]", "X[1:n:2, -1]", "X[:, :X.shape[1] - 1]",
    "np.shape(X)", "np.ndim(X)", "np.size(X)", "(n, 3)",
]


def _known(expression):
    """What the analysis knows of ``expression`` where X is a 5x3 array and n is 4."""
    env = {"X": of_value(np.ones((5, 3))), "n": int_known(4)}
    ev = Evaluator(env, lambda name: np if name == "np" else getattr(builtins, name, None), {}, settled=True)
    return ev.value(ast.parse(expression, mode="eval").body)


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_what_the_analysis_knows_of_an_expression_is_what_it_evaluates_to(expression):
    known = _known(expression)
    value = eval(expression, {"np": np, "X": np.ones((5, 3)), "n": 4})
    assert known is not None, expression
    assert known.kind is type(value) and known.shape == np.shape(value), (known, value)
    if isinstance(value, (int, tuple)):
        assert known.value == value
    else:
        assert known.dtype == np.result_type(value)


@pytest.mark.parametrize("expression", [
    "X.reshape(4, -1)", "X.reshape(-1, -1)", "X.shape[7]", "np.arange(0.5, n)", "np.arange(n, 1, 0)", "np.ones(X)",
    "np.zeros((n, -1))", "np.full((n, 2), X)", "np.eye(n, X)", "max(n, 0.5)", "X.shape + (1,)", "X.shape * 2"])
def test_what_numpy_refuses_or_the_analysis_cannot_tell_is_not_known(expression):
    assert _known(expression) is None
