"""A TrainingSession's random seed, as PopART keeps it: ``randomSeed___fromHost``, a
2-word UNSIGNED_INT tensor on the device (tile 0 of the first IPU, of each replica).

``session.setRandomSeed(seed)`` writes the 64-bit ``seed`` as its two 32-bit halves
``[low, high]``, replica r getting ``[low + r, high]`` (PopART adds the replication index
to the low half as it loads the seed). Before the forward pass of every micro-batch the
seed moves on by ``[replicas, 1]`` (PopART's GetRandomSeedOp), so every batch and step
draws new masks and replicas never share one. Until setRandomSeed is called the seed is
taken from the clock when the session is prepared, as PopART does.

Each Dropout draws from that seed with its own seed modifier (the node's index in the
model), through poprand's seed-modifier argument; PopART gives each random op a seed
of its own derived from the base seed and a per-op modifier (ModifyRandomSeedOp): the same
effect, independent streams per node. Placed on several IPUs, the seed is copied onto a
node's IPU like any tensor it reads; pipelined, it is computed in stage 0 and handed on
stage by stage, so every stage draws with its micro-batch's seed."""
import time

import numpy as np

from popsim import UNSIGNED_INT, popops
from popsim.program import Sequence

from .errors import popart_exception

#: PopART's id of the streamed seed tensor
SEED_ID = "randomSeed___fromHost"


def modifier(model, node) -> int:
    """Node ``node``'s seed modifier: its index in the model (so every node draws its own mask)."""
    return next(i for i, n in enumerate(model.nodes) if n is node)


class RandomSeed:
    """The seed tensor, its increment at the start of every micro-batch, and the host writes."""

    def __init__(self, graph, plan, stages):
        self.graph, self.plan, self.stages, self.replicas = graph, plan, stages, plan.replicas
        self.start = Sequence()   # first in every micro-batch's forward pass (stage 0's when pipelined)
        self.tensor = None        # made when the first Dropout asks for it
        self.value = time.time_ns() % 2 ** 64   # PopART's default: the clock when the session is prepared

    def _make(self) -> None:
        graph, plan, stages = self.graph, self.plan, self.stages
        home = plan.ipus[plan.stage_ipu[0] if stages is not None else 0] if plan.manual else graph
        self.tensor = home.add_variable(UNSIGNED_INT, (2,), SEED_ID)
        home.set_tile_mapping(self.tensor, 0)
        graph.create_host_write(SEED_ID, self.tensor)
        graph.create_host_read(SEED_ID, self.tensor)
        step = graph.add_constant(UNSIGNED_INT, (2,), np.array([self.replicas, 1], np.uint32), f"{SEED_ID}/increment")
        home.set_tile_mapping(step, 0)
        popops.add_in_place(graph, self.tensor, step, self.start, "RandomSeedIncrement")
        if stages is not None:
            stages.produced(SEED_ID, 0)

    def seed_for(self, ctx, node):
        """The seed as ``node`` reads it: on its IPU (copied there), in its pipeline stage (handed on)."""
        if self.tensor is None:
            self._make()
        placement = getattr(ctx, "placement", None)
        if placement is None:
            return self.tensor
        ctx.values.setdefault(SEED_ID, self.tensor)
        return ctx._placed(SEED_ID, node, placement.node_ipu.get(id(node)), placement.node_stage.get(id(node)))

    def write(self, engine, value=None) -> None:
        """Write ``value`` (the session's seed when None) to every replica's seed tensor."""
        if value is not None:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                    or not 0 <= int(value) < 2 ** 64:
                raise popart_exception(f"setRandomSeed: the seed must be an int in [0, 2**64), found {value!r}")
            self.value = int(value)
        if self.tensor is None:   # no Dropout draws: PopART warns that the seed changes nothing
            return
        low, high = self.value & 0xFFFFFFFF, self.value >> 32
        per_replica = np.array([[(low + r) % 2 ** 32, high] for r in range(self.replicas)], np.uint32)
        engine.write_tensor(SEED_ID, per_replica if self.replicas > 1 else per_replica[0])

    def read(self, engine) -> int:
        """The seed on the device now (replica 0's, moved on by every micro-batch run so far)."""
        if self.tensor is None:
            return 0   # PopART: no random behaviour, 0
        low, high = (int(v) for v in np.asarray(engine.read_tensor(SEED_ID, **({"replica": 0} if self.replicas > 1
                                                                                 else {}))).reshape(-1))
        return low | high << 32
