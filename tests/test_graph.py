"""Graph: variables, constants, tile mappings, virtual graphs, clone, handles."""
import re

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT

from graph_helpers import mapped, mapped_const


def element_tiles(graph, t):
    """Per flat element of ``t``: its tile, from get_tile_mapping."""
    out = np.full(t.num_elements(), -1)
    for tile, intervals in enumerate(graph.get_tile_mapping(t, require_complete=False)):
        for b, e in intervals:
            assert (out[b:e] == -1).all(), "element listed on two tiles"
            out[b:e] = tile
    return out


def test_add_variable_and_constant(device):
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, [4, 4], "v3")
    assert (v.shape, v.dtype, v.name, v.rank, v.num_elements()) == ((4, 4), FLOAT, "v3", 2, 16)
    c = g.add_constant(INT, [3], [1, 2, 3], "c1")
    assert c.dtype is INT and c.contains_constant() and not v.contains_constant()
    s = g.add_constant(FLOAT, [2, 2], 1.5)  # a scalar fills
    assert s.shape == (2, 2)
    n = g.add_constant(HALF, [2], np.array([1, 2], np.float16))
    assert n.dtype is HALF
    assert len(g._state.table) == 4


def test_unnamed_objects_get_names(device):
    g = popsim.Graph(device)
    a, b = g.add_variable(FLOAT, [1]), g.add_variable(FLOAT, [1])
    assert a.name != b.name


def test_set_tile_mapping_on_views_and_later_calls_win(device):
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, [4, 4], "v")
    g.set_tile_mapping(v, 0)
    g.set_tile_mapping(v[1], 3)
    g.set_tile_mapping(v[:, 2], 5)
    expected = np.zeros((4, 4), int)
    expected[1] = 3
    expected[:, 2] = 5
    np.testing.assert_array_equal(element_tiles(g, v), expected.reshape(-1))
    np.testing.assert_array_equal(element_tiles(g, v.transpose()), expected.T.reshape(-1))


def test_set_tile_mapping_by_intervals(device):
    g = popsim.Graph(device)
    v = g.add_variable(INT, [10], "v")
    g.set_tile_mapping(v, [[(0, 3)], [], [(3, 5), (8, 10)], [(5, 8)]])
    assert g.get_tile_mapping(v)[:4] == [[(0, 3)], [], [(3, 5), (8, 10)], [(5, 8)]]
    # intervals of a view are positions within the view
    w = g.add_variable(INT, [3, 4], "w")
    g.set_tile_mapping(w.transpose(), [[(0, 6)], [(6, 12)]])
    np.testing.assert_array_equal(element_tiles(g, w.transpose()), [0] * 6 + [1] * 6)


def test_get_tile_mapping_requires_complete(device):
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, [6], "v")
    g.set_tile_mapping(v[0:2], 1)
    with pytest.raises(popsim.InvalidTileMappingError, match=r"\[2, 6\)"):
        g.get_tile_mapping(v)
    assert g.get_tile_mapping(v, require_complete=False)[1] == [(0, 2)]


@pytest.mark.parametrize("shape,tiles_used,first,last_tile,last", [
    ((40, 50), 59, (0, 32), 58, (1966, 2000)),  # tut5 matrix
    ((50,), 1, (0, 50), 0, (0, 50)),
    ((900, 600), 1468, None, None, None),  # tut4 m1
    ((600, 300), 1452, None, None, None),
    ((300, 200), 1429, None, None, None),
])
def test_linear_mapping_matches_poplibs(device, shape, tiles_used, first, last_tile, last):
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, shape, "t", mapping=popsim.VariableMappingMethod.LINEAR)
    m = g.get_tile_mapping(t)
    used = [i for i, iv in enumerate(m) if iv]
    assert len(used) == tiles_used and used == list(range(tiles_used))
    assert sum(e - b for iv in m for b, e in iv) == t.num_elements()
    if first is not None:
        assert m[0] == [first] and m[last_tile] == [last]


def test_linear_mapping_on_four_tiles():
    model = popsim.IPUModel()
    model.tiles_per_ipu = 4
    g = popsim.Graph(model.create_device())
    w = g.add_variable(FLOAT, [10, 784], "W", mapping=popsim.VariableMappingMethod.LINEAR)
    assert [sum(e - b for b, e in iv) for iv in g.get_tile_mapping(w)] == [1960] * 4
    b = g.add_variable(FLOAT, [10, 1], "b", mapping=popsim.VariableMappingMethod.LINEAR)
    assert g.get_tile_mapping(b) == [[(0, 10)], [], [], []]


def test_virtual_graph_numbers_tiles_from_zero(device):
    g = popsim.Graph(device)
    sub = g.create_virtual_graph(100, 110)
    assert sub.target.num_tiles == 10
    v = sub.add_variable(FLOAT, [4], "v")
    sub.set_tile_mapping(v, 2)
    assert sub.get_tile_mapping(v)[2] == [(0, 4)]
    assert g.get_tile_mapping(v)[102] == [(0, 4)]
    assert sub.convert_virtual_tile_to_physical_tile(2) == 102
    listed = g.create_virtual_graph([7, 3, 5])
    w = listed.add_variable(FLOAT, [3], "w")
    listed.set_tile_mapping(w, [[(0, 1)], [(1, 2)], [(2, 3)]])
    assert [g.get_tile_mapping(w)[t] for t in (7, 3, 5)] == [[(0, 1)], [(1, 2)], [(2, 3)]]
    nested = sub.create_virtual_graph(5, 10)
    x = nested.add_variable(FLOAT, [1], "x")
    nested.set_tile_mapping(x, 0)
    assert g.get_tile_mapping(x)[105] == [(0, 1)]
    assert nested.get_top_level_graph().target.num_tiles == 1472
    with pytest.raises(popsim.InvalidTileMappingError, match="outside this virtual graph"):
        sub.get_tile_mapping(w)


def test_clone_keeps_shape_type_and_mapping(device):
    g = popsim.Graph(device)
    v = g.add_variable(HALF, [3, 4], "v")
    g.set_tile_mapping(v, 0)
    g.set_tile_mapping(v[:, 1], 9)
    c = g.clone(v.transpose(), "c")
    assert (c.shape, c.dtype, c.name) == ((4, 3), HALF, "c")
    np.testing.assert_array_equal(element_tiles(g, c), element_tiles(g, v.transpose()))
    assert not c.intersects_with(v)


def test_handles_streams_functions_compute_sets(device):
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, [3], "v")
    s = g.add_host_to_device_fifo("in", FLOAT, 3)
    o = g.add_device_to_host_fifo("out", FLOAT, 3)
    assert s.is_host_to_device and not o.is_host_to_device
    assert s.transfer_bytes == 12 and g.get_stream("in") is s
    cs = g.add_compute_set("cs")
    assert cs.name == "cs" and cs.vertices == []
    f = g.add_function(popsim.Sequence(), "f")
    assert f.name == "f"
    g.create_host_write("w", v)
    g.create_host_read("r", v)
    assert g.num_vertices == 0


def test_set_initial_value_shapes(device):
    g = popsim.Graph(device)
    v = g.add_variable(INT, [2, 3], "v")
    g.set_initial_value(v, np.arange(6).reshape(2, 3))
    g.set_initial_value(v[0], 5)
    g.set_initial_value(v[1], [1, 2, 3])
    with pytest.raises(popsim.TensorCreationError, match="4 values"):
        g.set_initial_value(v, [1, 2, 3, 4])


@pytest.mark.parametrize("view", [lambda v: v, lambda v: v.transpose(), lambda v: v[1:, ::2],
                                  lambda v: v.reshape([6, 2])[::-1]])
def test_clone_with_another_type_keeps_shape_and_mapping(device, view):
    # PopLibs' clone(outType, ref): the mapping of a view spread over tiles, element by element.
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, [3, 4], "v")
    g.set_tile_mapping(v, [[(0, 5)], [], [(5, 7), (10, 12)], [(7, 10)]])
    src = view(v)
    c = g.clone(src, "c", dtype=HALF)
    assert (c.shape, c.dtype, c.name) == (src.shape, HALF, "c")
    expected = element_tiles(g, src)
    assert len(set(expected.tolist())) > 1  # the test needs a mapping over several tiles
    np.testing.assert_array_equal(element_tiles(g, c), expected)
    poplar_order = g.clone(INT, src, "d")  # Poplar's clone(type, tensor, name)
    assert (poplar_order.dtype, poplar_order.name) == (INT, "d")
    np.testing.assert_array_equal(element_tiles(g, poplar_order), expected)
    assert g.clone(src).dtype is FLOAT  # default: the source's type


def test_clone_of_a_partly_mapped_view_leaves_the_rest_unmapped(device):
    g = popsim.Graph(device)
    v = g.add_variable(INT, [4], "v")
    g.set_tile_mapping(v[1:3], 5)
    c = g.clone(v, dtype=FLOAT)
    assert element_tiles(g, c).tolist() == [-1, 5, 5, -1]


@pytest.mark.parametrize("shape,found", [((2.5,), "float 2.5"), ([2, 2.7], "float 2.7"), (["4"], "str '4'"),
                                         ((True, 2), "bool True"), (np.array([2.0, 3.0]), "float64 2.0")])
def test_shapes_are_whole_numbers(device, shape, found):
    g = popsim.Graph(device)
    with pytest.raises(popsim.TensorCreationError, match=f"add_variable: shape .* has an entry that must be an "
                                                         f"integer, found {found}"):
        g.add_variable(FLOAT, shape, "v")  # before: 2.5 became 2 and "4" became 4
    with pytest.raises(popsim.TensorCreationError, match="add_constant: shape"):
        g.add_constant(FLOAT, shape, 0, "c")


@pytest.mark.parametrize("shape", ["4", 2.5, None])
def test_shape_must_be_a_sequence(device, shape):
    with pytest.raises(popsim.TensorCreationError, match="add_variable: shape must be a sequence of sizes"):
        popsim.Graph(device).add_variable(FLOAT, shape, "v")


def test_numpy_shapes_and_sizes_are_fine(device):
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, np.array([2, 3]), "v")
    w = g.add_variable(FLOAT, np.int64(5), "w")
    assert v.shape == (2, 3) and w.shape == (5,) and all(type(d) is int for d in v.shape)
    s = g.add_host_to_device_fifo("in", FLOAT, np.int64(v.num_elements()))
    assert s.num_elements == 6 and type(s.num_elements) is int


@pytest.mark.parametrize("count,found", [(2.7, "float 2.7"), ("4", "str '4'"), (True, "bool True")])
def test_stream_sizes_are_whole_numbers(device, count, found):
    g = popsim.Graph(device)
    with pytest.raises(popsim.StreamConnectionError, match=f"stream 'in': num_elements must be an integer, "
                                                           f"found {found}"):
        g.add_host_to_device_fifo("in", FLOAT, count)
    with pytest.raises(popsim.StreamConnectionError, match="num_elements must be a non-negative integer, found -1"):
        g.add_device_to_host_fifo("out", FLOAT, -1)


def test_tile_arguments_are_whole_numbers(device):
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, [4], "v")
    with pytest.raises(popsim.InvalidTileMappingError, match="interval bound for tile 0 must be an integer, "
                                                             "found float 1.5"):
        g.set_tile_mapping(v, [[(0, 1.5)], [(1.5, 4)]])
    with pytest.raises(popsim.InvalidTileMappingError, match=r"\(0, 1, 2\) for tile 0 is not a \(begin, end\) "
                                                             "interval"):
        g.set_tile_mapping(v, [[(0, 1, 2)]])
    with pytest.raises(popsim.InvalidTileMappingError, match="create_virtual_graph: lower_tile must be an "
                                                             "integer, found float 0.5"):
        g.create_virtual_graph(0.5, 4)
    with pytest.raises(popsim.InvalidTileMappingError, match="grain_size must be an integer >= 1, found 0"):
        g.linear_mapping(v, grain_size=0)


def test_duplicate_stream_handle(small_device):
    g = popsim.Graph(small_device)
    g.add_host_to_device_fifo("dup", INT, 1)
    with pytest.raises(popsim.StreamConnectionError, match="'dup' already exists.*unique"):
        g.add_host_to_device_fifo("dup", INT, 1)
    with pytest.raises(popsim.StreamConnectionError, match="'dup' already exists"):
        g.add_device_to_host_fifo("dup", FLOAT, 4)


def test_duplicate_host_handle(small_device):
    g = popsim.Graph(small_device)
    a = mapped(g, FLOAT, (2,), "a")
    b = mapped(g, FLOAT, (2,), "b")
    g.create_host_write("h", a)
    with pytest.raises(popsim.DuplicateHandleError, match="'h' is already used for tensor 'a'.*unique"):
        g.create_host_write("h", b)


def test_host_write_to_constant(small_device):
    g = popsim.Graph(small_device)
    c = mapped_const(g, FLOAT, (2,), 1.0, "k")
    with pytest.raises(popsim.TensorCreationError, match="'kw'.*'k'.*constant"):
        g.create_host_write("kw", c)


def test_add_constant_wrong_number_of_values(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError) as info:
        g.add_constant(FLOAT, (4,), [1.0, 2.0, 3.0], "c1")
    msg = str(info.value)
    assert "3 values" in msg and "[4]" in msg and "4 elements" in msg
    g.add_constant(FLOAT, (4,), 2.0, "scalar_fills")  # a scalar is fine


def test_add_constant_wrong_number_of_values_names_the_constant(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError, match="'c1'"):
        g.add_constant(FLOAT, (4,), [1.0, 2.0, 3.0], "c1")


def test_add_constant_values_that_do_not_fit(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError, match="do not fit INT"):
        g.add_constant(INT, (2,), [2 ** 40, 1], "huge")
    with pytest.raises(popsim.TensorCreationError, match="do not fit INT"):
        g.add_constant(INT, (1,), [1e20], "huger")


def test_add_constant_non_numeric_values(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError, match="add_constant.*values must be numbers"):
        g.add_constant(FLOAT, (2,), [1.0, None], "c")


def test_set_initial_value_errors(small_device):
    g = popsim.Graph(small_device)
    c = mapped_const(g, FLOAT, (4,), 1.0, "cst")
    v = mapped(g, FLOAT, (4,), "v")
    with pytest.raises(popsim.TensorCreationError) as info:
        g.set_initial_value(c, [1, 2, 3, 4])
    msg = str(info.value)
    assert "'cst'" in msg and "constant" in msg and "add_constant" in msg
    with pytest.raises(popsim.TensorCreationError, match=r"'v'.*3 values.*\[4\]"):
        g.set_initial_value(v, [1, 2, 3])
    with pytest.raises(popsim.TensorCreationError, match="'v'.*more than once"):
        g.set_initial_value(v[0:1].broadcast(2, 0), [1, 2])


@pytest.mark.parametrize("factor", [0, -2, 1.5])
def test_bad_replication_factor(small_device, factor):
    with pytest.raises(popsim.PopsimError) as info:
        popsim.Graph(small_device, replication_factor=factor)
    msg = str(info.value)
    assert "replication_factor must be a positive integer" in msg
    assert f"found {factor!r}" in msg


def test_graph_needs_a_target():
    with pytest.raises(popsim.TypeError, match="Graph needs a Target or a Device, found str"):
        popsim.Graph("ipu2")


def test_negative_shape(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError, match=re.escape("shape [-1, 2] has a negative size")):
        g.add_variable(FLOAT, (-1, 2), "neg")


def test_owns_tells_a_graphs_tensors_from_others(device):
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, [4], "v")
    c = g.add_constant(FLOAT, [2], [1.0, 2.0], "c")
    sub = g.create_virtual_graph(0, 10)
    assert g.owns(v) and g.owns(v[1:3].reshape((2, 1))) and g.owns(c) and sub.owns(v)
    assert g.owns(popsim.concat([v, c]))
    other = popsim.Graph(device)
    assert not other.owns(v) and not g.owns(other.add_variable(FLOAT, [1], "w"))
    assert not g.owns("v") and not g.owns(None)


# -- sizes no graph can hold, and arguments of the wrong kind (found by tests/test_api_fuzz.py) --

@pytest.mark.parametrize("shape", [[2 ** 62], [2 ** 64], [2 ** 31, 2 ** 31], [0, 2 ** 64], [2 ** 51]])
@pytest.mark.parametrize("make", ["variable", "constant"])
def test_a_shape_past_the_graph_limit_is_a_tensor_creation_error(small_device, shape, make):
    """Was an OverflowError (ids past 64 bits) or numpy's ValueError 'array is too big' (a
    constant's values) or, later, a MemoryError; now refused when made, naming the limit,
    before anything is added or allocated."""
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError, match=r"popsim's graphs hold at most 1,125,899,906,842,624 bytes "
                                                         r"\(2\*\*50\).*make the tensor smaller"):
        g.add_variable(FLOAT, shape, "huge") if make == "variable" else g.add_constant(FLOAT, shape, 0, "huge")
    assert len(g.description.table) == 0


def test_the_graph_limit_counts_every_tensor(small_device):
    g = popsim.Graph(small_device)
    g.add_variable(popsim.CHAR, [2 ** 49], "a")  # half the limit, twice: fine (the engine refuses it)
    g.add_variable(popsim.CHAR, [2 ** 49], "b")
    with pytest.raises(popsim.TensorCreationError, match="with the 1,125,899,906,842,624 bytes the graph holds "
                                                         "already"):
        g.add_variable(popsim.CHAR, [1], "c")


@pytest.mark.parametrize("call, error, message", [
    (lambda g, v: g.create_virtual_graph(3), popsim.TypeError, "expected .lower_tile, upper_tile. or a list of tiles"),
    (lambda g, v: g.create_virtual_graph(["a"]), popsim.InvalidTileMappingError, "a tile of the list must be an "
                                                                                  "integer, found str 'a'"),
    (lambda g, v: g.create_virtual_graph([2 ** 64]), popsim.InvalidTileMappingError, "in 0..3"),
    (lambda g, v: g.set_tile_mapping(v, [FLOAT]), popsim.InvalidTileMappingError,
     "the entry for tile 0 must be a list of .begin, end. intervals, found Type"),
    (lambda g, v: g.set_tile_mapping(v, [[3]]), popsim.InvalidTileMappingError, "3 for tile 0 is not a .begin, end."),
    (lambda g, v: g.set_tile_mapping(v, float("nan")), popsim.TypeError, "expected a tile number or a list"),
    (lambda g, v: g.get_sorted_contiguous_regions(v, 3.5), popsim.TypeError, "regions must be a list of"),
    (lambda g, v: g.get_sorted_contiguous_regions(v, [[(2, 1)]]), popsim.InvalidTileMappingError,
     "is not a .begin, end. interval"),
    (lambda g, v: g.linear_mapping(None), popsim.TypeError, "linear_mapping: expected a Tensor, found NoneType"),
    (lambda g, v: g.get_stream(np.zeros(2)), popsim.TypeError, "get_stream: a stream handle is a string"),
    (lambda g, v: g.get_stream(3), popsim.TypeError, "found int 3"),
    (lambda g, v: g.add_variable(FLOAT, [2], np.zeros(2)), popsim.TypeError, "a debug name must be a string, found "
                                                                             "ndarray"),
    (lambda g, v: g.add_compute_set(7), popsim.TypeError, "a debug name must be a string, found int 7"),
    (lambda g, v: g.add_host_to_device_fifo("in", FLOAT, 4, "BROADCAST"), popsim.StreamConnectionError,
     "replicated_mode must be popsim.ReplicatedStreamMode.REPLICATE or BROADCAST, found str"),
    (lambda g, v: g.add_device_to_host_fifo("out", FLOAT, 4, -2), popsim.InvalidOptionError,
     "options must be a dict"),
    (lambda g, v: g.add_variable([1], [2]), popsim.TypeError, "is not an element type"),
    (lambda g, v: g.clone(v, np.zeros((2, 2))), popsim.TypeError, "a debug name must be a string, found ndarray"),
    (lambda g, v: g.get_tile_mapping(v, np.zeros((2, 2))), popsim.TypeError, "require_complete must be True or False"),
])
def test_arguments_of_the_wrong_kind(small_device, call, error, message):
    g = popsim.Graph(small_device)
    v = mapped(g, FLOAT, (4,), "v")
    with pytest.raises(error, match=message):
        call(g, v)


def test_an_empty_region_list_has_no_sorted_regions(small_device):
    g = popsim.Graph(small_device)
    v = mapped(g, FLOAT, (4,), "v")
    assert g.get_sorted_contiguous_regions(v, []) == [] == g.get_sorted_contiguous_regions(v, [(2, 2)])


def test_a_bad_mapping_method_adds_no_variable(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TypeError, match="mapping must be a VariableMappingMethod, found int 0"):
        g.add_variable(FLOAT, [4], "v", mapping=0)
    assert len(g.description.table) == 0
