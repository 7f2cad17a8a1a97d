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
