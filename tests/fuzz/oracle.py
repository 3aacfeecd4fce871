"""The oracle: s2sad's gradient of a generated program against finite differences.

:func:`check` runs one :class:`~tests.fuzz.generator.Program` and classifies it:

``passed``
    ``s2sad.grad`` of the program matches central finite differences on every element of
    every argument (all arguments are floats and all are differentiated).
``rejected``
    s2sad raised an :class:`~s2sad.S2SADError` (other than an internal compiler error): an
    honest refusal.  ``reason`` is its message without the location.
``invalid``
    the oracle is unusable for the program: a non-finite or overflowing value, a perturbed
    input that changes the control flow taken (the sequence of executed lines) or the number
    of ``stop_gradient`` calls, finite differences that disagree between step sizes (the
    point is at or near a kink), or, for a mismatch, finite differences that jump when the
    frozen ``stop_gradient`` values move by ``SHIFT`` (a live value ties with a frozen one, as
    in ``np.maximum(stop_gradient(x), x)``, where any tie convention is as good as another).  ``bad program`` (the program itself raised) is a generator bug.
``wrong``
    a gradient that does not match reliable finite differences, a gradient of the wrong shape
    or dtype, a changed input, an internal compiler error, or any other exception from s2sad
    or from the code it generated.

The finite differences know nothing of s2sad: the program is executed from its source text
with ``stop_gradient`` bound to a recorder that stores the values it sees, in call order;
the perturbed runs bind it to a replayer whose i-th call returns the i-th recorded value, so
``stop_gradient`` arguments are frozen at their values at the unperturbed point.  Programs
with NaN branches (``np.where`` masking a NaN or infinity, feature ``where-nan``) may divide
by zero or take square roots of negatives; their value must still be finite.

**Second order.**  For a program whose first order passed and whose
:attr:`~tests.fuzz.generator.Program.second_order` is set, :func:`second_order` checks
``s2sad.hvp`` with respect to one argument along a random direction ``v``
(:meth:`~tests.fuzz.generator.Program.direction`) against central differences of s2sad's
gradient along ``v``, at the same two step sizes and with the same kink, step-size and tie
checks, element by element; every perturbed point must also take the program's control flow.
The gradient differentiated is that of the program with each ``stop_gradient`` call site
replaying its values at the unperturbed point (:func:`hook_stop_gradient`), since ``hvp``
gives a stopped value no tangent.  Its outcome is ``Outcome.second``; a refusal located
outside the user's program (in code s2sad generated) is marked so in its reason.
"""
from __future__ import annotations

import collections
import copy
import itertools
import linecache
import sys
import time
import traceback
import types
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from .generator import Program, format_value

RTOL = 1e-4
ATOL = 1e-6
H1 = 1e-5  # the step of the finite differences compared against
H2 = 1e-6  # a second step: kinks and instability show as disagreement
EPS = np.finfo(float).eps
SHIFT = 1e-5  # how far the tie check moves the frozen stop_gradient values, each way
H3 = 1e-7  # the tie check's step: well inside SHIFT

_counter = itertools.count()


@dataclass
class Outcome:
    kind: str  # "passed", "rejected", "invalid" or "wrong"
    reason: str  # a short category (for rejections, the message)
    detail: str = ""  # for wrong programs: a report with the mismatches
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    s2sad_seconds: float = 0.0  # generating and running the gradient
    second: Outcome | None = None  # the second-order check, for programs that get one

    def __str__(self) -> str:
        text = f"{self.kind}: {self.reason}" + (f"\n{self.detail}" if self.detail else "")
        return text + (f"\nsecond order: {self.second}" if self.second is not None else "")


class Unusable(Exception):
    """A perturbed run that cannot be compared with the unperturbed one."""


def load(program: Program, tag: str) -> tuple[types.FunctionType, dict[str, Any], str]:
    """Execute the program's source as a module; return its entry function, namespace and file name."""
    filename = f"<fuzz-{tag}-{next(_counter)}>"
    text = program.source
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"fuzz_{tag}"}
    exec(compile(text, filename, "exec"), namespace)
    return namespace[program.entry], namespace, filename


def forget(filename: str) -> None:
    linecache.cache.pop(filename, None)


class StopGradient:
    """``stop_gradient`` for the oracle: records values, or replays them in call order.

    Values are kept per call site (``site``): the original program calls it with none, so
    its calls replay in program order; a hooked program (:func:`hook_stop_gradient`) names
    its sites, so code that calls them in another order (a generated gradient) still gets
    each site's values.
    """

    def __init__(self) -> None:
        self.recorded: dict[Any, list[Any]] | None = None
        self.values: dict[Any, list[Any]] = {}
        self.calls: collections.Counter[Any] = collections.Counter()
        self.shift = 0.0  # added to replayed floats (the tie check)

    def record(self) -> None:
        self.recorded, self.values, self.calls = None, {}, collections.Counter()

    def replay(self) -> None:
        self.recorded, self.calls = self.values, collections.Counter()

    def complete(self) -> bool:
        """Whether this replay made exactly the recorded calls."""
        return all(self.calls[site] == len(v) for site, v in self.values.items())

    def __call__(self, x: Any, site: Any = None) -> Any:
        if self.recorded is None:
            self.values.setdefault(site, []).append(copy.deepcopy(x))
            return x
        recorded = self.recorded.get(site, [])
        n = self.calls[site]
        if n >= len(recorded):
            raise Unusable("stop_gradient called more often than at the unperturbed point")
        value = recorded[n]
        self.calls[site] += 1
        if self.shift and (isinstance(value, float) or isinstance(value, np.ndarray) and value.dtype.kind == "f"):
            return value + self.shift
        return copy.deepcopy(value)


def copies(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def traced_call(fn: Callable[..., Any], args: list[Any], filename: str) -> tuple[Any, list[int]]:
    """Call ``fn``, recording the lines executed in ``filename`` (the control flow taken)."""
    lines: list[int] = []

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            lines.append(frame.f_lineno)
        return local

    def calls(frame: types.FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == filename:
            lines.append(-frame.f_code.co_firstlineno)
            return local
        return None

    old = sys.gettrace()
    sys.settrace(calls)
    try:
        value = fn(*args)
    finally:
        sys.settrace(old)
    return value, lines


def scalar(value: Any) -> float:
    if isinstance(value, (bool, int)) or np.ndim(value) != 0 or np.asarray(value).dtype.kind != "f":
        raise TypeError(f"the program returned {type(value).__name__} {value!r:.60}, not a float scalar")
    return float(value)


def check(program: Program, s2sad_grad: Callable[..., Any] | None = None,
          s2sad_hvp: Callable[..., Any] | None = None) -> Outcome:
    """Classify ``program`` (see the module docstring); ``s2sad_grad``/``s2sad_hvp`` stand in
    for ``s2sad.grad``/``s2sad.hvp`` (to test the oracle itself)."""
    start = time.perf_counter()
    out = _check(program, s2sad_grad, s2sad_hvp)
    out.seconds = time.perf_counter() - start
    return out


def errstate(program: Program) -> dict[str, str]:
    """Floating-point errors raise, except NaN and division by zero in programs that mask them
    with ``np.where`` on purpose (their value is checked to be finite instead)."""
    masked = "ignore" if "where-nan" in program.features else "raise"
    return dict(over="raise", invalid=masked, divide=masked, under="ignore")


def _check(program: Program, s2sad_grad: Callable[..., Any] | None,
           s2sad_hvp: Callable[..., Any] | None) -> Outcome:
    args = program.inputs()

    # --- the program itself, recording stop_gradient ------------------------------------------
    sg = StopGradient()
    try:
        fn, namespace, filename = load(program, "oracle")
    except Exception as exc:  # noqa: BLE001 - the generator made an invalid program
        return Outcome("invalid", "bad program", f"{type(exc).__name__}: {exc}")
    namespace["stop_gradient"] = sg
    try:
        sg.record()
        try:
            with np.errstate(**errstate(program)):
                value, trace0 = traced_call(fn, copies(args), filename)
            f0 = scalar(value)
        except FloatingPointError as exc:
            return Outcome("invalid", f"floating-point error: {exc}")
        except Exception as exc:  # noqa: BLE001 - the generator made an invalid program
            return Outcome("invalid", "bad program", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        if not np.isfinite(f0):
            return Outcome("invalid", "non-finite value")

        # --- s2sad ------------------------------------------------------------------------------
        t0 = time.perf_counter()
        verdict, grads, notes = run_s2sad(program, args, s2sad_grad)
        s2sad_seconds = time.perf_counter() - t0
        if verdict is not None:
            verdict.s2sad_seconds = s2sad_seconds
            return verdict

        # --- finite differences with stop_gradient replayed -------------------------------------
        sg.replay()

        def at(moved: list[Any]) -> float:
            sg.replay()
            try:
                with np.errstate(**errstate(program)):
                    v, trace = traced_call(fn, moved, filename)
                    fv = scalar(v)
            except FloatingPointError as exc:
                raise Unusable(f"floating-point error: {exc}") from exc
            except Exception as exc:  # noqa: BLE001 - replayed stop_gradient values off their path
                raise Unusable("a perturbed input changes the control flow taken (and then "
                               f"fails: {type(exc).__name__})") from exc
            if trace != trace0:
                raise Unusable("a perturbed input changes the control flow taken")
            if not sg.complete():
                raise Unusable("a perturbed input changes the number of stop_gradient calls")
            if not np.isfinite(fv):
                raise Unusable("non-finite value")
            return fv

        mismatches: list[str] = []
        unusable: list[str] = []
        for k, x in enumerate(args):
            g = grads[k]
            for index in (np.ndindex(*np.shape(x)) if isinstance(x, np.ndarray) else [None]):
                def moved(h: float) -> float:
                    a = copies(args)
                    if index is None:
                        a[k] = x + h
                    else:
                        a[k][index] += h
                    return at(a)

                try:
                    p1, m1, p2, m2 = moved(H1), moved(-H1), moved(H2), moved(-H2)
                except Unusable as exc:
                    unusable.append(str(exc))
                    continue
                c1 = (p1 - m1) / (2 * H1)
                c2 = (p2 - m2) / (2 * H2)
                noise1 = 64 * EPS * max(abs(f0), abs(p1), abs(m1), 1.0) / H1
                noise2 = 64 * EPS * max(abs(f0), abs(p2), abs(m2), 1.0) / H2
                tol = ATOL + RTOL * abs(c1) + noise1
                jump = (10 * (p2 - 2 * f0 + m2) / H2 - (p1 - 2 * f0 + m1) / H1) / 9
                if abs(jump) > max(tol, 4 * noise2) / 2:
                    unusable.append("finite differences see a kink at the point")
                    continue
                if abs(c1 - c2) > tol + noise2:
                    unusable.append("finite differences disagree between step sizes")
                    continue
                got = float(np.asarray(g)[index] if index is not None else g)
                if not abs(got - c1) <= tol and sg.values and _ties_frozen_value(moved, sg, tol, f0):
                    unusable.append("a live value ties with a frozen stop_gradient value")
                    continue
                if not abs(got - c1) <= tol:
                    where = f"{program.args[k].name}{list(index) if index is not None else ''}"
                    mismatches.append(f"d/d{where}: s2sad {got!r}, finite differences {c1!r}")
        if mismatches:
            shown = "\n".join(mismatches[:8]) + (f"\n... {len(mismatches) - 8} more" if len(mismatches) > 8 else "")
            out = Outcome("wrong", "gradient mismatch", shown, notes)
        elif unusable:
            out = Outcome("invalid", max(set(unusable), key=unusable.count), notes=notes)
        else:
            out = Outcome("passed", "", notes=notes)
        out.s2sad_seconds = s2sad_seconds
        if program.second_order:
            t1 = time.perf_counter()
            out.second = (second_order(program, args, at, sg, s2sad_hvp) if out.kind == "passed"
                          else Outcome("skipped", f"first order {out.kind}"))
            out.second.seconds = time.perf_counter() - t1
        return out
    finally:
        forget(filename)


def _ties_frozen_value(moved: Callable[[float], float], sg: StopGradient, tol: float, f0: float) -> bool:
    """Whether the derivative jumps when the frozen stop_gradient values move by -SHIFT and
    +SHIFT: smooth functions change by about SHIFT times a second derivative, a tie by a
    whole term of the gradient.  False if the moved values change the control flow taken:
    the mismatch then stands."""
    slopes = []
    try:
        for shift in (-SHIFT, SHIFT):
            sg.shift = shift
            slopes.append((moved(H3) - moved(-H3)) / (2 * H3))
    except Unusable:
        return False
    finally:
        sg.shift = 0.0
    noise = 64 * EPS * max(abs(f0), 1.0) / H3
    return abs(slopes[0] - slopes[1]) > tol + 2 * noise


# --- second order --------------------------------------------------------------------------------


def hook_stop_gradient(source: str) -> str:
    """``source`` with every ``stop_gradient(e)`` written ``stop_gradient(_sg(k, e))``, ``k``
    numbering the call sites (``_sg`` then records or replays ``e``'s value)."""
    out: list[str] = []
    hooked: list[bool] = []  # per open parenthesis: does it close a hooked call?
    i, site, call = 0, 0, "stop_gradient("
    while i < len(source):
        if source.startswith(call, i) and not (source[i - 1:i].isalnum() or source[i - 1:i] == "_"):
            out.append(f"{call}_sg({site}, ")
            hooked.append(True)
            site += 1
            i += len(call)
            continue
        c = source[i]
        if c == "(":
            hooked.append(False)
        elif c == ")" and hooked.pop():
            out.append(")")
        out.append(c)
        i += 1
    return "".join(out)


def second_order(program: Program, args: list[Any], at: Callable[[list[Any]], float],
                 sg: StopGradient, s2sad_hvp: Callable[..., Any] | None) -> Outcome:
    """s2sad's ``hvp`` along ``program.direction()`` against central differences of s2sad's
    gradient along it (``passed``, ``rejected``, ``invalid`` or ``wrong``, as for first order).

    The gradient is that of the program with every ``stop_gradient`` site replaying its
    values at the unperturbed point (what ``hvp`` differentiates: a stopped value has no
    tangent); ``at`` checks that each perturbed point takes the program's control flow
    (with its own frozen values ``sg``).
    """
    import s2sad

    start = time.perf_counter()
    k, v = program.direction()
    verdict, hv = run_hvp(program, args, k, v, s2sad_hvp)
    s2sad_seconds = time.perf_counter() - start
    if verdict is not None:
        verdict.s2sad_seconds = s2sad_seconds
        return verdict
    sites = StopGradient()
    fn, namespace, filename = load(replace(program, source=hook_stop_gradient(program.source)), "hooked")
    namespace["_sg"] = lambda site, x: sites(x, site)
    try:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
                gfn = s2sad.grad(fn, k)
                sites.record()
                with np.errstate(all="ignore"):
                    g0 = np.asarray(gfn(*copies(args)), dtype=float)
        except Exception as exc:  # noqa: BLE001 - the first-order check passed on the program
            return Outcome("invalid", f"the gradient with stop_gradient hooked fails: {type(exc).__name__}",
                           str(exc))
        name = program.args[k].name

        def gradient_at(h: float) -> np.ndarray:
            moved = copies(args)
            moved[k] = moved[k] + h * v
            at(copies(moved))  # the program's own control flow (raises Unusable; it may write into its arguments)
            sites.replay()
            try:
                with np.errstate(all="ignore"):
                    g = gfn(*moved)
            except Unusable:
                raise
            except Exception as exc:  # noqa: BLE001 - a frozen value off its path
                raise Unusable(f"the gradient fails at a perturbed input ({type(exc).__name__})") from exc
            if not sites.complete():
                raise Unusable("a perturbed input changes the number of stop_gradient calls")
            return np.asarray(g, dtype=float)

        try:
            p1, m1, p2, m2 = (gradient_at(h) for h in (H1, -H1, H2, -H2))
        except Unusable as exc:
            return Outcome("invalid", str(exc))
        got = np.asarray(hv, dtype=float)
        c1, c2 = (p1 - m1) / (2 * H1), (p2 - m2) / (2 * H2)
        scale = np.maximum(np.maximum(np.abs(g0), np.abs(p1)), np.maximum(np.abs(m1), 1.0))
        noise1, noise2 = 64 * EPS * scale / H1, 64 * EPS * scale / H2
        tol = ATOL + RTOL * np.abs(c1) + noise1
        jump = (10 * (p2 - 2 * g0 + m2) / H2 - (p1 - 2 * g0 + m1) / H1) / 9
        kink = np.abs(jump) > np.maximum(tol, 4 * noise2) / 2
        unstable = np.abs(c1 - c2) > tol + noise2
        finite = np.isfinite(c1) & np.isfinite(c2)  # (a perturbed point may leave the domain)
        off = ~(np.abs(got - c1) <= tol) & ~kink & ~unstable & finite
        if off.any() and sites.values:
            off &= ~_gradient_ties_frozen_value(gradient_at, (sites, sg), tol, scale)
        if off.any():
            rows = [f"(H v)[{name}{[int(j) for j in i] if i else ''}]: s2sad {float(got[i])!r}, "
                    f"finite differences of the gradient {float(c1[i])!r}" for i in map(tuple, np.argwhere(off))]
            detail = "\n".join(rows[:8]) + (f"\n... {len(rows) - 8} more" if len(rows) > 8 else "")
            out = Outcome("wrong", "hvp mismatch", f"along {name} = {format_value(v)}\n{detail}")
        elif (kink | unstable).any():
            out = Outcome("invalid", "finite differences of the gradient see a kink at the point"
                          if kink.any() else "finite differences of the gradient disagree between step sizes")
        elif not finite.all():
            out = Outcome("invalid", "finite differences of the gradient are not finite")
        else:
            out = Outcome("passed", "")
        out.s2sad_seconds = s2sad_seconds
        return out
    finally:
        forget(filename)


def _gradient_ties_frozen_value(gradient_at: Callable[[float], np.ndarray], frozen: tuple[StopGradient, ...],
                                tol: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Per element: whether the derivative of the gradient jumps when the ``frozen`` values
    (the gradient's and the program's own) move by -SHIFT and +SHIFT (see :func:`_ties_frozen_value`)."""
    slopes = []
    try:
        for shift in (-SHIFT, SHIFT):
            for f in frozen:
                f.shift = shift
            slopes.append((gradient_at(H3) - gradient_at(-H3)) / (2 * H3))
    except Unusable:
        return np.zeros(np.shape(tol), dtype=bool)
    finally:
        for f in frozen:
            f.shift = 0.0
    noise = 64 * EPS * scale / H3
    return np.abs(slopes[0] - slopes[1]) > tol + 2 * noise


def refusal(exc: Exception, filename: str) -> str:
    """A rejection's reason: its message, marked when it points outside the user's program."""
    loc = getattr(exc, "location", None)
    inside = loc is None or loc.filename == filename
    return exc.message if inside else f"[located in {loc.filename.split(' from ')[0]}] {exc.message}"


def run_hvp(program: Program, args: list[Any], k: int, v: Any, s2sad_hvp: Callable[..., Any] | None
            ) -> tuple[Outcome | None, Any]:
    """Generate and run s2sad's ``hvp`` with respect to argument ``k`` along ``v``; an
    Outcome if that settles the second-order check."""
    import s2sad
    from s2sad.pipeline import InternalCompilerError

    fn, namespace, filename = load(program, "hvp")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
            try:
                hfn = (s2sad_hvp or s2sad.hvp)(fn, k)
            except InternalCompilerError as exc:
                return Outcome("wrong", "internal compiler error", str(exc)), None
            except s2sad.S2SADError as exc:
                return Outcome("rejected", refusal(exc, filename)), None
            except Exception as exc:  # noqa: BLE001
                return Outcome("wrong", f"{type(exc).__name__} while generating the hvp",
                               traceback.format_exc()), None
            given, direction = copies(args), copies([v])[0]
            try:
                with np.errstate(all="ignore"):
                    hv = hfn(*given, direction)
            except s2sad.S2SADError as exc:
                return Outcome("rejected", f"[at run time] {refusal(exc, filename)}"), None
            except Exception as exc:  # noqa: BLE001
                return Outcome("wrong", f"{type(exc).__name__} in the generated hvp code",
                               f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"), None
        for a, b in zip(args + [v], given + [direction]):
            if type(a) is not type(b) or not np.array_equal(a, b):
                return Outcome("wrong", "the hvp call changed its input"), None
        if np.shape(hv) != np.shape(v):
            return Outcome("wrong", "hvp of the wrong shape", f"shape {np.shape(hv)}, argument shape {np.shape(v)}"), None
        if np.asarray(hv).dtype != np.float64:
            return Outcome("wrong", "hvp of the wrong dtype", f"dtype {np.asarray(hv).dtype}"), None
        return None, hv
    finally:
        forget(filename)


def run_s2sad(program: Program, args: list[Any], s2sad_grad: Callable[..., Any] | None
              ) -> tuple[Outcome | None, list[Any], list[str]]:
    """Generate and run s2sad's gradient; an Outcome if that settles the program."""
    import s2sad
    from s2sad.pipeline import InternalCompilerError

    notes: list[str] = []
    fn, namespace, filename = load(program, "s2sad")
    try:
        wrt = tuple(range(len(args)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
            try:
                gfn = (s2sad_grad or s2sad.grad)(fn, wrt)
            except InternalCompilerError as exc:
                return Outcome("wrong", "internal compiler error", str(exc)), [], notes
            except s2sad.S2SADError as exc:
                return Outcome("rejected", exc.message), [], notes
            except Exception as exc:  # noqa: BLE001
                return Outcome("wrong", f"{type(exc).__name__} while generating the gradient",
                               traceback.format_exc()), [], notes
            given = copies(args)
            try:
                with np.errstate(all="ignore"):
                    grads = gfn(*given)
            except s2sad.S2SADError as exc:
                return Outcome("rejected", f"[at run time] {exc.message}"), [], notes
            except Exception as exc:  # noqa: BLE001
                return Outcome("wrong", f"{type(exc).__name__} in the generated code",
                               f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"), [], notes
        for a, b in zip(args, given):
            if type(a) is not type(b) or not np.array_equal(a, b):
                return Outcome("wrong", "the gradient call changed its input"), [], notes
        if not isinstance(grads, tuple) or len(grads) != len(args):
            return Outcome("wrong", "the gradient is not a tuple with one entry per argument",
                           f"got {grads!r:.200}"), [], notes
        for a, g, x in zip(program.args, grads, args):
            if np.shape(g) != np.shape(x):
                return Outcome("wrong", "gradient of the wrong shape",
                               f"d/d{a.name}: shape {np.shape(g)}, argument shape {np.shape(x)}"), [], notes
            if np.asarray(g).dtype != np.float64:
                return Outcome("wrong", "gradient of the wrong dtype",
                               f"d/d{a.name}: dtype {np.asarray(g).dtype}"), [], notes
            if a.py and not isinstance(g, float):
                notes.append(f"the gradient for a Python float argument is a {type(g).__name__}, not a float")
        if s2sad_grad is None:
            disagreement = _generic_disagrees(fn, wrt, args, grads)
            if disagreement is not None:
                return Outcome("wrong", "specialised and generic code disagree", disagreement), [], notes
            disagreement = _compiled_disagrees(fn, wrt, args, grads) if program.compiled else None
            if disagreement is not None:
                return Outcome("wrong", "compiled (jit=\"auto\") and NumPy code disagree", disagreement), [], notes
        return None, list(grads), notes
    finally:
        forget(filename)


def _generic_disagrees(fn: Callable[..., Any], wrt: tuple[int, ...], args: list[Any],
                       grads: tuple[Any, ...]) -> str | None:
    """How the generic code's gradient (``specialize=False``) differs from the specialised
    code's that ``grads`` came from, or None if they agree (types, shapes, dtypes, values)."""
    import s2sad

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        generic = s2sad.grad(fn, wrt, specialize=False)(*copies(args))
    for i, (g, h) in enumerate(zip(grads, generic)):
        if type(g) is not type(h) or np.shape(g) != np.shape(h) or np.asarray(g).dtype != np.asarray(h).dtype:
            return f"argument {i}: specialised {type(g).__name__} {np.shape(g)}, generic {type(h).__name__} {np.shape(h)}"
        if not np.allclose(g, h, rtol=1e-10, atol=1e-12, equal_nan=True):
            return f"argument {i}: specialised {g!r:.200}, generic {h!r:.200}"
    return None


def _compiled_disagrees(fn: Callable[..., Any], wrt: tuple[int, ...], args: list[Any],
                        grads: tuple[Any, ...]) -> str | None:
    """How ``grad(fn, wrt, jit="auto")`` (numba's code, or the NumPy code where numba cannot
    compile) differs from ``grads`` beyond rounding, or None (also without numba)."""
    import s2sad
    from s2sad.jit import available

    if not available():
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # (JitWarning: the NumPy code runs)
        try:
            compiled = s2sad.grad(fn, wrt, jit="auto")(*copies(args))
        except Exception as exc:  # noqa: BLE001 - the NumPy code ran: so must this
            return f"{type(exc).__name__}: {exc}"
    for i, (g, h) in enumerate(zip(compiled, grads)):
        if np.shape(g) != np.shape(h):
            return f"argument {i}: compiled shape {np.shape(g)}, NumPy code's {np.shape(h)}"
        scale = float(np.max(np.abs(h), initial=0.0)) if np.all(np.isfinite(h)) else 1.0
        if not np.allclose(g, h, rtol=1e-8, atol=1e-10 * (1.0 + scale), equal_nan=True):
            return f"argument {i}: compiled {g!r:.200}, NumPy code's {h!r:.200}"
    return None


def check_against_autograd(program: Program) -> Outcome:
    """Compare s2sad's gradient with autograd's on the same source (a development check).

    Programs with ``stop_gradient`` or element assignment (which autograd cannot
    differentiate) are "skipped", and so are programs autograd fails on.
    """
    import autograd

    if "stop_gradient" in program.features or "setitem" in program.features:
        return Outcome("skipped", "uses stop_gradient or element assignment")
    args = program.inputs()
    verdict, grads, notes = run_s2sad(program, args, None)
    if verdict is not None:
        return verdict
    text = program.source.replace("import numpy as np", "import autograd.numpy as np", 1)
    filename = f"<fuzz-autograd-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": "fuzz_autograd"}
    try:
        exec(compile(text, filename, "exec"), namespace)
        fn = namespace[program.entry]
        mismatches = []
        for k, (a, g) in enumerate(zip(program.args, grads)):
            try:
                with np.errstate(all="ignore"):
                    want = autograd.grad(fn, k)(*copies(args))
            except Exception as exc:  # noqa: BLE001
                return Outcome("skipped", f"autograd: {type(exc).__name__}: {str(exc)[:80]}")
            if np.shape(want) != np.shape(args[k]):
                return Outcome("skipped", "autograd's gradient has the wrong shape")
            if not np.allclose(g, want, rtol=1e-7, atol=1e-9):
                mismatches.append(f"d/d{a.name}: s2sad {np.asarray(g).tolist()!r}, autograd "
                                  f"{np.asarray(want).tolist()!r}")
        if mismatches:
            referee = check(program)  # finite differences decide who is right
            if referee.kind == "passed":
                return Outcome("skipped", "autograd differs, finite differences agree with s2sad",
                               "\n".join(mismatches), notes)
            return Outcome("wrong", "differs from autograd", "\n".join(mismatches) + f"\nfinite differences: {referee}", notes)
        return Outcome("passed", "", notes=notes)
    finally:
        forget(filename)
