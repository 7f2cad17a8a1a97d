"""popnn: neural-network layers (PopLibs' popnn): non-linearities, softmax, pooling, the
norms, losses and arg-max, LSTM and GRU, built from vertices on the tiles that hold the
data (popnn's own codelets where PopLibs has them, popops and poplin underneath).

docs/poplibs.md, section popnn, describes each family of ops.
"""
__all__ = []

# -- losses, accuracy, arg max/min, top k (loss.py, arg_max.py) ------------------------------------
from .arg_max import arg_max, arg_min, max_and_arg_max, min_and_arg_min, top_k  # noqa: E402
from .loss import LossType, calc_accuracy, calc_loss  # noqa: E402
from .loss_vertices import EPS_LOG_N_FLOAT, EPS_LOG_N_HALF  # noqa: E402

__all__ += ["LossType", "calc_loss", "calc_accuracy", "arg_max", "arg_min", "max_and_arg_max", "min_and_arg_min",
            "top_k", "EPS_LOG_N_FLOAT", "EPS_LOG_N_HALF"]
