"""Gradient rules for Python operators, NumPy functions and array methods.

One declaration per primitive.  ``g`` is the incoming gradient, ``ans`` the
primitive's output; binary elementwise rules reduce the gradient over the
axes along which an argument was broadcast (``unbroadcast``).

Conventions at ties and kinks (as autograd and JAX): maximum/minimum and
max/min share the gradient equally among tied entries; ``abs`` has gradient 0
at 0; ``clip`` passes no gradient where its input is at or beyond a bound.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import runtime
from .registry import APPEND, REGISTRY, SETITEM

defvjp = REGISTRY.defvjp


def unary(fun, vjp: str, name: str | None = None) -> None:
    """An elementwise function of ``x``; ``vjp`` is linear and elementwise in ``g``."""
    defvjp(fun, "x", name=name, elementwise=True, x=vjp)


def binary(fun, vjp_x: str | None, vjp_y: str | None, name: str | None = None) -> None:
    """A broadcasting elementwise function of ``x`` and ``y``.

    ``vjp_x`` and ``vjp_y`` are elementwise in ``g``; generation sums them over
    the axes along which the argument was broadcast (``unbroadcast``).
    """
    vjps = {arg: t for arg, t in (("x", vjp_x), ("y", vjp_y)) if t}
    defvjp(fun, "x, y", name=name, broadcast=("x", "y"), elementwise=True, **vjps)


# --- Python operators and their ufuncs ---------------------------------------
for add in (operator.add, np.add):
    binary(add, "g", "g", name="+" if add is operator.add else None)
for sub in (operator.sub, np.subtract):
    binary(sub, "g", "-g", name="-" if sub is operator.sub else None)
for mul in (operator.mul, np.multiply):
    binary(mul, "g * y", "g * x", name="*" if mul is operator.mul else None)
for div in (operator.truediv, np.divide, np.true_divide):
    binary(div, "g / y", "-g * ans / y", name="/" if div is operator.truediv else None)
for power in (operator.pow, np.power, builtins.pow):
    binary(power, "g * y * x ** (y - 1)", "g * ans * np.log(np.where(x == 0, 1, x))",
           name="**" if power is operator.pow else None)
for neg in (operator.neg, np.negative):
    unary(neg, "-g", name="unary -" if neg is operator.neg else None)
unary(operator.pos, "g", name="unary +")
for mod in (operator.mod, np.mod, np.remainder):
    binary(mod, "g", "-g * np.floor_divide(x, y)", name="%" if mod is operator.mod else None)
for matmul in (operator.matmul, np.matmul):
    defvjp(matmul, "x, y", name="@" if matmul is operator.matmul else None,
           x="matmul_grad_lhs(g, x, y)", y="matmul_grad_rhs(g, x, y)")

# --- elementwise functions ---------------------------------------------------
unary(np.exp, "g * ans")
unary(np.log, "g / x")
unary(np.sin, "g * np.cos(x)")
unary(np.cos, "-g * np.sin(x)")
unary(np.tan, "g * (1 + ans ** 2)")
unary(np.tanh, "g * (1 - ans ** 2)")
unary(np.sqrt, "g * 0.5 / ans")
unary(np.square, "g * 2 * x")
for absolute in (np.abs, builtins.abs):
    unary(absolute, "g * np.sign(x)")
binary(np.maximum, "g * balanced_eq(x, ans, y)", "g * balanced_eq(y, ans, x)")
binary(np.minimum, "g * balanced_eq(x, ans, y)", "g * balanced_eq(y, ans, x)")
defvjp(np.where, "condition, x, y",
       x="unbroadcast(np.where(condition, g, 0), x)", y="unbroadcast(np.where(condition, 0, g), y)")
defvjp(np.clip, "a, a_min=None, a_max=None", a="unbroadcast(g * clip_mask(a, a_min, a_max), a)")
defvjp(np.ndarray.clip, "a, min=None, max=None", name="clip",
       a="unbroadcast(g * clip_mask(a, min, max), a)")
unary(builtins.float, "g")

# --- reductions --------------------------------------------------------------
_REDUCE = "a, axis=None, dtype=None, out=None, keepdims=False"
for sum_ in (np.sum, np.ndarray.sum):
    defvjp(sum_, _REDUCE, a="reduce_grad(g, a, axis, keepdims)")
for mean in (np.mean, np.ndarray.mean):
    defvjp(mean, _REDUCE, a="mean_grad(g, a, axis, keepdims)")
for extremum in (np.max, np.min, np.amax, np.amin, np.ndarray.max, np.ndarray.min):
    defvjp(extremum, "a, axis=None, out=None, keepdims=False",
           a="extremum_grad(g, a, ans, axis, keepdims)")

# --- linear algebra ----------------------------------------------------------
for dot in (np.dot, np.ndarray.dot):
    defvjp(dot, "a, b", a="dot_grad_lhs(g, a, b)", b="dot_grad_rhs(g, a, b)")
defvjp(np.outer, "a, b",
       a="np.reshape(np.dot(g, np.ravel(b)), np.shape(a))",
       b="np.reshape(np.dot(np.ravel(a), g), np.shape(b))")

# --- shape manipulation ------------------------------------------------------
defvjp(np.reshape, "a, newshape", a="np.reshape(g, np.shape(a))")
defvjp(np.ndarray.reshape, "a, *shape", a="np.reshape(g, np.shape(a))")
for ravel in (np.ravel, np.ndarray.ravel, np.ndarray.flatten):
    defvjp(ravel, "a", a="np.reshape(g, np.shape(a))")
defvjp(np.transpose, "a, axes=None", a="transpose_grad(g, axes)")
defvjp(np.ndarray.transpose, "a, *axes", a="transpose_grad(g, axes or None)")
defvjp(np.ndarray.T, "a", name=".T", a="np.transpose(g)")
defvjp(np.expand_dims, "a, axis", a="np.reshape(g, np.shape(a))")
for squeeze in (np.squeeze, np.ndarray.squeeze):
    defvjp(squeeze, "a, axis=None", a="np.reshape(g, np.shape(a))")
defvjp(operator.getitem, "x, index", name="[]", x="getitem_grad(g, x, index)")

# --- containers and in-place updates -------------------------------------------
for copy in (np.copy, np.ndarray.copy):
    defvjp(copy, "a, order='K'", a="g")
defvjp(APPEND, "xs, x", name="append", xs="g[:-1]", x="g[-1]")
defvjp(SETITEM, "x, index, v", name="[]=", x="setitem_grad_x(g, index)",
       v="setitem_grad_value(g, index, v)")
defvjp(np.stack, "arrays, axis=0", arrays="stack_grad(g, arrays, axis)")
defvjp(np.concatenate, "arrays, axis=0", arrays="concatenate_grad(g, arrays, axis)")
defvjp(builtins.sum, "iterable, start=0", iterable="sum_items_grad(g, iterable)",
       start="unbroadcast(g, start)")
for array in (np.array, np.asarray):
    defvjp(array, "object, dtype=None", object="array_grad(g, object)")

# --- no gradient ---------------------------------------------------------------
REGISTRY.declare_nondifferentiable(
    runtime.stop_gradient,
    np.floor, np.ceil, np.round, np.around, np.rint, np.trunc, np.sign,
    np.argmax, np.argmin, np.argsort, np.nonzero, np.shape, np.ndim, np.size,
    np.zeros_like, np.ones_like, np.full_like, np.empty_like, np.zeros, np.ones, np.full,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.isfinite, np.isnan,
    np.isinf, np.floor_divide, np.arange, np.eye, np.identity, np.empty,
    np.ndarray.argmax, np.ndarray.argmin, np.ndarray.argsort, np.ndarray.nonzero,
    np.ndarray.round,
    operator.floordiv, operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
    operator.ne, operator.not_, operator.and_, operator.or_, operator.xor, operator.invert,
    builtins.len, builtins.range, builtins.int, builtins.bool, builtins.round, builtins.print,
    builtins.isinstance, builtins.type, math.floor, math.ceil, math.trunc,
)

#: Attributes of arrays that carry no gradient (``x.shape`` and friends).
NONDIFF_ATTRIBUTES: frozenset[str] = frozenset(["shape", "ndim", "size", "dtype", "itemsize", "nbytes"])
