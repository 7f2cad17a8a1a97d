"""Memory layout: where each variable lives on the host, and what each tile holds.

Storage is one arena with every variable and constant row-major at a 16-byte aligned
offset; the tile mapping is accounting, not storage. Per tile, each contiguous
region of a variable is counted padded to 8 bytes (the 64-bit loads the IPU's vector
instructions need), under the category "variables" or "constants".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, cast

import numpy as np

from ..codec import NOT_SAVED
from ..errors import InvalidTileMappingError
from ..runs import MappingIndex
from ..target import Target

ARENA_ALIGNMENT = 16
TILE_REGION_ALIGNMENT = 8
MEMORY_CATEGORIES = ("variables", "constants", "vertex_state", "edge_descriptors", "exchange_buffers",
                     "exchange_code", "vertex_code", "control_code", "stack")


def _round_up(x: np.ndarray, align: int) -> np.ndarray:
    return (x + align - 1) // align * align


@dataclass
class MemoryLayout:
    arena_bytes: int
    var_offsets: np.ndarray  # byte offset of each variable in the arena
    index: Optional[MappingIndex] = field(metadata=NOT_SAVED)  # tile of every mapped element id (lowering only)
    # One row per (variable, tile) region: which variable, which tile, bytes (padded).
    region_var: np.ndarray
    region_tile: np.ndarray
    region_bytes: np.ndarray
    by_category: Dict[str, np.ndarray] = field(default_factory=dict)  # category -> bytes per tile
    # With variable liveness (liveness.py): per tile, the bytes of "variables" that
    # not-always-live variables take, sharing memory; per step, their bytes live then.
    not_always_live: Optional[np.ndarray] = None
    step_live: Optional[np.ndarray] = None

    @property
    def tile_totals(self) -> np.ndarray:
        return cast(np.ndarray, sum(self.by_category.values()))  # (a sum of arrays: not the empty sum's 0)

    def allocate(self, nbytes: int, tile: int, category: str) -> int:
        """Arena space after the variables (exchange buffers, vertex state values),
        counted on ``tile`` under ``category``; returns its offset."""
        offset = self.arena_bytes
        self.arena_bytes += (max(int(nbytes), 0) + ARENA_ALIGNMENT - 1) // ARENA_ALIGNMENT * ARENA_ALIGNMENT
        self.account(tile, category, nbytes)
        return offset

    def allocate_many(self, nbytes: np.ndarray, tiles: np.ndarray, category: str) -> np.ndarray:
        """``allocate`` for many buffers at once (in order); returns their offsets."""
        nbytes = np.maximum(np.asarray(nbytes, np.int64), 0)
        sizes = _round_up(nbytes, ARENA_ALIGNMENT)
        offsets = self.arena_bytes + np.cumsum(sizes) - sizes
        self.arena_bytes += int(sizes.sum())
        self.account_many(np.asarray(tiles, np.int64), category, nbytes)
        return offsets

    def account(self, tile: int, category: str, nbytes: int) -> None:
        """Count ``nbytes`` (padded like tensor regions) on ``tile`` under ``category``."""
        self.by_category[category][tile] += (nbytes + TILE_REGION_ALIGNMENT - 1) // TILE_REGION_ALIGNMENT * \
            TILE_REGION_ALIGNMENT

    def account_many(self, tiles: np.ndarray, category: str, nbytes: np.ndarray) -> None:
        np.add.at(self.by_category[category], tiles, _round_up(np.asarray(nbytes, np.int64), TILE_REGION_ALIGNMENT))

    def largest_on_tile(self, tile: int, names: List[str], n: int = 5) -> List[Tuple[str, int]]:
        """(name, bytes) of the ``n`` largest variables on ``tile`` (``names``: by variable index)."""
        sel = np.flatnonzero(self.region_tile == tile)
        per_var: Dict[int, int] = {}
        for v, b in zip(self.region_var[sel].tolist(), self.region_bytes[sel].tolist()):
            per_var[v] = per_var.get(v, 0) + b
        top = sorted(per_var.items(), key=lambda kv: -kv[1])[:n]
        return [(names[v], b) for v, b in top]


def plan_memory(variables, target: Target) -> MemoryLayout:
    """Arena offsets, the global mapping index and per-tile bytes; raises
    InvalidTileMappingError for unmapped elements on targets that need a mapping."""
    n = len(variables)
    nbytes = np.fromiter((v.size * v.dtype.size for v in variables), np.int64, n)
    padded = _round_up(nbytes, ARENA_ALIGNMENT)
    offsets = np.zeros(n, np.int64)
    if n > 1:
        np.cumsum(padded[:-1], out=offsets[1:])
    arena_bytes = int(padded.sum())

    need_mapping = target.requires_tile_mapping
    whole_var, whole_tile = [], []
    part_var, part_b, part_e, part_t = [], [], [], []
    unmapped = []
    for i, v in enumerate(variables):
        m = v.mapping
        if m.whole_tile is not None:
            whole_var.append(i)
            whole_tile.append(m.whole_tile)
            continue
        if v.size == 0:
            continue
        if need_mapping:
            gap = m.first_unmapped()
            if gap is not None:
                unmapped.append((v, gap))
                continue
        b, e, t = m.resolved()
        if b.size:
            part_var.append(np.full(b.size, i, np.int64))
            part_b.append(b)
            part_e.append(e)
            part_t.append(t)
    if unmapped:
        raise _unmapped_error(unmapped)

    bases = np.fromiter((v.base for v in variables), np.int64, n)
    sizes = np.fromiter((v.size for v in variables), np.int64, n)
    itemsize = np.fromiter((v.dtype.size for v in variables), np.int64, n)
    wv = np.asarray(whole_var, np.int64)
    region_var = np.concatenate([wv] + part_var)
    begins = np.concatenate([np.zeros(wv.size, np.int64)] + part_b)
    ends = np.concatenate([sizes[wv]] + part_e)
    region_tile = np.concatenate([np.asarray(whole_tile, np.int64)] + part_t)
    index = MappingIndex(bases[region_var] + begins, bases[region_var] + ends, region_tile)

    if not need_mapping:  # CPU: everything lives on its single tile
        region_var = np.arange(n, dtype=np.int64)
        region_tile = np.zeros(n, np.int64)
        begins, ends = np.zeros(n, np.int64), sizes
    region_bytes = _round_up((ends - begins) * itemsize[region_var], TILE_REGION_ALIGNMENT)
    is_constant = np.fromiter((v.is_constant for v in variables), bool, n)
    by_category = {name: np.zeros(target.num_tiles, np.int64) for name in MEMORY_CATEGORIES}
    for name, mask in (("variables", ~is_constant[region_var]), ("constants", is_constant[region_var])):
        by_category[name] = np.bincount(region_tile[mask], weights=region_bytes[mask],
                                        minlength=target.num_tiles).astype(np.int64)
    return MemoryLayout(arena_bytes, offsets, index, region_var, region_tile, region_bytes, by_category)


def _unmapped_error(unmapped) -> InvalidTileMappingError:
    v, (b, e) = unmapped[0]
    more = f" ({len(unmapped) - 1} more tensors are also incompletely mapped)" if len(unmapped) > 1 else ""
    return InvalidTileMappingError(
        f"{v.kind} '{v.name}' ({v.dtype.name} {list(v.shape)}) has elements with no tile: flat elements "
        f"[{b}, {e}) are unmapped{more}. Every element must be mapped before an Engine is built: call "
        f"graph.set_tile_mapping('{v.name}' or a slice of it, tile), or create it with "
        "mapping=VariableMappingMethod.LINEAR")


def tiles_over(layout: MemoryLayout, target: Target) -> np.ndarray:
    """Tiles whose memory exceeds the target's bytes per tile."""
    return np.flatnonzero(layout.tile_totals > target.bytes_per_tile)


def out_of_memory_message(layout: MemoryLayout, names: List[str], target: Target, report_note: str = "") -> str:
    """What GraphMemoryAllocationError says: how many tiles, the worst with its largest
    tensors, the next worst, how to fix it, and where the report is."""
    totals = layout.tile_totals
    over = tiles_over(layout, target)
    worst = over[np.argsort(-totals[over], kind="stable")][:5]
    limit = target.bytes_per_tile
    first = int(worst[0])
    largest = ", ".join(f"'{name}' ({b:,} bytes)" for name, b in layout.largest_on_tile(first, names))
    others = ", ".join(f"tile {int(t)} ({int(totals[t]):,} bytes)" for t in worst[1:])
    msg = (f"Out of memory: {over.size} tile(s) need more than their {limit:,} bytes. Worst: tile {first} needs "
           f"{int(totals[first]):,} bytes ({100.0 * totals[first] / limit:.1f}% of {limit:,}); its largest tensors: "
           f"{largest}.")
    if others:
        msg += f" Next worst: {others}."
    msg += (" Spread large tensors over more tiles (set_tile_mapping with a mapping, or "
            "mapping=VariableMappingMethod.LINEAR), or set the option debug.allowOutOfMemory=true to build the "
            "engine anyway and inspect its report.")
    return msg + (" " + report_note if report_note else "")
