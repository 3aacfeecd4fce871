"""Pass 5: activity analysis.

A variable is *varied* if it depends on a ``wrt`` argument through
differentiable operations (forward sweep), *useful* if the return value
depends on it through differentiable operations (backward sweep), and
*active* if both.  Adjoint code is generated for active variables only.
``stop_gradient(...)``, non-differentiable functions and comparisons are never
varied, so nothing that only feeds them is useful.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from ..errors import Location, NoGradientRuleError, ZeroGradientWarning
from ..ir import Assign, Call, Const, Function, Opaque, Return, Var, assigns, operand_reads, reads
from ..tracebacks import user_stacklevel


@dataclass
class Activity:
    varied: set[str]
    useful: set[str]
    active: set[str]
    #: Statements where a varied value enters stop_gradient or a non-differentiable operation.
    cuts: list[tuple[Location, str, tuple[str, ...]]] = field(default_factory=list)


def _flows(stmt: Assign) -> tuple[str, ...]:
    """The variables whose gradient may flow into ``stmt``'s targets."""
    value = stmt.value
    if isinstance(value, Var):
        return (value.name,)
    if isinstance(value, Call):
        if value.rule is None:
            return reads(value) if value.function is None else tuple(
                n for op in value.args.values() for n in _var(op))
        return tuple(n for p, op in value.args.items() if p in value.rule.vjps for n in _var(op)) + tuple(
            n for p, op in value.args.items() if p in value.rule.refused for n in _operand_reads(op))
    if isinstance(value, Opaque) and value.kind == "container":
        return value.reads
    return ()


def _operand_reads(op: object) -> tuple[str, ...]:
    """The variables an operand reads: a variable, or those a constant expression reads."""
    return (op.name,) if isinstance(op, Var) else getattr(op, "reads", ())


def _var(op: object) -> tuple[str, ...]:
    return (op.name,) if isinstance(op, Var) else ()


def _varied(fn: Function, seeds: set[str]) -> tuple[set[str], list[tuple[Location, str, tuple[str, ...]]]]:
    """Names that depend on ``seeds`` through differentiable operations (to a fixpoint,
    since a loop's phi copies feed its next iteration)."""
    varied = set(seeds)
    stmts = list(assigns(fn.body))
    while True:
        size = len(varied)
        for stmt in stmts:
            if any(n in varied for n in _flows(stmt)):
                varied.update(stmt.targets)
        if len(varied) == size:
            break
    cuts = []
    for stmt in stmts:
        if not any(n in varied for n in _flows(stmt)):
            blocked = tuple(n for n in reads(stmt.value) if n in varied)
            if blocked:
                kind = stmt.value.kind if isinstance(stmt.value, Opaque) else "nondiff"
                cuts.append((stmt.loc, kind, blocked))
    return varied, cuts


def analyze(fn: Function, wrt: tuple[str, ...]) -> Activity:
    varied, cuts = _varied(fn, set(wrt))
    ret = fn.body[-1]
    assert isinstance(ret, Return)
    useful = set(operand_reads(ret.value)) if isinstance(ret.value, Var) else set()
    stmts = list(assigns(fn.body))
    while True:
        size = len(useful)
        for stmt in reversed(stmts):
            if any(t in useful for t in stmt.targets):
                useful.update(_flows(stmt))
        if len(useful) == size:
            break
    active = varied & useful
    for stmt in stmts:
        if any(t in active for t in stmt.targets):
            _check_differentiable(stmt, active)
    return Activity(varied, useful, active, cuts)


def _check_differentiable(stmt: Assign, active: set[str]) -> None:
    value = stmt.value
    if isinstance(value, Call) and value.rule is None and value.function is None:
        raise NoGradientRuleError(value.problem or f"no gradient rule for {value.callee}", stmt.loc)
    if isinstance(value, Opaque) and value.kind == "container":
        names = ", ".join(n for n in value.reads if n in active)
        raise NoGradientRuleError(
            f"a tuple or list holding values that carry a gradient ({names}) is not supported yet; "
            f"use np.stack or np.concatenate on arrays, or wrap the values in stop_gradient(...)",
            stmt.loc)
    if isinstance(value, Call) and value.rule is not None:
        for p, op in value.args.items():
            if p in value.rule.refused and any(n in active for n in _operand_reads(op)):
                raise NoGradientRuleError(f"{value.callee}: {value.rule.refused[p]}", stmt.loc)
            if p in value.rule.vjps and isinstance(op, Const) and any(n in active for n in op.reads):
                raise NoGradientRuleError(
                    f"argument '{p}' of {value.callee} is built from values that carry a gradient "
                    f"in a way s2sad does not differentiate yet; assign it to a variable first",
                    stmt.loc)


def warn_zero_gradients(fn: Function, wrt: tuple[str, ...], activity: Activity) -> None:
    """Warn, once per ``wrt`` argument, when the output cannot depend on it."""
    for name in wrt:
        if name in activity.active:
            continue
        _, cuts = _varied(fn, {name})
        where = "; ".join(
            f"line {loc.line} ({'stop_gradient' if kind == 'stopped' else 'no gradient'}: "
            f"{loc.source_line.strip()})" for loc, kind, _ in cuts)
        reason = f" the path is cut at {where}" if where else " it does not reach the return value"
        warnings.warn(ZeroGradientWarning(
            f"the output of {fn.name} does not depend on '{name}' through differentiable "
            f"operations, so its gradient is zero:{reason}"), stacklevel=user_stacklevel())
