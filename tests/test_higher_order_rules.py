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
from pathlib import Path
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


@pytest.mark.filterwarnings("ignore::s2sad.ZeroGradientWarning")
@pytest.mark.parametrize("row", params(ROWS2))
def test_reverse_over_reverse_matches_finite_differences(row: Row) -> None:
    """The gradient of ``<grad f(x), u>`` is the Hessian times u: reverse mode over the
    generated gradient code, through the adjoints of the helpers it calls."""
    f, args = build(row)
    rng = np.random.default_rng(zlib.crc32(b"rr " + row.id.encode()))
    u = _direction(rng, args[0])
    names = ", ".join("xy"[:len(args)])
    outer = make_function(f"def outer({names}):\n    return np.sum(gradient({names}) * u)\n",
                          {"np": np, "gradient": s2sad.grad(f, 0), "u": u})
    got = s2sad.grad(outer, 0)(*args)
    _close(got, _fd_hvp(f, args, 0, u), "reverse over reverse")


# --- the helpers of generated code ---------------------------------------------------------


def test_every_runtime_helper_has_a_rule_or_is_declared_nondifferentiable() -> None:
    """Generated code calls only the helpers of s2sad.runtime's ``__all__``: each one is a
    primitive, never read as source when generated code is differentiated (``call_object``,
    read as the call it spells, is declared refused)."""
    missing = [name for name in runtime.__all__
               if REGISTRY.rule(getattr(runtime, name)) is None
               and not REGISTRY.is_nondifferentiable(getattr(runtime, name))
               and REGISTRY.refusal(getattr(runtime, name)) is None]
    assert not missing, f"runtime helpers with neither a rule nor a nondifferentiable declaration: {missing}"


def test_every_helper_rule_has_an_adjoint_and_a_tangent_for_each_parameter() -> None:
    """A parameter with a tangent but no adjoint would be left out of reverse mode (and of
    activity analysis, so of forward mode too): each differentiable parameter has both."""
    problems = []
    for name in runtime.__all__:
        rule = REGISTRY.rule(getattr(runtime, name))
        if rule is None:
            continue
        no_adjoint = rule.differentiable() - set(rule.vjps)
        no_tangent = set() if rule.elementwise or rule.linear else rule.differentiable() - set(rule.jvps)
        if no_adjoint or no_tangent:
            problems.append(f"{name}: no adjoint for {sorted(no_adjoint)}, no tangent for {sorted(no_tangent)}")
    assert not problems, problems


def _fresh(body: str, **names: Any) -> Any:
    return make_function(f"def f(x):\n    {body}\n", {"np": np, **names})


def test_a_helper_without_a_rule_is_an_internal_error_not_a_transformation(monkeypatch: Any) -> None:
    """With a helper's rule gone, differentiating code that calls it fails with an internal
    error naming the helper, located in the generated code, never inside s2sad's files."""
    monkeypatch.delitem(REGISTRY.rules, id(runtime.diagonal_grad))
    f = _fresh("return np.sum(np.diag(x) ** 3)")
    x = np.array([[1.0, 0.3], [0.2, 2.0]])
    with pytest.raises(InternalRuleError, match="diagonal_grad") as info:
        s2sad.hessian(f)(x)
    assert info.value.location is not None
    assert "s2sad" not in Path(info.value.location.filename).parts
    assert Path(s2sad.__file__).parent.as_posix() not in str(info.value)


def test_a_third_derivative_through_a_nonlinear_helper_is_refused() -> None:
    f = _fresh("return np.prod(np.stack([x, x * x, 3.0]))")
    assert s2sad.grad(s2sad.grad(f))(0.7) == pytest.approx(18 * 0.7)
    with pytest.raises(S2SADError, match="not a third time"):
        s2sad.grad(s2sad.grad(s2sad.grad(f)))(0.7)


# --- regressions: second order that differentiated the helpers' source ----------------------

A = np.array([[1.0, 0.3], [0.2, 2.0]])
S = np.array([[2.0, 0.3], [0.3, 1.5]])
X4 = np.array([0.3, 0.5, 0.7, 0.2])
X3 = np.array([0.3, -0.5, 0.7])
SECOND_ORDER = [  # (body of f(x), x): the Hessian was zero, or failed inside s2sad/runtime
    ("return np.trace(x @ x)", A),
    ("return np.sum(np.diag(x) ** 3)", A),
    ("return np.trace(np.linalg.inv(x))", A),
    ("return np.sum(np.log(np.diag(np.linalg.cholesky(x))))", S),
    ("return np.prod(x)", X4),
    ("return np.sum(np.sort(x) ** 3 * np.arange(4))", X4),
    ("return np.linalg.norm(x) ** 3", X4),
    ("return np.sum(np.linalg.svd(x.reshape(2, 2))[1] ** 3)", X4),
    ("return np.sum(np.take(x, [0, 2, 2]) ** 3)", X4),
    ("return np.sum(np.repeat(x, 2) ** 3)", X4),
    ("return np.sum(np.tile(x, 2) ** 3)", X4),
    ("return np.sum(np.pad(x, 1) ** 3)", X4),
    ("return np.einsum('i,i->', x, x ** 2)", X4),
    ("return np.sum(np.cumprod(x) ** 2)", X4),
    ("return np.var(x) ** 2", X4),
    ("return np.sum(np.linalg.eigh(x.reshape(2, 2) + x.reshape(2, 2).T)[0] ** 3)", X4),
    ("return sum([x[0] ** 2, x[1] * x[2]]) ** 2", X3),
    # a list built by concatenation or append, then stacked, converted or summed
    ("rows = []\n    for i in range(3):\n        rows = rows + [x[i] ** 2]\n"
     "    return np.sum(np.stack(rows) ** 2)", X3),
    ("rows = []\n    for i in range(3):\n        rows.append(x[i] ** 2)\n"
     "    return np.sum(np.array(rows) ** 2) + sum(r * r for r in rows)", X3),
    ("t = (x[0],) + (x[1], x[2] * 2)\n    return t[0] * t[2] + t[1] ** 3", X3),
    ("z = np.zeros(2)\n    z[0] = x[0] ** 2\n    return np.sum(z ** 2)", np.array([0.5, 0.3])),
]


def _fd_hessian(f: Any, x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    gradient = s2sad.grad(f)
    columns = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        columns.append(np.ravel(gradient(x + e) - gradient(x - e)) / (2 * eps))
    return np.stack(columns, axis=-1)


@pytest.mark.parametrize("body, x", SECOND_ORDER, ids=[b.split("\n")[-1].strip() for b, _ in SECOND_ORDER])
def test_hessian_through_helpers(body: str, x: np.ndarray) -> None:
    f = _fresh(body)
    got = np.reshape(s2sad.hessian(f)(x), (x.size, x.size))
    _close(got, _fd_hessian(f, x), "hessian")


def test_hvp_after_an_element_write() -> None:
    f = _fresh("z = np.zeros(2)\n    z[0] = x[0] ** 2\n    return np.sum(z ** 2)")
    np.testing.assert_allclose(s2sad.hvp(f)(np.array([0.5, 0.3]), np.array([1.0, 0.0])), [3.0, 0.0])


EIGH = [  # hvp through eigh: eigenvalues of a batch, with the eigenvectors left out (a matmul error)
    "w, v = np.linalg.eigh(x)\n    return np.sum(w ** 3)",
    "w, v = np.linalg.eigh(x)\n    return np.sum(v[..., 0] ** 4) + np.sum(w)",
    "q, r = np.linalg.qr(x[0])\n    return np.sum(r ** 3)",
    "u, s, vt = np.linalg.svd(x[0])\n    return np.sum(s ** 3)",
]


@pytest.mark.parametrize("body", EIGH)
@pytest.mark.parametrize("shape", [(3, 2, 2), (2, 3, 3)])
def test_hvp_through_decompositions_of_a_batch(body: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    x = x + np.swapaxes(x, -1, -2) + 4 * np.eye(shape[-1])
    v = rng.standard_normal(shape)
    f = _fresh(body)
    _close(s2sad.hvp(f)(x, v), _fd_hvp(f, [x], 0, v), "hvp")


def test_list_concatenation_is_differentiated_as_concatenation() -> None:
    """``rows + [v]`` concatenates lists (first order too), and ``x + [1.0, 2.0, 3.0]`` with an
    array x still adds elementwise."""
    concat = _fresh("rows = []\n    for i in range(3):\n        rows = rows + [x[i] ** 2]\n"
                    "    return np.sum(np.stack(rows) ** 2)")
    np.testing.assert_allclose(s2sad.grad(concat)(X3), 4 * X3 ** 3)
    added = _fresh("return np.sum((x + [1.0, 2.0, 3.0]) ** 2)")
    np.testing.assert_allclose(s2sad.grad(added)(X3), 2 * (X3 + [1.0, 2.0, 3.0]))
    np.testing.assert_allclose(s2sad.hessian(added)(X3), 2 * np.eye(3))


def test_hvp_of_a_gradient_that_is_zero() -> None:
    """The gradient code of a function whose output does not depend on x seeds with a bare
    ``seed(value)`` statement, which differentiating it again must accept."""
    f = make_function("def f(x):\n    return np.sum(stop_gradient(x) ** 2)\n",
                      {"np": np, "stop_gradient": s2sad.stop_gradient})
    with pytest.warns(s2sad.ZeroGradientWarning):
        got = s2sad.hvp(f)(X3, X3)
    np.testing.assert_array_equal(got, np.zeros(3))


def test_the_zero_hessian_of_a_linear_function_is_explained_without_generated_lines() -> None:
    # the warning listed lines of the gradient's generated code (check_wrt, seed(value), ...)
    f = make_function("def f(x):\n    return np.sum(3.0 * x)\n", {"np": np})
    with pytest.warns(s2sad.ZeroGradientWarning) as caught:
        np.testing.assert_array_equal(s2sad.hessian(f)(X3), np.zeros((3, 3)))
    message = str(caught[0].message)
    assert "at most linear in 'x'" in message and "line " not in message and "check_wrt" not in message
