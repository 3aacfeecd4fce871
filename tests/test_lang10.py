"""Python forms users write that s2sad refused (lang10): ``with np.errstate(...)`` and
``with warnings.catch_warnings()`` around differentiated code.  Each supported form is
checked against central finite differences in float64 (through grad, value_and_grad, jvp,
vjp, hvp, hessian, jacobian, grad of grad and ``jit="auto"``), with respect to each of two
arguments and to both at once; the forms still refused are refused at their line and column."""
from __future__ import annotations

import typing
import warnings

import numpy as np
import pytest

import s2sad

from test_lang9_constructs import assert_leaves, check, function, numerical

X = np.array([0.3, -0.5, 0.7])
W = np.array([1.5, 0.5, 0.25])


def check_both(f: typing.Any, args: tuple) -> None:
    """``f`` in each of its first two arguments, and in both at once."""
    for wrt in (0, 1):
        check(f, args, wrt)
    both = s2sad.grad(f, (0, 1))(*args)
    for g, wrt in zip(both, (0, 1)):
        assert_leaves(g, numerical(f, args, wrt))


def refused_at(f: typing.Any, line: int, column: int, text: str) -> None:
    """``grad(f)`` is refused at ``line`` (of ``f``'s source) and ``column``, saying ``text``."""
    with pytest.raises(s2sad.S2SADError, match=text) as info:
        s2sad.grad(f)(W, X)
    where = info.value.location
    assert (where.line, where.column) == (f.__code__.co_firstlineno + line - 1, column)


# ---- with np.errstate(...), with warnings.catch_warnings() ----------------------------------

WITH = {
    "errstate": "def f(w, x):\n    with np.errstate(divide='ignore', invalid='ignore'):\n"
                "        y = np.log(w) * x\n        z = np.sum(y / (x + 2.0))\n    return z * w[0]\n",
    "catch_warnings": "def f(w, x):\n    with warnings.catch_warnings():\n"
                      "        warnings.simplefilter('ignore', RuntimeWarning)\n"
                      "        y = np.sqrt(w) * np.sin(x)\n    return np.sum(y * w)\n",
    "in_a_loop": "def f(w, x):\n    total = 0.0\n    for i in range(3):\n"
                 "        with np.errstate(over='ignore'):\n            y = np.exp(w * i) * x\n"
                 "            total = total + np.sum(y * y)\n    return total\n",
    "a_loop_inside": "def f(w, x):\n    with np.errstate(all='ignore'), warnings.catch_warnings():\n"
                     "        for i in range(2):\n            x = np.tanh(x * w)\n"
                     "        if np.sum(x) > 0:\n            x = x * w\n    return np.sum(x ** 2)\n",
    "nested": "def f(w, x):\n    y = w * x\n    with np.errstate(divide='ignore'):\n        z = y / w\n"
              "        with np.errstate(invalid='ignore'):\n            z = z * np.cos(y)\n"
              "    return np.sum(z * x)\n",
}


def logged(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        y = np.log(w) * x
        z = y * w
    return z


WITH["in_a_callee"] = "def f(w, x):\n    return np.sum(logged(w, x) * logged(x * x + 1.0, w))\n"


@pytest.mark.parametrize("name", sorted(WITH))
def test_with_a_warning_context(name: str) -> None:
    """The block is differentiated as if the ``with`` were not there."""
    check_both(function(WITH[name], warnings=warnings, logged=logged), (W, X))


def test_the_context_stands_around_the_forward_and_backward_code() -> None:
    f = function(WITH["errstate"], warnings=warnings)
    text = s2sad.adjoint_source(f, (0, 1))
    forward, backward = text.split("seed(")
    assert "with np.errstate(divide='ignore', invalid='ignore'):\n        log_w = np.log(w)" in forward
    assert "    with np.errstate(divide='ignore', invalid='ignore'):\n" in backward


def test_the_forward_code_gives_no_warning_the_context_silences() -> None:
    """``1.0 / k`` divides by zero: the function warns nothing, nor must its gradient."""
    f = function("def f(w, k):\n    with np.errstate(divide='ignore'):\n        r = 1.0 / k\n"
                 "    return np.sum(w ** 2 * np.minimum(r, 10.0))\n")
    k = np.array([0.0, 2.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(W, k)
        np.testing.assert_allclose(s2sad.grad(f)(W, k), 2 * W * [10.0, 0.5, 0.25])
        np.testing.assert_allclose(s2sad.hvp(f)(W, k, X), 2 * X * [10.0, 0.5, 0.25])


def test_the_backward_code_sets_the_warnings_filters_too() -> None:
    """Where w is 0, the gradient of sqrt(w) * 0 divides by zero (nan, as NumPy computes it): the
    filter set in the block silences that in the backward code too."""
    f = function("def f(w, x):\n    with warnings.catch_warnings():\n        warnings.simplefilter('ignore', RuntimeWarning)\n"
                 "        y = np.sqrt(w) * x\n    return np.sum(y)\n", warnings=warnings)
    text = s2sad.adjoint_source(f)
    assert text.count("warnings.simplefilter('ignore', RuntimeWarning)") == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = s2sad.grad(f)(np.array([0.0, 4.0]), np.array([0.0, 1.0]))
    assert np.isnan(g[0]) and g[1] == 0.25


def return_in_with(w: np.ndarray, x: np.ndarray) -> float:
    with np.errstate(divide="ignore"):
        return np.sum(w / x)


def open_file(w: np.ndarray, x: np.ndarray) -> float:
    with open(__file__) as fh:
        fh.read()
    return np.sum(w * x)


def local_argument(w: np.ndarray, x: np.ndarray) -> float:
    mode = "ignore"
    with np.errstate(divide=mode):
        y = w / x
    return np.sum(y)


def named_context(w: np.ndarray, x: np.ndarray) -> float:
    with warnings.catch_warnings(record=True) as caught:
        y = w / x
    return np.sum(y) + len(caught)


def test_a_with_block_that_returns_runs_as_written():
    # (probe10: the body of a with that returns is lowered without the with)
    check_both(return_in_with, (W, X + 2.0))


@pytest.mark.parametrize("f, line, text", [
    (open_file, 2, "only 'with np.errstate"),
    (local_argument, 3, "only 'with np.errstate"),
    (named_context, 2, "without 'as'"),
])
def test_other_with_forms_are_refused_where_they_stand(f: typing.Any, line: int, text: str) -> None:
    refused_at(f, line, 5, text)


# ---- [x] * n, (x,) * n: a list or tuple repeated -----------------------------------------

REPEATED = {
    "list": "def f(w, x, n):\n    ws = [w] * 3\n    return np.sum(ws[0] * ws[2] * x)\n",
    "pair": "def f(w, x, n):\n    ws = [w, x] * 2\n    return np.sum(np.sin(ws[0]) * ws[3] * ws[2])\n",
    "count_first": "def f(w, x, n):\n    ws = 2 * [w, np.cos(x)]\n    return np.sum(ws[0] * ws[3] * ws[1])\n",
    "tuple_in_a_loop": "def f(w, x, n):\n    total = 0.0\n    for i, v in enumerate((w * x,) * 3):\n"
                       "        total = total + np.sum(v * w ** i)\n    return total\n",
    "count_at_run_time": "def f(w, x, n):\n    ws = [w, x * w] * n\n    return np.sum(sum(ws) * w)\n",
    "none": "def f(w, x, n):\n    ws = [w] * (n - 2) + [x]\n    return np.sum(sum(ws) * w)\n",
    "nested": "def f(w, x, n):\n    ws = [[w, x]] * 2\n    return np.sum(ws[0][0] * ws[1][1] * ws[1][0])\n",
    "a_list_by_name": "def f(w, x, n):\n    ws = [w, x]\n    more = ws * n\n    return np.sum(more[0] * more[-1] * more[1])\n",
}


@pytest.mark.parametrize("name", sorted(REPEATED))
def test_a_repeated_list_or_tuple(name: str) -> None:
    """Each item's gradient is the sum over its copies (n = 2 passed as an int)."""
    check_both(function(REPEATED[name]), (W, X, 2))


def times_an_array(w: np.ndarray, x: np.ndarray) -> float:
    return np.sum(x * [1.0, 2.0, 3.0] * w)


def test_a_list_times_a_value_that_carries_a_gradient_is_refused() -> None:
    """``w * [1.0, 2.0]`` is NumPy arithmetic, not a repetition: refused where it stands."""
    refused_at(times_an_array, 2, 19, "a list or tuple times a value that carries a gradient")
    with pytest.raises(s2sad.S2SADError, match=r"only as a repetition \(\[x\] \* n, n an int\)"):
        s2sad.grad(function("def f(w, k):\n    return np.sum([w] * k)\n"))(W, X)


# ---- {**d, "k": v}, dict(d, k=v): dicts merged ---------------------------------------------

PARAMS = {"b": np.array([0.2, 0.4, -0.3]), "a": np.array([0.6, -0.1, 0.9])}

MERGED = {
    "star": "def f(w, x):\n    d = {'a': w * x}\n    e = {**d, 'k': x}\n    return np.sum(e['a'] * e['k'])\n",
    "replaced": "def f(w, x):\n    d = {'a': w, 'b': x}\n    e = {**d, 'a': x * x}\n    return np.sum(e['a'] * e['b'] * w)\n",
    "keywords": "def f(w, x):\n    d = {'a': w}\n    e = dict(d, k=np.sin(x), a=w * x)\n    return np.sum(e['a'] * e['k'])\n",
    "two_stars": "def f(w, x):\n    d = {'a': w}\n    e = {'b': x, 'a': x}\n    m = {**d, **e, 'c': w * x}\n"
                 "    return np.sum(m['a'] * m['b'] * m['c'])\n",
    "in_a_loop": "def f(w, x):\n    d = {'a': w, 'b': x}\n    for i in range(3):\n        d = {**d, 'a': d['a'] * x}\n"
                 "    return np.sum(d['a'] * d['b'])\n",
    "copied": "def f(w, x):\n    d = {'a': w}\n    m = {**d}\n    return np.sum(m['a'] ** 2 * x)\n",
    "double_star_keywords": "def f(w, x):\n    d = {'a': w}\n    e = {'a': x * w, 'b': x}\n    m = dict(d, c=w, **e)\n"
                            "    return np.sum(m['a'] * m['b'] * m['c'])\n",
    "only_double_star": "def f(w, x):\n    e = {'b': w * x}\n    m = dict(**e)\n    return np.sum(m['b'] ** 2)\n",
}


@pytest.mark.parametrize("name", sorted(MERGED))
def test_dicts_merged(name: str) -> None:
    """A key a later part replaces gets no gradient from the merged dict."""
    check_both(function(MERGED[name]), (W, X))


@pytest.mark.parametrize("source", [
    "def f(p, w):\n    q = {**p, 'c': w}\n    return sum(np.sum(v ** 2) for v in q.values()) * np.sum(q['a'] * w)\n",
    "def f(p, w):\n    q = dict(p, b=w * p['b'])\n    return np.sum(q['a'] * q['b'])\n",
])
def test_a_dict_argument_merged(source: str) -> None:
    """The gradient with respect to the dict is a dict (its key 'b' replaced: zero there)."""
    check_both(function(source), (PARAMS, W))


def key_from_a_variable(w: np.ndarray, x: np.ndarray) -> float:
    d = {"a": w}
    key = "b"
    m = {**d, key: x}
    return np.sum(m["a"] * m["b"])


def pairs_and_keywords(w: np.ndarray, x: np.ndarray) -> float:
    m = dict([("a", w)], b=x)
    return np.sum(m["a"] * m["b"])


def test_merges_s2sad_cannot_follow_are_refused() -> None:
    refused_at(key_from_a_variable, 4, 15, "dict keys must be string literals")
    refused_at(pairs_and_keywords, 2, 9, "does not differentiate dict with argument 'b'")


# ---- for layer in self.layers: x = layer(x) ------------------------------------------------

class Scale:
    """A layer: its ``__call__`` is written in Python and reads constant attributes."""

    def __init__(self, a: float) -> None:
        self.a = a

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(self.a * x) + self.shift(x)

    def shift(self, x: np.ndarray) -> np.ndarray:
        return 0.1 * x ** 2


def doubled(z: np.ndarray) -> np.ndarray:
    return 2.0 * np.sin(z)


class Net:
    def __init__(self, layers: list) -> None:
        self.layers = layers

    def loss(self, w: np.ndarray, x: np.ndarray) -> float:
        for layer in self.layers:
            x = layer(x) * w
        return np.sum(x)

    def indexed(self, w: np.ndarray, x: np.ndarray) -> float:
        for i, layer in enumerate(self.layers):
            x = layer(x + i) * w
        return np.sum(x ** 2)


OBJECTS = Net([Scale(0.5), Scale(-1.5)])
MIXED = Net([Scale(0.5), np.cos, doubled, lambda z: z * 3.0 + np.exp(-z), Scale(2.0)])
FUNCTIONS = (np.tanh, doubled, lambda z: z ** 3)


@pytest.mark.parametrize("net", [OBJECTS, MIXED], ids=["objects", "mixed"])
@pytest.mark.parametrize("method", ["loss", "indexed"])
def test_each_layer_of_a_list_called(net: Net, method: str) -> None:
    """Each layer's code is differentiated: an object's ``__call__``, a function, a lambda, a
    ufunc (the method called from a function: grad of grad of a bound method is not followed)."""
    check_both(function(f"def f(w, x):\n    return net.{method}(w, x)\n", net=net), (W * 0.5, X))


def test_a_loop_over_functions_in_a_tuple() -> None:
    check_both(function("def f(w, x):\n    for act in FUNCTIONS:\n        x = act(x * w)\n    return np.sum(x)\n",
                        FUNCTIONS=FUNCTIONS), (W * 0.5, X))


def over_values(w: np.ndarray, x: np.ndarray) -> float:
    for layer in [1.0, 2.0]:
        x = layer(x) * w
    return np.sum(x)


def over_classes(w: np.ndarray, x: np.ndarray) -> float:
    total = 0.0
    for cls in (Scale,):
        total = total + np.sum(cls(w).shift(x))
    return total


def test_a_loop_item_that_cannot_be_called_is_refused_at_the_call() -> None:
    refused_at(over_values, 3, 13, r"layer.__call__ is not a method defined with 'def' in float")
    # (a class called makes an instance, as in Python: here from a value that carries a gradient)
    refused_at(over_classes, 4, 32, r"builds an instance of Scale from values that carry a gradient")


# ---- a nested function reading the caller's variables, passed to a Python function ---------

def apply_twice(g: typing.Any, v: np.ndarray) -> np.ndarray:
    return g(g(v))


def apply_on(v: np.ndarray, fn: typing.Any = None) -> float:
    return np.sum(fn(v) * v)


def twice_on(g: typing.Any, v: np.ndarray) -> np.ndarray:
    return apply_twice(g, v) + apply_on(v, fn=g)


def keeps(g: typing.Any, v: np.ndarray) -> np.ndarray:
    h = g
    return h(v)


CLOSURES = {
    "lambda": "def f(w, x):\n    g = lambda v: w * v\n    return np.sum(apply_twice(g, x))\n",
    "def": "def f(w, x):\n    s = np.sum(w)\n    def g(v):\n        return np.sin(s * v) + w * x\n"
           "    return np.sum(apply_twice(g, x) * w)\n",
    "keyword": "def f(w, x):\n    g = lambda v: np.tanh(w * v)\n    return apply_on(x, fn=g)\n",
    "written_in_the_call": "def f(w, x):\n    return apply_on(x, fn=lambda v: np.sin(w * v) * x) + np.sum(apply_twice(lambda v: v * w, x))\n",
    "passed_on": "def f(w, x):\n    g = lambda v: np.tanh(w * v + x)\n    return np.sum(twice_on(g, x))\n",
    "read_at_the_call": "def f(w, x):\n    g = lambda v: w * v\n    w = np.cos(w)\n    return np.sum(apply_twice(g, x) * x)\n",
    "in_a_loop": "def f(w, x):\n    total = 0.0\n    for i in range(2):\n        g = lambda v: w * v + i\n"
                 "        total = total + apply_on(x, fn=g)\n    return total\n",
}


@pytest.mark.parametrize("name", sorted(CLOSURES))
def test_a_closure_passed_to_a_python_function(name: str) -> None:
    """The callee is compiled for the nested function; the variables it reads get their gradients."""
    scope = {"apply_twice": apply_twice, "apply_on": apply_on, "twice_on": twice_on}
    check_both(function(CLOSURES[name], **scope), (W * 0.5, X))


def closure_to_map(w: np.ndarray, x: np.ndarray) -> float:
    g = lambda v: w * v
    return np.sum(list(map(g, x)))


def closure_kept_by_the_callee(w: np.ndarray, x: np.ndarray) -> float:
    g = lambda v: w * v
    return np.sum(keeps(g, x))


def closure_to_vectorize(w: np.ndarray, x: np.ndarray) -> float:
    g = lambda v: w * v
    return np.sum(np.vectorize(g)(x))


def first_of(*fs: typing.Any) -> typing.Any:
    return fs[0]


def closure_to_varargs(w: np.ndarray, x: np.ndarray) -> float:
    g = lambda v: w * v
    return np.sum(first_of(g, x)(x))


def test_a_closure_passed_where_s2sad_cannot_follow_it_is_refused() -> None:
    refused_at(closure_to_varargs, 3, 28, "'g' reads w from the enclosing function, and is passed here")
    refused_at(closure_to_map, 2, 9, "the nested function 'g' is used other than called and reads w")
    refused_at(closure_to_vectorize, 2, 9, "the nested function 'g' is used other than called and reads w")
    with pytest.raises(s2sad.S2SADError, match="'g' is a nested function of the caller that reads its variables") as info:
        s2sad.grad(closure_kept_by_the_callee)(W, X)
    assert (info.value.location.line, info.value.location.column) == (keeps.__code__.co_firstlineno + 1, 9)


def test_a_closure_passed_on_in_a_standalone_module() -> None:
    """The nested function is defined in the generated code, which binds it to the values it reads."""
    f = function(CLOSURES["def"], apply_twice=apply_twice)
    scope: dict = {}
    exec(compile(s2sad.adjoint_source(f, 0, standalone=True), "<standalone>", "exec"), scope)
    np.testing.assert_allclose(scope["grad_f"](W, X), s2sad.grad(f)(W, X))
