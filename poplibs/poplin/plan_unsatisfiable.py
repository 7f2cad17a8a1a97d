"""The error for a convolution no plan satisfies: the planConstraints that cannot be met,
named (or, when each could, that together they exceed the sizes or the tiles)."""
import math

from ..poputil import PoplibsError
from . import conv_methods
from .conv_candidates import is_mat_mul_shaped
from .conv_params import ConvParams
from .options import ConvOptions


def unsatisfiable(target, params: ConvParams, options: ConvOptions) -> PoplibsError:
    """Name the planConstraints no plan can satisfy (or say the convolution cannot be planned)."""
    pc = options.plan_constraints
    problems = []
    why = None
    if pc.method is not None:   # the method's own reason (conv_methods.ConvMethod.refuses)
        method = conv_methods.find(pc.method)
        why = (f"popsim's poplin runs {', '.join(conv_methods.RUNNABLE_METHODS)} vertices" if method is None
               else method.refuses(params))
    if why:
        problems.append(f"method {pc.method}: {why}")
    if pc.batch_split is not None and pc.batch_split > params.batch_size:
        problems.append(f"batchSplit {pc.batch_split} > the batch size {params.batch_size}")
    if pc.conv_group_split is not None and pc.conv_group_split > params.num_conv_groups:
        problems.append(f"convGroupSplit {pc.conv_group_split} > the {params.num_conv_groups} conv groups")
    for dim, split in pc.field_split:
        if dim >= params.num_field_dims or split > params.output_field_shape()[dim]:
            problems.append(f"fieldSplit {{{dim}: {split}}} does not fit the output field "
                            f"{params.output_field_shape()}")
    for dim, split in pc.kernel_split:
        if dim >= params.num_field_dims - 1 and split > 1:
            problems.append(f"kernelSplit {{{dim}: {split}}}: only kernel dimensions before the innermost split")
    if (pc.in_chan_serial or 1) > 1 and (pc.out_chan_serial or 1) > 1:
        problems.append("inChanSplit.serial and outChanSplit.serial both > 1: one kind of serial split at a time")
    if pc.swap_operands and not is_mat_mul_shaped(params):
        problems.append("swapOperands true: only a matmul-shaped convolution swaps its operands")
    forced_tiles = math.prod([pc.batch_split or 1, pc.conv_group_split or 1, pc.in_chan_parallel or 1,
                              pc.out_chan_parallel or 1] + [s for _, s in pc.field_split + pc.kernel_split])
    if forced_tiles > target.num_tiles:
        problems.append(f"the forced parallel splits use {forced_tiles} tiles, the target has {target.num_tiles}")
    found = "; ".join(problems) if problems else "the splits together (channel splits count grains of " \
        "the AMP vertex's channel groups) exceed the sizes or the tiles"
    return PoplibsError(f"planConstraints: no plan satisfies {{{pc.describe()}}} for a convolution of input "
                        f"{params.input_shape()} and weights {params.weights_shape()} on {target.num_tiles} tiles: "
                        f"{found}")


__all__ = ["unsatisfiable"]
