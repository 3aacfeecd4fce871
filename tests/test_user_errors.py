"""Refusals and warnings point at the user's code, not at s2sad's insides (issue 18)."""
from __future__ import annotations

import sys
import warnings

import numpy as np

from s2sad import ZeroGradientWarning, grad, stop_gradient


def cut(x, y):
    return np.sum(stop_gradient(x) * y)


def test_zero_gradient_warning_names_the_users_call():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        grad(cut)(np.ones(2), np.ones(2))
    [w] = [w for w in caught if issubclass(w.category, ZeroGradientWarning)]
    assert (w.filename, w.lineno) == (__file__, line)

