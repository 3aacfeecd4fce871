"""Python constructs users write that s2sad refused (found by a probe): ``map``, ``sorted``,
``functools.reduce``, a lambda called where it stands, ``dict.get`` on a parameter dict,
``zip(*rows)``, fields of a named tuple, ``super()`` in a method.  Each is checked against
central finite differences in float64, through grad, value_and_grad, jvp and hvp."""
from __future__ import annotations

import collections
import typing
import warnings

import numpy as np
import pytest

import s2sad

from gradcheck import make_function

X = np.array([0.5, 2.0, 3.0])
V = np.array([1.0, -0.5, 0.25])
PARAMS = [np.array([0.5, -1.0]), np.array([2.0]), np.array([0.3, 0.7, -0.2])]
EPS = 1e-6


def leaves(tree: typing.Any) -> list[np.ndarray]:
    """The float leaves of an argument: arrays (0-d for a float) in a fixed order."""
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [np.asarray(tree, dtype=float)]


def rebuilt(tree: typing.Any, values: list[np.ndarray]) -> typing.Any:
    """``tree`` with its leaves replaced by ``values`` (consumed in the order of ``leaves``)."""
    if isinstance(tree, dict):
        out = {k: rebuilt(tree[k], values) for k in sorted(tree)}
        return {k: out[k] for k in tree}
    if isinstance(tree, (list, tuple)):
        items = [rebuilt(item, values) for item in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    value = values.pop(0)
    return float(value) if isinstance(tree, float) else value


def numerical(f: typing.Any, args: tuple, wrt: int) -> list[np.ndarray]:
    """Central finite differences of ``f`` in each leaf of ``args[wrt]``."""
    base = leaves(args[wrt])
    out = []
    for k, leaf in enumerate(base):
        g = np.zeros(leaf.shape)
        for i in np.ndindex(*leaf.shape):
            values = []
            for step in (EPS, -EPS):
                moved = [b.copy() for b in base]
                moved[k][i] += step
                at = list(args)
                at[wrt] = rebuilt(args[wrt], moved)
                values.append(float(f(*at)))
            g[i] = (values[0] - values[1]) / (2 * EPS)
        out.append(g)
    return out


def check(f: typing.Any, args: tuple, wrt: int = 0, forward: bool = True) -> None:
    """grad and value_and_grad (twice: the second call runs the cached code) against finite
    differences; the gradient has the structure and type of the argument; with ``forward``,
    jvp along V and hvp against differences of the gradient."""
    expected = numerical(f, args, wrt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", s2sad.ZeroGradientWarning)
        for _ in range(2):
            g = s2sad.grad(f, wrt)(*args)
            value, h = s2sad.value_and_grad(f, wrt)(*args)
            assert value == pytest.approx(f(*args))
            for got in (g, h):
                assert type(got) is type(args[wrt])
                for a, b in zip(leaves(got), expected):
                    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    if not forward:
        return
    x = args[wrt]
    moved = lambda t: tuple(x + t * V if i == wrt else a for i, a in enumerate(args))  # noqa: E731
    slope = (f(*moved(EPS)) - f(*moved(-EPS))) / (2 * EPS)
    assert s2sad.jvp(f, wrt)(*args, V)[1] == pytest.approx(slope, rel=1e-6, abs=1e-8)
    gradient = s2sad.grad(f, wrt)
    expected_hv = (gradient(*moved(1e-5)) - gradient(*moved(-1e-5))) / 2e-5
    with warnings.catch_warnings():  # (a function linear in x: its Hessian is zero)
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        hv = s2sad.hvp(f, wrt)(*args, V)
    np.testing.assert_allclose(hv, expected_hv, rtol=1e-5, atol=1e-7)


def function(source: str, name: str = "f", **scope: typing.Any) -> typing.Any:
    return make_function(source, {"np": np, **scope}).__globals__[name]


def located(error: s2sad.S2SADError) -> tuple[int, int]:
    assert error.location is not None
    return error.location.line, error.location.column


# ---- map ---------------------------------------------------------------------------------

MAPS = {
    "sum_of_map_lambda": "def f(params):\n    return sum(map(lambda w: np.sum(w ** 2), params))\n",
    "list_of_map_named": ("def sq(w):\n    return np.sum(np.sin(w) * w)\n\n\n"
                          "def f(params):\n    return sum(list(map(sq, params)))\n"),
    "map_of_numpy_function": "def f(params):\n    return sum(map(np.sum, params)) ** 2\n",
    "map_reading_a_variable": ("def f(params):\n    s = params[0][0]\n"
                               "    return sum(map(lambda w: np.sum(w * s), params))\n"),
    "map_of_two_sequences": ("def f(params):\n    scales = [1.0, 2.0, 3.0]\n"
                             "    return sum(map(lambda w, c: c * np.sum(w ** 3), params, scales))\n"),
    "for_over_map": ("def f(params):\n    total = 0.0\n    for v in map(np.tanh, params):\n"
                     "        total = total + np.sum(v ** 2)\n    return total\n"),
    "tuple_of_map": "def f(params):\n    a, b, c = tuple(map(np.sum, params))\n    return a * b + c\n",
}


@pytest.mark.parametrize("name", sorted(MAPS))
def test_map(name: str) -> None:
    """``map(f, xs)`` with a lambda, a named function or a NumPy function (it was refused: no
    gradient rule for 'map')."""
    check(function(MAPS[name]), (list(PARAMS),), forward=False)


def test_map_over_an_array_forward_and_second_order() -> None:
    f = function("def f(x):\n    return sum(map(lambda t: t ** 3, x))\n")
    check(f, (X,))


def test_map_shadowed_is_not_the_builtin() -> None:
    """A module-level ``map`` of the user's is called as the function it is."""
    f = function("def map(g, xs):\n    return xs * 2.0\n\n\n"
                 "def f(x):\n    return np.sum(map(np.sin, x))\n")
    check(f, (X,))


# ---- a lambda called where it stands -------------------------------------------------------

LAMBDAS = {
    "called": "def f(x):\n    return np.sum((lambda z: z ** 2)(x))\n",
    "reads_a_variable": "def f(x):\n    s = x[0] * 2\n    return np.sum((lambda z: np.sin(z) * s)(x))\n",
    "two_parameters": "def f(x):\n    return (lambda a, b: np.sum(a * b))(x, x ** 2)\n",
}


@pytest.mark.parametrize("name", sorted(LAMBDAS))
def test_immediately_called_lambda(name: str) -> None:
    """``(lambda z: ...)(x)`` (refused as 'a local variable (or an unknown name)')."""
    check(function(LAMBDAS[name]), (X,))


# ---- sorted and functools.reduce -----------------------------------------------------------

SORTS = {
    "key_lambda": ("def f(x):\n    xs = [x[0], x[1] * 2, x[2] - 1]\n"
                   "    ys = sorted(xs, key=lambda t: -t)\n    return ys[0] * 3 + ys[1] ** 2\n"),
    "plain": "def f(x):\n    ys = sorted([x[0] ** 2, x[1], x[2] * 0.1])\n    return ys[0] * 3 + ys[2]\n",
    "reverse": "def f(x):\n    ys = sorted(x, reverse=True)\n    return ys[0] * 5 + ys[1] ** 2 + ys[2]\n",
    "key_reads_a_variable": ("def f(x):\n    c = x[1]\n    ys = sorted(x, key=lambda t: (t - c) ** 2)\n"
                             "    return ys[0] * 4 + ys[1] * 2 + ys[2]\n"),
    "key_named": "def f(x):\n    ys = sorted(list(x), key=abs)\n    return ys[0] * 4 + ys[-1] ** 2\n",
}


@pytest.mark.parametrize("name", sorted(SORTS))
def test_sorted(name: str) -> None:
    """``sorted`` of items that carry gradients: each item's gradient where the sort put it
    (it was refused: no gradient rule for 'sorted')."""
    check(function(SORTS[name]), (X,))


EXTREMES = {
    "max_key_abs": "def f(x):\n    return max(x[0], x[1] ** 2, x[2] - 3.0, key=abs) * x[0]\n",
    "min_key_lambda_arrays": ("def f(x):\n    cands = [x * 2.0, x ** 2, np.sin(x)]\n"
                              "    best = min(cands, key=lambda c: np.sum(c ** 2))\n    return np.sum(best * x)\n"),
    "max_key_picks_a_pair": ("def f(x):\n    pairs = [(x[0], 1.0), (x[1], 2.0)]\n"
                             "    v, w = max(pairs, key=lambda p: p[1])\n    return v * w + x[2] ** 2\n"),
    "min_key_ties_take_the_first": "def f(x):\n    return min([x[0], x[1], x[2]], key=lambda t: 0.0) * x[2]\n",
    "max_key_ties_take_the_first": "def f(x):\n    return max(x[1], x[0], key=lambda t: 1.0) * x[2] ** 2\n",
}


@pytest.mark.parametrize("name", sorted(EXTREMES))
def test_max_and_min_with_key(name: str) -> None:
    """``max(xs, key=k)`` is the first item of ``sorted(xs, key=k, reverse=True)`` (it was
    refused: no rule for max's argument 'key')."""
    check(function(EXTREMES[name]), (X,))


def test_sorted_list_of_arrays_by_norm() -> None:
    f = function("def f(params):\n    ranked = sorted(params, key=lambda w: float(np.sum(w ** 2)))\n"
                 "    return np.sum(ranked[0]) * 3.0 + np.sum(ranked[-1] ** 2)\n")
    check(f, (list(PARAMS),), forward=False)


REDUCES = {
    "lambda": ("import functools\n\n\ndef f(params):\n"
               "    return functools.reduce(lambda a, b: a + b, [np.sum(w ** 2) for w in params])\n"),
    "operator_add": ("import functools\nimport operator\n\n\ndef f(params):\n"
                     "    return functools.reduce(operator.add, map(np.sum, params)) ** 2\n"),
    "product_with_initial": ("from functools import reduce\n\n\ndef f(params):\n"
                             "    return reduce(lambda a, w: a * np.sum(np.tanh(w)), params, 1.5)\n"),
    "arrays_folded": ("import functools\n\n\ndef f(params):\n"
                      "    total = functools.reduce(lambda a, b: a + np.sum(b), params[1:], np.sum(params[0]))\n"
                      "    return total ** 2\n"),
}


@pytest.mark.parametrize("name", sorted(REDUCES))
def test_reduce(name: str) -> None:
    """``functools.reduce`` as the loop that folds (it was refused: no gradient rule)."""
    check(function(REDUCES[name]), (list(PARAMS),), forward=False)


def test_reduce_forward_and_second_order() -> None:
    f = function("import functools\n\n\ndef f(x):\n"
                 "    return functools.reduce(lambda a, b: a * b + np.sin(b), x)\n")
    check(f, (X,))


# ---- dict.get on a dict of arrays ----------------------------------------------------------

GETS = {
    "present": "def f(params):\n    return np.sum(params['W'] ** 2) + np.sum(params.get('b', 0.0) * params['W'])\n",
    "absent": "def f(params):\n    return np.sum(params['W'] ** 2) + np.sum(params.get('c', 0.5))\n",
    "no_default": ("def f(params):\n    b = params.get('b')\n    if b is None:\n        return np.sum(params['W'])\n"
                   "    return np.sum(np.tanh(b)) * np.sum(params['W'] ** 3)\n"),
    "key_computed": ("def f(params):\n    name = 'b'\n    total = 0.0\n    for k in ['W', 'b', 'c']:\n"
                     "        total = total + np.sum(params.get(k, 1.0) ** 2)\n    return total\n"),
}


@pytest.mark.parametrize("name", sorted(GETS))
def test_dict_get_on_a_parameter(name: str) -> None:
    """``params.get(key, default)`` on a parameter dict, whose keys are known when the code
    runs (it was refused: '.get' is not a NumPy array method)."""
    params = {"W": np.array([0.5, -1.0, 2.0]), "b": np.array([0.3, 0.1, -0.4])}
    check(function(GETS[name]), (params,), forward=False)
    check(function(GETS[name]), ({"W": params["W"]},), forward=False)


def test_dict_get_on_something_else_is_refused_where_called() -> None:
    class Store:
        def get(self, key, default):
            return default

    f = function("def f(x, store):\n    return np.sum(x * store.get('b', 2.0))\n")
    with pytest.raises(s2sad.S2SADError, match="differentiated as dict.get, but .* is a Store") as info:
        s2sad.grad(f)(X, Store())
    assert located(info.value) == (2, 23)


# ---- zip(*rows) ----------------------------------------------------------------------------

ZIPS = {
    "loop_over_known_rows": ("def f(x):\n    rows = [(x[0], x[1]), (x[2], x[0] * 2)]\n    s = 0.0\n"
                             "    for a, b in zip(*rows):\n        s = s + a * b\n    return s\n"),
    "comprehension": ("def f(x):\n    rows = [(x[0], x[1], x[2]), (x[2], x[0] ** 2, x[1])]\n"
                      "    return sum([a * b for a, b in zip(*rows)])\n"),
    "rows_of_a_parameter": ("def f(x, rows):\n    return sum([np.sin(a * x[0]) * b for a, b in zip(*rows)]) + x[1] ** 2\n"),
    "three_rows_transposed": ("def f(x):\n    rows = [x, x ** 2, np.sin(x)]\n    s = 0.0\n"
                              "    for a, b, c in zip(*rows):\n        s = s + a * b * c\n    return s\n"),
}


@pytest.mark.parametrize("name", sorted(ZIPS))
def test_zip_of_rows(name: str) -> None:
    """``zip(*rows)`` in a for loop or comprehension (it was refused: 'use for a, b in zip(xs, ys)')."""
    rows = [np.array([1.0, 2.0, -1.0]), np.array([0.5, 0.25, 3.0])]
    check(function(ZIPS[name]), (X, rows) if "parameter" in name else (X,))


def test_zip_of_rows_of_another_length_is_refused_as_it_runs() -> None:
    """With rows of three items, Python fails to unpack each item into two names."""
    f = function("def f(x, rows):\n    s = 0.0\n    for a, b in zip(*rows):\n        s = s + a * b * x[0]\n"
                 "    return s\n")
    rows = [np.ones(3), np.ones(3), np.ones(3)]
    with pytest.raises(s2sad.S2SADError, match="items of 3 values here, which the loop unpacks into 2") as info:
        s2sad.grad(f)(X, rows)
    assert located(info.value) == (3, 21)


def test_zip_of_rows_into_one_name_is_their_transpose() -> None:
    f = function("def f(x, rows):\n    s = 0.0\n    for pair in zip(*rows):\n        s = s + pair[0] * x[0]\n"
                 "    return s\n")
    rows = [np.array([1.0, 2.0, 4.0]), np.array([0.5, -1.0])]  # (zip stops at the shorter row)
    np.testing.assert_allclose(s2sad.grad(f)(X, rows), [3.0, 0.0, 0.0])
    grads = s2sad.grad(f, 1)(X, rows)
    np.testing.assert_allclose(grads[0], [X[0], X[0], 0.0])
    np.testing.assert_allclose(grads[1], [0.0, 0.0])


def test_zip_of_one_sequence_into_one_name_is_refused() -> None:
    """``for p in zip(xs)``: p is a 1-tuple; the loop read it as the item (an IndexError in the
    generated code)."""
    f = function("def f(x):\n    s = 0.0\n    for p in zip(x):\n        s = s + p[0] ** 2\n    return s\n")
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="for a, b in zip") as info:
        s2sad.grad(f)(X)
    assert located(info.value) == (3, 14)


# ---- super() in a method -------------------------------------------------------------------

class Base:
    def __init__(self, scale: float) -> None:
        self.scale = scale

    def loss(self, x):
        return np.sum(np.sin(x) * x) * self.scale

    def penalty(self, x):
        return np.sum(x ** 4)


class Regularised(Base):
    def loss(self, x):
        return super().loss(x) * 2.0 + self.penalty(x)


class Mixin(Base):
    def loss(self, x):
        return super().loss(x ** 2) + np.sum(np.cos(x))


class Diamond(Regularised, Mixin):
    def loss(self, x):
        return super().loss(x) + 0.5


class Heavier(Regularised):
    def penalty(self, x):
        return np.sum(x ** 2) * 3.0


@pytest.mark.parametrize("cls", [Regularised, Diamond, Heavier])
def test_super_method_called_through_a_bound_method(cls: type) -> None:
    """``super().loss(x)`` in a method: the next class's method in the instance's MRO, as
    Python finds it (Diamond reaches Mixin.loss from Regularised), differentiated (it was
    refused: '.loss' is not a NumPy array method)."""
    model = cls(0.7)
    check(model.loss, (X,))


def test_super_of_a_static_method_is_called() -> None:
    """(``super().loss`` a staticmethod holding a lambda was refused: not a method defined with
    'def'; tests/test_lang9_constructs.py has the static and class methods)"""
    class Static(Base):
        loss = staticmethod(lambda x: np.sum(x ** 3))

    class Child(Static):
        def loss(self, x):
            return super().loss(x) * 2.0

    check(Child(1.0).loss, (X,))


# ---- fields of named tuples ----------------------------------------------------------------

Layer = collections.namedtuple("Layer", ["W", "b"])


class Typed(typing.NamedTuple):
    W: np.ndarray
    b: np.ndarray
    scale: float


Stats = collections.namedtuple("Stats", ["mean", "std"])

NAMED = {
    "fields_named_like_array_methods": ("def f(s, x):\n    return np.sum(((x - s.mean) / s.std) ** 2)\n",
                                        lambda: Stats(X * 0.1, X + 0.5)),
    "namedtuple": ("def f(p, x):\n    return np.sum(np.tanh(x @ p.W + p.b) ** 2)\n", lambda: Layer(
        np.array([[0.5, -1.0], [2.0, 0.3], [0.1, 0.2]]), np.array([0.1, -0.2]))),
    "typing_namedtuple": ("def f(p, x):\n    h = np.tanh(x @ p.W + p.b) * p.scale\n    return np.sum(h ** 2)\n",
                          lambda: Typed(np.array([[0.5, -1.0], [2.0, 0.3], [0.1, 0.2]]), np.array([0.1, -0.2]), 1.5)),
    "field_and_index": ("def f(p, x):\n    return np.sum(p.W ** 2) * np.sum(p[1] * p.b)\n", lambda: Layer(
        np.array([[0.5, -1.0], [2.0, 0.3], [0.1, 0.2]]), np.array([0.1, -0.2]))),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_tuple_fields(name: str) -> None:
    """``p.W`` on a named tuple parameter: its gradient is a named tuple of p's type (it was
    refused: '.W' is not a NumPy array method)."""
    source, make = NAMED[name]
    f = function(source)
    check(f, (make(), X), 0, forward=False)
    g = s2sad.grad(f)(make(), X)
    assert type(g) is type(make()) and g._fields == make()._fields


def test_named_tuple_fields_forward_and_second_order() -> None:
    f = function("def f(p, x):\n    return np.sum(np.sin(p.W * x) * p.b)\n")
    p, t = Layer(X, X ** 2), Layer(V, -V)
    eps = 1e-6
    moved = lambda s: Layer(p.W + s * t.W, p.b + s * t.b)  # noqa: E731
    slope = (f(moved(eps), X) - f(moved(-eps), X)) / (2 * eps)
    assert s2sad.jvp(f)(p, X, t)[1] == pytest.approx(slope, rel=1e-6)
    gradient = s2sad.grad(f)
    hv = s2sad.hvp(f)(p, X, t)
    assert type(hv) is Layer
    for k in range(2):
        expected = (gradient(moved(1e-5), X)[k] - gradient(moved(-1e-5), X)[k]) / 2e-5
        np.testing.assert_allclose(hv[k], expected, rtol=1e-5, atol=1e-7)


def test_attribute_of_a_constant_object_runs_as_written() -> None:
    class Config:
        scale = 3.0

    f = function("def f(x, cfg):\n    return np.sum(x ** 2) * cfg.scale\n")
    check(f, (X, Config()))


def test_fields_of_a_numpy_result() -> None:
    """NumPy's results are named tuples too (np.linalg.qr's QRResult, eigh's EighResult)."""
    f = function("def f(x):\n    r = np.linalg.qr(np.outer(x, x) + np.diag(x))\n"
                 "    e = np.linalg.eigh(np.outer(x, x) + np.eye(3))\n"
                 "    return np.sum(r.Q * r.R) + np.sum(e.eigenvalues ** 2)\n")
    check(f, (X,), forward=False)


def test_gradient_with_respect_to_a_dataclass_is_refused() -> None:
    """A frozen dataclass is no container s2sad builds gradients of: refused as the argument."""
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Params:
        W: np.ndarray

    f = function("def f(p):\n    return np.sum(p.W ** 2)\n")
    with pytest.raises(s2sad.NonDifferentiableInputError, match="'p': it is the dataclass Params, .* typing.NamedTuple"):
        s2sad.grad(f)(Params(X))


# ---- over a dict: its keys, which carry no gradient ----------------------------------------

OVER_KEYS = {
    "sorted": "def f(params):\n    names = sorted(params)\n    return np.sum(params['W'] ** 2) * len(names)\n",
    "reduce": ("import functools\n\n\ndef f(params):\n"
               "    return functools.reduce(lambda a, k: a + len(k), params, 0.0) * np.sum(params['W'] ** 3)\n"),
    "map": "def f(params):\n    return sum(map(len, params)) * np.sum(np.sin(params['W']))\n",
}


@pytest.mark.parametrize("name", sorted(OVER_KEYS))
def test_functional_builtins_over_a_dict_see_its_keys(name: str) -> None:
    """``sorted(d)``, ``map(f, d)`` and ``reduce(f, d)`` see the dict's keys, as in Python (a
    loop by index read d[0]: a KeyError in the generated code)."""
    params = {"W": np.array([0.5, -1.0, 2.0]), "bias": np.array([0.3])}
    check(function(OVER_KEYS[name]), (params,), forward=False)


# ---- iterators bound to a name -------------------------------------------------------------

def test_generator_read_twice_is_refused() -> None:
    """A generator is used up by its first reader: lowered as a list, the second sum read it
    full (a gradient twice the true one, silently)."""
    f = function("def f(x):\n    g = (v * 2 for v in x)\n    a = sum(g)\n    b = sum(g)\n    return a + b\n")
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="a generator bound to a name is an iterator") as info:
        s2sad.grad(f)(X)
    assert located(info.value)[0] == 2


def test_generator_read_by_each_iteration_of_a_loop_is_refused() -> None:
    f = function("def f(x):\n    m = map(np.sin, x)\n    s = 0.0\n    for k in range(2):\n"
                 "        s = s + sum(m)\n    return s\n")
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="a map object bound to a name") as info:
        s2sad.grad(f)(X)
    assert located(info.value) == (2, 9)


ITERATORS_READ_ONCE = {
    "generator": "def f(x):\n    g = (v * 2 for v in x)\n    return sum(g) * x[0]\n",
    "map": "def f(x):\n    m = map(np.sin, x)\n    return sum(m) * x[0]\n",
    "map_made_in_the_loop": ("def f(x):\n    s = 0.0\n    for k in range(2):\n        m = map(np.sin, x * k)\n"
                             "        s = s + sum(m)\n    return s\n"),
}


@pytest.mark.parametrize("name", sorted(ITERATORS_READ_ONCE))
def test_iterator_bound_to_a_name_and_read_once(name: str) -> None:
    check(function(ITERATORS_READ_ONCE[name]), (X,))


def test_lambda_reading_the_function_passed_to_a_python_function() -> None:
    """A lambda reading x passed to a Python function was refused; the callee is now compiled
    for it (here it ignores it: x's gradient comes from the value returned)."""
    check(function("def apply(g, x):\n    return x\n\n\ndef f(x):\n    return np.sum(apply(lambda z: z * x, x) ** 2)\n"), (X,))


def test_lambda_passed_elsewhere_is_refused_with_what_works() -> None:
    f = function("def f(x):\n    fs = [lambda z: z * x]\n    return np.sum(fs[0](x))\n")
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="called where it stands, passed to map, functools.reduce or sorted, or passed to a named parameter of a Python function") as info:
        s2sad.grad(f)(X)
    assert located(info.value) == (2, 11)


def test_list_of_named_tuple_layers() -> None:
    """``for layer in layers: h = np.tanh(h @ layer.W + layer.b)``: a list of named tuples, whose
    gradient is a list of named tuples."""
    f = function("def f(layers, x):\n    h = x\n    for layer in layers:\n"
                 "        h = np.tanh(h @ layer.W + layer.b)\n    return np.sum(h ** 2)\n")
    rng = np.random.default_rng(0)
    layers = [Layer(rng.normal(size=(3, 4)), rng.normal(size=4)), Layer(rng.normal(size=(4, 2)), rng.normal(size=2))]
    check(f, (layers, rng.normal(size=(5, 3))), forward=False)
    assert all(type(layer) is Layer for layer in s2sad.grad(f)(layers, rng.normal(size=(5, 3))))


GENERIC = {
    "map": (MAPS["map_reading_a_variable"], lambda: (list(PARAMS),)),
    "sorted": (SORTS["key_reads_a_variable"], lambda: (X,)),
    "reduce": (REDUCES["product_with_initial"], lambda: (list(PARAMS),)),
    "lambda": (LAMBDAS["reads_a_variable"], lambda: (X,)),
    "dict_get": (GETS["present"], lambda: ({"W": X, "b": X ** 2},)),
    "zip": (ZIPS["rows_of_a_parameter"], lambda: (X, [X, X ** 2])),
    "namedtuple": (NAMED["namedtuple"][0], lambda: (NAMED["namedtuple"][1](), X)),
}


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_without_specialisation(name: str) -> None:
    """The generic code (specialize=False) gives the same gradients as finite differences."""
    source, make = GENERIC[name]
    f = function(source)
    args = make()
    g = s2sad.grad(f, specialize=False)(*args)
    for a, b in zip(leaves(g), numerical(f, args, 0)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_zip_of_a_dicts_keys_is_refused_as_it_runs() -> None:
    """``zip(*d)`` zips a dict's keys: passing ``d[0], d[1]`` would read its values."""
    f = function("def f(x, rows):\n    s = 0.0\n    for a, b in zip(*rows):\n        s = s + x[0]\n    return s\n")
    with pytest.raises(s2sad.S2SADError, match="zip\\(\\*d\\) of a dict zips its keys") as info:
        s2sad.grad(f)(X, {0: X, 1: X})
    assert located(info.value) == (3, 21)
