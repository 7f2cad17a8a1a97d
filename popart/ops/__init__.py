"""The lowerings of ONNX ops onto PopLibs ops, registered in the op table (op_table.py)."""
from . import activations, cast, conv_transpose, elementwise, logical, losses, matmul, nn, norm, reduce, shape, slicing  # noqa: F401,E501
