"""The API fuzzing harness (tests/test_api_fuzz.py, tests/poplibs/test_poplibs_fuzz.py):
public entry points called with wrong types and extreme values. A call may succeed or
raise a PopsimError; any other exception (TypeError, ValueError, OverflowError,
MemoryError, numpy's errors...) is a failure, and so is a call that runs for minutes or
asks for gigabytes.

An entry is a name, a function ``fn(env, *args)`` and the arguments of one good call;
each example replaces some of those arguments with odd values (``ODD``, plus numbers,
text and lists hypothesis makes up). ``Ref("name")`` stands for an object of the
example's environment (a tensor of its graph, one of another graph, a program...), made
afresh for every example so that one call cannot spoil the next.

The default run is small and the same every time (derandomized, no example database);
POPSIM_FUZZ_EXAMPLES=N sets the examples per test, e.g. a long run by hand:

    POPSIM_FUZZ_EXAMPLES=5000 python -m pytest tests/test_api_fuzz.py tests/poplibs/test_poplibs_fuzz.py
"""
import contextlib
import faulthandler
import math
import os
import resource
import tempfile
from dataclasses import dataclass
from typing import Callable, Sequence, Tuple

import numpy as np
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, INT
from popsim.program import Sequence as Seq

# Examples per test: a few seconds in all by default; the variable asks for a long run.
EXAMPLES = int(os.environ.get("POPSIM_FUZZ_EXAMPLES") or 0)


def fuzz_settings(default_examples: int) -> settings:
    """Deterministic settings (CI sees the same examples every run), with no time limit
    per example: a slow example is not a failure, a hang is (``HANG_SECONDS``)."""
    return settings(max_examples=EXAMPLES or default_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=False)


# One call that takes longer than this is a hang: the process is ended with every thread's traceback.
HANG_SECONDS = 300
# A call may grow the address space by this much: enough for an engine's threads and
# buffers, far less than the terabytes a shape of 2**40 would ask for.
ADDRESS_SPACE_HEADROOM = 8 << 30


@dataclass(frozen=True)
class Ref:
    """An object of the example's environment, by name (an attribute of ``Env``)."""
    name: str

    def __repr__(self):
        return f"<{self.name}>"


class Env:
    """What a call works on: a 4-tile graph with tensors of several kinds (mapped, empty,
    constant, views), a tensor of another graph, a program, a function, a compute set,
    the graph's device and target."""

    def __init__(self):
        model = popsim.IPUModel("ipu2")
        model.tiles_per_ipu = 4
        self.device = model.create_device()
        self.g = popsim.Graph(self.device)
        g = self.g
        self.m = g.add_variable(FLOAT, (4, 3), "m", mapping=popsim.VariableMappingMethod.LINEAR)
        self.v = g.add_variable(FLOAT, (4,), "v", mapping=popsim.VariableMappingMethod.LINEAR)
        self.s = g.add_variable(INT, (), "s")
        g.set_tile_mapping(self.s, 0)
        self.i = g.add_variable(INT, (2,), "i")
        g.set_tile_mapping(self.i, 1)
        self.u = g.add_variable(popsim.UNSIGNED_INT, (2,), "u")
        g.set_tile_mapping(self.u, 2)
        self.b = g.add_variable(popsim.BOOL, (), "b")
        g.set_tile_mapping(self.b, 3)
        self.e = g.add_variable(FLOAT, (3, 0), "e")  # no elements
        self.mt = self.m.transpose()[1:]  # a strided view
        self.c = g.add_constant(FLOAT, (2,), [1.0, 2.0], "c")
        g.set_tile_mapping(self.c, 0)
        # for PopLibs: the other side of a matmul with K = 0, a square matrix, a 3-D tensor,
        # deltas like m, labels, offsets (UNSIGNED_INT) for dynamic and multi slices
        linear = popsim.VariableMappingMethod.LINEAR
        self.e2 = g.add_variable(FLOAT, (0, 2), "e2")
        self.sq = g.add_variable(FLOAT, (3, 3), "sq", mapping=linear)
        self.t3 = g.add_variable(FLOAT, (2, 3, 4), "t3", mapping=linear)
        self.d = g.add_variable(FLOAT, (4, 3), "d", mapping=linear)
        self.lab = g.add_variable(popsim.UNSIGNED_INT, (4,), "lab", mapping=linear)
        self.off = self.u[:1]
        self.offs = self.u.reshape([2, 1])
        self.row = self.sq[0]
        self.t3t = self.t3.dim_shuffle([0, 2, 1])
        self.slices = self.d[:2].reshape([2, 1, 3])
        self.cs = g.add_compute_set("cs")
        self.p = Seq()
        self.f = g.add_function(Seq(), "f")
        self.copy = popsim.program.Copy(self.v, self.m[:, 0])
        other = popsim.Graph(self.device)
        self.x = other.add_variable(FLOAT, (4,), "x")  # a tensor of another graph
        other.set_tile_mapping(self.x, 0)
        self.other = other
        self.target = g.target

    def resolve(self, value):
        """``value`` with every Ref replaced by the object it names (inside lists, tuples
        and dicts too)."""
        if isinstance(value, Ref):
            return getattr(self, value.name)
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.resolve(v) for v in value)
        if isinstance(value, dict):
            return {self.resolve(k) if isinstance(k, Ref) else k: self.resolve(v) for k, v in value.items()}
        return value


class Opaque:
    """An object of a class no API knows."""

    def __repr__(self):
        return "<Opaque>"


# Values that probe the edges of what an argument means: wrong types, non-ASCII digits,
# numbers at and past the 64-bit limits, shapes no host could hold, containers of the
# wrong depth, objects of the environment used in the wrong place.
ODD = [
    None, True, False, 0, 1, -1, 2, 3, 2 ** 31, 2 ** 62, 2 ** 63, 2 ** 64, -(2 ** 63), 2 ** 100, -(2 ** 70), 10 ** 400,
    0.5, -0.0, math.nan,
    math.inf, -math.inf, 1e300, "", "x", "²", "٣", "1", "float", "FLOAT", b"1", [], [[]], [1, [2]], [0, 0],
    [-1], [2 ** 62], [2 ** 64], [2 ** 31, 2 ** 31], [3, -1], ["²"], [None], [0.5], (1, 2), ((0, 1),),
    [[(0, 2 ** 62)]], [[(2, 1)]], {}, {"a": 1}, {1: "x"}, {"x": "²"}, 1 + 1j, np.int64(2), np.float32("nan"),
    np.uint64(2 ** 64 - 1), np.array([1, 2]), np.zeros((2, 2)), np.array(["a"]), Opaque(), Ref("x"), Ref("m"),
    Ref("v"), Ref("s"), Ref("i"), Ref("u"), Ref("b"), Ref("e"), Ref("c"), Ref("p"), Ref("g"), Ref("cs"),
    Ref("other"), [Ref("v")], [Ref("x")], [Ref("v"), Ref("m")], FLOAT, popsim.BOOL, popsim.HALF, int, float,
    np.float64,
]

_SCALARS = st.one_of(st.sampled_from(ODD), st.integers(-(2 ** 70), 2 ** 70), st.floats(), st.text(max_size=3))
ODD_VALUES = st.one_of(_SCALARS, st.lists(st.one_of(st.integers(-3, 2 ** 64), st.sampled_from(ODD)), max_size=3))


@dataclass(frozen=True)
class Pick:
    """An argument that is always one of ``choices`` (the object whose method is called),
    never an odd value: a method of an int is not popsim's."""
    choices: Tuple

    def __init__(self, *choices):
        object.__setattr__(self, "choices", choices)


@dataclass(frozen=True)
class Entry:
    """One public entry point: ``fn(env, *args)`` and the arguments of a good call."""
    name: str
    fn: Callable
    good: Tuple = ()

    def __repr__(self):
        return self.name


def entry(name: str, fn: Callable, *good) -> Entry:
    return Entry(name, fn, tuple(good))


def call_args(data, e: Entry) -> list:
    """The arguments of one example: each good argument, or (half the time) an odd value;
    a Pick is one of its choices."""
    args = []
    for k, good in enumerate(e.good):
        if isinstance(good, Pick):
            args.append(data.draw(st.sampled_from(good.choices), label=f"argument {k}"))
        elif data.draw(st.booleans(), label=f"replace argument {k}"):
            args.append(data.draw(ODD_VALUES, label=f"argument {k}"))
        else:
            args.append(good)
    return args


@contextlib.contextmanager
def guarded():
    """No call may hang (the process ends, printing every thread's stack) or take more
    than ADDRESS_SPACE_HEADROOM of address space (it fails with MemoryError). Each runs in
    a directory of its own, removed after it: an option such as popsim.cacheDir="1" or
    autoReport.directory writes where it is told, relative paths included."""
    with tempfile.TemporaryDirectory(prefix="popsim-fuzz-") as scratch, _working_directory(scratch), _limits():
        yield


@contextlib.contextmanager
def _working_directory(path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _limits():
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = _address_space()
    if used is not None:  # Linux; elsewhere the hang guard alone
        limit = used + ADDRESS_SPACE_HEADROOM
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        if used is not None:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        faulthandler.cancel_dump_traceback_later()


def _address_space():
    """This process's virtual memory size in bytes, from /proc/self/status (Linux); None
    where there is none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_call(data, entries: Sequence[Entry]) -> None:
    """Draw an entry and its arguments, call it, and fail on anything but success or a
    PopsimError."""
    e = data.draw(st.sampled_from(entries), label="entry")
    args = call_args(data, e)
    env = Env()
    resolved = [env.resolve(a) for a in args]
    note(f"{e.name}{tuple(args)!r}")
    try:
        with guarded():
            e.fn(env, *resolved)
    except popsim.PopsimError:
        pass
    except Exception as exc:
        raise AssertionError(f"{e.name}{tuple(args)!r} raised {type(exc).__module__}.{type(exc).__name__}, not a "
                             f"PopsimError: {exc}") from exc
