"""Calls and callees: rules, Python functions differentiated through their own
adjoints, methods, ``*args``/``**kwargs``, and the message when nothing applies."""
from __future__ import annotations

import builtins
import collections
import functools
import inspect
import math
import types
from dataclasses import dataclass
from typing import Any

import libcst as cst
import numpy as np

from ... import runtime
from ...ir import Call, Const, Operand, Var
from ..resolve import MISSING, Resolution, is_derivative_call, made_derivative
from ..source import call_signature, generated_function, library_function, own_function
from .call_forms import binding_advice
from .aliasing import VIEWING_FUNCTIONS, returns_alias, returns_same
from .forwarding import forwarded
from ..callees import MethodOfSelf, RecursiveCall, with_function_arguments
from .library import callable_object, python_function
from .naming import join_words
from .stores import views_a_new_array
from .syntax import EMPTY_MODULE, LIST_METHODS, attribute_path, item_of, literal_key, strip_parens, walk
from .unknown_callees import LocalCallee, UnknownMethod, no_rule_message


class CallLowering:
    """Calls: which function or rule applies, and how the arguments bind."""

    def call(self, node: cst.Call, target: str | None) -> Operand:
        """A call: lowered as what it is written for (``math.log(x, base)``: a quotient), else
        as one application of its callee to its arguments."""
        node = self.applied(node)  # through a functools.partial or frozen distribution made here
        desugared = self.product_into(node, target) or self.functional(node, target) or self.dict_view(
            node, target) or self.record(node, target) or self.formed(node, target)  # map, reduce, sorted;
        # P(a, b) of a named tuple; np.exp(x, dtype=np.float64) as np.exp(asarray(x, dtype=np.float64))
        if desugared is not None:
            return desugared
        if any(a.star for a in node.args):
            spread: list[cst.Arg] = []
            for a in node.args:
                spread += self.unstar(a, keep=self.fills_varargs(node, a, spread))
            node = node.with_changes(args=spread)
        if self.out_argument(node) is not None:  # np.sum(np.exp(a, out=z)): z = np.exp(a) first
            return self.lower(self.out_call(node), target)
        called = self.res.object(node.func)
        if called is runtime.call_object:  # generated code's x(...) of an object found as it runs
            node = node.with_changes(func=cst.Attribute(node.args[0].value, cst.Name("__call__")), args=node.args[1:])
        plain = not any(a.keyword or a.star for a in node.args)
        if (called is builtins.min or called is builtins.max) and plain and len(node.args) > 2:
            # max(a, b, c) as max((a, b, c)): tied arguments share the gradient equally
            items = cst.Tuple([cst.Element(a.value) for a in node.args], lpar=[cst.LeftParen()],
                              rpar=[cst.RightParen()])
            node = node.with_changes(args=[cst.Arg(items)])
        if called is math.log and plain and len(node.args) == 2:
            # math.log(x, base) is math.log(x) / math.log(base), as Python computes it
            x, base = (node.with_changes(args=[cst.Arg(a.value)], lpar=[], rpar=[]) for a in node.args)
            return self.binary(cst.BinaryOperation(x, cst.Divide(), base), target)
        if self.is_self(node.func) or self.makes_callable(node.func) or self.loop_item(node.func) or isinstance(
                strip_parens(node.func), cst.Subscript) or self.made_function(node.func):  # __call__
            node = node.with_changes(func=cst.Attribute(node.func, cst.Name("__call__")))
        if isinstance(strip_parens(node.func), cst.Lambda):  # (lambda z: z ** 2)(x)
            node = node.with_changes(func=self.anonymous_function(strip_parens(node.func)))
        func = node.func
        looked_up = self.dict_get(node)
        if looked_up is not None:
            return self.lower(looked_up, target)
        if isinstance(func, cst.Attribute) and func.attr.value in LIST_METHODS and isinstance(
                func.value, cst.Name) and func.value.value in self.res.locals:
            own_line = f"v = {func.value.value}.pop(...)" if func.attr.value == "pop" else \
                f"{func.value.value}.{func.attr.value}(...)"
            raise self.unsupported(node, f"'{func.value.value}.{func.attr.value}(...)' inside an "
                                         f"expression is not supported; call it on its own line ({own_line})")
        if isinstance(func, cst.Attribute) and func not in self.res.objects:
            callee = self.method_callee(node, func)
        else:
            node, callee = self.object_callee(node, func)
            node, callee = self.function_arguments(node, callee)
            callee = _Callee(forwarded(callee.key, node, len(callee.args)), callee.func, callee.args, callee.nodes)
        lowered = [(a, *(self.operand(a.value) if a.star != "*" else self.splat(a.value))) for a in node.args]
        args = callee.args + [op for a, op, _ in lowered if a.keyword is None]
        nodes = callee.nodes + [n for a, _, n in lowered if a.keyword is None]
        kwargs = {a.keyword.value: op for a, op, _ in lowered if a.keyword is not None}
        kw_nodes = {a.keyword.value: n for a, _, n in lowered if a.keyword is not None}
        primal = node.with_changes(func=callee.func, args=[a.with_changes(value=n) for a, _, n in lowered],
                                   lpar=[], rpar=[])
        word = (func.attr.value.strip("_") or "call") if isinstance(func, cst.Attribute) else (
            func.value if isinstance(func, cst.Name) else "call")
        return self.apply(callee.key, args, kwargs, primal, node, target, word, nodes, kw_nodes)

    def method_callee(self, node: cst.Call, func: cst.Attribute) -> _Callee:
        """``x.sum()``, with ``x`` a local expression: a method of NumPy arrays (or of ``self``),
        called with the value of ``x`` first."""
        found = self.super_receiver(func.value)
        if found is not None:  # super().loss(x): the method after the class, on the instance
            cls, instance, spelled = found
            if spelled is None:  # super(): the class spelled by a name bound to it
                spelled = cst.Name(self.fn.fresh(cls.__name__))
                self.fn.free[spelled.value] = cls
            rnode = cst.Call(cst.Name("super"), [cst.Arg(spelled), cst.Arg(cst.Name(instance))])
            key = MethodOfSelf(func.attr.value, self.location(node), after=cls, arity=_arity(node))
            return _Callee(key, func.with_changes(value=rnode), [Var(instance)], [cst.Name(instance)])
        receiver, rnode = self.operand(func.value)
        made = self.generators.get(receiver.name) if isinstance(receiver, Var) else None
        key = _array_method(func.attr.value) if made is None else vars(made).get(func.attr.value)
        if made is not None and self.registry.rule(key) is None:  # (rng.random(): no rule, nothing to bind)
            key = UnknownMethod(func.attr.value)
        if isinstance(key, UnknownMethod):
            # a method of self, or of an object computed here (``self.l1.forward(h)``, ``for
            # layer in self.layers: h = layer.forward(h)``, ``Quad(2.0).value(x)``): the code
            # generated for its class's method, chosen when the call runs
            # (where the receiver stands: where the call does, also when written ``layer.__call__`` here)
            key = MethodOfSelf(func.attr.value, self.location(func.value),
                               spelled=EMPTY_MODULE.code_for_node(func.value).strip(), arity=_arity(node))
            if self.replayed and isinstance(receiver, Var):  # (rs.randn(n), rs a generator passed in)
                where = self.location(node)
                self.run_time_check(runtime.check_replayable, [
                    rnode, cst.SimpleString(repr(f"{where.filename}:{where.line}:{where.column}"))],
                    (receiver.name,), where)
        return _Callee(key, func.with_changes(value=rnode), [receiver], [rnode])

    def super_receiver(self, value: cst.BaseExpression) -> tuple[type, str, cst.BaseExpression | None] | None:
        """For ``super()`` in a method (or ``super(C, obj)``, as generated code spells it): the
        class after which the method is looked up, the instance's variable, and the class as
        written (None for super()); else None."""
        if not (isinstance(value, cst.Call) and self.res.object(value.func) is builtins.super):
            return None
        fn = self.parsed.source.fn
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        params = self.res.params
        if not value.args and "__class__" in cells and params and self.version.get(params[0], params[0]) == params[0]:
            return cells["__class__"].cell_contents, params[0], None
        args = [a.value for a in value.args if not (a.keyword or a.star)]
        if len(args) == len(value.args) == 2 and isinstance(self.res.object(args[0]), type) and isinstance(
                args[1], cst.Name) and args[1].value in self.res.locals:
            return self.res.object(args[0]), self.version.get(args[1].value, args[1].value), self.rename(args[0])
        raise self.unsupported(value, "super() is differentiated in a method defined in a class body "
                                      "(its first parameter, not reassigned, is the instance); call "
                                      "the base class's function with the instance (Base.loss(self, x))")

    def object_callee(self, node: cst.Call, func: cst.BaseExpression) -> tuple[cst.Call, _Callee]:
        """A call of what a name or an attribute chain denotes, with the call (a nested
        function's gets the variables it reads as keyword arguments)."""
        key = self.res.object(func)
        fnode = self.rename(func)
        before: list[Operand] = []  # arguments that go before the call's own
        if self.registry.rule(key) is not None and _through_an_instance(func, self.res) \
                and not self.registry.applies_to_any_instance(key):
            # ``config.act(x)``: the generated code calls the function whose rule it
            # applies, bound by name, even if the attribute is rebound later (``rng.normal(x)``
            # reads rng as it runs: its class's rule holds for any generator)
            path = attribute_path(func)
            fnode = cst.Name(self.fn.fresh("_".join(path)))
            self.fn.free[fnode.value] = key
            base = func
            while isinstance(base, cst.Attribute):
                base = base.value
            root = self.res.object(base)
            if path and isinstance(root, types.ModuleType):
                self.fn.module_paths[fnode.value] = (root.__name__, path[0], ".".join(path[1:]))
        if isinstance(func, cst.Name) and func.value in self.local_functions:
            key = self.local_functions[func.value]
            node = self.with_closure_args(node, func.value)
        elif isinstance(func, cst.Name) and func.value in self.res.closures:  # g(v), g a caller's closure
            node, key, fnode = self.closure_call(node, func)
        elif key is MISSING and (derived := self.derivative(func)) is not None:
            # ``grad(fun)(x)`` in the differentiated code: the generated gradient is a
            # function with source like any other callee (differentiated at second order);
            # of a lambda or nested function, it takes the variables that reads as keywords
            made, nested = derived
            key = made
            node = node if nested is None else self.with_closure_args(node, nested)
            fnode = cst.Name(self.fn.fresh(getattr(made, "__name__", None) or made.func.__name__))  # (a method's: a partial)
            self.fn.free[fnode.value] = made
        elif key is MISSING:
            key = LocalCallee(self.parsed.code(func).strip(), self.binding(func),
                               self.res.object(func.func) if isinstance(func, cst.Call) else None,
                               isinstance(func, cst.Name) and func.value in self.res.params)
        elif isinstance(func, cst.Attribute) and isinstance(getattr(key, "__self__", None), np.ndarray):
            before.append(Const(self.parsed.code(func.value).strip()))
            key = _array_method(func.attr.value)
        elif self.registry.rule(key) is None and callable_object(key):
            # an object whose __call__ is written in Python: that method, the object first
            before.append(Const(EMPTY_MODULE.code_for_node(fnode).strip()))
            key = types.MethodType(type(key).__call__, key)
        elif (self.registry.rule(key) is None and isinstance(key, types.MethodType)
              and isinstance(key.__func__, types.FunctionType)):
            # a method of a constant object (a global, a closure, a class for a classmethod):
            # the object is the first argument of the method's function
            # (``ns.f`` may hold a method of another object than ``ns``: then ``ns.f.__self__``)
            spelled = fnode.value if isinstance(fnode, cst.Attribute) and self.res.object(
                func.value) is key.__self__ else cst.Attribute(fnode, cst.Name("__self__"))
            before.append(Const(EMPTY_MODULE.code_for_node(spelled).strip()))
        return node, _Callee(key, fnode, before, [None] * len(before))

    def function_arguments(self, node: cst.Call, callee: _Callee) -> tuple[cst.Call, _Callee]:
        """A Python function called with functions known here (a global function, a NumPy
        function, a lambda or nested function of this one): the call, its lambdas named, and
        the callee specialised to those functions (calls through them are direct calls)."""
        key = callee.key
        if type(key) is not types.FunctionType or python_function(key) is not key or callee.args or any(
                a.star for a in node.args) or self.registry.rule(key) is not None:  # (a primitive)
            if key is not runtime.bind_closure:  # (which binds a nested function to the values it reads)
                self.refuse_closures(node.args, set())
            return node, callee
        args = [a.with_changes(value=self.anonymous_function(strip_parens(a.value)))
                if isinstance(strip_parens(a.value), cst.Lambda) else a for a in node.args]
        made = not generated_function(key)  # (generated code passes a closure's values as data)
        known = {i: self.passed_closure(a.value, made) or self.known_function(strip_parens(a.value))
                 for i, a in enumerate(args)}
        known = {i: f for i, f in known.items() if f is not MISSING}
        signature = call_signature(key)
        try:
            bound = signature.bind_partial(
                *(i for i, a in enumerate(args) if a.keyword is None),
                **{a.keyword.value: i for i, a in enumerate(args) if a.keyword is not None})
        except TypeError:  # (refused with the call's own message)
            self.refuse_closures(node.args, set())
            return node, callee
        functions = {name: known[i] for name, i in bound.arguments.items() if isinstance(i, int) and i in known}
        self.refuse_closures(args, {i for i in bound.arguments.values() if isinstance(i, int)})
        args = [self.closure_values(a) for a in args]
        # a parameter the call leaves out, whose default is a function: that function
        functions.update((p.name, p.default) for p in signature.parameters.values()
                         if p.name not in bound.arguments and self.is_function(p.default))
        if not functions:
            return node, callee
        node = node.with_changes(args=args)
        return node, _Callee(with_function_arguments(key, functions), callee.func, callee.args, callee.nodes)

    def known_function(self, value: cst.BaseExpression) -> Any:
        """The function ``value`` denotes when it is known here: a nested function or lambda of
        this one, or a free name or attribute chain bound to a function; else MISSING."""
        if isinstance(value, cst.Name) and value.value in self.local_functions:
            # (one that reads this function's variables is refused where it is defined)
            return self.local_functions[value.value]
        found = self.res.object(value) if isinstance(value, (cst.Name, cst.Attribute)) else MISSING
        return found if self.is_function(found) else MISSING

    def is_function(self, value: Any) -> bool:
        """Whether ``value`` is a function s2sad can call as a constant: a Python function, a
        NumPy function or ufunc, or an object (not a class) with a rule."""
        try:
            return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, np.ufunc)) or (
                value is not MISSING and not isinstance(value, type) and self.registry.rule(value) is not None)
        except TypeError:  # (an unhashable value: no rule is keyed by it)
            return False

    def derivative(self, func: cst.BaseExpression) -> tuple[Any, str | None] | None:
        """The function ``grad(fun, ...)`` / ``value_and_grad(fun, ...)`` makes (see
        resolve.made_derivative) and, when ``fun`` is a lambda or a nested function of this
        one, its name; or None."""
        if not is_derivative_call(func, self.res):
            return None
        assert isinstance(func, cst.Call)
        fun = strip_parens(func.args[0].value)
        if isinstance(fun, cst.Lambda):
            fun = self.anonymous_function(fun)
        nested = fun.value if isinstance(fun, cst.Name) and fun.value in self.local_functions else None
        made = made_derivative(func.with_changes(args=[cst.Arg(fun), *func.args[1:]]), self.res, self.parsed.code,
                               lambda v: self.local_functions[nested] if nested else self.res.object(v))
        return None if made is None else (made, nested)

    def with_closure_args(self, node: cst.Call, nested: str) -> cst.Call:
        """A call of the nested function ``nested`` (or of its derivative), passed the
        variables of this function it reads as keywords."""
        return node.with_changes(args=[*node.args, *(
            cst.Arg(cst.Name(n), keyword=cst.Name(n), equal=cst.AssignEqual(
                cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
            for n in self.closure_args.get(nested, ()))])

    def binding(self, func: cst.BaseExpression) -> str | None:
        """What ``func``, a variable, is assigned, when the message about calling it can say
        more: "partial" (``functools.partial(...)``), "derivative" (``grad(lambda ...)``), "choice"
        (``f if c else g``, functions)."""
        if self.chosen_elsewhere(func):
            return "choice"
        calls = [v for v in (self.assigned_values(func.value) if isinstance(func, cst.Name) else [])
                 if isinstance(v, cst.Call)]
        if any(self.res.object(c.func) is functools.partial for c in calls):
            return "partial"
        return "derivative" if any(is_derivative_call(c, self.res) and (isinstance(
            strip_parens(c.args[0].value), cst.Lambda) or self.parsed.code(c.args[0].value).strip() in
            self.local_functions) for c in calls) else None

    def fills_varargs(self, node: cst.Call, arg: cst.Arg, before: list[cst.Arg]) -> bool:
        """Whether ``*t`` (``arg``, after the arguments ``before``) is the last positional
        argument of a call to a Python function, and is exactly its ``*args``."""
        func = node.func
        key = self.local_functions.get(func.value, MISSING) if isinstance(func, cst.Name) else MISSING
        key = self.res.object(func) if key is MISSING else key
        # (a function called directly: a method's instance would come first)
        if arg.star != "*" or not isinstance(key, (types.FunctionType, RecursiveCall)) or python_function(key) is None:
            return False
        params = call_signature(key).parameters.values()
        named = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        positional = [a for a in node.args if a.keyword is None and a.star != "**"]
        return any(p.kind is p.VAR_POSITIONAL for p in params) and positional[-1] is arg and sum(
            a.keyword is None for a in before) == named

    def splat(self, value: cst.BaseExpression) -> tuple["_Splat", cst.Name]:
        """``*t`` passed to a function's ``*args``: ``tuple(t)``, which the callee's
        ``*args`` is, differentiated by the rule of ``tuple``."""
        op, node = self.operand(value)
        packed = self.apply(builtins.tuple, [op], {}, cst.Call(cst.Name("tuple"), [cst.Arg(node)]),
                            value, None, "tuple", [node])
        return _Splat(packed.name), cst.Name(packed.name)

    def unstar(self, arg: cst.Arg, keep: bool = False) -> list[cst.Arg]:
        """``*t`` as ``t[0], t[1], ...`` when t's length is known; ``**{"k": v}`` as ``k=v``.
        ``keep``: a ``*t`` of a length not known here stays (it fills a function's ``*args``)."""
        value = strip_parens(arg.value)
        if arg.star == "":
            return [arg]
        if arg.star == "*" and isinstance(value, (cst.Tuple, cst.List)) and not any(
                isinstance(e, cst.StarredElement) for e in value.elements):
            return [cst.Arg(e.value) for e in value.elements]
        known = self.sizes.get(self.version.get(value.value, value.value)) if isinstance(
            value, cst.Name) and value.value in self.res.locals else None
        if arg.star == "*" and isinstance(known, int):
            return [cst.Arg(item_of(value, cst.Integer(str(k)))) for k in range(known)]
        if arg.star == "**" and isinstance(value, cst.Dict) and all(
                isinstance(e, cst.DictElement) and (literal_key(e.key) or "").isidentifier() for e in value.elements):
            return [cst.Arg(e.value, keyword=cst.Name(literal_key(e.key))) for e in value.elements]
        if arg.star == "**" and isinstance(known, tuple) and all(k.isidentifier() for k in known):
            return [cst.Arg(item_of(value, cst.SimpleString(repr(k))), keyword=cst.Name(k)) for k in known]
        if keep:
            return [arg]
        what = "a tuple or list whose length" if arg.star == "*" else "a dict display whose keys"
        splat = " (or, for a Python function's *args, that it is exactly them)" if arg.star == "*" else ""
        raise self.unsupported(arg, f"'{arg.star}' in a call needs {what} s2sad can see here (a "
                                    f"display, or a name assigned one at the function's top level){splat}; "
                                    f"pass the arguments one by one")

    def apply(self, key: Any, args: list[Operand], kwargs: dict[str, Operand],
              primal: cst.BaseExpression, node: cst.CSTNode, target: str | None, word: str,
              nodes: list[cst.CSTNode | None] | None = None,
              kw_nodes: dict[str, cst.CSTNode] | None = None) -> Operand:
        """Emit one primitive application; ``nodes`` are the arguments' nodes in ``primal``."""
        rule = self.registry.rule(key)
        callee = self.parsed.code(node.func).strip() if isinstance(node, cst.Call) else (
            rule.name if rule is not None else self.parsed.code(node).strip())
        problem = None
        slots: dict[str, cst.CSTNode] = {}
        if rule is not None:
            try:
                bound = rule.bind(args, kwargs, default=Const, pack=_pack)
                positions = rule.bind(list(range(len(args))), {k: k for k in kwargs},
                                      default=lambda code: None, pack=lambda items: None)
                all_nodes = {**dict(enumerate(nodes or [])), **(kw_nodes or {})}
                slots = {p: all_nodes[i] for p, i in positions.items()
                         if i is not None and all_nodes.get(i) is not None}
                out = bound.get("out")
                default = {p.name: p.default for p in rule.params}
                passed = [p for p in rule.unsupported
                          if not (isinstance(bound[p], Const) and bound[p].code == default[p])]
                if passed:
                    spelled = "" if any(p.star and p.name == passed[0] for p in rule.params) else f", {passed[0]}=..."
                    problem = f"{callee}(...{spelled}): {rule.unsupported[passed[0]]}"
                elif out is not None and not (isinstance(out, Const) and out.code == "None"):
                    problem = (f"{callee}(..., out=...) writes its result into an existing array, "
                               f"which s2sad does not follow; assign the result instead "
                               f"(y = {callee}(...))")
            except ValueError as exc:
                bound, problem = _positional(args, kwargs), binding_advice(callee, str(exc), set(kwargs), rule.fun)
        elif python_function(key) is not None:
            receiver = isinstance(key, (types.MethodType, MethodOfSelf))
            result = self.emit(self.user_call(python_function(key), callee, args, kwargs, primal, receiver),
                               target, _name_hint(word, args, False), node)
            self.note_callee_result(python_function(key), result.name, args, kwargs)
            return result
        else:
            bound = _positional(args, kwargs)
            problem = no_rule_message(key, callee, self.registry)
            if isinstance(key, LocalCallee) and isinstance(node, cst.Call) and self.local_reads(node.func):
                # what the callee is made from (``p = Poly(c)``, then ``p(x)``): a gradient
                # reaching it is refused at the call, never a silent zero
                bound["<callee>"] = Const(key.code, self.local_reads(node.func))
        call = Call(rule if problem is None else None, callee, bound, primal, problem, slots=slots)
        result = self.emit(call, target, _name_hint(word, args, isinstance(node, cst.BinaryOperation)), node)
        fun = rule.fun if rule is not None else key
        viewing = fun in VIEWING_FUNCTIONS or fun is np.meshgrid and not (  # (copy=False: views)
            isinstance(bound.get("copy"), Const) and bound["copy"].code == "True")
        if viewing and not views_a_new_array(node, self.res):
            self.views.add(result.name)
        if viewing or returns_same(fun, node):  # (the same array: as y = x)
            self.share(result.name, [op.name for op in bound.values() if isinstance(op, Var)])
        else:
            self.note_items(result.name, rule, bound)
        return result

    def note_callee_result(self, function: types.FunctionType, result: str, args: list[Operand],
                           kwargs: dict[str, Operand]) -> None:
        """What the result of a Python function may share: (a view of) an argument, or, a new
        list or dict, an argument's items (``return list(xs)``: checked as the code runs)."""
        names = [op.name for op in [*args, *kwargs.values()] if isinstance(op, Var)]
        if returns_alias(function):
            self.share(result, names)
        elif names:
            self.copied_from[result] = frozenset(names).union(
                *(self.copied_from.get(n, frozenset()) for n in names))

    def user_call(self, function: types.FunctionType, callee: str, args: list[Operand],
                  kwargs: dict[str, Operand], primal: cst.BaseExpression, receiver: bool = False) -> Call:
        """A call to a Python function: differentiated through that function's own adjoint
        (``receiver``: a method, called with the instance first)."""
        if isinstance(function, MethodOfSelf):  # a method of self: bound at run time
            return Call(None, callee, _positional(args, kwargs), primal, function=function,
                        receiver=receiver)
        signature = call_signature(function)
        # a recursive call in generated code: positional parameters by position (their
        # names are not known before the code is generated)
        position = {} if isinstance(function, types.FunctionType) else {
            p.name: str(i) for i, p in enumerate(signature.parameters.values())
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
        splat = [Var(op.name) for op in args if isinstance(op, _Splat)]  # f(a, *t): t fills *args
        args = [op for op in args if not isinstance(op, _Splat)]
        try:
            bound = signature.bind_partial(*args, **kwargs) if splat else signature.bind(*args, **kwargs)
        except TypeError as exc:
            return Call(None, callee, _positional(args, kwargs), primal, f"calling {callee}: {exc}")
        if splat:
            star = next(p.name for p in signature.parameters.values() if p.kind is p.VAR_POSITIONAL)
            bound.arguments[star] = splat[0]
        plain: dict[str, Operand] = {}
        for name, value in bound.arguments.items():
            if isinstance(value, (Var, Const)):  # (a splat: the callee's whole *args)
                plain[position.get(name, name)] = value
            else:  # *args or **kwargs: each value is the item of the callee's tuple or dict
                items = value.items() if isinstance(value, dict) else enumerate(value)
                plain.update((f"{name}[{key!r}]", op) for key, op in items)
        return Call(None, callee, plain, primal, function=function, receiver=receiver)

    def makes_callable(self, func: cst.BaseExpression) -> bool:
        """Whether ``func`` is ``C(...)``, or a local variable the function assigns only ``C(...)``,
        with ``C`` a class whose ``__call__`` is written in Python (called as ``func.__call__``)."""
        classes = self.made_classes(func)
        return bool(classes) and all(_python_call(c) for c in classes)

    def made_classes(self, node: cst.BaseExpression) -> list[type]:
        """The classes ``C`` of ``node`` if it is ``C(...)``, or a local variable the function
        assigns only ``C(...)``; else none."""
        def made(value: cst.BaseExpression) -> type | None:
            cls = self.res.object(value.func) if isinstance(value, cst.Call) else None
            return cls if isinstance(cls, type) else None
        if not (isinstance(node, cst.Name) and node.value in self.res.locals):
            return [c for c in [made(node)] if c is not None]
        found = self.made_by_name.get(node.value)
        if found is None:
            assigned, bound = self.name_bindings
            classes = [made(n.value) for n in assigned.get(node.value, []) if len(n.targets) == 1]
            only = node.value not in self.res.params and len(classes) == bound[node.value]
            found = self.made_by_name[node.value] = classes if only and None not in classes else []
        return list(found)

    @functools.cached_property
    def made_by_name(self) -> dict[str, list[type]]:
        """``made_classes`` of each local name asked so far."""
        return {}

    @functools.cached_property
    def name_bindings(self) -> tuple[dict[str, list[cst.Assign]], collections.Counter[str]]:
        """For each name: the body's ``=`` statements with a target that is the name, and how
        many times the body binds it (found once: operands of every line ask)."""
        assigned: dict[str, list[cst.Assign]] = {}
        bound: collections.Counter[str] = collections.Counter()
        for n in self.body_nodes:
            if isinstance(n, cst.Assign):
                for name in dict.fromkeys(t.target.value for t in n.targets if isinstance(t.target, cst.Name)):
                    assigned.setdefault(name, []).append(n)
            bound.update(t.value for t in _bound_by(n) if isinstance(t, cst.Name))
        return assigned, bound

    def assigned_values(self, name: str) -> list[cst.BaseExpression]:
        """The values of the body's ``=`` statements with a target that is ``name``."""
        return [n.value for n in self.name_bindings[0].get(name, [])]

    def made_function(self, func: cst.BaseExpression) -> bool:
        """Whether ``func`` is a local variable the function assigns only what Python functions
        return (``f = make_scaler(2.0)``): called as what it holds when the call runs, as a
        loop's item (a factory whose arguments carry a gradient is refused where it makes it)."""
        if not (isinstance(func, cst.Name) and func.value in self.res.locals) or func.value in self.res.params:
            return False
        assigned, bound = self.name_bindings
        made = [n.value for n in assigned.get(func.value, []) if len(n.targets) == 1]
        return bool(made) and len(made) == bound[func.value] and all(
            isinstance(v, cst.Call) and python_function(self.res.object(v.func)) is not None
            and not own_function(self.res.object(v.func)) for v in made)  # (not what grad(...) makes)

    def loop_item(self, func: cst.BaseExpression) -> bool:
        """Whether ``func`` is a name bound only as a for loop's item (``for layer in self.layers:
        x = layer(x)``), not a nested function: what it holds (an object whose ``__call__`` is
        written in Python, a function, a lambda, a ufunc) is known only as the call runs."""
        return isinstance(func, cst.Name) and func.value in self.loop_items and func.value not in self.local_functions

    def is_self(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` is the instance parameter of a method: its first, named ``self`` (in
        code generated for a method, after the incoming gradient: ``vjp_f(dvalue, self, h)``)."""
        params = self.res.params
        first = params[0] if params and not self.generated() else next((p for p in params if p == "self"), None)
        return isinstance(node, cst.Name) and node.value == "self" and first == "self" \
            and self.version.get("self", "self") == "self"


@dataclass(frozen=True)
class _Callee:
    """What a call calls (a rule's key, a Python function, or what no rule applies to), the
    callee as the generated code spells it, and the arguments that go before the call's own
    (a method's receiver), with their nodes in the call."""

    key: Any
    func: cst.BaseExpression
    args: list[Operand]
    nodes: list[cst.CSTNode | None]


@dataclass(frozen=True)
class _Splat(Var):
    """A tuple passed as ``*name``: a called Python function's ``*args``."""


def _array_method(name: str) -> Any:
    """The method ``name`` of NumPy arrays, or an UnknownMethod: looked up in the dicts of the
    class and its bases, as an instance finds it (``getattr`` on the class would find the
    metaclass's ``type.__call__`` for ``__call__``)."""
    return next((vars(c)[name] for c in np.ndarray.__mro__ if name in vars(c)), UnknownMethod(name))


def _bound_by(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The names (or targets holding names) a statement or expression binds."""
    if isinstance(node, cst.AssignTarget):
        return [n for n in walk(node.target) if isinstance(n, cst.Name)]
    if isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
        return [node.target]
    if isinstance(node, (cst.For, cst.CompFor)):
        return [n for n in walk(node.target) if isinstance(n, cst.Name)]
    if isinstance(node, cst.AsName):
        return [n for n in walk(node.name) if isinstance(n, cst.Name)]
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return [node.name]
    return []


def _python_call(cls: type) -> bool:
    """Whether instances of ``cls`` have a ``__call__`` written in Python, not library code."""
    call = inspect.getattr_static(cls, "__call__", None)
    return isinstance(call, types.FunctionType) and not library_function(call)


def _arity(node: cst.Call) -> tuple[int, tuple[str, ...]] | None:
    """How many positional arguments a call passes, and its keywords (None: with * or **)."""
    if any(a.star for a in node.args):
        return None
    return sum(a.keyword is None for a in node.args), tuple(a.keyword.value for a in node.args if a.keyword)


def _positional(args: list[Operand], kwargs: dict[str, Operand]) -> dict[str, Operand]:
    return {**{str(i): a for i, a in enumerate(args)}, **kwargs}


def _pack(ops: list[Operand]) -> Const:
    codes = [o.name if isinstance(o, Var) else o.code for o in ops]
    reads = tuple(n for o in ops for n in ((o.name,) if isinstance(o, Var) else o.reads))
    return Const("(" + "".join(c + ", " for c in codes) + ")" if codes else "()", reads)


def _name_hint(word: str, args: list[Operand], binop: bool) -> list[str]:
    """Candidate names for a temporary, best first: ``x_mul_y``, ``exp_z``, ``sum``."""
    names = [a.name if isinstance(a, Var) else a.code if a.code.isdigit() else "" for a in args]
    if binop:
        left, right = (names + ["", ""])[:2]
        candidates = [join_words(left, word, right), join_words(left, word), join_words(word, right)]
    else:
        candidates = [join_words(word, names[0] if names else "")]
    return [c for c in candidates if c and len(c) <= 16] + [word]


def _through_an_instance(node: cst.BaseExpression, res: Resolution) -> bool:
    """Whether an attribute chain reaches its object through an object that is neither a
    module nor a class (a configuration object, a model), whose attributes may be rebound."""
    while isinstance(node, cst.Attribute):
        base = res.object(node.value)
        if base is not MISSING and base is not None and not isinstance(base, (types.ModuleType, type)):
            return True
        node = node.value
    return False
