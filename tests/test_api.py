"""The public API: grad, value_and_grad, differentiate, adjoint_source, caching."""
from __future__ import annotations

import inspect
import linecache
import time
import traceback

import numpy as np
import pytest

import s2sad
from s2sad import adjoint_source, differentiate, grad, stop_gradient, value_and_grad

from gradcheck import numerical_grad

rng = np.random.default_rng(1)


def loss(w, x, scale=2.0, *, power=2):
    """A documented loss."""
    r = np.tanh(x @ w) * scale
    return np.mean(r ** power)


def test_grad_signature_and_defaults():
    g = grad(loss)
    assert list(inspect.signature(g).parameters) == ["w", "x", "scale", "power"]
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    np.testing.assert_allclose(g(w, x), numerical_grad(loss, (w, x), 0), rtol=1e-6)
    np.testing.assert_allclose(g(w, x, 3.0, power=4), numerical_grad(
        lambda w, x: loss(w, x, 3.0, power=4), (w, x), 0), rtol=1e-6)


@pytest.mark.parametrize("wrt", [0, "w", -3, (0,), ("w",)])
def test_wrt_forms(wrt):
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    g = grad(loss, wrt=wrt)(w, x)
    if isinstance(wrt, tuple):
        assert isinstance(g, tuple) and len(g) == 1
        g = g[0]
    np.testing.assert_allclose(g, numerical_grad(loss, (w, x), 0), rtol=1e-6)


def test_tuple_wrt_keeps_order():
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    gx, gw = grad(loss, wrt=("x", "w"))(w, x)
    np.testing.assert_allclose(gx, numerical_grad(loss, (w, x), 1), rtol=1e-6)
    np.testing.assert_allclose(gw, numerical_grad(loss, (w, x), 0), rtol=1e-6)


def test_keyword_only_wrt():
    def f(x, *, scale):
        return np.sum(x * scale)
    assert grad(f, wrt="scale")(np.arange(3.0), scale=2.0) == pytest.approx(3.0)


def test_value_and_grad_matches():
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    value, g = value_and_grad(loss)(w, x)
    assert value == pytest.approx(loss(w, x))
    np.testing.assert_allclose(g, grad(loss)(w, x))


@differentiate
def bare(x):
    return np.sum(np.sin(x))


@differentiate(wrt="y")
def with_args(x, y):
    """Doc of with_args."""
    return np.sum(x * y ** 2)


def test_decorator_bare_and_with_arguments():
    x = rng.normal(size=4)
    assert bare(x) == pytest.approx(np.sum(np.sin(x)))
    np.testing.assert_allclose(bare.grad(x), np.cos(x))
    value, g = bare.value_and_grad(x)
    assert value == pytest.approx(bare(x))
    y = rng.normal(size=4)
    np.testing.assert_allclose(with_args.grad(x, y), 2 * x * y)
    assert with_args.__name__ == "with_args" and with_args.__doc__ == "Doc of with_args."
    assert list(inspect.signature(with_args).parameters) == ["x", "y"]
    assert "def grad_with_args(x, y):" in with_args.source
    assert with_args.source == adjoint_source(with_args, wrt="y")


def test_grad_of_decorated_function():
    x = rng.normal(size=4)
    np.testing.assert_allclose(grad(bare)(x), np.cos(x))


def test_generation_is_cached_and_deterministic():
    g1 = grad(loss)
    start = time.perf_counter()
    for _ in range(1000):
        g2 = grad(loss)
    per_call = (time.perf_counter() - start) / 1000
    assert g1 is g2
    assert per_call < 1e-3  # a dictionary lookup, not a recompilation
    text = adjoint_source(loss)
    s2sad.clear_cache()
    assert adjoint_source(loss) == text


def test_generated_code_is_in_linecache_for_tracebacks():
    g = grad(loss)
    filename = g.__code__.co_filename
    assert "".join(linecache.getlines(filename)) == g.__s2sad_source__

    def bad(x):
        return np.sum(np.log(x) @ x)
    try:
        grad(bad)(np.ones((2, 3)))
    except ValueError:
        frames = traceback.format_exc()
    assert "log_x @ x" in frames


def test_inputs_are_not_mutated():
    def f(a, b):
        c = a
        c = c * 2.0
        c += b
        return np.sum(c * a) + np.sum(b[0] * a)
    a, b = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    a0, b0 = a.copy(), b.copy()
    ga, gb = grad(f, wrt=(0, 1))(a, b)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    np.testing.assert_allclose(ga, numerical_grad(f, (a, b), 0), rtol=1e-6)
    np.testing.assert_allclose(gb, numerical_grad(f, (a, b), 1), rtol=1e-6)


def test_closures_and_globals_are_read_live():
    def make(scale):
        def f(x):
            return np.sum(x * scale * OFFSET)
        return f
    global OFFSET
    OFFSET = 1.0
    f2, f3 = make(2.0), make(3.0)
    x = np.ones(2)
    np.testing.assert_allclose(grad(f2)(x), [2.0, 2.0])
    np.testing.assert_allclose(grad(f3)(x), [3.0, 3.0])
    OFFSET = 10.0
    np.testing.assert_allclose(grad(f2)(x), [20.0, 20.0])


def test_python_float_inputs():
    def f(x):
        return np.sin(x) * x ** 2 + np.exp(-x)
    x = 0.7
    g = grad(f)(x)
    expected = np.cos(x) * x ** 2 + 2 * x * np.sin(x) - np.exp(-x)
    assert g == pytest.approx(expected)


def test_float32_stays_float32():
    def f(x):
        return np.sum(np.tanh(x) * x)
    x = rng.normal(size=5).astype(np.float32)
    assert grad(f)(x).dtype == np.float32


def test_stop_gradient_is_exported():
    assert s2sad.stop_gradient is stop_gradient


def _sum_of(x, y):
    return np.sum(x + y)


def _tuple_sum(t):
    a, b = t
    return np.sum(a) + np.mean(b)


def test_returned_gradients_are_owned_arrays():
    """Sum gradients of large arrays are broadcast views inside generated code; the caller
    gets writeable arrays of its own."""
    from s2sad.runtime import reduce_grad

    n = 5000
    assert not reduce_grad(1.0, np.ones(n)).flags.writeable  # the view path is exercised
    x, y = np.ones(n), np.ones(n)
    dx, dy = grad(_sum_of, ("x", "y"))(x, y)
    assert dx.flags.writeable and dy.flags.writeable and dx is not dy
    dx *= 2.0
    np.testing.assert_allclose(dy, np.ones(n))
    value, (vx, _) = value_and_grad(_sum_of, ("x", "y"))(x, y)
    assert value == 2.0 * n and vx.flags.writeable
    da, db = grad(_tuple_sum)((np.ones(n), np.ones(2 * n)))
    assert da.flags.writeable and db.flags.writeable
    np.testing.assert_allclose(db, np.full(2 * n, 0.5 / n))


def test_import_leaves_the_compiler_for_the_first_generation():
    """``import s2sad`` loads neither libcst nor the passes, and compiles no rule template:
    a script or CLI call pays for the compiler only when it generates code.  (Reading source
    and the run-time callees, which the API uses, are light modules beside the passes.)"""
    import subprocess
    import sys

    probe = ("import sys, s2sad\n"
             "from s2sad.rules import REGISTRY\n"
             "loaded = sorted(m for m in sys.modules if m == 'libcst' or m.startswith('s2sad.passes.')\n"
             "                and m not in ('s2sad.passes.source', 's2sad.passes.callees'))\n"
             "compiled = sum('_compiled' in vars(t) for r in REGISTRY.rules.values() for t in r.vjps.values())\n"
             "print(loaded, compiled)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] 0"
