"""A sweep of the Python forms s2sad accepts (tangent12), in the manner of Google Tangent's
``tests/functions.py``: many small functions, each exercising one construct (lambdas, methods,
closures, recursion, arguments, loops and branches, unpacking, augmented assignment,
comprehensions, the walrus, ``math``, number mixes...).  Each supported form is checked
against central finite differences in float64 through grad and value_and_grad, and forward
mode (jvp); a sample through every mode (vjp, jacobian, hvp, hessian, grad of grad, jit).
Forms refused are refused with an S2SADError at their line and column; the regressions of
the bugs the sweep found are at the end."""
from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import linecache
import math
import operator
import typing
import warnings

import numpy as np
import pytest

import s2sad

from test_lang9_constructs import assert_leaves, check, direction, numerical, second_order

X = np.array([0.3, -0.5, 0.7])
W = np.array([1.5, -0.4, 0.25])
_COUNTER = itertools.count()
SCOPE = {"math": math, "functools": functools, "operator": operator, "dataclasses": dataclasses,
         "collections": collections}


def made(source: str) -> typing.Any:
    """``f`` of ``source`` (which may define classes and helpers first), its lines those of its
    own file."""
    filename = f"<tangent12-{next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = {"np": np, **SCOPE}
    exec(compile(source, filename, "exec"), scope)
    return scope["f"]


def check_light(f: typing.Any, args: tuple) -> None:
    """grad, value_and_grad and jvp in each float argument, against finite differences."""
    for wrt, x in enumerate(args):
        expected = numerical(f, args, wrt)
        assert_leaves(s2sad.grad(f, wrt)(*args), expected)
        value, g = s2sad.value_and_grad(f, wrt)(*args)
        assert value == pytest.approx(f(*args))
        assert_leaves(g, expected)
        v = np.linspace(0.5, -0.25, np.size(x)).reshape(np.shape(x))
        value, slope = s2sad.jvp(f, wrt)(*args, v if np.ndim(x) else float(v))
        assert slope == pytest.approx(float(np.sum(expected[0] * v)), rel=1e-6, abs=1e-8)


def refused_at(f: typing.Any, args: tuple, line: int, column: int, text: str) -> None:
    """``grad(f)`` is refused at ``line`` of the text ``f`` was made from and ``column``,
    saying ``text``."""
    with pytest.raises(s2sad.S2SADError, match=text) as info:
        s2sad.grad(f)(*args)
    where = info.value.location
    assert (where.line, where.column) == (line, column)


# ---- the sweep -------------------------------------------------------------------------------
# name: (source, arguments: AA (two arrays), FF (two floats), X1 (one array))

ARGUMENTS = {"AA": (X, W), "FF": (0.4, 1.3), "X1": (X,)}

SWEEP = {
    'math_hypot': ('def f(a, b):\n    return math.hypot(a, b, 1.0)\n', 'FF'),  # (refused before numpy15: three arguments)
    'kwargs_forward': ('def inner(a, scale=1.0):\n    return a * scale\n\ndef h(a, **kw):\n    return inner(a, **kw)\n\ndef f(x, w):\n    return np.sum(h(x, scale=w))\n', 'AA'),  # (refused before python15: forwarding after named parameters, try/except)
    'try_except': ('def f(x, w):\n    try:\n        y = x * w\n    except ValueError:\n        y = x\n    return np.sum(y)\n', 'AA'),  # (refused before python15: forwarding after named parameters, try/except)
    'args_kwargs_forward': ('def inner(a, b, scale=1.0):\n    return a * b * scale\n\ndef h(*args, **kw):\n    return inner(*args, **kw)\n\ndef f(x, w):\n    return np.sum(h(x, w, scale=x[0]))\n', 'AA'),  # (refused before python14: container items, factories, forwarders, named tuples made)
    'closure_factory': ('def make(s):\n    def g(t):\n        return t * s\n    return g\n\ndef f(x, w):\n    h = make(2.0)\n    return np.sum(h(x) * w)\n', 'AA'),  # (refused before python14: container items, factories, forwarders, named tuples made)
    'dict_of_funcs': ("ACTS = {'tanh': np.tanh, 'sin': np.sin}\n\ndef f(x, w, act='tanh'):\n    return np.sum(ACTS[act](x) * w)\n", 'AA'),  # (refused before python14: container items, factories, forwarders, named tuples made)
    'dict_of_funcs_local': ("def f(x, w):\n    acts = {'tanh': np.tanh, 'sin': np.sin}\n    return np.sum(acts['sin'](x) * w)\n", 'AA'),  # (refused before python14: container items, factories, forwarders, named tuples made)
    'namedtuple_made': ("\nPair = collections.namedtuple('Pair', ['a', 'b'])\n\ndef f(x, w):\n    p = Pair(x, w)\n    return np.sum(p.a * p.b)\n", 'AA'),  # (refused before python14: container items, factories, forwarders, named tuples made)
    'namedtuple_unpack': ("\nPair = collections.namedtuple('Pair', ['a', 'b'])\n\ndef f(x, w):\n    a, b = Pair(x, w * 2)\n    return np.sum(a * b)\n", 'AA'),  # (refused before python14: container items, factories, forwarders, named tuples made)
    'global_write': ('K = 3.0\n\ndef f(x, w):\n    global K\n    K = 2.0\n    return np.sum(x * w * K)\n', 'AA'),  # (refused before: partial, max/min key, global stores)
    'max_key_lambda': ('def f(x, w):\n    ys = [x[0] * w[0], x[1] * w[1], x[2]]\n    return max(ys, key=lambda t: t * t)\n', 'AA'),  # (refused before: partial, max/min key, global stores)
    'min_key_abs': ('def f(x, w):\n    return min(list(x * w), key=abs)\n', 'AA'),  # (refused before: partial, max/min key, global stores)
    'partial': ('def h(a, b, scale=1.0):\n    return a * b * scale\n\ndef f(x, w):\n    g = functools.partial(h, scale=2.0)\n    return np.sum(g(x, w))\n', 'AA'),  # (refused before: partial, max/min key, global stores)
    'partial_grad': ('def h(a, b):\n    return a * b\n\ndef f(x, w):\n    g = functools.partial(h, w)\n    return np.sum(g(x))\n', 'AA'),  # (refused before: partial, max/min key, global stores)
    'abs_array': ('def f(x, w):\n    return np.sum(abs(x) * w)\n', 'AA'),
    'abs_neg': ('def f(a, b):\n    return abs(-a) * -b + +a\n', 'FF'),
    'annotations': ('def f(x: np.ndarray, w: np.ndarray) -> float:\n    y: np.ndarray = x * w\n    n: int\n    return float(np.sum(y))\n', 'AA'),
    'any_all': ('def f(x, w):\n    if any(t > 0.6 for t in x) and all(v < 2 for v in w):\n        return np.sum(x * w)\n    return np.sum(x)\n', 'AA'),
    'assert_': ("def f(x, w):\n    assert x.shape == w.shape, 'shapes'\n    assert np.all(np.isfinite(x))\n    return np.sum(x * w)\n", 'AA'),
    'assign_self_reverse': ('def f(x, w):\n    y = x * w\n    y[:] = y[::-1]\n    return np.sum(y * np.arange(1.0, 4.0))\n', 'AA'),
    'aug_2d': ('def f(x, w):\n    M = np.outer(x, w)\n    M[1, :] += x\n    M[:, 0] *= w\n    M[0, 2] -= 1.0\n    return np.sum(M ** 2)\n', 'AA'),
    'aug_array': ('def f(x, w):\n    y = x * 1.0\n    y += w\n    y *= x\n    y -= 1\n    y /= 2.0\n    y **= 2\n    return np.sum(y)\n', 'AA'),
    'aug_dict_item': ("def f(x, w):\n    d = {'a': x * 1.0, 'b': w}\n    d['a'] += w\n    d['b'] = d['b'] * 2\n    return np.sum(d['a'] * d['b'])\n", 'AA'),
    'aug_fancy_repeat': ('def f(x, w):\n    y = x.copy()\n    y[[0, 0, 1]] += w\n    return np.sum(y ** 2)\n', 'AA'),
    'aug_float': ('def f(a, b):\n    s = a\n    s += b\n    s *= a\n    s /= b\n    s **= 2\n    s -= a\n    s %= 5.0\n    return s\n', 'FF'),
    'aug_floordiv': ('def f(a, b):\n    s = a * 7.0\n    s //= b\n    return s * a\n', 'FF'),
    'aug_index_loop': ('def f(x, w):\n    y = np.zeros(3)\n    for i in range(3):\n        y[i] += x[i] * w[i]\n        y[(i + 1) % 3] -= x[i]\n    return np.sum(y ** 2)\n', 'AA'),
    'aug_list_item': ('def f(x, w):\n    ys = [x[0], x[1]]\n    ys[0] += w[0]\n    ys[1] *= ys[0]\n    return ys[0] + ys[1]\n', 'AA'),
    'aug_list_item_array': ('def f(x, w):\n    ys = [x * 1.0, w * 1.0]\n    ys[0] += w\n    return np.sum(ys[0] * ys[1])\n', 'AA'),
    'aug_mask': ('def f(x, w):\n    y = x.copy()\n    y[y > 0] *= w[0]\n    return np.sum(y ** 2)\n', 'AA'),
    'aug_matmul': ('def f(x, w):\n    M = np.outer(x, w)\n    M @= M\n    return np.sum(M)\n', 'AA'),
    'aug_neg_index': ('def f(x, w):\n    y = x.copy()\n    y[-1] += w[0]\n    y[::-1] *= w\n    return np.sum(y ** 2)\n', 'AA'),
    'aug_rev_overlap': ('def f(x, w):\n    y = x * w\n    y[1:] += y[:-1]\n    return np.sum(y * np.arange(1.0, 4.0))\n', 'AA'),
    'aug_self_overlap_mul': ('def f(x, w):\n    y = x * w\n    y[1:] *= y[:-1]\n    return np.sum(y * np.arange(1.0, 4.0))\n', 'AA'),
    'aug_self_reverse': ('def f(x, w):\n    y = x * w\n    y += y[::-1]\n    return np.sum(y * np.arange(1.0, 4.0))\n', 'AA'),
    'aug_slice': ('def f(x, w):\n    y = x.copy()\n    y[1:] += w[:2]\n    y[:2] *= x[1:]\n    return np.sum(y ** 2)\n', 'AA'),
    'aug_view_alias': ('def f(x, w):\n    y = x * w\n    v = y[1:]\n    v *= 3.0\n    return np.sum(y ** 2)\n', 'AA'),
    'bool_and_array_cond': ('def f(x, w):\n    if x[0] > 0 and w[0] > 0 or x[1] > 0:\n        return np.sum(x * w)\n    return np.sum(x)\n', 'AA'),
    'bool_arith': ('def f(a, b):\n    return (a > 0) * a * b + True * b\n', 'FF'),
    'bool_or_value': ('def f(a, b):\n    s = 0.0 or a\n    t = b and a * b\n    return s * t\n', 'FF'),
    'bound_method_grad': ('\nclass Model:\n    def __init__(self, W, s):\n        self.W = W\n        self._s = s\n    @property\n    def scale(self):\n        return self._s * 2.0\n    def helper(self, t):\n        return np.tanh(t * self.W)\n    def __call__(self, t):\n        return self.helper(t) * self.scale\n    @staticmethod\n    def sq(t):\n        return t ** 2\n    @classmethod\n    def cube(cls, t):\n        return cls.sq(t) * t\n    def loss(self, t):\n        return np.sum(self(t) + self.sq(t) + Model.cube(t))\n\nM = Model(np.array([0.5, 1.0, -1.5]), 3.0)\n\nf = M.loss\n', 'X1'),
    'branch_only_def': ('def f(x, w):\n    if x[0] > 0:\n        y = x * w\n    return np.sum(y)\n', 'AA'),
    'chain_compare': ('def f(a, b):\n    if 0.0 < a < b < 2.0:\n        return a * b\n    return a + b\n', 'FF'),
    'chain_compare_array': ('def f(x, w):\n    m = (x > -1) & (x < 0.5)\n    return np.sum(np.where(m, x * w, w))\n', 'AA'),
    'chained_assign': ('def f(x, w):\n    a = b = x * w\n    return np.sum(a + b ** 2)\n', 'AA'),
    'class_attr': ('class K:\n    scale = 2.5\n\ndef f(x, w):\n    return np.sum(x * K.scale * w)\n', 'AA'),
    'comp_shadow_outer': ('def f(x, w):\n    t = w[0]\n    ys = [t * 2 for t in x]\n    return sum(ys) * t\n', 'AA'),
    'continue_in_while': ('def f(a, b):\n    n = 0\n    s = 0.0\n    while n < 4:\n        n += 1\n        if n == 2:\n            continue\n        s = s + a ** n * b\n    return s\n', 'FF'),
    'dataclass_global': ('\n@dataclasses.dataclass\nclass P:\n    a: float\n    b: float = 2.0\n    def apply(self, t):\n        return self.a * t + self.b\n\nPP = P(0.5)\n\ndef f(x, w):\n    return np.sum(PP.apply(x) * w)\n', 'AA'),
    'default_from_global_array': ('WG = np.array([1.0, 2.0, 3.0])\n\ndef h(t, v=WG):\n    return t * v\n\ndef f(x, w):\n    return np.sum(h(x) * w)\n', 'AA'),
    'default_kw': ('def h(t, scale=2.0, *, power=2):\n    return scale * t ** power\n\ndef f(x, w):\n    return np.sum(h(x, power=3) + h(w, scale=x[0]))\n', 'AA'),
    'default_mutated': ('def h(t, acc=None):\n    if acc is None:\n        acc = []\n    acc = acc + [t]\n    return sum(acc)\n\ndef f(x, w):\n    return h(x[0]) * w[0] + h(x[1], [w[1]])\n', 'AA'),
    'del_local': ('def f(x, w):\n    y = x * w\n    t = y ** 2\n    del y\n    return np.sum(t)\n', 'AA'),
    'dict_comprehension_items': ("def f(x, w):\n    d = {'a': x, 'b': w}\n    e = {k: v * 2 for k, v in d.items()}\n    return np.sum(e['a'] * e['b'])\n", 'AA'),
    'dict_get_default': ("def f(x, w):\n    d = {'a': x[0]}\n    return d.get('a', 0.0) * w[0] + d.get('z', x[1])\n", 'AA'),
    'dict_items_loop': ("def f(x, w):\n    d = {'a': x[0] * w[0], 'b': x[1]}\n    s = 0.0\n    for k, v in d.items():\n        s = s + v * len(k)\n    return s\n", 'AA'),
    'dict_update_key': ("def f(x, w):\n    d = {'a': x[0]}\n    d['b'] = w[0] * x[1]\n    d['a'] = d['a'] * 3\n    return d['a'] + d['b']\n", 'AA'),
    'dictcomp': ("def f(x, w):\n    d = {k: x[i] * w[i] for i, k in enumerate('abc')}\n    return d['a'] + d['c'] ** 2\n", 'AA'),
    'dictcomp_values': ('def f(x, w):\n    d = {str(i): x[i] * w[i] for i in range(3)}\n    return sum(d.values())\n', 'AA'),
    'docstring': ("def f(x, w):\n    '''A docstring.'''\n    return np.sum(x * w)\n", 'AA'),
    'early_return': ('def f(x, w):\n    if np.sum(x) > 10:\n        return 0.0\n    y = x * w\n    if y[0] > 0:\n        return np.sum(y)\n    return np.sum(y ** 2)\n', 'AA'),
    'enumerate_start': ('def f(x, w):\n    s = 0.0\n    for i, t in enumerate(x, start=1):\n        s = s + t ** i * w[i - 1]\n    return s\n', 'AA'),
    'f_varargs': ('def f(x, *rest):\n    return np.sum(x * rest[0])\n', 'AA'),
    'float_cast': ('def f(x, w):\n    return float(np.sum(x)) * w[0] + float(x[1])\n', 'AA'),
    'float_inf_min': ("def f(a, b):\n    best = float('inf')\n    best = min(best, a * b)\n    return best\n", 'FF'),
    'floordiv': ('def f(a, b):\n    return (a * 7) // b + a * b\n', 'FF'),
    'for_break_else': ('def f(x, w):\n    s = 0.0\n    for t in x:\n        if t > 0.5:\n            break\n        s = s + t * w[0]\n    else:\n        s = s * 2.0\n    return s\n', 'AA'),
    'for_continue': ('def f(x, w):\n    s = 0.0\n    for i, t in enumerate(x):\n        if t < 0:\n            continue\n        s = s + t * w[i]\n    return s\n', 'AA'),
    'fstring_assign': ("def f(x, w):\n    y = x * w\n    msg = f'{y[0]} and {w!r}'\n    return np.sum(y)\n", 'AA'),
    'fstring_print': ("def f(x, w):\n    y = x * w\n    print(f'y = {np.sum(y):.3f}')\n    return np.sum(y)\n", 'AA'),
    'gen_named_once': ('def f(x, w):\n    g = (a * b for a, b in zip(x, w))\n    return sum(g)\n', 'AA'),
    'genexp_max': ('def f(x, w):\n    return max(a * b for a, b in zip(x, w))\n', 'AA'),
    'genexp_min': ('def f(x, w):\n    return min(a * b + a for a, b in zip(x, w))\n', 'AA'),
    'global_read': ('K = 3.0\n\ndef f(x, w):\n    return np.sum(x * w * K)\n', 'AA'),
    'if_elif_else': ('def f(x, w):\n    s = np.sum(x)\n    if s > 1.0:\n        y = x * w\n    elif s > 0.0:\n        y = x ** 2\n    else:\n        y = np.sin(x) * w\n    return np.sum(y)\n', 'AA'),
    'ifexp': ('def f(x, w):\n    y = x * w if x[0] > 0 else x - w\n    return np.sum(y ** 2)\n', 'AA'),
    'ifexp_nested': ('def f(a, b):\n    return a * b if a > 1 else (a ** 2 if b > 1 else b)\n', 'FF'),
    'inheritance_super': ('\nclass Base:\n    def act(self, t):\n        return np.sin(t)\n    def run(self, t):\n        return self.act(t) * 2.0\nclass Sub(Base):\n    def act(self, t):\n        return super().act(t) + t ** 2\nS = Sub()\n\ndef f(x, w):\n    return np.sum(S.run(x) * w)\n', 'AA'),
    'instance_inside': ('\nclass Model:\n    def __init__(self, W, s):\n        self.W = W\n        self._s = s\n    @property\n    def scale(self):\n        return self._s * 2.0\n    def helper(self, t):\n        return np.tanh(t * self.W)\n    def __call__(self, t):\n        return self.helper(t) * self.scale\n    @staticmethod\n    def sq(t):\n        return t ** 2\n    @classmethod\n    def cube(cls, t):\n        return cls.sq(t) * t\n    def loss(self, t):\n        return np.sum(self(t) + self.sq(t) + Model.cube(t))\n\nM = Model(np.array([0.5, 1.0, -1.5]), 3.0)\n\ndef f(x, w):\n    m = Model(np.ones(3), 2.0)\n    return np.sum(m(x) * w)\n', 'AA'),
    'int_pow': ('def f(a, b):\n    n = 3\n    return a ** n * b ** -2\n', 'FF'),
    'int_times_array': ('def f(x, w):\n    n = len(x)\n    return np.sum(x * n + w / n) / n\n', 'AA'),
    'isinstance_branch': ('def f(x, w):\n    if isinstance(x, float):\n        return x * 2\n    return np.sum(x * w)\n', 'AA'),
    'item': ('def f(x, w):\n    return x[0].item() * w[0] + np.sum(x * w).item()\n', 'AA'),
    'iter_enumerate_rebound': ('def f(x, w):\n    for i, t in enumerate(x):\n        x = x + t * w[i]\n    return np.sum(x ** 2)\n', 'AA'),
    'iter_rebound_array': ('def f(x, w):\n    for t in x:\n        x = x * t\n    return np.sum(x * w)\n', 'AA'),
    'iter_rebound_list': ('def f(x, w):\n    ys = [x[0], x[1]]\n    for t in ys:\n        ys = ys + [t * w[0]]\n    return sum(ys) * ys[-1]\n', 'AA'),
    'iter_reversed_rebound': ('def f(x, w):\n    for t in reversed(x):\n        x = x * t + w\n    return np.sum(x)\n', 'AA'),
    'iter_rows_rebound': ('def f(x, w):\n    M = np.outer(x, w)\n    for row in M:\n        M = M + row\n    return np.sum(M ** 2)\n', 'AA'),
    'iter_zip_rebound': ('def f(x, w):\n    for a, b in zip(x, w):\n        w = w * a\n        x = x + b\n    return np.sum(x * w)\n', 'AA'),
    'kwarg_eval_order': ('def h(a, b):\n    return a - b\n\ndef f(x, w):\n    return np.sum(h(b=x * 2, a=w * x))\n', 'AA'),
    'kwargs_call': ("def h(a, b=1.0):\n    return a * b\n\ndef f(x, w):\n    d = {'a': x, 'b': w}\n    return np.sum(h(**d))\n", 'AA'),
    'kwonly_f': ('def f(x, w, *, scale=2.0):\n    return np.sum(x * w) * scale\n', 'AA'),
    'lambda_closure_reassigned': ('def f(x, w):\n    s = x\n    g = lambda t: t * s\n    s = x ** 2\n    return np.sum(g(w))\n', 'AA'),
    'lambda_default': ('def f(x, w):\n    g = lambda t, k=3.0: t ** k\n    return np.sum(g(x) * w)\n', 'AA'),
    'lambda_immediate': ('def f(x, w):\n    return np.sum((lambda z: np.sin(z) * w)(x))\n', 'AA'),
    'lambda_map': ('def f(x, w):\n    return sum(map(lambda a, b: a * b, x, w))\n', 'AA'),
    'lambda_map_list': ('def f(x, w):\n    ys = list(map(lambda a: a ** 2, x))\n    return ys[0] * w[0] + ys[2] * w[1]\n', 'AA'),
    'lambda_named': ('def f(x, w):\n    sq = lambda t: t ** 2 * w\n    return np.sum(sq(x))\n', 'AA'),
    'lambda_reduce': ('def f(x, w):\n    return functools.reduce(lambda a, b: a * b + w[0], x)\n', 'AA'),
    'lambda_reduce_init': ('def f(x, w):\n    return functools.reduce(lambda a, b: a * b, x * w, 1.0)\n', 'AA'),
    'lambda_sorted_key': ('def f(x, w):\n    ys = sorted(x, key=lambda t: -t)\n    return ys[0] * w[0] + ys[1] * w[1]\n', 'AA'),
    'len_scalar_mix': ('def f(x, w):\n    return np.sum(x) / len(x) + np.mean(w) * x.size\n', 'AA'),
    'list_concat_mult': ('def f(x, w):\n    ys = [x[0]] * 3 + [w[1]]\n    return sum(y * i for i, y in enumerate(ys))\n', 'AA'),
    'list_insert_extend': ('def f(x, w):\n    ys = [x[0]]\n    ys.insert(0, w[0] * x[1])\n    ys.extend([x[2], w[1]])\n    return ys[0] * ys[1] + ys[3] * ys[2]\n', 'AA'),
    'list_pop': ('def f(x, w):\n    ys = [x[0], x[1] * w[1], w[2]]\n    last = ys.pop()\n    return last * ys[-1]\n', 'AA'),
    'list_slice': ('def f(x, w):\n    ys = [x[0], x[1], x[2] * w[0]]\n    zs = ys[1:]\n    return sum(zs) * ys[0] + sum(ys[::-1][:2])\n', 'AA'),
    'listcomp': ('def f(x, w):\n    ys = [a * b for a, b in zip(x, w)]\n    return sum(ys)\n', 'AA'),
    'listcomp_arrays_stack': ('def f(x, w):\n    rows = [x * w[i] for i in range(3)]\n    return np.sum(np.stack(rows) ** 2)\n', 'AA'),
    'listcomp_if': ('def f(x, w):\n    ys = [a * w[0] for a in x if a > 0]\n    return sum(ys)\n', 'AA'),
    'listcomp_nested': ('def f(x, w):\n    ys = [a * b for a in x for b in w]\n    return sum(ys)\n', 'AA'),
    'loop_closure_comp': ('def f(x, w):\n    return sum((lambda t: t * w[i])(x[i]) for i in range(3))\n', 'AA'),
    'loop_else_break_flag': ('def f(x, w):\n    for t in x:\n        if t > 0.6:\n            y = t * w[0]\n            break\n    else:\n        y = w[1]\n    return y * x[0]\n', 'AA'),
    'loop_string': ("def f(x, w):\n    d = {'a': x, 'b': w}\n    s = 0.0\n    for c in 'ab':\n        s = s + np.sum(d[c] ** 2)\n    return s\n", 'AA'),
    'loop_var_after': ('def f(x, w):\n    for t in x:\n        pass\n    return t * w[0]\n', 'AA'),
    'loop_var_after_break': ('def f(x, w):\n    for i in range(3):\n        t = x[i] * w[i]\n        if i == 1:\n            break\n    return t + i\n', 'AA'),
    'loopvar_rebind': ('def f(x, w):\n    s = 0.0\n    for t in x:\n        t = t * 2\n        s = s + t * w[0]\n    return s\n', 'AA'),
    'map_named_func': ('def sq(t):\n    return t * t\n\ndef f(x, w):\n    return sum(map(sq, x * w))\n', 'AA'),
    'map_np_func': ('def f(x, w):\n    return sum(map(np.sin, x)) * w[0]\n', 'AA'),
    'math_acos': ('def f(a, b):\n    return math.acos(a * 0.5) * b\n', 'FF'),
    'math_asin': ('def f(a, b):\n    return math.asin(a * 0.5) * b\n', 'FF'),
    'math_asinh': ('def f(a, b):\n    return math.asinh(a * 0.5) * b\n', 'FF'),
    'math_atan': ('def f(a, b):\n    return math.atan(a * 0.5) * b\n', 'FF'),
    'math_atan2': ('def f(a, b):\n    return math.atan2(a, b)\n', 'FF'),
    'math_atanh': ('def f(a, b):\n    return math.atanh(a * 0.5) * b\n', 'FF'),
    'math_copysign': ('def f(a, b):\n    return math.copysign(a, -b) * b\n', 'FF'),
    'math_cos': ('def f(a, b):\n    return math.cos(a * 0.5) * b\n', 'FF'),
    'math_cosh': ('def f(a, b):\n    return math.cosh(a * 0.5) * b\n', 'FF'),
    'math_degrees': ('def f(a, b):\n    return math.degrees(a * 0.5) * b\n', 'FF'),
    'math_erf': ('def f(a, b):\n    return math.erf(a * 0.5) * b\n', 'FF'),
    'math_erfc': ('def f(a, b):\n    return math.erfc(a * 0.5) * b\n', 'FF'),
    'math_exp': ('def f(a, b):\n    return math.exp(a * 0.5) * b\n', 'FF'),
    'math_expm1': ('def f(a, b):\n    return math.expm1(a * 0.5) * b\n', 'FF'),
    'math_fabs': ('def f(a, b):\n    return math.fabs(a * 0.5) * b\n', 'FF'),
    'math_fmod': ('def f(a, b):\n    return math.fmod(a * 5.0, b)\n', 'FF'),
    'math_fsum': ('def f(a, b):\n    return math.fsum([a, a * b, b ** 2])\n', 'FF'),
    'math_inf_compare': ('def f(a, b):\n    best = math.inf\n    for t in [a, b, a * b]:\n        if t < best:\n            best = t\n    return best * 2\n', 'FF'),
    'math_log': ('def f(a, b):\n    return math.log(a * 0.5) * b\n', 'FF'),
    'math_log10': ('def f(a, b):\n    return math.log10(a * 0.5) * b\n', 'FF'),
    'math_log1p': ('def f(a, b):\n    return math.log1p(a * 0.5) * b\n', 'FF'),
    'math_log2': ('def f(a, b):\n    return math.log2(a * 0.5) * b\n', 'FF'),
    'math_log_base': ('def f(a, b):\n    return math.log(a, b + 1.0)\n', 'FF'),
    'math_on_array_item': ('def f(x, w):\n    return math.exp(x[0]) * w[1] + math.sqrt(abs(x[1]))\n', 'AA'),
    'math_on_npfloat': ('def f(x, w):\n    s = np.sum(x * w)\n    return math.tanh(s) + math.log(np.sum(w ** 2))\n', 'AA'),
    'math_pi': ('def f(a, b):\n    return math.pi * a * b + math.e * a\n', 'FF'),
    'math_pow': ('def f(a, b):\n    return math.pow(a, b)\n', 'FF'),
    'math_radians': ('def f(a, b):\n    return math.radians(a * 0.5) * b\n', 'FF'),
    'math_remainder': ('def f(a, b):\n    return math.remainder(a * 5.0, b)\n', 'FF'),
    'math_sin': ('def f(a, b):\n    return math.sin(a * 0.5) * b\n', 'FF'),
    'math_sinh': ('def f(a, b):\n    return math.sinh(a * 0.5) * b\n', 'FF'),
    'math_sqrt': ('def f(a, b):\n    return math.sqrt(a * 0.5) * b\n', 'FF'),
    'math_tan': ('def f(a, b):\n    return math.tan(a * 0.5) * b\n', 'FF'),
    'math_tanh': ('def f(a, b):\n    return math.tanh(a * 0.5) * b\n', 'FF'),
    'matmul_op': ('def f(x, w):\n    M = np.outer(x, w)\n    return x @ M @ w\n', 'AA'),
    'max_args': ('def f(a, b):\n    return max(a, b, 1.0) * min(a, b)\n', 'FF'),
    'max_list': ('def f(x, w):\n    return max([x[0] * w[0], x[1], x[2] * 2])\n', 'AA'),
    'method_call': ('\nclass Model:\n    def __init__(self, W, s):\n        self.W = W\n        self._s = s\n    @property\n    def scale(self):\n        return self._s * 2.0\n    def helper(self, t):\n        return np.tanh(t * self.W)\n    def __call__(self, t):\n        return self.helper(t) * self.scale\n    @staticmethod\n    def sq(t):\n        return t ** 2\n    @classmethod\n    def cube(cls, t):\n        return cls.sq(t) * t\n    def loss(self, t):\n        return np.sum(self(t) + self.sq(t) + Model.cube(t))\n\nM = Model(np.array([0.5, 1.0, -1.5]), 3.0)\n\ndef f(x, w):\n    return np.sum(M.helper(x) * w)\n', 'AA'),
    'method_dunder_call': ('\nclass Model:\n    def __init__(self, W, s):\n        self.W = W\n        self._s = s\n    @property\n    def scale(self):\n        return self._s * 2.0\n    def helper(self, t):\n        return np.tanh(t * self.W)\n    def __call__(self, t):\n        return self.helper(t) * self.scale\n    @staticmethod\n    def sq(t):\n        return t ** 2\n    @classmethod\n    def cube(cls, t):\n        return cls.sq(t) * t\n    def loss(self, t):\n        return np.sum(self(t) + self.sq(t) + Model.cube(t))\n\nM = Model(np.array([0.5, 1.0, -1.5]), 3.0)\n\ndef f(x, w):\n    return np.sum(M(x) * w)\n', 'AA'),
    'method_loss': ('\nclass Model:\n    def __init__(self, W, s):\n        self.W = W\n        self._s = s\n    @property\n    def scale(self):\n        return self._s * 2.0\n    def helper(self, t):\n        return np.tanh(t * self.W)\n    def __call__(self, t):\n        return self.helper(t) * self.scale\n    @staticmethod\n    def sq(t):\n        return t ** 2\n    @classmethod\n    def cube(cls, t):\n        return cls.sq(t) * t\n    def loss(self, t):\n        return np.sum(self(t) + self.sq(t) + Model.cube(t))\n\nM = Model(np.array([0.5, 1.0, -1.5]), 3.0)\n\ndef f(x, w):\n    return M.loss(x * w)\n', 'AA'),
    'method_property': ('\nclass Model:\n    def __init__(self, W, s):\n        self.W = W\n        self._s = s\n    @property\n    def scale(self):\n        return self._s * 2.0\n    def helper(self, t):\n        return np.tanh(t * self.W)\n    def __call__(self, t):\n        return self.helper(t) * self.scale\n    @staticmethod\n    def sq(t):\n        return t ** 2\n    @classmethod\n    def cube(cls, t):\n        return cls.sq(t) * t\n    def loss(self, t):\n        return np.sum(self(t) + self.sq(t) + Model.cube(t))\n\nM = Model(np.array([0.5, 1.0, -1.5]), 3.0)\n\ndef f(x, w):\n    return np.sum(x * M.scale * w)\n', 'AA'),
    'method_static_cls': ('\nclass Model:\n    def __init__(self, W, s):\n        self.W = W\n        self._s = s\n    @property\n    def scale(self):\n        return self._s * 2.0\n    def helper(self, t):\n        return np.tanh(t * self.W)\n    def __call__(self, t):\n        return self.helper(t) * self.scale\n    @staticmethod\n    def sq(t):\n        return t ** 2\n    @classmethod\n    def cube(cls, t):\n        return cls.sq(t) * t\n    def loss(self, t):\n        return np.sum(self(t) + self.sq(t) + Model.cube(t))\n\nM = Model(np.array([0.5, 1.0, -1.5]), 3.0)\n\ndef f(x, w):\n    return np.sum(Model.sq(x) * Model.cube(w))\n', 'AA'),
    'min_max_arrays': ('def f(x, w):\n    return np.sum(max(x[0], w[0]) * x) + min(x[1], w[1])\n', 'AA'),
    'mod': ('def f(a, b):\n    return (a * 7) % b + a\n', 'FF'),
    'mutual_recursion': ('def ev(t, n):\n    return t if n == 0 else od(t * 2.0, n - 1)\n\ndef od(t, n):\n    return np.sin(t) if n == 0 else ev(t + 1.0, n - 1)\n\ndef f(x, w):\n    return np.sum(ev(x * w, 3))\n', 'AA'),
    'nested_break_continue': ('def f(x, w):\n    s = 0.0\n    for i in range(3):\n        if i == 1:\n            continue\n        for j in range(3):\n            if j == 2:\n                break\n            s = s + x[i] * w[j]\n    return s\n', 'AA'),
    'nested_comp_closure': ('def f(x, w):\n    M = [[x[i] * w[j] for j in range(3)] for i in range(3)]\n    return M[0][1] + M[2][2] * M[1][0]\n', 'AA'),
    'nested_def_closure': ('def f(x, w):\n    def inner(t):\n        return np.tanh(t * w)\n    return np.sum(inner(x) + inner(2 * x))\n', 'AA'),
    'nested_def_late': ('def f(x, w):\n    def inner(t):\n        return t * s\n    s = w ** 2\n    a = inner(x)\n    s = w\n    return np.sum(a + inner(x))\n', 'AA'),
    'nested_def_twice': ('def f(x, w):\n    def a(t):\n        def b(u):\n            return u * w\n        return b(t) + t\n    return np.sum(a(x) ** 2)\n', 'AA'),
    'nested_dict': ("def f(x, w):\n    p = {'l1': {'W': x, 'b': w}}\n    return np.sum(p['l1']['W'] * p['l1']['b'])\n", 'AA'),
    'nested_loops_break': ('def f(x, w):\n    s = 0.0\n    for i in range(3):\n        for j in range(3):\n            if j > i:\n                break\n            s = s + x[i] * w[j]\n    return s\n', 'AA'),
    'nested_unpack': ('def f(x, w):\n    (a, b), c = (x[0], x[1] * w[1]), w[2]\n    return a * b * c\n', 'AA'),
    'none_default_branch': ('def f(x, w, b=None):\n    y = x * w\n    if b is not None:\n        y = y + b\n    return np.sum(y ** 2)\n', 'AA'),
    'not_cond': ('def f(x, w):\n    if not x[0] > 1:\n        return np.sum(x * w)\n    return 0.0\n', 'AA'),
    'np_scalar_loop': ('def f(x, w):\n    s = np.float64(0.0)\n    for t in x:\n        s += t * w[0]\n    return s\n', 'AA'),
    'numpy_scalar_float': ('def f(x, w):\n    s = np.float64(2.0) * x[0]\n    return s * w[0] + np.float32(1.0) * x[1]\n', 'AA'),
    'posonly': ('def h(a, b, /, c=1.0):\n    return a * b + c\n\ndef f(x, w):\n    return np.sum(h(x, w, c=x))\n', 'AA'),
    'pow_builtin': ('def f(a, b):\n    return pow(a, 3) + pow(a, b) + 2 ** a + a ** 0.5\n', 'FF'),
    'pow_neg': ('def f(x, w):\n    return np.sum((x ** 2 + 1) ** -0.5 * w)\n', 'AA'),
    'raise_guard': ("def f(x, w):\n    if x.ndim != 1:\n        raise ValueError('1-d please')\n    return np.sum(x * w)\n", 'AA'),
    'range_len_rebound': ('def f(x, w):\n    n = 2\n    for i in range(n):\n        n = n + 1\n        x = x * w\n    return np.sum(x) * n\n', 'AA'),
    'range_neg_step': ('def f(x, w):\n    s = 0.0\n    for i in range(2, -1, -1):\n        s = s * w[i] + x[i]\n    return s\n', 'AA'),
    'recursion_float': ('def pw(t, n):\n    return 1.0 if n == 0 else t * pw(t, n - 1)\n\ndef f(a, b):\n    return pw(a, 4) * b\n', 'FF'),
    'recursion_list': ('def tot(xs):\n    if not xs:\n        return 0.0\n    return xs[0] ** 2 + tot(xs[1:])\n\ndef f(x, w):\n    return tot([x[0], x[1] * w[1], w[2]])\n', 'AA'),
    'recursion_power': ('def pw(t, n):\n    if n == 0:\n        return 1.0\n    return t * pw(t, n - 1)\n\ndef f(x, w):\n    return np.sum(pw(x, 3) * w)\n', 'AA'),
    'reduce_operator': ('def f(x, w):\n    return functools.reduce(operator.mul, x) + functools.reduce(operator.add, w * x)\n', 'AA'),
    'return_from_nested_loop': ('def f(x, w):\n    for i in range(3):\n        for j in range(3):\n            if x[i] * w[j] > 0.4:\n                return x[i] * w[j]\n    return 0.0\n', 'AA'),
    'return_in_loop': ('def f(x, w):\n    s = 0.0\n    for i in range(3):\n        s = s + x[i] * w[i]\n        if s < -0.3:\n            return s * 2\n    return s\n', 'AA'),
    'reversed_range': ('def f(x, w):\n    s = 1.0\n    for i in reversed(range(3)):\n        s = s * x[i] + w[i]\n    return s\n', 'AA'),
    'round_': ('def f(a, b):\n    return round(a, 1) * b + round(b) + a\n', 'FF'),
    'round_builtin_array': ('def f(x, w):\n    return np.sum(x * w) + round(float(x[0]), 3) * 0\n', 'AA'),
    'rpow': ('def f(x, w):\n    return np.sum(2.0 ** x * w)\n', 'AA'),
    'shadow_max': ('def f(x, w):\n    max = x[0]\n    for t in x:\n        if t > max:\n            max = t\n    return max * w[0]\n', 'AA'),
    'shadow_sum': ('def f(x, w):\n    sum = 0.0\n    for a, b in zip(x, w):\n        sum += a * b\n    return sum\n', 'AA'),
    'slice_swap_views': ('def f(x, w):\n    y = x * w\n    y[:2], y[1:] = y[1:], y[:2].copy()\n    return np.sum(y * np.arange(1.0, 4.0))\n', 'AA'),
    'slice_tuple_assign_views': ('def f(x, w):\n    y = x * w\n    y[0], y[1] = y[1], y[0]\n    return np.sum(y * np.arange(1.0, 4.0))\n', 'AA'),
    'slice_tuple_assign_views2': ('def f(x, w):\n    y = x * w\n    y[:2], y[2:] = y[1:], y[:1]\n    return np.sum(y * np.arange(1.0, 4.0))\n', 'AA'),
    'sorted_arrays_key': ('def f(x, w):\n    rows = [x, w, x * w]\n    rows = sorted(rows, key=lambda r: float(np.sum(r)))\n    return np.sum(rows[0] * rows[2])\n', 'AA'),
    'chained_assign_subscript': ('def f(x, w):\n    y = np.zeros(3)\n    z = np.zeros(3)\n    y[0] = z[1] = x[0] * w[0]\n    return np.sum(y * z) + y[0]\n', 'AA'),  # (refused before: chained assignment into elements)
    'zip_star': ('def f(x, w):\n    rows = [(x[0], w[0]), (x[1], w[1])]\n    a, b = zip(*rows)\n    return a[0] * b[1] + a[1]\n', 'AA'),  # (refused before: zip(*rows) outside a loop)
    'star_args': ('def h(*ts):\n    return sum(np.sum(t ** 2) for t in ts)\n\ndef f(x, w):\n    return h(x, w, x * w)\n', 'AA'),
    'star_args_call': ('def h(a, b):\n    return a * b\n\ndef f(x, w):\n    t = (x, w)\n    return np.sum(h(*t))\n', 'AA'),
    'star_unpack': ('def f(x, w):\n    a, *rest = x * w\n    return a * rest[1] + rest[0]\n', 'AA'),
    'star_unpack_mid': ('def f(x, w):\n    a, *mid, c = [x[0], x[1], w[0], w[1], x[2]]\n    return a * c + sum(mid) * mid[0]\n', 'AA'),
    'sum_generator_arrays': ('def f(x, w):\n    return np.sum(sum(x * w[i] for i in range(3)))\n', 'AA'),
    'sum_list_arrays': ('def f(x, w):\n    return np.sum(sum([x, w, x * w]))\n', 'AA'),
    'sum_range_float': ('def f(a, b):\n    return sum(a ** i for i in range(4)) * b\n', 'FF'),
    'sum_start': ('def f(x, w):\n    return sum((a * a for a in x), w[0])\n', 'AA'),
    'swap': ('def f(a, b):\n    for _ in range(3):\n        a, b = b, a * b + 0.1\n    return a + 2 * b\n', 'FF'),
    'tolist': ('def f(x, w):\n    ys = x.tolist()\n    return ys[0] * w[0] + sum(ys)\n', 'AA'),
    'tuple_index_neg': ('def f(x, w):\n    t = (x[0], x[1], w[0] * x[2])\n    return t[-1] * t[-2]\n', 'AA'),
    'tuple_unpack': ('def f(x, w):\n    a, b, c = x\n    return a * w[0] + b * c\n', 'AA'),
    'type_change': ('def f(x, w):\n    y = x * w\n    s = np.sum(y)\n    y = 3.0\n    return s * y\n', 'AA'),
    'unary_chain': ('def f(a, b):\n    return -(-a) * +b - ~3\n', 'FF'),
    'unpack_enumerate_zip': ('def f(x, w):\n    s = 0.0\n    for i, (a, b) in enumerate(zip(x, w)):\n        s = s + a * b * i\n    return s\n', 'AA'),
    'unpack_for': ('def f(x, w):\n    s = 0.0\n    for (a, b) in zip(x, w):\n        s = s + a * b\n    return s\n', 'AA'),
    'unpack_in_comp': ('def f(x, w):\n    pairs = [(x[i], w[i]) for i in range(3)]\n    return sum(a * b for a, b in pairs)\n', 'AA'),
    'walrus_expr': ('def f(x, w):\n    return np.sum((y := x * w) * y)\n', 'AA'),
    'walrus_if': ('def f(x, w):\n    if (s := np.sum(x * w)) > 0:\n        return s ** 2\n    return s\n', 'AA'),
    'walrus_while': ('def f(a, b):\n    n = 0\n    while (a := a * b) < 5.0 and n < 10:\n        n += 1\n    return a\n', 'FF'),
    'while_break_cond': ('def f(x, w):\n    s = x[0]\n    n = 0\n    while True:\n        s = s * 0.5 + w[0]\n        n += 1\n        if n >= 4:\n            break\n    return s * x[1]\n', 'AA'),
    'while_counter_float': ('def f(a, b):\n    t = 0.0\n    y = a\n    while t < 1.0:\n        y = y + 0.25 * y * b\n        t += 0.25\n    return y\n', 'FF'),
    'while_else': ('def f(x, w):\n    i = 0\n    s = x[0]\n    while i < 3:\n        s = s * w[i] + x[i]\n        i += 1\n    else:\n        s = s ** 2\n    return s\n', 'AA'),
    'while_else_break': ('def f(a, b):\n    n = 0\n    while n < 5:\n        a = a * b\n        if a > 2.0:\n            break\n        n += 1\n    else:\n        a = -a\n    return a\n', 'FF'),
    'while_value_cond': ('def f(a, b):\n    while a < 10.0:\n        a = a * 2.0 + b\n    return a\n', 'FF'),
    'zip_unequal': ('def f(x, w):\n    return sum(a * b for a, b in zip(x, w[1:]))\n', 'AA'),
}

REFUSED = {
    'attr_aug_local_obj': ('\nclass Acc:\n    def __init__(self):\n        self.total = 0.0\n    def add(self, t):\n        self.total += t\n        return self.total\n\ndef f(x, w):\n    a = Acc()\n    a.total += x[0] * w[0]\n    return a.total\n', 'AA', 11, 5, "the\\ value\\ stored\\ in\\ 'a\\.total'\\ carries\\ a\\ gradient"),
    'aug_dict_item_alias': ("def f(x, w):\n    d = {'a': x}\n    d['a'] += w\n    return np.sum(d['a'] * x)\n", 'AA', 3, 5, "'d'\\ holds\\ 'x',\\ which\\ is\\ read\\ later:\\ 'd\\['"),
    'aug_param_alias': ('def f(x, w):\n    y = x\n    y += w\n    return np.sum(y * x)\n', 'AA', 3, 5, "'y'\\ and\\ 'x'\\ are\\ the\\ same\\ object,\\ and\\ 'x'"),
    'closure_factory_grad': ('def make(s):\n    def g(t):\n        return t * s\n    return g\n\ndef f(x, w):\n    h = make(x)\n    return np.sum(h(w))\n', 'AA', 2, 5, "the nested function 'g' is used other than called"),
    'comp_walrus': ('def f(x, w):\n    y = 1.0\n    ys = [y := y * a for a in x]\n    return y * w[0] + ys[0]\n', 'AA', 3, 11, "the\\ walrus\\ operator\\ ':='\\ inside\\ a\\ compre"),
    'complex_abs': ('def f(a, b):\n    return abs(complex(a, b))\n', 'FF', 2, 16, "no\\ gradient\\ rule\\ for\\ 'complex';\\ register"),
    'dataclass_made': ('\n@dataclasses.dataclass\nclass P:\n    a: float\n    b: float = 2.0\n    def apply(self, t):\n        return self.a * t + self.b\n\nPP = P(0.5)\n\ndef f(x, w):\n    p = P(x[0], w[1])\n    return np.sum(p.apply(x))\n', 'AA', 12, 9, "'P\\(\\.\\.\\.\\)'\\ builds\\ an\\ instance\\ of\\ P\\ from\\ va"),
    'dict_setdefault': ("def f(x, w):\n    d = {}\n    d.setdefault('a', x[0] * w[0])\n    return d['a'] * 2\n", 'AA', 3, 5, 'an\\ expression\\ statement\\ whose\\ result\\ is\\ '),
    'gen_named_twice': ('def f(x, w):\n    g = (a * b for a, b in zip(x, w))\n    s = sum(g)\n    return s + sum(g)\n', 'AA', 2, 10, 'a\\ generator\\ bound\\ to\\ a\\ name\\ is\\ an\\ iterat'),
    'iter_next': ('def f(x, w):\n    it = iter(x)\n    a = next(it)\n    b = next(it)\n    return a * b * w[0]\n', 'AA', 2, 10, 's2sad\\ does\\ not\\ follow\\ an\\ iterator\\ through\\ iter'),
    'lambda_default_captures': ('def f(x, w):\n    k = x[0]\n    g = lambda t, s=k: t * s\n    k = 5.0\n    return np.sum(g(w))\n', 'AA', 3, 21, "a\\ default\\ value\\ of\\ the\\ nested\\ function\\ '"),
    'lambda_late_binding': ('def f(x, w):\n    fs = []\n    for i in range(3):\n        fs.append(lambda t: t * w[i])\n    return sum(g(x[0]) for g in fs)\n', 'AA', 4, 19, 'a\\ lambda\\ is\\ differentiated\\ bound\\ to\\ a\\ na'),
    'lambda_list_default_binding': ('def f(x, w):\n    fs = [lambda t, i=i: t * w[i] for i in range(3)]\n    return fs[0](x[0]) + fs[1](x[1])\n', 'AA', 2, 11, 'a\\ lambda\\ is\\ differentiated\\ bound\\ to\\ a\\ na'),
    'lambda_nested': ('def f(x, w):\n    add = lambda a: lambda b: a * b\n    return np.sum(add(x)(w))\n', 'AA', 3, 19, "'add\\(x\\)'\\ is\\ a\\ local\\ variable\\ \\(or\\ an\\ unkn"),
    'math_cbrt': ('def f(a, b):\n    return math.cbrt(a * 0.5) * b\n', 'FF', 2, 12, "no\\ gradient\\ rule\\ for\\ 'math\\.cbrt';\\ regist"),
    'math_dist': ('def f(a, b):\n    return math.dist((a, b), (0.0, 1.0))\n', 'FF', 2, 12, "no\\ gradient\\ rule\\ for\\ 'math\\.dist';\\ regist"),
    'math_exp2': ('def f(a, b):\n    return math.exp2(a * 0.5) * b\n', 'FF', 2, 12, "no\\ gradient\\ rule\\ for\\ 'math\\.exp2';\\ regist"),
    'math_ldexp': ('def f(a, b):\n    return math.ldexp(a, 2) * b\n', 'FF', 2, 12, "no\\ gradient\\ rule\\ for\\ 'math\\.ldexp';\\ regis"),
    'method_mutates_self': ('\nclass Acc:\n    def __init__(self):\n        self.total = 0.0\n    def add(self, t):\n        self.total += t\n        return self.total\n\ndef f(x, w):\n    a = Acc()\n    a.add(x[0])\n    return a.add(w[1]) * x[1]\n', 'AA', 11, 5, 'an\\ expression\\ statement\\ whose\\ result\\ is\\ '),
    'method_mutates_self_assigned': ('\nclass Acc:\n    def __init__(self):\n        self.total = 0.0\n    def add(self, t):\n        self.total += t\n        return self.total\n\ndef f(x, w):\n    a = Acc()\n    u = a.add(x[0])\n    return a.add(w[1]) * x[1]\n', 'AA', 11, 9, 'a\\.add\\(\\.\\.\\.\\)\\ is\\ passed\\ values\\ that\\ carry\\ a'),
    'method_mutates_self_list': ('\nclass Acc:\n    def __init__(self):\n        self.items = []\n    def add(self, t):\n        self.items.append(t)\n        return len(self.items)\n\ndef f(x, w):\n    a = Acc()\n    n = a.add(x[0] * w[0])\n    m = a.add(x[1])\n    return a.items[0] * a.items[1]\n', 'AA', 11, 9, 'a\\.add\\(\\.\\.\\.\\)\\ is\\ passed\\ values\\ that\\ carry\\ a'),
    'nested_append_outer': ('def f(x, w):\n    acc = []\n    def g(t):\n        acc.append(t * w)\n    g(x)\n    g(x ** 2)\n    return np.sum(acc[0] + acc[1])\n', 'AA', 5, 5, 'an\\ expression\\ statement\\ whose\\ result\\ is\\ '),
    'nested_def_default': ('def f(x, w):\n    k = x[0]\n    def inner(t, s=k):\n        return t * s\n    k = 2.0\n    return np.sum(inner(w))\n', 'AA', 3, 20, "a\\ default\\ value\\ of\\ the\\ nested\\ function\\ '"),
    'nested_recursive': ('def f(x, w):\n    def p(t, n):\n        if n == 0:\n            return t\n        return p(t * w, n - 1)\n    return np.sum(p(x, 3))\n', 'AA', 2, 5, "the\\ nested\\ function\\ 'p'\\ calls\\ itself\\ and"),
    'nonlocal_counter': ('def f(x, w):\n    n = 0\n    def g(t):\n        nonlocal n\n        n += 1\n        return t * w\n    return np.sum(g(x)) * n\n', 'AA', 4, 9, "'nonlocal'\\ is\\ not\\ supported;\\ pass\\ the\\ va"),
    'setcomp': ('def f(x, w):\n    s = {int(i) for i in range(3)}\n    return sum(x[i] * w[i] for i in s)\n', 'AA', 3, 5, 'this\\ loop\\ iterates\\ over\\ a\\ set,\\ which\\ s2s'),
    'shadow_abs_param': ('def f(x, w, abs=np.abs):\n    return np.sum(abs(x) * w)\n', 'AA', 2, 19, "'abs'\\ is\\ a\\ parameter\\ called\\ as\\ a\\ functio"),
    'string_ops': ("def f(x, w):\n    name = 'layer' + str(1)\n    d = {name: x}\n    return np.sum(d['layer1'] * w)\n", 'AA', 3, 10, 'dict\\ keys\\ must\\ be\\ string\\ literals'),
    'try_finally_return': ('def f(x, w):\n    try:\n        return np.sum(x * w)\n    finally:\n        pass\n', 'AA', 2, 5, "'try'\\ statements\\ are\\ not\\ supported;\\ hand"),
}

#: checked through every mode (vjp, jacobian, hvp, hessian, grad of grad, jit="auto" too)
EVERY_MODE = ("lambda_reduce", "method_loss", "nested_def_closure", "recursion_power", "star_args",
              "while_else", "aug_slice", "dictcomp")


@pytest.mark.parametrize("name", sorted(SWEEP))
def test_the_form_is_differentiated(name: str) -> None:
    source, kind = SWEEP[name]
    with warnings.catch_warnings():  # (a form whose gradient in one argument is zero)
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        check_light(made(source), ARGUMENTS[kind])


@pytest.mark.parametrize("name", EVERY_MODE)
@pytest.mark.parametrize("wrt", [0, 1])
def test_the_form_in_every_mode(name: str, wrt: int) -> None:
    source, kind = SWEEP[name]
    check(made(source), ARGUMENTS[kind], wrt)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_form_is_refused_where_it_stands(name: str) -> None:
    source, kind, line, column, text = REFUSED[name]
    refused_at(made(source), ARGUMENTS[kind], line, column, text)


# ---- regressions -----------------------------------------------------------------------------

ACC = '''
class Acc:
    def __init__(self):
        self.total = 0.0
    def add(self, t):
        self.total += t
        return self.total
'''

STATEFUL = {
    # a method keeps what it is passed in its object, and its result is unused
    "method_attribute": (ACC + "\ndef f(x, w):\n    a = Acc()\n    u = a.add(x[0])\n"
                         "    return a.add(w[1]) * x[1]\n", 11, 9),
    "method_list": ("class Acc:\n    def __init__(self):\n        self.items = []\n    def add(self, t):\n"
                    "        self.items.append(t)\n        return len(self.items)\n\ndef f(x, w):\n"
                    "    a = Acc()\n    n = a.add(x[0] * w[0])\n    m = a.add(x[1])\n"
                    "    return a.items[0] * a.items[1]\n", 10, 9),
    # a function writes into an array it is passed; its result is unused or only a number
    "function_setitem": ("def put(a, v):\n    a[0] = v\n    return 0\n\ndef f(x, w):\n    y = np.zeros(3)\n"
                         "    s = put(y, x[0])\n    return np.sum(y * w)\n", 7, 9),
    "function_in_a_condition": ("def put(a, v):\n    a[0] = v\n    return v > 0\n\ndef f(x, w):\n"
                                "    y = np.zeros(3)\n    if put(y, x[0]):\n        return np.sum(y * w)\n"
                                "    return np.sum(w)\n", 7, 8),
    "through_another_function": ("def put(a, v):\n    a[0] = v\n    return 0\n\ndef outer(a, v):\n"
                                 "    z = put(a, v)\n    return 1\n\ndef f(x, w):\n    y = np.zeros(3)\n"
                                 "    s = outer(y, x[0] * w[0])\n    return np.sum(y * w)\n", 11, 9),
    "appended_to_a_list": ("def push(items, v):\n    items.append(v)\n    return len(items)\n\ndef f(x, w):\n"
                           "    ys = [w[0]]\n    n = push(ys, x[0])\n    return ys[-1] * w[1]\n", 7, 9),
    # a function calls a method of an object it is passed, which keeps the value
    "method_of_an_argument": ("class Box:\n    def __init__(self):\n        self.v = None\n    def store(self, t):\n"
                              "        self.v = t\n        return 0\n\ndef keep(b, t):\n    r = b.store(t)\n"
                              "    return r\n\nB = Box()\n\ndef f(x, w):\n    u = keep(B, x * w)\n"
                              "    return np.sum(B.v * w)\n", 15, 9),
    # a dict's method that changes it, its result (None) assigned: was wrong or an IndexError
    # (a list's, r = ys.reverse(): refused as a list method inside an expression, test_python13)
    "dict_update": ("def f(x, w):\n    d = {'a': x[0]}\n    r = d.update({'a': w[0] * x[1]})\n"
                    "    return d['a'] * 2\n", 3, 9),
    "dict_setdefault": ("def f(x, w):\n    d = {}\n    r = d.setdefault('a', x[0] * w[0])\n"
                        "    return d['a'] * 2\n", 3, 9),
}


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_a_call_run_for_its_effect_with_values_that_carry_a_gradient_is_refused(name: str) -> None:
    """Such a call is run as written, never compiled: what it stores would lose its gradient
    (it was silently zero)."""
    source, line, column = STATEFUL[name]
    refused_at(made(source), (X, W), line, column, "may change state read later")


PURE = {
    "unused_result": "def h(t):\n    y = t.copy()\n    y[0] = 2.0 * y[1]\n    return y\n\ndef f(x, w):\n"
                     "    u = h(x)\n    return np.sum(x * w)\n",
    "in_a_condition": "def big(t):\n    total = 0.0\n    for v in t:\n        total += v * v\n"
                      "    print('norm', total)\n    return total > 1.0\n\ndef f(x, w):\n"
                      "    if big(x * w):\n        return np.sum(x * w)\n    return np.sum(x ** 2 * w)\n",
    "a_method_whose_result_is_a_condition": "class M:\n    def big(self, t):\n        self.total = 1.0\n        return np.sum(t) > 0\n\n"
                               "def f(x, w):\n    m = M()\n    if m.big(x * w):\n        return np.sum(x * w)\n"
                               "    return np.sum(x ** 2)\n",
}


@pytest.mark.parametrize("name", sorted(PURE))
def test_a_call_whose_result_the_gradient_does_not_need_runs(name: str) -> None:
    check_light(made(PURE[name]), (X, W))


WRITTEN_INTO = {
    # second order of code that writes into a dict or list: the gradient of the first-order
    # code's dict was added with '+' (a TypeError), and its list's joined (a wrong gradient)
    "dict_set_twice": "def f(x, w):\n    d = {'a': x, 'b': w}\n    d['a'] = d['a'] * w\n"
                      "    d['b'] = np.sin(d['a'])\n    return np.sum(d['a'] * d['b'])\n",
    "dict_set_in_a_loop": "def f(x, w):\n    d = {'h': x}\n    for i in range(3):\n"
                          "        d['h'] = np.tanh(d['h'] * w[i])\n    return np.sum(d['h'] ** 2)\n",
    "list_of_numbers": "def f(x, w):\n    ys = [x[0], x[1], w[0]]\n    ys[1] = ys[0] * ys[2]\n"
                       "    ys[0] = ys[1] ** 2\n    return ys[0] + ys[1] * ys[2]\n",
    "dict_comprehension": "def f(x, w):\n    d = {k: x * i for i, k in enumerate('ab')}\n    d['a'] = d['b'] * w\n"
                          "    return np.sum(d['a'] ** 2 + d['b'])\n",
    "tuple_in_a_dict": "def f(x, w):\n    d = {'p': (x, w)}\n    a, b = d['p']\n    d['p'] = (a * b, b)\n"
                       "    return np.sum(d['p'][0] ** 2)\n",
}


@pytest.mark.parametrize("name", sorted(WRITTEN_INTO))
@pytest.mark.parametrize("wrt", [0, 1])
def test_second_order_of_a_write_into_a_dict_or_list(name: str, wrt: int) -> None:
    f = made(WRITTEN_INTO[name])
    check_light(f, (X, W))
    second_order(f, (X, W), wrt, direction(X))


SCALED = '''
class Scaled:
    def __init__(self, k):
        self.k = k
    def __mul__(self, t):
        return t * self.k * 2.0
    def __rmul__(self, t):
        return t * self.k * 3.0
    def __add__(self, t):
        return t + self.k
S = Scaled(1.5)
'''

OVERLOADED = {
    # an operator of an object whose class writes it in Python was differentiated as NumPy's:
    # S * x gave the gradient of 4.5 * x (the adjoint called __rmul__) for 3 * x
    "global_left": ("def f(x, w):\n    return np.sum(S * x * w)\n", 14, 19, "__mul__"),
    "global_right": ("def f(x, w):\n    return np.sum((x * S) * w)\n", 14, 20, "__rmul__"),
    "add": ("def f(x, w):\n    return np.sum((S + x) * w)\n", 14, 20, "__add__"),
    "made_here": ("def f(x, w):\n    a = Scaled(1.5)\n    return np.sum(a * x * w)\n", 15, 19, "__mul__"),
    "made_inline": ("def f(x, w):\n    return np.sum(Scaled(1.5) * x * w)\n", 14, 19, "__mul__"),
}


@pytest.mark.parametrize("name", sorted(OVERLOADED))
def test_an_operator_a_class_writes_in_python_is_refused_where_a_gradient_reaches_it(name: str) -> None:
    source, line, column, method = OVERLOADED[name]
    refused_at(made(SCALED + "\n" + source), (X, W), line, column, f"is a Scaled, whose .* is its own {method}")


@pytest.mark.parametrize("source", [
    "def f(x, w):\n    return np.sum(S.__mul__(x) * w)\n",  # called as a method: compiled
    "def f(x, w):\n    k = S * 2.0\n    return np.sum(x * w * k)\n",  # no gradient reaches it
])
def test_an_object_with_its_own_operators_where_no_operator_carries_a_gradient(source: str) -> None:
    check_light(made(SCALED + "\n" + source), (X, W))


MATCH = {
    # 'match' was refused outright; literal patterns are the if/elif/else they mean
    "strings": "def f(x, w, mode='lin'):\n    match mode:\n        case 'sq':\n            y = x ** 2\n"
               "        case 'lin':\n            y = x * w\n        case _:\n            y = np.sin(x)\n"
               "    return np.sum(y * w)\n",
    "the_default": "def f(x, w, mode='other'):\n    match mode:\n        case 'sq':\n            y = x ** 2\n"
                   "        case _:\n            y = np.sin(x) * w\n    return np.sum(y * w)\n",
    "returns": "def f(x, w):\n    n = 2\n    match n:\n        case 1:\n            return np.sum(x)\n"
               "        case 2:\n            return np.sum(x * w)\n    return 0.0\n",
    "first_statement_or": "def f(x, w):\n    match x.ndim:\n        case 1:\n            y = x * w\n"
                          "        case 2 | 3:\n            y = x\n    return np.sum(y ** 2)\n",
    "in_a_loop_with_a_guard": "def f(x, w):\n    s = 0.0\n    for i in range(3):\n        match i:\n"
                              "            case 0 | 2 if x[i] > 0:\n                s = s + x[i] * w[i]\n"
                              "            case 1:\n                s = s * x[i]\n            case _:\n"
                              "                s = s - w[i] * x[i] ** 2\n    return s\n",
    "none": "def f(x, w, b=None):\n    match b:\n        case None:\n            y = x * w\n        case _:\n"
            "            y = x * b\n    return np.sum(y)\n",
    "in_a_callee": "def h(t, mode):\n    match mode:\n        case 'a':\n            return t ** 2\n"
                   "        case 'b':\n            return np.sin(t)\n    return t\n\ndef f(x, w):\n"
                   "    return np.sum(h(x, 'b') * w + h(w, 'a') * x)\n",
    "dotted_names": "import enum\nclass M(enum.Enum):\n    A = 1\n    B = 2\nMODE = M.B\n\ndef f(x, w):\n"
                    "    match MODE:\n        case M.A:\n            y = x\n        case M.B:\n            y = x * w\n"
                    "    return np.sum(y * w)\n",
}


@pytest.mark.parametrize("name", sorted(MATCH))
def test_a_match_on_literal_patterns(name: str) -> None:
    check_light(made(MATCH[name]), (X, W))


@pytest.mark.parametrize("wrt", [0, 1])
def test_a_match_in_every_mode(wrt: int) -> None:
    check(made(MATCH["in_a_loop_with_a_guard"]), (X, W), wrt)


@pytest.mark.parametrize("source, line, column", [
    ("def f(x, w):\n    match x.ndim:\n        case n:\n            y = x * n\n    return np.sum(y * w)\n", 3, 14),
    ("def f(x, w):\n    match (1, 2):\n        case (a, b):\n            y = x * a\n    return np.sum(y * w)\n", 3, 15),
])
def test_a_match_on_other_patterns_is_refused_at_the_pattern(source: str, line: int, column: int) -> None:
    refused_at(made(source), (X, W), line, column, "a 'case' pattern other than a literal")


@pytest.mark.parametrize("source", [
    # a literal as a statement was refused ("may change its arguments in place"): it does nothing
    "def f(x, w):\n    if x[0] > 10:\n        pass\n    ...\n    return np.sum(x * w)\n",
    "def f(x, w):\n    y = x * w\n    \"\"\"the second half\"\"\"\n    return np.sum(y ** 2)\n",
    "def f(x, w):\n    for t in w:\n        ...\n        x = x * t\n    return np.sum(x)\n",
])
def test_a_literal_as_a_statement_does_nothing(source: str) -> None:
    check_light(made(source), (X, W))


def test_second_order_through_pairs_holding_strings() -> None:
    """The gradient of a string (a dict's key in a pair) was a string array (np.zeros_like):
    adding gradients of such pairs at second order raised a UFuncTypeError."""
    f = made("def f(x, w):\n    items = []\n    for k, v in zip(['a', 'b'], [x * 2, w]):\n"
             "        items = items + [(k, v)]\n    d = dict(items)\n    return np.sum(d['a'] * np.sin(d['b'] * x))\n")
    check_light(f, (X, W))
    for wrt in (0, 1):
        second_order(f, (X, W), wrt, direction(X))


ZIPPED = {
    # zip(...) as a value (not a loop's iterable) was refused: "no gradient rule for 'zip'"
    "sorted_with_a_key": "def f(x, w):\n    pairs = sorted(zip(x, w), key=lambda p: p[1])\n"
                         "    return pairs[0][0] * pairs[-1][1] + pairs[1][0]\n",
    "listed": "def f(x, w):\n    pairs = list(zip(x, w * 2))\n    return pairs[0][0] * pairs[2][1] + pairs[1][1]\n",
    "zip_of_a_zip": "def f(x, w):\n    s = 0.0\n    for (a, b), c in zip(zip(x, w), x):\n"
                    "        s = s + a * b * c\n    return s\n",
    "bound_and_read_once": "def f(x, w):\n    z = zip(x, w)\n    return sum(a * b for a, b in z)\n",
    "three_lists": "def f(x, w):\n    ys = [x[0], w[1]]\n    t = list(zip(ys, [1.0, 2.0], ys))\n"
                   "    return t[1][0] * t[1][2] + t[0][1] * t[0][0]\n",
    "a_dict_of_pairs": "def f(x, w):\n    d = dict(zip(['a', 'b'], [x * 2, w]))\n    return np.sum(d['a'] * np.sin(d['b'] * x))\n",
}


@pytest.mark.parametrize("name", sorted(ZIPPED))
def test_zip_as_a_value(name: str) -> None:
    f = made(ZIPPED[name])
    check_light(f, (X, W))
    second_order(f, (X, W), 0, direction(X))


def test_zip_bound_to_a_name_read_twice_is_refused() -> None:
    """Python's zip object is used up by its first reader; s2sad's list would not be."""
    f = made("def f(x, w):\n    z = zip(x, w)\n    s = sum(a * b for a, b in z)\n    return s + sum(a for a, b in z)\n")
    refused_at(f, (X, W), 2, 9, "a zip object bound to a name is an iterator")
