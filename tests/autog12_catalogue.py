"""The catalogue of tests/test_autog12.py: NumPy's and SciPy's functions, each with the keyword
combinations that change its gradient (axis, keepdims, ord, ddof, n, norm...), on inputs of
shape (), (3,), (2, 3) and (2, 3, 4), broadcasting pairs, and complex inputs where the
function takes them (autograd's systematic tests sweep the same ground)."""
from __future__ import annotations

from autog12_check import F, Case

S, V, M, T = (), (3,), (2, 3), (2, 3, 4)
SQ = (3, 3)


def _axes(shape: tuple) -> list[str]:
    """The axis arguments worth trying on an array of ``shape``."""
    axes = ["", ", axis=None", ", axis=0", ", axis=-1"][: 2 if not shape else 4]
    if len(shape) >= 2:
        axes.append(", axis=(0, 1)")
    if len(shape) >= 3:
        axes.append(", axis=(0, 2)")
    return axes


def reductions() -> list[Case]:
    cases = []
    plain = [("np.sum", "real"), ("np.mean", "real"), ("np.prod", "positive"), ("np.max", "distinct"),
             ("np.min", "distinct"), ("np.amax", "distinct"), ("np.nansum", "real"), ("np.nanmean", "real"),
             ("np.nanmax", "distinct"), ("np.nanmin", "distinct"), ("np.nanprod", "positive"),
             ("np.std", "real"), ("np.var", "real"), ("np.nanstd", "real"), ("np.nanvar", "real"),
             ("np.ptp", "distinct"), ("np.median", "distinct"), ("np.nanmedian", "distinct"),
             ("special.logsumexp", "real")]
    for fun, domain in plain:
        for shape in (S, V, M, T):
            for axis in _axes(shape):
                if fun in ("np.ptp", "np.median", "np.nanmedian") and "(0" in axis and fun == "np.ptp":
                    continue
                for keep in ("", ", keepdims=True") if len(shape) >= 2 and axis != ", axis=None" else ("",):
                    cases.append(Case(f"{fun}(x{axis}{keep})", (shape,), domain))
    for fun in ("np.std", "np.var"):
        for shape in (V, M, T):
            for axis in _axes(shape)[1:]:
                cases.append(Case(f"{fun}(x{axis}, ddof=1)", (shape,)))
    for fun in ("np.cumsum", "np.cumprod", "np.nancumsum", "np.nancumprod"):
        domain = "positive" if "prod" in fun else "real"
        for shape in (V, M, T):
            for axis in ("", ", axis=0", ", axis=-1"):
                cases.append(Case(f"{fun}(x{axis})", (shape,), domain))
    for method in ("sum", "mean", "max", "min", "prod", "std", "var"):
        domain = {"max": "distinct", "min": "distinct", "prod": "positive"}.get(method, "real")
        for axis in ("", "axis=0", "axis=-1", "axis=(0, 1)", "0, keepdims=True"):
            cases.append(Case(f"x.{method}({axis})", (M,), domain))
    cases += [Case("x.cumsum(axis=1)", (M,)), Case("x.cumprod(0)", (M,), "positive"),
              Case("np.average(x, axis=0, weights=np.array([0.3, 0.7]))", (M,)),
              Case("np.average(x, axis=-1, weights=np.array([0.2, 0.3, 0.5]))", (M,)),
              Case("np.average(x)", (T,)),
              Case("np.average(x, weights=y)", (V, V), "positive"),
              Case("np.quantile(x, 0.3)", (V,), "distinct"),
              Case("np.quantile(x, 0.3, axis=-1, keepdims=True)", (M,), "distinct"),
              Case("np.percentile(x, [10.0, 60.0], axis=0)", (T,), "distinct"),
              Case("np.nanquantile(x, 0.7, axis=1)", (M,), "distinct"),
              Case("np.nanpercentile(x, 40.0)", (T,), "distinct"),
              Case("np.median(x, axis=(0, 2))", (T,), "distinct"),
              Case("np.std(x, axis=(0, 2), ddof=1, keepdims=True)", (T,)),
              Case("np.add.reduce(x, axis=1)", (M,)), Case("np.multiply.reduce(x, axis=0)", (M,), "positive"),
              Case("np.maximum.reduce(x, axis=-1)", (T,), "distinct"),
              Case("np.add.accumulate(x, axis=1)", (M,)),
              Case("np.maximum.accumulate(x, axis=0)", (T,), "distinct"),
              Case("np.logaddexp.reduce(x, axis=0)", (M,))]
    cases += [Case(f"{fun}(x{axis})", (shape,), complex_in=True)
              for fun in ("np.sum", "np.mean", "np.cumsum", "np.prod")
              for shape in (V, M) for axis in ("", ", axis=0", ", axis=-1")]
    return cases


UNARY = [
    ("np.sin", "real", True), ("np.cos", "real", True), ("np.tan", "unit", True), ("np.arcsin", "unit", True),
    ("np.arccos", "unit", True), ("np.arctan", "unit", True), ("np.sinh", "real", True),
    ("np.cosh", "real", True), ("np.tanh", "real", True), ("np.arcsinh", "real", True),
    ("np.arccosh", "above1", True), ("np.arctanh", "unit", True), ("np.exp", "real", True),
    ("np.exp2", "real", True), ("np.expm1", "real", True), ("np.log", "positive", True),
    ("np.log2", "positive", True), ("np.log10", "positive", True), ("np.log1p", "positive", True),
    ("np.sqrt", "positive", True), ("np.square", "real", True), ("np.reciprocal", "positive", True),
    ("np.negative", "real", True), ("np.positive", "real", True), ("np.conj", "real", True),
    ("np.abs", "offgrid", True), ("np.absolute", "offgrid", False), ("np.fabs", "offgrid", False),
    ("np.cbrt", "positive", False), ("np.deg2rad", "real", False), ("np.rad2deg", "real", False),
    ("np.degrees", "real", False), ("np.radians", "real", False), ("np.sinc", "offgrid", False),
    ("np.real", "real", True), ("np.imag", "real", True), ("np.angle", "offgrid", True),
    ("np.nan_to_num", "real", False), ("np.real_if_close", "real", False),
    ("special.expit", "real", False), ("special.logit", "prob", False), ("special.erf", "real", False),
    ("special.erfc", "real", False), ("special.gammaln", "positive", False),
    ("special.digamma", "positive", False), ("special.gamma", "positive", False),
    ("special.ndtr", "real", False), ("special.log_ndtr", "real", False), ("special.i0", "real", False),
    ("special.i1", "real", False), ("special.j0", "real", False), ("special.erfinv", "unit", False),
    ("special.log_expit", "real", False), ("special.entr", "positive", False),
]


def elementwise() -> list[Case]:
    cases = []
    for fun, domain, takes_complex in UNARY:
        for shape in (S, V, M):
            cases.append(Case(f"{fun}(x)", (shape,), domain))
        if takes_complex:
            cases.append(Case(f"{fun}(x)", (M,), "positive" if domain != "real" else "real", complex_in=True))
    binary = [("np.add", "real"), ("np.subtract", "real"), ("np.multiply", "real"), ("np.divide", "positive"),
              ("np.true_divide", "positive"), ("np.power", "positive"), ("np.float_power", "positive"),
              ("np.maximum", "distinct"), ("np.minimum", "distinct"), ("np.fmax", "distinct"),
              ("np.fmin", "distinct"), ("np.arctan2", "positive"), ("np.hypot", "real"),
              ("np.logaddexp", "real"), ("np.logaddexp2", "real"), ("np.copysign", "offgrid"),
              ("np.mod", "positive"), ("np.fmod", "positive"), ("np.remainder", "positive"),
              ("special.xlogy", "positive"), ("special.beta", "positive")]
    pairs = [(S, S), (V, V), (M, V), (V, M), ((2, 1), (1, 3)), (S, M), (T, (3, 1)), ((4,), T)]
    for fun, domain in binary:
        for a, b in pairs:
            cases.append(Case(f"{fun}(x, y)", (a, b), domain))
    for op in ("+", "-", "*", "/", "**"):
        for a, b in ((M, V), (S, M), ((2, 1), (1, 3))):
            cases.append(Case(f"x {op} y", (a, b), "positive"))
        cases.append(Case(f"x {op} y", (M, V), "positive", complex_in=True))
    cases += [Case("x ** 2", (M,), complex_in=True), Case("x ** 3.0", (M,)), Case("2.0 ** x", (M,)),
              Case("x ** 0.5", (V,), "positive"), Case("x ** -1", (V,), "positive"),
              Case("x % 0.7", (V,), "offgrid"), Case("np.clip(x, -0.5, 0.5)", (M,), "offgrid"),
              Case("np.clip(x, y, 0.8)", (M, V), "offgrid"), Case("x.clip(min=0.0)", (M,), "offgrid"),
              Case("np.where(x > 0, x, y)", (M, V), "offgrid"), Case("np.where(x > 0, x ** 2, 0.0)", (M,), "offgrid"),
              Case("np.where(x > 0, x, np.sin(x))", (M,), "offgrid", complex_in=False),
              Case("np.maximum(x, 0.0)", (T,), "offgrid"), Case("np.abs(x)", (V,), "positive", complex_in=True),
              Case("np.abs(x) ** 2", (M,), complex_in=True), Case("np.sqrt(x)", (V,), "positive", complex_in=True),
              Case("np.conjugate(x) * x", (M,), complex_in=True), Case("x.conj()", (M,), complex_in=True),
              Case("x.real * x.imag", (M,), complex_in=True), Case("np.exp(1j * x)", (M,)),
              Case("np.angle(x)", (V,), "positive", complex_in=True),
              Case("np.interp(x, np.array([-2.0, 0.0, 2.0]), np.array([1.0, -1.0, 3.0]))", (M,), "offgrid"),
              Case("np.interp(0.3, np.array([-2.0, 0.0, 2.0]), x)", (V,)),
              Case("np.modf(x)[0]", (M,), "offgrid"), Case("np.ldexp(x, 3)", (V,)),
              Case("np.heaviside(x, 0.5) * x", (V,), "offgrid"), Case("np.sign(x) * x", (V,), "offgrid"),
              Case("np.round(x, 2) + x", (V,), "offgrid"), Case("np.floor(x) * x", (V,), "offgrid")]
    return cases


def shaping() -> list[Case]:
    c = Case
    return [
        c("np.reshape(x, (3, 2))", (M,)), c("x.reshape(-1)", (T,)), c("x.reshape(4, -1, order='F')", (T,)),
        c("np.reshape(x, (6,), order='F')", (M,)), c("np.ravel(x, order='F')", (T,)), c("x.flatten()", (M,)),
        c("x.ravel()", (M,), complex_in=True), c("np.transpose(x)", (T,)), c("np.transpose(x, (1, 0, 2))", (T,)), c("np.transpose(x, (-1, 0, 1))", (T,)),
        c("x.transpose(2, 0, 1)", (T,)), c("x.T", (M,), complex_in=True), c("x.mT", (T,)),
        c("np.swapaxes(x, 0, 2)", (T,)), c("np.moveaxis(x, 0, -1)", (T,)), c("np.moveaxis(x, [0, 1], [2, 0])", (T,)),
        c("np.rollaxis(x, 2)", (T,)), c("np.expand_dims(x, 1)", (M,)), c("np.expand_dims(x, (0, 2))", (M,)),
        c("np.squeeze(x)", ((1, 3, 1),)), c("np.squeeze(x, axis=0)", ((1, 3),)), c("np.atleast_1d(x)", (S,)),
        c("np.atleast_2d(x)", (V,)), c("np.atleast_3d(x)", (M,)), c("np.broadcast_to(x, (4, 2, 3))", (M,)),
        c("np.broadcast_arrays(x, y)[0] * np.broadcast_arrays(x, y)[1]", ((2, 1), (1, 3))),
        c("np.flip(x)", (T,)), c("np.flip(x, axis=1)", (T,)), c("np.flip(x, axis=(0, 2))", (T,)),
        c("np.fliplr(x)", (M,)), c("np.flipud(x)", (M,)), c("np.roll(x, 2)", (T,)), c("np.roll(x, -1, axis=1)", (M,)),
        c("np.roll(x, (1, 2), axis=(0, 2))", (T,)), c("np.rot90(x)", (M,)), c("np.rot90(x, 3, axes=(1, 2))", (T,)),
        c("np.tile(x, 2)", (M,)), c("np.tile(x, (2, 1, 2))", (M,)), c("np.repeat(x, 2)", (M,)),
        c("np.repeat(x, 2, axis=1)", (M,)), c("np.repeat(x, [1, 0, 3], axis=-1)", (M,)), c("x.repeat(3, axis=0)", (V,)),
        c("np.concatenate([x, y])", (V, (2,))), c("np.concatenate((x, y), axis=1)", (M, (2, 2))),
        c("np.concatenate([x, y], axis=None)", (M, V)), c("np.concatenate([x, x], axis=-1)", (T,)),
        c("np.stack([x, y])", (M, M)), c("np.stack([x, y], axis=-1)", (M, M)), c("np.stack((x, y), axis=1)", (V, V)),
        c("np.hstack([x, y])", (V, V)), c("np.hstack([x, y])", (M, M)), c("np.vstack([x, y])", (V, V)),
        c("np.vstack((x, y))", (M, V)), c("np.dstack([x, y])", (M, M)), c("np.column_stack([x, y])", (V, V)),
        c("np.column_stack([x, y])", ((3, 2), V)), c("np.block([[x, y], [y, x]])", (SQ, SQ)),
        c("np.append(x, y)", (M, V)), c("np.append(x, y, axis=0)", (M, (1, 3))),
        c("np.split(x, 3)[1]", ((6,),)), c("np.split(x, [1, 3], axis=1)[2]", ((2, 5),)),
        c("np.array_split(x, 3, axis=-1)[0]", ((2, 5),)), c("np.hsplit(x, 3)[0] * np.hsplit(x, 3)[2]", (M,)),
        c("np.vsplit(x, 2)[1]", (M,)), c("np.dsplit(x, 2)[0]", (T,)),
        c("np.pad(x, 1)", (M,)), c("np.pad(x, ((1, 0), (0, 2)))", (M,)), c("np.pad(x, 2, mode='edge')", (V,)),
        c("np.pad(x, 1, mode='reflect')", (M,)), c("np.pad(x, (2, 1), mode='wrap')", ((4,),)),
        c("np.pad(x, 1, mode='symmetric')", (M,)), c("np.pad(x, 1, constant_values=2.0)", (M,)),
        c("np.pad(x, 2, mode='mean')", (V,)), c("np.pad(x, 2, mode='linear_ramp')", (V,)),
        c("np.diag(x)", (V,)), c("np.diag(x, k=1)", (V,)), c("np.diag(x)", (SQ,)), c("np.diag(x, -1)", (M,)),
        c("np.diagflat(x)", (M,)), c("np.diagonal(x)", (M,)), c("np.diagonal(x, offset=1, axis1=1, axis2=2)", (T,)),
        c("x.diagonal(-1)", (SQ,)), c("np.trace(x)", (M,)), c("np.trace(x, offset=1)", (SQ,)),
        c("np.trace(x, axis1=0, axis2=2)", (T,)), c("x.trace()", (SQ,)),
        c("np.tril(x)", (SQ,)), c("np.tril(x, -1)", (T,)), c("np.triu(x, 1)", (M,)), c("np.tril(x)", (V,)),
        c("np.triu(x, -1)", (V,)),
        c("np.take(x, [0, 2, 2])", (M,)), c("np.take(x, [1, 0], axis=0)", (M,)), c("np.take(x, 2, axis=-1)", (T,)),
        c("x.take([0, -1], axis=1)", (M,)),
        c("np.take_along_axis(x, np.array([[0, 2], [1, 1]]), axis=1)", (M,)),
        c("np.take_along_axis(x, np.argsort(x, axis=0), axis=0)", (M,), "distinct"),
        c("x[0]", (M,)), c("x[:, 1]", (T,)), c("x[..., ::2]", (T,)), c("x[[0, 1, 1]]", (M,)),
        c("x[x > 0]", (M,), "offgrid"), c("x[None, :, 1]", (M,)), c("x[1, [0, 2]]", (M,)), c("x[::-1]", (V,)),
        c("x[np.array([[0, 1], [1, 0]]), 2]", (M,)), c("x[0]", (M,), complex_in=True),
        c("np.sort(x)", (V,), "distinct"), c("np.sort(x, axis=0)", (M,), "distinct"),
        c("np.sort(x, axis=None)", (M,), "distinct"), c("-np.sort(-x, axis=-1)", (T,), "distinct"),
        c("np.partition(x, 1)", (V,), "distinct"), c("np.partition(x, 2, axis=0)", ((4, 3),), "distinct"),
        c("np.array([x[0], x[1] * 2.0])", (V,)), c("np.asarray(x)", (M,)), c("np.array(x, dtype=float)", (M,)),
        c("np.copy(x)", (M,)), c("x.copy()", (M,)), c("x.astype(np.float64)", (M,)), c("np.float64(x)", (S,)),
        c("np.array([[x, y], [y, x]])", (V, V)), c("np.r_[x, y, 1.0]", (V, V)), c("np.c_[x, y]", (V, V)),
        c("np.full_like(x, 2.0) * x", (M,)), c("np.full((2, 3), y) * x", (M, S)),
        c("np.linspace(x, y, 5)", (S, S)), c("np.linspace(x, y, 4, axis=-1)", (V, V)),
        c("np.linspace(0.0, x, 5, endpoint=False)", (S,)),
        c("np.meshgrid(x, y)[0] * np.meshgrid(x, y)[1]", (V, (2,))),
        c("np.meshgrid(x, y, indexing='ij')[1]", (V, (2,))), c("np.vander(x, 3)", (V,)),
        c("np.vander(x, increasing=True)", (V,)),
        c("np.select([x > 0, x < -0.5], [x, x ** 2], default=1.0)", (M,), "offgrid"),
        c("np.bincount(np.array([0, 1, 1, 3]), weights=x)", ((4,),)),
        c("np.ediff1d(x)", (M,)), c("np.diff(x)", (T,)), c("np.diff(x, n=2, axis=0)", ((4, 3),)),
        c("np.diff(x, axis=1, prepend=0.0)", (M,)), c("np.diff(x, append=y)", (V, (1,))),
        c("np.gradient(x)", ((5,),)), c("np.gradient(x, 0.5, axis=1)", ((2, 4),)),
        c("np.gradient(x, axis=0, edge_order=2)", ((4, 3),)), c("np.gradient(x)[1]", ((3, 4),)),
    ]


def products() -> list[Case]:
    c = Case
    return [
        c("np.dot(x, y)", (V, V)), c("np.dot(x, y)", (M, V)), c("np.dot(x, y)", (M, (3, 2))),
        c("np.dot(x, y)", (T, (4, 2))), c("np.dot(x, y)", (S, M)), c("x.dot(y)", (M, V)),
        c("x @ y", (M, (3, 2))), c("x @ y", (T, (4, 2))), c("x @ y", (V, (3, 2))), c("x @ y", (M, V)),
        c("x @ y", ((2, 2, 3), (3, 4))), c("x @ y", ((1, 2, 3), (2, 3, 2))), c("np.matmul(x, y)", (M, (3, 2))),
        c("x @ y", (M, (3, 2)), complex_in=True), c("np.dot(x, y)", (V, V), complex_in=True),
        c("np.vdot(x, y)", (V, V)), c("np.vdot(x, y)", (M, M), complex_in=True), c("np.inner(x, y)", (M, V)),
        c("np.inner(x, y)", (M, (4, 3))), c("np.outer(x, y)", (V, (2,))), c("np.outer(x, y)", (M, V)),
        c("np.kron(x, y)", (M, (2, 2))), c("np.kron(x, y)", (V, V)), c("np.cross(x, y)", (V, V)),
        c("np.cross(x, y)", ((2, 3), V)), c("np.cross(x, y, axis=0)", ((3, 2), (3, 2))),
        c("np.tensordot(x, y)", (T, (3, 4))), c("np.tensordot(x, y, axes=1)", (T, (4, 2))),
        c("np.tensordot(x, y, axes=([0, 2], [0, 1]))", (T, (2, 4))), c("np.tensordot(x, y, axes=0)", (V, (2,))),
        c("np.einsum('ij,jk->ik', x, y)", (M, (3, 2))), c("np.einsum('ii->', x)", (SQ,)),
        c("np.einsum('ij->j', x)", (M,)), c("np.einsum('ijk,ik->j', x, y)", (T, (2, 4))),
        c("np.einsum('i,i', x, y)", (V, V)), c("np.einsum('...j,j->...', x, y)", (T, (4,))),
        c("np.einsum('ij,ij->i', x, y)", (M, M), complex_in=True), c("np.einsum('ii->i', x)", (SQ,)),
        c("np.einsum('ij,kj->ikj', x, y)", (M, M)),
        c("np.linalg.multi_dot([x, y, x.T])", (M, (3, 3))), c("np.trapezoid(x)", (V,)),
        c("np.trapezoid(x, dx=0.5, axis=0)", (M,)), c("np.trapezoid(x, y)", (V, V)),
        c("np.convolve(x, y)", ((4,), (3,))), c("np.convolve(x, y)", (S, V)), c("np.convolve(x, 2.0)", (V,)), c("np.convolve(x, y, mode='same')", ((5,), (3,))),
        c("np.convolve(x, y, mode='valid')", ((5,), (3,))), c("np.correlate(x, y)", ((5,), (3,))),
        c("np.correlate(x, y, mode='full')", ((4,), (3,))), c("np.correlate(x, y, 'same')", ((4,), (2,))),
        c("np.convolve(x, y)", ((4,), (3,)), complex_in=True), c("np.correlate(x, y, 'full')", ((4,), (3,)), complex_in=True),
        c("np.polyval(x, y)", (V, (4,))), c("np.cov(x)", ((3, 5),)), c("np.cov(x, rowvar=False)", ((5, 3),)),
        c("np.cov(x, ddof=0)", ((2, 4),)), c("np.cov(x, bias=True)", ((3, 5),)), c("np.cov(x, y)", ((5,), (5,))),
        c("np.corrcoef(x)", ((3, 5),)), c("np.corrcoef(x, y)", ((5,), (5,))),
        c("signal.convolve(x, y)", ((4,), (3,))), c("signal.correlate(x, y, mode='same')", ((5,), (3,))),
        c("signal.convolve(x, y, mode='valid')", ((3, 4), (2, 2))),
        c("signal.correlate(x, y)", ((4,), (3,)), complex_in=True),
        c("signal.correlate(x, y, mode='same')", ((3, 4), (2, 2)), complex_in=True),
    ]


def linalg() -> list[Case]:
    c = Case
    cases = []
    for ord_ in ("None", "1", "2", "np.inf", "-np.inf", "0.5", "3", "-1"):
        cases.append(c(f"np.linalg.norm(x, ord={ord_})", (V,), "distinct"))
    for ord_ in ("None", "'fro'", "'nuc'", "1", "-1", "2", "-2", "np.inf", "-np.inf"):
        cases.append(c(f"np.linalg.norm(x, ord={ord_})", (M,), "distinct"))
    cases += [c("np.linalg.norm(x)", (T,)), c("np.linalg.norm(x, axis=1)", (M,)),
              c("np.linalg.norm(x, axis=0, keepdims=True)", (M,)), c("np.linalg.norm(x, 1, axis=-1)", (T,), "distinct"),
              c("np.linalg.norm(x, np.inf, axis=0)", (M,), "distinct"), c("np.linalg.norm(x, axis=(1, 2))", (T,)),
              c("np.linalg.norm(x, 'fro', axis=(0, 2), keepdims=True)", (T,)),
              c("np.linalg.norm(x, 'nuc', axis=(1, 2))", (T,)), c("np.linalg.norm(x, 2, axis=(0, 1))", (T,)),
              c("np.linalg.norm(x)", (M,), complex_in=True), c("np.linalg.norm(x, axis=-1)", (M,), complex_in=True),
              c("np.linalg.norm(x, 1)", (V,), complex_in=True),
              c("np.linalg.vector_norm(x)", (T,)), c("np.linalg.vector_norm(x, ord=1, axis=(0, 1))", (T,), "distinct"),
              c("np.linalg.vector_norm(x, axis=-1, keepdims=True)", (M,)),
              c("np.linalg.matrix_norm(x)", (T,)), c("np.linalg.matrix_norm(x, ord='nuc')", (M,)),
              c("np.linalg.matrix_norm(x, ord=2, keepdims=True)", (T,)),
              c("sla.norm(x)", (M,)), c("sla.norm(x, 1)", (V,), "distinct")]
    spd = "(x @ np.swapaxes(x, -1, -2) + 3.0 * np.eye(x.shape[-1]))"
    sym = "(x + np.swapaxes(x, -1, -2))"
    for shape in (SQ, (2, 3, 3)):
        cases += [c("np.linalg.det(x)", (shape,)), c("np.linalg.slogdet(x)[1]", (shape,)),
                  c("np.linalg.slogdet(x)[0] * np.linalg.slogdet(x).logabsdet", (shape,)),
                  c("np.linalg.inv(x)", (shape,)), c("np.linalg.pinv(x)", (shape,)),
                  c(f"np.linalg.cholesky({spd})", (shape,)), c(f"np.linalg.eigh({sym})[0]", (shape,), "distinct"),
                  c(f"np.abs(np.linalg.eigh({sym})[1])", (shape,), "distinct"),
                  c(f"np.linalg.eigh({sym}, UPLO='U')[0]", (shape,), "distinct"),
                  c(f"np.linalg.eigvalsh({sym})", (shape,), "distinct"),
                  c("np.linalg.svd(x, compute_uv=False)", (shape,)), c("np.linalg.svd(x)[1]", (shape,)),
                  c("np.abs(np.linalg.svd(x)[0])", (shape,)), c("np.linalg.matrix_power(x, 3)", (shape,)),
                  c("np.linalg.matrix_power(x, 0)", (shape,)), c("np.linalg.matrix_power(x, -2)", (shape,)),
                  c("np.linalg.solve(x, np.ones(x.shape[:-1] + (2,)))", (shape,)),
                  c("np.linalg.qr(x)[1]", (shape,)), c("np.linalg.qr(x).Q", (shape,)),
                  c(f"np.linalg.eigvals({spd})", (shape,)), c(f"np.linalg.eig({spd})[0]", (shape,))]
    cases += [c("np.linalg.solve(x, y)", (SQ, V)), c("np.linalg.solve(x, y)", (SQ, (3, 2))),
              c("np.linalg.solve(x, y)", ((2, 3, 3), (2, 3, 1))), c("np.linalg.solve(x, y)", (SQ, V), complex_in=True),
              c("np.linalg.inv(x)", (SQ,), complex_in=True), c("np.linalg.det(x)", (SQ,), complex_in=True),
              c("np.linalg.svd(x, full_matrices=False)[2]", ((3, 2),)),
              c("np.abs(np.linalg.svd(x, full_matrices=False)[0])", ((4, 2),)),
              c("np.linalg.svd(x)[1]", ((2, 4),)), c("np.linalg.svd(x, compute_uv=False)", ((4, 2),)),
              c("np.linalg.pinv(x)", ((4, 2),)), c("np.linalg.pinv(x)", ((2, 4),)),
              c("np.linalg.qr(x)[0]", ((4, 3),)), c("np.linalg.qr(x, mode='r')", ((4, 3),)),
              c("np.linalg.qr(x, mode='complete')[1]", ((4, 3),)), c("np.linalg.qr(x)[1]", ((3, 4),)),
              c("np.linalg.lstsq(x, y, rcond=None)[0]", ((4, 2), (4,))),
              c("np.linalg.lstsq(x, y)[0]", ((4, 2), (4, 2))),
              c("np.linalg.tensorsolve(x, y)", ((2, 3, 6), M)),
              c("np.linalg.matrix_power(x, 1)", (SQ,)), c("np.linalg.matrix_power(x, -1)", (SQ,)),
              c("np.linalg.cholesky(x @ x.T + 3.0 * np.eye(3), upper=True)", (SQ,)),
              c("np.linalg.trace(x)", (T,)), c("np.linalg.diagonal(x, offset=1)", (SQ,)),
              c("np.linalg.matmul(x, y)", (M, (3, 2))), c("np.linalg.outer(x, y)", (V, V)),
              c("np.linalg.tensordot(x, y, axes=2)", (T, (3, 4))),
              c("sla.det(x)", (SQ,)), c("sla.inv(x)", (SQ,)), c("sla.solve(x, y)", (SQ, V)),
              c("sla.solve(x, y, assume_a='pos')", (SQ, V)) if False else c("sla.solve(x @ x.T + 3.0 * np.eye(3), y, assume_a='pos')", (SQ, V)),
              c("sla.solve_triangular(np.triu(x) + 3.0 * np.eye(3), y)", (SQ, V)),
              c("sla.solve_triangular(np.tril(x) + 3.0 * np.eye(3), y, lower=True, trans='T')", (SQ, (3, 2))),
              c(f"sla.cholesky({spd})", (SQ,)), c(f"sla.cholesky({spd}, lower=True)", (SQ,)),
              c(f"sla.cho_solve(sla.cho_factor({spd}), y)", (SQ, V)),
              c(f"sla.cho_solve((sla.cholesky({spd}, lower=True), True), y)", (SQ, V)),
              c(f"sla.eigh({sym})[0]", (SQ,), "distinct"), c(f"sla.eigvalsh({sym})", (SQ,), "distinct"),
              c("sla.expm(x)", (SQ,)), c("sla.expm(0.3 * x)", ((2, 3, 3),)),
              c(f"sla.sqrtm({spd})", (SQ,)), c("sla.pinv(x)", ((4, 2),)),
              c("sla.solve_sylvester(x + 3.0 * np.eye(3), x.T + 3.0 * np.eye(3), y)", (SQ, SQ))]
    return cases


def ffts() -> list[Case]:
    c = Case
    cases = []
    for fun in ("fft", "ifft"):
        for extra in ("", ", n=5", ", n=3", ", axis=0", ", norm='ortho'", ", norm='forward'"):
            cases.append(c(f"np.fft.{fun}(x{extra})", (M if "axis" in extra else (4,),), complex_in=True))
        cases.append(c(f"np.fft.{fun}(x)", (M,)))
    for fun in ("fft2", "ifft2", "fftn", "ifftn"):
        for extra in ("", ", s=(3, 5)", ", axes=(0, 2)", ", norm='ortho'"):
            cases.append(c(f"np.fft.{fun}(x{extra})", (T,), complex_in=True))
    for fun in ("rfft", "rfftn", "rfft2"):
        for extra in ("", ", norm='ortho'", ", axis=0" if fun == "rfft" else ", axes=(0, 1)"):
            cases.append(c(f"np.fft.{fun}(x{extra})", (T,)))
    cases += [c("np.fft.rfft(x, n=6)", ((4,),)), c("np.fft.rfft(x, n=3)", ((5,),)),
              c("np.fft.irfft(x)", ((4,),), complex_in=True), c("np.fft.irfft(x, n=7)", ((4,),), complex_in=True),
              c("np.fft.irfft(x, axis=0)", (M,), complex_in=True), c("np.fft.irfft(x, norm='ortho')", (M,), complex_in=True),
              c("np.fft.irfft2(x)", (T,), complex_in=True), c("np.fft.irfftn(x, s=(2, 3, 6))", (T,), complex_in=True),
              c("np.fft.irfft(x)", ((4,),)), c("np.fft.hfft(x)", ((4,),), complex_in=True),
              c("np.fft.hfft(x, n=5, norm='forward')", ((4,),), complex_in=True),
              c("np.fft.ihfft(x)", ((5,),)), c("np.fft.ihfft(x, n=4, axis=0)", ((5, 2),)),
              c("np.fft.fftshift(x)", (T,)), c("np.fft.fftshift(x, axes=1)", (M,), complex_in=True),
              c("np.fft.ifftshift(x, axes=(0, 2))", (T,)),
              c("np.abs(np.fft.fft(x)) ** 2", ((4,),)), c("np.fft.ifft(np.fft.fft(x) * y)", ((4,), (4,)))]
    return cases


def scipy_functions() -> list[Case]:
    c = Case
    return [
        c("special.logsumexp(x, b=y)", (V, V), "positive"), c("special.logsumexp(x, axis=0, b=y)", (M, M), "positive"),
        c("special.softmax(x)", (V,)), c("special.softmax(x, axis=0)", (M,)), c("special.log_softmax(x, axis=-1)", (T,)),
        c("special.xlog1py(x, y)", (M, V), "positive"), c("special.rel_entr(x, y)", (M, M), "positive"),
        c("special.kl_div(x, y)", (V, V), "positive"), c("special.polygamma(1, x)", (M,), "positive"),
        c("special.gammainc(2.0, x)", (V,), "positive"), c("special.gammaincc(x, 1.5)", (V,), "positive"),
        c("special.multigammaln(x, 2)", (V,), "above1"), c("special.iv(1.5, x)", (V,), "positive"),
        c("special.jv(x, 1.3)", (V,), "positive"),
        c("stats.norm.logpdf(x)", (M,)), c("stats.norm.logpdf(x, y, 2.0)", (M, V)),
        c("stats.norm.pdf(x, loc=0.5, scale=y)", (M, V), "positive"), c("stats.norm.cdf(x, scale=2.0)", (M,)),
        c("stats.norm.logcdf(x)", (V,)), c("stats.norm.sf(x, 1.0)", (V,)), c("stats.norm.ppf(x)", (V,), "prob"),
        c("stats.t.logpdf(x, 4.0)", (V,)), c("stats.t.cdf(x, df=3.0, loc=0.1)", (V,)),
        c("stats.gamma.logpdf(x, 2.0)", (V,), "positive"), c("stats.gamma.logpdf(x, a=y, scale=1.5)", (V, V), "positive"),
        c("stats.beta.logpdf(x, 2.0, 3.0)", (V,), "prob"), c("stats.beta.logpdf(0.4, x, y)", (V, V), "positive"),
        c("stats.expon.logpdf(x, scale=2.0)", (V,), "positive"), c("stats.laplace.logpdf(x, y)", (V, V), "offgrid"),
        c("stats.logistic.cdf(x)", (V,)), c("stats.cauchy.logpdf(x, 0.5, 2.0)", (V,)),
        c("stats.lognorm.logpdf(x, 0.7)", (V,), "positive"), c("stats.poisson.logpmf(3, x)", (V,), "positive"),
        c("stats.binom.logpmf(2, 5, x)", (V,), "prob"), c("stats.bernoulli.logpmf(1, x)", (V,), "prob"),
        c("stats.dirichlet.logpdf(np.array([0.2, 0.3, 0.5]), x)", (V,), "positive"),
        c("stats.multivariate_normal.logpdf(x, np.zeros(3), np.eye(3))", (M,)),
        c("stats.multivariate_normal.logpdf(x, y, 2.0 * np.eye(3))", (V, V)),
    ]


def unregistered() -> list[Case]:
    """Common functions without a rule (or spellings of those with one): refused or right."""
    c = Case
    return [
        c("np.cumulative_sum(x)", (V,)), c("np.cumulative_sum(x, axis=1, include_initial=True)", (M,)),
        c("np.cumulative_prod(x, axis=0)", (M,), "positive"), c("np.vecdot(x, y)", (M, M)),
        c("np.linalg.vecdot(x, y)", (M, V)), c("np.matvec(x, y)", (M, V)), c("np.vecmat(x, y)", ((2,), M)),
        c("np.linalg.cross(x, y)", (V, V)), c("np.linalg.svdvals(x)", (M,)), c("np.linalg.cond(x)", (SQ,)),
        c("np.linalg.matrix_rank(x) * x", (SQ,)), c("np.linalg.eigvals(x)", (SQ,)),
        c("np.logspace(0.0, x, 4)", (S,)), c("np.geomspace(1.0, x, 4)", (S,), "positive"),
        c("np.unique(x)", (V,), "distinct"), c("np.sort_complex(x)", (V,), "distinct"),
        c("np.histogram(x, bins=3, weights=x)[0]", ((5,),), "distinct"), c("np.unwrap(x)", (V,)),
        c("np.i0(x)", (V,)), c("np.spacing(x) + x", (V,)), c("np.nextafter(x, 1.0)", (V,)),
        c("np.frexp(x)[0]", (V,)), c("np.resize(x, (2, 3))", (V,)), c("np.delete(x, 1)", (V,)),
        c("np.insert(x, 1, 5.0)", (V,)), c("np.compress([True, False, True], x)", (V,)),
        c("np.extract(x > 0, x)", (V,), "offgrid"), c("np.choose([0, 1, 0], [x, y])", (V, V)),
        c("np.polyfit(np.arange(3.0), x, 1)", (V,)), c("np.polyder(x)", (V,)), c("np.polyint(x)", (V,)),
        c("np.polymul(x, y)", (V, V)), c("np.poly(x)", (V,)), c("np.roots(x)", (V,)),
        c("np.trim_zeros(x)", (V,)), c("np.histogram2d(x, y)[0]", (V, V)),
        c("np.apply_along_axis(np.sum, 0, x)", (M,)), c("np.vectorize(np.sin)(x)", (V,)),
        c("np.piecewise(x, [x > 0], [1.0, 0.0]) * x", (V,), "offgrid"), c("np.fromiter(x, float)", (V,)),
        c("np.asarray(x, dtype=np.float32)", (V,)), c("np.asarray(x, dtype=int)", (V,)),
        c("x.astype(np.complex128)", (V,)), c("np.float32(x)", (S,)),
        c("np.nanargmax(x) * x", (V,)), c("np.argmax(x) * x", (V,)), c("np.max(x, axis=0, initial=0.5)", (M,), "distinct"),
        c("np.sum(x, where=x > 0)", (V,), "offgrid"), c("np.mean(x, axis=1, where=np.array([True, False, True]))", (M,)),
        c("np.prod(x, initial=2.0)", (V,), "positive"), c("np.sum(x, initial=1.0)", (V,)),
        c("np.maximum.outer(x, y)", (V, V)), c("np.add.reduceat(x, [0, 2])", (V,)),
        c("np.multiply.outer(x, y)", (V, V)), c("np.subtract.outer(x, y)", (V, (2,))),
        c("np.add.outer(x, y)", (M, V)), c("np.logaddexp.accumulate(x)", (V,)),
        c("np.ma.masked_array(x).sum()", (V,)), c("np.matrix_transpose(x)", (T,)),
        c("np.permute_dims(x, (2, 0, 1))", (T,)), c("np.concat([x, y], axis=0)", (M, M)),
        c("np.pow(x, y)", (V, V), "positive"), c("np.atan2(x, y)", (V, V), "positive"),
        c("np.astype(x, np.float64)", (V,)), c("np.trapezoid(x, dx=y)", (V, S)),
        c("np.isclose(x, y) * x", (V, V)), c("np.count_nonzero(x > 0) * x", (V,), "offgrid"),
        c("np.average(x, axis=0, weights=y, returned=True)[0]", (M, M), "positive"),
        c("np.average(x, axis=(0, 1), keepdims=True)", (T,)),
        c("np.sum(x, axis=0, dtype=np.float64)", (M,)), 
        c("np.cumsum(x, dtype=float)", (V,)), c("np.std(x, correction=1)", (V,)),
        c("np.var(x, mean=np.mean(x))", (V,)), c("np.quantile(x, 0.3, method='nearest')", ((5,),), "distinct"),
        c("np.quantile(x, 0.3, method='lower')", ((5,),), "distinct"),
        c("np.quantile(x, y, axis=0)", ((5,), S), "prob"), c("np.sort(x, kind='stable')", (V,), "distinct"),
        c("np.sort(x, axis=-1)", (V,), "distinct", complex_in=True), c("np.max(x)", (V,), complex_in=True),
        c("np.var(x)", (V,), complex_in=True), 
        c("np.median(x)", (V,), complex_in=True), c("np.maximum(x, y)", (V, V), complex_in=True),
        c("np.clip(x, 0.0, 1.0)", (V,), complex_in=True), c("np.linalg.eigh(x)[0]", (SQ,), complex_in=True),
        c("np.linalg.svd(x)[1]", (SQ,), complex_in=True), c("np.linalg.qr(x)[1]", (SQ,), complex_in=True),
        c("np.cross(x, y)", (V, V), complex_in=True), c("np.outer(x, y)", (V, V), complex_in=True),
        c("np.kron(x, y)", (V, V), complex_in=True), c("np.tensordot(x, y, axes=1)", (M, V), complex_in=True),
        c("np.trace(x)", (SQ,), complex_in=True), c("np.diff(x)", (V,), complex_in=True),
        c("np.roll(x, 1)", (V,), complex_in=True), c("np.pad(x, 1)", (V,), complex_in=True),
        c("np.concatenate([x, y])", (V, V), complex_in=True), c("np.stack([x, y], axis=1)", (V, V), complex_in=True),
        c("np.where(np.real(x) > 0, x, y)", (V, V), complex_in=True), c("np.tile(x, 2)", (V,), complex_in=True),
        c("np.repeat(x, 2)", (V,), complex_in=True), c("np.flip(x)", (M,), complex_in=True),
        c("np.linalg.pinv(x)", (SQ,), complex_in=True), c("np.linalg.slogdet(x)[1]", (SQ,), complex_in=True),
        c("np.linalg.matrix_power(x, 2)", (SQ,), complex_in=True), c("np.einsum('ij,jk', x, y)", (M, (3, 2)), complex_in=True),
        c("np.interp(0.3, np.array([-2.0, 0.0, 2.0]), x)", (V,), complex_in=True),
        c("np.cumprod(x)", (V,), complex_in=True), c("np.std(x)", (V,), complex_in=True),
        c("np.linalg.norm(x, 2)", (M,), complex_in=True), c("np.linalg.norm(x, np.inf)", (V,), complex_in=True),
        c("np.average(x, weights=y)", (V, V), complex_in=True), c("np.gradient(x)", ((4,),), complex_in=True),
        c("np.polyval(x, y)", (V, V), complex_in=True), c("np.vander(x, 3)", (V,), complex_in=True),
        c("np.trapezoid(x)", (V,), complex_in=True), c("np.cov(x)", ((2, 4),), complex_in=True),
        c("np.convolve(x, y, mode='valid')", ((4,), (2,)), complex_in=True),
        c("np.linspace(x, y, 4)", (S, S), complex_in=True), c("special.logsumexp(x)", (V,), complex_in=True),
        c("np.real_if_close(x)", (V,), complex_in=True),
        c("np.square(x)", (V,), complex_in=True), c("np.reciprocal(x)", (V,), "positive", complex_in=True),
        c("np.log10(x)", (V,), "positive", complex_in=True), c("np.power(x, 2.5)", (V,), "positive", complex_in=True),
        c("np.power(2.0, x)", (V,), complex_in=True), c("x ** y", (V, V), "positive", complex_in=True),
        c("np.linalg.det(x)", ((2, 3, 3),), complex_in=True), c("np.dot(x, y)", (M, V), complex_in=True),
        c("np.sign(x)", (M,), complex_in=True), c("np.sign(x) * x", (S,), complex_in=True),
        c("sla.eigvalsh(x)", (SQ,), complex_in=True), c("sla.eigh(x, eigvals_only=True)", (SQ,), complex_in=True),
    ]


def edges() -> list[Case]:
    """Zeros in products, Python floats, float32 inputs, method spellings with positional
    arguments, and keyword combinations the tables above leave out."""
    c = Case
    cases = [c(f"{fun}(x{axis})", (shape,), "zeros") for fun in ("np.prod", "np.cumprod", "np.nanprod")
             for shape in (V, M, T) for axis in ("", ", axis=0", ", axis=-1")]
    cases += [c("np.prod(x, axis=(0, 2), keepdims=True)", (T,), "zeros"), c("x.prod(1)", (M,), "zeros"),
              c("np.multiply.reduce(x, axis=1)", (M,), "zeros"), c("np.multiply.accumulate(x)", (V,), "zeros"),
              c("np.prod(x)", (M,), "zeros", complex_in=True), c("np.cumprod(x, axis=1)", (M,), "zeros", complex_in=True),
              c("np.prod(np.zeros(3) + x)", (V,), "positive"), c("np.linalg.det(x * np.array([1.0, 1.0, 0.0]))", (SQ,))]
    unary = [fun for fun, _, _ in UNARY if fun.startswith("np.") and fun not in ("np.real_if_close",)]
    domains = {fun: domain for fun, domain, _ in UNARY}
    cases += [c(f"{fun}(x)", (F,), domains[fun]) for fun in unary]
    cases += [c(f"{fun}(x)", (F,), "positive" if domains[fun] != "real" else "real", complex_in=True)
              for fun, _, takes_complex in UNARY if takes_complex]
    cases += [c(f"{fun}(x)", (M,), domains[fun], dtype="float32") for fun in unary]
    cases += [c(expr, shapes, domain, dtype="float32") for expr, shapes, domain in (
        ("np.sum(x, axis=0)", (M,), "real"), ("np.std(x, axis=-1, ddof=1)", (T,), "real"),
        ("np.max(x, axis=1)", (M,), "distinct"), ("np.prod(x)", (V,), "zeros"), ("x @ y", (M, (3, 2)), "real"),
        ("np.linalg.inv(x)", (SQ,), "real"), ("np.linalg.norm(x, axis=0)", (M,), "real"),
        ("np.cumsum(x, axis=1)", (M,), "real"), ("special.logsumexp(x, axis=0)", (M,), "real"),
        ("np.fft.rfft(x)", ((4,),), "real"), ("np.where(x > 0, x, y)", (M, M), "offgrid"),
        ("np.concatenate([x, y])", (V, V), "real"), ("np.einsum('ij,j->i', x, y)", (M, V), "real"),
        ("x * y", (M, V), "real"), ("np.linalg.det(x)", (SQ,), "real"), ("np.sort(x)", (V,), "distinct"))]
    cases += [c(*row) for row in (
        ("x * y", (F, M), "real"), ("np.sum(x) * y", (M, F), "real"), ("np.maximum(x, y)", (F, V), "distinct"),
        ("np.power(x, y)", (F, F), "positive"), ("np.arctan2(x, y)", (F, V), "positive"),
        ("np.linspace(x, y, 3)", (F, F), "real"), ("np.full(3, x) * y", (F, V), "real"),
        ("np.array([x, y, x * y])", (F, F), "real"), ("np.stack([x, y])", (F, F), "real"),
        ("np.clip(y, x, 1.0)", (F, V), "offgrid"), ("np.where(y > 0, x, y)", (F, V), "offgrid"),
        ("x.sum(0, keepdims=True)", (M,), "real"), ("x.max(1, keepdims=True)", (M,), "distinct"),
        ("x.std(0, ddof=1)", (M,), "real"), ("x.var(axis=None, ddof=1)", (T,), "real"),
        ("x.mean((0, 2))", (T,), "real"), ("x.cumsum()", (M,), "real"), ("x.cumprod()", (M,), "positive"),
        ("x.min(axis=(1, 2), keepdims=True)", (T,), "distinct"), ("x.reshape((3, 2)).T", (M,), "real"),
        ("x.swapaxes(0, 1)", (M,), "real"), ("x.squeeze()", ((1, 3),), "real"), ("x.flatten('F')", (M,), "real"),
        ("x.item(1) * x", (V,), "real"), ("np.sum(x.tolist()) * x", (V,), "real"),
        ("np.max(x, axis=(0, 2), keepdims=True)", (T,), "distinct"), ("np.ptp(x, axis=(0, 1))", (T,), "distinct"),
        ("np.cumsum(x, axis=None)", (M,), "real"), ("np.cumsum(x)", (M,), "real", ) ,
        ("np.sum(x, axis=-2)", (T,), "real"), ("np.mean(x, axis=(-1, 0))", (T,), "real"),
        ("np.var(x, axis=(0, 1), ddof=2)", (T,), "real"), ("np.std(x, axis=(1, 2), keepdims=True)", (T,), "real"),
        ("special.logsumexp(x, axis=(0, 2))", (T,), "real"), ("special.logsumexp(x, axis=1, keepdims=True)", (T,), "real"),
        ("special.logsumexp(x, b=np.array([1.0, -0.5, 2.0]))", (V,), "real"),
        ("special.logsumexp(x, return_sign=True)[0]", (V,), "real"),
        ("special.softmax(x, axis=(0, 1))", (T,), "real"),
        ("np.linalg.norm(x, -2)", (V,), "positive"), ("np.linalg.norm(x, 0) * x", (V,), "positive"),
        ("np.linalg.norm(x, 2, axis=(1, 2), keepdims=True)", (T,), "real"),
        ("np.linalg.norm(x, -2, axis=(1, 2))", (T,), "real"), ("np.linalg.norm(x, 'nuc', keepdims=True)", (M,), "real"),
        ("np.linalg.norm(x, 1, axis=(0, 1))", (M,), "distinct"), ("np.linalg.norm(x, -np.inf, axis=(2, 1))", (T,), "distinct"),
        ("np.linalg.norm(x, ord=3, axis=0, keepdims=True)", (M,), "real"),
        ("np.einsum('...ij,...jk->...ik', x, y)", (T, (4, 2)), "real"), ("np.einsum('ij,jk->ki', x, y, optimize=True)", (M, (3, 2)), "real"),
        ("np.einsum(x, [0, 1], y, [1], [0])", (M, V), "real"), ("np.einsum('i,j->ij', x, y)", (V, V), "real"),
        ("np.einsum('ijk->kji', x)", (T,), "real"), ("np.einsum('ij,ij', x, x)", (M,), "real"),
        ("np.tensordot(x, y, axes=([-1], [0]))", (T, (4,)), "real"), ("np.tensordot(x, y, axes=[[1, 0], [0, 1]])", (M, (3, 2)), "real"),
        ("np.take(x, [0, 4], mode='wrap')", (V,), "real"), ("np.take(x, [0, 7], axis=1, mode='clip')", (M,), "real"),
        ("np.roll(x, 7)", (V,), "real"), ("np.roll(x, -4, axis=-2)", (T,), "real"),
        ("np.repeat(x, np.array([2, 1, 0]))", (V,), "real"), ("np.repeat(x, 2, axis=None)", (M,), "real"),
        ("np.diff(x, axis=0, prepend=y)", (M, (1, 3)), "real"), ("np.diff(x, n=3)", ((5,),), "real"),
        ("np.pad(x, ((0, 1), (2, 0)), mode='reflect')", (M,), "real"),
        ("np.pad(x, 2, mode='reflect', reflect_type='odd')", (V,), "real"), ("np.pad(x, (1, 2), 'edge')", (M,), "real"),
        ("np.linspace(x, y, 1)", (S, S), "real"), ("np.linspace(x, y, 4, retstep=True)[1]", (S, S), "real"),
        ("np.linspace(x, y, 3)", (V, V), "real"), ("np.linspace(x, 1.0, 4, endpoint=False, axis=0)", (V,), "real"),
        ("np.clip(x, None, 0.5)", (M,), "offgrid"), ("x.clip(None, y)", (M, V), "offgrid"),
        ("np.clip(x, y, None)", (M, S), "offgrid"), ("np.clip(x, a_min=-0.4, a_max=y)", (M, V), "offgrid"),
        ("np.where(x > 0, 1.0, x)", (M,), "offgrid"), ("np.where(x > 0, x, y)", (M, S), "offgrid"),
        ("np.where(x > 0.2, y, x)", (V, M), "offgrid"),
        ("x[..., None] * y", (M, (4, 1, 1, 1)), "real"), ("x[::-1, ::2]", (T,), "real"),
        ("x[np.array([[True, False, True], [False, True, True]])]", (M,), "real"),
        ("x[[0, 1], [1, 2]]", (M,), "real"), ("x[:, [0, 0, 2]]", (M,), "real"), ("x[1:, None, -1]", (M,), "real"),
        ("x[-1, ..., 1:3]", (T,), "real"), ("x[np.array([0, 0, 1]), :, np.array([3, 3, 0])]", (T,), "real"),
        ("x[:, np.array([True, False, True])]", (M,), "real"), ("x[x[:, 0] > 0]", (M,), "offgrid"),
        ("np.sort(x)[::-1]", (V,), "distinct"), ("np.sort(x, axis=0)[:, ::-1]", (T,), "distinct"),
        ("np.partition(x, (0, 2))", ((4,),), "distinct"), ("np.partition(x, -1, axis=-1)", (T,), "distinct"),
        ("np.median(x, axis=-1, keepdims=True)", ((2, 4),), "distinct"), ("np.percentile(x, 50.0, axis=(0, 1))", (T,), "distinct"),
        ("np.quantile(x, np.array([0.1, 0.9]), axis=1, keepdims=True)", (T,), "distinct"),
        ("np.quantile(x, 0.25, method='midpoint')", ((5,),), "distinct"),
        ("np.trace(x, offset=-1, axis1=2, axis2=0)", (T,), "real"), ("np.diagonal(x, -1, 0, 2)", (T,), "real"),
        ("np.tril(x, 1)", (M,), "real"), ("np.triu(x, -1)", (T,), "real"),
        ("np.cross(x, y, axisa=0, axisb=-1)", ((3, 2), (2, 3)), "real"), ("np.cross(x, y)", ((2, 2), (2, 2)), "real"),
        ("np.cross(x, y)", ((2, 2), (2, 3)), "real"),
        ("np.kron(x, y)", (T, M), "real"), ("np.outer(x, y)", (T, V), "real"), ("np.inner(x, y)", (T, (5, 4)), "real"),
        ("np.dot(x, y)", (V, M[::-1]), "real"), ("np.vdot(x, y)", (T, T), "real"),
        ("np.convolve(x, y)", ((2,), (5,)), "real"), ("np.convolve(x, y, mode='same')", ((2,), (5,)), "real"),
        ("np.correlate(x, y, mode='valid')", ((2,), (4,)), "real"),
        ("np.interp(x, y, np.array([1.0, 2.0, 0.0]))", (V, V), "distinct"),
        ("np.interp(x, np.array([0.0, 1.0]), np.array([1.0, 2.0]), left=y, right=3.0)", ((4,), S), "real"),
        ("np.interp(x, np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.0, 1.0]), period=2.0)", ((4,),), "offgrid"),
        ("np.average(x, axis=1, weights=y)", (T, (3,)), "positive"),
        ("np.average(x, axis=(0, 2), weights=y)", (T, (2, 4)), "positive"),
        ("np.average(x, axis=(2, 0), weights=y, returned=True)[1]", (T, (4, 2)), "positive"),
        ("np.average(x, axis=(-1, 0), weights=y, keepdims=True)", (T, (4, 2)), "positive"),
        ("np.average(x, weights=y, keepdims=True)", (M, M), "positive"),
        ("np.gradient(x, 0.5, 2.0)", (M,), "real"), ("np.gradient(x, y)", ((4,), (4,)), "distinct"),
        ("np.gradient(x, np.array([0.0, 1.0, 3.0, 4.5]))", ((4,),), "real"),
        ("np.cov(x, y, rowvar=False)", ((4, 2), (4, 2)), "real"), ("np.cov(x, aweights=np.array([1.0, 2.0, 1.0, 3.0]))", ((2, 4),), "real"),
        ("np.cov(x, fweights=np.array([1, 2, 1, 3]))", ((2, 4),), "real"), ("np.corrcoef(x, rowvar=False)", ((4, 3),), "real"),
        ("np.polyval(x, 2.0)", (V,), "real"), ("np.polyval(x, y)", ((2, 1), V), "real"),
        ("np.polyval(x, y)", ((3, 2, 1), (2, 4)), "real"), ("np.polyval(np.array([1.0, -2.0, 0.5]), x)", (M,), "real"),
        ("np.vander(x, 4, increasing=True)", (V,), "real"), ("np.bincount(np.array([2, 0, 2]), x, minlength=5)", (V,), "real"),
        ("np.ediff1d(x, to_begin=y, to_end=1.0)", (V, (2,)), "real"),
        ("np.nan_to_num(np.log(x))", (V,), "real"), ("np.nan_to_num(x, nan=1.0, posinf=2.0)", (V,), "real"),
        ("np.select([x > 0.5, x > -0.5], [x, -x])", (M,), "offgrid"), ("np.select([x > 0], [y], default=x)", (M, V), "offgrid"),
        ("np.meshgrid(x, y, sparse=True)[1]", (V, (2,)), "real"), ("np.meshgrid(x, y, x)[2]", (V, (2,)), "real"),
        ("np.block([x, y])", (V, (2,)), "real"), ("np.block([[x], [y]])", (M, M), "real"),
        ("np.broadcast_to(x, (2, 3, 3))", (V,), "real"), ("np.broadcast_to(x, (2, 3))", (S,), "real"),
        ("np.atleast_2d(x, y)[1]", (S, V), "real"), ("np.expand_dims(x, -1)", (S,), "real"),
        ("np.stack([x, y], axis=-2)", (T, T), "real"), ("np.concatenate([x, y], axis=-2)", (T, T), "real"),
        ("np.split(x, 2, axis=-1)[1]", (T,), "real"), ("np.array_split(x, [1], axis=0)[0]", (T,), "real"),
        ("np.array_split(x, 4)[3]", ((5,),), "real"), ("np.hstack([x, y])", (S, S), "real"),
        ("np.vstack([x, y])", (S, S), "real"), ("np.column_stack([x])", (V,), "real"),
        ("np.fmax(x, np.nan)", (V,), "real"), ("np.fmin(x, y)", (V, S), "distinct"),
        ("np.maximum(x, x)", (V,), "real"), ("np.minimum(x, 0.0)", (M,), "offgrid"),
        ("np.hypot(x, 3.0)", (V,), "real"), ("np.arctan2(1.0, x)", (V,), "positive"),
        ("np.logaddexp(x, -np.inf)", (V,), "real"), ("special.logsumexp(np.array([x[0], -np.inf]))", (V,), "real"),
        ("np.power(x, 2)", (V,), "real"), ("np.power(x, 3)", (V,), "real"), ("np.power(x, 0)", (V,), "real"),
        ("np.power(x, y)", (V, S), "positive"), ("np.float_power(x, 2)", (V,), "real"),
        ("x ** 2.0", (V,), "real"), ("(-x) ** 3", (V,), "positive"), ("x ** y", (F, F), "positive"),
        ("abs(x)", (V,), "offgrid"), ("abs(x)", (F,), "offgrid"), ("abs(x)", (V,), "real", True),
        ("max(x, y)", (F, F), "distinct"), ("min(x[0], x[1])", (V,), "distinct"), ("sum(x)", (M,), "real"),
        ("pow(x, 3)", (F,), "real"), ("float(x) * x", (S,), "real"), ("np.mod(x, 1.0)", (V,), "offgrid"),
        ("np.sinc(x)", (V,), "offgrid", True), ("np.sqrt(np.sum(x ** 2))", (V,), "real"),
    )]
    return cases


def catalogue() -> list[Case]:
    cases = edges() + reductions() + elementwise() + shaping() + products() + linalg() + ffts() + scipy_functions() + unregistered()
    return list({case.id: case for case in cases}.values())
