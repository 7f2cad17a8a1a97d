"""Compute sets and how they store their vertices; VertexRef and FieldRef, the handles
the graph API gives out.

A program may have hundreds of thousands of vertices, so a compute set keeps them by
column (vertex type, tile, perf estimate, first connection slot) and their connections in
one flat list of slots, one per field. A connection of a scalar or vector edge to a
strided view is stored as a plain record ``(variable index, offset, shape, strides)``
rather than as the Tensor, and a vertex is not an object of its own: building then
leaves nothing per vertex for Python's garbage collector to trace again and again, which
otherwise costs more than the building itself. ``VertexRef`` is a handle (compute set,
index) and rebuilds views from records on demand (``conn``, ``connection``).
"""
from __future__ import annotations

import operator
from array import array
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain, repeat
from operator import itemgetter
from sys import intern
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from .codelet.fields import Direction, FieldKind, FieldSpec
from .codelet.vertex_type import VertexType
from .arguments import as_size
from .errors import GraphConnectionError, UnknownFieldError, did_you_mean
from .tensor import Tensor
from .types import typed_array

__all__ = ["ComputeSet", "VertexRef", "FieldRef", "VertexList", "count_vertices_and_edges", "slot_kinds",
           "record_columns", "EdgeList"]

_new = object.__new__
_EMPTY = np.empty(0, np.int64)

# A slot holds None (unconnected), an edge record (a tuple, see edge_record), a Tensor,
# a list of Tensors (list fields, None for sub-edges not yet connected), an EdgeList (list
# fields whose sub-edges are all strided views of one rank) or a numpy array of plain state
# values.


def edge_record(t: Tensor) -> Tuple[int, int, Tuple[int, ...], Tuple[int, ...]]:
    """The record stored for a strided view connected to a field of its element type."""
    return (t._var.index, t._offset, t._shape, t._strides)


class EdgeList:
    """A list field's sub-edges when each is a strided view of one variable, all of one
    rank: packed as ints (variable index, offset, shape, strides, per sub-edge) rather than
    kept as Tensors. A Tensor, its shape and strides tuples and its offset take about 250
    bytes a sub-edge; here they take 16 + 16 x rank, and nothing per sub-edge is left for
    the garbage collector to trace. ``records`` gives the sub-edges' edge records,
    ``columns`` those of many lists as columns at once (lowering reads them like the
    records of single edges); ``VertexRef.conn`` gives Tensors back.

    The slot holds a plain ``bytes`` object (``EdgeList.TYPE``) of int64s: the rank, then
    the sub-edges'. The garbage collector does not track bytes, where an object of its own
    per list field (1.2 million in ResNet-50) was scanned by every full collection; no
    other slot holds bytes. This class packs and reads them."""

    TYPE = bytes

    @staticmethod
    def pack(rank: int, data: array) -> bytes:
        return array("q", (rank,)).tobytes() + data.tobytes()

    @staticmethod
    def rank(packed: bytes) -> int:
        return memoryview(packed).cast("q")[0]

    @staticmethod
    def ints(packed: bytes) -> memoryview:
        """The sub-edges' int64s (a read-only view of them)."""
        return memoryview(packed).cast("q")[1:]

    @staticmethod
    def count(packed: bytes) -> int:
        """The number of sub-edges."""
        words = memoryview(packed).cast("q")
        return (len(words) - 1) // (2 + 2 * words[0])

    @staticmethod
    def records(packed: bytes):
        """The sub-edges' edge records, zipped over strided slices: every record is made at
        C level, none in a Python loop."""
        r, data = EdgeList.rank(packed), EdgeList.ints(packed)
        width = 2 + 2 * r
        if r == 0:
            count = len(data) // width
            return zip(data[0::width], data[1::width], repeat((), count), repeat((), count))
        return zip(data[0::width], data[1::width], zip(*(data[2 + k::width] for k in range(r))),
                   zip(*(data[2 + r + k::width] for k in range(r))))

    @staticmethod
    def columns(packed: List[bytes]) -> Tuple["RecordColumns", np.ndarray]:
        """The sub-edges of ``packed`` (EdgeLists, in order) as record_columns gives their
        records, and each list's sub-edge count: one join of the bytes and numpy passes,
        no object per list or sub-edge."""
        if not packed:
            return RecordColumns(_EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY), _EMPTY
        words = np.frombuffer(b"".join(packed), np.int64)
        size = np.fromiter(map(len, packed), np.int64, len(packed)) // 8
        start = np.cumsum(size) - size
        rank = words[start]
        width = 2 + 2 * rank
        count = (size - 1) // width
        item = np.repeat(np.arange(len(packed)), count)   # each sub-edge's list
        k = np.arange(item.size) - np.repeat(np.cumsum(count) - count, count)
        base = start[item] + 1 + k * width[item]
        r = rank[item]
        at = np.repeat(base + 2, r) + np.arange(int(r.sum())) - np.repeat(np.cumsum(r) - r, r)
        return RecordColumns(words[base], words[base + 1], r, words[at], words[at + np.repeat(r, r)]), count

    @staticmethod
    def sizes(packed: bytes) -> List[int]:
        """The element count of each sub-edge."""
        r, data = EdgeList.rank(packed), EdgeList.ints(packed)
        width = 2 + 2 * r
        if r == 1:
            return data[2::width].tolist()
        return [int(np.prod(data[k + 2:k + 2 + r])) for k in range(0, len(data), width)]

    @staticmethod
    def tensors(packed: bytes, table, dtype) -> List[Tensor]:
        """The sub-edges as Tensors of element type ``dtype`` (new views, each time)."""
        variables = table.variables
        return [Tensor._strided(table, variables[v], dtype, shape, offset, strides)
                for v, offset, shape, strides in EdgeList.records(packed)]


class RecordColumns(NamedTuple):
    """Edge records by column: variable index, offset and rank of each, and the entries
    of all their shapes (``dims``) and strides, record after record (rank entries each)."""

    var: np.ndarray
    offset: np.ndarray
    rank: np.ndarray
    dims: np.ndarray
    strides: np.ndarray


def record_columns(records: List[tuple]) -> RecordColumns:
    """``records`` (see edge_record) as columns, in a few C-level passes: no object is
    made per record."""
    m = len(records)
    columns = RecordColumns(np.fromiter(map(itemgetter(0), records), np.int64, m),
                            np.fromiter(map(itemgetter(1), records), np.int64, m),
                            np.fromiter(map(len, map(itemgetter(2), records)), np.int64, m),
                            np.fromiter(chain.from_iterable(map(itemgetter(2), records)), np.int64),
                            np.fromiter(chain.from_iterable(map(itemgetter(3), records)), np.int64))
    if columns.dims.size != columns.strides.size:
        raise AssertionError("edge records whose shapes and strides differ in rank")
    return columns


NO_TILE = -1  # in ComputeSet._tiles: a vertex not placed yet

# What a slot holds, as slot_kinds reports it.
SLOT_NONE, SLOT_RECORD, SLOT_TENSOR, SLOT_LIST, SLOT_VALUES = range(5)


class _SlotKinds(dict):
    """Slot kind by the type of what a slot holds; plain state values may be of any type."""

    def __missing__(self, kind) -> int:
        return SLOT_VALUES


_SLOT_KIND = _SlotKinds({type(None): SLOT_NONE, tuple: SLOT_RECORD, Tensor: SLOT_TENSOR, list: SLOT_LIST,
                         EdgeList.TYPE: SLOT_LIST})


def slot_kinds(slots: List[object]) -> np.ndarray:
    """The kind of every slot (SLOT_*), as int8: read in one C-level pass (lowering reads
    the slots of hundreds of thousands of fields)."""
    return np.fromiter(map(_SLOT_KIND.__getitem__, map(type, slots)), np.int8, len(slots))


class ComputeSet:
    """A set of vertices run in parallel in one BSP superstep (``Execute(cs)``)."""

    __slots__ = ("name", "index", "_state", "_default_tile", "_types", "_tiles", "_perf", "_first", "_slots")

    def __init__(self, state, index: int, name: str):
        self._state = state
        self.index = index
        self.name = name
        # CPU targets have one tile and need no vertex placement: vertices start on it
        self._default_tile = NO_TILE if state.target.requires_tile_mapping else 0
        # Lists, not arrays: list.append is what the interpreter does fastest.
        self._types: List[VertexType] = []        # per vertex
        self._tiles: List[int] = []               # per vertex; NO_TILE until placed
        self._perf: List[Optional[int]] = []      # per vertex: set_perf_estimate's cycles, or None
        self._first: List[int] = []               # per vertex: its first slot in _slots
        self._slots: List[object] = []            # per field of each vertex: its connection

    @property
    def vertices(self) -> "VertexList":
        """The vertices, in the order they were added (handles made on demand)."""
        return VertexList(self)

    def num_vertices(self) -> int:
        return len(self._types)

    @property
    def variables(self):
        """The VariableTable its vertices' fields connect to (the graph's)."""
        return self._state.table

    @property
    def vertex_tiles(self) -> np.ndarray:
        """The tile of each vertex, in creation order (NO_TILE: not placed yet)."""
        return np.array(self._tiles, np.int64) if self._tiles else np.zeros(0, np.int64)

    def _slot_value(self, slot: int, spec: FieldSpec) -> object:
        """What slot ``slot`` connects, an edge record turned back into its Tensor."""
        c = self._slots[slot]
        if type(c) is tuple:
            table = self._state.table
            var_index, offset, shape, strides = c
            return Tensor._strided(table, table.variables[var_index], spec.dtype, shape, offset, strides)
        if type(c) is EdgeList.TYPE:
            return EdgeList.tensors(c, self._state.table, spec.dtype)
        return c

    def __repr__(self) -> str:
        return f"ComputeSet({self.name!r}, {len(self._types)} vertices)"


def count_vertices_and_edges(compute_sets) -> Tuple[int, int]:
    """Vertices, and connected edges (one per edge field, one per sub-edge of list fields)."""
    vertices = edges = 0
    for cs in compute_sets:
        vertices += len(cs._types)
        # Only edge fields hold records, Tensors and lists; state fields hold values or None.
        kinds = slot_kinds(cs._slots)
        edges += int(np.count_nonzero((kinds == SLOT_RECORD) | (kinds == SLOT_TENSOR)))
        slots = cs._slots
        edges += sum(EdgeList.count(c) if type(c) is EdgeList.TYPE else len(c)
                     for c in (slots[k] for k in np.flatnonzero(kinds == SLOT_LIST).tolist()))
    return vertices, edges


class VertexList(Sequence):
    """The vertices of a compute set, in creation order, as VertexRef handles."""

    __slots__ = ("_cs",)

    def __init__(self, cs: ComputeSet):
        self._cs = cs

    def __len__(self) -> int:
        return len(self._cs._types)

    def __getitem__(self, i):
        n = len(self._cs._types)
        if isinstance(i, slice):
            return [vertex_ref(self._cs, k) for k in range(*i.indices(n))]
        k = operator.index(i)
        if not -n <= k < n:
            raise IndexError(f"vertex index {k} is out of range for compute set '{self._cs.name}' of {n} vertices")
        return vertex_ref(self._cs, k + n if k < 0 else k)

    def __iter__(self):
        cs = self._cs
        for k in range(len(cs._types)):
            yield vertex_ref(cs, k)

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, tuple, VertexList)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # a live view of the compute set, like a list

    def __repr__(self) -> str:
        return repr(list(self))


def vertex_ref(cs: ComputeSet, index: int) -> "VertexRef":
    v = _new(VertexRef)
    v.compute_set = cs
    v.index = index
    return v


class VertexRef:
    """A vertex in a compute set (a handle: two handles of one vertex are equal); index it
    by field name to get a FieldRef."""

    __slots__ = ("compute_set", "index")

    def __init__(self, compute_set: ComputeSet, index: int):
        self.compute_set = compute_set
        self.index = index

    @property
    def _state(self):
        return self.compute_set._state

    @property
    def type(self) -> VertexType:
        return self.compute_set._types[self.index]

    @property
    def tile(self) -> Optional[int]:
        tile = self.compute_set._tiles[self.index]
        return None if tile == NO_TILE else tile

    @tile.setter
    def tile(self, tile: Optional[int]) -> None:
        self.compute_set._tiles[self.index] = NO_TILE if tile is None else tile

    @property
    def perf_estimate(self) -> Optional[int]:
        return self.compute_set._perf[self.index]

    @perf_estimate.setter
    def perf_estimate(self, cycles: Optional[int]) -> None:
        self.compute_set._perf[self.index] = cycles

    @property
    def conn(self) -> List[object]:
        """Per field (declaration order): its Tensor, list of Tensors or state values, None
        while unconnected. A new list; change connections through the graph."""
        cs = self.compute_set
        first = cs._first[self.index]
        return [cs._slot_value(first + i, spec) for i, spec in enumerate(cs._types[self.index].fields)]

    def connection(self, position: int) -> object:
        """What field ``position`` is connected to (as in ``conn``); a list field's list is
        the stored one (an EdgeList is stored as its list of Tensors first)."""
        cs = self.compute_set
        slot = cs._first[self.index] + position
        spec = cs._types[self.index].fields[position]
        value = cs._slot_value(slot, spec)
        if type(cs._slots[slot]) is EdgeList.TYPE:
            cs._slots[slot] = value   # from now on a list of Tensors, as connecting one sub-edge needs
        return value

    def stored(self, position: int) -> object:
        """What field ``position``'s slot holds, as it is (see the slot kinds above)."""
        cs = self.compute_set
        return cs._slots[cs._first[self.index] + position]

    def _connect(self, position: int, value: object) -> None:
        cs = self.compute_set
        cs._slots[cs._first[self.index] + position] = value

    def __getitem__(self, name: str) -> "FieldRef":
        vt = self.compute_set._types[self.index]
        pos = (vt.extra.get("positions") or positions(vt)).get(name)
        if pos is None:
            raise UnknownFieldError(f"vertex type '{vt.name}' has no field '{name}': "
                                    f"{did_you_mean(name, vt.field_names)}")
        f = _new(FieldRef)  # FieldRef(self, vt.fields[pos], pos, None), without the call
        f.vertex = self
        f.spec = vt.fields[pos]
        f.position = pos
        f.element = None
        return f

    def _set_tile(self, tile: int) -> None:
        self.tile = tile

    def describe(self) -> str:
        tile = self.tile
        where = f"tile {tile}" if tile is not None else "no tile"
        return f"vertex '{self.type.name}' (#{self.index} of compute set '{self.compute_set.name}', {where})"

    def __eq__(self, other) -> bool:
        return type(other) is VertexRef and other.compute_set is self.compute_set and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.compute_set), self.index))

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


def positions(vt: VertexType) -> Dict[str, int]:
    """Field name -> position, cached on the vertex type."""
    found = vt.extra.get("positions")
    if found is None:
        found = vt.extra["positions"] = {f.name: i for i, f in enumerate(vt.fields)}
    return found


SINGLE_EDGES = (FieldKind.SCALAR_EDGE, FieldKind.VECTOR_EDGE)
WRITING = (Direction.OUTPUT, Direction.INOUT)


def build_plan(vt: VertexType) -> Tuple[tuple, Dict[str, Tuple[int, object, bool, bool]]]:
    """What add_vertex needs of a type, cached on it: a tuple of empty slots (one per field)
    and, for each scalar or vector edge field, (position, element type, is a vector, is
    written): what its lean paths check a connection against. Field names are interned, like
    the string constants of the callers' code, so that looking them up compares pointers."""
    plan = vt.extra.get("build_plan")
    if plan is None:
        plan = vt.extra["build_plan"] = ((None,) * len(vt.fields), {
            intern(f.name): (i, f.dtype, f.kind is FieldKind.VECTOR_EDGE, f.direction in WRITING)
            for i, f in enumerate(vt.fields) if f.kind in SINGLE_EDGES})
    return plan


_SHARED: Dict[Tuple[str, bytes], np.ndarray] = {}
_SHARED_LIMIT = 1 << 16     # distinct values kept at most (then the table starts again)
_SHARED_BYTES = 256         # larger values (worklists) are kept as they are


def shared_values(data: np.ndarray, copy: bool = False) -> np.ndarray:
    """One read-only array for equal small state values (1-D, of one type): most vertices of
    a compute set hold the same few sizes and strides, and a numpy array costs about 120
    bytes however few values it holds. Nothing writes a stored state value (connecting a
    field again stores a new one). ``copy``: ``data`` is the caller's, which it may still
    change, so a large one is copied too (a small one found shared needs no copy at all)."""
    if data.nbytes > _SHARED_BYTES:
        return data.copy() if copy else data
    key = (data.dtype.str, data.tobytes())
    found = _SHARED.get(key)
    if found is None:
        if len(_SHARED) >= _SHARED_LIMIT:
            _SHARED.clear()
        found = _SHARED[key] = data.copy()   # not the caller's array, which it may still change
        found.flags.writeable = False
    return found


_SHARED_INTS: Dict[tuple, np.ndarray] = {}   # (numpy type, int) -> its shared_values array


def shared_int(value: int, dtype) -> np.ndarray:
    """shared_values of the one-element array ``[value]`` of numpy type ``dtype``, found by
    the int itself: add_vertex stores a plain int state value per vertex (sizes and counts
    repeat over a compute set's vertices), and making an array to look it up cost more."""
    key = (dtype, value)
    found = _SHARED_INTS.get(key)
    if found is None:
        if len(_SHARED_INTS) >= _SHARED_LIMIT:
            _SHARED_INTS.clear()
        found = _SHARED_INTS[key] = shared_values(np.array([value], dtype))
    return found


@lru_cache(maxsize=None)
def _int_range(dtype: np.dtype) -> tuple:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


class FieldRef:
    """A field of a vertex (``v["in"]``), or one sub-edge of a list field (``v["ins"][2]``)."""

    __slots__ = ("vertex", "spec", "position", "element")

    def __init__(self, vertex: VertexRef, spec: FieldSpec, position: int, element: Optional[int]):
        self.vertex = vertex
        self.spec = spec
        self.position = position
        self.element = element

    def __getitem__(self, i: int) -> "FieldRef":
        if not self.spec.kind.is_list or self.element is not None:
            raise GraphConnectionError(f"field '{self.spec.name}' of {self.vertex.describe()} is "
                                       f"{self.spec.describe()}: only vectors of edges and VectorLists have "
                                       "sub-edges to index")
        return FieldRef(self.vertex, self.spec, self.position,
                        as_size(i, f"sub-edge index of {self.describe()}", GraphConnectionError))

    def describe(self) -> str:
        sub = f"[{self.element}]" if self.element is not None else ""
        return f"field '{self.spec.name}{sub}' ({self.spec.describe()}) of {self.vertex.describe()}"

    def _set_initial_value(self, values) -> None:
        spec = self.spec
        if spec.kind.is_edge:
            raise GraphConnectionError(f"set_initial_value: {self.describe()} is an edge: connect it to a tensor "
                                       "with graph.connect")
        if spec.kind is FieldKind.STATE:
            if type(values) is np.ndarray and values.shape == (1,) and values.dtype == spec.dtype.numpy:
                data = values.copy()  # already typed (as libraries setting many vertices pass it): no checks
            elif type(values) is int and spec.dtype.numpy.kind in "iu" and \
                    _int_range(spec.dtype.numpy)[0] <= values <= _int_range(spec.dtype.numpy)[1]:
                data = np.array([values], spec.dtype.numpy)  # a plain int that fits: typed_array's result
            else:
                data = typed_array(values, spec.dtype, (1,), f"set_initial_value of {self.describe()}",
                                   GraphConnectionError)
        elif type(values) is np.ndarray and values.ndim == 1 and values.dtype == spec.dtype.numpy:
            data = values.copy()  # already typed (libraries setting many vertices' worklists): typed_array's result
        else:
            flat = np.asarray(values).reshape(-1)
            data = typed_array(flat, spec.dtype, flat.shape, f"set_initial_value of {self.describe()}",
                               GraphConnectionError)
        self.vertex._connect(self.position, shared_values(data))
