"""Run-time helpers for the rules of :mod:`s2sad.rules.numpy_more_rules` and
:mod:`s2sad.rules.scipy_rules`, called by generated gradient code.

Each helper has a declared rule (next to the rules that use it), so differentiating
generated code never reads a helper's source.  SciPy is imported only inside the
helpers that need it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import S2SADError, WrtError
from .runtime import check_wrt, zeros_grad

__all__ = [
    "check_wrt_item",
    "sequence_grad",
    "sequence_jvp",
    "take_along_axis_grad",
    "partition_indices",
    "median_grad",
    "block_grad",
    "meshgrid_grad",
    "meshgrid_grad_transpose",
    "convolve_full",
    "convolve_grad",
    "read_triangle",
    "cov_matrix",
    "cov_matrix_grad",
    "real_eigenvalues",
    "select_grad",
    "one_axis",
    "axis_shape",
    "interp_slope",
    "interp_slope_grad",
    "interp_grad_fp",
    "gradient_grad",
    "extremum_where_grad",
    "extremum_initial_grad",
    "lstsq_full_rank",
    "multi_dot_grad",
    "multi_dot_jvp",
    "einsum_sublists",
]


def sequence_grad(g: Any, x: Any, pairs: Any = None) -> Any:
    """Gradient of ``tuple(x)``/``list(x)``/``dict(x)``: ``g`` in the form of ``x``; for
    ``dict(pairs)``, each value's gradient in its pair (none for the keys, nor for a value
    that a later pair with the same key replaces).  With ``pairs``, the transpose of that:
    a dict ``x`` from the gradient ``g`` of those pairs."""
    if isinstance(x, dict):
        if isinstance(g, dict):
            return {k: g[k] for k in x}
        last = {pair[0]: i for i, pair in enumerate(pairs)}
        return {k: g[last[k]][1] for k in x}
    if isinstance(x, (list, tuple)) and isinstance(g, dict):
        last = {pair[0]: i for i, pair in enumerate(x)}
        return type(x)(type(pair)((0.0, g[pair[0]] if last[pair[0]] == i else zeros_grad(pair[1])))
                       for i, pair in enumerate(x))
    if isinstance(x, (list, tuple)):
        return type(x)(g)
    return np.reshape(np.asarray(list(g), dtype=np.result_type(x)), np.shape(x))


def sequence_jvp(t: Any, x: Any, out: Any) -> Any:
    """Tangent of ``out = tuple(x)``/``list(x)``/``dict(x)`` from x's tangent ``t``; for
    ``dict(pairs)``, each value's tangent under its key (the keys have none)."""
    if isinstance(out, dict) and not isinstance(x, dict):
        return {pair[0]: tangent[1] for pair, tangent in zip(x, t)}
    return type(out)(t)


def take_along_axis_grad(g: Any, arr: Any, indices: Any, axis: Any = -1) -> Any:
    """Gradient of ``np.take_along_axis(arr, indices, axis)``: g added back where it was taken."""
    arr = np.asarray(arr)
    out = np.zeros(arr.size if axis is None else arr.shape, dtype=np.result_type(g, arr))
    axis = 0 if axis is None else axis % arr.ndim
    index = list(np.ix_(*(np.arange(n) for n in np.shape(indices))))
    index[axis] = indices
    np.add.at(out, tuple(np.broadcast_arrays(*index)), g)
    return np.reshape(out, arr.shape)


def partition_indices(a: Any, ans: Any, axis: Any = -1) -> Any:
    """Indices ``i`` along ``axis`` with ``np.take_along_axis(a, i, axis)`` equal to ``ans``,
    a permutation of ``a`` (``np.partition``'s result)."""
    if axis is None:
        a, axis = np.ravel(a), 0
    order = np.argsort(a, axis=axis, kind="stable")
    rank = np.argsort(np.argsort(ans, axis=axis, kind="stable"), axis=axis, kind="stable")
    return np.take_along_axis(order, rank, axis=axis)


def median_grad(g: Any, a: Any, axis: Any = None, keepdims: bool = False, skipnan: bool = False) -> Any:
    """Gradient of ``np.median(a, axis)``: ``g`` to the middle entry, or half to each of the
    two middle entries (their positions in sorted order); with ``skipnan``, of
    ``np.nanmedian``: the middle of the entries that are not NaN (which sort last)."""
    a = np.asarray(a)
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
    return np.transpose(out, np.argsort(rest + list(axes)))


def _last(a: np.ndarray, axis: Any) -> np.ndarray:
    """``a`` with the axes ``axis`` (a tuple) moved to the end and merged into one."""
    axes = tuple(ax % a.ndim for ax in axis)
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = np.transpose(a, rest + list(axes))
    return np.reshape(moved, moved.shape[:len(rest)] + (-1,))


def block_grad(g: Any, arrays: Any) -> Any:
    """Gradient of ``np.block(arrays)``: ``g`` cut into the nested lists of ``arrays``."""
    depth, item = 0, arrays
    while isinstance(item, list):
        depth, item = depth + 1, item[0] if item else None

    def cut(g: Any, item: Any, level: int) -> Any:
        if not isinstance(item, list):
            return np.reshape(g, np.shape(item))
        axis = level - depth
        out, start = [], 0
        for sub in item:
            shape = np.shape(np.block(sub)) if isinstance(sub, list) else np.shape(sub)
            size = shape[axis] if len(shape) >= -axis else 1
            index = (slice(None),) * (np.ndim(g) + axis) + (slice(start, start + size),)
            out.append(cut(g[index], sub, level + 1))
            start += size
        return out

    return cut(np.asarray(g), arrays, 0)


def _grid_axis(k: int, ndim: int, indexing: str) -> int:
    return (1 - k if k < 2 else k) if indexing == "xy" and ndim >= 2 else k


def meshgrid_grad(g: Any, k: int, indexing: str, x1: Any, x2: Any = None, x3: Any = None) -> Any:
    """Gradient of ``np.meshgrid(x1, x2, x3)`` for ``x_k``: its grid summed over the other axes."""
    grid = np.asarray(g[k])
    axis = _grid_axis(k, grid.ndim, indexing)
    summed = np.sum(grid, axis=tuple(i for i in range(grid.ndim) if i != axis))
    return np.reshape(summed, np.shape((x1, x2, x3)[k]))


def meshgrid_grad_transpose(h: Any, k: int, indexing: str, x1: Any, x2: Any = None,
                            x3: Any = None) -> Any:
    """The transpose of :func:`meshgrid_grad`: ``h`` spread along slot ``k`` of the grids."""
    grids = np.meshgrid(*(x for x in (x1, x2, x3) if x is not None), indexing=indexing)
    shape = grids[0].shape
    axis = _grid_axis(k, len(shape), indexing)
    spread = np.broadcast_to(np.reshape(h, tuple(-1 if i == axis else 1 for i in range(len(shape)))),
                             shape)
    return [spread if i == k else np.zeros_like(grid) for i, grid in enumerate(grids)]


def convolve_full(a: Any, v: Any, mode: str = "full") -> Any:
    """``np.convolve`` for 1-d arrays, ``scipy.signal.convolve`` otherwise."""
    if np.ndim(a) <= 1 and np.ndim(v) <= 1:
        return np.convolve(a, v, mode)
    from scipy import signal

    return signal.convolve(a, v, mode)


def convolve_grad(g: Any, x: Any, other: Any, mode: str = "full") -> Any:
    """Gradient for ``x`` of ``convolve(x, other, mode)``: ``g`` placed in the full output,
    correlated with ``other``."""
    shape = tuple(np.add(np.shape(x), np.shape(other)) - 1)
    full = np.zeros(shape, dtype=np.result_type(g, x, other))
    start = [(n - m) // 2 for n, m in zip(shape, np.shape(g))]
    full[tuple(slice(s, s + m) for s, m in zip(start, np.shape(g)))] = g
    flipped = np.flip(other) if np.ndim(other) else other
    return convolve_full(full, flipped, "valid").astype(full.dtype, copy=False)


def read_triangle(t: Any, lower: bool) -> Any:
    """The symmetric matrix a function that reads one triangle of ``t`` sees."""
    tri = np.tril(t) if lower else np.triu(t)
    return tri + np.swapaxes(tri, -1, -2) - tri * np.eye(np.shape(t)[-1], dtype=np.result_type(t))


def cov_matrix(cov: Any, like: Any) -> Any:
    """A covariance as ``scipy.stats.multivariate_normal`` reads it: a number times the
    identity (of the size of the last axis of ``like``, the mean; 1 without one), a vector
    on the diagonal, or (the lower triangle of) a matrix."""
    d = np.shape(like)[-1] if np.ndim(like) else 1
    if np.ndim(cov) == 0:
        return cov * np.eye(d)
    if np.ndim(cov) == 1:
        return np.diag(cov)
    return read_triangle(cov, True)


def cov_matrix_grad(g: Any, cov: Any) -> Any:
    """The transpose of :func:`cov_matrix`: a matrix gradient back in the form of ``cov``."""
    if np.ndim(cov) == 0:
        return np.trace(g)
    if np.ndim(cov) == 1:
        return np.diagonal(g).copy()
    return np.tril(g + np.swapaxes(g, -1, -2)) - g * np.eye(np.shape(g)[-1])


def real_eigenvalues(w: Any, name: str) -> Any:
    """``w`` if it is real; else an error (s2sad differentiates real eigenvalues only)."""
    if np.iscomplexobj(w) and np.any(np.imag(w) != 0):
        raise S2SADError(f"a gradient reaches {name} of a matrix with complex eigenvalues, which "
                         f"s2sad does not differentiate (real eigenvalues only)")
    return np.real(w)


def select_grad(g: Any, condlist: Any, choicelist: Any) -> list[Any]:
    """Gradient of ``np.select(condlist, choicelist)`` for each choice: ``g`` where that
    choice's condition is the first that holds."""
    from .runtime import unbroadcast

    taken = np.zeros(np.shape(g), dtype=bool)
    out = []
    for cond, choice in zip(condlist, choicelist):
        mask = np.logical_and(cond, np.logical_not(taken))
        out.append(unbroadcast(np.where(mask, g, 0), choice))
        taken = np.logical_or(taken, cond)
    return out


def one_axis(axis: Any) -> Any:
    """``axis`` if it names one axis; an error for a tuple of axes."""
    if np.ndim(axis) != 0:
        raise S2SADError(f"s2sad differentiates np.linalg.vector_norm over one axis or all of them, "
                         f"not over the axes {tuple(axis)}; reshape the array first")
    return axis


def axis_shape(a: Any, axis: int) -> tuple[int, ...]:
    """The shape that lays a 1-d array along ``axis`` of ``a``: -1 there, 1 elsewhere."""
    ndim = np.ndim(a)
    return tuple(-1 if i == axis % ndim else 1 for i in range(ndim))


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
    out = np.zeros(np.shape(fp), dtype=np.result_type(g, fp, 1.0))
    np.add.at(out, i, -h)
    np.add.at(out, i + 1, h)
    return out


def interp_grad_fp(g: Any, x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None) -> Any:
    """Gradient of ``np.interp(x, xp, fp, left, right)`` for ``fp``: ``g`` shared by the two
    ends of x's cell (all of it to an end value outside the range, unless left/right given)."""
    i, w, below, above = _interp_cells(x, xp)
    g = np.broadcast_to(g, np.shape(i))
    out = np.zeros(np.shape(fp), dtype=np.result_type(g, fp, 1.0))
    inside = ~(below | above)
    np.add.at(out, i, np.where(inside, g * (1 - w), 0.0))
    np.add.at(out, i + 1, np.where(inside, g * w, 0.0))
    if left is None:
        out[0] += np.sum(np.where(below, g, 0.0))
    if right is None:
        out[-1] += np.sum(np.where(above, g, 0.0))
    return out


def gradient_grad(g: Any, f: Any, spacing: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """Gradient of ``np.gradient(f, *spacing, axis=axis, edge_order=edge_order)`` for ``f``:
    along each axis, the transposed difference matrix applied to that axis's gradient."""
    f = np.asarray(f)
    axes = list(range(f.ndim)) if axis is None else [axis] if np.ndim(axis) == 0 else list(axis)
    grads = list(g) if len(axes) > 1 else [g]
    out = np.zeros(f.shape, dtype=np.result_type(f, *grads, 1.0))
    for k, ax in enumerate(axes):
        step = spacing[k] if len(spacing) > 1 else spacing[0] if spacing else 1.0
        matrix = np.gradient(np.eye(f.shape[ax]), step, axis=0, edge_order=edge_order)
        out += np.moveaxis(np.tensordot(matrix.T, np.moveaxis(np.asarray(grads[k]), ax, 0), axes=1), 0, ax)
    return out


def _extremum_shares(x: Any, ans: Any, axis: Any, keepdims: bool, initial: Any, where: Any,
                     dtype: Any) -> tuple[Any, Any, Any]:
    """For max/min with ``initial=`` and ``where=``: where the entries tie for the result (and
    may), whether ``initial`` ties for it, and how many share it (at least 1)."""
    from .runtime import _expand

    x = np.asarray(x)
    m = _expand(ans, x.ndim, axis, keepdims)
    ties = np.asarray(np.logical_and(x == m, where), dtype=dtype)
    initial_ties = np.zeros_like(m, dtype=dtype) if initial is None else np.asarray(initial == m, dtype=dtype)
    count = np.sum(ties, axis=axis, keepdims=True) + initial_ties
    return ties, initial_ties, np.maximum(count, 1)


def extremum_where_grad(g: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False,
                        initial: Any = None, where: Any = True) -> Any:
    """Gradient for ``x`` of ``np.max(x, axis, initial=initial, where=where)`` (or min): shared
    equally among the entries that tie for the result where ``where`` holds (and ``initial``
    if it ties too); none elsewhere."""
    from .runtime import _expand

    ties, _, count = _extremum_shares(x, ans, axis, keepdims, initial, where, np.result_type(g, x))
    return _expand(g, ties.ndim, axis, keepdims) * ties / count


def extremum_initial_grad(g: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False,
                          initial: Any = None, where: Any = True) -> Any:
    """Gradient for ``initial`` of ``np.max(x, axis, initial=initial, where=where)`` (or min),
    in the result's shape: ``g`` where ``initial`` is the result (shared at a tie)."""
    _, initial_ties, count = _extremum_shares(x, ans, axis, keepdims, initial, where,
                                              np.result_type(g, x, initial))
    return g * np.reshape(initial_ties / count, np.shape(ans))


def lstsq_full_rank(ct: Any, rank: Any, a: Any) -> Any:
    """``ct`` if ``a`` has full rank (``rank``, from np.linalg.lstsq); else an error (the least
    squares solution is differentiable where a's rank does not change, as pinv's)."""
    if rank < min(np.shape(a)[-2:]):
        raise S2SADError(f"a gradient reaches np.linalg.lstsq of a {np.shape(a)[0]}x{np.shape(a)[1]} matrix "
                         f"of rank {rank}, which s2sad does not differentiate (full rank only); "
                         f"regularize the problem (solve (a.T @ a + c * I) x = a.T @ b) instead")
    return ct


def _matrices(arrays: Any) -> list[Any]:
    """The factors of ``np.linalg.multi_dot(arrays)`` as matrices: a 1-d first one as a row,
    a 1-d last one as a column."""
    mats = [np.asarray(a) for a in arrays]
    if mats[0].ndim == 1:
        mats[0] = mats[0][None, :]
    if mats[-1].ndim == 1:
        mats[-1] = mats[-1][:, None]
    return mats


def _chain(mats: list[Any], n: int, dtype: Any) -> Any:
    """The product of ``mats``; the n x n identity for none."""
    out = np.eye(n, dtype=dtype)
    for m in mats:
        out = out @ m
    return out


def multi_dot_grad(ct: Any, arrays: Any) -> Any:
    """Gradient of ``np.linalg.multi_dot(arrays)`` for each array: ``ct`` multiplied by the
    transposed products of the factors on its left and on its right."""
    mats = _matrices(arrays)
    dtype = np.result_type(ct, *mats)
    g = np.reshape(ct, (mats[0].shape[0], mats[-1].shape[1]))
    out = []
    for k, m in enumerate(mats):
        left = _chain(mats[:k], mats[0].shape[0], dtype)
        right = _chain(mats[k + 1:], m.shape[1], dtype)
        out.append(np.reshape(left.T @ g @ right.T, np.shape(arrays[k])))
    return type(arrays)(out) if isinstance(arrays, tuple) else out


def multi_dot_jvp(t: Any, arrays: Any) -> Any:
    """Tangent of ``np.linalg.multi_dot(arrays)``: one product per factor, that factor's
    tangent in its place."""
    mats = _matrices(arrays)
    tans = _matrices([np.zeros_like(np.asarray(a)) if d is None else d for a, d in zip(arrays, t)])
    dtype = np.result_type(*mats, *tans)
    total = sum(_chain(mats[:k] + [tans[k]] + mats[k + 1:], mats[0].shape[0], dtype) for k in range(len(mats)))
    shape = [n for n, vector in ((mats[0].shape[0], np.ndim(arrays[0]) == 1),
                                 (mats[-1].shape[1], np.ndim(arrays[-1]) == 1)) if not vector]
    return np.reshape(total, tuple(shape))


def einsum_sublists(i: int, *args: Any) -> tuple[str, int, tuple[Any, ...]]:
    """``np.einsum(op0, sublist0, op1, sublist1[, out])`` as a subscripts string, the index
    among the operands of the rule's argument ``i`` (0, 1 or 3: the subscripts, b and d
    slots of np.einsum's rule), and the operands."""
    args = args[:max((k + 1 for k, arg in enumerate(args) if arg is not None), default=0)]
    pairs, out = (args[:-1], args[-1]) if len(args) % 2 else (args, None)

    def term(sublist: Any) -> str:
        return "".join("..." if s is Ellipsis else "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[s]
                       for s in sublist)

    spec = ",".join(term(s) for s in pairs[1::2]) + ("" if out is None else "->" + term(out))
    return spec, {0: 0, 1: 1, 3: 2}[i], tuple(pairs[0::2])


def check_wrt_item(container: Any, key: Any, name: str) -> None:
    """``check_wrt(container[key], name)`` for an argument passed through ``*args`` (an index)
    or ``**kwargs`` (a key), which must have been passed."""
    if isinstance(key, int) and key >= len(container):
        raise WrtError(f"the gradient with respect to {name} was asked for, but only {len(container)} "
                       f"argument(s) were passed through *{name.split('[')[0]}")
    if isinstance(key, str) and key not in container:
        raise WrtError(f"the gradient with respect to {name} was asked for, but no keyword argument "
                       f"{key}= was passed")
    check_wrt(container[key], name)


# --- in-place writes through views, ufunc.at, out= (issue 18) ----------------------------------
def ufunc_add_at(a: Any, indices: Any, b: Any) -> Any:
    """``np.add.at(a, indices, b)`` as a new array (``a`` unchanged): repeated indices add up."""
    out = np.array(a, copy=True)
    np.add.at(out, indices, b)
    return out


def ufunc_subtract_at(a: Any, indices: Any, b: Any) -> Any:
    """``np.subtract.at(a, indices, b)`` as a new array (``a`` unchanged)."""
    out = np.array(a, copy=True)
    np.subtract.at(out, indices, b)
    return out


def _refuse(where: str, message: str) -> None:
    from .errors import Location, UnsupportedSyntaxError

    filename, line, column = where.rsplit(":", 2)
    raise UnsupportedSyntaxError(message, Location(filename, int(line), int(column)))


def view_flag(base: Any, view: Any, where: str, refusal: str) -> bool:
    """Whether ``view``, taken from ``base`` by indexing, ``.T``, a transpose or a reshape,
    shares ``base``'s memory, so that a write through either changes the other.  A number,
    or an array NumPy copied (fancy indexing, a reshape that copies), does not.  When ``base``
    is no array (a list whose item ``view`` may be), ``refusal`` at ``where`` ("file:line:col")."""
    if isinstance(view, (bool, int, float, complex, np.generic)):
        return False
    if type(base) is np.ndarray and type(view) is np.ndarray:
        return bool(np.may_share_memory(base, view))
    _refuse(where, refusal)
    return False


def check_out(out: Any, value: Any, where: str, call: str) -> None:
    """``call(..., out=z)`` written ``z = call(...)``: faithful only when NumPy would store the
    result as it is, into a float array of its shape and dtype."""
    if (type(out) is np.ndarray and out.dtype.kind == "f" and np.shape(value) == out.shape
            and np.result_type(value) == out.dtype):
        return
    what = f"an array of dtype {out.dtype} and shape {out.shape}" if type(out) is np.ndarray \
        else f"a {type(out).__name__}"
    _refuse(where, f"{call}(..., out=...) writes into {what}, which would convert or broadcast "
                   f"the result of dtype {np.result_type(value)} and shape {np.shape(value)}; "
                   f"write the result to a new name (z = {call}(...)) and convert it explicitly")


__all__ += ["ufunc_add_at", "ufunc_subtract_at", "view_flag", "check_out"]
