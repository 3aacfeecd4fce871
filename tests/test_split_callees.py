"""A user function called in the middle of an expression runs its forward pass once.

The caller's forward pass calls ``forward_f``, which returns ``f``'s value and a closure
over its forward values; the caller's backward pass calls that closure.  Code that is
itself differentiated (``hvp``, ``grad`` of a gradient) is read in a replayable form,
where each callee's vjp recomputes the callee's forward pass.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import stop_gradient

from gradcheck import assert_grad_matches

def energy(v, W):
    print("energy")
    return -np.sum(np.logaddexp(0.0, v @ W))


def contrast(W, v, vm):
    return (energy(v, W) - energy(stop_gradient(vm), W)) / v.shape[0]


def squash(x):
    print("squash")
    y = np.tanh(x)
    return y * y


def in_a_loop(x, n):
    h = x
    for _ in range(n):
        h = squash(h) + 0.5 * h
    return np.sum(h)


def branchy(x, flag):
    print("branchy")
    if flag > 0:
        t = np.exp(x)
        out = t * x
    else:
        out = np.sin(x)
    return out


def calls_branchy(x, flag):
    return np.sum(branchy(x, flag) * 2.0)


def looped(x, n):
    print("looped")
    s = x * 0.0
    for i in range(n):
        s = s + np.sin(x * i)
    return s


def calls_looped(x, n):
    return np.sum(looped(x, n) ** 2)


def outer_helper(x):
    print("outer_helper")
    return np.sum(squash(x) * x) * 2.0


def nested(x):
    return outer_helper(x) * outer_helper(x * 0.5)


def keeps_value(x):
    print("keeps_value")
    return np.exp(x)


def reads_value_after(x):
    e = keeps_value(x)
    return np.sum(e * e) + np.sum(np.sin(e))


def _rng():
    return np.random.default_rng(0)


def test_the_caller_calls_forward_and_the_closure():
    code = s2sad.adjoint_source(contrast, wrt="W")
    assert "energy_v, energy_v_backward = forward_energy_wrt_W(v, W)" in code
    assert "dW_energy = energy_v_backward(denergy_v)" in code
    assert "vjp_" not in code
    assert "def backward(dvalue):" in code and "return value, backward" in code


def test_a_call_mid_expression_runs_the_callees_forward_pass_once(capsys):
    rng = _rng()
    W, v, vm = rng.normal(size=(5, 3)), rng.random((4, 5)), rng.random((4, 5))
    s2sad.grad(contrast, wrt="W")(W, v, vm)
    assert capsys.readouterr().out == "energy\n" * 2  # once per call, not again in the vjp
    assert_grad_matches(contrast, [W, v, vm], wrt=0)
    value, dW = s2sad.value_and_grad(contrast, wrt="W")(W, v, vm)
    assert value == pytest.approx(contrast(W, v, vm), rel=1e-12)
    np.testing.assert_array_equal(dW, s2sad.grad(contrast, wrt="W")(W, v, vm))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_calls_in_a_loop_keep_one_closure_per_iteration(n):
    x = _rng().normal(size=(3, 2))
    assert_grad_matches(in_a_loop, [x, n], wrt=0)
    assert "squash_h, squash_h_backward = forward_squash(h)" in s2sad.adjoint_source(in_a_loop)


@pytest.mark.parametrize("flag", [1.0, -1.0])
def test_a_callee_with_a_branch_reads_only_what_its_branch_bound(flag):
    x = _rng().normal(size=4)
    assert_grad_matches(calls_branchy, [x, flag], wrt=0)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_callee_with_a_loop_restores_its_own_values(n):
    x = _rng().normal(size=4)
    assert_grad_matches(calls_looped, [x, n], wrt=0)
    assert "nonlocal" in s2sad.adjoint_source(calls_looped)


def test_nested_callees_split_at_every_level(capsys):
    x = _rng().normal(size=4)
    assert_grad_matches(nested, [x], wrt=0)
    capsys.readouterr()
    s2sad.grad(nested)(x)
    assert capsys.readouterr().out == "outer_helper\nsquash\n" * 2
    code = s2sad.adjoint_source(nested)
    assert "forward_squash(x)" in code and "forward_outer_helper(" in code


def test_the_returned_value_is_not_overwritten_by_the_backward_pass():
    x = _rng().normal(size=(3, 4))
    assert_grad_matches(reads_value_after, [x], wrt=0)
    np.testing.assert_allclose(s2sad.grad(reads_value_after)(x),
                               (2 * np.exp(2 * x) + np.cos(np.exp(x)) * np.exp(x)), rtol=1e-12)


@pytest.mark.parametrize("f, args", [(nested, ()), (calls_looped, (3,)), (contrast, None)])
def test_code_that_is_differentiated_again_replays_its_callees(f, args):
    rng = _rng()
    if args is None:
        W, v, vm = rng.normal(size=(5, 3)), rng.random((4, 5)), rng.random((4, 5))
        g = s2sad.grad(f, wrt="W")
        point, rest, direction = W, (v, vm), rng.normal(size=(5, 3))
    else:
        g = s2sad.grad(f)
        point, rest, direction = rng.normal(size=4), args, rng.normal(size=4)
    eps = 1e-5
    expected = (g(point + eps * direction, *rest) - g(point - eps * direction, *rest)) / (2 * eps)
    hvp = s2sad.hvp(f, wrt="W") if args is None else s2sad.hvp(f)
    np.testing.assert_allclose(hvp(point, *rest, direction), expected, rtol=1e-6, atol=1e-8)
    assert "forward_" not in hvp.__s2sad_source__


def test_grad_of_a_gradient_with_a_split_callee():
    def inner(u):
        return np.sin(u) * u

    def outer(x):
        return inner(x * 1.5) * 2.0

    assert "forward_inner" in s2sad.adjoint_source(outer)
    u = 0.6
    second = 2.0 * 2.25 * (2.0 * np.cos(u) - u * np.sin(u))
    assert s2sad.grad(s2sad.grad(outer))(0.4) == pytest.approx(second, rel=1e-12)


def test_generated_code_is_deterministic():
    first = s2sad.adjoint_source(nested)
    assert s2sad.adjoint_source(nested) == first
