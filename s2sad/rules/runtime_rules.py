"""Rules for the helpers that generated code calls, so s2sad can differentiate its
own output (forward over reverse for Hessian-vector products, reverse over reverse).

The helpers are linear in the gradient they receive (``ct`` below), so most
rules say so and give the transposed map as the adjoint; the masks they use are
piecewise constant and carry no gradient.
"""
from __future__ import annotations

from .. import runtime as rt
from .registry import REGISTRY

defvjp = REGISTRY.defvjp

defvjp(rt.unbroadcast, "ct, x", linear="joint", ct="broadcast_tangent(g, ct)")
defvjp(rt.broadcast_tangent, "t, ans", linear="joint", t="unbroadcast(g, t)")
defvjp(rt.reduce_grad, "ct, x, axis=None, keepdims=False", linear="joint",
       ct="np.sum(g, axis=axis, keepdims=keepdims)")
defvjp(rt.mean_grad, "ct, x, axis=None, keepdims=False", linear="joint",
       ct="np.sum(g, axis=axis, keepdims=keepdims) * (np.size(ct) / np.size(x))")
defvjp(rt.own_grad, "ct", linear="joint", ct="g")
defvjp(rt.grad_like, "ct, x", linear="joint", ct="grad_like(g, ct)")
defvjp(rt.extremum_grad, "ct, x, ans, axis=None, keepdims=False", linear="joint",
       ct="extremum_jvp(g, x, ans, axis, keepdims)")
defvjp(rt.getitem_grad, "ct, x, index", returns_container=True, linear="joint", ct="g[index]")
defvjp(rt.add_grads, "a, b", linear="joint", a="g", b="g")
defvjp(rt.add_at, "acc, index, ct", linear="joint", acc="g", ct="g[index]")
defvjp(rt.unpack_grad, "x, grads", linear="joint", grads="tuple(g)")
defvjp(rt.setitem_grad_x, "ct, index", linear="joint", ct="setitem_grad_x(g, index)")
defvjp(rt.setitem_grad_value, "ct, index, v", linear="joint", forward_only=("ct",))
defvjp(rt.stack_grad, "ct, arrays, axis=0", linear="joint", ct="np.stack(g, axis)")
defvjp(rt.concatenate_grad, "ct, arrays, axis=0", linear="joint", ct="np.concatenate(g, axis)")
defvjp(rt.array_grad, "ct, obj", linear="joint", ct="np.array(g)")
defvjp(rt.sum_items_grad, "ct, items", linear="joint", forward_only=("ct",))
defvjp(rt.transpose_grad, "ct, axes=None", linear="joint", ct="transpose_grad(g, invert_axes(axes))")
# matmul_grad_lhs(ct, a, b) is ct @ b.T: bilinear in ct and b (a gives only shapes)
defvjp(rt.matmul_grad_lhs, "ct, a, b", linear="each",
       ct="np.matmul(g, b)", b="matmul_grad_rhs(ct, g, b)")
defvjp(rt.matmul_grad_rhs, "ct, a, b", linear="each",
       ct="np.matmul(a, g)", a="matmul_grad_lhs(ct, a, g)")
defvjp(rt.dot_grad_lhs, "ct, a, b", linear="each", ct="np.dot(g, b)", b="dot_grad_rhs(ct, g, b)")
defvjp(rt.dot_grad_rhs, "ct, a, b", linear="each", ct="np.dot(a, g)", a="dot_grad_lhs(ct, a, g)")

REGISTRY.declare_nondifferentiable(rt.seed, rt.seed_for, rt.zeros_grad, rt.stand_in, rt.stand_in_for,
                                   rt.balanced_eq, rt.clip_mask, rt.check_wrt)
