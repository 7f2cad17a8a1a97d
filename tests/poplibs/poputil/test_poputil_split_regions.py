"""poputil.split_regions and split_regions_between_workers: examples worked by hand from
PopLibs' splitRegionsAux (PopLibs' documentation), properties over random
regions, agreement with the linear tile mapping, and errors."""
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, poputil


@pytest.mark.parametrize("args, expected", [
    # 10 grains of 1 over 4: at most ceil(10/4) = 3 a partition -> 4 partitions, grains [v*10/4, (v+1)*10/4)
    (([(0, 10)], 1, 4), [[(0, 2)], [(2, 5)], [(5, 7)], [(7, 10)]]),
    # 8 elements in grains of 2 across two regions: 4 grains, 2 a partition; the grain [2, 4) spans both regions
    (([(0, 3), (10, 15)], 2, 3), [[(0, 3), (10, 11)], [(11, 15)]]),
    # a short last grain: 10 elements in grains of 4 -> 3 grains, one a partition
    (([(0, 10)], 4, 6), [[(0, 4)], [(4, 8)], [(8, 10)]]),
    # minimum 30: at most 100 // 30 = 3 partitions, ceil(100/3) = 34 grains a partition -> 3 partitions
    (([(0, 100)], 1, 6, 30), [[(0, 33)], [(33, 66)], [(66, 100)]]),
    # maximum 30 a partition wins over max_partitions: min(ceil(100/2), 30) = 30 -> 4 partitions of 25
    (([(0, 100)], 1, 2, 0, 30), [[(0, 25)], [(25, 50)], [(50, 75)], [(75, 100)]]),
    # pieces of one region cut at 5 rounded down to whole grains of 2: 4
    (([(0, 10)], 2, 1, 0, None, 5), [[(0, 4), (4, 8), (8, 10)]]),
    # scattered single elements, in the given order (not sorted)
    (([(9, 10), (5, 6), (7, 8)], 1, 2), [[(9, 10)], [(5, 6), (7, 8)]]),
    # empty regions are skipped; nothing at all gives no partitions
    (([(3, 3), (4, 6), (6, 6)], 1, 6), [[(4, 5)], [(5, 6)]]),
    (([], 1, 6), []),
    (([(2, 2)], 4, 6), []),
])
def test_hand_worked_examples(args, expected):
    assert poputil.split_regions(*args) == expected


def _flat(partitions):
    """The pieces of all partitions, adjacent ones merged: must give back the regions."""
    merged = []
    for part in partitions:
        for b, e in part:
            if merged and merged[-1][1] == b:
                merged[-1] = (merged[-1][0], e)
            else:
                merged.append((b, e))
    return merged


@st.composite
def _regions(draw):
    """Disjoint regions in any order (adjacent regions merged, so the round trip is exact)."""
    sizes = draw(st.lists(st.integers(1, 40), max_size=8))
    gaps = draw(st.lists(st.integers(1, 5), min_size=len(sizes), max_size=len(sizes)))
    regions, at = [], 0
    for size, gap in zip(sizes, gaps):
        at += gap
        regions.append((at, at + size))
        at += size
    return draw(st.permutations(regions))


def _merged(regions):
    return _flat([regions])


@settings(max_examples=300, deadline=None)
@given(_regions(), st.integers(1, 8), st.integers(1, 10), st.integers(0, 60),
       st.one_of(st.none(), st.integers(8, 80)), st.one_of(st.none(), st.integers(8, 50)))
def test_properties(regions, grain, max_parts, min_size, max_size, max_region):
    parts = poputil.split_regions(regions, grain, max_parts, min_size, max_size, max_region)
    total = sum(e - b for b, e in regions)
    # every element exactly once, in the order of the regions
    assert _flat(parts) == _merged(regions)
    assert all(part for part in parts)
    sizes = [sum(e - b for b, e in part) for part in parts]
    num_grains = -(-total // grain)
    # whole grains: every partition but the last is a multiple of the grain
    assert all(s % grain == 0 for s in sizes[:-1])
    if max_size is None:
        assert len(parts) <= max_parts
    elif min_size == 0:
        assert max(sizes, default=0) <= max_size // grain * grain
    if min_size and parts:
        # as PopLibs promises: each partition has at least min(ceil(min/grain), all) grains
        min_grains = min(-(-min_size // grain), num_grains)
        assert min(-(-s // grain) for s in sizes) >= min_grains
    if max_region is not None:
        assert all(e - b <= max_region // grain * grain for part in parts for b, e in part)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 5000), st.integers(1, 8), st.integers(0, 200), st.integers(1, 64))
def test_linear_mapping_is_split_regions_of_the_whole_tensor(n, grain, min_size, tiles):
    """Graph.linear_mapping (PopLibs' calcLinearTileMapping) puts partition v of
    split_regions([(0, n)], grain, tiles, min) on tile v."""
    target = popsim.Target.create_ipu_target(tiles_per_ipu=tiles)
    g = popsim.Graph(target)
    t = g.add_variable(FLOAT, (n,), "t")
    mapping = poputil.calc_linear_tile_mapping(g, t, min_size, grain)
    parts = poputil.split_regions([(0, n)], grain, tiles, min_size)
    assert mapping == parts + [[] for _ in range(tiles - len(parts))]


@settings(max_examples=100, deadline=None)
@given(_regions(), st.integers(1, 4), st.integers(0, 20))
def test_worker_split_covers_the_regions(regions, grain, min_size):
    target = popsim.IPUModel("ipu2").create_device().target
    parts = poputil.split_regions_between_workers(target, regions, grain, min_size)
    assert len(parts) <= target.num_worker_contexts == 6
    assert _flat(parts) == _merged(regions)
    assert parts == poputil.split_regions(regions, grain, 6, min_size)


def test_worker_count_comes_from_the_target():
    target = popsim.Target.create_ipu_target(tiles_per_ipu=4).with_changes(num_worker_contexts=2)
    assert poputil.split_regions_between_workers(target, [(0, 12)], 1) == [[(0, 6)], [(6, 12)]]


@pytest.mark.parametrize("args, message", [
    (([(0, 4)], 0, 6), "split_regions: grain_size must be >= 1, found 0"),
    (([(0, 4)], 1, 0), "split_regions: max_partitions must be >= 1, found 0"),
    (([(0, 4)], 1, 6, -1), "min_elements_per_partition must be >= 0, found -1"),
    (([(0, 4)], 4, 6, 0, 3), "max_elements_per_partition (3) is smaller than grain_size (4)"),
    (([(0, 4)], 4, 6, 0, None, 3), "max_elements_per_region (3) is smaller than grain_size (4)"),
    (([(0, 4), (5, 2)], 1, 6), "region 1 is [5, 2), expected 0 <= begin <= end"),
    (([(-1, 4)], 1, 6), "region 0 is [-1, 4), expected 0 <= begin <= end"),
    (([(0, 4, 8)], 1, 6), "region 0 is (0, 4, 8), expected a (begin, end) pair"),
    (([(0, 4.5)], 1, 6), "region 0 is (0, 4.5), expected whole-number bounds"),
    (([(0, 4)], 2.0, 6), "grain_size must be a whole number >= 1, found float 2.0"),
])
def test_bad_arguments(args, message):
    with pytest.raises(poputil.PoplibsError, match=re.escape(message)):
        poputil.split_regions(*args)


def test_bad_objects(graph):
    with pytest.raises(popsim.TypeError, match="expected a list of"):
        poputil.split_regions(5, 1, 6)
    with pytest.raises(popsim.TypeError, match=re.escape("expected a popsim.Target (graph.target), found Graph")):
        poputil.split_regions_between_workers(graph, [(0, 4)], 1)
