"""The executable cache keeps code, not data: initial values (set_initial_value of
tensors, constants' values) are left out of its key and its entries, and a cache hit
packs the graph's current values (popsim/lower/initial_image.py)."""
import io
import logging

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.cachedir import store_verified
from popsim.contract import COLUMNS
from popsim.executable_file import read_executable, write_executable
from popsim.program import Copy, Execute, Sequence

from executable_sample import build, drive


def weights_program(device, weights, bias=(1.0, 2.0, 3.0), view=slice(0, 6), tile=2, overwrite=None):
    """Initial values on a view and a whole variable, a constant, an overlapping later
    initial value (``overwrite``: it wins); a program that copies them to host reads."""
    g = popsim.Graph(device)
    w = g.add_variable(FLOAT, [8], "w")
    g.set_tile_mapping(w, tile)
    g.set_initial_value(w[view], weights)
    b = g.add_constant(FLOAT, [3], list(bias), "b")
    g.set_tile_mapping(b, 1)
    k = g.add_variable(INT, [2], "k")
    g.set_tile_mapping(k, 3)
    g.set_initial_value(k, [7, 8])
    if overwrite is not None:
        g.set_initial_value(w[4:6], overwrite)
    out = g.add_variable(FLOAT, [3], "out")
    g.set_tile_mapping(out, 4)
    g.create_host_read("w", w)
    g.create_host_read("out", out)
    g.create_host_read("k", k)
    return g, [Sequence(Copy(b, out))]


def run(engine, device):
    engine.load(device)
    engine.run(0)
    return {name: engine.read_tensor(name) for name in ("w", "out", "k")}


def engine(device, cache, *args, **kwargs):
    g, progs = weights_program(device, *args, **kwargs)
    e = popsim.Engine(g, progs, {"popsim.cacheDir": str(cache)})
    return e, e.get_report().compilation


def expected_w(weights, view=slice(0, 6), overwrite=None):
    w = np.zeros(8, np.float32)
    w[view] = weights
    if overwrite is not None:
        w[4:6] = overwrite
    return w


def test_new_initial_values_and_constants_reuse_the_executable_and_are_what_runs(device, tmp_path):
    first, c1 = engine(device, tmp_path, np.arange(6))
    assert not c1.from_cache
    np.testing.assert_array_equal(run(first, device)["w"], expected_w(np.arange(6)))
    fresh = np.random.default_rng(1).random(6).astype(np.float32)  # a training script's new weights
    second, c2 = engine(device, tmp_path, fresh, bias=(-1.0, 0.5, 9.0))
    assert c2.from_cache and c2.cache_key == c1.cache_key and "lower graph" not in c2.phases
    got = run(second, device)
    np.testing.assert_array_equal(got["w"], expected_w(fresh))
    np.testing.assert_array_equal(got["out"], [-1.0, 0.5, 9.0])  # the constant's new values, copied by the program
    np.testing.assert_array_equal(got["k"], [7, 8])
    np.testing.assert_array_equal(run(first, device)["w"], expected_w(np.arange(6)))  # the first engine keeps its own
    third, c3 = engine(device, tmp_path, fresh, overwrite=[50, 60])  # a later, overlapping value: another key
    assert not c3.from_cache
    fourth, c4 = engine(device, tmp_path, np.ones(6), overwrite=[70, 80])
    assert c4.from_cache and c4.cache_key == c3.cache_key
    np.testing.assert_array_equal(run(fourth, device)["w"], expected_w(np.ones(6), overwrite=[70, 80]))


def test_what_lowering_reads_of_initial_values_still_recompiles(device, tmp_path):
    _, base = engine(device, tmp_path, np.arange(6))
    variants = [dict(view=slice(2, 8)), dict(view=slice(0, 8, 2), weights=np.arange(4)), dict(tile=5),
                dict(bias=(1.0, 2.0))]
    keys = {base.cache_key}
    for v in variants:
        kwargs = {"weights": np.arange(6), **v}
        if "bias" in v:  # a constant of another shape
            g, progs = weights_program(device, np.arange(6))
            g.set_tile_mapping(g.add_constant(FLOAT, [2], [1.0, 2.0], "extra"), 1)
            e = popsim.Engine(g, progs, {"popsim.cacheDir": str(tmp_path)})
            c = e.get_report().compilation
        else:
            e, c = engine(device, tmp_path, **kwargs)
        assert not c.from_cache, v
        keys.add(c.cache_key)
        w = run(e, device)["w"]
        np.testing.assert_array_equal(w, expected_w(kwargs["weights"], kwargs.get("view", slice(0, 6))))
    assert len(keys) == len(variants) + 1


def test_an_executable_from_the_cache_serializes_with_the_graphs_values(device, tmp_path):
    engine(device, tmp_path / "cache", np.arange(6))
    e, c = engine(device, tmp_path / "cache", np.full(6, 3.0), bias=(4.0, 5.0, 6.0))
    assert c.from_cache
    path = tmp_path / "weights.popsimexe"
    e.executable.serialize(path)
    loaded = popsim.Engine(popsim.Executable.deserialize(path))
    got = run(loaded, device)
    np.testing.assert_array_equal(got["w"], expected_w(np.full(6, 3.0)))
    np.testing.assert_array_equal(got["out"], [4.0, 5.0, 6.0])


def test_a_cache_entry_is_not_a_file_that_runs_on_its_own(device, tmp_path):
    _, c = engine(device, tmp_path, np.arange(6))
    entry = tmp_path / "executables" / f"{c.cache_key}.popsimexe"
    with pytest.raises(popsim.PopsimError, match="saved without its initial values.*exe.serialize"):
        popsim.Executable.deserialize(entry)


def rewrite_entry(entry, change):
    """Rewrite a cache entry through ``change(lowered)``, with a matching sha256: only
    the executable's own checks can notice what changed."""
    lowered, options = read_executable(entry, with_values=False)
    change(lowered)
    data = io.BytesIO()
    write_executable(data, lowered, options)
    store_verified(entry, data.getvalue())


def grow_last_segment(lowered):
    last = lowered.table_begin[lowered.init_table + 1] - 1
    lowered.copy_runs = lowered.copy_runs.copy()  # arrays read from a file are read-only
    lowered.copy_runs[last, COLUMNS["copy_runs"]["len"]] += 4


def split_sizes(lowered):
    lowered.init_sizes = np.concatenate(([4], lowered.init_sizes[:1] - 4, lowered.init_sizes[1:]))


def other_sizes(lowered):
    lowered.init_sizes = lowered.init_sizes[::-1].copy()


@pytest.mark.parametrize("tamper", [grow_last_segment, split_sizes, other_sizes])
def test_a_cache_entry_whose_init_table_does_not_fit_the_graph_is_compiled_again(device, tmp_path, caplog, tamper):
    _, c = engine(device, tmp_path, np.arange(6))
    rewrite_entry(tmp_path / "executables" / f"{c.cache_key}.popsimexe", tamper)
    caplog.set_level(logging.WARNING, logger="popsim")
    e, again = engine(device, tmp_path, np.arange(6) * 2)
    assert not again.from_cache and "cache entry unusable" in again.cache_reason
    assert "initial" in again.cache_reason
    assert "compiling it again" in caplog.text
    np.testing.assert_array_equal(run(e, device)["w"], expected_w(np.arange(6) * 2))
    assert engine(device, tmp_path, np.arange(6))[1].from_cache  # saved again, whole


class Scale(popsim.Vertex):
    x: popsim.InOut[popsim.Vector[float]]
    k: float

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] *= self.k


def scaled(device, cache, k, x):
    g = popsim.Graph(device)
    g.add_codelets(Scale)
    v = g.add_variable(FLOAT, [4], "x")
    g.set_tile_mapping(v, 0)
    g.set_initial_value(v, x)
    cs = g.add_compute_set("scale")
    vertex = g.add_vertex(cs, Scale, {"x": v})
    g.set_initial_value(vertex["k"], k)
    g.set_tile_mapping(vertex, 0)
    g.set_perf_estimate(vertex, 10)
    g.create_host_read("x", v)
    e = popsim.Engine(g, Execute(cs), {"popsim.cacheDir": str(cache)})
    e.load(device)
    e.run(0)
    return e.read_tensor("x"), e.get_report().compilation


@pytest.mark.compiler
def test_vertex_state_values_are_compiled_in_tensor_values_are_not(device, tmp_path):
    """Perf estimators read vertex state values, so they stay in the key and the entry;
    both initial images are loaded on a cache hit."""
    x, c1 = scaled(device, tmp_path, 2.0, [1, 2, 3, 4])
    np.testing.assert_array_equal(x, [2, 4, 6, 8])
    x, c2 = scaled(device, tmp_path, 2.0, [5, 6, 7, 8])
    assert c2.from_cache
    np.testing.assert_array_equal(x, [10, 12, 14, 16])
    x, c3 = scaled(device, tmp_path, 3.0, [5, 6, 7, 8])
    assert not c3.from_cache and c3.cache_key != c1.cache_key
    np.testing.assert_array_equal(x, [15, 18, 21, 24])
    x, c4 = scaled(device, tmp_path, 3.0, [1, 1, 1, 1])
    assert c4.from_cache
    np.testing.assert_array_equal(x, [3, 3, 3, 3])


def _row(table, column, value):
    def change(lowered):
        rows = getattr(lowered.vertices, table).copy()  # arrays read from a file are read-only
        rows[0, COLUMNS[table][column]] = value
        setattr(lowered.vertices, table, rows)
    return change


def _host_read_table(lowered):
    lowered.host_reads["y"].table = 10 ** 6


def _region_var(lowered):
    lowered.layout.region_var = lowered.layout.region_var + 100


@pytest.mark.compiler
@pytest.mark.parametrize("tamper, field", [
    (_row("vertices", "codelet", 7), "vertices.vertices (codelet column) row 0"),
    (_row("groups", "tile", 10 ** 6), "vertices.groups (tile column) row 0"),
    (_host_read_table, "host_reads.y: copy table 1000000 does not exist"),
    (_region_var, "layout.region_var row 0"),
])
def test_a_cache_entry_is_checked_like_a_file_whatever_its_digest_says(device, tmp_path, caplog, tamper, field):
    """Whoever can write the cache directory can rewrite an entry's digest too: an entry
    whose digest matches is checked like any file, and one that does not hold together
    is compiled again (the log and the compilation record say why), never run."""
    g, progs = build(device)
    options = {"popsim.cacheDir": str(tmp_path)}
    expected = drive(popsim.Engine(g, progs, options), device)
    key = popsim.Engine(g, progs, options).get_report().compilation.cache_key
    rewrite_entry(tmp_path / "executables" / f"{key}.popsimexe", tamper)
    caplog.set_level(logging.WARNING, logger="popsim")
    engine = popsim.Engine(g, progs, options)
    compilation = engine.get_report().compilation
    assert not compilation.from_cache and field in compilation.cache_reason and field in caplog.text
    got = drive(engine, device)
    np.testing.assert_array_equal(got["y"], expected["y"])
    assert got["cycles"] == expected["cycles"]


@pytest.mark.compiler
def test_a_cache_entry_the_core_refuses_is_evicted_and_compiled_again(device, tmp_path, caplog):
    """An entry that passes the file's checks but not the core's (a field offset that
    is not aligned to its elements: only the core knows what each codelet reads) is
    removed from the cache and compiled again once, so it does not stay there refused
    at every Engine."""
    g, progs = build(device)
    options = {"popsim.cacheDir": str(tmp_path)}
    expected = drive(popsim.Engine(g, progs, options), device)
    key = popsim.Engine(g, progs, options).get_report().compilation.cache_key
    entry = tmp_path / "executables" / f"{key}.popsimexe"
    rewrite_entry(entry, _row("fields", "offset", 1))
    caplog.set_level(logging.WARNING, logger="popsim")
    engine = popsim.Engine(g, progs, options)
    assert "compiling it again" in caplog.text and "malformed" in caplog.text
    assert not engine.get_report().compilation.from_cache
    got = drive(engine, device)
    np.testing.assert_array_equal(got["y"], expected["y"])
    assert popsim.Engine(g, progs, options).get_report().compilation.from_cache  # the entry stored again is good
