"""popops reductions (PopLibs' popops/Reduce.hpp): ``reduce``, ``reduce_with_output`` and
``reduce_many``, built as PopLibs' multi-stage plan (lib/popops/reduction/Reduction.cpp,
ReductionStages.cpp) from the reduce vertices of reduce_vertices.py.

1. Each tile's input elements are cut into boxes (reduce_plan.interval_boxes); boxes with
   the same kept (not reduced) ranges form one output group of that tile (a box reduced
   over its innermost dims: one group per output element, its contiguous row).
2. When no output element has inputs in two groups the reduction is tile-local: one
   compute set (``ReduceOnTile``) writes the output from the input's tiles (a new output
   is mapped there).
3. Otherwise stage 1 (``ReduceOnTile``) reduces each tile's groups into one partial over
   the union of their outputs (skipped when every group is already one element per output
   element). While the partials hold more than 32 elements per output, an intermediate
   stage (``ReduceStage<i>``) cuts the partials' lanes (reduce_plan.lanes) into groups
   times output blocks (reduce_plan.split_region), one chunk a tile.
4. The last stage (``ReduceFinalStage``) reduces what is left on the output's tiles, or
   balanced over the tiles into a temporary that a Copy moves to the output, whichever
   reduce_plan.should_reduce_at_destination says is cheaper; a new output is mapped
   linearly (grain: the partials' vector width, at least 4 vectors a tile) and reduced
   there. Scale and update are applied in the last stage only.

``prog`` may be a list of compute sets instead of a Sequence (PopLibs' deprecated
``std::vector<ComputeSet> &css`` overloads of reduce and reduceWithOutput): stage k then
adds its vertices to ``css[k]``, appending a new compute set when the list is shorter
(PopLibs' ComputeSetList), so reductions given the same list run side by side; the last
stage then always reduces at the destination (a list holds no Copy). The caller runs
them: ``Execute(cs)`` for each.

The stages work on numpy arrays of output ranges (reduce_plan.cover_regions) and make a
tensor view per vertex edge only when the vertices are made.
"""
import bisect
import math
import numbers
from collections.abc import Mapping
from typing import List, Sequence

import numpy as np

import popsim
from popsim import FLOAT, HALF
from popsim.program import Copy, Execute

from ..poputil import PoplibsError
from ..poputil.checks import check_graph, check_name, check_tensor
from . import reduce_plan as plan
from .op_checks import check_prog, describe
from .reduce_vertices import OP_TYPES, SCALABLE, Operation, ensure_vertex

__all__ = ["Operation", "ReduceParams", "SingleReduceOp", "reduce", "reduce_with_output", "reduce_many"]
_ACCUM_IN_FLOAT = (Operation.ADD, Operation.SQUARE_ADD, Operation.MUL)  # opBenefitsFromHigherIntermediatePrecision
_OPTIONS = ("accumType.interTile", "accumType.inVertex")


class ReduceParams:
    """PopLibs' ReduceParams: the operation, whether to accumulate into the output
    (``out += result``) and a scale (a number, or a FLOAT scalar tensor) of the result.
    Update and scale are only for ADD, SQUARE_ADD and LOG_ADD (for LOG_ADD the update is
    a log-add and the scale is added, a multiplication of probabilities)."""

    def __init__(self, op: Operation, update: bool = False, scale=1.0):
        if not isinstance(op, Operation):
            raise PoplibsError(f"ReduceParams: op must be a popops.Operation, found {op!r}")
        if not isinstance(update, (bool, np.bool_)):
            raise PoplibsError(f"ReduceParams: update must be a bool, found {update!r}")
        is_tensor = isinstance(scale, popsim.Tensor)
        if not is_tensor and (isinstance(scale, bool) or not isinstance(scale, numbers.Real)):
            raise PoplibsError(f"ReduceParams: scale must be a number or a FLOAT scalar tensor, found {scale!r}")
        if is_tensor and (scale.dtype != FLOAT or scale.num_elements() != 1):
            raise PoplibsError(f"ReduceParams: the scale tensor '{scale.name}' must be a FLOAT scalar, found "
                               f"{scale.dtype.name} of shape {tuple(scale.shape)}")
        if op not in SCALABLE and (update or is_tensor or scale != 1.0):
            raise PoplibsError(f"ReduceParams: {op.name} cannot be used with update or scale; they are only "
                               f"for {', '.join(o.name for o in SCALABLE)}")
        self.op, self.update, self.scale = op, bool(update), scale

    @property
    def use_scale(self) -> bool:
        return isinstance(self.scale, popsim.Tensor) or self.scale != 1.0

    def __repr__(self):
        return f"ReduceParams({self.op.name}, update={self.update}, scale={self.scale!r})"


class SingleReduceOp:
    """One reduction of ``reduce_many`` (PopLibs' SingleReduceOp)."""

    def __init__(self, t, dims, params: ReduceParams, out_type=None, name: str = ""):
        self.t, self.dims, self.params, self.out_type, self.name = t, dims, params, out_type, name


class _Stages:
    """Compute sets shared by the reductions of one call, by stage index; with a list
    ``css`` (one reduction, whose stages come in order) the n-th stage used is ``css[n]``."""

    def __init__(self, graph, name: str, css=None):
        self.graph, self.name, self.sets, self.copies, self.css = graph, name, {}, [], css

    def get(self, index: int, label: str):
        if index not in self.sets:
            css, n = self.css, len(self.sets)
            if css is not None and n < len(css):
                self.sets[index] = css[n]
            else:
                self.sets[index] = self.graph.add_compute_set(f"{self.name}/{label}")
                if css is not None:
                    css.append(self.sets[index])
        return self.sets[index]

    def append_to(self, prog) -> None:
        if self.css is not None:
            return
        for index in sorted(self.sets):
            prog.add(Execute(self.sets[index]))
        for source, dest in self.copies:
            prog.add(Copy(source, dest))


def _check_dims(t, dims, what: str) -> List[int]:
    try:
        dims = list(dims)
    except TypeError:
        raise PoplibsError(f"{what}: dims must be a list of dimensions of {describe(t)}, found {dims!r}") from None
    if any(isinstance(d, bool) or not isinstance(d, numbers.Integral) for d in dims) \
            or any(not 0 <= d < t.rank for d in dims) or len(set(dims)) != len(dims):
        raise PoplibsError(f"{what}: dims {dims!r} are not distinct dimensions of {describe(t)}; give each "
                           f"dimension to reduce once, from 0 to {t.rank - 1}")
    return sorted(int(d) for d in dims)


def _accum_type(op, out_type, options, what):
    if options is not None and not isinstance(options, Mapping):
        raise popsim.InvalidOptionError(f"{what}: options must be a dict of option names to values, found "
                                        f"{type(options).__name__}")
    options = dict(options or {})
    unknown = [k for k in options if k not in _OPTIONS]
    if unknown:
        raise popsim.InvalidOptionError(f"{what}: unknown option {unknown[0]!r}; reductions take "
                                        f"{', '.join(_OPTIONS)}")
    default = FLOAT if out_type == HALF and op in _ACCUM_IN_FLOAT else out_type
    types = {}
    for key in _OPTIONS:
        value = options.get(key)
        if value is None:
            types[key] = default
        elif value in ("float", "half") and default in (FLOAT, HALF):
            types[key] = FLOAT if value == "float" else HALF
        else:
            raise popsim.InvalidOptionError(f"{what}: option {key} must be 'float' or 'half' for a {default.name} "
                                            f"reduction, found {value!r}")
    return types["accumType.inVertex"], types["accumType.interTile"]


def _check_types(t, op, out_type, what):
    if t.dtype not in OP_TYPES[op]:
        raise PoplibsError(f"{what}: {op.name} does not take {describe(t)}; it takes "
                           f"{', '.join(d.name for d in OP_TYPES[op])}")
    if out_type != t.dtype and not (op in _ACCUM_IN_FLOAT and {out_type, t.dtype} <= {FLOAT, HALF}):
        raise PoplibsError(f"{what}: {op.name} of {describe(t)} cannot give {out_type.name} results; the output "
                           "type is the input's (FLOAT and HALF may be mixed for ADD, SQUARE_ADD and MUL)")


# A reduction is (out view, [partials]); a partial is a 1-D tensor whose element i feeds
# output i % width, or (tensor, begin): the out view's width of elements of ``tensor`` from
# ``begin``, sliced only once the vertices are made (cutting reductions for workers then
# costs no views).
def _partial_size(p, width: int) -> int:
    return width if type(p) is tuple else p.num_elements()


def _split_reduction(out_view, partials, pieces: int, grain: int):
    """One reduction as ``pieces`` reductions over consecutive output chunks (in ``grain``s)."""
    width = out_view.num_elements()
    bounds = [width * i // pieces // grain * grain for i in range(pieces)] + [width]
    rows = [(p, 0) if type(p) is not tuple and p.num_elements() == width else p if type(p) is tuple
            else p.reshape([p.num_elements() // width, width]) for p in partials]
    return [(out_view.slice(a, b), [(r[0], r[1] + a) if type(r) is tuple else r.slice(a, b, 1).flatten()
                                    for r in rows])
            for a, b in zip(bounds, bounds[1:]) if b > a]


def _restrict(view, begin: int, width: int, row: int) -> list:
    """The part of a partial ``view`` (rows of ``row`` elements) that feeds outputs
    ``[begin, begin + width)`` of each row: as contiguous pieces of its rows when they
    hold at least ROW_PARTIAL_MIN elements (no gather on the tile), else one strided view."""
    rows = view.num_elements() // row
    if begin == 0 and width == row:
        return [view]
    if rows == 1 or width >= plan.ROW_PARTIAL_MIN:
        return [(view, j * row + begin) for j in range(rows)]
    return [view.reshape([rows, row]).slice(begin, begin + width, 1).flatten()]


def _add_vertices(graph, cs, tile, reductions, vertex, scale):
    """Deal ``reductions`` ([(out view, [partials])]) out to the tile's workers, one vertex
    each (the longest first, to the least loaded worker); a reduction with more than its
    share of the tile's work is split in output chunks of whole ``plan.OUTPUT_GRAIN``s."""
    workers = graph.target.num_worker_contexts
    sizes = []
    for out_view, ps in reductions:
        width = out_view.num_elements()
        sizes.append(sum(_partial_size(p, width) for p in ps))
    work = sum(sizes) or 1
    pieces = []
    for (out_view, partials), share in zip(reductions, sizes):
        grain = plan.OUTPUT_GRAIN if partials else 1
        width = out_view.num_elements()
        count = max(1, min(width // grain, round(workers * share / work))) if partials else 1
        for piece in _split_reduction(out_view, partials, count, grain) if count > 1 else [(out_view, partials)]:
            part = piece[0].num_elements()
            pieces.append((part, share * part // max(1, width), piece))
    bins = [[] for _ in range(workers)]
    loads = [0] * workers
    for width, share, piece in sorted(pieces, key=lambda r: -r[1] - r[0]):
        i = loads.index(min(loads))
        bins[i].append(piece)
        loads[i] += share + width
    for group in bins:
        if not group:
            continue
        partials = [p[0].slice(p[1], p[1] + o.num_elements()) if type(p) is tuple else p for o, ps in group for p in ps]
        fields = {"out": [o for o, _ in group], "partials": partials}
        if scale is not None:
            fields["k"] = scale
        v = graph.add_vertex(cs, vertex, fields)
        graph.set_initial_value(v["numPartials"], np.array([len(ps) for _, ps in group], dtype=np.int32))
        graph.set_tile_mapping(v, tile)


class _Reduction:
    """One reduction of ``t`` over ``dims`` into ``out`` (None: a new output)."""

    def __init__(self, graph, t, dims, params, out, out_type, stages, name, options, what):
        self.graph, self.t, self.params, self.stages, self.what = graph, t, params, stages, what
        self.dims = dims
        self.kept = [d for d in range(t.rank) if d not in dims]
        self.out_shape = tuple(t.shape[d] for d in self.kept)
        self.out_type = out.dtype if out is not None else out_type
        self.in_vertex, self.inter_tile = _accum_type(params.op, self.out_type, options, what)
        self.out = out
        self.name = name
        self.scale = self._scale_tensor()

    def _scale_tensor(self):
        scale = self.params.scale
        if not self.params.use_scale:
            return None
        if isinstance(scale, popsim.Tensor):
            check_tensor(self.graph, scale, self.what, "scale")
            return scale.reshape([])
        constant = self.graph.add_constant(FLOAT, (), float(scale), f"{self.name}/scale")
        self.graph.set_tile_mapping(constant, 0)
        return constant

    def _new_output(self):
        out = self.graph.add_variable(self.out_type, self.out_shape, self.name or f"{self.t.name}_reduced")
        self.out = out
        return out

    def _vertex(self, op, partials_type, out_type, final):
        update = self.params.update and final
        return ensure_vertex(self.graph, op, partials_type, out_type, update, final and self.scale is not None)

    # -- stage 1 --------------------------------------------------------------------------
    def _tile_groups(self):
        """{tile: {kept ranges: [partial views]}} from the input's tile mapping. A box whose
        reduced dims are innermost gives each of its output elements its own partial: the
        contiguous row of its reduced elements (when rows hold at least ROW_PARTIAL_MIN)."""
        groups = {}
        shape = tuple(self.t.shape)
        order = self.dims + self.kept
        for tile, intervals in enumerate(self.graph.get_tile_mapping(self.t)):
            per_tile = groups.setdefault(tile, {}) if intervals else None
            for begin, end in intervals:
                for box in plan.interval_boxes(begin, end, shape):
                    view = self.t.slice([lo for lo, _ in box], [hi for _, hi in box])
                    rows = plan.inner_rows(box, self.dims)
                    if rows:
                        flat = view.flatten()
                        kept = [box[d] for d in self.kept]
                        count = flat.num_elements() // rows
                        points = zip(*np.unravel_index(np.arange(count), [hi - lo for lo, hi in kept])) if kept \
                            else [()] * count  # to a scalar: one row, one output
                        for j, point in enumerate(points):
                            key = tuple((lo + int(i), lo + int(i) + 1) for (lo, _), i in zip(kept, point))
                            per_tile.setdefault(key, []).append(flat.slice(j * rows, (j + 1) * rows))
                        continue
                    key = tuple(box[d] for d in self.kept)
                    per_tile.setdefault(key, []).append(view.dim_shuffle(order).flatten())
        return groups

    def _out_view(self, out, key):
        view = out
        for d, (lo, hi) in enumerate(key):
            view = view.slice(lo, hi, d)
        return view.flatten()

    def run(self):
        if self.out is None and 0 in self.out_shape:
            return self._new_output()
        if self.t.num_elements() == 0:
            return self._fill_identity()
        groups = self._tile_groups()
        counts = np.zeros(self.out_shape, dtype=np.int64)
        for per_tile in groups.values():
            for key in per_tile:
                counts[tuple(slice(lo, hi) for lo, hi in key)] += 1
        if counts.max() <= 1:
            return self._tile_local(groups)
        pieces = self._first_stage(groups)
        op = Operation.ADD if self.params.op is Operation.SQUARE_ADD and self.first_done else self.params.op
        for stage in range(1, 1 << 20):
            total = sum(p[1].num_elements() for p in pieces)
            if not plan.needs_intermediate_stage(total, int(np.prod(self.out_shape))):
                return self._final_stage(pieces, op, stage)
            pieces = self._intermediate_stage(pieces, op, stage)
            op = Operation.ADD if op is Operation.SQUARE_ADD else op
        raise AssertionError("unreachable")

    def _tile_local(self, groups):
        out = self.out
        new = out is None
        if new:
            out = self._new_output()
        cs = self.stages.get(0, "ReduceOnTile")
        vertex = self._vertex(self.params.op, self.t.dtype, self.out_type, True)
        for tile, per_tile in groups.items():
            reductions = [(self._out_view(out, key), views) for key, views in per_tile.items()]
            if new:
                for out_view, _ in reductions:
                    self.graph.set_tile_mapping(out_view, tile)
            _add_vertices(self.graph, cs, tile, reductions, vertex, self.scale)
        self.stages_used = 1
        return out

    def _first_stage(self, groups):
        """Pieces ``(tile, 1-D tensor, first output index)`` after the on-tile stage, which
        (as PopLibs' inputToIntermediateNoExchange) reduces each tile's groups into one
        partial over the union of their outputs, in regions covered by the same groups."""
        out_shape = self.out_shape
        self.first_done = not all(len(v) == 1 and v[0].num_elements() == int(np.prod([hi - lo for lo, hi in k]))
                                  for per_tile in groups.values() for k, v in per_tile.items())
        pieces = []
        if self.first_done:
            cs = self.stages.get(0, "ReduceOnTile")
            vertex = self._vertex(self.params.op, self.t.dtype, self.in_vertex, False)
        for tile, per_tile in groups.items():
            runs = [(views, pos, lo, hi, math.prod(b - a for a, b in key)) for key, views in per_tile.items()
                    for pos, lo, hi in plan.box_runs(key, out_shape)]
            if not self.first_done:
                pieces += [(tile, views[0].slice(pos, pos + hi - lo), lo) for views, pos, lo, hi, _ in runs]
                continue
            bounds, region, run = plan.cover_regions([r[2] for r in runs], [r[3] for r in runs])
            used = np.unique(region)
            widths = bounds[used + 1] - bounds[used]
            offsets = np.concatenate(([0], np.cumsum(widths)))
            data = self.graph.add_variable(self.in_vertex, (int(offsets[-1]),), f"{self.name}/partials{tile}")
            self.graph.set_tile_mapping(data, tile)
            where = dict(zip(used.tolist(), range(used.size)))
            reductions = [(data.slice(int(offsets[i]), int(offsets[i + 1])), []) for i in range(used.size)]
            for r, k in zip(region.tolist(), run.tolist()):
                views, pos, lo, _, row = runs[k]
                i = where[r]
                for v in views:
                    reductions[i][1].extend(_restrict(v, pos + int(bounds[r]) - lo, int(widths[i]), row))
            _add_vertices(self.graph, cs, tile, reductions, vertex, None)
            # adjacent regions are adjacent in ``data``: one piece per run of them
            breaks = (np.flatnonzero(bounds[used[1:]] != bounds[used[:-1] + 1]) + 1).tolist()
            for a, b in zip([0] + breaks, breaks + [used.size]):
                pieces.append((tile, data.slice(int(offsets[a]), int(offsets[b])), int(bounds[used[a]])))
        return pieces

    def _intermediate_stage(self, pieces, op, stage):
        """PopLibs' intermediateToIntermediate, on lanes: the pieces are laid out in lanes
        of non-overlapping pieces (``plan.lanes``, the rows of the partials), and the lanes
        times the output span cut by ``plan.split_region`` into groups of lanes times blocks
        of outputs, one chunk a tile round-robin from tile 0. A chunk reduces its lanes'
        pieces (clipped to its block) into one partial over their union, in regions covered
        by the same pieces; each tile's results lie in one new variable."""
        graph = self.graph
        cs = self.stages.get(stage, f"ReduceStage{stage - 1}")
        partial_type = pieces[0][1].dtype
        vertex = self._vertex(op, partial_type, self.inter_tile, False)
        tiles = graph.target.num_tiles
        lo = np.array([p[2] for p in pieces], dtype=np.int64)
        hi = lo + np.array([p[1].num_elements() for p in pieces], dtype=np.int64)
        lane = plan.lanes(lo, hi)
        num_lanes, begin, end = int(lane.max()) + 1, int(lo.min()), int(hi.max())
        groups, blocks = plan.split_region(num_lanes, end - begin, max(1, int((hi - lo).sum()) // tiles),
                                           plan.OUTPUT_GRAIN)
        cuts = [begin + c for c in plan.block_bounds(end - begin, blocks, plan.OUTPUT_GRAIN)]
        group_of = lane * groups // num_lanes
        chunks = []  # (tile, [(region begin, region end, [(tensor, offset)])]) of each chunk with pieces
        for g in range(groups):
            mine = np.flatnonzero(group_of == g)
            for a, b in zip(cuts, cuts[1:]):
                inside = mine[(lo[mine] < b) & (hi[mine] > a)]
                if not inside.size:
                    continue
                clip_lo, clip_hi = np.maximum(lo[inside], a), np.minimum(hi[inside], b)
                bounds, region, which = plan.cover_regions(clip_lo, clip_hi)
                regions = {}
                for r, k in zip(region.tolist(), which.tolist()):
                    p = pieces[int(inside[k])]
                    regions.setdefault(r, []).append((p[1], int(bounds[r]) - p[2]))
                chunks.append((len(chunks) % tiles, [(int(bounds[r]), int(bounds[r + 1]), srcs)
                                                     for r, srcs in regions.items()]))
        sizes = [0] * min(tiles, len(chunks))
        for tile, regions in chunks:
            sizes[tile] += sum(e - b for b, e, _ in regions)
        variables = []
        for tile, size in enumerate(sizes):
            variables.append(graph.add_variable(self.inter_tile, (size,), f"{self.name}/stage{stage}_{tile}"))
            graph.set_tile_mapping(variables[tile], tile)
        used = [0] * len(sizes)
        per_tile, new_pieces = {}, []
        for tile, regions in chunks:
            run_start, run_end, run_at, at = None, None, used[tile], used[tile]
            for b, e, sources in regions:
                partial = variables[tile].slice(at, at + e - b)
                per_tile.setdefault(tile, []).append((partial, sources))
                if run_start is None or b != run_end:  # adjacent regions are adjacent in the variable
                    if run_start is not None:
                        new_pieces.append((tile, variables[tile].slice(run_at, at), run_start))
                    run_start, run_at = b, at
                run_end = e
                at += e - b
            new_pieces.append((tile, variables[tile].slice(run_at, at), run_start))
            used[tile] = at
        for tile, reductions in per_tile.items():
            _add_vertices(graph, cs, tile, reductions, vertex, None)
        return new_pieces

    def _final_stage(self, pieces, op, stage):
        graph, target = self.graph, self.graph.target
        partial_type = pieces[0][1].dtype
        lo = np.array([p[2] for p in pieces], dtype=np.int64)
        bounds, region, piece = plan.cover_regions(lo, lo + [p[1].num_elements() for p in pieces])
        used, first, cover = np.unique(region, return_index=True, return_counts=True)
        max_partials = int(cover.max())
        width = target.vector_width(partial_type)
        linear = dict(min_elements_per_tile=4 * width, grain_size=width)
        out, dest, update_after = self.out, None, False
        if out is None:
            out = self._new_output()
            graph.set_tile_mapping(out, graph.linear_mapping(out, **linear))
            dest = out
        elif self.stages.css is not None or plan.should_reduce_at_destination(
                target, partial_type, self.out_type, max_partials, out.num_elements(), graph.get_tile_mapping(out)):
            dest = out
        else:
            dest = graph.add_variable(self.out_type, self.out_shape, f"{self.name}/balanced")
            graph.set_tile_mapping(dest, graph.linear_mapping(dest, **linear))
            update_after = self.params.update
            if not update_after:
                self.stages.copies.append((dest, out))
        self.at_destination = dest is out
        cs = self.stages.get(stage, "ReduceFinalStage")
        update = self.params.update and not update_after
        vertex = ensure_vertex(graph, op, partial_type, self.out_type, update, self.scale is not None)
        flat = dest.flatten()
        pairs = {r: (f, f + n) for r, f, n in zip(used.tolist(), first.tolist(), cover.tolist())}
        piece, bounds = piece.tolist(), bounds.tolist()
        for tile, intervals in enumerate(graph.get_tile_mapping(dest)):
            reductions = []
            for begin, end in intervals:
                r = max(0, bisect.bisect_right(bounds, begin) - 1)
                while r < len(bounds) - 1 and bounds[r] < end:
                    a, b = max(begin, bounds[r]), min(end, bounds[r + 1])
                    if b > a and r in pairs:
                        sources = [pieces[p] for p in piece[slice(*pairs[r])]]
                        reductions.append((flat.slice(a, b), [(p[1], a - p[2]) for p in sources]))
                    r += 1
            if reductions:
                _add_vertices(graph, cs, tile, reductions, vertex, self.scale)
        self.stages_used = stage + 1
        if update_after:  # out (+)= the balanced result, on the output's tiles
            self._accumulate(dest, out, stage + 1)
        return out

    def _accumulate(self, source, out, stage):
        op = Operation.LOG_ADD if self.params.op is Operation.LOG_ADD else Operation.ADD
        vertex = ensure_vertex(self.graph, op, self.out_type, self.out_type, True, False)
        cs = self.stages.get(stage, "ReduceUpdate")
        src, dst = source.flatten(), out.flatten()
        for tile, intervals in enumerate(self.graph.get_tile_mapping(out)):
            if intervals:
                _add_vertices(self.graph, cs, tile, [(dst.slice(b, e), [src.slice(b, e)]) for b, e in intervals],
                              vertex, None)
        self.stages_used = stage + 1

    def _fill_identity(self):
        """No input elements: the output is the operation's identity (unchanged when updating)."""
        out = self.out
        if out is None:
            out = self._new_output()
            self.graph.set_tile_mapping(out, self.graph.linear_mapping(out))
        if self.params.update:
            return out
        mapping = self.graph.get_tile_mapping(out)
        cs = self.stages.get(0, "ReduceOnTile")
        vertex = self._vertex(self.params.op, self.t.dtype, self.out_type, True)
        flat = out.flatten()
        for tile, intervals in enumerate(mapping):
            if intervals:
                _add_vertices(self.graph, cs, tile, [(flat.slice(b, e), []) for b, e in intervals], vertex,
                              self.scale)
        self.stages_used = 1
        return out


def _start(graph, prog, what, name, css_ok=False):
    check_graph(graph, what)
    if css_ok and isinstance(prog, list):
        bad = [i for i, cs in enumerate(prog) if not isinstance(cs, popsim.ComputeSet)]
        if bad:
            raise PoplibsError(f"{what}: prog is a list, so it must hold compute sets (PopLibs' css form), found "
                               f"{type(prog[bad[0]]).__name__} at index {bad[0]}; pass a popsim.Sequence or a list "
                               "of graph.add_compute_set() results")
        return
    check_prog(prog, what)
    check_name(name, what)


def _prepare(graph, t, dims, params, out, out_type, what):
    check_tensor(graph, t, what, "input")
    if not isinstance(params, ReduceParams):
        raise PoplibsError(f"{what}: params must be a popops.ReduceParams, found {params!r}")
    dims = _check_dims(t, dims, what)
    out_shape = tuple(t.shape[d] for d in range(t.rank) if d not in dims)
    if out is not None:
        check_tensor(graph, out, what, "output")
        if tuple(out.shape) != out_shape:
            raise PoplibsError(f"{what}: the output {describe(out)} must have shape {out_shape}: {describe(t)} "
                               f"without the reduced dims {dims}")
        if out.contains_constant() or out.contains_aliases():
            raise PoplibsError(f"{what}: the output {describe(out)} contains constants or aliased elements and "
                               "cannot be written; reduce into a variable")
        out_type = out.dtype
    out_type = t.dtype if out_type is None else out_type
    _check_types(t, params.op, out_type, what)
    return dims, out_type


def reduce(graph, t, dims, params: ReduceParams, prog, name: str = "", out_type=None, options=None):
    """PopLibs' reduce: ``t`` reduced over ``dims`` with ``params.op`` (scaled by
    ``params.scale``) into a new tensor of ``t``'s shape without ``dims`` (all dims: shape
    ``()``; no dims: an element-wise copy). Its type is ``out_type`` or ``t``'s. Appends
    the stages' compute sets to ``prog`` (a Sequence, or a list of compute sets)."""
    what = "popops.reduce"
    _start(graph, prog, what, name, css_ok=True)
    if isinstance(params, ReduceParams) and params.update:
        raise PoplibsError(f"{what}: cannot update with reduce(), which makes a new output; call "
                           "popops.reduce_with_output(graph, t, out, dims, params, prog)")
    return _reduce(graph, [SingleReduceOp(t, dims, params, out_type, name)], prog, name, None, options, what)[0]


def reduce_with_output(graph, t, out, dims, params: ReduceParams, prog, name: str = "", options=None) -> None:
    """PopLibs' reduceWithOutput: writes the reduction into ``out`` (``out += result`` with
    ``params.update``), on ``out``'s tiles or balanced and copied, whichever is cheaper
    (``prog`` a Sequence, or a list of compute sets: then on ``out``'s tiles)."""
    what = "popops.reduce_with_output"
    _start(graph, prog, what, name, css_ok=True)
    _reduce(graph, [SingleReduceOp(t, dims, params, None, name)], prog, name, [out], options, what)


def reduce_many(graph, reductions: Sequence[SingleReduceOp], prog, name: str = "", outputs=None,
                options=None) -> List:
    """PopLibs' reduceMany: several reductions whose stages share compute sets. Returns the
    outputs (``outputs[i]``, when given and not None, is written as by reduce_with_output).
    ``prog`` must be a Sequence: PopLibs' reduceMany has no compute-set-list form."""
    what = "popops.reduce_many"
    _start(graph, prog, what, name)
    return _reduce(graph, reductions, prog, name, outputs, options, what)


def _reduce(graph, reductions, prog, name, outputs, options, what) -> List:
    reductions = list(reductions)
    outputs = list(outputs) if outputs is not None else [None] * len(reductions)
    if len(outputs) != len(reductions):
        raise PoplibsError(f"{what}: {len(outputs)} outputs given for {len(reductions)} reductions")
    stages = _Stages(graph, name or "popops.reduce", prog if isinstance(prog, list) else None)
    jobs = []
    for i, (op, out) in enumerate(zip(reductions, outputs)):
        if not isinstance(op, SingleReduceOp):
            raise PoplibsError(f"{what}: reduction {i} must be a popops.SingleReduceOp, found {op!r}")
        dims, out_type = _prepare(graph, op.t, op.dims, op.params, out, op.out_type, what)
        jobs.append(_Reduction(graph, op.t, dims, op.params, out, out_type, stages, op.name or name or
                               f"{op.t.name}_reduce", options, what))
    results = [job.run() for job in jobs]
    stages.append_to(prog)
    return results
