"""Compute sets in the engine: binding, exchange, workers, cycles, checks.

The vertices here are written directly against the codelet ABI (popsim_codelet.h) in
C, so these tests exercise the engine alone; the Python and C++ front ends have their
own tests under tests/codelet.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.codelet.compiler import compile_library
from popsim.codelet.fields import Direction, FieldKind, FieldSpec
from popsim.codelet.vertex_type import VertexType
from popsim.program import Copy, Execute, PrintTensor, Repeat, Sequence

pytestmark = pytest.mark.compiler

SOURCE = r"""
#include "popsim_codelet.h"
#include <string.h>
#define FIELDS(n) \
  uint64_t PREFIX##_size(void) { return n * sizeof(popsim_field); }
#define VERTEX(name, n) \
  uint64_t name##_size(void) { return n * sizeof(popsim_field); } \
  void name##_init(void *o) { (void)o; } \
  void name##_bind(void *o, const popsim_field *f) { memcpy(o, f, n * sizeof(popsim_field)); }

VERTEX(sum, 2)  /* in: Vector<float>, out: float; counts 5 + n cycles */
int sum_compute(void *o, uint32_t w, popsim_exec *ctx) {
  const popsim_field *f = o; const float *in = f[0].data; float s = 0;
  for (uint64_t i = 0; i < f[0].size; ++i) s += in[i];
  *(float *)f[1].data = s; ctx->cycles += 5 + f[0].size; (void)w; return 1;
}
VERTEX(scale, 2)  /* MultiVertex: data: InOut<Vector<float>>, k: float state; worker w takes i % W == w */
int scale_compute(void *o, uint32_t w, popsim_exec *ctx) {
  const popsim_field *f = o; float *d = f[0].data; float k = *(const float *)f[1].data;
  for (uint64_t i = w; i < f[0].size; i += ctx->num_workers) d[i] *= k;
  ctx->cycles += 3; return 1;
}
VERTEX(rowsums, 2)  /* rows: Input<VectorList<int>>, out: Output<Vector<int>> */
int rowsums_compute(void *o, uint32_t w, popsim_exec *ctx) {
  const popsim_field *f = o; const popsim_span *rows = f[0].data; int *out = f[1].data;
  for (uint64_t r = 0; r < f[0].size; ++r) {
    int s = 0; const int *row = rows[r].data;
    for (uint64_t j = 0; j < rows[r].size; ++j) s += row[j];
    out[r] = s;
  }
  (void)w; (void)ctx; return 1;
}
VERTEX(fails, 1)  /* x: Input<int>: returns false when x != 0 */
int fails_compute(void *o, uint32_t w, popsim_exec *ctx) {
  const popsim_field *f = o; (void)w; (void)ctx; return *(const int *)f[0].data == 0;
}
VERTEX(oob, 1)  /* v: Input<Vector<int>>: reports an index error for index size + 2 */
int oob_compute(void *o, uint32_t w, popsim_exec *ctx) {
  const popsim_field *f = o; (void)w;
  ctx->error = POPSIM_INDEX_ERROR; ctx->error_field = 0; ctx->error_index = (int64_t)f[0].size + 2;
  ctx->error_size = (int64_t)f[0].size; ctx->error_line = 7; return -1;
}
VERTEX(worker_id, 1)  /* out: Output<int>: which worker ran it */
int worker_id_compute(void *o, uint32_t w, popsim_exec *ctx) {
  const popsim_field *f = o; (void)ctx; *(int *)f[0].data = (int)w; return 1;
}
"""


def spec(name, kind, direction, dtype):
    return FieldSpec(name, kind, direction, dtype)


@pytest.fixture(scope="module")
def vertex_types():
    return abi_vertex_types()


def abi_vertex_types():
    lib = compile_library({"abi_vertices.c": SOURCE}, "c", "engine_test_vertices")
    V, S, L, ST = FieldKind.VECTOR_EDGE, FieldKind.SCALAR_EDGE, FieldKind.VECTOR_LIST, FieldKind.STATE
    I, O, IO, N = Direction.INPUT, Direction.OUTPUT, Direction.INOUT, Direction.NONE
    defs = {
        "Sum": ((spec("in", V, I, FLOAT), spec("out", S, O, FLOAT)), False, True),
        "Scale": ((spec("data", V, IO, FLOAT), spec("k", ST, N, FLOAT)), True, True),
        "RowSums": ((spec("rows", L, I, INT), spec("out", V, O, INT)), False, False),
        "Fails": ((spec("x", S, I, INT),), False, False),
        "Oob": ((spec("v", V, I, INT),), False, False),
        "WorkerId": ((spec("out", S, O, INT),), False, False),
    }
    symbols = {"Sum": "sum", "Scale": "scale", "RowSums": "rowsums", "Fails": "fails", "Oob": "oob",
               "WorkerId": "worker_id"}
    return {name: VertexType(name, fields, multi, lib, symbols[name], 16 * len(fields), "abi_vertices.c",
                             counts_cycles=counts, language="c")
            for name, (fields, multi, counts) in defs.items()}


@pytest.fixture
def make_graph(vertex_types):
    def make(device):
        g = popsim.Graph(device)
        g._state.codelets.types.update(vertex_types)
        return g
    return make


def run(graph, device, prog, reads, options=None):
    for i, t in enumerate(reads):
        graph.create_host_read(f"r{i}", t)
    e = popsim.Engine(graph, prog, options)
    e.load(device)
    e.run()
    return e, [e.read_tensor(f"r{i}") for i in range(len(reads))]


def test_tutorial3_suffix_sums(device, make_graph):
    """Each vertex reads v1[i:] (on tiles i..3) and writes v2[i] on its own tile."""
    g = make_graph(device)
    v1, v2 = g.add_variable(FLOAT, [4], "v1"), g.add_variable(FLOAT, [4], "v2")
    for i in range(4):
        g.set_tile_mapping(v1[i], i)
        g.set_tile_mapping(v2[i], i)
    c = g.add_constant(FLOAT, [4], [1.0, 1.5, 2.0, 2.5])
    g.set_tile_mapping(c, 0)
    cs = g.add_compute_set("cs")
    for i in range(4):
        v = g.add_vertex(cs, "Sum", {"in": v1.slice(i, 4), "out": v2[i]})
        g.set_tile_mapping(v, i)
        g.set_perf_estimate(v, 20)
    _, (out,) = run(g, device, Sequence(Copy(c, v1), Execute(cs)), [v2])
    np.testing.assert_array_equal(out, [7, 6, 4.5, 2.5])


def test_outputs_on_other_tiles_and_scattered_views(device, make_graph):
    """Inputs gathered from other tiles and from strided views; outputs written back
    to another tile, through a transposed view."""
    g = make_graph(device)
    m = g.add_variable(FLOAT, [3, 4], "m", mapping=popsim.VariableMappingMethod.LINEAR)
    g.set_tile_mapping(m[:, 1:3], 9)
    out = g.add_variable(FLOAT, [2, 2], "out")
    g.set_tile_mapping(out, 5)
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    g.set_initial_value(m, data)
    cs = g.add_compute_set("cs")
    cols = m.transpose()  # column j is a strided view
    targets = out.transpose().flatten()  # out^T element k
    for k in range(4):
        v = g.add_vertex(cs, "Sum", {"in": cols[k], "out": targets[k]})
        g.set_tile_mapping(v, k)
    _, (res,) = run(g, device, Execute(cs), [out])
    np.testing.assert_array_equal(res.T.reshape(-1), data.sum(axis=0))


def test_multivertex_runs_on_every_worker(device, make_graph):
    g = make_graph(device)
    d = g.add_variable(FLOAT, [20], "d")
    g.set_tile_mapping(d, 3)
    g.set_initial_value(d, np.arange(20))
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "Scale", {"data": d})
    g.set_initial_value(v["k"], 2.5)
    g.set_tile_mapping(v, 3)
    e, (res,) = run(g, device, Execute(cs), [d])
    np.testing.assert_array_equal(res, np.arange(20) * 2.5)  # every element touched exactly once
    (step,) = e.get_report().execution.steps
    assert step.tile_compute[3] == 6 * 3  # all 6 workers spent 3 cycles


def test_vector_list_and_field_size(device, make_graph):
    g = make_graph(device)
    src = g.add_variable(INT, [10], "src")
    g.set_tile_mapping(src, 0)
    g.set_initial_value(src, np.arange(10))
    out = g.add_variable(INT, [3], "out")
    g.set_tile_mapping(out, 1)
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "RowSums", {"out": out})
    g.set_field_size(v["rows"], 3)
    g.connect(v["rows"][0], src.slice(0, 2))
    g.connect(v["rows"][1], src.slice(2, 7).reverse(0))
    g.connect(v["rows"][2], src[::3])
    g.set_tile_mapping(v, 1)
    g.set_perf_estimate(v, 10)
    _, (res,) = run(g, device, Execute(cs), [out])
    np.testing.assert_array_equal(res, [1, 20, 18])
    assert g.get_field_size(v["rows"]) == 3


def test_workers_are_dealt_round_robin_and_tile_time_is_busiest_worker(device, make_graph):
    g = make_graph(device)
    w = g.add_variable(INT, [8], "w")
    g.set_tile_mapping(w, 2)
    cs = g.add_compute_set("cs")
    for i in range(8):
        v = g.add_vertex(cs, "WorkerId", {"out": w[i]})
        g.set_tile_mapping(v, 2)
        g.set_perf_estimate(v, 10 + i)
    e, (res,) = run(g, device, Execute(cs), [w])
    np.testing.assert_array_equal(res, [0, 1, 2, 3, 4, 5, 0, 1])
    busy = [10 + 16, 11 + 17, 12, 13, 14, 15]  # worker sums
    (step,) = e.get_report().execution.steps
    assert step.tile_compute[2] == 6 * max(busy)
    n = device.target.num_tiles
    assert step.categories["compute_including_idle"] == pytest.approx(6 * max(busy) / n)
    assert step.categories["compute_excluding_idle"] == pytest.approx(sum(busy) / n)
    sync = device.target.max_ipu_sync_delay
    assert step.cycles == 6 * max(busy) + sync  # everything on one tile: no exchange


def test_estimates_estimators_counting_and_default(device, make_graph):
    g = make_graph(device)
    x = g.add_variable(FLOAT, [4], "x")
    y = g.add_variable(FLOAT, [3], "y")
    i = g.add_variable(INT, [1], "i")
    for t in (x, y, i):
        g.set_tile_mapping(t, 0)
    cs = g.add_compute_set("cs")
    counted = g.add_vertex(cs, "Sum", {"in": x, "out": y[0]})  # counts 5 + 4
    fixed = g.add_vertex(cs, "Sum", {"in": x[0:2], "out": y[1]})
    g.set_perf_estimate(fixed, 100)
    default = g.add_vertex(cs, "Fails", {"x": i[0]})  # no estimate, no counting
    g.register_perf_estimator("WorkerId", lambda info, target: (info.field_size("out") * 7, 0))
    est = g.add_vertex(cs, "WorkerId", {"out": g.clone(i)[0]})
    for v in (counted, fixed, default, est):
        g.set_tile_mapping(v, 0)
    e, _ = run(g, device, Execute(cs), [])
    r = e.get_report()
    by_type = {t.name: (t.instances, t.cycles) for t in r.execution.vertex_types}
    assert by_type["Sum"] == (2, 9 + 100)
    assert by_type["Fails"] == (1, popsim.lower.cost_model.DEFAULT_VERTEX_CYCLES)
    assert by_type["WorkerId"] == (1, 7)
    assert any("'Fails' has no perf estimate" in w for w in r.warnings)


def test_results_and_cycles_do_not_depend_on_thread_count(tmp_path):
    """Same program with 1 and 2 engine threads: identical outputs and reports."""
    script = tmp_path / "threads.py"
    script.write_text(f"""
import sys, json, numpy as np, popsim
sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_compute_sets import build_many
g, dev, prog, outs = build_many()
e = popsim.Engine(g, prog, {{"popsim.numThreads": sys.argv[1]}})
e.load(dev); e.run()
r = e.get_report()
print(json.dumps([e.read_tensor("out").tolist(), r.execution.total_cycles,
                  [s.tile_compute for s in r.execution.steps if s.tile_compute]]))
""")
    outputs = [subprocess.run([sys.executable, str(script), n], capture_output=True, text=True, check=True).stdout
               for n in ("1", "2")]
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) > 100


def build_many():
    """Many tiles of Sum vertices with uneven work, for the thread-count test."""
    device = popsim.IPUModel().create_device()
    types = abi_vertex_types()
    g = popsim.Graph(device)
    g._state.codelets.types.update(types)
    n = 3000
    x = g.add_variable(FLOAT, [n, 8], "x", mapping=popsim.VariableMappingMethod.LINEAR)
    out = g.add_variable(FLOAT, [n], "out", mapping=popsim.VariableMappingMethod.LINEAR)
    g.set_initial_value(x, np.random.default_rng(7).random((n, 8)))
    cs = g.add_compute_set("many")
    for k in range(n):
        v = g.add_vertex(cs, "Sum", {"in": x[k, : 1 + k % 8], "out": out[k]})
        g.set_tile_mapping(v, k % 700)
    g.create_host_read("out", out)
    return g, device, Repeat(3, Execute(cs)), [out]


def test_write_conflict_is_a_graph_cycle_error(device, make_graph):
    g = make_graph(device)
    x = g.add_variable(FLOAT, [4], "x")
    y = g.add_variable(FLOAT, [4], "y")
    g.set_tile_mapping(x, 0)
    g.set_tile_mapping(y, 1)
    cs = g.add_compute_set("clash")
    for k in range(2):
        v = g.add_vertex(cs, "Sum", {"in": x, "out": y[2]})
        g.set_tile_mapping(v, k)
    with pytest.raises(popsim.GraphCycleError, match=r"compute set 'clash'.*field 'out' of vertex 'Sum'.*tile 0.*"
                                                     r"field 'out' of vertex 'Sum'.*tile 1.*\[2:3\) of variable 'y'"):
        popsim.Engine(g, Execute(cs))
    ok = g.add_compute_set("separate")
    for k in range(2):
        v = g.add_vertex(ok, "Sum", {"in": x, "out": y[k]})
        g.set_tile_mapping(v, k)
    popsim.Engine(g, Execute(ok))


def test_unconnected_field_and_missing_tile(device, make_graph):
    g = make_graph(device)
    x = g.add_variable(FLOAT, [4], "x")
    g.set_tile_mapping(x, 0)
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "Sum", {"in": x})
    g.set_tile_mapping(v, 0)
    with pytest.raises(popsim.GraphConnectionError, match=r"field 'out' \(Output<FLOAT>\) of vertex 'Sum'.*not "
                                                          r"connected.*graph.connect"):
        popsim.Engine(g, Execute(cs))
    cs2 = g.add_compute_set("cs2")
    g.add_vertex(cs2, "Sum", {"in": x, "out": g.clone(x)[0]})
    with pytest.raises(popsim.InvalidTileMappingError, match="vertex 'Sum'.*has no tile.*set_tile_mapping"):
        popsim.Engine(g, Execute(cs2))
    cs3 = g.add_compute_set("cs3")
    s = g.add_vertex(cs3, "Scale", {"data": g.clone(x)})
    g.set_tile_mapping(s, 0)
    with pytest.raises(popsim.GraphConnectionError, match=r"field 'k'.*not connected.*set_initial_value"):
        popsim.Engine(g, Execute(cs3))


def test_vertex_returning_false_and_index_error(device, make_graph):
    g = make_graph(device)
    flag = g.add_variable(INT, [1], "flag")
    g.set_tile_mapping(flag, 4)
    g.create_host_write("flag", flag)
    vec = g.add_variable(INT, [3], "vec")
    g.set_tile_mapping(vec, 6)
    cs, bad = g.add_compute_set("checks"), g.add_compute_set("oob")
    v = g.add_vertex(cs, "Fails", {"x": flag[0]})
    g.set_tile_mapping(v, 4)
    w = g.add_vertex(bad, "Oob", {"v": vec})
    g.set_tile_mapping(w, 6)
    e = popsim.Engine(g, [Execute(cs), Execute(bad)])
    e.load(device)
    e.run(0)
    e.write_tensor("flag", np.array([1], np.int32))
    with pytest.raises(popsim.ApplicationRuntimeError, match=r"vertex 'Fails' \(#0\) on tile 4 in compute set "
                                                             r"'checks' returned false"):
        e.run(0)
    with pytest.raises(popsim.IndexError, match=r"compute set 'oob', vertex #0 on tile 6: vertex type 'Oob': index 5 "
                                                r"is out of range for field 'v' of size 3 .* "
                                                r"at line 7 of abi_vertices.c"):
        e.run(1)
    e.write_tensor("flag", np.array([0], np.int32))
    e.run(0)  # usable again


def test_connection_checks(device, make_graph):
    g = make_graph(device)
    x = g.add_variable(FLOAT, [4], "x")
    i = g.add_variable(INT, [4], "i")
    c = g.add_constant(FLOAT, [1], [1.0], "c")
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "Sum")
    with pytest.raises(popsim.UnknownFieldError, match="'Sum' has no field 'inn'.*did you mean 'in'"):
        v["inn"]
    with pytest.raises(popsim.GraphConnectionError, match="holds FLOAT but tensor 'i' is INT"):
        g.connect(v["in"], i)
    with pytest.raises(popsim.GraphConnectionError, match=r"is a scalar but tensor 'x' has shape \[4\]"):
        g.connect(v["out"], x)
    with pytest.raises(popsim.GraphConnectionError, match="is a vector but tensor 'x' is a scalar"):
        g.connect(v["in"], x[0])
    with pytest.raises(popsim.GraphConnectionError, match="written by the vertex but tensor 'c'"):
        g.connect(v["out"], c[0])
    with pytest.raises(popsim.UnknownVertexTypeError, match="unknown vertex type 'Summ'.*did you mean 'Sum'"):
        g.add_vertex(cs, "Summ")


def test_interleaving_with_control_flow_and_printing(device, make_graph, capsys):
    g = make_graph(device)
    d = g.add_variable(FLOAT, [4], "d")
    g.set_tile_mapping(d, 0)
    g.set_initial_value(d, [1, 2, 3, 4])
    cs = g.add_compute_set("double")
    v = g.add_vertex(cs, "Scale", {"data": d})
    g.set_initial_value(v["k"], 2.0)
    g.set_tile_mapping(v, 0)
    e, (res,) = run(g, device, Repeat(3, Sequence(Execute(cs), PrintTensor("d", d))), [d])
    np.testing.assert_array_equal(res, [8, 16, 24, 32])
    assert capsys.readouterr().out.splitlines()[-1] == "d: [8.0000000 16.0000000 24.0000000 32.0000000]"
    assert e.get_report().execution.steps[0].count == 3
