"""Benchmark: data movement of 64 MiB FLOAT tensors (4 MiB with --quick), vs numpy.

Two measurements on an ipu2 IPUModel, each against np.copyto of the same bytes between
two preallocated float32 arrays (target for both, issue 7: ratio <= 1.0):
- Copy(a, b): tensor to tensor, both mapped LINEAR over all 1472 tiles;
- Copy(stream, a): a host-to-device FIFO connected to a host array with connect_stream.

Run: python bench/bench_copies.py [--quick]
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

import popsim
from popsim import FLOAT
from popsim.program import Copy

TARGET_RATIO = 1.0


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    nbytes = (4 if args.quick else 64) * C.MIB
    repeat = args.repeat or (10 if args.quick else 20)
    warmup = args.warmup if args.warmup is not None else 2
    n = nbytes // FLOAT.size
    mib = nbytes // C.MIB

    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    a = graph.add_variable(FLOAT, [n], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    b = graph.add_variable(FLOAT, [n], "b", mapping=popsim.VariableMappingMethod.LINEAR)
    stream = graph.add_host_to_device_fifo("in", FLOAT, n)
    graph.create_host_read("a-read", a)
    graph.create_host_read("b-read", b)
    engine = popsim.Engine(graph, [Copy(a, b), Copy(stream, a)])
    engine.load(device)
    rng = np.random.default_rng(0)
    host = rng.random(n, dtype=np.float32)
    engine.connect_stream("in", host)

    # Correctness (untimed): the stream lands in a, the copy moves a into b.
    engine.run(1)
    engine.run(0)
    if not (np.array_equal(engine.read_tensor("a-read"), host) and np.array_equal(engine.read_tensor("b-read"), host)):
        raise RuntimeError("popsim moved the wrong data: a or b differs from the host buffer after the runs")

    num_tiles = device.target.num_tiles
    tiles = sum(1 for iv in graph.get_tile_mapping(a) if iv)
    src = rng.random(n, dtype=np.float32)
    dst = np.empty_like(src)
    C.collect()
    best = C.best_of_interleaved({"copy": lambda: engine.run(0), "stream": lambda: engine.run(1),
                                  "numpy": lambda: np.copyto(dst, src)}, repeat=repeat, warmup=warmup)
    results = []
    for key, metric in (("copy", f"Copy {mib} MiB FLOAT tensor->tensor"), ("stream", f"stream {mib} MiB host->tensor")):
        ratio = best[key] / best["numpy"]
        res = C.Result(bench=key, metric=metric, unit="s", value=best[key], baseline=best["numpy"],
                       baseline_label="np.copyto", ratio=ratio, target=f"ratio <= {TARGET_RATIO}",
                       passed=ratio <= TARGET_RATIO)
        if tiles != num_tiles:
            res.notes.append(f"LINEAR mapping uses {tiles} of {num_tiles} tiles at this size (PopLibs' "
                             "linear-mapping rounding to whole grains leaves the last tiles empty)")
        results.append(res)
    details = (f"{n:,} elements ({mib} MiB) per tensor, LINEAR over {tiles} tiles of {num_tiles} (ipu2 IPUModel); "
               f"best of {repeat} after {warmup} warm-up; copy {nbytes / best['copy'] / 1e9:.2f} GB/s, stream "
               f"{nbytes / best['stream'] / 1e9:.2f} GB/s, numpy {nbytes / best['numpy'] / 1e9:.2f} GB/s\n"
               f"{C.environment()}")
    C.report("bench_copies: tensor -> tensor and host -> tensor copies", results, args, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
