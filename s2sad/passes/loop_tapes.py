"""What each reversed loop saves per iteration on its tape, and where: the backward pass
reads values that the loop's iterations overwrite, so each is pushed at the end of the block
that assigns it and popped where the reversed block starts."""
from __future__ import annotations

from ..ir import Assign, Const, If, Loop, Stmt, surely_assigned
from .adjoint import Adjoint, Block, Out, lines

Path = tuple[tuple[int, int], ...]  # nested branches inside a loop body: (id of the If, 0 or 1)


def _common(paths: list[Path]) -> Path:
    first = paths[0]
    n = 0
    while n < len(first) and all(len(p) > n and p[n] == first[n] for p in paths):
        n += 1
    return first[:n]


def _assignment_paths(stmts: list[Stmt], path: Path, found: dict[str, list[Path]]) -> None:
    """Where each name is assigned in a loop body (nested loops count where they stand)."""
    for s in stmts:
        if isinstance(s, Assign):
            for t in s.targets:
                found.setdefault(t, []).append(path)
        elif isinstance(s, If):
            _assignment_paths(s.body, path + ((id(s), 0),), found)
            _assignment_paths(s.orelse, path + ((id(s), 1),), found)
        elif isinstance(s, Loop):
            for name in [s.tape, s.counter, *(c for c, _ in s.carried), *s.targets]:
                if name:
                    found.setdefault(name, []).append(path)
            inner: dict[str, list[Path]] = {}
            _assignment_paths(s.body, path, inner)
            for name in inner:
                found.setdefault(name, []).append(path)


def _read_paths(outs: list[Out], path: Path, found: dict[str, list[Path]]) -> None:
    """Where the reversed loop body reads each name; a nested reversed loop restores its own."""
    for x in outs:
        for n in x.reads:
            found.setdefault(n, []).append(path)
        if isinstance(x, Block) and x.branch is not None:
            _read_paths(x.body, path + ((id(x.branch), 0),), found)
            _read_paths(x.orelse, path + ((id(x.branch), 1),), found)
        elif isinstance(x, Block) and x.loop is not None:
            inner: dict[str, list[Path]] = {}
            _read_paths(x.body, path, inner)
            own = set(_variant_order(x.loop))
            for n in inner:
                if n not in own:
                    found.setdefault(n, []).append(path)


def _variant_order(loop: Loop) -> list[str]:
    """Names a loop's iterations overwrite, in a fixed order: carried first."""
    found: dict[str, list[Path]] = {}
    _assignment_paths(loop.body, (), found)
    return list(dict.fromkeys([c for c, _ in loop.carried] + list(loop.targets) + list(found)))


def _ifs_in(stmts: list[Stmt]) -> list[If]:
    """The ifs of a loop body, nested loops aside."""
    out: list[If] = []
    for s in stmts:
        if isinstance(s, If):
            out += [s] + _ifs_in(s.body) + _ifs_in(s.orelse)
    return out


def finish_loops(adj: Adjoint) -> None:
    """Decide what each reversed loop saves per iteration (or that it only counts).

    A loop saves the values its reversed body reads and the iterations overwrite,
    and the carried values that backward code outside it reads (popping restores
    them).  Each value is pushed at the end of the block that defines it -- the
    body, or a branch inside it, so that a branch not taken pushes nothing -- and
    popped where the reversed block starts.
    """
    params = set(adj.fn.params)
    blocks = [b for b in lines(adj.backward) if isinstance(b, Block) and b.loop is not None]
    for block in reversed(blocks):  # inner loops first: outer loops save what they decide
        loop = block.loop
        inside = {id(x) for x in lines(block.body)}
        reads_out = {n for x in lines(adj.backward) if id(x) not in inside and x is not block
                     for n in x.reads} | params
        assigned: dict[str, list[Path]] = {}
        _assignment_paths(loop.body, (), assigned)
        for name in [*(c for c, _ in loop.carried), *loop.targets]:
            assigned.setdefault(name, []).append(())
        read: dict[str, list[Path]] = {}
        _read_paths(block.body, (), read)
        carried = {c for c, _ in loop.carried}
        saves: dict[Path, list[str]] = {}
        for name in _variant_order(loop):
            if name in read:
                where = _common(assigned[name] + read[name])
            elif name in carried and name in reads_out:
                where = ()
            else:
                continue
            saves.setdefault(where, []).append(name)
        for where, names in saves.items():
            # a name some paths through its block leave unbound is None on those (the push
            # at the block's end reads it; the reversed block reads it only where it was bound)
            stmts = _block_at(loop.body, where)
            bound = surely_assigned(stmts) | carried | set(loop.targets)
            stmts[:0] = [Assign(n, Const("None"), loop.loc, temporary=True) for n in names if n not in bound]
        loop.saved = tuple(saves.get((), ()))
        for branch in _ifs_in(loop.body):
            branch.saves = (tuple(saves.get(_path_of(loop.body, branch) + ((id(branch), 0),), ())),
                            tuple(saves.get(_path_of(loop.body, branch) + ((id(branch), 1),), ())))
        if not any(saves.values()):
            loop.counter = adj.fn.fresh("iterations")
            block.header = f"for _ in range({loop.counter}):"
            block.reads = frozenset({loop.counter})
            loop.tape = None
        for branch in _ifs_in(loop.body):
            branch.tape = loop.tape


def _block_at(stmts: list[Stmt], path: Path) -> list[Stmt]:
    """The statements of the branch at ``path`` in a loop body."""
    for if_id, side in path:
        branch = next(s for s in stmts if isinstance(s, If) and id(s) == if_id)
        stmts = branch.orelse if side else branch.body
    return stmts


def _path_of(stmts: list[Stmt], target: If, path: Path = ()) -> Path:
    for s in stmts:
        if s is target:
            return path
        if isinstance(s, If):
            for i, branch in enumerate((s.body, s.orelse)):
                found = _path_of(branch, target, path + ((id(s), i),))
                if found != ("missing",):
                    return found
    return ("missing",)
