"""Defects found by probing s2sad with functions written as the test suites of autograd, Tangent
and JAX write them (probe 7), as small functions checked against central finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad

from gradcheck import make_function, numerical_grad

X = np.array([0.7, -1.2, 0.4])


def check(source: str, args: tuple, wrt: int = 0) -> None:
    """s2sad's gradient against finite differences, twice (the second call runs the code
    specialised to the shapes), value_and_grad's too, and the jvp along a direction."""
    f = make_function(source, {"np": np})
    expected = numerical_grad(f, args, wrt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", s2sad.ZeroGradientWarning)
        for _ in range(2):
            g = s2sad.grad(f, wrt)(*args)
            np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
            _, g = s2sad.value_and_grad(f, wrt)(*args)
            np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
        t = np.linspace(-1.0, 1.0, np.size(args[wrt])).reshape(np.shape(args[wrt]))
        t = float(t) if isinstance(args[wrt], float) else t
        _, slope = s2sad.jvp(f, wrt)(*args, t)
        np.testing.assert_allclose(slope, np.sum(expected * t), rtol=1e-6, atol=1e-8)


ENDS_WITH_IF = {
    # an if whose every branch returns, as the function's last statement: refused as a
    # function that does not end with a return
    "if_else": "def f(a):\n    if a < 0:\n        return a * a\n    else:\n        return a ** 3\n",
    "elif_chain": ("def f(a):\n    if a < -1:\n        return a\n    elif a < 0:\n        return a * a\n"
                   "    elif a < 1:\n        return np.sin(a) * a\n    else:\n        return a ** 3\n"),
    "array_branches": ("def f(x):\n    y = x * 2\n    if np.sum(x) < 0:\n        return np.sum(y * x)\n"
                       "    else:\n        return np.sum(np.tanh(y))\n"),
}


@pytest.mark.parametrize("name", sorted(ENDS_WITH_IF))
def test_if_whose_branches_all_return_ends_the_function(name: str) -> None:
    args = (X,) if "array" in name else (0.7,)
    check(ENDS_WITH_IF[name], args)
    if "array" not in name:
        check(ENDS_WITH_IF[name], (-0.4,))


class Poly:
    """A callable object built in the differentiated function from what carries a gradient."""

    def __init__(self, coeffs: list) -> None:
        self.coeffs = coeffs

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return sum(c * x ** i for i, c in enumerate(self.coeffs))


def poly_called_inline(c, x):
    return np.sum(Poly(c)(x))


def poly_bound_then_called(c, x):
    p = Poly(c)
    return np.sum(p(x))


@pytest.mark.parametrize("f, where", [(poly_called_inline, "builds an instance of Poly from values that carry"),
                                      (poly_bound_then_called, "builds an instance of Poly from values that carry")])
def test_object_made_from_an_active_value_and_called_is_refused(f, where: str) -> None:
    # what the callee was made from was not read by the call: a zero gradient, with a warning
    with pytest.raises(s2sad.NoGradientRuleError, match=where) as info:
        s2sad.grad(f)([1.0, -2.0, 0.5], X)
    assert info.value.location.line == f.__code__.co_firstlineno + 1


ZERO_D = {
    # x[()] of a 0-d array, its gradient then added to another: the specialised getitem_grad
    # was g.reshape(()).copy(), a number (no .reshape for a float, no item assignment after)
    "literal_seed": "def f(x):\n    return np.sum(x[None] * 3) + x[()]\n",
    "added_at": "def f(x):\n    return np.sum(x.reshape(1) ** 2) + np.sum(x[None] * 3) + x[()] ** 3\n",
    # in a loop: the gradient summed with + became a NumPy number, then add_at wrote into it
    "in_a_loop": ("def f(x):\n    s = 0.0\n    for i in range(3):\n        s = s + x * i + x[()] ** 2\n"
                  "    return s\n"),
}


@pytest.mark.parametrize("name", sorted(ZERO_D))
def test_item_of_a_zero_d_array_gets_an_array_gradient(name: str) -> None:
    check(ZERO_D[name], (np.array(0.7),))
    g = s2sad.grad(make_function(ZERO_D[name], {"np": np}))(np.array(0.7))
    assert isinstance(g, np.ndarray) and g.shape == ()


ENUMERATE_FROM = {
    # enumerate's start was refused (use 'for i, item in enumerate(sequence)')
    "generator": "def f(x):\n    return sum(i * v for i, v in enumerate(x, start=1))\n",
    "loop": ("def f(x):\n    s = 0.0\n    for i, v in enumerate(x, 2):\n        s = s + i * v ** 2\n"
             "    return s\n"),
    "zip": ("def f(x):\n    s = 0.0\n    for i, (a, b) in enumerate(zip(x, x[::-1]), start=1):\n"
            "        s = s + i * a * b\n    return s\n"),
}


@pytest.mark.parametrize("name", sorted(ENUMERATE_FROM))
def test_enumerate_with_a_start(name: str) -> None:
    check(ENUMERATE_FROM[name], (X,))


SORTED_KEYS = {
    # the keys sorted(d) gives were values carrying a gradient (the dict's), refused as an index
    "keys": "def f(p):\n    s = 0.0\n    for k in sorted(p):\n        s = s * 2 + np.sum(p[k] ** 2)\n    return s\n",
    "keys_method": ("def f(p):\n    s = 0.0\n    for k in sorted(p.keys()):\n        s = s * 3 + np.sum(p[k] ** 3)\n"
                    "    return s\n"),
    "items": ("def f(p):\n    s = 0.0\n    for k, v in sorted(p.items()):\n        s = s * 3 + np.sum(v ** 3)\n"
              "    return s\n"),
}


@pytest.mark.parametrize("name", sorted(SORTED_KEYS))
def test_loop_over_the_sorted_keys_of_a_dict(name: str) -> None:
    f = make_function(SORTED_KEYS[name], {"np": np})
    p = {"y": X * 2, "x": X}
    g = s2sad.grad(f)(p)
    for key in p:
        expected = numerical_grad(lambda v: f({**p, key: v}), (p[key],), 0)
        np.testing.assert_allclose(g[key], expected, rtol=1e-6, atol=1e-8)
    _, slope = s2sad.jvp(f)(p, p)
    np.testing.assert_allclose(slope, sum(np.sum(g[k] * p[k]) for k in p), rtol=1e-6)


class Layer:
    """A layer whose method a model calls on an object it holds."""

    def __init__(self, W: np.ndarray) -> None:
        self.W = W

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(self.W @ x)


class Stack:
    """Layers held as attributes and in a list, as PyTorch-style models hold them."""

    def __init__(self) -> None:
        self.first = Layer(np.eye(3) * 0.5 + 0.1)
        self.layers = [Layer(np.eye(3) * 0.3), Layer(np.ones((3, 3)) * 0.2)]

    def through_attribute(self, x: np.ndarray) -> float:
        return np.sum(self.first.forward(x) ** 2)

    def through_list(self, x: np.ndarray) -> float:
        for layer in self.layers:
            x = layer.forward(x)
        return np.sum(x ** 2)

    def through_index(self, x: np.ndarray) -> float:
        return np.sum(self.layers[1].forward(self.first.forward(x)) ** 2)


@pytest.mark.parametrize("method", ["through_attribute", "through_list", "through_index"])
def test_method_of_an_object_the_function_holds(method: str) -> None:
    # a method called on anything but self (self.first.forward(x), layer.forward(x)) was
    # refused: '.forward' is not a NumPy array method
    f = getattr(Stack(), method)
    expected = numerical_grad(f, (X,), 0)
    for _ in range(2):
        np.testing.assert_allclose(s2sad.grad(f)(X), expected, rtol=1e-6, atol=1e-8)
    _, slope = s2sad.jvp(f)(X, X)
    np.testing.assert_allclose(slope, np.dot(expected, X), rtol=1e-6)


def unknown_method_of_an_array(x):
    y = x * 2
    return np.sum(y.foo())


def test_unknown_method_of_an_array_is_refused_at_the_call() -> None:
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="y.foo is not a method defined with 'def' in ndarray") as info:
        s2sad.grad(unknown_method_of_an_array)(X)
    assert info.value.location.line == unknown_method_of_an_array.__code__.co_firstlineno + 2


class Quad:
    """A class whose instance the differentiated function makes and calls a method of."""

    def __init__(self, a: float) -> None:
        self.a = a

    def value(self, x: np.ndarray) -> float:
        return self.a * np.sum(x ** 2)


def calls_method_of_instance_made_here(x):
    q = Quad(2.0)
    return q.value(x) + Quad(0.5).value(x * 2)


def test_method_of_an_instance_made_in_the_function() -> None:
    np.testing.assert_allclose(s2sad.grad(calls_method_of_instance_made_here)(X), 4 * X + 4 * X)


class Affine:
    """A layer called as a function, as PyTorch's modules are."""

    def __init__(self, W: np.ndarray) -> None:
        self.W = W

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.forward(x)

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.W @ x


class Net:
    """Layers held as attributes and called: ``self.fc2(np.tanh(self.fc1(x)))``."""

    def __init__(self) -> None:
        self.fc1 = Affine(np.eye(3) * 0.5 + 0.1)
        self.fc2 = Affine(np.ones((2, 3)) * 0.3)
        self.act = np.tanh

    def loss(self, x: np.ndarray) -> float:
        return np.sum(self.fc2(np.tanh(self.fc1(x))) ** 2)

    def through_act(self, x: np.ndarray) -> float:
        return np.sum(self.act(x))


def test_attribute_holding_a_callable_object_is_called() -> None:
    # self.fc1(x) was refused: 'self.fc1 is not a method defined with def in Net'
    f = Net().loss
    expected = numerical_grad(f, (X,), 0)
    for _ in range(2):
        np.testing.assert_allclose(s2sad.grad(f)(X), expected, rtol=1e-6, atol=1e-8)
    _, slope = s2sad.jvp(f)(X, X)
    np.testing.assert_allclose(slope, np.dot(expected, X), rtol=1e-6)


def test_attribute_holding_a_library_function_is_called() -> None:
    # (it was refused: self.act(...) calls what an attribute holds; tests/test_lang9_constructs.py)
    f = Net().through_act
    np.testing.assert_allclose(s2sad.grad(f)(X), numerical_grad(f, (X,), 0), rtol=1e-6, atol=1e-8)


class Shadowed(Layer):
    """An instance whose own attribute hides its class's method, as Python calls it."""

    def __init__(self, W: np.ndarray) -> None:
        super().__init__(W)
        self.forward = Affine(W)


def calls_shadowed(x, layer):
    return np.sum(layer.forward(x) ** 2)


def test_instance_attribute_hides_the_class_method() -> None:
    # the method of the class was differentiated (tanh), not what the instance's attribute holds
    layer = Shadowed(np.eye(3) * 0.5)
    expected = numerical_grad(lambda x: calls_shadowed(x, layer), (X,), 0)
    np.testing.assert_allclose(s2sad.grad(calls_shadowed)(X, layer), expected, rtol=1e-6, atol=1e-8)
