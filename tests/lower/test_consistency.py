"""check_lowered (popsim/lower/consistency.py): the rows Python indexes with (the
hand-over's codelet names, messages, reports) are in range and agree with the tables the
core runs; each failure names the table, the row, what was expected and what was found.
It runs on every executable read, a verified cache entry included
(tests/test_executable_cache.py, tests/test_executable_fuzz.py)."""
import copy

import numpy as np
import pytest

import popsim
from popsim.contract import COLUMNS
from popsim.lower.consistency import check_lowered

from executable_sample import build

pytestmark = pytest.mark.compiler


@pytest.fixture(scope="module")
def lowered():
    g, progs = build(popsim.IPUModel("ipu2").create_device())
    return popsim.compile_graph(g, progs).lowered


def _set(table: str, row: int, column: str, value: int):
    def change(lw):
        rows = getattr(lw.vertices, table)
        rows[row, COLUMNS[table][column]] = value
    return change


def _group_tiles(lw):
    lw.vertices.group_tiles[1] = 7


def _cs_groups(lw):
    lw.vertices.cs_groups[1] = (0, 1)


def _shared_bytes(lw):
    lw.vertices.cs_shared_bytes.pop()


CHANGES = [
    (_set("vertices", 1, "codelet", 5), r"vertices.vertices \(codelet column\) row 1: expected 0..1, found 5"),
    (_set("vertices", 0, "codelet", -1), r"vertices.vertices \(codelet column\) row 0: expected 0..1, found -1"),
    (_set("vertices", 0, "tile", 1472), r"vertices.vertices \(tile column\) row 0: expected 0..1471, found 1472"),
    (_set("groups", 1, "tile", -3), r"vertices.groups \(tile column\) row 1: expected 0..1471, found -3"),
    (_group_tiles, r"vertices.group_tiles row 1: expected 1 \(as vertices.groups' tile column\), found 7"),
    (_set("compute_sets", 1, "first_group", 2), r"vertices.compute_sets row 1: tile groups out of range \(expected "
                                                r"within the 2 groups\)"),
    (_set("compute_sets", 0, "num_groups", -1), "vertices.compute_sets row 0: tile groups out of range"),
    (_cs_groups, r"vertices.cs_groups row 1: expected \[1, 1\] \(as vertices.compute_sets' first_group and "
                 r"num_groups columns\), found \[0, 1\]"),
    (_shared_bytes, "vertices.cs_.*: one per compute set expected"),
]


@pytest.mark.parametrize("change, message", CHANGES)
def test_rows_python_indexes_with_are_checked_and_named(lowered, change, message):
    check_lowered(lowered)
    bad = copy.deepcopy(lowered)
    change(bad)
    with pytest.raises(ValueError, match=message):
        check_lowered(bad)


def test_the_first_row_out_of_range_is_named_in_a_long_table(lowered):
    bad = copy.deepcopy(lowered)
    bad.vertices.row_type = np.zeros(len(bad.vertices.vertices), np.int64)
    bad.vertices.row_type[1] = 9
    with pytest.raises(ValueError, match="vertices.row_type row 1: expected 0..1, found 9"):
        check_lowered(bad)
