"""The host side of the reference executor's FIFO streams: for each stream, one
endpoint per replica (a REPLICATE host-to-device stream, and every device-to-host
stream, when the graph is replicated), or one for all of them (a BROADCAST
host-to-device stream, or one replica). An endpoint is a circular buffer of whole
transfers, or a callback called once per transfer.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from ..errors import StreamConnectionError, UnknownHandleError, did_you_mean
from ..streams import DataStream, replica_parts, stream_endpoints, transfer_function
from .replicas import replica_arg

__all__ = ["Endpoint", "StreamConnections"]


class Endpoint:
    """The host side of one FIFO stream for one replica (or for all): a circular buffer
    or a callback."""

    def __init__(self, stream: DataStream, buffer: Optional[np.ndarray] = None,
                 callback: Optional[Callable[[np.ndarray], None]] = None):
        self.stream = stream
        self.buffer = buffer
        self.callback = callback
        self.position = 0

    def take(self) -> np.ndarray:
        """The next host-to-device transfer."""
        n = self.stream.num_elements
        if self.callback is not None:
            data = np.zeros(n, self.stream.dtype.numpy)
            self.callback(data)
            return data
        data = self.buffer[self.position:self.position + n].copy()
        self._advance()
        return data

    def give(self, values: np.ndarray) -> None:
        """One device-to-host transfer."""
        n = self.stream.num_elements
        if self.callback is not None:
            self.callback(values.reshape(-1).copy())
            return
        self.buffer[self.position:self.position + n] = values.reshape(-1)
        self._advance()

    def _advance(self) -> None:
        self.position += self.stream.num_elements
        if self.position >= self.buffer.size:
            self.position = 0


class StreamConnections:
    """Every stream's endpoints, by (handle, replica)."""

    def __init__(self, streams: Dict[str, DataStream], replicas: int):
        self._streams = streams
        self._replicas = replicas
        self._ends: Dict[Tuple[str, int], Endpoint] = {}

    def stream(self, handle: str) -> DataStream:
        if handle not in self._streams:
            raise UnknownHandleError(f"no stream named '{handle}': {did_you_mean(handle, self._streams)}")
        return self._streams[handle]

    def ends(self, s: DataStream) -> int:
        """How many host sides ``s`` has: one per replica, or one (BROADCAST, or R == 1)."""
        return stream_endpoints(s, self._replicas)

    def connect_buffer(self, handle: str, data) -> None:
        """Use ``data`` in place as the circular buffer(s): with several endpoints,
        replica r uses ``data[r]``."""
        s = self.stream(handle)
        buffer = np.asarray(data)
        if buffer.dtype != s.dtype.numpy:
            raise StreamConnectionError(f"connect_stream '{handle}': the stream carries {s.dtype.name} "
                                        f"({s.dtype.numpy}) but the array is {buffer.dtype}")
        parts = replica_parts(handle, buffer, self.ends(s), s.num_elements, s.is_host_to_device)
        for r, part in enumerate(parts):
            self._ends[handle, r] = Endpoint(s, buffer=part)

    def connect_callback(self, handle: str, replica_or_callback, callback=None) -> None:
        """``(handle, fn)``: fn serves every replica (called once per replica per transfer,
        in replica order; once per transfer for BROADCAST). ``(handle, replica, fn)``:
        one replica's side (not for a BROADCAST stream of a replicated graph)."""
        s = self.stream(handle)
        if callback is None:
            callback, replicas = replica_or_callback, range(self.ends(s))
        else:
            replica = replica_arg(replica_or_callback, self._replicas, f"connect_stream_to_callback '{handle}'")
            if self.ends(s) == 1 and self._replicas > 1:
                raise StreamConnectionError(f"connect_stream_to_callback '{handle}': the stream is BROADCAST: one "
                                            "transfer serves every replica, so connect one callback without a "
                                            "replica index")
            replicas = (replica,)
        function = transfer_function(callback, handle, s.is_host_to_device)
        for r in replicas:
            self._ends[handle, r] = Endpoint(s, callback=function)

    def disconnect(self, handle: str) -> None:
        self.stream(handle)
        for r in range(self._replicas):
            self._ends.pop((handle, r), None)

    def unconnected(self, s: DataStream) -> Optional[int]:
        """The first replica whose side of ``s`` is not connected (None: all are)."""
        return next((r for r in range(self.ends(s)) if (s.handle, r) not in self._ends), None)

    def _end(self, s: DataStream, r: int) -> Endpoint:
        end = self._ends.get((s.handle, r))
        if end is None:  # a callback disconnected it during the run
            which = f" for replica {r}" if self.ends(s) > 1 else ""
            raise StreamConnectionError(f"stream '{s.handle}' is not connected{which}: call engine.connect_stream "
                                        "first (or connect it again if a callback disconnected it during the run)")
        return end

    def _transfer_ends(self, s: DataStream) -> List[Endpoint]:
        """The endpoints of one transfer, taken when it starts: a callback that
        disconnects its stream does not stop the transfer under way (every replica's
        part of it completes); the next transfer needs a new connection."""
        return [self._end(s, r) for r in range(self.ends(s))]

    def to_device(self, s: DataStream) -> Iterator[Tuple[Optional[int], np.ndarray]]:
        """One transfer: (replica, data) per endpoint, in replica order; replica None
        when one transfer is for every replica."""
        ends = self._transfer_ends(s)
        for r, end in enumerate(ends):
            yield (None if len(ends) == 1 else r), end.take()

    def from_device(self, s: DataStream, read: Callable[[int], np.ndarray]) -> None:
        """One transfer: replica r's ``read(r)`` to its endpoint, in replica order."""
        for r, end in enumerate(self._transfer_ends(s)):
            end.give(read(r))
