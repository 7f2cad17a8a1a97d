"""The Builder's node attributes that place ops: ``virtualGraph`` (the IPU a node runs on,
ONNX attribute ``__ipu_number``) and ``pipelineStage`` (``__pipeline_stage``), as PopART's
Builder sets them: as context managers over the nodes added inside them
(``with builder.virtualGraph(1), builder.pipelineStage(1): ...``) or on the nodes that
produce given tensors (``builder.virtualGraph(tensor_id, 1)``). ONNX's checker lets
attributes whose names start with ``__`` through, so the model stays valid."""
import numbers

from .errors import onnx_module, popart_exception

#: PopART's attribute names (popart/names.hpp: sVirtualGraphAttribute, sPipelineStageAttribute)
VIRTUAL_GRAPH, PIPELINE_STAGE = "__ipu_number", "__pipeline_stage"


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
            self._scopes = {}
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
