"""Complex numbers and np.fft (s2sad/rules/complex_rules.py), under autograd's convention:
the gradient of a real L with respect to a complex z = x + iy is dL/dx - i dL/dy.

Real inputs through complex intermediates run as a table like tests/test_rules.py's
(finite differences in float64 and float32, forward mode against reverse mode, second
order).  Complex inputs are checked against finite differences along the real and the
imaginary directions, combined by the convention; forward mode against reverse mode by
the dot-product test ``jvp(v) == Re(sum(grad * v))``; hvp against finite differences of
the gradient.  A complex output is an error.
"""
from __future__ import annotations

import linecache
import operator
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import s2sad
from s2sad.errors import NonScalarOutputError, S2SADError
from test_rules import F, Row
from test_rules_numpy_more import table_tests

from gradcheck import make_function

fft = np.fft
ROWS: list[Row] = [
    # complex arithmetic and the functions that are not holomorphic
    Row("np.abs(x * (1 + 1j) / (y - 2j))", ((3, 4), (3, 4)), (np.abs, operator.mul, operator.truediv)),
    Row("np.real((x + 1j * y) ** 3)", ((3, 4), (4,)), (np.real, operator.pow, operator.add)),
    Row("np.imag((x + 1j) ** (y + 0.5j))", ((3, 4), (3, 4)), (np.imag, operator.pow), ("positive", "real")),
    Row("np.real(np.exp(1j * x) * np.log(y + 1j))", ((3, 4), (3, 4)), (np.real, np.exp, np.log)),
    Row("np.real(np.sum(np.exp(1j * x) * y, axis=0))", ((3, 4), (3, 4)), (np.real, np.sum)),
    Row("np.imag(np.conj(x + 1j * y) * (x - 2j))", ((3, 4), (3, 4)), (np.imag, np.conj)),
    Row("np.real(np.conjugate(x * (1 + 2j)) ** 2)", ((5,),), (np.real, np.conjugate)),
    Row("(x + 1j * y).conj().imag", ((3, 4), (3, 4)), (np.ndarray.conj, np.ndarray.imag)),
    Row("(x * (2 - 1j)).conjugate().real * y", ((3, 4), (4,)), (np.ndarray.conjugate, np.ndarray.real)),
    Row("np.angle(x + 1j * y)", ((3, 4), (3, 4)), (np.angle,)),
    Row("np.angle(x * (1 - 1j), deg=True)", ((5,),), (np.angle,)),
    Row("np.angle(x) * x", ((5,),), (np.angle,), "nonzero"),  # a real x: angle 0 or pi, no gradient
    Row("np.angle(x + 1j * y)", (F, F), (np.angle,)),
    Row("np.real(np.sign(x + 1j * y) * (2 - 1j))", ((3, 4), (3, 4)), (np.sign,)),  # z / |z|
    Row("np.imag(np.sign(x * (1 + 2j)))", ((5,),), (np.sign,), "nonzero"),
    Row("np.sign(x) * x", ((5,),), (np.sign,), "nonzero"),  # a real x: piecewise constant
    Row("np.abs(x + 1j * y)", ((3, 4), (3, 4)), (np.abs,)),
    Row("abs(x * (2 - 1j))", ((5,),), (abs,)),
    Row("abs(x + 1j * y)", (F, F), (abs,)),
    Row("np.real_if_close(x + 1e-20j)", ((5,),), (np.real_if_close,)),
    Row("np.imag(x.astype(complex) * (1 + 2j))", ((5,),), (np.ndarray.astype, np.imag)),
    Row("np.abs(np.sum(x, axis=0, dtype=complex) * (1 - 1j))", ((3, 4),), (np.sum, np.abs)),
    Row("np.real(np.real_if_close(x + 1j * y))", ((5,), (5,)), (np.real_if_close, np.real)),
    # np.fft: n, axis, s, axes and norm
    Row("np.abs(np.fft.fft(x))", ((8,),), (fft.fft, np.abs)),
    Row("np.real(np.fft.fft(x, 6))", ((8,),), (fft.fft, np.real)),
    Row("np.imag(np.fft.fft(x, n=10, norm='ortho'))", ((8,),), (fft.fft, np.imag)),
    Row("np.abs(np.fft.fft(x + 1j * y, axis=0, norm='forward'))", ((4, 3), (4, 3)), (fft.fft,)),
    Row("np.real(np.fft.ifft(x * (1 + 2j)))", ((6,),), (fft.ifft, np.real)),
    Row("np.abs(np.fft.ifft(x, 5, 0, 'ortho'))", ((4, 3),), (fft.ifft,)),
    Row("np.abs(np.fft.fft2(x))", ((3, 4),), (fft.fft2,)),
    Row("np.real(np.fft.ifft2(x, s=(4, 5)))", ((3, 4),), (fft.ifft2,)),
    Row("np.abs(np.fft.fft2(x, axes=(0, 2), norm='forward'))", ((2, 3, 4),), (fft.fft2,)),
    Row("np.abs(np.fft.fftn(x, axes=(0, 2)))", ((2, 3, 4),), (fft.fftn,)),
    Row("np.imag(np.fft.ifftn(x, s=(3, 2), axes=(1, 2), norm='ortho'))", ((2, 3, 4),), (fft.ifftn,)),
    Row("np.real(np.fft.ifftn(x + 1j * y))", ((2, 3), (2, 3)), (fft.ifftn,)),
    Row("np.abs(np.fft.rfft(x))", ((8,),), (fft.rfft,)),
    Row("np.real(np.fft.rfft(x, 7))", ((5,),), (fft.rfft,)),
    Row("np.imag(np.fft.rfft(x, axis=0, norm='ortho'))", ((6, 3),), (fft.rfft,)),
    Row("np.fft.irfft(x * (1 - 0.5j))", ((5,),), (fft.irfft,)),
    Row("np.fft.irfft(np.fft.rfft(x) * y, 9)", ((9,), (5,)), (fft.irfft, fft.rfft)),
    Row("np.fft.irfft(x + 1j * y, norm='forward')", ((5,), (5,)), (fft.irfft,)),
    Row("np.fft.irfft(x + 1j * y, 7, axis=0, norm='ortho')", ((5, 2), (5, 2)), (fft.irfft,)),
    Row("np.abs(np.fft.rfft2(x))", ((3, 4),), (fft.rfft2,)),
    Row("np.fft.irfft2(x + 1j * y)", ((3, 4), (3, 4)), (fft.irfft2,)),
    Row("np.fft.irfft2(x * 1j + y, s=(4, 5))", ((3, 3), (3, 3)), (fft.irfft2,)),
    Row("np.abs(np.fft.rfftn(x, axes=(0, 2), norm='ortho'))", ((2, 3, 4),), (fft.rfftn,)),
    Row("np.abs(np.fft.rfftn(x, s=(4, 6), axes=(0, 1)))", ((3, 5),), (fft.rfftn,)),
    Row("np.fft.irfftn(x + 1j * y, s=(3, 6), axes=(1, 2))", ((2, 3, 4), (2, 3, 4)), (fft.irfftn,)),
    Row("np.fft.irfftn(x + 1j * y, axes=(0,), norm='forward')", ((4, 3), (4, 3)), (fft.irfftn,)),
    Row("np.fft.hfft(x + 1j * y)", ((5,), (5,)), (fft.hfft,)),
    Row("np.fft.hfft(x * (1 + 1j), 7, norm='ortho')", ((4,),), (fft.hfft,)),
    Row("np.abs(np.fft.ihfft(x))", ((8,),), (fft.ihfft,)),
    Row("np.real(np.fft.ihfft(x, 6, norm='forward'))", ((5,),), (fft.ihfft,)),
    Row("np.fft.fftshift(x)", ((5,),), (fft.fftshift,)),
    Row("np.abs(np.fft.fftshift(np.fft.fft2(x), axes=1))", ((3, 4),), (fft.fftshift, fft.fft2)),
    Row("np.fft.ifftshift(x, axes=0)", ((3, 4),), (fft.ifftshift,)),
    # the common cases: a spectral loss, a filter, a power spectrum, a convolution by FFT
    Row("np.abs(np.fft.rfft(x) - np.fft.rfft(y)) ** 2", ((8,), (8,)), (fft.rfft, np.abs)),
    Row("np.real(np.fft.ifft(np.fft.fft(x) * np.exp(-1j * y)))", ((6,), (6,)), (fft.ifft, fft.fft)),
    Row("np.fft.irfft(np.fft.rfft(x, 8) * np.fft.rfft(y, 8), 8)", ((5,), (4,)), (fft.irfft, fft.rfft)),
]


# --- the same checks as tests/test_rules.py's table, and second order -----------------------
globals().update(table_tests(ROWS))


# --- complex inputs ---------------------------------------------------------------------

COMPLEX = [  # (expression of complex z and w, shapes of z and w)
    ("np.abs(z) ** 2", ((3, 4),)),
    ("np.real(z * w)", ((3, 4), (4,))),
    ("np.imag(z / w) + np.abs(z - w)", ((3,), (3,))),
    ("np.angle(z) * np.real(w)", ((4,), (4,))),
    ("np.real(np.exp(z)) + np.imag(np.log(w))", ((3,), (3,))),
    ("np.real(np.conj(z) * w)", ((2, 3), (2, 3))),
    ("z.real * z.imag + np.abs(w.conj())", ((3,), (3,))),
    ("np.abs(np.fft.fft(z, 6, norm='ortho'))", ((5,),)),
    ("np.real(np.fft.ifft2(z * w))", ((3, 4), (3, 4))),
    ("np.abs(np.fft.fftn(z, s=(3, 5), axes=(0, 1)))", ((2, 4),)),
    ("np.fft.irfft(z, 7)", ((5,),)),
    ("np.fft.irfftn(z, axes=(0, 1), norm='ortho')", ((3, 4),)),
    ("np.fft.hfft(z, 6, norm='forward')", ((4,),)),
    ("np.abs(np.fft.ihfft(np.real(z)))", ((6,),)),
    ("np.abs(np.fft.fftshift(z) * w)", ((5,), (5,))),
    ("np.real(np.sum(z * w) * np.conj(z[0]))", ((4,), (4,))),
    ("np.real_if_close(z)", ((3,),)),
    ("np.real(np.vdot(z, w))", ((2, 3), (6,))),
    ("np.imag(np.vdot(z, w * 1j))", ((4,), (4,))),
    # np.correlate conjugates its second input
    ("np.real(np.correlate(z, w, 'same'))", ((5,), (3,))),
    ("np.abs(np.correlate(z, w, 'full'))", ((3,), (4,))),
    ("np.imag(np.correlate(z, w))", ((2,), (4,))),
]
ROW_IDS = [f"{expr} [{', '.join('x'.join(map(str, s)) for s in shapes)}]" for expr, shapes in COMPLEX]


def _complex_case(expr: str, shapes: tuple) -> tuple[Any, list[np.ndarray]]:
    rng = np.random.default_rng(zlib.crc32(expr.encode()))
    args = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
    names = ", ".join("zw"[:len(args)])
    value = make_function(f"def value({names}):\n    return {expr}\n", {"np": np})
    weights = rng.standard_normal(np.shape(value(*args)))
    f = make_function(f"def f({names}):\n    return np.sum(np.real({expr}) * W)\n", {"np": np, "W": weights})
    return f, args


def convention_grad(f: Any, args: list[Any], i: int, eps: float = 1e-6) -> np.ndarray:
    """dL/dx - i dL/dy for argument ``i``, by central finite differences."""
    z = args[i]
    out = np.zeros(z.shape, dtype=complex)
    for k in np.ndindex(*z.shape):
        for step, weight in ((1.0, 1.0), (1j, -1j)):
            plus, minus = list(args), list(args)
            plus[i], minus[i] = z.copy(), z.copy()
            plus[i][k] += eps * step
            minus[i][k] -= eps * step
            out[k] += weight * (f(*plus) - f(*minus)) / (2 * eps)
    return out


@pytest.mark.parametrize("expr, shapes", COMPLEX, ids=ROW_IDS)
def test_complex_input_gradient(expr: str, shapes: tuple) -> None:
    f, args = _complex_case(expr, shapes)
    grads = s2sad.grad(f, tuple(range(len(args))))(*args)
    for i, (arg, g) in enumerate(zip(args, grads)):
        assert np.shape(g) == np.shape(arg) and g.dtype == arg.dtype, f"argument {i}: {g.dtype}"
        np.testing.assert_allclose(g, convention_grad(f, args, i), rtol=1e-5, atol=1e-7,
                                   err_msg=f"gradient for argument {i}")


@pytest.mark.parametrize("expr, shapes", COMPLEX, ids=ROW_IDS)
def test_complex_input_forward_mode(expr: str, shapes: tuple) -> None:
    """jvp along a complex v matches finite differences and equals Re(sum(grad * v))."""
    f, args = _complex_case(expr, shapes)
    rng = np.random.default_rng(zlib.crc32(b"jvp " + expr.encode()))
    for i, arg in enumerate(args):
        v = rng.standard_normal(arg.shape) + 1j * rng.standard_normal(arg.shape)
        value, slope = s2sad.jvp(f, i)(*args, v)
        plus, minus = list(args), list(args)
        plus[i], minus[i] = arg + 1e-6 * v, arg - 1e-6 * v
        np.testing.assert_allclose(slope, (f(*plus) - f(*minus)) / 2e-6, rtol=1e-5, atol=1e-7)
        g = s2sad.grad(f, i)(*args)
        np.testing.assert_allclose(slope, np.real(np.sum(g * v)), rtol=1e-9, atol=1e-11)


SECOND = ["np.abs(np.fft.fft(z, 6, norm='ortho'))", "np.fft.irfft(z, 7)", "np.real(np.fft.ifft2(z * w))",
          "np.abs(z) ** 2", "np.angle(z) * np.real(w)", "np.abs(np.fft.ihfft(np.real(z)))",
          "np.abs(np.correlate(z, w, 'full'))"]


@pytest.mark.parametrize("expr, shapes", [c for c in COMPLEX if c[0] in SECOND],
                         ids=[i for c, i in zip(COMPLEX, ROW_IDS) if c[0] in SECOND])
@pytest.mark.filterwarnings("ignore::s2sad.ZeroGradientWarning")
def test_complex_input_hvp(expr: str, shapes: tuple) -> None:
    """hvp along a complex v matches finite differences of the gradient along v."""
    f, args = _complex_case(expr, shapes)
    rng = np.random.default_rng(zlib.crc32(b"hvp " + expr.encode()))
    v = rng.standard_normal(shapes[0]) + 1j * rng.standard_normal(shapes[0])
    gradient = s2sad.grad(f, 0)
    plus, minus = list(args), list(args)
    plus[0], minus[0] = args[0] + 1e-5 * v, args[0] - 1e-5 * v
    expected = (gradient(*plus) - gradient(*minus)) / 2e-5
    np.testing.assert_allclose(s2sad.hvp(f, 0)(*args, v), expected, rtol=1e-4, atol=1e-6)


# --- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("body", ["return np.sum(np.fft.fft(x))", "return np.sum(x * 1j)",
                                  "y = np.fft.rfft(x)\n    return y[1]"])
def test_a_complex_output_is_an_error(body: str) -> None:
    f = make_function(f"def f(x):\n    {body}\n", {"np": np})
    with pytest.raises(NonScalarOutputError, match="real floating-point scalar"):
        s2sad.grad(f)(np.arange(4.0))


@pytest.mark.parametrize("body", ["np.sum(np.fft.fft(x))", "np.fft.rfft(x)[1] * 2.0", "np.sum(x) * 1j"])
def test_a_surely_complex_output_is_refused_at_the_return(body: str) -> None:
    f = make_function(f"def f(x):\n    y = x * 2.0\n    return {body}\n", {"np": np})
    with pytest.raises(NonScalarOutputError, match="this value is complex") as info:
        s2sad.grad(f)(np.arange(4.0))
    assert (info.value.location.line, info.value.location.column) == (3, 5)


@pytest.mark.parametrize("expr, name", [("np.var(x * 1j)", "np.var"), ("np.max(np.abs(x) * 1j)", "a maximum or minimum"),
                                        ("np.linalg.norm(x + 1j)", "np.linalg.norm"),
                                        ("np.sort(x * (1 + 1j))", "np.sort"), ("np.nanvar(x * 1j)", "np.nanvar"),
                                        ("np.nanstd(x + 1j)", "np.nanstd"),
                                        ("np.linalg.eigvalsh(np.outer(x, x) * 1j)", "np.linalg.eigvalsh")])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_rule_for_real_values_refuses_complex_ones(expr: str, name: str, mode: str) -> None:
    """A rule that would need conjugates it does not take is an error, not a silent zero."""
    f = make_function(f"def f(x):\n    return np.real(np.sum({expr}))\n", {"np": np})
    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(S2SADError, match=f"reaches {re.escape(name)}"):
        s2sad.grad(f)(x) if mode == "reverse" else s2sad.jvp(f)(x, np.ones(3))


@pytest.mark.parametrize("body", ["np.abs(np.sum(z))", "np.real(np.sum(z))", "np.sum(z).imag",
                                  "abs(z[0] * z[1]) + np.angle(np.mean(z))"])
def test_a_real_function_of_a_complex_sum_is_its_output(body: str) -> None:
    """A real output computed from complex reductions is seeded from its value (not refused
    as a reduction of complex values)."""
    f, args = _complex_case(body, ((3,),))
    g = make_function(f"def g(z):\n    return {body}\n", {"np": np})
    np.testing.assert_allclose(s2sad.grad(g)(args[0]), convention_grad(g, args, 0), rtol=1e-6, atol=1e-8)


def test_the_second_derivative_of_a_complex_product_is_refused() -> None:
    """np.prod's second derivative is a complex step, which complex values would spoil."""
    f = make_function("def f(z):\n    return np.abs(np.prod(z))\n", {"np": np})
    z = np.array([1.0 + 0.5j, -0.5 + 1j])
    with pytest.raises(S2SADError, match="complex values once, not twice"):
        s2sad.hvp(f)(z, z)


def test_complex_wrt_inputs_are_accepted_and_integers_refused() -> None:
    f = make_function("def f(z):\n    return np.abs(z) ** 2\n", {"np": np})
    np.testing.assert_allclose(s2sad.grad(f)(3.0 + 4.0j), 6.0 - 8.0j)  # dL/dx - i dL/dy = 2x - 2iy
    with pytest.raises(S2SADError, match="cannot differentiate with respect to 'z'"):
        s2sad.grad(f)(np.array([1, 2]))


def test_the_worked_example_in_the_docs() -> None:
    """The README's complex-number example runs and gives the numbers it states."""
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = text.split("### Complex numbers and np.fft", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    filename = "<README.md complex example>"  # registered, so that s2sad can read the functions' source
    linecache.cache[filename] = (len(block), None, block.splitlines(True), filename)
    exec(compile(block, filename, "exec"), namespace)
    np.testing.assert_allclose(namespace["g1"], [8.0, 16.0, 0.0, -8.0], atol=1e-12)
    np.testing.assert_allclose(namespace["g2"], 6.0 - 8.0j)
    np.testing.assert_allclose(namespace["g3"], 2.0 + 4.0j)
    for stated in ("[8, 16, 0, -8]", "6 - 8j", "2 + 4j"):
        assert stated in block


@pytest.mark.parametrize("which", ["jacobian", "hessian"])
def test_dense_derivatives_of_a_complex_input_are_refused(which: str) -> None:
    """Real unit vectors would miss the imaginary directions: refused, not half a matrix."""
    f = make_function("def f(z):\n    return np.sum(np.abs(z) ** 2)\n", {"np": np})
    with pytest.raises(S2SADError, match="real inputs"):
        getattr(s2sad, which)(f)(np.array([1.0 + 2.0j, 0.5j]))
