"""Host-facing stream objects: FIFO data streams, and the host side of a stream (Poplar's
StreamCallback protocol, plain callback functions, host arrays the device only reads)."""
from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Callable, Optional

import numpy as np

from .arguments import found
from .errors import InvalidOptionError, StreamConnectionError
from .types import Type

__all__ = ["DataStream", "StreamDirection", "ReplicatedStreamMode", "StreamCallback", "stream_endpoints",
           "replica_parts"]


class StreamDirection(enum.Enum):
    HOST_TO_DEVICE = "host-to-device"
    DEVICE_TO_HOST = "device-to-host"


class ReplicatedStreamMode(enum.Enum):
    REPLICATE = "REPLICATE"  # every replica its own data (a buffer with leading dimension R, or a callback each)
    BROADCAST = "BROADCAST"  # one transfer read by every replica


class DataStream:
    """A FIFO between host and device: each ``Copy`` moves ``num_elements`` elements.

    Connect the host side with ``engine.connect_stream(handle, array)`` or
    ``engine.connect_stream_to_callback(handle, fn)``.
    """

    __slots__ = ("handle", "dtype", "num_elements", "direction", "index", "replicated_mode", "options", "_state")

    def __init__(self, state, index: int, handle: str, dtype: Type, num_elements: int,
                 direction: StreamDirection, replicated_mode=ReplicatedStreamMode.REPLICATE, options=None):
        if not isinstance(replicated_mode, ReplicatedStreamMode):
            raise StreamConnectionError(f"stream '{handle}': replicated_mode must be popsim.ReplicatedStreamMode."
                                        f"REPLICATE or BROADCAST, found {found(replicated_mode)}")
        if options is not None and (not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options)):
            raise InvalidOptionError(f"stream '{handle}': options must be a dict of option names to values, found "
                                     f"{found(options)}")
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


class StreamCallback:
    """Poplar's StreamCallback: the host side of a stream as an object.

    Subclass it and pass an instance to ``engine.connect_stream_to_callback(handle, cb)``.
    For a host-to-device stream, each transfer calls ``prefetch(buffer)``: return
    ``Result.SUCCESS`` once the buffer is filled, or ``Result.NOT_AVAILABLE`` and
    ``fetch(buffer)`` is called to fill it; then ``complete()``. For a device-to-host
    stream, each transfer calls ``fetch(buffer)`` with the data, then ``complete()``.
    ``buffer`` is a 1-D numpy array of the stream's type, valid only during the call.

    popsim's engine asks for data when the transfer happens, never ahead of it, so no
    prefetched data is ever left unused and ``invalidate_prefetched`` (Poplar's
    invalidatePrefetched) is never called; it is here for ports that define it.
    A plain function ``fn(buffer)`` (Poplar's LegacyStreamCallback) works as before.
    """

    class Result(enum.Enum):
        SUCCESS = "Success"              # prefetch filled the buffer
        NOT_AVAILABLE = "NotAvailable"   # prefetch could not: fetch will be called
        Success = "Success"              # Poplar's spellings (aliases)
        NotAvailable = "NotAvailable"

    def prefetch(self, buffer: np.ndarray) -> "StreamCallback.Result":
        """Fill ``buffer`` if the data is ready (host-to-device streams only)."""
        return StreamCallback.Result.NOT_AVAILABLE

    def fetch(self, buffer: np.ndarray) -> None:
        """Fill ``buffer`` (host-to-device) or consume it (device-to-host)."""
        raise NotImplementedError

    def complete(self) -> None:
        """The transfer that the last prefetch or fetch served is done."""

    def invalidate_prefetched(self) -> None:
        """Forget data prefetched but not used (never called by popsim: see the class notes)."""


def is_stream_callback(callback) -> bool:
    """Whether ``callback`` follows the StreamCallback protocol (an object with fetch)."""
    return isinstance(callback, StreamCallback) or callable(getattr(callback, "fetch", None))


def transfer_function(callback, handle: str, to_device: bool) -> Callable[[np.ndarray], None]:
    """The function the engine calls once per transfer of stream ``handle``: a plain
    function as it is, a StreamCallback object through its protocol."""
    if not is_stream_callback(callback):
        if not callable(callback):
            raise StreamConnectionError(f"connect_stream_to_callback '{handle}': the callback must be a callable "
                                        f"fn(buffer) or a popsim.StreamCallback, found {type(callback).__name__}")
        return callback
    name = type(callback).__name__
    if isinstance(callback, StreamCallback) and type(callback).fetch is StreamCallback.fetch:
        raise StreamConnectionError(f"connect_stream_to_callback '{handle}': {name} does not define "
                                    "fetch(buffer), which every StreamCallback needs")
    fetch = callback.fetch
    complete = getattr(callback, "complete", None) or (lambda: None)
    if not to_device:
        def consume(buffer: np.ndarray) -> None:
            fetch(buffer)
            complete()
        return consume

    prefetch = getattr(callback, "prefetch", None)
    success, not_available = StreamCallback.Result.SUCCESS, StreamCallback.Result.NOT_AVAILABLE

    def fill(buffer: np.ndarray) -> None:
        result = prefetch(buffer) if prefetch is not None else not_available
        if result is not_available:
            fetch(buffer)
        elif result is not success:
            raise StreamConnectionError(
                f"stream '{handle}': {name}.prefetch returned {result!r}; return StreamCallback.Result.SUCCESS "
                "after filling the buffer, or StreamCallback.Result.NOT_AVAILABLE to have fetch fill it")
        complete()
    return fill


class _DeviceReadsOnly:
    """Exposes a read-only host array to the core, which takes a writable buffer but only
    reads a host-to-device stream's array. Holds the array, so it stays alive while connected."""

    def __init__(self, array: np.ndarray):
        self.array = array
        self.__array_interface__ = dict(array.__array_interface__, data=(array.ctypes.data, False))


def device_readable(array: np.ndarray) -> np.ndarray:
    """``array`` itself, or for a read-only array a writable alias of the same memory (the
    device only reads it, in place, so later changes to the memory are still seen)."""
    if array.flags.writeable:
        return array
    return np.asarray(_DeviceReadsOnly(array))


def stream_endpoints(stream: "DataStream", replicas: int) -> int:
    """How many host sides a stream has in a graph of ``replicas`` replicas: one per
    replica, or one for a BROADCAST host-to-device stream (or a graph of one replica)."""
    broadcast = stream.is_host_to_device and stream.replicated_mode is ReplicatedStreamMode.BROADCAST
    return 1 if broadcast else replicas


def replica_parts(handle: str, data: np.ndarray, ends: int, num_elements: int, to_device: bool,
                  replicas: Optional[int] = None):
    """The host buffer of each of a stream's ``ends`` endpoints in ``data`` (C-contiguous,
    of the stream's type): the whole array, or ``data[r]`` for replica r when there are
    several (its leading dimension must be ``ends``); each a positive multiple of one
    transfer. StreamConnectionError saying what to pass otherwise. ``replicas``: the
    graph's, when this process holds only ``ends`` of them (popsim.dist)."""
    if ends > 1 and (data.ndim < 1 or data.shape[0] != ends):
        mode = "a REPLICATE stream" if to_device else "a device-to-host stream"
        held = f"the graph has {ends} replicas" if replicas in (None, ends) else \
            f"this process holds {ends} of the graph's {replicas} replicas"
        raise StreamConnectionError(
            f"connect_stream '{handle}': {held} and this is {mode}, so the array's "
            f"leading dimension must be {ends} (replica r reads data[r]), found shape {list(data.shape)}; make "
            "the stream BROADCAST (add_host_to_device_fifo(..., ReplicatedStreamMode.BROADCAST)) to send one "
            "buffer to every replica")
    parts = [data.reshape(-1)] if ends == 1 else [data[r].reshape(-1) for r in range(ends)]
    for r, part in enumerate(parts):
        if num_elements and (part.size == 0 or part.size % num_elements):
            which = "the array" if ends == 1 else f"data[{r}] (replica {r})"
            raise StreamConnectionError(f"connect_stream '{handle}': {which} has {part.size} elements, which is "
                                        f"not a positive multiple of the {num_elements} elements of one transfer")
    return parts
