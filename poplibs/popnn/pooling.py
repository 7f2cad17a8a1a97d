"""Pooling (PopLibs' popnn/Pooling.hpp, PoolingDef.hpp): PoolingType, PoolParams, pool and
pool_input_gradient, built from popnn's pooling vertices (pooling_vertices.cpp) on the tiles
that hold the result.

Tensors are [B, C, *field]. Internally (as PopLibs) the channels are cut into groups of
``chansPerGroup`` held innermost: [C / cpg, B, *field, cpg]; a new result is such a variable,
its rows (positions sharing all field indices but the innermost) dealt out to the tiles in
contiguous blocks (pooling_worklists.split_rows), and each tile gets one MultiVertex over its
rows, reading the input rows their windows cover. ``cpg`` divides the size of the groups in
which the input holds a position's channels contiguously (a convolution's output holds each
tile's out-channels together), up to 16; 1 when they are scattered.

Each pooling type is one entry of POOLING_OPS (below the passes): its forward vertex, the
scaling both passes apply (AVG's division by each window's count of real inputs) and how
its input gradient is built. To add a type: its PoolingType member (PopLibs' value), its
vertices in pooling_vertices.cpp/.py (the codelet and its estimator, registered by
ensure_codelets), and its POOLING_OPS entry; pool and pool_input_gradient follow from it.
The passes' worklists (which input positions each destination position combines) are the
same for every type (pooling_worklists.py: PASSES, the forward and the backward pass).
"""
import enum
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

import popsim
from popsim import FLOAT, HALF
from popsim.program import Copy, Execute

from .. import popops
from ..poplin.conv_params import ConvParams
from ..poputil import PoplibsError
from ..poputil.checks import (check_count, check_graph, check_per_dim, check_prog, check_tensor,
                              check_whole_numbers)
from ..poputil.memory_order import dim_grouping
from . import pooling_vertices as pv
from .pooling_worklists import plane_work, scale_runs, split_rows, tile_work, valid_counts


class PoolingType(enum.Enum):
    """PopLibs' popnn::PoolingType."""
    MAX = 0
    AVG = 1
    SUM = 2


def _ints(what: str, values, rank: int, low: Optional[int] = None) -> Tuple[int, ...]:
    return check_per_dim(check_whole_numbers(values, "PoolParams", what), "PoolParams", what, rank, low,
                         ", as input_field_shape")


class PoolParams:
    """PopLibs' popnn::pooling::PoolParams, positional as in C++:
    ``PoolParams(pooling_type, input_field_shape, kernel_shape, stride,
    input_truncation_or_padding_lower, input_truncation_or_padding_upper, num_channels,
    batch_size, dtype)``. Negative padding truncates the input. Any number of field dims."""

    def __init__(self, pooling_type, input_field_shape: Sequence[int], kernel_shape: Sequence[int],
                 stride: Sequence[int], input_truncation_or_padding_lower: Sequence[int],
                 input_truncation_or_padding_upper: Sequence[int], num_channels: int, batch_size: int, dtype):
        if not isinstance(pooling_type, PoolingType):
            raise PoplibsError(f"PoolParams: pooling_type must be a popnn.PoolingType "
                               f"({', '.join(t.name for t in PoolingType)}), found {pooling_type!r}")
        if not isinstance(dtype, popsim.Type) or dtype not in (FLOAT, HALF):
            raise PoplibsError(f"PoolParams: dtype must be FLOAT or HALF (PopLibs' pooling vertices' types), "
                               f"found {dtype!r}")
        rank = len(check_whole_numbers(input_field_shape, "PoolParams", "input_field_shape"))
        if rank == 0:
            raise PoplibsError("PoolParams: input_field_shape is empty; pooling needs at least one field dimension")
        self.pooling_type = pooling_type
        self.input_field_shape = _ints("input_field_shape", input_field_shape, rank, 1)
        self.kernel_shape = _ints("kernel_shape", kernel_shape, rank, 1)
        self.stride = _ints("stride", stride, rank, 1)
        self.input_truncation_or_padding_lower = _ints("input_truncation_or_padding_lower",
                                                       input_truncation_or_padding_lower, rank)
        self.input_truncation_or_padding_upper = _ints("input_truncation_or_padding_upper",
                                                       input_truncation_or_padding_upper, rank)
        for name, value in (("num_channels", num_channels), ("batch_size", batch_size)):
            check_count(value, "PoolParams", name, low=0)  # 0: empty results
        self.num_channels, self.batch_size, self.dtype = int(num_channels), int(batch_size), dtype
        for d in range(rank):
            padded = self.input_field_shape[d] + self.input_truncation_or_padding_lower[d] \
                + self.input_truncation_or_padding_upper[d]
            if padded < self.kernel_shape[d]:
                raise PoplibsError(
                    f"PoolParams: the kernel ({self.kernel_shape[d]}) is larger than the padded field ({padded}: "
                    f"{self.input_field_shape[d]} with padding {self.input_truncation_or_padding_lower[d]}, "
                    f"{self.input_truncation_or_padding_upper[d]}) in field dimension {d}; shrink the kernel or pad "
                    "the input")

    def _conv_params(self) -> ConvParams:
        lo, hi = self.input_truncation_or_padding_lower, self.input_truncation_or_padding_upper
        return ConvParams(FLOAT, 1, self.input_field_shape, self.kernel_shape, 1, 1, 1, stride=self.stride,
                          padding_lower=[max(v, 0) for v in lo], padding_upper=[max(v, 0) for v in hi],
                          input_truncation_lower=[max(-v, 0) for v in lo],
                          input_truncation_upper=[max(-v, 0) for v in hi])

    def get_output_field_shape(self) -> Tuple[int, ...]:
        """The pooled field (ConvParams' output formula, PopLibs' getOutputFieldShape)."""
        return self._conv_params().output_field_shape()

    output_field_shape = get_output_field_shape
    getOutputFieldShape = get_output_field_shape

    def get_num_field_dims(self) -> int:
        return len(self.input_field_shape)

    def input_shape(self) -> Tuple[int, ...]:
        return (self.batch_size, self.num_channels) + self.input_field_shape

    def output_shape(self) -> Tuple[int, ...]:
        return (self.batch_size, self.num_channels) + self.get_output_field_shape()

    def __repr__(self):
        return (f"PoolParams({self.pooling_type.name}, field={self.input_field_shape}, kernel={self.kernel_shape}, "
                f"stride={self.stride}, lower={self.input_truncation_or_padding_lower}, "
                f"upper={self.input_truncation_or_padding_upper}, channels={self.num_channels}, "
                f"batch={self.batch_size}, {self.dtype!r})")


# -- checks --------------------------------------------------------------------------------------
def _check_params(params, what: str) -> None:
    if not isinstance(params, PoolParams):
        raise PoplibsError(f"{what}: params must be a popnn.PoolParams, found {type(params).__name__}")


def _check_shape(graph, t, expected: Tuple[int, ...], params: PoolParams, what: str, role: str, field: str) -> None:
    check_tensor(graph, t, what, role)
    if tuple(t.shape) != tuple(expected):
        raise PoplibsError(
            f"{what}: {role} '{t.name}' has shape {tuple(t.shape)}, expected [B, C, *{field}] = {list(expected)} "
            f"(batch_size {params.batch_size}, num_channels {params.num_channels}, {field} "
            f"{list(expected[2:])}) from {params!r}")
    if t.dtype != params.dtype:
        raise PoplibsError(f"{what}: {role} '{t.name}' is {t.dtype!r}, expected {params.dtype!r} as params.dtype")


# -- layout --------------------------------------------------------------------------------------
def _chans_per_group(graph, t, params: PoolParams, dest_field) -> int:
    """The channel grouping (PopLibs' detectChannelGrouping, simplified): 1 unless ``t`` holds
    the channels of its first position in contiguous groups (a convolution's output holds
    each tile's out-channels together); then the largest divisor of that group size up to 16
    that still gives every worker of every tile a row of ``dest_field`` to work on, or failing
    that the smallest that fills a 64-bit vector (more rows, more workers busy). A grouping
    that follows the source's keeps the channels of a position together for the ops after."""
    channels = params.num_channels
    group = dim_grouping(t, 1)
    if group == 1:
        return 1
    rows = params.batch_size * int(np.prod(dest_field[:-1], dtype=np.int64))
    divisors = [d for d in range(min(group, 16), 0, -1) if group % d == 0]
    for d in divisors:
        if channels // d * rows >= graph.target.num_tiles * graph.target.num_worker_contexts:
            return d
    vector = 2 if params.dtype == FLOAT else 4
    return min((d for d in divisors if d >= vector), default=1)


def _grouped(t, cpg: int):
    """[B, C, *F] -> [C/cpg, B, *F, cpg] (a view)."""
    b, c = t.shape[0], t.shape[1]
    g = t.reshape([b, c // cpg, cpg] + list(t.shape[2:]))
    rank = g.rank
    return g.dim_shuffle([1, 0] + list(range(3, rank)) + [2])


def _ungrouped(g):
    """[G, B, *F, cpg] -> [B, G*cpg, *F] (a view)."""
    rank = g.rank
    t = g.dim_shuffle([1, 0, rank - 1] + list(range(2, rank - 1)))
    return t.reshape([t.shape[0], t.shape[1] * t.shape[2]] + list(t.shape[3:]))


class _Plan:
    """The destination's grouped variable, its row blocks and tiles."""

    def __init__(self, graph, params: PoolParams, dest_field, cpg: int, name: str):
        groups = params.num_channels // cpg
        self.cpg, self.dest_field = cpg, tuple(dest_field)
        self.rows_per_plane = int(np.prod(dest_field[:-1], dtype=np.int64))
        self.row_size = dest_field[-1]
        total = groups * params.batch_size * self.rows_per_plane
        self.var = graph.add_variable(params.dtype, [groups, params.batch_size] + list(dest_field) + [cpg], name)
        self.rows = self.var.reshape([total, self.row_size * cpg])
        self.blocks = split_rows(total, self.row_size * cpg, graph.target.num_tiles)
        for tile, (r0, r1) in enumerate(self.blocks):
            graph.set_tile_mapping(self.rows.slice(r0, r1), tile)

    def out_rows(self, r0: int, r1: int):
        return self.rows.slice(r0, r1).flatten()


def _planes(grouped):
    """A grouped tensor [G, B, *F, cpg] as [planes, plane elements] (reshaped once: a view of a
    view whose dims do not merge is costly to make)."""
    return grouped.reshape([int(np.prod(grouped.shape[:2])), int(np.prod(grouped.shape[2:]))])


def _source_view(planes, pieces, src_row_elems: int):
    """The rows ``pieces`` [(plane, lo, hi)] of a grouped source's planes, one after another;
    a single element when there are none (every position reads only padding)."""
    if not pieces:
        return planes[0].slice(0, 1)
    parts = [planes[p].slice(lo * src_row_elems, hi * src_row_elems) for p, lo, hi in pieces]
    return parts[0] if len(parts) == 1 else popsim.concat(parts)


def _add_pooling_vertices(graph, cs, vertex: str, plan: _Plan, work, src, extra=None, state=None):
    """One MultiVertex per tile of ``plan``: its rows of plan.var, ``src`` (grouped) rows as ``in``;
    ``extra``: {field: (grouped tensor, "dest"|"src")} read like the destination or the source."""
    src_row_elems = work.src_row_size * plan.cpg
    src_planes = _planes(src)
    extra_views = {field: (t.reshape(list(plan.rows.shape)) if like == "dest" else _planes(t), like)
                   for field, (t, like) in (extra or {}).items()}
    for tile, (r0, r1) in enumerate(plan.blocks):
        tw = tile_work(work, r0, r1)
        fields = {"out": plan.out_rows(r0, r1), "in": _source_view(src_planes, tw.pieces, src_row_elems),
                  "rowSize": plan.row_size, "chansPerGroup": plan.cpg, "inStride": work.in_stride,
                  "outStride": work.out_stride}
        for field, (view, like) in extra_views.items():
            fields[field] = view.slice(r0, r1).flatten() if like == "dest" \
                else _source_view(view, tw.pieces, src_row_elems)
        fields.update(state or {})
        v = graph.add_vertex(cs, vertex, fields)
        graph.set_initial_value(v["rowStarts"], tw.row_starts)
        graph.set_initial_value(v["workList"], tw.work_list)
        graph.set_tile_mapping(v, tile)


def _pooling_pass(graph, params: PoolParams, vertex, cpg: int, src, backward: bool, prog, plan_name: str,
                  cs_name: str, extra=None, state=None) -> _Plan:
    """One compute set of ``vertex`` (a pooling_vertices template) over the grouped ``src``,
    into a new grouped plan named ``plan_name``: of the pooled field, a window's inputs
    combined into its position (``backward`` False), or of the input field, each window's
    value sent to its inputs (True). ``extra`` and ``state`` as _add_pooling_vertices'."""
    out_field = params.get_output_field_shape()
    work = plane_work(params.input_field_shape, out_field, params.kernel_shape, params.stride,
                      params.input_truncation_or_padding_lower, backward=backward)
    plan = _Plan(graph, params, params.input_field_shape if backward else out_field, cpg, plan_name)
    cs = graph.add_compute_set(cs_name)
    _add_pooling_vertices(graph, cs, pv.vertex_name(vertex, params.dtype), plan, work, src, extra=extra, state=state)
    prog.add(Execute(cs))
    return plan


def _counts(params: PoolParams) -> np.ndarray:
    """Per pooled position, the real (not padding) inputs of its window: [rows, row size]."""
    out_field = params.get_output_field_shape()
    total = np.ones((), np.int64)
    for d in range(len(out_field)):
        c = valid_counts(out_field[d], params.input_field_shape[d], params.kernel_shape[d], params.stride[d],
                         params.input_truncation_or_padding_lower[d])
        total = np.multiply.outer(total, c)
    return total.reshape(-1, out_field[-1])


def _kernel_elements(params: PoolParams) -> int:
    return int(np.prod(params.kernel_shape, dtype=np.int64))


def _average(params: PoolParams):
    """AVG's scaling: (1 / kernel elements, None) when every window holds the whole kernel,
    else (1.0, each pooled position's count of real inputs) for SelectiveScaling."""
    counts = _counts(params)
    if np.all(counts == _kernel_elements(params)):
        return 1.0 / _kernel_elements(params), None
    return 1.0, counts


def _add_selective_scaling(graph, plan: _Plan, counts: np.ndarray, prog, name: str) -> None:
    """Divide each pooled position of ``plan.var`` by its count (runs of equal count per tile)."""
    cs = graph.add_compute_set(name)
    vertex = pv.vertex_name(pv.SELECTIVE_SCALING, plan.var.dtype)
    for tile, (r0, r1) in enumerate(plan.blocks):
        runs = scale_runs(counts, r0, r1)
        if len(runs) == 0:
            continue
        v = graph.add_vertex(cs, vertex, {"inOut": plan.out_rows(r0, r1), "chansPerGroup": plan.cpg})
        graph.set_initial_value(v["scaleWorklist"], runs)
        graph.set_tile_mapping(v, tile)
    prog.add(Execute(cs))


def pool(graph, params: PoolParams, in_, prog, name: str = "", options=None):
    """PopLibs' ``pool``: ``in_`` [B, C, *field] -> a new [B, C, *pooled field] tensor.
    MAX takes the window's largest real input, SUM their sum, AVG their sum over their count
    (padding is never counted)."""
    what = "popnn.pool"
    check_graph(graph, what)
    check_prog(prog, what)
    _check_params(params, what)
    _check_options(options, what)
    _check_shape(graph, in_, params.input_shape(), params, what, "input", "input_field_shape")
    name = name or f"popnn.pool/{params.pooling_type.name.lower()}Pool"
    if in_.num_elements() == 0:
        return _empty(graph, params, params.output_shape(), name)
    pv.ensure_codelets(graph)
    cpg = _chans_per_group(graph, in_, params, params.get_output_field_shape())
    op = POOLING_OPS[params.pooling_type]
    scaling = op.scaling(params)
    plan = _pooling_pass(graph, params, op.vertex, cpg, _grouped(in_, cpg), False, prog, f"{name}/pooled", name,
                         state=None if scaling is None else {"scale": scaling[0]})
    if scaling is not None and scaling[1] is not None:
        _add_selective_scaling(graph, plan, scaling[1], prog, f"{name}/scale")
    return _ungrouped(plan.var)


def _empty(graph, params: PoolParams, shape, name: str):
    """The result when the batch or the channels are empty: no elements, no vertices."""
    t = graph.add_variable(params.dtype, shape, name)
    graph.set_tile_mapping(t, 0)
    return t


def _check_options(options, what: str) -> None:
    if options:
        raise popsim.InvalidOptionError(f"{what}: unknown option(s) {sorted(options)}; PopLibs' pooling options "
                                        "(poolUseIntrospectiveMapping) are not implemented")


def _sum_gradient(graph, params: PoolParams, fwd, pooled_grad, cpg: int, prog, name: str):
    """AVG/SUM: each input position gets the sum of the gradients of the windows holding it,
    scaled as the forward pass scales them (AVG's each divided by its window's count). The
    forward tensors (``fwd``) are not needed."""
    src = _grouped(pooled_grad, cpg)
    scale, counts = POOLING_OPS[params.pooling_type].scaling(params)
    if counts is not None:   # PopLibs pre-scales the gradient by 1/count (scaleGradient)
        scaled = _Plan(graph, params, params.get_output_field_shape(), cpg, f"{name}/scaledGradient")
        prog.add(Copy(pooled_grad, _ungrouped(scaled.var)))
        _add_selective_scaling(graph, scaled, counts, prog, f"{name}/preScale")
        src = scaled.var
    plan = _pooling_pass(graph, params, pv.SUM_POOLING, cpg, src, True, prog, f"{name}/inputGradient", name,
                         state={"scale": scale})
    return _ungrouped(plan.var)


def _max_gradient(graph, params: PoolParams, fwd, pooled_grad, cpg: int, prog, name: str):
    """MAX: each window's gradient goes to every input equal to its max, divided by how many
    there are with ``use_scaled``; ``fwd`` = (in_, pooled, use_scaled)."""
    in_, pooled, use_scaled = fwd
    acts_in, acts_out = _grouped(in_, cpg), _grouped(pooled, cpg)
    src = _grouped(pooled_grad, cpg)
    if use_scaled:   # 1 / (inputs equal to the max) per window, times the gradient
        scale = _pooling_pass(graph, params, pv.MAX_POOLING_GRADIENT_SCALE, cpg, acts_in, False, prog,
                              f"{name}/gradientScale", f"{name}/gradientScale",
                              extra={"fwdActsOut": (acts_out, "dest")})
        popops.mul_in_place(graph, _ungrouped(scale.var), pooled_grad, prog, f"{name}/scaleGradient")
        src = scale.var
    plan = _pooling_pass(graph, params, pv.MAX_POOLING_GRAD, cpg, src, True, prog, f"{name}/inputGradient", name,
                         extra={"fwdActsIn": (acts_in, "dest"), "fwdActsOut": (acts_out, "src")})
    return _ungrouped(plan.var)


@dataclass(frozen=True)
class PoolingOp:
    """One PoolingType (module docstring). ``vertex``: the forward pass's (pooling_vertices);
    ``scaling(params)``: None for a vertex that takes no scale, else (the SumPooling
    vertex's ``scale``, the pooled positions' divisors for SelectiveScaling or None), which
    both passes apply; ``input_gradient(graph, params, fwd, pooled_grad, cpg, prog, name)``:
    the input gradient, ``fwd`` (in_, pooled, use_scaled_gradient), None in the form without
    the forward tensors, which a type that ``needs_forward`` does not have."""
    vertex: str
    scaling: Callable
    input_gradient: Callable
    needs_forward: bool = False


POOLING_OPS = {
    PoolingType.MAX: PoolingOp(pv.MAX_POOLING, lambda params: None, _max_gradient, needs_forward=True),
    PoolingType.AVG: PoolingOp(pv.SUM_POOLING, _average, _sum_gradient),
    PoolingType.SUM: PoolingOp(pv.SUM_POOLING, lambda params: (1.0, None), _sum_gradient),
}


def _full_gradient(graph, params, in_, pooled, pooled_grad, use_scaled_gradient, prog, name="", options=None):
    what = "popnn.pool_input_gradient"
    check_graph(graph, what)
    check_prog(prog, what)
    _check_params(params, what)
    _check_options(options, what)
    if not isinstance(use_scaled_gradient, (bool, np.bool_)):
        raise PoplibsError(f"{what}: use_scaled_gradient must be a bool, found {use_scaled_gradient!r}")
    _check_shape(graph, in_, params.input_shape(), params, what, "input", "input_field_shape")
    _check_shape(graph, pooled, params.output_shape(), params, what, "pooled", "output field")
    _check_shape(graph, pooled_grad, params.output_shape(), params, what, "pooled_grad", "output field")
    name = name or f"popnn.pool_input_gradient/{params.pooling_type.name.lower()}PoolGrad"
    if pooled_grad.num_elements() == 0:
        return _empty(graph, params, params.input_shape(), name)
    pv.ensure_codelets(graph)
    cpg = _chans_per_group(graph, in_, params, params.input_field_shape)
    return POOLING_OPS[params.pooling_type].input_gradient(graph, params, (in_, pooled, bool(use_scaled_gradient)),
                                                           pooled_grad, cpg, prog, name)


def pool_input_gradient_avg_sum(graph, params: PoolParams, fwd_chans_per_group: int, pooled_grad, prog,
                                name: str = "", options=None):
    """PopLibs' AVG/SUM overload of poolInputGradient: the input gradient from the pooled
    gradient alone. ``fwd_chans_per_group`` (PopLibs: the forward tensor's channel grouping,
    used to lay out the result) must divide num_channels; the result is grouped by it."""
    what = "popnn.pool_input_gradient"
    check_graph(graph, what)
    check_prog(prog, what)
    _check_params(params, what)
    _check_options(options, what)
    op = POOLING_OPS[params.pooling_type]
    if op.needs_forward:
        without = " and ".join(t.name for t, o in POOLING_OPS.items() if not o.needs_forward)
        raise PoplibsError(f"{what}: the form without the forward tensors is for {without} pooling; "
                           f"{params.pooling_type.name} needs pool_input_gradient(graph, params, in_, pooled, "
                           "pooled_grad, use_scaled_gradient, prog)")
    if isinstance(fwd_chans_per_group, bool) or int(fwd_chans_per_group) != fwd_chans_per_group \
            or fwd_chans_per_group < 1 or params.num_channels % int(fwd_chans_per_group):
        raise PoplibsError(f"{what}: fwd_chans_per_group must be a whole number >= 1 dividing num_channels "
                           f"({params.num_channels}), found {fwd_chans_per_group!r}")
    _check_shape(graph, pooled_grad, params.output_shape(), params, what, "pooled_grad", "output field")
    name = name or f"popnn.pool_input_gradient/{params.pooling_type.name.lower()}PoolGrad"
    if pooled_grad.num_elements() == 0:
        return _empty(graph, params, params.input_shape(), name)
    pv.ensure_codelets(graph)
    return op.input_gradient(graph, params, None, pooled_grad, int(fwd_chans_per_group), prog, name)


def pool_input_gradient(graph, params: PoolParams, *args, **kwargs):
    """PopLibs' poolInputGradient, both overloads:

    ``pool_input_gradient(graph, params, in_, pooled, pooled_grad, use_scaled_gradient, prog,
    name="", options=None)`` for MAX, AVG or SUM: MAX sends each window's gradient to every
    input equal to its max (``use_scaled_gradient``: divided by how many there are); AVG and
    SUM spread it over the window's real inputs (AVG divided by their count).

    ``pool_input_gradient(graph, params, fwd_chans_per_group, pooled_grad, prog, name="",
    options=None)`` for AVG and SUM (pool_input_gradient_avg_sum).
    """
    first = args[0] if args else kwargs.get("in_", kwargs.get("fwd_chans_per_group"))
    if "fwd_chans_per_group" in kwargs or (isinstance(first, (int, np.integer)) and not isinstance(first, bool)):
        return pool_input_gradient_avg_sum(graph, params, *args, **kwargs)
    return _full_gradient(graph, params, *args, **kwargs)


__all__ = ["POOLING_OPS", "PoolParams", "PoolingOp", "PoolingType", "pool", "pool_input_gradient",
           "pool_input_gradient_avg_sum"]
