"""The backward program under construction: its lines and blocks, what each reads, and the
:class:`Adjoint` that the derivative generators (reverse, forward) fill and the optimizer
and codegen consume."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterator, Union

import numpy as np

from .. import runtime as runtime_module
from ..errors import InternalRuleError, NoGradientRuleError
from ..ir import Assign, Call, Function, If, Loop, Opaque, Operand, Stmt, Var, assigned_names
from ..rules.registry import USER_OBJECTS
from .callees import Build, MethodOfSelf, RecursiveCall
from .source import FunctionSource

MISSING = object()
#: runtime helpers that return a new array no other name holds (code may update it in place)
FRESH_HELPERS = ("zeros_grad", "getitem_grad", "seed", "matmul_grad_lhs", "matmul_grad_rhs",
                 "dot_grad_lhs", "dot_grad_rhs")


def runtime_object(name: str) -> object:
    """The object generated code means by runtime name ``name``."""
    if name == "np":
        return np
    return USER_OBJECTS[name] if name in USER_OBJECTS else getattr(runtime_module, name)


@dataclass(frozen=True)
class Line:
    """One generated statement of the backward pass."""

    code: str
    reads: frozenset[str]
    group: int  # file line of the user statement it differentiates
    source: str  # that statement's text


@dataclass
class Block:
    """A compound statement of the backward pass: a replayed ``if`` or a reversed loop."""

    header: str
    reads: frozenset[str]
    body: list["Out"]
    orelse: list["Out"] = field(default_factory=list)
    loop: Loop | None = None  # for a reversed loop: its first body line pops ``loop.saved``
    branch: If | None = None  # for a replayed if: its branches first pop ``branch.saves``


Out = Union[Line, Block]


@dataclass(eq=False)
class Support:
    """Where an adjoint may be nonzero: a boolean mask in a shape that broadcasts to the
    variable's, computed by a backward line (after ``anchor``) the first time it is needed.

    An adjoint has one when every contribution to it is zero outside the mask: the branch of
    an ``np.where``, and what only feeds one through elementwise functions; contributions
    with different supports, the union of theirs (``parts``).
    """

    code: str | None  # a rule's mask ("condition" for np.where's x)
    reads: frozenset[str]
    operand: str  # the variable whose shape the mask takes
    anchor: tuple[list[Out], Line] | None  # the contribution the mask is computed after
    parent: "Support | None" = None  # the output adjoint's support, which the mask narrows
    name: str | None = None  # the backward variable holding it, once computed
    parts: tuple["Support", ...] = ()  # for a union: the supports it joins
    line: Line | None = None  # the line computing it, once computed

    def anchored(self) -> tuple[list[Out], Line] | None:
        """Its anchor; a union's is its last part's."""
        return self.anchor or (self.parts[-1].anchored() if self.parts else None)


def joined(old: Support | None, new: Support, out: list[Out], operand: str) -> Support | None:
    """The support of an adjoint with contributions zero outside ``old`` and outside ``new``:
    their union, when both masks can be computed in ``out`` (the block adding them), else none."""
    if old is None or old is new:
        return None if old is None else new
    before, anchor = old.anchored(), new.anchored()
    if before is None or before[0] is not out or anchor is not None and anchor[0] is not out:
        return None
    return Support(None, frozenset(), operand, None, parts=(old, new))


def mask_position(outs: list[Out], anchor: Line, parts: tuple[Support, ...]) -> int:
    """Where the line computing a support's mask goes in ``outs``: after its ``anchor``, and
    after the masks of the ``parts`` its union joins."""
    return 1 + max(next(i for i, x in enumerate(outs) if x is a) for a in (anchor, *(p.line for p in parts)))


@dataclass
class Adjoint:
    """The generated function, before cleanup and code generation."""

    fn: Function
    source: FunctionSource
    wrt: tuple[str, ...]
    multiple: bool  # wrt was given as a tuple: return a tuple of gradients
    name: str  # the generated function's name
    forward: list[Stmt]
    value: Operand
    seed: str | None  # the seed statement
    backward: list[Out]
    results: list[str]  # one expression per wrt argument
    runtime: dict[str, str] = field(default_factory=dict)  # runtime name -> name in the code
    value_copy: str | None = None  # a copy of the value, when backward loops overwrite it
    seed_param: str | None = None  # for a vjp: the parameter that brings the output's gradient
    callees: dict[str, Any] = field(default_factory=dict)  # name -> generated vjp of a callee
    kind: str = "grad"
    value_needed: bool = True  # whether the seed reads the output's value
    split: bool = True  # callees called mid-expression keep their forward values (kind "split")
    backward_name: str | None = None  # kind "split": the closure that runs the backward pass
    split_calls: list[tuple[Assign, str]] = field(default_factory=list)  # (call, its closure's name)
    build: Build | None = None  # the compiler's entry point, for callees
    trusted: frozenset[str] = frozenset()  # wrt arguments of a type known to be right (no check)
    shared_results: bool = True  # two returned gradients may be one array (copied by ``distinct``)
    known: dict[str, Any] | None = None  # specialised code: what is known of each variable (rules/shapes.Known)
    specialized_to: str = ""  # specialised code: the argument shapes and dtypes, as its file name says them
    owned: dict[str, frozenset[str] | None] = field(default_factory=dict)  # specialised: passes/shapes.origins
    # name -> (function, wrt) of a split callee that is a plain function (it can be specialised)
    callee_origins: dict[str, tuple[Any, tuple[str, ...]]] = field(default_factory=dict)
    shares_stopped: bool = False  # a call on stop_gradient(x) shares the same call on x's value

    def callee(self, function: Any, wrt: tuple[str, ...], kind: str = "vjp") -> str:
        """The name under which this code calls the vjp (or jvp, ...) of ``function``."""
        if self.build is None:
            raise InternalRuleError(f"no compiler is given to generate the code of callee {function!r}")
        if isinstance(function, (MethodOfSelf, RecursiveCall)):  # code chosen at run time
            vjp = function.adjoint(wrt, kind, self.split, self.build)
        elif getattr(function, "__module__", None) == "s2sad.api":
            raise NoGradientRuleError(
                "this calls a function that s2sad returned (a jvp, vjp, hvp, jacobian or hessian, or a "
                "gradient with has_aux), which s2sad does not differentiate; differentiate the function "
                "it was made from: s2sad.hvp(f), s2sad.hessian(f), s2sad.jacobian(s2sad.grad(f)), or "
                "s2sad.grad of s2sad.grad(f)")
        elif (getattr(function, "__module__", None) or "").split(".")[0] == "s2sad":
            # generated code calls s2sad's helpers as primitives, through their declared rules
            raise InternalRuleError(
                f"s2sad's own function {function.__module__}.{function.__qualname__} has no "
                f"declared rule (s2sad/rules/runtime_rules.py), so the code that calls it cannot be "
                f"differentiated; this is a bug in s2sad, please report it")
        else:
            vjp = self.build(function, wrt if len(wrt) > 1 else wrt[0], kind, split=self.split)
        name = self.callee_name(vjp)
        if kind == "split" and not isinstance(function, (MethodOfSelf, RecursiveCall)):
            self.callee_origins[name] = (function, wrt)
        return name

    def callee_name(self, generated: Any) -> str:
        """The name under which this code calls ``generated`` (a callee's generated code)."""
        for name, known in self.callees.items():
            if known is generated:
                return name
        name = generated.__name__ if generated.__name__ not in self.fn.names else self.fn.fresh(generated.__name__)
        self.fn.names.add(name)
        self.callees[name] = generated
        return name

    def use(self, name: str) -> str:
        """Record that the code uses runtime name ``name``; return its spelling."""
        if name not in self.runtime:
            mine = runtime_object(name)
            taken = name in self.fn.user_names and self.fn.free.get(name, MISSING) is not mine
            self.runtime[name] = self.fn.fresh(name) if taken else name
        return self.runtime[name]


def lines(outs: list[Out]) -> Iterator[Line | Block]:
    """Every line and block in ``outs``, nested ones included."""
    for out in outs:
        yield out
        if isinstance(out, Block):
            yield from lines(out.body)
            yield from lines(out.orelse)



def detached(adj: Adjoint) -> Adjoint:
    """A copy of ``adj`` that the passes after the reverse pass may change without changing
    ``adj``: its statements, blocks, lists, dicts and the function's names are copied; what
    they never change is shared (libcst nodes, rules, operands, lines, the source, the
    user's objects, which keep their identity)."""
    copies: dict[int, Any] = {}

    def stmt(s: Stmt) -> Stmt:
        if id(s) in copies:
            return copies[id(s)]
        new = copies[id(s)] = copy.copy(s)
        if isinstance(new, Assign) and isinstance(new.value, (Call, Opaque)):
            new.value = copy.copy(new.value)
        elif isinstance(new, If):
            new.body, new.orelse = [stmt(x) for x in new.body], [stmt(x) for x in new.orelse]
        elif isinstance(new, Loop):
            new.body, new.carried = [stmt(x) for x in new.body], list(new.carried)
        return new

    def out(x: Out) -> Out:
        if isinstance(x, Line):
            return x
        return Block(x.header, x.reads, [out(y) for y in x.body], [out(y) for y in x.orelse],
                     x.loop and stmt(x.loop), x.branch and stmt(x.branch))

    fn = copy.copy(adj.fn)
    fn.body = [stmt(s) for s in fn.body]
    fn.names, fn.user_names, fn.closure = set(fn.names), set(fn.user_names), set(fn.closure)
    fn.free, fn.numbered = dict(fn.free), dict(fn.numbered)
    new = copy.copy(adj)
    new.fn, new.forward, new.backward = fn, [stmt(s) for s in adj.forward], [out(x) for x in adj.backward]
    new.results, new.runtime, new.callees = list(adj.results), dict(adj.runtime), dict(adj.callees)
    new.split_calls = [(stmt(a), name) for a, name in adj.split_calls]  # type: ignore[misc]
    new.known = None if adj.known is None else dict(adj.known)
    new.owned, new.callee_origins = dict(adj.owned), dict(adj.callee_origins)
    return new


def entry_values(adj: Adjoint, params: set[str]) -> dict[str, str]:
    """A name for the value each of ``params`` had on entry, where the forward code binds the
    parameter again (a loop carries it): a gradient takes its argument's type and shape."""
    entry: dict[str, str] = {}
    for param in sorted(params & assigned_names(adj.forward)):
        entry[param] = adj.fn.fresh(f"{param}_in")
        adj.forward.insert(0, Assign(entry[param], Var(param), adj.fn.body[-1].loc, temporary=True))
    return entry
