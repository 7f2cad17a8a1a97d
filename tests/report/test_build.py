"""Building reports: the parts no run changes, built once and shared by a writer's reports."""
import numpy as np

import popsim
from popsim import FLOAT
from popsim.program import Copy, Execute, Sequence
from popsim.report.build import build_report, static_parts


def _engine(device):
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [1472 * 3], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    b = g.add_variable(FLOAT, [1472 * 3], "b")
    g.set_tile_mapping(b, 11)
    exe = popsim.compile_graph(g, Sequence(Copy(a, b), Execute(g.add_compute_set("nothing")), Copy(b, a)))
    e = popsim.Engine(exe)
    e.load(device)
    return exe, e


def test_shared_static_parts_give_the_same_reports(device):
    exe, e = _engine(device)
    options = {"debug.retainDebugInformation": "true"}
    shared = static_parts(exe)
    before = build_report(exe, options, e.execution_profile(), shared)
    assert before.to_dict() == build_report(exe, options, e.execution_profile()).to_dict()
    e.run(0)
    after = build_report(exe, options, e.execution_profile(), shared)
    assert after.to_dict() == build_report(exe, options, e.execution_profile()).to_dict()
    assert after.memory is before.memory  # built once
    assert after.execution.total_cycles > 0 == before.execution.total_cycles


def test_shared_memory_figures_are_computed_once(device):
    exe, _ = _engine(device)
    memory = static_parts(exe).memory
    assert memory.figures() is memory.figures()
    tiles = np.array(list(memory.by_category.values())).sum(axis=0)
    assert memory.max_tile == 11 == int(np.argmax(tiles)) and memory.total == int(tiles.sum())


def test_reports_handed_out_share_nothing(device):
    """get_report's parts are its own: a caller may change them (figures follow)."""
    exe, e = _engine(device)
    first, second = e.get_report(), e.get_report()
    assert first.memory is not second.memory and first.target is not second.target
    assert type(first.memory) is popsim.report.MemoryInfo
    assert type(static_parts(exe, shared=False).memory) is popsim.report.MemoryInfo
