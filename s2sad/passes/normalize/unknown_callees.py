"""Calls no rule or generated code applies to (a local variable called, an unknown method,
a library function without a rule): what they are, and the message that says what to write."""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any

from ..source import library_function, wrapping
from .partials import frozen_method_advice


class LocalCallee:
    """A call through a local variable (or an unbound name): no rule can apply."""

    def __init__(self, code: str, binding: str | None = None, maker: Any = None, parameter: bool = False) -> None:
        self.code = code
        self.binding = binding  # what the variable is assigned, if told apart (CallLowering.binding)
        self.maker = maker  # a call's result called (np.vectorize(f)(x)): what made it
        self.parameter = parameter  # a parameter of the function, called


class UnknownMethod:
    """An attribute or method that is neither a NumPy array's nor followed otherwise: no rule
    can apply."""

    def __init__(self, name: str) -> None:
        self.name = name


def no_rule_message(key: Any, callee: str, registry: Any) -> str:
    """Why no gradient rule applies to ``key``, called as ``callee``, and what to write instead."""
    why = registry.refusal(key.maker if isinstance(key, LocalCallee) else key)
    if why is not None:
        return f"'{callee}': {why}"
    if isinstance(key, LocalCallee) and key.binding == "partial":
        return (f"'{callee}' is a functools.partial made in the differentiated function: call the "
                f"function it wraps, with the arguments it binds written out")
    if isinstance(key, LocalCallee) and key.binding == "derivative":
        return (f"'{callee}' is bound to the gradient of a lambda or nested function in a loop or "
                f"branch this call is after, which s2sad does not follow: bind it in the block where "
                f"it is called, or write grad(lambda v: ...)(x) at the call")
    if isinstance(key, LocalCallee) and key.binding == "choice":
        return (f"'{callee}' is bound to a function chosen by a conditional expression in a loop, branch "
                f"or block, which s2sad does not follow: bind it once, at the top level of the function "
                f"({callee} = f if c else g), or write the choice at the call (f(x) if c else g(x))")
    if isinstance(key, LocalCallee) and isinstance(key.maker, type):
        return (f"'{callee}' calls an instance of {key.maker.__qualname__} made in the function, "
                f"whose __call__ s2sad does not follow there; call a function by its name, or a "
                f"method of the object (obj.method(x))")
    if isinstance(key, type) and _python_init(key):
        return (f"'{callee}(...)' builds an instance of {key.__qualname__} from values that carry a "
                f"gradient, and s2sad passes no gradient through an object's attributes (objects are "
                f"constants); pass the arrays that carry a gradient to its methods as arguments "
                f"(layer.forward(W, x)), and build it from constants only")
    if isinstance(key, LocalCallee) and key.parameter:
        return (f"'{callee}' is a parameter called as a function, and s2sad does not know which "
                f"function it holds: a function passed as an argument is followed when the caller "
                f"passes it by name (a module-level function, a NumPy function, a lambda or a "
                f"function defined in the caller), not through a variable or a container; pass the "
                f"function itself (apply(np.tanh, x)), or differentiate a function that calls it by name")
    if isinstance(key, LocalCallee):
        return (f"'{callee}' is a local variable (or an unknown name), so s2sad cannot know which "
                f"function it calls; call the function by its global name, or bind the name once, "
                f"at the top of the function, to a function (act = np.tanh)")
    if isinstance(key, UnknownMethod):
        return (f"'.{key.name}' is not a NumPy array method or attribute s2sad can differentiate; "
                f"wrap the value in stop_gradient(...) if no gradient should flow through it (a "
                f"method of your own class is followed when called on self, or on an object "
                f"bound at module level)")
    if frozen_method_advice(key) is not None:
        return f"'{callee}' {frozen_method_advice(key)}"
    if isinstance(key, functools.partial):
        return (f"'{callee}' is a functools.partial: inside the differentiated function, call the "
                f"function it wraps, with the arguments it binds written out")
    if library_function(key):
        return (f"no gradient rule for '{callee}', which is library code ({key.__module__}): s2sad "
                f"never differentiates through a library's source; register a rule with "
                f"s2sad.defvjp, or wrap the call in stop_gradient(...) if no gradient should flow "
                f"through it")
    return (f"no gradient rule for '{callee}'{wrapping(key)}; register one with s2sad.defvjp, or wrap the call "
            f"in stop_gradient(...) if no gradient should flow through it")


def _python_init(cls: type) -> bool:
    """Whether ``cls`` is a class with an ``__init__`` written in Python, not library code."""
    init = inspect.getattr_static(cls, "__init__", None)
    return isinstance(init, types.FunctionType) and not library_function(init)
