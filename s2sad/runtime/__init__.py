"""Run-time helpers called by generated gradient code.

Generated code is plain NumPy plus the helpers imported here.  Each helper is a
small, pure function of arrays and a primitive of its own: s2sad differentiates
generated code (for higher orders) through the rules declared for the helpers in
``s2sad/rules/``, never by reading their source.

The helpers live in modules by topic (docs/ARCHITECTURE.md lists them); generated code
imports every one of them from here, and ``__all__`` names them all.
"""
from __future__ import annotations

from .broadcast import broadcast_tangent, unbroadcast
from .checks import (check_assignment_order, check_float_write, check_number, check_replayable, check_out, check_tangent,
                     check_wrt, check_wrt_item, handler_index, view_flag)
from .complex_fft import (dct_grad, dct_transform, fft_lengths, fftn_grad, hfft_grad, ihfft_grad, imag_grad,
                          irfftn_grad, real_grad, real_input, real_like, rfftn_grad)
from .dtypes import cast_grad, grad_like
from .elementwise import (balanced_eq, branch_mask, clip_mask, clip_max_mask, clip_min_mask, interp_grad_fp,
                          interp_slope, interp_slope_grad, log_or_zero, pow_slope, safe_divide, select_grad,
                          sinc_slope)
from .filters import filter_apply, filter_grad
from .integration import simpson_weights
from .indexing import (add_at, added_at, attribute_grad, attribute_of, attribute_tangent, diagonal_index, extremum_at_shares, field_grad, field_of, field_tangent, getitem_grad, index_concat_grad, index_concat_jvp, index_of_item, scatter_value,
                       setitem_grad_value, setitem_grad_x, strided_index, take_along_axis_grad, take_grad, ufunc_add_at,
                       ufunc_maximum_at, ufunc_minimum_at, ufunc_subtract_at)
from .linalg import (band_of, banded_matrix, cdist_weights, cholesky_grad, cholesky_jvp, cov_matrix, cov_matrix_grad, cov_rows, cov_rows_grad,
                     det_cofactor, det_cofactor_jvp, eigh_grad, eigh_jvp, lstsq_full_rank, norm_grad, pinv_grad, pinv_jvp, qr_grad,
                     qr_jvp, read_triangle, real_eigenvalues, slogdet_grad, solve_grad_a, solve_grad_b,
                     solve_matrix, solve_matrix_grad, svd_grad, svd_jvp, triangle_grad)
from .memory import mul_into, stand_in, stand_in_for
from .products import (convolve_full, convolve_grad, correlate_grad_a, correlate_grad_v, cross_grad, dot_grad_lhs,
                       dot_grad_rhs, einsum_grad, kron_grad_lhs, kron_grad_rhs, matmul_grad_lhs, matmul_grad_rhs,
                       multi_dot_grad, multi_dot_jvp, polyder_grad, polyint_grad, polymul_operand, tensordot_grad_lhs,
                       tensordot_grad_rhs)
from .reductions import (accumulate_indices, cumprod_grad, cumprod_jvp, cumsum_grad, extremum_grad, extremum_initial_grad,
                         extremum_jvp, extremum_where_grad, mean_grad, median_grad, partition_indices,
                         prod_grad, ptp_grad, quantile_grad, quantile_jvp, reduce_grad, sort_grad, sort_jvp,
                         var_grad)
from .seeds import seed, seed_for, stop_gradient
from .sequences import (array_grad, bind_closure, call_object, choice_grad, choice_jvp, concat, concat_grad, fields_of, make_record, merge_dicts, merge_dicts_grad, repeat_items, repeat_items_grad, sequence_grad,
                        sequence_jvp, check_length, check_sequence, check_stored_array, check_shared_item, has_key, sort_order, items_in_order,
                        items_in_order_grad, items_in_order_tangent, prod_operands, prod_operands_grad, sum_items_grad, unpack_grad, check_list,
                        position_of, replace_fields, reversed_order, without_item, without_item_grad, check_slice_length)
from .shapes import (as_column, axis_end, axis_order, axis_shape, block_grad, concatenate_grad, delete_grad, diagonal_grad, diff_embed,
                     diff_grad, gradient_grad, insert_grad, invert_axes, join_grad, linspace_grad, meshgrid_grad,
                     meshgrid_grad_transpose, pad_grad, pad_values_grad, repeat_grad, reshape_back, reshape_grad,
                     rollaxis_grad, rot90_grad, stack_grad, tile_grad, transpose_grad)
from .stepping import column_vjp, no_third_order, step_jvp
from .trees import add_grads, distinct, own_grad, zeros_grad

__all__ = [
    # broadcast
    "broadcast_tangent", "unbroadcast",
    # checks
    "check_assignment_order", "check_float_write", "check_number", "check_replayable", "check_out", "check_tangent",
    "check_wrt", "check_wrt_item", "handler_index", "view_flag",
    # complex_fft
    "dct_grad", "dct_transform", "fft_lengths", "fftn_grad", "hfft_grad", "ihfft_grad", "imag_grad", "irfftn_grad", "real_grad",
    "real_input", "real_like", "rfftn_grad",
    # dtypes
    "cast_grad", "grad_like",
    # elementwise
    "balanced_eq", "branch_mask", "clip_mask", "clip_max_mask", "clip_min_mask", "interp_grad_fp",
    "interp_slope", "interp_slope_grad", "log_or_zero", "pow_slope", "safe_divide", "select_grad",
    "sinc_slope",
    # filters
    "filter_apply", "filter_grad",
    # integration
    "simpson_weights",
    # indexing
    "add_at", "added_at", "attribute_grad", "attribute_of", "attribute_tangent", "diagonal_index", "extremum_at_shares", "field_grad", "field_of", "field_tangent", "getitem_grad", "index_concat_grad", "index_concat_jvp", "index_of_item", "scatter_value",
    "setitem_grad_value", "setitem_grad_x", "strided_index", "take_along_axis_grad", "take_grad", "ufunc_add_at",
    "ufunc_maximum_at", "ufunc_minimum_at", "ufunc_subtract_at",
    # linalg
    "band_of", "banded_matrix", "cdist_weights", "cholesky_grad", "cholesky_jvp", "cov_matrix", "cov_matrix_grad", "cov_rows", "cov_rows_grad",
    "det_cofactor", "det_cofactor_jvp", "eigh_grad", "eigh_jvp", "lstsq_full_rank", "norm_grad", "pinv_grad", "pinv_jvp", "qr_grad",
    "qr_jvp", "read_triangle", "real_eigenvalues", "slogdet_grad", "solve_grad_a", "solve_grad_b",
    "solve_matrix", "solve_matrix_grad", "svd_grad", "svd_jvp", "triangle_grad",
    # memory
    "mul_into", "stand_in", "stand_in_for",
    # products
    "convolve_full", "convolve_grad", "correlate_grad_a", "correlate_grad_v", "dot_grad_lhs", "dot_grad_rhs",
    "cross_grad", "einsum_grad", "kron_grad_lhs", "kron_grad_rhs", "matmul_grad_lhs", "matmul_grad_rhs", "multi_dot_grad", "polyder_grad", "polyint_grad", "polymul_operand",
    "multi_dot_jvp", "tensordot_grad_lhs", "tensordot_grad_rhs",
    # reductions
    "accumulate_indices", "cumprod_grad", "cumprod_jvp", "cumsum_grad", "extremum_grad", "extremum_initial_grad",
    "extremum_jvp", "extremum_where_grad", "mean_grad", "median_grad", "partition_indices",
    "prod_grad", "ptp_grad", "quantile_grad", "quantile_jvp", "reduce_grad", "sort_grad", "sort_jvp",
    "var_grad",
    # seeds
    "seed", "seed_for", "stop_gradient",
    # sequences
    "array_grad", "bind_closure", "call_object", "choice_grad", "choice_jvp", "concat", "concat_grad", "fields_of", "make_record", "merge_dicts", "merge_dicts_grad", "repeat_items", "repeat_items_grad", "sequence_grad",
    "sequence_jvp", "check_length", "check_sequence", "check_stored_array", "check_shared_item", "has_key", "sort_order", "items_in_order", "items_in_order_grad",
    "items_in_order_tangent", "prod_operands", "prod_operands_grad", "sum_items_grad", "unpack_grad", "check_list", "position_of", "replace_fields", "reversed_order", "without_item", "check_slice_length",
    "without_item_grad",
    # shapes
    "as_column", "axis_end", "axis_order", "axis_shape", "block_grad", "concatenate_grad", "delete_grad", "diagonal_grad", "diff_embed",
    "diff_grad", "gradient_grad", "insert_grad", "invert_axes", "join_grad", "linspace_grad", "meshgrid_grad",
    "meshgrid_grad_transpose", "pad_grad", "pad_values_grad", "repeat_grad", "reshape_back", "reshape_grad",
    "rollaxis_grad", "rot90_grad", "stack_grad", "tile_grad", "transpose_grad",
    # stepping
    "column_vjp", "no_third_order", "step_jvp",
    # trees
    "add_grads", "distinct", "own_grad", "zeros_grad",
]
