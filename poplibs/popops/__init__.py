"""popops: element-wise operations, expressions, reductions, slicing and sorting
(PopLibs' include/popops), each op built from vertices on the tiles that hold its data."""
import popsim

from . import elementwise
from .elementwise import *  # noqa: F401,F403 - the named element-wise ops, from the op table
from .op_types import BinaryOpType, UnaryOpType

# reductions (reduce.py, reduce_plan.py, reduce_vertices.py)
from . import reduce as _reduce_module
from .reduce import Operation, ReduceParams, SingleReduceOp, reduce, reduce_many, reduce_with_output

# fill, cast, scaled add, select/clamp and friends
from . import fill_cast
from .fill_cast import cast, cast_with_output, fill, zero
from . import scaled_add
from .scaled_add import scaled_add_to, scaled_subtract_from
from . import ternary
from . import misc
from .misc import all_true, has_nan, iota, pad
from .ternary import clamp, clamp_in_place, clamp_with_output, select, select_in_place, select_with_output

# expressions and map (expr.py, map_expr.py)
from . import expr
from .map_expr import map, map_in_place, map_with_output  # noqa: A004 - PopLibs' name


def add_codelets(graph) -> None:
    """PopLibs' popops::addCodelets, for parity: popsim's ops register the vertices they
    use when they add them, so this only checks the graph and is idempotent."""
    if not isinstance(graph, popsim.Graph):
        raise TypeError(f"popops.add_codelets: expected a popsim.Graph, found {type(graph).__name__}")


__all__ = ["BinaryOpType", "UnaryOpType", "add_codelets", *elementwise.__all__, *_reduce_module.__all__,
           *fill_cast.__all__, *scaled_add.__all__, *ternary.__all__, *misc.__all__,
           "expr", "map", "map_in_place", "map_with_output"]
