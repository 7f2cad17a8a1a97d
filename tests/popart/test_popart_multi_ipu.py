"""popsim.popart on several IPUs: replicated graphs (replicatedGraphCount), ops placed on IPUs
(virtualGraphMode Manual, Builder.virtualGraph) and pipelining (enablePipelining,
Builder.pipelineStage), checked against numpy and against the same model on one IPU."""
import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

from popsim import popart

TILES = 4
Manual = popart.VirtualGraphMode.Manual


def _mlp(rng, stages=None, batch=2, width=8):
    """Three matmul + relu layers; layer k inside virtualGraph/pipelineStage stages[k]
    (an (ipu, stage) pair, stage None for none) when given."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [batch, width]), "x")
    weights = [rng.standard_normal((width, width)).astype(np.float32) * 0.4 for _ in range(3)]
    y = x
    for k, w in enumerate(weights):
        wid = b.addInitializedInputTensor(w, f"w{k}")
        if stages is None:
            y = b.aiOnnx.relu([b.aiOnnx.matmul([y, wid])])
            continue
        ipu, stage = stages[k]
        with b.virtualGraph(ipu):
            if stage is None:
                y = b.aiOnnx.relu([b.aiOnnx.matmul([y, wid])])
            else:
                with b.pipelineStage(stage):
                    y = b.aiOnnx.relu([b.aiOnnx.matmul([y, wid])])
    b.addOutputTensor(y)
    return b, x, y, weights


def _numpy(x, weights):
    for w in weights:
        x = np.maximum(x.astype(np.float64) @ w, 0)
    return x


def _run(builder, anchors, inputs, bps, ipus, opts=None):
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus, "tilesPerIPU": TILES})
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(bps, anchors), device,
                                      userOptions=opts)
    session.prepareDevice()
    out = session.initAnchorArrays()
    session.weightsFromHost()
    session.run(popart.PyStepIO(inputs, out))
    return out, session


def _options(replicas=1, manual=False, pipelined=False):
    opts = popart.SessionOptions()
    if replicas > 1:
        opts.enableReplicatedGraphs, opts.replicatedGraphCount = True, replicas
    if manual:
        opts.virtualGraphMode = Manual
    opts.enablePipelining = pipelined
    return opts


def test_builder_records_ipu_and_stage_as_popart_does(rng):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    with b.virtualGraph(1), b.pipelineStage(2):
        assert b.hasVirtualGraph() and b.getVirtualGraph() == 1 and b.getPipelineStage() == 2
        y = b.aiOnnx.relu([x])
        with b.virtualGraph(3):
            z = b.aiOnnx.neg([y])
    w = b.aiOnnx.abs([z])
    assert not b.hasVirtualGraph() and not b.hasPipelineStage()
    assert b.getInt64NodeAttribute("__ipu_number", [y]) == 1 and b.getVirtualGraph(z) == 3
    assert b.getInt64NodeAttribute("__pipeline_stage", z) == 2
    assert not b.nodeHasAttribute("__ipu_number", [w])
    b.virtualGraph(w, 0)            # the setter forms: one id, or a list
    b.pipelineStage([w], 3)
    assert b.getVirtualGraph([w]) == 0 and b.getInt64NodeAttribute("__pipeline_stage", [w]) == 3
    with pytest.raises(popart.popart_exception, match=r"no node of this model produces tensor 'nope'"):
        b.virtualGraph("nope", 1)
    with pytest.raises(popart.popart_exception, match=r"non-negative int, found -1"):
        b.virtualGraph(-1)
    b.addOutputTensor(w)
    popart.InferenceSession(b.getModelProto(), popart.DataFlow(1, [w]),   # ONNX's checker lets __ attributes by
                            popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": TILES}))


@pytest.mark.parametrize("bps", [1, 3])
def test_replicas_each_run_their_slice_of_the_inputs(rng, bps):
    b, x, y, weights = _mlp(rng)
    r = 2
    shape = (bps, r, 2, 8) if bps > 1 else (r, 2, 8)
    data = rng.standard_normal(shape).astype(np.float32)
    arts = {y: popart.AnchorReturnType("ALL"), x: popart.AnchorReturnType("FINAL")}
    out, session = _run(b, arts, {x: data}, bps, r, _options(replicas=r))
    assert out[y].shape == shape[:-1] + (8,) and out[x].shape == (r, 2, 8)
    np.testing.assert_allclose(out[y], _numpy(data, weights), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[x], data[-1] if bps > 1 else data)   # each replica's last batch
    assert session.getReport().target.num_ipus == 1                        # one replica's target


def test_replicated_sum_and_everyn_anchors(rng):
    b, x, y, weights = _mlp(rng)
    data = rng.standard_normal((4, 2, 2, 8)).astype(np.float32)
    arts = {y: popart.AnchorReturnType("SUM"), x: popart.AnchorReturnType("EVERYN", 2)}
    out, _ = _run(b, arts, {x: data}, 4, 2, _options(replicas=2))
    np.testing.assert_allclose(out[y], _numpy(data, weights).sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[x], data[1::2])   # batches 2 and 4 of each replica: [2, replicas, ...]


def _ipus_running(report, prefix):
    """The IPUs whose tiles compute in the Execute steps of compute sets named ``prefix``..."""
    ipus = set()
    for step in report.execution.steps:
        rest = (step.compute_set or "")[len(prefix):] if (step.compute_set or "").startswith(prefix) else None
        # the node's own compute sets: not those of "MatMul:0/1" (PopART's id of the next MatMul)
        if step.kind == "Execute" and rest is not None and not rest[1:2].isdigit():
            ipus |= {tile // TILES for tile, cycles in enumerate(step.tile_compute) if cycles > 0}
    return ipus


def _layers_on(ipus, stages=False):
    return [(ipu, k if stages else None) for k, ipu in enumerate(ipus)]


def test_manual_virtual_graphs_run_each_node_on_its_ipu(rng):
    placed, x, y, weights = _mlp(rng, stages=_layers_on([0, 1, 1]))
    single = popart.Builder(placed.getModelProto())   # the same model: its attributes are ignored with Off
    data = rng.standard_normal((3, 2, 8)).astype(np.float32)
    arts = {y: popart.AnchorReturnType("ALL")}
    out, session = _run(placed, arts, {x: data}, 3, 2, _options(manual=True))
    want, _ = _run(single, arts, {x: data}, 3, 1)
    np.testing.assert_allclose(out[y], _numpy(data, weights), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[y], want[y])
    report = session.getReport()
    assert report.target.num_ipus == 2
    for prefix, ipu in (("MatMul:0", 0), ("Relu:0", 0), ("MatMul:0/1", 1), ("Relu:0/1", 1), ("MatMul:0/2", 1)):
        assert _ipus_running(report, prefix) == {ipu}, prefix
    links = [s for s in report.execution.steps if s.kind == "Copy" and all(c > 0 for c in s.ipu_cycles)]
    assert links, "the layer-0 output crosses to IPU 1 in a Copy that involves both IPUs"


def _skip_model(rng, ipus, width=8):
    """Three stages; the last also adds stage 0's output and the model input (tensors handed
    on over two stages)."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, width]), "x")
    weights = [rng.standard_normal((width, width)).astype(np.float32) * 0.4 for _ in range(3)]
    ids = [b.addInitializedInputTensor(w, f"w{k}") for k, w in enumerate(weights)]
    with b.virtualGraph(ipus[0]), b.pipelineStage(0):
        h0 = b.aiOnnx.relu([b.aiOnnx.matmul([x, ids[0]])])
    with b.virtualGraph(ipus[1]), b.pipelineStage(1):
        h1 = b.aiOnnx.relu([b.aiOnnx.matmul([h0, ids[1]])])
    with b.virtualGraph(ipus[2]), b.pipelineStage(2):
        y = b.aiOnnx.add([b.aiOnnx.add([b.aiOnnx.matmul([h1, ids[2]]), h0]), x])
    b.addOutputTensor(y)

    def numpy(data):
        a0 = np.maximum(data.astype(np.float64) @ weights[0], 0)
        return np.maximum(a0 @ weights[1], 0) @ weights[2] + a0 + data
    return b, x, h0, y, numpy


@pytest.mark.parametrize("ipus", [(0, 1, 2), (0, 1, 0)])
def test_pipelining_gives_the_unpipelined_results_in_fewer_cycles(rng, ipus):
    b, x, h0, y, numpy = _skip_model(rng, ipus)
    n = max(ipus) + 1
    bps = 6
    data = rng.standard_normal((bps, 2, 8)).astype(np.float32)
    arts = {y: popart.AnchorReturnType("ALL"), h0: popart.AnchorReturnType("SUM"),
            x: popart.AnchorReturnType("FINAL")}
    piped, ps = _run(b, arts, {x: data}, bps, n, _options(manual=True, pipelined=True))
    plain, ss = _run(b, arts, {x: data}, bps, n, _options(manual=True))
    np.testing.assert_allclose(piped[y], numpy(data), rtol=1e-5, atol=1e-5)
    for tid in arts:
        np.testing.assert_array_equal(piped[tid], plain[tid], err_msg=tid)
    np.testing.assert_array_equal(piped[x], data[-1])
    if ipus == (0, 1, 2):   # three IPUs overlap; with stages 0 and 2 sharing IPU 0 only stage 1 runs beside them
        assert ps.getCycleCount() < 0.8 * ss.getCycleCount(), (ps.getCycleCount(), ss.getCycleCount())
    else:
        assert ps.getCycleCount() < ss.getCycleCount(), (ps.getCycleCount(), ss.getCycleCount())


def test_pipelined_and_replicated(rng):
    b, x, h0, y, numpy = _skip_model(rng, (0, 1, 0))
    data = rng.standard_normal((3, 2, 2, 8)).astype(np.float32)
    out, session = _run(b, {y: popart.AnchorReturnType("ALL")}, {x: data}, 3, 4,
                        _options(replicas=2, manual=True, pipelined=True))
    np.testing.assert_allclose(out[y], numpy(data), rtol=1e-5, atol=1e-5)
    assert session.getReport().target.num_ipus == 2


def _session(builder, anchors, ipus, opts, bps=1):
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus, "tilesPerIPU": TILES})
    return popart.InferenceSession(builder.getModelProto(), popart.DataFlow(bps, anchors), device, userOptions=opts)


def test_placement_errors_name_what_is_wrong(rng):
    b, x, y, _ = _mlp(rng, stages=_layers_on([0, 1, 1]))
    unplaced, _, uy, _ = _mlp(rng)
    with pytest.raises(popart.popart_exception, match=r"Manual, so every op needs an IPU.*6 of 6.*'MatMul:0' \(MatMul"):
        _session(unplaced, [uy], 2, _options(manual=True))
    with pytest.raises(popart.popart_exception, match=r"device has 3 IPUs.*replicatedGraphCount \(1\) x IPUs per "
                                                      r"replica \(2.*= 2.*'numIPUs': 2"):
        _session(b, [y], 3, _options(manual=True))
    with pytest.raises(popart.popart_exception, match=r"device has 2 IPUs.*replicatedGraphCount \(2\) x .*\(2.*= 4"):
        _session(b, [y], 2, _options(replicas=2, manual=True))
    with pytest.raises(popart.popart_exception, match=r"enablePipelining needs virtualGraphMode = Manual"):
        _session(b, [y], 1, _options(pipelined=True))
    with pytest.raises(popart.popart_exception, match=r"replicatedGraphCount = 2 needs enableReplicatedGraphs"):
        opts = popart.SessionOptions()
        opts.replicatedGraphCount = 2
        _session(unplaced, [uy], 2, opts)
    opts = popart.SessionOptions()
    opts.virtualGraphMode = popart.VirtualGraphMode.ExecutionPhases
    with pytest.raises(popart.popart_exception, match=r"virtualGraphMode = 'ExecutionPhases' is not supported yet"
                                                      r".*'Manual', 'Auto'"):
        _session(b, [y], 2, opts)


def test_pipeline_errors_name_what_is_wrong(rng):
    some, x, y, _ = _mlp(rng, stages=[(0, 0), (1, None), (1, 1)])
    with pytest.raises(popart.popart_exception, match=r"only some ops have a pipeline stage.*'MatMul:0/1'"):
        _session(some, [y], 2, _options(manual=True, pipelined=True), bps=2)
    split, x, y, _ = _mlp(rng, stages=[(0, 0), (1, 0), (1, 1)])
    with pytest.raises(popart.popart_exception, match=r"same pipeline stage 0 but different virtual graphs"):
        _session(split, [y], 2, _options(manual=True, pipelined=True), bps=2)
    gap, x, y, _ = _mlp(rng, stages=[(0, 0), (1, 2), (1, 2)])
    with pytest.raises(popart.popart_exception, match=r"stages \[0, 2\] are not 0..1: stage 1 is missing"):
        _session(gap, [y], 2, _options(manual=True, pipelined=True), bps=2)
    ok, x, y, _ = _mlp(rng, stages=_layers_on([0, 1, 1], stages=True))
    with pytest.raises(popart.popart_exception, match=r"batchesPerStep \(2\) must be at least .* stages \(3\)"):
        _session(ok, [y], 2, _options(manual=True, pipelined=True), bps=2)
    backwards, x, y, _ = _mlp(rng, stages=[(0, 1), (1, 0), (1, 0)])
    with pytest.raises(popart.popart_exception, match=r"stage 0 reads tensor 'Relu:0', computed in the later stage 1"):
        _session(backwards, [y], 2, _options(manual=True, pipelined=True), bps=2).prepareDevice()


def test_replicated_training_sums_the_replicas_gradients(rng):
    """Two replicas, each on its micro-batch, update as numpy's SGD with the sum of their
    gradients (PopART's ReductionType Sum), and as one replica accumulating both."""
    from test_popart_training import _mlp as _training_mlp
    from test_popart_training import _mlp_grads
    builder, x, label, loss, init = _training_mlp(rng)
    lr, bps = 0.1, 2
    xs = rng.normal(size=(bps, 2, 4, 5)).astype(np.float32)
    labels = rng.integers(0, 3, (bps, 2, 4)).astype(np.int32)
    results = []
    for replicas in (2, 1):
        opts = _options(replicas=replicas)
        if replicas == 1:
            opts.enableGradientAccumulation, opts.accumulationFactor = True, 2
        device = popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas, "tilesPerIPU": TILES})
        session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(bps, [loss]), loss,
                                         popart.ConstSGD(lr), device, userOptions=opts)
        early = session.initAnchorArrays()   # from the model's shapes, before prepareDevice
        session.prepareDevice()
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        assert anchors[loss].shape == early[loss].shape == (bps, 2)   # [batches, replicas] or [batches, accumulation]
        session.run(popart.PyStepIO({x: xs, label: labels}, anchors))
        results.append((anchors[loss].copy(), session.weightsToHost()))
    w = {k: v.astype(np.float64) for k, v in init.items()}
    for b in range(bps):
        parts = [_mlp_grads(w, xs[b, r].astype(np.float64), labels[b, r]) for r in range(2)]
        np.testing.assert_allclose(results[0][0][b], [p[0] for p in parts], rtol=1e-5)
        w = {k: w[k] - lr * (parts[0][1][k] + parts[1][1][k]) for k in w}
    for k in w:
        np.testing.assert_allclose(results[0][1][k], w[k], rtol=1e-4, atol=1e-5, err_msg=k)
        np.testing.assert_allclose(results[0][1][k], results[1][1][k], rtol=1e-6, atol=1e-7, err_msg=k)
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    momentum = popart.SGD({"defaultLearningRate": (lr, False), "defaultMomentum": (0.9, True)})
    trained = []
    for replicas in (2, 1):   # with momentum: velocities and a non-const learning rate on every replica
        opts = _options(replicas=replicas)
        if replicas == 1:
            opts.enableGradientAccumulation, opts.accumulationFactor = True, 2
        device = popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas, "tilesPerIPU": TILES})
        session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(bps, [loss]), loss, momentum,
                                         device, userOptions=opts)
        session.prepareDevice()
        session.weightsFromHost()
        session.run(popart.PyStepIO({x: xs, label: labels}, session.initAnchorArrays()))
        trained.append(session.weightsToHost())
    for k in w:
        np.testing.assert_allclose(trained[0][k], trained[1][k], rtol=1e-6, atol=1e-7, err_msg=k)
    opts = _options(manual=True)   # Manual training needs every op on an IPU (test_popart_pipelined_training.py)
    with pytest.raises(popart.popart_exception, match=r"virtualGraphMode is Manual, so every op needs an IPU"):
        popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [loss]), loss, popart.ConstSGD(lr),
                               popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": TILES}), userOptions=opts)


@pytest.mark.parametrize("period", [1, 2, 3, 6])
def test_pipelined_everyn_anchors_are_the_unpipelined_ones(rng, period):
    """PopART returns batches N, 2N, ... of an EVERYN anchor; pipelined, each stage streams
    its own out in the cycles where it works on them."""
    b, x, h0, y, numpy = _skip_model(rng, (0, 1, 2))
    bps = 6
    data = rng.standard_normal((bps, 2, 8)).astype(np.float32)
    arts = {t: popart.AnchorReturnType("EVERYN", period) for t in (x, h0, y)}
    piped, _ = _run(b, arts, {x: data}, bps, 3, _options(manual=True, pipelined=True))
    plain, _ = _run(b, arts, {x: data}, bps, 3, _options(manual=True))
    for tid in arts:
        np.testing.assert_array_equal(piped[tid], plain[tid], err_msg=tid)
    shape = (bps // period, 2, 8) if period < bps else (2, 8)
    np.testing.assert_array_equal(piped[x], data[period - 1::period].reshape(shape))
    np.testing.assert_allclose(piped[y], numpy(data[period - 1::period]).reshape(shape), rtol=1e-5, atol=1e-5)
