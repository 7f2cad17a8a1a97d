"""Reduction ONNX ops onto popops.reduce: ReduceSum/ReduceMean (ADD, Mean scaled by 1/n),
ReduceMax/ReduceMin/ReduceProd, ReduceSumSquare (SQUARE_ADD), ReduceL1/L2 and ReduceLogSum
(a reduce and a popops unary op). ``keepdims`` is a view (Tensor.reshape). The axes are an
attribute until the op moved them to a constant input (opset 13 for ReduceSum, 18 for the
others); ArgMax/ArgMin onto popnn.arg_max/arg_min (INT indices: the IPU has no 64-bit
integers, PopART runs int64 as int32). BOOL's max and min are LOGICAL_OR and LOGICAL_AND;
``noop_with_empty_axes`` with no axes gives the input itself."""
import numpy as np

from popsim import BOOL, INT, popnn, popops
from popsim.popops import expr as pe

from ..errors import popart_exception
from ..op_table import op

Op = popops.Operation
#: op -> (popops Operation, the version its axes became an input, a unary op after it)
_REDUCE = {"ReduceSum": (Op.ADD, 13, None), "ReduceMean": (Op.ADD, 18, None), "ReduceMax": (Op.MAX, 18, None),
           "ReduceMin": (Op.MIN, 18, None), "ReduceProd": (Op.MUL, 18, None),
           "ReduceSumSquare": (Op.SQUARE_ADD, 18, None), "ReduceL2": (Op.SQUARE_ADD, 18, popops.sqrt),
           "ReduceLogSum": (Op.ADD, 18, popops.log)}


def _axes(ctx, node, inputs, rank, input_since):
    if ctx.opset >= input_since:
        given = inputs[1] if len(inputs) > 1 else None
        axes = None if given is None else list(ctx.host(given, node, "axes (input 1)").reshape(-1))
    else:
        axes = node.attrs.get("axes")
    if not axes:
        return None
    out = []
    for a in axes:
        if not -rank <= int(a) < rank:
            raise popart_exception(f"node {node.name!r} ({node.op_type}): axis {int(a)} is out of range for rank "
                                   f"{rank}")
        out.append(int(a) % rank)
    return sorted(set(out))


def _lower(kind):
    operation, input_since, after = _REDUCE[kind]

    def lower(ctx, node, inputs):
        x = ctx.tensor(inputs[0], node)
        rank = x.rank
        axes = _axes(ctx, node, inputs, rank, input_since)
        if axes is None:
            if node.attrs.get("noop_with_empty_axes", 0):
                return [x]
            axes = list(range(rank))
        count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        scale = 1.0 / count if kind == "ReduceMean" and count else 1.0
        op_now = {Op.MAX: Op.LOGICAL_OR, Op.MIN: Op.LOGICAL_AND}.get(operation, operation) if x.dtype == BOOL \
            else operation   # BOOL's max and min are or and and
        if kind == "ReduceL1":
            x = popops.abs(ctx.graph, x, ctx.prog, f"{node.name}/abs")
        y = popops.reduce(ctx.graph, x, axes, popops.ReduceParams(op_now, scale=scale) if op_now in
                          (Op.ADD, Op.SQUARE_ADD) else popops.ReduceParams(op_now), ctx.prog, node.name)
        if after is not None:
            y = after(ctx.graph, y, ctx.prog, f"{node.name}/{after.__name__}")
        if node.attrs.get("keepdims", 1):
            y = y.reshape(tuple(1 if d in axes else n for d, n in enumerate(x.shape)))
        return [y]
    return lower


_REDUCE["ReduceL1"] = (Op.ADD, 18, None)   # popops.abs first, then an ADD reduce
for _name, (_operation, _since, _after) in _REDUCE.items():
    _then = f", popops.{_after.__name__}" if _after else ""
    _first = "popops.abs, " if _name == "ReduceL1" else ""
    op(_name, 1, summary=f"{_first}popops.reduce {_operation.name}"
       f"{' scaled by 1/n' if _name == 'ReduceMean' else ''}{_then}")(_lower(_name))


def _arg(kind):
    fn = popnn.arg_max if kind == "ArgMax" else popnn.arg_min

    def lower(ctx, node, inputs):
        x = ctx.tensor(inputs[0], node)
        rank = x.rank
        axis = int(node.attrs.get("axis", 0))
        if not -rank <= axis < rank:
            raise popart_exception(f"node {node.name!r} ({kind}): axis {axis} is out of range for rank {rank}")
        axis %= rank
        n = x.shape[axis]
        last = bool(node.attrs.get("select_last_index", 0))
        moved = (x.reverse(axis) if last else x).dim_shuffle([d for d in range(rank) if d != axis] + [axis])
        rows = moved.reshape((int(np.prod(moved.shape[:-1])), n))
        index = popops.cast(ctx.graph, fn(ctx.graph, rows, ctx.prog, node.name), INT, ctx.prog, f"{node.name}/cast")
        if last:   # the first of the reversed row is the last of the row
            index = popops.map(ctx.graph, (n - 1) - pe._1, [index], ctx.prog, f"{node.name}/last")
        kept = tuple(1 if d == axis else s for d, s in enumerate(x.shape)) if node.attrs.get("keepdims", 1) \
            else tuple(s for d, s in enumerate(x.shape) if d != axis)
        return [index.reshape(kept)]
    return lower


for _name in ("ArgMax", "ArgMin"):
    op(_name, 1, summary=f"popnn.{'arg_max' if _name == 'ArgMax' else 'arg_min'} of the rows along the axis "
       "(a dim_shuffle; reversed for select_last_index), popops.cast to INT")(_arg(_name))
