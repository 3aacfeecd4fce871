"""Each gradient takes the type, shape and dtype of its argument as it was passed, also when
the function rebinds the parameter (a loop carries it to an array, or to complex values)
and the generated code reads it after (passes/adjoint.py, ``entry_values``: the gradient reads the
value the parameter had on entry, in a callee's backward closure too)."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import stop_gradient


def cut(x, s):
    k = 0
    while k < 2:
        s = s * np.ones(3)  # a float carried to an array, whose gradient is cut below
        k += 1
    return np.sum(stop_gradient(s) * x) + np.sum(x ** 2)


def unused(x, s):
    for _ in range(2):
        s = s * np.ones(3) + x
    return np.sum(x * 2.0)


def complex_on_the_way(x, s):
    k = 0
    while k < 1:
        s = s * np.where(x > 0.0, x, x ** 1.5)  # (-0.5) ** 1.5 is complex in Python
        k += 1
    for _ in range(2):
        s = np.tanh(stop_gradient(s) - x)
    return np.sum(np.real(s)) + x * x


@pytest.mark.parametrize("specialize", [False, True])
@pytest.mark.parametrize("fn, args, want", [
    (cut, (np.arange(3.0), 0.5), (np.array([0.5, 2.5, 4.5]), 0.0)),
    (unused, (np.arange(3.0), 0.5), (np.full(3, 2.0), 0.0)),
])
def test_a_zero_gradient_is_of_the_argument_as_passed(fn, args, want, specialize):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        g = s2sad.grad(fn, (0, 1), specialize=specialize)
        for _ in range(2):
            dx, ds = g(*args)
            np.testing.assert_allclose(dx, want[0])
            assert type(ds) is float and ds == 0.0


@pytest.mark.parametrize("specialize", [False, True])
def test_a_parameter_carried_to_complex_values_keeps_a_real_zero_gradient(specialize):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = s2sad.grad(complex_on_the_way, (0, 1), specialize=specialize)
        for _ in range(2):
            dx, ds = g(-0.5, 0.3)
            assert type(ds) is float and ds == 0.0
            assert isinstance(dx, float)


def test_the_copy_is_the_same_in_every_stage_shown(tmp_path):
    # (the stages render the adjoint more than once: the copy's name must not move)
    module = tmp_path / "rebinding.py"
    module.write_text("import numpy as np\nfrom s2sad import stop_gradient\n\n\n"
                      "def cut(x, s):\n    k = 0\n    while k < 2:\n        s = s * np.ones(3)\n        k += 1\n"
                      "    return np.sum(stop_gradient(s) * x) + np.sum(x ** 2)\n")
    out = subprocess.run([sys.executable, "-m", "s2sad", f"{module}:cut", "--wrt", "x", "s", "--stages"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("s_in = s\n") >= 2 and "s_in_2" not in out.stdout
    assert out.stdout.rstrip().endswith("return distinct(grad_like(dx, x), zeros_grad(s_in))")
