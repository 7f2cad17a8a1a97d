"""Cast and CastLike. A host constant (an initializer, a Constant's value) is converted as the
graph is built, as PopART folds constant expressions; a device tensor is FLOAT, and a cast
to FLOAT leaves it as it is. Casts of device data to other types are refused (popsim.popart
runs FLOAT data on the device so far)."""
import numpy as np

from ..errors import onnx_module, popart_exception
from ..op_table import op


def _cast(ctx, node, value, dtype):
    if isinstance(value, np.ndarray):
        return value.astype(dtype)
    if np.dtype(dtype) != np.float32:
        raise popart_exception(f"node {node.name!r} ({node.op_type}): casting a tensor computed on the device to "
                               f"{np.dtype(dtype)} is not supported; popsim.popart runs FLOAT data on the device so far")
    return value


@op("Cast", 6, summary="FLOAT to FLOAT: the input itself; host constants converted as the graph is built")
def cast(ctx, node, inputs):
    to = node.attrs["to"]
    return [_cast(ctx, node, inputs[0], onnx_module().helper.tensor_dtype_to_np_dtype(to))]


@op("CastLike", 15, summary="as Cast, to the type of input 1")
def cast_like(ctx, node, inputs):
    like = inputs[1]
    dtype = like.dtype if isinstance(like, np.ndarray) else np.float32
    return [_cast(ctx, node, inputs[0], dtype)]
