"""Checking the numbers Poplar takes as ``unsigned``, ``size_t`` or ``double``.

C++ refuses ``addVariable(FLOAT, {2.5})`` at compile time; Python would silently turn 2.5
into 2 or "4" into 4. These helpers take Python and numpy integers only (never bools,
floats or strings) and raise the caller's PopsimError subclass naming the argument, the
value found and what to pass instead.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import List, Optional, Type

import numpy as np

from . import errors
from .errors import PopsimError

__all__ = ["as_int", "as_size", "as_index", "as_indices", "as_positive_float", "plain", "found", "replica_index"]


def plain(value):
    """A numpy scalar as the Python value it holds (messages show 2.0, not np.float64(2.0))."""
    return value.item() if isinstance(value, np.generic) else value


def found(value, limit: int = 80) -> str:
    """``value`` for a message: its type and repr, the repr cut to ``limit`` characters (a
    list of a million numbers passed by mistake must not make a million-number message)."""
    try:
        text = repr(plain(value))
    except Exception:  # noqa: BLE001 - a user object whose __repr__ fails still gets its type named
        text = "<unprintable>"
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return f"{type(value).__name__} {text}"


def as_int(value, what: str, error: Type[PopsimError] = PopsimError, low: Optional[int] = None,
           high: Optional[int] = None) -> int:
    """``value`` as an int within [low, high] (either bound optional); else ``error``."""
    if type(value) is not int:  # the common case stays one type check
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            hint = f"; pass a whole number such as {int(value)}" if isinstance(value, (float, np.floating)) \
                and math.isfinite(value) else ""
            raise error(f"{what} must be an integer, found {found(value)}{hint}")
        value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        if high is None:
            wanted = "a non-negative integer" if low == 0 else f"an integer >= {low}"
        elif low is None:
            wanted = f"an integer <= {high}"
        else:
            wanted = f"an integer in {low}..{high}"
        raise error(f"{what} must be {wanted}, found {value}")
    return value


def as_size(value, what: str, error: Type[PopsimError] = PopsimError) -> int:
    """A non-negative integer: a dimension, an element count, a number of sub-edges."""
    return as_int(value, what, error, low=0)


def as_index(value, what: str) -> int:
    """An integer argument (an index, a dimension, a count), range unchecked: anything else
    is a popsim.TypeError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise errors.TypeError(f"{what} must be an integer, found {found(value)}")
    return int(value)


def as_indices(values, what: str, entry: str) -> List[int]:
    """A list (tuple, 1-D array...) of integers, ``what``; ``entry`` names one in messages."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable) or \
            getattr(values, "ndim", 1) != 1:
        raise errors.TypeError(f"{what} must be a list of integers, found {found(values)}")
    return [as_index(v, entry) for v in values]


def as_positive_float(value, what: str, error: Type[PopsimError] = PopsimError) -> float:
    """A finite number > 0 (ints accepted, bools not)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise error(f"{what} must be a positive number, found {found(value)}")
    if not (math.isfinite(value) and value > 0):
        raise error(f"{what} must be a positive finite number, found {plain(value)!r}")
    return float(value)


def replica_index(replica, replicas: int, what: str) -> int:
    """``replica`` as an int in 0..replicas-1: popsim.TypeError for a non-integer, popsim's
    IndexError naming the replicas that exist for one out of range (both PopsimErrors)."""
    from .errors import IndexError  # noqa: A004 - popsim.IndexError, Poplar's name
    if isinstance(replica, (bool, np.bool_)) or not isinstance(replica, (int, np.integer)):
        raise errors.TypeError(f"{what}: replica must be an integer, found {found(replica)}")
    if not 0 <= replica < replicas:
        raise IndexError(f"{what}: replica {int(replica)} is out of range: the graph has {replicas} replica(s), "
                         f"0..{replicas - 1}")
    return int(replica)
