"""Targets and devices: Poplar's IPUModel presets and Target getters."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT


@pytest.mark.parametrize("version,tiles,memory,clock", [
    ("ipu1", 1216, 262144, 1.6e9),
    ("ipu2", 1472, 638976, 1.33e9),
    ("ipu21", 1472, 638976, 1.85e9),
])
def test_ipu_model_presets(version, tiles, memory, clock):
    model = popsim.IPUModel(version)
    assert (model.tiles_per_ipu, model.memory_bytes_per_tile, model.tile_clock_frequency) == (tiles, memory, clock)
    assert model.num_worker_contexts == 6
    assert model.exchange_bytes_per_cycle == 4
    assert model.num_ipus == 1
    target = model.create_device().target
    assert target.num_tiles == tiles
    assert target.bytes_per_tile == memory
    assert target.tile_clock_frequency == clock
    assert target.num_worker_contexts == 6
    assert target.exchange_bytes_per_cycle == 4
    assert target.target_type is popsim.TargetType.IPU_MODEL
    assert target.arch == version


def test_default_model_is_ipu2():
    assert popsim.IPUModel().create_device().target.tiles_per_ipu == 1472


def test_model_fields_are_writable_and_device_is_a_snapshot():
    model = popsim.IPUModel("ipu2")
    model.num_ipus = 2
    model.tiles_per_ipu = 4
    model.min_ipu_sync_delay = 0
    model.relative_sync_delay = popsim.RelativeSyncDelayType.NO_DELAY
    device = model.create_device()
    model.tiles_per_ipu = 8
    t = device.target
    assert (t.num_ipus, t.tiles_per_ipu, t.num_tiles) == (2, 4, 8)
    assert t.max_ipu_sync_delay == 0
    assert t.memory_bytes == 8 * 638976


def test_relative_sync_delay_adds_tile_distance():
    model = popsim.IPUModel("ipu2")
    auto = model.create_device().target
    model.relative_sync_delay = popsim.RelativeSyncDelayType.NO_DELAY
    none = model.create_device().target
    assert auto.max_ipu_sync_delay > none.max_ipu_sync_delay == none.min_ipu_sync_delay


def test_type_size_and_vector_width():
    t = popsim.Target.create_ipu_target()
    assert t.type_size(FLOAT) == 4 and t.type_size(HALF) == 2 and t.type_size(INT) == 4
    assert t.type_size(popsim.CHAR) == 1 and t.type_size(popsim.LONGLONG) == 8
    assert t.vector_width(FLOAT) == 2
    assert t.vector_width(HALF) == 4
    assert t.vector_width(popsim.CHAR) == 8
    assert t.float_vector_width == 2 and t.half_vector_width == 4


def test_create_ipu_target():
    t = popsim.Target.create_ipu_target(num_ipus=2, tiles_per_ipu=16, version="ipu1")
    assert (t.num_ipus, t.tiles_per_ipu, t.num_tiles) == (2, 16, 32)
    assert t.bytes_per_tile == 262144
    assert t.tile_clock_frequency == 1.6e9
    assert t.target_type is popsim.TargetType.IPU
    assert popsim.Target.create_ipu_target().tiles_per_ipu == 1472


def test_global_sync_cycles_follow_hops():
    one = popsim.Target.create_ipu_target(1)
    eight = popsim.Target.create_ipu_target(8)
    assert one.global_sync_cycles == 40  # ceil(15 ns * 1.33 GHz * 1 hop * 2)
    assert eight.global_sync_cycles == 120  # 3 hops


def test_cpu_device():
    d = popsim.Device.create_cpu_device()
    t = d.target
    assert t.target_type is popsim.TargetType.CPU
    assert t.num_tiles == 1 and t.num_worker_contexts == 1
    assert not t.has_cost_model and not t.requires_tile_mapping
    assert d.attach() and d.is_attached
    d.detach()
    assert not d.is_attached


def test_graph_takes_device_or_target():
    d = popsim.IPUModel().create_device()
    assert popsim.Graph(d).target is d.target
    assert popsim.Graph(d.target).target is d.target
    with pytest.raises(popsim.PopsimError, match="replication_factor 2 does not divide the target's 1 IPU"):
        popsim.Graph(d, replication_factor=2)
    model = popsim.IPUModel()
    model.num_ipus = 2
    g = popsim.Graph(model.create_device(), replication_factor=2)
    assert g.replication_factor == 2 and g.target.num_ipus == 1  # the target of one replica


def test_amp_figures_for_the_poplin_planner():
    from popsim import FLOAT, HALF, Target
    ipu2 = Target.create_ipu_target(version="ipu2")
    # Graphcore's published hardware figures: ipu2 AMP 64 fp16 / 16 fp32 MACs per cycle with 64-bit loads
    assert ipu2.conv_unit_input_load_elems(HALF) == 4 and ipu2.conv_unit_input_load_elems(FLOAT) == 2
    assert ipu2.num_conv_units(HALF) == 16 and ipu2.num_conv_units(FLOAT) == 8
    ipu1 = Target.create_ipu_target(version="ipu1")
    assert ipu1.num_conv_units(HALF) == 8 and ipu1.num_conv_units(FLOAT) == 4
    assert ipu2.conv_unit_max_pipeline_depth == 4
    assert ipu2.supports_exchange_bus_sharing and ipu2.tiles_per_shared_exchange_bus == 2
    assert not Target.create_cpu_target().supports_exchange_bus_sharing


@pytest.mark.parametrize("args, error, message", [
    (([], None), popsim.InvalidMachineModelError, "Target.num_ipus must be an integer, found list"),
    ((float("nan"),), popsim.InvalidMachineModelError, "Target.num_ipus must be an integer, found float nan"),
    ((1, 5000), popsim.InvalidMachineModelError, r"Target.tiles_per_ipu must be an integer in 1..1472, found 5000"),
    ((1, None, ["ipu2"]), popsim.PopsimError, r"unknown IPU version \['ipu2'\]"),
])
def test_create_ipu_target_checks_its_arguments(args, error, message):
    """Were Python's TypeError and ValueError from the sync latency worked out from them
    (list // int, NaN to integer), or an unhashable-type TypeError for the version."""
    with pytest.raises(error, match=message):
        popsim.Target.create_ipu_target(*args)


def test_an_ipu_model_version_that_is_not_a_string():
    with pytest.raises(popsim.PopsimError, match="unknown IPU version"):
        popsim.IPUModel(np.zeros(2))
