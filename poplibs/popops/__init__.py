"""popops: element-wise operations, expressions, reductions, slicing and sorting
(PopLibs' include/popops), each op built from vertices on the tiles that hold its data."""
import popsim

from . import elementwise
from .elementwise import *  # noqa: F401,F403 - the named element-wise ops, from the op table
from .op_types import BinaryOpType, UnaryOpType
# slicing, gathering, encoding and sorting (dynamic_slice.py, multi_slice.py, encoding.py, sort.py)
from .dynamic_slice import create_sliceable_tensor, dynamic_slice, dynamic_update
from .multi_slice import multi_slice, multi_update, multi_update_add
from .encoding import MASKED_LABEL_CODE, encode_one_hot, gather
from .sort import SortOrder, TopKParams, sort, sort_key_value, top_k_with_permutation
_SLICING = ["create_sliceable_tensor", "dynamic_slice", "dynamic_update", "multi_slice", "multi_update",
            "multi_update_add", "MASKED_LABEL_CODE", "encode_one_hot", "gather", "SortOrder", "TopKParams", "sort",
            "sort_key_value", "top_k_with_permutation"]


def add_codelets(graph) -> None:
    """PopLibs' popops::addCodelets, for parity: popsim's ops register the vertices they
    use when they add them, so this only checks the graph and is idempotent."""
    if not isinstance(graph, popsim.Graph):
        raise TypeError(f"popops.add_codelets: expected a popsim.Graph, found {type(graph).__name__}")


__all__ = ["BinaryOpType", "UnaryOpType", "add_codelets", *elementwise.__all__, *_SLICING]
