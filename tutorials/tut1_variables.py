"""Poplar tutorial 1 (programs and variables), ported line by line to popsim.

Creates variables and a constant mapped onto tiles, copies between them, writes and
reads a tensor from the host, slices views, and streams data in through a FIFO.
Run: python tutorials/tut1_variables.py
"""
import numpy as np

import popsim
from popsim import FLOAT, INT
from popsim.program import Copy, PrintTensor, Sequence


def main():
    # Create the IPU model device (an IPU simulated on the host) and its target.
    ipu_model = popsim.IPUModel()
    device = ipu_model.create_device()
    target = device.target

    # Create the graph.
    graph = popsim.Graph(target)

    # Add variables to the graph.
    v1 = graph.add_variable(FLOAT, [4], "v1")
    v2 = graph.add_variable(FLOAT, [4], "v2")
    v3 = graph.add_variable(FLOAT, [4, 4], "v3")
    v4 = graph.add_variable(INT, [10], "v4")

    # Allocate v1 to reside on tile 0, and spread v2 over tiles 0..3.
    graph.set_tile_mapping(v1, 0)
    for i in range(4):
        graph.set_tile_mapping(v2[i], i)

    # Allocate v3 and v4 to tile 0.
    graph.set_tile_mapping(v3, 0)
    graph.set_tile_mapping(v4, 0)

    # Create a control program that is a sequence of steps.
    prog = Sequence()

    # Add a constant tensor to the graph and copy it into v1.
    c1 = graph.add_constant(FLOAT, [4], [1.0, 1.5, 2.0, 2.5])
    graph.set_tile_mapping(c1, 0)
    prog.add(Copy(c1, v1))

    # Debug print the tensor to the host console.
    prog.add(PrintTensor("v1-debug", v1))

    # Copy v1 into v2 (across tiles) and print it.
    prog.add(Copy(v1, v2))
    prog.add(PrintTensor("v2-debug", v2))

    # Host access to v3.
    graph.create_host_write("v3-write", v3)
    graph.create_host_read("v3-read", v3)

    # Copy a slice of v1 into a slice of v3: views, not new state.
    v1slice = v1.slice(0, 3)
    v3slice = v3.slice([1, 1], [2, 4])
    prog.add(Copy(v1slice, v3slice))

    # Stream data from the host into v4, twice.
    in_stream = graph.add_host_to_device_fifo("v4-input-stream", INT, 10)
    prog.add(Copy(in_stream, v4))
    prog.add(PrintTensor("v4-0", v4))
    prog.add(Copy(in_stream, v4))
    prog.add(PrintTensor("v4-1", v4))

    # Create the engine and load it onto the device.
    engine = popsim.Engine(graph, prog)
    engine.load(device)

    # Write zeros to v3 from the host.
    h3 = np.zeros((4, 4), np.float32)
    engine.write_tensor("v3-write", h3)

    # The stream reads from a 30-element buffer, 10 elements per transfer.
    in_data = np.arange(30, dtype=np.int32)
    engine.connect_stream("v4-input-stream", in_data)

    # Run the control program.
    print("Running program")
    engine.run(0)
    print("Program complete")

    # Read v3 back and print it as the C++ tutorial does: each row is "  ", then every
    # value followed by one space (std::cout << h3[i * 4 + j] << " "), so each row ends
    # with a space before the newline.
    engine.read_tensor("v3-read", out=h3)
    print()
    print("h3 data:")
    for row in h3:
        print("  " + "".join(f"{x:g} " for x in row))


if __name__ == "__main__":
    main()
