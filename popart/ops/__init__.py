"""The lowerings of ONNX ops onto PopLibs ops, registered in the op table (op_table.py)."""
from . import (activations, cast, conv_transpose, dropout, elementwise, logical, losses, matmul, nn, norm, pool,  # noqa: F401
               reduce, rnn, shape, slicing)
