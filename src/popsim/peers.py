"""An engine's link to the processes that hold its other replicas (popsim.dist).

The core asks for three things while it runs (native/core/peers.hpp): a cross-replica
copy's fragments moved between processes, point to point, straight between tile memories
(one message per pair of replicas, described to MPI by the copy table's segments) or,
for a copy whose sources and destinations overlap, packed by the core into one message
per pair of processes; and a gather of a few bytes from every process (a control-flow
decision, an abort, the cycles of a compute set whose vertices count their own).
Messages between two processes are posted by both in source replica order, so they
match in order. Every wait also
listens for a notice from a process whose run failed, so that no process waits for one
that has stopped: each then fails its run with PeerProcessError, naming the process and
its error. After a failed run the link starts afresh on a new communicator (all processes
failed that run, so all do), and messages of the failed run can never be mistaken for
those of the next. The new one is duplicated from a communicator kept for that alone:
the failed one may hold collectives some processes started and others never will.
"""
from __future__ import annotations

import atexit
import hashlib
import itertools
import os
import weakref

import numpy as np

from .contract import PeerOp
from .errors import PeerProcessError, PopsimError
from .lower.copy_runs import runs_to_segments

_NOTICE_TAG = 1      # a failed run's notice
_DATA_TAG = 2        # cross-replica copy fragments
_NOTICE_BYTES = 4096  # the longest notice (the failure's message, cut)
_CHUNK = 1 << 30      # the most bytes in one message (MPI counts are 32-bit ints)
_SPINS = 1000         # polls of a wait before each further poll first yields the core
_SIDE = {"src": 0, "dst": 1}  # columns of runs_to_segments's rows


class PeerLink:
    """The engine's communicator over the processes of ``world``. Runs are numbered alike
    on every process (each engine.run is one, failed or not): a notice names its run, so
    one from a process already in the next run (this one has ended everywhere, then)
    waits for that run instead of failing this one."""

    def __init__(self, world, name: str):
        self._name = name
        self._origin = world.Dup()  # only ever duplicated, so every process calls it alike
        self._comm = self._origin.Dup()
        host = self._origin.Split_type(_shared_memory())  # the processes on this host
        self._oversubscribed = host.Get_size() > len(os.sched_getaffinity(0))
        host.Free()
        self._run = 0
        self._broken = False
        self._early = None  # (run, process, message) of a notice from a process ahead
        self._sent_notices = []
        self._tables = None   # for PEER_COPY: segments, table starts, replica maps, tile memory
        self._datatypes = {}  # (table, "src" or "dst") -> committed MPI datatype over a replica's tile memory
        self._abandoned = []  # collectives a failed run left pending, with their buffers
        self._listen()
        _open_links.add(self)

    @property
    def rank(self) -> int:
        return self._comm.Get_rank()

    @property
    def size(self) -> int:
        return self._comm.Get_size()

    def _listen(self) -> None:
        self._notice = bytearray(_NOTICE_BYTES)
        self._notice_request = self._comm.Irecv(self._notice, source=_any_source(), tag=_NOTICE_TAG)

    def _stop_listening(self) -> None:
        if self._notice_request:
            self._notice_request.Cancel()
            self._notice_request.Wait()

    def serve_copies(self, copy_runs: np.ndarray, table_begin: np.ndarray, replica_maps: np.ndarray,
                     arena: np.ndarray, first: int, local: int) -> None:
        """What cross-replica copies between tile memories need: the copy tables (run
        rows, lower/copy_runs.py), the replica maps, and this process's tile memory (replica
        first + i's is arena[i]), which holds replicas [first, first + local)."""
        self._tables = (copy_runs, table_begin, replica_maps, arena, first, local)

    def agree(self, what: str, parts) -> None:
        """PopsimError on every process unless all give the same ``parts`` (numpy arrays:
        what they built); only a digest travels."""
        h = hashlib.sha256()
        for part in parts:
            h.update(np.ascontiguousarray(part).reshape(-1).view(np.uint8))
        digest = np.frombuffer(h.digest(), np.uint8)
        everyone = np.empty((self.size, digest.size), np.uint8)
        self._wait([self._comm.Iallgather(digest, everyone)], keep=(digest, everyone))
        differ = [p for p in range(self.size) if not np.array_equal(everyone[p], everyone[0])]
        if differ:
            raise PopsimError(f"{self._name}: process {differ[0]} built a different {what} from process 0's; every "
                              "process must build the same graph and programs (the same script, with the same "
                              "data where it shapes the graph)")

    def begin_run(self) -> None:
        """Start a run: after a failed one, on a new communicator; PeerProcessError if a
        process already failed this one."""
        self._run += 1
        if self._broken:
            self._stop_listening()
            self._comm = self._origin.Dup()
            self._listen()
            self._broken = False
        if self._early is not None:
            run, process, message = self._early
            self._early = None
            if run == self._run:
                self._peer_failed(process, message)

    def end_run(self) -> None:
        """Wait until every process has finished the run, or one has failed it."""
        self._wait([self._comm.Ibarrier()])

    def close(self) -> None:
        """Stop listening for notices (before MPI ends, which would find the receive pending)."""
        try:
            from mpi4py import MPI
        except ImportError:  # the interpreter is shutting down
            return
        if not MPI.Is_finalized():
            self._stop_listening()
            for datatype in self._datatypes.values():
                datatype.Free()
            self._datatypes.clear()
        _open_links.discard(self)

    def __del__(self) -> None:
        self.close()

    def failed(self, message: str) -> None:
        """Tell every other process that this one's run failed; the next run starts afresh."""
        if not self._broken:
            text = self._run.to_bytes(8, "little") + message.encode("utf-8", "replace")[:_NOTICE_BYTES - 8]
            for p in range(self.size):
                if p != self.rank:
                    self._sent_notices.append(self._comm.Isend(text, dest=p, tag=_NOTICE_TAG))
        self._broken = True

    def _peer_failed(self, process: int, message: str):
        self._broken = True
        raise PeerProcessError(f"{self._name}: process {process} failed, so this run stops too: {message}")

    # -- what the core asks for ---------------------------------------------------------------
    def __call__(self, op: int, send, send_bytes, recv, recv_bytes) -> None:
        if op == PeerOp.COPY:
            self._copy(send, send_bytes)
            return
        if op == PeerOp.GATHER:  # small; in buffers of its own, which a failed run may leave pending
            mine, everyone = bytearray(send), bytearray(len(recv))
            self._wait([self._comm.Iallgather(mine, everyone)], keep=(mine, everyone))
            recv[:] = everyone
            return
        requests = []
        for counts, buffer, post in ((recv_bytes, recv, self._comm.Irecv), (send_bytes, send, self._comm.Isend)):
            offset = 0
            for p, count in enumerate(counts):
                for start in range(offset, offset + count, _CHUNK):
                    piece = buffer[start:min(start + _CHUNK, offset + count)]
                    requests.append(post(piece, p, _DATA_TAG))
                offset += count
        self._wait(requests, cancel=True)

    def _copy(self, table: int, map_index: int) -> None:
        """Cross-replica copy ``table`` between this process's replicas and the others':
        each fragment from the source replica's tile memory into the destination's."""
        _, begin, maps, arena, first, local = self._tables
        if begin[table] == begin[table + 1]:
            return
        requests = []
        for r, d in enumerate(maps[map_index].tolist()):  # by source replica, as the other side posts them
            if d < 0 or (first <= r < first + local) == (first <= d < first + local):
                continue
            if first <= r < first + local:
                memory = arena[r - first]
                requests.append(self._comm.Isend([memory, 1, self._datatype(table, "src")], d // local, _DATA_TAG))
            else:
                memory = arena[d - first]
                requests.append(self._comm.Irecv([memory, 1, self._datatype(table, "dst")], r // local, _DATA_TAG))
        self._wait(requests, cancel=True)

    def _datatype(self, table: int, column: str):
        """The bytes of copy table ``table``'s sources (column "src") or destinations
        ("dst") in one replica's tile memory, as an MPI datatype (made once)."""
        datatype = self._datatypes.get((table, column))
        if datatype is None:
            from mpi4py import MPI
            runs, begin = self._tables[0], self._tables[1]
            segs = runs_to_segments(runs[begin[table]:begin[table + 1]])  # one (src, dst, len) per element
            datatype = MPI.BYTE.Create_hindexed(segs[:, 2].tolist(), segs[:, _SIDE[column]].tolist()).Commit()
            self._datatypes[table, column] = datatype
        return datatype

    def _wait(self, requests, cancel: bool = False, keep=()) -> None:
        """Wait for ``requests``, or raise PeerProcessError when another process failed
        this run: point-to-point requests (``cancel``) are cancelled then, as they use the
        core's buffers; collectives cannot be, so they stay pending with ``keep``, their
        buffers."""
        from mpi4py import MPI
        pending = list(requests)
        status = MPI.Status()
        while pending:
            requests = pending + [self._notice_request]
            index = _wait_yielding(requests, status) if self._oversubscribed else MPI.Request.Waitany(requests, status)
            if index < len(pending):
                pending.pop(index)
                continue
            count = status.Get_count(MPI.BYTE)
            run = int.from_bytes(self._notice[:8], "little")
            message = bytes(self._notice[8:count]).decode("utf-8", "replace")
            self._listen()
            if run > self._run:  # from a process ahead: this run has ended everywhere
                self._early = self._early or (run, status.Get_source(), message)
            if run != self._run:
                continue
            if cancel:
                for request in pending:
                    request.Cancel()
                MPI.Request.Waitall(pending)
            else:
                self._abandoned.append((pending, keep))
            self._peer_failed(status.Get_source(), message)


_open_links = weakref.WeakSet()


@atexit.register
def _close_links() -> None:
    for link in list(_open_links):
        link.close()


def _wait_yielding(requests, status) -> int:
    """MPI_Waitany for more processes than cores (mpiexec -n 4 on 2): once a wait is long
    it gives up the core between polls, where MPI's own wait would spin and take the core
    from the process it waits for."""
    from mpi4py import MPI
    for spin in itertools.count():
        index, done = MPI.Request.Testany(requests, status)
        if done:
            return index
        if spin >= _SPINS:
            os.sched_yield()


def _shared_memory() -> int:
    from mpi4py import MPI
    return MPI.COMM_TYPE_SHARED


def _any_source() -> int:
    from mpi4py import MPI
    return MPI.ANY_SOURCE
