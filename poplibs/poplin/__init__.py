"""poplin: matrix multiplication, convolution and linear algebra (PopLibs' poplin), planned
as PopLibs plans them: a matmul is a 1-D convolution; a planner partitions the work over
tiles under the availableMemoryProportion budget for temporary memory.

docs/poplibs.md, section poplin, describes the plan, the planner and the vertices.
"""
from .conv_params import ConvParams
from .plan import ConvTransform, Method, Partition, Plan, Split

__all__ = ["ConvParams", "ConvTransform", "Method", "Partition", "Plan", "Split"]

# matrix multiplication (mat_mul.py) and its vertices (conv_vertices.py)
from .mat_mul import (create_mat_mul_grouped_input_lhs, create_mat_mul_grouped_input_rhs,
                      create_mat_mul_grouped_output, create_mat_mul_input_lhs, create_mat_mul_input_rhs,
                      create_mat_mul_output, mat_mul, mat_mul_acc, mat_mul_grouped, mat_mul_grouped_acc,
                      mat_mul_grouped_with_output, mat_mul_with_output, transpose_grouped_matrix)
from .conv_vertices import ensure_codelets as add_codelets

__all__ += ["create_mat_mul_grouped_input_lhs", "create_mat_mul_grouped_input_rhs", "create_mat_mul_grouped_output",
            "create_mat_mul_input_lhs", "create_mat_mul_input_rhs", "create_mat_mul_output", "mat_mul",
            "mat_mul_acc", "mat_mul_grouped", "mat_mul_grouped_acc", "mat_mul_grouped_with_output",
            "mat_mul_with_output", "transpose_grouped_matrix", "add_codelets"]
