"""The Python people write inside functions they differentiate (probe python15): a function
chosen by a conditional expression and called (``act = np.tanh if use_tanh else relu``), and
other forms s2sad refused.  Gradients and Hessian-vector products are checked against central
finite differences in float64; refusals against their location."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import s2sad
from tests.gradcheck import assert_grad_matches, assert_hvp_matches, numerical_grad

R = np.random.default_rng(15)
X = np.array([0.3, -0.7, 1.1, 0.5])



def assert_value_and_grad_matches(f: Callable[..., Any], args: list[Any], wrt: int = 0) -> None:
    """``s2sad.value_and_grad(f, wrt)`` against ``f`` itself and central differences."""
    value, gradient = s2sad.value_and_grad(f, wrt)(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    np.testing.assert_allclose(gradient, numerical_grad(f, args, wrt), rtol=1e-6, atol=1e-8)


def raises_at(f: Callable[..., Any], args: list[Any], line: int, text: str, wrt: int = 0) -> None:
    """``s2sad.grad(f, wrt)(*args)`` raises an S2SADError at ``line`` of ``f`` (1: its ``def``)."""
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(f, wrt)(*args)
    assert info.value.location.line == f.__code__.co_firstlineno + line - 1, str(info.value)
    assert info.value.location.filename == f.__code__.co_filename
    assert text in str(info.value), str(info.value)


def check_all(f: Callable[..., Any], args: list[Any]) -> None:
    assert_grad_matches(f, args, 0)
    assert_value_and_grad_matches(f, args)
    assert_hvp_matches(f, args)


# --- a function chosen by a conditional expression, then called ---------------------------------

def relu(z: Any) -> Any:
    return np.maximum(z, 0.0)


def softplus(z: Any) -> Any:
    return np.log1p(np.exp(z))


USE_TANH = False


def chosen_by_an_argument(x: np.ndarray, use_tanh: bool = True) -> float:
    act = np.tanh if use_tanh else softplus
    return np.sum(act(x) * act(2 * x))


def chosen_by_a_global(x: np.ndarray) -> float:
    h = np.tanh if USE_TANH else softplus
    return np.sum(h(x) ** 2)


def chosen_between_lambdas(x: np.ndarray, w: float = 0.5) -> float:
    act = (lambda z: np.sin(z * w)) if w > 0 else (lambda z: z ** 3)  # noqa: E731
    w = 2.0 * w  # (the lambda reads w when it is called, as Python's closure does)
    return np.sum(act(x) ** 2)


def chosen_among_three_in_a_loop(x: np.ndarray, k: int = 1) -> float:
    act = np.tanh if k == 0 else (softplus if k == 1 else np.exp)
    s = 0.0
    for i in range(3):
        s = s + np.sum(act(x * (i + 1)))
    return s


def chosen_by_the_value_itself(x: np.ndarray) -> float:
    def cube(z: Any) -> Any:
        return z ** 3
    act = cube if x[0] > 0 else np.sin
    return np.sum(act(x)) + np.sum(list(map(act, x)))


CHOSEN = [
    (chosen_by_an_argument, [X.copy()]), (chosen_by_an_argument, [X.copy(), False]),
    (chosen_by_a_global, [X.copy()]),
    (chosen_between_lambdas, [X.copy()]), (chosen_between_lambdas, [X.copy(), -0.5]),
    (chosen_among_three_in_a_loop, [X.copy()]), (chosen_among_three_in_a_loop, [X.copy(), 0]),
    (chosen_among_three_in_a_loop, [X.copy(), 2]),
    (chosen_by_the_value_itself, [X.copy()]), (chosen_by_the_value_itself, [-X]),
]


@pytest.mark.parametrize("f, args", CHOSEN, ids=lambda v: getattr(v, "__name__", ""))
def test_a_function_chosen_by_a_conditional_expression(f: Callable[..., Any], args: list[Any]) -> None:
    # (refused: "'act' is a local variable (or an unknown name)")
    check_all(f, args)


def applies(f: Callable[..., Any], z: Any) -> Any:
    return f(z)


def chosen_then_passed_on(x: np.ndarray, c: bool = True) -> float:
    act = np.tanh if c else relu
    return np.sum(applies(act, x))


def chosen_in_a_loop(x: np.ndarray, c: bool = True) -> float:
    s = 0.0
    for i in range(2):
        act = np.tanh if c else relu
        s = s + np.sum(act(x))
    return s


def chosen_then_rebound(x: np.ndarray, c: bool = True) -> float:
    act = np.tanh if c else relu
    if x[0] > 0:
        act = np.sin
    return np.sum(act(x))


def test_a_chosen_function_used_other_than_called_is_refused_where_it_is_used() -> None:
    raises_at(chosen_then_passed_on, [X.copy()], 3, "'act' is a function chosen by a conditional expression")
    raises_at(chosen_then_rebound, [X.copy()], 4, "nowhere else (assigned again")
    raises_at(chosen_in_a_loop, [X.copy()], 5, "bind it once, at the top level of the function")


# --- *args and **kwargs passed on whole after named parameters ----------------------------------

def combined(a: Any, b: Any, c: Any = 1.0, scale: float = 1.0) -> Any:
    return np.sum(a * b * c) * scale


def after_one(a: Any, *args: Any, **kwargs: Any) -> Any:
    return combined(a, *args, **kwargs)


def after_defaults(a: Any, b: Any = 2.0, *args: Any, scale: float = 3.0, **kwargs: Any) -> Any:
    """A docstring, and a line before the call."""
    t = a * scale
    return combined(t, b, *args, **kwargs)


def only_args(a: Any, *args: Any) -> Any:
    return combined(np.sin(a), *args)


def only_kwargs(a: Any, **kwargs: Any) -> Any:
    return combined(a, a, **kwargs)


def through_two(a: Any, *args: Any, **kwargs: Any) -> Any:
    return after_one(a * 2, *args, **kwargs)


def positional_only(a: Any, /, *args: Any, **kwargs: Any) -> Any:
    return combined(a, *args, **kwargs)


def calls_forwarders_after_named(x: np.ndarray) -> float:
    return (after_one(x, x, scale=2.0) + after_one(x, x ** 2, np.cos(x)) + after_one(a=x, b=x)
            + after_defaults(x) + after_defaults(x, x) + after_defaults(x, x, x, scale=0.5)
            + after_defaults(x, b=x, c=x) + only_args(x, x) + only_kwargs(x, c=x, scale=2.0)
            + through_two(x, x, c=x) + positional_only(x, x))


def test_args_and_kwargs_passed_on_after_named_parameters() -> None:
    # (refused: "'*' in a call needs a tuple or list whose length s2sad can see here")
    check_all(calls_forwarders_after_named, [X.copy()])


def uses_args_otherwise(a: Any, *args: Any) -> Any:
    return combined(a, *args) * len(args)


def calls_one_using_args(x: np.ndarray) -> float:
    return uses_args_otherwise(x, x)


def test_args_used_other_than_passed_on_are_still_refused_at_the_star() -> None:
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(calls_one_using_args)(X.copy())
    assert info.value.location.line == uses_args_otherwise.__code__.co_firstlineno + 1
    assert "'*' in a call needs a tuple or list whose length s2sad can see here" in str(info.value)


# --- iter and next: the advice says what to write ------------------------------------------------

def steps_an_iterator(x: np.ndarray) -> float:
    it = iter([x, 2 * x])
    return np.sum(next(it))


def steps_a_generator(x: np.ndarray) -> float:
    g = (v * 2 for v in [x, x])
    return np.sum(next(g))


def test_iter_and_next_are_refused_with_advice_to_index_or_loop() -> None:
    # (the advice was "register one with s2sad.defvjp", which cannot help)
    raises_at(steps_an_iterator, [X.copy()], 2, "index the list or tuple instead (xs[0], xs[i]), loop over it")
    raises_at(steps_a_generator, [X.copy()], 3, "s2sad does not follow an iterator through next(...)")
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(steps_an_iterator)(X.copy())
    assert "defvjp" not in str(info.value)


# --- lambdas made in a loop, a default capturing the loop's counter ------------------------------

def powers_appended(x: np.ndarray) -> float:
    fs = []
    for k in range(3):
        fs.append(lambda z, k=k: z ** k)
    return np.sum(sum(f(x) for f in fs))


def harmonics_called_in_a_loop(x: np.ndarray) -> float:
    fs = []
    for k in range(1, 4):
        fs.append(lambda z, k=k: np.sin(k * z) / k)
    s = 0.0
    for f in fs:
        s = s + np.sum(f(x))
    return s


def two_counters(x: np.ndarray) -> float:
    fs = []
    for i in range(2):
        for j in range(2):
            fs.append(lambda z, a=i, b=j + 1: z ** b * (a + 1))
    return np.sum(sum([f(x) for f in fs]))


def mixed_with_a_ufunc(x: np.ndarray) -> float:
    fs = [np.tanh]
    for k in range(2):
        fs.append(lambda z, k=k: np.exp(z * k))
    return np.sum(sum(f(x) for f in fs)) + np.sum(fs[1](x))


def functions_in_a_comprehension(x: np.ndarray) -> float:
    fs = [lambda z: z ** 2, np.sin, lambda z, k=2: np.cos(k * z)]
    return np.sum(sum(f(x) for f in fs))


LOOP_LAMBDAS = [powers_appended, harmonics_called_in_a_loop, two_counters, mixed_with_a_ufunc,
                functions_in_a_comprehension]


@pytest.mark.parametrize("f", LOOP_LAMBDAS, ids=lambda f: f.__name__)
def test_lambdas_made_in_a_loop_then_called(f: Callable[..., Any]) -> None:
    # (refused: "a lambda is differentiated bound to a name", and a comprehension's item called:
    # "'f' is a local variable (or an unknown name)")
    check_all(f, [X.copy()])


def default_reads_a_value(x: np.ndarray) -> float:
    fs = []
    for c in x:
        fs.append(lambda z, c=c: z * c)
    return np.sum(sum(f(x) for f in fs))


def counter_rebound(x: np.ndarray) -> float:
    fs = []
    for k in range(3):
        fs.append(lambda z, k=k: z ** k)
        k = x[0]
    return np.sum(sum(f(x) for f in fs))


def body_reads_a_variable(x: np.ndarray, w: np.ndarray) -> float:
    fs = []
    for k in range(3):
        fs.append(lambda z, k=k: z ** k * w)
    return np.sum(sum(f(x) for f in fs))


def test_a_lambda_made_as_a_value_reading_what_may_carry_a_gradient_is_refused() -> None:
    raises_at(default_reads_a_value, [X.copy()], 4, "a default of this lambda reads c")
    raises_at(counter_rebound, [X.copy()], 4, "a default of this lambda reads k")
    raises_at(body_reads_a_variable, [X.copy(), X.copy()], 4, "a lambda is differentiated bound to a name")
    raises_at(body_reads_a_variable, [X.copy(), X.copy()], 4, "a lambda is differentiated bound to a name", wrt=1)


# --- try / except: which branch runs, decided by a probe, replayed like an if --------------------

def cholesky_with_jitter(x: np.ndarray, shift: float = 0.0) -> float:
    K = np.outer(x, x) + np.diag(x ** 2) * shift
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        L = np.linalg.cholesky(K + np.eye(x.shape[0]))
    return np.sum(L ** 2) + np.sum(np.log(np.diag(L) ** 2))


def returns_in_the_try(x: np.ndarray, d: float = 0.0) -> float:
    try:
        return x[0] * (1.0 / d)
    except ZeroDivisionError:
        return np.sum(np.sin(x))


def handlers_and_else(x: np.ndarray, d: float = 0.0) -> float:
    try:
        y = x[0] * (1.0 / d)
    except (ValueError, TypeError):
        y = np.sum(x ** 3)
    except ZeroDivisionError:
        y = np.sum(x ** 2)
    else:
        y = y * 2
    return y + np.sum(x)


def tried_in_a_loop(x: np.ndarray) -> float:
    s = 0.0
    for i in range(3):
        try:
            v = x[i] * (1.0 / (i - 1))
        except ZeroDivisionError:
            v = x[i] ** 2
        s = s + v
    return s


TRIES = [(cholesky_with_jitter, [X.copy()]), (cholesky_with_jitter, [X.copy(), 1.0]),
         (returns_in_the_try, [X.copy()]), (returns_in_the_try, [X.copy(), 2.0]),
         (handlers_and_else, [X.copy()]), (handlers_and_else, [X.copy(), 2.0]),
         (tried_in_a_loop, [X.copy()])]


@pytest.mark.parametrize("f, args", TRIES, ids=lambda v: getattr(v, "__name__", ""))
def test_try_except_runs_the_branch_python_runs(f: Callable[..., Any], args: list[Any]) -> None:
    # (refused: "'try' statements are not supported")
    check_all(f, args)


def log_of(z: Any) -> Any:
    return np.log(z)


def try_of_two_statements(x: np.ndarray) -> float:
    try:
        y = np.sum(x)
        y = y * 2
    except ValueError:
        y = 0.0
    return y


def try_naming_the_exception(x: np.ndarray) -> float:
    try:
        y = np.sum(x)
    except ValueError as e:  # noqa: F841
        y = 0.0
    return y


def try_calling_a_python_function(x: np.ndarray) -> float:
    try:
        y = log_of(x)
    except ValueError:
        y = x
    return np.sum(y)


def try_with_finally(x: np.ndarray) -> float:
    n = 1.0
    try:
        y = np.sum(x ** 2)
    except ValueError:
        y = 0.0
    finally:
        n = n + 1.0
    return y * n


def returns_then_finally(x: np.ndarray, d: float = 0.0) -> float:
    try:
        return x[0] * (1.0 / d)
    except ZeroDivisionError:
        return np.sum(x)
    finally:
        pass


def test_a_finally_runs_after_the_try() -> None:
    check_all(try_with_finally, [X.copy()])


def test_a_try_the_probe_cannot_replay_is_refused_with_what_to_write() -> None:
    raises_at(try_of_two_statements, [X.copy()], 2, "here its body is not one such statement")
    raises_at(try_naming_the_exception, [X.copy()], 4, "here the handler binds the exception")
    raises_at(try_calling_a_python_function, [X.copy()], 3, "here it calls 'log_of'")
    raises_at(returns_then_finally, [X.copy()], 6, "here its 'finally' runs where a part returns")
    raises_at(try_of_two_statements, [X.copy()], 2, "decide the fallback with an if on a condition")


def returns_or_falls_through(x: np.ndarray, d: float = 0.0) -> float:
    try:
        return x[0] * (1.0 / d)
    except ZeroDivisionError:
        y = np.sum(x ** 2)
    return y * 3


def skips_in_the_handler(x: np.ndarray) -> float:
    s = 0.0
    for i in range(3):
        try:
            v = x[i] * (1.0 / (i - 1))
        except ZeroDivisionError:
            continue
        s = s + v ** 2
    return s


def breaks_in_the_handler(x: np.ndarray) -> float:
    s = 0.0
    for i in range(3):
        try:
            v = x[i] * (1.0 / (i - 1))
        except ZeroDivisionError:
            break
        s = s + v ** 2
    return s + np.sum(x)


@pytest.mark.parametrize("f, args", [
    (returns_or_falls_through, [X.copy()]), (returns_or_falls_through, [X.copy(), 2.0]),
    (skips_in_the_handler, [X.copy()]), (breaks_in_the_handler, [X.copy()])], ids=lambda v: getattr(v, "__name__", ""))
def test_a_handler_that_returns_continues_or_breaks(f: Callable[..., Any], args: list[Any]) -> None:
    check_all(f, args)
