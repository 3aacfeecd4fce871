"""Every rejected construct gets an S2SADError with its exact file, line and column."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import s2sad
from s2sad import grad
from s2sad.errors import Location

HERE = __file__


def where(fn, snippet: str) -> tuple[int, int]:
    """The 1-based line and column of the first occurrence of ``snippet`` in fn's source."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        col = line.find(snippet)
        if col >= 0:
            return first + i, col + 1
    raise AssertionError(f"{snippet!r} not in source")


def for_else(x):
    s = 0.0
    for i in range(3):
        s = s + x
    else:
        return np.sum(s * 2)
    return np.sum(s)


def uses_try(x):
    try:
        y = x * 2
        y = y + 1  # (two statements: the probe of tries.py cannot replay the first's effect)
    except ValueError:
        y = x
    return np.sum(y)


def uses_with(x):
    with open(__file__) as fh:  # (np.errstate and warnings.catch_warnings are supported)
        y = np.log(x) * len(fh.read())
    return np.sum(y)


def uses_yield(x):
    y = yield x
    return y


def uses_global(x):
    for _ in range(2):  # ('global' at the top of the function is followed)
        global counter
    return np.sum(x)


def uses_class(x):
    class Box:
        pass
    return np.sum(x)


def uses_del(x):
    y = x * 2
    del y.flat
    return np.sum(x)


def reads_after_del(x):
    y = x * 2
    del y
    return np.sum(y)


def uses_exec(x):
    y = exec("z = 1") + x
    return np.sum(y)


def subscript_store_into_alias(x):
    y = x
    y[0] = 3.0
    return np.sum(y) + np.sum(x)


def no_return(x):
    y = x * 2


def unknown_function(x):
    y = np.unwrap(x)
    return np.sum(np.abs(y))


def scaled_power(x, c):
    # recursion is differentiated (tests/test_recursion.py); a recursive nested function
    # that reads the enclosing function's variables is not
    def power_of(n, y):
        if n <= 1:
            return y * c
        return power_of(n - 1, y) * y
    return power_of(3, x)


def recursive(x):
    return np.sum(scaled_power(x, 2.0))


def star_args_helper(*values):
    return values[0] * values[1]


def active_through_star_args(x, parts):
    # active values through *args are differentiated (tests/test_varargs.py), a splat alone too
    return np.sum(star_args_helper(x, *parts))


def lambda_over_locals(x):
    f = lambda t: t * x
    g = f
    return np.sum(g(x))


def walrus(x):
    return np.sum([(y := x * k) for k in range(2)])


def star_of_an_argument(x, parts):
    return helper_sum(x, *parts)


def helper_sum(a, b):
    return np.sum(a * b)


CASES = [
    (star_of_an_argument, "*parts", s2sad.UnsupportedSyntaxError, "needs a tuple or list whose length"),
    # (a loop whose else returns was refused; the loop never breaks: its else always returns)
    (for_else, "return np.sum(s)", s2sad.UnsupportedSyntaxError, "code after 'return' is never run"),
    (uses_try, "try:", s2sad.UnsupportedSyntaxError, "'try'"),
    (uses_with, "with open", s2sad.UnsupportedSyntaxError, "only 'with np.errstate(...)'"),
    (uses_yield, "yield x", s2sad.UnsupportedSyntaxError, "generators"),
    (uses_global, "global counter", s2sad.UnsupportedSyntaxError, "'global' is followed at the top level"),
    (uses_class, "class Box:", s2sad.UnsupportedSyntaxError, "class definitions"),
    (uses_del, "del y.flat", s2sad.UnsupportedSyntaxError, "'del' is supported only for local variables"),
    (reads_after_del, "y)", s2sad.UnsupportedSyntaxError, "'y' is read after 'del y'"),
    (uses_exec, 'exec("z = 1")', s2sad.UnsupportedSyntaxError, "exec"),
    (subscript_store_into_alias, "y[0] = 3.0", s2sad.UnsupportedSyntaxError,
     "'y' and 'x' are the same object, and 'x' is read later"),
    (no_return, "y = x * 2", s2sad.UnsupportedSyntaxError, "must end with 'return"),
    (unknown_function, "np.unwrap(x)", s2sad.NoGradientRuleError, "np.unwrap"),
    (recursive, "def power_of", s2sad.UnsupportedSyntaxError,
     "'power_of' calls itself and reads c from the enclosing function; pass it as an argument"),
    (active_through_star_args, "*parts", s2sad.UnsupportedSyntaxError, "for a Python function's *args"),
    (lambda_over_locals, "lambda t: t * x", s2sad.UnsupportedSyntaxError,
     "reads x from the enclosing function; pass it as an argument"),
    (walrus, "y := x * k", s2sad.UnsupportedSyntaxError, "walrus"),
]


SNIPPET_IN = {recursive: scaled_power}  # errors found inside a callee point into the callee


@pytest.mark.parametrize("fn, snippet, error, words", CASES, ids=[c[0].__name__ for c in CASES])
def test_error_location_and_message(fn, snippet, error, words):
    with pytest.raises(error) as info:
        grad(fn)
    exc = info.value
    assert words in exc.message
    line, col = where(SNIPPET_IN.get(fn, fn), snippet)
    assert (exc.location.filename, exc.location.line, exc.location.column) == (HERE, line, col)
    text = str(exc)
    assert text.startswith(f"{HERE}:{line}:{col}: ")
    assert text.splitlines()[-1].strip() == "^"
    assert snippet in text.splitlines()[1]


def test_error_caret_points_at_column():
    exc = s2sad.S2SADError("bad", Location("f.py", 3, 5, "    y = foo(x)\n"))
    assert str(exc) == "f.py:3:5: bad\n        y = foo(x)\n        ^"


def test_builtin_has_no_source():
    with pytest.raises(s2sad.SourceError, match="no Python source"):
        grad(np.sum)


def test_exec_defined_function_has_no_source():
    namespace: dict = {}
    exec("def f(x):\n    return x * 2\n", namespace)
    with pytest.raises(s2sad.SourceError, match="cannot read the source"):
        grad(namespace["f"])


def test_lambda_without_source_is_rejected_with_advice():
    # lambdas are differentiated from their source (tests/test_callables.py); one made by
    # eval has none
    with pytest.raises(s2sad.SourceError, match="define the function in a file"):
        grad(eval("lambda x: x * 2"))


def two_args(x, y):
    return np.sum(x * y)


@pytest.mark.parametrize("wrt, words", [
    (2, "out of range"), (-3, "out of range"), ("z", "names no parameter"),
    (("x", "x"), "twice"), ((), "empty"), (1.5, "parameter index"), (True, "parameter index"),
])
def test_bad_wrt(wrt, words):
    with pytest.raises(s2sad.WrtError, match=words):
        grad(two_args, wrt=wrt)


def test_non_scalar_output_is_a_clear_error_at_call_time():
    def vector(x):
        return x * 2.0
    g = grad(vector)
    with pytest.raises(s2sad.NonScalarOutputError, match=r"shape \(3,\)"):
        g(np.ones(3))


def test_integer_argument_cannot_be_differentiated():
    with pytest.raises(s2sad.NonDifferentiableInputError, match="'x'.*int"):
        grad(two_args)(np.arange(3), np.ones(3))
    with pytest.raises(s2sad.NonDifferentiableInputError, match="'x'"):
        grad(two_args)(3, 2.0)


def test_integer_output_is_rejected():
    def count(x):
        return np.sum(x > 0)
    with pytest.warns(s2sad.ZeroGradientWarning):
        g = grad(count)
    with pytest.raises(s2sad.NonScalarOutputError, match="float"):
        g(np.ones(3))


def test_errors_are_s2sad_errors():
    for cls in (s2sad.SourceError, s2sad.UnsupportedSyntaxError, s2sad.NoGradientRuleError,
                s2sad.WrtError, s2sad.NonScalarOutputError, s2sad.NonDifferentiableInputError):
        assert issubclass(cls, s2sad.S2SADError)
