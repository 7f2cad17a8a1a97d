"""popops cast (PopLibs' popops/Cast.hpp).

``cast(graph, src, dtype, prog)`` returns a new tensor mapped like ``src`` holding its
elements converted to ``dtype``; ``cast_with_output(graph, src, dst, prog)`` writes
them into ``dst``. A cast to the same type, or between INT and UNSIGNED_INT, is a Copy
of the bits (PopLibs reinterprets); otherwise one compute set where a tile holding its
elements of ``dst`` in one contiguous region gets a ``popops::Cast1D<from,to>``
MultiVertex and any other tile one ``popops::Cast2D<from,to>`` per worker (PopLibs'
Cast.cpp; PopLibs' Cast1DSingleWorker for a worker with one region is a Cast2D here).
Conversions are C's: float to integer truncates toward zero (saturating at the type's
limits, NaN giving 0), to HALF rounds to nearest even, to BOOL is ``x != 0``, between
integers wraps. FLOAT and HALF cast to and from QUARTER (Poplar's 8-bit float) with the
QUARTER side's metadata: ``cast(graph, src, QUARTER, prog, metadata=md)``
(poplibs/popops/quarter_cast.py).
"""
import popsim
from popsim import (BOOL, CHAR, FLOAT, HALF, INT, LONGLONG, QUARTER, SHORT, SIGNED_CHAR, UNSIGNED_CHAR, UNSIGNED_INT,
                    UNSIGNED_LONGLONG, UNSIGNED_SHORT, Input, MultiVertex, Output, Vector, VectorList, Vertex)
from popsim.program import Copy, Execute

from ..poputil import PoplibsError, per_tile
from ..poputil.checks import check_name, check_tensor
from ..poputil.util import ensure_vertex
from .op_checks import check_prog, check_writable, describe
from .quarter_cast import QUARTER_PAIRS, check_quarter_pair, metadata_edge, quarter_cast_class

__all__ = ["cast", "cast_with_output"]

#: the types PopLibs' Cast vertices are instantiated for
CAST_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT, SHORT, UNSIGNED_SHORT, BOOL, CHAR, SIGNED_CHAR, UNSIGNED_CHAR)
_LONG = (LONGLONG, UNSIGNED_LONGLONG)


def cast_allowed(src, dst) -> bool:
    """Whether PopLibs casts ``src`` to ``dst`` (validateCastVertexTypes): any pair of
    CAST_TYPES, the same type, integers to LONGLONG/UNSIGNED_LONGLONG, and FLOAT and HALF
    to and from QUARTER."""
    if QUARTER in (src, dst):
        return (src, dst) in QUARTER_PAIRS
    if src == dst:
        return True
    if dst in _LONG:
        return src in _LONG or (src in CAST_TYPES and src not in (FLOAT, HALF))
    return src in CAST_TYPES and dst in CAST_TYPES


# -- vertices ------------------------------------------------------------------------------------
def _check_cast_pair(src_type, dst_type, name):
    if src_type == dst_type or not cast_allowed(src_type, dst_type):
        raise PoplibsError(f"vertex template {name}: no cast from {src_type.name} to {dst_type.name} (a cast to the "
                           "same type is a Copy)")


_ALL_CAST = list(CAST_TYPES) + list(_LONG) + [QUARTER]


@popsim.vertex_template("popops::Cast1D", src_type=_ALL_CAST, dst_type=_ALL_CAST)
def Cast1D(src_type, dst_type):  # noqa: N802 - Poplar's vertex name
    _check_cast_pair(src_type, dst_type, "popops::Cast1D")
    if QUARTER in (src_type, dst_type):
        return quarter_cast_class(src_type, dst_type, two_d=False)

    class Cast1D(MultiVertex):
        src: Input[Vector[src_type]]
        dst: Output[Vector[dst_type]]

        def compute(self, worker_id):
            for i in range(worker_id, len(self.dst), self.num_workers()):
                self.dst[i] = self.src[i]
            return True
    return Cast1D


@popsim.vertex_template("popops::Cast2D", src_type=_ALL_CAST, dst_type=_ALL_CAST)
def Cast2D(src_type, dst_type):  # noqa: N802 - Poplar's vertex name
    _check_cast_pair(src_type, dst_type, "popops::Cast2D")
    if QUARTER in (src_type, dst_type):
        return quarter_cast_class(src_type, dst_type, two_d=True)

    class Cast2D(Vertex):
        src: Input[VectorList[src_type]]
        dst: Output[VectorList[dst_type]]

        def compute(self):
            for r in range(len(self.dst)):
                for i in range(len(self.dst[r])):
                    self.dst[r][i] = self.src[r][i]
            return True
    return Cast2D


# -- cycle estimators (PopLibs' cycle estimators) ---------------------------------------------------
def cast_worker_cycles(src, dst, n: int) -> int:
    """PopLibs' castWorkerCycles (the general branch; the 8-bit <-> float assembly paths
    are not modelled separately): 19 + cycles per vector x whole vectors + the remainder
    checks, vectors of min(2 x loads, stores) elements for float <-> half, else 1."""
    if dst in _LONG:
        return 3 + n * (4 + (src in (INT, CHAR, SHORT)))
    load, store = 8 // src.size, 8 // dst.size
    aux = src in (FLOAT, HALF) and dst in (FLOAT, HALF)
    width = min(2 * load, store) if aux else 1
    per_vector = max(width // min(width, load), width // min(width, store)) + (not aux)
    cycles = 19 + per_vector * (n // width)
    for bit in range((width - 1).bit_length()):
        cycles += 1 + 2 * bool((n % width) & (1 << bit))
    return cycles


def cast1d_cycles(src, dst, n: int, workers: int) -> int:
    """Cast1D tile cycles: 12 + W x (worker(ceil(n / W)) + 18), W the target's ``workers``."""
    return 12 + workers * (cast_worker_cycles(src, dst, -(-n // workers)) + 18)


def cast2d_cycles(src, dst, sizes) -> int:
    """Cast2D worker cycles: 5 + sum of (11 + worker(n_i))."""
    return 5 + sum(11 + cast_worker_cycles(src, dst, n) for n in sizes)


def _cast_estimator(src, dst, two_d: bool):
    if two_d:
        return lambda info, target: cast2d_cycles(src, dst, info.field_sizes("dst"))
    # a MultiVertex: PopLibs' tile figure, charged as ceil(figure / workers) on each worker
    return lambda info, target: -(-cast1d_cycles(src, dst, info.field_size("dst"), target.num_worker_contexts)
                                  // target.num_worker_contexts)


# -- cast -------------------------------------------------------------------------------------------
def _cast_into(graph, src, dst, prog, name: str, what: str) -> None:
    if tuple(src.shape) != tuple(dst.shape):
        raise PoplibsError(f"{what}: the source {describe(src)} and the destination {describe(dst)} must have "
                           "the same shape")
    if QUARTER in (src.dtype, dst.dtype):
        check_quarter_pair(src, dst, what)
    if not cast_allowed(src.dtype, dst.dtype):
        raise PoplibsError(f"{what}: casting {describe(src)} to {dst.dtype.name} is not supported; PopLibs casts "
                           f"between {', '.join(x.name for x in CAST_TYPES)} and from integers to LONGLONG")
    if src.num_elements() == 0:
        return
    pair = {src.dtype, dst.dtype}
    if src.dtype == dst.dtype or pair in ({INT, UNSIGNED_INT}, set(_LONG)):
        # PopLibs: a copy of the bits (reinterpreted for INT <-> UNSIGNED_INT)
        prog.add(Copy(src.reinterpret(dst.dtype) if src.dtype != dst.dtype else src, dst))
        return
    s, d = src.flatten(), dst.flatten()
    cs = graph.add_compute_set(name or "Cast")
    regions_on = dict(per_tile.tile_regions(graph, d))
    width = graph.target.vector_width(FLOAT)  # PopLibs splits by the float vector width whatever the types
    # QUARTER: the vertices read its metadata (PopLibs': getMetadata() of the quarter field)
    extra = {"metadata": metadata_edge(dst if dst.dtype == QUARTER else src)} if QUARTER in (src.dtype, dst.dtype) \
        else {}

    def make_vertex(tile, group):
        if len(regions_on[tile]) == 1:
            vertex_type = ensure_vertex(graph, Cast1D[src.dtype, dst.dtype],
                                        _cast_estimator(src.dtype, dst.dtype, False))
            return vertex_type, {"src": per_tile.regions_view(s, group), "dst": per_tile.regions_view(d, group),
                                 **extra}
        vertex_type = ensure_vertex(graph, Cast2D[src.dtype, dst.dtype], _cast_estimator(src.dtype, dst.dtype, True))
        return vertex_type, {"src": per_tile.region_views(s, group), "dst": per_tile.region_views(d, group), **extra}

    per_tile.add_vertices_per_tile(graph, cs, d, make_vertex, grain_size=width, min_elements_per_worker=2 * width,
                                   grouping="auto")
    prog.add(Execute(cs))


def _check_cast_args(graph, src, prog, name, what):
    check_tensor(graph, src, what, "source")
    check_prog(prog, what)
    check_name(name, what)


def cast(graph, src, dtype, prog, name: str = "", metadata=None):
    """A new tensor of type ``dtype``, mapped like ``src``, holding ``src``'s elements
    converted as C converts (PopLibs' cast). Appends the conversion to ``prog``. A QUARTER
    result needs its ``metadata`` (a QUARTER_METADATA tensor), as in PopLibs."""
    what = "popops.cast"
    _check_cast_args(graph, src, prog, name, what)
    if not isinstance(dtype, popsim.Type):
        raise popsim.TypeError(f"{what}: dtype must be a popsim type (popsim.HALF...), found {type(dtype).__name__}")
    if (dtype == QUARTER) != (metadata is not None):
        raise PoplibsError(f"{what}: metadata is required when casting to QUARTER, and only then (casting "
                           f"{describe(src)} to {dtype.name}" + (" with metadata)" if metadata is not None else ")"))
    if not cast_allowed(src.dtype, dtype):
        raise PoplibsError(f"{what}: casting {describe(src)} to {dtype.name} is not supported; PopLibs casts "
                           f"between {', '.join(x.name for x in CAST_TYPES)}, from integers to LONGLONG and FLOAT "
                           "and HALF to and from QUARTER")
    dst = graph.clone(src, name or f"{src.name}_cast", dtype, metadata=metadata)
    _cast_into(graph, src, dst, prog, name, what)
    return dst


def cast_with_output(graph, src, dst, prog, name: str = "") -> None:
    """Write ``src``'s elements converted to ``dst``'s type into ``dst`` (same shape;
    PopLibs' castWithOutput)."""
    what = "popops.cast_with_output"
    _check_cast_args(graph, src, prog, name, what)
    check_tensor(graph, dst, what, "destination")
    check_writable(dst, what, "destination")
    _cast_into(graph, src, dst, prog, name, what)
