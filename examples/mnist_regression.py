"""Softmax regression on the simulated IPU: the port of Graphcore's Poplar MNIST regression
demo (``regression-demo.cpp``) to popsim, batched.

As in the demo: an IPUModel of 4 tiles; weights W {10, pixels} and biases b {10} drawn
from N(0, 1); each step computes ``softmax(x W^T + b)`` (poplin.mat_mul, popops.add,
popnn.non_linearity SOFTMAX), its cross-entropy loss, deltas and correct count
(popnn.calc_loss) and descends (popops.scaled_add_to), all on the device. The demo feeds
one image per step; here a step takes a batch, and a whole epoch is one engine run (a
Repeat over the batches, each read from host FIFOs), printing loss and accuracy per epoch.

Run: python examples/mnist_regression.py [epochs=50] [percent of images=100] [--mnist DIR]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from popsim import FLOAT, poplin, popnn, popops
from popsim.program import Sequence

import training_data
from training_loop import Trainer, fit

NUM_CLASSES = 10
PARAMETERS = ("weights", "biases")
TILES = 4  # the demo's IPUModel


def initial_weights(pixels: int, seed: int = 0) -> dict:
    """The demo's N(0, 1) weights and biases (float32)."""
    rng = np.random.default_rng(seed)
    return {"weights": rng.standard_normal((NUM_CLASSES, pixels)).astype(np.float32),
            "biases": rng.standard_normal(NUM_CLASSES).astype(np.float32)}


class RegressionOnIpu(Trainer):
    """Softmax regression's graph, programs and engine (training_loop.py)."""

    def __init__(self, image_shape, batch_size: int, learning_rate: float, train_batches: int, test_batches: int,
                 weights: dict):
        super().__init__(TILES, batch_size, image_shape, train_batches, test_batches)
        g, b = self.graph, batch_size
        pixels = int(np.prod(image_shape))
        self.x = poplin.create_mat_mul_input_lhs(g, FLOAT, (b, pixels), (pixels, NUM_CLASSES), "x")
        w = self.add_parameter("weights", poplin.create_mat_mul_input_rhs(
            g, FLOAT, (b, pixels), (pixels, NUM_CLASSES), "weights").transpose())   # {10, pixels}, as the demo's
        bias = self.add_parameter("biases", g.add_variable(FLOAT, (NUM_CLASSES,), "biases"))
        g.set_tile_mapping(bias, 0)

        forward = Sequence()
        y = poplin.mat_mul(g, self.x, w.transpose(), forward, "x.W^T")
        popops.add_in_place(g, y, bias.reshape((1, NUM_CLASSES)), forward, "+b")
        probs = popnn.non_linearity(g, popnn.NonLinearityType.SOFTMAX, y, forward, "softmax")

        train = Sequence(forward)
        deltas = g.clone(probs, "deltas")
        train.add(popnn.calc_loss(g, probs, self.labels, self.loss, deltas, deltas_scale=1.0 / b,
                                  loss_type=popnn.LossType.CROSS_ENTROPY_LOSS, name="loss"))
        bias_grad = popops.reduce(g, deltas, [0], popops.ReduceParams(popops.Operation.ADD), train, "biasDeltas")
        popops.scaled_add_to(g, bias, bias_grad, -learning_rate, train, name="updateBiases")
        weights_grad = poplin.mat_mul(g, deltas.transpose(), self.x, train, "weightDeltas")
        popops.scaled_add_to(g, w, weights_grad, -learning_rate, train, name="updateWeights")

        self.finish(train, Sequence(forward), probs)
        self.write(weights)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("epochs", type=int, nargs="?", default=50)
    parser.add_argument("percent", type=float, nargs="?", default=100.0,
                        help="percent of the training images to use (the demo's second argument)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.5)
    parser.add_argument("--mnist", metavar="DIR", help="read MNIST's IDX files from DIR instead of the digits")
    parser.add_argument("--seed", type=int, default=0, help="seeds the weights and the shuffling")
    parser.add_argument("-IPU", dest="hardware", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hardware:
        parser.error("-IPU asks for IPU hardware, which popsim does not drive: it models one (drop -IPU)")

    started = time.perf_counter()
    data = training_data.load(args.mnist, args.percent)
    image_shape = data.train.images.shape[1:]
    batch_size = min(args.batch_size, len(data.train.labels))
    train_batches = len(data.train.labels) // batch_size
    test_batches = -(-len(data.test.labels) // batch_size)
    print("Using the IPU Model")
    print(f"{data.name}: {len(data.train.labels)} training and {len(data.test.labels)} test images of "
          f"{image_shape[0]}x{image_shape[1]}, batches of {batch_size}")
    net = RegressionOnIpu(image_shape, batch_size, args.learning_rate, train_batches, test_batches,
                          initial_weights(int(np.prod(image_shape)), args.seed))
    fit(net, data, args.epochs, args.seed, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
