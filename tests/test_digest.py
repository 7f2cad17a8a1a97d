"""The executable-cache digest (digest.py) covers everything that changes behaviour."""
import copy
import dataclasses
import enum
import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import popsim
from popsim import INT
from popsim import digest as D
from popsim.program import (Abort, AbortOnCondition, Call, Copy, Execute, If, PartKind, PrintTensor, Repeat,
                            RepeatWhileFalse, RepeatWhileTrue, Sequence, Switch, Sync, SyncType, WriteUndef)
from popsim.program_tree import parts_of


@pytest.fixture
def world(device):
    g = popsim.Graph(device)
    w = dict(graph=g)
    for name in ("x", "y", "flag", "flag2"):
        w[name] = g.add_variable(INT, [4] if name in "xy" else [], name)
        g.set_tile_mapping(w[name], 0)
    w["cs"], w["cs2"] = g.add_compute_set("cs"), g.add_compute_set("cs2")
    w["f"], w["f2"] = g.add_function(Sync(), "f"), g.add_function(Abort(), "f2")
    w["in"], w["in2"] = g.add_host_to_device_fifo("in", INT, 4), g.add_host_to_device_fifo("in2", INT, 4)
    w["out"] = g.add_device_to_host_fifo("out", INT, 4)
    return w


def examples(w):
    a, b = Copy(w["x"], w["y"]), Copy(w["y"], w["x"])
    return [
        Sequence(a, b), Execute(w["cs"]), Copy(w["x"], w["y"]), Copy(w["in"], w["x"]), Copy(w["x"], w["out"]),
        Repeat(3, a), RepeatWhileTrue(a, w["flag"], b), RepeatWhileFalse(a, w["flag"], b), If(w["flag"], a, b),
        Switch(w["flag"], {1: a, 2: b}, Sequence()), Call(w["f"]), PrintTensor("t", w["x"]), WriteUndef(w["x"]),
        Sync(), Abort("stop"), AbortOnCondition(w["flag"], "why"),
    ]


def changed(value, kind, w):
    """Another value for a part of this kind (the digest must tell them apart)."""
    if kind is PartKind.PROGRAM:
        return Abort("a different program")
    if kind is PartKind.PROGRAMS:
        return list(value) + [Sync()]
    if kind is PartKind.CASES:
        return {**value, 7: Sync()}
    if kind is PartKind.TENSOR:
        return w["flag2"] if value is w["flag"] else w["x"][::-1]
    if kind is PartKind.ENDPOINT:
        return w["in2"] if value is w["in"] else w["y"][::-1] if value is not w["out"] else w["x"]
    if kind is PartKind.COMPUTE_SET:
        return w["cs2"]
    if kind is PartKind.FUNCTION:
        return w["f2"]
    assert kind is PartKind.VALUE
    if isinstance(value, enum.Enum):
        return next(v for v in type(value) if v is not value)
    if isinstance(value, int):
        return value + 1
    return value + "!"


def digest(w, programs):
    return D.graph_digest(w["graph"]._state, programs)


def test_changing_any_part_of_any_program_kind_changes_the_digest(world):
    for p in examples(world):
        before = digest(world, [p])
        assert digest(world, [copy.copy(p)]) == before
        for part in parts_of(type(p)):
            q = copy.copy(p)
            setattr(q, part.name, changed(getattr(p, part.name), part.kind, world))
            assert digest(world, [q]) != before, f"{type(p).__name__}.{part.name} is not in the digest"


def test_switch_case_values_and_moved_children_change_the_digest(world):
    a, b = Sync(debug_name="a"), Sync(debug_name="b")
    variants = [Switch(world["flag"], {1: a, 2: b}), Switch(world["flag"], {1: b, 2: a}),
                Switch(world["flag"], {1: a, 3: b}), Switch(world["flag"], {1: a}, b),
                Sequence(Sequence(a), b), Sequence(Sequence(a, b))]
    assert len({digest(world, [v]) for v in variants}) == len(variants)


def test_called_functions_bodies_are_digested(world):
    before = digest(world, [Call(world["f"])])
    world["f"].program = Sync(SyncType.EXTERNAL)
    assert digest(world, [Call(world["f"])]) != before
    before = digest(world, [Sync()])
    world["f"].program = Abort("never called")  # an uncalled function changes nothing lowering makes
    assert digest(world, [Sync()]) == before


def test_digest_of_deep_nesting_and_long_call_chains(world):
    g = world["graph"]
    p = Sync()
    for _ in range(10000):
        p = Sequence(p)
    assert len(digest(world, [p])) == 32
    f = g.add_function(Sync(), "last")
    for i in range(5000):
        f = g.add_function(Sequence(Call(f)), f"chain{i}")
    first = digest(world, [Call(f)])
    f2 = g.add_function(Sequence(Call(f)), "one_more")
    assert digest(world, [Call(f2)]) != first


def test_identical_graphs_get_identical_digests(device):
    def build():
        g = popsim.Graph(device)
        x = g.add_variable(INT, [4], "x")
        g.set_tile_mapping(x, 1)
        f = g.add_function(Copy(x[:2], x[2:]), "f")
        return D.graph_digest(g._state, [Repeat(2, Sequence(Call(f), PrintTensor(x)))])
    assert build() == build()


def test_every_target_field_is_in_the_digest(device):
    base = device.target
    reference = D.graph_digest(popsim.Graph(base)._state, [Sync()])
    for f in dataclasses.fields(base):
        if not f.compare:
            continue
        value = getattr(base, f.name)
        if isinstance(value, enum.Enum):
            other = next(v for v in type(value) if v is not value)
        elif isinstance(value, str):
            other = "ipu21" if value != "ipu21" else "ipu1"
        else:
            other = value * 2 if value else 1
        target = base.with_changes(**{f.name: other})
        assert D.graph_digest(popsim.Graph(target)._state, [Sync()]) != reference, f.name


def test_popsim_build_is_in_the_digest(world, monkeypatch):
    before = digest(world, [Sync()])
    monkeypatch.setattr(D, "build_fingerprint", lambda: "another build")
    assert digest(world, [Sync()]) != before


# -- perf estimators: everything they reach ------------------------------------------------------
def load_module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def modules(tmp_path):
    made = []

    def load(source, name=None):
        """A fresh module made from ``source`` (named ``name``: the same name again stands
        for the same file in a later process)."""
        name = name or f"user_estimators_{len(made)}"
        made.append(name)
        return load_module(tmp_path, name, source)
    yield load
    for name in made:
        sys.modules.pop(name, None)


class SomeVertex(popsim.Vertex):
    x: popsim.Input[popsim.Vector[float]]

    def compute(self):
        return True


def estimator_digest(device, estimator):
    g = popsim.Graph(device)
    g.add_codelets(SomeVertex)  # estimators are registered for known vertex types only
    g.register_perf_estimator("SomeVertex", estimator)
    return D.graph_digest(g._state, [Sync()])


ESTIMATOR = '''
    SCALE = {scale}

    def helper(n):
        return {body}

    def estimate(info, target):
        return helper(info.field_size("x")) * SCALE
'''


def test_estimators_differing_only_in_a_helpers_body_get_different_digests(device, modules):
    before = estimator_digest(device, modules(ESTIMATOR.format(scale=1, body="n * 2"), "estimators").estimate)
    same = estimator_digest(device, modules(ESTIMATOR.format(scale=1, body="n * 2"), "estimators").estimate)
    edited = estimator_digest(device, modules(ESTIMATOR.format(scale=1, body="n * 3"), "estimators").estimate)
    assert before == same
    assert before != edited


def test_estimators_differing_in_global_data_get_different_digests(device, modules):
    one = modules(ESTIMATOR.format(scale=1, body="n"))
    two = modules(ESTIMATOR.format(scale=2, body="n"))
    assert estimator_digest(device, one.estimate) != estimator_digest(device, two.estimate)


def test_estimator_closures_defaults_and_partials(device, modules):
    from functools import partial
    m = modules('''
        def make(k):
            def estimate(info, target):
                return k
            return estimate

        def with_default(info, target, k=3):
            return k

        def scaled(k, info, target):
            return k
    ''')
    digests = {estimator_digest(device, e) for e in (m.make(1), m.make(2), m.with_default,
                                                     partial(m.scaled, 1), partial(m.scaled, 2))}
    assert len(digests) == 5
    assert estimator_digest(device, m.make(1)) == estimator_digest(device, m.make(1))


def test_estimator_reaching_a_helper_module_and_a_class(device, modules, tmp_path):
    digests = []
    for body in ("return n + 1", "return n + 2"):
        helpers = modules(f'''
            def cost(n):
                {body}

            class Model:
                def cycles(self, n):
                    return cost(n)
        ''')
        user = modules(f'''
            import {helpers.__name__} as helpers

            def estimate(info, target):
                return helpers.cost(1) + helpers.Model().cycles(2)

            def recursive(n):
                return 0 if n == 0 else recursive(n - 1)
        ''')
        digests.append(estimator_digest(device, user.estimate))
        estimator_digest(device, user.recursive)  # a helper that calls itself is fine
    assert digests[0] != digests[1]


@pytest.mark.compiler
def test_cached_executable_is_not_reused_after_a_helper_changes(device, modules, tmp_path):
    class Touch(popsim.Vertex):
        x: popsim.InOut[popsim.Vector[int]]

        def compute(self):
            self.x[0] = 1
    estimates = []
    for body in ("n * 10", "n * 20"):  # the user edits the helper and runs the script again
        m = modules(ESTIMATOR.format(scale=1, body=body), "my_estimators")
        g = popsim.Graph(device)
        x = g.add_variable(INT, [4], "x")
        g.set_tile_mapping(x, 0)
        g.add_codelets(Touch)
        cs = g.add_compute_set("cs")
        v = g.add_vertex(cs, "Touch", {"x": x})
        g.set_tile_mapping(v, 0)
        g.register_perf_estimator("Touch", m.estimate)
        engine = popsim.Engine(g, Execute(cs), {"popsim.cacheDir": str(tmp_path)})
        assert not engine.executable.compilation.from_cache
        estimates.append(int(engine.executable.lowered.vertices.vertices[0, 6]))
    assert estimates == [40, 80]


class DigestA(popsim.Vertex):
    x: popsim.Input[popsim.Vector[int]]
    y: popsim.Output[int]

    def compute(self):
        return True


class DigestB(popsim.Vertex):
    x: popsim.Input[popsim.Vector[int]]
    rows: popsim.Input[popsim.VectorList[int]]
    n: int

    def compute(self):
        return True


def compute_set_digest(device, kinds=("A", "A", "B"), tiles=(0, 1, 2), estimate=None, offset=0, n=3,
                       keep_views=False, sub_edges=2):
    """Digest of one compute set of vertices A and B; every argument changes a part."""
    g = popsim.Graph(device)
    g.add_codelets([DigestA, DigestB])
    x = g.add_variable(INT, [8], "x")
    y = g.add_variable(INT, [8], "y")
    g.set_tile_mapping(x, 0)
    g.set_tile_mapping(y, 0)
    cs = g.add_compute_set("cs")
    kept = []
    for k, (kind, tile) in enumerate(zip(kinds, tiles)):
        view = x[offset + k:offset + k + 2]
        kept.append(view)
        conns = {"x": view if keep_views else x[offset + k:offset + k + 2]}
        if kind == "A":
            v = g.add_vertex(cs, "DigestA", {**conns, "y": y[k]})
        else:
            v = g.add_vertex(cs, "DigestB", conns)
            g.set_field_size(v["rows"], sub_edges)
            for i in range(sub_edges):
                g.connect(v["rows"][i], x[i:i + 1])
            g.set_initial_value(v["n"], n)
        g.set_tile_mapping(v, tile)
        if estimate is not None and k == 0:
            g.set_perf_estimate(v, estimate)
    return D.graph_digest(g._state, [Execute(cs)])


def test_every_part_of_a_compute_set_is_in_the_digest(device):
    """Vertex types and their order, tiles, estimates, connections, list fields and state
    values each change the digest; how a connection is stored (a kept view or a record)
    does not."""
    base = compute_set_digest(device)
    assert compute_set_digest(device) == base
    assert compute_set_digest(device, keep_views=True) == base
    variants = [dict(kinds=("A", "B", "A")), dict(kinds=("A", "A", "A")), dict(tiles=(0, 1, 3)), dict(estimate=5),
                dict(offset=1), dict(n=4), dict(sub_edges=1)]
    digests = [compute_set_digest(device, **v) for v in variants]
    assert base not in digests and len(set(digests)) == len(variants)
    assert compute_set_digest(device, kinds=("A", "A", "A"), keep_views=True) == digests[1]


def initial_value_digest(device, values=(1, 2, 3, 4), view=slice(0, 4), constant=(5, 6, 7), constant_shape=(3,),
                         order=("x", "y"), y_view=slice(4, 8)):
    """Digest of a graph with two set_initial_value calls and a constant; every argument
    changes a value or a part of the structure."""
    g = popsim.Graph(device)
    x = g.add_variable(INT, [8], "x")
    g.set_tile_mapping(x, 0)
    c = g.add_constant(INT, list(constant_shape), list(constant)[:int(np.prod(constant_shape))] or 0, "c")
    g.set_tile_mapping(c, 1)
    calls = {"x": (x[view], list(values)), "y": (x[y_view], [9] * len(range(8)[y_view]))}
    for name in order:
        g.set_initial_value(*calls[name])
    return D.graph_digest(g._state, [Sync()])


def test_initial_values_are_data_and_their_views_structure(device):
    """The values of set_initial_value and add_constant are not in the digest (a cache
    hit packs the graph's own: test_executable_cache.py); which views have values, in
    which order, and constants' shapes are."""
    base = initial_value_digest(device)
    assert initial_value_digest(device, values=(8, 7, 6, 5)) == base
    assert initial_value_digest(device, constant=(0, 0, 1)) == base
    variants = [dict(view=slice(1, 5)), dict(view=slice(0, 8, 2)), dict(view=slice(3, None, -1)),
                dict(order=("y", "x")), dict(order=("x",)), dict(y_view=slice(0, 4)), dict(constant_shape=(2,)),
                dict(constant_shape=(3, 1))]
    digests = [initial_value_digest(device, **v) for v in variants]
    assert base not in digests and len(set(digests)) == len(variants)


# -- content_key: connection slots read in C (native/binding/content_key.cpp) ---------------------
def test_content_key_tells_records_apart_and_ignores_object_identity():
    from popsim._core import content_key
    base = [(0, 5, (3,), (1,)), (1, 0, (), ()), (2, 7, (2, 2), (4, 1)), 9]
    assert content_key(base) == content_key([tuple(tuple(x) if isinstance(x, tuple) else x for x in r)
                                             if isinstance(r, tuple) else r for r in base])
    assert len(content_key(base)) == 16
    variants = [
        [(0, 6, (3,), (1,))] + base[1:],                  # one int
        [(0, 5, (3, 1), (1,))] + base[1:],                # a nested tuple's length
        [(0, 5, 3, (1,))] + base[1:],                      # an int where a tuple was
        [(0, 5, (3,), (1,), 0)] + base[1:],               # a record's length
        [base[1], base[0]] + base[2:],                    # order
        base[:-1], base + [(0,)], base[:-1] + [(9,)],     # items missing, added, an int vs a 1-tuple
        [(0, -5, (3,), (1,))] + base[1:], [(0, 2 ** 62, (3,), (1,))] + base[1:],
    ]
    keys = {content_key(v) for v in variants}
    assert content_key(base) not in keys and len(keys) == len(variants)
    assert content_key([]) != content_key([()]) != content_key([0])


def test_content_key_refuses_what_it_cannot_read_exactly():
    import numpy as np
    from popsim._core import content_key
    for bad in ([None], [1.0], [True], [np.int64(3)], [[1, 2]], [2 ** 63], [(1, (2, (3,)))], [(1, None)],
                [tuple(range(57))], [(0, (1.5,))]):
        assert content_key(bad) is None, bad
    with pytest.raises(TypeError):
        content_key(iter([1]))


def test_content_key_of_long_lists_read_by_two_threads():
    """Lists of 65,536 items or more are read in chunks by two threads: the key still
    depends on every item and its place, and a bad item in any chunk gives None."""
    from popsim._core import content_key
    n = 5 * 16384 + 7  # chunks 0..5; the helper thread reads the odd ones
    base = [(0, i, (3,), (1,)) for i in range(n)]
    key = content_key(base)
    assert key == content_key([(0, i, (3,), (1,)) for i in range(n)])  # other objects, same values
    changed = set()
    for where in (0, 16384 + 3, 3 * 16384, n - 1):  # even and odd chunks, first and last item
        for bad_value in ((1, where, (3,), (1,)), (0, where, (4,), (1,))):
            variant = list(base)
            variant[where] = bad_value
            changed.add(content_key(variant))
        variant = list(base)
        variant[where] = "not a record"
        assert content_key(variant) is None, where
    swapped = list(base)
    swapped[16384 - 1], swapped[16384] = swapped[16384], swapped[16384 - 1]  # across a chunk border
    changed.add(content_key(swapped))
    assert key not in changed and len(changed) == 9
    assert content_key(base[:-1]) != key and content_key(base + [0]) != key


def test_slots_that_content_key_cannot_read_are_digested_by_content(device):
    """Slot records with numpy integers (not plain ints) are read as plain ints: the
    digest depends on their values only."""
    import numpy as np

    def digest_with(offset):
        g = popsim.Graph(device)
        g.add_codelets([DigestA])
        x, y = g.add_variable(INT, [8], "x"), g.add_variable(INT, [8], "y")
        g.set_tile_mapping(x, 0)
        g.set_tile_mapping(y, 0)
        cs = g.add_compute_set("cs")
        v = g.add_vertex(cs, "DigestA", {"x": x[0:2], "y": y[0]})
        g.set_tile_mapping(v, 0)
        cs._slots[0] = (x._var.index, offset, (2,), (1,))
        return D.graph_digest(g._state, [Execute(cs)])
    assert digest_with(np.int64(3)) == digest_with(np.int64(3)) == digest_with(3)
    assert digest_with(np.int64(4)) != digest_with(np.int64(3))


def test_integers_beyond_int64_are_digested_by_value():
    assert D._key([2 ** 70, (1, 2)]) == D._key([2 ** 70, (1, 2)]) != D._key([2 ** 70 + 1, (1, 2)])


def test_bytes_key_sees_every_byte_and_the_length():
    import numpy as np
    from popsim._core import bytes_key
    base = np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8)
    key = bytes_key(memoryview(base))
    assert bytes_key(memoryview(base.copy())) == key and len(key) == 16
    seen = {key}
    for i in (0, 7, 8, 31, 32, 500, 991, 999):  # in whole 32-byte blocks and in the tail
        changed = base.copy()
        changed[i] ^= 1
        seen.add(bytes_key(memoryview(changed)))
    for n in (0, 1, 999, 992):
        seen.add(bytes_key(memoryview(base[:n].copy())))
    seen.add(bytes_key(memoryview(np.append(base, np.uint8(0)))))  # a trailing zero byte still counts
    assert len(seen) == 14
    with pytest.raises(TypeError, match="contiguous buffer of bytes"):
        bytes_key(memoryview(np.zeros(4, np.int64)))


def test_mappings_are_digested_alike_before_and_after_their_calls_are_flushed(device):
    """paint_rows reads single-interval set_tile_mapping calls where they wait, and
    after they were turned into arrays (lowering does that): the digest is the same."""
    def digest(flush, last_tile=7):
        g = popsim.Graph(device)
        x = g.add_variable(INT, [64], "x")
        for k in range(16):
            g.set_tile_mapping(x[4 * k:4 * k + 4], k % 5)
        g.set_tile_mapping(x[8:24], 9)
        if flush:
            x._var.mapping.paints()
        g.set_tile_mapping(x[0:2], last_tile)
        return D.graph_digest(g._state, [Sync()])
    assert digest(False) == digest(True) != digest(False, last_tile=6)


def test_views_differing_only_in_a_stride_of_minus_one_or_minus_two_get_different_digests(device):
    """hash(-1) == hash(-2) in Python: keys are the views' exact descriptions, so
    v[9::-1][:5] and v[9::-2][:5] are two programs."""
    def digest_of(step):
        g = popsim.Graph(device)
        v, out = g.add_variable(INT, [10], "v"), g.add_variable(INT, [5], "out")
        for t in (v, out):
            g.set_tile_mapping(t, 0)
        return D.graph_digest(g._state, [Copy(v[9::step][:5], out)])
    assert digest_of(-1) != digest_of(-2)
    assert D.tensor_key(popsim.Graph(device).add_variable(INT, [10], "v")[9::-1]) != \
        D.tensor_key(popsim.Graph(device).add_variable(INT, [10], "v")[9::-2])


def test_the_executable_cache_runs_each_of_two_views_differing_in_a_stride_of_minus_one_or_two(device, tmp_path):
    results = []
    for step in (-1, -2):
        g = popsim.Graph(device)
        v, out = g.add_variable(INT, [10], "v"), g.add_variable(INT, [5], "out")
        for t in (v, out):
            g.set_tile_mapping(t, 0)
        g.create_host_write("v", v)
        g.create_host_read("out", out)
        with popsim.Engine(g, Copy(v[9::step][:5], out), {"popsim.cacheDir": str(tmp_path)}) as e:
            e.load(device)
            e.write_tensor("v", np.arange(10, dtype=np.int32))
            e.run(0)
            results.append(e.read_tensor("out").tolist())
    assert results == [[9, 8, 7, 6, 5], [9, 7, 5, 3, 1]]


def test_vectorlist_edges_and_state_values_are_digested_exactly():
    """Sub-edges and state values are keyed by a 128-bit digest of their exact bytes,
    not by hash()."""
    assert D._digest_ints(b"\x01") != D._digest_ints(b"\x02")
    assert len(D._digest_ints(b"")) == 2
