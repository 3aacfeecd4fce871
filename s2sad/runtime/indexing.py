"""Gradients of reading and writing by index: ``x[i]``, ``x[i] = v``, ``np.take``,
``np.take_along_axis``, ``ufunc.at``, and ``np.r_`` and ``np.c_``."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import S2SADError
from .broadcast import unbroadcast
from .checks import place
from .complex_fft import imag_grad, real_grad
from .foreign import added_rows, in_numpy, is_foreign, zeros
from .shapes import reshape_grad
from .trees import CONTAINERS, add_grads, rebuild, zeros_grad


def getitem_grad(g: Any, x: Any, index: Any) -> Any:
    """Gradient of ``x[index]``: ``g`` scattered into zeros shaped like x.

    Repeated integer indices accumulate (``np.add.at`` semantics).  For a tuple,
    list or dict ``x``, the result has x's structure.
    """
    if isinstance(x, CONTAINERS):
        return add_at(zeros_grad(x), index, g)
    if isinstance(x, np.flatiter):  # x.flat[index] indexes x's items in C order
        x = np.reshape(x.base, -1)
    out = zeros(np.shape(x), np.result_type(g, x), g if type(g) is not np.ndarray else x)
    if type(out) is not np.ndarray:
        return _foreign_set(out, index, g, "x[index]")
    if _is_basic_index(index):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


def _foreign_set(out: Any, index: Any, g: Any, what: str) -> Any:
    """``out[index] = g`` for another library's array ``out``, by its own item assignment
    (which takes no new axes: the index without its Nones, g without their axes)."""
    if not _is_basic_index(index):
        raise S2SADError(
            f"the gradient of {what} with an index of integer or boolean arrays is not computed on "
            f"{type(out).__module__}.{type(out).__name__} arrays (it needs np.add.at); index with "
            f"slices, or convert the array with np.asarray(...) first")
    parts = index if isinstance(index, tuple) else (index,)
    if any(p is None for p in parts):
        index = tuple(p for p in parts if p is not None)
        g = np.reshape(g, out[index].shape)
    out[index] = g
    return out


def added_at(acc: Any, x: Any, index: Any, g: Any) -> Any:
    """``add_grads(acc, getitem_grad(g, x, index))``, ``acc`` unchanged, for the gradient
    ``acc`` of ``x``: a tuple's, list's or dict's is rebuilt with only the item at ``index``
    new (no zero per item: reading ``xs[-1]`` once per step of a loop that appends to ``xs``
    stays linear in the steps)."""
    if isinstance(acc, dict) and isinstance(x, dict) and index in acc or isinstance(
            acc, (list, tuple)) and isinstance(x, (list, tuple)) and len(acc) == len(x):
        return add_at(acc, index, g)
    return add_grads(acc, getitem_grad(g, x, index))


def index_of_item(x: Any, args: Any) -> tuple[int, ...]:
    """The index that ``x.item(*args)`` reads, as a tuple of ints: a flat index unravelled,
    a tuple of them as it is, none for an array of one item."""
    shape = np.shape(x)
    if len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]
    if not args:
        return (0,) * len(shape)
    if len(args) == 1:
        return tuple(int(i) for i in np.unravel_index(int(args[0]) % max(int(np.prod(shape)), 1), shape))
    return tuple(int(i) for i in args)


def add_at(acc: Any, index: Any, g: Any) -> Any:
    """``acc[index] += g`` on a gradient ``acc`` that generated code owns.

    Arrays are updated in place; tuples, lists and dicts are rebuilt.
    """
    if isinstance(acc, dict):
        return {**acc, index: add_grads(acc[index], g)}
    if isinstance(acc, (list, tuple)):
        out = list(acc)
        if isinstance(index, slice):
            positions = range(len(out))[index]
            for i, gi in zip(positions, g):
                out[i] = add_grads(out[i], gi)
        else:
            out[index] = add_grads(out[index], g)
        return rebuild(acc, out)
    if isinstance(acc, (np.generic, float, complex)):
        acc = np.array(acc)  # a 0-d gradient that NumPy's arithmetic made a number (dx + dy)
    if type(acc) is not np.ndarray and is_foreign(acc):
        return _foreign_set(acc, index, acc[index] + g, "x[index]")
    if _is_basic_index(index):
        acc[index] += g
    else:
        np.add.at(acc, index, g)
    return acc


def _is_basic_index(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(
        p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer)) for p in parts
    )


def setitem_grad_x(g: Any, index: Any) -> Any:
    """Gradient of ``out = x.copy(); out[index] = v`` with respect to x: g, zero at index."""
    if isinstance(g, dict):
        return {**g, index: zeros_grad(g[index])}
    if isinstance(g, (list, tuple)):
        out = list(g)
        out[index] = zeros_grad(out[index])
        return rebuild(g, out)
    out = np.array(g, copy=True)
    out[index] = 0
    return out


def setitem_grad_value(g: Any, index: Any, v: Any) -> Any:
    """Gradient of ``out[index] = v`` with respect to v.

    Where an integer index repeats, only the write that stuck gets the gradient.
    """
    if isinstance(g, (list, tuple, dict)):
        return g[index]
    picked = np.asarray(g)[index]
    if not _is_basic_index(index):
        order = np.arange(picked.size).reshape(picked.shape)
        slot = np.full(np.shape(g), -1)
        slot[index] = order
        picked = picked * (slot[index] == order)
    return unbroadcast(picked, v)


def scatter_value(u: Any, index: Any, like: Any) -> Any:
    """The transpose of ``setitem_grad_value(g, index, v)`` in g: ``u`` written at ``index``
    of zeros shaped like ``like`` (where an integer index repeats, at the write that sticks)."""
    if isinstance(like, (list, tuple, dict)):
        out = zeros_grad(like)
        if isinstance(out, dict):
            return {**out, index: u}
        items = list(out)
        items[index] = u
        return rebuild(like, items)
    out = np.zeros(np.shape(like), dtype=np.result_type(u, like))
    picked = np.broadcast_to(u, np.shape(out[index]))
    if not _is_basic_index(index):
        order = np.arange(picked.size).reshape(picked.shape)
        slot = np.full(np.shape(out), -1)
        slot[index] = order
        picked = picked * (slot[index] == order)
    out[index] = picked
    return out


def take_grad(g: Any, x: Any, indices: Any, axis: Any = None, mode: str = "raise") -> Any:
    """Gradient of ``np.take(x, indices, axis, mode=mode)``: g added into zeros where it was taken."""
    shape = np.shape(x)
    n = np.size(x) if axis is None else shape[axis]
    indices = np.asarray(indices)
    if mode == "wrap":
        indices = indices % n
    elif mode == "clip":
        indices = np.clip(indices, 0, n - 1)
    if axis is None:
        out = added_rows(np.zeros(n, dtype=np.result_type(g)), indices, g)
        return reshape_grad(out, x)
    axis = axis % len(shape)
    taken = tuple(range(axis, axis + indices.ndim))
    out = np.zeros((n,) + shape[:axis] + shape[axis + 1:], dtype=np.result_type(g))
    out = added_rows(out, indices, np.moveaxis(g, taken, tuple(range(indices.ndim))))
    return np.moveaxis(out, 0, axis)


def take_along_axis_grad(g: Any, arr: Any, indices: Any, axis: Any = -1) -> Any:
    """Gradient of ``np.take_along_axis(arr, indices, axis)``: g added back where it was taken."""
    arr, g = in_numpy(np.asarray(arr), g)
    shape = (arr.size,) if axis is None else arr.shape
    out = np.zeros(shape, dtype=np.result_type(g, arr))
    axis = 0 if axis is None else axis % arr.ndim
    # the result's grid: indices and arr broadcast against each other along the other axes
    index = list(np.ix_(*(np.arange(n) if shape[d] == n else np.zeros(n, dtype=int)
                          for d, n in enumerate(np.shape(g)))))
    index[axis] = indices
    np.add.at(out, tuple(np.broadcast_arrays(*index)), g)
    return np.reshape(out, arr.shape)


def ufunc_add_at(a: Any, indices: Any, b: Any) -> Any:
    """``np.add.at(a, indices, b)`` as a new array (``a`` unchanged): repeated indices add up."""
    out = np.array(a, copy=True)
    np.add.at(out, indices, b)
    return out


def ufunc_maximum_at(a: Any, indices: Any, b: Any) -> Any:
    """``np.maximum.at(a, indices, b)`` as a new array (``a`` unchanged)."""
    out = np.array(a, copy=True)
    np.maximum.at(out, indices, b)
    return out


def ufunc_minimum_at(a: Any, indices: Any, b: Any) -> Any:
    """``np.minimum.at(a, indices, b)`` as a new array (``a`` unchanged)."""
    out = np.array(a, copy=True)
    np.minimum.at(out, indices, b)
    return out


def extremum_at_shares(a: Any, indices: Any, b: Any, ans: Any) -> tuple[Any, Any]:
    """The shares of ``a``'s entries and of ``b``'s in ``ans = ufunc_maximum_at(a, indices, b)``
    (or the minimum's): 1 for the value each entry of ans kept, divided equally among those that
    tie for it; ``b``'s in the shape of ``ans[indices]``."""
    if np.iscomplexobj(a) or np.iscomplexobj(b):
        raise S2SADError("s2sad differentiates np.maximum.at and np.minimum.at of real values only")
    dtype = np.result_type(a, b, 1.0)
    picked = ans[indices]
    a_hits = np.asarray(a == ans, dtype)
    b_hits = np.asarray(np.broadcast_to(b, np.shape(picked)) == picked, dtype)
    count = a_hits.copy()
    np.add.at(count, indices, b_hits)
    return a_hits / count, b_hits / count[indices]


def diagonal_index(a: Any) -> tuple[Any, ...]:
    """The index of the entries ``np.fill_diagonal(a, v)`` writes (``wrap=False``):
    ``a[i, i, ..., i]`` for ``i < min(a.shape)``."""
    if np.ndim(a) < 2:
        raise ValueError("array must be at least 2-d")
    if np.ndim(a) > 2 and len(set(np.shape(a))) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return (np.arange(min(np.shape(a))),) * np.ndim(a)


def strided_index(x: Any, shape: Any = None, strides: Any = None) -> Any:
    """The flat index (into ``np.ravel(x)``) of each entry of ``as_strided(x, shape, strides)``:
    x must be C-contiguous, its strides whole entries, and the view within x."""
    x = np.asarray(x)
    shape = x.shape if shape is None else tuple(shape)
    strides = x.strides if strides is None else tuple(strides)
    what = "s2sad differentiates np.lib.stride_tricks.as_strided"
    if not x.flags.c_contiguous:
        raise S2SADError(f"{what} of a C-contiguous array only; pass np.ascontiguousarray(x)")
    if len(strides) != len(shape) or any(s % x.itemsize for s in strides):
        raise S2SADError(f"{what} with one stride per axis, each a multiple of the item size ({x.itemsize})")
    steps = [s // x.itemsize for s in strides]
    ends = [(n - 1) * s for n, s in zip(shape, steps)]
    if 0 not in shape and (sum(e for e in ends if e < 0) < 0 or sum(e for e in ends if e > 0) >= x.size):
        raise S2SADError(f"{what} of views within the array only: this one reads memory outside it")
    flat = np.arange(x.size)
    return np.lib.stride_tricks.as_strided(flat, shape, [s * flat.itemsize for s in steps], writeable=False)


def ufunc_subtract_at(a: Any, indices: Any, b: Any) -> Any:
    """``np.subtract.at(a, indices, b)`` as a new array (``a`` unchanged)."""
    out = np.array(a, copy=True)
    np.subtract.at(out, indices, b)
    return out


def _entry_codes(items: Any) -> tuple[list[Any], int]:
    """The entries of ``concat[items]`` with each element of an array or number replaced by
    its number (from 0, in C order), and slices by -1s: ``concat`` places the numbers where
    it places the elements.  Also the count of numbered elements."""
    codes: list[Any] = []
    total = 0
    for item in items:
        if isinstance(item, str):
            codes.append(item)
        elif isinstance(item, slice):
            codes.append(np.full(np.size(np.r_[item]), -1))
        elif type(item) in np.ScalarType:
            codes.append(np.int64(total))
            total += 1
        else:
            size = int(np.size(item))
            codes.append(np.arange(total, total + size).reshape(np.shape(item)))
            total += size
    return codes, total


def index_concat_grad(g: Any, items: Any, concat: Any) -> Any:
    """Gradient of ``concat[items]`` (``np.r_``, ``np.c_``) with respect to the entries: each
    entry gets the elements of g where its own elements went (None for slices and directives)."""
    entries = items if isinstance(items, tuple) else (items,)  # what __getitem__ receives
    codes, total = _entry_codes(entries)
    placed = concat[tuple(codes)]
    if isinstance(placed, np.matrix):
        raise S2SADError("a gradient reaches an np.matrix built by np.r_ or np.c_ with an 'r' or "
                         "'c' directive, which s2sad does not differentiate; leave out the directive")
    placed = np.ravel(placed)
    where = np.empty(total, dtype=np.intp)
    numbered = placed >= 0
    where[placed[numbered]] = np.flatnonzero(numbered)
    flat = np.ravel(g)
    grads = []
    for item, code in zip(entries, codes):
        if isinstance(item, (str, slice)):
            grads.append(None)
        else:
            grads.append(np.reshape(flat[where[np.ravel(code)]], np.shape(item))[()])
    return tuple(grads) if isinstance(items, tuple) else grads[0]


def index_concat_jvp(t: Any, items: Any, concat: Any) -> Any:
    """Tangent of ``concat[items]``: the same concatenation of the entries' tangents ``t``
    (zeros in place of slices)."""
    if not isinstance(items, tuple):
        return concat[t]
    entries = []
    for item, tangent in zip(items, t):
        if isinstance(item, str):
            entries.append(item)
        elif isinstance(item, slice):
            entries.append(np.zeros(np.size(np.r_[item])))
        else:
            entries.append(tangent)
    return concat[tuple(entries)]


def field_of(x: Any, name: str, where: str) -> Any:
    """``x.name`` on a value that carries a gradient (a named tuple's field), as written."""
    return getattr(x, name)


def field_grad(g: Any, x: Any, name: str, where: str) -> Any:
    """Gradient of ``x.name``: for a named tuple, that of its item (the gradient is a named
    tuple of x's type); for an object (``self`` of a layer met again when its gradient code
    is differentiated), none: objects are constants, since no wrt argument may be one and
    a call that would make one from values carrying a gradient is refused."""
    if _is_object(x):
        return zeros_grad(x)
    return getitem_grad(g, x, _field_index(x, name, where))


def field_tangent(t: Any, x: Any, name: str, where: str) -> Any:
    """Tangent of ``x.name`` from the tangent ``t`` of the named tuple x (a tuple of its items);
    zero from the zero tangent of an object."""
    if _is_object(x) and np.ndim(t) == 0 and not np.any(t):
        return zeros_grad(getattr(x, name))
    return t[_field_index(x, name, where)]


def _is_object(x: Any) -> bool:
    """Whether ``x`` is an object that carries no gradient: neither an array, a number, nor a
    tuple, list or dict."""
    return is_record(x) and not isinstance(x, CONTAINERS)


#: The gradients of the arrays' attributes a record's field may share a name with (as the
#: rules of ``np.ndarray.T``, ``.mT``, ``.real`` and ``.imag`` say them).
_ARRAY_ATTRIBUTE_GRADS: dict[str, Any] = {
    "T": lambda g, x: np.transpose(g), "mT": lambda g, x: np.swapaxes(g, -1, -2),
    "real": real_grad, "imag": imag_grad, "flat": lambda g, x: np.reshape(g, np.shape(x))}


def is_record(x: Any) -> bool:
    """Whether ``x`` is neither an array (NumPy's or another library's) nor a number: a named
    tuple, say, whose fields may be named like the attributes of arrays."""
    return not isinstance(x, (np.ndarray, np.generic, int, float, complex)) and not is_foreign(x)


def attribute_of(x: Any, name: str, where: str) -> Any:
    """``x.name``, ``name`` an attribute of arrays (``x.T``) that may be a record's field
    (``p.T`` on a named tuple), as written."""
    return getattr(x, name)


def attribute_grad(g: Any, x: Any, name: str, where: str) -> Any:
    """Gradient of ``x.name``: that of a field for a record, else that of the arrays' attribute."""
    if is_record(x):
        return field_grad(g, x, name, where)
    grad = _ARRAY_ATTRIBUTE_GRADS.get(name)
    if grad is None:
        raise S2SADError(f"'.{name}' of an array carries a gradient here, which s2sad does not "
                         f"differentiate; wrap it in stop_gradient(...)", place(where))
    return grad(g, x)


def attribute_tangent(t: Any, x: Any, name: str, where: str) -> Any:
    """Tangent of ``x.name`` from the tangent ``t`` of x: a field's for a record, else ``t.name``."""
    return field_tangent(t, x, name, where) if is_record(x) else getattr(t, name)


def _field_index(x: Any, name: str, where: str) -> int:
    fields = getattr(type(x), "_fields", None)
    if isinstance(x, tuple) and isinstance(fields, tuple) and name in fields:
        return fields.index(name)
    raise S2SADError(f"'.{name}' carries a gradient here, on a {type(x).__name__}: s2sad "
                     f"differentiates the fields of named tuples (collections.namedtuple, "
                     f"typing.NamedTuple) and the attributes of NumPy arrays; pass the value as an "
                     f"argument of its own, or wrap it in stop_gradient(...)", place(where))
