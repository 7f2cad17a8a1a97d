"""program_tree: the one description of each program kind (PARTS), walked by lowering,
the digest and the reference executor, and the graph-membership check built on it."""
import numpy as np
import pytest

import popsim
from popsim import INT
from popsim import program as P
from popsim.errors import ControlProgramError, GraphConnectionError
from popsim.lower.programs import ProgramLowerer
from popsim.program import (Abort, AbortOnCondition, Call, Copy, CrossReplicaCopy, Execute, If, PartKind, PrintTensor,
                            Program, Repeat, RepeatWhileFalse, RepeatWhileTrue, Sequence, Switch, Sync, WriteUndef)
from popsim.program_tree import children, drive, iter_programs, operands, parts_of, reachable
from popsim.reference.executor import ReferenceExecutor


def program_kinds():
    """Every Program subclass popsim defines that a user can build."""
    found, todo = [], [Program]
    while todo:
        kind = todo.pop()
        subclasses = kind.__subclasses__()
        todo.extend(subclasses)
        if kind is not Program and not kind.__name__.startswith("_") and kind.__module__ == P.__name__:
            found.append(kind)
    return found


def all_slots(kind):
    return {name for klass in kind.__mro__ for name in getattr(klass, "__slots__", ())}


def test_every_program_kind_describes_every_attribute():
    kinds = program_kinds()
    assert len(kinds) >= 14
    for kind in kinds:
        names = [part.name for part in parts_of(kind)]
        assert len(names) == len(set(names)), kind
        assert set(names) == all_slots(kind), f"{kind.__name__}: PARTS must list exactly its attributes"


def test_every_program_kind_is_lowered_and_has_reference_semantics():
    for kind in program_kinds():
        assert hasattr(ProgramLowerer, "_lower_" + kind.__name__), f"lower/programs.py cannot lower {kind.__name__}"
        assert hasattr(ReferenceExecutor, "_run_" + kind.__name__), f"the reference executor cannot run {kind.__name__}"


@pytest.fixture
def world(device):
    g = popsim.Graph(device)
    x = g.add_variable(INT, [4], "x")
    y = g.add_variable(INT, [4], "y")
    flag = g.add_variable(INT, [], "flag")
    for t in (x, y, flag):
        g.set_tile_mapping(t, 0)
    cs = g.add_compute_set("cs")
    f = g.add_function(Copy(x, y), "f")
    h2d = g.add_host_to_device_fifo("in", INT, 4)
    d2h = g.add_device_to_host_fifo("out", INT, 4)
    return dict(graph=g, x=x, y=y, flag=flag, cs=cs, f=f, h2d=h2d, d2h=d2h)


def examples(w):
    """One program of every kind, each with distinguishable children and operands."""
    a, b = Copy(w["x"], w["y"]), Copy(w["y"], w["x"])
    return [
        Sequence(a, b, debug_name="seq"), Execute(w["cs"]), Copy(w["x"], w["y"]), Copy(w["h2d"], w["x"]),
        Copy(w["x"], w["d2h"]), Repeat(3, a), RepeatWhileTrue(a, w["flag"], b), RepeatWhileFalse(a, w["flag"], b),
        If(w["flag"], a, b), Switch(w["flag"], {1: a, 2: b}, Sequence()), Call(w["f"]), PrintTensor("t", w["x"]),
        WriteUndef(w["x"]), Sync(), Abort("stop"), AbortOnCondition(w["flag"], "why"),
        CrossReplicaCopy(w["x"], w["y"], {}),
    ]


def test_children_and_operands_follow_the_parts(world):
    progs = examples(world)
    assert {type(p) for p in progs} == set(program_kinds())
    seq, switch, ifp, rwt = progs[0], progs[9], progs[8], progs[6]
    assert children(seq) == seq.programs
    assert children(switch) == [switch.cases[1], switch.cases[2], switch.default]
    assert children(ifp) == [ifp.then_body, ifp.else_body]
    assert children(rwt) == [rwt.condition, rwt.body]
    assert [(part.name, obj) for part, obj in operands(ifp)] == [("predicate", world["flag"])]
    assert [(part.kind, obj) for part, obj in operands(progs[3])] == [(PartKind.ENDPOINT, world["h2d"]),
                                                                      (PartKind.ENDPOINT, world["x"])]
    assert [obj for _, obj in operands(progs[10])] == [world["f"]]
    assert [obj for _, obj in operands(progs[1])] == [world["cs"]]


def test_iter_programs_and_reachable_visit_in_preorder(world):
    a, b, c = Copy(world["x"], world["y"]), Sync(), Abort()
    inner = Sequence(b)
    world["f"].program = Sequence(c)
    tree = Sequence(a, If(world["flag"], inner), Call(world["f"]), Call(world["f"]))
    order = list(iter_programs([tree]))
    assert order[:5] == [tree, a, order[2], inner, b]
    found = list(reachable([tree]))
    assert [p for p, _ in found][-2:] == [world["f"].program, c]  # the function's body once, after the tree
    assert found[-1][1] is world["f"]


def test_drive_handles_each_yielded_child_completely_in_order(world):
    seen = []
    leaves = [Sync(debug_name=str(i)) for i in range(3)]
    tree = Sequence(leaves[0], Repeat(2, leaves[1]), leaves[2])

    def handle(p):
        seen.append(p.debug_name or type(p).__name__)
        if isinstance(p, Repeat):
            return iter([p.body] * p.count)
        return iter(children(p)) if children(p) else None
    drive(tree, handle)
    assert seen == ["Sequence", "0", "Repeat", "1", "1", "2"]


def test_programs_nested_in_themselves_are_refused(device, world):
    seq = Sequence(Sync())
    seq.add(Repeat(2, seq))
    with pytest.raises(ControlProgramError, match="contains itself"):
        list(iter_programs([seq]))
    with pytest.raises(ControlProgramError, match="contains itself"):
        drive(seq, lambda p: iter(children(p)))
    with pytest.raises(ControlProgramError, match="contains itself"):
        popsim.Engine(world["graph"], seq)


# -- every operand must belong to the Engine's graph ------------------------------------------------
def other_world(device):
    g = popsim.Graph(device)
    a = g.add_variable(INT, [4], "alien")
    s = g.add_variable(INT, [], "alien_flag")
    for t in (a, s):
        g.set_tile_mapping(t, 0)
    return dict(graph=g, x=a, flag=s, cs=g.add_compute_set("alien_cs"), f=g.add_function(Sync(), "alien_f"),
                h2d=g.add_host_to_device_fifo("alien_in", INT, 4), d2h=g.add_device_to_host_fifo("alien_out", INT, 4))


FOREIGN = {
    "tensor copy": (lambda w, o: Copy(o["x"], o["x"]), "tensor 'alien'"),
    "stream in": (lambda w, o: Copy(o["h2d"], o["x"]), "stream 'alien_in'"),
    "stream out": (lambda w, o: Copy(o["x"], o["d2h"]), "tensor 'alien'"),
    "execute": (lambda w, o: Execute(o["cs"]), "compute set 'alien_cs'"),
    "call": (lambda w, o: Call(o["f"]), "function 'alien_f'"),
    "if": (lambda w, o: If(o["flag"], Sync()), "tensor 'alien_flag'"),
    "switch": (lambda w, o: Switch(o["flag"], {0: Sync()}), "tensor 'alien_flag'"),
    "while": (lambda w, o: RepeatWhileTrue(Sync(), o["flag"], Sync()), "tensor 'alien_flag'"),
    "abort": (lambda w, o: AbortOnCondition(o["flag"]), "tensor 'alien_flag'"),
    "print": (lambda w, o: PrintTensor(o["x"]), "tensor 'alien'"),
    "write undef": (lambda w, o: WriteUndef(o["x"]), "tensor 'alien'"),
}


@pytest.mark.parametrize("case", sorted(FOREIGN))
@pytest.mark.parametrize("cache", [False, True])
def test_programs_using_another_graphs_objects_are_refused(device, world, tmp_path, case, cache):
    make, named = FOREIGN[case]
    alien = make(world, other_world(device))
    options = {"popsim.cacheDir": str(tmp_path)} if cache else None  # the digest checks before the cache
    with pytest.raises(ControlProgramError) as info:
        popsim.Engine(world["graph"], Sequence(Copy(world["x"], world["y"]), Repeat(2, alien)), options)
    msg = str(info.value)
    assert named in msg and "belongs to another graph" in msg and "program 0" in msg
    assert "the Engine's graph" in msg and "the graph that created it" in msg
    with pytest.raises(ControlProgramError, match="belongs to another graph"):
        ReferenceExecutor(world["graph"], alien)


def test_functions_using_another_graphs_tensors_are_refused(device, world):
    alien = other_world(device)
    f = world["graph"].add_function(Sequence(PrintTensor(alien["x"])), "leaky")
    with pytest.raises(ControlProgramError, match="in function 'leaky' uses tensor 'alien'"):
        popsim.Engine(world["graph"], Call(f))


def test_virtual_graphs_share_their_parents_objects(device, world):
    g = world["graph"]
    sub = g.create_virtual_graph(0, 2)
    z = sub.add_variable(INT, [4], "z")
    sub.set_tile_mapping(z, 1)
    g.create_host_read("z", z)
    engine = popsim.Engine(g, Sequence(Copy(world["x"], z), Copy(world["x"], world["y"])))
    engine.load(device)
    engine.run()
    np.testing.assert_array_equal(engine.read_tensor("z"), [0, 0, 0, 0])


@pytest.mark.compiler
def test_set_tile_mapping_of_another_graphs_vertex_is_refused(device, world):
    alien = other_world(device)
    alien["graph"].add_codelets(Inc)
    v = alien["graph"].add_vertex(alien["cs"], "Inc", {"x": alien["x"]})
    for graph in (world["graph"], world["graph"].create_virtual_graph(0, 2)):
        with pytest.raises(GraphConnectionError, match="the vertex belongs to another graph"):
            graph.set_tile_mapping(v, 1)
    assert v.tile is None
    alien["graph"].set_tile_mapping(v, 1)
    assert v.tile == 1


class Inc(popsim.Vertex):
    x: popsim.InOut[popsim.Vector[int]]

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] += 1


def test_empty_programs_nested_deeply_are_empty():
    p = Sequence()
    for _ in range(20000):
        p = Sequence(p)
    assert p.is_empty()
    assert not Sequence(Sequence(), Sync()).is_empty()
    assert len(p.children()) == 1
