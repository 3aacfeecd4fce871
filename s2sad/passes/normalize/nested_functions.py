"""Nested functions: a ``def`` or a lambda bound to a name inside the function,
compiled on its own and differentiated like any called Python function."""
from __future__ import annotations

import ast
import builtins
import functools
import linecache
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import libcst as cst

from ...errors import Location
from ...ir import Assign, Opaque, Operand
from .constructs import UNSUPPORTED
from .flow import assigned_in
from .syntax import EMPTY_MODULE, flat_targets, statements_of, walk


_MAKER = "__s2sad_nested__"  # makes a recursive nested function, its name bound in a closure


class NestedFunctionLowering:
    """Compiling a ``def`` or a named lambda inside the function on its own."""

    def nested_function(self, name: str, node: cst.FunctionDef | cst.Lambda) -> None:
        """A ``def`` (or a lambda bound to a name) inside the function.

        It is compiled on its own, with the function's globals, and differentiated
        like any called Python function.  The variables of the function it reads become
        keyword-only parameters, which each call passes (their values at the call, as
        Python's closures read them).
        """
        self.check_nested_function(name, node)
        own = {n.value for n in walk(node.params) if isinstance(n, cst.Name)} | assigned_in(
            statements_of(node.body) if isinstance(node, cst.FunctionDef) else [])
        read = {n.value for n in walk(node.body) if isinstance(n, cst.Name)}
        recursive = name in read - own  # its own name is bound to it when it is compiled, below
        outer = sorted(read & (self.res.locals - own - {name}))
        # a nested function defined before, reading none of the function's variables: a
        # constant, which this one reads from its closure (h = lambda z: g(z) * z)
        known = {n: self.local_functions[n] for n in outer if n in self.local_functions
                 and n not in self.closure_args and self.version.get(n) == n}
        outer = [n for n in outer if n not in known]
        loc = self.location(node)
        if outer:
            node = self.with_outer_parameters(name, node, outer, recursive)
        text, filename, first = _compiled_source(name, node, loc, bool(outer))
        fn = self.parsed.source.fn
        self.local_functions[name] = _compiled(name, text, filename, first, recursive, fn.__globals__,
                                               _closure_values(fn, read - own - self.res.locals) | known)
        self.version[name] = name
        statement = node.with_changes(leading_lines=[]) if isinstance(node, cst.FunctionDef) else \
            cst.Assign([cst.AssignTarget(cst.Name(name))], node)
        self.out.append(Assign(None, Opaque(statement, (), "nondiff"), loc))

    def anonymous_function(self, node: cst.Lambda) -> cst.Name:
        """A lambda called where it stands (``(lambda z: z ** 2)(x)``, or passed to ``map``):
        a nested function under a fresh name, called by that name."""
        name = self.fn.fresh("lambda_fn")
        self.nested_function(name, node)
        return cst.Name(name)

    def check_nested_function(self, name: str, node: cst.FunctionDef | cst.Lambda) -> None:
        """Refuse a nested function s2sad cannot compile on its own."""
        if isinstance(node, cst.FunctionDef) and node.decorators:
            raise self.unsupported(node, "decorated nested functions are not supported; define "
                                         "the function at module level")
        if name in self.version or name in self.local_functions:
            raise self.unsupported(node, f"'{name}' is defined twice; use another name")
        params = node.params
        defaults = [p.default for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                    if p.default is not None]
        local = sorted({n.value for d in defaults for n in walk(d) if isinstance(n, cst.Name)} & self.res.locals)
        if local:  # a default is evaluated where the def runs, but s2sad compiles the def on its own
            raise self.unsupported(defaults[0], f"a default value of the nested function '{name}' reads "
                                                f"{', '.join(local)} from the enclosing function; pass "
                                                f"{'it' if len(local) == 1 else 'them'} as an argument")
        declared = [n for n in walk(node.body) if isinstance(n, (cst.Nonlocal, cst.Global))]
        if declared:  # the nested function is compiled on its own: it has no enclosing scope
            raise self.unsupported(declared[0], UNSUPPORTED[type(declared[0])])

    def with_outer_parameters(self, name: str, node: cst.FunctionDef | cst.Lambda, outer: list[str],
                              recursive: bool) -> cst.FunctionDef | cst.Lambda:
        """The nested function with the enclosing function's variables it reads (``outer``) as
        keyword-only parameters, which its calls pass."""
        why = ("calls itself" if recursive else next((f"calls the nested function '{n}'" for n in outer
                                                      if n in self.local_functions), None)) or self.used_uncalled(name, node)
        if why:
            raise self.unsupported(node, f"the nested function '{name}' {why} and reads "
                                         f"{', '.join(outer)} from the enclosing function; pass "
                                         f"{'it as an argument' if len(outer) == 1 else 'them as arguments'}")
        star = node.params.star_arg
        node = node.with_changes(params=node.params.with_changes(
            star_arg=cst.ParamStar() if isinstance(star, cst.MaybeSentinel) else star,
            kwonly_params=[*node.params.kwonly_params, *(cst.Param(cst.Name(n)) for n in outer)]))
        self.closure_args[name] = outer
        self.expect_passed(name)
        return node

    def used_uncalled(self, name: str, node: cst.CSTNode) -> str | None:
        """Why the nested function ``name`` cannot get parameters added: a use other than a call
        (or than an argument of a Python function, which is specialised to it: closures.py)."""
        if self.use_beyond_calls(name, self.parsed.function.body) is not None:
            return "is used other than called"
        return None

    def lambda_value(self, node: cst.Lambda, target: str | None) -> Operand | None:
        """A lambda made where it stands as a value (``fs.append(lambda z, k=k: z ** k)``) that
        reads none of the function's variables, its defaults only the counters of ``range``
        loops: a function that carries no gradient, called as it runs (as a loop's item); None
        for any other lambda."""
        params = node.params
        own = {n.value for n in walk(params) if isinstance(n, cst.Name)}
        if {n.value for n in walk(node.body) if isinstance(n, cst.Name)} & (self.res.locals - own):
            return None
        defaults = [p.default for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                    if p.default is not None]
        read = {n.value for d in defaults for n in walk(d) if isinstance(n, cst.Name)} & self.res.locals
        if not read <= self.range_counters:
            other = sorted(read - self.range_counters)
            raise self.unsupported(node, f"a default of this lambda reads {', '.join(other)}, which s2sad cannot tell "
                                         f"carries no gradient (a lambda made as a value is followed when its defaults "
                                         f"read only constants and the counters of range loops); pass "
                                         f"{'it' if len(other) == 1 else 'them'} as an argument where the lambda is called")

        def renamed(ps: Sequence[cst.Param]) -> list[cst.Param]:
            return [p if p.default is None else p.with_changes(default=self.rename(p.default)) for p in ps]
        made = node.with_changes(params=params.with_changes(
            posonly_params=renamed(params.posonly_params), params=renamed(params.params),
            kwonly_params=renamed(params.kwonly_params)))
        reads = tuple(dict.fromkeys(r for d in defaults for r in self.local_reads(d)))
        return self.emit(Opaque(made, reads, "nondiff"), target, "lambda_fn", node)

    @functools.cached_property
    def range_counters(self) -> set[str]:
        """Names bound only as the target of ``for k in range(...)`` loops: integers."""
        loops = [n for n in self.body_nodes if isinstance(n, (cst.For, cst.CompFor))]
        ranged = [isinstance(n.target, cst.Name) and isinstance(n.iter, cst.Call)
                  and self.res.object(n.iter.func) is builtins.range for n in loops]
        counters = {n.target.value for n, r in zip(loops, ranged) if r}
        other = {name for n, r in zip(loops, ranged) if not r for name in flat_targets(n.target, bases=False)}
        return (counters - other) & self.loop_items


def _compiled_source(name: str, node: cst.FunctionDef | cst.Lambda, loc: Location,
                     changed: bool) -> tuple[str, str, int]:
    """The source a nested function is compiled from, its file name and its first line there:
    a ``def`` at its lines (as compiled, if ``changed`` gave it parameters), a lambda as a
    ``def``; a source not in the user's file is put in ``linecache`` for tracebacks."""
    if isinstance(node, cst.FunctionDef) and changed:  # its source, as compiled, at its lines
        text = "\n" * (loc.line - 1) + textwrap.dedent(EMPTY_MODULE.code_for_node(node.with_changes(leading_lines=[])))
        filename, first = f"{loc.filename} (nested function {name}, as compiled)", 1
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    elif isinstance(node, cst.FunctionDef):
        text = textwrap.dedent(EMPTY_MODULE.code_for_node(node.with_changes(leading_lines=[])))
        filename, first = loc.filename, loc.line
    else:
        body = EMPTY_MODULE.code_for_node(node.body).strip()
        text = f"def {name}({EMPTY_MODULE.code_for_node(node.params).strip()}):\n    return {body}\n"
        filename, first = f"<s2sad: lambda {name} at {loc.filename}:{loc.line}>", 1
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    return text, filename, first


def _closure_values(fn: Any, names: set[str]) -> dict[str, Any]:
    """The variables among ``names`` that ``fn`` reads from the scope enclosing it (a function
    made by a factory), with their values: a nested function of ``fn`` reads them there too."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    values = {}
    for n in sorted(names & set(cells)):
        try:
            values[n] = cells[n].cell_contents
        except ValueError:  # (an empty cell: not assigned yet, a NameError when read)
            continue
    return values


def _compiled(name: str, text: str, filename: str, first: int, recursive: bool,
              scope: dict[str, Any], closure: dict[str, Any]) -> Any:
    """The function ``name`` that ``text`` defines, compiled with the globals ``scope``
    inside a maker function when it is recursive (its own name a closure cell) or reads
    variables of the scope enclosing the function (``closure``, closure cells too)."""
    tree = ast.parse(text)
    ast.increment_lineno(tree, first - 1)
    made = recursive or bool(closure)
    if made:
        maker = ast.FunctionDef(name=_MAKER, args=ast.arguments([], [ast.arg(n) for n in closure], None, [], [],
                                                                None, []),
                                body=[*tree.body, ast.Return(ast.Name(name, ast.Load()))],
                                decorator_list=[], returns=None,
                                **({"type_params": []} if sys.version_info >= (3, 12) else {}))
        tree.body = [ast.copy_location(maker, tree.body[0])]
        ast.fix_missing_locations(tree)
    defined: dict[str, Any] = {}
    exec(compile(tree, filename, "exec"), scope, defined)
    return defined[_MAKER](**closure) if made else defined[name]
