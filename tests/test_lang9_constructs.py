"""Python forms users write that s2sad refused (lang9): a function held by an attribute and
called through ``self`` (``self.act(x)``: a NumPy ufunc, a rule-known function, a user
function or a lambda), a ``@staticmethod`` or ``@classmethod`` called through ``self``,
``type(self)`` or the class, ``return`` inside a loop (``if converged: return y``, and
``for ... else: return``), ``for i, k in enumerate(sorted(d))`` over a dict of arrays, and
where an hvp's refusal of an integer argument is located.  Each supported form is checked
against central finite differences in float64 through grad, value_and_grad, jvp, vjp, hvp,
hessian, jacobian, grad of grad and ``jit="auto"``."""
from __future__ import annotations

import typing
import warnings

import numpy as np
import pytest

import s2sad

from gradcheck import make_function

EPS = 1e-6


def leaves(tree: typing.Any) -> list[np.ndarray]:
    """The float leaves of an argument (a dict's by sorted key), as arrays."""
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in leaves(tree[k])]
    return [np.asarray(tree, dtype=float)]


def plus(tree: typing.Any, step: typing.Any) -> typing.Any:
    """``tree + step`` leaf by leaf (``step`` shaped like ``tree``)."""
    if isinstance(tree, dict):
        return {k: plus(tree[k], step[k]) for k in tree}
    return tree + step


def scaled(tree: typing.Any, factor: float) -> typing.Any:
    if isinstance(tree, dict):
        return {k: scaled(v, factor) for k, v in tree.items()}
    return np.array(tree * factor, dtype=float)  # (a 0-d array stays an array)


def direction(tree: typing.Any) -> typing.Any:
    """A fixed tangent shaped like ``tree``."""
    if isinstance(tree, dict):
        return {k: direction(v) * (i + 1) for i, (k, v) in enumerate(sorted(tree.items()))}
    return np.linspace(0.5, -0.25, np.size(tree)).reshape(np.shape(tree))


def _moved(args: tuple, wrt: int, step: typing.Any) -> tuple:
    return tuple(plus(a, step) if i == wrt else a for i, a in enumerate(args))


def assert_leaves(got: typing.Any, expected: list[np.ndarray], rtol: float = 1e-6, atol: float = 1e-8) -> None:
    got = leaves(got)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def numerical(f: typing.Any, args: tuple, wrt: int) -> list[np.ndarray]:
    """Central finite differences of scalar ``f`` in each leaf of ``args[wrt]`` (arrays)."""
    unit = scaled(args[wrt], 0.0)
    out = []
    for leaf in leaves(unit):  # (each leaf is the array of ``unit`` itself: set in place)
        g = np.zeros(leaf.shape)
        for i in np.ndindex(*leaf.shape):
            leaf[i] = EPS
            g[i] = (f(*_moved(args, wrt, unit)) - f(*_moved(args, wrt, scaled(unit, -1.0)))) / (2 * EPS)
            leaf[i] = 0.0
        out.append(g)
    return out


def second_order(f: typing.Any, args: tuple, wrt: int, v: typing.Any) -> None:
    """hvp (and for an array, hessian and grad of grad) against differences of the gradient."""
    gradient = s2sad.grad(f, wrt)
    forward, back = (gradient(*_moved(args, wrt, scaled(v, s))) for s in (1e-5, -1e-5))
    expected = [(a - b) / 2e-5 for a, b in zip(leaves(forward), leaves(back))]
    with warnings.catch_warnings():  # (a function linear in x: its Hessian is zero)
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        assert_leaves(s2sad.hvp(f, wrt)(*args, v), expected, 1e-5, 1e-7)
        if isinstance(v, dict):
            return
        hessian = s2sad.hessian(f, wrt)(*args)
        np.testing.assert_allclose(hessian.reshape(v.size, v.size) @ v.ravel(), expected[0].ravel(),
                                   rtol=1e-5, atol=1e-7)
        params = ", ".join(f"a{i}" for i in range(len(args)))
        outer = make_function(f"def outer({params}):\n    return np.sum(grad(F, {wrt})({params}) * V)\n",
                              {"np": np, "grad": s2sad.grad, "F": f, "V": v})
        assert_leaves(s2sad.grad(outer, wrt)(*args), expected, 1e-5, 1e-7)


def check(f: typing.Any, args: tuple, wrt: int = 0, second: bool = True) -> None:
    """Every mode of ``f`` with respect to ``args[wrt]`` against finite differences."""
    x = args[wrt]
    expected = numerical(f, args, wrt)
    v = direction(x)
    for _ in range(2):  # (the second call runs the cached code)
        assert_leaves(s2sad.grad(f, wrt)(*args), expected)
        value, g = s2sad.value_and_grad(f, wrt)(*args)
        assert value == pytest.approx(f(*args))
        assert_leaves(g, expected)
    with warnings.catch_warnings():  # (numba may not compile it: then the NumPy code runs)
        warnings.simplefilter("ignore", s2sad.JitWarning)
        assert_leaves(s2sad.grad(f, wrt, jit="auto")(*args), expected)
    assert_leaves(s2sad.grad(f, wrt, specialize=False)(*args), expected)
    value, slope = s2sad.jvp(f, wrt)(*args, v)
    assert value == pytest.approx(f(*args))
    assert slope == pytest.approx(sum(np.sum(a * b) for a, b in zip(expected, leaves(v))), rel=1e-6, abs=1e-8)
    value, pullback = s2sad.vjp(f, wrt)(*args)
    assert_leaves(pullback(2.0), [2 * e for e in expected])
    if not isinstance(x, dict):
        np.testing.assert_allclose(s2sad.jacobian(f, wrt)(*args), expected[0], rtol=1e-6, atol=1e-8)
    if second:
        second_order(f, args, wrt, v)


def function(source: str, name: str = "f", **scope: typing.Any) -> typing.Any:
    return make_function(source, {"np": np, **scope}).__globals__[name]
X = np.array([0.3, -0.5, 0.7])
W = np.array([1.5, -0.5, 0.25])
PARAMS = {"b": np.array([0.2, 0.4, -0.3]), "a": np.array([0.6, -0.1, 0.9])}


# ---- for i, k in enumerate(sorted(d)) over a dict of arrays ---------------------------------

KEYED = {
    "enumerate_sorted": "def f(d, w):\n    total = 0.0\n    for i, k in enumerate(sorted(d)):\n"
                        "        total = total + w[i] * np.sum(d[k] ** 2)\n    return total\n",
    "enumerate_dict": "def f(d, w):\n    total = 0.0\n    for i, k in enumerate(d):\n"
                      "        total = total + w[i] * np.sum(np.sin(d[k]) * d[k])\n    return total\n",
    "enumerate_keys_start": "def f(d, w):\n    total = 0.0\n    for i, k in enumerate(sorted(d.keys()), 1):\n"
                            "        total = total + w[i] * np.sum(np.tanh(d[k]) * w)\n    return total\n",
    "sorted_keys": "def f(d, w):\n    total = 0.0\n    for k in sorted(d):\n"
                   "        total = total + np.sum(np.sin(d[k]) * w)\n    return total\n",
    "sorted_in_reverse": "def f(d, w):\n    total = 0.0\n    for i, k in enumerate(sorted(d, reverse=True)):\n"
                         "        total = total * w[i] + np.sum(np.sin(d[k]) * w)\n    return total\n",
    "reversed_sorted": "def f(d, w):\n    total = 0.0\n    for k in reversed(sorted(d)):\n"
                       "        total = total * 0.5 + np.sum(np.sin(d[k]) * w)\n    return total\n",
    "list_of_keys": "def f(d, w):\n    total = 0.0\n    for k in list(d):\n"
                    "        total = total * 0.5 + np.sum(d[k] * w ** 2)\n    return total\n",
    "reversed_items": "def f(d, w):\n    total = 0.0\n    for k, v in reversed(d.items()):\n"
                      "        total = total * 0.5 + np.sum(np.cos(v) * w)\n    return total\n",
}


@pytest.mark.parametrize("name", sorted(KEYED))
@pytest.mark.parametrize("wrt", [0, 1])
def test_loop_over_the_keys_of_a_dict_of_arrays(name: str, wrt: int) -> None:
    """``enumerate`` over a dict's (sorted) keys, ``sorted(d, reverse=True)``, ``reversed(...)``,
    ``list(d)``: the keys and their count carry no gradient, the arrays read by key do (with the
    dict differentiated, the keys were refused as computed from values that carry a gradient)."""
    check(function(KEYED[name]), (PARAMS, W), wrt)



SCALARS = {"a": np.array(3.0), "b": np.array(1.0), "c": np.array(2.0)}
ORDERED = {
    "sorted_values": "def f(d):\n    total = 0.0\n    for v in sorted(d.values()):\n"
                     "        total = total * 0.5 + v ** 2\n    return total\n",
    "sorted_items": "def f(d):\n    total = 0.0\n    for k, v in sorted(d.items()):\n"
                    "        total = total * 0.5 + v ** 2\n    return total\n",
    "sorted_keys": "def f(d):\n    total = 0.0\n    for k in sorted(d):\n"
                   "        total = total * 0.5 + d[k] ** 2\n    return total\n",
}


@pytest.mark.parametrize("name", sorted(ORDERED))
def test_a_loop_over_sorted_values_runs_in_the_order_of_the_values(name: str) -> None:
    """``for v in sorted(d.values())`` ran over the values in the order of their keys (a wrong
    value and gradient where the order matters); sorted keys and items are in key order."""
    check(function(ORDERED[name]), (SCALARS,))


# ---- a function held by an attribute, called through self -----------------------------------

def softplus(z):
    return np.log1p(np.exp(z))


class Layer:
    def __init__(self, W, act=np.tanh):
        self.W = W
        self.act = act

    def __call__(self, x):
        return self.act(self.W @ x)

    def forward(self, x, power=2):
        return np.sum(self.act(self.W @ x) ** power)

    def keyword(self, x):
        return np.sum(self.act(x=self.W @ x))


W0 = np.array([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6]])
HELD = {"ufunc": np.tanh, "rule": np.sinc, "user": softplus, "lambda": lambda z: z ** 3 - np.cos(z)}
layer = Layer(W0)


def called(x):
    return np.sum(layer(x) ** 2)


def through_a_method(x):
    return layer.forward(x, 3)


def made_here(x):
    return np.sum(Layer(W0)(x) ** 2)


def made_here_named(x):
    net = Layer(W0, np.sin)
    return np.sum(net(x) ** 2)


def made_here_method(x):
    return Layer(W0, softplus).forward(x)


@pytest.mark.parametrize("held", sorted(HELD))
@pytest.mark.parametrize("f", [called, through_a_method], ids=["call", "method"])
def test_a_function_held_by_an_attribute(held: str, f: typing.Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``self.act(...)`` with ``self.act`` a ufunc, a function with a rule, a Python function or
    a lambda (it was refused: what the attribute holds has no ``__call__`` written in Python)."""
    monkeypatch.setattr(layer, "act", HELD[held])
    check(f, (X,))


@pytest.mark.parametrize("f", [made_here, made_here_named, made_here_method])
def test_an_instance_made_in_the_function_from_constants_is_called(f: typing.Any) -> None:
    """``Layer(W0)(x)`` and ``net = Layer(W0); net(x)``: the instance's ``__call__`` (it was
    refused: an instance made in the function, whose ``__call__`` was not followed)."""
    check(f, (X,))


def test_the_function_held_is_looked_up_at_each_call() -> None:
    gradient = s2sad.grad(called)
    before = gradient(X)
    held = Layer(W0, np.sin)
    try:
        layer.act = np.sin
        np.testing.assert_allclose(gradient(X), numerical(called, (X,), 0)[0], rtol=1e-6, atol=1e-8)
    finally:
        layer.act = np.tanh
    np.testing.assert_allclose(gradient(X), before)
    assert held.act is np.sin


def test_a_held_function_called_by_keyword() -> None:
    keyword = make_function("def f(x):\n    return net.keyword(x)\n",
                            {"net": Layer(W0, lambda x: np.sin(x) * x)})
    check(keyword, (X,))


def built_from_what_carries_a_gradient(W, x):
    return np.sum(Layer(W)(x) ** 2)


def test_an_instance_built_from_what_carries_a_gradient_is_refused_at_the_constructor() -> None:
    with pytest.raises(s2sad.NoGradientRuleError) as info:
        s2sad.grad(built_from_what_carries_a_gradient)(W0, X)
    where = info.value.location
    line = built_from_what_carries_a_gradient.__code__.co_firstlineno + 1
    assert (where.filename, where.line, where.column) == (__file__, line, 19)
    assert "builds an instance of Layer from values that carry a gradient" in info.value.message
    assert "(layer.forward(W, x))" in info.value.message


class NoRule:
    def __init__(self):
        self.act = np.frexp
        self.scale = 2.0

    def __call__(self, x):
        return self.act(x)[0]

    def scaled(self, x):
        return self.scale(x)


def test_a_held_function_without_a_rule_is_refused_at_the_call() -> None:
    """(the error is found in the function that calls the held one: shown at the user's call)"""
    holder = NoRule()
    f = make_function("def f(x):\n    return np.sum(holder(x))\n", {"np": np, "holder": holder})
    with pytest.raises(s2sad.NoGradientRuleError) as info:
        s2sad.grad(f)(X)
    where = info.value.location
    assert (where.filename, where.line, where.column) == (__file__, NoRule.__call__.__code__.co_firstlineno + 1, 16)
    assert "no gradient rule for 'self.act'" in info.value.message
    g = make_function("def g(x):\n    return np.sum(holder.scaled(x))\n", {"np": np, "holder": holder})
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="holds, which is not a function"):
        s2sad.grad(g)(X)


# ---- static and class methods, through self, type(self) or the class -------------------------

class Model:
    scale = 1.5

    @staticmethod
    def norm(x):
        return np.sum(x ** 2)

    @classmethod
    def f(cls, x):
        return cls.scale * np.sum(np.sin(x))

    def static_through_self(self, x):
        return self.norm(x)

    def class_through_self(self, x):
        return self.f(x) * self.norm(x)

    def class_through_type(self, x):
        return type(self).f(x) + type(self).norm(np.cos(x))

    def through_the_class(self, x):
        return Model.f(x) + Model.norm(x)


class Scaled(Model):
    scale = -0.5

    def static_through_super(self, x):
        return super().norm(x) + super().f(x)


MODEL, SCALED = Model(), Scaled()
METHODS = ["static_through_self", "class_through_self", "class_through_type", "through_the_class"]


@pytest.mark.parametrize("instance, name", [(i, n) for i in (MODEL, SCALED) for n in METHODS]
                         + [(SCALED, "static_through_super")])
def test_static_and_class_methods(instance: Model, name: str) -> None:
    """A ``@staticmethod`` or ``@classmethod`` called through ``self``, ``type(self)``, the
    class or ``super()`` (through ``self`` and ``type(self)`` they were refused: not a method
    defined with 'def'); a class method gets the instance's class."""
    f = make_function(f"def f(x):\n    return instance.{name}(x)\n", {"instance": instance})
    check(f, (X,))


class Scale:
    def __init__(self, c):
        self.c = c

    def f(self, x):
        return self.c * np.sum(x ** 2)


def test_a_method_of_another_object_held_by_an_attribute_gets_its_own_object() -> None:
    """``ns.f(x)`` with ``ns.f`` a method of an object other than ``ns``: the method's object is
    its first argument (the generated code passed ``ns``: a gradient of ``ns.c``'s scale)."""
    holder = Scale(100.0)
    holder.f = Scale(3.0).f
    f = make_function("def f(x):\n    return holder.f(x)\n", {"holder": holder})
    check(f, (X,))


# ---- return inside a loop, and in a loop's else ---------------------------------------------

def _norms(x: np.ndarray, steps: int) -> list[float]:
    """``sum(y ** 2)`` after each step of ``y = 0.8 * sin(y)`` from ``x``."""
    out, y = [], x
    for _ in range(steps):
        y = np.sin(y) * 0.8
        out.append(float(np.sum(y ** 2)))
    return out


# tolerances: converged at the third of five iterations (strictly between two norms), never, at once
TOLERANCES = {"third": sum(_norms(X, 5)[2:4]) / 2, "never": 0.0, "first": 10.0}
RETURNING = {
    "return_in_body": "def f(x):\n    y = x\n    for i in range(5):\n        y = np.sin(y) * 0.8\n"
                      "        if np.sum(y ** 2) < TOL:\n            return np.sum(y * x) * (i + 1)\n"
                      "    return np.sum(y ** 3)\n",
    "for_else_return": "def f(x):\n    y = x\n    for i in range(5):\n        y = np.sin(y) * 0.8\n"
                       "        if np.sum(y ** 2) < TOL:\n            return np.sum(y * x)\n"
                       "    else:\n        return np.sum(y ** 3)\n",
    "for_else_with_break": "def f(x):\n    y = x\n    for i in range(5):\n        y = np.sin(y) * 0.8\n"
                           "        if np.sum(y ** 2) < TOL:\n            break\n"
                           "    else:\n        y = y * x\n        return np.sum(y ** 3)\n"
                           "    return np.sum(np.cos(y) * x)\n",
    "while_else_return": "def f(x):\n    y = x\n    k = 0\n    while k < 5:\n        k += 1\n"
                         "        y = np.sin(y) * 0.8\n        if np.sum(y ** 2) < TOL:\n"
                         "            return np.sum(y * x)\n    else:\n        return np.sum(y ** 3)\n",
    "inner_else_continue": "def f(x):\n    total = 0.0\n    for j in range(2):\n        y = x * (j + 1)\n"
                           "        for i in range(5):\n            y = np.sin(y) * 0.8\n"
                           "            if np.sum(y ** 2) < TOL:\n                break\n"
                           "        else:\n            continue\n        total = total + np.sum(y ** 2)\n"
                           "    return total + np.sum(x ** 3)\n",
    "inner_else_return": "def f(x):\n    for j in range(2):\n        y = x / (j + 1)\n"
                         "        for i in range(5):\n            y = np.sin(y) * 0.8\n"
                         "            if np.sum(y ** 2) < TOL:\n                break\n"
                         "        else:\n            return np.sum(y * x) * (j + 1)\n"
                         "    return np.sum(np.tanh(y) * x)\n",
}


@pytest.mark.parametrize("tolerance", sorted(TOLERANCES))
@pytest.mark.parametrize("name", sorted(RETURNING))
def test_return_inside_a_loop_and_in_its_else(name: str, tolerance: str) -> None:
    """``if converged: return value`` in a loop, and ``for ... else: return``: the adjoint runs
    back from the iteration that returned (the else's return was refused)."""
    check(function(RETURNING[name], TOL=TOLERANCES[tolerance]), (X,))


def test_break_inside_a_loop_else_leaves_the_enclosing_loop() -> None:
    f = function("def f(x):\n    y = x\n    for j in range(3):\n        for i in range(2):\n"
                 "            y = np.sin(y) * 1.1\n        else:\n            if j == 1:\n                break\n"
                 "        y = y * x\n    return np.sum(y ** 2)\n")
    check(f, (X,))


# ---- where an integer argument is refused ---------------------------------------------------

def power_sum(x, n):
    return np.sum(x ** n)


@pytest.mark.parametrize("call", ["hvp", "grad", "value_and_grad", "generic"])
def test_an_integer_wrt_argument_is_refused_at_the_def_line(call: str) -> None:
    """hvp's refusal was located at a line of the generated gradient (``check_wrt(x, "x")``)."""
    run = {"hvp": lambda: s2sad.hvp(power_sum)(3, 2, 1.0),
           "grad": lambda: s2sad.grad(power_sum)(3, 2),
           "value_and_grad": lambda: s2sad.value_and_grad(power_sum)(3, 2),
           "generic": lambda: s2sad.grad(power_sum, specialize=False)(3, 2)}[call]
    with pytest.raises(s2sad.NonDifferentiableInputError) as info:
        run()
    where = info.value.location
    assert (where.filename, where.line, where.column) == (__file__, power_sum.__code__.co_firstlineno, 1)
    assert info.value.message.startswith("cannot differentiate with respect to 'x': it is int")


def scaled_power(z, a1=1.0, receiver=2.0):
    return a1 * z ** 3 + receiver * z


class Named:
    def __init__(self):
        self.act = scaled_power

    def __call__(self, x):
        return np.sum(self.act(x, a1=0.5, receiver=-1.0))


def test_a_held_function_called_with_keywords_named_like_the_callers_parameters() -> None:
    """(the function that calls the held one names its parameters apart from the call's keywords)"""
    f = make_function("def f(x):\n    return self(x)\n", {"self": Named()})
    check(f, (X,))
