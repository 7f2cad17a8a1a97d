"""Host-facing graph objects: FIFO data streams and named host read/write handles."""
from __future__ import annotations

import enum

from .types import Type

__all__ = ["DataStream", "StreamDirection", "ReplicatedStreamMode"]


class StreamDirection(enum.Enum):
    HOST_TO_DEVICE = "host-to-device"
    DEVICE_TO_HOST = "device-to-host"


class ReplicatedStreamMode(enum.Enum):
    REPLICATE = "REPLICATE"  # every replica receives the same data
    BROADCAST = "BROADCAST"


class DataStream:
    """A FIFO between host and device: each ``Copy`` moves ``num_elements`` elements.

    Connect the host side with ``engine.connect_stream(handle, array)`` or
    ``engine.connect_stream_to_callback(handle, fn)``.
    """

    __slots__ = ("handle", "dtype", "num_elements", "direction", "index", "replicated_mode", "options", "_state")

    def __init__(self, state, index: int, handle: str, dtype: Type, num_elements: int,
                 direction: StreamDirection, replicated_mode=ReplicatedStreamMode.REPLICATE, options=None):
        self._state = state
        self.index = index
        self.handle = handle
        self.dtype = dtype
        self.num_elements = num_elements
        self.direction = direction
        self.replicated_mode = replicated_mode
        self.options = dict(options or {})

    @property
    def is_host_to_device(self) -> bool:
        return self.direction is StreamDirection.HOST_TO_DEVICE

    @property
    def transfer_bytes(self) -> int:
        return self.num_elements * self.dtype.size

    def __repr__(self) -> str:
        return f"DataStream({self.handle!r}, {self.dtype.name}, {self.num_elements}, {self.direction.value})"
