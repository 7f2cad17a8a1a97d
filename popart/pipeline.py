"""A session's step as a pipeline over its batches, as PopART pipelines a model
(enablePipelining): each pipeline stage is a Function on its IPU's virtual graph, and each
pipeline cycle Calls the stages that have a batch to work on, then copies every tensor one
stage hands to a later one over the IPU-Links into that stage's buffer. In cycle c stage s
works on batch c - s: the first S - 1 cycles fill the pipeline, a Repeat runs the cycles
where every stage is busy, and S - 1 more cycles flush it.

A tensor read k stages after the one computing it is copied stage by stage (PopART chains
its IpuCopies the same way), one buffer on each stage's IPU, so every stage reads the batch
it works on. The copies of one cycle run the farthest hops first, so each buffer is read
before it is overwritten; the hops of one distance are one Copy (one exchange). With
per-IPU clocks (docs/multi_ipu.md) the stages of a cycle run side by side.

An ``EVERYN`` anchor (DataFlow) is copied to the host by the stage computing it, in the
cycles where that stage works on batches N, 2N, ...: stage s has batch c - s in cycle c, so
the cycles with copies repeat with period N, and the full cycles run as a Repeat of N cycles
(the rest unrolled)."""
import popsim
from popsim.program import Call, Copy, Repeat, Sequence

from .errors import popart_exception
from .placement import clone_to_ipu


def schedule(batches: int, stages: int) -> list:
    """The pipeline cycles as (phase, active stages): stage s is active in cycle c when
    0 <= c - s < batches."""
    out = []
    for c in range(batches + stages - 1):
        phase = "fill" if c < stages - 1 else "main" if c < batches else "flush"
        out.append((phase, [s for s in range(stages) if 0 <= c - s < batches]))
    return out


class Stages:
    """The programs of a pipeline's stages, where each tensor is computed (its home stage)
    and the buffers and copies that hand tensors on to later stages."""

    def __init__(self, placement):
        self.placement = placement
        self.programs = [Sequence() for _ in range(self.count())]
        self.home = {}            # tensor id -> the stage computing (or streaming) it
        self._buffers = {}        # (tensor id, stage) -> its buffer on that stage's IPU
        self._hops = {}           # distance from the home stage -> [(source, destination)]
        self._every = {}          # stage -> the Sequence streaming its EVERYN anchors out
        self._functions = None    # the stages', EVERYN copies' and IPU copies' Functions, once made

    def count(self) -> int:
        """The number of pipeline stages (popart/pipelined_training.py: forward and backward ones)."""
        return self.placement.num_stages

    def ipu_of(self, stage: int) -> int:
        return self.placement.stage_ipu[stage]

    def program(self, stage: int) -> Sequence:
        return self.programs[stage]

    def produced(self, tid, stage: int) -> None:
        self.home[tid] = stage

    def home_of(self, tid) -> int:
        if tid not in self.home:   # a model input or weight: its earliest reader's stage
            readers = self.placement.readers(tid)
            self.home[tid] = self.placement.home_stage(tid) if readers else 0
        return self.home[tid]

    def per_batch(self, tid) -> Sequence:
        """The program that streams tensor ``tid`` in or out: its home stage's."""
        return self.programs[self.home_of(tid)]

    def every_n(self, tid, stage=None) -> Sequence:
        """The program that streams EVERYN anchor ``tid`` out of ``stage`` (default: its home
        stage), in the cycles where that stage works on every Nth batch."""
        return self._every.setdefault(self.home_of(tid) if stage is None else stage, Sequence())

    def read(self, tid, value, node, stage: int, graph):
        """``value`` (tensor ``tid``) as node ``node`` of stage ``stage`` reads it."""
        home = self.home_of(tid)
        if home > stage:
            raise popart_exception(f"node {node.name!r} ({node.op_type}) in pipeline stage {stage} reads tensor "
                                   f"{tid!r}, computed in the later stage {home}; a stage may read only what its own "
                                   "or earlier stages compute: move the node to a later stage")
        return self.hand(tid, value, home, stage, graph, tid)

    def hand(self, key, value, home: int, stage: int, graph, name: str, ipu=None):
        """``value``, computed in stage ``home``, as stage ``stage`` sees it: through one buffer
        per stage in between (on that stage's IPU, or all on IPU ``ipu``: a stash), each
        copied on from the one before in every pipeline cycle."""
        src = value
        for s in range(home + 1, stage + 1):
            if (key, s) not in self._buffers:
                where = self.ipu_of(s) if ipu is None else ipu
                buf = clone_to_ipu(graph, value, where, self.placement.tiles_per_ipu, f"{name}/stage{s}")
                self._hops.setdefault(s - home, []).append((src, buf))
                self._buffers[(key, s)] = buf
            src = self._buffers[(key, s)]
        return src

    def _copies(self) -> Sequence:
        prog = Sequence()
        for hop in sorted(self._hops, reverse=True):   # the farthest first: their sources are written by nearer hops
            by_type: dict = {}
            for src, dst in self._hops[hop]:
                by_type.setdefault(src.dtype, []).append((src, dst))
            for pairs in by_type.values():
                prog.add(Copy(popsim.concat([s.flatten() for s, _ in pairs]),
                              popsim.concat([d.flatten() for _, d in pairs])))
        return prog

    def _made(self, graph):
        if self._functions is None:   # made once: a training step runs the pipeline in several places
            self._functions = ([graph.add_function(p, f"pipelineStage{s}") for s, p in enumerate(self.programs)],
                               {s: graph.add_function(p, f"pipelineStage{s}/everyN") for s, p in self._every.items()},
                               [graph.add_function(self._copies(), "ipuCopies")] if self._hops else [])
        return self._functions

    def step(self, graph, batches: int, period: int = 0) -> Sequence:
        """One step: ``batches`` batches through the pipeline; with ``period`` N, the EVERYN
        anchors streamed out after batches N, 2N, ... (0: none; 1: after every batch)."""
        n = len(self.programs)
        calls, every, copies = self._made(graph)

        def cycle(c) -> Sequence:
            parts = []
            for s in range(n):
                if 0 <= c - s < batches:
                    parts.append(Call(calls[s]))
                    if period and s in every and (c - s + 1) % period == 0:
                        parts.append(Call(every[s]))
            return Sequence(*parts, *[Call(f) for f in copies])

        cycles = schedule(batches, n)
        fill = [c for c, (phase, _) in enumerate(cycles) if phase == "fill"]
        full = [c for c, (phase, _) in enumerate(cycles) if phase == "main"]
        flush = [c for c, (phase, _) in enumerate(cycles) if phase == "flush"]
        block = max(1, period)   # the full cycles repeat with the EVERYN period
        repeats, rest = divmod(len(full), block)
        body = cycle(full[0]) if block == 1 else Sequence(*[cycle(c) for c in full[:block]])
        main = Repeat(repeats, body) if repeats else Sequence()
        tail = full[repeats * block:]
        return Sequence(Sequence(*[cycle(c) for c in fill]), main, Sequence(*[cycle(c) for c in tail + flush]))
