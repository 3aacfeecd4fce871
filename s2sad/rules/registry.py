"""The registry of differentiation rules, keyed by the function object.

A rule is data: the primitive's parameter list and, for each parameter a
gradient flows through, a *template* -- a Python expression written as the
math, in terms of

* ``g``: the incoming gradient (the adjoint of the primitive's output),
* ``ans``: the primitive's output,
* the primitive's parameters by name,
* ``np`` and the helpers of :mod:`s2sad.runtime`.

Templates are checked when they are declared and compiled once into pieces
that generation only joins.  A parameter without a template gets no gradient.
"""
from __future__ import annotations

import builtins
import functools
import importlib
import io
import keyword
import re
import sys
import tokenize
import types
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

from .. import runtime
from ..errors import RuleError

if TYPE_CHECKING:
    from .shapes import ShapeFunction

T = TypeVar("T")

RUNTIME_NAMES: frozenset[str] = frozenset(["np", *runtime.__all__])
#: The first parameter of a compiled method's rule: the instance (Registry.rule binds a call on
#: an instance, ``rng.normal(mu)``, without it).
RECEIVER = "receiver"
#: Objects that user rules call (``s2sad.defvjp`` with Python functions), by name.
USER_OBJECTS: dict[str, Any] = {}
_ATOM = re.compile(r"^(?:[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)*|\d[\d_]*\.?\d*(?:[eE][+-]?\d+)?|None|True|False)$")


def is_atomic(code: str) -> bool:
    """Whether ``code`` can stand as an operand anywhere without parentheses."""
    return bool(_ATOM.match(code))


@dataclass(frozen=True)
class Param:
    name: str
    default: str | None = None  # source code of the default; None: required
    star: bool = False  # a ``*args`` parameter
    keyword_only: bool = False  # after ``*`` or ``*args``


class Template:
    """A rule expression, compiled into literal text and named holes on first use (the
    built-in tables hold hundreds: compiling them all at import would slow ``import s2sad``)."""

    def __init__(self, text: str, placeholders: Iterable[str]) -> None:
        self.text = text
        self._placeholders = frozenset(placeholders)

    @functools.cached_property
    def _compiled(self) -> tuple[tuple[Any, ...], frozenset[str], frozenset[str]]:
        return _compile(self.text, self._placeholders)

    @property
    def pieces(self) -> tuple[Any, ...]:
        """str literals and (name, kind) holes"""
        return self._compiled[0]

    @property
    def holes(self) -> frozenset[str]:
        """placeholder names used (g, ans, parameters)"""
        return self._compiled[1]

    @property
    def runtime(self) -> frozenset[str]:
        """runtime names used (np, helpers)"""
        return self._compiled[2]

    def check(self) -> None:
        """Compile now: a syntax error or an unknown name is a :class:`RuleError` here."""
        self._compiled

    def __repr__(self) -> str:
        return f"Template({self.text!r})"

    def render(self, values: dict[str, str], names: dict[str, str]) -> str:
        """Fill the holes: ``values`` for placeholders, ``names`` for runtime names."""
        out = []
        for piece in self.pieces:
            if isinstance(piece, str):
                out.append(piece)
                continue
            name, kind = piece
            if kind == "runtime":
                out.append(names.get(name, name))
                continue
            code = values[name]
            out.append(code if kind == "bare" or is_atomic(code) else f"({code})")
        return "".join(out)


def compile_template(text: str, placeholders: Iterable[str]) -> Template:
    """A rule expression, compiled when first used (:meth:`Template.check` compiles it now)."""
    return Template(text, placeholders)


def _compile(text: str, placeholders: frozenset[str]) -> tuple[tuple[Any, ...], frozenset[str], frozenset[str]]:
    """Compile a rule expression; unknown free names are a :class:`RuleError`."""
    try:
        compile(text, "<rule>", "eval")
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                  if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)]
    except (SyntaxError, tokenize.TokenError) as exc:
        raise RuleError(f"rule template {text!r} is not a Python expression: {exc}") from None
    pieces: list[Any] = []
    holes: set[str] = set()
    runtime_used: set[str] = set()
    pos = 0
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.NAME:
            continue
        prev = tokens[i - 1].string if i else ""
        nxt = tokens[i + 1].string if i + 1 < len(tokens) else ""
        if prev == "." or keyword.iskeyword(tok.string) or nxt == "=" and prev in "(,":
            continue
        start = tok.start[1]
        pieces.append(text[pos:start])
        pos = tok.end[1]
        if tok.string in placeholders:
            bare = prev in ("(", ",", "=", "") and nxt in (")", ",", "")
            pieces.append((tok.string, "bare" if bare else "operand"))
            holes.add(tok.string)
        elif tok.string in RUNTIME_NAMES or tok.string in USER_OBJECTS:
            pieces.append((tok.string, "runtime"))
            runtime_used.add(tok.string)
        elif hasattr(builtins, tok.string):
            pieces.append(tok.string)
        else:
            raise RuleError(
                f"rule template {text!r} uses unknown name {tok.string!r}; use g, ans, the "
                f"parameters ({', '.join(sorted(placeholders - {'g', 'ans'}))}), np, or a "
                f"helper from s2sad.runtime"
            )
    pieces.append(text[pos:])
    return tuple(p for p in pieces if p != ""), frozenset(holes), frozenset(runtime_used)


def parse_params(spec: str) -> tuple[Param, ...]:
    """Parse ``"a, axis=None, *, keepdims=False"`` into parameters."""
    params, keyword_only = [], False
    for part in (p.strip() for p in _top_level_split(spec) if p.strip()):
        if part.startswith("*"):
            if part != "*":
                params.append(Param(part[1:], "()", star=True))
            keyword_only = True
        elif "=" in part:
            name, default = (s.strip() for s in part.split("=", 1))
            params.append(Param(name, default, keyword_only=keyword_only))
        else:
            params.append(Param(part, keyword_only=keyword_only))
    return tuple(params)


def _top_level_split(spec: str) -> list[str]:
    """``spec`` split at the commas outside brackets (a default may be a tuple)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(spec):
        depth += (char in "([{") - (char in ")]}")
        if char == "," and not depth:
            parts.append(spec[start:i])
            start = i + 1
    return parts + [spec[start:]]


@dataclass(frozen=True)
class Rule:
    """How one primitive differentiates."""

    fun: Any
    name: str
    params: tuple[Param, ...]
    vjps: dict[str, Template] = field(default_factory=dict)
    #: Parameters broadcast against each other: their templates give the gradient in
    #: the output's shape, and generation reduces it to the argument's (``unbroadcast``)
    #: unless the other arguments are scalars.
    broadcast: tuple[str, ...] = ()
    #: The output is a scalar when every broadcast argument is (e.g. ``exp``, ``+``).
    #: Forward mode reuses the adjoint templates: they are elementwise and linear in ``g``.
    elementwise: bool = False
    #: Forward mode for a linear function: "joint" (linear in all its differentiable
    #: arguments together: the function applied to their tangents, e.g. ``+``,
    #: ``np.concatenate``) or "each" (linear in each one, e.g. ``@``: one application
    #: per argument, the others as they are).
    linear: str | None = None
    #: Explicit forward-mode templates, in ``t`` (the argument's tangent), ``ans`` and
    #: the parameters, for what is neither elementwise nor linear.
    jvps: dict[str, Template] = field(default_factory=dict)
    #: Differentiable parameters with no adjoint template (forward mode only).
    forward_only: tuple[str, ...] = ()
    #: Parameters that may be tuples, lists or dicts (their gradients add leaf by leaf).
    containers: tuple[str, ...] = ()
    #: Whether the result may be a tuple, list or dict.
    returns_container: bool = False
    #: For a parameter the output reads only where a mask holds (``np.where``'s branches): the
    #: mask, in terms of the parameters.  The parameter's adjoint is zero elsewhere, and what
    #: only feeds it is differentiated with the mask applied to its local derivatives too, so
    #: an untaken branch's NaN or inf never reaches the gradient.
    masks: dict[str, Template] = field(default_factory=dict)
    #: Parameters declared to carry no gradient (a template of None): they only select or
    #: shape the result (an axis, a shape, a condition).  A value that carries a gradient
    #: passed to a parameter that is neither differentiable nor inert is an error.
    inert: frozenset[str] = frozenset()
    #: Parameters a gradient would flow through but s2sad does not differentiate: why, said
    #: (at the user's call) when a value that carries a gradient reaches one.
    refused: dict[str, str] = field(default_factory=dict)
    #: What the result is from what the operands are (rules/shapes.py), for specialised code;
    #: None: not followed (the generic code is kept).
    shape: ShapeFunction | None = None
    #: Parameters that the rule covers at their default only: why, said at the user's call when
    #: a gradient flows through a call that passes another value (a generalized problem's second
    #: matrix, weights, overwrite_a=True), whether or not that argument carries a gradient.
    unsupported: dict[str, str] = field(default_factory=dict)

    def differentiable(self) -> set[str]:
        """The parameters a gradient or a tangent flows through."""
        return set(self.vjps) | set(self.jvps) | set(self.forward_only)

    def bind(self, args: list[T], kwargs: dict[str, T], default: Callable[[str], T],
             pack: Callable[[list[T]], T]) -> dict[str, T]:
        """Match call arguments to parameters; ValueError if they do not fit.

        ``default`` makes a value from a parameter's default code and ``pack``
        gathers the arguments of a ``*args`` parameter.
        """
        bound: dict[str, T] = {}
        positional = list(args)
        for p in self.params:
            if p.star:
                bound[p.name] = pack(positional)
                positional = []
            elif positional and not p.keyword_only:
                bound[p.name] = positional.pop(0)
        if positional:
            count = sum(not p.keyword_only for p in self.params)
            raise ValueError(f"{self.name} takes at most {count} positional arguments")
        for key, value in kwargs.items():
            if key in bound or not any(p.name == key and not p.star for p in self.params):
                raise ValueError(f"s2sad does not differentiate {self.name} with argument '{key}'")
            bound[key] = value
        for p in self.params:
            if p.name not in bound:
                if p.default is None:
                    raise ValueError(f"{self.name} is missing its argument '{p.name}'")
                bound[p.name] = default(p.default)
        return {p.name: bound[p.name] for p in self.params}


class Registry:
    """Rules keyed by function object, plus the declared non-differentiable functions and
    the shape functions of functions without a rule.

    A bound method (``scipy.stats.norm.logpdf``, ``np.add.reduce``: a new object at each
    attribute access) is keyed by its object and function.  Rule modules for optional
    libraries are imported on the first lookup that misses once that library has been
    imported (``lazy``).
    """

    def __init__(self) -> None:
        self.rules: dict[int, Rule] = {}
        self.nondiff: dict[int, Any] = {}
        #: The shape functions of functions without a rule (comparisons, ``stop_gradient``,
        #: NumPy's ufuncs without a gradient), with the function, which keeps its id taken.
        self.shapes: dict[int, tuple[Any, ShapeFunction]] = {}
        self.methods: dict[tuple[int, int], int] = {}  # (id of self, id of function) -> key
        #: (library, rule module): the rule module is imported once the library is.
        self.lazy: list[tuple[str, str]] = []
        #: Functions without a rule that s2sad refuses with a reason of their own (what to write
        #: instead), said at the user's call when a gradient reaches one.
        self.refusals: dict[int, tuple[Any, str]] = {}
        #: Whether the user declared a rule or a non-differentiable function (s2sad.custom):
        #: generated code then depends on declarations made at run time.
        self.user_declared = False
        #: The rules of compiled methods bound to an instance, by the id of their class's rule.
        self._bound_rules: dict[int, tuple[Rule, Rule]] = {}

    def key(self, fun: Any) -> int:
        """The key of ``fun``: its id, or for a bound method the id of the one declared."""
        method = _bound_method(fun)
        if method is not None:
            return self.methods.get((id(method[0]), id(method[1])), id(fun))
        return id(fun)

    def load_lazy(self) -> None:
        """Import the rule modules whose library has been imported since the last call."""
        for entry in [e for e in self.lazy if e[0] in sys.modules]:
            self.lazy.remove(entry)
            importlib.import_module(entry[1])

    def rule(self, fun: Any) -> Rule | None:
        found = self.rules.get(self.key(fun))
        if found is None and self.lazy:
            self.load_lazy()
            found = self.rules.get(self.key(fun))
        if found is None:
            found = self._bound_rule(fun)
        return found

    def applies_to_any_instance(self, fun: Any) -> bool:
        """Whether ``fun`` is a compiled method bound to an instance whose rule is its class's
        (``rng.normal``): the rule holds for whichever instance the name holds when the code runs."""
        return self.rules.get(self.key(fun)) is None and self._bound_rule(fun) is not None

    def _bound_rule(self, fun: Any) -> Rule | None:
        """For a compiled method bound to any instance (``rng.normal``), its class's rule,
        declared with the receiver first (``receiver, loc=0.0, ...``), without the receiver."""
        method = _bound_method(fun)
        if method is None or isinstance(method[1], types.FunctionType):
            return None
        unbound = self.rules.get(id(method[1]))
        if unbound is None or not unbound.params or unbound.params[0].name != RECEIVER:
            return None
        known = self._bound_rules.get(id(unbound))
        if known is None or known[0] is not unbound:
            known = self._bound_rules[id(unbound)] = (unbound, replace(
                unbound, params=unbound.params[1:], inert=unbound.inert - {RECEIVER}))
        return known[1]

    def refusal(self, fun: Any) -> str | None:
        """Why ``fun`` is refused, if it or its type (an np.vectorize object) is declared so."""
        if self.lazy:
            self.load_lazy()
        for candidate in (fun, type(fun)):
            found = self.refusals.get(self.key(candidate))
            if found is not None:
                return found[1]
        return None

    def declare_refused(self, fun: Any, why: str) -> None:
        """Declare that ``fun`` has no rule and why, with what to write instead."""
        self.refusals[self._declare(fun)] = (fun, why)

    def is_nondifferentiable(self, fun: Any) -> bool:
        if self.lazy:
            self.load_lazy()
        return self.key(fun) in self.nondiff

    def shape(self, fun: Any) -> ShapeFunction | None:
        """What ``fun`` returns, from what its operands are (rules/shapes.py): its rule's shape
        function, or the one declared for it without a rule; None if there is none."""
        key = self.key(fun)
        rule = self.rules.get(key)
        if rule is not None:
            return rule.shape
        return self.shapes[key][1] if key in self.shapes else None

    def defshape(self, fun: Any, shape: ShapeFunction) -> None:
        """Declare what ``fun`` returns (its rule's shape, if it has a rule)."""
        key = self._declare(fun)
        rule = self.rules.get(key)
        if rule is not None:
            self.rules[key] = replace(rule, shape=shape)
        else:
            self.shapes[key] = (fun, shape)

    def defvjp(self, fun: Any, params: str, *, name: str | None = None,
               broadcast: tuple[str, ...] = (), elementwise: bool = False,
               linear: str | None = None, jvp: dict[str, str] | None = None,
               forward_only: tuple[str, ...] = (), containers: tuple[str, ...] = (),
               returns_container: bool = False, masks: dict[str, str] | None = None,
               refuse: dict[str, str] | None = None, shape: ShapeFunction | None = None,
               unsupported: dict[str, str] | None = None, check: bool = False, **vjps: str | None) -> Rule:
        """Declare how ``fun`` differentiates: one adjoint template per differentiable
        parameter (None: the parameter carries no gradient), and what forward mode needs
        (elementwise, linear, or ``jvp`` templates).  ``shape`` says what it returns, for
        specialised code; a rule without one keeps the shape ``fun`` was declared with before
        (what it computes does not change with its gradient).

        The helpers of :mod:`s2sad.runtime` receive arrays for their shapes: their
        parameters without a template are inert.  Templates compile when first used;
        ``check=True`` compiles them now.
        """
        if self.lazy:  # a library's own rules first, so that this one replaces them
            self.load_lazy()
        plist = parse_params(params)
        names = {p.name for p in plist}
        unknown = (set(vjps) | set(masks or ()) | set(refuse or ()) | set(unsupported or ())) - names
        inert = {p for p, t in vjps.items() if t is None}
        vjps = {p: t for p, t in vjps.items() if t is not None}
        if (getattr(fun, "__module__", None) or "").startswith(runtime.__name__):  # the modules of s2sad.runtime
            inert = names - set(vjps) - set(jvp or {}) - set(forward_only)
        if unknown:
            raise RuleError(f"rule for {name or fun!r} has templates for unknown parameters {sorted(unknown)}")
        holes = names | {"g", "ans"}
        if linear not in (None, "joint", "each"):
            raise RuleError(f"linear must be 'joint' or 'each', not {linear!r}")
        rule = Rule(fun, name or _display_name(fun), plist,
                    {p: compile_template(t, holes) for p, t in vjps.items()}, broadcast, elementwise,
                    linear, {p: compile_template(t, names | {"t", "ans"}) for p, t in (jvp or {}).items()},
                    forward_only, containers, returns_container,
                    {p: compile_template(t, names) for p, t in (masks or {}).items()}, frozenset(inert),
                    dict(refuse or {}), shape or self.shape(fun), dict(unsupported or {}))
        if check:  # a user's rule: its mistakes are reported where it is declared
            for template in (*rule.vjps.values(), *rule.jvps.values(), *rule.masks.values()):
                template.check()
        key = self._declare(fun)
        self.rules[key] = rule
        self.nondiff.pop(key, None)
        self.shapes.pop(key, None)
        return rule

    def declare_nondifferentiable(self, *funs: Any) -> None:
        """Declare functions without a gradient (a rule they had goes, its shape stays)."""
        for fun in funs:
            key = self._declare(fun)
            self.nondiff[key] = fun
            rule = self.rules.pop(key, None)
            if rule is not None and rule.shape is not None:
                self.shapes[key] = (fun, rule.shape)

    def _declare(self, fun: Any) -> int:
        method = _bound_method(fun)
        if method is not None:
            self.methods.setdefault((id(method[0]), id(method[1])), id(fun))
        return self.key(fun)

    def differentiable(self) -> list[Rule]:
        return list(self.rules.values())


def _bound_method(fun: Any) -> tuple[Any, Any] | None:
    """The object and the function of a bound method: of a Python method, its ``__func__``; of a
    built-in one (``np.add.reduce``, a new object at each attribute access), its class's
    method of that name.  None for anything else (a built-in function's ``__self__`` is its module)."""
    if isinstance(fun, types.MethodType):
        return fun.__self__, fun.__func__
    owner = getattr(fun, "__self__", None)
    if isinstance(fun, types.BuiltinMethodType) and owner is not None and not isinstance(owner, types.ModuleType):
        method = getattr(type(owner), fun.__name__, None)
        return (owner, method) if method is not None else None
    return None


def _display_name(fun: Any) -> str:
    module = getattr(fun, "__module__", None) or ""
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)
    if module in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray") or isinstance(fun, _ufunc_type()):
        return f"np.{getattr(fun, '__name__', name)}"
    if module == "_operator":
        return f"operator.{name}"
    return f"{module}.{name}" if module and module != "builtins" else name


def _ufunc_type() -> type:
    import numpy as np

    return np.ufunc


class Primitive:
    """A language-level operation with no Python function of its own to key a rule on."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


#: ``xs + [x]``, which is how s2sad writes ``xs.append(x)``.
APPEND = Primitive("append")
#: ``out = x.copy(); out[index] = v``, which is how s2sad writes ``x[index] = v``.
SETITEM = Primitive("setitem")


def pack_rule(keys: list[Any]) -> Rule:
    """The rule of a tuple, list or dict display: element ``k`` gets ``g[k]``."""
    params = tuple(Param(f"e{i}") for i in range(len(keys)))
    holes = {p.name for p in params} | {"g", "ans"}
    return Rule(None, "display", params,
                {p.name: compile_template(f"g[{k!r}]", holes) for p, k in zip(params, keys)},
                linear="joint", returns_container=True)


REGISTRY = Registry()
defvjp: Callable[..., Rule] = REGISTRY.defvjp
