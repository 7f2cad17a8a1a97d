"""Fuzzing popsim's own API (tests/api_fuzz.py has the harness): graph building, tensor
views, control programs, engines, options and models called with wrong types and
extreme values raise a PopsimError or work; nothing else escapes (issue 20: only the
library's own errors escape its API). PopLibs' entry points: tests/poplibs/test_poplibs_fuzz.py.

The default run takes a few seconds and sees the same examples every time; a long run,
by hand:

    POPSIM_FUZZ_EXAMPLES=5000 python -m pytest tests/test_api_fuzz.py tests/poplibs/test_poplibs_fuzz.py
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, INT
from popsim.program import (Abort, AbortOnCondition, Call, Copy, CrossReplicaCopy, Execute, If, PrintTensor, Repeat,
                            RepeatWhileFalse, RepeatWhileTrue, Sequence, Switch, Sync, WriteUndef)

from api_fuzz import Pick, Ref, check_call, entry, fuzz_settings


def _vertex(env, field_value, size=None):
    env.g.add_codelets(_Scale)
    vx = env.g.add_vertex(env.cs, "_Scale", {"x": env.v})
    env.g.connect(vx["k"], field_value)
    if size is not None:
        env.g.set_field_size(vx["x"], size)
    return vx


class _Scale(popsim.Vertex):
    x: popsim.InOut[popsim.Vector[float]]
    k: popsim.Input[float]

    def compute(self):
        for j in range(len(self.x)):
            self.x[j] = self.x[j] * self.k


GRAPH = [
    entry("Graph", lambda env, t: popsim.Graph(t), Ref("device")),
    entry("Graph.add_variable", lambda env, d, s, n: env.g.add_variable(d, s, n), FLOAT, [2, 3], "t"),
    entry("Graph.add_variable(mapping)", lambda env, d, s, m: env.g.add_variable(d, s, mapping=m), FLOAT, [2, 3],
          popsim.VariableMappingMethod.LINEAR),
    entry("Graph.add_constant", lambda env, d, s, v: env.g.add_constant(d, s, v), FLOAT, [2], [1.0, 2.0]),
    entry("Graph.set_tile_mapping", lambda env, t, m: env.g.set_tile_mapping(t, m), Ref("v"), [[(0, 2)], [(2, 4)]]),
    entry("Graph.get_tile_mapping", lambda env, t, c: env.g.get_tile_mapping(t, c), Ref("m"), True),
    entry("Graph.linear_mapping", lambda env, t, a, b: env.g.linear_mapping(t, a, b), Ref("m"), 1, 1),
    entry("Graph.clone", lambda env, t, n, d: env.g.clone(t, n, d), Ref("m"), "k", INT),
    entry("Graph.add_compute_set", lambda env, n: env.g.add_compute_set(n), "cs2"),
    entry("Graph.add_vertex", lambda env, c, t, f: env.g.add_codelets(_Scale) and env.g.add_vertex(c, t, f),
          Ref("cs"), "_Scale", {"x": Ref("v"), "k": Ref("c")}),
    entry("Graph.connect", lambda env, f: _vertex(env, f), Ref("s")),
    entry("Graph.set_field_size", lambda env, n: _vertex(env, 1.0, n), 4),
    entry("Graph.set_perf_estimate", lambda env, c, f: env.g.set_perf_estimate(_vertex(env, 1.0), c, f), 10, 0),
    entry("Graph.set_tile_mapping(vertex)", lambda env, t: env.g.set_tile_mapping(_vertex(env, 1.0), t), 1),
    entry("Graph.add_codelets", lambda env, src, flags: env.g.add_codelets(src, flags), _Scale, ""),
    entry("Graph.has_codelet", lambda env, n: env.g.has_codelet(n), "_Scale"),
    entry("Graph.vertex_type", lambda env, n: env.g.vertex_type(n), "_Scale"),
    entry("Graph.add_host_to_device_fifo", lambda env, h, d, n, m: env.g.add_host_to_device_fifo(h, d, n, m), "in",
          FLOAT, 4, popsim.ReplicatedStreamMode.BROADCAST),
    entry("Graph.add_device_to_host_fifo", lambda env, h, d, n, o: env.g.add_device_to_host_fifo(h, d, n, o), "out",
          FLOAT, 4, {"bufferingDepth": "2"}),
    entry("Graph.create_host_read", lambda env, h, t, r: env.g.create_host_read(h, t, r), "r", Ref("v"), False),
    entry("Graph.create_host_write", lambda env, h, t: env.g.create_host_write(h, t), "w", Ref("v")),
    entry("Graph.get_stream", lambda env, h: env.g.get_stream(h), "in"),
    entry("Graph.add_function", lambda env, p, n: env.g.add_function(p, n), Ref("p"), "f"),
    entry("Graph.create_virtual_graph", lambda env, a, b: env.g.create_virtual_graph(a, b), 0, 2),
    entry("Graph.create_replicated_graph", lambda env, r: env.g.create_replicated_graph(r), 1),
    entry("Graph.set_initial_value", lambda env, t, v: env.g.set_initial_value(t, v), Ref("v"), [1, 2, 3, 4]),
    entry("Graph.get_sorted_contiguous_regions", lambda env, t, r: env.g.get_sorted_contiguous_regions(t, r),
          Ref("v"), [(0, 2)]),
    entry("Graph.convert_virtual_tile_to_physical_tile",
          lambda env, t: env.g.convert_virtual_tile_to_physical_tile(t), 1),
    entry("Graph.owns", lambda env, t: env.g.owns(t), Ref("v")),
    entry("concat", lambda env, ts, d: popsim.concat(ts, dim=d), [Ref("v"), Ref("v")], 0),
    entry("append", lambda env, a, b, d: popsim.append(a, b, d), Ref("m"), Ref("m"), 1),
]

# The tensors whose methods are called: a matrix, a vector, a scalar, one with no elements, a constant, a view.
T = Pick(Ref("m"), Ref("v"), Ref("s"), Ref("e"), Ref("c"), Ref("mt"))

TENSOR = [
    entry("Tensor[]", lambda env, t, k: t[k], T, 1),
    entry("Tensor[a:b]", lambda env, t, a, b: t[a:b], T, 0, 2),
    entry("Tensor.slice", lambda env, t, a, b, d: t.slice(a, b, d), T, 0, 2, 1),
    entry("Tensor.slices", lambda env, t, r, d: t.slices(r, d), T, [(0, 1), (1, 3)], 1),
    entry("Tensor.index", lambda env, t, i: t.index(i), T, [1, 2]),
    entry("Tensor.reshape", lambda env, t, s: t.reshape(s), T, [3, 4]),
    entry("Tensor.reshape_partial", lambda env, t, a, b, s: t.reshape_partial(a, b, s), T, 0, 1, [2, 2]),
    entry("Tensor.dim_shuffle", lambda env, t, p: t.dim_shuffle(p), T, [1, 0]),
    entry("Tensor.dim_shuffle_partial", lambda env, t, a, b: t.dim_shuffle_partial(a, b), T, [0], [1]),
    entry("Tensor.dim_roll", lambda env, t, a, b: t.dim_roll(a, b), T, 1, 0),
    entry("Tensor.broadcast", lambda env, t, n, d: t.broadcast(n, d), T, 2, 0),
    entry("Tensor.upsample", lambda env, t, n, d: t.upsample(n, d), T, 2, 1),
    entry("Tensor.subsample", lambda env, t, n, d: t.subsample(n, d), T, 2, 1),
    entry("Tensor.expand", lambda env, t, d: t.expand(d), T, [0, 2]),
    entry("Tensor.squeeze", lambda env, t, d: t.squeeze(d), T, None),
    entry("Tensor.flatten", lambda env, t, a, b: t.flatten(a, b), T, 0, 2),
    entry("Tensor.reverse", lambda env, t, d: t.reverse(d), T, 0),
    entry("Tensor.reinterpret", lambda env, t, d: t.reinterpret(d), T, INT),
    entry("Tensor.dim", lambda env, t, d: t.dim(d), T, 1),
    entry("Tensor.transpose", lambda env, t: t.transpose(), T),
    entry("Tensor.intersects_with", lambda env, t, o: t.intersects_with(o), T, Ref("v")),
    entry("Tensor.same_elements", lambda env, t, o: t.same_elements(o), T, Ref("v")),
    entry("Tensor predicates", lambda env, t: (t.is_contiguous(), t.contains_aliases(), t.contains_constant(), len(t),
                                                t.num_elements(), t.rank, repr(t), list(iter(t))), T),
]

PROGRAMS = [
    entry("Sequence", lambda env, a, b: Sequence(a, b), Ref("p"), Sequence()),
    entry("Sequence.add", lambda env, p: Sequence().add(p), Ref("p")),
    entry("Repeat", lambda env, n, p: Repeat(n, p), 3, Ref("p")),
    entry("If", lambda env, c, a, b: If(c, a, b), Ref("b"), Ref("p"), Sequence()),
    entry("Switch", lambda env, c, cases, d: Switch(c, cases, d), Ref("s"), {0: Ref("p")}, Sequence()),
    entry("Switch.add", lambda env, k, p: Switch(env.s).add(k, p), 1, Ref("p")),
    entry("Copy", lambda env, a, b, o: Copy(a, b, o), Ref("v"), Ref("v"), False),
    entry("Execute", lambda env, c: Execute(c), Ref("cs")),
    entry("Call", lambda env, f: Call(f), Ref("f")),
    entry("RepeatWhileTrue", lambda env, c, p, b: RepeatWhileTrue(c, p, b), Sequence(), Ref("b"), Ref("p")),
    entry("RepeatWhileFalse", lambda env, c, p, b: RepeatWhileFalse(c, p, b), Sequence(), Ref("s"), Ref("p")),
    entry("PrintTensor", lambda env, a, b: PrintTensor(a, b), "v", Ref("v")),
    entry("Abort", lambda env, m: Abort(m), "stop"),
    entry("AbortOnCondition", lambda env, c, m: AbortOnCondition(c, m), Ref("b"), "stop"),
    entry("WriteUndef", lambda env, t: WriteUndef(t), Ref("v")),
    entry("Sync", lambda env, t: Sync(t), popsim.SyncType.INTERNAL),
    entry("CrossReplicaCopy", lambda env, a, b, m: CrossReplicaCopy(a, b, m), Ref("v"), Ref("v"), {0: 0}),
]


def _engine(env, prog=None, options=None):
    env.g.create_host_read("r", env.v)
    env.g.create_host_write("w", env.v)
    return popsim.Engine(env.g, Sequence() if prog is None else prog, options)


def _loaded(env):
    e = _engine(env)
    e.load(env.device)
    return e


# The fields of an IPUModel a program sets (their names are not fuzzed: setattr is Python's).
MODEL_FIELDS = ("tiles_per_ipu", "num_ipus", "num_worker_contexts", "tile_clock_frequency", "relative_sync_delay",
                "ipu_link_topology", "compile_ipu_code", "bytes_per_tile", "not_a_field")

# Engine options of each kind (integers, numbers, flags, choices, text), and misspelled ones.
OPTION_KEYS = ("popsim.numThreads", "popsim.traceLength", "popsim.runTimeout", "debug.allowOutOfMemory",
               "autoReport.executionProfileProgramRunCount", "opt.maxCompilationThreads", "target.deterministicWorkers",
               "debug.workerStackSizeInBytes", "popsim.codeletMode", "autoReport.directory", "popsim.cacheDir",
               "target.hostSyncTimeout", "popsim.numthreads", "")

ENGINE = [
    entry("Engine", lambda env, g, p, o: popsim.Engine(g, p, o), Ref("g"), Sequence(), {}),
    entry("Engine(program)", lambda env, p: _engine(env, p), Ref("copy")),
    entry("Engine(options)", lambda env, o: _engine(env, options=o), {"popsim.numThreads": "2"}),
    entry("Engine(option value)", lambda env, k, v: _engine(env, options={k: v}), Pick(*OPTION_KEYS), "1"),
    entry("Engine.load", lambda env, d: _engine(env).load(d), Ref("device")),
    entry("Engine.run", lambda env, i: _loaded(env).run(i), 0),
    entry("Engine.write_tensor", lambda env, h, a: _loaded(env).write_tensor(h, a), "w", np.zeros(4, np.float32)),
    entry("Engine.read_tensor", lambda env, h, o: _loaded(env).read_tensor(h, o), "r", None),
    entry("Engine.connect_stream", lambda env, h, a: _loaded(env).connect_stream(h, a), "w", np.zeros(4)),
    entry("compile_graph", lambda env, g, p: popsim.compile_graph(g, p), Ref("g"), [Sequence()]),
    entry("IPUModel", lambda env, v: popsim.IPUModel(v), "ipu2"),
    entry("IPUModel field", lambda env, k, v: setattr(popsim.IPUModel("ipu2"), k, v), Pick(*MODEL_FIELDS), 4),
    entry("IPUModel.create_device", lambda env, n, t: _model(n, t).create_device(), 1, 4),
    entry("Target.create_ipu_target", lambda env, n, a: popsim.Target.create_ipu_target(n, a), 1, "ipu2"),
    entry("Device.create_cpu_device", lambda env: popsim.Device.create_cpu_device()),
]


def _model(num_ipus, tiles):
    m = popsim.IPUModel("ipu2")
    m.num_ipus = num_ipus
    m.tiles_per_ipu = tiles
    return m


@pytest.mark.parametrize("entries", [GRAPH, TENSOR, PROGRAMS], ids=["graph", "tensor", "programs"])
@given(data=st.data())
@fuzz_settings(80)
def test_graph_building_raises_only_popsim_errors(entries, data):
    check_call(data, entries)


@given(data=st.data())
@fuzz_settings(30)
def test_engines_raise_only_popsim_errors(data):
    check_call(data, ENGINE)
