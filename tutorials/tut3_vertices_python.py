"""Poplar tutorial 3 (writing vertex code) with the vertex written in Python.

The same program as tut3_vertices.py; SumVertex is a popsim.Vertex subclass that popsim
translates to C and compiles. Set POPSIM_CODELET_MODE=interpreted to run it as plain
Python instead (print() and breakpoint() then work inside compute).
Run: python tutorials/tut3_vertices_python.py
"""
import popsim
from popsim import FLOAT, Input, Output, Vector
from popsim.program import Copy, Execute, PrintTensor, Sequence


class SumVertex(popsim.Vertex):
    """Sums its input vector into its output scalar."""

    in_: Input[Vector[float]]  # the trailing underscore is dropped: the field is "in"
    out: Output[float]

    def compute(self):
        total = 0.0
        for x in self.in_:
            total += x
        self.out = total
        return True


def main():
    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device.target)
    graph.add_codelets(SumVertex)

    v1 = graph.add_variable(FLOAT, [4], "v1")
    v2 = graph.add_variable(FLOAT, [4], "v2")
    for i in range(4):
        graph.set_tile_mapping(v1[i], i)
        graph.set_tile_mapping(v2[i], i)

    prog = Sequence()
    c1 = graph.add_constant(FLOAT, [4], [1.0, 1.5, 2.0, 2.5])
    graph.set_tile_mapping(c1, 0)
    prog.add(Copy(c1, v1))

    compute_set = graph.add_compute_set("computeSet")
    for i in range(4):
        vtx = graph.add_vertex(compute_set, "SumVertex", {"in": v1.slice(i, 4), "out": v2[i]})
        graph.set_tile_mapping(vtx, i)
        graph.set_perf_estimate(vtx, 20)

    prog.add(Execute(compute_set))
    prog.add(PrintTensor("v2", v2))

    engine = popsim.Engine(graph, prog)
    engine.load(device)
    print("Running program")
    engine.run(0)
    print("Program complete")


if __name__ == "__main__":
    main()
