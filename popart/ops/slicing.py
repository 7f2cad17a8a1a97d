"""Slicing ONNX ops as views of their input (Slice, Split, Expand, Gather with constant
indices, Pad's edge, reflect and wrap modes) or PopLibs ops (Pad's constant mode: popops.pad;
Gather with indices computed on the device: popops.gather). Starts, ends, axes, steps, split
sizes, pads and shapes are constants read as the graph is built; Shape's and Size's results are
ones."""
import numpy as np

import popsim
from popsim import INT, popops

from ..errors import popart_exception
from ..op_table import op


def _ints(ctx, node, value, role):
    return [int(v) for v in ctx.host(value, node, role).reshape(-1)]


def _given(inputs, i):
    return inputs[i] if len(inputs) > i and inputs[i] is not None else None


def _norm_axis(node, a, rank):
    if not -rank <= a < rank:
        raise popart_exception(f"node {node.name!r} ({node.op_type}): axis {a} is out of range for rank {rank}")
    return a % rank


def _slice_dim(t, dim, start, end, step):
    """``t[start:end:step]`` along ``dim`` (Python's clamping, as ONNX's) as a view."""
    n = t.shape[dim]
    idx = range(*slice(start, end, step).indices(n))
    if isinstance(t, np.ndarray):
        return t[(slice(None),) * dim + (slice(start, end, step),)]
    if len(idx) == 0:
        return t.slice(0, 0, dim)
    if step < 0:
        t, idx = t.reverse(dim), range(n - 1 - idx[0], n - idx[-1], -step)
    out = t.slice(idx[0], idx[-1] + 1, dim)
    return out.subsample(abs(step), dim) if abs(step) > 1 else out


@op("Slice", 1, summary="a view (Tensor.slice, subsample, reverse); starts/ends/axes/steps read as the graph is built")
def slice_(ctx, node, inputs):
    x = inputs[0]
    rank = len(x.shape)
    if ctx.opset >= 10:
        starts, ends = _ints(ctx, node, inputs[1], "starts"), _ints(ctx, node, inputs[2], "ends")
        axes = _ints(ctx, node, inputs[3], "axes") if _given(inputs, 3) is not None else list(range(len(starts)))
        steps = _ints(ctx, node, inputs[4], "steps") if _given(inputs, 4) is not None else [1] * len(starts)
    else:
        starts, ends = list(node.attrs["starts"]), list(node.attrs["ends"])
        axes, steps = list(node.attrs.get("axes", range(len(starts)))), [1] * len(starts)
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st == 0:
            raise popart_exception(f"node {node.name!r} (Slice): a step of 0 on axis {a}")
        x = _slice_dim(x, _norm_axis(node, a, rank), s, e, st)
    return [x]


@op("Split", 2, summary="views (Tensor.slice); split sizes read as the graph is built")
def split(ctx, node, inputs):
    x = inputs[0]
    axis = _norm_axis(node, int(node.attrs.get("axis", 0)), len(x.shape))
    n = x.shape[axis]
    sizes = _ints(ctx, node, inputs[1], "split (input 1)") if ctx.opset >= 13 and _given(inputs, 1) is not None \
        else list(node.attrs.get("split", []))
    if not sizes:
        parts = int(node.attrs.get("num_outputs", len(node.outputs)))
        chunk = -(-n // parts)
        sizes = [min(chunk, n - i * chunk) for i in range(parts)]
    if sum(sizes) != n:
        raise popart_exception(f"node {node.name!r} (Split): sizes {sizes} do not add up to {n} along axis {axis}")
    out, begin = [], 0
    for s in sizes:
        out.append(_slice_dim(x, axis, begin, begin + s, 1))
        begin += s
    return out


@op("Expand", 8, summary="a view (Tensor.broadcast); the shape read as the graph is built")
def expand(ctx, node, inputs):
    x = ctx.tensor(inputs[0], node)
    shape = _ints(ctx, node, inputs[1], "shape (input 1)")
    rank = max(len(shape), x.rank)
    x = x.reshape((1,) * (rank - x.rank) + tuple(x.shape))
    target = [1] * (rank - len(shape)) + shape
    for d in range(rank):
        want = target[d]
        if x.shape[d] == 1 and want != 1:
            x = x.broadcast(want, d)
        elif want not in (1, x.shape[d]):
            raise popart_exception(f"node {node.name!r} (Expand): shape {shape} does not broadcast with "
                                   f"{tuple(x.shape)}")
    return [x]


@op("Shape", 1, summary="a host constant (the input's shape, known as the graph is built)")
def shape(ctx, node, inputs):
    dims = list(inputs[0].shape)
    rank = len(dims)
    start, end = int(node.attrs.get("start", 0)), node.attrs.get("end")
    return [np.asarray(dims[slice(start, rank if end is None else int(end))], np.int64)]


@op("Size", 1, summary="a host constant (the input's element count, known as the graph is built)")
def size(ctx, node, inputs):
    return [np.asarray(int(np.prod(inputs[0].shape)), np.int64)]


@op("Gather", 1, summary="a view (slices, popsim.concat) for constant indices; popops.gather for device ones")
def gather(ctx, node, inputs):
    x, indices = inputs
    rank = len(x.shape)
    axis = _norm_axis(node, int(node.attrs.get("axis", 0)), rank)
    n = x.shape[axis]
    if isinstance(indices, np.ndarray):
        idx = indices.astype(np.int64).reshape(-1)
        if np.any((idx < -n) | (idx >= n)):
            raise popart_exception(f"node {node.name!r} (Gather): indices {idx.tolist()} out of range for size {n}")
        if isinstance(x, np.ndarray):
            return [np.take(x, idx, axis).reshape(x.shape[:axis] + indices.shape + x.shape[axis + 1:])]
        x = ctx.tensor(x, node)
        parts = [x.slice(int(i) % n, int(i) % n + 1, axis) for i in idx]
        picked = popsim.concat(parts, axis) if parts else x.slice(0, 0, axis)
        return [picked.reshape(tuple(x.shape[:axis]) + tuple(indices.shape) + tuple(x.shape[axis + 1:]))]
    x = ctx.tensor(x, node)
    if indices.dtype != INT:
        raise popart_exception(f"node {node.name!r} (Gather): device indices are {indices.dtype}; expected INT")
    from popsim.popops import expr as pe
    wrapped = popops.map(ctx.graph, pe.select(pe._1 + n, pe._1, pe._1 < 0), [indices], ctx.prog,
                         f"{node.name}/wrap")   # ONNX's negative indices count from the end
    return [popops.gather(ctx.graph, x, wrapped, axis, ctx.prog, node.name)]


def _pad_with_tensor(ctx, node, x, lower, upper, value):
    """Constant padding by a value on the device: the scalar broadcast (a view) on each side."""
    if value.num_elements() != 1:
        raise popart_exception(f"node {node.name!r} (Pad): constant_value (input 2) must be one value, found shape "
                               f"{tuple(value.shape)}")
    if value.dtype != x.dtype:
        value = popops.cast(ctx.graph, value, x.dtype, ctx.prog, f"{node.name}/value")
    scalar = value.reshape([1] * x.rank)
    for d in range(x.rank):
        if lower[d] < 0 or upper[d] < 0:   # negative pads truncate
            x = x.slice(max(-lower[d], 0), x.shape[d] - max(-upper[d], 0), d)
        parts = []
        for count, where in ((max(lower[d], 0), 0), (max(upper[d], 0), 1)):
            block = scalar
            for e in range(x.rank):
                n = count if e == d else x.shape[e]
                block = block.broadcast(n, e)
            parts.append(block)
        x = popsim.concat([parts[0], x, parts[1]], d)
    return x


@op("Pad", 2, summary="popops.pad (constant mode, MappingMethod EDGE as PopART; a constant_value on the device "
                      "as broadcast views of it); edge, reflect and wrap as views (slices, popsim.concat)")
def pad(ctx, node, inputs):
    x = ctx.tensor(inputs[0], node)
    rank = x.rank
    if ctx.opset >= 11:
        pads = _ints(ctx, node, inputs[1], "pads (input 1)")
        value = _given(inputs, 2)
        if value is not None and not isinstance(value, np.ndarray):   # a value on the device: views of it
            value = ctx.tensor(value, node, "constant_value (input 2)")
        else:
            value = 0.0 if value is None else float(ctx.host(value, node, "constant_value (input 2)").reshape(-1)[0])
        axes = _ints(ctx, node, inputs[3], "axes (input 3)") if _given(inputs, 3) is not None else list(range(rank))
    else:
        pads, value, axes = list(node.attrs["pads"]), float(node.attrs.get("value", 0.0)), list(range(rank))
    axes = [_norm_axis(node, a, rank) for a in axes]
    lower, upper = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        lower[a], upper[a] = pads[i], pads[i + len(axes)]
    mode = node.attrs.get("mode", "constant")
    if mode == "constant" and not isinstance(value, popsim.Tensor):
        return [popops.pad(ctx.graph, x, lower, upper, value, node.name, popops.MappingMethod.EDGE)]   # as PopART
    if mode == "constant":
        return [_pad_with_tensor(ctx, node, x, lower, upper, value)]
    if mode not in ("edge", "reflect", "wrap") or min(lower + upper) < 0:
        raise popart_exception(f"node {node.name!r} (Pad): mode {mode!r} with pads {pads} is not supported; "
                               "popsim.popart pads in constant, edge, reflect and wrap modes with pads >= 0")
    for d in range(rank):
        n = x.shape[d]
        if mode == "edge":
            before = [x.slice(0, 1, d)] * lower[d]
            after = [x.slice(n - 1, n, d)] * upper[d]
        elif mode == "wrap":
            if max(lower[d], upper[d]) > n:
                raise popart_exception(f"node {node.name!r} (Pad): wrap pads {lower[d]}, {upper[d]} exceed dimension "
                                       f"{d} of size {n}")
            before = [x.slice(n - lower[d], n, d)] if lower[d] else []
            after = [x.slice(0, upper[d], d)] if upper[d] else []
        else:
            if max(lower[d], upper[d]) >= n:
                raise popart_exception(f"node {node.name!r} (Pad): reflect pads {lower[d]}, {upper[d]} need a "
                                       f"dimension {d} longer than {n}")
            before = [x.slice(i, i + 1, d) for i in range(lower[d], 0, -1)]
            after = [x.slice(n - 2 - i, n - 1 - i, d) for i in range(upper[d])]
        if before or after:
            x = popsim.concat(before + [x] + after, d)
    return [x]
