"""The vertices of popnn's arg max / arg min (PopLibs' popnn/codelets/ReduceMaxClass*.cpp,
ReduceMinClass*.cpp), as Python vertices under PopLibs' names, with PopLibs' cycle
estimators (popnnCycleEstimators.cpp; PopLibs' cycle estimators have no formula for them).

- ``popnn::ReduceMaxClassGather<InType,LabelType>`` (and ``...Min...``): a MultiVertex over
  one contiguous piece of a row. The piece is cut into chunks of ``workerSize`` elements,
  one per worker (at most 6); worker ``w`` writes the largest (smallest) value of chunk
  ``w`` to ``maxValue[w]`` and its position in the piece plus ``index`` (the piece's first
  column) to ``maxIndex[w]``. Values are FLOAT for FLOAT and HALF inputs (PopLibs keeps
  the partials 32-bit), the input type for integers.
- ``popnn::ReduceMaxClassSparse<InOutType,LabelType>`` (and ``...Min...``): one worker
  vertex reducing up to 32 (value, label) partials to the best value and its label.

Both keep the first position on ties (a later element must be strictly larger or smaller
to win), as PopLibs' codelets do, so partials in column order give the first index of a
row's maximum.
"""
import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT

from ..poputil.generated_vertex import vertex_from_source

__all__ = ["IN_TYPES", "LABEL_TYPES", "partials_type", "gather_vertex", "sparse_vertex",
           "gather_cycles", "sparse_cycles"]

IN_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT)
LABEL_TYPES = (UNSIGNED_INT, INT)
_PARTIALS = (FLOAT, INT, UNSIGNED_INT)


def partials_type(in_type):
    """PopLibs' partials type: FLOAT for FLOAT and HALF inputs, else the input's type."""
    return FLOAT if in_type in (FLOAT, HALF) else in_type


_GATHER = """
class V(MultiVertex):
    activations: Input[Vector[IN]]
    index: LABEL
    {kind}Value: Output[Vector[PARTIALS]]
    {kind}Index: Output[Vector[LABEL]]
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
            if self.activations[j] {better} best:
                best = self.activations[j]
                where = j
        self.{kind}Value[worker_id] = best
        self.{kind}Index[worker_id] = where + self.index
        return True
"""

_SPARSE = """
class V(Vertex):
    activations: Input[Vector[PARTIALS]]
    labels: Input[Vector[LABEL]]
    {kind}Value: Output[PARTIALS]
    {kind}Index: Output[LABEL]

    def compute(self):
        best = self.activations[0]
        where = 0
        for i in range(1, len(self.activations)):
            if self.activations[i] {better} best:
                best = self.activations[i]
                where = i
        self.{kind}Value = best
        self.{kind}Index = self.labels[where]
        return True
"""


def _template(base: str, source: str, is_max: bool, gather: bool):
    """A vertex template of ``source`` (vertex code cannot call helpers, so max and min
    are two generated classes): ``>`` keeps the first maximum, ``<`` the first minimum."""
    kind, better = ("max", ">") if is_max else ("min", "<")
    text = source.format(kind=kind, better=better)
    label = f"{base.split('::')[1]}"

    def make(in_type, label_type):
        cls = vertex_from_source(text, label, IN=in_type, LABEL=label_type, PARTIALS=partials_type(in_type))
        cls.__name__ = cls.__qualname__ = label
        return cls

    if gather:
        def factory(in_type, label_type):
            return make(in_type, label_type)
        return popsim.vertex_template(base, in_type=IN_TYPES, label_type=LABEL_TYPES)(factory)

    def factory(in_out_type, label_type):  # noqa: F811 (one of the two is returned)
        return make(in_out_type, label_type)
    return popsim.vertex_template(base, in_out_type=_PARTIALS, label_type=LABEL_TYPES)(factory)


ReduceMaxClassGather = _template("popnn::ReduceMaxClassGather", _GATHER, True, True)
ReduceMinClassGather = _template("popnn::ReduceMinClassGather", _GATHER, False, True)
ReduceMaxClassSparse = _template("popnn::ReduceMaxClassSparse", _SPARSE, True, False)
ReduceMinClassSparse = _template("popnn::ReduceMinClassSparse", _SPARSE, False, False)


# -- cycle estimators (PopLibs' popnnCycleEstimators.cpp) -----------------------------------------
def gather_cycles(in_type, size: int, worker_size: int, num_workers: int = 6) -> int:
    """ReduceMax/MinClassGather tile cycles: the assembly supervisor for FLOAT and HALF
    (each worker scans at most ``workerSize`` elements, 3 cycles each, plus 30 of set-up
    and store), the compiled one-worker version for integers; x6 workers + 9 supervisor."""
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
    name = template.vertex_name(in_type, label_type)
    if not graph.has_codelet(name):
        graph.add_codelets(template[in_type, label_type])

        def estimate(info, target):
            # a MultiVertex: PopLibs' tile figure, charged as ceil(figure / workers) per worker
            workers = target.num_worker_contexts
            cycles = gather_cycles(in_type, int(info.initial_value("size")), int(info.initial_value("workerSize")),
                                   workers)
            return -(-cycles // workers)
        graph.register_perf_estimator(name, estimate)
    return name


def sparse_vertex(graph, is_max: bool, in_out_type, label_type) -> str:
    """The Sparse instantiation's name, registered (with its estimator) on first use."""
    template = ReduceMaxClassSparse if is_max else ReduceMinClassSparse
    name = template.vertex_name(in_out_type, label_type)
    if not graph.has_codelet(name):
        graph.add_codelets(template[in_out_type, label_type])
        graph.register_perf_estimator(
            name, lambda info, target: sparse_cycles(in_out_type, info.field_size("activations")))
    return name
