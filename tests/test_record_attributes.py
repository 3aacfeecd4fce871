"""Fields of records named like attributes of arrays (``p.T``, ``p.real``, ``p.shape``): a
field's gradient, not the array attribute's, in generic and specialised code; an ordinary
array's ``x.T`` keeps its own."""
from __future__ import annotations

import collections
import typing

import numpy as np
import pytest

import s2sad
from gradcheck import make_function, numerical_grad

Views = collections.namedtuple("Views", ["T", "real", "imag", "mT", "w"])
Parts = collections.namedtuple("Parts", ["T", "real", "imag"])
Buffers = collections.namedtuple("Buffers", ["data", "flat", "base"])
Sized = collections.namedtuple("Sized", ["shape", "w"])
Counted = collections.namedtuple("Counted", ["w", "size"])
Typed = collections.namedtuple("Typed", ["dtype"])


class Transposed(typing.NamedTuple):
    T: np.ndarray
    b: float


class Holder:
    """A plain object whose attributes are named like an array's."""

    def __init__(self, T: np.ndarray, real: np.ndarray) -> None:
        self.T, self.real = T, real

    def loss(self, x: np.ndarray) -> float:
        return float(np.sum(self.T @ x) + np.sum(self.real * x ** 2))


def _record_fd(f, args, argnum, eps=1e-6):
    """Central differences of f with respect to each field of the record ``args[argnum]``."""
    p = args[argnum]
    grads = []
    for i, field in enumerate(p):
        def at(value, i=i):
            moved = list(args)
            moved[argnum] = p._replace(**{p._fields[i]: value})
            return f(*moved)
        grads.append(numerical_grad(at, [field], 0, eps))
    return type(p)(*grads)


def _assert_record_grad(grad, f, args, argnum):
    want = _record_fd(f, args, argnum)
    assert type(grad) is type(want)
    for name, g, w in zip(want._fields, grad, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7, err_msg=name)


def _calls(f, wrt, args):
    """The gradient of the generic code (first call) and of the specialised code (second)."""
    g = s2sad.grad(f, wrt=wrt)
    return g(*args), g(*args)


RNG = np.random.default_rng(7)
X = RNG.normal(size=3)


def _views():
    return Views(RNG.normal(size=(3, 3)), RNG.normal(size=3), RNG.normal(size=3),
                 RNG.normal(size=(2, 3, 3)), RNG.normal(size=3))


def f_views(p, x):
    return (np.sum((p.T @ x) ** 2) + np.sum(p.real * x) + np.sum(p.imag ** 2)
            + np.sum(np.tanh(p.mT @ x)) + np.sum(p.w.T * x))


def test_namedtuple_fields_named_like_view_attributes_differentiate_as_fields():
    p = _views()
    for grads in _calls(f_views, ("p", "x"), (p, X)):
        _assert_record_grad(grads[0], f_views, (p, X), 0)
        np.testing.assert_allclose(grads[1], numerical_grad(f_views, (p, X), 1), rtol=1e-5, atol=1e-7)
    value, (dp, _) = s2sad.value_and_grad(f_views, wrt=("p", "x"))(p, X)
    assert value == pytest.approx(f_views(p, X))
    _assert_record_grad(dp, f_views, (p, X), 0)


def test_typing_namedtuple_field_T_holding_a_matrix():
    def f(p, x):
        return np.sum(np.sin(p.T @ x) * p.b)
    p = Transposed(RNG.normal(size=(2, 3)), 1.5)
    for dp in _calls(f, "p", (p, X)):
        _assert_record_grad(dp, f, (p, X), 0)


def test_one_generic_code_serves_an_array_and_a_record_receiver():
    def f(a, x):
        return np.sum(a.T @ x) + np.sum(a.real * 3.0) + np.sum(x * a.imag)
    rec = Parts(RNG.normal(size=(3, 3)), RNG.normal(size=3), RNG.normal(size=3))
    arr = RNG.normal(size=(3, 3))
    g = s2sad.grad(f, wrt="a", specialize=False)
    np.testing.assert_allclose(g(arr, X), numerical_grad(f, (arr, X), 0), rtol=1e-5, atol=1e-7)
    dp = g(rec, X)
    assert type(dp) is Parts
    for i, field in enumerate(("T", "real", "imag")):
        def at(value, field=field):
            return f(rec._replace(**{field: value}), X)
        np.testing.assert_allclose(getattr(dp, field), numerical_grad(at, [rec[i]], 0), rtol=1e-5, atol=1e-7)


def test_records_in_a_list_and_a_record_in_a_record():
    def f(ps, x):
        return np.sum(ps[0].T * x) + np.sum(ps[1].T.T @ x)
    inner = Transposed(RNG.normal(size=(2, 3)), 0.5)
    ps = [Transposed(RNG.normal(size=3), 2.0), Transposed(inner, 1.0)]
    for dps in _calls(f, "ps", (ps, X)):
        np.testing.assert_allclose(dps[0].T, X)
        np.testing.assert_allclose(dps[1].T.T, np.tile(X, (2, 1)))
        assert dps[0].b == 0.0 and dps[1].b == 0.0 and dps[1].T.b == 0.0


def test_fields_named_like_attributes_without_a_rule():
    def f(p, x):
        return np.sum(p.data * x) + np.sum(p.flat ** 2) + np.sum(np.exp(p.base))
    p = Buffers(RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3))
    for dp in _calls(f, "p", (p, X)):
        _assert_record_grad(dp, f, (p, X), 0)


@pytest.mark.parametrize("record", [Sized(np.ones(3), np.ones(3)), Counted(np.ones(3), 2.0),
                                    Typed(np.ones(3))])
def test_a_field_named_like_an_attribute_without_gradient_is_refused(record):
    field = next(n for n in record._fields if n in ("shape", "size", "dtype"))
    f = make_function(f"def f(p, x):\n    return np.sum(p.{field} * x) + np.sum(p[0] ** 2)\n", {"np": np})
    g = s2sad.grad(f, wrt=("p", "x"))
    message = f"field '{field}'.*rename the field"
    for _ in range(2):  # the generic code, then the specialised
        with pytest.raises(s2sad.NonDifferentiableInputError, match=message):
            g(record, X)
    with pytest.raises(s2sad.NonDifferentiableInputError, match=message):
        s2sad.jvp(f, wrt="p")(record, X, record)
    with pytest.raises(s2sad.NonDifferentiableInputError, match=message):
        s2sad.vjp(f, wrt="p")(record, X)


def test_forward_mode_and_hvp_through_a_field_named_T():
    p = _views()
    t = Views(*(RNG.normal(size=np.shape(a)) for a in p))
    eps = 1e-6
    plus = Views(*(a + eps * b for a, b in zip(p, t)))
    minus = Views(*(a - eps * b for a, b in zip(p, t)))
    _, tangent = s2sad.jvp(f_views, wrt="p")(p, X, t)
    assert tangent == pytest.approx((f_views(plus, X) - f_views(minus, X)) / (2 * eps), rel=1e-6)
    _, pullback = s2sad.vjp(f_views, wrt="p")(p, X)
    _assert_record_grad(pullback(1.0), f_views, (p, X), 0)
    v = RNG.normal(size=3)
    hv = s2sad.hvp(f_views, wrt="x")(p, X, v)
    grad_x = s2sad.grad(f_views, wrt="x")
    want = (grad_x(p, X + eps * v) - grad_x(p, X - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hv, want, rtol=1e-5, atol=1e-6)


def test_array_attributes_and_objects_beside_a_record():
    """x.T, x.real and x.shape of an array, self.T of a plain object, and a record's T."""
    holder = Holder(RNG.normal(size=(3, 3)), RNG.normal(size=3))

    def f(x, y, p):
        n = x.shape[0]
        return np.sum(x.T @ y) / n + np.sum(x.real ** 2) + holder.loss(y) + np.sum(p.T @ y) * p.b
    x, y = RNG.normal(size=(3, 3)), RNG.normal(size=3)
    p = Transposed(RNG.normal(size=(2, 3)), 1.5)
    for dx, dy, dp in _calls(f, ("x", "y", "p"), (x, y, p)):
        np.testing.assert_allclose(dx, numerical_grad(f, (x, y, p), 0), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(dy, numerical_grad(f, (x, y, p), 1), rtol=1e-5, atol=1e-7)
        _assert_record_grad(dp, f, (x, y, p), 2)
    np.testing.assert_allclose(s2sad.grad(holder.loss)(y), numerical_grad(holder.loss, (y,), 0), rtol=1e-5)


def test_jit_compiles_an_array_parameter_attribute_and_falls_back_for_a_record():
    pytest.importorskip("numba")

    def f(x, p):
        return np.sum(x.T @ p.b) + np.sum(x.real ** 2) + np.sum(p.T * p.b)

    def g(x, y):
        return np.sum(x.T @ y) + np.sum(x.real ** 2) + np.sum(x.imag)
    x, y = RNG.normal(size=(3, 3)), RNG.normal(size=3)
    np.testing.assert_allclose(s2sad.grad(g, wrt="x", jit=True)(x, y), numerical_grad(g, (x, y), 0),
                               rtol=1e-5, atol=1e-7)
    p = Transposed(RNG.normal(size=3), RNG.normal(size=3))
    with pytest.warns(s2sad.JitWarning):
        dx, dp = s2sad.grad(f, wrt=("x", "p"), jit="auto")(x, p)
    np.testing.assert_allclose(dx, numerical_grad(f, (x, p), 0), rtol=1e-5, atol=1e-7)
    _assert_record_grad(dp, f, (x, p), 1)
