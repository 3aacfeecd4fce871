"""Tuples, lists and dicts as values and arguments; x.append(v); x[i] = v."""
from __future__ import annotations

import re

import numpy as np
import pytest

from s2sad import adjoint_source, grad, vjp

from gradcheck import numerical_grad

rng = np.random.default_rng(7)


def leaf_grads(f, args, k):
    """Finite-difference gradient of f with respect to args[k], of args[k]'s structure."""
    a = args[k]
    if not isinstance(a, (tuple, list, dict)):
        return numerical_grad(f, args, k)
    keys = list(a) if isinstance(a, dict) else range(len(a))
    out = {}
    for key in keys:
        def at(leaf, key=key):
            b = dict(a) if isinstance(a, dict) else list(a)
            b[key] = leaf
            b = b if isinstance(a, dict) else type(a)(b)
            return f(*[b if i == k else v for i, v in enumerate(args)])
        out[key] = numerical_grad(at, (a[key],), 0)
    return out if isinstance(a, dict) else type(a)(out[i] for i in keys)


def assert_structured_close(got, want):
    assert type(got) is type(want) or not isinstance(want, (tuple, list, dict))
    if isinstance(want, dict):
        assert set(got) == set(want)
        for key in want:
            assert_structured_close(got[key], want[key])
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_structured_close(g, w)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def tuple_values(x, y):
    t = (x * 2.0, y)
    a, b = t
    return np.sum(a * b) + np.sum(t[1] ** 2)


def append_in_loop(x):
    hs = []
    h = x
    for i in range(4):
        h = np.tanh(h * 1.5 + i)
        hs.append(h)
    return np.sum(np.stack(hs) ** 2) + np.sum(hs[-1]) + len(hs)


def dict_values(x):
    d = {"a": x, "b": x * 3.0}
    return np.sum(d["a"] * d["b"])


def dict_of_keywords(x):
    # (refused until dict(...) with keywords was read as the display it spells)
    d = dict(a=x, b=x * 3.0)
    return np.sum(d["a"] * d["b"] ** 2)


def tuple_param(params, x):
    W, b = params
    return np.sum(np.tanh(x @ W + b))


def list_param(weights, x):
    h = x
    for W in weights:
        h = np.tanh(h @ W)
    return np.sum(h ** 2)


def dict_param(p, x):
    return np.sum(np.tanh(x @ p["W"] + p["b"])) + np.sum(p["unused_here"] * 0.0)


def two_outputs(x):
    return x * 2.0, x ** 2


def returns_tuple(x):
    a, b = two_outputs(x)
    return np.sum(a * b)


def set_elements(x):
    y = np.zeros(3)
    y[0] = x[1] * 2.0
    y[2] = x[0] ** 2
    return np.sum(y * x)


def diagonal_updates(S0, d):
    S = S0.copy()
    for i in range(d.shape[0]):
        if d[i] > 0:
            S[i, i] += d[i]
    return np.sum(S ** 2)


def set_column(x, v):
    x2 = x.copy()
    x2[:, 1] = v
    return np.sum(x2 ** 3)


def repeated_index_write(x, v):
    y = x.copy()
    y[np.array([0, 2, 0])] = v
    return np.sum(y ** 2)


def scalars_to_array(a, b):
    v = np.array([a * b, a + b, 2.0 * a])
    return np.sum(v ** 2)


def concatenate_pieces(x, y):
    return np.sum(np.concatenate([x, y * 2.0]) ** 2)


CASES = {
    "tuple_values": (tuple_values, lambda: (rng.normal(size=3), rng.normal(size=3)), (0, 1)),
    "append_in_loop": (append_in_loop, lambda: (rng.normal(size=3),), (0,)),
    "dict_values": (dict_values, lambda: (rng.normal(size=3),), (0,)),
    "dict_of_keywords": (dict_of_keywords, lambda: (rng.normal(size=3),), (0,)),
    "tuple_param": (tuple_param, lambda: ((rng.normal(size=(3, 2)), rng.normal(size=2)),
                                          rng.normal(size=(4, 3))), (0, 1)),
    "list_param": (list_param, lambda: ([rng.normal(size=(3, 3)) * 0.5 for _ in range(3)],
                                        rng.normal(size=(2, 3))), (0, 1)),
    "dict_param": (dict_param, lambda: ({"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2),
                                         "unused_here": rng.normal(size=2)},
                                        rng.normal(size=(4, 3))), (0,)),
    "returns_tuple": (returns_tuple, lambda: (rng.normal(size=3),), (0,)),
    "set_elements": (set_elements, lambda: (rng.normal(size=3),), (0,)),
    "diagonal_updates": (diagonal_updates, lambda: (rng.normal(size=(4, 4)),
                                                    np.array([0.5, -0.7, 1.2, 0.3])), (0, 1)),
    "set_column": (set_column, lambda: (rng.normal(size=(3, 3)), rng.normal(size=3)), (0, 1)),
    "repeated_index_write": (repeated_index_write,
                             lambda: (rng.normal(size=4), rng.normal(size=3)), (0, 1)),
    "scalars_to_array": (scalars_to_array, lambda: (0.7, -1.3), (0, 1)),
    "concatenate_pieces": (concatenate_pieces, lambda: (rng.normal(size=3), rng.normal(size=2)),
                           (0, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_container_gradients(name):
    f, make, wrt = CASES[name]
    args = make()
    grads = grad(f, wrt=wrt)(*args)
    for k, g in zip(wrt, grads):
        assert_structured_close(g, leaf_grads(f, args, k))


def test_pytree_gradient_keeps_structure():
    params = (rng.normal(size=(3, 2)), rng.normal(size=2))
    g = grad(tuple_param)(params, rng.normal(size=(4, 3)))
    assert isinstance(g, tuple) and [a.shape for a in g] == [(3, 2), (2,)]
    d = grad(dict_param)({"W": np.ones((3, 2)), "b": np.ones(2), "unused_here": np.ones(2)},
                         np.ones((1, 3)))
    assert set(d) == {"W", "b", "unused_here"} and not np.any(d["unused_here"])


def test_repeated_index_write_gives_gradient_to_the_write_that_sticks():
    x, v = np.arange(4.0), np.array([1.0, 2.0, 3.0])
    _, gv = grad(repeated_index_write, wrt=(0, 1))(x, v)
    y = x.copy()
    y[np.array([0, 2, 0])] = v
    # v[0] is overwritten by v[2] at position 0: it gets no gradient
    np.testing.assert_allclose(gv, [0.0, 2 * y[2], 2 * y[0]])


def test_element_assignment_never_writes_to_the_callers_array():
    x, v = rng.normal(size=(3, 3)), rng.normal(size=3)
    x0 = x.copy()
    grad(set_column, wrt=(0, 1))(x, v)
    np.testing.assert_array_equal(x, x0)
    assert "x2_2 = x2.copy()" in adjoint_source(set_column)


def test_append_is_written_as_a_new_list():
    code = adjoint_source(append_in_loop)
    assert "hs_2 = hs + [h_2]" in code


# --- x[i] = v where v is a view of x: NumPy's copying order ----------------------------------

def every_other_from_the_front(x):
    x = x.copy()
    x[::2] = x[:3]          # NumPy writes x[2] before it reads it for x[4]
    return np.sum(x * np.arange(6.0))


def every_other_from_a_copy(x):
    x = x.copy()
    x[::2] = x[:3].copy()
    return np.sum(x * np.arange(6.0))


def shift_right(x):
    x = x.copy()
    x[1:] = x[:-1]          # overlapping, but NumPy copies as if through a buffer
    return np.sum(x * np.arange(6.0))


def column_from_a_reshape(x):
    x = x.copy()
    x[:, -1] = x.reshape((1, 12))[-1, 2:6]
    return np.sum(x * np.arange(12.0).reshape(4, 3))


@pytest.mark.parametrize("f", [every_other_from_a_copy, shift_right])
def test_assigning_a_view_of_the_array_follows_numpy(f):
    x = rng.normal(size=6)
    np.testing.assert_allclose(grad(f)(x), numerical_grad(f, (x,), 0), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f, shape, spelled", [
    (every_other_from_the_front, (6,), "x[::2] = x[:3]"),
    (column_from_a_reshape, (4, 3), "x[:, -1] = x.reshape((1, 12))[-1, 2:6]")])
def test_assigning_a_view_that_numpy_copies_in_order_is_refused_where_it_is_written(f, shape, spelled):
    import inspect

    from s2sad import S2SADError

    line = inspect.getsourcelines(f)[1] + 2
    with pytest.raises(S2SADError, match=rf"test_containers.py:{line}:5: {re.escape(spelled)}: the value "
                                         r"assigned shares memory .* assign a copy of the value"):
        grad(f)(rng.normal(size=shape))


@pytest.mark.parametrize("index, view, refused", [
    (slice(None, None, 2), lambda x: x[:3], True),     # reads x[2] after writing it
    (slice(1, None), lambda x: x[:-1], False),          # a shift: NumPy copies as memmove does
    (slice(None, 3), lambda x: x[::2], False),          # writes only what it has read
    (slice(None), lambda x: x[::-1], False),            # opposite strides: NumPy buffers the value
    (slice(None), lambda x: x, False)])
def test_the_run_time_check_repeats_numpys_assignment(index, view, refused):
    from s2sad import S2SADError
    from s2sad.runtime import check_assignment_order

    x = np.arange(6.0)
    if refused:
        with pytest.raises(S2SADError, match="here: the value assigned shares memory"):
            check_assignment_order(x, index, view(x), "here")
    else:
        check_assignment_order(x, index, view(x), "here")
    np.testing.assert_array_equal(x, np.arange(6.0))  # the check changes nothing


def test_vjp_of_np_array_of_a_float_takes_a_float_cotangent():
    """np.array(3.0) is a 0-d array; the pullback of a plain float cotangent gives a float
    (it raised TypeError inside array_grad)."""
    def fun(x):
        return np.array(x)

    value, pullback = vjp(fun)(3.0)
    assert value == 3.0 and pullback(2.0) == 2.0
    assert pullback(np.array(2.0)) == 2.0


def test_the_gradient_of_a_nested_list_a_rule_read_as_an_array_is_a_nested_list():
    """np.append read the list as an array: its gradient came back as an array, not the
    argument's type (a wrong pairing of leaves for a caller walking the list)."""
    W = np.arange(9.0).reshape(3, 3)

    def f(a, b):
        return np.sum(np.append(a, b, axis=0) * W) + a[0][1] ** 2

    g = grad(f)([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]])
    assert g == [[0.0, 5.0, 2.0], [3.0, 4.0, 5.0]]
    assert type(g[0][0]) is float


def test_dict_get_on_a_dict_built_here():
    """d.get(k[, default]) with a literal key on a dict display whose keys are known: d[k], or
    the default; where the keys are not known here (a parameter, a dict changed since), chosen
    as the code runs."""
    def present(x):
        d = {"a": x, "b": x ** 2}
        return d.get("a") + d.get("b", 0.0)

    def missing(x):
        d = {"a": x}
        return d.get("b", x * 2) + d.get("a")

    assert grad(present)(2.0) == pytest.approx(5.0)
    assert grad(missing)(2.0) == pytest.approx(3.0)

    def parameter(d, x):
        return d.get("a", x) ** 2

    assert grad(parameter)({"a": 3.0}, 2.0) == {"a": pytest.approx(6.0)}
    assert grad(parameter, wrt=1)({"b": 3.0}, 2.0) == pytest.approx(4.0)


def reads_only_a_constant_item(a):
    x = [1.0, a, 3.0]
    return x[0] * 2.0


def reads_a_constant_item_and_the_argument(a):
    x = [1.0, a, 3.0]
    return x[0] * x[1]


def test_a_wrt_argument_whose_list_gives_only_constants_gets_a_zero_gradient():
    # a reached the list, so it counted as active, but no gradient reached it: the code
    # returned grad_like(da, a) with da never assigned (NameError), at first order for the
    # first function and at second order for the second
    import s2sad

    assert grad(reads_only_a_constant_item)(1.7) == 0.0
    with pytest.warns(s2sad.ZeroGradientWarning, match="the derivative of grad_reads_only_a_constant_item"):
        assert s2sad.hessian(reads_only_a_constant_item)(1.7) == 0.0
    assert grad(reads_a_constant_item_and_the_argument)(1.7) == 1.0
    assert grad(grad(reads_a_constant_item_and_the_argument))(1.7) == 0.0
