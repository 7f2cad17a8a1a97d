"""Building a planned matmul: the executor between a Plan (plan.py) and the vertices.

The convolution is a matmul's (field and kernel {1}: conv groups G, batch M, in-channels
K, out-channels N; ConvParams.for_mat_mul). mat_mul_layout.py cuts it into per-tile blocks
as the plan's Partition says. Then one serial step is built once (serial_loop.py: out-channel
steps the outer Repeat, in-channel steps the inner, each over temporaries that hold the
step's slices of A, B and the output, moved by dynamic slice / update at run time):

1. one compute set of ConvPartial1x1Out vertices, one per tile with work, each reading its
   blocks of A and B (implicit exchange brings what lives elsewhere) and writing its block
   of partials (in the plan's partials type), contiguous in its own tile's memory;
2. the partials of the in-channel parallel split reduced across tiles into the output step
   (partials type -> output type; ``update`` for in-channel serial steps, which add up
   into a step zeroed before their loop, and for mat_mul_acc, whose scale is the
   reduction's and whose output step is sliced from the output).

A plan with no in-channel split, partials of the output's type and nothing to accumulate
writes the output directly (no partials, no reduction); with partials of another type it
casts them into the output (popops' cast, PopLibs' output cast). The vertex is the one
the plan's method names (conv_methods): a plan no vertex runs is an error. swapOperands computes
C' = B'A' (each operand and the output transposed, as views), the partition applying to
the swapped problem.
"""
import dataclasses

import numpy as np

import popsim
from popsim import FLOAT, HALF, popops
from popsim.program import Execute, Sequence

from ..poputil import PoplibsError
from ..popops import reduce_vertices
from . import conv_methods, reduce_add
from .mat_mul_layout import MatMulBlocking, create_partials, reduction_tiles, split_bounds
from .serial_loop import SerialDim, SerialLoop


def _swap(t):
    return t.dim_shuffle([0, 2, 1])


def partials_type_of(plan, in_type):
    """The vertices' accumulator type: the plan's partials type (FLOAT when a hand-made plan
    leaves it unset). Float inputs accumulate in float: PopLibs has no float-input,
    half-partials AMP vertex, and neither does the planner choose one."""
    wanted = plan.partials_type or FLOAT
    if in_type == FLOAT and wanted != FLOAT:
        raise PoplibsError(f"poplin: the plan's partials type is {wanted.name} but the inputs are FLOAT; float "
                           "inputs accumulate in FLOAT (plan with poplin.get_plan)")
    return wanted


def vertex_type_for(graph, plan, in_type, partials_type) -> str:
    """The ConvPartial1x1Out the plan's method names, its codelets added to ``graph``; raises
    when it has none (the executor runs what the plan costed or nothing: conv_methods)."""
    return conv_methods.CONV_PARTIAL_1X1_OUT.vertex_type(graph, plan, in_type, partials_type, "poplin")


def blocking_for(graph, plan, groups: int, m: int, k: int, n: int) -> MatMulBlocking:
    """The blocks of a [G,M,K] @ [G,K,N] matmul under ``plan`` (sizes before swapOperands)."""
    if plan.transforms[0].swap_operands:
        m, n = n, m
    return MatMulBlocking.of(plan, groups, m, k, n, graph.get_target().num_tiles)


def execute_mat_mul(graph, a, b, out, plan, prog, name: str, scale=None) -> None:
    """Append to ``prog`` the programs computing ``out = a @ b`` (``scale`` None) or
    ``out += scale * (a @ b)`` for a [G,M,K], b [G,K,N], out [G,M,N] under ``plan``."""
    groups, m, k = a.shape
    n = b.shape[2]
    if plan.transforms[0].swap_operands:
        a, b, out = _swap(b), _swap(a), _swap(out)
        m, n = n, m
    if groups == 0 or m == 0 or n == 0:
        return
    if k == 0:  # an empty sum: zero, or nothing to add
        if scale is None:
            popops.zero(graph, out, prog, f"{name}/Zero")
        return
    blocks = MatMulBlocking.of(plan, groups, m, k, n, graph.get_target().num_tiles)
    in_type = a.dtype
    partials_type = partials_type_of(plan, in_type)
    vertex = vertex_type_for(graph, plan, in_type, partials_type)
    direct = scale is None and blocks.ks == 1 and blocks.k_serial == 1 and partials_type == out.dtype
    n_split, k_split = SerialDim(n, blocks.n_stride), SerialDim(k, blocks.k_stride)
    # one serial step's blocks: the body's compute sets, built once, work on step temporaries
    step = dataclasses.replace(blocks, n=n_split.step_extent, n_serial=1, k=k_split.step_extent, k_serial=1)
    # no in-channel parts and nothing to add up: the partials are only cast to the output
    # type (PopLibs' output cast; the planner costs it as one)
    cast_only = not direct and scale is None and blocks.ks == 1 and blocks.k_serial == 1
    # in-channel serial steps with no parallel parts and partials of the output's type: each
    # step's partials added in place to the accumulator (PopLibs' addInPlace)
    add_only = scale is None and blocks.ks == 1 and blocks.k_serial > 1 and partials_type == out.dtype
    partials_var = None
    if not direct:  # one temporary, reused by every serial iteration
        partials_var, _ = create_partials(graph, partials_type, step, f"{name}/partials")
    loop = SerialLoop(graph, name, blocks.tile(0, 0, 0, 0))
    n_count = loop.counter("outChanStep") if n_split.steps > 1 else None
    k_count = loop.counter("inChanStep") if k_split.steps > 1 else None
    # stepped in block order: each tile's part of a step is one region for the slice vertices
    g_b, m_b, k_b, n_b = (blocks.gs, blocks.g_t), (blocks.ms, blocks.m_t), (blocks.ks, blocks.k_t), \
        (blocks.ns, blocks.n_t)
    a_steps = loop.stepped(a, [(2, k_split, k_count)], what="a", blocks=(g_b, m_b, k_b))
    b_steps = loop.stepped(b, [(1, k_split, k_count), (2, n_split, n_count)], what="b", blocks=(g_b, k_b, n_b))
    out_steps = loop.stepped(out, [(2, n_split, n_count)], writable=True, what="out", blocks=(g_b, m_b, n_b))
    accumulate = scale is not None or k_split.steps > 1  # every reduction adds to the output step
    params = popops.ReduceParams(popops.Operation.ADD, update=accumulate, scale=1.0 if scale is None else scale)

    outer = Sequence()
    if scale is not None:  # mat_mul_acc adds to the output's current values
        out_held = loop.slice(out_steps, outer, "outSlice")
    else:
        out_held = loop.step_like(out_steps, "outStep")
        if k_split.steps > 1:  # the in-channel steps add up from zero
            popops.zero(graph, out_held, outer, f"{name}/ZeroAcc")
    out_step = out_steps.logical(out_held)
    inner = Sequence()
    a_step = a_steps.logical(loop.slice(a_steps, inner, "aSlice"))
    b_step = b_steps.logical(loop.slice(b_steps, inner, "bSlice"))
    cs = graph.add_compute_set(f"{name}/Conv")
    _add_vertices(graph, cs, vertex, step, a_step, b_step, out_step, partials_var, 0, 0)
    inner.add(Execute(cs))
    if cast_only:
        popops.cast_with_output(graph, *_block_pairs(step, partials_var, out_step), inner, f"{name}/Cast")
    elif add_only:
        dst, src = reversed(_block_pairs(step, partials_var, out_step))
        popops.add_in_place(graph, dst, src, inner, f"{name}/AddPartials")
    elif not direct:
        _reduce_partials(graph, step, partials_var, out_step, 0, 0, params, inner, f"{name}/Reduce",
                         output_grain(graph, plan, out.dtype))
    loop.repeat(outer, k_split, k_count, inner, "inChanLoop")
    loop.update(out_steps, out_held, outer, "outUpdate")
    loop.repeat(prog, n_split, n_count, outer, "outChanLoop")


def _partials_block(partials_var, ki, gi, mi, ni, shape):
    """The [g, m, n] partials of block (ki, gi, mi, ni): the first elements of the block's
    space, dense (a clipped block stays one contiguous run on its tile)."""
    size = shape[0] * shape[1] * shape[2]
    return partials_var.index([ki, gi, mi, ni]).flatten().slice(0, size).reshape(list(shape))


def _block_pairs(blocks, partials_var, out):
    """(partials, output): each tile's block of partials and of the output, block after
    block, so that a tile's part of either is one region (popops' 1D vertices)."""
    src, dst = [], []
    for gi in range(blocks.gs):
        g0, g1 = blocks.g_range(gi)
        for mi in range(blocks.ms):
            m0, m1 = blocks.m_range(mi)
            for ni in range(blocks.ns):
                n0, n1 = blocks.n_range(0, ni)
                if g0 == g1 or m0 == m1 or n0 == n1:
                    continue
                src.append(_partials_block(partials_var, 0, gi, mi, ni, (g1 - g0, m1 - m0, n1 - n0)).flatten())
                dst.append(out.slice([g0, m0, n0], [g1, m1, n1]).flatten())
    return popsim.concat(src), popsim.concat(dst)


def _reduce_partials(graph, blocks, partials_var, out, ns, ks, params, prog, name, grain) -> None:
    """The in-channel parts' partials of serial iteration (ns, ks) reduced into the output
    (reduce_partials), each output block by the tiles that hold its parts."""
    used = reduction_tiles(blocks, ks)
    items = []
    for gi in range(blocks.gs):
        g0, g1 = blocks.g_range(gi)
        for mi in range(blocks.ms):
            m0, m1 = blocks.m_range(mi)
            for ni in range(blocks.ns):
                n0, n1 = blocks.n_range(ns, ni)
                if g0 == g1 or m0 == m1 or n0 == n1:
                    continue
                block_out = out.slice([g0, m0, n0], [g1, m1, n1]).flatten()
                parts = [_partials_block(partials_var, ki, gi, mi, ni, (g1 - g0, m1 - m0, n1 - n0)).flatten()
                         for ki in range(used)]
                items.append((block_out, parts, [blocks.tile(gi, mi, ni, ki) for ki in range(used)]))
    reduce_partials(graph, items, partials_var.dtype, out.dtype, params, prog, name, grain)


def output_grain(graph, plan, out_type) -> int:
    """The elements a reduction's output is shared out in (PopLibs' partialGroupedReduce):
    the plan's partial channels per group, at least and in whole multiples of the output
    type's vector width."""
    width = graph.get_target().vector_width(out_type)
    return -(-max(int(plan.partial_chans_per_group or 1), width) // width) * width


def reduce_partials(graph, items, partials_type, out_type, params, prog, name, grain: int = 1) -> None:
    """Partials reduced into the output where they live, as PopLibs' convolution reduction
    (ConvReduce.cpp) does. ``items``: (output block, its parts, the tile of each part), all
    flat and of one size; each block is cut into one piece of whole ``grain`` elements per
    part's tile (split_bounds, as create_output maps it, so each piece is reduced on the
    tile that holds it), and that tile reduces its piece of every part with PopLibs'
    poplin::ReduceAdd (a MultiVertex), or, to update or scale the output (mat_mul_acc, later
    in-channel serial steps), with popops' reduce vertex, one per worker's piece: one compute
    set of a few vertices per tile."""
    workers = graph.get_target().num_worker_contexts
    scaled = params.use_scale
    plain = not scaled and not params.update  # PopLibs' own vertex; else popops' with update and scale
    if plain:
        reduce_add.ensure_codelets(graph)
        vertex = reduce_add.reduce_add_name(out_type, partials_type)
        workers = 1  # a MultiVertex: its workers split the chunk themselves
    else:
        vertex = reduce_vertices.ensure_vertex(graph, popops.Operation.ADD, partials_type, out_type, params.update,
                                               scaled)
    scale = None
    if scaled and items:
        scale = params.scale.reshape([]) if isinstance(params.scale, popsim.Tensor) else \
            graph.add_constant(FLOAT, (), float(params.scale), f"{name}/scale")
        if not isinstance(params.scale, popsim.Tensor):
            graph.set_tile_mapping(scale, items[0][2][0])
    cs = graph.add_compute_set(name)
    for block_out, parts, tiles in items:
        used = len(parts)
        bounds = split_bounds(block_out.num_elements(), used, grain)
        chunks = []   # (tile, lo, hi) of each vertex
        for t in range(used):
            first, last = bounds[t], bounds[t + 1]
            for w in range(workers):
                lo, hi = first + (last - first) * w // workers, first + (last - first) * (w + 1) // workers
                if lo < hi:
                    chunks.append((tiles[t], lo, hi))
        # every vertex's chunk of the block and of each part, sliced in one call each (strided
        # views where a chunk's elements step evenly: Tensor.slices)
        pairs = [(lo, hi) for _, lo, hi in chunks]
        outs = block_out.slices(pairs)
        part_chunks = [part.slices(pairs) for part in parts]
        for k, (tile, lo, hi) in enumerate(chunks):
            chunk = [pieces[k] for pieces in part_chunks]
            if plain:
                v = graph.add_vertex(cs, vertex, {"out": outs[k], "partials": chunk, "numPartials": used,
                                                  "numElems": hi - lo})
            else:
                fields = {"out": [outs[k]], "partials": chunk}
                if scaled:
                    fields["k"] = scale
                v = graph.add_vertex(cs, vertex, fields)
                graph.set_initial_value(v["numPartials"], np.array([used], dtype=np.int32))
            graph.set_tile_mapping(v, tile)
    prog.add(Execute(cs))


def _add_vertices(graph, cs, vertex, blocks, a, b, out, partials_var, ns, ks) -> None:
    """One vertex per tile with work in serial iteration (ns, ks)."""
    for gi in range(blocks.gs):
        g0, g1 = blocks.g_range(gi)
        if g0 == g1:
            continue
        for mi in range(blocks.ms):
            m0, m1 = blocks.m_range(mi)
            if m0 == m1:
                continue
            for ni in range(blocks.ns):
                n0, n1 = blocks.n_range(ns, ni)
                if n0 == n1:
                    continue
                for ki in range(blocks.ks):
                    k0, k1 = blocks.k_range(ks, ki)
                    if k0 == k1:
                        continue
                    if partials_var is None:
                        outs = [out[g].slice([m0, n0], [m1, n1]).flatten() for g in range(g0, g1)]
                    else:
                        block = _partials_block(partials_var, ki, gi, mi, ni, (g1 - g0, m1 - m0, n1 - n0))
                        outs = [block[g].flatten() for g in range(g1 - g0)]
                    v = graph.add_vertex(cs, vertex, {
                        "in": [a[g].slice([m0, k0], [m1, k1]).flatten() for g in range(g0, g1)],
                        "weights": [b[g].slice([k0, n0], [k1, n1]).flatten() for g in range(g0, g1)],
                        "out": outs,
                        "numConvGroupsM1": g1 - g0 - 1, "numOutGroupsM1": 0, "numInGroups": 1,
                        "inChansPerGroup": k1 - k0, "outChansPerGroup": n1 - n0})
                    graph.set_tile_mapping(v, blocks.tile(gi, mi, ni, ki))


def check_types(in_type, out_type, what: str) -> None:
    for role, t in (("input", in_type), ("output", out_type)):
        if not isinstance(t, popsim.Type) or t not in (FLOAT, HALF):
            raise PoplibsError(f"{what}: the {role} type must be FLOAT or HALF, found {t!r}")
