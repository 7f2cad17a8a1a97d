"""VariableTable (src/popsim/variables.py): runs of element ids within one variable."""
import numpy as np
import pytest

from popsim import FLOAT
from popsim.variables import VariableTable


def _starts_id_by_id(table, ids, cuts):
    """The definition: a run starts where the id is not the one before plus one, where the
    variable owning it (index_of) changes, and at each cut."""
    first = np.zeros(ids.size, bool)
    if ids.size:
        owner = table.index_of(ids)
        first[0] = True
        first[1:] = (ids[1:] != ids[:-1] + 1) | (owner[1:] != owner[:-1])
        first[cuts] = True
    return np.flatnonzero(first)


@pytest.mark.parametrize("seed", range(20))
def test_run_starts_cut_runs_where_the_owning_variable_changes(seed):
    rng = np.random.default_rng(seed)
    table = VariableTable()
    for k in range(int(rng.integers(1, 25))):
        table.add(f"v{k}", FLOAT, (int(rng.integers(0, 7)),))   # empty variables share their base
    total = table.next_base
    parts = [np.arange(0)]
    for _ in range(int(rng.integers(0, 8)) if total else 0):   # stretches of consecutive ids, across variables
        begin = int(rng.integers(0, total))
        parts.append(np.arange(begin, int(rng.integers(begin + 1, total + 1))))
    ids = np.concatenate(parts).astype(np.int64)
    cuts = np.unique(rng.integers(0, max(ids.size, 1), int(rng.integers(0, 4)))) if ids.size else np.arange(0)
    assert np.array_equal(table.run_starts(ids, cuts), _starts_id_by_id(table, ids, cuts))


def test_run_starts_of_one_stretch_over_three_variables():
    table = VariableTable()
    for name, size in (("a", 3), ("empty", 0), ("b", 2), ("c", 4)):
        table.add(name, FLOAT, (size,))
    assert table.run_starts(np.arange(1, 8)).tolist() == [0, 2, 4]   # ids 1-2 of a, 3-4 of b, 5-7 of c
