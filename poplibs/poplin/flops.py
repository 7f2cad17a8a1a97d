"""Throughput figures of a matmul (PopLibs' getFwdFlops family; PopLibs' documentation
and 4): the FLOPs of a product, the target's peak rate and the rate a modelled cycle count
achieves. The benchmarks use them to put modelled TFLOPS next to the peak.

* ``mat_mul_flops(groups, m, k, n)`` = 2·G·M·K·N (a multiply and an add per MAC, as
  PopLibs' getFwdFlops counts).
* ``peak_flops(target, dtype)`` = 2 × tiles × AMP MACs per cycle per tile × clock: on an
  ipu2 (1472 tiles, 1.33 GHz) 16 float or 64 half MACs per cycle, 62.6 and 250.6 TFLOPS,
  the published 62.5 and 250 (reference 4).
* ``achieved_flops(flops, cycles, target)`` = flops / (cycles / clock).
"""
import popsim
from popsim import FLOAT, HALF

from ..poputil import PoplibsError

__all__ = ["mat_mul_flops", "peak_flops", "achieved_flops"]


def mat_mul_flops(groups: int, m: int, k: int, n: int) -> int:
    """2·G·M·K·N."""
    for name, value in (("groups", groups), ("m", m), ("k", k), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise PoplibsError(f"poplin.mat_mul_flops: {name} must be a whole number >= 0, found {value!r}")
    return 2 * groups * m * k * n


def peak_flops(target, dtype) -> float:
    """The target's peak matmul rate for ``dtype`` inputs (FLOAT or HALF), FLOP/s."""
    if not isinstance(target, popsim.Target):
        raise popsim.TypeError(f"poplin.peak_flops: expected a popsim.Target (graph.target), found "
                               f"{type(target).__name__}")
    if not isinstance(dtype, popsim.Type):
        raise PoplibsError(f"poplin.peak_flops: the type must be FLOAT or HALF, found {dtype!r:.60}")
    if dtype == FLOAT:
        macs = target.amp_fp32_macs_per_cycle
    elif dtype == HALF:
        macs = target.amp_fp16_macs_per_cycle
    else:
        raise PoplibsError(f"poplin.peak_flops: the type must be FLOAT or HALF, found {dtype!r}")
    return 2.0 * target.num_tiles * macs * target.tile_clock_frequency


def achieved_flops(flops: int, cycles: float, target) -> float:
    """FLOP/s when ``flops`` take ``cycles`` cycles of the target's tile clock."""
    if not cycles > 0:
        raise PoplibsError(f"poplin.achieved_flops: cycles must be > 0, found {cycles!r}")
    return flops * target.tile_clock_frequency / cycles
