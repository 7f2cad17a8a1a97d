"""popops: element-wise operations, expressions, reductions, slicing and sorting
(PopLibs' include/popops), each op built from vertices on the tiles that hold its data."""
__all__ = []
