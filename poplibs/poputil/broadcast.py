"""NumPy-style broadcasting of tensor views (PopLibs' poputil/Broadcast.hpp).

The results are views of the inputs: a broadcast dimension repeats the same elements,
so nothing is copied and nothing new is mapped. PopLibs changes its Tensor& arguments;
here the functions return the new views.
"""
import numbers
from typing import Tuple

import popsim

from .errors import PoplibsError


def _check(t, what: str) -> None:
    if not isinstance(t, popsim.Tensor):
        raise popsim.TypeError(f"{what}: expected a popsim.Tensor, found {type(t).__name__}")


def _with_rank(t, rank: int):
    """``t`` with leading dimensions of size 1 added up to ``rank``."""
    return t if t.rank >= rank else t.reshape((1,) * (rank - t.rank) + tuple(t.shape))


def _common_shape(shapes, describe, what: str) -> Tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out = []
    for d in range(rank):
        sizes = {p[d] for p in padded} - {1}
        if len(sizes) > 1:
            raise PoplibsError(f"{what}: cannot broadcast {describe()} together: dimension {d - rank} (counted "
                               f"from the last) has sizes {sorted(sizes)}; sizes must be equal or 1 (NumPy rules)")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def common_shape(tensors, what: str) -> Tuple[int, ...]:
    """The shape ``tensors`` broadcast to by NumPy's rules (a PoplibsError from ``what``,
    naming every tensor and shape, where they do not)."""
    for t in tensors:
        _check(t, what)
    names = ", ".join(f"tensor '{t.name}' of shape {tuple(t.shape)}" for t in tensors)
    return _common_shape([t.shape for t in tensors], lambda: names, what)


def _broadcast_view(t, shape: Tuple[int, ...]):
    t = _with_rank(t, len(shape))
    for d, n in enumerate(shape):
        if t.shape[d] == 1 and n != 1:
            t = t.slice(0, 0, d) if n == 0 else t.broadcast(n, d)
    return t


def expand_to_match_ranks(a, b):
    """(a, b) with leading dimensions of size 1 added to the one of lower rank (PopLibs'
    expandToMatchRanks)."""
    for t in (a, b):
        _check(t, "expand_to_match_ranks")
    rank = max(a.rank, b.rank)
    return _with_rank(a, rank), _with_rank(b, rank)


def can_broadcast_to_match(a, b) -> bool:
    """Whether ``a`` and ``b`` broadcast to a common shape by NumPy's rules."""
    for t in (a, b):
        _check(t, "can_broadcast_to_match")
    try:
        _common_shape([a.shape, b.shape], str, "can_broadcast_to_match")
    except PoplibsError:
        return False
    return True


def broadcast_to_match(a, b, c=None):
    """NumPy broadcasting of views (PopLibs' broadcastToMatch):
    ``broadcast_to_match(a, shape)`` is ``a`` broadcast to ``shape`` (a tuple or list);
    ``broadcast_to_match(a, b)`` and ``broadcast_to_match(a, b, c)`` are the tensors
    broadcast to their common shape, as a tuple."""
    what = "broadcast_to_match"
    _check(a, what)
    if not isinstance(b, popsim.Tensor):
        shape = _shape(b, what)
        if a.rank > len(shape):
            raise PoplibsError(f"{what}: tensor '{a.name}' of shape {tuple(a.shape)} has more dimensions than the "
                               f"shape {shape} to broadcast it to")
        if any(n not in (1, m) for n, m in zip(_with_rank(a, len(shape)).shape, shape)):
            raise PoplibsError(f"{what}: cannot broadcast tensor '{a.name}' of shape {tuple(a.shape)} to shape "
                               f"{shape}: only dimensions of size 1 broadcast (NumPy rules)")
        if c is not None:
            raise popsim.TypeError(f"{what}: a third argument goes with tensors, not with a shape")
        return _broadcast_view(a, shape)
    tensors = [a, b] if c is None else [a, b, c]
    shape = common_shape(tensors, what)
    return tuple(_broadcast_view(t, shape) for t in tensors)


def _shape(shape, what: str) -> Tuple[int, ...]:
    try:
        dims = tuple(shape)
    except TypeError:
        raise popsim.TypeError(f"{what}: expected a Tensor or a shape to broadcast to, "
                               f"found {type(shape).__name__}") from None
    if not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise PoplibsError(f"{what}: the shape {shape!r} must be whole numbers >= 0")
    return tuple(int(d) for d in dims)
