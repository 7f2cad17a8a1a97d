"""examples/pipelined_mlp.py: the pipeline's schedule, the pipelined outputs against the
1-IPU outputs and numpy's, where each stage lives, and the script's output and errors."""
import re

import numpy as np
import pytest

from pipelined_mlp import (STAGES, MlpConfig, build_pipelined, build_single_ipu, create_device, initial_weights,
                           main, make_inputs, numpy_mlp, pipeline_schedule, run)
import popsim
from popsim import FLOAT, poplin

SMALL = MlpConfig(micro_batches=6, micro_batch_size=4, tiles_per_ipu=8, width=32)
SMALL_ARGS = ["--micro-batches", "6", "--micro-batch-size", "4", "--tiles-per-ipu", "8", "--width", "32"]


@pytest.fixture(scope="module")
def runs():
    """Both programs run once on SMALL, with the race check on as for every test:
    {"single" | "pipelined": (outputs, report)}, the weights and the inputs."""
    weights, inputs = initial_weights(SMALL), make_inputs(SMALL)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POPSIM_CHECK_RACES", "true")
        results = {"single": run(SMALL, build_single_ipu, weights, inputs, create_device(SMALL, 1)),
                   "pipelined": run(SMALL, build_pipelined, weights, inputs, create_device(SMALL, STAGES))}
    return results, weights, inputs


def test_schedule_fills_runs_and_flushes():
    cycles = pipeline_schedule(6)
    assert [phase for phase, _ in cycles] == ["fill"] * 3 + ["main"] * 3 + ["flush"] * 3
    assert [active for _, active in cycles[:3]] == [[0], [0, 1], [0, 1, 2]]
    assert all(active == [0, 1, 2, 3] for phase, active in cycles if phase == "main")
    assert [active for _, active in cycles[-3:]] == [[1, 2, 3], [2, 3], [3]]
    # stage s works on micro-batch c - s in cycle c: every stage sees 0..M-1 once, in order
    for s in range(STAGES):
        assert [c - s for c, (_, active) in enumerate(cycles) if s in active] == list(range(6))
    assert len(pipeline_schedule(4)) == 7 and sum(p == "main" for p, _ in pipeline_schedule(4)) == 1


def test_matmul_plans_are_the_same_on_one_ipu_and_on_each_ipu_of_four():
    """Why the outputs agree bit for bit: every IPU's virtual graph has the tiles of the
    1-IPU graph, so each layer's matmul gets the same plan (the same split of the sums over
    the same tiles, reduced in the same order); bias and ReLU are element-wise, copies move
    bits."""
    shapes = (SMALL.micro_batch_shape, (SMALL.width, SMALL.width))
    single = poplin.get_mat_mul_plan(popsim.Graph(create_device(SMALL, 1)), FLOAT, *shapes)
    top = popsim.Graph(create_device(SMALL, STAGES))
    t = SMALL.tiles_per_ipu
    for i in range(STAGES):
        plan = poplin.get_mat_mul_plan(top.create_virtual_graph(i * t, (i + 1) * t), FLOAT, *shapes)
        assert (plan.partition, plan.serial_splits) == (single.partition, single.serial_splits)


def test_pipelined_outputs_equal_one_ipu_and_numpy(runs):
    results, weights, inputs = runs
    single, pipelined = results["single"][0], results["pipelined"][0]
    expected = numpy_mlp(weights, inputs)
    assert np.abs(expected).max() > 0.5 and (expected != 0).mean() > 0.5  # not killed by the ReLUs
    np.testing.assert_array_equal(pipelined, single)  # same plans: see the test above
    for got in (single, pipelined):  # float32 on the device, 4 layers of 32-term sums
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    # a stage one cycle out of step would pair a micro-batch with another one's result
    assert not np.allclose(expected[1:], expected[:-1])


def test_each_stage_runs_on_its_own_ipu_once_per_micro_batch(runs):
    results, weights, _ = runs
    mlp = build_pipelined(SMALL, weights, create_device(SMALL, STAGES))
    t = SMALL.tiles_per_ipu
    for s in range(STAGES):
        for tensor in (mlp.inputs[s], mlp.outputs[s]):
            tiles = [tile for tile, intervals in enumerate(mlp.graph.get_tile_mapping(tensor)) if intervals]
            assert tiles and s * t <= min(tiles) and max(tiles) < (s + 1) * t, (s, tensor.name, tiles)
    steps = results["pipelined"][1].execution.steps
    runs_of = {}
    for step in steps:
        runs_of[step.name] = runs_of.get(step.name, 0) + step.count
    cycles = SMALL.micro_batches + STAGES - 1
    for s in range(STAGES):
        assert runs_of[f"Call stage{s}"] == SMALL.micro_batches
        assert runs_of[f"Execute layer{s}/fc/Conv"] == SMALL.micro_batches
    assert runs_of["Call ipuCopies"] == cycles
    copy = next(step for step in steps if step.kind == "Copy" and step.program == "function ipuCopies")
    assert copy.count == cycles and copy.categories["global_exchange"] > 0  # over the IPU-Links
    assert results["single"][1].execution.categories["global_exchange"] == 0


def test_script_prints_the_modelled_times_from_the_reports(runs, capsys):
    assert main(SMALL_ARGS) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("Using the IPU Model (ipu2, ") and "1 IPU of 8 tiles, then 4 IPUs of 8 tiles" in lines[0]
    assert "a batch of 24 samples as 6 micro-batches of 4" in lines[1]
    results = runs[0]
    clock = create_device(SMALL, 1).target.tile_clock_frequency
    times = {}
    for label, key in (("1 IPU", "single"), ("pipelined on 4 IPUs", "pipelined")):
        line = next(line for line in lines if line.startswith(f"modelled time per batch, {label}: "))
        us, cycles = re.search(r": ([\d.]+) us \(([\d,]+) cycles\)", line).groups()
        assert int(cycles.replace(",", "")) == results[key][1].execution.total_cycles  # the same run, reported
        assert float(us) == pytest.approx(results[key][1].execution.total_cycles / clock * 1e6, abs=0.01)
        times[label] = float(us)
    ratio = float(re.search(r"^1 IPU / pipelined: ([\d.]+)x$", out, re.M).group(1))
    assert ratio == pytest.approx(times["1 IPU"] / times["pipelined on 4 IPUs"], abs=0.01)
    assert lines[-1].startswith("outputs agree: pipelined == 1 IPU bit for bit")


@pytest.mark.parametrize("kwargs, message", [
    ({"micro_batches": 3}, r"needs at least 4 micro-batches, found micro_batches=3"),
    ({"width": 0}, r"width must be a positive integer, found 0"),
    ({"micro_batch_size": 2.5}, r"micro_batch_size must be a positive integer, found 2.5"),
])
def test_bad_configurations_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MlpConfig(**kwargs)


def test_bad_arguments_exit_with_the_reason(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--micro-batches", "2"])
    assert exit_info.value.code == 2
    assert "needs at least 4 micro-batches, found micro_batches=2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--tiles-per-ipu", "5000"])  # the IPU Model's own check, reported the same way
    assert "tiles_per_ipu must be an integer in 1..1472" in capsys.readouterr().err
    with pytest.raises(ValueError, match="at least 4 micro-batches, found 3"):
        pipeline_schedule(3)
