"""Variable liveness (src/popsim/lower/liveness.py): variables that are not always live
share tile memory where their live ranges do not overlap; always-live ones keep their
own; results never change (the engine stores every variable at its own host offset)."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.program import Copy, If, Repeat, Sequence, WriteUndef

from graph_helpers import mapped, small_device

N = 16          # floats per variable: 64 bytes, a multiple of the 8-byte region padding
B = N * 4
OFF = {"debug.variableLiveness": "false"}


def _graph(names, tiles=1):
    g = popsim.Graph(small_device(tiles))
    ts = {n: mapped(g, FLOAT, [N], n) for n in names}
    g.create_host_write("x", ts["x"])
    g.create_host_read("y", ts["y"])
    return g, ts


def _memory(g, prog, options=None):
    engine = popsim.Engine(g, [prog], options)
    return engine.get_report().memory


def _variables(g, prog, options=None) -> int:
    return _memory(g, prog, options).by_category["variables"][0]


def test_two_sequential_temporaries_share_memory():
    g, t = _graph("x y a b".split())
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"]), Copy(t["x"], t["b"]), Copy(t["b"], t["y"])])
    mem = _memory(g, prog)
    assert mem.by_category["variables"][0] == 3 * B  # x, y and one of a, b
    assert mem.not_always_live == B
    assert _variables(g, prog, OFF) == 4 * B
    # x and y (host handles) are always live; a then b each live for two steps
    assert [live - mem.always_live for live in mem.liveness] == [B, B, B, B]


def test_overlapping_temporaries_do_not_share():
    g, t = _graph("x y a b".split())
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["x"], t["b"]), Copy(t["a"], t["y"]), Copy(t["b"], t["y"])])
    mem = _memory(g, prog)
    assert mem.by_category["variables"][0] == 4 * B
    assert [live - mem.always_live for live in mem.liveness] == [B, 2 * B, 2 * B, B]


def test_a_variable_used_across_a_repeat_is_live_across_the_whole_loop():
    # a is written before the loop and read in it, so it is live through every
    # iteration, overlapping t (the loop's own temporary); c, after the loop, reuses.
    g, t = _graph("x y a t c".split())
    body = Sequence([Copy(t["x"], t["t"]), Copy(t["t"], t["y"]), Copy(t["a"], t["y"])])
    prog = Sequence([Copy(t["x"], t["a"]), Repeat(3, body), Copy(t["x"], t["c"]), Copy(t["c"], t["y"])])
    mem = _memory(g, prog)
    assert mem.by_category["variables"][0] == 4 * B  # x, y, a, t (c shares)
    # a's last read is in the loop body's last step, yet t's range, entirely inside
    # the loop, overlaps a's: moving a's read first must not let them share.
    body2 = Sequence([Copy(t["a"], t["y"]), Copy(t["x"], t["t"]), Copy(t["t"], t["y"])])
    prog2 = Sequence([Copy(t["x"], t["a"]), Repeat(3, body2), Copy(t["x"], t["c"]), Copy(t["c"], t["y"])])
    assert _variables(g, prog2) == 4 * B


def test_a_value_carried_from_one_iteration_to_the_next_is_always_live():
    # a is read before it is written in the body: its first read sees the previous
    # run's value, so it is always live and shares with nothing.
    g, t = _graph("x y a b".split())
    prog = Sequence([Repeat(2, Sequence([Copy(t["a"], t["y"]), Copy(t["x"], t["a"])])),
                     Copy(t["x"], t["b"]), Copy(t["b"], t["y"])])
    mem = _memory(g, prog)
    assert mem.by_category["variables"][0] == 4 * B
    assert mem.not_always_live == B  # b only


def test_host_read_and_write_variables_are_always_live():
    g, t = _graph("x y a b".split())
    g.create_host_read("a", t["a"])
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"]), Copy(t["x"], t["b"]), Copy(t["b"], t["y"])])
    mem = _memory(g, prog)
    assert mem.by_category["variables"][0] == 4 * B
    assert mem.not_always_live == B
    assert mem.always_live == _memory(g, prog, OFF).always_live - B


def test_a_partial_write_does_not_start_a_live_range():
    # b's first write covers half of it: the other half still holds the last run's
    # values, so b is always live.
    g, t = _graph("x y a b".split())
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"]),
                     Copy(t["x"][:N // 2], t["b"][:N // 2]), Copy(t["b"], t["y"])])
    assert _variables(g, prog) == 4 * B


def test_a_variable_written_piece_by_piece_before_any_read_is_defined():
    # b's two halves are written by two copies (a concat) before b is read: together they
    # define b, which then shares with a.
    g, t = _graph("x y a b".split())
    h = N // 2
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"]),
                     Copy(t["x"][:h], t["b"][h:]), Copy(t["x"][h:], t["b"][:h]), Copy(t["b"], t["y"])])
    mem = _memory(g, prog)
    assert mem.by_category["variables"][0] == 3 * B
    assert [live - mem.always_live for live in mem.liveness] == [B, B, B, B, B]
    # the same halves with a read of b between them: the read sees the last run's second half
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"]),
                     Copy(t["x"][:h], t["b"][:h]), Copy(t["b"], t["y"]), Copy(t["x"][h:], t["b"][h:])])
    assert _variables(g, prog) == 4 * B
    # halves that overlap and leave one element unwritten define nothing
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"]),
                     Copy(t["x"][:h], t["b"][:h]), Copy(t["x"][h - 1:N - 1], t["b"][h - 1:N - 1]),
                     Copy(t["b"], t["y"])])
    assert _variables(g, prog) == 4 * B


def test_one_write_of_two_adjacent_variables_defines_both():
    # a and b hold consecutive element ids; one Copy writes both whole (through a concat
    # of them): each is defined there, so both are temporaries and c reuses their place.
    g, t = _graph("x y a b c".split())
    two = g.add_variable(FLOAT, [2 * N], "two")
    g.set_tile_mapping(two, 0)
    g.create_host_write("two", two)
    prog = Sequence([Copy(two, popsim.concat([t["a"], t["b"]])), Copy(t["a"], t["y"]), Copy(t["b"], t["y"]),
                     Copy(t["x"], t["c"]), Copy(t["c"], t["y"])])
    mem = _memory(g, prog)
    assert mem.not_always_live == 2 * B
    assert mem.by_category["variables"][0] == 6 * B  # x, y, two (2 B); a and b; c shares


def test_elements_never_read_need_no_write():
    # Only b's first half is written and only it is read (like a convolution's partials,
    # padded past what any vertex writes): no element's value comes from an earlier run,
    # so b is a temporary; reading one element of the unwritten half makes it always live.
    g, t = _graph("x y a b".split())
    h = N // 2
    head = [Copy(t["x"], t["a"]), Copy(t["a"], t["y"])]
    prog = Sequence(head + [Copy(t["x"][:h], t["b"][:h]), Copy(t["b"][:h], t["y"][:h])])
    assert _variables(g, prog) == 3 * B
    prog = Sequence(head + [Copy(t["x"][:h], t["b"][:h]), Copy(t["b"][:h + 1], t["y"][:h + 1])])
    assert _variables(g, prog) == 4 * B


def test_a_variable_written_row_by_row_by_compute_sets_is_defined():
    # popops.fill writes each row of out in a compute set of its own: out is defined once
    # both have run, so it is a temporary that a (live before it) shares memory with.
    from popsim import popops
    g, t = _graph("x y a".split())
    popops.add_codelets(g)
    out = mapped(g, FLOAT, [2, N], "out")
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"])])
    popops.fill(g, out[0], 1.0, prog, "row0")
    popops.fill(g, out[1], 2.0, prog, "row1")
    prog.add(Copy(out[1], t["y"]))
    mem = _memory(g, prog)
    assert mem.by_category["variables"][0] == 4 * B  # x, y and out (2 B); a shares out's place
    assert mem.not_always_live == 2 * B


def test_a_stream_copy_from_the_host_defines_its_destination_each_iteration():
    # In a Repeat, s is filled from the host stream and read in each iteration: a value of
    # the iteration only, so s shares memory with a (before the loop); results are those
    # of a run without reuse.
    device = small_device(1)
    g, t = _graph("x y a s".split())
    fifo = g.add_host_to_device_fifo("in", FLOAT, N)
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"]), Repeat(3, Sequence([Copy(fifo, t["s"]),
                                                                                      Copy(t["s"], t["y"])]))])
    assert _variables(g, prog) == 3 * B
    outs = []
    for opts in (None, OFF):
        engine = popsim.Engine(g, [prog], opts)
        engine.load(device)
        data = np.arange(3 * N, dtype=np.float32)
        engine.connect_stream("in", data)
        engine.write_tensor("x", np.ones(N, np.float32))
        engine.run(0)
        outs.append(engine.read_tensor("y").copy())
    assert outs[0].tobytes() == outs[1].tobytes() == np.arange(2 * N, 3 * N, dtype=np.float32).tobytes()


def test_a_stream_copy_to_the_host_reads_its_source():
    # c is streamed out before it is written in the loop body: the first iteration sends
    # the last run's c, so c is always live; written first, it is a temporary of the body.
    g, t = _graph("x y a c".split())
    fifo = g.add_device_to_host_fifo("out", FLOAT, N)
    head = [Copy(t["x"], t["a"]), Copy(t["a"], t["y"])]
    carried = Sequence(head + [Repeat(2, Sequence([Copy(t["c"], fifo), Copy(t["x"], t["c"])]))])
    assert _variables(g, carried) == 4 * B
    fresh = Sequence(head + [Repeat(2, Sequence([Copy(t["x"], t["c"]), Copy(t["c"], fifo)]))])
    assert _variables(g, fresh) == 3 * B


def test_a_partial_write_in_a_loop_is_defined_only_with_the_rest_before_the_read():
    # b's first half is written before the loop, the second in it, then b is read in it:
    # complete before the read, so b is a temporary and takes a's place (a is dead by then).
    g, t = _graph("x y a b".split())
    h = N // 2
    body = Sequence([Copy(t["x"][h:], t["b"][h:]), Copy(t["b"], t["y"])])
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"]), Copy(t["x"][:h], t["b"][:h]), Repeat(2, body)])
    assert _variables(g, prog) == 3 * B
    # only the second half is written in the loop: the first is the last run's
    prog = Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"]), Repeat(2, body)])
    assert _variables(g, prog) == 4 * B


def test_a_first_write_in_one_branch_of_an_if_is_not_a_definition():
    g = popsim.Graph(small_device(1))
    t = {n: mapped(g, FLOAT, [N], n) for n in "x y a b".split()}
    p = mapped(g, popsim.INT, [], "p")
    g.create_host_write("x", t["x"])
    g.create_host_write("p", p)
    g.create_host_read("y", t["y"])
    # a is written only when p holds, then read whatever p was: always live
    prog = Sequence([If(p, Copy(t["x"], t["a"]), Sequence()), Copy(t["a"], t["y"]),
                     Copy(t["x"], t["b"]), Copy(t["b"], t["y"])])
    assert _variables(g, prog) == 4 * B + 8  # + p, padded to 8 bytes
    # inside the branch only, a is a temporary of its own
    prog = Sequence([If(p, Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"])]), Sequence()),
                     Copy(t["x"], t["b"]), Copy(t["b"], t["y"])])
    assert _variables(g, prog) == 3 * B + 8


def test_write_undef_ends_a_carried_value():
    # Without WriteUndef, a's read-modify-write keeps a value across runs; declared
    # undefined first, a is a temporary and shares with b.
    g, t = _graph("x y a b".split())
    rmw = [Copy(t["a"], t["a"]), Copy(t["a"], t["y"])]
    tail = [Copy(t["x"], t["b"]), Copy(t["b"], t["y"])]
    assert _variables(g, Sequence(rmw + tail)) == 4 * B
    assert _variables(g, Sequence([WriteUndef(t["a"])] + rmw + tail)) == 3 * B


def test_function_temporaries_share_across_calls():
    g, t = _graph("x y a b".split())
    fa = g.add_function(Sequence([Copy(t["x"], t["a"]), Copy(t["a"], t["y"])]))
    fb = g.add_function(Sequence([Copy(t["x"], t["b"]), Copy(t["b"], t["y"])]))
    prog = Sequence([popsim.program.Call(fa), popsim.program.Call(fb), popsim.program.Call(fa)])
    # a is live from the first call of fa to the last: over fb's b, so they do not share
    assert _variables(g, prog) == 4 * B
    assert _variables(g, Sequence([popsim.program.Call(fa), popsim.program.Call(fb)])) == 3 * B


def test_results_are_bit_for_bit_the_same_with_and_without_reuse():
    from popsim import poplin, popops
    out = {}
    for opts in (None, OFF):
        device = small_device(4)
        g = popsim.Graph(device)
        popops.add_codelets(g)
        poplin.add_codelets(g)
        rng = np.random.default_rng(7)
        a = poplin.create_mat_mul_input_lhs(g, FLOAT, [6, 10], [10, 5], "a")
        b = poplin.create_mat_mul_input_rhs(g, FLOAT, [6, 10], [10, 5], "b")
        prog = Sequence()
        c = poplin.mat_mul(g, a, b, prog, "c")
        d = popops.add(g, c, c, prog, "d")
        f = popops.mul(g, d, d, prog, "f")
        e = popops.add(g, f, f, prog, "e")
        g.create_host_write("a", a)
        g.create_host_write("b", b)
        g.create_host_read("e", e)
        engine = popsim.Engine(g, [prog], opts)
        engine.load(device)
        engine.write_tensor("a", rng.standard_normal((6, 10)).astype(np.float32))
        engine.write_tensor("b", rng.standard_normal((10, 5)).astype(np.float32))
        engine.run(0)
        out[opts is None] = (engine.read_tensor("e").copy(), engine.get_report().memory)
    assert out[True][0].tobytes() == out[False][0].tobytes()
    on, off = out[True][1], out[False][1]
    assert sum(on.by_category["variables"]) < sum(off.by_category["variables"])  # c, d, f: f can take c's place
    assert on.not_always_live > 0 and off.not_always_live == 0


@pytest.mark.parametrize("seed", range(5))
def test_first_fit_never_overlaps_blocks_live_together(seed):
    from popsim.lower.liveness import first_fit
    rng = np.random.default_rng(seed)
    n = 60
    size = np.sort(rng.integers(1, 100, n))[::-1] * 8
    start = rng.integers(0, 50, n)
    end = start + rng.integers(0, 10, n)
    off = first_fit(size, start, end)
    for i in range(n):
        for j in range(i):
            if start[i] <= end[j] and start[j] <= end[i]:
                assert off[i] + size[i] <= off[j] or off[j] + size[j] <= off[i], (i, j)
        # first fit: one block lower would hit a block live with it, or it is at 0
        lower = [off[j] + size[j] for j in range(i) if start[i] <= end[j] and start[j] <= end[i]]
        assert off[i] == 0 or off[i] in lower
    live = [size[(start <= p) & (p <= end)].sum() for p in range(60)]
    assert (off + size).max() >= max(live)  # never below the bytes live at once


def _first_fit_numpy(size, start, end):
    """first_fit's rule in numpy, block by block (what liveness.py did before the C placement)."""
    off = np.zeros(size.size, np.int64)
    for k in range(size.size):
        busy = np.flatnonzero((start[:k] <= end[k]) & (end[:k] >= start[k]))
        o = 0
        if busy.size:
            lo = off[busy]
            order = np.argsort(lo, kind="stable")
            lo, hi = lo[order], lo[order] + size[busy][order]
            begins = np.r_[0, np.maximum.accumulate(hi)]
            ends = np.r_[lo, np.iinfo(np.int64).max]
            o = int(begins[np.flatnonzero(ends - begins >= size[k])[0]])
        off[k] = o
    return off


@pytest.mark.parametrize("seed", range(6))
def test_first_fit_matches_the_numpy_rule(seed):
    """The C placement gives the numpy rule's offsets exactly, ties and empty blocks included
    (the modelled bytes must not move)."""
    from popsim.lower.liveness import first_fit
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    size = np.sort(rng.integers(0, 6, n) * 8 * rng.integers(1, 4, n))[::-1].astype(np.int64)
    start = rng.integers(0, 40, n).astype(np.int64)
    end = start + rng.integers(0, 15, n)
    assert first_fit(size, start, end).tolist() == _first_fit_numpy(size, start, end).tolist()


def test_first_fit_refuses_arrays_it_cannot_read():
    from popsim import _first_fit
    ok = np.zeros(3, np.int64)
    with pytest.raises(TypeError, match="size must be a 1-D int64 array, found format 'd'"):
        _first_fit.place(np.zeros(3), ok, ok, ok.copy())
    with pytest.raises(ValueError, match="one length, found 3, 3, 2 and 3"):
        _first_fit.place(ok, ok, ok[:2], ok.copy())
    with pytest.raises(TypeError, match="out must be a C-contiguous writable int64 array"):
        _first_fit.place(ok, ok, ok, ok.copy().tobytes())


@pytest.mark.parametrize("seed", range(8))
def test_merge_intervals_counts_dense_intervals_as_it_sorts_sparse_ones(seed, monkeypatch):
    from popsim.lower import liveness
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    lo = rng.integers(0, 400 if seed % 2 else 10 ** 6, n)
    hi = lo + rng.integers(-2, 30, n)           # empty intervals (hi <= lo) too
    lo[: n // 4] = hi[n // 4: 2 * (n // 4)]     # touching ones
    results = []
    for span in (0, 10 ** 9):                   # sorted / counted
        monkeypatch.setattr(liveness, "DENSE_SPAN", span)
        results.append([a.tolist() for a in liveness.merge_intervals(lo, hi)])
    covered = sorted({i for a, b in zip(lo.tolist(), hi.tolist()) for i in range(a, b)})
    assert results[0] == results[1]
    assert sum(b - a for a, b in zip(*results[0])) == len(covered)
    assert all(b0 < a1 for b0, a1 in zip(results[0][1][:-1], results[0][0][1:]))   # disjoint, not touching
