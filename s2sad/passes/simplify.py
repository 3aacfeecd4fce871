"""Algebraic clean-up of one generated expression: ``x ** (2 - 1)`` becomes ``x``.

Used on the code a rule template renders to, so that declaring a rule once
in general form does not leave arithmetic on literals in the output.
"""
from __future__ import annotations

import ast
import numbers

_FOLD = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}


def _number(node: ast.AST) -> numbers.Number | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


class _Simplifier(ast.NodeTransformer):
    changed = False

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        left, right = _number(node.left), _number(node.right)
        fold = _FOLD.get(type(node.op))
        if fold and left is not None and right is not None:
            value = fold(left, right)
            if type(value) is int or float(value).is_integer() is False and len(repr(value)) < 8:
                self.changed = True
                return ast.copy_location(ast.Constant(value), node)
        if isinstance(node.op, ast.Pow) and right == 1 or isinstance(node.op, ast.Mult) and right == 1:
            self.changed = True
            return node.left
        if isinstance(node.op, ast.Mult) and left == 1:
            self.changed = True
            return node.right
        return node


def simplify(code: str) -> str:
    """``code`` with literal arithmetic folded, or unchanged if nothing folds."""
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return code
    s = _Simplifier()
    tree = s.visit(tree)
    return ast.unparse(tree) if s.changed else code
