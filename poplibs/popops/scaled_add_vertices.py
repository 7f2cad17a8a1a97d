"""The scaled-arithmetic vertices (PopLibs' elemwiseScaledAddCodelets) and their cycle
estimators (PopLibs' cycle estimators; PopLibs' PerformanceEstimation.cpp and
popopsCycleEstimators.cpp).

Every vertex updates ``A`` (InOut) from ``B`` (Input, A's type) and one or two scales,
plain state fields when the scales are numbers (``isConstant`` true), scalar Input
edges when they are tensors:

- ``popops::ScaledAdd2D<A,B,scale,isConstant,memConstrained>``, ``...Supervisor<...>``:
  ``A += scaleB * B``;
- ``popops::ScaledSubtract2D<data,scale,memConstrained>``,
  ``popops::ScaledSubtractSupervisor<A,B,scale,memConstrained>``: ``A -= scaleB * B``
  (tensor scales only: a number is negated and added);
- ``popops::aXPlusbY2D<data,scale,isConstant,memConstrained>``, ``...Supervisor``:
  ``A = scaleA * A + scaleB * B``; ``popops::aXMinusbY...``: ``A = scaleA * A - scaleB * B``.

"2D" vertices take one worker's regions as VectorLists; "Supervisor" ones are
MultiVertices over a tile's one contiguous region. FLOAT and HALF compute in float32
(HALF rounded once when stored), integers in 32 bits with wrap-around.
``memConstrained`` (PopLibs' optimizeForSpeed option) is always false here.
"""
import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, InOut, Input, MultiVertex, Vector, VectorList, Vertex

from ..poputil import util


DATA_TYPES = [FLOAT, HALF, INT, UNSIGNED_INT]
KINDS = ("add", "subtract", "axpby", "axmby")


def _scaled_class(kind: str, dtype, scale_type, is_constant: bool, supervisor: bool) -> type:
    """The vertex class for one kind; ``SUB`` and ``TWO`` are constants of compute."""
    SUB = kind in ("subtract", "axmby")  # noqa: N806 - read as constants by the translator
    scale = scale_type if is_constant else Input[scale_type]
    if kind in ("add", "subtract"):
        if supervisor:
            class Scaled(MultiVertex):
                A: InOut[Vector[dtype]]
                B: Input[Vector[dtype]]
                scaleB: scale

                def compute(self, worker_id):
                    for i in range(worker_id, len(self.A), self.num_workers()):
                        if SUB:
                            self.A[i] = self.A[i] - self.scaleB * self.B[i]
                        else:
                            self.A[i] = self.A[i] + self.scaleB * self.B[i]
                    return True
        else:
            class Scaled(Vertex):
                A: InOut[VectorList[dtype]]
                B: Input[VectorList[dtype]]
                scaleB: scale

                def compute(self):
                    for r in range(len(self.A)):
                        for i in range(len(self.A[r])):
                            if SUB:
                                self.A[r][i] = self.A[r][i] - self.scaleB * self.B[r][i]
                            else:
                                self.A[r][i] = self.A[r][i] + self.scaleB * self.B[r][i]
                    return True
        return Scaled
    if supervisor:
        class ScaledAB(MultiVertex):
            A: InOut[Vector[dtype]]
            B: Input[Vector[dtype]]
            scaleA: scale
            scaleB: scale

            def compute(self, worker_id):
                for i in range(worker_id, len(self.A), self.num_workers()):
                    if SUB:
                        self.A[i] = self.scaleA * self.A[i] - self.scaleB * self.B[i]
                    else:
                        self.A[i] = self.scaleA * self.A[i] + self.scaleB * self.B[i]
                return True
    else:
        class ScaledAB(Vertex):
            A: InOut[VectorList[dtype]]
            B: Input[VectorList[dtype]]
            scaleA: scale
            scaleB: scale

            def compute(self):
                for r in range(len(self.A)):
                    for i in range(len(self.A[r])):
                        if SUB:
                            self.A[r][i] = self.scaleA * self.A[r][i] - self.scaleB * self.B[r][i]
                        else:
                            self.A[r][i] = self.scaleA * self.A[r][i] + self.scaleB * self.B[r][i]
                return True
    return ScaledAB


def _check(name, dtype, scale_type):
    if dtype not in DATA_TYPES or scale_type not in (dtype, FLOAT):
        raise popsim.PopsimError(f"vertex template {name}: no instantiation for {dtype.name} data and a "
                                 f"{scale_type.name} scale")


_B = [True, False]


@popsim.vertex_template("popops::ScaledAdd2D", a=DATA_TYPES, b=DATA_TYPES, scale=DATA_TYPES, is_constant=_B,
                        mem_constrained=[False])
def ScaledAdd2D(a, b, scale, is_constant, mem_constrained):
    _check("popops::ScaledAdd2D", a, scale)
    return _scaled_class("add", a, scale, is_constant, False)


@popsim.vertex_template("popops::ScaledAddSupervisor", a=DATA_TYPES, b=DATA_TYPES, scale=DATA_TYPES,
                        is_constant=_B, mem_constrained=[False])
def ScaledAddSupervisor(a, b, scale, is_constant, mem_constrained):
    _check("popops::ScaledAddSupervisor", a, scale)
    return _scaled_class("add", a, scale, is_constant, True)


@popsim.vertex_template("popops::ScaledSubtract2D", data=DATA_TYPES, scale=DATA_TYPES, mem_constrained=[False])
def ScaledSubtract2D(data, scale, mem_constrained):
    _check("popops::ScaledSubtract2D", data, scale)
    return _scaled_class("subtract", data, scale, False, False)


@popsim.vertex_template("popops::ScaledSubtractSupervisor", a=DATA_TYPES, b=DATA_TYPES, scale=DATA_TYPES,
                        mem_constrained=[False])
def ScaledSubtractSupervisor(a, b, scale, mem_constrained):
    _check("popops::ScaledSubtractSupervisor", a, scale)
    return _scaled_class("subtract", a, scale, False, True)


def _axpby_template(name: str, kind: str, supervisor: bool):
    def factory(data, scale, is_constant, mem_constrained):
        _check(name, data, scale)
        return _scaled_class(kind, data, scale, is_constant, supervisor)
    factory.__name__ = name.split("::")[1]
    return popsim.vertex_template(name, data=DATA_TYPES, scale=DATA_TYPES, is_constant=_B,
                                  mem_constrained=[False])(factory)


aXPlusbY2D = _axpby_template("popops::aXPlusbY2D", "axpby", False)
aXPlusbYSupervisor = _axpby_template("popops::aXPlusbYSupervisor", "axpby", True)
aXMinusbY2D = _axpby_template("popops::aXMinusbY2D", "axmby", False)
aXMinusbYSupervisor = _axpby_template("popops::aXMinusbYSupervisor", "axmby", True)


def vertex_name_and_args(kind: str, dtype, scale_type, is_constant: bool, supervisor: bool):
    """(template, arguments) of the vertex PopLibs' ScaledAdd.cpp picks."""
    if kind == "add":
        return (ScaledAddSupervisor if supervisor else ScaledAdd2D), (dtype, dtype, scale_type, is_constant, False)
    if kind == "subtract":
        if supervisor:
            return ScaledSubtractSupervisor, (dtype, dtype, scale_type, False)
        return ScaledSubtract2D, (dtype, scale_type, False)
    templates = {("axpby", True): aXPlusbYSupervisor, ("axpby", False): aXPlusbY2D,
                 ("axmby", True): aXMinusbYSupervisor, ("axmby", False): aXMinusbY2D}
    return templates[(kind, supervisor)], (dtype, scale_type, is_constant, False)


# -- cycle estimators -------------------------------------------------------------------------------
def supervisor_cycles(kind: str, dtype, is_constant: bool, n: int, workers: int, width: int) -> int:
    """getScaledArithmeticSupervisorCycleEstimate (PopLibs' cycle estimators), tile cycles
    for ``n`` elements over the target's ``workers`` at its vector width ``width`` of
    ``dtype``, A and B of one type, no ScaledPtr64 layouts. As in PopLibs' source, the
    aXPlusbY (+12), subtract (+7) and branch (+6) supervisor terms apply to tensor scales
    only."""
    tensor_scale = not is_constant
    if dtype in (INT, UNSIGNED_INT):
        cycles = 53 + 26 * (n // 3) + (1 if kind == "subtract" and tensor_scale else 0)
        cycles += 6 if n % 3 == 0 else 6 + 26 * (n % 3)
        return cycles + 8 + (6 if tensor_scale else 0)
    vectors, rem = divmod(n, width)
    per_worker, rem_vectors = divmod(vectors, workers)
    cycles = 21 + 11 + (7 if rem == 0 else 13) + 12
    if tensor_scale:
        cycles += (12 if kind == "axpby" else 0) + (7 if kind == "subtract" else 0) + 6
    inner = 3  # not memory-constrained, A and B of one type
    worst = 0
    for wid in range(workers):
        worker = 15 + (6 + inner * (per_worker - 1) if per_worker else 0) + 2
        if wid == rem_vectors:
            worker += 1
            if rem and dtype == FLOAT:
                worker += 8
            elif rem:
                worker += 5 + (7 if rem >= 2 else 0) + (6 if rem == 3 else 0)
        worst = max(worst, worker + 1)
    return cycles + workers * worst


def two_d_cycles(kind: str, dtype, is_constant: bool, sizes, width: int) -> int:
    """ScaledArithmetic2DCycleEstimate (PopLibs' popopsCycleEstimators.cpp): worker cycles
    for regions of ``sizes`` elements, ``width`` the target's vector_width(dtype)."""
    tensor_scale = not is_constant
    if dtype in (INT, UNSIGNED_INT):
        return 8 + sum(7 + 5 * n for n in sizes) + tensor_scale + (kind == "subtract" and tensor_scale)
    cycles = 9 + tensor_scale + (2 if kind == "subtract" and tensor_scale else 0)
    if kind == "axpby":
        cycles += 6 if tensor_scale else 4
    for n in sizes:
        vectors, rem = divmod(n, width)
        cycles += 15 + (5 if vectors else 0) + 3 * vectors
        if dtype == FLOAT:
            cycles += 7 if rem else 0
        else:
            cycles += (4 if rem else 0) + (6 if rem >= 2 else 0) + (7 if rem % 2 == 1 else 0)
    return cycles


def estimator(kind: str, dtype, is_constant: bool, supervisor: bool):
    """``fn(info, target)``: a Supervisor's tile figure is charged as ceil(figure /
    workers) on each worker."""
    if supervisor:
        return lambda info, target: -(-supervisor_cycles(kind, dtype, is_constant, info.field_size("A"),
                                                         target.num_worker_contexts, target.vector_width(dtype))
                                      // target.num_worker_contexts)
    return lambda info, target: two_d_cycles(kind, dtype, is_constant, info.field_sizes("A"),
                                             target.vector_width(dtype))


def ensure_vertex(graph, kind: str, dtype, scale_type, is_constant: bool, supervisor: bool) -> str:
    """Register the vertex and its estimator with ``graph`` once; its name."""
    template, args = vertex_name_and_args(kind, dtype, scale_type, is_constant, supervisor)
    return util.ensure_vertex(graph, template[args], estimator(kind, dtype, is_constant, supervisor))
