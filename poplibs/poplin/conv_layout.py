"""Where a planned convolution's pieces live: the per-tile boxes a Partition cuts a
convolution into (conv groups, batch, output field, kernel, out-channels, in-channels),
which tile does each box, and tensors (input, weights, output, partials) laid out so that
each tile's part is contiguous in its own memory, channels innermost, as the vertices read
them.

Block sizes follow Partition's rule (a split of s over n grains gives each part ceil(n/s)
grains; serial splits first, as mat_mul_layout does). The tile of box (group part gi, batch
part bi, field part fi, out-channel part ni, kernel part kp, in-channel part ci) is
``start_tile + ((((gi * bs + bi) * F + fi) * ns + ni) * KP + kp) * cs + ci``: the kernel and
in-channel parts of one output box, whose partials are summed, are neighbours.

Created tensors are spread over the tiles that read them (mat_mul_layout's rule): an input
block (the raw input field cut evenly as the output field is) over the tiles of its
out-channel and kernel parts, a weights block over the tiles of its batch and field parts.
"""
import math
from dataclasses import dataclass
from typing import Tuple

from ..poputil import PoplibsError
from .mat_mul_layout import _blocked, _block, _product


@dataclass(frozen=True)
class ConvBlocking:
    """The boxes of one planned convolution (sizes of the canonical problem)."""
    groups: int
    batch: int
    out_field: Tuple[int, ...]
    kernel: Tuple[int, ...]
    in_chans: int
    out_chans: int
    gs: int
    bs: int
    fs: Tuple[int, ...]
    kps: Tuple[int, ...]
    ns: int
    n_serial: int
    cs: int
    c_serial: int
    g_t: int
    b_t: int
    f_t: Tuple[int, ...]
    k_t: Tuple[int, ...]
    n_t: int
    c_t: int
    start_tile: int
    num_tiles: int

    @staticmethod
    def of(plan, params, num_tiles: int) -> "ConvBlocking":
        p = plan.partition
        out_field, kernel = params.output_field_shape(), params.kernel_shape
        rank = len(out_field)
        f_s = tuple(p.field_split) or (1,) * rank
        k_s = tuple(p.kernel_split) or (1,) * rank
        if len(f_s) != rank or len(k_s) != rank:
            raise PoplibsError(f"poplin: the plan's field split {f_s} and kernel split {k_s} need one entry per field "
                               f"dimension ({rank})")
        splits = (p.conv_group_split, p.batch_split, p.in_chan_split.parallel, p.in_chan_split.serial,
                  p.out_chan_split.parallel, p.out_chan_split.serial) + f_s + k_s
        if any(int(s) < 1 for s in splits):
            raise PoplibsError(f"poplin: every split of the plan must be >= 1, found {p}")
        if p.total_parallel_split() > num_tiles:
            raise PoplibsError(f"poplin: the plan splits the work over {p.total_parallel_split()} tiles but the "
                               f"target has {num_tiles}")
        c_grain, n_grain = max(1, plan.in_chans_per_group), max(1, plan.partial_chans_per_group)
        cin, cout = params.input_channels_per_group, params.output_channels_per_group
        return ConvBlocking(
            params.num_conv_groups, params.batch_size, tuple(out_field), tuple(kernel), cin, cout,
            p.conv_group_split, p.batch_split, f_s, k_s, p.out_chan_split.parallel, p.out_chan_split.serial,
            p.in_chan_split.parallel, p.in_chan_split.serial,
            max(1, _block(params.num_conv_groups, max(1, p.conv_group_grain_size), 1, p.conv_group_split)),
            max(1, _block(params.batch_size, 1, 1, p.batch_split)),
            tuple(max(1, _block(n, 1, 1, s)) for n, s in zip(out_field, f_s)),
            tuple(max(1, _block(n, 1, 1, s)) for n, s in zip(kernel, k_s)),
            max(1, _block(cout, n_grain, p.out_chan_split.serial, p.out_chan_split.parallel)),
            max(1, _block(cin, c_grain, p.in_chan_split.serial, p.in_chan_split.parallel)),
            plan.start_tile, num_tiles)

    @property
    def field_parts(self) -> int:
        return math.prod(self.fs)

    @property
    def kernel_parts(self) -> int:
        return math.prod(self.kps)

    @property
    def depth(self) -> int:
        """Partials summed into each output: kernel parts x in-channel parts."""
        return self.kernel_parts * self.cs

    def tile(self, gi: int, bi: int, fi: int, ni: int, kp: int = 0, ci: int = 0) -> int:
        index = ((((gi * self.bs + bi) * self.field_parts + fi) * self.ns + ni) * self.kernel_parts + kp) * self.cs + ci
        return (self.start_tile + index) % self.num_tiles

    # ranges of one part, clipped to the real extent (empty past the end)
    def g_range(self, gi):
        return min(gi * self.g_t, self.groups), min((gi + 1) * self.g_t, self.groups)

    def b_range(self, bi):
        return min(bi * self.b_t, self.batch), min((bi + 1) * self.b_t, self.batch)

    def f_ranges(self, fi):
        parts = _unflatten(fi, self.fs)
        return [(min(p * t, n), min((p + 1) * t, n)) for p, t, n in zip(parts, self.f_t, self.out_field)]

    def k_ranges(self, kp):
        parts = _unflatten(kp, self.kps)
        return [(min(p * t, n), min((p + 1) * t, n)) for p, t, n in zip(parts, self.k_t, self.kernel)]

    def n_range(self, serial, ni):
        begin = (serial * self.ns + ni) * self.n_t
        return min(begin, self.out_chans), min(begin + self.n_t, self.out_chans)

    def c_range(self, serial, ci):
        begin = (serial * self.cs + ci) * self.c_t
        return min(begin, self.in_chans), min(begin + self.c_t, self.in_chans)


def _unflatten(index: int, shape) -> Tuple[int, ...]:
    out = []
    for s in reversed(shape):
        index, i = divmod(index, s)
        out.append(i)
    return tuple(reversed(out))


def _flat(parts, shape) -> int:
    index = 0
    for p, s in zip(parts, shape):
        index = index * s + p
    return index


def _to_nchw(view, rank: int):
    """[G, B, *field, C] -> [B, G*C, *field] (a view)."""
    g, b = view.shape[0], view.shape[1]
    field = list(view.shape[2:2 + rank])
    c = view.shape[-1]
    return view.dim_shuffle([1, 0, rank + 2] + list(range(2, rank + 2))).reshape([b, g * c] + field)


def create_input(graph, dtype, blocks: ConvBlocking, input_field, name: str):
    """The input [B, G*Cin, *input_field]: blocks [g_t, b_t, *field block, c_t] (the input
    field cut as the output field is), each spread over its out-channel and kernel parts' tiles."""
    rank = len(input_field)
    in_t = tuple(max(1, -(-n // s)) for n, s in zip(input_field, blocks.fs))
    cparts = blocks.c_serial * blocks.cs

    def tile_of(gi, bi, *rest):
        fi, cp = _flat(rest[:rank], blocks.fs), rest[rank]
        return [blocks.tile(gi, bi, fi, ni, kp, cp % blocks.cs) for ni in range(blocks.ns)
                for kp in range(blocks.kernel_parts)]
    parts = (blocks.gs, blocks.bs) + blocks.fs + (cparts,)
    block = (blocks.g_t, blocks.b_t) + in_t + (blocks.c_t,)
    view, _ = _blocked(graph, dtype, name, parts, block, tile_of, _interleave(len(parts)),
                       (blocks.groups, blocks.batch) + tuple(input_field) + (blocks.in_chans,))
    return _to_nchw(view, rank)


def create_weights(graph, dtype, blocks: ConvBlocking, name: str):
    """The weights [G, Cout, Cin, *kernel]: blocks [g_t, *kernel block, c_t, n_t] (out-channels
    innermost, the vertices' order), each spread over its batch and field parts' tiles."""
    rank = len(blocks.kernel)
    cparts, nparts = blocks.c_serial * blocks.cs, blocks.n_serial * blocks.ns

    def tile_of(gi, *rest):
        kp, cp, np_ = _flat(rest[:rank], blocks.kps), rest[rank], rest[rank + 1]
        return [blocks.tile(gi, bi, fi, np_ % blocks.ns, kp, cp % blocks.cs) for bi in range(blocks.bs)
                for fi in range(blocks.field_parts)]
    parts = (blocks.gs,) + blocks.kps + (cparts, nparts)
    block = (blocks.g_t,) + blocks.k_t + (blocks.c_t, blocks.n_t)
    view, _ = _blocked(graph, dtype, name, parts, block, tile_of, _interleave(len(parts)),
                       (blocks.groups,) + blocks.kernel + (blocks.in_chans, blocks.out_chans))
    # [G, *K, Cin, Cout] -> [G, Cout, Cin, *K]
    return view.dim_shuffle([0, rank + 2, rank + 1] + list(range(1, rank + 1)))


def create_output(graph, dtype, blocks: ConvBlocking, name: str, grain: int = 1):
    """The output [B, G*Cout, *out_field]: blocks [g_t, b_t, *field block, n_t], each on the
    tile that computes it, or, with kernel or in-channel parts, shared in pieces of whole
    ``grain`` elements by the tiles holding its partials (reducing_parts), each piece where
    it is reduced (PopLibs' reduction output, ConvReduce.cpp, split over each tile group)."""
    rank = len(blocks.out_field)
    nparts = blocks.n_serial * blocks.ns
    parts = reducing_parts(blocks) or [(0, 0)]   # none: no in-channels, nothing to reduce

    def tile_of(gi, bi, *rest):
        fi, ni = _flat(rest[:rank], blocks.fs), rest[rank] % blocks.ns
        tiles = [blocks.tile(gi, bi, fi, ni, kp, ci) for kp, ci in parts]
        return tiles[0] if len(tiles) == 1 else tiles
    shape = (blocks.gs, blocks.bs) + blocks.fs + (nparts,)
    block = (blocks.g_t, blocks.b_t) + blocks.f_t + (blocks.n_t,)
    view, _ = _blocked(graph, dtype, name, shape, block, tile_of, _interleave(len(shape)),
                       (blocks.groups, blocks.batch) + blocks.out_field + (blocks.out_chans,), grain)
    return _to_nchw(view, rank)


def reducing_parts(blocks: ConvBlocking, serial: int = 0):
    """The (kernel part, in-channel part) pairs with work in in-channel serial step
    ``serial``, in tile order: the parts whose partials of each output box are reduced."""
    return [(kp, ci) for kp in range(blocks.kernel_parts) for ci in range(blocks.cs)
            if blocks.c_range(serial, ci)[0] < blocks.c_range(serial, ci)[1]
            and all(lo < hi for lo, hi in blocks.k_ranges(kp))]


def create_partials(graph, dtype, blocks: ConvBlocking, name: str):
    """One serial iteration's partials: [depth, gs, bs, F, ns, g_t, b_t, *f_t, n_t], each
    (depth, box) block contiguous on the tile that writes it."""
    var = graph.add_variable(dtype, (blocks.depth, blocks.gs, blocks.bs, blocks.field_parts, blocks.ns, blocks.g_t,
                                     blocks.b_t) + blocks.f_t + (blocks.n_t,), name)
    for d, gi, bi, fi, ni in _product((blocks.depth, blocks.gs, blocks.bs, blocks.field_parts, blocks.ns)):
        kp, ci = divmod(d, blocks.cs)
        graph.set_tile_mapping(var.index([d, gi, bi, fi, ni]), blocks.tile(gi, bi, fi, ni, kp, ci))
    return var


def _interleave(n: int):
    """The dim_shuffle of [parts..., block...] to [part0, block0, part1, block1, ...]."""
    return [i for d in range(n) for i in (d, n + d)]
