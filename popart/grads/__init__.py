"""The gradient rules of the op families, registered in the gradient table (grad_table.py)."""
from . import elementwise, losses, matmul, nn, shape  # noqa: F401
