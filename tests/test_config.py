"""Environment variables and engine options: POPLAR_ENGINE_OPTIONS read next to
POPSIM_ENGINE_OPTIONS, and the thread count bounded."""
import pathlib

import pytest

import popsim
from popsim import config
from popsim.options import EngineOptions


def test_poplar_engine_options_are_read(monkeypatch):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"autoReport.all": "true", "debug.instrument": "true"}')
    options = EngineOptions({"autoReport.all": "false"})
    assert options["autoReport.all"] == "true"  # the environment wins over the program, as in Poplar
    assert options["debug.instrument"] == "true"


def test_popsim_wins_a_key_both_set_and_both_contribute(monkeypatch):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "false", "debug.trace": "true"}')
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "true"}')
    options = EngineOptions({})
    assert options["debug.allowOutOfMemory"] == "true"
    assert options["debug.trace"] == "true"
    assert [v for v, _ in config.engine_options_overrides()] == ["POPLAR_ENGINE_OPTIONS", "POPSIM_ENGINE_OPTIONS"]


@pytest.mark.parametrize("variable", ["POPLAR_ENGINE_OPTIONS", "POPSIM_ENGINE_OPTIONS"])
def test_errors_name_the_variable_the_bad_value_came_from(monkeypatch, variable):
    other = "POPSIM_ENGINE_OPTIONS" if variable == "POPLAR_ENGINE_OPTIONS" else "POPLAR_ENGINE_OPTIONS"
    monkeypatch.setenv(other, '{"debug.trace": "true"}')
    monkeypatch.setenv(variable, '{"debug.allowOutOfMemroy": "true"}')
    with pytest.raises(popsim.InvalidOptionError) as info:
        EngineOptions({})
    msg = str(info.value)
    assert f"Unrecognised option 'debug.allowOutOfMemroy' (from {variable})" in msg
    assert "did you mean 'debug.allowOutOfMemory'" in msg
    monkeypatch.setenv(variable, '{"debug.trace": "maybe"}')
    with pytest.raises(popsim.InvalidOptionError, match=f"option 'debug.trace' \\(from {variable}\\) must be one of"):
        EngineOptions({})
    monkeypatch.setenv(variable, "{not json")
    with pytest.raises(popsim.InvalidOptionError, match=f"^{variable} is not valid JSON"):
        EngineOptions({})
    monkeypatch.setenv(variable, "[1]")
    with pytest.raises(popsim.InvalidOptionError, match=f"^{variable} must be a JSON object"):
        EngineOptions({})


def test_poplar_engine_options_reach_the_engine(small_device, monkeypatch):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "true"}')
    g = popsim.Graph(small_device)
    big = g.add_variable(popsim.FLOAT, [200_000], "big")
    g.set_tile_mapping(big, 0)
    e = popsim.Engine(g, popsim.Sequence())  # over memory: builds only because of the variable
    assert e.get_report().memory.tiles_out_of_memory == [0]


def test_every_variable_is_in_the_readme():
    assert "POPLAR_ENGINE_OPTIONS" in config.ENVIRONMENT
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    missing = [v for v in config.ENVIRONMENT if f"`{v}`" not in readme]
    assert not missing, f"README's environment table lacks {missing}"


@pytest.mark.parametrize("value", [100000, 257, "-1", "two"])
def test_num_threads_option_is_bounded(value):
    with pytest.raises(popsim.InvalidOptionError) as info:
        EngineOptions({"popsim.numThreads": value}, use_environment=False)
    assert f"option 'popsim.numThreads' must be an integer in 0..{config.MAX_THREADS}; found '{value}'" \
        in str(info.value)
    assert "more threads than host cores only add overhead" in str(info.value)


def test_num_threads_within_the_bound_are_accepted():
    assert EngineOptions({"popsim.numThreads": 256}, use_environment=False)["popsim.numThreads"] == "256"
    assert EngineOptions({"popsim.numThreads": 0}, use_environment=False)["popsim.numThreads"] == "0"


@pytest.mark.parametrize("text", ["100000", "0", "-3", "lots"])
def test_num_threads_variable_is_bounded(monkeypatch, text):
    monkeypatch.setenv("POPSIM_NUM_THREADS", text)
    with pytest.raises(popsim.InvalidOptionError, match=f"POPSIM_NUM_THREADS must be an integer in "
                                                        f"1..{config.MAX_THREADS}, found '{text}'"):
        config.num_threads()


def test_num_threads_variable_and_default(monkeypatch):
    monkeypatch.setenv("POPSIM_NUM_THREADS", "3")
    assert config.num_threads() == 3
    monkeypatch.delenv("POPSIM_NUM_THREADS")
    assert 1 <= config.num_threads() <= config.MAX_THREADS
