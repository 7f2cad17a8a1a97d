"""The element-wise vertices and their cycle estimators, made from the op table.

Each op and element type gives PopLibs' four vertices, named as popc names PopLibs'
explicit instantiations:

- ``popops::BinaryOp1D<ADD,float>``: a MultiVertex over one
  contiguous region (fields ``in1``, ``in2``, ``out``), each worker taking a contiguous
  chunk; ``...1DInPlace`` (``in1Out``, ``in2``);
- ``popops::BinaryOp2D<...>``: one worker's share of regions as VectorLists
  (``in1``, ``in2``, ``out``); ``...2DInPlace`` (``in1Out``, ``in2``);
- ``popops::UnaryOp1D/2D[InPlace]<EXPONENT,float>`` likewise
  with ``in``/``out`` or ``inOut``.

Each vertex is a template whose instantiations call the op's function from the table
(elementwise_ops.py), which the translator inlines into the loop. The estimators are
PopLibs' cycle estimators; a MultiVertex's estimate is PopLibs' tile-cycle figure,
which popsim charges as ceil(figure / workers) cycles on each of the tile's workers.
"""
import popsim
from popsim import FLOAT, InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex

from ..poputil import util
from ..poputil.vertex_helpers import chunk_begin, chunk_end
from .elementwise_ops import BY_TYPE
from .op_types import BinaryOpType, UnaryOpType

SUPERVISOR_OVERHEAD = 11  # basicOpSupervisorOverhead()
_EXT_CODELET_OPS = (BinaryOpType.ADD, BinaryOpType.SUBTRACT, BinaryOpType.MULTIPLY)

#: the operand types a BroadcastScalar vertex takes (its B is a FLOAT member for HALF data)
SCALAR_TYPES = ("FLOAT", "HALF", "INT", "UNSIGNED_INT")


def _instantiation(name: str, op, dtype):
    """The op's function for ``dtype`` operands and the result type, or a clear error."""
    spec = BY_TYPE[op]
    if dtype not in spec.types:
        raise popsim.PopsimError(f"vertex template {name}: {op.name} does not take {dtype.name} operands")
    return spec.body_for(dtype), spec.result_type(dtype)


# -- BinaryOp: in1 and in2 -> out, or in1Out and in2 -> in1Out --------------------------------------
@popsim.vertex_template("popops::BinaryOp1D")
def BinaryOp1D(op, dtype):
    f, out_type = _instantiation("popops::BinaryOp1D", op, dtype)

    class BinaryOp1D(MultiVertex):
        in1: Input[Vector[dtype]]
        in2: Input[Vector[dtype]]
        out: Output[Vector[out_type]]

        def compute(self, worker_id):
            n, w = len(self.out), self.num_workers()
            for i in range(chunk_begin(n, worker_id, w), chunk_end(n, worker_id, w)):
                self.out[i] = f(self.in1[i], self.in2[i])
            return True
    return BinaryOp1D


@popsim.vertex_template("popops::BinaryOp1DInPlace")
def BinaryOp1DInPlace(op, dtype):
    f, _ = _instantiation("popops::BinaryOp1DInPlace", op, dtype)

    class BinaryOp1DInPlace(MultiVertex):
        in1Out: InOut[Vector[dtype]]
        in2: Input[Vector[dtype]]

        def compute(self, worker_id):
            n, w = len(self.in1Out), self.num_workers()
            for i in range(chunk_begin(n, worker_id, w), chunk_end(n, worker_id, w)):
                self.in1Out[i] = f(self.in1Out[i], self.in2[i])
            return True
    return BinaryOp1DInPlace


@popsim.vertex_template("popops::BinaryOp2D")
def BinaryOp2D(op, dtype):
    f, out_type = _instantiation("popops::BinaryOp2D", op, dtype)

    class BinaryOp2D(Vertex):
        in1: Input[VectorList[dtype]]
        in2: Input[VectorList[dtype]]
        out: Output[VectorList[out_type]]

        def compute(self):
            for r in range(len(self.out)):
                for i in range(len(self.out[r])):
                    self.out[r][i] = f(self.in1[r][i], self.in2[r][i])
            return True
    return BinaryOp2D


@popsim.vertex_template("popops::BinaryOp2DInPlace")
def BinaryOp2DInPlace(op, dtype):
    f, _ = _instantiation("popops::BinaryOp2DInPlace", op, dtype)

    class BinaryOp2DInPlace(Vertex):
        in1Out: InOut[VectorList[dtype]]
        in2: Input[VectorList[dtype]]

        def compute(self):
            for r in range(len(self.in1Out)):
                for i in range(len(self.in1Out[r])):
                    self.in1Out[r][i] = f(self.in1Out[r][i], self.in2[r][i])
            return True
    return BinaryOp2DInPlace


# -- BroadcastScalar: a binary op whose second operand is one number, held by the vertex as a
# plain member B (no exchange, no broadcast view; a FLOAT for HALF data) ----------------------------
def _scalar_type(dtype):
    return FLOAT if dtype.name == "HALF" else dtype


@popsim.vertex_template("popops::BroadcastScalar1D")
def BroadcastScalar1D(op, dtype):
    f, out_type = _instantiation("popops::BroadcastScalar1D", op, dtype)
    scalar = _scalar_type(dtype)

    class BroadcastScalar1D(MultiVertex):
        in1: Input[Vector[dtype]]
        B: scalar
        out: Output[Vector[out_type]]

        def compute(self, worker_id):
            n, w = len(self.out), self.num_workers()
            for i in range(chunk_begin(n, worker_id, w), chunk_end(n, worker_id, w)):
                self.out[i] = f(self.in1[i], self.B)
            return True
    return BroadcastScalar1D


@popsim.vertex_template("popops::BroadcastScalar1DInPlace")
def BroadcastScalar1DInPlace(op, dtype):
    f, _ = _instantiation("popops::BroadcastScalar1DInPlace", op, dtype)
    scalar = _scalar_type(dtype)

    class BroadcastScalar1DInPlace(MultiVertex):
        in1Out: InOut[Vector[dtype]]
        B: scalar

        def compute(self, worker_id):
            n, w = len(self.in1Out), self.num_workers()
            for i in range(chunk_begin(n, worker_id, w), chunk_end(n, worker_id, w)):
                self.in1Out[i] = f(self.in1Out[i], self.B)
            return True
    return BroadcastScalar1DInPlace


@popsim.vertex_template("popops::BroadcastScalar2D")
def BroadcastScalar2D(op, dtype):
    f, out_type = _instantiation("popops::BroadcastScalar2D", op, dtype)
    scalar = _scalar_type(dtype)

    class BroadcastScalar2D(Vertex):
        in1: Input[VectorList[dtype]]
        B: scalar
        out: Output[VectorList[out_type]]

        def compute(self):
            for r in range(len(self.out)):
                for i in range(len(self.out[r])):
                    self.out[r][i] = f(self.in1[r][i], self.B)
            return True
    return BroadcastScalar2D


@popsim.vertex_template("popops::BroadcastScalar2DInPlace")
def BroadcastScalar2DInPlace(op, dtype):
    f, _ = _instantiation("popops::BroadcastScalar2DInPlace", op, dtype)
    scalar = _scalar_type(dtype)

    class BroadcastScalar2DInPlace(Vertex):
        in1Out: InOut[VectorList[dtype]]
        B: scalar

        def compute(self):
            for r in range(len(self.in1Out)):
                for i in range(len(self.in1Out[r])):
                    self.in1Out[r][i] = f(self.in1Out[r][i], self.B)
            return True
    return BroadcastScalar2DInPlace


# -- UnaryOp: in -> out, or inOut -> inOut ----------------------------------------------------------
@popsim.vertex_template("popops::UnaryOp1D")
def UnaryOp1D(op, dtype):
    f, out_type = _instantiation("popops::UnaryOp1D", op, dtype)

    class UnaryOp1D(MultiVertex):
        in_: Input[Vector[dtype]]
        out: Output[Vector[out_type]]

        def compute(self, worker_id):
            n, w = len(self.out), self.num_workers()
            for i in range(chunk_begin(n, worker_id, w), chunk_end(n, worker_id, w)):
                self.out[i] = f(self.in_[i])
            return True
    return UnaryOp1D


@popsim.vertex_template("popops::UnaryOp1DInPlace")
def UnaryOp1DInPlace(op, dtype):
    f, _ = _instantiation("popops::UnaryOp1DInPlace", op, dtype)

    class UnaryOp1DInPlace(MultiVertex):
        inOut: InOut[Vector[dtype]]

        def compute(self, worker_id):
            n, w = len(self.inOut), self.num_workers()
            for i in range(chunk_begin(n, worker_id, w), chunk_end(n, worker_id, w)):
                self.inOut[i] = f(self.inOut[i])
            return True
    return UnaryOp1DInPlace


@popsim.vertex_template("popops::UnaryOp2D")
def UnaryOp2D(op, dtype):
    f, out_type = _instantiation("popops::UnaryOp2D", op, dtype)

    class UnaryOp2D(Vertex):
        in_: Input[VectorList[dtype]]
        out: Output[VectorList[out_type]]

        def compute(self):
            for r in range(len(self.out)):
                for i in range(len(self.out[r])):
                    self.out[r][i] = f(self.in_[r][i])
            return True
    return UnaryOp2D


@popsim.vertex_template("popops::UnaryOp2DInPlace")
def UnaryOp2DInPlace(op, dtype):
    f, _ = _instantiation("popops::UnaryOp2DInPlace", op, dtype)

    class UnaryOp2DInPlace(Vertex):
        inOut: InOut[VectorList[dtype]]

        def compute(self):
            for r in range(len(self.inOut)):
                for i in range(len(self.inOut[r])):
                    self.inOut[r][i] = f(self.inOut[r][i])
            return True
    return UnaryOp2DInPlace


#: (binary?, 2D?, in place?) -> the vertex template
TEMPLATES = {(True, False, False): BinaryOp1D, (True, False, True): BinaryOp1DInPlace,
             (True, True, False): BinaryOp2D, (True, True, True): BinaryOp2DInPlace,
             (False, False, False): UnaryOp1D, (False, False, True): UnaryOp1DInPlace,
             (False, True, False): UnaryOp2D, (False, True, True): UnaryOp2DInPlace}
#: (2D?, in place?) -> the BroadcastScalar vertex template (binary ops with a number)
SCALAR_TEMPLATES = {(False, False): BroadcastScalar1D, (False, True): BroadcastScalar1DInPlace,
                    (True, False): BroadcastScalar2D, (True, True): BroadcastScalar2DInPlace}


# -- cycle estimators (PopLibs' cycle estimators) ------------------------------------------
# ``width`` below is PopLibs' natural vector width of the operand type, the target's
# vector_width(dtype) (target.getVectorWidth: FLOAT 2, HALF 4 on an IPU), passed in as the
# worker count is.
def binary_inner_cycles(op: BinaryOpType, dtype, n: int, width: int) -> int:
    """binaryOpInnerLoopCycles: ceil(n / elems per loop) x cycles per loop."""
    cycles, natural, unroll = BY_TYPE[op].perf_for(dtype)
    if natural:
        ext = dtype.name in ("FLOAT", "HALF") and op in _EXT_CODELET_OPS
        return -(-n // width) * (cycles + (2 if ext else 5))
    return -(-n // unroll) * cycles


def unary_inner_cycles(op: UnaryOpType, dtype, n: int, width: int) -> int:
    """unaryOpInnerLoopCycles: an unrolled loop, else basicOpLoopCycles."""
    cycles, natural, unroll = BY_TYPE[op].perf_for(dtype)
    if not natural and unroll > 0:
        return -(-n // unroll) * cycles
    width = width if natural else 1
    return (cycles + 4) * (n + width - 1) // width


def broadcast_scalar_cycles(op: BinaryOpType, dtype, two_d: bool, in_place: bool, sizes, workers: int,
                            width: int) -> int:
    """broadcastArithmetic1DCycleEstimate (PopLibs' cycle estimators) for the 1D vertex's
    tile cycles over the target's ``workers``; the 2D vertex, for which the reference gives
    no formula, as BinaryOp2D."""
    if two_d:
        return (20 if in_place else 5) + sum(binary_inner_cycles(op, dtype, n, width) for n in sizes)
    cycles, natural, unroll = BY_TYPE[op].perf_for(dtype)
    if natural:
        ext = dtype.name in ("FLOAT", "HALF") and op in _EXT_CODELET_OPS
        per_loop, elems = cycles + (1 if ext else 4), width
    else:
        per_loop, elems = cycles, unroll
    per_worker = -(-sizes[0] // workers)
    return workers * (20 + -(-per_worker // elems) * per_loop) + SUPERVISOR_OVERHEAD


def vertex_cycles(op, dtype, two_d: bool, in_place: bool, sizes, workers: int, width: int,
                  scalar: bool = False) -> int:
    """PopLibs' estimate for one element-wise vertex: tile cycles for a 1D MultiVertex
    over ``sizes[0]`` elements shared by the target's ``workers`` (PopLibs'
    numWorkerContexts; 6 on an IPU), worker cycles for a 2D vertex over regions ``sizes``;
    ``width``: the target's vector_width(dtype)."""
    if scalar:
        return broadcast_scalar_cycles(op, dtype, two_d, in_place, sizes, workers, width)
    if isinstance(op, BinaryOpType):
        if two_d:
            return (20 if in_place else 5) + sum(binary_inner_cycles(op, dtype, n, width) for n in sizes)
        per_worker = -(-sizes[0] // workers)
        start = 58 if in_place else (29 if dtype == FLOAT else 26)
        return workers * (start + binary_inner_cycles(op, dtype, per_worker, width)) + SUPERVISOR_OVERHEAD
    if two_d:
        return 20 + sum(unary_inner_cycles(op, dtype, n, width) for n in sizes)
    per_worker = -(-sizes[0] // workers)
    start = 55 if in_place else (33 if op is UnaryOpType.EXPONENT else 17)
    return workers * (start + unary_inner_cycles(op, dtype, per_worker, width)) + 9 + SUPERVISOR_OVERHEAD


def worker_cycles(op, dtype, two_d: bool, in_place: bool, sizes, workers: int, width: int,
                  scalar: bool = False) -> int:
    """The cycles each worker of the vertex spends on regions of ``sizes`` elements (a
    MultiVertex's tile figure shared out between its ``workers``)."""
    if two_d:
        return vertex_cycles(op, dtype, True, in_place, sizes, workers, width, scalar)
    return -(-vertex_cycles(op, dtype, False, in_place, sizes, workers, width, scalar) // workers)


def estimator(op, dtype, two_d: bool, in_place: bool, scalar: bool = False):
    """``fn(vertex_info, target)`` for graph.register_perf_estimator: worker_cycles of the
    vertex's output field. (popops' own ops set each vertex's estimate as they build it,
    from the same function; this serves vertices added by hand.)"""
    field = ("in1Out" if op in BinaryOpType else "inOut") if in_place else "out"

    def estimate(info, target):
        return worker_cycles(op, dtype, two_d, in_place, info.field_sizes(field) if two_d else
                             [info.field_size(field)], target.num_worker_contexts, target.vector_width(dtype),
                             scalar)
    return estimate


def _template_of(op, two_d: bool, in_place: bool, scalar: bool):
    return SCALAR_TEMPLATES[(two_d, in_place)] if scalar else TEMPLATES[(isinstance(op, BinaryOpType), two_d, in_place)]


def vertex_name(op, dtype, two_d: bool, in_place: bool, scalar: bool = False) -> str:
    """The name the vertex for ``op`` on ``dtype`` operands is registered under."""
    return _template_of(op, two_d, in_place, scalar).vertex_name(op, dtype)


def ensure_vertex(graph, op, dtype, two_d: bool, in_place: bool, scalar: bool = False) -> str:
    """Register the vertex (and its estimator) with ``graph`` once; return its name."""
    return util.ensure_vertex(graph, _template_of(op, two_d, in_place, scalar)[op, dtype],
                              estimator(op, dtype, two_d, in_place, scalar))
