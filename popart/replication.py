"""Host arrays of a replicated session. PopART shapes an input or anchor array
``[batches_per_step, accumulation_factor, replicas, *shape]`` (size-1 dimensions dropped),
while each replica of a popsim graph reads its own buffer from a REPLICATE host FIFO and
writes its own to a device-to-host one (docs/multi_ipu.md): the buffer of replica r is every
batch's row r, in batch order."""
import numpy as np


def to_replicas(array: np.ndarray, replicas: int, elements: int) -> np.ndarray:
    """The FIFO buffer of a host input array: ``[replicas, transfers * elements]``."""
    if replicas == 1:
        return np.ascontiguousarray(array).reshape(-1)
    return np.ascontiguousarray(np.asarray(array).reshape(-1, replicas, elements).swapaxes(0, 1))


class AnchorBuffers:
    """The FIFO buffers of a step's anchors, and their copy into the host arrays after it."""

    def __init__(self, replicas: int):
        self.replicas = replicas
        self._pending: list = []

    def buffer(self, out: np.ndarray, elements: int) -> np.ndarray:
        """What the anchor's FIFO writes: ``out`` itself with one replica, else
        ``[replicas, transfers * elements]`` copied into ``out`` by ``finish``."""
        if self.replicas == 1:
            return out.reshape(-1)
        buf = np.empty((self.replicas, out.size // self.replicas), out.dtype)
        self._pending.append((out, buf, elements))
        return buf

    def finish(self) -> None:
        for out, buf, elements in self._pending:
            out[...] = buf.reshape(self.replicas, -1, elements).swapaxes(0, 1).reshape(out.shape)
        self._pending = []
