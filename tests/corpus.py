"""A corpus of small differentiable Python/NumPy functions, each with the inputs it is checked at.

Every function returns a float scalar.  ``@case(spec, ...)`` records the
function with one way of building its arguments (one spec per positional
argument; trailing parameters with defaults may be left out) from a seeded
``numpy.random.Generator`` (seeded by the case id); a function may carry
several ``@case`` decorators, for instance one per branch of a data-dependent
``if``.  tests/test_corpus.py checks the gradient of every float argument of
every case against central finite differences.

``section(name)`` groups the functions that follow: straight-line, stop_gradient,
control-flow, classic (programs known to break older tools) and pending
(constructs being implemented: calls, containers, ``x[i] = v``, constructors).

Argument specs:

- a tuple of ints: a float64 array of that shape drawn from the case's ``domain``;
- ``Arr(shape, domain=..., scale=..., shift=...)``: the same with its own domain,
  multiplied by ``scale`` and shifted by ``shift``;
- ``Tup(...)``, ``Lst(...)``, ``Dct(key=...)``: a tuple, list or dict of specs;
- a callable: called with the generator;
- anything else (a Python float or int, a fixed array): used as given (copied).

Domains: ``normal`` N(0, 1); ``positive`` U(0.5, 2); ``unit`` U(-0.9, 0.9);
``away`` +-U(0.3, 2) (away from the kink of abs/relu at 0); ``prob``
U(0.1, 0.9); ``sign`` +-1.

``when`` is a predicate of the arguments saying which branch the inputs are meant
to take; the tests assert it, so that a case cannot silently test the other branch.
``zero`` names arguments that reach the output only through ``stop_gradient``
(their gradient is zeros, and s2sad warns).

``xfail`` marks a case that fails today, with the reason: ``raises`` is the
exception the check ends with (an ``S2SADError`` when s2sad rejects the
construct, ``AssertionError`` for a wrong gradient) and ``match`` a regular
expression the s2sad error message must contain.  Reasons that start with
"BUG:" are wrong results for constructs s2sad claims to support.

Finite differences treat ``stop_gradient`` as the identity; the tests hold its
output fixed at its value at the unperturbed point instead (they replay it), so
these functions must call ``stop_gradient`` by this module's global name.
"""
from __future__ import annotations

import inspect
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from s2sad import S2SADError, ZeroGradientWarning, stop_gradient

# --- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arr:
    """A float64 array of ``shape`` from ``domain`` (the case's if None), times ``scale``, plus ``shift``."""

    shape: tuple[int, ...]
    domain: str | None = None
    scale: float = 1.0
    shift: float = 0.0


class Tup(tuple):
    """A tuple argument: ``Tup(spec, spec, ...)``."""

    def __new__(cls, *specs: Any) -> "Tup":
        return super().__new__(cls, specs)


class Lst(tuple):
    """A list argument: ``Lst(spec, spec, ...)``."""

    def __new__(cls, *specs: Any) -> "Lst":
        return super().__new__(cls, specs)


class Dct(dict):
    """A dict argument with string keys: ``Dct(W=spec, b=spec)``."""


def _sign(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.choice([-1.0, 1.0], size=shape)


DOMAINS: dict[str, Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]] = {
    "normal": lambda rng, shape: rng.normal(size=shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, size=shape),
    "unit": lambda rng, shape: rng.uniform(-0.9, 0.9, size=shape),
    "away": lambda rng, shape: _sign(rng, shape) * rng.uniform(0.3, 2.0, size=shape),
    "prob": lambda rng, shape: rng.uniform(0.1, 0.9, size=shape),
    "sign": _sign,
}


def build(spec: Any, rng: np.random.Generator, domain: str) -> Any:
    """The argument value described by ``spec``."""
    if isinstance(spec, Arr):
        value = DOMAINS[spec.domain or domain](rng, tuple(spec.shape))
        return np.asarray(value * spec.scale + spec.shift, dtype=np.float64)
    if isinstance(spec, Tup):
        return tuple(build(s, rng, domain) for s in spec)
    if isinstance(spec, Lst):
        return [build(s, rng, domain) for s in spec]
    if isinstance(spec, Dct):
        return {k: build(s, rng, domain) for k, s in spec.items()}
    if isinstance(spec, tuple) and all(isinstance(n, int) for n in spec):
        return build(Arr(spec), rng, domain)
    if callable(spec):
        return spec(rng)
    if isinstance(spec, np.ndarray):
        return spec.copy()
    if isinstance(spec, (bool, int, float, str)) or spec is None:
        return spec
    raise TypeError(f"not an argument spec: {spec!r}")


def has_float(value: Any) -> bool:
    """Whether ``value`` is a float, a float array, or a container holding one."""
    if isinstance(value, (tuple, list)):
        return any(has_float(v) for v in value)
    if isinstance(value, dict):
        return any(has_float(v) for v in value.values())
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (float, np.floating)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


@dataclass(frozen=True)
class Case:
    fn: Callable[..., Any]
    specs: tuple[Any, ...]
    group: str
    domain: str = "normal"
    label: str = ""
    seed: int | None = None
    when: Callable[..., bool] | None = None
    zero: tuple[str, ...] = ()
    xfail: str | None = None
    raises: type[BaseException] | tuple[type[BaseException], ...] = S2SADError
    match: str | None = None

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def id(self) -> str:
        return f"{self.name}-{self.label}" if self.label else self.name

    @property
    def params(self) -> list[str]:
        return list(inspect.signature(self.fn).parameters)

    def inputs(self) -> tuple[Any, ...]:
        """The arguments, built afresh from the case's seed (the same every time)."""
        seed = zlib.crc32(self.id.encode()) if self.seed is None else self.seed
        rng = np.random.default_rng(seed)
        return tuple(build(spec, rng, self.domain) for spec in self.specs)

    def wrt(self, args: tuple[Any, ...] | None = None) -> tuple[int, ...]:
        """Indices of every argument that is, or holds, a float."""
        args = self.inputs() if args is None else args
        return tuple(i for i, a in enumerate(args) if has_float(a))


CASES: list[Case] = []
_group = ""


def section(name: str) -> None:
    """Cases defined after this belong to group ``name``."""
    global _group
    _group = name


Raises = type[BaseException] | tuple[type[BaseException], ...]


def case(*specs: Any, domain: str = "normal", label: str = "", seed: int | None = None,
         when: Callable[..., bool] | None = None, zero: tuple[str, ...] = (), xfail: str | None = None,
         raises: Raises = S2SADError, match: str | None = None) -> Callable[[Any], Any]:
    """Record the decorated function with one set of inputs (see the module docstring)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        CASES.append(Case(fn, specs, _group, domain, label, seed, when, tuple(zero), xfail, raises, match))
        return fn

    return register


def functions() -> list[Callable[..., Any]]:
    """Every corpus function once, in definition order."""
    return list({c.fn: None for c in CASES})


def _onehot(rows: int, classes: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: np.eye(classes)[rng.integers(0, classes, size=rows)]


# Reasons shared by several cases that fail today (see tests/test_corpus.py).
SHARED = "in-place update of a value shared with another name or a container"


# ================================================================================================
section("straight-line")
# ================================================================================================


@case(0.7)
@case(-1.3, label="negative")
def scalar_polynomial(x):
    return x ** 3 - 2.0 * x ** 2 + np.sin(x) * x + 1.0


@case((3, 4), (4,))
def bias_broadcast(x, b):
    y = x + b
    return np.sum(y ** 2)


@case((3, 4), (3, 1))
def column_scale(x, c):
    return np.sum(np.tanh(x * c))


@case((2, 3, 4), (3, 1))
def broadcast_3d(x, w):
    return np.mean(np.exp(0.5 * x) * w)


@case((5, 3))
def center_columns(x):
    xc = x - np.mean(x, axis=0, keepdims=True)
    return np.sum(xc ** 2) / x.shape[0]


@case((4, 5))
def row_sum_range(x):
    s = np.sum(x, axis=1)
    return np.max(s) - np.min(s)


@case((3, 4), domain="positive")
def row_entropy(x):
    p = x / x.sum(axis=1, keepdims=True)
    return -np.sum(p * np.log(p))


@case((3, 4), (4,))
def matvec_tanh(A, x):
    return np.sum(np.tanh(A @ x))


@case((3, 4), (4, 2))
def matmul_frobenius(A, B):
    C = A @ B
    return np.sum(C * C)


@case((3, 4), (4, 3))
def trace_of_product(A, B):
    return np.sum(np.matmul(A, B) * np.eye(3))


@case((3, 4))
def first_and_last_row(x):
    return np.sum(x[0, :] ** 2) + np.sum(x[-1] * 2.0)


@case((3, 5))
def column_slice(x):
    return np.sum(np.exp(x[:, 1:3]))


@case((6,))
def reversed_product(x):
    return np.sum(x * x[::-1])


@case((5,), np.array([0, 2, 2, 4, 1]))
def gather_with_repeats(x, idx):
    return np.sum(x[idx] ** 2 * np.arange(1, 6))


@case((4,), (3,))
def outer_via_newaxis(x, y):
    return np.sum(np.sin(x[None, :] * y[:, None]))


@case((3, 4))
def array_methods(x):
    return x.sum() + (x.T @ x).mean() + x.reshape(2, 6)[1].sum() + x.mean(axis=0).max()


@case((5,))
def exp_sum_method(x):
    return np.exp(x).sum()


@case((4,), (4,))
def reassigned(x, w):
    h = x * w
    h = np.tanh(h)
    h = h * w + x
    h = h ** 2
    return h.sum()


@case((4,), (4,))
def augmented_assignment(x, y):
    s = x * 2.0
    s += y
    s *= x
    s -= 1.0
    s /= 2.0
    s **= 2
    return np.sum(s)


@case((3,), (3,))
def tuple_swap(x, y):
    a, b = x, y
    a, b = b, a * 2.0
    return np.sum(a * np.exp(b))


@case((3, 4))
def shape_unpack(x):
    rows, cols = x.shape
    return np.sum(x ** 2) / (rows * cols) + x.ndim


@case((4,), (4,))
def chained_assignment(x, y):
    a = b = x * y
    return np.sum(a * b + a)


@case((6, 3), (3,), Arr((6,), domain="sign"))
def logistic_regression(X, w, y):
    z = X @ w
    return np.mean(np.log(1.0 + np.exp(-y * z)))


@case((8, 3), (3,), (8,), 0.1)
def ridge(X, w, y, lam):
    r = X @ w - y
    return np.mean(r ** 2) + lam * np.sum(w ** 2)


@case((3, 6), (6,), (6,))
def layer_norm(x, gamma, beta):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    xhat = (x - mu) / np.sqrt(var + 1e-5)
    return np.sum((gamma * xhat + beta) ** 2 * np.arange(6))


@case((5,), (5,))
def cosine_similarity(a, b):
    num = np.dot(a, b)
    den = np.sqrt(np.sum(a * a)) * np.sqrt(np.sum(b * b))
    return num / den


@case((6,), (6,), domain="normal")
def huber(pred, target):
    r = pred - target
    quad = 0.5 * r ** 2
    lin = np.abs(r) - 0.5
    return np.sum(np.where(np.abs(r) < 1.0, quad, lin))


@case((3, 4), (4, 2))
def relu_layer(x, W):
    h = np.maximum(x @ W, 0.0)
    return np.sum(h ** 2) + np.sum(h)


@case((6,))
def clipped(x):
    return np.sum(np.clip(2.0 * x, -1.0, 1.0) ** 2 + x)


@case((6,), domain="away")
def l1_plus_l2(x):
    return np.sum(np.abs(x)) + 0.5 * np.sum(x ** 2)


@case((5,), Arr((5,), domain="prob"))
def sigmoid_bce(z, y):
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


@case((5,), (5,), Arr((5,), domain="unit"))
def gaussian_nll(x, mu, log_sigma):
    z = (x - mu) / np.exp(log_sigma)
    return np.sum(0.5 * z ** 2 + log_sigma) + 0.5 * np.log(2 * np.pi) * x.size


@case((3,), (4,), (3, 4))
def outer_weighted(a, b, W):
    return np.sum(np.outer(a, b) * W)


@case((4,), (4,))
def dot_method(x, y):
    return x.dot(y) * np.dot(x, x)


@case((5,), domain="positive")
def elementwise_mix(x):
    return np.sum(np.sqrt(x) + np.log(x) * np.cos(x) - np.tan(0.3 * x) + np.square(x))


@case(Arr((4,), domain="positive"), 1.7)
def power_base_and_exponent(x, p):
    return np.sum(x ** p) + np.sum(p ** x)


@case((3,))
def expand_and_squeeze(x):
    y = np.expand_dims(x, 0)
    z = np.squeeze(y * 2.0, axis=0)
    return np.sum(z ** 3) + np.sum(y.squeeze() * x)


@case((2, 3, 4))
def transpose_axes(x):
    y = np.transpose(x, (2, 0, 1))
    return np.sum(y * np.arange(24).reshape(4, 2, 3)) + np.sum(x.transpose(1, 0, 2)[0] ** 2)


@case((3, 4))
def ravel_and_flatten(x):
    a = np.sum(np.ravel(x) * np.arange(12)) + np.sum(x.flatten() ** 2)
    return a + np.sum(x.ravel()[::2]) + np.sum(np.reshape(x, (4, 3))[0] ** 3)


@case((5,), (5,))
def elementwise_minimum(x, y):
    return np.sum(np.minimum(x, y) ** 2)


@case(0.4, (3,))
def float_builtin(a, x):
    s = float(np.sum(x))
    return a * s + float(a ** 2)


@case((4, 3), (4, 3), (4, 2))
def attention(Q, K, V):
    s = Q @ K.T / np.sqrt(3.0)
    s = s - stop_gradient(s.max(axis=1, keepdims=True))
    a = np.exp(s)
    a = a / a.sum(axis=1, keepdims=True)
    return np.sum((a @ V) ** 2)


@case((4, 5))
def max_min_methods(x):
    return np.sum(x.max(axis=1)) - x.min() + np.amax(x, axis=0, keepdims=True).sum()


@case((5,), domain="away")
def mask_as_value(x):
    mask = x > 0.0
    return np.sum(x * mask) + np.sum(x ** 2 * (x <= 0.0))


@case((3, 4))
def ellipsis_and_negative_slices(x):
    return np.sum(x[..., 0] * x[..., -1]) + np.sum(x[1:-1, ::2] ** 2)


@case((4, 3))
def mean_over_axes(x):
    return np.sum(x) / x.shape[0] + np.mean(x ** 2, axis=(0, 1))


@case((2, 4), (4, 3), (3,), (3, 1), (1,), (2, 1))
def mlp(x, W1, b1, W2, b2, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return 0.5 * np.sum((out - y) ** 2) / x.shape[0]


@case(Arr((5,), domain="positive", shift=0.1))
def modulo_and_floor(x):
    frac = x % 1.0
    return np.sum(frac ** 2 + np.floor(x) * x)


@case((4, 5), _onehot(4, 5))
def softmax_cross_entropy(logits, labels):
    z = logits - stop_gradient(np.max(logits, axis=-1, keepdims=True))
    log_p = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(labels * log_p, axis=-1))


@case((3,), (2, 3), 0.5)
def scalar_times_matrix(a, M, c):
    v = M @ a * c - c ** 2
    return np.sum(-v) + np.sum(+v * v)


@case((5,), 2.5)
def gaussian_energy(x, log_z):
    return 0.5 * np.sum(x ** 2) + log_z


@case((4,), (4,), xfail=SHARED, match="'s' and 't' are the same object, and 't' is read later")
def augmented_assignment_through_alias(x, y):
    s = x * 2.0
    t = s
    s += y
    return np.sum(s * t)


@case((6,), domain="away")
def boolean_mask_read(x):
    return np.sum(x[x > 0] ** 2) - np.sum(x[x < 0])


@case((3, 4), np.array([0, 2, 2]), np.array([1, 3, 1]))
def fancy_index_pairs(x, rows, cols):
    return np.sum(np.exp(x[rows, cols])) + np.sum(x[rows, :] ** 2) + np.sum(x[:, cols] * 0.5)


@case((5,))
def list_and_negative_step_indices(x):
    return np.sum(x[[0, 3]] ** 2) + np.sum(x[4:0:-2] * 3.0) + x[np.argmax(x)]


@case((2, 3, 4), (4, 5), (2, 4, 5), (4,))
def batched_matmul(A, B, C, v):
    return np.sum(np.tanh(A @ B)) + np.sum((A @ C) ** 2) * 0.1 + np.sum(A @ v) + np.sum(v @ C)


@case((1, 3, 4), (2, 4, 2))
def broadcast_batched_matmul(A, B):
    return np.sum(np.sin(A @ B))


@case((2, 3, 4), (4, 5), (3,), (2, 3, 4))
def dot_higher_rank(A, B, a, C):
    return np.sum(np.dot(A, B) ** 2) + np.sum(np.dot(a, C) * 0.5)


@case((2, 3, 4))
def reshape_and_transpose_forms(x):
    a = x.reshape(-1)
    b = x.reshape((6, -1))
    c = np.reshape(x, (4, 6))
    d = x.transpose() + 0.0
    e = x.transpose((1, 0, 2))
    return np.sum(a * np.arange(24)) + np.sum(b[1] ** 2) + np.sum(c[:, 0] ** 3) + np.sum(d[:, :, 0] * e[:, 0, :].T)


@case((3, 1, 4))
def squeeze_expand_forms(x):
    a = np.squeeze(x)
    b = np.expand_dims(a, (0, 2))
    c = x.squeeze(axis=1)
    return np.sum(a ** 2) + np.sum(b * 3.0) + np.sum(np.sin(c))


@case((8,))
def clip_one_sided(x):
    return np.sum(np.clip(x, None, 0.5) ** 2) + np.sum(x.clip(min=-0.5, max=1.0)) + np.sum(np.clip(x, -1.0, None))


@case((3, 4))
def positional_axis_arguments(x):
    return np.sum(np.sum(x, 0) ** 2) + np.sum(np.mean(x, -1) ** 3) + np.sum(np.max(x, 1)) + np.sum(x.sum(1) ** 2)


@case((5,), domain="away")
def builtin_abs_and_unary(x):
    return np.sum(abs(x)) - x.sum() + np.sum(-x ** 2) + np.sum(+x * 2.0) - -np.sum(x)


@case((4,), domain="positive")
def reflected_operators(x):
    return np.sum(1.0 / x + 2.0 ** x + 3.0 - x + x ** -2 + x ** 0.5)


@case((4,))
def scalar_elements(x):
    return x[0] * x[1] + x[2] ** 2 - x[3]


@case((3, 3))
def quadratic_form(A):
    v = np.arange(3.0)
    return v @ A @ v + np.sum(A @ A.T)


_SCALE = np.array([0.5, -1.0, 2.0])


@case((3,))
def reads_global_array(x):
    return np.sum((x * _SCALE) ** 2)


@case((3,))
def default_parameter_not_passed(x, scale=2.0, power=3):
    return np.sum((x * scale) ** power)


@case((3, 4), (4,))
def annotated_parameters(x: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(np.tanh(x @ w)))


@case((3,))
def docstring_and_comments(x):
    """A docstring, comments and blank lines in the body."""
    # a comment

    y = x * 2.0  # trailing comment
    pass
    return np.sum(y ** 2)


@case((3,))
def annotated_assignment(x):
    y: np.ndarray = np.exp(x)
    return np.sum(y)


@case((2, 3))
def assert_statement(x):
    assert x.ndim == 2, "expects a matrix"
    return np.sum(x ** 2)


@case((3,))
def parameter_reassigned(x):
    x = x * 2.0
    x = np.sin(x)
    return np.sum(x)


@case((2, 3, 4))
def reductions_over_tuple_axes(x):
    a = np.max(x, axis=(0, 2))
    b = x.min(axis=(1, 2), keepdims=True)
    c = np.mean(x, axis=(0, -1), keepdims=True)
    d = np.sum(x, axis=-2)
    e = x.sum(axis=None, keepdims=True)
    return np.sum(a ** 2) + np.sum(b * 3.0) + np.sum(c ** 2) + np.sum(d ** 3) * 0.1 + np.sum(e) ** 2 * 0.01


@case((3, 4))
def index_combinations(x):
    a = x[..., None]
    b = x[:, None, 1:]
    c = x[::-1, ::2]
    d = x[np.array([[0, 1], [1, 2]])]
    return np.sum(a ** 2) + np.sum(b * 2.0) + np.sum(c ** 3) + np.sum(d * np.arange(4.0)) + np.sum(x[-1:])


@case((3,), (2, 2))
def dot_with_scalar_and_outer_of_matrix(x, A):
    return np.sum(np.dot(2.0, x)) + np.sum(np.outer(A, x) ** 2) + np.sum(np.dot(A, A.T))


# ================================================================================================
section("stop_gradient")
# ================================================================================================


@case((4, 5))
def stable_logsumexp(x):
    m = stop_gradient(np.max(x, axis=1, keepdims=True))
    return np.sum(m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)))


@case(Arr((6,), scale=2.0))
def straight_through_round(x):
    q = x + stop_gradient(np.round(x * 4.0) / 4.0 - x)
    return np.sum(q ** 2)


@case((5,))
def x_times_stopped_x(x):
    return np.sum(x * stop_gradient(x)) + np.sum(x)


@case((4,), (4,), 0.9, zero=("q_next", "gamma"))
def td_error(q, q_next, gamma):
    target = stop_gradient(1.0 + gamma * np.max(q_next))
    return np.sum((q - target) ** 2)


@case((6,), (6,))
def reinforce_baseline(logp, reward):
    advantage = reward - stop_gradient(np.mean(reward))
    return -np.sum(stop_gradient(advantage) * logp) + 0.1 * np.sum(advantage ** 2)


@case((5,))
def normalize_by_stopped_norm(x):
    return np.sum(x / stop_gradient(np.linalg.norm(x)) * np.arange(5))


@case((3, 4), (4,))
def stopped_tuple_unpack(x, w):
    a, b = stop_gradient((x @ w, w * 2.0))
    return np.sum(a * (x @ w)) + np.sum(b * w)


@case((5,), (5,))
def stop_in_middle_of_chain(x, w):
    h = np.tanh(x * w)
    frozen = stop_gradient(h * 2.0)
    out = h * frozen + np.exp(stop_gradient(w) * x)
    return np.sum(out)


@case((4,))
def stop_gradient_on_scalar_reduction(x):
    scale = stop_gradient(np.sum(x ** 2))
    return np.sum(x ** 3) / scale + scale * np.sum(x)


@case((5,), (5,))
def ema_target_network(online, target):
    pred = np.tanh(online)
    goal = stop_gradient(np.tanh(0.99 * target + 0.01 * online))
    return np.sum((pred - goal) ** 2) + 0.01 * np.sum(target ** 2)


@case((4,))
def reassign_through_stop_gradient(x):
    h = np.tanh(x)
    h = stop_gradient(h) * h
    return np.sum(h)


@case(Arr((3, 3), scale=0.5), (3,), (12, 3))
def truncated_bptt(W, b, xs):
    h = np.zeros(3)
    for t in range(xs.shape[0]):
        if t % 4 == 0:
            h = stop_gradient(h)
        h = np.tanh(W @ h + xs[t] + b)
    return np.sum(h ** 2)


@case((5,))
def stop_gradient_in_conditional_expression(x):
    c = stop_gradient(np.mean(x)) if np.sum(x) > 0 else np.mean(x)
    return np.sum((x - c) ** 2)


@case((3,), domain="positive")
def stop_gradient_in_loop_condition(x):
    h = x
    while stop_gradient(np.sum(h)) < 20.0:
        h = h * 1.5
    return np.sum(h ** 2)


# ================================================================================================
section("control-flow")
# ================================================================================================


@case(Arr((5,), shift=1.0), label="positive", when=lambda x: np.sum(x) > 0.5)
@case(Arr((5,), shift=-1.0), label="negative", when=lambda x: np.sum(x) < -0.5)
def if_else_on_sum(x):
    if np.sum(x) > 0:
        y = np.tanh(x) * 2.0
    else:
        y = x ** 2
    return np.sum(y * x)


@case(Arr((4,), shift=2.5), label="high", when=lambda x: np.mean(x) > 1.2)
@case(Arr((4,), shift=-2.5), label="low", when=lambda x: np.mean(x) < -1.2)
@case(Arr((4,), scale=0.3), label="middle", when=lambda x: abs(np.mean(x)) < 0.8)
def if_elif_else(x):
    m = np.mean(x)
    if m > 1.0:
        y = np.sum(np.exp(-x))
    elif m < -1.0:
        y = np.sum(x ** 3)
    else:
        y = np.sum(np.sin(x)) * m
    return y * 2.0


_NESTED_W = np.array([1.0, 0.5, 0.2])


@case(np.array([1.5, 0.2, -0.3]), _NESTED_W, label="outer-inner", when=lambda x, w: x @ w > 0 and x.max() > 1)
@case(np.array([0.5, 0.2, -0.3]), _NESTED_W, label="outer-only", when=lambda x, w: x @ w > 0 and x.max() < 1)
@case(np.array([-1.5, 0.2, -0.3]), _NESTED_W, label="else", when=lambda x, w: x @ w < 0)
def nested_if(x, w):
    s = np.dot(x, w)
    if s > 0:
        if np.max(x) > 1.0:
            out = s * np.sum(x)
        else:
            out = s ** 2
    else:
        out = -s + np.sum(w ** 2)
    return out


@case(Arr((4,), shift=2.0), 0.3, label="true", when=lambda x, a: np.mean(x) > 0.3)
@case(Arr((4,), shift=-2.0), 0.3, label="false", when=lambda x, a: np.mean(x) < -0.3)
def conditional_expression(x, a):
    scale = 2.0 if np.mean(x) > 0 else a
    return np.sum(scale * x ** 2) + a


@case(Arr((4,), scale=3.0, shift=1.0), label="early", when=lambda x: np.sum(x ** 2) > 5.0)
@case(Arr((4,), scale=0.3), label="late", when=lambda x: np.sum(x ** 2) < 3.0)
def early_return(x):
    n = np.sum(x ** 2)
    if n > 4.0:
        return np.sqrt(n)
    y = x * 0.5
    return np.sum(y ** 2)


@case(-2.0, label="left")
@case(0.3, label="middle")
@case(1.7, label="right")
def piecewise_early_returns(x):
    if x < -1.0:
        return -x - 0.5
    elif x < 1.0:
        return 0.5 * x ** 2
    return x - 0.5


@case(1.5, (3,), label="big", when=lambda x, y: x > 1.0)
@case(0.4, (3,), label="small", when=lambda x, y: x < 1.0)
def if_on_float_parameter(x, y):
    if x > 1.0:
        z = y * x
    else:
        z = y / (1.0 + x ** 2)
    return np.sum(z ** 2)


@case(Arr((5,), scale=0.5), 4)
def for_range_accumulate(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sum(x ** (i + 1)) / (i + 1)
    return s


@case((4, 3), (3,))
def for_over_rows(X, w):
    total = 0.0
    for row in X:
        total = total + np.tanh(np.dot(row, w)) ** 2
    return total


@case((5,))
def enumerate_weights(x):
    s = 0.0
    for i, v in enumerate(x):
        s = s + (i + 1) * v ** 2
    return s


@case((4,), (4,))
def zip_pairs(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s = s + a * np.exp(b)
    return s


@case((3,))
def while_counter(x):
    i = 0
    h = x
    while i < 5:
        h = np.sin(h) + x
        i = i + 1
    return np.sum(h)


@case((3,), domain="positive", label="few-steps", when=lambda x: 20 < np.sum(x ** 2) * 1.7 ** 2 < 100)
@case(Arr((3,), domain="positive", scale=0.3), label="many-steps", when=lambda x: np.sum(x ** 2) < 2.0)
def while_data_dependent(x):
    s = np.sum(x ** 2)
    n = 0
    while s < 100.0:
        s = s * 1.7
        n += 1
    return s + n


@case(Arr((6,), domain="positive"), label="breaks", when=lambda x: np.sum(x[:-1] ** 2) > 2.5)
@case(Arr((6,), domain="positive", scale=0.1), label="runs-through", when=lambda x: np.sum(x ** 2) < 1.5)
def break_on_threshold(x):
    s = 0.0
    for i in range(len(x)):
        if s > 2.0:
            break
        s = s + x[i] ** 2
    return s


@case((6,), domain="away")
def continue_on_negative(x):
    s = 0.0
    for v in x:
        if v < 0:
            continue
        s = s + np.log(1.0 + v)
    return s


@case((6,), domain="away")
def if_in_loop_writes_different_values(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s + x[i] ** 2
        else:
            s = s - np.sin(x[i])
    return s


@case((3, 4), (5, 4))
def loop_body_only_reads(W, xs):
    total = 0.0
    for i in range(xs.shape[0]):
        total = total + np.sum(np.tanh(W @ xs[i]))
    return total


@case((6,), (3,), (6, 3), 0.1)
def unrolled_gradient_descent(y, w0, X, lr):
    w = w0
    for k in range(10):
        g = X.T @ (X @ w - y) / X.shape[0]
        w = w - lr * g
    return np.sum((X @ w - y) ** 2)


@case((4,), domain="positive")
def newton_sqrt(a):
    y = a
    for k in range(6):
        y = 0.5 * (y + a / y)
    return np.sum(y * np.arange(1, 5))


@case((3,), 0.7)
def euler_integration(y0, k):
    y = y0
    dt = 0.05
    for t in range(40):
        y = y + dt * (-k * y + np.sin(y))
    return np.sum(y ** 2)


@case((5,), 0.8)
def horner(coeffs, x):
    acc = 0.0
    for c in coeffs:
        acc = acc * x + c
    return acc


@case((5,), domain="away")
def cumulative_product(x):
    p = 1.0
    for v in x:
        p = p * v
    return p


@case((6,))
def running_max(x):
    m = x[0]
    for v in x:
        if v > m:
            m = v
    return m * 2.0 + np.sum(x)


@case((3,))
def while_true_break(x):
    h = x
    i = 0
    while True:
        h = np.tanh(h * 1.5 + 0.1)
        i += 1
        if i >= 4:
            break
    return np.sum(h * x)


@case((6,), 0.9)
def exponential_moving_average(x, beta):
    m = 0.0
    for v in x:
        m = beta * m + (1.0 - beta) * v
    return m ** 2


@case((6,))
def stepped_range(x):
    s = 0.0
    for i in range(0, x.shape[0], 2):
        s = s + x[i] * x[i + 1]
    return s


@case((5,))
def reversed_range(x):
    acc = 0.0
    for i in range(x.shape[0] - 1, -1, -1):
        acc = acc * 0.5 + x[i] ** 2
    return acc


@case((4,))
def if_on_loop_index(x):
    s = 0.0
    for i in range(6):
        if i % 2 == 0:
            s = s + np.sum(x) * i
        else:
            s = s * np.mean(x ** 2)
    return s


@case((3, 5), domain="normal")
def nested_loops_inner_break(A):
    total = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] < -0.8:
                break
            total = total + A[i, j] ** 2
    return total


@case((4, 3), (4,))
def enumerate_rows(X, w):
    s = 0.0
    for i, row in enumerate(X):
        s = s + w[i] * np.sum(row ** 2)
    return s


@case((3, 4), (3, 4))
def zip_rows(X, Y):
    s = 0.0
    for a, b in zip(X, Y):
        s = s + np.dot(a, b) ** 2
    return s


@case((2, 3), (4, 3))
def matmul_in_row_loop(W, X):
    out = 0.0
    for row in X:
        h = W @ row
        out = out + np.sum(np.exp(-h ** 2))
    return out


@case((3, 4))
def float_accumulate_augmented(x):
    total = 0.0
    for i in range(3):
        total += float(np.sum(x[i] ** 2))
    return total


@case((3,), domain="positive")
def while_array_condition(x):
    y = x
    while y[0] < 5.0:
        y = y * 1.3 + 0.1
    return np.sum(y)


@case((4,))
def stop_gradient_in_loop(x):
    s = 0.0
    for i in range(3):
        c = stop_gradient(np.mean(x) * i)
        s = s + np.sum((x - c) ** 2)
    return s


@case(Arr((4,), shift=1.0), label="stopped", when=lambda x: np.sum(x) > 0.5)
@case(Arr((4,), shift=-1.0), label="plain", when=lambda x: np.sum(x) < -0.5)
def stop_gradient_in_branch(x):
    if np.sum(x) > 0:
        y = x * stop_gradient(x)
    else:
        y = x ** 2
    return np.sum(y)


@case((6,), domain="away")
def while_with_continue(x):
    i = 0
    s = 0.0
    while i < x.shape[0]:
        i = i + 1
        if x[i - 1] < 0:
            continue
        s = s + x[i - 1] ** 3
    return s


@case((3,), (3,))
def loop_overwrites_needed_value(x, w):
    h = x
    for i in range(5):
        h = np.tanh(h * w) + h
    return np.sum(h)


@case(Arr((3,), shift=0.5), label="mixed")
def loop_branch_switches(y0):
    y = y0
    for k in range(4):
        if np.sum(y) > 0:
            y = y * 0.5 - 0.4
        else:
            y = np.exp(y) - 0.2
    return np.sum(y ** 2)


@case((6,), domain="away")
def conditional_expression_in_loop(x):
    s = 0.0
    for v in x:
        s = s + (v ** 2 if v > 0 else -v)
    return s


@case(Arr((5,), scale=0.5))
def loop_then_early_return(x):
    h = x
    for i in range(3):
        h = np.tanh(h) + x
    if np.sum(h) > 100.0:
        return 0.0 * np.sum(h)
    return np.sum(h ** 2)


@case((4,), (4,))
def while_countdown_two_variables(x, y):
    n = 3
    a = x
    b = y
    while n > 0:
        a, b = b * 0.5, a + np.sin(b)
        n -= 1
    return np.sum(a * b)


@case(Arr((4,), shift=2.0), label="positive", when=lambda x: np.sum(x) > 1.0)
@case(Arr((4,), shift=-2.0), label="negative", when=lambda x: np.sum(x) < -1.0)
def hinge_returns_constant(x):
    if np.sum(x) < 0:
        return 0.0
    return np.sum(x ** 2)


@case(Arr((4,), shift=2.0), label="positive", when=lambda x: np.sum(x) > 1.0)
@case(Arr((4,), shift=-2.0), label="negative", when=lambda x: np.sum(x) < -1.0)
def branch_ignores_argument(x, w=None):
    if np.sum(x) > 0:
        y = np.sum(x ** 3)
    else:
        y = 1.5
    return y * 2.0


@case(Arr((4,), scale=3.0), label="clipped", when=lambda g: np.sqrt(np.sum(g ** 2)) > 1.5)
@case(Arr((4,), scale=0.1), label="unclipped", when=lambda g: np.sqrt(np.sum(g ** 2)) < 0.5)
def clip_by_norm(g):
    n = np.sqrt(np.sum(g ** 2))
    if n > 1.0:
        g = g / n
    return np.sum(g * np.arange(4.0))


@case(np.array([0.5, 1.5, 0.2]), label="and-true")
@case(np.array([0.5, 3.5, 0.2]), label="and-false")
def boolean_operators_in_condition(x):
    if np.sum(x) > 0 and np.max(x) < 3.0:
        y = x ** 2
    elif not np.min(x) > 0 or np.sum(x) > 100.0:
        y = x * 3.0
    else:
        y = np.exp(x)
    return np.sum(y)


@case(0.5, (3,), label="inside", when=lambda a, x: 0 < a < 1)
@case(1.5, (3,), label="outside", when=lambda a, x: not 0 < a < 1)
def chained_comparison_condition(a, x):
    if 0.0 < a < 1.0:
        s = a * np.sum(x)
    else:
        s = np.sum(x ** 2) / a
    return s


@case((3,), True, label="flag-on")
@case((3,), False, label="flag-off")
def boolean_flag_argument(x, use_tanh):
    if use_tanh:
        h = np.tanh(x)
    else:
        h = x
    return np.sum(h ** 2)


@case((3,))
def both_branches_active_ternary(x):
    y = np.sin(x) if np.sum(x) > 0 else np.cos(x)
    z = x * (2.0 if np.max(x) > 0.5 else 3.0)
    return np.sum(y * z)


@case((3,))
def if_without_else_modifies(x):
    y = x * 1.5
    if np.sum(y) > -100.0:
        y = y * y
    return np.sum(y)


@case(Arr((3,), shift=1.0), label="deep", when=lambda x: np.sum(x) > 0.5 and np.max(x) > 1.0)
@case(np.array([0.2, 0.3, 0.4]), label="shallow")
@case(np.array([-0.2, -0.3, -0.4]), label="fallthrough")
def early_return_in_nested_if(x):
    s = np.sum(x)
    if s > 0:
        if np.max(x) > 1.0:
            return s ** 2
        t = s * 3.0
        return t + np.sum(x ** 2)
    u = np.exp(s)
    return u * np.sum(x)


@case(Arr((3,), domain="positive", scale=10.0), label="zero-steps", when=lambda x: np.sum(x ** 2) > 100)
def while_may_not_run(x):
    s = np.sum(x ** 2)
    while s < 100.0:
        s = s * 1.7
    return s + np.sum(x)


@case((0, 3), (3,))
def loop_over_empty_rows(X, w):
    s = np.sum(w ** 2)
    for row in X:
        s = s + np.dot(row, w)
    return s


@case((4,))
def loop_variable_used_after_loop(x):
    i = 0
    for i in range(3):
        x = np.tanh(x) + 0.1
    return np.sum(x) * i


@case((4, 3), (3,))
def array_accumulator_over_rows(X, w):
    acc = 0.0
    for row in X:
        acc = acc + row * w
    return np.sum(acc ** 2)


@case((6,), domain="away")
def continue_and_break(x):
    s = 0.0
    for v in x:
        if v < -1.5:
            break
        if v < 0:
            continue
        s = s + v ** 2
    return s


@case((3, 4), domain="away")
def outer_break_inner_continue(A):
    total = 0.0
    for i in range(A.shape[0]):
        if total > 6.0:
            break
        for j in range(A.shape[1]):
            if A[i, j] < 0:
                continue
            total = total + A[i, j] ** 2
    return total


@case(Arr((5,), scale=0.3), 0.1)
def hinge_loss_loop(w, c):
    X = np.array([[1.0, 0.5, -0.2, 0.3, 0.0], [-0.3, 1.2, 0.8, -1.0, 0.4], [0.7, -0.6, 0.1, 0.9, -1.1]])
    y = np.array([1.0, -1.0, 1.0])
    loss = c * np.sum(w ** 2)
    for xi, yi in zip(X, y):
        m = yi * np.dot(w, xi)
        if m < 1.0:
            loss = loss + 1.0 - m
    return loss


@case(0.3, 1.2)
def spiking_neuron_reset(i_in, tau):
    v = 0.0
    out = 0.0
    for t in range(20):
        v = v + (i_in * 2.0 - v / tau) * 0.3
        if v > 1.0:
            v = v - 1.0
            out = out + 1.0
        out = out + 0.1 * v
    return out


@case((3, 4))
def softmax_row_by_row(x):
    total = 0.0
    for row in x:
        e = np.exp(row - np.max(row))
        p = e / np.sum(e)
        total = total + np.sum(p * np.arange(4.0))
    return total


@case((6,))
def computed_loop_bound(x):
    n = x.shape[0] // 2
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[n + i]
    return s


@case((3,))
def loop_reassigns_parameter(x):
    for i in range(3):
        x = np.tanh(x) * 1.5 + 0.1
    return np.sum(x ** 2)


@case((5,), domain="positive")
def while_with_data_break(x):
    s = 0.0
    i = 0
    while i < x.shape[0]:
        s = s + x[i] ** 2
        if s > 4.0:
            break
        i += 1
    return s * 1.5


@case((4,))
def for_over_constant_list(x):
    s = 0.0
    for k in [1.0, 2.0, 3.0]:
        s = s + np.sum(np.sin(k * x))
    return s


@case((4,))
def nested_loops_carry_outer_variable(x):
    h = x
    for i in range(3):
        g = h
        for j in range(2):
            g = np.tanh(g * 0.9 + h)
        h = g + 0.5 * h
    return np.sum(h ** 2)


@case(Arr((4,), domain="away"))
def if_assigns_only_in_one_branch_in_loop(x):
    m = 0.0
    for v in x:
        if v > 0:
            m = m + v * 2.0
    return m ** 2


@case((3,), (4,), (5,))
def zip_three_unequal_lengths(x, y, z):
    s = 0.0
    for a, b, c in zip(x, y, z):
        s = s + a * b - np.sin(c)
    return s


@case((3, 4))
def iterate_over_columns(X):
    s = 0.0
    for col in X.T:
        s = s + np.max(col) * np.sum(col)
    return s


@case((3, 4))
def iterate_over_computed_array(X):
    s = 0.0
    for h in np.tanh(X):
        s = s + np.sum(h ** 2)
    return s


@case((4,))
def iterate_over_slice(x):
    s = 0.0
    for v in x[1:]:
        s = s + v * x[0]
    return s


@case((4,), 0.7)
def iterate_reversed_slice(xs, w):
    h = 0.0
    for x in xs[::-1]:
        h = np.tanh(h * w + x)
    return h


@case((3,))
def while_contains_for(x):
    h = x
    n = 0
    while n < 3:
        for i in range(2):
            h = np.sin(h) + x * 0.1
        n = n + 1
    return np.sum(h)


@case(np.array([0.5, -1.0, 1.5, 2.0]))
def loop_if_updates_then_read(x):
    h = np.ones(3)
    s = 0.0
    for i in range(4):
        if x[i] > 0:
            h = h * x[i]
        s = s + np.sum(h)
    return s


@case((6,), domain="positive")
def while_with_compound_condition(x):
    i = 0
    s = 0.0
    while s < 5.0 and i < len(x):
        s = s + x[i] ** 2
        i += 1
    return s


@case(0.3, 0.8, label="second", when=lambda a, b: b > a)
@case(0.9, 0.2, label="first", when=lambda a, b: a > b)
def ternary_maximum(a, b):
    m = a if a > b else b
    return m * 2.0 + a


@case(Arr((3,), domain="positive", shift=0.3))
def loop_index_after_break(x):
    k = 0
    for k in range(10):
        if np.sum(x) * k > 3.0:
            break
    return np.sum(x ** 2) * k


@case((4, 3), np.array([0.5, -1.0, 1.5, 2.0]))
def triangular_nested_loops(X, c):
    s = 0.0
    for i in range(X.shape[0]):
        for j in range(i):
            s = s + c[i] * np.dot(X[i], X[j])
    return s


@case((3,), (3,))
def break_mid_iteration(x, w):
    h = x
    for i in range(5):
        h = np.tanh(h * w)
        if np.sum(h) < -0.5:
            break
        h = h + x
    return np.sum(h ** 2)


@case(np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]]))
def sequence_rebound_in_loop(X):
    total = 0.0
    for row in X:
        total = total + np.sum(row ** 2)
        X = X * 0.5
    return total + np.sum(X)


def _weighted_dot(a, b, scale=1.0):
    return np.sum(a * b) * scale


@case((3,), (3,))
def star_arguments_of_a_tuple(x, y):
    pair = (x, np.sin(y))
    options = {"scale": np.sum(y ** 2)}
    return _weighted_dot(*pair, **options) + _weighted_dot(*(x, x), **{"scale": 2.0})


@case((3,), (3,))
def enumerate_zip_nested_target(x, y):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, y)):
        s = s + i * a * b
    return s


@case((4,))
def iterate_reversed_builtin(x):
    acc = 0.0
    for v in reversed(x):
        acc = acc * 0.5 + v
    return acc ** 2


@case((3,), (3, 2))
def iterate_reversed_list_of_rows(x, W):
    rows = [x * 2.0, np.sin(x), x ** 2]
    h = W[:, 0]
    for r in reversed(rows):
        h = np.tanh(h * r + W[:, 1])
    return np.sum(h)


def _make_closure(scale, offset):
    def closure_reads_cells(x):
        return np.sum((x * scale - offset) ** 2)

    return closure_reads_cells


closure_reads_cells = case((3,))(_make_closure(np.array([1.0, -2.0, 0.5]), 0.25))


@case((3,), domain="positive", label="all-positive", when=lambda x: (x > 0).all())
@case(np.array([-1.0, 4.0, 0.5]), label="any-large")
@case(np.array([-1.0, 2.0, 0.5]), label="neither")
def any_all_guards(x):
    if (x > 0).all():
        return np.sum(np.log(x))
    if np.any(x > 3.0):
        return np.sum(x)
    return np.sum(x ** 2)


@case((3,))
def nan_guard(x):
    if np.isnan(x).any():
        return 0.0
    return np.sum(np.exp(x))


@case((3,), label="vector")
@case((2, 3), label="matrix")
def branch_on_ndim(x):
    if x.ndim == 1:
        x = x[None, :]
    return np.sum(x @ x.T)


@case((6,))
def total_variation(x):
    tv = 0.0
    for i in range(x.shape[0] - 1):
        tv += (x[i + 1] - x[i]) ** 2
    return tv


@case((4,), "mean", label="mean")
@case((4,), "sum", label="sum")
@case((4,), "max", label="max")
def string_mode_argument(x, mode):
    r = x ** 2
    if mode == "mean":
        return np.mean(r)
    elif mode == "sum":
        return np.sum(r)
    return np.max(r)


@case((3,), label="default-w")
@case((3,), (3,), label="given-w")
def optional_weights(x, w=None):
    if w is None:
        w = np.ones_like(x)
    return np.sum(w * x ** 2)


@case(0.7)
def fixed_point_iteration(a):
    x = 1.0
    x_new = np.cos(a * x)
    it = 0
    while abs(x_new - x) > 1e-13 and it < 200:
        x = x_new
        x_new = np.cos(a * x)
        it += 1
    return x_new


# ================================================================================================
section("classic")
# ================================================================================================


@case((6,))
def logsumexp_loop(x):
    m = np.max(x)
    s = 0.0
    for v in x:
        s = s + np.exp(v - m)
    return m + np.log(s)


@case((3, 4), (4,))
def shape_unpack_then_loop(A, x):
    rows, cols = A.shape
    s = 0.0
    for i in range(rows):
        for j in range(cols):
            s = s + A[i, j] * x[j] ** 2 * (i + 1)
    return s


@case((3, 4))
def exp_sum_chained(x):
    return np.exp(x).sum() + np.exp(x[0, :]).sum()


@case(Arr((4, 4), scale=0.4), Arr((4, 3), scale=0.5), (4,), (100, 3), (4,))
def rnn_100_steps(W, U, b, xs, h0):
    h = h0
    for t in range(100):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h ** 2)


@case((3, 4), (4,))
def row_slice_dot(x, w):
    return np.dot(x[0, :], w) ** 2 + np.sum(x[1, :] * x[2, :])


# ================================================================================================
section("pending")  # constructs being implemented now: calls, containers, x[i] = v, constructors
# ================================================================================================


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _affine(x, W, b=0.0, scale=1.0):
    return scale * (x @ W) + b


def _normalized(x):
    return x / stop_gradient(np.sqrt(np.sum(x ** 2)))


def _mse(pred, target):
    return np.mean((pred - target) ** 2)


def _polynomial(x, n=3):
    acc = 0.0
    for k in range(n):
        acc = acc + x ** (k + 1)
    return acc


def _sin_cos(x):
    return np.sin(x), np.cos(x)


def _square(x):
    return x * x


def _sum_of_squares(x):
    return np.sum(_square(x))


def _sign_flip(x):
    if np.sum(x) > 0:
        return x * 2.0
    return -x


def _softplus(x, *, beta=1.0):
    return np.log(1.0 + np.exp(beta * x)) / beta


def _dense(params, x):
    return np.tanh(params["W"] @ x + params["b"])


def _stats(x):
    return {"m": np.mean(x), "s": np.sum(x ** 2)}


def _swap_scale(a, b):
    return b * 0.5, a + np.sin(b)


def _push(stack, v):
    stack.append(v * 2.0)
    return len(stack)


def _set_first(a, v):
    a[0] = v
    return 0.0


@case((4, 3), (3,))
def call_helper(X, w):
    return np.sum(_sigmoid(X @ w))


@case((2, 3), (3, 4), (4,))
def helper_keyword_and_default_arguments(x, W, b):
    h = _affine(x, W, scale=2.0)
    h2 = _affine(x, W, b, 0.5)
    return np.sum(np.tanh(h) + h2 ** 2)


@case((5,), (5,))
def helper_called_several_times(a, y):
    return _mse(_sigmoid(a), y) + _mse(_sigmoid(2.0 * a), y) + _mse(a, y)


@case((5,), (5,))
def returns_a_helper_call(a, y):
    pred = _sigmoid(a * 2.0)
    return _mse(pred, y)


@case((5,), (5,))
def returns_a_helper_call_with_one_argument_twice(a, y):
    return _weighted_dot(a, a, scale=np.sum(y))


@case((4, 3), (3,))
def returns_a_helper_returning_a_helper(X, w):
    return _mse_of_sigmoid(X @ w, w[0])


def _mse_of_sigmoid(z, target):
    return _mse(_sigmoid(z), target)


@case((5,), (5,))
def helper_result_stopped(x, y):
    baseline = stop_gradient(_mse(x, y))
    return np.sum((x - y) ** 2) - baseline * np.sum(x)


@case((4,), (4,))
def helper_with_stop_gradient_inside(x, w):
    return np.sum(_normalized(x) * w)


@case((4,))
def helper_calls_helper(x):
    return _sum_of_squares(x * 3.0) + np.sum(x)


@case(Arr((4,), scale=0.5))
def helper_with_loop(x):
    return np.sum(_polynomial(x, n=4))


@case((4,))
def helper_returns_tuple(x):
    s, c = _sin_cos(x)
    return np.sum(s * c + s)


@case(Arr((4,), shift=1.0), label="positive", when=lambda x: np.sum(x) > 0.5)
@case(Arr((4,), shift=-1.0), label="negative", when=lambda x: np.sum(x) < -0.5)
def helper_with_branch(x):
    return np.sum(_sign_flip(x) ** 2)


@case((5,))
def helper_keyword_only(x):
    return np.sum(_softplus(x, beta=2.0) + _softplus(x))


@case((3,), (3,))
def nested_def(x, w):
    def layer(h):
        return np.tanh(h * w)

    return np.sum(layer(layer(x)))


@case((3,), (3,))
def nested_def_without_closure(x, w):
    def layer(h, v):
        return np.tanh(h * v)

    return np.sum(layer(layer(x, w), w))


@case((4,))
def lambda_bound_to_name(x):
    softplus = lambda z: np.log(1.0 + np.exp(z))  # noqa: E731
    return np.sum(softplus(x) + softplus(2.0 * x))


@case((4,))
def lambda_closes_over_active_value(x):
    scale = np.sum(x ** 2)
    f = lambda z: z * scale  # noqa: E731
    return np.sum(f(x) + f(np.sin(x)))


@case((3,))
def list_append_in_loop(x):
    hs = []
    h = x
    for i in range(3):
        h = np.tanh(h + 1.0)
        hs.append(h)
    return np.sum(hs[0] * hs[2]) + np.sum(hs[-1]) * len(hs)


@case((3,), (3,))
def tuple_as_value(x, y):
    t = (x, y * 2.0)
    a = t[0] * t[1]
    return np.sum(a) + np.sum(t[1] ** 2)


@case((4,))
def list_literal_indexed(x):
    parts = [x, x ** 2, np.sin(x)]
    return np.sum(parts[1] * parts[2]) + np.sum(parts[0]) * len(parts)


@case((5,))
def dict_build_and_read(x):
    stats = {"mean": np.mean(x), "sq": np.mean(x ** 2)}
    return stats["sq"] - stats["mean"] ** 2


@case((5,))
def dict_update_in_loop(x):
    acc = {"s": 0.0, "p": 1.0}
    for v in x:
        acc["s"] = acc["s"] + v
        acc["p"] = acc["p"] * np.cos(v)
    return acc["s"] ** 2 + acc["p"]


@case(Tup((3, 4), (3,)), (4,))
def tuple_parameter(params, x):
    W, b = params
    return np.sum((W @ x + b) ** 2)


@case(Lst(Arr((3, 3), scale=0.7), Arr((3, 3), scale=0.7), Arr((2, 3), scale=0.7)), (3,))
def list_of_layers_parameter(Ws, x):
    h = x
    for W in Ws:
        h = np.tanh(W @ h)
    return np.sum(h ** 2)


@case(Dct(W=(3, 4), b=(3,), v=(3,)), (4,))
def dict_parameter(p, x):
    h = np.tanh(p["W"] @ x + p["b"])
    return np.sum(h * p["v"])


@case(Dct(enc=Tup((3, 4), (3,)), dec=Tup((2, 3), (2,))), (4,))
def nested_container_parameter(layers, x):
    W1, b1 = layers["enc"]
    W2, b2 = layers["dec"]
    h = np.tanh(W1 @ x + b1)
    return np.sum((W2 @ h + b2) ** 2)


@case(Lst((3,), (3,), (3,)), (3,))
def list_parameter_indexed(xs, w):
    total = 0.0
    for i in range(len(xs)):
        total = total + w[i] * np.sum(xs[i] ** 2)
    return total


@case(Dct(W=(2, 3), b=(2,)), (3,))
def helper_takes_dict(params, x):
    return np.sum(_dense(params, x) ** 2)


@case((4,))
def list_comprehension_over_range(x):
    terms = [np.sum(x ** (k + 1)) / (k + 1) for k in range(4)]
    return terms[0] + terms[3] + len(terms)


@case((4,))
def builtin_sum_of_generator(x):
    return sum(np.sum(np.sin(x * k)) for k in range(1, 4)) + sum([x[0], x[1] ** 2])


@case((3,), (3, 3))
def stack_of_comprehension(x, w):
    rows = [x * (k + 1) for k in range(3)]
    M = np.stack(rows)
    return np.sum(np.tanh(M @ w))


@case((3,))
def subscript_assign_into_zeros(x):
    y = np.zeros(3)
    y[0] = x[1] * 2.0
    y[1] = np.sin(x[0])
    y[2] = x[2] * x[0]
    return np.sum(y ** 2)


@case((4, 3), np.array([0.5, -0.7, 1.2, -0.3]))
def diagonal_update_in_loop(A, d):
    S = A @ A.T
    for i in range(d.shape[0]):
        if d[i] > 0:
            S[i, i] += d[i]
    return np.sum(S ** 2)


@case((3, 4), (3,), 2)
def column_assignment(x, v, k):
    x2 = np.tanh(x)
    x2[:, k] = v
    return np.sum(x2 ** 2 * np.arange(4))


@case((3,), (3, 2))
def row_assignment_into_zeros(x, W):
    Y = np.zeros((2, 3))
    Y[0, :] = x
    Y[1] = x ** 2
    return np.sum(np.tanh(Y @ W))


@case((5,), 1.5)
def element_assignment_in_loop(x, w):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i]) * w
    return np.sum(out ** 2)


@case((3, 4))
def zeros_like_accumulator(x):
    acc = np.zeros_like(x)
    for i in range(3):
        acc = acc + x * (i + 1)
    return np.sum(acc ** 2)


@case((3, 4))
def ones_weights(x):
    w = np.ones(x.shape[1])
    return np.sum((x @ w) * x[:, 0])


@case((4,))
def array_of_active_scalars(x):
    a = np.sum(x)
    b = np.max(x)
    v = np.array([a, b, a * b])
    return np.sum(v ** 2)


@case((3,), (3, 3))
def stack_active_pieces(x, W):
    M = np.stack([x, x ** 2, np.sin(x)], axis=0)
    return np.sum(M * W)


@case((3,), (2,))
def concatenate_active_pieces(x, y):
    z = np.concatenate([x, y * 2.0])
    return np.sum(np.exp(z) * np.arange(z.shape[0]))


@case((4,), (4,))
def builtin_max_of_active_scalars(x, y):
    return max(np.sum(x), np.sum(y)) + min(np.sum(x ** 2), 10.0)


@case(Arr((5,), domain="positive"), label="returns", when=lambda x: np.sum(x ** 2) > 3.0)
@case(Arr((5,), scale=0.3), label="runs through", when=lambda x: np.sum(x ** 2) < 2.5)
def return_inside_loop(x):
    s = 0.0
    for v in x:
        s = s + v ** 2
        if s > 3.0:
            return s
    return s * 2.0


@case((3,), (3,), label="inner return", when=lambda x, w: _nested_return_taken(x, w))
@case(Arr((3,), scale=0.1), Arr((3,), scale=0.1), label="no return", when=lambda x, w: not _nested_return_taken(x, w))
def return_inside_nested_loops(x, w):
    s = 0.0
    for i in range(3):
        for j in range(3):
            s = s + np.tanh(x[j] * w[i])
            if s > 0.5:
                return s * 2.0
        s = s * 0.5
    return s + np.sum(w)


def _nested_return_taken(x, w):
    s = 0.0
    for i in range(3):
        for j in range(3):
            s = s + np.tanh(x[j] * w[i])
            if s > 0.5:
                return True
        s = s * 0.5
    return False


@case((3,), label="while, then code after the loop")
def return_inside_while_with_code_after(x):
    t = 0.0
    k = 0
    while k < 6:
        t = t + np.sin(x[k % 3])
        if t < -0.5:
            return t * np.sum(x)
        k += 1
    y = t * 3.0
    return y + np.sum(np.cos(x))


@case((3,), label="loop in a branch")
def return_inside_loop_in_a_branch(x):
    if np.sum(x) > -10.0:
        for i in range(3):
            x = np.cos(x)
            if x[0] > 0.8:
                return np.sum(x)
        z = np.sum(x * x)
    else:
        z = np.sum(x)
    return z + 1.0


@case((4, 3))
def variance_and_std(x):
    return np.sum(np.var(x, axis=0)) + np.std(x)


@case((4,))
def vector_norm(x):
    return np.linalg.norm(x) + np.sum(np.log1p(x ** 2))


@case((5,))
def cumulative_sum(x):
    return np.sum(np.cumsum(x) ** 2)


@case((3,))
def helper_returns_dict(x):
    d = _stats(x)
    return d["s"] - d["m"] ** 2


@case((3,))
def list_built_then_len_loop(x):
    hs = []
    for i in range(3):
        hs.append(x * (i + 1.0))
    total = 0.0
    for i in range(len(hs)):
        total = total + np.sum(hs[i] ** 2)
    return total


@case((3,))
def iterate_over_list(x):
    hs = [x, np.sin(x), x ** 2]
    s = 0.0
    for h in hs:
        s = s + np.sum(h * x)
    return s


@case((3,))
def helper_tuple_result_in_loop(x):
    a, b = x * 1.0, x * 2.0
    for i in range(3):
        a, b = _swap_scale(a, b)
    return np.sum(a * b)


@case((3,), (2, 3))
def stack_list_built_in_loop(x, W):
    rows = []
    for i in range(3):
        rows.append(np.tanh(W @ x * (i + 1)))
    H = np.stack(rows, axis=1)
    return np.sum(H ** 2)


@case((3,), (2, 3))
def write_through_row_view(x, W):
    out = np.zeros((2, 3))
    first = out[0]
    first[1] = x[0]
    out[1] = x * 2.0
    return np.sum(out * W)


@case((3,), xfail=SHARED, match="'Y' and 'Z' are the same object")
def write_through_alias(x):
    Y = np.zeros(3)
    Z = Y
    Y[0] = x[0] * 3.0
    return np.sum(Z * x)


@case((3,), xfail=SHARED, match="'d' and 'e' are the same object")
def dict_write_through_alias(x):
    d = {"a": x}
    e = d
    d["a"] = x * 3.0
    return np.sum(e["a"] * x)


@case((3,), xfail=SHARED, match="'xs' and 'ys' are the same object, and 'ys' is read later")
def list_append_through_alias(x):
    xs = ys = []
    xs.append(x * 2.0)
    return np.sum(ys[0] ** 2)


@case((3,), 0.7, xfail=SHARED, match="'y' is also stored in a list, tuple or dict")
def euler_trajectory_in_place(y0, k):
    y = y0 * 1.0
    traj = []
    for t in range(5):
        traj.append(y)
        y += 0.1 * (-k * y)
    return np.sum(traj[0] * traj[-1])


@case((3,), xfail=SHARED, match="'stack' is an argument, so the calling function would see the change")
def helper_appends_to_callers_list(x):
    hs = [x]
    n = _push(hs, np.sin(x))
    return np.sum(hs[-1] * hs[0]) * n


@case((3,), xfail=SHARED, match="'a' is an argument, so the calling function would see the change")
def helper_writes_callers_array(x):
    y = np.tanh(x)
    z = _set_first(y, x[1] ** 2)
    return np.sum(y ** 2) + z
