"""Standalone output: a generated module that runs without s2sad installed.

:func:`make_standalone` takes the text s2sad prints for a function and replaces every import
from s2sad by a copy of what is used: the runtime helpers (and what they use, transitively),
the user's functions the code calls (copied from the user's module, so the module need not be
importable without s2sad), and the user's module-level constants (as literals).  A gradient
that the user's code itself asks s2sad for (``grad(cross_entropy, wrt="X")`` inside a function
the gradient calls) is generated and copied too.  Helpers are copied as ``ast.unparse`` prints
them, without type annotations, each once and only if used.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import inspect
import math
import pathlib
import re
import sys
import textwrap
import types
from typing import Any, Callable

import numpy as np

from .errors import S2SADError

_CONSTANT_TYPES = (bool, int, float, complex, str, bytes, type(None))


class StandaloneError(S2SADError):
    """The generated code needs something that cannot be copied into a standalone module."""


def make_standalone(text: str, fn: Callable[..., Any]) -> str:
    """``text`` (a module s2sad generated for ``fn``) with every s2sad import replaced by copies."""
    module = _Module()
    body = module.absorb(text, getattr(fn, "__globals__", {}))
    return module.render(body)


def _constant(value: Any) -> bool:
    """A value a literal spells: numbers, strings, and tuples, lists and dicts of them (a list
    or dict as the generated code reads it when the module is written, as a number is)."""
    if isinstance(value, _CONSTANT_TYPES):
        return True
    if type(value) in (tuple, frozenset, list):
        return all(_constant(v) for v in value)
    if type(value) is dict:
        return all(_constant(k) and _constant(v) for k, v in value.items())
    return isinstance(value, np.generic) and value.dtype.kind in "biufc"


def _literal(value: Any) -> str:
    """Source that evaluates to the constant ``value``: ``float('inf')`` where ``repr`` is a
    name (inf, nan), the plain number or string of a subclass's (an ``IntEnum``'s member)."""
    if isinstance(value, np.generic):
        return f"np.{value.dtype.name}({_literal(value.item())})"
    if type(value) in (tuple, list, frozenset):
        items = [_literal(v) for v in value]
        if type(value) is frozenset:
            return f"frozenset([{', '.join(items)}])"
        text = ", ".join(items) + ("," if len(items) == 1 and type(value) is tuple else "")
        return f"({text})" if type(value) is tuple else f"[{text}]"
    if type(value) is dict:
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, complex):
        finite = math.isfinite(value.real) and math.isfinite(value.imag)
        return repr(value) if finite and type(value) is complex else \
            f"complex({_literal(value.real)}, {_literal(value.imag)})"
    if isinstance(value, float):
        return repr(float(value)) if math.isfinite(value) else f"float('{value!r}')"
    if isinstance(value, (str, bytes)):
        return repr(value[:])  # (a str subclass's slice is a str)
    return repr(int(value)) if isinstance(value, int) and not isinstance(value, bool) else repr(value)


def _is_s2sad(module: str | None) -> bool:
    return bool(module) and (module == "s2sad" or module.startswith("s2sad."))


class _Unannotate(ast.NodeTransformer):
    """Drops type annotations (so that ``typing`` need not be imported) and s2sad's own
    relative imports inside function bodies (their names are copied as definitions)."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.imported: list[tuple[str, str]] = []  # (module, name) a body imported relatively

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                    node.args.vararg, node.args.kwarg]:
            if arg is not None:
                arg.annotation = None
        self.generic_visit(node)
        if not node.body:
            node.body = [ast.Pass()]
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt | None:
        if node.value is None:
            return None
        return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.stmt | None:
        source = _absolute(node, self.module)
        if not _is_s2sad(source):
            return node
        self.imported += [(source, alias.name) for alias in node.names]
        return None


def _absolute(node: ast.ImportFrom, package_of: str) -> str:
    if not node.level:
        return node.module or ""
    is_package = hasattr(importlib.import_module(package_of), "__path__")
    package = package_of if is_package else package_of.rpartition(".")[0]
    return importlib.util.resolve_name("." * node.level + (node.module or ""), package)


class _Library:
    """The top-level definitions of one s2sad module, by name."""

    def __init__(self, name: str) -> None:
        self.name = name
        tree = ast.parse(inspect.getsource(importlib.import_module(name)))
        self.nodes: dict[str, ast.stmt] = {}
        self.order: dict[str, int] = {}
        for index, node in enumerate(tree.body):
            for bound in _bound_names(node):
                self.nodes.setdefault(bound, node)
                self.order.setdefault(bound, index)


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    return []


def _loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


class _Module:
    """What the standalone module is assembled from."""

    def __init__(self) -> None:
        self.imports: set[str] = {"import numpy as np"}
        self.libraries: dict[str, _Library] = {}
        self.copied: dict[tuple[str, str], str] = {}  # (module, name) -> its source, in order
        self.ranks: dict[tuple[str, str], tuple[int, int]] = {}
        self.user: dict[str, str] = {}  # name in the output -> copied source (user code)
        self.names: dict[str, Any] = {}  # name in the output -> the object it stands for
        self.generated: list[str] = []  # gradients the user's own code asks for
        self.depth = 0

    # -- generated text ---------------------------------------------------------------------

    def absorb(self, text: str, user_globals: dict[str, Any]) -> str:
        """``text`` without its s2sad imports; what they named is copied into the module."""
        tree = ast.parse(text)
        drop: set[int] = set()
        for node in tree.body:
            lines = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
            if isinstance(node, ast.ImportFrom):
                drop |= lines
                for alias in node.names:
                    name = alias.asname or alias.name
                    obj = _imported(node.module or "", alias.name, user_globals)
                    if _is_s2sad(node.module):
                        if obj is getattr(importlib.import_module("s2sad.custom"), "rule_function", None):
                            continue
                        self.library(obj, name)
                    else:
                        self.user_object(name, obj, node.module or "")
            elif isinstance(node, ast.Import):
                drop |= lines
                for alias in node.names:
                    if alias.name.split(".")[0] != "numpy" and _is_user_module(alias.name):
                        raise _user_module(alias.name)
                    self.imports.add(ast.unparse(ast.Import(names=[alias])))
            elif _rule_function_call(node):
                drop |= lines
                name = node.targets[0].id  # type: ignore[attr-defined]
                rule = importlib.import_module("s2sad.custom").rule_function(name)
                self.user_object(name, rule, getattr(rule, "__module__", "") or "")
        for line in text.splitlines():
            chosen = re.match(r"# (\w+): calls the code generated for (.*), chosen when it is called$", line)
            if chosen:
                raise StandaloneError(
                    f"the code calls {chosen.group(1)}, the code s2sad generates for "
                    f"{chosen.group(2)} of the object it is called on, chosen as it runs: a standalone "
                    f"module cannot copy it; call a module-level function instead (for a random "
                    f"generator's sampler, scale standard draws: mu + sigma * rng.standard_normal(n))")
            loose = re.match(r"# reads from \w+'s (globals|closure): (.*)$", line)
            if loose and loose.group(1) == "closure":
                raise StandaloneError(f"the code reads {loose.group(2)} from an enclosing function: a "
                                      f"standalone module can copy only module-level values")
            for name in loose.group(2).split(", ") if loose else ():
                if name not in user_globals:  # (a function s2sad made, passed on as a value)
                    raise StandaloneError(f"the code reads {name}, which is not a module-level value: a "
                                          f"standalone module can copy only module-level values")
                self.user_object(name, user_globals[name], user_globals.get("__name__", ""))
        kept = [line for number, line in enumerate(text.splitlines(), 1)
                if number not in drop and not line.startswith("# reads from ")]
        return "\n".join(kept).strip("\n")

    # -- s2sad's own helpers ----------------------------------------------------------------

    def library(self, obj: Any, alias: str) -> None:
        """Copy the s2sad helper ``obj`` (and what it uses), bound to ``alias``."""
        module = getattr(obj, "__module__", None)
        name = getattr(obj, "__name__", None)
        if not (_is_s2sad(module) and name):
            raise StandaloneError(f"cannot copy {obj!r} into a standalone module")
        self.copy_definition(module, name)
        if alias != name:
            self.user[alias] = f"{alias} = {name}"

    def copy_definition(self, module: str, name: str) -> None:
        key = (module, name)
        if key in self.copied:
            return
        library = self.libraries.get(module) or self.libraries.setdefault(module, _Library(module))
        node = library.nodes.get(name)
        if node is None:
            raise StandaloneError(f"s2sad.standalone cannot find {name} in {module}")
        self.copied[key] = ""  # (being copied: a recursive helper refers to itself)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.copy_import(node, name, module)
            del self.copied[key]
            return
        cleaner = _Unannotate(module)
        copy = cleaner.visit(ast.parse(ast.unparse(node)).body[0])
        for source, imported in cleaner.imported:
            self.copy_definition(source, imported)
        for used in sorted(_loaded(copy) - set(_bound_names(copy))):
            if used in library.nodes:
                self.copy_definition(module, used)
        self.copied[key] = ast.unparse(copy)
        self.ranks[key] = (len(self.ranks), library.order[name])

    def copy_import(self, node: ast.Import | ast.ImportFrom, name: str, module: str) -> None:
        alias = next(a for a in node.names if (a.asname or a.name).split(".")[0] == name)
        if isinstance(node, ast.Import):
            if alias.name != "typing":
                self.imports.add(ast.unparse(ast.Import(names=[alias])))
            return
        source = _absolute(node, module)
        if _is_s2sad(source):
            self.copy_definition(source, alias.name)
        elif source not in ("__future__", "typing"):
            self.imports.add(ast.unparse(ast.ImportFrom(module=source, names=[alias], level=0)))

    # -- the user's code --------------------------------------------------------------------

    def user_object(self, name: str, obj: Any, module: str) -> None:
        """A global of the user's code: a constant becomes a literal, a function of the
        user's module is copied, anything else (a library function) stays an import."""
        if name in self.names:
            if self.names[name] is not obj:
                raise StandaloneError(f"two different objects are both named {name!r}: a "
                                      f"standalone module cannot hold both; rename one")
            return
        self.names[name] = obj
        if _constant(obj):
            self.user[name] = f"{name} = {_literal(obj)}"
        elif isinstance(obj, types.ModuleType):
            if _is_user_module(obj.__name__):
                raise _user_module(obj.__name__)
            as_name = "" if obj.__name__ == name else f" as {name}"
            self.imports.add(f"import {obj.__name__}{as_name}")
        elif _is_s2sad(getattr(obj, "__module__", None)) and not _is_api(obj):
            self.library(obj, name)
        elif isinstance(obj, types.FunctionType) and _is_user_file(obj.__code__.co_filename):
            self.user[name] = self.copy_function(obj, name)
        elif isinstance(obj, np.ndarray):
            raise StandaloneError(
                f"the generated code reads the array {name!r} from {module}: a standalone module "
                f"copies only constants and functions; pass the array as an argument")
        else:
            where = getattr(obj, "__module__", None) or module
            attr = getattr(obj, "__name__", name)
            if not where or getattr(sys.modules.get(where), attr, None) is not obj:
                raise StandaloneError(f"cannot copy or import {name!r} ({obj!r}) in a standalone module")
            if _is_user_module(where):  # (importing it would need the user's module)
                raise StandaloneError(
                    f"the generated code reads {name!r} ({type(obj).__name__}) from {where}, your module: "
                    f"a standalone module copies only functions and constants (numbers, strings, and "
                    f"tuples, lists and dicts of them); pass it as an argument")
            self.imports.add(f"from {where} import {attr}" + ("" if attr == name else f" as {name}"))

    def copy_function(self, fn: types.FunctionType, name: str) -> str:
        """The source of the user's function ``fn`` as ``name``, with what it reads."""
        if fn.__closure__:
            raise StandaloneError(f"{fn.__qualname__} reads variables of an enclosing function: a "
                                  f"standalone module can copy only module-level functions")
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
        if not isinstance(tree, ast.FunctionDef):
            raise StandaloneError(f"cannot copy {fn.__qualname__}: it is not a def")
        tree.decorator_list = []
        tree.name = name
        tree = _GradientCalls(self, fn.__globals__).visit(tree)
        for used in sorted(_loaded(tree) - {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}):
            if used in fn.__globals__:
                self.user_object(used, fn.__globals__[used], fn.__module__)
            elif not hasattr(builtins, used):
                continue  # a local of the function
        return ast.unparse(_Unannotate(fn.__module__).visit(tree))

    def gradient_of(self, api: Callable[..., Any], target: Any, keywords: dict[str, Any]) -> str:
        """Generate ``api(target, **keywords)`` as standalone code in this module; its name."""
        if self.depth > 8:
            raise StandaloneError("gradients asked for inside gradients nest too deeply")
        made = api(target, **keywords)
        text = made.__s2sad_source__
        self.depth += 1
        try:
            body = self.absorb(text, target.__globals__)
        finally:
            self.depth -= 1
        name = made.__name__
        if body not in self.generated:
            self.generated.append(body)
        return name

    # -- output -----------------------------------------------------------------------------

    def render(self, body: str) -> str:
        header, _, rest = body.partition("\n")
        helpers = [self.copied[key] for key in sorted(self.copied, key=lambda k: self.ranks[k])]
        imports = sorted(self.imports, key=lambda s: (not s.startswith("import"), s))
        if _annotated(rest) or any(_annotated(g) for g in self.generated):
            # (the generated functions keep the user's annotations, which may name what only
            # the user's module imports, or only under TYPE_CHECKING: never evaluate them)
            imports.insert(0, "from __future__ import annotations")
        parts = [header, "\n".join(imports)]
        if helpers:
            parts.append("# ---- copied from s2sad's runtime, so that this module needs only NumPy ----")
            parts += helpers
        parts += list(self.user.values()) + self.generated
        parts.append(rest.strip("\n"))
        text = "\n\n\n".join(p for p in parts if p) + "\n"
        defined: dict[str, str] = {}
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef):
                code = ast.unparse(node)
                if defined.setdefault(node.name, code) != code:
                    raise StandaloneError(f"two different functions are both named {node.name} in the "
                                          f"standalone module; rename one of the user's functions")
        return text


def _annotated(text: str) -> bool:
    """Whether a function defined in ``text`` has an annotation."""
    return any(isinstance(node, ast.FunctionDef) and (node.returns is not None or any(
        a.annotation is not None for a in ast.walk(node.args) if isinstance(a, ast.arg)))
        for node in ast.walk(ast.parse(text)))


def _imported(module: str, name: str, user_globals: dict[str, Any]) -> Any:
    if module == user_globals.get("__name__") and name in user_globals:
        return user_globals[name]
    return getattr(importlib.import_module(module), name)


def _rule_function_call(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "rule_function")


def _user_module(name: str) -> StandaloneError:
    """The code reads an attribute of the user's module ``name`` (``m.LAM``), which a module
    that does not import it cannot."""
    return StandaloneError(f"the generated code reads the module {name!r}, yours: a standalone module "
                           f"copies your functions and constants by name, not modules; import what "
                           f"the function reads by name (from {name} import ...)")


def _is_user_module(name: str | None) -> bool:
    """A module the user wrote (not installed, not the standard library)."""
    if not name or _is_s2sad(name):
        return False
    return name == "__main__" or _is_user_file(getattr(sys.modules.get(name), "__file__", None))


def _is_user_file(path: str | None) -> bool:
    if not path or path.startswith("<"):
        return False
    parts = path.replace("\\", "/").split("/")
    installed = any(part in ("site-packages", "dist-packages") for part in parts)
    s2sad_dir = str(pathlib.Path(__file__).parent)
    return not installed and not path.startswith(s2sad_dir) and not path.startswith(sys.base_prefix + "/lib")


def _is_api(obj: Any) -> bool:
    import s2sad

    return any(obj is getattr(s2sad, n, None) for n in ("grad", "value_and_grad", "jvp", "vjp", "hvp",
                                                        "hessian", "jacobian", "differentiate"))


class _GradientCalls(ast.NodeTransformer):
    """``grad(fn, wrt="X")`` in a copied function becomes the generated gradient's name."""

    def __init__(self, module: _Module, user_globals: dict[str, Any]) -> None:
        self.module = module
        self.globals = user_globals

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        api = self._resolve(node.func)
        if api is None or not _is_api(api):
            return node
        import s2sad

        if api not in (s2sad.grad, s2sad.value_and_grad) or not node.args or len(node.args) > 2:
            raise StandaloneError(f"a copied function calls s2sad.{api.__name__}: a standalone "
                                  f"module copies only grad(f, wrt=...) and value_and_grad(f, wrt=...)")
        target = self._resolve(node.args[0])
        try:
            keywords = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
            if len(node.args) == 2:
                keywords["wrt"] = ast.literal_eval(node.args[1])
        except ValueError:
            raise StandaloneError("a copied function asks s2sad for a gradient with arguments that "
                                  "are not literals: write wrt as a literal") from None
        if not isinstance(target, types.FunctionType):
            raise StandaloneError(f"a copied function asks s2sad for the gradient of "
                                  f"{ast.unparse(node.args[0])}, which is not a module-level function")
        return ast.Name(id=self.module.gradient_of(api, target, keywords), ctx=ast.Load())

    def _resolve(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Name):
            return self.globals.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            return getattr(base, node.attr, None) if isinstance(base, types.ModuleType) else None
        return None
