"""Losses and accuracy (PopLibs' popnn/Loss.hpp: calcLoss, calcAccuracy, LossType).

calc_loss builds a Program (not appended anywhere, as PopLibs returns one):

1. ``<name>/checkLabels``: popsim's ``popnn::LabelsOutOfRange`` on the labels' first tile,
   then an AbortOnCondition: a label neither MASKED_LABEL_CODE nor in ``[0, C)`` stops the
   run with an ApplicationRuntimeError naming the labels tensor (PopLibs documents
   nothing for such labels; its one-hot encoding silently gives them an all-zero row).
2. ``popops.encode_one_hot`` of the labels into a clone of the model outputs.
3. ``<name>/on_tile_transform``: ``popnn::LossSumSquaredTransform<T>`` or
   ``popnn::LossCrossEntropyTransform<T>`` worker vertices on the tiles of the model
   outputs (each tile's regions split between its workers, at most 4095 elements each,
   PopLibs' 12-bit ``size``), writing the deltas and the per-element loss terms.
4. Masked rows (label MASKED_LABEL_CODE) get zero deltas (one ``popops.map_in_place``);
   their loss is zero (cross entropy: the one-hot row is zero; sum squared: a second
   map on the loss).
5. ``popops.reduce_with_output`` ADD over dimension 1 into ``loss``.
6. With ``num_correct``: calc_accuracy's program.

Empty model outputs: no rows give an empty Program (nothing to compute, num_correct
unchanged); no classes leave every label out of range but MASKED_LABEL_CODE (step 1 still
checks them), so the loss is 0 (a sum over no classes) and no row is correct.
"""
import enum
import numbers

import numpy as np

import popsim
from popsim import UNSIGNED_INT
from popsim.program import AbortOnCondition, Execute, Sequence

from .. import popops, poputil
from ..popops import expr as pe
from ..poputil import PoplibsError, per_tile
from ..poputil.checks import check_graph, check_name, check_tensor
from .arg_max import check_rows, describe, reduce_class
from .arg_max_vertices import IN_TYPES
from .loss_vertices import (FP_TYPES, LABEL_TYPES, accuracy_vertex, label_check_vertex, masked_code,
                            transform_vertex)

__all__ = ["LossType", "calc_loss", "calc_accuracy"]

MAX_TRANSFORM_ELEMENTS = 0xFFF  # PopLibs' limit on one transform vertex's elements


class LossType(enum.Enum):
    """PopLibs' popnn::LossType."""
    SUM_SQUARED_LOSS = 0
    CROSS_ENTROPY_LOSS = 1


def _first_tile(graph, t) -> int:
    return next(tile for tile, regions in enumerate(graph.get_tile_mapping(t)) if regions)


def _check_labels(graph, outputs, expected, what: str) -> None:
    check_tensor(graph, expected, what, "expected (labels)")
    if expected.rank != 1 or expected.dtype not in LABEL_TYPES:
        raise PoplibsError(f"{what}: the labels (expected) must be a 1-D UNSIGNED_INT or INT tensor of "
                           f"{outputs.shape[0]} elements (one per row of {describe(outputs)}), found "
                           f"{describe(expected)}")
    if expected.shape[0] != outputs.shape[0]:
        raise PoplibsError(f"{what}: the labels {describe(expected)} must have one element per row of "
                           f"{describe(outputs)}: expected shape ({outputs.shape[0]},)")


def _check_outputs(graph, t, what: str, types) -> None:
    """The 2-D model outputs; rows or columns may be empty (arg_max's check_rows refuses those)."""
    check_tensor(graph, t, what, "model outputs")
    if t.rank != 2 or 0 not in t.shape or t.dtype not in types:
        check_rows(graph, t, None, what, "model outputs", types)


def _check_writable(t, what: str, role: str) -> None:
    if t.contains_constant() or t.contains_aliases():
        raise PoplibsError(f"{what}: {role} {describe(t)} is written and must be a variable without constants "
                           "or aliased elements")


def label_check(graph, outputs, expected, prog, name: str) -> None:
    """Append the run-time check that every label is MASKED_LABEL_CODE or a column of
    ``outputs`` (an AbortOnCondition after one ``popnn::LabelsOutOfRange`` vertex)."""
    classes = outputs.shape[1]
    cs = graph.add_compute_set(f"{name}/checkLabels")
    tile = _first_tile(graph, expected)
    flag = graph.add_variable(popsim.BOOL, (), f"{name}/labelsOutOfRange")
    graph.set_tile_mapping(flag, tile)
    v = graph.add_vertex(cs, label_check_vertex(graph, expected.dtype), {"labels": expected, "outOfRange": flag})
    graph.set_initial_value(v["numClasses"], classes)
    graph.set_tile_mapping(v, tile)
    prog.add(Execute(cs))
    prog.add(AbortOnCondition(flag, f"{name}: labels tensor '{expected.name}' holds a label outside [0, {classes}) "
                                    f"that is not MASKED_LABEL_CODE ({classes} classes in '{outputs.name}')"))


def _check_num_correct(graph, num_correct, what: str) -> None:
    check_tensor(graph, num_correct, what, "num_correct")
    if num_correct.dtype != UNSIGNED_INT or num_correct.num_elements() != 1:
        raise PoplibsError(f"{what}: num_correct must be an UNSIGNED_INT scalar or single-element tensor, found "
                           f"{describe(num_correct)}")
    _check_writable(num_correct, what, "num_correct")


def accuracy_program(graph, outputs, expected, num_correct, prog, name: str) -> None:
    """Append calc_accuracy's compute sets (no checks, no label check) to ``prog``."""
    tile = _first_tile(graph, num_correct)
    _, indices = reduce_class(graph, outputs, True, expected.dtype, prog, f"{name}/maxMinArgMaxMin(max)")
    cs = graph.add_compute_set(f"{name}/CalcAccuracy")
    v = graph.add_vertex(cs, accuracy_vertex(graph, expected.dtype),
                         {"maxPerBatch": indices, "expected": expected, "numCorrect": num_correct.flatten()[0]})
    graph.set_tile_mapping(v, tile)
    prog.add(Execute(cs))


def calc_accuracy(graph, model_outputs, expected, num_correct, prog=None, name: str = ""):
    """PopLibs' calcAccuracy: adds to ``num_correct`` (UNSIGNED_INT, one element) the
    number of rows of the 2-D ``model_outputs`` whose first largest element is at column
    ``expected[row]``; MASKED_LABEL_CODE rows do not count. PopLibs' numCorrect
    accumulates: zero it first for one batch's count. Labels out of range stop the run
    (see calc_loss). Returns the Program; with ``prog`` (a Sequence), also appends it."""
    what = "popnn.calc_accuracy"
    if isinstance(prog, str) and not name:  # PopLibs' signature: the debug name in prog's place
        prog, name = None, prog
    _check_outputs(graph, model_outputs, what, IN_TYPES)
    _check_labels(graph, model_outputs, expected, what)
    _check_num_correct(graph, num_correct, what)
    if prog is not None and not isinstance(prog, Sequence):
        raise popsim.TypeError(f"{what}: prog must be a popsim.program.Sequence or None, found {type(prog).__name__}")
    name = name or "Accuracy"
    seq = Sequence()
    if model_outputs.shape[0]:
        label_check(graph, model_outputs, expected, seq, name)
    if model_outputs.num_elements():
        accuracy_program(graph, model_outputs, expected, num_correct, seq, name)
    if prog is not None:
        prog.add(seq)
    return seq


def _parse_overload(args, kwargs, what: str):
    """PopLibs' four calcLoss overloads after ``deltas``, positionally: ``(lossType)``,
    ``(numCorrect, lossType)``, ``(deltasScale, modelOutputScaling, lossType)``,
    ``(deltasScale, modelOutputScaling, numCorrect, lossType)``, each optionally followed
    by a name; and popsim's API's ``(num_correct)`` without a loss type."""
    args = list(args)
    if args and isinstance(args[-1], str):
        kwargs.setdefault("name", "")
        if kwargs["name"]:
            raise PoplibsError(f"{what}: the name is given twice (positionally and as name=)")
        kwargs["name"] = args.pop()
    if args and isinstance(args[-1], LossType):
        given = {0: (), 1: ("num_correct",), 2: ("deltas_scale", "model_output_scaling"),
                 3: ("deltas_scale", "model_output_scaling", "num_correct")}.get(len(args) - 1)
        names = None if given is None else given + ("loss_type",)
    else:
        names = {0: (), 1: ("num_correct",)}.get(len(args))
    if names is None:
        raise PoplibsError(f"{what}: after deltas pass PopLibs' arguments (loss_type), (num_correct, loss_type), "
                           "(deltas_scale, model_output_scaling, loss_type) or (deltas_scale, "
                           f"model_output_scaling, num_correct, loss_type), or keywords; found {len(args)} "
                           "positional arguments")
    for key, value in zip(names, args):
        if kwargs.get(key) is not None:
            raise PoplibsError(f"{what}: {key} is given twice (positionally and as a keyword)")
        kwargs[key] = value
    return kwargs


def _scale(graph, value, dtype, what: str, role: str):
    """A scale: a number (a constant of ``dtype`` on tile 0) or a one-element tensor of
    ``dtype``, as the transform vertex's scalar input."""
    if isinstance(value, popsim.Tensor):
        check_tensor(graph, value, what, role)
        if value.dtype != dtype or value.num_elements() != 1:
            raise PoplibsError(f"{what}: {role} must be a number or a one-element {dtype.name} tensor (the model "
                               f"outputs' type), found {describe(value)}")
        return value.flatten()[0]
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise PoplibsError(f"{what}: {role} must be a number or a one-element {dtype.name} tensor, found "
                           f"{type(value).__name__} {value!r}")
    constant = graph.add_constant(dtype, (), float(value), f"{what}/{role}")
    graph.set_tile_mapping(constant, 0)
    return constant


def _transform(graph, outputs, one_hot, deltas, scales, dtype, prog, name: str):
    """The on-tile transform compute set; returns the per-element loss terms."""
    cross_entropy = scales is not None
    vertex_type = transform_vertex(graph, cross_entropy, dtype)
    transformed = graph.clone(outputs, f"{name}/Transformed")
    width = graph.target.vector_width(dtype)
    flats = [t.flatten() for t in (outputs, one_hot, deltas, transformed)]
    cs = graph.add_compute_set(f"{name}/on_tile_transform")
    for tile, regions in per_tile.tile_regions(graph, outputs):
        for group in poputil.split_regions_between_workers(graph.target, regions, width,
                                                           max_elements_per_partition=MAX_TRANSFORM_ELEMENTS):
            probs, expected, d, out = (per_tile.regions_view(f, group) for f in flats)
            fields = {"probs": probs, "expected": expected, "deltas": d, "transformed": out}
            if cross_entropy:
                fields["deltasScale"], fields["modelOutputScaling"] = scales
            v = graph.add_vertex(cs, vertex_type, fields)
            graph.set_initial_value(v["size"], out.num_elements())
            graph.set_tile_mapping(v, tile)
    prog.add(Execute(cs))
    return transformed


def _zero_masked(graph, t, expected, prog, name: str) -> None:
    """``t`` (rows first) zeroed where the row's label is MASKED_LABEL_CODE."""
    labels = expected if t.rank == 1 else expected.expand([1])
    masked = pe._2 == pe.Const(masked_code(expected.dtype), expected.dtype)
    popops.map_in_place(graph, pe.select(pe.Const(0, t.dtype), pe._1, masked), [t, labels], prog, name)


def calc_loss(graph, model_outputs, expected, loss, deltas, *args, deltas_scale=None, model_output_scaling=None,
              num_correct=None, loss_type=None, name: str = ""):
    """PopLibs' calcLoss: a Program computing, for the 2-D ``model_outputs`` [B, C]
    (FLOAT or HALF) and the labels ``expected`` [B] (UNSIGNED_INT or INT), the per-row
    ``loss`` [B] and the ``deltas`` [B, C] (the loss's gradient w.r.t. the outputs):

    - SUM_SQUARED_LOSS: ``delta = p - y``, ``loss = sum 0.5 delta^2``;
    - CROSS_ENTROPY_LOSS (default): ``delta = (deltas_scale / model_output_scaling)
      (p - y model_output_scaling)``, ``loss = -sum y (log(p + eps) - log(model_output_scaling))``

    with ``y`` the one-hot labels. Rows labelled MASKED_LABEL_CODE get zero loss and
    deltas; other labels outside ``[0, C)`` stop the run (ApplicationRuntimeError). The
    scales (cross entropy only; numbers or one-element tensors of the outputs' type)
    default to 1. With ``num_correct``, calc_accuracy's count is added to it. PopLibs'
    positional overloads are accepted too (``calc_loss(g, p, y, loss, d, LossType...)``)."""
    what = "popnn.calc_loss"
    kw = _parse_overload(args, {"deltas_scale": deltas_scale, "model_output_scaling": model_output_scaling,
                                "num_correct": num_correct, "loss_type": loss_type, "name": name}, what)
    loss_type = LossType.CROSS_ENTROPY_LOSS if kw["loss_type"] is None else kw["loss_type"]
    if not isinstance(loss_type, LossType):
        raise PoplibsError(f"{what}: loss_type must be a popnn.LossType, found {loss_type!r}")
    check_name(kw["name"], what)
    check_graph(graph, what)
    _check_outputs(graph, model_outputs, what, FP_TYPES)
    rows, classes = model_outputs.shape
    dtype = model_outputs.dtype
    _check_labels(graph, model_outputs, expected, what)
    check_tensor(graph, loss, what, "loss")
    if loss.rank != 1 or loss.shape[0] != rows or loss.dtype not in FP_TYPES:
        raise PoplibsError(f"{what}: loss must be a 1-D FLOAT or HALF tensor of shape ({rows},) (one element per row "
                           f"of {describe(model_outputs)}), found {describe(loss)}")
    check_tensor(graph, deltas, what, "deltas")
    if tuple(deltas.shape) != (rows, classes) or deltas.dtype != dtype:
        raise PoplibsError(f"{what}: deltas must be a {dtype.name} tensor of shape ({rows}, {classes}), the model "
                           f"outputs' shape and type, found {describe(deltas)}")
    _check_writable(loss, what, "loss")
    _check_writable(deltas, what, "deltas")
    if kw["num_correct"] is not None:
        _check_num_correct(graph, kw["num_correct"], what)
    cross_entropy = loss_type == LossType.CROSS_ENTROPY_LOSS
    scaled = kw["deltas_scale"] is not None or kw["model_output_scaling"] is not None
    if scaled and not cross_entropy:
        raise PoplibsError(f"{what}: deltas_scale and model_output_scaling are for CROSS_ENTROPY_LOSS only (PopLibs: "
                           "loss scaling is not implemented for SUM_SQUARED_LOSS)")
    name = kw["name"] or ("LossCrossEntropy" if cross_entropy else "LossSumSquared")
    scales = None
    if cross_entropy:
        scales = tuple(_scale(graph, 1.0 if kw[k] is None else kw[k], dtype, what, k)
                       for k in ("deltas_scale", "model_output_scaling"))
    seq = Sequence()
    if rows == 0:
        return seq
    label_check(graph, model_outputs, expected, seq, name)
    if classes == 0:  # only masked labels pass the check: the loss is a sum over no classes
        popops.zero(graph, loss, seq, f"{name}/reduce_loss")
        return seq
    one_hot = graph.clone(model_outputs, f"{name}/OneHotEncoded")
    popops.encode_one_hot(graph, expected, one_hot, seq, name=f"{name}/OneHotEncode")
    transformed = _transform(graph, model_outputs, one_hot, deltas, scales, dtype, seq, name)
    _zero_masked(graph, deltas, expected, seq, f"{name}/maskDeltas")
    popops.reduce_with_output(graph, transformed, loss, [1], popops.ReduceParams(popops.Operation.ADD), seq,
                              f"{name}/reduce_loss")
    if not cross_entropy:
        _zero_masked(graph, loss, expected, seq, f"{name}/maskLoss")
    if kw["num_correct"] is not None:
        accuracy_program(graph, model_outputs, expected, kw["num_correct"], seq, f"{name}/Accuracy")
    return seq
