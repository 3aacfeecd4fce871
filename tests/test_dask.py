"""Generated gradients on Dask arrays: lazy, equal to NumPy's, on any scheduler.

The data (``X``, ``y``, ...) are Dask arrays, the parameters NumPy arrays (or Dask arrays
too); the gradient must come back as a Dask collection, computing nothing until asked, and
equal to the gradient of the same function on the same data as NumPy arrays.  The same
cases run on a 2-worker ``dask.distributed.LocalCluster``, and on CuPy where a GPU is.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import s2sad  # noqa: E402
from s2sad import grad, stop_gradient, value_and_grad  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"dask_example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the losses ---------------------------------------------------------------------------------

def ridge(w, X, y):
    r = X @ w - y
    return np.mean(r ** 2) + 0.1 * np.sum(w ** 2)


def logistic(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.01 * np.sum(w ** 2)


def loop_loss(w, X, y):
    """Squared error summed block by block in a Python loop."""
    total = 0.0
    for i in range(0, X.shape[0], 25):
        r = X[i:i + 25] @ w - y[i:i + 25]
        total = total + np.sum(r ** 2)
    return total / X.shape[0]


def softmax_loss(W, b, X, Y):
    return load_example("stable_softmax").loss(W, b, X, Y)


def mlp_loss(params, X, Y):
    return load_example("adversarial").cross_entropy(params, X, Y)


RNG = np.random.default_rng(0)
N, D, K = 100, 5, 3


def regression_data():
    X = RNG.normal(size=(N, D))
    w = RNG.normal(size=D)
    y = X @ w + 0.1 * RNG.normal(size=N)
    return X, y


def classification_data():
    X = RNG.normal(size=(N, D))
    labels = RNG.integers(0, K, size=N)
    return X, np.eye(K)[labels]


#: (name, loss, wrt, parameters (NumPy), data (NumPy; made Dask arrays by the tests))
def cases() -> list[tuple]:
    X, y = regression_data()
    Xc, Y = classification_data()
    binary = (y > 0).astype(float)
    em = load_example("em_gmm")
    rbm = load_example("rbm_cd")
    adversarial = load_example("adversarial")
    params_em, _ = em.initial_parameters(X[:, :2], 3, 0)
    hidden = 4
    mlp = [RNG.normal(size=(D, hidden)) * 0.3, np.zeros(hidden), RNG.normal(size=(hidden, K)) * 0.3,
           np.zeros(K)]
    V = (RNG.random((N, D)) < 0.5).astype(float)
    rbm_params = (0.1 * RNG.normal(size=(D, hidden)), np.zeros(D), np.zeros(hidden))
    return [
        ("ridge", ridge, 0, (RNG.normal(size=D),), (X, y)),
        ("logistic", logistic, 0, (RNG.normal(size=D),), (X, binary)),
        ("loop", loop_loss, 0, (RNG.normal(size=D),), (X, y)),
        ("softmax", load_example("stable_softmax").loss, (0, 1),
         (0.1 * RNG.normal(size=(D, K)), np.zeros(K)), (Xc, Y)),
        ("em", em.m_step_objective, 0, (params_em,), (X[:, :2],)),
        ("rbm", lambda W, b, c, V: rbm.cd_loss(W, b, c, V, 1, np.random.default_rng(1)), (0, 1, 2),
         rbm_params, (V,)),
        ("mlp", adversarial.cross_entropy, 0, (mlp,), (Xc, Y)),
        ("adversarial", lambda params, X, Y: adversarial.adversarial_loss(params, X, Y, 0.1), 0,
         (mlp,), (Xc, Y)),
    ]


CASES = cases()
IDS = [c[0] for c in CASES]


def leaves(tree) -> list:
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in leaves(v)]
    return [tree]


def as_dask(a: np.ndarray, chunks: int = 25):
    return da.from_array(a, chunks=(chunks,) + a.shape[1:])


def check_lazy_and_equal(got, expected, scheduler=None) -> None:
    got_leaves, expected_leaves = leaves(got), leaves(expected)
    assert len(got_leaves) == len(expected_leaves)
    assert any(dask.is_dask_collection(g) for g in got_leaves), [type(g) for g in got_leaves]
    computed = dask.compute(*got_leaves, scheduler=scheduler) if scheduler != "client" else None
    for g, e in zip(computed if computed is not None else got_leaves, expected_leaves):
        g = np.asarray(g)
        assert g.shape == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, loss, wrt, params, data", CASES, ids=IDS)
def test_gradient_on_dask_data_is_lazy_and_equals_numpys(name, loss, wrt, params, data) -> None:
    expected = grad(loss, wrt)(*params, *data)
    with dask.config.set(scheduler="sync"):
        got = grad(loss, wrt)(*params, *[as_dask(a) for a in data])
        check_lazy_and_equal(got, expected)


@pytest.mark.parametrize("name, loss, wrt, params, data", CASES[:4], ids=IDS[:4])
def test_value_and_grad_on_dask_data(name, loss, wrt, params, data) -> None:
    value, expected = value_and_grad(loss, wrt)(*params, *data)
    got_value, got = value_and_grad(loss, wrt)(*params, *[as_dask(a) for a in data])
    assert dask.is_dask_collection(got_value)
    np.testing.assert_allclose(float(got_value), value, rtol=1e-12)
    check_lazy_and_equal(got, expected)


@pytest.mark.parametrize("name, loss, wrt, params, data", CASES[:4], ids=IDS[:4])
def test_forward_mode_and_hvp_on_dask_data(name, loss, wrt, params, data) -> None:
    """jvp and hvp (forward over reverse) in the first parameter: lazy, equal to NumPy's."""
    tangent = RNG.normal(size=np.shape(params[0]))
    lazy = [as_dask(a) for a in data]
    value, expected = s2sad.jvp(loss)(*params, *data, tangent)
    got_value, got = s2sad.jvp(loss)(*params, *lazy, tangent)
    assert dask.is_dask_collection(got) and dask.is_dask_collection(got_value)
    np.testing.assert_allclose(float(got_value), value, rtol=1e-12)
    np.testing.assert_allclose(float(got), expected, rtol=1e-10)
    check_lazy_and_equal(s2sad.hvp(loss)(*params, *lazy, tangent), s2sad.hvp(loss)(*params, *data, tangent))


def test_parameters_as_dask_arrays_too() -> None:
    X, y = regression_data()
    w = RNG.normal(size=D)
    expected = grad(ridge)(w, X, y)
    got = grad(ridge)(da.from_array(w), as_dask(X), as_dask(y))
    check_lazy_and_equal(got, expected)


def test_nothing_is_computed_until_asked() -> None:
    """Building the gradient runs no task: a scheduler that refuses every task is never called."""
    X, y = regression_data()
    w = RNG.normal(size=D)

    def refuse(*args, **kwargs):
        raise AssertionError("the gradient computed something before it was asked to")

    with dask.config.set(scheduler=refuse):
        g = grad(ridge)(w, as_dask(X), as_dask(y))
    assert dask.is_dask_collection(g)
    np.testing.assert_allclose(g.compute(scheduler="sync"), grad(ridge)(w, X, y), rtol=1e-12)


def test_float32_data_keeps_the_parameters_dtype() -> None:
    X, y = regression_data()
    w = RNG.normal(size=D).astype(np.float32)
    g = grad(ridge)(w, as_dask(X.astype(np.float32)), as_dask(y.astype(np.float32)))
    assert dask.is_dask_collection(g) and g.dtype == np.float32
    np.testing.assert_allclose(g.compute(), grad(ridge)(w, X.astype(np.float32), y.astype(np.float32)),
                               rtol=1e-5)


# --- distributed -------------------------------------------------------------------------------

WORKER_MEMORY = 300 * 2 ** 20

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    # worker processes: each one's memory limit is its own (threads share the test's process)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit=WORKER_MEMORY) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("name, loss, wrt, params, data", CASES, ids=IDS)
def test_gradient_on_a_local_cluster(client, name, loss, wrt, params, data) -> None:
    expected = grad(loss, wrt)(*params, *data)
    got = grad(loss, wrt)(*params, *[client.persist(as_dask(a)) for a in data])
    got_leaves = leaves(got)
    assert any(dask.is_dask_collection(g) for g in got_leaves)
    computed = client.compute(got_leaves, sync=True)
    for g, e in zip(computed, leaves(expected)):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-10, atol=1e-12)


def test_data_several_times_a_workers_memory(client) -> None:
    """1 GB of float64 data, made chunk by chunk on workers allowed 300 MiB each: the
    gradient is computed chunk by chunk and never holds the data."""
    rows, cols, chunk = 250_000, 500, 5_000  # 1 GB in chunks of 20 MB
    assert rows * cols * 8 > 3 * WORKER_MEMORY
    state = da.random.RandomState(0)
    X = state.random_sample((rows, cols), chunks=(chunk, cols))
    y = state.random_sample(rows, chunks=chunk)
    w = np.full(cols, 0.002)
    g = grad(ridge)(w, X, y)
    assert dask.is_dask_collection(g)
    got = client.compute(g, sync=True)
    # E[x] = 1/2, E[x x^T] = 1/4 + I/12: the expected gradient of the mean squared error
    expected = 2 * ((0.25 * np.ones((cols, cols)) + np.eye(cols) / 12) @ w - 0.25) + 0.2 * w
    np.testing.assert_allclose(got, expected, atol=0.005)


# --- the example --------------------------------------------------------------------------------

def test_dask_logistic_example_quick(tmp_path) -> None:
    """``python examples/dask_logistic.py --quick``, the README's command: it fits, agrees with
    scikit-learn on the subsample, and writes its plot."""
    pytest.importorskip("distributed")
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    pytest.importorskip("tqdm")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "dask_logistic.py"), "--quick",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "(agrees)" in proc.stdout
    png = tmp_path / "dask_logistic.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- CuPy -----------------------------------------------------------------------------------------

def _cupy():
    """CuPy, where it imports and a GPU is present; else None."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device
        return None
    return cupy


@pytest.mark.parametrize("name, loss, wrt, params, data", CASES, ids=IDS)
def test_gradient_on_cupy_arrays_equals_numpys(name, loss, wrt, params, data) -> None:
    cupy = _cupy()
    if cupy is None:
        pytest.skip("CuPy with a GPU is not available")
    if name not in ("ridge", "logistic", "loop", "softmax", "mlp"):
        pytest.skip("the loss makes NumPy arrays of its own, which CuPy does not mix with its arrays")
    expected = grad(loss, wrt)(*params, *data)
    as_gpu = lambda tree: {k: as_gpu(v) for k, v in tree.items()} if isinstance(tree, dict) else (  # noqa: E731
        type(tree)(as_gpu(v) for v in tree) if isinstance(tree, (list, tuple)) else cupy.asarray(tree))
    got = grad(loss, wrt)(*as_gpu(params), *[cupy.asarray(a) for a in data])
    for g, e in zip(leaves(got), leaves(expected)):
        assert isinstance(g, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(g), e, rtol=1e-10, atol=1e-12)


# --- writes ------------------------------------------------------------------------------------

def write_into(x, y):
    z = y * 1
    z[0] = x[0] ** 2 * 2.7
    return np.sum(z * 1.0) + np.sum(x)


def test_a_write_into_an_integer_dask_array_is_refused() -> None:
    """As for NumPy: the write truncates the value, which has no gradient then."""
    x = np.array([0.5, 0.3, 0.2])
    with pytest.raises(s2sad.NoGradientRuleError, match="written into an array of dtype int64"):
        grad(write_into)(x, da.from_array(np.array([1, 2, 3])))
    g = grad(write_into)(x, da.from_array(np.array([1.0, 2.0, 3.0])))
    np.testing.assert_allclose(np.asarray(g), [5.4 * x[0] + 1.0, 1.0, 1.0])


def test_transpose_with_axes() -> None:
    def f(x, Y):
        return np.sum(np.transpose(x * Y, (2, 0, 1)) * np.arange(24.0).reshape(4, 2, 3))

    x, Y = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 3, 4))
    g = grad(f)(x, da.from_array(Y, chunks=(1, 3, 4)))
    check_lazy_and_equal(g, grad(f)(x, Y))


# --- functions Dask does not implement, or computes otherwise ------------------------------------

def sorted_smallest(w, X):
    z = X @ w
    return np.sum(np.sort(z)[:3]) + np.max(z)


def median_of_columns(w, X):
    return np.sum(np.median(X * w, axis=0))


def quantile_of_rows(w, X):
    return np.sum(np.quantile(X * w, 0.7, axis=1))


def smallest_partitioned(w, X):
    z = X @ w
    return np.sum(np.partition(z, 2)[:2]) + np.sum(z)


def taken_along_rows(w, X):
    return np.sum(np.take_along_axis(X * w, np.argsort(np.arange(24.0).reshape(6, 4) % 5, axis=1), axis=1)[:, 0])


def tensordot_squared(w, X):
    return np.sum(np.tensordot(X, np.outer(w, w), axes=1) ** 2)


def outer_squared(w, X):
    return np.sum(np.outer(X @ w, w) ** 2)


def masked_read(w, X):
    z = X @ w
    return np.sum(z[z > 0] ** 2) + np.var(z)


@pytest.mark.parametrize("loss", [sorted_smallest, median_of_columns, quantile_of_rows, smallest_partitioned,
                                  taken_along_rows, outer_squared, tensordot_squared])
@pytest.mark.parametrize("mode", ["grad", "hvp"])
def test_functions_numpy_computes_for_dask_differentiate_as_numpys(loss, mode) -> None:
    """Dask runs np.sort, np.argsort, np.take_along_axis... in NumPy, its reshape takes no order
    and its transpose no array of axes: their gradients and tangents raised from inside
    s2sad's helpers."""
    import warnings

    Xn, w, v = RNG.normal(size=(6, 4)), RNG.normal(size=4), RNG.normal(size=4)
    X = da.from_array(Xn, chunks=(3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "grad":
            got, expected = grad(loss)(w, X), grad(loss)(w, Xn)
        else:
            got, expected = s2sad.hvp(loss)(w, X, v), s2sad.hvp(loss)(w, Xn, v)
        np.testing.assert_allclose(np.asarray(dask.compute(got, scheduler="sync")[0]), expected, rtol=1e-10)


def test_a_tangent_of_unknown_length_is_not_broadcast() -> None:
    # a boolean index leaves a Dask array's length unknown (NaN); the hvp compared the shapes
    # (nan,) == (nan,), False, and broadcast the tangent, which Dask refused with a ValueError:
    # it now reaches the refusal grad gives
    Xn, w, v = RNG.normal(size=(6, 4)), RNG.normal(size=4), RNG.normal(size=4)
    with pytest.raises(s2sad.S2SADError, match="an index of integer or boolean arrays") as info:
        s2sad.hvp(masked_read)(w, da.from_array(Xn, chunks=(3, 4)), v)
    assert info.value.location.line == masked_read.__code__.co_firstlineno + 2


def percentile_1d(w, X):
    return np.percentile(X @ w, 30)


def cholesky_sum(w, X):
    return np.sum(np.linalg.cholesky(X.T @ X + np.diag(w ** 2 + 1.0)))


@pytest.mark.parametrize("loss, what", [(percentile_1d, "approximate percentiles"),
                                        (cholesky_sum, "upper triangular factor")])
def test_what_dask_computes_otherwise_than_numpy_is_refused(loss, what) -> None:
    # the gradients were NumPy's function's, silently wrong for what Dask computed
    import warnings

    X = da.from_array(RNG.normal(size=(6, 4)), chunks=(3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(s2sad.S2SADError, match=what) as info:
            dask.compute(grad(loss)(RNG.normal(size=4), X), scheduler="sync")
    assert info.value.location.line == loss.__code__.co_firstlineno + 1


# --- the corpus --------------------------------------------------------------------------------

def test_corpus_on_dask_arrays_is_never_wrong() -> None:
    """Every corpus function (tests/corpus.py), its float array arguments as Dask arrays of
    two chunks: the gradient equals NumPy's, or the call raises (what Dask does not do, such
    as uneven reshapes and some fancy indexing); it is never different."""
    import warnings

    import corpus

    tried, equal, failed = 0, 0, []
    for case in corpus.CASES:
        args = case.inputs()
        wrt = case.wrt(args)
        lazy = tuple(da.from_array(a, chunks=max(1, a.shape[0] // 2))
                     if type(a) is np.ndarray and a.ndim and a.dtype.kind == "f" else a for a in args)
        if case.xfail or not wrt or all(a is b for a, b in zip(args, lazy)):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = grad(case.fn, wrt)(*args)
            tried += 1
            try:
                got = dask.compute(grad(case.fn, wrt)(*lazy), scheduler="sync")[0]
            except Exception as exc:  # noqa: BLE001 - refused or unsupported by Dask: not wrong
                failed.append(f"{case.id}: {type(exc).__name__}")
                continue
        for g, e in zip(leaves(got), leaves(expected)):
            assert np.shape(g) == np.shape(e), case.id
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-8, atol=1e-10, err_msg=case.id)
        equal += 1
    assert equal >= 0.9 * tried, failed
