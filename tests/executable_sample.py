"""A program that uses every part of an executable (streams both ways, host handles,
PrintTensor, control flow, a function, an abort, compute sets with list and state
fields, constants and initial values), a replicated one over several IPUs, and how to
drive each: shared by the executable file tests and the fuzzing script they run."""
import numpy as np

import popsim
from popsim import FLOAT, INT, UNSIGNED_INT, Input, InOut, Output, ReplicatedStreamMode, Vector, VectorList
from popsim.program import (AbortOnCondition, Call, Copy, CrossReplicaCopy, Execute, If, PrintTensor, Repeat,
                            RepeatWhileTrue, Sequence, Switch, Sync, SyncType)


class Gather(popsim.Vertex):
    parts: Input[VectorList[float]]
    out: Output[Vector[float]]
    k: float

    def compute(self):
        for i in range(len(self.parts)):
            self.out[i] = self.parts[i][0] * self.k


class Bump(popsim.MultiVertex):
    data: InOut[Vector[float]]

    def compute(self, worker_id):
        if worker_id == 0:
            for i in range(len(self.data)):
                self.data[i] += 1.0


def build(device):
    g = popsim.Graph(device)
    g.add_codelets([Gather, Bump])
    x = g.add_variable(FLOAT, [8], "x", mapping=popsim.VariableMappingMethod.LINEAR)
    y = g.add_variable(FLOAT, [3], "y")
    g.set_tile_mapping(y, 2)
    c = g.add_constant(FLOAT, [3], [1.0, 2.0, 3.0], "c")
    g.set_tile_mapping(c, 1)
    n = g.add_variable(INT, [], "n")
    g.set_tile_mapping(n, 0)
    g.set_initial_value(n, 2)
    flag = g.add_variable(INT, [], "flag")
    g.set_tile_mapping(flag, 3)
    cs = g.add_compute_set("gather")
    v = g.add_vertex(cs, Gather, {"parts": [x[0:2], x[5:7], c[1:2]], "out": y})
    g.set_initial_value(v["k"], 0.5)
    g.set_tile_mapping(v, 2)
    bump = g.add_compute_set("bump")
    w = g.add_vertex(bump, Bump, {"data": x[2:5]})
    g.set_tile_mapping(w, 1)
    into = g.add_host_to_device_fifo("in", FLOAT, 8)
    out = g.add_device_to_host_fifo("out", FLOAT, 3)
    g.create_host_write("x", x)
    g.create_host_read("y", y)
    g.create_host_read("x", x)
    f = g.add_function(Sequence(Execute(bump), Copy(c, y)))
    main = Sequence(
        Copy(into, x), Execute(cs), Repeat(2, Call(f)),
        If(flag, Copy(y, x[0:3]), Copy(c, x[5:8])),
        Switch(n, {1: Copy(c, y), 2: Execute(cs)}, Copy(y, x[0:3])),
        RepeatWhileTrue(Sequence(), flag, Copy(c, y)),
        Sync(SyncType.INTERNAL), Copy(y, out), PrintTensor("y", y), AbortOnCondition(flag, "flag set"))
    return g, [main, Sequence(PrintTensor("x", x), Copy(x[0:3], y))]


def drive(engine, device) -> dict:
    """Load, connect, write, run every program, read: what a user does."""
    engine.load(device)
    engine.connect_stream("in", np.arange(16, dtype=np.float32))
    received = []
    engine.connect_stream_to_callback("out", lambda buf: received.append(buf.copy()))
    engine.write_tensor("x", np.zeros(8, np.float32))
    for p in range(engine.num_programs):
        engine.run(p)
    return {"y": engine.read_tensor("y"), "x": engine.read_tensor("x"), "out": received,
            "cycles": engine.get_report().execution.total_cycles}


class Scale(popsim.Vertex):
    x: InOut[Vector[float]]
    k: float

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] = self.x[i] * self.k


def build_replicated():
    """(device, graph, programs): 2 replicas of 2 IPUs of 4 tiles, so that the executable
    has per-IPU step costs, replica maps, a replication-index constant, a broadcast
    stream, an inter-IPU and a cross-replica copy, and vertices on both IPUs that read
    from neighbouring tiles (exchange buffers)."""
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    model.num_ipus = 4
    device = model.create_device()
    g = popsim.Graph(device, replication_factor=2)
    g.add_codelets([Scale])
    x = g.add_variable(FLOAT, [8], "x", mapping=popsim.VariableMappingMethod.LINEAR)  # one element per tile
    cs = g.add_compute_set("scale")
    for t in range(4):
        v = g.add_vertex(cs, Scale, {"x": x[2 * t:2 * t + 2]})
        g.set_initial_value(v["k"], 1.5 + t)
        g.set_tile_mapping(v, 2 * t + 1)
    y = g.add_variable(FLOAT, [8], "y")
    g.set_tile_mapping(y, 6)
    index = g.add_replication_index_constant()
    g.set_tile_mapping(index, 5)
    which = g.add_variable(UNSIGNED_INT, [], "which")
    g.set_tile_mapping(which, 0)
    into = g.add_host_to_device_fifo("in", FLOAT, 8, ReplicatedStreamMode.BROADCAST)
    out = g.add_device_to_host_fifo("out", FLOAT, 8)
    g.create_host_read("y", y)
    g.create_host_read("which", which)
    main = Sequence(Copy(into, x), Repeat(2, Execute(cs)), Copy(x, y), CrossReplicaCopy(y, y, {0: 1, 1: 0}),
                    Copy(index, which), Copy(y, out))
    return device, g, [main]


def drive_replicated(engine, device) -> dict:
    """``drive`` for build_replicated's program."""
    engine.load(device)
    engine.connect_stream("in", np.arange(16, dtype=np.float32))
    out = np.zeros((2, 16), np.float32)
    engine.connect_stream("out", out)
    engine.run(0)
    return {"y": engine.read_tensor("y"), "which": engine.read_tensor("which"), "out": out,
            "cycles": engine.get_report().execution.total_cycles}
