"""Thread safety, reentrancy, inputs never mutated, check_grad and explain."""
from __future__ import annotations

import concurrent.futures
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import s2sad
from s2sad import check_grad, explain, grad, stop_gradient

from gradcheck import make_function


def test_cache_hit_from_many_threads_at_once():
    sources = [textwrap.dedent(f"""
        def f{i}(x):
            y = np.tanh(x * {i + 1}.0)
            for k in range(3):
                y = y * x + k
            return np.sum(y)
        """) for i in range(8)]
    functions = [make_function(src, {"np": np}) for src in sources]
    x = np.linspace(-1.0, 1.0, 5)

    def work(i: int) -> np.ndarray:
        return grad(functions[i % len(functions)])(x)

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(64)))
    for i, g in enumerate(results):
        np.testing.assert_allclose(g, grad(functions[i % len(functions)])(x))
    assert len({id(grad(f)) for f in functions}) == len(functions)


def inner(x):
    return np.sum(np.sin(x) * x)


def outer(x):
    g = stop_gradient(grad(inner)(x))
    return np.sum(g * x ** 2)


def test_gradient_called_inside_another_gradient():
    x = np.array([0.3, -1.2, 2.0])
    g_inner = np.cos(x) * x + np.sin(x)
    np.testing.assert_allclose(grad(outer)(x), 2 * x * g_inner)


def updates(x, v):
    y = x.copy()
    y[0] += v[1]
    y *= 2.0
    parts = []
    for i in range(2):
        parts.append(y * i)
    return np.sum(np.stack(parts) ** 2) + np.sum(x * v)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(hnp.arrays(np.float64, (3,), elements=st.floats(-3, 3)),
       hnp.arrays(np.float64, (3,), elements=st.floats(-3, 3)))
def test_generated_code_never_mutates_its_inputs(x, v):
    x0, v0 = x.copy(), v.copy()
    x.flags.writeable = False  # any write raises
    v.flags.writeable = False
    grad(updates, wrt=(0, 1))(x, v)
    s2sad.value_and_grad(updates, wrt=(0, 1))(x, v)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(v, v0)


def test_check_grad_accepts_a_right_gradient():
    check_grad(updates, np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.2, -0.3]), wrt=(0, 1))
    check_grad(lambda_free_tuple, (np.ones(2), 0.5), wrt=0)


def lambda_free_tuple(p):
    a, b = p
    return np.sum(a * b ** 2)


def test_check_grad_catches_a_wrong_rule():
    from s2sad.rules import REGISTRY

    def my_op(x):
        return np.sin(x)

    def uses(x):
        return np.sum(my_op(x))

    REGISTRY.defvjp(my_op, "x", x="g * np.sin(x)")  # wrong: should be cos
    try:
        with pytest.raises(AssertionError, match="does not match finite differences"):
            check_grad(uses, np.array([0.1, 0.7]))
    finally:
        del REGISTRY.rules[id(my_op)]


def explained(x, w):
    scale = stop_gradient(np.max(w))
    h = x * w / scale
    n = len(x)
    for i in range(3):
        h = np.tanh(h)
    return np.sum(h) + n


def test_explain_labels_each_line():
    text = explain(explained, wrt="x")
    lines = {line.split()[2]: line for line in text.splitlines()[1:] if line.strip()[:1].isdigit()}
    assert "stop_gradient: no adjoint" in lines["scale"]
    assert lines["h"].split()[1] == "active"
    assert lines["n"].split()[1] == "inactive"
    assert "saves h, h_2 per iteration" in text or "saves h_2 per iteration" in text


def tanh_of_sum(x, y):
    return np.sum(np.tanh(x + y))


@pytest.mark.parametrize("kind", ["grad", "value_and_grad"])
def test_gradients_of_two_arguments_are_independent_arrays(kind):
    """In np.tanh(x + y) one array is the gradient of both x and y; the caller gets two, so
    that updating one in place (clipping, say) leaves the other alone."""
    x, y = np.array([0.1, 0.2]), np.array([0.3, -0.1])
    out = getattr(s2sad, kind)(tanh_of_sum, (0, 1))(x, y)
    gx, gy = out if kind == "grad" else out[1]
    assert not np.shares_memory(gx, gy)
    expected = 1 - np.tanh(x + y) ** 2
    gx *= 0.5
    np.testing.assert_allclose(gy, expected, rtol=1e-12)


def tanh_of_unpacked(p):
    a, b = p
    return np.sum(np.tanh(a + b))


def test_gradient_of_a_tuple_argument_has_independent_leaves():
    x, y = np.array([0.1, 0.2]), np.array([0.3, -0.1])
    ga, gb = s2sad.grad(tanh_of_unpacked)((x, y))
    assert not np.shares_memory(ga, gb)
    np.testing.assert_allclose(ga, 1 - np.tanh(x + y) ** 2, rtol=1e-12)
