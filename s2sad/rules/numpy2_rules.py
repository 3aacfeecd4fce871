"""Gradient rules for NumPy 2's array-API functions and more of NumPy's array and polynomial
functions: vector products (``vecdot``, ``matvec``, ``vecmat``), cumulative sums and products
with ``include_initial``, ``unstack``, ``delete`` and ``insert``, ``logspace`` and ``geomspace``,
the polynomial coefficient functions, ``divmod`` and ``math.prod``.

Conventions as in :mod:`s2sad.rules.complex_rules` (autograd's, for complex values): ``vecdot``
and ``vecmat`` conjugate their first argument, as NumPy does, so its gradient is conjugated.
Every template is written with functions that have rules, so that the gradient code
differentiates again (second order).
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import runtime as rt
from .registry import REGISTRY

defvjp = REGISTRY.defvjp

# --- vector products (generalized ufuncs; the core axes last) ---------------------------
_CORE_ONLY = ("s2sad differentiates {name} over its default core axes; move the axes with "
              "np.moveaxis first and leave axes= at its default")
_X1 = "np.moveaxis(x1, axis, -1)"
_X2 = "np.moveaxis(x2, axis, -1)"
_VECDOT = {"x1": f"np.moveaxis(unbroadcast(np.conj(np.expand_dims(g, -1) * {_X2}), {_X1}), -1, axis)",
           "x2": f"np.moveaxis(unbroadcast(np.expand_dims(g, -1) * np.conj({_X1}), {_X2}), -1, axis)"}
defvjp(np.vecdot, "x1, x2, out=None, *, axes=None, axis=-1", name="np.vecdot", linear="each",
       unsupported={"axes": _CORE_ONLY.format(name="np.vecdot")}, **_VECDOT)
defvjp(np.linalg.vecdot, "x1, x2, *, axis=-1", name="np.linalg.vecdot", linear="each", **_VECDOT)
# matvec(a, v)[..., i] = sum_j a[..., i, j] v[..., j]; vecmat(v, a)[..., j] = sum_i conj(v[..., i]) a[..., i, j]
defvjp(np.matvec, "x1, x2, out=None, *, axes=None, axis=None", name="np.matvec", linear="each",
       unsupported={"axes": _CORE_ONLY.format(name="np.matvec"), "axis": _CORE_ONLY.format(name="np.matvec")},
       x1="unbroadcast(np.expand_dims(g, -1) * np.expand_dims(x2, -2), x1)",
       x2="unbroadcast(np.sum(np.expand_dims(g, -1) * x1, axis=-2), x2)")
defvjp(np.vecmat, "x1, x2, out=None, *, axes=None, axis=None", name="np.vecmat", linear="each",
       unsupported={"axes": _CORE_ONLY.format(name="np.vecmat"), "axis": _CORE_ONLY.format(name="np.vecmat")},
       x1="unbroadcast(np.conj(np.sum(np.expand_dims(g, -2) * x2, axis=-1)), x1)",
       x2="unbroadcast(np.expand_dims(np.conj(x1), -1) * np.expand_dims(g, -2), x2)")
defvjp(np.linalg.matrix_transpose, "x", name="np.linalg.matrix_transpose", linear="joint",
       x="np.swapaxes(g, -1, -2)")
defvjp(np.linalg.cross, "x1, x2, *, axis=-1", name="np.linalg.cross", linear="each",
       x1="cross_grad(g, x1, x2, axis=axis)", x2="cross_grad(-g, x2, x1, axis=axis)")
# s = diag(u' x v): ds = diag(u' dx v) for distinct singular values, u and v from the full
# decomposition, whose own rule gives the second order
_USV = "np.linalg.svd(x, full_matrices=False)"
defvjp(np.linalg.svdvals, "x", name="np.linalg.svdvals",
       jvp={"x": f"real_input(np.sum({_USV}[0] * (t @ np.swapaxes({_USV}[2], -1, -2)), axis=-2), x, "
                 f"'np.linalg.svdvals')"},
       x=f"real_input(({_USV}[0] * np.expand_dims(g, -2)) @ {_USV}[2], x, 'np.linalg.svdvals')")

# --- cumulative sums and products: include_initial puts the empty sum (product) first -------
_AX = "(0 if isinstance(axis, type(None)) else axis)"
_AFTER_FIRST = f"(np.delete(g, 0, axis={_AX}) if include_initial else g)"
defvjp(np.cumulative_sum, "x, *, axis=None, dtype=None, out=None, include_initial=False",
       name="np.cumulative_sum", linear="joint", x=f"cumsum_grad({_AFTER_FIRST}, x, {_AX})")
_CUMPROD_T = f"cumprod_jvp(t, x, {_AX})"
defvjp(np.cumulative_prod, "x, *, axis=None, dtype=None, out=None, include_initial=False",
       name="np.cumulative_prod",
       jvp={"x": f"np.insert({_CUMPROD_T}, 0, 0.0, axis={_AX}) if include_initial else {_CUMPROD_T}"},
       x=f"cumprod_grad({_AFTER_FIRST}, x, {_AX})")

# --- joins, splits and edits ----------------------------------------------------------------
defvjp(np.unstack, "x, *, axis=0", name="np.unstack", returns_container=True, linear="joint",
       x="np.stack(g, axis=axis)")
defvjp(np.delete, "arr, obj, axis=None", linear="joint", obj=None, arr="delete_grad(g, arr, obj, axis)")
defvjp(np.insert, "arr, obj, values, axis=None", linear="joint", obj=None,
       arr="insert_grad(g, arr, obj, values, axis, 0)", values="insert_grad(g, arr, obj, values, axis, 1)")
defvjp(rt.delete_grad, "ct, arr, obj, axis=None", linear="joint", ct="np.delete(g, obj, axis)")
defvjp(rt.insert_grad, "ct, arr, obj, values, axis=None, part=0", linear="joint",
       ct="np.insert(g, obj, np.zeros_like(values), axis) if part == 0 else "
          "np.insert(np.zeros_like(arr), obj, g, axis)")

# --- divmod: the quotient is piecewise constant, the remainder x - floor(x / y) y ---------------
for quotient_and_remainder in (builtins.divmod, np.divmod):
    defvjp(quotient_and_remainder, "x, y", returns_container=True,
           jvp={"x": "(np.zeros_like(ans[1]), t * np.ones_like(ans[1]))",
                "y": "(np.zeros_like(ans[1]), -t * np.floor_divide(x, y))"},
           x="unbroadcast(g[1], x)", y="unbroadcast(-g[1] * np.floor_divide(x, y), y)")

# --- grids: logspace is base ** linspace, geomspace start (stop / start) ** (k / (num - 1)) ----------
_NOT_BASE = "s2sad differentiates np.logspace with respect to start and stop, not base; pass base as a constant"
_LIN = "np.linspace({}, {}, num, endpoint, axis=axis)"
defvjp(np.logspace, "start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0",
       refuse={"base": _NOT_BASE},
       jvp={"start": f"ans * np.log(base) * {_LIN.format('t', 'np.zeros_like(t)')}",
            "stop": f"ans * np.log(base) * {_LIN.format('np.zeros_like(t)', 't')}"},
       start="linspace_grad(g * ans * np.log(base), start, num, endpoint, False, axis, False)",
       stop="linspace_grad(g * ans * np.log(base), stop, num, endpoint, False, axis, True)")
defvjp(np.geomspace, "start, stop, num=50, endpoint=True, dtype=None, axis=0",
       jvp={"start": f"ans * {_LIN.format('t / start', 'np.zeros_like(t)')}",
            "stop": f"ans * {_LIN.format('np.zeros_like(t)', 't / stop')}"},
       start="real_input(linspace_grad(g * ans, start, num, endpoint, False, axis, False) / start, start, "
             "'np.geomspace')",
       stop="real_input(linspace_grad(g * ans, stop, num, endpoint, False, axis, True) / stop, stop, "
            "'np.geomspace')")

# --- polynomial coefficients (highest power first, 1-d) -----------------------------------------
defvjp(np.polyder, "p, m=1", linear="joint", p="polyder_grad(g, p, m)")
# the integration constants k are added, not scaled: a tangent integrates with none
defvjp(np.polyint, "p, m=1, k=None", jvp={"p": "np.polyint(t, m)"},
       refuse={"k": "s2sad differentiates np.polyint with respect to p, not the integration constants k; "
                    "add the constants to the result's last coefficients instead"},
       p="polyint_grad(g, p, m)")
defvjp(rt.polyder_grad, "ct, p, m=1", linear="joint", ct="np.polyder(g, m)")
defvjp(rt.polyint_grad, "ct, p, m=1", linear="joint", ct="np.polyint(g, m)")
_TAIL = "np.reshape(g[np.size(g) - np.size({0}):], np.shape({0}))"
defvjp(np.polyadd, "a1, a2", linear="joint", a1=_TAIL.format("a1"), a2=_TAIL.format("a2"))
defvjp(np.polysub, "a1, a2", linear="joint", a1=_TAIL.format("a1"), a2=f"-{_TAIL.format('a2')}")
# polymul convolves the coefficients after NumPy strips their leading zeros (polymul_operand)
defvjp(np.polymul, "a1, a2", linear="each",
       a1="convolve_grad(g, polymul_operand(a1), polymul_operand(a2), 'full')",
       a2="convolve_grad(g, polymul_operand(a2), polymul_operand(a1), 'full')")
defvjp(rt.polymul_operand, "p", linear="joint", p="g")

# --- math.prod: the items' product, each item's gradient the product of the others -------------
defvjp(math.prod, "iterable, *, start=1", containers=("iterable",),
       refuse={"start": "s2sad differentiates math.prod with respect to the items, not start; multiply "
                        "the product by the value instead"},
       jvp={"iterable": "np.sum(prod_grad(start * np.ones_like(ans), prod_operands(iterable), 0) "
                        "* prod_operands(t), axis=0)"},
       iterable="prod_operands_grad(prod_grad(g * start, prod_operands(iterable), 0), iterable)")
defvjp(rt.prod_operands, "items", containers=("items",), linear="joint", items="prod_operands_grad(g, items)")
defvjp(rt.prod_operands_grad, "ct, items", returns_container=True, linear="joint", ct="prod_operands(g)")

# --- polyfit: least squares, linear in y (the coefficients pinv(vander(x)) y, for distinct x) ----------
_FIT_ONLY = "s2sad differentiates np.polyfit(x, y, deg) with respect to y at {} only; leave it at its default"
defvjp(np.polyfit, "x, y, deg, rcond=None, full=False, w=None, cov=False", linear="joint", deg=None,
       refuse={"x": "s2sad differentiates np.polyfit with respect to y, not the sample points x; pass x "
                    "as a constant"},
       unsupported={name: _FIT_ONLY.format(f"{name}={default}")
                    for name, default in (("rcond", "None"), ("full", "False"), ("w", "None"), ("cov", "False"))},
       y="np.swapaxes(np.linalg.pinv(np.vander(x, deg + 1)), -1, -2) @ g")

# --- integer functions: no gradient ------------------------------------------------------------------
REGISTRY.declare_nondifferentiable(np.left_shift, np.right_shift, np.bitwise_count, np.gcd, np.lcm, np.isdtype,
                                   rt.index_of_item)
