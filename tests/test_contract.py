"""The Python <-> C++ contract (popsim/contract.py, exported from native/core/executable.hpp
and friends): the two sides must agree, and every Python user must build what the
core reads."""
import ctypes

import numpy as np
import pytest

import popsim
from popsim import _core, contract
from popsim.contract import COLUMNS, ROW_WIDTHS, FieldBase, Op, ScalarType
from popsim.lower import cost_model, lower_graph
from popsim.program import Copy, Execute, If, Repeat, Sequence, Switch
from popsim.types import ALL_TYPES


def test_every_element_type_has_the_scalar_code_of_its_numpy_layout():
    kinds = {"b": "b", "i": "i", "u": "u", "f": "f"}
    for t in ALL_TYPES:
        size, kind = contract.SCALAR_TYPE_INFO[ScalarType(t.code)]
        assert size == t.numpy.itemsize, t
        assert kind == kinds[t.numpy.kind], t
    # and every scalar code the core knows is some element type's
    assert {t.code for t in ALL_TYPES} == set(int(s) for s in ScalarType)


def test_enumerations_are_complete_and_dense():
    assert [int(op) for op in Op] == list(range(_core.NUM_OPS))
    assert [int(s) for s in ScalarType] == list(range(_core.NUM_SCALAR_TYPES))
    assert [int(s) for s in contract.Status] == list(range(len(contract.Status)))
    assert contract.Status.OK == 0 and contract.ErrorKind.OK == 0


def test_row_widths_are_the_structs_and_columns_cover_them():
    for table, width in ROW_WIDTHS.items():
        assert sorted(COLUMNS[table].values()) == list(range(width)), table


def test_vertex_state_offsets_are_aligned_as_the_core_requires():
    from popsim.lower import layout
    assert layout.ARENA_ALIGNMENT % contract.STATE_ALIGNMENT == 0  # compute_sets.py places states with it


def test_cost_categories_come_from_the_core():
    assert cost_model.CATEGORIES is contract.CATEGORIES
    assert contract.CATEGORIES[0] == "cycles" and "sync" in contract.CATEGORIES
    assert len(set(contract.CATEGORIES)) == contract.NUM_CATEGORIES


def test_exec_layout_matches_c_alignment_rules():
    """popsim_exec as the core sees it: fields in order, each at its natural alignment
    right after the previous one, no field left out (a gap would mean one is missing)."""
    end = 0
    for name, offset, size, kind in contract.EXEC_FIELDS:
        assert offset == -(-end // size) * size, f"unexpected gap before popsim_exec.{name}"
        end = offset + size
    assert -(-end // 8) * 8 == contract.EXEC_SIZE
    ctx = contract.ExecContext()
    assert ctypes.sizeof(ctx) == contract.EXEC_SIZE
    assert ctypes.sizeof(contract.Span) == contract.SPAN_SIZE == 2 * ctypes.sizeof(ctypes.c_void_p)


def test_the_abi_harness_uses_the_exported_layout():
    from popsim.codelet import abi
    assert abi.Exec is contract.ExecContext and abi.Span is contract.Span
    assert (abi.OK, abi.INDEX_ERROR, abi.EXCEPTION, abi.INTERRUPTED) == tuple(
        int(k) for k in (contract.ErrorKind.OK, contract.ErrorKind.INDEX_ERROR, contract.ErrorKind.EXCEPTION,
                         contract.ErrorKind.INTERRUPTED))


def _lowered(device):
    class Add(popsim.Vertex):
        a: popsim.Input[popsim.Vector[float]]
        out: popsim.Output[float]

        def compute(self):
            self.out = self.a[0] + self.a[1]

    class Multi(popsim.MultiVertex):
        xs: popsim.Input[popsim.VectorList[float]]
        out: popsim.Output[float]

        def compute(self, worker_id):
            if worker_id == 0:
                self.out = self.xs[0][0]

    g = popsim.Graph(device)
    g.add_codelets([Add, Multi])
    x = g.add_variable(popsim.FLOAT, [4], "x")
    y = g.add_variable(popsim.FLOAT, [3], "y")
    p = g.add_variable(popsim.INT, [], "p")
    for t, tile in ((x, 1), (y, 2), (p, 0)):
        g.set_tile_mapping(t, tile)
    cs = g.add_compute_set("cs")
    v0 = g.add_vertex(cs, Add, {"a": x[0:2], "out": y[0]})
    g.set_tile_mapping(v0, 1)
    # x[3], x[2]: not one run, so gathered into an exchange buffer (a single off-tile run
    # that nothing writes is read in place: no exchange table)
    v1 = g.add_vertex(cs, Multi, {"xs": [popsim.concat([x[3:4], x[2:3]]), x[0:1]], "out": y[1]})
    g.set_tile_mapping(v1, 3)
    progs = [Sequence(Execute(cs), Repeat(3, Copy(x[0:3], y)), If(p, Copy(y, x[1:4])),
                      Switch(p, {1: Copy(x[0:3], y)}))]
    return lower_graph(g._state, progs), (v0, v1)


@pytest.mark.compiler
def test_lowered_tables_put_each_value_in_its_named_column(device):
    lw, (v0, v1) = _lowered(device)
    v = lw.vertices
    col = COLUMNS["vertices"]
    assert v.vertices[:, col["tile"]].tolist() == [1, 3]
    assert v.vertices[:, col["num_fields"]].tolist() == [2, 2]
    assert v.vertices[:, col["flags"]].tolist() == [0, contract.VERTEX_MULTI]
    assert v.vertices[0, col["worker"]] == 0
    fields = v.fields[v.vertices[1, col["first_field"]]]
    assert fields[COLUMNS["fields"]["base"]] == FieldBase.SPANS and fields[COLUMNS["fields"]["size"]] == 2
    spans = v.spans[fields[COLUMNS["fields"]["offset"]]:][:2]
    assert spans[:, COLUMNS["spans"]["size"]].tolist() == [2, 1]
    cs = v.compute_sets[0]
    assert cs[COLUMNS["compute_sets"]["num_groups"]] == 2 and cs[COLUMNS["compute_sets"]["exchange_in"]] >= 0
    assert v.groups[:, COLUMNS["groups"]["tile"]].tolist() == [1, 3]
    ops = lw.programs.instrs[:, COLUMNS["instrs"]["op"]]
    assert {Op.EXECUTE, Op.LOOP_BEGIN, Op.LOOP_END, Op.BRANCH_IF_FALSE, Op.SWITCH, Op.HALT} <= set(ops.tolist())
    branch = lw.programs.instrs[ops == Op.BRANCH_IF_FALSE][0]
    assert branch[COLUMNS["instrs"]["c"]] == popsim.INT.code == ScalarType.I32
    runs, col = lw.copy_runs, COLUMNS["copy_runs"]
    assert (runs[:, [col["len"], col["count"], col["outer"]]] > 0).all()
    # the codelets' field layouts the core checks rows against
    assert v.codelet_fields[0] == [(FieldBase.ARENA, 4, 0), (FieldBase.ARENA, 4, 1)]  # a vector, a scalar
    assert v.codelet_fields[1] == [(FieldBase.SPANS, 4, 0), (FieldBase.ARENA, 4, 1)]
    assert v.exchange_costs.shape == (1, 2, 1, contract.NUM_CATEGORIES)  # compute sets, in/out, IPUs


@pytest.mark.compiler
def test_the_typed_hand_over_checks_each_field(device):
    from popsim.native import describe
    lw, _ = _lowered(device)
    d = describe(lw)
    with pytest.raises(TypeError, match=r"Description.instrs: expected a C-contiguous int64 array of shape "
                                        r"\(n, 6\), found float64 array of shape \(2, 6\)"):
        d.instrs = np.zeros((2, 6))
    with pytest.raises(TypeError, match=r"Description.copy_runs: expected .* \(n, 9\), found int64 array of shape "
                                        r"\(4,\)"):
        d.copy_runs = np.zeros(4, np.int64)
    with pytest.raises(TypeError, match="Description.arena_bytes: expected an integer, found float"):
        d.arena_bytes = 2.5
    with pytest.raises(TypeError, match="Description.num_tiles: expected an integer, found bool"):
        d.num_tiles = True
    with pytest.raises(ValueError, match="does not fit a signed 64-bit integer"):
        d.state_bytes = 2 ** 70
    with pytest.raises(TypeError, match=r"Description.codelets: expected \(path: str"):
        d.codelets = [("lib.so", 3, [])]
    np.testing.assert_array_equal(d.instrs, lw.programs.instrs)  # what was set reads back
    empty = _core.Description()
    empty.arena_bytes = 16
    with pytest.raises(ValueError, match="Description.instrs was never set"):
        _core.Machine(empty, 1, 0)
    machine = _core.Machine(d, 1, 0)
    assert machine.arena_bytes == lw.layout.arena_bytes
    with pytest.raises(ValueError, match="already used"):
        _core.Machine(d, 1, 0)
