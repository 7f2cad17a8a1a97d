"""The reference executor's device memory: one byte buffer per variable.

Tensors are views (lists of global element ids, in view order, with a type), so
reading a view gathers its elements from the buffers of the variables it covers, and
writing one scatters them back. A view may reinterpret its elements as another type of
the same size, which is why the buffers hold bytes.
"""
from __future__ import annotations

from typing import List

import numpy as np

from ..tensor import Tensor


class ReferenceMemory:
    """The contents of every variable and constant of one graph."""

    def __init__(self, table):
        self._table = table
        self._bytes: List[np.ndarray] = []
        self.reset()

    def reset(self) -> None:
        """Every variable zero, every constant its value (what Engine.load starts from)."""
        self._bytes = []
        for v in self._table.variables:
            data = np.zeros(v.nbytes, np.uint8)
            if v.is_constant and v.values is not None and v.size:
                data[:] = np.ascontiguousarray(v.values, v.dtype.numpy).view(np.uint8).reshape(-1)
            self._bytes.append(data)

    def _typed(self, index: int, dtype) -> np.ndarray:
        return self._bytes[index].view(dtype.numpy)

    def read(self, t: Tensor) -> np.ndarray:
        """A copy of the view's elements, in its shape and type."""
        ids = t._element_ids()
        out = np.empty(ids.size, t.dtype.numpy)
        for index, sel, offsets in self._pieces(t, ids):
            out[sel] = self._typed(index, t.dtype)[offsets]
        return out.reshape(t.shape)

    def write(self, t: Tensor, values) -> None:
        """Set the view's elements to ``values`` (its element count, already of its type)."""
        ids = t._element_ids()
        flat = np.ascontiguousarray(values, t.dtype.numpy).reshape(-1)
        if flat.size != ids.size:
            raise ValueError(f"writing {flat.size} values to a view of {ids.size} elements")
        for index, sel, offsets in self._pieces(t, ids):
            self._typed(index, t.dtype)[offsets] = flat[sel]

    def _pieces(self, t: Tensor, ids: np.ndarray):
        """(variable index, positions in the view, element offsets in the variable) for
        each variable the view covers."""
        if t._var is not None:
            yield t._var.index, slice(None), ids - t._var.base
            return
        if ids.size == 0:
            return
        owner = self._table.index_of(ids)
        bases = self._table.bases()
        for index in np.unique(owner).tolist():
            sel = np.flatnonzero(owner == index)
            yield index, sel, ids[sel] - bases[index]
