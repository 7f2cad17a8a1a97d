"""Serial splits as a loop, as PopLibs runs them (Convolution.cpp's serial loop; the
planner's "serial loop extras", PopLibs' planner): one body built once and run
by a Repeat, its compute sets working on temporaries that hold the current step's slice.

A serial split cuts a dimension (out-channels or in-channels) of ``extent`` elements into
steps of ``stride`` elements. Each operand that the split cuts is viewed as
[steps, ..., stride, ...] (padded to ``steps * stride``: with zero constants for inputs,
which then add nothing, or with a throw-away variable for outputs) and each iteration
moves one step's slice between it and a temporary with popops.dynamic_slice /
dynamic_update at the offset held by a loop counter: an UNSIGNED_INT device scalar
zeroed before the loop and incremented at the end of the body. The padding is mapped
like the step-0 elements in its place, where the slicing vertices run, so a step's slice
of an operand laid out for the plan (mat_mul_layout, conv_layout: every step's block on
the tiles of step 0's) moves without exchange.

A dimension of one step is not sliced: its operands are used as they are (no padding).

Given the operand's parallel blocks (``blocks``: per dimension, parts x elements), the
stepped view is in block order instead, [steps..., parts..., block...]: each tile's part of a
step is then one region of it (its block), so the slice and update vertices move one region
per tile and step, as PopLibs' sliceable layouts let them, where the operand's own order
would cut a block into one region per row. The step's tensor (``Stepped.logical``) is viewed
back in the operand's order for the body.
"""
from dataclasses import dataclass
from typing import List, Optional, Sequence as Seq, Tuple

import popsim
from popsim import UNSIGNED_INT, popops
from popsim.program import Repeat, Sequence

from ..poputil import PoplibsError


@dataclass(frozen=True)
class SerialDim:
    """One serial split: ``extent`` elements done ``stride`` at a time."""
    extent: int
    stride: int

    @property
    def steps(self) -> int:
        return max(1, -(-self.extent // self.stride))

    @property
    def step_extent(self) -> int:
        """Elements one step's temporaries hold (the stride; the extent if one step)."""
        return self.stride if self.steps > 1 else self.extent


@dataclass
class Stepped:
    """An operand viewed with one leading dimension per sliced serial split (``view``),
    the counters selecting the step along each, the operand itself (``base``), and for a
    blocked view the parallel blocks and the step's shape in the operand's order."""
    view: popsim.Tensor
    counters: List[popsim.Tensor]
    base: popsim.Tensor
    blocks: Optional[Seq[Tuple[int, int]]] = None
    step_shape: Optional[Seq[int]] = None

    @property
    def sliced(self) -> bool:
        return bool(self.counters)

    def logical(self, step):
        """A step's tensor (from SerialLoop.slice or step_like, in the view's order) in the
        operand's order: [parts..., block...] interleaved, merged and cut to the step."""
        if not self.sliced or self.blocks is None:
            return step
        rank = len(self.blocks)
        order = [j for d in range(rank) for j in (d, rank + d)]
        merged = step.dim_shuffle(order).reshape([p * b for p, b in self.blocks])
        return merged.slice([0] * rank, list(self.step_shape))


class SerialLoop:
    """Builds the counters, stepped views, slices and Repeats of one operation's loop."""

    def __init__(self, graph, name: str, tile: int):
        self.graph, self.name, self.tile = graph, name, tile
        self._one = None

    def counter(self, what: str) -> popsim.Tensor:
        """A new loop counter (UNSIGNED_INT, shape (1,)) on the loop's tile."""
        c = self.graph.add_variable(UNSIGNED_INT, (1,), f"{self.name}/{what}")
        self.graph.set_tile_mapping(c, self.tile)
        return c

    def stepped(self, t, splits: Seq[Tuple[int, SerialDim, Optional[popsim.Tensor]]], writable: bool = False,
                what: str = "", blocks: Optional[Seq[Tuple[int, int]]] = None) -> Stepped:
        """``t`` with each split (dimension of ``t``, SerialDim, its counter) of more than
        one step padded to steps x stride, cut into [steps, stride] and its steps
        dimension moved to the front; the first split given ends up outermost. With
        ``blocks`` (per dimension of ``t``: parallel parts, elements per part; a split's
        stride is parts x elements) the rest is in block order (see the module's doc)."""
        cut = [(d, split, c) for d, split, c in splits if split.steps > 1]
        if blocks is not None and cut:
            return self._blocked(t, cut, writable, what, blocks)
        view = t
        counters: list = []
        for dim, split, counter in reversed(list(splits)):
            if split.steps == 1:
                continue
            dim += len(counters)  # earlier splits' step dimensions sit in front
            view = self._pad(view, dim, split, writable, f"{what}/pad{len(counters)}")
            shape = list(view.shape)
            shape[dim:dim + 1] = [split.steps, split.stride]
            view = view.reshape(shape)
            view = view.dim_roll(dim, 0)
            counters.insert(0, counter)
        return Stepped(view, counters, t)

    def _blocked(self, t, cut, writable: bool, what: str, blocks) -> Stepped:
        rank = t.rank
        steps = [1] * rank
        for d, split, _ in cut:
            if split.stride != blocks[d][0] * blocks[d][1]:
                raise PoplibsError(f"{self.name}: the serial stride {split.stride} of dimension {d} is not its "
                                   f"blocks' {blocks[d][0]} x {blocks[d][1]}")
            steps[d] = split.steps
        view = t
        for d in range(rank):
            view = self._pad_blocked(view, d, steps, blocks, writable, f"{what}/pad{d}")
        view = view.reshape([x for d in range(rank) for x in (steps[d], *blocks[d])])
        sliced = [d for d, _, _ in cut]
        order = [3 * d for d in sliced] + [3 * d + 1 for d in range(rank)] + [3 * d + 2 for d in range(rank)]
        view = view.dim_shuffle(order + [3 * d for d in range(rank) if d not in sliced])
        view = view.reshape(view.shape[:len(order)])  # the unsliced dimensions' single steps dropped
        by_dim = {d: split for d, split, _ in cut}
        step_shape = [by_dim[d].step_extent if d in by_dim else t.shape[d] for d in range(rank)]
        return Stepped(view, [c for _, _, c in cut], t, tuple(tuple(b) for b in blocks), step_shape)

    def _pad_blocked(self, t, d: int, steps, blocks, writable: bool, what: str):
        """``t`` padded along ``d`` to steps x parts x block elements, with zero constants
        (inputs) or a throw-away variable (outputs) stored so that each block's padding is
        one run (in the operand's order it would be a run per row). Padding in a later step
        is mapped like step 0's elements in its place; padding past the last step's blocks
        like the last real element (the tiles that slice it)."""
        rank, extent = t.rank, t.shape[d]
        stride = blocks[d][0] * blocks[d][1]
        missing = steps[d] * stride - extent
        if missing <= 0:
            return t
        others = [e for e in range(rank) if e != d]
        outer = [steps[e] * blocks[e][0] for e in others]
        inner = [blocks[e][1] for e in others]
        shape = tuple(outer + [missing] + inner)  # the other dimensions' blocks innermost
        name = f"{self.name}/{what}"
        pad = (self.graph.add_variable(t.dtype, shape, name) if writable
               else self.graph.add_constant(t.dtype, shape, 0, name))
        order = []
        for e in range(rank):
            order += [len(others)] if e == d else [others.index(e), len(others) + 1 + others.index(e)]
        full = [missing if e == d else steps[e] * blocks[e][0] * blocks[e][1] for e in range(rank)]
        used = pad.dim_shuffle(order).reshape(full).slice([0] * rank, [missing if e == d else t.shape[e]
                                                                        for e in range(rank)])
        if steps[d] > 1:  # step 0's elements in the padding's places
            last = extent - (steps[d] - 1) * stride
            like = t.slice(last, stride, d)
        else:
            like = popsim.concat([t.slice(extent - 1, extent, d)] * missing, d)
        mapping = self.graph.get_tile_mapping(like)
        self.graph.set_tile_mapping(pad, next(tile for tile, regions in enumerate(mapping) if regions))
        self.graph.set_tile_mapping(used, mapping)  # the corners past the other dimensions stay there unused
        return popsim.concat([t, used], d)

    def _pad(self, t, dim: int, split: SerialDim, writable: bool, what: str):
        missing = split.steps * split.stride - t.shape[dim]
        if missing == 0:
            return t
        last = t.shape[dim] - (split.steps - 1) * split.stride  # the last step's real elements
        shape = list(t.shape)
        shape[dim] = missing
        name = f"{self.name}/{what}"
        pad = (self.graph.add_variable(t.dtype, tuple(shape), name) if writable
               else self.graph.add_constant(t.dtype, tuple(shape), 0, name))
        like = t.slice(last, split.stride, dim)  # step 0's elements in the padding's places
        self.graph.set_tile_mapping(pad, self.graph.get_tile_mapping(like))
        return popsim.concat([t, pad], dim)

    def _offset(self, s: Stepped):
        return s.counters[0] if len(s.counters) == 1 else popsim.concat(s.counters)

    def slice(self, s: Stepped, prog, what: str):
        """The current step's slice of ``s`` (a temporary filled by ``prog``), or the
        operand itself where no split cuts it."""
        if not s.sliced:
            return s.base
        n = len(s.counters)
        out = popops.dynamic_slice(self.graph, s.view, self._offset(s), list(range(n)), [1] * n, prog,
                                   f"{self.name}/{what}")
        return out.reshape(list(s.view.shape[n:]))

    def step_like(self, s: Stepped, what: str):
        """A temporary for one step of ``s`` (mapped like step 0), or ``s``'s operand
        where no split cuts it."""
        if not s.sliced:
            return s.base
        n = len(s.counters)
        return self.graph.clone(s.view.index([0] * n), f"{self.name}/{what}")

    def update(self, s: Stepped, step, prog, what: str) -> None:
        """Write ``step`` (from slice or step_like) back into the current step of ``s``."""
        if not s.sliced:
            return
        n = len(s.counters)
        popops.dynamic_update(self.graph, s.view, step.reshape([1] * n + list(step.shape)), self._offset(s),
                              list(range(n)), [1] * n, prog, f"{self.name}/{what}")

    def repeat(self, prog, split: SerialDim, counter, body: Sequence, what: str) -> None:
        """Append to ``prog``: the counter zeroed, then ``body`` (followed by the counter's
        increment) run once per step. One step: the body once, no counter."""
        if split.steps == 1:
            prog.add(body)
            return
        if self._one is None:
            self._one = self.graph.add_constant(UNSIGNED_INT, (1,), 1, f"{self.name}/one")
            self.graph.set_tile_mapping(self._one, self.tile)
        popops.zero(self.graph, counter, prog, f"{self.name}/{what}/zeroCounter")
        popops.add_in_place(self.graph, counter, self._one, body, f"{self.name}/{what}/increment")
        prog.add(Repeat(split.steps, body))


__all__ = ["SerialDim", "SerialLoop", "Stepped"]
