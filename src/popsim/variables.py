"""Variables and constants: the only things that own device state.

Every variable of a graph owns a range of *global element ids* ``[base, base + size)``;
a tensor view is a set of such ids in some shape. The table is shared by a graph and
all its virtual graphs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, NamedTuple, Optional, Tuple

import numpy as np

from .errors import TensorCreationError
from .mapping import VariableMapping
from .runs import search
from .types import Type

if TYPE_CHECKING:  # only for annotations: tensor.py imports this module
    from .tensor import Tensor

# The bytes all variables and constants of a graph may hold together: 1 PiB, a million
# times an ipu2's memory, yet small enough that every element id, arena offset and byte
# count (times any replication factor) stays a 64-bit integer.
MAX_GRAPH_BYTES = 1 << 50


class Variable:
    """A variable or constant: name, type, shape, its global id range and tile mapping."""

    __slots__ = ("index", "name", "dtype", "shape", "size", "base", "is_constant", "mapping", "values", "metadata")

    def __init__(self, index: int, name: str, dtype: Type, shape: Tuple[int, ...], base: int,
                 is_constant: bool, values: Optional[np.ndarray]):
        self.index = index
        self.name = name
        self.dtype = dtype
        self.shape = shape
        size = 1
        for d in shape:
            size *= d
        self.size = size
        self.base = base
        self.is_constant = is_constant
        self.mapping = VariableMapping(self.size)
        self.values = values  # constants: flat host values in the variable's dtype
        self.metadata: Optional[Tensor] = None  # QUARTER: its QUARTER_METADATA tensor (popsim/quarter.py)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.size

    @property
    def kind(self) -> str:
        return "constant" if self.is_constant else "variable"

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name!r} {self.dtype.name} {list(self.shape)}>"


def check_size(shape: Tuple[int, ...], dtype: Type, kind: str, name: Optional[str], held: int = 0) -> None:
    """Refuse (TensorCreationError) a ``kind`` of ``shape`` that would take the graph past
    MAX_GRAPH_BYTES (``held``: the bytes it holds already), or has a dimension
    past it (even with another dimension 0, such a size overflows strides and offsets)."""
    size = 1
    for d in shape:
        size *= d
    nbytes = size * dtype.size
    if nbytes + held <= MAX_GRAPH_BYTES and all(d <= MAX_GRAPH_BYTES for d in shape):
        return
    what = f"{kind} '{name}'" if name else kind
    held_text = f" with the {held:,} bytes the graph holds already" if held and nbytes <= MAX_GRAPH_BYTES else ""
    raise TensorCreationError(
        f"{what} of shape {list(shape)} ({dtype.name}) is {nbytes:,} bytes{held_text}: popsim's graphs hold at most "
        f"{MAX_GRAPH_BYTES:,} bytes (2**50) of variables and constants, each dimension at most 2**50, far more "
        "than any IPU's memory (an ipu2 has 1472 tiles of 624 KiB); make the tensor smaller")


class VariableTable:
    """All variables and constants of one graph, in creation order."""

    def __init__(self):
        self.variables: List[Variable] = []
        self._bases = np.zeros(64, np.int64)  # grown by doubling: index_of stays cheap while building
        self.next_base = 0
        self.nbytes = 0  # of all variables and constants, for check_size

    def add(self, name: str, dtype: Type, shape: Tuple[int, ...], is_constant: bool = False,
            values: Optional[np.ndarray] = None) -> Variable:
        check_size(shape, dtype, "constant" if is_constant else "variable", name, self.nbytes)
        var = Variable(len(self.variables), name, dtype, shape, self.next_base, is_constant, values)
        n = len(self.variables)
        if n == self._bases.size:
            self._bases = np.concatenate([self._bases, np.zeros(n, np.int64)])
        self._bases[n] = self.next_base
        self.variables.append(var)
        self.next_base += var.size
        self.nbytes += var.nbytes
        return var

    def __len__(self) -> int:
        return len(self.variables)

    def bases(self) -> np.ndarray:
        return self._bases[:len(self.variables)]

    def index_of(self, ids: np.ndarray) -> np.ndarray:
        """The variable index owning each global id."""
        return search(self.bases(), ids, side="right") - 1

    def run_starts(self, ids: np.ndarray, cuts: Optional[np.ndarray] = None) -> np.ndarray:
        """Where, in the flat ``ids``, each maximal run of consecutive ids of one variable
        begins (also at each position in ``cuts``). What comparing ``index_of`` of neighbours
        gives, with the variables looked up once per run of consecutive ids, not once per
        id: only a run some variable starts inside of is cut again."""
        first = np.empty(ids.size, bool)
        if not ids.size:
            return np.flatnonzero(first)
        first[0] = True
        np.not_equal(ids[1:], ids[:-1] + 1, out=first[1:])
        if cuts is not None:
            first[cuts] = True
        at = np.flatnonzero(first)
        long = np.flatnonzero(np.diff(np.append(at, ids.size)) > 1)
        if long.size:
            bases = self.bases()
            begin = at[long]
            end = np.append(at, ids.size)[long + 1]
            gid = ids[begin]
            # the bases b with gid < b < gid + length: the next id's variable starts at b
            lo = search(bases, gid, side="right")
            hi = search(bases, gid + (end - begin), side="left")
            inside = np.flatnonzero(hi > lo)
            if inside.size:
                count = hi[inside] - lo[inside]
                k = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
                b = bases[np.repeat(lo[inside], count) + k]
                first[np.repeat(begin[inside], count) + (b - np.repeat(gid[inside], count))] = True
                at = np.flatnonzero(first)
        return at

    def variable_of(self, gid: int) -> Variable:
        return self.variables[int(self.index_of(np.asarray([gid]))[0])]


class VariableInterval(NamedTuple):
    """A run of a view's elements in one variable (Poplar's VariableInterval): ``var``
    identifies the variable within its graph (Poplar's VariableRef), ``name`` is its name,
    ``[begin, end)`` the elements of the variable's flat order."""
    var: int
    name: str
    begin: int
    end: int


def var_regions(table: VariableTable, starts: np.ndarray, lengths: np.ndarray) -> List[VariableInterval]:
    """The VariableIntervals of runs ``(starts, lengths)`` of global ids, none crossing variables."""
    owner = table.index_of(starts)
    begins = starts - table.bases()[owner]
    return [VariableInterval(i, table.variables[i].name, b, b + n)
            for i, b, n in zip(owner.tolist(), begins.tolist(), np.asarray(lengths).tolist())]
