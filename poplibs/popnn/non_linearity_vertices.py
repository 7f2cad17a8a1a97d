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

Each vertex's code is written out from a source template and the type's body (vertex code
cannot call helper functions, so the formula goes into the loop), as popops' element-wise
vertices are. HALF is loaded as float32, computed in float32 and rounded once when stored.

Gradients are functions of the activation PopLibs passes: the forward OUTPUT for SIGMOID,
RELU, TANH and HARD_SIGMOID, the forward INPUT for GELU, GELU_ERF and SWISH (their
derivative is not a function of the output alone; PopLibs documents this for GELU).

Estimators: PopLibs' cycle estimators give none for popnn, so these are popsim's, in the
frame of PopLibs' UnaryOp estimators (3.2), with a per-type loop cost ``(cycles, elements
per loop)`` from ``FORWARD_PERF`` / ``GRAD_PERF``:
``inner(n) = ceil(n / elements) * cycles``;
NonLinearity1D[InPlace] tile cycles ``W * (17 + inner(ceil(n / W))) + 20``;
NonLinearity2D[InPlace] worker cycles ``20 + sum_i (6 + inner(n_i))``;
NonLinearityGrad1D tile cycles ``W * (20 + inner(ceil(n / W))) + 20``;
NonLinearityGrad2D worker cycles ``5 + sum_i (8 + inner(n_i))``; W = 6 workers. A 1D
estimate is a tile figure, charged as ceil(figure / W) on each worker.
"""
import ast
import enum
import textwrap

import popsim
from popsim import FLOAT, HALF

from ..poputil.generated_vertex import vertex_from_source
from ..popops.elementwise_ops import BY_TYPE
from ..popops.elementwise_vertices import WORKERS, chunk_loop
from ..popops.op_types import UnaryOpType

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
ELEMENTWISE = tuple(t for t in NL if t not in SOFTMAXES)
#: types whose gradient takes the forward input (not the output) as the activation
GRAD_FROM_INPUT = (NL.GELU, NL.GELU_ERF, NL.SWISH)


def _erf_of(arg: str, result: str) -> str:
    """Statements setting ``result`` to erf(``arg``) with popops' erf body (Abramowitz &
    Stegun 7.1.26, absolute error below 1.5e-7: vertex code has no math.erf), its locals
    renamed ``erf_*`` so that they never clash with the caller's."""
    tree = ast.parse(BY_TYPE[UnaryOpType.ERF].body_for(FLOAT))
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | {"x"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in local:
            node.id = "erf_" + node.id
    *setup, value = tree.body
    return "\n".join([f"erf_x = {arg}"] + [ast.unparse(s) for s in setup] + [f"{result} = {ast.unparse(value.value)}"])


_GELU_ALPHA, _GELU_BETA = "0.7978845608", "0.044715"  # sqrt(2/pi); the cubic term's weight
#: forward bodies over ``x`` (statements, then the value on the last line)
FORWARD = {
    NL.RELU: "x if x > 0.0 else 0.0",
    NL.SIGMOID: "1.0 / (1.0 + math.exp(-x))",
    NL.TANH: "math.tanh(x)",
    NL.GELU: f"0.5 * x * (1.0 + math.tanh({_GELU_ALPHA} * x * (1.0 + {_GELU_BETA} * x * x)))",
    NL.GELU_ERF: _erf_of("x * 0.70710678118", "e") + "\n0.5 * x * (1.0 + e)",
    NL.SWISH: "x / (1.0 + math.exp(-x))",
    NL.HARD_SIGMOID: "min(max(0.2 * x + 0.5, 0.0), 1.0)",
}
#: gradient bodies over ``a`` (the activation) and ``g`` (the output gradient)
GRAD = {
    NL.RELU: "g if a > 0.0 else 0.0",
    NL.SIGMOID: "g * a * (1.0 - a)",
    NL.TANH: "g * (1.0 - a * a)",
    NL.HARD_SIGMOID: "g * 0.2 if a > 0.0 and a < 1.0 else 0.0",
    NL.GELU: (f"t = math.tanh({_GELU_ALPHA} * a * (1.0 + {_GELU_BETA} * a * a))\n"
              f"g * 0.5 * (1.0 + t + (1.0 - t * t) * a * ({_GELU_ALPHA} + 3.0 * {_GELU_ALPHA} * {_GELU_BETA} * a * a))"),
    NL.GELU_ERF: (_erf_of("a * 0.70710678118", "e") +
                  "\ng * (0.5 * (1.0 + e) + a * 0.3989422804 * math.exp(-0.5 * a * a))"),
    NL.SWISH: "s = 1.0 / (1.0 + math.exp(-a))\ng * s * (1.0 + a * (1.0 - s))",
}
#: (cycles, elements per loop) per type: FLOAT, HALF (popsim's figures; the popops table's
#: rows where popops has the op: RELU, SIGMOID, TANH, GELU_ERF)
FORWARD_PERF = {
    NL.RELU: ((3, 2), (3, 4)), NL.SIGMOID: ((12, 2), (6, 4)), NL.TANH: ((12, 2), (4, 4)),
    NL.GELU: ((18, 2), (10, 4)), NL.GELU_ERF: ((22, 1), (16, 1)), NL.SWISH: ((14, 2), (8, 4)),
    NL.HARD_SIGMOID: ((4, 2), (4, 4)),
}
GRAD_PERF = {
    NL.RELU: ((3, 2), (3, 4)), NL.SIGMOID: ((4, 2), (4, 4)), NL.TANH: ((3, 2), (3, 4)),
    NL.GELU: ((22, 2), (14, 4)), NL.GELU_ERF: ((30, 1), (22, 1)), NL.SWISH: ((18, 2), (10, 4)),
    NL.HARD_SIGMOID: ((4, 2), (4, 4)),
}

_ROWS = "for r in range(len({f})):\n    for i in range(len({f}[r])):"
# kind -> (base class, fields, loop over the written field, (loads), store target)
_KINDS = {
    "1D": ("MultiVertex", "data: Input[Vector[T]]\nout: Output[Vector[T]]", chunk_loop("self.out"),
           ("x = self.data[i]",), "self.out[i]"),
    "1DInPlace": ("MultiVertex", "data: InOut[Vector[T]]", chunk_loop("self.data"),
                  ("x = self.data[i]",), "self.data[i]"),
    "2D": ("Vertex", "data: Input[VectorList[T]]\nout: Output[VectorList[T]]", _ROWS.format(f="self.out"),
           ("x = self.data[r][i]",), "self.out[r][i]"),
    "2DInPlace": ("Vertex", "data: InOut[VectorList[T]]", _ROWS.format(f="self.data"),
                  ("x = self.data[r][i]",), "self.data[r][i]"),
    "Grad1D": ("MultiVertex", "out: Input[Vector[T]]\noutGrad: Input[Vector[T]]\ninGrad: Output[Vector[T]]",
               chunk_loop("self.inGrad"), ("a = self.out[i]", "g = self.outGrad[i]"), "self.inGrad[i]"),
    "Grad2D": ("Vertex", "out: Input[VectorList[T]]\noutGrad: Input[VectorList[T]]\ninGrad: Output[VectorList[T]]",
               _ROWS.format(f="self.inGrad"), ("a = self.out[r][i]", "g = self.outGrad[r][i]"), "self.inGrad[r][i]"),
}
KINDS = tuple(_KINDS)


def vertex_source(kind: str, nl: NonLinearityType) -> str:
    """The Python-vertex source of one instantiation (a class named ``V``)."""
    base, fields, loop, loads, target = _KINDS[kind]
    *setup, value = (GRAD if kind.startswith("Grad") else FORWARD)[nl].split("\n")
    inner = "\n".join(list(loads) + setup + [f"{target} = {value}"])
    depth = loop.count("for ")
    body = loop + "\n" + textwrap.indent(inner, "    " * depth)
    args = "self, worker_id" if base == "MultiVertex" else "self"
    return (f"class V({base}):\n{textwrap.indent(fields, '    ')}\n\n    def compute({args}):\n"
            f"{textwrap.indent(body, '        ')}\n        return True\n")


def _template(kind: str):
    name = f"popnn::NonLinearity{kind}"

    def factory(dtype, nl):
        if nl not in ELEMENTWISE:
            raise popsim.PopsimError(f"vertex template {name}: {nl.name} has no element-wise vertex (the softmaxes "
                                     "are built from popops reductions and maps)")
        return vertex_from_source(vertex_source(kind, nl), f"popnn {name} {dtype.name} {nl.name}", T=dtype)

    factory.__name__ = name.split("::")[1]
    return popsim.vertex_template(name, dtype=list(FP_TYPES), nl=list(ELEMENTWISE))(factory)


#: kind -> the vertex template
TEMPLATES = {kind: _template(kind) for kind in KINDS}


# -- cycle estimators (popsim's: see the module docstring) ------------------------------------------
def inner_cycles(nl: NonLinearityType, dtype, n: int, grad: bool) -> int:
    """The loop's cycles over ``n`` elements: ceil(n / elements per loop) x cycles."""
    cycles, elements = (GRAD_PERF if grad else FORWARD_PERF)[nl][0 if dtype == FLOAT else 1]
    return -(-n // elements) * cycles


def vertex_cycles(kind: str, nl: NonLinearityType, dtype, sizes) -> int:
    """One vertex's estimate: tile cycles for a 1D MultiVertex over ``sizes[0]`` elements,
    worker cycles for a 2D vertex over regions of ``sizes``."""
    grad = kind.startswith("Grad")
    if kind.endswith("2D") or kind == "2DInPlace":
        start, per_region = (5, 8) if grad else (20, 6)
        return start + sum(per_region + inner_cycles(nl, dtype, n, grad) for n in sizes)
    per_worker = -(-sizes[0] // WORKERS)
    return WORKERS * ((20 if grad else 17) + inner_cycles(nl, dtype, per_worker, grad)) + 20


def worker_cycles(kind: str, nl: NonLinearityType, dtype, sizes, workers: int) -> int:
    """The cycles each worker running the vertex spends (a 1D figure shared out)."""
    cycles = vertex_cycles(kind, nl, dtype, sizes)
    return cycles if "2D" in kind else -(-cycles // workers)


def _estimator(kind: str, nl: NonLinearityType, dtype):
    field = "inGrad" if kind.startswith("Grad") else ("data" if kind.endswith("InPlace") else "out")

    def estimate(info, target):
        sizes = info.field_sizes(field) if "2D" in kind else [info.field_size(field)]
        return worker_cycles(kind, nl, dtype, sizes, target.num_worker_contexts)
    return estimate


def ensure_vertex(graph, kind: str, dtype, nl: NonLinearityType) -> str:
    """Register the instantiation (and its estimator) with ``graph`` once; its name."""
    template = TEMPLATES[kind]
    name = template.vertex_name(dtype, nl)
    if not graph.has_codelet(name):
        graph.add_codelets(template[dtype, nl])
        graph.register_perf_estimator(name, _estimator(kind, nl, dtype))
    return name
