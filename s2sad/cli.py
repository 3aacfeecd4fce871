"""Command line: print the generated gradient code of a function.

    s2sad examples/stable_softmax.py:loss --wrt W b
    s2sad mypkg.losses:loss --wrt 0 --output dloss.py
    s2sad explain examples/stable_softmax.py:loss --wrt W

Errors print one ``file:line:col: message`` block and exit 1; usage errors exit 2.
Module paths are imported with the current directory on ``sys.path``, as ``python -m`` does.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import keyword
import os
import sys
import traceback
import warnings
from typing import Any, Callable, Sequence

from .api import Differentiable
from .compiler import build, target, wrt_names
from .specializing import specialized_for
from .errors import S2SADError


class CLIError(Exception):
    """A user error found by the command line itself (bad file, missing function)."""

    exit_code = 1


class UsageError(CLIError):
    """The command line itself is malformed (a target without ``:FUNCTION``, say)."""

    exit_code = 2


_EPILOG = """\
subcommand:
  s2sad explain FILE.py:FUNCTION [--wrt NAME ...]
                        show, line by line, what is active, inactive or cut by
                        stop_gradient, and what each loop saves per iteration

exit codes: 0 success, 1 an error in the target (with its file:line:col), 2 a usage error"""


def _version() -> str:
    from . import __version__

    return f"s2sad {__version__}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="s2sad", epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print the gradient code s2sad generates for a Python function.")
    p.add_argument("--version", action="version", version=_version())
    p.add_argument("target", metavar="FILE.py:FUNCTION",
                   help="a Python file (or an importable module path) and a function in it "
                        "(Class.method for a method: --wrt a parameter after self)")
    p.add_argument("--wrt", nargs="+", action="extend", metavar="NAME_OR_INDEX",
                   help="the parameters to differentiate with respect to (default: the first); "
                        "several names, or --wrt repeated")
    p.add_argument("--output", "-o", metavar="OUT.py", help="write the code to this file")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="syntax highlighting (default: auto, on a terminal only)")
    p.add_argument("--mode", choices=("reverse", "forward", "hvp"), default="reverse",
                   help="reverse: the gradient (default); forward: the Jacobian-vector product; "
                        "hvp: the Hessian-vector product (forward mode over the gradient code)")
    p.add_argument("--standalone", action="store_true",
                   help="a module that needs only NumPy: s2sad's helpers, the functions it calls and "
                        "the constants it reads are copied into it")
    p.add_argument("--jit", action="store_true",
                   help="print the code numba compiles for grad(f, jit=True) (specialised to the "
                        "argument types at the first call), or where it cannot")
    p.add_argument("--shapes", nargs="+", action="extend", metavar="NAME=DIMS",
                   help="print the gradient specialised to arguments of these shapes (W=64x10 "
                        "b=10; a float scalar as x=), as grad runs it for such a call")
    p.add_argument("--dtype", help="the dtype of the --shapes arrays (default: float64)")
    p.add_argument("--stages", action="store_true", help="print the code after every compiler pass")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")
    return p


def load_function(target: str) -> Any:
    """Import ``FILE.py:FUNCTION`` or ``module.path:FUNCTION`` and return the function."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise UsageError(f"expected FILE.py:FUNCTION or module.path:FUNCTION, got '{target}'")
    if where.endswith(".py") or os.sep in where or "/" in where:
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise CLIError(f"{where}: no such file")
        module_name = os.path.splitext(os.path.basename(path))[0]
        if not module_name.isidentifier() or keyword.iskeyword(module_name):
            module_name = "s2sad_target"
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except SyntaxError as exc:
            raise S2SADError(f"invalid syntax: {exc.msg}", _syntax_location(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the user's module failed to import
            raise CLIError(f"{where}: importing it failed: {type(exc).__name__}: {exc}") from exc
        except SystemExit as exc:  # a script that runs (and exits) when imported
            raise CLIError(f"{where}: importing it exited (SystemExit: {exc.code}); put the script's "
                           f"own code under 'if __name__ == \"__main__\":'") from None
    else:
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(where)
        except SyntaxError as exc:
            raise S2SADError(f"invalid syntax: {exc.msg}", _syntax_location(exc)) from None
        except ImportError as exc:
            raise CLIError(f"cannot import module '{where}': {exc}") from exc
        except SystemExit as exc:
            raise CLIError(f"{where}: importing it exited (SystemExit: {exc.code}); put the module's "
                           f"own code under 'if __name__ == \"__main__\":'") from None
    fn: Any = module
    for part in name.split("."):  # Model.loss: a class's function (self is then its first parameter)
        fn = getattr(fn, part, None)
    if fn is None:
        raise CLIError(f"{where} has no function '{name}'")
    return fn


def _syntax_location(exc: SyntaxError) -> Any:
    from .errors import Location

    return Location(exc.filename or "<unknown>", exc.lineno or 0, exc.offset or 0, exc.text or "")


def _wrt(values: Sequence[str] | None, fn: Any) -> Any:
    if not values:
        return fn._wrt if isinstance(fn, Differentiable) else 0
    parsed = [int(v) if v.lstrip("-").isdigit() else v for v in values]
    return parsed[0] if len(parsed) == 1 else tuple(parsed)


def highlight(code: str) -> str:
    """Python source in ANSI terminal colours (Pygments)."""
    from pygments import highlight as pygments_highlight
    from pygments.formatters import TerminalFormatter
    from pygments.lexers import PythonLexer

    return pygments_highlight(code, PythonLexer(), TerminalFormatter())


def _use_color(choice: str, stream: Any) -> bool:
    if choice != "auto":
        return choice == "always"
    return hasattr(stream, "isatty") and stream.isatty() and not os.environ.get("NO_COLOR")


def _explain_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="s2sad explain",
        description="Show, line by line, what s2sad differentiates: active, inactive, or "
                    "cut by stop_gradient, and what the gradient saves per loop iteration.")
    p.add_argument("target", metavar="FILE.py:FUNCTION")
    p.add_argument("--wrt", nargs="+", action="extend", metavar="NAME_OR_INDEX")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")
    return p


def _signature(fn: Any, shapes: list[str], dtype: str) -> tuple[Any, ...]:
    """``--shapes W=64x10 b=10 x=``: per positional parameter, (shape, dtype) or float
    (``object`` for one not given: nothing is assumed of it)."""
    import numpy as np

    try:
        kind = np.dtype(dtype)
    except TypeError:
        raise UsageError(f"--dtype {dtype}: not a NumPy dtype (float64, float32, ...)") from None
    code = fn.__code__
    params = code.co_varnames[:code.co_argcount]
    given: dict[str, Any] = {}
    for item in shapes:
        name, equals, dims = item.partition("=")
        if not equals or name not in params:
            if not params:
                raise UsageError(f"--shapes {item}: {fn.__name__} has no named positional parameter "
                                 f"(--shapes gives their shapes; *args cannot be given one)")
            raise UsageError(f"--shapes {item}: write NAME=DIMS for a positional parameter of "
                             f"{fn.__name__} ({', '.join(params)}), for example {params[0]}=64x10")
        sizes = dims.split("x")
        if dims and not all(n.isascii() and n.isdigit() for n in sizes):  # (int() takes "-3")
            raise UsageError(f"--shapes {item}: the dimensions are non-negative integers joined by x "
                             f"({name}=64x10, {name}=10; {name}= for a float)")
        given[name] = (tuple(map(int, sizes)), kind) if dims else float
    return tuple(given.get(p, object) for p in params)


def _report(exc: Exception, debug: bool, prog: str = "s2sad") -> int:
    if debug:
        traceback.print_exc()
    if isinstance(exc, UsageError):
        print(f"usage: {prog} FILE.py:FUNCTION [--wrt NAME ...] (see {prog} --help)", file=sys.stderr)
    print(f"{prog}: error: {exc}" if isinstance(exc, CLIError) or exc.location is None else str(exc),
          file=sys.stderr)
    return exc.exit_code if isinstance(exc, CLIError) else 1


def explain_main(argv: Sequence[str]) -> int:
    """``s2sad explain FILE.py:FUNCTION [--wrt ...]``."""
    from .explain import explain

    args = _explain_parser().parse_args(argv)
    try:
        fn = load_function(args.target)
        text = explain(fn, _wrt(args.wrt, fn))
    except (S2SADError, CLIError) as exc:
        return _report(exc, args.debug, "s2sad explain")
    sys.stdout.write(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["explain"]:
        return explain_main(argv[1:])
    args = _parser().parse_args(argv)
    color = _use_color(args.color, sys.stdout)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = _code(args, color)
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
    except (S2SADError, CLIError) as exc:
        return _report(exc, args.debug)
    if args.stages:
        return 0
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(code)
        except OSError as exc:
            return _report(CLIError(f"cannot write {args.output}: {exc.strerror}"), args.debug)
        print(f"wrote {args.output}", file=sys.stderr)
        return 0
    sys.stdout.write(highlight(code) if color else code)
    return 0


def _code(args: argparse.Namespace, color: bool) -> str:
    """The code the command line prints: the generated code (with ``--stages``, printed after
    every pass), or what ``--jit`` compiles, or a ``--standalone`` module."""
    fn = load_function(args.target)

    def show(name: str, text: str) -> None:
        text = highlight(text) if color else text
        sys.stdout.write(f"# ---- after pass {name} ----\n{text.rstrip()}\n\n")

    wrt = _wrt(args.wrt, fn)
    code = _generated(fn, wrt, args, show if args.stages else None)
    if args.jit and not args.stages:
        if args.mode != "reverse" or args.standalone:
            raise UsageError("--jit shows the compiled gradient: it takes neither --mode "
                             "forward/hvp nor --standalone")
        from .jit import jit_source

        code = jit_source(fn, wrt)
    if args.standalone and not args.stages:
        from .standalone import make_standalone

        code = make_standalone(code, target(fn, wrt).fn)
    return code


def _generated(fn: Any, wrt: Any, args: argparse.Namespace, stages: Callable[[str, str], None] | None) -> str:
    """The generated code of ``--mode`` (specialised to ``--shapes``, if given) of the function
    behind ``fn`` (a bound method's, a partial's, an object's ``__call__``)."""
    if args.dtype is not None and not args.shapes:
        raise UsageError(f"--dtype {args.dtype} is the dtype of the --shapes arrays: give --shapes too "
                         f"(--shapes x=64x10 --dtype {args.dtype})")
    if args.shapes and (args.mode != "reverse" or args.jit):
        raise UsageError("--shapes specialises the gradient: it takes neither --mode "
                         "forward/hvp nor --jit")
    t = target(fn, wrt)
    if args.mode == "hvp":
        gradient = build(t.fn, t.wrt, "grad")
        names = wrt_names(t.fn, t.wrt)[0]
        return build(gradient, names if len(names) > 1 else names[0], "jvp", stages).__s2sad_source__
    if args.shapes:
        signature = _signature(t.fn, args.shapes, args.dtype or "float64")
        if stages is not None:
            return build(t.fn, t.wrt, "grad", stages, shapes=signature).__s2sad_source__
        generic = build(t.fn, t.wrt, "grad")
        return specialized_for(t.fn, t.wrt, "grad", signature, generic).__s2sad_source__
    return build(t.fn, t.wrt, "grad" if args.mode == "reverse" else "jvp", stages).__s2sad_source__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
