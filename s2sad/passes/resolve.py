"""Pass 3: resolve names by scope, then by identity.

A name bound in the function's own scope (or a parameter) is local.  Every other name
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

from ..sentinel import MISSING
from .parse import Parsed, children


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
    # (base, attribute, value) of every attribute chain followed, once each (for the cache)
    attributes: list[tuple[Any, str, Any]] = field(default_factory=list)

    def object(self, node: cst.CSTNode) -> Any:
        """The object a free name or attribute chain denotes, or MISSING."""
        return self.objects.get(node, MISSING)


def resolve(parsed: Parsed) -> Resolution:
    fn = parsed.source.fn
    body = parsed.function.body
    local_names = frozenset(_bound_names(body))
    params = _param_names(parsed.function.params)
    res = Resolution(local_names | frozenset(params), params)
    closure = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    seen: set[tuple[int, str]] = set()

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

    def visit(node: cst.CSTNode) -> None:
        kind = type(node)  # (libcst's classes are ABCs: isinstance is slow, and walks are hot)
        if kind is cst.Name:
            if node.value not in res.locals:
                free = res.free.get(node.value) or lookup(node.value)
                res.free.setdefault(node.value, free)
                res.objects[node] = free.value
        elif kind is cst.Attribute:
            visit(node.value)
            base = res.objects.get(node.value)
            if base is MISSING:
                res.objects[node] = MISSING
            elif base is not None:
                value = res.objects[node] = getattr(base, node.attr.value, MISSING)
                followed = (id(base), node.attr.value)
                if followed not in seen:
                    seen.add(followed)
                    res.attributes.append((base, node.attr.value, value))
        elif kind is cst.Arg:
            visit(node.value)
        elif kind is not cst.Param:
            for child in children(node):
                visit(child)

    visit(body)
    return res


def _bound_names(node: cst.CSTNode) -> set[str]:
    """Names the function scope binds: targets of =, +=, for and names of nested functions.

    Nested scopes (def, lambda, comprehensions) are not entered.  'global', 'nonlocal',
    'del', 'with', 'import' and 'except' are refused by normalization, so for what s2sad
    accepts this is exactly Python's rule for local variables -- and much cheaper than a
    full scope analysis, which dominated compile time.
    """
    names: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        kind = type(n)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            names.add(n.name.value)
            continue
        if kind in _SCOPES:
            continue
        if kind in _BINDERS:
            names.update(_target_names(n.target))
        stack.extend(children(n))
    return names


_SCOPES = frozenset([cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp])
_BINDERS = frozenset([cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr])


def _target_names(target: cst.CSTNode) -> list[str]:
    """Names a binding target binds, through tuples, lists and stars (not subscripts)."""
    out: list[str] = []
    stack = [target]
    while stack:
        t = stack.pop()
        if isinstance(t, cst.Name):
            out.append(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            stack.extend(e.value for e in t.elements)
        elif isinstance(t, cst.StarredElement):
            stack.append(t.value)
    return out


def _param_names(params: cst.Parameters) -> tuple[str, ...]:
    names = [p.name.value for p in (*params.posonly_params, *params.params)]
    if isinstance(params.star_arg, cst.Param):
        names.append(params.star_arg.name.value)
    names += [p.name.value for p in params.kwonly_params]
    if params.star_kwarg is not None:
        names.append(params.star_kwarg.name.value)
    return tuple(names)
