"""Pass 3: resolve names by scope, then by identity.

A name assigned in the function (or a parameter) is local.  Every other name
is looked up at generation time, as Python would at run time: the function's
closure cells, then its globals, then builtins; attribute chains on such names
(``np.linalg.norm``, ``ad.stop_gradient``) are followed with ``getattr``.
Rules are then found by the identity of the resolved object, never by spelling.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from .parse import Parsed

MISSING = object()


@dataclass(frozen=True)
class FreeName:
    """A name the function reads from outside itself."""

    name: str
    kind: str  # "closure", "global", "builtin" or "unbound"
    value: Any


@dataclass
class Resolution:
    locals: frozenset[str]
    params: tuple[str, ...]
    objects: dict[cst.CSTNode, Any] = field(default_factory=dict)  # node -> object or MISSING
    free: dict[str, FreeName] = field(default_factory=dict)  # in order of first use

    def object(self, node: cst.CSTNode) -> Any:
        """The object a free name or attribute chain denotes, or MISSING."""
        return self.objects.get(node, MISSING)


def resolve(parsed: Parsed) -> Resolution:
    fn = parsed.source.fn
    body = parsed.function.body
    first = body.body[0] if body.body else body
    scope = parsed.scopes.get(first)
    local_names = frozenset(a.name for a in scope.assignments) if scope is not None else frozenset()
    params = _param_names(parsed.function.params)
    res = Resolution(local_names | frozenset(params), params)
    closure = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def lookup(name: str) -> FreeName:
        if name in closure:
            try:
                return FreeName(name, "closure", closure[name].cell_contents)
            except ValueError:
                return FreeName(name, "closure", MISSING)
        if name in fn.__globals__:
            return FreeName(name, "global", fn.__globals__[name])
        if hasattr(builtins, name):
            return FreeName(name, "builtin", getattr(builtins, name))
        return FreeName(name, "unbound", MISSING)

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in res.locals:
                return
            free = res.free.get(node.value) or lookup(node.value)
            res.free.setdefault(node.value, free)
            res.objects[node] = free.value

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            base = res.objects.get(node.value)
            if base is not None:
                res.objects[node] = getattr(base, node.attr.value, MISSING) if base is not MISSING else MISSING
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Param(self, node: cst.Param) -> bool:
            return False

    for stmt in body.body:
        stmt.visit(Visitor())
    return res


def _param_names(params: cst.Parameters) -> tuple[str, ...]:
    names = [p.name.value for p in (*params.posonly_params, *params.params)]
    if isinstance(params.star_arg, cst.Param):
        names.append(params.star_arg.name.value)
    names += [p.name.value for p in params.kwonly_params]
    if params.star_kwarg is not None:
        names.append(params.star_kwarg.name.value)
    return tuple(names)
