"""Benchmark: on-device Copy of a FLOAT tensor spread over every tile, vs numpy.

Two FLOAT variables of 64 MiB (4 MiB with --quick), each mapped LINEAR over all 1472
tiles of an ipu2 IPUModel; program Copy(a, b). Measures engine.run(0) against
np.copyto between two preallocated float32 arrays of the same size. Target: ratio <= 1.5.

Run: python bench/bench_copy.py [--quick]
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
    b = graph.add_variable(FLOAT, [n], "b", mapping=popsim.VariableMappingMethod.LINEAR)
    graph.create_host_write("a-write", a)
    graph.create_host_read("b-read", b)
    engine = popsim.Engine(graph, [Copy(a, b)])
    engine.load(device)

    num_tiles = device.target.num_tiles
    tiles_a = sum(1 for iv in graph.get_tile_mapping(a) if iv)
    tiles_b = sum(1 for iv in graph.get_tile_mapping(b) if iv)

    # Correctness check (untimed): the copy must really move the data.
    rng = np.random.default_rng(0)
    data = rng.random(n, dtype=np.float32)
    engine.write_tensor("a-write", data)
    engine.run(0)
    if not np.array_equal(engine.read_tensor("b-read"), data):
        raise RuntimeError("popsim Copy(a, b) produced wrong data: b != a after engine.run")

    # numpy baseline: the same number of bytes between two preallocated arrays.
    src = rng.random(n, dtype=np.float32)
    dst = np.empty_like(src)

    C.collect()
    best = C.best_of_interleaved({"popsim": lambda: engine.run(0), "numpy": lambda: np.copyto(dst, src)},
                                 repeat=repeat, warmup=warmup)
    ratio = best["popsim"] / best["numpy"]
    mib = nbytes // C.MIB
    res = C.Result(bench="copy", metric=f"Copy {mib} MiB FLOAT tensor->tensor", unit="s",
                   value=best["popsim"], baseline=best["numpy"], baseline_label="np.copyto", ratio=ratio,
                   target=f"ratio <= {TARGET_RATIO}", passed=ratio <= TARGET_RATIO)
    if tiles_a != num_tiles or tiles_b != num_tiles:
        res.notes.append(f"LINEAR mapping uses {tiles_a} (a) / {tiles_b} (b) of {num_tiles} tiles at this size "
                         "(PopLibs' linear-mapping rounding to whole grains leaves the last tiles empty)")
    gbps = nbytes / best["popsim"] / 1e9
    details = (f"{n:,} elements ({mib} MiB) per tensor, LINEAR over {tiles_a} tiles of {num_tiles} "
               f"(ipu2 IPUModel); best of {repeat} after {warmup} warm-up; popsim {gbps:.2f} GB/s, "
               f"numpy {nbytes / best['numpy'] / 1e9:.2f} GB/s\n{C.environment()}")
    C.report("bench_copy: tensor -> tensor Copy", [res], args, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
