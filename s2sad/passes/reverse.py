"""Pass 6: reverse-mode generation.

Walks the normalized body backwards and, for every active variable, emits the
adjoint statements its rule declares.  The first contribution to an adjoint
assigns it, later ones add to it, so no adjoint is ever initialised to zero.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

import numpy as np

from .. import runtime as runtime_module
from ..ir import Assign, Call, Const, Function, Operand, Return, Var
from ..rules.registry import is_atomic
from .activity import Activity
from .simplify import simplify
from .source import FunctionSource


@dataclass(frozen=True)
class Line:
    """One generated statement of the backward pass."""

    code: str
    reads: frozenset[str]
    group: int  # file line of the user statement it differentiates
    source: str  # that statement's text


@dataclass
class Adjoint:
    """The generated function, before cleanup and code generation."""

    fn: Function
    source: FunctionSource
    wrt: tuple[str, ...]
    multiple: bool  # wrt was given as a tuple: return a tuple of gradients
    name: str  # the generated function's name
    forward: list[Assign]
    value: Operand
    seed: str | None  # the seed statement, or None when nothing is active
    backward: list[Line]
    results: list[str]  # one expression per wrt argument
    runtime: dict[str, str] = field(default_factory=dict)  # runtime name -> name in the code

    def use(self, name: str) -> str:
        """Record that the code uses runtime name ``name``; return its spelling."""
        if name not in self.runtime:
            mine = runtime_object(name)
            taken = name in self.fn.user_names and self.fn.free.get(name, MISSING) is not mine
            self.runtime[name] = self.fn.fresh(name) if taken else name
        return self.runtime[name]


MISSING = object()


def runtime_object(name: str) -> object:
    """The object generated code means by runtime name ``name``."""
    return np if name == "np" else getattr(runtime_module, name)


def _code(op: Operand) -> str:
    return op.name if isinstance(op, Var) else op.code


def _reads(op: Operand) -> tuple[str, ...]:
    return (op.name,) if isinstance(op, Var) else op.reads


def _plus(acc: str, term: str) -> str:
    """``acc + term`` with parentheses only where the sum would regroup."""
    try:
        node = ast.parse(term, mode="eval").body
    except SyntaxError:
        return f"{acc} + ({term})"
    loose = isinstance(node, (ast.BinOp)) and isinstance(node.op, (ast.Add, ast.Sub)) or isinstance(
        node, (ast.IfExp, ast.Lambda, ast.BoolOp, ast.Compare, ast.NamedExpr))
    return f"{acc} + ({term})" if loose else f"{acc} + {term}"


def generate(fn: Function, source: FunctionSource, wrt: tuple[str, ...], multiple: bool,
             kind: str, activity: Activity) -> Adjoint:
    ret = fn.body[-1]
    assert isinstance(ret, Return)
    forward = [s for s in fn.body[:-1] if isinstance(s, Assign)]
    adj = Adjoint(fn, source, wrt, multiple, fn.fresh(f"{kind}_{fn.name}"), forward, ret.value,
                  None, [], [])
    active = activity.active
    names: dict[str, str] = {}

    def dname(var: str) -> str:
        if var not in names:
            names[var] = fn.fresh("d" + var)
        return names[var]

    defined: set[str] = set()

    def contribute(var: str, code: str, reads: frozenset[str], stmt: Assign) -> None:
        d = dname(var)
        if d in defined:
            code, reads = _plus(d, code), reads | {d}
        defined.add(d)
        adj.backward.append(Line(f"{d} = {code}", reads, stmt.loc.line, stmt.loc.source_line.strip()))

    value = ret.value
    if isinstance(value, Var) and value.name in active:
        adj.seed = f"{dname(value.name)} = {adj.use('seed')}({value.name})"
        defined.add(dname(value.name))
    else:
        adj.seed = f"{adj.use('seed')}({_code(value) if is_atomic(_code(value)) else '(' + _code(value) + ')'})"

    for stmt in reversed(forward):
        if not isinstance(stmt.target, str) or stmt.target not in active:
            continue
        g = dname(stmt.target)
        v = stmt.value
        if isinstance(v, Var):
            contribute(v.name, g, frozenset({g}), stmt)
        elif isinstance(v, Call) and v.rule is not None:
            values = {p: _code(op) for p, op in v.args.items()}
            values["g"], values["ans"] = g, stmt.target
            for p, op in v.args.items():
                template = v.rule.vjps.get(p)
                if template is None or not isinstance(op, Var) or op.name not in active:
                    continue
                code = simplify(template.render(values, {n: adj.use(n) for n in template.runtime}))
                reads = {g if h == "g" else stmt.target if h == "ans" else None for h in template.holes}
                reads |= {n for h in template.holes if h in v.args for n in _reads(v.args[h])}
                contribute(op.name, code, frozenset(reads - {None}), stmt)

    for p in wrt:
        if p in active:
            adj.results.append(dname(p))
        else:
            adj.results.append(f"{adj.use('zeros_grad')}({p})")
    return adj
