"""Draws that change their argument in place (``np.random.shuffle(a)``, ``rng.shuffle(a)``,
``random.shuffle(xs)``): run where they stand, as written, and kept even when their value
(None) is unused.  Shuffling an index array to pick a minibatch is what they are for; where
the shuffled value carries a gradient (activity refuses it, the gradient would not follow the
permutation) or another name holds the same object, it is an error that says what to write."""
from __future__ import annotations

from typing import Any

import libcst as cst

from ...ir import Assign, Const, Opaque, Operand, Var
from ...rules import draws
from .syntax import strip_parens

#: the draws that change their argument in place (of np.random, a generator, Python's random)
IN_PLACE_DRAWS = ("shuffle",)


class InPlaceDraws:
    """Lowering ``np.random.shuffle(a)`` and the like."""

    def generator_method(self, func: cst.BaseExpression) -> Any:
        """The method ``func`` calls on a generator the function made (``rng.shuffle``), if it
        draws; else None."""
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                and func.value.value in self.res.locals):
            return None
        made = self.generators.get(self.version.get(func.value.value, func.value.value))
        method = vars(made).get(func.attr.value) if made is not None else None
        return method if draws(method) else None

    def in_place_draw(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` calls a draw that changes its argument in place."""
        if not isinstance(node, cst.Call):
            return False
        called = self.generator_method(node.func) or self.res.object(node.func)
        return draws(called) and getattr(called, "__name__", None) in IN_PLACE_DRAWS

    def shuffle(self, node: cst.Call, target: str | None) -> Operand:
        """The call, where it stands (its value, None, in ``target``)."""
        self.check_expression(node)
        self.draws(node)  # (refused where the forward pass runs again unseeded)
        for a in node.args:
            self.check_shuffled(a.value, node)
        value = Opaque(self.rename(node), self.local_reads(node), "changes")
        self.out.append(Assign(target, value, self.loc, draws=True))
        return Const("None") if target is None else Var(target)

    def check_shuffled(self, arg: cst.BaseExpression, call: cst.Call) -> None:
        """Refuse shuffling in place what another name holds too, or a value that is not a
        variable of the function."""
        arg = strip_parens(arg)
        if isinstance(arg, cst.Name) and arg.value in self.res.locals:
            self.check_in_place(arg.value, call, f"'{self.parsed.code(call).strip()}'",
                                f"{arg.value} = {arg.value}[rng.permutation(len({arg.value}))]")
        elif self.local_reads(arg):
            raise self.unsupported(arg, "shuffle a variable of the function in place, or index the "
                                        "value with a permutation (a[rng.permutation(len(a))])")
