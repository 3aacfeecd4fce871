"""Gradients of Python's operations on tuples, lists and dicts: unpacking, ``tuple()``,
``list()`` and ``dict()``, ``+`` and ``*`` of displays, ``{**a, **b}``, the values a nested function passed on reads, ``sum()``, ``max()`` and ``min()`` of items,
and ``np.array`` of nested sequences."""
from __future__ import annotations

from collections.abc import Mapping
from functools import reduce
from typing import Any

import numpy as np

from ..errors import S2SADError
from .broadcast import unbroadcast
from .checks import place
from .elementwise import balanced_eq
from .reductions import extremum_grad
from .trees import add_grads, distinct, rebuild, zeros_grad


def unpack_grad(x: Any, grads: tuple[Any, ...]) -> Any:
    """Gradient of ``a, b, ... = x`` from the gradients of the names (None: zero)."""
    parts = [zeros_grad(v) if g is None else g for v, g in zip(x, grads)]
    if isinstance(x, (list, tuple)):
        return rebuild(x, list(distinct(*parts)))  # a, b in np.sum(a + b) share one array
    return np.stack([np.broadcast_to(p, np.shape(x)[1:]) for p in parts])


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


def make_record(cls: Any, items: tuple, tangent: bool = False) -> Any:
    """``cls(*items)``: a named tuple made in the differentiated function (``P(a, b=c)``),
    from its first fields in order (the others: their defaults, which for a ``tangent`` are
    zeros)."""
    if tangent:
        items = (*items, *(zeros_grad(cls._field_defaults[f]) for f in cls._fields[len(items):]))
    return cls(*items)


def replace_fields(record: Any, names: tuple, values: tuple) -> Any:
    """``record._replace(n1=v1, ...)`` of a named tuple: ``names`` given ``values``."""
    return record._replace(**dict(zip(names, values)))


def fields_of(record: Any, names: tuple) -> tuple:
    """The fields ``names`` of a named tuple (the gradient of the values ``_replace`` gives)."""
    return tuple(getattr(record, n) for n in names)


def concat(x: Any, y: Any) -> Any:
    """``x + y`` where one operand is a list or tuple display (``xs + [v]``): generated code
    spells it so, and differentiating generated code knows it is no arithmetic."""
    return x + y


def concat_grad(g: Any, x: Any, y: Any, right: bool) -> Any:
    """Gradient of ``x + y`` with respect to y (``right``) or x, where one operand is a list
    or tuple display: its part of g when both are lists or tuples (a concatenation), g
    reduced to the operand's shape otherwise (an array plus a list adds elementwise)."""
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return g[len(x):] if right else g[:len(x)]
    return unbroadcast(g, y if right else x)


def repeat_items(x: Any, n: Any) -> Any:
    """``x * n`` (or ``n * x``) where ``x`` may be a list or tuple: its items ``n`` times over;
    otherwise (an array or number that compiling could not tell from a list) ``x`` times ``n``.
    Generated code spells it so, and differentiating generated code knows what it is.
    A list or tuple times an ``n`` that is no int (an array: NumPy would multiply
    elementwise) is refused."""
    if isinstance(x, (list, tuple)) and (isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer))):
        raise S2SADError(
            f"a list or tuple times a {type(n).__name__} is differentiated only as a repetition "
            f"([x] * n, n an int); for arithmetic on its items, write np.asarray([...]) * a")
    return x * n


def repeat_items_grad(g: Any, x: Any, n: Any) -> Any:
    """Gradient of ``repeat_items(x, n)``: each item's gradient summed over its ``n`` copies
    (``g * n`` reduced to x's shape where ``x`` is no list or tuple)."""
    if not isinstance(x, (list, tuple)):
        return unbroadcast(g * n, x)
    size = len(x)
    parts = [reduce(add_grads, g[i::size]) if n > 0 else zeros_grad(item) for i, item in enumerate(x)]
    return rebuild(x, list(distinct(*parts)))


def merge_dicts(a: Any, b: Any) -> dict:
    """``{**a, **b}``: the primitive of a dict display that unpacks dicts (``{**d, "k": v}``,
    ``dict(d, k=v)``)."""
    return {**a, **b}


def merge_dicts_grad(g: Any, a: Any, b: Any, right: bool) -> dict:
    """Gradient of ``{**a, **b}`` with respect to b (``right``: g's item for each of its keys)
    or a (g's item for each key b does not replace, zero for those it does)."""
    if right:
        return {k: g[k] for k in b}
    return {k: zeros_grad(v) if k in b else g[k] for k, v in a.items()}


class BoundClosure(tuple):
    """The values a nested function reads from the function that passes it to another (a
    tuple, whose items carry their gradients), called as the nested function with them:
    ``g(v)`` is ``function(v, w=g[0])``.  A gradient rebuilt in its type has no function."""

    function: Any = None
    outer: tuple[str, ...] = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs, **dict(zip(self.outer, self)))


def call_object(f: Any, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)``: how generated code spells the call of an object s2sad finds as
    the call runs (``layer(x)`` for each layer of a list), which its code for ``f.__call__``
    differentiates (``f`` a class makes an instance, as in Python)."""
    return f(*args, **kwargs)


def bind_closure(values: tuple[Any, ...], function: Any, outer: tuple[str, ...]) -> BoundClosure:
    """The nested function ``function`` with the values ``values`` of the variables ``outer``
    it reads from the function that passes it on (see :class:`BoundClosure`)."""
    bound = BoundClosure(values)
    bound.function, bound.outer = function, outer
    return bound


def sum_items_grad(g: Any, items: Any) -> Any:
    """Gradient of Python's ``sum(items)``: every item gets g, reduced to its shape, each
    its own array (the caller may update one in place)."""
    if isinstance(items, (list, tuple)):
        return rebuild(items, list(distinct(*(unbroadcast(g, v) for v in items))))
    out = np.empty(np.shape(items), dtype=np.result_type(g))
    out[...] = g
    return out


def array_grad(g: Any, obj: Any) -> Any:
    """Gradient of ``np.array(obj)`` for nested lists/tuples of scalars and arrays."""
    if isinstance(obj, (list, tuple)):
        return type(obj)(array_grad(g[i], o) for i, o in enumerate(obj))
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind == "f" and np.result_type(g).kind == "f":
        g = np.asarray(g, dtype=obj.dtype)  # np.asarray(x, dtype=np.float32): x's gradient in x's dtype
    return g if np.ndim(obj) or not isinstance(g, np.ndarray) else g[()]


def choice_grad(g: Any, items: Any, ans: Any, other: Any = None) -> Any:
    """Gradient of Python's ``max(items)`` or ``max(items, other)`` (or min) w.r.t. items; ties share."""
    if other is not None:
        return g * balanced_eq(items, ans, other)
    if isinstance(items, (list, tuple)):
        hits = [bool(v == ans) for v in items]
        return rebuild(items, [g * (1.0 if hit else 0.0) / sum(hits) for hit in hits])
    return extremum_grad(g, items, ans, 0, False)


def choice_jvp(t: Any, items: Any, ans: Any, other: Any = None) -> Any:
    """Tangent of Python's ``max(items)`` or ``max(items, other)`` (or min) from items' tangent t."""
    if other is not None:
        return t * balanced_eq(items, ans, other)
    if isinstance(items, (list, tuple)):
        return sum(ti * s for ti, s in zip(t, choice_grad(1.0, items, ans)))
    return np.sum(t * extremum_grad(1.0, items, ans, 0, False))


def sort_order(items: Any, key: Any = None, reverse: bool = False) -> list[int]:
    """The indices of ``items`` in the order ``sorted(items, key=key, reverse=reverse)`` puts
    them (a stable sort of the indices by the items' keys finds the same order)."""
    items = list(items)
    value = (lambda i: items[i]) if key is None else (lambda i: key(items[i]))
    return sorted(range(len(items)), key=value, reverse=reverse)


def items_in_order(items: Any, order: list[int] | None = None) -> list[Any]:
    """The items a loop over ``items`` sees (a dict's keys), as a list: all of them, or those
    at the positions ``order`` (``sorted(items, ...)`` from the order the sort finds)."""
    listed = list(items)
    return listed if order is None else [listed[i] for i in order]


def items_in_order_grad(g: Any, items: Any, order: list[int] | None = None) -> Any:
    """Gradient of ``items_in_order(items, order)``: each item's from its place in the list (a
    dict's keys carry none)."""
    if isinstance(items, dict):
        return zeros_grad(items)
    parts: list[Any] = list(g)
    if order is not None:
        for position, i in enumerate(order):
            parts[i] = g[position]
    if isinstance(items, (list, tuple)):
        return rebuild(items, parts)
    return np.reshape(np.asarray(parts, dtype=np.result_type(*parts[:1], items)), np.shape(items))


def items_in_order_tangent(t: Any, items: Any, order: list[int] | None = None) -> Any:
    """Tangent of ``items_in_order(items, order)`` from the items' tangent ``t``."""
    if isinstance(items, dict):
        return [0.0] * len(items)
    return items_in_order(t, order)


def has_key(mapping: Any, key: Any, where: str) -> bool:
    """``key in mapping`` for ``mapping.get(key, default)``, which s2sad lowers as
    ``mapping[key] if key in mapping else default``: refused for anything but a dict."""
    if not isinstance(mapping, dict):
        raise S2SADError(f"'.get' was differentiated as dict.get, but the value it is called on "
                         f"is a {type(mapping).__name__}; wrap the call in stop_gradient(...), or "
                         f"index the value directly", place(where))
    return key in mapping


def check_sequence(items: Any) -> None:
    """A ``for`` over ``items`` lowered as a loop by position (``items[i]``): refused, as the
    code runs, for what is not a sequence (a mapping iterates its keys; a set, an iterator or
    a dict view has no positions), where Python's loop would differ.  (Raised inside generated
    code, the error is shown at the user's loop.)"""
    if isinstance(items, (list, tuple, np.ndarray)):
        return
    if isinstance(items, Mapping):
        raise S2SADError(f"this loop iterates over a {type(items).__name__}'s keys, which s2sad "
                         f"follows when written 'for k in d.keys()' (or d.values(), d.items(), or "
                         f"a body that reads d[k])")
    if not (hasattr(type(items), "__getitem__") and hasattr(type(items), "__len__")):
        raise S2SADError(f"this loop iterates over a {type(items).__name__}, which s2sad follows "
                         f"by position only for sequences (lists, tuples, arrays); iterate over "
                         f"list(...) of it")


def check_stored_array(container: Any, value: Any, message: str, where: str) -> None:
    """``container[key] = value``, with ``value`` an array the function changes in place
    afterwards: refused when the container is a list or dict, which then holds that very array
    (an array's item is a copy)."""
    if isinstance(container, (list, dict)) and isinstance(value, np.ndarray):
        raise S2SADError(message, place(where))


def check_shared_item(container: Any, index: Any, message: str, where: str, elsewhere: bool = True) -> None:
    """``container[index] op= v`` on a list, tuple or dict: refused when the item is an array or
    a list (``op=`` changes it in place) that ``elsewhere`` another name may hold, or that is
    another item of the container too (``[y, y]``); a number, or an item of an array, is a new
    value, as s2sad writes it."""
    if not isinstance(container, (list, tuple, dict)):
        return
    item = container[index]
    if isinstance(item, (bool, int, float, complex, np.generic)):
        return
    items = list(container.values() if isinstance(container, dict) else container)
    if elsewhere or [id(v) for v in items].count(id(item)) > 1 or _shares_memory(item, items):
        raise S2SADError(message, place(where))


def _shares_memory(item: Any, items: list[Any]) -> bool:
    """Whether the array ``item`` shares memory with another array of ``items`` (a view)."""
    if type(item) is not np.ndarray:
        return False
    root, viewed = _memory(item), item.base is not None
    return any(v is not item and type(v) is np.ndarray and (viewed or v.base is not None)
               and _memory(v) is root and np.may_share_memory(v, item) for v in items)


def _memory(x: Any) -> Any:
    """The array that owns the memory of ``x`` (a view's base, followed), or ``x``."""
    while isinstance(getattr(x, "base", None), np.ndarray):
        x = x.base
    return x


def check_length(items: Any, n: int, where: str) -> None:
    """``zip(*rows)`` in a loop that unpacks each item into ``n`` names, lowered as
    ``zip(rows[0], ..., rows[n - 1])``: refused unless rows has n items, as Python would."""
    if isinstance(items, dict):
        raise S2SADError("zip(*d) of a dict zips its keys, which s2sad does not follow; pass the "
                         "sequences one by one", place(where))
    if len(items) != n:
        raise S2SADError(f"zip(*rows) yields items of {len(items)} values here, which the loop "
                         f"unpacks into {n} names", place(where))


def check_list(x: Any, message: str, where: str) -> None:
    """``xs.sort()``, ``xs.reverse()`` or ``xs.remove(v)``, written as a new list: refused
    unless ``xs`` is a list (an array's ``sort`` sorts it in place as an array)."""
    if not isinstance(x, list):
        raise S2SADError(f"{message} (here it is a {type(x).__name__})", place(where))


def position_of(items: list, value: Any) -> int:
    """The position ``items.remove(value)`` removes: that of the first item that is ``value``
    or equal to it, as Python's ``list.index`` finds it (a ValueError if none is)."""
    return items.index(value)


def without_item(items: Any, key: Any) -> Any:
    """``del items[key]`` as a new list or dict: an index, a slice or a key, as Python deletes."""
    if not isinstance(items, (list, dict)):
        raise S2SADError(f"'del' of an item of a {type(items).__name__}: s2sad follows it on a "
                         f"list or dict")
    out = list(items) if isinstance(items, list) else dict(items)
    del out[key]
    return out


def without_item_grad(g: Any, items: Any, key: Any) -> Any:
    """Gradient of ``without_item(items, key)``: each item left its part of ``g``, the deleted
    ones zero."""
    if isinstance(items, dict):
        return {k: g[k] if k in g else zeros_grad(v) for k, v in items.items()}
    kept = list(range(len(items)))
    del kept[key]
    parts = [zeros_grad(v) for v in items]
    for position, i in enumerate(kept):
        parts[i] = g[position]
    return parts


def reversed_order(items: Any) -> list[int]:
    """The positions of ``items`` in the order ``reversed(items)`` gives them: last first."""
    return list(range(len(items) - 1, -1, -1))


def check_slice_length(x: Any, index: Any, v: Any, message: str, where: str) -> None:
    """``x[i:j] = v``: refused when ``x`` is a list that it would make longer or shorter
    (s2sad follows an assignment that keeps each item's place)."""
    if isinstance(x, list) and isinstance(index, slice) and len(x[index]) != len(v):
        raise S2SADError(message, place(where))


def prod_operands(items: Any) -> Any:
    """The items of a list or tuple broadcast against each other and stacked (``math.prod``'s)."""
    return np.stack(np.broadcast_arrays(*items))


def prod_operands_grad(ct: Any, items: Any) -> Any:
    """Gradient of ``prod_operands(items)``: each item's row, summed back to its shape (of an
    array's rows, the array's shape)."""
    if not isinstance(items, (list, tuple)):
        return np.reshape(ct, np.shape(items))
    return type(items)(unbroadcast(ct[i], item) for i, item in enumerate(items))
