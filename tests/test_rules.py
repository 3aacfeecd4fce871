"""Every registered gradient rule against central finite differences, in float64.

Each row of the table is an expression of the inputs ``x``, ``y`` (in that
order) with their shapes -- ``F`` stands for a Python float -- the domain the
inputs are drawn from, and the registered primitives it applies (``uses``).
The function differentiated is ``np.sum((<expr>) * W)``, with ``W`` a fixed
random array of the expression's shape so that every output element matters,
with respect to every input.  ``assert_grad_matches`` also checks that each
gradient has its input's shape and type (float64 arrays for float64 arrays, a
float for a Python float) and that the inputs are left unchanged.

Domains keep the inputs away from kinks: ``offgrid`` values are at least 0.03
from every multiple of 0.1, where the tests put the kinks of abs, clip and
comparisons.  The conventions at kinks are tested separately, exactly.
"""
from __future__ import annotations

import builtins
import operator
import zlib
from typing import Any, NamedTuple

import numpy as np
import pytest

import s2sad
from s2sad.ir import Assign, Call
from s2sad.pipeline import PIPELINE, State
from s2sad.rules import REGISTRY
from s2sad.rules.registry import Primitive

from gradcheck import assert_grad_matches, make_function

F = "float"  # the "shape" of a Python float input


class Row(NamedTuple):
    expr: str
    shapes: tuple  # one per input x, y: a shape tuple, or F
    uses: tuple  # the registered primitives the expression applies
    domain: str | tuple[str, ...] = "real"  # for all inputs, or one per input
    xfail: str | None = None  # why this row is a known failure

    @property
    def id(self) -> str:
        return f"{self.expr} [{', '.join(_shape_id(s) for s in self.shapes)}]"


def _shape_id(shape: Any) -> str:
    return shape if shape == F else "x".join(map(str, shape))


DOMAINS = {
    "real": lambda rng, shape: rng.standard_normal(shape),
    "small": lambda rng, shape: rng.uniform(-1.0, 1.0, shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, shape),
    "nonzero": lambda rng, shape: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape),
    "offgrid": lambda rng, shape: (np.round(rng.uniform(-1.5, 1.5, shape), 1)
                                   + rng.uniform(0.03, 0.07, shape)),
}

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
    ("pow(x, y)", builtins.pow, ("positive", "real")),
    ("x % y", operator.mod, ("real", "positive")),
    ("np.mod(x, y)", np.mod, ("real", "positive")),
    ("np.remainder(x, y)", np.remainder, ("real", "positive")),
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
]

WITH_CONSTANTS = [
    Row("x ** 2", ((3, 4),), (operator.pow,)),
    Row("x ** 0.5", ((3, 4),), (operator.pow,), "positive"),
    Row("2.0 ** x", ((3, 4),), (operator.pow,)),
    Row("1.0 / x", ((3, 4),), (operator.truediv,), "nonzero"),
    Row("3.0 - x", ((3, 4),), (operator.sub,)),
    Row("x % 0.7", ((3, 4),), (operator.mod,)),
    Row("np.power(x, 3)", ((3, 4),), (np.power,)),
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
]

REDUCTIONS = [("np.sum", np.sum), ("np.mean", np.mean), ("np.max", np.max), ("np.min", np.min),
              ("np.amax", np.amax), ("np.amin", np.amin), ("x.sum", np.ndarray.sum),
              ("x.mean", np.ndarray.mean), ("x.max", np.ndarray.max), ("x.min", np.ndarray.min)]


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
    Row("x.T", ((4,),), (np.ndarray.T,)),
    Row("x.T", ((3, 4),), (np.ndarray.T,)),
    Row("x.T", ((2, 3, 4),), (np.ndarray.T,)),
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
    Row("sum([x, y * 2.0])", ((3, 4), (4,)), (builtins.sum,)),
    Row("sum(x)", ((3, 4),), (builtins.sum,)),
    Row("sum((x, y), 1.5)", (F, F), (builtins.sum,)),
]

METHOD_CHAINS = [
    Row("(x * y).sum(axis=-1)", ((3, 4), (4,)), (operator.mul, np.ndarray.sum)),
    Row("np.exp(x).mean(axis=0).max()", ((3, 4),), (np.exp, np.ndarray.mean, np.ndarray.max)),
    Row("(x @ y).T.reshape(-1)[1:]", ((3, 4), (4, 2)),
        (operator.matmul, np.ndarray.T, np.ndarray.reshape, operator.getitem)),
]

ROWS: list[Row] = [
    *(Row(expr, shapes, (fun,), domain) for expr, fun, domain in BINARY for shapes in BROADCAST),
    *(Row(expr, (shape,), (fun,), domain) for expr, fun, domain in UNARY for shape in [(3, 4), F]),
    *WITH_CONSTANTS,
    *SELECTIONS,
    *reduction_rows(),
    *LINEAR_ALGEBRA,
    *SHAPES,
    *INDEXING,
    *CONTAINERS,
    *METHOD_CHAINS,
]

# --- helpers --------------------------------------------------------------------------


def build(row: Row) -> tuple[Any, list[Any]]:
    """The function ``np.sum((<expr>) * W)`` of ``row`` and its inputs, the same in every run."""
    rng = np.random.default_rng(zlib.crc32(row.id.encode()))
    domains = (row.domain,) * len(row.shapes) if isinstance(row.domain, str) else row.domain
    args = [float(DOMAINS[d](rng, ())) if s == F else DOMAINS[d](rng, s)
            for d, s in zip(domains, row.shapes)]
    names = "xy"[:len(args)]
    value = eval(row.expr, {"np": np}, dict(zip(names, args)))
    weights = rng.standard_normal(np.shape(value))
    source = f"def f({', '.join(names)}):\n    return np.sum(({row.expr}) * W)\n"
    return make_function(source, {"np": np, "W": weights}), args


def applied_rules(f: Any, nargs: int) -> set[int]:
    """The keys of the rules s2sad's normalized form of ``f`` applies."""
    state = State(f, tuple("xy"[:nargs]), True, "grad")
    for p in PIPELINE:
        p.run(state)
        if p.name == "normalize":
            break
    return {id(s.value.rule.fun) for s in state.ir.body
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.rule is not None}


def params(rows: list[Row]) -> list[Any]:
    return [pytest.param(row, id=row.id, marks=[pytest.mark.xfail(strict=True, reason=row.xfail)]
                         if row.xfail else []) for row in rows]


# --- tests ----------------------------------------------------------------------------


@pytest.mark.parametrize("row", params(ROWS))
def test_rule_matches_finite_differences(row: Row) -> None:
    f, args = build(row)
    assert_grad_matches(f, args, wrt=tuple(range(len(args))), rtol=1e-5, atol=1e-7)


def test_table_covers_every_rule() -> None:
    ids = [row.id for row in ROWS]
    assert len(set(ids)) == len(ids), "two rows have the same id"
    misdeclared = [row.id for row in ROWS
                   if not {id(fun) for fun in row.uses} <= applied_rules(build(row)[0], len(row.shapes))]
    assert not misdeclared, f"rows that do not apply the rules they declare: {misdeclared}"
    covered = {id(fun) for row in ROWS for fun in row.uses}
    # statements (x.append(v), x[i] = v) are tested in test_containers.py
    missing = [rule.name for key, rule in REGISTRY.rules.items()
               if key not in covered and not isinstance(rule.fun, Primitive)]
    assert not missing, f"registered rules that no row exercises: {missing}"


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
]


@pytest.mark.parametrize("expr, inputs, expected", KINKS, ids=[k[0] for k in KINKS])
def test_convention_at_kink(expr: str, inputs: tuple, expected: tuple) -> None:
    names = "xy"[:len(inputs)]
    f = make_function(f"def f({', '.join(names)}):\n    return np.sum({expr})\n", {"np": np})
    args = [x if isinstance(x, float) else np.array(x) for x in inputs]
    grads = s2sad.grad(f, tuple(range(len(args))))(*args)
    for g, want in zip(grads, expected):
        np.testing.assert_array_equal(g, want)
