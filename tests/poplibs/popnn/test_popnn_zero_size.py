"""Every popnn op with each dimension zero in turn: an empty result of the right shape (no
vertices, nothing to run), or PopLibs' value where one is defined (norm statistics over
no elements: PopLibs' normStatistics keeps the scale 1 when a statistic has no elements,
so the mean is 0 and inv_std_dev is 1/sqrt(eps); a loss over no classes is 0), or a clear
PoplibsError where PopLibs has nothing to give (pooling over an empty field: the pooled
field would be empty, which PopLibs' ConvParams refuses; arg max of an empty row)."""
import math

import numpy as np
import pytest

import popsim
from popsim import FLOAT, UNSIGNED_INT, popnn, poputil
from popsim.popnn import NonLinearityType as NL
from popsim.poputil import PoplibsError
from popsim.program import Sequence

from graph_helpers import load_and_run

EPS = 1e-3


def device():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    return model.create_device()


def var(g, shape, name, dtype=FLOAT):
    t = g.add_variable(dtype, shape, name)
    poputil.map_tensor_linearly(g, t)
    return t


def run(g, dev, prog, reads, writes=None):
    """Run ``prog`` (writing only non-empty tensors); the values of ``reads``."""
    writes = {t: v for t, v in (writes or {}).items() if t.num_elements()}
    return load_and_run(g, dev, prog, reads, writes)[1][0]


def zero_each(shape):
    return [tuple(0 if d == i else n for d, n in enumerate(shape)) for i in range(len(shape))]


ELEMENTWISE = [NL.RELU, NL.SIGMOID, NL.TANH, NL.GELU, NL.SOFTMAX, NL.SOFTMAX_STABLE, NL.SOFTMAX_SCALED]


@pytest.mark.parametrize("nl", ELEMENTWISE, ids=lambda n: n.name)
@pytest.mark.parametrize("shape", zero_each((2, 3, 4)), ids=str)
def test_non_linearities_and_softmax(nl, shape):
    dev = device()
    g = popsim.Graph(dev)
    x, dy = var(g, shape, "x"), var(g, shape, "dy")
    prog = Sequence()
    y = popnn.non_linearity(g, nl, x, prog)
    popnn.non_linearity_in_place(g, nl, x, prog)
    dx = popnn.non_linearity_input_gradient(g, nl, y, dy, prog)
    ls = popnn.log_softmax(g, dy, prog)
    popnn.log_softmax_in_place(g, dy, prog)
    for t in (y, dx, ls):
        assert tuple(t.shape) == shape
    run(g, dev, prog, [y, dx, ls])


NORMS = [("bn", "batch", {}), ("gn", "group", {"num_groups": 1}), ("ln", "layer", {}), ("in_", "instance", {})]


def _stats_count(module, shape):
    b, c = shape[0], shape[1]
    return {"bn": c, "gn": b, "ln": b, "in_": b * c}[module]


@pytest.mark.parametrize("module, prefix, extra", NORMS, ids=[n[0] for n in NORMS])
@pytest.mark.parametrize("shape", zero_each((2, 3, 4)), ids=str)
def test_norms(module, prefix, extra, shape):
    ns = getattr(popnn, module)
    dev = device()
    g = popsim.Graph(dev)
    x, dy = var(g, shape, "x"), var(g, shape, "dy")
    gamma, beta = var(g, (shape[1],), "gamma"), var(g, (shape[1],), "beta")
    prog = Sequence()
    stats = getattr(ns, f"{prefix}_norm_statistics")
    if module == "gn":
        mean, inv_std = stats(g, x, EPS, prog, extra["num_groups"], True)
    else:
        mean, inv_std = stats(g, x, EPS, prog, True)
    count = _stats_count(module, shape)
    assert tuple(mean.shape) == (count,) and tuple(inv_std.shape) == (count,)
    whitened = getattr(ns, f"{prefix}_norm_whiten")(g, x, mean, inv_std, prog)
    y, x_hat = getattr(ns, f"{prefix}_normalise")(g, x, gamma, beta, mean, inv_std, prog)
    dgamma, dbeta = getattr(ns, f"{prefix}_norm_param_gradients")(g, x_hat, dy, prog)
    dx = getattr(ns, f"{prefix}_norm_gradients")(g, x_hat, dy, inv_std, gamma, prog)
    dx2 = getattr(ns, f"{prefix}_norm_gradients")(g, x, dy, mean, inv_std, gamma, prog)
    getattr(ns, f"{prefix}_norm_param_update")(g, dgamma, dbeta, -0.5, gamma, beta, prog)
    inference = [ns.batch_normalise(g, x, gamma, beta, prog)] if module == "bn" else []  # the combined form
    for t in [whitened, y, x_hat, dx, dx2] + inference:
        assert tuple(t.shape) == shape
    assert tuple(dgamma.shape) == tuple(dbeta.shape) == (shape[1],)
    gv, bv = np.arange(shape[1], dtype=np.float32), np.ones(shape[1], np.float32)
    m, s, dg, db, gnew = run(g, dev, prog, [mean, inv_std, dgamma, dbeta, gamma], {gamma: gv, beta: bv})
    if count and x.num_elements() == 0:  # statistics over no elements: PopLibs' scale 1 gives sums of nothing
        np.testing.assert_array_equal(m, np.zeros(count))
        np.testing.assert_allclose(s, np.full(count, 1 / math.sqrt(EPS)), rtol=1e-6)
        np.testing.assert_array_equal(dg, np.zeros(shape[1]))     # sums over no elements
        np.testing.assert_array_equal(db, np.zeros(shape[1]))
        np.testing.assert_array_equal(gnew, gv)                   # += -0.5 * 0


@pytest.mark.parametrize("kind", list(popnn.PoolingType), ids=lambda k: k.name)
@pytest.mark.parametrize("batch, channels", [(0, 3), (2, 0)])
def test_pooling_empty_batch_or_channels(kind, batch, channels):
    dev = device()
    g = popsim.Graph(dev)
    pp = popnn.PoolParams(kind, [4, 5], [2, 2], [2, 2], [0, 0], [0, 1], channels, batch, FLOAT)
    x = var(g, pp.input_shape(), "x")
    prog = Sequence()
    out = popnn.pool(g, pp, x, prog)
    assert tuple(out.shape) == (batch, channels, 2, 3)
    dy = var(g, out.shape, "dy")
    dx = popnn.pool_input_gradient(g, pp, x, out, dy, True, prog)
    assert tuple(dx.shape) == pp.input_shape()
    if kind != popnn.PoolingType.MAX:
        dx2 = popnn.pool_input_gradient(g, pp, 1, dy, prog)
        assert tuple(dx2.shape) == pp.input_shape()
    run(g, dev, prog, [out, dx])


def test_pooling_empty_field_is_refused():
    with pytest.raises(PoplibsError, match=r"PoolParams: input_field_shape must be >= 1 in every dimension, found "
                                           r"\(0, 5\)"):
        popnn.PoolParams(popnn.PoolingType.MAX, [0, 5], [1, 1], [1, 1], [0, 0], [0, 0], 2, 2, FLOAT)


@pytest.mark.parametrize("batch, classes", [(0, 5), (3, 0), (0, 0)])
@pytest.mark.parametrize("loss_type", list(popnn.LossType), ids=lambda t: t.name)
def test_loss_and_accuracy(batch, classes, loss_type):
    dev = device()
    g = popsim.Graph(dev)
    p, y = var(g, (batch, classes), "p"), var(g, (batch,), "y", UNSIGNED_INT)
    loss, deltas = var(g, (batch,), "loss"), var(g, (batch, classes), "deltas")
    nc = var(g, (), "nc", UNSIGNED_INT)
    prog = popnn.calc_loss(g, p, y, loss, deltas, num_correct=nc, loss_type=loss_type)
    acc = popnn.calc_accuracy(g, p, y, nc)
    labels = np.full(batch, 0xFFFFFFFF, np.uint32)  # no classes: every row masked
    got_loss, got_nc = run(g, dev, Sequence(prog, acc), [loss, nc], {y: labels, nc: 4, loss: np.full(batch, 7.0)})
    np.testing.assert_array_equal(got_loss, np.zeros(batch))
    assert got_nc == 4  # no row is correct


@pytest.mark.parametrize("op", ["arg_max", "arg_min", "max_and_arg_max", "min_and_arg_min"])
def test_arg_max_of_no_rows(op):
    dev = device()
    g = popsim.Graph(dev)
    t = var(g, (0, 5), "t")
    prog = Sequence()
    result = getattr(popnn, op)(g, t, prog)
    for r in (result if isinstance(result, tuple) else (result,)):
        assert tuple(r.shape) == (0,)
    indices = []
    values = popnn.top_k(g, t, indices, 2, True, prog)
    assert tuple(values.shape) == (0, 1, 2) and tuple(indices[0].shape) == (0, 1, 2)
    run(g, dev, prog, [])
    with pytest.raises(PoplibsError, match="must have at least one column"):
        popnn.arg_max(g, var(g, (3, 0), "empty_rows"), prog)


RNN_SIZES = {"batch": (0, 2, 3, 2), "steps": (2, 0, 3, 2), "input": (2, 2, 0, 2), "output": (2, 2, 3, 0)}


@pytest.mark.parametrize("module", ["lstm", "gru"])
@pytest.mark.parametrize("zero", list(RNN_SIZES))
def test_rnn(module, zero):
    B, T, n_in, n_out = RNN_SIZES[zero]
    ns = getattr(popnn, module)
    params = (ns.LstmParams if module == "lstm" else ns.GruParams)(FLOAT, B, T, [n_in, n_out])
    dev = device()
    g = popsim.Graph(dev)
    x = ns.create_input(g, params, "x")
    init = ns.create_initial_state(g, params, "init")
    w = ns.create_weights(g, params, "w")
    prog = Sequence()
    ns.zero_initial_state(g, init, prog)
    fwd = getattr(ns, f"{module}_fwd")
    out, *rest = fwd(g, params, init, x, w, prog, "fwd", return_intermediates=True)
    inter = rest[-1]
    assert tuple(out.shape) == (T, B, n_out)
    dy = var(g, tuple(out.shape), "dy")
    bwd = getattr(ns, f"{module}_bwd_with_wu")
    results = bwd(g, params, prog, init, inter, w, x, out, dy, *([None] if module == "lstm" else []))
    dx = [r for r in results if isinstance(r, popsim.Tensor) and tuple(r.shape) == (T, B, n_in)]
    assert dx
    run(g, dev, prog, [out])


def test_rnn_without_inputs_against_the_reference():
    """input_size 0: the input weights are [4 or 3, 0, out]; the recurrence alone against
    the numpy reference (forward values and numeric gradients)."""
    import test_popnn_gru
    import test_popnn_lstm
    test_popnn_lstm._check(2, 2, 0, 3, 4, True, FLOAT, 2e-5, 1e-4)
    test_popnn_gru._check(test_popnn_gru._params(FLOAT, 2, 2, 0, 3), 4, 2e-5, 1e-4)


@pytest.mark.parametrize("module", ["lstm", "gru"])
def test_rnn_without_time_steps_keeps_the_state(module):
    """time_steps 0: the output sequence is empty and the final state is the initial one."""
    ns = getattr(popnn, module)
    params = (ns.LstmParams if module == "lstm" else ns.GruParams)(FLOAT, 2, 0, [3, 2])
    params.output_full_sequence = False
    dev = device()
    g = popsim.Graph(dev)
    x, init, w = ns.create_input(g, params, "x"), ns.create_initial_state(g, params, "init"), \
        ns.create_weights(g, params, "w")
    prog = Sequence()
    result = getattr(ns, f"{module}_fwd")(g, params, init, x, w, prog, "fwd")
    h0 = init.output if module == "lstm" else init
    out = result[0] if isinstance(result, tuple) else result
    got, = run(g, dev, prog, [out], {h0: [[1, 2], [3, 4]]})
    np.testing.assert_array_equal(got, [[1, 2], [3, 4]])
