"""Compiled gradients: the generated code compiled by numba (``grad(f, jit=True)``).

The generated gradient is ordinary Python over NumPy, so numba can compile it whole, loops
and all.  What stands in the way is small and known: the runtime helpers it calls decide
what to do from their arguments' Python types (numba implementations of them, decided once
per signature, are in :mod:`s2sad.jit_runtime`; reductions over an axis, which numba's
NumPy lacks with ``keepdims=``, in :mod:`s2sad.jit_arrays`), and names it reads from the
user's module or closure (numbers and arrays: passed in as extra arguments at each call, so a changed
global is seen as the NumPy code sees it, and nothing of the user's is baked into a cache).

The code is written to a file under the cache directory named by a hash of what is compiled,
so ``numba.njit(cache=True)`` keeps the machine code on disk across processes.  numba's
dispatcher specialises on the argument types (one compiled function per signature).  The
tape of a ``range`` loop is preallocated, one column per saved value (:mod:`s2sad.jit_tape`);
other tapes are lists that numba types from their appends (growable buffers of tuples).

A construct numba cannot compile is reported as a :class:`JitError` at the user's line
(``jit=True``), or falls back to the NumPy code with one :class:`JitWarning` (``jit="auto"``).
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import math
import os
import pathlib
import re
import sys
import types
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import runtime as rt
from .errors import JitError, JitWarning, Location, S2SADError, user_line
from .jit_syntax import POWER, SQUARE, power_call
from .jit_tape import COLUMN, GET, PUT, preallocate
from .tracebacks import user_stacklevel

INSTALL = 'pip install "s2sad[jit]"'
MODULES = (np, math)  # the modules compiled code may read
BUILTINS = frozenset({"range", "len", "float", "int", "abs", "min", "max", "bool", "enumerate",
                      "zip", "reversed", "round", "slice", "True", "False", "None"})
_VERSION = "3"  # bump to invalidate cached files when the transformation changes
MATMUL = "_jit_matmul"  # the name compiled code calls for ``@``
#: Code without a loop, called with at least this many array elements, runs as NumPy code:
#: NumPy's vectorised kernels are what the compiled code would run, less its allocations
#: (numba wins on loops and on small arrays and numbers, where Python's overhead is the cost).
VECTORISED = 1024
BLANK, ONE = "_jit_blank", "_jit_one"  # a stand-in for a ufunc's result (jit_arrays.blank, one)
# the names compiled code calls for reductions over an axis (jit_arrays.AXIS_REDUCTIONS)
REDUCTIONS = {"sum": "_jit_sum", "max": "_jit_max", "amax": "_jit_max", "min": "_jit_min", "amin": "_jit_min",
              "mean": "_jit_mean"}


def cache_dir() -> str:
    """Where compiled files and numba's cache live: ``$S2SAD_JIT_CACHE``, or
    ``$XDG_CACHE_HOME/s2sad/jit`` (``~/.cache/s2sad/jit``)."""
    explicit = os.environ.get("S2SAD_JIT_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "s2sad", "jit")


def _numba() -> Any:
    try:
        import numba  # noqa: F401
        from . import jit_runtime  # noqa: F401  (registers the helpers' implementations)
    except ImportError as exc:
        raise JitError(f"jit=True compiles the gradient with numba, which is not installed "
                       f"({exc}); install it with: {INSTALL}") from None
    return numba


# ---- the code numba compiles ----------------------------------------------------------------

@dataclass(frozen=True)
class Extra:
    """A name the generated code reads from the user's module or closure: passed in."""

    name: str
    read: Callable[[], Any]


@dataclass(frozen=True)
class Plan:
    """What is compiled: the function's transformed source and how to call it."""

    source: str          # the compiled function, as Python source
    tree: ast.Module     # the same, with the generated text's line numbers
    name: str
    params: tuple[str, ...]   # the generated function's parameters (then the extras)
    extras: tuple[Extra, ...]
    namespace: dict[str, Any]
    checks: tuple[tuple[int, str], ...]  # check_wrt(args[i], label) before each call
    loops: bool = True   # whether the code has a loop (else it is straight-line array code)


class _NotCompiled(Exception):
    """A construct of the generated code that jit does not compile; ``line`` is in its text."""

    def __init__(self, what: str, line: int) -> None:
        super().__init__(what)
        self.what = what
        self.line = line


def plan(generated: types.FunctionType) -> Plan:
    """The compiled form of ``generated`` (raises _NotCompiled)."""
    text = generated.__s2sad_source__
    name = generated.__name__
    module = ast.parse(text)
    func = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name)
    args = func.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise _NotCompiled("a function with *args, **kwargs, keyword-only or positional-only "
                           "parameters", func.lineno)
    params = tuple(a.arg for a in args.args)
    loops = any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(func))
    stored = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    local = set(params) | stored
    cells = dict(zip(generated.__code__.co_freevars, generated.__closure__ or ()))
    namespace: dict[str, Any] = {}
    extras: list[Extra] = []
    seen: set[str] = set()
    for node in ast.walk(func):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)) or node.id in local \
                or node.id in seen:
            continue
        seen.add(node.id)
        _resolve(node, cells, generated.__globals__, namespace, extras)
    # the checks of the wrt arguments run in Python, before the compiled code (a string
    # argument would cost compile time): what remains is the rest of the body
    checks = tuple(_check_of(stmt) for stmt in func.body if _check_of(stmt))
    func.body = [stmt for stmt in func.body if not _check_of(stmt)]
    preallocate(func)
    func = _Rewrite({n for n, v in namespace.items() if v is np}).visit(func)
    func.args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in (*params, *(e.name for e in extras))],
                              vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    func.decorator_list = []
    func.returns = None
    tree = ast.Module(body=[func], type_ignores=[])
    ast.fix_missing_locations(tree)
    return Plan(ast.unparse(tree), tree, name, params, tuple(extras), namespace,
                tuple((params.index(p), label) for p, label in checks), loops)


def _check_of(stmt: ast.stmt) -> tuple[str, str] | None:
    """``(parameter, label)`` of a statement ``check_wrt(parameter, "label")``."""
    if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "check_wrt"
            and len(stmt.value.args) == 2 and isinstance(stmt.value.args[0], ast.Name)
            and isinstance(stmt.value.args[1], ast.Constant)):
        return stmt.value.args[0].id, stmt.value.args[1].value
    return None


def _resolve(node: ast.Name, cells: dict[str, Any], globals_: dict[str, Any], namespace: dict[str, Any],
             extras: list[Extra]) -> None:
    """Decide how the compiled code gets the free name ``node.id``."""
    name = node.id
    if name in cells:
        cell = cells[name]
        value, read = cell.cell_contents, (lambda cell=cell: cell.cell_contents)
    elif name in globals_:
        value, read = globals_[name], (lambda name=name: globals_[name])
    elif name in BUILTINS:
        return
    elif hasattr(builtins, name):
        raise _NotCompiled(f"the builtin {name}()", node.lineno)
    else:
        return  # a NameError of the NumPy code too: left to the call
    if name in BUILTINS and getattr(builtins, name, None) is value:
        return  # (a builtin the generated code reads from its cells)
    if isinstance(value, types.ModuleType):
        if value not in MODULES:
            raise _NotCompiled(f"the module {value.__name__}", node.lineno)
        namespace[name] = value
    elif isinstance(value, types.FunctionType) and getattr(rt, value.__name__, None) is value:
        namespace[name] = value  # a runtime helper: jit_runtime has its numba implementation
    elif isinstance(value, (bool, int, float, np.ndarray, np.number, np.bool_)):
        extras.append(Extra(name, read))
    elif callable(value):
        what = getattr(value, "__qualname__", None) or type(value).__name__
        if getattr(value, "__s2sad_generated__", False):
            what = f"the gradient code of a function it calls ({what})"
        raise _NotCompiled(f"a call of {what}", node.lineno)
    else:
        raise _NotCompiled(f"the {type(value).__name__} {name}", node.lineno)


class _Rewrite(ast.NodeTransformer):
    """``a @ b``, ``np.dot(a, b)`` and ``a.dot(b)`` become calls of jit_runtime's matmul
    (loops where numba's own product compiles slowly; it compiles only arrays of at most
    two dimensions, for which the three agree); ``stand_in_for(f, *operands)`` (a stand-in
    made without computing ``f``) becomes the call ``f(*operands)``: compiled, computing is
    cheaper than the bookkeeping.  ``np.sum``, ``np.max``, ``np.min``, ``np.mean`` (and the
    methods) with ``axis=`` or ``keepdims=`` become calls of jit_arrays' implementations."""

    def __init__(self, numpy_names: set[str]) -> None:
        self.numpy_names = numpy_names

    def visit_For(self, node: ast.For) -> Any:
        """``for a, b in reversed(tape):`` (numba has no reversed list) as an index loop."""
        self.generic_visit(node)
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "reversed"
                and len(it.args) == 1 and isinstance(it.args[0], ast.Name)):
            return node
        tape, index = it.args[0].id, f"_jit_entry_{node.lineno}_{node.col_offset}"
        down = ast.parse(f"range(len({tape}) - 1, -1, -1)", mode="eval").body
        entry = ast.Assign([node.target], ast.Subscript(ast.Name(tape, ast.Load()), ast.Name(index, ast.Load()),
                                                       ast.Load()))
        loop = ast.For(ast.Name(index, ast.Store()), down, [entry, *node.body], node.orelse)
        for made in [*ast.walk(down), *ast.walk(entry), loop]:
            ast.copy_location(made, node)
        return loop

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            return ast.copy_location(ast.Call(ast.Name(MATMUL, ast.Load()), [node.left, node.right], []), node)
        return power_call(node) if isinstance(node.op, ast.Pow) else node

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "dot" and not node.keywords:
            if self._numpy(func.value):
                operands = node.args if len(node.args) == 2 else None  # np.dot(a, b)
            else:
                operands = [func.value, *node.args] if len(node.args) == 1 else None  # a.dot(b)
            if operands:
                return ast.copy_location(ast.Call(ast.Name(MATMUL, ast.Load()), operands, []), node)
        if isinstance(node.func, ast.Name) and node.func.id == "stand_in_for" and node.args:
            blank = self._blank(node)
            if blank:
                return blank
            keywords = [k for k in node.keywords
                        if not (k.arg == "keepdims" and isinstance(k.value, ast.Constant) and k.value.value is False)]
            node = ast.copy_location(ast.Call(node.args[0], node.args[1:], keywords), node)
        return self._reduction(node) or node

    def _blank(self, node: ast.Call) -> ast.Call | None:
        """``stand_in_for(np.ufunc, a, b)`` as ``_jit_blank(np.ufunc(_jit_one(a), _jit_one(b)), a, b)``:
        the ufunc applied to two numbers for the result's dtype, a view of one number for its
        shape (the gradient reads nothing else of it; computing an array would cost a pass)."""
        ufunc, operands = node.args[0], node.args[1:]
        if not (isinstance(ufunc, ast.Attribute) and self._numpy(ufunc.value)
                and isinstance(getattr(np, ufunc.attr, None), np.ufunc)) or node.keywords or not 1 <= len(operands) <= 2:
            return None
        example = ast.Call(ufunc, [ast.Call(ast.Name(ONE, ast.Load()), [o], []) for o in operands], [])
        return ast.copy_location(ast.Call(ast.Name(BLANK, ast.Load()), [example, *operands], []), node)

    def _numpy(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.numpy_names

    def _reduction(self, node: ast.Call) -> ast.Call | None:
        """``np.sum(x, axis, keepdims=k)`` or ``x.sum(axis, keepdims=k)`` as
        ``_jit_sum(x, axis, k)`` (when an axis or keepdims is given, and nothing else)."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in REDUCTIONS):
            return None
        args = list(node.args) if self._numpy(func.value) else [func.value, *node.args]
        given = dict(zip(("x", "axis", "keepdims"), args))
        if len(args) > 3 or not args or any(k.arg not in ("axis", "keepdims") or k.arg in given for k in node.keywords):
            return None
        given.update({k.arg: k.value for k in node.keywords})
        if len(given) == 1:
            return None  # numba's own
        operands = [given["x"], given.get("axis", ast.Constant(None)), given.get("keepdims", ast.Constant(False))]
        return ast.copy_location(ast.Call(ast.Name(REDUCTIONS[func.attr], ast.Load()), operands, []), node)


def _write(plan_: Plan, text: str) -> tuple[str, str]:
    """The file the compiled code's line numbers refer to (the generated text), named by a
    hash of everything compiled, and the module name numba's cache is keyed by."""
    runtime_hash = _runtime_hash()
    digest = hashlib.sha256("\0".join([_VERSION, runtime_hash, text, plan_.source]).encode()).hexdigest()[:20]
    folder = cache_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{plan_.name}_{digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    # one module per file: the same code under another cache directory is another module
    return path, f"s2sad_jit_{hashlib.sha256(path.encode()).hexdigest()[:20]}"


def _load(plan_: Plan, path: str, name: str) -> types.FunctionType:
    """The function of ``plan_``, in a module registered under ``name``: numba's disk cache
    imports it by name when it loads machine code."""
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name)
        module.__file__ = path
        from .jit_arrays import AXIS_REDUCTIONS, blank, one
        from .jit_runtime import column, get, matmul, power, put, square
        module.__dict__.update(plan_.namespace, **{MATMUL: matmul, SQUARE: square, POWER: power,
                                                   BLANK: blank, ONE: one,
                                                   COLUMN: column, PUT: put, GET: get})
        module.__dict__.update({name: AXIS_REDUCTIONS[name[len("_jit_"):]] for name in REDUCTIONS.values()})
        exec(compile(plan_.tree, path, "exec"), module.__dict__)  # noqa: S102 - our generated code
        sys.modules[name] = module
    return getattr(module, plan_.name)


_RUNTIME_HASH: list[str] = []


def _runtime_hash() -> str:
    """Cached machine code depends on the helpers' implementations too."""
    if not _RUNTIME_HASH:
        h = hashlib.sha256()
        runtime_files = sorted(pathlib.Path(rt.__file__).parent.glob("*.py"))
        for path in [*runtime_files, *sorted(pathlib.Path(__file__).parent.glob("jit_*.py"))]:
            h.update(path.read_bytes())
        _RUNTIME_HASH.append(h.hexdigest()[:16])
    return _RUNTIME_HASH[0]


# ---- the compiled function ------------------------------------------------------------------

class Compiled:
    """The generated function compiled by numba, called like it.

    ``mode`` True raises a located :class:`JitError` where numba cannot compile the code;
    ``"auto"`` then calls the NumPy code instead, after one :class:`JitWarning`."""

    def __init__(self, generated: types.FunctionType, fn: types.FunctionType, wrt: Any, kind: str,
                 mode: Any, numpy_code: Callable[..., Any] | None = None) -> None:
        self.generated, self.fn, self.wrt, self.kind, self.mode = generated, fn, wrt, kind, mode
        self.numpy_code = numpy_code or generated
        self.__name__ = generated.__name__
        self.__qualname__ = generated.__qualname__
        self.__doc__ = generated.__doc__
        self.__wrapped__ = generated
        self.__s2sad_source__ = generated.__s2sad_source__
        self.signature = inspect.signature(generated)
        self.plan: Plan | None = None
        self.reason = ""  # why the NumPy code runs instead, with jit="auto"
        self._call: Callable[..., Any] = generated
        try:
            numba = _numba()
        except JitError as exc:
            self._refuse(exc.message, None, where=False)
            return
        try:
            self.plan = plan(generated)
        except _NotCompiled as exc:
            self._refuse(exc.what, exc.line)
            return
        path, module = _write(self.plan, self.__s2sad_source__)
        # as in the NumPy code: an index out of range raises IndexError, and x / 0 is inf or nan
        self.dispatcher = numba.njit(cache=True, boundscheck=True, error_model="numpy")(_load(self.plan, path, module))
        self._call = self._compiled_call()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def _compiled_call(self) -> Callable[..., Any]:
        from numba.core.errors import NumbaError

        plan_, dispatcher, signature = self.plan, self.dispatcher, self.signature
        arity, checks, extras = len(plan_.params), plan_.checks, plan_.extras
        check_wrt_of, fn, numpy_code, straight = rt.checks.check_wrt_of, self.fn, self.numpy_code, not plan_.loops
        ndarray = np.ndarray

        def call(*args: Any, **kwargs: Any) -> Any:
            if kwargs or len(args) != arity:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                args = tuple(bound.arguments[p] for p in plan_.params)
            if straight and sum([a.size for a in args if a.__class__ is ndarray]) >= VECTORISED:
                return numpy_code(*args)
            for i, label in checks:
                check_wrt_of(fn, args[i], label)
            if extras:
                args = (*args, *[e.read() for e in extras])
            try:
                return dispatcher(*args)
            except NumbaError as exc:  # (raised only while compiling for a new signature)
                what, line = _numba_reason(exc, dispatcher.py_func.__code__.co_filename)
            except Exception as exc:
                if _compiled_for(dispatcher, args):
                    raise  # the compiled code raised, as the NumPy code would
                # numba failed inside while compiling
                what, line = f"this function (numba failed: {type(exc).__name__}: {exc})", None
            self._refuse(what, line)
            return self._call(*args[:arity])

        return call

    @property
    def source(self) -> str:
        """What numba compiles (or why nothing is)."""
        if self.plan is None or self.reason:
            return f"# not compiled: {self.reason}\n"
        return _describe(self.plan, self.__s2sad_source__)

    def _refuse(self, what: str, line: int | None, where: bool = True) -> None:
        """``what`` cannot be compiled: a located error, or (``jit="auto"``) the NumPy code
        from now on, after one warning."""
        loc = user_line(_user_location(self.fn, self.wrt, self.kind, self.__s2sad_source__, line)) if where else None
        if self.mode != "auto":
            if not where:
                raise JitError(what)
            raise JitError(f"jit=True cannot compile {what}; rewrite the line, or pass jit=\"auto\" "
                           f"to run the NumPy code where numba cannot compile it", loc)
        self.reason = f"{loc}: {what}" if loc else what
        warnings.warn(JitWarning(f"jit=\"auto\": {self.reason}; running the NumPy code"
                                 if not where else
                                 f"jit=\"auto\": numba cannot compile {self.reason}; running the NumPy code"),
                      stacklevel=user_stacklevel())
        self._call = self.numpy_code


def refuse_aux(mode: Any) -> None:
    """``has_aux=True`` is not compiled: an error, or (``jit="auto"``) a warning."""
    message = "jit does not compile a gradient with has_aux=True"
    if mode != "auto":
        raise JitError(f"{message}; drop has_aux, or pass jit=\"auto\" to run the NumPy code")
    warnings.warn(JitWarning(f"jit=\"auto\": {message}; running the NumPy code"),
                  stacklevel=user_stacklevel())


def _compiled_for(dispatcher: Any, args: tuple[Any, ...]) -> bool:
    """Whether ``dispatcher`` holds machine code for the types of ``args``."""
    from numba import typeof

    try:
        return tuple(typeof(a) for a in args) in dispatcher.overloads
    except ValueError:  # a value numba has no type for
        return False


_LINE = re.compile(r'File "([^"]+)", line (\d+)')


_NOISE = ("Failed in", "During", "File", "^", "-", "There are", "Of which", "Overload", "With argument",
          "Rejected", "raised from", "Known signatures", "*", "No match", ">>>")


def _numba_reason(exc: Exception, path: str) -> tuple[str, int | None]:
    """What numba could not compile, in one line (the call and argument types where it
    names them), and the line of the generated text where."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    ours = [m for m in (re.search(r"s2sad\.jit: (.*)", ln) for ln in lines) if m]
    if ours:
        what = ours[0].group(1)
    else:
        what = next((ln for ln in lines if not ln.startswith(_NOISE)), type(exc).__name__)
        signature = next((ln[3:].strip() for ln in lines if ln.startswith(">>>")), None)
        argument = re.search(r"- argument (\d+): Cannot determine Numba type of <class '(\w+)'>", text)
        if argument:
            what = f"an argument of type {argument.group(2)} (argument {int(argument.group(1)) + 1})"
        if "list.append" in what:  # the tape of a loop: one list, pushed to per iteration
            what = ("a loop that saves values of different types for its gradient from one "
                    "iteration or branch to another (numba's lists hold one type)")
        helper = re.search(r"Untyped global name '(\w+)'", what)
        if helper:
            what = f"the call of {helper.group(1)} (no numba implementation in s2sad.jit_runtime)"
        if what.startswith("No implementation of function") and signature:
            what = f"the call {signature} (numba has no implementation of it)"
        what = what if len(what) < 240 else what[:237] + "..."
    found = [int(m.group(2)) for m in _LINE.finditer(text) if os.path.exists(m.group(1))
             and os.path.samefile(m.group(1), path)]
    return what, (found[-1] if found else None)


def _user_location(fn: types.FunctionType, wrt: Any, kind: str, text: str, line: int | None) -> Location | None:
    """The user's line that generated line ``line`` of ``text`` came from: the ``# grad of
    line N`` comment above it in the backward pass; in the forward pass, the statement that
    renders to it."""
    from .passes.source import read_source
    try:
        source = read_source(fn)
    except S2SADError:
        return None
    fallback = source.location(1, 0)
    if line is None:
        return fallback
    lines = text.splitlines()
    target = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    for above in reversed(lines[:line]):
        m = re.match(r"\s*# grad of line (\d+):", above)
        if m:
            return _at_line(source, int(m.group(1)))
        if re.match(r"\s*d\w+ = seed", above) or above.strip().startswith("def "):
            break
    # a line of its own (a tape push) is located at the statement it belongs to
    chain, indent = [target], len(lines[line - 1]) - len(lines[line - 1].lstrip())
    for above in reversed(lines[:line - 1]):
        if above.strip() and len(above) - len(above.lstrip()) < indent:
            chain.append(above.strip())
            indent = len(above) - len(above.lstrip())
    return _forward_location(fn, wrt, kind, chain) or fallback


def _at_line(source: Any, number: int) -> Location:
    """``number`` is the line in the user's file; ``source.location`` counts from the def."""
    first = source.first_line
    text = source.text.splitlines()[number - first] if 0 <= number - first < len(source.text.splitlines()) else ""
    return source.location(number - first + 1, len(text) - len(text.lstrip()))


def _forward_location(fn: types.FunctionType, wrt: Any, kind: str, targets: list[str]) -> Location | None:
    """The location of the first of ``targets`` that is the code of a forward statement
    (the pipeline is run again: this is the error path)."""
    from .compiler import build
    from .ir import Assign, If, Loop, if_header, statements
    from .passes import codegen
    from .pipeline import State, run

    names = tuple(wrt) if isinstance(wrt, (tuple, list)) else (wrt,)
    try:
        state = run(State(fn, names, isinstance(wrt, (tuple, list)), kind, build=build))
    except S2SADError:
        return None
    found: dict[str, Location] = {}
    for stmt in statements(state.adjoint.forward):
        if isinstance(stmt, Assign):
            code = codegen.statement_code(stmt, state.adjoint.use).split("\n")
        elif isinstance(stmt, Loop):
            code = [f"{stmt.header}:"]
        elif isinstance(stmt, If):
            code = [if_header(stmt)]
        else:
            code = [getattr(stmt, "code", "")]
        for c in code:
            found.setdefault(c.strip(), stmt.loc)
    return next((found[t] for t in targets if t in found), None)


# ---- entry points -----------------------------------------------------------------------------

def compiled(generated: Callable[..., Any], fn: types.FunctionType, wrt: Any, kind: str,
             mode: Any, numpy_code: Callable[..., Any] | None = None) -> Compiled:
    """The compiled form of ``generated`` (the code s2sad generated for ``fn``), made once
    (kept on ``generated``: it goes when the generated code is regenerated); ``numpy_code``
    runs where NumPy's code does (the specialising dispatcher in front of ``generated``)."""
    if mode not in (True, "auto"):
        raise JitError(f"jit takes True, False or \"auto\", not {mode!r}")
    per = generated.__dict__.setdefault("__s2sad_jit__", {})
    known = per.get(mode)
    if known is None:
        known = per[mode] = Compiled(generated, fn, wrt, kind, mode, numpy_code)
    return known


def jit_source(f: Any, wrt: Any = 0) -> str:
    """What ``grad(f, wrt, jit=True)`` gives numba to compile (the CLI's ``--jit``); a
    located :class:`JitError` for what it cannot (numba's typing, at the first call, may
    refuse more)."""
    from .compiler import build, target

    t = target(f, wrt)
    generated = build(t.fn, t.wrt, "grad")
    try:
        plan_ = plan(generated)
    except _NotCompiled as exc:
        where = _user_location(t.fn, t.wrt, "grad", generated.__s2sad_source__, exc.line)
        raise JitError(f"jit=True cannot compile {exc.what}", where) from None
    return _describe(plan_, generated.__s2sad_source__)


def _describe(plan_: Plan, text: str) -> str:
    head = [text.splitlines()[0].replace("# Generated by s2sad", "# Compiled by numba (jit=True); generated by s2sad"),
            "# specialised to the argument types at the first call (one machine-code function per",
            "# signature, cached on disk); the helpers it calls are s2sad.jit_runtime's numba",
            "# implementations, chosen by the argument types; a @ b is jit_runtime.matmul, and",
            "# _jit_sum, _jit_max, _jit_min, _jit_mean are jit_arrays' reductions over an axis"]
    if not plan_.loops:
        head.append(f"# no loop: a call with {VECTORISED} array elements or more runs the NumPy code "
                    f"(NumPy's vectorised kernels)")
    if plan_.checks:
        head.append("# checked in Python before each call: " + ", ".join(label for _, label in plan_.checks))
    if plan_.extras:
        head.append("# read from the function's module or closure at each call: "
                    + ", ".join(e.name for e in plan_.extras))
    return "\n".join(head) + "\n\n" + plan_.source + "\n"


def available() -> bool:
    """Whether numba can be imported."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True
