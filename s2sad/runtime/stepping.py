"""Derivatives by a complex step, for the helpers' own rules (higher orders), and what a
complex step changes: the refusal of complex values in rules for real ones."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import S2SADError
from .dtypes import dtype_kind
from .trees import rebuild


_STEP = 1e-20  # f(x + i h t).imag / h is f'(x) t, with an error of order h ** 2: none in floats


def _leaves(tree: Any) -> list[Any]:
    """The arrays and numbers of a tuple, list or dict, in order (None left out)."""
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in _leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in _leaves(v)]
    return [] if tree is None else [tree]


def _map(fun: Any, *trees: Any) -> Any:
    """``fun`` applied leaf by leaf to trees of one structure (None stays None)."""
    first = trees[0]
    if first is None:
        return None
    if isinstance(first, dict):
        return {k: _map(fun, *(t[k] for t in trees)) for k in first}
    if isinstance(first, (list, tuple)):
        return rebuild(first, [_map(fun, *items) for items in zip(*trees)])
    return fun(*trees)


def step_jvp(fun: Any, which: int, t: Any, args: tuple[Any, ...]) -> Any:
    """The derivative of ``fun(*args)`` along ``t`` in argument ``which``, by a complex step:
    exact to rounding for a helper analytic in that argument (arithmetic, matmul, solve)."""
    if any(dtype_kind(leaf) == "c" for leaf in (*_leaves(args), *_leaves(t)) if leaf is not None):
        raise S2SADError(f"s2sad differentiates {fun.__name__} of complex values once, not twice "
                         f"(its second derivative is taken by a complex step, which needs real values)")
    scale = max((float(np.max(np.abs(leaf))) for leaf in _leaves(t) if np.size(leaf)), default=0.0)
    scale = scale or 1.0
    moved = list(args)
    moved[which] = _map(lambda a, d: a + (1j * _STEP / scale) * (0.0 if d is None else d), args[which], t)
    _STEPPING.append(fun)
    try:
        out = fun(*moved)
    finally:
        _STEPPING.pop()
    dtype = np.result_type(*[leaf for leaf in _leaves(args[which])], *_leaves(t))

    def real(v: Any) -> Any:
        part = np.imag(v) * (scale / _STEP)
        if isinstance(v, complex):
            return float(part)
        return np.asarray(part).astype(dtype if dtype.kind == "f" else np.float64)[()]

    return _map(real, out)


#: The helpers a complex step is running (their complex arguments are no complex data).
_STEPPING: list[Any] = []


def stepping() -> bool:
    """Whether a complex step is running a helper (its complex arguments are no complex data)."""
    return bool(_STEPPING)


def real_only(name: str, *values: Any) -> None:
    """Refuse complex values in a rule that differentiates real ones only: under autograd's
    convention its gradient would need conjugates it does not take (a sort, a norm, a
    factorization), so it would be silently wrong."""
    if not _STEPPING and any(dtype_kind(v) == "c" for v in values if v is not None):
        raise S2SADError(f"a gradient reaches {name} of complex values, which s2sad differentiates "
                         f"for real values only; apply it to np.real(...), np.imag(...) or "
                         f"np.abs(...) of them")


def column_vjp(fun: Any, which: int, g: Any, args: tuple[Any, ...], linear: bool = False) -> Any:
    """The transpose of the derivative of ``fun(*args)`` in argument ``which``, applied to
    ``g``: one derivative per entry of that argument (a direct call where fun is linear in
    it, a complex step otherwise).  For the reverse mode of generated code over small inputs."""
    x = args[which]
    count = len(_leaves(x))

    def along(k: int, i: tuple[int, ...]) -> Any:
        """The unit vector at entry ``i`` of leaf ``k`` of x, zeros elsewhere."""
        seen = iter(range(count))
        return _map(lambda leaf: _unit(leaf, i if next(seen) == k else None), x)

    def dot(a: Any, b: Any) -> float:
        return float(sum(np.sum(np.real(u) * np.real(v)) for u, v in zip(_leaves(a), _leaves(b))))

    grads = []
    for k, leaf in enumerate(_leaves(x)):
        out = np.zeros(np.shape(leaf), dtype=np.result_type(leaf, 0.0))
        for i in np.ndindex(*np.shape(leaf)):
            if linear:
                moved = list(args)
                moved[which] = along(k, i)
                column = fun(*moved)
            else:
                column = step_jvp(fun, which, along(k, i), args)
            out[i] = dot(g, column)
        grads.append(out[()] if not np.ndim(leaf) else out)
    result = iter(grads)
    return _map(lambda leaf: next(result), x)


def _unit(like: Any, i: tuple[int, ...] | None) -> Any:
    """Zeros shaped like ``like`` (a float for a float), with a one at ``i`` unless it is None."""
    out = np.zeros(np.shape(like), dtype=np.result_type(like, 0.0))
    if i is not None:
        out[i] = 1.0
    return float(out) if isinstance(like, float) else out if np.ndim(like) else out[()]


def no_third_order(fun: Any) -> Any:
    """What a third derivative through ``fun`` is: refused."""
    raise S2SADError(
        f"s2sad differentiates generated gradient code once more (second order: hvp, hessian, "
        f"grad of grad), but not a third time: a third derivative reaches its helper "
        f"{getattr(fun, '__name__', fun)}; differentiate at most twice")
