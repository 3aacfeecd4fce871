"""The public extension API: rules for the user's own primitives."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Union

from .errors import RuleError
from .rules.registry import REGISTRY, USER_OBJECTS, Rule

RuleSpec = Union[str, Callable[..., Any], None]


def defvjp(fun: Callable[..., Any], *vjps: RuleSpec, jvp: dict[str, RuleSpec] | None = None,
           **named: RuleSpec) -> Rule:
    """Declare the gradient of ``fun``, one rule per parameter; s2sad then never reads fun's code.

    A rule is the adjoint for that parameter, given positionally (in ``fun``'s parameter
    order) or by parameter name, either as a template string written as the math in
    ``g`` (the incoming gradient), ``ans`` (fun's result), the parameters and ``np``::

        s2sad.defvjp(softplus, "g * (1 - np.exp(-ans))")

    or as a Python function ``rule(g, ans, *args)``; ``None`` means no gradient (the result
    is piecewise constant in it, or reads only its shape).  A parameter given no rule at all
    refuses, with a located error, a value that carries a gradient.
    ``jvp`` maps parameter names to forward-mode rules (templates in ``t``, the
    parameter's tangent, or functions ``rule(t, ans, *args)``).  Declare rules before
    differentiating code that calls ``fun``: generated code is cached.
    """
    REGISTRY.user_declared = True
    params = _parameters(fun)
    if len(vjps) > len(params):
        raise RuleError(f"{fun.__qualname__} has {len(params)} parameters, got {len(vjps)} rules")
    rules = {**dict(zip(params, vjps)), **named}
    unknown = set(rules) - set(params)
    if unknown:
        raise RuleError(f"{fun.__qualname__} has no parameter {sorted(unknown)[0]!r}")
    spec = ", ".join(f"{n}={d}" if d is not None else n for n, d in params.items())
    templates: dict[str, Any] = {p: None if r is None else _template(fun, p, r, "g", list(params))
                                 for p, r in rules.items()}
    tangents = {p: _template(fun, p, r, "t", list(params)) for p, r in (jvp or {}).items()
                if r is not None}
    return REGISTRY.defvjp(fun, spec, name=fun.__qualname__, jvp=tangents or None, check=True, **templates)


def nondifferentiable(fun: Callable[..., Any]) -> Callable[..., Any]:
    """Declare ``fun`` as having no gradient (its result is a constant); usable as a decorator."""
    REGISTRY.user_declared = True
    REGISTRY.declare_nondifferentiable(fun)
    return fun


def rule_function(name: str) -> Callable[..., Any]:
    """The Python function given to :func:`defvjp` that generated code calls as ``name``
    (a module written by ``s2sad --output`` looks its rules' functions up this way)."""
    try:
        fun: Callable[..., Any] = USER_OBJECTS[name]
    except KeyError:
        raise RuleError(f"no rule function named {name!r} is declared: import the module whose "
                        f"s2sad.defvjp calls declare it first") from None
    return fun


def _parameters(fun: Callable[..., Any]) -> dict[str, str | None]:
    """Parameter names and their defaults as code (None: required)."""
    try:
        signature = inspect.signature(fun)
    except (TypeError, ValueError):
        raise RuleError(f"cannot read the parameters of {fun!r}") from None
    out: dict[str, str | None] = {}
    for p in signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise RuleError(f"{fun.__qualname__} takes *args or **kwargs; give it named parameters")
        out[p.name] = None if p.default is p.empty else repr(p.default)
    return out


def _template(fun: Callable[..., Any], param: str, rule: RuleSpec, seed: str,
              params: list[str]) -> str:
    if isinstance(rule, str):
        return rule
    if not callable(rule):
        raise RuleError(f"the rule for {param!r} of {fun.__qualname__} must be a template string, "
                        f"a function or None")
    name = f"{fun.__name__}_{'vjp' if seed == 'g' else 'jvp'}_{param}"
    base, n = name, 1
    while name in USER_OBJECTS and USER_OBJECTS[name] is not rule:
        n += 1
        name = f"{base}_{n}"
    USER_OBJECTS[name] = rule
    return f"{name}({seed}, ans, {', '.join(params)})"
