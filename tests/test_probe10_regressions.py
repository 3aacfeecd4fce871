"""Defects found by probing s2sad with realistic programs (probe 10): numerical code of the
kind other projects test (GP likelihoods, filters, ODE solvers, attention, losses), checked
against central finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sad
from tests.gradcheck import numerical_grad


def weight_decay_after_the_layers(params: dict, x: np.ndarray, y: np.ndarray) -> float:
    h = x
    for i in range(len(params["layers"])):
        W, b = params["layers"][i]
        h = np.tanh(h @ W + b)
    penalty = sum(np.sum(W ** 2) for W, _ in params["layers"])
    return np.mean((h[:, 0] - y) ** 2) + params["reg"] * penalty + np.sum(W)


def comprehension_reusing_a_variable(x: np.ndarray) -> float:
    v = x[0] * 3.0
    squares = sum([v ** 2 for v in x])
    return squares + v + sum(np.sum(v) for v in [x, x[::-1] * v])


def helper(x: np.ndarray) -> np.ndarray:
    return x * 2.0


def comprehension_reusing_a_global_name(x: np.ndarray) -> float:
    s = sum(np.sum(helper ** 2) for helper in [x, x[::-1]])
    return s + np.sum(helper(x))


RNG = np.random.default_rng(10)
LAYERS = {"layers": [(RNG.normal(size=(3, 4)), RNG.normal(size=4)), (RNG.normal(size=(4, 1)), np.zeros(1))],
          "reg": 0.01}
X, Y = RNG.normal(size=(5, 3)), RNG.normal(size=5)


def test_comprehension_variable_named_like_a_variable_of_the_function() -> None:
    # Python gives a comprehension its own scope; s2sad refused the comprehension variable 'W'
    # as "also a variable of the function"
    grads = s2sad.grad(weight_decay_after_the_layers, wrt=1)(LAYERS, X, Y)
    np.testing.assert_allclose(grads, numerical_grad(weight_decay_after_the_layers, [LAYERS, X, Y], 1),
                               rtol=1e-6, atol=1e-9)
    (dW0, db0), (dW1, db1) = s2sad.grad(weight_decay_after_the_layers)(LAYERS, X, Y)["layers"]

    def of_w1(W1: np.ndarray) -> float:
        layers = {"layers": [LAYERS["layers"][0], (W1, LAYERS["layers"][1][1])], "reg": 0.01}
        return weight_decay_after_the_layers(layers, X, Y)
    np.testing.assert_allclose(dW1, numerical_grad(of_w1, [LAYERS["layers"][1][0]], 0), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f", [comprehension_reusing_a_variable, comprehension_reusing_a_global_name])
def test_renamed_comprehension_keeps_what_its_calls_name(f) -> None:
    # the renamed comprehension's 'np.sum' was a new node the resolve pass did not know, so
    # np.sum(v) read as a method 'sum' of a value 'np' with axis=v (NoGradientRuleError)
    x = np.array([0.3, -0.7, 1.1, 0.5])
    np.testing.assert_allclose(s2sad.grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-6, atol=1e-9)
    v = np.array([1.0, -0.5, 0.25, 2.0])
    eps = 1e-5
    expected = (s2sad.grad(f)(x + eps * v) - s2sad.grad(f)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(f)(x, v), expected, rtol=1e-5, atol=1e-7)


def test_standalone_module_with_annotations_it_cannot_evaluate(tmp_path) -> None:
    # the generated function kept 'cfg: Config' (imported only under TYPE_CHECKING) and
    # 'p: Params' (the user's class, not copied): the standalone module raised NameError
    from tests.test_standalone import user_function
    loss = user_function(tmp_path, "user_annotated", '''
        from __future__ import annotations

        from typing import TYPE_CHECKING

        import numpy as np

        if TYPE_CHECKING:
            from numpy.typing import NDArray
            from somewhere import Config


        class Params:
            def __init__(self, W: np.ndarray, scale: float) -> None:
                self.W, self.scale = W, scale


        def loss(p: Params, x: NDArray[np.float64], cfg: Config | None = None) -> float:
            return p.scale * float(np.sum(np.tanh(x @ p.W) ** 2))
    ''')
    params = loss.__globals__["Params"](RNG.normal(size=(3, 2)), 2.0)
    text = s2sad.adjoint_source(loss, "x", standalone=True)
    namespace: dict = {}
    exec(compile(text, "written", "exec"), namespace)
    x = RNG.normal(size=(4, 3))
    expected = numerical_grad(lambda x: loss(params, x), [x], 0)
    np.testing.assert_allclose(namespace["grad_loss"](params, x), expected, rtol=1e-6, atol=1e-9)


class Scaler:
    def __init__(self, s: float) -> None:
        self.s = s

    def predict(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.tanh(x @ w) * self.s

    def loss(self, w: np.ndarray, x: np.ndarray) -> float:
        return np.sum(self.predict(w, x) ** 2)


SCALER = Scaler(2.0)


def through_a_method(w: np.ndarray, x: np.ndarray) -> float:
    return SCALER.loss(w, x) + np.sum(w ** 2)


def reparametrised_sample(mu: np.ndarray, log_s: np.ndarray) -> float:
    rng = np.random.default_rng(5)
    return np.sum(rng.normal(mu, np.exp(log_s)) ** 2)


def sampled_with_a_generator_argument(mu: np.ndarray, rng: np.random.Generator) -> float:
    return np.sum(rng.normal(mu, 2.0) ** 2)


@pytest.mark.parametrize("f, called", [(through_a_method, "forward_predict"),
                                       (sampled_with_a_generator_argument, "forward_normal")])
def test_standalone_refuses_code_chosen_by_the_object_it_runs_on(f, called: str) -> None:
    # the code for self.predict(...) (or rng.normal(...)) is chosen at each call by the
    # object's type; the standalone module called it without defining it (NameError)
    from s2sad.standalone import StandaloneError
    # (an object of the user's module read by the code is refused first, since backend12)
    with pytest.raises(StandaloneError, match=f"the code calls {called}.*cannot copy it|reads '\\w+' \\(\\w+\\) from"):
        s2sad.adjoint_source(f, standalone=True)


def test_standalone_sample_of_a_generator_made_in_the_function() -> None:
    namespace: dict = {}
    exec(compile(s2sad.adjoint_source(reparametrised_sample, standalone=True), "written", "exec"), namespace)
    mu, log_s = np.array([0.1, -0.2]), np.array([0.3, 0.0])
    np.testing.assert_allclose(namespace["grad_reparametrised_sample"](mu, log_s),
                               numerical_grad(reparametrised_sample, [mu, log_s], 0), rtol=1e-6)


def reparametrised_inline(mu: np.ndarray, s: np.ndarray) -> float:
    np.random.seed(3)
    z = np.random.normal(mu, s)
    w = mu + s * np.random.randn(3)
    return np.sum(z ** 2 + w ** 3)


def unused_draw_first(mu: np.ndarray) -> float:
    np.random.seed(0)
    burn = np.random.randn(3)
    eps = np.random.randn(3)
    return np.sum(mu * eps)


def two_draws_alike(mu: np.ndarray) -> float:
    np.random.seed(0)
    a = np.random.normal(mu, 1.0)
    b = np.random.normal(mu, 1.0)
    return np.sum(a * b)


def unused_sample_first(mu: np.ndarray) -> float:
    np.random.seed(0)
    np.random.randn(2)
    rng = np.random.default_rng(0)
    _ = rng.normal(size=2)
    burn = rng.normal(mu, 1.0)
    mu = mu + 0.1 * np.random.randn(3)
    return np.sum(rng.normal(mu, 1.0) ** 2)


def noise_each_step(mu: np.ndarray, s: np.ndarray) -> float:
    np.random.seed(1)
    total = 0.0
    for _ in range(4):
        total = total + np.sum((mu + s * np.random.randn(3)) ** 2)
    return total


@pytest.mark.parametrize("f, wrt", [(reparametrised_inline, 1), (unused_draw_first, 0), (two_draws_alike, 0),
                                    (unused_sample_first, 0), (noise_each_step, 1)])
@pytest.mark.parametrize("specialize", [True, False])
def test_random_draws_are_drawn_once_where_they_stand(f, wrt: int, specialize: bool) -> None:
    # 's * np.random.randn(3)' computed the draw again in the backward pass (other numbers);
    # an unused draw was dropped as dead code and two draws alike were computed once, so the
    # draws after them gave the gradient other numbers than the function's
    args = [np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.6, 0.7])][:f.__code__.co_argcount]
    expected = numerical_grad(f, args, wrt)
    np.testing.assert_allclose(s2sad.grad(f, wrt, specialize=specialize)(*args), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(s2sad.value_and_grad(f, wrt)(*args)[1], expected, rtol=1e-6, atol=1e-9)


def sampled_in_the_function(mu: np.ndarray, s: np.ndarray) -> float:
    rng = np.random.default_rng(1)
    a = rng.normal(mu, s, size=(4, 3))
    b = rng.lognormal(mu, s)
    g = rng.uniform(mu, mu + s)
    return np.sum(a ** 3) + np.sum(b) + np.sum(g ** 2)


def noisy(mu: np.ndarray, s: np.ndarray) -> np.ndarray:
    return mu + s * np.random.randn(3)


def through_a_noisy_helper(mu: np.ndarray, s: np.ndarray) -> float:
    np.random.seed(0)
    return np.sum(noisy(mu, s) ** 3)


def sampled_from_a_generator_passed_in(mu: np.ndarray, s: np.ndarray, rng: np.random.Generator) -> float:
    return np.sum(rng.normal(mu, s) ** 3)


def test_hvp_of_samples_from_a_generator_made_in_the_function() -> None:
    # rng.normal(mu, s) on a generator made in the function was a call chosen as it runs, whose
    # vjp drew the sample again from the advanced generator: Hessian-vector products with
    # respect to a scale were wrong; the call takes the sampler's rule now
    mu, s, v = np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.6, 0.7]), np.array([1.0, -0.5, 0.3])
    f = sampled_in_the_function
    for wrt, x in ((0, mu), (1, s)):
        np.testing.assert_allclose(s2sad.grad(f, wrt)(mu, s), numerical_grad(f, [mu, s], wrt), rtol=1e-6)
        g = s2sad.grad(f, wrt)
        eps = 1e-5
        moved = [(mu + eps * v, s), (mu - eps * v, s)] if wrt == 0 else [(mu, s + eps * v), (mu, s - eps * v)]
        expected = (g(*moved[0]) - g(*moved[1])) / (2 * eps)
        np.testing.assert_allclose(s2sad.hvp(f, wrt)(mu, s, v), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f, line, column", [(through_a_noisy_helper, "return mu + s * np.random.randn(3)", 21),
                                             (sampled_from_a_generator_passed_in, "return np.sum(rng.normal", 19)])
def test_hvp_through_a_draw_whose_forward_pass_runs_again_is_refused(f, line: str, column: int) -> None:
    # the caller's backward pass computed the helper's forward pass again (its vjp), drawing
    # other random numbers: the Hessian-vector product was wrong
    from s2sad.errors import NoGradientRuleError
    mu, s, v = np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.6, 0.7]), np.array([1.0, -0.5, 0.3])
    args = (mu, s) if f is through_a_noisy_helper else (mu, s, np.random.default_rng(0))
    np.testing.assert_allclose(s2sad.grad(f, 1)(*args), numerical_grad(
        lambda s: f(mu, s, *([np.random.default_rng(0)] if len(args) == 3 else [])), [s], 0), rtol=1e-6)
    with pytest.raises(NoGradientRuleError, match="would then draw other random numbers") as caught:
        s2sad.hvp(f, 1)(*args, v)
    assert caught.value.location.source_line.strip().startswith(line)
    assert caught.value.location.column == column


def finite_part_of_a_root(x: np.ndarray) -> float:
    return np.sum(np.nan_to_num(np.sqrt(x)) * x) + np.sum(np.nan_to_num(np.log(x), neginf=0.0))


def test_nan_to_num_is_nan_safe_as_where_is() -> None:
    # the gradient of np.nan_to_num(np.sqrt(x)) where x < 0 was 0 * nan = nan (the function is
    # 0 there, so is its derivative); the derivatives of what only feeds nan_to_num are masked
    # where its argument is not finite, as for np.where's branches
    x = np.array([-1.0, 0.5, 2.0, -0.3])
    with np.errstate(all="ignore"):
        expected = numerical_grad(finite_part_of_a_root, [x], 0)
        np.testing.assert_allclose(s2sad.grad(finite_part_of_a_root)(x), expected, rtol=1e-6, atol=1e-9)
        v = np.ones_like(x)
        _, slope = s2sad.jvp(finite_part_of_a_root)(x, v)
        assert np.isfinite(slope)
        assert np.all(np.isfinite(s2sad.hvp(finite_part_of_a_root)(x, v)))


def seeded_noisy(mu: np.ndarray, s: np.ndarray) -> np.ndarray:
    np.random.seed(5)
    return mu + s * np.random.randn(3)


def through_a_seeded_helper(mu: np.ndarray, s: np.ndarray) -> float:
    return np.sum(seeded_noisy(mu, s) ** 3)


def test_hvp_through_a_helper_that_seeds_before_it_draws() -> None:
    # its forward pass, run again, draws the same numbers again: not refused, and right
    mu, s, v = np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.6, 0.7]), np.array([1.0, -0.5, 0.3])
    g = s2sad.grad(through_a_seeded_helper, 1)
    eps = 1e-5
    expected = (g(mu, s + eps * v) - g(mu, s - eps * v)) / (2 * eps)
    np.testing.assert_allclose(s2sad.hvp(through_a_seeded_helper, 1)(mu, s, v), expected, rtol=1e-5, atol=1e-7)


def log_where_positive(x: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(x > 0, np.log(x), 0.0)
        if np.any(x > 1):
            return np.sum(r) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = np.sum(np.sqrt(np.abs(x)))
    return np.sum(r) + s


def returns_in_a_guarded_branch(x: np.ndarray) -> float:
    if x[0] > 0:
        with np.errstate(all="ignore"):
            return np.sum(np.log(x ** 2))
    else:
        with np.errstate(all="ignore"):
            y = x * 2
    return np.sum(y ** 2)


@pytest.mark.parametrize("f", [log_where_positive, returns_in_a_guarded_branch])
@pytest.mark.parametrize("x", [np.array([0.5, -1.0, 0.7]), np.array([-0.5, -1.0, 2.0])])
def test_with_np_errstate_runs_its_body(f, x: np.ndarray) -> None:
    # 'with np.errstate(...)' (and warnings.catch_warnings) was refused as a 'with' statement;
    # they change what is reported, not what is computed
    np.testing.assert_allclose(s2sad.grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-6)


def gp_mean_by_cho_solve(L: np.ndarray, y: np.ndarray) -> float:
    import scipy.linalg as sla
    return np.sum(sla.cho_solve((L, True), y) ** 2)


def solved_by_lu_factors(A: np.ndarray, y: np.ndarray) -> float:
    import scipy.linalg as sla
    lu, piv = sla.lu_factor(A)
    return np.sum(sla.lu_solve((lu, piv), y) ** 2) + np.sum(sla.lu_solve((lu, piv), y, trans=1))


@pytest.mark.parametrize("f", [gp_mean_by_cho_solve, solved_by_lu_factors])
@pytest.mark.parametrize("specialize", [True, False])
def test_factor_passed_as_a_tuple_display(f, specialize: bool) -> None:
    # the (c, lower) and (lu, piv) displays were read as arrays by the gradient
    # (cho_solve(np.asarray(items), g): ValueError, an inhomogeneous shape)
    M = RNG.normal(size=(3, 3))
    A = M @ M.T + 3 * np.eye(3)
    factor = np.linalg.cholesky(A) if f is gp_mean_by_cho_solve else A
    y = RNG.normal(size=3)
    np.testing.assert_allclose(s2sad.grad(f, 1, specialize=specialize)(factor, y),
                               numerical_grad(f, [factor, y], 1), rtol=1e-6)


def norms_over_named_axes(x: np.ndarray) -> float:
    ax = (1, 2)
    return np.sum(np.linalg.norm(x, axis=ax)) + np.sum(np.max(x, axis=ax)) + np.sum(np.var(x, axis=ax))


@pytest.mark.parametrize("specialize", [True, False])
def test_axis_tuple_held_in_a_variable(specialize: bool) -> None:
    # the gradient passed the tuple as np.asarray(ax) to norm_grad and np.sum (TypeError: only
    # integer scalar arrays can be converted to a scalar index); only a differentiable
    # operand that is a tuple or list display is read as an array now
    x = RNG.normal(size=(2, 3, 4))
    np.testing.assert_allclose(s2sad.grad(norms_over_named_axes, specialize=specialize)(x),
                               numerical_grad(norms_over_named_axes, [x], 0), rtol=1e-6)
    v = RNG.normal(size=x.shape)
    g = s2sad.grad(norms_over_named_axes)
    expected = (g(x + 1e-5 * v) - g(x - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(s2sad.hvp(norms_over_named_axes)(x, v), expected, rtol=1e-5, atol=1e-7)


def conv1d_by_windows(w: np.ndarray, x: np.ndarray) -> float:
    from numpy.lib.stride_tricks import sliding_window_view
    return np.sum(np.tanh(sliding_window_view(x, w.shape[0]) @ w) ** 2)


def test_sliding_window_view_is_differentiated() -> None:
    # a conv1d written with sliding_window_view was refused (no gradient rule)
    w, x = RNG.normal(size=3), RNG.normal(size=8)
    for wrt in (0, 1):
        np.testing.assert_allclose(s2sad.grad(conv1d_by_windows, wrt)(w, x),
                                   numerical_grad(conv1d_by_windows, [w, x], wrt), rtol=1e-6)


def writes_through_windows(x: np.ndarray) -> float:
    from numpy.lib.stride_tricks import sliding_window_view
    return np.sum(sliding_window_view(x, 2, writeable=True))


def test_writeable_window_view_is_refused() -> None:
    from s2sad.errors import S2SADError
    with pytest.raises(S2SADError, match="writeable window view") as caught:
        s2sad.grad(writes_through_windows)(np.ones(4))
    assert caught.value.location.source_line.strip().startswith("return np.sum(sliding_window_view")
