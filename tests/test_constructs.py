"""The Python people write (issue 18): nested and element unpacking, loops over tuples,
loop ``else``, the walrus, variadic ``min``/``max``, list methods, dict comprehensions.

Each construct is checked against central finite differences, and once per family its
``hvp`` (which differentiates the generated code again) against finite differences of the
gradient; what stays refused is refused at the user's line and column, with advice.
"""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import s2sad
from s2sad import grad, hvp

from gradcheck import numerical_grad

rng = np.random.default_rng(18)


def leaves(tree):
    """The arrays of a pytree of tuples and lists, in order."""
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def replace(tree, k, leaf):
    """``tree`` with its ``k``-th leaf replaced."""
    count = [0]

    def go(t):
        if isinstance(t, (tuple, list)):
            return type(t)(go(item) for item in t)
        count[0] += 1
        return leaf if count[0] - 1 == k else t
    return go(tree)


def check_grad(f, args, wrt=0):
    """The gradient of ``f`` with respect to ``args[wrt]`` (an array, a float or a pytree)
    against central finite differences, leaf by leaf."""
    got = grad(f, wrt)(*args)
    tree = args[wrt]
    got_leaves, tree_leaves = leaves(got), leaves(tree)
    assert len(got_leaves) == len(tree_leaves)
    for k, (g, leaf) in enumerate(zip(got_leaves, tree_leaves)):
        def at(value, k=k):
            return f(*[replace(tree, k, value) if i == wrt else a for i, a in enumerate(args)])
        np.testing.assert_allclose(g, numerical_grad(at, (leaf,), 0), rtol=1e-6, atol=1e-8)


def check_hvp(f, args, wrt=0, eps=1e-5):
    """``hvp`` of ``f`` (array argument ``wrt``) against finite differences of the gradient."""
    v = rng.normal(size=np.shape(args[wrt]))
    plus, minus = list(args), list(args)
    plus[wrt], minus[wrt] = args[wrt] + eps * v, args[wrt] - eps * v
    want = (grad(f, wrt)(*plus) - grad(f, wrt)(*minus)) / (2 * eps)
    np.testing.assert_allclose(hvp(f, wrt)(*args, v), want, rtol=1e-5, atol=1e-7)


def refused_at(f, snippet, words, *args, wrt=0):
    """``grad(f)`` is refused at the first occurrence of ``snippet`` in f's source, with ``words``."""
    lines, first = inspect.getsourcelines(f)
    line, column = next((first + i, row.find(snippet) + 1 + len(snippet) - len(snippet.lstrip()))
                        for i, row in enumerate(lines) if snippet in row)
    with pytest.raises(s2sad.S2SADError) as info:
        grad(f, wrt)(*args)
    where = info.value.location
    assert (where.filename, where.line, where.column) == (__file__, line, column), str(info.value)
    assert words in str(info.value)


# --- unpacking ---------------------------------------------------------------------------

def pytree(p):
    (a, b), d = p
    return np.sum(a * b) + np.sum(d ** 2)


def pytree_of_a_display(x):
    (a, b), [c, (d, e)] = (x, x * 2), [x ** 2, (np.sin(x), 3.0)]
    return np.sum(a * b * c + d * e)


def swap_names(x, y):
    a, b = x, y
    a, b = b, a * 2
    return np.sum(a * b ** 2)


def swap_elements(x):
    B = x * 1.0
    B[0], B[1] = B[1], B[0]
    return np.sum(B ** 2 * np.arange(1.0, 4.0))


def swap_rows(x):
    B = x * 1.0
    B[0], B[1] = B[1], B[0]  # rows are views: both become the old second row, as in NumPy
    return np.sum(B ** 2 * np.arange(1.0, 7.0).reshape(2, 3))


def index_then_element(x):
    v = x * 1.0
    i, v[i] = 1, x[2] * 3  # the index is read after i is stored, as in Python
    return np.sum(v ** 2)


def chained_unpack(x, y):
    a, b = c = (x, y * 2)
    return np.sum(c[1] * a)


def test_nested_unpacking_of_an_argument():
    x = rng.normal(size=3)
    check_grad(pytree, (((x, x * 2), x * 3),))


def test_nested_unpacking_of_a_display():
    x = rng.normal(size=3)
    check_grad(pytree_of_a_display, (x,))
    check_hvp(pytree_of_a_display, (x,))


def test_tuple_swap_of_names():
    x, y = rng.normal(size=3), rng.normal(size=3)
    check_grad(swap_names, (x, y), 0)
    check_grad(swap_names, (x, y), 1)
    check_hvp(swap_names, (x, y), 0)


def test_tuple_swap_of_elements_reads_the_whole_right_side_first():
    x = rng.normal(size=3)
    check_grad(swap_elements, (x,))
    check_hvp(swap_elements, (x,))
    value, _ = s2sad.value_and_grad(swap_elements)(x)
    assert value == pytest.approx(swap_elements(x))


def test_tuple_swap_of_rows_follows_numpy_views():
    x = rng.normal(size=(2, 3))
    value, _ = s2sad.value_and_grad(swap_rows)(x)
    assert value == pytest.approx(swap_rows(x))
    check_grad(swap_rows, (x,))


def swap_list_items(x):
    L = [x[0], x[1] * 2, x[2]]
    L[0], L[2] = L[2], L[0]  # (no NumPy here: list items are no views of the list)
    return L[0] * L[1] ** 2 + L[2]


def test_tuple_swap_of_list_items():
    x = rng.normal(size=3)
    check_grad(swap_list_items, (x,))
    check_hvp(swap_list_items, (x,))


def test_element_target_after_the_index_it_reads():
    x = rng.normal(size=3)
    check_grad(index_then_element, (x,))


def test_chained_assignment_to_a_tuple_and_a_name():
    x, y = rng.normal(size=3), rng.normal(size=3)
    check_grad(chained_unpack, (x, y), 1)


def nested_starred_unpacking(x):
    (first, *rest), last = (x[:2], x[2])
    return first * np.sum(rest) * last


def swap_through_another_view(x):
    B = x * 1.0
    B[0], B[1] = B[1], B.T[0]
    return np.sum(B)


def unpack_into_elements(x):
    L = [x[0], x[1], x[2]]
    B = x * 1.0
    pair = (x[2] ** 2, x[0])
    L[0], L[2] = pair  # (a list: its items are no views of it)
    B[1], c = np.sin(x[:2])
    return L[0] * L[1] + L[2] * c + np.sum(B ** 2)


def unpack_into_two_rows(x):
    B = x * 1.0
    t = (B[1], B[0])
    B[0], B[1] = t  # with views in t, NumPy's second store would copy the new first row
    return np.sum(B)


def test_unpacking_a_value_into_elements():
    x = rng.normal(size=3)
    check_grad(unpack_into_elements, (x,))
    check_hvp(unpack_into_elements, (x,))


def test_unpacking_a_value_into_two_elements_of_one_array_is_refused_with_advice():
    refused_at(unpack_into_two_rows, "B[1] = t", "write the values out as a tuple", rng.normal(size=(2, 3)))


def test_nested_starred_unpacking_is_refused_with_advice():
    refused_at(nested_starred_unpacking, "*rest", "first, rest = t[0], t[1:]", rng.normal(size=3))


def test_element_swap_through_another_view_is_refused_with_advice():
    refused_at(swap_through_another_view, "B.T[0]", "assign a copy (B.T[0].copy())", rng.normal(size=3))


# --- loops over tuples ------------------------------------------------------------------

def layers_loop(layers, x):
    h = x
    for W, b in layers:
        h = np.tanh(W @ h + b)
    return np.sum(h ** 2)


def layers_enumerate(layers, x):
    h = x
    for i, (W, b) in enumerate(layers):
        h = np.tanh(W @ h + b) * (i + 1)
    return np.sum(h)


def zip_of_pairs(pairs, c):
    t = 0.0
    for (a, b), k in zip(pairs, c):
        t = t + np.sum(a * b) * k
    return t


def reversed_pairs(x):
    t = 1.0
    for a, b in reversed([(x[0], x[1]), (x[2], x[0])]):
        t = t * a + np.sin(b)
    return t


def nested_target_over_constants(x):
    t = 0.0
    for i, (j, k) in [(0, (1, 2)), (2, (0, 1))]:
        t = t + x[i] * x[j] ** 2 + x[k]
    return t


def target_read_after_the_loop(x):
    a = x[0]
    for a, b in [(x[1], x[2]), (x[2], x[0])]:
        pass
    return a * b


def dict_items_nested(x):
    d = {"a": (x[0], x[1]), "b": (x[2], x[0])}
    t = 0.0
    for k, (u, v) in d.items():
        t = t + u * v ** 2
    return t


def dict_values_unpacked(x):
    d = {"a": (x[0], x[1]), "b": (x[2], x[0])}
    t = 0.0
    for u, v in d.values():
        t = t + u * v ** 2
    return t


def pairs_of_a_tuple_display(x):
    t = 0.0
    for a, b in ((x[0], x[1]), (x[1], x[2])):
        t = t + a * b ** 2
    return t


def make_layers():
    return [(rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3)) for _ in range(3)]


@pytest.mark.parametrize("f", [layers_loop, layers_enumerate])
def test_loop_over_a_list_of_pairs(f):
    layers, x = make_layers(), rng.normal(size=3)
    check_grad(f, (layers, x), 0)
    check_grad(f, (layers, x), 1)
    check_hvp(f, (layers, x), 1)


def test_nested_loop_target_over_zip():
    x = rng.normal(size=3)
    check_grad(zip_of_pairs, ([(x, x * 2), (x * 3, x)], x), 1)
    check_grad(zip_of_pairs, ([(x, x * 2), (x * 3, x)], x), 0)


@pytest.mark.parametrize("f", [reversed_pairs, nested_target_over_constants, target_read_after_the_loop,
                               dict_items_nested, dict_values_unpacked, pairs_of_a_tuple_display])
def test_loop_targets_unpacked(f):
    x = rng.normal(size=3)
    check_grad(f, (x,))
    check_hvp(f, (x,))


def starred_loop_target(xs):
    t = 0.0
    for a, *rest in xs:
        t = t + a
    return t


def test_starred_loop_target_is_refused_with_advice():
    refused_at(starred_loop_target, "a, *rest", "assign elements in the body", [(1.0, 2.0)])


# --- loop else ----------------------------------------------------------------------------

def for_else(x):
    s = 0.0
    for i in range(3):
        if x[i] > 10:
            break
        s = s + x[i] ** 2
    else:
        s = s * 2
    return s


def for_else_broken(x):
    s = 0.0
    for i in range(3):
        s = s + x[i] ** 2
        if x[i] > 0.5:
            break
    else:
        s = np.sin(s)
    return s * 3


def while_else(x):
    s = x[0]
    n = 0
    while n < 3:
        s = s * x[1]
        n += 1
    else:
        s = s + x[2] ** 2
    return s


def for_else_after_return(x):
    for i in range(3):
        if x[i] > 0.5:
            return x[i] ** 3
    else:
        y = np.sum(x) ** 2
    return y


def inner_for_else(x):
    t = 0.0
    for i in range(3):
        for j in range(3):
            if x[j] > x[i]:
                break
            t = t + x[i] * x[j]
        else:
            t = t + np.sin(x[i])
    return t


ELSE_INPUTS = [np.array([0.3, -0.5, 0.7]), np.array([0.3, 0.6, 0.7]), np.array([0.1, 0.2, 0.3])]


@pytest.mark.parametrize("x", ELSE_INPUTS)
@pytest.mark.parametrize("f", [for_else, for_else_broken, while_else, for_else_after_return, inner_for_else])
def test_loop_else_runs_when_no_break(f, x):
    check_grad(f, (x,))
    check_hvp(f, (x,))


def break_in_else(x):
    s = 0.0
    for i in range(3):
        for j in range(2):
            s = s + x[j]
        else:
            break
    return s


def test_a_jump_in_a_loop_else_leaves_the_enclosing_loop():
    # (it was refused: move the else's code after the loop; tests/test_lang9_constructs.py)
    x = rng.normal(size=3)
    check_grad(break_in_else, (x,))  # (linear in x: its Hessian is zero)


# --- the walrus ---------------------------------------------------------------------------

def walrus_in_a_condition(x):
    if (y := np.sum(x ** 2)) > 0.1:
        return y * 2
    return y


def walrus_in_an_expression(x):
    z = np.sin(w := x * 3) + (v := np.cos(w)) * w
    return np.sum(z * v)


def walrus_nested(x):
    return np.sum((a := (b := x ** 2) + 1) * b) + np.sum(a)


def walrus_in_a_loop(x):
    t = 0.0
    for i in range(3):
        t = t + (s := x[i] ** 2) * s
    return t + s


def walrus_in_an_elif(x):
    if x[0] > 5:
        r = x[0]
    elif (m := np.max(x)) > 0:
        r = m ** 2
    else:
        r = np.sin(m)
    return r


def walrus_in_a_while_condition(x):
    r = x[0] * 1.0 + 2.0
    n = 0
    while (n := n + 1) < 4:
        r = r - (r ** 2 - x[1] ** 2 - 1.0) / (2 * r)
    return r * n


def walrus_in_a_while_with_else(x):
    t = 0.0
    s = np.sum(x ** 2) + 1.0
    while (s := s * 0.5) > 0.2:
        t = t + s * x[0]
    else:
        t = t + s
    return t + s


@pytest.mark.parametrize("f", [walrus_in_a_condition, walrus_in_an_expression, walrus_nested,
                               walrus_in_a_loop, walrus_in_an_elif, walrus_in_a_while_condition,
                               walrus_in_a_while_with_else])
def test_walrus(f):
    for x in (rng.normal(size=3), -np.abs(rng.normal(size=3))):
        check_grad(f, (x,))
        check_hvp(f, (x,))


def walrus_in_a_comprehension(x):
    return np.sum([(y := v * 2) for v in x])


def walrus_short_circuited(x):
    return np.sum(x) if x[0] > 0 and (y := x[1]) > 0 else 0.0


def walrus_after_a_read(x):
    y = x
    return np.sum(y * (y := x * 2))


def walrus_in_a_while_that_continues(x):
    n = 0
    t = 0.0
    while (n := n + 1) < 4:
        if n == 2:
            continue
        t = t + x[0] * n
    return t


def walrus_after_augmented_read(x):
    y = x * 1.0
    y += (y := x * 2)
    return np.sum(y)


@pytest.mark.parametrize("f, snippet, words", [
    (walrus_in_a_comprehension, "y := v * 2", "inside a comprehension or lambda"),
    (walrus_short_circuited, "y := x[1]", "where it may not run"),
    (walrus_after_a_read, "y := x * 2", "reads 'y' before the walrus operator"),
    (walrus_in_a_while_that_continues, "n := n + 1", "assign before the loop and again before each 'continue'"),
    (walrus_after_augmented_read, "y := x * 2", "reads 'y' before the walrus operator"),
], ids=lambda v: v.__name__ if callable(v) else "")
def test_walrus_where_hoisting_would_change_what_runs_is_refused(f, snippet, words):
    refused_at(f, snippet, words, rng.normal(size=3))


# --- min and max of several, math.log with a base, item and tolist --------------------------

def min_max_of_several(x):
    return min(x[0], x[1], x[2]) ** 2 + max(x[0], x[1] * 2, x[2], 0.1) * x[0]


def log_with_a_base(x):
    return math.log(x[0] ** 2 + 1, 2) * x[1] + math.log(x[2] ** 2 + 1.5, x[1] ** 2 + 2)


def item_of_arrays(x):
    return np.sum(x).item() ** 2 + x[1:2].item() * x[0] + x.reshape(1, 4)[:, 3:].item()


def tolist_of_arrays(x):
    rows = (x[:4].reshape(2, 2) ** 2).tolist()
    return sum(x.tolist()) * x[0] + x.tolist()[1] ** 2 + rows[0][1] * rows[1][0]


@pytest.mark.parametrize("f", [min_max_of_several, log_with_a_base, item_of_arrays, tolist_of_arrays])
def test_scalar_builtins_and_methods(f):
    x = np.array([0.3, -0.5, 0.7, 0.2])
    check_grad(f, (x,))
    check_hvp(f, (x,))


def test_min_of_several_shares_a_tie_equally():
    x = np.array([0.3, 0.3, 0.3, 0.2])
    # min: 2 * 0.3 shared by three; max: 2 * x[1] alone, times x[0]
    np.testing.assert_allclose(grad(min_max_of_several)(x)[:3], [0.2 + 0.6, 0.2 + 2 * 0.3, 0.2])


# --- list methods -----------------------------------------------------------------------------

def insert_extend_pop(x):
    xs = [x[0], x[1]]
    xs.insert(0, x[2])
    xs.extend([x[0] * 2])
    y = xs.pop(1)
    return sum(xs) * y


def list_methods_with_negative_indices(x):
    xs = [x[0] ** 2, x[1], x[2]]
    ys = [np.sin(x[1]), x[0]]
    xs.extend(ys)
    xs.insert(-1, x[1] * 3)
    xs.pop(-2)
    xs.pop()
    z = xs.pop(0)
    return z * xs[0] + np.sum(np.stack(xs) ** 2)


def list_methods_in_loops(x):
    xs = []
    for i in range(3):
        xs.insert(0, x[i] * (i + 1))
        if i == 1:
            xs.extend([x[0], x[1] ** 2])
    t = 0.0
    while len(xs) > 1:
        v = xs.pop(len(xs) - 2)
        t = t + v * xs[-1]
    return t


@pytest.mark.parametrize("f", [insert_extend_pop, list_methods_with_negative_indices, list_methods_in_loops])
def test_list_methods(f):
    x = rng.normal(size=3)
    check_grad(f, (x,))
    check_hvp(f, (x,))


def insert_into_an_alias(x):
    xs = [x[0]]
    ys = xs
    xs.insert(0, x[1])
    return ys[0] * xs[0]


def pop_inside_an_expression(x):
    xs = [x[0], x[1]]
    return xs.pop(0) * xs[0]


def test_list_method_on_an_alias_is_refused_with_advice():
    refused_at(insert_into_an_alias, "xs.insert(0, x[1])", "write xs = xs[:i] + [v] + xs[i:]",
               rng.normal(size=3))


def test_list_method_inside_an_expression_is_refused_with_advice():
    refused_at(pop_inside_an_expression, "xs.pop(0)", "call it on its own line", rng.normal(size=3))


# --- dict and set comprehensions ------------------------------------------------------------

def dict_comprehension_by_index(x):
    d = {k: x[k] ** 2 for k in range(3)}
    return d[0] * d[2] + d[1]


def dict_comprehension_filtered(x):
    parts = {str(i): x * i for i in range(3) if i > 0}
    return np.sum(parts["1"] * parts["2"])


def set_comprehension_of_constants(x):
    s = {int(k) % 2 for k in range(3)}
    return np.sum(x ** 2) * len(s)


@pytest.mark.parametrize("f", [dict_comprehension_by_index, dict_comprehension_filtered,
                               set_comprehension_of_constants])
def test_comprehensions(f):
    x = rng.normal(size=3)
    check_grad(f, (x,))
    check_hvp(f, (x,))


def set_comprehension_of_active_values(x):
    return sum({v * 2 for v in x})


def test_set_of_active_values_is_refused_with_advice():
    refused_at(set_comprehension_of_active_values, "{v * 2 for v in x}", "build a list", rng.normal(size=3))


# --- nested functions reading the enclosing function's variables -----------------------------

def closure_def(x):
    c = 3.0 * x[0]

    def inner(z):
        return z * c
    return np.sum(inner(x) ** 2)


def closure_lambda_reads_at_the_call(x):
    c = x[0]
    scale = lambda z: z * c + np.sin(c)  # noqa: E731
    c = c ** 2
    return np.sum(scale(x)) + np.sum(scale(x * 2) ** 2)


def closure_with_keyword_only(x, w):
    def layer(h, *, k=1.0):
        return np.tanh(w @ h) * k
    return np.sum(layer(layer(x), k=2.0))


def test_nested_functions_reading_enclosing_variables():
    x, w = rng.normal(size=3), rng.normal(size=(3, 3))
    check_grad(closure_def, (x,))
    check_hvp(closure_def, (x,))
    check_grad(closure_lambda_reads_at_the_call, (x,))
    check_hvp(closure_lambda_reads_at_the_call, (x,))
    check_grad(closure_with_keyword_only, (x, w), 0)
    check_grad(closure_with_keyword_only, (x, w), 1)
    check_hvp(closure_with_keyword_only, (x, w), 1)


def closure_passed_as_a_value(x):
    c = x[0]
    f = lambda t: t * c  # noqa: E731
    g = f
    return np.sum(g(x))


def closure_calling_a_closure(x):
    c = x[0]

    def g(z):
        return z * c

    def h(z):
        return g(z) + c
    return np.sum(h(x))


def test_closures_that_cannot_take_their_variables_as_arguments_are_refused_with_advice():
    refused_at(closure_passed_as_a_value, "lambda t: t * c",
               "is used other than called and reads c from the enclosing function; pass it as an argument",
               rng.normal(size=3))
    refused_at(closure_calling_a_closure, "def h(z):", "calls the nested function 'g'", rng.normal(size=3))


def pop_of_what_may_be_a_dict(d):
    v = d.pop(1)
    return v * 2.0


def test_pop_with_an_argument_of_an_unknown_container_takes_the_item_out_of_a_dict_or_list():
    assert s2sad.grad(pop_of_what_may_be_a_dict)({1: 2.0, 3: 4.0}) == {1: 2.0, 3: 0.0}
    assert s2sad.grad(pop_of_what_may_be_a_dict)([1.0, 2.0, 3.0]) == [0.0, 2.0, 0.0]


# --- forward mode over every construct above -----------------------------------------------

FORWARD = [pytree_of_a_display, swap_elements, index_then_element, reversed_pairs,
           nested_target_over_constants, target_read_after_the_loop, dict_items_nested,
           dict_values_unpacked, for_else, for_else_broken, while_else, for_else_after_return,
           inner_for_else, walrus_in_a_condition, walrus_in_an_expression, walrus_nested,
           walrus_in_a_loop, walrus_in_an_elif, walrus_in_a_while_condition, walrus_in_a_while_with_else,
           min_max_of_several, log_with_a_base, item_of_arrays,
           tolist_of_arrays, insert_extend_pop, list_methods_with_negative_indices,
           list_methods_in_loops, dict_comprehension_by_index, dict_comprehension_filtered,
           closure_def, closure_lambda_reads_at_the_call, swap_list_items]


SCALAR_FUNCTIONS = (min_max_of_several, log_with_a_base, item_of_arrays, tolist_of_arrays)


@pytest.mark.parametrize("f", FORWARD, ids=[f.__name__ for f in FORWARD])
def test_jvp_against_directional_finite_differences(f):
    x = np.array([0.3, -0.5, 0.7, 0.2]) if f in SCALAR_FUNCTIONS else rng.normal(size=3)
    v = rng.normal(size=x.shape)
    value, slope = s2sad.jvp(f)(x, v)
    assert value == pytest.approx(f(x))
    assert slope == pytest.approx((f(x + 1e-6 * v) - f(x - 1e-6 * v)) / 2e-6, rel=1e-5, abs=1e-7)


# --- imports at the top of the function --------------------------------------------------

def imports_at_the_top(x):
    from scipy.special import logsumexp
    import math
    import numpy.linalg as la
    from numpy import tanh as squash
    return logsumexp(x) + math.sin(float(x[0])) + la.norm(x) + np.sum(squash(x) ** 2)


def import_shadowing_a_global(x):
    import numpy as np
    return np.sum(np.exp(-x ** 2))


def import_in_a_branch(x):
    if x[0] > 0:
        import math
    return np.sum(x)


def import_also_assigned(x):
    import math
    math = 2.0
    return np.sum(x) * math


def import_that_fails(x):
    import s2sad_no_such_module
    return np.sum(x)


@pytest.mark.parametrize("f", [imports_at_the_top, import_shadowing_a_global])
def test_imports_at_the_top_of_the_function(f):
    pytest.importorskip("scipy")
    x = rng.normal(size=4)
    check_grad(f, (x,))
    check_hvp(f, (x,))
    value, slope = s2sad.jvp(f)(x, np.ones(4))
    assert slope == pytest.approx((f(x + 1e-6) - f(x - 1e-6)) / 2e-6, rel=1e-5)


def test_a_rebound_import_target_regenerates():
    """The import is followed like the attribute chain it reads: a monkeypatched function
    gets new code, with the right rule."""
    import numpy
    x = rng.normal(size=3)
    first = grad(imports_at_the_top)(x)
    original = numpy.tanh
    try:
        numpy.tanh = numpy.sin
        np.testing.assert_allclose(grad(imports_at_the_top)(x), numerical_grad(imports_at_the_top, (x,), 0),
                                   rtol=1e-6, atol=1e-8)
    finally:
        numpy.tanh = original
    np.testing.assert_allclose(grad(imports_at_the_top)(x), first)


def test_imports_that_cannot_be_followed_are_refused_at_the_statement():
    x = np.ones(2)
    refused_at(import_in_a_branch, "import math", "an import inside a branch or a loop", x)
    refused_at(import_also_assigned, "import math", "'math' is imported and also assigned", x)
    refused_at(import_that_fails, "import s2sad_no_such_module", "this import fails when the code is generated", x)


# --- a name bound once, at the top, to a function ------------------------------------------

def module_helper(x, power=2):
    return np.sum(x ** power)


def alias_of_a_ufunc(x):
    act = np.tanh
    return np.sum(act(x) ** 2) + np.sum(np.exp(act(x)))


def alias_of_a_python_function(x):
    f = module_helper
    norm = np.linalg.norm
    return f(x, 3) + norm(x)


def alias_chosen_in_a_branch(x):
    act = np.tanh if x[0] > 0 else np.sin
    return np.sum(act(x))


def alias_rebound(x):
    act = np.tanh
    act = np.sin
    return np.sum(act(x))


def data_bound_once(x):
    w = SCALES
    return np.sum(w * x ** 2)


SCALES = np.array([1.0, 2.0, 3.0, 4.0])


# (alias_chosen_in_a_branch was refused until python15: a conditional expression choosing
# functions is followed, tests/test_python15.py)
@pytest.mark.parametrize("f", [alias_of_a_ufunc, alias_of_a_python_function, data_bound_once,
                               alias_chosen_in_a_branch])
def test_a_name_bound_once_to_a_function_calls_it(f):
    x = rng.normal(size=4)
    check_grad(f, (x,))
    check_hvp(f, (x,))


def test_a_name_for_a_function_rebound_is_refused_with_advice():
    refused_at(alias_rebound, "act(x)", "bind the name once, at the top of the function", np.ones(2))


# --- raise, and comprehensions that reuse a variable name ---------------------------------------
def guarded(x, k=2):
    if x.ndim != 1:
        raise ValueError(f"expected a vector, got shape {x.shape}")
    elif x.shape[0] < 2:
        raise ValueError("too short") from None
    return np.sum(x ** k) * 0.5


def test_raise_runs_as_written_and_the_other_paths_are_differentiated():
    """'raise' was refused: a guard on the inputs is ordinary code."""
    x = np.array([0.3, -0.7, 1.1])
    check_grad(guarded, (x,))
    check_hvp(guarded, (x,))
    with pytest.raises(ValueError, match=r"expected a vector, got shape \(3, 1\)"):
        grad(guarded)(x.reshape(3, 1))
    with pytest.raises(ValueError, match="too short"):
        grad(guarded)(x[:1])


def sibling_comprehensions(x):
    squares = [v ** 2 for v in x]
    return sum(squares) + sum(v * 3.0 for v in x[:2] if v > 0)


def nested_comprehensions_sharing_a_name(x):
    rows = [x[:2], x[2:]]
    return sum(sum(v * 2.0 for v in r) * v[0] for v, r in zip(rows, rows))


def test_comprehensions_one_after_another_may_reuse_a_variable_name():
    """The second comprehension's 'v' was refused as a variable of the function; a nested
    comprehension's 'v' is its own, as in Python (it was refused)."""
    x = np.array([0.3, -0.7, 1.1, 0.5])
    check_grad(sibling_comprehensions, (x,))
    check_hvp(sibling_comprehensions, (x,))
    check_grad(nested_comprehensions_sharing_a_name, (x,))
    check_hvp(nested_comprehensions_sharing_a_name, (x,))


def starred_targets(x):
    first, *middle, last = x
    *init, tail = [x[0], x[1] ** 2, x[2]]
    top, *others = x.reshape(2, 2)
    return first * last + sum(m ** 3 for m in middle) + sum(init) * tail + np.sum(top * others[0])


def test_starred_unpacking():
    """first, *rest = x was refused; rest is a list, as in Python."""
    x = np.array([0.3, -0.7, 1.1, 0.5])
    check_grad(starred_targets, (x,))
    check_hvp(starred_targets, (x,))
    assert "middle = list(item_items)" in s2sad.adjoint_source(starred_targets)


# --- del --------------------------------------------------------------------------------------

def del_temporaries(x):
    z = np.sin(x)
    y = z * 2
    a, b = y * x, np.cos(z)
    del z, a
    return np.sum(y ** 2 * b)


def del_in_a_loop(x):
    total = 0.0
    for i in range(3):
        step = np.tanh(x * (i + 1))
        total = total + np.sum(step ** 2)
        del step
    return total


def del_then_rebind(x):
    y = x * 2
    del y
    y = np.exp(x)
    return np.sum(y)


@pytest.mark.parametrize("f", [del_temporaries, del_in_a_loop, del_then_rebind])
def test_del_of_local_variables_keeps_what_the_backward_pass_reads(f):
    x = rng.normal(size=4)
    check_grad(f, (x,))
    check_hvp(f, (x,))
