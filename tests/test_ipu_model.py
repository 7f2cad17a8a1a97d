"""IPUModel fields: Poplar's camelCase names as aliases, values checked when set,
misspelled or unmodelled fields refused (never silently ignored)."""
import copy

import numpy as np
import pytest

import popsim
from popsim import FLOAT


def test_poplar_field_names_change_the_device():
    # A line-by-line port: before, these two lines were silently ignored (1 IPU x 1472 tiles).
    model = popsim.IPUModel("ipu2")
    model.numIPUs = 2
    model.tilesPerIPU = 4
    target = model.create_device().target
    assert (target.num_ipus, target.tiles_per_ipu, target.num_tiles) == (2, 4, 8)
    assert (model.num_ipus, model.tiles_per_ipu) == (2, 4)


@pytest.mark.parametrize("poplar,snake,value,target_field", [
    ("numIPUs", "num_ipus", 3, "num_ipus"),
    ("tilesPerIPU", "tiles_per_ipu", 16, "tiles_per_ipu"),
    ("memoryBytesPerTile", "memory_bytes_per_tile", 1000, "bytes_per_tile"),
    ("numWorkerContexts", "num_worker_contexts", 4, "num_worker_contexts"),
    ("tileClockFrequency", "tile_clock_frequency", 1.0e9, "tile_clock_frequency"),
    ("exchangeBytesPerCycle", "exchange_bytes_per_cycle", 8, "exchange_bytes_per_cycle"),
    ("memcpyBytesPerCycle", "memcpy_bytes_per_cycle", 16, "memcpy_bytes_per_cycle"),
    ("dataPathWidth", "data_path_width", 128, "data_path_width"),
    ("minIPUSyncDelay", "min_ipu_sync_delay", 0, "min_ipu_sync_delay"),
    ("relativeSyncDelay", "relative_sync_delay", popsim.RelativeSyncDelayType.NO_DELAY, "relative_sync_delay"),
    ("globalSyncCycles", "global_sync_cycles", 123, "global_sync_cycles"),
])
def test_every_poplar_alias_is_the_snake_case_field(poplar, snake, value, target_field):
    model = popsim.IPUModel("ipu2")
    setattr(model, poplar, value)
    assert getattr(model, snake) == value == getattr(model, poplar)
    assert getattr(model.create_device().target, target_field) == value


def test_relative_sync_delay_accepts_the_enum_name():
    model = popsim.IPUModel()
    model.relativeSyncDelay = "NO_DELAY"
    assert model.relative_sync_delay is popsim.RelativeSyncDelayType.NO_DELAY


def test_compile_ipu_code_is_accepted_and_changes_nothing():
    # PopLibs' createTestDevice sets it; popsim's memory figures are always its own layout.
    model = popsim.IPUModel()
    before = model.create_device().target
    model.compileIPUCode = True
    assert model.compile_ipu_code is True
    assert model.create_device().target == before


def test_ipu_version_is_fixed_at_construction():
    model = popsim.IPUModel("ipu1")
    assert model.ipu_version == model.IPUVersion == "ipu1"
    with pytest.raises(popsim.InvalidMachineModelError, match=r"IPUModel\('ipu2'\)"):
        model.ipu_version = "ipu2"
    assert model.create_device().target.tiles_per_ipu == 1216


@pytest.mark.parametrize("name,hint", [("memory_per_tile", "memory_bytes_per_tile"),
                                       ("tiles_per_IPU", "tiles_per_ipu"),
                                       ("numIpus", "numIPUs"),
                                       ("num_workers", "num_worker_contexts")])
def test_misspelled_fields_raise_with_a_suggestion(name, hint):
    model = popsim.IPUModel()
    with pytest.raises(popsim.UnknownAttributeError) as info:
        setattr(model, name, 4)
    assert f"IPUModel has no field '{name}'" in str(info.value)
    assert f"did you mean '{hint}'" in str(info.value)
    assert isinstance(info.value, AttributeError) and isinstance(info.value, popsim.PopsimError)
    with pytest.raises(popsim.UnknownAttributeError, match=f"did you mean '{hint}'"):
        getattr(model, name)
    assert not hasattr(model, name)


def test_unmodelled_poplar_fields_say_so():
    model = popsim.IPUModel()
    with pytest.raises(popsim.UnknownAttributeError, match="tilesPerSuperTile is a Poplar IPUModel field that "
                                                           "popsim does not model"):
        model.tilesPerSuperTile = 2


def test_poplar_method_spelling_names_popsim_s():
    with pytest.raises(AttributeError, match="use model.create_device"):
        popsim.IPUModel().createDevice()


@pytest.mark.parametrize("field,value,message", [
    ("num_worker_contexts", 100, "IPUModel.num_worker_contexts must be an integer in 1..64, found 100"),
    ("num_worker_contexts", 0, "IPUModel.num_worker_contexts must be an integer in 1..64, found 0"),
    ("tiles_per_ipu", 0, "IPUModel.tiles_per_ipu must be an integer >= 1, found 0"),
    ("tiles_per_ipu", -4, "IPUModel.tiles_per_ipu must be an integer >= 1, found -4"),
    ("tiles_per_ipu", 2.5, "IPUModel.tiles_per_ipu must be an integer, found float 2.5"),
    ("tiles_per_ipu", 4.0, "IPUModel.tiles_per_ipu must be an integer, found float 4.0; pass a whole number such as 4"),
    ("tiles_per_ipu", "4", "IPUModel.tiles_per_ipu must be an integer, found str '4'"),
    ("tiles_per_ipu", True, "IPUModel.tiles_per_ipu must be an integer, found bool True"),
    ("tiles_per_ipu", 1473, "IPUModel.tiles_per_ipu must be an integer in 1..1472 (the tiles of one ipu2 IPU), "
                            "found 1473; for more tiles, set num_ipus"),
    ("tilesPerIPU", 2.5, "IPUModel.tilesPerIPU must be an integer, found float 2.5"),
    ("num_ipus", 65, "IPUModel.num_ipus must be an integer in 1..64, found 65"),
    ("memory_bytes_per_tile", -1, "IPUModel.memory_bytes_per_tile must be an integer >= 1, found -1"),
    ("tile_clock_frequency", 0, "IPUModel.tile_clock_frequency must be a positive finite number, found 0"),
    ("tile_clock_frequency", float("nan"), "IPUModel.tile_clock_frequency must be a positive finite number"),
    ("tile_clock_frequency", "1GHz", "IPUModel.tile_clock_frequency must be a positive number, found str '1GHz'"),
    ("min_ipu_sync_delay", -1, "IPUModel.min_ipu_sync_delay must be a non-negative integer, found -1"),
    ("global_sync_cycles", -5, "IPUModel.global_sync_cycles must be a non-negative integer, found -5"),
    ("relative_sync_delay", "SOMETIMES", "IPUModel.relative_sync_delay must be a RelativeSyncDelayType (AUTO, "
                                         "NO_DELAY), found str 'SOMETIMES'"),
    ("compile_ipu_code", "yes", "IPUModel.compile_ipu_code must be True or False, found str 'yes'"),
])
def test_values_are_checked_when_set(field, value, message):
    model = popsim.IPUModel("ipu2")
    before = getattr(model, field)
    with pytest.raises(popsim.InvalidMachineModelError) as info:
        setattr(model, field, value)
    assert message in str(info.value)
    assert getattr(model, field) == before  # a refused value leaves the field as it was


def test_numpy_integers_are_accepted():
    model = popsim.IPUModel()
    model.tiles_per_ipu = np.int64(4)
    model.num_worker_contexts = np.uint8(3)
    assert type(model.tiles_per_ipu) is int and model.tiles_per_ipu == 4
    assert model.create_device().target.num_worker_contexts == 3


def test_too_many_workers_fails_at_the_target_not_in_the_engine(device):
    # Before, num_worker_contexts=100 passed until Engine() raised a bare ValueError from the core.
    with pytest.raises(popsim.InvalidMachineModelError, match="Target.num_worker_contexts must be an integer in "
                                                             "1..64, found 100"):
        device.target.with_changes(num_worker_contexts=100)
    with pytest.raises(popsim.InvalidMachineModelError, match="Target.tiles_per_ipu must be an integer, found float"):
        popsim.Target.create_ipu_target(tiles_per_ipu=2.5)


def test_largest_worker_count_runs(run_and_read):
    model = popsim.IPUModel()
    model.tiles_per_ipu = 2
    model.num_worker_contexts = 64
    device = model.create_device()
    graph = popsim.Graph(device)
    v = graph.add_variable(FLOAT, [3], "v")
    graph.set_tile_mapping(v, 1)
    c = graph.add_constant(FLOAT, [3], [1, 2, 3], "c")
    graph.set_tile_mapping(c, 0)
    [out] = run_and_read(graph, device, popsim.Copy(c, v), [v])
    assert out.tolist() == [1, 2, 3]


def test_model_copies_and_lists_its_fields():
    model = popsim.IPUModel()
    model.tiles_per_ipu = 8
    twin = copy.copy(model)
    twin.tiles_per_ipu = 16
    assert (model.tiles_per_ipu, twin.tiles_per_ipu) == (8, 16)
    assert {"tiles_per_ipu", "tilesPerIPU", "num_worker_contexts"} <= set(dir(model))


def test_unknown_ipu_version():
    with pytest.raises(popsim.PopsimError) as info:
        popsim.IPUModel("ipu9")
    msg = str(info.value)
    assert "'ipu9'" in msg and "ipu1, ipu2, ipu21" in msg
    with pytest.raises(popsim.PopsimError, match="'ipu9'"):
        popsim.Target.create_ipu_target(version="ipu9")


def test_bad_model_fields():
    model = popsim.IPUModel("ipu2")
    with pytest.raises(popsim.PopsimError, match="tiles_per_ipu must be an integer >= 1, found 0"):
        model.tiles_per_ipu = 0  # checked when set (tests/test_ipu_model.py has the rest)
