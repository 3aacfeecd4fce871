"""The extension API: s2sad.defvjp and s2sad.nondifferentiable."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import adjoint_source, check_grad, grad, jvp

from gradcheck import numerical_grad


def softplus(x):
    return np.log1p(np.exp(x))


def scaled_sin(x, k=2.0):
    return np.sin(k * x)


def quantize(x):
    return np.round(x * 4.0) / 4.0


s2sad.defvjp(softplus, "g * (1 - np.exp(-ans))", jvp={"x": "t * (1 - np.exp(-ans))"})
s2sad.defvjp(scaled_sin, lambda g, ans, x, k: g * k * np.cos(k * x), None)
s2sad.nondifferentiable(quantize)


def uses_softplus(x):
    return np.sum(softplus(x) * x)


def uses_scaled_sin(x):
    return np.sum(scaled_sin(x, 3.0))


def uses_quantize(x):
    return np.sum(x * quantize(x))


def test_template_rule_is_used_instead_of_the_source():
    x = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(grad(uses_softplus)(x), numerical_grad(uses_softplus, (x,), 0),
                               rtol=1e-6)
    code = adjoint_source(uses_softplus)
    assert "np.exp(-softplus_x)" in code and "vjp_softplus" not in code
    _, d = jvp(uses_softplus)(x, np.ones(3))
    assert d == pytest.approx(np.sum(numerical_grad(uses_softplus, (x,), 0)))


def test_function_rule_is_called_from_generated_code():
    x = np.array([0.1, 0.7])
    check_grad(uses_scaled_sin, x)
    assert "scaled_sin_vjp_x(" in adjoint_source(uses_scaled_sin)


def test_nondifferentiable_declaration():
    x = np.array([0.3, 1.1])
    np.testing.assert_allclose(grad(uses_quantize)(x), quantize(x))


def test_bad_declarations():
    with pytest.raises(s2sad.RuleError, match="no parameter 'y'"):
        s2sad.defvjp(softplus, y="g")
    with pytest.raises(s2sad.RuleError, match="unknown name"):
        s2sad.defvjp(lambda z: z, "g * mystery(z)")
