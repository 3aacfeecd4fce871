"""The rules of s2sad/rules/scipy_rules.py, as a table run like tests/test_rules.py's (float64
and float32 against finite differences, forward against reverse mode, second order), and
how SciPy's rules are loaded: not by ``import s2sad``, but once SciPy is imported.
"""
from __future__ import annotations

import math
import operator
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
from scipy import integrate, linalg, signal, special, stats  # noqa: E402
from scipy.spatial import distance  # noqa: E402

import s2sad  # noqa: E402
import test_rules  # noqa: E402
from s2sad.errors import NoGradientRuleError  # noqa: E402
from s2sad.rules import REGISTRY  # noqa: E402
from test_rules import F, Row  # noqa: E402
from test_rules_numpy_more import table_tests  # noqa: E402

from gradcheck import make_function  # noqa: E402

test_rules.NAMESPACE.update(special=special, stats=stats, linalg=linalg, signal=signal, integrate=integrate,
                            distance=distance)
test_rules.DOMAINS["prob"] = lambda rng, shape: rng.uniform(0.15, 0.85, shape)
test_rules.NAMESPACE["LU"] = linalg.lu_factor(np.array([[2.0, 0.5, 0.3], [1.0, 1.5, 0.2], [0.3, -0.4, 1.0]]))
test_rules.DOMAINS["negative"] = lambda rng, shape: rng.uniform(-0.6, -0.2, shape)

UNARY = [  # (function, domain): each on an array and a float
    (special.expit, "real"), (special.logit, "prob"), (special.log_expit, "real"), (special.erf, "real"),
    (special.erfc, "real"), (special.erfinv, "unit"), (special.erfcinv, "positive"),
    (special.gamma, "positive"), (special.gammaln, "positive"), (special.digamma, "positive"),
    (special.entr, "positive"), (special.i0, "real"), (special.i1, "real"), (special.i0e, "nonzero"),
    (special.i1e, "nonzero"), (special.j0, "real"), (special.j1, "real"), (special.y0, "positive"),
    (special.y1, "positive"), (special.ndtr, "real"), (special.log_ndtr, "real"), (special.ndtri, "prob"),
    (special.rgamma, "positive"), (special.loggamma, "positive"), (special.expm1, "real"),
    (special.log1p, "positive"), (special.k0, "positive"), (special.k1, "positive"),
    (special.erfcx, "real"), (special.dawsn, "real"), (special.cbrt, "positive"),
    *([(special.softplus, "real")] if hasattr(special, "softplus") else []),
]
BINARY = [  # (expression, function, domains)
    ("special.polygamma(1, x)", special.polygamma, ("positive",)),
    ("special.polygamma(np.array([0, 1, 2, 3]), x)", special.polygamma, ("positive",)),
    ("special.iv(1.5, x)", special.iv, ("positive",)),
    ("special.ive(2, x)", special.ive, ("nonzero",)),
    ("special.jv(0.5, x)", special.jv, ("positive",)),
    ("special.yv(1, x)", special.yv, ("positive",)),
    ("special.beta(x, y)", special.beta, ("positive", "positive")),
    ("special.betaln(x, y)", special.betaln, ("positive", "positive")),
    ("special.xlogy(x, y)", special.xlogy, ("real", "positive")),
    ("special.xlog1py(x, y)", special.xlog1py, ("real", "positive")),
    ("special.rel_entr(x, y)", special.rel_entr, ("positive", "positive")),
    ("special.kl_div(x, y)", special.kl_div, ("positive", "positive")),
    ("special.huber(1.0, x)", special.huber, ("offgrid",)),
    ("special.huber(x + 1.0, y)", special.huber, ("positive", "offgrid")),
    ("special.pseudo_huber(x + 0.5, y)", special.pseudo_huber, ("positive", "real")),
    ("special.gammainc(2.5, x)", special.gammainc, ("positive",)),
    ("special.gammaincc(0.7, x)", special.gammaincc, ("positive",)),
]

SPECIAL = [
    *(Row(f"special.{fun.__name__}(x)", (shape,), (fun,), domain) for fun, domain in UNARY
      for shape in [(3, 4), F]),
    *(Row(expr, ((3, 4), (4,))[:len(domains)], (fun,), domains) for expr, fun, domains in BINARY),
    Row("special.beta(x, y)", (F, (3,)), (special.beta,), "positive"),
    Row("special.multigammaln(x, 3)", (F,), (special.multigammaln,), "above1"),
    Row("math.lgamma(x) + math.gamma(x)", (F,), (math.lgamma, math.gamma), "positive"),
    Row("special.multigammaln(x, 2)", ((3,),), (special.multigammaln,), "above1"),
    Row("special.softmax(x)", ((3, 4),), (special.softmax,)),
    Row("special.softmax(x, axis=1)", ((3, 4),), (special.softmax,)),
    Row("special.log_softmax(x)", ((4,),), (special.log_softmax,)),
    Row("special.log_softmax(x, axis=0)", ((3, 4),), (special.log_softmax,)),
    Row("special.logsumexp(x)", ((3, 4),), (special.logsumexp,)),
    Row("special.logsumexp(x, axis=1)", ((3, 4),), (special.logsumexp,)),
    Row("special.logsumexp(x, axis=0, keepdims=True)", ((3, 4),), (special.logsumexp,)),
    Row("special.logsumexp(x, b=y)", ((3, 4), (3, 4)), (special.logsumexp,), ("real", "positive")),
    Row("special.logsumexp(x, axis=-1, b=y)", ((3, 4), (4,)), (special.logsumexp,), ("real", "positive")),
    Row("special.logsumexp(x, axis=(0, 1), b=y, return_sign=True)[0]", ((3, 4), (4,)),
        (special.logsumexp,), ("real", "nonzero")),
    Row("lse * sign", ((3, 4), (3, 4)), (special.logsumexp,), ("real", "nonzero"),
        pre="lse, sign = special.logsumexp(x, axis=0, b=y, return_sign=True)"),
]

LOCATION_SCALE = [  # (name, its shape parameters with their domains, the domain of x)
    ("norm", [], "real"), ("logistic", [], "real"), ("laplace", [], "offgrid"), ("expon", [], "positive"),
    ("t", [("df", "above1")], "real"), ("gamma", [("a", "above1")], "positive"),
    ("beta", [("a", "above1"), ("b", "above1")], "prob"), ("cauchy", [], "real"),
    ("lognorm", [("s", "above1")], "positive"),
]


def location_scale_rows() -> list[Row]:
    """Each method of each family: in x and in its shape parameters (as y, broadcast), and in
    loc and scale (as x and y, with constant arguments elsewhere)."""
    rows = []
    for name, shapes, domain in LOCATION_SCALE:
        dist = getattr(stats, name)
        constants = {"df": "3.0", "a": "2.5", "b": "1.5", "s": "0.8"}
        for method in ("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"):
            fun = getattr(dist, method)
            shape_args = "".join(f", {constants[s]}" for s, _ in shapes)
            rows.append(Row(f"stats.{name}.{method}(x{shape_args}, loc=0.1, scale=y)", ((3, 4), (4,)),
                            (fun,), (domain, "positive")))
            # loc below the data, scale above their range: inside every family's support
            rows.append(Row(f"stats.{name}.{method}(np.array([0.15, 0.45]){shape_args}, x, y)",
                            ((2,), F), (fun,), ("negative", "above1")))
            if method == "logpdf":  # (the quantile function of the same family)
                ppf = getattr(dist, "ppf")
                rows.append(Row(f"stats.{name}.ppf(x{shape_args}, loc=0.1, scale=y)", ((3, 4), (4,)),
                                (ppf,), ("prob", "positive")))
                rows.append(Row(f"stats.{name}.ppf(np.array([0.15, 0.45]){shape_args}, x, y)",
                                ((2,), F), (ppf,), ("negative", "above1")))
            if method in ("logpdf", "pdf"):
                for s, sdomain in shapes:
                    args = "".join(f", {'y' if t == s else constants[t]}" for t, _ in shapes)
                    rows.append(Row(f"stats.{name}.{method}(x{args})", ((3, 4), (4,)), (fun,), (domain, sdomain)))
    return rows


STATS = [
    *location_scale_rows(),
    *(Row(f"stats.poisson.{m}(np.array([0, 1, 4]), x)", ((3,),), (getattr(stats.poisson, m),), "positive")
      for m in ("logpmf", "pmf")),
    *(Row(f"stats.binom.{m}(np.array([0, 2, 5]), 5, x)", ((3,),), (getattr(stats.binom, m),), "prob")
      for m in ("logpmf", "pmf")),
    *(Row(f"stats.bernoulli.{m}(np.array([0, 1, 1]), x)", ((3,),), (getattr(stats.bernoulli, m),), "prob")
      for m in ("logpmf", "pmf")),
    *(Row(f"stats.multivariate_normal.{m}(x, y, np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]]))",
          ((4, 3), (3,)), (getattr(stats.multivariate_normal, m),)) for m in ("logpdf", "pdf")),
    Row("stats.multivariate_normal.logpdf(x, y)", ((3,), (3,)), (stats.multivariate_normal.logpdf,)),
    Row("stats.multivariate_normal.logpdf(np.array([0.2, -0.5, 0.1]), np.zeros(3), x)", ((3, 3),),
        (stats.multivariate_normal.logpdf,), "spd"),
    Row("stats.multivariate_normal.pdf(np.array([[0.2, -0.5], [0.3, 0.1]]), None, x)", ((2, 2),),
        (stats.multivariate_normal.pdf,), "spd"),
    Row("stats.multivariate_normal.logpdf(x, np.zeros(3), cov=y)", ((2, 3), (3,)),
        (stats.multivariate_normal.logpdf,), ("real", "positive")),
    Row("stats.multivariate_normal.logpdf(x, np.ones(3), y)", ((3,), F), (stats.multivariate_normal.logpdf,),
        ("real", "positive")),
    Row("stats.multivariate_normal.logpdf(x, cov=y)", ((4,), F), (stats.multivariate_normal.logpdf,),
        ("real", "positive")),
    Row("stats.dirichlet.logpdf(x / np.sum(x), y)", ((3,), (3,)), (stats.dirichlet.logpdf,), "positive"),
]

LINALG = [
    Row("linalg.det(x)", ((3, 3),), (linalg.det,), "wellcond"),
    Row("linalg.inv(x)", ((3, 3),), (linalg.inv,), "wellcond"),
    Row("linalg.norm(x)", ((3, 4),), (linalg.norm,)),
    Row("linalg.norm(x, axis=1, keepdims=True)", ((3, 4),), (linalg.norm,)),
    Row("linalg.norm(x, 1)", ((4,),), (linalg.norm,), "offgrid"),
    Row("linalg.norm(x, 'nuc')", ((3, 4),), (linalg.norm,)),
    Row("linalg.pinv(x)", ((4, 3),), (linalg.pinv,), "wellcond"),
    Row("linalg.pinv(x, check_finite=False)", ((3, 3),), (linalg.pinv,), "wellcond"),
    Row("linalg.cholesky(x)", ((3, 3),), (linalg.cholesky,), "spd"),
    Row("linalg.cholesky(x, lower=True)", ((3, 3),), (linalg.cholesky,), "spd"),
    *(Row(f"linalg.solve_triangular(x, y{args})", ((3, 3), shape), (linalg.solve_triangular,), "wellcond")
      for args in ["", ", lower=True", ", trans=1", ", 'T', True", ", unit_diagonal=True",
                   ", trans='N', lower=True, unit_diagonal=True"] for shape in [(3,), (3, 2)]),
    Row("linalg.cho_solve((np.array([[2.0, 0.0, 0.0], [0.5, 1.5, 0.0], [0.3, 0.2, 1.0]]), True), x)",
        ((3, 2),), (linalg.cho_solve,)),
    Row("linalg.cho_solve((np.array([[2.0, 0.5, 0.3], [0.0, 1.5, 0.2], [0.0, 0.0, 1.0]]), False), x)",
        ((3,),), (linalg.cho_solve,)),
    Row("linalg.cho_factor(x)[0]", ((3, 3),), (linalg.cho_factor,), "spd"),
    Row("linalg.cho_factor(x, lower=True)[0]", ((3, 3),), (linalg.cho_factor,), "spd"),
    Row("linalg.cho_solve(linalg.cho_factor(x), y)", ((3, 3), (3, 2)), (linalg.cho_solve, linalg.cho_factor),
        ("spd", "real")),
    Row("linalg.cho_solve((np.tril(x) + 3.0 * np.eye(3), True), y)", ((3, 3), (3,)), (linalg.cho_solve,)),
    Row("linalg.cho_solve((np.triu(x) + 3.0 * np.eye(3), False), y)", ((3, 3), (3, 2)), (linalg.cho_solve,)),
    Row("linalg.expm(x)", ((3, 3),), (linalg.expm,), "small"),
    Row("linalg.expm(x)", ((2, 2, 2),), (linalg.expm,), "small"),
    Row("linalg.sqrtm(x)", ((3, 3),), (linalg.sqrtm,), "spd"),
    Row("linalg.svd(x)[1]", ((3, 4),), (linalg.svd, operator.getitem)),
    Row("linalg.svd(x, full_matrices=False)[0] * linalg.svd(x, lapack_driver='gesvd')[2]", ((3, 3),),
        (linalg.svd, operator.getitem, operator.mul)),
    Row("linalg.svd(x, compute_uv=False, check_finite=False)", ((4, 3),), (linalg.svd,)),
    Row("linalg.logm(x)", ((3, 3),), (linalg.logm,), "spd"),
    Row("np.sum(linalg.logm(x) @ y)", ((3, 3), (3, 2)), (linalg.logm,), ("spd", "real")),
    Row("linalg.solve_sylvester(x + 3.0 * np.eye(3), y, np.ones((3, 2)))", ((3, 3), (2, 2)),
        (linalg.solve_sylvester,), "wellcond"),
    Row("linalg.solve_sylvester(2.0 * np.eye(3), 3.0 * np.eye(2), x)", ((3, 2),), (linalg.solve_sylvester,)),
    *(Row("linalg.solve(x, y)", shapes, (linalg.solve,), ("wellcond", "real")) for shapes in [
        ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 2)), ((3, 3), (2, 3, 2))]),
    *(Row(f"linalg.solve(x, y{args})", ((3, 3), (3, 2)), (linalg.solve,), ("wellcond", "real")) for args in [
        ", assume_a='gen'", ", assume_a='sym'", ", True, assume_a='symmetric'", ", assume_a='her', lower=True",
        ", assume_a='diagonal'", ", assume_a='tridiagonal'", ", assume_a='banded'",
        ", assume_a='upper triangular'", ", assume_a='lower triangular', transposed=True",
        ", transposed=True", ", assume_a='sym', transposed=True", ", check_finite=False, overwrite_a=False"]),
    Row("linalg.solve(x, y, assume_a='pos')", ((3, 3), (3,)), (linalg.solve,), ("spd", "real")),
    Row("linalg.solve(x, y, assume_a='positive definite', lower=True)", ((2, 3, 3), (3, 2)), (linalg.solve,),
        ("spd", "real")),
    Row("linalg.eigh(x)[0]", ((3, 3),), (linalg.eigh, operator.getitem), "spd"),
    Row("linalg.eigh(x, lower=False)[1] ** 2", ((3, 3),), (linalg.eigh, operator.getitem, operator.pow), "spd"),
    Row("w[..., None, :] * v ** 2", ((2, 3, 3),), (linalg.eigh, operator.mul, operator.pow), "spd",
        pre="w, v = linalg.eigh(x, driver='evd')"),
    Row("linalg.eigh(x, eigvals_only=True)", ((3, 3),), (linalg.eigh,), "spd"),
    Row("linalg.eigh(x, lower=False, eigvals_only=True)", ((2, 3, 3),), (linalg.eigh,), "spd"),
    Row("linalg.eigvalsh(x)", ((3, 3),), (linalg.eigvalsh,), "spd"),
    Row("linalg.eigvalsh(x, lower=False, check_finite=False)", ((2, 3, 3),), (linalg.eigvalsh,), "spd"),
    Row("linalg.solve_banded((1, 1), x + np.array([[0.0], [5.0], [0.0]]), y)", ((3, 5), (5,)),
        (linalg.solve_banded,)),
    Row("linalg.solve_banded((0, 2), x + np.array([[0.0], [0.0], [5.0]]), y)", ((3, 4), (4, 2)),
        (linalg.solve_banded,)),
    Row("linalg.solve_banded((2, 0), x + np.array([[5.0], [0.0], [0.0]]), y, check_finite=False)",
        ((3, 4), (4,)), (linalg.solve_banded,)),
    Row("linalg.lu_solve(LU, x)", ((3, 2),), (linalg.lu_solve,)),
    Row("linalg.lu_solve(LU, x, trans=1)", ((3,),), (linalg.lu_solve,)),
    Row("linalg.lu_solve(LU, x, 2)", ((3, 2),), (linalg.lu_solve,)),
]

SIGNAL = [
    *(Row(f"signal.{name}(x, y{mode})", shapes, (getattr(signal, name),))
      for name in ("convolve", "correlate") for mode in ["", ", 'same'", ", mode='valid'"]
      for shapes in [((5,), (3,)), ((4, 5), (2, 3)), ((2, 3), (4, 5))]),
    Row("signal.convolve(x, y, 'same', method='fft')", ((4, 5), (3, 2)), (signal.convolve,)),
    *(Row(f"signal.{name}(x, y{mode})", shapes, (getattr(signal, name),))
      for name in ("fftconvolve", "oaconvolve") for mode in ["", ", 'same'", ", mode='valid'"]
      for shapes in [((6,), (3,)), ((4, 5), (2, 3))]),
]

INTEGRATE = [
    Row("integrate.trapezoid(x)", ((5,),), (integrate.trapezoid,)),
    Row("integrate.trapezoid(x, dx=y)", ((3, 4), F), (integrate.trapezoid,), ("real", "positive")),
    Row("integrate.trapezoid(x, y, axis=0)", ((3, 4), (3,)), (integrate.trapezoid,)),
    Row("integrate.trapezoid(y, x)", ((4,), (2, 4)), (integrate.trapezoid,)),
]

SPATIAL = [
    Row("distance.cdist(x, y)", ((4, 3), (5, 3)), (distance.cdist,)),
    Row("distance.cdist(x, y, 'sqeuclidean')", ((4, 3), (2, 3)), (distance.cdist,)),
    Row("np.exp(-distance.cdist(x, y, metric='euclidean'))", ((3, 2), (4, 2)), (distance.cdist, np.exp)),
    Row("distance.cdist(x, x + 1.0, metric='sqeuclidean') ** 2", ((3, 2),), (distance.cdist, operator.pow)),
    Row("distance.pdist(x)", ((5, 3),), (distance.pdist,)),
    Row("np.exp(-distance.pdist(x, 'sqeuclidean'))", ((4, 2),), (distance.pdist, np.exp)),
    Row("distance.squareform(distance.pdist(x, metric='euclidean')) @ y", ((4, 2), (4,)),
        (distance.squareform, distance.pdist)),
    Row("distance.squareform(x + x.T, checks=False) ** 2", ((4, 4),), (distance.squareform, operator.pow)),
    Row("distance.squareform(x, force='tomatrix') ** 2", ((6,),), (distance.squareform, operator.pow)),
]

ROWS: list[Row] = [*SPECIAL, *STATS, *LINALG, *SIGNAL, *INTEGRATE, *SPATIAL]


# --- the same checks as tests/test_rules.py's table, and second order -----------------------
globals().update(table_tests(ROWS, {
    "compute_uv=False": "singular values alone are differentiated once (refused the second time)"}))


def test_table_covers_every_scipy_rule() -> None:
    from s2sad.rules import scipy_rules
    from test_scipy15 import ROWS as MORE_ROWS  # (scipy_more_rules.py's)

    covered = {REGISTRY.key(fun) for row in [*ROWS, *MORE_ROWS] for fun in row.uses}
    missing = [REGISTRY.rules[key].name for key in scipy_rules.BUILTIN_RULES if key not in covered]
    assert not missing, f"SciPy rules that no row exercises: {missing}"


def test_importing_s2sad_does_not_import_scipy() -> None:
    code = "import sys, s2sad; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_scipy_rules_load_when_scipy_is_imported_after_s2sad(tmp_path: Any) -> None:
    script = tmp_path / "late_scipy.py"
    script.write_text("import s2sad, numpy as np\n"
                      "from scipy.special import expit\n"
                      "def f(x):\n    return np.sum(expit(x))\n"
                      "print(float(s2sad.grad(f)(np.zeros(2))[0]))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.stdout.strip() == "0.25", out.stderr


REFUSED = [  # (expression of x, x, what the error says, column of the call)
    ("stats.t.cdf(0.5, x)", 3.0, "shape parameters"),
    ("stats.poisson.logpmf(x, 2.0)", 2.0, "count"),
    ("special.jv(x, 1.5)", 1.0, "order"),
    ("linalg.inv(x * np.eye(2), assume_a='pos')", 2.0, "argument 'assume_a'"),
    ("linalg.eigh(x * np.eye(2), np.eye(2))[0]", 2.0, r"eigh\(\.\.\., b=\.\.\.\): .*standard eigenproblem"),
    ("linalg.eigh(x * np.eye(2), subset_by_index=[0, 0])", 2.0, "subset_by_index=.*standard eigenproblem"),
    ("linalg.eigvalsh(x * np.eye(2), b=np.eye(2))", 2.0, "standard eigenproblem"),
    ("linalg.lu_solve((x * np.eye(2), np.array([0, 1])), np.ones(2))", 2.0, "with respect to b only"),
    ("special.gammainc(x, 1.5)", 2.0, "with respect to x only"),
    ("linalg.lu_factor(x * np.eye(2))[0]", 2.0, "does not differentiate scipy.linalg.lu_factor"),
    ("linalg.cho_factor(x * np.eye(2), overwrite_a=True)[0]", 2.0, "leave overwrite_a=False"),
    ("linalg.solve(x * np.eye(2), np.ones(2), overwrite_a=True)", 2.0, "leave overwrite_a=False"),
    ("linalg.eigh(x * np.eye(2), overwrite_a=True)[0]", 2.0, "leave overwrite_a=False"),
    ("linalg.det(x * np.eye(2), True)", 2.0, "leave overwrite_a=False"),
    ("linalg.solve_triangular(np.eye(2), x * np.ones(2), overwrite_b=True)", 2.0, "leave overwrite_b=False"),
]


@pytest.mark.parametrize("expr, x, complaint", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_at_the_call(expr: str, x: Any, complaint: str) -> None:
    """An argument s2sad does not differentiate through is an error located at the call."""
    f = make_function(f"def f(x):\n    y = 1.0 * x\n    return np.sum({expr.replace('x', 'y', 1)})\n",
                      {"np": np, **test_rules.NAMESPACE})
    with pytest.raises(NoGradientRuleError, match=complaint) as info:
        s2sad.grad(f)(x)
    assert (info.value.location.line, info.value.location.column) == (3, 19)


def test_solve_refuses_complex_values_read_conjugated() -> None:
    """assume_a='her' and 'pos' read a complex a conjugated (not a holomorphic function of a)."""
    f = make_function("def f(x):\n    return np.sum(np.abs(linalg.solve(x, np.ones(2), assume_a='her')))\n",
                      {"np": np, "linalg": linalg})
    with pytest.raises(s2sad.S2SADError, match="complex values"):
        s2sad.grad(f)(np.array([[2.0, 0.5j], [-0.5j, 3.0]]))


def test_cdist_refuses_a_metric_it_does_not_differentiate_as_it_runs() -> None:
    f = make_function("def f(x):\n    return np.sum(distance.cdist(x, 2.0 * x, 'cityblock'))\n",
                      {"np": np, "distance": distance})
    with pytest.raises(s2sad.S2SADError, match="not 'cityblock'; write the distance with NumPy") as info:
        s2sad.grad(f)(np.ones((2, 3)))
    assert info.value.location.line == 2
