"""Defects found by checking what other AD libraries' test suites test (functions, shapes,
axis options, broadcasting), against central finite differences in float64."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad
from gradcheck import numerical_grad


def hvp_by_differences(f, args: tuple, wrt: int, v: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Central differences of s2sad's gradient along ``v``: the Hessian-vector product."""
    g = s2sad.grad(f, wrt=wrt)
    plus, minus = list(args), list(args)
    plus[wrt], minus[wrt] = args[wrt] + eps * v, args[wrt] - eps * v
    return (g(*plus) - g(*minus)) / (2 * eps)


def multi_dot_twice(x: np.ndarray, y: np.ndarray) -> float:
    return np.sum(np.sin(np.linalg.multi_dot([x, y, x.T])))


def multi_dot_same_twice(x: np.ndarray, y: np.ndarray) -> float:
    return np.sum(np.sin(np.linalg.multi_dot([x, y, x])))


@pytest.mark.parametrize("f, shape", [(multi_dot_twice, (2, 3)), (multi_dot_same_twice, (3, 3))])
def test_multi_dot_hvp_with_an_argument_in_two_factors(f, shape) -> None:
    # the tangent of the gradient's multi_dot_grad (a list) summed its two terms with '+',
    # which joins the lists: the Hessian-vector product read the wrong items
    rng = np.random.default_rng(0)
    x, y, v = rng.normal(size=shape), rng.normal(size=(3, 3)), rng.normal(size=shape)
    np.testing.assert_allclose(s2sad.hvp(f, wrt=0)(x, y, v), hvp_by_differences(f, (x, y), 0, v),
                               rtol=1e-5, atol=1e-6)


def cross(x: np.ndarray, y: np.ndarray) -> float:
    return np.sum(np.sin(np.cross(x, y)))


def cross_axis(x: np.ndarray, y: np.ndarray) -> float:
    return np.sum(np.sin(np.cross(x, y, axis=0)))


@pytest.mark.parametrize("f, sx, sy", [(cross, (2,), (2,)), (cross, (4, 2), (2,)), (cross, (2,), (3,)),
                                       (cross, (3,), (2,)), (cross_axis, (2, 3), (2, 3)),
                                       (cross, (3,), (4, 1, 3))])
def test_cross_of_2_vectors(f, sx, sy) -> None:
    # np.cross of 2-vectors is their third component, without a vector axis: the gradient
    # crossed that scalar with a 2-vector (ValueError), and a 2-vector with a 3-vector gave 3 items
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=sx), rng.normal(size=sy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        dx, dy = s2sad.grad(f, wrt=(0, 1))(x, y)
        np.testing.assert_allclose(dx, numerical_grad(f, (x, y), 0), atol=1e-7)
        np.testing.assert_allclose(dy, numerical_grad(f, (x, y), 1), atol=1e-7)
        v = rng.normal(size=sy)
        np.testing.assert_allclose(s2sad.hvp(f, wrt=1)(x, y, v), hvp_by_differences(f, (x, y), 1, v),
                                   rtol=1e-5, atol=1e-6)


def flat_item(x: np.ndarray) -> float:
    return np.sin(x.flat[3]) * np.sum(x ** 2)


def flat_of_transpose(x: np.ndarray) -> float:
    return np.sum(np.sin(x.T.flat[[0, 1, 1, 5]]))


def flat_slice(x: np.ndarray) -> float:
    return np.sum(np.sin(x.flat[1:4]) * x.flat[2])


@pytest.mark.parametrize("f", [flat_item, flat_of_transpose, flat_slice])
def test_flat_indexing(f) -> None:
    # the gradient of x.flat[i] made zeros of the flatiter's dtype: TypeError in getitem_grad
    rng = np.random.default_rng(2)
    x, v = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    g = s2sad.grad(f)(x)
    np.testing.assert_allclose(g, numerical_grad(f, (x,), 0), atol=1e-7)
    np.testing.assert_allclose(s2sad.jvp(f)(x, v)[1], np.sum(g * v), atol=1e-10)
    np.testing.assert_allclose(s2sad.hvp(f)(x, v), hvp_by_differences(f, (x,), 0, v), rtol=1e-5, atol=1e-6)
