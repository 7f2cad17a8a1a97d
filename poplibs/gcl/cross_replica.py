"""The collectives across replicas: all-reduce, reduce-scatter, all-gather, all-to-all
(GCL's allReduceCrossReplica and friends), checked, then lowered to ring schedules
(ring_programs.py) or, for the broadcast method and all-to-all, to one exchange of
direct copies followed by on-tile work."""
from __future__ import annotations

from typing import List

import popsim
from popsim.program import Copy, CrossReplicaCopy, Execute, Sequence

from .collective_types import MOVE_TYPES, CollectiveOperator as Op, check_operator, group_members
from .fragments import tile_elements
from .options import parse_options
from ..poputil import PoplibsError
from ..poputil.checks import check_name, check_prog, check_tensor
from ..popops import zero
from .ring_programs import AllGatherPlan, ReduceScatterPlan, RingContext, chains_for, run_schedule
from .rings import make_rings, pick_method

__all__ = ["all_reduce_cross_replica", "all_reduce_in_place_cross_replica",
           "all_reduce_to_destination_cross_replica", "reduce_scatter_cross_replica", "all_gather_cross_replica",
           "all_to_all_cross_replica"]


class _Call:
    """One collective's checked arguments and the facts its lowering needs."""

    def __init__(self, fn: str, graph, data, prog, group, name: str, options, op=None, moves=False):
        what = f"gcl.{fn}"
        check_tensor(graph, data, what, "data")
        check_prog(prog, what)
        check_name(name, what)
        replicas = graph.description.replication_factor
        if graph.replication_factor != replicas:
            raise PoplibsError(f"{what}: called on the top-level view of a graph of {replicas} replicas; "
                               "call it on the replicated graph (the collective runs across its replicas)")
        self.what, self.graph, self.prog, self.data = f"{what} of '{data.name}'", graph, prog, data
        self.op = None if moves else check_operator(op, data.dtype, self.what)
        if moves and data.dtype not in MOVE_TYPES:
            raise PoplibsError(f"{self.what}: {data.dtype.name} tensors are not supported; GCL moves "
                               f"{', '.join(t.name for t in MOVE_TYPES)}")
        mapping = graph.get_tile_mapping(data, require_complete=False)
        unmapped = data.num_elements() - sum(b - a for intervals in mapping for a, b in intervals)
        if unmapped:
            raise PoplibsError(f"{self.what}: {unmapped} of the data's {data.num_elements()} elements are not mapped "
                               "to a tile of this graph; map the data (set_tile_mapping) before the collective")
        self.name = name or f"{fn}({data.name})"
        self.options = parse_options(options, self.what)
        self.groups = group_members(group, replicas, self.what)
        self.replicas, self.size = replicas, len(self.groups[0])
        self.ipus_per_replica = graph.target.num_ipus
        self.topology = str(graph.target.ipu_link_topology)

    def method(self, kind: str, nbytes: int) -> str:
        method = self.options.method
        if method == "auto":
            method = pick_method(kind, nbytes, self.size, self.ipus_per_replica, self.topology)
        return method

    def rings(self, method: str):
        return make_rings(self.groups, self.replicas, self.ipus_per_replica, rank_order=method == "broadcast")

    def nbytes(self) -> int:
        return self.data.num_elements() * self.data.dtype.size


def _check_writable(t, what: str, role: str) -> None:
    if t.contains_constant() or t.contains_aliases():
        raise PoplibsError(f"{what}: the {role} '{t.name}' must be writable: it contains a constant or some "
                           "elements more than once; pass a variable (graph.clone(t) makes one)")


def _ring_all_reduce(call: _Call, op: Op, src, dst) -> None:
    """Reduce-scatter then all-gather, both by one method, on each tile's pieces of
    ``src``; the partial and final results land in ``dst`` (``src`` itself in place)."""
    graph, n = call.graph, call.size
    method = call.method("reduce_scatter", call.nbytes())
    rings = call.rings(method)
    cut = tile_elements(graph, src)
    out = cut.like(dst)
    ctx = RingContext.create(graph, src.dtype, rings, cut.tiles, call.prog, call.name)
    reduce_rings, gather_rings = chains_for(method, n), chains_for(method, n, aligned=False)
    reduce_plans, gather_plans = [], []
    shares = cut.shares(len(reduce_rings))
    for r, share in enumerate(shares):
        sub = _ring_tiles(ctx, share, r, shares)
        local = [cut.pieces(i, n, b, e) for i, b, e in share]
        slots = local if dst is src else [out.pieces(i, n, b, e) for i, b, e in share]
        reduce_plans.append(ReduceScatterPlan(sub, local, slots, reduce_rings[r], op))
        gather_plans.append(AllGatherPlan(sub, slots, gather_rings[r]))
    run_schedule(graph, call.prog, reduce_plans, f"{call.name}/reduceScatter")
    run_schedule(graph, call.prog, gather_plans, f"{call.name}/allGather")


def _broadcast_all_reduce(call: _Call, op: Op, data) -> None:
    """Every replica sends all its data to every other in one exchange, then each
    reduces the group's values in rank order (in place on ``data``)."""
    graph, n = call.graph, call.size
    rings = call.rings("broadcast")
    cut = tile_elements(graph, data)
    ctx = RingContext.create(graph, data.dtype, rings, cut.tiles, call.prog, call.name)
    received = [graph.clone(data, f"{call.name}/from{s + 1}") for s in range(n - 1)]
    call.prog.add(Sequence([CrossReplicaCopy(data, received[s], rings.shift_map(s + 1), f"{call.name}/broadcast")
                            for s in range(n - 1)]))
    cuts = [cut.like(r) for r in received]
    cs = graph.add_compute_set(f"{call.name}/reduce")
    for i in range(len(cut.tiles)):
        ctx.add(cs, "broadcast", i, {"data": cut.view(i), "received": [c.view(i) for c in cuts]}, op=op,
                divisor=n if op is Op.MEAN else 0)
    call.prog.add(Execute(cs))


def _all_reduce(call: _Call, dst) -> None:
    data, op = call.data, call.op
    if data.num_elements() == 0:
        return
    if op is Op.LOCAL or call.size == 1 and op not in (Op.SQUARE_ADD,):
        if dst is not data:
            call.prog.add(Copy(data, dst))
        return
    method = call.options.method
    if method == "auto" and call.nbytes() * call.size <= call.options.max_broadcast_size:
        method = "broadcast"
    if method == "broadcast":
        if dst is not data:
            call.prog.add(Copy(data, dst))
        _broadcast_all_reduce(call, op, dst)
    else:
        _ring_all_reduce(call, op, data, dst)


def all_reduce_cross_replica(graph, data, op, prog, group=None, name: str = "", options=None):
    """GCL's allReduceCrossReplica: a new tensor, mapped like ``data``, holding ``op``
    over the group's replicas of ``data``, element by element, on every replica. A list
    of tensors is reduced as one collective; the results come back as a list."""
    if isinstance(data, (list, tuple)):
        return _all_reduce_many(graph, list(data), op, prog, group, name, options)
    call = _Call("all_reduce_cross_replica", graph, data, prog, group, name, options, op)
    out = graph.clone(data, f"{call.name}/result")
    _all_reduce(call, out)
    return out


def all_reduce_in_place_cross_replica(graph, data, op, prog, group=None, name: str = "", options=None) -> None:
    """GCL's allReduceInPlaceCrossReplica: ``data`` is overwritten with the result."""
    if isinstance(data, (list, tuple)):
        _all_reduce_many(graph, list(data), op, prog, group, name, options, in_place=True)
        return
    call = _Call("all_reduce_in_place_cross_replica", graph, data, prog, group, name, options, op)
    _check_writable(data, call.what, "tensor reduced in place")
    _all_reduce(call, data)


def all_reduce_to_destination_cross_replica(graph, data, destination, op, prog, group=None, name: str = "",
                                            options=None) -> None:
    """GCL's allReduceToDestinationCrossReplica: the result goes into ``destination``
    (data's shape and type)."""
    call = _Call("all_reduce_to_destination_cross_replica", graph, data, prog, group, name, options, op)
    check_tensor(graph, destination, call.what, "destination")
    if destination.shape != data.shape or destination.dtype != data.dtype:
        raise PoplibsError(f"{call.what}: the destination '{destination.name}' is {destination.dtype.name}"
                           f"{list(destination.shape)}, the data {data.dtype.name}{list(data.shape)}; they must "
                           "have the same shape and type")
    _check_writable(destination, call.what, "destination")
    if destination.intersects_with(data) and destination is not data:
        raise PoplibsError(f"{call.what}: the destination '{destination.name}' overlaps the data; use "
                           "all_reduce_in_place_cross_replica to reduce in place")
    _all_reduce(call, destination)


def _all_reduce_many(graph, tensors: List, op, prog, group, name, options, in_place: bool = False):
    fn = "all_reduce_in_place_cross_replica" if in_place else "all_reduce_cross_replica"
    if not tensors:
        raise PoplibsError(f"gcl.{fn}: the list of tensors is empty")
    for k, t in enumerate(tensors):
        check_tensor(graph, t, f"gcl.{fn}", f"tensor {k} of the list")
    types = {t.dtype for t in tensors}
    if len(types) > 1:
        raise PoplibsError(f"gcl.{fn}: the tensors of one call must share an element type, found "
                           f"{', '.join(sorted(t.name for t in types))}; make one call per type")
    flat = popsim.concat([t.flatten() for t in tensors])
    if in_place:
        all_reduce_in_place_cross_replica(graph, flat, op, prog, group, name, options)
        return None
    result = all_reduce_cross_replica(graph, flat, op, prog, group, name, options)
    out, at = [], 0
    for t in tensors:
        out.append(result[at:at + t.num_elements()].reshape(t.shape))
        at += t.num_elements()
    return out


def reduce_scatter_cross_replica(graph, data, op, prog, group=None, name: str = "", options=None):
    """GCL's reduceScatterCrossReplica: ``data`` (its n elements, flattened) reduced over
    the group, the replica of rank r getting chunk r: elements [r c, (r+1) c) with
    c = ceil(n / group size), the last chunk zero-padded."""
    call = _Call("reduce_scatter_cross_replica", graph, data, prog, group, name, options, op)
    op, data = call.op, data.flatten()  # GCL takes rank 1; any shape reads as its flattened elements
    n, size = call.size, data.num_elements()
    chunk = max(1, -(-size // n))
    method = call.method("reduce_scatter", call.nbytes())
    if method == "broadcast":
        raise PoplibsError(f"{call.what}: the broadcast method is for all-reduce and all-gather; "
                           "reduce-scatter runs on rings (clockwise_ring, anticlockwise_ring, "
                           "bidirectional_ring_pair, meet_in_middle_ring, or auto)")
    rings = call.rings(method)
    # The chunks as the rows of a table, in ring-position order, each row spread over the
    # tiles alike (GCL's rearrangement before the ring), the padding zeroed.
    table = _rows_alike(graph, data.dtype, n, (chunk,), data, f"{call.name}/chunks")
    for q, rank in enumerate(rings.ranks_in_ring_order()):
        lo, hi = min(size, rank * chunk), min(size, (rank + 1) * chunk)
        if hi > lo:
            call.prog.add(Copy(data[lo:hi], table[q, :hi - lo]))
        if hi - lo < chunk:
            zero(graph, table[q, hi - lo:], call.prog, f"{call.name}/padding")
    cut = tile_elements(graph, table[0])
    ctx = RingContext.create(graph, data.dtype, rings, cut.tiles, call.prog, call.name)
    rows = [cut.like(table[q]) for q in range(n)]
    if op is Op.LOCAL:  # no reduction: each replica keeps its own chunk
        return _slice_rows(ctx, rows, 0, call)
    plans, parts = [], {}  # parts: (tile index, ring) -> this replica's finished part there
    ring_chains = chains_for(method, n)
    shares = cut.shares(len(ring_chains))
    for r, share in enumerate(shares):
        sub = _ring_tiles(ctx, share, r, shares)
        pieces = [[row.view(i, b, e) for row in rows] for i, b, e in share]
        _, result = sub.buffer([e - b for _, b, e in share], f"chunk{r}")
        parts.update({(i, r): part for (i, _, _), part in zip(share, result)})
        plans.append(ReduceScatterPlan(sub, pieces, [[part] for part in result], ring_chains[r], op))
    run_schedule(graph, call.prog, plans, f"{call.name}/reduceScatter")
    # The chunk: the rings' parts in the rows' order (tile after tile, the first ring first).
    return popsim.concat([parts[key] for key in sorted(parts)])


def all_gather_cross_replica(graph, data, prog, group=None, name: str = "", options=None):
    """GCL's allGatherCrossReplica: shape [group size, *data.shape]; row r holds the
    data of the group's replica of rank r, on every replica (each row mapped like
    ``data``)."""
    call = _Call("all_gather_cross_replica", graph, data, prog, group, name, options, moves=True)
    n = call.size
    out = _rows_alike(graph, data.dtype, n, tuple(data.shape), data, f"{call.name}/result")
    if data.num_elements() == 0:
        return out
    method = call.method("all_gather", call.nbytes())
    rings = call.rings(method)
    cut = tile_elements(graph, data)
    ctx = RingContext.create(graph, data.dtype, rings, cut.tiles, call.prog, call.name)
    rows = [cut.like(out[rank]) for rank in rings.ranks_in_ring_order()]
    tiles = range(len(cut.tiles))
    if method == "broadcast":
        received = [graph.clone(data, f"{call.name}/from{s + 1}") for s in range(n - 1)]
        call.prog.add(Sequence([CrossReplicaCopy(data, received[s], rings.shift_map(s + 1), f"{call.name}/broadcast")
                                for s in range(n - 1)]))
        _store(ctx, [cut.like(source) for source in [data] + received], rows, call)
        return out
    # Each replica's own row first, then the rings carry the others.
    cs = graph.add_compute_set(f"{call.name}/own")
    for i in tiles:
        ctx.add(cs, "gather", i, {"data": [cut.view(i)], "out": [row.view(i) for row in rows]}, offsets=[0])
    call.prog.add(Execute(cs))
    ring_chains = chains_for(method, n, aligned=False)
    plans = []
    shares = cut.shares(len(ring_chains))
    for r, share in enumerate(shares):
        slots = [[row.view(i, b, e) for row in rows] for i, b, e in share]
        plans.append(AllGatherPlan(_ring_tiles(ctx, share, r, shares), slots, ring_chains[r]))
    run_schedule(graph, call.prog, plans, f"{call.name}/allGather")
    return out


def all_to_all_cross_replica(graph, data, prog, group=None, name: str = "", options=None):
    """GCL's allToAllCrossReplica: ``data`` has one row per replica of the group; the
    result's row j on the replica of rank r is row r of rank j's data. One exchange of
    direct copies (rank r sends row r + s to rank r + s, for every s at once)."""
    call = _Call("all_to_all_cross_replica", graph, data, prog, group, name, options, moves=True)
    n = call.size
    if data.rank < 1 or data.shape[0] != n:
        raise PoplibsError(f"{call.what}: the data must have one row per replica of the group "
                           f"(leading dimension {n}), found shape {list(data.shape)}")
    rings = call.rings("broadcast")  # rank order: no ring to follow
    table = _rows_alike(graph, data.dtype, n, tuple(data.shape[1:]), data[0], f"{call.name}/rows")
    call.prog.add(Copy(data, table))
    out = graph.clone(table, f"{call.name}/result")
    if data.num_elements() == 0:
        return out
    cut = tile_elements(graph, table[0])
    ctx = RingContext.create(graph, data.dtype, rings, cut.tiles, call.prog, call.name)
    rows, out_rows = [cut.like(table[j]) for j in range(n)], [cut.like(out[j]) for j in range(n)]
    sent = [graph.clone(table[0], f"{call.name}/send{s}") for s in range(n)]
    arrived = [graph.clone(table[0], f"{call.name}/receive{s}") for s in range(1, n)]
    tiles = range(len(cut.tiles))
    cs = graph.add_compute_set(f"{call.name}/slice")
    for s in range(n):
        view = cut.like(sent[s])
        for i in tiles:
            ctx.add(cs, "slice", i, {"src": [row.view(i) for row in rows], "out": view.view(i)}, offset=s)
    call.prog.add(Execute(cs))
    call.prog.add(Sequence([CrossReplicaCopy(sent[s], arrived[s - 1], rings.shift_map(s), f"{call.name}/exchange")
                            for s in range(1, n)]))
    _store(ctx, [cut.like(source) for source in [sent[0]] + arrived], out_rows, call)
    return out


def _rows_alike(graph, dtype, n: int, row_shape, like, name: str):
    """A new [n, *row_shape] variable whose every row is spread over the tiles of
    ``like`` the same way (like's own mapping when it has row_shape's size, else an
    even split over like's tiles)."""
    table = graph.add_variable(dtype, (n, *row_shape), name)
    width = table[0].num_elements()
    mapping = graph.get_tile_mapping(like)
    if like.num_elements() == width:
        for q in range(n):
            row = table[q].flatten()
            for tile, intervals in enumerate(mapping):
                for a, b in intervals:
                    graph.set_tile_mapping(row[a:b], tile)
        return table
    tiles = [t for t, intervals in enumerate(mapping) if intervals] or [0]
    tiles = tiles[:max(1, width)]
    bounds = [width * k // len(tiles) for k in range(len(tiles) + 1)]
    for q in range(n):
        row = table[q].flatten()
        for k, tile in enumerate(tiles):
            if bounds[k + 1] > bounds[k]:
                graph.set_tile_mapping(row[bounds[k]:bounds[k + 1]], tile)
    return table


def _ring_tiles(ctx: RingContext, share, r: int, shares) -> RingContext:
    """The context of ring r of ``shares`` (named after its ring when there are several)."""
    return ctx.subset([i for i, _, _ in share], f"ring{r}" if len(shares) > 1 else "")


def _store(ctx: RingContext, sources, rows, call: _Call) -> None:
    """One compute set storing what came from s ranks back (``sources[s]``) in its row
    (each replica's own data at s = 0)."""
    n = len(sources)
    cs = ctx.graph.add_compute_set(f"{call.name}/store")
    for i in range(len(ctx.tiles)):
        ctx.add(cs, "gather", i, {"data": [source.view(i) for source in sources], "out": [row.view(i) for row in rows]},
                offsets=[-s % n for s in range(n)])
    call.prog.add(Execute(cs))


def _slice_rows(ctx: RingContext, rows, offset: int, call: _Call):
    """Each replica's row ``position + offset`` of a table cut like ``rows``."""
    out = ctx.graph.clone(rows[0].flat, f"{call.name}/result")
    view = rows[0].like(out)
    cs = ctx.graph.add_compute_set(f"{call.name}/slice")
    for i in range(len(ctx.tiles)):
        ctx.add(cs, "slice", i, {"src": [row.view(i) for row in rows], "out": view.view(i)}, offset=offset)
    call.prog.add(Execute(cs))
    return out
