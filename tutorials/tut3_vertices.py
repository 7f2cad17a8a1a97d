"""Poplar tutorial 3 (writing vertex code), ported to popsim. The codelet file,
tutorials/codelets/tut3_codelets.cpp, is popsim's own (written for popsim in Poplar's C++
codelet dialect, not Graphcore's file); the host C++ compiler compiles it as it is, as it
would compile Graphcore's codelet files, unmodified.

Four SumVertex vertices, one per tile, each summing a suffix of v1 into one element of
v2. Run: python tutorials/tut3_vertices.py
"""
import os

import popsim
from popsim import FLOAT
from popsim.program import Copy, Execute, PrintTensor, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    # Create the IPU model device and the graph.
    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device.target)

    # Add the codelets: a Poplar C++ file, compiled when it is added.
    graph.add_codelets(os.path.join(HERE, "codelets", "tut3_codelets.cpp"))

    # Variables: v1[i] and v2[i] live on tile i.
    v1 = graph.add_variable(FLOAT, [4], "v1")
    v2 = graph.add_variable(FLOAT, [4], "v2")
    for i in range(4):
        graph.set_tile_mapping(v1[i], i)
        graph.set_tile_mapping(v2[i], i)

    # Initialise v1 from a constant.
    prog = Sequence()
    c1 = graph.add_constant(FLOAT, [4], [1.0, 1.5, 2.0, 2.5])
    graph.set_tile_mapping(c1, 0)
    prog.add(Copy(c1, v1))

    # A compute set of four vertices: vertex i sums v1[i:] into v2[i].
    compute_set = graph.add_compute_set("computeSet")
    for i in range(4):
        vtx = graph.add_vertex(compute_set, "SumVertex")
        graph.connect(vtx["in"], v1.slice(i, 4))
        graph.connect(vtx["out"], v2[i])
        graph.set_tile_mapping(vtx, i)
        graph.set_perf_estimate(vtx, 20)

    # Run the compute set and print the result.
    prog.add(Execute(compute_set))
    prog.add(PrintTensor("v2", v2))

    engine = popsim.Engine(graph, prog)
    engine.load(device)
    print("Running program")
    engine.run(0)
    print("Program complete")


if __name__ == "__main__":
    main()
