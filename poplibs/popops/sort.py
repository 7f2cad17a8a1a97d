"""Sorting and top-k (PopLibs' popops/Sort.hpp, TopK.hpp): ``sort``, ``sort_in_place``,
``sort_key_value``, ``sort_key_value_in_place``, ``top_k_with_permutation``,
``TopKParams`` and ``SortOrder``.

Every one of them rolls the sorted dimension to the end and sorts the rows on the device
with a bitonic network, as PopLibs' top-k does (BitonicTopK.cpp; PopLibs' sort functions
are top-k with k = n): sort_network.py lays the network out over the tiles holding the
input, sort_vertices.py holds its compare-and-swap vertices. The memory this takes grows
with the data: two work copies of the keys (and of the values), mapped like the input,
and a few words of vertex state per worker and stage.

Comparison is ``<`` on the keys (descending: ``>``); NaNs compare false and are not
ordered. The network is not stable: equal keys may come in any order.
"""
import enum
import numpy as np

import popsim
from popsim import UNSIGNED_INT
from popsim.program import Copy

from ..poputil import PoplibsError
from ..poputil.checks import check_flag, check_graph, check_name, check_tensor
from .dynamic_slice import check_prog, describe
from .sort_network import network_stages, sort_rows
from .sort_vertices import KEY_TYPES, compare_and_swap_cycles

__all__ = ["SortOrder", "TopKParams", "sort", "sort_in_place", "sort_key_value", "sort_key_value_in_place",
           "top_k_with_permutation", "network_stages", "compare_and_swap_cycles"]


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



def _check_pair(graph, keys, values, dim, prog, what: str) -> int:
    dim = _check_sort(graph, keys, dim, prog, what, "keys")
    _check_sort(graph, values, dim, prog, what, "values")
    if tuple(keys.shape) != tuple(values.shape):
        raise PoplibsError(f"{what}: the keys {describe(keys)} and values {describe(values)} must have the same "
                           f"shape")
    return dim


def _check_writable(t, what: str, role: str) -> None:
    if t.contains_constant():
        raise PoplibsError(f"{what}: the {role} {describe(t)} is sorted in place, so it must not hold constants; "
                           f"copy it into a variable first, or use the out-of-place form")
    if t.contains_aliases():
        raise PoplibsError(f"{what}: the {role} {describe(t)} is sorted in place, so it must not refer to any "
                           f"element twice (a broadcast view does); copy it into a variable first")


def _rows(t, dim: int):
    n = t.shape[dim]
    view = t.dim_roll(dim, t.rank - 1)
    return view.reshape((t.num_elements() // n if n else 0, n))


def _name(name, what: str) -> str:
    check_name(name, what)
    return name or what


def sort(graph, t, dim, prog, name: str = ""):
    """PopLibs' sort: a new tensor (mapped like ``t``) holding ``t`` sorted ascending
    along ``dim``; ``t`` is not changed."""
    what = "popops.sort"
    dim = _check_sort(graph, t, dim, prog, what, "tensor")
    name = _name(name, what)
    out = graph.clone(t, f"{name}/sorted")
    done = sort_rows(graph, _rows(t, dim), None, False, prog, name)
    prog.add(Copy(t, out) if done is None else Copy(done[0], _rows(out, dim).flatten()))
    return out


def sort_in_place(graph, t, dim, prog, name: str = "") -> None:
    """PopLibs' sortInPlace: ``t`` sorted ascending along ``dim``, in place."""
    what = "popops.sort_in_place"
    dim = _check_sort(graph, t, dim, prog, what, "tensor")
    _check_writable(t, what, "tensor")
    done = sort_rows(graph, _rows(t, dim), None, False, prog, _name(name, what))
    if done is not None:
        prog.add(Copy(done[0], _rows(t, dim).flatten()))


def sort_key_value(graph, keys, values, dim, prog, name: str = ""):
    """PopLibs' sortKeyValue: a new tensor holding ``values`` permuted as sorting ``keys``
    ascending along ``dim`` permutes them (the keys are not changed)."""
    what = "popops.sort_key_value"
    dim = _check_pair(graph, keys, values, dim, prog, what)
    name = _name(name, what)
    out = graph.clone(values, f"{name}/sorted")
    done = sort_rows(graph, _rows(keys, dim), _rows(values, dim), False, prog, name)
    prog.add(Copy(values, out) if done is None else Copy(done[1], _rows(out, dim).flatten()))
    return out


def sort_key_value_in_place(graph, keys, values, dim, prog, name: str = "") -> None:
    """PopLibs' sortKeyValueInPlace: ``keys`` sorted ascending along ``dim`` in place and
    ``values`` permuted the same way (equal keys: their values in any order). Keys and
    values must not share elements."""
    what = "popops.sort_key_value_in_place"
    dim = _check_pair(graph, keys, values, dim, prog, what)
    _check_writable(keys, what, "keys")
    _check_writable(values, what, "values")
    if keys.intersects_with(values):
        raise PoplibsError(f"{what}: the keys {describe(keys)} and values {describe(values)} share elements; "
                           f"PopLibs leaves the result undefined: sort separate tensors")
    done = sort_rows(graph, _rows(keys, dim), _rows(values, dim), False, prog, _name(name, what))
    if done is not None:
        prog.add(Copy(done[0], _rows(keys, dim).flatten()))
        prog.add(Copy(done[1], _rows(values, dim).flatten()))


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
    name = _name(name, "topK")
    positions = np.broadcast_to(np.arange(n, dtype=np.uint32), t.shape)
    iota = graph.add_constant(UNSIGNED_INT, t.shape, positions, f"{name}/positions")
    graph.set_tile_mapping(iota, graph.get_tile_mapping(t))
    keys, indices = _rows(t, dim), _rows(iota, dim)
    done = sort_rows(graph, keys, indices, params.largest, prog, name)
    if done is None:  # nothing to compare: copies, so the results are new tensors as PopLibs'
        keys, indices = graph.clone(keys, f"{name}/keys"), graph.clone(keys, f"{name}/indices", UNSIGNED_INT)
        prog.add(Copy(_rows(t, dim), keys))
        prog.add(Copy(_rows(iota, dim), indices))
    else:
        keys, indices = done[0].reshape(keys.shape), done[1].reshape(keys.shape)
    shape = tuple(t.shape[:-1]) + (params.k,)
    values, order = keys.slice(0, params.k, 1).reshape(shape), indices.slice(0, params.k, 1).reshape(shape)
    natural = SortOrder.DESCENDING if params.largest else SortOrder.ASCENDING
    if params.sort_order not in (SortOrder.NONE, natural):
        values, order = values.reverse(dim), order.reverse(dim)
    return values, order
