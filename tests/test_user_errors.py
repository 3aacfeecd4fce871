"""Refusals and warnings point at the user's code, not at s2sad's insides (issue 18)."""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import ZeroGradientWarning, grad, stop_gradient


def cut(x, y):
    return np.sum(stop_gradient(x) * y)


def test_zero_gradient_warning_names_the_users_call():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        grad(cut)(np.ones(2), np.ones(2))
    [w] = [w for w in caught if issubclass(w.category, ZeroGradientWarning)]
    assert (w.filename, w.lineno) == (__file__, line)



def uses_try(x):
    try:
        y = x * 2
        y = y + 1  # (two statements: refused, tries.py)
    except ValueError:
        y = x
    return np.sum(y)


def test_a_refusal_shows_only_the_users_frames(monkeypatch):
    import traceback

    import s2sad
    from s2sad.tracebacks import PACKAGE_DIR

    monkeypatch.delenv("S2SAD_DEBUG", raising=False)
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        grad(uses_try)(np.ones(2))
    frames = traceback.extract_tb(info.value.__traceback__)
    internal = [f.filename for f in frames if f.filename.startswith(PACKAGE_DIR)]
    assert internal == [os.path.join(PACKAGE_DIR, "tracebacks.py")]  # the one frame that re-raises
    assert frames[0].filename == __file__
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert str(info.value).startswith(f"{__file__}:")


def test_s2sad_debug_keeps_every_frame(monkeypatch):
    import traceback

    import s2sad
    from s2sad.tracebacks import PACKAGE_DIR

    monkeypatch.setenv("S2SAD_DEBUG", "1")
    s2sad.clear_cache()
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        grad(uses_try)(np.ones(2))
    frames = traceback.extract_tb(info.value.__traceback__)
    assert sum(f.filename.startswith(PACKAGE_DIR) for f in frames) > 3


def _wiggle(x):
    return np.sin(x)


def uses_a_rule_without_a_tangent(x):
    y = x * 2.0
    return np.sum(_wiggle(y) * x)


def test_a_second_order_refusal_points_at_the_users_line():
    """hvp differentiates the generated gradient again: what it refuses there is shown at the
    user's line that code comes from, with the generated line as context."""
    import inspect

    import s2sad

    s2sad.defvjp(_wiggle, lambda g, ans, x: g * np.cos(x))
    with pytest.raises(s2sad.NoGradientRuleError) as info:
        s2sad.hvp(uses_a_rule_without_a_tangent)(np.ones(2), np.ones(2))
    line = inspect.getsourcelines(uses_a_rule_without_a_tangent)[1] + 2
    assert (info.value.location.filename, info.value.location.line) == (__file__, line)
    assert "in the code s2sad generated for this line" in str(info.value)
    assert "return np.sum(_wiggle(y) * x)" in str(info.value)


_GRAM_JVP = s2sad.jvp(lambda x: np.sum(np.tanh(x.T @ x)))


def through_a_jvp(t, x):
    return _GRAM_JVP(x, t)[1]


def test_a_function_s2sad_returned_is_refused_with_what_to_write():
    """It raised an InternalRuleError that called itself a bug in s2sad."""
    with pytest.raises(s2sad.NoGradientRuleError, match=r"a function that s2sad returned .* s2sad.hvp\(f\)") as info:
        s2sad.grad(through_a_jvp)(0.5, np.ones((3, 2)))
    assert info.value.location.line == through_a_jvp.__code__.co_firstlineno + 1


def test_a_jvp_called_without_its_tangent_is_an_s2sad_error():
    with pytest.raises(s2sad.WrtError, match="pass the arguments, then the tangent"):
        s2sad.jvp(lambda x: np.sum(x ** 2))()


def test_an_unknown_jacobian_mode_is_an_s2sad_error():
    with pytest.raises(s2sad.WrtError, match="mode must be 'auto', 'forward' or 'reverse'"):
        s2sad.jacobian(lambda x: x ** 2, mode="sideways")


def _int_argument(x, n):
    return np.sum(x ** 2) * n


@pytest.mark.parametrize("call", [
    lambda: s2sad.vjp(_int_argument, 1)(np.ones(3), 2),
    lambda: s2sad.grad(_int_argument, 1, jit=True)(np.ones(3), 2),
    lambda: s2sad.jacobian(_int_argument, 1)(np.ones(3), 2),
    lambda: s2sad.grad(_int_argument, 1)(np.ones(3), 2),
], ids=["vjp", "jit", "jacobian", "grad"])
def test_an_integer_argument_to_differentiate_is_refused_at_the_functions_definition(call):
    with pytest.raises(s2sad.NonDifferentiableInputError, match="it is int") as info:
        call()
    assert info.value.location is not None
    assert info.value.location.line == _int_argument.__code__.co_firstlineno
    assert info.value.location.filename == __file__


def _real_part_assigned(x):
    z = np.zeros(3, dtype=complex)
    z.real = x
    return np.sum(np.abs(z))


def test_assigning_a_real_part_says_what_to_write():
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=r"build a new array: z = v \+ 1j \* z\.imag") as info:
        grad(_real_part_assigned)(np.ones(3))
    assert info.value.location.line == _real_part_assigned.__code__.co_firstlineno + 2
    assert info.value.location.column == 5


class _Model:
    def __init__(self) -> None:
        self.c = 2.0

    def loss(self, x):
        return np.sum(self.c * x ** 2)


_MODEL = _Model()


def _gradient_of_a_method_inside(x):
    g = s2sad.grad(_MODEL.loss)(x)
    return np.sum(g ** 2)


def test_the_gradient_of_a_bound_method_inside_the_function_is_refused_where_it_stands():
    # was an InternalCompilerError (the gradient of a method is a functools.partial: no __name__)
    with pytest.raises(s2sad.NoGradientRuleError, match="functools.partial") as info:
        grad(_gradient_of_a_method_inside)(np.array([1.0, 2.0]))
    assert info.value.location.line == _gradient_of_a_method_inside.__code__.co_firstlineno + 1
    assert info.value.location.column == 9
