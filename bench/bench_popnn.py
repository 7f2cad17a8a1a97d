"""Benchmark: training the examples' networks on the simulated IPU, vs the same training
steps in numpy (float32) on the host, on scikit-learn's digits.

Rows (targets from issue 10):
1. One training step of examples/cnn_training.py's CNN (batch 32, 8x8 digits, IPUModel of
   64 tiles): host time per step of a whole-epoch engine run (forward, backward and
   momentum update on the device) vs examples/numpy_networks.py's NumpyCnn step on the
   same batches. Target <= 5x. Notes: the modelled IPU time per step.
2. One step of examples/mnist_regression.py's softmax regression, likewise (no target).
3. The whole digits CNN training as README runs it (python examples/cnn_training.py, 10
   epochs; 2 with --quick): wall time of the process, graph building and codelet
   compilation (warm cache) included. Target < 60 s.

Run: python bench/bench_popnn.py [--quick]   (pip install ".[examples]" for the digits)
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, os.pardir, "examples")
sys.path.insert(0, HERE)
sys.path.insert(0, EXAMPLES)
import _common as C  # noqa: E402

import training_data  # noqa: E402
from cnn_training import CnnConfig, CnnOnIpu, initial_weights  # noqa: E402
from mnist_regression import RegressionOnIpu  # noqa: E402
from mnist_regression import initial_weights as regression_weights  # noqa: E402
from numpy_networks import NumpyCnn, NumpyRegression  # noqa: E402


def _step_row(net, twin_step, images, labels, repeat: int, metric: str, target: float = None) -> C.Result:
    """Host seconds per step of a whole-epoch run against numpy's step over the same batches."""
    steps = len(labels)
    net.train_epoch(images, labels)
    net.modelled_cycles()
    best = C.best_of_interleaved({
        "popsim": lambda: net.train_epoch(images, labels),
        "numpy": lambda: [twin_step(x, y) for x, y in zip(images, labels)]}, repeat=repeat, warmup=0)
    cycles = net.modelled_cycles() / (repeat * steps)
    per_step = {k: v / steps for k, v in best.items()}
    ratio = per_step["popsim"] / per_step["numpy"]
    modelled = cycles / net.device.target.tile_clock_frequency
    return C.Result(bench="popnn", metric=metric, unit="s", value=per_step["popsim"], baseline=per_step["numpy"],
                    baseline_label="numpy float32 step", ratio=ratio,
                    target="" if target is None else f"ratio <= {target:g}",
                    passed=None if target is None else ratio <= target,
                    notes=[f"{metric}: modelled IPU {cycles:,.0f} cycles = {modelled * 1e6:.1f} us per step "
                           f"({net.batch_size / modelled:,.0f} samples/s); {steps} steps per epoch run"])


def cnn_row(data, repeat: int) -> C.Result:
    config = CnnConfig()
    images, labels = training_data.epoch_batches(data.train, config.batch_size, np.random.default_rng(0))
    weights = initial_weights(config)
    start = time.perf_counter()
    net = CnnOnIpu(config, len(labels), 1, weights)
    built = time.perf_counter() - start
    twin = NumpyCnn(weights, config.learning_rate, config.momentum, config.bn_eps, config.bn_momentum, np.float32)
    row = _step_row(net, twin.step, images, labels, repeat, "CNN training step, batch 32 (64 tiles)", 5.0)
    row.notes.append(f"CNN graph + Engine build: {built:.2f} s")
    return row


def regression_row(data, repeat: int) -> C.Result:
    batch, lr = 32, 0.5
    images, labels = training_data.epoch_batches(data.train, batch, np.random.default_rng(0))
    weights = regression_weights(64)
    net = RegressionOnIpu((8, 8), batch, lr, len(labels), 1, weights)
    twin = NumpyRegression(weights, lr, np.float32)
    return _step_row(net, twin.step, images, labels, repeat, "softmax regression step, batch 32 (4 tiles)")


def whole_training_row(epochs: int) -> C.Result:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "cnn_training.py"), "--epochs", str(epochs)],
                         check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    accuracy = out.split("test accuracy: ")[1].split("\n")[0]
    return C.Result(bench="popnn", metric=f"whole digits CNN training, {epochs} epochs", unit="s", value=wall,
                    target="< 60 s", passed=wall < 60, notes=[f"cnn_training.py --epochs {epochs}: test accuracy "
                                                              f"{accuracy}"])


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    repeat = args.repeat or (2 if args.quick else 5)
    data = training_data.load_digits()
    results = [cnn_row(data, repeat), regression_row(data, repeat), whole_training_row(2 if args.quick else 10)]
    C.report("bench_popnn: training on the simulated IPU against numpy", results, args, C.environment())
    return 0


if __name__ == "__main__":
    sys.exit(main())
