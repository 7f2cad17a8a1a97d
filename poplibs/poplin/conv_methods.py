"""The convolution method table: every method a plan can name (PopLibs' Plan::Method) is one
ConvMethod entry in METHODS, and every vertex a method runs a tile's work with is one
ConvVertex in its entry. The planner (conv candidates, their order and cost), the executors
(which vertex, its fields, its checks), the plan report and the planConstraints errors
look a method up here instead of branching on its name.

A ConvMethod (one Plan.method.kind) holds what the planner needs before it knows the vertex:
its candidates (conv_candidates.py: the groupings PopLibs' getConvVertex*Candidates offer,
as far as a vertex is instantiated), their rank in PopLibs' order of preference, a
candidate's and a plan's description, why a planConstraints method of this kind can never
be satisfied, and the terms of the planner's bounds (a worker's least cycles per item, the
kernel rows one item takes, the passes over the out-channel group, whether a candidate may
be skipped whole on its bound). A ConvVertex (one PopLibs vertex) holds when the planner
costs it and the executor builds it, its instantiations (amp_configs.py), its name and
codelets (its vertex module), the fields it takes beyond the worklists every vertex but
the flattened ConvPartial1x1Out takes, and the planner's cycles for one tile (its
estimates module's formulas, the same the vertex's registered estimator gives).

To add a vertex to an existing method (as ConvPartialnx1 was added to AMP):
1. its codelet and vertex module (conv_<name>.cpp, conv_<name>.py: the name function,
   ensure_codelets, the estimator registered for each instantiation);
2. its cycle formulas (<name>_estimates.py) if no existing module has them;
3. its instantiations in amp_configs.py;
4. here: a ConvVertex in the method's ``vertices``, before any vertex whose ``plans`` and
   ``runs`` would also take its convolutions (the first that does is used), with its
   planner cycles (a ``_<name>_cycles`` function below) and its fields.
To add a method (a Plan.method.kind: plan.METHODS lists PopLibs' five, which Method and
planConstraints accept): steps 1-3 for its vertex, its candidates and rank in
conv_candidates.py, and a ConvMethod here. Its place in METHODS is its place among equally
ranked candidates. Nothing else branches on methods.
"""
import math
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import popsim

from ..poputil import PoplibsError
from . import amp_configs, conv_hmac, conv_nx1, conv_vertices, conv_vmac
from . import conv_candidates as cc
from . import conv_estimates as ce
from . import hmac_estimates, vmac_estimates
from .conv_candidates import VertexCandidate, is_mat_mul_shaped, partials_types, swap_operands_params
from .conv_params import ConvParams
from .conv_transforms import is_one_by_one
from .options import ConvOptions


@dataclass(frozen=True)
class ConvVertex:
    """One vertex a method computes a tile's partial convolution with.

    ``plans(params)``: the planner costs this vertex for the method's candidates of these
    (possibly swapped) params; ``runs(plan, canon)``: the executor builds it for this plan of
    the canonical params (conv_transforms.canonical_views). ``config(plan, in_type,
    partials_type)`` is the plan's key into ``instantiations`` (``config_names`` names its
    parts, for the error of a plan outside them); ``template(plan, in_type,
    partials_type)`` the vertex's full template name (``name`` is PopLibs' vertex).
    ``fields(target, plan)`` is called once per convolution (it may check the plan) and
    gives ``f(batch, kernel ranges)``, the vertex's own fields of one tile; None for a vertex
    of the flattened 1x1 form, which takes no worklists (batch and field are one row, and
    the plan's tile level flattens them).
    ``cycles(search, bt, ft, kt, cgt, ict, oct_)``: the planner's cycles of one tile's vertex
    (planner._Search gives the target's and candidate's figures). ``mat_mul``: a
    matmul-shaped convolution this vertex runs is the matmul executor's."""
    name: str
    plans: Callable[[ConvParams], bool]
    runs: Callable[[object, ConvParams], bool]
    instantiations: tuple
    config: Callable
    config_names: str
    template: Callable
    ensure_codelets: Callable
    fields: Optional[Callable]
    cycles: Callable
    mat_mul: bool = False

    @property
    def flattens(self) -> bool:
        """The flattened form: no worklists; a plan for it flattens the tile level."""
        return self.fields is None

    def vertex_type(self, graph, plan, in_type, partials_type, what: str) -> str:
        """The vertex the plan names for these types, its codelets added to ``graph``; a
        PoplibsError when the plan's method does not run this vertex or it is not
        instantiated for the plan (an executor runs what the plan costed or nothing)."""
        method = method_of(plan.method, what)
        if not any(v is self for v in method.vertices):
            raise _not_run_here(plan.method.kind, what)
        key = self.config(plan, in_type, partials_type)
        if key not in self.instantiations:
            have = ", ".join(_config_text(c) for c in self.instantiations)
            raise PoplibsError(f"{what}: the plan's {plan.method.kind} method{method.detail(plan)} with {in_type.name} "
                               f"inputs and {partials_type.name} partials has no {self.name} vertex "
                               f"({self.config_names} instantiated: {have}); plan with poplin.get_plan, which "
                               "chooses only these")
        self.ensure_codelets(graph)
        return self.template(plan, in_type, partials_type)


@dataclass(frozen=True)
class ConvMethod:
    """One Plan.method.kind and the vertices it runs (module docstring).

    ``candidates(target, params, options, tile_type, inter_type, swap)``: the method's
    VertexCandidates (``swap``: for the swapped operands of a matmul-shaped convolution);
    ``rank(target, params, cand)``: (-effective MACs per cycle, padding), PopLibs' sort key,
    of the candidate on ``params`` (swapped when it swaps); ``describe(cand)`` and
    ``report(method)``: text for the plan report, ``detail(plan)`` for an executor's error
    (the plan's configuration beyond its types); ``refuses(params)``: why no plan of this
    method exists for ``params`` (None when one may). The planner's bounds:
    ``core(search)`` a worker's least cycles per item (one output position, per kernel
    step), ``chain_rows(search)`` the kernel rows an item takes, ``passes(search)`` the
    passes over the out-channel group; ``prunes``: a candidate whose least work exceeds the
    best plan so far is skipped whole."""
    kind: str
    vertices: Tuple[ConvVertex, ...]
    candidates: Callable
    rank: Callable
    describe: Callable
    report: Callable
    detail: Callable
    refuses: Callable
    core: Callable
    chain_rows: Callable
    passes: Callable
    prunes: bool = False

    def planned_vertex(self, params: ConvParams) -> ConvVertex:
        return next(v for v in self.vertices if v.plans(params))

    def executed_vertex(self, plan, canon: ConvParams) -> ConvVertex:
        return next(v for v in self.vertices if v.runs(plan, canon))


def _config_text(key) -> str:
    return "/".join(getattr(k, "name", str(k)) for k in key)


def _memoised(cycles):
    """A vertex's planner cycles, kept by the tile's sizes (one search costs many splits of
    the same tile; search.vertex_memo holds one candidate's)."""
    def memo(search, bt, ft, kt, cgt, ict, oct_):
        key = (bt, ft, kt, cgt, ict, oct_)
        hit = search.vertex_memo.get(key)
        if hit is None:
            hit = search.vertex_memo[key] = cycles(search, bt, ft, kt, cgt, ict, oct_)
        return hit
    return memo


# -- AMP: ConvPartial1x1Out and ConvPartialnx1 ---------------------------------------------------
def _one_by_one_plans(p: ConvParams) -> bool:
    """Kernel 1, the field unchanged, stride 1: batch and field flatten into one row."""
    return (all(k == 1 for k in p.kernel_shape) and p.output_field_shape() == p.input_field_shape
            and all(s == 1 for s in p.stride))


def _one_by_one_runs(plan, canon: ConvParams) -> bool:
    # a matmul-shaped 1x1 convolution is the matmul executor's, flattened or not
    return is_one_by_one(canon) and (bool(plan.transforms[1].flatten_dims) or is_mat_mul_shaped(canon))


def _one_by_one_cycles(s, bt, ft, kt, cgt, ict, oct_) -> int:
    """ConvPartial1x1Out's cycles: its inner loop depends only on the positions (kept)."""
    c, w = s.c, s.workers
    positions = bt * math.prod(ft)
    inner = s.vertex_memo.get(positions)
    if inner is None:
        worklists = ce.worker_item_sizes(positions, max(positions, 1), w)
        inner = tuple(ce.conv_partial_1x1_inner_loop_cycles(worklists, zero, s.float_acts, s.fp, c.method.conv_units, w)
                      for zero in (True, False))
        s.vertex_memo[positions] = inner
    return ce.conv_partial_1x1_outer_loop_cycles(inner[0], inner[1], cgt, ict, oct_, c.partial_chans_per_group,
                                                 c.method.conv_units, c.method.conv_input_load_elems, s.coeff_bytes,
                                                 s.float_acts, s.fp, w)


@_memoised
def _nx1_cycles(s, bt, ft, kt, cgt, ict, oct_) -> int:
    """conv_partial_nx1_cycles, its inner loop (which depends only on the positions, the row
    and the kernel) worked out once for every channel split."""
    c, w = s.c, s.workers
    positions = bt * math.prod(ft)
    outer = math.prod(kt[:-1]) if s.h == 1 else -(-kt[0] // s.h) * math.prod(kt[1:-1])
    inner_key = ("nx1", positions, ft[-1], outer, kt[-1])
    inner = s.vertex_memo.get(inner_key)
    if inner is None:
        worklists = ce.worker_item_sizes(positions, max(ft[-1], 1), w)
        inner = s.vertex_memo[inner_key] = ce.conv_partial_nx1_inner_loop_cycles(
            [worklists] * (outer * kt[-1]), outer, kt[-1], s.h, c.partial_chans_per_group, c.method.conv_units,
            c.method.conv_input_load_elems, s.coeff_bytes, s.float_acts, s.fp, w)
    return (ce.conv_zero_supervisor_cycles(positions, oct_, cgt, c.partial_chans_per_group, w)
            + ce.conv_partial_nx1_outer_loop_cycles(inner, cgt, ict, oct_, s.fp, w))


def chain_rows(target, plan) -> int:
    """Kernel rows the AMP chain holds at once (PopLibs' convUnitWeightHeight): the chain's
    weights per unit over the plan's in-channel group."""
    chain = target.conv_unit_max_pipeline_depth * plan.method.conv_input_load_elems
    if plan.in_chans_per_group < 1 or chain % plan.in_chans_per_group:
        raise PoplibsError(f"poplin: the plan's in-channel group {plan.in_chans_per_group} does not divide the AMP "
                           f"chain's {chain} weights per unit; plan with poplin.get_plan")
    return chain // plan.in_chans_per_group


def _nx1_fields(target, plan):
    rows = chain_rows(target, plan)
    return lambda batch, kr: {"ampKernelHeightM1": rows - 1, "kernelHeight": kr[0][1] - kr[0][0]}


def _amp_config(plan, in_type, partials_type):
    return in_type, partials_type, plan.method.conv_units, plan.method.conv_input_load_elems


_AMP_CONFIG = "input/partials/units/load"


CONV_PARTIAL_1X1_OUT = ConvVertex(
    name="ConvPartial1x1Out", plans=_one_by_one_plans, runs=_one_by_one_runs,
    instantiations=amp_configs.ONE_BY_ONE, config=_amp_config, config_names=_AMP_CONFIG,
    template=lambda plan, i, p: conv_vertices.conv_partial_1x1_name(*_amp_config(plan, i, p)),
    ensure_codelets=conv_vertices.ensure_codelets, fields=None, cycles=_one_by_one_cycles, mat_mul=True)
CONV_PARTIAL_NX1 = ConvVertex(
    name="ConvPartialnx1", plans=lambda p: True, runs=lambda plan, canon: True,
    instantiations=amp_configs.NX1, config=_amp_config, config_names=_AMP_CONFIG,
    template=lambda plan, i, p: conv_nx1.conv_partial_nx1_name(i, p, plan.method.conv_units),
    ensure_codelets=conv_nx1.ensure_codelets, fields=_nx1_fields, cycles=_nx1_cycles)


# -- HMAC: ConvPartialHorizontalMac --------------------------------------------------------------
@_memoised
def _hmac_cycles(s, bt, ft, kt, cgt, ict, oct_) -> int:
    c, w = s.c, s.workers
    positions = bt * math.prod(ft)
    worklists = ce.worker_item_sizes(positions, max(ft[-1], 1), w)
    return hmac_estimates.hmac_cycles(worklists, math.prod(kt), cgt, ict, oct_, c.in_chans_per_group,
                                      c.partial_chans_per_group, s.vw_in, s.float_acts, s.fp, positions, w)


CONV_PARTIAL_HORIZONTAL_MAC = ConvVertex(
    name="ConvPartialHorizontalMac", plans=lambda p: True, runs=lambda plan, canon: True,
    instantiations=amp_configs.HMAC, config=lambda plan, i, p: (i, p), config_names="input/partials",
    template=lambda plan, i, p: conv_hmac.conv_partial_hmac_name(i, p), ensure_codelets=conv_hmac.ensure_codelets,
    fields=lambda target, plan: lambda batch, kr: {"inChanGrouping": plan.in_chans_per_group}, cycles=_hmac_cycles)


# -- VMAC: ConvPartialVerticalMac ----------------------------------------------------------------
@_memoised
def _vmac_cycles(s, bt, ft, kt, cgt, ict, oct_) -> int:
    """VMAC's items are kernel rows; its groups are conv-group grains."""
    return vmac_estimates.vmac_cycles(math.prod(ft) // max(ft[-1], 1), ft[-1], bt, math.prod(kt[:-1]), kt[-1],
                                      -(-cgt // s.cg_grain), ict, s.cg_grain, s.fp, s.workers)


CONV_PARTIAL_VERTICAL_MAC = ConvVertex(
    name="ConvPartialVerticalMac", plans=lambda p: True, runs=lambda plan, canon: True,
    instantiations=amp_configs.VMAC, config=lambda plan, i, p: (i, p, plan.conv_groups_per_group),
    config_names="input/partials/conv groups per group",
    template=lambda plan, i, p: conv_vmac.conv_partial_vmac_name(i, p, plan.conv_groups_per_group),
    ensure_codelets=conv_vmac.ensure_codelets,
    fields=lambda target, plan: lambda batch, kr: {"batchSize": batch}, cycles=_vmac_cycles)


# -- the methods ---------------------------------------------------------------------------------
_MAT_MUL_ONLY_AMP = "a matmul-shaped convolution runs AMP only (the matmul executor's ConvPartial1x1Out)"


def _vmac_refuses(p: ConvParams) -> Optional[str]:
    if is_mat_mul_shaped(p):
        return _MAT_MUL_ONLY_AMP
    if p.data_type != popsim.HALF or p.output_channels_per_group != 1:
        return "VMAC takes HALF inputs and one out-channel per conv group (PopLibs' vertex and model)"
    return None


#: the methods popsim's poplin runs, in PopLibs' order of preference (plan.METHODS): the
#: order breaks ties between equally ranked candidates
METHODS: Tuple[ConvMethod, ...] = (
    ConvMethod(
        kind="AMP", vertices=(CONV_PARTIAL_1X1_OUT, CONV_PARTIAL_NX1),
        candidates=cc.amp_candidates, rank=cc.amp_rank,
        describe=lambda c: f"AMP {c.method.conv_units} units x {c.method.conv_input_load_elems} inputs",
        report=lambda m: f"{m.conv_units} conv units x {m.conv_input_load_elems} input elements",
        detail=lambda plan: (f" ({plan.method.conv_units} conv units x {plan.method.conv_input_load_elems} input "
                             "load elements)"),
        refuses=lambda p: None,
        core=lambda s: 8 if s.float_acts else 4,
        # 1 unless the in-channel group is smaller than the chain (PopLibs' convUnitWeightHeight)
        chain_rows=lambda s: max(1, s.t.conv_unit_max_pipeline_depth * s.c.method.conv_input_load_elems
                                 // s.c.in_chans_per_group),
        passes=lambda s: -(-s.c.partial_chans_per_group // s.c.method.conv_units)),
    ConvMethod(
        kind="HMAC", vertices=(CONV_PARTIAL_HORIZONTAL_MAC,),
        # not for swapped operands: only a matmul-shaped convolution swaps, and HMAC does not run one
        candidates=lambda t, p, o, ti, ie, swap: [] if swap else cc.hmac_candidates(p, o, ti, ie),
        rank=cc.hmac_rank, describe=lambda c: "HMAC", report=lambda m: "ConvPartialHorizontalMac",
        detail=lambda plan: "",
        refuses=lambda p: _MAT_MUL_ONLY_AMP if is_mat_mul_shaped(p) else None,
        # a worker's least cycles per position and kernel position (hmac_estimates)
        core=lambda s: hmac_estimates.min_cycles_per_position(s.vw_in, s.float_acts, s.fp, s.c.in_chans_per_group,
                                                              s.c.partial_chans_per_group),
        chain_rows=lambda s: 1, passes=lambda s: 1, prunes=True),
    ConvMethod(
        kind="VMAC", vertices=(CONV_PARTIAL_VERTICAL_MAC,),
        candidates=lambda t, p, o, ti, ie, swap: [] if swap else cc.vmac_candidates(p, o, ti, ie),
        rank=cc.vmac_rank, describe=lambda c: f"VMAC {c.conv_groups_per_group} conv groups at once",
        report=lambda m: "", detail=lambda plan: f" ({plan.conv_groups_per_group} conv groups per group)",
        refuses=_vmac_refuses,
        # a worker's least cycles per item (one position and kernel row)
        core=lambda s: vmac_estimates.MIN_ITEM_CYCLES, chain_rows=lambda s: s.kernel[-1], passes=lambda s: 1,
        prunes=True),
)

#: the Plan.method.kind of each entry
RUNNABLE_METHODS = tuple(m.kind for m in METHODS)
_BY_KIND = {m.kind: m for m in METHODS}


def _not_run_here(kind: str, what: str) -> PoplibsError:
    return PoplibsError(f"{what}: the plan's method is {kind}, which does not run here (popsim's poplin runs "
                        f"{', '.join(RUNNABLE_METHODS)}; a matmul-shaped 1x1 convolution runs AMP only). Plan with "
                        "poplin.get_plan (it chooses only runnable vertices)")


def method_of(method, what: str) -> ConvMethod:
    """The entry of a plan's Method; a PoplibsError for a method popsim does not run."""
    entry = _BY_KIND.get(method.kind)
    if entry is None:
        raise _not_run_here(method.kind, what)
    return entry


def find(kind: str) -> Optional[ConvMethod]:
    """The entry of a method kind, None for one popsim does not run."""
    return _BY_KIND.get(kind)


def describe(cand: VertexCandidate) -> str:
    """A candidate as the plan report names it (its runner-up)."""
    method = _BY_KIND[cand.method.kind].describe(cand)
    return (f"{'swapped operands, ' if cand.swap_operands else ''}{method}, {cand.in_chans_per_group} in-chans x "
            f"{cand.partial_chans_per_group} out-chans per group")


def vertex_candidates(target, params: ConvParams, options: ConvOptions) -> List[VertexCandidate]:
    """Every candidate, in the order PopLibs prefers them (earlier wins ties): swapOperands
    first for matmul passes; then each method's (a planConstraints method: that method's
    only) by rank (effective MACs per cycle, then less padding), METHODS' order on ties."""
    pc = options.plan_constraints
    if params.data_type not in (popsim.FLOAT, popsim.HALF):
        return []
    if is_mat_mul_shaped(params):
        swaps = [True, False] if options.is_fully_connected else [False, True]
        if not options.is_fully_connected and pc.swap_operands is None:
            swaps = [False]
    else:
        swaps = [False]
    if pc.swap_operands is not None:
        swaps = [s for s in swaps if s == pc.swap_operands]
    tile_type, inter_type = partials_types(params, options)
    methods = [m for m in METHODS if pc.method in (None, m.kind)]
    out = []
    for swap in swaps:
        p = swap_operands_params(params) if swap else params
        ranked = [(*m.rank(target, p, cand), cand) for m in methods
                  for cand in m.candidates(target, params, options, tile_type, inter_type, swap)]
        ranked.sort(key=lambda r: r[:2])
        out.extend(r[2] for r in ranked)
    return out


__all__ = ["CONV_PARTIAL_1X1_OUT", "CONV_PARTIAL_HORIZONTAL_MAC", "CONV_PARTIAL_NX1", "CONV_PARTIAL_VERTICAL_MAC",
           "ConvMethod", "ConvVertex", "METHODS", "RUNNABLE_METHODS", "chain_rows", "describe", "find", "method_of",
           "vertex_candidates"]
