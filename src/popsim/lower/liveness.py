"""Variable liveness: which variables need their own tile memory for the whole program,
and which may share it with others whose live ranges do not overlap.

While programs are lowered, ``LiveRecorder`` notes, per context (an entry program or a
Function), what each step reads and writes (by variable, with the elements of those it
touches only in part) and where loops and conditional bodies begin and end. ``analyse``
then walks each entry program in order, with every Call's function inlined, numbering the
places where steps run (*points*), and gives each variable a live range [first point,
last point] or marks it always live:

- constants, variables with a host read or write handle, variables with an initial
  value, and variables no program uses are always live;
- a variable a program reads an element of before writing it holds a value from before
  the program ran, so it is always live. Writes may define a variable piece by piece
  (several copies or compute sets each writing part of it): their elements add up, and
  elements never read need no write. A stream copy from the host is such a write, one
  to the host a read;
- so is one whose defining writes are inside a conditional body (an If or Switch case, a
  RepeatWhile, a Repeat of count 0) when the variable is used outside that body;
- a variable accessed inside a loop and also outside it is live across the whole loop.

Within one step reads come before writes (an InOut field or a Copy onto itself reads
the old value first). WriteUndef counts as a write that reads nothing.

Storage is not affected: the engine keeps every variable at its own arena offset
(layout.py), so two variables that share modelled tile memory never share host bytes
and results cannot change. Only the modelled per-tile bytes do (``allocate_reuse``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np

from .._first_fit import place as _place
from ..runs import sort_order

_EMPTY = np.empty(0, np.int64)
READ, PART_READ, FULL_WRITE, PART_WRITE = 0, 1, 2, 3


#: what a step does to variables: (variables, whether it touches each entirely, the merged
#: intervals [lo, hi) of global element ids it touches of the others)
Access = Tuple[np.ndarray, np.ndarray, Tuple[np.ndarray, np.ndarray]]
NO_ACCESS: Access = (_EMPTY, np.zeros(0, bool), (_EMPTY, _EMPTY))


def tensor_vars(table, tensor) -> Tuple[np.ndarray, np.ndarray]:
    """(variables, whether the view covers each of them entirely) of ``tensor``."""
    v, full, _ = tensor_access(table, tensor)
    return v, full


def tensor_access(table, tensor) -> Access:
    """The Access of the elements of view ``tensor``."""
    gid, length = tensor._runs()
    return runs_access(table, gid, length)


def runs_access(table, gid: np.ndarray, length: np.ndarray) -> Access:
    """The Access of runs of global ids (first ``gid``, ``length``; a run never crosses
    from one variable into another). Runs may overlap: coverage counts each element once."""
    gid, length = np.asarray(gid, np.int64), np.asarray(length, np.int64)
    return intervals_access(table, *merge_intervals(gid, gid + length))


def intervals_access(table, lo: np.ndarray, hi: np.ndarray) -> Access:
    """The Access of the elements [lo, hi) of merge_intervals' union of runs."""
    if lo.size == 0:
        return NO_ACCESS
    owner, last = table.index_of(lo), table.index_of(hi - 1)
    if (last != owner).any():   # merged across the end of one variable into the next: split there
        n = last - owner + 1
        rep = np.repeat(np.arange(lo.size), n)
        owner = owner[rep] + np.arange(rep.size) - np.repeat(np.cumsum(n) - n, n)
        bases = table.bases()
        lo, hi = np.maximum(lo[rep], bases[owner]), hi[rep]
        nxt = np.minimum(owner + 1, bases.size - 1)
        hi = np.where(owner + 1 < bases.size, np.minimum(hi, bases[nxt]), hi)
        keep = hi > lo
        lo, hi, owner = lo[keep], hi[keep], owner[keep]
    vars_, first = np.unique(owner, return_index=True)
    cover = np.add.reduceat(hi - lo, first)
    sizes = np.fromiter((table.variables[v].size for v in vars_.tolist()), np.int64, vars_.size)
    full = cover >= sizes
    part = ~full[np.searchsorted(vars_, owner)]
    return vars_.astype(np.int64), full, (lo[part], hi[part])


def join_accesses(accesses) -> Access:
    """One Access of several (of different tensors one step touches)."""
    accesses = [a for a in accesses if a[0].size]
    if not accesses:
        return NO_ACCESS
    if len(accesses) == 1:
        return accesses[0]
    vars_ = np.concatenate([a[0] for a in accesses])
    full = np.concatenate([a[1] for a in accesses])
    lo, hi = merge_intervals(np.concatenate([a[2][0] for a in accesses]), np.concatenate([a[2][1] for a in accesses]))
    return vars_, full, (lo, hi)


#: merge_intervals counts coverage over the ids the intervals span when that is at most this
#: many ids an interval; sparser intervals are sorted.
DENSE_SPAN = 8


def merge_intervals(lo: np.ndarray, hi: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The union of intervals [lo, hi) as sorted, disjoint, non-touching intervals."""
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if lo.size == 0:
        return _EMPTY, _EMPTY
    base = int(lo.min())
    span = int(hi.max()) - base
    if span <= DENSE_SPAN * lo.size:
        # intervals packed close (a convolution's weights read by every tile): how many
        # cover each id, counted over the span, in linear time rather than by a sort
        cover = np.cumsum(np.bincount(lo - base, minlength=span + 1) - np.bincount(hi - base, minlength=span + 1))
        change = np.diff((cover[:span] > 0).astype(np.int8), prepend=np.int8(0), append=np.int8(0))
        return np.flatnonzero(change > 0) + base, np.flatnonzero(change < 0) + base
    order = sort_order(lo)   # intervals with equal starts merge whatever their order
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    starts = np.flatnonzero(np.r_[True, lo[1:] > reach[:-1]])
    return lo[starts], np.maximum.reduceat(hi, starts)


#: Runs merged at once by edge_access: the union of the batches' unions is the union of
#: all, and a compute set whose tiles read the same elements many times (a convolution's
#: input gathered by every tile that needs it) has far fewer elements than runs.
RUNS_AT_ONCE = 1 << 19


def edge_access(table, edges) -> Tuple[Access, Access]:
    """(what a compute set's edges read, what they write) (edges.EdgeTable)."""
    one = np.flatnonzero(edges.gid >= 0)
    parts = [(edges.gid[one], edges.n[one], one)]
    runs = edges.run_gid.size
    parts += [(edges.run_gid[k:k + RUNS_AT_ONCE], edges.run_len[k:k + RUNS_AT_ONCE],
               edges.run_edge[k:k + RUNS_AT_ONCE]) for k in range(0, runs, RUNS_AT_ONCE)]
    merged: Tuple[list, list] = ([], [])
    for gid, length, edge in parts:
        for flags, out in ((edges.reads, merged[0]), (edges.writes, merged[1])):
            mine = flags[edge].astype(bool)
            if mine.any():
                out.append(merge_intervals(gid[mine], gid[mine] + length[mine]))
    del parts
    return intervals_access(table, *_union(merged[0])), intervals_access(table, *_union(merged[1]))


def _union(merged: List[Tuple[np.ndarray, np.ndarray]]) -> Tuple[np.ndarray, np.ndarray]:
    """The union of unions of intervals (merge_intervals' results)."""
    if len(merged) < 2:
        return merged[0] if merged else (_EMPTY, _EMPTY)
    return merge_intervals(np.concatenate([lo for lo, _ in merged]), np.concatenate([hi for _, hi in merged]))


class LiveRecorder:
    """What the program lowerer tells liveness analysis, in lowering order."""

    def __init__(self, table):
        self.table = table
        self.events: Dict[Tuple[str, int], List[tuple]] = {}

    def _add(self, context, event) -> None:
        self.events.setdefault(context, []).append(event)

    def step(self, context, step: int, reads=(), writes=()) -> None:
        """Step ``step`` reads tensors ``reads`` and writes tensors ``writes``."""
        self.step_access(context, step, join_accesses([tensor_access(self.table, t) for t in reads]),
                         join_accesses([tensor_access(self.table, t) for t in writes]))

    def step_access(self, context, step: int, reads: Access, writes: Access) -> None:
        self._add(context, ("step", step, reads, writes))

    def stream(self, context, step: int, tensor, to_device: bool) -> None:
        """A stream copy: from the host it writes ``tensor``'s elements, an ordinary
        definition (as Poplar's liveness treats it); to the host it reads them."""
        if to_device:
            self.step(context, step, writes=[tensor])
        else:
            self.step(context, step, reads=[tensor])

    def undef(self, context, tensor) -> None:
        self._add(context, ("step", -1, NO_ACCESS, tensor_access(self.table, tensor)))

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
        # point -> intervals of global ids it reads (writes) of variables it does not read (write) entirely
        self.read_parts: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
        self.write_parts: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
        # Scopes: (parent, conditional, is_loop, first point, last point); 0 is the root.
        self.scopes: List[List] = [[-1, False, False, 0, -1]]
        self.program_spans: List[Tuple[int, int]] = []
        self.bases = recorder.table.bases()
        self.sizes = np.fromiter((v.size for v in recorder.table.variables), np.int64, len(recorder.table.variables))

    def program(self, index: int) -> None:
        first = len(self.point_step)
        self._events(("program", index), 0)
        self.program_spans.append((first, len(self.point_step) - 1))

    def _events(self, context, scope: int) -> None:
        """Walk ``context``'s events, entering each Called function where it is called
        (with an explicit stack: chains of Calls may be thousands deep)."""
        frames = [(iter(self.rec.events.get(context, ())), [scope], None)]
        on_path: set = set()
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
        _, step, (reads, rfull, rparts), (writes, wfull, wparts) = ev
        p = len(self.point_step)
        if p >= self.max_points:
            raise _TooLarge()
        self.point_step.append(step)
        if rparts[0].size:
            self.read_parts[p] = rparts
        if wparts[0].size:
            self.write_parts[p] = wparts
        for vars_, kinds in ((reads, np.where(rfull, READ, PART_READ).astype(np.int8)),
                             (writes, np.where(wfull, FULL_WRITE, PART_WRITE).astype(np.int8))):
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
        order = np.lexsort((kind >= FULL_WRITE, point, var))
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
    for f, last in zip(firsts.tolist(), lasts.tolist()):
        v = int(var[f])
        if always[v]:
            continue
        defined = f if kind[f] == FULL_WRITE else _defining_writes(walk, v, point, kind, f, last)
        if defined < 0:
            always[v] = True  # some element is read before this run writes it: its value is older
            continue
        lo, hi = int(point[f]), int(point[last])
        if any(_conditional_for(scopes, int(scope[k]), lo, hi) for k in range(f, defined + 1) if kind[k] >= FULL_WRITE):
            always[v] = True
    # Loops: a variable used inside a loop and outside it is live across all of it.
    # Innermost loops first (they come after their parents), then outwards.
    loops = [(b, e) for (_, _, is_loop, b, e) in scopes[1:] if is_loop and e >= b]
    for b, e in sorted(loops, key=lambda be: be[1] - be[0]):
        touched = (start <= e) & (end >= b) & (start >= 0)
        spill = touched & ((start < b) | (end > e))
        start[spill] = np.minimum(start[spill], b)
        end[spill] = np.maximum(end[spill], e)


def _conditional_for(scopes, s: int, lo: int, hi: int) -> bool:
    """Whether a write in scope ``s`` may not run while the variable is used over points
    [lo, hi]: some conditional body holds the write but not all of those uses."""
    while s > 0:
        parent, conditional, _, b, e = scopes[s]
        if b <= lo and hi <= e:
            return False  # the variable lives inside this body: whatever is outside does not matter
        if conditional:
            return True
        s = parent
    return False


def _clip(parts, base: int, end: int):
    """The intervals of ``parts`` (sorted, disjoint) within [base, end)."""
    lo, hi = parts
    a, z = np.searchsorted(hi, base, side="right"), np.searchsorted(lo, end, side="left")
    return np.clip(lo[a:z], base, end), np.clip(hi[a:z], base, end)


def _defining_writes(walk: _Walk, v: int, point, kind, f: int, last: int) -> int:
    """A variable first written in part at access ``f`` (its accesses in one program are
    ``f..last``, in order): -1 if the program reads an element of it before writing it (the
    value is an earlier run's), else the access whose write completes it (the last
    access when the writes never cover it all and the elements left are never read)."""
    base, size = int(walk.bases[v]), int(walk.sizes[v])
    lo, hi = _EMPTY, _EMPTY   # written so far
    for k in range(f, last + 1):
        kk = kind[k]
        if kk == READ:
            return -1
        if kk == FULL_WRITE:
            return k
        if kk == PART_READ:
            rlo, rhi = _clip(walk.read_parts[int(point[k])], base, base + size)
            at = np.searchsorted(lo, rlo, side="right") - 1
            if rlo.size and (at.min() < 0 or (hi[np.maximum(at, 0)] < rhi).any()):
                return -1
            continue
        wlo, whi = _clip(walk.write_parts[int(point[k])], base, base + size)
        lo, hi = merge_intervals(np.r_[lo, wlo], np.r_[hi, whi])
        if int((hi - lo).sum()) >= size:
            return k
    return last


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
    bvar, btile, bsize = rv[idx], rt[idx], rb[idx]   # one block per region (a variable's run on a tile)
    s, e = live.start[bvar], live.end[bvar]
    order = np.lexsort((s, -bsize, btile))
    bsize, s, e, tiles = bsize[order], s[order], e[order], btile[order]
    bounds = np.flatnonzero(np.r_[True, tiles[1:] != tiles[:-1], True])
    seen: Dict[bytes, int] = {}   # tiles often hold the same blocks over the same ranges
    for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        sig = np.concatenate([bsize[a:z], s[a:z], e[a:z]]).tobytes()
        top = seen.get(sig)
        if top is None:
            top = seen[sig] = int((first_fit(bsize[a:z], s[a:z], e[a:z]) + bsize[a:z]).max())
        peak[int(tiles[a])] = top
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
    first), each at the lowest offset free over its whole range: the lowest gap between
    the earlier blocks live with it (by offset, ties in order) that holds it, else above
    them all. In C (native/accel/first_fit.cpp): a tile of ResNet-50 holds thousands of
    blocks, and numpy's calls per block made this most of the liveness analysis."""
    size, start, end = (np.ascontiguousarray(a, np.int64) for a in (size, start, end))
    off = np.zeros(size.size, np.int64)
    _place(size, start, end, off)
    return off
