"""A content digest of a graph and its programs: the key of the executable cache.

Two graphs with the same variables, mappings, initial values, codelets, vertices,
connections, estimates, streams, handles and programs get the same digest, whatever
Python objects they are made of. Tensor views are described by the elements they
cover; compiled codelets by their library (whose name holds its content hash).
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Iterable, List

import numpy as np

from . import program as P
from .tensor import Tensor


class _Digest:
    def __init__(self):
        self.h = hashlib.sha256()

    def text(self, *parts) -> None:
        self.h.update(repr(parts).encode())
        self.h.update(b"\n")

    def array(self, a: np.ndarray) -> None:
        a = np.ascontiguousarray(a)
        self.h.update(f"{a.dtype.str}{a.shape}".encode())
        self.h.update(a.tobytes())

    def ints(self, values: Iterable[int]) -> None:
        self.array(np.fromiter(values, np.int64))


def tensor_key(t: Tensor) -> int:
    """A stable integer naming the elements (and type) a view covers, in order."""
    if t._var is not None:
        # hash() of a tuple of ints does not depend on the process (only str hashing is salted)
        return hash((t._var.index, t._offset, t._shape, t._strides, t._dtype.code))
    return int.from_bytes(hashlib.blake2b(t._ids.tobytes() + repr((t._shape, t._dtype.code)).encode(),
                                          digest_size=8).digest(), "little", signed=True)


def graph_digest(state, programs: List[P.Program], *extra: str) -> str:
    """Hex digest of everything lowering reads from ``state`` and ``programs``, plus ``extra``."""
    d = _Digest()
    d.text("target", dataclasses.astuple(state.target)[:-1], state.replication_factor, *extra)
    _variables(d, state)
    for tensor, values in state.initial_values:
        d.text("initial", tensor_key(tensor))
        d.array(values)
    for s in sorted(state.streams.values(), key=lambda s: s.index):
        d.text("stream", s.handle, s.dtype.name, s.num_elements, s.direction.value)
    for kind, handles in (("write", state.host_writes), ("read", state.host_reads)):
        for handle, t in handles.items():
            d.text(kind, handle, tensor_key(t))
    for name, fn in sorted(state.estimators.items()):
        code = getattr(fn, "__code__", None)
        closure = tuple(c.cell_contents for c in (getattr(fn, "__closure__", None) or ()))
        d.text("estimator", name, getattr(fn, "__qualname__", repr(fn)),
               code.co_code if code else b"", repr(code.co_consts) if code else "", repr(closure))
    for cs in state.compute_sets:
        _compute_set(d, cs)
    d.text("functions", len(state.functions))
    for f in state.functions:
        d.text("function", f.index, f.name, _program(f.program))
    for p in programs:
        d.text("program", _program(p))
    return d.h.hexdigest()[:32]


def _variables(d: _Digest, state) -> None:
    for v in state.table.variables:
        d.text("var", v.name, v.dtype.name, v.shape, v.is_constant, v.mapping.whole_tile)
        if v.values is not None:
            d.array(v.values)
        if v.mapping.whole_tile is None:
            for paint in v.mapping.paints():
                for a in paint:
                    d.array(a)


def _compute_set(d: _Digest, cs) -> None:
    types = cs._types  # read by column (vertex_store.py): no handle or view is made per vertex
    d.text("cs", cs.name, len(types))
    if not types:
        return
    type_ids: dict = {}  # id(VertexType) -> (code, type): vertex types are not hashable
    codes = [type_ids.setdefault(id(vt), (len(type_ids), vt))[0] for vt in types]
    d.text("types", [(t.name, str(t.library), t.symbol, t.language) for _, t in type_ids.values()])
    d.ints(codes)
    d.ints(cs._tiles)  # -1: not placed
    d.ints(-1 if cycles is None else cycles for cycles in cs._perf)
    keys = []
    add = keys.append
    slots = cs._slots
    for vt, first in zip(types, cs._first):
        fields = vt.fields
        for spec, c in zip(fields, slots[first:first + len(fields)]):
            if type(c) is tuple:  # an edge record (var index, offset, shape, strides): as tensor_key
                add(hash((c[0], c[1], c[2], c[3], spec.dtype.code)))
            elif type(c) is Tensor and c._var is not None:  # the common case, inlined: see tensor_key
                add(hash((c._var.index, c._offset, c._shape, c._strides, c._dtype.code)))
            elif type(c) is Tensor:
                add(tensor_key(c))
            elif c is None:
                add(-1)
            elif isinstance(c, list):
                add(len(c))
                keys.extend(-1 if t is None else tensor_key(t) for t in c)
            else:  # plain state values
                add(int.from_bytes(hashlib.blake2b(np.ascontiguousarray(c).tobytes() + c.dtype.str.encode(),
                                                   digest_size=8).digest(), "little", signed=True))
    d.ints(keys)


def _program(p) -> tuple:
    """A program tree as nested tuples of names, numbers and tensor keys."""
    kind = type(p).__name__
    if isinstance(p, P.Sequence):
        return (kind, p.debug_name, tuple(_program(c) for c in p.programs))
    if isinstance(p, P.Execute):
        return (kind, p.debug_name, p.compute_set.index)
    if isinstance(p, P.Copy):
        def end(x):
            return ("stream", x.handle) if isinstance(x, P.DataStream) else tensor_key(x)
        return (kind, p.debug_name, end(p.src), end(p.dst))
    if isinstance(p, P.Repeat):
        return (kind, p.debug_name, p.count, _program(p.body))
    if isinstance(p, P._RepeatWhile):
        return (kind, p.debug_name, tensor_key(p.predicate), _program(p.condition), _program(p.body))
    if isinstance(p, P.If):
        return (kind, p.debug_name, tensor_key(p.predicate), _program(p.then_body), _program(p.else_body))
    if isinstance(p, P.Switch):
        return (kind, p.debug_name, tensor_key(p.control), tuple((k, _program(c)) for k, c in p.cases.items()),
                _program(p.default))
    if isinstance(p, P.Call):
        return (kind, p.debug_name, p.function.index)
    if isinstance(p, P.PrintTensor):
        return (kind, p.debug_name, p.title, tensor_key(p.tensor))
    if isinstance(p, (P.WriteUndef,)):
        return (kind, p.debug_name, tensor_key(p.tensor))
    if isinstance(p, P.Sync):
        return (kind, p.debug_name, p.sync_type.value)
    if isinstance(p, P.Abort):
        return (kind, p.debug_name, p.message)
    if isinstance(p, P.AbortOnCondition):
        return (kind, p.debug_name, tensor_key(p.predicate), p.message)
    return (kind, repr(p))
