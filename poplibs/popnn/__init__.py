"""popnn: neural-network layers (PopLibs' popnn): non-linearities, softmax, pooling, the
norms, losses and arg-max, LSTM and GRU, built from vertices on the tiles that hold the
data (popnn's own codelets where PopLibs has them, popops and poplin underneath).

docs/poplibs.md, section popnn, describes each family of ops.
"""
from ..poputil.checks import check_graph

__all__ = ["add_codelets"]


def add_codelets(graph) -> None:
    """PopLibs' popnn::addCodelets, for ports: popnn's ops register the vertices they use
    as they add them, so this only checks the graph and is idempotent."""
    check_graph(graph, "popnn.add_codelets")


# -- non-linearities and softmax (non_linearity.py, softmax.py, non_linearity_vertices.py) --
from . import non_linearity as _non_linearity  # noqa: E402
from .non_linearity import *  # noqa: F403,E402 - NonLinearityType, non_linearity*, the wrappers
from .softmax import log_softmax, log_softmax_in_place  # noqa: E402

__all__ += _non_linearity.__all__ + ["log_softmax", "log_softmax_in_place"]

# ---- recurrent layers: LSTM and GRU (lstm.py, gru.py, rnn_util.py) ----
from . import gru, lstm  # noqa: E402

__all__ += ["gru", "lstm"]

# pooling (pooling.py, pooling_worklists.py, pooling_vertices.py/.cpp)
from .pooling import PoolingType, PoolParams, pool, pool_input_gradient, pool_input_gradient_avg_sum  # noqa: E402

__all__ += ["PoolingType", "PoolParams", "pool", "pool_input_gradient", "pool_input_gradient_avg_sum"]

# -- losses, accuracy, arg max/min, top k (loss.py, arg_max.py) ------------------------------------
from .arg_max import arg_max, arg_min, max_and_arg_max, min_and_arg_min, top_k  # noqa: E402
from .loss import LossType, calc_accuracy, calc_loss  # noqa: E402
from .loss_vertices import EPS_LOG_N_FLOAT, EPS_LOG_N_HALF  # noqa: E402

__all__ += ["LossType", "calc_loss", "calc_accuracy", "arg_max", "arg_min", "max_and_arg_max", "min_and_arg_min",
            "top_k", "EPS_LOG_N_FLOAT", "EPS_LOG_N_HALF"]

# norms: batch, group, layer and instance norm (bn.py, gn.py, ln.py, in_.py; norm_core.py,
# norm_stat_ops.py, norm_vertices.py, norm_checks.py)
from . import bn, gn, ln, in_  # noqa: E402

__all__ += ["bn", "gn", "ln", "in_"]
