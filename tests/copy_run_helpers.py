"""Test helpers for copy tables as runs."""
import numpy as np

from popsim.contract import COLUMNS


def expand(runs):
    """The segments run rows copy, one element each, in order: written out from the
    meaning of the columns (native/core/executable.hpp, CopyRun), independently of
    copy_runs.runs_to_segments."""
    c = COLUMNS["copy_runs"]
    out = []
    for r in np.asarray(runs).tolist():
        for o in range(r[c["outer"]]):
            for i in range(r[c["count"]]):
                out.append((r[c["src"]] + o * r[c["outer_src"]] + i * r[c["src_stride"]],
                            r[c["dst"]] + o * r[c["outer_dst"]] + i * r[c["dst_stride"]], r[c["len"]]))
    return out
