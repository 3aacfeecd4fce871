"""Classification: expressions that carry no gradient by construction (comparisons,
``stop_gradient``, declared non-differentiable calls), kept whole."""
from __future__ import annotations

import builtins

import libcst as cst
import numpy as np

from ... import runtime
from ...errors import NoGradientRuleError
from ...rules import NONDIFF_ATTRIBUTES, SEEDING, draws
from ..resolve import MISSING
from .call_forms import constant_pieces
from .constructs import BINARY_OPS, UNSUPPORTED
from .syntax import strip_parens, variable_names, walk


#: Builtins that run or inspect code behind s2sad's back.
HIDDEN_CODE = (builtins.exec, builtins.eval, builtins.globals, builtins.locals, builtins.vars,
               builtins.compile, builtins.__import__)


class Classification:
    """Which expressions carry no gradient by construction, which local variables an
    expression reads, and the constructs refused wherever they stand."""

    def inactive_kind(self, node: cst.BaseExpression) -> str | None:
        """"stopped" or "nondiff" if ``node`` carries no gradient by construction."""
        if isinstance(node, (cst.Comparison, cst.FormattedString)):
            return "nondiff"
        if isinstance(node, cst.BooleanOperation):  # its value is one of its operands
            return self.combined_kind([node.left, node.right])
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, (cst.Not, cst.BitInvert)):
                return "nondiff"
            return self.inactive_kind(node.expression)
        if isinstance(node, cst.Call):
            func = node.func
            obj = self.res.object(func)
            if obj is runtime.stop_gradient:
                return "stopped"
            if obj is np.piecewise and constant_pieces(node, self.res):  # (a step function of x)
                return "nondiff"
            if obj is not MISSING:
                unbound = getattr(obj, "__func__", None)  # rng.normal (rng a global): Generator.normal
                nondiff = self.registry.is_nondifferentiable(obj) or self.registry.is_nondifferentiable(unbound)
                return "nondiff" if nondiff else None
            if isinstance(func, cst.Attribute) and func not in self.res.objects:
                method = getattr(np.ndarray, func.attr.value, None)
                if method is not None and self.registry.is_nondifferentiable(method):
                    return "nondiff"
                if func.attr.value == "keys" and not node.args:  # (a dict's keys carry no gradient)
                    return "nondiff"
                # a method of an inactive receiver is inactive only if its arguments are too
                return self.combined_kind([func.value, *(a.value for a in node.args)])
            return None
        if isinstance(node, cst.Attribute):
            if node in self.res.objects:
                return None
            if node.attr.value in NONDIFF_ATTRIBUTES:
                return "nondiff"
            return self.inactive_kind(node.value)
        if isinstance(node, cst.Subscript):
            if not self.local_reads(node.value):  # a global indexed: as inactive as the index
                return self.combined_kind([n for e in node.slice for n in _index_nodes(e.slice)])
            return self.inactive_kind(node.value)
        if isinstance(node, cst.BinaryOperation):
            key = BINARY_OPS.get(type(node.operator), (None,))[0]
            if key is not None and self.registry.is_nondifferentiable(key):  # x // y
                return "nondiff"
            return self.combined_kind([node.left, node.right])
        return None

    def draws(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` calls a random number generator (``np.random.randn(3)``,
        ``RNG.normal()``, ``random.gauss(0, 1)``): its value changes each time it is computed.

        In code whose forward pass runs again (a callee's vjp, when its caller is
        differentiated again), such a call is refused unless a seed given earlier in the
        function (``np.random.seed(0)``, ``rng = np.random.default_rng(0)``) makes the
        numbers it draws the same again."""
        calls = [n for n in walk(node) if isinstance(n, cst.Call) and draws(self.res.object(n.func))]
        seeding = [n for n in calls if id(self.res.object(n.func)) in SEEDING and n.args]
        self.seeded |= bool(seeding) and not self.loops
        if self.replayed and not self.seeded and len(seeding) < len(calls):
            raise NoGradientRuleError(
                "this function's forward pass runs again when its caller is differentiated again (a "
                "Hessian-vector product, a gradient of a gradient, a second pullback), and this call "
                "would then draw other random numbers; draw them in the function you differentiate and "
                "pass them in (eps = rng.standard_normal(n), then mu + sigma * eps), or seed the "
                "generator in this function first", self.location(node))
        return bool(calls)

    def stopped_copy(self, node: cst.BaseExpression) -> str | None:
        """The local variable ``x`` (its current version) if ``node`` is exactly ``stop_gradient(x)``."""
        node = strip_parens(node)
        if (isinstance(node, cst.Call) and self.res.object(node.func) is runtime.stop_gradient
                and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star):
            arg = strip_parens(node.args[0].value)
            if isinstance(arg, cst.Name) and self.local_reads(arg):
                return self.version.get(arg.value, arg.value)
        return None

    def combined_kind(self, nodes: list[cst.BaseExpression]) -> str | None:
        """The kind of a value computed from ``nodes``: inactive only if each of them is."""
        kinds = [self.inactive_kind(n) if self.local_reads(n) else "const" for n in nodes]
        if None in kinds:
            return None
        return "stopped" if "stopped" in kinds else "nondiff"

    def local_reads(self, node: cst.CSTNode) -> tuple[str, ...]:
        """Local variables ``node`` reads, in order, by their current version."""
        locals_ = self.res.locals
        found: dict[str, None] = {}
        for n in variable_names(node):
            if n in locals_:
                found[n] = None
            found.update(dict.fromkeys(self.closure_args.get(n, ())))  # (a nested function called: what it reads)
        return tuple(self.version.get(n, n) for n in found)

    def check_expression(self, node: cst.CSTNode) -> None:
        """Reject constructs that no part of s2sad can follow, wherever they stand."""
        for n in walk(node):
            if isinstance(n, (cst.Yield, cst.Await, cst.NamedExpr)):
                raise self.unsupported(n, UNSUPPORTED[type(n)])
            if isinstance(n, cst.Call) and any(self.res.object(n.func) is f for f in HIDDEN_CODE):
                raise self.unsupported(n, f"'{self.parsed.code(n.func).strip()}' runs code s2sad "
                                          "cannot see; write that code in the function itself")


def _index_nodes(s: cst.BaseSlice) -> list[cst.BaseExpression]:
    """The expressions of one entry of an index (a slice's bounds)."""
    if isinstance(s, cst.Index):
        return [s.value]
    return [b for b in (s.lower, s.upper, s.step) if b is not None]
