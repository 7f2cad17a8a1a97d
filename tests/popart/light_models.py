"""The onnx package's light ImageNet CNNs (onnx/backend/test/data/light: constant weights made
by ConstantOfShape, and the output onnx ships for each), fed as onnx's backend test feeds them.
test_popart_real_models.py runs the ones that fit and build quickly; run this file to measure
any of them (docs/onnx.md, Real models, lists what it printed):

    python tests/popart/light_models.py NAME [BYTES_PER_TILE]

NAME as in light_NAME.onnx (shufflenet, inception_v2, zfnet512, vgg19...). It builds an
InferenceSession on one 1472-tile Mk2, prints the build's wall and CPU seconds, the fullest
tiles and what fills the fullest (from OutOfMemoryException's report when the model does not
fit: its tile memory is never allocated), and, when every tile fits, runs one
step and compares it with the shipped output (rtol 1e-3, atol 1e-7). BYTES_PER_TILE replaces
the device with a popsim.IPUModel of that much memory a tile (popart's createIpuModelDevice
has no memory option), to check a model that does not fit a Mk2; the conv planner's
temporary-memory budget grows with it, so that layout is not the Mk2's."""
import collections
import os
import sys
import time

import numpy as np

MK2_BYTES_PER_TILE = 638976


def light_dir():
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def light_model_input(model):
    """The input onnx's backend tests feed the light models (their shipped outputs are for
    it): arange(n) / n in the input's shape, float32."""
    inits = {i.name for i in model.graph.initializer}
    x = next(i for i in model.graph.input if i.name not in inits)
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    n = int(np.prod(shape))
    return x.name, (np.arange(n).reshape(shape) / n).astype(np.float32)


def measure(name, bytes_per_tile=0, out=print):
    """Build, inspect and (when it fits the device) run light_NAME.onnx; True if it matched."""
    import onnx
    import popsim
    from popsim import popart
    from popsim.popart.errors import fullest_tiles

    model = onnx.load(os.path.join(light_dir(), f"light_{name}.onnx"))
    want = onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(light_dir(), f"light_{name}_output_0.pb")))
    feed, x = light_model_input(model)
    anchor = model.graph.output[0].name
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": 1472})
    if bytes_per_tile:
        ipu = popsim.IPUModel("ipu2")
        ipu.tiles_per_ipu, ipu.memory_bytes_per_tile = 1472, bytes_per_tile
        device.device = ipu.create_device()
    session = popart.InferenceSession(fnModel=model.SerializeToString(), deviceInfo=device,
                                      dataFlow=popart.DataFlow(1, {anchor: popart.AnchorReturnType("ALL")}))
    wall, cpu = time.time(), time.process_time()
    try:
        session.prepareDevice()
        report = session.getReport()
    except popart.OutOfMemoryException as e:   # judged before tile memory is allocated; e has the report
        report = e.report
    out(f"{name}: prepareDevice {time.time() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU")
    memory = report.memory
    fullest = fullest_tiles(report, 5)
    over = int(np.sum(memory.figures().tiles > MK2_BYTES_PER_TILE))
    out(f"fullest tiles (tile, bytes): {fullest}; {over} tile(s) over a Mk2's {MK2_BYTES_PER_TILE:,} bytes")
    out(f"tile {fullest[0][0]} by category: " +
        str({k: v for k, v in memory.tile_breakdown(fullest[0][0]).items() if v}))
    tensors = next((e["tensors"] for e in memory.largest if e.get("tensors")), [])
    by_node = collections.Counter()
    for tensor, size in tensors:
        by_node[str(tensor).split("/")[0]] += int(size)
    out(f"its largest tensors by node: {by_node.most_common(8)}")
    if memory.figures().out_of_memory:
        out("out of memory on this device: not run")
        return False
    anchors = session.initAnchorArrays()
    session.weightsFromHost()
    session.run(popart.PyStepIO({feed: x}, anchors))
    got = anchors[anchor].reshape(want.shape)
    out(f"cycles {session.getCycleCount():,}; max |got - want| {np.abs(got - want).max():.3g}; "
        f"want[:3] {want.ravel()[:3]}, got[:3] {got.ravel()[:3]}")
    ok = bool(np.allclose(got, want, rtol=1e-3, atol=1e-7))
    out("matches the shipped output (rtol 1e-3, atol 1e-7)" if ok else "DOES NOT match the shipped output")
    return ok


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sys.exit(0 if measure(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 0) else 1)
