"""Benchmark: data-parallel training of examples/cnn_training.py's CNN, weak scaling.

R = 1, 2, 4, 8 replicas (quick: 1, 2, 4), one IPU of 64 tiles each (an ipu2 IPUModel of R
IPUs), every replica training on its own micro-batch of 32 8x8 digits (the global batch
grows with R), gradients all-reduced with MEAN and batch norm synchronised
(examples/data_parallel.py). Each configuration trains a few steps in one engine run; from
its report:

- modelled time per step (cycles / clock) and samples/s = R x 32 / that time;
- efficiency = samples/s(R) / (R x samples/s(1)): 1 would be perfect weak scaling (R = 1
  has no collectives at all);
- the share of the step spent in the collectives: the gradients' all-reduce, and the
  synchronised batch norm's two small all-reduces (each step's modelled cycles, by name);
- the same with --shard-optimizer (reduce-scatter of the gradients, 1/R of the update,
  all-gather of the weights) and the momentum bytes on the fullest tile.

Rows are informational (no targets); the host time per step is shown for reference (R
replicas simulate R times the work on the same CPUs).

Run: python bench/bench_data_parallel.py [--quick]   (pip install ".[examples]" for the digits)
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))
import _common as C  # noqa: E402

import training_data  # noqa: E402
from cnn_training import CnnConfig, CnnOnIpu, initial_weights  # noqa: E402
from data_parallel import tile_bytes  # noqa: E402

MICRO_BATCH, TILES = 32, 64
GRADIENT_COLLECTIVES = ("gradients/allReduce", "gradients/reduceScatter", "weights/allGather")  # bucket copies too
BN_COLLECTIVES = ("bn/statistics/meanAndPower/allReduce", "bn/grad/deltas/allReduce")


def measure(data, replicas: int, shard: bool, steps: int) -> dict:
    """One configuration: built, trained ``steps`` steps once to warm up, then again for the figures."""
    config = CnnConfig(batch_size=MICRO_BATCH, tiles=TILES, replicas=replicas, shard_optimizer=shard)
    images, labels = training_data.epoch_batches(data.train, replicas * MICRO_BATCH, np.random.default_rng(0))
    images, labels = np.resize(images, (steps,) + images.shape[1:]), np.resize(labels, (steps,) + labels.shape[1:])
    net = CnnOnIpu(config, steps, 1, initial_weights(config))
    net.train_epoch(images, labels)
    net.engine.reset_execution_profile()
    t0 = time.perf_counter()
    net.train_epoch(images, labels)
    host = (time.perf_counter() - t0) / steps
    execution = net.engine.get_report().execution

    def cycles_of(names):
        return sum(s.cycles for s in execution.steps if any(n in s.name for n in names))
    cycles = execution.total_cycles / steps
    seconds = cycles / net.device.target.tile_clock_frequency
    return {"replicas": replicas, "shard": shard, "cycles": cycles, "seconds": seconds,
            "samples": replicas * MICRO_BATCH / seconds, "host": host,
            "gradients": cycles_of(GRADIENT_COLLECTIVES) / steps / cycles,
            "bn": cycles_of(BN_COLLECTIVES) / steps / cycles,
            "momentum": int(tile_bytes(net.graph, net.optimizer.state.values()).max())}


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    replica_counts = (1, 2, 4) if args.quick else (1, 2, 4, 8)
    steps = args.repeat or (2 if args.quick else 4)
    data = training_data.load_digits()
    start = time.perf_counter()
    runs = [measure(data, r, False, steps) for r in replica_counts]
    runs += [measure(data, r, True, steps) for r in replica_counts if r > 1]
    base = runs[0]["samples"]

    rows, results = [], []
    for run in runs:
        r = run["replicas"]
        efficiency = run["samples"] / (r * base)
        label = f"R = {r}{', sharded' if run['shard'] else ''}"
        rows.append([label, f"{r * MICRO_BATCH}", f"{run['cycles']:,.0f}", f"{run['seconds'] * 1e6:.1f}",
                     f"{run['samples']:,.0f}", f"{efficiency:.2f}", f"{100 * run['gradients']:.1f}%",
                     f"{100 * run['bn']:.1f}%", f"{run['momentum']:,}", f"{run['host'] * 1e3:.1f}"])
        results.append(C.Result(bench="data_parallel", metric=f"modelled samples/s, {label} (micro-batch "
                                f"{MICRO_BATCH})", unit="samples/s", value=run["samples"],
                                notes=[f"{label}: efficiency {efficiency:.2f}, gradient collectives "
                                       f"{100 * run['gradients']:.1f}% of the step, batch-norm sync "
                                       f"{100 * run['bn']:.1f}%"]))
    table = C.table(rows, ["replicas", "global batch", "cycles/step", "us/step", "samples/s", "efficiency",
                           "gradient collectives", "BN sync", "momentum B/tile (max)", "host ms/step"])
    details = (f"{C.environment()}\nweak scaling: micro-batch {MICRO_BATCH} per replica, one IPU of {TILES} tiles "
               f"per replica, {steps} steps per run; modelled figures from the report "
               f"({time.perf_counter() - start:.1f} s in all)\n{table}\n")
    C.report("bench_data_parallel: data-parallel CNN training, weak scaling", results, args, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
