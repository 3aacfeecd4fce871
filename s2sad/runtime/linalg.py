"""Gradients and tangents of np.linalg: norms, factorizations (Cholesky, eigh, QR, SVD),
solve, pinv, slogdet, lstsq, and the covariances of scipy.stats."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import S2SADError
from .broadcast import reduce_to
from .elementwise import safe_divide
from .foreign import computed_by_numpy, in_numpy, refuse_different
from .reductions import expand_reduced, list_as_array
from .stepping import real_only, stepping


def _t(m: Any) -> Any:
    """The matrix transpose of a stack of matrices (the last two axes swapped)."""
    return np.swapaxes(m, -1, -2)


def _share(mask: Any, axis: Any, dtype: Any) -> Any:
    """Weights that share 1 equally among the True entries of ``mask`` along ``axis``."""
    weights = np.asarray(mask, dtype=dtype)
    return weights / np.sum(weights, axis=axis, keepdims=True)


def norm_grad(g: Any, x: Any, ans: Any, ord: Any = None, axis: Any = None,
              keepdims: bool = False, vector: bool = False) -> Any:
    """Gradient of ``np.linalg.norm(x, ord, axis, keepdims)``; ties share, 0 where the norm is 0.
    ``vector``: a vector norm over every axis of ``axis`` (``np.linalg.vector_norm``'s), also two.

    Written with |x| as x sign(re x), so that a complex step (step_jvp) differentiates it."""
    real_only("np.linalg.norm", x)
    x = list_as_array(x)
    ndim = np.ndim(x)
    axes = tuple(range(ndim)) if axis is None else tuple(int(a) % ndim for a in np.atleast_1d(axis))
    g = expand_reduced(g, ndim, axes, keepdims)
    ans = expand_reduced(ans, ndim, axes, keepdims)
    dtype = np.result_type(g, x)
    sign = np.sign(np.real(x))
    if vector or len(axes) != 2 or ord in (None, "fro"):  # vector norms, and the Frobenius norm
        if ord is None or ord == "fro" or ord == 2:
            return g * safe_divide(x, ans)
        if ord in (np.inf, -np.inf):
            return g * sign * _share(np.real(x * sign) == np.real(ans), axes, dtype)
        if ord == 0:
            return g * np.zeros_like(x)
        return g * sign * safe_divide((x * sign) ** (ord - 1), ans ** (ord - 1))
    xm, gm = np.moveaxis(x, axes, (-2, -1)), np.moveaxis(g, axes, (-2, -1))
    if ord in (1, -1, np.inf, -np.inf):  # the largest (smallest) column or row sum of |x|
        summed = -2 if ord in (1, -1) else -1
        sums = np.real(np.sum(xm * np.sign(np.real(xm)), axis=summed, keepdims=True))
        best = (np.max if ord > 0 else np.min)(sums, axis=-1 if summed == -2 else -2, keepdims=True)
        grad = gm * np.sign(np.real(xm)) * _share(sums == best, -1 if summed == -2 else -2, dtype)
    else:
        if np.iscomplexobj(xm):
            raise S2SADError(f"s2sad differentiates np.linalg.norm of a matrix with ord={ord!r} "
                             f"once, not twice; for second derivatives write it with the singular "
                             f"values of np.linalg.svd(x) (compute_uv=True)")
        u, _, vt = np.linalg.svd(xm, full_matrices=False)
        if ord == "nuc":
            grad = gm * (u @ vt)
        else:  # 2 or -2: the largest or smallest singular value
            k = 0 if ord == 2 else -1
            grad = gm * (u[..., :, [k]] @ vt[..., [k], :])
    return np.moveaxis(grad, (-2, -1), axes)


def triangle_grad(m: Any, lower: bool) -> Any:
    """The gradient ``m`` of a function of a symmetric matrix, moved to the triangle it reads
    (the transpose of :func:`read_triangle`)."""
    both = m + _t(m)
    return (np.tril(both, -1) if lower else np.triu(both, 1)) + np.triu(np.tril(m))


def _read_symmetric(t: Any, lower: bool) -> Any:
    """The symmetric matrix a function reading one triangle of its input sees of ``t``."""
    if lower:
        return np.tril(t) + _t(np.tril(t, -1))
    return np.triu(t) + _t(np.triu(t, 1))


def cholesky_grad(g: Any, ans: Any, upper: bool = False) -> Any:
    """Gradient of ``np.linalg.cholesky`` (Murray 2016), on the triangle of the input NumPy reads."""
    real_only("np.linalg.cholesky", ans)
    if not upper:
        refuse_different("np.linalg.cholesky", ans)
    low, g = (_t(ans), _t(g)) if upper else (ans, g)
    phi = np.tril(_t(low) @ g)
    phi = phi - 0.5 * np.triu(phi)  # the diagonal halved
    inner = _t(np.linalg.solve(_t(low), _t(np.linalg.solve(_t(low), phi))))  # L^-T phi L^-1
    return triangle_grad(inner, not upper)


def cholesky_jvp(t: Any, ans: Any, upper: bool = False) -> Any:
    """Tangent of ``np.linalg.cholesky``, from the triangle of t NumPy reads: L phi(L^-1 S L^-T)."""
    real_only("np.linalg.cholesky", ans)
    if not upper:
        refuse_different("np.linalg.cholesky", ans)
    low = _t(ans) if upper else ans
    inner = np.linalg.solve(low, _t(np.linalg.solve(low, _read_symmetric(t, not upper))))
    phi = np.tril(inner) - 0.5 * np.triu(np.tril(inner))  # the lower triangle, diagonal halved
    out = low @ phi
    return _t(out) if upper else out


def eigh_grad(g: Any, a: Any, ans: Any, UPLO: str = "L") -> Any:
    """Gradient of ``np.linalg.eigh(a, UPLO)``, on the triangle NumPy reads (distinct eigenvalues)."""
    real_only("np.linalg.eigh", a)
    w, v = ans
    g_w, g_v = g
    gaps = w[..., None, :] - w[..., :, None]
    gaps = safe_divide(np.ones_like(gaps), gaps)  # [i, j]: 1 / (w_j - w_i), 0 where they are equal
    inner = (v * g_w[..., None, :]) @ _t(v) + v @ (gaps * (_t(v) @ g_v)) @ _t(v)
    return triangle_grad(inner, UPLO == "L")


def eigh_jvp(t: Any, a: Any, ans: Any, UPLO: str = "L") -> Any:
    """Tangent ``(w_dot, v_dot)`` of ``np.linalg.eigh(a, UPLO)``, from the triangle NumPy reads."""
    real_only("np.linalg.eigh", a)
    w, v = ans
    inner = _t(v) @ _read_symmetric(t, UPLO == "L") @ v
    gaps = w[..., None, :] - w[..., :, None]
    gaps = safe_divide(np.ones_like(gaps), gaps)  # [i, j]: 1 / (w_j - w_i), 0 where they are equal
    return np.diagonal(inner, 0, -2, -1).copy(), v @ (gaps * inner)


def _inverse_if_invertible(a: Any, det: Any) -> Any:
    """``a``'s inverse when each of its matrices is invertible (``det`` its determinants), else None."""
    if not np.all(det != 0):
        return None
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return None


def det_cofactor(a: Any) -> Any:
    """The cofactor matrix of each matrix of ``a``, the derivative of ``np.linalg.det(a)``:
    det(a) a^-T where a is invertible, the transposed adjugate from the SVD where it is not."""
    if np.shape(a)[-1] == 0:
        return np.zeros_like(a)
    if computed_by_numpy(np.linalg.det, a):
        a = in_numpy(a)[0]
    det = np.linalg.det(a)
    inverse = _inverse_if_invertible(a, det)
    if inverse is not None:
        return np.expand_dims(det, (-2, -1)) * _t(inverse)
    if stepping():  # a complex step through a singular matrix: no precision left
        raise S2SADError("s2sad differentiates np.linalg.det of a singular matrix once, not twice "
                         "(its second derivative there is not computed); differentiate it at an "
                         "invertible matrix, or use np.linalg.slogdet")
    u, s, vh = np.linalg.svd(a)
    ones = np.ones_like(s[..., :1])
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    sign = np.expand_dims(np.linalg.det(u) * np.linalg.det(vh), (-2, -1))
    others = np.expand_dims(before * after, -2)  # each singular value's product of the others
    return sign * (np.conj(u) * others) @ np.conj(vh)


def det_cofactor_jvp(tan: Any, a: Any) -> Any:
    """The derivative of ``det_cofactor(a)`` along ``tan`` (the Hessian of det applied to it):
    from a^-1 where a is invertible, from the SVD where it is not."""
    if np.shape(a)[-1] == 0:
        return np.zeros_like(a * tan)
    if computed_by_numpy(np.linalg.det, a):
        a, tan = in_numpy(a, tan)
    det = np.linalg.det(a)
    inverse = _inverse_if_invertible(a, det)
    if inverse is not None:
        inv_t = _t(inverse)
        trace = np.expand_dims(np.sum(inv_t * tan, axis=(-2, -1)), (-2, -1))
        return np.expand_dims(det, (-2, -1)) * (trace * inv_t - inv_t @ _t(tan) @ inv_t)
    if stepping():
        raise S2SADError("s2sad differentiates np.linalg.det of a singular matrix twice, not three "
                         "times; differentiate it at an invertible matrix, or use np.linalg.slogdet")
    u, s, vh = np.linalg.svd(a)
    b = _t(np.conj(u)) @ tan @ _t(np.conj(vh))  # tan in the singular vectors' bases
    n = s.shape[-1]
    outside = ~(np.eye(n, dtype=bool)[:, None, :] | np.eye(n, dtype=bool)[None, :, :])  # m not in {i, j}
    others = np.where(outside, s[..., None, None, :], 1).prod(axis=-1) * (1 - np.eye(n))
    diagonal = np.einsum("...ik,...kk->...i", others, b)
    inner = -_t(b) * others + diagonal[..., None] * np.eye(n)
    sign = np.expand_dims(np.linalg.det(u) * np.linalg.det(vh), (-2, -1))
    return sign * np.conj(u) @ inner @ np.conj(vh)


def slogdet_grad(g: Any, a: Any) -> Any:
    """Gradient of ``np.linalg.slogdet(a)``, g = (g_sign, g_logabsdet): g_logabsdet a^-T."""
    real_only("np.linalg.slogdet", a)
    _, g_logdet = g  # the sign is piecewise constant
    if computed_by_numpy(np.linalg.slogdet, a):
        a = in_numpy(a)[0]
    return np.expand_dims(g_logdet, (-2, -1)) * _t(np.linalg.inv(a))


def solve_grad_b(g: Any, a: Any, b: Any) -> Any:
    """Gradient of ``np.linalg.solve(a, b)`` with respect to b: solve(a^T, g)."""
    return reduce_to(_solve_transposed(g, a, b), b)


def solve_grad_a(g: Any, a: Any, b: Any, ans: Any) -> Any:
    """Gradient of ``np.linalg.solve(a, b)`` with respect to a: -solve(a^T, g) ans^T."""
    g_b = _solve_transposed(g, a, b)
    if np.ndim(b) == 1:
        return reduce_to(-g_b[..., :, None] * ans[..., None, :], a)
    return reduce_to(-g_b @ _t(ans), a)


def _solve_transposed(g: Any, a: Any, b: Any) -> Any:
    if np.ndim(b) == 1:
        return np.linalg.solve(_t(a), g[..., None])[..., 0]
    return np.linalg.solve(_t(a), g)


def pinv_grad(g: Any, a: Any, ans: Any) -> Any:
    """Gradient of ``np.linalg.pinv(a)`` (Golub and Pereyra), where a's rank does not change."""
    real_only("np.linalg.pinv", a)
    p, g_t = ans, _t(g)
    return (-_t(p) @ g @ _t(p) + (g_t - a @ p @ g_t) @ p @ _t(p)
            + _t(p) @ p @ (g_t - g_t @ p @ a))


def pinv_jvp(t: Any, a: Any, ans: Any) -> Any:
    """Tangent of ``np.linalg.pinv(a)`` (Golub and Pereyra), where a's rank does not change."""
    real_only("np.linalg.pinv", a)
    p, t_t = ans, _t(t)
    pp, p_p = p @ _t(p), _t(p) @ p
    return -p @ t @ p + pp @ t_t - pp @ t_t @ a @ p + t_t @ p_p - p @ a @ t_t @ p_p


def _check_qr(a: Any, mode: str) -> None:
    """Refuse the modes and shapes of ``np.linalg.qr`` whose derivative is not unique here."""
    real_only("np.linalg.qr", a)
    rows, cols = np.shape(a)[-2:]
    if mode not in ("reduced", "complete") or rows < cols or mode == "complete" and rows != cols:
        raise S2SADError(f"s2sad differentiates np.linalg.qr with mode 'reduced' of a matrix with at "
                         f"least as many rows as columns, not mode={mode!r} of shape {np.shape(a)}")


def qr_grad(g: Any, a: Any, ans: Any, mode: str = "reduced") -> Any:
    """Gradient of ``np.linalg.qr(a, mode)``: mode 'reduced' (or square 'complete'), rows >= columns."""
    _check_qr(a, mode)
    q, r = ans
    g_q, g_r = g
    m = r @ _t(g_r) - _t(g_q) @ q
    sym = np.tril(m) + _t(np.tril(m, -1))  # the lower triangle of m, copied to the upper
    return _t(np.linalg.solve(r, _t(g_q + q @ sym)))  # (g_q + q sym) r^-T


def qr_jvp(t: Any, a: Any, ans: Any, mode: str = "reduced") -> Any:
    """Tangent ``(q_dot, r_dot)`` of ``np.linalg.qr(a, mode)``, for the modes ``qr_grad`` takes."""
    _check_qr(a, mode)
    q, r = ans
    t_rinv = _t(np.linalg.solve(_t(r), _t(t)))  # t r^-1
    inner = _t(q) @ t_rinv
    low = np.tril(inner, -1)
    spin = low - _t(low)  # q^T q_dot: antisymmetric
    return q @ (spin - inner) + t_rinv, (inner - spin) @ r


def svd_grad(g: Any, a: Any, ans: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Gradient of ``np.linalg.svd(a, full_matrices, compute_uv)`` (distinct singular values)."""
    real_only("np.linalg.svd", a)
    if not compute_uv:
        _real_svd_input(a)
        u, _, vt = np.linalg.svd(a, full_matrices=False)
        return (u * g[..., None, :]) @ vt
    u, s, vt = ans
    g_u, g_s, g_vt = g
    k = np.shape(s)[-1]
    if full_matrices:
        if np.any(g_u[..., :, k:]) or np.any(g_vt[..., k:, :]):
            raise S2SADError("a gradient reaches the columns of u (rows of vh) that "
                             "np.linalg.svd(full_matrices=True) adds, which are not unique; "
                             "use full_matrices=False")
        u, g_u, vt, g_vt = u[..., :, :k], g_u[..., :, :k], vt[..., :k, :], g_vt[..., :k, :]
    gaps = s[..., None, :] ** 2 - s[..., :, None] ** 2
    gaps = safe_divide(np.ones_like(gaps), gaps)  # [i, j]: 1 / (s_j^2 - s_i^2), 0 where equal
    ut_gu, vt_gv = _t(u) @ g_u, vt @ _t(g_vt)
    j, k_ = gaps * ut_gu, gaps * vt_gv
    inner = (j + _t(j)) * s[..., None, :] + s[..., :, None] * (k_ + _t(k_))
    return (u @ inner @ vt + (u * g_s[..., None, :]) @ vt
            + ((g_u - u @ ut_gu) / s[..., None, :]) @ vt
            + (u / s[..., None, :]) @ (g_vt - _t(vt_gv) @ vt))


def svd_jvp(t: Any, a: Any, ans: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Tangent of ``np.linalg.svd(a, full_matrices, compute_uv)`` (distinct singular values).

    With full_matrices and a non-square a, the added columns of u (rows of vh), which are
    not unique, get the tangent that keeps them orthogonal to the others and turns them least.
    """
    real_only("np.linalg.svd", a)
    if not compute_uv:
        _real_svd_input(a)
        u, _, vt = np.linalg.svd(a, full_matrices=False)
        return np.sum(u * (t @ _t(vt)), axis=-2)
    u_all, s, vt_all = ans
    k = np.shape(s)[-1]
    u, vt = u_all[..., :, :k], vt_all[..., :k, :]
    v = _t(vt)
    inner = _t(u) @ t @ v  # u^T t v
    gaps = s[..., None, :] ** 2 - s[..., :, None] ** 2
    gaps = safe_divide(np.ones_like(gaps), gaps)  # [i, j]: 1 / (s_j^2 - s_i^2), 0 where equal
    right, left = inner * s[..., None, :], s[..., :, None] * inner  # inner s, s inner
    u_dot = u @ (gaps * (right + _t(right)))
    v_dot = v @ (gaps * (left + _t(left)))
    rows, cols = np.shape(a)[-2:]
    if rows > k:
        t_v = t @ v
        u_dot = u_dot + (t_v - u @ (_t(u) @ t_v)) / s[..., None, :]
    if cols > k:
        t_u = _t(t) @ u
        v_dot = v_dot + (t_u - v @ (_t(v) @ t_u)) / s[..., None, :]
    if full_matrices and rows > k:
        rest = u_all[..., :, k:]
        u_dot = np.concatenate([u_dot, -u @ (_t(u_dot) @ rest)], axis=-1)
    if full_matrices and cols > k:
        rest = _t(vt_all[..., k:, :])
        v_dot = np.concatenate([v_dot, -v @ (_t(v_dot) @ rest)], axis=-1)
    return u_dot, np.diagonal(inner, 0, -2, -1).copy(), _t(v_dot)


def _real_svd_input(a: Any) -> None:
    if np.iscomplexobj(a):  # a complex step (step_jvp): the singular vectors are not analytic in a
        raise S2SADError("s2sad differentiates np.linalg.svd(..., compute_uv=False) once, not "
                         "twice; for second derivatives, use compute_uv=True")


def lstsq_full_rank(ct: Any, rank: Any, a: Any) -> Any:
    """``ct`` if ``a`` has full rank (``rank``, from np.linalg.lstsq); else an error (the least
    squares solution is differentiable where a's rank does not change, as pinv's)."""
    if rank < min(np.shape(a)[-2:]):
        raise S2SADError(f"a gradient reaches np.linalg.lstsq of a {np.shape(a)[0]}x{np.shape(a)[1]} matrix "
                         f"of rank {rank}, which s2sad does not differentiate (full rank only); "
                         f"regularize the problem (solve (a.T @ a + c * I) x = a.T @ b) instead")
    return ct


def real_eigenvalues(w: Any, name: str) -> Any:
    """``w`` if it is real; else an error (s2sad differentiates real eigenvalues only)."""
    if np.iscomplexobj(w) and np.any(np.imag(w) != 0):
        raise S2SADError(f"a gradient reaches {name} of a matrix with complex eigenvalues, which "
                         f"s2sad does not differentiate (real eigenvalues only)")
    return np.real(w)


def read_triangle(t: Any, lower: bool) -> Any:
    """The symmetric matrix a function that reads one triangle of ``t`` sees."""
    tri = np.tril(t) if lower else np.triu(t)
    return tri + np.swapaxes(tri, -1, -2) - tri * np.eye(np.shape(t)[-1], dtype=np.result_type(t))


def cov_matrix(cov: Any, like: Any) -> Any:
    """A covariance as ``scipy.stats.multivariate_normal`` reads it: a number times the
    identity (of the size of the last axis of ``like``, the mean; 1 without one), a vector
    on the diagonal, or (the lower triangle of) a matrix."""
    d = np.shape(like)[-1] if np.ndim(like) else 1
    if np.ndim(cov) == 0:
        return cov * np.eye(d)
    if np.ndim(cov) == 1:
        return np.diag(cov)
    return read_triangle(cov, True)


def cov_matrix_grad(g: Any, cov: Any) -> Any:
    """The transpose of :func:`cov_matrix`: a matrix gradient back in the form of ``cov``."""
    if np.ndim(cov) == 0:
        return np.trace(g)
    if np.ndim(cov) == 1:
        return np.diagonal(g).copy()
    return np.tril(g + np.swapaxes(g, -1, -2)) - g * np.eye(np.shape(g)[-1])


# scipy.linalg.solve's assume_a: the structure of the matrix it reads
_STRUCTURES = {None: "general", "gen": "general", "general": "general", "banded": "general",
               "sym": "symmetric", "symmetric": "symmetric", "her": "hermitian", "hermitian": "hermitian",
               "pos": "hermitian", "positive definite": "hermitian", "diagonal": "diagonal",
               "tridiagonal": "tridiagonal", "upper triangular": "upper", "lower triangular": "lower"}


def _structure(assume_a: Any, a: Any) -> str:
    kind = _STRUCTURES.get(assume_a) if isinstance(assume_a, (str, type(None))) else None
    if kind is None:
        raise S2SADError(f"s2sad does not differentiate scipy.linalg.solve with assume_a={assume_a!r}")
    if kind == "hermitian":  # a complex one is read conjugated: not a holomorphic function of a
        real_only(f"scipy.linalg.solve(..., assume_a={assume_a!r})", a)
        return "symmetric"
    return kind


def solve_matrix(a: Any, assume_a: Any = None, lower: bool = False, transposed: bool = False) -> Any:
    """The matrix ``scipy.linalg.solve(a, b, lower, assume_a=assume_a, transposed=transposed)``
    inverts: what it reads of ``a`` (a triangle mirrored, a band; 'banded' finds the band from
    a's zeros, so it reads all of a), transposed with ``transposed``."""
    kind = _structure(assume_a, a)
    if kind == "symmetric":
        a = read_triangle(a, lower)
    elif kind == "diagonal":
        a = a * np.eye(np.shape(a)[-1], dtype=bool)
    elif kind == "tridiagonal":
        a = np.triu(np.tril(a, 1), -1)
    elif kind in ("upper", "lower"):
        a = np.triu(a) if kind == "upper" else np.tril(a)
    return _t(a) if transposed else a


def solve_matrix_grad(ct: Any, assume_a: Any = None, lower: bool = False, transposed: bool = False) -> Any:
    """The transpose of :func:`solve_matrix`: a gradient of the matrix solved with, moved to
    the entries of ``a`` that matrix reads."""
    g = _t(ct) if transposed else ct
    kind = _structure(assume_a, ct)
    if kind == "symmetric":
        both = g + _t(g)
        return (np.tril(both) if lower else np.triu(both)) - g * np.eye(np.shape(g)[-1], dtype=bool)
    if kind == "diagonal":
        return g * np.eye(np.shape(g)[-1], dtype=bool)
    if kind == "tridiagonal":
        return np.triu(np.tril(g, 1), -1)
    if kind in ("upper", "lower"):
        return np.triu(g) if kind == "upper" else np.tril(g)
    return g


def cov_rows(m: Any, y: Any = None, rowvar: bool = True, name: str = "np.cov") -> Any:
    """The variables of ``np.cov(m, y, rowvar)`` (or of ``name``, which reads them so) as the rows
    of one matrix, as NumPy lays them out."""
    real_only(name, m, y)
    rows = _cov_part(m, rowvar, True)
    return rows if y is None else np.concatenate((rows, _cov_part(y, rowvar, False)), axis=0)


def _cov_part(v: Any, rowvar: bool, first: bool) -> Any:
    rows = np.atleast_2d(v)
    flip = not rowvar and (np.ndim(v) != 1 if first else np.shape(rows)[0] != 1)
    return _t(rows) if flip else rows


def cov_rows_grad(ct: Any, m: Any, y: Any = None, rowvar: bool = True, part: int = 0) -> Any:
    """The transpose of :func:`cov_rows`: the rows of ``ct`` that came from ``m`` (``part`` 0)
    or ``y`` (1), in that argument's shape."""
    count = np.shape(_cov_part(m, rowvar, True))[0]
    v = m if part == 0 else y
    g = ct[:count] if part == 0 else ct[count:]
    flip = not rowvar and (np.ndim(v) != 1 if part == 0 else np.shape(np.atleast_2d(v))[0] != 1)
    return np.reshape(_t(g) if flip else g, np.shape(v))


#: the metrics of scipy.spatial.distance.cdist whose gradient s2sad computes
CDIST_METRICS = ("euclidean", "sqeuclidean")


def cdist_weights(ct: Any, d: Any, metric: str) -> Any:
    """The weight of each pair's difference ``XA[i] - XB[j]`` in the gradient of
    ``cdist(XA, XB, metric)`` (distances ``d``) for the cotangent ``ct``: ``2 ct`` for
    ``sqeuclidean``, ``ct / d`` for ``euclidean`` (0 where the points coincide, a subgradient)."""
    if metric == "sqeuclidean":
        return 2.0 * ct
    if metric == "euclidean":
        return safe_divide(ct, d)
    raise S2SADError(f"s2sad differentiates scipy.spatial.distance.cdist with the metrics "
                     f"{', '.join(map(repr, CDIST_METRICS))} only, not {metric!r}; write the distance with NumPy "
                     f"(for example np.sum(np.abs(XA[:, None] - XB[None]), axis=-1) for 'cityblock')")


def _band_positions(l_and_u: Any, n: int, columns: int) -> tuple[Any, Any, Any]:
    """The rows of ``scipy.linalg.solve_banded``'s ``ab`` (``(l, u)`` bands), and the row and
    column of the matrix of ``n`` rows each in-band entry stands for."""
    lower, upper = (int(k) for k in l_and_u)
    band, column = np.meshgrid(np.arange(lower + upper + 1), np.arange(columns), indexing="ij")
    row = column + band - upper
    inside = (row >= 0) & (row < n)
    return band[inside], row[inside], column[inside]


def banded_matrix(l_and_u: Any, ab: Any) -> Any:
    """The square matrix ``ab`` stands for in ``scipy.linalg.solve_banded(l_and_u, ab, b)``:
    ``a[i, j] = ab[u + i - j, j]`` in the band, 0 outside (entries of ab outside the matrix
    are not read)."""
    n = np.shape(ab)[-1]
    band, row, column = _band_positions(l_and_u, n, n)
    out = np.zeros((n, n), dtype=np.result_type(ab, 1.0))
    out[row, column] = np.asarray(ab)[band, column]
    return out


def band_of(l_and_u: Any, a: Any, shape: Any) -> Any:
    """The entries of the square ``a`` in the band of ``banded_matrix(l_and_u, ab)`` laid out as
    ``ab`` (of ``shape``): the transpose of banded_matrix, 0 where ab is not read."""
    band, row, column = _band_positions(l_and_u, shape[-1], shape[-1])
    out = np.zeros(shape, dtype=np.result_type(a, 1.0))
    out[band, column] = np.asarray(a)[row, column]
    return out

