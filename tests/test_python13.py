"""The Python people write inside functions they differentiate (probe python13): list and dict
methods run as statements, `del`, slice assignment of lists, gradients bound to a name and
called, methods and the state of `self`, the same array twice in a container, and a broad
probe in the style of Tangent's and autograd's suites (dataclasses, named tuples, properties,
closures, comprehensions, iterators, `while`/`else`, `try`/`finally`, recursion with a memo,
`functools`, `itertools`, `math`).  Gradients and Hessian-vector products are checked against
central finite differences in float64; refusals against their location."""
from __future__ import annotations

import itertools
import operator
from typing import Any, Callable

import numpy as np
import pytest

import s2sad
from tests.gradcheck import assert_grad_matches, assert_hvp_matches

R = np.random.default_rng(13)




def raises_at(f: Callable[..., Any], args: list[Any], line: int, text: str,
              where: Callable[..., Any] | None = None, wrt: int = 0) -> None:
    """``s2sad.grad(f, wrt)(*args)`` raises an S2SADError at ``line`` of ``where`` (``f`` by
    default; line 1 is its ``def``)."""
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(f, wrt)(*args)
    where = where or f
    assert info.value.location.line == where.__code__.co_firstlineno + line - 1, str(info.value)
    assert info.value.location.filename == where.__code__.co_filename
    assert text in str(info.value), str(info.value)


# --- the same array twice in a container ---------------------------------------------------------

def bump_first(xs: list) -> float:
    xs[0] += 1.0
    return np.sum(xs[0] * xs[1])


def bump_first_of_copy(xs: list) -> float:
    ys = list(xs)
    ys[0] += 1.0
    return np.sum(ys[0] * ys[1])


def calls_bump_first_of_copy(a: np.ndarray) -> float:
    b = a * 2.0
    r = bump_first_of_copy([a, b])
    return r + np.sum(a ** 2)  # (Python's a is the one ys[0] += 1.0 changed)


def calls_bump_first_of_copy_on_numbers(x: np.ndarray) -> float:
    return bump_first_of_copy([x[0], x[1]]) + x[0] ** 2


def test_an_item_changed_in_place_that_is_another_item_too_is_refused_as_the_code_runs() -> None:
    a = np.array([0.5, 2.0])
    raises_at(bump_first, [[a, a]], 2, "that item of 'xs' is another of its items too")
    with pytest.raises(s2sad.S2SADError):
        s2sad.hvp(bump_first)([a, a], [a, a])
    g = s2sad.grad(bump_first)([a, 2.0 * a])  # (distinct arrays: as Python computes)
    np.testing.assert_allclose(g[0], 2.0 * a)
    np.testing.assert_allclose(g[1], a + 1.0)


def test_an_array_item_of_a_copy_of_a_callees_argument_changed_in_place_is_refused() -> None:
    # Python's ys[0] += 1.0 changes the caller's array a (read afterwards): s2sad's new value would not
    raises_at(calls_bump_first_of_copy, [np.array([0.5, 2.0])], 3, "'ys' may be a copy of the argument 'xs'",
              where=bump_first_of_copy)


def test_a_number_item_of_a_copy_of_a_callees_argument_is_a_new_value() -> None:
    assert_grad_matches(calls_bump_first_of_copy_on_numbers, [np.array([0.5, 2.0])], 0)
    assert_hvp_matches(calls_bump_first_of_copy_on_numbers, [np.array([0.5, 2.0])])


# --- list and dict methods run as statements, del ------------------------------------------------

def sort_statement(x: np.ndarray) -> float:
    ys = [x[0], x[1] * 2.0, x[2] ** 2]
    ys.sort()
    return ys[0] * 3.0 + ys[2]


def sort_by_key_reversed(x: np.ndarray) -> float:
    ys = [x[0], x[1] * 2.0, x[2] ** 2]
    ys.sort(key=lambda t: abs(t), reverse=True)
    return ys[0] * 3.0 + ys[1] ** 2 - ys[2]


def sort_in_a_loop(x: np.ndarray) -> float:
    ys = []
    for i in range(3):
        ys.append(x[i] * (i + 1))
        ys.sort()
    return ys[0] * 3.0 + ys[1] * 2 + ys[2]


def sort_a_copy(xs: list) -> float:
    xs = list(xs)
    xs.sort()
    return xs[0] * 3.0 + xs[2]


def calls_sort_a_copy(x: np.ndarray) -> float:
    return sort_a_copy([x[0], x[1], x[2]])


def reverse_statement(x: np.ndarray) -> float:
    ys = [x * 1.0, x ** 2, np.sin(x)]
    ys.reverse()
    return np.sum(ys[0] * 3.0 + ys[1] ** 2)


def remove_statement(x: np.ndarray) -> float:
    a, b, c = x[0], x[1] * 2.0, x[2] ** 2
    ys = [a, b, c]
    ys.remove(b)
    return ys[0] * 3.0 + ys[1] ** 2


def remove_an_array(x: np.ndarray) -> float:
    a, b = x * 2.0, x ** 2
    ys = [a, b, np.sin(x)]
    ys.remove(a)  # (the first item is a itself: Python compares no arrays)
    return np.sum(ys[0] * ys[1])


def delete_an_item(x: np.ndarray) -> float:
    ys = [x[0], x[1] * 2.0, x[2] ** 2]
    del ys[1]
    return ys[0] * 3.0 + ys[1] ** 2


def delete_the_last_and_a_slice(x: np.ndarray) -> float:
    ys = [x[0], x[1] * 2.0, x[2] ** 2, x[0] * x[1], np.sin(x[2])]
    del ys[-1]
    del ys[1:3]
    return ys[0] * 3.0 + ys[1] ** 2


def delete_in_a_while_loop(x: np.ndarray) -> float:
    ys = [x[0], x[1] * 2.0, x[2] ** 2, np.sin(x[0])]
    while len(ys) > 1:
        del ys[0]
        ys[0] = ys[0] * 2.0
    return ys[0]


def delete_a_key(x: np.ndarray) -> float:
    d = {"a": x[0], "b": x[1] * 2.0, "c": x[2] ** 2}
    del d["b"]
    return sum(v ** 2 for v in d.values()) + d["c"]


def delete_a_key_of_a_copy(p: dict) -> float:
    q = dict(p)
    del q["b"]
    return np.sum(q["a"] ** 2) + len(q)


def sort_an_array(x: np.ndarray) -> float:
    y = x * 2.0
    y.sort()
    return y[0] * 3.0 + y[2]


STATEMENTS = [sort_statement, sort_by_key_reversed, sort_in_a_loop, calls_sort_a_copy, reverse_statement,
              remove_statement, remove_an_array, delete_an_item, delete_the_last_and_a_slice,
              delete_in_a_while_loop, delete_a_key]


@pytest.mark.parametrize("f", STATEMENTS, ids=[f.__name__ for f in STATEMENTS])
def test_list_and_dict_changes_written_as_statements(f) -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(f, [x], 0)
    assert_hvp_matches(f, [x])


def test_deleting_a_key_of_a_dict_argument_gives_it_no_gradient() -> None:
    x = np.array([0.3, -1.2, 0.8])
    g = s2sad.grad(delete_a_key_of_a_copy)({"a": x, "b": 2.0 * x})
    np.testing.assert_allclose(g["a"], 2.0 * x)
    np.testing.assert_array_equal(g["b"], np.zeros(3))


def test_sorting_an_array_in_place_is_refused_where_it_runs() -> None:
    raises_at(sort_an_array, [np.array([0.3, -1.2, 0.8])], 3, "write y = np.sort(y) for an array")


# --- the gradient of a lambda or nested function bound to a name, then called -------------------

def inner_loss(v: np.ndarray, x: np.ndarray) -> float:
    return np.sum(np.sin(v * x))


def maml_bound(w: np.ndarray, x: np.ndarray) -> float:
    dl = s2sad.grad(lambda v: inner_loss(v, x))
    return np.sum((w - 0.1 * dl(w)) ** 2)


def maml_bound_steps(w: np.ndarray, x: np.ndarray) -> float:
    dl = s2sad.grad(lambda v: inner_loss(v, x))
    for _ in range(3):
        w = w - 0.1 * dl(w)
    return np.sum(w ** 2)


def nested_def_bound(w: np.ndarray, x: np.ndarray) -> float:
    def inner(v):
        return inner_loss(v, x) + np.sum(v ** 2)
    dl = s2sad.grad(inner)
    return np.sum(dl(w) * dl(2.0 * w))


def bound_then_variable_rebound(w: np.ndarray, x: np.ndarray) -> float:
    dl = s2sad.grad(lambda v: inner_loss(v, x))
    a = dl(w)
    x = x * 2.0  # (the lambda reads x when called, as Python's closure does)
    return np.sum(a * dl(w))


def bound_in_a_loop(w: np.ndarray, x: np.ndarray) -> float:
    for k in range(2):
        dl = s2sad.grad(lambda v: inner_loss(v, x * (k + 1)))
        w = w - 0.1 * dl(w)
    return np.sum(w ** 2)


def value_and_grad_bound(w: np.ndarray, x: np.ndarray) -> float:
    f = s2sad.value_and_grad(lambda v: inner_loss(v, x))
    val, g = f(w)
    return val * np.sum(g)


def bound_in_a_loop_called_after(w: np.ndarray, x: np.ndarray) -> float:
    for k in range(2):
        dl = s2sad.grad(lambda v: inner_loss(v, x * (k + 1)))
    return np.sum(dl(w))


BOUND = [maml_bound, maml_bound_steps, nested_def_bound, bound_then_variable_rebound, bound_in_a_loop,
         value_and_grad_bound]


@pytest.mark.parametrize("f", BOUND, ids=[f.__name__ for f in BOUND])
@pytest.mark.parametrize("wrt", [0, 1])
def test_a_derivative_bound_to_a_name_then_called(f, wrt: int) -> None:
    args = [np.array([0.3, -1.2, 0.8]), np.array([0.5, 1.5, -0.7])]
    assert_grad_matches(f, args, wrt)
    assert_hvp_matches(f, args, wrt)


def test_a_derivative_bound_in_a_loop_and_called_after_it_is_refused_at_the_call() -> None:
    raises_at(bound_in_a_loop_called_after, [np.ones(3), np.ones(3)], 4, "bind it in the block where it is called")


# --- methods: private names, state of self ---------------------------------------------------------

class Scaled:
    def __init__(self) -> None:
        self.__scale = 1.5
        self.__w = np.array([1.0, 2.0, 3.0])

    def energy(self, x: np.ndarray) -> float:
        def inner(t):
            __tmp = self.__scale * np.sin(t) * self.__w
            return __tmp ** 2
        return np.sum(inner(x)) + self.__helper(x)

    def __helper(self, x: np.ndarray) -> float:
        def inner(t):
            return np.cos(t) * self.__scale
        return np.sum(inner(x) ** 3)


SCALED = Scaled()


def test_a_private_attribute_read_in_a_nested_def_of_a_method() -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(SCALED.energy, [x], 0)
    assert_hvp_matches(SCALED.energy, [x])


class Counter:
    def __init__(self) -> None:
        self.n = 0
        self.cache = None

    def step(self, x: np.ndarray) -> float:
        self.n += 1
        return np.sum(x ** 2)

    def remember(self, x: np.ndarray) -> float:
        self.cache = "full" if x.shape[0] > 2 else "small"
        return np.sum(np.sin(x))

    def counted(self, x: np.ndarray) -> float:
        a = self.step(x)
        if self.n == 2:
            return a * 3.0
        return a


COUNTER = Counter()


def counts_then_branches(x: np.ndarray) -> float:
    COUNTER.n = 0
    y = COUNTER.step(x)
    y2 = COUNTER.step(x * 2.0)
    if COUNTER.n == 2:
        return y + y2 * np.sum(np.sin(x))
    return 100.0 * y


def caches_then_branches(x: np.ndarray) -> float:
    y = COUNTER.remember(x)
    if COUNTER.cache == "full":
        return y * np.sum(x ** 3)
    return -y


def fresh_counter_branches(x: np.ndarray) -> float:
    c = Counter()
    y = c.step(x)
    if c.n == 1:
        return y * np.sum(np.sin(x))
    return y


def method_reads_what_it_changes(x: np.ndarray) -> float:
    COUNTER.n = 1
    return COUNTER.counted(x) * np.sum(np.cos(x))


@pytest.mark.parametrize("f", [counts_then_branches, caches_then_branches, fresh_counter_branches])
def test_state_of_an_object_changed_and_read_by_a_condition(f) -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(f, [x], 0)
    assert_hvp_matches(f, [x])


def test_a_callee_reading_state_it_changes_is_refused_where_its_forward_pass_runs_again() -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(method_reads_what_it_changes, [x], 0)  # (first order: its forward pass runs once)
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.hvp(method_reads_what_it_changes)(x, np.ones(3))
    assert info.value.location.line == Counter.counted.__code__.co_firstlineno + 2, str(info.value)
    assert "'self.n' is read in a function that changes it" in info.value.message


# --- reversed() where it is no loop's own iterable; try/finally -----------------------------------

def zip_with_reversed(x: np.ndarray) -> float:
    s = 0.0
    for i, (a, b) in enumerate(zip(x, reversed(x))):
        s = s + i * a * b
    return s


def list_of_reversed(x: np.ndarray) -> float:
    ys = list(reversed([x[0], x[1] * 2.0, x[2] ** 2]))
    return ys[0] * 3.0 + ys[1] ** 2


def reversed_rows(x: np.ndarray) -> float:
    rows = list(reversed(np.outer(x, x)))
    return np.sum(rows[0] * np.arange(3.0)) + np.sum(rows[2] ** 2)


def try_finally(x: np.ndarray) -> float:
    try:
        y = np.sum(x ** 2)
    finally:
        z = 2.0
    return y * z


def try_finally_in_a_loop(x: np.ndarray) -> float:
    s = 0.0
    for v in x:
        try:
            s = s + np.sin(v)
        finally:
            s = s * 1.5
    return s


def try_finally_that_returns(x: np.ndarray) -> float:
    try:
        return np.sum(x ** 2)
    finally:
        pass


def reversed_read_twice(x: np.ndarray) -> float:
    r = reversed([x[0], x[1]])
    a = list(r)
    return a[0] + len(list(r))


ORDERED = [zip_with_reversed, list_of_reversed, reversed_rows, try_finally, try_finally_in_a_loop]


@pytest.mark.parametrize("f", ORDERED, ids=[f.__name__ for f in ORDERED])
def test_reversed_and_try_finally(f) -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(f, [x], 0)
    assert_hvp_matches(f, [x])


def test_try_finally_that_returns_is_refused_at_the_try() -> None:
    raises_at(try_finally_that_returns, [np.ones(3)], 2, "'try:' ... 'finally:' ... is, where neither")


def test_a_reversed_iterator_read_twice_is_refused() -> None:
    raises_at(reversed_read_twice, [np.ones(3)], 2, "a reversed object bound to a name is an iterator")


def reverse_result_assigned(x: np.ndarray) -> float:
    ys = [x[0], x[1] * 2.0, x[2]]
    r = ys.reverse()
    return ys[0] * 2 + ys[2]


def remove_result_assigned(x: np.ndarray) -> float:
    ys = [x[0], 1.0, x[2] * x[1]]
    r = ys.remove(1.0)
    return ys[0] * 2 + ys[1]


@pytest.mark.parametrize("f", [reverse_result_assigned, remove_result_assigned])
def test_a_list_method_that_changes_it_inside_an_expression_is_refused(f) -> None:
    raises_at(f, [np.array([0.3, -1.2, 0.8])], 3, "inside an expression is not supported; call it on its own line")


# --- slice assignment of a list --------------------------------------------------------------------

def slice_assigned_same_length(x: np.ndarray) -> float:
    ys = [x[0], x[1] * 2.0, x[2] ** 2]
    ys[0:2] = [x[2] * 5.0, x[1]]
    return ys[0] * 3.0 + ys[1] ** 2 + ys[2]


def slice_assigned_shorter(x: np.ndarray) -> float:
    ys = [x[0], x[1] * 2.0, x[2] ** 2]
    ys[0:2] = [x[2] * 5.0]
    return ys[0] * 3.0 + ys[1] ** 2


def array_slice_assigned(x: np.ndarray) -> float:
    y = x * 2.0
    y[0:2] = x[1:] ** 2
    return np.sum(y ** 2)


@pytest.mark.parametrize("f", [slice_assigned_same_length, array_slice_assigned])
def test_a_slice_assignment_that_keeps_the_length(f) -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(f, [x], 0)
    assert_hvp_matches(f, [x])
    if f is array_slice_assigned:  # (specialised to an array: no check)
        assert "check_slice_length" not in s2sad.adjoint_source(f, example=(x,))


def test_a_slice_assignment_that_changes_a_lists_length_is_refused_where_it_runs() -> None:
    # (it was an IndexError in the backward pass)
    raises_at(slice_assigned_shorter, [np.array([0.3, -1.2, 0.8])], 3,
              "changes the length of the list 'ys', which s2sad does not follow; write ys = ys[:i] + [...]")


# --- comprehensions whose targets nest -----------------------------------------------------------

def generator_over_enumerate_zip(x: np.ndarray) -> float:
    return sum(i * a * b for i, (a, b) in enumerate(zip(x, x ** 2)))


def list_comprehension_of_nested_pairs(x: np.ndarray) -> float:
    pairs = [(x[0], (x[1], x[2])), (x[2], (x[0], x[0] * x[1]))]
    return sum([a * b * c for a, (b, c) in pairs])


def comprehension_variable_shadows_a_local(x: np.ndarray) -> float:
    i = 5.0
    s = sum(i * a for i, (a, b) in enumerate(zip(x, x)))
    return s + i * x[0]


@pytest.mark.parametrize("f", [generator_over_enumerate_zip, list_comprehension_of_nested_pairs,
                               comprehension_variable_shadows_a_local])
def test_a_comprehension_target_that_nests(f) -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(f, [x], 0)
    assert_hvp_matches(f, [x])


# --- itertools.accumulate --------------------------------------------------------------------------

def running_sums(x: np.ndarray) -> float:
    return sum(itertools.accumulate(x ** 2))


def running_products(x: np.ndarray) -> float:
    return sum(itertools.accumulate(x, lambda a, b: a * b + 0.5))


def running_products_from(x: np.ndarray) -> float:
    r = list(itertools.accumulate([x[0], x[1] ** 2, x[2]], operator.mul, initial=2.0))
    return r[0] + r[1] * r[3]


def loop_over_running_sums(x: np.ndarray) -> float:
    s = 0.0
    for v in itertools.accumulate(np.sin(x)):
        s = s + v ** 2
    return s


@pytest.mark.parametrize("f", [running_sums, running_products, running_products_from, loop_over_running_sums])
def test_itertools_accumulate(f) -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(f, [x], 0)
    assert_hvp_matches(f, [x])


# --- an item of a container called ---------------------------------------------------------------

class Layer:
    def __init__(self, W: np.ndarray) -> None:
        self.W = W

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(self.W @ x)


class Stack:
    def __init__(self) -> None:
        self.layers = [Layer(np.eye(3) * 0.5), Layer(np.ones((3, 3)) * 0.1)]

    @property
    def depth(self) -> int:
        return len(self.layers)

    def by_index(self, x: np.ndarray) -> float:
        for i in range(self.depth):
            x = self.layers[i](x)
        return np.sum(x ** 2)

    def by_loop(self, x: np.ndarray) -> float:
        for layer in self.layers:
            x = layer(x)
        return np.sum(x ** 2)


STACK = Stack()


def test_layers_called_in_a_loop_over_them() -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(STACK.by_loop, [x], 0)
    assert_hvp_matches(STACK.by_loop, [x])


def test_an_item_of_a_container_called_by_index() -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(STACK.by_index, [x], 0)
    assert_hvp_matches(STACK.by_index, [x])


# --- pop of a dict ---------------------------------------------------------------------------------

def pop_a_key(x: np.ndarray) -> float:
    d = {"a": x[0], "b": x[1] * 2.0, "c": x[2] ** 2}
    v = d.pop("b")
    return d["a"] * d["c"] + v ** 2 + len(d)


def pop_a_key_of_a_copy(p: dict) -> float:
    q = dict(p)
    w = q.pop("w")
    return np.sum(w ** 2) * q["s"]


def test_pop_of_a_dict() -> None:
    x = np.array([0.3, -1.2, 0.8])
    assert_grad_matches(pop_a_key, [x], 0)
    assert_hvp_matches(pop_a_key, [x])
    g = s2sad.grad(pop_a_key_of_a_copy)({"w": x, "s": 2.0})
    np.testing.assert_allclose(g["w"], 4.0 * x)
    assert g["s"] == pytest.approx(np.sum(x ** 2))
