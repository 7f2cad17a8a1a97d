"""Sorting and top-k (PopLibs' popops/Sort.hpp, TopK.hpp): ``sort``,
``sort_key_value``, ``top_k_with_permutation``, ``TopKParams`` and ``SortOrder``.

The sort runs on the device as a bitonic sorting network, as PopLibs' top-k does
(BitonicTopK.cpp): the sorted dimension is rolled to the end, each row's ``n`` elements
are sorted by ``log2(N)(log2(N)+1)/2`` stages (``N`` the power of two >= n), each one
compute set of ``popops::CompareAndSwapAtDistance<T>`` vertices
(``...KeyVal<K,V>`` to carry values with the keys). A stage compares pairs of elements
and puts the one that comes first at the lower index: for block size k = 2, 4, .., N,
first element ``b+i`` against ``b+k-1-i`` (the block's halves, the second reversed),
then ``b+i`` against ``b+i+d`` for d = k/4, .., 1. Every comparator points the same way,
so a network for N sorts n < N elements by leaving out the comparators that reach past
n (those would face virtual elements that sort last). The pairs of a stage form runs
(a run of lower indices against a run of upper ones); each run goes to a vertex on the
tile holding its first lower element, that tile's runs shared between up to 6 vertices
(one per worker). Elements on other tiles are exchanged in and out.

Comparison is ``<`` on the keys (descending: ``>``); NaNs compare false and are not
ordered. The network is not stable: equal keys may come in any order.
"""
import enum
from typing import List, Tuple

import numpy as np

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, InOut, VectorList, Vertex
from popsim.program import Copy, Execute

from ..poputil import PoplibsError
from ..poputil.checks import check_flag, check_graph, check_tensor
from .dynamic_slice import check_prog, describe

__all__ = ["SortOrder", "TopKParams", "sort", "sort_key_value", "top_k_with_permutation"]

KEY_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT)


class SortOrder(enum.Enum):
    """PopLibs' popops::SortOrder."""
    NONE = 0
    ASCENDING = 1
    DESCENDING = 2


class TopKParams:
    """PopLibs' TopKParams: the ``k`` largest (or smallest) of the innermost dimension,
    returned in ``sort_order``; ``stable_sort`` is refused (the network is not stable)."""

    def __init__(self, k: int, largest: bool = True, sort_order: SortOrder = SortOrder.DESCENDING,
                 stable_sort: bool = False):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise PoplibsError(f"popops.TopKParams: k must be a whole number >= 0, found {k!r}")
        if not isinstance(sort_order, SortOrder):
            raise PoplibsError(f"popops.TopKParams: sort_order must be a popops.SortOrder, found {sort_order!r}")
        largest = check_flag(largest, "popops.TopKParams", "largest")
        if check_flag(stable_sort, "popops.TopKParams", "stable_sort"):
            raise PoplibsError("popops.TopKParams: stable_sort=True is not supported (popsim's bitonic network "
                               "does not keep the order of equal keys); pass stable_sort=False")
        self.k, self.largest, self.sort_order, self.stable_sort = int(k), bool(largest), sort_order, False

    def __repr__(self) -> str:
        return f"TopKParams(k={self.k}, largest={self.largest}, sort_order={self.sort_order})"


def _compare_template(key_value: bool):
    name = "popops::CompareAndSwapAtDistanceKeyVal" if key_value else "popops::CompareAndSwapAtDistance"
    domains = {"key_type": KEY_TYPES, "value_type": KEY_TYPES} if key_value else {"key_type": KEY_TYPES}
    domains["descending"] = [False, True]

    def factory(key_type, value_type=None, descending=False):
        if key_value:
            class CompareAndSwapAtDistanceKeyVal(Vertex):
                lo: InOut[VectorList[key_type]]
                hi: InOut[VectorList[key_type]]
                loValues: InOut[VectorList[value_type]]
                hiValues: InOut[VectorList[value_type]]

                def compute(self):
                    for r in range(len(self.lo)):
                        a = self.lo[r]
                        b = self.hi[r]
                        va = self.loValues[r]
                        vb = self.hiValues[r]
                        for i in range(len(a)):
                            x = a[i]
                            y = b[i]
                            if (y > x) if descending else (y < x):
                                a[i] = y
                                b[i] = x
                                v = va[i]
                                va[i] = vb[i]
                                vb[i] = v
                    return True
            return CompareAndSwapAtDistanceKeyVal

        class CompareAndSwapAtDistance(Vertex):
            lo: InOut[VectorList[key_type]]
            hi: InOut[VectorList[key_type]]

            def compute(self):
                for r in range(len(self.lo)):
                    a = self.lo[r]
                    b = self.hi[r]
                    for i in range(len(a)):
                        x = a[i]
                        y = b[i]
                        if (y > x) if descending else (y < x):
                            a[i] = y
                            b[i] = x
                return True
        return CompareAndSwapAtDistance

    if key_value:
        def template(key_type, value_type, descending):
            return factory(key_type, value_type, descending)
    else:
        def template(key_type, descending):
            return factory(key_type, None, descending)
    template.__name__ = name.split("::")[1]
    return popsim.vertex_template(name, **domains)(template)


COMPARE = _compare_template(False)
COMPARE_KEY_VALUE = _compare_template(True)


def compare_and_swap_cycles(run_lengths: List[int], key_value: bool) -> int:
    """popsim's model (PopLibs' sources give no formula for these vertices): 10
    cycles of setup, 6 per run, then per pair 4 cycles (load both, compare, store both;
    6 when values move with the keys)."""
    return 10 + sum(6 + (6 if key_value else 4) * n for n in run_lengths)


def _ensure(graph, key_type, value_type, descending: bool) -> str:
    template = COMPARE if value_type is None else COMPARE_KEY_VALUE
    args = (key_type, descending) if value_type is None else (key_type, value_type, descending)
    name = template.vertex_name(*args)
    if not graph.has_codelet(name):
        graph.add_codelets(template[args])
        key_value = value_type is not None

        def estimate(info, target):
            return compare_and_swap_cycles(info.field_sizes("lo"), key_value)
        graph.register_perf_estimator(name, estimate)
    return name


def network_stages(n: int) -> List[List[Tuple[int, int, int, bool]]]:
    """The bitonic network's stages for ``n`` elements: each a list of runs ``(lo, hi,
    length, flipped)``: elements lo+i against hi+i, or against hi-i when flipped (the
    upper run reversed), i < length; comparators reaching past n left out."""
    stages = []
    k = 2
    while k // 2 < n:
        flip = []
        for b in range(0, n, k):
            # b+i against b+k-1-i for i < k/2, kept where b+k-1-i < n: i > b+k-1-n
            first = max(0, b + k - n)
            if first < k // 2:
                flip.append((b + first, b + k - 1 - first, k // 2 - first, True))
        stages.append(flip)
        d = k // 4
        while d >= 1:
            runs = []
            for b in range(0, n, 2 * d):
                length = min(d, n - b - d)
                if length > 0:
                    runs.append((b, b + d, length, False))
            stages.append(runs)
            d //= 2
        k *= 2
    return stages


def _rows(t, dim: int):
    n = t.shape[dim]
    view = t.dim_roll(dim, t.rank - 1)
    return view.reshape((t.num_elements() // n if n else 0, n))


def _sort_rows(graph, keys, values, descending: bool, prog, name: str) -> None:
    """Sort each row of the 2-D views ``keys`` (and ``values`` with them) in place."""
    rows, n = keys.shape
    if rows == 0 or n < 2:
        return
    flat_tiles = np.empty(keys.num_elements(), dtype=np.int64)
    for tile, intervals in enumerate(graph.get_tile_mapping(keys)):
        for b, e in intervals:
            flat_tiles[b:e] = tile
    vertex_type = _ensure(graph, keys.dtype, None if values is None else values.dtype, descending)
    workers = graph.target.num_worker_contexts
    for s, stage in enumerate(network_stages(n)):
        by_tile = {}
        for r in range(rows):
            for lo, hi, length, flipped in stage:
                upper = (lo, lo + length)
                lower = (hi - length + 1, hi + 1) if flipped else (hi, hi + length)
                by_tile.setdefault(int(flat_tiles[r * n + lo]), []).append((r, upper, lower, flipped))
        cs = graph.add_compute_set(f"{name}/stage{s}")
        for tile, runs in sorted(by_tile.items()):
            size = -(-len(runs) // workers)
            for w in range(0, len(runs), size):
                fields = {"lo": [], "hi": []}
                if values is not None:
                    fields.update(loValues=[], hiValues=[])
                for r, (lb, le), (hb, he), flipped in runs[w:w + size]:
                    for field, t in (("lo", keys), ("loValues", values)):
                        if t is not None:
                            fields[field].append(t[r].slice(lb, le))
                    for field, t in (("hi", keys), ("hiValues", values)):
                        if t is not None:
                            view = t[r].slice(hb, he)
                            fields[field].append(view.reverse(0) if flipped else view)
                v = graph.add_vertex(cs, vertex_type, fields)
                graph.set_tile_mapping(v, tile)
        prog.add(Execute(cs))


def _check_sort(graph, t, dim, prog, what: str, role: str) -> int:
    check_graph(graph, what)
    check_prog(prog, what)
    check_tensor(graph, t, what, role)
    if t.dtype not in KEY_TYPES:
        raise PoplibsError(f"{what}: the {role} {describe(t)} must be one of {', '.join(x.name for x in KEY_TYPES)}")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not 0 <= dim < max(t.rank, 1) \
            or t.rank == 0:
        raise PoplibsError(f"{what}: dim must be a dimension of the {role} {describe(t)} (0 to {t.rank - 1}), "
                           f"found {dim!r}")
    return int(dim)


def sort(graph, t, dim, prog, name: str = ""):
    """PopLibs' sort: a new tensor (mapped like ``t``) holding ``t`` sorted ascending
    along ``dim``."""
    what = "popops.sort"
    dim = _check_sort(graph, t, dim, prog, what, "tensor")
    out = graph.clone(t, name or f"{t.name}_sorted")
    prog.add(Copy(t, out))
    _sort_rows(graph, _rows(out, dim), None, False, prog, name or what)
    return out


def sort_key_value(graph, keys, values, dim, prog, name: str = ""):
    """PopLibs' sortKeyValue: a new tensor holding ``values`` permuted as sorting ``keys``
    ascending along ``dim`` permutes them (the keys are not changed)."""
    what = "popops.sort_key_value"
    dim = _check_sort(graph, keys, dim, prog, what, "keys")
    _check_sort(graph, values, dim, prog, what, "values")
    if tuple(keys.shape) != tuple(values.shape):
        raise PoplibsError(f"{what}: the keys {describe(keys)} and values {describe(values)} must have the same shape")
    sorted_keys = graph.clone(keys, f"{name or what}/keys")
    out = graph.clone(values, name or f"{values.name}_sorted")
    prog.add(Copy(keys, sorted_keys))
    prog.add(Copy(values, out))
    _sort_rows(graph, _rows(sorted_keys, dim), _rows(out, dim), False, prog, name or what)
    return out


def top_k_with_permutation(graph, prog, t, params: TopKParams, name: str = ""):
    """PopLibs' topKWithPermutation: ``(values, indices)`` of the ``params.k`` largest
    (``largest=False``: smallest) elements of ``t``'s innermost dimension, in
    ``params.sort_order`` (NONE: sorted as ``largest`` would put them); indices are
    UNSIGNED_INT positions in that dimension. Shapes: ``t.shape[:-1] + (k,)``."""
    what = "popops.top_k_with_permutation"
    if not isinstance(params, TopKParams):
        raise PoplibsError(f"{what}: params must be a popops.TopKParams, found {type(params).__name__}")
    dim = _check_sort(graph, t, max(t.rank - 1, 0) if isinstance(t, popsim.Tensor) else 0, prog, what, "input")
    n = t.shape[dim]
    if params.k > n:
        raise PoplibsError(f"{what}: k={params.k} is larger than the innermost dimension of {describe(t)} ({n})")
    name = name or "topK"
    keys = graph.clone(t, f"{name}/keys")
    prog.add(Copy(t, keys))
    positions = np.broadcast_to(np.arange(n, dtype=np.uint32), t.shape)
    iota = graph.add_constant(UNSIGNED_INT, t.shape, positions, f"{name}/positions")
    graph.set_tile_mapping(iota, graph.get_tile_mapping(t))
    indices = graph.clone(keys, f"{name}/indices", UNSIGNED_INT)
    prog.add(Copy(iota, indices))
    _sort_rows(graph, _rows(keys, dim), _rows(indices, dim), params.largest, prog, name)
    values, order = keys.slice(0, params.k, dim), indices.slice(0, params.k, dim)
    natural = SortOrder.DESCENDING if params.largest else SortOrder.ASCENDING
    if params.sort_order not in (SortOrder.NONE, natural):
        values, order = values.reverse(dim), order.reverse(dim)
    return values, order
