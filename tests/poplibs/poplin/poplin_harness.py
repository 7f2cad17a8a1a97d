"""Helpers the poplin tests share: a small ipu2 device and running a program with host
writes and reads."""
import numpy as np

import popsim


def small_device(tiles: int = 16):
    """An ipu2 IPUModel device with ``tiles`` tiles (plans and builds stay small)."""
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = tiles
    return model.create_device()


def run_program(g, device, prog, writes, reads):
    """Run ``prog`` once after writing ``writes`` ({tensor: values}); the values of
    ``reads`` (a list of tensors)."""
    for i, t in enumerate(writes):
        g.create_host_write(f"w{i}", t)
    for i, t in enumerate(reads):
        g.create_host_read(f"r{i}", t)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    for i, (t, values) in enumerate(writes.items()):
        engine.write_tensor(f"w{i}", np.asarray(values, dtype=t.dtype.numpy))
    engine.run(0)
    return [engine.read_tensor(f"r{i}") for i in range(len(reads))]
