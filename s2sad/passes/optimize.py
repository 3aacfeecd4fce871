"""Pass 7: light cleanup of the generated function.

* forward statements whose values nothing reads are dropped (pure ones only), the
  output's own value too when the seed does not need it (``grad`` of a scalar by
  construction);
* a top-level elementwise result or sum/mean that the backward pass reads only for
  its shape and dtype is described by ``stand_in_for`` instead of computed;
* a temporary that is read once, later in the same block, and never by the
  backward pass, is folded back into the expression that reads it, so the
  forward pass reads like the user's code;
* an array the backward pass reads only for its type, shape and dtype (to sum a
  gradient back to it, say) is replaced by a memoryless stand-in after its last
  forward use, so the array is freed before the backward pass runs;
* ``d += g * a``, where ``a`` is a forward array this code made and nothing reads
  afterwards, computes the product in ``a``'s buffer (``mul_into``).
"""
from __future__ import annotations

import ast
import operator
import re
from collections import Counter
from typing import Callable

import libcst as cst
import numpy as np

from ..ir import (Assign, Call, Const, If, Loop, Opaque, Raw, Stmt, Var, assigned_names, assigns,
                  operand_reads, reads, statements)
from ..runtime.indexing import attribute_of
from ..runtime.memory import OPERATORS
from .adjoint import Adjoint, Block, Line, lines
from .parse import with_names_replaced
from .parsed_lines import parsed_line
from .tape_arrays import preallocate_tapes
from .values import scalars


def _pure(stmt: Assign) -> bool:
    v = stmt.value  # (a draw, dropped or moved, would change the numbers the draws after it give)
    if stmt.draws or isinstance(v, Opaque):
        return stmt.target is not None and not stmt.draws
    if isinstance(v, Call):
        # (a run-time check may refuse: a write into an array of an integer dtype, say)
        return v.rule is not None and v.number_check is None and v.float_check is None and v.overlap is None
    return True


def _control_reads(stmts: list[Stmt]) -> set[str]:
    """Names read by if tests, loop headers and what loops save or count."""
    names: set[str] = set()
    for s in stmts:
        if isinstance(s, If):
            names |= set(operand_reads(s.test)) | _control_reads(s.body) | _control_reads(s.orelse)
        elif isinstance(s, Loop):
            names |= set(s.reads) | set(s.saved) | {s.break_flag} | _control_reads(s.body)
            names |= {last for _, last in s.carried}  # the phi copies run every iteration
    return names - {None}


def _backward_reads(adj: Adjoint) -> set[str]:
    """Names the backward pass, and tangent statements in forward mode, read."""
    return {n for x in lines(adj.backward) for n in x.reads} | {
        n for s in _raws(adj.forward) for n in s.reads}


def _raws(stmts: list[Stmt]) -> list[Raw]:
    return [s for s in statements(stmts) if isinstance(s, Raw)]


def optimize(adj: Adjoint, keep_values: bool = False) -> Adjoint:
    """``keep_values``: no stand-ins, so that a debugger shows every forward value."""
    _share_repeated(adj)
    returned = set(operand_reads(adj.value)) if adj.kind != "vjp" and adj.value_needed else set()
    returned |= {n for r in adj.results for n in _names(r)}
    pinned = returned | _backward_reads(adj) | set(adj.wrt) | _names(adj.seed or "")
    control = _control_reads(adj.forward)
    shaped = set() if keep_values else _shape_only(adj) - returned - set(adj.wrt) - control
    stmts = list(assigns(adj.forward))
    needed = _closure(pinned - shaped | control, stmts)
    if shaped - needed:
        adj.forward = _describe(adj, shaped - needed, needed, stmts)
        pinned |= {n for s in _raws(adj.forward) for n in s.reads}
        needed = _closure(pinned | control, list(assigns(adj.forward)))
    adj.forward = _drop_dead(adj.forward, needed)
    uses = Counter(n for s in assigns(adj.forward) for n in reads(s.value))
    uses.update(n for n in _control_reads(adj.forward))
    uses.update(n for s in _ifs(adj.forward) for n in operand_reads(s.test))
    origin = {t: reads(s.value) for s in assigns(adj.forward) for t in s.targets}
    adj.forward = _fold(adj.forward, uses, pinned | _saved(adj.forward))
    if adj.backward and not keep_values:
        for name in assigned_names(adj.forward):
            origin.pop(name, None)  # only folded temporaries stand for their reads
        adj.forward = _release(adj, returned | set(adj.wrt) | set(adj.fn.params), origin)
        if adj.known is not None:
            adj.forward = _delete_dead(adj, returned | set(adj.wrt) | set(adj.fn.params), origin)
    if not keep_values:
        _reuse_dead_factors(adj, returned | _names(adj.seed or "") | set(operand_reads(adj.value)))
    preallocate_tapes(adj)
    return adj


def _share_repeated(adj: Adjoint) -> None:
    """A top-level NumPy call repeated with the same operands is computed once: the later
    statement takes the earlier value.  ``stop_gradient(W)`` counts as ``W`` (the same array
    when the code runs): the forward pass of ``v @ stop_gradient(W)`` and ``v @ W`` shares one
    product, the backward pass still tells them apart (differentiated again, such code is read
    as built with ``split`` off).  Only values nothing can change in place qualify: read by NumPy
    rules, ``stop_gradient``, copies, control flow and tapes alone (not ``np.random.shuffle(a)``)."""
    stmts = list(assigns(adj.forward))  # loop phi copies included
    bound = Counter(t for s in stmts for t in s.targets)
    bound.update(adj.fn.params)
    bound.update(t for loop in _loops(adj.forward) for t in loop.targets)
    safe = {n for n, times in bound.items() if times == 1}  # bound once: one value wherever read
    for s in stmts:
        v = s.value
        if not (isinstance(v, Call) and v.rule is not None and v.function is None and _numpy_level(v.rule.fun)
                or isinstance(v, Var) or isinstance(v, Opaque) and v.copy_of is not None):
            safe -= set(reads(v))
    same: dict[str, str] = {}  # name -> the name whose value it certainly is
    seen: dict[tuple, str] = {}
    stopped = False  # a name is the same array as another through stop_gradient
    for s in adj.forward:
        if not isinstance(s, Assign) or not isinstance(s.target, str) or s.target not in safe or s.draws:
            continue  # (two draws alike give two samples)
        v = s.value
        copied = v.name if isinstance(v, Var) else v.copy_of if isinstance(v, Opaque) and adj.split else None
        if copied in safe:
            same[s.target] = same.get(copied, copied)
            stopped |= isinstance(v, Opaque)
        elif (isinstance(v, Call) and v.rule is not None and v.function is None
              and _numpy_level(v.rule.fun) and v.number_check is None
              and all(isinstance(op, Var) and op.name in safe or isinstance(op, Const) and not op.reads
                      for op in v.args.values())):
            key = (id(v.rule.fun), tuple((p, same.get(op.name, op.name) if isinstance(op, Var)
                                          else ("code", op.code)) for p, op in v.args.items()))
            if key in seen:
                s.value = Var(seen[key])
                same[s.target] = same.get(seen[key], seen[key])
                adj.shares_stopped |= stopped
            else:
                seen[key] = s.target


def _numpy_level(fun: object) -> bool:
    """Whether ``fun`` is NumPy's, an operator, a math function or ``x.T`` that may be a field:
    deterministic, and free of side effects (a user's own function may be neither)."""
    if isinstance(fun, np.ufunc) or fun is attribute_of:
        return True
    owner = getattr(fun, "__objclass__", None)
    module = getattr(fun, "__module__", None) or getattr(owner, "__module__", None) or ""
    return module.split(".")[0] in ("numpy", "_operator", "operator", "math")


def _closure(needed: set[str], stmts: list[Assign]) -> set[str]:
    """``needed`` and every name the statements that compute them read, transitively."""
    needed = set(needed)
    while True:
        size = len(needed)
        for s in reversed(stmts):  # (what a statement reads is computed before it)
            if not _pure(s) or any(t in needed for t in s.targets):
                needed.update(reads(s.value))
        if len(needed) == size:
            return needed


# the ufunc of each operator, by id as in the rule registry
_DESCRIBED = {id(op): ufunc for ufunc, op in OPERATORS.items()}


def _describe(adj: Adjoint, shaped: set[str], needed: set[str], stmts: list[Assign]) -> list[Stmt]:
    """Top-level elementwise results the gradient reads only for their shape and dtype
    (``Y * log_p`` in ``np.sum(Y * log_p)``) are described, not computed: a stand-in made
    from the operands' shapes and dtypes (which may then be described in turn)."""
    once = Counter(t for s in stmts for t in s.targets)
    top = [s for s in adj.forward if isinstance(s, Assign)]
    needed = set(needed)
    described: dict[int, Raw] = {}
    for s in reversed(top):
        name = s.target
        if not isinstance(name, str) or name in needed or name not in shaped:
            continue
        call = _description(s.value)
        if call is None or once[name] != 1:
            needed |= _closure({name}, stmts)
            continue
        fun, operands, options = call
        args = [op.name if isinstance(op, Var) else op.code for op in operands]
        args += [f"{k}={op.name if isinstance(op, Var) else op.code}" for k, op in options.items()]
        code = f"{name} = {adj.use('stand_in_for')}({adj.use('np')}.{fun.__name__}, {', '.join(args)})"
        described[id(s)] = Raw(code, frozenset(reads(s.value)), s.loc)
        shaped |= {n for n in reads(s.value) if n not in needed}
    return [described.get(id(s), s) for s in adj.forward]


_REDUCTIONS = {id(f): to for f, to in (
    (np.sum, np.sum), (np.ndarray.sum, np.sum), (np.mean, np.mean), (np.ndarray.mean, np.mean))}


def _description(value: object) -> tuple[object, list, dict] | None:
    """How :func:`stand_in_for` describes a call (its NumPy function, operands, options), or None."""
    if not isinstance(value, Call) or value.rule is None or value.function is not None:
        return None
    fun, args = value.rule.fun, value.args
    if id(fun) in _REDUCTIONS:
        if any(not isinstance(args.get(k), Const) or args[k].code != "None" for k in ("dtype", "out")):
            return None
        return _REDUCTIONS[id(fun)], [args["a"]], {k: args[k] for k in ("axis", "keepdims")}
    if isinstance(fun, np.ufunc) and fun in OPERATORS:  # np.multiply(a, b) of lists: not a * b
        return None
    fun = _DESCRIBED.get(id(fun), fun)
    if (not isinstance(fun, np.ufunc) or fun.signature is not None or fun.nout != 1
            or fun.nin != len(value.args) or getattr(np, fun.__name__, None) is not fun):  # SciPy's
        return None
    return fun, list(value.args.values()), {}


_VIEWS = (operator.getitem, np.transpose, np.ndarray.T)

# runtime helper -> the position of the argument it reads only for its type, shape and dtype
_SHAPE_ARG = {"unbroadcast": 1, "reduce_grad": 1, "mean_grad": 1, "getitem_grad": 1,
              "reshape_grad": 1, "zeros_grad": 0, "branch_mask": 1, "grad_like": 1}


def _shape_only(adj: Adjoint) -> set[str]:
    """Names the backward pass reads, all of them only where a helper wants a shape."""
    helpers = {adj.runtime[h]: i for h, i in _SHAPE_ARG.items() if h in adj.runtime}
    shaped: set[str] = set()
    valued: set[str] = set()
    for x in lines(adj.backward):
        if isinstance(x, Block) or not any(h in x.code for h in helpers):
            valued |= x.reads
            continue
        spots = _shape_spots(x.code, helpers)
        shaped |= {x.code[i:j] for i, j in spots}
        valued |= {m.group() for m in _NAME.finditer(x.code) if m.span() not in spots}
    return shaped - valued


_NAME = re.compile(r"(?<![\w.'\"])[A-Za-z_]\w*")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")


def _shape_spots(code: str, helpers: dict[str, int]) -> set[tuple[int, int]]:
    """Where ``code`` passes a bare name as a helper's shape argument (none when the
    code holds a string, whose brackets and commas would mislead the scan)."""
    if "'" in code or '"' in code:
        return set()
    spots: set[tuple[int, int]] = set()
    for call in _CALL.finditer(code):
        want = helpers.get(call.group(1))
        if want is None:
            continue
        depth, arg, start = 0, 0, call.end()
        for j in range(call.end(), len(code)):
            ch = code[j]
            if ch in "([{":
                depth += 1
            elif ch in ")]}" and depth:
                depth -= 1
            elif ch == "," and not depth or ch == ")":
                if arg == want:
                    text = code[start:j]
                    name = text.strip()
                    if name.isidentifier():
                        i = start + text.index(name)
                        spots.add((i, i + len(name)))
                    break
                if ch == ")":
                    break
                arg, start = arg + 1, j + 1
    return spots


def _names_in(s: Stmt, origin: dict[str, tuple[str, ...]]) -> set[str]:
    """Every name a forward statement reads or assigns, tapes and loop headers included;
    ``origin`` gives the reads of temporaries folded into it."""
    if isinstance(s, Raw):
        return set(s.reads)
    if isinstance(s, Assign):
        found, todo = set(s.targets), list(reads(s.value))
        while todo:
            n = todo.pop()
            if n not in found:
                found.add(n)
                todo += origin.get(n, ())
        return found
    if isinstance(s, If):
        names = set(operand_reads(s.test)) | {n for t in s.saves for n in t}
        return names | {n for x in s.body + s.orelse for n in _names_in(x, origin)}
    if isinstance(s, Loop):
        names = set(s.reads) | set(s.targets) | set(s.saved) | {n for c in s.carried for n in c}
        return names | {n for x in s.body for n in _names_in(x, origin)}
    return set()


def _loops(stmts: list[Stmt]) -> list[Loop]:
    out: list[Loop] = []
    for s in stmts:
        if isinstance(s, Loop):
            out += [s] + _loops(s.body)
        elif isinstance(s, If):
            out += _loops(s.body) + _loops(s.orelse)
    return out


def _line(s: Stmt) -> int | None:
    return s.loc.line if isinstance(s, (Assign, Raw)) else None


def _release(adj: Adjoint, kept: set[str], origin: dict[str, tuple[str, ...]]) -> list[Stmt]:
    """After the last forward use of each array the backward pass reads only for its
    shape, rebind its name to a stand-in (one line per source line).  Only names the top
    level assigns once, and nothing else assigns, qualify.  Loops push stand-ins of such
    names on their tapes."""
    stmts = adj.forward
    once = Counter(t for s in stmts if isinstance(s, Assign) for t in s.targets)
    nested = {n for s in stmts if not isinstance(s, Assign) for n in assigned_names([s])}
    shape_only = _shape_only(adj) - kept
    if not shape_only:
        return stmts
    shape_only -= scalars(stmts, adj.fn.params) | {  # nothing to free: numbers, views
        t for s in assigns(stmts) if isinstance(s.value, Call) and s.value.rule
        and s.value.rule.fun in _VIEWS for t in s.targets}
    for loop in _loops(stmts):
        carried = {last for name, last in loop.carried if name in loop.saved}  # saved anyway
        if (shape_only - carried) & set(loop.saved):
            stand_in = adj.use("stand_in")
            loop.pushed = tuple(f"{stand_in}({n})" if n in shape_only - carried else n
                                for n in loop.saved)
    candidates = {n for n in shape_only - nested if once[n] == 1}
    if not candidates:
        return stmts
    stand_in = adj.use("stand_in")
    return _after_last_use(stmts, candidates, origin, lambda names: (
        f"{', '.join(names)} = {', '.join(f'{stand_in}({n})' for n in names)}"))


def _delete_dead(adj: Adjoint, kept: set[str], origin: dict[str, tuple[str, ...]]) -> list[Stmt]:
    """Specialised code: an array that nothing reads after its last forward use (the backward
    pass reads neither it nor its shape) is deleted there, as a stand-in frees it in the
    generic code.  Only names the top level assigns once, and nothing else assigns, qualify."""
    stmts = adj.forward
    known = adj.known or {}
    once = Counter(t for s in stmts if isinstance(s, Assign) for t in s.targets)
    nested = {n for s in stmts if not isinstance(s, Assign) for n in assigned_names([s])}
    read = kept | _backward_reads(adj) | _control_reads(stmts) | _names(adj.seed or "") | {
        n for r in adj.results for n in _names(r)}
    dead = {n for n, times in once.items() if times == 1 and n not in read | nested
            and known.get(n) is not None and known[n].array}
    if not dead:
        return stmts
    return _after_last_use(stmts, dead, origin, lambda names: f"del {', '.join(names)}")


def _after_last_use(stmts: list[Stmt], names: set[str], origin: dict[str, tuple[str, ...]],
                    code: Callable[[list[str]], str]) -> list[Stmt]:
    """``stmts`` with ``code(names)`` after the last use of each name (at the end of its
    user's line: one such line per source line)."""
    last: dict[str, int] = {}
    for i, s in enumerate(stmts):
        for n in _names_in(s, origin) & names:
            last[n] = i
    after: dict[int, list[str]] = {}
    for n, i in last.items():
        line = _line(stmts[i])
        while line is not None and i + 1 < len(stmts) and _line(stmts[i + 1]) == line:
            i += 1
        after.setdefault(i, []).append(n)
    order = {t: k for k, t in enumerate(t for s in stmts if isinstance(s, Assign) for t in s.targets)}
    out: list[Stmt] = []
    for i, s in enumerate(stmts):
        out.append(s)
        here = sorted(after.get(i, ()), key=order.__getitem__)
        if here:
            out.append(Raw(code(here), frozenset(here), s.loc))
    return out


def _names(code: str) -> set[str]:
    import re

    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", code))


def _ifs(stmts: list[Stmt]) -> list[If]:
    out = []
    for s in stmts:
        if isinstance(s, If):
            out += [s] + _ifs(s.body) + _ifs(s.orelse)
        elif isinstance(s, Loop):
            out += _ifs(s.body)
    return out


def _saved(stmts: list[Stmt]) -> set[str]:
    names: set[str] = set()
    for s in stmts:
        if isinstance(s, Loop):
            names |= set(s.saved) | _saved(s.body)
        elif isinstance(s, If):
            names |= _saved(s.body) | _saved(s.orelse)
    return names


def _drop_dead(stmts: list[Stmt], needed: set[str]) -> list[Stmt]:
    kept: list[Stmt] = []
    for s in stmts:
        if isinstance(s, Assign):
            if _pure(s) and not any(t in needed for t in s.targets):
                continue
        elif isinstance(s, If):
            s.body, s.orelse = _drop_dead(s.body, needed), _drop_dead(s.orelse, needed)
        elif isinstance(s, Loop):
            s.body = _drop_dead(s.body, needed)
        kept.append(s)
    return kept


def _fold(stmts: list[Stmt], uses: Counter, pinned: set[str]) -> list[Stmt]:
    """Fold single-use temporaries into the statement that reads them, within one block."""
    out: list[Stmt] = []
    pending: dict[str, Assign] = {}

    def flush() -> None:
        out.extend(pending.values())
        pending.clear()

    for stmt in stmts:
        if isinstance(stmt, Raw):
            out.append(stmt)
            continue
        if isinstance(stmt, (If, Loop)):
            if isinstance(stmt, If):
                stmt.body, stmt.orelse = _fold(stmt.body, uses, pinned), _fold(stmt.orelse, uses, pinned)
                if isinstance(stmt.test, Var) and stmt.test.name in pending:
                    node = pending.pop(stmt.test.name).value.node
                    stmt.test = Const(_EMPTY.code_for_node(node).strip())
            else:
                stmt.body = _fold(stmt.body, uses, pinned)
            flush()
            out.append(stmt)
            continue
        stmt = _substitute(stmt, pending, out)
        name = stmt.target
        if (stmt.temporary and isinstance(name, str) and uses[name] == 1 and name not in pinned
                and _pure(stmt) and isinstance(stmt.value, (Call, Opaque))):
            pending[name] = stmt
            continue
        out.append(stmt)
    flush()
    return out


_EMPTY = cst.Module(body=[])


def _substitute(stmt: Assign, pending: dict[str, Assign], out: list[Stmt]) -> Assign:
    """Fold the pending temporaries ``stmt`` reads into it; emit those it cannot take."""
    value = stmt.value
    hits = [n for n in reads(value) if n in pending]
    if not hits:
        return stmt
    if isinstance(value, Var):
        folded = pending.pop(value.name).value
        return Assign(stmt.target, Opaque(folded.node, reads(folded), "folded"), stmt.loc, stmt.temporary)
    used: set[str] = set()
    new_node = with_names_replaced(value.node, {n: pending[n].value.node for n in hits}, used)
    for n in hits:
        if n in used:
            del pending[n]
        else:
            out.append(pending.pop(n))
    if isinstance(value, Call):
        folded = Call(value.rule, value.callee, value.args, new_node, value.problem, value.function,
                      receiver=value.receiver, overlap=value.overlap, float_check=value.float_check,
                      number_check=value.number_check)  # (the run-time checks stay)
    else:
        folded = Opaque(new_node, value.reads, value.kind)
    return Assign(stmt.target, folded, stmt.loc, stmt.temporary, stmt.draws)


def _reuse_dead_factors(adj: Adjoint, kept: set[str]) -> None:
    """``d += g * a`` becomes ``d += mul_into(g, a)`` when ``a`` is a top-level forward
    array made by an elementwise call or a sum (so no other name can hold it or a view
    of it), read before only by such calls and for its shape, and never after."""
    top = [s for s in adj.forward if isinstance(s, Assign)]
    made = Counter(t for s in assigns(adj.forward) for t in s.targets)
    candidates = {s.target for s in top if isinstance(s.target, str) and made[s.target] == 1
                  and _description(s.value) is not None}
    candidates -= kept | set(adj.fn.params) | _control_reads(adj.forward) | _saved(adj.forward)
    candidates -= {n for s in adj.forward if not isinstance(s, Assign) for n in assigned_names([s])}
    if adj.known is not None:  # (a number specialised code knows has no buffer to write into)
        candidates = {n for n in candidates if (known := adj.known.get(n)) is None or known.array}
    for s in assigns(adj.forward):
        if _description(s.value) is None:
            candidates -= set(reads(s.value))
    stand_in_for = adj.runtime.get("stand_in_for")
    for raw in _raws(adj.forward):
        if not (stand_in_for and re.match(rf"\w+ = {stand_in_for}\(", raw.code)):
            candidates -= raw.reads
    if not candidates:
        return
    shape_helpers = {adj.runtime[h]: i for h, i in _SHAPE_ARG.items() if h in adj.runtime}
    read_before: set[str] = set()
    last_read = {n: i for i, out in enumerate(adj.backward) for x in lines([out]) for n in x.reads}
    for i, out in enumerate(adj.backward):
        if isinstance(out, Block):
            read_before |= {n for x in lines([out]) for n in x.reads}
            continue
        touched = out.reads & candidates
        if not touched:
            continue
        tree = parsed_line(out.code).body[0]
        factor = _dead_factor(tree, candidates, read_before, {n for n in touched if last_read[n] > i})
        if factor is not None:
            g = tree.value.left if tree.value.right.id == factor else tree.value.right
            if _fits(adj, g.id, factor):  # specialised code: known to fit, no check needed
                code = f"{tree.target.id} += {adj.use('np')}.multiply({g.id}, {factor}, out={factor})"
            else:
                code = f"{tree.target.id} += {adj.use('mul_into')}({g.id}, {factor})"
            adj.backward[i] = Line(code, out.reads, out.group, out.source)
            candidates.discard(factor)
        spots = _shape_spots(out.code, shape_helpers)
        read_before |= {n for n in touched if not _keeps_no_alias(tree, out.code, n, spots)}


def _fits(adj: Adjoint, g: str, dead: str) -> bool:
    """Whether ``g * dead`` can certainly be written into ``dead`` (as ``mul_into`` checks when
    the code runs): of its shape and dtype, and not sharing its memory."""
    if adj.known is None:
        return False
    a, b, made = adj.known.get(dead), adj.known.get(g), adj.owned.get(g)
    if a is None or b is None or not a.array or a.dtype.kind != "f":
        return False
    if b.array:
        return (b.shape, b.dtype) == (a.shape, a.dtype) and made is not None and dead not in made
    return b.kind is float or b.kind is np.float64 and a.dtype == np.float64


def _dead_factor(tree: ast.stmt, candidates: set[str], read_before: set[str],
                 read_later: set[str]) -> str | None:
    """The factor of ``d += g * a`` (all names) that may take the product: a candidate
    read by nothing before (in a way that may keep it) or later."""
    if not (isinstance(tree, ast.AugAssign) and isinstance(tree.op, ast.Add)
            and isinstance(tree.target, ast.Name) and isinstance(tree.value, ast.BinOp)
            and isinstance(tree.value.op, ast.Mult)
            and isinstance(tree.value.left, ast.Name) and isinstance(tree.value.right, ast.Name)):
        return None
    names = (tree.value.right.id, tree.value.left.id)
    if names[0] == names[1] or tree.target.id in names:
        return None
    return next((n for n in names if n in candidates and n not in read_before and n not in read_later), None)


def _keeps_no_alias(tree: ast.stmt, code: str, name: str, spots: set[tuple[int, int]]) -> bool:
    """Whether ``tree`` (the line ``code``) reads ``name`` in a way that leaves no name
    holding it or a view of it: in arithmetic (``x = g * a``, ``x += g * a``: a new array),
    or only where a helper wants a shape (``spots``, as :func:`_shape_spots` finds them)."""
    if isinstance(tree, ast.AugAssign) or isinstance(tree, ast.Assign) and len(tree.targets) == 1:
        if isinstance(tree.value, (ast.BinOp, ast.UnaryOp)):
            return True
    return all(m.span() in spots for m in _NAME.finditer(code) if m.group() == name)
