"""Dropout. In a TrainingSession (which gives the lowering ``ctx.random_seed``,
popart/random_seed.py) it drops as PopART's DropoutOpx does: each element kept with
probability 1 - ratio and scaled by 1 / (1 - ratio), the others zeroed, by
poprand.dropout with the session's seed tensor and the node's seed modifier; with its mask
output wanted, poprand.bernoulli draws the mask (the same draws) and popops.map applies it.
The gradient (popart/grads/elementwise.py) draws the same mask again from the same seed
(the micro-batch's, kept for the backward pass; stashed when pipelined) and applies it to
the output's gradient, as PopART's DropoutGradOp does. In an InferenceSession, with ratio 0,
and from opset 12 on unless training_mode is a constant true, Dropout is the identity (as
PopART's is in inference). A training_mode streamed or computed on the device, in an
InferenceSession, is read when the step runs: the output is the input and the mask all
true (what ONNX defines with training_mode false or ratio 0), and an AbortOnCondition
(the predicate a popops.map of training_mode and ratio) stops the run, as a
popart_exception, where training_mode is true with a nonzero ratio, which would drop."""
import numpy as np

from popsim import BOOL, FLOAT, HALF, AbortOnCondition, popops, poprand
from popsim.popops import expr as pe

from ..errors import popart_exception
from ..op_table import op
from ..random_seed import modifier


def ratio_of(ctx, node, inputs) -> float:
    """The ratio: the attribute (opset < 12) or constant input 1 (0.5 when absent), in [0, 1)."""
    ratio = node.attrs.get("ratio", 0.5)
    if ctx.opset >= 12 and len(inputs) > 1 and inputs[1] is not None:
        if not isinstance(inputs[1], np.ndarray):   # a float32 initializer lives on the device: its value
            inputs = [inputs[0], ctx.model.initializers.get(node.inputs[1], inputs[1])]
        if not isinstance(inputs[1], np.ndarray):
            raise popart_exception(f"node {node.name!r} (Dropout): ratio (input 1) is computed on the device or "
                                   "streamed; popsim.popart needs it as a constant (an initializer or Constant)")
        ratio = inputs[1].reshape(-1)[0]
    ratio = float(ratio)
    if not 0.0 <= ratio < 1.0:
        raise popart_exception(f"node {node.name!r} (Dropout): ratio {ratio} is not valid; use a value in the "
                               "interval [0, 1)")
    return ratio


def _training(ctx, node, inputs) -> bool:
    """Whether the node drops: in a TrainingSession, as its opset's training flag says."""
    in_training = getattr(ctx, "random_seed", None) is not None
    if ctx.opset >= 12:
        if len(inputs) < 3 or inputs[2] is None:
            return False   # ONNX: training_mode absent is false
        mode = inputs[2]
        if not isinstance(mode, np.ndarray):
            raise popart_exception(f"node {node.name!r} (Dropout): training_mode (input 2) is computed on the device "
                                   "or streamed; popsim.popart needs it as a constant (true or false)")
        if bool(mode.reshape(-1)[0]) and not in_training and not _zero_ratio(ctx, node, inputs):
            raise popart_exception(f"node {node.name!r} (Dropout): training_mode=true in an InferenceSession; "
                                   "popsim.popart runs Dropout as the identity in inference, as PopART does: give "
                                   "training_mode false, or run the model in a TrainingSession")
        return bool(mode.reshape(-1)[0])
    if ctx.opset < 7 and int(node.attrs.get("is_test", 1)) == 0 and not in_training:
        raise popart_exception(f"node {node.name!r} (Dropout): is_test=0 (training) is not supported in an "
                               "InferenceSession; set is_test=1 or run the model in a TrainingSession")
    return in_training and not (ctx.opset < 7 and int(node.attrs.get("is_test", 0)) == 1)


def _zero_ratio(ctx, node, inputs) -> bool:
    """Whether the ratio is a constant 0 (a streamed one is not known when the graph is built)."""
    try:
        return ratio_of(ctx, node, inputs) == 0.0
    except popart_exception:
        return False


def _check_mode_on_the_device(ctx, node, inputs) -> None:
    """Inference with training_mode on the device: stop the run where it would drop."""
    mode = ctx.tensor(inputs[2], node)
    if mode.dtype != BOOL:
        mode = popops.cast(ctx.graph, mode, BOOL, ctx.prog, f"{node.name}/trainingMode")
    ratio = inputs[1] if len(inputs) > 1 else None
    if ratio is not None and not isinstance(ratio, np.ndarray):   # a float32 initializer: its value
        ratio = ctx.model.initializers.get(node.inputs[1], ratio)
    if ratio is None or isinstance(ratio, np.ndarray):   # a constant ratio (0.5 when absent): checked now
        if ratio_of(ctx, node, inputs) == 0.0:
            return   # the identity whatever training_mode says
        drops = mode
    else:
        r = ctx.tensor(ratio, node)
        invalid = popops.map(ctx.graph, pe.logical_or(pe._1 < 0.0, pe._1 >= 1.0), [r], ctx.prog,
                             f"{node.name}/ratioInvalid")
        ctx.prog.add(AbortOnCondition(invalid.reshape(()), f"node {node.name!r} (Dropout): its ratio (input 1) is "
                                      "outside [0, 1); give a value in [0, 1)"))
        drops = popops.map(ctx.graph, pe.logical_and(pe._1, pe._2 != 0.0), [mode, r], ctx.prog, f"{node.name}/drops")
    ctx.prog.add(AbortOnCondition(drops.reshape(()), f"node {node.name!r} (Dropout): training_mode is true with a "
                                  "nonzero ratio in an InferenceSession; popsim.popart runs Dropout as the identity "
                                  "in inference, as PopART does: feed training_mode false (or ratio 0), or run the "
                                  "model in a TrainingSession"))


def apply_mask(ctx, node, seed, x, ratio: float, name: str):
    """``x`` with node ``node``'s mask for ``seed`` applied and scaled; and the mask (BOOL)
    when the node's mask output is wanted, else None."""
    keep, mod = 1.0 - ratio, modifier(ctx.model, node)
    if len(node.outputs) < 2 or not node.outputs[1]:
        return poprand.dropout(ctx.graph, seed, mod, x, x, keep, 1.0 / keep, ctx.prog, f"{name}/dropout"), None
    m = poprand.bernoulli(ctx.graph, seed, mod, x, x.dtype, keep, ctx.prog, f"{name}/mask")
    y = popops.map(ctx.graph, pe._1 * pe._2 * pe.Const(1.0 / keep, x.dtype), [m, x], ctx.prog, f"{name}/dropout")
    return y, m


@op("Dropout", 1, summary="training: poprand.dropout (poprand.bernoulli and popops.map with the mask output) from "
    "the session's seed; inference: the input itself (a streamed training_mode checked by popops.map and "
    "AbortOnCondition), the mask all true (a host constant)")
def dropout(ctx, node, inputs):
    x = inputs[0]
    on_device = ctx.opset >= 12 and len(inputs) > 2 and inputs[2] is not None and not isinstance(inputs[2], np.ndarray)
    if on_device and getattr(ctx, "random_seed", None) is None:   # inference: training_mode read as the step runs
        _check_mode_on_the_device(ctx, node, inputs)
        return [x, np.ones(tuple(x.shape), np.bool_)]
    if not _training(ctx, node, inputs) or ratio_of(ctx, node, inputs) == 0.0:
        return [x, np.ones(tuple(x.shape), np.bool_)]   # every element kept
    x = ctx.tensor(x, node)
    if x.dtype not in (FLOAT, HALF):
        raise popart_exception(f"node {node.name!r} (Dropout): its input is {x.dtype}; Dropout takes FLOAT or FLOAT16")
    seed = ctx.random_seed.seed_for(ctx, node)
    ctx.saved[node.name] = (seed,)   # the micro-batch's seed: the gradient draws the same mask from it
    y, m = apply_mask(ctx, node, seed, x, ratio_of(ctx, node, inputs), node.name)
    return [y] if m is None else [y, popops.cast(ctx.graph, m, BOOL, ctx.prog, f"{node.name}/mask/cast")]
