"""Variable liveness: which variables need their own tile memory for the whole program,
and which may share it with others whose live ranges do not overlap.

While programs are lowered, ``LiveRecorder`` notes, per context (an entry program or a
Function), what each step reads and writes (by variable) and where loops and
conditional bodies begin and end. ``analyse`` then walks each entry program in order,
with every Call's function inlined, numbering the places where steps run (*points*),
and gives each variable a live range [first point, last point] or marks it always live:

- constants, variables with a host read or write handle, variables a stream copy
  reads or writes, variables with an initial value, and variables no program uses
  are always live;
- a variable whose first access in a program is not a write of all its elements
  (a read, or a partial write) holds a value from before the program ran, so it is
  always live; so is one whose first full write is inside a conditional body (an If or
  Switch case, a RepeatWhile, a Repeat of count 0) when the variable is used outside
  that body;
- a variable accessed inside a loop and also outside it is live across the whole loop.

Within one step reads come before writes (an InOut field or a Copy onto itself reads
the old value first). WriteUndef counts as a full write that reads nothing.

Storage is not affected: the engine keeps every variable at its own arena offset
(layout.py), so two variables that share modelled tile memory never share host bytes
and results cannot change. Only the modelled per-tile bytes do (``allocate_reuse``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np

_EMPTY = np.empty(0, np.int64)
READ, FULL_WRITE, PART_WRITE = 0, 1, 2


def tensor_vars(table, tensor) -> Tuple[np.ndarray, np.ndarray]:
    """(variables, whether the view covers each of them entirely) of ``tensor``."""
    gid, length = tensor._runs()
    if gid.size == 0:
        return _EMPTY, np.zeros(0, bool)
    return _covered(table, gid, length)


def _covered(table, gid: np.ndarray, length: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    owner = table.index_of(np.asarray(gid, np.int64))
    vars_, inverse = np.unique(owner, return_inverse=True)
    counts = np.bincount(inverse, weights=np.asarray(length, np.float64), minlength=vars_.size)
    sizes = np.fromiter((table.variables[v].size for v in vars_.tolist()), np.int64, vars_.size)
    return vars_.astype(np.int64), counts >= sizes


def edge_access(table, edges) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(variables read, variables written, of those written: entirely) by a compute
    set's edges (edges.EdgeTable)."""
    one = edges.gid >= 0
    gid = np.concatenate([edges.gid[one], edges.run_gid])
    length = np.concatenate([edges.n[one], edges.run_len])
    edge = np.concatenate([np.flatnonzero(one), edges.run_edge])
    keep = length > 0
    gid, length, edge = gid[keep], length[keep], edge[keep]
    reads = np.unique(table.index_of(gid[edges.reads[edge].astype(bool)])) if gid.size else _EMPTY
    w = edges.writes[edge].astype(bool) if gid.size else np.zeros(0, bool)
    if not w.any():
        return reads.astype(np.int64), _EMPTY, np.zeros(0, bool)
    written, full = _covered(table, gid[w], length[w])
    return reads.astype(np.int64), written, full


class LiveRecorder:
    """What the program lowerer tells liveness analysis, in lowering order."""

    def __init__(self, table):
        self.table = table
        self.events: Dict[Tuple[str, int], List[tuple]] = {}
        self.pinned: set = set()  # variables a stream copy touches: always live

    def _add(self, context, event) -> None:
        self.events.setdefault(context, []).append(event)

    def step(self, context, step: int, reads=(), writes=()) -> None:
        """Step ``step`` reads tensors ``reads`` and writes tensors ``writes``."""
        r = [tensor_vars(self.table, t)[0] for t in reads]
        w = [tensor_vars(self.table, t) for t in writes]
        self.step_vars(context, step, np.concatenate(r) if r else _EMPTY,
                       np.concatenate([v for v, _ in w]) if w else _EMPTY,
                       np.concatenate([f for _, f in w]) if w else np.zeros(0, bool))

    def step_vars(self, context, step: int, reads: np.ndarray, writes: np.ndarray, full: np.ndarray) -> None:
        self._add(context, ("step", step, reads, writes, full))

    def pin(self, tensor) -> None:
        self.pinned.update(tensor_vars(self.table, tensor)[0].tolist())

    def undef(self, context, tensor) -> None:
        v, full = tensor_vars(self.table, tensor)
        self._add(context, ("step", -1, _EMPTY, v, full))

    def open(self, context, conditional: bool) -> None:
        """A loop body (``conditional``: it may run no time) or a conditional body begins."""
        self._add(context, ("open", conditional))

    def close(self, context, loop: bool) -> None:
        self._add(context, ("close", loop))

    def call(self, context, function: int) -> None:
        self._add(context, ("call", function))


@dataclass
class Liveness:
    """The outcome of ``analyse``: per variable, always live or its range of points."""

    always: np.ndarray       # bool per variable
    start: np.ndarray        # per variable: first live point (-1: always live)
    end: np.ndarray          # per variable: last live point
    point_step: np.ndarray   # per point: the step that runs there (-1: a WriteUndef)


class _Walk:
    """One linear walk over the entry programs with functions inlined."""

    def __init__(self, recorder: LiveRecorder, num_vars: int, max_points: int):
        self.rec = recorder
        self.max_points = max_points
        self.point_step: List[int] = []
        self.acc_point: List[np.ndarray] = []
        self.acc_var: List[np.ndarray] = []
        self.acc_kind: List[np.ndarray] = []
        self.acc_scope: List[np.ndarray] = []
        # Scopes: (parent, conditional, is_loop, first point, last point); 0 is the root.
        self.scopes: List[List] = [[-1, False, False, 0, -1]]
        self.program_spans: List[Tuple[int, int]] = []

    def program(self, index: int) -> None:
        first = len(self.point_step)
        self._events(("program", index), 0)
        self.program_spans.append((first, len(self.point_step) - 1))

    def _events(self, context, scope: int) -> None:
        """Walk ``context``'s events, entering each Called function where it is called
        (with an explicit stack: chains of Calls may be thousands deep)."""
        frames = [(iter(self.rec.events.get(context, ())), [scope], None)]
        on_path = set()
        while frames:
            events, stack, function = frames[-1]
            ev = next(events, None)
            if ev is None:
                frames.pop()
                on_path.discard(function)
                continue
            kind = ev[0]
            if kind == "step":
                self._point(ev, stack[-1])
            elif kind == "open":
                self.scopes.append([stack[-1], ev[1], False, len(self.point_step), -1])
                stack.append(len(self.scopes) - 1)
            elif kind == "close":
                s = self.scopes[stack.pop()]
                s[2], s[4] = ev[1], len(self.point_step) - 1
            elif kind == "call" and ev[1] not in on_path:
                on_path.add(ev[1])
                frames.append((iter(self.rec.events.get(("function", ev[1]), ())), [stack[-1]], ev[1]))

    def _point(self, ev, scope: int) -> None:
        _, step, reads, writes, full = ev
        p = len(self.point_step)
        if p >= self.max_points:
            raise _TooLarge()
        self.point_step.append(step)
        for vars_, kinds in ((reads, np.full(reads.size, READ, np.int8)),
                             (writes, np.where(full, FULL_WRITE, PART_WRITE).astype(np.int8))):
            if vars_.size:
                self.acc_point.append(np.full(vars_.size, p, np.int64))
                self.acc_var.append(vars_)
                self.acc_kind.append(kinds)
                self.acc_scope.append(np.full(vars_.size, scope, np.int64))


class _TooLarge(Exception):
    pass


def analyse(recorder: LiveRecorder, num_programs: int, num_vars: int, always: np.ndarray,
            max_points: int = 1_000_000) -> Liveness:
    """Live ranges of the variables (``always``: those known to be always live already).
    A program too large to inline within ``max_points`` points leaves every variable
    always live."""
    walk = _Walk(recorder, num_vars, max_points)
    always = always.copy()
    always[list(recorder.pinned)] = True
    try:
        for i in range(num_programs):
            walk.program(i)
    except _TooLarge:
        return Liveness(np.ones(num_vars, bool), np.full(num_vars, -1, np.int64), np.full(num_vars, -1, np.int64),
                        np.full(0, -1, np.int64))
    start = np.full(num_vars, -1, np.int64)
    end = np.full(num_vars, -1, np.int64)
    if walk.acc_point:
        point = np.concatenate(walk.acc_point)
        var = np.concatenate(walk.acc_var)
        kind = np.concatenate(walk.acc_kind)
        scope = np.concatenate(walk.acc_scope)
        # by variable, then point, reads before writes at one point
        order = np.lexsort((kind != READ, point, var))
        point, var, kind, scope = point[order], var[order], kind[order], scope[order]
        _ranges(walk, point, var, kind, scope, start, end, always)
    always |= start < 0
    start[always], end[always] = -1, -1
    return Liveness(always, start, end, np.asarray(walk.point_step, np.int64))


def _ranges(walk: _Walk, point, var, kind, scope, start, end, always) -> None:
    scopes = walk.scopes
    vs, first = np.unique(var, return_index=True)
    last = np.r_[first[1:], var.size] - 1
    start[vs], end[vs] = point[first], point[last]
    # The first access in each program must be a full write, unconditional as far as
    # the variable's uses in that program reach.
    prog_of = np.searchsorted(np.asarray([b for b, _ in walk.program_spans], np.int64), point, side="right") - 1
    key = var * (len(walk.program_spans) + 1) + prog_of
    _, firsts = np.unique(key, return_index=True)
    lasts = np.r_[firsts[1:], key.size] - 1
    for f, l in zip(firsts.tolist(), lasts.tolist()):
        v = int(var[f])
        if always[v]:
            continue
        if kind[f] != FULL_WRITE:
            always[v] = True
            continue
        lo, hi = int(point[f]), int(point[l])
        s = int(scope[f])
        while s > 0:
            parent, conditional, _, b, e = scopes[s]
            if b <= lo and hi <= e:
                break  # the variable lives inside this body: whatever is outside does not matter
            if conditional:
                always[v] = True
                break
            s = parent
    # Loops: a variable used inside a loop and outside it is live across all of it.
    # Innermost loops first (they come after their parents), then outwards.
    loops = [(b, e) for (_, _, is_loop, b, e) in scopes[1:] if is_loop and e >= b]
    for b, e in sorted(loops, key=lambda be: be[1] - be[0]):
        touched = (start <= e) & (end >= b) & (start >= 0)
        spill = touched & ((start < b) | (end > e))
        start[spill] = np.minimum(start[spill], b)
        end[spill] = np.maximum(end[spill], e)


def allocate_reuse(layout, live: Liveness, num_steps: int) -> None:
    """Count the not-always-live variables' regions in ``layout`` (per tile) at first-fit
    offsets over their live ranges, instead of each in bytes of its own; record per tile
    the bytes they take (``layout.not_always_live``) and per step the bytes live."""
    rv, rt, rb = layout.region_var, layout.region_tile, layout.region_bytes
    if rv.size == 0 or live.always.all():
        return
    reuse = ~live.always[rv]
    num_tiles = layout.by_category["variables"].size
    own = np.bincount(rt[reuse], weights=rb[reuse], minlength=num_tiles).astype(np.int64)
    peak = np.zeros(num_tiles, np.int64)
    idx = np.flatnonzero(reuse)
    s, e = live.start[rv[idx]], live.end[rv[idx]]
    order = np.lexsort((s, -rb[idx], rt[idx]))
    idx, s, e = idx[order], s[order], e[order]
    tiles = rt[idx]
    bounds = np.flatnonzero(np.r_[True, tiles[1:] != tiles[:-1], True])
    for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        sizes = rb[idx[a:z]]
        peak[int(tiles[a])] = int((first_fit(sizes, s[a:z], e[a:z]) + sizes).max())
    layout.by_category["variables"] = layout.by_category["variables"] - own + peak
    layout.not_always_live = peak
    # Per step: bytes of not-always-live variables live while it runs (all tiles).
    npts = live.point_step.size
    per_var = np.bincount(rv[idx], weights=rb[idx], minlength=live.always.size)
    used = np.flatnonzero((per_var > 0) & (live.start >= 0))
    delta = np.zeros(npts + 1)
    np.add.at(delta, live.start[used], per_var[used])
    np.add.at(delta, live.end[used] + 1, -per_var[used])
    at_point = np.cumsum(delta)[:npts]
    step_live = np.zeros(num_steps, np.int64)
    steps = live.point_step
    ok = steps >= 0
    np.maximum.at(step_live, steps[ok], at_point[ok].astype(np.int64))
    layout.step_live = step_live


def first_fit(size: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Offsets for blocks of ``size`` live over [start, end], in the order given (largest
    first), each at the lowest offset free over its whole range."""
    n = size.size
    off = np.zeros(n, np.int64)
    for k in range(n):
        sz, st, en = int(size[k]), start[k], end[k]
        busy = np.flatnonzero((start[:k] <= en) & (end[:k] >= st))
        o = 0
        if busy.size:
            lo = off[busy]
            order = np.argsort(lo, kind="stable")
            lo, hi = lo[order], lo[order] + size[busy][order]
            # a gap ends at each block's start; it begins after every block below it
            begins = np.r_[0, np.maximum.accumulate(hi)]
            ends = np.r_[lo, np.iinfo(np.int64).max]
            fits = np.flatnonzero(ends - begins >= sz)
            o = int(begins[fits[0]])
        off[k] = o
    return off
