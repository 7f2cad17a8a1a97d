"""popart.PyStepIOCallback: a step's host arrays given by callbacks, as PopART's
(``input_callback(id, is_prefetch) -> array``, ``input_complete_callback(id)``,
``output_callback(id) -> array``, ``output_complete_callback(id)``). Each callback hands
over one transfer (one batch of one replica); a session's run gathers a step's transfers
into the arrays of a PyStepIO before the step and hands the anchors back after it, so
every callback is called as often as in PopART (not interleaved with the step)."""
import numpy as np

from .dataflow import PyStepIO
from .errors import popart_exception


class PyStepIOCallback:
    def __init__(self, input_callback, input_complete_callback, output_callback, output_complete_callback):
        for name, fn in (("input_callback", input_callback), ("input_complete_callback", input_complete_callback),
                         ("output_callback", output_callback),
                         ("output_complete_callback", output_complete_callback)):
            if not callable(fn):
                raise popart_exception(f"PyStepIOCallback: {name} must be callable, found {type(fn).__name__}")
        self.input_callback, self.input_complete_callback = input_callback, input_complete_callback
        self.output_callback, self.output_complete_callback = output_callback, output_complete_callback


def _transfers(fn, tid, total: int, dtype, what: str, *args) -> list:
    """Call ``fn(tid, *args)`` until its arrays hold ``total`` elements."""
    parts, count = [], 0
    while count < total:
        array = fn(tid, *args)
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.size == 0:
            found = f"{array.dtype} {array.shape}" if isinstance(array, np.ndarray) else type(array).__name__
            raise popart_exception(f"PyStepIOCallback: {what} for {tid!r} returned {found}; expected a non-empty "
                                   f"{np.dtype(dtype)} numpy array holding one transfer of the tensor")
        parts.append(array)
        count += array.size
    if count != total:
        raise popart_exception(f"PyStepIOCallback: the arrays {what} returned for {tid!r} hold {count} elements over "
                               f"the step; the step needs {total} (each array one transfer of the tensor)")
    return parts


def gather(stepio, input_shapes: dict, anchor_shapes: dict):
    """A PyStepIO for ``stepio`` and a function to call after the step (hands the anchors back).
    ``input_shapes``: id -> (host shape, dtype); ``anchor_shapes``: id -> (host shape, dtype)."""
    if not isinstance(stepio, PyStepIOCallback):
        return stepio, lambda: None
    inputs = {}
    for tid, (shape, dtype) in input_shapes.items():
        parts = _transfers(stepio.input_callback, tid, int(np.prod(shape)), dtype, "input_callback", False)
        inputs[tid] = np.concatenate([p.reshape(-1) for p in parts]).reshape(shape)
        stepio.input_complete_callback(tid)
    outputs, buffers = {}, {}
    for tid, (shape, dtype) in anchor_shapes.items():
        buffers[tid] = _transfers(stepio.output_callback, tid, int(np.prod(shape)), dtype, "output_callback")
        outputs[tid] = np.zeros(shape, dtype)

    def finish():
        for tid, parts in buffers.items():
            flat, start = outputs[tid].reshape(-1), 0
            for p in parts:
                np.copyto(p, flat[start:start + p.size].reshape(p.shape))
                start += p.size
            stepio.output_complete_callback(tid)
    return PyStepIO(inputs, outputs), finish
