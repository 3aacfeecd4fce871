"""Every way of passing a function: lambdas, bound methods, functools.partial, objects
with __call__, JAX's argnums= and has_aux=, and jvp's argument order."""
from __future__ import annotations

import functools
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2sad
from s2sad import grad, hessian, hvp, jvp, jvp_source, value_and_grad, vjp

from gradcheck import assert_grad_matches, numerical_grad

rng = np.random.default_rng(18)


def directional(f, args, argnum, v, eps=1e-6):
    """Central finite difference of ``f`` along ``v`` in argument ``argnum``."""
    def at(t):
        moved = list(args)
        moved[argnum] = args[argnum] + t * v
        return f(*moved)
    return (at(eps) - at(-eps)) / (2 * eps)


# ---- lambdas -------------------------------------------------------------------------

square_sum = lambda x: np.sum(x ** 2)  # noqa: E731
pair = (lambda x: np.sum(np.sin(x)), lambda x: np.sum(np.cos(x) * 3.0))  # one line, two lambdas
curried = lambda a: lambda x: np.sum(a * x ** 3)  # noqa: E731
accented = ("héllo wörld", lambda x: np.sum(np.exp(x)))[1]  # columns count characters, not bytes
spread = lambda w, k=2.0: (  # noqa: E731
    np.sum(w ** k)  # a comment inside the lambda
    + np.prod(w))
scales = [lambda x, k=k: np.sum(np.tanh(k * x)) for k in range(1, 3)]
act = lambda z: np.tanh(z)  # noqa: E731


def uses_lambda(w, x):
    return np.sum(act(x @ w) ** 2)


@pytest.mark.parametrize("f", [square_sum, pair[0], pair[1], curried(1.7), accented, spread,
                               scales[0], scales[1]],
                         ids=["module", "first_of_line", "second_of_line", "nested", "accented",
                              "multiline", "comprehension_1", "comprehension_2"])
def test_lambda_matches_finite_differences(f):
    assert_grad_matches(f, (rng.normal(size=4),), 0)


def test_inline_lambda():
    x = rng.normal(size=3)
    np.testing.assert_allclose(grad(lambda x: np.sum(x ** 2))(x), 2 * x)
    g = grad(lambda u, v: np.sum(u * np.sin(v)), wrt=(0, 1))(x, x + 1)
    np.testing.assert_allclose(g[0], np.sin(x + 1))
    np.testing.assert_allclose(g[1], x * np.cos(x + 1))


def test_lambda_bound_to_a_name_names_the_generated_function():
    assert "def grad_square_sum(x):" in s2sad.adjoint_source(square_sum)
    assert "def grad_lambda(x):" in s2sad.adjoint_source(pair[1])


def test_lambda_called_by_the_differentiated_function():
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    assert_grad_matches(uses_lambda, (w, x), (0, 1))
    v = rng.normal(size=3)
    value, slope = jvp(uses_lambda)(w, x, v)
    np.testing.assert_allclose(slope, directional(uses_lambda, (w, x), 0, v), rtol=1e-6)


def test_lambda_higher_order_and_forward_mode():
    cube = lambda t: t ** 3  # noqa: E731
    assert grad(grad(cube))(0.7) == pytest.approx(6 * 0.7)
    x, v = rng.normal(size=4), rng.normal(size=4)
    np.testing.assert_allclose(jvp(square_sum)(x, v)[1], 2 * x @ v)
    np.testing.assert_allclose(hvp(square_sum)(x, v), 2 * v)
    np.testing.assert_allclose(hessian(accented)(x), np.diag(np.exp(x)))


def test_error_in_a_lambda_points_into_it():
    bad = (0, lambda x: np.sum(np.frompyfunc(abs, 1, 1)(x)))[1]
    with pytest.raises(s2sad.NoGradientRuleError) as info:
        grad(bad)
    loc = info.value.location
    assert loc.filename == __file__
    assert loc.line == bad.__code__.co_firstlineno
    assert loc.source_line[loc.column - 1:].startswith("np.frompyfunc(abs, 1, 1)(x)")


def _run(code: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=str(__import__("pathlib").Path(__file__).parent))


def test_lambdas_on_one_line_without_column_information(tmp_path):
    # without column information (python -X no_debug_ranges) two lambdas of the same
    # parameters on one line cannot be told apart: a located refusal, with what to write
    module = tmp_path / "twins.py"
    module.write_text("import numpy as np\n"
                      "a, b = lambda x: np.sum(x * 2.0), lambda x: np.sum(x * 3.0)\n"
                      "c, d = lambda x: np.sum(x * 2.0), lambda y: np.sum(y * 3.0)\n")
    code = f"""
        import sys, numpy as np, s2sad
        sys.path.insert(0, {str(tmp_path)!r})
        import twins
        print(s2sad.grad(twins.c)(np.ones(2)), s2sad.grad(twins.d)(np.ones(2)))
        try:
            s2sad.grad(twins.b)
        except s2sad.SourceError as exc:
            print(exc)
    """
    out = _run(code, "-X", "no_debug_ranges")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "[2. 2.] [3. 3.]"  # told apart by their parameters
    assert lines[1].startswith(f"{module}:2:1: cannot tell which lambda on this line")
    assert "define the function with 'def', or put each lambda on a line of its own" in lines[1]
    with_columns = _run(code)  # with column information, each lambda is found
    assert with_columns.returncode == 0, with_columns.stderr
    assert "cannot tell" not in with_columns.stdout


# ---- bound methods and callable objects ----------------------------------------------------

class Model:
    def __init__(self, W):
        self.W = W
        self.scale = 0.5

    def predict(self, x):
        return np.tanh(x @ self.W)

    def loss(self, x, y):
        r = np.tanh(x @ self.W) - y
        return self.scale * np.sum(r ** 2)

    def penalty(self, W):
        return np.sum((W - self.W) ** 2)

    def __call__(self, W, x):
        return np.sum(np.tanh(x @ W) * self.scale)


def test_bound_method():
    model = Model(rng.normal(size=(3, 2)))
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    assert_grad_matches(model.loss, (x, y), (0, 1))
    assert_grad_matches(model.penalty, (rng.normal(size=(3, 2)),), 0)
    np.testing.assert_allclose(grad(model.loss, wrt="y")(x, y), numerical_grad(model.loss, (x, y), 1),
                               rtol=1e-6)
    v = rng.normal(size=(5, 3))
    np.testing.assert_allclose(jvp(model.loss)(x, y, v)[1], directional(model.loss, (x, y), 0, v),
                               rtol=1e-6)
    np.testing.assert_allclose(hvp(model.loss)(x, y, v), (
        grad(model.loss)(x + 1e-6 * v, y) - grad(model.loss)(x - 1e-6 * v, y)) / 2e-6, rtol=1e-5,
        atol=1e-8)


def test_bound_method_instance_is_a_constant():
    model = Model(rng.normal(size=(3, 2)))
    with pytest.raises(s2sad.WrtError, match="the instance of a bound method is a constant") as info:
        grad(model.loss, wrt="self")
    assert "pass the unbound function" in str(info.value)
    assert "defvjp" not in str(info.value)


def test_callable_object():
    model = Model(rng.normal(size=(3, 2)))
    W, x = rng.normal(size=(3, 2)), rng.normal(size=(4, 3))
    assert_grad_matches(model, (W, x), (0, 1))
    np.testing.assert_allclose(grad(model, argnums=1)(W, x), numerical_grad(model, (W, x), 1),
                               rtol=1e-6)


class Layers:
    def __init__(self, a):
        self.a = a

    def layer(self, x, W):
        return np.tanh(x @ W) * self.a

    def loss(self, W1, W2, x):
        h = self.layer(x, W1)
        return np.sum(self.layer(h, W2) ** 2)

    def total(self, h, power=2):
        return np.sum(h ** power)

    def returns_method(self, W1, x):
        return self.total(h=np.tanh(x @ W1))


class SineLayers(Layers):
    def layer(self, x, W):
        return np.sin(x @ W) * self.a


class StaticLayers(Layers):
    layer = staticmethod(lambda x, W: x @ W)


class Scaler:
    k = 2.0

    def __init__(self):
        self.k = 1.5

    def scaled(self, z):
        return np.sin(z) * self.k

    @classmethod
    def class_scaled(cls, z):
        return np.sin(z) * cls.k


scaler = Scaler()
scaled = scaler.scaled


def calls_global_method(x):
    return np.sum(scaler.scaled(x) ** 2) + np.sum(Scaler.class_scaled(x) * x)


def calls_method_by_name(x):
    return np.sum(scaled(x * 2.0))


def calls_method_of_argument(x, model):
    return model.total(x)


@pytest.mark.parametrize("cls", [Layers, SineLayers], ids=["Layers", "SineLayers"])
def test_method_called_on_self(cls):
    # the class of self is known when the code runs: a subclass's override is differentiated
    model = cls(0.7)
    W1, W2, x = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(5, 3))
    assert_grad_matches(model.loss, (W1, W2, x), (0, 1, 2))
    assert_grad_matches(model.returns_method, (W1, x), (0, 1))
    V = rng.normal(size=(3, 4))
    assert jvp(model.loss)(W1, W2, x, V)[1] == pytest.approx(
        directional(model.loss, (W1, W2, x), 0, V), rel=1e-6)
    g = grad(model.loss)
    np.testing.assert_allclose(hvp(model.loss)(W1, W2, x, V),
                               (g(W1 + 1e-6 * V, W2, x) - g(W1 - 1e-6 * V, W2, x)) / 2e-6,
                               rtol=1e-5, atol=1e-8)


def test_static_method_of_self_is_called():
    # (self.layer, a staticmethod holding a lambda, was refused: not a method defined with 'def')
    W1, W2, x = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(5, 3))
    assert_grad_matches(StaticLayers(1.0).loss, (W1, W2, x), (0, 1, 2))


def test_method_of_a_module_level_object():
    x = rng.normal(size=3)
    assert_grad_matches(calls_global_method, (x,), 0)
    assert_grad_matches(calls_method_by_name, (x,), 0)
    np.testing.assert_allclose(grad(calls_method_by_name)(x), 3.0 * np.cos(2.0 * x))
    v = rng.normal(size=3)
    assert jvp(calls_global_method)(x, v)[1] == pytest.approx(
        directional(calls_global_method, (x,), 0, v), rel=1e-6)


def test_method_of_an_argument():
    # called on the object the argument holds: the code generated for its class's method
    x = np.array([0.7, -1.2, 0.4])
    np.testing.assert_allclose(grad(calls_method_of_argument)(x, Layers(1.0)), 2 * x)


# ---- functools.partial ---------------------------------------------------------------------

def weighted(a, b, c=1.0):
    return np.sum(np.sin(a) * b * c)


def test_partial():
    a, b = rng.normal(size=3), rng.normal(size=3)
    first_bound = functools.partial(weighted, a)
    assert_grad_matches(first_bound, (b,), 0)
    keyword_bound = functools.partial(weighted, c=2.5)
    assert_grad_matches(keyword_bound, (a, b), (0, 1))
    np.testing.assert_allclose(grad(keyword_bound, wrt="b")(a, b), 2.5 * np.sin(a))
    nested = functools.partial(functools.partial(weighted, c=0.5), a)
    assert_grad_matches(nested, (b,), 0)
    model = Model(rng.normal(size=(3, 2)))
    of_method = functools.partial(model.loss, rng.normal(size=(4, 3)))
    assert_grad_matches(of_method, (rng.normal(size=(4, 2)),), 0)
    of_lambda = functools.partial(lambda s, x: np.sum(s * x ** 2), 3.0)
    assert_grad_matches(of_lambda, (a,), 0)


def test_partial_bound_argument_is_a_constant():
    with pytest.raises(s2sad.WrtError, match="functools.partial binds are constants"):
        grad(functools.partial(weighted, rng.normal(size=3)), wrt="a")


@pytest.mark.parametrize("f, advice", [
    (functools.partial(np.sum, axis=0), "knows its gradient where Python code calls it"),
    (np.ones(3).sum, "knows its gradient where Python code calls it"),
    (np.frompyfunc(abs, 1, 1), "register a gradient rule for it with s2sad.defvjp"),
])
def test_callable_without_source_advice_fits(f, advice):
    with pytest.raises(s2sad.SourceError) as info:
        grad(f)
    assert advice in str(info.value)
    assert "no Python source" in str(info.value)


def test_not_a_function():
    with pytest.raises(s2sad.SourceError, match="is not a function"):
        grad(3.0)


def test_library_code_given_to_grad_is_never_read():
    """grad(scipy.special.logsumexp) read SciPy's source and refused a 'with' statement there."""
    special = pytest.importorskip("scipy.special")
    with pytest.raises(s2sad.SourceError) as info:
        grad(special.logsumexp)(np.zeros(2))
    assert "scipy.special._logsumexp.logsumexp is library code, whose source s2sad never reads" in str(info.value)
    assert "knows its gradient where Python code calls it" in str(info.value)
    np.testing.assert_allclose(grad(lambda x: special.logsumexp(x))(np.zeros(2)), [0.5, 0.5])


def test_a_function_s2sad_returned_is_not_read_as_source():
    """grad(jacobian(f)) parsed s2sad/api.py and refused a '*' there, in s2sad's own file."""
    with pytest.raises(s2sad.SourceError, match="is s2sad's own code") as info:
        s2sad.jacobian(s2sad.jacobian(lambda x: np.sin(x) * x))(np.ones(2))
    assert "s2sad.hessian(f)" in str(info.value)


# ---- argnums= and has_aux= -----------------------------------------------------------------

def two(x, y):
    return np.sum(np.sin(x) * y ** 2)


def test_argnums():
    x, y = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(grad(two, argnums=1)(x, y), 2 * np.sin(x) * y)
    gx, gy = grad(two, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.cos(x) * y ** 2)
    np.testing.assert_allclose(value_and_grad(two, argnums=1)(x, y)[1], 2 * np.sin(x) * y)
    np.testing.assert_allclose(jvp(two, argnums=1)(x, y, x)[1], np.sum(2 * np.sin(x) * y * x))


@pytest.mark.parametrize("kwargs, words", [
    ({"wrt": 0, "argnums": 1}, "not both"),
    ({"argnums": "x"}, "use wrt= to name parameters"),
])
def test_argnums_errors(kwargs, words):
    with pytest.raises(s2sad.WrtError, match=words):
        grad(two, **kwargs)


def with_aux(w, x):
    p = np.tanh(x @ w)
    return np.sum(p ** 2), {"p": p, "count": 3}


def test_has_aux():
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    expected = numerical_grad(lambda w: with_aux(w, x)[0], (w,), 0)
    g, aux = grad(with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    np.testing.assert_allclose(aux["p"], np.tanh(x @ w))
    assert aux["count"] == 3
    (value, aux), g = value_and_grad(with_aux, has_aux=True)(w, x)
    assert value == pytest.approx(with_aux(w, x)[0])
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    gw, gx = grad(with_aux, wrt=(0, 1), has_aux=True)(w, x)[0]
    np.testing.assert_allclose(gx, numerical_grad(lambda x: with_aux(w, x)[0], (x,), 0), rtol=1e-6)
    value, pullback, aux = vjp(with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(pullback(2.0), 2 * expected, rtol=1e-6)
    np.testing.assert_allclose(pullback(1.0), expected, rtol=1e-6)  # a second call recomputes


def test_has_aux_needs_a_pair():
    with pytest.raises(s2sad.HasAuxError, match="not a pair"):
        grad(two, has_aux=True)(np.ones(2), np.ones(2))
    with pytest.raises(s2sad.NonScalarOutputError, match="pass has_aux=True"):
        grad(with_aux)(np.ones(3), np.ones((2, 3)))


# ---- jvp: the tangent comes last --------------------------------------------------------------

def with_default(x, y=2.0):
    return np.sum(np.sin(x) * y)


def starred(x, *rest):
    return np.sum(x * rest[0])


def calls_with_keywords(x):
    return with_default(x, y=3.0) + with_default(x * 2.0)


@pytest.mark.parametrize("f, header", [
    (two, "def jvp_two(x, y, tangent):"),
    (with_default, "def jvp_with_default(x, y=2.0, *, tangent):"),
    (starred, "def jvp_starred(x, *rest, tangent):"),
])
def test_jvp_source_shows_how_it_is_called(f, header):
    assert header in jvp_source(f)


def test_jvp_tangent_positional_or_keyword():
    x, y, v = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    expected = directional(two, (x, y), 0, v)
    for value, slope in (jvp(two)(x, y, v), jvp(two)(x, y, tangent=v), jvp(two)(x, tangent=v, y=y)):
        assert value == pytest.approx(two(x, y))
        assert slope == pytest.approx(expected, rel=1e-6)
    assert jvp(with_default)(x, v)[1] == pytest.approx(directional(with_default, (x,), 0, v), rel=1e-6)
    assert jvp(with_default)(x, 3.0, tangent=v)[1] == pytest.approx(
        directional(with_default, (x, 3.0), 0, v), rel=1e-6)
    assert jvp(starred)(x, y, v)[1] == pytest.approx(y @ v)
    slope = jvp(calls_with_keywords)(x, v)[1]
    assert slope == pytest.approx(directional(calls_with_keywords, (x,), 0, v), rel=1e-6)
    np.testing.assert_allclose(hvp(two)(x, y, v), -np.sin(x) * y ** 2 * v, rtol=1e-12)


def test_readme_section_runs_as_written(tmp_path):
    readme = (__import__("pathlib").Path(__file__).resolve().parent.parent / "README.md").read_text(
        encoding="utf-8")
    section = readme[readme.index("### Ways to pass a function"):]
    start = section.index("```python\n") + len("```python\n")
    script = tmp_path / "ways.py"
    script.write_text(section[start:section.index("```", start)], encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_has_aux_checks_wrt_like_grad():
    with pytest.raises(s2sad.NonDifferentiableInputError, match="'w'"):
        grad(with_aux, has_aux=True)(np.arange(3), np.ones((2, 3)))


def test_explain_a_method_a_partial_and_a_lambda():
    model = Model(rng.normal(size=(3, 2)))
    text = s2sad.explain(model.loss, "y")
    assert "Model.loss, gradient with respect to y" in text
    assert "active" in text
    assert "weighted, gradient with respect to b" in s2sad.explain(
        functools.partial(weighted, rng.normal(size=3)), "b")
    assert "square_sum = lambda x: np.sum(x ** 2)" in s2sad.explain(square_sum)


class Activation:
    def __init__(self, k):
        self.k = k

    def __call__(self, z):
        return np.tanh(self.k * z)


activation = Activation(1.5)
bound_weighted = functools.partial(weighted, c=2.0)


def calls_callable_object(x):
    return np.sum(activation(x) ** 2)


def calls_partial(x):
    return bound_weighted(x, x)


def test_callable_object_called_inside():
    x, v = rng.normal(size=3), rng.normal(size=3)
    assert_grad_matches(calls_callable_object, (x,), 0)
    assert jvp(calls_callable_object)(x, v)[1] == pytest.approx(
        directional(calls_callable_object, (x,), 0, v), rel=1e-6)


def test_partial_called_inside_is_refused_with_advice():
    with pytest.raises(s2sad.NoGradientRuleError, match="is a functools.partial") as info:
        grad(calls_partial)(rng.normal(size=3))
    assert "call the function it wraps" in str(info.value) and "defvjp" not in str(info.value)
    assert info.value.location.line == calls_partial.__code__.co_firstlineno + 1


def makes_a_partial(x):
    summed = functools.partial(np.sum, axis=0)
    return np.sum(summed(x ** 2))


def test_a_partial_made_inside_is_followed():
    """(Refused before, with advice; tests/test_partials.py checks the forms in full.)"""
    x = rng.normal(size=(2, 3))
    np.testing.assert_allclose(grad(makes_a_partial)(x), 2 * x, rtol=1e-12)


def test_check_grad_takes_any_callable():
    s2sad.check_grad(functools.partial(weighted, rng.normal(size=3)), rng.normal(size=3))
    s2sad.check_grad(Model(rng.normal(size=(3, 2))).loss, rng.normal(size=(5, 3)), rng.normal(size=(5, 2)),
                     wrt=(0, 1))
    s2sad.check_grad(lambda x: np.sum(np.cos(x)), rng.normal(size=3))


def test_jacobian_and_hessian_take_argnums():
    x, y = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(s2sad.jacobian(lambda x, y: np.sin(x) * y, argnums=1)(x, y), np.diag(np.sin(x)))
    np.testing.assert_allclose(hessian(two, argnums=1)(x, y), np.diag(2 * np.sin(x)))


class Scaled:
    def __init__(self, n):
        self.scale = np.linspace(0.5, 1.5, n)

    def __call__(self, h):
        return np.tanh(h * self.scale)

    def apply(self, h):
        return np.tanh(h * self.scale)

    def energy(self, h):
        return np.sum(self(h) ** 2)  # (refused until self(...) was read as self.__call__(...))

    def energy_of_apply(self, h):
        return np.sum(self.apply(h) ** 2)


SCALED = Scaled(3)


def energies(x):
    return SCALED.energy(x) + SCALED.energy_of_apply(x) + np.sum(SCALED(x * 2.0))


def test_self_called_in_a_method_and_methods_of_self_at_second_order():
    """hvp of a function calling two of an object's methods refused 'self.apply' in the code
    generated for the method: there, self comes after the incoming gradient."""
    x, v = rng.normal(size=3), rng.normal(size=3)
    assert_grad_matches(SCALED.energy, (x,), 0)
    assert_grad_matches(energies, (x,), 0)
    expected = (grad(energies)(x + 1e-6 * v) - grad(energies)(x - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose(hvp(energies)(x, v), expected, rtol=1e-5, atol=1e-7)
    assert "call_self, call_self_backward = forward___call__(self, h)" in s2sad.adjoint_source(SCALED.energy)


# ---- second order through methods of objects held in lists -----------------------------------

class TanhLayer:
    def __init__(self, W):
        self.W = W

    def forward(self, h):
        return np.tanh(self.W @ h)


stack_of_layers = [TanhLayer(np.random.default_rng(k).normal(size=(3, 3)) * 0.5) for k in range(2)]


def through_layers(x):
    h = x
    for layer in stack_of_layers:
        h = layer.forward(h)
    return np.sum(h ** 2)


def test_second_order_through_methods_of_layers_in_a_list():
    # the gradient code keeps each layer on its tape beside the activation: differentiated
    # again, the layer (an object, a constant) has a zero tangent and no gradient of its own
    x, v = rng.normal(size=3), rng.normal(size=3)
    g = grad(through_layers)
    expected = directional(g, (x,), 0, v)
    np.testing.assert_allclose(hvp(through_layers)(x, v), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hessian(through_layers)(x) @ v, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad(lambda y: g(y) @ v)(x), expected, rtol=1e-6, atol=1e-8)


def test_a_tangent_for_an_object_is_still_refused():
    # a tangent passed for an object is not a zero the code may drop
    with pytest.raises(s2sad.S2SADError, match=r"'\.W' carries a gradient here, on a TanhLayer"):
        jvp(lambda layer, x: np.sum(layer.forward(x)), wrt=(0, 1))(
            stack_of_layers[0], np.ones(3), tangent=(stack_of_layers[1], np.ones(3)))
