"""``s2sad explain``: the activity analysis made visible, line by line."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable

from .compiler import Wrt, build, target, wrt_names
from .passes.source import read_source

if TYPE_CHECKING:
    from .ir import Return


def explain(f: Callable[..., Any], wrt: Wrt = 0) -> str:
    """For each source line of ``f``: active, inactive, or stopped by stop_gradient,
    and what the generated gradient saves per loop iteration."""
    # the compiler (and libcst) load on first use, not with ``import s2sad``
    from .ir import Assign, If, Loop, Opaque, Return, statements
    from .pipeline import PIPELINE, State

    called = target(f, wrt)  # a method's or a partial's function, what they bind constant
    fn = called.fn
    read_source(fn)
    names, multiple = wrt_names(fn, called.wrt)
    state = State(fn, names, multiple, "grad", build=build)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in PIPELINE:
            if p.name == "codegen":
                break
            p.run(state)
    act, src = state.activity, state.source
    lines: dict[int, list[str]] = {}
    for stmt in statements(state.ir.body):
        loc = stmt.loc
        if isinstance(stmt, Assign):
            if isinstance(stmt.value, Opaque) and stmt.value.kind == "stopped":
                label = "stopped"
            elif any(t in act.active for t in stmt.targets):
                label = "active"
            else:
                label = "inactive"
        elif isinstance(stmt, Return):
            label = "active" if any(n in act.active for n in _reads(stmt)) else "inactive"
        else:
            label = "control"
        lines.setdefault(loc.line, []).append(label)
    width = len(str(src.first_line + len(src.file_lines)))
    out = [f"{src.filename}:{src.first_line}: {fn.__qualname__}, gradient with respect to "
           f"{', '.join(names)}"]
    for i, text in enumerate(src.file_lines):
        number = src.first_line + i
        labels = lines.get(number)
        if not labels or not text.strip():
            continue
        label = next(k for k in ("active", "control", "inactive", "stopped") if k in labels)
        label = "inactive" if label == "stopped" else label
        note = "   # stop_gradient: no adjoint for its argument" if "stopped" in labels else ""
        out.append(f"  {number:>{width}}  {label:<9} {text.rstrip()}{note}")
    saving = [s for s in statements(state.adjoint.forward) if isinstance(s, Loop)]
    for loop in saving:
        if loop.tape:
            saved = sorted({*loop.saved, *(n for i in statements(loop.body) if isinstance(i, If)
                                           for branch in i.saves for n in branch)})
            out.append(f"  line {loop.loc.line}: saves {', '.join(saved)} per iteration "
                       f"(in the list {loop.tape})")
        elif loop.counter:
            out.append(f"  line {loop.loc.line}: saves nothing, counts iterations")
    if not saving:
        out.append("  no loop: the gradient saves nothing (no tape)")
    return "\n".join(out) + "\n"


def _reads(stmt: Return) -> tuple[str, ...]:
    v = stmt.value
    return (v.name,) if hasattr(v, "name") else v.reads
