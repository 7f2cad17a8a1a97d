"""Reports: the data a compiled and run engine can tell about itself, and its text summary."""
from .report import (ExecutionInfo, GraphInfo, MemoryInfo, Report, StepInfo, TargetInfo,  # noqa: F401
                     SCHEMA_VERSION, VertexTypeCycles)
from .saved import open_report  # noqa: F401
from .summary import format_summary  # noqa: F401
