"""Graph: the variables, constants, tile mappings, compute sets, streams and host
handles a program works on. Virtual graphs share their parent's state and number
their tiles from 0."""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

import numpy as np
import numpy.typing as npt

from . import errors
from .arguments import as_int, as_size, found, plain
from .device import Device
from .graph_description import GraphDescription
from .dist import replica_block
from .errors import (DuplicateHandleError, GraphConnectionError, HandleError, InvalidTileMappingError, PopsimError,
                     StreamConnectionError, TensorCreationError, UnknownHandleError, did_you_mean)
from .linear_mapping import linear_tile_mapping
from .mapping import join_adjacent
from .poplar_names import SnakeCaseNames
from .program import Function, Program
from .quarter import checked_metadata
from .runs import MappingIndex, runs_of, split_at_positions, tile_intervals
from . import views
from .streams import DataStream, ReplicatedStreamMode, StreamDirection
from .target import Target
from .tensor import Tensor
from .types import ShapeLike, TypeLike, as_type, typed_array
from .variables import Variable, check_size
from .vertices import ComputeSet, VertexBuilding, VertexRef, count_vertices_and_edges

if TYPE_CHECKING:  # only for annotations
    from .vertex_store import FieldRef

__all__ = ["Graph", "VariableMappingMethod", "ComputeSet", "Function"]


class VariableMappingMethod(enum.Enum):
    NONE = "NONE"      # map it yourself with set_tile_mapping
    LINEAR = "LINEAR"  # spread evenly over the graph's tiles (poputil's linear mapping)


GraphTarget = Union[Target, Device]
#: a tile mapping as get_tile_mapping gives it: per tile, [begin, end) intervals of flat elements
TileMapping = Sequence[Sequence[Tuple[int, int]]]


class Graph(VertexBuilding, SnakeCaseNames):
    """A graph of tensors mapped onto tiles, built for a target (or a device's target).

    >>> graph = Graph(IPUModel().create_device())
    >>> v = graph.add_variable(FLOAT, (4,), "v")
    >>> graph.set_tile_mapping(v, 0)
    """

    def __init__(self, target: GraphTarget, replication_factor: int = 1):
        if isinstance(target, Device):
            target = target.target
        if not isinstance(target, Target):
            raise errors.TypeError(f"Graph needs a Target or a Device, found {type(target).__name__}")
        if isinstance(replication_factor, (bool, np.bool_)) or not isinstance(replication_factor, (int, np.integer)) \
                or replication_factor < 1:
            raise PopsimError(f"Graph: replication_factor must be a positive integer, found {replication_factor!r}")
        r = int(replication_factor)
        if target.num_ipus % r:
            factors = [d for d in range(1, target.num_ipus + 1) if target.num_ipus % d == 0]
            raise PopsimError(f"Graph: replication_factor {r} does not divide the target's {target.num_ipus} IPU(s): "
                              "every replica has the same number of IPUs; use one of "
                              f"{', '.join(map(str, factors))}, or a device with a multiple of {r} IPUs "
                              "(IPUModel.num_ipus)")
        replica_block(r, "Graph")  # several processes must share the replicas evenly
        # A replicated graph's target is ONE replica: the device's IPUs divided by the
        # replication factor, tiles numbered from 0 (Poplar's rule).
        replica = target if r == 1 else target.with_changes(num_ipus=target.num_ipus // r)
        self._state = GraphDescription(replica, r)
        self._tiles: Optional[np.ndarray] = None  # virtual graphs: physical tile of each local tile
        self._target = replica
        self._direct_tiles = replica.num_tiles  # see set_tile_mapping
        self._device_target = target  # what get_top_level_graph views

    # -- basics ---------------------------------------------------------------------------
    @property
    def target(self) -> Target:
        return self._target

    def get_target(self) -> Target:
        return self._target

    @property
    def replication_factor(self) -> int:
        """Replicas of this graph (1 for the top-level view of a replicated graph)."""
        return 1 if self._top_of_replicas else self._state.replication_factor

    def get_replication_factor(self) -> int:
        return self.replication_factor

    @property
    def description(self) -> GraphDescription:
        """What the graph holds, as lowering and the reference executor read it (shared
        with its virtual graphs)."""
        return self._state

    @property
    def num_vertices(self) -> int:
        return sum(len(cs.vertices) for cs in self._state.compute_sets)

    @property
    def num_edges(self) -> int:
        """Connected edges: one per edge field, one per sub-edge of list fields."""
        return count_vertices_and_edges(self._state.compute_sets)[1]

    @property
    def num_tiles(self) -> int:
        return self._target.num_tiles

    def __repr__(self) -> str:
        return f"Graph({self._target}, {len(self._state.table)} variables)"

    # -- tiles of virtual graphs -------------------------------------------------------------
    def _physical_tile(self, tile, what: str) -> int:
        if isinstance(tile, (bool, np.bool_)) or not isinstance(tile, (int, np.integer)):
            raise errors.TypeError(f"{what}: a tile must be an integer, found {found(tile)}")
        if self._top_of_replicas:
            raise InvalidTileMappingError(
                f"{what}: this is the top-level view of a graph replicated {self._state.replication_factor} times; "
                "popsim compiles one replica and runs it on every replica's IPUs, so tiles are placed in the "
                f"replicated graph itself (tiles 0..{self._state.target.num_tiles - 1} of one replica)")
        n = self._target.num_tiles
        if not 0 <= tile < n:
            scope = "virtual graph" if self._tiles is not None else \
                ("replica" if self._state.replication_factor > 1 else "target")
            raise InvalidTileMappingError(f"{what}: tile {int(tile)} is out of range: the {scope} has {n} tiles "
                                          f"(0..{n - 1})")
        return int(tile) if self._tiles is None else int(self._tiles[tile])

    def _local_tiles(self, physical: np.ndarray) -> np.ndarray:
        """Physical tile numbers as this graph's tile numbers (-1 where outside it)."""
        if self._tiles is None:
            return physical
        lookup = np.full(self._state.target.num_tiles, -1, np.int64)
        lookup[self._tiles] = np.arange(self._tiles.size)
        out = np.full(physical.shape, -1, np.int64)
        ok = physical >= 0
        out[ok] = lookup[physical[ok]]
        return out

    def create_virtual_graph(self, lower_or_tiles: Union[int, Sequence[int]],
                             upper_tile: Optional[int] = None) -> "Graph":
        """A graph over tiles [lower, upper) of this one (or over a list of its tiles),
        sharing its variables; tiles in the new graph are numbered from 0."""
        if upper_tile is None:
            if isinstance(lower_or_tiles, (str, bytes)) or not hasattr(lower_or_tiles, "__iter__"):
                raise errors.TypeError(f"create_virtual_graph: expected (lower_tile, upper_tile) or a list of tiles, "
                                       f"found {found(lower_or_tiles)}")
            local = np.asarray([as_int(t, "create_virtual_graph: a tile of the list", InvalidTileMappingError,
                                       low=0, high=self._target.num_tiles - 1) for t in lower_or_tiles], np.int64)
            if local.size == 0 or np.unique(local).size != local.size:
                raise InvalidTileMappingError(f"create_virtual_graph: the tile list {local.tolist()} must be "
                                              "non-empty and without repeats")
        else:
            lower = as_int(lower_or_tiles, "create_virtual_graph: lower_tile", InvalidTileMappingError)
            upper = as_int(upper_tile, "create_virtual_graph: upper_tile", InvalidTileMappingError)
            if not 0 <= lower < upper <= self._target.num_tiles:
                raise InvalidTileMappingError(f"create_virtual_graph: tiles [{lower}, {upper}) are not a non-empty "
                                              f"range within the graph's {self._target.num_tiles} tiles")
            local = np.arange(lower, upper, dtype=np.int64)
        physical = np.asarray([self._physical_tile(int(t), "create_virtual_graph") for t in local], np.int64)
        sub = object.__new__(Graph)
        sub._state = self._state
        sub._tiles = physical
        sub._target = self._state.target.with_changes(num_ipus=1, tiles_per_ipu=int(physical.size))
        sub._direct_tiles = 0
        sub._device_target = self._device_target
        return sub

    def get_top_level_graph(self) -> "Graph":
        """The top-level graph: for a graph that is not replicated, the whole graph (not a
        virtual graph of it); for a replicated graph, the non-replicated view of the whole
        device (its target has every replica's IPUs, its replication factor is 1)."""
        top = object.__new__(Graph)
        top._state = self._state
        top._tiles = None
        top._device_target = self._device_target
        top._target = self._state.target if self._state.replication_factor == 1 else self._device_target
        top._direct_tiles = top._target.num_tiles if self._state.replication_factor == 1 else 0
        return top

    def create_replicated_graph(self, replication_factor: int) -> "Graph":
        """Poplar's way to replicate a top-level graph; popsim builds the replicated graph
        directly (the same one replica's target and lowering)."""
        raise PopsimError(f"create_replicated_graph({replication_factor!r}): popsim builds a replicated graph "
                          "directly: write popsim.Graph(device, replication_factor=R) with R the total replication "
                          "factor (its target is one replica of the device)")

    def get_non_replicated_tensor(self, tensor: Tensor) -> Tensor:
        """Poplar's view of a replicated tensor as one tensor of all replicas: not in popsim."""
        raise PopsimError("get_non_replicated_tensor: popsim keeps each replica's tensors apart and has no view "
                          "across replicas; read every replica's values with engine.read_tensor(handle) (shape "
                          "[R, ...]) or move data between replicas with CrossReplicaCopy")

    @property
    def _top_of_replicas(self) -> bool:
        """The top-level view of a replicated graph: it describes the device, not a replica."""
        return self._state.replication_factor > 1 and self._target is self._device_target

    def convert_virtual_tile_to_physical_tile(self, tile: int) -> int:
        return self._physical_tile(tile, "convert_virtual_tile_to_physical_tile")

    # -- variables and constants ---------------------------------------------------------------
    def _shape_arg(self, shape, what: str) -> Tuple[int, ...]:
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
            shape = (shape,)
        if type(shape) in (list, tuple) and all(type(d) is int and d >= 0 for d in shape):
            return tuple(shape)
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
            raise TensorCreationError(f"{what}: shape must be a sequence of sizes, found {type(shape).__name__} "
                                      f"{shape!r}; e.g. [4] or (2, 3)")
        dims = list(shape)
        for d in dims:  # sizes are whole numbers: 2.5 or "4" are refused, never rounded or parsed
            if isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)):
                continue
            as_size(d, f"{what}: shape {[plain(x) for x in dims]!r} has an entry that", TensorCreationError)
        dims = [int(d) for d in dims]
        if any(d < 0 for d in dims):
            raise TensorCreationError(f"{what}: shape {dims} has a negative size")
        return tuple(dims)

    def add_variable(self, dtype: TypeLike, shape: ShapeLike,
                     name_or_mapping: Union[str, VariableMappingMethod, None] = None, name: Optional[str] = None,
                     mapping: Optional[VariableMappingMethod] = None, metadata: Optional[Tensor] = None) -> Tensor:
        """A new variable of ``dtype`` and ``shape``; map it with ``set_tile_mapping``, or pass
        ``mapping=VariableMappingMethod.LINEAR``. QUARTER needs ``metadata`` (popsim/quarter.py)."""
        if isinstance(name_or_mapping, VariableMappingMethod):
            mapping = name_or_mapping
        elif name_or_mapping is not None:
            name = name_or_mapping
        t = as_type(dtype)
        dims = self._shape_arg(shape, "add_variable")
        if mapping not in (None, VariableMappingMethod.NONE, VariableMappingMethod.LINEAR):  # before anything is added
            raise errors.TypeError(f"add_variable: mapping must be a VariableMappingMethod, found {found(mapping)}")
        metadata = checked_metadata(t, metadata, self.owns, "add_variable")
        var = self._state.table.add(self._state.unique_name(name, "variable"), t, dims)
        var.metadata = metadata
        tensor = Tensor._of_variable(self._state.table, var)
        if mapping is VariableMappingMethod.LINEAR:
            self.set_tile_mapping(tensor, self.linear_mapping(tensor))
        return tensor

    def add_constant(self, dtype: TypeLike, shape: ShapeLike, values: npt.ArrayLike,
                     name: Optional[str] = None) -> Tensor:
        """A constant of ``dtype`` and ``shape`` holding ``values`` (a scalar fills it)."""
        t = as_type(dtype)
        dims = self._shape_arg(shape, "add_constant")
        check_size(dims, t, "constant", name, self._state.table.nbytes)  # before its values are made
        data = typed_array(values, t, dims, f"add_constant '{name}'" if name else "add_constant",
                           TensorCreationError)
        var = self._state.table.add(self._state.unique_name(name, "constant"), t, dims, is_constant=True,
                                    values=data.reshape(-1).copy())
        return Tensor._of_variable(self._state.table, var)

    def add_replication_index_constant(self, name: Optional[str] = None) -> Tensor:
        """An UNSIGNED_INT scalar constant holding each replica's index (0 .. R-1): one
        graph, a different value on every replica. Map it like any constant."""
        if self._top_of_replicas:
            raise TensorCreationError("add_replication_index_constant: call it on the replicated graph, not on its "
                                      "top-level view (each replica holds its own index)")
        t = self.add_constant(as_type("UNSIGNED_INT"), (), 0, name or "replicationIndex")
        self._state.replication_index.append(t)
        return t

    def clone(self, tensor: Union[Tensor, TypeLike], name: Union[str, Tensor, None] = None,
              dtype: Optional[TypeLike] = None, metadata: Optional[Tensor] = None) -> Tensor:
        """A new variable with the shape and tile mapping of ``tensor`` (any view), element
        by element, and its type, or ``dtype`` when given (PopLibs' clone(outType, t)), and
        ``metadata`` for QUARTER (``tensor``'s by default). Poplar's argument order works too."""
        if not isinstance(tensor, Tensor) and isinstance(name, Tensor):  # clone(FLOAT, t[, name])
            tensor, name, dtype = name, cast(Optional[str], dtype), cast(TypeLike, tensor)
        tensor = self._check_tensor(tensor, "clone")
        out_type = tensor.dtype if dtype is None else as_type(dtype)
        metadata = tensor.metadata if metadata is None and out_type == tensor.dtype else metadata
        unnamed = name is None or (isinstance(name, str) and not name)  # never an array's truth value
        out = self.add_variable(out_type, tensor.shape, f"{tensor.name}_clone" if unnamed else cast(str, name),
                                metadata=metadata)  # a name that is not a string: add_variable says so
        pieces, tiles = MappingIndex.for_tensor(tensor).split(runs_of(tensor))
        mapped = tiles >= 0
        if mapped.any():
            # One paint per run of pieces on one tile (pieces ascend by position): a view read
            # across its layout has a piece per element, which the mapping would otherwise keep
            # until the graph is freed; resolving joins them to the same intervals.
            var = out._var
            assert var is not None  # a new variable's view is strided
            pos = pieces.pos[mapped]
            var.mapping.paint(*join_adjacent(pos, pos + pieces.length[mapped], tiles[mapped]))
        return out

    def owns(self, tensor: object) -> bool:
        """True when ``tensor`` is a view of this graph's variables and constants (a graph
        and its virtual graphs share them); libraries built on popsim check their inputs
        with it before they map or connect them."""
        return isinstance(tensor, Tensor) and tensor._table is self._state.table

    def _check_tensor(self, tensor: object, what: str) -> Tensor:
        """``tensor``, once checked to be a view of this graph's variables."""
        if not isinstance(tensor, Tensor):
            raise errors.TypeError(f"{what}: expected a Tensor, found {type(tensor).__name__}")
        if tensor._table is not self._state.table:
            raise TensorCreationError(f"{what}: tensor '{tensor.name}' belongs to a different graph")
        return tensor

    # -- tile mapping ---------------------------------------------------------------------------
    def set_tile_mapping(self, target: Union[Tensor, VertexRef], tile_or_mapping: Union[int, TileMapping]) -> None:
        """Map every element of a tensor view to one tile, or by ``mapping[tile] = [(begin,
        end), ...]`` intervals of the view's flat elements; or place a vertex on a tile."""
        # Hot paths of graph building: a vertex, or a strided view, to one tile of a top-level graph
        # (_direct_tiles: its tile count; 0 in virtual graphs, whose tiles need translating).
        if type(tile_or_mapping) is int and 0 <= tile_or_mapping < self._direct_tiles:
            if type(target) is VertexRef:  # exact classes only (and mypy narrows the Union by them)
                if target.compute_set._state is self._state:
                    target.compute_set._tiles[target.index] = tile_or_mapping
                    return
            elif type(target) is Tensor and target._var is not None and target._table is self._state.table:
                shape = target._shape
                if not shape or (len(shape) == 1 and (target._strides[0] == 1 or shape[0] <= 1)):
                    # an element or a 1-D run of one variable: the commonest view, kept to one call
                    target._var.mapping.paint_one(target._offset, target._offset + (shape[0] if shape else 1),
                                                  tile_or_mapping)
                    return
                if self._map_strided_view(target, target._var, tile_or_mapping):
                    return
        self._set_tile_mapping_general(target, tile_or_mapping)

    def _set_tile_mapping_general(self, target, tile_or_mapping) -> None:
        """Every form of set_tile_mapping and every error (the hot paths must agree with it)."""
        if not isinstance(target, Tensor):
            set_vertex_tile = getattr(target, "_set_tile", None)
            if set_vertex_tile is None:
                raise errors.TypeError(f"set_tile_mapping: expected a Tensor or a vertex, found "
                                       f"{type(target).__name__}")
            if getattr(target, "_state", self._state) is not self._state:
                raise GraphConnectionError(f"set_tile_mapping of {target.describe()}: the vertex belongs to another "
                                           "graph than the one placing it; call set_tile_mapping on the graph (or a "
                                           "virtual graph of it) whose add_vertex made the vertex")
            set_vertex_tile(self._physical_tile(tile_or_mapping, f"set_tile_mapping of {target}"))
            return
        self._check_tensor(target, "set_tile_mapping")
        what = f"set_tile_mapping of tensor '{target.name}'"
        if isinstance(tile_or_mapping, (int, np.integer)) and not isinstance(tile_or_mapping, bool):
            tile = self._physical_tile(tile_or_mapping, what)
            if target._var is not None and self._map_strided_view(target, target._var, tile):
                return
            runs = runs_of(target)
            tiles = np.full(runs.size, tile, np.int64)
        else:
            runs = runs_of(target)
            runs, tiles = self._split_by_intervals(target, runs, tile_or_mapping, what)
        self._paint(runs, tiles)

    def _map_strided_view(self, view: Tensor, var: Variable, tile: int) -> bool:
        """Map a strided view (of ``var``, its _var) that is the whole variable or one run of
        it to ``tile``; False (nothing done) for other views."""
        shape, strides = view._shape, view._strides
        n = 1
        for d in shape:
            n *= d
        if n == var.size and (0 not in strides or not view.contains_aliases()):
            var.mapping.paint_all(tile)  # the whole variable: the commonest case, kept cheap
        elif n <= 1 or views.contiguous_inner(shape, strides)[0] == 0:
            var.mapping.paint_one(view._offset, view._offset + n, tile)  # one run: no numpy either
        else:
            return False
        return True

    def _split_by_intervals(self, tensor: Tensor, runs, mapping, what: str):
        if isinstance(mapping, (str, bytes, dict)) or not hasattr(mapping, "__iter__"):
            raise errors.TypeError(f"{what}: expected a tile number or a list of interval lists per tile, "
                                   f"found {found(mapping)}")
        per_tile = list(mapping)
        n_tiles = self._target.num_tiles
        if len(per_tile) > n_tiles:
            extra = next((t for t in range(n_tiles, len(per_tile)) if per_tile[t]), n_tiles)
            raise InvalidTileMappingError(f"{what}: the mapping lists {len(per_tile)} tiles but the graph has "
                                          f"{n_tiles}: tile {extra} is out of range (0..{n_tiles - 1})")
        n = tensor.num_elements()
        begins, ends, tiles = [], [], []
        for tile, intervals in enumerate(per_tile):
            if intervals is not None and (isinstance(intervals, (str, dict)) or not hasattr(intervals, "__iter__")):
                raise InvalidTileMappingError(f"{what}: the entry for tile {tile} must be a list of (begin, end) "
                                              f"intervals, found {found(intervals)}; e.g. [[(0, 4)], [(4, 8)]]")
            for interval in () if intervals is None else intervals:
                if not isinstance(interval, (tuple, list, np.ndarray)) or len(interval) != 2:
                    raise InvalidTileMappingError(f"{what}: {interval!r} for tile {tile} is not a (begin, end) "
                                                  "interval")
                b, e = (x if type(x) is int else as_int(x, f"{what}: an interval bound for tile {tile}",
                                                         InvalidTileMappingError) for x in interval)
                if not 0 <= b <= e <= n:
                    raise InvalidTileMappingError(f"{what}: interval [{b}, {e}) for tile {tile} is outside the "
                                                  f"tensor's {n} elements")
                if e > b:
                    begins.append(b)
                    ends.append(e)
                    tiles.append(tile)
        if not begins:
            return runs._replace(pos=runs.pos[:0], gid=runs.gid[:0], length=runs.length[:0]), np.empty(0, np.int64)
        physical = np.asarray([self._physical_tile(t, what) for t in tiles], np.int64)
        b_arr, e_arr = np.asarray(begins, np.int64), np.asarray(ends, np.int64)
        pieces = split_at_positions(runs, np.concatenate([b_arr, e_arr]))
        order = np.argsort(b_arr, kind="stable")
        b_sorted, e_sorted, t_sorted = b_arr[order], e_arr[order], physical[order]
        idx = np.searchsorted(b_sorted, pieces.pos, side="right") - 1
        inside = (idx >= 0) & (pieces.pos < e_sorted[np.maximum(idx, 0)])
        keep = np.flatnonzero(inside)
        return pieces._replace(pos=pieces.pos[keep], gid=pieces.gid[keep], length=pieces.length[keep]), \
            t_sorted[idx[keep]]

    def _paint(self, runs, tiles: np.ndarray) -> None:
        if runs.size == 0:
            return
        table = self._state.table
        var_idx = table.index_of(runs.gid)
        first, last = int(var_idx.min()), int(var_idx.max())
        if first == last:
            var = table.variables[first]
            var.mapping.paint(runs.gid - var.base, runs.gid - var.base + runs.length, tiles)
        else:
            for i in np.unique(var_idx).tolist():
                sel = var_idx == i
                var = table.variables[i]
                start = runs.gid[sel] - var.base
                var.mapping.paint(start, start + runs.length[sel], tiles[sel])

    def get_tile_mapping(self, tensor: Tensor, require_complete: bool = True) -> List[List[Tuple[int, int]]]:
        """``mapping[tile]``: the [begin, end) intervals of the view's flat elements on each
        tile of this graph."""
        self._check_tensor(tensor, "get_tile_mapping")
        if not isinstance(require_complete, (bool, np.bool_)):  # an array's truth value is ambiguous
            raise errors.TypeError(f"get_tile_mapping: require_complete must be True or False, found "
                                   f"{found(require_complete)}")
        pieces, physical = MappingIndex.for_tensor(tensor).split(runs_of(tensor))
        tiles = self._local_tiles(physical)
        if require_complete and (tiles < 0).any():
            i = int(np.flatnonzero(tiles < 0)[0])
            outside = physical[i] >= 0
            why = "is mapped to a tile outside this virtual graph" if outside else "is not mapped to any tile"
            raise InvalidTileMappingError(
                f"get_tile_mapping of tensor '{tensor.name}': elements [{pieces.pos[i]}, "
                f"{pieces.pos[i] + pieces.length[i]}) {why}; map them with set_tile_mapping, or pass "
                "require_complete=False")
        return tile_intervals(pieces, tiles, self._target.num_tiles)

    def get_sorted_contiguous_regions(self, tensor: Tensor,
                                      regions: Sequence[Tuple[int, int]]) -> List[List[Tuple[int, int]]]:
        """Poplar's getSortedContiguousRegions: ``regions`` ([begin, end) intervals of the
        view's flat elements, e.g. one tile's ``get_tile_mapping``) cut where consecutive
        view elements stop being consecutive in memory, and grouped into the view's
        regions of contiguous memory, in memory order: each inner list is the intervals,
        in order, whose elements are one run of one variable."""
        self._check_tensor(tensor, "get_sorted_contiguous_regions")
        what = f"get_sorted_contiguous_regions of tensor '{tensor.name}'"
        size = tensor.num_elements()
        if isinstance(regions, (str, bytes, dict)) or not hasattr(regions, "__iter__"):
            raise errors.TypeError(f"{what}: regions must be a list of (begin, end) intervals, found {found(regions)}")
        pairs = []
        for r in regions:
            if not isinstance(r, (tuple, list, np.ndarray)) or len(r) != 2:
                raise InvalidTileMappingError(f"{what}: {found(r)} is not a (begin, end) interval")
            b, e = (as_int(x, f"{what}: an interval bound", InvalidTileMappingError) for x in r)
            if e > b:
                if b < 0 or e > size:
                    raise InvalidTileMappingError(f"{what}: the regions must lie in [0, {size}), found [{b}, {e})")
                pairs.append((b, e))
        if not pairs:
            return []
        spans = np.asarray(pairs, np.int64)
        runs = split_at_positions(runs_of(tensor), spans.reshape(-1))
        start = np.searchsorted(spans[:, 0], runs.pos, side="right") - 1
        inside = (start >= 0) & (runs.pos < spans[np.maximum(start, 0), 1])
        pos, gid, length = runs.pos[inside], runs.gid[inside], runs.length[inside]
        order = np.lexsort((pos, gid))  # memory order (a variable's elements are consecutive)
        pos, gid, length = pos[order], gid[order], length[order]
        var = self._state.table.index_of(gid)
        result: List[List[Tuple[int, int]]] = []
        for k, (p, n) in enumerate(zip(pos.tolist(), length.tolist())):
            if k and var[k] == var[k - 1] and gid[k] == gid[k - 1] + length[k - 1]:
                group = result[-1]
                if group[-1][1] == p:
                    group[-1] = (group[-1][0], p + n)
                else:
                    group.append((p, p + n))
            else:
                result.append([(p, p + n)])
        return result

    def linear_mapping(self, tensor: Tensor, min_elements_per_tile: Optional[int] = None,
                       grain_size: Optional[int] = None) -> List[List[Tuple[int, int]]]:
        """PopLibs' linear mapping of the tensor's flat elements over this graph's tiles."""
        self._check_tensor(tensor, "linear_mapping")
        if min_elements_per_tile is not None:
            min_elements_per_tile = as_size(min_elements_per_tile, "linear_mapping: min_elements_per_tile",
                                            InvalidTileMappingError)
        if grain_size is not None:
            grain_size = as_int(grain_size, "linear_mapping: grain_size", InvalidTileMappingError, low=1)
        return linear_tile_mapping(tensor.num_elements(), tensor.dtype.size, self._target.vector_width(tensor.dtype),
                                   self._target.num_tiles, min_elements_per_tile, grain_size)

    # -- initial values ---------------------------------------------------------------------------
    def set_initial_value(self, target: Union[Tensor, FieldRef], values: npt.ArrayLike) -> None:
        """The contents a variable view has when the engine is loaded (or a vertex's
        plain state field)."""
        if not isinstance(target, Tensor):
            set_field = getattr(target, "_set_initial_value", None)
            if set_field is None:
                raise errors.TypeError(f"set_initial_value: expected a Tensor or a vertex field, found "
                                       f"{type(target).__name__}")
            self._check_own_vertex(target.vertex, "set_initial_value")
            set_field(values)
            return
        self._check_tensor(target, "set_initial_value")
        if target.contains_constant():
            raise TensorCreationError(f"set_initial_value: tensor '{target.name}' is (or contains) a constant, "
                                      "whose values are fixed by add_constant")
        if target.contains_aliases():
            raise TensorCreationError(f"set_initial_value: the view of '{target.name}' contains some elements "
                                      "more than once; give initial values to a view without repeats")
        data = typed_array(values, target.dtype, target.shape, f"set_initial_value of '{target.name}'",
                           TensorCreationError)
        self._state.initial_values.append((target, data.copy()))

    # -- compute sets and functions --------------------------------------------------------------
    def add_compute_set(self, name: Optional[str] = None) -> ComputeSet:
        """An empty compute set; add vertices to it and run it with ``Execute``."""
        cs = ComputeSet(self._state, len(self._state.compute_sets), self._state.unique_name(name, "computeSet"))
        self._state.compute_sets.append(cs)
        return cs

    def add_function(self, program: Program, name: Optional[str] = None) -> Function:
        """Outline ``program`` so that ``Call(function)`` runs it; its code exists once."""
        if not isinstance(program, Program):
            raise errors.TypeError(f"add_function: expected a Program, found {type(program).__name__}")
        f = Function(self._state, len(self._state.functions), program, self._state.unique_name(name, "function"))
        self._state.functions.append(f)
        return f

    # -- streams and host handles --------------------------------------------------------------
    def _add_stream(self, handle: str, dtype, num_elements: int, direction: StreamDirection, **kw) -> DataStream:
        if not isinstance(handle, str) or not handle:
            raise StreamConnectionError(f"a stream handle must be a non-empty string, found {handle!r}")
        if handle in self._state.streams:
            raise StreamConnectionError(f"a stream named '{handle}' already exists in this graph; stream "
                                        "handles must be unique")
        n = as_size(num_elements, f"stream '{handle}': num_elements", StreamConnectionError)
        s = DataStream(self._state, len(self._state.streams), handle, as_type(dtype), n, direction, **kw)
        self._state.streams[handle] = s
        return s

    def add_host_to_device_fifo(self, handle: str, dtype: TypeLike, num_elements: int,
                                replicated_mode: ReplicatedStreamMode = ReplicatedStreamMode.REPLICATE,
                                options: Optional[Mapping[str, object]] = None) -> DataStream:
        """A host-to-device FIFO; ``Copy(stream, tensor)`` pops ``num_elements`` elements."""
        return self._add_stream(handle, dtype, num_elements, StreamDirection.HOST_TO_DEVICE,
                                replicated_mode=replicated_mode, options=options)

    def add_device_to_host_fifo(self, handle: str, dtype: TypeLike, num_elements: int,
                                options: Optional[Mapping[str, object]] = None) -> DataStream:
        """A device-to-host FIFO; ``Copy(tensor, stream)`` pushes ``num_elements`` elements."""
        return self._add_stream(handle, dtype, num_elements, StreamDirection.DEVICE_TO_HOST, options=options)

    def _add_handle(self, registry: Dict[str, Tensor], kind: str, handle: str, tensor: Tensor) -> None:
        self._check_tensor(tensor, f"create_host_{kind}")
        if not isinstance(handle, str) or not handle:
            raise HandleError(f"create_host_{kind}: a handle must be a non-empty string, found {handle!r}")
        if handle in registry:
            raise DuplicateHandleError(f"create_host_{kind}: the handle '{handle}' is already used for tensor "
                                     f"'{registry[handle].name}'; handles must be unique")
        registry[handle] = tensor

    def create_host_write(self, handle: str, tensor: Tensor, rearrange_on_host: bool = False) -> None:
        """Let ``engine.write_tensor(handle, array)`` write ``tensor`` from the host."""
        if isinstance(tensor, Tensor) and tensor.contains_constant():
            raise TensorCreationError(f"create_host_write '{handle}': tensor '{tensor.name}' is (or contains) a "
                                      "constant, which the host cannot write")
        if isinstance(tensor, Tensor) and tensor.contains_aliases():
            raise TensorCreationError(f"create_host_write '{handle}': the view of '{tensor.name}' contains some "
                                      "elements more than once, so a write would be ambiguous")
        self._add_handle(self._state.host_writes, "write", handle, tensor)

    def create_host_read(self, handle: str, tensor: Tensor, rearrange_on_host: bool = False) -> None:
        """Let ``engine.read_tensor(handle)`` read ``tensor`` to the host."""
        self._add_handle(self._state.host_reads, "read", handle, tensor)

    def get_stream(self, handle: str) -> DataStream:
        if not isinstance(handle, str):
            raise errors.TypeError(f"get_stream: a stream handle is a string, found {found(handle)}")
        try:
            return self._state.streams[handle]
        except KeyError:
            raise UnknownHandleError(f"no stream named '{handle}': "
                                     f"{did_you_mean(handle, self._state.streams)}") from None
