"""Data hazards inside one compute set, found when it is lowered.

The vertices of a compute set run in no defined order (on the IPU, in parallel on six
workers of many tiles), so:

- two writes of one element are an error, as in Poplar (GraphCycleError);
- with the race check on (option ``popsim.checkRaces`` or POPSIM_CHECK_RACES; the test
  suite turns it on), a read of an element another vertex writes is an error too: the
  reader may see the old or the new value depending on timing and on where the data
  lives. Poplar accepts such a graph; the check is popsim's.

A vertex reading and writing the same element through one InOut field is the intended
use of InOut and not a race. A vertex reading through an Input (or any read-only
field) what it writes through another field is reported as well: an Input must not
change while its vertex runs, and whether it does depends on the tile mapping (a field
on its own tile aliases the variable, an exchanged one is a copy); the fix is one InOut
field.

Intervals are [start, start + length) of global element ids, with the edge each comes
from; ``owners[edge]`` is the (vertex, field name) pair of an edge, edges numbered in
vertex order.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..errors import GraphCycleError
from ..runs import sort_order

Intervals = Tuple[np.ndarray, np.ndarray, np.ndarray]  # starts, lengths, edges


def check_conflicts(cs, owners, writes: Intervals,
                    reads: Optional[Intervals] = None) -> None:
    """GraphCycleError when two writes touch one element or, when ``reads`` is given,
    when a read touches an element a write of another edge touches."""
    starts, lengths, edge = writes
    keep = lengths > 0
    starts, lengths, edge = starts[keep], lengths[keep], edge[keep]
    if starts.size == 0:
        return
    order = sort_order(starts)
    s, e, o = starts[order], starts[order] + lengths[order], edge[order]
    if starts.size > 1:
        _check_writes(cs, owners, s, e, o)
    if reads is not None:
        _check_reads(cs, owners, s, e, o, *reads)


def _check_writes(cs, owners, s: np.ndarray, e: np.ndarray, o: np.ndarray) -> None:
    reach = np.maximum.accumulate(e)
    clash = np.flatnonzero(s[1:] < reach[:-1])
    if clash.size == 0:
        return
    j = int(clash[0]) + 1
    i = int(np.flatnonzero(e[:j] > s[j])[0])  # an earlier write covering s[j]
    (va, fa), (vb, fb) = owners[min(o[i], o[j])], owners[max(o[i], o[j])]  # in vertex order
    what = _elements(cs, max(s[i], s[j]), min(e[i], e[j]))
    if va == vb and fa == fb:
        who, twice = f"field '{fa}' of {va.describe()} writes", " more than once"
    else:
        who, twice = f"field '{fa}' of {va.describe()} and field '{fb}' of {vb.describe()} both write", ""
    raise GraphCycleError(
        f"in compute set '{cs.name}', {who} {what}{twice}: each element may be written once per compute set; "
        "split the work differently or use separate compute sets")


def _check_reads(cs, owners, s: np.ndarray, e: np.ndarray, o: np.ndarray, r_start: np.ndarray,
                 r_length: np.ndarray, r_edge: np.ndarray) -> None:
    """Writes (sorted, disjoint: ends sorted too) against reads of other edges."""
    r_end = r_start + r_length
    first = np.searchsorted(e, r_start, side="right")  # first write ending after the read starts
    stop = np.searchsorted(s, r_end, side="left")      # writes starting before the read ends
    racing = np.flatnonzero((first < stop) & (r_length > 0))
    if racing.size == 0:
        return
    k = int(racing[np.argmin(r_edge[racing])])  # the first reader in vertex order
    w = int(first[k])
    (vr, fr), (vw, fw) = owners[int(r_edge[k])], owners[int(o[w])]
    what = _elements(cs, max(r_start[k], s[w]), min(r_end[k], e[w]))
    if vr == vw:
        raise GraphCycleError(
            f"in compute set '{cs.name}', field '{fr}' of {vr.describe()} reads {what}, which its field '{fw}' "
            "writes: an input must not change while its vertex runs (whether the read sees the old or the new "
            "value depends on where the data lives); connect these elements to one InOut field instead "
            "(reported because the race check, popsim.checkRaces, is on)")
    raise GraphCycleError(
        f"in compute set '{cs.name}', field '{fr}' of {vr.describe()} reads {what}, which field '{fw}' of "
        f"{vw.describe()} writes: a read-after-write race (the vertices of a compute set run in no defined order, "
        "so the read may see the old or the new value); read and write these elements in separate compute sets "
        "(Execute the writer's compute set, then the reader's) "
        "(reported because the race check, popsim.checkRaces, is on)")


def _elements(cs, lo, hi) -> str:
    var = cs.variables.variable_of(int(lo))
    return f"elements [{int(lo) - var.base}:{int(hi) - var.base}) of {var.kind} '{var.name}'"
