"""Where a model's inputs and weights live on the tiles: laid out for the op that reads
them, as PopART asks an op to create its inputs (poplin.create_weights / create_input for a
Conv, create_mat_mul_input_rhs for a MatMul's or Gemm's right-hand side), and linearly
mapped otherwise. A tensor laid out for its reader needs no rearranging copy each batch.

Linearly mapped ones go through ``map_linearly``, PopART's LinearMapper: each starts on the
tile after the last one of the graph's previous one (wrapping round), so that a model's many
small tensors (a BatchNormalization's scale, bias, mean and variance) spread over the tiles
instead of all starting on tile 0."""
import weakref

import popsim
from popsim import FLOAT, HALF, poplin, poputil

from .node_attributes import poplin_options


def _shape(model, tid):
    info = model.shapes.get(tid)
    return tuple(info[1]) if info and info[1] is not None and all(d is not None for d in info[1]) else None


def _first_reader(model, tid):
    for node in model.nodes:
        if tid in node.inputs:
            return node, node.inputs.index(tid)
    return None, None


# graph -> where its next linear mapping starts
_NEXT_TILE: "weakref.WeakKeyDictionary[popsim.Graph, int]" = weakref.WeakKeyDictionary()


def map_linearly(graph, t) -> None:
    """Map ``t`` linearly over ``graph``'s tiles from the tile after the last one the graph's
    previous linearly mapped tensor used (PopART's LinearMapper: calcLinearTileMapping
    rotated, the start advanced by the tiles used)."""
    mapping, _NEXT_TILE[graph] = poputil.calc_linear_tile_mapping_and_new_offset(graph, t, _NEXT_TILE.get(graph, 0))
    graph.set_tile_mapping(t, mapping)


def _linear_variable(graph, dtype, shape, tid):
    t = graph.add_variable(dtype, shape, tid)
    map_linearly(graph, t)
    return t


def create_variable(graph, model, tid, shape, cache, dtype=FLOAT):
    """The variable for model input or weight ``tid`` of ``shape`` (FLOAT unless ``dtype``;
    FLOAT and HALF ones laid out by poplin for their reader, others linearly)."""
    node, slot = _first_reader(model, tid)
    t = None if node is None else create_for_reader(graph, model, node, slot, shape, cache, dtype, tid)
    return _linear_variable(graph, dtype, tuple(shape), tid) if t is None else t


def create_for_reader(graph, model, node, slot, shape, cache, dtype, name):
    """A variable of ``shape`` laid out for input ``slot`` of ``node`` by the PopLibs op that
    reads it (PopART's tensor creators: poplin.create_input and create_weights for a Conv's
    input and weights, create_mat_mul_input_rhs for a MatMul's or Gemm's right-hand side),
    or None where that op has no creator for it (FLOAT and HALF only)."""
    from .ops.nn import conv_params, conv_weights_shape   # (here: the ops import the lowering, which imports this)
    shape = tuple(shape)
    if dtype not in (FLOAT, HALF):
        return None
    options = poplin_options(node)   # the plan the reader will use
    try:
        if node.op_type == "Conv" and slot in (0, 1) and len(node.inputs) > 1:
            x_shape, w_shape = _shape(model, node.inputs[0]), _shape(model, node.inputs[1])
            if x_shape and w_shape:
                params = conv_params(node, x_shape, w_shape, dtype)
                if slot == 0:
                    return poplin.create_input(graph, params, name, options=options, cache=cache)
                weights = poplin.create_weights(graph, params, name, options=options, cache=cache)
                return weights.reshape(shape) if conv_weights_shape(params) != shape else weights
        rhs = (slot == 1 and len(shape) == 2 and
               (node.op_type == "MatMul" or node.op_type == "Gemm" and not node.attrs.get("transA", 0)))
        if rhs:   # Gemm's transB: B [N, K] laid out as the transpose of the [K, N] right-hand side
            trans_b = node.op_type == "Gemm" and bool(node.attrs.get("transB", 0))
            b_shape = shape[::-1] if trans_b else shape
            a_shape = _shape(model, node.inputs[0])
            if a_shape and len(a_shape) == 2 and a_shape[1] == b_shape[0]:
                t = poplin.create_mat_mul_input_rhs(graph, dtype, a_shape, b_shape, name, options=options, cache=cache)
                return t.transpose() if trans_b else t
    except popsim.PopsimError:
        pass  # the reader will say what is wrong with its operands; the caller lays the tensor out linearly
    return None
