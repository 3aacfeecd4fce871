"""Recursion (issue 18): the generated code of a recursive function calls its own generated
code, each activation with its own tape; mutual recursion goes through the same lookup.

Gradients are checked against central finite differences (``value_and_grad`` too), ``hvp``
(which differentiates the generated code again) against finite differences of the gradient,
and ``jvp`` against the gradient.  Past Python's recursion limit the generated code raises
``RecursionDepthError`` at the recursive function's definition, never a bare RecursionError.
"""
from __future__ import annotations

import functools
import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2sad
from s2sad import adjoint_source, grad, hvp, jvp, value_and_grad, vjp
from s2sad.cli import main

from gradcheck import assert_grad_matches

rng = np.random.default_rng(1818)


def power(x, n):
    if n == 0:
        return np.sum(x)
    return power(x * 1.5, n - 1)  # the recursive call is the returned value


def sines(x, n):
    if n == 0:
        return np.sum(x ** 2)
    y = sines(np.sin(x), n - 1)
    return y * 1.5 + np.sum(x)


def horner(coeffs, x, i):
    if i == len(coeffs) - 1:
        return coeffs[i]
    return coeffs[i] + x * horner(coeffs, x, i + 1)


def total(xs, i):
    return 0.0 if i == len(xs) else xs[i] ** 2 + total(xs, i + 1)


def tree(x, depth):
    if depth == 0:
        return np.sin(x)
    return tree(x * 0.5, depth - 1) + tree(x * 0.3, depth - 1) * x


def branches(x, depth):
    total = np.sum(np.cos(x))
    if depth > 0:
        for k in range(3):  # each activation keeps its own loop tape
            total = total + branches(x * (0.2 + 0.1 * k), depth - 1) * np.sum(x)
    return total


def tree_sum(x):
    return np.sum(tree(x, 3))


def even(x, n):
    if n == 0:
        return x
    return np.sin(odd(x, n - 1))


def odd(x, n):
    if n == 0:
        return x * x
    return even(x, n - 1) * x + 0.5


def swap(a, b, n):
    if n == 0:
        return np.sum(a * np.sin(b))
    return swap(b * 1.1, a, n - 1) + np.sum(a * b)


def layered(x, w, n):
    if n == 0:
        return np.sum(np.tanh(x))
    return layered(np.tanh(w @ x), w, n - 1)


def nested(x):
    def shrink(y, n):
        if n == 0:
            return y
        return shrink(y * np.cos(y), n - 1)
    return np.sum(shrink(x, 3))


power_lambda = lambda x, n: x if n == 0 else power_lambda(x * 1.2, n - 1) * x  # noqa: E731


def via_lambda(x):
    return np.sum(power_lambda(x, 3))


class Net:
    def __init__(self, w):
        self.w = w

    def depth(self, x, n):
        if n == 0:
            return np.sum(x ** 2)
        return self.depth(np.tanh(self.w * x), n - 1)


net = Net(0.7)


def vector():
    return rng.normal(size=4) * 0.5


@pytest.mark.parametrize("f, args, wrt", [
    (power, (vector(), 3), 0),
    (sines, (vector(), 4), 0),
    (horner, (vector(), 0.7, 0), (0, 1)),
    (total, (np.array([0.3, -0.2, 0.9]), 0), 0),
    (tree_sum, (vector(),), 0),
    (branches, (vector(), 3), 0),
    (even, (0.4, 5), 0),
    (odd, (0.4, 6), 0),
    (swap, (vector(), vector(), 3), (0, 1)),
    (swap, (vector(), vector(), 3), 0),
    (layered, (vector(), rng.normal(size=(4, 4)) * 0.5, 3), (0, 1)),
    (nested, (vector(),), 0),
    (via_lambda, (vector(),), 0),
    (power_lambda, (0.7, 2), 0),
    (net.depth, (vector(), 3), 0),
])
def test_gradient_matches_finite_differences(f, args, wrt):
    assert_grad_matches(f, args, wrt)


def test_base_case_only():
    # depth 0: the recursive branch never runs, its generated code is never called
    assert_grad_matches(sines, (vector(), 0), 0)
    assert_grad_matches(total, (np.array([0.5]), 1), 0)


@pytest.mark.parametrize("f, args", [
    (sines, (vector(), 3)),
    (tree_sum, (vector(),)),
    (layered, (vector(), rng.normal(size=(4, 4)) * 0.5, 2)),
    (via_lambda, (vector(),)),
    (branches, (vector(), 2)),
    (net.depth, (vector(), 3)),
])
def test_hvp_matches_finite_differences_of_the_gradient(f, args, eps=1e-5):
    v = vector()
    plus, minus = (args[0] + eps * v, *args[1:]), (args[0] - eps * v, *args[1:])
    want = (grad(f)(*plus) - grad(f)(*minus)) / (2 * eps)
    np.testing.assert_allclose(hvp(f)(*args, v), want, rtol=1e-5, atol=1e-7)


def test_hvp_of_mutual_recursion():
    eps = 1e-5
    want = (grad(even)(0.4 + eps, 5) - grad(even)(0.4 - eps, 5)) / (2 * eps)
    np.testing.assert_allclose(hvp(even)(0.4, 5, 1.0), want, rtol=1e-5)


@pytest.mark.parametrize("f, args", [
    (sines, (vector(), 3)),
    (tree_sum, (vector(),)),
    (even, (0.4, 5)),
])
def test_jvp_agrees_with_the_gradient(f, args):
    v = vector() if isinstance(args[0], np.ndarray) else 0.8
    value, derivative = jvp(f)(*args, v)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    np.testing.assert_allclose(derivative, np.sum(grad(f)(*args) * v), rtol=1e-10)


def test_vjp_pulls_back_twice():
    x = vector()
    value, pullback = vjp(sines)(x, 3)
    assert value == pytest.approx(sines(x, 3))
    first, again = pullback(1.0), pullback(1.0)  # the second recomputes the forward pass
    np.testing.assert_allclose(first, grad(sines)(x, 3), rtol=1e-12)
    np.testing.assert_allclose(again, first, rtol=1e-12)


def test_value_and_grad_of_a_returned_recursive_call():
    x = vector()
    value, g = value_and_grad(power)(x, 4)
    assert value == pytest.approx(power(x, 4))
    np.testing.assert_allclose(g, np.full(4, 1.5 ** 4))


def test_generated_code_calls_itself():
    source = adjoint_source(sines)
    # the gradient calls the callee's forward pass, whose code calls itself again
    assert "forward_sines_wrt_x(np.sin(x), n - 1)" in source
    assert "calls the code generated for sines (a recursive call)" in source
    assert "calls the code generated for power_lambda (a recursive call)" in adjoint_source(via_lambda)


def test_user_inputs_are_not_changed():
    xs = [0.3, -0.2, 0.9]
    assert grad(total)(xs, 0) == pytest.approx([0.6, -0.4, 1.8])
    assert xs == [0.3, -0.2, 0.9]


def make_recursive(scale):
    def shrink(x, n):
        if n == 0:
            return np.sum(np.sin(x)) * scale
        return shrink(x * 2.0, n - 1)
    return shrink


def test_closures_of_one_code_recurse_into_their_own_function():
    # the two functions share their code; each one's recursive call is its own
    x = vector()
    once, thrice = make_recursive(1.0), make_recursive(3.0)
    for f, scale in ((once, 1.0), (thrice, 3.0), (once, 1.0)):
        np.testing.assert_allclose(grad(f)(x, 2), scale * 4 * np.cos(4 * x), rtol=1e-12)


@s2sad.differentiate
def decorated(x, n):
    if n == 0:
        return np.sum(np.sin(x))
    return decorated(x * 2.0, n - 1)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@logged
def wrapped(x, n):
    if n == 0:
        return np.sum(np.sin(x))
    return wrapped(x * 2.0, n - 1) * 1.5


def test_decorated_recursive_functions():
    x = vector()
    np.testing.assert_allclose(decorated.grad(x, 2), 4 * np.cos(4 * x), rtol=1e-12)
    assert_grad_matches(wrapped, (x, 2), 0)
    np.testing.assert_allclose(hvp(wrapped)(x, 2, x), -2.25 * 16 * np.sin(4 * x) * x, rtol=1e-10)


def test_cli_prints_the_recursive_code(capsys):
    assert main([f"{__file__}:sines", "--wrt", "x"]) == 0
    assert "forward_sines_wrt_x(np.sin(x), n - 1)" in capsys.readouterr().out


RECURSIVE_MODULE = textwrap.dedent('''
    import numpy as np


    def sines(x, n):
        if n == 0:
            return np.sum(x ** 2)
        y = sines(np.sin(x), n - 1)
        return y * 1.5 + np.sum(x)
''')


@pytest.mark.parametrize("mode, call, expected", [
    ("reverse", "fn(x, 3)", "s2sad.grad(user.sines)(x, 3)"),
    ("forward", "fn(x, 3, v)[1]", "s2sad.jvp(user.sines)(x, 3, v)[1]"),
    ("hvp", "fn(x, 3, v)[1]", "s2sad.hvp(user.sines)(x, 3, v)"),
])
def test_the_written_module_recurses_into_itself(tmp_path, capsys, mode, call, expected):
    # the recursive call's name is bound to the generated function it calls
    (tmp_path / "user.py").write_text(RECURSIVE_MODULE)
    out = tmp_path / "written.py"
    assert main([f"{tmp_path / 'user.py'}:sines", "--mode", mode, "--output", str(out)]) == 0
    capsys.readouterr()
    name = next(line.split("(")[0][4:] for line in out.read_text().splitlines() if line.startswith("def "))
    probe = textwrap.dedent(f'''
        import numpy as np
        import s2sad
        import user
        import written
        x, v = np.array([0.3, -0.5, 0.7]), np.array([1.0, 0.5, -2.0])
        fn = written.{name}
        np.testing.assert_allclose({call}, {expected}, rtol=1e-12)
    ''')
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# --- the depth limit -----------------------------------------------------------------------

def deep(x, n):
    if n == 0:
        return x * 1.0
    return deep(x, n - 1) * 1.0


def runaway(x, n):
    return runaway(x * 0.5, n + 1)  # never stops


def definition_line(f):
    return inspect.getsourcelines(f)[1]


@pytest.mark.parametrize("call", [
    lambda: grad(deep)(1.0, 900),
    lambda: value_and_grad(deep)(1.0, 900),
    lambda: vjp(deep)(1.0, 900)[1](1.0),
    lambda: hvp(deep)(1.0, 900, 1.0),
    lambda: jvp(deep)(1.0, 900, 1.0),
    lambda: grad(runaway)(1.0, 0),
], ids=["grad", "value_and_grad", "vjp", "hvp", "jvp", "runaway"])
def test_past_the_recursion_limit_a_located_error_with_advice(call):
    assert deep(1.0, 900) == 1.0  # Python itself recurses this deep
    with pytest.raises(s2sad.RecursionDepthError) as info:
        call()
    exc = info.value
    assert exc.location.filename == __file__
    name = "runaway" if "runaway" in exc.message else "deep"
    assert exc.location.line == definition_line(globals()[name])
    assert f"{name} recursed past Python's recursion limit" in exc.message
    assert f"sys.getrecursionlimit() = {sys.getrecursionlimit()}" in exc.message
    assert "write the recursion as a loop" in exc.message and "sys.setrecursionlimit" in exc.message
    assert exc.__cause__ is None and exc.__suppress_context__


def test_a_raised_recursion_limit_is_used():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(4000)
    try:
        assert grad(deep)(1.0, 900) == 1.0
    finally:
        sys.setrecursionlimit(limit)


# --- still refused ---------------------------------------------------------------------------

def nested_reading_outer(x, c):
    def shrink(y, n):
        if n == 0:
            return y * c
        return shrink(y * np.cos(y), n - 1)
    return np.sum(shrink(x, 3))


def test_recursive_nested_function_reading_the_enclosing_one_is_refused():
    lines, first = inspect.getsourcelines(nested_reading_outer)
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        grad(nested_reading_outer)(vector(), 2.0)
    assert (info.value.location.line, info.value.location.column) == (first + 1, 5)
    assert "'shrink' calls itself and reads c from the enclosing function; pass it as an argument" in str(
        info.value)
