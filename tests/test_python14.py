"""The Python people write inside functions they differentiate (probe python14): functions
picked from a dict or list and called (``ACTS[act](x)``), and other forms found by probing
lambdas, methods, closures, control flow and containers.  Gradients and Hessian-vector
products are checked against central finite differences in float64; refusals against their
location."""
from __future__ import annotations

import collections
import itertools
import inspect
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

import s2sad
from tests.gradcheck import assert_grad_matches, assert_hvp_matches, numerical_grad

R = np.random.default_rng(14)




def raises_at(f: Callable[..., Any], args: list[Any], line: int, text: str, wrt: int = 0) -> None:
    """``s2sad.grad(f, wrt)(*args)`` raises an S2SADError at ``line`` of ``f`` (1: its ``def``)."""
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(f, wrt)(*args)
    assert info.value.location.line == f.__code__.co_firstlineno + line - 1, str(info.value)
    assert info.value.location.filename == f.__code__.co_filename
    assert text in str(info.value), str(info.value)


X = np.array([0.3, -0.7, 1.1, 0.5])


# --- a function picked from a container by key or index, then called ----------------------------

ACTS = {"tanh": np.tanh, "sin": lambda z: np.sin(z) * z, "sq": lambda z: z ** 2}
FNS = [lambda z: z * 2.0, np.exp]
NESTED = {"a": [np.sin, np.cos]}


def act_by_key(x: np.ndarray, act: str = "sin") -> float:
    return np.sum(ACTS[act](x))


def acts_in_a_loop(x: np.ndarray) -> float:
    s = 0.0
    for k in ["tanh", "sin", "sq"]:
        if k != "tanh":
            s = s + np.sum(ACTS[k](x))
        else:
            s = s + np.sum(ACTS[k](x) * x)
    return s


def local_dict_of_lambdas(x: np.ndarray) -> float:
    d = {"a": lambda z: z * z, "b": np.cos}
    return np.sum(d["a"](x) + d["b"](x))


def list_item_called(x: np.ndarray) -> float:
    return np.sum(FNS[1](x)) + np.sum(FNS[0](x) * x) + np.sum(NESTED["a"][1](x) * NESTED["a"][0](x))


def lambdas_with_defaults_by_index(x: np.ndarray) -> float:
    fs = [lambda z, k=k: z ** k for k in range(1, 4)]
    h = x
    for i in range(3):
        h = fs[(i + 1) % 3](h) * 0.5
    return np.sum(h)


def passed_in_container(x: np.ndarray, acts: list) -> float:
    return np.sum(acts[0](x) * acts[1](x))


def loop_item_called_in_branches(x: np.ndarray) -> float:
    s = 0.0
    for f in [np.tanh, ACTS["sin"]]:
        if s == 0.0:
            s = s + np.sum(f(x))
        else:
            s = s + np.sum(f(x) * x)
    return s


@pytest.mark.parametrize("f", [act_by_key, acts_in_a_loop, local_dict_of_lambdas, list_item_called,
                               lambdas_with_defaults_by_index, loop_item_called_in_branches])
def test_a_function_picked_from_a_container_and_called(f: Callable[..., Any]) -> None:
    # (at second order, the function read back from the loop's tape warned of a zero gradient)
    assert_grad_matches(f, [X.copy()], 0)
    assert_hvp_matches(f, [X.copy()])


def test_functions_passed_in_a_list_and_called_by_index() -> None:
    acts = [np.sin, lambda z: z ** 3]
    assert_grad_matches(passed_in_container, [X.copy(), acts], 0)
    assert_hvp_matches(passed_in_container, [X.copy(), acts])


def item_not_callable(x: np.ndarray) -> float:
    return np.sum(x[0](x))


def test_an_array_item_called_is_refused_at_the_call() -> None:
    raises_at(item_not_callable, [X.copy()], 2, "x[0].__call__ is not a method defined with 'def'")


# --- a function a factory makes, bound to a local name and called ---------------------------------

def make_mul(k: Any) -> Callable[[Any], Any]:
    def mul(z: Any) -> Any:
        return k * z
    return mul


def make_sin(k: float) -> Callable[[Any], Any]:
    return lambda z: k * np.sin(z)


def pick(name: str) -> Callable[[Any], Any]:
    return {"t": np.tanh, "s": np.sin}[name]


def factory_functions(x: np.ndarray) -> float:
    f = make_sin(3.0)
    g = make_mul(0.5)
    return np.sum(g(f(x)) ** 2)


def factory_function_in_a_loop(x: np.ndarray) -> float:
    f = pick("t")
    s = 0.0
    for i in range(3):
        if i > 0:
            s = s + np.sum(f(x * i))
    return s


@pytest.mark.parametrize("f", [factory_functions, factory_function_in_a_loop])
def test_a_function_made_by_a_factory_and_called(f: Callable[..., Any]) -> None:
    assert_grad_matches(f, [X.copy()], 0)
    assert_hvp_matches(f, [X.copy()])


def factory_of_a_closure_over_the_argument(x: np.ndarray) -> float:
    f = make_mul(np.sum(x))
    return np.sum(f(x))


def test_a_factory_closing_over_a_value_with_a_gradient_is_refused_where_it_makes_it() -> None:
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(factory_of_a_closure_over_the_argument)(X.copy())
    assert info.value.location.line == make_mul.__code__.co_firstlineno + 1
    assert "reads k from the enclosing function" in str(info.value)


# --- names swapped by a tuple assignment, then written in place -----------------------------------

def swap_then_write(x: np.ndarray) -> float:
    A = x * 2.0
    B = x ** 2
    A, B = B, A
    A[1] = 5.0 * B[0]
    return np.sum(A * B)


def ping_pong_buffers(x: np.ndarray) -> float:
    u = x.copy()
    v = np.zeros_like(x)
    for _ in range(3):
        v[1:-1] = 0.5 * (u[:-2] + u[2:]) + u[1:-1] ** 2 * 0.1
        v[0] = u[0]
        v[-1] = u[-1]
        u, v = v, u
    return np.sum(u ** 2)


def rotate_three_then_write(x: np.ndarray) -> float:
    A, B, C = x * 2.0, x ** 2, x + 1.0
    for i in range(2):
        A, B, C = C, A, B
        A[i] = 2.0 * B[i]
        C[i + 1] = np.sin(A[i])
    return np.sum(A * B * C)


@pytest.mark.parametrize("f", [swap_then_write, ping_pong_buffers, rotate_three_then_write])
def test_names_swapped_then_written_in_place(f: Callable[..., Any]) -> None:
    # (refused: "'A' and 'B' are the same object, and 'B' is read later")
    assert_grad_matches(f, [X.copy()], 0)
    assert_hvp_matches(f, [X.copy()])


def swap_with_an_alias_kept(x: np.ndarray) -> float:
    A = x * 2.0
    B = x ** 2
    C = B
    A, B = B, A
    A[1] = 5.0
    return np.sum(A * B * C)


def swap_in_one_branch_alias_in_the_other(x: np.ndarray) -> float:
    A = x * 2.0
    B = x ** 2
    if x[0] > 0:
        A, B = B, A
    else:
        A = B
    A[1] = 5.0
    return np.sum(A * B)


def same_name_given_twice(x: np.ndarray) -> float:
    A = x * 2.0
    B = x ** 2
    A, B = B, B
    A[1] = 5.0
    return np.sum(A * B)


def swapped_with_a_view(x: np.ndarray) -> float:
    A = x * 2.0
    B = A[::2]
    A, B = B, A
    A[1] = 5.0
    return np.sum(A) + np.sum(B ** 2)


@pytest.mark.parametrize("f, text", [
    (swap_with_an_alias_kept, "'C' may share memory with 'A'"),
    (swap_in_one_branch_alias_in_the_other, "'B' may share memory with 'A'"),
    (same_name_given_twice, "'A' and 'B' are the same object"),
    (swapped_with_a_view, "'B' may share memory with 'A'")])
def test_a_swap_that_leaves_an_alias_is_still_refused_at_the_write(f: Callable[..., Any], text: str) -> None:
    line = next(i for i, s in enumerate(inspect.getsource(f).splitlines(), 1) if "A[1] = " in s)
    raises_at(f, [X.copy()], line, text)


# --- an early return inside a loop, at second order -----------------------------------------------

def first_large_prefix(x: np.ndarray) -> float:
    for i in range(len(x)):
        if x[i] > 1.0:
            return np.sum(x[:i] ** 2)
    return np.sum(x)


def first_large_strided(x: np.ndarray) -> float:
    for i, v in enumerate(x):
        if v > 1.0:
            return np.sum(x[::i + 1] ** 2) + np.sum(x[i:] * v)
    return 0.0


@pytest.mark.parametrize("f", [first_large_prefix, first_large_strided])
def test_an_early_return_that_slices_by_the_loop_index(f: Callable[..., Any]) -> None:
    # (the hvp was refused: 'slice has no gradient rule and is passed i_2, which carries a gradient')
    assert_grad_matches(f, [X.copy()], 0)
    assert_hvp_matches(f, [X.copy()])


# --- *args and **kwargs passed on whole to a function with named parameters -----------------------

def scaled_product(a: Any, b: Any, *, scale: float = 1.0, **kw: Any) -> Any:
    return (a * b) * scale + kw["c"]


def forward_all(*args: Any, **kwargs: Any) -> Any:
    return scaled_product(*args, **kwargs)


def forward_positional(*args: Any) -> Any:
    return scaled_product(*args, c=1.0)


def forward_keywords(**kwargs: Any) -> Any:
    return scaled_product(1.5, 2.0, **kwargs)


def calls_forwarders(x: np.ndarray) -> float:
    def inner(*a: Any, **k: Any) -> Any:
        return scaled_product(*a, **k)
    return (np.sum(forward_all(x, np.sin(x), scale=2.0, c=x ** 2)) + np.sum(forward_positional(x, x))
            + np.sum(forward_keywords(scale=x, c=np.cos(x))) + np.sum(inner(x, 2.0, c=x)))


def test_args_and_kwargs_passed_on_to_named_parameters() -> None:
    # (refused: "'*' in a call needs a tuple or list whose length s2sad can see here")
    assert_grad_matches(calls_forwarders, [X.copy()], 0)
    assert_hvp_matches(calls_forwarders, [X.copy()])


def forward_after_a_named_parameter(x: Any, *args: Any, **kwargs: Any) -> Any:
    return scaled_product(x, *args, **kwargs)


def calls_a_partial_forwarder(x: np.ndarray) -> float:
    return np.sum(forward_after_a_named_parameter(x, x, c=x))


def test_args_passed_on_after_a_named_parameter() -> None:
    # (refused here, at the star, until python15: see tests/test_python15.py)
    assert_grad_matches(calls_a_partial_forwarder, [X.copy()], 0)
    assert_hvp_matches(calls_a_partial_forwarder, [X.copy()])


# --- a nested function calling another one defined before it --------------------------------------

def lambda_calls_lambda(x: np.ndarray) -> float:
    g = lambda z: np.tanh(z)  # noqa: E731
    h = lambda z, k: g(z) * z * k  # noqa: E731
    return np.sum(h(x, x))


def defs_call_defs(x: np.ndarray) -> float:
    def sig(z: Any) -> Any:
        return 1.0 / (1.0 + np.exp(-z))

    def swish(z: Any) -> Any:
        return z * sig(z)

    def layer(z: Any) -> Any:
        return swish(z) + sig(2 * z)
    s = 0.0
    for i in range(2):
        s = s + np.sum(layer(x * (i + 1)))
    return s


def mapped_lambda_calls_lambda(x: np.ndarray) -> float:
    sq = lambda z: z ** 2  # noqa: E731
    return sum(map(lambda v: sq(v) + np.sin(v), x))


@pytest.mark.parametrize("f", [lambda_calls_lambda, defs_call_defs, mapped_lambda_calls_lambda])
def test_a_nested_function_calling_one_that_reads_no_variables(f: Callable[..., Any]) -> None:
    # (refused: "the nested function 'h' calls the nested function 'g' and reads g from the enclosing function")
    assert_grad_matches(f, [X.copy()], 0)
    assert_hvp_matches(f, [X.copy()])


def calls_a_closure_over_a_variable(x: np.ndarray) -> float:
    w = x * 2
    g = lambda z: z * w  # noqa: E731
    h = lambda z: g(z) + z  # noqa: E731
    return np.sum(h(x))


def test_a_nested_function_calling_one_that_reads_variables_is_still_refused() -> None:
    raises_at(calls_a_closure_over_a_variable, [X.copy()], 4, "the nested function 'h' calls the nested function 'g'")


# --- a nested function reading the function's variables, called in a condition ---------------------

def closure_in_an_if(x: np.ndarray) -> float:
    k = 0.0
    g = lambda z: z > k  # noqa: E731
    s = 0.0
    if g(x[0]):
        s = s + x[0] ** 2
    return s + np.sum(x)


def closure_in_a_comprehension_test(x: np.ndarray) -> float:
    k = 0.0

    def keep(z: Any) -> Any:
        return z > k
    return sum([v ** 2 for v in x if keep(v)])


def closure_in_a_while_test(x: np.ndarray) -> float:
    k = 0.5
    g = lambda z: z * k  # noqa: E731
    i = 0
    while g(x[i]) < 0.1:
        i += 1
    return x[i] ** 2 * np.sum(x)


@pytest.mark.parametrize("f", [closure_in_an_if, closure_in_a_comprehension_test, closure_in_a_while_test])
def test_a_closure_called_in_a_condition(f: Callable[..., Any]) -> None:
    # (TypeError in generated code: "<lambda>() missing 1 required keyword-only argument: 'k'")
    assert_grad_matches(f, [X.copy()], 0)
    assert_hvp_matches(f, [X.copy()])


# --- filter -------------------------------------------------------------------------------------------

def positive(z: Any) -> Any:
    return z > 0


def filters(x: np.ndarray) -> float:
    k = 0.0
    rows = [x[:2], x[2:]]
    kept = filter(lambda r: np.sum(r) > k, rows)
    return (sum(y * y for y in filter(lambda z: z > k, x)) + sum(filter(positive, x * 2))
            + sum(v ** 3 for v in filter(None, [x[0], 0.0, x[1]])) + sum(np.sum(r ** 2) for r in kept))


def test_filter() -> None:
    # (refused: "no gradient rule for 'filter'")
    assert_grad_matches(filters, [X.copy()], 0)
    assert_hvp_matches(filters, [X.copy()])


def filter_read_twice(x: np.ndarray) -> float:
    kept = filter(positive, x)
    return sum(kept) + sum(kept)


def test_a_filter_bound_to_a_name_read_twice_is_refused() -> None:
    raises_at(filter_read_twice, [X.copy()], 2, "a filter object bound to a name is an iterator")


# --- named tuples made in the function ---------------------------------------------------------------

class Params(NamedTuple):
    W: np.ndarray
    b: np.ndarray
    scale: float = 2.0


Pair = collections.namedtuple("Pair", ["a", "c"])


def sgd_step(p: Params, g: np.ndarray) -> Params:
    return Params(p.W - 0.1 * g, p.b, p.scale)


def records_made_here(x: np.ndarray) -> float:
    p = Params(x, b=np.sin(x))  # scale: its default
    W, b, s = p
    q = Params(b, W, scale=3.0)
    for _ in range(2):
        q = sgd_step(q, q.W * q.b)
    pairs = [Pair(x * i, c=x[0]) for i in range(3)]
    return (np.sum(p.W * p.b) * p.scale + np.sum(q[0] ** 2 + q.b) * s * q.scale
            + sum(np.sum(r.a * r.c) for r in pairs))


def record_of_an_argument(p: Params) -> float:
    q = Params(p.W * 2, p.b)
    return np.sum(np.tanh(q.W * q.b)) * q.scale


def test_named_tuples_made_in_the_function() -> None:
    # (refused: "no gradient rule for 'Params'"; the hvp must give the default field no tangent)
    assert_grad_matches(records_made_here, [X.copy()], 0)
    assert_hvp_matches(records_made_here, [X.copy()])


def test_a_named_tuple_made_from_a_named_tuple_argument() -> None:
    p = Params(X.copy(), X[::-1].copy())
    g = s2sad.grad(record_of_an_argument)(p)
    assert type(g) is Params
    eps, expected = 1e-6, []
    for field in (0, 1):
        col = np.zeros(4)
        for i in range(4):
            up, down = [np.array(v, dtype=float) for v in p[:2]], [np.array(v, dtype=float) for v in p[:2]]
            up[field][i] += eps
            down[field][i] -= eps
            col[i] = (record_of_an_argument(Params(*up)) - record_of_an_argument(Params(*down))) / (2 * eps)
        expected.append(col)
    np.testing.assert_allclose(g.W, expected[0], rtol=1e-6)
    np.testing.assert_allclose(g.b, expected[1], rtol=1e-6)


def replaced_fields(x: np.ndarray) -> float:
    p = Params(x, x * 2)
    q = p._replace(b=np.sin(x))
    r = q._replace(W=q.W * q.b, scale=3.0)
    s = Pair(x, 1.0)
    for _ in range(2):
        s = s._replace(a=np.tanh(s.a) + s.c)
    return np.sum(r.W * r.b) * r.scale + np.sum(p.b) + np.sum(s.a)


def replaced_field_of_an_argument(p: Params) -> float:
    q = p._replace(W=p.W * 2)
    return np.sum(q.W * q.b) * q.scale


def test_fields_replaced() -> None:
    # (refused: "collections.Params._replace is library code")
    assert_grad_matches(replaced_fields, [X.copy()], 0)
    assert_hvp_matches(replaced_fields, [X.copy()])
    p = Params(X.copy(), X[::-1].copy(), 1.5)
    g = s2sad.grad(replaced_field_of_an_argument)(p)
    assert type(g) is Params
    np.testing.assert_allclose(g.W, 2 * p.b * p.scale, rtol=1e-12)
    np.testing.assert_allclose(g.b, 2 * p.W * p.scale, rtol=1e-12)
    assert g.scale == pytest.approx(np.sum(2 * p.W * p.b))


# --- itertools.product ----------------------------------------------------------------------------

def products(x: np.ndarray) -> float:
    s = 0.0
    for a, b in itertools.product(x[:2], x[2:]):
        s = s + a * b ** 2
    rows = [x[:2], x[2:]]
    pairs = list(itertools.product(x[:2], x[:2]))
    return (s + sum(a * b * c for a, b, c in itertools.product(x[:2], [1.0, 2.0], x[2:]))
            + sum(p[0] * p[1] for p in pairs) + sum(np.sum(r * q) for r, q in itertools.product(rows, rows)))


def test_itertools_product() -> None:
    # (refused: "no gradient rule for 'itertools.product'")
    assert_grad_matches(products, [X.copy()], 0)
    assert_hvp_matches(products, [X.copy()])


def product_with_repeat(x: np.ndarray) -> float:
    return sum(a * b for a, b in itertools.product(x, repeat=2))


def test_itertools_product_with_repeat_is_refused_at_the_call() -> None:
    raises_at(product_with_repeat, [X.copy()], 2, "itertools.product takes sequences passed by position here")


class Scale:
    def __init__(self, k: Any) -> None:
        self.k = k

    def forward(self, z: Any) -> Any:
        return np.tanh(self.k * z)


REGISTRY = {"scale": Scale}


def built_from_a_registry(x: np.ndarray) -> float:
    made = REGISTRY["scale"](2.0)
    return np.sum(made.forward(x))


def built_from_a_registry_with_a_gradient(x: np.ndarray) -> float:
    made = REGISTRY["scale"](x[0])
    return np.sum(made.forward(x))


def test_a_class_picked_from_a_dict_builds_an_object_from_constants_only() -> None:
    assert_grad_matches(built_from_a_registry, [X.copy()], 0)
    raises_at(built_from_a_registry_with_a_gradient, [X.copy()], 2,
              "'REGISTRY_scale.__call__(...)' builds an instance of Scale from values that carry a gradient")


# --- the forms together, in a small model -----------------------------------------------------------

class Carry(NamedTuple):
    h: np.ndarray
    c: np.ndarray
    t: int = 0


MODEL_ACTS = {"tanh": np.tanh, "gelu": lambda z: 0.5 * z * (1 + np.tanh(0.8 * z)),
              "relu": lambda z: np.maximum(z, 0.0)}


def make_loss(kind: str) -> Callable[[Any, Any], Any]:
    if kind == "mse":
        return lambda y, t: np.mean((y - t) ** 2)
    return lambda y, t: np.mean(np.abs(y - t))


def dense(p: dict, h: np.ndarray, act: str) -> np.ndarray:
    return MODEL_ACTS[act](p["W"] @ h + p["b"])


def forward_dense(*args: Any, **kwargs: Any) -> Any:
    return dense(*args, **kwargs)


def small_model(params: list, x: np.ndarray) -> float:
    loss = make_loss("mse")
    st = Carry(x, np.zeros_like(x))
    for i, (p, a) in enumerate(zip(params, ["tanh", "gelu", "relu"])):
        h = forward_dense(p, st.h, act=a)
        st = st._replace(h=h, c=st.c + h * (i + 1), t=st.t + 1)
    keep = list(filter(lambda v: v is not None, [st.h, None, st.c]))
    pairs = sum(np.sum(a * b) for a, b in itertools.product(keep, keep))
    A, B = st.h * 1.0, st.c * 1.0
    A, B = B, A
    A[0] = B[0] * 2
    return loss(A, B) + 0.01 * sum(np.sum(k ** 2) for k in keep) + 0.001 * pairs


def test_the_forms_together_in_a_small_model() -> None:
    r = np.random.default_rng(3)
    params = [{"W": r.normal(size=(4, 4)) * 0.5, "b": r.normal(size=4) * 0.1} for _ in range(3)]
    x = r.normal(size=4)
    np.testing.assert_allclose(s2sad.grad(small_model, 1)(params, x), numerical_grad(small_model, [params, x], 1),
                               rtol=1e-5, atol=1e-7)
    assert_hvp_matches(small_model, [params, x], 1)
    g = s2sad.grad(small_model)(params, x)
    for k, layer in enumerate(params):
        for key in ("W", "b"):
            def moved(v: np.ndarray, k: int = k, key: str = key) -> float:
                ps = [dict(q) for q in params]
                ps[k][key] = v
                return small_model(ps, x)
            np.testing.assert_allclose(g[k][key], numerical_grad(moved, [layer[key]], 0), rtol=1e-5, atol=1e-7)
