"""Gradients of functions that rearrange arrays: reshapes, transposes, joins, repeats,
tiles, pads, rotations, diagonals, differences, np.linspace and np.meshgrid."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import S2SADError
from .broadcast import unbroadcast
from .foreign import added_rows


def reshape_grad(g: Any, x: Any) -> Any:
    """Gradient of a reshape of ``x``: g in x's shape (a NumPy scalar for a scalar x)."""
    out = np.reshape(g, np.shape(x))
    return out[()] if out.ndim == 0 else out


def reshape_back(g: Any, like: Any, order: str = "C", source: Any = None) -> Any:
    """``g`` reshaped to ``like``'s shape, reading and writing elements in ``order``: the
    gradient of ``np.reshape(a, shape, order)`` (``like`` is a) and its tangent (``like`` is
    the result).  Order "A" is the order NumPy chose from the reshaped array's layout
    (``source``, by default ``like``); so is "K" (``np.ravel``'s memory order) of a contiguous one."""
    if order in ("A", "K"):
        flags = np.asarray(like if source is None else source).flags
        if order == "K" and not (flags.c_contiguous or flags.f_contiguous):
            raise S2SADError("s2sad differentiates np.ravel(a, order='K') of a contiguous array only, whose "
                             "memory order is C or F; write order='C' (or 'F')")
        order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    if order == "C":  # (Dask's reshape takes no order)
        return np.reshape(g, np.shape(like))
    return np.reshape(g, np.shape(like), order=order)


def transpose_grad(g: Any, axes: Any = None) -> Any:
    """Gradient of ``np.transpose(x, axes)``; ``axes`` may be the ``*axes`` of ``x.transpose``."""
    if axes is None:
        return np.transpose(g)
    if len(axes) == 1 and (axes[0] is None or np.ndim(axes[0]) == 1):  # x.transpose((1, 0))
        return transpose_grad(g, axes[0])
    return np.transpose(g, undo_permutation(axes))


def undo_permutation(axes: Any) -> tuple[int, ...]:
    """The axes that undo the transposition ``axes``, as a tuple of ints (Dask takes no array)."""
    axes = [int(a) % np.size(axes) for a in np.ravel(axes)]  # (np.transpose takes negative axes too)
    return tuple(sorted(range(len(axes)), key=axes.__getitem__))


def invert_axes(axes: Any) -> Any:
    """The permutation that undoes ``np.transpose(x, axes)``."""
    return None if axes is None else tuple(np.argsort(np.mod(axes, np.size(axes))))


def stack_grad(g: Any, arrays: Any, axis: int = 0) -> Any:
    """Gradient of ``np.stack(arrays, axis)``: one slice of g per array."""
    parts = [np.take(g, i, axis=axis) for i in range(len(arrays))]
    return type(arrays)(parts) if isinstance(arrays, (list, tuple)) else np.stack(parts)


def concatenate_grad(g: Any, arrays: Any, axis: Any = 0) -> Any:
    """Gradient of ``np.concatenate(arrays, axis)``: g split back into the pieces."""
    if axis is None:
        sizes = [np.size(a) for a in arrays]
        parts = [np.reshape(p, np.shape(a)) for p, a in zip(np.split(g, np.cumsum(sizes)[:-1]), arrays)]
    else:
        sizes = [np.shape(a)[axis] for a in arrays]
        parts = np.split(g, np.cumsum(sizes)[:-1], axis=axis)
    return type(arrays)(parts) if isinstance(arrays, (list, tuple)) else np.stack(parts)


def as_column(a: Any) -> Any:
    """``a`` as ``np.column_stack`` takes it: an array of fewer than 2 dimensions becomes a column."""
    return np.reshape(a, (-1, 1)) if np.ndim(a) < 2 else a


def join_grad(g: Any, arrays: Any, axis: int, lift: Any) -> Any:
    """Gradient of ``np.concatenate([lift(a) for a in arrays], axis)``: hstack, vstack, dstack, ..."""
    sizes = [np.shape(lift(a))[axis] for a in arrays]
    parts = [reshape_grad(p, a) for p, a in zip(np.split(g, np.cumsum(sizes)[:-1], axis=axis), arrays)]
    return type(arrays)(parts) if isinstance(arrays, (list, tuple)) else np.stack(parts)


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


def repeat_grad(g: Any, x: Any, repeats: Any, axis: Any = None) -> Any:
    """Gradient of ``np.repeat(x, repeats, axis)``: the gradients of each entry's copies, summed."""
    n = np.size(x) if axis is None or np.ndim(x) == 0 else np.shape(x)[axis]
    axis = 0 if axis is None or np.ndim(x) == 0 else axis  # (a 0-d x repeats as a vector)
    source = np.repeat(np.arange(n), repeats)  # the entry each copy comes from
    copies = np.moveaxis(g, axis, 0)
    out = added_rows(np.zeros((n,) + np.shape(copies)[1:], dtype=np.result_type(g)), source, copies)
    return reshape_grad(np.moveaxis(out, 0, axis), x)


def tile_grad(g: Any, x: Any, reps: Any) -> Any:
    """Gradient of ``np.tile(x, reps)``: the gradients of the tiles, summed."""
    reps = tuple(np.atleast_1d(reps))
    ndim = max(np.ndim(x), len(reps))
    shape = (1,) * (ndim - np.ndim(x)) + np.shape(x)
    reps = (1,) * (ndim - len(reps)) + reps
    tiles = np.reshape(g, [n for pair in zip(reps, shape) for n in pair])  # [r0, s0, r1, s1, ...]
    return reshape_grad(np.sum(tiles, axis=tuple(range(0, 2 * ndim, 2))), x)


def pad_grad(g: Any, x: Any, pad_width: Any, mode: Any = "constant", reflect_type: str = "even") -> Any:
    """Gradient of ``np.pad(x, pad_width, mode)`` for copying modes: copies' gradients summed."""
    if not (isinstance(mode, str) and mode in ("constant", "edge", "reflect", "symmetric", "wrap")
            and reflect_type == "even"):
        raise S2SADError(f"s2sad differentiates np.pad with mode 'constant', 'edge', 'reflect', "
                         f"'symmetric' or 'wrap' (reflect_type 'even'), not mode={mode!r}, "
                         f"reflect_type={reflect_type!r}")
    source = np.reshape(np.arange(np.size(x)), np.shape(x))  # where each padded entry comes from
    if mode == "constant":
        source = np.pad(source, pad_width, mode, constant_values=-1)
    else:
        source = np.pad(source, pad_width, mode)
    copied = source >= 0
    out = np.zeros(np.size(x), dtype=np.result_type(g))
    np.add.at(out, source[copied], np.asarray(g)[copied])
    return reshape_grad(out, x)


def pad_values_grad(g: Any, x: Any, pad_width: Any, mode: Any = "constant", values: Any = 0) -> Any:
    """Gradient of ``np.pad(x, pad_width, mode, constant_values=values)`` in ``values`` (an
    array of their shape): g summed over the entries each value fills.  NumPy pads one axis
    after another, so a corner takes the later axis's value; modes other than 'constant'
    ignore the values."""
    ndim = np.ndim(x)
    table = np.zeros((ndim, 2), dtype=np.result_type(g))  # [axis, before/after]
    if mode == "constant":
        widths = np.broadcast_to(np.asarray(pad_width), (ndim, 2))
        label = np.full(np.shape(x), -1)
        for axis in range(ndim):
            width = [(0, 0)] * ndim
            width[axis] = tuple(widths[axis])
            label = np.pad(label, width, constant_values=(2 * axis, 2 * axis + 1))
        for k in range(2 * ndim):
            table[k // 2, k % 2] = np.sum(np.asarray(g)[label == k])
    return unbroadcast(table, np.asarray(values, dtype=np.result_type(table)))


def rollaxis_grad(g: Any, x: Any, axis: int, start: int = 0) -> Any:
    """Gradient of ``np.rollaxis(x, axis, start)``: the axis moved back."""
    ndim = np.ndim(x)
    axis = axis % ndim
    start = start + ndim if start < 0 else start
    return np.moveaxis(g, start - 1 if start > axis else start, axis)


def rot90_grad(g: Any, k: int = 1, axes: Any = None) -> Any:
    """Gradient of ``np.rot90(m, k, axes)``: g rotated back."""
    return np.rot90(g, -k, (0, 1) if axes is None else axes)


def diagonal_grad(g: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """Gradient of ``np.diagonal(x, offset, axis1, axis2)``: g on that diagonal of zeros like x."""
    out = np.zeros(np.shape(x), dtype=np.result_type(g, x))
    matrices = np.moveaxis(out, (axis1, axis2), (-2, -1))  # a view of out
    k = np.arange(np.shape(np.diagonal(matrices, offset, -2, -1))[-1])
    matrices[..., k + max(-offset, 0), k + max(offset, 0)] = g
    return out


def diff_grad(g: Any, x: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None,
              part: str = "a") -> Any:
    """Gradient of ``np.diff(a, n, axis, prepend, append)`` w.r.t. part "a", "prepend" or "append"."""
    before = 0 if prepend is None else (np.shape(prepend)[axis] if np.ndim(prepend) else 1)
    after = 0 if append is None else (np.shape(append)[axis] if np.ndim(append) else 1)
    size = np.shape(x)[axis]
    g = np.asarray(g)
    for k in reversed(range(n)):  # the k-th difference shortened the axis by one, unless empty
        if before + size + after - k > 0:
            edge = np.zeros(g.shape[:axis % g.ndim] + (1,) + g.shape[axis % g.ndim + 1:], g.dtype)
            g = np.concatenate([edge, g], axis=axis) - np.concatenate([g, edge], axis=axis)
    if part == "prepend":
        return unbroadcast(np.take(g, np.arange(before), axis=axis), prepend)
    if part == "append":
        return unbroadcast(np.take(g, np.arange(before + size, np.shape(g)[axis]), axis=axis), append)
    return np.take(g, np.arange(before, before + size), axis=axis)


def diff_embed(u: Any, x: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None,
               part: str = "a") -> Any:
    """The transpose of ``diff_grad(g, x, n, axis, prepend, append, part)`` in g: the n-th
    difference of ``u`` placed as that part, the other parts zero."""
    shape = np.shape(x)

    def edge(value: Any) -> Any:
        if value is None:
            return None
        edge_shape = list(shape)
        edge_shape[axis] = 1
        return np.shape(value) if np.ndim(value) else tuple(edge_shape)

    shapes = {"prepend": edge(prepend), "a": shape, "append": edge(append)}
    dtype = np.result_type(u, x)
    pieces = [np.broadcast_to(u, s).astype(dtype) if name == part else np.zeros(s, dtype)
              for name, s in shapes.items() if s is not None]
    return np.diff(np.concatenate(pieces, axis=axis), n, axis)


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


def linspace_grad(g: Any, end: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
                  axis: int = 0, at_stop: bool = True) -> Any:
    """Gradient of ``np.linspace(start, stop, num, ...)`` with respect to stop (``at_stop``) or start."""
    if retstep:
        g, g_step = g
    weight = np.linspace(0, 1, num, endpoint=endpoint, dtype=np.result_type(g))  # stop's share
    total = np.sum(np.moveaxis(g, axis, -1) * (weight if at_stop else 1 - weight), axis=-1)
    if retstep:  # step = (stop - start) / divisions
        total = total + (g_step if at_stop else -g_step) / (num - 1 if endpoint else num)
    return unbroadcast(total, end)


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


def _axes(a: Any, axis: int | tuple[int, ...]) -> tuple[int, ...]:
    ndim = np.ndim(a)
    return tuple(ax % ndim for ax in (axis if isinstance(axis, tuple) else (axis,)))


def axis_shape(a: Any, axis: int | tuple[int, ...]) -> tuple[int, ...]:
    """The shape that lays an array along ``axis`` of ``a`` (its axes in their order in ``a``,
    see :func:`axis_order`): ``a``'s length there, 1 elsewhere."""
    axes = _axes(a, axis)
    return tuple(np.shape(a)[i] if i in axes else 1 for i in range(np.ndim(a)))


def axis_order(a: Any, axis: int | tuple[int, ...]) -> tuple[int, ...]:
    """The transposition that puts an array whose axes follow ``axis`` (np.average's weights
    for a tuple of axes) in the order those axes have in ``a``."""
    return tuple(int(i) for i in np.argsort(_axes(a, axis)))


def axis_end(axis: int | tuple[int, ...]) -> tuple[int, ...]:
    """The last axes, as many as ``axis`` names (np.moveaxis's destination)."""
    return tuple(range(-len(axis), 0)) if isinstance(axis, tuple) else (-1,)


def delete_grad(g: Any, arr: Any, obj: Any, axis: Any = None) -> Any:
    """Gradient of ``np.delete(arr, obj, axis)``: g where the kept entries went, zero elsewhere."""
    kept = np.delete(np.reshape(np.arange(np.size(arr)), np.shape(arr)), obj, axis)
    out = np.zeros(np.size(arr), np.result_type(g, 0.0))
    out[np.ravel(kept)] = np.ravel(g)
    return np.reshape(out, np.shape(arr))


def insert_grad(g: Any, arr: Any, obj: Any, values: Any, axis: Any = None, part: int = 0) -> Any:
    """Gradient of ``np.insert(arr, obj, values, axis)`` with respect to ``arr`` (part 0) or
    ``values`` (part 1): the entries of g where each entry went (a broadcast value's summed)."""
    source = (arr, values)[part]
    ids = np.reshape(np.arange(np.size(source)), np.shape(source))
    marks = (ids, np.full(np.shape(values), -1)) if part == 0 else (np.full(np.shape(arr), -1), ids)
    where = np.ravel(np.insert(marks[0], obj, marks[1], axis))
    taken = where >= 0
    out = np.zeros(np.size(source), np.result_type(g, 0.0))
    np.add.at(out, where[taken], np.ravel(g)[taken])
    return np.reshape(out, np.shape(source))
