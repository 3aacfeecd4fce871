"""Every registered gradient rule against central finite differences, in float64 and float32.

Each row of the table is an expression of the inputs ``x``, ``y`` (in that
order) with their shapes -- ``F`` stands for a Python float -- the domain the
inputs are drawn from, and the registered primitives it applies (``uses``);
``pre`` is an optional statement before it (``q, r = np.linalg.qr(x)``).
The function differentiated is ``np.sum((<expr>) * W)``, with ``W`` a fixed
random array of the expression's shape so that every output element matters,
with respect to every input.  ``assert_grad_matches`` also checks that each
gradient has its input's shape and type (float64 arrays for float64 arrays, a
float for a Python float) and that the inputs are left unchanged.

The same table runs in float32 (arrays, ``W`` and NumPy float32 scalars for
``F``): the gradients must be float32, and match float64 finite differences of
the float64 function to 1%.

Forward mode runs the same table (float64): for each input, the jvp along a random
direction must match central finite differences and equal <grad, v> from reverse mode.

Domains keep the inputs away from kinks: ``offgrid`` values are at least 0.03
from every multiple of 0.1, where the tests put the kinks of abs, clip and
comparisons.  The conventions at kinks are tested separately, exactly.
"""
from __future__ import annotations

import builtins
import importlib
import math
import operator
import pkgutil
import re
import typing
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError
from s2sad.ir import Assign, Call
from s2sad.pipeline import PIPELINE, State
from s2sad.rules import BUILTIN_RULES, REGISTRY
from s2sad.rules.listing import BEGIN, END, rules_markdown
from s2sad.rules.registry import Primitive
from s2sad.runtime import attribute_of

from gradcheck import assert_grad_matches, make_function, numerical_grad

F = "float"  # the "shape" of a Python float input


class Row(NamedTuple):
    expr: str
    shapes: tuple  # one per input x, y: a shape tuple, or F
    uses: tuple  # the registered primitives the expression applies
    domain: str | tuple[str, ...] = "real"  # for all inputs, or one per input
    xfail: str | None = None  # why this row is a known failure
    pre: str = ""  # a statement before the expression (unpacking a result)

    @property
    def id(self) -> str:
        pre = f"{self.pre}; " if self.pre else ""
        return f"{pre}{self.expr} [{', '.join(_shape_id(s) for s in self.shapes)}]"


def _shape_id(shape: Any) -> str:
    return shape if shape == F else "x".join(map(str, shape))


DOMAINS = {
    "real": lambda rng, shape: rng.standard_normal(shape),
    "small": lambda rng, shape: rng.uniform(-1.0, 1.0, shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, shape),
    "nonzero": lambda rng, shape: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape),
    "offgrid": lambda rng, shape: (np.round(rng.uniform(-1.5, 1.5, shape), 1)
                                   + rng.uniform(0.03, 0.07, shape)),
    "unit": lambda rng, shape: rng.uniform(-0.8, 0.8, shape),  # arcsin, arctanh
    "above1": lambda rng, shape: rng.uniform(1.3, 3.0, shape),  # arccosh
    # values at least 0.2 apart (sort, norms of order inf): a shuffled grid plus a little noise
    "distinct": lambda rng, shape: np.reshape(rng.permutation(int(np.prod(shape))), shape) * 0.3
    - 1.5 + rng.uniform(0.0, 0.1, shape),
    # square matrices far from singular (det, inv, solve, pinv); other shapes: real
    "wellcond": lambda rng, shape: rng.standard_normal(shape) + (
        3.0 * np.eye(shape[-1]) if len(shape) >= 2 and shape[-1] == shape[-2] else 0.0),
    # symmetric positive definite matrices with well separated eigenvalues (cholesky, eigh)
    "spd": lambda rng, shape: _spd(rng, shape),
}


def _spd(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    n = shape[-1]
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    eigenvalues = np.arange(1, n + 1) + rng.uniform(0.0, 0.3, shape[:-1])
    a = (q * eigenvalues[..., None, :]) @ np.swapaxes(q, -1, -2)
    return (a + np.swapaxes(a, -1, -2)) / 2

# --- the table ------------------------------------------------------------------------

BINARY = [  # (expression, primitive, domain of x and y)
    ("x + y", operator.add, "real"),
    ("np.add(x, y)", np.add, "real"),
    ("x - y", operator.sub, "real"),
    ("np.subtract(x, y)", np.subtract, "real"),
    ("x * y", operator.mul, "real"),
    ("np.multiply(x, y)", np.multiply, "real"),
    ("x / y", operator.truediv, ("real", "nonzero")),
    ("np.divide(x, y)", np.divide, ("real", "nonzero")),
    ("np.true_divide(x, y)", np.true_divide, ("real", "nonzero")),
    ("x ** y", operator.pow, ("positive", "real")),
    ("np.power(x, y)", np.power, ("positive", "real")),
    ("np.float_power(x, y)", np.float_power, ("positive", "real")),
    ("pow(x, y)", builtins.pow, ("positive", "real")),
    ("x % y", operator.mod, ("real", "positive")),
    ("np.mod(x, y)", np.mod, ("real", "positive")),
    ("np.remainder(x, y)", np.remainder, ("real", "positive")),
    ("np.fmod(x, y)", np.fmod, ("real", "positive")),
    ("np.maximum(x, y)", np.maximum, "real"),
    ("np.minimum(x, y)", np.minimum, "real"),
]
BROADCAST = [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)),
             ((3, 4), F), (F, (3, 4)), (F, F)]

UNARY = [  # (expression, primitive, domain)
    ("np.exp(x)", np.exp, "real"),
    ("np.log(x)", np.log, "positive"),
    ("np.sin(x)", np.sin, "real"),
    ("np.cos(x)", np.cos, "real"),
    ("np.tan(x)", np.tan, "small"),
    ("np.tanh(x)", np.tanh, "real"),
    ("np.sqrt(x)", np.sqrt, "positive"),
    ("np.square(x)", np.square, "real"),
    ("np.abs(x)", np.abs, "offgrid"),
    ("np.absolute(x)", np.absolute, "offgrid"),
    ("abs(x)", builtins.abs, "offgrid"),
    ("-x", operator.neg, "real"),
    ("+x", operator.pos, "real"),
    ("np.negative(x)", np.negative, "real"),
    ("np.positive(x)", np.positive, "real"),
]

WITH_CONSTANTS = [
    Row("x ** 2", ((3, 4),), (operator.pow,)),
    Row("x ** 0.5", ((3, 4),), (operator.pow,), "positive"),
    Row("2.0 ** x", ((3, 4),), (operator.pow,)),
    Row("1.0 / x", ((3, 4),), (operator.truediv,), "nonzero"),
    Row("3.0 - x", ((3, 4),), (operator.sub,)),
    Row("x % 0.7", ((3, 4),), (operator.mod,)),
    Row("np.power(x, 3)", ((3, 4),), (np.power,)),
    Row("np.ldexp(x, 3)", ((3, 4),), (np.ldexp,)),
    Row("np.ldexp(x, np.arange(4))", ((3, 4),), (np.ldexp,)),
    Row("frac * whole + frac ** 2", ((3, 4),), (np.modf, operator.mul, operator.add, operator.pow), "offgrid",
        pre="frac, whole = np.modf(3.0 * x)"),
    Row("float(x)", (F,), (builtins.float,)),
    Row("float(x[1, 2])", ((3, 4),), (builtins.float, operator.getitem)),
    Row("float(np.sum(x))", ((3, 4),), (builtins.float, np.sum)),
]

SELECTIONS = [
    Row("np.where(x > 0, x, y)", ((3, 4), (3, 4)), (np.where,), ("offgrid", "real")),
    Row("np.where(x > 0, x, y)", ((3, 4), (4,)), (np.where,), ("offgrid", "real")),
    Row("np.where(x > 0, x, y)", ((3, 1), (1, 4)), (np.where,), ("offgrid", "real")),
    Row("np.where(x > 0, x, y)", ((3, 4), F), (np.where,), ("offgrid", "real")),
    Row("np.where(x > 0, 0.0, x)", ((3, 4),), (np.where,), "offgrid"),
    Row("np.where(x > y, x, y)", ((3, 4), (4,)), (np.where,)),
    Row("np.clip(x, -0.5, 0.5)", ((3, 4),), (np.clip,), "offgrid"),
    Row("np.clip(x, None, 0.5)", ((3, 4),), (np.clip,), "offgrid"),
    Row("np.clip(x, -0.5, None)", ((3, 4),), (np.clip,), "offgrid"),
    Row("np.clip(x, a_min=-0.5, a_max=0.5)", ((3, 4),), (np.clip,), "offgrid"),
    Row("np.clip(x, -0.5, np.array([0.2, 0.5, 1.0, 2.0]))", ((3, 1),), (np.clip,), "offgrid"),
    Row("np.clip(x, -0.5, 0.5)", (F,), (np.clip,), "offgrid"),
    Row("x.clip(-0.5, 0.5)", ((3, 4),), (np.ndarray.clip,), "offgrid"),
    Row("x.clip(None, 0.5)", ((3, 4),), (np.ndarray.clip,), "offgrid"),
    Row("x.clip(min=-0.5, max=0.5)", ((3, 4),), (np.ndarray.clip,), "offgrid"),
    Row("np.clip(x, x[1], x[4])", ((6,),), (np.clip,), "distinct"),  # the bounds carry gradients
    Row("np.clip(x, None, y)", ((3, 4), (4,)), (np.clip,), "distinct"),
    Row("x.clip(x[1], x[4])", ((6,),), (np.ndarray.clip,), "distinct"),
]

REDUCTIONS = [("np.sum", np.sum), ("np.mean", np.mean), ("np.max", np.max), ("np.min", np.min),
              ("np.amax", np.amax), ("np.amin", np.amin), ("x.sum", np.ndarray.sum),
              ("x.mean", np.ndarray.mean), ("x.max", np.ndarray.max), ("x.min", np.ndarray.min),
              ("np.prod", np.prod), ("x.prod", np.ndarray.prod), ("np.var", np.var),
              ("x.var", np.ndarray.var), ("np.std", np.std), ("x.std", np.ndarray.std),
              ("np.ptp", np.ptp)]


def reduction_rows() -> list[Row]:
    """Each reduction over axis None, 0, -1, (0, 1), with and without keepdims, and a few more.

    Tuple axes are spelled both as literals and as ``tuple([2, 0])``.
    """
    variants = [[f"axis={axis}", "keepdims=True"] for axis in (None, 0, -1, (0, 1))]
    variants += [[f"axis={axis}"] for axis in (0, -1, (0, 1))]
    variants += [[], ["1"], ["axis=(-1, 0)"], ["axis=tuple([2, 0])", "keepdims=True"]]
    rows = []
    for spelling, fun in REDUCTIONS:
        for args in variants:
            args = args if spelling.startswith("x.") else ["x", *args]
            rows.append(Row(f"{spelling}({', '.join(args)})", ((2, 3, 4),), (fun,)))
        rows.append(Row(f"{spelling}({'' if spelling.startswith('x.') else 'x'})", ((4,),), (fun,)))
    return rows


MATMUL_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                 ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 5)), ((2, 3, 4), (4,)),
                 ((4,), (2, 4, 5))]
DOT_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
              ((3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 5)),
              ((3, 4), F)]

LINEAR_ALGEBRA = [
    *(Row("x @ y", shapes, (operator.matmul,)) for shapes in MATMUL_SHAPES),
    *(Row("np.matmul(x, y)", shapes, (np.matmul,)) for shapes in MATMUL_SHAPES),
    *(Row("np.dot(x, y)", shapes, (np.dot,)) for shapes in DOT_SHAPES),
    Row("np.dot(x, y)", (F, (3, 4)), (np.dot,)),
    *(Row("x.dot(y)", shapes, (np.ndarray.dot,)) for shapes in DOT_SHAPES),
    Row("np.outer(x, y)", ((3,), (4,)), (np.outer,)),
    Row("np.outer(x, y)", ((2, 3), (4,)), (np.outer,)),
]

SHAPES = [
    Row("np.reshape(x, (2, 6))", ((3, 4),), (np.reshape,)),
    Row("np.reshape(x, -1)", ((3, 4),), (np.reshape,)),
    Row("np.reshape(x, (4, 1, -1))", ((2, 3, 4),), (np.reshape,)),
    Row("x.reshape(2, 6)", ((3, 4),), (np.ndarray.reshape,)),
    Row("x.reshape((2, 6))", ((3, 4),), (np.ndarray.reshape,)),
    Row("x.reshape(-1)", ((3, 4),), (np.ndarray.reshape,)),
    Row("x.reshape(4, -1)", ((2, 3, 4),), (np.ndarray.reshape,)),
    Row("np.ravel(x)", ((2, 3, 4),), (np.ravel,)),
    Row("x.ravel()", ((3, 4),), (np.ndarray.ravel,)),
    Row("x.flatten()", ((3, 4),), (np.ndarray.flatten,)),
    Row("x.item() * y", ((1, 1), (3,)), (np.ndarray.item, operator.mul)),
    Row("sum(x.tolist()[1])", ((2, 3),), (np.ndarray.tolist, operator.getitem, builtins.sum)),
    Row("np.transpose(x)", ((3, 4),), (np.transpose,)),
    Row("np.transpose(x)", ((2, 3, 4),), (np.transpose,)),
    Row("np.transpose(x, (1, 0))", ((3, 4),), (np.transpose,)),
    Row("np.transpose(x, (2, 0, 1))", ((2, 3, 4),), (np.transpose,)),
    Row("np.transpose(x, axes=(1, 2, 0))", ((2, 3, 4),), (np.transpose,)),
    Row("x.transpose()", ((3, 4),), (np.ndarray.transpose,)),
    Row("x.transpose()", ((2, 3, 4),), (np.ndarray.transpose,)),
    Row("x.transpose(1, 0)", ((3, 4),), (np.ndarray.transpose,)),
    Row("x.transpose(2, 0, 1)", ((2, 3, 4),), (np.ndarray.transpose,)),
    Row("x.transpose((1, 0))", ((3, 4),), (np.ndarray.transpose,)),
    Row("x.transpose((2, 0, 1))", ((2, 3, 4),), (np.ndarray.transpose,)),
    Row("x.transpose(tuple([1, 0]))", ((3, 4),), (np.ndarray.transpose,)),
    Row("np.transpose(x, tuple([2, 0, 1]))", ((2, 3, 4),), (np.transpose,)),
    # (.T of a parameter, which may be a named tuple with a field T: attribute_of, that picks as it runs)
    Row("x.T", ((4,),), (attribute_of,)),
    Row("x.T", ((3, 4),), (attribute_of,)),
    Row("x.T", ((2, 3, 4),), (attribute_of,)),
    Row("(x * 2.0).T", ((2, 3, 4),), (np.ndarray.T, operator.mul)),
    Row("np.expand_dims(x, 0)", ((3, 4),), (np.expand_dims,)),
    Row("np.expand_dims(x, -1)", ((3, 4),), (np.expand_dims,)),
    Row("np.expand_dims(x, axis=1)", ((3, 4),), (np.expand_dims,)),
    Row("np.expand_dims(x, (0, 2))", ((3, 4),), (np.expand_dims,)),
    Row("np.squeeze(x)", ((3, 1, 4),), (np.squeeze,)),
    Row("np.squeeze(x)", ((1, 3, 1),), (np.squeeze,)),
    Row("np.squeeze(x, 1)", ((3, 1, 4),), (np.squeeze,)),
    Row("np.squeeze(x, axis=1)", ((3, 1, 4),), (np.squeeze,)),
    Row("x.squeeze()", ((3, 1, 4),), (np.ndarray.squeeze,)),
    Row("x.squeeze(1)", ((3, 1, 4),), (np.ndarray.squeeze,)),
    Row("x.squeeze(axis=1)", ((3, 1, 4),), (np.ndarray.squeeze,)),
]

INDEXING = [
    *(Row(expr, ((3, 4),), (operator.getitem,)) for expr in [
        "x[1]", "x[-1]", "x[1, 2]", "x[-1, -2]", "x[:, 1:3]", "x[1:, :-1]", "x[::2]", "x[::-1, 1]",
        "x[None]", "x[:, None]", "x[:, np.newaxis, 1:]", "x[np.array([0, 0, 2])]", "x[[2, 0, 2]]",
        "x[np.array([0, 2, 0]), np.array([1, 3, 1])]", "x[:, np.array([3, 1, 3])]",
        "x[x.shape[0] - 1]", "x[1][2]",
    ]),
    Row("x[..., 0]", ((2, 3, 4),), (operator.getitem,)),
    Row("x[1, ..., None]", ((2, 3, 4),), (operator.getitem,)),
    Row("x[x > 0]", ((3, 4),), (operator.getitem,), "offgrid"),
]

CONTAINERS = [
    Row("np.copy(x)", ((3, 4),), (np.copy,)),
    Row("x.copy()", ((3, 4),), (np.ndarray.copy,)),
    Row("np.stack([x, y])", ((3, 4), (3, 4)), (np.stack,)),
    Row("np.stack((x, y * 2.0), axis=1)", ((3, 4), (3, 4)), (np.stack,)),
    Row("np.concatenate([x, y])", ((3, 4), (2, 4)), (np.concatenate,)),
    Row("np.concatenate((x, y), axis=1)", ((3, 4), (3, 2)), (np.concatenate,)),
    Row("np.concatenate([x, y], axis=None)", ((3, 4), (5,)), (np.concatenate,)),
    Row("np.array([x, y, x * y])", (F, F), (np.array,)),
    Row("np.array([[x, y], [y, x]])", (F, F), (np.array,)),
    Row("np.asarray([x, y])", ((3,), (3,)), (np.asarray,)),
    Row("typing.cast(np.ndarray, x * y)", ((3, 4), (4,)), (typing.cast,)),
    Row("sum([x, y * 2.0])", ((3, 4), (4,)), (builtins.sum,)),
    Row("sum(x)", ((3, 4),), (builtins.sum,)),
    Row("sum((x, y), 1.5)", (F, F), (builtins.sum,)),
    Row("np.r_[x, 0.5, y[::-1]]", ((3,), (4,)), (np.r_,)),
    Row("np.r_['0,2', x, y]", ((3,), (2, 3)), (np.r_,)),
    Row("np.c_[x, y]", ((3,), (3, 2)), (np.c_,)),
    Row("np.reshape(x, (4, 3), 'F')", ((3, 4),), (np.reshape,)),
    Row("x.reshape(4, 3, order='F')", ((3, 4),), (np.ndarray.reshape,)),
]

METHOD_CHAINS = [
    Row("(x * y).sum(axis=-1)", ((3, 4), (4,)), (operator.mul, np.ndarray.sum)),
    Row("np.exp(x).mean(axis=0).max()", ((3, 4),), (np.exp, np.ndarray.mean, np.ndarray.max)),
    Row("(x @ y).T.reshape(-1)[1:]", ((3, 4), (4, 2)),
        (operator.matmul, np.ndarray.T, np.ndarray.reshape, operator.getitem)),
]

MORE_BINARY = [  # (expression, primitive, domain of x and y): also in every broadcast of BROADCAST
    ("np.arctan2(x, y)", np.arctan2, ("real", "nonzero")),
    ("np.copysign(x, y) * y", np.copysign, "nonzero"),
    ("np.hypot(x, y)", np.hypot, "nonzero"),
    ("np.logaddexp(x, y)", np.logaddexp, "real"),
    ("np.logaddexp2(x, y)", np.logaddexp2, "real"),
    ("np.fmax(x, y)", np.fmax, "real"),
    ("np.fmin(x, y)", np.fmin, "real"),
]

MORE_UNARY = [  # (expression, primitive, domain): also on a Python float
    ("np.fabs(x)", np.fabs, "offgrid"),
    ("np.arcsin(x)", np.arcsin, "unit"),
    ("np.arccos(x)", np.arccos, "unit"),
    ("np.arctan(x)", np.arctan, "real"),
    ("np.sinh(x)", np.sinh, "real"),
    ("np.cosh(x)", np.cosh, "real"),
    ("np.arcsinh(x)", np.arcsinh, "real"),
    ("np.arccosh(x)", np.arccosh, "above1"),
    ("np.arctanh(x)", np.arctanh, "unit"),
    ("np.exp2(x)", np.exp2, "real"),
    ("np.expm1(x)", np.expm1, "real"),
    ("np.log2(x)", np.log2, "positive"),
    ("np.log10(x)", np.log10, "positive"),
    ("np.log1p(x)", np.log1p, "positive"),
    ("np.reciprocal(x)", np.reciprocal, "nonzero"),
    ("np.cbrt(x)", np.cbrt, "nonzero"),
    ("np.deg2rad(x)", np.deg2rad, "real"),
    ("np.radians(x)", np.radians, "real"),
    ("np.rad2deg(x)", np.rad2deg, "real"),
    ("np.degrees(x)", np.degrees, "real"),
    ("np.sinc(x)", np.sinc, "real"),
    ("np.nan_to_num(x)", np.nan_to_num, "real"),
]

SCALAR_FUNCTIONS = [  # the math module and builtins on Python floats
    *(Row(f"math.{name}(x)", (F,), (getattr(math, name),), domain) for name, domain in [
        ("exp", "real"), ("expm1", "real"), ("log", "positive"), ("log1p", "positive"),
        ("log2", "positive"), ("log10", "positive"), ("sqrt", "positive"), ("sin", "real"),
        ("cos", "real"), ("tan", "small"), ("asin", "unit"), ("acos", "unit"), ("atan", "real"),
        ("sinh", "real"), ("cosh", "real"), ("tanh", "real"), ("asinh", "real"),
        ("acosh", "above1"), ("atanh", "unit"), ("fabs", "nonzero"), ("radians", "real"),
        ("degrees", "real"), ("erf", "real"), ("erfc", "real")]),
    Row("math.atan2(x, y)", (F, F), (math.atan2,), "nonzero"),
    Row("math.pow(x, y)", (F, F), (math.pow,), ("positive", "real")),
    Row("math.hypot(x, y)", (F, F), (math.hypot,), "nonzero"),
    Row("math.fmod(x, y)", (F, F), (math.fmod,), ("real", "positive")),
    Row("math.remainder(x, y)", (F, F), (math.remainder,), ("real", "positive")),
    Row("math.copysign(x, y) * y", (F, F), (math.copysign, operator.mul), "nonzero"),
    Row("math.fsum([x, y, x * y])", (F, F), (math.fsum, operator.mul)),
    Row("math.fsum(x)", ((4,),), (math.fsum,)),
    Row("max(x, y)", (F, F), (builtins.max,)),
    Row("min(x, y)", (F, F), (builtins.min,)),
    Row("max([x, y, 2.0 * x])", (F, F), (builtins.max, operator.mul), "distinct"),
    Row("min((x, y))", (F, F), (builtins.min,), "distinct"),
    Row("max(x)", ((4,),), (builtins.max,), "distinct"),
    Row("min(x)", ((4,),), (builtins.min,), "distinct"),
    Row("np.sin(x).astype(np.float64)", ((3, 4),), (np.ndarray.astype, np.sin)),
    Row("x.astype('float64')", ((3, 4),), (np.ndarray.astype,)),
    Row("x.astype(float)", ((3, 4),), (np.ndarray.astype,)),
]

MORE_REDUCTIONS = [
    Row("np.var(x, ddof=1)", ((3, 4),), (np.var,)),
    Row("np.var(x, 0, None, None, 1, True)", ((3, 4),), (np.var,)),
    Row("x.var(axis=(0, 2), ddof=1, keepdims=True)", ((2, 3, 4),), (np.ndarray.var,)),
    Row("np.std(x, axis=-1, ddof=1)", ((3, 4),), (np.std,)),
    Row("x.std(ddof=1)", ((3, 4),), (np.ndarray.std,)),
    Row("np.ptp(x, axis=1)", ((3, 4),), (np.ptp,), "distinct"),
    *(Row(f"np.{name}({args})", (shape,), (getattr(np, name),)) for name in ("cumsum", "cumprod")
      for args, shape in [("x", (3, 4)), ("x, axis=0", (3, 4)), ("x, 1", (2, 3, 4)),
                          ("x, -1", (2, 3, 4))]),
    *(Row(f"x.{name}({args})", (shape,), (getattr(np.ndarray, name),)) for name in ("cumsum", "cumprod")
      for args, shape in [("", (3, 4)), ("axis=0", (3, 4)), ("-1", (2, 3, 4))]),
    Row("np.trace(x)", ((3, 4),), (np.trace,)),
    Row("np.trace(x, 1)", ((3, 4),), (np.trace,)),
    Row("np.trace(x, offset=-1)", ((4, 3),), (np.trace,)),
    Row("np.trace(x, axis1=1, axis2=2)", ((2, 3, 4),), (np.trace,)),
    Row("np.trace(x, -1, 2, 0)", ((2, 3, 4),), (np.trace,)),
    Row("x.trace()", ((3, 3),), (np.ndarray.trace,)),
    Row("x.trace(offset=1)", ((3, 4),), (np.ndarray.trace,)),
    Row("np.diagonal(x)", ((3, 4),), (np.diagonal,)),
    Row("np.diagonal(x, 1)", ((3, 4),), (np.diagonal,)),
    Row("np.diagonal(x, -1, 1, 2)", ((2, 3, 4),), (np.diagonal,)),
    Row("x.diagonal()", ((4, 3),), (np.ndarray.diagonal,)),
    Row("x.diagonal(offset=1, axis1=0, axis2=2)", ((2, 3, 4),), (np.ndarray.diagonal,)),
    Row("np.diag(x)", ((3, 4),), (np.diag,)),
    Row("np.diag(x, 1)", ((3, 4),), (np.diag,)),
    Row("np.diag(x)", ((4,),), (np.diag,)),
    Row("np.diag(x, -1)", ((3,),), (np.diag,)),
    Row("np.diagflat(x)", ((3,),), (np.diagflat,)),
    Row("np.diagflat(x, 1)", ((2, 2),), (np.diagflat,)),
    Row("np.diagflat(x, -2)", ((3,),), (np.diagflat,)),
]

MORE_LINEAR_ALGEBRA = [
    *(Row("np.inner(x, y)", shapes, (np.inner,)) for shapes in [
        ((4,), (4,)), ((3, 4), (4,)), ((3, 4), (2, 4)), ((2, 3, 4), (5, 4)), (F, (3, 4)), ((3, 4), F)]),
    Row("np.tensordot(x, y)", ((2, 3, 4), (3, 4, 5)), (np.tensordot,)),
    Row("np.tensordot(x, y, 1)", ((3, 4), (4, 5)), (np.tensordot,)),
    *([Row("np.linalg.tensordot(x, y)", ((2, 3, 4), (3, 4, 5)), (np.linalg.tensordot,)),
       Row("np.linalg.tensordot(x, y, axes=1)", ((3, 4), (4, 5)), (np.linalg.tensordot,)),
       Row("np.linalg.matmul(x, y)", ((2, 3, 4), (4, 5)), (np.linalg.matmul,)),
       Row("np.linalg.matmul(x, y)", ((3,), (3, 2)), (np.linalg.matmul,)),
       Row("np.linalg.outer(x, y)", ((3,), (4,)), (np.linalg.outer,)),
       Row("np.matrix_transpose(x)", ((2, 3, 4),), (np.matrix_transpose,)),
       Row("x.mT", ((3, 4),), (attribute_of,)),
       Row("(x * 2.0).mT", ((2, 3, 4),), (np.ndarray.mT, operator.mul)),
       Row("np.linalg.diagonal(x)", ((2, 3, 4),), (np.linalg.diagonal,)),
       Row("np.linalg.diagonal(x, offset=1)", ((3, 4),), (np.linalg.diagonal,)),
       Row("np.linalg.trace(x)", ((2, 3, 3),), (np.linalg.trace,)),
       Row("np.linalg.trace(x, offset=-1)", ((3, 4),), (np.linalg.trace,)),
       Row("np.astype(np.sin(x), np.float64)", ((3, 4),), (np.astype, np.sin))] if hasattr(np, "matrix_transpose") else []),
    Row("np.tensordot(x, y, 0)", ((3,), (2, 4)), (np.tensordot,)),
    Row("np.tensordot(x, y, axes=(1, 0))", ((3, 4), (4, 5)), (np.tensordot,)),
    Row("np.tensordot(x, y, axes=([0, 2], [1, 0]))", ((2, 3, 4), (4, 2, 5)), (np.tensordot,)),
    Row("np.tensordot(x, y, axes=([2, 0], [0, 1]))", ((2, 3, 4), (4, 2, 5)), (np.tensordot,)),
    *(Row("np.kron(x, y)", shapes, (np.kron,)) for shapes in [
        ((2, 3), (4, 5)), ((3,), (4,)), ((2, 3), (4,)), ((2,), (3, 2)), ((2, 1, 3), (2, 2))]),
    Row("np.cross(x, y)", ((3,), (3,)), (np.cross,)),
    Row("np.cross(x, y)", ((4, 3), (3,)), (np.cross,)),
    Row("np.cross(x, y)", ((2, 1, 3), (4, 3)), (np.cross,)),
    Row("np.cross(x, y, axisa=0, axisb=0)", ((3, 4), (3, 4)), (np.cross,)),
    Row("np.cross(x, y, axisa=0, axisc=0)", ((3, 4), (4, 3)), (np.cross,)),
    Row("np.cross(x, y, axis=0)", ((3, 4), (3, 4)), (np.cross,)),
    Row("np.einsum('ij,jk->ik', x, y)", ((3, 4), (4, 5)), (np.einsum,)),
    Row("np.einsum('ij,jk', x, y)", ((3, 4), (4, 5)), (np.einsum,)),
    Row("np.einsum('ij, jk -> ki', x, y, optimize=True)", ((3, 4), (4, 5)), (np.einsum,)),
    Row("np.einsum('ij->', x)", ((3, 4),), (np.einsum,)),
    Row("np.einsum('ij->ji', x)", ((3, 4),), (np.einsum,)),
    Row("np.einsum('ii->i', x)", ((3, 3),), (np.einsum,)),
    Row("np.einsum('ii', x)", ((3, 3),), (np.einsum,)),
    Row("np.einsum('iji->j', x)", ((3, 2, 3),), (np.einsum,)),
    Row("np.einsum('i,i', x, y)", ((4,), (4,)), (np.einsum,)),
    Row("np.einsum('i,j->ij', x, y)", ((3,), (4,)), (np.einsum,)),
    Row("np.einsum('ij,ij->ij', x, y)", ((3, 4), (3, 4)), (np.einsum,)),
    Row("np.einsum('ij,j->', x, y)", ((3, 4), (4,)), (np.einsum,)),
    Row("np.einsum('bij,bjk->bik', x, y)", ((2, 3, 4), (2, 4, 5)), (np.einsum,)),
    Row("np.einsum('...ij,...jk->...ik', x, y)", ((2, 3, 4), (4, 5)), (np.einsum,)),
    Row("np.einsum('...i,...i->...', x, y)", ((2, 1, 4), (3, 4)), (np.einsum,)),
    Row("np.einsum('...i,...i', x, y)", ((2, 3, 4), (4,)), (np.einsum,)),
    Row("np.einsum('ij,jk,kl->il', x, y, x.T)", ((3, 4), (4, 4)), (np.einsum, attribute_of)),
    Row("np.einsum('i,i,i,i->', x, y, x, y)", ((4,), (4,)), (np.einsum,)),
]

LINALG = [
    Row("np.linalg.det(x)", ((3, 3),), (np.linalg.det,), "wellcond"),
    Row("np.linalg.det(x)", ((2, 3, 3),), (np.linalg.det,), "wellcond"),
    Row("np.linalg.slogdet(x)[1]", ((3, 3),), (np.linalg.slogdet, operator.getitem), "wellcond"),
    Row("sign * logdet", ((2, 3, 3),), (np.linalg.slogdet, operator.mul), "wellcond",
        pre="sign, logdet = np.linalg.slogdet(x)"),
    Row("np.linalg.inv(x)", ((3, 3),), (np.linalg.inv,), "wellcond"),
    Row("np.linalg.inv(x)", ((2, 3, 3),), (np.linalg.inv,), "wellcond"),
    *(Row("np.linalg.solve(x, y)", shapes, (np.linalg.solve,), ("wellcond", "real")) for shapes in [
        ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 2)), ((3, 3), (2, 3, 2)),
        ((2, 3, 3), (3, 2))]),
    Row("np.linalg.cholesky(x)", ((3, 3),), (np.linalg.cholesky,), "spd"),
    Row("np.linalg.cholesky(x)", ((2, 3, 3),), (np.linalg.cholesky,), "spd"),
    Row("np.linalg.cholesky(x, upper=True)", ((3, 3),), (np.linalg.cholesky,), "spd"),
    Row("np.linalg.cholesky(x @ x.T + np.eye(3))", ((3, 4),),
        (np.linalg.cholesky, operator.matmul, attribute_of, operator.add)),
    Row("np.linalg.eigh(x)[0]", ((3, 3),), (np.linalg.eigh, operator.getitem), "spd"),
    Row("np.linalg.eigh(x)[1] ** 2", ((3, 3),), (np.linalg.eigh, operator.getitem, operator.pow), "spd"),
    Row("np.linalg.eigh(x, 'U')[1] ** 2", ((2, 3, 3),), (np.linalg.eigh, operator.getitem, operator.pow),
        "spd"),
    Row("w * v ** 2", ((3, 3),), (np.linalg.eigh, operator.mul, operator.pow), "spd",
        pre="w, v = np.linalg.eigh(x)"),
    Row("np.linalg.eigh(x + x.T)[0]", ((3, 3),), (np.linalg.eigh, operator.getitem, operator.add)),
    *(Row(f"np.linalg.norm({args})", (shape,), (np.linalg.norm,), domain) for args, shape, domain in [
        ("x", (4,), "real"), ("x", (3, 4), "real"), ("x", (2, 3, 4), "real"), ("x, 1", (4,), "offgrid"),
        ("x, np.inf", (4,), "distinct"), ("x, -np.inf", (4,), "distinct"), ("x, 3", (4,), "real"),
        ("x, -1.5", (4,), "nonzero"), ("x, 0", (4,), "nonzero"), ("x, axis=1", (3, 4), "real"),
        ("x, axis=0, keepdims=True", (3, 4), "real"), ("x, 1, axis=-1", (3, 4), "offgrid"),
        ("x, np.inf, 0", (3, 4), "distinct"), ("x, 'fro'", (3, 4), "real"), ("x, 'nuc'", (3, 4), "real"),
        ("x, 2", (3, 4), "real"), ("x, -2", (4, 3), "real"), ("x, 1", (3, 4), "offgrid"),
        ("x, -1", (3, 4), "offgrid"), ("x, np.inf", (3, 4), "offgrid"),
        ("x, -np.inf", (3, 4), "offgrid"),
        ("x, 2, axis=(1, 2)", (2, 3, 4), "real"), ("x, 'fro', (2, 0), True", (2, 3, 4), "real"),
        ("x, np.inf, axis=(2, 1)", (2, 3, 4), "offgrid"), ("x, 'nuc', (0, 2)", (2, 3, 4), "real")]),
    *(Row("np.linalg.pinv(x)", (shape,), (np.linalg.pinv,), "wellcond")
      for shape in [(3, 3), (4, 3), (3, 4), (2, 4, 3)]),
    Row("np.linalg.pinv(x @ x.T, hermitian=True)", ((3, 4),),
        (np.linalg.pinv, operator.matmul, attribute_of)),
    Row("np.linalg.qr(x)[0]", ((4, 3),), (np.linalg.qr, operator.getitem)),
    Row("np.linalg.qr(x)[1]", ((3, 3),), (np.linalg.qr, operator.getitem)),
    Row("np.linalg.qr(x, mode='complete')[0]", ((3, 3),), (np.linalg.qr, operator.getitem)),
    Row("q @ r ** 2", ((2, 4, 3),), (np.linalg.qr, operator.matmul, operator.pow),
        pre="q, r = np.linalg.qr(x)"),
    Row("np.linalg.svd(x)[1]", ((3, 4),), (np.linalg.svd, operator.getitem)),
    Row("np.linalg.svd(x)[0] * np.linalg.svd(x)[2]", ((3, 3),),
        (np.linalg.svd, operator.getitem, operator.mul)),
    Row("np.linalg.svd(x, compute_uv=False)", ((4, 3),), (np.linalg.svd,)),
    Row("np.linalg.svd(x, compute_uv=False)", ((2, 3, 3),), (np.linalg.svd,)),
    Row("np.linalg.svd(x, full_matrices=False)[0]", ((4, 3),), (np.linalg.svd, operator.getitem)),
    Row("np.linalg.svd(x, full_matrices=False)[2]", ((3, 4),), (np.linalg.svd, operator.getitem)),
    Row("(u * s[..., None, :]) @ vh ** 2", ((2, 4, 3),),
        (np.linalg.svd, operator.mul, operator.matmul, operator.pow),
        pre="u, s, vh = np.linalg.svd(x, full_matrices=False)"),
]

MORE_SHAPES = [
    Row("np.reshape(x, shape=(2, 6))", ((3, 4),), (np.reshape,)),
    Row("np.atleast_1d(x)", (F,), (np.atleast_1d,)),
    Row("np.atleast_1d(x)", ((3,),), (np.atleast_1d,)),
    Row("np.atleast_2d(x)", ((4,),), (np.atleast_2d,)),
    Row("np.atleast_2d(x)", (F,), (np.atleast_2d,)),
    Row("np.atleast_3d(x)", ((3, 4),), (np.atleast_3d,)),
    Row("np.atleast_3d(x)", ((4,),), (np.atleast_3d,)),
    Row("np.broadcast_to(x, (2, 3, 4))", ((3, 1),), (np.broadcast_to,)),
    Row("np.broadcast_to(x, (3, 4))", ((4,),), (np.broadcast_to,)),
    Row("np.broadcast_to(x, (2, 3))", (F,), (np.broadcast_to,)),
    Row("np.flip(x)", ((3, 4),), (np.flip,)),
    Row("np.flip(x, 0)", ((3, 4),), (np.flip,)),
    Row("np.flip(x, axis=(0, 2))", ((2, 3, 4),), (np.flip,)),
    Row("np.fliplr(x)", ((3, 4),), (np.fliplr,)),
    Row("np.flipud(x)", ((3, 4),), (np.flipud,)),
    Row("np.rot90(x)", ((3, 4),), (np.rot90,)),
    Row("np.rot90(x, 2)", ((3, 4),), (np.rot90,)),
    Row("np.rot90(x, -1, axes=(1, 2))", ((2, 3, 4),), (np.rot90,)),
    Row("np.roll(x, 2)", ((3, 4),), (np.roll,)),
    Row("np.roll(x, -1, axis=1)", ((3, 4),), (np.roll,)),
    Row("np.roll(x, (1, 2), axis=(0, 1))", ((3, 4),), (np.roll,)),
    Row("np.moveaxis(x, 0, -1)", ((2, 3, 4),), (np.moveaxis,)),
    Row("np.moveaxis(x, (0, 1), (2, 0))", ((2, 3, 4),), (np.moveaxis,)),
    *(Row(f"np.rollaxis(x, {args})", ((2, 3, 4),), (np.rollaxis,))
      for args in ["2", "0, 3", "1, 0", "-1, 1", "0, 2", "2, -2"]),
    Row("np.swapaxes(x, 0, 2)", ((2, 3, 4),), (np.swapaxes,)),
    Row("x.swapaxes(0, 1)", ((3, 4),), (np.ndarray.swapaxes,)),
    Row("np.repeat(x, 2)", ((3, 4),), (np.repeat,)),
    Row("np.repeat(x, 3, axis=1)", ((3, 4),), (np.repeat,)),
    Row("np.repeat(x, [1, 0, 2], axis=0)", ((3, 4),), (np.repeat,)),
    Row("np.repeat(x, 3)", (F,), (np.repeat,)),
    Row("x.repeat(2, axis=-1)", ((2, 3, 4),), (np.ndarray.repeat,)),
    Row("np.tile(x, 2)", ((3, 4),), (np.tile,)),
    Row("np.tile(x, (2, 1, 3))", ((3, 4),), (np.tile,)),
    Row("np.tile(x, (2, 2))", ((4,),), (np.tile,)),
    Row("np.tile(x, 3)", (F,), (np.tile,)),
    Row("np.take(x, [0, 2, 2])", ((3, 4),), (np.take,)),
    Row("np.take(x, [[0, 2], [1, 1]], axis=1)", ((3, 4),), (np.take,)),
    Row("np.take(x, 1, axis=0)", ((3, 4),), (np.take,)),
    Row("np.take(x, [5, -1], axis=1, mode='wrap')", ((3, 4),), (np.take,)),
    Row("np.take(x, [5, -1], axis=1, mode='clip')", ((3, 4),), (np.take,)),
    Row("x.take([3, 0, 3])", ((3, 4),), (np.ndarray.take,)),
    Row("x.take(np.array([1, 1]), axis=-1)", ((2, 3, 4),), (np.ndarray.take,)),
    Row("np.tril(x)", ((3, 4),), (np.tril,)),
    Row("np.tril(x, -1)", ((2, 3, 4),), (np.tril,)),
    Row("np.triu(x)", ((3, 4),), (np.triu,)),
    Row("np.triu(x, 1)", ((2, 3, 4),), (np.triu,)),
    Row("np.pad(x, 1)", ((3, 4),), (np.pad,)),
    Row("np.pad(x, ((1, 0), (2, 3)))", ((3, 4),), (np.pad,)),
    Row("np.pad(x, 2, mode='edge')", ((3, 4),), (np.pad,)),
    Row("np.pad(x, (1, 2), 'reflect')", ((3, 4),), (np.pad,)),
    Row("np.pad(x, 2, mode='symmetric')", ((3, 4),), (np.pad,)),
    Row("np.pad(x, 1, mode='wrap')", ((3, 4),), (np.pad,)),
    Row("np.pad(x, 5, mode='reflect')", ((3,),), (np.pad,)),
    Row("np.pad(x, 1, constant_values=y)", ((3, 4), F), (np.pad,)),
    Row("np.sort(x)", ((3, 4),), (np.sort,), "distinct"),
    Row("np.sort(x, axis=0)", ((3, 4),), (np.sort,), "distinct"),
    Row("np.sort(x, axis=None)", ((3, 4),), (np.sort,), "distinct"),
    Row("np.sort(x, 1)", ((2, 3, 4),), (np.sort,), "distinct"),
    Row("np.diff(x)", ((3, 4),), (np.diff,)),
    Row("np.diff(x, 2)", ((3, 4),), (np.diff,)),
    Row("np.diff(x, axis=0)", ((3, 4),), (np.diff,)),
    Row("np.diff(x, prepend=y)", ((3, 4), (3, 1)), (np.diff,)),
    Row("np.diff(x, n=2, axis=0, append=y)", ((3, 4), (2, 4)), (np.diff,)),
    Row("np.diff(x, prepend=y, append=y)", ((4,), F), (np.diff,)),
    Row("np.linspace(x, y, 5)", (F, F), (np.linspace,)),
    Row("np.linspace(x, y, 4, endpoint=False)", (F, F), (np.linspace,)),
    Row("np.linspace(x, y, 3)", ((2,), (2,)), (np.linspace,)),
    Row("np.linspace(x, y, 3, axis=1)", ((2,), (2,)), (np.linspace,)),
    Row("np.linspace(x, y, 3)", ((2, 1), (3,)), (np.linspace,)),
    Row("np.linspace(x, y, 5, retstep=True)[1]", (F, F), (np.linspace, operator.getitem)),
    Row("np.linspace(x, y, 5, retstep=True)[0]", ((2,), F), (np.linspace, operator.getitem)),
    Row("np.full((2, 3), x)", (F,), (np.full,)),
    Row("np.full((2, 3), x)", ((3,),), (np.full,)),
    Row("np.full_like(np.ones((2, 3)), x)", (F,), (np.full_like,)),
    Row("np.full_like(np.ones((2, 3)), x)", ((3,),), (np.full_like,)),
    Row("np.hstack([x, y])", ((3,), (2,)), (np.hstack,)),
    Row("np.hstack((x, y))", ((3, 2), (3, 4)), (np.hstack,)),
    Row("np.hstack([x, y])", (F, (3,)), (np.hstack,)),
    Row("np.vstack((x, y))", ((4,), (4,)), (np.vstack,)),
    Row("np.vstack([x, y])", ((2, 4), (4,)), (np.vstack,)),
    Row("np.dstack([x, y])", ((3, 4), (3, 4)), (np.dstack,)),
    Row("np.dstack((x, y))", ((4,), (4,)), (np.dstack,)),
    Row("np.column_stack((x, y))", ((3,), (3,)), (np.column_stack,)),
    Row("np.column_stack([x, y])", ((3, 2), (3,)), (np.column_stack,)),
    Row("np.split(x, 2, axis=1)[1]", ((3, 4),), (np.split, operator.getitem)),
    Row("np.split(x, [1, 3])[0]", ((4,),), (np.split, operator.getitem)),
    Row("np.stack(np.split(x, 3))", ((3, 4),), (np.split, np.stack)),
    Row("p * q", ((3, 4),), (np.split, operator.mul), pre="p, q = np.split(x, 2, axis=1)"),
    Row("np.array_split(x, 3, axis=1)[2]", ((3, 4),), (np.array_split, operator.getitem)),
    Row("np.hsplit(x, 2)[0]", ((3, 4),), (np.hsplit, operator.getitem)),
    Row("np.hsplit(x, [1])[1]", ((4,),), (np.hsplit, operator.getitem)),
    Row("np.vsplit(x, [1])[1]", ((3, 4),), (np.vsplit, operator.getitem)),
    Row("np.dsplit(x, 2)[1]", ((2, 3, 4),), (np.dsplit, operator.getitem)),
]

ROWS: list[Row] = [
    *(Row(expr, shapes, (fun,), domain) for expr, fun, domain in BINARY for shapes in BROADCAST),
    *(Row(expr, shapes, (fun,), domain) for expr, fun, domain in MORE_BINARY for shapes in BROADCAST),
    *(Row(expr, (shape,), (fun,), domain) for expr, fun, domain in UNARY for shape in [(3, 4), F]),
    *(Row(expr, (shape,), (fun,), domain) for expr, fun, domain in MORE_UNARY for shape in [(3, 4), F]),
    *SCALAR_FUNCTIONS,
    *WITH_CONSTANTS,
    *SELECTIONS,
    *reduction_rows(),
    *MORE_REDUCTIONS,
    *LINEAR_ALGEBRA,
    *MORE_LINEAR_ALGEBRA,
    *LINALG,
    *SHAPES,
    *MORE_SHAPES,
    *INDEXING,
    *CONTAINERS,
    *METHOD_CHAINS,
]

#: The other tables of rules (each a test module with its own ROWS), covered together.
MORE_TABLES = ("test_rules_numpy_more", "test_rules_scipy", "test_complex", "test_random_gradients", "test_numpy13",
               "test_scipy15")
#: The names the expressions of rows may use (other tables add theirs).
NAMESPACE: dict[str, Any] = {"np": np, "math": math, "typing": typing}

# --- helpers --------------------------------------------------------------------------


def build(row: Row, dtype: Any = np.float64) -> tuple[Any, list[Any]]:
    """The function ``np.sum((<expr>) * W)`` of ``row`` and its inputs, the same in every run.

    With ``dtype`` float32 the arrays and ``W`` are float32 and ``F`` inputs NumPy float32
    scalars, rounded from the same float64 values.
    """
    rng = np.random.default_rng(zlib.crc32(row.id.encode()))
    domains = (row.domain,) * len(row.shapes) if isinstance(row.domain, str) else row.domain
    args = [float(DOMAINS[d](rng, ())) if s == F else DOMAINS[d](rng, s)
            for d, s in zip(domains, row.shapes)]
    names = ", ".join("xy"[:len(args)])
    body = f"    {row.pre}\n" if row.pre else ""
    namespace = dict(NAMESPACE)
    value = make_function(f"def value({names}):\n{body}    return {row.expr}\n", dict(namespace))
    weights = np.asarray(rng.standard_normal(np.shape(value(*args))), dtype=dtype)
    if dtype is not np.float64:
        args = [dtype(a) if isinstance(a, float) else a.astype(dtype) for a in args]
    source = f"def f({names}):\n{body}    return np.sum(({row.expr}) * W)\n"
    return make_function(source, {**namespace, "W": weights}), args


#: The modules of the helpers generated code calls (tested by differentiating generated code).
RUNTIME_MODULES = tuple(f"s2sad.runtime.{m.name}" for m in pkgutil.iter_modules(s2sad.runtime.__path__))


def applied_rules(f: Any, nargs: int) -> set[int]:
    """The keys of the rules s2sad's normalized form of ``f`` applies."""
    state = State(f, tuple("xy"[:nargs]), True, "grad")
    for p in PIPELINE:
        p.run(state)
        if p.name == "normalize":
            break
    return {REGISTRY.key(s.value.rule.fun) for s in state.ir.body
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.rule is not None}


NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
#: Spellings and semantics NumPy 1.x does not have (batched solve with a vector right side).
NUMPY2_ONLY = ("upper=True", "shape=(", "np.linalg.solve(x, y) [2x3x3")
numpy2 = pytest.mark.skipif(not NUMPY2, reason="NumPy 1.x promotes NumPy scalars by value "
                            "(NEP 50 changed that in 2.0), so float32 results of scalar "
                            "arithmetic become float64; and the registry differs slightly")


def runs_here(row: Row) -> bool:
    return NUMPY2 or not any(part in row.id for part in NUMPY2_ONLY)


def params(rows: list[Row]) -> list[Any]:
    out = []
    for row in rows:
        marks = [pytest.mark.xfail(strict=True, reason=row.xfail)] if row.xfail else []
        if not runs_here(row):
            marks.append(pytest.mark.skip(reason="a NumPy 2 spelling or semantics"))
        out.append(pytest.param(row, id=row.id, marks=marks))
    return out


# --- tests ----------------------------------------------------------------------------


@pytest.mark.parametrize("row", params(ROWS))
def test_rule_matches_finite_differences(row: Row) -> None:
    f, args = build(row)
    assert_grad_matches(f, args, wrt=tuple(range(len(args))), rtol=1e-5, atol=1e-7)


@numpy2
@pytest.mark.parametrize("row", params(ROWS))
def test_rule_in_float32(row: Row) -> None:
    """float32 inputs get float32 gradients, close to float64 finite differences."""
    f32, args32 = build(row, np.float32)
    f64, _ = build(row)
    args64 = [a.astype(np.float64) if isinstance(a, np.ndarray) else float(a) for a in args32]
    grads = s2sad.grad(f32, tuple(range(len(args32))))(*args32)
    for i, (arg, g) in enumerate(zip(args32, grads)):
        where = f"gradient for argument {i}"
        assert np.shape(g) == np.shape(arg), f"{where} has shape {np.shape(g)}, not {np.shape(arg)}"
        assert np.result_type(g) == np.float32, f"{where} has dtype {np.result_type(g)}, not float32"
        expected = numerical_grad(f64, args64, i)
        scale = max(1.0, float(np.max(np.abs(expected))))
        np.testing.assert_allclose(g, expected, rtol=1e-2, atol=1e-3 * scale, err_msg=where)


#: Casts to single precision in rows' expressions (their tangents are rounded to it).
SINGLE_PRECISION = ("np.float32(", "np.complex64(")


def _direction(rng: np.random.Generator, arg: Any) -> Any:
    """A random direction for ``arg``: a float for a float, an array of its shape otherwise."""
    return float(rng.standard_normal()) if isinstance(arg, float) else rng.standard_normal(np.shape(arg))


@pytest.mark.parametrize("row", params(ROWS))
def test_forward_rule_matches_finite_differences(row: Row) -> None:
    """For each input: the jvp along a random v matches central finite differences of the
    function along v, and equals <grad, v> from reverse mode (the dot-product test)."""
    f, args = build(row)
    rng = np.random.default_rng(zlib.crc32(b"jvp " + row.id.encode()))
    for i, arg in enumerate(args):
        where = f"tangent along argument {i}"
        v = _direction(rng, arg)
        value, derivative = s2sad.jvp(f, i)(*args, v)
        np.testing.assert_allclose(value, f(*args), rtol=1e-12, atol=1e-12, err_msg=where)
        eps = 1e-6
        plus, minus = list(args), list(args)
        plus[i], minus[i] = arg + eps * v, arg - eps * v
        expected = (f(*plus) - f(*minus)) / (2 * eps)
        np.testing.assert_allclose(derivative, expected, rtol=1e-5, atol=1e-7, err_msg=where)
        g = s2sad.grad(f, i)(*args)
        # (a cast to single precision rounds the tangent too, as the value: to float32's precision)
        rtol = 1e-6 if any(cast in row.expr for cast in SINGLE_PRECISION) else 1e-9
        np.testing.assert_allclose(derivative, np.sum(g * v), rtol=rtol, atol=1e-11,
                                   err_msg=f"{where}: jvp and <grad, v> differ")


def test_table_covers_every_rule() -> None:
    rows = ROWS + [row for name in MORE_TABLES for row in importlib.import_module(name).ROWS]
    ids = [row.id for row in rows]
    assert len(set(ids)) == len(ids), "two rows have the same id"
    misdeclared = [row.id for row in rows if runs_here(row) and not {REGISTRY.key(fun) for fun in row.uses}
                   <= applied_rules(build(row)[0], len(row.shapes))]
    assert not misdeclared, f"rows that do not apply the rules they declare: {misdeclared}"
    covered = {REGISTRY.key(fun) for row in rows for fun in row.uses}
    # statements (x.append(v), x[i] = v) are tested in test_containers.py
    # the helpers generated code calls are tested by differentiating generated code
    missing = [rule.name for key, rule in REGISTRY.rules.items()
               if key in BUILTIN_RULES and key not in covered and not isinstance(rule.fun, Primitive)
               and getattr(rule.fun, "__module__", None) not in RUNTIME_MODULES
               and rule.differentiable()]  # (a rule that only refuses: tested where it refuses)
    assert not missing, f"registered rules that no row exercises: {missing}"


def test_every_rule_has_a_forward_mode() -> None:
    """Each registered rule differentiates in forward mode too: it is elementwise or linear,
    or it has a jvp template for every parameter a gradient flows through."""
    missing = [f"{rule.name} ({', '.join(sorted(rule.differentiable() - set(rule.jvps)))})"
               for key, rule in REGISTRY.rules.items() if key in BUILTIN_RULES
               if getattr(rule.fun, "__module__", None) not in RUNTIME_MODULES
               and not rule.elementwise and not rule.linear
               and not rule.differentiable() <= set(rule.jvps)]
    assert not missing, f"registered rules with no forward mode for these parameters: {missing}"


KINKS = [  # (expression, inputs, the exact gradients): the conventions of numpy_rules.py
    ("np.maximum(x, y)", ([1.0, 2.0, 3.0], [1.0, 0.0, 4.0]), ([0.5, 1.0, 0.0], [0.5, 0.0, 1.0])),
    ("np.minimum(x, y)", ([1.0, 2.0, 3.0], [1.0, 0.0, 4.0]), ([0.5, 0.0, 1.0], [0.5, 1.0, 0.0])),
    ("np.maximum(x, y)", ([1.0, -2.0], [1.0, -2.0]), ([0.5, 0.5], [0.5, 0.5])),
    ("np.maximum(x, x)", ([1.0, -2.0],), ([1.0, 1.0],)),
    ("np.max(x)", ([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]],), ([[0.0, 0.5, 0.5], [0.0, 0.0, 0.0]],)),
    ("np.max(x, axis=1)", ([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]],), ([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]],)),
    ("x.min(axis=0, keepdims=True)", ([[1.0, 0.0], [1.0, 2.0]],), ([[0.5, 1.0], [0.5, 0.0]],)),
    ("np.amin(x)", ([2.0, -1.0, -1.0, -1.0],), ([0.0, 1 / 3, 1 / 3, 1 / 3],)),
    ("np.abs(x)", ([0.0, 1.5, -2.0],), ([0.0, 1.0, -1.0],)),
    ("abs(x)", (0.0,), (0.0,)),
    ("np.clip(x, -0.5, 0.5)", ([-1.0, -0.5, 0.0, 0.5, 1.0],), ([0.0, 0.0, 1.0, 0.0, 0.0],)),
    ("x.clip(-0.5, 0.5)", ([-1.0, -0.5, 0.0, 0.5, 1.0],), ([0.0, 0.0, 1.0, 0.0, 0.0],)),
    ("np.fmax(x, y)", ([1.0, 2.0, np.nan], [1.0, 0.0, 4.0]), ([0.5, 1.0, 0.0], [0.5, 0.0, 1.0])),
    ("np.fmin(x, y)", ([1.0, 2.0, 3.0], [1.0, np.nan, 4.0]), ([0.5, 1.0, 1.0], [0.5, 0.0, 0.0])),
    ("np.ptp(x)", ([1.0, 3.0, 3.0, 0.0],), ([0.0, 0.5, 0.5, -1.0],)),
    ("np.ptp(x, axis=1)", ([[2.0, 2.0], [1.0, 0.0]],), ([[0.0, 0.0], [1.0, -1.0]],)),
    ("np.sort(x) * np.array([1.0, 2.0, 3.0, 4.0])", ([2.0, 1.0, 2.0, 0.0],), ([3.5, 2.0, 3.5, 1.0],)),
    ("np.sort(x, axis=0) * np.array([[1.0], [3.0]])", ([[1.0, 0.0], [1.0, 5.0]],),
     ([[2.0, 1.0], [2.0, 3.0]],)),
    ("max(x, y)", (2.0, 2.0), (0.5, 0.5)),
    ("min([x, y, x])", (1.0, 2.0), (1.0, 0.0)),
    ("np.fabs(x)", ([0.0, -2.0],), ([0.0, -1.0],)),
    ("np.hypot(x, y)", ([0.0, 3.0], [0.0, 4.0]), ([0.0, 0.6], [0.0, 0.8])),
    ("np.linalg.norm(x)", ([0.0, 0.0],), ([0.0, 0.0],)),
    ("np.linalg.norm(x, np.inf)", ([1.0, -3.0, 3.0],), ([0.0, -0.5, 0.5],)),
    ("np.linalg.norm(x, 1)", ([[1.0, -2.0], [-1.0, 0.0]],), ([[0.5, -0.5], [-0.5, 0.0]],)),
    ("np.sinc(x)", ([0.0],), ([0.0],)),
    ("np.prod(x)", ([0.0, 2.0, 3.0],), ([6.0, 0.0, 0.0],)),
    ("np.prod(x)", ([0.0, 2.0, 0.0],), ([0.0, 0.0, 0.0],)),
    ("np.prod(x, axis=0)", ([[0.0, 2.0], [5.0, 3.0]],), ([[5.0, 3.0], [0.0, 2.0]],)),
    ("np.cumprod(x)", ([2.0, 0.0, 3.0],), ([1.0, 8.0, 0.0],)),
]


@pytest.mark.parametrize("expr, inputs, expected", KINKS, ids=[k[0] for k in KINKS])
def test_convention_at_kink(expr: str, inputs: tuple, expected: tuple) -> None:
    names = "xy"[:len(inputs)]
    f = make_function(f"def f({', '.join(names)}):\n    return np.sum({expr})\n", {"np": np})
    args = [x if isinstance(x, float) else np.array(x) for x in inputs]
    grads = s2sad.grad(f, tuple(range(len(args))))(*args)
    for g, want in zip(grads, expected):
        np.testing.assert_array_equal(g, want)


def _toy(x: Any) -> Any:
    """2 x; the test below gives s2sad a deliberately wrong rule for it."""
    return 2.0 * x


@pytest.mark.parametrize("template, complaint", [
    ("np.sum(g)", "shape"),  # the gradient of an array is a scalar
    ("g * 3.0", "Not equal to tolerance"),  # wrong values
    ("np.asarray(g * 2.0, dtype=np.float32)", "dtype"),  # right values, wrong dtype
])
def test_the_rule_test_catches_a_wrong_rule(template: str, complaint: str) -> None:
    REGISTRY.defvjp(_toy, "x", x=template)
    try:
        f = make_function("def f(x):\n    return np.sum(toy(x) * W)\n",
                          {"np": np, "toy": _toy, "W": np.arange(12.0).reshape(3, 4)})
        with pytest.raises(AssertionError, match=complaint):
            assert_grad_matches(f, [np.full((3, 4), 0.5)], wrt=(0,))
    finally:
        del REGISTRY.rules[id(_toy)]
    assert REGISTRY.rule(_toy) is None


RNG = np.random.default_rng(0)
RANDOM_STATE = np.random.RandomState(0)


@numpy2
def test_random_numbers_carry_no_gradient() -> None:
    """Samples drawn with constant parameters, and integers, carry no gradient: adding them
    leaves the gradient of the rest.  (This test asserted before that samplers whose location
    or bounds carry a gradient, RNG.normal(x, 1.0), RNG.uniform(x, x + 1.0), gave a zero
    gradient: wrong, their pathwise gradient is not zero; tests/test_random_gradients.py
    checks it against finite differences, and the refusal of permutation(x) and choice(x, k).)"""
    source = ("def f(x):\n"
              "    noise = RNG.normal(0.0, 1.0, 3) + RNG.uniform(0.0, 1.0, 3) + RANDOM_STATE.normal(size=3)\n"
              "    noise = noise + np.random.normal(size=3) + RNG.permutation(3) + RNG.choice(3, 3)\n"
              "    return np.sum(x) + np.sum(noise * x) + float(RNG.integers(0, 3))\n")
    f = make_function(source, {"np": np, "RNG": RNG, "RANDOM_STATE": RANDOM_STATE})
    x = np.array([0.5, 1.5, 2.5])
    state = (RNG.bit_generator.state, RANDOM_STATE.get_state(), np.random.get_state())
    gradient = s2sad.grad(f)(x)
    RNG.bit_generator.state = state[0]
    RANDOM_STATE.set_state(state[1])
    np.random.set_state(state[2])
    noise = (RNG.normal(0.0, 1.0, 3) + RNG.uniform(0.0, 1.0, 3) + RANDOM_STATE.normal(size=3)
             + np.random.normal(size=3) + RNG.permutation(3) + RNG.choice(3, 3))
    np.testing.assert_allclose(gradient, 1.0 + noise, rtol=1e-12)


REFUSED = [  # (expression of x, x, what the error says): refused rather than a wrong gradient
    ("np.pad(x, 1, mode='linear_ramp')", np.ones((3, 4)), "np.pad with mode"),
    ("np.linalg.qr(x)[0]", np.eye(3, 4) + 0.5, "as many rows as columns"),
    ("np.linalg.svd(x)[0]", np.eye(4, 3) + 0.5, "full_matrices=False"),
]


@pytest.mark.parametrize("expr, x, complaint", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_with_a_clear_error(expr: str, x: Any, complaint: str) -> None:
    f = make_function(f"def f(x):\n    return np.sum({expr})\n", {"np": np, "math": math})
    with pytest.raises(S2SADError, match=complaint):
        s2sad.grad(f)(x)


def test_astype_to_an_integer_dtype_is_refused() -> None:
    """x.astype(int) has no gradient s2sad gives silently: a gradient that reaches it is an error."""
    f = make_function("def f(x):\n    return np.sum(x.astype(int) * x)\n", {"np": np})
    with pytest.raises(S2SADError, match="conversion to int"):
        s2sad.grad(f)(np.array([0.5, 1.5]))
    g = make_function("def g(x):\n    return np.sum(x.astype(np.float32) * x)\n", {"np": np})
    grad = s2sad.grad(g)(np.array([0.5, 1.5]))
    assert grad.dtype == np.float64
    np.testing.assert_allclose(grad, [1.0, 3.0])


@numpy2
def test_readme_lists_the_registered_rules() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split(BEGIN + "\n", 1)[1].split(END, 1)[0]
    assert block == rules_markdown(), (
        "README.md's list of rules is stale: run python -m s2sad.rules.listing README.md")


CONVERTING = [
    ("np.sum(x, dtype=int)", "np.sum"),
    ("x.sum(dtype=np.int32)", "x.sum"),
    ("np.mean(x, dtype=int)", "np.mean"),
    ("np.prod(x, dtype=int)", "np.prod"),
    ("np.cumsum(x, dtype='int64')", "np.cumsum"),
    ("np.asarray(x, dtype=int)", "np.asarray"),
    ("np.array(x, dtype=bool)", "np.array"),
    ("x.astype(np.int8)", "x.astype"),
]


@pytest.mark.parametrize("expr, callee", CONVERTING, ids=[c[0] for c in CONVERTING])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_dtype_argument_to_a_non_float_dtype_is_refused_where_written(
        expr: str, callee: str, mode: str) -> None:
    """``dtype=int`` makes the function piecewise constant: a gradient of ones would be
    silently wrong, so a gradient that reaches it is an error located at the call."""
    f = make_function(f"def f(x):\n    return np.sum({expr}) * 1.0\n", {"np": np})
    x = np.array([0.5, 1.5])
    with pytest.raises(S2SADError, match=rf"{re.escape(callee)}\(\.\.\., dtype=.*conversion to") as info:
        s2sad.grad(f)(x) if mode == "reverse" else s2sad.jvp(f)(x, np.ones(2))
    assert (info.value.location.line, info.value.location.column) == (2, 19)


def test_dtype_argument_known_only_at_run_time_is_checked_when_it_runs() -> None:
    """A dtype held in a variable is checked by the generated code: float passes, int raises."""
    f = make_function("def f(x, kind):\n    return np.sum(np.cumsum(x, dtype=kind) * x)\n", {"np": np})
    x = np.array([0.5, 1.5, 2.0])
    x0, x1, x2 = x
    np.testing.assert_allclose(s2sad.grad(f)(x, np.float64),
                               [2 * x0 + x1 + x2, x0 + 2 * x1 + x2, x0 + x1 + 2 * x2], rtol=1e-12)
    with pytest.raises(S2SADError, match="conversion to int64"):
        s2sad.grad(f)(x, np.int64)
    with pytest.raises(S2SADError, match="conversion to int64"):
        s2sad.jvp(f)(x, np.int64, np.ones(3))


def test_every_built_in_template_compiles():
    """Built-in templates compile on first use (for a fast ``import s2sad``): each one must."""
    from s2sad.rules import REGISTRY

    templates = [t for rule in REGISTRY.rules.values()
                 for t in (*rule.vjps.values(), *rule.jvps.values(), *rule.masks.values())]
    assert len(templates) > 500
    for template in templates:
        template.check()
