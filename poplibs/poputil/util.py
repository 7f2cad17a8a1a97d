"""Small helpers of PopLibs' poputil/Util.hpp and VertexTemplates.hpp."""
import popsim
from popsim.program import Copy, Sequence

from .checks import check_name, check_tensor
from .errors import PoplibsError

#: ``template_vertex("popops::ScaledAdd", FLOAT, True) == "popops::ScaledAdd<float,true>"``
#: (PopLibs' templateVertex; popsim builds the same names for its own vertex templates).
template_vertex = popsim.template_vertex


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
