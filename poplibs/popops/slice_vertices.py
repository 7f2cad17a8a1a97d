"""The slicing vertices (PopLibs' lib/popops/codelets DynamicSlice*, DynamicUpdateSlice*,
MultiSlice, MultiUpdate, MultiUpdateAdd, MultiUpdateOp) and their cycle estimators.

Names are PopLibs' instantiations: ``popops::DynamicSlice1D<float>`` (a MultiVertex over
one contiguous region: the slice dimension outermost, ``regionSize`` elements per slice),
``popops::DynamicSlice2D<float>`` (one worker's regions as VectorLists: for region r,
entries ``r*numBaseElements ..`` of ``baseT`` and ``r*numSubElements ..`` of ``subT``),
the same for ``popops::DynamicUpdateSlice1D/2D``, and ``popops::MultiSlice<float>``,
``popops::MultiUpdate<float>``, ``popops::MultiUpdateAdd<float,false>`` (the bool is
PopLibs' subwordWritesSupported, false on IPU targets) and
``popops::MultiUpdateOp<float,false,popops::Operation::MAX>`` (multiUpdateMax).

Dynamic slices wrap: slice element i comes from ``(offset + i) mod numBaseElements``. An
offset >= numBaseElements makes the vertex return at once (the output is not written),
unless the MSB of ``numBaseElements`` is set (``remapOutOfBoundIndices``): then it reads
as 0. Multi-slice offsets outside ``[baseOffset, baseOffset + numBaseElements)`` are
skipped: their output rows are not written, their update rows not applied.

A slice and its update are one loop with the copy's direction swapped, so each layout is
one class body (``_dynamic_1d``, ``_dynamic_2d``) that two templates instantiate: ``if
update`` (decided at translation) picks PopLibs' field kinds (the update writes baseT, the
slice subT) and the copy's direction. A MultiVertex worker takes one contiguous chunk of
its region (``chunk_begin`` / ``chunk_end``, poputil/vertex_helpers.py).

The estimators are PopLibs' cycle estimators, their W the target's worker contexts
(num_worker_contexts; 6 on an IPU). A MultiVertex's estimate is PopLibs' tile-cycle
figure, charged as ceil(figure / workers) on each worker (as the element-wise ops do).
"""
import popsim
from popsim import (BOOL, CHAR, FLOAT, HALF, INT, LONGLONG, SIGNED_CHAR, UNSIGNED_CHAR, UNSIGNED_INT,
                    UNSIGNED_LONGLONG, InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex)

from ..poputil import util
from ..poputil.vertex_helpers import chunk_begin, chunk_end, named_vertex_class

#: the element types PopLibs instantiates its DynamicSlice vertices for
SLICE_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT, BOOL, CHAR, SIGNED_CHAR, UNSIGNED_CHAR, UNSIGNED_LONGLONG, LONGLONG)
#: MultiSlice and MultiUpdate (PopLibs instantiates fewer)
MULTI_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT, BOOL, CHAR, SIGNED_CHAR, UNSIGNED_CHAR)
#: MultiUpdateAdd and MultiUpdateOp
ADD_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT)
REMAP_FLAG = 0x80000000  # MSB of numBaseElements: remap out-of-bound offsets to 0
MAX = "popops::Operation::MAX"  # MultiUpdateOp's operation, as PopLibs spells the template argument
SUPERVISOR_OVERHEAD = 11  # basicOpSupervisorOverhead()


def _dynamic_1d(update: bool, dtype):
    class DynamicSlice1D(MultiVertex):
        offset: Input[UNSIGNED_INT]
        if update:
            baseT: InOut[Vector[dtype]]
            subT: Input[Vector[dtype]]
        else:
            baseT: Input[Vector[dtype]]
            subT: Output[Vector[dtype]]
        numBaseElements: UNSIGNED_INT
        numSubElements: UNSIGNED_INT
        regionSize: UNSIGNED_INT

        def compute(self, worker_id):
            n = self.numBaseElements & 0x7fffffff
            size = self.regionSize
            begin = chunk_begin(size, worker_id, self.num_workers())
            end = chunk_end(size, worker_id, self.num_workers())
            base = self.offset
            if base >= n:
                if (self.numBaseElements & 0x80000000) == 0:
                    return True
                base = 0
            for s in range(self.numSubElements):
                for e in range(begin, end):
                    if update:
                        self.baseT[base * size + e] = self.subT[s * size + e]
                    else:
                        self.subT[s * size + e] = self.baseT[base * size + e]
                base += 1
                if base >= n:
                    base = 0
            return True
    return named_vertex_class(DynamicSlice1D, "DynamicUpdateSlice1D" if update else "DynamicSlice1D")


def _dynamic_2d(update: bool, dtype):
    class DynamicSlice2D(Vertex):
        offset: Input[UNSIGNED_INT]
        if update:
            baseT: InOut[VectorList[dtype]]
        else:
            baseT: Input[VectorList[dtype]]
        numSubElements: UNSIGNED_INT
        if update:
            subT: Input[VectorList[dtype]]
        else:
            subT: Output[VectorList[dtype]]
        numRegions: UNSIGNED_INT
        numBaseElements: UNSIGNED_INT

        def compute(self):
            n = self.numBaseElements & 0x7fffffff
            for r in range(self.numRegions):
                base = self.offset
                if base >= n:
                    if (self.numBaseElements & 0x80000000) == 0:
                        return True
                    base = 0
                for s in range(self.numSubElements):
                    # the source row before the destination's in both directions: with
                    # both out of range, an index error names the source
                    if update:
                        src = self.subT[r * self.numSubElements + s]
                        dst = self.baseT[r * n + base]
                    else:
                        src = self.baseT[r * n + base]
                        dst = self.subT[r * self.numSubElements + s]
                    for e in range(len(dst)):
                        dst[e] = src[e]
                    base += 1
                    if base >= n:
                        base = 0
            return True
    return named_vertex_class(DynamicSlice2D, "DynamicUpdateSlice2D" if update else "DynamicSlice2D")


def _dynamic_template(name: str, body, update: bool):
    """``popops::<name>`` over SLICE_TYPES: ``body``'s class, the slice or its update."""
    def factory(dtype):
        return body(update, dtype)
    factory.__name__ = factory.__qualname__ = name
    return popsim.vertex_template(f"popops::{name}", dtype=SLICE_TYPES)(factory)


DynamicSlice1D = _dynamic_template("DynamicSlice1D", _dynamic_1d, False)
DynamicUpdateSlice1D = _dynamic_template("DynamicUpdateSlice1D", _dynamic_1d, True)
DynamicSlice2D = _dynamic_template("DynamicSlice2D", _dynamic_2d, False)
DynamicUpdateSlice2D = _dynamic_template("DynamicUpdateSlice2D", _dynamic_2d, True)


@popsim.vertex_template("popops::MultiSlice", dtype=MULTI_TYPES)
def MultiSlice(dtype):
    class MultiSlice(MultiVertex):
        offsets: Input[Vector[UNSIGNED_INT]]
        baseT: Input[Vector[dtype]]
        subT: Output[Vector[dtype]]
        baseOffset: UNSIGNED_INT
        numBaseElements: UNSIGNED_INT
        regionSize: UNSIGNED_INT

        def compute(self, worker_id):
            size = self.regionSize
            # the workers share out the offsets: each output row has one writer
            for o in range(worker_id, len(self.offsets), self.num_workers()):
                index = self.offsets[o] - self.baseOffset  # wraps below baseOffset: skipped too
                if index < self.numBaseElements:
                    for e in range(size):
                        self.subT[o * size + e] = self.baseT[index * size + e]
            return True
    return MultiSlice


# -- the multi-updates: one body, each template's step a helper (inlined) -------------------------
def replace(base, sub, k):
    return sub


def scaled_add(base, sub, k):
    return base + k * sub  # half data is scaled and added in float32, rounded once when stored (PopLibs)


def maximum(base, sub, k):
    return base if base > sub else sub  # PopLibs' updateOp MAX: a NaN in either gives subT


def _multi_update(dtype, step, scaled: bool, name: str):
    class MultiUpdate(MultiVertex):
        if scaled:
            scale: Input[dtype]
        offsets: Input[Vector[UNSIGNED_INT]]
        subT: Input[Vector[dtype]]
        baseT: InOut[Vector[dtype]]
        regionSize: UNSIGNED_INT
        baseOffset: UNSIGNED_INT
        numBaseElements: UNSIGNED_INT

        def compute(self, worker_id):
            # the workers share out the columns and each goes through the offsets in
            # order, so with repeated offsets the last update wins, as in PopLibs
            size = self.regionSize
            begin = chunk_begin(size, worker_id, self.num_workers())
            end = chunk_end(size, worker_id, self.num_workers())
            k = 0
            if scaled:  # (decided at translation)
                k = self.scale
            for o in range(len(self.offsets)):
                index = self.offsets[o] - self.baseOffset  # wraps below baseOffset: skipped too
                if index < self.numBaseElements:
                    for e in range(begin, end):
                        self.baseT[index * size + e] = step(self.baseT[index * size + e], self.subT[o * size + e], k)
            return True
    return named_vertex_class(MultiUpdate, name)


@popsim.vertex_template("popops::MultiUpdate", dtype=MULTI_TYPES)
def MultiUpdate(dtype):
    return _multi_update(dtype, replace, False, "MultiUpdate")


@popsim.vertex_template("popops::MultiUpdateAdd", dtype=ADD_TYPES, subword_writes=[False])
def MultiUpdateAdd(dtype, subword_writes):
    return _multi_update(dtype, scaled_add, True, "MultiUpdateAdd")


@popsim.vertex_template("popops::MultiUpdateOp", dtype=ADD_TYPES, subword_writes=[False], op=[MAX])
def MultiUpdateOp(dtype, subword_writes, op):
    return _multi_update(dtype, maximum, False, "MultiUpdateOp")


# -- cycle estimators (PopLibs' cycle estimators) ---------------------------------------------
def _vector_width(dtype) -> int:
    """Elements per 64-bit data path access; 8-bit types 4, 64-bit types count as two
    32-bit words (PopLibs' getDynamicSlice1DEstimate)."""
    if dtype.size == 1:
        return 4
    return 4 if dtype == HALF else 2


def _words(dtype, n: int) -> int:
    return 2 * n if dtype.size == 8 else n


def dynamic_slice_2d_cycles(dtype, region_sizes, num_sub_elements: int) -> int:
    """DynamicSlice2D: 27 + sum over regions of ((c + k nVec) numSubElements + 13), with
    (c, k) = (29, 1) for 32-bit types, (31, 2) for half, (50, 2) for 8-bit."""
    c, k = (50, 2) if dtype.size == 1 else (31, 2) if dtype == HALF else (29, 1)
    width = _vector_width(dtype)
    return 27 + sum((c + k * -(-_words(dtype, n) // width)) * num_sub_elements + 13 for n in region_sizes)


def dynamic_slice_1d_cycles(dtype, region_size: int, num_sub_elements: int, workers: int) -> int:
    """DynamicSlice1D (tile cycles): 11+1+6+1+6 + W (39 + (24 + 2 floor(ceil(regionSize/W)
    / vw)) numSubElements)."""
    per_worker = -(-_words(dtype, region_size) // workers)
    return SUPERVISOR_OVERHEAD + 1 + 6 + 1 + 6 + workers * (
        39 + (24 + 2 * (per_worker // _vector_width(dtype))) * num_sub_elements)


def multi_slice_cycles(dtype, num_offsets: int, region_size: int, update: bool, workers: int,
                       in_range=None) -> int:
    """MultiSlice / MultiUpdate (tile cycles): W (30 (29 for update) + inRange (19 +
    ceil(elemsPerSlice / vw) cpv) + outOfRange 8), the offsets shared out between the
    workers; no binary search (popsim's offsets are not declared sorted). (vw, cpv) =
    (4, 3) for 1-byte, (2, 2) for 2-byte and 4-byte types. Which offsets are in range is
    known only at run time: ``in_range`` None counts them all in range (the estimator's
    choice, the worst case)."""
    vw, cpv = (4, 3) if dtype.size == 1 else (2, 2)
    in_range = num_offsets if in_range is None else in_range
    per_worker_in = -(-in_range // workers)
    per_worker_out = -(-(num_offsets - in_range) // workers)
    return workers * ((29 if update else 30) + per_worker_in * (19 + -(-region_size // vw) * cpv)
                      + per_worker_out * 8)


def multi_update_op_cycles(dtype, num_offsets: int, region_size: int, workers: int) -> int:
    """MultiUpdateOp (multiUpdateMax; tile cycles, PopLibs' getMultiUpdateOpCycleEstimate
    unscaled, unsorted, every offset in range): W (3 + (29 for 4-byte types, else 30) +
    offsets (11 or 12 + (ceil(regionSize / elemsPerAtom) - 1) 3)), elemsPerAtom the
    elements in a 4-byte atomic write; with no offsets just 3 + 29 (30), not times W."""
    four = dtype.size == 4
    cycles = 3 + (29 if four else 30)
    if num_offsets == 0:
        return cycles
    per_atom = max(1, 4 // dtype.size)
    per_offset = (11 if four else 12) + (-(-region_size // per_atom) - 1) * 3
    return (cycles + per_offset * num_offsets) * workers


def _estimator(kind: str, dtype):
    def estimate(info, target):
        workers = target.num_worker_contexts
        if kind == "2D":
            num_sub = int(info.initial_value("numSubElements"))
            sizes = info.field_sizes("subT")[::max(num_sub, 1)]
            return dynamic_slice_2d_cycles(dtype, sizes, num_sub)
        if kind == "op":
            figure = multi_update_op_cycles(dtype, info.field_size("offsets"), int(info.initial_value("regionSize")),
                                            workers)
            return -(-figure // workers)
        if kind == "1D":
            figure = dynamic_slice_1d_cycles(dtype, int(info.initial_value("regionSize")),
                                             int(info.initial_value("numSubElements")), workers)
            return -(-figure // workers)
        figure = multi_slice_cycles(dtype, info.field_size("offsets"), int(info.initial_value("regionSize")),
                                    kind == "update", workers)
        return -(-figure // workers)
    return estimate


_TEMPLATES = {
    "DynamicSlice1D": (DynamicSlice1D, "1D"), "DynamicUpdateSlice1D": (DynamicUpdateSlice1D, "1D"),
    "DynamicSlice2D": (DynamicSlice2D, "2D"), "DynamicUpdateSlice2D": (DynamicUpdateSlice2D, "2D"),
    "MultiSlice": (MultiSlice, "slice"), "MultiUpdate": (MultiUpdate, "update"),
    "MultiUpdateAdd": (MultiUpdateAdd, "update"), "MultiUpdateMax": (MultiUpdateOp, "op"),
}


def ensure_vertex(graph, kind: str, dtype) -> str:
    """Register vertex ``kind`` (a key of _TEMPLATES) for ``dtype`` with ``graph`` once,
    with its estimator; return its name."""
    template, estimator_kind = _TEMPLATES[kind]
    args = {"MultiUpdateAdd": (dtype, False), "MultiUpdateMax": (dtype, False, MAX)}.get(kind, (dtype,))
    return util.ensure_vertex(graph, template[args], _estimator(estimator_kind, dtype))
