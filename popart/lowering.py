"""The lowering of a Model's nodes onto a popsim graph: the values each node reads and
writes (device tensors, or host constants such as the int64 shapes Reshape reads), and the
program the PopLibs ops append to."""
import numpy as np

from popsim import FLOAT, poplin, poputil

from .errors import popart_exception
from .model import Model
from .op_table import lookup


class Lowering:
    """What an op's lowering sees: ``graph``, ``prog`` (a Sequence the PopLibs ops append
    to), ``opset``, and the values by tensor id."""

    def __init__(self, graph, prog, model: Model, values: dict, cache=None):
        self.graph, self.prog, self.model, self.opset = graph, prog, model, model.opset
        self.cache = cache if cache is not None else poplin.PlanningCache()   # poplin's plans, shared
        self.values = dict(values)   # id -> popsim Tensor or numpy array (a host constant)
        self._constants = 0

    def run(self) -> None:
        progress = self.model.progress
        for node in self.model.nodes:
            if progress is not None:
                progress.advance(1, f"{node.op_type} {node.name}")
            d = lookup(node.op_type, self.opset, node.name)
            inputs = [None if not i else self._value(i, node) for i in node.inputs]
            outputs = d.lower(self, node, inputs)
            for out_id, value in zip(node.outputs, outputs):
                if out_id:
                    self.values[out_id] = value

    def _value(self, tensor_id, node):
        if tensor_id not in self.values:
            raise popart_exception(f"node {node.name!r} ({node.op_type}) reads tensor {tensor_id!r}, which no input, "
                                   "initializer or earlier node provides")
        return self.values[tensor_id]

    # -- what the lowerings use -----------------------------------------------------------------
    def tensor(self, value, node, role: str = "input"):
        """A device tensor for ``value``: itself, or a FLOAT host constant placed on the tiles."""
        if not isinstance(value, np.ndarray):
            return value
        if value.dtype.kind != "f":
            raise popart_exception(f"node {node.name!r} ({node.op_type}): its {role} is a {value.dtype} constant used "
                                   "as data; popsim.popart runs FLOAT data on the device so far (integer constants "
                                   "are read only as shapes, axes and indices)")
        self._constants += 1
        array = np.ascontiguousarray(value, np.float32)
        c = self.graph.add_constant(FLOAT, array.shape, array, f"{node.name}/constant{self._constants}")
        poputil.map_tensor_linearly(self.graph, c)
        return c

    def host(self, value, node, role: str) -> np.ndarray:
        """A value known when the graph is built (an initializer or Constant), as numpy."""
        if not isinstance(value, np.ndarray):
            raise popart_exception(f"node {node.name!r} ({node.op_type}): its {role} must be a constant (an "
                                   "initializer or a Constant node's output), found a tensor computed on the device")
        return value

    def name(self, node) -> str:
        return node.name

    @staticmethod
    def attr(node, key: str, default=None):
        return node.attrs.get(key, default)

