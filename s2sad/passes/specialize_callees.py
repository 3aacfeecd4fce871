"""Callees of specialised code, specialised in turn.

A user function that the differentiated code calls mid-expression runs as its own generated
``forward_f`` (kind "split": the forward pass, returning its value and a closure that runs its
backward pass).  When the caller is specialised, what is known of a call's arguments, and of
the cotangent the caller passes to the closure, specialises the callee the same way: the
forward call then names the specialised code, whose value is known to the caller (so the
caller's own helpers go), and whose gradients are of their arguments' shapes and types.
"""
from __future__ import annotations

import ast
import inspect
import types
from dataclasses import dataclass
from typing import Any, Hashable

import libcst as cst
from ..errors import S2SADError
from ..ir import Assign, Call
from ..rules.shapes import Known, KnownTree, signature_item
from .adjoint import Adjoint, Line, lines
from .parsed_lines import parsed_line
from .shapes import Evaluator, Helper, Shapes, TupleHelper
from .specialize_containers import checked


@dataclass(frozen=True)
class Specialised:
    """A callee's code specialised to one call's signature, and what it returns."""

    code: Any  # the generated forward_f (None: the same text as the generic code's, which serves)
    value: Known | None  # what is known of the callee's value
    fresh: bool  # its backward pass returns arrays it made (the caller may own them)


#: the modules whose functions are not read for the shapes of what they return (library code)
LIBRARIES = frozenset({"s2sad", "numpy", "scipy"})


class CalleeSpecializer:
    """The split calls of ``adj``: what the shape analysis learns of their results, and the
    specialised callees the calls are then rewritten to."""

    def __init__(self, adj: Adjoint) -> None:
        self.adj = adj
        self.made: dict[tuple[str, tuple[Hashable, ...]], Specialised | None] = {}
        self.calls: list[tuple[Assign, str, str, ast.Call]] = []  # (statement, callee, closure, call)
        self.tuples: dict[str, TupleHelper] = {}
        self.helpers: dict[str, Helper] = {}
        self.fresh: set[str] = set()  # closures whose gradients their callee made
        self.skipped: set[str] = set()  # callees called in a way not specialised (keywords)
        self.values: dict[tuple[Any, tuple[Hashable, ...]], Known | None] = {}  # (function, signature) -> value
        for stmt, closure in adj.split_calls:
            v = stmt.value
            if not (isinstance(v, Call) and isinstance(v.node, cst.Call) and isinstance(v.node.func, cst.Name)):
                continue
            name = v.node.func.value
            if name not in adj.callee_origins:
                continue
            call = ast.parse(cst.Module([]).code_for_node(v.node), mode="eval").body
            assert isinstance(call, ast.Call)
            if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
                self.skipped.add(name)
                continue
            self.calls.append((stmt, name, closure, call))
            self.tuples[name] = self._forward_known(name)
            if len(adj.callee_origins[name][1]) > 1:
                self.tuples[closure] = self._gradients_known(call)
            else:
                self.helpers[closure] = self._gradient_known(call)

    def _forward_known(self, name: str) -> TupleHelper:
        def known(ev: Evaluator, args: list[ast.expr]) -> tuple[Known | KnownTree | None, ...] | None:
            # (the value does not depend on the cotangent, not known yet)
            made = self.specialised(name, [ev.known(a) for a in args], None)
            return None if made is None else (made.value, None)
        return known

    def _gradients_known(self, call: ast.Call) -> TupleHelper:
        def known(ev: Evaluator, args: list[ast.expr]) -> tuple[Known | KnownTree | None, ...] | None:
            return self.gradients(ev, call)
        return known

    def _gradient_known(self, call: ast.Call) -> Helper:
        def known(ev: Evaluator, args: list[ast.expr]) -> Known | None:
            found = self.gradients(ev, call)
            return None if found is None else found[0]
        return known

    def gradients(self, ev: Evaluator, call: ast.Call) -> tuple[Known | KnownTree | None, ...] | None:
        """What the closure of a call returns: a gradient per active parameter, each of its
        argument's type, shape and dtype (the generated code returns them so)."""
        assert isinstance(call.func, ast.Name)
        function, wrt = self.adj.callee_origins[call.func.id]
        params = _parameters(function)
        if params is None:
            return None
        arguments = dict(zip(params, call.args))
        out = []
        for p in wrt:
            known = ev.known(arguments[p]) if p in arguments else None
            out.append(known if checked(known) else None)
        return tuple(out)

    def specialised(self, name: str, arguments: list[Known | KnownTree | None], cotangent: Known | KnownTree | None
                    ) -> Specialised | None:
        """Callee ``name`` specialised to these arguments and this cotangent (None when
        nothing is known of the arguments, or the callee cannot be)."""
        function, wrt = self.adj.callee_origins[name]
        params = _parameters(function)
        if params is None or len(arguments) > len(params) or all(k is None for k in arguments):
            return None
        signature = _signature(params, arguments, cotangent)
        key = (name, signature)
        if key not in self.made:
            self.made[key] = self._build(function, wrt, signature, self.adj.callees[name])
        return self.made[key]

    def _build(self, function: Any, wrt: tuple[str, ...], signature: tuple[Hashable, ...],
               generic: Any) -> Specialised | None:
        """The specialised callee (without code where its text is the generic code's: the
        generic code, printed once, serves); None if it cannot be made."""
        assert self.adj.build is not None
        try:
            code = self.adj.build(function, wrt if len(wrt) > 1 else wrt[0], "split", shapes=signature)
        except S2SADError:
            return None  # (the generic code, which was made, serves)
        found = getattr(code, "__s2sad_known__", None)
        if found is None:
            return None
        value, fresh = found
        return Specialised(None, value, False) if _body(code) == _body(generic) else Specialised(code, value, fresh)

    def returns(self, function: types.FunctionType, arguments: list[Known | KnownTree | None]) -> Known | None:
        """What a call of a user's function that the code only runs (inside ``stop_gradient``,
        say) returns: the value of its code specialised to these arguments, with respect to
        those that are real floats."""
        params = _parameters(function)
        if params is None or len(arguments) > len(params) or \
                (getattr(function, "__module__", None) or "").split(".")[0] in LIBRARIES:
            return None
        wrt = tuple(p for p, k in zip(params, arguments) if checked(k))
        if not wrt:
            return None
        signature = _signature(params, arguments, None)
        key = (function, signature)
        if key not in self.values:
            self.values[key] = None
            made = self._build(function, wrt, signature, None)
            self.values[key] = None if made is None else made.value
        return self.values[key]

    def settle(self, shapes: Shapes) -> None:
        """Rewrite each call to the callee specialised to what is now known of its arguments
        and of the cotangent its closure is called with.  A callee whose calls all take one
        specialisation keeps its name; the generic code no call takes any more goes."""
        if not self.calls:
            return
        cotangents = _closure_arguments(self.adj)
        chosen: dict[str, list[tuple[Assign, str, Specialised | None]]] = {}
        for stmt, name, closure, call in self.calls:
            given = cotangents.get(closure)
            cotangent = shapes.known.get(given) if isinstance(given, str) else None
            made = self.specialised(name, [shapes.evaluator.known(a) for a in call.args], cotangent) \
                if given is not None else None
            if made is not None and (made.code is None or made.value != shapes.known.get(_value_name(stmt))):
                made = None  # (the generic code serves; or not what the analysis took the value for)
            chosen.setdefault(name, []).append((stmt, closure, made))
        for name, calls in chosen.items():
            codes = {id(made.code) for _, _, made in calls if made is not None}
            if len(codes) == 1 and all(made is not None for _, _, made in calls):
                self.adj.callees[name] = calls[0][2].code  # type: ignore[union-attr]
            else:
                for stmt, _, made in calls:
                    if made is not None:
                        v = stmt.value
                        assert isinstance(v, Call) and isinstance(v.node, cst.Call)
                        v.node = v.node.with_changes(func=cst.Name(self.adj.callee_name(made.code)))
                if name not in self.skipped and all(made is not None for _, _, made in calls):
                    del self.adj.callees[name]
            self.fresh.update(closure for _, closure, made in calls if made is not None and made.fresh)

    def makes(self, node: ast.expr) -> bool:
        """Whether ``node`` calls a closure whose gradients its callee made, or sums two
        gradients leaf by leaf (``specialize_containers.tree_sum``)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "tuple" \
                and len(node.args) == 1:
            node = node.args[0]
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.DictComp)):
            return isinstance(node.value if isinstance(node, ast.DictComp) else node.elt, ast.BinOp)
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.fresh


def _parameters(function: Any) -> tuple[str, ...] | None:
    """The positional parameters of a plain function (None with ``*args`` or ``**kwargs``)."""
    if not isinstance(function, types.FunctionType):
        return None
    code = function.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_kwonlyargcount:
        return None
    return code.co_varnames[:code.co_argcount]


def _signature(params: tuple[str, ...], arguments: list[Known | KnownTree | None],
               cotangent: Known | KnownTree | None) -> tuple[Hashable, ...]:
    """The signature a callee is built for: its arguments' (None for a parameter left to its
    default), then the cotangent's, as a jvp's tangent comes (rules/shapes.known_arguments)."""
    items = [signature_item(k) for k in arguments]
    return (*items, *[None] * (len(params) - len(items)), signature_item(cotangent))


def _body(code: Any) -> str:
    """A generated function's text, without its first comment line (which names what it is
    specialised to)."""
    return str(getattr(code, "__s2sad_source__", "")).partition("\n")[2]


def _value_name(stmt: Assign) -> str:
    """The name a split call assigns the callee's value to."""
    assert isinstance(stmt.target, tuple)
    return stmt.target[0]


def _closure_arguments(adj: Adjoint) -> dict[str, str | None]:
    """For each closure the backward pass calls once, the name it is called with (None: an
    expression, or more than one call)."""
    found: dict[str, str | None] = {}
    seen: set[str] = set()
    for out in lines(adj.backward):
        if not isinstance(out, Line):
            continue
        for node in ast.walk(parsed_line(out.code)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                name = node.func.id
                arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
                found[name] = None if name in seen or not isinstance(arg, ast.Name) else arg.id
                seen.add(name)
    return found
