"""Gradient rules for Python operators, NumPy functions and array methods.

One declaration per primitive.  ``g`` is the incoming gradient, ``ans`` the
primitive's output; binary elementwise rules reduce the gradient over the
axes along which an argument was broadcast (``unbroadcast``).

Conventions at ties and kinks (as autograd and JAX): maximum/minimum and
max/min share the gradient equally among tied entries; ``abs`` has gradient 0
at 0; ``clip`` passes no gradient where its input is at or beyond a bound (the bound gets it).
The same convention everywhere else:

* ties share equally: ``fmax``/``fmin`` (and to the other argument where one is
  NaN), ``ptp`` (its max and its min), ``sort`` (equal entries share the
  gradients of the places they sort to), the builtins ``max``/``min``, and
  ``np.linalg.norm`` of order inf, -inf, 1, -1 (entries, columns or rows tied
  for the max or min);
* 0 at a kink: ``fabs``, ``hypot`` and norms at the origin, ``sinc`` at 0 (its
  true derivative);
* ``prod`` and ``cumprod`` are exact at zeros (no division by the input);
* ``cholesky`` and ``eigh`` read one triangle of their input, so the gradient is
  on that triangle (the diagonal, plus both mirrored entries summed below or
  above it); eigenvector gradients assume distinct eigenvalues, as ``svd``'s
  singular vectors assume distinct singular values;
* ``x.astype(dtype)`` gives g back in x's dtype (a real x the real part of a complex g);
  to an integer or boolean dtype it is an error when a gradient reaches it (not a silent zero).
"""
from __future__ import annotations

import builtins
import math
import operator
import typing

import numpy as np

from .. import runtime
from ..runtime.checks import NONDIFF_ATTRIBUTES
from . import shapes
from .registry import APPEND, REGISTRY, SETITEM

defvjp = REGISTRY.defvjp


def unary(fun, vjp: str, name: str | None = None) -> None:
    """An elementwise function of ``x``; ``vjp`` is linear and elementwise in ``g``.  Its result
    is as NumPy's ufuncs' (``shapes.numpy_elementwise``: for NumPy's and Python's operators)."""
    defvjp(fun, "x", name=name, elementwise=True, shape=shapes.numpy_elementwise(fun), x=vjp)


def binary(fun, vjp_x: str | None, vjp_y: str | None, name: str | None = None) -> None:
    """A broadcasting elementwise function of ``x`` and ``y``.

    ``vjp_x`` and ``vjp_y`` are elementwise in ``g``; generation sums them over
    the axes along which the argument was broadcast (``unbroadcast``).  None: the
    function is piecewise constant in that argument (``copysign``'s sign).  Its result is the
    operands broadcast, as :func:`unary`'s.
    """
    vjps = {"x": vjp_x, "y": vjp_y}
    defvjp(fun, "x, y", name=name, broadcast=("x", "y"), elementwise=True,
           shape=shapes.numpy_elementwise(fun), **vjps)


# --- Python operators and their ufuncs ---------------------------------------
for add in (operator.add, np.add):
    binary(add, "g", "g", name="+" if add is operator.add else None)
for sub in (operator.sub, np.subtract):
    binary(sub, "g", "-g", name="-" if sub is operator.sub else None)
for mul in (operator.mul, np.multiply):
    binary(mul, "g * y", "g * x", name="*" if mul is operator.mul else None)
for div in (operator.truediv, np.divide, np.true_divide):
    binary(div, "g / y", "-g * ans / y", name="/" if div is operator.truediv else None)
for power in (operator.pow, np.power, builtins.pow, np.float_power):
    binary(power, "g * pow_slope(x, y)", "g * ans * log_or_zero(x, y)",
           name="**" if power is operator.pow else None)
for neg in (operator.neg, np.negative):
    unary(neg, "-g", name="unary -" if neg is operator.neg else None)
for pos in (operator.pos, np.positive):
    unary(pos, "g", name="unary +" if pos is operator.pos else None)
for mod in (operator.mod, np.mod, np.remainder):
    binary(mod, "g", "-g * np.floor_divide(x, y)", name="%" if mod is operator.mod else None)
binary(np.fmod, "g", "-g * np.trunc(x / y)")  # x - trunc(x / y) * y: the quotient rounded toward 0
binary(np.ldexp, "g * np.ldexp(1.0, y)", None)  # x * 2 ** y, y an integer
defvjp(np.modf, "x", returns_container=True, x="g[0]", jvp={"x": "(t, np.zeros_like(t))"})  # (x - trunc(x), trunc(x))
for matmul in (operator.matmul, np.matmul):
    defvjp(matmul, "x, y", name="@" if matmul is operator.matmul else None, linear="each", shape=shapes.matmul,
           x="matmul_grad_lhs(g, x, y)", y="matmul_grad_rhs(g, x, y)")

# --- elementwise functions ---------------------------------------------------
unary(np.exp, "g * ans")
unary(np.log, "g / x")
unary(np.sin, "g * np.cos(x)")
unary(np.cos, "-g * np.sin(x)")
unary(np.tan, "g * (1.0 + ans ** 2)")
unary(np.tanh, "g * (1.0 - ans ** 2)")
unary(np.sqrt, "g * 0.5 / ans")
unary(np.square, "g * 2 * x")
for absolute in (np.abs, builtins.abs):  # of a complex x: conj(x) / |x| (complex_rules.py)
    defvjp(absolute, "x", elementwise=True, shape=shapes.numpy_elementwise(absolute),
           jvp={"x": "t * np.sign(x) if np.isrealobj(x) else safe_divide(np.real(np.conj(x) * t), ans)"},
           x="g * np.sign(x) if np.isrealobj(x) else np.real(g) * safe_divide(np.conj(x), ans)")
# sign: for a complex z, z / |z| = exp(i angle(z)), whose gradient is i Im(g sign(z)) / z (0 at
# z = 0, as sign(0) is 0); for a real x, 0 (real_like keeps the branches' types alike for numba)
defvjp(np.sign, "x", elementwise=True, shape=shapes.numpy_elementwise(np.sign),
       jvp={"x": "t * 0.0 if np.isrealobj(x) else real_like(1j * ans * np.imag(safe_divide(t, x)), ans)"},
       x="np.real(g) * 0.0 if np.isrealobj(x) else real_like(1j * safe_divide(np.imag(g * ans), x), x)")
binary(np.maximum, "g * balanced_eq(x, ans, y)", "g * balanced_eq(y, ans, x)")
binary(np.minimum, "g * balanced_eq(x, ans, y)", "g * balanced_eq(y, ans, x)")
defvjp(np.where, "condition, x, y", linear="joint", shape=shapes.array_result(shapes.elementwise(np.where)),
       masks={"x": "condition", "y": "np.logical_not(condition)"},
       x="unbroadcast(np.where(condition, g, 0), x)", y="unbroadcast(np.where(condition, 0, g), y)")
# clip: each element gets its gradient from a, a_min or a_max, whichever it is (a bound at a tie);
# min= and max= are NumPy 2.1's spellings of a_min and a_max
_LO, _HI = "a_min if min is None else min", "a_max if max is None else max"
_CLIP = {"a": f"clip_mask(a, {_LO}, {_HI})", "lo": f"clip_min_mask(a, {_LO}, {_HI})",
         "hi": f"clip_max_mask(a, {_LO}, {_HI})"}
defvjp(np.clip, "a, a_min=None, a_max=None, out=None, *, min=None, max=None", shape=shapes.elementwise(np.clip),
       jvp={"a": f"t * {_CLIP['a']}", **{p: f"t * {_CLIP['lo']}" for p in ("a_min", "min")},
            **{p: f"t * {_CLIP['hi']}" for p in ("a_max", "max")}},
       a=f"unbroadcast(g * {_CLIP['a']}, a)",
       **{p: f"unbroadcast(g * {_CLIP['lo']}, {p})" for p in ("a_min", "min")},
       **{p: f"unbroadcast(g * {_CLIP['hi']}, {p})" for p in ("a_max", "max")})
defvjp(np.ndarray.clip, "a, min=None, max=None, out=None", name="clip",
       jvp={"a": "t * clip_mask(a, min, max)", "min": "t * clip_min_mask(a, min, max)",
            "max": "t * clip_max_mask(a, min, max)"},
       a="unbroadcast(g * clip_mask(a, min, max), a)",
       min="unbroadcast(g * clip_min_mask(a, min, max), min)",
       max="unbroadcast(g * clip_max_mask(a, min, max), max)")
REGISTRY.declare_nondifferentiable(runtime.clip_min_mask, runtime.clip_max_mask, runtime.check_float_write)
# (the tangent of a Python float is one too)
defvjp(builtins.float, "x", elementwise=True, x="g", jvp={"x": "float(t)"})
unary(np.fabs, "g * np.sign(x)")
unary(np.arcsin, "g / np.sqrt(1.0 - x ** 2)")
unary(np.arccos, "-g / np.sqrt(1.0 - x ** 2)")
unary(np.arctan, "g / (1.0 + x ** 2)")
unary(np.sinh, "g * np.cosh(x)")
unary(np.cosh, "g * np.sinh(x)")
unary(np.arcsinh, "g / np.sqrt(x ** 2 + 1.0)")
unary(np.arccosh, "g / np.sqrt(x ** 2 - 1.0)")
unary(np.arctanh, "g / (1.0 - x ** 2)")
unary(np.exp2, "g * ans * float(np.log(2))")
unary(np.expm1, "g * (ans + 1.0)")
unary(np.log2, "g / (x * float(np.log(2)))")
unary(np.log10, "g / (x * float(np.log(10)))")
unary(np.log1p, "g / (1.0 + x)")
unary(np.reciprocal, "-g * ans ** 2")
unary(np.cbrt, "g / (3.0 * ans ** 2)")
for radians in (np.deg2rad, np.radians):
    unary(radians, "g * (np.pi / 180)")
for degrees in (np.rad2deg, np.degrees):
    unary(degrees, "g * (180 / np.pi)")
unary(np.sinc, "g * sinc_slope(x)")  # 0 at 0, and -pi ** 2 / 3 the second derivative there
# (NaN-safe as np.where is: what only feeds x has its derivatives masked where x is not finite)
defvjp(np.nan_to_num, "x, copy=True, nan=0.0, posinf=None, neginf=None", masks={"x": "np.isfinite(x)"},
       x="np.where(np.isfinite(x), g, 0)",
       jvp={"x": "np.where(np.isfinite(x), t, 0)", "nan": "t * np.isnan(x)", "posinf": "t * np.isposinf(x)",
            "neginf": "t * np.isneginf(x)"},
       nan="unbroadcast(g * np.isnan(x), nan)", posinf="unbroadcast(g * np.isposinf(x), posinf)",
       neginf="unbroadcast(g * np.isneginf(x), neginf)")
binary(np.arctan2, "g * y / (x ** 2 + y ** 2)", "-g * x / (x ** 2 + y ** 2)")
binary(np.hypot, "g * safe_divide(x, ans)", "g * safe_divide(y, ans)")  # 0 at the origin
binary(np.logaddexp, "g * np.exp(x - ans)", "g * np.exp(y - ans)")
binary(np.logaddexp2, "g * 2 ** (x - ans)", "g * 2 ** (y - ans)")
binary(np.fmax, "g * balanced_eq(x, ans, y)", "g * balanced_eq(y, ans, x)")  # NaN: to the other
binary(np.fmin, "g * balanced_eq(x, ans, y)", "g * balanced_eq(y, ans, x)")
# x.astype(dtype): g back in x's dtype; to an integer or boolean dtype: an error
defvjp(np.ndarray.astype, "a, dtype, order='K', casting='unsafe', subok=True, copy=True", name="astype",
       jvp={"a": "cast_grad(t, ans, ans)"}, a="cast_grad(g, a, ans)")

# --- reductions --------------------------------------------------------------
# where= masks the gradient (and for mean the count); initial= is one more term of a sum or
# factor of a product, and for max/min one more candidate: a gradient where it wins
_WHERE = "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True"
for sum_ in (np.sum, np.ndarray.sum):
    defvjp(sum_, _WHERE, linear="joint", shape=shapes.reduction(np.sum), initial="unbroadcast(g, initial)",
           a="reduce_grad(g, a, axis, keepdims) if where is True else "
             "np.where(where, reduce_grad(g, a, axis, keepdims), 0.0)")
_COUNT = "np.sum(where * np.ones_like(a), axis=axis, keepdims=keepdims)"
for mean in (np.mean, np.ndarray.mean):
    defvjp(mean, "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True", linear="joint",
           shape=shapes.reduction(np.mean),
           a=f"mean_grad(g, a, axis, keepdims) if where is True else "
             f"np.where(where, reduce_grad(g / {_COUNT}, a, axis, keepdims), 0.0)")
_EXTREMUM = ("extremum_grad({g}, a, ans, axis, keepdims) if where is True and initial is None else "
             "extremum_where_grad({g}, a, ans, axis, keepdims, initial, where)")
_INITIAL = "extremum_initial_grad({g}, a, ans, axis, keepdims, initial, where)"
for extremum in (np.max, np.min, np.amax, np.amin, np.ndarray.max, np.ndarray.min):
    defvjp(extremum, "a, axis=None, out=None, keepdims=False, initial=None, where=True",
           shape=shapes.reduction(np.max if extremum in (np.max, np.amax, np.ndarray.max) else np.min),
           jvp={"a": "extremum_jvp(t, a, ans, axis, keepdims) if where is True and initial is None else "
                     "np.sum(extremum_where_grad(np.ones_like(ans), a, ans, axis, keepdims, initial, where) * t, "
                     "axis=axis, keepdims=keepdims)",
                "initial": f"t * {_INITIAL.format(g='np.ones_like(ans)')}"},
           a=_EXTREMUM.format(g="g"), initial=f"unbroadcast({_INITIAL.format(g='g')}, initial)")
# (forward mode: these adjoints are g times a weight; the tangent sums the weight times t)
_SUM_T = "np.sum({} * t, axis=axis, keepdims=keepdims)"
_PROD = ("prod_grad({g}, a, axis, keepdims) if where is True and initial is None else "
         "np.where(where, prod_grad({g} if initial is None else {g} * initial, np.where(where, a, 1.0), axis, "
         "keepdims), 0.0)")
_PROD_REST = "np.prod(a, axis=axis, keepdims=keepdims, where=where)"
for prod in (np.prod, np.ndarray.prod):
    defvjp(prod, _WHERE, shape=shapes.reduction(np.prod),
           jvp={"a": _SUM_T.format(f"({_PROD.format(g='np.ones_like(ans)')})"), "initial": f"t * {_PROD_REST}"},
           a=_PROD.format(g="g"), initial=f"unbroadcast(g * {_PROD_REST}, initial)")
# correction= is NumPy 2's spelling of ddof (np.var's and np.std's, not the methods'); with
# mean=m given, the deviations are a - m (m is an input of its own)
_MOMENT = "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, mean=None, correction=None"
_DDOF = "ddof if correction is None else correction"


def _moment_weight(g: str) -> str:
    """The adjoint of ``a`` in np.var (``g``: the incoming gradient; np.std: scaled)."""
    return (f"var_grad({g}, a, axis, {_DDOF}, keepdims) if mean is None else real_input("
            f"reduce_grad(2.0 * {g} / (np.size(a) / np.size(ans) - ({_DDOF})), a, axis, keepdims) * (a - mean), "
            f"a - mean, 'np.var')")  # (real deviations only, as var_grad)


for moment, scale in ((np.var, "{}"), (np.ndarray.var, "{}"), (np.std, "{} * safe_divide(0.5, ans)"),
                      (np.ndarray.std, "{} * safe_divide(0.5, ans)")):
    # std: 0 where the deviation is 0 (one entry: identically constant), as norms at the origin
    weight = _moment_weight(scale.format("np.ones_like(ans)"))
    defvjp(moment, _MOMENT, shape=shapes.reduction(np.var if moment in (np.var, np.ndarray.var) else np.std),
           jvp={"a": _SUM_T.format(f"({weight})"), "mean": f"-{_SUM_T.format(f'({weight})')}"},
           a=_moment_weight(scale.format("g")),
           mean=f"unbroadcast(-({_moment_weight(scale.format('g'))}), mean)")
defvjp(np.ptp, "a, axis=None, out=None, keepdims=False",
       jvp={"a": _SUM_T.format("ptp_grad(np.ones_like(ans), a, axis, keepdims)")},
       a="ptp_grad(g, a, axis, keepdims)")
for cumsum in (np.cumsum, np.ndarray.cumsum):
    defvjp(cumsum, "a, axis=None, dtype=None, out=None", linear="joint", a="cumsum_grad(g, a, axis)")
for cumprod in (np.cumprod, np.ndarray.cumprod):
    defvjp(cumprod, "a, axis=None, dtype=None, out=None", jvp={"a": "cumprod_jvp(t, a, axis)"},
           a="cumprod_grad(g, a, axis)")
for trace in (np.trace, np.ndarray.trace):
    defvjp(trace, "a, offset=0, axis1=0, axis2=1, dtype=None, out=None", linear="joint",
           a="diagonal_grad(np.expand_dims(g, -1), a, offset, axis1, axis2)")

# --- linear algebra ----------------------------------------------------------
for dot in (np.dot, np.ndarray.dot):
    defvjp(dot, "a, b", linear="each", shape=shapes.dot, a="dot_grad_lhs(g, a, b)", b="dot_grad_rhs(g, a, b)")
defvjp(np.outer, "a, b", linear="each", shape=shapes.outer,
       a="np.reshape(np.dot(g, np.ravel(b)), np.shape(a))",
       b="np.reshape(np.dot(np.ravel(a), g), np.shape(b))")
defvjp(np.inner, "a, b", linear="each",
       a="unbroadcast(g * b, a) if np.ndim(a) == 0 or np.ndim(b) == 0 else "
         "tensordot_grad_lhs(g, a, b, ([-1], [-1]))",
       b="unbroadcast(g * a, b) if np.ndim(a) == 0 or np.ndim(b) == 0 else "
         "tensordot_grad_rhs(g, a, b, ([-1], [-1]))")
defvjp(np.tensordot, "a, b, axes=2", linear="each",
       a="tensordot_grad_lhs(g, a, b, axes)", b="tensordot_grad_rhs(g, a, b, axes)")
defvjp(np.kron, "a, b", linear="each", a="kron_grad_lhs(g, a, b)", b="kron_grad_rhs(g, a, b)")
defvjp(np.cross, "a, b, axisa=-1, axisb=-1, axisc=-1, axis=None", linear="each",
       a="cross_grad(g, a, b, axisa, axisb, axisc, axis)", b="cross_grad(-g, b, a, axisb, axisa, axisc, axis)")
# einsum(subscripts, *operands): up to four operands, so that each can carry a gradient (more, with
# the subscripts a string literal: normalize/call_forms.py groups them); in the sublist form
# einsum(op0, sublist0, op1, sublist1, out), the operands are subscripts, b and d
defvjp(np.einsum, "subscripts, a, b=None, c=None, d=None, *more, out=None, dtype=None, order='K', "
                  "casting='safe', optimize=False", linear="each",
       unsupported={"more": "s2sad differentiates more than four operands (in the sublist form, more than two) "
                            "when the subscripts are a string literal written in the call "
                            "(np.einsum('ab,bc,cd,de,ef->af', ...))"},
       subscripts="einsum_grad(g, 0, subscripts, a, b, c, d)",
       a="einsum_grad(g, 0, subscripts, a, b, c, d)", b="einsum_grad(g, 1, subscripts, a, b, c, d)",
       c="einsum_grad(g, 2, subscripts, a, b, c, d)", d="einsum_grad(g, 3, subscripts, a, b, c, d)")

# --- np.linalg -----------------------------------------------------------------
# cholesky and eigh read one triangle of their input: the gradient lies on that triangle.
defvjp(np.linalg.det, "a", jvp={"a": "np.sum(det_cofactor(a) * t, axis=(-2, -1))"},  # singular a too
       a="np.expand_dims(g, (-2, -1)) * det_cofactor(a)")
defvjp(np.linalg.slogdet, "a", returns_container=True, a="slogdet_grad(g, a)",
       jvp={"a": "(np.zeros_like(ans[0]), real_input(np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1), a, "
                 "'np.linalg.slogdet'))"})  # (a complex a: refused, as by slogdet_grad)
defvjp(np.linalg.inv, "a", jvp={"a": "-ans @ t @ ans"},
       a="-np.swapaxes(ans, -1, -2) @ g @ np.swapaxes(ans, -1, -2)")
defvjp(np.linalg.solve, "a, b", a="solve_grad_a(g, a, b, ans)", b="solve_grad_b(g, a, b)",
       jvp={"a": "-np.linalg.solve(a, t @ ans) if np.ndim(b) > 1 else "
                 "-np.linalg.solve(a, t @ ans[..., None])[..., 0]",
            "b": "np.linalg.solve(a, t)"})
defvjp(np.linalg.cholesky, "a, upper=False", jvp={"a": "cholesky_jvp(t, ans, upper)"},
       a="cholesky_grad(g, ans, upper)")
defvjp(np.linalg.eigh, "a, UPLO='L'", returns_container=True, jvp={"a": "eigh_jvp(t, a, ans, UPLO)"},
       a="eigh_grad(g, a, ans, UPLO)")
# the spectral and nuclear norms of matrices (the last two axes) through the singular vectors,
# u[:, k] v[k] for the singular value s[k] that is the norm, u v for their sum: np.linalg.svd's
# rule then gives their second derivative
_SVD = "np.linalg.svd(x, full_matrices=False)"
_K = "(slice(None) if ord == 'nuc' else slice(0, 1) if ord == 2 else slice(-1, None))"
#: The gradient of a real matrix's norm of ord 2, -2 or 'nuc' from ``{g}`` (the norms' shape, or kept dims).
SPECTRAL_NORM = (f"np.reshape({{g}}, np.shape({{g}})[:np.ndim(x) - 2] + (1, 1)) * "
                 f"({_SVD}[0][..., {_K}] @ {_SVD}[2][..., {_K}, :])")
#: Whether a call of np.linalg.norm takes the spectral or nuclear norm of a real matrix (of a
#: complex one, norm_grad's gradient, with conjugates, once).
_SPECTRAL_CALL = "ord in (2, -2, 'nuc') and np.ndim(x) == 2 and isinstance(axis, type(None)) and np.isrealobj(x)"
defvjp(np.linalg.norm, "x, ord=None, axis=None, keepdims=False",
       jvp={"x": _SUM_T.format(f"({SPECTRAL_NORM.format(g='np.ones_like(ans)')} if {_SPECTRAL_CALL} else "
                               f"norm_grad(np.ones_like(ans), x, ans, ord, axis, keepdims))")},
       x=f"{SPECTRAL_NORM.format(g='g')} if {_SPECTRAL_CALL} else norm_grad(g, x, ans, ord, axis, keepdims)")
# hermitian=True reads a's lower triangle only (as np.linalg.eigh does)
_LOWER = "read_triangle({}, True)"
_ON_LOWER = "triangle_grad({}, True) if hermitian else {}"
defvjp(np.linalg.pinv, "a, rcond=None, hermitian=False, rtol=None",
       jvp={"a": f"pinv_jvp({_LOWER.format('t')}, {_LOWER.format('a')}, ans) if hermitian else pinv_jvp(t, a, ans)"},
       a=_ON_LOWER.format(f"pinv_grad(g, {_LOWER.format('a')}, ans)", "pinv_grad(g, a, ans)"))
defvjp(np.linalg.qr, "a, mode='reduced'", returns_container=True, jvp={"a": "qr_jvp(t, a, ans, mode)"},
       a="qr_grad(g, a, ans, mode)")
defvjp(np.linalg.svd, "a, full_matrices=True, compute_uv=True, hermitian=False", returns_container=True,
       jvp={"a": f"svd_jvp({_LOWER.format('t')}, {_LOWER.format('a')}, ans, full_matrices, compute_uv) "
                 f"if hermitian else svd_jvp(t, a, ans, full_matrices, compute_uv)"},
       a=_ON_LOWER.format(f"svd_grad(g, {_LOWER.format('a')}, ans, full_matrices, compute_uv)",
                          "svd_grad(g, a, ans, full_matrices, compute_uv)"))

# --- shape manipulation ------------------------------------------------------
# reshape: the gradient reads g back in the order the elements were read (order "A": the
# order NumPy chose from a's layout, which a tangent's layout need not share)
_RESHAPE = {"linear": "joint", "jvp": {"a": "reshape_back(t, ans, order, a)"},
            "a": "reshape_back(g, a, order)"}
defvjp(np.reshape, "a, shape=None, order='C', *, newshape=None, copy=None", **_RESHAPE)
defvjp(np.ndarray.reshape, "a, *shape, order='C', copy=None", **_RESHAPE)
defvjp(runtime.reshape_back, "ct, like, order='C', source=None", linear="joint",
       ct="reshape_back(g, ct, order, like if source is None else source)")
for ravel in (np.ravel, np.ndarray.ravel, np.ndarray.flatten):
    defvjp(ravel, "a, order='C'", jvp={"a": "reshape_back(t, ans, order, a)"}, a="reshape_back(g, a, order)")
defvjp(np.transpose, "a, axes=None", linear="joint", shape=shapes.transpose, a="transpose_grad(g, axes)")
defvjp(np.ndarray.transpose, "a, *axes", linear="joint", shape=shapes.transpose,
       a="transpose_grad(g, axes or None)")
defvjp(np.ndarray.T, "a", name=".T", linear="joint", a="np.transpose(g)")
defvjp(np.expand_dims, "a, axis", linear="joint", a="np.reshape(g, np.shape(a))")
for squeeze in (np.squeeze, np.ndarray.squeeze):
    defvjp(squeeze, "a, axis=None", linear="joint", a="np.reshape(g, np.shape(a))")
defvjp(operator.getitem, "x, index", containers=("x",), returns_container=True, name="[]", linear="joint", x="getitem_grad(g, x, index)")
for atleast in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    defvjp(atleast, "a", linear="joint", a="reshape_grad(g, a)")
defvjp(np.broadcast_to, "array, shape, subok=False", linear="joint", array="unbroadcast(g, array)")
defvjp(np.flip, "m, axis=None", linear="joint", m="np.flip(g, axis)")
defvjp(np.fliplr, "m", linear="joint", m="np.fliplr(g)")
defvjp(np.flipud, "m", linear="joint", m="np.flipud(g)")
defvjp(np.rot90, "m, k=1, axes=None", linear="joint", m="rot90_grad(g, k, axes)")
defvjp(np.roll, "a, shift, axis=None", linear="joint", a="np.roll(g, np.negative(shift), axis)")
defvjp(np.moveaxis, "a, source, destination", linear="joint", a="np.moveaxis(g, destination, source)")
defvjp(np.rollaxis, "a, axis, start=0", linear="joint", a="rollaxis_grad(g, a, axis, start)")
for swapaxes in (np.swapaxes, np.ndarray.swapaxes):
    defvjp(swapaxes, "a, axis1, axis2", linear="joint", a="np.swapaxes(g, axis1, axis2)")
for repeat in (np.repeat, np.ndarray.repeat):
    defvjp(repeat, "a, repeats, axis=None", linear="joint", a="repeat_grad(g, a, repeats, axis)")
defvjp(np.tile, "A, reps", linear="joint", A="tile_grad(g, A, reps)")
for take in (np.take, np.ndarray.take):
    defvjp(take, "a, indices, axis=None, out=None, mode='raise'", linear="joint",
           a="take_grad(g, a, indices, axis, mode)")
for diagonal in (np.diagonal, np.ndarray.diagonal):
    defvjp(diagonal, "a, offset=0, axis1=0, axis2=1", linear="joint",
           a="diagonal_grad(g, a, offset, axis1, axis2)")
defvjp(np.diag, "v, k=0", linear="joint",
       v="np.diag(g, k) if np.ndim(v) == 1 else diagonal_grad(g, v, k)")
defvjp(np.diagflat, "v, k=0", linear="joint", v="np.reshape(np.diagonal(g, k), np.shape(v))")
# a vector m is taken as the rows of a square (np.tril(v)[i, j] is v[j] or 0): its gradient sums them
defvjp(np.tril, "m, k=0", linear="joint", m="np.tril(g, k) if np.ndim(m) > 1 else np.sum(np.tril(g, k), axis=0)")
defvjp(np.triu, "m, k=0", linear="joint", m="np.triu(g, k) if np.ndim(m) > 1 else np.sum(np.triu(g, k), axis=0)")
defvjp(np.pad, "array, pad_width, mode='constant', constant_values=0, end_values=0, "
               "reflect_type='even', stat_length=None", linear="joint", containers=("constant_values",),
       array="pad_grad(g, array, pad_width, mode, reflect_type)",
       constant_values="array_grad(pad_values_grad(g, array, pad_width, mode, constant_values), constant_values)")
defvjp(np.sort, "a, axis=-1, kind=None, order=None, stable=None", jvp={"a": "sort_jvp(t, a, axis)"},
       a="sort_grad(g, a, axis)")
defvjp(np.diff, "a, n=1, axis=-1, prepend=None, append=None", linear="joint",
       a="diff_grad(g, a, n, axis, prepend, append)",
       prepend="diff_grad(g, a, n, axis, prepend, append, 'prepend')",
       append="diff_grad(g, a, n, axis, prepend, append, 'append')")
defvjp(np.linspace, "start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0", returns_container=True,
       linear="joint",
       start="linspace_grad(g, start, num, endpoint, retstep, axis, False)",
       stop="linspace_grad(g, stop, num, endpoint, retstep, axis, True)")
defvjp(np.full, "shape, fill_value, dtype=None, order='C'", linear="joint",
       fill_value="unbroadcast(g, fill_value)")
defvjp(np.full_like, "a, fill_value, dtype=None, order='K', subok=True, shape=None", linear="joint",
       a=None, fill_value="unbroadcast(g, fill_value)")  # a gives the shape and dtype

# --- containers and in-place updates -------------------------------------------
for copy in (np.copy, np.ndarray.copy):
    defvjp(copy, "a, order='K'", containers=("a",), returns_container=True, linear="joint", shape=shapes.copy,
           a="g")
defvjp(typing.cast, "typ, val", containers=("val",), returns_container=True, linear="joint", typ=None,
       val="g")  # (val itself, as the code runs)
defvjp(APPEND, "xs, x", containers=("xs",), returns_container=True, name="append", linear="joint", xs="g[:-1]", x="g[-1]")
defvjp(SETITEM, "x, index, v", containers=("x",), returns_container=True, name="[]=", linear="joint", x="setitem_grad_x(g, index)",
       v="setitem_grad_value(g, index, v)")
_JOIN = "arrays, axis=0, out=None, *, dtype=None, casting='same_kind'"  # (dtype=: a cast of the result)
defvjp(np.stack, _JOIN, containers=("arrays",), linear="joint", arrays="stack_grad(g, arrays, axis)")
defvjp(np.concatenate, _JOIN, containers=("arrays",), linear="joint",
       arrays="concatenate_grad(g, arrays, axis)")
defvjp(builtins.sum, "iterable, start=0", containers=("iterable",), linear="joint", iterable="sum_items_grad(g, iterable)",
       start="unbroadcast(g, start)")
defvjp(np.array, "object, dtype=None, *, copy=True, order='K', subok=False", containers=("object",), linear="joint",
       object="array_grad(g, object)")  # (copy=False or None: aliasing.returns_same)
defvjp(np.asarray, "object, dtype=None, order=None, *, copy=None", containers=("object",), linear="joint",
       object="array_grad(g, object)")
defvjp(np.hstack, "tup, dtype=None, casting='same_kind'", containers=("tup",), linear="joint",
       tup="join_grad(g, tup, 0 if np.ndim(tup[0]) <= 1 else 1, np.atleast_1d)")
defvjp(np.vstack, "tup, dtype=None, casting='same_kind'", containers=("tup",), linear="joint",
       tup="join_grad(g, tup, 0, np.atleast_2d)")
defvjp(np.dstack, "tup", containers=("tup",), linear="joint", tup="join_grad(g, tup, 2, np.atleast_3d)")
defvjp(np.column_stack, "tup", containers=("tup",), linear="joint", tup="join_grad(g, tup, 1, as_column)")
# functions that return lists or tuples: g is a list (tuple) of arrays, zeros where unused
for split in (np.split, np.array_split):
    defvjp(split, "ary, indices_or_sections, axis=0", returns_container=True, linear="joint", ary="np.concatenate(g, axis=axis)")
defvjp(np.hsplit, "ary, indices_or_sections", returns_container=True, linear="joint",
       ary="np.concatenate(g, axis=1 if np.ndim(ary) > 1 else 0)")
defvjp(np.vsplit, "ary, indices_or_sections", returns_container=True, linear="joint", ary="np.concatenate(g, axis=0)")
defvjp(np.dsplit, "ary, indices_or_sections", returns_container=True, linear="joint", ary="np.concatenate(g, axis=2)")

# np.r_[...] and np.c_[...]: normalization passes the entries as one tuple (slices as slice
# objects); each array or number entry gets the elements of g where its elements went
for concat, concat_name in ((np.r_, "np.r_"), (np.c_, "np.c_")):
    defvjp(concat, "items", name=concat_name, containers=("items",),
           jvp={"items": f"index_concat_jvp(t, items, {concat_name})"},
           items=f"index_concat_grad(g, items, {concat_name})")
defvjp(runtime.index_concat_grad, "ct, items, concat", linear="joint",
       ct="index_concat_jvp(g, items, concat)")
defvjp(runtime.index_concat_jvp, "t, items, concat", linear="joint",
       t="index_concat_grad(g, items, concat)")

# --- the math module and builtins ------------------------------------------------
unary(math.exp, "g * ans")
unary(math.expm1, "g * (ans + 1.0)")
unary(math.log, "g / x")  # math.log(x, base) is refused: write math.log(x) / math.log(base)
unary(math.log1p, "g / (1.0 + x)")
unary(math.log2, "g / (x * float(np.log(2)))")
unary(math.log10, "g / (x * float(np.log(10)))")
unary(math.sqrt, "g * 0.5 / ans")
unary(math.sin, "g * np.cos(x)")
unary(math.cos, "-g * np.sin(x)")
unary(math.tan, "g * (1.0 + ans ** 2)")
unary(math.asin, "g / np.sqrt(1.0 - x ** 2)")
unary(math.acos, "-g / np.sqrt(1.0 - x ** 2)")
unary(math.atan, "g / (1.0 + x ** 2)")
unary(math.sinh, "g * np.cosh(x)")
unary(math.cosh, "g * np.sinh(x)")
unary(math.tanh, "g * (1.0 - ans ** 2)")
unary(math.asinh, "g / np.sqrt(x ** 2 + 1.0)")
unary(math.acosh, "g / np.sqrt(x ** 2 - 1.0)")
unary(math.atanh, "g / (1.0 - x ** 2)")
unary(math.fabs, "g * np.sign(x)")
unary(math.radians, "g * (np.pi / 180)")
unary(math.degrees, "g * (180 / np.pi)")
unary(math.erf, "g * (2 / np.pi ** 0.5) * np.exp(-x ** 2)")
unary(math.erfc, "-g * (2 / np.pi ** 0.5) * np.exp(-x ** 2)")
binary(math.atan2, "g * y / (x ** 2 + y ** 2)", "-g * x / (x ** 2 + y ** 2)")
# np.ix_ of index arrays carries no gradient; of floats it returns the values themselves (reshaped)
REGISTRY.declare_refused(np.ix_, "np.ix_ builds index arrays; a value that carries a gradient reaching it "
                                 "would come back as itself without one: index with integer arrays, or "
                                 "reshape the values (x[:, None], x[None, :])")
for math_gamma in (math.gamma, math.lgamma):  # (their rules come with SciPy's: scipy_rules.py)
    REGISTRY.declare_refused(math_gamma, f"the derivative of math.{math_gamma.__name__} is SciPy's digamma, and "
                             f"s2sad declares it once SciPy is imported: import scipy.special in your module "
                             f"(or use scipy.special.gammaln / scipy.special.gamma)")
for stepping in (builtins.iter, builtins.next):  # an iterator is state that next() changes
    REGISTRY.declare_refused(stepping, f"s2sad does not follow an iterator through {stepping.__name__}(...): "
                             f"index the list or tuple instead (xs[0], xs[i]), loop over it (for v in xs: ...), "
                             f"or unpack it (a, b = xs)")
binary(math.pow, "g * pow_slope(x, y)", "g * ans * log_or_zero(x, y)")
binary(math.hypot, "g * safe_divide(x, ans)", "g * safe_divide(y, ans)")
binary(math.fmod, "g", "-g * np.trunc(x / y)")
binary(math.remainder, "g", "-g * np.round(x / y)")
for copysign in (math.copysign, np.copysign):
    binary(copysign, "g * np.sign(x) * np.copysign(1.0, y)", None)
defvjp(math.fsum, "seq", containers=("seq",), linear="joint", seq="sum_items_grad(g, seq)")
for choose in (builtins.max, builtins.min):  # max(items) and max(a, b): ties share equally
    defvjp(choose, "a, b=None", containers=("a",), a="choice_grad(g, a, ans, b)", b="g * balanced_eq(b, ans, a)",
           jvp={"a": "choice_jvp(t, a, ans, b)", "b": "t * balanced_eq(b, ans, a)"})

# --- no gradient ---------------------------------------------------------------
REGISTRY.declare_nondifferentiable(
    runtime.stop_gradient,
    np.floor, np.ceil, np.round, np.around, np.rint, np.trunc,
    np.argmax, np.argmin, np.argsort, np.nonzero, np.shape, np.ndim, np.size,
    np.zeros_like, np.ones_like, np.empty_like, np.zeros, np.ones,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.isfinite, np.isnan,
    np.isinf, np.floor_divide, np.arange, np.eye, np.identity, np.empty,
    np.ndarray.argmax, np.ndarray.argmin, np.ndarray.argsort, np.ndarray.nonzero,
    np.ndarray.round,
    operator.floordiv, operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
    operator.ne, operator.not_, operator.and_, operator.or_, operator.xor, operator.invert,
    builtins.len, builtins.range, builtins.int, builtins.bool, builtins.round, builtins.print,
    builtins.isinstance, builtins.type, math.floor, math.ceil, math.trunc,
    np.fix, np.signbit, np.isposinf, np.isneginf, np.isclose, np.allclose, np.array_equal,
    np.any, np.all, np.count_nonzero, np.argwhere, np.flatnonzero, np.searchsorted, np.digitize,
    np.argpartition, np.heaviside, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert,
    np.tril_indices_from, np.triu_indices_from, np.diag_indices_from, np.lexsort, np.isin,
    np.unravel_index, np.ravel_multi_index, np.result_type, np.promote_types,
    np.shares_memory, np.may_share_memory,
    np.ndarray.any, np.ndarray.all, np.ndarray.searchsorted, np.ndarray.argpartition,
    math.isclose, math.isfinite, math.isinf, math.isnan, math.factorial, math.comb, math.perm,
    math.gcd, math.isqrt, builtins.all, builtins.any, builtins.hash, builtins.id, builtins.str,
    builtins.repr, builtins.callable, builtins.slice,
    # random numbers: the functions of np.random, and the methods of its generators, which a
    # call on a generator (rng.normal(...) with rng a global) resolves to
    *(f for name, f in vars(np.random).items()
      if name in np.random.__all__ and callable(f) and not isinstance(f, type)),
    *(f for name, f in vars(np.random.Generator).items() if not name.startswith("_") and callable(f)),
    *(f for name, f in vars(np.random.RandomState).items() if not name.startswith("_") and callable(f)),
)
# what some of them return, for specialised code: stop_gradient its argument; the operators
# and NumPy's ufuncs no rule gave a shape (//, <, np.floor, np.less, np.cbrt ...) their operands
# broadcast
REGISTRY.defshape(runtime.stop_gradient, shapes.same)
for fun in (*shapes.NUMPY_UFUNCS, *shapes.ELEMENTWISE_OPERATORS):
    if REGISTRY.shape(fun) is None:
        REGISTRY.defshape(fun, shapes.elementwise(fun))


# --- scalars and lists out of arrays ------------------------------------------------------
defvjp(np.ndarray.item, "a, *args", name="item", linear="joint", a="getitem_grad(g, a, index_of_item(a, args))")
defvjp(np.ndarray.tolist, "a", name="tolist", returns_container=True, linear="joint",
       a="np.reshape(np.array(g), np.shape(a))")
