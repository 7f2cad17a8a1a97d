"""popart.Builder: an ONNX model made op by op, as PopART's Builder makes one. Tensor ids
are strings, made as PopART makes them; ``builder.aiOnnx.<op>(inputs, ...)`` (ai_onnx.py:
PopART's signatures) adds a node of each op the op table (op_table.py) supports, under its
lower-case name; builder_extras.py and node_attributes.py have the rest of PopART's Builder."""
import numpy as np

from .errors import onnx_module, popart_exception
from .ai_onnx import AiOnnx
from .builder_extras import BuilderExtras
from .graphcore_builder import AiGraphcore, loss_output_shape
from .node_attributes import NodeAttributes
from .op_table import supported_ops
from .tensor_info import NUMPY_OF, TensorInfo, dtype_name, lcase_name

#: the ai.onnx opset a Builder writes unless told otherwise (PopART's defaultAiOnnxOpset)
DEFAULT_OPSET = 11


class Builder(NodeAttributes, BuilderExtras):
    """``Builder()``, ``Builder(model_proto_bytes)`` or ``Builder("model.onnx")``, and
    ``opsets={"ai.onnx": N}``."""

    def __init__(self, modelProtoOrFilename=None, opsets=None):  # noqa: N803 - PopART's names
        onnx = onnx_module()
        self._name_scopes = []
        if modelProtoOrFilename is not None:
            from .model import model_proto
            proto = model_proto(modelProtoOrFilename)
            g = proto.graph
            self._opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), DEFAULT_OPSET)
            self._nodes, self._inputs = list(g.node), list(g.input)
            self._initializers, self._outputs = list(g.initializer), list(g.output)
        else:
            self._opset = int((opsets or {}).get("ai.onnx", DEFAULT_OPSET))
            self._nodes, self._inputs, self._initializers, self._outputs = [], [], [], []
        if not 9 <= self._opset <= onnx.defs.onnx_opset_version():
            newest = onnx.defs.onnx_opset_version()
            raise popart_exception(f"Builder: ai.onnx opset {self._opset} is outside 9..{newest}"
                                   " (the opsets popsim.popart runs with the installed onnx)")
        self._chosen_opset = modelProtoOrFilename is not None or bool(opsets and "ai.onnx" in opsets)
        self.aiOnnx = AiOnnx(self, [d.op_type for d in supported_ops()])
        self.aiGraphcore = self.aiGraphcoreOpset1 = AiGraphcore(self)

    def __getattr__(self, name):
        """``aiOnnxOpset<N>``: the ai.onnx ops at opset N, which must be the Builder's (as PopART,
        the first one used picks it when the Builder was made without ``opsets``)."""
        if name.startswith("aiOnnxOpset") and name[len("aiOnnxOpset"):].isdigit():
            return self._opset_namespace(int(name[len("aiOnnxOpset"):]))
        raise AttributeError(f"popart.Builder has no attribute {name!r}")

    # -- ids -------------------------------------------------------------------------------------
    def _ids(self) -> set:
        ids = {v.name for v in self._inputs} | {t.name for t in self._initializers}
        return ids | {o for n in self._nodes for o in n.output}

    def _new_id(self, hint: str, index: int = -1) -> str:
        """PopART's ids: the name scopes, ``hint`` (``hint:index`` for an op's output ``index``),
        then ``/1``, ``/2``... until the id is free (``Add:0``, ``Add:0/1``; ``input``, ``input/1``)."""
        taken = self._ids()
        base = self.getNameScope(hint) + (f":{index}" if index >= 0 else "")
        proposed, counter = base, 0
        while proposed in taken:
            counter += 1
            proposed = f"{base}/{counter}"
        return proposed

    def _check_ids(self, args, what: str) -> list:
        if isinstance(args, str) or not isinstance(args, (list, tuple)):
            raise popart_exception(f"{what}: inputs must be a list of tensor ids, found {args!r}")
        known = self._ids()
        for a in args:
            if a and a not in known:
                raise popart_exception(f"{what}: no tensor {a!r} in this model; known: {sorted(known)}")
        return list(args)

    # -- tensors ---------------------------------------------------------------------------------
    def addInputTensor(self, tensorInfo, shapeOrDebugContext=None, debugContext=""):  # noqa: N802,N803
        """``addInputTensor(TensorInfo, debugContext="")`` or ``addInputTensor("FLOAT", shape, debugContext="")``."""
        onnx = onnx_module()
        if isinstance(tensorInfo, TensorInfo):
            info, debugContext = tensorInfo, shapeOrDebugContext or debugContext  # noqa: N806 - PopART's name (the argument)
        else:
            info = TensorInfo(tensorInfo, shapeOrDebugContext)
        tid = self._new_id(str(debugContext) or "input")
        elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(NUMPY_OF[info.data_type()]))
        self._inputs.append(onnx.helper.make_tensor_value_info(tid, elem, info.shape()))
        return tid

    def addInitializedInputTensor(self, initVal, debugContext=""):  # noqa: N802,N803
        """A weight: an initializer holding ``initVal`` (a numpy array)."""
        onnx = onnx_module()
        array = np.asarray(initVal)
        dtype_name(array.dtype)  # a type ONNX knows
        tid = self._new_id(str(debugContext) or "init_input")
        self._initializers.append(onnx.numpy_helper.from_array(array, tid))
        return tid

    def addOutputTensor(self, outputName):  # noqa: N802,N803
        onnx = onnx_module()
        self._check_ids([outputName], "addOutputTensor")
        self._outputs.append(onnx.helper.make_empty_tensor_value_info(outputName))

    def _add_node(self, op_type, args, attrs, debug_context, num_outputs, domain=""):
        onnx = onnx_module()
        inputs = self._check_ids(args, f"{'aiGraphcore' if domain else 'aiOnnx'}.{op_type.lower()}")
        count = 1 if num_outputs is None else int(num_outputs)
        outs = [self._new_id(op_type, i) for i in range(count)]
        name = self.getNameScope(str(debug_context)) if debug_context else outs[0]
        attrs = {**self.scoped_attributes(), **{k: v for k, v in attrs.items() if v is not None}}
        self._nodes.append(onnx.helper.make_node(op_type, inputs, outs, name=name, domain=domain or None, **attrs))
        return outs if num_outputs is not None else outs[0]

    # -- the model -------------------------------------------------------------------------------
    def _proto(self):
        onnx = onnx_module()
        graph = onnx.helper.make_graph(self._nodes, getattr(self, "_graph_name", "popart_builder"), self._inputs,
                                       self._outputs, self._initializers)
        opsets = [onnx.helper.make_opsetid("", self._opset)]
        if any(n.domain == "ai.graphcore" for n in self._nodes):
            opsets.append(onnx.helper.make_opsetid("ai.graphcore", 1))
        return onnx.helper.make_model(graph, opset_imports=opsets, producer_name="popsim.popart")

    def getModelProto(self) -> bytes:  # noqa: N802
        """The model as the bytes of a serialized ONNX ModelProto (outputs typed by shape inference)."""
        onnx = onnx_module()
        proto = self._proto()
        untyped = [o.name for o in proto.graph.output if not o.type.HasField("tensor_type")]
        if untyped:
            try:
                inferred = onnx.shape_inference.infer_shapes(proto)
            except Exception as e:
                raise popart_exception(f"Builder: the model's shapes cannot be inferred: {e}") from e
            known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.input)}
            for o in proto.graph.output:
                if o.name in known:
                    o.CopyFrom(known[o.name])
            self._type_losses(proto, inferred)
        return proto.SerializeToString()

    def _type_losses(self, proto, inferred) -> None:
        """Type the outputs of ai.graphcore loss nodes (onnx cannot infer them): FLOAT."""
        onnx = onnx_module()
        from .model import _type_of
        shapes = {vi.name: _type_of(vi)[1] for vi in list(inferred.graph.value_info) + list(inferred.graph.input)}
        shapes.update({t.name: list(t.dims) for t in proto.graph.initializer})
        losses = {o: n for n in proto.graph.node if n.domain == "ai.graphcore" for o in n.output}
        for o in proto.graph.output:
            if not o.type.HasField("tensor_type") and o.name in losses:
                shape = loss_output_shape(losses[o.name], shapes)
                o.CopyFrom(onnx.helper.make_tensor_value_info(o.name, onnx.TensorProto.FLOAT, shape))

    def saveModelProto(self, filename) -> None:  # noqa: N802
        with open(filename, "wb") as f:
            f.write(self.getModelProto())

    def _inferred(self) -> dict:
        onnx = onnx_module()
        try:
            proto = onnx.shape_inference.infer_shapes(self._proto(), strict_mode=True)
        except Exception as e:
            raise popart_exception(f"Builder: the model's shapes cannot be inferred: {e}") from e
        from .model import _type_of
        types = {vi.name: _type_of(vi) for vi in list(proto.graph.input) + list(proto.graph.value_info)
                 + list(proto.graph.output)}
        types.update({t.name: (dtype_name(onnx.helper.tensor_dtype_to_np_dtype(t.data_type)), list(t.dims))
                      for t in proto.graph.initializer})
        return types

    def getTensorShape(self, id):  # noqa: N802,A002
        types = self._inferred()
        if id not in types or types[id][1] is None:
            raise popart_exception(f"getTensorShape: no tensor {id!r} with a known shape in this model")
        return list(types[id][1])

    def getTensorDtypeString(self, id):  # noqa: N802,A002
        types = self._inferred()
        if id not in types:
            raise popart_exception(f"getTensorDtypeString: no tensor {id!r} in this model")
        return lcase_name(types[id][0])   # PopART's: "float32", "int32"

    def getInputTensorIds(self):  # noqa: N802
        return [v.name for v in self._inputs]

    def getOutputTensorIds(self):  # noqa: N802
        return [v.name for v in self._outputs]

    def isInitializer(self, id) -> bool:  # noqa: N802,A002
        return id in {t.name for t in self._initializers}
