"""The normalizer: its state, and the mixins that lower each kind of statement
and expression, combined."""
from __future__ import annotations

import builtins
import functools
import types
from typing import Any

import libcst as cst

from ...errors import Location, UnsupportedSyntaxError
from ...ir import Assign, Call, Function, Return, Stmt, Var
from ...rules.registry import RUNTIME_NAMES, USER_OBJECTS, Registry
from ..callees import Closure
from ..parse import Parsed
from ..resolve import Resolution
from .aliasing import Aliasing
from .assignments import AssignmentLowering
from .call_forms import CallForms
from .calls import CallLowering
from .choices import Choice, ChosenFunctions
from .classify import Classification
from .closures import ClosureArguments
from .containers import ContainerLowering
from .expressions import ExpressionLowering
from .flow import loop_item_names
from .functional import FunctionalLowering
from .inplace import InPlaceWriteLowering
from .list_statements import ListStatementLowering
from .loops import LoopLowering
from .naming import Naming, all_names
from .nested_functions import NestedFunctionLowering
from .partials import Application, PartialApplications
from .shuffles import InPlaceDraws
from .records import RecordAttributes
from .replayed_state import REPLAYED_READ, first_changed_read
from .statements import StatementLowering
from .tries import TryLowering
from .stores import stores_changed_later
from .syntax import statements_of, walk
from .views import ViewFollowing, ViewLink


class Normalizer(StatementLowering, LoopLowering, AssignmentLowering,
                 Naming, NestedFunctionLowering, FunctionalLowering, ContainerLowering, ListStatementLowering,
                 InPlaceWriteLowering, Aliasing, ViewFollowing, PartialApplications, ChosenFunctions, InPlaceDraws,
                 ExpressionLowering, RecordAttributes, CallLowering, CallForms, ClosureArguments, Classification,
                 TryLowering):
    """Lowers one function's body to A-normal form (see the package's docstring).

    The state of the lowering is set here; each mixin lowers one kind of statement or
    expression, reading and updating that state.
    """

    def __init__(self, parsed: Parsed, res: Resolution, registry: Registry, callee: bool = False,
                 replayed: bool = False) -> None:
        self.parsed, self.res, self.registry = parsed, res, registry
        fdef = parsed.function
        self.fn = Function(fdef.name.value, res.params, fdef.params)
        self.fn.user_names = all_names(fdef)
        registry.load_lazy()  # (so that the names its rules' templates call are known below)
        self.fn.names |= self.fn.user_names | set(RUNTIME_NAMES) | set(USER_OBJECTS) | set(dir(builtins))
        self.fn.free = {name: free.value for name, free in res.free.items()}
        self.fn.closure = {name for name, free in res.free.items() if free.kind == "closure"}
        self.version: dict[str, str] = {p: p for p in res.params}
        self.loc: Location | None = None
        self.stand_ins: dict[cst.CSTNode, cst.CSTNode] = {}  # a node built here -> the user's it stands for
        self.out: list[Stmt] = self.fn.body
        self.enclosing: list[list[Stmt]] = []  # the blocks around self.out, outermost first
        self.loops: list[tuple[str | None, str | None]] = []  # (break flag, continue flag)
        self.result = self.fn.fresh("value")  # the returned value, when returns are nested
        self.returning: str | None = None  # set when a 'return' inside a loop has run
        self.copies: set[str] = set()  # versions assigned from another variable (aliases)
        self.stored: set[str] = set()  # versions put into a list, tuple or dict
        # versions that certainly hold a tuple or list of this length: only those assigned in
        # the function's straight-line top level, where a version is assigned once
        self.sizes: dict[str, int | tuple[str, ...]] = {}  # a length, or a dict's keys
        self.views: set[str] = set()  # versions that may be views into another array
        # results of rules that return a tuple or list of new arrays (np.linalg.qr, np.meshgrid)
        self.fresh_items: set[str] = set()
        self.changed_after_store = stores_changed_later(list(statements_of(fdef.body)), res)  # ids of d[k] in d[k] = y
        self.init_aliasing()
        self.callee = callee  # compiled for a caller: changes to arguments would be visible
        self.replayed = replayed  # a vjp, whose forward pass runs again: random draws are refused
        self.seeded = False  # a generator was seeded at the top level: draws after it replay
        self.generators: dict[str, type] = {}  # versions made by np.random.default_rng(...), say
        # names bound only as a for loop's items: called (``layer(x)``), what they hold is found as it runs
        self.loop_items = loop_item_names(list(statements_of(fdef.body))) - set(res.params)
        self.comprehension_names: set[str] = set()  # the variables of comprehensions lowered so far
        self.comprehensions: list[set[str]] = []  # those of the comprehensions being lowered
        # versions that branches outside any loop bind on some paths only -> the blocks that
        # leave them unbound (see bind_everywhere)
        self.unbound_in: dict[str, list[list[Stmt]]] = {}
        self.deleted: dict[str, str] = {}  # user name -> its version a 'del' removed
        self.concatenations: set[cst.BinaryOperation] = set()  # + that code built here uses on lists
        self.init_functions()
        self.lists: set[str] = set()  # versions that certainly hold a list (for xs.pop(i))
        self.maybe_sequences: set[str] = set()  # versions a call returned: perhaps a list or tuple
        self.links: dict[str, ViewLink] = {}  # the user's name of a view -> how it views its base
        self.helpers: dict[Any, str] = {}  # runtime function -> the free name generated code calls
        # a version s2sad wrote as the new value of an array the user changed in place, which may
        # be laid out in memory unlike NumPy's (a copy is C-contiguous) -> the version laid out as
        # NumPy's array is (None: unknown), from which whether a reshape is a view is read
        self.layout: dict[str, str | None] = {}
        # (loop of the function, name) -> whether an iteration may read the name the one before
        # left (keyed by the node itself, which the parsed function keeps unchanged and alive)
        self.loop_carrying: dict[tuple[cst.CSTNode, str], bool] = {}
        # (assignment, receiver, its call that picks as it runs) of each x.T-like read (records.py)
        self.attribute_reads: list[tuple[Assign, str, Call]] = []

    def init_functions(self) -> None:
        """The state of nested functions, closures and partial applications made in the function."""
        self.local_functions: dict[str, types.FunctionType] = {}  # nested defs and lambdas
        self.closure_args: dict[str, list[str]] = {}  # nested function -> the variables it reads
        # (id of its function, the variables it reads) -> a nested function passed as an argument
        self.closures_passed: dict[tuple[int, tuple[str, ...]], Closure] = {}
        self.closures_expected: dict[int, cst.BaseExpression] = {}  # where one is passed, not yet lowered so
        self.applications: dict[str, Application] = {}  # version of a name -> the partial application it calls
        self.choices: dict[str, Choice] = {}  # version of a name -> the functions a conditional expression chose between

    def init_aliasing(self) -> None:
        """The state of what may share memory (aliasing.py)."""
        self.partners: dict[str, set[str]] = {}  # version -> user names bound to the same object
        self.bases: dict[str, frozenset[str]] = {}  # version -> earlier versions it may share memory with
        self.holders: dict[str, frozenset[str]] = {}  # container version -> what its items may share
        # container version -> the containers it may be a copy of (a parameter's: items unknown)
        self.copied_from: dict[str, frozenset[str]] = {}
        self.superseded: set[str] = set()  # versions of names since rebound in straight-line code
        self.swapped: dict[str, set[str]] = {}  # version -> the versions A, B = B, A rebound besides it
        self.versions_of: dict[str, set[str]] = {}  # user name -> names in fn.names that version it
        self.versioned: set[str] = set()  # the names in versions_of

    @functools.cached_property
    def body_nodes(self) -> list[cst.CSTNode]:
        """Every node of the function's body, in source order (walked once: the parsed function
        does not change)."""
        return walk(self.parsed.function.body)

    @functools.cached_property
    def for_loops(self) -> list[cst.For]:
        """The function's ``for`` loops, nested ones too."""
        return [n for n in self.body_nodes if isinstance(n, cst.For)]

    def run(self) -> Function:
        fdef = self.parsed.function
        if fdef.asynchronous is not None:
            raise self.unsupported(fdef, "async functions cannot be differentiated; use 'def'")
        body = statements_of(fdef.body)
        self.check_closure_parameters()
        changed = first_changed_read(self.parsed.source.fn, self.body_nodes, self.fn.free) if self.replayed else None
        if changed is not None:
            raise self.unsupported(changed, REPLAYED_READ.format(self.parsed.code(changed).strip()))
        if not self.block(body):
            last = body[-1] if body else fdef
            raise UnsupportedSyntaxError(
                f"{self.fn.name} must end with 'return <scalar>' to be differentiated",
                self.location(last))
        if not (self.fn.body and isinstance(self.fn.body[-1], Return)):
            self.out.append(Return(Var(self.version[self.result]), self.loc))
        self.check_closures_passed()
        self.settle_attributes()
        return self.fn

    def location(self, node: cst.CSTNode) -> Location:
        """Where ``node`` is in the file; nodes built here report their statement."""
        try:
            return self.parsed.location(self.stand_ins.get(node, node))
        except KeyError:
            assert self.loc is not None
            return self.loc

    def unsupported(self, node: cst.CSTNode, message: str) -> UnsupportedSyntaxError:
        return UnsupportedSyntaxError(message, self.location(node))
