"""In-place writes into arrays, lowered as new versions: ``x[i] = v``, ``np.add.at``,
``np.subtract.at``, ``np.maximum.at`` and ``np.minimum.at``, ``np.fill_diagonal``, and ``out=``
arguments."""
from __future__ import annotations

import os
from typing import Any

import libcst as cst
import numpy as np

from ... import runtime
from ...ir import Assign, Call, Const, Opaque, Operand, Var, operand_code, operand_reads
from ...rules.registry import SETITEM
from ..resolve import MISSING
from .syntax import EMPTY_MODULE, strip_parens
from .views import linked_names


#: ``ufunc.at`` s2sad differentiates, as the functional helper it writes instead.
_UFUNC_AT = ((np.add, runtime.ufunc_add_at), (np.subtract, runtime.ufunc_subtract_at),
             (np.maximum, runtime.ufunc_maximum_at), (np.minimum, runtime.ufunc_minimum_at))


class InPlaceWriteLowering:
    """Writes into an array, as new versions: ``x[i] = v``, ``np.add.at``, ``out=``."""

    def setitem(self, target: cst.Subscript, value: cst.BaseExpression, shown: cst.CSTNode | None = None,
                what: str | None = None) -> None:
        """``x[i] = v`` as a new version of x: ``x_2 = x.copy(); x_2[i] = v``.

        The caller's arrays are never written to.  An alias of x (``y = x``) would
        not see the change, so assigning into one is an error.
        """
        name = target.value.value
        current = self.version.get(name, name)
        linked = self.linked(name)
        self.check_in_place(name, target, what or f"'{self.parsed.code(target).strip()} = ...'",
                            f"{name} = {name}.copy() before changing it", linked=linked_names(linked))
        v = self.lower(value, None, "value")
        self.stored_array_check(target, value, v)
        index_op, slice_nodes = self.index(target)
        if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Slice):
            self.slice_length_check(target, current, index_op, v)
        new = self.new_version(name)
        node = target.with_changes(value=cst.Name(new), slice=slice_nodes)
        call = Call(self.registry.rule(SETITEM), f"{name}[...] =",
                    {"x": Var(current), "index": index_op, "v": v}, node)
        if isinstance(v, Var) and self.sharers(v.name) & self.sharers(current):
            # NumPy may copy a view of x into x element by element: the generated code checks
            loc = self.location(target)
            call.overlap = (f"{os.path.basename(loc.filename)}:{loc.line}:{loc.column}: "
                            f"{self.parsed.code(target).strip()} = {self.parsed.code(shown or value).strip()}")
        self.out.append(Assign(new, call, self.location(target)))
        self.version[name] = new
        if current in self.lists:  # (xs[0] = v leaves a list: xs * 2 then repeats its items, x * xs multiplies)
            self.maybe_sequences.add(new)
        if current in self.holders:  # a list or dict now holding v itself
            self.holders[new] = self.holders[current].union(*(
                {v.name} | self.bases.get(v.name, frozenset()) | self.holders.get(v.name, frozenset())
                for _ in [v] if isinstance(v, Var)))
        self.same_array(new, current)
        self.relaid(new, current)
        self.follow_views(name, target, linked)

    def slice_length_check(self, target: cst.Subscript, current: str, index: Const, v: Operand) -> None:
        """``xs[i:j] = v``: refused as the code runs when ``xs`` is a list whose length it changes."""
        code = self.parsed.code(target).strip()
        message = (f"'{code} = ...' changes the length of the list '{target.value.value}', which s2sad "
                   f"does not follow; write {target.value.value} = {target.value.value}[:i] + [...] + "
                   f"{target.value.value}[j:]")
        loc = self.location(target)
        self.run_time_check(runtime.check_slice_length, [
            cst.Name(current), cst.parse_expression(index.code), cst.parse_expression(operand_code(v)),
            cst.SimpleString(repr(message)), cst.SimpleString(repr(str(loc)))],
            (current, *index.reads, *operand_reads(v)), loc)

    def stored_array_check(self, target: cst.Subscript, value: cst.BaseExpression, v: Operand) -> None:
        """``d[k] = y`` with the array ``y`` holds changed in place afterwards: refused as the code
        runs when d is a list or dict (it then holds y itself, which s2sad reads as stored)."""
        value = strip_parens(value)
        if not (isinstance(v, Var) and isinstance(value, cst.Name) and id(target) in self.changed_after_store):
            return
        container, name = target.value.value, value.value
        message = (f"'{container}' holds the array '{name}' itself, which the function changes in place "
                   f"later, and s2sad reads '{container}' as it was stored; store a copy "
                   f"({self.parsed.code(target).strip()} = {name}.copy())")
        loc, held = self.location(target), self.version.get(container, container)
        self.run_time_check(runtime.check_stored_array, [cst.Name(held), cst.Name(v.name), cst.SimpleString(
            repr(message)), cst.SimpleString(repr(str(loc)))], (held, v.name), loc)

    def ufunc_at(self, call: cst.Call) -> None:
        """``np.add.at(z, i, v)`` as ``z = ufunc_add_at(z, i, v)``: z changes in place (a new version,
        written through the views linked to it)."""
        function = ufunc_at_helper(self.res.object(call.func))
        spelled = self.parsed.code(call.func).strip()
        if function is MISSING:
            raise self.unsupported(call, f"{spelled}(...) changes its first argument in place, which s2sad "
                                         f"differentiates for np.add.at, np.subtract.at, np.maximum.at and "
                                         f"np.minimum.at only; write the update as a loop (z[i] = z[i] * v[k] "
                                         f"for each index)")
        target = call.args[0].value if call.args else None
        if (len(call.args) != 3 or any(a.keyword or a.star for a in call.args)
                or not isinstance(target, cst.Name) or target.value not in self.version):
            raise self.unsupported(call, f"write {spelled}(z, indices, values), with z a local array")
        name = target.value
        linked = self.linked(name)
        self.check_in_place(name, call, f"'{spelled}({name}, ...)'", f"{name} = {name}.copy() first",
                            linked=linked_names(linked))
        func = cst.Name(self.helper(function))
        self.res.objects[func] = function
        old, new = self.version[name], self.new_version(name)
        self.lower(call.with_changes(func=func), new, name)
        self.same_array(new, old)
        self.relaid(new, old)
        self.version[name] = new
        self.follow_views(name, call, linked)

    def fill_diagonal(self, call: cst.Call) -> None:
        """``np.fill_diagonal(a, v)`` as ``a[diagonal_index(a)] = v``: a new version of a."""
        spelled = self.parsed.code(call.func).strip()
        args = list(call.args)
        if len(args) == 3 and args[2].keyword is not None and args[2].keyword.value == "wrap" and (
                isinstance(args[2].value, cst.Name) and args[2].value.value == "False"):
            args = args[:2]
        target = args[0].value if args else None
        if (len(args) != 2 or any(a.keyword or a.star for a in args)
                or not isinstance(target, cst.Name) or target.value not in self.version):
            raise self.unsupported(call, f"write {spelled}(a, value), with a a local array (wrap=True: "
                                         f"write the entries by index, a[rows, cols] = value)")
        index = self.helper_call(runtime.diagonal_index, [cst.Arg(target)])
        subscript = cst.Subscript(target, [cst.SubscriptElement(cst.Index(index))])
        self.stand_ins[subscript] = call
        self.setitem(subscript, args[1].value, shown=call, what=f"'{spelled}({target.value}, ...)'")

    def out_argument(self, call: cst.BaseExpression) -> cst.Arg | None:
        """The ``out=`` argument of a call to a ufunc, or a function whose rule takes one (not
        ``out=None``)."""
        if not isinstance(call, cst.Call):
            return None
        out = next((a for a in call.args if a.keyword is not None and a.keyword.value == "out"), None)
        if out is None or isinstance(out.value, cst.Name) and out.value.value == "None":
            return None
        function = self.res.object(call.func)
        rule = self.registry.rule(function)
        return out if rule is not None and (isinstance(function, np.ufunc) or any(
            p.name == "out" for p in rule.params)) else None

    def out_call(self, call: cst.Call) -> cst.BaseExpression:
        """``f(a, b, out=z)`` as ``z = f(a, b)`` (z changes in place: a new version, written
        through the views linked to it), ``f(a, out=z[i])`` as ``z[i] = f(a)``; returns ``z``
        (or ``z[i]``), which is the call's value."""
        out = self.out_argument(call)
        assert out is not None
        spelled = self.parsed.code(call.func).strip()
        target = strip_parens(out.value)
        where = self.location(call)
        check_call = f"{self.helper(runtime.check_out)}({{}}, {{}}, " \
                     f"{f'{where.filename}:{where.line}:{where.column}'!r}, {spelled!r})"
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and (
                target.value.value in self.version and target.value.value in self.res.locals):
            value = self.temporary(spelled.rsplit(".", 1)[-1])
            self.lower(_without_argument(call, out), value, value)
            check = cst.parse_expression(check_call.format(EMPTY_MODULE.code_for_node(self.rename(target)), value))
            self.out.append(Assign(None, Opaque(check, (*self.local_reads(target), value), "nondiff"), where))
            self.setitem(target, cst.Name(value))
            return target
        if not isinstance(target, cst.Name) or target.value not in self.version or target.value not in self.res.locals:
            raise self.unsupported(out, f"{spelled}(..., out={self.parsed.code(target).strip()}) writes into an "
                                        f"array that is not a local variable, which s2sad does not follow; "
                                        f"write z = {spelled}(...) instead, with z a new name")
        if any(a.keyword is not None and a.keyword.value == "where" for a in call.args):
            raise self.unsupported(call, f"{spelled}(..., out=..., where=...) keeps the old values of the out "
                                         f"array where the condition is false; write z = np.where(condition, "
                                         f"{spelled}(...), z)")
        name = target.value
        linked = self.linked(name)
        self.check_in_place(name, call, f"'{spelled}(..., out={name})'", f"{name} = {spelled}(...)",
                            linked=linked_names(linked))
        old, new = self.version[name], self.new_version(name)
        self.lower(_without_argument(call, out), new, name)
        self.same_array(new, old)
        self.relaid(new, old)
        self.version[name] = new
        self.out.append(Assign(None, Opaque(cst.parse_expression(check_call.format(old, new)), (old, new),
                                            "nondiff"), where))
        self.follow_views(name, call, linked)
        return cst.Name(name)


def _without_argument(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """``call`` without the argument ``arg`` (and without a comma after the last one left)."""
    args = [a for a in call.args if a is not arg]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def ufunc_at_helper(obj: Any) -> Any:
    """The helper for ``obj`` when it is ``np.add.at`` or ``np.subtract.at``; MISSING for the
    ``at`` of another ufunc; None for anything else."""
    ufunc = getattr(obj, "__self__", None)
    if not isinstance(ufunc, np.ufunc) or getattr(obj, "__name__", None) != "at":
        return None
    return next((helper for u, helper in _UFUNC_AT if ufunc is u), MISSING)
