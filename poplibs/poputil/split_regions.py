"""Splitting regions of elements into partitions (PopLibs' poputil::splitRegions and
splitRegionsBetweenWorkers, lib/poputil/Util.cpp splitRegionsAux): how PopLibs shares
a tensor out between tiles and a tile's elements out between worker threads.

The regions are taken as one run of ``total`` elements, cut into grains of
``grain_size`` (the last may be short), and the grains dealt out evenly and in order to
as few partitions as keep each within the limits; a partition is the list of (pieces of)
regions its grains cover, in order.
"""
import numbers
from typing import List, Optional, Sequence, Tuple

import popsim

from .checks import check_count
from .errors import PoplibsError

Interval = Tuple[int, int]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _intervals(regions, what: str) -> List[Interval]:
    """The regions as (begin, end) integer pairs with begin <= end; empty ones dropped."""
    try:
        items = list(regions)
    except TypeError:
        raise popsim.TypeError(f"{what}: expected a list of (begin, end) regions, "
                               f"found {type(regions).__name__}") from None
    out = []
    for i, region in enumerate(items):
        try:
            begin, end = region
        except (TypeError, ValueError):
            raise PoplibsError(f"{what}: region {i} is {region!r}, expected a (begin, end) pair of element "
                               "indices") from None
        if not all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in (begin, end)):
            raise PoplibsError(f"{what}: region {i} is {region!r}, expected whole-number bounds")
        if not 0 <= begin <= end:
            raise PoplibsError(f"{what}: region {i} is [{begin}, {end}), expected 0 <= begin <= end")
        if end > begin:
            out.append((int(begin), int(end)))
    return out


def split_regions(regions: Sequence[Interval], grain_size: int, max_partitions: int,
                  min_elements_per_partition: int = 0, max_elements_per_partition: Optional[int] = None,
                  max_elements_per_region: Optional[int] = None) -> List[List[Interval]]:
    """The regions dealt out to at most ``max_partitions`` partitions, PopLibs' splitRegions
    step by step: ``partitions[v]`` lists the (begin, end) pieces of partition v, in the
    order of ``regions``. Partitions get whole grains (only the last grain of all may be
    short) and, where ``min_elements_per_partition`` allows, are as many as permitted;
    ``max_elements_per_partition`` caps a partition's size (None: no cap), and a piece of
    one region longer than ``max_elements_per_region`` (rounded down to whole grains) is
    cut into several. Empty partitions are not listed."""
    what = "split_regions"
    items = _intervals(regions, what)
    grain = check_count(grain_size, what, "grain_size", low=1)
    max_parts = check_count(max_partitions, what, "max_partitions", low=1)
    min_size = check_count(min_elements_per_partition, what, "min_elements_per_partition", low=0)
    total = sum(e - b for b, e in items)
    if total == 0:
        return []
    num_grains = _ceil_div(total, grain)
    max_grains = _ceil_div(num_grains, max_parts)
    if max_elements_per_partition is not None:
        max_size = check_count(max_elements_per_partition, what, "max_elements_per_partition", low=1)
        if max_size < grain:
            raise PoplibsError(f"{what}: max_elements_per_partition ({max_size}) is smaller than grain_size "
                               f"({grain}): a partition must hold at least one grain; raise it or lower the grain")
        max_grains = min(max_grains, max_size // grain)
    if min_size:
        min_grains = _ceil_div(min_size, grain)
        max_vertices = max(1, num_grains // min_grains)
        max_grains = max(max_grains, _ceil_div(num_grains, max_vertices))
    piece_limit = total
    if max_elements_per_region is not None:
        piece_limit = check_count(max_elements_per_region, what, "max_elements_per_region", low=1) // grain * grain
        if piece_limit == 0:
            raise PoplibsError(f"{what}: max_elements_per_region ({max_elements_per_region}) is smaller than "
                               f"grain_size ({grain}): a piece of a region must hold at least one grain")
    parts = _ceil_div(num_grains, max_grains)
    partitions: List[List[Interval]] = []
    region, offset = 0, 0  # the next element to deal out: items[region][0] + offset
    for v in range(parts):
        g_begin, g_end = v * num_grains // parts, (v + 1) * num_grains // parts
        size = min(total, g_end * grain) - g_begin * grain
        pieces: List[Interval] = []
        while size:
            begin, end = items[region]
            if offset == end - begin:
                region, offset = region + 1, 0
                continue
            take = min(size, end - begin - offset, piece_limit)
            pieces.append((begin + offset, begin + offset + take))
            offset += take
            size -= take
        partitions.append(pieces)
    return partitions


def split_regions_between_workers(target, regions: Sequence[Interval], grain_size: int,
                                  min_elements_per_partition: int = 0,
                                  max_elements_per_partition: Optional[int] = None,
                                  max_elements_per_region: Optional[int] = None) -> List[List[Interval]]:
    """``split_regions`` with one partition per worker context of the target at most (6 on
    an IPU): what each worker thread of a tile's vertices works on (PopLibs'
    splitRegionsBetweenWorkers; pass ``graph.target``)."""
    if not isinstance(target, popsim.Target):
        raise popsim.TypeError(f"split_regions_between_workers: expected a popsim.Target (graph.target), found "
                               f"{type(target).__name__}")
    return split_regions(regions, grain_size, target.num_worker_contexts, min_elements_per_partition,
                         max_elements_per_partition, max_elements_per_region)
