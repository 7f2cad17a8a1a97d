"""MaxPool and AveragePool. Without dilations: popnn.pool (MAX, AVG; SUM divided by the
window counts with count_include_pad), ``ceil_mode`` as extra upper padding (popnn's pooling
skips padding, so the extra positions count for nothing, as in ONNX). With dilations, which
popnn's pooling has not: the input padded (popops.pad, by the type's lowest value for MAX, 0
for AVG) and each kernel offset taken as a strided view of it, combined by popops.max or
popops.add and divided by the window counts. The counts are known from the shapes as the
graph is built, and placed as a constant. Integer MaxPool (8- and 16-bit inputs, exact in
FLOAT) runs on the input cast to FLOAT (popops.cast) and cast back."""
import itertools

import numpy as np

from popsim import FLOAT, HALF, INT, popnn, popops
from popsim.program import Copy

from ..errors import popart_exception
from ..op_table import op
from .nn import _spatial


def _out_sizes(node, field, kernel, strides, lower, upper, dilations, ceil):
    """ONNX's output sizes and the extra upper padding ceil_mode needs."""
    out, extra = [], []
    for d, size in enumerate(field):
        window = dilations[d] * (kernel[d] - 1) + 1
        span = size + lower[d] + upper[d] - window
        n = (-(-span // strides[d]) if ceil else span // strides[d]) + 1
        if ceil and (n - 1) * strides[d] >= size + lower[d]:   # the last window must start inside the input
            n -= 1
        if n < 1:
            raise popart_exception(f"node {node.name!r} ({node.op_type}): the kernel {kernel} (dilations "
                                   f"{dilations}) does not fit the padded field {list(field)}")
        out.append(n)
        extra.append(max(0, (n - 1) * strides[d] + window - (size + lower[d] + upper[d])))
    return out, extra


def _counts(field, kernel, strides, lower, upper, dilations, out, include_pad):
    """How many elements each output's window averages: those inside the input (or inside its
    explicit padding with count_include_pad), as a [1, 1, *out] array."""
    per_dim = []
    for d, size in enumerate(field):
        lo, hi = (-lower[d], size + upper[d]) if include_pad else (0, size)
        starts = np.arange(out[d]) * strides[d] - lower[d]
        pos = starts[:, None] + np.arange(kernel[d])[None, :] * dilations[d]
        per_dim.append(((pos >= lo) & (pos < hi)).sum(axis=1))
    counts = per_dim[0]
    for c in per_dim[1:]:
        counts = np.multiply.outer(counts, c)
    return counts.reshape((1, 1) + tuple(out)).astype(np.float32)


def _pool(kind):
    def lower_node(ctx, node, inputs):
        raw = inputs[0]
        x = ctx.tensor(raw, node)
        kernel = [int(k) for k in node.attrs["kernel_shape"]]
        if x.rank != len(kernel) + 2:
            raise popart_exception(f"node {node.name!r} ({node.op_type}): X {x.shape} must be [N, C, *field] with "
                                   f"one field dimension per kernel dimension {kernel}")
        indices = len(node.outputs) > 1 and bool(node.outputs[1])
        integer = x.dtype not in (FLOAT, HALF)
        if integer:
            if kind != "MAX" or isinstance(raw, np.ndarray) or raw.dtype.size > 2:
                raise popart_exception(f"node {node.name!r} ({node.op_type}): X is {raw.dtype}; popnn's pooling runs "
                                       "FLOAT and FLOAT16 (and MaxPool 8- and 16-bit integers, exactly, in FLOAT)")
            x = popops.cast(ctx.graph, x, FLOAT, ctx.prog, f"{node.name}/toFloat")
        strides, lower, upper, dilations = _spatial(node, x.shape, kernel, node.op_type)
        field = list(x.shape[2:])
        out, extra = _out_sizes(node, field, kernel, strides, lower, upper, dilations,
                                bool(int(node.attrs.get("ceil_mode", 0))))
        include_pad = kind == "AVG" and bool(int(node.attrs.get("count_include_pad", 0)))
        if indices:   # popnn's pooling returns no indices: the views path, tracking them
            y, where = _dilated(ctx, node, x, kind, kernel, strides, lower, [u + e for u, e in zip(upper, extra)],
                                dilations, out, _index_of(node, x.shape, lower, strides, dilations, out))
            return [popops.cast(ctx.graph, y, INT, ctx.prog, f"{node.name}/toInt") if integer else y, where]
        if all(d == 1 for d in dilations):
            y = _popnn_pool(ctx, node, x, kind, kernel, strides, lower, [u + e for u, e in zip(upper, extra)],
                            include_pad and any(lower + upper))
            if include_pad and any(lower + upper):
                counts = _counts(field, kernel, strides, lower, upper, dilations, out, True)
                y = _divide(ctx, node, y, counts)
        else:
            y = _dilated(ctx, node, x, kind, kernel, strides, lower, [u + e for u, e in zip(upper, extra)],
                         dilations, out)
            if kind == "AVG":
                y = _divide(ctx, node, y, _counts(field, kernel, strides, lower, upper, dilations, out, include_pad))
        if integer:
            y = popops.cast(ctx.graph, y, INT, ctx.prog, f"{node.name}/toInt")
        return [y]
    return lower_node


def _popnn_pool(ctx, node, x, kind, kernel, strides, lower, upper, as_sum):
    pooling = popnn.PoolingType.SUM if as_sum else getattr(popnn.PoolingType, kind)
    params = popnn.PoolParams(pooling, tuple(x.shape[2:]), kernel, strides, lower, upper, x.shape[1], x.shape[0],
                              x.dtype)
    return popnn.pool(ctx.graph, params, x, ctx.prog, node.name)


def _divide(ctx, node, y, counts):
    if np.all(counts == counts.flat[0]):
        popops.mul_in_place(ctx.graph, y, 1.0 / float(counts.flat[0]), ctx.prog, f"{node.name}/scale")
        return y
    c = ctx.constant(counts.astype(y.dtype.numpy), node, "window counts")
    return popops.div(ctx.graph, y, c, ctx.prog, f"{node.name}/average")


def _index_of(node, shape, lower, strides, dilations, out):
    """index(offset): the flat input index ONNX's Indices output gives each output's element
    at kernel ``offset`` ([N, C, *out], int32): row-major, or column-major over the field
    with storage_order=1."""
    field = list(shape[2:])
    column = int(node.attrs.get("storage_order", 0)) == 1
    steps = [int(np.prod(field[:d] if column else field[d + 1:])) for d in range(len(field))]
    base = (np.arange(shape[0] * shape[1]) * int(np.prod(field))).reshape(shape[:2] + (1,) * len(field))

    def index(offset):
        flat = base
        for d in range(len(field)):
            pos = np.arange(out[d]) * strides[d] + offset[d] * dilations[d] - lower[d]
            flat = flat + (np.clip(pos, 0, field[d] - 1) * steps[d]).reshape((-1,) + (1,) * (len(field) - 1 - d))
        return flat.astype(np.int32)
    return index


def _dilated(ctx, node, x, kind, kernel, strides, lower, upper, dilations, out, index_of=None):
    """Pooling as one strided view of the padded input per kernel offset, combined; with
    ``index_of`` also the index of each maximum (the first, as ONNX), by popops.gt and select."""
    fill = float(np.finfo(x.dtype.numpy).min) if kind == "MAX" else 0.0
    rank = len(kernel)
    padded = popops.pad(ctx.graph, x, [0, 0] + list(lower), [0, 0] + list(upper), fill, f"{node.name}/pad",
                        popops.MappingMethod.EDGE)   # as PopART pads: beside the edge, not all on tile 0
    views = []
    for offset in itertools.product(*[range(k) for k in kernel]):
        view = padded
        for d in range(rank):
            start = offset[d] * dilations[d]
            view = view.slice(start, start + (out[d] - 1) * strides[d] + 1, 2 + d).subsample(strides[d], 2 + d)
        views.append(view)
    acc = ctx.graph.clone(views[0], f"{node.name}/windows")
    ctx.prog.add(Copy(views[0], acc))
    offsets = list(itertools.product(*[range(k) for k in kernel]))
    where = ctx.constant(index_of(offsets[0]), node, "indices") if index_of else None
    combine = popops.max_in_place if kind == "MAX" else popops.add_in_place
    for i, view in enumerate(views[1:], 1):
        if where is not None:
            better = popops.gt(ctx.graph, view, acc, ctx.prog, f"{node.name}/better{i}")
            where = popops.select(ctx.graph, ctx.constant(index_of(offsets[i]), node, "indices"), where, better,
                                  ctx.prog, f"{node.name}/index{i}")
        combine(ctx.graph, acc, view, ctx.prog, f"{node.name}/window{i}")
    return acc if index_of is None else (acc, where)


op("MaxPool", 8, summary="popnn.pool MAX (ceil_mode as extra padding); with dilations or the Indices output "
                         "popops.max of strided views of the padded input (popops.gt, select for the indices)")(
    _pool("MAX"))
op("AveragePool", 7, summary="popnn.pool AVG (SUM divided by the window counts with count_include_pad); with "
                             "dilations popops.add of strided views, divided by the counts")(_pool("AVG"))
