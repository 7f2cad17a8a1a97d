"""Devices: what an Engine loads onto (an IPUModel's device, or the CPU device).

IPUModel itself lives in ipu_model.py."""
from __future__ import annotations

import itertools
from typing import Mapping, Optional

from .poplar_names import SnakeCaseNames
from .target import Target

__all__ = ["Device"]

_device_ids = itertools.count()


class Device(SnakeCaseNames):
    """Something an Engine loads onto. Get one from ``IPUModel(...).create_device()`` or
    ``Device.create_cpu_device()``."""

    def __init__(self, target: Target, options: Optional[Mapping[str, object]] = None):
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
