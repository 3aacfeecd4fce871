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
    return tree * factor


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
}


@pytest.mark.parametrize("name", sorted(KEYED))
@pytest.mark.parametrize("wrt", [0, 1])
def test_loop_over_the_keys_of_a_dict_of_arrays(name: str, wrt: int) -> None:
    """``enumerate`` over a dict's (sorted) keys: the keys and their count carry no gradient, the
    arrays read by key do (with the dict differentiated, the keys were refused as computed from
    values that carry a gradient)."""
    check(function(KEYED[name]), (PARAMS, W), wrt)
