"""Pass 1: read the function's source, dedent it, and remember where it came from."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass

from ..errors import Location, SourceError


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

    def location(self, line: int, column: int) -> Location:
        """Map a 1-based line and 0-based column in ``text`` to the file."""
        source_line = self.file_lines[line - 1] if 0 < line <= len(self.file_lines) else ""
        shift = self.first_column if line == 1 and self.first_column is not None else self.indent
        return Location(self.filename, self.first_line + line - 1, column + shift + 1, source_line)


def read_source(fn: object) -> FunctionSource:
    """Get the source of a Python function, or a clear :class:`SourceError`."""
    if not isinstance(fn, types.FunctionType):
        raise SourceError(no_source_message(fn))
    if fn.__name__ == "<lambda>":
        return _lambda_source(fn)
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise SourceError(
            f"cannot read the source of {fn.__qualname__} (defined in {fn.__code__.co_filename}): "
            f"{exc}. s2sad reads source code, so define the function in a file (or a notebook "
            f"cell), not in the interactive prompt or with exec()"
        ) from None
    raw = "".join(lines)
    text = textwrap.dedent(raw)
    first = lines[0] if lines else ""
    indent = len(first) - len(first.lstrip()) if text.strip() else 0
    return FunctionSource(fn, text, fn.__code__.co_filename, max(first_line, 1), indent,
                          tuple(lines))


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
