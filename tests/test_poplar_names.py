"""Poplar's camelCase method names on Graph, Tensor, Engine, Target and Device raise an
error naming popsim's snake_case spelling."""
import copy
import pickle
import subprocess
import sys

import pytest

import popsim
from popsim import FLOAT
from popsim.program import Copy, Sequence


@pytest.fixture
def graph(small_device):
    return popsim.Graph(small_device)


def _message(obj, name):
    with pytest.raises(popsim.UnknownAttributeError) as info:
        getattr(obj, name)
    assert isinstance(info.value, AttributeError) and isinstance(info.value, popsim.PopsimError)
    return str(info.value)


@pytest.mark.parametrize("name,snake", [
    ("addVariable", "add_variable"), ("setTileMapping", "set_tile_mapping"), ("addConstant", "add_constant"),
    ("addHostToDeviceFIFO", "add_host_to_device_fifo"), ("createHostWrite", "create_host_write"),
    ("addCodelets", "add_codelets"), ("getTileMapping", "get_tile_mapping"), ("addComputeSet", "add_compute_set"),
    ("setPerfEstimate", "set_perf_estimate"), ("registerPerfEstimator", "register_perf_estimator"),
])
def test_graph_methods(graph, name, snake):
    assert _message(graph, name) == (f"Graph has no attribute '{name}': popsim spells Poplar's methods in "
                                     f"snake_case; use graph.{snake}")


def test_the_example_from_the_issue(graph):
    with pytest.raises(AttributeError, match="Graph has no attribute 'addVariable': popsim spells Poplar's methods "
                                             "in snake_case; use graph.add_variable"):
        graph.addVariable(FLOAT, [4], "v")


@pytest.mark.parametrize("name,snake", [("dimShuffle", "dim_shuffle"), ("numElements", "num_elements"),
                                        ("reshapePartial", "reshape_partial"), ("dimRoll", "dim_roll"),
                                        ("intersectsWith", "intersects_with")])
def test_tensor_methods(graph, name, snake):
    t = graph.add_variable(FLOAT, [2, 3], "t")
    assert f"use tensor.{snake}" in _message(t, name)


def test_getters_that_are_attributes_say_no_parentheses(graph):
    t = graph.add_variable(FLOAT, [2, 3], "t")
    assert "use tensor.element_type (an attribute: no parentheses)" in _message(t, "elementType")
    assert "use graph.num_vertices (an attribute: no parentheses)" in _message(graph, "getNumVertices")
    assert "use target.num_tiles (an attribute: no parentheses)" in _message(graph.target, "getNumTiles")
    assert "use target.tiles_per_ipu (an attribute: no parentheses)" in _message(graph.target, "getTilesPerIPU")
    assert "use device.get_target" in _message(popsim.Device.create_cpu_device(), "getTarget")


def test_engine_methods(graph, small_device):
    v = graph.add_variable(FLOAT, [4], "v")
    graph.set_tile_mapping(v, 0)
    engine = popsim.Engine(graph, Sequence(popsim.WriteUndef(v)))
    assert _message(engine, "readTensor").endswith("use engine.read_tensor")
    assert _message(engine, "connectStreamToCallback").endswith("use engine.connect_stream_to_callback")
    assert _message(engine, "printProfileSummary").endswith("use engine.print_profile_summary")


def test_misspellings_get_pythons_did_you_mean():
    """Other misspellings are left to Python, whose traceback suggests the closest name
    (never one of the Poplar spellings popsim answers, which dir() does not list)."""
    script = ("import popsim\n"
              "g = popsim.Graph(popsim.IPUModel().create_device())\n"
              "assert 'addVariable' not in dir(g) and 'dimShuffle' not in dir(g.add_variable(popsim.FLOAT, [2]))\n"
              "g.add_varible\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == ("AttributeError: 'Graph' object has no attribute 'add_varible'. "
                                                      "Did you mean: 'add_variable'?")


def test_attribute_probes_still_behave(graph):
    t = graph.add_variable(FLOAT, [2], "t")
    assert not hasattr(t, "addVariable") and getattr(graph, "nope", 7) == 7
    assert not hasattr(t, "__array_interface__")
    target = copy.deepcopy(graph.target)
    assert pickle.loads(pickle.dumps(target)) == target == graph.target


def test_module_level_names_keep_working():
    assert popsim.Sequence is popsim.program.Sequence and popsim.Copy is Copy
    assert popsim.concat is sys.modules["popsim.concat"].concat  # the function, not its module
