"""Poplar tutorial 2 (using PopLibs), ported line by line to popsim.

Adds two 2x2 tensors spread over four tiles with popops.add, then adds again with a
transposed operand: PopLibs places each addition on the tiles that hold the output and
exchanges the operands it needs.
Run: python tutorials/tut2_operations.py
"""
import popsim
from popsim import FLOAT, popops
from popsim.program import Copy, PrintTensor, Sequence


def main():
    # Create the IPU model device and the graph.
    ipu_model = popsim.IPUModel()
    device = ipu_model.create_device()
    target = device.target
    graph = popsim.Graph(target)

    # Add the codelets of popops (popops ops add their own; Poplar programs call this).
    popops.add_codelets(graph)

    # Two 2x2 variables: v1[i][j] on tile i*2+j, v2[i][j] on tile j*2+i.
    v1 = graph.add_variable(FLOAT, [2, 2], "v1")
    v2 = graph.add_variable(FLOAT, [2, 2], "v2")
    for i in range(2):
        for j in range(2):
            graph.set_tile_mapping(v1[i][j], i * 2 + j)
            graph.set_tile_mapping(v2[i][j], j * 2 + i)

    # A control program that is a sequence of steps.
    prog = Sequence()

    # Initial values through constants copied in.
    c1 = graph.add_constant(FLOAT, [4], [1.0, 1.5, 2.0, 2.5])
    c2 = graph.add_constant(FLOAT, [4], [4.0, 3.0, 2.0, 1.0])
    graph.set_tile_mapping(c1, 0)
    graph.set_tile_mapping(c2, 0)
    prog.add(Copy(c1, v1.flatten()))
    prog.add(Copy(c2, v2.flatten()))

    # v3 = v1 + v2.
    v3 = popops.add(graph, v1, v2, prog, "Add")
    prog.add(PrintTensor("v3", v3))

    # v4 = v3 + v2.
    v4 = popops.add(graph, v3, v2, prog, "Add")
    prog.add(PrintTensor("v4", v4))

    # v5 = v1 + the transpose of v2.
    v5 = popops.add(graph, v1, v2.transpose(), prog, "Add")
    prog.add(PrintTensor("v5", v5))

    # Create the engine, load it and run the program.
    engine = popsim.Engine(graph, prog)
    engine.load(device)
    print("Running program")
    engine.run(0)
    print("Program complete")


if __name__ == "__main__":
    main()
