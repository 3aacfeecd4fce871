"""The compiler pipeline, declared in one place.

    source -> parse -> resolve -> normalize -> activity -> reverse -> optimize -> codegen

Code specialised to its arguments' shapes starts from the generic build's adjoint as the
reverse pass left it before specialising (a :class:`Template`): specialize -> optimize -> codegen.

Each pass is a function of the :class:`State`; ``show`` renders what the pass
produced, for ``s2sad --stages`` and the ``S2SAD_STAGES=1`` environment switch.
An unexpected exception inside a pass is reported as "failed in pass X".
"""
from __future__ import annotations

import os
import sys
import types
from dataclasses import dataclass
from typing import Callable

from .errors import GENERATED_LINES, S2SADError
from .ir import CALLEE_KINDS, Assign, Function, If, Loop, Opaque, Return, Var, if_header, wrt_parameter
from .passes import activity as activity_pass
from .passes import callees, codegen, forward, normalize, optimize, parse, resolve, reverse, source
from .passes.adjoint import Adjoint, detached
from .rules import REGISTRY
from .rules.shapes import Known


@dataclass(frozen=True)
class Template:
    """What the generic build of a function leaves for the builds specialised to its
    arguments: the adjoint before specialisation (copied for each), and what it was made from."""

    source: source.FunctionSource
    resolution: resolve.Resolution
    adjoint: Adjoint
    warned: bool  # generating it warned (a zero gradient): no build from it is stored


@dataclass
class State:
    fn: types.FunctionType
    wrt: tuple[str, ...]
    multiple: bool
    kind: str  # "grad", "value_and_grad", "jvp", or one of ir.CALLEE_KINDS
    split: bool = True  # a callee's forward values kept for its backward pass (not replayed)
    keep_values: bool = False  # no stand-ins (S2SAD_DEBUG=1): a debugger sees real values
    build: callees.Build | None = None  # how the passes compile a callee (s2sad.compiler.build)
    source: source.FunctionSource | None = None
    parsed: parse.Parsed | None = None
    resolution: resolve.Resolution | None = None
    ir: Function | None = None
    activity: activity_pass.Activity | None = None
    adjoint: Adjoint | None = None
    text: str = ""
    name: str = ""
    generated: codegen.Generated | None = None
    warned: bool = False  # generation warned (a zero gradient): a cached copy would not
    arguments: dict[str, Known | None] | None = None  # specialised to these argument kinds
    template: Template | None = None  # given: the specialising pipeline starts from it; else kept


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable[[State], None]
    show: Callable[[State], str]


def _show_ir(state: State, annotate: bool = False) -> str:
    def show(stmts: list) -> list[str]:
        out: list[str] = []
        for stmt in stmts:
            if isinstance(stmt, Return):
                v = stmt.value
                out.append(f"return {v.name if isinstance(v, Var) else v.code}")
            elif isinstance(stmt, If):
                out += [if_header(stmt), *codegen._indent(show(stmt.body) or ["pass"])]
                if stmt.orelse:
                    out += ["else:", *codegen._indent(show(stmt.orelse))]
            elif isinstance(stmt, Loop):
                phis = [f"{name} = {last}  # carried to the next iteration"
                        for name, last in stmt.carried if name != last]
                out += [f"{stmt.header}:", *codegen._indent(show(stmt.body) + phis or ["pass"])]
            else:
                line = codegen.statement_code(stmt)
                if annotate:
                    line += f"  # {_activity_label(stmt, state.activity)}"
                out.append(line)
        return out

    return codegen.render_function(state.ir, state.ir.name, show(state.ir.body))


def _activity_label(stmt: Assign, act: activity_pass.Activity) -> str:
    if isinstance(stmt.value, Opaque) and stmt.value.kind == "stopped":
        return "stopped by stop_gradient"
    if any(t in act.active for t in stmt.targets):
        return "active"
    if any(t in act.varied for t in stmt.targets):
        return "inactive (does not reach the output)"
    return "inactive"


def _run_activity(s: State) -> None:
    params = tuple(dict.fromkeys(wrt_parameter(p) for p in s.wrt))  # args for args[0], args[1]
    generated = s.source.filename in GENERATED_LINES
    s.activity = activity_pass.analyze(s.ir, params, forward=s.kind == "jvp", generated=generated)
    s.warned = activity_pass.warn_zero_gradients(s.ir, params, s.activity, generated)


def _run_reverse(s: State) -> None:
    adjoint = reverse.differentiate(s.ir, s.source, s.wrt, s.multiple, s.kind, s.activity, s.split, s.build)
    if s.arguments is None and s.kind in ("grad", "value_and_grad"):  # (the kinds specialised later)
        s.template = Template(s.source, s.resolution, detached(adjoint), s.warned)
    s.adjoint = reverse.finish(adjoint, s.arguments)


def _run_specialize(s: State) -> None:
    assert s.template is not None
    s.source, s.resolution, s.warned = s.template.source, s.template.resolution, s.template.warned
    s.adjoint = reverse.finish(detached(s.template.adjoint), s.arguments)


def _run_codegen(s: State) -> None:
    rendered = codegen.render(s.adjoint, s.kind)
    s.text, s.name = rendered.text, rendered.name
    s.generated = codegen.compile_text(s.adjoint, rendered, s.kind)


PIPELINE: tuple[Pass, ...] = (
    Pass("source", lambda s: setattr(s, "source", source.read_source(s.fn)),
         lambda s: s.source.text),
    Pass("parse", lambda s: setattr(s, "parsed", parse.parse(s.source)),
         lambda s: s.parsed.module.code),
    Pass("resolve", lambda s: setattr(s, "resolution", resolve.resolve(s.parsed)),
         lambda s: "\n".join(f"{f.name}: {f.kind} {f.value!r:.70}" for f in s.resolution.free.values())
         + f"\nlocals: {', '.join(sorted(s.resolution.locals))}\n"),
    Pass("normalize", lambda s: setattr(s, "ir", normalize.normalize(
        s.parsed, s.resolution, REGISTRY, callee=s.kind in CALLEE_KINDS or s.kind == "jvp",
        replayed=s.kind == "vjp")),
         _show_ir),
    Pass("activity", _run_activity, lambda s: _show_ir(s, annotate=True)),
    Pass("reverse", _run_reverse, lambda s: codegen.render(s.adjoint, s.kind)[0]),
    Pass("optimize", lambda s: setattr(s, "adjoint", optimize.optimize(s.adjoint, s.keep_values)),
         lambda s: codegen.render(s.adjoint, s.kind)[0]),
    Pass("codegen", _run_codegen, lambda s: s.text),
)


#: Forward mode: the same passes, with tangent generation in place of the reverse pass.
FORWARD_PIPELINE: tuple[Pass, ...] = tuple(
    Pass("forward", lambda s: setattr(s, "adjoint", forward.generate(
        s.ir, s.source, s.wrt, s.multiple, s.kind, s.activity, s.build, s.arguments)),
        lambda s: codegen.render(s.adjoint, s.kind)[0]) if p.name == "reverse" else p
    for p in PIPELINE)


#: Code specialised to its arguments, from the generic build's :class:`Template`.
SPECIALIZING_PIPELINE: tuple[Pass, ...] = (
    Pass("specialize", _run_specialize, lambda s: codegen.render(s.adjoint, s.kind)[0]),
    *(p for p in PIPELINE if p.name in ("optimize", "codegen")))


class InternalCompilerError(S2SADError):
    """A bug in s2sad: please report it with the function that triggered it."""


def run(state: State, show: Callable[[str, str], None] | None = None) -> State:
    """Run every pass on ``state``; ``show(name, text)`` sees the result of each."""
    if show is None and os.environ.get("S2SAD_STAGES"):
        def show(name: str, text: str) -> None:
            print(f"# ---- after pass {name} ----\n{text}", file=sys.stderr)
    passes = SPECIALIZING_PIPELINE if state.template is not None \
        else FORWARD_PIPELINE if state.kind == "jvp" else PIPELINE
    for p in passes:
        try:
            p.run(state)
        except (S2SADError, Warning):
            raise
        except Exception as exc:  # noqa: BLE001 - reported with the pass and function
            where = state.source.location(1, 0) if state.source else None
            raise InternalCompilerError(
                f"s2sad failed in pass {p.name} on {state.fn.__qualname__}: "
                f"{type(exc).__name__}: {exc}. This is a bug in s2sad; please report it with "
                f"this function", where) from exc
        if show is not None:
            show(p.name, p.show(state))
    return state
