"""The public API is typed: its modules pass ``mypy --strict``, and so does user code that
calls it (``@differentiate`` keeps the decorated function's signature)."""
from __future__ import annotations

import pathlib
import textwrap

import pytest

api = pytest.importorskip("mypy.api")

ROOT = pathlib.Path(__file__).resolve().parent.parent
PUBLIC = ["s2sad/__init__.py", "s2sad/api.py", "s2sad/errors.py", "s2sad/custom.py", "s2sad/check.py"]

USER_CODE = textwrap.dedent('''
    import numpy as np
    import s2sad
    from s2sad import differentiate, grad, stop_gradient, value_and_grad

    def loss(w: np.ndarray, x: np.ndarray) -> float:
        return float(np.sum((x @ stop_gradient(w)) ** 2))

    dw: np.ndarray = grad(loss)(np.ones(3), np.ones((2, 3)))
    value, dw = value_and_grad(loss, wrt="w")(np.ones(3), np.ones((2, 3)))

    @differentiate(wrt="w")
    def f(w: np.ndarray, scale: float) -> float:
        return float(np.sum(w) * scale)

    @differentiate
    def h(w: np.ndarray) -> float:
        return float(np.sum(w))

    y: float = f(np.ones(2), 2.0) + h(np.ones(2))
    text: str = s2sad.adjoint_source(loss) + f.source
''')


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> str:
    """One mypy run over the public modules and two user programs (mypy reads NumPy's
    stubs once): ``good.py`` must pass, ``bad.py`` calls a differentiated function wrongly."""
    where = tmp_path_factory.mktemp("typing")
    (where / "good.py").write_text(USER_CODE)
    (where / "bad.py").write_text(USER_CODE + "\nf('not an array', 2.0)\n")
    out, err, _ = api.run(["--strict", "--follow-imports=silent", "--no-incremental",
                           "--cache-dir=/dev/null", *(str(ROOT / p) for p in PUBLIC),
                           str(where / "good.py"), str(where / "bad.py")])
    return out + err


def errors_in(report: str, name: str) -> list[str]:
    return [line for line in report.splitlines() if f"{name}:" in line and ": error:" in line]


def test_public_modules_pass_mypy_strict(report):
    assert [e for p in PUBLIC for e in errors_in(report, p)] == [], report


def test_user_code_calling_the_api_passes_mypy_strict(report):
    assert errors_in(report, "good.py") == [], report


def test_a_differentiated_function_keeps_its_signature(report):
    errors = errors_in(report, "bad.py")
    assert len(errors) == 1 and 'Argument 1 to "__call__" of "Differentiable"' in errors[0], report
