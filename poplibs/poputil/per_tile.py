"""Work laid out tile by tile: the layer PopLibs' element-wise ops (popops) and random
number generators (poprand) share.

An op that reads and writes tensors of one shape works where the data lives: its output
is mapped like an input (``create_output``); on each tile it takes the regions of flat
elements the tile holds (``tile_regions``), deals them out between the tile's workers
(``split_regions_between_workers``) and adds one vertex per group of regions, placed on
that tile (``add_vertices_per_tile``, ``add_per_tile_compute_set``). Every tensor the
vertices touch has the layout tensor's shape, so the same flat regions index all of them
(``region_views``, ``regions_view``).
"""
from typing import Callable, List, Optional, Sequence, Tuple

import popsim

from .broadcast import common_shape
from .checks import check_count, check_graph, check_tensor
from .errors import PoplibsError
from .memory_order import flat_view, memory_order_and_mapping, tile_grouped_clone
from .split_regions import split_regions_between_workers

Interval = Tuple[int, int]
#: make_vertex(tile, regions) -> (vertex type: a name or Vertex class, {field: connection}),
#: optionally with a third item, the vertex's cycle estimate (set_perf_estimate; None: its
#: type's estimator), and a fourth, {plain member: value} (set_initial_value)
MakeVertex = Callable[[int, List[Interval]], Tuple]
GROUPINGS = ("workers", "tile", "auto")


def create_output(graph, inputs: Sequence, dtype=None, name: str = ""):
    """A new variable of the inputs' broadcast shape, of ``dtype`` (default: the first
    input's type), mapped element by element like the first input of that full shape
    that another op may write in parallel (no repeated elements, no constants); a
    linear mapping when there is none (PopLibs' createOutputForElementWiseOp)."""
    return create_output_in_order(graph, inputs, dtype, name)[0]


def create_output_in_order(graph, inputs: Sequence, dtype=None, name: str = ""):
    """``(create_output(...), order)``: ``order`` is the memory order (poputil.memory_order)
    the output was cloned in when it was, else None (not worked out). The ops that then
    lay their vertices out in the output's order take it instead of working it out again:
    memory_order of the clone finds the same one (the clone holds the grouped dimension's G
    elements innermost, every other dimension further apart, and the same tile at every
    position; an order exists only when some dimension after the grouped one is larger than 1,
    else the grouping changes no element's place and gives no fewer regions)."""
    what = "create_output"
    inputs = list(inputs)
    if not inputs:
        raise PoplibsError(f"{what}: needs at least one input tensor to take the shape from")
    for t in inputs:
        check_tensor(graph, t, what, "input")
    shape = common_shape(inputs, what)
    out_type = inputs[0].dtype if dtype is None else dtype
    for t in inputs:
        if tuple(t.shape) == shape and not t.contains_aliases() and not t.contains_constant():
            # Poplar's clone keeps the order the elements have in memory: a clone of a
            # convolution's output is channels-innermost too, so the op's vertices (which
            # take the output's order, memory_order) read every operand in place
            order, mapping = memory_order_and_mapping(graph, t)   # (the mapping of t flat in that order)
            name = name or f"{t.name}_out"
            # ... and keeps a tile's share of a variable together: a clone of a concatenation
            # is one region a tile, not one per source tensor and channel group
            flat = flat_view(order, t)
            grouped = tile_grouped_clone(graph, flat, out_type, name, mapping)
            if grouped is not None:   # its order is its element order (element_order), not memory_order's
                return (order.restore(grouped) if order is not None else grouped.reshape(shape)), None
            if order is None:
                return graph.clone(t, name, out_type), None
            return order.restore(graph.clone(order.view(t), name, out_type)), order
    out = graph.add_variable(out_type, shape, name or f"{inputs[0].name}_out")
    graph.set_tile_mapping(out, graph.linear_mapping(out))
    return out, None


def tile_regions(graph, t) -> List[Tuple[int, List[Interval]]]:
    """``[(tile, regions)]`` for each tile of ``graph`` that holds elements of ``t``, in
    tile order: the (begin, end) intervals of ``t``'s flat elements on that tile, in
    element order. Every element must be mapped (InvalidTileMappingError otherwise)."""
    check_tensor(graph, t, "tile_regions")
    return [(tile, intervals) for tile, intervals in enumerate(graph.get_tile_mapping(t)) if intervals]


def region_views(t, regions: Sequence[Interval]) -> List:
    """One 1-D view of ``t``'s flat elements per region (for VectorList fields). Pass a
    1-D ``t`` (flattened once) when calling this for many tiles: it is used as it is (and
    ``Tensor.slices`` keeps what it learns about its elements for the next tile's call)."""
    flat = t if len(t.shape) == 1 else t.flatten()
    return flat.slices(list(regions))


def regions_view(t, regions: Sequence[Interval]):
    """``t``'s flat elements in ``regions``, one after another, as one 1-D view (for Vector
    fields)."""
    views = region_views(t, regions)
    if not views:
        raise PoplibsError(f"regions_view of tensor '{t.name}': no regions given; a vertex needs at least one")
    return views[0] if len(views) == 1 else popsim.concat(views)


def group_regions(target, regions: List[Interval], grouping: str, grain_size: int,
                  min_elements_per_worker: int) -> List[List[Interval]]:
    """The vertices' shares of one tile's regions: ``"workers"``: split between the
    target's workers; ``"tile"``: one vertex for them all; ``"auto"`` (PopLibs'
    element-wise rule): one vertex when the tile holds one region (a MultiVertex
    shares it out between its workers itself), else split between the workers."""
    if grouping == "tile" or (grouping == "auto" and len(regions) == 1):
        return [list(regions)]
    return split_regions_between_workers(target, regions, grain_size, min_elements_per_worker)


def add_vertices_per_tile(graph, cs, layout, make_vertex: MakeVertex, grain_size: int = 1,
                          min_elements_per_worker: int = 0, grouping: str = "workers") -> int:
    """For every tile holding elements of ``layout``, and every group of its regions
    (``group_regions``): ``vertex_type, fields[, cycles[, values]] = make_vertex(tile, group)``, a
    vertex of that type in ``cs`` connected to ``fields``, placed on the tile, with
    ``cycles`` as its perf estimate when given (so that lowering calls no estimator for
    it) and a fourth item's plain member values set. Returns the number of vertices added."""
    what = "add_vertices_per_tile"
    check_graph(graph, what)
    if grouping not in GROUPINGS:
        raise PoplibsError(f"{what}: grouping must be one of {', '.join(GROUPINGS)}, found {grouping!r}")
    grain_size = check_count(grain_size, what, "grain_size", low=1)
    min_elements_per_worker = check_count(min_elements_per_worker, what, "min_elements_per_worker", low=0)
    count = 0
    for tile, regions in tile_regions(graph, layout):
        for group in group_regions(graph.target, regions, grouping, grain_size, min_elements_per_worker):
            made = make_vertex(tile, group)
            vertex = graph.add_vertex(cs, made[0], made[1])
            graph.set_tile_mapping(vertex, tile)
            if len(made) > 2 and made[2] is not None:  # the vertex's cycle estimate, known from its regions
                graph.set_perf_estimate(vertex, made[2])
            for field, value in (made[3] if len(made) > 3 else {}).items():  # plain members' values
                graph.set_initial_value(vertex[field], value)
            count += 1
    return count


def add_per_tile_compute_set(graph, name: Optional[str], layout, make_vertex: MakeVertex, grain_size: int = 1,
                             min_elements_per_worker: int = 0, grouping: str = "workers"):
    """A new compute set ``name`` holding ``add_vertices_per_tile``'s vertices; run it with
    ``Execute``."""
    check_graph(graph, "add_per_tile_compute_set")
    cs = graph.add_compute_set(name)
    add_vertices_per_tile(graph, cs, layout, make_vertex, grain_size, min_elements_per_worker, grouping)
    return cs
