"""BatchNormalization in training mode (opset 14+'s ``training_mode``, or more than one
output before it), onto popnn.bn: the batch's statistics by batch_norm_statistics (biased
variance, as ONNX), Y by batch_normalise with Scale and B; the running statistics as ONNX
states them, ``running = input * momentum + current * (1 - momentum)`` (popops maps); before
opset 15, outputs 3 and 4 are the batch's mean and variance. The batch's mean and inverse
standard deviation are kept (``ctx.saved``) for the gradient (popart/grads/nn.py)."""
from popsim import popnn, popops
from popsim.popops import expr as pe


def is_training(node) -> bool:
    """A BatchNormalization in training mode: ``training_mode``, or more than one output before opset 14."""
    return bool(int(node.attrs.get("training_mode", 0))) or len([o for o in node.outputs if o]) > 1


def lower(ctx, node, inputs):
    x, scale, bias, mean, var = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
    eps, momentum = float(node.attrs.get("epsilon", 1e-5)), float(node.attrs.get("momentum", 0.9))
    name = node.name
    batch_mean, inv_std = popnn.bn.batch_norm_statistics(ctx.graph, x, eps, ctx.prog, name=f"{name}/statistics")
    y, _ = popnn.bn.batch_normalise(ctx.graph, x, scale, bias, batch_mean, inv_std, ctx.prog, name)
    ctx.saved[node.name] = (batch_mean, inv_std)
    outputs = [y]
    wanted = [o for o in node.outputs[1:]]
    if any(wanted):
        batch_var = popops.map(ctx.graph, pe.inv(pe._1 * pe._1) - eps, [inv_std], ctx.prog, f"{name}/variance")
        running = pe._1 * momentum + pe._2 * (1.0 - momentum)
        outputs.append(popops.map(ctx.graph, running, [mean, batch_mean], ctx.prog, f"{name}/runningMean"))
        outputs.append(popops.map(ctx.graph, running, [var, batch_var], ctx.prog, f"{name}/runningVar"))
        outputs += [batch_mean, batch_var]
    return outputs[:len(node.outputs)]
