"""Statements and blocks: if/elif/else, simple statements, and how branches join."""
from __future__ import annotations

import builtins
import logging
import warnings
from typing import Any

import libcst as cst
import numpy as np

from ... import runtime
from ...ir import Assign, Const, If, Opaque, Operand, Return, Stmt, Var
from ...rules import draws
from .constructs import CONTEXT_MANAGERS, IN_PLACE_FUNCTIONS, UNSUPPORTED
from .flow import always_returns, may_jump, may_return
from .inplace import ufunc_at_helper
from .list_statements import CHANGING_LIST_METHODS
from .syntax import LIST_METHODS, LOOP_NODES, describe, statements_of, strip_parens, walk


#: Calls that set which warnings show, in a ``with warnings.catch_warnings():`` block.
WARNINGS_FILTERS = (warnings.simplefilter, warnings.filterwarnings)
#: Calls that may stand as statements: they print, warn, log or check and change nothing (a
#: logger's method called on a logger: ``log.debug(...)``).
STATEMENT_CALLS = (builtins.print, runtime.check_wrt, runtime.check_float_write, runtime.seed,
                   runtime.check_assignment_order, runtime.check_number, runtime.check_replayable, runtime.check_wrt_item,
                   runtime.check_out, runtime.check_length, runtime.check_sequence, runtime.check_stored_array,
                   runtime.check_shared_item, runtime.check_list, runtime.check_slice_length,
                   warnings.warn, *WARNINGS_FILTERS, logging.debug, logging.info, logging.warning,
                   logging.error, logging.critical, logging.exception, logging.log,
                   logging.Logger.debug, logging.Logger.info, logging.Logger.warning, logging.Logger.error,
                   logging.Logger.critical, logging.Logger.exception, logging.Logger.log,
                   np.random.seed, np.random.RandomState.seed,
                   *(getattr(np.testing, n) for n in ("assert_allclose", "assert_array_equal", "assert_equal",
                                                     "assert_array_almost_equal", "assert_almost_equal",
                                                     "assert_array_less", "assert_")))



#: Expression statements that do nothing: a literal (a docstring, a string written as a
#: comment, ``...`` in a stub).
_INERT_STATEMENTS = (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis, cst.Integer, cst.Float)


def try_finally_in_order(stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
    """A ``try`` with a ``finally``, no part of which returns, breaks or continues, as its body
    (with its handlers, if any: tries.py) then its ``finally``: what Python runs when nothing
    leaves the function (an exception that does asks no gradient); any other statement as it is."""
    if not (isinstance(stmt, cst.Try) and stmt.finalbody):
        return [stmt]
    final = statements_of(stmt.finalbody.body)
    parts = [*statements_of(stmt.body), *(s for h in stmt.handlers for s in statements_of(h.body)),
             *(statements_of(stmt.orelse.body) if stmt.orelse else []), *final]
    if may_return(parts) or any(may_jump(p) for p in parts):
        return [stmt]
    if not stmt.handlers and stmt.orelse is None:
        return [*statements_of(stmt.body), *final]
    return [stmt, *final]  # (the try lowered without its finally: tries.py)


class StatementLowering:
    """Lowering blocks and simple statements, branches and how their versions join."""

    def block(self, stmts: list[cst.BaseStatement]) -> bool:
        """Lower ``stmts`` into ``self.out``; True if every path through them returns.

        A statement that may ``break`` or ``continue`` guards the statements after it
        with the loop's flags; an ``if`` that returns on some path takes the
        statements after it into its other branches.
        """
        stmts = [new for stmt in stmts for new in self.else_after_loop(stmt)]
        stmts = [new for stmt in stmts for new in self.match_as_if(stmt)]
        stmts = [new for stmt in stmts for new in self.quiet_body(stmt)]
        stmts = [new for stmt in stmts for new in try_finally_in_order(stmt)]
        for i, stmt in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(stmt, cst.Try) and stmt.handlers:  # as an if on which branch runs (tries.py)
                self.loc = self.location(stmt)
                stmt = self.try_as_if(stmt)
            if isinstance(stmt, cst.SimpleStatementLine):
                for j, small in enumerate(stmt.body):
                    ended = self.small_statement(small)
                    if ended:
                        dead = stmt.body[j + 1:] or rest
                        if dead:
                            raise self.unsupported(dead[0], f"code after '{ended}' is never run; "
                                                            "remove it")
                        return ended == "return"
                continue
            self.loc = self.location(stmt)
            if isinstance(stmt, cst.FunctionDef):
                self.nested_function(stmt.name.value, stmt)
            elif isinstance(stmt, cst.If):
                returns, took_rest = self.if_statement(stmt, rest)
                if took_rest or returns:
                    return returns
            elif isinstance(stmt, cst.With):
                self.with_statement(stmt)
            elif isinstance(stmt, (cst.For, cst.While)):
                if not self.loops and may_return([stmt]):
                    self.returning = self.fn.fresh("returning")
                    self.out.append(Assign(self.returning, Const("False"), self.loc, temporary=True))
                self.for_loop(stmt) if isinstance(stmt, cst.For) else self.while_loop(stmt)
                if may_return([stmt]):
                    if not self.loops:  # the loop returned, or the statements after it run
                        return self.after_returning_loop(rest)
                    returned = Opaque(cst.Name(self.returning), (self.returning,), "nondiff")
                    self.out.append(Assign(self.loops[-1][0], returned, self.loc, temporary=True))
            else:
                raise self.unsupported(stmt, UNSUPPORTED.get(type(stmt), f"'{describe(stmt)}' is not supported"))
            if rest and self.loops and may_jump(stmt):
                guard = self.guard_condition()
                before = dict(self.version)
                body, _ = self.nested(lambda: self.block(rest))
                else_body: list[Stmt] = []
                self.version = self.join(before, [(body, self.version, False), (else_body, before, False)])
                self.out.append(If(guard, body, else_body, self.loc))
                return False
        return False

    def quiet_body(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        """The body of a ``with np.errstate(...):`` (or ``warnings.catch_warnings()``) that
        returns or jumps, as its statements: it changes what is reported, not what is computed
        (the generated code then reports as NumPy does by default); any other statement as
        it is.  A block that does neither runs in the context: see ``with_statement``."""
        if isinstance(stmt, cst.With) and (may_return(statements_of(stmt.body)) or may_jump(stmt)) and all(
                item.asname is None and isinstance(item.item, cst.Call)
                and any(self.res.object(item.item.func) is c for c in CONTEXT_MANAGERS) for item in stmt.items):
            return [new for inner in statements_of(stmt.body) for new in self.quiet_body(inner)]
        return [stmt]

    def else_after_loop(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        """A loop whose ``else`` returns (or jumps in an enclosing loop), as the loop and its
        ``else`` after it: as it is, when the loop never breaks (a loop that returns left the
        function), else under ``if completed:``, a flag the loop's ``else`` sets."""
        if not (isinstance(stmt, LOOP_NODES) and stmt.orelse is not None and any(
                isinstance(n, (cst.Return, cst.Break, cst.Continue)) for n in walk(stmt.orelse))):
            return [stmt]
        after = statements_of(stmt.orelse.body)
        if not any(isinstance(n, cst.Break) for n in walk(stmt.body)):  # (a nested loop's too)
            loop = stmt.with_changes(orelse=None)
            self.stand_ins[loop] = stmt
            return [loop, *after]
        flag = cst.Name(self.temporary("completed"))
        set_flag = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(flag)], cst.Name(value))])
                    for value in ("False", "True")]
        loop = stmt.with_changes(orelse=cst.Else(cst.IndentedBlock([set_flag[1]])))
        test = cst.If(flag, cst.IndentedBlock(after))
        # the nodes built here are located at the loop (its else, for what runs after it)
        self.stand_ins.update({loop: stmt, set_flag[0]: stmt, set_flag[0].body[0]: stmt,
                               set_flag[1]: stmt.orelse, set_flag[1].body[0]: stmt.orelse, test: stmt.orelse})
        return [set_flag[0], loop, test]

    def match_as_if(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        """A ``match`` whose patterns are literals, dotted names, ``|`` of them and ``_`` (with
        guards), as the ``if``/``elif``/``else`` it means (``subject == value``; ``is`` for
        None, True and False), its subject evaluated once; any other statement as it is."""
        if not isinstance(stmt, cst.Match):
            return [stmt]
        subject = strip_parens(stmt.subject)
        before: list[cst.BaseStatement] = []
        if not isinstance(subject, cst.Name) and self.local_reads(subject):
            name = cst.Name(self.temporary("subject"))
            before = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(name)], subject)])]
            self.stand_ins.update({before[0]: stmt, before[0].body[0]: stmt})
            subject = name
        orelse: cst.If | cst.Else | None = None
        for case in reversed(stmt.cases):
            test = self.pattern_test(subject, case.pattern)
            if case.guard is not None:
                test = case.guard if test is None else cst.BooleanOperation(test, cst.And(), case.guard)
            if test is None:  # (irrefutable: the last case)
                orelse = cst.Else(case.body)
                continue
            orelse = cst.If(test, case.body, orelse=orelse)
            self.stand_ins[orelse] = case
        if isinstance(orelse, cst.Else):
            return before + statements_of(orelse.body)
        return before + ([orelse] if orelse is not None else [])

    def pattern_test(self, subject: cst.Name, pattern: cst.MatchPattern) -> cst.BaseExpression | None:
        """The condition under which ``pattern`` matches ``subject``; None if it always does."""
        if isinstance(pattern, cst.MatchAs) and pattern.pattern is None and pattern.name is None:
            return None
        if isinstance(pattern, (cst.MatchValue, cst.MatchSingleton)):
            compare = cst.Equal() if isinstance(pattern, cst.MatchValue) else cst.Is()
            return cst.Comparison(subject, [cst.ComparisonTarget(compare, pattern.value)])
        if isinstance(pattern, cst.MatchOr) and all(
                isinstance(e.pattern, (cst.MatchValue, cst.MatchSingleton)) for e in pattern.patterns):
            tests = [self.pattern_test(subject, e.pattern) for e in pattern.patterns]
            test = tests[0]
            for t in tests[1:]:
                test = cst.BooleanOperation(test, cst.Or(), t)
            return test
        raise self.unsupported(pattern, "a 'case' pattern other than a literal, a dotted name, '|' of "
                                        "them or '_' is not supported; write if/elif/else")

    def with_statement(self, node: cst.With) -> None:
        """``with np.errstate(...):`` or ``with warnings.catch_warnings():`` around a block: the
        block is lowered as if the ``with`` were not there, in an ``If`` that always runs and
        whose forward and backward code run in the context (see ``If.context``)."""
        body = statements_of(node.body)
        for item in node.items:
            called = self.res.object(item.item.func) if isinstance(item.item, cst.Call) else None
            if item.asname is not None or node.asynchronous is not None or self.local_reads(item.item) \
                    or not any(called is c for c in CONTEXT_MANAGERS):
                raise self.unsupported(node, UNSUPPORTED[cst.With])
        context = ", ".join(self.parsed.code(strip_parens(item.item)).strip() for item in node.items)
        setup = tuple(self.parsed.code(small.value).strip() for line in body if isinstance(line, cst.SimpleStatementLine)
                      for small in line.body if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                      and any(self.res.object(small.value.func) is f for f in WARNINGS_FILTERS)
                      and not self.local_reads(small.value))
        inner, _ = self.nested(lambda: self.block(body))
        self.out.append(If(Const("True"), inner, [], self.location(node), context=context, setup=setup))

    def after_returning_loop(self, rest: list[cst.BaseStatement]) -> bool:
        """``if returning: <the value is returned> else: rest``; True if every path returns."""
        test = Var(self.returning)
        before = dict(self.version)
        else_body, else_ret = self.nested(lambda: self.block(rest))
        branches = [([], before, True), (else_body, self.version, else_ret)]
        if else_ret:  # only the returned value flows on, to the final return
            branches = [(body, {self.result: v[self.result]}, ret) for body, v, ret in branches]
        self.version = self.join(before, branches)
        self.out.append(If(test, branches[0][0], else_body, self.loc))
        return else_ret

    def nested(self, lower: Any) -> tuple[list[Stmt], Any]:
        """Lower into a fresh block; returns the block and what ``lower`` returned."""
        saved, self.out = self.out, []
        self.enclosing.append(saved)
        try:
            result = lower()
            return self.out, result
        finally:
            self.out = saved
            self.enclosing.pop()

    def guard_condition(self) -> Var:
        """A recorded ``not (breaking or skipping)`` for the innermost loop."""
        flags = [f for f in self.loops[-1] if f]
        code = f"not {flags[0]}" if len(flags) == 1 else f"not ({' or '.join(flags)})"
        return self.emit(Opaque(cst.parse_expression(code), tuple(flags), "nondiff"), None, "go_on",
                         cst.Name("_"))

    def condition(self, node: cst.BaseExpression) -> Operand:
        """Record a branch condition in a variable, so the adjoint can replay the branch."""
        node = self.hoist(node)
        self.check_expression(node)
        reads = self.local_reads(node)
        code = self.rename(strip_parens(node))
        if not reads:
            return Const(self.parsed.code(strip_parens(node)).strip())
        return self.emit(Opaque(code, reads, "nondiff"), None, "cond", node)

    def if_statement(self, node: cst.If, rest: list[cst.BaseStatement]) -> tuple[bool, bool]:
        """Lower an if/elif/else; returns (every path returns, took the following statements)."""
        then_stmts = statements_of(node.body)
        else_stmts: list[cst.BaseStatement] = []
        if isinstance(node.orelse, cst.If):
            else_stmts = [node.orelse]
        elif isinstance(node.orelse, cst.Else):
            else_stmts = statements_of(node.orelse.body)
        then_returns, else_returns = always_returns(then_stmts), always_returns(else_stmts)
        take_rest = bool(rest) and (then_returns or else_returns or may_return(then_stmts)
                                    or may_return(else_stmts))
        if take_rest:
            then_stmts = then_stmts if then_returns else then_stmts + rest
            else_stmts = else_stmts if else_returns else else_stmts + rest
        test = self.condition(node.test)
        loc = self.location(node)
        before, links = dict(self.version), self.save_links()
        then_body, then_ret = self.nested(lambda: self.block(then_stmts))
        then_held = self.links_held(links)
        self.restore_links(links)
        then_versions, self.version = self.version, dict(before)
        else_body, else_ret = self.nested(lambda: self.block(else_stmts))
        else_versions = self.version
        held = then_held & self.links_held(links)
        self.restore_links(links)
        branches = [(then_body, then_versions, then_ret), (else_body, else_versions, else_ret)]
        if then_ret and else_ret:  # only the returned value flows on, to the final return
            branches = [(body, {self.result: v[self.result]}, ret) for body, v, ret in branches]
        self.version = self.join(before, branches)
        self.hold_links(held)
        self.out.append(If(test, then_body, else_body, loc))
        return then_ret and else_ret, take_rest

    def join(self, before: dict[str, str], branches: list[tuple[list[Stmt], dict[str, str], bool]]
             ) -> dict[str, str]:
        """Versions after branches meet; phi copies go at the ends of the branches."""
        if not branches:
            return before
        if len(branches) == 1:
            return branches[0][1]
        (body_a, va, _), (body_b, vb, _) = branches
        joined = dict(before)
        for name in dict.fromkeys([*va, *vb]):
            a, b = va.get(name), vb.get(name)
            if (a is None or b is None) and self.loops:
                # bound on one path only (the other jumped out): None there, since the loop's
                # record of the iteration may save it
                (body_a if a is None else body_b).append(
                    Assign(a or b, Const("None"), self.loc, temporary=True))
            elif a is None or b is None:
                self.unbound_in.setdefault(a or b, []).append(body_a if a is None else body_b)
            if a == b or b is None:
                joined[name] = a
            elif a is None:
                joined[name] = b
            elif a != before.get(name):
                joined[name] = a
                self.bind_everywhere(b)
                body_b.append(Assign(a, Var(b), self.loc))
            else:
                joined[name] = b
                self.bind_everywhere(a)
                body_a.append(Assign(b, Var(a), self.loc))
            if a and b and a != b:  # the value of one path or the other: what it shares, it shares
                if {a, b} & self.views:
                    self.views.add(joined[name])
                for v in {a, b} - {joined[name]}:
                    self.same_array(joined[name], v)
                if {a, b} & set(self.layout):  # laid out as one array or another, or unknown
                    origins = {self.layout.get(a, a), self.layout.get(b, b)}
                    self.layout[joined[name]] = origins.pop() if len(origins) == 1 else None
        return joined

    def bind_everywhere(self, version: str) -> None:
        """Before generated code copies ``version``: None on the paths that leave it unbound
        (the user's code never reads it there; the copy would)."""
        for block in self.unbound_in.pop(version, []):
            if not (block and isinstance(block[-1], Return)):
                block.append(Assign(version, Const("None"), self.loc, temporary=True))

    def delete(self, node: cst.Del) -> None:
        """``del x, y`` of local variables: generated code keeps the values (its backward pass
        may read them), and a later read of the deleted version is refused, as Python would
        fail there; ``del ys[i]``, ``del d[k]``: a new version of the list or dict."""
        target = strip_parens(node.target)
        names = target.elements if isinstance(target, (cst.Tuple, cst.List)) else [target]
        for item in names:
            name = strip_parens(item.value if isinstance(item, cst.Element) else item)
            if isinstance(name, cst.Subscript) and isinstance(name.value, cst.Name) and name.value.value in self.version:
                self.check_expression(name)
                self.delete_item(node, name)
                continue
            if not isinstance(name, cst.Name) or name.value not in self.version:
                raise self.unsupported(node, "'del' is supported only for local variables the function "
                                             "has assigned ('del x') and items of local lists and dicts "
                                             "('del ys[i]', 'del d[k]'); remove it, or delete attributes "
                                             "outside the differentiated function")
            self.deleted[name.value] = self.version[name.value]

    def small_statement(self, node: cst.BaseSmallStatement) -> str | None:
        """Lower one simple statement; returns "return", "break" or "continue" if it jumps."""
        self.loc = self.location(node)
        if isinstance(node, cst.Pass):
            return None
        if isinstance(node, cst.Expr):
            if isinstance(node.value, _INERT_STATEMENTS):  # (a docstring, a string as a comment, '...')
                return None
            self.expression_statement(node)
        elif isinstance(node, cst.Assign):
            self.assign(node)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.assign(cst.Assign([cst.AssignTarget(node.target)], node.value), node)
        elif isinstance(node, cst.AugAssign):
            self.augmented_assign(node)
        elif isinstance(node, cst.Return):
            self.return_statement(node)
            if self.loops:  # leave every loop: the value is returned after the outermost one
                self.out.append(Assign(self.returning, Const("True"), self.loc, temporary=True))
                self.out.append(Assign(self.loops[-1][0], Const("True"), self.loc, temporary=True))
                return "break"
            return "return"
        elif isinstance(node, (cst.Break, cst.Continue)) and self.loops:
            breaking, skipping = self.loops[-1]
            flag = breaking if isinstance(node, cst.Break) else skipping
            self.out.append(Assign(flag, Const("True"), self.loc, temporary=True))
            return "break" if isinstance(node, cst.Break) else "continue"
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            self.import_statement(node)
        elif isinstance(node, cst.Del):
            self.delete(node)
        elif isinstance(node, cst.Global):  # (its names are module globals: see attribute_store)
            if self.out is not self.fn.body:
                raise self.unsupported(node, "'global' is followed at the top level of the function; "
                                             "write it there, before the names are used")
            self.out.append(Assign(None, Opaque(node, (), "nondiff"), self.loc))
        elif isinstance(node, cst.Assert):
            self.check_expression(node.test)
            if node.msg is not None:
                self.check_expression(node.msg)
            self.out.append(Assign(None, Opaque(self.rename(node), self.local_reads(node), "nondiff"), self.loc))
        elif isinstance(node, cst.Raise):  # as written: the code after it does not run
            for part in (node.exc, node.cause and node.cause.item):
                if part is not None:
                    self.check_expression(part)
            self.out.append(Assign(None, Opaque(self.rename(node), self.local_reads(node), "nondiff"), self.loc))
        else:
            raise self.unsupported(node, UNSUPPORTED.get(type(node), f"'{describe(node)}' is not supported"))
        return None

    def import_statement(self, node: cst.Import | cst.ImportFrom) -> None:
        """An import at the top level of the function: resolution imported it, so the names
        it binds denote their objects (rules apply to them); the generated code runs it too."""
        if isinstance(node.names, cst.ImportStar):
            raise self.unsupported(node, "'from ... import *' is not supported; import the names "
                                         "the function uses")
        if id(node) not in self.res.imports:
            raise self.unsupported(node, "an import inside a branch or a loop is not supported; "
                                         "import at the top of the function or at module level")
        error = self.res.imports[id(node)]
        if error is not None:
            raise self.unsupported(node, f"this import fails when the code is generated "
                                         f"({type(error).__name__}: {error})")
        names = [a.asname.name.value if a.asname is not None else
                 (a.name.value if isinstance(a.name, cst.Name) else self.parsed.code(a.name).split(".")[0])
                 for a in node.names]
        assigned = sorted(set(names) & self.res.locals)
        if assigned:
            raise self.unsupported(node, f"'{assigned[0]}' is imported and also assigned in the "
                                         f"function; use another name for one of them")
        self.out.append(Assign(None, Opaque(node, (), "nondiff"), self.loc))

    def return_statement(self, node: cst.Return) -> None:
        if node.value is None:
            raise self.unsupported(node, "'return' without a value; return the scalar to differentiate")
        value = self.hoist(node.value)
        self.check_expression(value)
        nested = self.out is not self.fn.body
        if not nested and self.result not in self.version:
            target = None if isinstance(value, cst.Name) or not self.local_reads(value) else self.result
            self.out.append(Return(self.lower(value, target, "value"), self.loc))
            return
        new = self.new_version(self.result)
        self.lower(value, new, self.result)
        self.version[self.result] = new

    def expression_statement(self, node: cst.Expr) -> None:
        value = node.value
        func = value.func if isinstance(value, cst.Call) else None
        if isinstance(func, cst.Attribute) and func.attr.value == "append" and isinstance(
                func.value, cst.Name) and func.value.value in self.res.locals:
            self.check_expression(value)
            self.append(value)
            return
        if isinstance(func, cst.Attribute) and func.attr.value in CHANGING_LIST_METHODS and isinstance(
                func.value, cst.Name) and func.value.value in self.res.locals:
            self.check_expression(value)
            self.list_statement(value)
            return
        if isinstance(func, cst.Attribute) and func.attr.value in LIST_METHODS[1:] and isinstance(
                func.value, cst.Name) and func.value.value in self.res.locals:
            self.check_expression(value)
            self.pop(value) if func.attr.value == "pop" and not value.args else self.list_method(value)
            return
        if isinstance(value, cst.Call) and ufunc_at_helper(self.res.object(value.func)) is not None:
            self.check_expression(value)
            self.ufunc_at(value)
            return
        if isinstance(value, cst.Call) and self.out_argument(value) is not None:  # np.add(a, b, out=z)
            self.check_expression(value)
            self.out_call(value)
            return
        if self.in_place_draw(value):  # np.random.shuffle(a), rng.shuffle(a)
            self.shuffle(value, None)
            return
        called = self.res.object(value.func) if isinstance(value, cst.Call) else None
        method = self.generator_method(value.func) if isinstance(value, cst.Call) else None  # (not a yield)
        if (draws(called) and self.draws(value) or method is not None
                or any(getattr(called, "__func__", called) is f for f in STATEMENT_CALLS)):
            self.check_expression(value)
            self.out.append(Assign(None, Opaque(self.rename(value), self.local_reads(value), "nondiff"), self.loc))
            return
        for bad in (cst.Yield, cst.Await):
            if isinstance(value, bad):
                raise self.unsupported(value, UNSUPPORTED[bad])
        if called is np.fill_diagonal:
            self.check_expression(value)
            self.fill_diagonal(value)
            return
        if any(called is fun for fun in IN_PLACE_FUNCTIONS):
            raise self.unsupported(value, IN_PLACE_FUNCTIONS[called])
        raise self.unsupported(
            node, "an expression statement whose result is unused may change its arguments in "
                  "place, which s2sad cannot see; assign its result to a variable or remove it")
