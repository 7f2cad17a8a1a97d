"""The codelet ABI (include/popsim_codelet.h) driven from Python: the executable spec of
how the engine binds and runs a vertex, and the way tests run one vertex of a compiled
codelet library without an engine, against numpy.

The sequence is the engine's (native/core/compute_set.cpp): PREFIX_size bytes of zeroed
state, PREFIX_init on it, PREFIX_bind with one popsim_field per field in declaration
order, then PREFIX_compute(obj, worker, ctx) with a fresh popsim_exec; 1 means success,
0 that the vertex returned false, -1 an error described in ctx (error kind, field,
index, size, line).

Field values, by kind (the same convention as popsim.codelet.interpret):
  scalar edge / state    a 1-element numpy array of the field's dtype
  vector edge / state vector   a 1-D numpy array
  vector of edges, VectorList  a list of 1-D numpy arrays
Arrays are used in place: outputs land in them.
"""
from __future__ import annotations

import ctypes
from typing import Tuple

import numpy as np

from .fields import FieldKind
from ..contract import ExecContext as Exec  # popsim_exec, laid out as the core exports it
from ..contract import ErrorKind, Span
from ..target import HARDWARE_WORKER_CONTEXTS

__all__ = ["Span", "Exec", "run_compiled", "OK", "INDEX_ERROR", "EXCEPTION", "INTERRUPTED"]

#: popsim_error_kind, as the core exports it
OK, INDEX_ERROR, EXCEPTION, INTERRUPTED = (int(ErrorKind.OK), int(ErrorKind.INDEX_ERROR), int(ErrorKind.EXCEPTION),
                                           int(ErrorKind.INTERRUPTED))


def _functions(vertex_type):
    lib = ctypes.CDLL(str(vertex_type.library))
    size = getattr(lib, vertex_type.symbol + "_size")
    size.restype, size.argtypes = ctypes.c_uint64, []
    init = getattr(lib, vertex_type.symbol + "_init")
    init.restype, init.argtypes = None, [ctypes.c_void_p]
    bind = getattr(lib, vertex_type.symbol + "_bind")
    bind.restype, bind.argtypes = None, [ctypes.c_void_p, ctypes.POINTER(Span)]
    compute = getattr(lib, vertex_type.symbol + "_compute")
    compute.restype, compute.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(Exec)]
    return size, init, bind, compute


def _span(arr: np.ndarray) -> Span:
    if not (isinstance(arr, np.ndarray) and arr.flags.c_contiguous and arr.ndim == 1):
        raise TypeError(f"fields take 1-D C-contiguous numpy arrays, found {type(arr).__name__}")
    return Span(arr.ctypes.data, arr.size)


def run_compiled(vertex_type, values, worker: int = 0, num_workers: int = HARDWARE_WORKER_CONTEXTS,
                 interrupted: bool = False) -> Tuple[int, Exec]:
    """Bind ``values`` (one per field, declaration order) and run compute once (a
    MultiVertex: once per worker). ``interrupted`` runs it with the interrupt flag
    already set (as after Ctrl-C). Returns (return code of the last call, Exec)."""
    if len(values) != len(vertex_type.fields):
        raise ValueError(f"vertex type '{vertex_type.name}' has {len(vertex_type.fields)} fields, {len(values)} "
                         "values given")
    size, init, bind, compute = _functions(vertex_type)
    obj = ctypes.create_string_buffer(max(1, size()))  # zeroed, like the engine's state memory
    init(obj)
    fields = (Span * max(1, len(values)))()
    keep = []
    for i, (spec, value) in enumerate(zip(vertex_type.fields, values)):
        if spec.kind in (FieldKind.EDGE_VECTOR, FieldKind.VECTOR_LIST):
            spans = (Span * max(1, len(value)))(*[_span(v) for v in value])
            keep.append(spans)
            fields[i] = Span(ctypes.addressof(spans), len(value))
        else:
            fields[i] = _span(value)
    bind(obj, fields)
    flag = ctypes.c_int32(1 if interrupted else 0)
    ctx = Exec(cycles=0, num_workers=num_workers, error=0, error_field=-1,
               interrupt=ctypes.cast(ctypes.pointer(flag), ctypes.c_void_p))
    workers = range(num_workers) if vertex_type.multi else [worker]
    ret = 1
    for w in workers:
        ret = compute(obj, w, ctypes.byref(ctx))
        if ret != 1:
            break
    return ret, ctx
