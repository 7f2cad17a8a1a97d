"""Helpers of the per-IPU clock tests (test_ipu_clocks.py, test_ipu_link_copies.py):
small multi-IPU devices, vertices with fixed estimates, running a program and reading
its report's steps and trace rows, the IPU-Link figures from the plain target constants."""
import math

import numpy as np

import popsim
from popsim import FLOAT, InOut, Input, Vector, Vertex


class Bump(Vertex):
    """Adds one to each element; its cost is always the fixed estimate the tests set."""

    x: InOut[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] = self.x[i] + 1.0
        return True


class Spin(Vertex):
    """Loops ``n`` times: a vertex whose counted cycles depend on its data."""

    n: Input[int]
    x: InOut[float]

    def compute(self):
        s = self.x
        for i in range(self.n):
            s = s * 0.5 + 1.0
        self.x = s
        return True


def ipu_model(num_ipus, tiles_per_ipu, topology="ladder"):
    model = popsim.IPUModel("ipu2")
    model.num_ipus = num_ipus
    model.tiles_per_ipu = tiles_per_ipu
    model.ipu_link_topology = topology
    return model.create_device()


def new_graph(device, replication_factor=1):
    g = popsim.Graph(device, replication_factor=replication_factor)
    g.add_codelets([Bump, Spin])
    return g


def stage(g, name, tile, estimate, data=None):
    """A compute set with one Bump vertex on ``tile`` (estimate ``estimate`` per worker
    run), bumping ``data`` (default: a new 4-element variable on that tile)."""
    if data is None:
        data = g.add_variable(FLOAT, [4], f"{name}_x")
        g.set_tile_mapping(data, tile)
    cs = g.add_compute_set(name)
    v = g.add_vertex(cs, "Bump", {"x": data})
    g.set_tile_mapping(v, tile)
    g.set_perf_estimate(v, estimate)
    return cs, data


def run(g, device, program, streams=None):
    e = popsim.Engine(g, program)
    e.load(device)
    for handle, buf in (streams or {}).items():
        e.connect_stream(handle, buf)
    e.run()
    return e, e.get_report().execution


def step_named(ex, name):
    """The step called ``name``, or the Execute of the compute set ``name``."""
    (s,) = [s for s in ex.steps if s.name == name or s.compute_set == name]
    return s


def trace_rows(ex, name):
    """The trace rows {ipu: (start, cycles)} of the step called ``name``."""
    index = [i for i, s in enumerate(ex.steps) if s.name == name or s.compute_set == name]
    return {int(ipu): (start, cycles) for step, ipu, start, cycles in ex.trace if int(step) in index}


def link_figures(target):
    """(bytes one link carries per cycle, cycles per hop), from the plain target constants."""
    return (target.ipu_link_bytes_per_second / target.tile_clock_frequency,
            math.ceil(15e-9 * target.tile_clock_frequency))


def spread(g, name, ipu, per_tile, tiles_per_ipu):
    """A FLOAT variable with ``per_tile`` elements on each tile of IPU ``ipu``."""
    v = g.add_variable(FLOAT, [tiles_per_ipu * per_tile], name)
    for k in range(tiles_per_ipu):
        g.set_tile_mapping(v[k * per_tile:(k + 1) * per_tile], ipu * tiles_per_ipu + k)
    return v


def copy_and_check(g, device, program, a, b, data, want):
    """Run ``program`` with ``a`` written from ``data``; check ``b`` reads ``want``."""
    g.create_host_write("a", a)
    g.create_host_read("b", b)
    e = popsim.Engine(g, program)
    e.load(device)
    e.write_tensor("a", data)
    e.run()
    np.testing.assert_array_equal(e.read_tensor("b"), want)
    return e.get_report().execution
