"""Memory layout and per-tile accounting; tiles out of memory."""
import io
import re

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.lower import cost_model as _cm
from popsim.lower.layout import TILE_REGION_ALIGNMENT
from popsim.program import Sequence

from graph_helpers import mapped


def test_tutorial1_memory_per_tile(device):
    g = popsim.Graph(device)
    v1, v2, v3, v4 = (g.add_variable(FLOAT, [4], "v1"), g.add_variable(FLOAT, [4], "v2"),
                      g.add_variable(FLOAT, [4, 4], "v3"), g.add_variable(INT, [10], "v4"))
    for t in (v1, v3, v4):
        g.set_tile_mapping(t, 0)
    for i in range(4):
        g.set_tile_mapping(v2[i], i)
    c = g.add_constant(FLOAT, [4], [1, 2, 3, 4])
    g.set_tile_mapping(c, 0)
    m = popsim.Engine(g, popsim.Sequence()).get_report().memory
    pad = TILE_REGION_ALIGNMENT
    assert m.by_category["variables"][0] == 16 + 64 + 40 + pad
    assert m.by_category["variables"][1:4] == [pad] * 3
    assert m.by_category["constants"][0] == 16
    # every tile holds the control program (one HALT here) and the stacks of its 6 workers and supervisor
    from popsim.lower import cost_model as cm
    assert m.by_category["control_code"] == [cm.CONTROL_CODE_BYTES] * 1472
    assert m.by_category["stack"] == [6 * cm.WORKER_STACK_BYTES + cm.SUPERVISOR_STACK_BYTES] * 1472
    fixed = cm.CONTROL_CODE_BYTES + 6 * cm.WORKER_STACK_BYTES + cm.SUPERVISOR_STACK_BYTES
    assert m.max_tile == 0 and m.max_bytes == 16 + 64 + 40 + pad + 16 + fixed
    assert m.total == 16 + 64 + 40 + pad + 16 + 3 * pad + 1472 * fixed
    assert m.tiles_out_of_memory == []


def test_linear_mapping_memory_is_balanced(device):
    g = popsim.Graph(device)
    g.add_variable(FLOAT, [1472 * 64], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    memory = popsim.Engine(g, popsim.Sequence()).get_report().memory
    assert memory.by_category["variables"] == [256] * 1472


def test_out_of_memory_names_worst_tile(device):
    g = popsim.Graph(device)
    big = g.add_variable(FLOAT, [170_000], "big")
    g.set_tile_mapping(big, 11)
    small = g.add_variable(FLOAT, [10], "small")
    g.set_tile_mapping(small, 11)
    with pytest.raises(popsim.GraphMemoryAllocationError) as info:
        popsim.Engine(g, popsim.Sequence())
    msg = str(info.value)
    assert "1 tile(s)" in msg and "tile 11" in msg and "'big' (680,000 bytes)" in msg and "638,976" in msg
    assert "debug.allowOutOfMemory" in msg


def test_arena_offsets_are_aligned_and_disjoint(device):
    g = popsim.Graph(device)
    sizes = [1, 3, 17, 4, 100]
    for i, n in enumerate(sizes):
        t = g.add_variable(popsim.CHAR if i % 2 else FLOAT, [n], f"v{i}")
        g.set_tile_mapping(t, 0)
    layout = popsim.Engine(g, popsim.Sequence())._lowered.layout
    offsets = layout.var_offsets
    assert (offsets % 16 == 0).all()
    nbytes = np.array([v.nbytes for v in g._state.table.variables])
    assert (offsets[1:] >= offsets[:-1] + nbytes[:-1]).all()
    assert layout.arena_bytes >= offsets[-1] + nbytes[-1]


# Every tile also holds the control program (one instruction for an empty program) and the stacks.
FIXED_TILE_BYTES = _cm.CONTROL_CODE_BYTES + 6 * _cm.WORKER_STACK_BYTES + _cm.SUPERVISOR_STACK_BYTES


def _oom_graph(device):
    g = popsim.Graph(device)
    big = mapped(g, FLOAT, (200_000,), "big", tile=3)      # 800,000 bytes > 638,976
    mapped(g, FLOAT, (100,), "small_one", tile=3)
    mapped(g, FLOAT, (180_000,), "big2", tile=1)           # 720,000 bytes
    mapped(g, FLOAT, (1000,), "fits", tile=0)
    g.create_host_read("big-read", big)
    return g


def test_out_of_memory_names_worst_tile_and_its_tensors(device, no_env_options):
    g = _oom_graph(device)
    with pytest.raises(popsim.GraphMemoryAllocationError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "2 tile(s)" in msg
    assert "tile 3" in msg
    assert f"{800_400 + FIXED_TILE_BYTES:,} bytes" in msg       # 'big', 'small_one', code and stacks
    assert "638,976" in msg
    assert "'big' (800,000 bytes)" in msg and "'small_one'" in msg
    assert msg.index("'big'") < msg.index("'small_one'")  # largest first
    assert f"tile 1 ({720_000 + FIXED_TILE_BYTES:,} bytes)" in msg
    assert "'fits'" not in msg
    assert "debug.allowOutOfMemory" in msg  # how to get past it


def test_out_of_memory_single_tile(device, no_env_options):
    g = popsim.Graph(device)
    mapped(g, FLOAT, (200_000,), "big", tile=3)
    with pytest.raises(popsim.GraphMemoryAllocationError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "1 tile(s)" in msg and "tile 3" in msg and "'big'" in msg and "638,976" in msg


def test_linear_mapping_of_the_same_data_fits(device, no_env_options):
    g = popsim.Graph(device)
    g.add_variable(FLOAT, (200_000,), "big", mapping=popsim.VariableMappingMethod.LINEAR)
    popsim.Engine(g, Sequence())


def test_allow_out_of_memory_builds_reports_but_does_not_run(device, no_env_options):
    g = _oom_graph(device)
    e = popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": "true"})
    report = e.get_report()
    assert report.memory.max_tile == 3
    assert report.memory.max_bytes == 800_400 + FIXED_TILE_BYTES
    assert report.memory.tiles_out_of_memory == [1, 3]
    out = io.StringIO()
    e.print_profile_summary(out)
    assert "out of memory" in out.getvalue()
    e.load(device)
    with pytest.raises(popsim.EngineStateError) as info:
        e.run(0)
    msg = str(info.value)
    assert "debug.allowOutOfMemory" in msg
    assert "2 tile(s)" in msg and "out of memory" in msg
    assert "get_report" in msg  # what can still be done
    with pytest.raises(popsim.EngineStateError, match="debug.allowOutOfMemory"):
        e.read_tensor("big-read")


def test_allow_out_of_memory_run_error_names_the_worst_tile(device, no_env_options):
    g = _oom_graph(device)   # tile 3 needs 800,400 bytes, tile 1 720,000
    e = popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": "true"})
    e.load(device)
    with pytest.raises(popsim.EngineStateError, match=re.escape("worst: tile 3")):
        e.run(0)


def test_allow_out_of_memory_from_environment(device, monkeypatch):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "true"}')
    g = _oom_graph(device)
    e = popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": "false"})  # the environment wins
    assert e.get_report().memory.tiles_out_of_memory == [1, 3]
