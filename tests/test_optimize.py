"""The optimize pass: what a gradient leaves out, and that leaving it out changes nothing.

``grad`` does not return the function's value, so when the value is a scalar by
construction (full reductions, numbers, sizes) the generated code seeds with 1.0
(``seed_for`` checks only that what is reduced is not complex) and does not compute it; results the gradient reads only for their shape and
dtype are described by ``stand_in_for`` instead of computed.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import NonScalarOutputError, stop_gradient
from s2sad.runtime import grad_like, mul_into, stand_in_for

from gradcheck import assert_grad_matches, make_function


def forward_of(code: str) -> str:
    """The forward half of a generated gradient function: up to its blank line."""
    return code.split("\ndef ", 1)[1].split("\n\n", 1)[0]


def cross_entropy(logits, Y):
    z = logits - stop_gradient(np.max(logits, axis=1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def test_grad_leaves_out_the_value_and_describes_shape_only_results():
    code = s2sad.adjoint_source(cross_entropy, wrt="logits")
    forward = code.split("\ndef ", 1)[1].split("\n\n", 1)[0]
    assert "dvalue = seed_for(sum_Y_mul_log_p)" in code and "seed(" not in code
    assert "np.mean" not in forward  # the value itself
    for described in ("log_p = stand_in_for(np.subtract, z, log_sum_exp_z)",
                      "Y_mul_log_p = stand_in_for(np.multiply, Y, log_p)",
                      "stand_in_for(np.sum, Y_mul_log_p, axis=1, keepdims=False)"):
        assert described in forward
    rng = np.random.default_rng(0)
    logits, Y = rng.normal(size=(5, 7)), np.eye(7)[rng.integers(0, 7, 5)]
    assert_grad_matches(cross_entropy, [logits, Y], wrt=0)


def test_value_and_grad_still_computes_and_checks_the_value():
    code = s2sad.adjoint_source(cross_entropy, wrt="logits")
    vag = s2sad.compiler.build(cross_entropy, "logits", "value_and_grad").__s2sad_source__
    assert "seed(" in vag and "seed(" not in code


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_plain_seed_keeps_the_arguments_dtype(dtype):
    """A float32 argument gets a float32 gradient although the seed is a Python 1.0."""
    x = np.linspace(0.5, 2.0, 6).astype(dtype)
    g = s2sad.grad(cross_entropy)(x.reshape(2, 3), np.eye(3, dtype=dtype)[[0, 2]])
    assert g.dtype == dtype


def python_float_loss(x, w):
    return np.sum(w * x) / 2.0


def test_the_plain_seed_gives_a_float_for_a_float():
    g = s2sad.grad(python_float_loss, wrt="x")(1.5, np.arange(3.0))
    assert type(g) is float and g == 1.5
    g32 = s2sad.grad(python_float_loss, wrt="x")(np.float32(1.5), np.arange(3.0, dtype=np.float32))
    assert type(g32) is np.float32


C = np.array([1.0 + 2.0j, 0.5j])


def complex_valued(x):
    return np.sum(x * C)


def test_a_complex_output_is_still_refused():
    with pytest.raises(NonScalarOutputError, match="real"):
        s2sad.grad(complex_valued)(np.array([1.0, 2.0]))
    with pytest.raises(NonScalarOutputError, match="real"):
        s2sad.value_and_grad(complex_valued)(np.array([1.0, 2.0]))


A = np.arange(6.0).reshape(2, 3)
CASES = [
    (np.multiply, (A, np.ones((2, 1), np.float32))),
    (np.subtract, (A.astype(np.float32), 2.0)),
    (np.true_divide, (np.arange(3), 2)),
    (np.add, (np.ones((4, 1, 3), np.float32), np.float64(1.0))),
    (np.log, (np.arange(1, 4),)),
    (np.negative, (A[None],)),
    (np.maximum, (np.ones(3, np.float32), np.ones((2, 1), np.float16))),
    (np.power, (A.astype(np.float32), 2)),
]


@pytest.mark.parametrize("fun, operands", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_stand_in_for_a_ufunc_has_the_shape_and_dtype_of_the_result(fun, operands):
    real = fun(*operands)
    described = stand_in_for(fun, *operands)
    assert described.shape == real.shape and described.dtype == real.dtype
    assert described.nbytes == real.nbytes and not described.flags.writeable


REDUCTIONS = [
    (np.sum, A, None, False), (np.sum, A, 1, True), (np.sum, A, -1, False), (np.mean, A, (0, 1), True),
    (np.sum, np.arange(6).reshape(2, 3), 0, False), (np.mean, np.arange(6).reshape(2, 3), 1, False),
    (np.sum, np.ones((2, 3, 4), np.float32), (0, 2), False), (np.mean, np.ones((2, 3), bool), None, True),
]


@pytest.mark.parametrize("fun, a, axis, keepdims", REDUCTIONS)
def test_stand_in_for_a_reduction_has_the_shape_and_dtype_of_the_result(fun, a, axis, keepdims):
    real = np.asarray(fun(a, axis=axis, keepdims=keepdims))
    described = stand_in_for(fun, a, axis=axis, keepdims=keepdims)
    assert described.shape == real.shape and described.dtype == real.dtype


def test_stand_in_for_numbers_and_lists_computes_them():
    assert stand_in_for(np.multiply, 2.0, 3.0) == 6.0 and type(stand_in_for(np.multiply, 2.0, 3.0)) is float
    assert stand_in_for(np.add, [1], [2]) == [1, 2]  # what + means for the operands given
    with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions") else Exception):
        stand_in_for(np.sum, A, axis=2, keepdims=False)  # a bad axis fails as the real call would


def test_grad_like_converts_to_the_arguments_type_and_copies_views():
    x32 = np.ones(3, np.float32)
    assert grad_like(np.ones(3), x32).dtype == np.float32
    view = np.broadcast_to(np.float32(2.0), (3,))
    owned = grad_like(view, x32)
    assert owned.flags.writeable and owned.dtype == np.float32
    assert type(grad_like(np.float64(2.0), 1.0)) is float
    assert grad_like((np.ones(2), {"a": np.float64(1.0)}), (x32[:2], {"a": 0.5})) is not None
    tree = grad_like((np.ones(2), {"a": np.float64(1.0)}), (x32[:2], {"a": 0.5}))
    assert tree[0].dtype == np.float32 and type(tree[1]["a"]) is float


def free_energy_like(W, v):
    Wc = stop_gradient(W)
    h = 1.0 / (1.0 + np.exp(-(v @ Wc)))           # the Gibbs step's product...
    sample = stop_gradient(h)
    return np.sum(np.log(1.0 + np.exp(v @ W))) - np.sum(sample)   # ...computed again


def free_energy_with_reconstruction(W, v):
    Wc = stop_gradient(W)
    h = 1.0 / (1.0 + np.exp(-(v @ Wc)))
    v_prob = 1.0 / (1.0 + np.exp(-(h @ Wc.T)))  # (Wc.T: as written, .T may be a record's field)
    return np.sum(np.log(1.0 + np.exp(v @ W))) - np.sum(stop_gradient(v_prob))


@pytest.mark.parametrize("fn", [free_energy_like, free_energy_with_reconstruction])
def test_a_product_repeated_through_stop_gradient_is_computed_once(fn):
    forward = forward_of(s2sad.adjoint_source(fn, wrt="W"))
    assert forward.count("v @ W") == 1 and "v_matmul_W = v_matmul_Wc" in forward
    rng = np.random.default_rng(1)
    W, v = rng.normal(size=(4, 3)) * 0.3, rng.random((5, 4))
    expected = v.T @ (1.0 / (1.0 + np.exp(-(v @ W))))  # d/dW of the softplus sum; the rest is stopped
    np.testing.assert_allclose(s2sad.grad(fn)(W, v), expected, rtol=1e-12)


@pytest.mark.parametrize("specialize", [True, False], ids=["specialised", "generic"])
def test_a_gradient_that_shares_a_product_through_stop_gradient_is_differentiated_again_without_it(specialize):
    # (the shared product is stopped: differentiated as it runs, the second derivative of the
    # softplus term was lost, an hvp of zero)
    rng = np.random.default_rng(1)
    W, v, d = rng.normal(size=(4, 3)) * 0.3, rng.random((5, 4)), rng.normal(size=(4, 3))
    s = 1.0 / (1.0 + np.exp(-(v @ W)))
    expected = v.T @ (s * (1.0 - s) * (v @ d))
    for _ in range(2):  # (generic, then specialised code)
        np.testing.assert_allclose(s2sad.hvp(free_energy_like, "W", specialize=specialize)(W, v, d),
                                   expected, rtol=1e-10)


@s2sad.nondifferentiable
def zero_first(a):
    """Changes its argument in place: a value it reads must not be shared with another."""
    a[0] = 0.0
    return 0.0


def twins_one_changed(x, w):
    a = x * 2.0
    b = x * 2.0
    t = zero_first(b)
    return np.sum(a * w) + t


CALLS = [0]


def noisy(x):
    """A user function with a rule of its own: not known to give the same result twice."""
    CALLS[0] += 1
    return x * CALLS[0]


s2sad.defvjp(noisy, lambda g, ans, x: g * (ans / x))


def called_twice(x):
    return np.sum(noisy(x) * noisy(x))


def test_values_that_may_change_or_differ_are_not_shared():
    assert forward_of(s2sad.adjoint_source(called_twice)).count("noisy(x)") == 2
    x = np.array([0.5, 1.5, 2.5])
    CALLS[0] = 0
    np.testing.assert_allclose(s2sad.grad(called_twice)(x), 4.0 * x)  # d/dx sum(x * 2x)
    # (a call that changes a value carrying a gradient, run for its effect, is refused now:
    # passes/side_effects.py; the twin it changes was the one not to share)
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=r"zero_first\(\.\.\.\) is passed values that carry"):
        s2sad.grad(twins_one_changed)(x, np.array([1.0, -2.0, 3.0]))


def test_a_product_with_a_dead_forward_array_is_computed_in_its_buffer():
    code = s2sad.adjoint_source(cross_entropy, wrt="logits")
    assert "dz += mul_into(dexp_z, exp_z)" in code
    rng = np.random.default_rng(2)
    logits, Y = rng.normal(size=(6, 9)), np.eye(9)[rng.integers(0, 9, 6)]
    assert_grad_matches(cross_entropy, [logits, Y], wrt=0)  # inputs unchanged, too
    # forward over reverse replays the gradient code: there mul_into is the plain product
    v = rng.normal(size=logits.shape)
    eps = 1e-5
    gradient = s2sad.grad(cross_entropy)
    expected = (gradient(logits + eps * v, Y) - gradient(logits - eps * v, Y)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(cross_entropy)(logits, Y, v), expected, rtol=1e-6, atol=1e-9)


def exp_times_sin(x):
    k = np.arange(1.0, 4.0)
    v = np.sin(x * k)
    e = np.exp(v)
    return np.sum(e * v)


def test_reverse_over_reverse_through_mul_into():
    assert "dv += mul_into(de, e)" in s2sad.adjoint_source(exp_times_sin)
    k, x = np.arange(1.0, 4.0), 0.3
    v, dv, d2v = np.sin(x * k), k * np.cos(x * k), -k * k * np.sin(x * k)
    # d/dv (e^v v) = e^v (1 + v), d2/dv2 = e^v (2 + v)
    second = np.sum(np.exp(v) * (2 + v) * dv ** 2 + np.exp(v) * (1 + v) * d2v)
    assert s2sad.grad(s2sad.grad(exp_times_sin))(x) == pytest.approx(second, rel=1e-12)


def reads_the_exp_again(x):
    y = np.sin(x)
    e = np.exp(y)
    s = np.sum(e, axis=1, keepdims=True)
    m = y * e
    return np.sum(np.log(s)) + np.sum(m * y)


def exp_through_a_view(x):
    y = np.sin(x)
    e = np.exp(y)
    first = e[0]
    s = np.sum(e, axis=1, keepdims=True)
    m = y * e
    return np.sum(np.log(s)) + np.sum(m * y) + np.sum(first * y[0])


def test_an_array_read_later_or_through_a_view_is_not_overwritten():
    code = s2sad.adjoint_source(reads_the_exp_again)
    # the reverse of m = y * e reads e, which the reverse of e = np.exp(y) reads again
    assert "dy += dm * e\n" in code and code.count("mul_into(") == 1
    assert "dy += mul_into(de, e)" in code
    viewed = s2sad.adjoint_source(exp_through_a_view)
    assert "dy += de * e\n" in viewed and "mul_into(de, e)" not in viewed  # e[0] is a view of e
    x = np.random.default_rng(3).normal(size=(4, 5))
    assert_grad_matches(reads_the_exp_again, [x], wrt=0)
    assert_grad_matches(exp_through_a_view, [x], wrt=0)


@pytest.mark.parametrize("g, dead, in_place", [
    (np.full((2, 3), 2.0), np.ones((2, 3)), True),
    (2.0, np.ones((2, 3), np.float32), True),
    (np.float64(2.0), np.ones(3), True),
    (np.full((4, 2, 3), 2.0), np.ones((2, 3)), False),          # the product is larger
    (np.full((2, 3), 2.0), np.ones((2, 3), np.float32), False),  # and of another dtype
    (np.float64(2.0), np.ones(3, np.float32), False),
    (np.full((2, 3), 2.0), np.broadcast_to(1.0, (2, 3)), False),  # read-only
    (np.full((2, 3), 2.0), 1.5, False),
])
def test_mul_into_writes_into_the_dead_array_only_when_the_product_fits(g, dead, in_place):
    expected = g * dead
    got = mul_into(g, dead)
    assert (got is dead) == in_place
    assert type(got) is type(expected) and np.result_type(got) == np.result_type(expected)
    np.testing.assert_array_equal(got, expected)


def test_mul_into_leaves_an_overlapping_factor_intact():
    dead = np.arange(6.0).reshape(2, 3)
    g = dead[::-1]  # a view of the same memory
    expected = g * dead
    got = mul_into(g, dead)
    assert got is not dead
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(dead, np.arange(6.0).reshape(2, 3))


def _exp_program(seed: int) -> str:
    """A random straight-line function of x (4x5) whose values feed several later
    statements: exponentials, products, sums over rows, and their broadcasts."""
    rng = np.random.default_rng(seed)
    names, lines = ["x"], []
    for k in range(int(rng.integers(3, 8))):
        a, b = (names[int(i)] for i in rng.integers(0, len(names), 2))
        form = rng.choice(["np.exp(0.3 * {a})", "np.sin({a})", "{a} * {b}", "{a} + {b}",
                           "{a} - np.sum({b}, axis=1, keepdims=True) * 0.2", "np.tanh({a}) * {b}",
                           "np.log(1.0 + np.exp(0.2 * {a}))"])
        lines.append(f"    v{k} = {form.format(a=a, b=b)}")
        names.append(f"v{k}")
    picked = sorted({names[int(i)] for i in rng.integers(1, len(names), 3)})
    result = " + ".join(f"np.sum(np.log(np.sum(np.exp(0.2 * {n}), axis=1)))" if j % 2 else f"np.sum({n} * x)"
                        for j, n in enumerate(picked))
    return "def program(x):\n" + "\n".join(lines) + f"\n    return {result}\n"


def test_random_programs_with_reused_arrays_match_finite_differences():
    used = 0
    for seed in range(300):
        f = make_function(_exp_program(seed), {"np": np})
        x, v = np.random.default_rng(seed).normal(size=(2, 4, 5))
        assert_grad_matches(f, [x], wrt=0)
        if "mul_into(" in s2sad.adjoint_source(f):
            used += 1
            gradient, eps = s2sad.grad(f), 1e-5
            expected = (gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)
            np.testing.assert_allclose(s2sad.hvp(f)(x, v), expected, rtol=1e-5, atol=1e-7)
    assert used >= 15  # the programs do exercise mul_into


def loss_of(a, b):
    print("forward of loss_of")
    return np.sum(np.sin(a) * b)


def returns_a_call(x, y):
    z = x * 2.0
    return loss_of(z, y)


def returns_a_call_twice_the_same(x):
    return loss_of(b=x, a=x)


def pair_loss(t):
    a, n = t
    return np.sum(a ** n)


def returns_a_call_on_a_tuple(x):
    return pair_loss((x, 3))


def test_a_returned_call_runs_the_callees_forward_pass_once(capsys):
    code = s2sad.adjoint_source(returns_a_call, wrt=(0, 1))
    assert "dz, dy = grad_loss_of(z, y)" in code and "vjp_" not in code and "seed(" not in code
    x, y = np.linspace(0.1, 1.2, 6).reshape(2, 3), np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    capsys.readouterr()
    dx, dy = s2sad.grad(returns_a_call, wrt=(0, 1))(x, y)
    assert capsys.readouterr().out == "forward of loss_of\n"  # not a second time for the seed
    value, (dx2, dy2) = s2sad.value_and_grad(returns_a_call, wrt=(0, 1))(x, y)
    assert capsys.readouterr().out == "forward of loss_of\n"
    assert "value, (dz, dy) = value_and_grad_loss_of(z, y)" in s2sad.value_and_grad(
        returns_a_call, wrt=(0, 1)).__s2sad_source__
    assert value == pytest.approx(np.sum(np.sin(2.0 * x) * y), rel=1e-12)
    np.testing.assert_array_equal(dx2, dx)
    np.testing.assert_array_equal(dy2, dy)
    np.testing.assert_allclose(dx, 2.0 * np.cos(2.0 * x) * y, rtol=1e-12)
    np.testing.assert_allclose(dy, np.sin(2.0 * x), rtol=1e-12)
    assert_grad_matches(returns_a_call, [x, y], wrt=(0, 1))
    assert_grad_matches(returns_a_call_twice_the_same, [x], wrt=0)
    assert_grad_matches(returns_a_call_on_a_tuple, [x], wrt=0)  # the 3 is no gradient's business
    v = np.ones_like(x)
    gradient, eps = s2sad.grad(returns_a_call_twice_the_same), 1e-5
    expected = (gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(returns_a_call_twice_the_same)(x, v), expected, rtol=1e-6)


def scalar_loss(u):
    return np.sin(u) * u


def returns_a_scalar_call(x):
    return scalar_loss(x * 1.5)


def test_reverse_over_reverse_through_a_returned_call():
    u = 0.6
    second = 2.25 * (2.0 * np.cos(u) - u * np.sin(u))
    assert s2sad.grad(s2sad.grad(returns_a_scalar_call))(0.4) == pytest.approx(second, rel=1e-12)


def test_a_returned_call_that_is_not_a_scalar_is_still_refused():
    def vector(a):
        return a * 2.0

    def returns_vector(x):
        return vector(x)

    with pytest.raises(NonScalarOutputError, match=r"shape \(3,\)"):
        s2sad.grad(returns_vector)(np.ones(3))


# --- a reduction of a reduction, in a loop body ----------------------------------------------

def chain_in_loop(x, big, c):
    total = 0.0
    for i in range(3):
        a = x + big * (i + 1.0)        # (3,) + (4, 3): x is broadcast
        h = np.tanh(a + c)             # (4, 3) + (4, 1)
        total = total + np.sum(h ** 2)
    return total


def negated_chain_in_loop(x, big, c):
    total = 0.0
    for i in range(2):
        a = big - x                    # x is broadcast, and its gradient negated
        total = total + np.sum(np.sin(a + c) * c)
    return total


def chain_read_twice(x, big, c):
    total = 0.0
    for i in range(2):
        a = x + big
        h = np.tanh(a + c)
        total = total + np.sum(h * a)  # a's adjoint gathers two terms
    return total


def chain_with_both_operands_active(x, c):
    total = 0.0
    for i in range(2):
        a = x + c                      # (3,) + (4, 1): both reductions read a's adjoint
        total = total + np.sum(np.tanh(a + x) ** 2)
    return total


def chain_across_a_branch(x, big, c):
    total = 0.0
    for i in range(3):
        a = x + big
        if i > 0:
            a = np.cos(a + c)
        total = total + np.sum(np.tanh(a + c) ** 2)
    return total


@pytest.mark.parametrize("f", [chain_in_loop, negated_chain_in_loop, chain_read_twice,
                               chain_across_a_branch])
def test_reductions_of_reductions_in_loops_match_finite_differences(f):
    rng = np.random.default_rng(11)
    args = (rng.normal(size=3), rng.normal(size=(4, 3)), rng.normal(size=(4, 1)))
    assert_grad_matches(f, args, (0, 1, 2))
    assert_grad_matches(f, args, 0)


def test_reductions_with_both_operands_active_match_finite_differences():
    rng = np.random.default_rng(12)
    assert_grad_matches(chain_with_both_operands_active, (rng.normal(size=3), rng.normal(size=(4, 1))), (0, 1))


def test_a_loop_reduces_a_gradient_to_the_operand_at_once():
    # a = x + big * k; tanh(a + c): dx needs one unbroadcast per iteration, from the
    # gradient of a + c, and the loop saves no shape of a for it
    code = s2sad.adjoint_source(chain_in_loop, wrt="x")
    body = code.split("in reversed(tape):", 1)[1]
    assert body.count("unbroadcast(") == 1, code
    assert "dx += unbroadcast(da_add_c, x)" in body, code
    assert "append((a," not in code and "stand_in(a)" not in code, code
    negated = s2sad.adjoint_source(negated_chain_in_loop, wrt="x")
    assert "dx += -unbroadcast(da_add_c, x)" in negated, negated


def test_debug_mode_keeps_every_forward_value_for_a_debugger(monkeypatch):
    """S2SAD_DEBUG=1: no stand-ins and no buffer reuse, so pdb shows z and log_p as they are;
    the generic code comes back once the variable is unset (a separate cache entry)."""
    rng = np.random.default_rng(1)
    logits, Y = rng.normal(size=(4, 3)), np.eye(3)[rng.integers(0, 3, 4)]
    optimized = s2sad.grad(cross_entropy, wrt="logits")
    monkeypatch.setenv("S2SAD_DEBUG", "1")
    debug = s2sad.grad(cross_entropy, wrt="logits")
    assert debug is not optimized
    for helper in ("stand_in", "mul_into("):
        assert helper in optimized.__s2sad_source__ and helper not in debug.__s2sad_source__
    assert "log_p = z - log_sum_exp_z" in forward_of(debug.__s2sad_source__)
    np.testing.assert_allclose(debug(logits, Y), optimized(logits, Y), rtol=1e-14)
    assert_grad_matches(cross_entropy, [logits, Y], wrt=0)
    monkeypatch.delenv("S2SAD_DEBUG")
    assert s2sad.grad(cross_entropy, wrt="logits") is optimized
