"""GCL's collectives across the IPUs of one replica (gcl::allReduceWithinReplica,
reduceScatterWithinReplica, allGatherWithinReplica): a tensor whose leading dimension
is the replica's IPU count holds one shard per IPU (shard i mapped on IPU i), and the
collectives combine the shards over a clockwise ring of the IPUs 0, 1, ..., k-1.

Every ring step is one ``Copy`` moving a chunk from each IPU to the next (k flows over
the IPU-Links at once, priced by the IPU-Link model), followed by one compute set of
popops element-wise vertices folding the received chunk into the receiver's own, on the
tiles that hold both. The fold order of each chunk is fixed: chunk j starts at IPU j+1
and ends at IPU j (indices mod k)::

    acc = x[j+1][j];  acc = x[j+2][j] op acc;  ...;  result[j] = x[j][j] op acc

so results never depend on timing or threads. A reduce-scatter is k-1 such steps, an
all-gather k-1 copy steps, an all-reduce the two (2(k-1) steps over the IPU-Links)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

import popsim
from popsim.program import Copy

from .. import popops
from ..poputil import PoplibsError
from ..poputil.checks import check_graph, check_name, check_prog, check_tensor, describe
from .collective_types import MOVE_TYPES, CollectiveOperator, check_operator
from .options import parse_options

__all__ = ["Chunk", "Chunks", "all_reduce_within_replica", "reduce_scatter_within_replica",
           "all_gather_within_replica"]

Op = CollectiveOperator

#: the popops in-place op folding a received chunk into the receiver's: acc = acc op x
_FOLD = {Op.ADD: popops.add_in_place, Op.MEAN: popops.add_in_place, Op.SQUARE_ADD: popops.add_in_place,
         Op.MUL: popops.mul_in_place, Op.MIN: popops.min_in_place, Op.MAX: popops.max_in_place,
         Op.LOGICAL_AND: popops.logical_and_in_place, Op.LOGICAL_OR: popops.logical_or_in_place}


@dataclass
class Chunk:
    """One IPU's part of a reduce-scatter's result (GCL's Chunk): ``tensor`` (a flat
    tensor on IPU ``index``), ``index`` (the IPU, and the chunk's place in the ring) and
    ``offset`` (its first element's place in the flattened shard)."""
    tensor: popsim.Tensor
    index: int
    offset: int


@dataclass
class Chunks:
    """A reduce-scatter's result (GCL's Chunks): ``original_input`` (the tensor of
    shards that was reduced) and ``chunks``, chunk i on IPU i."""
    original_input: popsim.Tensor
    chunks: List[Chunk] = field(default_factory=list)


# -- checks ---------------------------------------------------------------------------------


def _check_common(graph, prog, name, options, what: str) -> None:
    check_graph(graph, what)
    check_prog(prog, what)
    check_name(name, what)
    method = parse_options(options, what).method
    if method not in ("auto", "clockwise_ring"):
        raise popsim.InvalidOptionError(f"{what}: method must be auto or clockwise_ring (the IPUs of a replica form "
                                        f"one clockwise ring), found {method!r}")


def _ipu_tiles(graph):
    """(k, tiles per IPU) of the graph's target (one replica's)."""
    target = graph.target
    return int(target.num_ipus), int(target.tiles_per_ipu)


def _check_on_ipu(graph, t, shard, ipu: int, what: str, role: str) -> None:
    """Every element of ``shard`` is mapped on a tile of IPU ``ipu``."""
    _, per_ipu = _ipu_tiles(graph)
    lo, hi = ipu * per_ipu, (ipu + 1) * per_ipu
    mapping = graph.get_tile_mapping(shard, require_complete=False)
    mapped = 0
    for tile, intervals in enumerate(mapping):
        if not intervals:
            continue
        if not lo <= tile < hi:
            b, e = intervals[0]
            raise PoplibsError(f"{what}: {role} of {describe(t)} must be mapped on IPU {ipu} (tiles {lo}..{hi - 1}), "
                               f"found elements [{b}, {e}) on tile {tile} (IPU {tile // per_ipu}); map shard i of "
                               "the tensor on IPU i's tiles")
        mapped += sum(e - b for b, e in intervals)
    if mapped != shard.num_elements():
        raise PoplibsError(f"{what}: {role} of {describe(t)} must be mapped on IPU {ipu} (tiles {lo}..{hi - 1}), "
                           f"found {shard.num_elements() - mapped} of its {shard.num_elements()} elements unmapped")


def _check_shards(graph, t, what: str):
    """(k, n): ``t`` holds k shards of n elements, shard i on IPU i."""
    check_tensor(graph, t, what)
    k, _ = _ipu_tiles(graph)
    if t.rank < 1 or t.shape[0] != k:
        raise PoplibsError(f"{what}: {describe(t)} must have a leading dimension of {k} (one shard per IPU of "
                           f"the replica's {k} IPUs), found shape {tuple(t.shape)}")
    n = t.num_elements() // k
    if n == 0:
        raise PoplibsError(f"{what}: {describe(t)} has empty shards; each IPU's shard needs at least one element")
    for i in range(k):
        _check_on_ipu(graph, t, t[i], i, what, f"shard {i}")
    return k, n


def _last_tile(graph, flat) -> int:
    """The tile holding ``flat``'s last element."""
    last = flat.num_elements() - 1
    for tile, intervals in enumerate(graph.get_tile_mapping(flat)):
        if any(b <= last < e for b, e in intervals):
            return tile
    raise PoplibsError(f"the last element of '{flat.name}' is not mapped")  # checked before: cannot happen


# -- the ring ---------------------------------------------------------------------------------

def _padded(graph, src, k: int, c: int, name: str):
    """Per IPU r: src[r] flattened, followed by zero constants up to k * c elements
    (mapped on the tile of the shard's last element)."""
    n = src.num_elements() // k
    out = []
    for r in range(k):
        flat = src[r].flatten()
        if k * c > n:
            zeros = graph.add_constant(src.dtype, (k * c - n,), np.zeros(k * c - n, src.dtype.numpy),
                                       f"{name}/padding{r}")
            graph.set_tile_mapping(zeros, _last_tile(graph, flat))
            flat = popsim.concat([flat, zeros])
        out.append(flat)
    return out


def _reduce_scatter(graph, t, op: Op, prog, name: str):
    """Reduce the k shards of ``t`` over the ring: (k, c, accumulators), where
    ``accumulators[j]`` is a [k * c] variable on IPU j whose chunk j holds the result."""
    k, n = t.shape[0], t.num_elements() // t.shape[0]
    c = -(-n // k)
    src = t
    if op is Op.SQUARE_ADD:  # each shard's contribution is its square, on its own tiles
        src = popops.square(graph, t, prog, f"{name}/square")
    sources = _padded(graph, src, k, c, name)
    acc = [graph.clone(sources[r], f"{name}/acc{r}") for r in range(k)]

    def chunk(x, j):
        return x.slice(j * c, (j + 1) * c)

    if op is Op.LOCAL or k == 1:  # nothing to combine: each IPU keeps its own chunk
        prog.add(Copy(popsim.concat([chunk(sources[j], j) for j in range(k)]),
                      popsim.concat([chunk(acc[j], j) for j in range(k)])))
        return k, c, acc
    for s in range(1, k):
        # step s: chunk j moves from IPU j+s to IPU j+s+1, which folds in its own chunk j
        sent = [chunk((sources if s == 1 else acc)[(j + s) % k], j) for j in range(k)]
        received = popsim.concat([chunk(acc[(j + s + 1) % k], j) for j in range(k)])
        prog.add(Copy(popsim.concat(sent), received))
        own = popsim.concat([chunk(sources[(j + s + 1) % k], j) for j in range(k)])
        _FOLD[op](graph, received, own, prog, f"{name}/step{s}")
    if op is Op.MEAN:
        popops.div_in_place(graph, popsim.concat([chunk(acc[j], j) for j in range(k)]), k, prog, f"{name}/mean")
    return k, c, acc


def _all_gather(graph, pieces, out, prog) -> None:
    """Gather ``pieces[j]`` (c elements on IPU j, padding last) into every IPU's shard
    of ``out`` ([k, ...], shard r on IPU r) over the ring: step 1 also copies each piece
    into its own IPU's shard; step s copies piece j from IPU j+s-1 to IPU j+s."""
    k = out.shape[0]
    n = out.num_elements() // k
    c = pieces[0].num_elements()
    flat = [out[r].flatten() for r in range(k)]
    spans = [(j, j * c, min((j + 1) * c, n)) for j in range(k) if j * c < n]  # the chunks' real elements
    if not spans:
        return
    own_src = [pieces[j].flatten().slice(0, e - b) for j, b, e in spans]
    own_dst = [flat[j].slice(b, e) for j, b, e in spans]
    if k == 1:
        prog.add(Copy(popsim.concat(own_src), popsim.concat(own_dst)))
        return
    for s in range(1, k):
        src = [flat[(j + s - 1) % k].slice(b, e) for j, b, e in spans] if s > 1 else own_src
        dst = [flat[(j + s) % k].slice(b, e) for j, b, e in spans]
        if s == 1:
            src, dst = src + own_src, dst + own_dst
        prog.add(Copy(popsim.concat(src), popsim.concat(dst)))


# -- the collectives ----------------------------------------------------------------------------

def all_reduce_within_replica(graph, t, op, prog, name: str = "", options: Optional[dict] = None):
    """GCL's allReduceWithinReplica: ``t`` [k, ...] holds shard i on IPU i (k = the
    IPUs of the graph's target); returns a new tensor of t's shape and mapping whose
    shard i (on IPU i) is ``op`` over all k shards, element by element. A reduce-scatter
    then an all-gather over the ring of IPUs: 2(k-1) Copy steps over the IPU-Links."""
    what = "gcl.all_reduce_within_replica"
    _check_common(graph, prog, name, options, what)
    k, _ = _check_shards(graph, t, what)
    op = check_operator(op, t.dtype, f"{what} of {describe(t)}")
    name = name or f"{t.name}/allReduceWithinReplica"
    out = graph.clone(t, f"{name}/out")
    if op is Op.LOCAL or k == 1:  # each IPU's result is its own shard (or its square)
        if op is Op.SQUARE_ADD:
            popops.square_with_output(graph, t, out, prog, f"{name}/square")
        else:
            prog.add(Copy(t, out))
        return out
    k, c, acc = _reduce_scatter(graph, t, op, prog, name)
    _all_gather(graph, [acc[j].slice(j * c, (j + 1) * c) for j in range(k)], out, prog)
    return out


def reduce_scatter_within_replica(graph, t, op, prog, name: str = "", options: Optional[dict] = None) -> Chunks:
    """GCL's reduceScatterWithinReplica: ``op`` over the k shards of ``t`` (shard i on
    IPU i), scattered: IPU i gets chunk i of the flattened result, ceil(n / k) elements
    (the last chunks padded with zeros). k-1 Copy steps over the IPU-Links."""
    what = "gcl.reduce_scatter_within_replica"
    _check_common(graph, prog, name, options, what)
    _check_shards(graph, t, what)
    op = check_operator(op, t.dtype, f"{what} of {describe(t)}")
    name = name or f"{t.name}/reduceScatterWithinReplica"
    k, c, acc = _reduce_scatter(graph, t, op, prog, name)
    return Chunks(t, [Chunk(acc[j].slice(j * c, (j + 1) * c), j, j * c) for j in range(k)])


def _check_chunks(graph, chunks, what: str):
    """(original input, the chunks' tensors) of a reduce-scatter's Chunks, checked."""
    if not isinstance(chunks, Chunks):
        raise PoplibsError(f"{what}: expected the gcl Chunks that reduce_scatter_within_replica returns, found "
                           f"{type(chunks).__name__}")
    t = chunks.original_input
    if not isinstance(t, popsim.Tensor):
        raise PoplibsError(f"{what}: the Chunks' original_input must be the popsim.Tensor that was reduced, found "
                           f"{type(t).__name__}; pass the Chunks reduce_scatter_within_replica returned")
    check_tensor(graph, t, what, "original input")
    k, _ = _ipu_tiles(graph)
    if t.rank < 1 or t.shape[0] != k:
        raise PoplibsError(f"{what}: the Chunks' original input {describe(t)} must have a leading dimension of "
                           f"{k} (the replica's IPUs), found shape {tuple(t.shape)}")
    if t.dtype not in MOVE_TYPES:
        raise PoplibsError(f"{what}: the Chunks of {describe(t)} cannot be gathered: the collectives move "
                           f"{', '.join(x.name for x in MOVE_TYPES)}")
    n = t.num_elements() // k
    c = -(-n // k)
    parts = chunks.chunks if isinstance(chunks.chunks, (list, tuple)) else None
    if parts is None or len(parts) != k:
        found = f"{len(parts)} chunks" if parts is not None else type(chunks.chunks).__name__
        raise PoplibsError(f"{what}: the Chunks of {describe(t)} must hold {k} chunks (one per IPU), found {found}; "
                           "pass the Chunks reduce_scatter_within_replica returned")
    tensors = []
    for i, part in enumerate(parts):
        if not isinstance(part, Chunk) or not isinstance(part.tensor, popsim.Tensor):
            raise PoplibsError(f"{what}: chunk {i} of the Chunks of {describe(t)} must be a gcl Chunk holding a "
                               f"tensor, found {part!r}")
        check_tensor(graph, part.tensor, what, f"chunk {i}")
        if (part.index, part.offset) != (i, i * c):
            raise PoplibsError(f"{what}: chunk {i} of the Chunks of {describe(t)} must have index {i} and offset "
                               f"{i * c}, found index {part.index} and offset {part.offset}; the chunks come in "
                               "IPU order from reduce_scatter_within_replica")
        if part.tensor.dtype != t.dtype or part.tensor.num_elements() != c:
            raise PoplibsError(f"{what}: chunk {i} of the Chunks of {describe(t)} must be {t.dtype.name} with "
                               f"ceil({n} / {k}) = {c} elements, found {describe(part.tensor)}")
        _check_on_ipu(graph, part.tensor, part.tensor, i, what, f"chunk {i}")
        tensors.append(part.tensor)
    return t, tensors


def all_gather_within_replica(graph, chunks, prog, name: str = "", options: Optional[dict] = None):
    """GCL's allGatherWithinReplica: the inverse of reduce_scatter_within_replica.
    From ``chunks`` (chunk i on IPU i), returns a new tensor shaped like the chunks'
    original input, [k, *shard shape], whose shard i (on IPU i, mapped like the
    original's) holds every chunk in order, without the padding. k-1 Copy steps over
    the IPU-Links."""
    what = "gcl.all_gather_within_replica"
    _check_common(graph, prog, name, options, what)
    t, pieces = _check_chunks(graph, chunks, what)
    name = name or f"{t.name}/allGatherWithinReplica"
    out = graph.clone(t, f"{name}/out")
    _all_gather(graph, pieces, out, prog)
    return out

