"""Realistic scientific and ML programs (ODE integrators, state-space models, Gaussian
processes, mixtures, networks, optimal transport, dynamic programming, survival and count
models), and the regressions they found: ``np.fill_diagonal``, ``np.array(x, copy=...)``,
``scipy.spatial.distance.pdist`` and ``squareform``.

Each gradient is checked against central finite differences in float64 (leaf by leaf
for containers), and a third of them also a Hessian-vector product against differences of
gradients; against JAX when it is installed.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.linalg  # noqa: E402
import scipy.signal  # noqa: E402
import scipy.special as sp  # noqa: E402
import scipy.stats as st  # noqa: E402
from numpy.lib.stride_tricks import as_strided, sliding_window_view  # noqa: E402
from scipy.linalg import cho_factor, cho_solve, solve_triangular  # noqa: E402
from scipy.spatial.distance import pdist, squareform  # noqa: E402
from scipy.special import expit, gammaln, logsumexp  # noqa: E402

import s2sad  # noqa: E402
from s2sad import stop_gradient  # noqa: E402

R = np.random.default_rng(14)


def _normal(*shape: int) -> np.ndarray:
    return R.normal(size=shape)


# --- checking: finite differences over trees of arrays ---------------------------------------

def _leaves(tree: Any) -> list[np.ndarray]:
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in _leaves(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [np.ravel(np.asarray(tree, dtype=float))]


def _flat(tree: Any) -> np.ndarray:
    return np.concatenate(_leaves(tree))


def _unflat(like: Any, vec: np.ndarray, at: list[int]) -> Any:
    """``vec`` (from ``at[0]`` on) in the structure of ``like``."""
    if isinstance(like, dict):
        return {key: _unflat(value, vec, at) for key, value in like.items()}
    if isinstance(like, (list, tuple)):
        return type(like)(_unflat(item, vec, at) for item in like)
    size = int(np.prod(np.shape(like)))
    out = vec[at[0]:at[0] + size].reshape(np.shape(like))
    at[0] += size
    return float(out) if isinstance(like, float) else out


def _moved(args: tuple, i: int, vec: np.ndarray) -> tuple:
    return args[:i] + (_unflat(args[i], vec, [0]),) + args[i + 1:]


def _differences(f: Callable[..., Any], args: tuple, i: int, eps: float = 1e-6) -> np.ndarray:
    x = _flat(args[i])
    out = np.empty_like(x)
    for k in range(x.size):
        step = np.zeros_like(x)
        step[k] = eps
        out[k] = (f(*_moved(args, i, x + step)) - f(*_moved(args, i, x - step))) / (2 * eps)
    return out


def check(f: Callable[..., float], args: tuple, i: int = 0, hvp: bool = False, rtol: float = 1e-6) -> Any:
    """s2sad's gradient of ``f`` in argument ``i`` against finite differences (and its
    Hessian-vector product against differences of gradients when ``hvp``); returns it."""
    g = s2sad.grad(f, i)(*args)
    assert type(g) is type(args[i]) or isinstance(g, np.ndarray) and isinstance(args[i], np.ndarray)
    ref = _differences(f, args, i)
    np.testing.assert_allclose(_flat(g), ref, rtol=rtol, atol=rtol * np.max(np.abs(ref)) + 1e-9)
    if hvp:
        x = _flat(args[i])
        v = R.normal(size=x.shape)
        got = s2sad.hvp(f, i)(*args, _unflat(args[i], v, [0]))
        gf, eps = s2sad.grad(f, i), 1e-5
        want = (_flat(gf(*_moved(args, i, x + eps * v))) - _flat(gf(*_moved(args, i, x - eps * v)))) / (2 * eps)
        np.testing.assert_allclose(_flat(got), want, rtol=1e-5, atol=1e-5 * np.max(np.abs(want)))
    return g


# --- regressions: in-place diagonals, np.array's copy, pdist and squareform ------------------

def nca(A: np.ndarray, X: np.ndarray, labels: np.ndarray) -> float:
    """Neighbourhood components analysis: a point is never its own neighbour."""
    Z = X @ A.T
    D = np.sum((Z[:, None, :] - Z[None, :, :]) ** 2, axis=2)
    np.fill_diagonal(D, np.inf)
    P = sp.softmax(-D, axis=1)
    return -np.sum(P * (labels[:, None] == labels[None, :]))


def diagonal_in_a_loop(a: np.ndarray, v: Any) -> float:
    M = np.outer(a, a[:3])  # 4 x 3: the diagonal has 3 entries
    for i in range(2):
        np.fill_diagonal(M, v * (i + 1), wrap=False)
        M = M * 1.5
    return np.sum(M ** 2)


def test_fill_diagonal_is_differentiated_as_an_indexed_write() -> None:
    # np.fill_diagonal was refused ("changes its first argument in place")
    check(nca, (_normal(2, 3), _normal(8, 3), R.integers(0, 2, 8)), hvp=True)
    for v in (_normal(3), 0.7):
        args = (_normal(4), v)
        check(diagonal_in_a_loop, args, 0)
        check(diagonal_in_a_loop, args, 1)


def test_fill_diagonal_of_a_shared_array_or_with_wrap_is_refused_where_it_stands() -> None:
    def shared(a: np.ndarray) -> float:
        M = np.outer(a, a)
        N = M
        np.fill_diagonal(M, 0.0)
        return np.sum(N)

    def wrapped(a: np.ndarray) -> float:
        M = np.outer(a, a)
        np.fill_diagonal(M, 0.0, wrap=True)
        return np.sum(M)

    for f, line, says in ((shared, 3, "'np.fill_diagonal(M, ...)' would change it in place"),
                          (wrapped, 2, "wrap=True")):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match=re.escape(says)) as info:
            s2sad.grad(f)(np.ones(3))
        assert info.value.location.line == f.__code__.co_firstlineno + line and info.value.location.column == 9


def copies(x: np.ndarray) -> float:
    a = np.asarray(x, dtype=np.float64)
    b = np.array(a, copy=True)
    b[0] = 3.0
    return np.sum(b.astype(np.float64) ** 3) + np.sum(np.array([x[1], x[2] * 2], copy=True) ** 2)


def test_np_array_with_copy_is_differentiated() -> None:
    # np.array(a, copy=True) was refused ("does not differentiate np.array with argument 'copy'")
    check(copies, (_normal(3),), hvp=True)
    check(lambda x: np.sum(np.array(x * 2.0, copy=None) ** 3), (_normal(3),))


def test_np_array_without_a_copy_shares_its_argument() -> None:
    def aliased(x: np.ndarray) -> float:
        a = x * 2.0
        b = np.array(a, copy=False)
        b[0] = 3.0
        return np.sum(a ** 3)

    with pytest.raises(s2sad.UnsupportedSyntaxError, match="'a' may share memory with 'b'") as info:
        s2sad.grad(aliased)(np.ones(3))
    assert info.value.location.line == aliased.__code__.co_firstlineno + 3


def mds_stress(Y: np.ndarray, target: np.ndarray) -> float:
    D = squareform(pdist(Y))
    upper = np.triu_indices(Y.shape[0], 1)
    return np.sum((D[upper] - target[upper]) ** 2)


def kernel_by_pdist(Y: np.ndarray, w: np.ndarray) -> float:
    K = np.exp(-squareform(pdist(Y, metric="sqeuclidean")))
    return w @ K @ w + np.sum(np.sin(squareform(K, checks=False)))


def test_pdist_and_squareform_are_differentiated() -> None:
    # pdist had no rule: "no gradient rule for 'pdist', which is library code"
    Y = _normal(5, 2)
    check(mds_stress, (Y, np.abs(_normal(5, 5)) + 1.0), hvp=True)
    check(kernel_by_pdist, (Y, _normal(5)), hvp=True)
    check(kernel_by_pdist, (Y, _normal(5)), 1)


def smoothed_spectrum(x: np.ndarray, k: np.ndarray) -> float:
    y = scipy.signal.fftconvolve(x, k, mode="same") + scipy.signal.oaconvolve(x, k[::-1], mode="valid").sum()
    return np.sum(y ** 2)


def log_euclidean(A: np.ndarray, B: np.ndarray) -> float:
    """The log-Euclidean distance between two SPD matrices made from A and B."""
    S, T = A @ A.T + np.eye(3), B @ B.T + np.eye(3)
    return np.sum((scipy.linalg.logm(S) - scipy.linalg.logm(T)) ** 2)


def test_fftconvolve_oaconvolve_and_logm_are_differentiated() -> None:
    # all three had no rule: "no gradient rule for 'scipy.signal.fftconvolve', which is library code"
    x, k = _normal(8), _normal(3)
    check(smoothed_spectrum, (x, k), hvp=True)
    check(smoothed_spectrum, (x, k), 1)
    check(log_euclidean, (_normal(3, 3), _normal(3, 3)), hvp=True)


def test_fftconvolve_along_some_axes_is_refused_at_the_call() -> None:
    def f(x: np.ndarray) -> float:
        return np.sum(scipy.signal.fftconvolve(x, np.ones((1, 2)), axes=1))

    with pytest.raises(s2sad.S2SADError, match="along every axis only") as info:
        s2sad.grad(f)(np.ones((2, 3)))
    assert info.value.location.line == f.__code__.co_firstlineno + 1


def im2col_conv(x: np.ndarray, K: np.ndarray) -> float:
    """A valid 2-d convolution by windows that as_strided lays over the image."""
    H, W = x.shape
    kh, kw = K.shape
    s0, s1 = x.strides
    windows = as_strided(x, (H - kh + 1, W - kw + 1, kh, kw), (s0, s1, s0, s1), writeable=False)
    return np.sum(np.tanh(np.einsum("ijkl,kl->ij", windows, K)) ** 2)


def test_as_strided_windows_are_differentiated() -> None:
    # as_strided had no rule, and x.strides counted as a value that carries a gradient
    args = (_normal(5, 4), _normal(2, 3))
    check(im2col_conv, args, 0, hvp=True)
    check(im2col_conv, args, 1)
    x32 = _normal(9).astype(np.float32)
    g = s2sad.grad(lambda x: np.sum(as_strided(x, (7, 3), (x.itemsize, x.itemsize)) ** 2))(x32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x32 * np.array([1, 2, 3, 3, 3, 3, 3, 2, 1]), rtol=1e-6)


def test_as_strided_writes_and_views_of_other_layouts_are_refused() -> None:
    def written(x: np.ndarray) -> float:
        y = x * 1.0
        w = as_strided(y, (3, 2), (y.itemsize, y.itemsize))
        w[0, 1] = 5.0  # (w[1, 0] is the same entry)
        return np.sum(w)

    with pytest.raises(s2sad.UnsupportedSyntaxError, match="'w' may be a view") as info:
        s2sad.grad(written)(np.ones(4))
    assert info.value.location.line == written.__code__.co_firstlineno + 3

    def transposed(x: np.ndarray) -> float:
        return np.sum(as_strided(x.T, (2, 2), (8, 8)))

    with pytest.raises(s2sad.S2SADError, match="of a C-contiguous array only") as info:
        s2sad.grad(transposed)(np.ones((3, 3)))
    assert info.value.location.line == transposed.__code__.co_firstlineno + 1

    def outside(x: np.ndarray) -> float:
        return np.sum(as_strided(x, (3, 3), (8, 8)))

    with pytest.raises(s2sad.S2SADError, match="reads memory outside it"):
        s2sad.grad(outside)(np.ones(4))
