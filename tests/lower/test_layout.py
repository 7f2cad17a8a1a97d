"""Memory layout and per-tile accounting."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.lower.layout import TILE_REGION_ALIGNMENT


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
