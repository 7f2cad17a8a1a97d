"""Benchmark: host-to-device stream Copy into a FLOAT tensor, vs numpy.

A host-to-device FIFO "in" of 64 MiB of FLOAT (4 MiB with --quick) connected to a host
array with engine.connect_stream; program Copy(stream, a) with ``a`` mapped LINEAR over
all 1472 tiles of an ipu2 IPUModel. Measures engine.run(0) against np.copyto of the same
bytes between two preallocated float32 arrays. Target: ratio <= 1.5.

Run: python bench/bench_stream.py [--quick]
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

import popsim  # noqa: E402
from popsim import FLOAT  # noqa: E402
from popsim.program import Copy  # noqa: E402

TARGET_RATIO = 1.5


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    nbytes = (4 if args.quick else 64) * C.MIB
    repeat = args.repeat or (10 if args.quick else 20)
    warmup = args.warmup if args.warmup is not None else 2
    n = nbytes // FLOAT.size

    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    a = graph.add_variable(FLOAT, [n], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    stream = graph.add_host_to_device_fifo("in", FLOAT, n)
    graph.create_host_read("a-read", a)
    engine = popsim.Engine(graph, [Copy(stream, a)])
    engine.load(device)

    rng = np.random.default_rng(1)
    host = rng.random(n, dtype=np.float32)
    engine.connect_stream("in", host)

    # Correctness check (untimed): the stream must land in the tensor.
    engine.run(0)
    if not np.array_equal(engine.read_tensor("a-read"), host):
        raise RuntimeError("popsim Copy(stream, a) produced wrong data: a != host buffer after engine.run")

    num_tiles = device.target.num_tiles
    tiles = sum(1 for iv in graph.get_tile_mapping(a) if iv)

    dst = np.empty_like(host)
    C.collect()
    best = C.best_of_interleaved({"popsim": lambda: engine.run(0), "numpy": lambda: np.copyto(dst, host)},
                                 repeat=repeat, warmup=warmup)
    ratio = best["popsim"] / best["numpy"]
    mib = nbytes // C.MIB
    res = C.Result(bench="stream", metric=f"stream {mib} MiB host->tensor", unit="s",
                   value=best["popsim"], baseline=best["numpy"], baseline_label="np.copyto", ratio=ratio,
                   target=f"ratio <= {TARGET_RATIO}", passed=ratio <= TARGET_RATIO)
    if tiles != num_tiles:
        res.notes.append(f"LINEAR mapping uses {tiles} of {num_tiles} tiles at this size (PopLibs' linear-mapping "
                         "rounding to whole grains leaves the last tiles empty)")
    details = (f"{n:,} elements ({mib} MiB), one transfer per run, tensor LINEAR over {tiles} tiles of "
               f"{num_tiles} (ipu2 IPUModel); best of {repeat} after {warmup} warm-up; popsim "
               f"{nbytes / best['popsim'] / 1e9:.2f} GB/s, numpy {nbytes / best['numpy'] / 1e9:.2f} GB/s\n"
               f"{C.environment()}")
    C.report("bench_stream: host -> device stream Copy", [res], args, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
