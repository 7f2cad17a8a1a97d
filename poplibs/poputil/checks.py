"""Argument checks shared by the PopLibs libraries: every bad argument is a PoplibsError
(or TypeError for a wrong kind of object) that names the function, the argument, what
was expected, what was found and how to fix it."""
import numbers

import popsim
import popsim.program

from .errors import PoplibsError


def check_graph(graph, what: str) -> None:
    if not isinstance(graph, popsim.Graph):
        raise TypeError(f"{what}: expected a popsim.Graph as the graph, found {type(graph).__name__}")


def check_tensor(graph, tensor, what: str, role: str = "tensor") -> None:
    """``tensor`` is a Tensor of ``graph`` (or of the graph a virtual graph shares)."""
    check_graph(graph, what)
    if not isinstance(tensor, popsim.Tensor):
        raise TypeError(f"{what}: expected a popsim.Tensor as the {role}, found {type(tensor).__name__}")
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


def check_prog(prog, what: str) -> None:
    """An op appends its programs to ``prog``: it must be a popsim.Sequence."""
    if not isinstance(prog, popsim.program.Sequence):
        raise PoplibsError(f"{what}: prog must be a popsim.Sequence to append the op to, found "
                           f"{type(prog).__name__}; create one with popsim.Sequence()")
