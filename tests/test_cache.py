"""Generated code is reused only while what it was generated from is unchanged: the
functions it compiled, the globals and closure cells it resolved, the defaults it copied."""
from __future__ import annotations

import importlib
import linecache
import os
import sys
import textwrap

import numpy as np
import pytest

import s2sad
from s2sad import grad, value_and_grad

from gradcheck import make_function

x3 = np.array([0.3, -0.5, 0.7])


def make_loss(act):
    def loss(x):
        return np.sum(act(x))
    return loss


def test_a_closure_cell_holding_another_function():
    np.testing.assert_allclose(grad(make_loss(np.tanh))(x3), 1 - np.tanh(x3) ** 2)
    np.testing.assert_allclose(grad(make_loss(np.sin))(x3), np.cos(x3))


def test_a_closure_cell_rebound_in_place():
    loss = make_loss(np.tanh)
    np.testing.assert_allclose(grad(loss)(x3), 1 - np.tanh(x3) ** 2)
    loss.__closure__[0].cell_contents = np.sin
    np.testing.assert_allclose(grad(loss)(x3), np.cos(x3))


def test_a_rebound_global():
    namespace = {"np": np, "ACT": np.tanh}
    loss = make_function("def loss(x):\n    return np.sum(ACT(x))\n", namespace)
    np.testing.assert_allclose(grad(loss)(x3), 1 - np.tanh(x3) ** 2)
    namespace["ACT"] = np.sin
    np.testing.assert_allclose(grad(loss)(x3), np.cos(x3))
    np.testing.assert_allclose(value_and_grad(loss)(x3)[1], np.cos(x3))


def test_a_kept_gradient_stays_the_gradient_of_the_function_it_was_made_from():
    """A gradient function kept across ``ACT = np.sin`` is tanh's gradient, forward and backward
    alike (as a jax.jit-compiled function keeps what it traced), never sin's forward pass with
    tanh's rule; ``grad(loss)`` again gives sin's."""
    namespace = {"np": np, "ACT": np.tanh, "helper": np.sum}
    loss = make_function("def loss(x):\n    return helper(ACT(x) * x)\n", namespace)
    kept, kept_both = grad(loss), value_and_grad(loss)
    namespace["ACT"], namespace["helper"] = np.sin, np.mean
    tanh_grad = np.tanh(x3) + x3 * (1 - np.tanh(x3) ** 2)
    np.testing.assert_allclose(kept(x3), tanh_grad)
    value, gradient = kept_both(x3)
    np.testing.assert_allclose(value, np.sum(np.tanh(x3) * x3))
    np.testing.assert_allclose(gradient, tanh_grad)
    np.testing.assert_allclose(grad(loss)(x3), (np.sin(x3) + x3 * np.cos(x3)) / 3)


def test_a_differentiable_follows_a_rebound_global():
    namespace = {"np": np, "ACT": np.tanh}
    d = s2sad.differentiate(make_function("def loss(x):\n    return np.sum(ACT(x))\n", namespace))
    np.testing.assert_allclose(d.grad(x3), 1 - np.tanh(x3) ** 2)
    namespace["ACT"] = np.sin
    np.testing.assert_allclose(d.grad(x3), np.cos(x3))
    np.testing.assert_allclose(d.value_and_grad(x3)[1], np.cos(x3))


def test_a_rebound_global_naming_a_reduction():
    namespace = {"np": np, "HELPER": np.sum}
    loss = make_function("def loss(x):\n    return HELPER(x ** 2)\n", namespace)
    np.testing.assert_allclose(grad(loss)(x3), 2 * x3)
    namespace["HELPER"] = np.mean
    np.testing.assert_allclose(grad(loss)(x3), 2 * x3 / 3)


def test_a_redefined_helper():
    namespace = {"np": np}
    make_function("def act(z):\n    return np.tanh(z)\n", namespace)
    loss = make_function("def loss(x):\n    return np.sum(act(x))\n", namespace)
    g = grad(loss)
    np.testing.assert_allclose(g(x3), 1 - np.tanh(x3) ** 2)
    make_function("def act(z):\n    return z ** 2\n", namespace)
    np.testing.assert_allclose(grad(loss)(x3), 2 * x3)
    assert grad(loss) is not g


def test_a_helper_of_a_helper_redefined():
    namespace = {"np": np}
    make_function("def inner(z):\n    return np.tanh(z)\n", namespace)
    make_function("def act(z):\n    return inner(z) * 2.0\n", namespace)
    loss = make_function("def loss(x):\n    return np.sum(act(x))\n", namespace)
    np.testing.assert_allclose(grad(loss)(x3), 2 * (1 - np.tanh(x3) ** 2))
    make_function("def inner(z):\n    return np.sin(z)\n", namespace)
    np.testing.assert_allclose(grad(loss)(x3), 2 * np.cos(x3))


def test_changed_defaults():
    def loss(x, scale=2.0, *, power=1):
        return np.sum((x * scale) ** power)
    np.testing.assert_allclose(grad(loss)(x3), [2.0, 2.0, 2.0])
    loss.__defaults__ = (5.0,)
    np.testing.assert_allclose(grad(loss)(x3), [5.0, 5.0, 5.0])
    loss.__kwdefaults__["power"] = 2
    np.testing.assert_allclose(grad(loss)(x3), 50.0 * x3)
    loss.__kwdefaults__ = {"power": 1}
    np.testing.assert_allclose(grad(loss)(x3), [5.0, 5.0, 5.0])


def test_a_function_redefined_in_a_notebook():
    """Cells run with exec, as IPython does: each cell its own file name, one namespace."""
    namespace = {"np": np}

    def run_cell(number: int, text: str) -> None:
        filename = f"<s2sad-test-cell-{id(namespace)}-{number}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        exec(compile(text, filename, "exec"), namespace)

    loss_cell = "def loss(x):\n    return np.sum(act(x))\n"
    run_cell(1, "def act(z):\n    return np.tanh(z)\n")
    run_cell(2, loss_cell)
    first = namespace["loss"]
    np.testing.assert_allclose(grad(first)(x3), 1 - np.tanh(x3) ** 2)
    run_cell(3, "def act(z):\n    return z ** 2\n")
    np.testing.assert_allclose(grad(namespace["loss"])(x3), 2 * x3)
    run_cell(2, loss_cell)  # re-run: a new function whose code object equals the old one
    assert namespace["loss"] is not first and namespace["loss"].__code__ == first.__code__
    np.testing.assert_allclose(grad(namespace["loss"])(x3), 2 * x3)
    run_cell(1, "def act(z):\n    return np.tanh(z)\n")
    np.testing.assert_allclose(grad(namespace["loss"])(x3), 1 - np.tanh(x3) ** 2)


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    names = []

    def write(name: str, text: str):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(text))
        stamp = os.stat(path).st_mtime + len(names) + 1  # a new mtime even within one second
        os.utime(path, (stamp, stamp))
        names.append(name)
        importlib.invalidate_caches()
        if name in sys.modules:
            return importlib.reload(sys.modules[name])
        return importlib.import_module(name)

    yield write
    for name in names:
        sys.modules.pop(name, None)


def test_a_reloaded_module(module_dir):
    model = module_dir("s2sad_cache_model", """
        import numpy as np

        def act(z):
            return np.tanh(z)

        def loss(x):
            return np.sum(act(x))
        """)
    np.testing.assert_allclose(grad(model.loss)(x3), 1 - np.tanh(x3) ** 2)
    model = module_dir("s2sad_cache_model", """
        import numpy as np

        def act(z):
            return z ** 2

        def loss(x):
            return np.sum(act(x))
        """)
    np.testing.assert_allclose(grad(model.loss)(x3), 2 * x3)


def test_a_reloaded_module_of_helpers(module_dir):
    helpers = module_dir("s2sad_cache_helpers", """
        import numpy as np

        def act(z):
            return np.tanh(z)
        """)
    model = module_dir("s2sad_cache_user", """
        import numpy as np
        import s2sad_cache_helpers as helpers

        def loss(x):
            return np.sum(helpers.act(x))
        """)
    np.testing.assert_allclose(grad(model.loss)(x3), 1 - np.tanh(x3) ** 2)
    module_dir("s2sad_cache_helpers", """
        import numpy as np

        def act(z):
            return np.sin(z) * 3.0
        """)
    assert helpers.act(1.0) == pytest.approx(3 * np.sin(1.0))
    np.testing.assert_allclose(grad(model.loss)(x3), 3 * np.cos(x3))


def test_unchanged_code_is_reused_and_data_is_read_live():
    namespace = {"np": np, "W": np.ones(3)}
    loss = make_function("def loss(x):\n    return np.sum(np.tanh(x) * W)\n", namespace)
    g = grad(loss)
    assert grad(loss) is g
    namespace["W"] = np.full(3, 2.0)  # data: read live by the generated code, not regenerated
    assert grad(loss) is g
    np.testing.assert_allclose(g(x3), 2 * (1 - np.tanh(x3) ** 2))
    # closures over data made in a loop share one generated code object
    first, second = (grad(make_scaled(k)) for k in (2.0, 3.0))
    assert first.__code__ is second.__code__
    np.testing.assert_allclose(second(x3), [3.0, 3.0, 3.0])


def make_scaled(k):
    def f(x):
        return np.sum(x * k)
    return f


def test_clear_cache():
    def loss(x):
        return np.sum(np.sin(x))
    g = grad(loss)
    s2sad.clear_cache()
    fresh = grad(loss)
    assert fresh is not g and fresh.__s2sad_source__ == g.__s2sad_source__
    assert "clear_cache" in s2sad.__all__


class _Net:
    def act(self, x):
        return np.tanh(x)


def test_an_attribute_of_an_instance_rebound():
    """``config.act`` and ``net.act`` (a method, then an instance attribute hiding it):
    grad(f) again gives the new function's gradient, never sin's forward pass with tanh's rule."""
    import types

    config, net = types.SimpleNamespace(act=np.tanh), _Net()
    namespace = {"np": np, "config": config, "net": net}
    by_config = make_function("def loss(x):\n    return np.sum(config.act(x))\n", namespace)
    by_method = make_function("def loss(x):\n    return np.sum(net.act(x))\n", namespace)
    for loss in (by_config, by_method):
        np.testing.assert_allclose(grad(loss)(x3), 1 - np.tanh(x3) ** 2)
    config.act, net.act = np.sin, np.sin
    for loss in (by_config, by_method):
        np.testing.assert_allclose(grad(loss)(x3), np.cos(x3))
        np.testing.assert_allclose(value_and_grad(loss)(x3)[1], np.cos(x3))
    del net.act
    np.testing.assert_allclose(grad(by_method)(x3), 1 - np.tanh(x3) ** 2)


def test_a_kept_gradient_keeps_the_function_an_attribute_named():
    """The gradient code calls the function whose rule it applies, bound when it was made:
    a kept gradient stays tanh's after ``config.act = np.sin`` (never sin's forward pass with
    tanh's rule), and grad(f) again gives sin's."""
    import types

    config = types.SimpleNamespace(act=np.tanh)
    loss = make_function("def loss(x):\n    return np.sum(config.act(x))\n", {"np": np, "config": config})
    kept = grad(loss)
    config.act = np.sin
    np.testing.assert_allclose(kept(x3), 1 - np.tanh(x3) ** 2)
    np.testing.assert_allclose(grad(loss)(x3), np.cos(x3))
