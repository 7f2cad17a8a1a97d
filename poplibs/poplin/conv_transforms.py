"""Rewrites of a convolution that cost nothing (PopLibs' convolutionPreprocess and the
passes' params, ConvUtil.cpp getGradientParams / getWeightUpdateParams):

* ``canonical_views``: input and kernel truncation become slices and flips become reversed
  views (a flip of the padded, dilated field is the reversed field with its paddings
  swapped), leaving dilation, padding, stride and output truncation/padding to the
  worklists (``DimMap``);
* ``get_gradient_params``: the convolution computing the input gradient from the output
  gradient (with transpose_and_flip_weights=True: in and out channels swapped, kernel
  flipped): the stride becomes input dilation, the input dilation the stride, and the
  paddings are what make every input position's window line up;
* ``weight_update``: the convolution computing the weight deltas, activations as input with
  batch and in-channels swapped, the output gradient as the kernel (dilated by the stride).
"""
from typing import List, Tuple

from ..poputil import PoplibsError
from .conv_params import ConvParams
from .conv_worklists import DimMap


def canonical_views(params: ConvParams, x, w):
    """(params', x', w') with no truncation and no flips: x [B, G*Cin, *field] and w
    [G, Cout, Cin, *kernel] replaced by sliced, reversed views (either may be None)."""
    x, field, pad_lo, pad_hi = _canonical_operand(
        x, 2, params.input_field_shape, params.input_truncation_lower, params.input_truncation_upper,
        params.input_flip, params.padding_lower, params.padding_upper)
    w, kernel, kpad_lo, kpad_hi = _canonical_operand(
        w, 3, params.kernel_shape, params.kernel_truncation_lower, params.kernel_truncation_upper,
        params.kernel_flip, params.kernel_padding_lower, params.kernel_padding_upper)
    zeros, no = (0,) * params.num_field_dims, (False,) * params.num_field_dims
    return params.replace(input_field_shape=field, kernel_shape=kernel, padding_lower=pad_lo, padding_upper=pad_hi,
                          kernel_padding_lower=kpad_lo, kernel_padding_upper=kpad_hi, input_truncation_lower=zeros,
                          input_truncation_upper=zeros, kernel_truncation_lower=zeros,
                          kernel_truncation_upper=zeros, input_flip=no, kernel_flip=no), x, w


def _canonical_operand(t, first_axis: int, shape, trunc_lo, trunc_hi, flips, pad_lo, pad_hi):
    """One operand of canonical_views (the input or the kernel, its field dimensions from
    ``first_axis``): (``t`` with each dimension's truncation sliced off and flipped ones
    reversed, or None for None; the truncated shape; the paddings, swapped where flipped)."""
    pad_lo, pad_hi = list(pad_lo), list(pad_hi)
    for d, (size, lo, hi, flip) in enumerate(zip(shape, trunc_lo, trunc_hi, flips)):
        if t is not None and (lo or hi):
            t = t.slice(lo, size - hi, first_axis + d)
        if flip:
            if t is not None:
                t = t.reverse(first_axis + d)
            pad_lo[d], pad_hi[d] = pad_hi[d], pad_lo[d]
    truncated = tuple(size - lo - hi for size, lo, hi in zip(shape, trunc_lo, trunc_hi))
    return t, truncated, tuple(pad_lo), tuple(pad_hi)


def dim_maps(params: ConvParams) -> List[DimMap]:
    """The worklists' view of each field dimension of a canonical convolution."""
    maps = []
    for d in range(params.num_field_dims):
        strided = params.output_size(d) - params.output_padding_lower[d] - params.output_padding_upper[d]
        maps.append(DimMap(params.input_field_shape[d], params.input_dilation[d], params.padding_lower[d],
                           params.kernel_dilation[d], params.kernel_padding_lower[d], params.stride[d],
                           params.output_truncation_lower[d], params.output_padding_lower[d], strided))
    return maps


def is_one_by_one(params: ConvParams) -> bool:
    """A canonical convolution ConvPartial1x1Out computes: kernel 1, nothing but the channels
    mixing (every output position reads the input position it sits on)."""
    rank = params.num_field_dims
    ones, zeros = (1,) * rank, (0,) * rank
    return (params.kernel_shape == ones and params.stride == ones and params.input_dilation == ones
            and all(getattr(params, name) == zeros for name in (
                "padding_lower", "padding_upper", "kernel_padding_lower", "kernel_padding_upper",
                "output_truncation_lower", "output_truncation_upper", "output_padding_lower",
                "output_padding_upper")))


def _unsupported(params: ConvParams, what: str, names) -> None:
    found = [n for n in names if any(getattr(params, n))]
    if found:
        raise PoplibsError(f"{what}: popsim derives the pass's params for convolutions with stride, padding, "
                           f"dilation and kernel flips; found {', '.join(found)} set. Build the pass's "
                           "ConvParams yourself and call poplin.convolution")


def get_gradient_params(params: ConvParams) -> ConvParams:
    """The params of the backward pass (PopLibs' getGradientParams): use with
    ``convolution(graph, output_grad, weights, bwd, True, prog)`` to get the input gradient
    [B, G*Cin, *field] from the output gradient and the forward weights."""
    if not isinstance(params, ConvParams):
        raise PoplibsError(f"poplin.get_gradient_params: params must be a poplin.ConvParams, found "
                           f"{type(params).__name__}")
    _unsupported(params, "poplin.get_gradient_params", (
        "input_truncation_lower", "input_truncation_upper", "input_flip", "kernel_truncation_lower",
        "kernel_truncation_upper", "kernel_padding_lower", "kernel_padding_upper", "output_truncation_lower",
        "output_truncation_upper", "output_padding_lower", "output_padding_upper"))
    rank = params.num_field_dims
    out = params.output_field_shape()
    pad_lo, pad_hi, trunc_lo, trunc_hi = [], [], [], []
    for d in range(rank):
        kernel = params.transformed_kernel_size(d)
        lo = kernel - 1 - params.padding_lower[d]
        hi = (params.input_field_shape[d] - 1) * params.input_dilation[d] + params.padding_lower[d] \
            - (out[d] - 1) * params.stride[d]
        pad_lo.append(max(lo, 0))
        trunc_lo.append(max(-lo, 0))
        pad_hi.append(max(hi, 0))
        trunc_hi.append(max(-hi, 0))
    return ConvParams(params.data_type, params.batch_size, out, params.kernel_shape,
                      params.output_channels_per_group, params.input_channels_per_group, params.num_conv_groups,
                      stride=params.input_dilation, padding_lower=tuple(pad_lo), padding_upper=tuple(pad_hi),
                      input_dilation=params.stride, kernel_dilation=params.kernel_dilation,
                      kernel_flip=params.kernel_flip, output_truncation_lower=tuple(trunc_lo),
                      output_truncation_upper=tuple(trunc_hi), output_type=params.output_type)


def weight_update(params: ConvParams, zdeltas, activations) -> Tuple[ConvParams, object, object]:
    """(wu params, input view, kernel view) of the weight-update convolution: input [Cin,
    G*B, *field] (activations, batch and in-channels swapped), kernel [G, Cout, B, *out
    field] (the output gradient), output [Cin, G*Cout, *kernel]; weight_deltas_view turns
    that output into [G, Cout, Cin, *kernel]. Truncation and flips of the input are views."""
    _unsupported(params, "poplin.calculate_weight_deltas", (
        "kernel_truncation_lower", "kernel_truncation_upper", "kernel_padding_lower", "kernel_padding_upper",
        "output_truncation_lower", "output_truncation_upper", "output_padding_lower", "output_padding_upper"))
    canon, acts, _ = canonical_views(params.replace(kernel_flip=None), activations, None)
    rank = params.num_field_dims
    g, b = params.num_conv_groups, params.batch_size
    cin, cout = params.input_channels_per_group, params.output_channels_per_group
    out = params.output_field_shape()
    field = list(canon.input_field_shape)
    shuffle = [2, 1, 0] + list(range(3, 3 + rank))
    x = acts.reshape([b, g, cin] + field).dim_shuffle(shuffle).reshape([cin, g * b] + field)
    k = zdeltas.reshape([b, g, cout] + list(out)).dim_shuffle([1, 2, 0] + list(range(3, 3 + rank)))
    trunc_hi = []
    for d in range(rank):
        extra = (canon.transformed_input_size(d) - (out[d] - 1) * params.stride[d]
                 - (params.kernel_shape[d] - 1) * params.kernel_dilation[d] - 1)
        trunc_hi.append(extra)
    wu = ConvParams(params.data_type, cin, tuple(field), tuple(out), b, cout, g, stride=params.kernel_dilation,
                    padding_lower=canon.padding_lower, padding_upper=canon.padding_upper,
                    input_dilation=canon.input_dilation, kernel_dilation=params.stride,
                    output_truncation_upper=tuple(trunc_hi), output_type=params.output_type)
    return wu, x, k


def weight_deltas_view(params: ConvParams, wu_out):
    """[Cin, G*Cout, *kernel] -> [G, Cout, Cin, *kernel], with the forward kernel flips undone."""
    rank = params.num_field_dims
    g, cin, cout = params.num_conv_groups, params.input_channels_per_group, params.output_channels_per_group
    view = wu_out.reshape([cin, g, cout] + list(params.kernel_shape)).dim_shuffle([1, 2, 0] + list(range(3, 3 + rank)))
    for d in range(rank):
        if params.kernel_flip[d]:
            view = view.reverse(3 + d)
    return view
