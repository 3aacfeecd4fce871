"""Names: versions of the user's variables, the variables s2sad introduces, and
readable names (``exp_z``, ``sum_e``) for the values it computes."""
from __future__ import annotations

from typing import Any

import libcst as cst

from ... import runtime
from ...errors import Location
from ...ir import Assign, Opaque
from .constructs import BINARY_OPS, UNARY_OPS
from .syntax import flat_targets, variable_names, walk


class Naming:
    """Versions of the user's names, fresh temporaries, and readable names for values."""

    def temporary(self, hint: str) -> str:
        """A fresh local variable that s2sad introduces (it appears in no user code)."""
        name = self.fn.fresh(hint)
        self.res.locals = self.res.locals | {name}
        self.version[name] = name
        return name

    def helper(self, function: Any) -> str:
        """The name by which generated code calls the runtime ``function``."""
        if function not in self.helpers:
            name = function.__name__
            if name in self.fn.user_names or self.fn.free.get(name, function) is not function:
                name = self.fn.fresh(name)
            self.helpers[function] = name
            self.fn.free[name] = function
            self.fn.names.add(name)  # (a temporary named after the value it holds never takes it)
        return self.helpers[function]

    def helper_call(self, function: Any, args: list[cst.Arg]) -> cst.Call:
        """``function(args)``, called by its name in generated code and known as ``function``
        by identity (the passes after normalization look its rule up by the object)."""
        call = cst.Call(cst.Name(self.helper(function)), args)
        self.res.objects[call.func] = function
        return call

    def run_time_check(self, function: Any, args: list[cst.BaseExpression], reads: tuple[str, ...],
                       loc: Location) -> None:
        """The statement ``function(args)``: a check that refuses, as the code runs, what the
        syntax could not tell apart (it carries no gradient)."""
        call = self.helper_call(function, [cst.Arg(a) for a in args])
        self.out.append(Assign(None, Opaque(call, reads, "nondiff"), loc))

    def rename(self, node: cst.CSTNode) -> Any:
        """``node`` with local names replaced by their current versions (and the calls of a
        nested function kept whole, as in a condition, passed the variables it reads)."""
        if self.closure_args and any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name)
                                     and n.func.value in self.closure_args for n in walk(node)):
            node = node.visit(_ClosureCalls(self.closure_args))
        return renamed(node, {n: self.version[n] for n in variable_names(node)
                              if n in self.res.locals and self.version.get(n, n) != n})

    def new_version(self, name: str) -> str:
        """The name a new assignment to ``name`` writes (the caller then switches to it)."""
        if name not in self.version:
            return name
        return self.fn.fresh(name)

    def hint(self, node: cst.CSTNode) -> str:
        """A readable name for the value of ``node``."""
        if isinstance(node, cst.Name):
            return self.version.get(node.value, node.value)
        if isinstance(node, cst.Call):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else "call")
            if self.res.object(func) is runtime.stop_gradient:
                inner = self.hint(node.args[0].value) if node.args else "value"
                return join_words("sg", inner)
            subject = node.func.value if isinstance(func, cst.Attribute) and func not in self.res.objects else (
                node.args[0].value if node.args else None)
            return join_words(name, self.hint(subject) if isinstance(subject, cst.Name) else "")
        if isinstance(node, cst.BinaryOperation):
            word = BINARY_OPS.get(type(node.operator), (None, "op"))[1]
            left, right = node.left, node.right
            if isinstance(left, cst.Name) and isinstance(right, cst.Name):
                return join_words(self.hint(left), word, self.hint(right))
            return word
        if isinstance(node, cst.UnaryOperation):
            inner = self.hint(node.expression) if isinstance(node.expression, cst.Name) else ""
            return join_words(UNARY_OPS.get(type(node.operator), (None, "op"))[1], inner)
        if isinstance(node, cst.Subscript):
            return join_words(self.hint(node.value) if isinstance(node.value, cst.Name) else "", "item")
        if isinstance(node, cst.Attribute):
            return join_words(self.hint(node.value) if isinstance(node.value, cst.Name) else "", node.attr.value)
        if isinstance(node, cst.Comparison):
            return "mask"
        if isinstance(node, (cst.Tuple, cst.List)):
            return "items"
        return "t"


def user_name(version: str, user_names: frozenset[str] | set[str]) -> str:
    """The user's variable behind an SSA version (``h_2`` -> ``h``), as far as it can tell."""
    base = version
    while base not in user_names and "_" in base and base.rsplit("_", 1)[1].isdigit():
        base = base.rsplit("_", 1)[0]
    return base


def join_words(*parts: str) -> str:
    return "_".join(p for p in parts if p)


def target_hint(target: cst.BaseExpression) -> str:
    """A readable name for the temporary that holds what a nested target unpacks: ``a_b``."""
    if isinstance(target, cst.Subscript):
        return join_words(target.value.value if isinstance(target.value, cst.Name) else "", "value")
    names = flat_targets(target, False)
    return "_".join(names) if names and len(names) <= 3 else "items"


def all_names(node: cst.CSTNode) -> set[str]:
    """Every variable name the source mentions (not attribute or keyword names)."""
    return set(variable_names(node))


def renamed(node: cst.CSTNode, renames: dict[str, str],
            objects: dict[cst.CSTNode, Any] | None = None) -> Any:
    """``node`` with the variables named in ``renames`` renamed; ``objects`` (the resolve
    pass's, keyed by node) then also knows what each new node's original denotes."""
    return node.visit(_Renamer(renames, objects)) if renames else node


class _ClosureCalls(cst.CSTTransformer):
    """Calls of nested functions passed the variables they read as keywords (``g(v, k=k)``)."""

    def __init__(self, closure_args: dict[str, list[str]]) -> None:
        super().__init__()
        self.closure_args = closure_args

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        func = updated.func
        if not isinstance(func, cst.Name) or func.value not in self.closure_args:
            return updated
        given = {a.keyword.value for a in updated.args if a.keyword is not None}
        equal = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
        return updated.with_changes(args=[*updated.args, *(
            cst.Arg(cst.Name(n), keyword=cst.Name(n), equal=equal)
            for n in self.closure_args[func.value] if n not in given)])


class _Renamer(cst.CSTTransformer):
    """Rename variables (not attribute or keyword names)."""

    def __init__(self, renames: dict[str, str], objects: dict[cst.CSTNode, Any] | None) -> None:
        super().__init__()
        self.renames = renames
        self.objects = objects

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
        result = super().on_leave(original, updated)
        if self.objects is not None and original in self.objects:
            self.objects[result] = self.objects[original]
        return result

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.renames.get(original.value)
        return updated if new is None else updated.with_changes(value=new)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)
