"""A systematic sweep of NumPy's and SciPy's functions in the manner of autograd's own tests
(test_systematic, test_numpy, test_linalg, test_scipy, test_fft): each function with the
keyword arguments that change its gradient, on inputs of shape (), (3,), (2, 3), (2, 3, 4),
broadcasting pairs, Python floats, float32 and complex inputs (tests/autog12_catalogue.py).

Every case's gradient with respect to every input is checked against central finite
differences in float64 (tests/autog12_check.py); a sample of them in forward mode, through
Hessian-vector products and against autograd. A case either is right or, if it is listed in
``REFUSED``, raises an S2SADError located in the user's code whose message says so.
Then the regression tests of the bugs the sweep found.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

import s2sad  # noqa: E402
from s2sad.errors import S2SADError  # noqa: E402
from autog12_catalogue import catalogue  # noqa: E402
from autog12_check import against_autograd, forward, numerical, reverse, second  # noqa: E402
from gradcheck import make_function  # noqa: E402

CASES = catalogue()
pytestmark = pytest.mark.filterwarnings("ignore")

# what is refused, by case: a piece of the message (the rest of the catalogue must be right)
REFUSED = {
    'sla.eigvalsh(x) [3x3]C': 'a gradient reaches scipy.linalg.eigvalsh of complex values',
    'sla.eigh(x, eigvals_only=True) [3x3]C': 'a gradient reaches scipy.linalg.eigh of complex values',
    "np.pad(x, 2, mode='reflect', reflect_type='odd') [3]": "s2sad differentiates np.pad with mode 'constant', 'edge', 'r",
    'np.interp(x, y, np.array([1.0, 2.0, 0.0])) [3, 3]': 'np.interp: s2sad does not differentiate np.interp with respe',
    'np.interp(x, np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.0, 1.0]), period=2.0) [4]': "s2sad does not differentiate np.interp with argument 'period",
    'np.gradient(x, 0.5, 2.0) [2x3]': 'arithmetic on a tuple cannot be differentiated (in Python, +',
    'np.gradient(x, y) [4, 4]': 'np.gradient: s2sad does not differentiate np.gradient with r',
    'np.cov(x, aweights=np.array([1.0, 2.0, 1.0, 3.0])) [2x4]': 'np.cov(..., aweights=...): s2sad does not differentiate np.c',
    'np.cov(x, fweights=np.array([1, 2, 1, 3])) [2x4]': 'np.cov(..., fweights=...): s2sad does not differentiate np.c',
    'np.atleast_2d(x, y)[1] [(), 3]': 'np.atleast_2d takes at most 1 positional arguments',
    "np.pad(x, 2, mode='mean') [3]": "s2sad differentiates np.pad with mode 'constant', 'edge', 'r",
    "np.pad(x, 2, mode='linear_ramp') [3]": "s2sad differentiates np.pad with mode 'constant', 'edge', 'r",
    'np.linalg.norm(x) [2x3]C': 'a gradient reaches np.linalg.norm of complex values, which s',
    'np.linalg.norm(x, axis=-1) [2x3]C': 'a gradient reaches np.linalg.norm of complex values, which s',
    'np.linalg.norm(x, 1) [3]C': 'a gradient reaches np.linalg.norm of complex values, which s',
    "np.linalg.qr(x, mode='complete')[1] [4x3]": "s2sad differentiates np.linalg.qr with mode 'reduced' of a m",
    'np.linalg.qr(x)[1] [3x4]': "s2sad differentiates np.linalg.qr with mode 'reduced' of a m",
    'special.gammaincc(x, 1.5) [3]': 'special.gammaincc: s2sad differentiates the incomplete gamma',
    'special.jv(x, 1.3) [3]': 'special.jv: s2sad does not differentiate with respect to the',
    'np.linalg.cond(x) [3x3]': "no gradient rule for 'np.linalg.cond' (it wraps cond",
    'np.linalg.matrix_rank(x) * x [3x3]': "no gradient rule for 'np.linalg.matrix_rank' (it wraps matri",
    'np.linalg.eigvals(x) [3x3]': 'a gradient reaches np.linalg.eigvals of a matrix with comple',
    'np.unique(x) [3]': "no gradient rule for 'np.unique' (it wraps unique",
    'np.sort_complex(x) [3]': "no gradient rule for 'np.sort_complex' (it wraps sort_comple",
    'np.histogram(x, bins=3, weights=x)[0] [5]': "no gradient rule for 'np.histogram' (it wraps histogram from",
    'np.unwrap(x) [3]': "no gradient rule for 'np.unwrap' (it wraps unwrap",
    'np.i0(x) [3]': "no gradient rule for 'np.i0' (it wraps i0",
    'np.spacing(x) + x [3]': "no gradient rule for 'np.spacing'",
    'np.nextafter(x, 1.0) [3]': "no gradient rule for 'np.nextafter'",
    'np.frexp(x)[0] [3]': "no gradient rule for 'np.frexp'",
    'np.resize(x, (2, 3)) [3]': "no gradient rule for 'np.resize' (it wraps resize",
    'np.compress([True, False, True], x) [3]': "no gradient rule for 'np.compress' (it wraps compress from /",
    'np.extract(x > 0, x) [3]': "no gradient rule for 'np.extract' (it wraps extract",
    'np.choose([0, 1, 0], [x, y]) [3, 3]': "no gradient rule for 'np.choose' (it wraps choose",
    'np.poly(x) [3]': "no gradient rule for 'np.poly' (it wraps poly",
    'np.roots(x) [3]': "no gradient rule for 'np.roots' (it wraps roots",
    'np.trim_zeros(x) [3]': "no gradient rule for 'np.trim_zeros' (it wraps trim_zeros fr",
    'np.histogram2d(x, y)[0] [3, 3]': "no gradient rule for 'np.histogram2d' (it wraps histogram2d ",
    'np.apply_along_axis(np.sum, 0, x) [2x3]': "'np.apply_along_axis': NumPy calls the Python function given",
    'np.vectorize(np.sin)(x) [3]': "'np.vectorize(np.sin)': NumPy calls the Python function give",
    'np.fromiter(x, float) [3]': "no gradient rule for 'np.fromiter'",
    'np.asarray(x, dtype=int) [3]': 'a gradient reaches np.asarray(..., dtype=int), a conversion ',
    'np.nanargmax(x) * x [3]': "no gradient rule for 'np.nanargmax' (it wraps nanargmax from",
    'np.maximum.outer(x, y) [3, 3]': "no gradient rule for 'np.maximum.outer'",
    'np.add.reduceat(x, [0, 2]) [3]': "no gradient rule for 'np.add.reduceat'",
    'np.logaddexp.accumulate(x) [3]': "no gradient rule for 'np.logaddexp.accumulate'",
    'np.ma.masked_array(x).sum() [3]': "no gradient rule for 'np.ma.masked_array'",
    'np.quantile(x, y, axis=0) [5, ()]': 'np.quantile: s2sad differentiates np.quantile with respect t',
    'np.sort(x, axis=-1) [3]C': 'a gradient reaches np.sort of complex values, which s2sad di',
    'np.max(x) [3]C': 'a gradient reaches a maximum or minimum of complex values, w',
    'np.var(x) [3]C': 'a gradient reaches np.var of complex values, which s2sad dif',
    'np.maximum(x, y) [3, 3]C': 'a gradient reaches a maximum or minimum of complex values, w',
    'np.clip(x, 0.0, 1.0) [3]C': 'a gradient reaches np.clip of complex values, which s2sad di',
    'np.linalg.eigh(x)[0] [3x3]C': 'a gradient reaches np.linalg.eigh of complex values, which s',
    'np.linalg.svd(x)[1] [3x3]C': 'a gradient reaches np.linalg.svd of complex values, which s2',
    'np.linalg.qr(x)[1] [3x3]C': 'a gradient reaches np.linalg.qr of complex values, which s2s',
    'np.linalg.pinv(x) [3x3]C': 'a gradient reaches np.linalg.pinv of complex values, which s',
    'np.linalg.slogdet(x)[1] [3x3]C': 'a gradient reaches np.linalg.slogdet of complex values, whic',
    'np.std(x) [3]C': 'a gradient reaches np.var of complex values, which s2sad dif',
    'np.linalg.norm(x, 2) [2x3]C': 'a gradient reaches np.linalg.norm of complex values, which s',
    'np.linalg.norm(x, np.inf) [3]C': 'a gradient reaches np.linalg.norm of complex values, which s',
    'np.cov(x) [2x4]C': 'a gradient reaches np.cov of complex values, which s2sad dif',
}


def _expect(case_id: str, got: str) -> None:
    if case_id in REFUSED:
        assert got.startswith("refused") and REFUSED[case_id] in got, got
    else:
        assert got == "correct", got


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_reverse_mode_against_finite_differences(case) -> None:
    _expect(case.id, reverse(case))


def _sample(every: int) -> list:
    return [c for i, c in enumerate(CASES) if i % every == 0 and c.id not in REFUSED and c.dtype == "float64"
            and "float32" not in c.expr]


@pytest.mark.parametrize("case", _sample(7), ids=lambda c: c.id)
def test_forward_mode_against_finite_differences(case) -> None:
    assert forward(case) == "correct"


@pytest.mark.parametrize("case", _sample(17), ids=lambda c: c.id)
def test_hessian_vector_product_against_finite_differences_of_the_gradient(case) -> None:
    got = second(case)
    assert got == "correct" or got.startswith("refused"), got


@pytest.mark.parametrize("case", _sample(9), ids=lambda c: c.id)
def test_against_autograd(case) -> None:
    got = against_autograd(case)
    assert got == "correct" or got.startswith("skipped"), got


# --- regressions ------------------------------------------------------------------------------

def _f(body: str, params: str = "x") -> object:
    return make_function(f"def f({params}):\n    return {body}\n", {"np": np})


@pytest.mark.parametrize("x", [np.array(0.4), np.array([0.4, 0.4]), np.array([[1.0, np.nan], [1.0, 2.0]])])
def test_nanstd_without_deviation_has_a_zero_gradient_like_std(x) -> None:
    """np.nanstd of a single value (or equal values) gave NaN gradients (0.5 / ans with ans 0),
    where np.std gives 0 (the subgradient at a norm's origin); every mode agrees now."""
    f = _f("np.sum(np.nanstd(x, axis=0) * np.array([1.5, -2.0])[:np.size(np.nanstd(x, axis=0))])")
    g = s2sad.grad(f)(x)
    assert not np.any(np.isnan(g))
    if x.ndim == 2:  # column 0 is constant, column 1 one value: both 0
        np.testing.assert_array_equal(g, np.zeros_like(x))
    _, slope = s2sad.jvp(f)(x, np.ones_like(x))
    assert slope == 0.0
    assert not np.any(np.isnan(s2sad.hvp(f)(x, np.ones_like(x))))


def test_a_cast_to_float32_gives_the_gradient_in_the_inputs_dtype() -> None:
    """np.asarray(x, dtype=np.float32) gave a float64 x a float32 gradient."""
    x = np.array([0.1, 0.2, 0.3])
    g = s2sad.grad(_f("np.sum(np.asarray(x, dtype=np.float32) * np.array([1.0, 2.0, 3.0]))"))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, [1.0, 2.0, 3.0])
    g = s2sad.grad(_f("np.sum(np.array(x, dtype=np.float32) ** 2)"))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * x, rtol=1e-6)


@pytest.mark.parametrize("axis, shape", [((0, 2), (2, 4)), ((2, 0), (4, 2)), ((-1, 0), (4, 2)), ((1,), (3,))])
def test_average_over_a_tuple_of_axes_with_weights(axis, shape) -> None:
    """np.average(a, axis=(0, 2), weights=w) with w shaped like those axes was a TypeError in
    the generated code (axis_shape took one axis); the weights are laid along the axes, in the
    order the tuple names them, in every mode."""
    rng = np.random.default_rng(3)
    a, w = rng.standard_normal((2, 3, 4)), rng.uniform(0.5, 2.0, shape)
    f = make_function(f"def f(a, w):\n    return np.sum(np.sin(np.average(a, axis={axis}, weights=w)))\n",
                      {"np": np})
    ga, gw = s2sad.grad(f, (0, 1))(a, w)
    np.testing.assert_allclose(ga, numerical(f, [a, w], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, numerical(f, [a, w], 1), rtol=1e-6, atol=1e-8)
    v = rng.standard_normal(shape)
    _, slope = s2sad.jvp(f, 1)(a, w, v)
    np.testing.assert_allclose(slope, np.sum(gw * v), rtol=1e-9)
    eps = 1e-6
    want = (s2sad.grad(f, 1)(a, w + eps * v) - s2sad.grad(f, 1)(a, w - eps * v)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f, 1)(a, w, v), want, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("body", ["np.tril(x)", "np.triu(x, 1)", "np.tril(x, -1)", "np.triu(x, -2)"])
def test_tril_of_a_vector_sums_the_gradient_of_its_rows(body) -> None:
    """np.tril(v) of a vector is the square whose rows are v, masked: the gradient was that
    square's (shape (3, 3) for a (3,) input); it is now the sum of its rows, in every mode."""
    rng = np.random.default_rng(5)
    x, w, v = rng.standard_normal(3), rng.standard_normal((3, 3)), rng.standard_normal(3)
    f = make_function(f"def f(x):\n    return np.sum(W * {body} ** 2)\n", {"np": np, "W": w})
    g = s2sad.grad(f)(x)
    assert g.shape == (3,)
    np.testing.assert_allclose(g, numerical(f, [x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2sad.jvp(f)(x, v)[1], np.sum(g * v), rtol=1e-9)
    eps = 1e-6
    want = (s2sad.grad(f)(x + eps * v) - s2sad.grad(f)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f)(x, v), want, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("p_shape, x_shape", [((2, 1), (3,)), ((2, 3), ()), ((3, 2, 1), (2, 4)), ((4, 3), (3,))])
def test_polyval_with_rows_of_coefficients(p_shape, x_shape) -> None:
    """np.polyval(p, x) with p of two or more dimensions (each row a coefficient, broadcast
    against x): p's gradient had shape (n,) and x's used the degrees along p's last axis."""
    rng = np.random.default_rng(8)
    p, x = rng.standard_normal(p_shape), rng.standard_normal(x_shape)
    f = make_function("def f(p, x):\n    return np.sum(np.sin(np.polyval(p, x)))\n", {"np": np})
    gp, gx = s2sad.grad(f, (0, 1))(p, x)
    assert gp.shape == p.shape
    np.testing.assert_allclose(gp, numerical(f, [p, x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gx, numerical(f, [p, x], 1), rtol=1e-6, atol=1e-8)
    v = rng.standard_normal(x_shape)
    np.testing.assert_allclose(s2sad.jvp(f, 1)(p, x, v)[1], np.sum(gx * v), rtol=1e-9, atol=1e-12)
    eps = 1e-6
    want = (s2sad.grad(f, 0)(p + eps * gp, x) - s2sad.grad(f, 0)(p - eps * gp, x)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f, 0)(p, x, gp), want, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("body", ["sla.eigvalsh(x)", "sla.eigh(x, eigvals_only=True)"])
def test_scipy_eigenvalues_of_a_complex_matrix_are_refused(body) -> None:
    """scipy.linalg.eigvalsh (and eigh with eigvals_only=True) of a complex Hermitian matrix
    gave a silently wrong gradient (a rule without conjugates); it is refused where it stands,
    in reverse and forward mode, as np.linalg.eigvalsh's is."""
    from scipy import linalg
    rng = np.random.default_rng(9)
    z = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    z = z + z.conj().T
    f = make_function(f"def f(x):\n    return np.sum({body} ** 2)\n", {"np": np, "sla": linalg})
    for run in (lambda: s2sad.grad(f)(z), lambda: s2sad.jvp(f)(z, np.ones((3, 3)))):
        with pytest.raises(S2SADError, match=r"scipy\.linalg\.eig.* of complex values") as info:
            run()
        assert info.value.location.line == 2


def test_sign_of_complex_values_is_differentiated() -> None:
    """np.sign(z) of a complex z is z / |z| (NumPy 2), which depends on z's phase: it was
    declared non-differentiable, a silent zero gradient; it is now i Im(g sign(z)) / z, and 0
    for a real x (piecewise constant), in every mode."""
    rng = np.random.default_rng(10)
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    w = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    f = make_function("def f(z):\n    return np.sum(np.real(W * np.sign(z)))\n", {"np": np, "W": w})
    g = s2sad.grad(f)(z)
    eps = 1e-6
    want = np.array([(f(z + eps * e) - f(z - eps * e) - 1j * (f(z + 1j * eps * e) - f(z - 1j * eps * e))) / (2 * eps)
                     for e in np.eye(4)])
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-9)
    v = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    np.testing.assert_allclose(s2sad.jvp(f)(z, v)[1], np.real(np.sum(g * v)), rtol=1e-9)
    x = np.array([0.5, -2.0, 3.0])
    np.testing.assert_array_equal(s2sad.grad(_f("np.sum(np.sign(x) * x ** 2)"))(x), 2 * np.abs(x))


def test_digamma_of_complex_values_is_refused_and_gamma_second_order_too() -> None:
    """scipy.special.digamma of complex values: its rule's polygamma takes real values only, and
    the generated code raised NumPy's TypeError; it is refused at the call, and so is the
    second derivative of scipy.special.gamma of complex values (whose gradient is digamma's)."""
    from scipy import special
    z = np.array([0.5 + 0.3j, 1.2 - 0.4j])
    space = {"np": np, "special": special}
    f = make_function("def f(z):\n    return np.sum(np.abs(special.digamma(z)) ** 2)\n", space)
    with pytest.raises(S2SADError, match="scipy.special.digamma of complex values") as info:
        s2sad.grad(f)(z)
    assert info.value.location.line == 2
    g = make_function("def f(z):\n    return np.sum(np.abs(special.gamma(z)) ** 2)\n", space)
    s2sad.grad(g)(z)  # first order: digamma of complex values is computed, not differentiated
    with pytest.raises(S2SADError, match="scipy.special.digamma of complex values"):
        s2sad.hvp(g)(z, np.ones(2, dtype=complex))


@pytest.mark.parametrize("body", ["stats.cauchy.logpdf(x, 0.5, 2.0)", "stats.laplace.logpdf(x, y)",
                                  "stats.multivariate_normal.logpdf(x, y, 2.0 * np.eye(3))",
                                  "stats.norm.cdf(x, y)", "stats.norm.logpdf(x)"])
def test_scipy_stats_of_complex_values_are_refused(body) -> None:
    """scipy.stats' densities are of real variables (SciPy drops imaginary parts in some methods,
    keeps them in others): complex values gave silently wrong gradients and tangents; a gradient
    reaching them is refused at the call."""
    from scipy import stats
    x, y = np.array([0.3 + 0.2j, -1.0 + 0.5j, 0.7 - 0.1j]), np.array([0.2, 0.1, -0.3])
    f = make_function(f"def f(x, y):\n    return np.sum(np.abs({body}))\n", {"np": np, "stats": stats})
    for run in (lambda: s2sad.grad(f)(x, y), lambda: s2sad.jvp(f)(x, y, np.ones(3, dtype=complex))):
        with pytest.raises(S2SADError, match=r"scipy\.stats\..* of complex values") as info:
            run()
        assert info.value.location.line == 2


@pytest.mark.parametrize("body", ["np.var(x, mean=np.mean(x))", "np.std(x, mean=np.mean(x), ddof=1)"])
def test_var_with_a_mean_of_complex_values_is_refused(body) -> None:
    """np.var(x, mean=m) of complex values (the mean of |x - m| ** 2) was differentiated without
    conjugates, a silently wrong gradient; it is refused, as np.var(x) of complex values is."""
    z = np.array([0.3 + 0.2j, -1.0 + 0.5j, 0.7 - 0.1j])
    f = _f(body)
    for run in (lambda: s2sad.grad(f)(z), lambda: s2sad.jvp(f)(z, np.ones(3, dtype=complex))):
        with pytest.raises(S2SADError, match="np.var of complex values") as info:
            run()
        assert info.value.location.line == 2
    x = z.real  # real values: right
    np.testing.assert_allclose(s2sad.grad(f)(x), numerical(f, [x], 0), rtol=1e-6, atol=1e-9)


def test_slogdet_of_complex_values_is_refused_in_forward_mode_too() -> None:
    """np.linalg.slogdet of a complex matrix is refused in reverse mode (slogdet_grad), but its
    tangent was computed without the sign's phase: a silently wrong jvp; now refused too."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    f = _f("np.real(np.linalg.slogdet(x)[0]) * np.linalg.slogdet(x).logabsdet")
    with pytest.raises(S2SADError, match="np.linalg.slogdet of complex values") as info:
        s2sad.jvp(f)(a, np.ones((3, 3), dtype=complex))
    assert info.value.location.line == 2
    x = a.real
    v = rng.standard_normal((3, 3))
    np.testing.assert_allclose(s2sad.jvp(f)(x, v)[1], np.sum(s2sad.grad(f)(x) * v), rtol=1e-9)


@pytest.mark.parametrize("mode, shapes", [("full", ((5,), (3,))), ("same", ((3, 4), (2, 2))), ("valid", ((5,), (3,)))])
def test_scipy_correlate_of_complex_values_conjugates(mode, shapes) -> None:
    """scipy.signal.correlate(a, v) sums a[l] conj(v[l - k]): its rule flipped v but left out the
    conjugate, so complex inputs had silently wrong gradients (real ones were right)."""
    from scipy import signal
    rng = np.random.default_rng(12)
    a, v = (rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes)
    f = make_function(f"def f(a, v):\n    return np.sum(np.abs(signal.correlate(a, v, mode={mode!r})) ** 2)\n",
                      {"np": np, "signal": signal})
    ga, gv = s2sad.grad(f, (0, 1))(a, v)
    eps = 1e-6
    for g, k, x in ((ga, 0, a), (gv, 1, v)):
        want = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            e = np.zeros_like(x)
            e[i] = eps
            step = [(lambda d: [a + d, v]), (lambda d: [a, v + d])][k]
            want[i] = (f(*step(e)) - f(*step(-e)) - 1j * (f(*step(1j * e)) - f(*step(-1j * e)))) / (2 * eps)
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)


def test_logsumexp_with_return_sign_of_complex_values_is_refused() -> None:
    """logsumexp(a, return_sign=True) of complex values returns the sum's phase as its sign,
    which the rule leaves out: a silently wrong gradient and tangent; now refused."""
    from scipy import special
    z = np.array([0.3 + 0.2j, -1.0 + 0.5j, 0.7 - 0.1j])
    f = make_function("def f(x):\n    return np.real(special.logsumexp(x, return_sign=True)[0])\n",
                      {"np": np, "special": special})
    for run in (lambda: s2sad.grad(f)(z), lambda: s2sad.jvp(f)(z, np.ones(3, dtype=complex))):
        with pytest.raises(S2SADError, match=r"logsumexp\(\.\.\., return_sign=True\) of complex values"):
            run()
    x = z.real
    np.testing.assert_allclose(s2sad.grad(f)(x), numerical(f, [x], 0), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("shapes", [((), (3,)), ((4,), ()), ((), ())])
def test_convolve_with_a_number(shapes) -> None:
    """np.convolve reads a number as a vector of one: its gradient's helper took the number's
    shape () as is, and the generated code raised NumPy's ValueError."""
    rng = np.random.default_rng(13)
    a, v = (rng.standard_normal(s) for s in shapes)
    f = make_function("def f(a, v):\n    return np.sum(np.sin(np.convolve(a, v)))\n", {"np": np})
    ga, gv = s2sad.grad(f, (0, 1))(a, v)
    assert np.shape(ga) == np.shape(a) and np.shape(gv) == np.shape(v)
    np.testing.assert_allclose(ga, numerical(f, [a, v], 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gv, numerical(f, [a, v], 1), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("body", ["np.transpose(x, (-1, 0, 1))", "x.transpose(-1, -3, -2)", "np.permute_dims(x, (1, -1, 0))"])
def test_transpose_with_negative_axes(body) -> None:
    """np.transpose(x, (-1, 0, 1)): the gradient undid the permutation by sorting the axes as
    given, so negative ones came first (the identity here): a silently wrong gradient."""
    rng = np.random.default_rng(14)
    x, w = rng.standard_normal((2, 3, 4)), rng.standard_normal(24)
    f = make_function(f"def f(x):\n    return np.sum(np.ravel({body}) * W)\n", {"np": np, "W": w})
    g = s2sad.grad(f)(x)
    np.testing.assert_allclose(g, numerical(f, [x], 0), rtol=1e-6, atol=1e-9)
    v = rng.standard_normal(x.shape)
    np.testing.assert_allclose(s2sad.jvp(f)(x, v)[1], np.sum(g * v), rtol=1e-9)
    h = make_function(f"def h(x):\n    return np.sum(np.ravel({body}) ** 3 * W)\n", {"np": np, "W": w})
    eps = 1e-6
    want = (s2sad.grad(h)(x + eps * v) - s2sad.grad(h)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(h)(x, v), want, rtol=1e-5, atol=1e-8)


def test_arithmetic_on_a_flat_iterator() -> None:
    """x.flat * y (NumPy reads the iterator as the vector of x's items): the gradient took the
    iterator for a number, summed y's gradient to one value and raised NumPy's ValueError."""
    rng = np.random.default_rng(15)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal(6)
    f = make_function("def f(x, y):\n    return np.sum(np.sin(x.flat * y))\n", {"np": np})
    gx, gy = s2sad.grad(f, (0, 1))(x, y)
    np.testing.assert_allclose(gx, numerical(f, [x, y], 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gy, numerical(f, [x, y], 1), rtol=1e-6, atol=1e-9)


def test_sign_of_real_values_still_compiles_with_jit() -> None:
    """np.sign's rule (complex values: i Im(g sign(z)) / z) keeps real values' gradients real
    through real_like, which numba compiles: jit=True code using np.sign compiles as before."""
    pytest.importorskip("numba")
    f = _f("np.sum(np.sign(x) * x ** 2 + np.abs(x))")
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(s2sad.grad(f, jit=True)(x), 2 * np.abs(x) + np.sign(x))


def test_ix_of_values_that_carry_a_gradient_is_refused() -> None:
    """np.ix_ was declared non-differentiable, but of floats it returns the values themselves
    (reshaped): np.ix_(x)[0] ** 2 had a silent zero gradient; it is refused at the call, and
    np.ix_ of index arrays indexes as before."""
    with pytest.raises(S2SADError, match="np.ix_ builds index arrays") as info:
        s2sad.grad(_f("np.sum(np.ix_(x)[0] ** 2)"))(np.array([1.0, 2.0]))
    assert (info.value.location.line, info.value.location.column) == (2, 19)
    x = np.arange(9.0).reshape(3, 3)
    g = s2sad.grad(_f("np.sum(x[np.ix_(np.array([0, 2]), np.array([1, 2]))] ** 3)"))(x)
    np.testing.assert_array_equal(g, [[0, 3, 12], [0, 0, 0], [0, 147, 192]])


@pytest.mark.parametrize("body", ["np.max(x, axis=0)", "np.prod(x, axis=-1)", "np.cumprod(x, axis=0)",
                                  "np.repeat(x, 2, axis=0)", "np.sum(x, axis=0, keepdims=True)", "x.max(0)"])
def test_reducing_a_0d_array_over_axis_0(body) -> None:
    """NumPy reduces a 0-d array over axis 0 (or -1) as over nothing (np.cumprod and np.repeat
    take it as a vector of one): the helpers took the axis modulo the rank 0 (ZeroDivisionError)
    or moved an axis it does not have (AxisError, IndexError)."""
    f = _f(f"np.sum({body} ** 2)")
    x = np.array(0.7)
    g = s2sad.grad(f)(x)
    assert np.shape(g) == ()
    np.testing.assert_allclose(g, numerical(f, [x], 0), rtol=1e-6)
    np.testing.assert_allclose(s2sad.jvp(f)(x, np.array(1.0))[1], g, rtol=1e-9)
    np.testing.assert_allclose(s2sad.hvp(f)(x, np.array(1.0)), numerical(s2sad.grad(f), [x], 0), rtol=1e-5)


def test_scipy_cholesky_of_a_number() -> None:
    """scipy.linalg.cholesky(a) of a number is its 1 x 1 factor: the gradient had that (1, 1)
    shape instead of the number's ()."""
    from scipy import linalg
    f = make_function("def f(x):\n    return np.sum(sla.cholesky(x) ** 3)\n", {"np": np, "sla": linalg})
    x = np.array(2.0)
    g = s2sad.grad(f)(x)
    assert np.shape(g) == ()
    np.testing.assert_allclose(g, 1.5 * np.sqrt(x), rtol=1e-9)
    np.testing.assert_allclose(s2sad.jvp(f)(x, np.array(1.0))[1], g, rtol=1e-9)
