"""Where a planned matmul's pieces live: the per-tile blocks a Partition cuts a matmul
C[G,M,N] = A[G,M,K] @ B[G,K,N] into (in the convolution's terms: conv groups G, batch M,
in-channels K, out-channels N, after swapOperands), which tile does each block, and tensors
laid out so that each tile's block is one contiguous run of its own memory.

Block sizes follow Partition's rule (a split of s over n grains gives each part ceil(n/s)
grains), serial splits first: out-channels are cut ``out_chan_split.serial`` ways, each cut
``out_chan_split.parallel`` ways; in-channels likewise. Grains: ``conv_group_grain_size``
groups, one batch element, ``in_chans_per_group`` in-channels, ``partial_chans_per_group``
out-channels. Every block of a dimension has the same size; the last ones may be partly
or wholly past the end: created tensors hold each block's real part, dense, as one
variable (so a clipped block is still one run of its tile's memory, and a vertex reading it
needs no on-tile rearrangement, which the planner does not cost).

The tile of block (group part gi, batch part mi, out-channel part ni, in-channel part ki)
counts from ``start_tile`` with the parts sharing the larger operand block innermost: ni
when A's blocks are the larger (``m_t >= n_t``), else mi. The engine runs tiles in order, so
the tiles reading one block run one after another while it is in the host's caches (the
model's cycles do not depend on which tile is which).
"""
import math
from dataclasses import dataclass

import popsim

from ..poputil import PoplibsError


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _block(size: int, grain: int, serial: int, parallel: int) -> int:
    """Elements per parallel block: ceil(ceil(grains / serial) / parallel) grains."""
    grains = _ceil(size, grain)
    return _ceil(_ceil(grains, serial), parallel) * grain


@dataclass(frozen=True)
class MatMulBlocking:
    """The blocks of one planned matmul (sizes after swapOperands)."""
    groups: int
    m: int
    k: int
    n: int
    gs: int
    ms: int
    ks: int        # in-channel parallel split
    k_serial: int
    ns: int        # out-channel parallel split
    n_serial: int
    g_t: int
    m_t: int
    k_t: int
    n_t: int
    start_tile: int
    num_tiles: int

    @staticmethod
    def of(plan, groups: int, m: int, k: int, n: int, num_tiles: int) -> "MatMulBlocking":
        p = plan.partition
        if any(s != 1 for s in tuple(p.field_split) + tuple(p.kernel_split)):
            raise PoplibsError(f"poplin: a matmul's field and kernel are {{1}}: the plan's field split "
                               f"{p.field_split} and kernel split {p.kernel_split} must be 1")
        splits = (p.conv_group_split, p.batch_split, p.in_chan_split.parallel, p.in_chan_split.serial,
                  p.out_chan_split.parallel, p.out_chan_split.serial)
        if any(int(s) < 1 for s in splits):
            raise PoplibsError(f"poplin: every split of the plan must be >= 1, found {p}")
        used = p.total_parallel_split()
        if used > num_tiles:
            raise PoplibsError(f"poplin: the plan splits the work over {used} tiles but the target has {num_tiles}")
        g_grain = max(1, p.conv_group_grain_size)
        k_grain, n_grain = max(1, plan.in_chans_per_group), max(1, plan.partial_chans_per_group)
        return MatMulBlocking(
            groups, m, k, n, p.conv_group_split, p.batch_split, p.in_chan_split.parallel, p.in_chan_split.serial,
            p.out_chan_split.parallel, p.out_chan_split.serial,
            max(1, _block(groups, g_grain, 1, p.conv_group_split)), max(1, _block(m, 1, 1, p.batch_split)),
            max(1, _block(k, k_grain, p.in_chan_split.serial, p.in_chan_split.parallel)),
            max(1, _block(n, n_grain, p.out_chan_split.serial, p.out_chan_split.parallel)),
            plan.start_tile, num_tiles)

    def tile(self, gi: int, mi: int, ni: int, ki: int) -> int:
        if self.m_t >= self.n_t:  # A's blocks are the larger: the ns tiles reading one are adjacent
            index = ((gi * self.ms + mi) * self.ks + ki) * self.ns + ni
        else:  # B's: the ms tiles reading one are adjacent
            index = ((gi * self.ns + ni) * self.ks + ki) * self.ms + mi
        return (self.start_tile + index) % self.num_tiles

    # ranges of one part, clipped to the real extent (empty past the end)
    def g_range(self, gi):
        return min(gi * self.g_t, self.groups), min((gi + 1) * self.g_t, self.groups)

    def m_range(self, mi):
        return min(mi * self.m_t, self.m), min((mi + 1) * self.m_t, self.m)

    def k_range(self, serial, ki):
        begin = (serial * self.ks + ki) * self.k_t
        return min(begin, self.k), min(begin + self.k_t, self.k)

    def n_range(self, serial, ni):
        begin = (serial * self.ns + ni) * self.n_t
        return min(begin, self.n), min(begin + self.n_t, self.n)

    @property
    def k_stride(self) -> int:
        """In-channels one in-channel serial iteration covers."""
        return self.ks * self.k_t

    @property
    def n_stride(self) -> int:
        return self.ns * self.n_t


def _blocked(graph, dtype, name, parts, block, tile_of, order, shape, grain: int = 1):
    """A tensor of ``shape`` cut into blocks (``parts[i]`` blocks of ``block[i]`` elements
    along dimension i, the last ones clipped to ``shape`` or empty), each block a variable
    of its clipped size mapped to ``tile_of(*part)``: a tile, or a list of tiles that share
    it in equal contiguous pieces (of whole ``grain`` elements). A clipped block is dense, so every tile's part of a
    block is one run of its memory (a vertex reading or writing it needs no rearranging).
    ``order`` (the interleaving of part and block dimensions) is the pairing i <-> i."""
    del order  # part i and block i always describe dimension i
    rank = len(shape)
    if math.prod(shape) == 0:   # nothing to cut: one empty variable
        return graph.add_variable(dtype, tuple(shape), name), None

    def extent(i, j):
        return max(0, min((j + 1) * block[i], shape[i]) - j * block[i])

    def build(prefix):
        i = len(prefix)
        if i == rank:
            sizes = [extent(d, j) for d, j in enumerate(prefix)]
            var = graph.add_variable(dtype, tuple(sizes), name)
            _map_block(graph, var.flatten(), tile_of(*prefix), grain)
            return var
        pieces = [build(prefix + (j,)) for j in range(parts[i]) if extent(i, j) > 0]
        return pieces[0] if len(pieces) == 1 else popsim.concat(pieces, i)
    return build(()), None


def split_bounds(size: int, parts: int, grain: int = 1):
    """``parts + 1`` bounds cutting ``size`` elements into ``parts`` pieces of whole grains
    (the last grain may be short), as even as grains allow: PopLibs' splitRegions, with
    which a reduction's output is shared by the tiles holding its partials."""
    grains = -(-size // grain)
    return [min(size, grains * j // parts * grain) for j in range(parts + 1)]


def _map_block(graph, flat, tiles, grain: int = 1) -> None:
    if isinstance(tiles, int):
        graph.set_tile_mapping(flat, tiles)
        return
    bounds = split_bounds(flat.num_elements(), len(tiles), grain)
    for j, tile in enumerate(tiles):  # spread over the tiles that read it
        lo, hi = bounds[j], bounds[j + 1]
        if hi > lo:
            graph.set_tile_mapping(flat.slice(lo, hi), tile)


def _product(parts):
    indices = [()]
    for p in parts:
        indices = [i + (j,) for i in indices for j in range(p)]
    return indices


def create_lhs(graph, dtype, b: MatMulBlocking, name: str):
    """A [G, M, K] laid out in blocks [g_t, m_t, k_t]: block (gi, mi, k part) spread over
    the ns tiles that read it, (gi, mi, every ni, ki), as PopLibs spreads a convolution's
    input over the tiles of its out-channel split: each tile then sends and receives about
    the same bytes, which is what the planner's exchange estimate assumes."""
    kparts = b.k_serial * b.ks

    def tile_of(gi, mi, kp):
        return [b.tile(gi, mi, ni, kp % b.ks) for ni in range(b.ns)]
    view, _ = _blocked(graph, dtype, name, (b.gs, b.ms, kparts), (b.g_t, b.m_t, b.k_t), tile_of,
                       [0, 3, 1, 4, 2, 5], (b.groups, b.m, b.k))
    return view


def create_rhs(graph, dtype, b: MatMulBlocking, name: str):
    """B [G, K, N] in blocks [g_t, k_t, n_t], each spread over the ms tiles that read it,
    (gi, every mi, n part, k part) (PopLibs spreads weights over the tiles of the batch split)."""
    kparts, nparts = b.k_serial * b.ks, b.n_serial * b.ns

    def tile_of(gi, kp, np_):
        return [b.tile(gi, mi, np_ % b.ns, kp % b.ks) for mi in range(b.ms)]
    view, _ = _blocked(graph, dtype, name, (b.gs, kparts, nparts), (b.g_t, b.k_t, b.n_t), tile_of,
                       [0, 3, 1, 4, 2, 5], (b.groups, b.k, b.n))
    return view


def create_output(graph, dtype, b: MatMulBlocking, name: str, grain: int = 1):
    """C [G, M, N] in blocks [g_t, m_t, n_t], each on the tile that computes it, or, with
    an in-channel split, shared in pieces of whole ``grain`` elements by the tiles that hold
    its partials, each piece where it is reduced (reduction_tiles; PopLibs' reduction output,
    ConvReduce.cpp, split over each tile group)."""
    nparts = b.n_serial * b.ns
    used = max(1, reduction_tiles(b))   # none: no in-channels, nothing to reduce

    def tile_of(gi, mi, np_):
        tiles = [b.tile(gi, mi, np_ % b.ns, ki) for ki in range(used)]
        return tiles[0] if len(tiles) == 1 else tiles
    view, _ = _blocked(graph, dtype, name, (b.gs, b.ms, nparts), (b.g_t, b.m_t, b.n_t), tile_of,
                       [0, 3, 1, 4, 2, 5], (b.groups, b.m, b.n), grain)
    return view


def reduction_tiles(b: MatMulBlocking, serial: int = 0) -> int:
    """The in-channel parts with work in in-channel serial step ``serial``: the tiles whose
    partials of each output block are reduced."""
    return -(-(min(b.k, (serial + 1) * b.k_stride) - serial * b.k_stride) // b.k_t)


def create_partials(graph, dtype, b: MatMulBlocking, name: str):
    """One serial iteration's partials: the variable [ks, gs, ms, ns, g_t, m_t, n_t] (each
    vertex writes its own block, contiguous on its tile) and its view [ks, G, M, ns * n_t]."""
    def tile_of(ki, gi, mi, ni):
        return b.tile(gi, mi, ni, ki)
    var = graph.add_variable(dtype, (b.ks, b.gs, b.ms, b.ns, b.g_t, b.m_t, b.n_t), name)
    for index in _product((b.ks, b.gs, b.ms, b.ns)):
        graph.set_tile_mapping(var.index(list(index)), tile_of(*index))
    view = var.dim_shuffle([0, 1, 4, 2, 5, 3, 6]).reshape((b.ks, b.gs * b.g_t, b.ms * b.m_t, b.ns * b.n_t))
    return var, view.slice([0, 0, 0, 0], [b.ks, b.groups, b.m, b.ns * b.n_t])


def plan_tiles_used(b: MatMulBlocking) -> int:
    return math.prod((b.gs, b.ms, b.ns, b.ks))
