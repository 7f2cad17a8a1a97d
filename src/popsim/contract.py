"""The Python <-> C++ contract, read from the native core: every code and layout the
lowering, the engine and the codelet tools share with it.

The one copy lives in the C++ headers (native/core/executable.hpp, status.hpp and
src/popsim/codelet/include/popsim_codelet.h); native/binding/module.cpp exports it as
``popsim._core`` attributes and this module gives them Python shape. Import from here,
never write a code or a row width by hand. tests/test_contract.py checks that the two
sides agree (type codes against numpy, row widths against the struct sizes, the
popsim_exec layout against ctypes).

=====================  ====================================================================
name                   what
=====================  ====================================================================
Op                     opcodes of the instruction list (IntEnum: Op.COPY ...)
ScalarType             scalar type codes of predicates / switch controls (ScalarType.F32)
SCALAR_TYPE_INFO       ScalarType -> (bytes, numpy kind 'b' 'i' 'u' 'f')
Status                 how a run ended (Status.OK, Status.VERTEX_FAILED ...)
FieldBase              where a vertex field points (FieldBase.ARENA, SPANS, NONE)
VERTEX_MULTI           the vertex-row flag of a MultiVertex
STATE_ALIGNMENT        vertex state objects start at multiples of this many bytes
MAX_CALL_DEPTH         how deep Calls may nest (the VM's return stack)
COPY_RUN_LIMIT         the bound on a copy run's len, count, outer and stride magnitudes
MAX_TABLE_ELEMENTS     the most elements one copy table may move (MAX_TABLE_BYTES: bytes)
ErrorKind              what a codelet's popsim_exec.error holds (ErrorKind.INDEX_ERROR)
FaultPlace             where a vertex's code faulted (FaultPlace.STACK_OVERFLOW)
PeerOp                 what a run asks of the other MPI processes (PeerOp.EXCHANGE, GATHER)
CATEGORIES, CAT        the cost categories of a step's cost vector, and name -> index
NUM_CATEGORIES         len(CATEGORIES)
ROW_WIDTHS             table -> int64 columns per row (instrs, copy_runs, cases, vertices, ...)
COLUMNS                table -> {column name: index}, e.g. COLUMNS["vertices"]["tile"]
EXEC_FIELDS, EXEC_SIZE popsim_exec as (name, offset, size, kind) rows and its size in bytes
SPAN_FIELDS, SPAN_SIZE popsim_span (popsim_field) likewise
ExecContext, Span      ctypes structures built from those layouts
=====================  ====================================================================
"""
from __future__ import annotations

import ctypes
import enum
import re
from typing import Any, Dict, Tuple

from . import _core

__all__ = ["Op", "ScalarType", "SCALAR_TYPE_INFO", "Status", "FieldBase", "VERTEX_MULTI", "STATE_ALIGNMENT",
           "MAX_CALL_DEPTH", "COPY_RUN_LIMIT", "MAX_TABLE_ELEMENTS", "MAX_TABLE_BYTES", "ErrorKind", "FaultPlace",
           "PeerOp", "CATEGORIES", "CAT", "NUM_CATEGORIES", "ROW_WIDTHS", "COLUMNS", "EXEC_FIELDS", "EXEC_SIZE",
           "SPAN_FIELDS", "SPAN_SIZE", "ExecContext", "Span"]


def _upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).upper()


def _int_enum(name: str, native, doc: str) -> Any:
    """An IntEnum with the members of a pybind11 enum (names in UPPER_SNAKE case). Any to
    mypy: its members come from the core, so no type can name them."""
    members = {_upper_snake(k): int(v) for k, v in native.__members__.items()}
    # mypy reads the functional API only with a literal name and members; these come from the core
    cls = enum.IntEnum(name, members, module=__name__)  # type: ignore[misc]
    cls.__doc__ = doc
    return cls


Op = _int_enum("Op", _core.Op, "Opcodes of the core's instruction list (native/core/executable.hpp).")
ScalarType = _int_enum("ScalarType", _core.ScalarType, "Scalar type codes of control-flow predicates.")
Status = _int_enum("Status", _core.Status, "How a run of the core ended (native/core/status.hpp).")
FieldBase = _int_enum("FieldBase", _core.FieldBase, "Where a vertex field row points.")
ErrorKind = _int_enum("ErrorKind", _core.ErrorKind, "What a codelet reports in popsim_exec.error.")
FaultPlace = _int_enum("FaultPlace", _core.FaultPlace, "Where a vertex's code faulted (native/core/status.hpp).")
PeerOp = _int_enum("PeerOp", _core.PeerOp, "What a run asks of the other MPI processes (native/core/peers.hpp).")

#: ScalarType -> (bytes, numpy kind)
SCALAR_TYPE_INFO: Dict[enum.IntEnum, Tuple[int, str]] = {
    ScalarType(code): (int(size), kind) for _, code, size, kind in _core.SCALAR_TYPES}

VERTEX_MULTI: int = int(_core.VERTEX_FLAGS["MULTI"])
STATE_ALIGNMENT: int = int(_core.STATE_ALIGNMENT)  # vertex state offsets are multiples of this
MAX_CALL_DEPTH: int = int(_core.MAX_CALL_DEPTH)
COPY_RUN_LIMIT: int = int(_core.COPY_RUN_LIMIT)  # copy runs' lengths, counts and strides (copy_runs.py)
MAX_TABLE_ELEMENTS: int = int(_core.MAX_TABLE_ELEMENTS)
MAX_TABLE_BYTES: int = int(_core.MAX_TABLE_BYTES)

CATEGORIES: Tuple[str, ...] = tuple(_core.CATEGORIES)
CAT: Dict[str, int] = {name: i for i, name in enumerate(CATEGORIES)}
NUM_CATEGORIES: int = len(CATEGORIES)

ROW_WIDTHS: Dict[str, int] = {k: int(v) for k, v in _core.ROW_WIDTHS.items()}
COLUMNS: Dict[str, Dict[str, int]] = {table: {name: int(i) for name, i in cols}
                                      for table, cols in _core.ROW_COLUMNS.items()}

EXEC_FIELDS: Tuple[Tuple[str, int, int, str], ...] = tuple(tuple(f) for f in _core.EXEC_FIELDS)
EXEC_SIZE: int = int(_core.EXEC_SIZE)
SPAN_FIELDS: Tuple[Tuple[str, int, int, str], ...] = tuple(tuple(f) for f in _core.SPAN_FIELDS)
SPAN_SIZE: int = int(_core.SPAN_SIZE)

_CTYPES = {("u", 4): ctypes.c_uint32, ("u", 8): ctypes.c_uint64, ("i", 4): ctypes.c_int32,
           ("i", 8): ctypes.c_int64, ("p", ctypes.sizeof(ctypes.c_void_p)): ctypes.c_void_p}


def _structure(name: str, fields, size: int) -> type:
    """A ctypes Structure with exactly the C layout ``fields`` describe."""
    cls = type(name, (ctypes.Structure,), {"_fields_": [(n, _CTYPES[(kind, nbytes)]) for n, _, nbytes, kind in fields]})
    layout = [(n, getattr(cls, n).offset, getattr(cls, n).size) for n, _, _, _ in fields]
    if layout != [(n, off, nbytes) for n, off, nbytes, _ in fields] or ctypes.sizeof(cls) != size:
        raise ImportError(f"popsim's ctypes {name} does not match the native layout: rebuild popsim")
    return cls


#: popsim_exec as a ctypes Structure (the codelet ABI's execution context).
ExecContext = _structure("ExecContext", EXEC_FIELDS, EXEC_SIZE)
#: popsim_span / popsim_field as a ctypes Structure.
Span = _structure("Span", SPAN_FIELDS, SPAN_SIZE)
