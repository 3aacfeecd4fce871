"""Defects found by probing s2sad with realistic programs (probe 9): classes, closures,
containers, control flow and the scalars of the Python people write around NumPy, checked
against central finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import UnsupportedSyntaxError
from tests.gradcheck import numerical_grad

X = np.array([0.7, -1.2, 0.4, -0.3, 1.1])


def signed_total(x: np.ndarray) -> float:
    total = 0
    for i in range(len(x)):
        if x[i] > 0:
            total += x[i]
        else:
            total -= 2 * x[i]
    return total


def integer_array_accumulator(x: np.ndarray) -> float:
    acc = np.zeros(3, dtype=int)
    for i in range(3):
        if x[i] > 0:
            acc += 2
        else:
            acc = acc + x[:3] * i
    return np.sum(acc ** 2)


@pytest.mark.parametrize("f", [signed_total, integer_array_accumulator])
@pytest.mark.parametrize("specialize", [True, False])
def test_accumulator_that_starts_as_an_int(f, specialize: bool) -> None:
    # the zero gradient of the int (or int array) the loop starts from was an int array, and
    # adding the float gradient of a later iteration to it in place failed (UFuncTypeError)
    expected = numerical_grad(f, [X], 0)
    np.testing.assert_allclose(s2sad.grad(f, specialize=specialize)(X), expected, rtol=1e-6)
    np.testing.assert_allclose(s2sad.value_and_grad(f)(X)[1], expected, rtol=1e-6)


def alias_rebound_then_argument_updated(x: np.ndarray) -> float:
    y = x
    y = y + 1
    x += 0.5
    return np.sum(y * x)


def copy_aliased_rebound_then_updated(x: np.ndarray) -> float:
    z = x * 1.0
    y = z
    y = y * 2
    z += 1
    return np.sum(y * z)


def view_rebound_then_base_updated(x: np.ndarray) -> float:
    x = x * 1.0
    v = x[:2]
    v = v * 3
    x += 1
    return np.sum(v) * np.sum(x)


@pytest.mark.parametrize("f", [alias_rebound_then_argument_updated, copy_aliased_rebound_then_updated,
                               view_rebound_then_base_updated])
def test_in_place_update_after_its_alias_was_rebound(f) -> None:
    # 'y = x' made y an alias of x, and 'y = y + 1' in straight-line code rebound it: the
    # update of x in place was refused ("'x' and 'y' are the same object"), wrongly
    expected = numerical_grad(f, [X.copy()], 0)
    np.testing.assert_allclose(s2sad.grad(f)(X.copy()), expected, rtol=1e-6)
    np.testing.assert_allclose(s2sad.grad(f, specialize=False)(X.copy()), expected, rtol=1e-6)


def alias_rebound_in_a_branch(x: np.ndarray) -> float:
    x = x * 1.0
    y = x
    if x[0] > 0:
        y = y * 2
    x += 1
    return np.sum(y * x)


def alias_rebound_in_a_loop(x: np.ndarray) -> float:
    x = x * 1.0
    y = x
    for _ in range(2):
        x += 1
        y = y * 2
    return np.sum(y * x)


def alias_of_alias_rebound(x: np.ndarray) -> float:
    x = x * 1.0
    y = x
    z = y
    y = y + 1
    x += 1
    return np.sum(z * x + y)


@pytest.mark.parametrize("f, line, partner", [(alias_rebound_in_a_branch, 5, "'y'"),
                                              (alias_rebound_in_a_loop, 4, "'y'"),
                                              (alias_of_alias_rebound, 5, "'z'")])
def test_in_place_update_of_an_alias_some_path_still_reads(f, line: int, partner: str) -> None:
    # an alias rebound only on some paths, or another alias of it, still sees the change
    with pytest.raises(UnsupportedSyntaxError) as info:
        s2sad.grad(f)(X)
    assert info.value.location.line == f.__code__.co_firstlineno + line
    assert partner in info.value.message and "'x += ...' would change it in place" in info.value.message


def squared_entry(k: int, x: np.ndarray) -> float:
    return x[k] ** 2 * x[-1]


def sum_of_entries_by_index(x: np.ndarray) -> float:
    s = 0.0
    for i in range(3):
        s = s + squared_entry(i, x)
    return s


INDICES = [0, 2, 3]


def sum_of_entries_over_a_global_list(x: np.ndarray) -> float:
    s = 0.0
    for c in INDICES:
        s = s + squared_entry(c, x)
    return s


def tree_sum(node, x: np.ndarray) -> float:
    if isinstance(node, list):
        return sum(tree_sum(c, x) for c in node)
    return x[node] ** 2 * x[-1]


def sum_over_a_tree(x: np.ndarray) -> float:
    return tree_sum([0, [1, 2], [[3]]], x)


def _hessian(f, x: np.ndarray) -> np.ndarray:
    return np.stack([numerical_grad(lambda y: s2sad.grad(f)(y)[i], [x], 0) for i in range(x.size)])


def product_of_entries(x: np.ndarray, i: int, j: int) -> float:
    return x[i] * x[j] ** 2


def sum_over_pairs(x: np.ndarray) -> float:
    s = 0.0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            s = s + product_of_entries(x, i, j)
    return s


@pytest.mark.parametrize("f", [sum_of_entries_by_index, sum_of_entries_over_a_global_list, sum_over_a_tree,
                               sum_over_pairs])
def test_second_order_through_a_callee_given_a_loop_index(f) -> None:
    # the index a loop passes to a callee is saved on the gradient's tape beside values that
    # carry a gradient; read back, it was taken to carry one too, and differentiating the
    # gradient refused x[k] in the callee ("the index of x[...] is computed from values that
    # carry a gradient")
    expected = _hessian(f, X)
    v = np.linspace(0.5, 1.5, X.size)
    np.testing.assert_allclose(s2sad.hessian(f)(X), expected, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(s2sad.hvp(f)(X, v), expected @ v, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(s2sad.jacobian(s2sad.grad(f), mode="reverse")(X), expected, rtol=1e-5, atol=1e-8)


def weighted_entry(a: float, k: int, x: np.ndarray) -> float:
    return a * x[k] ** 2


def mixed(x: np.ndarray, y: np.ndarray) -> float:
    s = 0.0
    for i in range(3):
        s = s + weighted_entry(y[i] * 1.0, i, x)
    return s


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_mixed_partials_through_a_value_saved_beside_a_loop_index(mode: str) -> None:
    # y[i] is saved on the tape of the gradient in x, beside i: it still varies with y
    x, y = X[:3], np.array([1.5, 2.0, -1.0])
    expected = np.stack([numerical_grad(lambda w: s2sad.grad(mixed)(x, w)[i], [y], 0) for i in range(3)])
    np.testing.assert_allclose(s2sad.jacobian(s2sad.grad(mixed, wrt=0), wrt=1, mode=mode)(x, y), expected,
                               rtol=1e-6, atol=1e-8)


def dict_copied_then_item_updated(x: np.ndarray) -> float:
    d = {"a": x * 1.0}
    d2 = d.copy()
    d2["a"] += 1.0
    return np.sum(d["a"] ** 2)


def dict_rebuilt_then_item_updated(x: np.ndarray) -> float:
    d = {"a": x * 1.0}
    d2 = dict(d)
    d2["a"] += 1.0
    return np.sum(d["a"] ** 2)


def list_copied_then_item_updated(x: np.ndarray) -> float:
    xs = [x * 1.0, x]
    ys = list(xs)
    ys[0] += 1.0
    return np.sum(xs[0] ** 2)


def list_comprehension_then_item_updated(x: np.ndarray) -> float:
    xs = [x * 1.0]
    ys = [v for v in xs]
    ys[0] *= 2.0
    return np.sum(xs[0] ** 2)


def dict_comprehension_then_item_updated(x: np.ndarray) -> float:
    d = {"a": x * 1.0}
    d2 = {k: v for k, v in d.items()}
    d2["a"] -= 1.0
    return np.sum(d["a"] ** 2)


@pytest.mark.parametrize("f, line, code", [
    (dict_copied_then_item_updated, 3, "'d2[\"a\"] += ...'"),
    (dict_rebuilt_then_item_updated, 3, "'d2[\"a\"] += ...'"),
    (list_copied_then_item_updated, 3, "'ys[0] += ...'"),
    (list_comprehension_then_item_updated, 3, "'ys[0] *= ...'"),
    (dict_comprehension_then_item_updated, 3, "'d2[\"a\"] -= ...'")])
def test_item_updated_in_place_in_a_shallow_copy(f, line: int, code: str) -> None:
    # the copy holds the very arrays of the original: '+=' on an item changes the original's
    # too, which the gradient (and value) ignored, silently
    with pytest.raises(UnsupportedSyntaxError) as info:
        s2sad.grad(f)(X)
    assert info.value.location.line == f.__code__.co_firstlineno + line
    assert "shares the arrays it holds with" in info.value.message and code in info.value.message


def fresh_items_updated(x: np.ndarray) -> float:
    grads = {"W": np.zeros(5), "n": 0}
    grads["W"] += x * 2
    grads["n"] += 1
    acc = []
    for i in range(3):
        acc.append(x * i)
    acc[1] += 1.0
    rebuilt = dict(grads)
    rebuilt["W"] = rebuilt["W"] + 1.0
    return np.sum(grads["W"] ** 2) * grads["n"] + sum(np.sum(a ** 2) for a in acc) + np.sum(rebuilt["W"])


def test_item_updated_in_place_that_nothing_else_holds() -> None:
    expected = numerical_grad(fresh_items_updated, [X], 0)
    np.testing.assert_allclose(s2sad.grad(fresh_items_updated)(X), expected, rtol=1e-6)


def rows_of_a_changing_row(x: np.ndarray) -> float:
    out = np.zeros((3, 3))
    row = x[:3] * 1.0
    for i in range(3):
        out[i] = row
        row[i] = row[i] ** 2
    return np.sum(out ** 2 * np.arange(1.0, 10.0).reshape(3, 3))


def test_second_order_through_a_write_of_an_array_changed_later() -> None:
    # the gradient checks that 'out' (were it a list) does not hold 'row' itself; that check,
    # a statement, was refused when the gradient was differentiated (hessian, hvp)
    expected = _hessian(rows_of_a_changing_row, X)
    np.testing.assert_allclose(s2sad.hessian(rows_of_a_changing_row)(X), expected, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(s2sad.hvp(rows_of_a_changing_row)(X, X), expected @ X, rtol=1e-5, atol=1e-8)


def another_list_of_the_same_array(x: np.ndarray) -> float:
    y = x * 1.0
    first = [y]
    both = [y, 2.0]
    first[0] += 1.0
    return np.sum(both[0] ** 2)


def test_item_updated_in_place_that_another_list_holds() -> None:
    with pytest.raises(UnsupportedSyntaxError) as info:
        s2sad.grad(another_list_of_the_same_array)(X)
    assert info.value.location.line == another_list_of_the_same_array.__code__.co_firstlineno + 4
    assert "'first' shares the arrays it holds with 'both'" in info.value.message


def squares_by_name(x: np.ndarray) -> float:
    vals = {}
    for name, v in zip(["a", "b", "c"], x):
        vals[name] = v ** 2
    return vals["a"] * vals["c"] + sum(vals.values())


def weighted_items(x: np.ndarray) -> float:
    p = {"a": x[0] * 2, "b": x[1] * 3}
    total = 0.0
    for k, v in list(p.items()):
        total += v * (2.0 if k == "a" else 1.0)
    return total + max(p.values())


@pytest.mark.parametrize("f", [squares_by_name, weighted_items])
def test_values_and_items_of_a_dict_outside_a_loop(f) -> None:
    # d.values() and d.items() called outside a 'for' were refused as the code ran ("vals.values
    # is not a method defined with 'def' in dict")
    expected = numerical_grad(f, [X], 0)
    np.testing.assert_allclose(s2sad.grad(f)(X), expected, rtol=1e-6, atol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)  # (weighted_items is linear in x)
        np.testing.assert_allclose(s2sad.hvp(f)(X, X), _hessian(f, X) @ X, rtol=1e-5, atol=1e-8)
