"""poplin: matrix multiplication, convolution and linear algebra (PopLibs' poplin), planned
as PopLibs plans them: a matmul is a 1-D convolution; a planner partitions the work over
tiles under the availableMemoryProportion budget for temporary memory.

docs/poplibs.md, section poplin, describes the plan, the planner and the vertices.
"""
from .conv_params import ConvParams
from .plan import ConvTransform, Method, Partition, Plan, Split

__all__ = ["ConvParams", "ConvTransform", "Method", "Partition", "Plan", "Split"]
