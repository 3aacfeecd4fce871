"""``*args`` and ``**kwargs`` (issue 18), in the differentiated function and in callees.

``wrt`` (and ``argnums``) index the positional arguments as the caller passes them: for
``def f(x, *rest)``, ``wrt=2`` is ``rest[1]``.  The generated code is the same for any
number of arguments; it is checked against central finite differences, ``hvp`` against
finite differences of the gradient, and ``jvp`` against the gradient.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import s2sad
from s2sad import grad, hessian, hvp, jacobian, jvp, value_and_grad, vjp
from s2sad.cli import main

from gradcheck import assert_grad_matches, numerical_grad

rng = np.random.default_rng(1819)


def vector(n=3):
    return rng.normal(size=n)


def only_star(*args):
    return np.sum(args[0] ** 2) * args[1]


def first_and_rest(x, *rest):
    t = np.sum(x ** 2)
    for v in rest:  # a loop over *args
        t = t + np.sum(np.sin(v) * x)
    return t


def scaled(x, **kw):
    return np.sum(x ** 2) * kw["scale"] + kw["shift"]


def mixed(x, *args, power=2, **kw):
    return np.sum(x ** power * args[0]) * kw.get("scale", 1.0)


def squares(*xs):
    return sum(np.sum(v ** 2) for v in xs)


def calls_squares(a, b):
    return squares(a, b) * 0.5


def splat_argument(params):
    return squares(*params)


def splat_after_named(x, params):
    return first_and_rest(x, *params) * 2.0


def splat_rows(W):
    return squares(*W)


def splat_display(a, b):
    return squares(*[a, np.tanh(b)])


def weighted(x, **kw):
    return np.sum(x * kw["w"]) + kw["c"] ** 2


def calls_weighted(x, w, c):
    return weighted(x, w=np.cos(w), c=c) * 3.0


def product(*values):
    return values[0] * values[1]


def same_value_twice(x):
    return np.sum(product(x, x))


def calls_through_items(a, b):
    s = squares(a, np.sin(b))  # not returned: the callee's forward and backward passes
    return s * np.sum(a)


@pytest.mark.parametrize("f, args, wrt", [
    (only_star, (vector(), 1.7), 0),
    (only_star, (vector(), 1.7), (0, 1)),
    (only_star, (vector(), 1.7), 1),
    (first_and_rest, (vector(), vector(), vector()), (0, 1, 2)),
    (first_and_rest, (vector(), vector(), vector()), 2),
    (calls_squares, (vector(), vector()), (0, 1)),
    (splat_after_named, (vector(), (vector(), vector())), 0),
    (splat_rows, (rng.normal(size=(2, 3)),), 0),
    (splat_display, (vector(), vector()), (0, 1)),
    (calls_weighted, (vector(), vector(), 0.8), (0, 1, 2)),
    (calls_through_items, (vector(), vector()), (0, 1)),
    (same_value_twice, (vector(),), 0),
])
def test_gradient_matches_finite_differences(f, args, wrt):
    assert_grad_matches(f, args, wrt)


def test_argnums_is_wrt():
    x = vector()
    np.testing.assert_allclose(grad(only_star, argnums=0)(x, 2.0), grad(only_star, 0)(x, 2.0))
    g = grad(first_and_rest, argnums=(0, 2))(x, x, 2 * x)
    np.testing.assert_allclose(g[1], grad(first_and_rest, 2)(x, x, 2 * x))


def test_one_generated_code_for_any_number_of_arguments():
    x = vector()
    gradient = grad(first_and_rest, 1)
    for count in (1, 2, 4):
        rest = [vector() for _ in range(count)]
        np.testing.assert_allclose(gradient(x, *rest), np.cos(rest[0]) * x)
    assert "check_wrt_item(rest, 0, \"rest[0]\")" in gradient.__s2sad_source__


def test_arguments_passed_through_star_args_need_not_be_floats():
    # only the wrt argument is checked: the others may be integers or strings
    x = vector()
    def f(*args):
        return np.sum(args[0] ** args[1]) if args[2] == "power" else 0.0
    np.testing.assert_allclose(grad(f)(x, 3, "power"), 3 * x ** 2)


def test_keyword_arguments_are_constants_by_default():
    x = vector()
    np.testing.assert_allclose(grad(scaled)(x, scale=3.0, shift=1.0), 6 * x)
    value, g = value_and_grad(mixed)(x, 2.0, power=3, scale=0.5)
    assert value == pytest.approx(mixed(x, 2.0, power=3, scale=0.5))
    np.testing.assert_allclose(g, 3 * x ** 2)


def test_wrt_a_keyword_passed_through_kwargs():
    x = vector()
    for wrt in ("scale", "kw['scale']"):
        assert grad(scaled, wrt)(x, scale=3.0, shift=1.0) == pytest.approx(np.sum(x ** 2))
    gx, gs = grad(scaled, (0, "shift"))(x, scale=3.0, shift=1.0)
    np.testing.assert_allclose(gx, 6 * x)
    assert gs == 1.0


def test_wrt_the_whole_tuple_or_dict():
    x, y = vector(), vector()
    g = grad(first_and_rest, "rest")(x, y, 2 * y)
    assert isinstance(g, tuple) and len(g) == 2
    np.testing.assert_allclose(g[1], np.cos(2 * y) * x)
    d = grad(scaled, "kw")(x, scale=3.0, shift=1.0)
    assert d == pytest.approx({"scale": np.sum(x ** 2), "shift": 1.0})


def test_splat_of_a_list_and_a_tuple_keeps_its_type():
    a, b = vector(), vector()
    g = grad(splat_argument)([a, b])
    assert isinstance(g, list)
    np.testing.assert_allclose(g[1], 2 * b)
    g = grad(splat_argument)((a, b))
    assert isinstance(g, tuple)
    np.testing.assert_allclose(g[0], 2 * a)


def test_hvp_and_jvp():
    x, y, z = vector(), vector(), vector()
    v = vector()
    eps = 1e-5
    for f, args in ((first_and_rest, (x, y, z)), (calls_squares, (x, y)), (only_star, (x, 1.3))):
        for k in (0, 1) if f is not only_star else (0,):
            plus = [a + eps * v if i == k else a for i, a in enumerate(args)]
            minus = [a - eps * v if i == k else a for i, a in enumerate(args)]
            want = (grad(f, k)(*plus) - grad(f, k)(*minus)) / (2 * eps)
            np.testing.assert_allclose(hvp(f, k)(*args, v), want, rtol=1e-5, atol=1e-7)
            value, derivative = jvp(f, k)(*args, v)
            assert value == pytest.approx(f(*args))
            assert derivative == pytest.approx(np.sum(grad(f, k)(*args) * v))


def test_hvp_and_jvp_through_a_splat():
    x, p = vector(), (vector(), vector())
    v = vector()
    eps = 1e-5
    want = (grad(splat_after_named)(x + eps * v, p) - grad(splat_after_named)(x - eps * v, p)) / (2 * eps)
    np.testing.assert_allclose(hvp(splat_after_named)(x, p, v), want, rtol=1e-5, atol=1e-7)
    tangents = (vector(), vector())
    value, derivative = jvp(splat_after_named, 1)(x, p, tangents)
    assert value == pytest.approx(splat_after_named(x, p))
    g = grad(splat_after_named, 1)(x, p)
    assert derivative == pytest.approx(sum(np.sum(gi * ti) for gi, ti in zip(g, tangents)))


def test_jacobian_hessian_and_vjp_by_position():
    x, y = vector(), vector()
    def f(*args):
        return np.sin(args[0]) * args[1]
    np.testing.assert_allclose(jacobian(f, 1)(x, y), np.diag(np.sin(x)))
    np.testing.assert_allclose(hessian(first_and_rest, 1)(x, y), np.diag(-np.sin(y) * x), atol=1e-12)
    value, pullback = vjp(f, 1)(x, y)
    np.testing.assert_allclose(pullback(np.ones(3)), np.sin(x))


def test_has_aux():
    x = vector()
    def f(*args):
        return np.sum(args[0] ** 2), "aux"
    g, aux = grad(f, 0, has_aux=True)(x)
    np.testing.assert_allclose(g, 2 * x)
    assert aux == "aux"


def test_callee_receiving_a_keyword_through_kwargs_generates_its_code_for_that_item():
    source = grad(calls_weighted, (0, 1, 2)).__s2sad_source__
    assert "with respect to x, kw['w'], kw['c']" in source


def forwards_all(*args):
    return squares(*args) * 2.0


def recursive_sum(*xs):
    if len(xs) == 1:
        return np.sum(xs[0] ** 2)
    return np.sum(np.sin(xs[0])) + recursive_sum(*xs[1:])


def recursive_keywords(x, **kw):
    if kw["n"] == 0:
        return np.sum(np.sin(x) * kw["w"])
    return recursive_keywords(x * 1.1, n=kw["n"] - 1, w=kw["w"]) * x[0]


def test_star_args_passed_on_whole():
    assert_grad_matches(forwards_all, (vector(), vector()), (0, 1))


def test_recursion_through_star_args_and_kwargs():
    x, y, z = vector(), vector(), vector()
    assert_grad_matches(recursive_sum, (x, y, z), (0, 1, 2))
    eps = 1e-5
    for k in (0, 1, 2):  # hvp: the generated vjp calls itself with *tuple(...)
        v = vector()
        plus = [a + eps * v if i == k else a for i, a in enumerate((x, y, z))]
        minus = [a - eps * v if i == k else a for i, a in enumerate((x, y, z))]
        want = (grad(recursive_sum, k)(*plus) - grad(recursive_sum, k)(*minus)) / (2 * eps)
        np.testing.assert_allclose(hvp(recursive_sum, k)(x, y, z, v), want, rtol=1e-5, atol=1e-7)

    def at(x, w):
        return recursive_keywords(x, n=3, w=w)
    gx, gw = grad(recursive_keywords, (0, "w"))(x, n=3, w=y)
    np.testing.assert_allclose(gx, numerical_grad(at, (x, y), 0), rtol=1e-6)
    np.testing.assert_allclose(gw, numerical_grad(at, (x, y), 1), rtol=1e-6)
    v = vector()
    want = (grad(at)(x + eps * v, y) - grad(at)(x - eps * v, y)) / (2 * eps)
    np.testing.assert_allclose(hvp(recursive_keywords)(x, v, n=3, w=y), want, rtol=1e-5, atol=1e-7)


# --- refused, with advice -----------------------------------------------------------------

@pytest.mark.parametrize("f, wrt, args, kwargs, words", [
    (only_star, 2, (vector(), 1.0), {}, "only 2 argument(s) were passed through *args"),
    (only_star, 0, (3, 1.0), {}, "cannot differentiate with respect to 'args[0]': it is int"),
    (scaled, "offset", (vector(),), {"scale": 1.0, "shift": 0.0}, "no keyword argument offset= was passed"),
])
def test_bad_call_for_the_wrt(f, wrt, args, kwargs, words):
    with pytest.raises(s2sad.S2SADError) as info:
        grad(f, wrt)(*args, **kwargs)
    assert words in str(info.value)


def test_negative_index_into_star_args_is_refused():
    with pytest.raises(s2sad.WrtError, match="count from the start"):
        grad(only_star, -1)


def test_wrt_naming_no_parameter_of_a_function_without_kwargs():
    with pytest.raises(s2sad.WrtError, match="names no parameter of first_and_rest; its parameters are x, rest"):
        grad(first_and_rest, "scale")


def splat_after_extra(x, params):
    return squares(x, *params)


def test_splat_of_unknown_length_after_other_star_arguments_is_refused_where_written():
    lines, first = inspect.getsourcelines(splat_after_extra)
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        grad(splat_after_extra)(vector(), [vector()])
    where = info.value.location
    assert (where.filename, where.line, where.column) == (__file__, first + 1, lines[1].index("*params") + 1)
    assert "for a Python function's *args, that it is exactly them" in info.value.message


# --- the command line ---------------------------------------------------------------------

def test_cli_wrt_indexes_the_positional_arguments(capsys):
    assert main([f"{__file__}:first_and_rest", "--wrt", "0", "2"]) == 0
    out = capsys.readouterr().out
    assert "def grad_first_and_rest(x, *rest):" in out
    assert 'check_wrt_item(rest, 1, "rest[1]")' in out
    assert main([f"{__file__}:first_and_rest", "--wrt", "rest[1]"]) == 0
    assert main([f"{__file__}:only_star", "--wrt", "-1"]) == 1
    assert "count from the start" in capsys.readouterr().err



def _scaled(a, b, c):
    return a * b + c


def constant_sequences_passed_with_stars(x):
    args = (2.0, 3.0)
    kw = {"c": 1.5}
    bounds = [0.5, 0.25]
    return np.sum(_scaled(x, args[0], **kw) * _scaled(x, *args) + np.clip(x, *bounds)) + _scaled(*bounds, c=x[0])


def test_a_constant_tuple_list_or_dict_passed_with_a_star_is_unpacked():
    # was refused, with a message that asked for what the function wrote (a name assigned a
    # display at the top level): constant displays had no length recorded
    assert_grad_matches(constant_sequences_passed_with_stars, (np.array([1.0, 0.3, 3.0]),), 0)
