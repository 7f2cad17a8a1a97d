"""Replicated graphs give the same answers however they run: the engine against the
reference executor and numpy on random programs, and every result and cycle figure the
same for any thread count and any order of the replicas' data."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popsim
from popsim import popops
from popsim import FLOAT, INT
from popsim.program import CrossReplicaCopy, Execute, Sequence

from graph_helpers import Spin, mapped, replicated, runners

pytestmark = pytest.mark.compiler


# -- the engine computes what the reference executor and numpy say -------------------------------
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(r=st.sampled_from([1, 2, 4]), ipus=st.sampled_from([1, 2]), data=st.data())
def test_engine_matches_reference_and_numpy(r, ipus, data):
    device, g = replicated(r, ipus_per_replica=ipus)
    n = data.draw(st.integers(1, 6), label="n")
    tiles = st.integers(0, g.target.num_tiles - 1)
    a, b = (mapped(g, INT, (n,), name, tile=data.draw(tiles, label=name)) for name in "ab")
    rid = g.add_replication_index_constant()
    g.set_tile_mapping(rid, data.draw(tiles, label="rid"))
    prog = Sequence()
    c = popops.add(g, a, b, prog)            # c = a + b
    shift = data.draw(st.integers(1, r - 1), label="shift") if r > 1 else 0
    if r > 1:                                # c of replica k -> replica (k + shift) % r
        prog.add(CrossReplicaCopy(c, c, {k: (k + shift) % r for k in range(r)}))
    ridv = g.add_variable(INT, (), "ridv")
    g.set_tile_mapping(ridv, data.draw(tiles, label="ridv"))
    popops.cast_with_output(g, rid, ridv, prog)
    d = popops.mul(g, c, ridv.reshape([1]).broadcast(n, 0), prog)   # d = c * replica index
    for name, t in (("a", a), ("b", b)):
        g.create_host_write(name, t)
    g.create_host_read("d", d)
    values = st.lists(st.integers(-1000, 1000), min_size=r * n, max_size=r * n)
    A, B = (np.array(data.draw(values, label=name), np.int32).reshape(r, n) for name in "AB")
    want = np.roll(A + B, shift, axis=0) * np.arange(r, dtype=np.int32)[:, None]
    results = []
    for run in runners(g, device, prog):
        run.write_tensor("a", A if r > 1 else A[0])
        run.write_tensor("b", B if r > 1 else B[0])
        run.run()
        results.append(run.read_tensor("d").reshape(r, n))
    np.testing.assert_array_equal(results[0], want)
    np.testing.assert_array_equal(results[1], want)


# -- determinism -------------------------------------------------------------------------------------
def test_results_and_cycles_do_not_depend_on_threads_or_replica_order():
    """4 replicas of 2 IPUs, data-dependent vertex cycles, float arithmetic and a ring:
    every replica's results and every cycle figure are the same on 1, 2 and 3 threads;
    and giving the replicas their data in another order permutes the results alike."""
    def build(threads):
        device, g = replicated(4, ipus_per_replica=2)
        g.add_codelets([Spin])
        n = mapped(g, INT, (), "n", tile=0)
        x = g.add_variable(FLOAT, (8, 4), "x")
        cs = g.add_compute_set("spin")
        for i in range(8):
            g.set_tile_mapping(x[i], i)
            g.set_tile_mapping(g.add_vertex(cs, "Spin", {"n": n, "x": x[i]}), i)
        prog = Sequence(Execute(cs), CrossReplicaCopy(x, x, {0: 1, 1: 2, 2: 3, 3: 0}))
        popops.add_in_place(g, x, popops.reduce(g, x, [0], popops.ReduceParams(popops.Operation.ADD), prog), prog)
        for name, t in (("n", n), ("x", x)):
            g.create_host_write(name, t)
        g.create_host_read("x", x)
        engine = popsim.Engine(g, prog, {"popsim.numThreads": str(threads)})
        engine.load(device)
        return engine

    rng = np.random.default_rng(7)
    counts = np.array([3, 9, 1, 6], np.int32)
    X = rng.standard_normal((4, 8, 4)).astype(np.float32)

    def run(threads, order):
        engine = build(threads)
        engine.write_tensor("n", counts[order])
        engine.write_tensor("x", X[order])
        engine.run(0)
        ex = engine.get_report().execution
        return engine.read_tensor("x"), (ex.total_cycles, ex.ipu_cycles, [s.cycles for s in ex.steps], ex.trace)

    first, cycles = run(1, [0, 1, 2, 3])
    for threads in (2, 3):
        again, again_cycles = run(threads, [0, 1, 2, 3])
        assert again.tobytes() == first.tobytes() and again_cycles == cycles
    # Replica k's input goes to replica (k + 1) % 4: with the inputs rotated by one, the
    # ring moves each result to the next replica too, so the results rotate the same way.
    order = [1, 2, 3, 0]
    rotated, rotated_cycles = run(2, order)
    assert rotated.tobytes() == first[order].tobytes()
    assert rotated_cycles[0] == cycles[0]  # the slowest replica sets the pace whatever its place
