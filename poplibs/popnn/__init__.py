"""popnn: neural-network layers (PopLibs' popnn): non-linearities, softmax, pooling, the
norms, losses and arg-max, LSTM and GRU, built from vertices on the tiles that hold the
data (popnn's own codelets where PopLibs has them, popops and poplin underneath).

docs/poplibs.md, section popnn, describes each family of ops.
"""
__all__ = []

# norms: batch, group, layer and instance norm (bn.py, gn.py, ln.py, in_.py; norm_core.py,
# norm_stat_ops.py, norm_vertices.py, norm_checks.py)
from . import bn, gn, ln, in_  # noqa: E402
__all__ += ["bn", "gn", "ln", "in_"]
