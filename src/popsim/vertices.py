"""Vertices in a graph: instances of vertex types in compute sets, their tiles, field
connections, plain state values and cycle estimates.

Graph mixes in :class:`VertexBuilding`; connections are checked as they are made
(field names, kinds, element types), completeness when an Engine is built. How compute
sets store their vertices is vertex_store.py's business. add_vertex's common call runs in
C (popsim._vertex_build, native/accel/vertex_build.cpp): the same checks and the same
columns as the Python path here, which it hands everything else to.
"""
from __future__ import annotations

from array import array
from collections.abc import Mapping
from sys import getrefcount
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

import numpy as np

from .codelet.fields import FieldKind, FieldSpec
from .codelet.registry import CodeletRegistry
from .codelet.vertex_type import VertexType
from . import errors
from .arguments import as_size, found
from .errors import GraphConnectionError, UnknownVertexTypeError, did_you_mean
from .tensor import Tensor
from .variables import Variable
from .vertex_store import (WRITING, ComputeSet, EdgeList, FieldRef, VertexRef, build_plan,
                           count_vertices_and_edges, edge_record, positions, shared_int, shared_values)
from ._vertex_build import configure as _configure_lean_path, lean_add_vertex

if TYPE_CHECKING:  # only for annotations
    from .graph_description import GraphDescription

_configure_lean_path(Tensor, Variable, ComputeSet, VertexRef)

_new = object.__new__


def _references_of_a_dict_value() -> int:
    """sys.getrefcount of a value only a dict holds, seen in a loop over the dict's items
    like add_vertex's (the interpreter's own references vary between Python versions)."""
    count = 0
    for _, value in {"probe": object()}.items():
        count = getrefcount(value)
    return count


_ONLY_IN_THE_DICT = _references_of_a_dict_value()

__all__ = ["ComputeSet", "VertexRef", "FieldRef", "VertexInfo", "VertexBuilding", "count_vertices_and_edges"]


class VertexInfo:
    """What a registered perf estimator sees of a vertex (Poplar's VertexIntrospector)."""

    __slots__ = ("_vertex",)

    def __init__(self, vertex: VertexRef):
        self._vertex = vertex

    @property
    def type(self) -> str:
        return self._vertex.type.name

    @property
    def tile(self) -> Optional[int]:
        return self._vertex.tile

    def field_size(self, name: str) -> int:
        """Elements of a vector edge or state vector, sub-edges of a list field, 1 otherwise."""
        c = self._vertex.stored(self._vertex[name].position)
        if type(c) is tuple:   # an edge record
            return int(np.prod(c[2]))
        if isinstance(c, Tensor):
            return c.num_elements()
        if type(c) is EdgeList.TYPE:
            return EdgeList.count(c)
        if isinstance(c, (list, np.ndarray)):
            return len(c)
        return 0

    def field_sizes(self, name: str) -> List[int]:
        """Elements of each sub-edge of a list field."""
        c = self._vertex.stored(self._vertex[name].position)
        if type(c) is EdgeList.TYPE:
            return EdgeList.sizes(c)
        return [t.num_elements() if isinstance(t, Tensor) else 0 for t in (c or [])]

    def initial_value(self, name: str):
        v = self._vertex
        vt = v.compute_set._types[v.index]
        position = positions(vt).get(name)   # (cached on the type: estimators ask per vertex)
        c = v.connection(v[name].position if position is None else position)   # v[name] names an unknown field
        return None if c is None else (c[0] if len(c) == 1 else c)


def _list_plan(vt: VertexType) -> Dict[str, tuple]:
    """For each list field of edges: (position, element type, each sub-edge a scalar, is
    written), what add_vertex's lean path for lists checks sub-edges against; cached."""
    plan = vt.extra["list_plan"] = {
        f.name: (i, f.dtype, f.kind is FieldKind.EDGE_VECTOR and f.element_kind is FieldKind.SCALAR_EDGE,
                 f.direction in WRITING)
        for i, f in enumerate(vt.fields) if f.kind.is_list and f.kind.is_edge}
    return plan


def _lean_sub_edges(value: list, table, entry: tuple) -> Optional[list]:
    """The list a list field stores for ``value`` when every sub-edge is a view _checked
    would take as it is (of this graph and the field's type, one element for scalars, not
    rank 0 for vectors, no constant where the vertex writes); else None (connect checks and
    explains). What ``packed`` makes of them, in the same pass."""
    _, dtype, scalar, writing = entry
    data: List[int] = []
    add = data.extend
    rank = -1   # the sub-edges' rank while all are strided views of one rank; -2 once they are not
    for t in value:
        if type(t) is not Tensor or t._table is not table or t._dtype is not dtype:
            return None
        var, shape = t._var, t._shape
        if var is None:
            if writing and t.contains_constant():
                return None
            rank = -2
        else:
            if writing and var.is_constant:
                return None
            if rank != -2:
                if rank >= 0 and len(shape) != rank:
                    rank = -2
                else:
                    rank = len(shape)
                    add((var.index, t._offset))
                    add(shape)
                    add(t._strides)
        if (t.num_elements() != 1) if scalar else not shape:
            return None
    return EdgeList.pack(rank, array("q", data)) if rank >= 0 and data else list(value)


def packed(edges: list) -> object:
    """What a list field stores for sub-edges ``edges`` (Tensors it takes, checked): an
    EdgeList when all are strided views of one variable and of one rank, else a list."""
    data: List[int] = []
    add = data.extend
    rank = -1
    for t in edges:
        var, shape = t._var, t._shape
        if var is None or (len(shape) != rank and rank >= 0):
            return list(edges)
        rank = len(shape)
        add((var.index, t._offset))
        add(shape)
        add(t._strides)
    return EdgeList.pack(rank, array("q", data)) if data else list(edges)


def _state_plan(vt: VertexType) -> Dict[str, tuple]:
    """For each plain integer STATE field: (position, numpy type, lowest, highest value), what
    add_vertex's lean path for a plain int checks (FieldRef._set_initial_value's int branch,
    which stores the same (1,) array); cached."""
    plan = vt.extra["state_plan"] = {}
    for i, f in enumerate(vt.fields):
        if f.kind is FieldKind.STATE and np.dtype(getattr(f.dtype, "numpy", None) or object).kind in "iu":
            info = np.iinfo(f.dtype.numpy)
            plan[f.name] = (i, f.dtype.numpy, int(info.min), int(info.max))
    return plan


def _vector_state_plan(vt: VertexType) -> Dict[str, tuple]:
    """For each STATE_VECTOR field of a numpy element type: (position, numpy type), what
    add_vertex's lean path for a typed 1-D array checks (FieldRef._set_initial_value's
    typed-array branch, which stores the same copy); cached."""
    plan = vt.extra["vector_state_plan"] = {
        f.name: (i, f.dtype.numpy) for i, f in enumerate(vt.fields)
        if f.kind is FieldKind.STATE_VECTOR and isinstance(getattr(f.dtype, "numpy", None), np.dtype)}
    return plan


class VertexBuilding:
    """The vertex half of Graph's API (mixed into Graph)."""

    _state: GraphDescription

    # -- codelets ----------------------------------------------------------------------------
    @property
    def _codelets(self) -> CodeletRegistry:
        return self._state.codelets

    def add_codelets(self, src, compile_flags: str = "") -> List[str]:
        """Register vertex types: a Vertex class, a list of them, a module of them, or the
        path of a Poplar C++ codelet file (compiled with the host compiler). Idempotent
        per source. Returns the names registered."""
        return [vt.name for vt in self._codelets.add(src, compile_flags)]

    def has_codelet(self, name: str) -> bool:
        if not isinstance(name, str):
            raise errors.TypeError(f"has_codelet: a vertex type is named by a string, found {found(name)}")
        return name in self._codelets

    def vertex_type(self, name: str) -> VertexType:
        if not isinstance(name, str):
            raise errors.TypeError(f"vertex_type: a vertex type is named by a string, found {found(name)}")
        return self._codelets.get(name)

    # -- vertices -----------------------------------------------------------------------------
    def add_vertex(self, compute_set, vertex_type, connections: Optional[Dict[str, object]] = None) -> VertexRef:
        """A vertex of ``vertex_type`` (a registered name, or a Vertex class, registered on
        first use) in ``compute_set``, with optional ``{field: tensor}`` connections."""
        # The common call (a type name whose plan is made, every connection a lean one: see
        # _add_vertex_in_python) runs in C, native/accel/vertex_build.cpp; for any other it
        # changes nothing and returns None.
        v = lean_add_vertex(self._state, compute_set, vertex_type, connections)
        if v is not None:
            return v
        return self._add_vertex_in_python(compute_set, vertex_type, connections)

    def _add_vertex_in_python(self, compute_set, vertex_type, connections) -> VertexRef:
        """Every form of add_vertex and every error. The C path takes only the calls this one
        completes on its lean branch, with the same result (tests/test_vertex_build.py)."""
        if type(compute_set) is not ComputeSet or compute_set._state is not self._state:
            raise GraphConnectionError(f"add_vertex needs a compute set of this graph, found {found(compute_set)}")
        if connections is not None and type(connections) is not dict and not isinstance(connections, Mapping):
            # (checked before the vertex exists; a dict, the common case, without the ABC's check)
            raise errors.TypeError(f"add_vertex: connections must be a dict {{field name: tensor}}, found "
                                   f"{found(connections)}")
        state = self._state
        vt = state.codelets.types.get(vertex_type) if type(vertex_type) is str else None
        if vt is None:
            if isinstance(vertex_type, str):
                vt = self._codelets.get(vertex_type)  # raises, naming the unknown type
            else:
                registered = self._codelets.add(vertex_type)
                if len(registered) != 1:
                    raise GraphConnectionError(f"add_vertex: {vertex_type!r} is not a single vertex class")
                vt = registered[0]
        empty_slots, plan = vt.extra.get("build_plan") or build_plan(vt)
        # The vertex's columns in its compute set (vertex_store.py) and its handle, written out here:
        # add_vertex runs once per vertex of a program.
        types = compute_set._types
        index = len(types)
        types.append(vt)
        compute_set._tiles.append(compute_set._default_tile)
        compute_set._perf.append(None)
        slots = compute_set._slots
        first = len(slots)
        compute_set._first.append(first)
        slots += empty_slots
        v = _new(VertexRef)
        v.compute_set = compute_set
        v.index = index
        if connections:
            table = state.table
            for name, value in connections.items():
                # The common case, kept lean: a scalar or vector edge connected to one strided view of a
                # variable, of the field's type, with the element count its kind needs, never a constant
                # it would write. Anything else goes through connect(), which checks (and explains) it all.
                entry = plan.get(name)
                if entry is not None and type(value) is Tensor:
                    var = value._var
                    if var is not None and value._table is table and value._dtype is entry[1]:
                        shape = value._shape
                        if (shape if entry[2] else shape == () or shape == (1,)) \
                                and not (entry[3] and var.is_constant):
                            # A view only the dict holds is stored as an edge record and freed, one the
                            # caller keeps is stored as is: either way nothing per edge is left for the
                            # garbage collector to trace (see vertex_store.py); both read back the same.
                            slots[first + entry[0]] = value if getrefcount(value) > _ONLY_IN_THE_DICT else \
                                (var.index, value._offset, shape, value._strides)  # edge_record(value)
                            continue
                elif type(value) is int:   # a plain int state value
                    entry = vt.extra.get("state_plan")
                    entry = (_state_plan(vt) if entry is None else entry).get(name)
                    if entry is not None and entry[2] <= value <= entry[3]:
                        slots[first + entry[0]] = shared_int(value, entry[1])
                        continue
                elif type(value) is np.ndarray:   # a state vector's values, already typed (libraries' worklists)
                    entry = vt.extra.get("vector_state_plan")
                    entry = (_vector_state_plan(vt) if entry is None else entry).get(name)
                    if entry is not None and value.ndim == 1 and value.dtype == entry[1]:
                        slots[first + entry[0]] = shared_values(value, copy=True)   # FieldRef._set_initial_value's
                        continue
                elif type(value) is list:
                    entry = (vt.extra.get("list_plan") or _list_plan(vt)).get(name)
                    if entry is not None:
                        edges = _lean_sub_edges(value, table, entry)
                        if edges is not None:
                            slots[first + entry[0]] = edges
                            continue
                self.connect(v[name], value)
        return v

    def connect(self, field: FieldRef, value) -> None:
        """Connect an edge field to a tensor (a list of tensors for vectors of edges and
        VectorLists; one tensor for a sub-edge ``v["ins"][i]``), or give a plain state
        field its value."""
        if type(field) is FieldRef and type(value) is Tensor and field.element is None:
            # A scalar or vector edge to a strided view of its type: add_vertex's lean path (and test)
            vertex = field.vertex
            cs = vertex.compute_set
            vt = cs._types[vertex.index]
            entry = (vt.extra.get("build_plan") or build_plan(vt))[1].get(field.spec.name)
            var = value._var
            if entry is not None and var is not None and value._table is self._state.table \
                    and value._dtype is entry[1] and cs._state is self._state:
                shape = value._shape
                if (shape if entry[2] else shape == () or shape == (1,)) and not (entry[3] and var.is_constant):
                    cs._slots[cs._first[vertex.index] + entry[0]] = (var.index, value._offset, shape, value._strides)
                    return
        self._connect_general(field, value)

    def _connect_general(self, field: FieldRef, value) -> None:
        """Every form of connect and every error (the lean paths must agree with it)."""
        if not isinstance(field, FieldRef):
            raise errors.TypeError(f"connect: expected a vertex field (v['name']), found {type(field).__name__}")
        self._check_own_vertex(field.vertex, "connect")
        spec = field.spec
        if not spec.kind.is_edge:
            field._set_initial_value(value)
            return
        vertex = field.vertex
        if spec.kind.is_list:
            if field.element is None:
                if isinstance(value, Tensor) or not isinstance(value, (list, tuple)):
                    raise GraphConnectionError(f"{field.describe()} takes a list of tensors (one per sub-edge), "
                                               f"found {type(value).__name__}")
                vertex._connect(field.position, packed([self._checked(vertex, spec, t, field, k)
                                                        for k, t in enumerate(value)]))
                return
            edges = vertex.connection(field.position)
            if edges is None or not 0 <= field.element < len(edges):
                size = 0 if edges is None else len(edges)
                raise GraphConnectionError(f"{field.describe()}: sub-edge {field.element} is out of range for a "
                                           f"field of size {size}; call graph.set_field_size first")
            edges[field.element] = self._checked(vertex, spec, value, field, field.element)
            return
        if field.element is not None:
            raise GraphConnectionError(f"{field.describe()} has no sub-edges")
        t = self._checked(vertex, spec, value, field, None)
        vertex._connect(field.position, edge_record(t) if t._var is not None else t)

    def _check_own_vertex(self, vertex: VertexRef, what: str) -> None:
        """GraphConnectionError unless ``vertex`` was added to this graph (or a virtual graph
        sharing its state): another graph's engine would run it on the wrong variables."""
        if vertex.compute_set._state is not self._state:
            raise GraphConnectionError(f"{what} of {vertex.describe()}: the vertex belongs to another graph; call "
                                       f"{what} on the graph (or a virtual graph of it) whose add_vertex made it")

    def _checked(self, vertex: VertexRef, spec: FieldSpec, t, field: Optional[FieldRef],
                 element: Optional[int]) -> Tensor:
        """``t`` if it suits the field (or sub-edge ``element``); else a GraphConnectionError."""
        def where() -> str:
            f = field or vertex[spec.name]
            return f.describe() if element is None or f.element is not None else f"sub-edge {element} of {f.describe()}"
        if type(t) is not Tensor:
            raise GraphConnectionError(f"{where()} must be connected to a Tensor, found {type(t).__name__}")
        if t._table is not self._state.table:
            raise GraphConnectionError(f"{where()}: tensor '{t.name}' belongs to a different graph")
        if t._dtype is not spec.dtype:
            raise GraphConnectionError(f"{where()} holds {spec.dtype.name} but tensor '{t.name}' is {t.dtype.name}")
        scalar = spec.kind is FieldKind.SCALAR_EDGE or \
            (spec.kind is FieldKind.EDGE_VECTOR and spec.element_kind is FieldKind.SCALAR_EDGE)
        if scalar:
            if t.num_elements() != 1:
                raise GraphConnectionError(f"{where()} is a scalar but tensor '{t.name}' has shape {list(t.shape)} "
                                           f"({t.num_elements()} elements); connect one element, e.g. t[i]")
        elif not t._shape:
            raise GraphConnectionError(f"{where()} is a vector but tensor '{t.name}' is a scalar (rank 0); connect "
                                       "a 1-D view, e.g. t.reshape([1])")
        if spec.direction in WRITING and (t._var.is_constant if t._var is not None else t.contains_constant()):
            raise GraphConnectionError(f"{where()} is written by the vertex but tensor '{t.name}' is (or contains) "
                                       "a constant")
        return t

    def set_field_size(self, field: FieldRef, size: int) -> None:
        """The number of sub-edges of a vector of edges / VectorList, before connecting
        ``v["ins"][i]`` one by one."""
        if not isinstance(field, FieldRef):
            raise GraphConnectionError(f"set_field_size: expected a vertex field (v['name']), found "
                                       f"{type(field).__name__}")
        self._check_own_vertex(field.vertex, "set_field_size")
        if not field.spec.kind.is_list or field.element is not None:
            raise GraphConnectionError(f"set_field_size: {field.describe()} is not a vector of edges or VectorList")
        n = as_size(size, f"set_field_size of {field.describe()}: size", GraphConnectionError)
        field.vertex._connect(field.position, [None] * n)

    def get_field_size(self, field: FieldRef) -> int:
        if not isinstance(field, FieldRef):
            raise errors.TypeError(f"get_field_size: expected a vertex field (v['name']), found {type(field).__name__}")
        c = field.vertex.connection(field.position)
        return 0 if c is None else len(c)

    def set_perf_estimate(self, vertex: VertexRef, cycles: int, flops: int = 0) -> None:
        """The worker cycles one run of ``vertex`` costs in the model (Poplar's
        setPerfEstimate); it overrides estimators and automatic counting."""
        if type(vertex) is VertexRef and type(cycles) is int and cycles >= 0 and type(flops) is int and flops >= 0 \
                and vertex.compute_set._state is self._state:
            vertex.compute_set._perf[vertex.index] = cycles  # the common call, kept lean
            return
        if not isinstance(vertex, VertexRef):
            raise errors.TypeError(f"set_perf_estimate: expected a vertex, found {type(vertex).__name__}")
        self._check_own_vertex(vertex, "set_perf_estimate")
        if type(cycles) is not int or cycles < 0:  # ints are the hot path (one call per vertex in tutorial 6)
            cycles = as_size(cycles, f"set_perf_estimate of {vertex.describe()}: cycles", GraphConnectionError)
        if type(flops) is not int or flops < 0:
            as_size(flops, f"set_perf_estimate of {vertex.describe()}: flops", GraphConnectionError)
        vertex.perf_estimate = cycles

    def get_perf_estimate(self, vertex: VertexRef) -> Optional[int]:
        if not isinstance(vertex, VertexRef):
            raise errors.TypeError(f"get_perf_estimate: expected a vertex, found {type(vertex).__name__}")
        return vertex.perf_estimate

    def register_perf_estimator(self, vertex_type: str, estimator: Callable) -> None:
        """``estimator(vertex_info, target) -> cycles`` for every vertex of the type
        without its own perf estimate."""
        if not callable(estimator):
            raise errors.TypeError("register_perf_estimator needs a callable estimator(vertex_info, target)")
        if not isinstance(vertex_type, str):
            raise UnknownVertexTypeError(f"register_perf_estimator: the vertex type must be a registered name, found "
                                         f"{type(vertex_type).__name__} {vertex_type!r}")
        try:
            self._codelets.get(vertex_type)  # Poplar only takes estimators for vertex types it knows
        except UnknownVertexTypeError:
            raise UnknownVertexTypeError(
                f"register_perf_estimator: unknown vertex type '{vertex_type}': "
                f"{did_you_mean(vertex_type, self._codelets.types)}; add its codelets with graph.add_codelets(...) "
                "before registering an estimator for it") from None
        self._state.estimators[vertex_type] = estimator
