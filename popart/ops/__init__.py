"""The lowerings of ONNX ops onto PopLibs ops, registered in the op table (op_table.py)."""
from . import elementwise, matmul, nn, shape  # noqa: F401
