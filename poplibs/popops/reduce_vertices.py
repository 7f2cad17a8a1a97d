"""The reduction vertices and their cycle estimator (PopLibs' popops/Reduce.hpp operations,
lib/popops/reduction/ReductionVertex.hpp names, CycleEstimationFunctions.cpp estimates).

One vertex template, PopLibs' general ("DEFAULT" specialisation) 2D reduce vertex:

- ``popops::Reduce<popops::ReduceAdd,float,float,false,popops::ReductionSpecialisation::DEFAULT>``:
  template arguments (operation, partials type, output type, update?, specialisation),
  spelled as PopLibs' getReductionVertexName/templateVertex spell them;
- ``popops::ScaledReduce<...>`` (same arguments) when the result is scaled by ``k``.

Fields, as PopLibs' computeReduce: ``out`` (VectorList: one output region per reduction
``r``; InOut when updating), ``partials`` (VectorList: the partials of every reduction one
after another), ``numPartials`` (how many partials each reduction has) and, scaled, ``k``
(a FLOAT scalar). A partial's length is a multiple of its output region's: element ``i``
goes into ``out[r][i % len(out[r])]`` (PopLibs' region wrapping). The estimate is a single
worker's cycles (one vertex per worker, as PopLibs connects them).
"""
import enum
import itertools
import math
from pathlib import Path

import numpy as np

import popsim
from popsim import BOOL, FLOAT, HALF, INT, InOut, Input, Output, Vector, VectorList, Vertex

from ..poputil import PoplibsError


class Operation(enum.Enum):
    """PopLibs' popops::Operation (OperationDef.hpp)."""
    ADD = "ReduceAdd"
    MUL = "ReduceMul"
    MIN = "ReduceMin"
    MAX = "ReduceMax"
    LOGICAL_AND = "ReduceAnd"
    LOGICAL_OR = "ReduceOr"
    SQUARE_ADD = "ReduceSquareAdd"
    LOG_ADD = "ReduceLogAdd"

    @property
    def cpp(self) -> str:
        """The operation's spelling in vertex names (PopLibs' getReductionVertexOpName)."""
        return f"popops::{self.value}"


class ReductionSpecialisation(enum.Enum):
    """PopLibs' vertex specialisations; popsim builds every reduction from DEFAULT."""
    DEFAULT = 0

    @property
    def cpp(self) -> str:
        return f"popops::ReductionSpecialisation::{self.name}"


#: the element types each operation takes (PopLibs' documentation, "Supported types")
OP_TYPES = {
    Operation.ADD: (FLOAT, HALF, INT), Operation.SQUARE_ADD: (FLOAT, HALF, INT), Operation.MUL: (FLOAT, HALF, INT),
    Operation.MIN: (FLOAT, HALF, INT), Operation.MAX: (FLOAT, HALF, INT), Operation.LOG_ADD: (FLOAT, HALF),
    Operation.LOGICAL_AND: (BOOL,), Operation.LOGICAL_OR: (BOOL,),
}
#: the operations that take ``update`` and ``scale`` (PopLibs' reduceWithOutputProgOrCss checks)
SCALABLE = (Operation.ADD, Operation.SQUARE_ADD, Operation.LOG_ADD)
_ACCUMULATING = (Operation.ADD, Operation.SQUARE_ADD)  # PopLibs' isAccumOp: the hardware accumulators
_VECTORISED = (Operation.ADD, Operation.SQUARE_ADD, Operation.MUL, Operation.MAX, Operation.MIN)

# -- the vertex: each operation's step is a helper function the translator inlines ---------------
def add(acc, x):
    return acc + x


def square_add(acc, x):
    return acc + x * x


def mul(acc, x):
    return acc * x


def min_(acc, x):
    return x if x < acc else acc


def max_(acc, x):
    return x if x > acc else acc


def logical_and(acc, x):
    return acc and x


def logical_or(acc, x):
    return acc or x


def log_add(acc, x):
    """log(exp(acc) + exp(x)) without overflow."""
    hi = x if x > acc else acc
    lo = acc if x > acc else x
    return hi if lo == float("-inf") else hi + math.log1p(math.exp(lo - hi))


#: operation -> (identity by type class, step)
STEPS = {
    Operation.ADD: ({"float": 0.0, "int": 0}, add),
    Operation.SQUARE_ADD: ({"float": 0.0, "int": 0}, square_add),
    Operation.MUL: ({"float": 1.0, "int": 1}, mul),
    Operation.MIN: ({"float": float("inf"), "int": 2147483647}, min_),
    Operation.MAX: ({"float": float("-inf"), "int": -2147483648}, max_),
    Operation.LOGICAL_AND: ({"bool": True}, logical_and),
    Operation.LOGICAL_OR: ({"bool": False}, logical_or),
    Operation.LOG_ADD: ({"float": float("-inf")}, log_add),
}


def _type_class(dtype) -> str:
    return "float" if dtype in (FLOAT, HALF) else "bool" if dtype == BOOL else "int"


def _reduce_class(op: Operation, partials_type, out_type, update: bool, scaled: bool) -> type:
    """One instantiation: each output accumulates its partials, and each partial's elements
    (``i``, ``i + n``, ... for an output region ``n`` wide), in order; a one-element output
    region deals a partial's elements round four accumulators (as PopLibs' vectorised
    accumulators do) combined in order at the end. HALF partials accumulate in float
    (PopLibs' AccType), and so do float results of int partials."""
    inits, step = STEPS[op]
    combine = add if op is Operation.SQUARE_ADD else step
    float_acc = "float" in (_type_class(partials_type), _type_class(out_type)) and "float" in inits
    init = inits["float" if float_acc else _type_class(partials_type)]
    is_log_add = op is Operation.LOG_ADD

    class Reduce(Vertex):
        if update:
            out: InOut[VectorList[out_type]]
        else:
            out: Output[VectorList[out_type]]
        partials: Input[VectorList[partials_type]]
        numPartials: Vector[int]
        if scaled:
            k: Input[float]

        def compute(self):
            pidx = 0
            for r in range(len(self.out)):
                orow = self.out[r]
                n = len(orow)
                count = self.numPartials[r]
                for o in range(n):
                    a0 = init
                    a1 = init
                    a2 = init
                    a3 = init
                    for p in range(pidx, pidx + count):
                        row = self.partials[p]
                        m = len(row)
                        if n == 1:
                            for i in range(0, m - 3, 4):
                                a0 = step(a0, row[i])
                                a1 = step(a1, row[i + 1])
                                a2 = step(a2, row[i + 2])
                                a3 = step(a3, row[i + 3])
                            for i in range(m - m % 4, m):
                                a0 = step(a0, row[i])
                        else:
                            for i in range(o, m, n):
                                a0 = step(a0, row[i])
                    acc = a0
                    if n == 1:
                        acc = combine(combine(combine(a0, a1), a2), a3)
                    value = acc
                    if scaled:  # (these ifs on the instantiation's constants are decided at translation)
                        if is_log_add:
                            value = acc + self.k  # for log-probabilities the scale is an add
                        elif float_acc:
                            value = acc * self.k
                        else:
                            value = acc * int(self.k)
                    if update:
                        if is_log_add:
                            orow[o] = log_add(value, orow[o])
                        else:
                            orow[o] = orow[o] + value
                    else:
                        orow[o] = value
                pidx += count
            return True
    return Reduce


def _template(scaled: bool):
    name = "popops::ScaledReduce" if scaled else "popops::Reduce"

    def factory(op, partials_type, out_type, update, specialisation):
        if not isinstance(op, Operation) or partials_type not in OP_TYPES[op] and op is not Operation.SQUARE_ADD:
            raise PoplibsError(f"reduce vertex: {op!r} does not take {partials_type!r} partials")
        return _reduce_class(op, partials_type, out_type, update, scaled)
    factory.__name__ = name.split("::")[1]
    return popsim.vertex_template(name)(factory)


TEMPLATES = {False: _template(False), True: _template(True)}


# -- cycle estimator (PopLibs' cycle estimators; PopLibs' getCyclesEstimateForReduce) ---------------
def _acc_vector_width(dtype) -> int:
    return 8 if dtype == HALF else 4 if dtype == FLOAT else 1


def reduce_cycles(op: Operation, partials_type, out_type, update: bool, partials_sizes, out_sizes,
                  num_partials, target) -> int:
    """Worker cycles of one DEFAULT reduce vertex: ``out_sizes[r]`` elements per output
    region, ``num_partials[r]`` partials each, ``partials_sizes`` all the partials' sizes."""
    cycles = 5 + 1 + 1  # entry/exit
    if op not in _VECTORISED:  # LOGICAL_AND/OR, LOG_ADD: C++ vertices
        per_op = 12 if op is Operation.LOG_ADD else 1
        conversion = 0 if out_type == partials_type else 1
        cycles += 12 * 2
        sizes = iter(partials_sizes)
        for count in num_partials:
            cycles += 8 + sum(22 + (24 + per_op + conversion) * next(sizes) for _ in range(count))
        return cycles
    accumulating = op in _ACCUMULATING
    op_width = _acc_vector_width(partials_type) if accumulating else target.vector_width(partials_type)
    data_path = target.vector_width(partials_type)  # elements per data-path-wide (64-bit) load
    out_width = target.vector_width(out_type)
    load = (2 if accumulating else 0) + 2 + op_width // min(op_width, data_path)
    checks = max(0, math.ceil(math.log2(op_width))) if op_width > 1 else 0

    def store(width):
        return (2 + update) * min(width, out_width) + accumulating

    cycles += 3 + 23  # load state
    sizes = list(partials_sizes)
    first = 0
    for size, count in zip(out_sizes, num_partials):
        outer, remaining = divmod(size, op_width)
        cycles += 16 + 6 + 2 * checks + 2
        cycles += outer * ((3 + 2 if accumulating else 3) + store(op_width) + 1) + outer * count * (7 + 3)
        for i in range(checks):
            if remaining & (1 << i):
                cycles += (3 + 1 if accumulating else 2) + store(1 << i) + count * (7 + 3)
        for psize in sizes[first:first + count]:
            accumulations = psize // size if size else 0
            cycles += outer * accumulations * (load + 3)
            for j in range(checks):
                width = 1 << j
                if remaining & width:
                    cycles += accumulations * (2 + width // min(width, data_path) + 3)
        first += count
    return cycles


def estimator(op: Operation, partials_type, out_type, update: bool):
    """``fn(vertex_info, target)`` for graph.register_perf_estimator."""
    def estimate(info, target):
        counts = info.initial_value("numPartials")
        counts = [] if counts is None else np.atleast_1d(counts).tolist()
        return reduce_cycles(op, partials_type, out_type, update, info.field_sizes("partials"),
                             info.field_sizes("out"), counts, target)
    return estimate


def vertex_name(op: Operation, partials_type, out_type, update: bool, scaled: bool) -> str:
    return TEMPLATES[scaled].vertex_name(op, partials_type, out_type, update, ReductionSpecialisation.DEFAULT)


#: the C++ codelet file of the vectorised instantiations (PopLibs' assembler ones), compiled
#: with the host compiler's optimiser on: the simulation's hot loops
CPP_CODELETS = Path(__file__).with_name("reduce_vertices.cpp")
CPP_FLAGS = "-O3"
_CPP_TYPES = (FLOAT, HALF)


def is_cpp(op: Operation, partials_type, out_type, scaled: bool) -> bool:
    """Whether an instantiation comes from CPP_CODELETS (else it is the Python template's)."""
    return op in _VECTORISED and not scaled and partials_type in _CPP_TYPES and out_type in _CPP_TYPES


def ensure_vertex(graph, op: Operation, partials_type, out_type, update: bool, scaled: bool) -> str:
    """Register the vertex (and its estimator) with ``graph`` once; return its name."""
    name = vertex_name(op, partials_type, out_type, update, scaled)
    if graph.has_codelet(name):
        return name
    if is_cpp(op, partials_type, out_type, scaled):
        graph.add_codelets(str(CPP_CODELETS), CPP_FLAGS)  # registers every instantiation in the file
        for key in itertools.product(_VECTORISED, _CPP_TYPES, _CPP_TYPES, (False, True)):
            graph.register_perf_estimator(vertex_name(*key, False), estimator(*key))
    else:
        graph.add_codelets(TEMPLATES[scaled][op, partials_type, out_type, update, ReductionSpecialisation.DEFAULT])
        graph.register_perf_estimator(name, estimator(op, partials_type, out_type, update))
    return name
