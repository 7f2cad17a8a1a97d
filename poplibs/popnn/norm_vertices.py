"""The norms' own vertex: PopLibs' ``poplin::InverseStdDeviation<MeanType,PowerType,OutType,
stableAlgo>`` (PopLibs writes it in poplin's codelets; the norms of popnn are its only
users), with PopLibs' cycle estimator.

Per element of each region (VectorLists ``mean``, ``power``, ``iStdDev``; plain state
``eps`` and ``scaleVar``), computed in float32 as PopLibs' codelet does:

- ``stableAlgo`` false: ``power`` is the mean of squares; ``var = max(power - mean², 0)``
  (rounding may make the difference negative), ``iStdDev = 1 / sqrt((var + eps) · scaleVar)``;
- ``stableAlgo`` true: ``power`` is already the mean of squared deviations:
  ``iStdDev = 1 / sqrt((power + eps) · scaleVar)``.

``scaleVar`` is ``n / (n - 1)`` for an unbiased estimate, else 1 (applied after ``eps``,
as PopLibs does).
"""
import math  # read by the vertex code

import popsim
from popsim import FLOAT, HALF, Input, Output, VectorList, Vertex

from ..poputil import per_tile
from ..poputil.util import ensure_vertex
from ..poputil.vertex_helpers import chunk_begin, chunk_end

__all__ = ["InverseStdDeviation", "inverse_std_deviation_cycles", "add_inverse_std_deviation", "NormStatisticOp",
           "NormStatisticOp1D", "STAT_OPS"]

VERTEX = "poplin::InverseStdDeviation"


@popsim.vertex_template(VERTEX, mean_type=[FLOAT, HALF], power_type=[FLOAT, HALF], out_type=[FLOAT, HALF],
                        stable=[False, True])
def InverseStdDeviation(mean_type, power_type, out_type, stable):
    STABLE = stable  # noqa: N806 - a constant of compute, folded by the translator

    class InverseStdDeviation(Vertex):
        mean: Input[VectorList[mean_type]]
        power: Input[VectorList[power_type]]
        iStdDev: Output[VectorList[out_type]]
        scaleVar: FLOAT
        eps: FLOAT

        def compute(self):
            for r in range(len(self.mean)):
                for i in range(len(self.mean[r])):
                    if STABLE:
                        variance = (self.power[r][i] + self.eps) * self.scaleVar
                    else:
                        m = self.mean[r][i]
                        variance = self.power[r][i] - m * m
                        if variance < 0.0:
                            variance = 0.0
                        variance = (variance + self.eps) * self.scaleVar
                    self.iStdDev[r][i] = 1.0 / math.sqrt(variance)
            return True
    return InverseStdDeviation


def inverse_std_deviation_cycles(sizes, data_path_width: int = 64) -> int:
    """PopLibs' estimator (poplinCycleEstimators.cpp): float intermediates, vectors of
    dataPathWidth/32 elements at 3 + width cycles each (the inverse square root scalar):
    ``6 + Σ_regions (4 + (3 + w) · ceil(n / w))``."""
    width = data_path_width // 32
    return 6 + sum(4 + (3 + width) * -(-n // width) for n in sizes)


def _vertex_type(graph, mean_type, power_type, out_type, stable: bool) -> str:
    return ensure_vertex(graph, InverseStdDeviation[mean_type, power_type, out_type, stable],
                         lambda info, target: inverse_std_deviation_cycles(info.field_sizes("mean")))


def add_inverse_std_deviation(graph, mean, power, eps: float, scale_var: float, out_type, stable: bool, prog,
                              name: str):
    """A new tensor mapped like ``mean`` (a 1-D tensor; ``power`` has its shape): the
    inverse standard deviations, one compute set of InverseStdDeviation vertices on the
    tiles of ``mean``, each tile's regions split between its workers (grain: the vector
    width of ``out_type``, at least two grains a worker), as PopLibs' computeInvStdDev."""
    inv_std = graph.add_variable(out_type, tuple(mean.shape), f"{name}/iStdDev")
    graph.set_tile_mapping(inv_std, graph.get_tile_mapping(mean))
    vertex_type = _vertex_type(graph, mean.dtype, power.dtype, out_type, stable)
    grain = 2 if out_type == FLOAT else 4
    cs = graph.add_compute_set(f"{name}/iStdDev")
    for tile, regions in per_tile.tile_regions(graph, inv_std):
        for group in per_tile.group_regions(graph.target, regions, "workers", grain, 2 * grain):
            vertex = graph.add_vertex(cs, vertex_type, {
                "mean": per_tile.region_views(mean, group), "power": per_tile.region_views(power, group),
                "iStdDev": per_tile.region_views(inv_std, group)})
            graph.set_initial_value(vertex["eps"], float(eps))
            graph.set_initial_value(vertex["scaleVar"], float(scale_var))
            graph.set_tile_mapping(vertex, tile)
    prog.add(popsim.program.Execute(cs))
    return inv_std


# -- element-wise ops with per-statistic operands ----------------------------------------------
# PopLibs multiplies and adds the per-channel vectors with popops' element-wise ops, whose
# vector-broadcast vertices (BroadcastVectorInner2D: a work list of (length, block count) per
# region, the region being `block count` repeats of a `length`-long slice of the channel
# vector) read each channel value once per block. popsim's popops has no such path: a
# broadcast operand is exchanged element by element (about 800,000 cycles per operand for
# [32, 16, 28, 28]). These vertices are that path for the norms. Each region of the data is a
# few pieces; a piece is ``pieceCount`` blocks of ``pieceLen`` elements whose statistics are
# ``pieceStat``, ``pieceStat + 1``, ... (a channel group repeated over the positions of a
# channels-innermost activation), or, with ``pieceLen`` 1, a run of ``pieceCount`` elements
# sharing one statistic (a channels-outermost one). State is per piece, not per element.

# Each op's element from its datum x and statistics a (, b, c), GRADIENT's second datum y
# last: the vertices call these, and the translator inlines them. Every one takes the same
# parameters, all but x and a defaulted (an op passes only the operands it has), because the
# translator inlines the calls of every branch before the constants of compute rule branches
# out, so each call must fit every op's function.
def centre(x, a, b=0.0, c=0.0, y=0.0):
    return x - a


def whiten(x, a, b=0.0, c=0.0, y=0.0):
    return (x - a) * b


def scale(x, a, b=0.0, c=0.0, y=0.0):
    return x * a


def affine(x, a, b=0.0, c=0.0, y=0.0):
    return x * a + b


def gradient(x, a, b=0.0, c=0.0, y=0.0):
    return (x + a + y * b) * c


# op: (number of data operands, number of statistics operands, the element's function). Each
# operand is used once, so an op's arithmetic ops are one fewer than its operands (the
# estimates of norm_stat_ops count them so).
STAT_OPS = {
    "CENTRE": (1, 1, centre),
    "WHITEN": (1, 2, whiten),
    "SCALE": (1, 1, scale),
    "AFFINE": (1, 2, affine),
    "GRADIENT": (2, 3, gradient),
}
STAT_OP_VERTEX = "popnn::NormStatisticOp"


def _operands(base, data, stat, stats: int):
    """The base class of both forms: the fields they declare first (a vertex class's fields
    follow its bases'), ``out`` and the data operands of type ``data``, then the ``stats``
    statistics operands of type ``stat``."""
    class StatOperands(base):
        out: Output[data]
        in1: Input[data]
        if stats == 3:
            in2: Input[data]
        a: stat
        if stats >= 2:
            b: stat
        if stats == 3:
            c: stat
    return StatOperands


@popsim.vertex_template(STAT_OP_VERTEX, op=list(STAT_OPS), dtype=[FLOAT, HALF])
def NormStatisticOp(op, dtype):
    # constants of compute: the front end checks and compiles only the branch each takes
    STATS = STAT_OPS[op][1]  # noqa: N806 - statistics operands: a; a, b; a, b, c (and a second datum)
    element = STAT_OPS[op][2]
    pieces = popsim.Vector[popsim.UNSIGNED_INT]

    class NormStatisticOp(_operands(Vertex, VectorList[dtype], Input[popsim.Vector[dtype]], STATS)):
        regionPieces: pieces  # pieces per region
        pieceLen: pieces      # statistics per block (1: one statistic for the piece's run)
        pieceCount: pieces    # blocks
        pieceStat: pieces     # the first statistic (an index into a)

        def compute(self):
            k = 0
            for r in range(len(self.out)):
                i = 0
                for q in range(self.regionPieces[r]):
                    n = int(self.pieceLen[k])  # int32, as i and j: the loops over j vectorise
                    m = int(self.pieceCount[k])
                    s = int(self.pieceStat[k])
                    if n == 1:
                        a = self.a[s]
                        if STATS >= 2:
                            b = self.b[s]
                        if STATS == 3:
                            c = self.c[s]
                        for j in range(i, i + m):
                            if STATS == 3:
                                self.out[r][j] = element(self.in1[r][j], a, b, c, self.in2[r][j])
                            elif STATS == 2:
                                self.out[r][j] = element(self.in1[r][j], a, b)
                            else:
                                self.out[r][j] = element(self.in1[r][j], a)
                        i += m
                    else:
                        for blk in range(m):
                            for j in range(n):
                                if STATS == 3:
                                    self.out[r][i + j] = element(self.in1[r][i + j], self.a[s + j], self.b[s + j],
                                                                 self.c[s + j], self.in2[r][i + j])
                                elif STATS == 2:
                                    self.out[r][i + j] = element(self.in1[r][i + j], self.a[s + j], self.b[s + j])
                                else:
                                    self.out[r][i + j] = element(self.in1[r][i + j], self.a[s + j])
                            i += n
                    k += 1
            return True
    return NormStatisticOp


# PopLibs' BroadcastVectorInner1D: one MultiVertex for a tile whose data is one region, its
# workers sharing out each piece's blocks (runs: elements), contiguously. Same pieces.
@popsim.vertex_template(STAT_OP_VERTEX + "1D", op=list(STAT_OPS), dtype=[FLOAT, HALF])
def NormStatisticOp1D(op, dtype):
    STATS = STAT_OPS[op][1]  # noqa: N806 - a constant of compute, as NormStatisticOp's
    element = STAT_OPS[op][2]
    pieces = popsim.Vector[popsim.UNSIGNED_INT]

    class NormStatisticOp1D(_operands(popsim.MultiVertex, popsim.Vector[dtype], Input[popsim.Vector[dtype]], STATS)):
        pieceLen: pieces
        pieceCount: pieces
        pieceStat: pieces

        def compute(self, worker_id):
            i = 0
            for k in range(len(self.pieceLen)):
                n = int(self.pieceLen[k])  # int32, as i and j: the loops over j vectorise
                m = int(self.pieceCount[k])
                s = int(self.pieceStat[k])
                w = self.num_workers()
                for blk in range(chunk_begin(m, worker_id, w), chunk_end(m, worker_id, w)):
                    at = i + blk * n  # the block's first element: j's loop then runs unchecked
                    for j in range(n):
                        if STATS == 3:
                            self.out[at + j] = element(self.in1[at + j], self.a[s + j], self.b[s + j],
                                                       self.c[s + j], self.in2[at + j])
                        elif STATS == 2:
                            self.out[at + j] = element(self.in1[at + j], self.a[s + j], self.b[s + j])
                        else:
                            self.out[at + j] = element(self.in1[at + j], self.a[s + j])
                i += n * m
            return True
    return NormStatisticOp1D
