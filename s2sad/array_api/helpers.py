"""The run-time helpers of generated code, for another library's arrays (see s2sad.array_api).

The helpers of ``s2sad.runtime`` are written for NumPy's arrays: they test ``type(x) is
np.ndarray``, write into buffers they own (``out=``), keep read-only stand-ins.  Here are
their namespace-generic variants, methods of :class:`Helpers`, one per library: the same
results as new arrays of that library, computed through its :class:`Namespace`.  Generated
code rebound to the library calls them under the helpers' names.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import NonDifferentiableInputError, NonScalarOutputError, S2SADError
from ..runtime.trees import add_grads
from .namespace import Namespace

#: The helpers with a variant here (a method of the same name).
VARIANTS = frozenset({
    "add_at", "added_at", "balanced_eq", "check_wrt", "distinct", "expand_reduced", "extremum_grad", "getitem_grad",
    "grad_like", "matmul_grad_lhs", "matmul_grad_rhs", "mean_grad", "mul_into", "own_grad", "real_only",
    "reduce_grad", "reshape_grad", "seed", "seed_for", "stand_in", "stand_in_for", "unbroadcast",
    "zeros_grad"})


class Helpers:
    """The helpers of generated code on the arrays of ``ns``'s library."""

    def __init__(self, ns: Namespace) -> None:
        self.ns = ns
        self.xp = ns.xp

    def _kind(self, x: Any) -> str | None:
        """'f', 'c', or 'i' (integers and booleans) for an array or number; None otherwise."""
        if self.ns.is_array(x):
            if self.xp.isdtype(x.dtype, "real floating"):
                return "f"
            return "c" if self.xp.isdtype(x.dtype, "complex floating") else "i"
        if isinstance(x, (bool, int)):
            return "i"
        return "f" if isinstance(x, float) else "c" if isinstance(x, complex) else None

    # ---- checks and seeds ----------------------------------------------------------------

    def check_wrt(self, x: Any, name: str) -> None:
        """Refuse a gradient with respect to an integer or boolean value."""
        if isinstance(x, (list, tuple, dict)):
            for key, value in (x.items() if isinstance(x, dict) else enumerate(x)):
                self.check_wrt(value, f"{name}[{key!r}]")
            return
        if isinstance(x, np.ndarray):
            raise S2SADError(f"'{name}' is a NumPy array in a call with {self.ns.library} arrays; pass "
                             f"every array of the call as a {self.ns.library} array")
        if self._kind(x) not in ("f", "c"):
            raise NonDifferentiableInputError(
                f"cannot differentiate with respect to '{name}': it is {type(x).__name__}"
                f"{' of dtype ' + str(x.dtype) if hasattr(x, 'dtype') else ''}; pass a float value "
                f"or a floating-point array")

    def real_only(self, name: str, *values: Any) -> None:
        """Refuse complex values in a rule that differentiates real ones only."""
        if any(self._kind(v) == "c" for v in values if v is not None):
            raise S2SADError(f"a gradient reaches {name} of complex values, which s2sad differentiates "
                             f"for real values only")

    def seed(self, ans: Any) -> Any:
        """A one of the output's type, after checking it is a real scalar."""
        if type(ans) is float:
            return 1.0
        if not self.ns.is_array(ans) or self.ns.size(ans) != 1 or self._kind(ans) != "f":
            raise NonScalarOutputError(
                f"the differentiated function must return a real floating-point scalar, got "
                f"{type(ans).__name__} {ans!r:.60}; reduce it first (for example with .sum())")
        return self.xp.ones_like(ans)

    def seed_for(self, *reduced: Any) -> float:
        """1.0, the seed of an output that is a full reduction of ``reduced``, after checking
        that what is reduced is not complex."""
        if any(self._kind(a) == "c" for a in reduced):
            raise NonScalarOutputError(
                "the differentiated function must return a real floating-point scalar, but it "
                "reduces complex values; take np.real(...) or np.abs(...) of them first")
        return 1.0

    # ---- memory: no stand-ins, no writes into buffers -------------------------------------

    def stand_in(self, x: Any) -> Any:
        return x

    def stand_in_for(self, fun: Any, *operands: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if axis is None and not keepdims:
            return fun(*operands)
        return fun(*operands, axis=axis, keepdims=keepdims)

    def mul_into(self, g: Any, dead: Any) -> Any:
        return g * dead

    # ---- gradients in their input's type, shape and dtype -------------------------------

    def unbroadcast(self, g: Any, x: Any) -> Any:
        """``g`` summed over the axes along which ``x`` was broadcast (the real part for a real x)."""
        shape = getattr(x, "shape", ())
        gshape = tuple(getattr(g, "shape", ()))
        if gshape != tuple(shape):
            extra = len(gshape) - len(shape)
            axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape)
                                               if n == 1 and gshape[i + extra] != 1)
            if axes:
                g = self.xp.sum(g, axis=axes, keepdims=True)
            g = self.xp.reshape(g, tuple(shape))
        if self._kind(g) == "c" and self._kind(x) != "c":
            g = self.xp.real(g)
        return g

    def grad_like(self, g: Any, x: Any) -> Any:
        """``g``, the gradient of ``x``, in x's type and dtype: a float for a float, an array of
        the library (of x's floating dtype) for an array."""
        if isinstance(x, dict):
            return {k: self.grad_like(g[k], v) for k, v in x.items()}
        if isinstance(x, (list, tuple)) and isinstance(g, (list, tuple)):
            items = [self.grad_like(u, v) for u, v in zip(g, x)]
            return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
        if isinstance(x, (float, complex)):
            return type(x)(g) if isinstance(x, complex) or self._kind(g) != "c" else float(self.xp.real(g))
        dtype = getattr(x, "dtype", None)
        if dtype is None:
            return g
        dtype = self.ns.dtype(dtype)
        if not self.ns.is_array(g):
            return self.xp.full(self.ns.shape(x), g, dtype=dtype)
        if self._kind(g) == "c" and not self.xp.isdtype(dtype, "complex floating"):
            g = self.xp.real(g)
        return g if g.dtype == dtype else self.xp.astype(g, dtype)

    def zeros_grad(self, x: Any, seed: Any = None) -> Any:
        """A zero gradient shaped like ``x``; of the same structure for containers."""
        if isinstance(x, dict):
            return {k: self.zeros_grad(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            items = [self.zeros_grad(v) for v in x]
            return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
        if x is None or isinstance(x, (bool, int, float)):
            return 0.0
        if isinstance(x, complex):
            return 0j
        return self.ns.zeros_like(x)

    def distinct(self, *grads: Any) -> tuple[Any, ...]:
        """The gradients of several arguments, no array twice (a later one is copied)."""
        seen: set[int] = set()

        def one(g: Any) -> Any:
            if self.ns.is_array(g):
                if id(g) in seen:
                    return self.xp.asarray(g, copy=True)
                seen.add(id(g))
            elif isinstance(g, dict):
                return {k: one(v) for k, v in g.items()}
            elif isinstance(g, (list, tuple)):
                return type(g)([one(v) for v in g])
            return g

        return tuple([one(g) for g in grads])

    def own_grad(self, g: Any) -> Any:
        return g

    # ---- reductions -----------------------------------------------------------------------

    def expand_reduced(self, g: Any, ndim: int, axis: Any, keepdims: bool) -> Any:
        """Give a reduced gradient back the axes that the reduction removed."""
        if keepdims or axis is None and self.ns.ndim(g) == ndim:
            return g
        if axis is None:
            return self.ns.reshape(g, (1,) * ndim)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        return self.ns.expand_dims(g, tuple(a % ndim for a in axes))

    def reduce_grad(self, g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        """Gradient of ``np.sum(x, axis, keepdims=keepdims)``: g broadcast back to x, a new array."""
        shape = self.ns.shape(x)
        if not self.ns.is_array(g):
            if not shape and not self.ns.is_array(x):
                return g
            return self.xp.full(shape, g, dtype=self.ns.dtype(x.dtype) if self._kind(x) in ("f", "c") else None)
        spread = self.xp.broadcast_to(self.expand_reduced(g, len(shape), axis, keepdims), shape)
        return self.xp.asarray(spread, copy=True)

    def mean_grad(self, g: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        """Gradient of ``np.mean(x, axis, keepdims=keepdims)``."""
        shape = self.ns.shape(x)
        axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
        count = 1
        for a in {a % max(len(shape), 1) for a in axes}:
            count *= shape[a]
        return self.reduce_grad(g / count, x, axis, keepdims)

    def extremum_grad(self, g: Any, x: Any, ans: Any, axis: Any = None, keepdims: bool = False) -> Any:
        """Gradient of max/min: shared equally among the entries that tie for it."""
        self.real_only("a maximum or minimum", x)
        ndim = self.ns.ndim(x)
        mask = self.xp.astype(x == self.expand_reduced(ans, ndim, axis, keepdims), x.dtype)
        count = self.xp.sum(mask, axis=axis if not isinstance(axis, list) else tuple(axis), keepdims=True)
        return self.expand_reduced(g, ndim, axis, keepdims) * mask / count

    def balanced_eq(self, x: Any, ans: Any, y: Any) -> Any:
        """Where ``x`` produced ``ans`` (maximum, minimum): 1, or 1/2 where ``x`` and ``y`` tie."""
        self.real_only("a maximum or minimum", x, y)
        like = x if self.ns.is_array(x) else y
        dtype = self.ns.result_type(x, y) if self.ns.is_array(x) and self.ns.is_array(y) else like.dtype
        return self.xp.astype(self.xp.asarray(x == ans), dtype) / (1 + self.xp.astype(self.xp.asarray(x == y), dtype))

    # ---- products, shapes, indexing ------------------------------------------------------

    def _library_array(self, x: Any) -> Any:
        """``x`` as the library's array where it is NumPy's (a constant the function reads from
        its module: ``x @ S`` takes it, the library's matmul does not)."""
        return self.ns.asarray(x) if isinstance(x, np.ndarray) else x

    def matmul_grad_lhs(self, g: Any, a: Any, b: Any) -> Any:
        """Gradient of ``a @ b`` with respect to ``a``."""
        b = self._library_array(b)
        if b.ndim == 1:
            return g * b if a.ndim == 1 else self.unbroadcast(g[..., None] * b, a)
        if a.ndim == 1:
            return self.unbroadcast(self.xp.matmul(b, g[..., None])[..., 0], a)
        return self.unbroadcast(self.xp.matmul(g, self.xp.matrix_transpose(b)), a)

    def matmul_grad_rhs(self, g: Any, a: Any, b: Any) -> Any:
        """Gradient of ``a @ b`` with respect to ``b``."""
        if a.ndim == 1:
            return g * a if b.ndim == 1 else self.unbroadcast(a[:, None] * g[..., None, :], b)
        if b.ndim == 1:
            return self.unbroadcast(self.xp.matmul(self.xp.matrix_transpose(a), g[..., None])[..., 0], b)
        return self.unbroadcast(self.xp.matmul(self.xp.matrix_transpose(a), g), b)

    def reshape_grad(self, g: Any, x: Any) -> Any:
        """Gradient of a reshape of ``x``: g in x's shape."""
        return self.ns.reshape(g, self.ns.shape(x))

    def getitem_grad(self, g: Any, x: Any, index: Any) -> Any:
        """Gradient of ``x[index]``: ``g`` added into zeros shaped like x."""
        if isinstance(x, (list, tuple, dict)):
            return self.add_at(self.zeros_grad(x), index, g)
        dtype = self.ns.result_type(g, x) if self.ns.is_array(g) else self.ns.dtype(x.dtype)
        return self.add_at(self.xp.zeros(self.ns.shape(x), dtype=dtype), index, g)

    def added_at(self, acc: Any, x: Any, index: Any, g: Any) -> Any:
        """``add_grads(acc, getitem_grad(g, x, index))``, ``acc`` unchanged: a container's
        gradient rebuilt with only the item at ``index`` new."""
        if isinstance(acc, dict) and isinstance(x, dict) and index in acc or isinstance(
                acc, (list, tuple)) and isinstance(x, (list, tuple)) and len(acc) == len(x):
            return self.add_at(acc, index, g)
        return add_grads(acc, self.getitem_grad(g, x, index))

    def add_at(self, acc: Any, index: Any, g: Any) -> Any:
        """``acc[index] += g`` on a gradient ``acc`` that generated code made (containers rebuilt)."""
        if isinstance(acc, dict):
            return {**acc, index: add_grads(acc[index], g)}
        if isinstance(acc, (list, tuple)):
            out = list(acc)
            positions = range(len(out))[index] if isinstance(index, slice) else [index]
            parts = g if isinstance(index, slice) else [g]
            for i, gi in zip(positions, parts):
                out[i] = add_grads(out[i], gi)
            return type(acc)(*out) if hasattr(acc, "_fields") else type(acc)(out)
        return self.ns.index_add(acc, index, g)
