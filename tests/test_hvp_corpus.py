"""Second order over the whole corpus (issue 17): for every corpus function and every array
or float argument, ``hvp`` along a random direction must match central finite differences
of s2sad's gradient along that direction.

Functions that call ``stop_gradient`` are left to tests/test_stop_gradient.py and
tests/test_forward.py: finite differences of their gradient would move the stopped values.
"""
from __future__ import annotations

import inspect
import zlib

import numpy as np
import pytest

import corpus
from test_forward import directional_fd
from s2sad import grad, hvp

CASES = [c for c in corpus.CASES if not c.xfail and "stop_gradient" not in inspect.getsource(c.fn)]


@pytest.mark.filterwarnings("ignore::s2sad.ZeroGradientWarning")
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hvp_matches_finite_differences_of_the_gradient(case):
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    args = case.inputs()
    for k in case.wrt(args):
        x = args[k]
        if not isinstance(x, (np.ndarray, float)):
            continue
        v = rng.normal(size=np.shape(x))
        v = float(v) if isinstance(x, float) else v
        got = hvp(case.fn, wrt=k)(*args, v)
        want = directional_fd(grad(case.fn, wrt=k), args, k, v, eps=1e-5)
        assert np.shape(got) == np.shape(x)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"hvp of {case.id} with respect to {case.params[k]}")
