"""poprand's seeds: PopLibs' checks of a seed tensor, the seed state each graph keeps on
the device, set_seed, and the state an op draws from.

The seed state is a 4-word UNSIGNED_INT tensor ``[seed0, seed1, modifier, stream]`` on
tile 0 of the graph. ``set_seed`` writes it (stream 0); an op given ``seed=None`` draws
from it and then moves it to the next stream (a ``poprand::NextStream`` vertex), as the
hardware generators move on, so two such ops never repeat each other's numbers. An op
given a seed tensor draws from a state of its own made by ``poprand::SetSeed`` from that
seed and its seed modifier, leaving the graph's state as it was: PopLibs saves the
hardware seeds, sets them from the seed, generates and restores them.
"""
import weakref

import numpy as np

import popsim
from popsim.program import Execute

from popsim.poputil import PoplibsError
from . import codelets

# The graph's state before any set_seed: seed (0, 0), modifier 0, stream 0.
DEFAULT_STATE = (0, 0, 0, 0)
STATE_WORDS = 4

_graph_states: "weakref.WeakKeyDictionary[popsim.Graph, popsim.Tensor]" = weakref.WeakKeyDictionary()  # its seed state
_graphs_with_codelets: "weakref.WeakKeyDictionary[popsim.Graph, bool]" = weakref.WeakKeyDictionary()


def add_codelets(graph) -> None:
    """Register poprand's vertices with ``graph`` (idempotent; ops call it themselves)."""
    if graph not in _graphs_with_codelets:
        graph.add_codelets(codelets)
        _graphs_with_codelets[graph] = True


def check_owned(graph, tensor, what: str, op: str) -> None:
    """PoplibsError unless ``tensor`` is a tensor of ``graph``."""
    if not isinstance(tensor, popsim.Tensor):
        raise PoplibsError(f"{op}: {what} must be a popsim.Tensor, found {type(tensor).__name__}")
    if not graph.owns(tensor):
        raise PoplibsError(f"{op}: {what} '{tensor.name}' belongs to a different graph; create it in the "
                           "graph the op is built in (or in one of its virtual graphs)")


def check_seed(graph, seed, op: str) -> None:
    """PopLibs' seedTensorChecks: rank 1, 2 elements, UNSIGNED_INT."""
    check_owned(graph, seed, "seed", op)
    if seed.rank != 1:
        raise PoplibsError(f"{op}: seed tensor '{seed.name}' must be of rank 1, found rank {seed.rank} "
                           f"(shape {list(seed.shape)}); pass a tensor of shape [2]")
    if seed.num_elements() != 2:
        raise PoplibsError(f"{op}: seed tensor '{seed.name}' must have 2 elements, found "
                           f"{seed.num_elements()} (shape {list(seed.shape)})")
    if seed.dtype is not popsim.UNSIGNED_INT:
        raise PoplibsError(f"{op}: seed tensor '{seed.name}' must be of type UNSIGNED_INT, found "
                           f"{seed.dtype.name}")


def check_modifier(seed_modifier, op: str) -> int:
    """The seed modifier as an int in [0, 2**32)."""
    if isinstance(seed_modifier, (bool, np.bool_)) or not isinstance(seed_modifier, (int, np.integer)) \
            or not 0 <= int(seed_modifier) < 2 ** 32:
        raise PoplibsError(f"{op}: seed_modifier must be an unsigned 32-bit integer, found {seed_modifier!r}")
    return int(seed_modifier)


def graph_state(graph):
    """The graph's seed state tensor, made (with the default seed) on first use."""
    state = _graph_states.get(graph)
    if state is None:
        state = graph.add_variable(popsim.UNSIGNED_INT, (STATE_WORDS,), "poprand/seedState")
        graph.set_tile_mapping(state, 0)
        graph.set_initial_value(state, np.array(DEFAULT_STATE, np.uint32))
        _graph_states[graph] = state
    return state


def _write_state(graph, seed, modifier: int, state, prog, name: str) -> None:
    """One poprand::SetSeed vertex, on the tile of the state, writing it from seed and modifier."""
    add_codelets(graph)
    cs = graph.add_compute_set(f"{name}/setSeed")
    v = graph.add_vertex(cs, "poprand::SetSeed", {"seed": seed, "state": state})
    graph.set_initial_value(v["modifier"], modifier)
    graph.set_tile_mapping(v, _first_tile(graph, state))
    graph.set_perf_estimate(v, SET_SEED_CYCLES)
    prog.add(Execute(cs))


SET_SEED_CYCLES = 20  # entry, two loads and four stores: a small fixed cost
NEXT_STREAM_CYCLES = 10


def _first_tile(graph, tensor) -> int:
    mapping = graph.get_tile_mapping(tensor)
    return next(tile for tile, intervals in enumerate(mapping) if intervals)


def set_seed(graph, seed, seed_modifier, prog, name: str = "") -> None:
    """PopLibs' setSeed: later ops given ``seed=None`` draw from ``seed`` and
    ``seed_modifier`` (from stream 0, moving on by one stream per op)."""
    op = "poprand.set_seed"
    check_seed(graph, seed, op)
    modifier = check_modifier(seed_modifier, op)
    _write_state(graph, seed, modifier, graph_state(graph), prog, name or "poprand/setSeed")


def op_state(graph, seed, modifier: int, prog, name: str):
    """The state an op draws from, and a function that adds what follows the op."""
    if seed is None:
        state = graph_state(graph)

        def next_stream():
            cs = graph.add_compute_set(f"{name}/nextStream")
            v = graph.add_vertex(cs, "poprand::NextStream", {"state": state})
            graph.set_tile_mapping(v, _first_tile(graph, state))
            graph.set_perf_estimate(v, NEXT_STREAM_CYCLES)
            prog.add(Execute(cs))
        return state, next_stream
    state = graph.add_variable(popsim.UNSIGNED_INT, (STATE_WORDS,), f"{name}/seedState")
    graph.set_tile_mapping(state, _first_tile(graph, seed))
    _write_state(graph, seed, modifier, state, prog, name)
    return state, lambda: None
