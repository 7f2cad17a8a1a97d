"""The lowering of a Model's nodes onto a popsim graph: the values each node reads and
writes (device tensors, or host constants such as the int64 shapes Reshape reads), and the
program the PopLibs ops append to.

Element types on the device: FLOAT16 is HALF; 8- and 16-bit integers live as CHAR, SHORT...
where streamed and are widened to INT (popops.cast) when an op reads them, as PopLibs'
arithmetic takes INT; int64 and uint64 run as INT and UNSIGNED_INT (as PopART runs int64 as
int32), a constant of them placed only where its values fit (a range check). ONNX's
FLOAT8E4M3FNUZ and FLOAT8E5M2FNUZ are QUARTER (popart/float8.py). An anchor is cast back
(popops.cast) to the device type of its ONNX type."""
import numpy as np

from popsim import BOOL, CHAR, FLOAT, HALF, INT, QUARTER, SHORT, UNSIGNED_CHAR, UNSIGNED_INT, UNSIGNED_SHORT, \
    poplin, popops, poputil
from popsim.poputil.memory_order import grouped_order

from . import float8
from .errors import popart_exception
from .layout import create_for_reader
from .model import Model
from .op_table import lookup


class Lowering:
    """What an op's lowering sees: ``graph``, ``prog`` (a Sequence the PopLibs ops append
    to), ``opset``, and the values by tensor id."""

    def __init__(self, graph, prog, model: Model, values: dict, cache=None):
        self.graph, self.prog, self.model, self.opset = graph, prog, model, model.opset
        self.cache = cache if cache is not None else poplin.PlanningCache()   # poplin's plans, shared
        self.values = dict(values)   # id -> popsim Tensor or numpy array (a host constant)
        self.saved = {}   # node name -> what its lowering keeps for its gradient (BatchNormalization's statistics)
        self._constants = 0
        self._next_tile = 0   # where the next host constant's linear mapping starts
        self._widened = {}   # id -> (narrow integer tensor, its INT copy)

    def run(self, keep=None) -> None:
        """Lower every node. With ``keep`` (the ids read after this: anchors), a value no
        later node reads and ``keep`` does not name is dropped once its last reader is
        lowered: the graph keeps its variables, and the view is freed with its cached id
        arrays (an activation read across its layout holds 8 bytes an element in ids and 16
        more in runs). Training reads every value again for the gradients: it keeps them all."""
        progress = self.model.progress
        nodes = self.model.nodes
        last = {}
        if keep is not None:
            for k, node in enumerate(nodes):
                for i in node.inputs:
                    last[i] = k
        for k, node in enumerate(nodes):
            if progress is not None:
                progress.advance(1, f"{node.op_type} {node.name}")
            d = lookup(node.op_type, self.opset, node.name, node.domain)
            inputs = [None if not i else self._value(i, node) for i in node.inputs]
            outputs = d.lower(self, node, inputs)
            for out_id, value in zip(node.outputs, outputs):
                if out_id:
                    self.values[out_id] = value
            if keep is not None:
                del inputs, outputs
                for i in list(node.inputs) + list(node.outputs):
                    if i and last.get(i, -1) <= k and i not in keep:
                        self.values.pop(i, None)

    def _value(self, tensor_id, node):
        if tensor_id not in self.values:
            raise popart_exception(f"node {node.name!r} ({node.op_type}) reads tensor {tensor_id!r}, which no input, "
                                   "initializer or earlier node provides")
        return self.values[tensor_id]

    # -- what the lowerings use -----------------------------------------------------------------
    def tensor(self, value, node, role: str = "input"):
        """A device tensor for ``value``: itself (an 8- or 16-bit integer one widened to INT),
        or a host constant placed on the tiles (``constant``)."""
        if not isinstance(value, np.ndarray):
            if value.dtype in _NARROW:   # widened once, however many ops read it
                if id(value) not in self._widened:
                    self._widened[id(value)] = (value, popops.cast(self.graph, value, INT, self.prog,
                                                                   f"{node.name}/{role}/toInt"))
                return self._widened[id(value)][1]
            return value
        return self.constant(value, node, role)

    def constant(self, value: np.ndarray, node, role: str = "input"):
        """A host constant placed on the tiles in its device type (``device_type``). One the
        reading op has a creator for (a Conv's weights, a MatMul's right-hand side) is laid
        out by it, a variable holding the values from the start, as PopART makes its
        constants (layout.create_for_reader): read through any other layout, each batch
        would gather it element by element. Any other is Graph.add_constant mapped linearly,
        each starting on the tile after the last one's, so that a model's many small
        constants (biases, shapes) spread over the tiles instead of all landing on tile 0."""
        dtype = device_type(value.dtype, f"node {node.name!r} ({node.op_type}): its {role}")
        array = float8.as_bytes(np.array(value, order="C"))   # (ascontiguousarray would make a scalar 1-D)
        if dtype.is_integral and dtype != BOOL and array.size:
            info = np.iinfo(dtype.numpy)
            if array.min() < info.min or array.max() > info.max:
                raise popart_exception(f"node {node.name!r} ({node.op_type}): its {role} is a {value.dtype} constant "
                                       f"with values in [{array.min()}, {array.max()}], outside {dtype}'s range "
                                       f"[{info.min}, {info.max}]; popsim.popart runs {value.dtype} data as {dtype} "
                                       "(as PopART runs int64 as int32)")
        self._constants += 1
        name = f"{node.name}/constant{self._constants}"
        slot = next((i for i, tid in enumerate(getattr(node, "inputs", ())) if tid and self.values.get(tid) is value),
                    None)
        laid_out = None if slot is None else create_for_reader(self.graph, self.model, node, slot, array.shape,
                                                                self.cache, dtype, name)
        if laid_out is not None:
            self.graph.set_initial_value(*_in_memory_order(laid_out, array.astype(dtype.numpy)))
            return laid_out
        c = self.graph.add_constant(UNSIGNED_CHAR if dtype == QUARTER else dtype, array.shape,
                                    array.astype(dtype.numpy), name)
        mapping, self._next_tile = poputil.calc_linear_tile_mapping_and_new_offset(self.graph, c, self._next_tile)
        self.graph.set_tile_mapping(c, mapping)
        if dtype == QUARTER:   # placed as its bytes, then copied into a QUARTER clone (PopART's way)
            name = float8.name_of(value.dtype)
            return float8.as_quarter(self.graph, c, float8.metadata(self.graph, name), self.prog)
        return c

    def anchor(self, tid: str):
        """The device tensor of anchor ``tid`` in the device type of its ONNX type: a host
        constant placed on the tiles, a tensor of another type cast (popops.cast)."""
        value = self.values.get(tid)
        if value is None:
            raise popart_exception(f"DataFlow anchor {tid!r} is not computed by the model")
        node = _AnchorNode(tid)
        t = self.constant(value, node, "value") if isinstance(value, np.ndarray) else value
        onnx_type = (self.model.shapes.get(tid) or (None,))[0]
        want = ANCHOR_TYPES.get(onnx_type, t.dtype)
        if t.dtype != want:
            t = popops.cast(self.graph, t, want, self.prog, f"anchor/{tid}/cast")
        return t

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



def _in_memory_order(t, array: np.ndarray):
    """``t`` and ``array`` (its values) alike flat in the order ``t`` holds in memory
    (poputil.memory_order.grouped_order), where that is not its own: a creator's weights
    are out-channels innermost, and given in their [out, in, *kernel] order every element
    would be a copy of its own when the engine loads them."""
    order = grouped_order(t)
    if order is None:
        return t, array
    return order.view(t), array.reshape(order.split).transpose(order.perm).reshape(-1)


class _AnchorNode:
    op_type = "anchor"

    def __init__(self, name):
        self.name = name


#: the device type of each ONNX type that may live on the device
ANCHOR_TYPES = {"FLOAT": FLOAT, "FLOAT16": HALF, "BOOL": BOOL, "INT32": INT, "INT64": INT, "INT8": CHAR,
                "UINT8": UNSIGNED_CHAR, "INT16": SHORT, "UINT16": UNSIGNED_SHORT, "UINT32": UNSIGNED_INT,
                "UINT64": UNSIGNED_INT, **{name: QUARTER for name in float8.NUMPY_OF}}
_NARROW = (CHAR, UNSIGNED_CHAR, SHORT, UNSIGNED_SHORT)


def device_type(dtype, what: str):
    """The device type a host constant of numpy ``dtype`` is placed as: float32 FLOAT,
    float16 HALF, bool BOOL, signed integers INT, uint32/uint64 UNSIGNED_INT, narrower
    unsigned ones INT."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return FLOAT
    if dtype == np.float16:
        return HALF
    if dtype == np.bool_:
        return BOOL
    if float8.is_float8(dtype):
        return QUARTER
    if dtype.kind == "i" or dtype in (np.uint8, np.uint16):
        return INT
    if dtype.kind == "u":
        return UNSIGNED_INT
    raise popart_exception(f"{what} is {dtype}, which popsim.popart does not run on the device (FLOAT, FLOAT16, "
                           "BOOL and integers only, as PopART)")
