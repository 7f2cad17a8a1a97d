"""Building a planned convolution: the executor between a Plan (plan.py) and the vertices,
for any ConvParams (PopLibs' Convolution.cpp convolution and ConvVertices.cpp).

1. Truncation and flips become views (conv_transforms.canonical_views). A matmul-shaped
   convolution (field and kernel {1}, nothing else) is the matmul it is: mat_mul_execute builds
   it (swapOperands included).
2. conv_layout cuts the convolution into per-tile boxes as the plan's Partition says. One
   serial step is built once (serial_loop.py: out-channel steps the outer Repeat,
   in-channel steps the inner, over temporaries holding the step's slices of input,
   weights and output, moved by dynamic slice / update at run time): one compute set with
   one vertex per tile with work, the vertex conv_methods gives for the plan's method: for
   AMP, ConvPartial1x1Out where the plan flattened a 1x1 convolution (kernel 1, no
   padding, stride or dilation), else ConvPartialnx1 with the tile's worklists; for HMAC or
   VMAC, ConvPartialHorizontalMac or ConvPartialVerticalMac with the same worklists
   (conv_worklists: padding, dilation and stride never materialised), each with its own
   fields. Each vertex reads its input window, its weights and writes its box of the
   output (or of the partials).
3. With kernel or in-channel parts, the parts' partials are reduced into the output step
   where they live (mat_mul_execute.reduce_partials), adding up over the in-channel serial
   steps into a step zeroed before their loop; with one part but partials of another type
   than the output, they are cast into it (popops' cast; the planner costs PopLibs' cast).
   The vertex is the one the plan's method names (conv_methods, amp_configs): a plan no
   vertex runs is an error, never run as another.
"""
import dataclasses
import math

from popsim import UNSIGNED_INT, concat, popops
from popsim.program import Execute, Sequence

from . import conv_methods, mat_mul_execute
from .conv_candidates import is_mat_mul_shaped
from .conv_layout import ConvBlocking, create_partials, reducing_parts
from .conv_transforms import canonical_views, dim_maps
from .conv_worklists import tile_work
from .serial_loop import SerialDim, SerialLoop


def grouped_views(x, w, out, params):
    """x [B, G*Cin, *F] -> [G, B, *F, Cin]; w [G, Cout, Cin, *K] -> [G, *K, Cin, Cout];
    out [B, G*Cout, *F'] -> [G, B, *F', Cout]: channels innermost, as the vertices read them."""
    rank = params.num_field_dims
    g, b = params.num_conv_groups, params.batch_size
    field = list(range(3, 3 + rank))
    xg = x.reshape([b, g, params.input_channels_per_group] + list(x.shape[2:])).dim_shuffle([1, 0] + field + [2])
    wg = w.dim_shuffle([0] + field + [2, 1])
    og = out.reshape([b, g, params.output_channels_per_group] + list(out.shape[2:])).dim_shuffle([1, 0] + field + [2])
    return xg, wg, og


def execute_convolution(graph, x, w, out, params, plan, prog, name: str) -> None:
    """Append to ``prog`` the programs computing ``out = conv(x, w)`` under ``plan``: x
    [B, G*Cin, *field], w [G, Cout, Cin, *kernel], out [B, G*Cout, *out_field]."""
    canon, x, w = canonical_views(params, x, w)
    if out.num_elements() == 0:
        return
    if (any(n == 0 for n in canon.input_field_shape + canon.kernel_shape)
            or canon.input_channels_per_group == 0):   # an empty sum everywhere
        popops.zero(graph, out, prog, f"{name}/Zero")
        return
    what = f"poplin.convolution '{name}'"
    method = conv_methods.method_of(plan.method, what)
    conv_vertex = method.executed_vertex(plan, canon)
    if conv_vertex.mat_mul and is_mat_mul_shaped(canon):
        g, b = canon.num_conv_groups, canon.batch_size
        cin, cout = canon.input_channels_per_group, canon.output_channels_per_group
        a = x.reshape([b, g, cin]).dim_shuffle([1, 0, 2])
        bm = w.reshape([g, cout, cin]).dim_shuffle([0, 2, 1])
        mat_mul_execute.execute_mat_mul(graph, a, bm, out.reshape([b, g, cout]).dim_shuffle([1, 0, 2]), plan, prog,
                                        name)
        return
    blocks = ConvBlocking.of(plan, canon, graph.get_target().num_tiles)
    in_type = x.dtype
    partials_type = mat_mul_execute.partials_type_of(plan, in_type)
    vertex = conv_vertex.vertex_type(graph, plan, in_type, partials_type, what)
    # the vertex's own fields (checked against the plan once), None for the flattened form
    fields = None if conv_vertex.flattens else conv_vertex.fields(graph.get_target(), plan)
    xg, wg, og = grouped_views(x, w, out, canon)
    direct = blocks.depth == 1 and blocks.c_serial == 1 and partials_type == out.dtype
    rank = canon.num_field_dims
    n_split = SerialDim(blocks.out_chans, blocks.ns * blocks.n_t)
    c_split = SerialDim(blocks.in_chans, blocks.cs * blocks.c_t)
    # one serial step's boxes: the body's compute sets, built once, work on step temporaries
    step = dataclasses.replace(blocks, out_chans=n_split.step_extent, n_serial=1, in_chans=c_split.step_extent,
                               c_serial=1)
    partials = None if direct else create_partials(graph, partials_type, step, f"{name}/partials")
    loop = SerialLoop(graph, name, blocks.tile(0, 0, 0, 0))
    n_count = loop.counter("outChanStep") if n_split.steps > 1 else None
    c_count = loop.counter("inChanStep") if c_split.steps > 1 else None
    x_steps = loop.stepped(xg, [(2 + rank, c_split, c_count)], what="in")
    w_steps = loop.stepped(wg, [(1 + rank, c_split, c_count), (2 + rank, n_split, n_count)], what="weights")
    out_steps = loop.stepped(og, [(2 + rank, n_split, n_count)], writable=True, what="out")

    outer = Sequence()
    out_step = loop.step_like(out_steps, "outStep")
    if c_split.steps > 1:  # the in-channel steps add up from zero
        popops.zero(graph, out_step, outer, f"{name}/ZeroAcc")
    inner = Sequence()
    x_step = loop.slice(x_steps, inner, "inSlice")
    w_step = loop.slice(w_steps, inner, "weightsSlice")
    builder = _TileBuilder(graph, step, dim_maps(canon), vertex, fields, x_step, w_step, out_step, partials)
    cs = graph.add_compute_set(f"{name}/Conv")
    active = builder.add_vertices(cs, 0, 0)
    inner.add(Execute(cs))
    one_part = not direct and blocks.depth == 1
    if one_part and (c_split.steps == 1 or partials_type == out.dtype):
        items = builder.reduce_items(0, active)
        partials_flat = concat([parts[0] for _, parts, _ in items])
        out_flat = concat([block for block, _, _ in items])
        if c_split.steps == 1:   # only the output cast (PopLibs')
            popops.cast_with_output(graph, partials_flat, out_flat, inner, f"{name}/Cast")
        else:   # in-channel steps add up in place (PopLibs' addInPlace)
            popops.add_in_place(graph, out_flat, partials_flat, inner, f"{name}/AddPartials")
    elif not direct:
        params = popops.ReduceParams(popops.Operation.ADD, update=c_split.steps > 1)
        mat_mul_execute.reduce_partials(graph, builder.reduce_items(0, active), partials_type, out.dtype, params,
                                        inner, f"{name}/Reduce", mat_mul_execute.output_grain(graph, plan, out.dtype))
    loop.repeat(outer, c_split, c_count, inner, "inChanLoop")
    loop.update(out_steps, out_step, outer, "outUpdate")
    loop.repeat(prog, n_split, n_count, outer, "outChanLoop")


class _TileBuilder:
    """The vertices of one convolution's compute sets (one per tile with work)."""

    def __init__(self, graph, blocks, dims, vertex, fields, xg, wg, og, partials):
        self.graph, self.b, self.dims, self.vertex = graph, blocks, dims, vertex
        # fields(batch, kernel ranges): the vertex's own fields of a tile beyond its
        # worklists (conv_methods.ConvVertex.fields); None: the flattened 1x1 form, no worklists
        self.fields = fields
        self.xg, self.wg, self.og, self.partials = xg, wg, og, partials
        # each conv group's input and weights, indexed once: every vertex slices its box of them
        self.x_groups = [xg[g] for g in range(xg.shape[0])]
        self.w_groups = [wg[g] for g in range(wg.shape[0])]
        self.in_field = xg.shape[2:-1]
        self._work = {}   # tile_work by (batch, field ranges, kernel ranges): read only, never changed

    def boxes(self, ns):
        """(gi, bi, fi, ni, group range, batch range, field ranges, out-chan range) with work."""
        b = self.b
        for gi in range(b.gs):
            g0, g1 = b.g_range(gi)
            for bi in range(b.bs):
                b0, b1 = b.b_range(bi)
                for fi in range(b.field_parts):
                    fr = b.f_ranges(fi)
                    for ni in range(b.ns):
                        n0, n1 = b.n_range(ns, ni)
                        if g0 == g1 or b0 == b1 or n0 == n1 or any(lo == hi for lo, hi in fr):
                            continue
                        yield gi, bi, fi, ni, (g0, g1), (b0, b1), fr, (n0, n1)

    def _out_block(self, box, kp, ci):
        """The [g, b, *f, n] box of the output, or of part (kp, ci)'s partials."""
        gi, bi, fi, ni, (g0, g1), (b0, b1), fr, (n0, n1) = box
        if self.partials is None:
            return self.og.slice([g0, b0] + [lo for lo, _ in fr] + [n0], [g1, b1] + [hi for _, hi in fr] + [n1])
        block = self.partials.index([kp * self.b.cs + ci, gi, bi, fi, ni])
        return block.slice([0] * block.rank, [g1 - g0, b1 - b0] + [hi - lo for lo, hi in fr] + [n1 - n0])

    def add_vertices(self, cs, ns, cser):
        """One vertex per tile of serial iteration (ns, cser); returns the (kernel part,
        in-channel part) pairs with work."""
        b = self.b
        active = reducing_parts(b, cser)
        for box in self.boxes(ns):
            for kp, ci in active:
                self._add(cs, box, kp, ci, b.c_range(cser, ci))
        return active

    def _add(self, cs, box, kp, ci, c_range):
        gi, bi, fi, ni, (g0, g1), (b0, b1), fr, (n0, n1) = box
        c0, c1 = c_range
        kr = self.b.k_ranges(kp)
        out_block = self._out_block(box, kp, ci)
        # Each group's box as it is (a strided view, not flattened): a vector sub-edge takes any rank, in
        # row-major order, and lowering reads a strided view by its geometry where a flattened box would be
        # an id view, its element ids built here and searched there one by one.
        outs = [out_block[g] for g in range(g1 - g0)]
        tile = self.b.tile(gi, bi, fi, ni, kp, ci)
        if self.fields is None:
            window = fr
            fields = {}
        else:
            key = (b1 - b0, tuple(map(tuple, fr)), tuple(map(tuple, kr)))
            work = self._work.get(key)
            if work is None:   # the same box of another out- or in-channel part: the same worklists
                work = self._work[key] = tile_work(self.dims, b1 - b0, fr, kr)
            window = [(lo, hi) if hi > lo else (0, 1) for lo, hi in work.window]   # no real input: a token
            worklists = self.graph.add_constant(UNSIGNED_INT, (len(work.worklists),), work.worklists,
                                                f"worklists_{tile}")
            self.graph.set_tile_mapping(worklists, tile)
            fields = {"worklists": worklists, "zerosInfo": outs[0].num_elements(), "inStride": work.in_stride,
                      "outStride": work.out_stride, "kernelOuterSizeM1": math.prod(hi - lo for lo, hi in kr[:-1]) - 1,
                      "kernelInnerElementsM1": kr[-1][1] - kr[-1][0] - 1, "outFieldRowSize": fr[-1][1] - fr[-1][0]}
            fields.update(self.fields(b1 - b0, kr))
        ins = [self.x_groups[g].slice([b0] + [lo for lo, _ in window] + [c0], [b1] + [hi for _, hi in window] + [c1])
               for g in range(g0, g1)]
        weights = [self.w_groups[g].slice([lo for lo, _ in kr] + [c0, n0], [hi for _, hi in kr] + [c1, n1])
                   for g in range(g0, g1)]
        fields.update({"in": ins, "weights": weights, "out": outs, "numConvGroupsM1": g1 - g0 - 1,
                       "numOutGroupsM1": 0, "numInGroups": 1, "inChansPerGroup": c1 - c0,
                       "outChansPerGroup": n1 - n0})
        v = self.graph.add_vertex(cs, self.vertex, fields)
        self.graph.set_tile_mapping(v, tile)

    def reduce_items(self, ns, active):
        items = []
        for box in self.boxes(ns):
            gi, bi, fi, ni = box[:4]
            items.append((self.og.slice(*_bounds(box)).flatten(),
                          [self._out_block(box, kp, ci).flatten() for kp, ci in active],
                          [self.b.tile(gi, bi, fi, ni, kp, ci) for kp, ci in active]))
        return items


def _bounds(box):
    _, _, _, _, (g0, g1), (b0, b1), fr, (n0, n1) = box
    return [g0, b0] + [lo for lo, _ in fr] + [n0], [g1, b1] + [hi for _, hi in fr] + [n1]


__all__ = ["execute_convolution", "grouped_views"]
