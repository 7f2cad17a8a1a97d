"""The vertices GCL's ring steps run on each tile, and their cycle estimators.

Every replica runs the same graph, but at a given ring step each replica handles a
different fragment: the fragment's index is the replica's ring position plus a step
offset, modulo the ring size. So each vertex reads ``position`` (this replica's place on
its ring, set on every tile by ``gcl::RingPosition`` from the replication index) and
picks its fragment at run time from a VectorList of this tile's pieces of every
fragment, as GCL's Switch over the ring index picks a fragment copy.

- ``gcl::RingPosition``: position = positions[replicationIndex].
- ``gcl::ReduceStep<op,T,inPlace>``: out[j] = f(local[j]) op received[0] op
  received[1] ..., stored (rounded to T) after each operation; f squares for
  SQUARE_ADD; MEAN divides the finished sum by the group size. j = position + offset,
  modulo each list's length (``out`` may be a single static buffer). In place, there is
  no ``local``: out[j] is also the input.
- ``gcl::GatherStep<T>``: out[(position + offsets[k]) mod len(out)] = data[k] for each
  k (all-gather: each received fragment lands in its slot).
- ``gcl::SliceStep<T>``: out = src[j] (all-to-all: the row to send next).
- ``gcl::BroadcastReduce<op,T>``: data = op over the group's values in rank order,
  data's own value at this replica's rank, received[s] from rank (rank - 1 - s).

MIN and MAX propagate NaN, like numpy's minimum and maximum.

ReduceStep and BroadcastReduce are each one template whose instantiations call their
operator's functions (``COMBINE[op]``, and ``square`` or ``plain`` for a replica's own
value), which the translator inlines; an in-place ReduceStep declares no ``local`` under
an ``if`` on its template argument. Each worker takes a contiguous chunk of the fragment
(``chunk_begin`` / ``chunk_end``).
"""
import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, InOut, Input, MultiVertex, Output, Vector, VectorList

from ..poputil import util
from ..poputil.vertex_helpers import chunk_begin, chunk_end
from .collective_types import CollectiveOperator as Op, MOVE_TYPES

__all__ = ["ensure_vertex"]

SUPERVISOR_OVERHEAD = 11
WORKER_OVERHEAD = 20  # a worker's set-up: fields, the fragment's index, the loop


# -- a op b for each reducing operator (a the accumulator), and the value a replica adds ----------
def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def minimum(a, b):
    return b if (b < a or b != b) else a  # b != b: a NaN wins, as in numpy


def maximum(a, b):
    return b if (b > a or b != b) else a


def logical_and(a, b):
    return a and b


def logical_or(a, b):
    return a or b


def plain(x):
    return x


def square(x):
    return x * x


COMBINE = {Op.ADD: add, Op.MEAN: add, Op.SQUARE_ADD: add, Op.MUL: mul, Op.MIN: minimum, Op.MAX: maximum,
           Op.LOGICAL_AND: logical_and, Op.LOGICAL_OR: logical_or}
REDUCING = [o for o in Op if o is not Op.LOCAL]


# -- the vertices: each instantiation inlines its operator's functions ----------------------------
@popsim.vertex_template("gcl::ReduceStep", op=REDUCING, dtype=[FLOAT, HALF, INT, UNSIGNED_INT, BOOL],
                        in_place=[False, True])
def ReduceStep(op, dtype, in_place):
    combine = COMBINE[op]
    first = square if op is Op.SQUARE_ADD else plain
    fused = op is not Op.SQUARE_ADD  # one pass over a single received row (not for a square rounded to T first)

    class ReduceStep(MultiVertex):
        position: Input[UNSIGNED_INT]
        if not in_place:
            local: Input[VectorList[dtype]]
        received: Input[VectorList[dtype]]
        out: InOut[VectorList[dtype]]
        offset: UNSIGNED_INT
        divisor: UNSIGNED_INT

        def compute(self, worker_id):
            j = self.position + self.offset
            dst = self.out[j % len(self.out)]
            if in_place:
                src = self.out[j % len(self.out)]
            else:
                src = self.local[j % len(self.local)]
            size, w = len(src), self.num_workers()
            begin, end = chunk_begin(size, worker_id, w), chunk_end(size, worker_id, w)
            if fused and len(self.received) == 1:
                row = self.received[0]
                for i in range(begin, end):
                    dst[i] = combine(first(src[i]), row[i])
            else:
                for i in range(begin, end):
                    dst[i] = first(src[i])
                for k in range(len(self.received)):
                    row = self.received[k]
                    for i in range(begin, end):
                        dst[i] = combine(dst[i], row[i])
            if self.divisor != 0:
                for i in range(begin, end):
                    dst[i] = dst[i] / self.divisor
            return True
    return ReduceStep


@popsim.vertex_template("gcl::BroadcastReduce", op=REDUCING, dtype=[FLOAT, HALF, INT, UNSIGNED_INT, BOOL])
def BroadcastReduce(op, dtype):
    combine = COMBINE[op]
    first = square if op is Op.SQUARE_ADD else plain

    class BroadcastReduce(MultiVertex):
        position: Input[UNSIGNED_INT]
        data: InOut[Vector[dtype]]
        received: Input[VectorList[dtype]]
        divisor: UNSIGNED_INT

        def compute(self, worker_id):
            n = len(self.received) + 1
            size, w = len(self.data), self.num_workers()
            for i in range(chunk_begin(size, worker_id, w), chunk_end(size, worker_id, w)):
                own = self.data[i]
                for q in range(n):
                    x = own
                    if q != self.position:
                        x = self.received[(self.position + 2 * n - 1 - q) % n][i]
                    a = self.data[i]  # the fold so far (q > 0)
                    self.data[i] = first(x)  # stored: rounded to T, as in a ring step
                    if q != 0:
                        self.data[i] = combine(a, self.data[i])
                if self.divisor != 0:
                    self.data[i] = self.data[i] / self.divisor
            return True
    return BroadcastReduce


@popsim.vertex_template("gcl::GatherStep", dtype=list(MOVE_TYPES))
def GatherStep(dtype):
    class GatherStep(MultiVertex):
        position: Input[UNSIGNED_INT]
        data: Input[VectorList[dtype]]
        out: InOut[VectorList[dtype]]
        offsets: Vector[UNSIGNED_INT]

        def compute(self, worker_id):
            for k in range(len(self.data)):
                row = self.out[(self.position + self.offsets[k]) % len(self.out)]
                size, w = len(row), self.num_workers()
                for i in range(chunk_begin(size, worker_id, w), chunk_end(size, worker_id, w)):
                    row[i] = self.data[k][i]
            return True
    return GatherStep


@popsim.vertex_template("gcl::SliceStep", dtype=list(MOVE_TYPES))
def SliceStep(dtype):
    class SliceStep(MultiVertex):
        position: Input[UNSIGNED_INT]
        src: Input[VectorList[dtype]]
        out: Output[Vector[dtype]]
        offset: UNSIGNED_INT

        def compute(self, worker_id):
            row = self.src[(self.position + self.offset) % len(self.src)]
            size, w = len(row), self.num_workers()
            for i in range(chunk_begin(size, worker_id, w), chunk_end(size, worker_id, w)):
                self.out[i] = row[i]
            return True
    return SliceStep


class RingPosition(popsim.Vertex):
    vertex_name = "gcl::RingPosition"
    index: popsim.Input[UNSIGNED_INT]
    positions: popsim.Input[popsim.Vector[UNSIGNED_INT]]
    position: popsim.Output[UNSIGNED_INT]

    def compute(self):
        self.position = self.positions[self.index]
        return True


# -- cycle estimators --------------------------------------------------------------------------
def _per_vector(dtype) -> int:
    """Elements per 64-bit load: the data path the vertices stream through."""
    return max(1, 8 // dtype.size)


def elementwise_cycles(dtype, elements: int, operands: int, workers: int) -> int:
    """A worker's cycles for its share of ``elements``, each needing ``operands``
    64-bit loads per vector plus one store: WORKER_OVERHEAD + ceil(share / vector) x
    (operands + 1)."""
    share = -(-elements // workers)
    return WORKER_OVERHEAD + -(-share // _per_vector(dtype)) * (operands + 1)


def _estimator(kind: str, dtype, op=None, in_place: bool = False):
    def estimate(info, target):
        workers = target.num_worker_contexts
        if kind == "position":
            return 15
        if kind == "reduce":
            extra = (1 if op is Op.SQUARE_ADD else 0) + (2 if int(info.initial_value("divisor") or 0) else 0)
            sizes = info.field_sizes("out" if in_place else "local")
            return elementwise_cycles(dtype, max(sizes, default=0), 1 + info.field_size("received") + extra,
                                      workers)
        if kind == "broadcast":
            extra = 2 if int(info.initial_value("divisor") or 0) else 0
            return elementwise_cycles(dtype, info.field_size("data"), 1 + info.field_size("received") + extra,
                                      workers)
        if kind == "gather":
            return sum(elementwise_cycles(dtype, size, 1, workers) for size in info.field_sizes("data"))
        return elementwise_cycles(dtype, info.field_size("out"), 1, workers)
    return estimate


_TEMPLATES = {"reduce": ReduceStep, "broadcast": BroadcastReduce, "gather": GatherStep, "slice": SliceStep}


def ensure_vertex(graph, kind: str, dtype=None, op=None, in_place: bool = False) -> str:
    """Register the ``kind`` vertex ("position", "reduce", "broadcast", "gather",
    "slice") for ``dtype`` (and ``op``, ``in_place``) with ``graph`` once, with its
    estimator; its name."""
    if kind == "position":
        cls = RingPosition
    else:
        args = {"reduce": (op, dtype, in_place), "broadcast": (op, dtype)}.get(kind, (dtype,))
        cls = _TEMPLATES[kind][args]
    return util.ensure_vertex(graph, cls, _estimator(kind, dtype, op, in_place))
