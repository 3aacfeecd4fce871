"""Gradient rules for more of NumPy: NaN-ignoring reductions, order statistics, joins,
polynomials, convolution and correlation, more of np.linalg, and ``tuple``/``list``/``dict`` of values.

Conventions as in :mod:`s2sad.rules.numpy_rules`: the NaN-ignoring reductions give
NaN entries no gradient; ``median`` gives the middle entry ``g`` (half to each of the
two middle entries of an even count; ``nanmedian`` among the entries that are not NaN);
``partition`` moves ``g`` back like ``sort``; ``eigvalsh`` reads one triangle (the
gradient lies on it); ``eig`` and ``eigvals`` are differentiated for real eigenvalues
only (complex ones are an error when a gradient reaches them), eigenvectors for distinct
eigenvalues; ``lstsq`` for a matrix of full rank (else an error when a gradient reaches it);
``quantile`` and ``percentile`` (and their NaN-ignoring forms, every method) give ``g`` to
the sorted entries the result interpolates, with their weights (``q`` is refused); ``cov``
is differentiated for real values, without weights, and ``corrcoef`` for real values;
``correlate`` conjugates its second input for complex values, as NumPy does; NumPy's scalar
types (``np.float64(x)``) are casts, as ``x.astype``.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import runtime as rt
from . import shapes
from .numpy_rules import SPECTRAL_NORM
from .registry import REGISTRY, USER_OBJECTS

defvjp = REGISTRY.defvjp

# --- NaN-ignoring reductions --------------------------------------------------------
_NAN = "a, axis=None, dtype=None, out=None, keepdims=False"
_VALID = "~np.isnan(a)"
_COUNT = f"np.sum({_VALID}, axis=axis, keepdims=keepdims)"
defvjp(np.nansum, _NAN, masks={"a": _VALID}, jvp={"a": "np.sum(np.where(np.isnan(a), 0.0, t), axis=axis, keepdims=keepdims)"},
       a="np.where(np.isnan(a), 0.0, reduce_grad(g, a, axis, keepdims))")
defvjp(np.nanmean, _NAN, masks={"a": _VALID}, jvp={"a": "np.nanmean(np.where(np.isnan(a), np.nan, t), axis=axis, keepdims=keepdims)"},
       a=f"np.where(np.isnan(a), 0.0, reduce_grad(g / {_COUNT}, a, axis, keepdims))")
for nanextremum in (np.nanmax, np.nanmin):
    defvjp(nanextremum, "a, axis=None, out=None, keepdims=False", masks={"a": _VALID},
           jvp={"a": "extremum_jvp(np.where(np.isnan(a), 0.0, t), a, ans, axis, keepdims)"},
           a="extremum_grad(g, a, ans, axis, keepdims)")
_ONES = "np.where(np.isnan(a), 1.0, a)"
defvjp(np.nanprod, _NAN, masks={"a": _VALID},
       jvp={"a": f"np.sum(np.where(np.isnan(a), 0.0, prod_grad(np.ones_like(ans), {_ONES}, axis, "
                 f"keepdims) * t), axis=axis, keepdims=keepdims)"},
       a=f"np.where(np.isnan(a), 0.0, prod_grad(g, {_ONES}, axis, keepdims))")
_NANMOMENT = "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False"
# d nanvar = 2 (a - mean) / (count - ddof), over the entries that are not NaN
# (NaN entries replaced by 0 before they are multiplied, so no NaN reaches a gradient)
_VAR_W = (f"np.where(np.isnan(a), 0.0, reduce_grad(2.0 * {{g}} / ({_COUNT} - ddof), a, axis, keepdims) "
          f"* (np.where(np.isnan(a), 0.0, a) - reduce_grad(np.nanmean(a, axis=axis, keepdims=keepdims), a, "
          f"axis, keepdims)))")
defvjp(np.nanvar, _NANMOMENT, masks={"a": _VALID}, a=_VAR_W.format(g="g"),
       jvp={"a": f"np.sum({_VAR_W.format(g='np.ones_like(ans)')} * np.where(np.isnan(a), 0.0, t), "
                 f"axis=axis, keepdims=keepdims)"})
# nanstd: 0 where the deviation is 0 (one entry that is not NaN: identically constant), as np.std
defvjp(np.nanstd, _NANMOMENT, masks={"a": _VALID}, a=_VAR_W.format(g="(g * safe_divide(0.5, ans))"),
       jvp={"a": f"np.sum({_VAR_W.format(g='safe_divide(0.5, ans)')} * np.where(np.isnan(a), 0.0, t), "
                 f"axis=axis, keepdims=keepdims)"})

defvjp(np.nancumsum, "a, axis=None, dtype=None, out=None", masks={"a": _VALID},
       jvp={"a": "np.cumsum(np.where(np.isnan(a), 0.0, t), axis)"},
       a="np.where(np.isnan(a), 0.0, cumsum_grad(g, a, axis))")
defvjp(np.nancumprod, "a, axis=None, dtype=None, out=None", masks={"a": _VALID},
       jvp={"a": f"cumprod_jvp(np.where(np.isnan(a), 0.0, t), {_ONES}, axis)"},
       a=f"np.where(np.isnan(a), 0.0, cumprod_grad(g, {_ONES}, axis))")

# --- order statistics ------------------------------------------------------------
# overwrite_input=True lets NumPy reorder a in place, where the gradient (and others') read it
_IN_PLACE = {"overwrite_input": "NumPy may reorder the input in place, where gradients read it; leave "
                                "overwrite_input=False"}
defvjp(np.median, "a, axis=None, out=None, overwrite_input=False, keepdims=False", unsupported=_IN_PLACE,
       jvp={"a": "np.sum(np.reshape(median_grad(np.ones_like(ans), a, axis, keepdims), np.shape(a)) * t, "
                 "axis=axis, keepdims=keepdims)"},
       a="median_grad(g, a, axis, keepdims)")
defvjp(np.nanmedian, "a, axis=None, out=None, overwrite_input=False, keepdims=False", unsupported=_IN_PLACE,
       masks={"a": _VALID},
       jvp={"a": "np.sum(np.reshape(median_grad(np.ones_like(ans), a, axis, keepdims, True), np.shape(a)) "
                 "* np.where(np.isnan(a), 0.0, t), axis=axis, keepdims=keepdims)"},
       a="median_grad(g, a, axis, keepdims, True)")
defvjp(np.take_along_axis, "arr, indices, axis=-1", linear="joint",
       arr="take_along_axis_grad(g, arr, indices, axis)")
defvjp(np.partition, "a, kth, axis=-1, kind='introselect', order=None",
       jvp={"a": "np.take_along_axis(t, partition_indices(a, ans, axis), axis)"},
       a="take_along_axis_grad(g, a, partition_indices(a, ans, axis), axis)")

# --- joins and grids --------------------------------------------------------------
defvjp(np.append, "arr, values, axis=None", linear="joint",
       arr="unbroadcast(np.reshape(g[:np.size(arr)], np.shape(arr)), arr) if isinstance(axis, type(None)) else "
           "np.take(g, np.arange(np.shape(arr)[axis]), axis=axis)",
       values="unbroadcast(np.reshape(g[np.size(arr):], np.shape(values)), values) if isinstance(axis, type(None)) else "
              "np.take(g, np.arange(np.shape(arr)[axis], np.shape(g)[axis]), axis=axis)")
if hasattr(np, "row_stack"):  # removed in NumPy 2.5? an alias of vstack until then
    defvjp(np.row_stack, "tup, dtype=None, casting='same_kind'", containers=("tup",), linear="joint",
           tup="join_grad(g, tup, 0, np.atleast_2d)")
# ediff1d: to_begin, the differences of ary flattened, to_end (each flattened)
_NB = "(0 if isinstance(to_begin, type(None)) else np.size(to_begin))"
_NE = "(0 if isinstance(to_end, type(None)) else np.size(to_end))"
defvjp(np.ediff1d, "ary, to_end=None, to_begin=None", linear="joint",
       ary=f"np.reshape(diff_grad(g[{_NB}:np.size(g) - {_NE}], np.ravel(ary)), np.shape(ary))",
       to_end="unbroadcast(np.reshape(g[np.size(g) - np.size(to_end):], np.shape(to_end)), to_end)",
       to_begin="unbroadcast(np.reshape(g[:np.size(to_begin)], np.shape(to_begin)), to_begin)")
# broadcast_arrays(a, b, c, d): up to four inputs, so that each can carry a gradient
defvjp(np.broadcast_arrays, "a, b=None, c=None, d=None, *, subok=False", returns_container=True, linear="joint",
       **{name: f"unbroadcast(g[{k}], {name})" for k, name in enumerate("abcd")})
defvjp(np.block, "arrays", containers=("arrays",), linear="joint", arrays="block_grad(g, arrays)")
# meshgrid(x1, x2, x3): up to three inputs, so that each can carry a gradient
defvjp(np.meshgrid, "x1, x2=None, x3=None, *, copy=True, sparse=False, indexing='xy'",
       returns_container=True, linear="joint",
       **{f"x{k + 1}": f"meshgrid_grad(g, {k}, indexing, x1, x2, x3)" for k in range(3)})
defvjp(np.select, "condlist, choicelist, default=0", containers=("choicelist",), linear="joint",
       choicelist="select_grad(g, condlist, choicelist)",
       default="unbroadcast(np.select(condlist, [0.0] * len(condlist), g), default)")
for convert in (builtins.tuple, builtins.list, builtins.dict):
    defvjp(convert, "iterable", containers=("iterable",), returns_container=True, linear="joint",
           jvp={"iterable": "sequence_jvp(t, iterable, ans)"}, iterable="sequence_grad(g, iterable)")

# --- products, polynomials, convolution ---------------------------------------------
defvjp(np.vdot, "a, b", linear="each",  # sum(conj(a) b): a's gradient is conjugated
       a="np.reshape(np.conj(g * np.ravel(b)), np.shape(a))", b="np.reshape(g * np.conj(np.ravel(a)), np.shape(b))")
_DEGREES = "np.arange(np.shape(p)[0] - 1, -1, -1)"
# p's rows are the coefficients (arrays of them too, each broadcast against x); the derivative's
# coefficients scale p's rows by their degrees
_SLOPES = "np.polyval(np.moveaxis(np.moveaxis(p[:-1], 0, -1) * np.arange(np.shape(p)[0] - 1, 0, -1), -1, 0), x)"
defvjp(np.polyval, "p, x",
       jvp={"p": "np.polyval(t, x)", "x": f"t * {_SLOPES}"},
       p=f"np.sum(np.reshape(np.expand_dims(g, -1) * np.expand_dims(x, -1) ** {_DEGREES}, "
         f"(-1, np.shape(p)[0])), axis=0) if np.ndim(p) == 1 else "
         f"unbroadcast(np.moveaxis(np.expand_dims(g, -1) * np.expand_dims(x, -1) ** {_DEGREES}, -1, 0), p)",
       x=f"unbroadcast(g * {_SLOPES}, x)")
for conv in (np.convolve, rt.convolve_full):
    defvjp(conv, "a, v, mode='full'", linear="each",
           a="convolve_grad(g, a, v, mode)", v="convolve_grad(g, v, a, mode)")
# correlate(a, v) is a convolved with v reversed and conjugated
defvjp(np.correlate, "a, v, mode='valid'", linear="each",
       a="correlate_grad_a(g, a, v, mode)", v="correlate_grad_v(g, a, v, mode)")
# vander(x)[i, j] = x[i] ** p[j], p the columns' powers
_VN = "(np.shape(x)[0] if isinstance(N, type(None)) else N)"
_VSLOPE = f"pow_slope(np.expand_dims(x, -1), np.arange({_VN}) if increasing else np.arange({_VN} - 1, -1, -1))"
defvjp(np.vander, "x, N=None, increasing=False", jvp={"x": f"np.expand_dims(t, -1) * {_VSLOPE}"},
       x=f"np.sum(g * {_VSLOPE}, axis=-1)")

# --- np.linalg ----------------------------------------------------------------------
# the derivative of a matrix function at a in direction e is the upper right block of the
# function of [[a, e], [0, a]]; the adjoint is the same at a's transpose
_AT = "np.swapaxes(a, -1, -2)"
_N = "np.shape(a)[-1]"
defvjp(np.linalg.matrix_power, "a, n",
       jvp={"a": f"np.linalg.matrix_power(np.block([[a, t], [np.zeros_like(a), a]]), n)[..., :{_N}, {_N}:]"},
       a=f"np.linalg.matrix_power(np.block([[{_AT}, g], [np.zeros_like(a), {_AT}]]), n)[..., :{_N}, {_N}:]")
_V = "np.linalg.eigh(a, UPLO)[1]"
_S = f"({_V} * np.expand_dims(g, -2)) @ np.swapaxes({_V}, -1, -2)"
defvjp(np.linalg.eigvalsh, "a, UPLO='L'",
       jvp={"a": f"np.sum({_V} * (read_triangle(t, UPLO == 'L') @ {_V}), axis=-2)"},
       a=f"(np.tril(2.0 * {_S}) if UPLO == 'L' else np.triu(2.0 * {_S})) - {_S} * np.eye({_N})")
# eig for real eigenvalues (complex ones are an error when a gradient reaches them): with
# a v = v diag(w) and E = v^-1 da v, dw = diag(E) and dv = v (F * E), F[i, j] = 1 / (w[j] - w[i])
# off the diagonal (distinct eigenvalues, as eigh), less each column's change of length (NumPy
# gives unit columns)
_EW = "real_eigenvalues(ans[0], 'np.linalg.eig')"
_EVEC = "real_eigenvalues(ans[1], 'np.linalg.eig')"
_EVT = f"np.swapaxes({_EVEC}, -1, -2)"
_F = f"safe_divide(1.0, np.expand_dims({_EW}, -2) - np.expand_dims({_EW}, -1))"
_E = f"np.linalg.solve({_EVEC}, t @ {_EVEC})"
_DV = f"({_EVEC} @ ({_F} * {_E}))"
_GV = f"(g[1] - {_EVEC} * np.sum({_EVEC} * g[1], axis=-2, keepdims=True))"
defvjp(np.linalg.eig, "a", returns_container=True,
       jvp={"a": f"(np.diagonal({_E}, axis1=-2, axis2=-1), "
                 f"{_DV} - {_EVEC} * np.sum({_EVEC} * {_DV}, axis=-2, keepdims=True))"},
       a=f"np.linalg.solve({_EVT}, (np.expand_dims(g[0], -2) * np.eye({_N}) + {_F} * ({_EVT} @ {_GV})) @ {_EVT})")
_EV = "real_eigenvalues(np.linalg.eig(a)[1], 'np.linalg.eigvals')"
defvjp(np.linalg.eigvals, "a",
       jvp={"a": f"np.sum(np.swapaxes(np.linalg.inv({_EV}), -1, -2) * (t @ {_EV}), axis=-2)"},
       a=f"np.swapaxes(np.linalg.inv({_EV}), -1, -2) @ (np.expand_dims(g, -1) * np.swapaxes({_EV}, -1, -2))")

# --- the helpers above (so that s2sad can differentiate its own output) -------------------
defvjp(rt.sequence_grad, "ct, x, pairs=None", containers=("ct",), returns_container=True, linear="joint",
       ct="sequence_grad(g, ct, x)")
defvjp(rt.sequence_jvp, "tan, x, out", containers=("tan",), returns_container=True, linear="joint",
       tan="sequence_grad(g, x)")
defvjp(rt.take_along_axis_grad, "ct, arr, indices, axis=-1", linear="joint",
       ct="np.take_along_axis(g, indices, axis)")
defvjp(rt.median_grad, "ct, a, axis=None, keepdims=False, skipnan=False", linear="joint",
       ct="np.sum(median_grad(np.ones_like(ct), a, axis, keepdims, skipnan) * g, axis=axis, keepdims=keepdims)")
defvjp(rt.block_grad, "ct, arrays", returns_container=True, linear="joint", ct="np.block(g)")
defvjp(rt.meshgrid_grad, "ct, k, indexing, x1, x2=None, x3=None", containers=("ct",), linear="joint",
       ct="meshgrid_grad_transpose(g, k, indexing, x1, x2, x3)")
defvjp(rt.meshgrid_grad_transpose, "h, k, indexing, x1, x2=None, x3=None", returns_container=True,
       linear="joint", h="meshgrid_grad(g, k, indexing, x1, x2, x3)")
defvjp(rt.convolve_grad, "ct, x, other, mode='full'", linear="each",
       ct="convolve_full(g, other, mode)", other="convolve_grad(ct, other, g, mode)")
defvjp(rt.correlate_grad_a, "ct, a, v, mode='valid'", linear="each",
       ct="np.correlate(g, v, mode)", v="correlate_grad_v(ct, g, v, mode)")
defvjp(rt.correlate_grad_v, "ct, a, v, mode='valid'", linear="each",
       ct="np.correlate(a, g, mode)", a="correlate_grad_a(ct, a, g, mode)")
defvjp(rt.select_grad, "ct, condlist, choicelist", returns_container=True, linear="joint",
       ct="np.select(condlist, g, 0)")
defvjp(rt.read_triangle, "t, lower", linear="joint", t="triangle_grad(g, lower)")
defvjp(rt.triangle_grad, "m, lower", linear="joint", m="read_triangle(g, lower)")
defvjp(rt.cov_matrix, "cov, like", linear="joint", cov="cov_matrix_grad(g, cov)")
defvjp(rt.cov_matrix_grad, "ct, cov", linear="joint", ct="cov_matrix(g, ct)")
defvjp(rt.real_eigenvalues, "w, name", linear="joint", w="g")
REGISTRY.declare_nondifferentiable(rt.partition_indices)

# --- integration and vector norms ------------------------------------------------------
# trapezoid along the last axis (after moving ``axis`` there): with spacings d = diff(x),
# y gets weights (d[i - 1] + d[i]) / 2 and x gets (s[i - 1] - s[i]) / 2, s[i] = y[i] + y[i + 1]
_XM = "(np.moveaxis(x, axis, -1) if np.ndim(x) > 1 else x)"
_D = f"np.diff({_XM}, axis=-1)"
_ZD = f"np.zeros_like({_D}[..., :1])"
_UNIFORM = "dx * np.where(np.arange(np.shape(y)[axis]) % (np.shape(y)[axis] - 1) == 0, 0.5, 1.0)"
_WEIGHTS = (f"({_UNIFORM} if isinstance(x, type(None)) else "
            f"0.5 * (np.concatenate([{_D}, {_ZD}], axis=-1) + np.concatenate([{_ZD}, {_D}], axis=-1)))")
_YM = "np.moveaxis(y, axis, -1)"
_SUMS = f"({_YM}[..., :-1] + {_YM}[..., 1:])"
_ZS = f"np.zeros_like({_SUMS}[..., :1])"
_DX = f"(0.5 * (np.concatenate([{_ZS}, {_SUMS}], axis=-1) - np.concatenate([{_SUMS}, {_ZS}], axis=-1)))"


def trapezoid_rule(trapezoid: Any, name: str | None = None) -> None:
    """The rule of ``trapezoid(y, x=None, dx=1.0, axis=-1)``: NumPy's, or SciPy's of its signature."""
    defvjp(trapezoid, "y, x=None, dx=1.0, axis=-1", name=name,
           jvp={"y": "np.trapezoid(t, x, dx, axis)", "dx": "t * np.trapezoid(y, axis=axis)",
                "x": f"np.sum({_DX} * (np.moveaxis(t, axis, -1) if np.ndim(t) > 1 else t), axis=-1)"},
           y=f"unbroadcast(np.moveaxis(np.expand_dims(g, -1) * {_WEIGHTS}, -1, axis), y)",
           dx="unbroadcast(g * np.trapezoid(y, axis=axis), dx)",
           x=f"np.moveaxis(np.expand_dims(g, -1) * {_DX}, -1, axis) if np.ndim(x) > 1 else "
             f"np.sum(np.reshape(np.expand_dims(g, -1) * {_DX}, (-1, np.shape(x)[0])), axis=0)")


for trapezoid in [getattr(np, name) for name in ("trapezoid", "trapz") if hasattr(np, name)]:
    trapezoid_rule(trapezoid)
# bincount sums the weights of each bin: a weight's gradient is its bin's
defvjp(np.bincount, "x, weights=None, minlength=0", linear="joint", x=None, minlength=None,
       weights="g[x]")
# vector_norm over all axes (x flattened), or over those of axis (one, or a tuple of them)
_VN = ("np.reshape(norm_grad(np.reshape({g}, ()), np.ravel(x), np.reshape(ans, ()), ord), np.shape(x)) "
       "if isinstance(axis, type(None)) else norm_grad({g}, x, ans, ord, axis, keepdims, True)")
defvjp(np.linalg.vector_norm, "x, *, axis=None, keepdims=False, ord=2",
       jvp={"x": f"np.sum(({_VN.format(g='np.ones_like(ans)')}) * t, axis=axis, keepdims=keepdims)"},
       x=_VN.format(g="g"))

# --- weighted averages ----------------------------------------------------------------------
# average = sum(w a) / sum(w) along axis, w the weights laid out like a (weights along axis,
# their axes in the order of the tuple axis)
_LAY = "({w} if np.ndim({w}) == np.ndim(a) else np.reshape(np.transpose({w}, axis_order(a, axis)), axis_shape(a, axis)))"
_WB = f"(np.ones_like(a) if isinstance(weights, type(None)) else {_LAY.format(w='weights')})"
_SW = f"reduce_grad(np.sum({_WB} * np.ones_like(a), axis=axis, keepdims=keepdims), a, axis, keepdims)"
_AVG, _GAVG = "(ans[0] if returned else ans)", "(g[0] if returned else g)"
_WBAR = (f"(reduce_grad({_GAVG}, a, axis, keepdims) * (a - reduce_grad({_AVG}, a, axis, keepdims)) / {_SW}"
         f" + (reduce_grad(g[1], a, axis, keepdims) if returned else 0.0))")
_SUM_KEEP = "np.sum({x}, axis=axis, keepdims=keepdims)"


def _average_tangent(x: str, y: str) -> str:
    return f"({x}, {y}) if returned else {x}"


_TB = _LAY.format(w="t")
_SWR = _SUM_KEEP.format(x=f"{_WB} * np.ones_like(a)")
defvjp(np.average, "a, axis=None, weights=None, returned=False, *, keepdims=False", returns_container=True,
       jvp={"a": _average_tangent(f"{_SUM_KEEP.format(x=f't * {_WB}')} / {_SWR}", "np.zeros_like(ans[1])"),
            "weights": _average_tangent(
                f"{_SUM_KEEP.format(x=f'{_TB} * (a - reduce_grad({_AVG}, a, axis, keepdims))')} / {_SWR}",
                _SUM_KEEP.format(x=f"{_TB} * np.ones_like(a)"))},
       a=f"reduce_grad({_GAVG}, a, axis, keepdims) * {_WB} / {_SW}",
       weights=f"unbroadcast({_WBAR}, weights) if np.ndim(weights) == np.ndim(a) else "
               f"np.reshape(np.sum(np.reshape(np.moveaxis({_WBAR}, axis, axis_end(axis)), (-1, np.size(weights))), "
               f"axis=0), np.shape(weights))")
REGISTRY.declare_nondifferentiable(rt.axis_shape)
REGISTRY.declare_nondifferentiable(rt.axis_order)
REGISTRY.declare_nondifferentiable(rt.axis_end)

# --- interpolation --------------------------------------------------------------------------
# np.interp is linear in fp (and in left, right), piecewise linear in x (the slope of x's cell,
# taken from the left at a knot)
_ENDS = ("None if isinstance(left, type(None)) else 0.0", "None if isinstance(right, type(None)) else 0.0")
defvjp(np.interp, "x, xp, fp, left=None, right=None",
       refuse={"xp": "s2sad does not differentiate np.interp with respect to xp; pass constants"},
       jvp={"x": "t * interp_slope(x, xp, fp)", "fp": f"np.interp(x, xp, t, {_ENDS[0]}, {_ENDS[1]})",
            "left": "t * (np.asarray(x) < xp[0])", "right": "t * (np.asarray(x) > xp[-1])"},
       x="unbroadcast(g * interp_slope(x, xp, fp), x)", fp="interp_grad_fp(g, x, xp, fp, left, right)",
       left="unbroadcast(np.sum(np.where(np.asarray(x) < xp[0], g, 0.0)), left)",
       right="unbroadcast(np.sum(np.where(np.asarray(x) > xp[-1], g, 0.0)), right)")
defvjp(rt.interp_slope, "x, xp, fp", linear="joint", fp="interp_slope_grad(g, x, xp, fp)")
defvjp(rt.interp_slope_grad, "ct, x, xp, fp", linear="joint", ct="unbroadcast(interp_slope(x, xp, g), ct)")
# fp's gradient moves with the points x too (their cells' weights are linear in x): the
# second derivative of np.interp in x and fp together
defvjp(rt.interp_grad_fp, "ct, x, xp, fp, left=None, right=None",
       jvp={"ct": "interp_grad_fp(t, x, xp, fp, left, right)", "x": "interp_slope_grad(ct * t, x, xp, fp)"},
       ct=f"unbroadcast(np.interp(x, xp, g, {_ENDS[0]}, {_ENDS[1]}), ct)",
       x="unbroadcast(ct * interp_slope(x, xp, g), x)")

# --- finite differences ---------------------------------------------------------------------
defvjp(np.gradient, "f, *varargs, axis=None, edge_order=1", returns_container=True, linear="joint",
       refuse={"varargs": "s2sad does not differentiate np.gradient with respect to the spacing; "
                          "pass constants"},
       f="gradient_grad(g, f, varargs, axis, edge_order)")
defvjp(rt.gradient_grad, "ct, f, spacing, axis=None, edge_order=1", containers=("ct",), linear="joint",
       ct="np.gradient(g, *spacing, axis=axis, edge_order=edge_order)")

# --- max/min with initial= and where= (their rules are in numpy_rules) -------------------------
_EXTREMUM_ARGS = "x, m, axis, keepdims, initial, where"
defvjp(rt.extremum_where_grad, "ct, x, m, axis=None, keepdims=False, initial=None, where=True", linear="joint",
       ct=f"np.sum(g * extremum_where_grad(np.ones_like(ct), {_EXTREMUM_ARGS}), axis=axis, keepdims=keepdims)")
defvjp(rt.extremum_initial_grad, "ct, x, m, axis=None, keepdims=False, initial=None, where=True",
       linear="joint", ct=f"g * extremum_initial_grad(np.ones_like(ct), {_EXTREMUM_ARGS})")

# --- least squares ------------------------------------------------------------------------------
# x = pinv(a) b for a of full rank; the residuals r'r (r = b - a x, per column of b) change
# by -2 r'(da x) + 2 r'db (a'r = 0), and the singular values as those of np.linalg.svd
_LS_N = "np.shape(a)[-1]"
_LS_X2 = f"np.reshape(ans[0], ({_LS_N}, -1))"
_LS_B2 = "np.reshape(b, (np.shape(a)[0], -1))"
_LS_R = f"({_LS_B2} - a @ {_LS_X2})"
_LS_G2 = f"np.reshape(lstsq_full_rank(g[0], ans[2], a), ({_LS_N}, -1))"
_LS_USV = "np.linalg.svd(a, full_matrices=False)"
_LS_T = "lstsq_full_rank(t, ans[2], a)"
# (SciPy's residues are a scalar for a vector b)
_LS_RES = "(np.reshape({}, np.shape(ans[1])) if np.size(ans[1]) else ans[1] * 0.0)"


def lstsq_rule(lstsq: Any, params: str, **kwargs: Any) -> None:
    """The rule of ``lstsq(a, b, ...)``: NumPy's, or SciPy's of its signature (``kwargs``)."""
    defvjp(lstsq, params, returns_container=True, **kwargs,
           jvp={"a": f"(np.reshape(pinv_jvp({_LS_T}, a, np.linalg.pinv(a)) @ {_LS_B2}, np.shape(ans[0])), "
                     f"{_LS_RES.format(f'-2.0 * np.sum({_LS_R} * ({_LS_T} @ {_LS_X2}), axis=0)')}, "
                     f"0.0, np.sum({_LS_USV}[0] * ({_LS_T} @ np.swapaxes({_LS_USV}[2], -1, -2)), axis=-2))",
                "b": f"(np.reshape(np.linalg.pinv(a) @ np.reshape({_LS_T}, (np.shape(a)[0], -1)), np.shape(ans[0])), "
                     f"{_LS_RES.format(f'2.0 * np.sum({_LS_R} * np.reshape(t, (np.shape(a)[0], -1)), axis=0)')}, "
                     f"0.0, np.zeros_like(ans[3]))"},
           a=f"pinv_grad({_LS_G2} @ np.swapaxes({_LS_B2}, -1, -2), a, np.linalg.pinv(a)) "
             f"+ (-2.0 * ({_LS_R} * g[1]) @ np.swapaxes({_LS_X2}, -1, -2) if np.size(g[1]) else 0.0) "
             f"+ (({_LS_USV}[0] * g[3]) @ {_LS_USV}[2] if np.any(g[3]) else 0.0)",
           b=f"np.reshape(np.swapaxes(np.linalg.pinv(a), -1, -2) @ {_LS_G2} "
             f"+ (2.0 * {_LS_R} * g[1] if np.size(g[1]) else 0.0), np.shape(b))")


lstsq_rule(np.linalg.lstsq, "a, b, rcond=None")
defvjp(rt.lstsq_full_rank, "ct, rank, a", linear="joint", ct="lstsq_full_rank(g, rank, a)")

# --- more products and norms ------------------------------------------------------------------
defvjp(np.linalg.multi_dot, "arrays, *, out=None", containers=("arrays",),
       jvp={"arrays": "multi_dot_jvp(t, arrays)"}, arrays="multi_dot_grad(g, arrays)")
_MN = (f"({SPECTRAL_NORM} if ord in (2, -2, 'nuc') and np.isrealobj(x) else "
       f"norm_grad({{g}}, x, ans, ord, (-2, -1), keepdims))")
defvjp(np.linalg.matrix_norm, "x, *, keepdims=False, ord='fro'",
       jvp={"x": f"np.sum({_MN.format(g='np.ones_like(ans)')} * t, axis=(-2, -1), keepdims=keepdims)"},
       x=_MN.format(g="g"))

# --- NumPy 2's array-API spellings of functions with rules above ---------------------------------
if hasattr(np, "matrix_transpose"):
    defvjp(np.matrix_transpose, "x", linear="joint", x="np.swapaxes(g, -1, -2)")
    defvjp(np.ndarray.mT, "a", name=".mT", linear="joint", a="np.swapaxes(g, -1, -2)")
    defvjp(np.linalg.matmul, "x, y", linear="each", shape=shapes.matmul,
           x="matmul_grad_lhs(g, x, y)", y="matmul_grad_rhs(g, x, y)")
    defvjp(np.linalg.outer, "a, b", linear="each", shape=shapes.outer,
           a="np.dot(g, b)", b="np.dot(a, g)")
    defvjp(np.linalg.tensordot, "a, b, axes=2", linear="each",
           a="tensordot_grad_lhs(g, a, b, axes)", b="tensordot_grad_rhs(g, a, b, axes)")
    defvjp(np.linalg.diagonal, "a, offset=0", linear="joint", a="diagonal_grad(g, a, offset, -2, -1)")
    defvjp(np.linalg.trace, "a, offset=0, dtype=None", linear="joint",
           a="diagonal_grad(np.expand_dims(g, -1), a, offset, -2, -1)")
    defvjp(np.astype, "a, dtype, copy=True", jvp={"a": "cast_grad(t, ans, ans)"}, a="cast_grad(g, a, ans)")

# --- covariance, quantiles ------------------------------------------------------------------------
# np.cov: with X the variables as rows (cov_rows), Xc = X less its row means and d = N - ddof,
# C = Xc Xc^T / d; X's gradient (G + G^T) Xc / d needs no centring (Xc's rows sum to 0)
_CX = "cov_rows(m, y, rowvar)"
_CXC = f"({_CX} - np.mean({_CX}, axis=1, keepdims=True))"
_CDOF = f"(np.shape({_CX})[1] - ((0 if bias else 1) if isinstance(ddof, type(None)) else ddof))"
_CG = f"np.reshape(g, (np.shape({_CX})[0],) * 2)"
_GX = f"(({_CG} + np.swapaxes({_CG}, -1, -2)) @ {_CXC} / {_CDOF})"
_CT = (f"np.reshape(({{x}} @ np.swapaxes({_CXC}, -1, -2) + {_CXC} @ np.swapaxes({{x}}, -1, -2)) / {_CDOF}, "
       f"np.shape(ans))")
_NO_WEIGHTS = "s2sad does not differentiate np.cov with weights; write the weighted covariance with NumPy operations"
defvjp(np.cov, "m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None",
       unsupported={"fweights": _NO_WEIGHTS, "aweights": _NO_WEIGHTS},
       jvp={"m": _CT.format(x="cov_rows(t, None if isinstance(y, type(None)) else np.zeros_like(y), rowvar)"),
            "y": _CT.format(x="cov_rows(np.zeros_like(m), t, rowvar)")},
       m=f"cov_rows_grad({_GX}, m, y, rowvar, 0)", y=f"cov_rows_grad({_GX}, m, y, rowvar, 1)")
defvjp(rt.cov_rows, "m, y=None, rowvar=True, name='np.cov'", linear="joint",
       m="cov_rows_grad(g, m, y, rowvar, 0)", y="cov_rows_grad(g, m, y, rowvar, 1)")
defvjp(rt.cov_rows_grad, "ct, m, y=None, rowvar=True, part=0", linear="joint",
       ct="cov_rows(g, None if isinstance(y, type(None)) else np.zeros_like(y), rowvar) if part == 0 else "
          "cov_rows(np.zeros_like(m), g, rowvar)")
# np.corrcoef: R = C / (s s^T), s = sqrt(diag C), C = Xc Xc^T (the covariance's scale cancels); C's
# gradient is G / (s s^T) less, on the diagonal, the sums of R * G along its row and column over 2 diag C
_RX = "cov_rows(x, y, rowvar, 'np.corrcoef')"
_RXC = f"({_RX} - np.mean({_RX}, axis=1, keepdims=True))"
_RC = f"({_RXC} @ np.swapaxes({_RXC}, -1, -2))"
_RSS = f"np.outer(np.sqrt(np.diagonal({_RC})), np.sqrt(np.diagonal({_RC})))"
_RR = f"np.reshape(ans, np.shape({_RC}))"
_RG = f"np.reshape(g, np.shape({_RC}))"
_RGC = (f"({_RG} / {_RSS} - np.diag((np.sum({_RG} * {_RR}, axis=0) + np.sum({_RG} * {_RR}, axis=1)) "
        f"/ (2.0 * np.diagonal({_RC}))))")
_RGX = f"(({_RGC} + np.swapaxes({_RGC}, -1, -2)) @ {_RXC})"
_RDC = f"({{x}} @ np.swapaxes({_RXC}, -1, -2) + {_RXC} @ np.swapaxes({{x}}, -1, -2))"
_RU = f"(np.diagonal({_RDC}) / (2.0 * np.diagonal({_RC})))"
_RT = (f"np.reshape({_RDC} / {_RSS} - {_RR} * (np.expand_dims({_RU}, -1) + np.expand_dims({_RU}, -2)), "
       f"np.shape(ans))")
defvjp(np.corrcoef, "x, y=None, rowvar=True, *, dtype=None",
       jvp={"x": _RT.format(x="cov_rows(t, None if isinstance(y, type(None)) else np.zeros_like(y), rowvar, "
                              "'np.corrcoef')"),
            "y": _RT.format(x="cov_rows(np.zeros_like(x), t, rowvar, 'np.corrcoef')")},
       x=f"cov_rows_grad({_RGX}, x, y, rowvar, 0)", y=f"cov_rows_grad({_RGX}, x, y, rowvar, 1)")
# quantiles (every method): the gradient goes to the sorted entries the result interpolates
_QUANTILE = "a, q, axis=None, out=None, overwrite_input=False, method='linear', keepdims=False"
_QARGS = "a, q, axis, keepdims, method, percent, skipnan"
for quantile, percent, skipnan in ((np.quantile, False, False), (np.percentile, True, False),
                                   (np.nanquantile, False, True), (np.nanpercentile, True, True)):
    _NAME = f"np.{quantile.__name__}"
    _ARGS = _QARGS.replace("percent", str(percent)).replace("skipnan", str(skipnan))
    defvjp(quantile, f"{_QUANTILE}, *, weights=None",
           refuse={"q": f"s2sad differentiates {_NAME} with respect to the data a, not q; pass q as a constant"},
           unsupported={"weights": f"s2sad does not differentiate {_NAME} with weights", **_IN_PLACE},
           jvp={"a": f"quantile_jvp(t, {_ARGS})"}, a=f"quantile_grad(g, {_ARGS})",
           masks={"a": _VALID} if skipnan else None)
defvjp(rt.quantile_grad, "ct, a, q, axis=None, keepdims=False, method='linear', percent=False, skipnan=False",
       linear="joint", ct=f"quantile_jvp(g, {_QARGS})")
defvjp(rt.quantile_jvp, "tan, a, q, axis=None, keepdims=False, method='linear', percent=False, skipnan=False",
       linear="joint", tan=f"quantile_grad(g, {_QARGS})")

# --- tensorsolve: solve with a reshaped to a matrix (its axes in ``axes`` moved last first) ----------
_TA = "(a if isinstance(axes, type(None)) else np.moveaxis(a, axes, tuple(range(-len(axes), 0))))"
_TA2 = f"np.reshape({_TA}, (np.size(b), -1))"
_TGB = f"np.linalg.solve(np.swapaxes({_TA2}, -1, -2), np.ravel(g))"
_TT = _TA.replace("a if", "t if").replace("moveaxis(a,", "moveaxis(t,")
defvjp(np.linalg.tensorsolve, "a, b, axes=None",
       jvp={"b": f"np.reshape(np.linalg.solve({_TA2}, np.ravel(t)), np.shape(ans))",
            "a": f"-np.reshape(np.linalg.solve({_TA2}, np.reshape({_TT}, (np.size(b), -1)) @ np.ravel(ans)), "
                 f"np.shape(ans))"},
       b=f"np.reshape({_TGB}, np.shape(b))",
       a=f"np.reshape(-np.outer({_TGB}, np.ravel(ans)), np.shape(a)) if isinstance(axes, type(None)) else "
         f"np.moveaxis(np.reshape(-np.outer({_TGB}, np.ravel(ans)), np.shape({_TA})), tuple(range(-len(axes), 0)), "
         f"axes)")

# --- NumPy's scalar types as functions: a cast (as x.astype; to a real type, of a complex x, the
# real part, whose gradient is g) -----------------------------------------------------------------
for scalar in (np.float32, np.float64, np.complex64, np.complex128):
    defvjp(scalar, "x", name=f"np.{scalar.__name__}", jvp={"x": "cast_grad(t, ans, ans)"}, x="cast_grad(g, x, ans)")

# --- methods of ufuncs (np.add.reduce: a new bound method at each access, keyed by its ufunc and name) ---
_UREDUCE = "array, axis=0, dtype=None, out=None, keepdims=False"
_UT = "np.sum({} * t, axis=axis, keepdims=keepdims)"
_LSE = "np.exp(array - reduce_grad(ans, array, axis, keepdims))"
defvjp(np.add.reduce, _UREDUCE, name="np.add.reduce", linear="joint", shape=shapes.reduction(np.add.reduce, 0),
       array="reduce_grad(g, array, axis, keepdims)")
defvjp(np.multiply.reduce, _UREDUCE, name="np.multiply.reduce", shape=shapes.reduction(np.multiply.reduce, 0),
       jvp={"array": _UT.format("prod_grad(np.ones_like(ans), array, axis, keepdims)")},
       array="prod_grad(g, array, axis, keepdims)")
for extremum in (np.maximum.reduce, np.minimum.reduce):
    defvjp(extremum, _UREDUCE, name=f"np.{extremum.__self__.__name__}.reduce", shape=shapes.reduction(extremum, 0),
           jvp={"array": "extremum_jvp(t, array, ans, axis, keepdims)"},
           array="extremum_grad(g, array, ans, axis, keepdims)")
defvjp(np.logaddexp.reduce, _UREDUCE, name="np.logaddexp.reduce", shape=shapes.reduction(np.logaddexp.reduce, 0),
       jvp={"array": _UT.format(_LSE)},
       array=f"reduce_grad(g, array, axis, keepdims) * {_LSE}")
defvjp(np.add.accumulate, "array, axis=0, dtype=None, out=None", name="np.add.accumulate", linear="joint",
       array="cumsum_grad(g, array, axis)")
defvjp(np.multiply.accumulate, "array, axis=0, dtype=None, out=None", name="np.multiply.accumulate",
       jvp={"array": "cumprod_jvp(t, array, axis)"}, array="cumprod_grad(g, array, axis)")
# a running maximum (minimum) reads, at each place, the last entry so far that reaches it
_RUNNING = "accumulate_indices(array, ans, axis)"
for running in (np.maximum.accumulate, np.minimum.accumulate):
    defvjp(running, "array, axis=0, dtype=None, out=None", name=f"np.{running.__self__.__name__}.accumulate",
           jvp={"array": f"np.take_along_axis(t, {_RUNNING}, axis)"},
           array=f"take_along_axis_grad(g, array, {_RUNNING}, axis)")
REGISTRY.declare_nondifferentiable(rt.accumulate_indices)
# outer(A, B)[i..., j...] = A[i...] op B[j...]: A's gradient sums over B's axes, B's over A's
_OVER_A, _OVER_B = "tuple(range(np.ndim(A)))", "tuple(range(np.ndim(A), np.ndim(g)))"
defvjp(np.multiply.outer, "A, B", name="np.multiply.outer", linear="each",
       A="np.reshape(np.tensordot(g, B, np.ndim(B)), np.shape(A))",
       B="np.reshape(np.tensordot(A, g, np.ndim(A)), np.shape(B))")
defvjp(np.add.outer, "A, B", name="np.add.outer", linear="joint",
       A=f"np.reshape(np.sum(g, axis={_OVER_B}), np.shape(A))",
       B=f"np.reshape(np.sum(g, axis={_OVER_A}), np.shape(B))")
defvjp(np.subtract.outer, "A, B", name="np.subtract.outer", linear="joint",
       A=f"np.reshape(np.sum(g, axis={_OVER_B}), np.shape(A))",
       B=f"-np.reshape(np.sum(g, axis={_OVER_A}), np.shape(B))")

# sliding_window_view(x, k)[..., i, j] = x[..., i + j]: each entry of x gets the entries of g of the
# windows it lies in, summed (np.add.at over the index of x each window entry reads)
_WINDOWS = "sliding_window_view(np.reshape(np.arange(np.size(x)), np.shape(x)), window_shape, axis)"
USER_OBJECTS["sliding_window_view"] = np.lib.stride_tricks.sliding_window_view
defvjp(np.lib.stride_tricks.sliding_window_view, "x, window_shape, axis=None, *, subok=False, writeable=False",
       name="np.lib.stride_tricks.sliding_window_view", linear="joint",
       unsupported={"writeable": "s2sad does not follow writes through a writeable window view; take the "
                                 "windows read-only (the default) and build the new values with NumPy"},
       x=f"np.reshape(ufunc_add_at(np.zeros(np.size(x), np.result_type(g)), {_WINDOWS}, g), np.shape(x))")

# as_strided(x, shape, strides) reads x's entries at strided_index(x, shape, strides) (refused as it
# runs when x is not C-contiguous or the view reaches outside x): its gradient adds g up there
_STRIDED = "strided_index(x, shape, strides)"
defvjp(np.lib.stride_tricks.as_strided, "x, shape=None, strides=None, subok=False, writeable=True",
       name="np.lib.stride_tricks.as_strided", jvp={"x": f"np.ravel(t)[{_STRIDED}]"},
       x=f"np.reshape(getitem_grad(g, np.ravel(x), {_STRIDED}), np.shape(x))")

# --- refused: functions that call Python code NumPy loops over, with what to write instead -----------
_PYTHON_LOOP = ("NumPy calls the Python function given to {name} from its own loop, which s2sad does not "
                "differentiate; {advice}, or wrap the call in stop_gradient(...) if no gradient should flow "
                "through it")
_VECTORIZE = ("call the function on the arrays directly (written with NumPy operations, it works elementwise "
              "as it is; np.where for its branches)")
for vectorized, name in ((np.vectorize, "np.vectorize"), (np.frompyfunc, "np.frompyfunc")):
    REGISTRY.declare_refused(vectorized, _PYTHON_LOOP.format(name=name, advice=_VECTORIZE))
REGISTRY.declare_refused(np.apply_along_axis, _PYTHON_LOOP.format(
    name="np.apply_along_axis", advice="apply the function to the whole array along the axis "
    "(np.sum(x, axis=...), x @ w, ...) or stack its results for each row (np.stack([f(row) for row in x]))"))
REGISTRY.declare_refused(np.piecewise, _PYTHON_LOOP.format(
    name="np.piecewise", advice="compute each piece and select with np.where(condition, piece1, piece2) (or "
    "np.select for more pieces)"))
