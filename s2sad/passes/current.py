"""Whether a function's source, as its file holds it now, is the code the function runs; and
a method's text with its private names as Python compiles them (:func:`mangle`).

``inspect`` reads a function's source from its file, as it is when read: a file edited since
its module was imported gives the new text, while the function still runs the old code, and a
gradient generated from the text would be the gradient of another function.  The text is
compiled again and its code compared with the function's: the same bytecode, names and
constants, or a located error asking for the module to be reloaded.

A function that reads variables of an enclosing function is not checked (compiled alone, its
text reads them as globals, other bytecode), nor text that does not compile alone, nor text
registered with ``linecache`` under a name that is no file (s2sad's generated code), nor a
module that Python's own source loader did not load (pytest rewrites the asserts of test
modules: their code is not what the text compiles to).
"""
from __future__ import annotations

import __future__
import ast
import importlib.machinery
import inspect
import io
import sys
import tokenize
import types
from typing import Any

#: the compiler flags of ``from __future__ import ...`` features (kept in a code's flags)
_FUTURE_FLAGS = [getattr(__future__, name).compiler_flag for name in __future__.all_feature_names]


def runs_text(fn: types.FunctionType, raw: str, module: ast.Module | None) -> bool:
    """Whether ``raw`` (the ``def`` of ``fn`` as its file indents it) compiles to the code
    ``fn`` runs; True where that cannot be told.  ``module``: the syntax tree of ``fn``'s file,
    whose imports the text is compiled after (Python compiles ``m.f()`` otherwise where ``m``
    is a module a statement imports)."""
    code = fn.__code__
    if code.co_freevars or module is None or code.co_filename.startswith("<"):
        return True  # (a text registered with linecache, not a file: s2sad's generated code, say)
    loader = getattr(sys.modules.get(fn.__module__), "__loader__", None)
    if type(loader) is not importlib.machinery.SourceFileLoader:
        return True  # (another loader may compile the text otherwise: pytest rewrites asserts)
    block = f"if 1:\n{raw}" if raw[:1].isspace() else raw  # (not dedented: a docstring keeps its text)
    imports = "".join(f"{ast.unparse(node)}\n" for node in _imports(module.body))
    # (and alone: the code s2sad compiles from a nested def's text, without the imports)
    return any(_compiles_to(fn, text) for text in (imports + block, block))


def _compiles_to(fn: types.FunctionType, text: str) -> bool:
    code = fn.__code__
    flags = sum(flag for flag in _FUTURE_FLAGS if code.co_flags & flag)
    try:
        compiled = compile(text, code.co_filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):
        return True
    found = [c for c in compiled.co_consts if isinstance(c, types.CodeType) and c.co_name == code.co_name]
    # (no def of that name: the lines the code's first line number points at are another text now)
    return len(found) == 1 and _same(found[0], code, owner_class(fn))


def owner_class(fn: types.FunctionType) -> str:
    """The name, as Python mangles private names with it, of the class whose body defines
    ``fn`` (a method, or a function nested in one); "" if none."""
    parts = fn.__qualname__.split(".")[:-1]
    classes = [p for i, p in enumerate(parts) if p != "<locals>" and parts[i + 1:i + 2] != ["<locals>"]]
    return classes[-1].lstrip("_") if classes else ""


def mangle(text: str, owner: str) -> str:
    """``text`` with its private names (``self.__scale``, ``__tmp``) as Python compiles them in
    the class ``owner`` (``self._Model__scale``): generated code is compiled outside the class."""
    if not owner or "__" not in text:
        return text
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    lines = text.splitlines(True)
    for tok in reversed(tokens):  # (from the end: the columns before each token stay valid)
        name = tok.string
        if tok.type == tokenize.NAME and name.startswith("__") and not name.endswith("__"):
            row, col = tok.start
            line = lines[row - 1]
            lines[row - 1] = f"{line[:col]}_{owner}{line[col:]}"
    return "".join(lines)


def _imports(body: list[ast.stmt]) -> list[ast.stmt]:
    """The import statements of a module's own scope (in its ``if`` and ``try`` blocks too)."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                found += _imports([n for n in getattr(node, field, []) if isinstance(n, ast.AST)])
    return found


def _same(a: types.CodeType, b: types.CodeType, owner: str) -> bool:
    """The same bytecode, names, parameters and constants (nested code alike), whatever the
    line numbers; ``a``'s private names as the class ``owner`` mangles them in ``b``."""
    names = [_mangled(n, owner) for n in (*a.co_names, *a.co_varnames)]
    flags = a.co_flags | b.co_flags & inspect.CO_NESTED  # (a function defined in a function's body)
    if (a.co_code, a.co_argcount, a.co_kwonlyargcount, flags, names) != \
            (b.co_code, b.co_argcount, b.co_kwonlyargcount, b.co_flags, [*b.co_names, *b.co_varnames]):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    return all(_same(x, y, owner) if isinstance(x, types.CodeType) and isinstance(y, types.CodeType)
               else _constant(x) == _constant(y) for x, y in zip(a.co_consts, b.co_consts))


def _mangled(name: str, owner: str) -> str:
    """``name`` as written in the class ``owner`` (``__x`` is ``_Owner__x`` there)."""
    private = name.startswith("__") and not name.endswith("__") and "." not in name
    return f"_{owner}{name}" if owner and private else name


def _constant(value: Any) -> Any:
    """A constant as compared: by type and repr (0.0 is not -0.0, nan is nan)."""
    if isinstance(value, tuple):
        return tuple(_constant(v) for v in value)
    return type(value), repr(value)
