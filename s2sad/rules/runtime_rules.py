"""Rules for the helpers that generated code calls, so that s2sad differentiates its own
output (forward over reverse for Hessian-vector products, reverse over reverse) through
declared rules only: no helper is ever read as source.

Most helpers are linear in the gradient they receive (``ct`` below), and in nothing
else that carries a derivative (the other arguments give shapes, or masks that are
piecewise constant): they are declared linear, with their transpose as the adjoint --
often another helper (``extremum_grad`` and ``extremum_jvp`` are each other's).
Where a helper is not linear in an argument (``prod_grad`` in ``x``, ``cholesky_grad`` in
the factor), the tangent is a complex step (``step_jvp``: exact to rounding, for helpers
analytic in that argument) and the adjoint the transposed derivative, entry by entry
(``column_vjp``); where the helper is the gradient of a scalar ``<ct, f(x)>``, its
derivative in ``x`` is a symmetric Hessian, and the adjoint is the tangent itself.
The helpers of those rules refuse a third derivative (``no_third_order``).
"""
from __future__ import annotations

from .. import runtime as rt
from .registry import REGISTRY

defvjp = REGISTRY.defvjp
_LINEAR_IN_PLACE = "column_vjp({f}, {i}, g, ({args}), True)"


def nonlinear(fun, params: str, linear: dict[str, str], stepped: tuple[str, ...] = (),
              symmetric: tuple[str, ...] = (), **vjps: str) -> None:
    """A helper linear in the parameters of ``linear`` (each one's template is its
    transpose), and analytic in those of ``stepped``; ``symmetric``: stepped parameters
    in which the helper is a gradient, whose adjoint is their tangent."""
    names = [p.split("=")[0].strip() for p in params.split(",")]
    args = ", ".join(names) + ("," if len(names) == 1 else "")
    f = fun.__name__
    jvp = {}
    for p in linear:
        jvp[p] = f"{f}({', '.join('t' if q == p else q for q in names)})"
    for p in stepped:
        i = names.index(p)
        jvp[p] = f"step_jvp({f}, {i}, t, ({args}))"
        if p in symmetric:
            vjps[p] = f"step_jvp({f}, {i}, g, ({args}))"
        else:
            vjps[p] = f"column_vjp({f}, {i}, g, ({args}))"
    for p, transpose in linear.items():
        vjps[p] = transpose or _LINEAR_IN_PLACE.format(f=f, i=names.index(p), args=args)
    defvjp(fun, params, jvp=jvp, **vjps)


def attribute_read(read, grad, tangent) -> None:
    """``read(x, name, where)``, ``x.name`` of a record (or of an array), with the helpers of its
    gradient and its tangent, linear and each other's transposes."""
    g, t = grad.__name__, tangent.__name__
    defvjp(read, "x, name, where", name=".", containers=("x",), returns_container=True,
           jvp={"x": f"{t}(t, x, name, where)"}, x=f"{g}(g, x, name, where)")
    defvjp(grad, "ct, x, name, where", returns_container=True, linear="joint", ct=f"{t}(g, x, name, where)")
    defvjp(tangent, "t, x, name, where", containers=("t",), returns_container=True, linear="joint",
           t=f"{g}(g, x, name, where)")


# --- linear in the incoming gradient ---------------------------------------------------
defvjp(rt.unbroadcast, "ct, x", linear="joint", ct="broadcast_tangent(g, ct)")
defvjp(rt.broadcast_tangent, "tan, like", linear="joint", tan="unbroadcast(g, tan)")
defvjp(rt.reduce_grad, "ct, x, axis=None, keepdims=False", linear="joint",
       ct="np.sum(g, axis=axis, keepdims=keepdims)")
defvjp(rt.mean_grad, "ct, x, axis=None, keepdims=False", linear="joint",
       ct="np.sum(g, axis=axis, keepdims=keepdims) * (np.size(ct) / np.size(x))")
defvjp(rt.own_grad, "ct", linear="joint", ct="g")
defvjp(rt.check_tangent, "t, x, name", linear="joint", t="unbroadcast(g, t)")
defvjp(rt.grad_like, "ct, x", linear="joint", ct="grad_like(g, ct)")
defvjp(rt.cast_grad, "ct, x, like", linear="joint", ct="cast_grad(g, ct, ct)")
defvjp(rt.distinct, "a, b=None, c=None, d=None, e=None, f=None, h=None, k=None", linear="joint",
       returns_container=True, **{p: f"g[{i}]" for i, p in enumerate("abcdefhk")})
defvjp(rt.getitem_grad, "ct, x, index", returns_container=True, linear="joint", ct="g[index]")
defvjp(rt.add_grads, "a, b", containers=("a", "b"), returns_container=True, linear="joint", a="g", b="g")
defvjp(rt.items_in_order, "items, order=None", name="list", containers=("items",), returns_container=True,
       jvp={"items": "items_in_order_tangent(t, items, order)"}, items="items_in_order_grad(g, items, order)")
defvjp(rt.items_in_order_grad, "ct, items, order=None", containers=("ct",), returns_container=True, linear="joint",
       ct="items_in_order_tangent(g, items, order)")
defvjp(rt.items_in_order_tangent, "t, items, order=None", containers=("t",), returns_container=True, linear="joint",
       t="items_in_order_grad(g, items, order)")
attribute_read(rt.field_of, rt.field_grad, rt.field_tangent)
attribute_read(rt.attribute_of, rt.attribute_grad, rt.attribute_tangent)
defvjp(rt.add_at, "acc, index, ct", returns_container=True, linear="joint", acc="g", ct="g[index]")
defvjp(rt.added_at, "acc, x, index, ct", containers=("acc", "ct"), returns_container=True, linear="joint", acc="g",
       ct="g[index]")
defvjp(rt.unpack_grad, "x, grads", linear="joint", grads="tuple(g)")
# (the gradient of a list or dict written into, ``d[k] = v``, is a list or dict)
defvjp(rt.setitem_grad_x, "ct, index", containers=("ct",), returns_container=True, linear="joint",
       ct="setitem_grad_x(g, index)")
defvjp(rt.setitem_grad_value, "ct, index, v", containers=("ct",), linear="joint", ct="scatter_value(g, index, ct)")
defvjp(rt.scatter_value, "u, index, like", containers=("like",), returns_container=True, linear="joint",
       u="setitem_grad_value(g, index, u)")
defvjp(rt.stack_grad, "ct, arrays, axis=0", linear="joint", ct="np.stack(g, axis)")
defvjp(rt.concatenate_grad, "ct, arrays, axis=0", linear="joint", ct="np.concatenate(g, axis)")
defvjp(rt.array_grad, "ct, obj", linear="joint", ct="np.array(g)")
defvjp(rt.make_record, "cls, items, tangent=False", containers=("items",), returns_container=True, linear="joint",
       jvp={"items": "make_record(cls, t, True)"}, items="tuple(g)[:len(items)]")
defvjp(rt.replace_fields, "record, names, values", name="_replace", containers=("record", "values"),
       returns_container=True, linear="joint", record="replace_fields(g, names, zeros_grad(values))",
       values="fields_of(g, names)")
defvjp(rt.fields_of, "record, names", containers=("record",), returns_container=True, linear="joint",
       record="replace_fields(zeros_grad(record), names, g)")
defvjp(rt.concat, "x, y", name="+", containers=("x", "y"), returns_container=True, linear="joint",
       x="concat_grad(g, x, y, False)", y="concat_grad(g, x, y, True)")
defvjp(rt.concat_grad, "ct, x, y, right", containers=("ct",), returns_container=True, linear="joint",
       ct="column_vjp(concat_grad, 0, g, (ct, x, y, right), True)")
defvjp(rt.repeat_items, "x, n", name="*", containers=("x",), returns_container=True, linear="joint",
       refuse={"n": "a list or tuple times a value that carries a gradient is arithmetic s2sad does not "
                    "differentiate ([x] * n repeats the items for an int n); write np.asarray([...]) * a"},
       x="repeat_items_grad(g, x, n)")
defvjp(rt.repeat_items_grad, "ct, x, n", containers=("ct",), returns_container=True, linear="joint",
       ct="repeat_items(g, n)")
defvjp(rt.without_item, "items, key", name="del", containers=("items",), returns_container=True, linear="joint",
       items="without_item_grad(g, items, key)")
defvjp(rt.without_item_grad, "ct, items, key", containers=("ct",), returns_container=True, linear="joint",
       ct="without_item(g, key)")
defvjp(rt.merge_dicts, "a, b", name="{**a, **b}", containers=("a", "b"), returns_container=True,
       linear="joint", a="merge_dicts_grad(g, a, b, False)", b="merge_dicts_grad(g, a, b, True)")
defvjp(rt.merge_dicts_grad, "ct, a, b, right", containers=("ct",), returns_container=True, linear="joint",
       ct="column_vjp(merge_dicts_grad, 0, g, (ct, a, b, right), True)")
defvjp(rt.bind_closure, "values, function, outer", containers=("values",), returns_container=True,
       linear="joint", values="tuple(g)")
defvjp(rt.sum_items_grad, "ct, items", linear="joint", ct="broadcast_tangent(sum(g), ct)")
defvjp(rt.transpose_grad, "ct, axes=None", linear="joint", ct="transpose_grad(g, invert_axes(axes))")
defvjp(rt.reshape_grad, "ct, x", linear="joint", ct="np.reshape(g, np.shape(ct))")
defvjp(rt.as_column, "a", linear="joint", a="reshape_grad(g, a)")
defvjp(rt.cumsum_grad, "ct, x, axis=None", linear="joint", ct="np.cumsum(g, axis)")
defvjp(rt.diagonal_grad, "ct, x, offset=0, axis1=0, axis2=1", linear="joint",
       ct="unbroadcast(np.diagonal(g, offset, axis1, axis2), ct)")
defvjp(rt.repeat_grad, "ct, x, repeats, axis=None", linear="joint", ct="np.repeat(g, repeats, axis)")
defvjp(rt.take_grad, "ct, x, indices, axis=None, mode='raise'", linear="joint",
       ct="np.take(g, indices, axis, mode=mode)")
defvjp(rt.tile_grad, "ct, x, reps", linear="joint", ct="np.tile(g, reps)")
defvjp(rt.pad_grad, "ct, x, pad_width, mode='constant', reflect_type='even'", linear="joint",
       ct="np.pad(g, pad_width, mode)")
defvjp(rt.pad_values_grad, "ct, x, pad_width, mode='constant', values=0", linear="joint",
       ct="np.pad(np.zeros(np.shape(x), np.result_type(ct)), pad_width, 'constant', "
          "constant_values=np.broadcast_to(ct, (np.ndim(x), 2))) * (mode == 'constant')")
defvjp(rt.rollaxis_grad, "ct, x, axis, start=0", linear="joint", ct="np.rollaxis(g, axis, start)")
defvjp(rt.rot90_grad, "ct, k=1, axes=None", linear="joint",
       ct="np.rot90(g, k, (0, 1) if axes is None else axes)")
defvjp(rt.diff_grad, "ct, x, n=1, axis=-1, prepend=None, append=None, part='a'", linear="joint",
       ct="diff_embed(g, x, n, axis, prepend, append, part)")
defvjp(rt.diff_embed, "u, x, n=1, axis=-1, prepend=None, append=None, part='a'", linear="joint",
       u="diff_grad(g, x, n, axis, prepend, append, part)")
defvjp(rt.join_grad, "ct, arrays, axis, lift", linear="joint",
       ct="column_vjp(join_grad, 0, g, (ct, arrays, axis, lift), True)")
defvjp(rt.linspace_grad, "ct, end, num=50, endpoint=True, retstep=False, axis=0, at_stop=True",
       linear="joint",
       ct="column_vjp(linspace_grad, 0, g, (ct, end, num, endpoint, retstep, axis, at_stop), True)")
# the matrix scipy.linalg.solve reads of a, and its transpose
defvjp(rt.banded_matrix, "l_and_u, ab", linear="joint", l_and_u=None, ab="band_of(l_and_u, g, np.shape(ab))")
defvjp(rt.band_of, "l_and_u, a, shape", linear="joint", l_and_u=None, shape=None, a="banded_matrix(l_and_u, g)")
defvjp(rt.solve_matrix, "a, assume_a=None, lower=False, transposed=False", linear="joint",
       a="solve_matrix_grad(g, assume_a, lower, transposed)")
defvjp(rt.solve_matrix_grad, "ct, assume_a=None, lower=False, transposed=False", linear="joint",
       ct="solve_matrix(g, assume_a, lower, transposed)")
# linear in the gradient, piecewise constant in the rest (which entries tie, the order)
defvjp(rt.extremum_grad, "ct, x, m, axis=None, keepdims=False", linear="joint",
       ct="extremum_jvp(g, x, m, axis, keepdims)")
defvjp(rt.extremum_jvp, "tan, x, m, axis=None, keepdims=False", linear="joint",
       tan="extremum_grad(g, x, m, axis, keepdims)")
defvjp(rt.ptp_grad, "ct, x, axis=None, keepdims=False", linear="joint",
       ct="extremum_jvp(g, x, np.max(x, axis=axis, keepdims=keepdims), axis, keepdims) - "
          "extremum_jvp(g, x, np.min(x, axis=axis, keepdims=keepdims), axis, keepdims)")
defvjp(rt.sort_grad, "ct, x, axis=-1", linear="joint", ct="sort_jvp(g, x, axis)")
defvjp(rt.sort_jvp, "tan, x, axis=-1", linear="joint", tan="sort_grad(g, x, axis)")
defvjp(rt.choice_grad, "ct, items, m, other=None", linear="joint", ct="choice_jvp(g, items, m, other)")
defvjp(rt.choice_jvp, "tan, items, m, other=None", linear="joint", tan="choice_grad(g, items, m, other)")

# --- bilinear: linear in the gradient and in one operand ---------------------------------
# matmul_grad_lhs(ct, a, b) is ct @ b.T: bilinear in ct and b (a gives only shapes)
defvjp(rt.matmul_grad_lhs, "ct, a, b", linear="each",
       ct="np.matmul(g, b)", b="matmul_grad_rhs(ct, g, b)")
defvjp(rt.matmul_grad_rhs, "ct, a, b", linear="each",
       ct="np.matmul(a, g)", a="matmul_grad_lhs(ct, a, g)")
defvjp(rt.dot_grad_lhs, "ct, a, b", linear="each", ct="np.dot(g, b)", b="dot_grad_rhs(ct, g, b)")
defvjp(rt.dot_grad_rhs, "ct, a, b", linear="each", ct="np.dot(a, g)", a="dot_grad_lhs(ct, a, g)")
defvjp(rt.tensordot_grad_lhs, "ct, a, b, axes=2", linear="each",
       ct="np.tensordot(g, b, axes)", b="tensordot_grad_rhs(ct, g, b, axes)")
defvjp(rt.tensordot_grad_rhs, "ct, a, b, axes=2", linear="each",
       ct="np.tensordot(a, g, axes)", a="tensordot_grad_lhs(ct, a, g, axes)")
defvjp(rt.kron_grad_lhs, "ct, a, b", linear="each", ct="np.kron(g, b)", b="kron_grad_rhs(ct, g, b)")
# cross_grad(ct, a, b) is b x ct (a gives the shape): linear in ct and in b
defvjp(rt.cross_grad, "ct, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None", linear="each",
       ct="np.cross(g, b, axisa, axisb, axisc, axis)", b="cross_grad(-ct, b, g, axisb, axisa, axisc, axis)")
defvjp(rt.kron_grad_rhs, "ct, a, b", linear="each", ct="np.kron(a, g)", a="kron_grad_lhs(ct, a, g)")
defvjp(rt.var_grad, "ct, x, axis=None, ddof=0, keepdims=False", linear="each",  # 2 ct (x - mean) / n
       ct="np.sum(g * var_grad(np.ones_like(ct), x, axis, ddof, keepdims), axis=axis, keepdims=keepdims)",
       x="var_grad(ct, g, axis, ddof, keepdims)")
# einsum_grad(ct, i, ...): linear in ct and in every operand but the i-th (which gives its shape);
# in the sublist form, subscripts is operand 0 too
_EINSUM = "ct, i, subscripts, a, b=None, c=None, d=None"
_EINSUM_SLOTS = [("subscripts", 0), ("a", 0), ("b", 1), ("c", 2), ("d", 3)]  # (parameter, its i)
defvjp(rt.einsum_grad, _EINSUM,
       jvp={"ct": "einsum_grad(t, i, subscripts, a, b, c, d)",
            **{p: f"zeros_grad(ans) if i == {k} else einsum_grad(ct, i, "
                  f"{', '.join('t' if q == p else q for q, _ in _EINSUM_SLOTS)})" for p, k in _EINSUM_SLOTS}},
       ct="column_vjp(einsum_grad, 0, g, (ct, i, subscripts, a, b, c, d), True)",
       **{p: f"zeros_grad({p}) if i == {k} else "
             f"column_vjp(einsum_grad, {n + 2}, g, (ct, i, subscripts, a, b, c, d), True)"
          for n, (p, k) in enumerate(_EINSUM_SLOTS)})

# --- elementwise -----------------------------------------------------------------------
defvjp(rt.safe_divide, "x, y", broadcast=("x", "y"), elementwise=True,
       x="safe_divide(g, y)", y="-g * safe_divide(ans, y)")  # 0 where y is 0, as the function
defvjp(rt.pow_slope, "x, y, n=1", broadcast=("x", "y"), elementwise=True,
       jvp={"y": "step_jvp(pow_slope, 1, t, (x, y, n))"},
       x="g * pow_slope(x, y, n + 1)", y="column_vjp(pow_slope, 1, g, (x, y, n))")
defvjp(rt.sinc_slope, "x, n=1", elementwise=True, x="g * sinc_slope(x, n + 1)")
defvjp(rt.log_or_zero, "x, y=None", elementwise=True, x="safe_divide(g, x)", y=None)
defvjp(rt.cdist_weights, "ct, d, metric", broadcast=("ct", "d"), elementwise=True, metric=None,
       ct="cdist_weights(g, d, metric)", d="-g * safe_divide(ans, d) if metric == 'euclidean' else 0.0 * g")
defvjp(rt.mul_into, "x, y", broadcast=("x", "y"), elementwise=True, x="g * y", y="g * x")

# --- not linear: a complex step and its transpose ----------------------------------------
nonlinear(rt.prod_grad, "ct, x, axis=None, keepdims=False",
          {"ct": "np.sum(g * prod_grad(np.ones_like(ct), x, axis, keepdims), axis=axis, keepdims=keepdims)"},
          ("x",), symmetric=("x",))
nonlinear(rt.cumprod_grad, "ct, x, axis=None", {"ct": "cumprod_jvp(g, x, axis)"}, ("x",), symmetric=("x",))
nonlinear(rt.cumprod_jvp, "tan, x, axis=None", {"tan": "cumprod_grad(g, x, axis)"}, ("x",))
nonlinear(rt.norm_grad, "ct, x, m, ord=None, axis=None, keepdims=False, vector=False",
          {"ct": "np.sum(g * norm_grad(np.ones_like(ct), x, m, ord, axis, keepdims, vector), axis=axis, "
                 "keepdims=keepdims)"}, ("x", "m"))
nonlinear(rt.cholesky_grad, "ct, L, upper=False", {"ct": "cholesky_jvp(g, L, upper)"}, ("L",))
nonlinear(rt.cholesky_jvp, "tan, L, upper=False", {"tan": "cholesky_grad(g, L, upper)"}, ("L",))
nonlinear(rt.eigh_grad, "ct, a, wv, UPLO='L'", {"ct": "eigh_jvp(g, a, wv, UPLO)"}, ("wv",))
nonlinear(rt.eigh_jvp, "tan, a, wv, UPLO='L'", {"tan": "eigh_grad(g, a, wv, UPLO)"}, ("wv",))
# the gradient of det and its derivative, both symmetric (a Hessian): each its own transpose
defvjp(rt.det_cofactor, "a", jvp={"a": "det_cofactor_jvp(t, a)"}, a="det_cofactor_jvp(g, a)")
nonlinear(rt.det_cofactor_jvp, "tan, a", {"tan": "det_cofactor_jvp(g, a)"}, ("a",))
nonlinear(rt.slogdet_grad, "ct, a",
          {"ct": "(np.zeros_like(ct[0]), np.trace(np.linalg.solve(a, g), axis1=-2, axis2=-1))"},
          ("a",), symmetric=("a",))
nonlinear(rt.solve_grad_b, "ct, a, b", {"ct": ""}, ("a",))
nonlinear(rt.solve_grad_a, "ct, a, b, x", {"ct": "", "x": ""}, ("a",))
nonlinear(rt.pinv_grad, "ct, a, p", {"ct": "pinv_jvp(g, a, p)"}, ("a", "p"))
nonlinear(rt.pinv_jvp, "tan, a, p", {"tan": "pinv_grad(g, a, p)"}, ("a", "p"))
nonlinear(rt.qr_grad, "ct, a, qr, mode='reduced'", {"ct": "qr_jvp(g, a, qr, mode)"}, ("qr",))
nonlinear(rt.qr_jvp, "tan, a, qr, mode='reduced'", {"tan": "qr_grad(g, a, qr, mode)"}, ("qr",))
nonlinear(rt.svd_grad, "ct, a, usv, full_matrices=True, compute_uv=True",
          {"ct": "svd_jvp(g, a, usv, full_matrices, compute_uv)"}, ("a", "usv"))
nonlinear(rt.svd_jvp, "tan, a, usv, full_matrices=True, compute_uv=True",
          {"tan": "svd_grad(g, a, usv, full_matrices, compute_uv)"}, ("a", "usv"))

# --- the derivatives above: a third derivative is refused --------------------------------
defvjp(rt.step_jvp, "fun, which, tan, args", jvp={"tan": "no_third_order(fun)", "args": "no_third_order(fun)"},
       tan="no_third_order(fun)", args="no_third_order(fun)")
defvjp(rt.column_vjp, "fun, which, u, args, linear=False",
       jvp={"u": "no_third_order(fun)", "args": "no_third_order(fun)"},
       u="no_third_order(fun)", args="no_third_order(fun)")

REGISTRY.declare_nondifferentiable(rt.seed, rt.seed_for, rt.zeros_grad, rt.stand_in, rt.stand_in_for,
                                   rt.balanced_eq, rt.clip_mask, rt.branch_mask, rt.check_wrt,
                                   rt.check_assignment_order, rt.invert_axes, rt.no_third_order,
                                   rt.check_number, rt.sort_order, rt.has_key,
                                   rt.check_length, rt.check_sequence, rt.check_stored_array,
                                   rt.check_shared_item, rt.check_replayable, rt.check_list, rt.position_of,
                                   rt.reversed_order, rt.check_slice_length, rt.diagonal_index,
                                   rt.strided_index)

# --- helpers of s2sad/rules/numpy_more_rules.py that are not linear ---------------------------
REGISTRY.declare_nondifferentiable(rt.check_wrt_item, rt.handler_index)
# scipy_more_rules.py's: ndimage's filters (linear: each one's transpose the other), simpson's
# weights (of sample points s2sad does not differentiate)
_FILTER = "kind, params, mode, axes"
defvjp(rt.filter_grad, f"ct, x, {_FILTER}", linear="joint", ct=f"filter_apply(g, {_FILTER})")
defvjp(rt.filter_apply, f"x, {_FILTER}", linear="joint", x=f"filter_grad(g, x, {_FILTER})")
REGISTRY.declare_nondifferentiable(rt.simpson_weights)
# (generated code's ``call_object(x, ...)`` is read as ``x.__call__(...)`` before any rule applies)
REGISTRY.declare_refused(rt.call_object, "call_object(x, ...) is generated code's x(...); write x(...)")

# multi_dot_grad and multi_dot_jvp: linear in ct (tan), multilinear in the arrays (a complex step)
for _multi in (rt.multi_dot_grad, rt.multi_dot_jvp):
    _name = _multi.__name__
    defvjp(_multi, "ct, arrays", containers=("ct", "arrays"), returns_container=True,
           jvp={"ct": f"{_name}(t, arrays)", "arrays": f"step_jvp({_name}, 1, t, (ct, arrays))"},
           ct=f"column_vjp({_name}, 0, g, (ct, arrays), True)", arrays=f"column_vjp({_name}, 1, g, (ct, arrays))")
