"""poplin's convolutions (PopLibs' poplin/Convolution.hpp): planned by the planner
(planner.get_plan) for any ConvParams and built by convolution_execute as the plan says.

Layouts (PopLibs'): input [B, G*Cin, *field], weights [G, Cout, Cin, *kernel], output
[B, G*Cout, *out_field]. The passes: the backward pass is ``convolution`` with the params
``get_gradient_params`` gives and ``transpose_and_flip_weights=True`` (the forward weights
with in and out channels swapped and the kernel flipped, as views); the weight deltas are
the convolution ``calculate_weight_deltas`` builds (conv_transforms.weight_update), which
``convolution_weight_update`` adds to the weights (``weights += scale * deltas``).
Types: input and weights of params.data_type; the output of params.output_type.
"""
import numbers

import numpy as np

import popsim
from popsim import FLOAT, HALF, popops
from popsim.program import Copy

from .. import poputil
from ..poputil import PoplibsError
from ..poputil.checks import check_graph, check_prog, check_tensor
from . import conv_layout, mat_mul_execute, mat_mul_layout
from .conv_candidates import is_mat_mul_shaped
from .conv_params import ConvParams
from .conv_transforms import get_gradient_params, is_one_by_one, weight_deltas_view, weight_update
from .convolution_execute import execute_convolution
from .options import ConvOptions, parse_conv_options
from .planner import get_plan, graph_cache


def _check_params(params, what: str) -> None:
    if not isinstance(params, ConvParams):
        raise PoplibsError(f"{what}: params must be a poplin.ConvParams, found {type(params).__name__}")


def _plan(graph, params: ConvParams, options, cache):
    opts = options if isinstance(options, ConvOptions) else parse_conv_options(options)
    return get_plan(graph.get_target(), params, opts, graph_cache(graph, cache))


def _as_mat_mul(params: ConvParams) -> bool:
    """A convolution the matmul executor builds (and whose tensors mat_mul_layout lays out)."""
    return is_mat_mul_shaped(params) and is_one_by_one(params)


def _mat_mul_tensor(graph, plan, params: ConvParams, role: str, dtype, name: str):
    """The input, weights or output of a matmul-shaped convolution, laid out as the matmul
    A [G, B, Cin] @ W [G, Cin, Cout] its plan describes (swapOperands included)."""
    g, b = params.num_conv_groups, params.batch_size
    cin, cout = params.input_channels_per_group, params.output_channels_per_group
    ones = [1] * params.num_field_dims
    blocks = mat_mul_execute.blocking_for(graph, plan, g, b, cin, cout)
    swap = plan.transforms[0].swap_operands
    if role == "output":
        t = mat_mul_layout.create_output(graph, dtype, blocks, name, mat_mul_execute.output_grain(graph, plan, dtype))
        t = t.dim_shuffle([0, 2, 1]) if swap else t
        return t.dim_shuffle([1, 0, 2]).reshape([b, g * cout] + ones)
    lhs = (role == "input") != swap
    t = (mat_mul_layout.create_lhs if lhs else mat_mul_layout.create_rhs)(graph, dtype, blocks, name)
    t = t.dim_shuffle([0, 2, 1]) if swap else t
    if role == "input":
        return t.dim_shuffle([1, 0, 2]).reshape([b, g * cin] + ones)
    return t.dim_shuffle([0, 2, 1]).reshape([g, cout, cin] + ones)


def _create(graph, params, name, options, cache, role: str, what: str):
    check_graph(graph, what)
    _check_params(params, what)
    plan = _plan(graph, params, options, cache)
    dtype = params.output_type if role == "output" else params.data_type
    if _as_mat_mul(params):
        return _mat_mul_tensor(graph, plan, params, role, dtype, name)
    blocks = conv_layout.ConvBlocking.of(plan, params, graph.get_target().num_tiles)
    if role == "input":
        return conv_layout.create_input(graph, dtype, blocks, params.input_field_shape, name)
    if role == "weights":
        return conv_layout.create_weights(graph, dtype, blocks, name)
    return conv_layout.create_output(graph, dtype, blocks, name, mat_mul_execute.output_grain(graph, plan, dtype))


def create_input(graph, params: ConvParams, name: str = "input", options=None, cache=None):
    """The input [B, G*Cin, *field] laid out for the plan of ``params`` (each tile's block
    contiguous, spread over the tiles that read it) (PopLibs' createInput)."""
    return _create(graph, params, name, options, cache, "input", "poplin.create_input")


def create_weights(graph, params: ConvParams, name: str = "weights", options=None, cache=None):
    """The weights [G, Cout, Cin, *kernel] laid out for the plan (PopLibs' createWeights)."""
    return _create(graph, params, name, options, cache, "weights", "poplin.create_weights")


def create_conv_output(graph, params: ConvParams, name: str = "output", options=None, cache=None):
    """The output [B, G*Cout, *out_field] laid out as convolution creates it."""
    return _create(graph, params, name, options, cache, "output", "poplin.create_conv_output")


def weights_transpose_chans_flip_xy_view(weights):
    """[G, A, B, *kernel] -> [G, B, A, *kernel] with every kernel dimension reversed (a view)."""
    rank = weights.rank - 3
    view = weights.dim_shuffle([0, 2, 1] + list(range(3, 3 + rank)))
    for d in range(rank):
        view = view.reverse(3 + d)
    return view


def weights_transpose_chans_flip_xy(graph, weights_in, weights_out, prog, name: str = "") -> None:
    """weights_out = weights_in with in and out channels swapped and the kernel flipped
    (PopLibs' weightsTransposeChansFlipXY): [G, A, B, *K] -> [G, B, A, *K]."""
    what = "poplin.weights_transpose_chans_flip_xy"
    check_tensor(graph, weights_in, what, "weights_in")
    check_tensor(graph, weights_out, what, "weights_out")
    check_prog(prog, what)
    if weights_in.rank < 3:
        raise PoplibsError(f"{what}: weights_in '{weights_in.name}' must be [G, A, B, *kernel], found shape "
                           f"{tuple(weights_in.shape)}")
    view = weights_transpose_chans_flip_xy_view(weights_in)
    if tuple(view.shape) != tuple(weights_out.shape) or weights_in.dtype != weights_out.dtype:
        raise PoplibsError(f"{what}: weights_out '{weights_out.name}' must be {weights_in.dtype.name} of shape "
                           f"{tuple(view.shape)}, found {weights_out.dtype.name} of shape {tuple(weights_out.shape)}")
    prog.add(Copy(view, weights_out))


def _check_operand(graph, t, shape, dtype, what: str, role: str, hint: str = "") -> None:
    check_tensor(graph, t, what, role)
    if tuple(t.shape) != tuple(shape):
        raise PoplibsError(f"{what}: {role} '{t.name}' must have shape {tuple(shape)}{hint}, found {tuple(t.shape)}")
    if t.dtype != dtype:
        raise PoplibsError(f"{what}: {role} '{t.name}' must be {dtype.name} (the params' type), found {t.dtype.name}")


def _check_conv(graph, in_, weights, params, transpose, prog, what):
    check_graph(graph, what)
    _check_params(params, what)
    check_prog(prog, what)
    _check_operand(graph, in_, params.input_shape(), params.data_type, what, "in", " [B, G*Cin, *field]")
    if not isinstance(transpose, bool):  # before its truth value is taken
        raise PoplibsError(f"{what}: transpose_and_flip_weights must be True or False, found {transpose!r:.60}")
    shape = params.weights_shape()
    if transpose:
        shape = (shape[0], shape[2], shape[1]) + tuple(shape[3:])
    hint = " ([G, Cin, Cout, *kernel]: the forward weights, transposed and flipped here)" if transpose else \
        " [G, Cout, Cin, *kernel]"
    _check_operand(graph, weights, shape, params.data_type, what, "weights", hint)


def convolution_with_output(graph, in_, weights, out, params: ConvParams, transpose_and_flip_weights: bool, prog,
                            name: str = "", options=None, cache=None) -> None:
    """convolution writing into ``out`` [B, G*Cout, *out_field] (of params.output_type)."""
    what = "poplin.convolution_with_output"
    _check_conv(graph, in_, weights, params, transpose_and_flip_weights, prog, what)
    _check_operand(graph, out, params.output_shape(), params.output_type, what, "out", " [B, G*Cout, *out_field]")
    plan = _plan(graph, params, options, cache)
    if transpose_and_flip_weights:
        weights = weights_transpose_chans_flip_xy_view(weights)
    execute_convolution(graph, in_, weights, out, params, plan, prog, name or "Conv")


def convolution(graph, in_, weights, params: ConvParams, transpose_and_flip_weights: bool, prog, name: str = "",
                options=None, cache=None):
    """The convolution of ``in_`` [B, G*Cin, *field] with ``weights`` [G, Cout, Cin, *kernel]
    (with ``transpose_and_flip_weights``, the forward weights [G, Cin, Cout, *kernel] of
    the pass whose gradient this is): a new [B, G*Cout, *out_field] tensor laid out as the
    plan says (PopLibs' convolution)."""
    what = "poplin.convolution"
    _check_conv(graph, in_, weights, params, transpose_and_flip_weights, prog, what)
    out = _create(graph, params, f"{name}/output" if name else "conv_output", options, cache, "output", what)
    convolution_with_output(graph, in_, weights, out, params, transpose_and_flip_weights, prog, name, options, cache)
    return out


def calculate_weight_deltas(graph, zdeltas, activations, params: ConvParams, prog, name: str = "", options=None,
                            cache=None):
    """The gradient of the weights [G, Cout, Cin, *kernel] from the output gradient
    ``zdeltas`` [B, G*Cout, *out_field] and the forward input ``activations``
    [B, G*Cin, *field] of the forward convolution ``params`` (PopLibs' calculateWeightDeltas):
    itself a planned convolution."""
    what = "poplin.calculate_weight_deltas"
    check_graph(graph, what)
    _check_params(params, what)
    check_prog(prog, what)
    _check_operand(graph, zdeltas, params.output_shape(), params.data_type, what, "zdeltas", " [B, G*Cout, *out_field]")
    _check_operand(graph, activations, params.input_shape(), params.data_type, what, "activations",
                   " [B, G*Cin, *field]")
    wu, x, k = weight_update(params, zdeltas, activations)
    out = _create(graph, wu, f"{name}/weightDeltas" if name else "weight_deltas", options, cache, "output", what)
    execute_convolution(graph, x, k, out, wu, _plan(graph, wu, options, cache), prog, name or "WeightDeltas")
    return weight_deltas_view(params, out)


def convolution_weight_update(graph, zdeltas, weights, activations, params: ConvParams, scale, prog, name: str = "",
                              options=None, cache=None) -> None:
    """PopLibs' convolutionWeightUpdate: ``weights += scale * deltas``, the deltas
    calculate_weight_deltas gives (computed in params.data_type, as PopLibs sets the
    output type to the input type) added by popops.scaled_add_to. ``scale``: a number or
    a one-element tensor (FLOAT or the weights' type)."""
    what = "poplin.convolution_weight_update"
    check_graph(graph, what)
    _check_params(params, what)
    check_prog(prog, what)
    _check_operand(graph, weights, params.weights_shape(), params.data_type, what, "weights",
                   " [G, Cout, Cin, *kernel]")
    if isinstance(scale, popsim.Tensor):
        check_tensor(graph, scale, what, "scale")
        if scale.num_elements() != 1 or scale.dtype not in (FLOAT, weights.dtype):
            raise PoplibsError(f"{what}: the scale tensor '{scale.name}' must be one element of FLOAT or "
                               f"{weights.dtype.name}, found {scale.dtype.name} of shape {tuple(scale.shape)}")
        scale = scale.reshape(())
    elif isinstance(scale, bool) or not isinstance(scale, (numbers.Real, np.integer, np.floating)):
        raise PoplibsError(f"{what}: scale must be a number or a scalar tensor, found {type(scale).__name__} "
                           f"{scale!r:.60}")
    params = params.replace(output_type=params.data_type)
    deltas = calculate_weight_deltas(graph, zdeltas, activations, params, prog, name, options, cache)
    popops.scaled_add_to(graph, weights, deltas, scale, prog, name=f"{name or 'WeightUpdate'}/UpdateWeights")


#: PopLibs' floor on the bias bytes a tile holds (fewer exchange programs)
MIN_BIAS_BYTES_PER_TILE = 8


def bias_mapping(graph, biases, acts):
    """PopLibs' createBiases mapping: the biases [C] in grains of the vector width, each
    grain used by the tiles holding activations of its channels; the grains used by the
    same set of tiles are split between those tiles (at least MIN_BIAS_BYTES_PER_TILE on
    each), so that the add reads them from many tiles, not all from one. Grains no tile
    uses are mapped linearly. Returns ``mapping[tile]`` intervals of the biases."""
    channels, itemsize = int(acts.shape[1]), graph.target.type_size(acts.dtype)
    per_channel = acts.num_elements() // channels if channels else 0
    grain = graph.target.vector_width(acts.dtype)
    num_grains = -(-channels // grain)
    users = [set() for _ in range(num_grains)]
    if per_channel:
        by_channel = acts.dim_roll(1, 0).reshape([channels, per_channel])
        for tile, intervals in enumerate(graph.get_tile_mapping(by_channel, require_complete=False)):
            for begin, end in intervals:
                for g in range(begin // per_channel // grain, (end - 1) // per_channel // grain + 1):
                    users[g].add(tile)
    mapping = [[] for _ in range(graph.target.num_tiles)]
    unused = [(g * grain, min(channels, (g + 1) * grain)) for g in range(num_grains) if not users[g]]
    for tile, intervals in enumerate(poputil.calc_linear_tile_mapping(graph, biases) if unused else []):
        mapping[tile] += [(max(b, lo), min(e, hi)) for b, e in intervals for lo, hi in unused if b < hi and lo < e]
    shared = {}
    for g, tiles in enumerate(users):
        if tiles:
            shared.setdefault(tuple(sorted(tiles)), []).append((g, g + 1))
    min_grains = -(-(-(-MIN_BIAS_BYTES_PER_TILE // itemsize)) // grain)
    for tiles, grains in shared.items():
        for tile, part in zip(tiles, poputil.split_regions(grains, 1, len(tiles), min_grains)):
            mapping[tile] += [(b * grain, min(channels, e * grain)) for b, e in part]
    return mapping


def create_biases(graph, acts, name: str = "biases"):
    """The biases [C] of activations [B, C, *field], each on the tiles that use it
    (PopLibs' createBiases; see bias_mapping)."""
    what = "poplin.create_biases"
    check_tensor(graph, acts, what, "acts")
    if acts.rank < 2 or acts.dtype not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: acts '{acts.name}' must be FLOAT or HALF [B, C, *field], found "
                           f"{acts.dtype.name} of shape {tuple(acts.shape)}")
    biases = graph.add_variable(acts.dtype, (acts.shape[1],), name)
    graph.set_tile_mapping(biases, bias_mapping(graph, biases, acts))
    return biases


def add_bias(graph, acts, biases, prog, name: str = "") -> None:
    """acts[:, c, ...] += biases[c] (PopLibs' addBias)."""
    what = "poplin.add_bias"
    check_tensor(graph, acts, what, "acts")
    check_tensor(graph, biases, what, "biases")
    check_prog(prog, what)
    if acts.rank < 2 or biases.rank != 1 or biases.shape[0] != acts.shape[1]:
        raise PoplibsError(f"{what}: biases '{biases.name}' must be [C] for acts '{acts.name}' [B, C, *field]: "
                           f"found biases {tuple(biases.shape)} and acts {tuple(acts.shape)}")
    if biases.dtype != acts.dtype:
        raise PoplibsError(f"{what}: biases '{biases.name}' must have acts' type {acts.dtype.name}, found "
                           f"{biases.dtype.name}")
    view = biases.reshape([1, biases.shape[0]] + [1] * (acts.rank - 2))
    popops.add_in_place(graph, acts, view, prog, name or "AddBias")


__all__ = ["add_bias", "calculate_weight_deltas", "convolution", "convolution_weight_update",
           "convolution_with_output", "create_biases", "create_conv_output", "create_input", "create_weights",
           "get_gradient_params", "weights_transpose_chans_flip_xy"]
