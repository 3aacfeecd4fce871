"""Gradients of reductions (sums, means, maxima and minima, variances, products, medians),
of cumulative sums and products, and of sorting."""
from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import as_dtype, dtype_kind
from .foreign import in_numpy, is_foreign, refuse_different, size
from .shapes import undo_permutation
from .stepping import real_only


def expand_reduced(g: Any, ndim: int, axis: Any, keepdims: bool) -> Any:
    """Give a reduced gradient back the axes that the reduction removed."""
    if keepdims or axis is None and np.ndim(g) == ndim:
        return g
    if axis is None:
        return np.reshape(g, (1,) * ndim)
    if ndim == 0:  # (NumPy reduces a 0-d array over axis 0 or -1: over nothing)
        return g
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return np.expand_dims(g, tuple(a % ndim for a in axes))


def reduce_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.sum(x, axis, keepdims=keepdims)``: g broadcast back to x.

    For a large array whose rows are long (or a full sum), the result is a read-only
    broadcast view, not a copy: generated code never updates it in place, and wraps it
    in :func:`grad_like` before returning it.  Otherwise a copy is cheaper to make and
    to compute with (NumPy loops over short rows of a view slowly).
    """
    shape = np.shape(x)
    if type(g) is not np.ndarray and type(g) is not float and is_foreign(g) or (
            type(x) is not np.ndarray and is_foreign(x)):
        return _filled(expand_reduced(g, len(shape), axis, keepdims), x, shape)
    if not shape:  # a number: a number, not a 0-d array
        return np.asarray(g)[()]
    if type(g) is float and type(x) is np.ndarray and x.dtype.kind == "f":
        g = np.asarray(g, x.dtype)  # a plain number (the seed 1.0): the gradient takes x's dtype
    g = np.asarray(g) if axis is None and np.ndim(g) == 0 else expand_reduced(g, len(shape), axis, keepdims)
    if np.size(x) >= _VIEW_SIZE and (axis is None or shape[-1] >= _VIEW_ROW):
        return _broadcast_view(g, shape)
    out = np.empty(shape, dtype=np.result_type(g))
    out[...] = g
    return out


_VIEW_SIZE, _VIEW_ROW = 4096, 64  # reduce_grad returns views of at least so many entries, rows


def _filled(g: Any, x: Any, shape: tuple[int, ...]) -> Any:
    """``g`` broadcast to ``shape``, as a new array of another library: of x's library (and
    Dask chunks) when ``x`` is that library's array, else of g's."""
    if type(g) is float and dtype_kind(x) == "f":
        g = np.asarray(g, dtype=x.dtype, like=x) if is_foreign(x) else np.asarray(g, x.dtype)
    dtype = np.result_type(g)
    if is_foreign(x):
        return np.zeros_like(x, dtype=dtype) + g
    return np.zeros_like(g, shape=shape, dtype=dtype) + g


def _broadcast_view(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``np.broadcast_to(g, shape)`` (read-only), for g of no axes or of len(shape) axes,
    made directly when g is contiguous (np.broadcast_to costs microseconds)."""
    if g.ndim and g.ndim != len(shape) or not g.flags.c_contiguous:
        return np.broadcast_to(g, shape)
    strides = (0,) * len(shape) if not g.ndim else tuple(
        [0 if n == 1 else step for n, step in zip(g.shape, g.strides)])
    out = np.ndarray(shape, g.dtype, g, 0, strides)
    out.flags.writeable = False
    return out


def mean_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.mean(x, axis, keepdims=keepdims)``."""
    if axis is None:
        return reduce_grad(g / (x.size if type(x) is np.ndarray else size(x)), x, None, keepdims)
    shape = np.shape(x)
    count = 1
    for i, n in enumerate(shape):
        if _reduced(i, len(shape), axis):
            count *= n
    return reduce_grad(g / count, x, axis, keepdims)


def _reduced(i: int, ndim: int, axis: Any) -> bool:
    if axis is None:
        return True
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return any(a % ndim == i for a in axes)


def _count(shape: tuple[int, ...], axis: Any) -> int:
    """How many entries of an array of ``shape`` a reduction over ``axis`` combines."""
    count = 1
    for i, n in enumerate(shape):
        if _reduced(i, len(shape), axis):
            count *= n
    return count


def list_as_array(x: Any) -> Any:
    """A list or tuple (``np.max([a, 2 * b])``) as the array NumPy makes of it; else ``x``."""
    return np.asarray(x) if isinstance(x, (list, tuple)) else x


def extremum_grad(g: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of max/min: shared equally among the entries that tie for it."""
    real_only("a maximum or minimum", x)
    x = list_as_array(x)
    ndim = np.ndim(x)
    ans = expand_reduced(ans, ndim, axis, keepdims)
    mask = as_dtype(x == ans, np.result_type(g, x))
    count = np.sum(mask, axis=axis, keepdims=True)
    return expand_reduced(g, ndim, axis, keepdims) * mask / count


def extremum_jvp(t: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Tangent of max/min: the mean of the tangent over the entries that tie for it."""
    real_only("a maximum or minimum", x)
    x, t = list_as_array(x), list_as_array(t)
    ndim = np.ndim(x)
    mask = as_dtype(x == expand_reduced(ans, ndim, axis, keepdims), np.result_type(t, x))
    count = np.sum(mask, axis=axis, keepdims=keepdims)
    return np.sum(t * mask, axis=axis, keepdims=keepdims) / count


def _extremum_shares(x: Any, ans: Any, axis: Any, keepdims: bool, initial: Any, where: Any,
                     dtype: Any) -> tuple[Any, Any, Any]:
    """For max/min with ``initial=`` and ``where=``: where the entries tie for the result (and
    may), whether ``initial`` ties for it, and how many share it (at least 1)."""
    x = np.asarray(x)
    m = expand_reduced(ans, x.ndim, axis, keepdims)
    ties = np.asarray(np.logical_and(x == m, where), dtype=dtype)
    initial_ties = np.zeros_like(m, dtype=dtype) if initial is None else np.asarray(initial == m, dtype=dtype)
    count = np.sum(ties, axis=axis, keepdims=True) + initial_ties
    return ties, initial_ties, np.maximum(count, 1)


def extremum_where_grad(g: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False,
                        initial: Any = None, where: Any = True) -> Any:
    """Gradient for ``x`` of ``np.max(x, axis, initial=initial, where=where)`` (or min): shared
    equally among the entries that tie for the result where ``where`` holds (and ``initial``
    if it ties too); none elsewhere."""
    ties, _, count = _extremum_shares(x, ans, axis, keepdims, initial, where, np.result_type(g, x))
    return expand_reduced(g, ties.ndim, axis, keepdims) * ties / count


def extremum_initial_grad(g: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False,
                          initial: Any = None, where: Any = True) -> Any:
    """Gradient for ``initial`` of ``np.max(x, axis, initial=initial, where=where)`` (or min),
    in the result's shape: ``g`` where ``initial`` is the result (shared at a tie)."""
    _, initial_ties, count = _extremum_shares(x, ans, axis, keepdims, initial, where,
                                              np.result_type(g, x, initial))
    return g * np.reshape(initial_ties / count, np.shape(ans))


def var_grad(g: Any, x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """Gradient of ``np.var(x, axis, ddof=ddof, keepdims=keepdims)``: 2 g (x - mean) / (n - ddof)."""
    real_only("np.var", x)
    shape = np.shape(x)
    centered = x - np.mean(x, axis=axis, keepdims=True)
    return 2 * expand_reduced(g, len(shape), axis, keepdims) * centered / (_count(shape, axis) - ddof)


def prod_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.prod(x, axis)``: g times the product of the other entries (exact at zeros)."""
    ndim = np.ndim(x)
    reduced = [i for i in range(ndim) if _reduced(i, ndim, axis)]
    kept = [i for i in range(ndim) if i not in reduced]
    moved = np.transpose(x, kept + reduced)
    rows = np.reshape(moved, np.shape(moved)[:len(kept)] + (-1,))
    ones = np.ones_like(rows[..., :1])
    before = np.cumprod(np.concatenate([ones, rows[..., :-1]], axis=-1), axis=-1)
    after = np.flip(np.cumprod(np.concatenate([ones, np.flip(rows[..., 1:], -1)], axis=-1), axis=-1), -1)
    others = np.transpose(np.reshape(before * after, np.shape(moved)), undo_permutation(kept + reduced))
    return expand_reduced(g, ndim, axis, keepdims) * others


def cumsum_grad(g: Any, x: Any, axis: Any = None) -> Any:
    """Gradient of ``np.cumsum(x, axis)``: the cumulative sum of g taken backwards."""
    return np.reshape(np.flip(np.cumsum(np.flip(g, axis), axis), axis), np.shape(x))


def cumprod_grad(g: Any, x: Any, axis: Any = None) -> Any:
    """Gradient of ``np.cumprod(x, axis)``, exact where x has zeros (quadratic in the axis length)."""
    shape = np.shape(x)
    if axis is None or np.ndim(x) == 0:  # (a 0-d x's axis 0: the vector of its one item)
        x, axis = np.ravel(x), 0
    x, g = np.moveaxis(x, axis, -1), np.moveaxis(g, axis, -1)
    full = np.ones((np.shape(x)[-1],) * 2, dtype=bool)
    rows = np.expand_dims(x, -2)  # rows[..., i, k] = x[..., k]
    before = np.prod(np.where(np.tril(full, -1), rows, 1), axis=-1)  # x[k] for k < i
    between = np.cumprod(np.where(np.triu(full, 1), rows, 1), axis=-1)  # [i, j]: x[k], i < k <= j
    later = np.sum(np.where(np.triu(full), np.expand_dims(g, -2) * between, 0), axis=-1)
    return np.reshape(np.moveaxis(before * later, -1, axis), shape)


def cumprod_jvp(t: Any, x: Any, axis: Any = None) -> Any:
    """Tangent of ``np.cumprod(x, axis)``, exact where x has zeros (quadratic in the axis length)."""
    if axis is None or np.ndim(x) == 0:
        x, t, axis = np.ravel(x), np.ravel(t), 0
    x, t = np.moveaxis(x, axis, -1), np.moveaxis(t, axis, -1)
    full = np.ones((np.shape(x)[-1],) * 2, dtype=bool)
    rows = np.expand_dims(x, -2)  # rows[..., i, k] = x[..., k]
    before = np.prod(np.where(np.tril(full, -1), rows, 1), axis=-1)  # x[k] for k < i
    between = np.cumprod(np.where(np.triu(full, 1), rows, 1), axis=-1)  # [i, j]: x[k], i < k <= j
    out = np.sum(np.where(np.triu(full), np.expand_dims(t * before, -1) * between, 0), axis=-2)
    return np.moveaxis(out, -1, axis)


def ptp_grad(g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Gradient of ``np.ptp(x, axis)``: the max's gradient minus the min's, each shared among ties."""
    top = np.max(x, axis=axis, keepdims=keepdims)
    bottom = np.min(x, axis=axis, keepdims=keepdims)
    return extremum_grad(g, x, top, axis, keepdims) - extremum_grad(g, x, bottom, axis, keepdims)


def median_grad(g: Any, a: Any, axis: Any = None, keepdims: bool = False, skipnan: bool = False) -> Any:
    """Gradient of ``np.median(a, axis)``: ``g`` to the middle entry, or half to each of the
    two middle entries (their positions in sorted order); with ``skipnan``, of
    ``np.nanmedian``: the middle of the entries that are not NaN (which sort last)."""
    a, g = in_numpy(np.asarray(a), g)
    flat = axis is None
    x = np.ravel(a) if flat else _last(a, (axis,) if np.ndim(axis) == 0 else tuple(axis))
    n = x.shape[-1]
    count = np.sum(~np.isnan(x), axis=-1, keepdims=True) if skipnan else np.full(x.shape[:-1] + (1,), n)
    place = np.arange(n)
    weights = (0.5 * (place == (count - 1) // 2) + 0.5 * (place == count // 2)) * (count > 0)
    order = np.argsort(x, axis=-1, kind="stable")
    grad_sorted = np.expand_dims(np.reshape(g, x.shape[:-1]), -1) * weights.astype(np.result_type(a, g, 1.0))
    out = np.zeros_like(grad_sorted)
    np.put_along_axis(out, order, grad_sorted, axis=-1)
    if flat:
        return np.reshape(out, a.shape)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = tuple(ax % a.ndim for ax in axes)
    rest = [i for i in range(a.ndim) if i not in axes]
    out = np.reshape(out, tuple(a.shape[i] for i in rest) + tuple(a.shape[i] for i in axes))
    return np.transpose(out, undo_permutation(rest + list(axes)))


def _last(a: np.ndarray, axis: Any) -> np.ndarray:
    """``a`` with the axes ``axis`` (a tuple) moved to the end and merged into one."""
    axes = tuple(ax % a.ndim for ax in axis)
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = np.transpose(a, rest + list(axes))
    return np.reshape(moved, moved.shape[:len(rest)] + (-1,))


def sort_grad(g: Any, x: Any, axis: Any = -1) -> Any:
    """Gradient of ``np.sort(x, axis)``: g back in x's order; equal entries share their gradients."""
    real_only("np.sort", x)
    shape = np.shape(x)
    if axis is None or np.ndim(x) == 0:  # (a 0-d x's axis 0: the vector of its one item)
        x, axis = np.ravel(x), 0
    x, g = np.moveaxis(x, axis, -1), np.moveaxis(g, axis, -1)
    order = np.argsort(x, axis=-1, kind="stable")
    if type(order) is np.ndarray:  # (NumPy sorted: x's library does not)
        x, g = in_numpy(x, g)
    mean = _tie_means(np.take_along_axis(x, order, axis=-1), g)
    out = np.empty_like(g)
    np.put_along_axis(out, order, mean.astype(out.dtype), axis=-1)
    return np.reshape(np.moveaxis(out, -1, axis), shape)


def sort_jvp(t: Any, x: Any, axis: Any = -1) -> Any:
    """Tangent of ``np.sort(x, axis)``: t in sorted order; equal entries share their tangents."""
    real_only("np.sort", x)
    if axis is None or np.ndim(x) == 0:
        x, t, axis = np.ravel(x), np.ravel(t), 0
    x, t = np.moveaxis(x, axis, -1), np.moveaxis(t, axis, -1)
    order = np.argsort(x, axis=-1, kind="stable")
    if type(order) is np.ndarray:  # (NumPy sorted: x's library does not)
        x, t = in_numpy(x, t)
    moved = np.take_along_axis(np.broadcast_to(t, np.shape(x)), order, axis=-1)
    mean = _tie_means(np.take_along_axis(x, order, axis=-1), moved)
    return np.moveaxis(mean.astype(moved.dtype), -1, axis)


def _tie_means(ordered: Any, v: Any) -> Any:
    """``v`` (in the sorted order of ``ordered`` along the last axis) with each run of equal
    values of ``ordered`` sharing the mean of its entries."""
    starts = np.concatenate([np.ones_like(ordered[..., :1], dtype=bool),
                             ordered[..., 1:] != ordered[..., :-1]], axis=-1)
    n = np.shape(ordered)[-1]
    rows = np.reshape(np.arange(np.size(ordered) // max(n, 1)), np.shape(ordered)[:-1] + (1,)) * n
    groups = np.ravel(np.cumsum(starts, axis=-1) - 1 + rows)  # tie groups, numbered across rows
    mean = np.bincount(groups, weights=np.ravel(v))[groups] / np.bincount(groups)[groups]
    return np.reshape(mean, np.shape(v))


def partition_indices(a: Any, ans: Any, axis: Any = -1) -> Any:
    """Indices ``i`` along ``axis`` with ``np.take_along_axis(a, i, axis)`` equal to ``ans``,
    a permutation of ``a`` (``np.partition``'s result)."""
    if axis is None:
        a, axis = np.ravel(a), 0
    order = np.argsort(a, axis=axis, kind="stable")
    rank = np.argsort(np.argsort(ans, axis=axis, kind="stable"), axis=axis, kind="stable")
    return np.take_along_axis(order, rank, axis=axis)


def accumulate_indices(a: Any, ans: Any, axis: int = 0) -> Any:
    """Where each entry of ``np.maximum.accumulate(a, axis)`` (or of minimum's: ``ans``) was read:
    the last index along ``axis`` up to it where ``a`` reaches the running extremum."""
    a = np.asarray(a)
    shape = [1] * a.ndim
    shape[axis] = a.shape[axis]
    positions = np.reshape(np.arange(a.shape[axis]), shape)
    return np.maximum.accumulate(np.where(a == ans, positions, 0), axis=axis)


def _quantile_weights(q: Any, n: int, method: str, percent: bool) -> Any:
    """The weights of the ``n`` sorted entries whose sum np.quantile (np.percentile) returns,
    for each q (shape ``q.shape + (n,)``).  Every method reads one sorted entry or interpolates
    between two neighbours, so the quantile of the places 0, 1, ... n - 1 is the place read
    first plus the weight of the next one."""
    at = np.asarray((np.percentile if percent else np.quantile)(np.arange(n, dtype=float), q, method=method))
    low = np.expand_dims(np.clip(np.floor(at), 0, n - 1).astype(int), -1)
    frac = np.expand_dims(at, -1) - low
    places = np.arange(n)
    return (places == low) * (1.0 - frac) + (places == low + 1) * frac


def _quantile_setup(a: Any, q: Any, axis: Any, method: str, percent: bool, skipnan: bool) -> tuple[Any, ...]:
    """The entries of ``a`` as rows to reduce (the axes of ``axis`` merged last), each row's
    sort order, and the weights of its sorted entries (shape ``q.shape + (rows, n)``)."""
    if percent and axis is None and np.ndim(a) == 1:
        refuse_different("np.percentile", a)
    a = np.asarray(a)
    axes = tuple(range(a.ndim)) if axis is None else tuple(int(ax) % a.ndim for ax in np.atleast_1d(axis))
    moved = _last(a, axes)
    rows = np.reshape(moved, (-1, moved.shape[-1]))
    n, qs = rows.shape[-1], np.shape(q)
    if skipnan:  # the rows' own counts of entries that are not NaN (which sort last)
        count = np.sum(~np.isnan(rows), axis=-1)
        weights = np.zeros(qs + rows.shape)
        for c in np.unique(count[count > 0]):
            weights[..., count == c, :c] = np.expand_dims(_quantile_weights(q, int(c), method, percent), -2)
    else:
        weights = np.expand_dims(_quantile_weights(q, n, method, percent), -2)
    return a, axes, moved.shape, rows, np.argsort(rows, axis=-1, kind="stable"), weights


def quantile_grad(g: Any, a: Any, q: Any, axis: Any = None, keepdims: bool = False, method: str = "linear",
                  percent: bool = False, skipnan: bool = False) -> Any:
    """Gradient of ``np.quantile(a, q, axis, method=method, keepdims=keepdims)`` (np.percentile
    with ``percent``, the NaN-ignoring ones with ``skipnan``): ``g`` to the sorted entries the
    result interpolates, with their weights."""
    real_only("np.quantile", a)
    a, axes, shape, rows, order, weights = _quantile_setup(a, q, axis, method, percent, skipnan)
    qs = np.shape(q)
    g = np.reshape(in_numpy(g)[0], qs + (rows.shape[0], 1))
    in_order = np.sum(g * weights, axis=tuple(range(len(qs)))).astype(np.result_type(a, g, 1.0))
    out = np.zeros_like(in_order)
    np.put_along_axis(out, order, in_order, axis=-1)
    rest = [i for i in range(a.ndim) if i not in axes]
    out = np.reshape(out, tuple(a.shape[i] for i in rest) + tuple(a.shape[i] for i in axes))
    return np.transpose(out, undo_permutation(rest + list(axes)))


def quantile_jvp(t: Any, a: Any, q: Any, axis: Any = None, keepdims: bool = False, method: str = "linear",
                 percent: bool = False, skipnan: bool = False) -> Any:
    """Tangent of ``np.quantile(a, q, ...)`` (see :func:`quantile_grad`): the weighted sum of
    the entries of ``t`` at the sorted entries of ``a`` the result interpolates."""
    real_only("np.quantile", a)
    a, axes, shape, rows, order, weights = _quantile_setup(a, q, axis, method, percent, skipnan)
    t = np.reshape(_last(np.broadcast_to(in_numpy(t)[0], a.shape), axes), rows.shape)
    if skipnan:
        t = np.where(np.isnan(rows), 0.0, t)
    out = np.sum(weights * np.take_along_axis(t, order, axis=-1), axis=-1)
    kept = tuple(1 if i in axes else a.shape[i] for i in range(a.ndim)) if keepdims else shape[:-1]
    return np.reshape(out, np.shape(q) + kept).astype(np.result_type(a, t, 1.0))
