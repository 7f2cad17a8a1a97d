"""Reports: the data a compiled and run engine can tell about itself, and its text summary."""
from .report import (ExecutionInfo, GraphInfo, MemoryInfo, Report, StepInfo, TargetInfo,  # noqa: F401
                     open_report, SCHEMA_VERSION, VertexTypeCycles)
from .summary import format_summary  # noqa: F401
