"""Replicas in the reference executor: which replica a host call means, how host data
splits between replicas, and the error when replicas disagree on control flow.

A graph replicated R times (``Graph(device, replication_factor=R)``) describes one
replica; R copies of its memory run one control program in lockstep. Host data of
the tensor's shape (or its element count) is for every replica; data of shape
[R, *shape] gives replica r ``data[r]``; reading without a replica gives [R, *shape]
(only when R > 1: with one replica nothing changes).
"""
from __future__ import annotations

from typing import Iterator, Optional, Tuple

import numpy as np

from ..arguments import replica_index
from ..errors import TensorIOError

__all__ = ["replica_arg", "split_by_replica", "replicas_diverge_message"]


def replica_arg(replica, replicas: int, what: str) -> int:
    """``replica`` as an int in 0..replicas-1 (popsim.arguments.replica_index)."""
    return replica_index(replica, replicas, what)


def split_by_replica(data: np.ndarray, shape, replicas: int, replica: Optional[int],
                     what: str) -> Iterator[Tuple[int, np.ndarray]]:
    """(replica, values) for each replica that host ``data`` goes to: data with the
    tensor's element count goes to every replica (or to ``replica``); data of leading
    dimension R (R > 1, no ``replica``) with R times the count gives replica r data[r].
    TensorIOError for anything else."""
    count = int(np.prod(shape, dtype=np.int64))
    if data.size == count:
        yield from ((r, data) for r in (range(replicas) if replica is None else (replica,)))
        return
    if replica is None and replicas > 1 and data.ndim >= 1 and data.shape[0] == replicas and \
            data.size == replicas * count:
        yield from ((r, data[r]) for r in range(replicas))
        return
    per = f" (or [{replicas}, {', '.join(map(str, shape))}]: one per replica)" if replicas > 1 and replica is None \
        else ""
    raise TensorIOError(f"{what}: the tensor has shape {list(shape)} but the array has shape {list(data.shape)}; "
                        f"pass an array of shape {list(shape)}{per} (or 1-D with {count} elements)")


def replicas_diverge_message(program_index: int, step: str, replica: int, replicas: int) -> str:
    """The run-time error (a ControlProgramError) when replica ``replica``, the first
    that differs from replica 0, takes another control-flow decision than replica 0 at
    ``step`` (the branch step's name as lowering names it: "If on p", "Switch on c",
    "RepeatWhileTrue on p"). The engine's text (run_errors.py), word for word."""
    return (f"program {program_index} (at {step}): the replicas disagree on a control-flow decision: replica "
            f"{replica} holds another predicate or Switch value than replica 0. popsim runs the {replicas} replicas "
            "of a replicated graph in lockstep on one control program, so If, Switch and RepeatWhile must decide the "
            "same on every replica: compute the predicate from replica-uniform data (e.g. all-reduce it), or select "
            "values with popops.select instead of branching")
