"""Forward mode, Hessians and Jacobians, by transforming generated code."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import grad, hessian, hvp, jacobian, jvp, stop_gradient, vjp

import corpus
from gradcheck import numerical_grad

rng = np.random.default_rng(3)


def directional_fd(f, args, k, v, eps=1e-6):
    plus, minus = list(args), list(args)
    plus[k] = args[k] + eps * v
    minus[k] = args[k] - eps * v
    return (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * eps)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def log_sum_exp(x):
    m = stop_gradient(np.max(x))
    return np.log(np.sum(np.exp(x - m))) + m


def mlp_loss(w, X, y):
    W1 = w[:12].reshape(3, 4)
    W2 = w[12:16]
    h = np.tanh(X @ W1)
    return np.mean((h @ W2 - y) ** 2)


def rnn_loss(W, xs):
    h = np.zeros(3)
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h ** 2)


def stopped_square(x):
    return np.sum(x ** 2 * stop_gradient(x))


def piecewise(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            total = total + x[i] ** 3
        else:
            total = total - np.sin(x[i])
    return total


CLASSICS = [
    (rosenbrock, lambda: (rng.normal(size=5),)),
    (log_sum_exp, lambda: (rng.normal(size=4),)),
    (mlp_loss, lambda: (rng.normal(size=16) * 0.5, rng.normal(size=(5, 3)), rng.normal(size=5))),
    (rnn_loss, lambda: (rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(6, 3)))),
    (piecewise, lambda: (np.array([0.7, -0.4, 1.3, -1.1]),)),
]


@pytest.mark.parametrize("f, make", CLASSICS, ids=[f.__name__ for f, _ in CLASSICS])
def test_jvp_matches_directional_finite_differences(f, make):
    args = make()
    v = rng.normal(size=args[0].shape)
    value, derivative = jvp(f)(*args, v)
    assert value == pytest.approx(f(*args))
    np.testing.assert_allclose(derivative, directional_fd(f, args, 0, v), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, make", CLASSICS, ids=[f.__name__ for f, _ in CLASSICS])
def test_hvp_matches_finite_differences_of_the_gradient(f, make):
    args = make()
    v = rng.normal(size=args[0].shape)
    np.testing.assert_allclose(hvp(f)(*args, v), directional_fd(grad(f), args, 0, v, eps=1e-5),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f, make", CLASSICS[:3], ids=[f.__name__ for f, _ in CLASSICS[:3]])
def test_hessian_against_finite_differences(f, make):
    args = make()
    H = hessian(f)(*args)
    n = args[0].size
    expected = np.stack([directional_fd(grad(f), args, 0, e, eps=1e-5) for e in np.eye(n)], axis=1)
    np.testing.assert_allclose(H, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H, H.T, atol=1e-8)


def test_stop_gradient_stops_every_order():
    x = np.array([0.5, -1.5, 2.0])
    # f = sum(x^2 * c) with c = x held constant: f'' = 2c = 2x, not 6x
    np.testing.assert_allclose(hessian(stopped_square)(x), np.diag(2 * x))
    assert "stop_gradient" in s2sad.hvp(stopped_square).__s2sad_source__


def vector_map(x, A):
    return np.tanh(A @ x) * x[0]


def test_jacobian_forward_and_reverse_agree():
    x, A = rng.normal(size=3), rng.normal(size=(4, 3))
    forward = jacobian(vector_map, mode="forward")(x, A)
    reverse = jacobian(vector_map, mode="reverse")(x, A)
    assert forward.shape == (4, 3)
    np.testing.assert_allclose(forward, reverse, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(forward, np.stack([directional_fd(vector_map, (x, A), 0, e)
                                                  for e in np.eye(3)], axis=1), rtol=1e-6)


def test_vjp_pullback_and_dot_product_test():
    x, A = rng.normal(size=3), rng.normal(size=(4, 3))
    value, pullback = vjp(vector_map)(x, A)
    np.testing.assert_allclose(value, vector_map(x, A))
    u, v = rng.normal(size=4), rng.normal(size=3)
    _, Jv = jvp(vector_map)(x, A, v)
    assert np.dot(Jv, u) == pytest.approx(np.dot(v, pullback(u)), rel=1e-12)
    np.testing.assert_allclose(pullback(u), pullback(u))  # a pullback can be called again


def looped_map(x, n):
    print("looped_map")
    h = x
    for _ in range(n):
        h = np.tanh(h) * 1.5
    return h * h


def test_vjp_runs_the_forward_pass_once_and_its_pullback_can_be_reused(capsys):
    x = rng.normal(size=3)
    value, pullback = vjp(looped_map)(x, 3)
    assert capsys.readouterr().out == "looped_map\n"
    np.testing.assert_allclose(value, looped_map(x, 3), rtol=1e-15)
    capsys.readouterr()
    u, v = rng.normal(size=3), rng.normal(size=3)
    first = pullback(u)
    assert capsys.readouterr().out == ""  # the kept values, not a second forward pass
    _, Jv = jvp(looped_map)(x, 3, v)
    assert np.dot(Jv, u) == pytest.approx(np.dot(v, first), rel=1e-12)
    np.testing.assert_allclose(pullback(u), first, rtol=1e-15)  # the tape was consumed: recomputed
    np.testing.assert_allclose(pullback(2.0 * u), 2.0 * first, rtol=1e-14)


def scalar_fn(x):
    return np.sin(x) * x ** 2 + np.exp(-x)


def test_grad_of_grad_for_scalar_functions():
    x = 0.7
    d2 = grad(grad(scalar_fn))(x)
    expected = -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x) + np.exp(-x)
    assert d2 == pytest.approx(expected, rel=1e-10)


def test_decorator_gains_jvp_and_hvp():
    f = s2sad.differentiate(rosenbrock)
    x, v = rng.normal(size=4), rng.normal(size=4)
    np.testing.assert_allclose(f.jvp(x, v)[1], np.dot(grad(rosenbrock)(x), v))
    np.testing.assert_allclose(f.hvp(x, v), hvp(rosenbrock)(x, v))


def test_forward_code_is_readable():
    code = s2sad.jvp_source(rnn_loss)
    assert "def jvp_rnn_loss(W, xs, tangent):" in code
    assert "h_2_dot = " in code and "tape" not in code  # forward mode needs no tape


CORPUS = [c for c in corpus.CASES if not c.xfail]


@pytest.mark.filterwarnings("ignore::s2sad.ZeroGradientWarning")
@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_forward_mode_over_the_corpus(case):
    """The dot-product test on every corpus function: <J v, 1> from forward mode equals
    <grad, v> from reverse mode, for every array or float argument."""
    args = case.inputs()
    for k in case.wrt(args):
        x = args[k]
        if not isinstance(x, (np.ndarray, float)):
            continue
        v = rng.normal(size=np.shape(x))
        v = float(v) if isinstance(x, float) else v
        value, d = jvp(case.fn, wrt=k)(*args, v)
        np.testing.assert_allclose(value, case.fn(*args), rtol=1e-12)
        expected = np.sum(np.asarray(grad(case.fn, wrt=k)(*args)) * v)
        np.testing.assert_allclose(d, expected, rtol=1e-7, atol=1e-9)


def param_varied_in_one_branch(x, s):
    if np.sum(x) > 0.0:
        y = x * 2.0
    else:
        for _ in range(2):
            s = np.tanh(s * np.sum(x))
        y = x
    return np.sum(y) * s + s


def test_hvp_where_a_parameter_becomes_varied_in_one_branch_only():
    """The other branch gives the parameter's tangent a zero (found by the fuzzer: the code
    after the branches read a tangent only one branch had set, UnboundLocalError)."""
    x, v = np.array([0.5, 0.25]), np.array([0.3, -0.7])
    got = hvp(param_varied_in_one_branch)(x, 0.4, v)
    np.testing.assert_allclose(got, directional_fd(grad(param_varied_in_one_branch), (x, 0.4), 0, v, eps=1e-5),
                               rtol=1e-5, atol=1e-8)


def _passes_first(p0, p1):
    return p0


def param_replaced_by_an_inactive_call_in_one_branch(x, s):
    if np.sum(x) > 0.0:
        y = x * 2.0
    else:
        y = x + np.sum(x)
        if np.all(np.sum(y) > 0.0):
            s = _passes_first(y[0], y)
    return np.sum(np.log(s * s + 1.0)) + np.sum(y)


@pytest.mark.parametrize("x", [np.array([0.5, 0.25]), np.array([-0.5, -0.25])])
def test_hvp_where_a_user_call_with_no_varied_argument_replaces_a_varied_value(x):
    """Forward mode over the gradient wrt s: the call's arguments carry no tangent, so its
    result's tangent is zero (found by the fuzzer: IndexError inside the forward pass)."""
    got = hvp(param_replaced_by_an_inactive_call_in_one_branch, wrt=1)(x, 0.4, 1.0)
    expected = directional_fd(grad(param_replaced_by_an_inactive_call_in_one_branch, wrt=1), (x, 0.4), 1, 1.0,
                              eps=1e-5)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-8)


def _linear_helper(x):
    return x * 2.0


def calls_a_linear_helper(x):
    return np.sum(_linear_helper(x) ** 2)


def test_hvp_through_a_linear_helper_warns_nothing():
    """The helper's vjp does not depend on x (it is linear): differentiating it again inside
    hvp is the caller's business, not a zero gradient to report (pytest makes it an error)."""
    x, v = np.array([0.3, 0.5]), np.array([1.0, -1.0])
    np.testing.assert_allclose(hvp(calls_a_linear_helper)(x, v), 8.0 * v)


def unpacks_a_constant_in_one_branch(x):
    v = x * 2.0
    if np.sum(x) < 0.0:
        w, v = stop_gradient((np.ones(2), np.full(2, 3.0)))
    return np.sum(np.tanh(v) * x)


@pytest.mark.parametrize("x", [np.array([0.5, 0.25]), np.array([-0.5, -0.25])])
def test_hvp_where_a_branch_unpacks_a_constant_into_a_varied_name(x):
    """The unpacked names get zero tangents (found by the fuzzer: UnboundLocalError in hvp
    code, the tangent set on the other branch only)."""
    v = np.array([0.3, -0.7])
    expected = directional_fd(grad(unpacks_a_constant_in_one_branch), (x,), 0, v, eps=1e-5)
    np.testing.assert_allclose(hvp(unpacks_a_constant_in_one_branch)(x, v), expected, rtol=1e-5, atol=1e-8)


def weighted(a, b):
    return np.sum(a * b ** 2)


def test_a_tangent_not_shaped_like_its_argument_is_refused():
    """A tuple of two tangents given to a jvp with respect to the first argument only crashed
    inside the generated code with NumPy's ValueError (broadcast_to)."""
    a, b = np.array([0.3, -0.7, 1.1]), np.array([1.0, 2.0, 3.0])
    with pytest.raises(s2sad.WrtError, match=r"the tangent of 'a' has shape \(2, 3\), but 'a' has shape \(3,\)"):
        s2sad.jvp(weighted)(a, b, tangent=(b, a))
    value, tangent = s2sad.jvp(weighted, wrt=(0, 1))(a, b, tangent=(b, a))
    assert np.isclose(tangent, np.sum(b * b ** 2) + np.sum(a * 2 * b * a))
    assert np.isclose(s2sad.jvp(weighted)(a, b, 1.0)[1], np.sum(b ** 2))  # a number: every direction


def gram(x):
    return np.sum(np.tanh(x.T @ x))


@pytest.mark.parametrize("specialize", [True, False], ids=["specialised", "generic"])
def test_a_number_as_the_tangent_of_an_array_is_the_same_in_every_direction(specialize):
    """A number tangent read by a matmul or ``.T`` raised NumPy's ValueError or an
    AttributeError inside the generated code: it is now an array of the argument's shape."""
    x = np.arange(6.0).reshape(3, 2) / 10
    expected = jvp(gram, specialize=specialize)(x, np.full(x.shape, 0.5))[1]
    np.testing.assert_allclose(expected, (gram(x + 1e-6) - gram(x - 1e-6)) / 4e-6, rtol=1e-7)
    for _ in range(2):  # (generic, then specialised code)
        np.testing.assert_allclose(jvp(gram, specialize=specialize)(x, 0.5)[1], expected, rtol=1e-12)



def sines(x):
    return np.sin(x) * 2.0


@pytest.mark.parametrize("pull", [lambda x: vjp(sines)(x)[1](np.ones(2)), lambda x: jacobian(sines, mode="reverse")(x)],
                         ids=["vjp", "jacobian"])
def test_an_integer_argument_is_refused_by_reverse_mode_for_any_output(pull):
    """vjp and a reverse-mode jacobian of an int array gave the gradient in its dtype: [1 0]
    for 2 cos([1, 2]), silently truncated (grad refused it already)."""
    with pytest.raises(s2sad.NonDifferentiableInputError, match="it is ndarray of dtype int64; pass a float"):
        pull(np.array([1, 2]))
    got = pull(np.array([1.0, 2.0]))
    np.testing.assert_allclose(got if got.ndim == 1 else np.diagonal(got), 2.0 * np.cos([1.0, 2.0]))
