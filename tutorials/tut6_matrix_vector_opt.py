"""Poplar tutorial 6 (matrix-vector multiplication, optimised), ported to popsim.

The columns are split into segments: a first compute set computes a partial dot product
per (row, segment) on tiles spread evenly, a second one reduces each row's partials. A
host-side estimator (the tutorial's own cost formula) picks the number of segments. The
codelets, tutorials/codelets/matrix_mul_codelets.cpp, are popsim's own (not Graphcore's file).
Run: python tutorials/tut6_matrix_vector_opt.py ROWS COLS [--device model-ipu1|model-ipu2]
"""
import argparse
import os
import sys

import numpy as np

import popsim
from popsim import FLOAT
from popsim.program import Copy, Execute, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))


def ceil_div(a, b):
    return (a + b - 1) // b


def estimate_cycles(rows, cols, split, target):
    """The tutorial's model of one multiplication with ``split`` column segments."""
    tiles, workers, exchange = target.num_tiles, target.num_worker_contexts, target.exchange_bytes_per_cycle
    max_vertices_per_tile = max(ceil_div(rows * split, tiles), 1)
    cycles_per_vertex = 5 + (ceil_div(cols, split) + 1) // 2
    compute = ceil_div(max_vertices_per_tile, workers) * workers * cycles_per_vertex
    exchange_cost = ceil_div(max_vertices_per_tile, rows) * ceil_div(cols, split) * 4 // exchange
    max_reduce_vertices_per_tile = max(ceil_div(rows, tiles), 1)
    cycles_per_reduce_vertex = 5 + (split + 1) // 2
    reduce_compute = ceil_div(max_reduce_vertices_per_tile, workers) * workers * cycles_per_reduce_vertex
    reduce_exchange = max_reduce_vertices_per_tile * split * 4 // exchange
    total = compute + exchange_cost + reduce_exchange + reduce_compute
    return total, (f"colsAxisSplit={split}, total cost={total} (compute cost={compute}, exchange cost={exchange_cost}, "
                   f"reduce exchange cost={reduce_exchange}, reduce compute cost={reduce_compute})")


def calc_optimal_col_axis_split(rows, cols, target):
    best, best_line, worst = None, "", 0
    for split in range(1, cols):
        cost, line = estimate_cycles(rows, cols, split, target)
        worst = max(worst, cost)
        if best is None or cost < best[0]:
            best, best_line = (cost, split), line
    print("Best split chosen:")
    print(best_line)
    print(f"Worst cost seen: {worst}")
    return best[1] if best else 1


def build_multiply_program(graph, matrix, in_vector, out_vector):
    target = graph.target
    rows, cols = matrix.dim(0), matrix.dim(1)
    tiles = target.num_tiles
    split = calc_optimal_col_axis_split(rows, cols, target)

    partials = graph.add_variable(FLOAT, [rows, split], "partials")
    for i in range(cols):
        graph.set_tile_mapping(in_vector[i], i * tiles // cols)

    mul_cs = graph.add_compute_set("mulCS")
    for i in range(split):
        begin, end = i * cols // split, (i + 1) * cols // split
        if begin == end:
            continue
        for row in range(rows):
            v = graph.add_vertex(mul_cs, "DotProductVertex", {
                "a": matrix[row].slice(begin, end), "b": in_vector.slice(begin, end), "out": partials[row][i]})
            tile = (i * rows + row) * tiles // (split * rows)
            graph.set_tile_mapping(v, tile)
            graph.set_tile_mapping(matrix[row].slice(begin, end), tile)
            graph.set_tile_mapping(partials[row][i], tile)
            graph.set_perf_estimate(v, 5 + (end - begin + 1) // 2)

    reduce_cs = graph.add_compute_set("reduceCS")
    for row in range(rows):
        v = graph.add_vertex(reduce_cs, "ReduceVertex", {"in": partials[row], "out": out_vector[row]})
        tile = row * tiles // rows
        graph.set_tile_mapping(v, tile)
        graph.set_tile_mapping(out_vector[row], tile)
        graph.set_perf_estimate(v, 5 + (partials[row].num_elements() + 1) // 2)
    return Sequence(Execute(mul_cs), Execute(reduce_cs))


def check_result(matrix, in_vector, output, rows, cols):
    expected = matrix.reshape(rows, cols).astype(np.float64) @ in_vector.astype(np.float64)
    error = np.abs(output - expected) / np.maximum(np.abs(expected), 1e-30)
    bad = np.flatnonzero(error > 1e-5)
    if bad.size:
        row = int(bad[0])
        print(f"ERROR: output {row}: expected={expected[row]}, actual={output[row]}, relative error={error[row]}")
        return 1
    print("Multiplication result OK")
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description="Matrix-vector multiplication, optimised (Poplar tutorial 6)")
    parser.add_argument("rows", type=int)
    parser.add_argument("cols", type=int)
    parser.add_argument("--device", choices=["model-ipu1", "model-ipu2"], default="model-ipu2")
    args = parser.parse_args(argv[1:])
    rows, cols = args.rows, args.cols
    print(f"Device {args.device}")
    print(f"Multiplying matrix of size {rows}x{cols} by vector of size {cols}")
    print("Constructing compute graph and control program")

    model = popsim.IPUModel(args.device.split("-")[1])
    model.min_ipu_sync_delay = 0
    model.relative_sync_delay = popsim.RelativeSyncDelayType.NO_DELAY
    device = model.create_device()
    graph = popsim.Graph(device)
    graph.add_codelets(os.path.join(HERE, "codelets", "matrix_mul_codelets.cpp"))

    matrix = graph.add_variable(FLOAT, [rows, cols], "matrix")
    in_vector = graph.add_variable(FLOAT, [cols], "inputVector")
    out_vector = graph.add_variable(FLOAT, [rows], "outputVector")
    mul_prog = build_multiply_program(graph, matrix, in_vector, out_vector)

    input_vector_stream = graph.add_host_to_device_fifo("inputVector", FLOAT, cols)
    input_matrix_stream = graph.add_host_to_device_fifo("inputMatrix", FLOAT, cols * rows)
    out_stream = graph.add_device_to_host_fifo("out", FLOAT, rows)
    prog = Sequence(Copy(input_vector_stream, in_vector), Copy(input_matrix_stream, matrix), mul_prog,
                    Copy(out_vector, out_stream))

    engine = popsim.Engine(graph, prog, {"autoReport.all": "true"})
    engine.load(device)
    rng = np.random.default_rng(42)
    h_input = rng.random(cols, dtype=np.float32)
    h_matrix = rng.random(rows * cols, dtype=np.float32)
    h_output = np.zeros(rows, np.float32)
    engine.connect_stream("inputVector", h_input)
    engine.connect_stream("inputMatrix", h_matrix)
    engine.connect_stream("out", h_output)

    print("Running graph program to multiply matrix by vector")
    engine.run()
    status = check_result(h_matrix, h_input, h_output, rows, cols)
    engine.print_profile_summary(options={"showExecutionSteps": "true"})
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
