"""Random nested programs: the native engine computes what the reference executor says.

Each example builds one small graph (three INT data vectors spread over tiles, loop
counters, constants, two FIFO streams, a few compute sets of small Python vertices,
functions that Call later functions) and several random programs, then runs each
program on an Engine and on popsim.reference.ReferenceExecutor and compares every
variable, the device-to-host stream's buffer, what was printed, and how a run ended
(an abort's message). Data values stay in 0..3, so Switch cases, If predicates and
AbortOnCondition see every outcome; RepeatWhile loops count with their own counter
(advanced by a Switch over constants), so they always end.
"""
import contextlib
import io
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popsim
from popsim import INT, InOut, Input, MultiVertex, Output, Vector, Vertex
from popsim.errors import ApplicationRuntimeError
from popsim.program import (AbortOnCondition, Call, Copy, Execute, If, PrintTensor, Repeat, RepeatWhileFalse,
                            RepeatWhileTrue, Sequence, Switch, Sync, WriteUndef)
from popsim.reference import ReferenceExecutor

pytestmark = pytest.mark.compiler

TILES, N, NUM_DATA, VALUES = 4, 8, 3, 4
PROGRAMS_PER_GRAPH = 8
STREAM_ELEMENTS = 2


class AddMod(Vertex):
    a: Input[Vector[int]]
    b: Input[Vector[int]]
    out: Output[Vector[int]]

    def compute(self):
        for i in range(len(self.out)):
            self.out[i] = (self.a[i % len(self.a)] + self.b[i % len(self.b)]) % 4


class Scramble(Vertex):
    x: InOut[Vector[int]]

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] = (self.x[i] * 3 + 1) % 4


class SumMod(Vertex):
    xs: Input[Vector[int]]
    out: Output[int]

    def compute(self):
        s = 0
        for v in self.xs:
            s += v
        self.out = s % 4


class AddWorker(MultiVertex):
    x: InOut[Vector[int]]

    def compute(self, worker_id):
        i = worker_id
        while i < len(self.x):
            self.x[i] = (self.x[i] + worker_id) % 4
            i += self.num_workers()


# (vertex class, {field: (writes, size range)})
VERTEX_FIELDS = {
    AddMod: {"out": (True, (1, 4)), "a": (False, (1, 4)), "b": (False, (1, 4))},
    Scramble: {"x": (True, (1, 4))},
    SumMod: {"out": (True, (1, 1)), "xs": (False, (1, 5))},
    AddWorker: {"x": (True, (1, 8))},
}


def _device():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = TILES
    return model.create_device()


DEVICE = _device()


class World:
    """One example's graph, and the pieces its random programs are made of."""

    def __init__(self, draw):
        self.draw = draw
        g = self.graph = popsim.Graph(DEVICE)
        g.add_codelets(list(VERTEX_FIELDS))
        self.data = []
        for i in range(NUM_DATA):
            d = g.add_variable(INT, [N], f"d{i}")
            cut = draw(st.integers(0, N))
            tiles = draw(st.lists(st.integers(0, TILES - 1), min_size=2, max_size=2))
            g.set_tile_mapping(d.slice(0, cut), tiles[0]) if cut else None
            g.set_tile_mapping(d.slice(cut, N), tiles[1]) if cut < N else None
            g.set_initial_value(d, self.values(N))
            self.data.append(d)
        self.const = [self._constant(k) for k in range(6)]
        self.table = g.add_constant(INT, [N], self.values(N), "table")
        g.set_tile_mapping(self.table, draw(st.integers(0, TILES - 1)))
        self.stream_in = g.add_host_to_device_fifo("in", INT, STREAM_ELEMENTS)
        self.stream_out = g.add_device_to_host_fifo("out", INT, STREAM_ELEMENTS)
        self.in_values = np.asarray(self.values(3 * STREAM_ELEMENTS), np.int32)
        self.counters = []
        self.compute_sets = [self._compute_set() for _ in range(draw(st.integers(0, 2)))]
        self.functions = []
        for _ in range(draw(st.integers(0, 3))):  # each function may Call the ones made before it
            body = self.program(2)
            self.functions.append(g.add_function(body, f"f{len(self.functions)}"))

    def values(self, n):
        """n data values (one draw: keeps each example cheap to generate)."""
        code = self.draw(st.integers(0, VALUES ** n - 1))
        return [(code // VALUES ** i) % VALUES for i in range(n)]

    def pick(self, pool, n, unique):
        """n elements of ``pool`` (one draw)."""
        rng = random.Random(self.draw(st.integers(0, 2 ** 32 - 1)))
        return rng.sample(pool, n) if unique else [rng.choice(pool) for _ in range(n)]

    def _constant(self, k):
        c = self.graph.add_constant(INT, [], k, f"k{k}")
        self.graph.set_tile_mapping(c, k % TILES)
        return c

    def _scalar(self, name):
        t = self.graph.add_variable(INT, [], name)
        self.graph.set_tile_mapping(t, self.draw(st.integers(0, TILES - 1)))
        self.counters.append(t)
        return t

    # -- views ----------------------------------------------------------------------------------
    def element_view(self, elements):
        """A view of the (variable, index) elements, in that order."""
        if len(elements) > 1 and all(v == elements[0][0] for v, _ in elements) and \
                [i for _, i in elements] == list(range(elements[0][1], elements[0][1] + len(elements))):
            return self.data[elements[0][0]].slice(elements[0][1], elements[0][1] + len(elements))
        return popsim.concat([self.data[v][i:i + 1] for v, i in elements])

    def view(self, n, writable=True):
        """A random view of n data elements (without repeats when it is to be written)."""
        draw = self.draw
        kinds = ["slice", "strided", "reversed", "transposed", "gathered"]
        if not writable:
            kinds += ["table", "broadcast"]
        kind = draw(st.sampled_from(kinds))
        d = self.data[draw(st.integers(0, NUM_DATA - 1))]
        if kind == "slice" or (kind == "strided" and n > N // 2):
            b = draw(st.integers(0, N - n))
            return d.slice(b, b + n)
        if kind == "strided":
            stride = draw(st.integers(2, max(2, (N - 1) // max(n - 1, 1))))
            b = draw(st.integers(0, N - 1 - (n - 1) * stride))
            return d[b:b + (n - 1) * stride + 1:stride]
        if kind == "reversed":
            b = draw(st.integers(0, N - n))
            return d.slice(b, b + n).reverse(0)
        if kind == "transposed":
            return d.reshape([2, N // 2]).transpose().flatten().slice(0, n)
        if kind == "table":
            b = draw(st.integers(0, N - n))
            return self.table.slice(b, b + n)
        if kind == "broadcast":
            return self.table[draw(st.integers(0, N - 1))].reshape([1]).broadcast(n, 0)
        pool = [(v, i) for v in range(NUM_DATA) for i in range(N)]
        return self.element_view(self.pick(pool, n, writable))

    def scalar_view(self):
        return self.data[self.draw(st.integers(0, NUM_DATA - 1))][self.draw(st.integers(0, N - 1))]

    # -- compute sets without races ---------------------------------------------------------------
    def _compute_set(self):
        draw = self.draw
        cs = self.graph.add_compute_set()
        free = [(v, i) for v in range(NUM_DATA) for i in range(N)]
        plans = []
        for _ in range(draw(st.integers(1, 3))):
            cls = draw(st.sampled_from(list(VERTEX_FIELDS)))
            conns = {}
            for field, (writes, (lo, hi)) in VERTEX_FIELDS[cls].items():
                if writes:  # its own elements: no other field of the compute set touches them
                    n = draw(st.integers(lo, min(hi, len(free)))) if len(free) >= lo else 0
                    if n == 0:
                        break
                    picked = self.pick(free, n, True)
                    free = [e for e in free if e not in picked]
                    conns[field] = picked
            else:
                plans.append((cls, conns))
        for cls, conns in plans:  # reads come from elements nobody writes
            for field, (writes, (lo, hi)) in VERTEX_FIELDS[cls].items():
                if not writes:
                    if not free:
                        conns[field] = None
                        break
                    n = draw(st.integers(lo, hi))
                    conns[field] = self.pick(free, n, False)
            if any(c is None for c in conns.values()):
                continue
            edges = {}
            for field, elements in conns.items():
                t = self.element_view(elements)
                edges[field] = t[0] if cls is SumMod and field == "out" else t
            v = self.graph.add_vertex(cs, cls.__name__, edges)
            self.graph.set_tile_mapping(v, draw(st.integers(0, TILES - 1)))
        return cs

    # -- programs ---------------------------------------------------------------------------------
    def program(self, depth):
        draw = self.draw
        leaves = ["copy", "copy", "stream_in", "stream_out", "print", "sync", "abort_on"]
        if self.compute_sets:
            leaves += ["execute", "execute"]
        if self.functions:
            leaves += ["call"]
        branches = ["sequence", "repeat", "while_true", "while_false", "if", "switch", "switch"] if depth else []
        kind = draw(st.sampled_from(leaves + branches))
        return getattr(self, "_" + kind)(depth)

    def _copy(self, depth):
        n = self.draw(st.integers(1, N))
        return Copy(self.view(n, writable=False), self.view(n))

    def _stream_in(self, depth):
        return Copy(self.stream_in, self.view(STREAM_ELEMENTS))

    def _stream_out(self, depth):
        return Copy(self.view(STREAM_ELEMENTS, writable=False), self.stream_out)

    def _print(self, depth):
        n = self.draw(st.integers(1, N))
        return PrintTensor(self.draw(st.sampled_from(["t", "values"])), self.view(n, writable=False))

    def _sync(self, depth):
        return self.draw(st.sampled_from([Sync(), WriteUndef(self.view(2)), Sequence()]))

    def _abort_on(self, depth):
        # Rare: most data values are non-zero, so most of these stop the run.
        if self.draw(st.integers(0, 4)):
            return Sequence()
        return AbortOnCondition(self.scalar_view(), self.draw(st.sampled_from(["", "stop"])))

    def _execute(self, depth):
        return Execute(self.draw(st.sampled_from(self.compute_sets)))

    def _call(self, depth):
        return Call(self.draw(st.sampled_from(self.functions)))

    def _sequence(self, depth):
        return Sequence([self.program(depth - 1) for _ in range(self.draw(st.integers(0, 3)))])

    def _repeat(self, depth):
        return Repeat(self.draw(st.integers(0, 3)), self.program(depth - 1))

    def _while(self, depth, loop_while):
        """Sequence(counter = 0, RepeatWhile(advance counter and set the predicate, ...))."""
        n = self.draw(st.integers(0, 3))
        counter, predicate = self._scalar("counter"), self._scalar("predicate")
        go, stop = (self.const[1], self.const[0]) if loop_while else (self.const[0], self.const[1])
        advance = Switch(counter, {k: Sequence(Copy(self.const[k + 1], counter), Copy(go if k < n else stop, predicate))
                                   for k in range(n + 1)}, Copy(stop, predicate))
        kind = RepeatWhileTrue if loop_while else RepeatWhileFalse
        return Sequence(Copy(self.const[0], counter), kind(advance, predicate, self.program(depth - 1)))

    def _while_true(self, depth):
        return self._while(depth, True)

    def _while_false(self, depth):
        return self._while(depth, False)

    def _if(self, depth):
        return If(self.scalar_view(), self.program(depth - 1),
                  self.program(depth - 1) if self.draw(st.booleans()) else None)

    def _switch(self, depth):
        values = self.draw(st.lists(st.integers(0, VALUES), max_size=VALUES, unique=True))
        default = self.program(depth - 1) if self.draw(st.booleans()) else None
        return Switch(self.scalar_view(), {v: self.program(depth - 1) for v in values}, default)


def _run(runner, index):
    """Run one program; what it printed and how it ended."""
    text = io.StringIO()
    ended = "ok"
    with contextlib.redirect_stdout(text):
        try:
            runner.run(index)
        except ApplicationRuntimeError as e:
            ended = str(e).split(": ", 1)[-1]  # the abort message (the engine also names the step)
    return text.getvalue(), ended


def check_engine_matches_reference(data):
    world = World(data.draw)
    programs = [world.program(3) for _ in range(PROGRAMS_PER_GRAPH)]
    g = world.graph
    state = world.data + world.counters
    for i, t in enumerate(state):
        g.create_host_read(f"r{i}", t)
    engine = popsim.Engine(g, programs)
    engine.load(DEVICE)
    reference = ReferenceExecutor(g, programs)
    outs = {}
    for name, runner in (("engine", engine), ("reference", reference)):
        outs[name] = np.full(4 * STREAM_ELEMENTS, -1, np.int32)
        runner.connect_stream("in", world.in_values.copy())
        runner.connect_stream("out", outs[name])
    for i in list(range(len(programs))) * 2:  # the second round starts from the first round's state
        got = _run(engine, i)
        want = _run(reference, i)
        assert got == want, f"program {i}: printed output or ending differs"
        for k, t in enumerate(state):
            np.testing.assert_array_equal(engine.read_tensor(f"r{k}"), reference.read_tensor(f"r{k}"),
                                          err_msg=f"program {i}: {t.name} differs")
        np.testing.assert_array_equal(outs["engine"], outs["reference"], err_msg=f"program {i}: stream 'out'")


# The default run's share (the suite's slowest test at 100); the slow run draws 1500 below.
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_engine_matches_reference_on_random_programs(data):
    check_engine_matches_reference(data)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_engine_matches_reference_on_many_random_programs(data):
    check_engine_matches_reference(data)
