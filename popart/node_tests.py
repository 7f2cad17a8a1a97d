"""ONNX's own backend node tests run through an InferenceSession: each test case the onnx
package makes for an op (``onnx.backend.test.case.node``, the generators of its
``data/node/test_*`` directories: a one-node model, or the node's function expanded, with
inputs and the expected outputs), lowered, run on a 16-tile IPUModel and compared with the
expected outputs at the tolerances onnx's backend runner uses (rtol 1e-3, atol 1e-7).

A case ends as ``pass``, ``fail`` (a wrong result or error), or ``refused`` (popsim.popart
says it does not run it: an unsupported op in an expanded function, attribute, opset or
type; the reason is kept). int64 and uint64 inputs of a case (shapes, axes, indices) are
given as initializers, as a PopART user gives them, since popsim.popart reads them as the
graph is built (and places them as INT / UNSIGNED_INT, range checked, where used as data);
float32, float16, bool, 8- to 32-bit integer and the FNUZ float8 inputs are streamed. int64 and
uint64 outputs come back as int32 and uint32 (PopART runs int64 as int32) and are compared
widened; float8 outputs are compared byte for byte."""
import importlib
import os
import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from . import float8
from .dataflow import AnchorReturnType, DataFlow, PyStepIO
from .device import DeviceManager
from .errors import onnx_module, popart_exception
from .op_table import supported_ops

TILES = 16
#: the element types a case's inputs are streamed in and its outputs compared in
_STREAMED = tuple(np.dtype(t) for t in (np.float32, np.float16, np.bool_, np.int32, np.uint32, np.int8, np.uint8,
                                        np.int16, np.uint16, *float8.NUMPY_OF.values()))


@dataclass
class Case:
    op_type: str
    name: str
    model: object              # onnx.ModelProto
    data_sets: list            # [(inputs, outputs)], arrays or TensorProtos
    rtol: float = 1e-3
    atol: float = 1e-7


@dataclass
class Outcome:
    case: str
    status: str                # "pass", "fail" or "refused"
    reason: str = ""


@dataclass
class OpCounts:
    op_type: str
    outcomes: list = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)


def _case_module_dir() -> str:
    onnx = onnx_module()
    import onnx.backend.test.case.node as node_cases  # noqa: F401 - the generators' package
    return os.path.dirname(onnx.backend.test.case.node.__file__)


def _module_of(op_type: str):
    """The name of the generator module that defines the op's test cases (``class Op(Base)``)."""
    folder = _case_module_dir()
    for file in sorted(os.listdir(folder)):
        if file.endswith(".py") and not file.startswith("_"):
            with open(os.path.join(folder, file)) as f:
                if f"class {op_type}(Base)" in f.read():
                    return "onnx.backend.test.case.node." + file[:-3]
    return None


def cases_of(op_type: str) -> list:
    """The node test cases onnx makes for ``op_type`` (its own and its function expanded)."""
    onnx_module()
    import onnx.backend.test.case.node as node_cases
    module = _module_of(op_type)
    if module is None:
        return []
    node_cases._TargetOpType = op_type
    node_cases._NodeTestCases.clear()
    node_cases._existing_names.clear()
    try:
        with warnings.catch_warnings():   # onnx's generators divide by zero on purpose
            warnings.simplefilter("ignore")
            if module in sys.modules:
                importlib.reload(sys.modules[module])
            else:
                importlib.import_module(module)
        made = list(node_cases._NodeTestCases)
    finally:
        node_cases._TargetOpType = None
        node_cases._NodeTestCases.clear()
        node_cases._existing_names.clear()
    return [Case(op_type, c.name, c.model, c.data_sets, c.rtol, c.atol) for c in made]


def _array(value):
    onnx = onnx_module()
    return onnx.numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)


def _prepared(case: Case, inputs):
    """The case's model with its integer inputs made initializers, and the streamed feeds."""
    onnx = onnx_module()
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    feeds, keep = {}, []
    for vi, value in zip(list(graph.input), inputs):
        array = _array(value)
        if array.dtype in _STREAMED:
            feeds[vi.name] = array
            keep.append(vi)
        elif array.dtype in (np.int64, np.uint64):
            graph.initializer.append(onnx.numpy_helper.from_array(array, vi.name))
        else:
            raise popart_exception(f"input {vi.name!r} is {array.dtype}: popsim.popart streams float32, float16, bool, "
                                   "8- to 32-bit integer and FNUZ float8 inputs and reads int64/uint64 ones as "
                                   "constants")
    del graph.input[:]
    graph.input.extend(keep)
    return model, feeds


def run_case(case: Case, tiles: int = TILES) -> Outcome:
    """Run one case's data sets; its outcome (see the module's doc)."""
    from .session import InferenceSession
    try:
        for inputs, outputs in case.data_sets:
            model, feeds = _prepared(case, inputs)
            names = [o.name for o in model.graph.output]
            want = [_array(o) for o in outputs]
            for n, w in zip(names, want):
                if w.dtype not in _STREAMED and w.dtype not in (np.int64, np.uint64):
                    raise popart_exception(f"output {n!r} is {w.dtype}: popsim.popart returns float32, float16, bool, "
                                           "integer (int32 for int64, uint32 for uint64) and FNUZ float8 anchors")
            flow = DataFlow(1, {n: AnchorReturnType("ALL") for n in names})
            device = DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": tiles})
            session = InferenceSession(fnModel=model.SerializeToString(), dataFlow=flow, deviceInfo=device)
            session.prepareDevice()
            anchors = session.initAnchorArrays()
            session.weightsFromHost()
            session.run(PyStepIO(feeds, anchors))
            for n, w in zip(names, want):
                got = anchors[n]
                if w.dtype in (np.int64, np.uint64):   # PopART runs int64 as int32
                    got = got.astype(w.dtype)
                if got.shape != w.shape or got.dtype != w.dtype:
                    return Outcome(case.name, "fail", f"output {n!r} is {got.dtype} {got.shape}, expected {w.dtype} "
                                                      f"{w.shape}")
                if float8.is_float8(w.dtype):   # byte for byte (0x80 the one NaN)
                    if not np.array_equal(got.view(np.uint8), w.view(np.uint8)):
                        bad = int(np.sum(got.view(np.uint8) != w.view(np.uint8)))
                        return Outcome(case.name, "fail", f"output {n!r} differs in {bad} of {w.size} bytes")
                elif w.dtype.kind != "f" and not np.array_equal(got, w) or \
                        not np.allclose(got, w, rtol=case.rtol, atol=case.atol, equal_nan=True):
                    err = float(np.max(np.abs(got - w))) if got.size else 0.0
                    return Outcome(case.name, "fail", f"output {n!r} differs (max abs error {err:.3g})")
    except popart_exception as e:
        return Outcome(case.name, "refused", _first_line(str(e)))
    except Exception as e:  # noqa: BLE001 - a crash below the lowering is a failure, kept with its message
        return Outcome(case.name, "fail", f"{type(e).__name__}: {_first_line(str(e))}")
    return Outcome(case.name, "pass")


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.split("; supported:")[0][:200]


def as_float16(case: Case):
    """The case with its float32 tensors float16 (the model's inputs, outputs and values, the
    data, the expected outputs rounded to float16), compared at rtol and atol 2e-2; None where
    that is not a plain change of type (an expanded function, initializers, tensor or graph
    attributes, outputs computed in float32 whatever the input type, float64 data, data
    float16 rounds by more than 1e-2)."""
    onnx = onnx_module()
    graph = case.model.graph
    node = graph.node[0] if len(graph.node) == 1 else None
    if node is None or graph.initializer or node.op_type == "LayerNormalization" or any(
            a.type in (onnx.AttributeProto.TENSOR, onnx.AttributeProto.GRAPH) for a in node.attribute):
        return None
    sets = []
    for inputs, outputs in case.data_sets:
        ins, outs = [_array(v) for v in inputs], [_array(v) for v in outputs]
        if np.float64 in [a.dtype for a in ins + outs] or np.float32 not in [a.dtype for a in ins]:
            return None
        if any(_rounding(a) > 1e-2 for a in ins + outs if a.dtype == np.float32):   # float16 cannot hold it
            return None
        sets.append(([a.astype(np.float16) if a.dtype == np.float32 else a for a in ins],
                     [a.astype(np.float16) if a.dtype == np.float32 else a for a in outs]))
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    for vi in list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info):
        if vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    return Case(case.op_type, case.name + "_as_float16", model, sets, rtol=2e-2, atol=2e-2)


def _rounding(a) -> float:
    """The largest change float16 makes to ``a``'s values (infinities and NaNs kept count as none)."""
    with np.errstate(over="ignore", invalid="ignore"):
        b = a.astype(np.float16).astype(np.float32)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        return float(np.max(np.where(same, 0.0, np.abs(b - a)))) if a.size else 0.0


def run_op(op_type: str, tiles: int = TILES, float16: bool = False) -> OpCounts:
    """The op's cases run (with ``float16``: those as_float16 makes, run in FLOAT16)."""
    cases = cases_of(op_type)
    if float16:
        cases = [c for c in map(as_float16, cases) if c is not None]
    return OpCounts(op_type, [run_case(c, tiles) for c in cases])


def counts_table(counts: list) -> str:
    """The per-op pass counts as a markdown table (docs/onnx.md shows it)."""
    rows = ["| ONNX op | passed | refused | failed | cases |", "|---|---|---|---|---|"]
    for c in counts:
        rows.append(f"| {c.op_type} | {c.count('pass')} | {c.count('refused')} | {c.count('fail')} | "
                    f"{len(c.outcomes)} |")
    total = Counter(o.status for c in counts for o in c.outcomes)
    rows.append(f"| **all** | {total['pass']} | {total['refused']} | {total['fail']} | {sum(total.values())} |")
    return "\n".join(rows) + "\n"


def all_counts(tiles: int = TILES, float16: bool = False) -> list:
    """Every supported op's node tests, run (as_float16 ones with ``float16``)."""
    return [run_op(d.op_type, tiles, float16) for d in supported_ops()]
