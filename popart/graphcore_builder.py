"""The Builder's ``aiGraphcore`` namespace: PopART's losses as nodes of the ai.graphcore
domain (opset 1), as PopART writes them: ``Nll`` (attributes ``reduction``,
``ignoreIndex``, ``inputIsLogProbability``), ``L1`` (``lambda``, ``reduction``) and
``IdentityLoss`` (``reduction``). popart/ops/losses.py lowers them."""
import enum

from .errors import popart_exception


class ReductionType(enum.Enum):
    """How a loss reduces its per-sample values: PopART's popart.ReductionType."""
    Sum = 0
    Mean = 1
    NoReduction = 2

    @property
    def onnx_name(self) -> str:
        """The string of the ``reduction`` attribute ("Sum", "Mean", "None"), as PopART writes it."""
        return "None" if self is ReductionType.NoReduction else self.name


#: the ``reduction`` attribute's strings -> ReductionType
REDUCTION_OF = {r.onnx_name: r for r in ReductionType}


def reduction_of(node) -> ReductionType:
    """A loss node's ReductionType, from its ``reduction`` attribute."""
    value = node.attrs.get("reduction", "Mean")
    if value not in REDUCTION_OF:
        raise popart_exception(f"node {node.name!r} ({node.op_type}): reduction {value!r} is not one of "
                               f"{sorted(REDUCTION_OF)}")
    return REDUCTION_OF[value]


def _reduction(value, what: str) -> str:
    if isinstance(value, str) and value in REDUCTION_OF:
        return value
    if not isinstance(value, ReductionType):
        raise popart_exception(f"aiGraphcore.{what}: reduction must be a popart.ReductionType (Sum, Mean, "
                               f"NoReduction), found {value!r}")
    return value.onnx_name


class AiGraphcore:
    """PopART's ai.graphcore ops a Builder adds (the losses)."""

    def __init__(self, builder):
        self._builder = builder

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"aiGraphcore.{name}: popsim.popart runs PopART's losses nllloss, l1loss and "
                             f"identityloss of the ai.graphcore domain so far, not {name!r}; build it from aiOnnx "
                             "ops or see docs/onnx.md ('Not done yet')")

    def _add(self, op_type, args, attrs, debug_context, n_inputs, what):
        if isinstance(args, str) or not isinstance(args, (list, tuple)) or len(args) != n_inputs:
            raise popart_exception(f"aiGraphcore.{what}: expected a list of {n_inputs} tensor id(s), found {args!r}")
        return self._builder._add_node(op_type, list(args), attrs, debug_context, None, domain="ai.graphcore")

    def nllloss(self, args, reduction=ReductionType.Mean, ignoreIndex=None, inputIsLogProbability=False,  # noqa: N803
                debugContext=""):  # noqa: N803 - PopART's names
        """Negative log likelihood of ``[probs, label]``: -log(probs[..., label]) per sample
        (``inputIsLogProbability``: -probs[..., label]); samples labelled ``ignoreIndex``
        count zero (and are left out of the Mean)."""
        attrs = {"reduction": _reduction(reduction, "nllloss"),
                 "inputIsLogProbability": int(bool(inputIsLogProbability))}
        if ignoreIndex is not None:
            attrs["ignoreIndex"] = int(ignoreIndex)
        return self._add("Nll", args, attrs, debugContext, 2, "nllloss")

    def l1loss(self, args, lambda_, reduction=ReductionType.Mean, debugContext=""):  # noqa: N803
        """``lambda_ * |x|``, summed (Sum), averaged over all elements (Mean) or not reduced."""
        return self._add("L1", args, {"lambda": float(lambda_), "reduction": _reduction(reduction, "l1loss")},
                         debugContext, 1, "l1loss")

    def identityloss(self, args, reduction=ReductionType.Mean, debugContext=""):  # noqa: N803
        """``x`` itself as a loss: summed (Sum), averaged over all elements (Mean) or as it is."""
        return self._add("IdentityLoss", args, {"reduction": _reduction(reduction, "identityloss")}, debugContext,
                         1, "identityloss")


def loss_output_shape(node, shapes: dict):
    """The output shape of loss ``node`` (an onnx NodeProto): () when reduced; NoReduction:
    the label's shape (Nll) or the input's (L1, IdentityLoss); None if not known."""
    reduction = next((a.s.decode() for a in node.attribute if a.name == "reduction"), "Mean")
    if reduction != "None":
        return []
    return shapes.get(node.input[1] if node.op_type == "Nll" else node.input[0])
