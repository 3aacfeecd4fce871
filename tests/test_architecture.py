"""The compiler's structure, checked: dependencies point one way, what modules share has a
public name, and no module or function is too long to read whole.  (docs/ARCHITECTURE.md
describes the layers.)"""
from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "s2sad"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> list[tuple[str, list[str], int]]:
    """Each import of module ``name`` (also inside functions): (module, names taken, line)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [a.name for a in node.names]
            submodules = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES]
            if submodules:
                found += [(m, [], node.lineno) for m in submodules]
                names = [n for n in names if f"{module}.{n}" not in MODULES]
            if module in MODULES:
                found.append((module, names, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name in MODULES]
    return found


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """The nodes of ``tree`` outside ``if TYPE_CHECKING:`` blocks (imports for annotations
    only are not dependencies when the code runs)."""
    nodes: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            stack += node.orelse
            continue
        stack += ast.iter_child_nodes(node)
    return nodes


def _graph() -> dict[str, set[str]]:
    return {name: {m for m, _, _ in _imports(name) if m != name} for name in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, or None (a package's ``__init__`` importing its own
    modules is how a package is made, not a cycle)."""
    def edges(name: str) -> set[str]:
        return {m for m in graph[name] if not (MODULES[name].name == "__init__.py" and m.startswith(name + "."))
                and not (MODULES[m].name == "__init__.py" and name.startswith(m + "."))}

    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        stack.append(name)
        for m in sorted(edges(name)):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)) is not None:
                return found
        state[name] = 2
        stack.pop()
        return None

    for name in sorted(graph):
        if name not in state and (found := visit(name)) is not None:
            return found
    return None


def test_no_import_cycle_among_s2sad_modules():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()) or [])


def test_the_checker_finds_a_cycle():
    graph = {name: set() for name in MODULES}
    graph["s2sad.api"] = {"s2sad.compiler"}
    graph["s2sad.compiler"] = {"s2sad.pipeline"}
    graph["s2sad.pipeline"] = {"s2sad.api"}
    assert _cycle(graph) == ["s2sad.api", "s2sad.compiler", "s2sad.pipeline", "s2sad.api"]


def test_no_pass_imports_the_api_or_the_compiler():
    upward = [(name, m, line) for name in MODULES if name.startswith("s2sad.passes.")
              for m, _, line in _imports(name) if m in ("s2sad.api", "s2sad.compiler", "s2sad.pipeline")]
    assert upward == []


def test_no_module_imports_another_modules_underscore_names():
    private = [(name, m, n, line) for name in MODULES for m, names, line in _imports(name)
               for n in names if n.startswith("_") and not n.startswith("__")]
    assert private == []


def test_no_module_is_over_600_lines():
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text().splitlines())) > 600}
    assert long == {}


def _long_functions(limit: int = 60) -> list[str]:
    """Each function or method of the package over ``limit`` lines (its ``def`` to its last
    line, decorators excluded), as ``path:line name (N lines)``."""
    long = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    n := node.end_lineno - node.lineno + 1) > limit:
                long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({n} lines)")
    return long


def test_no_function_is_over_60_lines():
    long = _long_functions()
    assert long == [], "functions over 60 lines: " + ", ".join(long)


def test_the_checker_finds_a_long_function():
    assert any(re.fullmatch(r"s2sad/compiler\.py:\d+ build \(\d+ lines\)", f) for f in _long_functions(limit=5))
