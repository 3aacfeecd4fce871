"""Second order through every registered rule: the generated gradient code is differentiated
again (forward over reverse) through the declared rules of the helpers it calls.

The rows are those of ``test_rules.py``: for each rule, the first rows that apply it.  For each
input of a row, ``hvp`` along a random direction must match central finite differences of
the gradient along it, and for small inputs ``hessian`` must match them column by column.
Piecewise-constant and piecewise-linear rows pass too: their domains keep away from kinks,
where the second derivative is zero.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

import s2sad
from s2sad import runtime
from s2sad.errors import InternalRuleError, S2SADError
from s2sad.rules import REGISTRY

from gradcheck import make_function
from test_rules import ROWS, Row, build, params, runs_here

ROWS_PER_RULE = 2
#: Rows whose second derivative s2sad does not compute, and why.
XFAIL: dict[str, str] = {}


def _rows() -> list[Row]:
    """For each rule, the first ``ROWS_PER_RULE`` rows that apply it."""
    chosen: dict[str, Row] = {}
    seen: dict[int, int] = {}
    for row in ROWS:
        if row.xfail or not runs_here(row):
            continue
        keys = [id(fun) for fun in row.uses]
        if any(seen.get(k, 0) < ROWS_PER_RULE for k in keys):
            chosen[row.id] = row._replace(xfail=XFAIL.get(row.id))
            for k in keys:
                seen[k] = seen.get(k, 0) + 1
    return list(chosen.values())


ROWS2 = _rows()


def _direction(rng: np.random.Generator, arg: Any) -> Any:
    return float(rng.standard_normal()) if isinstance(arg, float) else rng.standard_normal(np.shape(arg))


def _moved(args: list[Any], i: int, step: Any) -> list[Any]:
    out = list(args)
    out[i] = args[i] + step
    return out


def _fd_hvp(f: Any, args: list[Any], i: int, v: Any, eps: float = 1e-5) -> Any:
    gradient = s2sad.grad(f, i)
    return (np.asarray(gradient(*_moved(args, i, eps * v))) - np.asarray(gradient(*_moved(args, i, -eps * v)))) / (2 * eps)


def _close(got: Any, want: Any, where: str) -> None:
    scale = max(1.0, float(np.max(np.abs(want))) if np.size(want) else 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale, err_msg=where)


@pytest.mark.filterwarnings("ignore::s2sad.ZeroGradientWarning")  # a linear row: zero Hessian
@pytest.mark.parametrize("row", params(ROWS2))
def test_hvp_matches_finite_differences_of_the_gradient(row: Row) -> None:
    f, args = build(row)
    rng = np.random.default_rng(zlib.crc32(b"hvp " + row.id.encode()))
    for i, arg in enumerate(args):
        v = _direction(rng, arg)
        got = s2sad.hvp(f, i)(*args, v)
        assert np.shape(got) == np.shape(arg), f"hvp along argument {i} has shape {np.shape(got)}"
        _close(got, _fd_hvp(f, args, i, v), f"hvp along argument {i}")
        if np.size(arg) <= 4:
            hessian = np.reshape(s2sad.hessian(f, i)(*args), (np.size(arg), np.size(arg)))
            for k in range(np.size(arg)):
                e = np.zeros(np.size(arg))
                e[k] = 1.0
                e = float(e[0]) if isinstance(arg, float) else e.reshape(np.shape(arg))
                _close(hessian[:, k], np.ravel(_fd_hvp(f, args, i, e)), f"hessian column {k} of argument {i}")
