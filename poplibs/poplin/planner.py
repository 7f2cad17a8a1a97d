"""The convolution/matmul planner (PopLibs' planner; PopLibs' ConvPlan.cpp and
ConvModel.cpp): choose how to cut a convolution over the tiles of a target.

Search, as PopLibs does it:

* candidates: swapOperands (matmul-shaped convolutions only; tried first for matmul
  passes, so it wins ties), then the AMP, HMAC and VMAC vertex configurations the target
  allows (conv_methods.py, one entry per method, its candidates in conv_candidates.py);
* for each candidate, the splits of conv groups, batch, output field, kernel (all but the
  innermost dimension), output channels (parallel x serial) and input channels (parallel
  x serial), at most one kind of serial split; every split counts grains and only the
  smallest split giving each per-tile size is tried (a larger one uses more tiles for the
  same work);
* cost: the vertex (conv_estimates, PopLibs' formulas), the exchange of inputs, weights and
  partials as popsim's engine charges it, the cross-tile reduction and the output cast as
  the executors run them (one ReduceAdd stage; popops' Cast1D), a sync per compute set, and
  serial-loop extras (cost_model): the estimate is what runs (tests/poplibs/poplin/
  test_poplin_plan_fidelity.py); temporary bytes per tile as PopLibs' convTempBytes;
* objective: fewest cycles (then fewest temp bytes) with temp bytes <= availableMemoryProportion
  x bytes per tile; AMP 0 minimises memory; when nothing fits, a warning and the plan with
  the least temp memory.

The search is exact over those candidates: a branch is cut only when a lower bound on its
vertex cycles (every worker does at least ``core`` cycles per output position) exceeds the
best plan found, so the plan does not depend on the pruning.
"""
import math
import weakref
import warnings
from dataclasses import dataclass
from typing import Dict, Iterator, List, Mapping, Optional, Tuple, Union

from ..popops.cast import cast1d_cycles
from ..poputil import PoplibsError
from . import conv_methods
from . import cost_model as cm
from .conv_candidates import VertexCandidate, is_mat_mul_shaped, swap_operands_params
from .conv_methods import vertex_candidates
from .conv_params import ConvParams
from .options import ConvOptions, parse_conv_options, parse_mat_mul_options
from .plan import ConvTransform, Partition, Plan, Split
from .plan_unsatisfiable import unsatisfiable


def split_values(grains: int, limit: int) -> List[int]:
    """The smallest split giving each distinct per-part size ceil(grains / split), for
    splits 1..min(grains, limit), ascending."""
    out = []
    s, top = 1, min(grains, limit)
    while s <= top:
        out.append(s)
        per = -(-grains // s)
        if per <= 1:
            break
        s = -(-grains // (per - 1))
    return out


def _choices(grains: int, limit: int, forced: Optional[int]) -> List[int]:
    """The splits to try: ``forced`` alone when planConstraints sets it (if it is possible:
    1 <= forced <= grains and the tiles left), else split_values."""
    if forced is None:
        return split_values(grains, limit)
    return [forced] if 1 <= forced <= min(grains, limit) else []


@dataclass
class _Best:
    key: tuple = None
    args: tuple = None

    def offer(self, key: tuple, args: tuple) -> None:
        if self.key is None or key < self.key:
            self.key, self.args = key, args


class _Search:
    """One candidate's search: sizes in grains, the cost of a configuration, the loops."""

    def __init__(self, target, params: ConvParams, cand: VertexCandidate, options: ConvOptions, bound: Optional[int],
                 minimise_memory: bool):
        self.t, self.p, self.c, self.o = target, params, cand, options
        self.bound, self.min_mem = bound, minimise_memory
        self.tiles = target.num_tiles
        self.workers = target.num_worker_contexts
        self.in_bytes = params.data_type.size
        self.fp = cand.partials_type.size == 4
        self.fi = cand.inter_tile_partials_type.size == 4
        self.fo = params.output_type.size == 4
        self.p_bytes = cand.partials_type.size
        self.float_acts = params.data_type.size == 4
        # conv groups in grains of the vertex's group (VMAC's lanes; 1 otherwise)
        self.cg_grain = cand.conv_groups_per_group
        self.cg_grains = -(-params.num_conv_groups // self.cg_grain)
        self.vw_in = target.vector_width(params.data_type)
        self.coeff_bytes = 16 if options.use_128bit_conv_unit_load else 8
        self.out_field = params.output_field_shape()
        self.kernel = params.kernel_shape
        self.ic_grains = -(-params.input_channels_per_group // cand.in_chans_per_group)
        self.oc_grains = -(-params.output_channels_per_group // cand.partial_chans_per_group)
        # the method's entry and the vertex the executor will build (conv_methods): its cycles,
        # a worker's least cycles per item (``core``), the kernel rows an item takes (``h``,
        # the AMP's convUnitWeightHeight) and the passes over the out-channel group
        self.method = conv_methods.method_of(cand.method, "poplin planner")
        self.vertex = self.method.planned_vertex(params)
        self.flattened = self.vertex.flattens   # batch and field one row (PopLibs' tile-level flatten)
        self.core = self.method.core(self)
        self.h = self.method.chain_rows(self)
        self.passes = self.method.passes(self)
        self.vertex_memo: Dict[tuple, int] = {}
        self.own = _Best()   # this candidate's best (the report's runner-up)
        self.vw_partial = target.vector_width(cand.partials_type)
        self.vw_out = target.vector_width(params.output_type)
        # the elements a reduction's output is shared out in (mat_mul_execute.output_grain)
        self.out_grain = -(-max(cand.partial_chans_per_group, self.vw_out) // self.vw_out) * self.vw_out

    # -- cost of one configuration -------------------------------------------------------------
    def vertex_cycles(self, bt: int, ft: Tuple[int, ...], kt: Tuple[int, ...], cgt: int, ict: int, oct_: int) -> int:
        return self.vertex.cycles(self, bt, ft, kt, cgt, ict, oct_)

    def candidate_lower_bound(self) -> int:
        """A method that prunes (HMAC, VMAC): no plan costs less than its vertex work
        (positions x kernel positions x channel groups, ``core`` cycles each) spread evenly
        over every worker of every tile; 0 for the others."""
        if not self.method.prunes:
            return 0
        p = self.p
        work = p.batch_size * math.prod(self.out_field) * (math.prod(self.kernel) // self.h) * self.cg_grains * \
            self.ic_grains * self.oc_grains
        return self.workers * self.core * -(-work // (self.tiles * self.workers))

    def vertex_lower_bound(self, bt, ft_prod, kt_prod, cgt, ict, oct_) -> int:
        """Every worker spends at least ``core`` cycles per output position per pass (per
        kernel position the chain takes, ``h`` rows at a time)."""
        kernel_steps = max(1, kt_prod // self.h)
        return (-(-cgt // self.cg_grain) * ict * oct_ * self.passes * kernel_steps * self.workers * self.core
                * -(-bt * ft_prod // self.workers))

    def evaluate(self, cg_s, b_s, f_s, k_s, oc_p, oc_ser, ic_p, ic_ser, temp_limit: Optional[int]):
        """(cycles, temp bytes, breakdown) of one configuration, or None when its temp bytes
        exceed ``temp_limit`` (checked before the cycles are worked out)."""
        p, c = self.p, self.c
        bt = -(-p.batch_size // b_s)
        ft = tuple(-(-n // s) for n, s in zip(self.out_field, f_s))
        kt = tuple(-(-n // s) for n, s in zip(self.kernel, k_s))
        cgt = min(-(-self.cg_grains // cg_s) * self.cg_grain, p.num_conv_groups)
        ict = -(-(-(-self.ic_grains // ic_ser)) // ic_p)
        oct_ = -(-(-(-self.oc_grains // oc_ser)) // oc_p)
        field_in = tuple(min(p.input_field_shape[d], (ft[d] - 1) * p.stride[d] + (kt[d] - 1) * p.kernel_dilation[d] + 1)
                         for d in range(len(ft)))
        in_chans = ict * c.in_chans_per_group
        out_chans = oct_ * c.partial_chans_per_group
        inputs = bt * math.prod(field_in) * cgt * in_chans
        weights = math.prod(kt) * cgt * in_chans * out_chans
        partials = bt * math.prod(ft) * cgt * out_chans
        depth = ic_p * math.prod(k_s)
        outputs = -(-partials // depth)
        reduce_temp = cm.conv_reduce_temp_bytes(partials, depth, self.fp, self.fi, self.o.enable_multi_stage_reduce)
        add_temp = outputs * self.p_bytes if ic_ser > 1 else 0
        temp = max((inputs + weights) * self.in_bytes + partials * self.p_bytes, reduce_temp) + add_temp
        if temp_limit is not None and temp > temp_limit:
            return None
        serial = oc_ser * ic_ser
        bpc = self.t.exchange_bytes_per_cycle
        exchange = self._operand_exchange(bt, math.prod(field_in), cgt, ict, oct_, kt, oc_p, k_s, f_s, b_s)
        reduce_cycles = 0
        sync = self.t.max_ipu_sync_delay   # the compute set of the vertices
        if depth > 1:
            # the executor's reduction: one stage, each of the ``depth`` tiles adding its
            # share of every part's partials straight into the output type
            # (of the real out-channels: the vertices write no padding)
            real = bt * math.prod(ft) * cgt * min(out_chans, p.output_channels_per_group)
            exchange += cm.reduce_exchange_cycles(real, depth, self.out_grain, self.p_bytes, bpc)
            reduce_cycles, _ = cm.conv_reduce_cycles(real, depth, self.fp, self.fo, self.fo, bpc, False,
                                                     self.workers)
            sync += self.t.max_ipu_sync_delay
        vertex = self.vertex_cycles(bt, ft, kt, cgt, ict, oct_)
        extras = 0
        if serial > 1:   # the loop counter's increment (a compute set of its own)
            extras += cm.counter_increment_cycles(self.workers) + self.t.max_ipu_sync_delay
            # every slicing vertex (one per worker of each tile holding the operand) reads
            # the counter from its tile: the engine charges the sender per reader
            tiles = math.prod(f_s) * b_s * cg_s * math.prod(k_s) * oc_p * ic_p
            def counter(readers):
                return cm.engine_exchange_cycles(4 * self.workers * readers, bpc)
        if oc_ser > 1:   # slice the weights, update the output: two compute sets
            extras += (cm.dynamic_slice_1d_cycles(weights, self.vw_in, 1, self.workers)
                       + cm.dynamic_slice_1d_cycles(outputs, self.vw_out, 1, self.workers)
                       + counter(tiles) + counter(-(-tiles // depth)) + 2 * self.t.max_ipu_sync_delay)
            if oc_ser * oc_p * out_chans > p.output_channels_per_group:
                # the last step is padded (serial_loop): the update's field, the tile's part of
                # every step of the output, is no longer one run, and the engine rearranges
                # it in and out at each step
                rows = bt * math.prod(ft) * cgt * oc_ser
                extras += 2 * cm.on_tile_copy_cycles(rows * out_chans * p.output_type.size, rows,
                                                     self.t.memcpy_bytes_per_cycle)
        if ic_ser > 1:   # slice the inputs and the weights, add the partials up: three
            extras += (cm.dynamic_slice_1d_cycles(inputs, self.vw_in, 1, self.workers)
                       + cm.dynamic_slice_1d_cycles(weights, self.vw_in, 1, self.workers)
                       + cm.add_in_place_cycles(outputs, self.vw_partial, self.workers)
                       + 2 * counter(tiles) + 3 * self.t.max_ipu_sync_delay)
        cast = 0
        if depth == 1 and self.fp != self.fo:
            # each step's partials cast to the output type by popops' Cast1D, costed by its
            # estimator (a reduction writes the output type itself)
            real = bt * math.prod(ft) * cgt * min(out_chans, p.output_channels_per_group)
            cast = cast1d_cycles(c.partials_type, p.output_type, real, self.workers)
            sync += self.t.max_ipu_sync_delay
        cycles = serial * (exchange + vertex + reduce_cycles + extras + sync + cast)
        breakdown = (("partial_calc", serial * vertex), ("exchange", serial * exchange),
                     ("reduce", serial * reduce_cycles), ("serial_loop", serial * extras), ("cast", serial * cast),
                     ("sync", serial * sync))
        return cycles, temp, breakdown

    # -- the loops -----------------------------------------------------------------------------
    def run(self, best: _Best, order: int) -> None:
        pc = self.o.plan_constraints
        p, T = self.p, self.tiles  # noqa: N806 - T tiles, as in the planner's formulas
        rank = len(self.out_field)
        field_forced = dict(pc.field_split)
        kernel_forced = dict(pc.kernel_split)
        for cg_s in reversed(_choices(self.cg_grains, T, pc.conv_group_split)):
            for b_s in reversed(_choices(p.batch_size, T // cg_s, pc.batch_split)):
                used = cg_s * b_s
                if used > T:
                    continue
                for f_s in self._dims(self.out_field, T // used, field_forced, rank):
                    used_f = used * math.prod(f_s)
                    k_limit_dims = rank - 1
                    for k_s in self._dims(self.kernel, T // used_f, kernel_forced, k_limit_dims):
                        used_k = used_f * math.prod(k_s)
                        self._channels(best, order, cg_s, b_s, f_s, k_s, used_k)

    def _dims(self, sizes, limit, forced: Dict[int, int], splittable: int) -> Iterator[Tuple[int, ...]]:
        """Every combination of per-dimension splits (dimensions >= ``splittable`` stay 1)."""
        def rec(d, remaining, acc):
            if d == len(sizes):
                yield tuple(acc)
                return
            if d < splittable:
                values = list(reversed(_choices(sizes[d], remaining, forced.get(d))))
            else:
                values = [1] if forced.get(d, 1) == 1 else []
            for s in values:
                yield from rec(d + 1, remaining // s, acc + [s])
        yield from rec(0, limit, [])

    def _operand_exchange(self, bt, field_in_prod, cgt, ict, oct_, kt, oc_p, k_s, f_s, b_s) -> int:
        """Exchange of a tile's inputs and weights, as the engine charges it: a vertex field
        with any element on another tile is received whole (its real channels, not the
        padding); the input block is spread over the out-channel and kernel parts' tiles,
        the weights over the batch and field parts' (conv_layout, mat_mul_layout)."""
        p, c = self.p, self.c
        in_real = min(ict * c.in_chans_per_group, p.input_channels_per_group)
        out_real = min(oct_ * c.partial_chans_per_group, p.output_channels_per_group)
        received = 0
        if oc_p * math.prod(k_s) > 1 or (math.prod(f_s) > 1 and not self.flattened):
            received += bt * field_in_prod * cgt * in_real
        if b_s * math.prod(f_s) > 1:
            received += math.prod(kt) * cgt * in_real * out_real
        return cm.engine_exchange_cycles(received * self.in_bytes, self.t.exchange_bytes_per_cycle)

    def _cycles_lower_bound(self, bt, ft, kt, cgt, ict, oct_, field_in_prod, oc_p, k_s, f_s, b_s) -> int:
        """The vertex and the exchange of inputs and weights of the unserialised configuration:
        a serial split repeats the vertex's overheads and exchanges at least as many bytes."""
        if self.flattened:   # exact, and monotone in the channel groups
            vertex = self.vertex_cycles(bt, tuple(ft), tuple(kt), cgt, ict, oct_)
        else:
            vertex = self.vertex_lower_bound(bt, math.prod(ft), math.prod(kt), cgt, ict, oct_)
        return vertex + self._operand_exchange(bt, field_in_prod, cgt, ict, oct_, kt, oc_p, k_s, f_s, b_s)

    def _temp_lower_bound(self, bt, field_in_prod, ft_prod, kt_prod, cgt, ict, oct_) -> int:
        """convTempBytes without the reduction and accumulator terms (which only add)."""
        c = self.c
        in_chans, out_chans = ict * c.in_chans_per_group, oct_ * c.partial_chans_per_group
        return ((bt * field_in_prod * cgt * in_chans + kt_prod * cgt * in_chans * out_chans) * self.in_bytes
                + bt * ft_prod * cgt * out_chans * self.p_bytes)

    def _channels(self, best, order, cg_s, b_s, f_s, k_s, used):
        pc, T, p = self.o.plan_constraints, self.tiles, self.p  # noqa: N806 - T tiles, as in the planner's formulas
        bt = -(-p.batch_size // b_s)
        ft = [-(-n // s) for n, s in zip(self.out_field, f_s)]
        kt = [-(-n // s) for n, s in zip(self.kernel, k_s)]
        ft_prod, kt_prod = math.prod(ft), math.prod(kt)
        field_in_prod = math.prod(min(p.input_field_shape[d], (ft[d] - 1) * p.stride[d] + (kt[d] - 1)
                                      * p.kernel_dilation[d] + 1) for d in range(len(ft)))
        cgt = min(-(-self.cg_grains // cg_s) * self.cg_grain, p.num_conv_groups)
        ic_all, oc_all = self.ic_grains, self.oc_grains
        for oc_p in reversed(_choices(oc_all, T // used, pc.out_chan_parallel)):
            used_o = used * oc_p
            oc_t = -(-oc_all // oc_p)
            ic_min = -(-ic_all // min(ic_all, T // used_o))
            if best.key is not None:
                if self.min_mem:
                    if min(self._temp_lower_bound(bt, field_in_prod, ft_prod, kt_prod, cgt, ic_min, 1),
                           self._temp_lower_bound(bt, field_in_prod, ft_prod, kt_prod, cgt, 1, oc_t)) > best.key[0]:
                        continue
                elif self.vertex_lower_bound(bt, ft_prod, kt_prod, cgt, ic_min, oc_t) > best.key[0]:
                    continue
            for ic_p in reversed(_choices(ic_all, T // used_o, pc.in_chan_parallel)):
                ic_t = -(-ic_all // ic_p)
                if best.key is not None:
                    if self.min_mem:
                        if min(self._temp_lower_bound(bt, field_in_prod, ft_prod, kt_prod, cgt, ic_t, 1),
                               self._temp_lower_bound(bt, field_in_prod, ft_prod, kt_prod, cgt, 1, oc_t)) \
                                > best.key[0]:
                            continue
                    elif self._cycles_lower_bound(bt, ft, kt, cgt, ic_t, oc_t, field_in_prod, oc_p, k_s, f_s, b_s) \
                            > best.key[0]:
                        continue
                base_fits = None
                for oc_ser, ic_ser in self._serials(oc_p, ic_p):
                    serial = oc_ser * ic_ser
                    if serial > 1 and not self.min_mem:
                        # serial loops trade cycles for memory: tried when the unserialised
                        # configuration is over the budget (or is not allowed)
                        if base_fits:
                            break
                        if best.key is not None and serial * self.vertex_lower_bound(
                                bt, ft_prod, kt_prod, cgt, -(-(-(-ic_all // ic_ser)) // ic_p),
                                -(-(-(-oc_all // oc_ser)) // oc_p)) > best.key[0]:
                            continue
                    limit = best.key[0] if (self.min_mem and best.key is not None) else self.bound
                    result = self.evaluate(cg_s, b_s, f_s, k_s, oc_p, oc_ser, ic_p, ic_ser, limit)
                    if serial == 1:
                        base_fits = result is not None or (self.min_mem and best.key is not None)
                    if result is None:
                        continue
                    cycles, temp, breakdown = result
                    key = (temp, cycles, order) if self.min_mem else (cycles, temp, order)
                    args = (self, cg_s, b_s, f_s, k_s, oc_p, oc_ser, ic_p, ic_ser, cycles, temp, breakdown,
                            used * oc_p * ic_p)
                    best.offer(key, args)
                    self.own.offer(key, args)

    def _serials(self, oc_p, ic_p) -> Iterator[Tuple[int, int]]:
        pc = self.o.plan_constraints
        oc_forced, ic_forced = pc.out_chan_serial, pc.in_chan_serial
        if oc_forced is not None and ic_forced is not None and min(oc_forced, ic_forced) > 1:
            return  # PopLibs allows one kind of serial split at a time
        oc_max, ic_max = self.oc_grains // oc_p, self.ic_grains // ic_p
        oc_values = [s for s in split_values(-(-self.oc_grains // oc_p), max(oc_max, 1)) if s > 1]
        ic_values = [s for s in split_values(-(-self.ic_grains // ic_p), max(ic_max, 1)) if s > 1]
        if oc_forced is None and ic_forced is None:
            yield 1, 1
            for s in oc_values:
                yield s, 1
            for s in ic_values:
                yield 1, s
            return
        if oc_forced is not None and oc_forced > 1:
            if oc_forced * oc_p <= self.oc_grains and ic_forced in (None, 1):
                yield oc_forced, 1
            return
        if ic_forced is not None and ic_forced > 1:
            if ic_forced * ic_p <= self.ic_grains and oc_forced in (None, 1):
                yield 1, ic_forced
            return
        # a forced 1 on one kind leaves the other free
        yield 1, 1
        if oc_forced is None:
            for s in oc_values:
                yield s, 1
        if ic_forced is None:
            for s in ic_values:
                yield 1, s


# -- the driver -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlanDetails:
    """Why a plan won: the memory budget, whether it was met, and the best plan of the
    other candidates (the runner-up), as (description, cycles, temp bytes) or None."""
    budget_bytes: int
    budget_met: bool
    objective: str
    runner_up: Optional[Tuple[str, int, int]]


def _search(target, params, candidates, options, bound, minimise_memory) -> Tuple[_Best, List[_Search]]:
    best = _Best()
    searches = []
    for order, cand in enumerate(candidates):
        p = swap_operands_params(params) if cand.swap_operands else params
        search = _Search(target, p, cand, options, bound, minimise_memory)
        if minimise_memory or best.key is None or search.candidate_lower_bound() <= best.key[0]:
            search.run(best, order)
        searches.append(search)
    return best, searches


def _to_plan(best: _Best) -> Plan:
    (search, cg_s, b_s, f_s, k_s, oc_p, oc_ser, ic_p, ic_ser, cycles, temp, breakdown, tiles) = best.args
    c, rank = search.c, len(f_s)
    partition = Partition(field_split=f_s, batch_split=b_s, out_chan_split=Split(oc_ser, oc_p), kernel_split=k_s,
                          in_chan_split=Split(ic_ser, ic_p), conv_group_split=cg_s,
                          field_axis_grain_size=(1,) * rank,
                          in_chan_grain_size=c.in_chans_per_group, out_chan_grain_size=c.partial_chans_per_group,
                          conv_group_grain_size=c.conv_groups_per_group)
    tile_level = ConvTransform(flatten_dims=tuple(range(rank + 1))) if search.flattened else ConvTransform()
    return Plan(partition=partition, method=c.method,
                transforms=(ConvTransform(swap_operands=c.swap_operands), tile_level),
                conv_groups_per_group=c.conv_groups_per_group, in_chans_per_group=c.in_chans_per_group,
                partial_chans_per_group=c.partial_chans_per_group, partials_type=c.partials_type,
                inter_tile_partials_type=c.inter_tile_partials_type, start_tile=0, cycles=cycles,
                temp_bytes_per_tile=temp, tiles_used=tiles, cost_breakdown=breakdown)


def _runner_up(best: _Best, searches: List[_Search]) -> Optional[Tuple[str, int, int]]:
    winner = best.args[0]
    others = [s.own for s in searches if s is not winner and s.own.key is not None]
    if not others:
        return None
    second = min(others, key=lambda b: b.key)
    _, cycles, temp = second.args[0], second.args[9], second.args[10]
    return conv_methods.describe(second.args[0].c), cycles, temp


# The most elements a tensor of a planned convolution (or matmul) may have: more than any
# IPU's memory holds, and as many element ids as popsim lists for one view (its layouts
# are built from views). Past it, planning and laying out would run for hours or fail
# part-way through; the convolution is refused first.
MAX_TENSOR_ELEMENTS = 1 << 30


def _check_sizes(params: ConvParams) -> None:
    for role, shape in (("input", params.input_shape()), ("weights", params.weights_shape()),
                        ("output", params.output_shape())):
        if math.prod(shape) > MAX_TENSOR_ELEMENTS:
            kind = "matmul (planned as the convolution)" if is_mat_mul_shaped(params) else "convolution"
            raise PoplibsError(f"poplin: the {kind}'s {role} {tuple(shape)} has {math.prod(shape):,} elements, more "
                               f"than popsim plans for one tensor ({MAX_TENSOR_ELEMENTS:,}, more than any IPU's "
                               "memory holds); split it into smaller convolutions or matmuls")


def _without_empty_sizes(params: ConvParams) -> ConvParams:
    """The convolution planned for ``params``: a batch, channel or group count of 0 planned
    as 1. Such a convolution has no products to spread over tiles (an empty output, or for
    no input channels, as for a [M, 0] @ [0, N] matmul, an output of zeros: PopLibs'
    getZeroConv); the plan still lays out its tensors, and the executor does no more than
    zero the output."""
    sizes = ("batch_size", "input_channels_per_group", "output_channels_per_group", "num_conv_groups")
    if all(getattr(params, name) for name in sizes):
        return params
    return params.replace(**{name: max(1, getattr(params, name)) for name in sizes})


def _parse(options, params: ConvParams) -> ConvOptions:
    if isinstance(options, ConvOptions):
        return options
    return parse_mat_mul_options(options) if is_mat_mul_shaped(params) else parse_conv_options(options)


def _plan(target, params: ConvParams, options: ConvOptions) -> Tuple[Plan, PlanDetails]:
    candidates = vertex_candidates(target, params, options)
    if not candidates:
        raise unsatisfiable(target, params, options)
    amp = options.available_memory_proportion
    budget = int(amp * target.bytes_per_tile)
    if amp == 0:
        best, searches = _search(target, params, candidates, options, None, True)
        objective, met = "least temporary memory (availableMemoryProportion 0)", True
    else:
        best, searches = _search(target, params, candidates, options, budget, False)
        objective, met = "fewest cycles within the memory budget", True
        if best.key is None:
            # PopLibs doubles the bound while it is < 2 x bytes per tile, then optimises for
            # the least memory; whatever the doubled bounds admit, the least-memory plan is
            # the one that remains, so it is searched for directly.
            best, searches = _search(target, params, candidates, options, None, True)
            objective, met = "least temporary memory (the budget could not be met)", False
            if best.key is not None:
                warnings.warn(f"poplin planner: unable to meet memory target of {budget} bytes per tile "
                              f"(availableMemoryProportion {amp} x {target.bytes_per_tile}) for input "
                              f"{params.input_shape()} and weights {params.weights_shape()}: the least-memory "
                              f"plan needs {best.key[0]} bytes per tile. Optimizing for minimum memory.",
                              stacklevel=3)
    if best.key is None:
        raise unsatisfiable(target, params, options)
    details = PlanDetails(budget, met, objective, _runner_up(best, searches))
    return _to_plan(best), details


class PlanningCache:
    """Plans already made (PopLibs' poplin::PlanningCache), keyed by the target's figures,
    the convolution and the parsed options. Share one between calls that plan the same
    shapes; a hit returns the very same Plan object."""

    def __init__(self):
        self._plans: Dict[tuple, Tuple[Plan, PlanDetails]] = {}

    def __len__(self) -> int:
        return len(self._plans)

    def clear(self) -> None:
        self._plans.clear()

    def _get(self, key):
        return self._plans.get(key)

    def _put(self, key, value) -> None:
        self._plans[key] = value


_graph_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def graph_cache(graph, cache: Optional[PlanningCache] = None) -> PlanningCache:
    """``cache``, or when None one PlanningCache kept with ``graph``: the ops of one graph
    (create_input, create_weights, convolution; create_mat_mul_input_*, mat_mul) plan the
    same shapes in turn, and a plan depends only on the target, the shapes and the options."""
    if cache is not None:
        return cache
    mine = _graph_caches.get(graph)
    if mine is None:
        mine = _graph_caches[graph] = PlanningCache()
    return mine


def plan_with_details(target, params: ConvParams, options=None,
                      cache: Optional[PlanningCache] = None) -> Tuple[Plan, PlanDetails]:
    """get_plan, with why the plan won (the report's source)."""
    if not isinstance(params, ConvParams):
        raise PoplibsError(f"get_plan: params must be a poplin.ConvParams, found {type(params).__name__}")
    if cache is not None and not isinstance(cache, PlanningCache):
        raise PoplibsError(f"get_plan: cache must be a poplin.PlanningCache or None, found {type(cache).__name__}")
    _check_sizes(params)
    opts = _parse(options, params)
    key = (target, params, opts)
    if cache is not None:
        hit = cache._get(key)
        if hit is not None:
            return hit
    result = _plan(target, _without_empty_sizes(params), opts)
    if cache is not None:
        cache._put(key, result)
    return result


def get_plan(target, params: ConvParams, options: Union[ConvOptions, Mapping, None] = None,
             cache: Optional[PlanningCache] = None) -> Plan:
    """The plan for ``params`` on ``target`` (PopLibs' getPlan). ``options``: a ConvOptions
    or an options dict (matmul options for a matmul-shaped convolution, conv options
    otherwise). With a ``cache``, a repeated call returns the cached Plan itself."""
    return plan_with_details(target, params, options, cache)[0]
