"""A TrainingSession's pipeline (enablePipelining), as PopART pipelines training: the S
forward stages, then the backward of each in reverse, 2S - 1 pipeline stages in all. The
backward of forward stage s is pipeline stage 2S-2-s, on stage s's IPU; the last forward
stage, the loss and its backward share stage S-1. Every micro-batch of an accumulation goes
forward through the stages and back through them; stage p works on micro-batch c - p in
pipeline cycle c, so a forward stage runs ahead of its backward by 2(S-1-s) cycles and the
tensors its backward reads are stashed: handed on from cycle to cycle through that many
buffers on its IPU (a FIFO as deep as the micro-batches in flight between the two).
Gradients go back stage by stage over the IPU-Links, each weight's is accumulated on the
IPU computing it, and the weights are updated once, after the pipeline has flushed, so the
weights every micro-batch sees are those of the unpipelined accumulated run.

As PopART, training pipelines need gradient accumulation with accumulationFactor at least
the number of pipeline stages (2S - 1)."""
from .errors import popart_exception
from .pipeline import Stages


def check_pipelined_training(options, num_stages: int) -> None:
    """PopART's rules for a pipelined TrainingSession."""
    depth = 2 * num_stages - 1
    if not options.enableGradientAccumulation:
        raise popart_exception(
            f"TrainingSession: enablePipelining needs enableGradientAccumulation = True with accumulationFactor at "
            f"least the number of pipeline stages ({depth}: {num_stages} forward, {num_stages - 1} backward); "
            "popsim.popart pipelines training as PopART does, accumulating the gradients of a pipeline's "
            "micro-batches and updating the weights once after it flushes")
    if options.accumulationFactor < depth:
        raise popart_exception(
            f"For pipelining, depth (gradient accumulation factor) must equal at least the number of pipeline stages "
            f"({depth}): the {num_stages} forward stages and {num_stages - 1} backward ones; accumulationFactor is "
            f"{options.accumulationFactor}, set it to {depth} or more")


class TrainingStages(Stages):
    """The 2S - 1 pipeline stages of a training pipeline over S forward stages."""

    def count(self) -> int:
        return 2 * self.placement.num_stages - 1

    def ipu_of(self, stage: int) -> int:
        s = self.placement.num_stages
        return self.placement.stage_ipu[stage if stage < s else 2 * s - 2 - stage]

    def backward_stage(self, forward_stage: int) -> int:
        return 2 * self.placement.num_stages - 2 - forward_stage
