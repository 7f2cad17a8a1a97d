"""Copy tables in the native core (native/core/copy_tables.cpp): big tables run in
parallel pieces and with non-temporal stores, from the strided runs the lowering makes
(src/popsim/lower/copy_runs.py), and still give exactly what running their segments one
after another gives (or, for a table whose source and destination overlap, reading every
segment before writing any), for any thread count.

The machines here are built directly from compiled executables so that a test can pick
the thread count and the size from which a table uses non-temporal stores
(``streaming_bytes``), and look at how each table runs (``copy_plan``)."""
import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copy_run_helpers import expand

import popsim
from popsim import FLOAT, UNSIGNED_CHAR, _core
from popsim.contract import COLUMNS, Op, Status
from popsim.lower.copy_runs import segments_to_runs
from popsim.native import describe
from popsim.program import Copy

LINEAR = popsim.VariableMappingMethod.LINEAR
NEVER = 1 << 62  # streaming_bytes: no table uses non-temporal stores


def no_callback(*args):
    raise AssertionError("this program makes no host calls")


def build(lowered, threads, streaming_bytes):
    m = _core.Machine(describe(lowered), threads, 0, streaming_bytes)
    m.load(lowered.init_table, lowered.init_image)
    return m


def run(m, program=0):
    assert m.run(program, no_callback, no_callback, no_callback) == Status.OK


def copy_table(lowered, program=0):
    """The copy table of the one Copy instruction of ``program``."""
    p, col = lowered.programs, COLUMNS["instrs"]
    instrs = p.instrs[p.entries[program]:]
    copies = instrs[instrs[:, col["op"]] == Op.COPY]
    return int(copies[0, col["a"]])


def segments(lowered, table):
    begin, end = lowered.table_begin[table], lowered.table_begin[table + 1]
    return expand(lowered.copy_runs[begin:end])


def run_in_order(arena, segs, overlaps):
    """The meaning of a copy table within tile memory, one segment at a time."""
    out = arena.copy()
    if overlaps:  # everything is read before anything is written
        data = [arena[s:s + n].copy() for s, _, n in segs]
        for (_, d, n), chunk in zip(segs, data):
            out[d:d + n] = chunk
    else:
        for s, d, n in segs:
            out[d:d + n] = out[s:s + n]
    return out


def run_table_and_compare(lowered, table, threads, streaming_bytes):
    """Runs program 0 on a machine and checks the whole tile memory against
    run_in_order; returns the machine's copy plan of ``table``."""
    m = build(lowered, threads, streaming_bytes)
    before = m.arena()[0].copy()
    run(m)
    expected = run_in_order(before, segments(lowered, table), bool(lowered.table_overlaps[table]))
    np.testing.assert_array_equal(m.arena()[0], expected)
    return m.copy_plan(table)


def spread_copy(device, n):
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [n], "a", mapping=LINEAR)
    b = g.add_variable(FLOAT, [n], "b", mapping=LINEAR)
    g.set_initial_value(a, np.random.default_rng(1).random(n, dtype=np.float32))
    return popsim.compile_graph(g, Copy(a, b)).lowered


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("streaming_bytes", [1, NEVER])
def test_a_big_tile_spread_copy_is_exact_for_any_thread_count(device, threads, streaming_bytes):
    lw = spread_copy(device, 1 << 20)  # 4 MiB over 1472 tiles
    table = copy_table(lw)
    plan = run_table_and_compare(lw, table, threads, streaming_bytes)
    assert plan["streams"] == (streaming_bytes == 1)
    assert (plan["pieces_in_arena"] > 1) == (threads > 1)


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("streaming_bytes", [1, NEVER])
def test_an_overlapping_copy_reads_everything_before_writing(device, threads, streaming_bytes):
    """Copy(a[:-1], a[1:]) shifts a by one element: every segment's destination is
    another segment's source."""
    n = 1 << 20
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [n], "a", mapping=LINEAR)
    values = np.random.default_rng(2).random(n, dtype=np.float32)
    g.set_initial_value(a, values)
    g.create_host_read("a", a)
    lw = popsim.compile_graph(g, Copy(a[0:n - 1], a[1:n])).lowered
    table = copy_table(lw)
    assert lw.table_overlaps[table] == 1
    plan = run_table_and_compare(lw, table, threads, streaming_bytes)
    assert (plan["pieces_in_arena"] > 1) == (threads > 1)
    m = build(lw, threads, streaming_bytes)
    run(m)
    out = np.empty(n, np.float32)
    m.read(lw.host_reads["a"].table, out)
    np.testing.assert_array_equal(out, np.concatenate([values[:1], values[:-1]]))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_table_of_many_tiny_segments(device, threads):
    """A transpose moves one 4-byte element per segment (262,144 segments)."""
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [512, 512], "a", mapping=LINEAR)
    b = g.add_variable(FLOAT, [512, 512], "b", mapping=LINEAR)
    values = np.random.default_rng(3).random((512, 512), dtype=np.float32)
    g.set_initial_value(a, values)
    g.create_host_read("b", b)
    lw = popsim.compile_graph(g, Copy(a.transpose(), b)).lowered
    table = copy_table(lw)
    assert len(segments(lw, table)) > 100_000
    plan = run_table_and_compare(lw, table, threads, NEVER)
    assert (plan["pieces_in_arena"] > 1) == (threads > 1)
    assert plan["runs"] == 1  # a column of a, 512 elements a row apart, is one strided run; all 512 of them, one
    m = build(lw, threads, NEVER)
    run(m)
    out = np.empty((512, 512), np.float32)
    m.read(lw.host_reads["b"].table, out)
    np.testing.assert_array_equal(out, values.T)


@pytest.mark.parametrize("dtype", [popsim.UNSIGNED_CHAR, popsim.HALF, FLOAT, popsim.LONGLONG])
@pytest.mark.parametrize("columns", [slice(None), slice(1, 4), slice(0, 40, 3)])
@pytest.mark.parametrize("transpose", [True, False])
def test_strided_runs_of_any_element_size_copy_exactly(device, dtype, columns, transpose):
    """Transposed views move one element per segment (strided runs of 1, 2, 4 and 8-byte
    elements); a few columns of each row are a segment of 3 to 24 bytes a row apart."""
    g = popsim.Graph(device)
    a = g.add_variable(dtype, [64, 48], "a", mapping=LINEAR)
    values = np.random.default_rng(9).integers(0, 120, (64, 48)).astype(dtype.numpy)
    g.set_initial_value(a, values)
    view = a[:, columns].transpose() if transpose else a[:, columns]
    want = values[:, columns].T if transpose else values[:, columns]
    b = g.add_variable(dtype, list(want.shape), "b", mapping=LINEAR)
    g.create_host_read("b", b)
    lw = popsim.compile_graph(g, Copy(view, b)).lowered
    table = copy_table(lw)
    for threads in (1, 2):
        plan = run_table_and_compare(lw, table, threads, NEVER)
        assert plan["runs"] < len(segments(lw, table)) or len(segments(lw, table)) == 1
        m = build(lw, threads, NEVER)
        run(m)
        out = np.empty(want.shape, dtype.numpy)
        m.read(lw.host_reads["b"].table, out)
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shift", [(0, 0), (3, 1), (1, 6), (7, 7)])
def test_byte_segments_at_any_alignment_with_non_temporal_stores(device, threads, shift):
    """Non-temporal stores write whole aligned lines: segments starting and ending at any
    byte still copy exactly, nothing around them changes."""
    n = 3_000_017
    src_off, dst_off = shift
    g = popsim.Graph(device)
    a = g.add_variable(UNSIGNED_CHAR, [n], "a", mapping=LINEAR)
    b = g.add_variable(UNSIGNED_CHAR, [n], "b", mapping=LINEAR)
    g.set_initial_value(a, np.random.default_rng(4).integers(0, 256, n, dtype=np.uint8))
    g.set_initial_value(b, np.random.default_rng(5).integers(0, 256, n, dtype=np.uint8))
    length = n - 11
    lw = popsim.compile_graph(g, Copy(a[src_off:src_off + length], b[dst_off:dst_off + length])).lowered
    plan = run_table_and_compare(lw, copy_table(lw), threads, 1)
    assert plan["streams"]


def test_a_stream_transfer_runs_in_pieces_between_host_and_tile_memory(device):
    n = 1 << 20
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [n], "a", mapping=LINEAR)
    s = g.add_host_to_device_fifo("in", FLOAT, n)
    g.create_host_read("a", a)
    lw = popsim.compile_graph(g, Copy(s, a)).lowered
    col = COLUMNS["instrs"]
    (row,) = lw.programs.instrs[lw.programs.instrs[:, col["op"]] == Op.STREAM_TO_DEVICE]
    table = int(row[col["b"]])
    host = np.random.default_rng(6).random(n, dtype=np.float32)
    for streaming_bytes in (1, NEVER):
        m = build(lw, 2, streaming_bytes)
        assert m.copy_plan(table)["pieces"] > 1
        m.connect_buffer(0, 0, host.view(np.uint8))  # stream 0, replica 0
        run(m)
        out = np.empty(n, np.float32)
        m.read(lw.host_reads["a"].table, out)
        np.testing.assert_array_equal(out, host)


def tampered(lw, table, change):
    lw = copy.deepcopy(lw)
    begin, end = lw.table_begin[table], lw.table_begin[table + 1]
    change(lw, lw.copy_runs[begin:end])
    return lw


def test_a_table_writing_a_byte_twice_runs_in_order(device):
    """Hand-made: every segment writes where the first one does. Pieces in parallel
    could let any of them win; run in order, the last one does."""
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [1024, 1024], "a", mapping=LINEAR)
    b = g.add_variable(FLOAT, [1024, 512], "b", mapping=LINEAR)
    g.set_initial_value(a, np.random.default_rng(8).random((1024, 1024), dtype=np.float32))
    lw = popsim.compile_graph(g, Copy(a[:, 0:512], b)).lowered
    table = copy_table(lw)
    assert len(segments(lw, table)) >= 1024
    col = COLUMNS["copy_runs"]

    def same_destination(lw, runs):
        runs[:, col["len"]] = runs[:, col["len"]].min()
        runs[:, col["dst"]] = runs[0, col["dst"]]
        runs[:, [col["dst_stride"], col["outer_dst"]]] = 0
    bad = tampered(lw, table, same_destination)
    for threads in (1, 2):
        assert (run_table_and_compare(lw, table, threads, NEVER)["pieces_in_arena"] > 1) == (threads > 1)
        plan = run_table_and_compare(bad, table, threads, NEVER)
        assert plan["pieces_in_arena"] == 1 and plan["pieces"] == 1


def test_a_table_not_marked_overlapping_whose_source_meets_its_destination_runs_in_order(device):
    """Hand-made: a shifting copy whose overlap flag was cleared. The core cannot give
    the read-then-write meaning it was not asked for, but it gives the one-by-one
    meaning, whatever the thread count."""
    n = 1 << 20
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [n], "a", mapping=LINEAR)
    g.set_initial_value(a, np.random.default_rng(7).random(n, dtype=np.float32))
    lw = copy.deepcopy(popsim.compile_graph(g, Copy(a[0:n - 1], a[1:n])).lowered)
    table = copy_table(lw)
    lw.table_overlaps[table] = 0
    for threads in (1, 2):
        plan = run_table_and_compare(lw, table, threads, NEVER)
        assert plan["pieces_in_arena"] == 1 and (plan["pieces"] > 1) == (threads > 1)


def test_a_copy_plan_of_a_table_that_does_not_exist_is_an_index_error(device):
    lw = spread_copy(device, 16)
    m = build(lw, 2, 0)
    with pytest.raises(IndexError, match="copy table index out of range"):
        m.copy_plan(len(lw.table_begin) - 1)


@pytest.mark.parametrize("shape", [(13, 37), (64, 56), (4, 4), (5, 3), (8, 9)])
@pytest.mark.parametrize("into", ["channels_last", "channels_first"])
@pytest.mark.parametrize("streaming_bytes", [1, NEVER])
def test_a_transpose_is_one_two_dimensional_run_moved_in_blocks(device, shape, into, streaming_bytes):
    """[C, P] on one tile to [P, C] on another, or back (NCHW to NHWC and the reverse):
    its segments, one 4-byte element each, are one run of P rows of C elements (or the
    mirror image), which moves 4 x 4 blocks through registers and then the edges; any
    shape, aligned for non-temporal stores or not (a destination one element in)."""
    c, p = shape
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [c, p], "a")
    b = g.add_variable(FLOAT, [p * c + 1], "b")
    g.set_tile_mapping(a, 0)
    g.set_tile_mapping(b, 1)
    values = np.random.default_rng(10).standard_normal((c, p)).astype(np.float32)
    values.flat[::7] = np.float32("nan")   # NaN bits move unchanged, as every other value's
    g.set_initial_value(a, values)
    g.create_host_read("b", b)
    for start in (0, 1):
        dst = b[start:start + p * c]
        if into == "channels_last":   # b[p, c] = a[c, p]: each row of a element-wise into a column of b
            lw = popsim.compile_graph(g, Copy(a.transpose(), dst.reshape([p, c]))).lowered
        else:                         # b as [p, c] read in [c, p] order: rows of a into columns of b
            lw = popsim.compile_graph(g, Copy(a, dst.reshape([p, c]).transpose())).lowered
        table = copy_table(lw)
        for threads in (1, 2):
            plan = run_table_and_compare(lw, table, threads, streaming_bytes)
            assert plan["runs"] == 1
            m = build(lw, threads, streaming_bytes)
            run(m)
            out = np.empty(p * c + 1, np.float32)
            m.read(lw.host_reads["b"].table, out)
            np.testing.assert_array_equal(out[start:start + p * c].view(np.uint32),
                                          values.T.reshape(-1).view(np.uint32))


# -- any table of runs: the core against segment-by-segment copying -----------------------------
MIB = 1 << 20


@pytest.fixture(scope="module")
def two_mib():
    """A compiled Copy between two 1 MiB variables (random bytes), whose copy table the
    tests below replace by tables of their own; the arena's first 2 MiB hold a and b."""
    g = popsim.Graph(popsim.IPUModel("ipu2").create_device())
    a = g.add_variable(UNSIGNED_CHAR, [MIB], "a", mapping=LINEAR)
    b = g.add_variable(UNSIGNED_CHAR, [MIB], "b", mapping=LINEAR)
    rng = np.random.default_rng(11)
    g.set_initial_value(a, rng.integers(0, 256, MIB, dtype=np.uint8))
    g.set_initial_value(b, rng.integers(0, 256, MIB, dtype=np.uint8))
    lw = popsim.compile_graph(g, Copy(a, b)).lowered
    assert lw.layout.arena_bytes >= 2 * MIB
    return lw, copy_table(lw)


def with_table(lw, table, runs, overlaps):
    """``lw`` with copy table ``table`` replaced by ``runs``."""
    lw = copy.deepcopy(lw)
    b, e = lw.table_begin[table], lw.table_begin[table + 1]
    lw.copy_runs = np.concatenate([lw.copy_runs[:b], runs, lw.copy_runs[e:]])
    lw.table_begin = lw.table_begin.copy()
    lw.table_begin[table + 1:] += runs.shape[0] - (e - b)
    lw.table_overlaps = lw.table_overlaps.copy()
    lw.table_overlaps[table] = overlaps
    return lw


SEGMENT = st.tuples(st.integers(0, 4096), st.integers(0, 4096), st.integers(0, 24))


@settings(max_examples=60, deadline=None)
@given(segs=st.lists(SEGMENT, min_size=1, max_size=60), strided=st.tuples(st.integers(1, 40), st.integers(-8, 8)))
def test_the_core_copies_the_bytes_of_the_segments_one_by_one(two_mib, segs, strided):
    """Random segments (in an overlapping table: any bytes, read before any is written),
    plus a strided stretch so that rows of many elements occur, made into runs by the
    lowering's copy_runs: the core's copy is the segments' memcpy, one after another."""
    lw, table = two_mib
    n, step = strided
    segs = np.array(segs + [(5000 + i * step * 4, 9000 + i * 4, 4) for i in range(n)], np.int64)
    runs = segments_to_runs(segs)
    assert expand(runs) == [tuple(s) for s in segs.tolist() if s[2] > 0]
    for overlaps in (1, 0):
        if not overlaps:  # sources and destinations apart: in order is well defined for memcpy
            segs[:, 1] += MIB
            runs = segments_to_runs(segs)
        for threads, streaming in ((1, NEVER), (2, 1)):
            run_table_and_compare(with_table(lw, table, runs, overlaps), table, threads, streaming)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("itemsize", [1, 4, 12])
def test_big_tables_of_permuted_elements_run_in_pieces_cut_inside_runs(two_mib, seed, itemsize):
    """Elements of a random 3-D shape read and written in two random axis orders: runs of
    one and two dimensions with odd counts, big enough to run in parallel pieces, whose
    cuts fall inside rows and elements; overlapping or not, any thread count."""
    lw, table = two_mib
    rng = np.random.default_rng(seed)
    shape = tuple(int(x) for x in rng.integers(8, 48, 3))
    index = np.arange(np.prod(shape)).reshape(shape)
    src = np.transpose(index, rng.permutation(3)).reshape(-1) * itemsize
    dst = np.transpose(index, rng.permutation(3)).reshape(-1) * itemsize
    segs = np.stack([src, dst + MIB, np.full(src.size, itemsize)], axis=1)
    runs = segments_to_runs(segs)
    assert runs.shape[0] < src.size // 4
    for overlaps in (0, 1):
        big = with_table(lw, table, runs, overlaps)
        for threads in (1, 2, 3):
            plan = run_table_and_compare(big, table, threads, 1 if seed % 2 else NEVER)
            assert (plan["pieces_in_arena"] > 1) == (threads > 1 and src.size * (itemsize + 32) >= 1 << 20)


def test_crafted_runs_are_refused_before_anything_runs(two_mib):
    lw, table = two_mib
    c = COLUMNS["copy_runs"]
    base = segments_to_runs(np.array([[0, MIB, 4]]))
    cases = [
        ("count", 0, "len, count and outer must be 1 to 2147483647, found 4, 0, 1"),
        ("outer", 1 << 31, "len, count and outer must be 1 to"),
        ("src_stride", 1 << 31, "a stride past 2147483647 bytes"),
        ("dst_stride", -8, "negative or overflowing offset"),         # with count 2: below offset 0 on one side
        ("src", (1 << 63) - 2, "negative or overflowing offset"),
    ]
    for column, value, message in cases:
        runs = base.copy()
        runs[0, c["count"]] = 2
        runs[0, c["dst"]] = 0
        runs[0, c[column]] = value
        with pytest.raises(ValueError, match=message):
            _core.Machine(describe(with_table(lw, table, runs, 0)), 1, 0, NEVER)
    # Within every bound, but 2**62 elements (one byte copied over and over): refused, not run.
    runs = base.copy()
    runs[0, [c["count"], c["outer"], c["len"]]] = (1 << 31) - 1, (1 << 31) - 1, 1
    runs[0, [c["src_stride"], c["dst_stride"], c["outer_src"], c["outer_dst"]]] = 0
    with pytest.raises(ValueError, match=r"copy table \d+: its runs move more than 17179869184 elements"):
        _core.Machine(describe(with_table(lw, table, runs, 0)), 2, 0, NEVER)
    # Just within the bound: the core plans it from its rows, without looking at 2**34 elements.
    runs[0, c["outer"]] = 8
    _core.Machine(describe(with_table(lw, table, runs, 0)), 2, 0, NEVER)


@pytest.mark.parametrize("streaming_bytes", [1, NEVER])
def test_a_transpose_reading_a_sliding_window_moves_in_the_direction_its_rows_say(two_mib, streaming_bytes):
    """Rows out (4-byte sources contiguous along a row, destinations a column apart) whose
    rows also start 4 bytes apart on the source side, so each element is read by several:
    the 4 x 4 blocks must be moved as rows out, though outer_src is 4 as in a rows-in run."""
    lw, table = two_mib
    o, i = np.divmod(np.arange(64), 8)
    segs = np.stack([4 * o + 4 * i, MIB + 4 * o + 32 * i, np.full(64, 4)], axis=1)
    runs = segments_to_runs(segs)
    c = COLUMNS["copy_runs"]
    assert runs.shape[0] == 1 and runs[0, c["outer_src"]] == 4 and runs[0, c["src_stride"]] == 4
    for threads in (1, 2):
        run_table_and_compare(with_table(lw, table, runs, 0), table, threads, streaming_bytes)
