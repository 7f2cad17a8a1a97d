"""popart.PyWeightsIO: host arrays of weights by id, which a session's readWeights fills from
the device and writeWeights takes as the weights the next weightsFromHost writes."""
import numpy as np

from .errors import popart_exception


class PyWeightsIO:
    """``PyWeightsIO({weight_id: array})``: float32 arrays shaped as the weights."""

    def __init__(self, weights):
        if not isinstance(weights, dict) or not all(isinstance(a, np.ndarray) for a in weights.values()):
            raise popart_exception("PyWeightsIO(weights): a dict of weight id -> numpy array")
        self.weights = weights


def checked(io, known: dict, what: str) -> dict:
    """``io``'s arrays, each the id of a weight in ``known`` (id -> array) and of its shape."""
    if not isinstance(io, PyWeightsIO):
        raise popart_exception(f"{what}: expected a popart.PyWeightsIO, found {type(io).__name__}")
    for tid, array in io.weights.items():
        if tid not in known:
            raise popart_exception(f"{what}: {tid!r} is no weight of the model; its weights are {sorted(known)}")
        if array.shape != known[tid].shape:
            raise popart_exception(f"{what}: the array for {tid!r} is {array.shape}; the weight is {known[tid].shape}")
    return io.weights
