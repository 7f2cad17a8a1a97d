"""The vertices of popnn's losses (PopLibs' popnn/codelets/LossSumSquaredTransform.cpp,
LossCrossEntropyTransform.cpp, CalcAccuracy.cpp) as Python vertices under PopLibs' names
and fields, with PopLibs' estimators (popnnCycleEstimators.cpp, PerformanceEstimation.hpp
``getLossTransformCycles``), and popsim's own label check.

- ``popnn::LossSumSquaredTransform<FPType>``: ``deltas = p - y``, ``transformed = 0.5 delta^2``.
- ``popnn::LossCrossEntropyTransform<FPType>``: ``deltas = (deltasScale /
  modelOutputScaling) (p - y modelOutputScaling)``, ``transformed = -y (log(p + eps) -
  log(modelOutputScaling))``, eps EPS_LOG_N_FLOAT or EPS_LOG_N_HALF.
  Both are worker vertices over ``size`` elements (``probs``, ``expected`` (one-hot),
  ``deltas``, ``transformed``); HALF is computed in float32 and rounded once when stored.
- ``popnn::CalcAccuracy<LabelType>``: ``numCorrect += #{i: expected[i] != MASKED_LABEL_CODE
  and maxPerBatch[i] == expected[i]}`` (numCorrect is InOut, as PopLibs': it accumulates).
- ``popnn::LabelsOutOfRange<LabelType>`` (popsim's own; PopLibs has no check): ``outOfRange``
  is true when a label is neither MASKED_LABEL_CODE nor in ``[0, numClasses)``.

Each is a plain vertex template: what varies by instantiation (cross entropy's eps, the
label type's MASKED_LABEL_CODE) is a factory constant that ``compute`` reads, and so a
constant of the translated code.
"""
import math

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, UNSIGNED_SHORT, InOut, Input, Output, Vector, Vertex

from ..poputil.util import ensure_vertex

__all__ = ["EPS_LOG_N_FLOAT", "EPS_LOG_N_HALF", "FP_TYPES", "LABEL_TYPES", "masked_code", "transform_vertex",
           "accuracy_vertex", "label_check_vertex", "loss_transform_cycles", "calc_accuracy_cycles",
           "label_check_cycles"]

#: PopLibs' popops/EncodingConstants.hpp: the smallest normal float, and half's 2^-24
EPS_LOG_N_FLOAT = 1.17549435e-38
EPS_LOG_N_HALF = 5.9605e-8
FP_TYPES = (FLOAT, HALF)
LABEL_TYPES = (UNSIGNED_INT, INT)


def masked_code(label_type) -> int:
    """MASKED_LABEL_CODE (0xFFFFFFFF) as a value of ``label_type`` (-1 for INT)."""
    return -1 if label_type == INT else 0xFFFFFFFF


def _transform_fields(fp_type):
    """The base class of both loss transforms: the fields PopLibs' two vertices share, in
    their order (a vertex class's fields follow its bases'); cross entropy adds its own."""
    class LossTransform(Vertex):
        probs: Input[Vector[fp_type]]
        expected: Input[Vector[fp_type]]
        deltas: Output[Vector[fp_type]]
        transformed: Output[Vector[fp_type]]
        size: UNSIGNED_SHORT
    return LossTransform


@popsim.vertex_template("popnn::LossSumSquaredTransform", fp_type=FP_TYPES)
def LossSumSquaredTransform(fp_type):
    class LossSumSquaredTransform(_transform_fields(fp_type)):
        def compute(self):
            for i in range(int(self.size)):
                delta = self.probs[i] - self.expected[i]
                self.deltas[i] = delta
                self.transformed[i] = 0.5 * delta * delta
            return True
    return LossSumSquaredTransform


@popsim.vertex_template("popnn::LossCrossEntropyTransform", fp_type=FP_TYPES)
def LossCrossEntropyTransform(fp_type):
    eps = EPS_LOG_N_FLOAT if fp_type == FLOAT else EPS_LOG_N_HALF

    class LossCrossEntropyTransform(_transform_fields(fp_type)):
        deltasScale: Input[fp_type]
        modelOutputScaling: Input[fp_type]

        def compute(self):
            scaling = self.modelOutputScaling
            scale = self.deltasScale / scaling
            log_scaling = math.log(scaling)
            for i in range(int(self.size)):
                expect = self.expected[i]
                actual = self.probs[i]
                self.deltas[i] = scale * (actual - expect * scaling)
                self.transformed[i] = -expect * (math.log(actual + eps) - log_scaling)
            return True
    return LossCrossEntropyTransform


@popsim.vertex_template("popnn::CalcAccuracy", label_type=LABEL_TYPES)
def CalcAccuracy(label_type):
    masked = masked_code(label_type)

    class CalcAccuracy(Vertex):
        maxPerBatch: Input[Vector[label_type]]
        expected: Input[Vector[label_type]]
        numCorrect: InOut[UNSIGNED_INT]

        def compute(self):
            count = self.numCorrect
            for i in range(len(self.maxPerBatch)):
                if self.expected[i] != masked and self.maxPerBatch[i] == self.expected[i]:
                    count += 1
            self.numCorrect = count
            return True
    return CalcAccuracy


@popsim.vertex_template("popnn::LabelsOutOfRange", label_type=LABEL_TYPES)
def LabelsOutOfRange(label_type):
    masked = masked_code(label_type)

    class LabelsOutOfRange(Vertex):
        labels: Input[Vector[label_type]]
        numClasses: UNSIGNED_INT
        outOfRange: Output[BOOL]

        def compute(self):
            bad = False
            classes = int(self.numClasses)
            for i in range(len(self.labels)):
                label = self.labels[i]
                if label != masked and (label < 0 or label >= classes):
                    bad = True
            self.outOfRange = bad
            return True
    return LabelsOutOfRange


# -- cycle estimators -------------------------------------------------------------------------------
def loss_transform_cycles(is_float: bool, is_cross_entropy: bool, size: int) -> int:
    """PopLibs' getLossTransformCycles (the assembly vertices): set-up, then 4 (sum
    squared) or 9 (cross entropy) cycles per float or per pair of halves, plus the odd
    half's read-modify-write."""
    cycles = 5 + (6 if is_cross_entropy else 5) + 5 + (0 if is_float else 1) + 2 + 1
    cycles += (9 if is_cross_entropy else 4) * (size if is_float else size // 2)
    if not is_float:
        cycles += 2 + ((11 if is_cross_entropy else 6) if size & 1 else 0)
    return cycles + 1


def calc_accuracy_cycles(batch: int) -> int:
    """PopLibs' CalcAccuracy estimate: 5 + 8 of set-up + 4 per row + 1."""
    return 5 + 4 + 2 + 1 + 1 + 4 * batch + 1


def label_check_cycles(n: int) -> int:
    """popsim's model of its label check: 10 cycles of set-up, 4 per label (load, two
    compares, an or)."""
    return 10 + 4 * n


def _ensure(graph, template, arg, estimate) -> str:
    return ensure_vertex(graph, template[arg], estimate)


def transform_vertex(graph, cross_entropy: bool, fp_type) -> str:
    """The loss transform instantiation's name, registered with its estimator."""
    template = LossCrossEntropyTransform if cross_entropy else LossSumSquaredTransform
    return _ensure(graph, template, fp_type, lambda info, target: loss_transform_cycles(
        fp_type == FLOAT, cross_entropy, int(info.initial_value("size"))))


def accuracy_vertex(graph, label_type) -> str:
    return _ensure(graph, CalcAccuracy, label_type,
                   lambda info, target: calc_accuracy_cycles(info.field_size("maxPerBatch")))


def label_check_vertex(graph, label_type) -> str:
    return _ensure(graph, LabelsOutOfRange, label_type,
                   lambda info, target: label_check_cycles(info.field_size("labels")))
