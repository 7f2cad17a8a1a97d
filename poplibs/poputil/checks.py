"""Argument checks shared by the PopLibs libraries: every bad argument is a PoplibsError
(or popsim.TypeError for a wrong kind of object: a PopsimError that is also a TypeError)
that names the function, the argument, what was expected, what was found and how to fix
it."""
import numbers
from collections.abc import Iterable, Mapping
from typing import Optional, Tuple

import numpy as np

import popsim
import popsim.program

from .errors import PoplibsError


def describe(t) -> str:
    """How an error names a tensor: its name, type and shape."""
    return f"tensor '{t.name}' ({getattr(t.dtype, 'name', t.dtype)}, shape {tuple(t.shape)})"


def check_name(name, what: str) -> None:
    """An op's debug name: a str."""
    if not isinstance(name, str):
        raise popsim.TypeError(f"{what}: name must be a str, found {type(name).__name__}")


def check_writable(t, what: str, role: str) -> None:
    """``t`` may be written by an op: no constants, no elements that alias each other."""
    if t.contains_constant():
        raise PoplibsError(f"{what}: the {role} {describe(t)} contains constants, which cannot be written; "
                           "write into a variable (popops.<op> returns a new one)")
    if t.contains_aliases():
        raise PoplibsError(f"{what}: the {role} {describe(t)} has elements that alias each other (a broadcast "
                           "or repeated view), so parallel writes would race; write into a tensor without aliases")


def check_graph(graph, what: str) -> None:
    if not isinstance(graph, popsim.Graph):
        raise popsim.TypeError(f"{what}: expected a popsim.Graph as the graph, found {type(graph).__name__}")


def check_tensor(graph, tensor, what: str, role: str = "tensor") -> None:
    """``tensor`` is a Tensor of ``graph`` (or of the graph a virtual graph shares)."""
    check_graph(graph, what)
    if not isinstance(tensor, popsim.Tensor):
        raise popsim.TypeError(f"{what}: expected a popsim.Tensor as the {role}, found {type(tensor).__name__}")
    if not graph.owns(tensor):
        raise PoplibsError(f"{what}: {role} '{tensor.name}' belongs to another graph than the one given; "
                           "pass the graph that created it (or a virtual graph of that graph)")


def check_count(value, what: str, name: str, low: int = 0) -> int:
    """A whole number >= ``low`` (numpy integers too; bools and floats are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise PoplibsError(f"{what}: {name} must be a whole number >= {low}, found "
                           f"{type(value).__name__} {value!r}")
    if value < low:
        hint = " (a grain or partition count of 0 would divide by zero)" if low == 1 else ""
        raise PoplibsError(f"{what}: {name} must be >= {low}, found {int(value)}{hint}")
    return int(value)


def check_whole_numbers(values, what: str, name: str, low: Optional[int] = None) -> Tuple[int, ...]:
    """A list (tuple, 1-D array) of whole numbers, numpy integers too, each >= ``low`` when
    given: never strings or floats turned into numbers (int("3") and int(2.5) would)."""
    if isinstance(values, (str, bytes, Mapping, popsim.Tensor)) or not isinstance(values, Iterable) \
            or getattr(values, "ndim", 1) != 1:
        raise PoplibsError(f"{what}: {name} must be a list of whole numbers, found {type(values).__name__} "
                           f"{values!r:.60}")
    values = tuple(values)
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise PoplibsError(f"{what}: {name} must be whole numbers, found {type(v).__name__} {v!r:.30} in "
                               f"{values!r:.60}")
    if low is not None and any(v < low for v in values):
        raise PoplibsError(f"{what}: {name} must be >= {low} in every entry, found {tuple(int(v) for v in values)}")
    return tuple(int(v) for v in values)


def check_per_dim(values: tuple, what: str, name: str, rank: int, low: Optional[int] = None,
                  rank_note: str = "") -> tuple:
    """``values`` (already checked entry by entry) holds one entry per field dimension,
    ``rank`` of them (``rank_note`` says where the rank comes from), each >= ``low`` when
    given: ConvParams' and PoolParams' per-dimension lists."""
    if len(values) != rank:
        raise PoplibsError(f"{what}: {name} has {len(values)} entries, expected one per field dimension "
                           f"({rank}{rank_note})")
    if low is not None and any(v < low for v in values):
        raise PoplibsError(f"{what}: {name} must be >= {low} in every dimension, found {values}")
    return values


def as_float(value, what: str, name: str) -> float:
    """A real number as a Python float; an integer too large for one (past about 1.8e308)
    is refused rather than an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        raise PoplibsError(f"{what}: {name} {value!r:.40} is too large for a floating-point number") from None


def check_flag(value, what: str, name: str) -> bool:
    """A bool argument (numpy's bool too): True or False, never a number or an array whose
    truth value would be guessed."""
    if not isinstance(value, (bool, np.bool_)):
        raise PoplibsError(f"{what}: {name} must be True or False, found {type(value).__name__} {value!r:.60}")
    return bool(value)


def check_prog(prog, what: str) -> None:
    """An op appends its programs to ``prog``: it must be a popsim.Sequence."""
    if not isinstance(prog, popsim.program.Sequence):
        raise PoplibsError(f"{what}: prog must be a popsim.Sequence to append the op to, found "
                           f"{type(prog).__name__}; create one with popsim.Sequence()")
