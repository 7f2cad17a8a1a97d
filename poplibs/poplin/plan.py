"""The plan of a convolution or matmul (PopLibs' lib/poplin/ConvPlan.hpp; PopLibs'
planner): the seam between the planner, which chooses it (planner.py), and the executor, which
builds vertices from it. Plans are plain frozen data: they hash, compare and print, so a
PlanningCache can key on them and users can read them (get_mat_mul_plan).

Two levels, as PopLibs has them: the system level is partitioned over the tiles of one IPU
(``Plan.partition``); the tile level is the work inside one tile, done by the vertex
``Plan.method``. ``transforms`` holds one ConvTransform per level.
"""
import math
from dataclasses import dataclass, field
from typing import Tuple


@dataclass(frozen=True)
class Split:
    """A dimension cut ``parallel`` ways across tiles and ``serial`` ways in time (a loop
    whose iterations reuse the same temporary memory)."""
    serial: int = 1
    parallel: int = 1

    @property
    def total(self) -> int:
        return self.serial * self.parallel


@dataclass(frozen=True)
class Partition:
    """How the system level cuts the convolution over tiles (PopLibs' Partition). Splits
    count grains: a split of ``s`` over ``n`` grains gives each part ceil(n / s) grains."""
    field_split: Tuple[int, ...]
    batch_split: int = 1
    out_chan_split: Split = Split()
    kernel_split: Tuple[int, ...] = ()
    in_chan_split: Split = Split()
    conv_group_split: int = 1
    field_axis_grain_size: Tuple[int, ...] = ()
    conv_group_grain_size: int = 1
    in_chan_grain_size: int = 1
    out_chan_grain_size: int = 1

    def total_parallel_split(self) -> int:
        """Tiles used: Π field × batch × out-channel parallel × Π kernel × in-channel parallel
        × conv groups."""
        return (math.prod(self.field_split) * self.batch_split * self.out_chan_split.parallel
                * math.prod(self.kernel_split) * self.in_chan_split.parallel * self.conv_group_split)

    def total_serial_split(self) -> int:
        return self.out_chan_split.serial * self.in_chan_split.serial


@dataclass(frozen=True)
class ConvTransform:
    """A rewrite of the convolution applied at one level (PopLibs' ConvTransform)."""
    swap_operands: bool = False
    expand_dims: Tuple[int, ...] = ()
    out_chan_flatten_dims: Tuple[int, ...] = ()
    flatten_dims: Tuple[int, ...] = ()
    combine_conv_groups_factor: int = 1


#: vertex methods in PopLibs' order of preference (ConvVertexType.cpp)
METHODS = ("AMP", "SLIC", "HMAC", "VMAC", "OUTER_PRODUCT")


@dataclass(frozen=True)
class Method:
    """The tile-level vertex (PopLibs' Plan::Method): AMP with its conv units and load width;
    the others take no parameters here."""
    kind: str = "AMP"
    conv_units: int = 0
    conv_input_load_elems: int = 0

    def __post_init__(self):
        if self.kind not in METHODS:
            raise ValueError(f"unknown convolution method {self.kind!r}: one of {', '.join(METHODS)}")

    def macs_per_cycle(self, vector_width: int, in_chans_per_group: int) -> int:
        """PopLibs' getMaxMACsPerCyclePerTile for this method."""
        if self.kind == "AMP":
            return self.conv_units * self.conv_input_load_elems
        if self.kind == "SLIC":
            return min(vector_width, in_chans_per_group) * 4 * 2
        return vector_width


@dataclass(frozen=True)
class Plan:
    """A chosen plan and what the planner's model says it costs. ``cost_breakdown`` names
    the model's terms (partial calculation, exchange, reduction, ...) with their cycles."""
    partition: Partition
    method: Method
    transforms: Tuple[ConvTransform, ConvTransform] = (ConvTransform(), ConvTransform())
    conv_groups_per_group: int = 1
    in_chans_per_group: int = 1
    partial_chans_per_group: int = 1
    partials_type: object = None
    inter_tile_partials_type: object = None
    start_tile: int = 0
    cycles: int = 0
    temp_bytes_per_tile: int = 0
    tiles_used: int = 0
    cost_breakdown: Tuple[Tuple[str, int], ...] = field(default=(), compare=False)

    @property
    def serial_splits(self) -> dict:
        """{"in_chan": n, "out_chan": n}: the serial loops (PopLibs allows one kind at a time)."""
        return {"in_chan": self.partition.in_chan_split.serial, "out_chan": self.partition.out_chan_split.serial}
