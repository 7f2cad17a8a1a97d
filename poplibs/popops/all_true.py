"""popops all_true and has_nan (PopLibs' popops/AllTrue.hpp, NaN.hpp): whole-tensor
tests answered by a consensus of the tiles.

``all_true(graph, t, prog)``: a BOOL scalar, whether every element of BOOL ``t`` is
true; ``has_nan(graph, t, prog)``: whether FLOAT/HALF ``t`` has a NaN. PopLibs' vertices
(``popops::AllTrue``, ``popops::HasNaN<T>``, one per worker's regions) answer through the
compute set's consensus bit (``Execute(cs, out)``), which popsim's Execute does not have:
here each vertex writes its answer (for HasNaN, as PopLibs' vertex returns it: true when
it found no NaN) into a BOOL ``out`` element on its tile, and a second compute set ANDs
these on tile 0 with one more ``popops::AllTrue``; ``has_nan`` then negates it with
popops.logical_not_in_place, as PopLibs does.
"""
import math  # read by the HasNaN vertex code

import popsim
from popsim import BOOL, FLOAT, HALF, Input, Output, VectorList, Vertex
from popsim.program import Execute

from ..poputil import PoplibsError, per_tile
from ..poputil.checks import check_tensor
from ..poputil.util import ensure_vertex
from .elementwise import apply
from .elementwise_ops import OPS
from .op_checks import check_prog, describe

__all__ = ["all_true", "has_nan"]


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


def all_true_cycles(sizes) -> int:
    """PopLibs' AllTrue estimate: 6 + sum of (11 + ceil(n / 8))."""
    return 6 + sum(11 + -(-n // 8) for n in sizes)


def has_nan_cycles(dtype, sizes) -> int:
    """PopLibs' HasNaN estimate (no NaN found: the worst case)."""
    if not sizes:
        return 4
    per = 9 if dtype == FLOAT else 10
    return 6 + sum(3 + (per * n + 3 if n else 0) for n in sizes)


def _consensus(graph, t, prog, name, what, vertex, estimate):
    """Per-worker answers into BOOL elements on their tiles, then AllTrue over them on tile 0."""
    flat = t.flatten()
    groups = []
    for tile, regions in per_tile.tile_regions(graph, flat):
        width = graph.target.vector_width(t.dtype)
        groups += [(tile, g) for g in per_tile.group_regions(graph.target, regions, "workers", width, 2 * width)]
    out = graph.add_variable(BOOL, (), f"{name or what}/out")
    graph.set_tile_mapping(out, 0)
    all_true_name = ensure_vertex(graph, AllTrue, lambda info, target: all_true_cycles(info.field_sizes("in")))
    if not groups:  # no elements: vacuously true (all_true) / no NaN
        graph.set_initial_value(out, True)
        return out
    partials = graph.add_variable(BOOL, (len(groups),), f"{name or what}/partials")
    vertex_type = ensure_vertex(graph, vertex, estimate)
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
    return _consensus(graph, t, prog, name, what, AllTrue, lambda info, target: all_true_cycles(info.field_sizes("in")))


def has_nan(graph, t, prog, name: str = ""):
    """A BOOL scalar: whether FLOAT/HALF ``t`` has a NaN element (PopLibs' hasNaN)."""
    what = "popops.has_nan"
    check_tensor(graph, t, what)
    check_prog(prog, what)
    if t.dtype not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: {describe(t)} must be FLOAT or HALF")
    dtype = t.dtype
    out = _consensus(graph, t, prog, name, what, HasNaN[dtype],
                     lambda info, target: has_nan_cycles(dtype, info.field_sizes("in")))
    apply(graph, OPS["logical_not"], [out], prog, f"{name or what}/not", in_place=True)
    return out
