"""The intermediate form the passes share: a function body in A-normal form.

After normalization every statement applies at most one primitive to
operands that are variables or constant code.  Primal expressions stay libcst
nodes so that the generated code keeps the user's spelling (``np.exp(z)``,
``e.sum(axis=-1)``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Union

import libcst as cst

from .errors import Location
from .rules.registry import Rule


#: What generated code calls for a caller, which decides what is active and checks the
#: arguments: a vjp, a forward/backward pair ("split": the forward pass also returns what
#: the backward pass reads), or the gradient (and value) of a function whose result is returned.
CALLEE_KINDS = frozenset({"vjp", "split", "callee_grad", "callee_value_and_grad"})
#: Adjoints that return the function's value with its gradient.
VALUE_KINDS = frozenset({"value_and_grad", "callee_value_and_grad"})


def wrt_parameter(name: str) -> str:
    """The parameter a ``wrt`` name belongs to: ``args`` for ``args[0]``, an argument passed
    through ``*args`` (and ``kw`` for ``kw['k']``, one passed through ``**kw``)."""
    return name.split("[", 1)[0]


@dataclass(frozen=True)
class Var:
    """A local variable (a parameter, a user variable or a temporary)."""

    name: str


@dataclass(frozen=True)
class Const:
    """Code that carries no gradient: a literal, a global, ``np.pi``, an index.

    ``reads`` lists the local variables the code reads (an index ``i``, the
    elements of a tuple ``(n, m)``); activity analysis checks that none of
    them is active where a gradient would have to flow.
    """

    code: str
    reads: tuple[str, ...] = ()


Operand = Union[Var, Const]


@dataclass
class Call:
    """One primitive applied to operands; ``rule`` is None when none is known."""

    rule: Rule | None
    callee: str  # how the user spelled the callee, for messages
    args: dict[str, Operand]  # bound to the rule's parameters (positional "0", "1"... if no rule)
    node: cst.BaseExpression  # the primal expression
    problem: str | None = None  # why this call cannot be differentiated, if it must be
    function: Any = None  # a Python function called here: differentiated by its own adjoint
    slots: dict[str, cst.CSTNode] = field(default_factory=dict)  # parameter -> its node in ``node``
    overlap: str | None = None  # x[i] = v with v maybe a view of x: where, for the run-time check
    receiver: bool = False  # a method call ``obj.f(...)``: ``function`` gets ``obj`` first
    float_check: str | None = None  # x[i] = v, x of a dtype unknown here: where, for the run-time check
    number_check: tuple[str, str] | None = None  # x op= v, fine when x is a number: (where, refusal)


@dataclass
class Opaque:
    """A primal expression that carries no gradient, kept as written.

    ``kind`` says why: "stopped" (``stop_gradient``), "nondiff" (a declared
    non-differentiable function, a comparison...), or "container" (a tuple or
    list literal, whose elements must then be inactive).
    """

    node: cst.BaseExpression
    reads: tuple[str, ...]
    kind: str
    copy_of: str | None = None  # x, for exactly ``stop_gradient(x)``: the same array at run time


@dataclass
class Assign:
    """``target = value``; ``target`` is a name, a tuple of names, or None (an expression statement)."""

    target: str | tuple[str, ...] | None
    value: Call | Opaque | Var | Const
    loc: Location
    temporary: bool = False  # a name s2sad introduced
    draws: bool = False  # draws random numbers: computed once, where it stands, even if unused

    @property
    def targets(self) -> tuple[str, ...]:
        if self.target is None:
            return ()
        return (self.target,) if isinstance(self.target, str) else self.target


@dataclass
class Return:
    value: Operand
    loc: Location


@dataclass
class If:
    """``if test: body else: orelse``; ``test`` is recorded so the adjoint can replay it."""

    test: Operand
    body: list["Stmt"]
    orelse: list["Stmt"]
    loc: Location
    tape: str | None = None  # inside a loop: the loop's tape, which each branch may push to
    saves: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # pushed at the end of each branch
    # ``with <context>:`` (np.errstate...) around a block that always runs: ``test`` is True, and
    # the forward and backward code of ``body`` run in the context
    context: str | None = None
    setup: tuple[str, ...] = ()  # in a ``with`` block: its warnings filters, which the backward code sets too


def if_header(stmt: If) -> str:
    """The line that opens ``stmt``'s body: ``if test:``, or ``with context:``."""
    return f"with {stmt.context}:" if stmt.context else f"if {operand_code(stmt.test)}:"


@dataclass
class Loop:
    """A ``for`` or ``while`` loop.

    ``header`` is the loop line as code (``for t in range(n)``, ``while err > tol``),
    reading ``reads`` and assigning ``targets`` each iteration.  Inside the body every
    assignment has its own name; ``carried`` lists the phi copies ``(name, last)`` that
    run at the end of each iteration, so ``name`` holds the value the next iteration
    (or the code after the loop) reads.  The reverse pass fills in ``tape`` and
    ``saved`` (values the adjoint of the body reads, pushed once per iteration) or
    ``counter`` (when it reads none).
    """

    header: str
    reads: tuple[str, ...]
    targets: tuple[str, ...]
    body: list["Stmt"]
    carried: list[tuple[str, str]]
    loc: Location
    break_flag: str | None = None
    tape: str | None = None
    saved: tuple[str, ...] = ()
    counter: str | None = None
    pushed: tuple[str, ...] = ()  # what is pushed for ``saved``, when not the names themselves


@dataclass
class Raw:
    """A statement generated as code (a tangent), reading ``reads``."""

    code: str
    reads: frozenset[str]
    loc: Location


Stmt = Union[Assign, Return, If, Loop, Raw]


def statements(stmts: list[Stmt]) -> "Iterator[Stmt]":
    """Every statement in ``stmts``, nested ones included, in program order (an ``if`` or a
    loop before its body, a body before an ``else``)."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from statements(s.body)
            yield from statements(s.orelse)
        elif isinstance(s, Loop):
            yield from statements(s.body)


def assigns(stmts: list[Stmt]) -> "Iterator[Assign]":
    """Every assignment in ``stmts``, nested ones included, in program order.

    A loop's phi copies are yielded after its body as plain copies.
    """
    for s in stmts:
        if isinstance(s, Assign):
            yield s
        elif isinstance(s, If):
            yield from assigns(s.body)
            yield from assigns(s.orelse)
        elif isinstance(s, Loop):
            yield from assigns(s.body)
            for name, last in s.carried:
                yield Assign(name, Var(last), s.loc)


def assigned_names(stmts: list[Stmt]) -> set[str]:
    """Names assigned anywhere in ``stmts`` (loop targets and phi names included)."""
    names: set[str] = set()
    for s in stmts:
        if isinstance(s, Assign):
            names.update(s.targets)
        elif isinstance(s, If):
            names |= assigned_names(s.body) | assigned_names(s.orelse)
        elif isinstance(s, Loop):
            names |= assigned_names(s.body) | set(s.targets) | {c for c, _ in s.carried}
            names |= {n for n in (s.tape, s.counter, s.break_flag) if n}
    return names


def surely_assigned(stmts: list[Stmt]) -> set[str]:
    """Names that every path through ``stmts`` assigns (a nested loop may run no iteration)."""
    names: set[str] = set()
    for s in stmts:
        if isinstance(s, Assign):
            names.update(s.targets)
        elif isinstance(s, If):  # (a ``with`` block always runs)
            names |= surely_assigned(s.body) if s.context else surely_assigned(s.body) & surely_assigned(s.orelse)
        elif isinstance(s, Loop):
            names |= {n for n in (s.tape, s.counter) if n}
    return names


@dataclass
class Function:
    """A normalized function."""

    name: str
    params: tuple[str, ...]
    header: cst.Parameters  # the parameter list as written
    body: list[Stmt] = field(default_factory=list)
    names: set[str] = field(default_factory=set)  # every name in use, for fresh names
    user_names: set[str] = field(default_factory=set)  # names that appear in the user's source
    free: dict[str, object] = field(default_factory=dict)  # free names -> the objects they denote
    closure: set[str] = field(default_factory=set)  # free names that are closure cells
    # free names bound to an attribute of a module, with the module's name in the function
    # (np_add_reduce: numpy, "np", "add.reduce"), which a module written out binds the same way
    module_paths: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    # base -> n: base, base_2 .. base_n are in names (which only grows), so fresh starts there
    numbered: dict[str, int] = field(default_factory=dict)

    def fresh(self, hint: str | list[str]) -> str:
        """A new name that collides with no name in use: the first free of the
        candidates ``hint``, else the first with a number appended."""
        candidates = [h for h in ([hint] if isinstance(hint, str) else hint) if h.isidentifier()]
        for name in candidates:
            if name not in self.names:
                self.names.add(name)
                return name
        base = candidates[0] if candidates else "t"
        n = self.numbered.get(base, 1)
        name = base if n == 1 else f"{base}_{n}"
        while name in self.names:
            n += 1
            name = f"{base}_{n}"
        self.numbered[base] = n
        self.names.add(name)
        return name


def reads(value: Call | Opaque | Var | Const) -> tuple[str, ...]:
    """The local variables an assignment's value reads."""
    if isinstance(value, Var):
        return (value.name,)
    if isinstance(value, Call):
        return tuple(dict.fromkeys(n for a in value.args.values() for n in operand_reads(a)))
    return value.reads


def display_node(value: Call | Opaque | Var | Const) -> cst.Tuple | cst.List | cst.Dict | None:
    """The tuple, list or dict display that ``value`` applies as one primitive (``ys = [a, 2 * b]``,
    whose elements are its operands); None for any other value."""
    if isinstance(value, Call) and value.rule is not None and value.rule.fun is None \
            and value.rule.name == "display" and isinstance(value.node, (cst.Tuple, cst.List, cst.Dict)):
        return value.node
    return None


def targets_code(names: tuple[str, ...] | list[str]) -> str:
    """Names unpacked into, as Python spells them: ``a, b``, and ``a,`` for one."""
    return ", ".join(names) + ("," if len(names) == 1 else "")


def operand_code(op: Operand) -> str:
    return op.name if isinstance(op, Var) else op.code


def operand_reads(op: Operand) -> tuple[str, ...]:
    return (op.name,) if isinstance(op, Var) else op.reads
