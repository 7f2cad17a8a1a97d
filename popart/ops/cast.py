"""Cast and CastLike. A host constant (an initializer, a Constant's value) is converted as the
graph is built, as PopART folds constant expressions; a tensor on the device is cast by
popops.cast to the device type of the target (FLOAT16 HALF, int64 INT as PopART runs it, ...;
lowering.ANCHOR_TYPES). Types the IPU has no arithmetic for (float64, bfloat16, float8,
4- and 2-bit types, strings) are refused."""
import numpy as np

from popsim import popops

from ..errors import onnx_module, popart_exception
from ..lowering import ANCHOR_TYPES
from ..op_table import op
from ..tensor_info import NAME_OF, NUMPY_OF


def _cast(ctx, node, value, dtype):
    if isinstance(value, np.ndarray):
        return value.astype(dtype)
    target = ANCHOR_TYPES.get(NAME_OF.get(np.dtype(dtype)))
    if target is None:
        raise popart_exception(f"node {node.name!r} ({node.op_type}): casting a tensor computed on the device to "
                               f"{np.dtype(dtype)} is not supported: the IPU runs FLOAT, FLOAT16, BOOL and integer "
                               "types (as PopART)")
    if value.dtype == target:
        return value
    return popops.cast(ctx.graph, value, target, ctx.prog, node.name)


@op("Cast", 6, summary="popops.cast to the target's device type (int64 as INT); host constants converted as the "
                       "graph is built")
def cast(ctx, node, inputs):
    to = node.attrs["to"]
    return [_cast(ctx, node, inputs[0], onnx_module().helper.tensor_dtype_to_np_dtype(to))]


@op("CastLike", 15, summary="as Cast, to the type of input 1")
def cast_like(ctx, node, inputs):
    like = inputs[1]
    if isinstance(like, np.ndarray):
        dtype = like.dtype
    else:
        dtype = NUMPY_OF.get((ctx.model.shapes.get(node.inputs[1]) or (None,))[0], like.dtype.numpy)
    return [_cast(ctx, node, inputs[0], dtype)]
