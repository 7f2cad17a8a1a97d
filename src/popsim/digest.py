"""A content digest of a graph and its programs: the key of the executable cache.

Two graphs with the same variables, mappings, codelets, vertices, connections,
estimates, streams, handles and programs get the same digest, whatever Python objects
they are made of. Initial values (set_initial_value data of tensors, constants'
values) are data, not code: the digest covers which views have them and their types
and shapes, not the values, so that a program whose weights change from run to run
reuses its executable (the cache packs the graph's values on a hit:
lower/initial_image.py). Vertex state values are covered (perf estimators read them).
Tensor views are described by the elements they cover; compiled codelets by their library
(whose name holds its content hash) and their fields; perf estimators by everything their
code reaches (code_fingerprint.py); the target by every field that defines it; programs
through the one description of each program kind (program.py's PARTS, walked by
program_tree.py), the functions they Call included; popsim itself by the content of its
own sources and native core.
Anything else that changes what lowering produces must be added here.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import importlib.util
import operator
import typing
from pathlib import Path
from typing import Any, List, Tuple

import numpy as np

from ._core import bytes_key, content_key
from .code_fingerprint import code_fingerprint
from .program import Function, PartKind
from .program_tree import check_belongs_to, iter_programs, operands, parts_of
from .streams import DataStream
from .tensor import Tensor
from .vertex_store import EdgeList


class _Digest:
    def __init__(self):
        self.h = hashlib.sha256()

    def text(self, *parts) -> None:
        self.h.update(repr(parts).encode())
        self.h.update(b"\n")

    def array(self, a: np.ndarray) -> None:
        a = np.ascontiguousarray(a)
        self.h.update(f"{a.dtype.str}{a.shape}".encode())
        if a.size:  # the array's own memory, no copy, keyed in C (bytes_key: faster than sha256)
            self.h.update(bytes_key(a.reshape(-1).data.cast("B")))


def tensor_key(t: Tensor) -> tuple:
    """The elements (and type) a view covers, in order, as a tuple of ints: exactly its
    description for a view of one variable (never Python's hash(), where hash(-1) ==
    hash(-2) would make two views one), else a 128-bit digest of its element ids."""
    if t._var is not None:
        return (t._var.index, t._offset, t._shape, t._strides, t._dtype.code)
    ids = typing.cast(np.ndarray, t._ids)  # an indexed view: its ids are set
    return (-5,) + _digest_ints(ids.tobytes() + repr((t._shape, t._dtype.code)).encode())


def _digest_ints(data: bytes) -> tuple:
    """A 128-bit digest of ``data`` as two signed 64-bit ints (content_key reads them)."""
    digest = hashlib.blake2b(data, digest_size=16).digest()
    return (int.from_bytes(digest[:8], "little", signed=True), int.from_bytes(digest[8:], "little", signed=True))


def graph_digest(state, programs, *extra: str) -> str:
    """Hex digest of everything lowering reads from ``state`` and ``programs``, plus
    ``extra``. Raises ControlProgramError when a program uses another graph's objects."""
    d = _Digest()
    d.text("popsim build", build_fingerprint())
    target = state.target
    d.text("target", [(f.name, getattr(target, f.name)) for f in dataclasses.fields(target) if f.compare],
           state.replication_factor, *extra)
    _variables(d, state)
    for tensor, values in state.initial_values:  # which views, not the values (data: see above)
        d.text("initial", tensor_key(tensor), values.dtype.str, values.shape)
    for s in state.streams_by_index():
        d.text("stream", s.index, s.handle, s.dtype.name, s.num_elements, s.direction.value, s.replicated_mode.value)
    for t in state.replication_index:
        d.text("replication index", tensor_key(t))
    for kind, handles in (("write", state.host_writes), ("read", state.host_reads)):
        for handle, t in handles.items():
            d.text(kind, handle, tensor_key(t))
    for name, fn in sorted(state.estimators.items()):
        d.text("estimator", name, code_fingerprint(fn))
    for cs in state.compute_sets:
        _compute_set(d, cs)
    _programs(d, state, programs)
    return d.h.hexdigest()[:32]


@functools.lru_cache(maxsize=None)
def build_fingerprint() -> str:
    """A digest of popsim's own Python sources and native core: an executable lowered by
    another build of popsim (even one with the same version number) is not reused."""
    root = Path(__file__).resolve().parent
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".h", ".hpp", ".so", ".pyd"))
    core = importlib.util.find_spec("popsim._core")  # found, not imported: this layer stays off the core
    if core is not None and core.origin and Path(core.origin).resolve().parent != root:
        files.append(Path(core.origin))  # an editable install keeps the built core elsewhere
    h = hashlib.sha256()
    for path in files:
        h.update((str(path.relative_to(root)) if root in path.parents else path.name).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:32]


def _variables(d: _Digest, state) -> None:
    for v in state.table.variables:
        d.text("var", v.name, v.dtype.name, v.shape, v.is_constant, v.mapping.whole_tile)  # not a constant's values
        if v.mapping.whole_tile is None:  # every call's rows, in order (later ones win, across calls too)
            rows = v.mapping.paint_rows()
            d.array(rows[0] if len(rows) == 1 else np.concatenate(rows) if rows else np.zeros((0, 3), np.int64))


def _vertex_type(t) -> tuple:
    fields = [(f.name, f.dtype.name, f.kind.name, f.direction.name, getattr(f.element_kind, "name", None))
              for f in t.fields]
    return (t.name, str(t.library), t.symbol, t.language, t.multi, t.counts_cycles, t.state_size, fields)


def _compute_set(d: _Digest, cs) -> None:
    types = cs._types  # read by column (vertex_store.py): no handle or view is made per vertex
    d.text("cs", cs.name, len(types))
    if not types:
        return
    # Vertex types are not hashable: number them by identity, in order of first use. One
    # type (the common case) is found at C speed: list equality tries identity first
    # (and types equal in every field lower alike).
    if types == [types[0]] * len(types):
        d.text("type", _vertex_type(types[0]))
    else:
        ids = list(map(id, types))
        by_id = dict(zip(ids, types))
        code_of = {i: k for k, i in enumerate(by_id)}
        d.text("types", [_vertex_type(t) for t in by_id.values()])
        d.h.update(content_key(list(map(code_of.__getitem__, ids))))
    d.h.update(_key(cs.vertex_tiles.tolist()))  # -1: not placed
    perf = cs._perf
    key = content_key(perf)  # None when some vertex has no estimate of its own
    d.h.update(key if key is not None else _key([-1 if c is None else c for c in perf]))
    key = content_key(cs._slots)  # only edge records (the common case): read in C
    d.h.update(key if key is not None else _key(_canonical_slots(cs._slots, types, cs._first)))


def _key(items: list) -> bytes:
    """content_key of ``items`` (ints and tuples of ints), also when some are integers of
    another type (numpy's: the same key as plain ints); items content_key cannot read
    (integers beyond int64, tuples nested deeper) are keyed by their exact text."""
    key = content_key(items)
    if key is None:
        items = [_plain(x) for x in items]
        key = content_key(items)
    return key if key is not None else b"text" + hashlib.sha256(repr(items).encode()).digest()


def _plain(x):
    """``x`` with integers of any type as Python ints (anything else as it is)."""
    if type(x) is tuple:
        return tuple(map(_plain, x))
    try:
        return operator.index(x)
    except TypeError:
        return x


def _canonical_slots(slots: list, types: list, first: list) -> list:
    """The connection slots as content_key reads them: an edge record (var index,
    offset, shape, strides) is itself, and a Tensor of the field's element type over
    the same elements is that record, so that the digest does not depend on how a
    connection is stored; the rest are tagged tuples that no record can equal."""
    out: list = []
    add = out.append
    for vt, start in zip(types, first):
        fields = vt.fields
        for spec, c in zip(fields, slots[start:start + len(fields)]):
            if type(c) is tuple:
                add(c)
            elif type(c) is Tensor:
                add(_connection(c, spec.dtype))
            elif c is None:
                add((-1,))
            elif type(c) is EdgeList.TYPE:  # packed sub-edges: the same text as their Tensors'
                add((-2,) + _digest_ints(repr(list(EdgeList.records(c))).encode()))
            elif isinstance(c, list):  # sub-edges: a digest of their exact text
                add((-2,) + _digest_ints(repr([None if t is None else _connection(t, t.dtype) for t in c]).encode()))
            else:  # plain state values
                add((-3,) + _digest_ints(np.ascontiguousarray(c).tobytes() + c.dtype.str.encode()))
    return out


def _connection(t: Tensor, field_dtype) -> tuple:
    if t._var is not None:  # as the record the vertex store keeps for such a view
        record = (t._var.index, t._offset, t._shape, t._strides)
        return record if t._dtype is field_dtype else record + (t._dtype.code,)
    return (-4, tensor_key(t))


def _programs(d: _Digest, state, programs) -> None:
    """The programs, then every function they Call (each once, in the order first
    called), node by node in pre-order; each node's row names its kind and holds its
    parts, with the number of its children, so the rows determine the trees."""
    seen = set()
    trees: List[Tuple[Any, str, tuple]] = [(p, f"program {i}", ("program", i)) for i, p in enumerate(programs)]
    k = 0
    while k < len(trees):
        root, where, header = trees[k]
        k += 1
        d.text(*header)
        for p in iter_programs([root]):
            check_belongs_to(state, p, where)
            d.text(*_row(p))
            for part, obj in operands(p):
                if part.kind is PartKind.FUNCTION and id(obj) not in seen:
                    seen.add(id(obj))
                    fn = typing.cast(Function, obj)
                    trees.append((fn.program, f"function '{fn.name}'", ("function", fn.index, fn.name)))


def _row(p) -> tuple:
    row: list = [type(p).__module__, type(p).__qualname__]
    for part in parts_of(type(p)):
        value = getattr(p, part.name)
        kind = part.kind
        if kind is PartKind.PROGRAM:
            row.append("child")
        elif kind is PartKind.PROGRAMS:
            row.append(len(value))
        elif kind is PartKind.CASES:
            row.append(tuple(value))
        elif kind is PartKind.TENSOR:
            row.append(tensor_key(value))
        elif kind is PartKind.ENDPOINT:
            row.append(("stream", value.index, value.handle) if isinstance(value, DataStream) else tensor_key(value))
        elif kind in (PartKind.COMPUTE_SET, PartKind.FUNCTION):
            row.append(value.index)
        elif kind is PartKind.VALUE:
            row.append((type(value).__qualname__, value.value) if isinstance(value, enum.Enum) else value)
        else:  # a new PartKind: say how it is digested here
            raise TypeError(f"digest: part kind {kind} of {type(p).__name__}.{part.name} is not digested")
    return tuple(row)
