"""Regressions found by probing every mode and backend against each other (grad, jvp, hvp,
hessian, jacobian, grad of grad; specialised and generic code, jit=True, standalone modules,
Dask arrays) and against central finite differences in float64."""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import s2sad
from s2sad import grad, hvp, value_and_grad


def numeric_grad(f: Callable[[Any], Any], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of scalar ``f`` at ``x``, entry by entry."""
    out = np.zeros(x.shape)
    for i in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[i] = eps
        out[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


# --- Dask arrays through gradients that scatter-add (np.take, np.repeat) -------------------------

def take_repeated(x):
    return np.sum(np.take(x, np.array([3, 0, 0, 1])) ** 3 + np.take(x, 2) ** 2)


def repeat_rows(x):
    return np.sum(np.repeat(x, 3, axis=0) ** 3 * np.arange(1.0, 4.0))


def repeat_flat(x):
    return np.sum(np.repeat(x, 2) ** 3 * np.arange(np.size(x) * 2.0))


@pytest.mark.parametrize("f, shape", [(take_repeated, (4,)), (repeat_rows, (4, 3)), (repeat_flat, (5,))])
def test_dask_gradients_that_scatter_add_are_dask_arrays(f, shape):
    """np.add.at does not dispatch to Dask: take_grad and repeat_grad raised TypeError."""
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    x = np.random.default_rng(0).normal(size=shape)
    lazy = da.from_array(x, chunks=2)
    value, g = value_and_grad(f)(lazy)
    assert isinstance(g, da.Array)
    value, g = dask.compute(value, g)
    np.testing.assert_allclose(value, f(x), rtol=1e-12)
    np.testing.assert_allclose(g, numeric_grad(f, x), rtol=1e-6, atol=1e-8)
    v = np.ones(shape)
    np.testing.assert_allclose(np.asarray(hvp(f)(lazy, da.from_array(v, chunks=2))), hvp(f)(x, v), rtol=1e-12)


# --- PyTorch tensors: lists of Python floats made arrays in float64, as NumPy does -----------------

def unpacked_list(x):
    a, b, c, d = x.tolist()
    return a * b + c ** 2 * d


def test_torch_gradient_through_tolist_keeps_float64():
    """The gradient of x.tolist() is np.array(g) of a list of Python floats: rebound to torch it
    was made in torch's default float32, so the float64 gradient was off by 1e-8."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    x = np.array([0.34558419, 0.82161814, 0.33043708, -1.30315723])
    g = grad(unpacked_list)(torch.from_numpy(x))
    assert isinstance(g, torch.Tensor) and g.dtype == torch.float64
    np.testing.assert_array_equal(g.numpy(), grad(unpacked_list)(x))
    np.testing.assert_allclose(g.numpy(), numeric_grad(unpacked_list, x), rtol=1e-7)


S3 = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.8]])


def quad_form(x):
    return np.log(x @ S3 @ x) + np.sum((x @ S3) * x)


def matrix_product(x):
    return np.sum(np.tanh(x @ S3) * x)


@pytest.mark.parametrize("f, shape", [(quad_form, (3,)), (matrix_product, (3, 3))])
def test_torch_matmul_with_a_numpy_constant_of_the_module(f, shape):
    """x @ S for a torch x and a NumPy S of the module runs in torch (S @ x does not); its
    gradient's matmul helper crashed with a TypeError (torch.matmul of a NumPy array)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    x = np.random.default_rng(1).normal(size=shape)
    g = grad(f)(torch.from_numpy(x))
    assert isinstance(g, torch.Tensor)
    np.testing.assert_allclose(g.numpy(), grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), numeric_grad(f, x), rtol=1e-6, atol=1e-8)


def written_into_zeros(x):
    y = np.zeros((3, 3))
    y[:, 0] = x[:, 1] ** 2
    y[1:, 1:] = x[:2, :2] * x[1:, 1:]
    return np.sum(y ** 2)


@pytest.mark.parametrize("library", ["torch", "jax"])
def test_item_assignment_on_library_arrays_is_refused_at_its_line(library):
    """Rebound to torch or JAX, the generated y_2 = y.copy(); y_2[:, 0] = v raised an
    AttributeError (a tensor has no .copy()) or a TypeError (JAX arrays are immutable)."""
    pytest.importorskip("array_api_compat")
    x = np.random.default_rng(2).normal(size=(3, 3))
    if library == "torch":
        arrays = pytest.importorskip("torch").from_numpy(x)
    else:
        jax = pytest.importorskip("jax")
        jax.config.update("jax_enable_x64", True)
        arrays = jax.numpy.asarray(x)
    with pytest.raises(s2sad.S2SADError, match=f"not translated to {library} arrays") as info:
        grad(written_into_zeros)(arrays)
    line = written_into_zeros.__code__.co_firstlineno + 2
    assert (info.value.location.filename, info.value.location.line) == (__file__, line)
    np.testing.assert_allclose(grad(written_into_zeros)(x), numeric_grad(written_into_zeros, x), rtol=1e-6, atol=1e-8)


# --- jit=True of a gradient's gradient: refusals located at the user's line ------------------------

def cubic_loop(t):
    y = 1.0
    for k in range(4):
        y = y * t + np.cos(k * t)
    return y


def test_jit_refusal_of_a_second_derivative_is_at_the_users_line():
    """grad(grad(f), jit=True) refused at a line of the generated first gradient
    ('<s2sad grad of cubic_loop ...>:29:9'), which no editor opens: now at f's own line."""
    pytest.importorskip("numba")
    with pytest.raises(s2sad.JitError) as info:
        grad(grad(cubic_loop), jit=True)(0.8)
    assert info.value.location.filename == __file__
    first = cubic_loop.__code__.co_firstlineno
    assert first < info.value.location.line <= first + 4
    np.testing.assert_allclose(grad(grad(cubic_loop), jit="auto")(0.8),
                               (grad(cubic_loop)(0.8 + 1e-6) - grad(cubic_loop)(0.8 - 1e-6)) / 2e-6, rtol=1e-6)


# --- a list of numbers that NumPy reads as an array -----------------------------------------------

def arctan_of_list(x):
    return np.sum(np.arctan(x) * 2.0)


@pytest.mark.parametrize("mode", ["grad", "jvp", "hvp"])
def test_a_list_that_numpy_reads_as_an_array_is_refused_at_its_line(mode):
    """grad(f)([0.1, 0.2]) of np.arctan(x) crashed with a TypeError in the generated code
    (the rule's gradient 1 / (1.0 + x ** 2) takes the list as it is); it is refused at the
    line, saying to pass an array.  The array gives the gradient."""
    x = [0.3, -0.7, 1.1]
    call = {"grad": lambda: grad(arctan_of_list)(x), "jvp": lambda: s2sad.jvp(arctan_of_list)(x, [1.0, 0.0, 0.0]),
            "hvp": lambda: hvp(arctan_of_list)(x, [1.0, 0.0, 0.0])}[mode]
    with pytest.raises(s2sad.WrtError, match=r"np.asarray") as info:
        call()
    assert (info.value.location.filename, info.value.location.line) == (__file__, arctan_of_list.__code__.co_firstlineno + 1)
    np.testing.assert_allclose(grad(arctan_of_list)(np.asarray(x)), 2.0 / (1.0 + np.asarray(x) ** 2), rtol=1e-12)


def det_squared(x):
    return np.linalg.det(x) ** 2 + np.sum(x)


def logdet(x):
    return np.linalg.slogdet(x)[1] * 2.0


@pytest.mark.parametrize("f", [det_squared, logdet])
def test_dask_det_and_slogdet_gradients_are_computed_where_numpy_computed_them(f):
    """Dask computes np.linalg.det and slogdet by NumPy (on the computed array); their
    gradients called Dask's np.linalg.inv, which needs square chunks, and crashed with a
    ValueError for chunks of 2 of a 3x3 matrix."""
    da = pytest.importorskip("dask.array")
    x = 2.5 * np.eye(3) + 0.3 * np.random.default_rng(3).normal(size=(3, 3))
    lazy = da.from_array(x, chunks=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # (Dask's: det is not implemented by Dask)
        g = grad(f)(lazy)
        if f is det_squared:
            np.testing.assert_allclose(np.asarray(hvp(f)(lazy, np.eye(3))), hvp(f)(x, np.eye(3)), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(g), numeric_grad(f, x), rtol=1e-6, atol=1e-8)
