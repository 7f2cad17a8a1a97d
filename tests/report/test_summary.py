"""The text summary's Memory Usage and Compilation sections, against the report's data."""
import io

import numpy as np

import popsim
from popsim import FLOAT
from popsim.program import Copy, Repeat, Sequence
from popsim.report.summary import _line, ipu_busy_cycles


def summary_of(device, options=None):
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [5000], "a")
    g.set_tile_mapping(a, 2)
    b = g.add_variable(FLOAT, [1472 * 4], "b", mapping=popsim.VariableMappingMethod.LINEAR)
    c = g.add_constant(FLOAT, [8], np.arange(8), "c")
    g.set_tile_mapping(c, 2)
    e = popsim.Engine(g, Copy(a[:8], b[:8]), options)
    out = io.StringIO()
    e.print_profile_summary(out)
    return out.getvalue(), e.get_report()


def test_memory_usage_section(device):
    text, r = summary_of(device)
    for label in ("Total for all tiles:", "Variables:", "Constants:", "Vertex instances and state:",
                  "Edge descriptors:", "Exchange buffers:", "Exchange code:", "Vertex code:", "Control code:",
                  "Stack:", "By Tile:", "Maximum:", "Tile(s) out of memory:", "Histogram (bytes per tile):",
                  "Fullest tiles:"):
        assert label in text, label
    assert f"on tile {r.memory.max_tile}" in text and r.memory.max_tile == 2
    assert "Tile 2:" in text and "largest tensors: a (19.5 kB), b (128 B), c (32 B)" in text
    histogram = text.split("Histogram (bytes per tile):")[1].split("Fullest tiles:")[0]
    counted = sum(int(line.split(":")[1].split()[0].replace(",", "")) for line in histogram.strip().splitlines())
    assert counted == 1472  # every tile in some range


def test_compilation_section(device, tmp_path):
    text, _ = summary_of(device)
    assert "Compilation:" in text and "Executable:" in text and "compiled" in text
    assert "lower graph:" in text
    text, _ = summary_of(device, {"popsim.cacheDir": str(tmp_path)})
    text, r = summary_of(device, {"popsim.cacheDir": str(tmp_path)})
    assert r.compilation.from_cache and "from the cache" in text


def two_ipu_report(runs=1):
    """2 IPUs of 8 tiles: a copy inside IPU 0 three times (IPU 1 has nothing to do meanwhile),
    then one across the IPU-Link, then another inside IPU 0."""
    model = popsim.IPUModel("ipu2")
    model.num_ipus, model.tiles_per_ipu = 2, 8
    device = model.create_device()
    g = popsim.Graph(device)
    a, b, c = (g.add_variable(FLOAT, [256], name) for name in "abc")
    for tensor, tile in ((a, 0), (b, 3), (c, 12)):
        g.set_tile_mapping(tensor, tile)
    e = popsim.Engine(g, Sequence(Repeat(3, Copy(a, b)), Copy(b, c), Copy(b, a)))
    e.load(device)
    for _ in range(runs):
        e.run(0)
    return e.get_report()


def test_execution_per_ipu(device):
    r = two_ipu_report(runs=2)
    x = r.execution
    steps = {s.name: s for s in x.steps}
    busy = ipu_busy_cycles(r)
    # each IPU: its steps' cycles (the join included), not its wait for the last at the end of a run
    assert busy == [sum(s.ipu_cycles[i] for s in x.steps) for i in range(2)]
    assert busy[0] == x.total_cycles > busy[1] > 0
    assert steps["Copy a -> b"].ipu_cycles[1] == 0 < steps["Copy a -> b"].ipu_cycles[0]
    text = r.summary({"showExecutionSteps": "true"})
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  Total cycles:"))
    assert "the last IPU's clock" in lines[at + 1]
    assert lines[at + 2] == _line("IPU 0 cycles", f"{busy[0]:,.0f} (busy until 100.0% of total)", 4)
    assert lines[at + 3] == _line("IPU 1 cycles", f"{busy[1]:,.0f} (busy until "
                                  f"{100 * busy[1] / x.total_cycles:.1f}% of total)", 4)
    assert lines[at + 4].startswith("  Tile average compute cycles")
    row = next(line for line in lines if line.endswith("  Copy a -> b"))
    s = steps["Copy a -> b"]
    assert f"{s.cycles:,.0f}  {s.ipu_cycles[0]:,.0f}/0 " in row
    assert "per IPU" in text and "IPU 0/IPU 1" in text
    # one IPU: none of it
    _, single = summary_of(device)
    one = single.summary({"showExecutionSteps": "true"})
    assert "IPU 0 cycles" not in one and "IPU 0/IPU 1" not in one and ipu_busy_cycles(single) == []
