"""Shared helpers for gradient tests: finite differences and functions made from source text."""
from __future__ import annotations

import copy
import itertools
import linecache
import sys
import types
from typing import Any, Callable, Sequence

import numpy as np

import s2sad

_counter = itertools.count()


def numerical_grad(f: Callable[..., Any], args: Sequence[Any], argnum: int, eps: float = 1e-6) -> Any:
    """Central finite differences of scalar ``f(*args)`` with respect to ``args[argnum]``.

    A float argument gets a float; an array argument an array of its shape.
    """
    x = args[argnum]

    def at(value: Any) -> float:
        moved = list(args)
        moved[argnum] = value
        return float(f(*moved))

    if isinstance(x, float):
        return (at(x + eps) - at(x - eps)) / (2 * eps)
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.shape)
    for i in np.ndindex(*x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        out[i] = (at(plus) - at(minus)) / (2 * eps)
    return out


def assert_grad_matches(f: Callable[..., Any], args: Sequence[Any], wrt: int | Sequence[int],
                        rtol: float = 1e-5, atol: float = 1e-7) -> None:
    """Check ``s2sad.grad(f, wrt)(*args)`` against central finite differences.

    For each argument in ``wrt`` the gradient must have the argument's shape
    and type (a float for a Python float, an array of the same dtype for an
    array), and match finite differences; the call must not change ``args``.
    ``value_and_grad`` (whose code computes the value, and seeds from it) must
    agree, in type and dtype too.
    """
    argnums = tuple(wrt) if isinstance(wrt, (tuple, list)) else (wrt,)
    before = copy.deepcopy(list(args))
    grads = s2sad.grad(f, wrt)(*args)
    _, both = s2sad.value_and_grad(f, wrt)(*args)
    grads = grads if isinstance(wrt, (tuple, list)) else (grads,)
    both = both if isinstance(wrt, (tuple, list)) else (both,)
    for arg, old in zip(args, before):
        assert type(arg) is type(old) and np.array_equal(arg, old), "the gradient call changed its input"
    assert len(grads) == len(argnums) == len(both)
    for argnum, g, h in zip(argnums, grads, both):
        x = args[argnum]
        for kind, grad in (("gradient", g), ("value_and_grad's gradient", h)):
            where = f"{kind} for argument {argnum}"
            if isinstance(x, float):
                assert isinstance(grad, float), f"{where} is {type(grad).__name__}, not a float"
            else:
                assert np.shape(grad) == np.shape(x), f"{where} has shape {np.shape(grad)}, not {np.shape(x)}"
                assert np.result_type(grad) == x.dtype, f"{where} has dtype {np.result_type(grad)}, not {x.dtype}"
        where = f"gradient for argument {argnum}"
        np.testing.assert_allclose(g, numerical_grad(f, args, argnum), rtol=rtol, atol=atol,
                                   err_msg=where)
        np.testing.assert_allclose(h, g, rtol=1e-12, atol=1e-300, err_msg=f"value_and_grad's {where}")


def make_function(source_text: str, globals_dict: dict[str, Any]) -> types.FunctionType:
    """Define the function in ``source_text`` so that ``inspect.getsource`` can read it.

    The text is compiled under a unique fake file name registered in
    ``linecache``; the function is defined in ``globals_dict`` and returned.
    """
    filename = f"<s2sad-rule-test-{next(_counter)}>"
    code = compile(source_text, filename, "exec")
    linecache.cache[filename] = (len(source_text), None, source_text.splitlines(True), filename)
    exec(code, globals_dict)
    name = next(c.co_name for c in code.co_consts if isinstance(c, types.CodeType))
    return globals_dict[name]


def count_calls(run: Callable[[], object]) -> int:
    """How many Python and C functions ``run()`` calls: work counted, not timed."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


def tree_flat(tree: Any) -> np.ndarray:
    """The floats of a tree of arrays (dicts, lists, tuples, named tuples), in one vector."""
    def leaves(node: Any) -> list[np.ndarray]:
        if isinstance(node, dict):
            return [leaf for key in node for leaf in leaves(node[key])]
        if isinstance(node, (list, tuple)):
            return [leaf for item in node for leaf in leaves(item)]
        return [np.ravel(np.asarray(node, dtype=float))]
    return np.concatenate(leaves(tree))


def tree_unflat(like: Any, vec: np.ndarray) -> Any:
    """``vec`` (as :func:`tree_flat` made it) in the structure of ``like``."""
    at = 0

    def build(node: Any) -> Any:
        nonlocal at
        if isinstance(node, dict):
            return {key: build(value) for key, value in node.items()}
        if isinstance(node, tuple) and hasattr(node, "_fields"):
            return type(node)(*[build(value) for value in node])
        if isinstance(node, (list, tuple)):
            return type(node)(build(item) for item in node)
        size = int(np.prod(np.shape(node)))
        out = vec[at:at + size].reshape(np.shape(node))
        at += size
        return float(out) if isinstance(node, float) else out
    return build(like)


def moved(args: Sequence[Any], i: int, vec: np.ndarray) -> tuple[Any, ...]:
    """``args`` with argument ``i`` (a tree of arrays) replaced by the flat vector ``vec``."""
    return (*args[:i], tree_unflat(args[i], vec), *args[i + 1:])


def numerical_tree_grad(f: Callable[..., Any], args: Sequence[Any], i: int, eps: float = 1e-6) -> np.ndarray:
    """Central differences of ``f`` in argument ``i`` (an array or a tree of arrays), flattened."""
    x = tree_flat(args[i])
    out = np.empty_like(x)
    for k in range(x.size):
        step = np.zeros_like(x)
        step[k] = eps
        out[k] = (f(*moved(args, i, x + step)) - f(*moved(args, i, x - step))) / (2 * eps)
    return out


def assert_hvp_matches(f: Callable[..., Any], args: Sequence[Any], wrt: int = 0, *,
                       rng: np.random.Generator | None = None) -> None:
    """``s2sad.hvp(f, wrt)`` against central differences of ``s2sad.grad(f, wrt)`` in a random
    direction (drawn from ``rng``)."""
    x = args[wrt]
    rng = np.random.default_rng(0) if rng is None else rng
    v = float(rng.normal()) if isinstance(x, float) else rng.normal(size=np.shape(x))
    grad = s2sad.grad(f, wrt)

    def at(t: float) -> np.ndarray:
        shifted = list(args)
        shifted[wrt] = x + t * v
        return np.asarray(grad(*shifted))
    expected = (at(1e-5) - at(-1e-5)) / 2e-5
    np.testing.assert_allclose(s2sad.hvp(f, wrt)(*args, v), expected, rtol=1e-4, atol=1e-6)


def check_all_orders(body: str, x: np.ndarray, globals_dict: dict[str, Any], rng: np.random.Generator,
                     second: bool = True) -> None:
    """``def f(x): return <body>``: grad against finite differences, jvp against grad, and
    (``second``) hvp against differences of grad."""
    f = make_function(f"def f(x):\n    return {body}\n", dict(globals_dict))
    g = s2sad.grad(f)(x)
    np.testing.assert_allclose(g, numerical_grad(f, [x], 0), rtol=1e-5, atol=1e-7)
    v = rng.standard_normal(x.shape)
    np.testing.assert_allclose(s2sad.jvp(f)(x, v)[1], np.sum(g * v), rtol=1e-9, atol=1e-12)
    if second:
        eps = 1e-6
        expected = (s2sad.grad(f)(x + eps * v) - s2sad.grad(f)(x - eps * v)) / (2 * eps)
        np.testing.assert_allclose(s2sad.hvp(f)(x, v), expected, rtol=1e-4, atol=1e-6)
