"""Cast and CastLike. A host constant (an initializer, a Constant's value) is converted as the
graph is built, as PopART folds constant expressions; a tensor on the device is cast by
popops.cast to the device type of the target (FLOAT16 HALF, int64 INT as PopART runs it, ...;
lowering.ANCHOR_TYPES).

FLOAT8E4M3FNUZ and FLOAT8E5M2FNUZ are the IPU's QUARTER formats F143 and F152
(popart/float8.py): popops.cast to and from QUARTER (other types through FLOAT). With
``saturate`` (the default), a value past the type's largest (240 or 57344, infinities
included) becomes that largest, as ONNX defines it, by a popops.map clamping the FLOAT or
HALF operand (NaN kept) before the cast; without, such values become NaN, as the IPU's
conversion gives them (its NANOO behaviour). Types the IPU has no tensors of (float64,
bfloat16, the other float8 formats, 4- and 2-bit types, strings) are refused."""
import numpy as np

from popsim import FLOAT, HALF, QUARTER, popops
from popsim.popops import expr as pe

from .. import float8
from ..errors import onnx_module, popart_exception
from ..lowering import ANCHOR_TYPES
from ..op_table import op
from ..tensor_info import NAME_OF, NUMPY_OF


def _host_cast(value, dtype, saturate: bool):
    onnx = onnx_module()
    if float8.is_float8(dtype) and saturate:   # ONNX: past the largest (and infinities) -> the largest
        return onnx.numpy_helper.saturate_cast(value.astype(np.float32), dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return value.astype(dtype)


def _to_quarter(ctx, node, value, name: str, saturate: bool):
    if value.dtype not in (FLOAT, HALF):   # integers and BOOL: through FLOAT
        value = popops.cast(ctx.graph, value, FLOAT, ctx.prog, f"{node.name}/toFloat")
    if saturate:
        lo, hi = (pe.Const(s * float8.LARGEST[name], value.dtype) for s in (-1.0, 1.0))
        value = popops.map(ctx.graph, pe.select(pe._1, pe.clamp(pe._1, lo, hi), pe.is_nan(pe._1)), [value],
                           ctx.prog, f"{node.name}/saturate")
    return popops.cast(ctx.graph, value, QUARTER, ctx.prog, node.name, metadata=float8.metadata(ctx.graph, name))


def _cast(ctx, node, value, dtype):
    saturate = bool(int(node.attrs.get("saturate", 1)))
    if isinstance(value, np.ndarray):
        return _host_cast(value, dtype, saturate)
    name = NAME_OF.get(np.dtype(dtype))
    target = ANCHOR_TYPES.get(name)
    if target is None:
        raise popart_exception(f"node {node.name!r} ({node.op_type}): casting a tensor computed on the device to "
                               f"{np.dtype(dtype)} is not supported: the IPU runs FLOAT, FLOAT16, BOOL, integer "
                               "types and the 8-bit floats FLOAT8E4M3FNUZ and FLOAT8E5M2FNUZ (QUARTER)")
    if value.dtype == QUARTER and target not in (FLOAT, HALF):   # from QUARTER: to FLOAT or HALF only
        value = popops.cast(ctx.graph, value, FLOAT, ctx.prog, f"{node.name}/fromQuarter")
    if target == QUARTER:
        return _to_quarter(ctx, node, value, name, saturate)
    if value.dtype == target:
        return value
    return popops.cast(ctx.graph, value, target, ctx.prog, node.name)


@op("Cast", 6, summary="popops.cast to the target's device type (int64 as INT; FLOAT8E4M3FNUZ and FLOAT8E5M2FNUZ "
                       "QUARTER, saturating through popops.map); host constants converted as the graph is built")
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
