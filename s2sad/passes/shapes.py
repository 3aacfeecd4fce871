"""Shape and dtype inference over a generated function, for one call's argument types.

From what is known of the arguments (:class:`~s2sad.rules.shapes.Known`: shape, dtype,
Python type), every variable of the forward and backward code gets what is known of it
wherever it is read, by NumPy's own rules (the shape functions the rules declare, from
rules/shapes.py), or None where that depends on the data (a loop that grows an array, a
boolean mask, a function without a shape function).
The analysis is flow-insensitive: a variable is known only if every assignment to it gives
the same shape, dtype and type, which loops and branches reach by iterating to a fixed point;
a Python int (``d = X.shape[1]``) also has its value where every assignment gives the same
one (a loop's counter has none), for the shapes of the arrays made from it.
:func:`origins` follows which arrays the code made itself (and may return as they are).
"""
from __future__ import annotations

import ast
import builtins
import functools
import operator
import types
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Optional

import numpy as np

from ..ir import Assign, Call, Const, If, Loop, Opaque, Raw, Stmt
from ..rules.registry import REGISTRY
from ..rules.shapes import VIEW_FUNCTIONS, VIEW_METHODS, Known, KnownTree, join, of_value
from .adjoint import Adjoint, Block, Out, runtime_object
from .codegen import statement_code
from .parsed_lines import parsed_line

_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Pow: operator.pow, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.MatMult: operator.matmul, ast.USub: operator.neg, ast.UAdd: operator.pos}
_COMPARISONS: dict[type, Callable[..., Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne}
READ_ONLY = "<read-only>"  # in origins: the name may hold a read-only view
_UNSET = object()  # not assigned yet in this round of the fixed point
_INT = Known((), np.dtype(np.int64), int)
_COUNTER = ast.Name("<an item of a range>", ast.Load())  # a loop's counter: an int, of no one value


def int_known(value: int) -> Known:
    """What is known of a Python int of this value."""
    return replace(_INT, value=value)


def ints_known(values: tuple[int, ...]) -> Known:
    """What is known of a tuple of Python ints of these values (a shape)."""
    return Known((len(values),), np.dtype(np.int64), tuple, values)


class _Pending(Exception):
    """An operand is not assigned yet: the statement waits for the next round."""


Helper = Callable[["Evaluator", list[ast.expr]], Optional[Known]]
TupleHelper = Callable[["Evaluator", list[ast.expr]], Optional[tuple[Optional[Known], ...]]]
FunctionHelper = Callable[[Any, list[Optional[Known]]], Optional[Known]]


@dataclass
class Evaluator:
    """What is known of expressions of the generated code, given what is known of names."""

    env: dict[str, Any]
    resolve: Callable[[str], Any]  # a name that is not a local: the object it denotes
    helpers: dict[str, Helper]  # spelled runtime helper -> what it returns
    tuples: dict[str, TupleHelper] = field(default_factory=dict)  # name -> what the tuple it returns holds
    functions: FunctionHelper | None = None  # what a user's Python function returns, from its arguments
    settled: bool = False  # a name no assignment has given a value yet is unknown (not pending)

    def value(self, node: ast.expr) -> Known | None:
        if node is _COUNTER:
            return _INT
        if isinstance(node, ast.Name):
            if node.id in self.env:
                known = self.env[node.id]
                if known is _UNSET:
                    if self.settled:
                        return None
                    raise _Pending
                return None if isinstance(known, KnownTree) else known  # (a container: see tree)
            return None  # a global: read live, it may change between calls
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return int_known(node.value)
        if isinstance(node, ast.Constant):
            return of_value(node.value) if type(node.value) is float else None
        if isinstance(node, ast.Tuple):
            items = [self.value(e) for e in node.elts]
            values = tuple(v for k in items if k is not None and (v := k.int_value) is not None)
            return ints_known(values) if len(values) == len(items) else None
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return self.apply(_OPERATORS[type(node.op)], [node.operand], {})
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return self.apply(_OPERATORS[type(node.op)], [node.left, node.right], {})
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARISONS:
            return self.apply(_COMPARISONS[type(node.ops[0])], [node.left, node.comparators[0]], {})
        if isinstance(node, ast.Call):
            found = self.call(node)
            return None if isinstance(found, KnownTree) else found  # (a container: see known)
        if isinstance(node, ast.IfExp):
            real = self.realness(node.test)
            if real is None:
                body, orelse = self.value(node.body), self.value(node.orelse)
                return body if body == orelse else None
            return self.value(node.body if real else node.orelse)
        if isinstance(node, ast.Attribute) and isinstance(self.callee(node.value), type(np)):
            constant = self.callee(node)  # np.pi, np.float32
            if isinstance(constant, type) and issubclass(constant, np.number):
                return Known((), np.dtype(constant), np.dtype)
            return of_value(constant) if type(constant) is float else None
        if isinstance(node, ast.Attribute) and node.attr == "T":
            return self.apply(np.transpose, [node.value], {})
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "size", "ndim", "dtype"):
            x = self.value(node.value)
            if x is None or not x.array:
                return None
            if node.attr == "dtype":
                return Known((), x.dtype, np.dtype)
            return ints_known(x.shape) if node.attr == "shape" else int_known(
                len(x.shape) if node.attr == "ndim" else int(np.prod(x.shape)))
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        return None

    def apply(self, fun: Any, args: list[ast.expr], kwargs: dict[str, Any]) -> Known | None:
        shape = REGISTRY.shape(fun)
        return None if shape is None else shape([self.value(a) for a in args], kwargs)

    def call(self, node: ast.Call) -> Known | KnownTree | None:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        if isinstance(node.func, ast.Name) and node.func.id in self.helpers:
            return self.helpers[node.func.id](self, node.args)
        if self.callee(node.func) is len and len(node.args) == 1 and not node.keywords:
            known = self.value(node.args[0])
            return int_known(known.shape[0]) if known is not None and (
                known.array or known.kind is tuple) and known.shape else None
        kwargs = {k.arg: self.keyword(k.value) for k in node.keywords if k.arg}
        if any(v is _UNSET for v in kwargs.values()):
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and (method := REGISTRY.shape(getattr(np.ndarray, func.attr, None))):
            receiver = self.value(func.value)  # an array method's: the receiver comes first
            if receiver is not None and receiver.array:
                return method([receiver, *[self.value(a) for a in node.args]], kwargs)
        if isinstance(func, ast.Attribute) and (method := REGISTRY.shape(getattr(np.random.Generator, func.attr, None))):
            receiver = self.value(func.value)  # a random Generator's sampler
            if receiver is not None and receiver.kind is np.random.Generator:
                return method([self.value(a) for a in node.args], kwargs)
        fun = self.callee(func)
        if self.functions is not None and isinstance(fun, types.FunctionType) and not node.keywords \
                and REGISTRY.rule(fun) is None and not REGISTRY.is_nondifferentiable(fun) \
                and REGISTRY.shape(fun) is None:  # (a user's function, not a primitive)
            return self.functions(fun, [self.known(a) for a in node.args])
        return self.apply(fun, node.args, kwargs)

    def keyword(self, node: ast.expr) -> Any:
        """A keyword argument's value: a literal, an int or a tuple of ints whose value is
        known, or a dtype (``np.float32``, ``x.dtype``); _UNSET for anything else."""
        try:
            return ast.literal_eval(node)
        except ValueError:
            pass
        known = self.value(node)
        if known is not None and known.kind is np.dtype:
            return known.dtype
        if known is not None and known.value is not None:
            return known.value
        dtype = self.callee(node)
        return dtype if isinstance(dtype, type) and issubclass(dtype, (np.number, float, int)) else _UNSET

    def callee(self, node: ast.expr) -> Any:
        """The object a call calls: a global name, or an attribute of a module."""
        if isinstance(node, ast.Name):
            return None if node.id in self.env else self.resolve(node.id)
        if isinstance(node, ast.Attribute):
            owner = self.callee(node.value)
            if owner is not None and isinstance(owner, type(np)):
                return getattr(owner, node.attr, None)
        return None

    def items(self, node: ast.expr) -> tuple[Known | KnownTree | None, ...] | None:
        """What is known of the items of a tuple that ``node`` evaluates to (a helper's that
        returns several values, a known tuple or list); None if not known."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.tuples:
            return self.tuples[node.func.id](self, node.args)
        tree = self.tree(node)
        if tree is not None:
            return tree.items if tree.kind is not dict else None
        known = self.value(node)  # n, d = x.shape
        if known is None or known.kind is not tuple:
            return None
        return tuple(map(int_known, known.ints)) if known.ints is not None else (_INT,) * known.shape[0]

    def known(self, node: ast.expr) -> Known | KnownTree | None:
        """What is known of ``node``, a dict, list or tuple too (a helper's result among them)."""
        if isinstance(node, ast.Call):
            return self.call(node)
        return self.tree(node) or self.value(node)

    def tree(self, node: ast.expr) -> KnownTree | None:
        """What is known of a dict, list or tuple ``node``: a name holding one, or an item of
        one at a constant key (``params["layer"]``); None if not known."""
        if isinstance(node, ast.Name):
            known = self.env.get(node.id)
            if known is _UNSET and not self.settled:
                raise _Pending
            return known if isinstance(known, KnownTree) else None
        if isinstance(node, ast.Subscript):
            item = self.tree_item(node)
            return item if isinstance(item, KnownTree) else None
        return None

    def realness(self, test: ast.expr) -> bool | None:
        """What ``np.isrealobj(x)`` (a rule's test) is, where ``x`` is known; None otherwise."""
        if not (isinstance(test, ast.Call) and len(test.args) == 1 and not test.keywords
                and self.callee(test.func) is np.isrealobj):
            return None
        known = self.value(test.args[0])
        return None if known is None else known.dtype.kind != "c"

    def tree_item(self, node: ast.Subscript) -> Known | KnownTree | None:
        """What is known of ``tree[key]``, a constant key of a known container."""
        tree = self.tree(node.value)
        if tree is None or not isinstance(node.slice, ast.Constant):
            return None
        return tree.item(node.slice.value)

    def array(self, node: ast.expr) -> bool:
        known = self.value(node)
        return known is not None and known.array

    def subscript(self, node: ast.Subscript) -> Known | None:
        held = self.tree_item(node)  # params["means"]
        if held is not None:
            return held if isinstance(held, Known) else None
        x = self.value(node.value)
        if x is not None and x.kind is tuple:  # x.shape[0]
            return self.item(x, node.slice)
        if x is None or not x.array:
            return None
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        shape, dims = [], list(x.shape)
        for item in items:
            if isinstance(item, ast.Constant) and item.value is None:
                shape.append(1)
            elif isinstance(item, ast.Slice):
                bounds = [self.bound(p) for p in (item.lower, item.upper, item.step)]
                if not dims or any(b is _UNSET for b in bounds) or bounds[2] == 0:
                    return None
                shape.append(len(range(dims.pop(0))[slice(*bounds)]))
            elif self.integer(item) and dims:
                dims.pop(0)
            else:
                return None
        shape += dims
        return Known(tuple(shape), x.dtype, np.ndarray if shape else x.dtype.type)

    def item(self, x: Known, index: ast.expr) -> Known | None:
        """An item or a slice of a tuple of ints (``x.shape[-1]``, ``x.shape[1:]``)."""
        values = x.ints
        if isinstance(index, ast.Slice):
            bounds = [self.bound(p) for p in (index.lower, index.upper, index.step)]
            if values is None or any(b is _UNSET for b in bounds) or bounds[2] == 0:
                return None
            return ints_known(values[slice(*bounds)])
        if not self.integer(index):
            return None
        i = self.value(index)
        if values is None or i is None or i.int_value is None:
            return _INT
        return int_known(values[i.int_value]) if -len(values) <= i.int_value < len(values) else None

    def bound(self, node: ast.expr | None) -> Any:
        """A slice's bound: None, or an int whose value is known; _UNSET for anything else."""
        if node is None or isinstance(node, ast.Constant) and node.value is None:
            return None
        known = self.value(node)
        return _UNSET if known is None or known.int_value is None else known.int_value

    def integer(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return type(node.value) is int
        known = self.value(node)
        return known is not None and not known.shape and known.dtype.kind in "iu"


@dataclass
class Shapes:
    """The result of the analysis."""

    known: dict[str, Known | None]  # (a dict, list or tuple: None here, its KnownTree in the evaluator's env)
    evaluator: Evaluator = field(repr=False)


def analyze(adj: Adjoint, arguments: dict[str, Known | None], helpers: dict[str, Helper],
            tuples: dict[str, TupleHelper] | None = None, functions: FunctionHelper | None = None) -> Shapes:
    """What is known of every variable of ``adj`` when its parameters are as ``arguments``
    (``helpers`` and ``tuples``: what the functions the code calls by those names return)."""
    statements = list(statements_of(adj))
    env: dict[str, Any] = {p: arguments.get(p) for p in adj.fn.params}
    env.update((name, known) for name, known in arguments.items() if name not in env)  # a jvp's tangent
    for targets, _, _ in statements:
        for name in targets:
            env.setdefault(name, _UNSET)
    spelled = {spelling: name for name, spelling in adj.runtime.items()}
    evaluator = Evaluator(env, lambda name: _resolve(adj, spelled, name), helpers, tuples or {}, functions)
    for settled in (False, True):  # then what depends on a cycle of unassigned names is unknown
        if settled and not any(v is _UNSET for v in env.values()):
            break  # (every name has a value: a settled round would find the same)
        evaluator.settled = settled
        changed = True
        while changed:
            changed = False
            for targets, node, _ in statements:
                try:
                    values = _values(evaluator, targets, node)
                except _Pending:
                    continue
                for name, value in zip(targets, values):
                    changed |= _join(env, name, value)
    final = {n: (None if v is _UNSET else v) for n, v in env.items()}
    known = {n: (None if isinstance(v, KnownTree) else v) for n, v in final.items()}
    return Shapes(known, Evaluator(final, evaluator.resolve, helpers, evaluator.tuples, functions, settled=True))


def _values(evaluator: Evaluator, targets: tuple[str, ...], node: ast.expr | None) -> list[Known | KnownTree | None]:
    """What one assignment gives each of its targets: ``a, b = x, y`` item by item, a known
    tuple or list unpacked, and a call that returns a tuple of known items (a callee's
    forward pass, see passes/specialize.py)."""
    if node is None:
        return [None] * len(targets)
    if len(targets) == 1:
        return [evaluator.known(node)]
    if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) == len(targets):
        return [evaluator.known(e) for e in node.elts]
    value = evaluator.items(node)
    return list(value) if value is not None and len(value) == len(targets) else [None] * len(targets)


def _join(env: dict[str, Any], name: str, value: Known | KnownTree | None) -> bool:
    old = env[name]
    new = value if old is _UNSET else join(old, value)
    env[name] = new
    return new != old


def origins(adj: Adjoint, shapes: Shapes, making: Callable[[ast.expr], bool]) -> dict[str, frozenset[str] | None]:
    """For each variable, the assignments that made the arrays it may hold (a copy ``a = b``
    or a view shares b's; READ_ONLY among them for a read-only view), or None when it may
    hold an array the code did not make (an argument, a helper's result); ``making(node)``
    says whether an expression makes a new array."""
    statements = list(statements_of(adj))
    found: dict[str, Any] = {n: _UNSET for targets, _, _ in statements for n in targets}
    found.update({p: None for p in adj.fn.params})
    changed = True
    while changed:
        changed = False
        for targets, node, augmented in statements:
            for name in targets:
                old = found[name]
                if old is None:
                    continue
                made = _origin(node, name, shapes.known.get(name), found, augmented, making)
                new = None if made is None else made if old is _UNSET else old | made
                if new != old:
                    found[name], changed = new, True
    return {n: v for n, v in found.items() if v is not _UNSET}


def _origin(node: ast.expr | None, name: str, known: Known | None, found: dict[str, Any],
            augmented: bool, making: Callable[[ast.expr], bool]) -> frozenset[str] | None:
    """The arrays one assignment may leave in ``name``."""
    if known is not None and not known.array:
        return frozenset()  # a number: nothing shared
    if augmented:
        return frozenset()  # updated in place: what it held
    base, readonly = _viewed(node)
    if base is not None:  # a copy of a name, or a view of one: shares its arrays
        if base.id not in found:
            return None  # a global
        shared = frozenset() if found[base.id] is _UNSET else found[base.id]
        return None if shared is None else shared | {READ_ONLY} if readonly else shared
    if node is not None and (isinstance(node, (ast.BinOp, ast.UnaryOp)) or making(node)):
        return frozenset({name})
    return None


def _viewed(node: ast.expr | None) -> tuple[ast.Name | None, bool]:
    """The name ``node`` is, or is a view of (``a[i]``, ``a.T``, ``a.reshape(...)``,
    ``np.broadcast_to(a, ...)``), and whether the view is read-only."""
    readonly = False
    while True:
        if isinstance(node, ast.Name):
            return node, readonly
        if isinstance(node, ast.Subscript) or isinstance(node, ast.Attribute) and node.attr == "T":
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEW_METHODS:
            node = node.func.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and (
                node.func.attr in VIEW_FUNCTIONS):
            readonly |= VIEW_FUNCTIONS[node.func.attr]
            node = node.args[0]
        else:
            return None, False


def _resolve(adj: Adjoint, spelled: dict[str, str], name: str) -> Any:
    if name in spelled:
        return runtime_object(spelled[name])
    if name in adj.fn.free:
        return adj.fn.free[name]
    return getattr(builtins, name, None)


Statement = tuple[tuple[str, ...], Optional[ast.expr], bool]  # targets, value, augmented


def statements_of(adj: Adjoint) -> Iterator[Statement]:
    """Every assignment of the forward and backward code, as (targets, value, augmented)."""
    yield from _forward(adj.forward)
    if adj.seed:
        yield from code_statements(adj.seed)
    yield from _backward(adj.backward)


def assignment_targets(adj: Adjoint) -> Iterator[tuple[str, ...]]:
    """The targets of ``statements_of(adj)``, in its order (the forward code's not written out
    as code, where they are its assignments' own)."""
    yield from _forward_targets(adj.forward)
    for targets, _, _ in code_statements(adj.seed) if adj.seed else ():
        yield targets
    for targets, _, _ in _backward(adj.backward):
        yield targets


def _forward_targets(stmts: list[Stmt]) -> Iterator[tuple[str, ...]]:
    for s in stmts:
        if isinstance(s, Assign) and s.target is not None and not _may_comprehend(s):
            yield s.targets
        elif isinstance(s, (Assign, Raw)):
            yield from (targets for targets, _, _ in _forward([s]))
        elif isinstance(s, If):
            yield from _forward_targets(s.body)
            yield from _forward_targets(s.orelse)
        elif isinstance(s, Loop):
            yield from (targets for targets, _, _ in loop_header(s.header))
            yield from _forward_targets(s.body)
            yield from ((name,) for name, _ in s.carried)


def _may_comprehend(s: Assign) -> bool:
    """Whether the code of ``s`` may hold a comprehension (whose targets count as assigned)."""
    value = s.value
    if isinstance(value, Opaque):
        return True
    operands = value.args.values() if isinstance(value, Call) else (value,)
    return any(isinstance(o, Const) and "for" in o.code for o in operands)


def _forward(stmts: list[Stmt]) -> Iterator[Statement]:
    for s in stmts:
        if isinstance(s, Assign):
            yield from code_statements(statement_code(s)) if s.target is not None else ()
        elif isinstance(s, Raw):
            yield from code_statements(s.code)
        elif isinstance(s, If):
            yield from _forward(s.body)
            yield from _forward(s.orelse)
        elif isinstance(s, Loop):
            yield from loop_header(s.header)
            yield from _forward(s.body)
            for name, last in s.carried:
                yield (name,), ast.Name(last, ast.Load()), False


def _backward(outs: list[Out]) -> Iterator[Statement]:
    for x in outs:
        if isinstance(x, Block):
            yield from loop_header(x.header)
            yield from _backward(x.body)
            yield from _backward(x.orelse)
        else:
            yield from code_statements(x.code)


# (a statement's code is parsed once: the passes read the same lines again and again; the
# nodes are shared, and only read)
@functools.lru_cache(maxsize=1 << 14)
def loop_header(header: str) -> tuple[Statement, ...]:
    """A loop header's targets: ints for ``range``, unknown otherwise."""
    if not header.startswith("for "):
        return ()
    loop = ast.parse(header.rstrip(":") + ": pass").body[0]
    assert isinstance(loop, ast.For)
    names = tuple(n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name))
    counted = isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) and \
        loop.iter.func.id == "range" and isinstance(loop.target, ast.Name)
    return ((names, _COUNTER if counted else None, False),)


_SIMPLE = (ast.Assign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass)


@functools.lru_cache(maxsize=1 << 14)
def code_statements(code: str) -> tuple[Statement, ...]:
    return tuple(_code_statements(code))


def _code_statements(code: str) -> Iterator[Statement]:
    tree = parsed_line(code)
    flat = "for" not in code and all(isinstance(s, _SIMPLE) for s in tree.body)
    # (an assignment sits at the top, unless in a compound statement or a comprehension)
    for node in tree.body if flat else ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield (target.id,), node.value, False
                elif isinstance(target, (ast.Tuple, ast.List)):
                    flat = all(isinstance(n, ast.Name) for n in target.elts)
                    yield (tuple(n.id for n in ast.walk(target) if isinstance(n, ast.Name)),
                           node.value if flat else None, False)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            yield (node.target.id,), ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value), True
        elif isinstance(node, (ast.For, ast.comprehension)):
            yield tuple(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)), None, False
