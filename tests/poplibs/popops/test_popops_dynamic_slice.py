"""popops.dynamic_slice / dynamic_update / create_sliceable_tensor on the engine against
numpy (wrapping offsets, several dims, tensors over several tiles with one or several
regions per tile), the DynamicSlice estimators against PopLibs' cycle estimators by hand,
and bad arguments."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, popops, poputil
from popsim.codelet.python_vertex import fields_of
from popsim.popops import slice_vertices
from popsim.popops.slice_vertices import dynamic_slice_1d_cycles, dynamic_slice_2d_cycles
from popsim.program import Sequence

from popops_harness import run, scattered_mapping


def small_device():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    return model.create_device()


def reference_slice(x, offsets, dims, sizes):
    """PopLibs' refSlice: entry i of dim d comes from (offset + i) mod size."""
    index = [np.arange(n) for n in x.shape]
    for d, o, size in zip(dims, offsets, sizes):
        index[d] = (o + np.arange(size)) % x.shape[d]
    return x[np.ix_(*index)]


def reference_update(x, s, offsets, dims, sizes):
    index = [np.arange(n) for n in x.shape]
    for d, o, size in zip(dims, offsets, sizes):
        index[d] = (o + np.arange(size)) % x.shape[d]
    y = x.copy()
    y[np.ix_(*index)] = s
    return y


@st.composite
def slice_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    dims = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    sizes = [draw(st.integers(1, shape[d])) for d in dims]
    offsets = [draw(st.integers(0, shape[d] - 1)) for d in dims]  # offset + size may wrap around
    return shape, dims, sizes, offsets, draw(st.integers(0, 2**16))


@settings(max_examples=20, deadline=None)
@given(slice_cases())
def test_slice_and_update_against_numpy(case):
    shape, dims, sizes, offsets, seed = case
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(seed)
    t = g.add_variable(FLOAT, shape, "t")
    g.set_tile_mapping(t, scattered_mapping(t.num_elements(), 4, rng))
    offset = g.add_variable(UNSIGNED_INT, (len(dims),), "offset")
    g.set_tile_mapping(offset, 3)
    expected_shape = list(shape)
    for d, size in zip(dims, sizes):
        expected_shape[d] = size
    u = g.add_variable(FLOAT, expected_shape, "u")
    g.set_tile_mapping(u, scattered_mapping(u.num_elements(), 4, rng))
    prog = Sequence()
    s = popops.dynamic_slice(g, t, offset, dims, sizes, prog)
    popops.dynamic_update(g, t, u, offset, dims, sizes, prog)
    x = rng.uniform(-9, 9, shape).astype(np.float32)
    y = rng.uniform(-9, 9, expected_shape).astype(np.float32)
    _, (got_s, got_t) = run(g, device, prog, [s, t], {t: x, offset: offsets, u: y})
    np.testing.assert_array_equal(got_s, reference_slice(x, offsets, dims, sizes))
    np.testing.assert_array_equal(got_t, reference_update(x, y, offsets, dims, sizes))


@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT, popsim.BOOL, popsim.UNSIGNED_CHAR, popsim.LONGLONG],
                         ids=lambda t: t.name)
def test_types_and_wrap_around(dtype):
    device = small_device()
    g = popsim.Graph(device)
    t = g.add_variable(dtype, (7, 3), "t")
    g.set_tile_mapping(t, scattered_mapping(21, 4, np.random.default_rng(1)))
    offset = g.add_variable(UNSIGNED_INT, (1,), "offset")
    g.set_tile_mapping(offset, 0)
    prog = Sequence()
    s = popops.dynamic_slice(g, t, offset, [0], [4], prog)
    x = (np.arange(21).reshape(7, 3) % (2 if dtype == popsim.BOOL else 100)).astype(dtype.numpy)
    engine, (got,) = run(g, device, prog, [s], {t: x, offset: [5]})
    np.testing.assert_array_equal(got, x[[5, 6, 0, 1]])


def test_out_of_range_offset_leaves_the_output_or_remaps_to_zero():
    device = small_device()
    g = popsim.Graph(device)
    t = g.add_variable(INT, (5, 4), "t")
    g.set_tile_mapping(t, scattered_mapping(20, 4, np.random.default_rng(2)))
    offset = g.add_variable(UNSIGNED_INT, (1,), "offset")
    g.set_tile_mapping(offset, 1)
    prog = Sequence()
    remapped = popops.dynamic_slice(g, t, offset, [0], [2], prog, options={"remapOutOfBoundIndices": "true"})
    u = g.add_variable(INT, (2, 4), "u")
    g.set_tile_mapping(u, 2)
    popops.dynamic_update(g, t, u, offset, [0], [2], prog)  # offset 5 >= 5: writes nothing
    x = np.arange(20, dtype=np.int32).reshape(5, 4)
    _, (got_r, got_t) = run(g, device, prog, [remapped, t], {t: x, offset: [5], u: -np.ones((2, 4))})
    np.testing.assert_array_equal(got_r, x[[0, 1]])
    np.testing.assert_array_equal(got_t, x)


def test_sliceable_tensor_mapping_and_one_vertex_per_tile():
    device = small_device()
    g = popsim.Graph(device)
    t = popops.create_sliceable_tensor(g, FLOAT, (10, 8), [0], [1], "emb")
    assert t.shape == (10, 8)
    # the 8 columns over the 4 tiles, 2 each, every row of a column on the column's tile
    mapping = g.get_tile_mapping(t)
    for tile in range(4):
        owned = {i for b, e in mapping[tile] for i in range(b, e)}
        assert owned == {r * 8 + c for r in range(10) for c in (2 * tile, 2 * tile + 1)}
    offset = g.add_variable(UNSIGNED_INT, (1,), "offset")
    g.set_tile_mapping(offset, 0)
    prog = Sequence()
    s = popops.dynamic_slice(g, t, offset, [0], [3], prog, "Slice")
    x = np.arange(80, dtype=np.float32).reshape(10, 8)
    engine, (got,) = run(g, device, prog, [s], {t: x, offset: [8]})
    np.testing.assert_array_equal(got, x[[8, 9, 0]])
    kinds = {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert kinds["popops::DynamicSlice1D<float>"]["instances"] == 4
    # PopLibs' cycle estimators DynamicSlice1D, regionSize 2, numSubElements 3, vw 2:
    # 11+1+6+1+6 + 6 (39 + (24 + 2 floor(ceil(2/6)/2)) 3) = 25 + 6 * 111 = 691 tile cycles,
    # charged as ceil(691/6) = 116 on each worker of the 4 tiles
    assert dynamic_slice_1d_cycles(FLOAT, 2, 3, 6) == 691
    assert kinds["popops::DynamicSlice1D<float>"]["cycles"] == 4 * 6 * 116


def test_2d_estimate_by_hand():
    # 27 + sum over regions ((29 + ceil(n/2)) * numSub + 13) for float: regions 5 and 2, 3 slices
    assert dynamic_slice_2d_cycles(FLOAT, [5, 2], 3) == 27 + (29 + 3) * 3 + 13 + (29 + 1) * 3 + 13
    # half: (31 + 2 ceil(n/4)); 8-bit: (50 + 2 ceil(n/4))
    assert dynamic_slice_2d_cycles(HALF, [9], 2) == 27 + (31 + 2 * 3) * 2 + 13
    assert dynamic_slice_2d_cycles(popsim.CHAR, [9], 2) == 27 + (50 + 2 * 3) * 2 + 13


def test_2d_vertices_in_the_report():
    device = small_device()
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (3, 8), "t")
    # the first row on tile 1 in two regions: 2D vertices there
    g.set_tile_mapping(t, [[(2, 4)], [(0, 2), (4, 8), (8, 24)], [], []])
    offset = g.add_variable(UNSIGNED_INT, (1,), "offset")
    g.set_tile_mapping(offset, 0)
    prog = Sequence()
    s = popops.dynamic_slice(g, t, offset, [0], [2], prog)
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    engine, (got,) = run(g, device, prog, [s], {t: x, offset: [2]})
    np.testing.assert_array_equal(got, x[[2, 0]])
    names = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert "popops::DynamicSlice2D<float>" in names


def _directions(template, dtype):
    return [(f.name, f.direction.name) for f in fields_of(template[dtype])[0]]


def test_a_slice_and_its_update_share_one_class_body_with_poplibs_fields():
    """Each layout is one class body for two templates: the slice reads baseT and writes
    subT, the update the other way round, in PopLibs' field order."""
    state = [("numBaseElements", "NONE"), ("numSubElements", "NONE"), ("regionSize", "NONE")]
    assert _directions(slice_vertices.DynamicSlice1D, HALF) == [
        ("offset", "INPUT"), ("baseT", "INPUT"), ("subT", "OUTPUT")] + state
    assert _directions(slice_vertices.DynamicUpdateSlice1D, HALF) == [
        ("offset", "INPUT"), ("baseT", "INOUT"), ("subT", "INPUT")] + state
    assert _directions(slice_vertices.DynamicSlice2D, INT) == [
        ("offset", "INPUT"), ("baseT", "INPUT"), ("numSubElements", "NONE"), ("subT", "OUTPUT"),
        ("numRegions", "NONE"), ("numBaseElements", "NONE")]
    assert _directions(slice_vertices.DynamicUpdateSlice2D, INT) == [
        ("offset", "INPUT"), ("baseT", "INOUT"), ("numSubElements", "NONE"), ("subT", "INPUT"),
        ("numRegions", "NONE"), ("numBaseElements", "NONE")]
    assert slice_vertices.DynamicUpdateSlice2D[INT].__name__ == "DynamicUpdateSlice2D"


def _slices_and_updates(off):
    """Slices (3 rows; 2 rows remapped) and updates (3 rows) at offset ``off`` of a (5, 8)
    tensor on one tile (1D vertices) and of one whose row 0 is in two regions on tile 1
    (2D): the slices, then the updated tensors, and the vertex types the run used."""
    device = small_device()
    g = popsim.Graph(device)
    one = g.add_variable(HALF, (5, 8), "one")
    g.set_tile_mapping(one, 0)
    two = g.add_variable(HALF, (5, 8), "two")
    g.set_tile_mapping(two, [[(2, 4)], [(0, 2), (4, 8), (8, 40)], [], []])
    offset = g.add_variable(UNSIGNED_INT, (1,), "offset")
    g.set_tile_mapping(offset, 3)
    prog = Sequence()
    reads, writes = [], {offset: [off]}
    for t in (one, two):
        reads.append(popops.dynamic_slice(g, t, offset, [0], [3], prog))
        reads.append(popops.dynamic_slice(g, t, offset, [0], [2], prog, options={"remapOutOfBoundIndices": "true"}))
        u = g.add_variable(HALF, (3, 8), f"u_{t.name}")
        g.set_tile_mapping(u, 2)
        popops.dynamic_update(g, t, u, offset, [0], [3], prog)
        writes[t], writes[u] = X_HALF, Y_HALF
    engine, got = run(g, device, prog, reads + [one, two], writes)
    return got, {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}


X_HALF = (np.arange(40).reshape(5, 8) * 0.5).astype(np.float16)
Y_HALF = -np.arange(24).reshape(3, 8).astype(np.float16)


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_1d_and_2d_slices_and_updates_in_both_codelet_modes(monkeypatch, mode):
    """Both layouts, both directions, wrapping and a remapped out-of-range offset, run as
    translated C and as Python: the same values as numpy."""
    monkeypatch.setenv("POPSIM_CODELET_MODE", mode)
    got, names = _slices_and_updates(3)
    for k in (0, 2):
        np.testing.assert_array_equal(got[k], X_HALF[[3, 4, 0]])
        np.testing.assert_array_equal(got[k + 1], X_HALF[[3, 4]])
    for k in (4, 5):
        np.testing.assert_array_equal(got[k], reference_update(X_HALF, Y_HALF, [3], [0], [3]))
    assert {f"popops::{k}<half>" for k in ("DynamicSlice1D", "DynamicSlice2D", "DynamicUpdateSlice1D",
                                          "DynamicUpdateSlice2D")} <= names
    got, _ = _slices_and_updates(7)
    for k in (1, 3):
        np.testing.assert_array_equal(got[k], X_HALF[[0, 1]])  # remapped: offset 7 >= 5 reads row 0
    for k in (4, 5):
        np.testing.assert_array_equal(got[k], X_HALF)  # the update writes nothing


def test_errors():
    device = small_device()
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (4, 6), "t")
    g.set_tile_mapping(t, 0)
    off = g.add_variable(UNSIGNED_INT, (1,), "off")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match=re.escape(
            "popops.dynamic_slice: the offset must be an UNSIGNED_INT tensor of shape (1,) (one entry per sliced "
            "dimension of dims [0]), found tensor 'bad' (INT, shape (1,))")):
        popops.dynamic_slice(g, t, g.add_variable(INT, (1,), "bad"), [0], [1], prog)
    with pytest.raises(poputil.PoplibsError, match=r"shape \(2,\).*found tensor 'off' \(UNSIGNED_INT, shape \(1,\)\)"):
        popops.dynamic_slice(g, t, off, [0, 1], [1, 1], prog)
    with pytest.raises(poputil.PoplibsError, match=r"dimension 2 in dims \[2\] is out of range for tensor 't' "
                                                   r"\(FLOAT, shape \(4, 6\)\) \(rank 2"):
        popops.dynamic_slice(g, t, off, [2], [1], prog)
    with pytest.raises(poputil.PoplibsError, match=r"slice size 5 of dimension 0 is larger than that dimension of "
                                                   r"tensor 't' \(FLOAT, shape \(4, 6\)\) \(4\)"):
        popops.dynamic_slice(g, t, off, [0], [5], prog)
    with pytest.raises(poputil.PoplibsError, match="names a dimension more than once"):
        popops.dynamic_slice(g, t, g.add_variable(UNSIGNED_INT, (2,), "o2"), [1, 1], [1, 1], prog)
    other = popsim.Graph(device).add_variable(FLOAT, (4, 6), "elsewhere")
    with pytest.raises(poputil.PoplibsError, match="tensor to slice 'elsewhere' belongs to another graph"):
        popops.dynamic_slice(g, other, off, [0], [1], prog)
    with pytest.raises(poputil.PoplibsError, match=r"the update tensor 'u' \(FLOAT, shape \(2, 6\)\) must be FLOAT "
                                                   r"of shape \(1, 6\)"):
        popops.dynamic_update(g, t, g.add_variable(FLOAT, (2, 6), "u"), off, [0], [1], prog)
    with pytest.raises(popsim.InvalidOptionError, match="unknown option 'remap'"):
        popops.dynamic_slice(g, t, off, [0], [1], prog, options={"remap": "true"})
    with pytest.raises(poputil.PoplibsError, match="prog must be a popsim.Sequence"):
        popops.dynamic_slice(g, t, off, [0], [1], None)


@pytest.mark.parametrize("offsets", [[9, 2], [1, 9], [9, 9], [8, 0], [0, 6]])
def test_an_out_of_range_offset_leaves_the_output_untouched_across_runs(small_device, offsets):
    """Slicing two dimensions: whichever offset is out of range, the output keeps what
    it held (here: what the host wrote after an earlier run), never the rows an earlier
    run sliced."""
    g = popsim.Graph(small_device)
    t = g.add_variable(FLOAT, (8, 6), "t")
    poputil.map_tensor_linearly(g, t)
    off = g.add_variable(UNSIGNED_INT, (2,), "off")
    g.set_tile_mapping(off, 0)
    prog = Sequence()
    out = popops.dynamic_slice(g, t, off, [0, 1], [2, 3], prog)
    for handle, tensor in (("t", t), ("off", off), ("out", out)):
        g.create_host_write(handle, tensor)
    g.create_host_read("out_r", out)
    with popsim.Engine(g, prog) as e:
        e.load(small_device)
        e.write_tensor("t", np.arange(48, dtype=np.float32).reshape(8, 6))
        e.write_tensor("off", np.array([1, 2], np.uint32))
        e.run(0)
        np.testing.assert_array_equal(e.read_tensor("out_r"), [[8, 9, 10], [14, 15, 16]])
        for _ in range(2):
            e.write_tensor("out", np.full((2, 3), -7, np.float32))
            e.write_tensor("off", np.array(offsets, np.uint32))
            e.run(0)
            np.testing.assert_array_equal(e.read_tensor("out_r"), np.full((2, 3), -7, np.float32))


@pytest.mark.parametrize("call, message", [
    (lambda g, t, o: popops.dynamic_slice(g, t, o, 0, [2], Sequence()), "dims must be a list of whole numbers, found "
                                                                         "int 0"),
    (lambda g, t, o: popops.dynamic_slice(g, t, o, [0], 2.5, Sequence()), "sizes must be a list of whole numbers"),
    (lambda g, t, o: popops.create_sliceable_tensor(g, FLOAT, [8, "4"], [0], [1]), "shape must be whole numbers, "
                                                                                   "found str '4'"),
    (lambda g, t, o: popops.create_sliceable_tensor(g, FLOAT, [8, 4], [0], [1], min_grain_size=None),
     "min_grain_size must be a whole number >= 0, found NoneType"),
])
def test_dims_sizes_and_shapes_are_lists_of_whole_numbers(call, message):
    """Were Python's TypeError ('int' object is not iterable) or int()'s ValueError."""
    g = popsim.Graph(small_device())
    t = g.add_variable(FLOAT, (4, 3), "t", mapping=popsim.VariableMappingMethod.LINEAR)
    o = g.add_variable(UNSIGNED_INT, (1,), "o", mapping=popsim.VariableMappingMethod.LINEAR)
    with pytest.raises(poputil.PoplibsError, match=message):
        call(g, t, o)
