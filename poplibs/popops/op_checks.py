"""The argument checks popops' ops share (element-wise, map, fill/cast, scaled add, select
and clamp, misc): numbers as values of a tensor's type, and, from poputil.checks (which
every library shares), how a tensor is named in an error, writable outputs and the program
an op appends to."""
import math

import numpy as np

from ..poputil import PoplibsError
from ..poputil.checks import check_prog, check_writable, describe  # popops' ops take them from here

__all__ = ["describe", "convert", "scalar_value", "scalar_constant", "check_writable", "check_prog"]


def convert(value, dtype):
    """(the number ``value`` as ``dtype`` holds it, whether it fits): an integer type must
    hold it exactly, a float type may round it but not overflow to infinity; a number numpy
    cannot convert at all (an integer past 64 bits for an integer type, past 1.8e308 for a
    float type) fits nothing (its value is then None)."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # what does not fit is refused by the caller
            converted = np.asarray(value).astype(dtype.numpy).item()
    except OverflowError:  # numpy cannot even read it
        return None, False
    if dtype.name in ("FLOAT", "HALF"):
        infinite = isinstance(value, (float, np.floating)) and math.isinf(value)
        return converted, infinite or not math.isinf(converted)
    return converted, converted == value


def scalar_value(value, dtype, what: str, other):
    """A Python number as a value of ``dtype`` (refused where it would change)."""
    if isinstance(value, (bool, np.bool_)) and dtype.name != "BOOL":
        raise PoplibsError(f"{what}: a bool operand goes with BOOL tensors, not {describe(other)}; "
                           "pass a number of the tensor's type")
    converted, fits = convert(value, dtype)
    if not fits:
        raise PoplibsError(f"{what}: the scalar {value!r:.60} does not fit {describe(other)} exactly "
                           f"({dtype.name} would hold {converted!r}); pass a value of the tensor's type")
    return converted


def scalar_constant(graph, value, dtype, what: str, other):
    """A Python number as a constant of ``dtype`` (refused where it would change)."""
    constant = graph.add_constant(dtype, (), scalar_value(value, dtype, what, other), f"{what}/scalar")
    graph.set_tile_mapping(constant, 0)  # as PopLibs maps its scalar constants; tiles fetch it
    return constant


