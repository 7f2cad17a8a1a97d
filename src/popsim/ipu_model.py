"""IPUModel: an IPU simulated on the host, described by Poplar's IPUModel fields.

Every field has popsim's snake_case name and, where Poplar has the field, Poplar's
camelCase name as an alias (``model.tilesPerIPU = 4`` is ``model.tiles_per_ipu = 4``), so
ported code keeps working. A value is checked when it is set; a misspelled field, or a
Poplar field popsim does not model, raises instead of being silently ignored.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from .arguments import as_int, as_positive_float
from .device import Device
from .errors import InvalidMachineModelError, UnknownAttributeError, did_you_mean
from .poplar_names import snake_case_of
from .target import (ARCHITECTURES, IPU_LINK_TOPOLOGIES, MAX_IPUS, MAX_WORKER_CONTEXTS, RelativeSyncDelayType,
                     Target, TargetType, _Architecture, check_ipu_link_topology, check_version,
                     global_sync_cycles_for)

__all__ = ["IPUModel"]


def _positive_int(value, what, arch):
    return as_int(value, what, InvalidMachineModelError, low=1)


def _non_negative_int(value, what, arch):
    return as_int(value, what, InvalidMachineModelError, low=0)


def _positive_number(value, what, arch):
    return as_positive_float(value, what, InvalidMachineModelError)


def _num_ipus(value, what, arch):
    return as_int(value, what, InvalidMachineModelError, low=1, high=MAX_IPUS)


def _tiles_per_ipu(value, what, arch):
    n = as_int(value, what, InvalidMachineModelError, low=1)
    if n > arch.tiles_per_ipu:
        raise InvalidMachineModelError(f"{what} must be an integer in 1..{arch.tiles_per_ipu} (the tiles of one "
                                       f"{arch.name} IPU), found {n}; for more tiles, set num_ipus")
    return n


def _worker_contexts(value, what, arch):
    return as_int(value, what, InvalidMachineModelError, low=1, high=MAX_WORKER_CONTEXTS)


def _sync_delay_type(value, what, arch):
    if isinstance(value, RelativeSyncDelayType):
        return value
    names = [t.value for t in RelativeSyncDelayType]
    if isinstance(value, str) and value in names:
        return RelativeSyncDelayType(value)
    raise InvalidMachineModelError(f"{what} must be a RelativeSyncDelayType ({', '.join(names)}), found "
                                   f"{type(value).__name__} {value!r}")


def _ipu_link_topology(value, what, arch):
    return check_ipu_link_topology(value, what)


def _optional_cycles(value, what, arch):
    return None if value is None else as_int(value, what, InvalidMachineModelError, low=0)


def _flag(value, what, arch):
    if not isinstance(value, bool):
        raise InvalidMachineModelError(f"{what} must be True or False, found {type(value).__name__} {value!r}")
    return value


@dataclass(frozen=True)
class _Field:
    name: str                                  # popsim's spelling
    poplar: str                                # Poplar's IPUModel field, "" for popsim's own
    check: Callable[[object, str, object], object]
    default: Callable[[_Architecture, Target], object]  # (the version's architecture, Target's defaults)
    help: str


_FIELDS: List[_Field] = [
    _Field("num_ipus", "numIPUs", _num_ipus, lambda a, d: 1, f"IPUs in the device (1..{MAX_IPUS})"),
    _Field("tiles_per_ipu", "tilesPerIPU", _tiles_per_ipu, lambda a, d: a.tiles_per_ipu, "tiles per IPU"),
    _Field("memory_bytes_per_tile", "memoryBytesPerTile", _positive_int, lambda a, d: a.memory_bytes_per_tile,
           "bytes of memory per tile"),
    _Field("num_worker_contexts", "numWorkerContexts", _worker_contexts, lambda a, d: d.num_worker_contexts,
           f"worker threads per tile (1..{MAX_WORKER_CONTEXTS})"),
    _Field("tile_clock_frequency", "tileClockFrequency", _positive_number, lambda a, d: a.tile_clock_frequency,
           "tile clock in Hz"),
    _Field("exchange_bytes_per_cycle", "exchangeBytesPerCycle", _positive_int,
           lambda a, d: d.exchange_bytes_per_cycle, "bytes a tile exchanges per cycle"),
    _Field("memcpy_bytes_per_cycle", "memcpyBytesPerCycle", _positive_int, lambda a, d: d.memcpy_bytes_per_cycle,
           "bytes an on-tile copy moves per cycle"),
    _Field("data_path_width", "dataPathWidth", _positive_int, lambda a, d: d.data_path_width,
           "bits of the load/store data path (64: FLOAT vectors of 2, HALF of 4)"),
    _Field("min_ipu_sync_delay", "minIPUSyncDelay", _non_negative_int, lambda a, d: d.min_ipu_sync_delay,
           "cycles an internal sync takes for the tile nearest the sync controller"),
    _Field("relative_sync_delay", "relativeSyncDelay", _sync_delay_type, lambda a, d: RelativeSyncDelayType.AUTO,
           "AUTO: tiles further from the sync controller wait longer; NO_DELAY: all wait min_ipu_sync_delay"),
    _Field("global_sync_cycles", "globalSyncCycles", _optional_cycles, lambda a, d: None,
           "cycles of a sync between IPUs (None: derived from num_ipus and the clock)"),
    _Field("compile_ipu_code", "compileIPUCode", _flag, lambda a, d: False,
           "accepted for Poplar parity; popsim always lays out memory itself, so it changes nothing"),
    _Field("host_bytes_per_cycle", "", _positive_number, lambda a, d: d.host_bytes_per_cycle,
           "bytes per cycle of host streams (popsim's cost model: docs/cost_model.md)"),
    _Field("amp_fp16_macs_per_cycle", "", _positive_int, lambda a, d: a.amp_fp16_macs_per_cycle,
           "HALF multiply-accumulates per cycle of a tile's AMP unit"),
    _Field("amp_fp32_macs_per_cycle", "", _positive_int, lambda a, d: a.amp_fp32_macs_per_cycle,
           "FLOAT multiply-accumulates per cycle of a tile's AMP unit"),
    _Field("ipu_link_topology", "", _ipu_link_topology, lambda a, d: d.ipu_link_topology,
           f"how the IPU-Links join the IPUs ({' or '.join(IPU_LINK_TOPOLOGIES)}; popsim's cost model: "
           "docs/cost_model.md)"),
]

# Poplar IPUModel fields popsim's cost model has no use for: setting one says so.
_UNMODELLED = ("tilesPerSuperTile", "instructionBytes", "supportsSuperTileSendReceive",
               "interleavedMemoryElementIndex", "globalExchangeConstraints", "fp16ConvUnitInputLoadElemsPerCycle",
               "fp32ConvUnitInputLoadElemsPerCycle", "fp8ConvUnitInputLoadElemsPerCycle",
               "fp16InFp32OutConvUnitsPerTile", "fp16InFp16OutConvUnitsPerTile", "fp32InFp32OutConvUnitsPerTile")

_BY_NAME: Dict[str, _Field] = {f.name: f for f in _FIELDS}
_BY_NAME.update({f.poplar: f for f in _FIELDS if f.poplar})
_KNOWN_NAMES = sorted(_BY_NAME) + ["ipu_version", "IPUVersion", "target", "create_device"]


class IPUModel:
    """An IPU simulated on the host; its fields are Poplar's IPUModel fields.

    >>> model = IPUModel("ipu2"); model.tiles_per_ipu = 4; device = model.create_device()
    >>> model.numIPUs = 2          # Poplar's spelling works too
    """

    __slots__ = ("_version", "_values")

    def __init__(self, ipu_version: str = "ipu2"):
        arch = ARCHITECTURES[check_version(ipu_version)]
        defaults = Target()
        object.__setattr__(self, "_version", ipu_version)
        object.__setattr__(self, "_values", {f.name: f.default(arch, defaults) for f in _FIELDS})

    @property
    def ipu_version(self) -> str:
        """The architecture ("ipu1", "ipu2", "ipu21"), chosen when the model is made."""
        return self._version

    IPUVersion = ipu_version

    def __setattr__(self, name: str, value) -> None:
        field = _BY_NAME.get(name)
        if field is None:
            if name in self.__slots__:  # copy and pickle restore the slots
                object.__setattr__(self, name, value)
                return
            if name in ("ipu_version", "IPUVersion"):
                raise InvalidMachineModelError(f"IPUModel.{name} is chosen when the model is made: write "
                                               f"IPUModel({value!r}) instead of setting it")
            raise self._unknown(name)
        what = f"IPUModel.{name}"
        self._values[field.name] = field.check(value, what, ARCHITECTURES[self._version])

    def __getattr__(self, name: str):
        field = _BY_NAME.get(name)
        if field is None:
            raise self._unknown(name)
        return self._values[field.name]

    def __copy__(self) -> "IPUModel":
        twin = object.__new__(IPUModel)
        object.__setattr__(twin, "_version", self._version)
        object.__setattr__(twin, "_values", dict(self._values))
        return twin

    def __deepcopy__(self, memo) -> "IPUModel":
        return self.__copy__()  # the values are immutable

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(_BY_NAME))

    @staticmethod
    def _unknown(name: str) -> UnknownAttributeError:
        if name in _UNMODELLED:
            return UnknownAttributeError(f"IPUModel.{name} is a Poplar IPUModel field that popsim does not model; "
                                         "leave it out (the fields popsim models: "
                                         f"{', '.join(f.poplar for f in _FIELDS if f.poplar)})")
        squashed = name.replace("_", "").lower()
        same = [f for f in _FIELDS if f.name.replace("_", "") == squashed or f.poplar.lower() == squashed]
        if same:  # only the case or underscores differ: suggest the spelling in the style the user wrote
            f = same[0]
            return UnknownAttributeError(f"IPUModel has no field '{name}': did you mean "
                                         f"'{f.name if '_' in name or not f.poplar else f.poplar}'?")
        method = snake_case_of(IPUModel, name)
        if method is not None:
            return UnknownAttributeError(f"IPUModel has no attribute '{name}': popsim spells Poplar's methods in "
                                         f"snake_case; use model.{method}")
        return UnknownAttributeError(f"IPUModel has no field '{name}': {did_you_mean(name, _KNOWN_NAMES)}")

    def target(self) -> Target:
        """The Target this model describes with its current field values."""
        v = self._values
        global_sync = v["global_sync_cycles"]
        if global_sync is None:
            global_sync = global_sync_cycles_for(v["num_ipus"], v["tile_clock_frequency"])
        return Target(
            num_ipus=v["num_ipus"], tiles_per_ipu=v["tiles_per_ipu"], bytes_per_tile=v["memory_bytes_per_tile"],
            num_worker_contexts=v["num_worker_contexts"], tile_clock_frequency=v["tile_clock_frequency"],
            exchange_bytes_per_cycle=v["exchange_bytes_per_cycle"], memcpy_bytes_per_cycle=v["memcpy_bytes_per_cycle"],
            data_path_width=v["data_path_width"], host_bytes_per_cycle=v["host_bytes_per_cycle"],
            min_ipu_sync_delay=v["min_ipu_sync_delay"], relative_sync_delay=v["relative_sync_delay"],
            global_sync_cycles=global_sync, amp_fp16_macs_per_cycle=v["amp_fp16_macs_per_cycle"],
            amp_fp32_macs_per_cycle=v["amp_fp32_macs_per_cycle"], ipu_link_topology=v["ipu_link_topology"],
            arch=self._version, target_type=TargetType.IPU_MODEL)

    def create_device(self, options: Optional[dict] = None) -> Device:
        """A device simulating this model; later changes to the model do not affect it."""
        return Device(self.target(), options)

    def __repr__(self) -> str:
        v = self._values
        return f"IPUModel({self._version!r}, num_ipus={v['num_ipus']}, tiles_per_ipu={v['tiles_per_ipu']})"
