"""Pass 8: write the generated function as a module, compile it, register it.

The text shown to users is a small, self-contained module: the imports the
code needs, then one function.  It is compiled from that very text, and the
text is registered with :mod:`linecache`, so tracebacks and pdb show the
generated lines.  The compiled function looks up the user's globals live and
shares the user's closure cells, exactly like the original function.
"""
from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import json
import os
import re
import sys
import types
from typing import Any, Callable, Iterable, NamedTuple

import libcst as cst

from ..rules.registry import SETITEM, USER_OBJECTS, is_atomic
from ..sentinel import MISSING
from ..runtime import concat, repeat_items
from ..errors import Location
from ..generated import Generated, register
from ..ir import (VALUE_KINDS, Assign, Call, Const, Function, If, Loop, Raw, Stmt, Var, if_header, statements,
                  targets_code, wrt_parameter)
from .adjoint import Adjoint, Line, Out, runtime_object
from .callees import MethodOfSelf

_EMPTY = cst.Module(body=[])
FACTORY = "__s2sad_factory__"


class Rendered(NamedTuple):
    """The generated module's text, the generated function's name, the function parsed (its
    line numbers count from its own first line, ``offset`` lines into the text) and the names
    its body reads or writes: parsed once, for the imports and for compiling."""

    text: str
    name: str
    function: ast.FunctionDef
    used: set[str]
    offset: int


# (nodes are immutable, and equal only to themselves: the shape analysis and the cleanups
# read each forward statement's code many times)
@functools.lru_cache(maxsize=1 << 14)
def expression_code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node).strip()


def statement_code(stmt: Assign, use: Callable[[str], str] | None = None) -> str:
    """One forward statement as Python source; ``use`` spells runtime names (for checks)."""
    v = stmt.value
    if isinstance(v, Call) and v.rule is not None and v.rule.fun is SETITEM:
        x, value = _operand_code(v.args["x"]), _operand_code(v.args["v"])
        code = f"{stmt.target} = {x}.copy()\n{expression_code(v.node)} = {value}"
        if v.overlap and use is not None:
            index = _operand_code(v.args["index"])
            code = f"{use('check_assignment_order')}({x}, {index}, {value}, {v.overlap!r})\n{code}"
        if v.float_check and use is not None:
            code = f"{use('check_float_write')}({x}, {v.float_check!r}, {value})\n{code}"
        return code
    code = v.name if isinstance(v, Var) else v.code if isinstance(v, Const) else expression_code(v.node)
    if (isinstance(v, Call) and v.rule is not None and v.rule.fun in (concat, repeat_items) and use is not None
            and isinstance(v.node, cst.BinaryOperation)):  # xs + [v], [x] * n: spelled as what they are
        code = f"{use(v.rule.fun.__name__)}({expression_code(v.node.left)}, {expression_code(v.node.right)})"
    if (isinstance(v, Call) and isinstance(v.function, MethodOfSelf) and v.function.__name__ == "__call__"
            and use is not None and isinstance(v.node, cst.Call) and isinstance(v.node.func, cst.Attribute)):
        # x(...) of an object found as it runs (a class too: it makes an instance, as Python does)
        code = expression_code(v.node.with_changes(func=cst.Name(use("call_object")),
                                                   args=[cst.Arg(v.node.func.value), *v.node.args]))
    if stmt.target is None:
        return code
    target = stmt.target if isinstance(stmt.target, str) else targets_code(stmt.target)
    if isinstance(v, Call) and v.number_check and use is not None:  # x op= v, x maybe shared
        where, refusal = v.number_check
        return (f"{use('check_number')}({_operand_code(v.args['x'])}, {json.dumps(where)}, "
                f"{json.dumps(refusal)})\n{target} = {code}")
    return f"{target} = {code}"


def render_function(fn: Function, name: str, body: list[str], first: str | None = None,
                    last: str | None = None) -> str:
    header = fn.header if last is None else _with_last(fn.header, last)
    params = _EMPTY.code_for_node(header).strip()
    if first:
        params = f"{first}, {params}" if params else first
    lines = [f"def {name}({params}):"]
    for line in body:
        lines.extend("    " + part if part else "" for part in line.split("\n"))
    return "\n".join(lines) + "\n"


def _with_last(header: cst.Parameters, name: str) -> cst.Parameters:
    """``header`` with the parameter ``name`` last: positional where Python allows it, else
    keyword-only (after parameters with defaults, or ``*args``)."""
    param = cst.Param(cst.Name(name))
    positional = (*header.posonly_params, *header.params)
    if header.star_arg is cst.MaybeSentinel.DEFAULT and not header.kwonly_params and all(
            p.default is None for p in positional):
        return header.with_changes(params=[*header.params, param])
    star = header.star_arg if isinstance(header.star_arg, (cst.Param, cst.ParamStar)) else cst.ParamStar()
    return header.with_changes(star_arg=star, kwonly_params=[*header.kwonly_params, param])


def render_forward(stmts: list[Stmt], use: Callable[[str], str]) -> list[str]:
    """Forward statements as source lines (loops with their tape pushes and phi copies)."""
    out: list[str] = []
    for s in stmts:
        if isinstance(s, Raw):
            out.append(s.code)
        elif isinstance(s, Assign):
            out += statement_code(s, use).split("\n")
        elif isinstance(s, If):
            body, orelse = render_forward(s.body, use), render_forward(s.orelse, use)
            if s.tape:
                body += _push(s.tape, s.saves[0])
                orelse += _push(s.tape, s.saves[1])
            out.append(if_header(s))
            out += _indent(body or ["pass"])
            if orelse:
                out.append("else:")
                out += _indent(orelse)
        elif isinstance(s, Loop):
            if s.tape:
                out.append(f"{s.tape} = []")
            elif s.counter:
                out.append(f"{s.counter} = 0")
            body = render_forward(s.body, use)
            if s.tape:
                body += _push(s.tape, s.pushed or s.saved)
            elif s.counter:
                body.append(f"{s.counter} += 1")
            body += [f"{name} = {last}" for name, last in s.carried if name != last]
            if s.break_flag:
                body += [f"if {s.break_flag}:", "    break"]
            out.append(f"{s.header}:")
            out += _indent(body or ["pass"])
    return out


def _push(tape: str, names: tuple[str, ...]) -> list[str]:
    if not names:
        return []
    return [f"{tape}.append({names[0] if len(names) == 1 else '(' + ', '.join(names) + ')'})"]


def _pop(tape: str | None, names: tuple[str, ...]) -> list[str]:
    return [f"{', '.join(names)} = {tape}.pop()"] if tape and names else []


def _branches_push(stmts: list[Stmt]) -> bool:
    """Whether an if in a loop body (nested loops aside) pushes entries of its own."""
    return any(isinstance(s, If) and (any(s.saves) and s.tape is not None
                                      or _branches_push(s.body) or _branches_push(s.orelse))
               for s in stmts)


def render_backward(outs: list[Out], group: int | None = None) -> list[str]:
    """Backward lines, with a '# grad of line N' comment where the source line changes (a
    reversed loop's comment stands above it, for its body too)."""
    out: list[str] = []
    for x in outs:
        if isinstance(x, Line):
            if x.group != group:
                group = x.group
                out.append(f"# grad of line {x.group}: {x.source}")
            out.append(x.code)
            continue
        own = x.loop.loc.line if x.loop is not None else None
        body, orelse = render_backward(x.body, own), render_backward(x.orelse)
        header = x.header
        if x.loop is not None and x.loop.tape and x.loop.saved and not _branches_push(x.loop.body):
            # each entry is one iteration's: iterate them in reverse, as a person would
            header = f"for {', '.join(x.loop.saved)} in reversed({x.loop.tape}):"
        elif x.loop is not None:
            body = _pop(x.loop.tape, x.loop.saved) + body
        if x.branch is not None:
            body = _pop(x.branch.tape, x.branch.saves[0]) + body
            orelse = _pop(x.branch.tape, x.branch.saves[1]) + orelse
        if not body and not orelse:
            continue
        if x.branch is not None and x.branch.context:  # (a with block: its warnings filters first)
            body = [*x.branch.setup, *body]
        if not body:
            test = header[3:-1]
            header, body, orelse = f"if not {test if is_atomic(test) else '(' + test + ')'}:", orelse, []
        if x.loop is not None and group != own:
            out.append(f"# grad of line {own}: {x.loop.loc.source_line.strip()}")
        group = None
        out.append(header)
        out += _indent(body)
        if orelse:
            out.append("else:")
            out += _indent(orelse)
    return out


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line if line else "" for line in lines]


def _operand_code(op: Any) -> str:
    return op.name if isinstance(op, Var) else op.code


def render(adj: Adjoint, kind: str) -> Rendered:
    """The generated module: its text, the function's name, its tree and the names its body uses."""
    fn = adj.fn
    name = adj.name
    body: list[str] = []
    if kind in ("grad", "value_and_grad"):  # a callee's arguments come from generated code
        body = [f'{adj.use("check_wrt")}({p}, "{p}")' if wrt_parameter(p) == p else
                 f'{adj.use("check_wrt_item")}({wrt_parameter(p)}, {p[len(wrt_parameter(p)) + 1:-1]}, "{p}")'
                 for p in adj.wrt if p not in adj.trusted]
    body += render_forward(adj.forward, adj.use)
    value = _operand_code(adj.value)
    if adj.value_copy and kind in VALUE_KINDS:
        body.append(f"{adj.value_copy} = {value}")
        value = adj.value_copy
    if kind == "jvp":
        body.append(f"return {value}, {adj.results[0]}")
        return _module(adj, kind, name, render_function(fn, name, body, last=adj.seed_param))
    if kind == "split":
        return _render_split(adj, body, value)
    if body:  # (a blank line between the forward and the backward pass)
        body.append("")
    if kind != "vjp" and adj.seed:
        body.append(adj.seed)
    body += render_backward(adj.backward)
    function, fdef = _with_return(adj, kind, body, value, adj.results)
    return _module(adj, kind, name, function, fdef)


def _with_return(adj: Adjoint, kind: str, body: list[str], value: str,
                 results: list[str]) -> tuple[str, ast.FunctionDef]:
    """The function of ``body`` that returns ``results`` (after ``value``), and its tree."""
    if len(results) > 1 and kind in ("grad", "value_and_grad") and adj.shared_results:
        # one array can be the gradient of two arguments (x and y in np.sum(x + y)): the
        # caller gets arrays it can update independently
        grads = f"{adj.use('distinct')}({', '.join(results)})"
    else:
        grads = _returned_grads(adj, results)
    returned = f"return {value}, {grads}" if kind in VALUE_KINDS else f"return {grads}"
    function = render_function(adj.fn, adj.name, body + [returned], adj.seed_param)
    return function, _function_tree(function)


def _returned_grads(adj: Adjoint, results: list[str] | None = None) -> str:
    """The gradient, or a tuple of them when ``wrt`` was a tuple."""
    results = adj.results if results is None else results
    if len(results) == 1 and not adj.multiple:
        return results[0]
    return "(" + ", ".join(results) + ("," if len(results) == 1 else "") + ")"


def _function_tree(function: str) -> ast.FunctionDef:
    return next(n for n in ast.parse(function).body if isinstance(n, ast.FunctionDef))


def _module(adj: Adjoint, kind: str, name: str, function: str, fdef: ast.FunctionDef | None = None) -> Rendered:
    """The imports ``function`` needs, the function (``fdef``: its tree, when parsed), then
    the callees it calls."""
    fdef = fdef or _function_tree(function)
    used = _names_in(fdef.body)  # the compiled function has no defaults or annotations
    header = _header(adj, kind, used | _names_in([fdef.args]))
    return Rendered(header + "\n\n" + function + _callees(adj), name, fdef, used, header.count("\n") + 2)


def _callees(adj: Adjoint) -> str:
    # a callee this code calls under another name (its own name was taken) is also bound to it
    return "".join("\n\n" + f.__s2sad_source__ + (f"{name} = {f.__name__}\n" if name != f.__name__ else "")
                   for name, f in adj.callees.items())


def _render_split(adj: Adjoint, forward: list[str], value: str) -> Rendered:
    """``forward_f(*params) -> (value, backward)``: the forward pass, and a closure over its
    values that runs the backward pass once: ``backward(g) -> gradients``."""
    backward = render_backward(adj.backward)
    rebound = set(_stores("\n".join(backward))) & ({*adj.fn.params, *_stores("\n".join(forward))})
    grads = _returned_grads(adj)
    inner = [f"nonlocal {', '.join(sorted(rebound))}"] if rebound else []
    body = [*forward, *([""] if forward else []), f"def {adj.backward_name}({adj.seed_param}):",
            *_indent([*inner, *backward, f"return {grads}"]), "", f"return {value}, {adj.backward_name}"]
    return _module(adj, "split", adj.name, render_function(adj.fn, adj.name, body))


def _stores(text: str) -> list[str]:
    """Names ``text`` assigns, in order of first assignment."""
    return list(dict.fromkeys(n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)
                              and isinstance(n.ctx, ast.Store)))


def _header(adj: Adjoint, kind: str, used: set[str]) -> str:
    fn = adj.fn
    source = adj.source
    what = {"grad": "gradient", "callee_grad": "gradient", "value_and_grad": "value and gradient",
            "callee_value_and_grad": "value and gradient",
            "vjp": "vector-Jacobian product", "jvp": "Jacobian-vector product",
            "split": "forward and backward passes"}[kind]
    lines = [f"# Generated by s2sad from {fn.name} ({os.path.basename(source.filename)}:"
             f"{source.first_line}): {what} with respect to {', '.join(adj.wrt)}."]
    imports: set[str] = set()
    froms: dict[str, list[str]] = {}
    loose: dict[str, list[str]] = {}
    rule_functions: list[str] = []
    bound: list[str] = []
    spelled = {spelling: rt for rt, spelling in adj.runtime.items()}
    home = adj.source.fn.__globals__.get("__name__")  # the user's module, if it can be imported
    home_module = sys.modules.get(home) if home and home != "__main__" else None
    for name in sorted(used):
        if name in spelled:
            obj = runtime_object(spelled[name])
        elif name in fn.free:
            obj = fn.free[name]
        else:
            continue
        if obj is MISSING or getattr(builtins, name, None) is obj:  # (MISSING: a comprehension's own)
            continue
        if USER_OBJECTS.get(name) is obj and _importable(obj) is None:  # a function given to defvjp
            declared_in = getattr(obj, "__module__", None)
            if declared_in and declared_in != "__main__":
                imports.add(f"import {declared_in}  # declares the rules of s2sad.defvjp called below")
            rule_functions.append(name)
            continue
        if isinstance(obj, types.ModuleType):
            imports.add(f"import {obj.__name__}" + ("" if obj.__name__ == name else f" as {name}"))
            continue
        if name in fn.module_paths:  # a rule's function reached through an object (np.add.reduce)
            imports |= _path_imports(*fn.module_paths[name])
            module, alias, path = fn.module_paths[name]
            bound.append(f"{name} = {alias}.{path}")
            continue
        origin = _importable(obj)
        if origin is None and name not in fn.closure and home_module is not None and \
                getattr(home_module, name, MISSING) is obj:
            origin = home, name  # a constant of the user's module, say
        if origin is None:
            loose.setdefault("closure" if name in fn.closure else "globals", []).append(name)
            continue
        module, attr = origin
        froms.setdefault(module, []).append(attr if attr == name else f"{attr} as {name}")
    if rule_functions:
        froms.setdefault("s2sad.custom", []).append("rule_function")
    lines += sorted(imports)
    lines += [f"from {m} import {', '.join(sorted(names))}" for m, names in sorted(froms.items())]
    lines += [f'{name} = rule_function("{name}")' for name in rule_functions]
    lines += bound
    for where, names in sorted(loose.items()):
        lines.append(f"# reads from {fn.name}'s {where}: {', '.join(names)}")
    return "\n".join(lines) + "\n"


def _path_imports(module: str, alias: str, path: str) -> set[str]:
    """The imports that make ``alias.path`` readable: ``module`` as ``alias``, and the deepest
    module the path passes through (``scipy.stats`` for ``scipy``'s ``stats.norm.logpdf``),
    which ``import module`` may not load (``import scipy.stats`` binds ``scipy`` too)."""
    parts = path.split(".")
    below = [n for n in (".".join([module, *parts[:k]]) for k in range(1, len(parts)))
             if isinstance(sys.modules.get(n), types.ModuleType)]
    if module == alias and below:
        return {f"import {below[-1]}"}
    return {f"import {module}" + ("" if module == alias else f" as {alias}"), *(f"import {m}" for m in below[-1:])}


def _importable(obj: Any) -> tuple[str, str] | None:
    module = getattr(obj, "__module__", None)
    attr = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if isinstance(obj, _ufunc()):  # NumPy's, or SciPy's (scipy.special.expit)
        module, attr = "numpy", obj.__name__
        if getattr(sys.modules.get("numpy"), attr, None) is not obj:
            module = next((name for name in ("scipy.special",) if getattr(sys.modules.get(name), attr, None) is obj),
                          None)
    if not module or not attr or "<" in attr or "." in attr:
        return None
    if module.startswith("numpy") and getattr(sys.modules.get("numpy"), attr, None) is obj:
        module = "numpy"
    if module.startswith("s2sad.runtime.") and getattr(sys.modules.get("s2sad.runtime"), attr, None) is obj:
        module = "s2sad.runtime"  # a helper: imported from the package, not the module that defines it
    if module == "s2sad.runtime" and attr == "stop_gradient":
        module = "s2sad"
    if getattr(sys.modules.get(module), attr, None) is not obj:
        return None
    return module, attr


def _ufunc() -> type:
    import numpy as np

    return np.ufunc


def _walk(nodes: Iterable[ast.AST]) -> list[ast.AST]:
    """``nodes`` and every node under them but a Name's context: what ast.walk finds, several
    times faster on generated functions of thousands of lines."""
    found: list[ast.AST] = []
    todo = list(nodes)
    while todo:
        node = todo.pop()
        found.append(node)
        if type(node) is ast.Name:
            continue
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                todo += (v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                todo.append(value)
    return found


def _names_in(nodes: Iterable[ast.AST]) -> set[str]:
    """The variable names the code reads or writes (not attributes, comments or strings)."""
    return {node.id for node in _walk(nodes) if type(node) is ast.Name}


def _moved_down(code: types.CodeType, lines: int) -> types.CodeType:
    """``code`` (and the code nested in it) with every line number ``lines`` further down:
    ``ast.increment_lineno`` of its tree, without visiting each node."""
    consts = tuple(_moved_down(c, lines) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + lines, co_consts=consts)


def compile_text(adj: Adjoint, rendered: Rendered, kind: str) -> Generated:
    """Compile the rendered function's tree (its defaults and annotations dropped) into its
    code object, with the lines of the module text."""
    text, fdef, used = rendered.text, rendered.function, rendered.used
    fn = adj.fn
    wrt = "-".join(adj.wrt)
    specialized = f" for {adj.specialized_to}" if adj.specialized_to else ""
    # one name per text: linecache holds the lines a later differentiation of this code reads
    # (wrt=0 and wrt=(0,), or a gradient kept for hvp and one run, differ in text only)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    filename = (f"<s2sad {kind} of {fn.name} wrt {wrt} from {os.path.basename(adj.source.filename)}:"
                f"{adj.source.first_line}{specialized} #{digest}>")
    _strip_defaults_and_annotations(fdef.args)
    fdef.returns = None
    runtime = {spelled: runtime_object(rt) for rt, spelled in sorted(adj.runtime.items())}
    runtime.update(sorted(adj.callees.items()))
    runtime.update(sorted(_resolved_functions(fn, used, runtime).items()))
    cells = list(runtime) + sorted((fn.closure & used) - set(runtime))
    factory = ast.FunctionDef(
        name=FACTORY,
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=c) for c in cells], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[ast.Return(ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None)
    if sys.version_info >= (3, 12):
        factory.type_params = []
    ast.copy_location(factory, fdef)
    # only the nodes made here lack positions: fixing them before fdef joins spares a walk of it
    ast.fix_missing_locations(factory)
    factory.body.insert(0, fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    namespace: dict[str, Any] = {"__builtins__": builtins}
    exec(_moved_down(compile(module, filename, "exec"), rendered.offset), namespace)
    placeholder = namespace[FACTORY](*[runtime.get(c) for c in cells])
    register(filename, text, _origins(adj, text.split("\n"), fdef.lineno + rendered.offset - 1))
    known = None
    if adj.kind == "split" and adj.known is not None:
        value = adj.known.get(adj.value.name) if isinstance(adj.value, Var) else None
        known = (value, not adj.shared_results)
    return Generated(rendered.name, text, filename, placeholder.__code__, runtime,
                     bool(adj.split_calls) or adj.shares_stopped, known)


def _origins(adj: Adjoint, lines: list[str], start: int) -> dict[int, Location]:
    """The user's source line that each line of the generated function (from ``start``, 0-based)
    comes from: forward statements found in order, the backward pass by its provenance comments;
    a line in between (a tape push, a copy) goes with the line before it."""
    source = adj.source
    def user(line: int) -> Location:
        text = source.file_lines[line - source.first_line] if 0 <= line - source.first_line < len(source.file_lines) else ""
        return Location(source.filename, line, len(text) - len(text.lstrip()) + 1, text)

    origins: dict[int, Location] = {}
    # the checks of the wrt arguments, first: at the user's def line (an hvp runs them in the
    # forward mode of this code, where its own lines would be shown)
    checks = tuple(f"{adj.runtime[name]}(" for name in ("check_wrt", "check_wrt_item") if name in adj.runtime)
    at_def = next((i for i, text in enumerate(source.file_lines) if text.lstrip().startswith(("def ", "async def "))), 0)
    for j in range(start, len(lines)):
        if checks and lines[j].strip().startswith(checks):
            origins[j + 1] = user(source.first_line + at_def)
    position = start
    for stmt in statements(adj.forward):
        first = _first_line(stmt)
        for j in range(position, len(lines)):
            if lines[j].strip() == first:
                origins[j + 1] = user(stmt.loc.line)
                position = j + 1
                break
    current = None
    for j in range(start, len(lines)):
        provenance = re.match(r"\s*# grad of line (\d+):", lines[j])
        if provenance:
            current = user(int(provenance.group(1)))
        if j + 1 in origins:
            current = origins[j + 1]
        elif current is not None:
            origins[j + 1] = current
    return origins


def _first_line(stmt: Stmt) -> str:
    if isinstance(stmt, If):
        return if_header(stmt)
    if isinstance(stmt, Loop):
        return f"{stmt.header}:"
    if isinstance(stmt, Raw):
        return stmt.code.split("\n")[0].strip()
    if isinstance(stmt, Assign):
        return statement_code(stmt).split("\n")[0].strip()
    return ""


def _resolved_functions(fn: Function, used: set[str], bound: dict[str, Any]) -> dict[str, Any]:
    """The globals the code calls that resolved to functions, bound as they were resolved.

    The backward pass applies the rule or the generated code of the function resolved
    here, so the forward pass must call that same function: a gradient function that is
    kept after ``ACT = np.sin`` replaced ``ACT = np.tanh`` stays the gradient of the
    function it was generated from (``grad(f)`` again generates for the new one).
    Data globals and modules are read live, as the original function reads them; so are
    classes, but for a name s2sad introduced (``super()``'s class, spelled out).
    """
    return {name: obj for name, obj in fn.free.items()
            if name in used and name not in fn.closure and name not in bound and callable(obj)
            and not isinstance(obj, types.ModuleType) and (not isinstance(obj, type) or name not in fn.user_names)}


def _strip_defaults_and_annotations(args: ast.arguments) -> None:
    args.defaults = []
    args.kw_defaults = [None] * len(args.kwonlyargs)
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if a is not None:
            a.annotation = None
