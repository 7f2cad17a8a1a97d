"""The lowerings of ONNX ops onto PopLibs ops, registered in the op table (op_table.py)."""
from . import (activations, cast, conv_transpose, elementwise, logical, matmul, nn, norm, pool, reduce,  # noqa: F401
               rnn, shape, slicing)
