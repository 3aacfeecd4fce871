"""Gradients specialised to dicts, lists and tuples of arrays (parameters as a tree).

A container argument's signature says what it holds (keys, and each item's shape and
dtype), so the specialised code knows ``params["means"]`` and ``W1, b1 = params``, keeps
one variable per leaf of the container's gradient and returns a display of them: plain
NumPy, of the argument's structure, equal to the generic code's gradient.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

import s2sad
from s2sad import stop_gradient
from s2sad.rules.shapes import Known, KnownTree, known_of, signature_item
from s2sad.specializing import signature_of


def em(params, X, eye, upper):
    """The M-step objective of a Gaussian mixture (examples/em_gmm.py, inlined)."""
    d = X.shape[1]
    P = params["off_diagonal"] * upper + np.exp(params["log_diagonal"])[:, :, None] * eye
    a = params["logits"]
    z = a - stop_gradient(np.max(a))
    log_w = z - np.log(np.sum(np.exp(z), keepdims=True))
    diff = X[None, :, :] - params["means"][:, None, :]
    y = np.sum(diff[:, :, :, None] * P[:, None, :, :], axis=2)
    log_det = np.sum(params["log_diagonal"], axis=1)
    log_pdf = log_det[:, None] - 0.5 * np.sum(y ** 2, axis=2) - 0.5 * d * np.log(2 * np.pi)
    log_p = (log_w[:, None] + log_pdf).T
    p = np.exp(log_p - np.max(log_p, axis=1, keepdims=True))
    r = stop_gradient(p / np.sum(p, axis=1, keepdims=True))
    return np.mean(np.sum(r * log_p, axis=1))


def em_log_likelihood(params, X, eye, upper):
    """The mean log-likelihood, whose gradient the M-step objective's is (Fisher's identity)."""
    d = X.shape[1]
    P = params["off_diagonal"] * upper + np.exp(params["log_diagonal"])[:, :, None] * eye
    z = params["logits"] - np.max(params["logits"])
    log_w = z - np.log(np.sum(np.exp(z)))
    diff = X[None, :, :] - params["means"][:, None, :]
    y = np.sum(diff[:, :, :, None] * P[:, None, :, :], axis=2)
    log_pdf = np.sum(params["log_diagonal"], axis=1)[:, None] - 0.5 * np.sum(y ** 2, axis=2) \
        - 0.5 * d * np.log(2 * np.pi)
    log_p = (log_w[:, None] + log_pdf).T
    m = np.max(log_p, axis=1, keepdims=True)
    return np.mean(m[:, 0] + np.log(np.sum(np.exp(log_p - m), axis=1)))


def mlp(params, X, Y):
    W1, b1, W2, b2 = params
    H = np.tanh(X @ W1 + b1)
    out = H @ W2 + b2
    return 0.5 * np.mean((out - Y) ** 2)


def nested(params, X, Y):
    H = np.tanh(X @ params["hidden"]["W"] + params["hidden"]["b"])
    out = H @ params["out"]["W"] + params["out"]["b"]
    return params["scale"] * np.mean((out - Y) ** 2)


def shared(params, X):
    W, b = params
    return np.sum(np.tanh(X @ W + b)) + np.sum(params[0] ** 2)


def aliased(params, x):
    W = params["W"]
    return np.sum(np.tanh(x @ W)) + np.sum(W ** 2) + np.sum(params["b"] ** 2)


def looped(params, x):
    h = x
    for _ in range(3):
        h = np.tanh(h @ params["W"] + params["b"])
    return np.sum(h ** 2)


def _em_inputs(K=3, d=2, n=20, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    params = {"means": rng.normal(size=(K, d)), "log_diagonal": 0.1 * rng.normal(size=(K, d)),
              "off_diagonal": 0.1 * rng.normal(size=(K, d, d)), "logits": rng.normal(size=K)}
    params = {k: v.astype(dtype) for k, v in params.items()}
    return (params, rng.normal(size=(n, d)).astype(dtype), np.eye(d, dtype=dtype),
            np.triu(np.ones((d, d), dtype), 1))


def _mlp_inputs(kind=list, sizes=(4, 5, 2), n=6, seed=1):
    rng = np.random.default_rng(seed)
    a, h, o = sizes
    params = kind(rng.normal(size=s) for s in [(a, h), (h,), (h, o), (o,)])
    return params, rng.normal(size=(n, a)), rng.normal(size=(n, o))


def _nested_inputs(seed=2):
    rng = np.random.default_rng(seed)
    params = {"hidden": {"W": rng.normal(size=(3, 4)), "b": rng.normal(size=4)},
              "out": {"W": rng.normal(size=(4, 2)), "b": rng.normal(size=2)}, "scale": 1.5}
    return params, rng.normal(size=(5, 3)), rng.normal(size=(5, 2))


CASES = {"em": (em, _em_inputs), "mlp_list": (mlp, _mlp_inputs),
         "mlp_tuple": (mlp, lambda: _mlp_inputs(tuple)), "nested": (nested, _nested_inputs),
         "aliased": (aliased, lambda: ({"W": np.full((3, 2), 0.1), "b": np.ones(2)}, np.ones((4, 3)))),
         "looped": (looped, lambda: ({"W": np.eye(3) * 0.5 + 0.1, "b": np.arange(3.0) / 10},
                                     np.linspace(-1, 1, 6).reshape(2, 3)))}


def _made(g, args):
    """The code the dispatcher ``g`` runs for a call with ``args`` (a container among them:
    the first dispatcher reads its type, a second one what it holds)."""
    coarse = tuple((a.shape, a.dtype) if type(a) is np.ndarray else type(a) for a in args)
    return g.__s2sad_specialized__[coarse].__s2sad_specialized__[signature_of(args)]


def _code(text):
    """The generated text without its comments (which quote the user's lines)."""
    return "\n".join(line for line in text.split("\n") if not line.strip().startswith("#"))


def _same(a, b, what="grad", exact=True):
    """``a`` and ``b`` alike in structure, types, shapes and dtypes, and in value."""
    assert type(a) is type(b), f"{what}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b), what
        for i, (u, v) in enumerate(zip(a, b)):
            _same(u, v, f"{what}[{i}]", exact)
    elif isinstance(a, dict):
        assert list(a) == list(b), what
        for k in a:
            _same(a[k], b[k], f"{what}[{k!r}]", exact)
    else:
        assert np.shape(a) == np.shape(b) and getattr(a, "dtype", None) == getattr(b, "dtype", None), what
        if exact:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15, err_msg=what)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7, err_msg=what)


def _paths(tree, path=()):
    if isinstance(tree, dict):
        return [p for k, v in tree.items() for p in _paths(v, (*path, k))]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in _paths(v, (*path, i))]
    return [path]


def _get(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def _with(tree, path, value):
    """A copy of ``tree`` with ``value`` at ``path``."""
    if not path:
        return value
    items = list(tree.items()) if isinstance(tree, dict) else list(enumerate(tree))
    out = [(k, _with(v, path[1:], value) if k == path[0] else v) for k, v in items]
    return dict(out) if isinstance(tree, dict) else type(tree)(v for _, v in out)


def _numerical(f, params, rest, eps=1e-6):
    """Central differences of ``f(params, *rest)``, in params' structure."""
    grad = copy.deepcopy(params)
    for path in _paths(params):
        leaf = _get(params, path)
        if isinstance(leaf, float):
            d = (f(_with(params, path, leaf + eps), *rest) - f(_with(params, path, leaf - eps), *rest)) / (2 * eps)
            grad = _with(grad, path, float(d))
            continue
        g = np.zeros_like(leaf)
        for i in np.ndindex(leaf.shape):
            up, down = leaf.copy(), leaf.copy()
            up[i] += eps
            down[i] -= eps
            g[i] = (f(_with(params, path, up), *rest) - f(_with(params, path, down), *rest)) / (2 * eps)
        grad = _with(grad, path, g)
    return grad


def _close(a, b):
    for path in _paths(b):
        np.testing.assert_allclose(_get(a, path), _get(b, path), rtol=1e-5, atol=1e-7, err_msg=str(path))


@pytest.mark.parametrize("name", sorted(CASES))
def test_specialised_code_of_a_container_is_plain_numpy_and_right(name):
    fn, inputs = CASES[name]
    args = inputs()
    text = s2sad.adjoint_source(fn, "params", example=args)
    assert "s2sad" not in _code(text), text
    g = s2sad.grad(fn, "params", specialize=True)
    got = g(*args)
    assert _made(g, args).__s2sad_source__ == text
    _same(got, s2sad.grad(fn, "params", specialize=False)(*args))
    _close(got, _numerical(em_log_likelihood if fn is em else fn, args[0], args[1:]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_container_gradient_is_the_callers_own(name):
    fn, inputs = CASES[name]
    args = inputs()
    g = s2sad.grad(fn, "params", specialize=True)
    first = g(*args)
    leaves = [_get(first, p) for p in _paths(first) if isinstance(_get(first, p), np.ndarray)]
    assert len({id(x) for x in leaves}) == len(leaves)
    assert not any(np.shares_memory(x, _get(args[0], p)) for p in _paths(first)
                   if isinstance(x := _get(first, p), np.ndarray))
    assert all(x.flags.writeable for x in leaves)
    expected = copy.deepcopy(first)
    for x in leaves:
        x[...] = 7.0
    _same(g(*args), expected)


def test_a_new_shape_or_key_makes_a_new_specialisation():
    g = s2sad.grad(em, "params", specialize=True)
    params, *rest = _em_inputs()
    g(params, *rest)
    g(params, *rest)
    bigger = _em_inputs(K=4)
    g(*bigger)
    extra = {**params, "unused": np.ones(3)}
    got = g(extra, *rest)
    inner = g.__s2sad_specialized__[(dict, *((a.shape, a.dtype) for a in rest))]
    assert len(inner.__s2sad_specialized__) == 3
    _same(got, s2sad.grad(em, "params", specialize=False)(extra, *rest))
    assert list(got) == list(extra) and not got["unused"].any()
    reordered = {k: params[k] for k in reversed(params)}
    _same(g(reordered, *rest), s2sad.grad(em, "params", specialize=False)(reordered, *rest))
    assert len(inner.__s2sad_specialized__) == 4


def test_a_container_holding_anything_else_runs_the_generic_code():
    def f(w, options):
        return np.sum(options["scale"] * w ** 2)

    g = s2sad.grad(f, "w", specialize=True)
    w = np.arange(3.0)
    for other in ("a name", None, [np.ones(2), "x"]):
        options = {"scale": 2.0, "other": other}
        assert signature_of((w, options)) == ((w.shape, w.dtype), dict)
        _same(g(w, options), s2sad.grad(f, "w", specialize=False)(w, options))
    inner = g.__s2sad_specialized__[((w.shape, w.dtype), dict)]
    assert list(inner.__s2sad_specialized__) == [((w.shape, w.dtype), dict)]
    with pytest.raises(s2sad.S2SADError, match="other"):
        s2sad.grad(f, "options", specialize=True)(w, {"scale": 2.0, "other": "a name"})


@pytest.mark.parametrize("name", ["em", "mlp_list"])
def test_float32_items_keep_their_dtype(name):
    fn, inputs = CASES[name]
    args = tuple(_as32(a) for a in inputs())
    got = s2sad.grad(fn, "params", specialize=True)(*args)
    _same(got, s2sad.grad(fn, "params", specialize=False)(*args), exact=False)
    assert all(_get(got, p).dtype == np.float32 for p in _paths(got))


def _as32(x):
    if isinstance(x, dict):
        return {k: _as32(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_as32(v) for v in x)
    return x.astype(np.float32)


def test_a_list_read_by_index_and_unpacked():
    args = ([np.ones((3, 2)) * 0.3, np.arange(2.0)], np.linspace(0, 1, 12).reshape(4, 3))
    assert "s2sad" not in _code(s2sad.adjoint_source(shared, "params", example=args))
    got = s2sad.grad(shared, "params", specialize=True)(*args)
    _same(got, s2sad.grad(shared, "params", specialize=False)(*args))
    _close(got, _numerical(shared, args[0], args[1:]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_grad_and_hvp_of_a_container_agree_with_the_generic_code(name):
    fn, inputs = CASES[name]
    args = inputs()
    for make in (s2sad.value_and_grad, s2sad.hvp):
        extra = (copy.deepcopy(args[0]),) if make is s2sad.hvp else ()
        _same(make(fn, "params")(*args, *extra), make(fn, "params", specialize=False)(*args, *extra))


def test_a_container_and_an_array_together():
    params, X, Y = _mlp_inputs()
    got = s2sad.grad(mlp, (0, 1), specialize=True)(params, X, Y)
    _same(got, s2sad.grad(mlp, (0, 1), specialize=False)(params, X, Y))


def test_signature_items_and_knowns_are_inverse():
    params, X, *_ = _em_inputs()
    items = signature_of((params, X, 1.5, 3, (np.ones(2), [2.0, {"a": np.zeros((), np.float32)}])))
    for item in items:
        assert signature_item(known_of(item)) == item
    tree = known_of(items[0])
    assert isinstance(tree, KnownTree) and tree.keys == tuple(params) and tree.kind is dict
    assert tree.item("logits") == Known((3,), np.dtype(np.float64), np.ndarray)
    assert known_of(signature_of(([np.ones(2), np.ones(2, bool)],))[0]) is None
    assert signature_of(({1: np.ones(2)}, [object()])) == (dict, list)


def test_a_jvp_with_respect_to_a_dict_is_specialised_to_it():
    params, X, Y = _nested_inputs()
    tangent = {"hidden": {"W": np.ones((3, 4)), "b": np.ones(4)}, "out": {"W": np.ones((4, 2)), "b": np.ones(2)},
               "scale": 1.0}
    text = s2sad.jvp_source(nested, "params", example=(params, X, Y, tangent))
    assert "s2sad" not in _code(text), text
    got = s2sad.jvp(nested, "params")(params, X, Y, tangent)
    np.testing.assert_allclose(got, s2sad.jvp(nested, "params", specialize=False)(params, X, Y, tangent),
                               rtol=1e-12)
