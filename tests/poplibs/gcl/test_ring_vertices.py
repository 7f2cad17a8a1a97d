"""GCL's ring-step vertices (poplibs/gcl/ring_vertices.py) run directly, compiled and
interpreted, against numpy: each instantiation inlines its operator's functions, and an
in-place ReduceStep declares no ``local`` field."""
import numpy as np
import pytest

from popsim import BOOL, FLOAT, HALF, INT
from popsim.codelet.abi import run_compiled
from popsim.codelet.interpret import run_all_workers
from popsim.codelet.python_compile import vertex_types_from_classes
from popsim.gcl.collective_types import CollectiveOperator as Op
from popsim.gcl.ring_vertices import BroadcastReduce, GatherStep, ReduceStep, SliceStep

WORKERS = 6
_NP = {FLOAT: np.float32, HALF: np.float16, INT: np.int32, BOOL: np.uint8}


def _run(cls, values):
    """The values after a run compiled and after a run interpreted (which must agree)."""
    (vt,) = vertex_types_from_classes([cls])
    compiled = [[a.copy() for a in v] if isinstance(v, list) else v.copy() for v in values]
    interpreted = [[a.copy() for a in v] if isinstance(v, list) else v.copy() for v in values]
    ret, _ = run_compiled(vt, compiled, 0, WORKERS)
    ok, _ = run_all_workers(vt, interpreted, WORKERS)
    assert ret == 1 and ok
    for c, i in zip(compiled, interpreted):
        for a, b in zip(c if isinstance(c, list) else [c], i if isinstance(i, list) else [i]):
            assert a.tobytes() == b.tobytes()
    return compiled


def _u32(v):
    return np.array([v], np.uint32)


@pytest.mark.parametrize("op, dtype, fold", [
    (Op.ADD, HALF, lambda a, b: a + b),
    (Op.MIN, FLOAT, np.minimum),          # NaN propagates, as numpy's
    (Op.MAX, INT, np.maximum),
    (Op.SQUARE_ADD, FLOAT, lambda a, b: a + b),
    (Op.LOGICAL_OR, BOOL, np.logical_or),
])
@pytest.mark.parametrize("in_place", [False, True], ids=["local", "in_place"])
def test_reduce_step_folds_the_received_rows_into_the_fragment(op, dtype, fold, in_place):
    rng = np.random.default_rng(0)
    t = _NP[dtype]
    rows = [(rng.random(13) < 0.5) if dtype is BOOL else rng.normal(0, 9, 13) for _ in range(7)]
    rows = [r.astype(t) for r in rows]
    if dtype is FLOAT:
        rows[1][3] = np.nan
    local, received, out = rows[0:2], rows[2:4], rows[4:7]
    position, offset = 2, 3  # fragment (2 + 3) % len: local[1], out[2]
    assert ("local" in ReduceStep[op, dtype, in_place].__annotations__) != in_place
    values = [_u32(position)] + ([] if in_place else [local]) + [received, out, _u32(offset), _u32(0)]
    result = _run(ReduceStep[op, dtype, in_place], values)
    first = out[2] if in_place else local[1]
    acc = first * first if op is Op.SQUARE_ADD else first
    for row in received:
        acc = fold(acc, row).astype(t)
    expected = [o.copy() for o in out]
    expected[2] = acc
    got = result[-3]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_broadcast_reduce_takes_the_group_in_rank_order_and_divides_a_mean():
    data = np.arange(1, 9, dtype=np.float32)
    received = [np.full(8, 10.0, np.float32), np.full(8, 100.0, np.float32)]
    (_, got, _, _) = _run(BroadcastReduce[Op.MEAN, FLOAT], [_u32(1), data, received, _u32(3)])
    np.testing.assert_array_equal(got, ((data + 110.0) / 3).astype(np.float32))


def test_gather_and_slice_steps_move_their_fragment():
    data = [np.arange(5, dtype=np.int32), np.arange(10, 15, dtype=np.int32)]
    out = [np.zeros(5, np.int32) for _ in range(3)]
    got = _run(GatherStep[INT], [_u32(1), data, out, np.array([0, 1], np.uint32)])[2]
    np.testing.assert_array_equal(np.stack(got), [np.zeros(5), data[0], data[1]])
    src = [np.full(4, k, np.int32) for k in range(3)]
    got = _run(SliceStep[INT], [_u32(2), src, np.zeros(4, np.int32), _u32(2)])[2]
    np.testing.assert_array_equal(got, np.full(4, 1))
