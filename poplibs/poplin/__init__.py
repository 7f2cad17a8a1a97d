"""poplin: matrix multiplication, convolution and linear algebra (PopLibs' poplin), planned
as PopLibs plans them: a matmul is a 1-D convolution; a planner partitions the work over
tiles under the availableMemoryProportion budget for temporary memory.

docs/poplibs.md, section poplin, describes the plan, the planner and the vertices.
"""
from .conv_params import ConvParams
from .plan import ConvTransform, Method, Partition, Plan, Split

__all__ = ["ConvParams", "ConvTransform", "Method", "Partition", "Plan", "Split"]

# -- the planner, its options and reports -----------------------------------------------------
from .options import ConvOptions, parse_conv_options, parse_mat_mul_options
from .plan_constraints import PlanConstraints
from .plan_report import get_mat_mul_plan, mat_mul_report_plan, report_plan_info
from .planner import PlanningCache, get_plan

__all__ += ["ConvOptions", "PlanConstraints", "PlanningCache", "get_mat_mul_plan", "get_plan", "mat_mul_report_plan",
            "parse_conv_options", "parse_mat_mul_options", "report_plan_info"]

# matrix multiplication (mat_mul.py) and its vertices (conv_vertices.py)
from .mat_mul import (create_mat_mul_grouped_input_lhs, create_mat_mul_grouped_input_rhs,  # noqa: E402
                      create_mat_mul_grouped_output, create_mat_mul_input_lhs, create_mat_mul_input_rhs,
                      create_mat_mul_output, mat_mul, mat_mul_acc, mat_mul_grouped, mat_mul_grouped_acc,
                      mat_mul_grouped_with_output, mat_mul_with_output, transpose_grouped_matrix)
from .conv_vertices import ensure_codelets as add_codelets  # noqa: E402

__all__ += ["create_mat_mul_grouped_input_lhs", "create_mat_mul_grouped_input_rhs", "create_mat_mul_grouped_output",
            "create_mat_mul_input_lhs", "create_mat_mul_input_rhs", "create_mat_mul_output", "mat_mul",
            "mat_mul_acc", "mat_mul_grouped", "mat_mul_grouped_acc", "mat_mul_grouped_with_output",
            "mat_mul_with_output", "transpose_grouped_matrix", "add_codelets"]

# convolution (convolution.py): the passes, tensor creation, biases
from .convolution import (add_bias, calculate_weight_deltas, convolution, convolution_weight_update,  # noqa: E402
                          convolution_with_output, create_biases, create_conv_output, create_input, create_weights,
                          weights_transpose_chans_flip_xy)
from .conv_transforms import get_gradient_params  # noqa: E402

__all__ += ["add_bias", "calculate_weight_deltas", "convolution", "convolution_weight_update",
            "convolution_with_output", "create_biases", "create_conv_output", "create_input", "create_weights",
            "get_gradient_params", "weights_transpose_chans_flip_xy"]

# linear algebra: triangular_solve.py, cholesky.py, their vertices linalg_vertices.py
from .cholesky import cholesky, cholesky_in_place  # noqa: E402
from .triangular_solve import triangular_mask, triangular_solve  # noqa: E402

__all__ += ["cholesky", "cholesky_in_place", "triangular_mask", "triangular_solve"]

# modelled throughput (flops.py)
from .flops import achieved_flops, mat_mul_flops, peak_flops  # noqa: E402

__all__ += ["achieved_flops", "mat_mul_flops", "peak_flops"]
