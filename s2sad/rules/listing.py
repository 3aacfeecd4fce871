"""The lists of differentiable and non-differentiable functions, rendered from the registry.

``rules_markdown()`` is the block of README.md between ``<!-- rules:begin -->``
and ``<!-- rules:end -->``; ``python -m s2sad.rules.listing README.md`` rewrites
that block (and nothing else) after rules change.
"""
from __future__ import annotations

import builtins
import importlib.util
import math
import operator
import sys
import types
from typing import Any

import numpy as np

from .. import runtime
from .numpy_rules import NONDIFF_ATTRIBUTES
from .registry import APPEND, REGISTRY, SETITEM, Primitive, Registry

BEGIN, END = "<!-- rules:begin -->", "<!-- rules:end -->"

#: Python operators as they are written.
OPERATORS: dict[Any, str] = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.neg: "-x", operator.pos: "+x", operator.getitem: "x[i]", operator.lt: "<",
    operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==",
    operator.ne: "!=", operator.not_: "not", operator.and_: "&", operator.or_: "|",
    operator.xor: "^", operator.invert: "~",
}
CONTAINERS: dict[Any, str] = {APPEND: "xs.append(x)", SETITEM: "x[i] = v"}

#: The groups, in the order they are listed, and where their names are looked up.
GROUPS: list[tuple[str, Any, str]] = [  # (title, namespace, prefix of the names)
    ("operators", None, ""),
    ("numpy", np, "np."),
    ("numpy methods", np.ndarray, "x."),
    ("np.linalg", np.linalg, "np.linalg."),
    ("np.fft", np.fft, "np.fft."),
    ("np.random", np.random, "np.random."),
    ("np.random.Generator methods", np.random.Generator, "rng."),
    ("np.random.RandomState methods", np.random.RandomState, "rng."),
    ("math", math, "math."),
    ("builtins", builtins, ""),
    ("containers", None, ""),
    ("s2sad", runtime, ""),
]
#: SciPy's groups, listed when SciPy is installed.
SCIPY_GROUPS = ("special", "stats", "linalg", "signal", "fft", "integrate", "ndimage")
if importlib.util.find_spec("scipy") is not None:
    _AT = GROUPS.index(("builtins", builtins, ""))
    GROUPS[_AT:_AT] = [(f"scipy.{name}", importlib.import_module(f"scipy.{name}"), f"scipy.{name}.")
                       for name in SCIPY_GROUPS]


def _names(fun: Any) -> tuple[str, list[str]]:
    """The group ``fun`` is listed in and the names it goes by there."""
    if isinstance(fun, Primitive):
        return "containers", [CONTAINERS.get(fun, fun.name)]
    for op, symbol in OPERATORS.items():
        if fun is op:
            return "operators", [symbol]
    for title, namespace, prefix in GROUPS:
        if namespace is None:
            continue
        names = [name for name, value in vars(namespace).items()
                 if value is fun and not name.startswith("_")]
        if not names and isinstance(fun, (types.MethodType, types.BuiltinMethodType)):
            # scipy.stats.norm.logpdf: norm's logpdf; np.add.reduce: np.add's reduce
            names = [f"{name}.{fun.__name__}" for name, value in vars(namespace).items()
                     if value is fun.__self__ and not name.startswith("_")]
        if namespace is np.ndarray:
            names = [f"{n}()" if callable(fun) else n for n in names]
        if namespace is runtime and names and fun is not runtime.stop_gradient:
            title = "s2sad.runtime (generated code's helpers)"
            prefix = f"{namespace.__name__}."
        if names:
            return title, [prefix + n for n in names]
    return "other", [getattr(fun, "__qualname__", repr(fun))]


def _grouped(funs: list[Any], extra: dict[str, list[str]] | None = None) -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = {}
    for fun in funs:
        title, names = _names(fun)
        groups.setdefault(title, []).extend(names)
    for title, names in (extra or {}).items():
        groups.setdefault(title, []).extend(names)
    order = [title for title, _, _ in GROUPS]
    titles = sorted(groups, key=lambda t: (order.index(t) if t in order else len(order), t))
    operator_order = list(OPERATORS.values())
    out = []
    for title in titles:
        names = sorted(set(groups[title]), key=lambda n: (
            operator_order.index(n) if title == "operators" else 0, n.lower(), n))
        out.append((title, names))
    return out


def rules_markdown(registry: Registry = REGISTRY) -> str:
    """The lists of differentiable and non-differentiable functions, as Markdown."""
    from . import BUILTIN_NONDIFF, BUILTIN_RULES  # the shipped rules, not users' additions

    builtin = BUILTIN_RULES
    if importlib.util.find_spec("scipy") is not None:
        from .scipy_rules import BUILTIN_RULES as SCIPY_RULES

        builtin = builtin | SCIPY_RULES
    shipped = [rule for key, rule in registry.rules.items() if key in builtin]
    diff = [rule.fun for rule in shipped if rule.differentiable()]
    refused = [rule.fun for rule in shipped if not rule.differentiable()]  # (the other samplers)
    nondiff = [fun for key, fun in registry.nondiff.items() if key in BUILTIN_NONDIFF]
    lines = [
        f"Generated from the rule registry (`s2sad.rules.listing.rules_markdown()`): "
        f"{len(diff)} functions with a gradient rule, {len(refused)} whose arguments carry no "
        f"gradient, {len(nondiff)} declared non-differentiable.",
        "",
        "**Differentiable**",
        "",
    ]
    lines += [f"- {title}: {', '.join(f'`{n}`' for n in names)}" for title, names in _grouped(diff)]
    lines += ["", "**Refused** (a value that carries a gradient passed to their data arguments is an error "
                  "that says what to write instead; with constant arguments they are constants)", ""]
    lines += [f"- {title}: {', '.join(f'`{n}`' for n in names)}" for title, names in _grouped(refused)]
    lines += ["", "**Non-differentiable** (their results carry no gradient)", ""]
    attributes = {"numpy methods": [f"x.{a}" for a in sorted(NONDIFF_ATTRIBUTES)]}
    lines += [f"- {title}: {', '.join(f'`{n}`' for n in names)}"
              for title, names in _grouped(nondiff, attributes)]
    return "\n".join(lines) + "\n"


def update_readme(path: str) -> bool:
    """Rewrite the rules block of the README at ``path``; True if it changed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, _, rest = text.partition(BEGIN + "\n")
    _, _, tail = rest.partition(END)
    new = head + BEGIN + "\n" + rules_markdown() + END + tail
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print("updated" if update_readme(sys.argv[1]) else "up to date")
    else:
        print(rules_markdown(), end="")
