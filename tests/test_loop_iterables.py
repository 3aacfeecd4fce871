"""A ``for`` over a value that carries a gradient runs as a loop by position (``xs[i]``):
right for lists, tuples and arrays; for anything else Python's loop would differ (a dict
iterates its keys, which ``d[i]`` does not read), so it is refused at the loop as it runs."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import s2sad
from gradcheck import numerical_grad


def weighted_by_keys(x, counts):
    s = 0.0
    for k in counts:
        s = s + k * x[0]
    return s


def summed_over(x, items):
    return sum(v * x[0] for v in items) + x[1]


def _loop_line(fn):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if " for " in line or line.lstrip().startswith("for "))


X = np.array([1.0, 2.0])


@pytest.mark.parametrize("specialize", [True, False], ids=["specialised", "generic"])
@pytest.mark.parametrize("fn, items, kind", [
    (weighted_by_keys, {0: 5.0, 1: 7.0}, "dict's keys"),    # d[0], d[1]: a silently wrong value and gradient
    (summed_over, {0: 5.0, 1: 7.0}, "dict's keys"),
    (summed_over, {1.0, 2.0}, "set"),
    (summed_over, {1.0: 0, 2.0: 0}.keys(), "dict_keys"),
    (summed_over, iter([1.0, 2.0]), "list_iterator"),
], ids=["dict", "dict-in-comprehension", "set", "dict-keys", "iterator"])
def test_a_loop_over_what_is_no_sequence_is_refused_at_the_loop(fn, items, kind, specialize):
    with pytest.raises(s2sad.S2SADError, match=f"this loop iterates over a {kind}") as info:
        s2sad.grad(fn, 0, specialize=specialize)(X, items)
    assert (info.value.location.filename, info.value.location.line) == (__file__, _loop_line(fn))


@pytest.mark.parametrize("items", [[1.0, 2.0], (1.0, 2.0), np.array([1.0, 2.0])], ids=["list", "tuple", "array"])
def test_a_loop_over_a_sequence_is_differentiated(items):
    for _ in range(2):  # (generic, then specialised code)
        np.testing.assert_allclose(s2sad.grad(summed_over, 0)(X, items), numerical_grad(summed_over, (X, items), 0))


def keys_then(x, counts):
    s = 0.0
    for k in counts.keys():
        s = s + k * x[0]
    return s


def test_the_keys_of_a_dict_with_integer_keys_are_what_the_loop_reads():
    counts = {3: 5.0, 4: 7.0}
    value, grad = s2sad.value_and_grad(keys_then, 0)(X, counts)
    assert value == keys_then(X, counts) == 7.0
    np.testing.assert_allclose(grad, [7.0, 0.0])


def rows_times(x, rows):
    s = 0.0
    for r in rows:
        s = s + np.sum(r * x)
    return s


def _sources(made):
    """The generated sources behind a dispatcher's table (containers' dispatchers too)."""
    for code in made.__s2sad_specialized__.values():
        yield from _sources(code) if hasattr(code, "__s2sad_specialized__") else [code.__s2sad_source__]


@pytest.mark.parametrize("rows", [[np.ones(2), np.arange(2.0)], (np.ones(2),), np.ones((3, 2))],
                         ids=["list", "tuple", "array"])
def test_code_specialised_to_a_sequence_does_not_check_it(rows):
    g = s2sad.grad(rows_times, 0)
    assert "check_sequence(rows)" in g.__s2sad_source__  # (the generic code checks)
    np.testing.assert_allclose(g(X, rows), numerical_grad(rows_times, (X, rows), 0))
    sources = list(_sources(g))  # (g is the one dispatcher of rows_times: it holds every test's)
    assert sources and all("rows[i]" in source and "check_sequence" not in source for source in sources)
