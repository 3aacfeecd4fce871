"""Gradients of tuples, lists and dicts, built and combined leaf by leaf."""
from __future__ import annotations

from typing import Any

import numpy as np

from .foreign import is_foreign, zeros


CONTAINERS = (list, tuple, dict)


def rebuild(like: Any, items: list[Any]) -> Any:
    """A tuple or list of ``items`` of the type of ``like`` (a named tuple too)."""
    return type(like)(*items) if hasattr(like, "_fields") else type(like)(items)


def zeros_grad(x: Any, seed: Any = None) -> Any:
    """A zero gradient shaped like ``x``; of the same structure for tuples, lists, dicts.

    ``seed``, the call's seed, gives an array of ``x`` the library of the gradients
    added to it (a NumPy parameter's gradient on Dask data is a Dask array)."""
    if type(x) is float or type(x) is int or type(x) is bool or x is None or isinstance(x, str):
        return 0.0  # an int's too: a later iteration may make the variable a float (None: unassigned;
        # a string: a dict's key held in a pair, ('a', v), which carries no gradient)
    if type(x) is complex:
        return 0j
    if isinstance(x, np.generic):  # a NumPy scalar: one of its type
        return x.dtype.type(0)
    if isinstance(x, dict):
        return {k: zeros_grad(v, seed) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return rebuild(x, [zeros_grad(v, seed) for v in x])
    if seed is not None and type(seed) is not float and type(x) is np.ndarray and is_foreign(seed):
        return zeros(x.shape, x.dtype, seed)
    if type(x) is np.ndarray and x.dtype.kind in "biu":  # gradients added to it are floats
        return np.zeros(x.shape)
    return np.zeros_like(x)


def add_grads(a: Any, b: Any) -> Any:
    """``a + b`` for gradients, leaf by leaf for tuples, lists and dicts.

    A key only one dict has is zero in the other: the gradient of a dict before
    ``d[key] = v`` added the key has that key too (``grad_like`` drops it from results).
    """
    if isinstance(a, dict):
        out = {k: add_grads(v, b[k]) if k in b else v for k, v in a.items()}
        return {**out, **{k: v for k, v in b.items() if k not in a}}
    if isinstance(a, (list, tuple)):
        return rebuild(a, [add_grads(u, v) for u, v in zip(a, b)])
    return a + b


def distinct(*grads: Any) -> tuple[Any, ...]:
    """The gradients of several arguments, as a tuple in which no array appears twice
    (a later occurrence, in a container too, is copied)."""
    seen: set[int] = set()

    def one(g: Any) -> Any:
        if type(g) is np.ndarray or is_foreign(g):
            if id(g) in seen:
                return g.copy()
            seen.add(id(g))
            return g
        if isinstance(g, dict):
            return {k: one(v) for k, v in g.items()}
        if isinstance(g, (list, tuple)):
            return rebuild(g, [one(v) for v in g])
        return g

    return tuple([one(g) for g in grads])


def own_grad(g: Any) -> Any:
    """``g`` as a gradient the caller may keep and update: read-only views are copied.

    Tuples, lists and dicts are copied leaf by leaf where a leaf is a view.
    """
    if type(g) is np.ndarray:
        return g if g.flags.writeable else g.copy()
    if isinstance(g, dict):
        return {k: own_grad(v) for k, v in g.items()}
    if isinstance(g, (list, tuple)):
        return rebuild(g, [own_grad(v) for v in g])
    return g
