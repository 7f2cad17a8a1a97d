"""popops: element-wise operations, expressions, reductions, slicing and sorting
(PopLibs' include/popops), each op built from vertices on the tiles that hold its data."""
from typing import TYPE_CHECKING, Any

from . import elementwise
from .elementwise import *  # noqa: F403 - the named element-wise ops, from the op table
from .op_types import BinaryOpType, UnaryOpType

# slicing, gathering, encoding and sorting (dynamic_slice.py, multi_slice.py, encoding.py, sort.py)
from .dynamic_slice import create_sliceable_tensor, dynamic_slice, dynamic_update
from .multi_slice import multi_slice, multi_update, multi_update_add, multi_update_max
from .encoding import MASKED_LABEL_CODE, encode_one_hot, gather, iota
from .sort import (SortOrder, TopKParams, sort, sort_in_place, sort_key_value, sort_key_value_in_place,
                   top_k_with_permutation)

# reductions (reduce.py, reduce_plan.py, reduce_vertices.py)
from .reduce import Operation, ReduceParams, SingleReduceOp, reduce, reduce_many, reduce_with_output

# fill, cast, scaled add, select/clamp and friends (fill.py, cast.py, scaled_add.py, pad.py, all_true.py,
# ternary.py)
from .fill import fill, zero
from .cast import cast, cast_with_output
from .scaled_add import scaled_add_to, scaled_subtract_from
from .pad import MappingMethod, pad
from .all_true import all_true, has_nan
from .ternary import clamp, clamp_in_place, clamp_with_output, select, select_in_place, select_with_output

from ..poputil.checks import check_graph

# expressions and map (expr.py, map_expr.py)
from . import expr
from .map_expr import map, map_in_place, map_with_output  # noqa: A004 - PopLibs' name


def add_codelets(graph) -> None:
    """PopLibs' popops::addCodelets, for parity: popsim's ops register the vertices they
    use when they add them, so this only checks the graph and is idempotent."""
    check_graph(graph, "popops.add_codelets")


__all__ = [
    "BinaryOpType", "UnaryOpType", "add_codelets",
    # expressions and map
    "expr", "map", "map_in_place", "map_with_output",
    # reductions
    "Operation", "ReduceParams", "SingleReduceOp", "reduce", "reduce_many", "reduce_with_output",
    # fill, cast, scaled add, select/clamp and friends
    "cast", "cast_with_output", "fill", "zero", "scaled_add_to", "scaled_subtract_from", "all_true", "has_nan",
    "iota", "pad", "MappingMethod", "clamp", "clamp_in_place", "clamp_with_output", "select", "select_in_place",
    "select_with_output",
    # slicing, gathering, encoding and sorting
    "create_sliceable_tensor", "dynamic_slice", "dynamic_update", "multi_slice", "multi_update",
    "multi_update_add", "multi_update_max", "MASKED_LABEL_CODE", "encode_one_hot", "gather", "SortOrder",
    "TopKParams", "sort", "sort_in_place", "sort_key_value", "sort_key_value_in_place", "top_k_with_permutation",
]
__all__ += elementwise.__all__  # the named element-wise ops, from the op table

if TYPE_CHECKING:  # for type checkers only: the named element-wise ops, which elementwise makes from the op table
    def __getattr__(name: str) -> Any: ...
