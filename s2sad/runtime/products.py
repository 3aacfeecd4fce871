"""Gradients of products of arrays: matmul, dot, tensordot, kron, einsum,
np.linalg.multi_dot, convolution and correlation."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import S2SADError
from .broadcast import unbroadcast
from .reductions import list_as_array
from .shapes import reshape_grad, undo_permutation


def matmul_grad_lhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``a @ b`` with respect to ``a``."""
    a, b = list_as_array(a), list_as_array(b)  # np.matmul([x, y], v)
    if type(a) is np.ndarray and type(b) is np.ndarray and type(g) is np.ndarray and a.ndim == 2:
        # ndarray.dot is matmul for these ranks, with less per-call overhead on small arrays
        if b.ndim == 1 and g.ndim == 1:  # matrix times vector: the outer product
            return g[:, None].dot(b[None])
        if b.ndim == 2 and g.ndim == 2:
            return g.dot(b.T)
    if np.ndim(a) == 2 and np.ndim(b) <= 2 and np.ndim(g) == np.ndim(b):  # matrix times vector or matrix
        return np.outer(g, b) if np.ndim(b) == 1 else g @ b.T
    if np.ndim(b) == 1:
        if np.ndim(a) == 1:
            return g * b
        return unbroadcast(np.expand_dims(g, -1) * b, a)
    if np.ndim(a) == 1:
        return unbroadcast(np.matmul(b, np.expand_dims(g, -1))[..., 0], a)
    return unbroadcast(np.matmul(g, np.swapaxes(b, -1, -2)), a)


def matmul_grad_rhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``a @ b`` with respect to ``b``."""
    a, b = list_as_array(a), list_as_array(b)  # np.matmul([x, y], v)
    if type(a) is np.ndarray and type(b) is np.ndarray and type(g) is np.ndarray and a.ndim == 2:
        if b.ndim == 1 and g.ndim == 1:
            return g.dot(a)
        if b.ndim == 2 and g.ndim == 2:
            return a.T.dot(g)
    if np.ndim(a) == 2 and np.ndim(b) <= 2 and np.ndim(g) == np.ndim(b):  # matrix times vector or matrix
        return g @ a if np.ndim(b) == 1 else a.T @ g
    if np.ndim(a) == 1:
        if np.ndim(b) == 1:
            return g * a
        return unbroadcast(np.expand_dims(a, -1) * np.expand_dims(g, -2), b)
    if np.ndim(b) == 1:
        return unbroadcast(np.matmul(np.swapaxes(a, -1, -2), np.expand_dims(g, -1))[..., 0], b)
    return unbroadcast(np.matmul(np.swapaxes(a, -1, -2), g), b)


def dot_grad_lhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.dot(a, b)`` with respect to ``a``."""
    a, b = list_as_array(a), list_as_array(b)  # np.dot([x, y], [x, y])
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(b) <= 2 and np.ndim(a) <= 2:
        return matmul_grad_lhs(g, a, b)
    # dot(a, b)[i..., j...] = sum_k a[i..., k] * b[j..., k, :]
    b_axes = [ax for ax in range(np.ndim(b)) if ax != _dot_axis(b)]
    g_axes = list(range(np.ndim(a) - 1, np.ndim(g)))
    return np.tensordot(g, b, (g_axes, b_axes))


def dot_grad_rhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.dot(a, b)`` with respect to ``b``."""
    a, b = list_as_array(a), list_as_array(b)  # np.dot([x, y], [x, y])
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    if np.ndim(b) <= 2 and np.ndim(a) <= 2:
        return matmul_grad_rhs(g, a, b)
    a_axes = list(range(np.ndim(a) - 1))
    g_axes = list(range(np.ndim(a) - 1))
    gb = np.tensordot(a, g, (a_axes, g_axes))  # shape (k, j..., m) with j... of b's batch axes
    return np.moveaxis(gb, 0, _dot_axis(b))


def _dot_axis(b: Any) -> int:
    """The axis of ``b`` that ``np.dot(a, b)`` sums over: its second-to-last, or its only one."""
    return max(np.ndim(b) - 2, 0)


def tensordot_grad_lhs(g: Any, a: Any, b: Any, axes: Any = 2) -> Any:
    """Gradient of ``np.tensordot(a, b, axes)`` with respect to a."""
    a_sum, b_sum = _tensordot_axes(a, b, axes)
    a_free = [i for i in range(np.ndim(a)) if i not in a_sum]
    b_free = [i for i in range(np.ndim(b)) if i not in b_sum]
    grad = np.tensordot(g, b, (list(range(len(a_free), np.ndim(g))), b_free))
    order = a_free + [a_sum[b_sum.index(i)] for i in sorted(b_sum)]  # grad's axes, as axes of a
    return np.transpose(grad, undo_permutation(order))


def tensordot_grad_rhs(g: Any, a: Any, b: Any, axes: Any = 2) -> Any:
    """Gradient of ``np.tensordot(a, b, axes)`` with respect to b."""
    a_sum, b_sum = _tensordot_axes(a, b, axes)
    a_free = [i for i in range(np.ndim(a)) if i not in a_sum]
    b_free = [i for i in range(np.ndim(b)) if i not in b_sum]
    grad = np.tensordot(a, g, (a_free, list(range(len(a_free)))))
    order = [b_sum[a_sum.index(i)] for i in sorted(a_sum)] + b_free  # grad's axes, as axes of b
    return np.transpose(grad, undo_permutation(order))


def _tensordot_axes(a: Any, b: Any, axes: Any) -> tuple[list[int], list[int]]:
    """The summed axes of a and of b, in matching order, as non-negative numbers."""
    if np.ndim(axes) == 0:
        n = int(axes)
        return list(range(np.ndim(a) - n, np.ndim(a))), list(range(n))
    a_axes, b_axes = axes
    return ([int(i) % np.ndim(a) for i in np.atleast_1d(a_axes)],
            [int(i) % np.ndim(b) for i in np.atleast_1d(b_axes)])


def kron_grad_lhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.kron(a, b)`` with respect to a."""
    return _kron_grad(g, a, b, True)


def kron_grad_rhs(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.kron(a, b)`` with respect to b."""
    return _kron_grad(g, a, b, False)


def _kron_grad(g: Any, a: Any, b: Any, lhs: bool) -> Any:
    ndim = max(np.ndim(a), np.ndim(b))
    shape_a = (1,) * (ndim - np.ndim(a)) + np.shape(a)
    shape_b = (1,) * (ndim - np.ndim(b)) + np.shape(b)
    blocks = np.reshape(g, [n for pair in zip(shape_a, shape_b) for n in pair])  # [i0, j0, i1, j1, ...]
    if lhs:
        other = np.reshape(b, [n for m in shape_b for n in (1, m)])
        return reshape_grad(np.sum(blocks * other, axis=tuple(range(1, 2 * ndim, 2))), a)
    other = np.reshape(a, [n for m in shape_a for n in (m, 1)])
    return reshape_grad(np.sum(blocks * other, axis=tuple(range(0, 2 * ndim, 2))), b)


def einsum_grad(g: Any, i: int, subscripts: str, *operands: Any) -> Any:
    """Gradient of ``np.einsum(subscripts, *operands)`` w.r.t. operand ``i`` (None operands: absent)."""
    if not isinstance(subscripts, str):  # the sublist form: einsum(op0, sub0, op1, sub1, out)
        subscripts, i, operands = einsum_sublists(i, subscripts, *operands)
    operands = tuple(op for op in operands if op is not None)
    terms, out, unused = _einsum_terms(subscripts, [np.ndim(op) for op in operands])
    others = [t for j, t in enumerate(terms) if j != i]
    inputs, extra, wanted = [out, *others], [], ""
    seen = set(out + "".join(others))
    dtype = np.result_type(g)
    for letter, n in zip(terms[i], np.shape(operands[i])):
        if letter in wanted:  # a repeated index: g goes on that diagonal
            fresh = unused.pop()
            inputs.append(letter + fresh)
            extra.append(np.eye(n, dtype=dtype))
            letter = fresh
        elif letter not in seen:  # summed over in this operand alone: g is constant along it
            inputs.append(letter)
            extra.append(np.ones(n, dtype=dtype))
            seen.add(letter)
        wanted += letter
    others_ops = [op for j, op in enumerate(operands) if j != i]
    grad = unbroadcast(np.einsum(",".join(inputs) + "->" + wanted, g, *others_ops, *extra), operands[i])
    if np.shape(grad) != np.shape(operands[i]):  # an axis that met only length-1 axes of the others
        grad = np.array(np.broadcast_to(grad, np.shape(operands[i])))
    return grad


def _einsum_terms(subscripts: str, ndims: list[int]) -> tuple[list[str], str, list[str]]:
    """The input terms and output term of an einsum, '...' spelled out; and unused letters."""
    spec = subscripts.replace(" ", "")
    inputs, arrow, out = spec.partition("->")
    terms = inputs.split(",")
    if not arrow:  # implicit output: the letters used once, in order, after the broadcast axes
        letters = inputs.replace(".", "").replace(",", "")
        out = ("..." if "..." in inputs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    unused = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec]
    widths = [n - len(t) + 3 if "..." in t else 0 for t, n in zip(terms, ndims)]
    dots = "".join(unused[:max(widths, default=0)])
    del unused[:len(dots)]
    terms = [t.replace("...", dots[len(dots) - w:] if w else "") for t, w in zip(terms, widths)]
    return terms, out.replace("...", dots), unused


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


def cross_grad(ct: Any, a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
               axis: Any = None) -> Any:
    """Gradient of ``np.cross(a, b, axisa, axisb, axisc, axis)`` with respect to ``a``: ``b x ct``,
    2-vectors as 3-vectors with a zero third component (the cross product of two 2-vectors is
    its third component only, without a vector axis), cut back to ``a``'s components."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a_, b_ = np.moveaxis(np.asarray(a), axisa, -1), np.moveaxis(np.asarray(b), axisb, -1)
    b3 = np.concatenate([b_, np.zeros(b_.shape[:-1] + (3 - b_.shape[-1],), b_.dtype)], -1)
    if a_.shape[-1] == 2 and b_.shape[-1] == 2:
        ct = np.asarray(ct)
        g3 = np.stack([np.zeros_like(ct), np.zeros_like(ct), ct], -1)
    else:
        g3 = np.moveaxis(np.asarray(ct), axisc, -1)
    da = np.cross(b3, g3)[..., :a_.shape[-1]]
    return unbroadcast(np.moveaxis(da, -1, axisa + da.ndim - a_.ndim if axisa >= 0 else axisa), a)


def convolve_full(a: Any, v: Any, mode: str = "full") -> Any:
    """``np.convolve`` for 1-d arrays, ``scipy.signal.convolve`` otherwise."""
    if np.ndim(a) <= 1 and np.ndim(v) <= 1:
        return np.convolve(a, v, mode)
    from scipy import signal

    return signal.convolve(a, v, mode)


def convolve_grad(g: Any, x: Any, other: Any, mode: str = "full") -> Any:
    """Gradient for ``x`` of ``convolve(x, other, mode)``: ``g`` placed in the full output,
    correlated with ``other``."""
    x, other = list_as_array(x), list_as_array(other)  # np.convolve([a, b], v)
    if np.ndim(x) == 0 or np.ndim(other) == 0:  # np.convolve reads a number as a vector of one
        return np.reshape(convolve_grad(g, np.atleast_1d(x), np.atleast_1d(other), mode), np.shape(x))
    shape = tuple(np.add(np.shape(x), np.shape(other)) - 1)
    full = np.zeros(shape, dtype=np.result_type(g, x, other))
    start = [(n - m) // 2 for n, m in zip(shape, np.shape(g))]
    full[tuple(slice(s, s + m) for s, m in zip(start, np.shape(g)))] = g
    flipped = np.flip(other) if np.ndim(other) else other
    return convolve_full(full, flipped, "valid").astype(full.dtype, copy=False)


def _full_correlation_grad(g: Any, a: Any, v: Any) -> Any:
    """``g``, the gradient of ``np.correlate(a, v, mode)``, placed where that result lies in the
    full correlation (NumPy centres ``'same'`` to the right when ``v`` is the longer)."""
    n = np.size(a) + np.size(v) - 1
    full = np.zeros(n, dtype=np.result_type(g, a, v))
    start = (n - np.shape(g)[0] + int(np.size(a) < np.size(v))) // 2
    full[start:start + np.shape(g)[0]] = g
    return full


def correlate_grad_a(g: Any, a: Any, v: Any, mode: str = "valid") -> Any:
    """Gradient for ``a`` of ``np.correlate(a, v, mode)``, which is ``a`` convolved with ``v``
    reversed and conjugated (where it lies in the full result)."""
    a, v = list_as_array(a), list_as_array(v)
    return convolve_grad(_full_correlation_grad(g, a, v), a, np.conj(np.flip(v)), "full")


def correlate_grad_v(g: Any, a: Any, v: Any, mode: str = "valid") -> Any:
    """Gradient for ``v`` of ``np.correlate(a, v, mode)``: that of the reversed, conjugated
    kernel, reversed and conjugated."""
    a, v = list_as_array(a), list_as_array(v)
    return np.conj(np.flip(convolve_grad(_full_correlation_grad(g, a, v), np.conj(np.flip(v)), a, "full")))


def polyder_grad(g: Any, p: Any, m: int = 1) -> Any:
    """Gradient of ``np.polyder(p, m)``: each step ``p[:-1] * [n, ..., 1]`` taken back, last first."""
    p = np.asarray(p)
    lengths = [max(len(p) - k, 0) for k in range(int(m))]
    for n in reversed(lengths):
        scaled = np.asarray(g) * np.arange(n - 1, 0, -1)
        g = np.concatenate([scaled, np.zeros(1 if n else 0, scaled.dtype)])
    return np.reshape(g, np.shape(p)) if int(m) else np.asarray(g)


def polyint_grad(g: Any, p: Any, m: int = 1) -> Any:
    """Gradient of ``np.polyint(p, m)`` with respect to p: each step ``p / [n, ..., 1]`` then a
    constant, taken back, last first."""
    n = len(np.asarray(p))
    for k in reversed(range(int(m))):
        g = np.asarray(g)[:-1] / np.arange(n + k, 0, -1)
    return np.asarray(g)


def polymul_operand(p: Any) -> Any:
    """``p``, whose gradient through ``np.polymul`` s2sad gives: an error if its leading
    coefficient is zero (NumPy strips it, changing the product's length)."""
    if np.ndim(p) == 1 and np.size(p) > 1 and p[0] == 0:
        raise S2SADError("a gradient reaches np.polymul of coefficients whose leading one is 0, which "
                         "NumPy strips (the product's length changes with it); strip them first with "
                         "np.trim_zeros(p, 'f') inside stop_gradient, or use np.convolve")
    return p
