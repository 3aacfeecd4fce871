"""Nested functions that read the function's variables, passed to Python functions
(``g = lambda v: w * v; apply_twice(g, x)``): the callee is specialised to the nested
function, and the parameter it is passed as holds the values of the variables it reads, as
a tuple, through which their gradients flow; the callee's calls through the parameter call
the nested function with those values (``g_fn(v, w=g[0])``)."""
from __future__ import annotations

import ast
import types
from typing import Any

import libcst as cst

from ... import runtime
from ..callees import Closure
from ..resolve import is_derivative_call
from ..source import library_function
from .syntax import item_of, store_names, strip_parens, variable_name_nodes, walk


class ClosureArguments:
    """Passing a nested function that reads the function's variables to a Python function."""

    def takes_closures(self, call: cst.Call) -> bool:
        """Whether ``call`` calls a Python function (not library code, without a rule), which is
        compiled specialised to the nested functions passed to it."""
        called = self.res.object(call.func)
        return (isinstance(called, types.FunctionType) and not library_function(called)
                and self.registry.rule(called) is None)

    def use_beyond_calls(self, name: str, body: cst.CSTNode) -> cst.Name | None:
        """A use of ``name`` in ``body`` other than a call, an argument of a Python function
        (:meth:`takes_closures`) or a definition; None if there is none."""
        calls = [n for n in walk(body) if isinstance(n, cst.Call)]
        fine = {id(n.func) for n in calls} | store_names(body) | {
            id(strip_parens(a.value)) for n in calls if self.takes_closures(n) for a in n.args if not a.star}
        fine |= {id(n.name) for n in walk(body) if isinstance(n, cst.FunctionDef)}
        fine |= {id(strip_parens(n.args[0].value)) for n in calls if is_derivative_call(n, self.res)}  # grad(g)(x)
        return next((n for n in variable_name_nodes(body) if n.value == name and id(n) not in fine), None)

    def expect_passed(self, name: str) -> None:
        """Note where the nested function ``name``, reading this function's variables, is passed
        to a Python function: each such argument must be lowered as its values (closure_values)."""
        body = self.parsed.function.body
        self.closures_expected.update({id(a.value): a.value for n in walk(body) if isinstance(n, cst.Call)
                                       and self.takes_closures(n) for a in n.args
                                       if isinstance(strip_parens(a.value), cst.Name) and strip_parens(a.value).value == name})

    def check_closures_passed(self) -> None:
        """Refuse a nested function reading this function's variables passed where the call was
        not lowered as a Python function's (``first_of(g, x)(x)``)."""
        for node in self.closures_expected.values():
            name = strip_parens(node).value
            raise self.unsupported(node, f"'{name}' reads {', '.join(self.closure_args[name])} from the enclosing "
                                         f"function, and is passed here where s2sad cannot follow it (only to a "
                                         f"named parameter of a Python function); pass those variables as arguments")

    def passed_closure(self, value: cst.BaseExpression, made: bool = True) -> Closure | None:
        """The Closure an argument passes: a nested function of this one that reads its
        variables, a parameter a caller bound to one, or (``made``) the values generated code
        binds to one (``bind_closure((w,), g, ('w',))``); else None."""
        value = strip_parens(value)
        bound = value
        if made and isinstance(value, cst.Name):  # (generated code binds the values to a name first)
            values = self.assigned_values(value.value)
            bound = values[0] if len(values) == 1 else value
        if made and isinstance(bound, cst.Call) and self.res.object(bound.func) is runtime.bind_closure:
            function = bound.args[1].value  # (the nested function, defined in generated code too)
            function = self.local_functions.get(function.value) if isinstance(function, cst.Name) else None
            if function is not None:
                return self.closure(function, tuple(ast.literal_eval(self.parsed.code(bound.args[2].value))))
        if not isinstance(value, cst.Name):
            return None
        if value.value in self.closure_args and value.value in self.local_functions:
            return self.closure(self.local_functions[value.value], tuple(self.closure_args[value.value]))
        return self.res.closures.get(value.value)

    def closure(self, function: Any, outer: tuple[str, ...]) -> Closure:
        """The Closure of ``function`` reading ``outer``, one per function in this lowering."""
        return self.closures_passed.setdefault((id(function), outer), Closure(function, outer))

    def closure_values(self, arg: cst.Arg) -> cst.Arg:
        """``arg``, or for a nested function reading this function's variables, those values
        bound to it: ``bind_closure((w,), g, ('w',))``, a tuple that calls ``g`` with them (a
        parameter bound to a Closure holds one already)."""
        name = strip_parens(arg.value)
        if not (isinstance(name, cst.Name) and name.value in self.closure_args):
            return arg
        self.closures_expected.pop(id(arg.value), None)
        outer = self.closure_args[name.value]
        values, names = (cst.Tuple([cst.Element(e) for e in elements], lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                         for elements in ([cst.Name(n) for n in outer], [cst.SimpleString(repr(n)) for n in outer]))
        return arg.with_changes(value=self.helper_call(runtime.bind_closure, [
            cst.Arg(values), cst.Arg(cst.Name(name.value)), cst.Arg(names)]))

    def refuse_closures(self, args: list[cst.Arg], bound: set[int]) -> None:
        """Refuse a nested function reading this function's variables passed other than to a
        parameter (positions ``bound``) of a Python function specialised to it."""
        for i, a in enumerate(args):
            closure = self.passed_closure(a.value, made=False)
            if closure is not None and i not in bound:
                raise self.unsupported(a.value, f"'{self.parsed.code(a.value).strip()}' reads "
                                                f"{', '.join(closure.outer)} from the enclosing function, and is "
                                                f"passed here where s2sad cannot follow it (only to a named "
                                                f"parameter of a Python function); pass those variables as arguments")

    def closure_call(self, node: cst.Call, func: cst.Name) -> tuple[cst.Call, Any, cst.Name]:
        """``g(v)`` of a parameter ``g`` bound to a Closure: the call, its function and the name
        bound to it, which gets the values ``g`` holds as keyword arguments (``g_fn(v, w=g[0])``)."""
        closure = self.res.closures[func.value]
        fnode = cst.Name(self.fn.fresh(closure.function.__name__))
        self.fn.free[fnode.value] = closure.function
        equal = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
        extra = [cst.Arg(item_of(func, cst.Integer(str(i))), keyword=cst.Name(n), equal=equal)
                 for i, n in enumerate(closure.outer)]
        return node.with_changes(args=[*node.args, *extra]), closure.function, fnode

    def check_closure_parameters(self) -> None:
        """Refuse a parameter bound to a Closure used other than called or passed on."""
        for name in self.res.closures:
            use = self.use_beyond_calls(name, self.parsed.function.body)
            if use is not None:
                raise self.unsupported(use, f"'{name}' is a nested function of the caller that reads its "
                                            f"variables: here it may only be called, or passed to a Python "
                                            f"function; pass those variables as arguments")
