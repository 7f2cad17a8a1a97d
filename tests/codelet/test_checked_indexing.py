"""Checked indexing in Python vertices: an index out of range is a popsim.IndexError
naming vertex type, field, index, size and line, in both modes, with nothing stored;
indices a loop proves in range skip the check."""
import numpy as np
import pytest

import popsim
from popsim.codelet.abi import run_compiled
from popsim.codelet.interpret import run_interpreted
from popsim.codelet.python_compile import translation_of

import sample_vertices
from sample_vertices import Dot, OutOfRange, RowSums
from vertex_harness import F32, I32, arr, load_vertex, vt


def oob_values(mode, idx):
    return [arr([1, 2, 3]), arr(idx, I32), np.zeros(2, F32), [arr([7]), arr([8, 9])], arr([mode], I32)]


@pytest.mark.compiler
@pytest.mark.parametrize("mode, idx, field, index, size", [
    (0, [3, 0], "in", 3, 3), (0, [-1, 0], "in", -1, 3), (1, [2, 0], "out", 2, 2), (2, [5, 0], "rows", 5, 2),
    (3, [9, 8], "in", 9, 3), (3, [0, 8], "in", 8, 3), (3, [1, 2], "rows", 2, 2), (4, [1, 0], "rows", 1, 1),
    (5, [-3, 0], "out", -3, 2), (6, [1, 0], "rows", 1, 1), (7, [0, 4], "in", 4, 3), (7, [4, 4], "in", 4, 3),
])
def test_index_errors_in_both_modes(mode, idx, field, index, size):
    t = vt(OutOfRange)
    cv, iv = oob_values(mode, idx), oob_values(mode, idx)
    before = iv[2].copy()
    ret, ctx = run_compiled(t, cv)
    assert ret == -1 and ctx.error == 1
    assert (t.fields[ctx.error_field].name, ctx.error_index, ctx.error_size) == (field, index, size)
    with pytest.raises(popsim.IndexError) as e:
        run_interpreted(t, iv)
    line = ctx.error_line
    assert isinstance(e.value, IndexError)
    msg = str(e.value)
    assert f"vertex type 'OutOfRange': index {index} is out of range for field '{field}' of size {size}" in msg
    assert f"at line {line} of {sample_vertices.__file__}" in msg
    assert line > OutOfRange.compute.__code__.co_firstlineno
    if mode == 7:     # the value is evaluated first: nothing is stored when it fails
        assert cv[2].tolist() == [5, 0] == iv[2].tolist()
    else:
        assert cv[2].tolist() == before.tolist() == iv[2].tolist()
    if index < 0:
        assert "negative indices do not wrap" in msg


@pytest.mark.compiler
def test_loop_indices_proven_in_range_skip_checks_but_others_keep_them():
    code = translation_of(Dot).c_code
    assert "popsim_py_uld_f32(s0" in code            # a[i] for i in range(len(self.a)): no check
    assert "popsim_py_ld_f32(s1" in code             # b[i]: b may be shorter
    code = translation_of(RowSums).c_code
    assert "popsim_py_uld_f32(v_row" in code         # row[j] for j in range(len(row))
    t = vt(Dot)
    ret, ctx = run_compiled(t, [arr([1, 2, 3]), arr([1]), arr([0])])
    assert ret == -1 and (t.fields[ctx.error_field].name, ctx.error_index, ctx.error_size) == ("b", 1, 1)
    with pytest.raises(popsim.IndexError, match="index 1 is out of range for field 'b' of size 1"):
        run_interpreted(t, [arr([1, 2, 3]), arr([1]), arr([0])])


def test_modified_loop_variables_stay_checked(tmp_path):
    cls, _ = load_vertex(tmp_path, """
        for i in range(len(self.in_)):
            self.out[0] = self.in_[i]
        for i in range(len(self.in_)):
            i += 1
            self.out[0] = self.in_[i]
        """)
    fn = translation_of(cls).function
    assert [s.line for s in fn.sites] == [12, 15, 15]     # out[0] twice, and the modified in_[i]
