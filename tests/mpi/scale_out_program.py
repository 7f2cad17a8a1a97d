"""A replicated program that touches everything that crosses processes, run as a script:

    mpiexec -n N python tests/mpi/scale_out_program.py OUT_DIR [REPLICAS]

streams (REPLICATE in and out, BROADCAST in, a callback), cross-replica copies,
random numbers keyed by the replica index, GCL collectives (all-reduce by two methods,
reduce-scatter, all-gather), a vertex whose cycles depend on its replica's data, a loop
whose condition every replica computes alike, PrintTensor, and write_tensor /
read_tensor. Process k writes what it saw to OUT_DIR/process{k}.npz: its replicas'
results (keyed by the graph's replica index), and the cycle figures of the engine's
execution profile. test_scale_out.py runs it under 1, 2 and 4 processes and compares.
"""
import io
import sys
from pathlib import Path

import numpy as np

import popsim
from popsim import FLOAT, INT, UNSIGNED_INT, gcl, popops, poprand

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from graph_helpers import Spin  # the tests' helpers, one folder up
from popsim.program import Copy, CrossReplicaCopy, Execute, PrintTensor, Repeat, RepeatWhileTrue, Sequence

TILES = 4
N = 24  # elements per replica


def build(replicas: int):
    model = popsim.IPUModel()
    model.num_ipus, model.tiles_per_ipu = replicas, TILES
    device = model.create_device()
    g = popsim.Graph(device, replication_factor=replicas)
    popops.add_codelets(g)
    poprand.add_codelets(g)
    g.add_codelets([Spin])

    def var(dtype, shape, name):
        t = g.add_variable(dtype, shape, name)
        g.set_tile_mapping(t, 0) if t.num_elements() < TILES else popsim.poputil.map_tensor_linearly(g, t)
        return t

    x, w, acc = var(FLOAT, (N,), "x"), var(FLOAT, (N,), "w"), var(FLOAT, (N,), "acc")
    n, counter = var(INT, (TILES,), "n"), var(INT, (), "counter")
    rid = g.add_replication_index_constant()
    g.set_tile_mapping(rid, 0)
    seed = var(UNSIGNED_INT, (2,), "seed")
    xs = g.add_host_to_device_fifo("xs", FLOAT, N)                      # REPLICATE
    ws = g.add_host_to_device_fifo("ws", FLOAT, N, popsim.ReplicatedStreamMode.BROADCAST)
    ns = g.add_host_to_device_fifo("ns", INT, TILES)                    # REPLICATE, by callback
    out = g.add_device_to_host_fifo("out", FLOAT, N)

    prog = Sequence(Copy(xs, x), Copy(ws, w), Copy(ns, n))
    replica_seed = popops.add(g, seed, rid.reshape([1]).broadcast(2, 0), prog)   # each replica its own numbers
    noise = poprand.uniform(g, replica_seed, 5, x, FLOAT, -1.0, 1.0, prog)
    popops.add_in_place(g, x, noise, prog)
    popops.mul_in_place(g, x, w, prog)
    cs = g.add_compute_set("spin")
    for t in range(TILES):
        part = x[t * N // TILES:(t + 1) * N // TILES]
        g.set_tile_mapping(g.add_vertex(cs, "Spin", {"n": n[t], "x": part}), t)
    prog.add(Execute(cs))
    prog.add(CrossReplicaCopy(x, acc, {k: (k + 1) % replicas for k in range(replicas)}))
    summed = gcl.all_reduce_cross_replica(g, acc, gcl.CollectiveOperator.ADD, prog, name="sum",
                                          options={"method": "clockwise_ring"})
    top = gcl.all_reduce_cross_replica(g, x, gcl.CollectiveOperator.MAX, prog, name="max",
                                       options={"method": "broadcast"})
    scattered = gcl.reduce_scatter_cross_replica(g, x, gcl.CollectiveOperator.ADD, prog, name="scatter")
    gathered = gcl.all_gather_cross_replica(g, scattered, prog, name="gather")
    popops.add_in_place(g, acc, summed, prog)
    # A loop every replica decides alike (counter < 3), and one they run a fixed count.
    popops.zero(g, counter, prog)
    cond, body = Sequence(), Sequence()
    going = popops.lt(g, counter, 3, cond)
    popops.add_in_place(g, counter, 1, body)
    popops.mul_in_place(g, summed, 0.5, body)
    prog.add(RepeatWhileTrue(cond, going, body))
    prog.add(Repeat(2, Sequence(Execute(cs))))
    prog.add(PrintTensor("gathered", gathered[:, :2]))
    prog.add(Copy(acc, out))
    for name, t in (("acc", acc), ("summed", summed), ("top", top), ("gathered", gathered), ("counter", counter),
                    ("x", x)):
        g.create_host_read(name, t)
    g.create_host_write("seed", seed)
    return device, g, prog


def main(out_dir: str, replicas: int) -> None:
    device, g, prog = build(replicas)
    first, local = popsim.dist.replica_index_offset(), popsim.dist.num_local_replicas()
    assert popsim.dist.num_total_replicas() == replicas and local * popsim.dist.num_instances() == replicas
    mine = range(first, first + local)
    rng = np.random.default_rng(7)
    xs_all = rng.standard_normal((replicas, 2, N)).astype(np.float32)   # two runs' transfers
    ws_all = rng.standard_normal((2, N)).astype(np.float32)
    ns_all = rng.integers(0, 5, (replicas, TILES)).astype(np.int32)
    outs = np.zeros((local, 2, N), np.float32)
    with popsim.Engine(g, prog, {"popsim.numThreads": "1"}) as engine:
        engine.load(device)
        engine.connect_stream("xs", np.ascontiguousarray(xs_all[first:first + local]))
        engine.connect_stream("ws", ws_all)
        for r in mine:
            engine.connect_stream_to_callback("ns", r, lambda buf, r=r: buf.__setitem__(slice(None), ns_all[r]))
        engine.connect_stream("out", outs)
        engine.write_tensor("seed", np.array([11, 12], np.uint32))
        results = {}
        for run in range(2):
            engine.run(0)
            for name in ("acc", "summed", "top", "gathered", "counter", "x"):
                values = engine.read_tensor(name)
                for k, r in enumerate(mine):
                    results[f"{name}/{run}/{r}"] = values[k]
                    if k == 0:
                        assert np.array_equal(engine.read_tensor(name, replica=r), values[k])
        for k, r in enumerate(mine):
            results[f"out/{r}"] = outs[k]
        profile = engine.execution_profile()
        for field in ("step_counts", "step_cycles", "group_cycles", "vertex_cycles", "ipu_clocks", "ipu_idle"):
            results[f"profile/{field}"] = np.asarray(getattr(profile, field))
        summary = io.StringIO()
        engine.print_profile_summary(summary)
        results["profile/summary"] = np.array(summary.getvalue())
    np.savez(Path(out_dir) / f"process{popsim.dist.instance_index()}.npz", **results)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8)
