"""State that a forward pass run again would read changed.

Code that is differentiated again (``hvp``, ``grad`` of a gradient) reads each callee in a
form whose backward pass runs the callee's forward pass again (its ``vjp_<name>``).  A
statement that changes an object's attribute (``self.n += 1``) then runs twice, which is
harmless for a count nobody reads; but a callee that reads an attribute it (or a method it
calls on the same object) changes (``if self.n == 2:`` after ``self.step(x)``) would read, the
second time, the value its first run left, and take another branch than Python did.  Such a
read is refused there."""
from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any

import libcst as cst

from ..resolve import MISSING
from .syntax import strip_parens

#: Why such a read is refused, and what to write instead.
REPLAYED_READ = ("'{0}' is read in a function that changes it (or calls a method that does), and s2sad "
                 "runs this function's forward pass again when it differentiates it again (hvp, grad "
                 "of a gradient): the second run would read the value the first left; read the state "
                 "in the function differentiated and pass it as an argument, or keep it out of the "
                 "object")


def first_changed_read(function: Any, nodes: list[cst.CSTNode], objects: dict[str, Any]) -> cst.Attribute | None:
    """The first read ``r.a`` among ``nodes`` (the function ``function``'s body, in order) of an
    attribute that the function changes, or that a method it calls on ``r`` changes (``self.step(x)`` storing
    ``self.n``, followed through the methods those call on their ``self``); or None.
    ``objects``: what the free names the function reads through are bound to."""
    stored = {(t.value.value, t.attr.value) for n in nodes for t in _targets(n)
              if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name)}
    for n in nodes:
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and isinstance(n.func.value, cst.Name):
            receiver = n.func.value.value
            cls = _class_of(function, receiver, objects)
            stored |= {(receiver, a) for a in _changed_by(cls, n.func.attr.value, set())}
    if not stored:
        return None
    written = {id(t) for n in nodes for t in _targets(n)}
    called = {id(n.func) for n in nodes if isinstance(n, cst.Call)}
    return next((n for n in nodes if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name)
                 and (n.value.value, n.attr.value) in stored and id(n) not in written | called), None)


def _targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The targets ``node`` assigns (=, op=, annotated)."""
    if isinstance(node, cst.Assign):
        return [strip_parens(t.target) for t in node.targets]
    if isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        return [strip_parens(node.target)]
    return []


def _class_of(function: Any, receiver: str, objects: dict[str, Any]) -> type | None:
    """The class whose methods a call on ``receiver`` finds: the method's own class for its
    first parameter (``self``), else the class of the object the free name is bound to."""
    code = getattr(function, "__code__", None)
    if code is not None and code.co_argcount and code.co_varnames[0] == receiver:
        owner: Any = getattr(function, "__globals__", {})
        for part in function.__qualname__.split(".")[:-1]:
            owner = owner.get(part) if isinstance(owner, dict) else getattr(owner, part, None)
        return owner if isinstance(owner, type) else None
    held = objects.get(receiver, MISSING)
    return None if held is MISSING or isinstance(held, types.ModuleType) else type(held)


def _changed_by(cls: type | None, method: str, seen: set[str]) -> set[str]:
    """The attributes of its ``self`` that ``cls.method`` assigns, or the methods it calls on
    ``self`` assign, as far as their source tells."""
    fn = inspect.getattr_static(cls, method, None) if cls is not None else None
    if not isinstance(fn, types.FunctionType) or method in seen:
        return set()
    seen.add(method)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return set()
    args = fn.__code__.co_varnames[:1]
    changed: set[str] = set()
    for n in ast.walk(tree):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
            n, (ast.AugAssign, ast.AnnAssign)) else []
        changed |= {_mangled(cls, t.attr) for t in targets if isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name) and t.value.id in args}
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(
                n.func.value, ast.Name) and n.func.value.id in args:
            changed |= _changed_by(cls, n.func.attr, seen)
    return changed


def _mangled(cls: type, attr: str) -> str:
    """``attr`` as Python compiles it in ``cls``'s body (``__n`` is ``_Counter__n``)."""
    if attr.startswith("__") and not attr.endswith("__") and cls.__name__.strip("_"):
        return f"_{cls.__name__.lstrip('_')}{attr}"
    return attr
