"""Host references for GCL's cross-replica collectives, from docs/gcl.md's definitions
(not from the lowering's code): which ring each group forms, how each tile's elements
are cut into fragments, and the order each fragment's values are folded in."""
import numpy as np

from popsim.gcl import CollectiveOperator as Op

_NP = {Op.ADD: np.add, Op.MEAN: np.add, Op.SQUARE_ADD: np.add, Op.MUL: np.multiply, Op.MIN: np.minimum,
       Op.MAX: np.maximum, Op.LOGICAL_AND: np.logical_and, Op.LOGICAL_OR: np.logical_or}


def groups(kind, size, replicas):
    """The replica groups: ALL, CONSECUTIVE blocks or ORTHOGONAL strides."""
    if kind == "ALL":
        return [list(range(replicas))]
    if kind == "CONSECUTIVE":
        return [list(range(g, g + size)) for g in range(0, replicas, size)]
    blocks = replicas // size
    return [[g + blocks * k for k in range(size)] for g in range(blocks)]


def ring(members, ipus_per_replica=1):
    """A group's ring: up the even members, down the odd ones (one IPU per replica, a
    consecutive block of more than two), else in order."""
    consecutive = members == list(range(members[0], members[0] + len(members)))
    if ipus_per_replica > 1 or not consecutive or len(members) <= 2:
        return list(members)
    return members[0::2] + members[1::2][::-1]


def pieces_of(tile_elements, n, rings=1):
    """{flat element: (ring, piece)}. The elements, tile after tile (``tile_elements``:
    each tile's flat indices, in order), are cut into ``rings`` near-equal runs (run r:
    positions [N r / rings, N (r+1) / rings) in that order); then each tile's elements of
    a run, c of them, are cut into n pieces: its k-th goes to piece p when
    floor(c p / n) <= k < floor(c (p + 1) / n)."""
    total = sum(len(e) for e in tile_elements)
    bounds = [total * r // rings for r in range(rings + 1)]
    out, start = {}, 0
    for elements in tile_elements:
        for r in range(rings):
            share = [e for k, e in enumerate(elements) if bounds[r] <= start + k < bounds[r + 1]]
            c = len(share)
            for k, e in enumerate(share):
                out[e] = (r, next(p for p in range(n) if c * p // n <= k < c * (p + 1) // n))
        start += len(elements)
    return out


def fold(values, op, order):
    """values[order[0]], then x op acc for each next replica (squared first for
    SQUARE_ADD), in the element type."""
    f = (lambda v: v * v) if op is Op.SQUARE_ADD else (lambda v: v)
    acc = f(values[order[0]])
    for r in order[1:]:
        acc = _NP[op](f(values[r]), acc).astype(values.dtype)
    return acc


def ring_fold_order(ring_members, owner_position, method_chain):
    """The replicas whose values fold into the fragment owned by ``owner_position``:
    ``method_chain`` "cw"/"acw": the whole ring from the far end to the owner;
    "mim": (cw side, acw side) of meet-in-the-middle."""
    n = len(ring_members)
    q = owner_position
    if method_chain in ("cw", "acw"):
        d = 1 if method_chain == "cw" else -1
        return [ring_members[(q - d * m) % n] for m in range(n - 1, -1, -1)]
    cw, acw = n // 2, (n - 1) // 2
    return ([ring_members[(q - m) % n] for m in range(cw, 0, -1)],
            [ring_members[(q + m) % n] for m in range(acw, 0, -1)])


def reduce_fragment(x, op, members, q, chain):
    """The fragment of ring position q, element-wise over x[replica] arrays."""
    if chain == "mim":
        cw_side, acw_side = ring_fold_order(members, q, "mim")
        f = (lambda v: v * v) if op is Op.SQUARE_ADD else (lambda v: v)
        acc = f(x[members[q]])
        for side in (cw_side, acw_side):
            if side:
                acc = _NP[op](acc, fold(x, op, side)).astype(x.dtype)
        return acc
    return fold(x, op, ring_fold_order(members, q, chain))


def finish(value, op, n):
    if op is Op.MEAN:
        return (value / np.array(n, value.dtype)).astype(value.dtype)
    return value
