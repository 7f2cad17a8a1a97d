"""Executables: a graph and its programs compiled once, saved, loaded, cached.

``compile_executable(graph, programs, options)`` lowers a graph (or finds the result in
the executable cache); ``exe.serialize(path_or_file)`` writes it as a versioned file
(popsim/executable_file.py: a zip of numpy arrays and a JSON header, no pickle) that
embeds the codelet libraries it runs; ``Executable.deserialize(path_or_file)`` reads it
back, and ``Engine(exe)`` runs it without the graph.

Executables are native code: ``Engine(Executable.deserialize(f))`` runs the libraries
embedded in ``f`` (their constructors run as soon as they are loaded). Like pickle,
load only files you trust. A malformed file is refused with a PopsimError.

The cache is on when the ``popsim.cacheDir`` option or the POPSIM_CACHE_DIR variable
names a directory; its key is a content digest of the graph, programs, options and
target (popsim/digest.py), so building the same program again skips lowering. Initial
values (set_initial_value data and constants' values) are data, not code: the key
covers which views have them and their types and shapes, not the values, and a cache
entry is stored without them; a hit packs the graph's current values into the initial
image (lower/initial_image.py). A cache entry that cannot be read, or whose initial
image does not fit the graph's values, is compiled again (and the log says why, at WARN).

This is the compile step: it never imports the report layer. When the graph does not
fit, it raises GraphMemoryAllocationError with the executable attached (``.executable``)
so that its caller can write the out-of-memory report (popsim.engine does).
"""
from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, Dict, Mapping, Optional, Sequence, Union

from . import config, errors
from .cachedir import evict, is_verified, store_verified, usable_dir
from .compilation import CompilationInfo
from .digest import graph_digest
from .errors import GraphMemoryAllocationError, PopsimError
from .graph import Graph
from .heap import lowering_heap
from .executable_file import FORMAT_VERSION, read_executable, write_executable
from .lower import Lowered, lower_graph
from .lower.consistency import check_initial_image
from .lower.initial_image import pack_values
from .lower.layout import out_of_memory_message
from .log import configure as configure_logging
from .log import logger, phase
from .options import EngineOptions
from .program import Program
from .target import Target
from .version import __version__

__all__ = ["Executable", "compile_executable", "evict_from_cache", "FORMAT_VERSION"]

# The options that shape what is compiled (the rest only affect how it runs or reports).
COMPILE_OPTIONS = ("debug.allowOutOfMemory", "popsim.codeletMode", "popsim.checkRaces", "debug.variableLiveness")


class Executable:
    """A compiled graph and its programs; give it to ``Engine`` to run.

    Serialized executables embed native code (the codelet libraries): loading one runs
    that code. Like pickle, deserialize only files you trust."""

    def __init__(self, lowered: Lowered, options: Dict[str, str], compilation: CompilationInfo):
        self.lowered = lowered
        self.options = dict(options)  # the options it was compiled with
        self.compilation = compilation

    @property
    def target(self) -> Target:
        return self.lowered.target

    @property
    def num_programs(self) -> int:
        return self.lowered.num_programs

    @property
    def interpreted(self) -> bool:
        return any(path == "" for path, _ in self.lowered.vertices.codelets)

    # -- files ---------------------------------------------------------------------------------
    def serialize(self, path_or_file: Union[str, Path, BinaryIO]) -> None:
        """Write the executable to a file path, or to a binary file object (Poplar's
        ``serialize(std::ostream&)``). It embeds its codelet libraries: whoever loads
        it runs them."""
        if self.interpreted:
            raise PopsimError("an executable compiled with popsim.codeletMode=interpreted runs Python vertex classes "
                              "and cannot be saved; compile it in compiled mode to serialize it")
        if not hasattr(path_or_file, "write") and not isinstance(path_or_file, (str, Path)):
            raise PopsimError(f"serialize needs a file path or a binary file object, found "
                              f"{type(path_or_file).__name__}")
        try:
            write_executable(path_or_file, self.lowered, self.options)
        except OSError as e:
            raise PopsimError(f"cannot write the executable to {getattr(path_or_file, 'name', path_or_file)}: "
                              f"{e.strerror or e}") from None

    @staticmethod
    def deserialize(path_or_file: Union[str, Path, BinaryIO]) -> "Executable":
        """Read an executable written by ``serialize`` from a file path or a binary file
        object. The file's libraries run when an Engine is built from it: like pickle,
        load only files you trust. A malformed file raises PopsimError."""
        if not hasattr(path_or_file, "read") and not isinstance(path_or_file, (str, Path)):
            raise PopsimError(f"deserialize needs a file path or a binary file object, found "
                              f"{type(path_or_file).__name__}")
        lowered, options = read_executable(path_or_file)
        return Executable(lowered, options, CompilationInfo(cache_reason="deserialized from a file"))


# -- compiling -----------------------------------------------------------------------------------
def _cache_dir(options: EngineOptions) -> Optional[Path]:
    explicit = options["popsim.cacheDir"] or config.explicit_cache_dir()
    return usable_dir(Path(explicit).expanduser() / "executables") if explicit else None


def compile_executable(graph: Graph, programs: Union[Program, Sequence[Program]],
                       options: Optional[Mapping[str, object]] = None) -> "Executable":
    """Compile ``programs`` for ``graph`` (no device needed): validate, lay out memory,
    lower programs and compute sets. Uses the executable cache when it is on.

    :raises GraphMemoryAllocationError: tiles over their memory (unless the option
        debug.allowOutOfMemory is set); ``.executable`` holds what was compiled."""
    configure_logging()
    opts = options if isinstance(options, EngineOptions) else EngineOptions(options)
    if not isinstance(graph, Graph):
        raise errors.TypeError(f"compile needs a Graph, found {type(graph).__name__}")
    if isinstance(programs, Program):
        progs = [programs]
    elif isinstance(programs, (list, tuple)):
        progs = list(programs)
    else:
        raise errors.TypeError(f"programs must be a Program or a list of them, found {type(programs).__name__}")
    for i, p in enumerate(progs):
        if not isinstance(p, Program):
            raise errors.TypeError(f"program {i} is a {type(p).__name__}, not a Program")
    if not progs:
        raise PopsimError("an Engine needs at least one program")
    state = graph.description
    interpreted = (config.codelet_mode() or opts["popsim.codeletMode"]) == "interpreted"
    compile_options = {k: opts[k] for k in COMPILE_OPTIONS}
    compile_options["popsim.codeletMode"] = "interpreted" if interpreted else "compiled"
    compile_options["popsim.checkRaces"] = config.check_races() or opts["popsim.checkRaces"]
    timings: Dict[str, float] = {}
    info = CompilationInfo(phases=timings)
    cache = _cache_dir(opts)
    path = None
    if interpreted:
        info.cache_reason = "not cached: interpreted vertices run Python classes"
    elif cache is None:
        info.cache_reason = "executable cache off (set the option popsim.cacheDir or POPSIM_CACHE_DIR)"
    else:
        with phase("digest", timings):
            info.cache_key = graph_digest(state, progs, repr(sorted(compile_options.items())), __version__)
        path = cache / f"{info.cache_key}.popsimexe"
        present = path.exists()
        if present and is_verified(path, "executable"):
            try:
                with phase("load cached executable", timings):
                    # is_verified checked its sha256 (so no CRC-32s), not who wrote it: it is
                    # checked like any file; its initial values come from the graph
                    lowered, options = read_executable(path, verified=True, with_values=False)
                with phase("pack initial values", timings):
                    _pack_graph_values(lowered, state)
                exe = Executable(lowered, options, CompilationInfo(from_cache=True, cache_reason=f"loaded from {path}",
                                                                   cache_key=info.cache_key, cache_path=str(path),
                                                                   phases=timings))
                logger.info("executable %s loaded from the cache", info.cache_key)
                return exe
            except PopsimError as e:
                info.cache_reason = f"cache entry unusable ({e}); compiled again"
                logger.warning("cached executable %s is unusable (%s); compiling it again", path, e)
        elif present:
            info.cache_reason = "cache entry unusable (it does not match its stored digest); compiled again"
        else:
            info.cache_reason = f"no cached executable for this graph (key {info.cache_key}); compiled and saved"
    logger.debug("compiling: %d variables, %d compute sets, %d vertices, %d programs", len(state.table),
                 len(state.compute_sets), sum(len(cs.vertices) for cs in state.compute_sets), len(progs))
    with phase("lower graph", timings), lowering_heap():
        lowered = lower_graph(state, progs, interpreted, timings, compile_options["popsim.checkRaces"] == "true",
                              compile_options["debug.variableLiveness"] == "true")
    exe = Executable(lowered, compile_options, info)
    if lowered.tiles_out_of_memory.size and not opts.flag("debug.allowOutOfMemory"):
        error = GraphMemoryAllocationError(out_of_memory_message(lowered.layout, lowered.variable_names,
                                                                 lowered.target))
        error.executable = exe
        raise error
    if path is not None:
        try:
            with phase("save to cache", timings):
                data = io.BytesIO()
                write_executable(data, replace(lowered, init_image=None), compile_options)  # values: data
                store_verified(path, data.getvalue())
        except (PopsimError, OSError) as e:
            info.cache_reason = f"compiled; could not save to the cache ({e})"
            logger.warning("could not save executable %s to the cache: %s", info.cache_key, e)
    return exe


def evict_from_cache(exe: Executable, why: str) -> None:
    """Remove the executable-cache entry ``exe`` was loaded from: it passed the file's
    checks but the core refused it (``why``), so the next compile lowers the graph again."""
    logger.warning("cached executable %s is unusable (%s); compiling it again", exe.compilation.cache_path, why)
    evict(Path(exe.compilation.cache_path))


def _pack_graph_values(lowered: Lowered, state) -> None:
    """Give a cached executable (stored without its initial values) the graph's values,
    packed in its init table's order; PopsimError when they do not fit its table."""
    try:
        lowered.init_image = pack_values(state, lowered.init_sizes)
        check_initial_image(lowered)
    except ValueError as e:
        raise PopsimError(f"its initial image does not fit the graph's initial values ({e})") from None
