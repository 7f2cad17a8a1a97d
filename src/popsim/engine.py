"""Engine: runs a compiled executable on the native core.

``Engine(graph, programs, options)`` compiles (or takes from the executable cache) and
builds the core; ``Engine(executable, options)`` runs a compiled or deserialized one.
``run`` executes a program with the GIL released; PrintTensor, stream callbacks and
interpreted vertices call back into Python as they happen. After a failed run the
engine stays usable.

An engine does one thing at a time (popsim/engine_guard.py): a call from another thread
while it is busy is refused with an EngineStateError naming it. ``engine.close()`` (or
``with popsim.Engine(...) as engine:``) frees its native memory at once; the engine
holds its callbacks where the garbage collector sees them, so an engine that only a
callback of its own refers to is collected.
"""
from __future__ import annotations

import itertools
import sys
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, TextIO, Tuple, Union, cast

import numpy as np
import numpy.typing as npt

from . import config, errors
from .contract import Status
from .device import Device
from .engine_guard import UseGuard
from .errors import (
    EngineStateError,
    GraphMemoryAllocationError,
    IndexError,  # noqa: A004 - popsim.IndexError, Poplar's name
    PopsimError,
    StreamConnectionError,
    TensorIOError,
    UnknownHandleError,
    did_you_mean,
)
from .dist import replica_block, world
from .executable import Executable, compile_executable, evict_from_cache
from .graph import Graph
from .lower import HostHandle, Lowered
from .log import configure as configure_logging
from .log import logger, phase
from .native import build_machine
from .options import EngineOptions
from .peers import PeerLink
from .poplar_names import SnakeCaseNames
from .printing import format_tensor
from .program import Program
from .report.build import ExecutionProfile, build_report
from .report.files import AutoReportFiles, auto_report_outputs, auto_report_wanted, write_report_files
from .report.report import Report
from .run_errors import run_error
from .streams import StreamCallback, device_readable, replica_parts, transfer_function
from .arguments import replica_index
from .target import Target, TargetType
from .types import typed_array

if TYPE_CHECKING:  # only for annotations
    from .codelet.vertex_type import VertexType

_Programs = Union[Program, Sequence[Program]]

__all__ = ["Engine", "compile_graph"]

_engine_numbers = itertools.count(1)


def compile_graph(graph: Graph, programs: Union[Program, Sequence[Program]],
                  options: Optional[Mapping[str, object]] = None) -> Executable:
    """Compile ``programs`` for ``graph`` into an Executable (no device needed); uses the
    executable cache when it is on. When the graph does not fit in tile memory this
    raises GraphMemoryAllocationError, after writing the report if the autoReport
    options ask for one."""
    opts = options if isinstance(options, EngineOptions) else EngineOptions(options)
    try:
        return compile_executable(graph, programs, opts)
    except GraphMemoryAllocationError as e:
        exe = getattr(e, "executable", None)
        if exe is None:
            raise
        report = build_report(exe, opts.explicit)
        written = write_report_files(report, opts["autoReport.directory"]) if auto_report_wanted(opts) else []
        note = (f"Report saved to: {written[0]}" if written else
                "No report was written: set the options autoReport.all=true and autoReport.directory to get one.")
        error = GraphMemoryAllocationError(f"{e} {note}")
        error.report, error.profile_path = report, written[0] if written else ""
        raise error from None


class Engine(SnakeCaseNames):
    """Compile ``programs`` (one Program or a list, run by index) for ``graph``, or run a
    compiled ``Executable``.

    >>> engine = Engine(graph, prog); engine.load(device); engine.run(0)

    ``engine.close()`` frees the engine's native memory (tile memory, vertex state,
    threads); using it afterwards raises EngineStateError. ``with Engine(...) as e:``
    closes it at the end of the block. An engine does one thing at a time: calling it
    from another thread while it runs raises EngineStateError; its own stream callbacks
    and PrintTensor may read and write tensors and connect or disconnect streams, but
    not run, load or close it.

    Executables are native code: an Engine built from a deserialized Executable runs the
    codelet libraries in its file. Load only files you trust.
    """

    # The core's machine (build_machine): Any, as the native module has no stubs. None until it is
    # built and once closed (so that close() and __del__ work however far __init__ got); the
    # methods that use it run under self._guard, which refuses a closed engine.
    _machine: Any = None
    _peers: Optional[PeerLink] = None
    _auto_report: Optional[AutoReportFiles] = None

    def __init__(self, graph_or_executable: Union[Graph, Executable],
                 programs: Union[Program, Sequence[Program], Dict[str, str], None] = None,
                 options: Optional[Mapping[str, object]] = None):
        configure_logging()
        self._number = next(_engine_numbers)
        self._guard = UseGuard(f"engine #{self._number}")
        if isinstance(graph_or_executable, Executable):
            if options is None and isinstance(programs, dict):
                options, programs = programs, None
            if programs is not None:
                raise errors.TypeError("Engine(executable, options): an executable already holds its programs")
            self._options = EngineOptions(options)
            self._exe = graph_or_executable
        elif isinstance(graph_or_executable, Graph):
            if programs is None:
                raise errors.TypeError("Engine(graph, programs, options) needs the programs to run")
            self._options = EngineOptions(options)
            self._exe = compile_graph(graph_or_executable, cast(_Programs, programs), self._options)  # (checks them)
        else:
            raise errors.TypeError(f"Engine needs a Graph (and programs) or an Executable, found "
                            f"{type(graph_or_executable).__name__}")
        lw = self._exe.lowered
        self._lowered: Lowered = lw
        self._target: Target = lw.target
        self._interpreted = self._exe.interpreted
        if self._interpreted and lw.vertices.vertex_types is None:
            raise PopsimError("this executable has interpreted vertices but not their Python classes: compile it "
                              "again in this process")
        threads = int(self._options["popsim.numThreads"]) or config.num_threads()
        self._run_timeout = float(self._options["popsim.runTimeout"])  # seconds; 0: none
        self._replicas: int = lw.replication_factor
        # Under MPI this process holds replicas [first, first + local) (popsim.dist).
        self._first, self._local = replica_block(self._replicas, f"engine #{self._number}")
        trace = int(self._options["popsim.traceLength"])
        try:
            with phase("build core", self._exe.compilation.phases):
                self._machine = build_machine(lw, threads, trace, self._first, self._local)
        except PopsimError as e:
            if not (isinstance(graph_or_executable, Graph) and self._exe.compilation.from_cache):
                raise
            # A cache entry that passed the file's checks but not the core's: compiled again, once.
            evict_from_cache(self._exe, str(e))
            self._exe = compile_graph(graph_or_executable, cast(_Programs, programs), self._options)
            self._lowered = lw = self._exe.lowered
            with phase("build core", self._exe.compilation.phases):
                self._machine = build_machine(lw, threads, trace, self._first, self._local)
        comm = world()
        self._peers = None if comm is None else PeerLink(comm, f"engine #{self._number}")
        if self._peers is not None:
            self._peers.agree("graph, programs and initial values", _build_fingerprint(lw))
            self._peers.serve_copies(np.asarray(lw.copy_runs), np.asarray(lw.table_begin), lw.programs.replica_maps,
                                     self._machine.arena(), self._first, self._local)
        self._stream_index: Dict[str, int] = {s.handle: s.index for s in lw.streams}
        # (stream, replica) -> callback: held here, where gc sees them
        self._stream_callbacks: Dict[Tuple[int, int], Callable[[np.ndarray], None]] = {}
        # Callbacks disconnected during a run: the transfer under way still calls them
        # (for its other replicas); dropped when the run ends.
        self._retired_callbacks: Dict[Tuple[int, int], Callable[[np.ndarray], None]] = {}
        self._program_runs: List[int] = [0] * lw.num_programs
        self._program_names: List[str] = list(lw.program_names)
        self._vertex_fields: Dict[Tuple[int, int], list] = {}  # interpreted vertices' numpy views, by (row, replica)
        if auto_report_outputs(self._options):
            graph = graph_or_executable.description if isinstance(graph_or_executable, Graph) else None
            self._auto_report = AutoReportFiles(self._exe, self._options, graph)
            self._auto_report.at_build(self._profile())
            # autoReport.streamAtEachRun=false: the profile is written when the engine is closed or collected
            weakref.finalize(self, self._auto_report.at_close)

    def __repr__(self) -> str:
        guard, lowered = getattr(self, "_guard", None), getattr(self, "_lowered", None)
        state = "closed" if guard is not None and guard.closed else \
            f"{lowered.num_programs} program(s)" if lowered is not None else "not built"
        return f"<popsim.Engine #{getattr(self, '_number', '?')}: {state}>"

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Free the engine's native memory (tile memory, vertex state, threads) now.
        Later calls raise EngineStateError; closing again does nothing."""
        if self._machine is None or not self._guard.close():
            return
        if self._auto_report is not None:
            self._auto_report.at_close()  # autoReport.streamAtEachRun=false: the execution profile
        self._machine = None
        if self._peers is not None:
            self._peers.close()
        self._vertex_fields.clear()
        self._stream_callbacks.clear()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- loading and running ---------------------------------------------------------------------
    @property
    def options(self) -> EngineOptions:
        return self._options

    @property
    def executable(self) -> Executable:
        return self._exe

    @property
    def num_programs(self) -> int:
        return self._lowered.num_programs

    def load(self, device: Device) -> None:
        """Load onto ``device``: tile memory gets its initial contents (constants, initial
        values, zeros elsewhere). Stream connections are kept."""
        if not isinstance(device, Device):
            raise errors.TypeError(f"load needs a Device, found {type(device).__name__}")
        mine, theirs = self._target, device.target
        if self._replicas > 1:  # the graph's target is one replica of the device
            mine = mine.with_changes(num_ipus=mine.num_ipus * self._replicas)
        if not _compatible(mine, theirs):
            built = f"{self._target}" + (f" replicated {self._replicas} times (a device of {mine.num_ipus} IPUs)"
                                         if self._replicas > 1 else "")
            raise EngineStateError(f"cannot load onto {theirs}: the graph was built for {built}; build the graph "
                                   "with Graph(device) for the device you load onto")
        lw = self._lowered
        with self._guard.use("loading", allowed_in_callback=False):
            self._machine.load(lw.init_table, lw.init_image, lw.vertex_values_table, lw.vertex_values)

    def _check_runnable(self) -> None:
        if not self._machine.loaded:
            raise EngineStateError("the engine is not loaded: call engine.load(device) before run, write_tensor "
                                   "or read_tensor")
        over = self._lowered.tiles_out_of_memory
        if over.size:
            totals = self._lowered.layout.tile_totals
            worst = int(over[np.argmax(totals[over])])
            raise EngineStateError(f"the engine was built with debug.allowOutOfMemory although {over.size} tile(s) "
                                   f"are out of memory (worst: tile {worst}); it can be inspected "
                                   "(get_report, print_profile_summary) but not run")

    def run(self, program_index: int = 0, debug_name: str = "") -> None:
        """Run program ``program_index`` to completion."""
        if isinstance(program_index, bool) or not isinstance(program_index, (int, np.integer)):
            raise errors.TypeError(f"run: program_index must be an integer, found {type(program_index).__name__}")
        n = self.num_programs
        if not 0 <= program_index < n:
            raise PopsimError(f"run: program index {program_index} is out of range: this engine has {n} "
                              f"program(s), indices 0..{n - 1}")
        with self._guard.use(f"running program {program_index}", allowed_in_callback=False):
            peers = self._peers
            if peers is None:
                self._run_here(program_index)
            else:
                self._run_with_peers(program_index, peers)
            self._program_runs[program_index] += 1
            if debug_name:
                self._program_names[program_index] = debug_name
            logger.debug("ran program %d (%s)", program_index, self._program_names[program_index])
            if self._auto_report is not None:
                self._auto_report.after_run(self._program_runs[program_index], self._profile)

    def _run_here(self, program_index: int) -> None:
        self._check_runnable()
        for s in self._lowered.programs.program_streams[program_index]:
            for r in range(self._machine.stream_endpoints(s)):
                if not self._machine.connected(s, r):
                    handle = self._lowered.streams[s].handle
                    which = f" for replica {self._first + r}" if self._replicas > 1 and \
                        not self._lowered.streams[s].broadcast else ""
                    raise StreamConnectionError(
                        f"program {program_index} uses stream '{handle}', which is not connected{which}: call "
                        f"engine.connect_stream('{handle}', array) or engine.connect_stream_to_callback("
                        f"'{handle}', fn) before running")
        sys.stdout.flush()  # codelets print through C stdio: keep the order of what was printed before
        try:
            status = self._machine.run(int(program_index), self._host_call, self._vertex_call, self._stream_call,
                                       self._peers, self._run_timeout)
        finally:
            self._retired_callbacks.clear()
        if status != Status.OK:
            raise run_error(status, self._machine.error(), program_index, self._lowered,
                            self._run_timeout if self._machine.timed_out else None)

    def _run_with_peers(self, program_index: int, peers: PeerLink) -> None:
        """A run every process makes together (through ``peers``, self._peers): one that fails
        here (its checks included) tells the others, and each ends only once every process
        has (or one has failed)."""
        peers.begin_run()
        try:
            self._run_here(program_index)
            peers.end_run()
        except BaseException as e:
            peers.failed(f"{type(e).__name__}: {e}")
            raise

    def _host_call(self, callback: int, replica: int) -> None:
        """PrintTensor: once per replica, in replica order ("title (replica r)" when
        there are several)."""
        cb = self._lowered.programs.callbacks[callback]
        values = np.empty(cb.shape, cb.dtype.numpy)
        self._machine.read(cb.table, values, replica)
        title = cb.title if self._replicas == 1 else f"{cb.title} (replica {self._first + replica})"
        sys.stdout.write(format_tensor(title, values))
        sys.stdout.flush()

    def _stream_call(self, stream: int, replica: int, staging: np.ndarray) -> None:
        """A callback stream's transfer: its callback fills or reads ``staging`` (bytes),
        viewed as the stream's elements. The view keeps the buffer alive."""
        s = self._lowered.streams[stream]
        callback = self._stream_callbacks.get((stream, replica)) or self._retired_callbacks[stream, replica]
        callback(staging[:s.transfer_bytes].view(s.dtype.numpy))

    def _vertex_call(self, row: int, worker: int, replica: int):
        """Run one interpreted Python vertex on tile memory; returns (result, cycles)."""
        from .codelet.interpret import run_interpreted
        values = self._vertex_fields.get((row, replica))
        if values is None:
            values = self._vertex_fields[row, replica] = self._field_arrays(row, replica)
        vt = self._lowered.vertices
        types = cast("List[VertexType]", vt.vertex_types)  # set: __init__ refuses interpreted vertices without them
        try:
            ok, cycles = run_interpreted(types[vt.row_type[row]], values, worker,
                                         self._target.num_worker_contexts)
        except IndexError as e:  # keep the traceback through the user's line, for pdb post-mortem
            raise type(e)(f"{vt.location(row)}: {e}").with_traceback(e.__traceback__) from None
        return (1 if ok else 0), int(cycles)

    def _field_arrays(self, row: int, replica: int) -> list:
        arena = self._machine.arena()[replica]
        vt = self._lowered.vertices
        types = cast("List[VertexType]", vt.vertex_types)  # set: __init__ refuses interpreted vertices without them
        out = []
        for spec, view in zip(types[vt.row_type[row]].fields, vt.field_views(row)):
            dtype = spec.dtype.numpy

            def at(offset, n):
                return arena[offset:offset + n * dtype.itemsize].view(dtype)
            out.append([at(o, n) for o, n in view] if isinstance(view, list) else at(*view))
        return out

    # -- host transfers -------------------------------------------------------------------------
    def _handle(self, registry: Dict[str, HostHandle], other: Dict[str, HostHandle], handle: str,
                kind: str) -> HostHandle:
        if not isinstance(handle, str):
            raise errors.TypeError(f"{kind}_tensor: a handle is a string, found {type(handle).__name__}")
        if handle in registry:
            return registry[handle]
        if handle in other:
            opposite = "read" if kind == "write" else "write"
            raise UnknownHandleError(f"'{handle}' is a host {opposite} handle; {kind}_tensor needs a handle made "
                                     f"with graph.create_host_{kind}")
        raise UnknownHandleError(f"no host {kind} handle '{handle}': {did_you_mean(handle, registry)}; create it "
                                 f"with graph.create_host_{kind}('{handle}', tensor) before building the engine")

    def _replica_arg(self, replica, what: str) -> int:
        """The index into this process's replicas of the graph's ``replica``."""
        r = replica_index(replica, self._replicas, what)
        if not self._first <= r < self._first + self._local:
            raise IndexError(f"{what}: replica {r} is held by process {r // self._local}; this process "
                             f"(popsim.dist.instance_index() == {self._first // self._local}) holds replicas "
                             f"{self._first}..{self._first + self._local - 1}")
        return r - self._first

    def _per_replica(self, h: HostHandle, data: np.ndarray, what: str, replica: Optional[int]) -> bool:
        """Whether ``data`` holds one value per replica ([R, *shape], R > 1) rather than
        one value (the tensor's shape, or 1-D with its element count); TensorIOError if
        neither, or if its type is not the tensor's."""
        want = h.dtype.numpy
        if data.dtype != want:
            raise TensorIOError(f"{what} '{h.handle}': the tensor is {h.dtype.name} ({want}) but the array is "
                                f"{data.dtype}; convert it with .astype(np.{want.name})")
        count = int(np.prod(h.shape, dtype=np.int64))
        shape = tuple(data.shape)
        if shape == tuple(h.shape) or (data.ndim == 1 and data.size == count):
            return False
        r = self._local
        if replica is None and self._replicas > 1 and data.ndim >= 1 and shape[0] == r and \
                (shape[1:] == tuple(h.shape) or (data.ndim == 2 and shape[1] == count)):
            return True
        per = (f" (or [{r}, {', '.join(map(str, h.shape))}]: one per replica"
               f"{' it holds' if r < self._replicas else ''})") if self._replicas > 1 and replica is None else ""
        raise TensorIOError(f"{what} '{h.handle}': the tensor has shape {list(h.shape)} but the array has shape "
                            f"{list(data.shape)}; pass an array of shape {list(h.shape)}{per} (or 1-D with {count} "
                            "elements)")

    def write_tensor(self, handle: str, data: npt.ArrayLike, replica: Optional[int] = None) -> None:
        """Write ``data`` to the tensor of a host write handle: an array of the tensor's
        shape goes to every replica (or to ``replica`` only); an array of shape [R,
        *shape] gives replica r ``data[r]``."""
        h = self._handle(self._lowered.host_writes, self._lowered.host_reads, handle, "write")
        if replica is not None:
            replica = self._replica_arg(replica, f"write_tensor '{handle}'")
        if isinstance(data, (np.ndarray, np.generic)):
            arr = np.asarray(data)
        else:
            arr = typed_array(data, h.dtype, np.shape(data), f"write_tensor '{handle}'", TensorIOError)
        each = self._per_replica(h, arr, "write_tensor", replica)
        with self._guard.use(f"writing tensor '{handle}'"):
            self._check_runnable()
            arr = np.ascontiguousarray(arr)
            if each:
                for r in range(self._local):
                    self._machine.write(h.table, arr[r, ...], r)
            else:
                self._machine.write(h.table, arr, -1 if replica is None else replica)

    def read_tensor(self, handle: str, out: Optional[np.ndarray] = None, replica: Optional[int] = None) -> np.ndarray:
        """The tensor of a host read handle as a new array (or written into ``out``): of
        the tensor's shape with one replica (or for ``replica``), else of shape [R,
        *shape], replica r's value at [r]."""
        h = self._handle(self._lowered.host_reads, self._lowered.host_writes, handle, "read")
        if replica is not None:
            replica = self._replica_arg(replica, f"read_tensor '{handle}'")
        each = self._replicas > 1 and replica is None
        if out is None:
            out = np.empty(((self._local,) if each else ()) + tuple(h.shape), h.dtype.numpy)
        elif not isinstance(out, np.ndarray):
            raise TensorIOError(f"read_tensor '{handle}': out must be a numpy array, found {type(out).__name__}")
        if self._per_replica(h, out, "read_tensor", replica) != each:
            want = [self._local, *h.shape] if each else list(h.shape)
            raise TensorIOError(f"read_tensor '{handle}': out has shape {list(out.shape)}; pass one of shape {want}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise TensorIOError(f"read_tensor '{handle}': out must be a writable C-contiguous array")
        with self._guard.use(f"reading tensor '{handle}'"):
            self._check_runnable()
            if each:
                for r in range(self._local):
                    self._machine.read(h.table, out[r, ...], r)
            else:
                self._machine.read(h.table, out, 0 if replica is None else replica)
        return out

    # -- streams --------------------------------------------------------------------------------
    def _stream(self, handle: str):
        if not isinstance(handle, str):
            raise errors.TypeError(f"a stream handle is a string, found {type(handle).__name__}")
        if handle not in self._stream_index:
            raise UnknownHandleError(f"no stream named '{handle}': {did_you_mean(handle, self._stream_index)}")
        return self._lowered.streams[self._stream_index[handle]]

    def _endpoints(self, s) -> int:
        """How many host sides a stream has here: one per replica this process holds, or
        one (broadcast, or R == 1)."""
        return 1 if s.broadcast else self._local

    def connect_stream(self, handle: str, data: np.ndarray) -> None:
        """Connect a FIFO stream to host memory. The array is used in place as a circular
        buffer of whole transfers: each Copy consumes (or fills) the next
        ``num_elements`` elements, wrapping at the end. With R > 1 replicas a stream that
        is not BROADCAST needs an array of leading dimension R: replica r uses ``data[r]``."""
        s = self._stream(handle)
        want = s.dtype.numpy
        if not isinstance(data, np.ndarray):
            if not s.to_device:
                raise StreamConnectionError(f"connect_stream '{handle}': a device-to-host stream needs a numpy "
                                            "array to write into")
            data = typed_array(data, s.dtype, np.shape(data), f"connect_stream '{handle}'", StreamConnectionError)
        if data.dtype != want:
            raise StreamConnectionError(f"connect_stream '{handle}': the stream carries {s.dtype.name} ({want}) "
                                        f"but the array is {data.dtype}; pass data.astype(np.{want.name})")
        if not data.flags.c_contiguous:
            raise StreamConnectionError(f"connect_stream '{handle}': the array must be C-contiguous (the stream "
                                        "uses it in place); pass np.ascontiguousarray(data)")
        if not s.to_device and not data.flags.writeable:
            raise StreamConnectionError(f"connect_stream '{handle}': the device-to-host stream writes into the "
                                        "array, which is read-only; pass a writable array (e.g. np.empty)")
        parts = replica_parts(handle, data, self._endpoints(s), s.num_elements, s.to_device, self._replicas)
        with self._guard.use(f"connecting stream '{handle}'"):
            for r, part in enumerate(parts):
                self._machine.connect_buffer(s.index, r, device_readable(part))
                self._stream_callbacks.pop((s.index, r), None)

    def connect_stream_to_callback(self, handle: str,
                                   replica_or_callback: Union[int, Callable[[np.ndarray], None], StreamCallback],
                                   callback: Union[Callable[[np.ndarray], None], StreamCallback, None] = None) -> None:
        """Connect a FIFO stream to ``callback(buffer)``, called once per transfer with a
        1-D array to fill (host-to-device) or to read (device-to-host), or to a
        :class:`~popsim.StreamCallback` (prefetch / fetch / complete). The buffer's
        contents are only meaningful during the call (the next transfer reuses it). A
        callback may disconnect its own stream: the transfer under way completes, and
        the stream's next transfer needs a new connection.

        ``connect_stream_to_callback(handle, replica, callback)`` connects one replica's
        side of a stream (Poplar's replica-index overload); without a replica the
        callback serves every replica, called once per replica in replica order."""
        s = self._stream(handle)
        given: object = callback  # transfer_function checks it
        if callback is None:
            given, replicas = replica_or_callback, list(range(self._endpoints(s)))
        else:
            replica = self._replica_arg(replica_or_callback, f"connect_stream_to_callback '{handle}'")
            if s.broadcast and self._replicas > 1:
                raise StreamConnectionError(f"connect_stream_to_callback '{handle}': the stream is BROADCAST: one "
                                            "transfer serves every replica, so connect one callback without a "
                                            "replica index")
            replicas = [replica]
        function = transfer_function(given, handle, s.to_device)
        with self._guard.use(f"connecting stream '{handle}'"):
            for r in replicas:
                self._machine.connect_callback(s.index, r, np.zeros(max(s.transfer_bytes, 1), np.uint8))
                self._stream_callbacks[s.index, r] = function

    def disconnect_stream(self, handle: str) -> None:
        """Disconnect a stream (every replica's side); a program that uses it needs a new
        connection to run."""
        s = self._stream(handle)
        with self._guard.use(f"disconnecting stream '{handle}'"):
            for r in range(self._endpoints(s)):
                self._machine.disconnect(s.index, r)
                old = self._stream_callbacks.pop((s.index, r), None)
                if old is not None and self._machine.running:
                    self._retired_callbacks[s.index, r] = old

    def list_streams(self) -> List[str]:
        return [s.handle for s in self._lowered.streams]

    # -- reports --------------------------------------------------------------------------------
    def execution_profile(self) -> ExecutionProfile:
        """What the runs so far counted (the core's counters, copied): what reports read."""
        with self._guard.use("reading its execution profile"):
            return self._profile()

    def _profile(self) -> ExecutionProfile:
        m = self._machine
        trace, truncated = m.trace()
        return ExecutionProfile(step_counts=m.step_counts(), step_cycles=m.step_cycles(),
                                group_cycles=m.group_cycles(), vertex_cycles=m.vertex_cycles(), trace=trace,
                                trace_truncated=truncated, ipu_clocks=m.ipu_clocks(), ipu_idle=m.ipu_idle(),
                                program_runs=list(self._program_runs), program_names=list(self._program_names))

    def get_report(self) -> Report:
        """What the graph holds and what the runs so far cost (see popsim.report)."""
        return build_report(self._exe, self._options.explicit, self.execution_profile())

    def print_profile_summary(self, file: Optional[TextIO] = None, options: Optional[Dict[str, str]] = None) -> None:
        """Print the profile summary: Target, Graph, Memory Usage, Execution. Options:
        ``{"showExecutionSteps": "true"}`` lists every step."""
        (file or sys.stdout).write(self.get_report().summary(options))

    def reset_execution_profile(self) -> None:
        """Forget the cycles counted so far."""
        with self._guard.use("resetting its execution profile", allowed_in_callback=False):
            self._machine.reset_counters()
            self._program_runs = [0] * self.num_programs

    @property
    def report_files(self) -> List[str]:
        """The files autoReport options have written so far."""
        return [] if self._auto_report is None else list(self._auto_report.written)


def _build_fingerprint(lw) -> list:
    """What every process must have built alike: its programs, copies, costs and
    initial values (arrays to hash)."""
    p = lw.programs
    sizes = np.array([lw.layout.arena_bytes, lw.replication_factor, len(lw.vertices.vertices)], np.int64)
    return [np.asarray(a) for a in (p.instrs, p.step_costs, lw.copy_runs, lw.init_image)] + [sizes]


def _compatible(built_for: Target, device: Target) -> bool:
    """A graph loads on a device with the target it was built for; an IPU target and an
    IPUModel of the same shape are interchangeable."""
    ipu_like = {TargetType.IPU, TargetType.IPU_MODEL}
    if built_for.target_type in ipu_like and device.target_type in ipu_like:
        return replace(built_for, target_type=device.target_type) == device
    return built_for == device
