"""What a block of statements does, as far as its syntax tells: whether it returns,
breaks or continues, which names it assigns or changes."""
from __future__ import annotations

import libcst as cst

from .aliasing import VIEW_ATTRIBUTES, VIEW_METHODS
from .syntax import (
    LIST_METHODS, LOOP_NODES, attribute_path, flat_targets, is_pop, nodes_under, statements_of,
    strip_parens, walk)


def jumps(body: list[cst.BaseStatement]) -> tuple[bool, bool]:
    """Whether a loop body breaks (or returns, at any depth) and whether it continues."""
    nodes = [n for n in nodes_under(body) if not isinstance(n, LOOP_NODES)]
    inner = [n for n in nodes_under(body) if isinstance(n, LOOP_NODES)]
    inner_nodes = {id(x) for loop in inner for x in walk(loop.body)}
    nodes = [n for n in nodes if id(n) not in inner_nodes]
    breaks = may_return(body) or any(isinstance(n, cst.Break) for n in nodes)
    return breaks, any(isinstance(n, cst.Continue) for n in nodes)


def may_jump(stmt: cst.BaseStatement) -> bool:
    if isinstance(stmt, LOOP_NODES):
        return may_return([stmt])
    return any(jumps([stmt]))


def always_returns(stmts: list[cst.BaseStatement]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, cst.Return) for s in last.body)
    if isinstance(last, cst.If):
        orelse = [last.orelse] if isinstance(last.orelse, cst.If) else (
            statements_of(last.orelse.body) if last.orelse else [])
        return always_returns(statements_of(last.body)) and always_returns(orelse)
    if isinstance(last, cst.With):  # (np.errstate: its body runs as written)
        return always_returns(statements_of(last.body))
    return False


def may_return(stmts: list[cst.BaseStatement]) -> bool:
    return any(isinstance(n, cst.Return) for st in stmts for n in walk(st))


def assigned_in(body: list[cst.BaseStatement]) -> set[str]:
    """User names assigned anywhere in a loop body (targets of =, +=, for)."""
    names: set[str] = set()
    for n in nodes_under(body, into_loops=True):
        targets: list[cst.CSTNode] = []
        if isinstance(n, cst.Assign):
            targets = [t.target for t in n.targets]
            if is_pop(n.value, {n.value.func.value.value} if isinstance(n.value, cst.Call) and isinstance(
                    n.value.func, cst.Attribute) and isinstance(n.value.func.value, cst.Name) else set()):
                targets.append(n.value.func.value)
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            targets = [n.target]
        elif isinstance(n, cst.For):
            targets = [n.target]
        elif isinstance(n, cst.Del):  # (del ys[i]: a new version of ys)
            targets = [t.value for t in walk(n.target) if isinstance(t, cst.Subscript)]
        if isinstance(n, cst.Expr) and isinstance(n.value, cst.Call):
            func = n.value.func
            if isinstance(func, cst.Attribute) and func.attr.value in LIST_METHODS:
                targets = [func.value]
        for t in targets:
            names.update(flat_targets(t))
    return names


def loop_item_names(body: list[cst.BaseStatement]) -> set[str]:
    """Names the function binds only as the items of its ``for`` statements and clauses
    (``for layer in self.layers``, ``for i, f in enumerate(fs)``, ``sum(f(x) for f in fs)``),
    never otherwise (=, +=, :=, a def, an import, a with)."""
    loops: set[str] = set()
    other: set[str] = set()
    for n in nodes_under(body, into_loops=True):
        if isinstance(n, (cst.For, cst.CompFor)):
            loops.update(flat_targets(n.target, bases=False))
        elif isinstance(n, cst.Assign):
            other.update(name for t in n.targets for name in flat_targets(t.target, bases=False))
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            other.update(flat_targets(n.target, bases=False))
        elif isinstance(n, cst.AsName):
            other.update(flat_targets(n.name, bases=False))
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)):
            other.add(n.name.value)
    return loops - other


def view_bases(body: list[cst.BaseStatement]) -> dict[str, set[str]]:
    """Names a loop body assigns a view to (``r = A[i]``, ``t = x.T``, ``r = np.reshape(x, s)``,
    ``r, s = A[i], B.T``), with the names each may be a view of, as far as the syntax tells."""
    bases: dict[str, set[str]] = {}
    for n in nodes_under(body, into_loops=True):
        for name, value in bound_values(n) if isinstance(n, cst.Assign) else ():
            taken = [value.value] if isinstance(value, cst.Subscript) or isinstance(value, cst.Attribute) and (
                value.attr.value in VIEW_ATTRIBUTES) else []
            if isinstance(value, cst.Call) and isinstance(value.func, (cst.Attribute, cst.Name)) and (
                    (attribute_path(value.func) or [""])[-1] in VIEW_METHODS):
                # x.reshape(...) or np.reshape(x, ...): (the module is no local, so never counted)
                taken = [value.func.value] if isinstance(value.func, cst.Attribute) else []
                taken += [value.args[0].value] if value.args else []
            if taken:
                bases.setdefault(name, set()).update(t.value for t in taken if isinstance(t, cst.Name))
    return bases


def bound_values(node: cst.Assign) -> list[tuple[str, cst.BaseExpression]]:
    """Each name an assignment binds, with the expression it gets where the syntax shows it:
    ``a = b = v`` and ``a, (b, c) = u, (v, w)`` pair up; ``a, b = pair`` binds no shown value."""
    pairs: list[tuple[str, cst.BaseExpression]] = []

    def pair(target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        target, value = strip_parens(target), strip_parens(value)
        if isinstance(target, cst.Name):
            pairs.append((target.value, value))
        elif (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))
              and len(target.elements) == len(value.elements)
              and not any(isinstance(e, cst.StarredElement) for e in [*target.elements, *value.elements])):
            for t, v in zip(target.elements, value.elements):
                pair(t.value, v.value)

    for t in node.targets:
        pair(t.target, node.value)
    return pairs


def stored_in(body: list[cst.BaseStatement]) -> set[str]:
    """Names a loop body puts into a list or dict as they are (``xs.append(x)``, ``[x, y]``):
    an in-place write in a later iteration changes what the container holds."""
    held: list[cst.BaseExpression] = []
    for n in nodes_under(body, into_loops=True):
        if isinstance(n, (cst.List, cst.Set)):
            held += [e.value for e in n.elements]
        elif isinstance(n, cst.Dict):
            held += [e.value for e in n.elements if isinstance(e, cst.DictElement)]
        elif isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in (
                "append", "insert") and n.args:
            held.append(n.args[-1].value)
    for value in list(held):
        if isinstance(strip_parens(value), cst.Tuple):
            held += [e.value for e in strip_parens(value).elements]
    return {strip_parens(v).value for v in held if isinstance(strip_parens(v), cst.Name)}


def changed_in(body: list[cst.BaseStatement]) -> set[str]:
    """User names a loop body may change in place without assigning them: the array of
    ``np.add.at(z, ...)`` or ``f(..., out=z)``, and the base of a view written there
    (``r = A[i]; r *= 2.0`` changes A), as far as the syntax tells."""
    written: set[str] = set()
    bases = view_bases(body)
    for n in nodes_under(body, into_loops=True):
        written.update(in_place_targets(n))
        if isinstance(n, cst.Assign):
            written.update(name for name, _ in bound_values(n))
    changed, todo = set(written), list(written)
    while todo:
        for base in bases.get(todo.pop(), ()):
            if base not in changed:
                changed.add(base)
                todo.append(base)
    return changed


def written_in_place(body: list[cst.BaseStatement]) -> set[str]:
    """User names a loop body changes in place (``x[i] = v``, ``x op= v``...), nested loops too."""
    return {name for n in nodes_under(body, into_loops=True) for name in in_place_targets(n)}


def in_place_targets(node: cst.CSTNode) -> list[str]:
    """The names ``node`` changes in place: ``x op= v`` (in place for an array), ``x[i] = v``,
    ``f(..., out=x)``, ``np.add.at(x, ...)`` and ``np.fill_diagonal(x, ...)``."""
    targets: list[cst.CSTNode] = []
    if isinstance(node, cst.AugAssign):
        targets = [node.target]
    elif isinstance(node, cst.Assign):
        targets = [t.target.value for t in node.targets if isinstance(t.target, cst.Subscript)]
    elif isinstance(node, cst.Call):
        targets = [a.value for a in node.args if a.keyword is not None and a.keyword.value == "out"]
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "at" and node.args:
            targets.append(node.args[0].value)
        if attribute_path(node.func)[-1:] == ["fill_diagonal"] and node.args:
            targets.append(node.args[0].value)
    targets = [t.value if isinstance(t, cst.Subscript) else t for t in targets]
    return [t.value for t in targets if isinstance(t, cst.Name)]
