"""Targets: what a graph is compiled for (tiles, memory, workers, clocks, exchange).

The presets are Poplar's IPUModel defaults for each architecture; the cost-model fields
popsim adds (memcpy, host link, sync) are documented in docs/cost_model.md.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace

from .arguments import as_int, as_positive_float
from .errors import InvalidMachineModelError
from .poplar_names import SnakeCaseNames
from .types import as_type

__all__ = ["HARDWARE_WORKER_CONTEXTS", "Target", "TargetType", "RelativeSyncDelayType", "IpuLinkTopologyType",
           "ARCHITECTURES", "IPU_LINK_TOPOLOGIES"]


class TargetType(enum.Enum):
    IPU = "IPU"
    IPU_MODEL = "IPU_MODEL"
    CPU = "CPU"


class RelativeSyncDelayType(enum.Enum):
    AUTO = "AUTO"          # tiles further from the sync controller wait longer
    NO_DELAY = "NO_DELAY"  # every tile syncs in min_ipu_sync_delay


class IpuLinkTopologyType(str, enum.Enum):
    """How the IPU-Links join a device's IPUs (popsim.topology; Poplar's Target reports a
    Mesh or a Torus). A str, so that ``target.ipu_link_topology == "ladder"`` holds."""

    LADDER = "ladder"  # IPU-POD16 / M2000s: IPU pairs are the rungs, the rails run up the even and the odd IPUs
    TORUS = "torus"    # IPU-POD64 and up: each rail also wraps round from its last rung to its first

    def __str__(self) -> str:  # the value in messages, whatever the Python version's str-mixin format
        return self.value


@dataclass(frozen=True)
class _Architecture:
    name: str
    tiles_per_ipu: int
    memory_bytes_per_tile: int
    tile_clock_frequency: float
    amp_fp16_macs_per_cycle: int
    amp_fp32_macs_per_cycle: int


ARCHITECTURES = {
    "ipu1": _Architecture("ipu1", 1216, 262144, 1.6e9, 32, 8),    # GC2 (Mk1)
    "ipu2": _Architecture("ipu2", 1472, 638976, 1.33e9, 64, 16),  # GC200 (Mk2)
    "ipu21": _Architecture("ipu21", 1472, 638976, 1.85e9, 64, 16),  # Bow
}

#: The most IPUs a popsim target has (an IPU-POD64's worth).
MAX_IPUS = 64
#: The worker contexts of an IPU tile (every IPU version has 6): a Target's default. It is
#: also Poplar's constant MultiVertex::numWorkers(), the worker ids a C++ codelet's compute
#: runs for on any target (src/popsim/codelet/include/poplar/Vertex.hpp;
#: tests/poplibs/test_poplibs_worker_contexts.py checks the two agree). Code with a target at
#: hand asks it: target.num_worker_contexts.
HARDWARE_WORKER_CONTEXTS = 6
#: The most worker contexts per tile the engine runs.
MAX_WORKER_CONTEXTS = 64
#: The names of the IPU-Link topologies: "ladder", "torus".
IPU_LINK_TOPOLOGIES = tuple(t.value for t in IpuLinkTopologyType)


def check_version(version: str) -> str:
    if not isinstance(version, str) or version not in ARCHITECTURES:
        from .errors import PopsimError
        raise PopsimError(f"unknown IPU version {version!r}: expected one of {', '.join(ARCHITECTURES)}")
    return version


def check_ipu_link_topology(value, what: str) -> IpuLinkTopologyType:
    """The topology ``value`` names ("ladder", "torus" or the enum), else an
    InvalidMachineModelError naming ``what``."""
    if isinstance(value, str) and value in IPU_LINK_TOPOLOGIES:
        return IpuLinkTopologyType(value)
    allowed = ", ".join(repr(k) for k in IPU_LINK_TOPOLOGIES)
    raise InvalidMachineModelError(f"{what} must be one of {allowed}, found {type(value).__name__} {value!r}")


def global_sync_cycles_for(num_ipus: int, clock: float) -> int:
    """Inter-IPU sync latency: 15 ns per hop each way, one more hop per 4 IPUs (PopLibs' test model)."""
    hops = 1 + num_ipus // 4
    return math.ceil(15e-9 * clock * hops * 2)


@dataclass(frozen=True)
class Target(SnakeCaseNames):
    """The machine a graph is built for. Create with :meth:`create_ipu_target`,
    :meth:`create_cpu_target`, or from a device (``device.target``)."""

    # The module's HARDWARE_WORKER_CONTEXTS, for code that uses only popsim's public names
    # (poplibs/): not a field (no annotation), the same on every target.
    HARDWARE_WORKER_CONTEXTS = HARDWARE_WORKER_CONTEXTS

    num_ipus: int = 1
    tiles_per_ipu: int = 1472
    bytes_per_tile: int = 638976
    num_worker_contexts: int = HARDWARE_WORKER_CONTEXTS
    tile_clock_frequency: float = 1.33e9
    exchange_bytes_per_cycle: int = 4
    memcpy_bytes_per_cycle: int = 8
    data_path_width: int = 64
    host_bytes_per_cycle: float = 6.01  # fitted: docs/cost_model.md
    min_ipu_sync_delay: int = 16
    relative_sync_delay: RelativeSyncDelayType = RelativeSyncDelayType.AUTO
    global_sync_cycles: int = 40
    # IPU-Links (multi-IPU targets), PopLibs' IPUModel test model: each link carries
    # 128 Gibit/s per direction at 0.85 efficiency; an IPU reaches its card partner over
    # 4 links; a hop costs 15 ns (as in global_sync_cycles). docs/cost_model.md.
    ipu_link_bytes_per_second: float = 128 * 2**30 / 8 * 0.85
    ipu_links_per_ipu: int = 4
    ipu_link_latency_seconds: float = 15e-9
    # How those links join the IPUs (popsim.topology, docs/cost_model.md "IPU-Link topology").
    ipu_link_topology: IpuLinkTopologyType = IpuLinkTopologyType.LADDER
    amp_fp16_macs_per_cycle: int = 64
    amp_fp32_macs_per_cycle: int = 16
    arch: str = "ipu2"
    target_type: TargetType = TargetType.IPU
    extra: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self):
        # A target is checked however it is made (presets, with_changes, a loaded executable),
        # so that a bad value fails here, naming the field, rather than deep in the engine.
        def check(name, low, high=None):
            object.__setattr__(self, name, as_int(getattr(self, name), f"Target.{name}", InvalidMachineModelError,
                                                  low=low, high=high))
        check("num_ipus", 1, MAX_IPUS)
        check("tiles_per_ipu", 1)
        check("bytes_per_tile", 1)
        check("num_worker_contexts", 1, MAX_WORKER_CONTEXTS)
        for name in ("exchange_bytes_per_cycle", "memcpy_bytes_per_cycle", "data_path_width",
                     "amp_fp16_macs_per_cycle", "amp_fp32_macs_per_cycle"):
            check(name, 1)
        check("min_ipu_sync_delay", 0)
        check("global_sync_cycles", 0)
        for name in ("tile_clock_frequency", "host_bytes_per_cycle"):
            object.__setattr__(self, name, as_positive_float(getattr(self, name), f"Target.{name}",
                                                             InvalidMachineModelError))
        if not isinstance(self.relative_sync_delay, RelativeSyncDelayType):
            raise InvalidMachineModelError(f"Target.relative_sync_delay must be a RelativeSyncDelayType, found "
                                           f"{self.relative_sync_delay!r}")
        object.__setattr__(self, "ipu_link_topology",
                           check_ipu_link_topology(self.ipu_link_topology, "Target.ipu_link_topology"))

    # -- construction -------------------------------------------------------------------
    @staticmethod
    def create_ipu_target(num_ipus: int = 1, tiles_per_ipu: int | None = None, version: str = "ipu2") -> "Target":
        """A target of ``num_ipus`` IPUs of architecture ``version`` ("ipu1", "ipu2", "ipu21")."""
        arch = ARCHITECTURES[check_version(version)]
        # checked here too, before the sync latency is worked out from them
        num_ipus = as_int(num_ipus, "Target.num_ipus", InvalidMachineModelError, low=1, high=MAX_IPUS)
        if tiles_per_ipu is not None:  # at most the tiles of one IPU of the architecture, as IPUModel's
            tiles_per_ipu = as_int(tiles_per_ipu, "Target.tiles_per_ipu", InvalidMachineModelError, low=1,
                                   high=arch.tiles_per_ipu)
        return Target(
            num_ipus=num_ipus,
            tiles_per_ipu=tiles_per_ipu if tiles_per_ipu is not None else arch.tiles_per_ipu,
            bytes_per_tile=arch.memory_bytes_per_tile,
            tile_clock_frequency=arch.tile_clock_frequency,
            global_sync_cycles=global_sync_cycles_for(num_ipus, arch.tile_clock_frequency),
            amp_fp16_macs_per_cycle=arch.amp_fp16_macs_per_cycle,
            amp_fp32_macs_per_cycle=arch.amp_fp32_macs_per_cycle,
            arch=version,
        )

    @staticmethod
    def create_cpu_target(num_ipus: int = 1) -> "Target":
        """The host CPU: one tile, one worker, no tile-mapping rules, no memory limit, no cost model."""
        return Target(num_ipus=num_ipus, tiles_per_ipu=1, bytes_per_tile=2**62, num_worker_contexts=1,
                      arch="cpu", target_type=TargetType.CPU)

    def with_changes(self, **changes) -> "Target":
        return replace(self, **changes)

    # -- queries --------------------------------------------------------------------------
    @property
    def num_tiles(self) -> int:
        return self.num_ipus * self.tiles_per_ipu

    @property
    def memory_bytes(self) -> int:
        return self.num_tiles * self.bytes_per_tile

    @property
    def max_ipu_sync_delay(self) -> int:
        """Cycles an internal sync takes for the tile furthest from the sync controller."""
        spread = 0 if self.relative_sync_delay is RelativeSyncDelayType.NO_DELAY else self.tiles_per_ipu // 128
        return self.min_ipu_sync_delay + spread

    @property
    def ipu_link_bytes_per_cycle(self) -> float:
        """Bytes one IPU can send (and receive) per tile-clock cycle over its IPU-Links."""
        return self.ipu_links_per_ipu * self.ipu_link_bytes_per_second / self.tile_clock_frequency

    @property
    def ipu_link_latency_cycles(self) -> int:
        """Cycles from a send on one IPU to its arrival on another, over the worst-case
        number of hops (1 + IPUs/4, as for the global sync)."""
        hops = 1 + self.num_ipus // 4
        return math.ceil(self.ipu_link_latency_seconds * self.tile_clock_frequency * hops)

    @property
    def has_cost_model(self) -> bool:
        """CPU targets run the program but model neither cycles nor memory limits."""
        return self.target_type is not TargetType.CPU

    @property
    def requires_tile_mapping(self) -> bool:
        return self.target_type is not TargetType.CPU

    @property
    def target_arch_string(self) -> str:
        return self.arch

    def type_size(self, t) -> int:
        """Bytes one element of ``t`` takes in tile memory."""
        return as_type(t).size

    def vector_width(self, t) -> int:
        """Elements of ``t`` one data-path-wide vector instruction handles (FLOAT 2, HALF 4)."""
        return max(1, self.data_path_width // (8 * as_type(t).size))

    # -- AMP and exchange figures the poplin planner uses (PopLibs' planner, Graphcore's figures) ----
    def conv_unit_input_load_elems(self, t) -> int:
        """Input elements an AMP unit loads per cycle: one 64-bit load (HALF 4, FLOAT 2)."""
        return max(1, 8 // as_type(t).size)

    def num_conv_units(self, t) -> int:
        """AMP units for inputs of type ``t``: the tile's AMP MACs per cycle for that type
        over the input load width (ipu2: HALF 64 / 4 = 16, FLOAT 16 / 2 = 8)."""
        t = as_type(t)
        macs = self.amp_fp16_macs_per_cycle if t.size == 2 else self.amp_fp32_macs_per_cycle
        return max(1, macs // self.conv_unit_input_load_elems(t))

    @property
    def conv_unit_max_pipeline_depth(self) -> int:
        """AMP chain length: the input channels one unit holds weights for are 4 loads' worth."""
        return 4

    @property
    def supports_exchange_bus_sharing(self) -> bool:
        """Pairs of tiles can receive the same broadcast data in one cycle (IPU targets)."""
        return self.target_type is not TargetType.CPU

    @property
    def tiles_per_shared_exchange_bus(self) -> int:
        return 2

    @property
    def float_vector_width(self) -> int:
        return self.vector_width(as_type("FLOAT"))

    @property
    def half_vector_width(self) -> int:
        return self.vector_width(as_type("HALF"))

    def __str__(self) -> str:
        kind = {TargetType.CPU: "CPU", TargetType.IPU_MODEL: "IPUModel", TargetType.IPU: "IPU"}[self.target_type]
        return f"{kind}({self.arch}, {self.num_ipus} IPU x {self.tiles_per_ipu} tiles)"


