"""Element-wise ONNX ops: popops' binary ops (ONNX's multidirectional broadcasting is
numpy's, as popops') and unary ops, popnn's non-linearities."""
import numpy as np

from popsim import FLOAT, HALF, INT, popnn, popops

from ..errors import popart_exception
from ..op_table import op

_BINARY = {"Add": popops.add, "Sub": popops.sub, "Mul": popops.mul, "Div": popops.div}
_UNARY = {"Exp": popops.exp, "Log": popops.log, "Sqrt": popops.sqrt, "Neg": popops.neg, "Abs": popops.abs,
          "Reciprocal": popops.inv, "Floor": popops.floor, "Ceil": popops.ceil}
#: variadic ops: a chain of the binary op, broadcasting as numpy
_VARIADIC = {"Sum": popops.add, "Max": popops.max, "Min": popops.min}
_NON_LINEAR = {"Relu": popnn.NonLinearityType.RELU, "Sigmoid": popnn.NonLinearityType.SIGMOID,
               "Tanh": popnn.NonLinearityType.TANH}


#: integer host constants (shape arithmetic, e.g. in an expanded function) are folded as the
#: graph is built, as PopART folds constant expressions; data on the device is never touched here
_FOLD = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Neg": np.negative, "Abs": np.abs,
         "Sum": np.add, "Max": np.maximum, "Min": np.minimum,
         "Div": lambda a, b: np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))}


def _folded(node, inputs):
    """The op applied to integer host constants, or None where an input is not one."""
    if node.op_type not in _FOLD or not all(isinstance(v, np.ndarray) and v.dtype.kind in "iu" for v in inputs):
        return None
    out = inputs[0] if len(inputs) > 1 else _FOLD[node.op_type](inputs[0])
    for v in inputs[1:]:
        out = _FOLD[node.op_type](out, v)
    return [np.asarray(out)]


def _binary(fn):
    def lower(ctx, node, inputs):
        folded = _folded(node, inputs)
        if folded is not None:
            return folded
        a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
        return [fn(ctx.graph, a, b, ctx.prog, node.name)]
    return lower


@op("Pow", 7, summary="popops.pow (numpy broadcasting; an exponent of another type cast by popops.cast; an integer "
                       "base with a float exponent raised in the exponent's type and cast back)")
def pow_(ctx, node, inputs):
    base, exponent = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
    if base.dtype not in (FLOAT, HALF, INT):
        raise popart_exception(f"node {node.name!r} (Pow): its base is {base.dtype}; popsim.popart raises FLOAT, "
                               "FLOAT16 and INT bases to a power (popops.pow's types)")
    if base.dtype == INT and exponent.dtype in (FLOAT, HALF):   # ONNX: the result has the base's type
        wide = popops.cast(ctx.graph, base, exponent.dtype, ctx.prog, f"{node.name}/base")
        y = popops.pow(ctx.graph, wide, exponent, ctx.prog, node.name)
        return [popops.cast(ctx.graph, y, INT, ctx.prog, f"{node.name}/result")]
    if exponent.dtype != base.dtype:
        exponent = popops.cast(ctx.graph, exponent, base.dtype, ctx.prog, f"{node.name}/exponent")
    return [popops.pow(ctx.graph, base, exponent, ctx.prog, node.name)]


def _variadic(fn):
    def lower(ctx, node, inputs):
        folded = _folded(node, inputs)
        if folded is not None:
            return folded
        operands = [ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs)]
        out = operands[0]
        for i, t in enumerate(operands[1:], 1):
            out = fn(ctx.graph, out, t, ctx.prog, f"{node.name}/{i}")
        return [out]
    return lower


def _unary(fn):
    def lower(ctx, node, inputs):
        folded = _folded(node, inputs)
        if folded is not None:
            return folded
        return [fn(ctx.graph, ctx.tensor(inputs[0], node), ctx.prog, node.name)]
    return lower


def _non_linear(kind):
    def lower(ctx, node, inputs):
        return [popnn.non_linearity(ctx.graph, kind, ctx.tensor(inputs[0], node), ctx.prog, node.name)]
    return lower


for _name, _fn in _BINARY.items():
    op(_name, 7, summary=f"popops.{_fn.__name__} (numpy broadcasting)")(_binary(_fn))
for _name, _fn in _VARIADIC.items():
    op(_name, 8, summary=f"popops.{_fn.__name__}, input by input (numpy broadcasting)")(_variadic(_fn))
for _name, _fn in _UNARY.items():
    op(_name, 6, summary=f"popops.{_fn.__name__}")(_unary(_fn))
for _name, _kind in _NON_LINEAR.items():
    op(_name, 6, summary=f"popnn.non_linearity {_kind.name}")(_non_linear(_kind))


@op("Identity", 1, summary="the input tensor itself (no program)")
def identity(ctx, node, inputs):
    return [inputs[0]]


@op("Clip", 6, summary="popops.clamp (bounds from attributes before opset 11, constant inputs after)")
def clip(ctx, node, inputs):
    x = ctx.tensor(inputs[0], node)
    info = np.finfo(x.dtype.numpy) if x.dtype.is_floating_point else np.iinfo(x.dtype.numpy)
    lowest, highest = float(info.min) if x.dtype.is_floating_point else int(info.min), \
        float(info.max) if x.dtype.is_floating_point else int(info.max)   # no bound: the type's range
    if ctx.opset < 11:
        lo, hi = node.attrs.get("min", lowest), node.attrs.get("max", highest)
    else:
        bounds = [inputs[i] if len(inputs) > i and inputs[i] is not None else None for i in (1, 2)]
        lo, hi = (ctx.tensor(b, node, f"input {i + 1}") if b is not None else d
                  for i, (b, d) in enumerate(zip(bounds, (lowest, highest))))
    return [popops.clamp(ctx.graph, x, lo, hi, ctx.prog, node.name)]
