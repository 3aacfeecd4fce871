"""NumPy and SciPy calls with unusual but valid arguments (tests/test_numpy14.py): each was a
wrong gradient, a crash or a false refusal. Gradients against central finite differences,
Hessian-vector products against finite differences of the gradient, forward mode against
reverse mode.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import s2sad

from gradcheck import check_all_orders, make_function, numerical_grad

_RNG = np.random.default_rng(14)
_SPD = (lambda s: s @ s.T + np.eye(3))(_RNG.standard_normal((3, 3)) + 3 * np.eye(3))
_INDEFINITE = np.array([[2.0, 0.3, -0.5], [0.3, -1.1, 0.2], [-0.5, 0.2, 0.4]])
_NONSYMMETRIC = _SPD + 0.3 * _RNG.standard_normal((3, 3))  # hermitian=True reads its lower triangle


_check_all_orders = functools.partial(check_all_orders, globals_dict={"np": np}, rng=_RNG)


HERMITIAN = [
    "np.sum(np.linalg.pinv(x, hermitian=True) * W)",
    "np.sum(np.linalg.svd(x, hermitian=True)[1] * W[0])",
    "np.sum(np.linalg.svd(x, hermitian=True)[0][..., :, 0] ** 2 * W[0])",
    "np.sum(np.linalg.svd(x, full_matrices=False, hermitian=True).Vh[..., 1, :] ** 2 * W[1])",
]


@pytest.mark.parametrize("x", [_SPD, _INDEFINITE, _NONSYMMETRIC, np.stack([_SPD, _NONSYMMETRIC])],
                         ids=["spd", "indefinite", "nonsymmetric", "stacked"])
@pytest.mark.parametrize("body", HERMITIAN)
def test_hermitian_pinv_and_svd_read_the_lower_triangle(body: str, x: np.ndarray) -> None:
    """hermitian=True makes NumPy read the lower triangle only (through eigh): the gradient
    was the full matrix's, symmetric, where the upper triangle carries none."""
    _check_all_orders(body.replace("W", "np.linspace(0.5, 2.0, 9).reshape(3, 3)"), x)


def test_hermitian_svd_values_without_vectors_first_order() -> None:
    _check_all_orders("np.sum(np.linalg.svd(x, compute_uv=False, hermitian=True) * np.arange(1.0, 4.0))",
                      _NONSYMMETRIC, second=False)


def test_frozen_multivariate_distributions_made_in_the_function() -> None:
    """scipy.stats.multivariate_normal(mean, cov).logpdf(x) was refused ('no gradient rule for
    scipy.stats.multivariate_normal'): it is the call multivariate_normal.logpdf(x, mean, cov)."""
    import scipy.stats  # noqa: F401  (loads s2sad's SciPy rules)
    spd = _SPD / 4.0
    mean, points = _RNG.standard_normal(3), _RNG.standard_normal((4, 3))
    f = make_function("def f(cov, mean, x):\n"
                      "    d = scipy.stats.multivariate_normal(mean, cov=cov)\n"
                      "    return np.sum(d.logpdf(x)) + scipy.stats.multivariate_normal(mean, cov).pdf(x[0])\n",
                      {"np": np, "scipy": __import__("scipy")})
    args = [spd, mean, points]
    for k, g in enumerate(s2sad.grad(f, wrt=(0, 1, 2))(*args)):
        np.testing.assert_allclose(g, numerical_grad(f, args, k), rtol=1e-5, atol=1e-7)
    v = _RNG.standard_normal(3)
    eps = 1e-6
    expected = (s2sad.grad(f, wrt=1)(spd, mean + eps * v, points)
                - s2sad.grad(f, wrt=1)(spd, mean - eps * v, points)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f, wrt=1)(spd, mean, points, v), expected, rtol=1e-4, atol=1e-6)
    p = np.array([0.2, 0.3, 0.5])
    h = make_function("def h(alpha):\n    return scipy.stats.dirichlet(alpha).logpdf(P)\n",
                      {"np": np, "scipy": __import__("scipy"), "P": p})
    alpha = np.array([1.5, 2.0, 3.0])
    np.testing.assert_allclose(s2sad.grad(h)(alpha), numerical_grad(h, [alpha], 0), rtol=1e-5, atol=1e-7)


def test_polyint_tangent_leaves_out_the_integration_constants() -> None:
    """np.polyint(p, m, k) is affine in p: forward mode applied it to the tangent with the
    constants k, so jvp and hvp added k to the directional derivative."""
    p = _RNG.standard_normal(4)
    for body in ["np.sum(np.polyint(x, k=1.0) ** 2 * np.arange(1.0, 6.0))",
                 "np.sum(np.polyint(x, 2, [1.0, -2.0]) ** 2)",
                 "np.sum(np.polyint(x, m=3, k=0.5) ** 3 * np.arange(7.0))"]:
        _check_all_orders(body, p)


_F_ORDER = np.asfortranarray(_RNG.standard_normal((3, 4)))


@pytest.mark.parametrize("x", [_F_ORDER, np.ascontiguousarray(_F_ORDER), _RNG.standard_normal((2, 3, 4))],
                         ids=["fortran", "c", "3d"])
@pytest.mark.parametrize("flat", ["np.ravel(x, 'F')", "np.ravel(x, order='A')", "x.ravel('F')", "x.ravel(order='K')",
                                  "x.flatten('F')", "x.flatten(order='A')"])
def test_ravel_and_flatten_take_an_order(flat: str, x: np.ndarray) -> None:
    """np.ravel(x, 'F'), x.ravel(order=...) and x.flatten('F') were refused (no 'order'
    argument); 'A' and 'K' read the elements in the order of x's layout."""
    f = make_function(f"def f(x):\n    return np.sum({flat} * np.arange(1.0, {x.size + 1}.0) ** 1.5)\n",
                      {"np": np})
    g = s2sad.grad(f)(x)
    expected = np.zeros(x.shape)
    for i in np.ndindex(*x.shape):  # perturbed copies keep x's layout, which 'A' and 'K' read
        plus, minus = x.copy(order="K"), x.copy(order="K")
        plus[i] += 1e-6
        minus[i] -= 1e-6
        expected[i] = (f(plus) - f(minus)) / 2e-6
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-7)
    v = _RNG.standard_normal(x.shape)
    np.testing.assert_allclose(s2sad.jvp(f)(x, v)[1], np.sum(g * v), rtol=1e-9)


def test_ravel_in_memory_order_of_a_strided_array_is_refused() -> None:
    f = make_function("def f(x):\n    return np.sum(np.ravel(x[:, ::2], order='K') ** 2)\n", {"np": np})
    with pytest.raises(s2sad.S2SADError, match=r"order='K'\) of a contiguous array only") as info:
        s2sad.grad(f)(_RNG.standard_normal((3, 4)))
    assert info.value.location.line == 2


def test_array_with_copy_keyword() -> None:
    """np.array(x, copy=True) and np.asarray(x, copy=None) were refused (no 'copy' argument)."""
    _check_all_orders("np.sum(np.array(x, copy=True) ** 3) + np.sum(np.asarray(x, copy=None) * x)",
                      _RNG.standard_normal((2, 3)))


@pytest.mark.parametrize("x", [np.array([0.0, 0.3, -1.2, 1e-9, 0.2499, 0.2501]), np.array(0.0)],
                         ids=["vector", "zero"])
def test_sinc_second_derivative_at_zero(x: np.ndarray) -> None:
    """np.sinc's slope (cos(pi x) - sinc(x)) / x was 0 at 0 by a safe division, whose own
    derivative is 0 there: the Hessian of sinc at 0 was 0, not -pi ** 2 / 3."""
    _check_all_orders("np.sum(np.sinc(x) ** 2 + np.sinc(x))", x)
    f = make_function("def f(x):\n    return np.sum(np.sinc(x))\n", {"np": np})
    hessian_at_zero = s2sad.hvp(f)(np.zeros(2), np.array([1.0, 0.0]))
    np.testing.assert_allclose(hessian_at_zero, [-np.pi ** 2 / 3, 0.0], rtol=1e-12)
    third = s2sad.grad(s2sad.grad(s2sad.grad(make_function("def g(t):\n    return np.sinc(t)\n", {"np": np}))))
    np.testing.assert_allclose([third(0.0), third(0.7)], [0.0, 7.131038417133914], atol=1e-12, rtol=1e-9)  # (mpmath)


def test_sinc_slope_is_accurate_near_zero() -> None:
    """The closed form cancels near 0 (its derivative there was 0 at x = 1e-9, not -pi^2/3)."""
    from s2sad.runtime import sinc_slope
    t = np.array([1e-9, 1e-5, 0.1, 0.3, -2.2])
    exact_second = [sum((-1) ** k * np.pi ** (2 * k) * (2 * k) * (2 * k - 1) * u ** (2 * k - 2) / math.factorial(2 * k + 1)
                        for k in range(1, 10)) for u in t[:3]]
    np.testing.assert_allclose(sinc_slope(t[:3], 2), exact_second, rtol=1e-12)
    for n in (1, 2, 3):  # against finite differences of the derivative below it
        lower = (lambda u: np.sinc(u)) if n == 1 else (lambda u, m=n - 1: sinc_slope(u, m))
        expected = (lower(t[3:] + 1e-6) - lower(t[3:] - 1e-6)) / 2e-6
        np.testing.assert_allclose(sinc_slope(t[3:], n), expected, rtol=1e-6)


PAD_VALUES = [
    ("np.pad(x, ((1, 0), (0, 2)), constant_values=((y, 1.0), (2.0, y)))", 0.7),
    ("np.pad(x, ((1, 2), (3, 1)), constant_values=y)", np.array([[0.3, 0.5], [0.7, -0.2]])),
    ("np.pad(x, 2, constant_values=y)", np.array([0.3, 0.5])),
    ("np.pad(x, (1, 2), constant_values=(y, 2 * y)) ** 2", 0.4),
    ("np.pad(x, 1, constant_values=y)", 0.4),
    ("np.pad(x, ((0, 1), (2, 0)), constant_values=y)", np.array([[0.3], [0.5]])),
    ("np.pad(x * y, ((1, 0), (0, 2)), constant_values=((y ** 2, 1.0), (2.0, y)))", 0.7),
]


@pytest.mark.parametrize("body, y", PAD_VALUES, ids=[b for b, _ in PAD_VALUES])
def test_pad_constant_values_per_axis_and_side(body: str, y: object) -> None:
    """constant_values=((before, after), ...) or an array of values per axis and side, carrying a
    gradient, crashed (ValueError: cannot reshape array of size 1 into shape (2,2); IndexError):
    the rule summed g over every padded entry. Each value gets the entries it fills (a corner
    the later axis's)."""
    from gradcheck import assert_grad_matches
    f = make_function(f"def f(x, y):\n    p = {body}\n"
                      "    return np.sum(np.sin(p) * np.reshape(np.cos(np.arange(np.size(p))), np.shape(p)))\n",
                      {"np": np})
    x = _RNG.standard_normal((3, 4))
    assert_grad_matches(f, [x, y], (0, 1))
    v = _RNG.standard_normal(np.shape(y)) if isinstance(y, np.ndarray) else 0.3
    eps = 1e-6
    g = s2sad.grad(f, wrt=1)
    expected = (np.asarray(g(x, y + eps * v)) - np.asarray(g(x, y - eps * v))) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f, wrt=1)(x, y, v), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(s2sad.jvp(f, wrt=1)(x, y, v)[1], np.sum(g(x, y) * v), rtol=1e-9)


def test_sinc_gradient_compiles_with_numba() -> None:
    """sinc_slope, which np.sinc's gradient now calls, has a numba implementation (jit=True)."""
    pytest.importorskip("numba")
    f = make_function("def f(x):\n    return np.sum(np.sinc(x) ** 2)\n", {"np": np})
    g = make_function("def g(t):\n    return np.sinc(t) * 3.0\n", {"np": np})
    x = np.array([0.0, 1e-7, 0.3, -1.2])
    np.testing.assert_allclose(s2sad.grad(f, jit=True)(x), s2sad.grad(f)(x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s2sad.grad(f, jit=True)(x), numerical_grad(f, [x], 0), rtol=1e-6, atol=1e-8)
    assert s2sad.grad(g, jit=True)(0.0) == 0.0
    np.testing.assert_allclose(s2sad.grad(g, jit=True)(0.7), s2sad.grad(g)(0.7), rtol=1e-12)


EINSUM_BROADCAST = [
    ("np.einsum('ij,ij', x, y)", (3, 1), (3, 4)),
    ("np.einsum('ij,ij->', x, y, optimize='greedy')", (3, 4), (3, 1)),
    ("np.einsum('ij,j', x, y)", (3, 4), (1,)),
    ("np.einsum('i,i', x, y)", (4,), (1,)),
    ("np.einsum(x, [0, 1], y, [0, 1], [0])", (3, 4), (3, 1)),
    ("np.einsum('...i,...i->...', x, y)", (2, 3, 4), (1, 1)),
]


@pytest.mark.parametrize("body, shape_x, shape_y", EINSUM_BROADCAST, ids=[b for b, _, _ in EINSUM_BROADCAST])
def test_einsum_operand_broadcast_against_length_one_axes(body: str, shape_x: tuple, shape_y: tuple) -> None:
    """An index summed away whose other operands have length 1 there (broadcast): the gradient
    of the longer operand had the short length (shape (3, 1) for a (3, 4) argument)."""
    from gradcheck import assert_grad_matches
    f = make_function(f"def f(x, y):\n    return np.sum(np.sin({body}))\n", {"np": np})
    args = [_RNG.standard_normal(shape_x), _RNG.standard_normal(shape_y)]
    assert_grad_matches(f, args, (0, 1))
    for k in (0, 1):
        v = _RNG.standard_normal(args[k].shape)
        moved = lambda s: [a + s * v if j == k else a for j, a in enumerate(args)]  # noqa: E731
        eps = 1e-6
        expected = (s2sad.grad(f, wrt=k)(*moved(eps)) - s2sad.grad(f, wrt=k)(*moved(-eps))) / (2 * eps)
        np.testing.assert_allclose(s2sad.hvp(f, wrt=k)(*args, v), expected, rtol=1e-5, atol=1e-7)


TAKE_ALONG = [
    ("np.take_along_axis(x, np.array([[0, 3]]), axis=1)", (3, 4)),
    ("np.take_along_axis(x, np.array([[1, 1, 0], [0, 2, 2], [3, 0, 1]]), axis=1)", (1, 4)),
    ("np.take_along_axis(x, np.array([[1], [0], [1]]), axis=0)", (2, 4)),
    ("np.take_along_axis(x, np.array([5, 0, 5]), None)", (3, 4)),
]


@pytest.mark.parametrize("body, shape", TAKE_ALONG, ids=[b for b, _ in TAKE_ALONG])
def test_take_along_axis_broadcasts_indices_and_array(body: str, shape: tuple) -> None:
    """Indices (or an array) of length 1 along another axis, which NumPy broadcasts, crashed the
    gradient (ValueError: array is not broadcastable to correct shape; IndexError)."""
    _check_all_orders(f"np.sum(np.sin({body}) * 1.5)", _RNG.standard_normal(shape))


THIRD_ORDER = ["np.abs(t) ** 3", "abs(t - 0.3) ** 2.5", "scipy.special.i1e(t)", "scipy.special.ive(1.5, t)",
               "np.sign(t) * t ** 4"]


@pytest.mark.parametrize("body", THIRD_ORDER)
def test_third_derivative_through_abs_and_sign(body: str) -> None:
    """grad(grad(grad(f))) of np.abs(t) ** 3 was refused when generated: 'this value is
    complex', since the second-order code's branch for a complex t (never taken for a real
    one) made its result look complex. Only a value complex on every path is refused there."""
    import scipy.special  # noqa: F401
    f = make_function(f"def f(t):\n    return {body}\n", {"np": np, "scipy": __import__("scipy")})
    third, second = s2sad.grad(s2sad.grad(s2sad.grad(f))), s2sad.grad(s2sad.grad(f))
    for t in (-0.4, 0.55, 1.3):
        expected = (second(t + 1e-5) - second(t - 1e-5)) / 2e-5
        np.testing.assert_allclose(third(t), expected, rtol=1e-5, atol=1e-7)


def test_a_value_complex_on_one_path_only_is_checked_when_it_is_returned() -> None:
    f = make_function("def f(t, flag=True):\n    if flag:\n        y = t ** 2\n    else:\n        y = t * 1j\n"
                      "    return y\n", {"np": np})
    assert s2sad.grad(f)(0.3) == pytest.approx(0.6)
    with pytest.raises(s2sad.NonScalarOutputError, match="got complex"):
        s2sad.grad(f)(0.3, False)
    g = make_function("def g(x):\n    y = np.fft.fft(x)\n    return y[0]\n", {"np": np})
    with pytest.raises(s2sad.NonScalarOutputError, match="this value is complex") as info:
        s2sad.grad(g)  # complex on every path: refused when generated, at the return
    assert info.value.location.line == 3


FFT_HIGHER = ["np.sum(np.fft.rfft(t * A_).real ** 3)", "np.sum(np.abs(np.fft.fft(t * A_)) ** 3)",
              "np.sum(np.fft.irfft(np.fft.rfft(t * A_) * (1 + 2j)) ** 3)", "np.sum(np.fft.hfft(t * A_ + 0.5j) ** 3)",
              "np.sum(np.imag(np.fft.ifft(np.sin(t * A_))) ** 2)"]


@pytest.mark.parametrize("body", FFT_HIGHER)
def test_grad_of_grad_through_fft_of_real_values(body: str) -> None:
    """grad(grad(f)) of a real function through np.fft was refused when generated ('this value
    is complex'): the gradient code's result, a real value's gradient through complex ones,
    looked complex. Helpers that give the gradient in x's type are complex only for a complex x."""
    f = make_function(f"def f(t):\n    return {body}\n", {"np": np, "A_": np.array([0.3, -1.2, 0.5, 0.9, 0.1])})
    first, second, third = s2sad.grad(f), s2sad.grad(s2sad.grad(f)), s2sad.grad(s2sad.grad(s2sad.grad(f)))
    for t in (0.55, 1.3):
        np.testing.assert_allclose(second(t), (first(t + 1e-5) - first(t - 1e-5)) / 2e-5, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(third(t), (second(t + 1e-5) - second(t - 1e-5)) / 2e-5, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("x", [np.float64(0.3), np.float32(-0.7), np.array(0.3), 0.3], ids=["f64", "f32", "0d", "float"])
def test_gradient_through_where_keeps_a_numpy_scalars_type(x: object) -> None:
    """Specialised code took np.where of NumPy scalars for a scalar, as a ufunc's result is,
    and left out the conversion: the gradient of an np.float64 was a 0-d array."""
    f = make_function("def f(x):\n    return np.where(x > 0, x, 0.0) ** 2\n", {"np": np})
    g = s2sad.grad(f)(x)
    assert type(g) is type(x)
    assert float(g) == pytest.approx(2 * max(float(x), 0.0), rel=1e-6)


@pytest.mark.parametrize("body", ["x * x", "np.multiply(x, x)", "np.square(x) + x * x", "np.multiply(x, x) + np.multiply(x, x)"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradient_of_a_0d_array_leaves_it_unchanged(body: str, dtype: type) -> None:
    """f(x) = x * x of a 0-d array: specialised code wrote the seed's product 1.0 * x as x inside
    dx = unbroadcast(x, x), which returns x itself, so dx += ... added into the caller's x
    (grad(f)(x) changed x, and the next call's gradient was wrong)."""
    f = make_function(f"def f(x):\n    return {body}\n", {"np": np})
    x = np.array(0.3, dtype=dtype)
    expected = numerical_grad(f, [np.array(0.3)], 0)
    for _ in range(3):
        g = s2sad.grad(f)(x)
        _, g2 = s2sad.value_and_grad(f)(x)
        assert x == dtype(0.3) and not np.shares_memory(g, x) and not np.shares_memory(g2, x)
        np.testing.assert_allclose([g, g2], [expected, expected], rtol=1e-5 if dtype is np.float64 else 1e-3)
