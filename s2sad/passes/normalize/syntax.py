"""Reading libcst trees: walking them, the statements of a block, variable names,
assignment targets, the walrus operator, and which names a block reads before assigning."""
from __future__ import annotations

import functools

import libcst as cst

from ..parse import children


#: An empty module: its ``code_for_node`` prints a node as code.
EMPTY_MODULE = cst.Module(body=[])
LOOP_NODES = (cst.For, cst.While)
#: The methods of a local list lowered as new versions of the list.
LIST_METHODS = ("append", "insert", "extend", "pop", "sort", "reverse", "remove")


def walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node`` and everything under it, in source order."""
    nodes: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        n = stack.pop()
        nodes.append(n)
        stack.extend(reversed(children(n)))
    return nodes


def statements_of(suite: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block; ``if c: a = 1; b = 2`` on one line counts as one."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    return list(suite.body)


def nodes_under(stmts: list[cst.CSTNode], into_loops: bool = False) -> list[cst.CSTNode]:
    """All nodes under ``stmts``, in order, not descending into nested loops unless asked."""
    nodes: list[cst.CSTNode] = []
    stack = list(reversed(stmts))
    while stack:
        n = stack.pop()
        nodes.append(n)
        if into_loops or not isinstance(n, LOOP_NODES) or any(n is st for st in stmts):
            stack.extend(reversed(children(n)))
    return nodes


# (nodes are immutable, and equal only to themselves: lowering an expression reads the names
# under each of its parts several times)
@functools.lru_cache(maxsize=1 << 14)
def variable_names(node: cst.CSTNode) -> tuple[str, ...]:
    """Names used as variables under ``node``, in order (not attribute or keyword names)."""
    names: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        kind = type(n)  # (libcst's classes are ABCs: isinstance is slow here)
        if kind is cst.Name:
            names.append(n.value)
        elif kind is cst.Attribute or kind is cst.Arg:
            stack.append(n.value)
        else:
            stack.extend(reversed(children(n)))
    return tuple(names)


def variable_name_nodes(node: cst.CSTNode) -> list[cst.Name]:
    """The Name nodes used as variables under ``node`` (not attribute or keyword names)."""
    found: list[cst.Name] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            found.append(n)
        elif isinstance(n, (cst.Attribute, cst.Arg)):
            stack.append(n.value)
        else:
            stack.extend(reversed(children(n)))
    return found


def store_names(body: cst.CSTNode) -> set[int]:
    """ids of the names that ``=`` and ``for`` only write to (not ``+=``, which also reads)."""
    targets: list[cst.CSTNode] = []
    for n in walk(body):
        if isinstance(n, cst.Assign):
            targets += [t.target for t in n.targets]
        elif isinstance(n, cst.For):
            targets.append(n.target)
    found: set[int] = set()
    while targets:
        t = targets.pop()
        if isinstance(t, cst.Name):
            found.add(id(t))
        elif isinstance(t, (cst.Tuple, cst.List)):
            targets += [e.value for e in t.elements]
    return found


def flat_targets(target: cst.BaseExpression, bases: bool = True) -> list[str]:
    """The names an assignment target writes, through nested tuples (and with ``bases``,
    the array that an element target ``x[i]`` changes)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Subscript):
        return flat_targets(target.value, bases) if bases else []
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in flat_targets(e.value, bases)]
    return []


def attribute_path(node: cst.BaseExpression) -> list[str]:
    """``a.b.c`` as ``["a", "b", "c"]`` (empty when the chain does not start with a name)."""
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, cst.Attribute):
        base = attribute_path(node.value)
        return base + [node.attr.value] if base else []
    return []


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` without redundant outer parentheses (a tuple keeps, or gets, its own; an
    expression that spans lines keeps them, since they are what lets it span lines)."""
    if isinstance(node, cst.Tuple):
        return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    if getattr(node, "lpar", None) and "\n" not in EMPTY_MODULE.code_for_node(node):
        return node.with_changes(lpar=[], rpar=[])
    return node


def describe(node: cst.CSTNode) -> str:
    return type(node).__name__


def literal_key(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


def item_of(value: cst.Name, index: cst.BaseExpression) -> cst.Subscript:
    return cst.Subscript(value, [cst.SubscriptElement(cst.Index(index))])


def is_pop(node: cst.BaseExpression, local_names: frozenset[str] | set[str]) -> bool:
    """``xs.pop()`` or ``xs.pop(i)`` on a local list."""
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "pop" and isinstance(node.func.value, cst.Name)
            and node.func.value.value in local_names and len(node.args) <= 1)


def walrus_places(node: cst.CSTNode, where: str) -> list[tuple[cst.NamedExpr, str]]:
    """Each ':=' under ``node`` with where it stands: "" when it always runs, in order."""
    if isinstance(node, cst.NamedExpr):
        return [*walrus_places(node.value, where), (node, where)]
    if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
        where = where or "inside a comprehension or lambda"
    short = where or "where it may not run (right of 'and'/'or', a branch of '... if ... else ...')"
    if isinstance(node, cst.BooleanOperation):
        return [*walrus_places(node.left, where), *walrus_places(node.right, short)]
    if isinstance(node, cst.IfExp):
        return [*walrus_places(node.test, where), *walrus_places(node.body, short),
                *walrus_places(node.orelse, short)]
    return [w for child in children(node) for w in walrus_places(child, where)]


def has_walrus(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.NamedExpr) for n in walk(node))


def read_before_assigned(stmts: list[cst.CSTNode], name: str) -> bool:
    """Whether some path through ``stmts`` reads ``name`` before assigning it."""
    for st in stmts:
        first = _first_use(st, name)
        if first is not None:
            return first
    return False


def _first_use(node: cst.CSTNode, name: str) -> bool | None:
    """True if ``node`` may read ``name`` first, False if it surely assigns it first."""
    if isinstance(node, cst.SimpleStatementLine):
        for small in node.body:
            first = _first_use(small, name)
            if first is not None:
                return first
        return None
    if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        assigned = any(name in flat_targets(t, False) for t in targets)
        if isinstance(node, cst.AugAssign) and assigned:
            return True
        if node.value is not None and _mentions(node.value, name):
            return True
        return False if assigned else None
    if isinstance(node, cst.If):
        if _mentions(node.test, name):
            return True
        orelse = [node.orelse] if isinstance(node.orelse, cst.If) else (
            statements_of(node.orelse.body) if node.orelse else [])
        branches = [_read_first(statements_of(node.body), name), _read_first(orelse, name)]
        if True in branches:
            return True
        return False if branches == [False, False] else None
    if isinstance(node, (cst.For, cst.While)):
        head = node.iter if isinstance(node, cst.For) else node.test
        if _mentions(head, name):
            return True
        if isinstance(node, cst.For) and name in flat_targets(node.target, False):
            return False
        return True if _read_first(statements_of(node.body), name) else None
    return True if _mentions(node, name) else None


def _read_first(stmts: list[cst.CSTNode], name: str) -> bool | None:
    for st in stmts:
        first = _first_use(st, name)
        if first is not None:
            return first
    return None


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in walk(node))
