"""SciPy functions s2sad refused before (s2sad/rules/scipy_more_rules.py): ``scipy.fft``'s
FFTs and DCTs, ``scipy.integrate``'s cumulative_trapezoid and simpson, ``scipy.ndimage``'s
linear filters, ``scipy.linalg.lstsq`` and ``qr``, as a rule table run like
tests/test_rules_scipy.py's (float64 and float32 against finite differences, forward against
reverse mode, second order), and their refusals.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
from scipy import fft as sfft  # noqa: E402
from scipy import integrate, linalg, ndimage  # noqa: E402

import s2sad  # noqa: E402
import test_rules  # noqa: E402
from s2sad.errors import NoGradientRuleError  # noqa: E402
from test_rules import F, Row  # noqa: E402
from test_rules_numpy_more import table_tests  # noqa: E402

from gradcheck import make_function  # noqa: E402

test_rules.NAMESPACE.update(sfft=sfft, integrate=integrate, ndimage=ndimage, linalg=linalg,
                            X5=np.array([0.0, 0.4, 1.1, 1.5, 2.6]), K=np.array([[0.5, -1.0], [2.0, 0.3], [-0.7, 1.1]]),
                            K1=np.array([0.4, -1.2, 0.9, 2.0]))

FFT = [  # n, axis, s, axes, norm, workers
    Row("np.abs(sfft.fft(x)) ** 2", ((8,),), (sfft.fft,)),
    Row("np.real(sfft.fft(x, 6, norm='ortho'))", ((8,),), (sfft.fft,)),
    Row("np.abs(sfft.fft(x + 1j * y, axis=0, norm='forward', workers=2))", ((4, 3), (4, 3)), (sfft.fft,)),
    Row("np.imag(sfft.ifft(x, 5, 0, 'ortho'))", ((4, 3),), (sfft.ifft,)),
    Row("np.real(sfft.ifft(x * (1 + 2j)))", ((6,),), (sfft.ifft,)),
    Row("np.abs(sfft.fft2(x))", ((3, 4),), (sfft.fft2,)),
    Row("np.abs(sfft.fft2(x, axes=(0, 2), norm='forward'))", ((2, 3, 4),), (sfft.fft2,)),
    Row("np.real(sfft.ifft2(x, s=(4, 5)))", ((3, 4),), (sfft.ifft2,)),
    Row("np.abs(sfft.fftn(x, axes=(0, 2)))", ((2, 3, 4),), (sfft.fftn,)),
    Row("np.imag(sfft.ifftn(x, s=(3, 2), axes=(1, 2), norm='ortho'))", ((2, 3, 4),), (sfft.ifftn,)),
    Row("np.real(sfft.ifftn(x + 1j * y))", ((2, 3), (2, 3)), (sfft.ifftn,)),
    Row("np.abs(sfft.rfft(x))", ((8,),), (sfft.rfft,)),
    Row("np.real(sfft.rfft(x, 7))", ((5,),), (sfft.rfft,)),
    Row("np.imag(sfft.rfft(x, axis=0, norm='ortho'))", ((6, 3),), (sfft.rfft,)),
    Row("sfft.irfft(x * (1 - 0.5j))", ((5,),), (sfft.irfft,)),
    Row("sfft.irfft(sfft.rfft(x) * y, 9, norm='forward')", ((9,), (5,)), (sfft.irfft, sfft.rfft)),
    Row("np.abs(sfft.rfft2(x))", ((4, 6),), (sfft.rfft2,)),
    Row("sfft.irfft2(sfft.rfft2(x) * (1 + 2j), s=(4, 5))", ((4, 6),), (sfft.irfft2, sfft.rfft2)),
    Row("np.abs(sfft.rfftn(x, norm='forward'))", ((3, 4, 6),), (sfft.rfftn,)),
    Row("sfft.irfftn(sfft.rfftn(x) * (1 + 1j), s=(3, 4, 5), norm='ortho')", ((3, 4, 6),),
        (sfft.irfftn, sfft.rfftn)),
    Row("sfft.hfft(x * (1 + 0.3j), 7)", ((5,),), (sfft.hfft,)),
    Row("np.abs(sfft.ihfft(x, norm='ortho'))", ((6,),), (sfft.ihfft,)),
    Row("sfft.fftshift(x) ** 2", ((5, 4),), (sfft.fftshift,)),
    Row("sfft.ifftshift(x, axes=0) ** 2", ((5, 4),), (sfft.ifftshift,)),
]
DCT = [  # every type and norm, n cutting and padding, along either axis
    *(Row(f"sfft.dct(x, {t}, norm={norm!r}) ** 2", ((6,),), (sfft.dct,))
      for t in (1, 2, 3, 4) for norm in (None, "ortho", "forward")),
    *(Row(f"sfft.idct(x, type={t}, n={n}, axis=0, norm={norm!r}) ** 2", ((5, 3),), (sfft.idct,))
      for t in (1, 2, 3, 4) for norm in ("backward", "ortho") for n in (4, 7)),
    Row("sfft.dct(x, axis=0, norm='ortho', workers=1) * y", ((5, 3), (5, 3)), (sfft.dct,)),
    *(Row(f"sfft.dctn(x, {t}, norm={norm!r}) ** 2", ((4, 5),), (sfft.dctn,))
      for t in (1, 2, 3, 4) for norm in (None, "ortho", "forward")),
    Row("sfft.dctn(x, s=(3, 6), axes=(2, 0)) ** 2", ((4, 2, 5),), (sfft.dctn,)),
    Row("sfft.idctn(x, 3, s=(4,), norm='ortho') * y", ((3, 5), (3, 4)), (sfft.idctn,)),
    Row("sfft.idctn(x, axes=(0, 1), workers=2) ** 2", ((3, 5, 2),), (sfft.idctn,)),
]

INTEGRATE = [  # x given (one axis, or y's shape) or dx, initial=0 or None
    Row("integrate.cumulative_trapezoid(x)", ((6,),), (integrate.cumulative_trapezoid,)),
    Row("integrate.cumulative_trapezoid(x, initial=0)", ((6,),), (integrate.cumulative_trapezoid,)),
    Row("integrate.cumulative_trapezoid(x, dx=y, axis=0)", ((5, 3), F), (integrate.cumulative_trapezoid,),
        ("real", "positive")),
    Row("integrate.cumulative_trapezoid(x, dx=y, axis=0, initial=0)", ((5, 3), F),
        (integrate.cumulative_trapezoid,), ("real", "positive")),
    Row("integrate.cumulative_trapezoid(x, y)", ((3, 5), (5,)), (integrate.cumulative_trapezoid,)),
    Row("integrate.cumulative_trapezoid(x, y, axis=0, initial=0)", ((5, 3), (5,)), (integrate.cumulative_trapezoid,)),
    Row("integrate.cumulative_trapezoid(x, y, axis=0)", ((5, 3), (5, 3)), (integrate.cumulative_trapezoid,)),
    Row("integrate.cumulative_trapezoid(x ** 2, y ** 2, initial=0)", ((2, 4), (2, 4)),
        (integrate.cumulative_trapezoid, operator.pow)),
    Row("integrate.simpson(x)", ((6,),), (integrate.simpson,)),
    Row("integrate.simpson(x ** 2)", ((5,),), (integrate.simpson, operator.pow)),
    Row("integrate.simpson(x, dx=y)", ((5,), F), (integrate.simpson,), ("real", "positive")),
    Row("integrate.simpson(x ** 2, dx=y, axis=0)", ((4, 3), F), (integrate.simpson, operator.pow),
        ("real", "positive")),
    Row("integrate.simpson(x ** 2, x=X5)", ((3, 5),), (integrate.simpson, operator.pow)),
    Row("integrate.simpson(x, X5[:4], axis=0)", ((4, 2),), (integrate.simpson,)),
    Row("integrate.simpson(x ** 2, x=np.cumsum(np.ones((3, 4)), axis=1) ** 1.5)", ((3, 4),),
        (integrate.simpson, operator.pow)),
]

MODES = ("reflect", "mirror", "nearest", "wrap", "constant")
NDIMAGE = [  # every boundary mode (the transpose of each differs), cval, origins, even sizes, axes
    *(row for mode in MODES for row in (
        Row(f"ndimage.gaussian_filter(x, 1.2, mode='{mode}', cval=0.3)", ((5, 6),), (ndimage.gaussian_filter,)),
        Row(f"ndimage.gaussian_filter1d(x, 2.0, axis=0, order=1, mode='{mode}')", ((5, 3),),
            (ndimage.gaussian_filter1d,)),
        Row(f"ndimage.uniform_filter(x, 4, mode='{mode}', origin=-1)", ((5, 6),), (ndimage.uniform_filter,)),
        Row(f"ndimage.uniform_filter1d(x, 3, mode='{mode}')", ((7,),), (ndimage.uniform_filter1d,)),
        Row(f"ndimage.convolve(x, K, mode='{mode}')", ((5, 6),), (ndimage.convolve,)),
        Row(f"ndimage.correlate(x, K, mode='{mode}', origin=(1, 0))", ((5, 6),), (ndimage.correlate,)),
        Row(f"ndimage.convolve1d(x, K1, axis=0, mode='{mode}', origin=1)", ((6, 2),), (ndimage.convolve1d,)),
        Row(f"ndimage.correlate1d(x, K1, mode='{mode}')", ((6,),), (ndimage.correlate1d,)))),
    Row("ndimage.gaussian_filter(x ** 2, [0.8, 1.5], order=(0, 2))", ((5, 6),),
        (ndimage.gaussian_filter, operator.pow)),
    Row("ndimage.gaussian_filter(x, 1.0, mode=['wrap', 'nearest'], axes=(0, 1)) * y", ((4, 5), (4, 5)),
        (ndimage.gaussian_filter,)),
    Row("ndimage.gaussian_filter(x, 1.0, axes=(1,), radius=2, mode='grid-wrap')", ((4, 5),),
        (ndimage.gaussian_filter,)),
    Row("ndimage.uniform_filter(x, (2, 3), mode='grid-mirror', axes=(0, 2))", ((3, 2, 4),),
        (ndimage.uniform_filter,)),
]

LINALG = [  # np.linalg's rules: lstsq of full rank (residues a scalar for a vector b), QR
    Row("linalg.lstsq(x, y)[0]", ((5, 3), (5,)), (linalg.lstsq, operator.getitem)),
    Row("linalg.lstsq(x, y)[0]", ((5, 3), (5, 2)), (linalg.lstsq, operator.getitem)),
    Row("linalg.lstsq(x, y)[1]", ((5, 3), (5,)), (linalg.lstsq, operator.getitem)),
    Row("linalg.lstsq(x, y, lapack_driver='gelsy')[1]", ((5, 3), (5, 2)), (linalg.lstsq, operator.getitem)),
    Row("linalg.lstsq(x, y)[3]", ((5, 3), (5,)), (linalg.lstsq, operator.getitem)),
    Row("linalg.lstsq(x, y)[0] ** 2", ((4, 4), (4,)), (linalg.lstsq, operator.getitem, operator.pow)),
    Row("linalg.qr(x, mode='economic')[0]", ((5, 3),), (linalg.qr, operator.getitem)),
    Row("linalg.qr(x, mode='economic')[1]", ((5, 3),), (linalg.qr, operator.getitem)),
    Row("linalg.qr(x)[0] ** 2", ((4, 4),), (linalg.qr, operator.getitem, operator.pow)),
]

ROWS: list[Row] = [*FFT, *DCT, *INTEGRATE, *NDIMAGE, *LINALG]


# --- the same checks as tests/test_rules.py's table, and second order -----------------------
globals().update(table_tests(ROWS))


@pytest.mark.parametrize("t", [1, 2, 3, 4])
@pytest.mark.parametrize("norm", [None, "forward", "ortho"])
def test_dct_second_order_of_a_nonlinear_function(t: int, norm: Any) -> None:
    """The hvp of sum(idctn(dct(x)^3)) goes through dct_grad's own rule (dct_transform)."""
    f = make_function(f"def f(x):\n    return np.sum(sfft.idctn(sfft.dct(x, {t}, norm={norm!r}) ** 3, 2))\n",
                      {"np": np, "sfft": sfft})
    rng = np.random.default_rng(t)
    x, v = rng.standard_normal((2, 6)), rng.standard_normal((2, 6))
    grad = s2sad.grad(f)
    eps = 1e-5
    expected = (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f)(x, v), expected, rtol=1e-6, atol=1e-6)


REFUSED = [  # (expression of y, what the error says)
    ("sfft.fft(y, overwrite_x=True)", "leave overwrite_x=False"),
    ("sfft.rfftn(y, None, None, None, True)", "leave overwrite_x=False"),
    ("sfft.dct(y, overwrite_x=True)", "leave overwrite_x=False"),
    ("sfft.idct(y, norm='ortho', orthogonalize=False)", "leave orthogonalize out"),
    ("integrate.simpson(np.ones(4), x=y)", "with respect to y and dx only"),
    ("ndimage.gaussian_filter(np.ones(4), 1.0, mode='constant', cval=y[0])", "input only, not cval"),
    ("ndimage.convolve(np.ones(4), y)", r"write scipy.signal.convolve\(\.\.\., mode='same'\)"),
    ("ndimage.correlate1d(np.ones(4), y)", "for a gradient with respect to the weights"),
    ("ndimage.uniform_filter(y, output=np.float32)", "assign the result"),
    ("linalg.lstsq(np.ones((4, 2)) + y[:2], y, overwrite_b=True)[0]", "leave overwrite_b=False"),
    ("linalg.qr(np.ones((4, 2)) + y[:2], overwrite_a=True)[0]", "leave overwrite_a=False"),
]


@pytest.mark.parametrize("expr, complaint", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_at_the_call(expr: str, complaint: str) -> None:
    f = make_function(f"def f(x):\n    y = 1.0 * x\n    return np.sum(np.abs({expr}))\n",
                      {"np": np, "sfft": sfft, "integrate": integrate, "ndimage": ndimage,
                                                              "linalg": linalg})
    with pytest.raises(NoGradientRuleError, match=complaint) as info:
        s2sad.grad(f)(np.arange(4.0))
    assert (info.value.location.line, info.value.location.column) == (3, 26)


def test_an_unknown_mode_is_refused_as_the_gradient_runs() -> None:
    """The transpose is exact for the modes whose extension np.pad makes; a filter that takes
    other modes would be refused, not differentiated wrongly."""
    from s2sad.runtime import filter_grad

    with pytest.raises(s2sad.S2SADError, match="modes"):
        filter_grad(np.ones(4), np.ones(4), "uniform", (3, 0), "unknown", None)


@pytest.mark.parametrize("expr", ["linalg.qr(x)[0]", "linalg.qr(x, mode='r')[0]",
                                  "linalg.qr(x, mode='economic', pivoting=True)[0]"])
def test_qr_refuses_what_it_does_not_differentiate(expr: str) -> None:
    """scipy.linalg.qr's default mode='full' of a tall matrix (its extra columns are not
    unique), mode='r' and pivoting are refused as the gradient runs."""
    f = make_function(f"def f(x):\n    return np.sum({expr})\n", {"np": np, "linalg": linalg})
    with pytest.raises(s2sad.S2SADError, match="differentiates np.linalg.qr with mode 'reduced'"):
        s2sad.grad(f)(np.random.default_rng(0).standard_normal((5, 3)))
