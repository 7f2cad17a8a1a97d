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

The vertex code is written out from a source template and the op's body (vertex code
cannot call helper functions, so each op's expression goes into the loop itself) and
compiled like any Python vertex; the text is kept in ``linecache`` so that the
translator, tracebacks and pdb in interpreted mode see it. The estimators are
PopLibs' cycle estimators; a MultiVertex's estimate is PopLibs' tile-cycle figure,
which popsim charges as ceil(figure / workers) cycles on each of the tile's workers.
"""
import itertools
import textwrap


import popsim
from popsim import FLOAT

from ..poputil.generated_vertex import vertex_from_source
from .elementwise_ops import BY_TYPE, ElementwiseOp
from .op_types import BinaryOpType, UnaryOpType

WORKERS = 6  # PopLibs' numWorkerContexts in its estimators
SUPERVISOR_OVERHEAD = 11  # basicOpSupervisorOverhead()
_EXT_CODELET_OPS = (BinaryOpType.ADD, BinaryOpType.SUBTRACT, BinaryOpType.MULTIPLY)

def chunk_loop(field: str) -> str:
    """A MultiVertex worker's loop over its own contiguous chunk of ``field``: the simulated
    cycles come from the estimator, so the split only decides host speed, and contiguous
    chunks let the compiled loop run unchecked and vectorised (interleaved elements, as
    PopLibs' assembly takes them, would not)."""
    return (f"chunk = (len({field}) + self.num_workers() - 1) // self.num_workers()\n"
            f"for i in range(worker_id * chunk, min(len({field}), worker_id * chunk + chunk)):")


_HEADS = {
    # (binary?, 2D?, in place?) -> (base class, fields, loop header, element access)
    (True, False, False): ("MultiVertex", "in1: Input[Vector[IN]]\nin2: Input[Vector[IN]]\nout: Output[Vector[OUT]]",
                           chunk_loop("self.out"),
                           ("self.in1[i]", "self.in2[i]", "self.out[i]")),
    (True, False, True): ("MultiVertex", "in1Out: InOut[Vector[IN]]\nin2: Input[Vector[IN]]",
                          chunk_loop("self.in1Out"),
                          ("self.in1Out[i]", "self.in2[i]", "self.in1Out[i]")),
    (True, True, False): ("Vertex", "in1: Input[VectorList[IN]]\nin2: Input[VectorList[IN]]\n"
                          "out: Output[VectorList[OUT]]",
                          "for r in range(len(self.out)):\n    for i in range(len(self.out[r])):",
                          ("self.in1[r][i]", "self.in2[r][i]", "self.out[r][i]")),
    (True, True, True): ("Vertex", "in1Out: InOut[VectorList[IN]]\nin2: Input[VectorList[IN]]",
                         "for r in range(len(self.in1Out)):\n    for i in range(len(self.in1Out[r])):",
                         ("self.in1Out[r][i]", "self.in2[r][i]", "self.in1Out[r][i]")),
    (False, False, False): ("MultiVertex", "in_: Input[Vector[IN]]\nout: Output[Vector[OUT]]",
                            chunk_loop("self.out"),
                            ("self.in_[i]", None, "self.out[i]")),
    (False, False, True): ("MultiVertex", "inOut: InOut[Vector[IN]]",
                           chunk_loop("self.inOut"),
                           ("self.inOut[i]", None, "self.inOut[i]")),
    (False, True, False): ("Vertex", "in_: Input[VectorList[IN]]\nout: Output[VectorList[OUT]]",
                           "for r in range(len(self.out)):\n    for i in range(len(self.out[r])):",
                           ("self.in_[r][i]", None, "self.out[r][i]")),
    (False, True, True): ("Vertex", "inOut: InOut[VectorList[IN]]",
                          "for r in range(len(self.inOut)):\n    for i in range(len(self.inOut[r])):",
                          ("self.inOut[r][i]", None, "self.inOut[r][i]")),
}
# BroadcastScalar: a binary op whose second operand is one number, held by the vertex as a
# plain member B (no exchange, no broadcast view): (2D?, in place?) -> as in _HEADS.
_SCALAR_HEADS = {
    (False, False): ("MultiVertex", "in1: Input[Vector[IN]]\nB: SCALAR\nout: Output[Vector[OUT]]", chunk_loop("self.out"),
                     ("self.in1[i]", "self.B", "self.out[i]")),
    (False, True): ("MultiVertex", "in1Out: InOut[Vector[IN]]\nB: SCALAR", chunk_loop("self.in1Out"),
                    ("self.in1Out[i]", "self.B", "self.in1Out[i]")),
    (True, False): ("Vertex", "in1: Input[VectorList[IN]]\nB: SCALAR\nout: Output[VectorList[OUT]]",
                    "for r in range(len(self.out)):\n    for i in range(len(self.out[r])):",
                    ("self.in1[r][i]", "self.B", "self.out[r][i]")),
    (True, True): ("Vertex", "in1Out: InOut[VectorList[IN]]\nB: SCALAR",
                   "for r in range(len(self.in1Out)):\n    for i in range(len(self.in1Out[r])):",
                   ("self.in1Out[r][i]", "self.B", "self.in1Out[r][i]")),
}
#: the operand types a BroadcastScalar vertex takes (its B is a FLOAT member for HALF data)
SCALAR_TYPES = ("FLOAT", "HALF", "INT", "UNSIGNED_INT")
_counter = itertools.count()


def vertex_source(spec: ElementwiseOp, dtype, two_d: bool, in_place: bool, scalar: bool = False) -> str:
    """The Python-vertex source of one instantiation (a class named ``V``)."""
    heads = _SCALAR_HEADS[(two_d, in_place)] if scalar else _HEADS[(spec.is_binary, two_d, in_place)]
    base, fields, loop, (x, y, out) = heads
    args = "self" if two_d else "self, worker_id"
    *setup, value = spec.body_for(dtype).split("\n")
    depth = sum(line.lstrip().startswith("for ") for line in loop.split("\n"))
    inner = [f"x = {x}"] + ([f"y = {y}"] if y else []) + setup + [f"{out} = {value}"]
    body = loop + "\n" + textwrap.indent("\n".join(inner), "    " * depth)
    return (f"class V({base}):\n{textwrap.indent(fields, '    ')}\n\n    def compute({args}):\n"
            f"{textwrap.indent(body, '        ')}\n        return True\n")


def _make_class(spec: ElementwiseOp, dtype, two_d: bool, in_place: bool, scalar: bool = False) -> type:
    label = f"popops {spec.op.name} {dtype.name} {'2D' if two_d else '1D'}{' in place' if in_place else ''}"
    return vertex_from_source(vertex_source(spec, dtype, two_d, in_place, scalar), label, IN=dtype,
                              OUT=spec.result_type(dtype), SCALAR=FLOAT if dtype.name == "HALF" else dtype)


def _template(kind: str, two_d: bool, in_place: bool, scalar: bool = False):
    name = f"popops::{kind}{'2D' if two_d else '1D'}{'InPlace' if in_place else ''}"

    def factory(op, dtype):
        spec = BY_TYPE[op]
        if dtype not in spec.types:
            raise popsim.PopsimError(f"vertex template {name}: {op.name} does not take {dtype.name} operands")
        return _make_class(spec, dtype, two_d, in_place, scalar)

    factory.__name__ = name.split("::")[1]
    return popsim.vertex_template(name)(factory)


#: (binary?, 2D?, in place?) -> the vertex template
TEMPLATES = {(b, d, p): _template("BinaryOp" if b else "UnaryOp", d, p)
             for b in (True, False) for d in (False, True) for p in (False, True)}
#: (2D?, in place?) -> the BroadcastScalar vertex template (binary ops with a number)
SCALAR_TEMPLATES = {(d, p): _template("BroadcastScalar", d, p, scalar=True) for d in (False, True) for p in (False, True)}


# -- cycle estimators (PopLibs' cycle estimators) ------------------------------------------
def vector_width(dtype) -> int:
    """PopLibs' natural vector width: 64 bits' worth of elements (float 2, half 4)."""
    return max(1, 8 // dtype.size)


def binary_inner_cycles(op: BinaryOpType, dtype, n: int) -> int:
    """binaryOpInnerLoopCycles: ceil(n / elems per loop) x cycles per loop."""
    cycles, natural, unroll = BY_TYPE[op].perf_for(dtype)
    if natural:
        ext = dtype.name in ("FLOAT", "HALF") and op in _EXT_CODELET_OPS
        return -(-n // vector_width(dtype)) * (cycles + (2 if ext else 5))
    return -(-n // unroll) * cycles


def unary_inner_cycles(op: UnaryOpType, dtype, n: int) -> int:
    """unaryOpInnerLoopCycles: an unrolled loop, else basicOpLoopCycles."""
    cycles, natural, unroll = BY_TYPE[op].perf_for(dtype)
    if not natural and unroll > 0:
        return -(-n // unroll) * cycles
    width = vector_width(dtype) if natural else 1
    return (cycles + 4) * (n + width - 1) // width


def broadcast_scalar_cycles(op: BinaryOpType, dtype, two_d: bool, in_place: bool, sizes) -> int:
    """broadcastArithmetic1DCycleEstimate (PopLibs' cycle estimators) for the 1D vertex's
    tile cycles; the 2D vertex, for which the reference gives no formula, as BinaryOp2D."""
    if two_d:
        return (20 if in_place else 5) + sum(binary_inner_cycles(op, dtype, n) for n in sizes)
    cycles, natural, unroll = BY_TYPE[op].perf_for(dtype)
    if natural:
        ext = dtype.name in ("FLOAT", "HALF") and op in _EXT_CODELET_OPS
        per_loop, elems = cycles + (1 if ext else 4), vector_width(dtype)
    else:
        per_loop, elems = cycles, unroll
    per_worker = -(-sizes[0] // WORKERS)
    return WORKERS * (20 + -(-per_worker // elems) * per_loop) + SUPERVISOR_OVERHEAD


def vertex_cycles(op, dtype, two_d: bool, in_place: bool, sizes, scalar: bool = False) -> int:
    """PopLibs' estimate for one element-wise vertex: tile cycles for a 1D MultiVertex
    over ``sizes[0]`` elements, worker cycles for a 2D vertex over regions ``sizes``."""
    if scalar:
        return broadcast_scalar_cycles(op, dtype, two_d, in_place, sizes)
    if isinstance(op, BinaryOpType):
        if two_d:
            return (20 if in_place else 5) + sum(binary_inner_cycles(op, dtype, n) for n in sizes)
        per_worker = -(-sizes[0] // WORKERS)
        start = 58 if in_place else (29 if dtype == FLOAT else 26)
        return WORKERS * (start + binary_inner_cycles(op, dtype, per_worker)) + SUPERVISOR_OVERHEAD
    if two_d:
        return 20 + sum(unary_inner_cycles(op, dtype, n) for n in sizes)
    per_worker = -(-sizes[0] // WORKERS)
    start = 55 if in_place else (33 if op is UnaryOpType.EXPONENT else 17)
    return WORKERS * (start + unary_inner_cycles(op, dtype, per_worker)) + 9 + SUPERVISOR_OVERHEAD


def worker_cycles(op, dtype, two_d: bool, in_place: bool, sizes, workers: int, scalar: bool = False) -> int:
    """The cycles each worker of the vertex spends on regions of ``sizes`` elements (a
    MultiVertex's tile figure shared out between its ``workers``)."""
    if two_d:
        return vertex_cycles(op, dtype, True, in_place, sizes, scalar)
    return -(-vertex_cycles(op, dtype, False, in_place, sizes, scalar) // workers)


def estimator(op, dtype, two_d: bool, in_place: bool, scalar: bool = False):
    """``fn(vertex_info, target)`` for graph.register_perf_estimator: worker_cycles of the
    vertex's output field. (popops' own ops set each vertex's estimate as they build it,
    from the same function; this serves vertices added by hand.)"""
    field = ("in1Out" if op in BinaryOpType else "inOut") if in_place else "out"

    def estimate(info, target):
        return worker_cycles(op, dtype, two_d, in_place, info.field_sizes(field) if two_d else
                             [info.field_size(field)], target.num_worker_contexts, scalar)
    return estimate


def _template_of(op, two_d: bool, in_place: bool, scalar: bool):
    return SCALAR_TEMPLATES[(two_d, in_place)] if scalar else TEMPLATES[(isinstance(op, BinaryOpType), two_d, in_place)]


def vertex_name(op, dtype, two_d: bool, in_place: bool, scalar: bool = False) -> str:
    """The name the vertex for ``op`` on ``dtype`` operands is registered under."""
    return _template_of(op, two_d, in_place, scalar).vertex_name(op, dtype)


def ensure_vertex(graph, op, dtype, two_d: bool, in_place: bool, scalar: bool = False) -> str:
    """Register the vertex (and its estimator) with ``graph`` once; return its name."""
    name = vertex_name(op, dtype, two_d, in_place, scalar)
    if not graph.has_codelet(name):
        graph.add_codelets(_template_of(op, two_d, in_place, scalar)[op, dtype])
        graph.register_perf_estimator(name, estimator(op, dtype, two_d, in_place, scalar))
    return name
