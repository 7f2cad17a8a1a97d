"""The vertices of popnn's arg max / arg min (PopLibs' popnn/codelets/ReduceMaxClass*.cpp,
ReduceMinClass*.cpp), as Python vertices under PopLibs' names, with PopLibs' cycle
estimators (popnnCycleEstimators.cpp; PopLibs' cycle estimators have no formula for them).

- ``popnn::ReduceMaxClassGather<InType,LabelType>`` (and ``...Min...``): a MultiVertex over
  one contiguous piece of a row. The piece is cut into chunks of ``workerSize`` elements,
  one per worker (at most the target's num_worker_contexts); worker ``w`` writes the
  largest (smallest) value of chunk ``w`` to ``maxValue[w]`` and its position in the piece
  plus ``index`` (the piece's first column) to ``maxIndex[w]``. Values are FLOAT for FLOAT
  and HALF inputs (PopLibs keeps the partials 32-bit), the input type for integers.
- ``popnn::ReduceMaxClassSparse<InOutType,LabelType>`` (and ``...Min...``): one worker
  vertex reducing up to 32 (value, label) partials to the best value and its label.

Both keep the first position on ties (a later element must be strictly larger or smaller
to win), as PopLibs' codelets do, so partials in column order give the first index of a
row's maximum.

Max and min share one class per kind (``_gather``, ``_sparse``): each instantiation calls
its comparison (``greater`` or ``less``, inlined by the translator) and declares and writes
its own fields (``maxValue``... or ``minValue``...) under an ``if is_max`` that is decided at
translation.
"""
import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, Input, MultiVertex, Output, Vector, Vertex

from ..poputil import util
from ..poputil.vertex_helpers import named_vertex_class

__all__ = ["IN_TYPES", "LABEL_TYPES", "partials_type", "gather_vertex", "sparse_vertex",
           "gather_cycles", "sparse_cycles"]

IN_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT)
LABEL_TYPES = (UNSIGNED_INT, INT)
_PARTIALS = (FLOAT, INT, UNSIGNED_INT)


def partials_type(in_type):
    """PopLibs' partials type: FLOAT for FLOAT and HALF inputs, else the input's type."""
    return FLOAT if in_type in (FLOAT, HALF) else in_type


# -- the comparisons: strict, so that the first of equal values wins --------------------------------
def greater(a, b):
    return a > b


def less(a, b):
    return a < b


def _gather(is_max: bool, in_type, label_type):
    partials = partials_type(in_type)
    better = greater if is_max else less

    class Gather(MultiVertex):
        activations: Input[Vector[in_type]]
        index: label_type
        if is_max:
            maxValue: Output[Vector[partials]]
            maxIndex: Output[Vector[label_type]]
        else:
            minValue: Output[Vector[partials]]
            minIndex: Output[Vector[label_type]]
        size: UNSIGNED_INT
        workerSize: UNSIGNED_INT

        def compute(self, worker_id):
            begin = worker_id * int(self.workerSize)
            if begin >= int(self.size):
                return True
            end = min(begin + int(self.workerSize), int(self.size))
            best = self.activations[begin]
            where = begin
            for j in range(begin + 1, end):
                if better(self.activations[j], best):
                    best = self.activations[j]
                    where = j
            if is_max:
                self.maxValue[worker_id] = best
                self.maxIndex[worker_id] = where + self.index
            else:
                self.minValue[worker_id] = best
                self.minIndex[worker_id] = where + self.index
            return True
    return named_vertex_class(Gather, f"Reduce{'Max' if is_max else 'Min'}ClassGather")


def _sparse(is_max: bool, in_out_type, label_type):
    better = greater if is_max else less

    class Sparse(Vertex):
        activations: Input[Vector[in_out_type]]
        labels: Input[Vector[label_type]]
        if is_max:
            maxValue: Output[in_out_type]
            maxIndex: Output[label_type]
        else:
            minValue: Output[in_out_type]
            minIndex: Output[label_type]

        def compute(self):
            best = self.activations[0]
            where = 0
            for i in range(1, len(self.activations)):
                if better(self.activations[i], best):
                    best = self.activations[i]
                    where = i
            if is_max:
                self.maxValue = best
                self.maxIndex = self.labels[where]
            else:
                self.minValue = best
                self.minIndex = self.labels[where]
            return True
    return named_vertex_class(Sparse, f"Reduce{'Max' if is_max else 'Min'}ClassSparse")


@popsim.vertex_template("popnn::ReduceMaxClassGather", in_type=IN_TYPES, label_type=LABEL_TYPES)
def ReduceMaxClassGather(in_type, label_type):
    return _gather(True, in_type, label_type)


@popsim.vertex_template("popnn::ReduceMinClassGather", in_type=IN_TYPES, label_type=LABEL_TYPES)
def ReduceMinClassGather(in_type, label_type):
    return _gather(False, in_type, label_type)


@popsim.vertex_template("popnn::ReduceMaxClassSparse", in_out_type=_PARTIALS, label_type=LABEL_TYPES)
def ReduceMaxClassSparse(in_out_type, label_type):
    return _sparse(True, in_out_type, label_type)


@popsim.vertex_template("popnn::ReduceMinClassSparse", in_out_type=_PARTIALS, label_type=LABEL_TYPES)
def ReduceMinClassSparse(in_out_type, label_type):
    return _sparse(False, in_out_type, label_type)


# -- cycle estimators (PopLibs' popnnCycleEstimators.cpp) -----------------------------------------
def gather_cycles(in_type, size: int, worker_size: int, num_workers: int) -> int:
    """ReduceMax/MinClassGather tile cycles: the assembly supervisor for FLOAT and HALF
    (each worker scans at most ``workerSize`` elements, 3 cycles each, plus 30 of set-up
    and store), the compiled one-worker version for integers; x the target's
    ``num_workers`` (6 on an IPU) + 9 supervisor."""
    if in_type in (FLOAT, HALF):
        worker = 3 + 2 + 4 + 3 + 1 + 3 + 1 + 3 * min(worker_size - 1, size - 1) + 3 + 6 + 4
    else:
        outputs = -(-size // worker_size)
        worker = 22 + outputs * (worker_size * 6 + 25)
    return worker * num_workers + 9


def sparse_cycles(in_out_type, num_partials: int) -> int:
    """ReduceMax/MinClassSparse worker cycles: 5 + the assembly scan for FLOAT
    (3 per partial) or the compiled loop (6 per partial) for integers."""
    if in_out_type == FLOAT:
        return 5 + 2 + 3 + 3 + 1 + 3 * (num_partials - 1) + 3 + 6 + 4
    return 5 + 18 + 6 * num_partials


def gather_vertex(graph, is_max: bool, in_type, label_type) -> str:
    """The Gather instantiation's name, registered (with its estimator) on first use."""
    template = ReduceMaxClassGather if is_max else ReduceMinClassGather

    def estimate(info, target):
        # a MultiVertex: PopLibs' tile figure, charged as ceil(figure / workers) per worker
        workers = target.num_worker_contexts
        cycles = gather_cycles(in_type, int(info.initial_value("size")), int(info.initial_value("workerSize")),
                               workers)
        return -(-cycles // workers)
    return util.ensure_vertex(graph, template[in_type, label_type], estimate)


def sparse_vertex(graph, is_max: bool, in_out_type, label_type) -> str:
    """The Sparse instantiation's name, registered (with its estimator) on first use."""
    template = ReduceMaxClassSparse if is_max else ReduceMinClassSparse
    return util.ensure_vertex(graph, template[in_out_type, label_type],
                              lambda info, target: sparse_cycles(in_out_type, info.field_size("activations")))
