"""A decorated function is differentiated as the object that is called: the wrapper's own
code, with the wrapped function as a callee; never the wrapped function in its place."""
from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest

import s2sad
from s2sad import differentiate, grad, hessian, value_and_grad

from gradcheck import assert_grad_matches, make_function, numerical_grad

x3 = np.array([0.3, -0.5, 0.7])


def times10(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 10.0
    return wrapper


def shifted(fn):
    @functools.wraps(fn)
    def wrapper(x, shift=1.0):
        """Named parameters: compiled with them."""
        return fn(x + shift) ** 2
    return wrapper


@times10
def h(x):
    return np.sum(x * 2)


@times10
def scaled(x, scale=3.0, *, power=2):
    return np.sum((x * scale) ** power)


@shifted
def cubic(x):
    return np.sum(x ** 3)


def calls_h(x):
    return h(x) + np.sum(x)


def calls_scaled(x):
    return scaled(x, 2.0) + scaled(x, power=1)


def test_a_forwarding_wrapper_is_differentiated_with_its_own_code():
    np.testing.assert_allclose(grad(h)(x3), [20.0, 20.0, 20.0])
    assert_grad_matches(h, (x3,), 0)


def test_a_decorated_callee_is_differentiated_with_its_wrapper():
    np.testing.assert_allclose(grad(calls_h)(x3), [21.0, 21.0, 21.0])
    assert_grad_matches(calls_h, (x3,), 0)


def test_a_wrapper_keeps_the_wrapped_functions_defaults():
    g = grad(scaled)
    assert list(inspect.signature(g).parameters) == ["x", "scale", "power"]
    np.testing.assert_allclose(g(x3), numerical_grad(scaled, (x3,), 0))
    np.testing.assert_allclose(g(x3, 0.5, power=3), numerical_grad(lambda x: scaled(x, 0.5, power=3), (x3,), 0))
    assert_grad_matches(scaled, (x3, 1.5), (0, 1))
    assert "def grad_wrapper(x, scale=3.0, *, power=2):" in s2sad.adjoint_source(scaled)


def test_a_decorated_callee_with_defaults_and_keywords():
    assert_grad_matches(calls_scaled, (x3,), 0)


def test_a_wrapper_with_named_parameters():
    assert_grad_matches(cubic, (x3,), 0)
    assert_grad_matches(cubic, (x3, 0.5), (0, 1))
    np.testing.assert_allclose(grad(cubic, "shift")(x3), numerical_grad(cubic, (x3, 1.0), 1))


def test_second_order_through_a_wrapper():
    def f(x):
        return np.sum(x ** 3)
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(hessian(times10(f))(x), np.diag(60.0 * x))


def test_differentiate_still_calls_the_function_unchanged():
    d = differentiate(h)
    assert d(x3) == pytest.approx(h(x3))
    np.testing.assert_allclose(d.grad(x3), [20.0, 20.0, 20.0])
    value, g = value_and_grad(d)(x3)
    assert value == pytest.approx(h(x3))
    np.testing.assert_allclose(g, [20.0, 20.0, 20.0])


def test_a_wrapper_whose_source_cannot_be_read_is_refused_naming_the_decorator():
    namespace: dict = {}
    exec("import functools\n"
         "def cached(fn):\n"
         "    @functools.wraps(fn)\n"
         "    def inner(*a, **k):\n"
         "        return fn(*a, **k) * 3.0\n"
         "    return inner\n", namespace)
    f = make_function("def f(x):\n    return np.sum(x * 2)\n", {"np": np})
    wrapped = namespace["cached"](f)
    file, line = f.__code__.co_filename, f.__code__.co_firstlineno
    for target in (wrapped, make_function("def caller(x):\n    return wrapped(x)\n", {"wrapped": wrapped})):
        with pytest.raises(s2sad.SourceError, match="wrapped by the decorator cached") as info:
            grad(target)(x3)
        assert (info.value.location.filename, info.value.location.line) == (file, line)


def test_a_wrapper_that_is_not_a_python_function_is_refused_naming_it():
    f = functools.lru_cache(make_function("def f(x):\n    return x * 2.0\n", {}))
    with pytest.raises(s2sad.SourceError, match="functools._lru_cache_wrapper"):
        grad(f)
    caller = make_function("def caller(x):\n    return f(x) * 2.0\n", {"f": f})
    with pytest.raises(s2sad.S2SADError, match="functools._lru_cache_wrapper") as info:
        grad(caller)(1.5)
    assert (info.value.location.filename, info.value.location.line) == (caller.__code__.co_filename, 2)


def test_a_wrapper_that_reads_its_star_arguments_is_refused():
    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs) + len(args)
        return wrapper

    @logged
    def f(x):
        return np.sum(x)
    with pytest.raises(s2sad.SourceError, match=r"logged.*\*args.*other than to pass them on") as info:
        grad(f)(x3)
    assert info.value.location.line == f.__wrapped__.__code__.co_firstlineno


def test_one_decorator_on_functions_that_call_each_other():
    """The wrapper's code is shared: compiling it around ``b`` inside its compilation
    around ``a`` is not recursion."""
    @times10
    def b(x):
        return np.sum(x ** 2)

    @times10
    def a(x):
        return b(x) + np.sum(x)
    np.testing.assert_allclose(grad(a)(x3), 10.0 * (20.0 * x3 + 1.0))
    assert_grad_matches(a, (x3,), 0)
