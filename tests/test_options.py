"""Engine options (popsim/options.py): unknown keys get a did-you-mean, bad values say
what is expected, and options from POPSIM_ENGINE_OPTIONS are checked the same way, the
variable named in the message."""
import pytest

import popsim
from popsim import FLOAT
from popsim.program import Sequence

from graph_helpers import mapped


@pytest.fixture
def tiny_graph(small_device):
    g = popsim.Graph(small_device)
    mapped(g, FLOAT, (2,), "w")
    return g


def test_unknown_option_suggests_closest(tiny_graph, no_env_options):
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence(), {"debug.allowOutOfMemroy": "true"})
    msg = str(info.value)
    assert "'debug.allowOutOfMemroy'" in msg
    assert "did you mean 'debug.allowOutOfMemory'" in msg


def test_unknown_option_without_close_match_lists_known(tiny_graph, no_env_options):
    with pytest.raises(popsim.InvalidOptionError, match=r"'xyz'.*known: 'autoReport\.all'"):
        popsim.Engine(tiny_graph, Sequence(), {"xyz": "1"})


@pytest.mark.parametrize("key,value,choices", [
    ("debug.allowOutOfMemory", "yes", "true, false"),
    ("target.deterministicWorkers", "sometimes", "true, false, portable"),
    ("popsim.codeletMode", "jit", "compiled, interpreted"),
])
def test_bad_value_for_enumerated_option(tiny_graph, no_env_options, key, value, choices):
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence(), {key: value})
    msg = str(info.value)
    assert f"'{key}'" in msg
    assert choices in msg
    assert repr(value) in msg


def test_option_value_of_wrong_python_type(tiny_graph, no_env_options):
    with pytest.raises(popsim.InvalidOptionError, match=r"'debug.allowOutOfMemory'.*strings.*list"):
        popsim.Engine(tiny_graph, Sequence(), {"debug.allowOutOfMemory": [1]})


def test_bad_value_for_numeric_option_says_what_is_expected(tiny_graph, no_env_options):
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence(), {"opt.maxCompilationThreads": "-1"})
    msg = str(info.value)
    assert "'opt.maxCompilationThreads'" in msg and "'-1'" in msg
    assert "integer" in msg


def test_options_not_a_mapping(tiny_graph, no_env_options):
    with pytest.raises((popsim.InvalidOptionError, TypeError), match="dict|mapping"):
        popsim.Engine(tiny_graph, Sequence(), ["debug.allowOutOfMemory"])


def test_unknown_option_from_environment(tiny_graph, monkeypatch):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", '{"debug.allowOutOfMemroy": "true"}')
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence())
    msg = str(info.value)
    assert "'debug.allowOutOfMemroy'" in msg and "POPSIM_ENGINE_OPTIONS" in msg
    assert "did you mean 'debug.allowOutOfMemory'" in msg


def test_bad_option_value_from_environment(tiny_graph, monkeypatch):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "maybe"}')
    with pytest.raises(popsim.InvalidOptionError, match=r"'debug.allowOutOfMemory'.*true, false.*'maybe'"):
        popsim.Engine(tiny_graph, Sequence(), {"debug.allowOutOfMemory": "false"})


@pytest.mark.parametrize("text", ["{bad json", '{"a": 1,}', "true"])
def test_invalid_json_in_environment(tiny_graph, monkeypatch, text):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", text)
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence())
    msg = str(info.value)
    assert "POPSIM_ENGINE_OPTIONS" in msg
    assert "JSON" in msg


def test_json_array_in_environment(tiny_graph, monkeypatch):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", "[1, 2]")
    with pytest.raises(popsim.InvalidOptionError, match="POPSIM_ENGINE_OPTIONS must be a JSON object.*list"):
        popsim.Engine(tiny_graph, Sequence())


@pytest.mark.parametrize("value", ["²", "٣", "-1", "1.5"])
def test_integer_options_take_ascii_digits_only(tiny_graph, no_env_options, value):
    """"²".isdigit() is True but int("²") fails: such a value is an InvalidOptionError."""
    with pytest.raises(popsim.InvalidOptionError, match="popsim.numThreads"):
        popsim.Engine(tiny_graph, Sequence(), {"popsim.numThreads": value})


@pytest.mark.parametrize("key", [1.5, None, 3])
def test_an_option_key_that_is_not_a_string(tiny_graph, no_env_options, key):
    """Was Python's TypeError from difflib's did-you-mean; the key is named instead."""
    with pytest.raises(popsim.InvalidOptionError, match=f"Unrecognised option '{key}'"):
        popsim.Engine(tiny_graph, Sequence(), {key: "1"})
