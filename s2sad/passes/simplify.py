"""Algebraic clean-up of one generated expression: ``x ** (2 - 1)`` becomes ``x``,
``g * pow_slope(x, 3)`` becomes ``g * 3 * x ** 2``, and ``a if None is None else b`` (or
``a if isinstance(None, type(None)) else b``, or ``b if None in (2, 'nuc') and ... else a``)
becomes ``a``.

Used on the code a rule template renders to, so that declaring a rule once
in general form does not leave arithmetic on literals in the output, nor the
branches of an optional argument (``where=``, ``initial=``) that was not passed.
"""
from __future__ import annotations

import ast
import numbers
import re

_FOLD = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}
#: Comparisons of two literals folded (``ord in (2, -2, 'nuc')`` of a literal ord).
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
#: What every simplification needs in the code: a number (a digit not inside a name, or
#: the ``.5`` of ``else.5``), None, True, False, pow_slope or isinstance.
_FOLDABLE = re.compile(r"(?<![\w.])\d|(?<!\d)\.\d|None|True|False|pow_slope|isinstance")


def _number(node: ast.AST) -> numbers.Number | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _number(node.operand)
        return None if value is None else -value
    return None


class _Simplifier(ast.NodeTransformer):
    changed = False

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return node  # (ast's own looks up the visitors of the old node types, by exception)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Mult) and _literal_slope(node.right):
            exponent = node.right.args[1]  # g * y * x ** (y - 1), as written by hand
            power = ast.BinOp(node.right.args[0], ast.Pow(), ast.BinOp(exponent, ast.Sub(), ast.Constant(1)))
            self.changed = True
            return self.visit_BinOp(ast.BinOp(ast.BinOp(node.left, ast.Mult(), exponent), ast.Mult(), power))
        left, right = _number(node.left), _number(node.right)
        fold = _FOLD.get(type(node.op))
        if fold and left is not None and right is not None:
            value = fold(left, right)
            if type(value) is int or len(repr(value)) < 8:
                self.changed = True
                return ast.copy_location(ast.Constant(value), node)
        if isinstance(node.op, ast.Pow) and right == 1 or isinstance(node.op, ast.Mult) and right == 1:
            self.changed = True
            return node.left
        if isinstance(node.op, ast.Mult) and left == 1:
            self.changed = True
            return node.right
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:  # None is None, 0.5 is not None
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            left, right = node.left, node.comparators[0]
            if _singleton(left) and _literal(right) or _singleton(right) and _literal(left):
                same = _singleton(left) and _singleton(right) and left.value is right.value
                self.changed = True
                return ast.copy_location(ast.Constant(same == isinstance(node.ops[0], ast.Is)), node)
        if len(node.ops) == 1 and type(node.ops[0]) in _COMPARE and _literal(node.left) and _literal(node.comparators[0]):
            left, right = ast.literal_eval(node.left), ast.literal_eval(node.comparators[0])  # ord in (2, 'nuc')
            try:
                value = bool(_COMPARE[type(node.ops[0])](left, right))
            except TypeError:  # (1 in 'ab': Python's error, where the code runs)
                return node
            self.changed = True
            return ast.copy_location(ast.Constant(value), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:  # isinstance(None, type(None)), of a literal
        self.generic_visit(node)
        if (isinstance(node.func, ast.Name) and node.func.id == "isinstance" and len(node.args) == 2
                and not node.keywords and _literal(node.args[0]) and ast.unparse(node.args[1]) == "type(None)"):
            self.changed = True
            return ast.copy_location(ast.Constant(ast.literal_eval(node.args[0]) is None), node)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        if all(_singleton(v) for v in node.values):
            values = [v.value for v in node.values]
            self.changed = True
            return ast.copy_location(ast.Constant(all(values) if isinstance(node.op, ast.And)
                                                  else any(values)), node)
        neutral = isinstance(node.op, ast.And)  # True and x is x; False or x is x
        leading = next(i for i, v in enumerate(node.values) if not (_singleton(v) and v.value is neutral))
        if leading:
            self.changed = True
            rest = node.values[leading:]
            return rest[0] if len(rest) == 1 else ast.copy_location(ast.BoolOp(node.op, rest), node)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        truth = _truth(node.test)
        if truth is not None:
            self.changed = True
            return node.body if truth else node.orelse
        return node


def _literal_slope(node: ast.AST) -> bool:
    """Whether ``node`` is ``pow_slope(x, c)`` for a number c that is 1 or more, or an
    integer: there ``c * x ** (c - 1)`` raises nothing that ``x ** c`` did not."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "pow_slope" and len(node.args) == 2 and not node.keywords):
        return False
    c = _number(node.args[1])
    return c is not None and (c >= 1 or type(c) is int and c != 0)


def _literal(node: ast.AST) -> bool:
    """Whether ``node`` is a literal (a number, a string, a tuple of them, ``-0.5``)."""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _truth(test: ast.AST) -> bool | None:
    """Whether the test of a conditional holds, where its literals tell: ``True``, or an ``and``
    with a literal False among its operands (a rule's tests read no state), or an ``or`` with
    a literal True; None if not known."""
    if _singleton(test):
        return bool(test.value)  # type: ignore[attr-defined]
    if isinstance(test, ast.BoolOp):
        decisive = isinstance(test.op, ast.Or)
        if any(_singleton(v) and bool(v.value) is decisive for v in test.values):  # type: ignore[attr-defined]
            return decisive
    return None


def _singleton(node: ast.AST) -> bool:
    """Whether ``node`` is the literal None, True or False."""
    return isinstance(node, ast.Constant) and type(node.value) in (bool, type(None))


def simplify(code: str) -> str:
    """``code`` with literal arithmetic folded, or unchanged if nothing folds."""
    if not _FOLDABLE.search(code):  # most gradient terms: parsing them was most of the time
        return code
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return code
    s = _Simplifier()
    tree = s.visit(tree)
    return ast.unparse(tree) if s.changed else code


def plus(acc: str, term: str) -> str:
    """``acc + term`` with parentheses only where the sum would regroup."""
    try:
        node = ast.parse(term, mode="eval").body
    except SyntaxError:
        return f"{acc} + ({term})"
    loose = isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) or isinstance(
        node, (ast.IfExp, ast.Lambda, ast.BoolOp, ast.Compare, ast.NamedExpr))
    return f"{acc} + ({term})" if loose else f"{acc} + {term}"
