"""Slopes and masks of elementwise functions: division, powers and logarithms, maxima
and minima of two values, np.clip, np.where, np.select and np.interp."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .broadcast import unbroadcast
from .dtypes import as_dtype
from .reductions import list_as_array
from .stepping import real_only


def safe_divide(x: Any, y: Any) -> Any:
    """``x / y``, and 0 where ``y`` is 0."""
    zero = np.equal(y, 0)
    return np.where(zero, 0, x) / np.where(zero, 1, y)


def pow_slope(x: Any, y: Any, n: int = 1) -> Any:
    """``y (y - 1) ... (y - n + 1) x ** (y - n)``, the n-th derivative of ``x ** y`` in x:
    0 where that coefficient is 0 (``x ** 0`` is the constant 1, also at x = 0), and NumPy's
    inf, not ZeroDivisionError, at x = 0 where the derivative is infinite."""
    coefficient = y
    for k in range(1, n):
        coefficient = coefficient * (y - k)
    return coefficient * np.power(x, np.where(coefficient == 0, 1, y - n))


#: Below this |x|, np.sinc's derivatives are summed from its Taylor series (the closed form
#: cancels there, and is 0/0 at 0); SINC_TERMS terms reach float64 precision.
SINC_SERIES_BELOW = 0.25
SINC_TERMS = 12


def sinc_series_coefficient(k: int, n: int) -> float:
    """The coefficient of ``x ** (2k - n)`` in the n-th derivative of np.sinc's Taylor series."""
    return ((-1) ** k * math.pi ** (2 * k) * math.factorial(2 * k)
            / math.factorial(2 * k - n) / math.factorial(2 * k + 1))


def sinc_slope(x: Any, n: int = 1) -> Any:
    """The n-th derivative of ``np.sinc`` at ``x`` (n >= 1), exact at 0 at every order: the
    Taylor series near 0, else ``x s_n = pi^(n-1) sin(pi x + n pi / 2) - n s_(n-1)``."""
    near = np.abs(x) < SINC_SERIES_BELOW
    small, large = np.where(near, x, SINC_SERIES_BELOW), np.where(near, 1.0, x)
    first = (n + 1) // 2
    series = sum(sinc_series_coefficient(k, n) * small ** (2 * k - n) for k in range(first, first + SINC_TERMS))
    slope = np.sinc(large)
    for m in range(1, n + 1):
        slope = (math.pi ** (m - 1) * np.sin(math.pi * large + m * math.pi / 2) - m * slope) / large
    return np.where(near, series, slope)[()]


def log_or_zero(x: Any, y: Any = None) -> Any:
    """``np.log(x)`` as the derivative of ``x ** y`` in y: 0 where x is 0, and 0 throughout
    when y has an integer type (an integer has no derivative, so its tangent, always zero,
    must not meet ``log`` of a negative x); a float stays a float."""
    if isinstance(y, (bool, int, np.integer)) or getattr(y, "dtype", np.dtype(float)).kind in "biu":
        return np.zeros_like(x, dtype=float) if np.ndim(x) else 0.0
    out = np.log(np.where(x == 0, 1, x))
    return float(out) if isinstance(x, (int, float)) else out


def balanced_eq(x: Any, ans: Any, y: Any) -> Any:
    """Where ``x`` produced ``ans``: 1, or 1/2 where ``x`` and ``y`` tie."""
    real_only("a maximum or minimum", x, y)
    x, y = list_as_array(x), list_as_array(y)  # np.maximum([a, b], c): the list as NumPy reads it
    dtype = np.result_type(x, y)
    return as_dtype(x == ans, dtype) / as_dtype(1 + (x == y), dtype)


def clip_mask(a: Any, a_min: Any, a_max: Any) -> Any:
    """Where ``np.clip(a, a_min, a_max)`` passes ``a`` through (strictly inside the bounds)."""
    real_only("np.clip", a)
    lo = True if a_min is None else np.greater(a, a_min)
    hi = True if a_max is None else np.less(a, a_max)
    return np.logical_and(lo, hi)


def clip_min_mask(a: Any, a_min: Any, a_max: Any) -> Any:
    """Where ``np.clip(a, a_min, a_max)`` is ``a_min``: ``a`` at or below it, and ``a_min``
    below ``a_max`` (with clip_mask and clip_max_mask, every element has one source)."""
    at = np.less_equal(a, a_min)
    return at if a_max is None else np.logical_and(at, np.less(a_min, a_max))


def clip_max_mask(a: Any, a_min: Any, a_max: Any) -> Any:
    """Where ``np.clip(a, a_min, a_max)`` is ``a_max``: ``a`` or ``a_min`` at or above it."""
    at = np.greater_equal(a, a_max)
    return at if a_min is None else np.logical_or(at, np.greater_equal(a_min, a_max))


def branch_mask(mask: Any, x: Any) -> Any:
    """Where ``x``'s gradient may be nonzero when the output reads ``x`` only where ``mask``
    holds (``np.where``'s branches): the mask in a shape that broadcasts to x's, reduced by
    ``any`` over the axes along which ``x`` was broadcast against it."""
    shape, mshape = np.shape(x), np.shape(mask)
    if len(mshape) < len(shape):  # (as broadcasting does: ones in front)
        mask = np.reshape(mask, (1,) * (len(shape) - len(mshape)) + mshape)
        mshape = np.shape(mask)
    extra = len(mshape) - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and mshape[i + extra] != 1)
    if not axes:
        return mask
    reduced = np.any(mask, axis=axes, keepdims=True)
    return np.reshape(reduced, np.shape(reduced)[extra:])  # each axis 1 or x's: it broadcasts to x


def select_grad(g: Any, condlist: Any, choicelist: Any) -> list[Any]:
    """Gradient of ``np.select(condlist, choicelist)`` for each choice: ``g`` where that
    choice's condition is the first that holds."""
    taken = np.zeros(np.shape(g), dtype=bool)
    out = []
    for cond, choice in zip(condlist, choicelist):
        mask = np.logical_and(cond, np.logical_not(taken))
        out.append(unbroadcast(np.where(mask, g, 0), choice))
        taken = np.logical_or(taken, cond)
    return out


def _interp_cells(x: Any, xp: Any) -> tuple[Any, Any, Any, Any]:
    """For np.interp: each x's cell i (xp[i] <= x <= xp[i + 1]), its place w in the cell, and
    where x is below and above the range of xp."""
    x, xp = np.asarray(x), np.asarray(xp)
    i = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, len(xp) - 2)
    w = (x - xp[i]) / (xp[i + 1] - xp[i])
    return i, w, x < xp[0], x > xp[-1]


def interp_slope(x: Any, xp: Any, fp: Any) -> Any:
    """The derivative of ``np.interp(x, xp, fp)`` in x: the slope of x's cell (from the left
    at a knot), 0 outside the range of xp."""
    i, _, below, above = _interp_cells(x, xp)
    xp, fp = np.asarray(xp), np.asarray(fp)
    slope = (fp[i + 1] - fp[i]) / (xp[i + 1] - xp[i])
    return np.where(below | above, 0.0, slope)[()]


def interp_slope_grad(g: Any, x: Any, xp: Any, fp: Any) -> Any:
    """The transpose of :func:`interp_slope` as a (linear) function of ``fp``."""
    i, _, below, above = _interp_cells(x, xp)
    xp = np.asarray(xp)
    h = np.where(below | above, 0.0, np.broadcast_to(g, np.shape(i)) / (xp[i + 1] - xp[i]))
    out = np.zeros(np.shape(fp), dtype=np.result_type(g, list_as_array(fp), 1.0))
    np.add.at(out, i, -h)
    np.add.at(out, i + 1, h)
    return out


def interp_grad_fp(g: Any, x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None) -> Any:
    """Gradient of ``np.interp(x, xp, fp, left, right)`` for ``fp``: ``g`` shared by the two
    ends of x's cell (all of it to an end value outside the range, unless left/right given)."""
    i, w, below, above = _interp_cells(x, xp)
    g = np.broadcast_to(g, np.shape(i))
    out = np.zeros(np.shape(fp), dtype=np.result_type(g, list_as_array(fp), 1.0))
    inside = ~(below | above)
    np.add.at(out, i, np.where(inside, g * (1 - w), 0.0))
    np.add.at(out, i + 1, np.where(inside, g * w, 0.0))
    if left is None:
        out[0] += np.sum(np.where(below, g, 0.0))
    if right is None:
        out[-1] += np.sum(np.where(above, g, 0.0))
    return out
