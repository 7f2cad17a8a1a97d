"""Random chains of tensor view operations, applied in parallel to a popsim Tensor and to
numpy's array of element ids, for the property tests of views (test_tensor_properties.py,
test_tensor_fast_paths.py, test_graph_tile_mapping.py).

The first variable of a fresh graph owns global element ids 0..n-1 and the next one
starts where it ends, so ``np.arange(n).reshape(shape)`` (plus an offset for the second
variable) put through numpy's version of each operation is an independent reference for
``t._element_ids()``.
"""
import numpy as np
from hypothesis import note
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, INT, UNSIGNED_INT


MAX_ELEMENTS = 400   # views may grow (broadcast, upsample, concat) up to this many elements


MAX_RANK = 6


PARTNER_SIZE = 48    # the second variable, used by concat/append of views of two variables


SAME_SIZE_TYPES = (FLOAT, INT, UNSIGNED_INT)


# small dims, 0 and 1 included (0 rarer, so that most views have elements); shrinks towards 1
dims = st.sampled_from([1, 2, 3, 4, 0, 1, 2, 3, 4, 1, 2, 3])


shapes = st.lists(dims, min_size=0, max_size=4).map(tuple)


def prod(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def ids_of(t):
    flat = t._element_ids()
    assert flat.dtype == np.int64
    assert flat.ndim == 1 and flat.size == t.num_elements()
    return flat.reshape(t.shape)


def assert_matches(t, a, dtype):
    assert t.shape == a.shape, (t.shape, a.shape)
    assert isinstance(t.shape, tuple)
    assert t.rank == a.ndim
    assert t.num_elements() == a.size
    assert t.dtype is dtype
    np.testing.assert_array_equal(ids_of(t), a)


class Ctx:
    """What a chain may use besides its current view: a partner variable of another id range
    (for concat of views of two variables) and whether the chain must stay alias-free."""

    def __init__(self, partner=None, partner_ids=None, alias_free=False):
        self.partner = partner
        self.partner_ids = partner_ids
        self.alias_free = alias_free


def draw_dim(data, rank, label="dim"):
    return data.draw(st.integers(0, rank - 1), label=label)


def draw_shape_with_size(data, n, allow_minus_one=True):
    """A random shape with exactly ``n`` elements (maybe with one -1 for numpy to fill)."""
    rank = data.draw(st.integers(0 if n == 1 else 1, 4), label="reshape rank")
    if n == 0:
        shape = [data.draw(st.integers(0, 3)) for _ in range(rank)]
        shape[data.draw(st.integers(0, rank - 1))] = 0
    else:
        shape, rest = [], n
        for _ in range(rank - 1):
            divisors = [d for d in range(1, rest + 1) if rest % d == 0]
            d = data.draw(st.sampled_from(divisors))
            shape.append(d)
            rest //= d
        if rank:
            shape.append(rest)
        shape = list(data.draw(st.permutations(shape))) if shape else []
    if allow_minus_one and rank and data.draw(st.booleans(), label="use -1"):
        i = data.draw(st.integers(0, rank - 1))
        if prod(shape[:i] + shape[i + 1:]) > 0:
            shape[i] = -1
    return shape


def draw_basic_key(data, shape):
    """A numpy basic index: ints (maybe negative), slices (any bounds, +-steps), ``...``, None."""
    items = []
    for n in shape:
        kind = data.draw(st.sampled_from(["full", "int", "slice"]))
        if kind == "int" and n > 0:
            items.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 2, n + 2)
            step = data.draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3]))
            items.append(slice(data.draw(bound), data.draw(bound), step))
        else:
            items.append(slice(None))
    if data.draw(st.booleans(), label="use ..."):
        # ``...`` stands for the dims [i, j) (and nothing else: no index is left out)
        i = data.draw(st.integers(0, len(items)))
        j = data.draw(st.integers(i, len(items)))
        items = items[:i] + [Ellipsis] + items[j:]
    else:
        items = items[:data.draw(st.integers(0, len(items)), label="indices given")]  # the rest are ':'
    explicit = sum(1 for k in items if k is not Ellipsis)
    rank_after = sum(1 for k in items if isinstance(k, slice)) + len(shape) - explicit
    for _ in range(data.draw(st.integers(0, max(0, min(2, MAX_RANK - rank_after))), label="Nones")):
        items.insert(data.draw(st.integers(0, len(items))), None)
    if len(items) == 1 and data.draw(st.booleans(), label="bare key"):
        return items[0]
    return tuple(items)


def op_index(data, t, a, dtype, ctx):
    key = draw_basic_key(data, t.shape)
    return t[key], a[key], dtype, f"[{key!r}]"


def op_index_method(data, t, a, dtype, ctx):
    if t.rank == 0 or 0 in t.shape:
        return None
    k = data.draw(st.integers(0, t.rank))
    idx = [data.draw(st.integers(0, t.shape[d] - 1)) for d in range(k)]
    return t.index(idx), a[tuple(idx)], dtype, f".index({idx})"


def op_slice(data, t, a, dtype, ctx):
    if t.rank == 0:
        return None
    if data.draw(st.booleans(), label="list form"):
        begin, end = [], []
        for n in t.shape:
            b = data.draw(st.integers(0, n))
            begin.append(b)
            end.append(data.draw(st.integers(b, n)))
        return (t.slice(begin, end), a[tuple(slice(b, e) for b, e in zip(begin, end))], dtype,
                f".slice({begin}, {end})")
    dim = draw_dim(data, t.rank)
    n = t.shape[dim]
    b = data.draw(st.integers(0, n))
    e = data.draw(st.integers(b, n))
    key = [slice(None)] * t.rank
    key[dim] = slice(b, e)
    return t.slice(b, e, dim), a[tuple(key)], dtype, f".slice({b}, {e}, {dim})"


def op_reshape(data, t, a, dtype, ctx):
    shape = draw_shape_with_size(data, t.num_elements())
    if len(shape) > MAX_RANK:
        return None
    return t.reshape(shape), a.reshape(shape), dtype, f".reshape({shape})"


def op_reshape_partial(data, t, a, dtype, ctx):
    b = data.draw(st.integers(0, t.rank))
    e = data.draw(st.integers(b, t.rank))
    n = prod(t.shape[b:e])
    if n == 0 and e == b:
        return None
    new = draw_shape_with_size(data, n, allow_minus_one=False)
    if t.rank - (e - b) + len(new) > MAX_RANK:
        return None
    return (t.reshape_partial(b, e, new), a.reshape(a.shape[:b] + tuple(new) + a.shape[e:]), dtype,
            f".reshape_partial({b}, {e}, {new})")


def op_flatten(data, t, a, dtype, ctx):
    if t.rank == 0 or data.draw(st.booleans(), label="flatten all"):
        return t.flatten(), a.reshape(-1), dtype, ".flatten()"
    b = data.draw(st.integers(0, t.rank - 1))
    e = data.draw(st.integers(b + 1, t.rank))
    return (t.flatten(b, e), a.reshape(a.shape[:b] + (prod(a.shape[b:e]),) + a.shape[e:]), dtype,
            f".flatten({b}, {e})")


def op_transpose(data, t, a, dtype, ctx):
    if t.rank != 2:
        return None
    return t.transpose(), a.T, dtype, ".transpose()"


def op_dim_shuffle(data, t, a, dtype, ctx):
    perm = data.draw(st.permutations(range(t.rank)))
    return t.dim_shuffle(perm), np.transpose(a, perm), dtype, f".dim_shuffle({perm})"


def op_dim_shuffle_partial(data, t, a, dtype, ctx):
    k = data.draw(st.integers(0, t.rank))
    src = data.draw(st.permutations(range(t.rank)))[:k]
    dst = data.draw(st.permutations(range(t.rank)))[:k]
    return (t.dim_shuffle_partial(src, dst), np.moveaxis(a, src, dst), dtype,
            f".dim_shuffle_partial({src}, {dst})")


def op_dim_roll(data, t, a, dtype, ctx):
    if t.rank == 0:
        return None
    dim = draw_dim(data, t.rank)
    if data.draw(st.booleans(), label="default new_pos"):
        return t.dim_roll(dim), np.moveaxis(a, dim, 0), dtype, f".dim_roll({dim})"
    pos = draw_dim(data, t.rank, "new_pos")
    return t.dim_roll(dim, pos), np.moveaxis(a, dim, pos), dtype, f".dim_roll({dim}, {pos})"


def op_expand(data, t, a, dtype, ctx):
    room = MAX_RANK - t.rank
    if room <= 0:
        return None
    positions = data.draw(st.lists(st.integers(0, t.rank), min_size=1, max_size=min(3, room)))
    # Poplar: a singleton before each listed *source* dimension; the k-th inserted (in sorted
    # order) lands at its source position plus the k singletons inserted before it.
    ref = a
    for k, d in enumerate(sorted(positions)):
        ref = np.expand_dims(ref, d + k)
    return t.expand(positions), ref, dtype, f".expand({positions})"


def op_squeeze(data, t, a, dtype, ctx):
    ones = [d for d, n in enumerate(t.shape) if n == 1]
    if data.draw(st.booleans(), label="squeeze all"):
        return t.squeeze(), np.squeeze(a), dtype, ".squeeze()"
    chosen = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    return t.squeeze(chosen), np.squeeze(a, tuple(chosen)), dtype, f".squeeze({chosen})"


def op_broadcast(data, t, a, dtype, ctx):
    if t.rank == 0:
        return None
    dim = draw_dim(data, t.rank)
    n = data.draw(st.integers(0, 1 if ctx.alias_free else 3))
    if t.num_elements() * n > MAX_ELEMENTS:
        return None
    ref = np.concatenate([a] * n, dim) if n else np.take(a, [], dim)
    return t.broadcast(n, dim), ref, dtype, f".broadcast({n}, {dim})"


def op_upsample(data, t, a, dtype, ctx):
    if t.rank == 0:
        return None
    dim = draw_dim(data, t.rank)
    scale = data.draw(st.integers(0, 1 if ctx.alias_free else 3))
    if t.num_elements() * scale > MAX_ELEMENTS:
        return None
    return t.upsample(scale, dim), np.repeat(a, scale, dim), dtype, f".upsample({scale}, {dim})"


def op_reverse(data, t, a, dtype, ctx):
    if t.rank == 0:
        return None
    dim = draw_dim(data, t.rank)
    return t.reverse(dim), np.flip(a, dim), dtype, f".reverse({dim})"


def op_subsample(data, t, a, dtype, ctx):
    if t.rank == 0:
        return None
    dim = draw_dim(data, t.rank)
    stride = data.draw(st.integers(1, 4))
    key = [slice(None)] * t.rank
    key[dim] = slice(0, None, stride)
    return t.subsample(stride, dim), a[tuple(key)], dtype, f".subsample({stride}, {dim})"


def op_reinterpret(data, t, a, dtype, ctx):
    new = data.draw(st.sampled_from(SAME_SIZE_TYPES))
    return t.reinterpret(new), a, new, f".reinterpret({new.name})"


def partner_view(data, ctx, shape, dtype):
    """A strided piece of the partner variable with ``shape`` (or None if it is too small)."""
    m = prod(shape)
    size = ctx.partner.num_elements()
    if m > size:
        return None
    step = data.draw(st.integers(1, 3))
    while step > 1 and (m - 1) * step >= size:
        step -= 1
    start = data.draw(st.integers(0, size - max(0, (m - 1) * step) - 1)) if m else 0
    stop = start + m * step
    view = ctx.partner.flatten()[start:stop:step].reshape(shape)
    ref = ctx.partner_ids.reshape(-1)[start:stop:step].reshape(shape)
    if dtype is not ctx.partner.dtype:
        view = view.reinterpret(dtype)
    return view, ref


def op_concat(data, t, a, dtype, ctx):
    if t.rank == 0:
        return None
    dim = draw_dim(data, t.rank)
    kinds = ["slice"] if ctx.alias_free else ["self", "reverse", "slice"]
    if ctx.partner is not None and not (ctx.alias_free and np.isin(a, ctx.partner_ids).any()):
        kinds.append("partner")
    kind = data.draw(st.sampled_from(kinds), label="concat with")
    if kind == "self":
        other = (t, a)
    elif kind == "reverse":
        other = (t.reverse(dim), np.flip(a, dim))
    elif kind == "slice":
        n = t.shape[dim]
        b = data.draw(st.integers(0, n))
        e = data.draw(st.integers(b, n))
        if ctx.alias_free:  # split t in two and put the pieces back in some order
            lo = (t.slice(0, b, dim), np.take(a, range(0, b), dim))
            hi = (t.slice(b, n, dim), np.take(a, range(b, n), dim))
            pieces = [lo, hi] if data.draw(st.booleans()) else [hi, lo]
            return (popsim.concat([p[0] for p in pieces], dim), np.concatenate([p[1] for p in pieces], dim), dtype,
                    f"concat of [0, {b}) and [{b}, {n}) along {dim}")
        other = (t.slice(b, e, dim), np.take(a, range(b, e), dim))
    else:
        shape = list(t.shape)
        shape[dim] = data.draw(st.integers(0, 3))
        other = partner_view(data, ctx, shape, dtype)
        if other is None:
            return None
    if t.num_elements() + other[0].num_elements() > MAX_ELEMENTS:
        return None
    pair = [(t, a), other]
    if data.draw(st.booleans(), label="other first"):
        pair.reverse()
    if data.draw(st.booleans(), label="three pieces") and not ctx.alias_free:
        pair.append(pair[0])
        if sum(p[0].num_elements() for p in pair) > MAX_ELEMENTS:
            return None
    return (popsim.concat([p[0] for p in pair], dim), np.concatenate([p[1] for p in pair], dim), dtype,
            f"concat({kind}, dim={dim}, n={len(pair)})")


def op_append(data, t, a, dtype, ctx):
    if t.rank == 0 or ctx.alias_free or t.num_elements() * 2 > MAX_ELEMENTS:
        return None
    dim = draw_dim(data, t.rank)
    rest = t.shape[:dim] + t.shape[dim + 1:]
    if t.shape[dim] > 0 and (ctx.partner is None or data.draw(st.booleans(), label="append own slice")):
        key = [slice(None)] * t.rank
        key[dim] = data.draw(st.integers(-t.shape[dim], t.shape[dim] - 1))
        second = (t[tuple(key)], a[tuple(key)])
    elif ctx.partner is not None:
        second = partner_view(data, ctx, rest, dtype)
        if second is None:
            return None
    else:
        return None
    return (popsim.append(t, second[0], dim), np.concatenate([a, np.expand_dims(second[1], dim)], dim), dtype,
            f"append(dim={dim})")


OPS = {
    "index": op_index, "index_method": op_index_method, "slice": op_slice, "reshape": op_reshape,
    "reshape_partial": op_reshape_partial, "flatten": op_flatten, "transpose": op_transpose,
    "dim_shuffle": op_dim_shuffle, "dim_shuffle_partial": op_dim_shuffle_partial, "dim_roll": op_dim_roll,
    "expand": op_expand, "squeeze": op_squeeze, "broadcast": op_broadcast, "upsample": op_upsample,
    "reverse": op_reverse, "subsample": op_subsample, "reinterpret": op_reinterpret, "concat": op_concat,
    "append": op_append,
}


ALIAS_FREE_OPS = [k for k in OPS if k not in ("append",)]  # broadcast/upsample/concat limit themselves


def run_chain(data, t, a, ctx=None, min_len=1, max_len=6, on_step=None, dtype=FLOAT):
    """Apply a random chain of view operations to ``t`` and to its numpy ids ``a``, checking
    that they agree after every step; returns the final (view, ids, dtype)."""
    ctx = ctx or Ctx()
    names = ALIAS_FREE_OPS if ctx.alias_free else list(OPS)
    length = data.draw(st.integers(min_len, max_len), label="chain length")
    for _ in range(length):
        name = data.draw(st.sampled_from(names), label="op")
        out = OPS[name](data, t, a, dtype, ctx)
        if out is None:
            continue
        t, a, dtype, desc = out
        note(f"{desc} -> shape {t.shape}")
        assert_matches(t, a, dtype)
        if on_step is not None:
            on_step(t, a)
    return t, a, dtype


def new_graph(tiles_per_ipu=None):
    model = popsim.IPUModel("ipu2")
    if tiles_per_ipu is not None:
        model.tiles_per_ipu = tiles_per_ipu
    device = model.create_device()
    return popsim.Graph(device), device


def variable_with_partner(data, graph, partner=True):
    """The graph's first variable (ids 0..n-1) and maybe a second one (ids from n)."""
    shape = data.draw(shapes, label="shape")
    v = graph.add_variable(FLOAT, shape, "v")
    a = np.arange(prod(shape), dtype=np.int64).reshape(shape)
    ctx = Ctx()
    if partner:
        p = graph.add_variable(FLOAT, (PARTNER_SIZE,), "p")
        ctx = Ctx(p, np.arange(a.size, a.size + PARTNER_SIZE, dtype=np.int64))
    return v, a, ctx
