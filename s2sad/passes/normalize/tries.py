"""``try: y = <expression> except E: <fallback>``: which branch runs is decided first, by
computing the expression in a probe that catches what the handlers catch
(``runtime.handler_index``); the statement is then lowered as an ``if`` on that index, whose
branches are differentiated like any other and replayed by the backward pass.  The probe
computes the expression once more, so it must call only functions s2sad has rules for (no
Python function, whose side effects would run twice, and no random draws)."""
from __future__ import annotations

import libcst as cst

from ... import runtime
from ...ir import Assign, Opaque
from ..resolve import MISSING
from .statements import try_finally_in_order
from .syntax import statements_of, strip_parens, walk

_TRY = ("'try' ... 'except' is followed when its body is one statement, 'y = <expression>' or "
        "'return <expression>', whose expression calls only NumPy (or other) functions s2sad has "
        "rules for, and its handlers name no exception variable ('except E as e'), with a 'finally' "
        "only where no part returns; {why}. Otherwise decide the fallback with an if on a condition you can compute "
        "(if np.all(np.linalg.eigvalsh(K) > 0): ...), or catch the error outside the "
        "differentiated function")


class TryLowering:
    """Lowering ``try`` / ``except`` as an ``if`` on which branch a probe found runs."""

    def try_as_if(self, node: cst.Try) -> cst.If:
        """Emit the probe of ``node``'s body; return the ``if`` that stands for the statement."""
        value = self.tried_expression(node)
        for handler in node.handlers:
            if handler.name is not None:
                raise self.unsupported(handler, _TRY.format(why="here the handler binds the exception"))
            if handler.type is not None and self.local_reads(handler.type):
                raise self.unsupported(handler.type, _TRY.format(why="here the exception class is a variable"))
        if node.finalbody is not None and try_finally_in_order(node) == [node]:  # (else it runs after)
            raise self.unsupported(node.finalbody, _TRY.format(why="here its 'finally' runs where a part returns"))
        caught = [self.rename(h.type) if h.type is not None else cst.Name("BaseException") for h in node.handlers]
        probe = self.helper_call(runtime.handler_index, [
            cst.Arg(cst.Lambda(cst.Parameters(), self.rename(strip_parens(value)))), *map(cst.Arg, caught)])
        index = self.temporary("handler")
        self.out.append(Assign(index, Opaque(probe, self.local_reads(value), "nondiff"), self.loc, temporary=True))
        body = [*statements_of(node.body), *(statements_of(node.orelse.body) if node.orelse else [])]
        branches = [body, *(statements_of(h.body) for h in node.handlers)]
        orelse: cst.If | cst.Else = cst.Else(cst.IndentedBlock(branches[-1]))
        for i in range(len(branches) - 2, -1, -1):
            test = cst.parse_expression(f"{index} == {i}")
            orelse = cst.If(test, cst.IndentedBlock(branches[i]), orelse)
        return orelse

    def tried_expression(self, node: cst.Try) -> cst.BaseExpression:
        """The expression the ``try`` body computes, when the probe may compute it again."""
        body = statements_of(node.body)
        small = body[0].body if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) else []
        statement = small[0] if len(small) == 1 else None
        if isinstance(statement, cst.Assign) and not any(
                isinstance(n, (cst.Subscript, cst.Attribute, cst.StarredElement))
                for t in statement.targets for n in walk(t.target)):
            value = statement.value
        elif isinstance(statement, cst.Return) and statement.value is not None:
            value = statement.value
        else:
            raise self.unsupported(node, _TRY.format(why="here its body is not one such statement"))
        for n in walk(value):
            if isinstance(n, (cst.Lambda, cst.NamedExpr, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)):
                raise self.unsupported(n, _TRY.format(why="here the expression holds a lambda or comprehension"))
            if isinstance(n, cst.Call) and not self.probe_may_call(n.func):
                raise self.unsupported(n, _TRY.format(why=f"here it calls '{self.parsed.code(n.func).strip()}'"))
        return value

    def probe_may_call(self, func: cst.BaseExpression) -> bool:
        """Whether the probe may call ``func`` again: a function with a rule, not a draw."""
        key = self.res.object(func)
        if key is MISSING or self.draws(cst.Call(func)):
            return False
        try:
            return self.registry.rule(key) is not None or self.registry.is_nondifferentiable(key)
        except TypeError:  # (an unhashable object: no rule is keyed by it)
            return False
