"""The sort's compare-and-swap vertices (PopLibs' ``popops::CompareAndSwapAtDistance<T>``
and ``...KeyVal<K,V>``, as in BitonicTopK.cpp) and their cycle model.

One MultiVertex a tile and stage owns one contiguous region of a work tensor (``keys``,
and ``values`` moved with them) and a worklist, a state vector ``[workers, then per
worker: first position, entries, m0, repeats0, m1, repeats1, ..]``: from its first
position a worker takes ``repeats`` pieces of ``2m`` elements for each entry, one after
the other; in a piece element ``j < m`` is compared with element ``m + j`` (``flipped``:
with ``2m - 1 - j``) and the one that comes first is put at ``j``. So the vertex's state
is a few words a worker however many elements it sorts, as PopLibs' worklists are.
"""
from typing import List, Sequence, Tuple

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, InOut, MultiVertex, Vector

from ..poputil.util import ensure_vertex
from ..poputil.vertex_helpers import named_vertex_class

__all__ = ["KEY_TYPES", "COMPARE", "COMPARE_KEY_VALUE", "compare_and_swap_cycles", "ensure_compare",
           "worker_sections", "worker_cycles"]

KEY_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT)


def _compare_template(key_value: bool):
    name = "popops::CompareAndSwapAtDistanceKeyVal" if key_value else "popops::CompareAndSwapAtDistance"
    domains = {"key_type": KEY_TYPES, "value_type": KEY_TYPES} if key_value else {"key_type": KEY_TYPES}
    domains["descending"] = [False, True]

    def factory(key_type, value_type=None, descending=False):
        # One class body for both templates: the key-value form declares ``values`` and moves
        # them with the keys, under ``if``s on key_value that the translator decides.
        class CompareAndSwapAtDistance(MultiVertex):
            keys: InOut[Vector[key_type]]
            if key_value:
                values: InOut[Vector[value_type]]
            worklist: Vector[UNSIGNED_INT]
            flipped: UNSIGNED_INT

            def compute(self, worker_id):
                if worker_id >= self.worklist[0]:
                    return True
                at = 1
                for w in range(worker_id):
                    at += 2 + 2 * self.worklist[at + 1]
                pos = self.worklist[at]
                for e in range(self.worklist[at + 1]):
                    m = self.worklist[at + 2 + 2 * e]
                    for r in range(self.worklist[at + 3 + 2 * e]):
                        for j in range(m):
                            p = pos + m + j
                            if self.flipped != 0:
                                p = pos + 2 * m - 1 - j
                            x = self.keys[pos + j]
                            y = self.keys[p]
                            if (y > x) if descending else (y < x):
                                self.keys[pos + j] = y
                                self.keys[p] = x
                                if key_value:
                                    v = self.values[pos + j]
                                    self.values[pos + j] = self.values[p]
                                    self.values[p] = v
                        pos += 2 * m
                return True
        return named_vertex_class(CompareAndSwapAtDistance, name.split("::")[1])

    if key_value:
        def template(key_type, value_type, descending):
            return factory(key_type, value_type, descending)
    else:
        def template(key_type, descending):
            return factory(key_type, None, descending)
    template.__name__ = name.split("::")[1]
    return popsim.vertex_template(name, **domains)(template)


COMPARE = _compare_template(False)
COMPARE_KEY_VALUE = _compare_template(True)


def worker_sections(worklist: Sequence[int]) -> List[Tuple[int, List[Tuple[int, int]]]]:
    """The worklist read back: per worker ``(first position, [(m, repeats), ..])``."""
    sections, at = [], 1
    for _ in range(int(worklist[0]) if len(worklist) else 0):
        entries = int(worklist[at + 1])
        sections.append((int(worklist[at]), [(int(worklist[at + 2 + 2 * e]), int(worklist[at + 3 + 2 * e]))
                                             for e in range(entries)]))
        at += 2 + 2 * entries
    return sections


def worker_cycles(entries: Sequence[Tuple[int, int]], key_value: bool) -> int:
    """popsim's model of one worker (PopLibs' sources give no formula for these
    vertices): 10 cycles of setup, 4 per worklist entry, 3 per piece, then per pair 4
    cycles (load both, compare, store both; 6 when values move with the keys)."""
    pairs = sum(m * repeats for m, repeats in entries)
    return 10 + 4 * len(entries) + 3 * sum(r for _, r in entries) + (6 if key_value else 4) * pairs


def compare_and_swap_cycles(worklist: Sequence[int], key_value: bool) -> int:
    """A vertex's cycles: its busiest worker's (a MultiVertex runs on every worker)."""
    return max([worker_cycles(entries, key_value) for _, entries in worker_sections(worklist)], default=10)


def ensure_compare(graph, key_type, value_type, descending: bool) -> str:
    """The vertex type's name, its codelet and estimator added to ``graph`` if needed."""
    template = COMPARE if value_type is None else COMPARE_KEY_VALUE
    args = (key_type, descending) if value_type is None else (key_type, value_type, descending)
    key_value = value_type is not None

    def estimate(info, target):
        worklist = info.initial_value("worklist")
        return compare_and_swap_cycles([] if worklist is None else list(worklist), key_value)
    return ensure_vertex(graph, template[args], estimate)
