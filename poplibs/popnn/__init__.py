"""popnn: neural-network layers (PopLibs' popnn): non-linearities, softmax, pooling, the
norms, losses and arg-max, LSTM and GRU, built from vertices on the tiles that hold the
data (popnn's own codelets where PopLibs has them, popops and poplin underneath).

docs/poplibs.md, section popnn, describes each family of ops.
"""
__all__ = []

# pooling (pooling.py, pooling_worklists.py, pooling_vertices.py/.cpp)
from .pooling import PoolingType, PoolParams, pool, pool_input_gradient, pool_input_gradient_avg_sum  # noqa: E402
__all__ += ["PoolingType", "PoolParams", "pool", "pool_input_gradient", "pool_input_gradient_avg_sum"]
