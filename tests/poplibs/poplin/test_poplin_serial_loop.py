"""Serial splits run as a loop (serial_loop.py): one body over step temporaries, so the
graph's compute sets and the fullest tile's memory do not grow with the serial steps,
and the results stay numpy's (out-channel and in-channel steps, uneven extents padded)."""
import json

import numpy as np
import pytest

import popsim
from popsim import FLOAT, poplin
from popsim.poputil import map_tensor_linearly
from popsim.program import Sequence


def _build_and_run(m, k, n, split, serial, acc=False, parallel=None):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 16
    device = model.create_device()
    g = popsim.Graph(device.target)
    partition = {split: {"serial": serial}}
    partition.update(parallel or {})  # the parallel splits fixed: only the serial steps change
    options = {"planConstraints": json.dumps({"0": {"partition": partition}})}
    a = poplin.create_mat_mul_input_lhs(g, FLOAT, (m, k), (k, n), "a", options)
    b = poplin.create_mat_mul_input_rhs(g, FLOAT, (m, k), (k, n), "b", options)
    prog = Sequence()
    if acc:
        c = g.add_variable(FLOAT, (m, n), "c")
        map_tensor_linearly(g, c)
        poplin.mat_mul_acc(g, c, 0.5, a, b, prog, "mm", options)
    else:
        c = poplin.mat_mul(g, a, b, prog, "mm", options)
    plan = poplin.get_mat_mul_plan(g, FLOAT, (m, k), (k, n), options)
    for name, t in (("a", a), ("b", b), ("c", c)):
        g.create_host_write(name, t)
    g.create_host_read("out", c)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    rng = np.random.default_rng(serial)
    va, vb, vc = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    for name, v in (("a", va), ("b", vb), ("c", vc)):
        engine.write_tensor(name, v)
    engine.run(0)
    want = vc + 0.5 * (va.astype(np.float64) @ vb) if acc else va.astype(np.float64) @ vb
    np.testing.assert_allclose(engine.read_tensor("out"), want, rtol=1e-4, atol=1e-4)
    return plan, engine.get_report()


FIXED = {"batchSplit": 2, "inChanSplit": {"parallel": 2}, "outChanSplit": {"parallel": 4}}


@pytest.mark.parametrize("split,m,k,n", [("outChanSplit", 64, 64, 1024), ("inChanSplit", 64, 1024, 64)])
def test_compute_sets_and_fullest_tile_do_not_grow_with_serial_steps(split, m, k, n):
    figures = {}
    for serial in (2, 4, 8):
        fixed = dict(FIXED)
        fixed[split] = dict(fixed.get(split, {}), serial=serial)
        plan, report = _build_and_run(m, k, n, split, serial, parallel=fixed)
        chosen = plan.partition.out_chan_split if split == "outChanSplit" else plan.partition.in_chan_split
        assert chosen.serial == serial
        figures[serial] = (report.graph.num_compute_sets, report.memory.max_bytes)
    assert len({cs for cs, _ in figures.values()}) == 1, figures   # one body, whatever the steps
    assert figures[8][1] <= figures[4][1] <= figures[2][1], figures  # smaller steps, smaller temporaries


@pytest.mark.parametrize("split", ["outChanSplit", "inChanSplit"])
def test_serial_steps_with_uneven_extents_and_accumulate(split):
    # 37 and 45 do not divide into the steps: the last step's padding adds nothing
    _build_and_run(19, 45, 37, split, 3, acc=True)
    _build_and_run(19, 45, 37, split, 3)


def test_each_tiles_part_of_a_step_is_one_region_for_the_slicing_vertices():
    # The step operands are sliced and updated in block order, padding stored block by block,
    # and popops cuts each tile's mapping into runs of memory: a tile's part of a step is one
    # region (two where padding follows a block), so the slice and update vertices pay for
    # one region per tile and step. In the operands' own order each block was a region per
    # row: here 804 and 2,136 cycles per step (the 1024^3 update at AMP 0.02: 1.22M of 1.84M).
    part = {"outChanSplit": {"serial": 4, "parallel": 2}, "batchSplit": 3, "inChanSplit": {"parallel": 2}}
    _, report = _build_and_run(100, 32, 64, "outChanSplit", 4, parallel=part)  # 100 rows: the last block padded
    per_step = {s.compute_set.split("/")[1]: s.cycles / s.count for s in report.execution.steps
                if s.compute_set and ("Slice" in s.compute_set or "Update" in s.compute_set)}
    assert per_step.keys() == {"bSlice", "outUpdate"}
    assert per_step["bSlice"] < 650 and per_step["outUpdate"] < 1000, per_step
