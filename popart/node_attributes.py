"""The Builder's node attributes that place ops: ``virtualGraph`` (the IPU a node runs on,
ONNX attribute ``__ipu_number``) and ``pipelineStage`` (``__pipeline_stage``), as PopART's
Builder sets them: as context managers over the nodes added inside them
(``with builder.virtualGraph(1), builder.pipelineStage(1): ...``) or on the nodes that
produce given tensors (``builder.virtualGraph(tensor_id, 1)``). ONNX's checker lets
attributes whose names start with ``__`` through, so the model stays valid."""
import numbers

from .errors import onnx_module, popart_exception

#: PopART's attribute names (<popart/names.hpp>: sVirtualGraphAttribute, sPipelineStageAttribute,
#: sAvailMemAttribute)
VIRTUAL_GRAPH, PIPELINE_STAGE = "__ipu_number", "__pipeline_stage"
AVAILABLE_MEMORY = "__available_memory_proportion"
#: the ops whose poplin plan takes a node's availableMemoryProportion
PLANNED_OPS = ("MatMul", "Gemm", "Conv", "ConvTranspose")


def poplin_options(node):
    """The poplin options of a MatMul, Gemm or Conv node (a model.Node): its
    ``__available_memory_proportion``, as PopART passes it to poplin; None without one."""
    value = node.attrs.get(AVAILABLE_MEMORY)
    return None if value is None else {"availableMemoryProportion": float(value)}


def _index(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise popart_exception(f"Builder.{what}: the value must be a non-negative int, found {value!r}")
    return int(value)


class _AttributeScope:
    """The context manager ``virtualGraph(ipu)`` / ``pipelineStage(stage)`` returns."""

    def __init__(self, builder, name: str, value: int):
        self._builder, self._name, self._value = builder, name, value

    def __enter__(self):
        self._builder._attribute_scopes().setdefault(self._name, []).append(self._value)
        return self

    def __exit__(self, *exc):
        self._builder._attribute_scopes()[self._name].pop()
        return False


class NodeAttributes:
    """Mixed into Builder: the placing attributes of its nodes (``self._nodes``)."""

    def _attribute_scopes(self) -> dict:
        if not hasattr(self, "_scopes"):
            self._scopes: dict = {}
        return self._scopes

    def scoped_attributes(self) -> dict:
        """The attributes a node added now gets from the enclosing context managers."""
        return {name: stack[-1] for name, stack in self._attribute_scopes().items() if stack}

    def _nodes_of(self, outputs, what: str) -> list:
        ids = [outputs] if isinstance(outputs, str) else list(outputs)
        nodes = []
        for tid in ids:
            node = next((n for n in self._nodes if tid in n.output), None)
            if node is None:
                raise popart_exception(f"Builder.{what}: no node of this model produces tensor {tid!r}; pass the "
                                       "id an aiOnnx op returned")
            nodes.append(node)
        return nodes

    def _set(self, outputs, name: str, value: int, what: str) -> None:
        onnx_helper = onnx_module().helper
        for node in self._nodes_of(outputs, what):
            kept = [a for a in node.attribute if a.name != name]
            del node.attribute[:]
            node.attribute.extend(kept + [onnx_helper.make_attribute(name, value)])

    def _place(self, args, name: str, what: str):
        if len(args) == 1 and not isinstance(args[0], (str, list, tuple, set)):
            return _AttributeScope(self, name, _index(args[0], what))
        if len(args) not in (1, 2):
            raise popart_exception(f"Builder.{what}: expected ({what}Index) for a context manager or "
                                   f"(nodeOutputNames, value=0), found {len(args)} arguments")
        self._set(args[0], name, _index(args[1] if len(args) == 2 else 0, what), what)
        return None

    def setAvailableMemoryProportion(self, nodeOutputNames, availableMemoryProportion):  # noqa: N802,N803
        """The availableMemoryProportion poplin plans the node(s) producing ``nodeOutputNames``
        with (MatMul, Gemm, Conv, ConvTranspose): PopART's node attribute
        ``__available_memory_proportion``, in (0, 1]."""
        value = availableMemoryProportion
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value <= 1:
            raise popart_exception(f"Builder.setAvailableMemoryProportion: the proportion must be in (0, 1], as "
                                   f"PopART's, found {value!r}")
        ids = [nodeOutputNames] if isinstance(nodeOutputNames, str) else list(nodeOutputNames)
        for node in self._nodes_of(ids, "setAvailableMemoryProportion"):
            if node.op_type not in PLANNED_OPS:
                raise popart_exception(f"Builder.setAvailableMemoryProportion: node {node.name!r} is {node.op_type}; "
                                       f"popsim.popart plans {', '.join(PLANNED_OPS)} with it (poplin's "
                                       "availableMemoryProportion); leave it out for other ops")
        self._set(ids, AVAILABLE_MEMORY, float(value), "setAvailableMemoryProportion")

    def virtualGraph(self, *args):  # noqa: N802 - PopART's name
        """``with builder.virtualGraph(ipu):`` or ``builder.virtualGraph(nodeOutputNames, ipu)``."""
        return self._place(args, VIRTUAL_GRAPH, "virtualGraph")

    def pipelineStage(self, *args):  # noqa: N802
        """``with builder.pipelineStage(stage):`` or ``builder.pipelineStage(nodeOutputNames, stage)``."""
        return self._place(args, PIPELINE_STAGE, "pipelineStage")

    def _current(self, name: str, what: str) -> int:
        stack = self._attribute_scopes().get(name)
        if not stack:
            raise popart_exception(f"Builder.{what}: no enclosing {what[3:]} context; use it inside "
                                   f"`with builder.{what[3].lower() + what[4:]}(n):`")
        return stack[-1]

    def hasVirtualGraph(self) -> bool:  # noqa: N802
        return bool(self._attribute_scopes().get(VIRTUAL_GRAPH))

    def hasPipelineStage(self) -> bool:  # noqa: N802
        return bool(self._attribute_scopes().get(PIPELINE_STAGE))

    def getPipelineStage(self) -> int:  # noqa: N802
        return self._current(PIPELINE_STAGE, "getPipelineStage")

    def getVirtualGraph(self, nodeOutputNames=None) -> int:  # noqa: N802,N803
        """The enclosing context's IPU, or the IPU of the node producing ``nodeOutputNames``."""
        if nodeOutputNames is None:
            return self._current(VIRTUAL_GRAPH, "getVirtualGraph")
        return self.getInt64NodeAttribute(VIRTUAL_GRAPH, nodeOutputNames)

    def nodeHasAttribute(self, attributeName, nodeOutputNames) -> bool:  # noqa: N802,N803
        return all(any(a.name == attributeName for a in n.attribute)
                   for n in self._nodes_of(nodeOutputNames, "nodeHasAttribute"))

    def getInt64NodeAttribute(self, attributeName, nodeOutputNames) -> int:  # noqa: N802,N803
        values = set()
        for node in self._nodes_of(nodeOutputNames, "getInt64NodeAttribute"):
            attr = next((a for a in node.attribute if a.name == attributeName), None)
            if attr is None:
                raise popart_exception(f"Builder.getInt64NodeAttribute: node {node.name!r} has no attribute "
                                       f"{attributeName!r}")
            values.add(int(attr.i))
        if len(values) != 1:
            raise popart_exception(f"Builder.getInt64NodeAttribute: the nodes of {nodeOutputNames!r} differ in "
                                   f"{attributeName!r}: {sorted(values)}")
        return values.pop()

    # -- any attribute, as PopART's get<Type>NodeAttribute / addNodeAttribute --------------------
    def _attribute_values(self, attributeName, nodeOutputNames, what: str) -> list:  # noqa: N803
        values = []
        for node in self._nodes_of(nodeOutputNames, what):
            attr = next((a for a in node.attribute if a.name == attributeName), None)
            if attr is None:
                raise popart_exception(f"Builder.{what}: node {node.name!r} has no attribute {attributeName!r}; it "
                                       f"has {sorted(a.name for a in node.attribute)}")
            values.append(onnx_module().helper.get_attribute_value(attr))
        return values

    def _one(self, attributeName, nodeOutputNames, what, kind):  # noqa: N803
        values = self._attribute_values(attributeName, nodeOutputNames, what)
        value = values[0]
        if any(v != value for v in values) or not all(isinstance(v, kind) for v in values):
            raise popart_exception(f"Builder.{what}: {attributeName!r} of {nodeOutputNames!r} is {values}, not one "
                                   f"{kind.__name__}")
        return [v.decode() for v in value] if what.startswith("getStringVector") else \
            value.decode() if isinstance(value, bytes) else value

    def getFloatNodeAttribute(self, attributeName, nodeOutputNames) -> float:  # noqa: N802,N803
        return self._one(attributeName, nodeOutputNames, "getFloatNodeAttribute", float)

    def getInt64VectorNodeAttribute(self, attributeName, nodeOutputNames) -> list:  # noqa: N802,N803
        return list(self._one(attributeName, nodeOutputNames, "getInt64VectorNodeAttribute", list))

    def getFloatVectorNodeAttribute(self, attributeName, nodeOutputNames) -> list:  # noqa: N802,N803
        return list(self._one(attributeName, nodeOutputNames, "getFloatVectorNodeAttribute", list))

    def getStringNodeAttribute(self, attributeName, nodeOutputNames) -> str:  # noqa: N802,N803
        return self._one(attributeName, nodeOutputNames, "getStringNodeAttribute", bytes)

    def getStringVectorNodeAttribute(self, attributeName, nodeOutputNames) -> list:  # noqa: N802,N803
        return self._one(attributeName, nodeOutputNames, "getStringVectorNodeAttribute", list)

    def getAllNodeAttributeNames(self, nodeOutputNames) -> list:  # noqa: N802,N803
        nodes = self._nodes_of(nodeOutputNames, "getAllNodeAttributeNames")
        return sorted({a.name for n in nodes for a in n.attribute})

    def addNodeAttribute(self, attributeName, attributeValue, nodeOutputNames) -> None:  # noqa: N802,N803
        """Set an attribute on the node(s) producing ``nodeOutputNames`` (the model must stay valid ONNX:
        an attribute the op does not define is refused when the session is made, unless named ``__...``)."""
        nodes = self._nodes_of(nodeOutputNames, "addNodeAttribute")
        if any(a.name == attributeName for n in nodes for a in n.attribute):
            raise popart_exception(f"Builder.addNodeAttribute: the node already has {attributeName!r}; PopART refuses "
                                   "to add it twice (removeNodeAttribute first)")
        self._set(nodeOutputNames, attributeName, attributeValue, "addNodeAttribute")

    def removeNodeAttribute(self, attributeName, nodeOutputNames) -> None:  # noqa: N802,N803
        for node in self._nodes_of(nodeOutputNames, "removeNodeAttribute"):
            kept = [a for a in node.attribute if a.name != attributeName]
            if len(kept) == len(node.attribute):
                raise popart_exception(f"Builder.removeNodeAttribute: node {node.name!r} has no attribute "
                                       f"{attributeName!r}")
            del node.attribute[:]
            node.attribute.extend(kept)
