"""The rules of s2sad/rules/numpy_more_rules.py, as a table run like tests/test_rules.py's:
finite differences in float64 and float32, forward mode against reverse mode, and second
order (forward over reverse, and reverse over reverse) against finite differences of the
gradient.  Also: library functions are never traced into, and ``x // y`` has no gradient.
"""
from __future__ import annotations

import operator
import re
import warnings
import zlib
from typing import Any

import numpy as np
import pytest

import s2sad
import test_rules
from s2sad.rules import REGISTRY
from s2sad.runtime import attribute_of
from s2sad.errors import NoGradientRuleError, S2SADError, ZeroGradientWarning
from test_rules import F, Row, build, params

from gradcheck import make_function

# NaNs at fixed places (a NaN in every row), added to the inputs of the NaN-ignoring reductions
test_rules.NAMESPACE["NANS"] = np.where(np.eye(3, 4, 1, dtype=bool), np.nan, 0.0)
# a where= mask with an entry in every row and column
test_rules.NAMESPACE["MASK"] = np.array([[True, False, True, True], [False, True, True, False],
                                         [True, False, False, True]])

# square (6 x 6) when read as tensorsolve reads them: 3 I added keeps them far from singular
test_rules.NAMESPACE["I6"] = np.reshape(np.eye(6), (2, 3, 6))
test_rules.NAMESPACE["I6A"] = np.moveaxis(np.reshape(np.eye(6), (6, 2, 3)), -1, 0)
# bins of np.bincount, one of them empty
test_rules.NAMESPACE["BINS"] = np.array([0, 2, 2, 1, 4])
# values whose float32 rounding is far below the finite differences' step
test_rules.DOMAINS["tiny"] = lambda rng, shape: rng.uniform(1e-5, 2e-5, shape)

ROWS: list[Row] = [
    Row("np.nansum(x + NANS)", ((3, 4),), (np.nansum,)),
    Row("np.nansum(x + NANS, axis=1, keepdims=True)", ((3, 4),), (np.nansum,)),
    Row("np.nanmean(x + NANS, axis=0)", ((3, 4),), (np.nanmean,)),
    Row("np.nanmean(x + NANS)", ((3, 4),), (np.nanmean,)),
    Row("np.nanmax(x + NANS, axis=1)", ((3, 4),), (np.nanmax,)),
    Row("np.nanmin(x + NANS)", ((3, 4),), (np.nanmin,)),
    Row("np.nanprod(x + NANS, axis=-1)", ((3, 4),), (np.nanprod,)),
    Row("np.nanvar(x + NANS, axis=1, ddof=1)", ((3, 4),), (np.nanvar,)),
    Row("np.nanvar(x)", ((3, 4),), (np.nanvar,), "real"),
    Row("np.nanstd(x + NANS, axis=1)", ((3, 4),), (np.nanstd,)),
    Row("np.nancumsum(x + NANS, axis=1)", ((3, 4),), (np.nancumsum,)),
    Row("np.nancumsum(x + NANS)", ((3, 4),), (np.nancumsum,)),
    Row("np.nancumprod(x + NANS, axis=1)", ((3, 4),), (np.nancumprod,)),
    Row("np.nancumprod(x + NANS, 0)", ((3, 4),), (np.nancumprod,)),
    Row("np.median(x)", ((3, 4),), (np.median,), "distinct"),
    Row("np.median(x)", ((5,),), (np.median,), "distinct"),
    Row("np.median(x, axis=1)", ((3, 5),), (np.median,), "distinct"),
    Row("np.median(x, axis=0, keepdims=True)", ((4, 3),), (np.median,), "distinct"),
    Row("np.median(x, axis=(0, 2))", ((2, 3, 3),), (np.median,), "distinct"),
    Row("np.nanmedian(x + NANS)", ((3, 4),), (np.nanmedian,), "distinct"),
    Row("np.nanmedian(x + NANS, axis=1)", ((3, 4),), (np.nanmedian,), "distinct"),
    Row("np.nanmedian(x + NANS, axis=0, keepdims=True)", ((3, 4),), (np.nanmedian,), "distinct"),
    Row("np.nanmedian(x + NANS[:, :3], axis=-1)", ((3, 3),), (np.nanmedian,), "distinct"),
    Row("np.take_along_axis(x, np.argsort(x, axis=1), axis=1)", ((3, 4),), (np.take_along_axis,), "distinct"),
    Row("np.take_along_axis(x, np.array([[0, 0], [2, 1], [3, 3]]), 1)", ((3, 4),), (np.take_along_axis,)),
    Row("np.take_along_axis(x, np.array([5, 0, 5]), None)", ((2, 3),), (np.take_along_axis,)),
    Row("np.partition(x, 2)", ((3, 5),), (np.partition,), "distinct"),
    Row("np.partition(x, 1, axis=0)", ((3, 5),), (np.partition,), "distinct"),
    Row("np.partition(x, (1, 3), axis=None)", ((3, 5),), (np.partition,), "distinct"),
    Row("np.append(x, y)", ((3, 4), (2,)), (np.append,)),
    Row("np.append(x, y)", ((3,), F), (np.append,)),
    Row("np.append(x, y, axis=0)", ((3, 4), (2, 4)), (np.append,)),
    Row("np.append(x, y, axis=1)", ((3, 4), (3, 1)), (np.append,)),
    *([Row("np.row_stack([x, y])", ((4,), (2, 4)), (np.row_stack,))] if hasattr(np, "row_stack") else []),
    Row("np.ediff1d(x)", ((5,),), (np.ediff1d,)),
    Row("np.ediff1d(x)", ((2, 3),), (np.ediff1d,)),
    Row("np.ediff1d(x, to_end=y)", ((2, 3), (2,)), (np.ediff1d,)),
    Row("np.ediff1d(x, to_begin=y)", ((4,), F), (np.ediff1d,)),
    Row("np.ediff1d(x, y[0], y[1:])", ((4,), (3,)), (np.ediff1d, operator.getitem)),
    Row("np.ediff1d(x, to_begin=[1.0, 2.0], to_end=y)", ((4,), (1, 2)), (np.ediff1d,)),
    Row("np.ediff1d(x, y)", ((1,), F), (np.ediff1d,)),
    # broadcast_arrays: each result's gradient summed back to its input
    Row("bx * by", ((3, 1), (4,)), (np.broadcast_arrays,), pre="bx, by = np.broadcast_arrays(x, y)"),
    Row("np.broadcast_arrays(x, y)[1]", ((3, 4), F), (np.broadcast_arrays, operator.getitem)),
    Row("np.broadcast_arrays(x)[0] * np.broadcast_arrays(y, x, 2.0 * y)[2]", ((2, 3), (3,)),
        (np.broadcast_arrays, operator.getitem)),
    Row("np.stack(np.broadcast_arrays(x[:, None], y, x[:1], y[0]))", ((3,), (2, 1, 4)),
        (np.broadcast_arrays, np.stack)),
    Row("np.block([[x, y], [y, x]])", ((2, 2), (2, 2)), (np.block,)),
    Row("np.block([x, y])", ((3,), (2,)), (np.block,)),
    Row("np.block([[x], [y]])", ((2, 3), (1, 3)), (np.block,)),
    Row("np.block([[x, np.ones((2, 1))], [y, 2.0 * y[:, :1]]])", ((2, 3), (1, 3)), (np.block,)),
    Row("gx * gy", ((3,), (4,)), (np.meshgrid,), pre="gx, gy = np.meshgrid(x, y)"),
    # lists' gradients add up leaf by leaf, also in gradient code differentiated again
    Row("np.split(x, 2)[0] * np.split(x, 2)[1]", ((4,),), (np.split,)),
    Row("np.meshgrid(x, y, indexing='ij')[1] ** 2", ((3,), (4,)), (np.meshgrid,)),
    Row("np.meshgrid(x, y, x)[2] * np.meshgrid(x, y, x)[0]", ((2,), (3,)), (np.meshgrid,)),
    Row("np.meshgrid(x, y, x, indexing='ij')[2] * np.meshgrid(x, y, x, indexing='ij')[1]", ((2,), (3,)),
        (np.meshgrid,)),
    Row("np.meshgrid(x, y, sparse=True)[0] * np.meshgrid(x, y, sparse=True)[1]", ((3,), (2,)),
        (np.meshgrid,)),
    Row("np.select([x > 0.1, x < -0.5], [x, y], x * y)", ((3, 4), (3, 4)), (np.select,), "offgrid"),
    Row("np.select([x > 0.1], [x * y], 2.0)", ((3, 4), (4,)), (np.select,), "offgrid"),
    Row("np.select([x > 0.1, x > -0.3], [y, x], y)", ((3, 4), F), (np.select,), "offgrid"),
    Row("np.stack(tuple(x))", ((3, 4),), (tuple,)),
    Row("np.stack(list([x, y]))", ((3,), (3,)), (list,)),
    Row("tuple(x)[1] * list(x)[0]", ((3,),), (tuple, list)),
    Row("dict({'a': x, 'b': y})['b'] * x", ((3,), (3,)), (dict,)),
    Row("dict([('a', x), ('b', y), ('a', 2.0 * y)])['a'] * x", ((3,), (3,)), (dict, operator.getitem)),
    Row("dict((('a', x), ('b', y)))['b'] * dict([('a', x)])['a']", ((3,), F), (dict, operator.getitem)),
    Row("np.vdot(x, y)", ((3, 4), (12,)), (np.vdot,)),
    Row("np.vdot(x, y)", ((4,), (2, 2)), (np.vdot,)),
    Row("np.polyval(x, y)", ((4,), (5,)), (np.polyval,)),
    Row("np.polyval(x, y)", ((3,), F), (np.polyval,)),
    Row("np.polyval(x, y)", ((1,), (2, 3)), (np.polyval,)),
    Row("np.convolve(x, y)", ((5,), (3,)), (np.convolve,)),
    Row("np.convolve(x, y, 'same')", ((5,), (3,)), (np.convolve,)),
    Row("np.convolve(x, y, 'same')", ((2,), (5,)), (np.convolve,)),
    Row("np.convolve(x, y, mode='valid')", ((3,), (5,)), (np.convolve,)),
    Row("np.convolve(x, y, 'valid')", ((6,), (4,)), (np.convolve,)),
    # correlate: every mode, either input the longer ('same' centres differently then)
    Row("np.correlate(x, y)", ((5,), (3,)), (np.correlate,)),
    Row("np.correlate(x, y)", ((3,), (5,)), (np.correlate,)),
    Row("np.correlate(x, y, 'same')", ((5,), (3,)), (np.correlate,)),
    Row("np.correlate(x, y, 'same')", ((4,), (6,)), (np.correlate,)),
    Row("np.correlate(x, y, mode='same')", ((2,), (5,)), (np.correlate,)),
    Row("np.correlate(x, y, mode='full')", ((3,), (5,)), (np.correlate,)),
    Row("np.correlate(x, y, 'full')", ((4,), (4,)), (np.correlate,)),
    Row("np.real(np.correlate(x * (1.0 + 2.0j), y - 0.5j * y[::-1], 'same'))", ((5,), (4,)),
        (np.correlate, np.real)),
    Row("np.vander(x)", ((4,),), (np.vander,)),
    Row("np.vander(x, 3, increasing=True)", ((4,),), (np.vander,)),
    Row("np.vander(x, N=5)", ((3,),), (np.vander,)),
    Row("np.vander(x, 2, True)", ((3,),), (np.vander,)),
    Row("np.vander(x, 1)", ((3,),), (np.vander,)),
    Row("np.linalg.matrix_power(x, 3)", ((3, 3),), (np.linalg.matrix_power,), "wellcond"),
    Row("np.linalg.matrix_power(x, 1)", ((3, 3),), (np.linalg.matrix_power,)),
    Row("np.linalg.matrix_power(x, 0)", ((3, 3),), (np.linalg.matrix_power,)),
    Row("np.linalg.matrix_power(x, -2)", ((3, 3),), (np.linalg.matrix_power,), "wellcond"),
    Row("np.linalg.matrix_power(x, 2)", ((2, 3, 3),), (np.linalg.matrix_power,)),
    Row("np.linalg.eigvalsh(x)", ((3, 3),), (np.linalg.eigvalsh,), "spd"),
    Row("np.linalg.eigvalsh(x, 'U')", ((3, 3),), (np.linalg.eigvalsh,), "spd"),
    Row("np.linalg.eigvalsh(x)", ((2, 3, 3),), (np.linalg.eigvalsh,), "spd"),
    Row("np.average(x)", ((3, 4),), (np.average,)),
    Row("np.average(x, axis=1, keepdims=True)", ((3, 4),), (np.average,)),
    Row("np.average(x, weights=y)", ((3, 4), (3, 4)), (np.average,), ("real", "positive")),
    Row("np.average(x, 0, y)", ((3, 4), (3,)), (np.average,), ("real", "positive")),
    Row("np.average(x, axis=-1, weights=y, keepdims=True)", ((3, 4), (4,)), (np.average,), ("real", "positive")),
    Row("avg * total", ((3, 4), (3, 4)), (np.average,), ("real", "positive"),
        pre="avg, total = np.average(x, axis=0, weights=y, returned=True)"),
    Row("np.interp(x, np.array([-1.05, -0.35, 0.25, 1.15]), y)", ((3, 4), (4,)), (np.interp,), "offgrid"),
    Row("np.interp(x, np.array([-1.05, -0.35, 0.25, 1.15]), y)", (F, (4,)), (np.interp,), "offgrid"),
    Row("np.interp(x, [-0.65, 0.45, 0.75], y, left=y[1] * 2.0, right=-1.0)", ((2, 5), (3,)),
        (np.interp, operator.mul), "offgrid"),
    Row("np.interp(x, [-0.65, 0.45], [1.0, 2.0], y, y)", ((6,), F), (np.interp,), "offgrid"),
    Row("np.gradient(x)", ((5,),), (np.gradient,)),
    Row("np.gradient(x, 0.5, edge_order=2)", ((5,),), (np.gradient,)),
    Row("np.gradient(x, np.array([0.0, 0.5, 1.5, 1.75]), axis=1)", ((3, 4),), (np.gradient,)),
    Row("gx * gy", ((3, 4),), (np.gradient, operator.mul), pre="gx, gy = np.gradient(x, 2.0, 0.5)"),
    Row("np.gradient(x)[1]", ((3, 4),), (np.gradient, operator.getitem)),
    Row("np.trapezoid(x)", ((5,),), (np.trapezoid,)),
    Row("np.trapezoid(x, dx=y)", ((3, 4), F), (np.trapezoid,), ("real", "positive")),
    Row("np.trapezoid(x, y)", ((3, 4), (4,)), (np.trapezoid,)),
    Row("np.trapezoid(x, y, axis=0)", ((3, 4), (3,)), (np.trapezoid,)),
    Row("np.trapezoid(x, y, axis=0)", ((3, 4), (3, 4)), (np.trapezoid,)),
    Row("np.trapezoid(y, x)", ((4,), (2, 4)), (np.trapezoid,)),
    Row("np.bincount(BINS, weights=x)", ((5,),), (np.bincount,)),
    Row("np.bincount(BINS, x ** 2, minlength=7) * y", ((5,), (7,)), (np.bincount, operator.pow, operator.mul)),
    Row("np.linalg.vector_norm(x)", ((3, 4),), (np.linalg.vector_norm,)),
    Row("np.linalg.vector_norm(x, axis=1, keepdims=True)", ((3, 4),), (np.linalg.vector_norm,)),
    Row("np.linalg.vector_norm(x, ord=1, axis=0)", ((3, 4),), (np.linalg.vector_norm,), "offgrid"),
    Row("np.linalg.vector_norm(x, ord=np.inf)", ((3, 4),), (np.linalg.vector_norm,), "distinct"),
    Row("np.linalg.vector_norm(x, ord=3, keepdims=True)", ((2, 3),), (np.linalg.vector_norm,)),
    Row("np.linalg.eigvals(x + 0.1 * y)", ((3, 3), (3, 3)), (np.linalg.eigvals,), ("spd", "real")),
    Row("np.linalg.lstsq(x, y, rcond=None)[0]", ((5, 3), (5,)), (np.linalg.lstsq, operator.getitem)),
    Row("np.linalg.lstsq(x, y)[0]", ((5, 3), (5, 2)), (np.linalg.lstsq, operator.getitem)),
    Row("np.linalg.lstsq(x, y, rcond=None)[0]", ((3, 5), (3,)), (np.linalg.lstsq, operator.getitem)),
    Row("np.linalg.lstsq(x, y, rcond=None)[0]", ((4, 4), (4, 2)), (np.linalg.lstsq, operator.getitem),
        "wellcond"),
    Row("np.linalg.lstsq(x, y, rcond=None)[1]", ((5, 3), (5, 2)), (np.linalg.lstsq, operator.getitem)),
    Row("np.linalg.lstsq(x, y, rcond=None)[3]", ((5, 3), (5,)), (np.linalg.lstsq, operator.getitem)),
    Row("sol * res + sv[0]", ((5, 3), (5,)), (np.linalg.lstsq, operator.getitem),
        pre="sol, res, rank, sv = np.linalg.lstsq(x, y, rcond=None)"),
    Row("np.linalg.multi_dot([x, y, x.T])", ((2, 3), (3, 3)), (np.linalg.multi_dot, attribute_of)),
    Row("np.linalg.multi_dot([x, y, y, x])", ((3,), (3, 3)), (np.linalg.multi_dot,)),
    Row("np.linalg.multi_dot((x, y))", ((3, 4), (4,)), (np.linalg.multi_dot,)),
    Row("np.linalg.multi_dot([x[0], y, x.T])", ((2, 3), (3, 3)), (np.linalg.multi_dot, operator.getitem, attribute_of)),
    Row("np.linalg.matrix_norm(x)", ((3, 4),), (np.linalg.matrix_norm,)),
    Row("np.linalg.matrix_norm(x, keepdims=True)", ((2, 3, 4),), (np.linalg.matrix_norm,)),
    Row("np.linalg.matrix_norm(x, ord='nuc')", ((3, 4),), (np.linalg.matrix_norm,)),
    Row("np.linalg.matrix_norm(x, ord=2)", ((2, 3, 3),), (np.linalg.matrix_norm,)),
    Row("np.linalg.matrix_norm(x, ord=1)", ((3, 4),), (np.linalg.matrix_norm,), "offgrid"),
    Row("np.linalg.matrix_norm(x, ord=-np.inf)", ((3, 4),), (np.linalg.matrix_norm,), "distinct"),
    Row("w[..., None, :] * v", ((2, 3, 3), (2, 3, 3)), (np.linalg.eig, operator.getitem), ("spd", "real"),
        pre="w, v = np.linalg.eig(x + 0.1 * y)"),
    Row("np.linalg.eig(x + 0.1 * y)[0]", ((3, 3), (3, 3)), (np.linalg.eig, operator.getitem), ("spd", "real")),
    Row("np.linalg.eig(x + 0.1 * y)[1]", ((3, 3), (3, 3)), (np.linalg.eig, operator.getitem), ("spd", "real")),
    Row("np.linalg.eigvals(x + 0.1 * y)", ((2, 3, 3), (3, 3)), (np.linalg.eigvals,), ("spd", "real")),
    Row("np.einsum(x, [0, 1], y, [1, 2], [0, 2])", ((3, 4), (4, 2)), (np.einsum,)),
    Row("np.einsum(x, [0, 1], y, [0, 1])", ((3, 4), (3, 4)), (np.einsum,)),
    Row("np.einsum(x, [0, 0])", ((3, 3),), (np.einsum,)),
    Row("np.einsum(x, [Ellipsis, 1], y, [1], [Ellipsis])", ((2, 3, 4), (4,)), (np.einsum,)),
    Row("np.einsum(x, [1, 0], [0, 1])", ((3, 4),), (np.einsum,)),
    # keywords: where= masks the gradient, initial= is one more term, factor or candidate
    Row("np.sum(x, where=MASK)", ((3, 4),), (np.sum,)),
    Row("np.sum(x, axis=0, where=x > 0.1, initial=y)", ((3, 4), F), (np.sum,), "offgrid"),
    Row("x.sum(axis=1, keepdims=True, initial=1.5, where=MASK)", ((3, 4),), (np.ndarray.sum,)),
    Row("np.mean(x, axis=1, where=MASK)", ((3, 4),), (np.mean,)),
    Row("x.mean(where=MASK)", ((3, 4),), (np.ndarray.mean,)),
    Row("np.mean(x, axis=0, keepdims=True, where=MASK[:, :1])", ((3, 4),), (np.mean,)),
    Row("np.prod(x, axis=0, where=MASK, initial=y)", ((3, 4), F), (np.prod,)),
    Row("x.prod(axis=1, where=MASK)", ((3, 4),), (np.ndarray.prod,)),
    Row("np.max(x, axis=1, initial=y, where=MASK)", ((3, 4), F), (np.max,), ("distinct", "small")),
    Row("np.max(x, initial=y)", ((3, 4), F), (np.max,), ("distinct", "small")),
    Row("np.min(x, axis=0, initial=0.05, where=MASK)", ((3, 4),), (np.min,), "distinct"),
    Row("x.max(axis=0, initial=y)", ((3, 4), F), (np.ndarray.max,), ("distinct", "small")),
    Row("x.min(initial=y, where=MASK, keepdims=True)", ((3, 4), F), (np.ndarray.min,), ("distinct", "small")),
    Row("np.amax(x, axis=-1, initial=0.05)", ((3, 4),), (np.amax,), "distinct"),
    Row("np.amin(x, axis=(0, 1), initial=y, where=MASK)", ((3, 4), F), (np.amin,), ("distinct", "small")),
    Row("np.clip(x, min=-0.5, max=0.5)", ((3, 4),), (np.clip,), "offgrid"),
    Row("np.clip(x, max=y)", ((3, 4), (4,)), (np.clip,), "distinct"),
    Row("np.clip(x, min=y[1], max=y[4])", ((6,), (6,)), (np.clip, operator.getitem), "distinct"),
    Row("np.var(x, axis=1, correction=1)", ((3, 4),), (np.var,)),
    Row("np.std(x, axis=0, correction=1.5, keepdims=True)", ((3, 4),), (np.std,)),
    Row("np.std(x, axis=-1, correction=1)", ((3, 4),), (np.std,)),
    Row("np.var(x, axis=1, mean=y)", ((3, 4), (3, 1)), (np.var,)),
    Row("np.var(x, mean=np.mean(x), correction=1)", ((3, 4),), (np.var, np.mean)),
    Row("x.var(axis=0, keepdims=True, mean=y)", ((3, 4), (1, 4)), (np.ndarray.var,)),
    Row("np.std(x, axis=0, mean=y, ddof=1)", ((3, 4), (1, 4)), (np.std,)),
    Row("x.std(axis=1, mean=np.mean(x, axis=1, keepdims=True))", ((3, 4),), (np.ndarray.std, np.mean)),
    # covariance: variables as rows or columns, a second set y, bias and ddof, one variable
    Row("np.cov(x)", ((3, 5),), (np.cov,)),
    Row("np.cov(x, rowvar=False)", ((5, 3),), (np.cov,)),
    Row("np.cov(x, y)", ((5,), (5,)), (np.cov,)),
    Row("np.cov(x, y, rowvar=False, bias=True)", ((5, 2), (5,)), (np.cov,)),
    Row("np.cov(x, y, False, False, 0)", ((4, 2), (4, 3)), (np.cov,)),
    Row("np.cov(x, ddof=2)", ((2, 5),), (np.cov,)),
    Row("np.cov(x)", ((5,),), (np.cov,)),
    # correlation coefficients: as np.cov's rows
    Row("np.corrcoef(x)", ((3, 5),), (np.corrcoef,)),
    Row("np.corrcoef(x, rowvar=False)", ((5, 3),), (np.corrcoef,)),
    Row("np.corrcoef(x, y)", ((5,), (5,)), (np.corrcoef,)),
    Row("np.corrcoef(x, y, False)", ((5, 2), (5,)), (np.corrcoef,)),
    Row("np.corrcoef(x, y)", ((2, 4), (3, 4)), (np.corrcoef,)),
    # quantiles: q a number or a list, axes, keepdims, other methods, the NaN-ignoring ones
    Row("np.quantile(x, 0.3)", ((3, 4),), (np.quantile,), "distinct"),
    Row("np.quantile(x, [0.2, 0.75], axis=1)", ((3, 5),), (np.quantile,), "distinct"),
    Row("np.quantile(x, 0.4, axis=(0, 2), keepdims=True)", ((2, 3, 4),), (np.quantile,), "distinct"),
    Row("np.quantile(x, np.array([[0.1, 0.6], [0.35, 0.9]]), axis=0)", ((5, 2),), (np.quantile,), "distinct"),
    *(Row(f"np.quantile(x, [0.3, 0.7], axis=-1, method='{method}')", ((3, 5),), (np.quantile,), "distinct")
      for method in ("lower", "higher", "nearest", "midpoint", "median_unbiased", "inverted_cdf", "hazen")),
    Row("np.percentile(x, 40.0, axis=0)", ((4, 3),), (np.percentile,), "distinct"),
    Row("np.percentile(x, [10, 90], method='weibull')", ((3, 4),), (np.percentile,), "distinct"),
    Row("np.nanquantile(x + NANS, 0.3, axis=1)", ((3, 4),), (np.nanquantile,), "distinct"),
    Row("np.nanquantile(x + NANS, [0.5, 0.8])", ((3, 4),), (np.nanquantile,), "distinct"),
    Row("np.nanpercentile(x + NANS, [25, 60], axis=1)", ((3, 4),), (np.nanpercentile,), "distinct"),
    Row("np.nanpercentile(x + NANS, 50, axis=0, keepdims=True)", ((3, 4),), (np.nanpercentile,), "distinct"),
    # tensorsolve: a read as a 6 x 6 matrix
    Row("np.linalg.tensorsolve(x + 3.0 * I6, y)", ((2, 3, 6), (2, 3)), (np.linalg.tensorsolve,)),
    Row("np.linalg.tensorsolve(x + 3.0 * I6A, y, axes=(0,))", ((3, 6, 2), (6,)), (np.linalg.tensorsolve,)),
    Row("np.linalg.tensorsolve(x + 3.0 * np.eye(4), y)", ((4, 4), (4,)), (np.linalg.tensorsolve,)),
    # methods of ufuncs: reductions along axis 0 unless told, accumulations, outer products
    Row("np.add.reduce(x)", ((3, 4),), (np.add.reduce,)),
    Row("np.add.reduce(x, axis=1, keepdims=True)", ((3, 4),), (np.add.reduce,)),
    Row("np.add.reduce(x, None)", ((2, 3, 2),), (np.add.reduce,)),
    Row("np.add.reduce(x, (0, 2))", ((2, 3, 2),), (np.add.reduce,)),
    Row("np.multiply.reduce(x, 1)", ((3, 4),), (np.multiply.reduce,)),
    Row("np.multiply.reduce(x)", ((5,),), (np.multiply.reduce,)),
    Row("np.maximum.reduce(x)", ((3, 4),), (np.maximum.reduce,), "distinct"),
    Row("np.maximum.reduce(x, axis=1, keepdims=True)", ((3, 4),), (np.maximum.reduce,), "distinct"),
    Row("np.minimum.reduce(x, axis=-1)", ((3, 4),), (np.minimum.reduce,), "distinct"),
    Row("np.minimum.reduce(x, None)", ((3, 4),), (np.minimum.reduce,), "distinct"),
    Row("np.logaddexp.reduce(x)", ((5,),), (np.logaddexp.reduce,)),
    Row("np.logaddexp.reduce(x, 1, keepdims=True)", ((3, 4),), (np.logaddexp.reduce,)),
    Row("np.add.accumulate(x)", ((3, 4),), (np.add.accumulate,)),
    Row("np.add.accumulate(x, axis=1)", ((3, 4),), (np.add.accumulate,)),
    Row("np.multiply.accumulate(x)", ((5,),), (np.multiply.accumulate,)),
    Row("np.multiply.accumulate(x, 1)", ((3, 4),), (np.multiply.accumulate,)),
    Row("np.maximum.accumulate(x)", ((5,),), (np.maximum.accumulate,), "distinct"),
    Row("np.maximum.accumulate(x, axis=1)", ((3, 4),), (np.maximum.accumulate,), "distinct"),
    Row("np.minimum.accumulate(x)", ((4, 3),), (np.minimum.accumulate,), "distinct"),
    Row("np.minimum.accumulate(x, -1)", ((2, 5),), (np.minimum.accumulate,), "distinct"),
    Row("np.multiply.outer(x, y)", ((3,), (2, 4)), (np.multiply.outer,)),
    Row("np.multiply.outer(x, y)", ((2, 3), F), (np.multiply.outer,)),
    Row("np.multiply.outer(x, x)", ((3,),), (np.multiply.outer,)),
    Row("np.add.outer(x, y)", ((2, 3), (4,)), (np.add.outer,)),
    Row("np.add.outer(x, y)", (F, (4,)), (np.add.outer,)),
    Row("np.subtract.outer(x, y)", ((3,), (4,)), (np.subtract.outer,)),
    Row("np.subtract.outer(x, y)", ((2, 2), (3, 1)), (np.subtract.outer,)),
    # windows: each entry's gradient sums the window entries it lies in
    Row("np.lib.stride_tricks.sliding_window_view(x, 3) @ y", ((7,), (3,)), (np.lib.stride_tricks.sliding_window_view,)),
    Row("np.lib.stride_tricks.sliding_window_view(x, (2, 2)) * y", ((3, 4), (2, 2)),
        (np.lib.stride_tricks.sliding_window_view,)),
    Row("np.lib.stride_tricks.sliding_window_view(x, 2, axis=1) ** 2", ((3, 4),),
        (np.lib.stride_tricks.sliding_window_view,)),
    Row("np.lib.stride_tricks.as_strided(x, (5, 3), (x.strides[0], x.strides[0])) @ y", ((7,), (3,)),
        (np.lib.stride_tricks.as_strided,)),
    Row("np.lib.stride_tricks.as_strided(x, shape=(2, 3, 2, 2), strides=x.strides * 2) ** 2", ((3, 4),),
        (np.lib.stride_tricks.as_strided, operator.pow)),
    Row("np.lib.stride_tricks.as_strided(x, (2, 2), (0, x.itemsize)) * y", ((3,), (2, 2)),
        (np.lib.stride_tricks.as_strided,)),
    # NumPy's scalar types as casts
    Row("np.float64(x)", ((3, 4),), (np.float64,)),
    Row("np.float64(x) * y", (F, (3,)), (np.float64,)),
    Row("np.float32(x)", ((3, 4),), (np.float32,), "tiny"),
    Row("np.float32(x) * y", (F, (3,)), (np.float32,), "tiny"),
    Row("np.real(np.complex128(x) * (1.0 - 2.0j))", ((3, 4),), (np.complex128, np.real)),
    Row("np.real(np.complex64(x) * (1.0 - 2.0j))", ((3, 4),), (np.complex64, np.real), "tiny"),
]


def _along(f: Any, args: list[Any], i: int, v: Any, eps: float = 1e-5) -> Any:
    """Central finite difference of ``f(*args)`` as argument ``i`` moves along ``v``."""
    plus, minus = list(args), list(args)
    plus[i], minus[i] = args[i] + eps * v, args[i] - eps * v
    return (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * eps)


def check_second_order(row: Row) -> None:
    """For each input: ``hvp`` (forward over reverse) matches finite differences of the
    gradient, and the gradient of <gradient, u> (reverse over reverse) matches finite
    differences of <gradient, u>."""
    f, args = build(row)
    rng = np.random.default_rng(zlib.crc32(b"second order " + row.id.encode()))
    warnings.simplefilter("ignore", ZeroGradientWarning)  # a linear rule's gradient is constant
    for i, arg in enumerate(args):
        where = f"second order along argument {i}"
        v = test_rules._direction(rng, arg)
        gradient = s2sad.grad(f, i)
        np.testing.assert_allclose(s2sad.hvp(f, i)(*args, v), _along(gradient, args, i, v),
                                   rtol=1e-4, atol=1e-6, err_msg=f"{where}: hvp")
        u = test_rules._direction(rng, arg)
        names = ", ".join("xy"[:len(args)])
        inner = make_function(f"def inner({names}):\n    return np.sum(gradient({names}) * u)\n",
                              {"np": np, "gradient": gradient, "u": u})
        np.testing.assert_allclose(np.sum(s2sad.grad(inner, i)(*args) * v), _along(inner, args, i, v),
                                   rtol=1e-4, atol=1e-6, err_msg=f"{where}: grad of grad")


def second_order_params(rows: list[Row], known: dict[str, str]) -> list[Any]:
    """``params`` of the first row of each rule (second order costs a few compilations a
    row), with the rows whose second order is a known failure marked so."""
    out, seen = [], set()
    firsts = []
    for row in rows:
        key = frozenset(REGISTRY.key(fun) for fun in row.uses)
        if key not in seen:
            seen.add(key)
            firsts.append(row)
    for param in params(firsts):
        reason = next((why for part, why in known.items() if part in param.id), None)
        marks = [*param.marks, *([pytest.mark.xfail(strict=True, reason=reason)] if reason else [])]
        out.append(pytest.param(*param.values, id=param.id, marks=marks))
    return out


#: Rows whose gradient code cannot be differentiated again yet, and why.
SECOND_ORDER_KNOWN: dict[str, str] = {}


def table_tests(rows: list[Row], second_order_known: dict[str, str] | None = None) -> dict[str, Any]:
    """tests/test_rules.py's checks of its table (first order, float32, forward mode) and the
    second-order check, for another table of rows: its module binds them with
    ``globals().update(table_tests(ROWS))``."""
    @pytest.mark.parametrize("row", params(rows))
    def test_rule_matches_finite_differences(row: Row) -> None:
        test_rules.test_rule_matches_finite_differences(row)

    @test_rules.numpy2
    @pytest.mark.parametrize("row", params(rows))
    def test_rule_in_float32(row: Row) -> None:
        test_rules.test_rule_in_float32(row)

    @pytest.mark.parametrize("row", params(rows))
    def test_forward_rule_matches_finite_differences(row: Row) -> None:
        test_rules.test_forward_rule_matches_finite_differences(row)

    @pytest.mark.parametrize("row", second_order_params(rows, second_order_known or {}))
    def test_second_order(row: Row) -> None:
        with warnings.catch_warnings():
            check_second_order(row)

    return {t.__name__: t for t in (test_rule_matches_finite_differences, test_rule_in_float32,
                                    test_forward_rule_matches_finite_differences, test_second_order)}


# --- the same checks as tests/test_rules.py's table, and second order -----------------------
globals().update(table_tests(ROWS, SECOND_ORDER_KNOWN))


# --- library code is never traced into ------------------------------------------------------

def _located(source: str, namespace: dict[str, Any], x: Any) -> NoGradientRuleError:
    f = make_function(source, namespace)
    with pytest.raises(NoGradientRuleError) as info:
        s2sad.grad(f)(x)
    return info.value


def test_a_library_function_without_a_rule_is_refused_at_the_call() -> None:
    """NumPy's polynomial module is Python code: s2sad does not read it, but refuses the call."""
    error = _located("def f(x):\n    y = 2.0 * x\n    return P.polyval(y, [1.0, 2.0])\n",
                     {"P": np.polynomial.polynomial}, 0.5)
    assert "library code" in error.message and "P.polyval" in error.message
    assert (error.location.line, error.location.column) == (3, 12)


def test_a_standard_library_function_is_not_traced_into() -> None:
    import statistics

    error = _located("def f(x):\n    return statistics.fmean([x, 2.0 * x])\n",
                     {"statistics": statistics}, 1.5)
    assert "statistics.fmean" in error.message and "library code" in error.message
    assert (error.location.line, error.location.column) == (2, 12)


def test_a_library_function_runs_where_no_gradient_reaches_it() -> None:
    import statistics

    f = make_function("def f(x):\n    return x * statistics.fmean([1.0, 2.0])\n",
                      {"statistics": statistics})
    assert s2sad.grad(f)(3.0) == 1.5


@pytest.mark.parametrize("expr", ["x // 1.0", "np.floor_divide(x, 0.5)", "x // y"])
def test_floor_division_carries_no_gradient(expr: str) -> None:
    f = make_function(f"def f(x, y):\n    return np.sum({expr} * x + x)\n", {"np": np})
    x, y = np.array([0.7, 1.6, -2.3]), np.array([0.4, 0.6, 0.9])
    g = s2sad.grad(f)(x, y)
    np.testing.assert_allclose(g, np.floor_divide(x, 1.0 if "1.0" in expr else 0.5 if "0.5" in expr else y) + 1)


def test_interp_with_respect_to_xp_is_refused_at_the_call() -> None:
    f = make_function("def f(x):\n    xp = x * 1.0\n    return np.interp(0.5, xp, [1.0, 2.0])\n", {"np": np})
    with pytest.raises(NoGradientRuleError, match="with respect to xp") as info:
        s2sad.grad(f)(np.array([0.0, 1.0]))
    assert (info.value.location.line, info.value.location.column) == (3, 12)


def test_gradient_with_respect_to_the_spacing_is_refused_at_the_call() -> None:
    f = make_function("def f(x):\n    h = x * 1.0\n    return np.sum(np.gradient(np.ones(4), h))\n", {"np": np})
    with pytest.raises(NoGradientRuleError, match="spacing") as info:
        s2sad.grad(f)(0.5)
    assert (info.value.location.line, info.value.location.column) == (3, 19)


def test_augmented_floor_division_carries_no_gradient() -> None:
    f = make_function("def f(x):\n    y = x * 1.0\n    y //= 0.5\n    return np.sum(y * x)\n", {"np": np})
    x = np.array([0.7, 1.6])
    np.testing.assert_allclose(s2sad.grad(f)(x), x // 0.5)


# --- refused with a reason, at the call -----------------------------------------------------------

SQUARE = np.vectorize(lambda v: v * v)

REFUSED = [  # (expression of y, a value that carries a gradient, what the error says)
    ("np.cov(y, fweights=[1, 2, 1])", r"np\.cov\(\.\.\., fweights=\.\.\.\): .*with weights"),
    ("np.cov(y, None, True, False, None, None, [0.5, 1.0, 2.0])", r"aweights=\.\.\.\): .*with weights"),
    ("np.quantile(np.arange(3.0), y[0])", "with respect to the data a, not q"),
    ("np.nanpercentile(y, 50.0, method='inverted_cdf', weights=np.ones(3))", "with weights"),
    ("np.median(y, overwrite_input=True)", "leave overwrite_input=False"),
    ("np.quantile(y, 0.3, None, None, True)", r"np\.quantile\(\.\.\., overwrite_input=\.\.\.\)"),
    ("np.vectorize(np.sin)(y)", "given to np.vectorize from its own loop.*on the arrays directly"),
    ("SQUARE(y)", "'SQUARE': NumPy calls the Python function given to np.vectorize"),
    ("np.frompyfunc(np.sin, 1, 1)(y)", "given to np.frompyfunc"),
    ("np.apply_along_axis(np.sum, 0, y)", r"given to np\.apply_along_axis.*np\.stack"),
    ("np.piecewise(y, [y < 0.5], [np.sin, np.cos])", r"given to np\.piecewise.*np\.where"),
    ("np.add.reduce(y, initial=1.0)", "np.add.reduce with argument 'initial'"),
    ("np.maximum.outer(y, y)", "no gradient rule for 'np.maximum.outer'"),
    ("np.add.reduceat(y, [0, 2])", "no gradient rule for 'np.add.reduceat'"),
    ("np.broadcast_arrays(y, y, y, y, y)[0]", "takes at most 4 positional arguments"),
]


@pytest.mark.parametrize("expr, complaint", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_at_the_call(expr: str, complaint: str) -> None:
    """An option, argument or function s2sad does not differentiate is an error located at the call
    (not a silent zero gradient), naming what to write instead."""
    error = _located(f"def f(x):\n    y = x * 1.0\n    return np.sum({expr})\n", {"np": np, "SQUARE": SQUARE},
                     np.array([0.25, 1.5, 0.75]))
    assert re.search(complaint, error.message), error.message
    assert (error.location.line, error.location.column) == (3, 19)


def test_a_method_of_a_ufunc_has_its_rule_however_it_is_reached() -> None:
    """``np.add.reduce`` is a new bound method at each access: its rule is found by its ufunc and
    name (through a global bound to it too), and the same method of another ufunc has none."""
    assert REGISTRY.rule(np.add.reduce) is REGISTRY.rule(np.add.reduce) is not None
    assert REGISTRY.rule(np.subtract.reduce) is None and REGISTRY.rule(np.add.reduceat) is None
    f = make_function("def f(x):\n    return np.sum(TOTAL(x * x, 1) * np.array([1.0, 2.0]))\n",
                      {"np": np, "TOTAL": np.add.reduce})
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    np.testing.assert_allclose(s2sad.grad(f)(x), 2.0 * x * np.array([[1.0], [2.0]]), rtol=1e-12)


def test_a_running_maximum_reads_the_last_entry_that_reaches_it() -> None:
    """np.maximum.accumulate's gradient at a tie goes to the latest of the tied entries so far."""
    f = make_function("def f(x):\n    return np.sum(np.maximum.accumulate(x))\n", {"np": np})
    np.testing.assert_array_equal(s2sad.grad(f)(np.array([1.0, 3.0, 3.0, 2.0, 0.5])), [1.0, 1.0, 3.0, 0.0, 0.0])


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_corrcoef_of_complex_values_is_refused(mode: str) -> None:
    """np.corrcoef is differentiated for real values: complex ones are an error naming it (not
    np.cov, which it calls), not a gradient that forgets NumPy's conjugates."""
    f = make_function("def f(x):\n    return np.sum(np.abs(np.corrcoef(x * (1.0 + 0.5j))))\n", {"np": np})
    x = np.array([[0.5, 1.5, -1.0], [2.0, 0.25, 1.0]])
    with pytest.raises(S2SADError, match="reaches np.corrcoef of complex values"):
        s2sad.grad(f)(x) if mode == "grad" else s2sad.jvp(f)(x, x)


def test_a_cast_of_complex_values_to_real_ones_is_their_real_part() -> None:
    """np.float64(z) of a complex z keeps the real part (NumPy warns): its gradient is that of
    np.real, not a silent zero for the imaginary part, nor a dropped one for the real part."""
    w = np.array([0.5, -2.0])
    cast = make_function("def f(z):\n    return np.sum(np.float64(z * z) * w)\n", {"np": np, "w": w})
    real = make_function("def f(z):\n    return np.sum(np.real(z * z) * w)\n", {"np": np, "w": w})
    z = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.testing.assert_allclose(s2sad.grad(cast)(z), s2sad.grad(real)(z), rtol=1e-12)
        np.testing.assert_allclose(s2sad.grad(cast)(z), 2 * z * w, rtol=1e-12)
