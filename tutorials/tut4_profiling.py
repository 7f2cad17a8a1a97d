"""Poplar tutorial 4 (profiling output), ported line by line to popsim.

Multiplies m1 [900, 600] by m2 [600, 300] and the result by m3 [300, 200] with
poplin.mat_mul, runs the program on the IPU model (no host data: the values are whatever
the memory holds) and prints the profile summary with every execution step, so you can see
which steps belong to which matMul, the memory used and the cycles spent.
Set POPLAR_ENGINE_OPTIONS='{"autoReport.all":"true","autoReport.directory":"./report"}' to
also write report files (`popsim-report ./report` reads them).
Run: python tutorials/tut4_profiling.py
"""
import popsim
from popsim import FLOAT, poplin, popops, poputil
from popsim.program import Sequence


def main():
    # Create the IPU model device and the graph.
    ipu_model = popsim.IPUModel()
    device = ipu_model.create_device()
    target = device.target
    graph = popsim.Graph(target)

    # Add the codelets of popops and poplin (their ops add their own; Poplar programs call these).
    popops.add_codelets(graph)
    poplin.add_codelets(graph)

    # Three matrices, each spread linearly over the tiles.
    m1 = graph.add_variable(FLOAT, [900, 600], "m1")
    m2 = graph.add_variable(FLOAT, [600, 300], "m2")
    m3 = graph.add_variable(FLOAT, [300, 200], "m3")
    poputil.map_tensor_linearly(graph, m1)
    poputil.map_tensor_linearly(graph, m2)
    poputil.map_tensor_linearly(graph, m3)

    # A control program that is a sequence of steps: two matrix multiplications.
    prog = Sequence()
    m4 = poplin.mat_mul(graph, m1, m2, prog, "m4")
    poplin.mat_mul(graph, m4, m3, prog, "m5")

    # Create the engine, keeping debug information for the profile.
    engine = popsim.Engine(graph, prog, {"debug.retainDebugInformation": "true"})
    engine.load(device)

    print("Running program")
    engine.run(0)
    print("Program complete")

    engine.print_profile_summary(options={"showExecutionSteps": "true"})


if __name__ == "__main__":
    main()
