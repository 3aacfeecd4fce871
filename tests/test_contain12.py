"""Containers, operators and graph shapes (sweep contain12), in the manner of autograd's own
tests of dicts, lists, tuples, builtins, binary operators, graphs and jacobians: each gradient
is checked against central finite differences in float64 (float32 arguments: the differences
are taken in float64) and against autograd where autograd runs the program; its structure,
type and dtype against the argument's; second order on a sample (hvp against differences of
the gradient, grad of grad of grad for scalars); refusals against their location."""
from __future__ import annotations

import collections
import copy
import itertools
import re
import warnings
from typing import Any, Callable

import numpy as np
import pytest

try:  # (a dev-only oracle: without it, the checks against finite differences still run)
    import autograd
    import autograd.numpy as anp
except ImportError:
    autograd = anp = None

import s2sad
from s2sad.errors import NonDifferentiableInputError, NonScalarOutputError, S2SADError
from tests.gradcheck import make_function

A3 = np.array([0.3, -1.2, 0.7])
B3 = np.array([1.1, 0.4, -0.5])
P3 = np.array([0.6, 1.4, 2.1])
M23 = np.array([[0.5, -0.2, 0.9], [1.3, 0.1, -0.7]])
Point = collections.namedtuple("Point", "x y")


# --- trees and finite differences ---------------------------------------------------------

def _map(fn: Callable[..., Any], *trees: Any) -> Any:
    t = trees[0]
    if isinstance(t, dict):
        return {k: _map(fn, *[u[k] for u in trees]) for k in t}
    if isinstance(t, tuple) and hasattr(t, "_fields"):
        return type(t)(*[_map(fn, *u) for u in zip(*trees)])
    if isinstance(t, (list, tuple)):
        return type(t)(_map(fn, *u) for u in zip(*trees))
    return fn(*trees)


def _leaves(t: Any) -> list[Any]:
    if isinstance(t, dict):
        return [leaf for k in t for leaf in _leaves(t[k])]
    if isinstance(t, (list, tuple)):
        return [leaf for v in t for leaf in _leaves(v)]
    return [t]


def _wide(t: Any) -> Any:
    """``t`` with float32 leaves as float64 (finite differences in float32 are noise)."""
    return _map(lambda v: v.astype(np.float64) if isinstance(v, (np.ndarray, np.generic))
                and v.dtype == np.float32 else v, t)


def _fd(f: Callable[..., Any], args: list[Any], n: int, eps: float = 1e-6) -> Any:
    """Central differences of scalar ``f`` with respect to every float leaf of ``args[n]``."""
    args = [_wide(a) for a in args]
    leaves = _leaves(args[n])
    out = []

    def at(k: int, value: Any) -> float:
        moved = list(leaves)
        moved[k] = value
        it = iter(moved)
        tree = _map(lambda _: next(it), args[n])
        return float(f(*args[:n], tree, *args[n + 1:]))

    for k, leaf in enumerate(leaves):
        if isinstance(leaf, float):
            out.append((at(k, leaf + eps) - at(k, leaf - eps)) / (2 * eps))
            continue
        x = np.asarray(leaf, float)
        g = np.zeros(x.shape)
        for i in np.ndindex(*x.shape):
            plus, minus = x.copy(), x.copy()
            plus[i] += eps
            minus[i] -= eps
            g[i] = (at(k, plus) - at(k, minus)) / (2 * eps)
        out.append(g)
    it = iter(out)
    return _map(lambda _: next(it), args[n])


def _assert_like(g: Any, x: Any, where: str) -> None:
    """``g`` has the structure of ``x``; each leaf its leaf's type, shape and dtype."""
    if isinstance(x, dict):
        assert isinstance(g, dict) and list(g) == list(x), f"{where}: {g!r} is not a dict like {x!r}"
        for k in x:
            _assert_like(g[k], x[k], f"{where}[{k!r}]")
    elif isinstance(x, (list, tuple)):
        assert type(g) is type(x) and len(g) == len(x), f"{where}: {type(g).__name__}, not {type(x).__name__}"
        for i, (u, v) in enumerate(zip(g, x)):
            _assert_like(u, v, f"{where}[{i}]")
    elif type(x) is float:
        assert type(g) is float, f"{where}: {type(g).__name__}, not float"
    else:
        assert type(g) is type(x) and np.shape(g) == np.shape(x) and g.dtype == x.dtype, \
            f"{where}: {type(g).__name__} {np.shape(g)} {getattr(g, 'dtype', '')}, not like {x!r}"


def _close(a: Any, b: Any, rtol: float, atol: float, what: str) -> None:
    for u, v in zip(_leaves(a), _leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(u, float), np.asarray(v, float), rtol=rtol, atol=atol,
                                   err_msg=what)


def _twins(source: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The function in ``source`` for s2sad (NumPy) and for autograd (autograd.numpy)."""
    names = {"Point": Point, "s2sad": s2sad}
    return make_function(source, {"np": np, **names}), make_function(source, {"np": anp or np, **names})


def check(source: str, args: tuple[Any, ...], wrt: int | tuple[int, ...], with_autograd: bool = True) -> None:
    """The gradient of ``source``'s function at ``args``: its structure and dtypes, finite
    differences, autograd, value_and_grad's; the call leaves ``args`` unchanged and no two
    returned arrays share memory."""
    f, twin = _twins(source)
    args_list = list(args)
    before = copy.deepcopy(args_list)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        grads = s2sad.grad(f, wrt)(*args_list)
        value, both = s2sad.value_and_grad(f, wrt)(*args_list)
    grads = grads if isinstance(wrt, tuple) else (grads,)
    both = both if isinstance(wrt, tuple) else (both,)
    np.testing.assert_allclose(value, f(*copy.deepcopy(args_list)), rtol=1e-6)
    _close(both, grads, 1e-12, 0, "value_and_grad's gradient")
    for a, b in zip(args_list, before):
        _close(a, b, 0, 0, "the gradient changed its input")
    arrays = [leaf for leaf in _leaves(list(grads)) if isinstance(leaf, np.ndarray)]
    assert not any(np.shares_memory(u, v) for u, v in itertools.combinations(arrays, 2)), \
        "two returned gradients share memory"
    wide = any(getattr(leaf, "dtype", None) == np.float32 for leaf in _leaves(args_list))
    for n, g in zip(wrt if isinstance(wrt, tuple) else (wrt,), grads):
        _assert_like(g, args_list[n], f"gradient of argument {n}")
        tol = (1e-4, 1e-4) if wide else (1e-5, 1e-6)
        _close(g, _fd(f, args_list, n), *tol, f"argument {n} against finite differences")
        if with_autograd and autograd is not None:
            _close(g, autograd.grad(twin, n)(*args_list), 1e-6, 1e-8, f"argument {n} against autograd")


# --- containers: dicts, lists, tuples, and mixes of them -------------------------------------
# (id, source, args, wrt, autograd runs it)

CONTAINERS = [
    ("dict", "def f(p):\n    return np.sum(np.tanh(p['w']) * p['b'])", ({"w": A3, "b": 0.5},), 0, True),
    ("dict-unused-key", "def f(p):\n    return np.sum(p['w'] ** 2) + p['b']", ({"w": A3, "b": 0.5, "u": B3},), 0, True),
    ("dict-items", "def f(p):\n    s = 0.0\n    for k, v in p.items():\n        s = s + np.sum(v ** 2)\n    return s",
     ({"w": A3, "b": B3},), 0, True),
    ("dict-values-sum", "def f(p):\n    return sum(np.sum(np.sin(v)) for v in p.values())", ({"w": A3, "b": B3},), 0, True),
    ("dict-sum-of-values", "def f(p):\n    return np.sum(sum(p.values()) ** 2)", ({"w": A3, "b": B3},), 0, True),
    ("dict-get", "def f(p):\n    return np.sum(p.get('w') * p.get('c', 2.0)) + np.sum(p.get('b', 1.0))",
     ({"w": A3, "b": B3},), 0, True),
    ("dict-keys-loop", "def f(p):\n    s = 0.0\n    for k in p:\n        s = s + np.sum(p[k] * p[k])\n    return s",
     ({"w": A3, "b": B3},), 0, True),
    ("dict-sorted-items", "def f(p):\n    s = 0.0\n    for i, (k, v) in enumerate(sorted(p.items())):\n"
     "        s = s + (i + 1.0) * np.sum(v ** 2)\n    return s", ({"w": A3, "b": B3},), 0, True),
    ("dict-in-len", "def f(p):\n    s = np.sum(p['w']) * len(p)\n    if 'b' in p:\n        s = s + np.sum(p['b'] ** 2)\n"
     "    if 'c' in p:\n        s = s + 100.0\n    return s", ({"w": A3, "b": B3},), 0, True),
    ("dict-nested", "def f(p):\n    x = p['a']['x']\n    y, c = p['a']['y']\n    m, s = p['b']\n"
     "    return np.sum(x * y) * c + np.sum(m @ x) * s", ({"a": {"x": A3, "y": (B3, 0.3)}, "b": [M23, 1.5]},), 0, True),
    ("dict-built-returned", "def f(x, y):\n    d = {'x': x, 'y': y * 2}\n    d['z'] = d['x'] * d['y']\n"
     "    return np.sum(d['z']) + len(d)", (A3, B3), (0, 1), True),
    ("dict-helper", "def f(p):\n    q = helper(p)\n    return np.sum(q['u'] * q['v'])\n\n"
     "def helper(d):\n    return {'u': d['w'] * 2.0, 'v': np.exp(d['b'])}", ({"w": A3, "b": B3},), 0, True),
    ("dict-isinstance", "def f(p):\n    s = 0.0\n    for k, v in p.items():\n        if isinstance(v, np.ndarray):\n"
     "            s = s + np.sum(v ** 3)\n    return s", ({"w": A3, "b": B3},), 0, False),
    ("dict-merge", "def f(p):\n    q = {**p, 'b': p['w'] * 3.0}\n    return np.sum(q['w'] * q['b'])", ({"w": A3, "b": B3},), 0, True),
    ("dict-copy-setitem", "def f(p):\n    q = dict(p)\n    q['w'] = q['w'] * 2.0\n    q['c'] = q['b'] ** 2\n"
     "    return np.sum(q['w'] * q['c']) + np.sum(p['w'])", ({"w": A3, "b": B3},), 0, True),
    ("dict-kwargs", "def f(x, y):\n    d = dict(x=x, y=y * 2.0)\n    return np.sum(d['x'] * d['y'])", (A3, B3), (0, 1), True),
    ("dict-comprehension", "def f(p):\n    q = {k: v * 2.0 for k, v in p.items()}\n    return np.sum(q['w'] * q['b'])",
     ({"w": A3, "b": B3},), 0, True),
    ("dict-zip-values", "def f(p):\n    s = 0.0\n    for v, c in zip(p.values(), [1.0, 2.0]):\n"
     "        s = s + c * np.sum(v ** 2)\n    return s", ({"w": A3, "b": B3},), 0, True),
    ("dict-float-leaf", "def f(p):\n    return p['b'] ** 3 + np.sum(p['w']) * p['b']", ({"w": A3, "b": 0.7},), 0, True),
    ("dict-0d-leaf", "def f(p):\n    return p['b'] ** 3 + np.sum(p['w']) * p['b']", ({"w": A3, "b": np.array(0.7)},), 0, True),
    ("dict-int-keys", "def f(p):\n    return np.sum(p[0] * p[1] ** 2)", ({0: A3, 1: B3},), 0, True),
    ("dict-stack-values", "def f(p):\n    return np.sum(np.stack(list(p.values())) ** 2 * np.arange(2.0)[:, None])",
     ({"w": A3, "b": B3},), 0, True),
    ("dict-keys-list", "def f(p):\n    ks = list(p.keys())\n    return np.sum(p[ks[0]] * p[ks[1]] ** 2)", ({"w": A3, "b": B3},), 0, True),
    ("dict-keys-sorted", "def f(p):\n    ks = sorted(p.keys())\n    s = 0.0\n    for i in range(len(ks)):\n"
     "        s = s + (i + 1.0) * np.sum(p[ks[i]] ** 2)\n    return s", ({"w": A3, "b": B3},), 0, True),
    ("list-sum-builtin", "def f(xs):\n    return np.sum(sum(xs) ** 2)", ([A3, B3, P3],), 0, True),
    ("list-sum-start", "def f(xs):\n    return np.sum(sum(xs[1:], xs[0]) ** 2)", ([A3, B3, P3],), 0, True),
    ("tuple-sum-builtin", "def f(t):\n    return np.sum(sum(t) ** 2)", ((A3, B3),), 0, True),
    ("namedtuple-sum-builtin", "def f(t):\n    return np.sum(sum(t) ** 2)", (Point(A3, B3),), 0, False),
    ("list-sum-floats", "def f(xs):\n    return sum(xs) ** 2 + sum(x ** 2 for x in xs)", ([0.5, 2.0, 1.5],), 0, True),
    ("list-append", "def f(xs):\n    ys = []\n    for x in xs:\n        ys.append(np.sin(x))\n    ys.append(xs[0] * xs[1])\n"
     "    return np.sum(ys[0] + ys[1] * ys[2])", ([A3, B3],), 0, True),
    ("list-extend", "def f(xs):\n    ys = [xs[0]]\n    ys.extend([xs[1], xs[0] * 2.0])\n    return np.sum(ys[2] * ys[0]) + np.sum(ys[1])",
     ([A3, B3],), 0, True),
    ("list-insert", "def f(xs):\n    ys = list(xs)\n    ys.insert(1, xs[0] * 5.0)\n    return np.sum(ys[1] * ys[2])", ([A3, B3],), 0, True),
    ("list-pop", "def f(xs):\n    ys = list(xs)\n    last = ys.pop()\n    return np.sum(last * ys[0])", ([A3, B3],), 0, True),
    ("list-enumerate", "def f(xs):\n    s = 0.0\n    for i, x in enumerate(xs):\n        s = s + (i + 1) * np.sum(x ** 2)\n    return s",
     ([A3, B3, P3],), 0, True),
    ("list-zip", "def f(xs, ys):\n    return sum(np.dot(x, y) for x, y in zip(xs, ys))", ([A3, B3], [P3, M23[1]]), (0, 1), True),
    ("list-floats", "def f(xs):\n    return xs[0] * xs[1] + xs[2] ** 2", ([0.3, -0.8, 1.5],), 0, True),
    ("list-0d-leaves", "def f(xs):\n    return xs[0] ** 2 * xs[1]", ([np.array(0.5), np.array(2.0)],), 0, True),
    ("list-float64-leaves", "def f(xs):\n    return xs[0] ** 2 * xs[1]", ([np.float64(0.5), np.float64(2.0)],), 0, False),
    ("list-unpack-star", "def f(xs):\n    first, *rest = xs\n    return np.sum(first * rest[0]) + np.sum(rest[-1])", ([A3, B3, P3],), 0, True),
    ("list-slices", "def f(xs):\n    return np.sum(sum(xs[1:])) + np.sum(xs[::-1][0] ** 2)", ([A3, B3, P3],), 0, True),
    ("list-len", "def f(xs):\n    return np.sum(xs[0]) * len(xs) + np.sum(xs[-1]) / len(xs)", ([A3, B3],), 0, True),
    ("list-comprehension", "def f(xs):\n    ys = [x ** 2 for x in xs]\n    return np.sum(np.stack(ys))", ([A3, B3],), 0, True),
    ("list-np-array", "def f(xs):\n    return np.sum(np.array(xs) ** 2) + np.sum(np.asarray(xs)[0])", ([A3, B3],), 0, False),
    ("list-nested", "def f(xs):\n    return np.sum(xs[0] * xs[1][0]) * xs[1][1]", ([A3, [B3, 0.5]],), 0, True),
    ("list-of-lists", "def f(xss):\n    return sum(np.sum(x * y) for x, y in xss) + np.sum(xss[1][0] ** 3)",
     ([[A3, B3], [B3, A3]],), 0, True),
    ("list-returned-by-helper", "def f(x, y):\n    p = pair(x, y)\n    q = pair(p[0], p[1])\n"
     "    return np.sum(q[0]) + np.sum(q[1] ** 2)\n\ndef pair(u, v):\n    return [u * v, u + v]", (A3, B3), (0, 1), True),
    ("list-reversed", "def f(xs):\n    s = 0.0\n    c = 1.0\n    for x in reversed(xs):\n        s = s + c * np.sum(x)\n"
     "        c = c * 2.0\n    return s * np.sum(xs[0] ** 2)", ([A3, B3],), 0, True),
    ("list-setitem", "def f(xs):\n    ys = list(xs)\n    ys[0] = ys[0] * 3.0\n    return np.sum(ys[0] * ys[1])", ([A3, B3],), 0, True),
    ("list-max-builtin", "def f(xs):\n    return max(np.sum(xs[0]), np.sum(xs[1] ** 2))", ([A3, B3],), 0, True),
    ("list-isinstance", "def f(xs):\n    s = 0.0\n    for x in xs:\n        if isinstance(x, tuple):\n"
     "            s = s + np.sum(x[0]) * x[1]\n        else:\n            s = s + np.sum(x ** 2)\n    return s",
     ([A3, (B3, 2.0)],), 0, False),
    ("list-concat", "def f(xs):\n    ys = xs + [xs[0] * 2.0]\n    return np.sum(np.concatenate(ys) ** 2)", ([A3, B3],), 0, True),
    ("list-index-loop", "def f(xs):\n    s = 0.0\n    for i in range(len(xs)):\n        s = s + np.sum(xs[i] * xs[len(xs) - 1 - i] ** 2)\n"
     "    return s", ([A3, B3],), 0, True),
    ("tuple", "def f(t):\n    x, y = t\n    return np.sum(x * y ** 2)", ((A3, B3),), 0, True),
    ("tuple-nested", "def f(t):\n    x, (y, c) = t\n    return np.sum(x * y) * c ** 2", ((A3, (B3, 0.4)),), 0, True),
    ("tuple-negative-index", "def f(t):\n    return np.sum(t[-1] * t[0]) + np.sum(t[-2])", ((A3, B3),), 0, True),
    ("tuple-helper-twice", "def f(t):\n    u = swap(t)\n    v = swap(u)\n    return np.sum(u[0] * v[1] ** 2)\n\n"
     "def swap(t):\n    return t[1], t[0]", ((A3, B3),), 0, True),
    ("tuple-floats", "def f(t):\n    a, b = t\n    return a ** b", ((0.5, 1.5),), 0, True),
    ("tuple-call", "def f(t):\n    u = tuple(x * 2.0 for x in t)\n    return np.sum(u[0] * u[1])", ((A3, B3),), 0, True),
    ("tuple-zip-enumerate", "def f(t):\n    s = 0.0\n    for i, (x, y) in enumerate(zip(t, t[::-1])):\n"
     "        s = s + (i + 1.0) * np.sum(x * y)\n    return s", ((A3, B3),), 0, True),
    ("tuple-returned-nested", "def f(t):\n    a, (b, c) = h(t)\n    return np.sum(a * b * c)\n\n"
     "def h(t):\n    return (t[0] * 2.0, (t[1], t[0] + t[1]))", ((A3, B3),), 0, True),
    ("tuple-of-mixed", "def f(t):\n    d, l = t\n    return np.sum(d['w'] * l[0]) + np.sum(l[1][0]) * l[1][1]",
     (({"w": A3}, [B3, (P3, 0.3)]),), 0, True),
    ("namedtuple", "def f(p):\n    return np.sum(p.x ** 2) * p.y + np.sum(p[0])", (Point(A3, 0.5),), 0, False),
    ("two-containers", "def f(d, t):\n    return np.sum(d['w'] * t[0]) * t[1]", ({"w": A3}, (B3, 0.3)), (0, 1), True),
    ("built-and-returned", "def f(x):\n    a, b, c = h(x)\n    return np.sum(a * b * c['s'])\n\n"
     "def h(x):\n    return x, x * 2.0, {'s': x ** 2}", (A3,), 0, True),
]


@pytest.mark.parametrize("name, source, args, wrt, with_autograd", CONTAINERS, ids=[c[0] for c in CONTAINERS])
def test_container_gradients(name: str, source: str, args: tuple[Any, ...], wrt: Any, with_autograd: bool) -> None:
    check(source, args, wrt, with_autograd)


# --- operators between scalars, 0-d, 1-d and 2-d arrays, Python numbers and bools ------------

_X = {"float": 0.7, "int": 3, "bool": True, "0d": np.array(0.8), "1d": np.array([0.6, 1.3, 2.2]),
      "2d": np.array([[0.5, 1.7, 0.9], [1.3, 0.4, 2.1]]), "col": np.array([[0.45], [1.6]]),
      "row": np.array([[1.25, 0.55, 1.9]]), "f32": np.array([0.6, 1.3, 2.2], dtype=np.float32),
      "int0d": np.array(2), "int1d": np.array([1, 2, 3])}
# (the second operand: other values, none a ratio of the first's that // or % jumps at)
_Y = {"float": 1.9, "int": 2, "bool": True, "0d": np.array(1.4), "1d": np.array([1.55, 0.37, 0.83]),
      "2d": np.array([[1.1, 0.3, 1.8], [0.7, 2.3, 0.6]]), "col": np.array([[1.35], [0.61]]),
      "row": np.array([[0.3, 1.45, 0.75]]), "f32": np.array([1.55, 0.37, 0.83], dtype=np.float32),
      "int0d": np.array(3), "int1d": np.array([2, 1, 2])}
_ACTIVE = {"float", "0d", "1d", "2d", "col", "row", "f32"}
_PAIRS = [("float", "float"), ("float", "int"), ("int", "float"), ("float", "bool"), ("bool", "float"),
          ("0d", "0d"), ("0d", "float"), ("float", "0d"), ("0d", "int"), ("1d", "1d"), ("1d", "float"),
          ("float", "1d"), ("1d", "int"), ("int", "1d"), ("1d", "0d"), ("0d", "1d"), ("2d", "1d"),
          ("1d", "2d"), ("2d", "2d"), ("col", "row"), ("row", "col"), ("2d", "col"), ("col", "2d"),
          ("2d", "0d"), ("f32", "f32"), ("f32", "float"), ("float", "f32"), ("f32", "1d"), ("1d", "bool"),
          ("1d", "int0d"), ("1d", "int1d"), ("int1d", "1d"), ("int0d", "0d")]
_OPS = {"+": True, "-": True, "*": True, "/": True, "**": True, "//": False, "%": False}  # autograd has them
BINARY = [(op, x, y) for op in _OPS for x, y in _PAIRS]


@pytest.mark.parametrize("op, x, y", BINARY, ids=[f"{x}{op}{y}" for op, x, y in BINARY])
def test_binary_operators(op: str, x: str, y: str) -> None:
    source = f"def f(x, y):\n    return np.sum(np.sin(x {op} y) * (x {op} y))"
    wrt = tuple(i for i, kind in enumerate((x, y)) if kind in _ACTIVE)
    check(source, (_X[x], _Y[y]), wrt, with_autograd=_OPS[op] and x not in ("int", "bool"))


UNARY = [(e, x) for e in ("-x", "+x", "abs(x)", "np.abs(x)") for x in ("float", "0d", "1d", "2d", "f32")]


@pytest.mark.parametrize("expression, x", UNARY, ids=[f"{e}-{x}" for e, x in UNARY])
def test_unary_operators(expression: str, x: str) -> None:
    value = -_X[x] if x != "float" else -0.7
    check(f"def f(x):\n    return np.sum(np.cos({expression}) * {expression} ** 2)", (value,), 0,
          with_autograd=expression != "+x")


MATMUL = [("2d@1d", M23, P3), ("1d@2d", np.array([0.6, 1.3]), M23), ("1d@1d", A3, B3), ("2d@2d", M23, M23.T),
          ("3d@2d", np.arange(12.0).reshape(2, 2, 3) / 7, M23.T), ("f32", M23.astype(np.float32), P3.astype(np.float32))]


@pytest.mark.parametrize("name, x, y", MATMUL, ids=[m[0] for m in MATMUL])
def test_matmul(name: str, x: np.ndarray, y: np.ndarray) -> None:
    check("def f(x, y):\n    return np.sum(np.sin(x @ y))", (x, y), (0, 1))


WHERE = [(c, x, y) for c in ("<", "<=", ">", ">=", "==", "!=")
         for x, y in (("1d", "1d"), ("1d", "float"), ("2d", "1d"), ("0d", "float"), ("float", "float"))]


@pytest.mark.parametrize("comparison, x, y", WHERE, ids=[f"{x}{c}{y}" for c, x, y in WHERE])
def test_comparisons_in_where(comparison: str, x: str, y: str) -> None:
    check(f"def f(x, y):\n    return np.sum(np.where(x {comparison} y, x * y, x ** 2 - y))", (_X[x], _Y[y]), (0, 1))


POWERS = [
    ("zero-base-both-active", "def f(x, y):\n    return x ** y + 1.0", (0.0, 2.0), (0, 1), True),
    ("zero-literal-base", "def f(y):\n    return 0.0 ** y + y", (2.0,), 0, True),
    ("zero-in-base", "def f(x):\n    return np.sum(x ** 2 + x ** 1 + x ** 0)", (np.array([0.0, 1.0, 2.0]),), 0, True),
    ("zero-in-base-active-exponent", "def f(x, y):\n    return np.sum(x ** y)", (np.array([0.0, 1.0, 2.0]), 3.0), (0, 1), True),
    ("negative-base-int-exponent", "def f(x, n):\n    return np.sum(x ** n)", (np.array([-1.5, 0.5, -2.0]), 3), 0, True),
    ("negative-base-float-exponent", "def f(x):\n    return np.sum(x ** 2.0 + x ** 3.0)", (np.array([-1.5, 0.5, -2.0]),), 0, True),
    ("int-array-exponent", "def f(x, n):\n    return np.sum(x ** np.array([1, 2, n]))", (np.array([1.2, 0.5, 2.0]), 2), 0, True),
    ("builtin-pow", "def f(x):\n    return np.sum(pow(x, 2)) + pow(np.sum(x ** 2), 0.5)", (A3,), 0, True),
    ("self-power", "def f(x):\n    return x ** 3 + 2 ** x + x ** x", (0.7,), 0, True),
    ("self-power-0d", "def f(x):\n    return x ** 3 + 2 ** x + x ** x", (np.array(0.7),), 0, True),
    ("mixed-python-numbers", "def f(x):\n    return (x + 1) * (2 - x) / (x + True) - x // 1 + x % 1.0", (0.7,), 0, False),
    ("mod-floordiv-active", "def f(x):\n    return np.sum((x % 1.0) ** 2 + (x // 0.5) * x + (7.3 % x) + (3.1 // x) * x)",
     (np.array([0.3, 1.7, 2.45]),), 0, False),
    ("int-array-operands", "def f(x):\n    k = np.arange(3)\n    return np.sum(x * k + k ** 2 * x ** 2 + x / (k + 1) + (k + 1) / (x + 3.0))",
     (A3,), 0, True),
    ("bool-masks", "def f(x):\n    m = (x > 0) & (x < 1)\n    return np.sum(x * m) + np.sum(x ** 2 * ~m) + np.sum(x[m])", (A3,), 0, True),
]


@pytest.mark.parametrize("name, source, args, wrt, with_autograd", POWERS, ids=[p[0] for p in POWERS])
def test_powers_and_mixed_operands(name: str, source: str, args: tuple[Any, ...], wrt: Any, with_autograd: bool) -> None:
    check(source, args, wrt, with_autograd)


# --- graph shapes ------------------------------------------------------------------------

GRAPHS = [
    ("value-used-many-times", "def f(x):\n    y = x * x\n    return np.sum(y * x + y * y + x * y * x + np.sin(y) * y)", (A3,), True),
    ("fan-in-fan-out", "def f(x):\n    a = np.sin(x)\n    b = np.cos(x)\n    c = a * b\n    d = a + c\n    e = b * d\n"
     "    return d * e + a * c", (0.7,), True),
    ("same-function-twice", "def f(x):\n    return np.sum(sq(x) + sq(sq(x)))\n\ndef sq(u):\n    return u * u + np.sin(u)", (A3,), True),
    ("reassigned-chain", "def f(x):\n    y = x\n    for _ in range(3):\n        y = y * x + np.tanh(y)\n    return np.sum(y)", (A3,), True),
    ("mutated-then-read", "def f(x):\n    y = x * 2.0\n    z = y.copy()\n    y[0] = 5.0\n    z[1] = z[1] * y[2]\n"
     "    return np.sum(y * z)", (A3,), False),
    ("in-place-updates", "def f(x):\n    y = np.zeros(3)\n    y += x\n    y *= x\n    y[1:] += x[:2] ** 2\n    return np.sum(y ** 2)",
     (A3,), False),
    ("output-used-again", "def f(x):\n    s = np.sum(x ** 2)\n    return s + s * s - s / 3.0", (A3,), True),
    ("matmul-of-itself", "def f(A):\n    return np.sum(A @ A @ A.T)", (np.array([[1.0, 2.0], [3.0, 4.5]]),), True),
    ("chained-comparison", "def f(x):\n    s = 0.0\n    for v in x:\n        if -1.0 < v < 0.5:\n            s = s + v ** 2\n"
     "        else:\n            s = s - v\n    return s", (A3,), True),
    ("sum-with-start", "def f(x):\n    return sum([x, x * 2.0], np.zeros(3)) @ x + sum((x[0], x[1]), 1.0)", (A3,), True),
    ("builtin-abs", "def f(x):\n    return np.sum(abs(x) * x) + abs(x[0] - 2.0)", (A3,), True),
    ("nested-grad", "def f(x):\n    g = s2sad.grad(inner)(x)\n    return np.sum(g ** 2)\n\n"
     "def inner(x):\n    return np.sum(np.sin(x) * x)", (A3,), False),
    ("nested-grad-scalar", "def f(t):\n    return s2sad.grad(inner)(t) * t\n\ndef inner(t):\n    return t ** 3 * np.sin(t)", (0.7,), False),
    ("nested-grad-of-dict", "def f(p):\n    g = s2sad.grad(inner)(p)\n    return np.sum(g['w'] * g['b'])\n\n"
     "def inner(p):\n    return np.sum(p['w'] ** 2 * p['b'])", ({"w": A3, "b": B3},), False),
    ("nested-value-and-grad", "def f(t):\n    v, g = s2sad.value_and_grad(inner)(t)\n    return v * g\n\n"
     "def inner(t):\n    return t ** 3", (0.7,), False),
    ("float32-scalar", "def f(x):\n    return x ** 3 + np.sin(x)", (np.float32(0.7),), False),
    ("float64-scalar", "def f(x):\n    return x ** 3 + np.sin(x)", (np.float64(0.7),), True),
    ("float32-0d", "def f(x):\n    return x ** 3 + np.sin(x)", (np.array(0.7, dtype=np.float32),), True),
]


@pytest.mark.parametrize("name, source, args, with_autograd", GRAPHS, ids=[g[0] for g in GRAPHS])
def test_graph_shapes(name: str, source: str, args: tuple[Any, ...], with_autograd: bool) -> None:
    check(source, args, 0, with_autograd)


# --- second order on a sample --------------------------------------------------------------

SECOND = [(c[0], c[1], c[2], 0, False) for c in CONTAINERS if c[0] in ("dict", "dict-nested", "list-sum-builtin", "list-append", "tuple-nested",
                                             "list-floats", "dict-0d-leaf", "list-returned-by-helper")]
SECOND += [(g[0], g[1], g[2], 0, False) for g in GRAPHS if g[0] in (
    "value-used-many-times", "same-function-twice", "in-place-updates", "nested-grad", "float32-0d")]
SECOND += [(f"{x}{op}{y}", f"def f(x, y):\n    return np.sum(np.sin(x {op} y) * (x {op} y))", (_X[x], _Y[y]), 0, False)
           for op, x, y in (("**", "2d", "col"), ("/", "1d", "0d"), ("*", "f32", "float"), ("-", "float", "1d"))]


@pytest.mark.parametrize("name, source, args, wrt, _", SECOND, ids=[s[0] for s in SECOND])
def test_hvp_against_differences_of_the_gradient(name: str, source: str, args: tuple[Any, ...], wrt: int, _: bool) -> None:
    f, _twin = _twins(source)
    x = args[wrt]
    rng = np.random.default_rng(3)
    v = _map(lambda leaf: float(rng.normal()) if type(leaf) is float else
             np.asarray(rng.normal(size=np.shape(leaf)), leaf.dtype), x)
    eps = 1e-5

    def gradient(moved: Any) -> Any:
        wide = [_wide(a) for a in args]
        wide[wrt] = moved
        return s2sad.grad(f, wrt)(*wide)

    plus = gradient(_map(lambda a, d: _wide(a) + eps * d, x, v))
    minus = gradient(_map(lambda a, d: _wide(a) - eps * d, x, v))
    expected = _map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps), plus, minus)
    hv = s2sad.hvp(f, wrt)(*args, v)
    _assert_like(hv, x, "hvp")
    tol = (2e-3, 2e-3) if any(getattr(leaf, "dtype", None) == np.float32 for leaf in _leaves(list(args))) else (1e-5, 1e-6)
    _close(hv, expected, *tol, "hvp against differences of the gradient")


THIRD = [("polynomial-and-sin", "def f(t):\n    return t ** 3 * np.sin(t) + np.exp(-t) * t", 0.7),
         ("through-a-helper", "def f(t):\n    return h(t) * h(2.0 * t)\n\ndef h(u):\n    return np.tanh(u) + u ** 2", 0.4),
         ("0d-array", "def f(t):\n    return np.sum(np.cos(t) * t ** 4)", np.array(0.9)),
         ("through-a-list", "def f(t):\n    xs = [t, t * t, np.sin(t)]\n    return sum(xs) * xs[1]", 0.6)]


@pytest.mark.parametrize("name, source, t", THIRD, ids=[t[0] for t in THIRD])
def test_third_derivative_of_a_scalar_function(name: str, source: str, t: Any) -> None:
    f, twin = _twins(source)
    d3 = s2sad.grad(s2sad.grad(s2sad.grad(f)))
    d2 = s2sad.grad(s2sad.grad(f))
    value = d3(t)
    assert type(value) is type(t) and np.shape(value) == np.shape(t)
    eps = 1e-5
    np.testing.assert_allclose(value, (d2(t + eps) - d2(t - eps)) / (2 * eps), rtol=1e-5)
    if autograd is not None:
        np.testing.assert_allclose(value, autograd.grad(autograd.grad(autograd.grad(twin)))(t), rtol=1e-9)


# --- jacobian and hessian --------------------------------------------------------------------

JACOBIANS = [
    ("vector-of-vector", "def f(x):\n    return np.sin(x) * x[::-1]", np.array([0.3, 1.2, -0.7])),
    ("matrix-of-vector", "def f(x):\n    return np.outer(x, x ** 2)", np.array([0.3, 1.2])),
    ("vector-of-0d", "def f(x):\n    return np.sin(x) * np.array([1.0, 2.0])", np.array(0.5)),
    ("vector-of-float", "def f(x):\n    return np.sin(x) * np.array([1.0, 2.0])", 0.5),
    ("list-output", "def f(x):\n    return [x * 2.0, x ** 2]", np.array([1.0, 2.0])),
    ("matrix-of-matrix", "def f(A):\n    return A @ A.T", np.array([[0.5, 1.0, -0.3], [0.2, 0.7, 1.1]])),
]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("name, source, x", JACOBIANS, ids=[j[0] for j in JACOBIANS])
def test_jacobian_against_autograd(name: str, source: str, x: Any, mode: str) -> None:
    if autograd is None:
        pytest.skip("autograd (a dev-only oracle) is not installed")
    f, twin = _twins(source)
    got = s2sad.jacobian(f, mode=mode)(x)
    expected = autograd.jacobian(lambda v: anp.array(twin(v)))(x)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("source, x", [
    ("def f(x):\n    return np.sum(np.sin(x) * x ** 2) * x[0]", np.array([0.3, 1.2, -0.7])),
    ("def f(A):\n    return np.sum((A @ A) ** 2)", np.array([[0.5, 1.0], [0.2, 0.7]])),
    ("def f(x):\n    return x ** 3 * np.exp(x)", 0.4),
    ("def f(xs):\n    return xs[0] * xs[1] ** 2 + sum(xs) ** 2", [1.0, 2.0]),
], ids=["vector", "matrix", "float", "list-of-floats"])
def test_hessian_against_autograd(source: str, x: Any) -> None:
    if autograd is None:
        pytest.skip("autograd (a dev-only oracle) is not installed")
    f, twin = _twins(source)
    np.testing.assert_allclose(s2sad.hessian(f)(x), autograd.hessian(lambda v: twin(v) if not isinstance(x, list)
                                                                     else twin(list(v)))(np.asarray(x, float)),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("source, line", [
    ("def f(x):\n    return (np.sum(x), x * 3.0)", 1), ("def f(x):\n    return {'a': x * 2.0}", 1),
], ids=["tuple-of-arrays", "dict"])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_jacobian_of_a_container_output_is_refused(source: str, line: int, mode: str) -> None:
    """It crashed (ValueError from np.asarray, TypeError in the basis)."""
    f = make_function(source, {"np": np})
    with pytest.raises(NonScalarOutputError, match="returns one array or number") as info:
        s2sad.jacobian(f, mode=mode)(np.array([1.0, 2.0]))
    assert info.value.location is not None and info.value.location.line == line
    assert info.value.location.filename == f.__code__.co_filename


# --- arguments a gradient cannot be taken with respect to ----------------------------------

INTEGERS = [
    ("int", "def f(x):\n    return x ** 2", 3, "it is int"),
    ("bool", "def f(x):\n    return x ** 2", True, "it is bool"),
    ("int-array", "def f(x):\n    return np.sum(x ** 2)", np.array([1, 2]), "dtype int64"),
    ("int64-scalar", "def f(x):\n    return x ** 2", np.int64(3), "dtype int64"),
    ("int-in-dict", "def f(p):\n    return np.sum(p['w'] ** 2) * p['b']", {"w": np.array([1.0, 2.0]), "b": 2}, "'p['b']': it is int"),
    ("int-in-list", "def f(xs):\n    return xs[0] * xs[1]", [0.5, 2], "'xs[1]': it is int"),
]
REFUSALS = [(api, *c) for api in ("grad", "value_and_grad", "hessian") for c in INTEGERS
            if api != "hessian" or not isinstance(c[2], (dict, list))]


@pytest.mark.parametrize("api, name, source, arg, what", REFUSALS, ids=[f"{r[0]}-{r[1]}" for r in REFUSALS])
def test_integer_arguments_are_refused_at_the_definition(api: str, name: str, source: str, arg: Any, what: str) -> None:
    f = make_function(source, {"np": np})
    with pytest.raises(NonDifferentiableInputError, match=re.escape(what)) as info:
        getattr(s2sad, api)(f)(arg)
    assert info.value.location is not None and info.value.location.line == 1


# --- an item changed in place through a copy of its container ------------------------------
# q = dict(p) (p.copy(), {**p}, list(xs), xs + [], a helper's list(v)) holds p's very arrays:
# q[k] += v changes p[k] too. s2sad read p[k] as unchanged and gave a silently wrong gradient.

SHARED_ITEMS = [
    ("dict-call", "def f(p):\n    q = dict(p)\n    q['w'] *= 2.0\n    return np.sum(q['w'] ** 2) + np.sum(p['w'])", {"w": A3}),
    ("dict-copy", "def f(p):\n    q = p.copy()\n    q['w'] *= 2.0\n    return np.sum(q['w'] ** 2) + np.sum(p['w'])", {"w": A3}),
    ("dict-merge", "def f(p):\n    q = {**p}\n    q['w'] += 1.0\n    return np.sum(q['w'] ** 2) + np.sum(p['w'] ** 2)", {"w": A3}),
    ("dict-keyword", "def f(p):\n    q = dict(p, b=1.0)\n    q['w'] *= 2.0\n    return np.sum(q['w'] ** 2) + np.sum(p['w'])", {"w": A3}),
    ("item-read-before", "def f(p):\n    w = p['w']\n    q = dict(p)\n    q['w'] *= 2.0\n    return np.sum(q['w'] ** 2) + np.sum(w)",
     {"w": A3}),
    ("list-call", "def f(xs):\n    ys = list(xs)\n    ys[0] *= 2.0\n    return np.sum(ys[0] ** 2) + np.sum(xs[0])", [A3, B3]),
    ("list-copy", "def f(xs):\n    ys = xs.copy()\n    ys[0] *= 2.0\n    return np.sum(ys[0] ** 2) + np.sum(xs[0])", [A3, B3]),
    ("list-plus", "def f(xs):\n    ys = xs + []\n    ys[0] *= 2.0\n    return np.sum(ys[0] ** 2) + np.sum(xs[0])", [A3, B3]),
    ("tuple-to-list", "def f(t):\n    ys = list(t)\n    ys[1] *= 2.0\n    return np.sum(ys[1] ** 2) + np.sum(t[1])", (A3, B3)),
    ("in-a-loop", "def f(xs):\n    ys = list(xs)\n    for i in range(2):\n        ys[i] += 1.0\n"
     "    return np.sum(ys[0] * ys[1]) + np.sum(xs[0])", [A3, B3]),
    ("helper-copy", "def f(xs):\n    ys = copied(xs)\n    ys[0] *= 2.0\n    return np.sum(ys[0] ** 2) + np.sum(xs[0])\n\n"
     "def copied(v):\n    return list(v)", [A3, B3]),
]


@pytest.mark.parametrize("name, source, arg", SHARED_ITEMS, ids=[s[0] for s in SHARED_ITEMS])
def test_an_array_changed_through_a_copy_of_its_container_is_refused(name: str, source: str, arg: Any) -> None:
    f = make_function(source, {"np": np})
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "=" in text and text.split("=")[0].endswith(("*", "+")))
    for specialize in (True, False):
        with pytest.raises(S2SADError, match="share its items") as info:
            s2sad.grad(f, specialize=specialize)(copy.deepcopy(arg))
        assert info.value.location is not None and info.value.location.line == line


UNSHARED_ITEMS = [
    ("float-items", "def f(xs):\n    ys = list(xs)\n    ys[0] += 1.0\n    ys[1] *= ys[0]\n    return ys[0] * ys[1] + xs[0] * xs[1]",
     [0.5, 1.5], True),
    ("array-copy", "def f(x):\n    c = x.copy()\n    c[0] += 1.0\n    c[1:] *= 2.0\n    return np.sum(c ** 2) + np.sum(x)", A3, False),
    ("helper-array", "def f(x):\n    h = double(x)\n    h[0] += 1.0\n    return np.sum(h ** 2) + np.sum(x)\n\n"
     "def double(v):\n    return v * 2.0", A3, False),
    ("float-item-of-dict", "def f(p):\n    q = dict(p)\n    q['b'] *= 3.0\n    return np.sum(q['w']) * q['b'] + p['b']",
     {"w": A3, "b": 0.5}, True),
    ("source-not-read-later", "def f(p):\n    q = dict(p)\n    q['w'] += 1.0\n    return np.sum(q['w'] ** 2)", {"w": A3}, True),
    ("new-arrays", "def f(xs):\n    ys = [x * 1.0 for x in xs]\n    ys[0] += 1.0\n    return np.sum(ys[0] * ys[1]) + np.sum(xs[0])",
     [A3, B3], True),
    ("rows-of-an-array", "def f(X):\n    Y = X.copy()\n    Y[0] += X[1]\n    return np.sum(Y ** 2) + np.sum(X)", M23, False),
]


@pytest.mark.parametrize("name, source, arg, with_autograd", UNSHARED_ITEMS, ids=[u[0] for u in UNSHARED_ITEMS])
def test_an_item_changed_in_place_that_nothing_else_holds(name: str, source: str, arg: Any, with_autograd: bool) -> None:
    check(source, (copy.deepcopy(arg),), 0, with_autograd)


REPEATED_ITEMS = [
    ("dict-display", "def f(x):\n    y = x * 1.0\n    d = {'a': y, 'b': y}\n    d['a'] += 1.0\n    return np.sum(d['b'] ** 2)"),
    ("list-times-int", "def f(x):\n    y = x * 1.0\n    ys = [y] * 2\n    ys[0] += 1.0\n    return np.sum(ys[1] ** 2)"),
    ("appended-twice", "def f(x):\n    y = x * 1.0\n    ys = []\n    ys.append(y)\n    ys.append(y)\n    ys[0] += 1.0\n"
     "    return np.sum(ys[1] ** 2)"),
    ("comprehension", "def f(x):\n    y = x * 1.0\n    ys = [y for _ in range(2)]\n    ys[0] += 1.0\n    return np.sum(ys[1] ** 2)"),
    ("zeros-times-int", "def f(x):\n    ys = [np.zeros(3)] * 3\n    ys[0] += x\n    return np.sum(ys[1] * x)"),
    ("a-view-of-another", "def f(x):\n    y = x * 1.0\n    ys = [y, y[:2]]\n    ys[0] += 1.0\n    return np.sum(ys[1] ** 2)"),
]


@pytest.mark.parametrize("name, source", REPEATED_ITEMS, ids=[r[0] for r in REPEATED_ITEMS])
def test_an_array_that_is_two_items_of_a_container_changed_in_place_is_refused(name: str, source: str) -> None:
    """Python changes both items (one array); s2sad changed one: a silently wrong gradient."""
    f = make_function(source, {"np": np})
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "+=" in text)
    for specialize in (True, False):
        with pytest.raises(S2SADError, match="another of its items too") as info:
            s2sad.grad(f, specialize=specialize)(A3.copy())
        assert info.value.location is not None and info.value.location.line == line


def test_distinct_items_of_a_container_changed_in_place() -> None:
    check("def f(x):\n    ys = [x * 1.0, x * 2.0]\n    for i in range(2):\n        ys[i] += x ** 2\n"
          "    d = {'a': x * 3.0}\n    d['a'] *= x\n    return np.sum(ys[0] * ys[1]) + np.sum(d['a'])", (A3,), 0, False)


# --- what a pullback returns is the caller's own -------------------------------------------

@pytest.mark.parametrize("source, wrt, args", [
    ("def f(x, y):\n    return x + y", (0, 1), (A3, B3)),
    ("def f(x):\n    return x + 1.0", 0, (A3,)),
    ("def f(x):\n    return x", 0, (A3,)),
    ("def f(p):\n    return p['a'] - p['b']", 0, ({"a": A3, "b": B3},)),
], ids=["two-arguments", "plus-constant", "identity", "dict"])
def test_pullback_results_are_distinct_arrays(source: str, wrt: Any, args: tuple[Any, ...]) -> None:
    """They were one array (x and y of x + y), or the cotangent itself: updating one in place
    changed the other, or the caller's cotangent."""
    f = make_function(source, {"np": np})
    _, pullback = s2sad.vjp(f, wrt)(*args)
    cotangent = np.ones(3)
    first, second = pullback(cotangent), pullback(cotangent)
    arrays = [leaf for leaf in _leaves([first, second, cotangent]) if isinstance(leaf, np.ndarray)]
    assert not any(np.shares_memory(u, v) for u, v in itertools.combinations(arrays, 2))
    expected = _fd(lambda *a: np.sum(f(*a) * cotangent), list(args), 0)
    _close(first[0] if isinstance(wrt, tuple) else first, expected, 1e-6, 1e-8, "pullback")


# --- a list changed in a loop over it ----------------------------------------------------------
# Python's for loop sees the change as it goes on; s2sad's ran over the list as it began: a
# silently wrong gradient (for a dict that gains a key, Python raises).

ITERATED = [
    ("append", "def f(x):\n    ys = [x]\n    for y in ys:\n        if len(ys) < 3:\n            ys.append(y * 2.0)\n"
     "    return np.sum(ys[-1])", 5),
    ("pop", "def f(x):\n    ys = [x, x * 2.0, x * 3.0]\n    s = 0.0\n    for y in ys:\n        s = s + np.sum(y)\n"
     "        if len(ys) > 2:\n            ys.pop()\n    return s", 7),
    ("enumerate-append", "def f(x):\n    ys = [x]\n    for i, y in enumerate(ys):\n        if i < 2:\n"
     "            ys.append(y * 2.0)\n    return np.sum(ys[-1])", 5),
    ("zip-append", "def f(x):\n    ys = [x]\n    s = 0.0\n    for y, z in zip(ys, [1.0, 2.0, 3.0]):\n"
     "        s = s + z * np.sum(y)\n        if len(ys) < 3:\n            ys.append(y * 2.0)\n    return s", 7),
    ("reversed-pop-first", "def f(x):\n    ys = [x, x * 2.0, x * 3.0]\n    s = 0.0\n    for y in reversed(ys):\n"
     "        s = s + np.sum(y)\n        if len(ys) > 2:\n            ys.pop(0)\n    return s", 7),
    ("extend", "def f(x):\n    ys = [x]\n    for y in ys:\n        if len(ys) < 3:\n            ys.extend([y * 2.0])\n"
     "    return np.sum(ys[-1])", 5),
    ("insert", "def f(x):\n    ys = [x, x * 2.0]\n    s = 0.0\n    for y in ys:\n        s = s + np.sum(y)\n"
     "        if len(ys) < 3:\n            ys.insert(0, y * 7.0)\n    return s", 7),
    ("a-later-item", "def f(x):\n    ys = [x, x * 2.0, x * 3.0]\n    s = 0.0\n    for y in ys:\n        ys[2] = y * 5.0\n"
     "        s = s + np.sum(y)\n    return s", 5),
    ("nested-loop", "def f(x):\n    ys = [x]\n    s = 0.0\n    for y in ys:\n        for j in range(2):\n"
     "            s = s + np.sum(y) * j\n            if len(ys) < 3:\n                ys.append(y * 2.0)\n    return s", 8),
    ("dict-new-key", "def f(x):\n    d = {'a': x * 1.0}\n    s = 0.0\n    for k in d:\n        s = s + np.sum(d[k])\n"
     "        d['b'] = d[k] * 2.0\n    return s", 6),
]


@pytest.mark.parametrize("name, source, line", ITERATED, ids=[i[0] for i in ITERATED])
def test_a_list_changed_in_a_loop_over_it_is_refused(name: str, source: str, line: int) -> None:
    f = make_function(source, {"np": np})
    with pytest.raises(S2SADError, match="in a loop over it") as info:
        s2sad.grad(f)(A3.copy())
    assert info.value.location is not None and info.value.location.line == line


ITERATED_COPIES = [
    ("own-item", "def f(x):\n    ys = [x, x * 2.0, x * 3.0]\n    for i, y in enumerate(ys):\n        ys[i] = y ** 2\n"
     "    return np.sum(ys[0] + ys[1] + ys[2])", True),
    ("own-key", "def f(x):\n    d = {'a': x * 1.0, 'b': x * 2.0}\n    for k in d:\n        d[k] = d[k] ** 2\n"
     "    return np.sum(d['a'] * d['b'])", True),
    ("a-copy", "def f(x):\n    ys = [x]\n    for y in ys[:]:\n        ys.append(y * 2.0)\n    for y in list(ys):\n"
     "        ys.append(y * 3.0)\n    return np.sum(ys[-1]) + len(ys)", True),
    ("range-len", "def f(x):\n    ys = [x]\n    for i in range(len(ys) + 1):\n        ys.append(ys[i] * 2.0)\n"
     "    return np.sum(ys[-1]) + len(ys)", True),
    ("stack", "def f(x):\n    stack = [x, x * 2.0, x * 3.0]\n    out = 0.0\n    while len(stack) > 0:\n        top = stack.pop()\n"
     "        out = out * 0.5 + np.sum(top ** 2)\n    return out", True),
    ("queue", "def f(x):\n    q = [x]\n    s = 0.0\n    n = 0\n    while len(q) > 0 and n < 5:\n        h = q.pop(0)\n"
     "        s = s + np.sum(h)\n        n = n + 1\n        if n < 3:\n            q.append(h * 0.5)\n            q.append(h * 0.25)\n"
     "    return s", True),
    ("pop-twice", "def f(xs):\n    ys = [xs[0], xs[1], xs[0] * 2.0]\n    u = ys.pop()\n    v = ys.pop(0)\n"
     "    return np.sum(u * v) + np.sum(ys[0])", True),
    ("item-then-pop", "def f(x):\n    ys = [x, x * 2.0]\n    u = ys[0]\n    ys.pop(0)\n    return np.sum(u * ys[0])", True),
    ("slice-then-append", "def f(x):\n    ys = [x, x * 2.0]\n    t = ys[:]\n    ys.append(x * 3.0)\n    return np.sum(t[-1]) + len(t)",
     True),
]


@pytest.mark.parametrize("name, source, with_autograd", ITERATED_COPIES, ids=[i[0] for i in ITERATED_COPIES])
def test_lists_changed_where_no_loop_or_name_sees_it(name: str, source: str, with_autograd: bool) -> None:
    """The last three were refused ('u' may share memory with 'ys'): popping or appending changes
    the list, not an item read from it, nor a slice (a new list)."""
    arg = [A3, B3] if name == "pop-twice" else A3
    check(source, (arg,), 0, with_autograd)


# --- a generator bound to a name runs when it is read ----------------------------------------

LAZY = [
    ("list-appended", "def f(x):\n    ys = [x, x * 2.0]\n    g = (y * 2.0 for y in ys)\n    ys.append(x * 3.0)\n"
     "    return np.sum(sum(g))", 3, 4),
    ("map-list-appended", "def f(x):\n    ys = [x, x * 2.0]\n    m = map(np.sin, ys)\n    ys.append(x * 3.0)\n"
     "    return np.sum(sum(m))", 3, 4),
    ("item-written", "def f(x):\n    ys = [x, x * 2.0]\n    g = (y * 2.0 for y in ys)\n    ys[0] = x * 10.0\n"
     "    return np.sum(sum(g))", 3, 4),
    ("name-rebound", "def f(x):\n    c = 1.0\n    g = (y * c for y in [x, x * 2.0])\n    c = 5.0\n    return np.sum(sum(g))", 3, 4),
]


@pytest.mark.parametrize("name, source, line, changed", LAZY, ids=[z[0] for z in LAZY])
def test_a_generator_whose_inputs_change_before_it_is_read_is_refused(name: str, source: str, line: int,
                                                                      changed: int) -> None:
    """s2sad computed it where it stands; Python's runs when read, seeing the change."""
    f = make_function(source, {"np": np})
    with pytest.raises(S2SADError, match=f"changes on line {changed}") as info:
        s2sad.grad(f)(A3.copy())
    assert info.value.location is not None and info.value.location.line == line


def test_a_generator_read_before_its_inputs_change() -> None:
    check("def f(x):\n    ys = [x, x * 2.0]\n    g = (y * 2.0 for y in ys)\n    z = x * 3.0\n    s = sum(g)\n"
          "    ys.append(z)\n    return np.sum(s * ys[-1])", (A3,), 0)


@pytest.mark.parametrize("source", ["def f(x):\n    return x + 1.0", "def f(x):\n    return x"], ids=["plus-constant", "identity"])
def test_jvp_tangent_is_not_the_tangent_passed(source: str) -> None:
    """It was the caller's tangent itself: updating one changed the other."""
    f = make_function(source, {"np": np})
    t = np.array([0.5, -1.0, 2.0])
    _, out = s2sad.jvp(f)(A3.copy(), t)
    assert not np.shares_memory(out, t)
    np.testing.assert_array_equal(out, t)
