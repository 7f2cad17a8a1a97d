"""The text summary's Memory Usage and Compilation sections, against the report's data."""
import io

import numpy as np

import popsim
from popsim import FLOAT
from popsim.program import Copy


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
