"""Pass 1: read the function's source, dedent it, and remember where it came from.

The source read is that of the code that runs when the function is called: a wrapper
made with ``functools.wraps`` is read as the wrapper (``inspect`` would follow
``__wrapped__`` to the undecorated function).  A wrapper that forwards ``*args,
**kwargs`` is read with the wrapped function's parameters in place of its own.
"""
from __future__ import annotations

import ast
import inspect
import io
import linecache
import os
import sys
import sysconfig
import textwrap
import tokenize
import types
from dataclasses import dataclass

from ..errors import GENERATED_LINES, Location, S2SADError, SourceError, user_line


#: Where the standard library and installed packages live: code there is never traced into.
_LIBRARY_DIRS = tuple(sorted({os.path.join(os.path.realpath(path), "") for path in (
    sysconfig.get_path(name, vars=base) for name in ("stdlib", "platstdlib", "purelib", "platlib")
    for base in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix})) if path}))
#: s2sad's own package, wherever it is installed (its generated code is not in a file there).
_OWN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "")


def library_function(key: object) -> bool:
    """Whether ``key`` is a Python function of the standard library, an installed package
    (NumPy's and SciPy's included) or s2sad itself, not the user's own code."""
    if not isinstance(key, types.FunctionType):
        return False
    filename = os.path.realpath(key.__code__.co_filename)
    return filename.startswith(_LIBRARY_DIRS) or filename.startswith(_OWN_DIR) or bool(
        {"site-packages", "dist-packages"} & set(filename.split(os.sep)))


def own_function(key: object) -> bool:
    """Whether ``key`` is a Python function of s2sad's own package (not code it generated)."""
    return isinstance(key, types.FunctionType) and os.path.realpath(key.__code__.co_filename).startswith(_OWN_DIR)


def generated_function(key: object) -> bool:
    """Whether ``key`` is a function of code s2sad generated."""
    return isinstance(key, types.FunctionType) and key.__code__.co_filename.startswith("<s2sad ")


def relocate(exc: S2SADError) -> None:
    """Show an error found in generated code at the user's line that code comes from."""
    loc = exc.location
    origin = user_line(loc)
    if origin is None or origin is loc:
        return
    exc.message = (f"{exc.message} (in the code s2sad generated for this line, at {loc}: "
                   f"{loc.source_line.strip()})")
    exc.args = (exc.message,)
    exc.location = origin


@dataclass(frozen=True)
class FunctionSource:
    """A function's dedented source and the map back to its file."""

    fn: types.FunctionType
    text: str  # dedented source, decorators included (the parser skips them)
    filename: str
    first_line: int  # file line number of the first line of ``text``
    indent: int  # columns removed by dedenting
    file_lines: tuple[str, ...]  # the source lines as they are in the file
    lambda_name: str | None = None  # for a lambda (``text`` is the lambda): the name it is bound to
    first_column: int | None = None  # the file column of ``text``'s first line, if not ``indent``
    line_map: tuple[int, ...] = ()  # line of ``text`` -> index into file_lines, when lines were added

    def location(self, line: int, column: int) -> Location:
        """Map a 1-based line and 0-based column in ``text`` to the file."""
        index = line - 1
        if 0 <= index < len(self.line_map):
            index = self.line_map[index]
        source_line = self.file_lines[index] if 0 <= index < len(self.file_lines) else ""
        shift = self.first_column if line == 1 and self.first_column is not None else self.indent
        return Location(self.filename, self.first_line + index, column + shift + 1, source_line)


def read_source(fn: object) -> FunctionSource:
    """Get the source of a Python function, or a clear :class:`SourceError`."""
    if not isinstance(fn, types.FunctionType):
        raise SourceError(no_source_message(fn) + wrapping(fn))
    if library_function(fn):
        raise SourceError(library_message(fn))
    if fn.__name__ == "<lambda>":
        return _lambda_source(fn)
    try:
        # the code object, not the function: inspect would follow __wrapped__ to another function
        lines, first_line = inspect.getsourcelines(fn.__code__)
    except (OSError, TypeError) as exc:
        if is_wrapper(fn):
            raise SourceError(
                f"{_wrapped_name(fn)} is wrapped by {_decorator(fn)}, whose source s2sad cannot "
                f"read ({exc}); define the decorator in a file, or differentiate the undecorated "
                f"function", _definition(fn)) from None
        raise SourceError(
            f"cannot read the source of {fn.__qualname__} (defined in {fn.__code__.co_filename}): "
            f"{exc}. s2sad reads source code, so define the function in a file (or a notebook "
            f"cell), not in the interactive prompt or with exec()"
        ) from None
    raw = "".join(lines)
    text = textwrap.dedent(raw)
    from .current import mangle, owner_class, runs_text  # (on the first generation: import s2sad stays light)
    if not runs_text(fn, raw, _tree(fn.__code__.co_filename, linecache.getlines(fn.__code__.co_filename))):
        raise SourceError(
            f"the source of {fn.__qualname__} in {os.path.basename(fn.__code__.co_filename)} is not the "
            f"code it runs: the file changed since its module was imported (or a decorator rewrote "
            f"the code); reload the module (importlib.reload, or restart the kernel) and take the "
            f"function again",
            Location(fn.__code__.co_filename, max(first_line, 1), 1, lines[0] if lines else ""))
    first = lines[0] if lines else ""
    indent = len(first) - len(first.lstrip()) if text.strip() else 0
    line_map: tuple[int, ...] = ()
    signature = forwarding_signature(fn)
    if signature is not None:
        text, line_map = _specialize(fn, text, signature)
    text = mangle(text, owner_class(fn))
    return FunctionSource(fn, text, fn.__code__.co_filename, max(first_line, 1), indent,
                          tuple(lines), line_map=line_map)


def no_source_message(obj: object, given: object = None) -> str:
    """Why ``obj`` (reached through ``given``: a method, a partial...) has no source to
    differentiate, and what to write instead."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    what = f"{module}.{name}" if module and name else repr(obj)
    if given is not None and given is not obj:
        what = f"{given!r} calls {what}, which"
    if not callable(obj):
        return f"{what} is not a function (its type is {type(obj).__name__}); pass the function to differentiate"
    from ..rules import REGISTRY

    owner = getattr(obj, "__self__", None)  # a built-in method such as x.sum: its class's method
    method = getattr(type(owner), getattr(obj, "__name__", ""), None) if owner is not None else None
    if REGISTRY.rule(obj) is not None or method is not None and REGISTRY.rule(method) is not None:
        advice = ("s2sad knows its gradient where Python code calls it: differentiate a "
                  "function that calls it, such as 'lambda x: <the call>'")
    else:
        advice = ("register a gradient rule for it with s2sad.defvjp, then differentiate a "
                  "Python function that calls it")
    return (f"s2sad differentiates Python functions (def, lambda, bound methods, functools.partial, "
            f"objects with __call__) by reading their source; {what} has no Python source (its type is "
            f"{type(obj).__name__}): {advice}")


def library_message(fn: types.FunctionType) -> str:
    """Why ``fn``, library code, is not differentiated by reading it, and what to write instead."""
    what = f"{fn.__module__}.{fn.__qualname__}"
    if own_function(fn):
        return (f"{what} is s2sad's own code (a function s2sad returned), which s2sad does not "
                f"differentiate; for derivatives of derivatives, differentiate grad(f) or jvp(f), or "
                f"use s2sad.hessian(f) or s2sad.hvp(f)")
    from ..rules import REGISTRY

    advice = ("s2sad knows its gradient where Python code calls it: differentiate a function that "
              "calls it, such as 'lambda x: <the call>'" if REGISTRY.rule(fn) is not None else
              "register a gradient rule for it with s2sad.defvjp, then differentiate a Python "
              "function that calls it")
    return f"{what} is library code, whose source s2sad never reads: {advice}"


def _lambda_source(fn: types.FunctionType) -> FunctionSource:
    """A lambda's source: the lambda expression itself, found in its file by the position
    of its code (several lambdas on one line are told apart by their columns)."""
    code = fn.__code__
    filename, line = code.co_filename, code.co_firstlineno
    lines = linecache.getlines(filename, fn.__globals__)
    where = Location(filename, line, 1, lines[line - 1] if 0 < line <= len(lines) else "")
    tree = _tree(filename, lines)
    if not lines or tree is None:
        raise SourceError(
            f"cannot read the source of the lambda defined at {filename}:{line}. s2sad reads "
            f"source code, so define the function in a file (or a notebook cell), not in the "
            f"interactive prompt or with exec()", where if lines else None)
    names: dict[int, str] = {}  # id of a lambda -> the name an assignment binds it to
    candidates = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Lambda):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                names[id(node.value)] = targets[0].id
        if isinstance(node, ast.Lambda) and node.lineno == line and _same_parameters(node, code):
            candidates.append(node)
    spans = set(code.co_positions())
    located = [n for n in candidates
               if (n.body.lineno, n.body.end_lineno, n.body.col_offset, n.body.end_col_offset) in spans]
    if len(candidates) == 1 and not located:  # no column information (python -X no_debug_ranges)
        located = candidates
    if len(located) != 1:
        found = "no lambda with its parameters" if not located else f"{len(located)} lambdas"
        raise SourceError(
            f"cannot tell which lambda on this line is being differentiated ({found} match its "
            f"code; the file may have changed since it was imported); define the function with "
            f"'def', or put each lambda on a line of its own", where)
    node = located[0]
    file_lines = lines[node.lineno - 1:node.end_lineno]
    column = _characters(file_lines[0], node.col_offset)
    end = _characters(file_lines[-1], node.end_col_offset)
    if len(file_lines) == 1:
        text = file_lines[0][column:end]
    else:
        text = file_lines[0][column:] + "".join(file_lines[1:-1]) + file_lines[-1][:end]
    return FunctionSource(fn, text, filename, node.lineno, 0, tuple(file_lines),
                          lambda_name=names.get(id(node), "lambda"), first_column=column)


_TREES: dict[str, tuple[list[str], ast.Module | None]] = {}  # file -> (its lines, their tree)


def _tree(filename: str, lines: list[str]) -> ast.Module | None:
    """The syntax tree of a file's ``lines`` (linecache's list: the same while the file is)."""
    known = _TREES.get(filename)
    if known is not None and known[0] is lines:
        return known[1]
    try:
        tree: ast.Module | None = ast.parse("".join(lines), filename)
    except (SyntaxError, ValueError):
        tree = None
    _TREES[filename] = (lines, tree)
    return tree


def _same_parameters(node: ast.Lambda, code: types.CodeType) -> bool:
    a = node.args
    written = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    written += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return sorted(written) == sorted(code.co_varnames[:count])


def _characters(line: str, offset: int) -> int:
    """The character column of the UTF-8 byte ``offset`` that ``ast`` reports in ``line``."""
    return len(line.encode("utf-8")[:offset].decode("utf-8", errors="replace"))


# ---- wrappers -----------------------------------------------------------------------------

def is_wrapper(fn: object) -> bool:
    """Whether ``fn`` wraps another function (``functools.wraps``) with code of its own."""
    try:
        wrapped = fn.__wrapped__  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - any object can be asked
        return False
    code = getattr(fn, "__code__", None)
    return code is None or getattr(wrapped, "__code__", None) is not code


def call_signature(fn: types.FunctionType) -> inspect.Signature:
    """The parameters s2sad compiles ``fn`` with: its own, or, for a wrapper forwarding
    ``*args, **kwargs``, those of the function it wraps."""
    signature = forwarding_signature(fn) if isinstance(fn, types.FunctionType) else None
    return signature if signature is not None else inspect.signature(fn, follow_wrapped=False)


def forwarding_signature(fn: types.FunctionType) -> inspect.Signature | None:
    """The wrapped function's signature if ``fn`` is a wrapper whose only parameters are
    ``*args`` and/or ``**kwargs``; None for any other function."""
    given = fn.__dict__.get("__s2sad_forwarded__")
    if given is not None:  # (see forwarded_call)
        return given
    code = fn.__code__
    if (not is_wrapper(fn) or code.co_argcount or code.co_kwonlyargcount
            or not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)):
        return None
    try:
        signature = inspect.signature(fn)  # follows __wrapped__
    except (TypeError, ValueError):
        signature = None
    kinds = {p.kind for p in signature.parameters.values()} if signature is not None else {None}
    if kinds & {None, inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
        raise SourceError(
            f"{_wrapped_name(fn)} is wrapped by {_decorator(fn)}, which takes *args/**kwargs, "
            f"and the wrapped function has no fixed parameters to compile it with; give the "
            f"wrapped function named parameters", _definition(fn))
    return signature


def _specialize(fn: types.FunctionType, text: str, signature: inspect.Signature) -> tuple[str, tuple[int, ...]]:
    """``text`` with the wrapper's ``(*args, **kwargs)`` replaced by ``signature``'s
    parameters, and ``args = (...)``/``kwargs = {...}`` bound from them first."""
    fdef = ast.parse(text).body[0]
    assert isinstance(fdef, ast.FunctionDef)
    star = fdef.args.vararg.arg if fdef.args.vararg else None
    stars = fdef.args.kwarg.arg if fdef.args.kwarg else None
    own = set(fn.__code__.co_varnames[:fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount])
    params = [p for p in signature.parameters.values() if p.name not in own]  # (what it passes on)
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keywords = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    if star is None:
        keywords, positional = positional + keywords, []
    problem = _forwarding_problem(fdef, star, stars, params)
    if problem is None and (stars is None and keywords or star is None and any(
            p.kind is p.POSITIONAL_ONLY for p in params)):
        problem = "it cannot pass on every parameter of the wrapped function"
    if problem is not None:
        raise SourceError(f"{_wrapped_name(fn)} is wrapped by {_decorator(fn)}, which s2sad cannot "
                          f"compile with the wrapped function's parameters: {problem}; give the "
                          f"wrapper named parameters", _definition(fn))
    bindings = []
    if star is not None:
        bindings.append(f"{star} = ({', '.join(positional)}{',' if len(positional) == 1 else ''})")
    if stars is not None:
        bindings.append(f"{stars} = {{{', '.join(f'{n!r}: {n}' for n in keywords)}}}")
    start, end = _parentheses(text, fdef.lineno)
    newlines = text[start:end].count("\n")  # kept: the parameter list may span lines
    text = text[:start] + _parameters_text(signature) + "\n" * newlines + text[end:]
    fdef = ast.parse(text).body[0]
    assert isinstance(fdef, ast.FunctionDef)
    body = fdef.body[1] if _is_docstring(fdef.body[0]) and len(fdef.body) > 1 else fdef.body[0]
    lines = text.splitlines(True)
    at = body.lineno - 1
    column = _column(lines[at], body.col_offset)
    if body.lineno == fdef.lineno + newlines:  # the body is on the header's line: bind there
        lines[at] = lines[at][:column] + "; ".join(bindings) + "; " + lines[at][column:]
        return "".join(lines), ()
    added = [lines[at][:column] + b + "\n" for b in bindings]
    line_map = (*range(at), *(fdef.lineno - 1,) * len(added), *range(at, len(lines)))
    return "".join(lines[:at] + added + lines[at:]), line_map


def forwarded_call(fn: types.FunctionType, positional: int, keywords: tuple[str, ...]) -> inspect.Signature | None:
    """The parameters to compile ``fn`` with for a call with ``positional`` arguments and
    ``keywords``, when it has ``*args`` and/or ``**kwargs`` and only passes them on whole
    (``def fwd(a, *args, **kwargs): return g(a, *args, **kwargs)``): its named parameters,
    then ``args_0, ...`` for the positional arguments after them, then the keywords that
    name none of its parameters; None for any other function or call."""
    code = fn.__code__
    own = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    star = code.co_varnames[len(own)] if code.co_flags & inspect.CO_VARARGS else None
    stars = code.co_varnames[len(own) + bool(star)] if code.co_flags & inspect.CO_VARKEYWORDS else None
    extra = positional - code.co_argcount
    named = tuple(k for k in keywords if k not in own)
    if (not (star or stars) or is_wrapper(fn) or extra > 0 and star is None or named and stars is None
            or set(keywords) & set(code.co_varnames[:code.co_posonlyargcount])):
        return None
    try:
        fdef = ast.parse(read_source(fn).text).body[0]
    except (S2SADError, SyntaxError, IndexError):
        return None
    if not isinstance(fdef, ast.FunctionDef):
        return None
    taken = {n.id for stmt in fdef.body for n in ast.walk(stmt) if isinstance(n, ast.Name)} | set(keywords) | set(own)
    names = [f"{star}_{i}" for i in range(max(extra, 0))]
    while taken & set(names):
        names = [f"_{n}" for n in names]
    P = inspect.Parameter
    mine = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    before = [p.replace(default=P.empty) if names else p for p in mine if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    params = [P(n, P.POSITIONAL_OR_KEYWORD) for n in names] + [P(k, P.KEYWORD_ONLY) for k in named]
    if _forwarding_problem(fdef, star, stars, params):
        return None
    return inspect.Signature(before + params[:len(names)] + [p for p in mine if p.kind is P.KEYWORD_ONLY]
                             + params[len(names):])


def _forwarding_problem(fdef: ast.FunctionDef, star: str | None, stars: str | None,
                        params: list[inspect.Parameter]) -> str | None:
    """Why the wrapper's body cannot run with the wrapped function's parameters, if it cannot."""
    names = {n.id for stmt in fdef.body for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    clash = sorted(names & {p.name for p in params})
    if clash:
        return f"its code uses the name(s) {', '.join(clash)}, which are parameters of the wrapped function"
    if not _only_forwards(fdef, star, stars):
        spelled = " and ".join(f"{prefix}{name}" for prefix, name in (("*", star), ("**", stars)) if name)
        return f"it uses {spelled} other than to pass them on in a call"
    return None


def _only_forwards(fdef: ast.FunctionDef, star: str | None, stars: str | None) -> bool:
    """Whether ``*star`` and ``**stars`` are only ever passed on whole in calls."""
    nodes = [n for stmt in fdef.body for n in ast.walk(stmt)]
    allowed: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Call):
            allowed.update(id(a.value) for a in node.args
                           if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name) and a.value.id == star)
            allowed.update(id(k.value) for k in node.keywords
                           if k.arg is None and isinstance(k.value, ast.Name) and k.value.id == stars)
    return all(id(n) in allowed for n in nodes if isinstance(n, ast.Name) and n.id in (star, stars))


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _parameters_text(signature: inspect.Signature) -> str:
    """The parameter list; the generated function gets the real defaults when it is made."""
    parts: list[str] = []
    kinds = [p.kind for p in signature.parameters.values()]
    for i, p in enumerate(signature.parameters.values()):
        if p.kind is p.KEYWORD_ONLY and (i == 0 or kinds[i - 1] is not p.KEYWORD_ONLY):
            parts.append("*")
        parts.append(p.name + ("" if p.default is p.empty else "=" + _default_text(p.default)))
        if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(kinds) or kinds[i + 1] is not p.POSITIONAL_ONLY):
            parts.append("/")
    return ", ".join(parts)


def _default_text(value: object) -> str:
    """A default as a literal when it is one (the text is shown, never evaluated)."""
    try:
        same = type(ast.literal_eval(repr(value))) is type(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        same = False
    return repr(value) if same else "..."


def _parentheses(text: str, line: int) -> tuple[int, int]:
    """Offsets in ``text`` just inside the parentheses of the 'def' on ``line``."""
    offsets = [0]
    for part in text.splitlines(True):
        offsets.append(offsets[-1] + len(part))
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    start, depth = None, 0
    for tok in tokens:
        if tok.start[0] < line or tok.type != tokenize.OP:
            continue
        if tok.string == "(":
            depth += 1
            if depth == 1 and start is None:
                start = offsets[tok.end[0] - 1] + tok.end[1]
        elif tok.string == ")":
            depth -= 1
            if depth == 0 and start is not None:
                return start, offsets[tok.start[0] - 1] + tok.start[1]
    raise SourceError("cannot find the parameters of a wrapper")  # unreachable for parsed code


def _column(line: str, byte_offset: int) -> int:
    return len(line.encode()[:byte_offset].decode(errors="ignore"))


def wrapping(fn: object) -> str:
    """For a message: what ``fn`` wraps, if it is a wrapper (s2sad never differentiates
    the wrapped function in its place)."""
    if not is_wrapper(fn):
        return ""
    where = _definition(fn)
    return (f" (it wraps {_wrapped_name(fn)}{f' from {where.filename}:{where.line}' if where else ''}, "
            f"made by {_decorator(fn)}; s2sad does not differentiate the wrapped function in its place)")


def _wrapped_name(fn: object) -> str:
    inner = inspect.unwrap(fn)  # type: ignore[arg-type]
    return getattr(inner, "__qualname__", None) or repr(inner)


def _decorator(fn: object) -> str:
    """How to name the decorator that made wrapper ``fn``, for messages."""
    code = getattr(fn, "__code__", None)
    if isinstance(fn, types.FunctionType) and code is not None:
        qualname = getattr(code, "co_qualname", code.co_name)
        maker = qualname.split(".<locals>.")[0]
        where = f"{code.co_filename}:{code.co_firstlineno}"
        return f"the decorator {maker} (its wrapper {qualname}, {where})"
    kind = type(fn)
    return f"the decorator {kind.__module__}.{kind.__qualname__}"


def _definition(fn: object) -> Location | None:
    """Where the decorated function is defined (its decorators included)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)  # type: ignore[arg-type]
    if code is None:
        return None
    line = code.co_firstlineno
    text = linecache.getline(code.co_filename, line)
    return Location(code.co_filename, line, len(text) - len(text.lstrip()) + 1, text)
