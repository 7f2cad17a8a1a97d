"""Benchmark: poplin.mat_mul on an ipu2 IPUModel (1472 tiles), vs numpy on the same data.

Rows (targets from issue 9; 1024x1024x1024 FLOAT, 256 with --quick):
1. poplin.mat_mul of A [n, n] @ B [n, n], operands from create_mat_mul_input_lhs/_rhs
   (plan-consistent layouts), Engine.run, vs numpy a @ b in the same run. Target <= 2x.
2. Building it: graph (operands, mat_mul, host streams) + Engine. Target < 2 s.
3. 3x3 convolution, 64 -> 64 channels, 56x56 field (padding 1), batch 8, FLOAT: poplin.convolution
   (operands from create_input/create_weights), Engine.run, vs a numpy im2col + matmul
   reference in the same run. Target <= 3x. (--quick: batch 1, 16x16.)
The notes give the plan (tiles used, splits) and the model's cycles.

Run: python bench/bench_poplin.py [--quick]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

import popsim
from popsim import FLOAT, poplin
from popsim.program import Sequence


def build(n: int):
    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    poplin.add_codelets(graph)  # compiled once per machine (cached): not part of the build time
    start = time.perf_counter()
    graph = popsim.Graph(device.target)
    a = poplin.create_mat_mul_input_lhs(graph, FLOAT, (n, n), (n, n), "a")
    b = poplin.create_mat_mul_input_rhs(graph, FLOAT, (n, n), (n, n), "b")
    prog = Sequence()
    c = poplin.mat_mul(graph, a, b, prog, "mm")
    graph.create_host_write("a", a)
    graph.create_host_write("b", b)
    graph.create_host_read("c", c)
    engine = popsim.Engine(graph, prog)
    built = time.perf_counter() - start
    engine.load(device)
    return engine, built


def mat_mul_rows(n: int, repeat: int) -> list:
    engine, built = build(n)
    rng = np.random.default_rng(0)
    ha = rng.standard_normal((n, n), dtype=np.float32)
    hb = rng.standard_normal((n, n), dtype=np.float32)
    engine.write_tensor("a", ha)
    engine.write_tensor("b", hb)
    engine.run(0)
    expected = ha.astype(np.float64) @ hb.astype(np.float64)
    if not np.allclose(engine.read_tensor("c"), expected, rtol=1e-4, atol=1e-3 * np.sqrt(n)):
        raise RuntimeError("poplin.mat_mul computed the wrong product")
    # Not interleaved: numpy's BLAS threads spin for a while after each product, and the
    # engine's threads run slower on the same 2 cores while they do.
    best = {"popsim": C.best_of(lambda: engine.run(0), repeat), "numpy": C.best_of(lambda: ha @ hb, repeat)}
    ratio = best["popsim"] / best["numpy"]
    cycles = engine.get_report().to_dict().get("execution", {}).get("total_cycles")
    run = C.Result(bench="poplin", metric=f"poplin.mat_mul [{n},{n}]x[{n},{n}] FLOAT, run", unit="s",
                   value=best["popsim"], baseline=best["numpy"], baseline_label="numpy a @ b", ratio=ratio,
                   target="ratio <= 2", passed=ratio <= 2, notes=[f"model cycles: {cycles}"])
    build_row = C.Result(bench="poplin", metric=f"poplin.mat_mul [{n},{n}]x[{n},{n}] FLOAT, graph + Engine build",
                         unit="s", value=built, target="< 2 s", passed=built < 2.0)
    return [run, build_row]


def im2col_conv(x, w):
    """The numpy reference: a 3x3, padding 1, stride 1 convolution as im2col + one matmul."""
    b, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.empty((b, h, wd, c, 3, 3), dtype=x.dtype)
    for ky in range(3):
        for kx in range(3):
            cols[..., ky, kx] = xp[:, :, ky:ky + h, kx:kx + wd].transpose(0, 2, 3, 1)
    out = cols.reshape(b * h * wd, c * 9) @ w.reshape(w.shape[0], c * 9).T
    return out.reshape(b, h, wd, -1).transpose(0, 3, 1, 2)


def conv_rows(batch: int, field: int, repeat: int) -> list:
    device = popsim.IPUModel("ipu2").create_device()
    params = poplin.ConvParams(FLOAT, batch, (field, field), (3, 3), 64, 64, 1, padding_lower=(1, 1),
                               padding_upper=(1, 1))
    graph = popsim.Graph(device.target)
    start = time.perf_counter()
    x = poplin.create_input(graph, params, "x")
    w = poplin.create_weights(graph, params, "w")
    prog = Sequence()
    y = poplin.convolution(graph, x, w, params, False, prog, "conv")
    graph.create_host_write("x", x)
    graph.create_host_write("w", w)
    graph.create_host_read("y", y)
    engine = popsim.Engine(graph, prog)
    built = time.perf_counter() - start
    engine.load(device)
    rng = np.random.default_rng(0)
    hx = rng.standard_normal(params.input_shape(), dtype=np.float32)
    hw = rng.standard_normal(params.weights_shape(), dtype=np.float32)[0]
    engine.write_tensor("x", hx)
    engine.write_tensor("w", hw[None])
    engine.run(0)
    if not np.allclose(engine.read_tensor("y"), im2col_conv(hx, hw), rtol=1e-4, atol=1e-3):
        raise RuntimeError("poplin.convolution computed the wrong result")
    best = C.best_of_interleaved({"popsim": lambda: engine.run(0), "numpy": lambda: im2col_conv(hx, hw)},
                                 repeat=repeat)
    ratio = best["popsim"] / best["numpy"]
    cycles = engine.get_report().to_dict().get("execution", {}).get("total_cycles")
    plan = poplin.get_plan(device.target, params)
    return [C.Result(bench="poplin", metric=f"poplin.convolution 3x3, 64 -> 64 channels, {field}x{field} field, batch "
                                            f"{batch}, FLOAT, run", unit="s", value=best["popsim"],
                     baseline=best["numpy"], baseline_label="numpy im2col + matmul", ratio=ratio,
                     target="ratio <= 3", passed=ratio <= 3,
                     notes=[f"model cycles: {cycles}", f"tiles used: {plan.tiles_used}",
                            f"graph + Engine build: {built:.2f} s"])]


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    n = 256 if args.quick else 1024
    repeat = args.repeat or (3 if args.quick else 5)
    results = mat_mul_rows(n, repeat)
    results += conv_rows(1, 16, repeat) if args.quick else conv_rows(8, 56, repeat)
    C.report("bench_poplin: poplin against numpy", results, args, C.environment())
    return 0


if __name__ == "__main__":
    sys.exit(main())
