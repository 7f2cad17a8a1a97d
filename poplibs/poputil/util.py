"""Small helpers of PopLibs' poputil/Util.hpp and VertexTemplates.hpp, and
``ensure_vertex``, the libraries' one way to register a vertex they add (not PopLibs' API:
PopLibs' addCodelets registers every vertex up front; popsim's ops register each on first use)."""
import popsim
from popsim.program import Copy, Sequence

from .checks import check_name, check_tensor
from .errors import PoplibsError

#: ``template_vertex("popops::ScaledAdd", FLOAT, True) == "popops::ScaledAdd<float,true>"``
#: (PopLibs' templateVertex; popsim builds the same names for its own vertex templates).
template_vertex = popsim.template_vertex


def ensure_vertex(graph, vertex_class, estimate) -> str:
    """Register ``vertex_class`` (a Vertex class, or a template instantiation ``T[args]``)
    and its perf estimator ``estimate(info, target) -> cycles`` with ``graph`` once;
    return its name (the class's ``vertex_name``, as popsim names it: else its
    ``__name__``). A graph that already has a vertex type of that name keeps it."""
    name = vertex_class.__dict__.get("vertex_name") or vertex_class.__name__
    if not graph.has_codelet(name):
        graph.add_codelets(vertex_class)
        graph.register_perf_estimator(name, estimate)
    return name


def duplicate(graph, t, prog, name: str = ""):
    """A new variable with ``t``'s shape, type and tile mapping, and a Copy from ``t`` into
    it appended to ``prog`` (PopLibs' duplicate). Returns the new variable."""
    what = "duplicate"
    check_tensor(graph, t, what)
    if not isinstance(prog, Sequence):
        raise PoplibsError(f"{what} of tensor '{t.name}': prog must be a popsim.Sequence to append the Copy to, "
                           f"found {type(prog).__name__}; create one with popsim.Sequence()")
    check_name(name, f"{what} of tensor '{t.name}'")
    out = graph.clone(t, name or f"{t.name}_duplicate")
    prog.add(Copy(t, out))
    return out
