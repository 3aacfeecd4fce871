"""Issue 17, point 6: crashes fixed at their mechanism, and gradients of their argument's type.

Each function is checked against central finite differences (or its exact gradient).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad
from s2sad import grad, hessian, hvp, value_and_grad, vjp

from gradcheck import make_function, numerical_grad

X3 = np.array([0.3, -0.5, 0.7])


def check(f, x, rtol: float = 1e-6, atol: float = 1e-8) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        g = grad(f)(x)
        _, h = value_and_grad(f)(x)
    np.testing.assert_allclose(g, numerical_grad(f, [x], 0), rtol=rtol, atol=atol)
    np.testing.assert_allclose(h, g, rtol=1e-12)


# --- a dict that gains a key ----------------------------------------------------------------
def dict_gains_key(x):
    d = {"a": x[0], "b": x[1]}
    d["c"] = d["a"] * d["b"]
    return d["c"] + d["a"]


def dict_param_gains_key(params, x):
    params["c"] = params["a"] * x
    params["a"] = params["a"] * 2
    return np.sum(params["c"]) + np.sum(params["a"] ** 2) + np.sum(params["b"])


def test_a_dict_that_gains_a_key():
    check(dict_gains_key, X3)
    params = {"a": np.array([1.0, 2.0]), "b": np.array([3.0])}
    for g in (grad(dict_param_gains_key)(params, 2.0), value_and_grad(dict_param_gains_key)(params, 2.0)[1]):
        assert list(g) == ["a", "b"]  # the argument's keys, not the one the function added
        np.testing.assert_allclose(g["a"], 2.0 + 8.0 * params["a"])
        np.testing.assert_allclose(g["b"], [1.0])
    assert list(params) == ["a", "b"]


# --- np.diff of more differences than entries -------------------------------------------------
def diff_all_gone(x):
    return np.sum(np.diff(x.reshape(1, 3), n=2, axis=0) ** 2) + np.sum(x)


def diff_more_than_rows(x):
    return np.sum(np.diff(x.reshape(2, 3), n=3, axis=0) ** 2) + np.sum(x ** 2)


def diff_with_ends(x):
    return np.sum(np.diff(x, n=3, prepend=x[:1], append=2.0) ** 3)


def diff_second(x):
    return np.sum(np.diff(x, n=2) ** 3)


@pytest.mark.parametrize("f", [diff_all_gone, diff_more_than_rows, diff_with_ends, diff_second],
                         ids=lambda f: f.__name__)
def test_diff_of_n_at_least_the_axis_length(f):
    check(f, np.array([0.3, -0.5, 0.7, 1.1, 2.0, -0.2])[:3 if f is diff_all_gone else 6])


# --- iterating over a dict ------------------------------------------------------------------
def dict_iter(x):
    params = {"a": x[:2], "b": x[2:]}
    total = 0.0
    for k in params:
        total = total + np.sum(params[k] ** 2)
    return total


def dict_iter_generator(x):
    params = {"a": x[:2], "b": x[2:]}
    return sum(np.sum(params[k] ** 2) for k in params)


def dict_keys(x):
    params = {"a": x[:2], "b": x[2:]}
    total = 0.0
    for k in params.keys():
        total = total + np.sum(params[k] ** 2)
    return total


def dict_values(x):
    params = {"a": x[:2], "b": x[2:]}
    return sum(np.sum(np.sin(v)) for v in params.values())


def dict_items(x):
    params = {"a": x[:2], "bb": x[2:]}
    total = 0.0
    for name, v in params.items():
        total = total + np.sum(v ** 3) * len(name)
    return total


def dict_rebound_in_loop(x):
    params = {"a": x[:2], "b": x[2:]}
    for k in params:
        params[k] = params[k] * params[k]
    return np.sum(params["a"]) + np.sum(params["b"] * 3)


@pytest.mark.parametrize("f", [dict_iter, dict_iter_generator, dict_keys, dict_values, dict_items,
                               dict_rebound_in_loop], ids=lambda f: f.__name__)
def test_iterating_over_a_dict(f):
    check(f, X3)


def dict_param_loss(params):
    total = 0.0
    for k in params:
        total = total + np.sum(params[k] ** 2)
    return total


def dict_param_items(params):
    return sum(np.sum(np.sin(v)) * len(k) for k, v in params.items())


def test_iterating_over_a_dict_argument():
    params = {"w": np.array([1.0, 2.0]), "bias": np.array([3.0])}
    g = grad(dict_param_loss)(params)
    assert list(g) == ["w", "bias"]
    np.testing.assert_allclose(g["w"], [2.0, 4.0])
    np.testing.assert_allclose(g["bias"], [6.0])
    g = value_and_grad(dict_param_items)(params)[1]
    np.testing.assert_allclose(g["w"], np.cos(params["w"]))
    np.testing.assert_allclose(g["bias"], 4 * np.cos(params["bias"]))


def test_iterating_over_a_list_is_unchanged():
    xs = [np.array([1.0, 2.0]), np.array([3.0])]
    g = grad(lambda_free_list_loss)(xs)
    assert isinstance(g, list)
    np.testing.assert_allclose(g[0], [2.0, 4.0])
    np.testing.assert_allclose(g[1], [6.0])


def lambda_free_list_loss(xs):
    t = 0.0
    for v in xs:
        t = t + np.sum(v ** 2)
    return t


# --- np.linalg.norm and np.max of lists of scalars ---------------------------------------------
def norm_of_list(x):
    dx = x[0] - x[1]
    dy = x[2] * 2
    return np.linalg.norm([dx, dy])


def norm_of_tuple(x):
    return np.linalg.norm((x[0], x[1] * 3), ord=1) + np.linalg.norm([x[2], x[0]], np.inf)


def max_of_list(x):
    return np.max([x[0], 2 * x[1]]) + np.min((x[2], x[0] * 3))


def max_of_arrays(x):
    return np.sum(np.max([x[:2], x[1:]], axis=0))


@pytest.mark.parametrize("f", [norm_of_list, norm_of_tuple, max_of_list, max_of_arrays],
                         ids=lambda f: f.__name__)
def test_norm_and_extrema_of_lists(f):
    check(f, X3)
    value, slope = s2sad.jvp(f)(X3, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(slope, grad(f)(X3) @ [1.0, 2.0, 3.0], rtol=1e-12)


def test_second_order_of_the_maximum_of_a_list():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)  # it is piecewise linear
        np.testing.assert_allclose(hessian(max_of_list)(X3), 0.0)


# --- for x in x ----------------------------------------------------------------------------
def for_x_in_x(x):
    t = 0.0
    for x in x:
        t = t + x ** 2
    return t


def enumerate_x_in_x(x):
    t = 0.0
    for i, x in enumerate(x):
        t = t + x ** 2 * (i + 1)
    return t


@pytest.mark.parametrize("f", [for_x_in_x, enumerate_x_in_x], ids=lambda f: f.__name__)
def test_a_loop_variable_named_like_its_sequence(f):
    check(f, X3)


# --- nonlocal and global in a nested function -------------------------------------------------
def test_nonlocal_in_a_nested_function_is_a_located_error():
    f = make_function('''
def f(x):
    t = x[0]
    def inner():
        nonlocal t
        t = t * 2
    inner()
    return t
''', {"np": np})
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        grad(f)
    assert info.value.location.line == f.__code__.co_firstlineno + 3
    assert info.value.location.column == 9
    assert "'nonlocal' is not supported" in str(info.value)


def test_global_in_a_nested_function_is_a_located_error():
    f = make_function('''
def f(x):
    def inner(y):
        global G
        G = y
        return y * 2
    return inner(x[0])
''', {"np": np})
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        grad(f)
    assert info.value.location.line == f.__code__.co_firstlineno + 2
    assert info.value.location.column == 9
    assert "'global' is not supported" in str(info.value)


# --- gradient types ----------------------------------------------------------------------------
def scalar_square(x):
    return x ** 2 * 3.0


def reduced(x):
    return np.sum(np.sin(x) * 2.0)


def reduced_by_numpy_scalar(x):
    return np.sum(x * np.float64(2.0)) + np.sum(x ** 3)


KINDS = {
    "float": 0.7,
    "np.float64": np.float64(0.7),
    "np.float32": np.float32(0.7),
    "0-d float64 array": np.array(0.7),
    "0-d float32 array": np.array(0.7, np.float32),
    "float32 array": np.array([0.7, 0.2], np.float32),
    "float64 array": np.array([0.7, 0.2]),
}


def _kind(v):
    return type(v), getattr(v, "dtype", None), np.shape(v)


def _pullback(f, x):
    value, pullback = vjp(f)(x)
    return pullback(1.0), pullback(1.0)  # the first call, and a later one (recomputed)


@pytest.mark.parametrize("f", [scalar_square, reduced, reduced_by_numpy_scalar], ids=lambda f: f.__name__)
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("api", ["grad", "value_and_grad", "vjp", "hvp"])
def test_a_gradient_has_its_arguments_type_shape_and_dtype(f, kind, api):
    x = KINDS[kind]
    if f is scalar_square and np.ndim(x):
        pytest.skip("not a scalar function")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        if api == "grad":
            results = [grad(f)(x)]
        elif api == "value_and_grad":
            results = [value_and_grad(f)(x)[1]]
        elif api == "vjp":
            results = list(_pullback(f, x))
        else:
            results = [hvp(f)(x, x)]
    for got in results:
        assert _kind(got) == _kind(x)
    if api != "hvp":
        np.testing.assert_allclose(np.asarray(results[0], float), numerical_grad(f, [x], 0), rtol=1e-3)


def mixed_precision(W, x):
    return np.sum((W * x) ** 2)


def test_float32_weights_with_float64_data():
    W = np.ones(3, np.float32)
    x = np.array([0.3, 0.5, 0.7])
    grads = [grad(mixed_precision)(W, x), value_and_grad(mixed_precision)(W, x)[1],
             vjp(mixed_precision)(W, x)[1](1.0), hvp(mixed_precision)(W, x, W)]
    for g in grads:
        assert type(g) is np.ndarray and g.dtype == np.float32 and g.shape == (3,)
    np.testing.assert_allclose(grads[0], 2 * x ** 2, rtol=1e-6)
    np.testing.assert_array_equal(grads[0], grads[1])


def test_a_0d_array_argument_gets_a_0d_array_gradient():
    g = grad(scalar_square)(np.array(2.0))
    assert type(g) is np.ndarray and g.shape == () and g == 12.0


# --- x ** y at x = 0: the slope of a constant power, and an infinite slope -------------------
def power_zero(x):
    return np.power(x, 0.0) + x ** 0


def sqrt_by_power(x):
    return np.sum(x ** 0.5)


def power_both(x, y):
    return np.sum(x ** y) + x[0] ** y[1]


def test_power_zero_at_zero_has_zero_gradient_at_every_order():
    assert grad(power_zero)(0.0) == 0.0
    assert value_and_grad(power_zero)(0.0) == (2.0, 0.0)
    np.testing.assert_array_equal(hessian(lambda x: np.sum(x ** 0.0))(np.array([0.5, 0.0])), np.zeros((2, 2)))


def test_power_below_one_at_zero_is_infinite_not_zero_division():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert grad(lambda x: x ** 0.5)(0.0) == np.inf
        np.testing.assert_array_equal(grad(sqrt_by_power)(np.array([0.0, 4.0])), [np.inf, 0.25])


def test_power_of_two_active_arguments_second_order():
    x, y = np.array([0.5, 2.0]), np.array([1.5, 0.7])
    v, w = np.array([0.3, -1.1]), np.array([0.7, 0.2])
    gradient = grad(power_both, wrt=("x", "y"))
    eps = 1e-6
    up, down = gradient(x + eps * v, y + eps * w), gradient(x - eps * v, y - eps * w)
    for got, a, b in zip(hvp(power_both, wrt=("x", "y"))(x, y, (v, w)), up, down):
        np.testing.assert_allclose(got, (a - b) / (2 * eps), rtol=1e-6)


def test_hvp_with_a_missing_vector_is_a_wrt_error():
    x, y = np.array([0.5, 2.0]), np.array([1.5, 0.7])
    with pytest.raises(s2sad.WrtError, match="a tuple of vectors, one per wrt argument"):
        hvp(power_both, wrt=("x", "y"))(x, y, x, y)
