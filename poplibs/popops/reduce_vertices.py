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
import re
import textwrap
from pathlib import Path

import numpy as np

import popsim
from popsim import BOOL, FLOAT, HALF, INT

from ..poputil.generated_vertex import vertex_from_source
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

# Vertex code per operation: (initial value by type class, the update of ``acc`` by ``x``)
_LOG_ADD = ("hi = x if x > acc else acc\nlo = acc if x > acc else x\n"
            "acc = hi if lo == float(\"-inf\") else hi + math.log1p(math.exp(lo - hi))")
_BODIES = {
    Operation.ADD: ({"float": "0.0", "int": "0"}, "acc = acc + x"),
    Operation.SQUARE_ADD: ({"float": "0.0", "int": "0"}, "acc = acc + x * x"),
    Operation.MUL: ({"float": "1.0", "int": "1"}, "acc = acc * x"),
    Operation.MIN: ({"float": "float(\"inf\")", "int": "2147483647"}, "acc = x if x < acc else acc"),
    Operation.MAX: ({"float": "float(\"-inf\")", "int": "-2147483647 - 1"}, "acc = x if x > acc else acc"),
    Operation.LOGICAL_AND: ({"bool": "True"}, "acc = acc and x"),
    Operation.LOGICAL_OR: ({"bool": "False"}, "acc = acc or x"),
    Operation.LOG_ADD: ({"float": "float(\"-inf\")"}, _LOG_ADD),
}
_counter = itertools.count()


def _type_class(dtype) -> str:
    return "float" if dtype in (FLOAT, HALF) else "bool" if dtype == BOOL else "int"


def vertex_source(op: Operation, partials_type, out_type, update: bool, scaled: bool) -> str:
    """The Python-vertex source of one instantiation (a class named ``V``)."""
    inits, step = _BODIES[op]
    # HALF partials accumulate in float (PopLibs' AccType); so do float results of int partials
    acc_class = "float" if "float" in (_type_class(partials_type), _type_class(out_type)) and "float" in inits \
        else _type_class(partials_type)
    init = inits[acc_class]
    if op is Operation.LOG_ADD:
        value = "acc + self.k" if scaled else "acc"  # for log-probabilities the scale is an add
    elif scaled:
        value = "acc * self.k" if acc_class == "float" else "acc * int(self.k)"
    else:
        value = "acc"
    store = "self.out[r][o] = value"
    if update and op is Operation.LOG_ADD:
        store = ("old = self.out[r][o]\nhi = old if old > value else value\nlo = value if old > value else old\n"
                 "self.out[r][o] = hi if lo == float(\"-inf\") else hi + math.log1p(math.exp(lo - hi))")
    elif update:
        store = "self.out[r][o] = self.out[r][o] + value"
    fields = (f"out: {'InOut' if update else 'Output'}[VectorList[OUT]]\npartials: Input[VectorList[PARTIALS]]\n"
              "numPartials: Vector[int]" + ("\nk: Input[float]" if scaled else ""))
    body = _body(op, init, step, value, store)
    return (f"class V(Vertex):\n{textwrap.indent(fields, '    ')}\n\n    def compute(self):\n"
            f"{textwrap.indent(body, ' ' * 8)}\n")


def _renamed(code: str, acc: str, x: str) -> str:
    return re.sub(r"\bx\b", x, re.sub(r"\bacc\b", acc, code))


#: output block sizes of the vertex's inner loops (longest first), then one at a time
_BLOCKS = (16, 4)


def _body(op, init, step, value, store) -> str:
    """``compute``: outputs in blocks of 16, then 4 (an accumulator each; a partial's
    adjacent elements a step) and then one at a time, for one-element output regions a
    partial's elements dealt round four accumulators (as PopLibs' vectorised accumulators)
    combined at the end. Inner loops index ``row[i + c]`` only, which the loop-versioning
    pass checks once per loop; a partial one output region wide (the common case after the
    first stage) is read ``row[o + c]`` without a loop. The output row is fetched once per
    region."""
    combine = _BODIES[Operation.ADD][1] if op is Operation.SQUARE_ADD else step

    def steps(indent, indices):
        code = "\n".join(f"x{k} = row[{index}]\n" + _renamed(step, f"a{k}", f"x{k}") for k, index in indices)
        return textwrap.indent(code, " " * indent)

    def inits(count):
        return "".join(f"        a{k} = {init}\n" for k in range(count))

    def block(size):
        indices = [(k, f"i + {k}" if k else "i") for k in range(size)]
        stores = "".join(f"        acc = a{k}\n        value = {value}\n"
                         f"{textwrap.indent(store.replace('[o]', f'[o + {k}]'), ' ' * 8)}\n" for k in range(size))
        direct = [(k, f"o + {k}" if k else "o") for k in range(size)]
        return (f"    while o + {size} <= n:\n{inits(size)}"
                f"        for p in range(pidx, pidx + count):\n            row = self.partials[p]\n"
                f"            if len(row) == n:\n{steps(16, direct)}\n            else:\n"
                f"                for i in range(o, len(row) - {size - 1}, n):\n{steps(20, indices)}\n"
                f"{stores}        o += {size}\n")

    gather = "acc = a0\n" + "\n".join(_renamed(combine, "acc", f"a{k}") for k in (1, 2, 3))
    four = [(k, f"i + {k}" if k else "i") for k in range(4)]
    store = store.replace("self.out[r]", "orow")
    return ("pidx = 0\nfor r in range(len(self.out)):\n    orow = self.out[r]\n    n = len(orow)\n"
            "    count = self.numPartials[r]\n"
            "    o = 0\n" + "".join(block(size) for size in _BLOCKS)
            + f"    while o < n:\n{inits(4)}"
            f"        for p in range(pidx, pidx + count):\n            row = self.partials[p]\n"
            f"            m = len(row)\n            if n == 1:\n"
            f"                for i in range(0, m - 3, 4):\n{steps(20, four)}\n"
            f"                for i in range(m - m % 4, m):\n{steps(20, [(0, 'i')])}\n"
            f"            else:\n                for i in range(o, m, n):\n{steps(20, [(0, 'i')])}\n"
            f"{textwrap.indent(gather, ' ' * 8)}\n        value = {value}\n"
            f"{textwrap.indent(store, ' ' * 8)}\n        o += 1\n    pidx += count\nreturn True")


def _factory(scaled: bool):
    def factory(op, partials_type, out_type, update, specialisation):
        if not isinstance(op, Operation) or partials_type not in OP_TYPES[op] and op is not Operation.SQUARE_ADD:
            raise PoplibsError(f"reduce vertex: {op!r} does not take {partials_type!r} partials")
        source = vertex_source(op, partials_type, out_type, update, scaled)
        return vertex_from_source(source, f"popops reduce {op.name} {partials_type.name}->{out_type.name}",
                                  PARTIALS=partials_type, OUT=out_type)
    factory.__name__ = "ScaledReduce" if scaled else "Reduce"
    return popsim.vertex_template("popops::ScaledReduce" if scaled else "popops::Reduce")(factory)


TEMPLATES = {False: _factory(False), True: _factory(True)}


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
    data_path = max(1, target.data_path_width // (8 * partials_type.size))  # elements per 64-bit load
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
    """Whether an instantiation comes from CPP_CODELETS (else it is a generated Python vertex)."""
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
