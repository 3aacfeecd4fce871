"""A refusal that generated code's helpers raise while they run (a gradient through a case
s2sad does not differentiate, found only from the values) is shown at the user's line."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import s2sad


def rotation_energy(a):
    w = np.linalg.eigvals(a)
    return np.real(np.sum(w ** 2))


def wide_qr(a):
    q, r = np.linalg.qr(a)
    return np.sum(r ** 2)


def counted(x, n):
    y = x * n
    return np.sum(y.astype(n.dtype))


def calls_wide_qr(a):
    scaled = 2.0 * a
    return wide_qr(scaled) + 1.0


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


CASES = {
    "eigvals": (rotation_energy, (np.array([[0.0, -1.0], [1.0, 0.0]]),), rotation_energy, "eigvals(a)",
                "complex eigenvalues"),
    "qr": (wide_qr, (np.arange(6.0).reshape(2, 3) + 1.0,), wide_qr, "np.linalg.qr(a)", "np.linalg.qr"),
    "astype": (counted, (np.ones(3), np.arange(3)), counted, "astype", "conversion to int"),
    "callee": (calls_wide_qr, (np.arange(6.0).reshape(2, 3) + 1.0,), wide_qr, "np.linalg.qr(a)", "np.linalg.qr"),
}


@pytest.mark.parametrize("specialize", [True, False], ids=["specialised", "generic"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_refusal_found_at_run_time_names_the_users_line(name, specialize):
    fn, args, where, text, message = CASES[name]
    with pytest.raises(s2sad.S2SADError, match=message) as info:
        s2sad.grad(fn, 0, specialize=specialize)(*args)
    loc = info.value.location
    assert loc is not None
    assert (loc.filename, loc.line) == (__file__, _line_of(where, text))
    assert str(info.value).startswith(f"{__file__}:{loc.line}:")



def test_a_check_in_generated_code_is_placed_at_the_users_line():
    # differentiated again, generated code bakes in checks located in its own file: they are
    # shown at the user's line that file's line comes from
    from s2sad.errors import GENERATED_LINES
    from s2sad.runtime.checks import place

    g = s2sad.grad(wide_qr)
    g(np.arange(6.0).reshape(3, 2) ** 1.5)
    filename = next(name for name in GENERATED_LINES if "wide_qr" in name)
    line, origin = next(iter(GENERATED_LINES[filename].items()))
    assert place(f"{filename}:{line}:9") == origin
    assert origin.filename == __file__


def nuclear_norm(a):  # (over the axes named: its second derivative is refused)
    return np.linalg.norm(a, "nuc", axis=(0, 1))


def test_a_refusal_in_code_made_from_generated_code_is_at_the_users_line():
    # hvp runs the jvp of the gradient's code: the refusal raised there is shown at the user's
    # line, through both generated files
    with pytest.raises(s2sad.S2SADError, match="once, not twice") as info:
        s2sad.hvp(nuclear_norm)(np.eye(3) + 0.1, np.ones((3, 3)))
    lines, first = inspect.getsourcelines(nuclear_norm)
    assert (info.value.location.filename, info.value.location.line) == (__file__, first + 1)
