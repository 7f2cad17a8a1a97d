"""The cycle model, checked against the documented formulas worked by hand."""
import math

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.lower import cost_model as cm
from popsim.program import Copy, If, PrintTensor, Repeat, Sequence, Sync, SyncType


def run_report(graph, device, programs):
    e = popsim.Engine(graph, programs)
    e.load(device)
    for h in e.list_streams():
        s = graph.get_stream(h)
        e.connect_stream(h, np.zeros(s.num_elements, s.dtype.numpy))
    e.run()
    return e.get_report()


def sync(device):
    return device.target.max_ipu_sync_delay


def test_cross_tile_copy(device):
    """v1 (tile 0) -> v2 (v2[i] on tile i): 4 bytes stay on tile 0, 12 bytes leave it."""
    g = popsim.Graph(device)
    v1, v2 = g.add_variable(FLOAT, [4], "v1"), g.add_variable(FLOAT, [4], "v2")
    g.set_tile_mapping(v1, 0)
    for i in range(4):
        g.set_tile_mapping(v2[i], i)
    r = run_report(g, device, Copy(v1, v2))
    t = device.target
    on_tile = math.ceil(4 / t.memcpy_bytes_per_cycle) + cm.COPY_RUN_OVERHEAD_CYCLES
    exchange = math.ceil(12 / t.exchange_bytes_per_cycle) + cm.EXCHANGE_OVERHEAD_CYCLES
    (step,) = r.execution.steps
    assert step.kind == "Copy" and step.count == 1
    assert step.cycles == on_tile + exchange + 2 * sync(device)
    assert step.tile_compute[0] == on_tile and sum(step.tile_compute) == on_tile
    assert step.tile_exchange[0] == exchange
    assert step.tile_exchange[1] == math.ceil(4 / 4) + cm.EXCHANGE_OVERHEAD_CYCLES
    n = t.num_tiles
    assert step.categories["compute_including_idle"] == pytest.approx(on_tile / n)
    assert step.categories["ipu_exchange"] == pytest.approx((exchange + 3 * (1 + cm.EXCHANGE_OVERHEAD_CYCLES)) / n)


def test_copy_balanced_over_tiles_costs_the_slowest_tile(device):
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [1472 * 100], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    b = g.add_variable(FLOAT, [1472 * 100], "b", mapping=popsim.VariableMappingMethod.LINEAR)
    (step,) = run_report(g, device, Copy(a, b)).execution.steps
    per_tile = 100 * 4
    assert step.cycles == math.ceil(per_tile / 8) + cm.COPY_RUN_OVERHEAD_CYCLES + sync(device)
    assert max(step.tile_exchange) == 0


def test_stream_copy_costs_host_bandwidth(device):
    g = popsim.Graph(device)
    v = g.add_variable(INT, [1000], "v", mapping=popsim.VariableMappingMethod.LINEAR)
    s = g.add_host_to_device_fifo("in", INT, 1000)
    (step,) = run_report(g, device, Copy(s, v)).execution.steps
    host = math.ceil(4000 / device.target.host_bytes_per_cycle) + cm.HOST_STREAM_OVERHEAD_CYCLES
    assert step.kind == "StreamCopy"
    assert step.cycles == host + sync(device)
    assert step.categories["host_exchange"] == host


def test_repeat_counts_every_iteration(device):
    g = popsim.Graph(device)
    x, y = g.add_variable(FLOAT, [1], "x"), g.add_variable(FLOAT, [1], "y")
    g.set_tile_mapping(x, 0)
    g.set_tile_mapping(y, 0)
    r = run_report(g, device, Repeat(1000, Copy(x, y)))
    copy, loop = r.execution.steps
    assert copy.count == 1000 and loop.count == 1000
    assert loop.cycles == 1000 * cm.LOOP_ITERATION_CYCLES
    assert r.execution.total_cycles == copy.cycles + loop.cycles


def test_categories_add_up_to_cycles(device):
    g = popsim.Graph(device)
    v = g.add_variable(INT, [8], "v", mapping=popsim.VariableMappingMethod.LINEAR)
    w = g.add_variable(INT, [8], "w")
    g.set_tile_mapping(w, 7)
    p = g.add_variable(INT, [], "p")
    g.set_tile_mapping(p, 3)
    s = g.add_host_to_device_fifo("in", INT, 8)
    prog = Sequence(Copy(s, v), Copy(v, w), If(p, Copy(w, v)), Sync(SyncType.EXTERNAL), PrintTensor(w),
                    Repeat(2, Copy(w, v)))
    r = run_report(g, device, prog)
    for step in r.execution.steps:
        parts = sum(v for k, v in step.categories.items() if k != "compute_excluding_idle")
        assert parts == pytest.approx(step.cycles), step.name
    assert r.execution.total_cycles == pytest.approx(sum(s.cycles for s in r.execution.steps))


def test_cpu_target_has_no_cycles(cpu_device):
    g = popsim.Graph(cpu_device)
    x, y = g.add_variable(FLOAT, [4], "x"), g.add_variable(FLOAT, [4], "y")
    r = run_report(g, cpu_device, Repeat(3, Copy(x, y)))
    assert r.execution.total_cycles == 0
    assert all(s.count == 3 for s in r.execution.steps)
