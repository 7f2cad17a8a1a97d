"""The cycle cost table of Python vertices (popsim.codelet.op_costs) and its
documentation."""
from pathlib import Path

from popsim.codelet.op_costs import CYCLES


def test_cost_table_in_the_docs_matches_op_costs():
    import re
    doc = (Path(__file__).resolve().parents[2] / "docs" / "python_vertices.md").read_text()
    rows = re.findall(r"^\| (.+?) \| `(\w+)`( \.\.\.)? \| (\d+) \|$", doc, re.M)
    assert len(rows) > 20
    seen = set()
    for what, key, group, cycles in rows:
        names = [key] + (re.findall(r"[a-z0-9]+", what) if group else [])
        for name in names:
            if name in CYCLES:
                assert CYCLES[name] == int(cycles), name
                seen.add(name)
    assert seen == set(CYCLES)
