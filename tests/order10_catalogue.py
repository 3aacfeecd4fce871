"""A catalogue of small scalar functions of one array, for checks at every order.

Each function is written once, in NumPy; ``CASES`` gives each its input's shape and domain.
The functions read only ``np`` and the constants below, so the same text runs with any
module that spells NumPy's functions (a test may rebind ``np``).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

A = np.array([[3.0, 0.4, -0.2], [0.1, 2.5, 0.3], [-0.3, 0.2, 2.8]])
S = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.8]])
B = np.array([[0.5, -1.0, 0.3, 0.7], [1.2, 0.4, -0.6, 0.2], [-0.8, 0.9, 0.1, -0.4]])
c4 = np.array([0.3, -0.7, 1.1, 0.2])
c3 = np.array([0.5, -0.4, 0.9])
I3 = np.eye(3)
M4 = np.array([True, False, True, True])


# ---------------------------------------------------------------- elementwise


def e_sin_cos(x):
    return np.sum(np.sin(x) * np.cos(2.0 * x))


def e_exp_log(x):
    return np.sum(np.log(x) * np.exp(-x))


def e_tanh_sq(x):
    return np.sum(np.tanh(x) ** 2)


def e_sqrt(x):
    return np.sum(np.sqrt(x) * x)


def e_pow_const(x):
    return np.sum(x ** 3.5)


def e_pow_var(x):
    return np.sum(x ** x)


def e_power_fn(x):
    return np.sum(np.power(x, 2.5) + np.power(1.5, x))


def e_reciprocal(x):
    return np.sum(1.0 / x + np.reciprocal(x + 1.0))


def e_divide(x):
    return np.sum(np.divide(x[:2], x[2:] + 1.0))


def e_arcsin(x):
    return np.sum(np.arcsin(x) + np.arccos(x) * x)


def e_arctan(x):
    return np.sum(np.arctan(x) * np.arcsinh(x))


def e_arctanh(x):
    return np.sum(np.arctanh(x) ** 2)


def e_arccosh(x):
    return np.sum(np.arccosh(x + 1.5))


def e_sinh_cosh(x):
    return np.sum(np.sinh(x) * np.cosh(x) - np.tan(x))


def e_log_family(x):
    return np.sum(np.log2(x) + np.log10(x) * np.log1p(x))


def e_exp_family(x):
    return np.sum(np.exp2(x) * np.expm1(x))


def e_square_abs(x):
    return np.sum(np.square(x) * np.abs(x))


def e_cbrt(x):
    return np.sum(np.cbrt(x) * x)


def e_hypot(x):
    return np.sum(np.hypot(x[:2], x[2:]))


def e_arctan2(x):
    return np.sum(np.arctan2(x[:2], x[2:]))


def e_logaddexp(x):
    return np.sum(np.logaddexp(x[:2], x[2:]) + np.logaddexp2(x[:2], 2.0 * x[2:]))


def e_sinc(x):
    return np.sum(np.sinc(x))


def e_deg(x):
    return np.sum(np.sin(np.deg2rad(x * 30.0)) * np.degrees(x))


def e_negative(x):
    return np.sum(np.negative(x) * np.positive(x) ** 3)


def e_fabs(x):
    return np.sum(np.fabs(x) ** 3)


def e_copysign(x):
    return np.sum(np.copysign(x ** 2, c4))


def e_float_power(x):
    return np.sum(np.float_power(x, 3.0))


def e_subtract_multiply(x):
    return np.sum(np.subtract(np.multiply(x, x), np.add(x, 1.0)) ** 2)


def e_sigmoid(x):
    s = 1.0 / (1.0 + np.exp(-x))
    return np.sum(s * (1.0 - s))


def e_softplus(x):
    return np.sum(np.log1p(np.exp(x)))


def e_gelu(x):
    return np.sum(0.5 * x * (1.0 + np.tanh(0.8 * (x + 0.044 * x ** 3))))


def e_matrix_elementwise(x):
    return np.sum(np.exp(x) * A)


def e_scalar_ops(x):
    a = x[0]
    b = x[1]
    return a * b + a / b + b ** a


# ---------------------------------------------------------------- reductions


def r_sum_axis(x):
    return np.sum(np.sum(x, axis=0) ** 2)


def r_sum_keepdims(x):
    return np.sum((x - np.sum(x, axis=1, keepdims=True)) ** 2)


def r_mean_axis(x):
    return np.sum(np.mean(x ** 2, axis=1) ** 2)


def r_mean_keepdims(x):
    return np.sum(np.exp(x - np.mean(x, axis=0, keepdims=True)))


def r_prod(x):
    return np.prod(x)


def r_prod_axis(x):
    return np.sum(np.prod(x, axis=1))


def r_var(x):
    return np.var(x) * np.std(x)


def r_var_axis(x):
    return np.sum(np.var(x, axis=0) + np.std(x, axis=1, ddof=1))


def r_max(x):
    return np.max(x) ** 2


def r_max_axis(x):
    return np.sum(np.max(x, axis=1) ** 3)


def r_min_keepdims(x):
    return np.sum((x - np.min(x, axis=0, keepdims=True)) ** 2)


def r_amax(x):
    return np.amax(x) * np.amin(x)


def r_method_sum(x):
    return (x ** 2).sum() * x.mean()


def r_method_axis(x):
    return np.sum(x.sum(axis=1) ** 2 + x.max(axis=1) * x.min(axis=1))


def r_method_prod(x):
    return x.prod() + np.sum(x.var(axis=0))


def r_sum_tuple_axis(x):
    return np.sum(np.sum(x ** 2, axis=(0, 2)) ** 2)


def r_mean_neg_axis(x):
    return np.sum(np.mean(x, axis=-1) ** 3)


def r_norm_like(x):
    return np.sqrt(np.sum(x ** 2) + 1.0)


def r_average(x):
    return np.average(x ** 2, weights=np.abs(c4) + 0.1)


def r_ptp(x):
    return np.ptp(x) ** 2


def r_median(x):
    return np.median(x) ** 2 + np.sum(x)


def r_trace(x):
    return np.trace(x @ x) + np.trace(x) ** 2


# ---------------------------------------------------------------- logsumexp-style


def l_logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def l_logsumexp_axis(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(m[:, 0] + np.log(np.sum(np.exp(x - m), axis=1)))


def l_softmax(x):
    z = x - np.max(x)
    p = np.exp(z) / np.sum(np.exp(z))
    return np.sum(p * c4)


def l_log_softmax(x):
    z = x - np.max(x, axis=-1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return np.sum(logp * A)


def l_cross_entropy(x):
    logits = x @ B
    z = logits - np.max(logits)
    return -np.sum(z[1] - np.log(np.sum(np.exp(z))))


def l_logaddexp_reduce(x):
    return np.logaddexp.reduce(x) ** 2


# ---------------------------------------------------------------- linear algebra


def a_matmul(x):
    return np.sum((A @ x) ** 2 * x)


def a_matmul_mm(x):
    return np.sum((x @ x @ A) ** 2)


def a_dot(x):
    return np.dot(x, np.dot(S, x)) ** 2


def a_inner_outer(x):
    return np.sum(np.outer(x, x) ** 2) + np.inner(x, x * x)


def a_vdot(x):
    return np.vdot(x, np.sin(x))


def a_solve_vec(x):
    return np.sum(np.linalg.solve(A + np.diag(x), c3) ** 2)


def a_solve_mat(x):
    return np.sum(np.linalg.solve(x, S) ** 2)


def a_solve_rhs(x):
    return np.sum(np.linalg.solve(A, x * x))


def a_inv(x):
    return np.sum(np.linalg.inv(x) ** 2)


def a_inv_trace(x):
    return np.trace(np.linalg.inv(x @ x.T))


def a_det(x):
    return np.linalg.det(x)


def a_det_sq(x):
    return np.linalg.det(x @ x.T) ** 0.5


def a_slogdet(x):
    sign, logdet = np.linalg.slogdet(x)
    return sign * logdet


def a_slogdet_spd(x):
    return np.linalg.slogdet(x @ x.T + I3)[1]


def a_cholesky(x):
    L = np.linalg.cholesky(x @ x.T + I3)
    return np.sum(L ** 2 * A)


def a_cholesky_logdet(x):
    L = np.linalg.cholesky(x @ x.T + I3)
    return 2.0 * np.sum(np.log(np.diag(L)))


def a_eigh_vals(x):
    w, v = np.linalg.eigh(x + x.T)
    return np.sum(w ** 3)


def a_eigh_vecs(x):
    w, v = np.linalg.eigh(x + x.T)
    return np.sum((v * v) @ c3) + np.sum(np.abs(v[:, 0] @ c3))


def a_eigvalsh(x):
    return np.sum(np.linalg.eigvalsh(x + x.T) ** 2)


def a_svd_vals(x):
    return np.sum(np.linalg.svd(x, compute_uv=False) ** 3)


def a_svd_full(x):
    u, s, vt = np.linalg.svd(x)
    return np.sum(s * np.abs(u[0])) + np.sum((vt * vt) @ c3)


def a_norm_vec(x):
    return np.linalg.norm(x) * np.linalg.norm(x, 1)


def a_norm_ord(x):
    return np.linalg.norm(x, 3) + np.linalg.norm(x, np.inf)


def a_norm_fro(x):
    return np.linalg.norm(x) ** 3


def a_norm_axis(x):
    return np.sum(np.linalg.norm(x, axis=1) ** 2 + np.linalg.norm(x, axis=0))


def a_norm_nuc(x):
    return np.linalg.norm(x, "nuc")


def a_norm_2(x):
    return np.linalg.norm(x, 2)


def a_qr(x):
    q, r = np.linalg.qr(x)
    return np.sum(np.abs(np.diag(r))) + np.sum(q * A)


def a_qr_r(x):
    q, r = np.linalg.qr(x)
    return np.sum(r ** 2 * S)


def a_matrix_power(x):
    return np.sum(np.linalg.matrix_power(x, 3) * A)


def a_pinv(x):
    return np.sum(np.linalg.pinv(x) * A)


def a_multi_dot(x):
    return np.sum(np.linalg.multi_dot([x, A, x]) ** 2)


def a_quad_form(x):
    r = x @ S @ x
    return np.log(r) + np.exp(-r)


def a_kron(x):
    return np.sum(np.kron(x, x) * np.arange(16.0))


def a_cross(x):
    return np.sum(np.cross(x, c3) ** 2 * x)


def a_lstsq(x):
    sol = np.linalg.lstsq(B.T, x * x + c4, rcond=None)[0]
    return np.sum(sol ** 2)


# ---------------------------------------------------------------- products


def p_einsum_ij(x):
    return np.einsum("ij,jk->", x, x * A)


def p_einsum_trace(x):
    return np.einsum("ii", x @ x) ** 2


def p_einsum_bilinear(x):
    return np.einsum("i,ij,j", x, S, x) ** 2


def p_einsum_outer(x):
    return np.sum(np.einsum("i,j->ij", x, np.sin(x)) ** 2)


def p_tensordot(x):
    return np.sum(np.tensordot(x, x, axes=([1, 2], [1, 2])) ** 2)


def p_tensordot_int(x):
    return np.sum(np.tensordot(x, A, axes=1) ** 2)


def p_matmul_fn(x):
    return np.sum(np.matmul(x, x.T) ** 2)


def p_batched_matmul(x):
    return np.sum((x @ np.swapaxes(x, 1, 2)) ** 2)


# ---------------------------------------------------------------- indexing and slicing


def i_index(x):
    return x[0] * x[2] ** 2 + x[-1]


def i_slice(x):
    return np.sum(x[1:] * x[:-1] ** 2)


def i_step(x):
    return np.sum(x[::2] ** 3 + x[1::2] * x[::-2])


def i_fancy(x):
    return np.sum(x[np.array([0, 2, 2, 3])] ** 3)


def i_mask(x):
    return np.sum(x[c4 > 0] ** 3)


def i_2d(x):
    return np.sum(x[0, :] * x[:, 1] ** 2) + x[1, 2] ** 3


def i_2d_slice(x):
    return np.sum(x[1:, :2] ** 3 * x[:2, 1:])


def i_newaxis(x):
    return np.sum((x[:, None] * x[None, :]) ** 2)


def i_ellipsis(x):
    return np.sum(x[..., 0] ** 2 * x[..., -1])


def i_take(x):
    return np.sum(np.take(x, np.array([3, 0, 0, 1])) ** 3)


def i_take_axis(x):
    return np.sum(np.take(x, np.array([2, 0]), axis=1) ** 3)


def i_take_along(x):
    return np.sum(np.take_along_axis(x, np.array([[0], [2], [1]]), axis=1) ** 3)


def i_diag(x):
    return np.sum(np.diag(x) ** 3) + np.sum(np.diag(x[:, 0]) @ x)


def i_triu(x):
    return np.sum(np.triu(x) ** 2 * np.tril(x, -1).T)


def i_diagonal(x):
    return np.sum(np.diagonal(x) ** 3) + np.sum(x.diagonal(1) ** 2)


def i_setitem(x):
    y = np.zeros(6)
    y[1:5] = x ** 2
    y[0] = x[0] * x[1]
    return np.sum(y ** 2)


def i_ix(x):
    return np.sum(x[np.ix_(np.array([0, 2]), np.array([1, 2]))] ** 3)


# ---------------------------------------------------------------- shapes, joins


def s_concat(x):
    return np.sum(np.concatenate([x, x ** 2, np.sin(x)]) * np.arange(12.0))


def s_concat_axis(x):
    return np.sum(np.concatenate([x, x * x], axis=1) ** 2)


def s_stack(x):
    return np.sum(np.stack([x, x ** 2], axis=1) ** 3)


def s_hstack_vstack(x):
    return np.sum(np.hstack([x, x ** 2]) ** 2) + np.sum(np.vstack([x, np.exp(x)]) ** 2)


def s_reshape(x):
    return np.sum(x.reshape(2, 2) @ x.reshape(2, 2))


def s_reshape_fn(x):
    return np.sum(np.reshape(x, (3, 4)) ** 2 @ np.arange(4.0))


def s_transpose(x):
    return np.sum(np.transpose(x, (2, 0, 1)) ** 2 * np.arange(4.0)[:, None, None])


def s_ravel(x):
    return np.sum(np.ravel(x) ** 3 * np.arange(9.0)) + np.sum(x.flatten() ** 2)


def s_flip(x):
    return np.sum(x * np.flip(x) ** 2)


def s_roll(x):
    return np.sum(x * np.roll(x, 1) ** 2)


def s_tile_repeat(x):
    return np.sum(np.tile(x, 2) ** 2 * np.arange(8.0)) + np.sum(np.repeat(x, 2) ** 3)


def s_expand_squeeze(x):
    return np.sum(np.squeeze(np.expand_dims(x, 0) ** 2) * x)


def s_broadcast_to(x):
    return np.sum(np.broadcast_to(x, (3, 4)) ** 2 * B)


def s_pad(x):
    return np.sum(np.pad(x, 2) ** 2 * np.arange(8.0))


def s_diff(x):
    return np.sum(np.diff(x) ** 2) + np.sum(np.diff(x, n=2) ** 3)


def s_split(x):
    a, b = np.split(x, 2)
    return np.sum(a * b ** 2)


def s_moveaxis(x):
    return np.sum(np.moveaxis(x, 0, -1) ** 2 * np.arange(2.0))


def s_atleast(x):
    return np.sum(np.atleast_2d(x) ** 2 @ c4)


def s_append(x):
    return np.sum(np.append(x, x[0] ** 2) ** 2)


def s_column_stack(x):
    return np.sum(np.column_stack([x, x ** 2]) ** 2 @ np.array([1.0, 2.0]))


def s_swapaxes(x):
    return np.sum(np.swapaxes(x, 0, 1) @ A)


# ---------------------------------------------------------------- where, clip, maximum


def w_where(x):
    return np.sum(np.where(x > 0, x ** 3, np.sin(x)))


def w_where_safe(x):
    return np.sum(np.where(x > 0.1, np.sqrt(x), x ** 2))


def w_clip(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2 * x)


def w_clip_method(x):
    return np.sum(x.clip(-0.5, None) ** 3)


def w_maximum(x):
    return np.sum(np.maximum(x, 0.0) ** 3 + np.minimum(x, c4) ** 2)


def w_fmax(x):
    return np.sum(np.fmax(x, -x * 0.5) ** 3 + np.fmin(x, 0.1) ** 2)


def w_relu_net(x):
    h = np.maximum(A @ x, 0.0)
    return np.sum(h ** 2) + np.sum(np.tanh(h))


def w_abs(x):
    return np.sum(np.abs(x) ** 3)


def w_select(x):
    return np.sum(np.select([x < -0.5, x > 0.5], [x ** 2, x ** 3], np.sin(x)))


def w_max_pairwise(x):
    return np.sum(np.maximum(x[:2], x[2:]) ** 3)


# ---------------------------------------------------------------- cumulative, sort


def c_cumsum(x):
    return np.sum(np.cumsum(x) ** 2)


def c_cumsum_axis(x):
    return np.sum(np.cumsum(x, axis=1) ** 3)


def c_cumprod(x):
    return np.sum(np.cumprod(x))


def c_cumprod_axis(x):
    return np.sum(np.cumprod(x, axis=0) ** 2)


def c_sort(x):
    return np.sum(np.sort(x) * np.arange(4.0)) + np.sum(np.sort(x) ** 3)


def c_sort_axis(x):
    return np.sum(np.sort(x, axis=0) ** 3 * A)


def c_maximum_accumulate(x):
    return np.sum(np.maximum.accumulate(x) ** 2)


def c_add_outer(x):
    return np.sum(np.subtract.outer(x, x) ** 4)


def c_interp(x):
    return np.sum(np.interp(x, np.linspace(-2.0, 2.0, 7), np.sin(np.linspace(-2.0, 2.0, 7))) * x ** 2)


def c_polyval(x):
    return np.sum(np.polyval(x, c4) ** 2)


def c_convolve(x):
    return np.sum(np.convolve(x, x * x) ** 2)


def c_correlate(x):
    return np.sum(np.correlate(x, c4, mode="full") ** 3)


def c_cov(x):
    return np.sum(np.cov(x) ** 2)


def c_vander(x):
    return np.sum(np.vander(x, 3) ** 2)


def c_trapezoid(x):
    return np.trapezoid(x ** 3)


# ---------------------------------------------------------------- complex through real


def z_fft_power(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 2 * np.arange(4.0))


def z_rfft(x):
    return np.sum(np.abs(np.fft.rfft(x * x)) ** 3)


def z_real_imag(x):
    z = x[:2] + 1j * x[2:]
    w = z * z * np.exp(z)
    return np.sum(np.real(w) * np.imag(w))


def z_abs_complex(x):
    z = np.exp(1j * x) * x
    return np.sum(np.abs(z + 0.5) ** 3)


def z_conj(x):
    z = x[:2] + 1j * x[2:] ** 2
    return np.sum(np.real(z * np.conj(z) * z))


def z_ifft(x):
    return np.sum(np.real(np.fft.ifft(np.fft.fft(x) * c4)) ** 2)


def z_angle(x):
    return np.sum(np.angle(x[:2] + 1j * x[2:]) ** 2)


# ---------------------------------------------------------------- control flow


def f_if_value(x):
    if np.sum(x) > 0:
        y = x ** 3
    else:
        y = np.sin(x)
    return np.sum(y * x)


def f_if_scalar(x):
    s = np.sum(x ** 2)
    if s > 1.0:
        s = np.sqrt(s)
    return s * x[0]


def f_for_carried(x):
    h = x
    for i in range(3):
        h = np.tanh(A @ h + c3)
    return np.sum(h ** 2)


def f_for_accumulate(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i] ** 2 * total + np.sin(x[i])
    return total


def f_for_product(x):
    p = 1.0
    for v in x:
        p = p * (1.0 + v * v)
    return np.log(p)


def f_while(x):
    y = x
    n = 0
    while n < 4:
        y = np.sin(y) + x * 0.5
        n = n + 1
    return np.sum(y ** 2)


def f_while_value(x):
    y = x
    while np.max(np.abs(y)) > 0.1:
        y = y * 0.5
    return np.sum(np.exp(y) * x)


def f_nested_loops(x):
    acc = x
    for i in range(2):
        for j in range(2):
            acc = acc * np.cos(acc + i - j)
    return np.sum(acc)


def f_loop_list(x):
    parts = []
    for i in range(3):
        parts.append(x[i] * x[i + 1])
    return np.sum(np.array(parts) ** 2)


def f_loop_if(x):
    y = 0.0
    for i in range(4):
        if x[i] > 0:
            y = y + x[i] ** 3
        else:
            y = y - x[i] ** 2 * y
    return y


def f_rnn(x):
    h = np.zeros(3)
    for t in range(x.shape[0]):
        h = np.tanh(A @ h + x[t] * c3)
    return np.sum(h ** 2)


def f_newton_sqrt(x):
    y = x
    for i in range(5):
        y = 0.5 * (y + x / y)
    return np.sum(y)


def f_helper_call(x):
    return np.sum(helper(x) * helper(x ** 2))


def helper(v):
    return np.tanh(v) * v


def f_early_return(x):
    if x[0] > 10.0:
        return np.sum(x)
    return np.sum(x ** 3)


def f_conditional_expr(x):
    y = x ** 2 if np.mean(x) > 0 else x ** 3
    return np.sum(y * np.exp(-x))


def f_inplace_loop(x):
    y = x.copy()
    for i in range(1, 4):
        y[i] = y[i - 1] * y[i] + np.sin(y[i])
    return np.sum(y ** 2)


def f_augassign(x):
    y = x * 1.0
    y *= x
    y += np.sin(x)
    y /= 2.0 + x ** 2
    return np.sum(y ** 2)


def f_tuple_unpack(x):
    a, b = x[0], x[1]
    a, b = b * a, a + b ** 2
    return a * b


# ---------------------------------------------------------------- models


def m_mlp(x):
    h = np.tanh(x @ B)
    return np.sum(np.log1p(h ** 2))


def m_logistic(x):
    z = B.T @ x
    return np.sum(np.log1p(np.exp(-z)) + 0.1 * x @ x)


def m_gaussian_nll(x):
    r = x - c3
    return 0.5 * r @ np.linalg.solve(S, r) + 0.5 * np.linalg.slogdet(S)[1]


def m_gaussian_cov(x):
    C = x @ x.T + I3
    return 0.5 * c3 @ np.linalg.solve(C, c3) + 0.5 * np.linalg.slogdet(C)[1]


def m_rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def m_attention(x):
    q = x @ A
    s = q @ x.T
    s = s - np.max(s, axis=1, keepdims=True)
    p = np.exp(s) / np.sum(np.exp(s), axis=1, keepdims=True)
    return np.sum((p @ x) ** 2)


def m_layernorm(x):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + 1e-3)
    return np.sum(y * A)


def m_huber(x):
    r = x - c4
    return np.sum(np.where(np.abs(r) < 0.5, 0.5 * r ** 2, 0.5 * (np.abs(r) - 0.25)))


def m_poisson(x):
    rate = np.exp(x)
    return np.sum(rate - c4 * x)


def m_kl(x):
    p = np.exp(x) / np.sum(np.exp(x))
    q = np.array([0.1, 0.2, 0.3, 0.4])
    return np.sum(p * (np.log(p) - np.log(q)))


def m_lse_matrix(x):
    return np.log(np.sum(np.exp(x @ B)))


# ---------------------------------------------------------------- more Python, keywords, other modules


def x_quantile(x):
    return np.quantile(x, 0.3) ** 2 + np.percentile(x, 70.0)


def x_nansum(x):
    return np.nansum(x ** 2) + np.nanmean(np.sin(x)) + np.nanmax(x) ** 2


def x_special(x):
    return np.sum(sp.gammaln(x) + sp.erf(x) * sp.expit(x))


def x_logsumexp_sp(x):
    return sp.logsumexp(x) + np.sum(sp.log_softmax(x) * c4)


def x_math(x):
    a = x[0]
    b = x[1]
    return math.sin(a) * math.exp(b) + math.log(a * a + 1.0) + math.sqrt(b * b + 1.0) + math.tanh(a * b)


def x_break(x):
    y = 0.0
    for i in range(4):
        y = y + x[i] ** 2
        if y > 1.5:
            break
    return y * x[0]


def x_continue(x):
    y = 0.0
    for i in range(4):
        if x[i] < 0:
            continue
        y = y + np.exp(x[i]) * x[i]
    return y


def x_comprehension(x):
    return sum([x[i] ** 2 * x[i - 1] for i in range(1, 4)])


def x_zip(x):
    total = 0.0
    for a, b in zip(x[:2], x[2:]):
        total = total + a * b ** 2
    return total


def x_enumerate(x):
    total = 0.0
    for i, v in enumerate(x):
        total = total + (i + 1.0) * np.sin(v) ** 2
    return total


def x_closure(x):
    def inner(y):
        return np.sum(y ** 3) * x[0]
    return inner(x) + inner(x * 2.0)


def x_lambda(x):
    sq = lambda t: t ** 2 * np.cos(t)
    return np.sum(sq(x))


def x_recursive(x):
    return recursing(x, 3)


def recursing(x, n):
    if n == 0:
        return np.sum(x ** 2)
    return recursing(np.sin(x), n - 1) + np.sum(x)


def x_dict(x):
    d = {"a": x ** 2, "b": np.sin(x)}
    return np.sum(d["a"] * d["b"])


def x_tuple_ret(x):
    a, b = square_and_exp(x)
    return np.sum(a * b)


def square_and_exp(x):
    return x ** 2, np.exp(x)


def x_while_newton(x):
    y = np.ones_like(x)
    k = 0
    while k < 6:
        y = y - (y ** 3 - x) / (3.0 * y ** 2)
        k += 1
    return np.sum(y)


def x_max_builtin(x):
    return max(x[0], x[1]) ** 2 + min(x[2], x[3]) ** 3


def x_abs_builtin(x):
    return abs(x[0]) ** 3 + abs(x[1] * x[2])


def x_pow_builtin(x):
    return pow(x[0], 3) + x[1] ** 2.5


def x_einsum_batch(x):
    return np.sum(np.einsum("bij,bjk->bik", x, x) ** 2)


def x_add_at(x):
    out = np.zeros(3)
    np.add.at(out, np.array([0, 1, 1, 2]), x ** 2)
    return np.sum(out ** 2)


def x_setitem_mask(x):
    y = x.copy()
    y[x < 0] = 0.0
    return np.sum(y ** 3 + x)


def x_slice_assign_2d(x):
    y = np.zeros((3, 3))
    y[:, 0] = x[:, 1] ** 2
    y[1:, 1:] = x[:2, :2] * x[1:, 1:]
    return np.sum(y ** 2)


def x_complex_mul(x):
    z = (x[0] + 1j * x[1]) * (x[2] - 1j * x[3])
    return np.abs(z) ** 2 + np.real(z * z)


def x_fft2(x):
    return np.sum(np.abs(np.fft.fft2(x)) ** 2 * A)


def x_irfft(x):
    return np.sum(np.fft.irfft(np.fft.rfft(x) * np.array([1.0, 0.5, 0.25])) ** 3)


def x_reduce_method(x):
    return np.add.reduce(x ** 2) * np.multiply.reduce(x + 3.0)


def x_gradient(x):
    return np.sum(np.gradient(x) ** 2)


def x_rot90(x):
    return np.sum(np.rot90(x) * A ** 2 * x)


def x_sum_where(x):
    return np.sum(x ** 3, where=M4) + np.mean(x ** 2, where=M4)


def x_max_initial(x):
    return np.max(x ** 2, initial=0.5) + np.min(x, initial=-0.1) ** 2


def x_clip_active_bounds(x):
    return np.sum(np.clip(c4, x[:4] * 0.5, x[:4] + 1.0) ** 2 * x)


def x_where_scalar_branch(x):
    return np.sum(np.where(x > 0, x[0] * x[1], x ** 2))


def x_interp_fp(x):
    return np.sum(np.interp(np.array([0.2, 0.7, 1.5]), np.array([0.0, 1.0, 2.0, 3.0]), x ** 2) ** 2)


def x_pow_array(x):
    return np.sum(np.power(x, np.array([2.0, 3.0, 1.5, 0.5])))


def x_reversed_cumsum(x):
    return np.sum(np.cumsum(x[::-1]) ** 2 * c4)


def x_argmax_index(x):
    return x[np.argmax(x)] ** 3 + np.sum(x[np.argsort(x)] * c4)


def x_tolist(x):
    a, b, c, d = x.tolist()
    return a * b + c ** 2 * d


def x_item(x):
    return x[2].item() * 1.0 + np.sum(x ** 2)


def x_prod_keep(x):
    return np.sum(np.prod(x.reshape(2, 2) + 2.0, axis=0, keepdims=True) * x.reshape(2, 2))


def x_cond_loop_break_value(x):
    s = x[0]
    i = 0
    while s < 3.0 and i < 10:
        s = s * 1.5 + x[1] ** 2
        i += 1
    return s * x[2]


# ---------------------------------------------------------------- array outputs (jvp, jacobian)


def v_tanh(x):
    return np.tanh(A @ x)


def v_softmax(x):
    z = np.exp(x - np.max(x))
    return z / np.sum(z)


def v_cumsum(x):
    return np.cumsum(x * x)


def v_outer(x):
    return np.outer(x, x)


def v_solve(x):
    return np.linalg.solve(x, c3)


def v_inv(x):
    return np.linalg.inv(x)


def v_sort(x):
    return np.sort(x) ** 2


def v_where(x):
    return np.where(x > 0, x, 0.1 * x)


def v_concat(x):
    return np.concatenate([x, np.sin(x)])


def v_loop(x):
    y = x
    for i in range(3):
        y = np.sin(y) * x
    return y


def v_eigh(x):
    return np.linalg.eigh(x + x.T)[0]


def v_cholesky(x):
    return np.linalg.cholesky(x @ x.T + I3)


def v_qr(x):
    return np.linalg.qr(x)[1]


def v_matrix_power(x):
    return np.linalg.matrix_power(x, 2)


def v_det(x):
    return np.linalg.det(x)


def v_scalar(x):
    return x[0] * x[1]

# more scalar


# ---------------------------------------------------------------- the table

_V4 = (4,)
_M3 = (3, 3)
_T3 = (2, 3, 4)

# name -> (input shape, domain): "real" normal(0, 1) away from kinks, "pos" in (0.5, 2),
# "unit" in (-0.8, 0.8), "well" a well-conditioned matrix 2.5 I + 0.3 normal.
SPECS: dict[str, tuple[tuple[int, ...], str]] = {
    "e_sin_cos": (_V4, "real"), "e_exp_log": (_V4, "pos"), "e_tanh_sq": (_V4, "real"),
    "e_sqrt": (_V4, "pos"), "e_pow_const": (_V4, "pos"), "e_pow_var": (_V4, "pos"),
    "e_power_fn": (_V4, "pos"), "e_reciprocal": (_V4, "pos"), "e_divide": (_V4, "pos"),
    "e_arcsin": (_V4, "unit"), "e_arctan": (_V4, "real"), "e_arctanh": (_V4, "unit"),
    "e_arccosh": (_V4, "pos"), "e_sinh_cosh": (_V4, "unit"), "e_log_family": (_V4, "pos"),
    "e_exp_family": (_V4, "real"), "e_square_abs": (_V4, "real"), "e_cbrt": (_V4, "pos"),
    "e_hypot": (_V4, "real"), "e_arctan2": (_V4, "pos"), "e_logaddexp": (_V4, "real"),
    "e_sinc": (_V4, "real"), "e_deg": (_V4, "real"), "e_negative": (_V4, "real"),
    "e_fabs": (_V4, "real"), "e_copysign": (_V4, "real"), "e_float_power": (_V4, "pos"),
    "e_subtract_multiply": (_V4, "real"), "e_sigmoid": (_V4, "real"), "e_softplus": (_V4, "real"),
    "e_gelu": (_V4, "real"), "e_matrix_elementwise": (_M3, "real"), "e_scalar_ops": (_V4, "pos"),
    "r_sum_axis": (_M3, "real"), "r_sum_keepdims": (_M3, "real"), "r_mean_axis": (_M3, "real"),
    "r_mean_keepdims": (_M3, "real"), "r_prod": (_V4, "pos"), "r_prod_axis": (_M3, "real"),
    "r_var": (_V4, "real"), "r_var_axis": (_M3, "real"), "r_max": (_V4, "real"),
    "r_max_axis": (_M3, "real"), "r_min_keepdims": (_M3, "real"), "r_amax": (_V4, "real"),
    "r_method_sum": (_V4, "real"), "r_method_axis": (_M3, "real"), "r_method_prod": (_M3, "pos"),
    "r_sum_tuple_axis": (_T3, "real"), "r_mean_neg_axis": (_T3, "real"), "r_norm_like": (_V4, "real"),
    "r_average": (_V4, "real"), "r_ptp": (_V4, "real"), "r_median": (_V4, "real"),
    "r_trace": (_M3, "real"),
    "l_logsumexp": (_V4, "real"), "l_logsumexp_axis": (_M3, "real"), "l_softmax": (_V4, "real"),
    "l_log_softmax": (_M3, "real"), "l_cross_entropy": (_M3[:1], "real"),
    "l_logaddexp_reduce": (_V4, "real"),
    "a_matmul": ((3,), "real"), "a_matmul_mm": (_M3, "real"), "a_dot": ((3,), "real"),
    "a_inner_outer": (_V4, "real"), "a_vdot": (_V4, "real"), "a_solve_vec": ((3,), "pos"),
    "a_solve_mat": (_M3, "well"), "a_solve_rhs": ((3,), "real"), "a_inv": (_M3, "well"),
    "a_inv_trace": (_M3, "well"), "a_det": (_M3, "well"), "a_det_sq": (_M3, "well"),
    "a_slogdet": (_M3, "well"), "a_slogdet_spd": (_M3, "real"), "a_cholesky": (_M3, "real"),
    "a_cholesky_logdet": (_M3, "real"), "a_eigh_vals": (_M3, "real"), "a_eigh_vecs": (_M3, "real"),
    "a_eigvalsh": (_M3, "real"), "a_svd_vals": (_M3, "real"), "a_svd_full": (_M3, "real"),
    "a_norm_vec": (_V4, "real"), "a_norm_ord": (_V4, "real"), "a_norm_fro": (_M3, "real"),
    "a_norm_axis": (_M3, "real"), "a_norm_nuc": (_M3, "real"), "a_norm_2": (_M3, "real"),
    "a_qr": (_M3, "well"), "a_qr_r": (_M3, "well"), "a_matrix_power": (_M3, "real"),
    "a_pinv": (_M3, "well"), "a_multi_dot": (_M3, "real"), "a_quad_form": ((3,), "real"),
    "a_kron": (_V4, "real"), "a_cross": ((3,), "real"), "a_lstsq": (_V4, "real"),
    "p_einsum_ij": (_M3, "real"), "p_einsum_trace": (_M3, "real"), "p_einsum_bilinear": ((3,), "real"),
    "p_einsum_outer": (_V4, "real"), "p_tensordot": (_T3, "real"), "p_tensordot_int": (_M3, "real"),
    "p_matmul_fn": (_M3, "real"), "p_batched_matmul": (_T3, "real"),
    "i_index": (_V4, "real"), "i_slice": (_V4, "real"), "i_step": (_V4, "real"),
    "i_fancy": (_V4, "real"), "i_mask": (_V4, "real"), "i_2d": (_M3, "real"),
    "i_2d_slice": (_M3, "real"), "i_newaxis": (_V4, "real"), "i_ellipsis": (_T3, "real"),
    "i_take": (_V4, "real"), "i_take_axis": (_M3, "real"), "i_take_along": (_M3, "real"),
    "i_diag": (_M3, "real"), "i_triu": (_M3, "real"), "i_diagonal": (_M3, "real"),
    "i_setitem": (_V4, "real"), "i_ix": (_M3, "real"),
    "s_concat": (_V4, "real"), "s_concat_axis": (_M3, "real"), "s_stack": (_V4, "real"),
    "s_hstack_vstack": (_V4, "real"), "s_reshape": (_V4, "real"), "s_reshape_fn": (_M3[:1] + (4,), "real"),
    "s_transpose": (_T3, "real"), "s_ravel": (_M3, "real"), "s_flip": (_V4, "real"),
    "s_roll": (_V4, "real"), "s_tile_repeat": (_V4, "real"), "s_expand_squeeze": (_V4, "real"),
    "s_broadcast_to": (_V4, "real"), "s_pad": (_V4, "real"), "s_diff": (_V4, "real"),
    "s_split": (_V4, "real"), "s_moveaxis": ((2, 3), "real"), "s_atleast": (_V4, "real"),
    "s_append": (_V4, "real"), "s_column_stack": (_V4, "real"), "s_swapaxes": (_M3, "real"),
    "w_where": (_V4, "real"), "w_where_safe": (_V4, "real"), "w_clip": (_V4, "real"),
    "w_clip_method": (_V4, "real"), "w_maximum": (_V4, "real"), "w_fmax": (_V4, "real"),
    "w_relu_net": ((3,), "real"), "w_abs": (_V4, "real"), "w_select": (_V4, "real"),
    "w_max_pairwise": (_V4, "real"),
    "c_cumsum": (_V4, "real"), "c_cumsum_axis": (_M3, "real"), "c_cumprod": (_V4, "real"),
    "c_cumprod_axis": (_M3, "real"), "c_sort": (_V4, "real"), "c_sort_axis": (_M3, "real"),
    "c_maximum_accumulate": (_V4, "real"), "c_add_outer": (_V4, "real"), "c_interp": (_V4, "unit"),
    "c_polyval": (_V4, "real"), "c_convolve": (_V4, "real"), "c_correlate": (_V4, "real"),
    "c_cov": ((3, 4), "real"), "c_vander": (_V4, "real"), "c_trapezoid": (_V4, "real"),
    "z_fft_power": (_V4, "real"), "z_rfft": (_V4, "real"), "z_real_imag": (_V4, "unit"),
    "z_abs_complex": (_V4, "real"), "z_conj": (_V4, "real"), "z_ifft": (_V4, "real"),
    "z_angle": (_V4, "pos"),
    "f_if_value": (_V4, "real"), "f_if_scalar": (_V4, "real"), "f_for_carried": ((3,), "real"),
    "f_for_accumulate": (_V4, "unit"), "f_for_product": (_V4, "real"), "f_while": (_V4, "real"),
    "f_while_value": (_V4, "real"), "f_nested_loops": (_V4, "unit"), "f_loop_list": (_V4, "real"),
    "f_loop_if": (_V4, "real"), "f_rnn": (_V4, "real"), "f_newton_sqrt": (_V4, "pos"),
    "f_helper_call": (_V4, "real"), "f_early_return": (_V4, "real"),
    "f_conditional_expr": (_V4, "real"), "f_inplace_loop": (_V4, "unit"),
    "f_augassign": (_V4, "real"), "f_tuple_unpack": (_V4, "real"),
    "m_mlp": ((3,), "real"), "m_logistic": ((3,), "real"), "m_gaussian_nll": ((3,), "real"),
    "m_gaussian_cov": (_M3, "real"), "m_rosenbrock": (_V4, "real"), "m_attention": ((4, 3), "unit"),
    "m_layernorm": (_M3, "real"), "m_huber": (_V4, "real"), "m_poisson": (_V4, "real"),
    "m_kl": (_V4, "real"), "m_lse_matrix": ((3,), "real"),
}

SPECS.update({
    'x_quantile': ((5,), 'real'),
    'x_nansum': ((4,), 'real'),
    'x_special': ((4,), 'pos'),
    'x_logsumexp_sp': ((4,), 'real'),
    'x_math': ((4,), 'pos'),
    'x_break': ((4,), 'real'),
    'x_continue': ((4,), 'real'),
    'x_comprehension': ((4,), 'real'),
    'x_zip': ((4,), 'real'),
    'x_enumerate': ((4,), 'real'),
    'x_closure': ((4,), 'real'),
    'x_lambda': ((4,), 'real'),
    'x_recursive': ((4,), 'real'),
    'x_dict': ((4,), 'real'),
    'x_tuple_ret': ((4,), 'real'),
    'x_while_newton': ((4,), 'pos'),
    'x_max_builtin': ((4,), 'real'),
    'x_abs_builtin': ((4,), 'real'),
    'x_pow_builtin': ((4,), 'pos'),
    'x_einsum_batch': ((2, 3, 3), 'real'),
    'x_add_at': ((4,), 'real'),
    'x_setitem_mask': ((4,), 'real'),
    'x_slice_assign_2d': ((3, 3), 'real'),
    'x_complex_mul': ((4,), 'real'),
    'x_fft2': ((3, 3), 'real'),
    'x_irfft': ((4,), 'real'),
    'x_reduce_method': ((4,), 'real'),
    'x_gradient': ((4,), 'real'),
    'x_rot90': ((3, 3), 'real'),
    'x_sum_where': ((4,), 'real'),
    'x_max_initial': ((4,), 'real'),
    'x_clip_active_bounds': ((4,), 'real'),
    'x_where_scalar_branch': ((4,), 'real'),
    'x_interp_fp': ((4,), 'real'),
    'x_pow_array': ((4,), 'pos'),
    'x_reversed_cumsum': ((4,), 'real'),
    'x_argmax_index': ((4,), 'real'),
    'x_tolist': ((4,), 'real'),
    'x_item': ((4,), 'real'),
    'x_prod_keep': ((4,), 'real'),
    'x_cond_loop_break_value': ((4,), 'unit'),
})
#: functions with array outputs, for forward mode and Jacobians
ARRAY_SPECS: dict[str, tuple[tuple[int, ...], str]] = {
    'v_tanh': ((3,), 'real'),
    'v_softmax': ((4,), 'real'),
    'v_cumsum': ((4,), 'real'),
    'v_outer': ((3,), 'real'),
    'v_solve': ((3, 3), 'well'),
    'v_inv': ((3, 3), 'well'),
    'v_sort': ((4,), 'real'),
    'v_where': ((4,), 'real'),
    'v_concat': ((4,), 'real'),
    'v_loop': ((4,), 'real'),
    'v_eigh': ((3, 3), 'real'),
    'v_cholesky': ((3, 3), 'real'),
    'v_qr': ((3, 3), 'well'),
    'v_matrix_power': ((3, 3), 'real'),
    'v_det': ((3, 3), 'well'),
    'v_scalar': ((4,), 'real'),
}

CASES = [(name, globals()[name], shape, domain) for name, (shape, domain) in SPECS.items()]
ARRAY_CASES = [(name, globals()[name], shape, domain) for name, (shape, domain) in ARRAY_SPECS.items()]


def inputs(shape: tuple[int, ...], domain: str, seed: int) -> np.ndarray:
    """A float64 point of ``shape`` in ``domain``, away from kinks and ties."""
    rng = np.random.default_rng(seed)
    if domain == "pos":
        return rng.uniform(0.5, 2.0, size=shape)
    if domain == "unit":
        return rng.uniform(-0.8, 0.8, size=shape)
    if domain == "well":
        return 2.5 * np.eye(shape[0]) + 0.3 * rng.normal(size=shape)
    return rng.normal(size=shape)
