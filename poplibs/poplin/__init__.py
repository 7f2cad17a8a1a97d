"""poplin: matrix multiplication, convolution and linear algebra (PopLibs' poplin), planned
as PopLibs plans them: a matmul is a 1-D convolution; a planner partitions the work over
tiles under the availableMemoryProportion budget for temporary memory.

docs/poplibs.md, section poplin, describes the plan, the planner and the vertices.
"""
from .conv_params import ConvParams
from .plan import ConvTransform, Method, Partition, Plan, Split

__all__ = ["ConvParams", "ConvTransform", "Method", "Partition", "Plan", "Split"]

# -- the planner, its options and reports (helper PL) -------------------------------------------
from .options import ConvOptions, parse_conv_options, parse_mat_mul_options
from .plan_constraints import PlanConstraints
from .plan_report import get_mat_mul_plan, mat_mul_report_plan, report_plan_info
from .planner import PlanningCache, get_plan

__all__ += ["ConvOptions", "PlanConstraints", "PlanningCache", "get_mat_mul_plan", "get_plan", "mat_mul_report_plan",
            "parse_conv_options", "parse_mat_mul_options", "report_plan_info"]
