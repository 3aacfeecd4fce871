"""Random, valid Python/NumPy programs in the subset s2sad differentiates.

:func:`programs` is a hypothesis strategy drawing a :class:`Program`: the source text of a
module (``import numpy as np``, ``from s2sad import stop_gradient``, helper functions, then
``def f(...)`` returning a float scalar), the shapes and domains of ``f``'s arguments and a
seed for their values.  Every choice is a hypothesis draw, so a failing program shrinks to a
small one.

Programs are valid by construction:

- **shapes**: every variable and sub-expression has a known shape.  An expression of a wanted
  shape is built from variables by one *derivation* (the variable itself, a reshape,
  transpose, reduction, squeeze, expand_dims or indexing that yields the shape) or by an
  operation whose operands' shapes give it (broadcasting, ``@``); see :meth:`Gen.exact`.
- **domains**: every value has a known enclosing interval (interval arithmetic).  ``log``,
  ``sqrt``, ``x ** 1.5`` and divisors only see expressions bounded away from zero (made so by
  construction, e.g. ``np.exp(...) + 0.5`` or ``x * x + 1.0``), ``exp`` only small arguments,
  and any value that could exceed :data:`LIMIT` in magnitude is squashed with ``np.tanh``.
- **loops**: a variable a loop assigns (it is carried to the next iteration) has a fixed
  symmetric interval ``[-M, M]`` with ``M >= 1`` for the whole loop, and every value
  assigned to it inside the loop lies in it (``np.tanh(...)``, ``0.5 * h + 0.5 * np.tanh(...)``,
  ``h *= np.tanh(...)``), so any number of iterations stays in range.  Variables first assigned
  in a loop body or in only some branches of an ``if`` are not used after it.
- **aliasing**: in-place updates (``x += e`` on an array, ``y[i] = e``) are only made to arrays
  no other live name may share memory with (``y = a.copy()`` and fresh results qualify;
  views from indexing/reshape/transpose, ``stop_gradient(x)``, plain copies ``y = x``, tuple
  elements and helper results do not), so Python's in-place semantics and s2sad's
  copy semantics agree.  Helpers never update their parameters in place.
- **NaN branches** (with :data:`NAN_BRANCHES`): ``np.where(u > t, np.sqrt(u), b)`` and the
  like, whose untaken branch is NaN or infinite (``sqrt``/``log``/``** 1.5`` of negatives,
  division by zero); the program's value is finite, and so must be its gradient.
- **kinks** (abs, maximum, clip, where, max, data-dependent branches) are placed freely: with
  continuous random inputs, ties are measure-zero; the oracle detects the rare points where
  finite differences are unreliable.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np
from hypothesis import strategies as st

LIMIT = 30.0  # values that could exceed this in magnitude are squashed with np.tanh
EXP_MAX = 3.0  # np.exp only of arguments known to be below this
ARG_SHAPES = ((3,), (4,), (2, 3), (3, 4), (2,), (3, 1), (1, 4), (4, 3), (2, 3, 4))
RESHAPE_DIMS = (1, 2, 3, 4, 6, 12)
DOMAINS = {"real": (-1.5, 1.5), "positive": (0.5, 2.0)}
# np.where with a branch that is NaN or infinite where it is not taken (issue 17): on once
# s2sad masks the untaken branch's adjoint (until then such programs are WRONG)
NAN_BRANCHES = True
SECOND_ORDER_SHARE = 4  # one program in this many (by seed) also gets a second-order (hvp) check
JIT_SHARE = 10  # one program in this many (by seed) is also run with grad(f, jit="auto")


# --- programs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """A parameter of ``f``: a float64 array of ``shape``, or a Python float if ``py``."""

    name: str
    shape: tuple[int, ...]
    py: bool
    lo: float
    hi: float


@dataclass(frozen=True)
class Program:
    source: str
    args: tuple[Arg, ...]
    seed: int
    features: frozenset[str] = frozenset()
    entry: str = "f"

    def inputs(self) -> list[Any]:
        """The argument values: uniform in each argument's domain, from ``seed``."""
        rng = np.random.default_rng(self.seed)
        out: list[Any] = []
        for a in self.args:
            if a.py:
                out.append(float(rng.uniform(a.lo, a.hi)))
            else:
                out.append(rng.uniform(a.lo, a.hi, size=a.shape))
        return out

    @property
    def second_order(self) -> bool:
        """Whether the oracle also checks ``hvp`` on this program."""
        # hashed: hypothesis draws some seeds (0, small ones) far more often than others
        return (self.seed * 2654435761 >> 8) % SECOND_ORDER_SHARE == 0

    @property
    def compiled(self) -> bool:
        """Whether the program's gradient is also run compiled (jit="auto"), against the NumPy code's."""
        return (self.seed * 2654435761 >> 12) % JIT_SHARE == 0

    def direction(self) -> tuple[int, Any]:
        """For the second-order check: the argument differentiated and a direction ``v`` for it."""
        rng = np.random.default_rng([self.seed, 2])
        k = int(rng.integers(len(self.args)))
        a = self.args[k]
        return k, float(rng.uniform(-1.0, 1.0)) if a.py else rng.uniform(-1.0, 1.0, size=a.shape)

    def inputs_code(self) -> str:
        lines = []
        for a, v in zip(self.args, self.inputs()):
            lines.append(f"{a.name} = {format_value(v)}")
        return "\n".join(lines)

    def reproducer(self) -> str:
        """The program and its inputs as a runnable script."""
        names = ", ".join(a.name for a in self.args)
        text = (f"{self.source}\n\n{self.inputs_code()}\n"
                f"# import s2sad; s2sad.grad({self.entry}, wrt={tuple(range(len(self.args)))!r})({names})\n")
        if self.second_order:
            k, v = self.direction()
            text += f"v = {format_value(v)}\n# s2sad.hvp({self.entry}, wrt={k})({names}, v)\n"
        return text

    def __repr__(self) -> str:
        return f"Program(seed={self.seed}):\n{self.reproducer()}"


def format_value(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    return f"np.array({np.asarray(v).tolist()!r})"


# --- expressions and variables ---------------------------------------------------------------


@dataclass(frozen=True)
class E:
    """A generated expression: its text, shape and an interval enclosing its values."""

    text: str
    shape: tuple[int, ...]
    lo: float
    hi: float
    py: bool = False  # may be a Python float: no methods, no shape operations
    atom: bool = True  # needs no parentheses as an operand
    base: frozenset[str] = frozenset()  # variables whose memory the value may share

    def p(self) -> str:
        return self.text if self.atom else f"({self.text})"

    @property
    def bound(self) -> float:
        return max(abs(self.lo), abs(self.hi))


@dataclass
class Var:
    name: str
    shape: tuple[int, ...]
    lo: float
    hi: float
    py: bool
    base: frozenset[str] = frozenset()  # other variables this one may share memory with
    used: bool = False
    caller: bool = False  # a helper's parameter: the caller's object, never updated in place
    top: bool = False  # defined at the function's top level: alive until it returns
    param: bool = False  # still the parameter's own value (never reassigned at the top level)


@dataclass
class TupleVar:
    name: str
    items: tuple[E, ...]


@dataclass
class Helper:
    name: str
    params: tuple[tuple[str, tuple[int, ...], float], ...]  # (name, shape, M): values in [-M, M]
    results: tuple[E, ...]  # the returned value(s): shape, interval, py (text unused)
    single: bool


@dataclass
class Scope:
    """What one function body being generated knows."""

    env: dict[str, Var]
    tuples: dict[str, TupleVar]
    lines: list[str]
    indent: int = 1
    fixed: dict[str, float] = field(default_factory=dict)  # loop-carried: values in [-M, M]
    protected: set[str] = field(default_factory=set)  # not assignable here (outside the loop)
    carried: list[set[str]] = field(default_factory=list)  # per enclosing loop
    indices: list[tuple[str, int, int]] = field(default_factory=list)  # loop index name, lo, hi
    loops: list[str] = field(default_factory=list)  # "for" / "while", innermost last
    nest: int = 0
    helper: bool = False
    stored: set[str] = field(default_factory=set)  # ever put into a tuple (s2sad's rule is global)


def hull(*ivs: tuple[float, float]) -> tuple[float, float]:
    return min(i[0] for i in ivs), max(i[1] for i in ivs)


def mul_iv(alo: float, ahi: float, blo: float, bhi: float) -> tuple[float, float]:
    ps = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
    return min(ps), max(ps)


def sq_iv(lo: float, hi: float) -> tuple[float, float]:
    if lo >= 0:
        return lo * lo, hi * hi
    if hi <= 0:
        return hi * hi, lo * lo
    return 0.0, max(lo * lo, hi * hi)


def abs_iv(lo: float, hi: float) -> tuple[float, float]:
    if lo >= 0:
        return lo, hi
    if hi <= 0:
        return -hi, -lo
    return 0.0, max(-lo, hi)


def size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=int))


def fmt(c: float) -> str:
    return repr(float(c))


# --- shapes ------------------------------------------------------------------------------------


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def into(a: tuple[int, ...], s: tuple[int, ...]) -> bool:
    """Whether shape ``a`` broadcasts into ``s`` (``a op s`` has shape ``s``)."""
    return broadcast(a, s) == s


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    if not a or not b or len(b) > 2:
        return None
    if len(b) == 1:
        return a[:-1] if a[-1] == b[0] else None
    if a[-1] != b[0]:
        return None
    return a[:-1] + b[1:]


@functools.lru_cache(maxsize=None)
def reshape_targets(n: int) -> tuple[tuple[int, ...], ...]:
    out = []
    for k in (1, 2, 3):
        for dims in itertools.product(RESHAPE_DIMS, repeat=k):
            if size(dims) == n:
                out.append(dims)
    return tuple(out)


@functools.lru_cache(maxsize=None)
def index_patterns(t: tuple[int, ...]) -> tuple[tuple[Any, ...], ...]:
    """Index patterns for an array of shape ``t``: per axis "int", "full" or ("part", length)."""
    per_axis = []
    for d in t:
        opts: list[Any] = ["int", "full"] + [("part", n) for n in range(1, d)]
        per_axis.append(opts)
    return tuple(itertools.product(*per_axis))


def pattern_shape(t: tuple[int, ...], pattern: tuple[Any, ...]) -> tuple[int, ...]:
    out = []
    for d, p in zip(t, pattern):
        if p == "full":
            out.append(d)
        elif p != "int":
            out.append(p[1])
    return tuple(out)


@functools.lru_cache(maxsize=None)
def derivations(t: tuple[int, ...]) -> dict[tuple[int, ...], tuple[str, ...]]:
    """The shapes one derivation turns a value of shape ``t`` into, with the derivations."""
    out: dict[tuple[int, ...], list[str]] = {t: ["id"]}

    def add(s: tuple[int, ...], kind: str) -> None:
        kinds = out.setdefault(tuple(s), [])
        if kind not in kinds:
            kinds.append(kind)

    if t:
        for s in reshape_targets(size(t)):
            if s != t:
                add(s, "reshape")
        if len(t) >= 2:
            for perm in itertools.permutations(range(len(t))):
                if perm != tuple(range(len(t))):
                    add(tuple(t[k] for k in perm), "transpose")
        for s, _ in reductions(t):
            add(s, "reduce")
        if 1 in t:
            add(tuple(d for d in t if d != 1), "squeeze")
        if len(t) < 3:
            for k in range(len(t) + 1):
                add(t[:k] + (1,) + t[k:], "expand")
        for pattern in index_patterns(t):
            add(pattern_shape(t, pattern), "index")
    return {s: tuple(k) for s, k in out.items()}


@functools.lru_cache(maxsize=None)
def reductions(t: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], tuple[Any, bool, int]], ...]:
    """(result shape, (axis, keepdims, number of elements reduced)) for reductions of ``t``."""
    out: list[tuple[tuple[int, ...], tuple[Any, bool, int]]] = [((), (None, False, size(t)))]
    out.append(((1,) * len(t), (None, True, size(t))))
    for k in range(len(t)):
        out.append((t[:k] + t[k + 1:], (k, False, t[k])))
        out.append((t[:k] + (1,) + t[k + 1:], (k, True, t[k])))
    if len(t) == 3:
        for k1, k2 in itertools.combinations(range(3), 2):
            rest = tuple(d for i, d in enumerate(t) if i not in (k1, k2))
            out.append((rest, ((k1, k2), False, t[k1] * t[k2])))
    return tuple(out)


@dataclass(frozen=True)
class Reach:
    """The shapes an expression can have in a scope.

    ``base``: one derivation away from a variable (or ``()``, always); ``ext``: also the
    broadcasts and matrix products of two base shapes.
    """

    base: frozenset[tuple[int, ...]]
    ext: tuple[tuple[int, ...], ...]
    pairs: dict[tuple[int, ...], tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]]
    matmuls: dict[tuple[int, ...], tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]]


@functools.lru_cache(maxsize=512)
def reach(shapes: frozenset[tuple[int, ...]]) -> Reach:
    base = {()}
    for t in shapes:
        base.update(derivations(t))
    base = {s for s in base if len(s) <= 3 and size(s) <= 24}
    ordered = sorted(base, key=lambda s: (len(s), s))
    pairs: dict[tuple[int, ...], list[tuple[tuple[int, ...], tuple[int, ...]]]] = {}
    matmuls: dict[tuple[int, ...], list[tuple[tuple[int, ...], tuple[int, ...]]]] = {}
    for a in ordered:
        for b in ordered:
            s = broadcast(a, b)
            if s is not None and len(s) <= 3 and size(s) <= 24:
                pairs.setdefault(s, []).append((a, b))
            m = matmul_shape(a, b)
            if m is not None and len(m) <= 3:
                matmuls.setdefault(m, []).append((a, b))
    ext = tuple(sorted(set(pairs) | set(matmuls) | base, key=lambda s: (len(s), s)))
    return Reach(frozenset(base), ext, {s: tuple(p) for s, p in pairs.items()},
                 {s: tuple(p) for s, p in matmuls.items()})


# --- the generator -----------------------------------------------------------------------------


class Gen:
    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any], nan_branches: bool = False) -> None:
        self.draw = draw
        self.nan_branches = nan_branches
        self.counter = itertools.count()
        self.helpers: list[Helper] = []
        self.helper_sources: list[str] = []
        self.features: set[str] = set()
        self.sc: Scope = Scope({}, {}, [])
        self.helper_depth = 0

    # --- choices -------------------------------------------------------------------------------
    def pick(self, options: Iterable[Any]) -> Any:
        options = list(options)
        if len(options) == 1:
            return options[0]
        return self.draw(st.sampled_from(options))

    def weighted(self, table: list[tuple[int, Any]]) -> Any:
        """A value from ``(weight, value)`` rows; shrinks toward the first row."""
        rows = [(w, v) for w, v in table if w > 0]
        if len(rows) == 1:
            return rows[0][1]
        index = [i for i, (w, _) in enumerate(rows) for _ in range(w)]
        return rows[self.draw(st.sampled_from(index))][1]

    def integer(self, lo: int, hi: int) -> int:
        return lo if lo == hi else self.draw(st.integers(lo, hi))

    def chance(self, percent: int) -> bool:
        """True with about ``percent``% probability; shrinks to False."""
        return self.draw(st.integers(0, 99)) >= 100 - percent

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def emit(self, line: str) -> None:
        self.sc.lines.append("    " * self.sc.indent + line)

    # --- variables -----------------------------------------------------------------------------
    def var_e(self, v: Var) -> E:
        v.used = True
        return E(v.name, v.shape, v.lo, v.hi, v.py, True, frozenset({v.name}) | v.base)

    def bind(self, name: str, e: E, old: Var | None = None) -> Var:
        """Record ``name = e``; ``old`` is the variable's previous state, if any."""
        base = e.base - {name}
        if old is not None and name in e.base:
            base |= old.base
        var = Var(name, e.shape, e.lo, e.hi, e.py, base, caller=old.caller if old else False,
                  top=self.sc.nest == 0 or (old.top if old else False),
                  param=bool(old and old.param and self.sc.nest > 0))
        if old is not None:
            self.note_assign(name)
        self.sc.env[name] = var
        return var

    def inplace_ok(self, v: Var) -> bool:
        """Whether updating ``v`` in place is unobservable through other names."""
        if v.caller or v.base or v.name in self.sc.stored:
            return False
        if any(v.name in w.base for w in self.sc.env.values() if w is not v):
            return False
        return not any(v.name in item.base for t in self.sc.tuples.values() for item in t.items)

    def assignable(self, v: Var) -> bool:
        return v.name not in self.sc.protected

    def reach(self) -> Reach:
        shapes = frozenset(v.shape for v in self.sc.env.values()) | frozenset(
            item.shape for t in self.sc.tuples.values() for item in t.items)
        return reach(shapes)

    # --- guards --------------------------------------------------------------------------------
    def squash(self, e: E) -> E:
        fn = self.weighted([(4, "tanh"), (1, "sin")])
        if fn == "tanh":
            return E(f"np.tanh({e.text})", e.shape, math.tanh(e.lo), math.tanh(e.hi))
        return E(f"np.sin({e.text})", e.shape, -1.0, 1.0)

    def moderate(self, e: E) -> E:
        return self.squash(e) if e.bound > LIMIT else e

    def positive(self, e: E, m: float) -> E:
        """An expression of ``e``'s shape whose values are at least ``m`` (<= 0.5)."""
        if e.lo >= m:
            return e
        kind = self.weighted([(3, "square"), (3, "exp"), (1, "abs"), (1, "sqrt"), (1, "neg")])
        if kind == "neg" and e.hi <= -m:
            return E(f"-{e.p()}", e.shape, -e.hi, -e.lo, e.py, False)
        if kind == "exp":
            a = e if e.hi <= EXP_MAX else self.squash(e)
            return E(f"np.exp({a.text}) + 0.5", e.shape, math.exp(a.lo) + 0.5, math.exp(a.hi) + 0.5,
                     False, False)
        if kind == "abs":
            lo, hi = abs_iv(e.lo, e.hi)
            return E(f"np.abs({e.text}) + 0.5", e.shape, lo + 0.5, hi + 0.5, False, False)
        lo, hi = sq_iv(e.lo, e.hi)
        if kind == "sqrt":
            return E(f"np.sqrt({e.p()} * {e.p()} + 1.0)", e.shape, math.sqrt(lo + 1), math.sqrt(hi + 1))
        spelling = self.pick([f"{e.p()} * {e.p()} + 1.0", f"np.square({e.text}) + 0.5", f"{e.p()} ** 2 + 0.5"])
        c = 1.0 if spelling.endswith("1.0") else 0.5
        return E(spelling, e.shape, lo + c, hi + c, e.py and "np." not in spelling, False)

    def fit(self, e: E, m: float) -> E:
        """``e`` if its values lie in [-m, m] (m >= 1) and it is a fresh value, else a squashed form."""
        if -m <= e.lo and e.hi <= m and not e.base:
            return e
        kind = self.weighted([(4, "tanh"), (1, "clip"), (1, "sin")])
        if kind == "clip":
            return E(f"np.clip({e.text}, -1.0, 1.0)", e.shape, max(e.lo, -1.0), min(max(e.hi, -1.0), 1.0))
        return self.squash(e) if kind == "tanh" else E(f"np.sin({e.text})", e.shape, -1.0, 1.0)

    # --- leaves and derivations ------------------------------------------------------------------
    def const(self) -> E:
        c = self.pick([2.0, 0.5, 1.5, -1.0, 3.0, -0.5, 0.25])
        return E(fmt(c), (), c, c, True, c >= 0)

    def index_terms(self) -> list[E]:
        out = []
        for name, lo, hi in self.sc.indices:
            out.append(E(f"{name} + 1.0", (), lo + 1.0, hi + 1.0, True, False))
            out.append(E(f"0.5 * {name}", (), 0.5 * lo, 0.5 * hi, True, False))
        return out

    def leaf(self, s: tuple[int, ...]) -> E:
        """A variable (or tuple item, loop index, constant) turned into shape ``s`` by one derivation."""
        sources: list[tuple[int, Any, str]] = []
        for v in self.sc.env.values():
            for kind in derivations(v.shape).get(s, ()):
                if kind != "id" and v.py:
                    continue
                sources.append((6 if kind == "id" else 2, v, kind))
        for t in self.sc.tuples.values():
            for k, item in enumerate(t.items):
                for kind in derivations(item.shape).get(s, ()):
                    if kind == "id" or not item.py:
                        sources.append((2 if kind == "id" else 1, (t, k), kind))
        if s == ():
            sources += [(2, term, "id") for term in self.index_terms()]
            sources.append((1, None, "const"))
        if not sources:
            raise AssertionError(f"no leaf of shape {s}")
        _, src, kind = self.weighted([(w, (w, src, kind)) for w, src, kind in sources])
        if kind == "const":
            return self.const()
        if isinstance(src, Var):
            e = self.var_e(src)
        elif isinstance(src, E):
            e = src
        else:
            t, k = src
            item = t.items[k]
            kk = self.pick([k, k - len(t.items)])
            e = E(f"{t.name}[{kk}]", item.shape, item.lo, item.hi, item.py, True, item.base | {t.name})
        if kind != "id":
            self.features.add("leaf-" + kind)
        return self.derive(e, s, kind)

    def derive(self, e: E, s: tuple[int, ...], kind: str) -> E:
        t = e.shape
        if kind == "id":
            if len(t) == 1 and not e.py and self.chance(5):
                return E(f"{e.p()}.T", s, e.lo, e.hi, False, True, e.base)
            return e
        view = e.base
        if kind == "reshape":
            self.features.add("reshape")
            dims = list(s)
            if len(dims) >= 1 and self.chance(30):
                dims[self.integer(0, len(dims) - 1)] = -1
            shape_text = "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"
            forms = [f"np.reshape({e.text}, {shape_text})", f"{e.p()}.reshape({shape_text})",
                     f"{e.p()}.reshape({', '.join(map(str, dims))})"]
            if len(s) == 1:
                forms += [f"{e.p()}.ravel()", f"np.ravel({e.text})", f"{e.p()}.flatten()"]
            text = self.pick(forms)
            return E(text, s, e.lo, e.hi, False, True, frozenset() if "flatten" in text else view)
        if kind == "transpose":
            self.features.add("transpose")
            perms = [p for p in itertools.permutations(range(len(t))) if tuple(t[k] for k in p) == s
                     and p != tuple(range(len(t)))]
            perm = self.pick(perms)
            forms = [f"np.transpose({e.text}, {perm!r})", f"{e.p()}.transpose({perm!r})",
                     f"{e.p()}.transpose({', '.join(map(str, perm))})"]
            if perm == tuple(reversed(range(len(t)))):
                forms += [f"{e.p()}.T", f"np.transpose({e.text})", f"{e.p()}.transpose()"]
            return E(self.pick(forms), s, e.lo, e.hi, False, True, view)
        if kind == "reduce":
            self.features.add("reduce")
            options = [spec for r, spec in reductions(t) if r == s]
            axis, keepdims, n = self.pick(options)
            fn = self.weighted([(4, "sum"), (3, "mean"), (1, "max"), (1, "min")])
            if axis is not None and self.chance(30):
                axis = tuple(a - len(t) for a in axis) if isinstance(axis, tuple) else axis - len(t)
            kw = []
            if axis is not None:
                kw.append(f"axis={axis!r}" if self.chance(70) or keepdims else repr(axis))
            if keepdims:
                kw.append("keepdims=True")
            args = ", ".join(kw)
            if self.chance(40):
                text = f"{e.p()}.{fn}({args})"
            else:
                text = f"np.{fn}({e.text}{', ' + args if args else ''})"
            lo, hi = (e.lo * n, e.hi * n) if fn == "sum" else (e.lo, e.hi)
            return E(text, s, lo, hi, False, True)
        if kind == "squeeze":
            self.features.add("squeeze")
            forms = [f"np.squeeze({e.text})", f"{e.p()}.squeeze()"]
            ones = [k for k, d in enumerate(t) if d == 1]
            if len(ones) == 1:
                forms.append(f"np.squeeze({e.text}, axis={ones[0]})")
            return E(self.pick(forms), s, e.lo, e.hi, False, True, view)
        if kind == "expand":
            self.features.add("expand_dims")
            ks = [k for k in range(len(s)) if s[k] == 1 and s[:k] + s[k + 1:] == t]
            k = self.pick(ks)
            forms = [f"np.expand_dims({e.text}, {k})", f"np.expand_dims({e.text}, {k - len(s)})",
                     f"np.expand_dims({e.text}, axis={k})"]
            if len(t) >= 1:
                forms.append(f"{e.p()}[{', '.join([':'] * k + ['None'])}]")
            return E(self.pick(forms), s, e.lo, e.hi, False, True, view)
        if kind == "index":
            self.features.add("index")
            patterns = [p for p in index_patterns(t) if pattern_shape(t, p) == s]
            pattern = self.pick(patterns)
            idx = self.index_text(t, pattern)
            basic_copy = all(p == "int" for p in pattern)  # a scalar: a copy
            return E(f"{e.p()}[{idx}]", s, e.lo, e.hi, False, True, frozenset() if basic_copy else view)
        raise AssertionError(kind)

    def index_text(self, t: tuple[int, ...], pattern: tuple[Any, ...]) -> str:
        parts = []
        for d, p in zip(t, pattern):
            if p == "int":
                loops = [name for name, lo, hi in self.sc.indices if hi < d and lo >= 0]
                options = [str(k) for k in range(d)] + [str(-k) for k in range(1, d + 1)]
                if loops and self.chance(40):
                    self.features.add("index-loop-variable")
                    parts.append(self.pick(loops))
                else:
                    parts.append(self.pick(options))
            elif p == "full":
                parts.append(":")
            else:
                n = p[1]
                spellings = []
                for a in range(0, d - n + 1):
                    spellings.append(f"{a}:{a + n}" if a else self.pick([f":{n}", f"0:{n}"]))
                    if a + n == d and a:
                        spellings.append(f"{a}:")
                        spellings.append(f"-{n}:")
                for a in range(d):
                    for b in range(a + 1, d + 1):
                        if len(range(a, b, 2)) == n and n > 1:
                            spellings.append(f"{a}:{b}:2")
                parts.append(self.pick(spellings))
        while len(parts) > 1 and parts[-1] == ":" and self.chance(50):
            parts.pop()
        return ", ".join(parts)

    # --- expressions -----------------------------------------------------------------------------
    def target_shape(self) -> tuple[int, ...]:
        r = self.reach()
        env_shapes = sorted({v.shape for v in self.sc.env.values()}, key=lambda s: (len(s), s))
        if env_shapes and self.chance(65):
            return self.pick(env_shapes)
        return self.pick(r.ext)

    def operand_shape(self, s: tuple[int, ...]) -> tuple[int, ...]:
        """A reachable shape that broadcasts into ``s``, ``s`` itself most often."""
        r = self.reach()
        smaller = sorted((t for t in r.base if t != s and into(t, s)), key=lambda t: (len(t), t))
        if s in r.base and (not smaller or self.chance(60)):
            return s
        if not smaller:
            return ()
        return self.pick(smaller)

    def exact(self, d: int, s: tuple[int, ...]) -> E:
        """An expression of shape exactly ``s`` and nesting depth at most about ``d``."""
        r = self.reach()
        in_base = s in r.base
        table: list[tuple[int, str]] = []
        if in_base:
            table.append((3 if d > 0 else 1, "leaf"))
        if d > 0 and in_base:
            table += [(5, "unary"), (5, "binary"), (2, "derive"), (1, "where"), (1, "mask"),
                      (1, "sg"), (1, "ifexp"), (1, "clip"), (1 if self.nan_branches else 0, "where-nan")]
            if self.helper_depth < 2:
                table.append((1 if self.helper_depth == 0 else 0, "call"))
        if s in r.matmuls and (d > 0 or not in_base):
            table.append((2, "matmul"))
        if s in r.pairs and (d > 0 or not in_base) and not in_base:
            table.append((5, "binary"))
        if not table:
            raise AssertionError(f"shape {s} unreachable")
        kind = self.weighted(table)
        d1 = max(d - 1, 0)
        if kind == "leaf":
            return self.leaf(s)
        if kind == "unary":
            return self.moderate(self.unary(self.exact(d1, s)))
        if kind == "binary":
            return self.moderate(self.binary(d1, s))
        if kind == "matmul":
            return self.moderate(self.matmul(d1, s))
        if kind == "derive":
            parents = [t for t in sorted(r.base, key=lambda t: (len(t), t))
                       if t != s and s in derivations(t)]
            if not parents:
                return self.leaf(s)
            t = self.pick(parents)
            e = self.exact(d1, t)
            kinds = [k for k in derivations(t)[s] if k != "id" and not e.py]
            if not kinds:
                return self.leaf(s)
            return self.moderate(self.derive(e, s, self.pick(kinds)))
        if kind == "where":
            return self.where(d1, s)
        if kind == "where-nan":
            return self.moderate(self.where_nan(d1, s))
        if kind == "mask":
            self.features.add("comparison-value")
            e = self.exact(d1, s)
            c = self.exact(d1, self.operand_shape(s))
            cmp = self.pick([">", "<", ">="])
            mask = f"({c.p()} {cmp} {self.threshold(c)})"
            text = self.pick([f"{e.p()} * {mask}", f"{mask} * {e.p()}"])
            return E(text, s, min(e.lo, 0.0), max(e.hi, 0.0), e.py and c.py, False)
        if kind == "sg":
            self.features.add("stop_gradient")
            e = self.exact(d1, s)
            return E(f"stop_gradient({e.text})", s, e.lo, e.hi, e.py, True, e.base)
        if kind == "ifexp":
            self.features.add("ifexp")
            cond = self.condition(d1)
            a, b = self.exact(d1, s), self.exact(d1, s)
            lo, hi = hull((a.lo, a.hi), (b.lo, b.hi))
            return E(f"{a.p()} if {cond} else {b.p()}", s, lo, hi, a.py or b.py, False, a.base | b.base)
        if kind == "clip":
            self.features.add("clip")
            e = self.exact(d1, s)
            lo, hi = self.pick([(-1.0, 1.0), (-0.5, 0.5), (0.0, None), (None, 0.5), (-2.0, 0.3)])
            if e.py or self.chance(60):
                text = f"np.clip({e.text}, {lo!r}, {hi!r})"
            else:
                text = f"{e.p()}.clip({lo!r}, {hi!r})"
            lower, upper = -math.inf if lo is None else lo, math.inf if hi is None else hi
            return E(text, s, min(max(e.lo, lower), upper), min(max(e.hi, lower), upper))
        if kind == "call":
            return self.call(d1, s)
        raise AssertionError(kind)

    def threshold(self, e: E) -> str:
        mid = (e.lo + e.hi) / 2
        return self.pick(["0.0", f"{round(mid, 1)!r}", "0.5", "-0.25"])

    def unary(self, e: E) -> E:
        op = self.weighted([(3, "tanh"), (2, "neg"), (2, "exp"), (2, "log"), (1, "sqrt"), (2, "sin"),
                            (1, "cos"), (2, "square"), (1, "abs"), (2, "pow"), (2, "scale"),
                            (1, "relu"), (1, "powc")])
        s, py = e.shape, e.py
        if op == "neg":
            return E(f"-{e.p()}", s, -e.hi, -e.lo, py, False, frozenset())
        if op == "tanh":
            return E(f"np.tanh({e.text})", s, math.tanh(e.lo), math.tanh(e.hi))
        if op in ("sin", "cos"):
            return E(f"np.{op}({e.text})", s, -1.0, 1.0)
        if op == "exp":
            a = e if e.hi <= EXP_MAX else self.squash(e)
            return E(f"np.exp({a.text})", s, math.exp(a.lo), math.exp(a.hi))
        if op == "log":
            a = self.positive(e, 0.1)
            return E(f"np.log({a.text})", s, math.log(a.lo), math.log(a.hi))
        if op == "sqrt":
            a = self.positive(e, 0.1)
            return E(f"np.sqrt({a.text})", s, math.sqrt(a.lo), math.sqrt(a.hi))
        if op == "square":
            lo, hi = sq_iv(e.lo, e.hi)
            return E(f"np.square({e.text})", s, lo, hi)
        if op == "abs":
            lo, hi = abs_iv(e.lo, e.hi)
            if self.chance(30):
                return E(f"abs({e.text})", s, lo, hi, py)
            return E(f"np.abs({e.text})", s, lo, hi)
        if op == "pow":
            k = self.pick([2, 3, 2.0])
            lo, hi = sq_iv(e.lo, e.hi) if k != 3 else (e.lo ** 3, e.hi ** 3)
            return E(f"{e.p()} ** {k!r}", s, lo, hi, py, False)
        if op == "powc":
            a = self.positive(e, 0.2)
            k = self.pick([0.5, 1.5, -0.5, 2.5, -1.0])
            vals = (a.lo ** k, a.hi ** k)
            return E(f"{a.p()} ** {k!r}", s, min(vals), max(vals), a.py, False)
        if op == "scale":
            c = self.pick([2.0, 0.5, -1.5, 0.1, 3.0])
            lo, hi = mul_iv(e.lo, e.hi, c, c)
            text = self.pick([f"{fmt(c)} * {e.p()}", f"{e.p()} * {fmt(c)}", f"{e.p()} / {fmt(1 / c)}"
                              if c in (2.0, 0.5) else f"{e.p()} * {fmt(c)}"])
            return E(text, s, lo, hi, py, False)
        if op == "relu":
            self.features.add("maximum")
            fn = self.pick(["maximum", "minimum"])
            lo, hi = (max(e.lo, 0.0), max(e.hi, 0.0)) if fn == "maximum" else (min(e.lo, 0.0), min(e.hi, 0.0))
            return E(f"np.{fn}({e.text}, 0.0)", s, lo, hi)
        raise AssertionError(op)

    def binary(self, d: int, s: tuple[int, ...]) -> E:
        r = self.reach()
        pairs = r.pairs.get(s, ())
        # mostly the full shape with itself or with something smaller
        preferred = [p for p in pairs if s in p]
        sa, sb = self.pick(preferred) if preferred and self.chance(75) else self.pick(pairs)
        a = self.const() if sa == () and self.chance(35) else self.exact(d, sa)
        b = self.const() if sb == () and not a.text[:1].isdigit() and self.chance(40) else self.exact(d, sb)
        op = self.weighted([(4, "+"), (3, "-"), (4, "*"), (2, "/"), (1, "max"), (1, "min"), (1, "pow"),
                            (1, "ufunc")])
        py = a.py and b.py
        if op == "ufunc":
            op = self.pick(["add", "subtract", "multiply"])
            fn = {"add": "+", "subtract": "-", "multiply": "*"}[op]
            e = self.arith(fn, a, b, s, py)
            return E(f"np.{op}({a.text}, {b.text})", s, e.lo, e.hi)
        if op in ("+", "-", "*"):
            return self.arith(op, a, b, s, py)
        if op == "/":
            if not (b.lo >= 0.5 or b.hi <= -0.5):
                b = self.positive(b, 0.5)
            inv = (1 / b.hi, 1 / b.lo)
            lo, hi = mul_iv(a.lo, a.hi, min(inv), max(inv))
            return E(f"{a.p()} / {b.p()}", s, lo, hi, a.py and b.py, False)
        if op in ("max", "min"):
            self.features.add("maximum")
            f = max if op == "max" else min
            fn = "maximum" if op == "max" else "minimum"
            return E(f"np.{fn}({a.text}, {b.text})", s, f(a.lo, b.lo), f(a.hi, b.hi))
        if op == "pow":
            self.features.add("power")
            base = self.positive(a, 0.2)
            ex = b if b.bound <= 1.5 else self.squash(b)
            lo, hi = mul_iv(math.log(base.lo), math.log(base.hi), ex.lo, ex.hi)
            text = self.pick([f"{base.p()} ** {ex.p()}", f"np.power({base.text}, {ex.text})"])
            return E(text, s, math.exp(lo), math.exp(hi), base.py and ex.py and "np." not in text, False)
        raise AssertionError(op)

    def arith(self, op: str, a: E, b: E, s: tuple[int, ...], py: bool) -> E:
        if op == "+":
            lo, hi = a.lo + b.lo, a.hi + b.hi
        elif op == "-":
            lo, hi = a.lo - b.hi, a.hi - b.lo
        else:
            lo, hi = mul_iv(a.lo, a.hi, b.lo, b.hi)
        right = b.p() if op != "-" or b.atom else f"({b.text})"
        return E(f"{a.p()} {op} {right}", s, lo, hi, py, False)

    def matmul(self, d: int, s: tuple[int, ...]) -> E:
        self.features.add("matmul")
        sa, sb = self.pick(self.reach().matmuls[s])
        a, b = self.exact(d, sa), self.exact(d, sb)
        n = sa[-1]
        lo, hi = mul_iv(a.lo, a.hi, b.lo, b.hi)
        forms = [f"{a.p()} @ {b.p()}", f"np.matmul({a.text}, {b.text})"]
        if len(sa) <= 2:
            forms.append(f"np.dot({a.text}, {b.text})")
            forms.append(f"{a.p()}.dot({b.text})")
        text = self.pick(forms)
        return E(text, s, n * lo, n * hi, False, "@" not in text)

    def where(self, d: int, s: tuple[int, ...]) -> E:
        self.features.add("where")
        a = self.exact(d, s)
        b = self.exact(d, self.operand_shape(s))
        c = self.exact(d, self.operand_shape(s))
        cmp = self.pick([">", "<"])
        if self.chance(50):
            a, b = b, a
        lo, hi = hull((a.lo, a.hi), (b.lo, b.hi))
        return E(f"np.where({c.p()} {cmp} {self.threshold(c)}, {a.text}, {b.text})", s, lo, hi)

    def where_nan(self, d: int, s: tuple[int, ...]) -> E:
        """``np.where(u > t, F(u), b)``, ``F(u)`` NaN or infinite where ``u <= t`` may hold."""
        self.features.add("where-nan")
        su = self.pick([s, self.operand_shape(s)])
        u = self.exact(d, su)
        if not u.lo < 0.0 < u.hi:  # centred, so that both branches are taken somewhere
            mid = round((u.lo + u.hi) / 2, 1)
            u = E(f"({u.text} - {mid!r})", su, u.lo - mid, u.hi - mid, u.py, True)
        b = self.exact(d, self.operand_shape(s) if su == s else s)
        fn = self.weighted([(3, "sqrt"), (2, "log"), (2, "div"), (1, "pow"), (1, "sinc")])
        if fn in ("div", "sinc") or self.chance(25):  # exact zeros: division by zero, sqrt'(0)
            lo, hi = max(u.lo, 0.0), max(u.hi, 0.0)
            u = E(f"np.maximum({u.text}, 0.0)", su, lo, hi, False, True)
        if fn == "sinc":
            # NaN (0 / 0) exactly where the other branch is taken
            text = f"np.where({u.p()} == 0.0, {b.text}, np.sin({u.text}) / {u.p()})"
            return E(text, s, min(b.lo, -0.3), max(b.hi, 1.0))
        t = self.pick([0.1, 0.25, 0.5])
        top = max(u.hi, t)
        if fn == "sqrt":
            branch, lo, hi = f"np.sqrt({u.text})", math.sqrt(t), math.sqrt(top)
        elif fn == "log":
            branch, lo, hi = f"np.log({u.text})", math.log(t), math.log(top)
        elif fn == "pow":
            branch, lo, hi = f"{u.p()} ** 1.5", t ** 1.5, top ** 1.5
        else:
            a = self.exact(d, self.operand_shape(su))
            branch = f"{a.p()} / {u.p()}"
            lo, hi = mul_iv(a.lo, a.hi, 1 / top, 1 / t)
        if u.hi > t:
            lo, hi = hull((lo, hi), (b.lo, b.hi))
        else:
            lo, hi = b.lo, b.hi
        if self.chance(50):
            text = f"np.where({u.p()} > {t!r}, {branch}, {b.text})"
        else:
            text = f"np.where({u.p()} <= {t!r}, {b.text}, {branch})"
        return E(text, s, lo, hi)

    def condition(self, d: int, data: bool = True) -> str:
        """A boolean condition for if/while/conditional expressions."""
        kinds: list[tuple[int, str]] = []
        if data:
            kinds += [(5, "cmp"), (2, "two"), (1, "all")]
        if self.sc.indices:
            kinds += [(3, "index")]
        if not kinds:
            kinds = [(1, "cmp")]
        kind = self.weighted(kinds)
        if kind == "index":
            name, lo, hi = self.pick(self.sc.indices)
            k = self.integer(lo, hi)
            return self.pick([f"{name} % 2 == 0", f"{name} == {k}", f"{name} > {k}", f"{name} < {k}"])
        if kind == "cmp":
            e = self.exact(d, ())
            text = f"{e.p()} {self.pick(['>', '<'])} {self.threshold(e)}"
        elif kind == "two":
            a, b = self.exact(d, ()), self.exact(d, ())
            text = f"{a.p()} > {b.p()}"
        else:
            r = self.reach()
            shapes = sorted((t for t in r.base if t), key=lambda t: (len(t), t))
            e = self.exact(d, self.pick(shapes) if shapes else ())
            text = f"np.{self.pick(['all', 'any'])}({e.p()} > {self.threshold(e)})"
        if self.sc.indices and self.chance(10):
            name, lo, hi = self.pick(self.sc.indices)
            text = f"{text} and {name} > {lo}"
        return text

    # --- helper functions --------------------------------------------------------------------------
    def call(self, d: int, s: tuple[int, ...]) -> E:
        self.features.add("helper")
        candidates = [h for h in self.helpers if h.single and h.results[0].shape == s and self.callable(h)]
        if candidates and self.chance(50):
            h = self.pick(candidates)
            args = self.call_args(d, h)
        else:
            h, args = self.new_helper(d, [s], single=True)
        res = h.results[0]
        # the result may be (a view of) an argument: never updated in place
        base = frozenset().union(*(a.base for a in args), {f"<{h.name}>"})
        return E(self.call_text(h, args), s, res.lo, res.hi, res.py, True, base)

    def callable(self, h: Helper) -> bool:
        r = self.reach()
        return all(shape in r.base for _, shape, _ in h.params)

    def call_args(self, d: int, h: Helper) -> list[E]:
        args = []
        for _, shape, m in h.params:
            e = self.exact(d, shape)
            if e.lo < -m or e.hi > m:
                e = self.squash(e)
            args.append(e)
        return args

    def call_text(self, h: Helper, args: list[E]) -> str:
        texts = [a.text for a in args]
        if len(texts) >= 2 and self.chance(25):
            self.features.add("keyword-argument")
            texts[-1] = f"{h.params[-1][0]}={texts[-1]}"
        return f"{h.name}({', '.join(texts)})"

    def new_helper(self, d: int, result_shapes: list[tuple[int, ...]], single: bool) -> tuple[Helper, list[E]]:
        r = self.reach()
        shapes = list(result_shapes[:1])
        base_shapes = sorted(r.base, key=lambda t: (len(t), t))
        for _ in range(self.integer(0, 2)):
            shapes.append(self.pick(base_shapes))
        for extra in result_shapes[1:]:
            if extra not in shapes:
                shapes.append(extra)
        args = [self.exact(d, t) for t in shapes]
        name = self.fresh("h")
        params = tuple((f"p{k}", a.shape, max(a.bound, 1.0)) for k, a in enumerate(args))
        outer, self.sc = self.sc, Scope({}, {}, [])
        self.helper_depth += 1
        try:
            self.sc.helper = True
            for pname, shape, m in params:
                self.sc.env[pname] = Var(pname, shape, -m, m, shape == (), caller=True, top=True, param=True)
            for _ in range(self.integer(0, 2)):
                self.statement()
            results = []
            for rs in result_shapes:
                results.append(self.moderate(self.exact(self.integer(0, 2), rs)))
            if single:
                ret = results[0].text
            else:
                ret = ", ".join(e.text for e in results)
                ret = self.pick([ret, f"({ret})"])
            self.emit(f"return {ret}")
            header = f"def {name}({', '.join(p for p, _, _ in params)}):"
            self.helper_sources.append("\n".join([header] + self.sc.lines))
        finally:
            self.sc = outer
            self.helper_depth -= 1
        h = Helper(name, params, tuple(E("", e.shape, e.lo, e.hi, e.py) for e in results), single)
        self.helpers.append(h)
        return h, args

    # --- statements --------------------------------------------------------------------------------
    def depth(self) -> int:
        return self.weighted([(3, 1), (3, 2), (1, 3), (1, 0)])

    def statement(self) -> None:
        sc = self.sc
        in_loop = bool(sc.loops)
        compound = sc.nest < 2
        carried = [n for c in sc.carried for n in sorted(c) if n in sc.env]
        table = [
            (30, "assign"),
            (6, "reassign"),
            (5, "augassign"),
            (5, "setitem"),
            (5, "tuple"),
            (8 if compound else 0, "if"),
            (6 if compound and len(sc.loops) < 2 else 0, "for"),
            (3 if compound and len(sc.loops) < 2 else 0, "while"),
            (3 if not sc.helper and (sc.nest == 0 or sc.loops) and self.helper_depth == 0 else 0, "early_return"),
            (10 if carried else 0, "carried"),
            (3 if in_loop and sc.loops[-1] == "for" else (1 if in_loop else 0), "jump"),
            (2 if self.helper_depth == 0 else 0, "call_tuple"),
        ]
        kind = self.weighted(table)
        getattr(self, "stmt_" + kind)()

    def new_name(self) -> str:
        return self.fresh("v")

    def stmt_assign(self) -> None:
        s = self.target_shape()
        e = self.moderate(self.exact(self.depth(), s))
        if self.chance(8):
            self.features.add("stop_gradient")
            e = E(f"stop_gradient({e.text})", e.shape, e.lo, e.hi, e.py, True, e.base)
        name = self.new_name()
        self.emit(f"{name} = {e.text}")
        self.bind(name, e)

    def assignable_vars(self) -> list[Var]:
        return [v for v in self.sc.env.values() if self.assignable(v)]

    def note_assign(self, name: str) -> None:
        """Record that an existing variable is assigned (for the enclosing ifs)."""
        if self.sc.nest == 0 and name in self.sc.env:
            self.sc.env[name].param = False

    def stmt_reassign(self) -> None:
        cands = self.assignable_vars()
        if not cands:
            return self.stmt_assign()
        v = self.pick(cands)
        e = self.moderate(self.exact(self.depth(), v.shape))
        if v.name in self.sc.fixed:
            e = self.fit(e, self.sc.fixed[v.name])
        if e.text == v.name:
            return
        self.emit(f"{v.name} = {e.text}")
        self.features.add("reassign")
        self.bind(v.name, e, v)

    def stmt_augassign(self) -> None:
        cands = [v for v in self.assignable_vars() if self.inplace_ok(v)]
        if not cands:
            return self.stmt_assign()
        v = self.pick(cands)
        self.features.add("augassign")
        self.note_assign(v.name)
        s2 = self.operand_shape(v.shape)
        e = self.moderate(self.exact(self.depth(), s2))
        if v.name in self.sc.fixed:
            f = self.squash(e)
            self.emit(f"{v.name} *= {f.text}")
            return
        op = self.pick(["+=", "-=", "*=", "/="])
        if op == "/=":
            if not (e.lo >= 0.5 or e.hi <= -0.5):
                e = self.positive(e, 0.5)
            inv = (1 / e.hi, 1 / e.lo)
            lo, hi = mul_iv(v.lo, v.hi, min(inv), max(inv))
        elif op == "*=":
            lo, hi = mul_iv(v.lo, v.hi, e.lo, e.hi)
        elif op == "+=":
            lo, hi = v.lo + e.lo, v.hi + e.hi
        else:
            lo, hi = v.lo - e.hi, v.hi - e.lo
        self.emit(f"{v.name} {op} {e.text}")
        v.lo, v.hi, v.py = lo, hi, v.py and e.py
        if v.py is False and v.shape == ():
            v.base = frozenset()
        if max(abs(lo), abs(hi)) > LIMIT:
            self.emit(f"{v.name} = np.tanh({v.name})")
            v.lo, v.hi, v.py = math.tanh(lo), math.tanh(hi), False

    def stmt_setitem(self) -> None:
        cands = [v for v in self.assignable_vars() if v.shape and self.inplace_ok(v)]
        if not cands or self.chance(50):
            self.stmt_copy()
            cands = [v for v in self.assignable_vars() if v.shape and self.inplace_ok(v)]
            if not cands:
                return
            v = cands[-1]
        else:
            v = self.pick(cands)
        self.features.add("setitem")
        self.note_assign(v.name)
        pattern = tuple(self.pick(opts) for opts in
                        [["int", "full"] + [("part", n) for n in range(1, d)] for d in v.shape])
        r = pattern_shape(v.shape, pattern)
        idx = self.index_text(v.shape, pattern)
        e = self.moderate(self.exact(self.depth(), self.operand_shape(r)))
        fixed = self.sc.fixed.get(v.name)
        if fixed is not None:
            e = self.fit(e, fixed)
            if self.chance(30):
                f = self.squash(e)
                self.emit(f"{v.name}[{idx}] *= {f.text}")
                return
            self.emit(f"{v.name}[{idx}] = {e.text}")
            return
        if self.chance(25):
            op = self.pick(["+=", "-=", "*="])
            self.emit(f"{v.name}[{idx}] {op} {e.text}")
            if op == "*=":
                lo, hi = mul_iv(v.lo, v.hi, e.lo, e.hi)
            elif op == "+=":
                lo, hi = v.lo + e.lo, v.hi + e.hi
            else:
                lo, hi = v.lo - e.hi, v.hi - e.lo
            v.lo, v.hi = hull((v.lo, v.hi), (lo, hi))
        else:
            self.emit(f"{v.name}[{idx}] = {e.text}")
            v.lo, v.hi = hull((v.lo, v.hi), (e.lo, e.hi))
        if max(abs(v.lo), abs(v.hi)) > LIMIT:
            self.emit(f"{v.name} = np.tanh({v.name})")
            v.lo, v.hi = math.tanh(v.lo), math.tanh(v.hi)

    def stmt_copy(self) -> None:
        r = self.reach()
        shapes = sorted((t for t in r.base if t), key=lambda t: (len(t), t))
        env_shapes = sorted({v.shape for v in self.sc.env.values() if v.shape}, key=lambda t: (len(t), t))
        if not shapes:
            return self.stmt_assign()
        s = self.pick(env_shapes) if env_shapes and self.chance(70) else self.pick(shapes)
        kind = self.weighted([(5, "copy"), (2, "np.copy"), (2, "zeros_like"), (2, "zeros")])
        name = self.new_name()
        if kind == "zeros":
            self.emit(f"{name} = np.zeros({s!r})")
            self.sc.env[name] = Var(name, s, 0.0, 0.0, False, top=self.sc.nest == 0)
            return
        e = self.exact(self.integer(0, 1), s)
        if kind == "copy":
            text = f"{e.p()}.copy()"
        elif kind == "np.copy":
            text = f"np.copy({e.text})"
        else:
            text = f"np.zeros_like({e.text})"
        self.emit(f"{name} = {text}")
        lo, hi = (0.0, 0.0) if kind == "zeros_like" else (e.lo, e.hi)
        self.sc.env[name] = Var(name, s, lo, hi, False, top=self.sc.nest == 0)

    def stmt_tuple(self) -> None:
        self.features.add("tuple")
        kind = self.weighted([(3, "parallel"), (3, "pack"), (2, "swap"), (1, "sg")])
        if kind == "swap":
            pairs = [(a, b) for a, b in itertools.combinations(self.assignable_vars(), 2)
                     if a.shape == b.shape and self.sc.fixed.get(a.name) == self.sc.fixed.get(b.name)]
            if pairs:
                a, b = self.pick(pairs)
                self.emit(f"{a.name}, {b.name} = {b.name}, {a.name}")
                ea, eb = self.var_e(a), self.var_e(b)
                self.bind(a.name, eb, a)
                self.bind(b.name, ea, b)
                # each now holds the other's object: they may share memory with one another
                self.sc.env[a.name].base |= {b.name} | b.base
                self.sc.env[b.name].base |= {a.name} | a.base
                return
            kind = "parallel"
        n = self.integer(2, 3) if kind == "pack" else 2
        items = [self.moderate(self.exact(self.integer(0, 2), self.target_shape())) for _ in range(n)]
        if kind == "pack":
            name = self.fresh("t")
            text = ", ".join(e.text for e in items)
            self.emit(f"{name} = {self.pick([f'({text})', text])}")
            self.sc.tuples[name] = TupleVar(name, tuple(items))
            for e in items:
                self.sc.stored |= e.base
            if self.chance(50):
                targets = [self.new_name() for _ in items]
                self.emit(f"{', '.join(targets)} = {name}")
                for t, e in zip(targets, items):
                    self.bind(t, E(t, e.shape, e.lo, e.hi, e.py, True, e.base | {name}))
            return
        targets = []
        for e in items:
            existing = [v for v in self.assignable_vars() if v.shape == e.shape and v.name not in targets]
            if existing and self.chance(30):
                v = self.pick(existing)
                if v.name in self.sc.fixed:
                    continue
                targets.append(v.name)
            else:
                targets.append(self.new_name())
        if len(targets) != len(items):
            targets = [self.new_name() for _ in items]
        value = ", ".join(e.text for e in items)
        if kind == "sg":
            self.features.add("stop_gradient")
            value = f"stop_gradient(({value}))"
            for e in items:
                self.sc.stored |= e.base
        self.emit(f"{', '.join(targets)} = {value}")
        olds = {t: self.sc.env.get(t) for t in targets}
        for t, e in zip(targets, items):
            self.bind(t, e, olds[t])

    def stmt_call_tuple(self) -> None:
        self.features.add("helper")
        shapes = [self.target_shape(), self.target_shape()]
        h, args = self.new_helper(self.integer(0, 2), shapes, single=False)
        call = self.call_text(h, args)
        base = frozenset().union(*(a.base for a in args), {f"<{h.name}>"})  # results may share memory
        if self.chance(70):
            targets = [self.new_name(), self.new_name()]
            self.emit(f"{', '.join(targets)} = {call}")
            for t, res in zip(targets, h.results):
                self.bind(t, E(t, res.shape, res.lo, res.hi, res.py, True, base))
        else:
            k = self.integer(0, 1)
            name = self.new_name()
            self.emit(f"{name} = {call}[{k}]")
            res = h.results[k]
            self.bind(name, E(name, res.shape, res.lo, res.hi, res.py, True, base))

    def stmt_early_return(self) -> None:
        self.features.add("return-in-loop" if self.sc.loops else "early-return")
        cond = self.condition(self.integer(0, 2))
        self.emit(f"if {cond}:")
        self.sc.indent += 1
        text = self.result_expression(mark=False)
        self.emit(f"return {text}")
        self.sc.indent -= 1

    def stmt_carried(self) -> None:
        names = [n for c in self.sc.carried for n in sorted(c) if n in self.sc.env and n in self.sc.fixed]
        if not names:
            return self.stmt_assign()
        self.carried_update(self.pick(names))

    def carried_update(self, name: str) -> None:
        v = self.sc.env[name]
        m = self.sc.fixed[name]
        self.features.add("loop-carried")
        other = self.exact(self.depth(), self.operand_shape(v.shape))
        op = self.pick(["*", "+", "-"])
        me = self.var_e(v)
        inner = self.arith(op, me, other, v.shape, me.py and other.py)
        self.note_assign(name)
        form = self.weighted([(4, "tanh"), (3, "blend"), (2, "scale")] + ([(2, "inplace")] if self.inplace_ok(v) else []))
        if form == "blend":
            sq = self.squash(inner)
            self.emit(f"{name} = 0.5 * {name} + 0.5 * {sq.text}")
        elif form == "scale" or form == "inplace":
            sq = self.squash(inner if self.chance(50) else other)
            self.emit(f"{name} *= {sq.text}" if form == "inplace" else f"{name} = {name} * {sq.text}")
        else:
            fitted = self.fit(self.moderate(inner), m)
            self.emit(f"{name} = {fitted.text}")
            v.py = v.py and fitted.py
            return
        v.py = False if not (v.py and other.py) else v.py

    def stmt_jump(self) -> None:
        kind = "break" if self.sc.loops[-1] == "while" else self.pick(["continue", "break"])
        self.features.add(kind)
        cond = self.condition(self.integer(0, 1), data=self.chance(40) or not self.sc.indices)
        self.emit(f"if {cond}:")
        self.sc.indent += 1
        self.emit(kind)
        self.sc.indent -= 1

    def block(self, n_max: int) -> None:
        start = len(self.sc.lines)
        for _ in range(self.integer(1, n_max)):
            self.statement()
        if len(self.sc.lines) == start:  # every statement drawn turned out empty
            self.stmt_assign()

    def stmt_if(self) -> None:
        sc = self.sc
        self.features.add("if")
        n_branches = self.weighted([(4, 2), (2, 1), (1, 3)])
        if n_branches == 3:
            self.features.add("elif")
        before = {n: Var(**vars(v)) for n, v in sc.env.items()}
        tuples_before = dict(sc.tuples)
        conds = [self.condition(self.integer(0, 1)) for _ in range(max(n_branches - 1, 1))]
        # new variables every branch assigns
        joined: list[tuple[str, tuple[int, ...]]] = []
        if n_branches >= 2:
            for _ in range(self.integer(0, 1)):
                joined.append((self.new_name(), self.target_shape()))
        outcomes: list[dict[str, Var]] = []
        for k in range(n_branches):
            header = "if" if k == 0 else ("elif" if k < len(conds) else "else")
            self.emit(f"{header} {conds[k]}:" if header != "else" else "else:")
            sc.env = {n: Var(**vars(v)) for n, v in before.items()}
            sc.tuples = dict(tuples_before)
            sc.indent += 1
            sc.nest += 1
            self.block(3)
            for name, shape in joined:
                e = self.moderate(self.exact(self.depth(), shape))
                self.emit(f"{name} = {e.text}")
                self.bind(name, e)
            sc.indent -= 1
            sc.nest -= 1
            outcomes.append(sc.env)
        if n_branches == 1:
            outcomes.append(before)
        env: dict[str, Var] = {}
        for name in list(before) + [n for n, _ in joined]:
            vs = [o[name] for o in outcomes if name in o]
            if len(vs) != len(outcomes):
                continue
            first = vs[0]
            lo, hi = hull(*((v.lo, v.hi) for v in vs))
            env[name] = Var(name, first.shape, lo, hi, any(v.py for v in vs),
                            frozenset().union(*(v.base for v in vs)), any(v.used for v in vs), first.caller,
                            first.top or sc.nest == 0, all(v.param for v in vs))
        sc.env = env
        sc.tuples = tuples_before

    def loop_setup(self) -> tuple[tuple[dict[str, float], set[str]], set[str]]:
        """Choose the carried variables; returns what to restore after the loop."""
        sc = self.sc
        saved = (dict(sc.fixed), set(sc.protected))
        cands = [v for v in self.assignable_vars()]
        carried: set[str] = set()
        for _ in range(self.integer(1, 2)):
            if cands:
                v = self.pick(cands)
                carried.add(v.name)
        self._loop_info.append({})
        for name in carried:
            v = sc.env[name]
            m = sc.fixed.get(name, max(abs(v.lo), abs(v.hi), 1.0))
            sc.fixed[name] = m
            v.lo, v.hi = -m, m
            self._loop_info[-1][name] = (m, v.base, v.py)
        sc.protected |= {n for n in sc.env if n not in carried}
        sc.carried.append(carried)
        return saved, carried

    def loop_finish(self, saved: Any, carried: set[str], outer_names: set[str]) -> None:
        """Close the loop's body."""
        sc = self.sc
        for name in sorted(carried):
            if name in sc.env:
                self.carried_update(name)
        sc.carried.pop()
        sc.fixed, sc.protected = saved
        sc.env = {n: v for n, v in sc.env.items() if n in outer_names}
        sc.tuples = {n: t for n, t in sc.tuples.items() if n in self._tuples_before[-1]}
        self._tuples_before.pop()
        info = self._loop_info.pop()
        for name in carried:
            if name in sc.env:
                v = sc.env[name]
                m, base, py = info[name]
                v.lo, v.hi = -m, m  # the loop's invariant (it may run its body zero times)
                v.base, v.py = v.base | base, v.py or py

    _tuples_before: list[set[str]]
    _loop_info: list[dict[str, Any]]

    def stmt_for(self) -> None:
        sc = self.sc
        self.features.add("for")
        k = self.integer(1, 4)
        start = 0
        index = self.fresh("i")
        form = self.weighted([(5, "range"), (2, "start"), (2, "shape"), (1, "len")])
        lengths = [v for v in sc.env.values() if v.shape and 1 <= v.shape[0] <= 4]
        if form == "start":
            start = self.integer(1, 2)
            header = f"for {index} in range({start}, {start + k}):"
        elif form in ("shape", "len") and lengths:
            v = self.pick(lengths)
            k = v.shape[0]
            header = (f"for {index} in range({v.name}.shape[0]):" if form == "shape"
                      else f"for {index} in range(len({v.name})):")
            v.used = True
        else:
            header = f"for {index} in range({k}):"
        outer_names = set(sc.env)
        self._tuples_before = getattr(self, "_tuples_before", []) + [set(sc.tuples)]
        saved, carried = self.loop_setup()
        self.emit(header)
        sc.indent += 1
        sc.nest += 1
        sc.loops.append("for")
        sc.indices.append((index, start, start + k - 1))
        self.block(3)
        self.loop_finish(saved, carried, outer_names)
        sc.indices.pop()
        sc.loops.pop()
        sc.indent -= 1
        sc.nest -= 1

    def stmt_while(self) -> None:
        sc = self.sc
        self.features.add("while")
        k = self.integer(1, 4)
        counter = self.fresh("k")
        self.emit(f"{counter} = 0")
        outer_names = set(sc.env)
        self._tuples_before = getattr(self, "_tuples_before", []) + [set(sc.tuples)]
        saved, carried = self.loop_setup()
        cond = f"{counter} < {k}"
        if self.chance(20):
            self.features.add("while-data")
            cond += f" and {self.condition(self.integer(0, 1))}"
        self.emit(f"while {cond}:")
        sc.indent += 1
        sc.nest += 1
        sc.loops.append("while")
        sc.indices.append((counter, 0, k - 1))
        self.block(3)
        self.loop_finish(saved, carried, outer_names)
        self.emit(self.pick([f"{counter} += 1", f"{counter} = {counter} + 1"]))
        sc.indices.pop()
        sc.loops.pop()
        sc.indent -= 1
        sc.nest -= 1

    # --- the whole program --------------------------------------------------------------------------
    def result_expression(self, mark: bool = True) -> str:
        env = self.sc.env
        unused = [v for v in env.values() if not v.used]
        chosen = unused[-3:]
        last = list(env.values())[-1]
        if last not in chosen:
            chosen.append(last)
        terms = []
        for v in chosen:
            if mark:
                v.used = True
            fn = self.weighted([(4, "sum"), (3, "mean"), (1, "method"), (1, "square")])
            if fn == "method" and not v.py:
                terms.append(f"{v.name}.{self.pick(['sum', 'mean'])}()")
            elif fn == "square":
                terms.append(f"np.sum({v.name} ** 2)")
            else:
                terms.append(f"np.{'sum' if fn != 'mean' else 'mean'}({v.name})")
        text = " + ".join(terms)
        if self.chance(15):
            text = f"0.5 * ({text})"
        return text


@st.composite
def programs(draw: Callable[[st.SearchStrategy[Any]], Any], max_statements: int = 6,
             nan_branches: bool | None = None) -> Program:
    """A random program: helpers and ``def f(...)`` returning a float scalar;
    ``nan_branches`` defaults to :data:`NAN_BRANCHES`."""
    g = Gen(draw, NAN_BRANCHES if nan_branches is None else nan_branches)
    g._tuples_before = []
    g._loop_info = []
    n_args = g.integer(1, 3)
    args = []
    for k in range(n_args):
        kind = g.weighted([(6, "array"), (2, "float")])
        domain = g.weighted([(4, "real"), (1, "positive")])
        lo, hi = DOMAINS[domain]
        if kind == "float":
            args.append(Arg(f"s{k}", (), True, lo, hi))
        else:
            args.append(Arg(f"x{k}", g.pick(ARG_SHAPES), False, lo, hi))
    for a in args:
        g.sc.env[a.name] = Var(a.name, a.shape, a.lo, a.hi, a.py, top=True, param=True)
    for _ in range(g.integer(1, max_statements)):
        g.statement()
    g.emit(f"return {g.result_expression()}")
    header = f"def f({', '.join(a.name for a in args)}):"
    main = "\n".join([header] + g.sc.lines)
    source = "\n\n\n".join(["import numpy as np\nfrom s2sad import stop_gradient"] + g.helper_sources + [main]) + "\n"
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return Program(source, tuple(args), seed, frozenset(g.features))
