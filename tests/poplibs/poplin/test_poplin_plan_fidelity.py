"""The planner's estimate is what runs: for matmuls and convolutions over a grid of shapes
and types, the engine's modelled cycles for the op (every step the op's program adds, as
the execution profile reports them) are within 15 % of the plan's cycles; the planner
chooses only vertex configurations the executors have (amp_configs), and an executor given
a plan with none raises instead of running another."""
import dataclasses
import warnings

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, poplin
from popsim.poplin import amp_configs, mat_mul_execute
from popsim.poplin.conv_params import for_mat_mul
from popsim.poplin.plan import Method
from popsim.poputil import PoplibsError
from popsim.program import Sequence

from graph_helpers import small_device

TILES = 16
LOW, HIGH = 0.85, 1.15


def _device():
    return small_device(TILES)


def _engine_cycles(device, graph, prog, feeds):
    engine = popsim.Engine(graph, prog)
    engine.load(device)
    for name, value in feeds.items():
        engine.write_tensor(name, value)
    engine.run(0)
    return engine, engine.get_report().to_dict()["execution"]["total_cycles"]


def mat_mul_fidelity(m, k, n, dtype, partials, memory=None, steps=None):
    """(plan, engine cycles, result, expected) of A[m,k] @ B[k,n] built with plan layouts;
    ``memory``: an availableMemoryProportion (small ones force serial splits); ``steps``, a
    list, receives the execution profile's steps."""
    device = _device()
    g = popsim.Graph(device.target)
    opts = {"partialsType": partials}
    if memory is not None:
        opts["availableMemoryProportion"] = memory
    a = poplin.create_mat_mul_input_lhs(g, dtype, (m, k), (k, n), "a", options=opts)
    b = poplin.create_mat_mul_input_rhs(g, dtype, (m, k), (k, n), "b", options=opts)
    prog = Sequence()
    c = poplin.mat_mul(g, a, b, prog, "mm", options=opts)
    g.create_host_write("a", a)
    g.create_host_write("b", b)
    g.create_host_read("c", c)
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    host = np.float16 if dtype == HALF else np.float32
    ha = rng.integers(-1, 2, (m, k)).astype(host)   # sums of at most 256 ones: exact in half
    hb = rng.integers(-1, 2, (k, n)).astype(host)
    engine, cycles = _engine_cycles(device, g, prog, {"a": ha, "b": hb})
    if steps is not None:
        steps += engine.get_report().to_dict()["execution"]["steps"]
    plan = poplin.get_mat_mul_plan(g, dtype, (m, k), (k, n), options=opts)
    return plan, cycles, engine.read_tensor("c"), ha.astype(np.float32) @ hb.astype(np.float32)


def conv_fidelity(dtype, partials, batch, field, kernel, cin, cout, groups=1, stride=None, padding=None,
                  constraints=None):
    """(plan, engine cycles) of a convolution built with the plan's layouts; ``constraints``:
    planConstraints (JSON), to force a partition the planner would not choose."""
    device = _device()
    g = popsim.Graph(device.target)
    kw = {}
    if stride:
        kw["stride"] = stride
    if padding:
        kw["padding_lower"] = kw["padding_upper"] = padding
    params = poplin.ConvParams(dtype, batch, field, kernel, cin, cout, groups, **kw)
    opts = {"partialsType": partials}
    if constraints:
        opts["planConstraints"] = constraints
    x = poplin.create_input(g, params, "x", options=opts)
    w = poplin.create_weights(g, params, "w", options=opts)
    prog = Sequence()
    poplin.convolution(g, x, w, params, False, prog, "conv", options=opts)
    g.create_host_write("x", x)
    g.create_host_write("w", w)
    rng = np.random.default_rng(cin * 5 + cout)
    host = np.float16 if dtype == HALF else np.float32
    hx = rng.integers(-2, 3, params.input_shape()).astype(host)
    hw = rng.integers(-2, 3, params.weights_shape()).astype(host)
    _, cycles = _engine_cycles(device, g, prog, {"x": hx, "w": hw})
    return poplin.get_plan(device.target, params, opts), cycles


def _check(plan, cycles, what):
    ratio = cycles / plan.cycles
    assert LOW <= ratio <= HIGH, (f"{what}: engine {cycles} cycles, plan {plan.cycles} ({ratio:.3f}); plan "
                                  f"{plan.method}, {plan.partition}, {dict(plan.cost_breakdown)}")


MAT_MULS = [(16, 16, 16, FLOAT, "float"), (100, 100, 100, HALF, "half"), (100, 100, 100, HALF, "float"),
            (64, 64, 64, HALF, "half"), (100, 100, 100, FLOAT, "float"), (256, 256, 256, HALF, "float")]


@pytest.mark.parametrize("m,k,n,dtype,partials", MAT_MULS)
def test_mat_mul_engine_cycles_match_the_plan(m, k, n, dtype, partials):
    plan, cycles, got, want = mat_mul_fidelity(m, k, n, dtype, partials)
    np.testing.assert_array_equal(got.astype(np.float32), want)   # small integers: exact in every type
    _check(plan, cycles, f"[{m},{k}] @ [{k},{n}] {dtype.name}, {partials} partials")


@pytest.mark.parametrize("m,k,n,dtype,partials", [(8, 1024, 8, FLOAT, "float"), (4, 2048, 24, HALF, "half"),
                                                    (16, 4096, 16, HALF, "float")])
def test_the_plan_charges_the_reduction_exchange_the_engine_runs(m, k, n, dtype, partials):
    """A tall product splits k over tiles: the partials are summed on the tiles that hold
    the output's pieces (in whole grains, so some tiles hold none), and the plan's exchange
    is what the engine charges for the op's compute sets (the operands, laid out by the
    plan, arrive in place)."""
    steps = []
    plan, cycles, got, want = mat_mul_fidelity(m, k, n, dtype, partials, steps=steps)
    np.testing.assert_array_equal(got.astype(np.float32), want)
    assert dict(plan.cost_breakdown)["reduce"] > 0, f"no reduction to check: {plan.partition}"
    exchange = sum(max(step["tile_exchange"]) for step in steps)
    assert dict(plan.cost_breakdown)["exchange"] == exchange, (plan.partition, steps)


@pytest.mark.parametrize("m,k,n,dtype,partials,serial", [(256, 256, 256, HALF, "half", "out_chan"),
                                                           (128, 512, 128, FLOAT, "float", "in_chan"),
                                                           (512, 64, 512, HALF, "float", "out_chan")])
def test_serial_splits_engine_cycles_match_the_plan(m, k, n, dtype, partials, serial):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the planner warns that the tiny budget cannot be met
        plan, cycles, got, want = mat_mul_fidelity(m, k, n, dtype, partials, memory=0.005)
    assert plan.serial_splits[serial] > 1
    np.testing.assert_array_equal(got.astype(np.float32), want)
    _check(plan, cycles, f"[{m},{k}] @ [{k},{n}] {dtype.name}, {partials} partials, {serial} serial split")


CONVS = [  # dtype, partials, batch, field, kernel, cin, cout, groups, stride, padding
    (FLOAT, "float", 1, (8, 8), (3, 3), 8, 8, 1, None, (1, 1)),
    (HALF, "half", 2, (8, 8), (3, 3), 16, 16, 1, None, (1, 1)),
    (HALF, "float", 1, (8, 8), (1, 1), 32, 32, 1, None, None),
    (FLOAT, "float", 1, (9, 9), (3, 3), 8, 8, 1, (2, 2), None),
    (HALF, "half", 1, (8, 8), (3, 3), 8, 8, 4, None, (1, 1)),
    (HALF, "float", 1, (8, 8), (3, 3), 1, 1, 32, None, (1, 1)),   # depthwise: VMAC
    (FLOAT, "float", 1, (8, 8), (3, 3), 2, 8, 1, None, (1, 1)),   # 2 in-channels
]


@pytest.mark.parametrize("dtype,partials,batch,field,kernel,cin,cout,groups,stride,padding", CONVS)
def test_convolution_engine_cycles_match_the_plan(dtype, partials, batch, field, kernel, cin, cout, groups, stride,
                                                  padding):
    plan, cycles = conv_fidelity(dtype, partials, batch, field, kernel, cin, cout, groups, stride, padding)
    _check(plan, cycles, f"conv {dtype.name}/{partials} batch {batch} field {field} kernel {kernel} "
                         f"{cin}->{cout} x{groups} stride {stride}")


def test_a_kernel_split_convolution_matches_the_plan():
    """Split over the kernel's rows, each tile gets the input rows its kernel rows read, and
    the partials of the three splits are reduced: the plan charges that exchange and
    reduction as the engine runs them."""
    plan, cycles = conv_fidelity(FLOAT, "float", 1, (14, 14), (3, 3), 64, 64, padding=(1, 1),
                                 constraints='{"0": {"partition": {"kernelSplit": {"0": 3}}}}')
    assert plan.partition.kernel_split == (3, 1)
    assert dict(plan.cost_breakdown)["reduce"] > 0
    _check(plan, cycles, "conv 3x3 14x14 64->64 split over the kernel's rows")


SLOW_MAT_MULS = [(m, k, n, t, p) for m, k, n in ((1, 200, 64), (200, 8, 200), (33, 65, 17), (128, 256, 64),
                                                 (250, 250, 250))
                 for t, p in ((FLOAT, "float"), (HALF, "half"), (HALF, "float"))]


@pytest.mark.slow
@pytest.mark.parametrize("m,k,n,dtype,partials", SLOW_MAT_MULS)
def test_mat_mul_engine_cycles_match_the_plan_wider_grid(m, k, n, dtype, partials):
    plan, cycles, got, want = mat_mul_fidelity(m, k, n, dtype, partials)
    np.testing.assert_array_equal(got.astype(np.float32), want)
    _check(plan, cycles, f"[{m},{k}] @ [{k},{n}] {dtype.name}, {partials} partials")


def test_the_planner_offers_only_runnable_vertices():
    target = _device().target
    for dtype, partials in ((FLOAT, "float"), (HALF, "half"), (HALF, "float")):
        for shape in ((100, 100, 100), (8, 300, 8), (300, 8, 300)):
            params = for_mat_mul(dtype, (shape[0], shape[1]), (shape[1], shape[2]))
            plan = poplin.get_plan(target, params, {"partialsType": partials})
            m = plan.method
            assert amp_configs.is_runnable(dtype, plan.partials_type, m.conv_units, m.conv_input_load_elems), plan
    # half inputs with float partials: PopLibs has no 16-unit, 64-bit-load vertex
    assert amp_configs.unit_options(HALF, FLOAT, 4, 16) == [8]
    assert amp_configs.unit_options(HALF, HALF, 4, 16) == [16, 8]


def test_an_unrunnable_plan_raises_instead_of_running_another_vertex():
    device = _device()
    g = popsim.Graph(device.target)
    a = poplin.create_mat_mul_input_lhs(g, HALF, (32, 32), (32, 32), "a", options={"partialsType": "float"})
    b = poplin.create_mat_mul_input_rhs(g, HALF, (32, 32), (32, 32), "b", options={"partialsType": "float"})
    plan = poplin.get_mat_mul_plan(g, HALF, (32, 32), (32, 32), options={"partialsType": "float"})
    bad = dataclasses.replace(plan, method=Method("AMP", 16, 4))
    out = g.add_variable(HALF, (1, 32, 32), "c")
    with pytest.raises(PoplibsError, match="16 conv units x 4 input load elements.*no ConvPartial1x1Out"):
        mat_mul_execute.execute_mat_mul(g, a.expand([0]), b.expand([0]), out, bad, Sequence(), "mm")
