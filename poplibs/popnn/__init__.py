"""popnn: neural-network layers (PopLibs' popnn): non-linearities, softmax, pooling, the
norms, losses and arg-max, LSTM and GRU, built from vertices on the tiles that hold the
data (popnn's own codelets where PopLibs has them, popops and poplin underneath).

docs/poplibs.md, section popnn, describes each family of ops.
"""
__all__ = []

# ---- recurrent layers: LSTM and GRU (lstm.py, gru.py, rnn_util.py) ----
from . import gru, lstm  # noqa: E402

__all__ += ["gru", "lstm"]
