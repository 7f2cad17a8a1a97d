"""Train a small convolutional network on the simulated IPU, forward, backward and update
all on the device, with Poplar's libraries (poplin convolutions and matmuls, popnn batch
norm, ReLU, max pooling, softmax and cross-entropy, popops reductions and SGD with
momentum).

The network, for H x W images (8 x 8 digits, 28 x 28 MNIST):

    conv 3x3 (1 -> C1, pad 1) -> batch norm -> ReLU -> max pool 2x2
    conv 3x3 (C1 -> C2, pad 1) + bias -> ReLU -> max pool 2x2
    fully connected (C2 * H/4 * W/4 -> 10) + bias -> softmax -> cross-entropy

A whole epoch is one engine run: a Repeat over the batches, each read from host FIFOs,
its per-image losses written to another. Testing is a second program on the same graph
(batch norm then uses the running statistics the training kept).

Data parallelism (data_parallel.py): ``--replicas R`` trains R replicas, one per IPU, each
on its micro-batch of --batch-size images, with gradients all-reduced (MEAN) and batch norm
synchronised: the same training as one replica on batches of R times the size.
``--accumulate N`` updates every N micro-batches; ``--shard-optimizer`` keeps 1/R of the
momentum buffer on each replica (reduce-scatter, local update, all-gather).

Run: python examples/cnn_training.py [--epochs N] [--mnist DIR] [--replicas R] [--accumulate N]
     [--shard-optimizer]   (pip install ".[examples]")
"""
import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import popsim
from popsim import FLOAT, poplin, popnn, popops
from popsim.popops import expr as pe
from popsim.program import Copy, Sequence

import data_parallel as dp
import training_data
from training_loop import Trainer, fit

NUM_CLASSES = 10
RELU, SOFTMAX = popnn.NonLinearityType.RELU, popnn.NonLinearityType.SOFTMAX

#: the trainable parameters and their momentum buffers, by name, in this order
PARAMETERS = ("conv1", "gamma", "beta", "conv2", "conv2_bias", "fc", "fc_bias")
RUNNING_STATISTICS = ("running_mean", "running_var")


@dataclass(frozen=True)
class CnnConfig:
    image_shape: tuple = (8, 8)
    channels: tuple = (16, 32)         # C1, C2
    batch_size: int = 32
    learning_rate: float = 0.05
    momentum: float = 0.9
    bn_eps: float = 1e-5
    bn_momentum: float = 0.1           # running statistics: r = (1 - m) r + m batch
    tiles: int = 64
    replicas: int = 1                  # data parallelism: one replica per IPU, batch_size each
    accumulate: int = 1                # micro-batches per weight update
    shard_optimizer: bool = False      # each replica keeps 1/replicas of the momentum buffer

    def conv_params(self, layer: int) -> poplin.ConvParams:
        field = self.image_shape if layer == 1 else tuple(s // 2 for s in self.image_shape)
        cin = 1 if layer == 1 else self.channels[0]
        return poplin.ConvParams(FLOAT, self.batch_size, field, (3, 3), cin, self.channels[layer - 1],
                                 padding_lower=(1, 1), padding_upper=(1, 1))

    def pool_params(self, layer: int) -> popnn.PoolParams:
        field = tuple(s // 2 ** (layer - 1) for s in self.image_shape)
        return popnn.PoolParams(popnn.PoolingType.MAX, field, (2, 2), (2, 2), (0, 0), (0, 0),
                                self.channels[layer - 1], self.batch_size, FLOAT)

    @property
    def features(self) -> int:
        return self.channels[1] * (self.image_shape[0] // 4) * (self.image_shape[1] // 4)

    def shapes(self) -> dict:
        c1, c2 = self.channels
        return {"conv1": (1, c1, 1, 3, 3), "gamma": (c1,), "beta": (c1,), "conv2": (1, c2, c1, 3, 3),
                "conv2_bias": (c2,), "fc": (self.features, NUM_CLASSES), "fc_bias": (NUM_CLASSES,)}


def initial_weights(config: CnnConfig, seed: int = 0) -> dict:
    """He-normal weights, unit gamma, zero biases and beta (float32)."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in config.shapes().items():
        if name in ("conv1", "conv2", "fc"):
            fan_in = int(np.prod(shape[2:])) if name != "fc" else shape[0]
            weights[name] = (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        else:
            weights[name] = np.full(shape, 1.0 if name == "gamma" else 0.0, np.float32)
    return weights


def initial_state(config: CnnConfig, weights=None) -> dict:
    """Everything the device holds between runs, as training starts: the weights (given,
    or initial_weights'), zero velocities (one shard per replica with shard_optimizer),
    running mean 0 and variance 1."""
    state = dict(weights or initial_weights(config))
    if config.shard_optimizer:
        total = sum(state[name].size for name in PARAMETERS)
        state["velocity/shard"] = np.zeros(dp.shard_length(total, config.replicas), np.float32)
    else:
        state.update({f"{name}/velocity": np.zeros_like(state[name]) for name in PARAMETERS})
    state["running_mean"] = np.zeros(config.channels[0], np.float32)
    state["running_var"] = np.ones(config.channels[0], np.float32)
    return state


class CnnOnIpu(Trainer):
    """The network's graph, programs and engine (training_loop.py) on ``config.tiles`` tiles."""

    def __init__(self, config: CnnConfig, train_batches: int, test_batches: int, weights=None):
        super().__init__(config.tiles, config.batch_size, config.image_shape, train_batches, test_batches,
                         config.replicas)
        self.config = c = config
        r = c.replicas
        g, b = self.graph, c.batch_size
        p1, p2 = c.conv_params(1), c.conv_params(2)
        cache = poplin.PlanningCache()

        # -- state: images, parameters, momentum buffers, batch-norm statistics ----------------
        self.x = poplin.create_input(g, p1, "images", cache=cache)
        w = {"conv1": poplin.create_weights(g, p1, "conv1/weights", cache=cache),
             "conv2": poplin.create_weights(g, p2, "conv2/weights", cache=cache),
             "fc": poplin.create_mat_mul_input_rhs(g, FLOAT, (b, c.features), (c.features, NUM_CLASSES),
                                                   "fc/weights", cache=cache)}
        for name in ("gamma", "beta", "fc_bias"):
            w[name] = g.add_variable(FLOAT, c.shapes()[name], name, mapping=popsim.VariableMappingMethod.LINEAR)
        stats = {name: g.clone(w["gamma"], name) for name in ("mean", "inv_std")}
        for name in RUNNING_STATISTICS:
            stats[name] = self.add_parameter(name, g.clone(w["gamma"], name))

        # -- forward: conv1, then the statistics (the batch's or the running ones), the rest --
        conv1 = Sequence()
        z1 = poplin.convolution(g, self.x, w["conv1"], p1, False, conv1, "conv1", cache=cache)
        batch_stats = Sequence()
        mean, inv_std = dp.batch_norm_statistics(g, z1, c.bn_eps, batch_stats, r, "bn/statistics")
        batch_stats.add(Copy(mean, stats["mean"]))
        batch_stats.add(Copy(inv_std, stats["inv_std"]))
        var = popops.map(g, 1.0 / (pe._1 * pe._1) - c.bn_eps, [inv_std], batch_stats, "bn/variance")
        m = c.bn_momentum
        popops.scaled_add_to(g, stats["running_mean"], 1 - m, mean, m, batch_stats, name="bn/runningMean")
        popops.scaled_add_to(g, stats["running_var"], 1 - m, var, m, batch_stats, name="bn/runningVar")
        running_stats = Sequence(Copy(stats["running_mean"], stats["mean"]))
        popops.map_with_output(g, pe.rsqrt(pe._1 + c.bn_eps), [stats["running_var"]], stats["inv_std"],
                               running_stats, "bn/runningInvStd")

        rest = Sequence()
        y1, z1_hat = popnn.bn.batch_normalise(g, z1, w["gamma"], w["beta"], stats["mean"], stats["inv_std"], rest,
                                              name="bn")
        a1 = popnn.non_linearity(g, RELU, y1, rest, "relu1")
        pooled1 = popnn.pool(g, c.pool_params(1), a1, rest, "pool1")
        z2 = poplin.convolution(g, pooled1, w["conv2"], p2, False, rest, "conv2", cache=cache)
        w["conv2_bias"] = poplin.create_biases(g, z2, "conv2/biases")  # on the tiles of its channels
        poplin.add_bias(g, z2, w["conv2_bias"], rest, "conv2/bias")
        for name in PARAMETERS:
            self.add_parameter(name, w[name])
        self.optimizer = dp.MomentumSgd(g, {name: w[name] for name in PARAMETERS}, c.learning_rate, c.momentum, r,
                                        c.accumulate, c.shard_optimizer)
        for name, t in self.optimizer.state.items():
            self.add_parameter(name, t)
        a2 = popnn.non_linearity(g, RELU, z2, rest, "relu2")
        pooled2 = popnn.pool(g, c.pool_params(2), a2, rest, "pool2")
        flat = pooled2.reshape((b, c.features))
        logits = poplin.mat_mul(g, flat, w["fc"], rest, "fc", cache=cache)
        popops.add_in_place(g, logits, w["fc_bias"].reshape((1, NUM_CLASSES)), rest, "fc/bias")
        probs = popnn.non_linearity(g, SOFTMAX, logits, rest, "softmax")

        # -- loss and backward: the gradients of the batch's mean loss ------------------------
        deltas = g.clone(probs, "deltas")
        loss = popnn.calc_loss(g, probs, self.labels, self.loss, deltas, deltas_scale=1.0 / b,
                               loss_type=popnn.LossType.CROSS_ENTROPY_LOSS, name="loss")
        bwd = Sequence()
        add = popops.ReduceParams(popops.Operation.ADD)
        grads = {"fc": poplin.mat_mul(g, flat.transpose(), deltas, bwd, "fc/weightDeltas", cache=cache),
                 "fc_bias": popops.reduce(g, deltas, [0], add, bwd, "fc/biasDeltas")}
        d_flat = poplin.mat_mul(g, deltas, w["fc"].transpose(), bwd, "fc/inputDeltas", cache=cache)
        d_a2 = popnn.pool_input_gradient(g, c.pool_params(2), a2, pooled2, d_flat.reshape(pooled2.shape), False, bwd,
                                         "pool2/grad")
        d_z2 = popnn.non_linearity_input_gradient(g, RELU, a2, d_a2, bwd, "relu2/grad")
        grads["conv2"] = poplin.calculate_weight_deltas(g, d_z2, pooled1, p2, bwd, "conv2/weightDeltas", cache=cache)
        grads["conv2_bias"] = popops.reduce(g, d_z2, [0, 2, 3], add, bwd, "conv2/biasDeltas")
        d_pooled1 = poplin.convolution(g, d_z2, w["conv2"], poplin.get_gradient_params(p2), True, bwd,
                                       "conv2/inputDeltas", cache=cache)
        d_a1 = popnn.pool_input_gradient(g, c.pool_params(1), a1, pooled1, d_pooled1, False, bwd, "pool1/grad")
        d_y1 = popnn.non_linearity_input_gradient(g, RELU, a1, d_a1, bwd, "relu1/grad")
        grads["gamma"], grads["beta"] = popnn.bn.batch_norm_param_gradients(g, z1_hat, d_y1, bwd,
                                                                            name="bn/paramDeltas")
        d_z1 = dp.batch_norm_gradients(g, z1_hat, d_y1, stats["inv_std"], w["gamma"], bwd, r, "bn/grad")
        grads["conv1"] = poplin.calculate_weight_deltas(g, d_z1, self.x, p1, bwd, "conv1/weightDeltas", cache=cache)

        # -- SGD with momentum: v = momentum v + mean grad; w -= learning_rate v -------------
        self.optimizer.step(grads, bwd)   # the gradients' all-reduce (or accumulation), then the update
        self.finish(Sequence(conv1, batch_stats, rest, loss, bwd), Sequence(conv1, running_stats, rest), probs,
                    self.optimizer.update, c.accumulate, self.optimizer.prologue)
        self.write(initial_state(c, weights))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=CnnConfig.batch_size)
    parser.add_argument("--learning-rate", type=float, default=CnnConfig.learning_rate)
    parser.add_argument("--tiles", type=int, default=CnnConfig.tiles, help="tiles of the modelled IPU")
    parser.add_argument("--mnist", metavar="DIR", help="read MNIST's IDX files from DIR instead of the digits")
    parser.add_argument("--seed", type=int, default=0, help="seeds the weights and the shuffling")
    parser.add_argument("--replicas", type=int, default=1, help="data-parallel replicas, one IPU each; "
                        "--batch-size is each replica's micro-batch")
    parser.add_argument("--accumulate", type=int, default=1, help="micro-batches per weight update")
    parser.add_argument("--shard-optimizer", action="store_true",
                        help="each replica keeps 1/R of the momentum buffer (replicated tensor sharding)")
    args = parser.parse_args(argv)
    if args.replicas < 1 or args.accumulate < 1:
        parser.error("--replicas and --accumulate must be at least 1")

    if popsim.dist.instance_index() > 0:  # under mpiexec, process 0 reports (poprun's --only-output-from-instance)
        sys.stdout = open(os.devnull, "w")
    started = time.perf_counter()
    data = training_data.load(args.mnist)
    config = CnnConfig(image_shape=data.train.images.shape[1:], batch_size=args.batch_size,
                       learning_rate=args.learning_rate, tiles=args.tiles, replicas=args.replicas,
                       accumulate=args.accumulate, shard_optimizer=args.shard_optimizer)
    global_batch = config.replicas * config.batch_size
    train_batches = len(data.train.labels) // global_batch // config.accumulate * config.accumulate
    if train_batches == 0:
        parser.error(f"{len(data.train.labels)} training images make no update of {config.accumulate} batches of "
                     f"{global_batch}; lower --batch-size, --replicas or --accumulate")
    test_batches = -(-len(data.test.labels) // global_batch)
    ipus = f"{config.replicas} IPUs of {config.tiles} tiles, one replica each" if config.replicas > 1 \
        else f"{config.tiles} tiles"
    print(f"Using the IPU Model ({ipus}); {data.name}: {len(data.train.labels)} training and "
          f"{len(data.test.labels)} test images of {config.image_shape[0]}x{config.image_shape[1]}")
    net = CnnOnIpu(config, train_batches, test_batches, initial_weights(config, args.seed))
    print(f"graph built and compiled in {time.perf_counter() - started:.1f} s")
    if config.shard_optimizer:
        print(dp.momentum_memory(net.graph, net.optimizer))
    fit(net, data, args.epochs, args.seed, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
