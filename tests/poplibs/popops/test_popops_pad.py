"""popops pad on the engine against numpy, its MappingMethods (ZERO, EDGE, NONE) and bad
arguments."""
import numpy as np
import pytest

from popsim import FLOAT, popops, poputil
from popsim.program import Sequence

from popops_harness import mapped, run


@pytest.mark.parametrize("lower,upper", [([1, 0], [0, 2]), ([0, 3], [2, 1]), ([-1, 1], [1, -2]), ([0, 0], [0, 0])])
def test_pad_against_numpy(g, small_device, lower, upper):
    t = mapped(g, FLOAT, "t")
    padded = popops.pad(g, t, lower, upper, 2.5)
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    _, (got,) = run(g, small_device, Sequence(), [padded], {t: values})
    trimmed = values[max(0, -lower[0]):4 - max(0, -upper[0]), max(0, -lower[1]):6 - max(0, -upper[1])]
    expected = np.pad(trimmed, [(max(0, lo), max(0, hi)) for lo, hi in zip(lower, upper)], constant_values=2.5)
    np.testing.assert_array_equal(got, expected)


def _padding_elements_per_tile(g, padded, lower, upper):
    """Elements of ``padded`` (2-D) outside the padded tensor's core, counted per tile."""
    core = np.zeros(padded.shape, bool)
    core[lower[0]:padded.shape[0] - upper[0], lower[1]:padded.shape[1] - upper[1]] = True
    counts = []
    for intervals in g.get_tile_mapping(padded, require_complete=False):
        counts.append(sum(int((~core.reshape(-1)[b:e]).sum()) for b, e in intervals))
    return counts


def test_pad_edge_mapping_spreads_a_large_padding_like_the_edges(g, small_device):
    """PopLibs' MappingMethod EDGE: each padding slice is mapped as the edge slice it
    extends, so a large padding (here 4 x 2 KB rows and columns) is not all on tile 0."""
    t = g.add_variable(FLOAT, (64, 512), "t")
    poputil.map_tensor_linearly(g, t)
    lower, upper = [2, 1], [2, 3]
    padded = popops.pad(g, t, lower, upper, -1.0, mapping=popops.MappingMethod.EDGE)
    per_tile = _padding_elements_per_tile(g, padded, lower, upper)
    total = (64 + 4) * (512 + 4) - 64 * 512
    assert sum(per_tile) == total   # every padding element is mapped
    assert per_tile[0] < total / 2 and per_tile[3] > total / 4   # the bottom rows live with t's last rows
    first_row, last_row = g.get_tile_mapping(t[0]), g.get_tile_mapping(t[63])
    assert g.get_tile_mapping(padded[0, 1:513]) == first_row and g.get_tile_mapping(padded[67, 1:513]) == last_row
    values = np.random.default_rng(0).standard_normal((64, 512)).astype(np.float32)
    _, (got,) = run(g, small_device, Sequence(), [padded], {t: values})
    np.testing.assert_array_equal(got, np.pad(values, [(2, 2), (1, 3)], constant_values=-1.0))


def test_pad_zero_and_none_mappings(g):
    """ZERO (PopLibs' default): every padding element on tile 0; NONE: left unmapped."""
    t = mapped(g, FLOAT, "t")
    zero = popops.pad(g, t, [1, 0], [0, 2])
    assert _padding_elements_per_tile(g, zero, [1, 0], [0, 2]) == [6 + 2 * 5, 0, 0, 0]
    none = popops.pad(g, t, [1, 0], [0, 2], mapping=popops.MappingMethod.NONE)
    assert sum(_padding_elements_per_tile(g, none, [1, 0], [0, 2])) == 0


def test_pad_mapping_errors(g):
    t = mapped(g, FLOAT, "t")
    with pytest.raises(poputil.PoplibsError, match="popops.pad: mapping must be a popops.MappingMethod"):
        popops.pad(g, t, [1, 0], [0, 0], mapping="EDGE")
    assert popops.pad(g, t, [-2, 0], [-2, 1], mapping=popops.MappingMethod.EDGE).shape == (0, 7)   # no rows
    with pytest.raises(poputil.PoplibsError, match="EDGE mapping .* dimension 0 of .* has no elements"):
        popops.pad(g, t.slice(0, 0, 0), [1, 0], [0, 0], mapping=popops.MappingMethod.EDGE)
    u = g.add_variable(FLOAT, (4, 6), "u")
    with pytest.raises(poputil.PoplibsError, match="EDGE mapping needs the edge of tensor 'u'.* on no tile"):
        popops.pad(g, u, [0, 1], [0, 0], mapping=popops.MappingMethod.EDGE)


def test_errors(g):
    t = mapped(g, FLOAT, "t")
    with pytest.raises(poputil.PoplibsError, match=r"popops.pad: lower \[1\] and upper \[1\] must have one entry"):
        popops.pad(g, t, [1], [1])
    with pytest.raises(poputil.PoplibsError, match="truncating 3 \\+ 2 elements of dimension 0"):
        popops.pad(g, t, [-3, 0], [-2, 0])
    assert g.num_vertices == 0


@pytest.mark.parametrize("lower", [5.5, "1", None])
def test_pad_counts_are_a_list_of_whole_numbers(g, lower):
    """A float was Python's TypeError ('float' object is not iterable)."""
    with pytest.raises(poputil.PoplibsError, match="popops.pad: lower must be a list of whole numbers"):
        popops.pad(g, mapped(g, FLOAT, "t"), lower, [0])
