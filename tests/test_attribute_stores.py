"""Assignments to attributes in the differentiated function (``self.calls += 1``,
``self.scale = 2.0``): run as written, once per forward pass, in every mode; where what they
store carries a gradient (reads of the attribute would carry none), a located error."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from tests.gradcheck import assert_grad_matches


class Counted:
    def __init__(self) -> None:
        self.calls = 0
        self.scale = 2.0

    def loss(self, w, x):
        self.calls += 1
        t = 0.0
        for i in range(3):
            self.calls += 10  # (in a loop: once per iteration)
            t = t + np.sum(np.sin(w * x * (i + 1)) * self.scale)
        self.seen = float(np.shape(w)[0])  # (a value with no gradient)
        return t * self.seen

    def caches_an_activation(self, w, x):
        self.last = np.tanh(w * x)
        return np.sum(self.last ** 2)


W, X, V = np.array([0.5, -1.0]), np.array([1.0, 2.0]), np.array([0.3, 1.0])


def test_a_counter_is_incremented_once_per_forward_pass_and_the_gradient_is_right() -> None:
    model = Counted()
    assert_grad_matches(model.loss, (W, X), 0)  # (runs the function and its gradients)
    for run in (lambda: s2sad.grad(model.loss)(W, X), lambda: s2sad.value_and_grad(model.loss)(W, X),
                lambda: s2sad.jvp(model.loss)(W, X, V), lambda: s2sad.hvp(model.loss)(W, X, V)):
        model.calls = 0
        run()
        assert model.calls == 31
    assert model.seen == 2.0


def test_storing_a_value_that_carries_a_gradient_is_refused_where_it_stands() -> None:
    """(Its read, self.last, carried no gradient: the gradient was silently zero.)"""
    model = Counted()
    with pytest.raises(s2sad.NoGradientRuleError, match=r"the value stored in 'self.last' carries a "
                                                        r"gradient") as info:
        s2sad.grad(model.caches_an_activation)(W, X)
    assert info.value.location.line == Counted.caches_an_activation.__code__.co_firstlineno + 1


N_CALLS = 0
LAST = None


def counted_objective(x):
    global N_CALLS
    N_CALLS += 1
    return np.sum((x - 1.0) ** 2 * np.exp(0.1 * x))


def keeps_a_gradient_value_in_a_global(x):
    global LAST
    LAST = np.tanh(x)
    return np.sum(LAST ** 2)


def declares_global_in_a_branch(x):
    if x[0] > 0:
        global N_CALLS
        N_CALLS += 1
    return np.sum(x ** 2)


def test_a_global_counter_counts_each_forward_pass_and_the_gradient_is_right() -> None:
    global N_CALLS
    assert_grad_matches(counted_objective, (W,), 0)
    for run in (lambda: s2sad.grad(counted_objective)(W), lambda: s2sad.jvp(counted_objective)(W, V),
                lambda: s2sad.hvp(counted_objective)(W, V)):
        N_CALLS = 0
        run()
        assert N_CALLS == 1


def test_a_global_counter_serves_scipy_optimize() -> None:
    scipy_optimize = pytest.importorskip("scipy.optimize")
    global N_CALLS
    N_CALLS = 0
    result = scipy_optimize.minimize(counted_objective, np.zeros(2), jac=s2sad.grad(counted_objective), method="BFGS")
    assert result.success and N_CALLS >= result.nfev
    np.testing.assert_allclose(s2sad.grad(counted_objective)(result.x), 0.0, atol=1e-5)


@pytest.mark.parametrize("f, line, column, words", [
    (keeps_a_gradient_value_in_a_global, 2, 5, "the value stored in 'LAST' carries a gradient"),
    (declares_global_in_a_branch, 2, 9, "'global' is followed at the top level of the function"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_globals_not_followed_are_refused_where_they_stand(f, line: int, column: int, words: str) -> None:
    with pytest.raises(s2sad.S2SADError, match=words) as info:
        s2sad.grad(f)(W)
    loc = info.value.location
    assert (loc.line - f.__code__.co_firstlineno, loc.column) == (line, column)
