"""Property tests of tensor views: random shapes and random chains of view operations
applied in parallel to a popsim Tensor and to numpy's array of element ids.

The first variable of a fresh graph owns global element ids 0..n-1 and the next one
starts where it ends, so ``np.arange(n).reshape(shape)`` (plus an offset for the second
variable) put through numpy's version of each operation is an independent reference for
``t._element_ids()``. The end-to-end properties check that what the engine reads,
copies and reports as a tile mapping agrees with the same reference.
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT
from popsim.program import Copy, Sequence

from view_chains import (PARTNER_SIZE, Ctx, assert_matches, ids_of, new_graph, prod, run_chain, shapes,
                         variable_with_partner)


FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


END_TO_END = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_view_chains_match_numpy(data):
    graph, _ = new_graph()
    v, a, ctx = variable_with_partner(data, graph)
    assert_matches(v, a, FLOAT)
    n_vars = len(graph._state.table)
    run_chain(data, v, a, ctx)
    assert len(graph._state.table) == n_vars  # views never create state
    assert graph._state.table.next_base == a.size + PARTNER_SIZE


@FAST
@given(st.data())
def test_random_alias_free_chains_match_numpy(data):
    graph, _ = new_graph()
    v, a, _ = variable_with_partner(data, graph, partner=False)
    t, ref, _ = run_chain(data, v, a, Ctx(alias_free=True))
    flat = ref.reshape(-1)
    assert np.unique(flat).size == flat.size  # the reference itself stays alias-free
    assert not t.contains_aliases()


@FAST
@given(st.data())
def test_views_of_views_leave_their_sources_unchanged(data):
    graph, _ = new_graph()
    v, a, ctx = variable_with_partner(data, graph)
    t1, a1, d1 = run_chain(data, v, a, ctx)
    run_chain(data, t1, a1, ctx, min_len=1, max_len=3, dtype=d1)
    assert_matches(t1, a1, d1)
    assert_matches(v, a, FLOAT)
    assert_matches(ctx.partner, ctx.partner_ids, FLOAT)


def variable_index(ids, first_size):
    """0 for ids of the first variable, 1 for the partner's."""
    return (ids >= first_size).astype(np.int64)


def check_predicates(t, a, first_size):
    flat = a.reshape(-1)
    # is_contiguous: one run of consecutive increasing ids of one variable (or at most one element)
    consecutive = bool(np.all(np.diff(flat) == 1)) and np.unique(variable_index(flat, first_size)).size <= 1
    assert t.is_contiguous() == (flat.size <= 1 or consecutive)
    # contains_aliases: some id appears twice
    assert t.contains_aliases() == (np.unique(flat).size != flat.size)
    if flat.size == 0:
        assert not t.intersects_with(t)
    # _runs: maximal runs of consecutive ids in view order, never crossing into another variable
    firsts, lengths = t._runs()
    assert firsts.size == lengths.size
    assert np.all(lengths > 0)
    rebuilt = np.concatenate([np.arange(f, f + n) for f, n in zip(firsts.tolist(), lengths.tolist())]
                             or [np.empty(0, np.int64)])
    np.testing.assert_array_equal(rebuilt, flat)
    last = firsts + lengths - 1
    assert np.array_equal(variable_index(firsts, first_size), variable_index(last, first_size))
    if firsts.size > 1:
        joinable = (firsts[1:] == last[:-1] + 1) & (variable_index(firsts[1:], first_size)
                                                    == variable_index(last[:-1], first_size))
        assert not joinable.any(), "runs are not maximal"


@FAST
@given(st.data())
def test_predicates_and_runs_agree_with_element_ids(data):
    graph, _ = new_graph()
    v, a, ctx = variable_with_partner(data, graph)
    check_predicates(v, a, a.size)
    run_chain(data, v, a, ctx, on_step=lambda t, ref: check_predicates(t, ref, a.size))


@FAST
@given(st.data())
def test_intersects_with_iff_the_id_sets_meet(data):
    graph, _ = new_graph()
    v, a, ctx = variable_with_partner(data, graph)
    t1, a1, _ = run_chain(data, v, a, ctx, max_len=4)
    source = data.draw(st.sampled_from(["v", "p"]), label="second view of")
    if source == "v":
        t2, a2, _ = run_chain(data, v, a, ctx, max_len=4)
    else:
        t2, a2, _ = run_chain(data, ctx.partner, ctx.partner_ids, Ctx(v, a), max_len=4)
    expected = np.intersect1d(a1.reshape(-1), a2.reshape(-1)).size > 0
    assert t1.intersects_with(t2) == expected
    assert t2.intersects_with(t1) == expected
    assert t1.intersects_with(t1) == (t1.num_elements() > 0)


@FAST
@given(st.data())
def test_same_elements_iff_same_shape_and_ids(data):
    graph, _ = new_graph()
    v, a, ctx = variable_with_partner(data, graph)
    t1, a1, _ = run_chain(data, v, a, ctx, max_len=3)
    t2, a2, _ = run_chain(data, v, a, ctx, max_len=3)
    assert t1.same_elements(t2) == (a1.shape == a2.shape and np.array_equal(a1, a2))
    assert t1.same_elements(t1)


@END_TO_END
@given(st.data())
def test_host_read_of_a_random_view(data):
    graph, device = new_graph(tiles_per_ipu=4)
    v, a, ctx = variable_with_partner(data, graph)
    graph.set_tile_mapping(v, 0)
    graph.set_tile_mapping(ctx.partner, 1)
    graph.set_initial_value(v, np.arange(a.size).reshape(a.shape))
    graph.set_initial_value(ctx.partner, ctx.partner_ids.astype(np.float32))
    t, ref, dtype = run_chain(data, v, a, ctx)
    graph.create_host_read("r", t)
    engine = popsim.Engine(graph, Sequence())
    engine.load(device)
    out = engine.read_tensor("r")
    expected = ref.astype(np.float32).view(dtype.numpy)  # element values are their ids
    assert out.shape == expected.shape
    assert out.dtype == dtype.numpy
    np.testing.assert_array_equal(out, expected)


@END_TO_END
@given(st.data())
def test_copy_between_random_views(data):
    graph, device = new_graph(tiles_per_ipu=4)
    v, a, ctx = variable_with_partner(data, graph)             # v: ids 0.., partner p after it
    w_shape = data.draw(shapes, label="destination shape")
    w = graph.add_variable(FLOAT, w_shape, "w")
    w_base = a.size + PARTNER_SIZE
    w_ids = np.arange(w_base, w_base + prod(w_shape), dtype=np.int64).reshape(w_shape)
    # map the source over several tiles, the destination on others
    for var, size in ((v, a.size), (ctx.partner, PARTNER_SIZE), (w, prod(w_shape))):
        graph.set_tile_mapping(var, data.draw(st.integers(0, 3)))
        if size:
            b = data.draw(st.integers(0, size - 1))
            e = data.draw(st.integers(b, size))
            graph.set_tile_mapping(var.flatten()[b:e], data.draw(st.integers(0, 3)))
    values = np.arange(w_base, dtype=np.float32)  # each source element holds its id
    graph.set_initial_value(v, values[:a.size].reshape(a.shape))
    graph.set_initial_value(ctx.partner, values[a.size:])

    src, src_ref, src_dtype = run_chain(data, v, a, ctx)
    dst, dst_ref, _ = run_chain(data, w, w_ids, Ctx(alias_free=True))
    m = min(src.num_elements(), dst.num_elements())
    if src.num_elements() != m:
        src, src_ref = src.flatten()[:m], src_ref.reshape(-1)[:m]
    if dst.num_elements() != m:
        dst, dst_ref = dst.flatten()[:m], dst_ref.reshape(-1)[:m]
    if dst.dtype is not src_dtype:
        dst = dst.reinterpret(src_dtype)
    np.testing.assert_array_equal(ids_of(src), src_ref)
    np.testing.assert_array_equal(ids_of(dst), dst_ref)

    graph.create_host_read("w", w)
    graph.create_host_read("v", v)
    engine = popsim.Engine(graph, Sequence(Copy(src, dst)))
    engine.load(device)
    engine.run()
    expected = np.zeros(prod(w_shape), np.float32)
    expected[dst_ref.reshape(-1) - w_base] = values[src_ref.reshape(-1)]
    np.testing.assert_array_equal(engine.read_tensor("w"), expected.reshape(w_shape))
    np.testing.assert_array_equal(engine.read_tensor("v"), values[:a.size].reshape(a.shape))  # source intact


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_get_tile_mapping_of_a_random_view(data):
    tiles = 5
    graph, _ = new_graph(tiles_per_ipu=tiles)
    v, a, ctx = variable_with_partner(data, graph)
    element_tile = np.full(a.size + PARTNER_SIZE, -1, np.int64)  # reference, per global id
    # whole variables first, then random intervals (later calls win), by view and by interval lists
    for var, base, size in ((v, 0, a.size), (ctx.partner, a.size, PARTNER_SIZE)):
        tile = data.draw(st.integers(0, tiles - 1))
        graph.set_tile_mapping(var, tile)
        element_tile[base:base + size] = tile
        for _ in range(data.draw(st.integers(0, 3), label="remaps")):
            if size == 0:
                break
            b = data.draw(st.integers(0, size - 1))
            e = data.draw(st.integers(b, size))
            tile = data.draw(st.integers(0, tiles - 1))
            if data.draw(st.booleans(), label="as interval list"):
                mapping = [[] for _ in range(tile + 1)]
                mapping[tile].append((b, e))
                graph.set_tile_mapping(var.flatten(), mapping)
            else:
                graph.set_tile_mapping(var.flatten()[b:e], tile)
            element_tile[base + b:base + e] = tile
    t, ref, _ = run_chain(data, v, a, ctx)
    expected = element_tile[ref.reshape(-1)]
    mapping = graph.get_tile_mapping(t)
    assert len(mapping) == tiles
    owner = np.full(t.num_elements(), -1, np.int64)
    for tile, intervals in enumerate(mapping):
        for b, e in intervals:
            assert 0 <= b < e <= t.num_elements(), (tile, b, e)
            assert (owner[b:e] == -1).all(), "a view position is listed twice"
            owner[b:e] = tile
    np.testing.assert_array_equal(owner, expected)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_set_tile_mapping_through_random_views(data):
    """Mapping a random view (one tile, or intervals of its flat positions) maps exactly the
    elements numpy says the view holds; get_tile_mapping of the variable shows it."""
    tiles = 4
    graph, _ = new_graph(tiles_per_ipu=tiles)
    v, a, ctx = variable_with_partner(data, graph)
    element_tile = np.full(a.size + PARTNER_SIZE, -1, np.int64)
    graph.set_tile_mapping(v, 0)
    graph.set_tile_mapping(ctx.partner, 1)
    element_tile[:a.size], element_tile[a.size:] = 0, 1
    for _ in range(data.draw(st.integers(1, 3), label="mapping calls")):
        by_intervals = data.draw(st.booleans(), label="by intervals")
        # interval lists need an alias-free view: which tile would an aliased element get?
        t, ref, _ = run_chain(data, v, a, Ctx(ctx.partner, ctx.partner_ids, alias_free=by_intervals), max_len=4)
        flat = ref.reshape(-1)
        if by_intervals and flat.size:
            cuts = sorted(data.draw(st.lists(st.integers(0, flat.size), max_size=3)))
            bounds = [0] + cuts + [flat.size]
            mapping = [[] for _ in range(tiles)]
            for b, e in zip(bounds[:-1], bounds[1:]):
                if data.draw(st.booleans(), label="map this interval"):
                    tile = data.draw(st.integers(0, tiles - 1))
                    mapping[tile].append((b, e))
                    element_tile[flat[b:e]] = tile
            graph.set_tile_mapping(t, mapping)
        elif not by_intervals:
            tile = data.draw(st.integers(0, tiles - 1))
            graph.set_tile_mapping(t, tile)
            element_tile[flat] = tile
    for var, base, size in ((v, 0, a.size), (ctx.partner, a.size, PARTNER_SIZE)):
        owner = np.full(size, -1, np.int64)
        for tile, intervals in enumerate(graph.get_tile_mapping(var)):
            for b, e in intervals:
                assert (owner[b:e] == -1).all()
                owner[b:e] = tile
        np.testing.assert_array_equal(owner, element_tile[base:base + size])


@END_TO_END
@given(st.data())
def test_host_write_of_a_random_view(data):
    graph, device = new_graph(tiles_per_ipu=4)
    v, a, ctx = variable_with_partner(data, graph)
    graph.set_tile_mapping(v, 0)
    graph.set_tile_mapping(ctx.partner, 2)
    t, ref, dtype = run_chain(data, v, a, Ctx(ctx.partner, ctx.partner_ids, alias_free=True))
    graph.create_host_write("w", t)
    graph.create_host_read("v", v)
    graph.create_host_read("p", ctx.partner)
    graph.create_host_read("r", t)
    engine = popsim.Engine(graph, Sequence())
    engine.load(device)
    values = (np.arange(t.num_elements(), dtype=np.float32) * 0.5 + 100).reshape(t.shape)
    engine.write_tensor("w", values.view(dtype.numpy))
    expected = np.zeros(a.size + PARTNER_SIZE, np.float32)
    expected[ref.reshape(-1)] = values.reshape(-1)
    np.testing.assert_array_equal(engine.read_tensor("v"), expected[:a.size].reshape(a.shape))
    np.testing.assert_array_equal(engine.read_tensor("p"), expected[a.size:])
    np.testing.assert_array_equal(engine.read_tensor("r"), values.view(dtype.numpy))
