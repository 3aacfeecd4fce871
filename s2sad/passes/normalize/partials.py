"""Functions with arguments bound inside the function: ``f = functools.partial(g, a, k=v)``
and scipy's frozen distributions, ``d = st.norm(mu, s)``.  The bound arguments are computed
where the binding stands (as Python does) and held in temporaries; each call through the
name is lowered as the call it stands for, ``g(a, x, k=v)`` or ``st.norm.logpdf(x, mu, s)``,
so gradients flow through the bound arguments like through any other."""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import numpy as np

from ..resolve import MISSING, is_derivative_call
from .syntax import EMPTY_MODULE, store_names, strip_parens, variable_name_nodes, walk

#: methods of a frozen distribution that take the point first, then the distribution's arguments
POINT_METHODS = frozenset({"pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf", "pmf", "logpmf"})
#: methods of a frozen distribution that take only the distribution's arguments
SUMMARY_METHODS = frozenset({"mean", "var", "std", "median", "entropy"})


@dataclass
class Application:
    """What a name bound to a partial application calls, with the arguments bound."""

    func: cst.BaseExpression  # the function (a partial's) or the distribution (a frozen one's)
    distribution: Any  # the scipy distribution object, for a frozen one; else None
    args: list[cst.Arg] = field(default_factory=list)  # the bound arguments, as temporaries
    keywords: list[cst.Arg] = field(default_factory=list)


class PartialApplications:
    """Lowering ``functools.partial`` and frozen scipy distributions made in the function."""

    def bind_application(self, name: str, value: cst.BaseExpression) -> bool:
        """``name = functools.partial(g, ...)`` or ``name = st.norm(...)``: record what calls
        through ``name`` call, its arguments computed here; False for any other assignment."""
        value = strip_parens(value)
        if self.bind_derivative(name, value):
            return True
        if not (isinstance(value, cst.Call) and (self.res.object(value.func) is functools.partial
                                                 or _is_distribution(self.res.object(value.func)))):
            return False
        distribution = self.res.object(value.func) is not functools.partial
        if self.out is not self.fn.body:
            raise self.unsupported(value, f"a {_kind(distribution)} is followed when made at the top "
                                          f"level of the function (not in a loop, branch or block); "
                                          f"make it there, or write the call it stands for")
        self.only_called(name, f"a {_kind(distribution)} made in the function", _called_as(name, distribution),
                         "write the call it stands for there")
        self.record_application(name, value)
        return True

    def record_application(self, name: str, value: cst.Call) -> None:
        """Calls through ``name`` from here on call what ``value`` applies, its arguments computed here."""
        held = [r for a in value.args if isinstance(strip_parens(a.value), (cst.Name, cst.Attribute, cst.Subscript))
                for r in self.local_reads(a.value)]  # (the objects it holds: arrays changed in place later)
        application = self.application(value)
        new = self.new_version(name)
        self.version[name] = new  # (which holds no value: calls through it are lowered as what they call)
        self.applications[new] = application
        self.share(new, held)

    def partial_argument(self, value: cst.Call) -> cst.Name:
        """``functools.partial(g, a)`` passed to ``map`` or ``functools.reduce``: its arguments
        computed where it stands (as Python does), the calls the lowering writes made through
        a fresh name, each lowered as ``g(a, ...)``."""
        name = self.fn.fresh("partial_fn")
        self.record_application(name, value)
        return cst.Name(name)

    def bind_derivative(self, name: str, value: cst.BaseExpression) -> bool:
        """``name = grad(lambda v: ..., ...)`` (or of a nested function): each call through
        ``name`` is lowered as ``grad(lambda v: ...)(x)`` written where it stands, which reads
        the lambda's variables when called, as Python's closure does; False for any other."""
        if not is_derivative_call(value, self.res) or self.local_reads(cst.Call(value.func, value.args[1:])):
            return False  # (options read where the call stands: Python computes them here)
        fun = strip_parens(value.args[0].value)
        if not (isinstance(fun, cst.Lambda) or isinstance(fun, cst.Name) and fun.value in self.local_functions):
            return False
        self.only_called(name, "bound to the gradient of a lambda or nested function", f"{name}(x)",
                         "write grad(...)(x) there")
        new = self.new_version(name)
        self.version[name] = new  # (which holds no value: calls through it are the derivative's calls)
        self.applications[new] = Application(value, None)
        return True

    def only_called(self, name: str, what: str, called: str, instead: str) -> None:
        """Refuse a use of ``name`` (``what`` it is) other than the calls through it."""
        misuse = self.use_beyond_applications(name)
        if misuse is not None:
            raise self.unsupported(misuse, f"'{name}' is {what}, which s2sad follows where it is called "
                                           f"({called}) and nowhere else (assigned again, passed on, read in a "
                                           f"nested function); {instead}")

    def application(self, value: cst.Call) -> Application:
        """The application ``value`` makes, its arguments computed here."""
        made = self.res.object(value.func)
        if any(a.star for a in value.args) or made is functools.partial and (not value.args or value.args[0].keyword):
            raise self.unsupported(value, "functools.partial is followed with the function first and "
                                          "no *args or **kwargs; call the function with its arguments written out")
        args = list(value.args if made is not functools.partial else value.args[1:])
        func = value.func if made is not functools.partial else self.applied_function(value.args[0].value)
        return Application(func, None if made is functools.partial else made,
                           [cst.Arg(self.held_value(a.value)) for a in args if a.keyword is None],
                           [cst.Arg(self.held_value(a.value), keyword=a.keyword, equal=a.equal)
                            for a in args if a.keyword is not None])

    def applied_function(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """The function a partial binds, as the calls through it name it."""
        node = strip_parens(node)
        if isinstance(node, cst.Lambda):
            return self.anonymous_function(node)
        if isinstance(node, cst.Name) and node.value in self.local_functions:
            return node
        if self.local_reads(node) or self.res.object(node) is MISSING:
            raise self.unsupported(node, "the function a functools.partial made in the function binds "
                                         "must be known where the partial is made (a module-level or "
                                         "nested function, a lambda, a NumPy function); call it directly")
        return node

    def held_value(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """A bound argument: as written if it reads no local variable, else a temporary."""
        node = strip_parens(node)
        return node if not self.local_reads(node) else cst.Name(
            self.lower(node, self.temporary(self.hint(node)), "").name)

    def applied(self, node: cst.Call) -> cst.Call:
        """``node`` as the call it stands for when it calls through a partial application:
        ``g(a, x, k=v)``, ``st.norm.logpdf(x, mu, s)``, ``st.norm(mu, s).logpdf(x)``; else ``node``."""
        func = strip_parens(node.func)
        if isinstance(func, cst.Name) and self.version.get(func.value) in self.applications:
            bound = self.applications[self.version[func.value]]
            if bound.distribution is None:
                return node.with_changes(func=bound.func, args=_merged(bound, node.args))
            raise self.unsupported(func, f"'{func.value}' is a frozen scipy.stats distribution, which "
                                         f"is not callable; call one of its methods ({func.value}.logpdf(x))")
        if not isinstance(func, cst.Attribute):
            return node
        receiver = strip_parens(func.value)
        if isinstance(receiver, cst.Name) and self.version.get(receiver.value) in self.applications:
            bound = self.applications[self.version[receiver.value]]
        elif isinstance(receiver, cst.Call) and _is_distribution(self.res.object(receiver.func)):
            bound = self.application(receiver)  # st.norm(mu, s).logpdf(x)
        else:
            return node
        method = func.attr.value
        if bound.distribution is None or method not in POINT_METHODS | SUMMARY_METHODS:
            raise self.unsupported(func, f"'.{method}' of a {_kind(bound.distribution is not None)} made "
                                         f"in the function is not followed; call "
                                         f"{EMPTY_MODULE.code_for_node(bound.func).strip() if bound.distribution is not None else 'the function'}."
                                         f"{method}(...) with the distribution's arguments written out")
        called = cst.Attribute(bound.func, cst.Name(method))
        self.res.objects[called] = getattr(bound.distribution, method)
        return node.with_changes(func=called, args=_merged(bound, node.args))

    def use_beyond_applications(self, name: str) -> cst.Name | None:
        """A use of ``name`` other than one assignment, calls of it and of its methods, and
        ``map(name, xs)`` or ``functools.reduce(name, xs)`` (which call it), in the function
        itself (not in a nested function, compiled on its own); or None."""
        body = self.parsed.function.body
        nested = {id(n) for f in self.body_nodes if isinstance(f, (cst.FunctionDef, cst.Lambda)) for n in walk(f)}
        uses = [n for n in variable_name_nodes(body) if n.value == name]
        stored = [n for n in uses if id(n) in store_names(body)]
        if len(stored) > 1:
            return stored[1]
        calls = [n for n in self.body_nodes if isinstance(n, cst.Call)]
        passed = {id(strip_parens(c.args[0].value)) for c in calls if c.args and not c.args[0].keyword
                  and not c.args[0].star and any(self.res.object(c.func) is f for f in (map, functools.reduce))}
        calls = [strip_parens(c.func) for c in calls]
        fine = {id(f) for f in calls} | {id(strip_parens(f.value)) for f in calls if isinstance(f, cst.Attribute)}
        fine |= passed
        return next((n for n in uses if id(n) in nested or id(n) not in fine | {id(s) for s in stored}), None)


def _merged(bound: Application, args: list[cst.Arg] | tuple[cst.Arg, ...]) -> list[cst.Arg]:
    """The arguments of a call through ``bound``: a partial's bound ones first, a frozen
    distribution's after the point; keywords of the call replace bound ones, as in Python."""
    positional = [a for a in args if a.keyword is None]
    keywords = [a for a in args if a.keyword is not None]
    given = {a.keyword.value for a in keywords}
    kept = [a for a in bound.keywords if a.keyword.value not in given]
    first, then = (bound.args, positional) if bound.distribution is None else (positional, bound.args)
    return [*first, *then, *kept, *keywords]


def _is_distribution(value: Any) -> bool:
    """Whether ``value`` is one of scipy.stats' distributions (``st.norm``,
    ``st.multivariate_normal``), which calling freezes."""
    stats = sys.modules.get("scipy.stats")
    if stats is None:
        return False
    # the multivariate ones share a base class that scipy.stats does not export
    return (isinstance(value, (stats.rv_continuous, stats.rv_discrete))
            or any(cls.__name__ == "multi_rv_generic" for cls in type(value).__mro__))


def frozen_method_advice(method: Any) -> str | None:
    """What to write instead of a method of a frozen scipy.stats distribution made outside the
    function (``PRIOR.logpdf``), whose arguments are data s2sad does not compile; else None."""
    frozen = getattr(method, "__self__", None)
    dist = getattr(frozen, "dist", None)
    if not (_is_distribution(dist) and isinstance(getattr(frozen, "args", None), tuple)):
        return None
    bound = [repr(a) if np.ndim(a) == 0 else "..." for a in frozen.args]
    bound += [f"{k}={v!r}" if np.ndim(v) == 0 else f"{k}=..." for k, v in getattr(frozen, "kwds", {}).items()]
    return (f"is a method of a frozen scipy.stats distribution, which s2sad follows when it is made in "
            f"the function; call the distribution's function with its arguments: "
            f"scipy.stats.{dist.name}.{method.__name__}(x, {', '.join(bound)})")


def _kind(distribution: bool) -> str:
    return "frozen scipy.stats distribution" if distribution else "functools.partial"


def _called_as(name: str, distribution: bool) -> str:
    return f"{name}.logpdf(x), {name}.mean()" if distribution else f"{name}(x)"
