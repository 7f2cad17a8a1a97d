"""Shared fixtures: devices, small graphs and tensors, and a helper that builds, runs and
reads back a program. Plain helpers shared by several test files live in modules beside
this one (graph_helpers.py, tensor_helpers.py, view_chains.py, executable_sample.py,
codelet/sample_vertices.py, codelet/vertex_harness.py)."""
import os

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT

# The helper modules beside the tests get pytest's assertion messages too.
pytest.register_assert_rewrite("graph_helpers", "tensor_helpers", "view_chains", "vertex_harness")

from graph_helpers import load_and_run, mapped  # noqa: E402 (after the registration above)

# Variables that change what popsim does; tests that want one set it themselves.
_BEHAVIOUR = ("POPSIM_ENGINE_OPTIONS", "POPLAR_ENGINE_OPTIONS", "POPSIM_CODELET_MODE", "POPSIM_LOG_LEVEL",
              "POPSIM_LOG_DEST", "GCL_OPTIONS")


@pytest.fixture(scope="session", autouse=True)
def checked_codelets():
    """The suite compiles C++ codelets in checked mode (bounds-checked field access): an
    out-of-range index in a test's codelet is an IndexError, not corrupted memory."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POPSIM_CHECKED_CODELETS", "1")
        yield


@pytest.fixture(autouse=True)
def hermetic_environment(monkeypatch, tmp_path_factory):
    """Run every test as if the caller's environment set nothing: no engine options, no
    debug modes, no executable cache (POPSIM_CACHE_DIR switches it on), except the
    race check (POPSIM_CHECK_RACES), on for every test. Compiled codelets
    still go to one cache for the whole session, so they compile once."""
    for name in _BEHAVIOUR:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("POPSIM_CHECK_RACES", "true")  # the suite's graphs must be free of races
    codelets = os.environ.get("POPSIM_CACHE_DIR")
    monkeypatch.delenv("POPSIM_CACHE_DIR", raising=False)
    if codelets:  # keep using the caller's codelet cache: it lives under <dir>/codelets
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg"))
        link = tmp_path_factory.getbasetemp() / "xdg" / "popsim"
        if not os.path.lexists(link):  # exists() is False for a link to a directory not made yet
            target = os.path.abspath(os.path.expanduser(codelets))
            try:
                os.makedirs(target, exist_ok=True)
            except OSError:
                pass  # popsim falls back to a private cache, with a warning
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target)
    from popsim import log
    log.configure()


@pytest.fixture
def device():
    """An ipu2 IPUModel device (1472 tiles)."""
    return popsim.IPUModel("ipu2").create_device()


@pytest.fixture
def small_device():
    """An IPUModel with 4 tiles, for tests that care about per-tile figures."""
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    return model.create_device()


@pytest.fixture
def cpu_device():
    return popsim.Device.create_cpu_device()


@pytest.fixture
def no_env_options(monkeypatch):
    """No engine options from the environment (POPSIM_ENGINE_OPTIONS unset)."""
    monkeypatch.delenv("POPSIM_ENGINE_OPTIONS", raising=False)


@pytest.fixture
def views_graph(small_device):
    """(graph, t, m): a 4-tile graph with a FLOAT vector ``t`` [4] and matrix ``m`` [4, 4] on tile 0."""
    g = popsim.Graph(small_device)
    t = mapped(g, FLOAT, (4,), "t")
    m = mapped(g, FLOAT, (4, 4), "m")
    return g, t, m


@pytest.fixture
def graph(device):
    """A graph of the ipu2 device (a test file may define its own ``graph``)."""
    return popsim.Graph(device)


@pytest.fixture
def v34(graph):
    """A (3, 4) FLOAT variable, the first of its graph (ids 0..11), with its numpy twin."""
    return graph.add_variable(FLOAT, (3, 4), "v34"), np.arange(12).reshape(3, 4)


@pytest.fixture
def v234(graph):
    """A (2, 3, 4) INT variable, the first of its graph (ids 0..23), with its numpy twin."""
    return graph.add_variable(INT, (2, 3, 4), "v234"), np.arange(24).reshape(2, 3, 4)


def run_and_read(graph, device, programs, reads, writes=None, options=None, program_index=0):
    """Build an engine, write ``writes`` {tensor: array}, run, and return the contents of
    each tensor in ``reads`` (a list) as numpy arrays."""
    return load_and_run(graph, device, programs, reads, writes, options, program_index=program_index)[1][0]


@pytest.fixture(name="run_and_read")
def run_and_read_fixture():
    """The run_and_read helper, as a fixture."""
    return run_and_read


def pytest_collection_modifyitems(config, items):
    """Tests marked slow (long randomised runs) or mpi (several processes under mpiexec)
    are skipped unless selected with ``-m slow`` / ``-m mpi`` (or any -m expression
    naming them), so the suite stays quick."""
    chosen = config.getoption("markexpr") or ""
    for marker in ("slow", "mpi"):
        if marker in chosen:
            continue
        skip = pytest.mark.skip(reason=f"{marker}: select with -m {marker}")
        for item in items:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(skip)
