"""virtualGraphMode Auto (popart/auto_virtual_graph.py): the split points and the balanced
split, sessions sharded over 2 and 4 IPUs (inference, pipelined, training) against the
same model on one IPU bit for bit, each IPU's tiles running only its ops (from the report),
and ``estimate --ipus``: per-IPU lines, and a model too big for one IPU that fits two."""
import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

import onnx
from onnx import helper

from popsim import popart
from popsim.popart.__main__ import main
from popsim.popart.auto_virtual_graph import auto_split, split_points
from popsim.popart.estimate import estimate
from popsim.popart.model import load

TILES = 4
FLOAT = onnx.TensorProto.FLOAT
Auto = popart.VirtualGraphMode.Auto


def _mlp(layers=4, width=8, batch=2, residual=False, seed=0):
    """MatMul + Relu layers (an ONNX model); with ``residual`` layer 1's output is added to
    layer 2's, so nothing can be split between them."""
    rng = np.random.default_rng(seed)
    nodes, inits, y = [], [], "x"
    for k in range(layers):
        w = (rng.standard_normal((width, width)) * 0.4).astype(np.float32)
        inits.append(onnx.numpy_helper.from_array(w, f"w{k}"))
        nodes.append(helper.make_node("MatMul", [y, f"w{k}"], [f"m{k}"], name=f"fc{k}"))
        nodes.append(helper.make_node("Relu", [f"m{k}"], [f"r{k}"], name=f"relu{k}"))
        y = f"r{k}"
        if residual and k == 2:
            nodes.append(helper.make_node("Add", ["r1", "r2"], ["s2"], name="skip"))
            y = "s2"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", FLOAT, [batch, width])],
                              [helper.make_tensor_value_info(y, FLOAT, [batch, width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_split_points_are_where_all_data_flows_through_one_op():
    plain, skip = load(_mlp()), load(_mlp(residual=True))
    assert [plain.nodes[k].name for k in split_points(plain.nodes)] == \
        ["fc0", "relu0", "fc1", "relu1", "fc2", "relu2", "fc3"]
    # relu1's output is read by fc2 and by the skip Add after relu2: no split between them
    assert [skip.nodes[k].name for k in split_points(skip.nodes)] == ["fc0", "relu0", "fc1", "relu1", "skip", "fc3"]


def test_the_split_balances_the_weights_and_fills_every_ipu():
    model = load(_mlp(layers=4))
    names = [n.name for n in model.nodes]
    for ipus, want in ((2, [0, 0, 0, 1, 1, 1, 1, 1]),     # 2 weights of 4 by the end of fc1
                       (4, [0, 1, 1, 2, 2, 3, 3, 3])):    # one weight an IPU, each split after a MatMul
        got = auto_split(model, model.nodes, ipus)
        assert [got[id(n)] for n in model.nodes] == want, (ipus, names)
    eight = auto_split(model, model.nodes, 8)              # 7 split points: one op an IPU, none left empty
    assert sorted(eight.values()) == list(range(8))
    with pytest.raises(popart.popart_exception, match=r"couldn't find enough splits for 9 IPUs \(only 7"):
        auto_split(model, model.nodes, 9)


def _run(model, ipus, bps=4, pipelined=False, seed=1):
    data = np.random.default_rng(seed).standard_normal((bps, 2, 8)).astype(np.float32)
    out_id = model.graph.output[0].name
    opts = popart.SessionOptions()
    if ipus > 1:
        opts.virtualGraphMode = Auto
    opts.enablePipelining = pipelined
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus, "tilesPerIPU": TILES})
    session = popart.InferenceSession(model.SerializeToString(), popart.DataFlow(bps, {
        out_id: popart.AnchorReturnType("ALL")}), device, userOptions=opts)
    session.prepareDevice()
    out = session.initAnchorArrays()
    session.weightsFromHost()
    session.run(popart.PyStepIO({"x": data}, out))
    return out[out_id], session


def _ipus_computing(report, node):
    """The IPUs whose tiles compute in the Execute steps of ``node``'s compute sets."""
    ipus = set()
    for step in report.execution.steps:
        cs = step.compute_set or ""
        if step.kind == "Execute" and (cs == node or cs.startswith(node + "/")):
            ipus |= {tile // TILES for tile, cycles in enumerate(step.tile_compute) if cycles > 0}
    return ipus


@pytest.mark.parametrize("ipus, pipelined", [(2, False), (4, False), (4, True)])
def test_auto_sessions_give_the_one_ipu_results_bit_for_bit(ipus, pipelined):
    model = _mlp(residual=True)
    want, _ = _run(model, 1)
    got, session = _run(model, ipus, pipelined=pipelined)
    np.testing.assert_array_equal(got, want)
    report = session.getReport()
    assert report.target.num_ipus == ipus
    placed = {n.name: session._plan.node_ipu[id(n)] for n in session.model.nodes}
    assert sorted(set(placed.values())) == list(range(ipus))
    for name, ipu in placed.items():
        if name != "skip" or ipus < 4:
            assert _ipus_computing(report, name) <= {ipu}, name   # its compute sets: on its IPU only
    assert _ipus_computing(report, "fc0") == {0} and _ipus_computing(report, "fc3") == {ipus - 1}
    held = 0   # the tensors on each tile (the report's memory): its IPU's ops' outputs, weights and copies
    for entry in report.memory.largest:
        for tensor, _ in entry["tensors"]:
            owner, _, rest = tensor.partition("/")
            where = {placed.get(owner), placed.get("fc" + owner[1:]) if owner.startswith("w") else None,
                     int(rest[3:]) if rest.startswith("ipu") else None} - {None}
            if where:
                assert where == {entry["tile"] // TILES}, (tensor, entry["tile"])
                held += 1
    assert held >= 3 * ipus


def test_auto_training_gives_the_one_ipu_weights_bit_for_bit():
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 8]), "x")
    rng = np.random.default_rng(3)
    y = x
    for k in range(3):
        w = b.addInitializedInputTensor((rng.standard_normal((8, 8)) * 0.4).astype(np.float32), f"w{k}")
        y = b.aiOnnx.relu([b.aiOnnx.matmul([y, w])])
    loss = b.aiGraphcore.l1loss([y], 0.5)
    data = rng.standard_normal((2, 2, 8)).astype(np.float32)
    results = []
    for ipus in (1, 2):
        opts = popart.SessionOptions()
        if ipus > 1:
            opts.virtualGraphMode = Auto
        device = popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus, "tilesPerIPU": TILES})
        s = popart.TrainingSession(b.getModelProto(), popart.DataFlow(2, {loss: popart.AnchorReturnType("ALL")}),
                                   loss, popart.ConstSGD(0.1), device, userOptions=opts)
        s.prepareDevice()
        out = s.initAnchorArrays()
        s.weightsFromHost()
        s.run(popart.PyStepIO({x: data}, out))
        results.append((out[loss], s.weightsToHost()))
        assert ipus == 1 or sorted(set(s._plan.node_ipu.values())) == [0, 1]
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for tid, value in results[0][1].items():
        np.testing.assert_array_equal(results[1][1][tid], value, err_msg=tid)


def test_auto_errors():
    opts = popart.SessionOptions()
    opts.virtualGraphMode = Auto
    opts.enableReplicatedGraphs, opts.replicatedGraphCount = True, 2
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 3, "tilesPerIPU": TILES})
    with pytest.raises(popart.popart_exception, match=r"3 IPUs do not divide into replicatedGraphCount \(2\)"):
        popart.InferenceSession(_mlp().SerializeToString(), popart.DataFlow(1, ["r3"]), device, userOptions=opts)


def test_estimate_ipus_prints_each_ipu_and_runs_the_one_ipu_step(tmp_path, capsys):
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(), str(path))
    assert main(["estimate", str(path), "--batch", "2", "--ipus", "4", "--tiles-per-ipu", str(TILES),
                 "--report", ""]) == 0
    out = capsys.readouterr().out
    assert "Device:             4 IPUs of 4 tiles" in out and "virtualGraphMode Auto" in out
    for k, ops in enumerate((1, 2, 2, 3)):
        assert f"  IPU {k}: {ops} ops, fullest tile " in out, k
    assert out.count("computes ") == 4


def _big(layers=4, width=320):
    """MatMuls of 320 x 320 float weights (400 kB each): 1.6 MB of weights, over the 1.28 MB of
    an IPU of 2 tiles, under those of two."""
    nodes, inits, y = [], [], "x"
    for k in range(layers):
        inits.append(onnx.numpy_helper.from_array(np.full((width, width), 0.001, np.float32), f"w{k}"))
        nodes.append(helper.make_node("MatMul", [y, f"w{k}"], [f"m{k}"], name=f"fc{k}"))
        nodes.append(helper.make_node("Relu", [f"m{k}"], [f"r{k}"], name=f"relu{k}"))
        y = f"r{k}"
    graph = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", FLOAT, [1, width])],
                              [helper.make_tensor_value_info(y, FLOAT, [1, width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_model_too_big_for_one_ipu_fits_two():
    one = estimate(_big(), 1, tiles_per_ipu=2, report_path=None, progress=False)
    two = estimate(_big(), 1, ipus=2, tiles_per_ipu=2, report_path=None, progress=False)
    assert not one.fits and one.cycles_per_step is None
    assert two.fits and two.cycles_per_step > 0 and [f.ipu for f in two.per_ipu] == [0, 1]
    for f in two.per_ipu:   # the weights split in two: each IPU about half full
        assert 0.4 * two.bytes_per_tile < f.fullest[1] < two.bytes_per_tile, f
        assert f.fullest[0] // 2 == f.ipu and f.compute_cycles > 0
    assert max(f.fullest[1] for f in two.per_ipu) == two.fullest[0][1]
    assert "  IPU 1: 5 ops" in two.text()


def test_a_pipelined_training_estimate_accumulates_over_the_pipeline():
    """Training pipelined over 2 IPUs: PopART needs an accumulation of at least 2 x 2 - 1
    micro-batches, which samples/s counts."""
    e = estimate(_mlp(layers=2), 2, ipus=2, pipeline=True, train=True, tiles_per_ipu=TILES, report_path=None,
                 progress=False)
    assert e.fits and e.train and e.pipelined and e.accumulation == 3
    assert e.samples_per_second == pytest.approx(2 * 3 * e.clock_hz / e.cycles_per_step)
    assert [f.nodes for f in e.per_ipu] == [2, 3] and all(f.compute_cycles > 0 for f in e.per_ipu)
    assert "x 3 micro-batches" in e.text() and ", pipelined" in e.text()
