"""Helpers the poplin tests share: a small ipu2 device and running a program with host
writes and reads."""
import graph_helpers
from graph_helpers import load_and_run


def small_device(tiles: int = 16):
    """An ipu2 IPUModel device with ``tiles`` tiles (plans and builds stay small)."""
    return graph_helpers.small_device(tiles)


def run_program(g, device, prog, writes, reads):
    """Run ``prog`` once after writing ``writes`` ({tensor: values}); the values of
    ``reads`` (a list of tensors)."""
    return load_and_run(g, device, prog, reads, writes)[1][0]


def run_conv_vertex(g, device, cs, x, w, y, in_type, seed):
    """Run compute set ``cs`` (one conv vertex reading ``x`` and ``w``, writing ``y``) once on
    normal random inputs of ``in_type`` drawn from ``seed``: (y's values, x's, w's, the engine)."""
    import numpy as np
    import popsim
    from popsim.program import Execute
    for name, t in (("x", x), ("w", w)):
        g.create_host_write(name, t)
    g.create_host_read("y", y)
    engine = popsim.Engine(g, Execute(cs))
    engine.load(device)
    rng = np.random.default_rng(seed)
    hx = rng.standard_normal(x.shape).astype(in_type.numpy)
    hw = rng.standard_normal(w.shape).astype(in_type.numpy)
    engine.write_tensor("x", hx)
    engine.write_tensor("w", hw)
    engine.run(0)
    return engine.read_tensor("y"), hx, hw, engine
