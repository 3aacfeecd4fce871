"""Defects found by probing s2sad with realistic programs (probe 8): scientific code, models,
and the Python people write around them, checked against central finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad.errors import UnsupportedSyntaxError, WrtError

X = np.array([0.7, -1.2, 0.4])


def act(t: np.ndarray) -> np.ndarray:
    """A global function whose name a comprehension variable reuses below."""
    return t ** 3


def activations_summed(x: np.ndarray) -> float:
    return np.sum(np.stack([act(x) for act in (np.sin, np.cos)]))


def generator_of_activations(x: np.ndarray) -> float:
    return np.sum(sum(act(x) for act in [np.sin, np.cos]))


@pytest.mark.parametrize("f", [activations_summed, generator_of_activations])
def test_comprehension_variable_is_not_the_global_of_its_name(f) -> None:
    # the call act(x) in the comprehension was resolved to the global act: the value and the
    # gradient were act's, silently; then it was refused at the call; since python15 the
    # comprehension's item is called as it runs, as a for loop's is: sin's and cos's
    value, gradient = s2sad.value_and_grad(f)(X)
    np.testing.assert_allclose(value, np.sum(np.sin(X) + np.cos(X)), rtol=1e-12)
    np.testing.assert_allclose(gradient, np.cos(X) - np.sin(X), rtol=1e-12)


def comprehension_over_data(x: np.ndarray) -> float:
    return sum(act * act for act in x) + np.sum(act(x))


def test_comprehension_variable_shadowing_a_global_reads_the_data() -> None:
    expected = 2 * X + 3 * X ** 2
    np.testing.assert_allclose(s2sad.grad(comprehension_over_data)(X), expected)



SCALE = np.array([10.0, 20.0, 30.0])


def global_read_after_comprehension(x: np.ndarray) -> float:
    s = sum(SCALE * 2 for SCALE in x)
    return s + np.sum(SCALE * x ** 2)


def global_read_after_dict_comprehension(x: np.ndarray) -> float:
    d = {SCALE: x[SCALE] ** 2 for SCALE in range(3)}
    return d[0] + d[2] * np.sum(SCALE * x)


@pytest.mark.parametrize("f, expected", [
    (global_read_after_comprehension, 2 + 2 * SCALE * X),
    (global_read_after_dict_comprehension, 2 * X * (np.arange(3) == 0)
     + 2 * X * (np.arange(3) == 2) * np.sum(SCALE * X) + X[2] ** 2 * SCALE)])
def test_global_read_beside_a_comprehension_variable_of_its_name(f, expected: np.ndarray) -> None:
    # after the comprehension, SCALE is the global again; the generated code read the
    # comprehension's last item there (value and gradient both wrong, silently)
    value, gradient = s2sad.value_and_grad(f)(X)
    np.testing.assert_allclose(value, f(X))
    np.testing.assert_allclose(gradient, expected)
    np.testing.assert_allclose(s2sad.grad(f, specialize=False)(X), expected)


def half_of_second_into_first(v: np.ndarray) -> float:
    y = v.copy()
    y[0] = v[1] * 0.5
    return np.sum(y)


@pytest.mark.parametrize("tangent", [np.array([0, 1, 0]), np.array([False, True, False])])
@pytest.mark.parametrize("specialize", [True, False])
def test_integer_tangent_is_a_float_direction(tangent, specialize: bool) -> None:
    # the tangent code copies the tangent and writes v_dot[1] * 0.5 into the copy: an integer
    # tangent truncated it (jvp gave 1, a boolean one 2, instead of 1.5)
    x = np.array([0.1, 1.1, 2.1])
    _, slope = s2sad.jvp(half_of_second_into_first, specialize=specialize)(x, tangent)
    assert slope == pytest.approx(1.5)
    _, slope = s2sad.jvp(half_of_second_into_first, specialize=specialize)(x, tangent=tangent)
    assert slope == pytest.approx(1.5)


def test_integer_tangent_of_several_arguments() -> None:
    def f(a: np.ndarray, b: np.ndarray) -> float:
        y = a.copy()
        y[0] = b[1] * 0.5
        return np.sum(y * b)

    a, b = np.array([0.1, 1.1, 2.1]), np.array([1.0, 2.0, 3.0])
    _, slope = s2sad.jvp(f, wrt=(0, 1))(a, b, (np.array([0, 1, 0]), np.array([0, 1, 0])))
    expected = s2sad.jvp(f, wrt=(0, 1))(a, b, (np.array([0.0, 1, 0]), np.array([0.0, 1, 0])))[1]
    assert slope == pytest.approx(expected)


def cubes(v: np.ndarray, s: float = 2.0) -> float:
    return np.sum(v ** 3) * s


def squares(v: np.ndarray, s: float = 2.0) -> np.ndarray:
    return v ** 2 * s


def test_hessian_and_jacobian_of_an_argument_passed_by_keyword() -> None:
    # the wrt argument was read as args[index]: an IndexError when it was passed by keyword
    np.testing.assert_allclose(s2sad.hessian(cubes)(v=X), np.diag(12 * X))
    np.testing.assert_allclose(s2sad.hessian(cubes)(v=X, s=1.0), np.diag(6 * X))
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(s2sad.jacobian(squares, mode=mode)(v=X), np.diag(4 * X))
    np.testing.assert_allclose(s2sad.jacobian(squares, "s")(X, s=3.0), X ** 2)


@pytest.mark.parametrize("what, f, x", [
    ("hessian", lambda d: d["a"] * d["b"], {"a": 1.0, "b": 2.0}),
    ("jacobian", lambda d: d["a"] * np.ones(2), {"a": 1.0}),
    ("hessian", lambda v: np.sum(v[0] ** 2) * v[1][0], [np.ones(2), np.ones(1)]),
    ("jacobian", lambda v: v[0] * v[1][0], [np.ones(2), np.ones(1)])])
def test_hessian_and_jacobian_refuse_a_tree_of_arrays(what: str, f, x) -> None:
    # a TypeError or ValueError from np.asarray before
    with pytest.raises(WrtError, match="one array or number"):
        getattr(s2sad, what)(f)(x)


@pytest.mark.parametrize("tangent", [(0, 1, 0), [0.0, 1.0, 0.0]])
@pytest.mark.parametrize("specialize", [True, False])
def test_tangent_spelled_as_a_tuple_of_numbers(tangent, specialize: bool) -> None:
    # the tuple was the tangent as it was: v_dot.copy() raised an AttributeError
    x = np.array([0.1, 1.1, 2.1])
    _, slope = s2sad.jvp(half_of_second_into_first, specialize=specialize)(x, tangent)
    assert slope == pytest.approx(1.5)
    np.testing.assert_allclose(s2sad.hvp(cubes, specialize=specialize)(x, tangent), [0.0, 12 * 1.1, 0.0])


def test_vjp_cotangent_is_checked_against_the_output() -> None:
    # a list cotangent was multiplied as a list (a ValueError, or a list repeated); one of
    # another shape failed in the pullback with NumPy's broadcasting error
    _, pullback = s2sad.vjp(squares)(X)
    np.testing.assert_allclose(pullback([1.0, 0.0, 2.0]), [4 * X[0], 0.0, 8 * X[2]])
    _, pullback = s2sad.vjp(squares)(X)
    np.testing.assert_allclose(pullback((1, 0, 2)), [4 * X[0], 0.0, 8 * X[2]])
    with pytest.raises(WrtError, match=r"cotangent has shape \(4,\)"):
        pullback(np.ones(4))


def write_through_asarray(x: np.ndarray) -> float:
    y = x * 1.0
    z = np.asarray(y)
    z[0] = 7.0 * x[2]
    return np.sum(y * x)


def write_through_flip(x: np.ndarray) -> float:
    y = x * 1.0
    z = np.flip(y)
    z[0] = 7.0 * x[1]
    return np.sum(y * x)


def write_through_astype_without_copy(x: np.ndarray) -> float:
    y = x * 1.0
    z = y.astype(float, copy=False)
    z += x ** 2
    return np.sum(y * x)


@pytest.mark.parametrize("f", [write_through_asarray, write_through_flip, write_through_astype_without_copy])
def test_write_through_an_array_a_function_returned_unchanged_or_viewed(f) -> None:
    # np.asarray(y) is y, np.flip(y) a view of it: the write changes y, which s2sad read as
    # unchanged (value and gradient wrong, silently); refused now, at the write
    with pytest.raises(UnsupportedSyntaxError) as info:
        s2sad.value_and_grad(f)(X)
    assert info.value.location.line == f.__code__.co_firstlineno + 3


def asarray_of_a_list_then_written(x: np.ndarray) -> float:
    a = np.asarray([x[0], x[1], 2.0])
    a[2] = x[2] ** 2
    z = np.asarray(x * 2.0)
    z[0] = 3.0 * x[1]
    return np.sum(a ** 2) + np.sum(z * x)


def test_writes_into_fresh_arrays_from_asarray_stay_allowed() -> None:
    expected = np.array([2 * X[0] + 3 * X[1], 6 * X[1] + 3 * X[0], 4 * X[2] ** 3 + 4 * X[2]])
    np.testing.assert_allclose(s2sad.grad(asarray_of_a_list_then_written)(X), expected)


def history_of_one_array(x: np.ndarray) -> float:
    acc = np.zeros(3)
    history = []
    for i in range(3):
        acc[i] = x[i] ** 2
        history.append(acc)
    return np.sum(history[0] * x)


def history_of_copies(x: np.ndarray) -> float:
    acc = np.zeros(3)
    history = []
    rows = np.zeros((3, 3))
    for i in range(3):
        acc[i] = x[i] ** 2
        history.append(acc.copy())
        rows[i] = acc
    return np.sum(history[0] * x) + np.sum(rows)


def test_write_into_an_array_an_earlier_iteration_appended() -> None:
    # every item of history is acc itself, which later iterations change: s2sad read the
    # first item as it was when appended (value and gradient wrong, silently)
    with pytest.raises(UnsupportedSyntaxError, match="'acc' is also stored") as info:
        s2sad.value_and_grad(history_of_one_array)(X)
    assert info.value.location.line == history_of_one_array.__code__.co_firstlineno + 4
    expected = np.array([3 * X[0] ** 2 + 6 * X[0], 4 * X[1], 2 * X[2]])
    np.testing.assert_allclose(s2sad.grad(history_of_copies)(X), expected)


def write_into_an_unpacked_row(A: np.ndarray) -> float:
    B = A * 1.0
    a, b = B
    a[0] = b[1] * 3.0
    return np.sum(B * A)


def write_into_real_part(x: np.ndarray) -> float:
    y = x * 1.0
    r = y.real
    r[0] = x[1] ** 2
    return np.sum(y * x)


@pytest.mark.parametrize("f, x", [(write_into_an_unpacked_row, np.array([[0.3, -0.7], [1.1, 0.5]])),
                                  (write_into_real_part, X)])
def test_write_into_a_view_from_unpacking_or_real(f, x: np.ndarray) -> None:
    # a and b are rows of B, y.real is y: the write changed the array read later, which s2sad
    # read as unchanged (value and gradient wrong, silently)
    with pytest.raises(UnsupportedSyntaxError) as info:
        s2sad.value_and_grad(f)(x)
    assert info.value.location.line == f.__code__.co_firstlineno + 3


def unpack_returned_pair_then_write(x: np.ndarray) -> float:
    a, b = helper_pair(x)
    a[0] = b[1] * 3.0
    return np.sum(a * x)


def helper_pair(x: np.ndarray) -> tuple:
    return x * 2.0, x ** 2


def test_write_into_an_array_unpacked_from_a_call_stays_allowed() -> None:
    expected = np.array([3 * X[1] ** 2, 6 * X[1] * X[0] + 4 * X[1], 4 * X[2]])
    np.testing.assert_allclose(s2sad.grad(unpack_returned_pair_then_write)(X), expected)


def augmented_item_of_a_dict(x: np.ndarray) -> float:
    y = x * 1.0
    d = {"a": y}
    d["a"] += 1.0
    return np.sum(y * x)


def write_into_what_max_chose(x: np.ndarray) -> float:
    y = x * 1.0
    w = x * 0.5
    z = max(y, w, key=lambda a: a[0])
    z[0] = x[1] ** 2
    return np.sum(y * x)


@pytest.mark.parametrize("f, line", [(augmented_item_of_a_dict, 3), (write_into_what_max_chose, 4)])
def test_in_place_change_of_an_array_a_container_or_max_holds(f, line: int) -> None:
    # d["a"] is y, and += changes it in place; max returns y itself: s2sad read y as
    # unchanged (value and gradient wrong, silently)
    with pytest.raises(UnsupportedSyntaxError) as info:
        s2sad.value_and_grad(f)(X)
    assert info.value.location.line == f.__code__.co_firstlineno + line


def augmented_items_of_fresh_containers(x: np.ndarray) -> float:
    d = {"a": x * 1.0}
    d["a"] += x ** 2
    totals = [0.0, 0.0]
    totals[1] += np.sum(x)
    return np.sum(d["a"]) + totals[1]


def test_augmented_items_of_containers_holding_fresh_values_stay_allowed() -> None:
    np.testing.assert_allclose(s2sad.grad(augmented_items_of_fresh_containers)(X), 2 + 2 * X)


def trajectory_of_one_array(v0: np.ndarray, x0: np.ndarray) -> float:
    x, v = x0.copy(), v0.copy()
    trajectory = []
    for _ in range(5):
        v -= 0.1 * x
        x += 0.1 * v
        trajectory.append(x)
    return np.sum(np.array(trajectory) ** 2)


def test_augmented_update_of_an_array_an_earlier_iteration_appended() -> None:
    # every item of trajectory is x itself, which x += changes: the value and the gradient
    # were those of the trajectory of copies, silently
    with pytest.raises(UnsupportedSyntaxError, match="'x' is also stored") as info:
        s2sad.value_and_grad(trajectory_of_one_array, 1)(0.5 * X, X)
    assert info.value.location.line == trajectory_of_one_array.__code__.co_firstlineno + 5
