"""Replicas spread over processes (docs/scale_out.md), as poprun spread them over instances.

The same script runs under ``mpiexec -n N python script.py`` (or ``srun``): every process
builds the same global graph, replicated R times, and process k holds replicas
[k·R/N, (k+1)·R/N). Its streams, callbacks, write_tensor and read_tensor cover those
replicas only; cross-replica copies and collectives reach the others as bytes over MPI.

>>> popsim.dist.num_instances(), popsim.dist.instance_index()
>>> popsim.dist.num_total_replicas(), popsim.dist.num_local_replicas(), popsim.dist.replica_index_offset()

The replica figures are those of the replicated graph (or engine) this process made last;
before it makes one, each process counts as holding one replica. MPI is used only when an
MPI launcher started the process with more than one process (its environment says so) or
``POPSIM_MPI=1``; ``POPSIM_MPI=0`` keeps every process on its own. With several processes,
an exception that ends one of them ends them all (MPI_Abort), with its message shown, so
that no process waits for a peer that is gone.
"""
from __future__ import annotations

import os
import sys
import traceback
from typing import Optional, Tuple

from .errors import PopsimError

__all__ = ["num_instances", "instance_index", "num_total_replicas", "num_local_replicas", "replica_index_offset"]

#: Environment variables by which MPI launchers (MPICH's and Intel's hydra, Open MPI's
#: mpirun, Slurm's srun) tell a process how many processes they started.
LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS")

_world = None          # mpi4py's COMM_WORLD once it is in use
_checked = False
_replicas: Optional[int] = None  # the replication factor of the graph made last


def _launched_size() -> int:
    """How many processes the launcher says it started (1 when none did)."""
    for name in LAUNCHER_SIZE_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 1:
            return int(value)
    return 1


def world():
    """mpi4py's COMM_WORLD when this process is one of several, else None."""
    global _world, _checked
    if _checked:
        return _world
    wanted = os.environ.get("POPSIM_MPI", "").strip()
    if wanted not in ("", "0", "1"):
        raise PopsimError(f"POPSIM_MPI must be 0 (one process) or 1 (use MPI), found {wanted!r}")
    size = _launched_size()
    if wanted == "0" or (wanted == "" and size == 1):
        _checked = True
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        raise PopsimError(f"this process is one of {size} started by an MPI launcher, but mpi4py is not installed: "
                          "pip install \"popsim[mpi]\" (or unset POPSIM_MPI to run alone)") from None
    _checked = True
    if MPI.COMM_WORLD.Get_size() > 1:
        _world = MPI.COMM_WORLD
        _end_all_on_exception(_world)
    return _world


def start() -> None:
    """Join the other processes now if an MPI launcher started several and mpi4py is
    there (popsim's import does this, so that an exception anywhere ends them all);
    without mpi4py the error comes when a graph or engine needs the others."""
    try:
        world()
    except PopsimError:
        pass


def _end_all_on_exception(comm) -> None:
    """An exception nobody catches ends every process of the job (MPI_Abort) after its
    traceback is printed: the others would otherwise wait for this one for ever."""
    previous = sys.excepthook

    def excepthook(kind, value, tb):
        if issubclass(kind, KeyboardInterrupt):
            previous(kind, value, tb)
        else:
            sys.stderr.write(f"popsim: process {comm.Get_rank()} of {comm.Get_size()} failed:\n")
            sys.stderr.write("".join(traceback.format_exception(kind, value, tb)))
        sys.stderr.write(f"popsim: ending all {comm.Get_size()} processes (MPI_Abort)\n")
        sys.stderr.flush()
        sys.stdout.flush()
        comm.Abort(1)

    sys.excepthook = excepthook


def num_instances() -> int:
    """How many processes share the replicas (1 without MPI)."""
    comm = world()
    return 1 if comm is None else comm.Get_size()


def instance_index() -> int:
    """This process's index among them, 0..num_instances()-1."""
    comm = world()
    return 0 if comm is None else comm.Get_rank()


def num_total_replicas() -> int:
    """The replication factor of the graph this process made last (all processes)."""
    return _replicas if _replicas is not None else num_instances()


def num_local_replicas() -> int:
    """How many of those replicas this process holds."""
    return num_total_replicas() // num_instances()


def replica_index_offset() -> int:
    """The index of the first replica this process holds."""
    return instance_index() * num_local_replicas()


def replica_block(replicas: int, what: str) -> Tuple[int, int]:
    """(first replica, how many) this process holds of a graph replicated ``replicas``
    times; PopsimError, before any communication, when the processes cannot share them
    evenly. Remembers ``replicas`` for num_total_replicas()."""
    global _replicas
    n = num_instances()
    if replicas % n:
        raise PopsimError(f"{what}: the graph is replicated {replicas} time(s), which {n} processes cannot share "
                          f"evenly (process k holds replicas [k*R/N, (k+1)*R/N)); make the replication factor a "
                          f"multiple of {n}, or launch a number of processes that divides {replicas}")
    _replicas = replicas
    local = replicas // n
    return instance_index() * local, local
