"""Small graph-building helpers shared by the tests: a variable or constant mapped to one
tile, a small IPUModel, building, loading and running an engine, a vertex summing its
input, one whose cycles depend on its data and one stuck in a loop."""
import numpy as np

import popsim
from popsim import InOut, Input, Output, Vector, Vertex


class Total(Vertex):
    """out = the sum of x."""
    x: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for v in self.x:
            s += v
        self.out = s


class Stuck(Vertex):
    """Never ends while x is 0 (a vertex stuck in a loop); then sets x to its rounds."""
    x: InOut[int]

    def compute(self):
        n = 0
        while self.x == 0:
            n += 1
        self.x = n


class Spin(Vertex):
    """Loops n times: its counted cycles depend on the replica's data."""
    n: Input[int]
    x: InOut[Vector[float]]

    def compute(self):
        for k in range(self.n):
            for i in range(len(self.x)):
                self.x[i] = self.x[i] * 0.5 + 1.0


def mapped(graph, dtype, shape, name, tile=0):
    """A variable mapped whole to ``tile``."""
    t = graph.add_variable(dtype, shape, name)
    graph.set_tile_mapping(t, tile)
    return t


def mapped_const(graph, dtype, shape, values, name, tile=0):
    """A constant mapped whole to ``tile``."""
    c = graph.add_constant(dtype, shape, values, name)
    graph.set_tile_mapping(c, tile)
    return c


def small_model(tiles=4, version="ipu2", **fields):
    """An IPUModel of ``version`` with ``tiles`` tiles and the given fields set."""
    model = popsim.IPUModel(version)
    model.tiles_per_ipu = tiles
    for k, v in fields.items():
        setattr(model, k, v)
    return model


def small_device(tiles=4):
    """A device of small_model(tiles)."""
    return small_model(tiles).create_device()


def load_and_run(graph, device, programs, reads, writes=None, options=None, runs=1, program_index=0):
    """Build an engine of ``programs``, load it on ``device``, write ``writes`` {tensor:
    values} (converted to each tensor's type and shape), run program ``program_index``
    ``runs`` times: (engine, per run the contents of each tensor of ``reads``)."""
    writes = writes or {}
    for i, t in enumerate(reads):
        graph.create_host_read(f"__read{i}", t)
    for i, t in enumerate(writes):
        graph.create_host_write(f"__write{i}", t)
    engine = popsim.Engine(graph, programs, options)
    engine.load(device)
    for i, (t, values) in enumerate(writes.items()):
        engine.write_tensor(f"__write{i}", np.asarray(values).astype(t.dtype.numpy).reshape(t.shape))
    results = []
    for _ in range(runs):
        engine.run(program_index)
        results.append([engine.read_tensor(f"__read{i}") for i in range(len(reads))])
    return engine, results


def replicated(replicas, ipus_per_replica=1, tiles=4):
    """(device, graph): ``replicas`` replicas of ``ipus_per_replica`` IPUs of ``tiles`` tiles."""
    device = small_model(tiles, num_ipus=replicas * ipus_per_replica).create_device()
    return device, popsim.Graph(device, replication_factor=replicas)


def runner(kind, graph, device, programs):
    """A loaded engine ("engine") or a reference executor ("reference") of ``programs``:
    both have the Engine's host interface."""
    if kind == "engine":
        engine = popsim.Engine(graph, programs)
        engine.load(device)
        return engine
    from popsim.reference import ReferenceExecutor
    return ReferenceExecutor(graph, programs)


def runners(graph, device, programs):
    """The engine (loaded) and the reference executor of the same programs."""
    return runner("engine", graph, device, programs), runner("reference", graph, device, programs)
