"""Executables: a graph and its programs compiled once, saved, loaded, cached.

``compile_graph(graph, programs, options)`` lowers a graph (or finds the result in the
executable cache); ``exe.serialize(path)`` writes it as a versioned file (a zip of
numpy arrays and a JSON header; every member carries the zip format's CRC-32, so
corruption is detected; no pickle) that embeds the codelet
libraries it runs; ``Executable.deserialize(path)`` reads it back, and
``Engine(exe)`` runs it without the graph.

The cache is on when the ``popsim.cacheDir`` option or the POPSIM_CACHE_DIR variable
names a directory; its key is a content digest of the graph, programs, options and
target (popsim/digest.py), so building the same program again skips lowering.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Dict, Optional, Sequence, Union

import numpy as np

from . import config
from .codelet.compiler import cache_dir as codelet_cache_dir
from .digest import graph_digest
from .errors import GraphMemoryAllocationError, PopsimError
from .lower import HostHandle, Lowered, StreamRecord, lower_graph
from .lower.compute_sets import VertexTables
from .lower.cost_model import StepCost
from .lower.layout import MemoryLayout, out_of_memory_message
from .lower.programs import HostCallback, LoweredPrograms, Step
from .log import configure as configure_logging
from .log import logger, phase
from .options import EngineOptions
from .program import Program
from .report.files import write_auto_report_for
from .report.report import CompilationInfo
from .target import RelativeSyncDelayType, Target, TargetType
from .types import as_type
from .version import __version__

__all__ = ["Executable", "compile_graph", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_MAGIC = "popsim-executable"

# The options that shape what is compiled (the rest only affect how it runs or reports).
COMPILE_OPTIONS = ("debug.allowOutOfMemory", "popsim.codeletMode", "popsim.checkRaces")


class Executable:
    """A compiled graph and its programs; give it to ``Engine`` to run."""

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
    def serialize(self, path: Union[str, Path]) -> None:
        """Write the executable to ``path`` (it embeds its codelet libraries)."""
        if self.interpreted:
            raise PopsimError("an executable compiled with popsim.codeletMode=interpreted runs Python vertex classes "
                              "and cannot be saved; compile it in compiled mode to serialize it")
        header, arrays = _encode(self)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
            for name, a in arrays.items():
                with z.open(name + ".npy", "w") as f:
                    np.lib.format.write_array(f, np.ascontiguousarray(a), allow_pickle=False)
            z.writestr("header.json", json.dumps(header))
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(buffer.getvalue())
        os.replace(tmp, path)

    @staticmethod
    def deserialize(path: Union[str, Path]) -> "Executable":
        """Read an executable written by ``serialize``."""
        try:
            with zipfile.ZipFile(path) as z:
                header = json.loads(z.read("header.json"))
                if header.get("magic") != _MAGIC:
                    raise PopsimError(f"{path} is not a popsim executable")
                if header.get("format") != FORMAT_VERSION:
                    raise PopsimError(f"executable {path} has format version {header.get('format')}, this popsim "
                                      f"(version {__version__}) reads version {FORMAT_VERSION}: compile it again")
                # zipfile checks each member's CRC-32 as it reads it (BadZipFile if it fails)
                arrays = {n[:-4]: np.lib.format.read_array(io.BytesIO(z.read(n)), allow_pickle=False)
                          for n in z.namelist() if n.endswith(".npy")}
            return _decode(header, arrays)
        except PopsimError:
            raise
        except (OSError, zipfile.BadZipFile, ValueError, KeyError, TypeError, EOFError) as e:
            raise PopsimError(f"cannot read executable {path}: {type(e).__name__}: {e}; it is not a popsim "
                              "executable or it is corrupted (compile it again)") from None


# -- compiling -----------------------------------------------------------------------------------
def _cache_dir(options: EngineOptions) -> Optional[Path]:
    explicit = options["popsim.cacheDir"] or config.explicit_cache_dir()
    return Path(explicit).expanduser() / "executables" if explicit else None


def compile_graph(graph, programs: Union[Program, Sequence[Program]], options=None) -> "Executable":
    """Compile ``programs`` for ``graph`` (no device needed): validate, lay out memory,
    lower programs and compute sets. Uses the executable cache when it is on."""
    configure_logging()
    opts = options if isinstance(options, EngineOptions) else EngineOptions(options)
    progs = [programs] if isinstance(programs, Program) else list(programs)
    for i, p in enumerate(progs):
        if not isinstance(p, Program):
            raise TypeError(f"program {i} is a {type(p).__name__}, not a Program")
    if not progs:
        raise PopsimError("an Engine needs at least one program")
    state = graph._state
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
        if path.exists():
            try:
                with phase("load cached executable", timings):
                    exe = Executable.deserialize(path)
                exe.compilation = CompilationInfo(from_cache=True, cache_reason=f"loaded from {path}",
                                                  cache_key=info.cache_key, phases=timings)
                logger.info("executable %s loaded from the cache", info.cache_key)
                return exe
            except PopsimError as e:
                info.cache_reason = f"cache entry unusable ({e}); compiled again"
        else:
            info.cache_reason = f"no cached executable for this graph (key {info.cache_key}); compiled and saved"
    logger.debug("compiling: %d variables, %d compute sets, %d vertices, %d programs", len(state.table),
                 len(state.compute_sets), sum(len(cs.vertices) for cs in state.compute_sets), len(progs))
    with phase("lower graph", timings):
        lowered = lower_graph(state, progs, interpreted, timings, compile_options["popsim.checkRaces"] == "true")
    exe = Executable(lowered, compile_options, info)
    if lowered.tiles_out_of_memory.size and not opts.flag("debug.allowOutOfMemory"):
        written = write_auto_report_for(exe, opts, None)
        note = (f"Report saved to: {written[0]}" if written else
                "No report was written: set the options autoReport.all=true and autoReport.directory to get one.")
        raise GraphMemoryAllocationError(out_of_memory_message(lowered.layout, lowered.variable_names,
                                                               lowered.target, note))
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with phase("save to cache", timings):
                exe.serialize(path)
        except OSError as e:
            info.cache_reason = f"compiled; could not save to the cache ({e})"
    return exe


# -- encoding: everything as arrays plus a JSON header ------------------------------------------
def _target_to_json(t: Target) -> dict:
    d = {f.name: getattr(t, f.name) for f in dataclasses.fields(t) if f.name != "extra"}
    d["relative_sync_delay"] = t.relative_sync_delay.value
    d["target_type"] = t.target_type.value
    return d


def _target_from_json(d: dict) -> Target:
    d = dict(d)
    d["relative_sync_delay"] = RelativeSyncDelayType(d["relative_sync_delay"])
    d["target_type"] = TargetType(d["target_type"])
    return Target(**d)


def _encode(exe: Executable):
    lw = exe.lowered
    p, v, m = lw.programs, lw.vertices, lw.layout
    arrays = {
        "instrs": p.instrs, "entries": p.entries, "cases": p.cases, "switch_begin": p.switch_begin,
        "switch_default": p.switch_default, "step_costs": p.step_costs,
        "segs": lw.segs, "table_begin": lw.table_begin, "table_overlaps": lw.table_overlaps,
        "init_image": lw.init_image, "tiles_out_of_memory": lw.tiles_out_of_memory,
        "vertices": v.vertices, "fields": v.fields, "spans": v.spans, "groups": v.groups,
        "compute_sets": v.compute_sets, "row_type": v.row_type, "row_index": v.row_index, "row_cs": v.row_cs,
        "group_tiles": v.group_tiles, "var_offsets": m.var_offsets, "region_var": m.region_var,
        "region_tile": m.region_tile, "region_bytes": m.region_bytes,
    }
    for name, values in m.by_category.items():
        arrays[f"memory.{name}"] = values
    for i, step in enumerate(p.steps):
        if step.cost.tile_compute is not None:
            arrays[f"step{i}.compute"] = step.cost.tile_compute
        if step.cost.tile_exchange is not None:
            arrays[f"step{i}.exchange"] = step.cost.tile_exchange
    libraries = sorted({path for path, _ in v.codelets})
    for k, lib in enumerate(libraries):
        arrays[f"library{k}"] = np.frombuffer(Path(lib).read_bytes(), np.uint8)
    header = {
        "magic": _MAGIC, "format": FORMAT_VERSION, "popsim": __version__, "target": _target_to_json(lw.target),
        "options": exe.options, "arena_bytes": m.arena_bytes, "memory_categories": list(m.by_category),
        "num_loop_slots": p.num_loop_slots, "messages": p.messages, "program_streams": p.program_streams,
        "steps": [{"name": s.name, "kind": s.kind, "program": s.program, "compute_set": s.compute_set,
                   "exchange_bytes": s.cost.exchange_bytes, "host_bytes": s.cost.host_bytes} for s in p.steps],
        "callbacks": [[c.title, c.table, c.dtype.name, list(c.shape)] for c in p.callbacks],
        "streams": [[s.handle, s.dtype.name, s.num_elements, s.to_device, s.index] for s in lw.streams],
        "host_writes": {h: [x.table, x.dtype.name, list(x.shape)] for h, x in lw.host_writes.items()},
        "host_reads": {h: [x.table, x.dtype.name, list(x.shape)] for h, x in lw.host_reads.items()},
        "init_table": lw.init_table, "program_names": lw.program_names, "variable_names": lw.variable_names,
        "graph_counts": lw.graph_counts,
        "codelets": [[libraries.index(path), symbol] for path, symbol in v.codelets],
        "library_names": [Path(lib).name for lib in libraries],
        "state_bytes": v.state_bytes, "type_names": v.type_names, "type_fields": v.type_fields,
        "type_sources": v.type_sources, "cs_names": v.cs_names, "cs_buffer_bytes": v.cs_buffer_bytes,
        "cs_shared_bytes": v.cs_shared_bytes,
        "cs_groups": v.cs_groups, "warnings": v.warnings,
    }
    return header, arrays


def _decode(h: dict, a: Dict[str, np.ndarray]) -> Executable:
    libraries = []
    store = codelet_cache_dir()
    store.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate(h["library_names"]):
        data = a[f"library{k}"].tobytes()
        target = store / f"exe-{hashlib.sha256(data).hexdigest()[:32]}-{name}"
        if not target.exists():
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        libraries.append(str(target))
    steps = []
    for i, s in enumerate(h["steps"]):
        cost = StepCost(a["step_costs"][i].copy(), a.get(f"step{i}.compute"), a.get(f"step{i}.exchange"),
                        s["exchange_bytes"], s["host_bytes"])
        steps.append(Step(s["name"], s["kind"], cost, s["program"], s["compute_set"]))
    programs = LoweredPrograms(
        instrs=a["instrs"], entries=a["entries"], cases=a["cases"], switch_begin=a["switch_begin"],
        switch_default=a["switch_default"], num_loop_slots=h["num_loop_slots"], steps=steps,
        step_costs=a["step_costs"],
        callbacks=[HostCallback(t, table, as_type(dt), tuple(shape)) for t, table, dt, shape in h["callbacks"]],
        messages=h["messages"], program_streams=h["program_streams"])
    vertices = VertexTables(
        vertices=a["vertices"], fields=a["fields"], spans=a["spans"], groups=a["groups"],
        compute_sets=a["compute_sets"], codelets=[(libraries[k], sym) for k, sym in h["codelets"]],
        state_bytes=h["state_bytes"], row_type=a["row_type"], row_index=a["row_index"], row_cs=a["row_cs"],
        type_names=h["type_names"], type_fields=h["type_fields"], type_sources=h["type_sources"],
        cs_names=h["cs_names"], cs_buffer_bytes=h["cs_buffer_bytes"],
        cs_shared_bytes=h.get("cs_shared_bytes", [0] * len(h["cs_names"])), group_tiles=a["group_tiles"],
        cs_groups=[tuple(g) for g in h["cs_groups"]], warnings=h["warnings"], vertex_types=None)
    layout = MemoryLayout(h["arena_bytes"], a["var_offsets"], None, a["region_var"], a["region_tile"],
                          a["region_bytes"], {c: a[f"memory.{c}"] for c in h["memory_categories"]})

    def handles(d):
        return {name: HostHandle(name, table, as_type(dt), tuple(shape)) for name, (table, dt, shape) in d.items()}
    lowered = Lowered(
        target=_target_from_json(h["target"]), layout=layout, programs=programs, vertices=vertices,
        segs=a["segs"], table_begin=a["table_begin"], table_overlaps=a["table_overlaps"],
        streams=[StreamRecord(hd, as_type(dt), n, to_dev, idx) for hd, dt, n, to_dev, idx in h["streams"]],
        host_writes=handles(h["host_writes"]), host_reads=handles(h["host_reads"]), init_table=h["init_table"],
        init_image=a["init_image"], tiles_out_of_memory=a["tiles_out_of_memory"],
        program_names=h["program_names"], variable_names=h["variable_names"], graph_counts=h["graph_counts"])
    return Executable(lowered, h["options"], CompilationInfo(cache_reason="deserialized from a file"))

