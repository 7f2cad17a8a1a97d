"""Smaller popops APIs: iota (Encoding.hpp), pad (Pad.hpp), all_true (AllTrue.hpp) and
has_nan (NaN.hpp).

- ``iota(graph, t, start, prog)``: ``t[i] = start + i`` for a 1-D INT or UNSIGNED_INT
  ``t``; each worker's regions get one ``popops::Iota<T>`` (VectorList ``out``, plain
  state ``offsets``: the value of each region's first element).
- ``pad(graph, t, lower, upper, value=0.0, mapping=MappingMethod.ZERO)``: a view of
  ``t`` with constant padding, ``lower[d]``/``upper[d]`` elements before/after dimension
  ``d`` (negative values truncate), made of ``t`` and new constants of ``t``'s type,
  mapped as PopLibs' padding::MappingMethod says: ZERO (its default) on tile 0, EDGE each
  padding slice like the edge slice of the tensor it pads (so the padding spreads over the
  tiles holding the edge), NONE not at all (the caller maps it). No program: a view.
- ``all_true(graph, t, prog)``: a BOOL scalar, whether every element of BOOL ``t`` is
  true; ``has_nan(graph, t, prog)``: whether FLOAT/HALF ``t`` has a NaN. PopLibs' vertices
  (``popops::AllTrue``, ``popops::HasNaN<T>``, one per worker's regions) answer through
  the compute set's consensus bit (``Execute(cs, out)``), which popsim's Execute does not
  have: here each vertex writes its answer (for HasNaN, as PopLibs' vertex returns it:
  true when it found no NaN) into a BOOL ``out`` element on its tile, and a second
  compute set ANDs these on tile 0 with one more ``popops::AllTrue``; ``has_nan`` then
  negates it with popops.logical_not_in_place, as PopLibs does.
"""
import enum
import math  # read by the HasNaN vertex code
import numbers

import numpy as np

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, Input, Output, VectorList, Vertex
from popsim.program import Execute

from ..poputil import PoplibsError, per_tile
from ..poputil.checks import check_tensor, check_whole_numbers
from .elementwise import apply
from .op_checks import check_prog, check_writable, describe
from .elementwise_ops import OPS
from .fill_cast import _fill_value

__all__ = ["iota", "pad", "MappingMethod", "all_true", "has_nan"]


class MappingMethod(enum.Enum):
    """PopLibs' popops::padding::MappingMethod: where ``pad`` maps its padding constants."""
    NONE = 0   # not mapped: the caller maps them
    ZERO = 1   # all on tile 0 (PopLibs' default)
    EDGE = 2   # each padding slice like the nearest edge slice of the tensor being padded


@popsim.vertex_template("popops::Iota", dtype=[INT, UNSIGNED_INT])
def Iota(dtype):  # noqa: N802 - Poplar's vertex name
    class Iota(Vertex):
        out: Output[VectorList[dtype]]
        offsets: popsim.Vector[dtype]

        def compute(self):
            for r in range(len(self.out)):
                for i in range(len(self.out[r])):
                    self.out[r][i] = self.offsets[r] + i
            return True
    return Iota


class AllTrue(Vertex):
    vertex_name = "popops::AllTrue"
    in_: Input[VectorList[bool]]
    out: Output[bool]

    def compute(self):
        result = True
        for r in range(len(self.in_)):
            for i in range(len(self.in_[r])):
                if not self.in_[r][i]:
                    result = False
        self.out = result
        return True


@popsim.vertex_template("popops::HasNaN", dtype=[FLOAT, HALF])
def HasNaN(dtype):  # noqa: N802 - Poplar's vertex name
    class HasNaN(Vertex):
        in_: Input[VectorList[dtype]]
        out: Output[bool]  # PopLibs' return value: true when no NaN was found

        def compute(self):
            none = True
            for r in range(len(self.in_)):
                for i in range(len(self.in_[r])):
                    if math.isnan(self.in_[r][i]):
                        none = False
            self.out = none
            return True
    return HasNaN


def iota_cycles(sizes, width: int) -> int:
    """PopLibs' Iota estimate: 10 + sum of (4 + 3 x vectors), ``width`` the target's
    vector_width of the output type."""
    return 10 + sum(4 + 3 * -(-n // width) for n in sizes)


def all_true_cycles(sizes) -> int:
    """PopLibs' AllTrue estimate: 6 + sum of (11 + ceil(n / 8))."""
    return 6 + sum(11 + -(-n // 8) for n in sizes)


def has_nan_cycles(dtype, sizes) -> int:
    """PopLibs' HasNaN estimate (no NaN found: the worst case)."""
    if not sizes:
        return 4
    per = 9 if dtype == FLOAT else 10
    return 6 + sum(3 + (per * n + 3 if n else 0) for n in sizes)


def _register(graph, vertex, name, estimate) -> str:
    if not graph.has_codelet(name):
        graph.add_codelets(vertex)
        graph.register_perf_estimator(name, estimate)
    return name


def iota(graph, t, start, prog, name: str = "") -> None:
    """``t[i] = start + i`` (PopLibs' iota; ``t`` 1-D INT or UNSIGNED_INT)."""
    what = "popops.iota"
    check_tensor(graph, t, what)
    check_prog(prog, what)
    if t.rank != 1 or t.dtype not in (INT, UNSIGNED_INT):
        raise PoplibsError(f"{what}: {describe(t)} must be a 1-D INT or UNSIGNED_INT tensor")
    if isinstance(start, bool) or not isinstance(start, numbers.Integral):
        raise PoplibsError(f"{what}: start must be a whole number, found {type(start).__name__} {start!r}")
    info = np.iinfo(t.dtype.numpy)
    if not (info.min <= start and start + max(t.num_elements() - 1, 0) <= info.max):
        raise PoplibsError(f"{what}: start {start} + {t.num_elements()} elements does not fit {describe(t)}")
    check_writable(t, what, "tensor")
    vertex_type = _register(graph, Iota[t.dtype], Iota.vertex_name(t.dtype),
                            lambda info, target: iota_cycles(info.field_sizes("out"), target.vector_width(t.dtype)))
    cs = graph.add_compute_set(name or "Iota")
    width = graph.target.vector_width(t.dtype)
    for tile, regions in per_tile.tile_regions(graph, t):
        for group in per_tile.group_regions(graph.target, regions, "workers", width, 2 * width):
            vertex = graph.add_vertex(cs, vertex_type, {"out": per_tile.region_views(t, group)})
            graph.set_initial_value(vertex["offsets"], np.array([start + b for b, _ in group], t.dtype.numpy))
            graph.set_tile_mapping(vertex, tile)
    prog.add(Execute(cs))


def pad(graph, t, lower, upper, value=0.0, name: str = "", mapping: MappingMethod = MappingMethod.ZERO):
    """``t`` padded with constants ``value`` (PopLibs' pad): ``lower``/``upper`` list one
    count per dimension; negative counts truncate. ``mapping`` places the padding
    (``MappingMethod``: ZERO on tile 0, EDGE like the edge it extends, NONE unmapped)."""
    what = "popops.pad"
    check_tensor(graph, t, what)
    lower, upper = (list(check_whole_numbers(p, what, n)) for p, n in ((lower, "lower"), (upper, "upper")))
    if len(lower) != t.rank or len(upper) != t.rank:
        raise PoplibsError(f"{what}: lower {lower} and upper {upper} must have one entry per dimension of "
                           f"{describe(t)}")
    for pads in (lower, upper):
        if not all(isinstance(p, numbers.Integral) and not isinstance(p, bool) for p in pads):
            raise PoplibsError(f"{what}: padding must be whole numbers, found {pads}")
    if not isinstance(mapping, MappingMethod):
        raise PoplibsError(f"{what}: mapping must be a popops.MappingMethod (NONE, ZERO or EDGE), found "
                           f"{type(mapping).__name__} {mapping!r}")
    value = _fill_value(value, t.dtype, what, t)
    for d, (lo, hi) in enumerate(zip(lower, upper)):
        size = t.shape[d]
        begin, end = max(0, -lo), size - max(0, -hi)
        if begin > end:
            raise PoplibsError(f"{what}: truncating {-min(lo, 0)} + {-min(hi, 0)} elements of dimension {d} of "
                               f"{describe(t)} leaves fewer than none")
        t = t.slice(begin, end, d)
        parts = [t]
        for count, at_end in ((max(lo, 0), False), (max(hi, 0), True)):
            if count:
                shape = list(t.shape)
                shape[d] = count
                constant = graph.add_constant(t.dtype, tuple(shape), value, f"{name or what}/padding")
                _map_padding(graph, constant, t, d, at_end, mapping, what)
                parts.insert(len(parts) if at_end else 0, constant)
        t = popsim.concat(parts, d) if len(parts) > 1 else t
    return t


def _map_padding(graph, padding, t, d, at_end, mapping, what) -> None:
    """Map ``padding`` (added along dimension ``d`` of ``t``) as ``mapping`` says."""
    if mapping is MappingMethod.ZERO:
        graph.set_tile_mapping(padding, 0)
    elif mapping is MappingMethod.EDGE and padding.num_elements():
        if t.shape[d] == 0:
            raise PoplibsError(f"{what}: EDGE mapping copies the mapping of the edge of the tensor being padded, "
                               f"but dimension {d} of {describe(t)} has no elements there; pad with "
                               "MappingMethod.ZERO or NONE")
        edge_index = t.shape[d] - 1 if at_end else 0
        edge = t.slice(edge_index, edge_index + 1, d)
        edge_mapping = graph.get_tile_mapping(edge, require_complete=False)
        if sum(e - b for row in edge_mapping for b, e in row) != edge.num_elements():
            raise PoplibsError(f"{what}: EDGE mapping needs the edge of {describe(t)} in dimension {d} mapped to "
                               "tiles, found elements on no tile; map the tensor first (e.g. "
                               "poputil.map_tensor_linearly) or pad with MappingMethod.ZERO")
        for i in range(padding.shape[d]):
            graph.set_tile_mapping(padding.slice(i, i + 1, d), edge_mapping)


def _consensus(graph, t, prog, name, what, vertex, vertex_name, estimate):
    """Per-worker answers into BOOL elements on their tiles, then AllTrue over them on tile 0."""
    flat = t.flatten()
    groups = []
    for tile, regions in per_tile.tile_regions(graph, flat):
        width = graph.target.vector_width(t.dtype)
        groups += [(tile, g) for g in per_tile.group_regions(graph.target, regions, "workers", width, 2 * width)]
    out = graph.add_variable(BOOL, (), f"{name or what}/out")
    graph.set_tile_mapping(out, 0)
    all_true_name = _register(graph, AllTrue, AllTrue.vertex_name,
                              lambda info, target: all_true_cycles(info.field_sizes("in")))
    if not groups:  # no elements: vacuously true (all_true) / no NaN
        graph.set_initial_value(out, True)
        return out
    partials = graph.add_variable(BOOL, (len(groups),), f"{name or what}/partials")
    vertex_type = _register(graph, vertex, vertex_name, estimate)
    cs = graph.add_compute_set(name or what)
    for k, (tile, group) in enumerate(groups):
        graph.set_tile_mapping(partials[k], tile)
        v = graph.add_vertex(cs, vertex_type, {"in": per_tile.region_views(flat, group), "out": partials[k]})
        graph.set_tile_mapping(v, tile)
    final = graph.add_compute_set(f"{name or what}/final")
    graph.set_tile_mapping(graph.add_vertex(final, all_true_name, {"in": [partials], "out": out}), 0)
    prog.add(Execute(cs))
    prog.add(Execute(final))
    return out


def all_true(graph, t, prog, name: str = ""):
    """A BOOL scalar: whether every element of BOOL ``t`` is true (PopLibs' allTrue)."""
    what = "popops.all_true"
    check_tensor(graph, t, what)
    check_prog(prog, what)
    if t.dtype != BOOL:
        raise PoplibsError(f"{what}: {describe(t)} must be BOOL (compare with popops.neq(..., 0) first)")
    return _consensus(graph, t, prog, name, what, AllTrue, AllTrue.vertex_name,
                      lambda info, target: all_true_cycles(info.field_sizes("in")))


def has_nan(graph, t, prog, name: str = ""):
    """A BOOL scalar: whether FLOAT/HALF ``t`` has a NaN element (PopLibs' hasNaN)."""
    what = "popops.has_nan"
    check_tensor(graph, t, what)
    check_prog(prog, what)
    if t.dtype not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: {describe(t)} must be FLOAT or HALF")
    dtype = t.dtype
    out = _consensus(graph, t, prog, name, what, HasNaN[dtype], HasNaN.vertex_name(dtype),
                     lambda info, target: has_nan_cycles(dtype, info.field_sizes("in")))
    apply(graph, OPS["logical_not"], [out], prog, f"{name or what}/not", in_place=True)
    return out
