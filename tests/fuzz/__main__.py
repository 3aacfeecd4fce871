"""An extended fuzzing campaign: ``python -m tests.fuzz --programs 10000 --seed 0``.

Run from the repository root.  Prints how many programs were tried and, for first order
(``grad``) and separately for second order (``hvp``, one program in
``generator.SECOND_ORDER_SHARE``), how many passed, were rejected (with the most common
rejection messages), invalid (with the reasons) and WRONG (with the first few reproducers).  ``--shrink`` shrinks the first WRONG program of each kind with hypothesis and
then removes lines that do not matter.  Exits with status 1 if any program was WRONG.
"""
from __future__ import annotations

import argparse
import collections
import os
import signal
import sys
import time

from hypothesis import HealthCheck, Phase, given, seed, settings

from .generator import NAN_BRANCHES, Program, programs
from .oracle import Outcome, check
from .reduce import reduce_program


def _campaign_settings(n: int, phases: list[Phase]) -> settings:
    return settings(max_examples=n, database=None, deadline=None, phases=phases,
                    suppress_health_check=list(HealthCheck), print_blob=False)


class _Done(Exception):
    """Enough distinct programs were tried."""


def run_campaign(n: int, seed_value: int, max_statements: int, progress: bool = True,
                 nan_branches: bool | None = None) -> list[tuple[Program, Outcome]]:
    """Check ``n`` distinct generated programs."""
    results: list[tuple[Program, Outcome]] = []
    seen: set[tuple[str, int]] = set()
    start = time.perf_counter()

    @_campaign_settings(4 * n, [Phase.generate])
    @seed(seed_value)
    @given(programs(max_statements=max_statements, nan_branches=nan_branches))
    def one(program: Program) -> None:
        if len(results) >= n:
            raise _Done
        key = (program.source, program.seed)
        if key in seen:  # hypothesis sometimes draws the same program twice
            return
        seen.add(key)
        results.append((program, check(program)))
        if progress and len(results) % 250 == 0:
            counts = collections.Counter(o.kind for _, o in results)
            seconds = collections.Counter(o.second.kind for _, o in results if o.second is not None)
            print(f"  ... {len(results)} programs in {time.perf_counter() - start:.0f} s: "
                  f"{dict(counts)}; second order {dict(seconds)}", file=sys.stderr, flush=True)

    try:
        one()
    except _Done:
        pass
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: report the programs checked so far
        print(f"  interrupted after {len(results)} programs", file=sys.stderr)
    return results


def shrink(seed_value: int, n: int, max_statements: int, reason: str,
           nan_branches: bool | None = None) -> Program | None:
    """The first program WRONG for ``reason``, shrunk by hypothesis, then reduced line by line."""
    failing: list[Program] = []

    def fails(program: Program) -> bool:
        return failure(check(program)) == reason

    @_campaign_settings(4 * n, [Phase.generate, Phase.shrink])
    @seed(seed_value)
    @given(programs(max_statements=max_statements, nan_branches=nan_branches))
    def one(program: Program) -> None:
        if fails(program):
            failing.append(program)
            raise AssertionError(reason)

    try:
        one()
    except AssertionError:
        pass
    except Exception as exc:  # noqa: BLE001 - hypothesis may wrap the error
        print(f"shrinking failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    if not failing:
        return None
    return reduce_program(failing[-1], fails)


def _counts(lines: list[str], title: str, outcomes: list[Outcome]) -> None:
    """Counts of each kind with the most common reasons."""
    counts = collections.Counter(o.kind for o in outcomes)
    total = len(outcomes)
    lines.append(f"{title}: {total} programs")
    for kind in ("passed", "rejected", "invalid", "wrong", "skipped"):
        n = counts.get(kind, 0)
        if kind == "skipped" and not n:
            continue
        lines.append(f"  {kind.upper() if kind == 'wrong' else kind}: {n} ({100 * n / max(total, 1):.1f}%)")
        if kind != "passed" and n:
            reasons = collections.Counter(o.reason.split("\n")[0] for o in outcomes if o.kind == kind)
            for reason, k in reasons.most_common(8):
                lines.append(f"    {k:5d}  {reason[:150]}")


def report(results: list[tuple[Program, Outcome]], elapsed: float, show: int) -> str:
    total = len(results)
    lines = [f"programs tried: {total} in {elapsed:.0f} s ({elapsed / max(total, 1):.2f} s each)"]
    _counts(lines, "first order (grad against finite differences)", [o for _, o in results])
    seconds = [o.second for _, o in results if o.second is not None]
    _counts(lines, "second order (hvp against finite differences of the gradient)", seconds)
    cost = sum(o.seconds for o in seconds)
    lines.append(f"  time in second-order checks: {cost:.0f} s of {sum(o.seconds for _, o in results):.0f} s")
    notes = collections.Counter(note for _, o in results for note in set(o.notes))
    if notes:
        lines.append("notes (programs; not counted as failures):")
        for note, k in notes.most_common(5):
            lines.append(f"    {k:5d}  {note}")
    features = collections.Counter(f for p, _ in results for f in p.features)
    passed = collections.Counter(f for p, o in results for f in p.features if o.kind == "passed")
    lines.append("constructs (programs using them / of those passed):")
    lines.append("    " + ", ".join(f"{f} {features[f]}/{passed[f]}" for f in sorted(features)))
    for p, o in sorted(wrong_of(results), key=lambda t: len(t[0].source))[:show]:
        lines.append("=" * 78)
        lines.append(f"WRONG: {o}")
        lines.append(p.reproducer())
    return "\n".join(lines)


def wrong_of(results: list[tuple[Program, Outcome]]) -> list[tuple[Program, Outcome]]:
    """The programs WRONG at first or second order."""
    return [(p, o) for p, o in results if o.kind == "wrong" or o.second is not None and o.second.kind == "wrong"]


def failure(out: Outcome) -> str | None:
    """What a program is WRONG for, if it is: the reason, marked for second order."""
    if out.kind == "wrong":
        return out.reason
    if out.second is not None and out.second.kind == "wrong":
        return f"second order: {out.second.reason}"
    return None


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=1000, help="how many programs to try")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=3, help="WRONG reproducers to print")
    parser.add_argument("--max-statements", type=int, default=6, help="top-level statements of f, at most")
    parser.add_argument("--shrink", action="store_true",
                        help="shrink the first WRONG program of each kind, three kinds at most (slow)")
    parser.add_argument("--dump", metavar="DIR", help="write every WRONG program's reproducer to DIR")
    parser.add_argument("--nan-branches", choices=("on", "off"),
                        help="np.where with NaN in the untaken branch (default: generator.NAN_BRANCHES)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # `kill PID` also stops with a report
    nan = None if args.nan_branches is None else args.nan_branches == "on"
    start = time.perf_counter()
    results = run_campaign(args.programs, args.seed, args.max_statements, nan_branches=nan)
    elapsed = time.perf_counter() - start
    print(f"seed {args.seed}, NaN branches {'on' if (NAN_BRANCHES if nan is None else nan) else 'off'}")
    print(report(results, elapsed, args.show))
    wrong = wrong_of(results)
    if args.dump and wrong:
        os.makedirs(args.dump, exist_ok=True)
        for k, (p, o) in enumerate(wrong):
            with open(os.path.join(args.dump, f"wrong_{k:04d}.py"), "w") as fh:
                fh.write(f"# WRONG: " + str(o).replace("\n", "\n# ") + "\n" + p.reproducer())
    if args.shrink:
        for reason in list(dict.fromkeys(failure(o) for _, o in wrong))[:3]:
            small = shrink(args.seed, args.programs, args.max_statements, reason, nan)
            print("=" * 78)
            if small is None:
                print(f"could not reproduce while shrinking: {reason}")
                continue
            print(f"SHRUNK WRONG: {reason}")
            print(small.reproducer())
            print(str(check(small)).rstrip()[-2500:])
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
