"""popsim.dist and an engine's host I/O when replicas are spread over processes. These run
alone (one process holds every replica) and under ``mpiexec -n 2 python -m pytest
tests/mpi/test_dist.py`` (CI does both), where each process checks its own block: every
process runs the same tests in the same order, as every process runs the same script."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, UNSIGNED_INT, popops
from popsim.program import Copy, CrossReplicaCopy, Sequence

from graph_helpers import small_model

N = popsim.dist.num_instances()
K = popsim.dist.instance_index()


def _graph(replicas):
    device = small_model(2, num_ipus=replicas).create_device()
    return device, popsim.Graph(device, replication_factor=replicas)


def test_the_launch_and_the_block_each_process_holds():
    if N > 1:
        from mpi4py import MPI
        assert (N, K) == (MPI.COMM_WORLD.Get_size(), MPI.COMM_WORLD.Get_rank())
    _graph(4 * N)
    assert popsim.dist.num_total_replicas() == 4 * N
    assert popsim.dist.num_local_replicas() == 4
    assert popsim.dist.replica_index_offset() == 4 * K


def test_host_io_streams_and_the_replication_index_cover_this_process_replicas():
    """Each replica: out = (x + its index) shifted one replica on; process k sees rows
    [4k, 4k + 4) of what one process would."""
    replicas, n = 4 * N, 3
    device, g = _graph(replicas)
    x, y = g.add_variable(FLOAT, (n,), "x"), g.add_variable(FLOAT, (n,), "y")
    rid = g.add_replication_index_constant()
    for t in (x, y, rid):
        g.set_tile_mapping(t, 1)
    g.create_host_write("x", x)
    g.create_host_read("y", y)
    g.create_host_read("rid", rid)
    out = g.add_device_to_host_fifo("out", FLOAT, n)
    prog = Sequence()
    popops.add_in_place(g, x, popops.cast(g, rid, FLOAT, prog).reshape([1]).broadcast(n, 0), prog)
    prog.add(CrossReplicaCopy(x, y, {r: (r + 1) % replicas for r in range(replicas)}))
    prog.add(Copy(y, out))
    mine = np.arange(4 * K, 4 * K + 4)
    X = np.arange(replicas * n, dtype=np.float32).reshape(replicas, n)
    want = np.roll(X + np.arange(replicas, dtype=np.float32)[:, None], 1, axis=0)
    with popsim.Engine(g, prog) as engine:
        engine.load(device)
        received = np.zeros((4, n), np.float32)
        engine.connect_stream("out", received)
        engine.write_tensor("x", X[mine])
        engine.run(0)
        assert engine.read_tensor("rid").tolist() == mine.tolist()
        np.testing.assert_array_equal(engine.read_tensor("y"), want[mine])
        np.testing.assert_array_equal(received, want[mine])
        np.testing.assert_array_equal(engine.read_tensor("y", replica=4 * K + 2), want[4 * K + 2])
        if N > 1:
            other = 4 * ((K + 1) % N)
            with pytest.raises(popsim.IndexError, match=f"replica {other} is held by process {(K + 1) % N}"):
                engine.read_tensor("y", replica=other)
        with pytest.raises(popsim.TensorIOError, match=r"\[4, 3\]"):
            engine.write_tensor("x", np.zeros((replicas + 1, n), np.float32))
        with pytest.raises(popsim.StreamConnectionError, match="leading dimension must be 4"):
            engine.connect_stream("out", np.zeros((5, n), np.float32))


def test_a_replication_factor_the_processes_cannot_share_is_refused():
    if N == 1:
        pytest.skip("one process holds any number of replicas")
    device = small_model(2, num_ipus=N + 1).create_device()
    with pytest.raises(popsim.PopsimError, match=f"which {N} processes cannot share evenly"):
        popsim.Graph(device, replication_factor=N + 1)


def test_processes_that_built_different_graphs_are_refused():
    if N == 1:
        pytest.skip("one process cannot disagree with itself")
    device, g = _graph(N)
    c = g.add_constant(FLOAT, (2,), [1.0, float(K)], "c")   # process k's own value
    g.set_tile_mapping(c, 0)
    g.create_host_read("c", c)
    with pytest.raises(popsim.PopsimError, match="process 1 built a different graph, programs and initial values"):
        popsim.Engine(g, Sequence())


def test_a_failed_run_on_one_process_fails_on_all_and_the_engine_stays_usable():
    replicas = 2 * N
    device, g = _graph(replicas)
    x = g.add_variable(UNSIGNED_INT, (2,), "x")
    g.set_tile_mapping(x, 0)
    g.create_host_read("x", x)
    s = g.add_host_to_device_fifo("s", UNSIGNED_INT, 2)
    prog = Sequence(Copy(s, x), CrossReplicaCopy(x, x, {r: (r + 1) % replicas for r in range(replicas)}))
    failed = []

    def feed(buffer, replica):
        if replica == replicas - 1 and not failed:  # the last replica, in the first run
            failed.append(replica)
            raise ValueError("no data this time")
        buffer[:] = replica

    with popsim.Engine(g, prog) as engine:
        engine.load(device)
        for r in range(2 * K, 2 * K + 2):
            engine.connect_stream_to_callback("s", r, lambda b, r=r: feed(b, r))
        expected = ValueError if K == N - 1 else popsim.PeerProcessError
        with pytest.raises(expected, match="no data this time"):
            engine.run(0)
        engine.run(0)
        want = [[(r - 1) % replicas] * 2 for r in range(2 * K, 2 * K + 2)]
        assert engine.read_tensor("x").tolist() == want
