"""The files autoReport writes once, when the engine is built, beside ``profile.json``.

Poplar's autoReport options name them; popsim writes its own counterpart of each:

- ``outputDebugInfo`` -> ``debug.json`` (Poplar: ``debug.cbor``): the debug names popsim
  keeps: programs, the steps of the lowered programs, compute sets, variables, vertex
  types, streams and host handles.
- ``outputLoweredVars`` -> ``vars.json`` (Poplar's lowered-variables report in its JSON
  form): every region of tile memory the layout allocates: each variable's part on each
  tile, and per tile the bytes of each other category (vertex state, exchange buffers...).
- ``outputSerializedGraph`` -> ``serialized_graph.json`` (Poplar: ``serialized_graph.capnp``):
  the graph as built: its tensors with their tile mappings, its compute sets with their
  vertices' types and tiles. Needs the graph (an engine built from an Executable has none).
- ``outputArchive`` -> ``archive.popsimexe`` (Poplar: ``archive.a``, the compiled tile
  binaries): the compiled executable, as ``Executable.serialize`` writes it, which
  ``Executable.deserialize`` reads back.

The JSON files are one object each, with ``format`` and ``version`` fields
(docs/profiling.md lists their fields).
"""
from __future__ import annotations

import json
import os
from typing import Dict

import numpy as np

from ..version import __version__

__all__ = ["COMPILED_FILES", "write_compiled_file", "debug_info", "lowered_vars", "lowered_vars_text",
           "serialized_graph"]

#: output option (autoReport.<output>) -> the file it writes into autoReport.directory.
COMPILED_FILES: Dict[str, str] = {
    "outputDebugInfo": "debug.json",
    "outputLoweredVars": "vars.json",
    "outputSerializedGraph": "serialized_graph.json",
    "outputArchive": "archive.popsimexe",
}
VERSION = 1


def write_compiled_file(output: str, path: str, exe, graph) -> None:
    """Write the file of ``output`` (a key of COMPILED_FILES) to ``path``; ``graph``: the
    GraphDescription the executable was compiled from, or None."""
    try:
        os.unlink(path)  # a new file, as profile.json is (report/files.py says why)
    except OSError:
        pass
    if output == "outputArchive":
        with open(path, "wb") as f:  # a file like the others (serialize(path) would make it private)
            exe.serialize(f)
        return
    if output == "outputLoweredVars":
        text = lowered_vars_text(exe.lowered, graph)
    else:
        doc = debug_info(exe.lowered) if output == "outputDebugInfo" else serialized_graph(graph)
        text = json.dumps(doc, separators=(",", ":"))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _head(kind: str) -> Dict[str, object]:
    return {"format": f"popsim-{kind}", "version": VERSION, "popsim_version": __version__}


def debug_info(lw) -> Dict[str, object]:
    """The debug names of a lowered executable."""
    vt = lw.vertices
    steps = [{"index": i, "name": s.name, "kind": s.kind, "program": s.program,
              "compute_set": vt.cs_names[s.compute_set] if 0 <= s.compute_set < len(vt.cs_names) else None}
             for i, s in enumerate(lw.programs.steps)]
    return {**_head("debug-info"),
            "programs": [{"index": i, "name": n} for i, n in enumerate(lw.program_names)],
            "steps": steps,
            "compute_sets": list(vt.cs_names),
            "variables": list(lw.variable_names),
            "vertex_types": list(vt.type_names),
            "streams": [{"handle": s.handle, "to_device": bool(s.to_device), "type": s.dtype.name,
                         "elements": int(s.num_elements)} for s in lw.streams],
            "host_writes": sorted(lw.host_writes), "host_reads": sorted(lw.host_reads)}


def lowered_vars(lw, graph=None) -> Dict[str, object]:
    """``lowered_vars_text`` as a dict."""
    return json.loads(lowered_vars_text(lw, graph))


def lowered_vars_text(lw, graph=None) -> str:
    """Every region of tile memory, as compact JSON: each variable's part on each tile
    (``category`` ``variable`` or ``constant``; ``tensor`` when the graph is not at hand
    to tell which), then per tile the bytes of each other memory category. Built as text:
    a graph has a region per variable and tile it spans (10^5 and more)."""
    layout, target = lw.layout, lw.target
    constant = None if graph is None else [v.is_constant for v in graph.table.variables]
    # per variable, the fixed parts of its regions' text
    heads, tails = [], []
    for var, (name, offset) in enumerate(zip(lw.variable_names, layout.var_offsets.tolist())):
        category = "tensor" if constant is None else ("constant" if constant[var] else "variable")
        heads.append(f'"name":{json.dumps(name)},"variable":{var},"sizeBytes":')
        tails.append(f',"category":"{category}","isConstant":{"true" if category == "constant" else "false"},'
                     f'"alwaysLive":true,"arenaOffset":{offset}}}}}')
    rows = [f'{{"var":{k},"info":{{"allocated":true,"tile":{tile},{heads[var]}{nbytes}{tails[var]}'
            for k, (var, tile, nbytes) in enumerate(zip(layout.region_var.tolist(), layout.region_tile.tolist(),
                                                        layout.region_bytes.tolist()))]
    for category, per_tile in layout.by_category.items():
        if category in ("variables", "constants"):
            continue
        live = "false" if category == "exchange_buffers" else "true"  # live only while their compute set runs
        for tile in np.flatnonzero(per_tile).tolist():
            rows.append(f'{{"var":{len(rows)},"info":{{"allocated":true,"tile":{tile},"name":"{category}",'
                        f'"sizeBytes":{int(per_tile[tile])},"category":"{category}","isConstant":false,'
                        f'"alwaysLive":{live}}}}}')
    head = json.dumps({**_head("lowered-vars"), "numTiles": target.num_tiles,
                       "targetMemoryInfo": {"tileMemory": target.bytes_per_tile}}, separators=(",", ":"))
    return head[:-1] + ',"vars":[' + ",".join(rows) + "]}"


def serialized_graph(graph) -> Dict[str, object]:
    """The graph as built: tensors (with their tile mappings as [begin, end, tile] rows of
    flat elements) and compute sets (each vertex's type, an index into
    ``vertex_types``, and tile, -1 where none was set)."""
    target = graph.target
    tensors = []
    for v in graph.table.variables:
        rows = np.stack(v.mapping.resolved(), axis=1).tolist() if target.requires_tile_mapping else [[0, v.size, 0]]
        tensors.append({"index": v.index, "name": v.name, "kind": v.kind, "type": v.dtype.name,
                        "shape": list(v.shape), "mapping": rows})
    type_index: Dict[str, int] = {}
    compute_sets = []
    for cs in graph.compute_sets:
        # the per-vertex type column, read as lowering reads it (cs.vertices makes a handle per vertex)
        types = [type_index.setdefault(vt.name, len(type_index)) for vt in cs._types]
        tiles = np.where(cs.vertex_tiles < 0, -1, cs.vertex_tiles).tolist()
        compute_sets.append({"index": cs.index, "name": cs.name, "vertex_type": types, "tile": tiles})
    return {**_head("serialized-graph"),
            "target": {"num_ipus": target.num_ipus, "tiles_per_ipu": target.tiles_per_ipu,
                       "num_tiles": target.num_tiles, "bytes_per_tile": target.bytes_per_tile},
            "replication_factor": graph.replication_factor,
            "tensors": tensors, "vertex_types": list(type_index), "compute_sets": compute_sets,
            "streams": [{"handle": h, "to_device": bool(s.is_host_to_device)} for h, s in graph.streams.items()],
            "host_writes": sorted(graph.host_writes), "host_reads": sorted(graph.host_reads)}
