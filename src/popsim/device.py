"""Devices: the IPUModel (an IPU simulated on the host CPU) and the CPU device."""
from __future__ import annotations

import itertools

from .target import (ARCHITECTURES, RelativeSyncDelayType, Target, TargetType, check_version,
                     global_sync_cycles_for)

__all__ = ["IPUModel", "Device"]

_device_ids = itertools.count()


class Device:
    """Something an Engine loads onto. Get one from ``IPUModel(...).create_device()`` or
    ``Device.create_cpu_device()``."""

    def __init__(self, target: Target, options=None):
        self.target = target
        self.options = dict(options or {})
        self.id = next(_device_ids)
        self._attached = True

    @staticmethod
    def create_cpu_device(num_ipus: int = 1) -> "Device":
        """A host-CPU device: one tile, no tile-mapping rules, no memory limits, no cost model."""
        return Device(Target.create_cpu_target(num_ipus))

    def get_target(self) -> Target:
        return self.target

    def attach(self) -> bool:
        self._attached = True
        return True

    def detach(self) -> None:
        self._attached = False

    @property
    def is_attached(self) -> bool:
        return self._attached

    def __repr__(self) -> str:
        return f"Device(id={self.id}, target={self.target})"


class IPUModel:
    """An IPU simulated on the host; its fields are Poplar's IPUModel fields.

    >>> model = IPUModel("ipu2"); model.tiles_per_ipu = 4; device = model.create_device()
    """

    def __init__(self, ipu_version: str = "ipu2"):
        arch = ARCHITECTURES[check_version(ipu_version)]
        defaults = Target()
        self.ipu_version = ipu_version
        self.num_ipus = 1
        self.tiles_per_ipu = arch.tiles_per_ipu
        self.memory_bytes_per_tile = arch.memory_bytes_per_tile
        self.num_worker_contexts = defaults.num_worker_contexts
        self.tile_clock_frequency = arch.tile_clock_frequency
        self.exchange_bytes_per_cycle = defaults.exchange_bytes_per_cycle
        self.memcpy_bytes_per_cycle = defaults.memcpy_bytes_per_cycle
        self.data_path_width = defaults.data_path_width
        self.host_bytes_per_cycle = defaults.host_bytes_per_cycle
        self.min_ipu_sync_delay = defaults.min_ipu_sync_delay
        self.relative_sync_delay = RelativeSyncDelayType.AUTO
        self.global_sync_cycles = None  # None: derived from num_ipus and the clock
        self.amp_fp16_macs_per_cycle = arch.amp_fp16_macs_per_cycle
        self.amp_fp32_macs_per_cycle = arch.amp_fp32_macs_per_cycle

    def target(self) -> Target:
        """The Target this model describes with its current field values."""
        global_sync = self.global_sync_cycles
        if global_sync is None:
            global_sync = global_sync_cycles_for(self.num_ipus, self.tile_clock_frequency)
        return Target(
            num_ipus=int(self.num_ipus), tiles_per_ipu=int(self.tiles_per_ipu),
            bytes_per_tile=int(self.memory_bytes_per_tile), num_worker_contexts=int(self.num_worker_contexts),
            tile_clock_frequency=float(self.tile_clock_frequency),
            exchange_bytes_per_cycle=int(self.exchange_bytes_per_cycle),
            memcpy_bytes_per_cycle=int(self.memcpy_bytes_per_cycle), data_path_width=int(self.data_path_width),
            host_bytes_per_cycle=float(self.host_bytes_per_cycle), min_ipu_sync_delay=int(self.min_ipu_sync_delay),
            relative_sync_delay=RelativeSyncDelayType(self.relative_sync_delay), global_sync_cycles=int(global_sync),
            amp_fp16_macs_per_cycle=int(self.amp_fp16_macs_per_cycle),
            amp_fp32_macs_per_cycle=int(self.amp_fp32_macs_per_cycle),
            arch=self.ipu_version, target_type=TargetType.IPU_MODEL)

    def create_device(self, options=None) -> Device:
        """A device simulating this model; later changes to the model do not affect it."""
        from .errors import PopsimError
        for name in ("num_ipus", "tiles_per_ipu", "memory_bytes_per_tile", "num_worker_contexts",
                     "exchange_bytes_per_cycle", "memcpy_bytes_per_cycle"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise PopsimError(f"IPUModel.{name} must be a positive integer, found {value!r}")
        if not self.tile_clock_frequency > 0:
            raise PopsimError(f"IPUModel.tile_clock_frequency must be positive, found {self.tile_clock_frequency!r}")
        return Device(self.target(), options)

    def __repr__(self) -> str:
        return f"IPUModel({self.ipu_version!r}, num_ipus={self.num_ipus}, tiles_per_ipu={self.tiles_per_ipu})"
