"""Every order on a catalogue of small functions (tests/order10_catalogue.py), against central
finite differences in float64: ``jvp`` (and Jacobians, of array outputs) against the function, ``hvp`` against s2sad's
gradient, ``grad`` of a contraction of ``grad`` (reverse over reverse) against that
contraction, and third derivatives (``hvp`` and ``grad`` of such a contraction) against
finite differences of the second derivative.

The catalogue was checked against JAX's ``jvp``, ``hessian`` and nested ``grad``; what
s2sad refuses at an order is listed in ``SECOND_REFUSED`` / ``THIRD_REFUSED`` and must be
refused with an S2SADError, never answered.
"""
from __future__ import annotations

import zlib
from typing import Any, Callable

import numpy as np
import pytest

import order10_catalogue as catalogue
from s2sad import S2SADError, grad, hessian, hvp, jacobian, jvp

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::s2sad.ZeroGradientWarning")

#: second derivatives s2sad refuses (svd-based: it differentiates svd once)
SECOND_REFUSED = {"a_svd_vals"}
#: third derivatives refused: a helper with a nonlinear rule (prod, solve, the factorizations,
#: einsum, joins of several arrays) is differentiated a second time
THIRD_REFUSED = SECOND_REFUSED | {
    "e_pow_var", "e_scalar_ops", "r_prod", "r_prod_axis", "r_method_prod", "c_cumprod", "c_cumprod_axis",
    "a_solve_vec", "a_solve_mat", "a_slogdet", "a_slogdet_spd", "a_cholesky", "a_cholesky_logdet",
    "a_eigh_vals", "a_eigh_vecs", "a_svd_full", "a_norm_nuc", "a_norm_2", "a_qr", "a_qr_r", "a_pinv", "a_multi_dot", "a_norm_vec",
    "a_norm_ord", "a_norm_fro", "a_norm_axis", "p_einsum_ij", "p_einsum_trace", "p_einsum_bilinear",
    "p_einsum_outer", "s_hstack_vstack", "s_column_stack", "m_gaussian_nll", "m_gaussian_cov", "x_einsum_batch",
    "x_reduce_method", "x_prod_keep"}

CASES = [pytest.param(name, f, shape, domain, id=name) for name, f, shape, domain in catalogue.CASES]
#: third derivatives, the slowest to generate, on every sixth case (all of them pass)
THIRD_CASES = CASES[::6]


def contracted(gradient: Callable[[Any], Any], w: np.ndarray) -> Callable[[Any], Any]:
    """``x -> sum(gradient(x) * w)``: a scalar made of a gradient, to differentiate again."""
    def contraction(x):
        return np.sum(gradient(x) * w)
    return contraction


def directional(f: Callable[[Any], Any], x: np.ndarray, v: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Central finite difference of ``f`` at ``x`` along ``v``."""
    return (np.asarray(f(x + eps * v)) - np.asarray(f(x - eps * v))) / (2 * eps)


def numeric_grad(f: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    """Central finite differences of scalar ``f`` at ``x``, entry by entry."""
    out = np.zeros(x.shape)
    for i in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[i] = 1.0
        out[i] = directional(f, x, e)
    return out


def point(name: str, shape: tuple[int, ...], domain: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The case's input and two directions, from seeds of its name."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return catalogue.inputs(shape, domain, 1), rng.normal(size=shape), rng.normal(size=shape)


def close(got: Any, want: Any, what: str, rtol: float = 1e-6) -> None:
    """``got`` has ``want``'s shape and matches it to ``rtol``, relative to its largest entry (at least 1)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, not {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=what)


@pytest.mark.parametrize("name, f, shape, domain", CASES)
def test_jvp_and_hvp(name, f, shape, domain):
    x, v, _ = point(name, shape, domain)
    value, slope = jvp(f)(x, v)
    close(value, f(x), f"jvp's value of {name}", 1e-12)
    close(slope, directional(f, x, v), f"jvp of {name}")
    if name in SECOND_REFUSED:
        with pytest.raises(S2SADError):
            hvp(f)(x, v)
        return
    close(hvp(f)(x, v), directional(grad(f), x, v), f"hvp of {name}")
    close(hvp(f, specialize=False)(x, v), directional(grad(f), x, v), f"generic hvp of {name}")


@pytest.mark.parametrize("name, f, shape, domain",
                         [pytest.param(*case, id=case[0]) for case in catalogue.ARRAY_CASES])
def test_array_outputs(name, f, shape, domain):
    x, v, _ = point(name, shape, domain)
    value, slope = jvp(f)(x, v)
    close(value, f(x), f"jvp's value of {name}", 1e-12)
    close(slope, directional(f, x, v), f"jvp of {name}")
    close(jvp(f, specialize=False)(x, v)[1], directional(f, x, v), f"generic jvp of {name}")
    columns = [directional(f, x, e.reshape(shape)) for e in np.eye(x.size)]
    want = np.stack(columns, -1).reshape(np.shape(f(x)) + shape)
    close(jacobian(f, mode="forward")(x), want, f"forward Jacobian of {name}")
    close(jacobian(f, mode="reverse")(x), want, f"reverse Jacobian of {name}")


@pytest.mark.parametrize("name, f, shape, domain", CASES)
def test_grad_of_grad(name, f, shape, domain):
    x, v, w = point(name, shape, domain)
    gdot = contracted(grad(f), w)
    if name in SECOND_REFUSED:
        with pytest.raises(S2SADError):
            grad(gdot)(x)
        return
    close(grad(gdot)(x), numeric_grad(gdot, x), f"grad of grad of {name}")
    H = np.reshape(hessian(f)(x), (x.size, x.size))
    close(H @ np.ravel(v), np.ravel(directional(grad(f), x, v)), f"hessian of {name}")


@pytest.mark.parametrize("name, f, shape, domain", THIRD_CASES)
def test_third_order(name, f, shape, domain):
    x, v, w = point(name, shape, domain)
    gdot = contracted(grad(f), w)
    if name in THIRD_REFUSED:
        with pytest.raises(S2SADError):
            hvp(gdot)(x, v)
        return
    close(hvp(gdot)(x, v), directional(grad(gdot), x, v), f"hvp of grad of {name}", 1e-5)
    twice = contracted(grad(gdot), v)
    close(grad(twice)(x), numeric_grad(twice, x), f"grad of grad of grad of {name}", 1e-5)


# --- regressions found by the catalogue ------------------------------------------------


def trace_of_square(x):
    return np.trace(x @ x) + np.trace(x) ** 2


def products_in_a_list(x):
    parts = []
    for i in range(3):
        parts.append(x[i] * x[i + 1])
    return np.sum(np.array(parts) ** 2)


def sqrt_where_positive(x):
    return np.sum(np.where(x > 0.1, np.sqrt(x), x ** 2))


def test_grad_of_grad_through_trace():
    """np.trace's gradient puts g (one entry, broadcast) on the diagonal: reverse over that
    reduces the diagonal back to one entry (it raised a reshape error)."""
    x, w = np.array([[0.3, -1.2, 0.5], [0.7, 0.1, -0.4], [1.1, 0.2, 0.9]]), np.arange(9.0).reshape(3, 3)
    gdot = contracted(grad(trace_of_square), w)
    close(grad(gdot)(x), numeric_grad(gdot, x), "grad of grad of trace")


def test_third_order_through_a_list_built_in_a_loop():
    """The gradient of a list appended to in a loop is a list: reverse over reverse over
    reverse adds two such gradients leaf by leaf (``+`` joined them: a length error)."""
    x, v, w = np.array([0.3, -1.2, 0.5, 0.8]), np.array([1.0, 0.5, -0.3, 0.2]), np.array([0.4, 1.0, -0.6, 0.3])
    twice = contracted(grad(contracted(grad(products_in_a_list), w)), v)
    close(grad(twice)(x), numeric_grad(twice, x), "third derivative through a list", 1e-5)


def test_third_order_of_a_where_is_nan_free():
    """A value feeding several masked ``np.where`` branches (sqrt's in second-order code) keeps
    the union of their masks: its adjoint is 0, not NaN, where no branch takes it."""
    x, v, w = np.array([0.5, -0.3, 1.2]), np.array([1.0, -0.5, 0.3]), np.array([0.7, 0.2, -1.1])
    twice = contracted(grad(contracted(grad(sqrt_where_positive), w)), v)
    got = grad(twice)(x)
    assert np.all(np.isfinite(got)), got
    close(got, numeric_grad(twice, x), "third derivative of a where", 1e-5)
