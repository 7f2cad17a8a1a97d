"""``python -m popsim.popart estimate``: a small model that fits (its figures checked against
the session's own run and the op count), a model too large for its tiles (OutOfMemoryException
from prepareDevice, the fullest tiles), rebatching, and the errors of bad arguments."""
import json

import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

import onnx
import onnx.reference
from onnx import helper

from popsim import popart
from popsim.popart.__main__ import main
from popsim.popart.estimate import constants_as_weights, estimate, rebatch
from popsim.popart.model import load

FLOAT = onnx.TensorProto.FLOAT


def _cnn(batch=2, reshape_as="initializer"):
    """Conv -> Relu -> Reshape to [batch, 256] (a constant shape naming the batch) -> MatMul."""
    w = onnx.numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, np.float32), "w")
    w2 = onnx.numpy_helper.from_array(np.full((256, 10), 0.01, np.float32), "w2")
    shape = np.array([batch, 256], np.int64)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu1"),
             helper.make_node("Reshape", ["r", "shape"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "w2"], ["y"], name="fc")]
    inits = [w, w2]
    if reshape_as == "initializer":
        inits.append(onnx.numpy_helper.from_array(shape, "shape"))
    else:
        nodes.insert(0, helper.make_node("Constant", [], ["shape"], value=onnx.numpy_helper.from_array(shape)))
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", FLOAT, [batch, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", FLOAT, [batch, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


def _too_big():
    """Relu of 2 x 300,000 floats: 4.8 MB in and out, far over 2 tiles of 624 kB."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu_big")], "big",
                              [helper.make_tensor_value_info("x", FLOAT, [1, 300000])],
                              [helper.make_tensor_value_info("y", FLOAT, [1, 300000])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


@pytest.mark.parametrize("reshape_as", ["initializer", "Constant"])
def test_rebatch_sets_the_inputs_and_the_reshape_that_names_the_batch(reshape_as):
    proto = rebatch(_cnn(2, reshape_as), 5)
    dims = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
            for vi in list(proto.graph.input) + list(proto.graph.output)}
    assert dims["x"] == [5, 3, 8, 8] and dims["y"] == [5, 10]
    x = np.random.default_rng(0).standard_normal((5, 3, 8, 8)).astype(np.float32)
    (y,) = onnx.reference.ReferenceEvaluator(proto).run(None, {"x": x})
    assert y.shape == (5, 10)


def test_light_models_weights_become_initializers_and_ir3_models_rebatch():
    """As the onnx package's light models: IR version 3 (initializers are inputs too), opset 9,
    weights made by ConstantOfShape, a Reshape to [1, 256] before the classifier."""
    model = _cnn(1)
    shape = onnx.numpy_helper.from_array(np.array([4, 3, 3, 3], np.int64), "w_shape")
    fill = helper.make_node("ConstantOfShape", ["w_shape"], ["w"], value=onnx.numpy_helper.from_array(
        np.array([0.25], np.float32)))
    g = model.graph
    inits = [t for t in g.initializer if t.name != "w"] + [shape]
    del g.initializer[:]
    g.initializer.extend(inits)
    g.node.insert(0, fill)
    g.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in inits)
    model.ir_version, model.opset_import[0].version = 3, 9
    proto = rebatch(constants_as_weights(model), 3)
    loaded = load(proto)
    assert loaded.inputs == {"x": ("FLOAT", [3, 3, 8, 8])}
    assert "ConstantOfShape" not in [n.op_type for n in loaded.nodes]
    np.testing.assert_array_equal(loaded.initializers["w"], np.full((4, 3, 3, 3), 0.25, np.float32))
    x = np.random.default_rng(1).standard_normal((3, 3, 8, 8)).astype(np.float32)
    want = onnx.reference.ReferenceEvaluator(rebatch(model, 3)).run(None, {"x": x})[0]
    np.testing.assert_allclose(onnx.reference.ReferenceEvaluator(proto).run(None, {"x": x})[0], want, rtol=1e-6)


def test_a_model_that_cannot_be_rebatched_is_refused():
    flat = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                             [helper.make_tensor_value_info("x", FLOAT, [])],
                             [helper.make_tensor_value_info("y", FLOAT, [])])
    with pytest.raises(popart.popart_exception, match="no batch dimension"):
        rebatch(helper.make_model(flat, opset_imports=[helper.make_opsetid("", 11)]), 4)
    two = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "g",
                            [helper.make_tensor_value_info("a", FLOAT, [2, 3]),
                             helper.make_tensor_value_info("b", FLOAT, [3, 3])],
                            [helper.make_tensor_value_info("y", FLOAT, [3, 3])])
    with pytest.raises(popart.popart_exception, match="disagree"):
        rebatch(helper.make_model(two, opset_imports=[helper.make_opsetid("", 11)]), 4)


def test_a_small_model_fits_and_its_figures_are_the_sessions(tmp_path):
    path = tmp_path / "cnn.onnx"
    onnx.save(_cnn(2), str(path))
    report = tmp_path / "r.html"
    e = estimate(str(path), 4, tiles_per_ipu=16, batches_per_step=2, report_path=str(report), progress=False)
    assert e.fits and not e.tiles_over and e.inputs == {"x": [4, 3, 8, 8]}
    assert e.report.execution.total_cycles == e.cycles_per_step > 0
    # every step is some node's or the other line's: they add up to the step
    assert sum(o.cycles for o in e.ops) + e.other_cycles == pytest.approx(e.cycles_per_step) and not e.update_cycles
    assert {o.name for o in e.ops} == {"conv1", "relu1", "fc"}     # the Reshape is a view: no cycles
    assert e.samples_per_second == pytest.approx(4 * 2 * e.clock_hz / e.cycles_per_step)
    assert e.fullest[0][1] == max(e.report.memory.figures().tiles) < e.bytes_per_tile
    assert report.read_text().startswith("<!DOCTYPE html>") and str(int(e.cycles_per_step)) in report.read_text()
    twice = estimate(str(path), 4, tiles_per_ipu=16, batches_per_step=2, replicas=3, report_path=None,
                     progress=False)
    assert twice.samples_per_second == pytest.approx(3 * e.samples_per_second)


def test_a_training_estimate_runs_the_backward_pass_and_the_update(tmp_path):
    path = tmp_path / "cnn.onnx"
    onnx.save(_cnn(2), str(path))
    infer = estimate(str(path), 4, tiles_per_ipu=16, report_path=None, progress=False)
    train = estimate(str(path), 4, tiles_per_ipu=16, train=True, report_path=None, progress=False)
    assert train.train and train.fits and "L1" in [o.op_type for o in train.ops]
    assert train.update_cycles > 0 and train.cycles_per_step > 2 * infer.cycles_per_step
    assert sum(o.cycles for o in train.ops) + train.update_cycles + train.other_cycles == \
        pytest.approx(train.cycles_per_step)
    by_name = {o.name: o.cycles for o in train.ops}
    for o in infer.ops:   # each op's gradient runs beside it, and is counted as its
        assert by_name[o.name] > o.cycles
    assert "training: forward, the L1 loss" in train.text() and "(weight updates)" in train.text()


def test_replicas_built_as_a_replicated_graph_run_as_counted_ones(tmp_path):
    """Inference replicas run apart: a replicated graph's step takes what one replica's does.
    Training replicas all-reduce their gradients: built, the step takes longer than one."""
    path = tmp_path / "cnn.onnx"
    onnx.save(_cnn(2), str(path))
    kw = dict(tiles_per_ipu=16, replicas=3, report_path=None, progress=False)
    counted, built = estimate(str(path), 4, **kw), estimate(str(path), 4, build_replicas=True, **kw)
    assert built.replicas_built and not counted.replicas_built
    assert built.cycles_per_step == counted.cycles_per_step and built.fullest == counted.fullest
    assert built.samples_per_second == pytest.approx(3 * 4 * built.clock_hz / built.cycles_per_step)
    assert built.report.target.replicas == 3 and "built as a replicated graph" in built.text()
    kw["replicas"] = 2
    counted, built = (estimate(str(path), 4, train=True, build_replicas=b, **kw) for b in (False, True))
    assert built.cycles_per_step > counted.cycles_per_step


def test_out_of_memory_from_prepare_device_names_the_fullest_tiles():
    data_flow = popart.DataFlow(1, {"y": popart.AnchorReturnType("ALL")})
    device = popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": 2})
    session = popart.InferenceSession(fnModel=_too_big().SerializeToString(), dataFlow=data_flow,
                                      deviceInfo=device)
    with pytest.raises(popart.OutOfMemoryException, match=r"2 of 2 tile\(s\) need more than their 638,976") as info:
        session.prepareDevice()
    e = info.value
    assert isinstance(e, popart.popart_exception)
    tiles = e.report.memory.figures().tiles
    assert e.fullestTiles(2) == sorted([(t, int(b)) for t, b in enumerate(tiles)], key=lambda tb: -tb[1])
    assert min(tiles) > 638976 and "Tile(s) out of memory:                               2" in e.getSummaryReport()
    assert '"bytes_per_tile"' in e.getGraphReport() and e.getProfilePath() == ""
    assert f"tile {e.fullestTiles(1)[0][0]} {e.fullestTiles(1)[0][1]:,} bytes" in str(e)


def test_out_of_memory_is_judged_before_tile_memory_is_allocated(monkeypatch):
    """A model that does not fit never gets its tile memory (a large batch's would need gigabytes
    of host memory), yet the exception has the full report, whatever the environment sets."""
    import popsim.engine
    monkeypatch.setattr(popsim.engine, "build_machine", lambda *a: pytest.fail("tile memory was allocated"))
    for env in ({}, {"debug.allowOutOfMemory": "false"}):
        monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", json.dumps(env))
        session = popart.InferenceSession(fnModel=_too_big().SerializeToString(), deviceInfo=popart.DeviceManager(
            ).createIpuModelDevice({"tilesPerIPU": 2}),
            dataFlow=popart.DataFlow(1, {"y": popart.AnchorReturnType("ALL")}))
        with pytest.raises(popart.OutOfMemoryException, match=r"2 of 2 tile\(s\) need more") as info:
            session.prepareDevice()
        assert [t for t, _ in info.value.fullestTiles()] in ([0, 1], [1, 0])
        assert "Tile(s) out of memory:" in info.value.getSummaryReport()


def test_allow_out_of_memory_builds_the_engine_which_then_refuses_to_run():
    import popsim.errors
    options = popart.SessionOptions()
    options.engineOptions = {"debug.allowOutOfMemory": "true"}
    session = popart.InferenceSession(fnModel=_too_big().SerializeToString(), deviceInfo=popart.DeviceManager(
        ).createIpuModelDevice({"tilesPerIPU": 2}), dataFlow=popart.DataFlow(1, {"y": popart.AnchorReturnType("ALL")}),
        userOptions=options)
    session.prepareDevice()
    assert session.getSummaryReport().count("out of memory") >= 1
    with pytest.raises(popsim.errors.EngineStateError, match="out of memory .* inspected"):  # as Poplar's engine
        session.run(popart.PyStepIO({"x": np.zeros((1, 300000), np.float32)}, session.initAnchorArrays()))


def test_the_command_prints_the_figures(tmp_path, capsys):
    path = tmp_path / "cnn.onnx"
    onnx.save(_cnn(2), str(path))
    assert main(["estimate", str(path), "--batch", "3", "--tiles-per-ipu", "16", "--replicas", "2",
                 "--report", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    for field in ("Model:", "inputs x [3, 3, 8, 8]", "Fits:               yes", "Memory per tile:",
                  "Cycles per step:", "per replica", "Samples/s:", "2 replicas x", "Costliest ops (of 3",
                  "conv1", "Report:"):
        assert field in out, field
    big = tmp_path / "big.onnx"
    onnx.save(_too_big(), str(big))
    args = ["--batch", "1", "--tiles-per-ipu", "2", "--report", str(tmp_path / "b.html")]
    assert main(["estimate", str(big), *args]) == 1
    out = capsys.readouterr().out
    assert "Fits:               NO: 2 tile(s) over" in out and "Fullest tiles:      tile" in out
    assert "not run: the model does not fit" in out and (tmp_path / "b.html").is_file()
    assert main(["estimate", str(path), "--batch", "1", "--tiles-per-ipu", "16", "--report", ""]) == 0
    assert "Report:" not in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--batch", "0"], "the batch must be a positive integer, found 0"),
    (["--batch", "2", "--pipeline"], "pipelining needs the model on more than one IPU, found ipus=1"),
    (["--batch", "2", "--ipus", "0"], "ipus must be a positive integer"),
    (["--batch", "2", "--replicas", "0"], "replicas must be a positive integer"),
])
def test_bad_arguments_are_clear_errors(tmp_path, capsys, args, message):
    path = tmp_path / "cnn.onnx"
    onnx.save(_cnn(2), str(path))
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", str(path), *args])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_a_missing_model_and_a_missing_batch(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", str(tmp_path / "none.onnx"), "--batch", "2"])
    assert exit_.value.code == 2 and "no file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", str(tmp_path / "none.onnx")])
    assert exit_.value.code == 2 and "--batch" in capsys.readouterr().err


def test_a_copy_step_on_one_ipu_counts_in_the_other_line():
    """One IPU's report has no per-IPU cycles (None): a device-to-device Copy that belongs to
    no node goes to the other line, as a ResNet-50 prefix's did, rather than failing."""
    import popsim
    from popsim.program import Copy, Sequence
    from popsim.popart.estimate import op_costs
    model = popsim.IPUModel()
    model.tiles_per_ipu = 4
    device = model.create_device()
    graph = popsim.Graph(device.get_target())
    a, b = graph.add_variable(popsim.FLOAT, [8], "a"), graph.add_variable(popsim.FLOAT, [8], "b")
    graph.set_tile_mapping(a, 0)
    graph.set_tile_mapping(b, 1)
    engine = popsim.Engine(graph, Sequence([Copy(a, b)]))
    engine.load(device)
    engine.run(0)
    report = engine.get_report()
    assert [s.kind for s in report.execution.steps] == ["Copy"] and report.execution.steps[0].ipu_cycles is None
    ops, update, other = op_costs(report, [])
    assert ops == [] and update == 0 and other == report.execution.steps[0].cycles > 0
