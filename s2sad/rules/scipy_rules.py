"""Gradient rules for SciPy: special functions, distributions, linear algebra, convolution.

Imported by the registry the first time it looks up a rule after SciPy has been
imported (``import s2sad`` does not import SciPy).  The methods of the
``scipy.stats`` distributions are bound methods of singleton objects
(``scipy.stats.norm.logpdf``), keyed by object and method.

Conventions: a parameter with no derivative s2sad computes (the shape parameters of
``cdf``/``sf``, discrete arguments, the order of Bessel functions) is refused, at the
user's call, when a value that carries a gradient reaches it.  ``cholesky``,
``solve_triangular`` and ``cho_solve`` read one triangle: the gradient lies on it (``cho_factor``'s
other triangle is its input's, unchanged);
``multivariate_normal`` reads the lower triangle of its covariance.  ``solve`` reads what
its ``assume_a`` says (a triangle, a band, the diagonal, all of a): the gradient lies there;
``eigh`` and ``eigvalsh`` are the standard problem's (``b=`` and subsets are refused);
``lu_solve`` is differentiated in ``b``, its factors are constants (``lu_factor`` is refused); an
``overwrite_a=True`` or ``overwrite_b=True`` is refused (gradients read those inputs).
"""
from __future__ import annotations

import math

from scipy import integrate, linalg, signal, special, stats
from scipy.spatial import distance

from .numpy_more_rules import trapezoid_rule
from .registry import REGISTRY, USER_OBJECTS
from .shapes import numpy_elementwise

_BEFORE = frozenset(REGISTRY.rules)



def defvjp(fun, params: str, **kwargs) -> None:
    """``REGISTRY.defvjp``, naming ``fun`` by its public name (``scipy.special.expit``)."""
    if "name" not in kwargs:
        kwargs["name"] = next(f"scipy.{module.__name__.split('.')[-1]}.{name}"
                              for module in (special, linalg, signal) for name, value in vars(module).items()
                              if value is fun and not name.startswith("_"))
    REGISTRY.defvjp(fun, params, **kwargs)


# the SciPy functions that rule templates call, by the names the templates use
USER_OBJECTS.update({name: getattr(special, name) for name in (
    "digamma", "polygamma", "iv", "ive", "jv", "yv", "i0", "i1", "i0e", "i1e", "j0", "j1", "y0", "y1", "k0", "k1",
    "gammaln")})
USER_OBJECTS.update(expm=linalg.expm, logm=linalg.logm, solve_banded=linalg.solve_banded, solve_triangular=linalg.solve_triangular, squareform=distance.squareform,
                    solve_sylvester=linalg.solve_sylvester, cho_solve=linalg.cho_solve, lu_solve=linalg.lu_solve)


def unary(fun, vjp: str) -> None:
    """An elementwise function of ``x``; ``vjp`` is linear and elementwise in ``g``.  Its result
    is as a ufunc's (SciPy's special functions are ufuncs)."""
    defvjp(fun, "x", elementwise=True, shape=numpy_elementwise(fun), x=vjp)


def binary(fun, params: str, refuse: dict[str, str] | None = None, **vjps: str) -> None:
    """A broadcasting elementwise function of two arguments."""
    defvjp(fun, params, broadcast=tuple(p.strip() for p in params.split(",")), elementwise=True,
           refuse=refuse, shape=numpy_elementwise(fun), **vjps)


_ORDER = {"v": "s2sad does not differentiate with respect to the order; pass a constant"}

# --- scipy.special ---------------------------------------------------------------------
unary(special.expit, "g * ans * (1.0 - ans)")
unary(special.logit, "g / (x * (1.0 - x))")
unary(special.log_expit, "-g * np.expm1(ans)")
unary(special.erf, "g * (2.0 / np.pi ** 0.5) * np.exp(-x ** 2)")
unary(special.erfc, "-g * (2.0 / np.pi ** 0.5) * np.exp(-x ** 2)")
unary(special.erfinv, "g * (np.pi ** 0.5 / 2.0) * np.exp(ans ** 2)")
unary(special.erfcinv, "-g * (np.pi ** 0.5 / 2.0) * np.exp(ans ** 2)")
unary(special.gamma, "g * ans * digamma(x)")
unary(special.gammaln, "g * digamma(x)")
unary(special.digamma, "real_input(g, x, 'scipy.special.digamma') * polygamma(1, x)")  # (polygamma: real x)
unary(special.entr, "-g * (np.log(x) + 1.0)")
unary(special.ndtr, "g * np.exp(-0.5 * x ** 2) / (2.0 * np.pi) ** 0.5")
unary(special.log_ndtr, "g * np.exp(-0.5 * x ** 2 - ans) / (2.0 * np.pi) ** 0.5")
unary(special.ndtri, "g * (2.0 * np.pi) ** 0.5 * np.exp(0.5 * ans ** 2)")
unary(special.rgamma, "-g * ans * digamma(x)")
unary(special.loggamma, "g * digamma(x)")  # (real x > 0: gammaln)
# the math module's gamma functions, whose derivatives are SciPy's digamma (so declared with SciPy's)
for math_gamma, vjp in ((math.gamma, "g * ans * digamma(x)"), (math.lgamma, "g * digamma(x)")):
    REGISTRY.defvjp(math_gamma, "x", name=f"math.{math_gamma.__name__}", elementwise=True,
                    shape=numpy_elementwise(math_gamma), x=vjp)
unary(special.expm1, "g * (ans + 1.0)")
unary(special.log1p, "g / (1.0 + x)")
unary(special.i0, "g * i1(x)")
unary(special.i1, "g * 0.5 * (i0(x) + iv(2, x))")
unary(special.i0e, "g * (i1e(x) - np.sign(x) * ans)")
unary(special.i1e, "g * (0.5 * (i0e(x) + ive(2, x)) - np.sign(x) * ans)")
unary(special.j0, "-g * j1(x)")
unary(special.j1, "g * 0.5 * (j0(x) - jv(2, x))")
unary(special.y0, "-g * y1(x)")
unary(special.y1, "g * 0.5 * (y0(x) - yv(2, x))")
unary(special.k0, "-g * k1(x)")
unary(special.k1, "-g * (k0(x) + ans / x)")
unary(special.erfcx, "g * (2.0 * x * ans - 2.0 / np.pi ** 0.5)")
unary(special.dawsn, "g * (1.0 - 2.0 * x * ans)")
unary(special.cbrt, "g / (3.0 * ans ** 2)")
if hasattr(special, "softplus"):  # (SciPy 1.15: log(1 + exp(x)), whose slope is exp(x - ans))
    unary(special.softplus, "g * np.exp(x - ans)")
_GAMMA_DENSITY = "np.exp((a - 1.0) * np.log(x) - x - gammaln(a))"  # d/dx of the regularized gammainc
_SHAPE = {"a": "s2sad differentiates the incomplete gamma function with respect to x only; pass a constant a"}
binary(special.gammainc, "a, x", refuse=_SHAPE, x=f"g * {_GAMMA_DENSITY}")
binary(special.gammaincc, "a, x", refuse=_SHAPE, x=f"-g * {_GAMMA_DENSITY}")
binary(special.polygamma, "n, x", x="g * polygamma(n + 1, x)",
       refuse={"n": "s2sad does not differentiate with respect to the order n; pass a constant"})
binary(special.iv, "v, z", refuse=_ORDER, z="g * 0.5 * (iv(v - 1, z) + iv(v + 1, z))")
binary(special.ive, "v, z", refuse=_ORDER, z="g * (0.5 * (ive(v - 1, z) + ive(v + 1, z)) - np.sign(z) * ans)")
binary(special.jv, "v, z", refuse=_ORDER, z="g * 0.5 * (jv(v - 1, z) - jv(v + 1, z))")
binary(special.yv, "v, z", refuse=_ORDER, z="g * 0.5 * (yv(v - 1, z) - yv(v + 1, z))")
binary(special.beta, "a, b", a="g * ans * (digamma(a) - digamma(a + b))",
       b="g * ans * (digamma(b) - digamma(a + b))")
binary(special.betaln, "a, b", a="g * (digamma(a) - digamma(a + b))", b="g * (digamma(b) - digamma(a + b))")
binary(special.xlogy, "x, y", x="g * np.log(y)", y="g * np.where(x == 0, 0.0, x / y)")
binary(special.xlog1py, "x, y", x="g * np.log1p(y)", y="g * np.where(x == 0, 0.0, x / (1.0 + y))")
binary(special.rel_entr, "x, y", x="g * (np.log(x / y) + 1.0)", y="-g * x / y")
binary(special.kl_div, "x, y", x="g * np.log(x / y)", y="g * (1.0 - x / y)")
binary(special.huber, "delta, r", delta="g * np.where(np.abs(r) <= delta, 0.0, np.abs(r) - delta)",
       r="g * np.clip(r, -delta, delta)")
_PH = "np.sqrt(1.0 + (r / delta) ** 2)"  # pseudo_huber = delta ** 2 (_PH - 1)
binary(special.pseudo_huber, "delta, r", delta=f"g * (2.0 * ans / delta - r ** 2 / (delta * {_PH}))",
       r=f"g * r / {_PH}")
defvjp(special.multigammaln, "a, d", elementwise=True,
       a="g * np.sum(digamma(np.expand_dims(a, -1) - np.arange(d) / 2.0), axis=-1)")
defvjp(special.softmax, "x, axis=None", jvp={"x": "ans * (t - np.sum(t * ans, axis=axis, keepdims=True))"},
       x="ans * (g - np.sum(g * ans, axis=axis, keepdims=True))")
defvjp(special.log_softmax, "x, axis=None",
       jvp={"x": "t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True)"},
       x="g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True)")
# logsumexp: log |sum(b exp(a))|, and its sign with return_sign=True (which carries no gradient)
_L, _SIGN, _G = "(ans[0] if return_sign else ans)", "(ans[1] if return_sign else 1.0)", "(g[0] if return_sign else g)"
_B = "(1.0 if isinstance(b, type(None)) else b)"
_W = f"np.exp(a - reduce_grad({_L}, a, axis, keepdims))"  # exp(a - lse), in a's shape
_GW = f"reduce_grad({_G} * {_SIGN}, a, axis, keepdims) * {_W}"


# (with return_sign=True, the sign of a complex sum is its phase, which these rules leave out: refused)
_LSE = "'scipy.special.logsumexp(..., return_sign=True)'"
_RS = f"real_input(real_input({{x}}, a, {_LSE}), b, {_LSE}) if return_sign else {{x}}"


def _lse_tangent(term: str) -> str:
    x = f"np.sum({term} * t, axis=axis, keepdims=keepdims) * {_SIGN}"
    return f"(real_input(real_input({x}, a, {_LSE}), b, {_LSE}), np.zeros_like(ans[1])) if return_sign else {x}"


defvjp(special.logsumexp, "a, axis=None, b=None, keepdims=False, return_sign=False", returns_container=True,
       jvp={"a": _lse_tangent(f"{_B} * {_W}"), "b": _lse_tangent(_W)},
       a=_RS.format(x=f"unbroadcast({_GW} * {_B}, a)"), b=_RS.format(x=f"unbroadcast({_GW}, b)"))

# --- scipy.stats -------------------------------------------------------------------------
# A location-scale family: logpdf(x) = l(z) - log(scale) with z = (x - loc) / scale; its rules
# need dl/dz (``score``) and dl/ds for each shape parameter s.
_Z = "((x - loc) / scale)"
_NO_SHAPE_CDF = ("s2sad does not differentiate a distribution function with respect to its shape "
                 "parameters; pass a constant")
_DISCRETE = "a count (or a shift of one) has no derivative; pass a constant or stop_gradient(...)"


def _real_only(method: str, **templates: str) -> dict[str, str]:
    """Each parameter's template, refusing complex values of that parameter (the distributions
    are of real variables; SciPy drops or keeps imaginary parts from one method to the next)."""
    return {p: f"real_input({v}, {p}, 'scipy.stats.{method}')" for p, v in templates.items()}


def location_scale(name: str, shapes: str, score: str, **shape_scores: str) -> None:
    dist = getattr(stats, name)
    score = score.format(z=_Z)
    params = f"x, {shapes + ', ' if shapes else ''}loc=0.0, scale=1.0"
    broadcast = tuple(p.split("=")[0].strip() for p in params.split(","))
    log_vjps = {"x": f"{{g}} * {score} / scale", "loc": f"-{{g}} * {score} / scale",
                "scale": f"-{{g}} * ({score} * {_Z} + 1.0) / scale",
                **{s: f"{{g}} * ({v.format(z=_Z)})" for s, v in shape_scores.items()}}
    defvjp(dist.logpdf, params, name=f"scipy.stats.{name}.logpdf", broadcast=broadcast, elementwise=True,
           **_real_only(f"{name}.logpdf", **{p: v.format(g="g") for p, v in log_vjps.items()}))
    defvjp(dist.pdf, params, name=f"scipy.stats.{name}.pdf", broadcast=broadcast, elementwise=True,
           **_real_only(f"{name}.pdf", **{p: v.format(g="(g * ans)") for p, v in log_vjps.items()}))
    args = ", ".join(broadcast)
    USER_OBJECTS[f"{name}_pdf"], USER_OBJECTS[f"{name}_logpdf"] = dist.pdf, dist.logpdf
    pdf, ratio = f"{name}_pdf({args})", f"np.exp({name}_logpdf({args}) - ans)"
    refuse = {s: _NO_SHAPE_CDF for s in shape_scores}
    for method, density, sign in (("cdf", pdf, ""), ("sf", pdf, "-"), ("logcdf", ratio, ""), ("logsf", ratio, "-")):
        defvjp(getattr(dist, method), params, name=f"scipy.stats.{name}.{method}", broadcast=broadcast,
               elementwise=True, refuse=refuse, **_real_only(
                   f"{name}.{method}", x=f"{sign}g * {density}", loc=f"{'' if sign else '-'}g * {density}",
                   scale=f"{'' if sign else '-'}g * {density} * {_Z}"))
    # ppf(q) = loc + scale z(q): its slope in q is 1 / pdf at the answer
    defvjp(dist.ppf, f"q{params[1:]}", name=f"scipy.stats.{name}.ppf", broadcast=("q", *broadcast[1:]),
           elementwise=True, refuse=refuse, **_real_only(
               f"{name}.ppf", q=f"g / {name}_pdf({', '.join(('ans', *broadcast[1:]))})", loc="g",
               scale="g * (ans - loc) / scale"))


location_scale("norm", "", "(-{z})")
location_scale("logistic", "", "(-np.tanh({z} / 2.0))")
location_scale("laplace", "", "(-np.sign({z}))")
location_scale("expon", "", "(-1.0)")
location_scale("cauchy", "", "(-2.0 * {z} / (1.0 + {z} ** 2))")
location_scale("lognorm", "s", "(-(1.0 + np.log({z}) / s ** 2) / {z})", s="np.log({z}) ** 2 / s ** 3 - 1.0 / s")
location_scale("t", "df", "(-(df + 1.0) * {z} / (df + {z} ** 2))",
               df="0.5 * (digamma((df + 1.0) / 2.0) - digamma(df / 2.0) - 1.0 / df - np.log1p({z} ** 2 / df)"
                  " + (df + 1.0) * {z} ** 2 / (df * (df + {z} ** 2)))")
location_scale("gamma", "a", "((a - 1.0) / {z} - 1.0)", a="np.log({z}) - digamma(a)")
location_scale("beta", "a, b", "((a - 1.0) / {z} - (b - 1.0) / (1.0 - {z}))",
               a="np.log({z}) - digamma(a) + digamma(a + b)", b="np.log1p(-{z}) - digamma(b) + digamma(a + b)")

_K = "(k - loc)"
for method, g in (("logpmf", "g"), ("pmf", "(g * ans)")):
    defvjp(getattr(stats.poisson, method), "k, mu, loc=0", name=f"scipy.stats.poisson.{method}",
           broadcast=("k", "mu", "loc"), elementwise=True, refuse={"k": _DISCRETE, "loc": _DISCRETE},
           **_real_only(f"poisson.{method}", mu=f"{g} * ({_K} / mu - 1.0)"))
    defvjp(getattr(stats.binom, method), "k, n, p, loc=0", name=f"scipy.stats.binom.{method}",
           broadcast=("k", "n", "p", "loc"), elementwise=True,
           refuse={"k": _DISCRETE, "n": _DISCRETE, "loc": _DISCRETE},
           **_real_only(f"binom.{method}", p=f"{g} * ({_K} / p - (n - {_K}) / (1.0 - p))"))
    defvjp(getattr(stats.bernoulli, method), "k, p, loc=0", name=f"scipy.stats.bernoulli.{method}",
           broadcast=("k", "p", "loc"), elementwise=True, refuse={"k": _DISCRETE, "loc": _DISCRETE},
           **_real_only(f"bernoulli.{method}", p=f"{g} * ({_K} / p - (1.0 - {_K}) / (1.0 - p))"))

# multivariate_normal: with r = x - mean and s = cov^-1 r (a row per sample), logpdf has
# gradient -s for x, s for mean and (s s^T - cov^-1) / 2 for cov
_M = "(0.0 if isinstance(mean, type(None)) else mean)"
_C = "cov_matrix(cov, mean)"
_D = f"np.shape({_C})[-1]"
_S = f"np.swapaxes(np.linalg.solve({_C}, np.swapaxes(np.reshape(x - {_M}, (-1, {_D})), -1, -2)), -1, -2)"
_MVN = {"x": f"np.reshape(-np.reshape({{g}}, (-1, 1)) * {_S}, np.shape(x))",
        "mean": f"np.reshape(np.sum(np.reshape({{g}}, (-1, 1)) * {_S}, axis=0), np.shape(mean))",
        "cov": f"cov_matrix_grad(0.5 * (np.swapaxes(np.reshape({{g}}, (-1, 1)) * {_S}, -1, -2) @ {_S} "
               f"- np.sum({{g}}) * np.linalg.inv({_C})), cov)"}
_MVN_T = {"x": f"np.reshape(-np.sum(np.reshape(t, (-1, {_D})) * {_S}, axis=-1), np.shape(ans))",
          "mean": f"np.reshape(np.sum(np.reshape(t, (1, -1)) * {_S}, axis=-1), np.shape(ans))",
          "cov": f"np.reshape(0.5 * np.sum({_S} * ({_S} @ cov_matrix(t, mean)), axis=-1) - 0.5 * "
                 f"np.trace(np.linalg.solve({_C}, cov_matrix(t, mean))), np.shape(ans))"}
for method, g, factor in (("logpdf", "g", ""), ("pdf", "(g * ans)", "ans * ")):
    defvjp(getattr(stats.multivariate_normal, method), "x, mean=None, cov=1, allow_singular=False",
           name=f"scipy.stats.multivariate_normal.{method}",
           jvp=_real_only(f"multivariate_normal.{method}", **{p: f"{factor}({v})" for p, v in _MVN_T.items()}),
           **_real_only(f"multivariate_normal.{method}", **{p: v.format(g=g) for p, v in _MVN.items()}))
# dirichlet: the last axis of x holds the components
_DIRICHLET = "(digamma(np.sum(alpha)) - digamma(alpha) + np.log(x))"
defvjp(stats.dirichlet.logpdf, "x, alpha", name="scipy.stats.dirichlet.logpdf",
       jvp=_real_only("dirichlet.logpdf", x="np.sum((alpha - 1.0) / x * t, axis=-1)",
                      alpha=f"np.sum({_DIRICHLET} * t, axis=-1)"),
       **_real_only("dirichlet.logpdf", x="np.expand_dims(g, -1) * (alpha - 1.0) / x",
                    alpha=f"unbroadcast(np.expand_dims(g, -1) * {_DIRICHLET}, alpha)"))

# --- scipy.linalg -------------------------------------------------------------------------
# overwrite_a=True (overwrite_b=True) lets LAPACK write over an input that gradients read


def _in_place(*params: str) -> dict[str, str]:
    return {p: f"SciPy may write over the input in place, where gradients read it; leave {p}=False" for p in params}


defvjp(linalg.det, "a, overwrite_a=False, check_finite=True", unsupported=_in_place("overwrite_a"),
       jvp={"a": "np.sum(det_cofactor(a) * t, axis=(-2, -1))"},  # singular a too
       a="np.expand_dims(g, (-2, -1)) * det_cofactor(a)")
defvjp(linalg.inv, "a, overwrite_a=False, check_finite=True", unsupported=_in_place("overwrite_a"),
       jvp={"a": "-ans @ t @ ans"},
       a="-np.swapaxes(ans, -1, -2) @ g @ np.swapaxes(ans, -1, -2)")
# norm and pinv: as NumPy's
defvjp(linalg.norm, "a, ord=None, axis=None, keepdims=False, check_finite=True",
       jvp={"a": "np.sum(norm_grad(np.ones_like(ans), a, ans, ord, axis, keepdims) * t, axis=axis, keepdims=keepdims)"},
       a="norm_grad(g, a, ans, ord, axis, keepdims)")
defvjp(linalg.pinv, "a, atol=None, rtol=None, return_rank=False, check_finite=True",
       unsupported={"return_rank": "s2sad differentiates scipy.linalg.pinv without its rank; leave return_rank=False"},
       jvp={"a": "pinv_jvp(t, a, ans)"}, a="pinv_grad(g, a, ans)")
# scipy's cholesky is upper triangular unless lower=True, and reads that triangle of a
defvjp(linalg.cholesky, "a, lower=False, overwrite_a=False, check_finite=True", unsupported=_in_place("overwrite_a"),
       jvp={"a": "cholesky_jvp(np.reshape(t, np.shape(ans)), ans, not lower)"},
       a="np.reshape(cholesky_grad(g, ans, not lower), np.shape(a))")  # (a number: SciPy's 1 x 1 matrix)
# x = op(a)^-1 b with op(a) = a or a^T (trans), a triangular (the other triangle unread)
_T = "(0 if trans in (0, 'N') else 1)"
_GB = "solve_triangular(a, g, 1 - {t}, lower, unit_diagonal)".format(t=_T)
_TRI = "(np.tril({m}, -int(unit_diagonal)) if lower else np.triu({m}, int(unit_diagonal)))"
_OUTER = "(np.reshape({u}, (np.shape(a)[-1], -1)) @ np.swapaxes(np.reshape({v}, (np.shape(a)[-1], -1)), -1, -2))"
defvjp(linalg.solve_triangular, "a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, "
                                "check_finite=True", unsupported=_in_place("overwrite_b"),
       jvp={"b": f"solve_triangular(a, t, {_T}, lower, unit_diagonal)",
            "a": f"-solve_triangular(a, np.reshape((np.swapaxes({_TRI.format(m='t')}, -1, -2) if {_T} else "
                 f"{_TRI.format(m='t')}) @ np.reshape(ans, (np.shape(a)[-1], -1)), np.shape(ans)), {_T}, lower, "
                 f"unit_diagonal)"},
       b=_GB,
       a=_TRI.format(m=f"-({_OUTER.format(u='ans', v=_GB)} if {_T} else {_OUTER.format(u=_GB, v='ans')})"))
# (the factor comes as a tuple, (c, lower) or (lu, piv), which SciPy reads as it is, not as an array)
# cho_solve((c, lower), b) solves A x = b with A = F F^T (F = tril(c)) or F^T F (F = triu(c)): A's
# cotangent is M = -(w x^T + x w^T) with w = A^-1 g, and F's M F (lower) or F M (upper), on F's triangle
_C, _LOW, _N_C = "c_and_lower[0]", "c_and_lower[1]", "np.shape(c_and_lower[0])[-1]"
_F = f"(np.tril({_C}) if {_LOW} else np.triu({_C}))"
_COL = "np.reshape({v}, (%s, -1))" % _N_C
_W = _COL.format(v="cho_solve(c_and_lower, g)")
_M = f"-({_W} @ np.transpose({_COL.format(v='ans')}) + {_COL.format(v='ans')} @ np.transpose({_W}))"
_DF = f"(np.tril(t[0]) if {_LOW} else np.triu(t[0]))"
_DA = (f"({_DF} @ np.transpose({_F}) + {_F} @ np.transpose({_DF}) if {_LOW} else "
       f"np.transpose({_DF}) @ {_F} + np.transpose({_F}) @ {_DF})")
defvjp(linalg.cho_solve, "c_and_lower, b, overwrite_b=False, check_finite=True",
       unsupported=_in_place("overwrite_b"), containers=("c_and_lower",),
       jvp={"b": "cho_solve(c_and_lower, t)",
            "c_and_lower": f"-cho_solve(c_and_lower, np.reshape({_DA} @ {_COL.format(v='ans')}, np.shape(ans)))"},
       b="cho_solve(c_and_lower, g)",
       c_and_lower=f"(np.tril({_M} @ {_F}) if {_LOW} else np.triu({_F} @ {_M}), 0.0)")
# cho_factor(a) is (c, lower): c holds scipy.linalg.cholesky(a, lower) on its triangle and a as it
# was on the other (SciPy leaves it unread and unchanged)
_TRI = "(np.tril({m}) if lower else np.triu({m}))"
_OTHER = "(np.triu({m}, 1) if lower else np.tril({m}, -1))"
defvjp(linalg.cho_factor, "a, lower=False, overwrite_a=False, check_finite=True", returns_container=True,
       unsupported=_in_place("overwrite_a"),
       jvp={"a": f"(cholesky_jvp(t, {_TRI.format(m='ans[0]')}, not lower) + {_OTHER.format(m='t')}, 0.0)"},
       a=f"cholesky_grad({_TRI.format(m='g[0]')}, {_TRI.format(m='ans[0]')}, not lower) + {_OTHER.format(m='g[0]')}")
# the derivative of a matrix function at a in direction e is the upper right block of the
# function of [[a, e], [0, a]]; the adjoint is the same at a's transpose
_N = "np.shape(A)[-1]"
_AT = "np.swapaxes(A, -1, -2)"
defvjp(linalg.expm, "A", jvp={"A": f"expm(np.block([[A, t], [np.zeros_like(A), A]]))[..., :{_N}, {_N}:]"},
       A=f"expm(np.block([[{_AT}, g], [np.zeros_like(A), {_AT}]]))[..., :{_N}, {_N}:]")
defvjp(linalg.logm, "A", jvp={"A": f"logm(np.block([[A, t], [np.zeros_like(A), A]]))[..., :{_N}, {_N}:]"},
       A=f"logm(np.block([[{_AT}, g], [np.zeros_like(A), {_AT}]]))[..., :{_N}, {_N}:]")
# scipy.linalg.svd returns what np.linalg.svd does: its rule
defvjp(linalg.svd, "a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True, "
                   "lapack_driver='gesdd'", returns_container=True, unsupported=_in_place("overwrite_a"),
       jvp={"a": "svd_jvp(t, a, ans, full_matrices, compute_uv)"},
       a="svd_grad(g, a, ans, full_matrices, compute_uv)")
# X = sqrtm(A): dX X + X dX = dA, a Sylvester equation
defvjp(linalg.sqrtm, "A, disp=True, blocksize=64", jvp={"A": "solve_sylvester(ans, ans, t)"},
       A="solve_sylvester(np.swapaxes(ans, -1, -2), np.swapaxes(ans, -1, -2), g)")
_Q = "solve_sylvester(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), g)"
defvjp(linalg.solve_sylvester, "a, b, q",
       jvp={"q": "solve_sylvester(a, b, t)", "a": "solve_sylvester(a, b, -t @ ans)",
            "b": "solve_sylvester(a, b, -ans @ t)"},
       q=_Q, a=f"-{_Q} @ np.swapaxes(ans, -1, -2)", b=f"-np.swapaxes(ans, -1, -2) @ {_Q}")

# solve reads what assume_a says of a (solve_matrix: a triangle mirrored, a band, all of a), and
# solves with its transpose if transposed: np.linalg.solve's rule with that matrix
_SM = "solve_matrix({m}, assume_a, lower, transposed)"
defvjp(linalg.solve, "a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None, "
                     "transposed=False", unsupported=_in_place("overwrite_a", "overwrite_b"),
       jvp={"a": f"-np.linalg.solve({_SM.format(m='a')}, {_SM.format(m='t')} @ ans) if np.ndim(b) > 1 else "
                 f"-np.linalg.solve({_SM.format(m='a')}, {_SM.format(m='t')} @ ans[..., None])[..., 0]",
            "b": f"np.linalg.solve({_SM.format(m='a')}, t)"},
       a=f"solve_matrix_grad(solve_grad_a(g, {_SM.format(m='a')}, b, ans), assume_a, lower, transposed)",
       b=f"solve_grad_b(g, {_SM.format(m='a')}, b)")
# eigh and eigvalsh of the standard problem, reading the lower triangle unless lower=False (as
# np.linalg.eigh with UPLO); the generalized problem (b=) and subsets are refused
_UPLO = "('L' if lower else 'U')"
_GENERALIZED = ("s2sad differentiates the standard eigenproblem only (b=None, all eigenvalues); for a "
                "generalized one with b = L L^T, solve the standard one of L^-1 a L^-T")
_EIGH_ONLY = {**{p: _GENERALIZED for p in ("b", "subset_by_index", "subset_by_value")}, **_in_place("overwrite_a")}
_EIGH = ("a, b=None, *, lower=True, {only}overwrite_a=False, overwrite_b=False, type=1, check_finite=True, "
         "subset_by_index=None, subset_by_value=None, driver=None")
_EV = f"np.linalg.eigh(a, {_UPLO})[1]"
_EVS = f"({_EV} * np.expand_dims(g, -2)) @ np.swapaxes({_EV}, -1, -2)"
_EVALS_T = f"np.sum({_EV} * (read_triangle(t, lower) @ {_EV}), axis=-2)"
_EVALS = f"(np.tril(2.0 * {_EVS}) if lower else np.triu(2.0 * {_EVS})) - {_EVS} * np.eye(np.shape(a)[-1])"
# (the eigenvalues' rule takes no conjugates: a Hermitian a is refused, as eigh_grad refuses it)
_REAL = "real_input({rule}, a, 'scipy.linalg.{name}')"
defvjp(linalg.eigh, _EIGH.format(only="eigvals_only=False, "), returns_container=True, unsupported=_EIGH_ONLY,
       jvp={"a": f"{_REAL.format(rule=_EVALS_T, name='eigh')} if eigvals_only else eigh_jvp(t, a, ans, {_UPLO})"},
       a=f"{_REAL.format(rule=_EVALS, name='eigh')} if eigvals_only else eigh_grad(g, a, ans, {_UPLO})")
defvjp(linalg.eigvalsh, _EIGH.format(only=""), unsupported=_EIGH_ONLY,
       jvp={"a": _REAL.format(rule=_EVALS_T, name="eigvalsh")}, a=_REAL.format(rule=_EVALS, name="eigvalsh"))
# lu_solve with respect to b (linear): x = a^-1 b (trans 0), a^-T b (1); its transpose swaps them
defvjp(linalg.lu_solve, "lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True", linear="joint",
       unsupported=_in_place("overwrite_b"), containers=("lu_and_piv",),
       refuse={"lu_and_piv": "s2sad differentiates scipy.linalg.lu_solve with respect to b only; for a gradient "
                             "with respect to the matrix, write scipy.linalg.solve(a, b)"},
       b="lu_solve(lu_and_piv, g, 1 if trans in (0, 'N') else 0) if trans in (0, 'N', 1, 'T') else "
         "np.conj(lu_solve(lu_and_piv, np.conj(g), 0))")
# solve_banded is np.linalg.solve with the matrix ab stands for (banded_matrix): its gradient lies
# in the band, laid out as ab (band_of)
_BANDED = "banded_matrix(l_and_u, ab)"
_BANDED_B = f"np.linalg.solve(np.swapaxes({_BANDED}, -1, -2), g)"
defvjp(linalg.solve_banded, "l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True",
       unsupported=_in_place("overwrite_ab", "overwrite_b"), l_and_u=None,
       jvp={"b": "solve_banded(l_and_u, ab, t)",
            "ab": f"-solve_banded(l_and_u, ab, banded_matrix(l_and_u, t) @ ans)"},
       b=_BANDED_B,
       ab=f"-band_of(l_and_u, np.reshape({_BANDED_B}, (np.shape(ab)[-1], -1)) @ "
          f"np.reshape(ans, (np.shape(ab)[-1], -1)).T, np.shape(ab))")
# lu_factor's results are read by lu_solve, which s2sad differentiates in b only
REGISTRY.declare_refused(linalg.lu_factor, "s2sad does not differentiate scipy.linalg.lu_factor (its factors are "
                                           "differentiated only as constants, by lu_solve in b); for a gradient "
                                           "with respect to the matrix, write scipy.linalg.solve(a, b)")

# --- scipy.signal ---------------------------------------------------------------------------
defvjp(signal.convolve, "in1, in2, mode='full', method='auto'", linear="each",
       in1="convolve_grad(g, in1, in2, mode)", in2="convolve_grad(g, in2, in1, mode)")
for fft_convolve in (signal.fftconvolve, signal.oaconvolve):  # convolve's, computed another way
    defvjp(fft_convolve, "in1, in2, mode='full', axes=None", linear="each",
           unsupported={"axes": "s2sad differentiates the convolution along every axis only; "
                                "write scipy.signal.convolve of arrays shaped to broadcast, or a loop"},
           in1="convolve_grad(g, in1, in2, mode)", in2="convolve_grad(g, in2, in1, mode)")
# correlate(in1, in2) is convolve(in1, in2 flipped along every axis and conjugated)
defvjp(signal.correlate, "in1, in2, mode='full', method='auto'", linear="each",
       in1="convolve_grad(g, in1, np.conj(np.flip(in2)), mode)",
       in2="np.conj(np.flip(convolve_grad(g, np.conj(np.flip(in2)), in1, mode)))")

# --- scipy.spatial.distance -----------------------------------------------------------------
# d_ij = |a_i - b_j| (or its square): its gradient moves a_i along a_i - b_j, by the weights
# cdist_weights makes of the cotangent (it refuses the other metrics as it runs)
_CDIST_W = "cdist_weights(g, ans, metric)"
defvjp(distance.cdist, "XA, XB, metric='euclidean', *, out=None", name="scipy.spatial.distance.cdist",
       metric=None, unsupported={"out": "cdist(..., out=...) writes into an existing array, which s2sad does "
                                        "not follow; assign the result instead"},
       jvp={"XA": "cdist_weights(np.sum(XA * t, axis=-1)[:, None] - t @ np.swapaxes(XB, -1, -2), ans, metric)",
            "XB": "cdist_weights(np.sum(XB * t, axis=-1)[None, :] - XA @ np.swapaxes(t, -1, -2), ans, metric)"},
       XA=f"np.sum({_CDIST_W}, axis=1)[:, None] * XA - {_CDIST_W} @ XB",
       XB=f"np.sum({_CDIST_W}, axis=0)[:, None] * XB - np.swapaxes({_CDIST_W}, -1, -2) @ XA")

# pdist is cdist(X, X)'s upper triangle, row by row: the weights of its pairs, as a symmetric
# matrix (squareform), move each point along its differences to the others
_PDIST_W = "squareform(cdist_weights(g, ans, metric))"
_PAIR_T = "np.sum(X * t, axis=-1)"
defvjp(distance.pdist, "X, metric='euclidean', *, out=None", name="scipy.spatial.distance.pdist",
       metric=None, unsupported={"out": "pdist(..., out=...) writes into an existing array, which s2sad does "
                                        "not follow; assign the result instead"},
       jvp={"X": f"cdist_weights(squareform({_PAIR_T}[:, None] + {_PAIR_T}[None, :] - X @ np.swapaxes(t, -1, -2) "
                 f"- t @ np.swapaxes(X, -1, -2), checks=False), ans, metric)"},
       X=f"np.sum({_PDIST_W}, axis=1)[:, None] * X - {_PDIST_W} @ X")
# a condensed vector as a symmetric matrix, or a matrix's upper triangle as a vector
defvjp(distance.squareform, "X, force='no', checks=True", name="scipy.spatial.distance.squareform",
       force=None, checks=None, linear="each",
       X="np.triu(squareform(g, checks=False), 1) if np.ndim(X) == 2 else "
         "squareform(g + np.swapaxes(g, -1, -2), checks=False)")

# --- scipy.integrate ------------------------------------------------------------------------
trapezoid_rule(integrate.trapezoid, "scipy.integrate.trapezoid")

from . import scipy_more_rules  # noqa: E402,F401  (the rules continued, listed with these)

#: The rules this module declares (s2sad's own, listed in the README).
BUILTIN_RULES: frozenset[int] = frozenset(REGISTRY.rules) - _BEFORE
