"""``stop_gradient(x)`` written as ``x`` in code that is run, never differentiated: a
specialised gradient (a gradient of it differentiates the generic code)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import libcst as cst
import numpy as np

from ..ir import Assign, Function, Opaque, Stmt, statements
from ..runtime.seeds import stop_gradient


class _Unstopped(cst.CSTTransformer):
    """``stop_gradient(x)`` as ``x``: what it is when the code runs (specialised code is run,
    never differentiated: a gradient of it differentiates the generic code)."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if _resolved(self.fn, updated.func) is not stop_gradient or len(updated.args) != 1 \
                or updated.args[0].keyword is not None or updated.args[0].star:
            return updated
        value = updated.args[0].value
        if isinstance(value, (cst.Name, cst.Call, cst.Attribute, cst.Subscript)) or value.lpar:
            return value
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _resolved(fn: Function, node: cst.BaseExpression) -> Any:
    """The object a name or a module's attribute denotes (the function's globals)."""
    if isinstance(node, cst.Name):
        return fn.free.get(node.value) if node.value not in fn.names - set(fn.free) else None
    if isinstance(node, cst.Attribute):
        owner = _resolved(fn, node.value)
        return getattr(owner, node.attr.value, None) if isinstance(owner, type(np)) else None
    return None


def unstop(stmts: list[Stmt], fn: Function) -> None:
    for s in statements(stmts):
        if isinstance(s, Assign) and isinstance(s.value, Opaque) and isinstance(s.value.node, cst.BaseExpression):
            node = s.value.node.visit(_Unstopped(fn))
            if node is not s.value.node and isinstance(node, cst.BaseExpression):
                s.value = replace(s.value, node=node)
