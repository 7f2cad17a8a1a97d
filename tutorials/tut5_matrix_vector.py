"""Poplar tutorial 5 (matrix-vector multiplication), ported to popsim.

One DotProductVertex per matrix row, tensors spread over the tiles with PopLibs' linear
mapping, data streamed in and out through FIFOs. The codelets,
tutorials/codelets/matrix_mul_codelets.cpp, are popsim's own (not Graphcore's file).
Run: python tutorials/tut5_matrix_vector.py ROWS COLS   (e.g. 40 50)
"""
import os
import sys

import numpy as np

import popsim
from popsim import FLOAT
from popsim.program import Copy, Execute, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))


def build_multiply_program(graph, matrix, in_vector, out_vector):
    """A compute set with one vertex per row: out[i] = dot(matrix[i], in)."""
    mul_cs = graph.add_compute_set("mulCS")
    for i in range(matrix.dim(0)):
        v = graph.add_vertex(mul_cs, "DotProductVertex", {"a": matrix[i], "b": in_vector, "out": out_vector[i]})
        graph.set_tile_mapping(v, i)
        graph.set_perf_estimate(v, 20)
    return Execute(mul_cs)


def check_result(matrix, in_vector, output, rows, cols):
    """Exact comparison with a host float32 sum taken in column order, as the vertex does."""
    products = matrix.reshape(rows, cols) * in_vector[None, :]
    expected = np.add.accumulate(products, axis=1, dtype=np.float32)[:, -1] if cols else np.zeros(rows, np.float32)
    for row in np.flatnonzero(output != expected)[:1].tolist():
        print(f"ERROR: output {row}: expected={expected[row]}, actual={output[row]}")
        return 1
    print("Multiplication result OK")
    return 0


def main(argv):
    if len(argv) != 3:
        print(f"usage: {argv[0]} numRows numCols", file=sys.stderr)
        return 1
    num_rows, num_cols = int(argv[1]), int(argv[2])
    print(f"Multiplying matrix of size {num_rows}x{num_cols} by vector of size {num_cols}")

    device = popsim.IPUModel().create_device()
    print("Creating new graph object and compiling vertex program additions")
    graph = popsim.Graph(device.target)
    graph.add_codelets(os.path.join(HERE, "codelets", "matrix_mul_codelets.cpp"))

    print("Constructing full compute graph and control program")
    matrix = graph.add_variable(FLOAT, [num_rows, num_cols], "matrix")
    in_vector = graph.add_variable(FLOAT, [num_cols], "inputVector")
    out_vector = graph.add_variable(FLOAT, [num_rows], "outputVector")
    for t in (matrix, in_vector, out_vector):
        graph.set_tile_mapping(t, graph.linear_mapping(t))

    h_input = np.arange(num_cols, dtype=np.float32)
    h_matrix = (np.arange(num_rows)[:, None] * np.arange(num_cols)[None, :]).astype(np.float32).reshape(-1)
    h_output = np.zeros(num_rows, np.float32)

    mul_prog = build_multiply_program(graph, matrix, in_vector, out_vector)
    input_vector_stream = graph.add_host_to_device_fifo("inputVector", FLOAT, num_cols)
    input_matrix_stream = graph.add_host_to_device_fifo("inputMatrix", FLOAT, num_cols * num_rows)
    out_stream = graph.add_device_to_host_fifo("out", FLOAT, num_rows)
    prog = Sequence(Copy(input_vector_stream, in_vector), Copy(input_matrix_stream, matrix), mul_prog,
                    Copy(out_vector, out_stream))

    engine = popsim.Engine(graph, prog)
    engine.load(device)
    engine.connect_stream("inputVector", h_input)
    engine.connect_stream("inputMatrix", h_matrix)
    engine.connect_stream("out", h_output)

    print("Running graph program to multiply matrix by vector")
    engine.run()
    return check_result(h_matrix, h_input, h_output, num_rows, num_cols)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
