"""Run one vertex of a compiled codelet library through the ABI (popsim_codelet.h),
without an engine: for testing the codelet front ends against numpy.

Field values, by kind (the same convention as popsim.codelet.interpret):
  scalar edge / state    a 1-element numpy array of the field's dtype
  vector edge / state vector   a 1-D numpy array
  vector of edges, VectorList  a list of 1-D numpy arrays
Arrays are used in place: outputs land in them.
"""
import ctypes

import numpy as np

from popsim.codelet.fields import FieldKind
from popsim.contract import ExecContext as Exec  # popsim_exec, laid out as the core exports it
from popsim.contract import Span


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
    assert isinstance(arr, np.ndarray) and arr.flags.c_contiguous and arr.ndim == 1, "fields take 1-D C arrays"
    return Span(arr.ctypes.data, arr.size)


def run_compiled(vertex_type, values, worker=0, num_workers=6):
    """Bind ``values`` (one per field, declaration order) and run compute once (a
    MultiVertex: once per worker). Returns (return code of the last call, Exec)."""
    assert len(values) == len(vertex_type.fields), "one value per field"
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
    ctx = Exec(cycles=0, num_workers=num_workers, error=0, error_field=-1)
    workers = range(num_workers) if vertex_type.multi else [worker]
    ret = 1
    for w in workers:
        ret = compute(obj, w, ctypes.byref(ctx))
        if ret != 1:
            break
    return ret, ctx
