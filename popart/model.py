"""Loading an ONNX model for a session: from a Builder, the bytes of a ModelProto or a file;
checked, brought to an opset popsim.popart runs (onnx.version_converter), shapes inferred
(onnx.shape_inference), and read into the plain description the lowering walks."""
import os
from dataclasses import dataclass, field

import numpy as np

from .errors import onnx_module, popart_exception
from .op_table import GRAPHCORE, graphcore_ops
from .tensor_info import NAME_OF

#: the ai.onnx opsets a model may use: 9 up to the newest the installed onnx knows
MIN_OPSET = 9


def max_opset() -> int:
    return onnx_module().defs.onnx_opset_version()


@dataclass
class Node:
    op_type: str
    name: str
    inputs: list      # tensor ids ("" for an absent optional input)
    outputs: list
    attrs: dict       # attribute name -> Python value (ints, floats, lists, numpy arrays, str)
    domain: str = ""  # "" (ai.onnx) or "ai.graphcore" (PopART's losses)


@dataclass
class Model:
    opset: int
    inputs: dict                  # id -> (dtype name, shape) of the streamed inputs
    initializers: dict            # id -> numpy array (the weights; int64 ones are shapes/indices)
    outputs: list                 # ids
    nodes: list                   # Node, in topological order
    shapes: dict = field(default_factory=dict)   # id -> (dtype name, shape) for every known value
    progress: object = None       # popsim's Progress, advanced a node at a time as the graph is built


def model_proto(fn_model):
    """A ModelProto from a Builder, bytes of a serialized ModelProto, a ModelProto or a path."""
    onnx = onnx_module()
    if hasattr(fn_model, "getModelProto"):  # a Builder
        fn_model = fn_model.getModelProto()
    if isinstance(fn_model, onnx.ModelProto):
        return fn_model
    if isinstance(fn_model, (bytes, bytearray)):
        try:
            return onnx.load_model_from_string(bytes(fn_model))
        except Exception as e:
            raise popart_exception(f"fnModel: {len(fn_model)} bytes that are not a serialized ONNX ModelProto "
                                   f"({e}); pass builder.getModelProto() or a path to a .onnx file") from e
    if isinstance(fn_model, (str, os.PathLike)):
        if not os.path.isfile(fn_model):
            raise popart_exception(f"fnModel: no file {str(fn_model)!r}; pass a path to a .onnx file, the bytes of "
                                   "a ModelProto or a Builder")
        return onnx.load(os.fspath(fn_model))
    raise popart_exception(f"fnModel: expected a Builder, ModelProto bytes or a file path, found "
                           f"{type(fn_model).__name__}")


def _opset_of(proto) -> int:
    versions = [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")]
    return versions[0] if versions else MIN_OPSET


def check_graph(graph) -> None:
    """Every node reads tensors made before it (a model input, an initializer or an earlier
    node's output) and makes tensors no one else makes; the outputs exist. Errors name the
    node and the tensor (onnx's own messages often do not)."""
    made = {v.name: "a model input" for v in graph.input} | {t.name: "an initializer" for t in graph.initializer}
    later = {o: n.name or f"{n.op_type}_{i}" for i, n in enumerate(graph.node) for o in n.output}
    for i, n in enumerate(graph.node):
        name = n.name or f"{n.op_type}_{i}"
        for tid in n.input:
            if tid and tid not in made:
                why = (f"node {later[tid]!r} makes it later in the graph (a cycle, or nodes out of topological order)"
                       if tid in later else "no node, model input or initializer makes it (a dangling input)")
                raise popart_exception(f"node {name!r} ({n.op_type}) reads tensor {tid!r}, but {why}; "
                                       "fix the model so that each tensor is made before it is read")
        for tid in n.output:
            if tid and tid in made:
                first = made[tid] if made[tid].startswith("a") else f"made by node {made[tid]!r}"
                raise popart_exception(f"node {name!r} ({n.op_type}) makes tensor {tid!r}, which is already {first}; "
                                       "each tensor id must be made once (rename one of them)")
            made[tid] = name
    for o in graph.output:
        if o.name not in made:
            raise popart_exception(f"model output {o.name!r} is made by no node, input or initializer of the model")


def normalised(proto):
    """The model at an opset popsim.popart runs, with its shapes inferred."""
    onnx = onnx_module()
    check_graph(proto.graph)
    opset, newest = _opset_of(proto), max_opset()
    if opset > newest:
        raise popart_exception(f"the model uses ai.onnx opset {opset}, newer than the newest the installed onnx "
                               f"package knows ({newest}); upgrade onnx (pip install -U onnx)")
    if opset < MIN_OPSET:
        try:
            proto = onnx.version_converter.convert_version(proto, MIN_OPSET)
        except Exception as e:
            raise popart_exception(f"the model uses ai.onnx opset {opset}; popsim.popart runs opsets {MIN_OPSET} to "
                                   f"{newest} and onnx.version_converter could not convert it ({e})") from e
    try:
        proto = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
        onnx.checker.check_model(proto)
        return proto
    except Exception as e:
        raise popart_exception(f"the ONNX model is not valid: {e}") from e


def _type_of(value_info):
    t = value_info.type.tensor_type
    onnx = onnx_module()
    np_type = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type) if t.elem_type else None
    name = NAME_OF.get(np.dtype(np_type)) if np_type is not None else None
    shape = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim] if t.HasField("shape") else None
    return name, shape


def _attribute(attr):
    onnx = onnx_module()
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode() for v in value]
    return value


def _refuse_double(name: str, dtype, where: str) -> None:
    if dtype == "DOUBLE":
        raise popart_exception(f"tensor {name!r} ({where}) is DOUBLE (float64): the IPU has no 64-bit floats, as "
                               "in PopART; convert the model's float64 tensors to float32")


def load(fn_model) -> Model:
    """The Model a session lowers, from anything model_proto accepts."""
    onnx = onnx_module()
    proto = normalised(model_proto(fn_model))
    g = proto.graph
    initializers = {t.name: onnx.numpy_helper.to_array(t) for t in g.initializer}
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        shapes[vi.name] = _type_of(vi)
    for name, array in initializers.items():
        shapes[name] = (NAME_OF.get(array.dtype), list(array.shape))
    inputs = {}
    for vi in g.input:
        if vi.name in initializers:
            continue
        dtype, shape = shapes[vi.name]
        _refuse_double(vi.name, dtype, "a model input")
        if shape is None or any(d is None for d in shape):
            raise popart_exception(f"model input {vi.name!r} has shape {shape}: every dimension must be known (PopART "
                                   "needs static shapes); give it a fixed shape, e.g. with the Builder's TensorInfo")
        inputs[vi.name] = (dtype, shape)
    for name, array in initializers.items():
        _refuse_double(name, NAME_OF.get(array.dtype), "an initializer")
    nodes = []
    graphcore = {d.op_type for d in graphcore_ops()}
    for i, n in enumerate(g.node):
        if n.domain not in ("", "ai.onnx") and not (n.domain == GRAPHCORE and n.op_type in graphcore):
            raise popart_exception(f"node {n.name or i!r} ({n.op_type}) is in domain {n.domain!r}: popsim.popart "
                                   f"runs ai.onnx ops and the ai.graphcore ops {sorted(graphcore)} only so far")
        node = Node(n.op_type, n.name or f"{n.op_type}_{i}", list(n.input), list(n.output),
                    {a.name: _attribute(a) for a in n.attribute}, "" if n.domain == "ai.onnx" else n.domain)
        if node.domain == GRAPHCORE:   # onnx cannot infer them: PopART's losses give FLOAT
            from .graphcore_builder import loss_output_shape
            shape = loss_output_shape(n, {k: v[1] for k, v in shapes.items()})
            for out in node.outputs:
                shapes.setdefault(out, ("FLOAT", None if shape is None else list(shape)))
        for out in node.outputs:
            _refuse_double(out, shapes.get(out, (None,))[0], f"output of node {node.name!r}")
        nodes.append(node)
    return Model(_opset_of(proto), inputs, initializers, [o.name for o in g.output], nodes, shapes)
