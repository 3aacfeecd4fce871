"""Pass 3: resolve names by scope, then by identity.

A name bound in the function's own scope (or a parameter) is local.  Every other name
is looked up at generation time, as Python would at run time: the function's
closure cells, then its globals, then builtins; attribute chains on such names
(``np.linalg.norm``, ``ad.stop_gradient``) are followed with ``getattr``.
Rules are then found by the identity of the resolved object, never by spelling.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import types
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Callable

import libcst as cst

from ..sentinel import MISSING
from .callees import Closure, function_arguments
from .parse import Parsed, children

_DERIVATIVES = ("grad", "value_and_grad")  # the functions of s2sad.api a call may make


@dataclass(frozen=True)
class FreeName:
    """A name the function reads from outside itself."""

    name: str
    kind: str  # "closure", "global", "builtin", "import" (an import in the function), "alias"
    # (a name the function binds once, at its top level, to a function or module), "argument"
    # (a parameter bound to the function its caller passes, see callees.with_function_arguments)
    # or "unbound"
    value: Any


@dataclass
class Resolution:
    locals: frozenset[str]
    params: tuple[str, ...]
    objects: dict[cst.CSTNode, Any] = field(default_factory=dict)  # node -> object or MISSING
    free: dict[str, FreeName] = field(default_factory=dict)  # in order of first use
    # (base, attribute, value) of every attribute chain followed, once each (for the cache)
    attributes: list[tuple[Any, str, Any]] = field(default_factory=list)
    # the import statements at the top level of the function's body (by id), each with the
    # error it raised at generation time, or None
    imports: dict[int, Exception | None] = field(default_factory=dict)
    # the statements ``name = <function or module>`` that bind an alias (by id)
    aliases: set[int] = field(default_factory=set)
    closures: dict[str, Closure] = field(default_factory=dict)  # parameter -> the Closure a caller passes
    declared_global: frozenset[str] = frozenset()  # names a ``global`` statement of the function declares

    def object(self, node: cst.CSTNode) -> Any:
        """The object a free name or attribute chain denotes, or MISSING."""
        return self.objects.get(node, MISSING)


def resolve(parsed: Parsed) -> Resolution:
    fn = parsed.source.fn
    body = parsed.function.body
    declared = _declared_global(body)
    bindings = _bound_names(body)
    for name in declared:  # (module globals: assigned as written, read as free names)
        bindings.pop(name, None)
    params = _param_names(parsed.function.params)
    candidates = _alias_candidates(body, bindings, params)
    # parameters bound to the known functions a caller passes (never reassigned): constants
    passed = {n: v for n, v in function_arguments(fn).items() if n not in bindings}
    arguments = {n: v for n, v in passed.items() if not isinstance(v, Closure)}
    res = Resolution(frozenset(bindings) - set(candidates) | frozenset(params) - set(arguments), params,
                     declared_global=declared)
    imported = _run_imports(body, fn.__globals__.get("__package__"), res)
    aliased: dict[str, Any] = {}
    lookup = _lookup(fn, imported, aliased, arguments)
    visit = _visitor(res, lookup)
    for name, statement in candidates.items():  # ``act = np.tanh``: a name for a function or module
        visit(statement.value)  # (or ``dloss = grad(loss, 0)``: for the function grad makes)
        value = made_derivative(statement.value, res, parsed.code) or res.objects.get(statement.value, MISSING)
        if isinstance(value, types.ModuleType) or value is not MISSING and callable(value):
            aliased[name] = value
            res.aliases.add(id(statement))
    if set(aliased) != set(candidates):  # the others are variables after all
        res = Resolution(res.locals | (frozenset(candidates) - set(aliased)) - set(arguments), params, imports=res.imports,
                         aliases=res.aliases, declared_global=declared)
        visit = _visitor(res, lookup)
    visit(body)
    res.closures = {n: v for n, v in passed.items() if isinstance(v, Closure)}
    return res


def _lookup(fn: types.FunctionType, imported: dict[str, Any], aliased: dict[str, Any],
            arguments: dict[str, Any]) -> Callable[[str], FreeName]:
    """What a free name of ``fn`` denotes: an alias the function binds, a name it imports, then
    as Python looks it up (closure cells, globals, builtins)."""
    closure = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def lookup(name: str) -> FreeName:
        if name in arguments:
            return FreeName(name, "argument", arguments[name])
        if name in aliased:
            return FreeName(name, "alias", aliased[name])
        if name in imported:
            return FreeName(name, "import", imported[name])
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
    return lookup


def _visitor(res: Resolution, lookup: Callable[[str], FreeName]) -> Callable[[cst.CSTNode], None]:
    """A walk that records in ``res`` what each free name and attribute chain under a node
    denotes (and each attribute it follows, once)."""
    seen: set[tuple[int, str]] = set()
    hidden: Counter[str] = Counter()  # the variables of the comprehensions being walked

    def visit(node: cst.CSTNode) -> None:
        kind = type(node)  # (libcst's classes are ABCs: isinstance is slow, and walks are hot)
        if kind is cst.Name:
            if node.value not in res.locals and not hidden[node.value]:
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
        elif kind in _COMPREHENSIONS:
            visit_comprehension(node)
        elif kind is not cst.Param:
            for child in children(node):
                visit(child)

    def visit_comprehension(node: cst.ListComp | cst.SetComp | cst.DictComp | cst.GeneratorExp) -> None:
        """A comprehension's variables are its own: a global of the same name is not what
        its body reads (its first iterable is read in the enclosing scope)."""
        visit(node.for_in.iter)
        names = []
        clause: cst.CompFor | None = node.for_in
        while clause is not None:
            names += _target_names(clause.target)
            clause = clause.inner_for_in
        hidden.update(names)
        try:
            for child in children(node):
                visit(child)
        finally:
            hidden.subtract(names)
    return visit


def _alias_candidates(body: cst.BaseSuite, bindings: Counter[str],
                      params: tuple[str, ...]) -> dict[str, cst.Assign]:
    """``name = <name or attribute chain>`` at the top level of the function, the only
    binding of ``name``: if it denotes something callable or a module, ``name`` is an alias
    of it, and a call through it is the call through the chain it names."""
    found: dict[str, cst.Assign] = {}
    for small in _top_level_statements(body):
        if (isinstance(small, cst.Assign) and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and (_chain(small.value) or isinstance(small.value, cst.Call) and _chain(small.value.func))):
            name = small.targets[0].target.value
            if bindings[name] == 1 and name not in params:
                found[name] = small
    return found


def made_derivative(node: cst.BaseExpression, res: Resolution, code: Callable[[cst.CSTNode], str],
                     function: Callable[[cst.BaseExpression], Any] | None = None) -> Any:
    """The function ``grad(fun, ...)`` / ``value_and_grad(fun, ...)`` makes, when ``node`` is
    such a call of s2sad's API on a function s2sad can name and literal options; else None.
    ``function`` finds the function ``fun`` denotes (default: what the name is bound to)."""
    if not is_derivative_call(node, res):
        return None
    target = (function or res.object)(node.args[0].value)
    if target is MISSING or not callable(target):
        return None
    try:
        options = [ast.literal_eval(code(a.value).strip()) for a in node.args[1:]]
    except (ValueError, SyntaxError):
        return None
    positional = [v for a, v in zip(node.args[1:], options) if a.keyword is None]
    keywords = {a.keyword.value: v for a, v in zip(node.args[1:], options) if a.keyword is not None}
    return res.object(node.func)(target, *positional, **keywords)


def is_derivative_call(node: cst.BaseExpression, res: Resolution) -> bool:
    """Whether ``node`` calls ``grad`` or ``value_and_grad`` of s2sad's API on a function."""
    if not isinstance(node, cst.Call) or not node.args or node.args[0].keyword or any(a.star for a in node.args):
        return False
    api = res.object(node.func)
    return getattr(api, "__module__", None) == "s2sad.api" and getattr(api, "__name__", None) in _DERIVATIVES


def _top_level_statements(body: cst.BaseSuite) -> Iterator[cst.BaseSmallStatement]:
    """The simple statements at the top level of the function's body, in order."""
    for line in body.body if isinstance(body, cst.IndentedBlock) else [body]:
        if isinstance(line, cst.SimpleStatementLine):
            yield from line.body


def _chain(node: cst.BaseExpression) -> bool:
    """Whether ``node`` is a name or an attribute chain on one (``np.linalg.norm``)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _run_imports(body: cst.BaseSuite, package: str | None, res: Resolution) -> dict[str, Any]:
    """The names that import statements at the top level of the function bind, imported now
    as they will be when the function runs (the generated code runs the same statements).
    A ``from m import n`` is followed like the attribute chain ``m.n``, for the cache."""
    bound: dict[str, Any] = {}
    for small in _top_level_statements(body):
        if not isinstance(small, (cst.Import, cst.ImportFrom)) or isinstance(small.names, cst.ImportStar):
            continue
        try:
            bound.update(_import(small, package, res))
            res.imports[id(small)] = None
        except Exception as exc:  # noqa: BLE001 - reported at the statement by normalize
            res.imports[id(small)] = exc
    return bound


def _dotted(node: cst.BaseExpression) -> str:
    return node.value if isinstance(node, cst.Name) else f"{_dotted(node.value)}.{node.attr.value}"


def _import(node: cst.Import | cst.ImportFrom, package: str | None, res: Resolution) -> dict[str, Any]:
    """What one import statement binds, by name."""
    out: dict[str, Any] = {}
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = _dotted(alias.name)
            module = importlib.import_module(full)
            if alias.asname is not None:
                out[alias.asname.name.value] = module
            else:  # import a.b binds a
                out[full.split(".")[0]] = importlib.import_module(full.split(".")[0])
        return out
    dots = "." * len(node.relative)
    base = importlib.import_module(dots + (_dotted(node.module) if node.module else ""), package)
    assert not isinstance(node.names, cst.ImportStar)
    for alias in node.names:
        name = alias.name.value
        value = getattr(base, name, MISSING)
        if value is MISSING:  # a submodule not yet imported
            value = importlib.import_module(f"{base.__name__}.{name}")
        else:
            res.attributes.append((base, name, value))
        out[alias.asname.name.value if alias.asname is not None else name] = value
    return out


def _declared_global(body: cst.CSTNode) -> frozenset[str]:
    """The names a ``global`` statement of the function (not of a nested scope) declares."""
    found: set[str] = set()
    stack = [body]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Global):
            found.update(item.name.value for item in n.names)
        elif not isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.BaseExpression, cst.BaseSmallStatement)) \
                and type(n) not in _SCOPES:  # (a global statement is no expression's part)
            stack.extend(children(n))
    return frozenset(found)


def _bound_names(node: cst.CSTNode) -> Counter[str]:
    """Names the function scope binds, with how many times: targets of =, +=, for and
    names of nested functions.

    Nested scopes (def, lambda, comprehensions) are not entered.  'nonlocal', 'del', 'with'
    and 'except' are refused by normalization (the names 'global' declares are taken out by
    the caller), and the names a top-level
    'import' binds are resolved as imports (normalization refuses one that is also assigned),
    so for what s2sad accepts this is exactly Python's rule for local variables -- and much
    cheaper than a full scope analysis, which dominated compile time.
    """
    names: Counter[str] = Counter()
    stack = [node]
    while stack:
        n = stack.pop()
        kind = type(n)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            names[n.name.value] += 1
            continue
        if kind in _SCOPES:
            continue
        if kind in _BINDERS:
            names.update(_target_names(n.target))
        stack.extend(children(n))
    return names


_COMPREHENSIONS = frozenset([cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp])
_SCOPES = _COMPREHENSIONS | {cst.Lambda}
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
