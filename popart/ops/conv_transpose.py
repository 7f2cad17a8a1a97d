"""ConvTranspose onto poplin.convolution: the forward convolution whose gradient it is, as
PopLibs runs a transposed convolution: the input dilated by the strides, padded by
dilation * (kernel - 1) less ONNX's pads (more on the upper side by output_padding; where
that is negative the output is truncated instead), the kernel flipped, and W [C, M/group,
*kernel] seen as poplin's [group, M/group, C/group, *kernel] (a view); poplin.add_bias."""
from popsim import poplin

from ..errors import popart_exception
from ..node_attributes import poplin_options
from ..op_table import op


def _pads(node, field, kernel, strides, dilations, out_pad):
    rank = len(kernel)
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    out_shape = node.attrs.get("output_shape")
    if out_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out_shape = [field[i] * strides[i] for i in range(rank)]
    if out_shape is None:
        pads = [int(p) for p in node.attrs.get("pads", [0] * 2 * rank)] if auto_pad != "VALID" else [0] * 2 * rank
        return pads[:rank], pads[rank:]
    out_shape = [int(o) for o in list(out_shape)[-rank:]]
    lower, upper = [], []
    for i in range(rank):
        total = strides[i] * (field[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - out_shape[i]
        small, big = total // 2, total - total // 2
        lower.append(small if auto_pad == "SAME_UPPER" else big)
        upper.append(big if auto_pad == "SAME_UPPER" else small)
    return lower, upper


@op("ConvTranspose", 1, summary="poplin.convolution (input dilated by the strides, kernel flipped), poplin.add_bias")
def conv_transpose(ctx, node, inputs):
    x, w = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs[:2]))
    if x.rank < 3 or w.rank != x.rank:
        raise popart_exception(f"node {node.name!r} (ConvTranspose): expected X [N, C, *field] and W [C, M/group, "
                               f"*kernel] of the same rank, found {tuple(x.shape)} and {tuple(w.shape)}")
    group = int(node.attrs.get("group", 1))
    n, c = x.shape[:2]
    if w.shape[0] != c or c % group:
        raise popart_exception(f"node {node.name!r} (ConvTranspose): X has {c} channels and W {tuple(w.shape)}, "
                               f"group {group}: expected W.shape[0] = C, divisible by group")
    field, kernel = list(x.shape[2:]), list(w.shape[2:])
    rank = len(kernel)
    strides = [int(s) for s in node.attrs.get("strides", [1] * rank)]
    dilations = [int(d) for d in node.attrs.get("dilations", [1] * rank)]
    out_pad = [int(p) for p in node.attrs.get("output_padding", [0] * rank)]
    pad_lo, pad_hi = _pads(node, field, kernel, strides, dilations, out_pad)
    lower = [dilations[i] * (kernel[i] - 1) - pad_lo[i] for i in range(rank)]
    upper = [dilations[i] * (kernel[i] - 1) - pad_hi[i] + out_pad[i] for i in range(rank)]
    cin, cout = c // group, w.shape[1]
    params = poplin.ConvParams(x.dtype, n, tuple(field), tuple(kernel), cin, cout, group,
                               input_dilation=tuple(strides), kernel_dilation=tuple(dilations),
                               padding_lower=tuple(max(p, 0) for p in lower),
                               padding_upper=tuple(max(p, 0) for p in upper),
                               output_truncation_lower=tuple(max(-p, 0) for p in lower),
                               output_truncation_upper=tuple(max(-p, 0) for p in upper),
                               kernel_flip=(True,) * rank)
    weights = w.reshape((group, cin, cout) + tuple(kernel)).dim_shuffle([0, 2, 1] + list(range(3, 3 + rank)))
    y = poplin.convolution(ctx.graph, x, weights, params, False, ctx.prog, node.name, options=poplin_options(node),
                           cache=ctx.cache)
    if len(inputs) > 2 and inputs[2] is not None:
        poplin.add_bias(ctx.graph, y, ctx.tensor(inputs[2], node, "input 2 (B)"), ctx.prog, f"{node.name}/bias")
    return [y]
