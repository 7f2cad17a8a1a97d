"""popnn.bn's distributed forms on two replicas: statistics and gradients over the samples
of both replicas' micro-batches, against numpy on the whole batch; the callback's
contract and the argument errors."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, gcl, popnn
from popsim.program import Sequence
from popsim.poputil import PoplibsError

from graph_helpers import replicated
from norm_reference import batch_forward

pytestmark = pytest.mark.compiler  # gcl's ring vertices are compiled to C
R, B, C, F, EPS = 2, 3, 4, 5, 1e-3


def _sum(graph, tensors, prog, group_size, name, options):
    assert group_size == R
    return gcl.all_reduce_cross_replica(graph, list(tensors), gcl.CollectiveOperator.ADD, prog, name=name)


def _mapped(g, shape, name):
    t = g.add_variable(FLOAT, shape, name)
    popsim.poputil.map_tensor_linearly(g, t)
    return t


def test_statistics_and_gradients_over_every_replica():
    device, g = replicated(R)
    x, dy = _mapped(g, (B, C, F), "x"), _mapped(g, (B, C, F), "dy")
    gamma = _mapped(g, (C,), "gamma")
    prog = Sequence()
    mean, inv_std = popnn.bn.distributed_batch_norm_statistics(g, x, EPS, prog, False, _sum, R * B)
    x_hat = popnn.bn.batch_norm_whiten(g, x, mean, inv_std, prog)
    dx = popnn.bn.distributed_batch_norm_gradients(g, x_hat, dy, inv_std, gamma, prog, _sum, R * B)
    for name, t in (("x", x), ("dy", dy), ("gamma", gamma)):
        g.create_host_write(name, t)
    for name, t in (("mean", mean), ("inv_std", inv_std), ("dx", dx)):
        g.create_host_read(name, t)
    e = popsim.Engine(g, prog)
    e.load(device)
    rng = np.random.default_rng(0)
    xs, dys = rng.standard_normal((R, B, C, F)).astype(np.float32), rng.standard_normal((R, B, C, F)).astype(np.float32)
    gam = rng.standard_normal(C).astype(np.float32)
    e.write_tensor("x", xs)
    e.write_tensor("dy", dys)
    e.write_tensor("gamma", gam)
    e.run()
    whole, dwhole = xs.reshape(R * B, C, F).astype(np.float64), dys.reshape(R * B, C, F).astype(np.float64)
    want_mean = whole.mean(axis=(0, 2))
    want_inv = 1 / np.sqrt(whole.var(axis=(0, 2)) + EPS)
    for r in range(R):
        np.testing.assert_allclose(e.read_tensor("mean")[r], want_mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(e.read_tensor("inv_std")[r], want_inv, rtol=1e-5)
    _, xh = batch_forward(whole, np.ones(C), np.zeros(C), EPS)
    gg = dwhole * gam[None, :, None]
    want_dx = want_inv[None, :, None] * (gg - gg.mean(axis=(0, 2), keepdims=True)
                                         - xh * (xh * gg).mean(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(e.read_tensor("dx").reshape(R * B, C, F), want_dx, rtol=1e-4, atol=1e-5)


def test_distributed_argument_errors():
    _, g = replicated(R)
    x = _mapped(g, (B, C, F), "x")
    with pytest.raises(PoplibsError, match="norm_batch_size must be a whole multiple of the replica's batch 3"):
        popnn.bn.distributed_batch_norm_statistics(g, x, EPS, Sequence(), False, _sum, 4)
    with pytest.raises(popsim.TypeError, match="the callback must be callable"):
        popnn.bn.distributed_batch_norm_statistics(g, x, EPS, Sequence(), False, None, 6)

    def wrong(graph, tensors, prog, group_size, name, options):
        return tensors[:1]
    with pytest.raises(PoplibsError, match="the callback must return one tensor of each input's shape"):
        popnn.bn.distributed_batch_norm_statistics(g, x, EPS, Sequence(), False, wrong, 6)
