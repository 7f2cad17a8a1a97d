"""popsim's <poplar/Vertex.hpp> (src/popsim/codelet/include/poplar/Vertex.hpp): vector
edges that act as pointers to their vectors, and checked mode (bounds-checked field
access, POPSIM_CHECKED_CODELETS), run through the ABI and in an engine."""
from pathlib import Path

import numpy as np
import pytest

import popsim
from popsim.codelet import cpp
from popsim.codelet.abi import run_compiled
from popsim.program import Execute


pytestmark = pytest.mark.compiler

DATA = Path(__file__).resolve().parent / "data"
STRICT = "-Wall -Wextra -Werror -pedantic"


def load(name, checked=None, flags=STRICT):
    return {vt.name: vt for vt in cpp.vertex_types_from_file(DATA / name, flags, checked=checked)}


def test_vector_edges_act_as_pointers_to_their_vectors():
    types = load("pointer_edges.cpp")
    x, y = np.array([1.5, -2.0, 7.0], np.float32), np.zeros(3, np.float32)
    assert run_compiled(types["AddOne"], [x, y])[0] == 1
    np.testing.assert_array_equal(y, x + 1)
    assert run_compiled(types["AddOne"], [x, np.zeros(2, np.float32)])[0] == 0   # sizes differ: returns false
    rows = [np.arange(4, dtype=np.int32), np.zeros(0, np.int32), np.arange(2, dtype=np.int32)]
    lengths = np.zeros(3, np.uint32)
    assert run_compiled(types["RowLengths"], [rows, lengths])[0] == 1
    np.testing.assert_array_equal(lengths, [2 * 4 + 100, 0, 2 * 2])


# ---- checked mode ---------------------------------------------------------------------------------
def test_checked_mode_is_a_separate_library_chosen_by_the_environment(monkeypatch):
    monkeypatch.setenv("POPSIM_CHECKED_CODELETS", "0")
    unchecked = load("checked_codelets.cpp")["OffByOne"]
    monkeypatch.setenv("POPSIM_CHECKED_CODELETS", "1")
    checked = load("checked_codelets.cpp")["OffByOne"]
    assert checked.library != unchecked.library
    assert load("checked_codelets.cpp", checked=False)["OffByOne"].library == unchecked.library
    monkeypatch.setenv("POPSIM_CHECKED_CODELETS", "maybe")
    with pytest.raises(popsim.InvalidOptionError, match="POPSIM_CHECKED_CODELETS must be true or false"):
        load("checked_codelets.cpp")


def test_unchecked_access_out_of_range_goes_unnoticed():
    vt = load("checked_codelets.cpp", checked=False)["OffByOne"]
    memory = np.full(8, -1.0, np.float32)      # out is memory[0:4]; memory[4] is someone else's
    ret, ctx = run_compiled(vt, [np.ones(4, np.float32), memory[:4]])
    assert (ret, ctx.error) == (1, 0)
    assert np.all(memory[:4] == 2.0) and memory[4] == 0.0   # written past the end, silently


@pytest.mark.parametrize("vertex,values,field,index,size", [
    ("OffByOne", [np.ones(4, np.float32), np.zeros(4, np.float32)], 1, 4, 4),
    ("RaggedRead", [[np.zeros(2, np.int32), np.zeros(3, np.int32)], np.zeros(1, np.int32)], 0, 3, 3),
    ("StateIndex", [np.arange(5, dtype=np.uint32), np.array([7], np.uint32), np.zeros(1, np.uint32)], 0, 7, 5),
])
def test_checked_access_out_of_range_stops_the_vertex(vertex, values, field, index, size):
    vt = load("checked_codelets.cpp", checked=True)[vertex]
    ret, ctx = run_compiled(vt, values)
    assert (ret, ctx.error) == (-1, 1)   # POPSIM_INDEX_ERROR
    assert (ctx.error_field, ctx.error_index, ctx.error_size) == (field, index, size)


def test_checked_off_by_one_in_an_engine_names_vertex_field_index_and_size(small_device):
    graph = popsim.Graph(small_device)
    graph.add_codelets(DATA / "checked_codelets.cpp", STRICT)   # the test suite runs in checked mode
    src = graph.add_variable(popsim.FLOAT, [4], "src")
    out = graph.add_variable(popsim.FLOAT, [8], "out")
    graph.set_tile_mapping(src, 0)
    graph.set_tile_mapping(out.slice(0, 4), 0)
    graph.set_tile_mapping(out.slice(4, 8), 1)                  # the element after the field is tile 1's
    graph.set_initial_value(src, np.arange(4))
    graph.set_initial_value(out, np.full(8, -1.0))
    bad = graph.add_compute_set("bad")
    graph.set_tile_mapping(graph.add_vertex(bad, "OffByOne", {"in": src, "out": out.slice(0, 4)}), 0)
    graph.create_host_read("out", out)
    engine = popsim.Engine(graph, [Execute(bad), popsim.Copy(src, out.slice(4, 8))])
    engine.load(small_device)
    with pytest.raises(popsim.IndexError, match=r"vertex type 'OffByOne': index 4 is out of range for field 'out' "
                                                r"of size 4 \(valid indices are 0 to 3\)"):
        engine.run(0)
    np.testing.assert_array_equal(engine.read_tensor("out")[4:], -1.0)   # tile 1's data untouched
    engine.run(1)                                                        # the engine is still usable
    np.testing.assert_array_equal(engine.read_tensor("out")[4:], [0, 1, 2, 3])
