"""``check_grad``: test a gradient against a finite difference along a random direction."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .api import grad
from .compiler import Wrt, describe, wrt_names
from .passes.callees import unwrap


def _leaves(x: Any) -> list[tuple[Any, ...]]:
    """Paths to the float leaves of a value (a tuple, list, dict, array or float)."""
    if isinstance(x, dict):
        return [(k, *p) for k, v in x.items() for p in _leaves(v)]
    if isinstance(x, (list, tuple)):
        return [(i, *p) for i, v in enumerate(x) for p in _leaves(v)]
    return [()]


def _get(x: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        x = x[key]
    return x


def _set(x: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(x, dict):
        return {**x, head: _set(x[head], rest, value)}
    items = list(x)
    items[head] = _set(items[head], rest, value)
    return type(x)(items)


def check_grad(f: Callable[..., Any], *args: Any, wrt: Wrt = 0, eps: float = 1e-6,
               rtol: float = 1e-5, atol: float = 1e-8, seed: int = 0) -> None:
    """Raise AssertionError unless ``grad(f, wrt)`` matches a central finite difference.

    Like autograd's ``check_grads``: for each ``wrt`` argument (each leaf of a tuple,
    list or dict), the directional derivative along a random direction ``v`` is
    compared with ``<gradient, v>``.  Use float64 inputs.
    """
    fn = unwrap(f)
    names, multiple = wrt_names(fn, wrt)
    grads = grad(f, wrt)(*args)
    grads = grads if multiple else (grads,)
    params = list(__import__("inspect").signature(fn).parameters)
    rng = np.random.default_rng(seed)
    for name, g in zip(names, grads):
        k = params.index(name)
        for path in _leaves(args[k]):
            x = np.asarray(_get(args[k], path), dtype=float)
            v = rng.standard_normal(x.shape)

            def at(t: float) -> float:
                value = x + t * v
                leaf = float(value) if np.ndim(_get(args[k], path)) == 0 and not isinstance(
                    _get(args[k], path), np.ndarray) else value
                new = list(args)
                new[k] = _set(args[k], path, leaf)
                return float(f(*new))

            numeric = (at(eps) - at(-eps)) / (2 * eps)
            analytic = float(np.sum(np.asarray(_get(g, path)) * v))
            if not np.isclose(analytic, numeric, rtol=rtol, atol=atol):
                where = name + "".join(f"[{p!r}]" for p in path)
                raise AssertionError(
                    f"gradient of {describe(fn)} with respect to {where} does not match finite "
                    f"differences: <grad, v> = {analytic!r}, finite difference = {numeric!r}")
