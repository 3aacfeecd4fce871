"""s2sad: source-to-source automatic differentiation for Python and NumPy.

    >>> import numpy as np
    >>> from s2sad import grad, stop_gradient
    >>> def loss(x):
    ...     return np.sum(np.tanh(x) ** 2)
    >>> dloss = grad(loss)   # a generated Python function; see adjoint_source(loss)
"""
from . import rules as _rules  # registers the built-in rules
from .api import (Differentiable, adjoint_source, clear_cache, differentiate, grad, hessian, hvp, jacobian, jvp,
                  jvp_source, value_and_grad, vjp)
from .check import check_grad
from .custom import defvjp, nondifferentiable
from .explain import explain
from .errors import (
    Location,
    HasAuxError,
    JitError,
    JitWarning,
    NoGradientRuleError,
    NonDifferentiableInputError,
    NonScalarOutputError,
    RecursionDepthError,
    RuleError,
    S2SADError,
    SourceError,
    UnsupportedSyntaxError,
    WrtError,
    ZeroGradientWarning,
)
from .runtime import stop_gradient

__version__ = "0.1.0"

__all__ = [
    "grad",
    "value_and_grad",
    "differentiate",
    "Differentiable",
    "adjoint_source",
    "jvp",
    "jvp_source",
    "vjp",
    "hvp",
    "jacobian",
    "hessian",
    "check_grad",
    "clear_cache",
    "defvjp",
    "nondifferentiable",
    "explain",
    "stop_gradient",
    "S2SADError",
    "SourceError",
    "UnsupportedSyntaxError",
    "NoGradientRuleError",
    "WrtError",
    "NonScalarOutputError",
    "RecursionDepthError",
    "HasAuxError",
    "NonDifferentiableInputError",
    "RuleError",
    "ZeroGradientWarning",
    "JitError",
    "JitWarning",
    "Location",
]
