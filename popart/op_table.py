"""The op table: each ONNX op type popsim.popart runs, the opsets it runs it at, and the
function that lowers a node of it onto PopLibs ops (popart/ops/). The Builder's aiOnnx
methods, `python -m popsim.popart ops` and docs/onnx.md's list all come from it."""
from dataclasses import dataclass
from typing import Callable, Dict, Optional

from .errors import popart_exception


@dataclass(frozen=True)
class OpDef:
    op_type: str          # ONNX's name: "MatMul"
    since: int            # the first opset whose definition it lowers (earlier ones are converted)
    lower: Callable       # lower(ctx, node, inputs) -> list of output values
    until: Optional[int] = None   # the last opset, where a later one changed the op in a way not lowered
    summary: str = ""     # the PopLibs ops it becomes

    def runs_at(self, opset: int) -> bool:
        return opset >= self.since and (self.until is None or opset <= self.until)


OPS: Dict[str, OpDef] = {}
#: PopART's own ops (domain ai.graphcore, opset 1): the losses; the Builder's aiGraphcore
GRAPHCORE = "ai.graphcore"
GRAPHCORE_OPS: Dict[str, OpDef] = {}


def op(op_type: str, since: int = 1, until: Optional[int] = None, summary: str = "", domain: str = ""):
    """Register ``lower`` as the lowering of ``op_type`` (of ai.onnx, or of ``domain``
    ai.graphcore)."""
    def register(lower):
        (GRAPHCORE_OPS if domain == GRAPHCORE else OPS)[op_type] = OpDef(op_type, since, lower, until, summary)
        return lower
    return register


def supported_ops() -> list:
    _load()
    return [OPS[k] for k in sorted(OPS)]


def graphcore_ops() -> list:
    """The ai.graphcore ops (PopART's losses) popsim.popart runs."""
    _load()
    return [GRAPHCORE_OPS[k] for k in sorted(GRAPHCORE_OPS)]


def lookup(op_type: str, opset: int, node_name: str, domain: str = "") -> OpDef:
    _load()
    if domain == GRAPHCORE:
        if op_type not in GRAPHCORE_OPS:
            raise popart_exception(f"node {node_name!r}: ai.graphcore op {op_type!r} is not supported by popsim.popart "
                                   f"yet; supported: {', '.join(sorted(GRAPHCORE_OPS))}")
        return GRAPHCORE_OPS[op_type]
    d = OPS.get(op_type)
    if d is None:
        raise popart_exception(f"node {node_name!r}: op type {op_type!r} is not supported by popsim.popart yet; "
                               f"supported: {', '.join(sorted(OPS))} (`python -m popsim.popart ops`)")
    if not d.runs_at(opset):
        until = f" to {d.until}" if d.until else " and later"
        raise popart_exception(f"node {node_name!r}: {op_type} at opset {opset} is not supported; popsim.popart "
                               f"runs it at opsets {d.since}{until}")
    return d


def _load() -> None:
    from . import ops  # noqa: F401 - registers the lowerings
