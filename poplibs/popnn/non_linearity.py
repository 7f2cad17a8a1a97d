"""popnn non-linearities (PopLibs' popnn/NonLinearity.hpp): ``non_linearity``,
``non_linearity_in_place``, the convenience wrappers and ``non_linearity_input_gradient``.

The element-wise types run popnn's own vertices (non_linearity_vertices.py) where the data
lives, placed as popops' element-wise ops are (PopLibs' NonLinearity.cpp): on each tile
holding elements of the written tensor, one ``NonLinearity1D`` MultiVertex when the tile
holds them in one contiguous region, else one ``NonLinearity2D`` per worker (the regions
split in grains of the vector width, at least two grains each). ``non_linearity`` writes
a new tensor mapped like the input (PopLibs' createOutputForElementWiseOp); the gradient
a new tensor mapped like the activation. The softmaxes are softmax.py's.
"""
from popsim.program import Execute

from ..poputil import PoplibsError, per_tile
from ..poputil.checks import check_name, check_prog, check_writable, describe
from ..poputil.memory_order import element_order, flat_view
from . import softmax as _softmax
from .non_linearity_checks import check_fp_tensor, check_nl_type
from .non_linearity_vertices import SOFTMAX_SCALING, NonLinearityType, ensure_vertex, worker_cycles

__all__ = ["NonLinearityType", "SOFTMAX_SCALING", "non_linearity", "non_linearity_in_place",
           "non_linearity_input_gradient", "non_linearity_scaling",
           "sigmoid", "sigmoid_in_place", "relu", "relu_in_place", "tanh", "tanh_in_place", "gelu", "gelu_in_place",
           "gelu_erf", "gelu_erf_in_place", "swish", "swish_in_place", "hard_sigmoid", "hard_sigmoid_in_place",
           "softmax", "softmax_in_place", "softmax_stable", "softmax_stable_in_place",
           "scaled_softmax_stable", "scaled_softmax_stable_in_place"]


def _check_common(graph, nl_type, t, prog, name, what: str) -> NonLinearityType:
    nl_type = check_nl_type(nl_type, what)
    check_fp_tensor(graph, t, what, "input")
    check_prog(prog, what)
    check_name(name, what)
    return nl_type


def _add_vertices(graph, kind: str, nl_type, layout, fields, prog, cs_name: str, order=None) -> None:
    """One compute set over ``layout``'s tiles: per tile one ``<kind>1D`` MultiVertex over
    its one contiguous region, or one ``<kind>2D`` per worker; ``fields`` {field: tensor
    of layout's shape}; ``order``: layout's memory order when its creator knows it."""
    dtype = layout.dtype
    # in the order the layout follows memory (poputil.memory_order.element_order): one region a
    # tile, not one per channel and row of a convolution's output or per source of a concat
    order = order or element_order(graph, layout)
    flats = {field: flat_view(order, t) for field, t in fields.items()}
    layout_flat = flat_view(order, layout)
    regions_on = {tile: len(regions) for tile, regions in per_tile.tile_regions(graph, layout_flat)}
    workers = graph.target.num_worker_contexts
    names: dict = {}   # vertex kind -> its type's name, registered on first use

    def make_vertex(tile, regions):
        two_d = regions_on[tile] != 1
        vertex_kind = kind.replace("#", "2D" if two_d else "1D")
        name = names.get(vertex_kind) or names.setdefault(vertex_kind, ensure_vertex(graph, vertex_kind, dtype,
                                                                                     nl_type))
        view = per_tile.region_views if two_d else per_tile.regions_view
        sizes = [end - begin for begin, end in regions] if two_d else [sum(e - b for b, e in regions)]
        return name, {f: view(t, regions) for f, t in flats.items()}, worker_cycles(vertex_kind, nl_type, dtype,
                                                                                     sizes, workers)

    width = graph.target.vector_width(dtype)
    cs = per_tile.add_per_tile_compute_set(graph, cs_name, layout_flat, make_vertex, grain_size=width,
                                           min_elements_per_worker=2 * width, grouping="auto")
    prog.add(Execute(cs))


def non_linearity(graph, nl_type, t, prog, name: str = ""):
    """PopLibs' nonLinearity: a new tensor holding ``nl_type`` applied to ``t`` (FLOAT or
    HALF; the softmaxes over the innermost dimension), mapped like ``t``."""
    what = "popnn.non_linearity"
    nl_type = _check_common(graph, nl_type, t, prog, name, what)
    if nl_type.is_softmax:
        return _softmax.softmax_impl(graph, nl_type, t, prog, name, in_place=False, what=what)
    out, order = per_tile.create_output_in_order(graph, [t], t.dtype, f"{name or 'Nonlinearity'}/out")
    if t.num_elements():
        _add_vertices(graph, "#", nl_type, out, {"data": t, "out": out}, prog, name or f"Nonlinearity/{nl_type.name}",
                      order)
    return out


def non_linearity_in_place(graph, nl_type, t, prog, name: str = "") -> None:
    """PopLibs' nonLinearityInPlace: ``t`` = ``nl_type`` applied to ``t``."""
    what = "popnn.non_linearity_in_place"
    nl_type = _check_common(graph, nl_type, t, prog, name, what)
    check_writable(t, what, "input")
    if nl_type.is_softmax:
        _softmax.softmax_impl(graph, nl_type, t, prog, name, in_place=True, what=what)
    elif t.num_elements():
        _add_vertices(graph, "#InPlace", nl_type, t, {"data": t}, prog, name or f"Nonlinearity/{nl_type.name}")


def non_linearity_input_gradient(graph, nl_type, act, out_grad, prog, name: str = ""):
    """PopLibs' nonLinearityInputGradient: the gradient at the non-linearity's input, a
    new tensor mapped like ``act``, from ``out_grad`` (the gradient at its output) and
    ``act``: the forward OUTPUT for SIGMOID, RELU, TANH, HARD_SIGMOID and the softmaxes,
    the forward INPUT for GELU, GELU_ERF and SWISH (as PopLibs takes GELU's)."""
    what = "popnn.non_linearity_input_gradient"
    nl_type = check_nl_type(nl_type, what)
    check_fp_tensor(graph, act, what, "activation act")
    check_fp_tensor(graph, out_grad, what, "output gradient out_grad")
    check_prog(prog, what)
    check_name(name, what)
    if tuple(act.shape) != tuple(out_grad.shape) or act.dtype != out_grad.dtype:
        raise PoplibsError(f"{what}: the activation act {describe(act)} and the output gradient out_grad "
                           f"{describe(out_grad)} must have the same shape and type")
    if nl_type.is_softmax:
        return _softmax.softmax_gradient(graph, nl_type, act, out_grad, prog, name, what)
    in_grad = per_tile.create_output(graph, [act], act.dtype, f"{name or 'NonLinearityGrad'}/inGrad")
    if act.num_elements():
        _add_vertices(graph, "Grad#", nl_type, in_grad, {"out": act, "outGrad": out_grad, "inGrad": in_grad}, prog,
                      name or f"NonLinearityGrad/{nl_type.name}")
    return in_grad


def non_linearity_scaling(nl_type) -> float:
    """The factor ``nl_type``'s outputs are scaled by (PopLibs' overloads returning
    ``nonLinearityScaling``): SOFTMAX_SCALING for SOFTMAX_SCALED, else 1."""
    return SOFTMAX_SCALING if check_nl_type(nl_type, "popnn.non_linearity_scaling") is NonLinearityType.SOFTMAX_SCALED \
        else 1.0


def _wrappers(nl_type: NonLinearityType, fn: str):
    def apply(graph, t, prog, name: str = ""):
        return non_linearity(graph, nl_type, t, prog, name)

    def apply_in_place(graph, t, prog, name: str = "") -> None:
        non_linearity_in_place(graph, nl_type, t, prog, name)

    apply.__name__, apply_in_place.__name__ = fn, f"{fn}_in_place"
    apply.__doc__ = f"``non_linearity(graph, NonLinearityType.{nl_type.name}, t, prog, name)`` (PopLibs' wrapper)."
    apply_in_place.__doc__ = f"``non_linearity_in_place`` with NonLinearityType.{nl_type.name}."
    return apply, apply_in_place


sigmoid, sigmoid_in_place = _wrappers(NonLinearityType.SIGMOID, "sigmoid")
relu, relu_in_place = _wrappers(NonLinearityType.RELU, "relu")
tanh, tanh_in_place = _wrappers(NonLinearityType.TANH, "tanh")
gelu, gelu_in_place = _wrappers(NonLinearityType.GELU, "gelu")
gelu_erf, gelu_erf_in_place = _wrappers(NonLinearityType.GELU_ERF, "gelu_erf")
swish, swish_in_place = _wrappers(NonLinearityType.SWISH, "swish")
hard_sigmoid, hard_sigmoid_in_place = _wrappers(NonLinearityType.HARD_SIGMOID, "hard_sigmoid")
softmax, softmax_in_place = _wrappers(NonLinearityType.SOFTMAX, "softmax")
softmax_stable, softmax_stable_in_place = _wrappers(NonLinearityType.SOFTMAX_STABLE, "softmax_stable")
scaled_softmax_stable, scaled_softmax_stable_in_place = _wrappers(NonLinearityType.SOFTMAX_SCALED,
                                                                  "scaled_softmax_stable")
