"""What a session streams each step: popart.DataFlow (batches per step and the anchors,
the tensors returned to the host, each with an AnchorReturnType) and popart.PyStepIO (the
host arrays of one step)."""
import numpy as np

from .errors import popart_exception

#: PopART's anchor return types, as their strings: ALL (every batch), FINAL (the last),
#: SUM (summed over the step), EVERYN (every Nth batch)
RETURN_TYPES = ("ALL", "FINAL", "SUM", "EVERYN")


class AnchorReturnType:
    """``AnchorReturnType("ALL" | "FINAL" | "SUM")`` or ``AnchorReturnType("EVERYN", N)``."""

    def __init__(self, anchorReturnTypeString, returnPeriod=None):  # noqa: N803 - PopART's names
        kind = anchorReturnTypeString
        if kind not in RETURN_TYPES:   # exact, as PopART: "all" is an error, not coerced
            hint = f"; did you mean {str(kind).upper()!r}?" if str(kind).upper() in RETURN_TYPES else ""
            raise popart_exception(f"AnchorReturnType: {anchorReturnTypeString!r} is not one of {RETURN_TYPES}{hint}")
        if (kind == "EVERYN") != (returnPeriod is not None):
            raise popart_exception(f"AnchorReturnType({kind!r}): a return period is given with EVERYN and only "
                                   f"with it, found {returnPeriod!r}")
        if kind == "EVERYN" and (not isinstance(returnPeriod, (int, np.integer)) or returnPeriod < 1):
            raise popart_exception(f"AnchorReturnType('EVERYN', N): N must be a positive int, found {returnPeriod!r}")
        self._kind, self._period = kind, int(returnPeriod) if returnPeriod is not None else 1

    def id(self) -> str:  # PopART's name
        return self._kind

    def rp(self) -> int:
        return self._period

    def __repr__(self):
        return f"AnchorReturnType({self._kind!r}" + (f", {self._period})" if self._kind == "EVERYN" else ")")


class DataFlow:
    """``DataFlow(batches_per_step, {tensor_id: AnchorReturnType})`` or
    ``DataFlow(batches_per_step, [ids], AnchorReturnType)``."""

    def __init__(self, batchesPerStep, anchorTensors=None, anchorReturnType=None):  # noqa: N803
        if not isinstance(batchesPerStep, (int, np.integer)) or batchesPerStep < 1:
            raise popart_exception(f"DataFlow: batchesPerStep must be a positive int, found {batchesPerStep!r}")
        anchors = anchorTensors or {}
        if isinstance(anchors, (list, tuple)):
            art = anchorReturnType or AnchorReturnType("ALL")
            anchors = {a: art for a in anchors}
        for tid, art in anchors.items():
            if not isinstance(tid, str) or not isinstance(art, AnchorReturnType):
                raise popart_exception(f"DataFlow: anchors map tensor ids (str) to AnchorReturnType, found "
                                       f"{tid!r}: {art!r}")
            if art.id() == "EVERYN" and batchesPerStep % art.rp():
                raise popart_exception(f"DataFlow: anchor {tid!r} returns every {art.rp()} batches, which does not "
                                       f"divide batchesPerStep {batchesPerStep}")
        self._bps, self._anchors = int(batchesPerStep), dict(anchors)

    def batchesPerStep(self) -> int:  # noqa: N802
        return self._bps

    def anchors(self) -> list:
        return list(self._anchors)

    def art(self, tensor_id) -> AnchorReturnType:
        return self._anchors[tensor_id]

    def isAnchored(self, tensor_id) -> bool:  # noqa: N802
        return tensor_id in self._anchors

    def nAnchors(self) -> int:  # noqa: N802
        return len(self._anchors)


class PyStepIO:
    """The host arrays of one step: ``PyStepIO({input_id: array}, {anchor_id: array})``."""

    def __init__(self, inputs, outputs):
        if not isinstance(inputs, dict) or not isinstance(outputs, dict):
            raise popart_exception("PyStepIO(inputs, outputs): both are dicts of tensor id -> numpy array")
        self.inputs, self.outputs = inputs, outputs
        self.runtime_asserts = True

    def enableRuntimeAsserts(self, enable) -> None:  # noqa: N802 - PopART's name
        """Accepted; the arrays are checked anyway (a wrong one would otherwise be read as garbage)."""
        self.runtime_asserts = bool(enable)


def step_shape(shape, *counts) -> tuple:
    """A tensor's host shape over ``counts`` (batches per step, then the accumulation factor
    and the replicas where they apply): [*counts, *shape], each count of 1 dropped (PopART's
    rule for inputs and anchors)."""
    return tuple(int(c) for c in counts if c > 1) + tuple(shape)


def anchor_problem(out, shape, dtype) -> str:
    """What is wrong with ``out`` as the host array of an anchor of ``shape`` and ``dtype``
    ("" when nothing): it must be a writable C-contiguous numpy array of that type and number
    of elements (PopART checks the count, not the shape)."""
    if not isinstance(out, np.ndarray):
        return "nothing" if out is None else type(out).__name__
    if out.size != int(np.prod(shape)) or out.dtype != dtype or not out.flags.c_contiguous or not out.flags.writeable:
        return f"{out.dtype} {out.shape}" + ("" if out.flags.c_contiguous else " (not C-contiguous)") + \
            ("" if out.flags.writeable else " (read-only)")
    return ""
