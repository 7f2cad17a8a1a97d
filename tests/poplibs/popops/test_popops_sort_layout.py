"""How the sort's network is laid out on the tiles (popops/sort_network.py): each stage's
layout applies exactly that stage, the device follows the network bit for bit (ties and
NaNs included), PopLibs' own top-k case (3 rows of 1234 FLOAT, k = 123, 4 tiles) fits and
is right, and the memory grows with the data as PopLibs' does."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT, UNSIGNED_INT, popnn, popops
from popsim.popops.sort_network import network_stages, stage_plan, work_parts
from popsim.popops.sort_vertices import worker_sections
from popsim.program import Sequence

from popops_harness import run, scattered_mapping


def device_of(tiles=4):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = tiles
    return model.create_device()


def network_on_host(keys, values=None, descending=False):
    """The network applied to each row of ``keys`` (and ``values`` with them) by numpy,
    comparator by comparator: the upper element moves down when ``upper < lower``
    (``>`` descending), so NaNs never move."""
    keys = keys.copy()
    values = None if values is None else values.copy()
    for stage in network_stages(keys.shape[1]):
        for lo, hi, length, flipped in stage:
            a = np.arange(lo, lo + length)
            b = hi - np.arange(length) if flipped else hi + np.arange(length)
            x, y = keys[:, a], keys[:, b]
            swap = (y > x) if descending else (y < x)
            keys[:, a], keys[:, b] = np.where(swap, y, x), np.where(swap, x, y)
            if values is not None:
                va, vb = values[:, a], values[:, b]
                values[:, a], values[:, b] = np.where(swap, vb, va), np.where(swap, va, vb)
    return keys, values


@pytest.mark.parametrize("rows,n,counts,workers", [
    (1, 2, [2], 6), (1, 5, [3, 2, 0], 6), (3, 13, [10, 0, 19, 10], 6), (2, 64, [1, 1, 126], 6), (5, 37, [37] * 5, 2),
    (4, 100, [7, 93, 50, 250], 6), (1, 1234, [309, 308, 309, 308], 6)])
def test_each_stage_layout_applies_that_stage(rows, n, counts, workers):
    """Copy the rows into the stage's order, run every tile's worklist on its region,
    read them back: the same as the stage applied directly. Regions stay in their tile's
    part and the pairs are shared out between the parts."""
    rng = np.random.default_rng(n)
    parts = work_parts(np.array(counts))
    assert parts[0][1] == 0 and parts[-1][2] == rows * n
    assert all(e > b and (e - b) % 2 == 0 for _, b, e in parts[:-1])
    part_of = {tile: (b, e) for tile, b, e in parts}
    x = rng.integers(0, 5, (rows, n))
    for stage in network_stages(n):
        order, chunks = stage_plan(stage, rows, n, parts, workers)
        assert sorted(order) == list(range(rows * n))
        work = x.ravel()[order]
        pairs = 0
        for tile, begin, end, worklist in chunks:
            assert part_of[tile][0] == begin and end <= part_of[tile][1]
            sections = worker_sections(worklist)
            assert 1 <= len(sections) <= workers
            region = work[begin:end]
            at = 0
            for first, entries in sections:
                assert first == at  # each worker's pieces follow the last one's
                for m, repeats in entries:
                    for _ in range(repeats):
                        j = np.arange(m)
                        p = at + (2 * m - 1 - j if stage[0][3] else m + j)
                        lo, hi = region[at + j].copy(), region[p].copy()
                        region[at + j], region[p] = np.minimum(lo, hi), np.maximum(lo, hi)
                        at += 2 * m
                        pairs += m
            assert at == end - begin
        assert pairs == rows * sum(r[2] for r in stage)
        expected = x.copy()
        for lo, hi, length, flipped in stage:
            a = np.arange(lo, lo + length)
            b = hi - np.arange(length) if flipped else hi + np.arange(length)
            expected[:, a], expected[:, b] = np.minimum(x[:, a], x[:, b]), np.maximum(x[:, a], x[:, b])
        back = np.empty_like(work)
        back[order] = work
        np.testing.assert_array_equal(back.reshape(rows, n), expected)
        x = expected
    assert (np.diff(x, axis=1) >= 0).all()


def test_device_follows_the_network_with_ties_and_nans():
    """Keys with repeats and NaNs, values moved with them: exactly what the network does on
    the host, both ways round (NaNs stay where the comparators leave them)."""
    device = device_of()
    g = popsim.Graph(device)
    rng = np.random.default_rng(11)
    shape = (3, 37)
    keys = g.add_variable(FLOAT, shape, "keys")
    values = g.add_variable(INT, shape, "values")
    for t in (keys, values):
        g.set_tile_mapping(t, scattered_mapping(t.num_elements(), 4, rng))
    prog = Sequence()
    down, down_at = popops.top_k_with_permutation(g, prog, keys, popops.TopKParams(37))
    popops.sort_key_value_in_place(g, keys, values, 1, prog)
    x = rng.integers(0, 6, shape).astype(np.float32)
    x[rng.random(shape) < 0.15] = np.nan
    y = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    _, (got_k, got_v, got_down, got_at) = run(g, device, prog, [keys, values, down, down_at], {keys: x, values: y})
    want_k, want_v = network_on_host(x, y)
    np.testing.assert_array_equal(got_k, want_k)
    np.testing.assert_array_equal(got_v, want_v)
    want_down, want_at = network_on_host(x, np.broadcast_to(np.arange(37, dtype=np.uint32), shape), True)
    np.testing.assert_array_equal(got_down, want_down)
    np.testing.assert_array_equal(got_at, want_at)
    assert np.isnan(x).any() and (x[:, :, None] == x[:, None, :]).sum() > x.size  # both cases were there


def test_poplibs_top_k_case_fits_and_is_right():
    """PopLibs' top-k test case: 3 rows of 1234 FLOAT, k = 123, on 4 tiles, through
    popops.top_k_with_permutation and popnn.top_k. It fits with room to spare (it ran out
    of tile memory when each run of pairs had its own edge), no vertex reads or writes
    data off its tile, and the answer is numpy's."""
    device = device_of()
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (3, 1234), "t")
    g.set_tile_mapping(t, [[(i * 3702 // 4, (i + 1) * 3702 // 4)] for i in range(4)])
    prog = Sequence()
    values, indices = popops.top_k_with_permutation(g, prog, t, popops.TopKParams(123))
    out = []
    nn_values = popnn.top_k(g, t, out, 123, True, prog)
    x = np.random.default_rng(3).standard_normal((3, 1234)).astype(np.float32)
    engine, (got_v, got_i, got_nv, got_ni) = run(g, device, prog, [values, indices, nn_values, out[0]], {t: x})
    expected = -np.sort(-x, axis=1)[:, :123]
    np.testing.assert_array_equal(got_v, expected)
    np.testing.assert_array_equal(got_i, np.argsort(-x, axis=1, kind="stable")[:, :123])  # distinct values
    assert got_i.dtype == np.uint32
    np.testing.assert_array_equal(got_nv[:, 0], expected)
    np.testing.assert_array_equal(got_ni[:, 0], got_i)
    memory = engine.get_report().to_dict()["memory"]
    by = memory["by_category"]
    assert max(by["exchange_buffers"]) == 0
    total = np.sum([by[c] for c in by], axis=0)
    assert total.max() < memory["bytes_per_tile"] // 4, total  # both ops, a tenth of what it took


def _sort_memory(rows, n):
    """The memory report of a key-value sort of a [rows, n] FLOAT by INT on 4 tiles."""
    device = device_of()
    g = popsim.Graph(device)
    keys = g.add_variable(FLOAT, (rows, n), "keys")
    values = g.add_variable(UNSIGNED_INT, (rows, n), "values")
    for tensor in (keys, values):
        g.set_tile_mapping(tensor, [[(i * rows * n // 4, (i + 1) * rows * n // 4)] for i in range(4)])
    prog = Sequence()
    popops.sort_key_value_in_place(g, keys, values, 1, prog)
    return popsim.Engine(g, prog).get_report().to_dict()["memory"]["by_category"]


def test_memory_grows_with_the_data():
    """Four times the data: the data's share (inputs and work tensors) grows four times,
    vertex state and edge descriptors hardly at all (a few words per worker and stage,
    the stages growing as log2(n)^2); no tile's total more than four times. With an edge
    per run of pairs, edges grew faster than the data."""
    small, big = _sort_memory(2, 300), _sort_memory(2, 1200)
    assert np.allclose(np.array(big["variables"]), 4 * np.array(small["variables"]), rtol=0.05)

    def state(m):
        return np.array(m["vertex_state"]) + np.array(m["edge_descriptors"])
    assert (state(big) <= 1.6 * state(small)).all(), (state(small), state(big))
    assert (state(big) < np.array(big["variables"])).all()

    def total(m):
        return np.sum([m[c] for c in m], axis=0)
    assert (total(big) <= 4 * total(small)).all()


@pytest.mark.parametrize("rows,n,per_tile", [(16, 64, 256), (2, 1024, 512)])
def test_short_runs_keep_the_order_so_stages_copy_nothing(rows, n, per_tile):
    """Workers' shares are cut where runs start (within an eighth of a share), so a stage
    of short runs lays the rows out as the stage before did and sort_rows copies nothing:
    at most half the stages move data, none between stages of runs of 1 or 2 pairs."""
    parts = work_parts(np.full(4, per_tile))
    stages = network_stages(n)
    orders = [stage_plan(stage, rows, n, parts, 6)[0] for stage in stages]
    moved = [not np.array_equal(a, b) for a, b in zip(orders, orders[1:])]
    assert 0 < sum(moved) <= len(stages) // 2
    for s, move in enumerate(moved):
        if max(r[2] for r in stages[s]) <= 2 and max(r[2] for r in stages[s + 1]) <= 2:
            assert not move, s


def test_device_where_stages_copy_nothing():
    """Rows of 64 on 4 tiles: most stages keep the last one's order and run without a
    copy; the result is still the network's (key-value, with repeats)."""
    device = device_of()
    g = popsim.Graph(device)
    keys, values = g.add_variable(FLOAT, (16, 64), "keys"), g.add_variable(UNSIGNED_INT, (16, 64), "values")
    for t in (keys, values):
        g.set_tile_mapping(t, [[(i * 256, (i + 1) * 256)] for i in range(4)])
    prog = Sequence()
    popops.sort_key_value_in_place(g, keys, values, 1, prog, "kv")
    rng = np.random.default_rng(5)
    x = rng.integers(0, 20, (16, 64)).astype(np.float32)
    y = rng.permutation(1024).astype(np.uint32).reshape(16, 64)
    engine, (got_k, got_v) = run(g, device, prog, [keys, values], {keys: x, values: y})
    want_k, want_v = network_on_host(x, y)
    np.testing.assert_array_equal(got_k, want_k)
    np.testing.assert_array_equal(got_v, want_v)
    steps = engine.get_report().to_dict()["execution"]["steps"]
    stages = sum(s["kind"] == "Execute" for s in steps)
    copies = sum(s["kind"] == "Copy" and s["name"].startswith("Copy kv/keys/work") for s in steps)
    assert stages == len(network_stages(64)) and 0 < copies <= stages // 2
