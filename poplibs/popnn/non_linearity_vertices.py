"""popnn's non-linearity vertices and their cycle estimators (PopLibs' popnn codelets
NonLinearity1D/2D, NonLinearityGrad1D/2D).

``NonLinearityType`` is PopLibs' enum (popnn/NonLinearityDef.hpp). The element-wise types
(every type but the three softmaxes) have popnn's own vertices, one instantiation per
element type (FLOAT, HALF) and type, named as popc names PopLibs' instantiations:

- ``popnn::NonLinearity1D<float,popnn::NonLinearityType::RELU>``: a MultiVertex over one
  contiguous region, ``data`` (Input) -> ``out`` (Output); ``...1DInPlace``: ``data``
  (InOut);
- ``popnn::NonLinearity2D<...>``: one worker's regions as VectorLists (``data``, ``out``);
  ``...2DInPlace`` (``data``);
- ``popnn::NonLinearityGrad1D<...>`` / ``...Grad2D<...>``: ``out`` (the activation
  ``act``), ``outGrad`` (Inputs) -> ``inGrad`` (Output).

Each kind is one vertex template whose instantiations call their type's function from
the table ``OPS`` (forward or gradient), which the translator inlines into the loop. HALF is loaded as
float32, computed in float32 and rounded once when stored.

Gradients are functions of the activation PopLibs passes: the forward OUTPUT for SIGMOID,
RELU, TANH and HARD_SIGMOID, the forward INPUT for GELU, GELU_ERF and SWISH (their
derivative is not a function of the output alone; PopLibs documents this for GELU).

Estimators: PopLibs' cycle estimators give none for popnn, so these are popsim's, in the
frame of PopLibs' UnaryOp estimators (3.2), with a per-type loop cost ``(cycles, elements
per loop)`` from the type's ``OPS`` entry:
``inner(n) = ceil(n / elements) * cycles``;
NonLinearity1D[InPlace] tile cycles ``W * (17 + inner(ceil(n / W))) + 20``;
NonLinearity2D[InPlace] worker cycles ``20 + sum_i (6 + inner(n_i))``;
NonLinearityGrad1D tile cycles ``W * (20 + inner(ceil(n / W))) + 20``;
NonLinearityGrad2D worker cycles ``5 + sum_i (8 + inner(n_i))``; W the target's worker
contexts (num_worker_contexts; 6 on an IPU). A 1D estimate is a tile figure, charged as
ceil(figure / W) on each worker.
"""
import enum
import math
from dataclasses import dataclass
from typing import Callable, Tuple

import popsim
from popsim import FLOAT, HALF, InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex

from ..poputil import util
from ..poputil.vertex_helpers import chunk_begin, chunk_end

#: the scale of SOFTMAX_SCALED's outputs (PopLibs' SOFTMAX_SCALING, NonLinearityInternal.hpp)
SOFTMAX_SCALING = 62000.0
FP_TYPES = (FLOAT, HALF)


class NonLinearityType(enum.Enum):
    """popnn::NonLinearityType. The softmaxes work over the innermost dimension;
    SOFTMAX_STABLE subtracts the row maximum first, SOFTMAX_SCALED also scales the rows
    to sum to SOFTMAX_SCALING (62000)."""
    SIGMOID = "SIGMOID"
    HARD_SIGMOID = "HARD_SIGMOID"
    RELU = "RELU"
    TANH = "TANH"
    GELU = "GELU"
    GELU_ERF = "GELU_ERF"
    SWISH = "SWISH"
    SOFTMAX = "SOFTMAX"
    SOFTMAX_STABLE = "SOFTMAX_STABLE"
    SOFTMAX_SCALED = "SOFTMAX_SCALED"

    @property
    def cpp(self) -> str:
        """The template argument as popc spells it in vertex names."""
        return f"popnn::NonLinearityType::{self.name}"

    @property
    def is_softmax(self) -> bool:
        return self.name.startswith("SOFTMAX")


NL = NonLinearityType
SOFTMAXES = (NL.SOFTMAX, NL.SOFTMAX_STABLE, NL.SOFTMAX_SCALED)


_GELU_ALPHA, _GELU_BETA = 0.7978845608, 0.044715  # sqrt(2/pi); the cubic term's weight


# -- the forward functions of x, the input --------------------------------------------------------
def relu(x):
    return x if x > 0.0 else 0.0


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def tanh(x):
    return math.tanh(x)


def gelu(x):
    return 0.5 * x * (1.0 + math.tanh(_GELU_ALPHA * x * (1.0 + _GELU_BETA * x * x)))


def gelu_erf(x):
    e = math.erf(x * 0.70710678118)
    return 0.5 * x * (1.0 + e)


def swish(x):
    return x / (1.0 + math.exp(-x))


def hard_sigmoid(x):
    return min(max(0.2 * x + 0.5, 0.0), 1.0)


# -- the gradients of a, the activation (see GRAD_FROM_INPUT), and g, the output gradient -------
def relu_grad(a, g):
    return g if a > 0.0 else 0.0


def sigmoid_grad(a, g):
    return g * a * (1.0 - a)


def tanh_grad(a, g):
    return g * (1.0 - a * a)


def hard_sigmoid_grad(a, g):
    return g * 0.2 if a > 0.0 and a < 1.0 else 0.0


def gelu_grad(a, g):
    t = math.tanh(_GELU_ALPHA * a * (1.0 + _GELU_BETA * a * a))
    return g * 0.5 * (1.0 + t + (1.0 - t * t) * a * (_GELU_ALPHA + 3.0 * _GELU_ALPHA * _GELU_BETA * a * a))


def gelu_erf_grad(a, g):
    e = math.erf(a * 0.70710678118)
    return g * (0.5 * (1.0 + e) + a * 0.3989422804 * math.exp(-0.5 * a * a))


def swish_grad(a, g):
    s = 1.0 / (1.0 + math.exp(-a))
    return g * s * (1.0 + a * (1.0 - s))


@dataclass(frozen=True)
class NonLinearityOp:
    """One element-wise non-linearity: its forward function of x, its gradient function of
    (a, g), whether a is the forward input (else the forward output), and the loop costs
    (cycles, elements per loop) for FLOAT and HALF of each (popsim's figures; the popops
    table's rows where popops has the op: RELU, SIGMOID, TANH, GELU_ERF)."""
    forward: Callable
    grad: Callable
    forward_perf: Tuple[Tuple[int, int], Tuple[int, int]]
    grad_perf: Tuple[Tuple[int, int], Tuple[int, int]]
    grad_from_input: bool = False


#: The table: a new element-wise type is a NonLinearityType member and one entry here.
OPS = {
    NL.RELU: NonLinearityOp(relu, relu_grad, ((3, 2), (3, 4)), ((3, 2), (3, 4))),
    NL.SIGMOID: NonLinearityOp(sigmoid, sigmoid_grad, ((12, 2), (6, 4)), ((4, 2), (4, 4))),
    NL.TANH: NonLinearityOp(tanh, tanh_grad, ((12, 2), (4, 4)), ((3, 2), (3, 4))),
    NL.GELU: NonLinearityOp(gelu, gelu_grad, ((18, 2), (10, 4)), ((22, 2), (14, 4)), grad_from_input=True),
    NL.GELU_ERF: NonLinearityOp(gelu_erf, gelu_erf_grad, ((22, 1), (16, 1)), ((30, 1), (22, 1)),
                                grad_from_input=True),
    NL.SWISH: NonLinearityOp(swish, swish_grad, ((14, 2), (8, 4)), ((18, 2), (10, 4)), grad_from_input=True),
    NL.HARD_SIGMOID: NonLinearityOp(hard_sigmoid, hard_sigmoid_grad, ((4, 2), (4, 4)), ((4, 2), (4, 4))),
}
#: the types with element-wise vertices (every type but the softmaxes)
ELEMENTWISE = tuple(OPS)
#: types whose gradient takes the forward input (not the output) as the activation
GRAD_FROM_INPUT = tuple(nl for nl, op in OPS.items() if op.grad_from_input)


# -- the vertices: one template per kind, each instantiation inlining its type's function -------
def _template(kind: str):
    return popsim.vertex_template(f"popnn::NonLinearity{kind}", dtype=list(FP_TYPES), nl=list(ELEMENTWISE))


@_template("1D")
def NonLinearity1D(dtype, nl):
    f = OPS[nl].forward

    class NonLinearity1D(MultiVertex):
        data: Input[Vector[dtype]]
        out: Output[Vector[dtype]]

        def compute(self, worker_id):
            n, w = len(self.out), self.num_workers()
            for i in range(chunk_begin(n, worker_id, w), chunk_end(n, worker_id, w)):
                self.out[i] = f(self.data[i])
            return True
    return NonLinearity1D


@_template("1DInPlace")
def NonLinearity1DInPlace(dtype, nl):
    f = OPS[nl].forward

    class NonLinearity1DInPlace(MultiVertex):
        data: InOut[Vector[dtype]]

        def compute(self, worker_id):
            n, w = len(self.data), self.num_workers()
            for i in range(chunk_begin(n, worker_id, w), chunk_end(n, worker_id, w)):
                self.data[i] = f(self.data[i])
            return True
    return NonLinearity1DInPlace


@_template("2D")
def NonLinearity2D(dtype, nl):
    f = OPS[nl].forward

    class NonLinearity2D(Vertex):
        data: Input[VectorList[dtype]]
        out: Output[VectorList[dtype]]

        def compute(self):
            for r in range(len(self.out)):
                for i in range(len(self.out[r])):
                    self.out[r][i] = f(self.data[r][i])
            return True
    return NonLinearity2D


@_template("2DInPlace")
def NonLinearity2DInPlace(dtype, nl):
    f = OPS[nl].forward

    class NonLinearity2DInPlace(Vertex):
        data: InOut[VectorList[dtype]]

        def compute(self):
            for r in range(len(self.data)):
                for i in range(len(self.data[r])):
                    self.data[r][i] = f(self.data[r][i])
            return True
    return NonLinearity2DInPlace


@_template("Grad1D")
def NonLinearityGrad1D(dtype, nl):
    f = OPS[nl].grad

    class NonLinearityGrad1D(MultiVertex):
        out: Input[Vector[dtype]]
        outGrad: Input[Vector[dtype]]
        inGrad: Output[Vector[dtype]]

        def compute(self, worker_id):
            n, w = len(self.inGrad), self.num_workers()
            for i in range(chunk_begin(n, worker_id, w), chunk_end(n, worker_id, w)):
                self.inGrad[i] = f(self.out[i], self.outGrad[i])
            return True
    return NonLinearityGrad1D


@_template("Grad2D")
def NonLinearityGrad2D(dtype, nl):
    f = OPS[nl].grad

    class NonLinearityGrad2D(Vertex):
        out: Input[VectorList[dtype]]
        outGrad: Input[VectorList[dtype]]
        inGrad: Output[VectorList[dtype]]

        def compute(self):
            for r in range(len(self.inGrad)):
                for i in range(len(self.inGrad[r])):
                    self.inGrad[r][i] = f(self.out[r][i], self.outGrad[r][i])
            return True
    return NonLinearityGrad2D


#: kind -> the vertex template
TEMPLATES = {"1D": NonLinearity1D, "1DInPlace": NonLinearity1DInPlace, "2D": NonLinearity2D,
             "2DInPlace": NonLinearity2DInPlace, "Grad1D": NonLinearityGrad1D, "Grad2D": NonLinearityGrad2D}
KINDS = tuple(TEMPLATES)


# -- cycle estimators (popsim's: see the module docstring) ------------------------------------------
def inner_cycles(nl: NonLinearityType, dtype, n: int, grad: bool) -> int:
    """The loop's cycles over ``n`` elements: ceil(n / elements per loop) x cycles."""
    op = OPS[nl]
    cycles, elements = (op.grad_perf if grad else op.forward_perf)[0 if dtype == FLOAT else 1]
    return -(-n // elements) * cycles


def vertex_cycles(kind: str, nl: NonLinearityType, dtype, sizes, workers: int) -> int:
    """One vertex's estimate: tile cycles for a 1D MultiVertex over ``sizes[0]`` elements
    shared by the target's ``workers``, worker cycles for a 2D vertex over regions of
    ``sizes``."""
    grad = kind.startswith("Grad")
    if kind.endswith("2D") or kind == "2DInPlace":
        start, per_region = (5, 8) if grad else (20, 6)
        return start + sum(per_region + inner_cycles(nl, dtype, n, grad) for n in sizes)
    per_worker = -(-sizes[0] // workers)
    return workers * ((20 if grad else 17) + inner_cycles(nl, dtype, per_worker, grad)) + 20


def worker_cycles(kind: str, nl: NonLinearityType, dtype, sizes, workers: int) -> int:
    """The cycles each worker running the vertex spends (a 1D figure shared out)."""
    cycles = vertex_cycles(kind, nl, dtype, sizes, workers)
    return cycles if "2D" in kind else -(-cycles // workers)


def _estimator(kind: str, nl: NonLinearityType, dtype):
    field = "inGrad" if kind.startswith("Grad") else ("data" if kind.endswith("InPlace") else "out")

    def estimate(info, target):
        sizes = info.field_sizes(field) if "2D" in kind else [info.field_size(field)]
        return worker_cycles(kind, nl, dtype, sizes, target.num_worker_contexts)
    return estimate


def ensure_vertex(graph, kind: str, dtype, nl: NonLinearityType) -> str:
    """Register the instantiation (and its estimator) with ``graph`` once; its name."""
    return util.ensure_vertex(graph, TEMPLATES[kind][dtype, nl], _estimator(kind, nl, dtype))
