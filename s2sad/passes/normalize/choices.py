"""Functions chosen by a conditional expression: ``act = np.tanh if use_tanh else relu``.
The condition is computed where the binding stands (as Python does) and held in a
variable; each call through the name is lowered as an ``if`` on that variable whose branches
call the functions, ``act(z)`` as ``np.tanh(z) if cond else relu(z)``, so each branch is
differentiated like any call and the backward pass replays the branch that ran."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import libcst as cst

from ...ir import If, Operand, Var
from ..resolve import MISSING
from .syntax import strip_parens


@dataclass
class Choice:
    """What a name bound to ``a if c else b`` calls: ``body`` when ``test`` holds, else ``orelse``."""

    test: Operand  # the condition, computed where the binding stands
    body: Union[cst.BaseExpression, "Choice"]  # a function as the calls name it, or another choice
    orelse: Union[cst.BaseExpression, "Choice"]


class ChosenFunctions:
    """Lowering a name bound to one of several functions by conditional expressions."""

    def bind_choice(self, name: str, value: cst.BaseExpression) -> bool:
        """``name = f if c else g`` at the top level of the function, ``f`` and ``g`` functions
        known here (a module-level or nested function, a NumPy function, a lambda, or another
        such choice): record what calls through ``name`` call; False for any other assignment."""
        value = strip_parens(value)
        if not (isinstance(value, cst.IfExp) and self.out is self.fn.body and self.chooses_functions(value)):
            return False
        self.only_called(name, "a function chosen by a conditional expression", f"{name}(x)",
                         "write the conditional expression there (f(x) if c else g(x))")
        choice = self.choice(value)
        new = self.new_version(name)
        self.version[name] = new  # (which holds no value: calls through it are lowered as an if)
        self.choices[new] = choice
        return True

    def chooses_functions(self, node: cst.BaseExpression) -> bool:
        """Whether every branch of the conditional expression ``node`` is a function known here."""
        node = strip_parens(node)
        if isinstance(node, cst.IfExp):
            return self.chooses_functions(node.body) and self.chooses_functions(node.orelse)
        if isinstance(node, cst.Lambda):
            return True
        if isinstance(node, cst.Name) and node.value in self.local_functions:
            return self.version.get(node.value) == node.value
        return isinstance(node, (cst.Name, cst.Attribute)) and not self.local_reads(node) and self.is_function(
            self.res.object(node)) and self.res.object(node) is not MISSING

    def choice(self, node: cst.BaseExpression) -> Choice | cst.BaseExpression:
        """The choice ``node`` makes, its conditions computed here, in Python's order (a
        lambda compiled here, as a nested function)."""
        node = strip_parens(node)
        if isinstance(node, cst.Lambda):
            return self.anonymous_function(node)
        if not isinstance(node, cst.IfExp):
            return node
        test = self.condition(node.test)
        return Choice(test, self.choice(node.body), self.choice(node.orelse))

    def chosen_call(self, node: cst.Call, target: str | None) -> Operand | None:
        """``name(args)``, ``name`` bound to a choice: an if whose branches call the functions
        it chooses between; None for any other call."""
        func = strip_parens(node.func)
        if not (isinstance(func, cst.Name) and self.version.get(func.value) in self.choices):
            return None
        name = target or self.fn.fresh([func.value])
        # (the arguments computed once, before the branch, as Python does)
        node = node.with_changes(args=[a if a.star or isinstance(strip_parens(a.value), cst.Name) else
                                       a.with_changes(value=self.held_value(a.value)) for a in node.args])
        self.branch_call(self.choices[self.version[func.value]], node, name)
        return Var(name)

    def branch_call(self, choice: Choice | cst.BaseExpression, node: cst.Call, name: str) -> None:
        """Emit the call of what ``choice`` picks, with ``node``'s arguments, into ``name``."""
        if not isinstance(choice, Choice):
            self.lower(node.with_changes(func=choice), name)
            return
        body, _ = self.nested(lambda: self.branch_call(choice.body, node, name))
        orelse, _ = self.nested(lambda: self.branch_call(choice.orelse, node, name))
        self.out.append(If(choice.test, body, orelse, self.location(node)))

    def chosen_elsewhere(self, func: cst.BaseExpression) -> bool:
        """Whether ``func`` is a variable assigned a choice of functions that s2sad does not
        follow (in a loop, branch or block), for the message about calling it."""
        values = self.assigned_values(func.value) if isinstance(func, cst.Name) else []
        return any(isinstance(strip_parens(v), cst.IfExp) and self.chooses_functions(v) for v in values)
