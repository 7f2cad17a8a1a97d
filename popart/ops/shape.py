"""Shape ONNX ops: views of their input (Reshape, Flatten, Transpose, Concat), Constant.
Their shape and axes operands are read when the graph is built (int64 constants)."""
import numpy as np

import popsim

from ..errors import popart_exception
from ..op_table import op


def _axis(axis: int, rank: int, node, what: str = "axis") -> int:
    a = int(axis)
    if not -rank <= a < max(rank, 1) + (what == "flatten axis"):
        raise popart_exception(f"node {node.name!r} ({node.op_type}): {what} {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


@op("Reshape", 5, summary="a view (Tensor.reshape); the shape operand is read as the graph is built")
def reshape(ctx, node, inputs):
    x = inputs[0]
    shape = [int(d) for d in ctx.host(inputs[1], node, "shape (input 1)").reshape(-1)]
    allow_zero = int(node.attrs.get("allowzero", 0))
    shape = [x.shape[i] if d == 0 and not allow_zero else d for i, d in enumerate(shape)]
    if shape.count(-1) > 1:
        raise popart_exception(f"node {node.name!r} (Reshape): shape {shape} has more than one -1")
    size = int(np.prod(x.shape))
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = size // known if known else 0
    if int(np.prod(shape)) != size:
        raise popart_exception(f"node {node.name!r} (Reshape): cannot reshape {tuple(x.shape)} ({size} elements) to "
                               f"{shape}")
    if isinstance(x, np.ndarray):
        return [x.reshape(shape)]
    return [x.reshape(tuple(shape))]


@op("Flatten", 9, summary="a view (Tensor.reshape to 2-D)")
def flatten(ctx, node, inputs):
    x = inputs[0]
    rank = len(x.shape)
    axis = _axis(node.attrs.get("axis", 1), rank, node, "flatten axis")
    rows = int(np.prod(x.shape[:axis]))
    return [x.reshape((rows, int(np.prod(x.shape[axis:]))))]


@op("Transpose", 1, summary="a view (Tensor.dim_shuffle)")
def transpose(ctx, node, inputs):
    x = inputs[0]
    rank = len(x.shape)
    perm = [int(p) for p in node.attrs.get("perm", list(range(rank))[::-1])]
    if sorted(perm) != list(range(rank)):
        raise popart_exception(f"node {node.name!r} (Transpose): perm {perm} is not a permutation of {rank} dims")
    if isinstance(x, np.ndarray):
        return [np.transpose(x, perm)]
    return [x.dim_shuffle(perm)]


@op("Concat", 4, summary="a view (popsim.concat)")
def concat(ctx, node, inputs):
    rank = len(inputs[0].shape)
    axis = _axis(node.attrs["axis"], rank, node)
    if all(isinstance(v, np.ndarray) for v in inputs):  # shapes being built, e.g. Reshape's operand
        return [np.concatenate(inputs, axis)]
    return [popsim.concat([ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs)], axis)]


@op("Constant", 9, summary="a host constant, placed on the tiles (Graph.add_constant) where used as data")
def constant(ctx, node, inputs):
    if "value" in node.attrs:
        return [np.asarray(node.attrs["value"])]
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                       ("value_ints", np.int64)):
        if key in node.attrs:
            return [np.asarray(node.attrs[key], dtype)]
    raise popart_exception(f"node {node.name!r} (Constant): only the value, value_float(s) and value_int(s) "
                           f"attributes are supported, found {sorted(node.attrs)}")


def _axes(ctx, node, inputs, rank, what):
    """Squeeze's and Unsqueeze's axes: an attribute before opset 13, a constant input after."""
    if ctx.opset >= 13:
        axes = ctx.host(inputs[1], node, "axes (input 1)") if len(inputs) > 1 and inputs[1] is not None else None
    else:
        axes = node.attrs.get("axes")
    return None if axes is None else sorted(_axis(a, rank, node, what) for a in list(axes))


@op("Squeeze", 1, summary="a view (Tensor.reshape without the size-1 dimensions)")
def squeeze(ctx, node, inputs):
    x = inputs[0]
    axes = _axes(ctx, node, inputs, len(x.shape), "axis")
    axes = [d for d, n in enumerate(x.shape) if n == 1] if axes is None else axes
    if any(x.shape[a] != 1 for a in axes):
        raise popart_exception(f"node {node.name!r} (Squeeze): axes {axes} of shape {tuple(x.shape)} are not all 1")
    return [x.reshape(tuple(n for d, n in enumerate(x.shape) if d not in axes))]


@op("Unsqueeze", 1, summary="a view (Tensor.reshape with size-1 dimensions)")
def unsqueeze(ctx, node, inputs):
    x = inputs[0]
    given = (list(ctx.host(inputs[1], node, "axes (input 1)").reshape(-1)) if ctx.opset >= 13 and len(inputs) > 1
             else list(node.attrs.get("axes", [])))
    rank = len(x.shape) + len(given)   # the output's rank, which the axes index
    axes = _axes(ctx, node, inputs, rank, "axis")
    if not axes:
        raise popart_exception(f"node {node.name!r} (Unsqueeze): no axes given")
    shape, rest = [], iter(x.shape)
    for d in range(rank):
        shape.append(1 if d in axes else next(rest))
    return [x.reshape(tuple(shape))]


@op("ConstantOfShape", 9, summary="a host constant (the shape operand read as the graph is built), placed on the "
    "tiles where used as data")
def constant_of_shape(ctx, node, inputs):
    shape = [int(d) for d in ctx.host(inputs[0], node, "shape (input 0)").reshape(-1)]
    value = np.asarray(node.attrs.get("value", np.zeros(1, np.float32))).reshape(-1)
    return [np.full(shape, value[0], value.dtype)]
