"""poprand's ops (PopLibs' include/poprand/RandomGen.hpp): uniform, log_uniform, normal,
truncated_normal, bernoulli and dropout.

Each op clones the reference (its shape and tile mapping; dropout: the input's shape),
splits each tile's elements between the tile's workers (poputil.split_regions_between_workers)
and adds one vertex per contiguous piece, on the tile that holds it, in one compute set.
A vertex is told the flat index of its first element in the reference: what it writes
depends only on the seed state and those indices (codelets.py).
"""
import math
from numbers import Integral, Real

import numpy as np

import popsim
from popsim.program import Execute
from popsim.poputil import PoplibsError, split_regions_between_workers
from popsim.poputil.checks import as_float, check_prog

from . import cycles
from .seed import add_codelets, check_modifier, check_owned, check_seed, op_state

_VERTEX = {"uniform": "poprand::Uniform", "uniform_int": "poprand::Uniform", "normal": "poprand::Normal",
           "truncated_normal": "poprand::TruncatedNormal", "bernoulli": "poprand::Bernoulli",
           "log_uniform": "poprand::LogUniform", "dropout": "poprand::Dropout"}
_PYTHON_TYPES = {float: popsim.FLOAT, int: popsim.INT}


def _out_type(out_type, allowed, op: str):
    """``out_type`` as a popsim type, one of ``allowed``."""
    t = _PYTHON_TYPES.get(out_type, out_type) if isinstance(out_type, type) else out_type
    if not isinstance(t, popsim.Type):
        try:
            dt = np.dtype(t) if isinstance(t, (str, type, np.dtype)) else None
        except TypeError:
            dt = None
        t = next((a for a in allowed if dt is not None and np.dtype(a.numpy) == dt), t)
    if not isinstance(t, popsim.Type) or t not in allowed:
        shown = t.name if isinstance(t, popsim.Type) else f"{type(out_type).__name__} {out_type!r:.40}"
        raise PoplibsError(f"{op}: output type {shown} is not supported; use one of "
                           f"{', '.join(a.name for a in allowed)}")
    return t


def _real(value, what: str, op: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real) \
            or not math.isfinite(as_float(value, op, what)):
        raise PoplibsError(f"{op}: {what} must be a finite number, found {value!r:.60}")
    return float(value)


def _probability(value, what: str, op: str) -> float:
    p = _real(value, what, op)
    if not 0.0 <= p <= 1.0:
        raise PoplibsError(f"{op}: {what} must be a probability in [0, 1], found {value!r}")
    return p


def _check_mapped(graph, tensor, what: str, op: str) -> None:
    """InvalidTileMappingError naming the first elements of ``tensor`` on no tile: the
    output copies the reference's mapping, and vertices go where the elements are."""
    mapping = graph.get_tile_mapping(tensor, require_complete=False)
    covered = sorted(r for regions in mapping for r in regions)
    end = 0
    for begin, stop in covered + [(tensor.num_elements(), tensor.num_elements())]:
        if begin > end:
            raise popsim.InvalidTileMappingError(
                f"{op}: {what} '{tensor.name}' has elements [{end}, {begin}) on no tile of the graph; map it with "
                "graph.set_tile_mapping first (the output takes its tile mapping)")
        end = max(end, stop)


def _add_vertices(graph, kind, out, dtype, state, params, prog, name, inputs=None, alpha=1.0) -> None:
    """One vertex per worker piece of ``out``'s regions on each tile, in one compute set."""
    vertex_type = popsim.template_vertex(_VERTEX[kind], dtype)
    cs = graph.add_compute_set(name)
    flat_out = out.flatten()
    flat_in = None if inputs is None else inputs.flatten()
    grain = graph.target.vector_width(dtype)
    for tile, regions in enumerate(graph.get_tile_mapping(out)):
        if not regions:
            continue
        for piece in split_regions_between_workers(graph.target, regions, grain):
            for begin, end in piece:
                fields = {"out": flat_out[begin:end], "state": state}
                if flat_in is not None:
                    fields["in"] = flat_in[begin:end]
                v = graph.add_vertex(cs, vertex_type, fields)
                graph.set_initial_value(v["offset"], begin)
                for field, value in params.items():
                    graph.set_initial_value(v[field], value)
                graph.set_tile_mapping(v, tile)
                graph.set_perf_estimate(v, cycles.estimate(kind, graph.target, dtype, end - begin, alpha))
    prog.add(Execute(cs))


def _generate(graph, seed, seed_modifier, reference, out_type, allowed, kind, params, prog, name, op, alpha=1.0):
    check_owned(graph, reference, "reference", op)
    if seed is not None:
        check_seed(graph, seed, op)
    modifier = check_modifier(seed_modifier, op)
    check_prog(prog, op)
    dtype = _out_type(out_type, allowed, op)
    if kind == "uniform" and dtype is popsim.INT:
        kind = "uniform_int"
    kind_params = params(dtype) if callable(params) else params
    _check_mapped(graph, reference, "reference", op)
    add_codelets(graph)
    name = name or f"poprand/{op.split('.')[-1]}"
    out = graph.clone(reference, f"{name}/out", dtype=dtype)
    state, after = op_state(graph, seed, modifier, prog, name)
    full = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0, "ilo": 0, "ispan": 0}
    full.update(kind_params)
    _add_vertices(graph, kind, out, dtype, state, full, prog, name, alpha=alpha)
    after()
    return out


_FLOATS = (popsim.FLOAT, popsim.HALF)


def uniform(graph, seed, seed_modifier, reference, out_type, min_val, max_val, prog, name=""):
    """Uniform values in [min_val, max_val) (floats; rounding may reach max_val) or, for
    INT, integers in [min_val, max_val] inclusive, shaped and mapped like ``reference``."""
    op = "poprand.uniform"
    lo, hi = _real(min_val, "min_val", op), _real(max_val, "max_val", op)
    if lo > hi:
        raise PoplibsError(f"{op}: min_val ({min_val!r}) must not be greater than max_val ({max_val!r})")

    def params(dtype):
        if dtype is not popsim.INT:
            return {"a": float(np.float32(hi - lo)), "b": lo}
        for what, v in (("min_val", min_val), ("max_val", max_val)):
            if not (isinstance(v, Integral) or float(v).is_integer()) or not -2 ** 31 <= v < 2 ** 31:
                raise PoplibsError(f"{op}: for INT output {what} must be a 32-bit integer, found {v!r}")
        return {"ilo": int(lo), "ispan": int(hi) - int(lo) + 1}
    return _generate(graph, seed, seed_modifier, reference, out_type, _FLOATS + (popsim.INT,), "uniform", params,
                     prog, name, op)


def log_uniform(graph, seed, seed_modifier, reference, out_type, min_val, max_val, prog, base=math.e, name=""):
    """Values whose logarithm is uniform: exp(ln(min) + u*(ln(max) - ln(min))), u in [0, 1),
    clamped to [min_val, max_val]. The distribution is the same for every ``base`` (PopLibs
    takes it; it must be positive and not 1)."""
    op = "poprand.log_uniform"
    lo, hi = _real(min_val, "min_val", op), _real(max_val, "max_val", op)
    if not 0.0 < lo < hi:
        raise PoplibsError(f"{op}: needs 0 < min_val < max_val, found min_val={min_val!r}, max_val={max_val!r}")
    b = _real(base, "base", op)
    if b <= 0.0 or b == 1.0:
        raise PoplibsError(f"{op}: base must be positive and not 1, found {base!r}")
    params = {"a": math.log(hi) - math.log(lo), "b": math.log(lo), "c": lo, "d": hi}
    return _generate(graph, seed, seed_modifier, reference, out_type, _FLOATS, "log_uniform", params, prog, name,
                     op)


def normal(graph, seed, seed_modifier, reference, out_type, mean, std_dev, prog, name=""):
    """Normal values of ``mean`` and ``std_dev`` (Box-Muller on two Philox words)."""
    op = "poprand.normal"
    m, s = _real(mean, "mean", op), _real(std_dev, "std_dev", op)
    if s < 0.0:
        raise PoplibsError(f"{op}: std_dev must not be negative, found {std_dev!r}")
    return _generate(graph, seed, seed_modifier, reference, out_type, _FLOATS, "normal", {"a": s, "b": m}, prog,
                     name, op)


def truncated_normal(graph, seed, seed_modifier, reference, out_type, mean, std_dev, alpha, prog, name=""):
    """Normal values of ``mean`` and ``std_dev`` truncated to mean +- alpha*std_dev (by
    rejection: exact, not PopLibs' triangular fill-in)."""
    op = "poprand.truncated_normal"
    m, s, a = _real(mean, "mean", op), _real(std_dev, "std_dev", op), _real(alpha, "alpha", op)
    if s < 0.0:
        raise PoplibsError(f"{op}: std_dev must not be negative, found {std_dev!r}")
    if a <= 0.0:
        raise PoplibsError(f"{op}: alpha must be positive, found {alpha!r}")
    return _generate(graph, seed, seed_modifier, reference, out_type, _FLOATS, "truncated_normal",
                     {"a": s, "b": m, "c": a}, prog, name, op, alpha=a)


def bernoulli(graph, seed, seed_modifier, reference, out_type, prob, prog, name=""):
    """1 with probability ``prob``, else 0."""
    op = "poprand.bernoulli"
    p = _probability(prob, "prob", op)
    return _generate(graph, seed, seed_modifier, reference, out_type, _FLOATS + (popsim.INT,), "bernoulli",
                     {"c": p}, prog, name, op)


def dropout(graph, seed, seed_modifier, input, reference, keep_probability, scale, prog, name="",  # noqa: A002 - PopLibs' name
            output_clones_ref=True):
    """``input * scale`` where a uniform draw is below ``keep_probability``, else 0. The
    draws follow ``reference`` (same shape as ``input``); the output is a clone of the
    reference (or of the input with ``output_clones_ref=False``)."""
    op = "poprand.dropout"
    check_owned(graph, input, "input", op)
    check_owned(graph, reference, "reference", op)
    if tuple(input.shape) != tuple(reference.shape):
        raise PoplibsError(f"{op}: input '{input.name}' has shape {list(input.shape)} but reference "
                           f"'{reference.name}' has shape {list(reference.shape)}; they must be the same")
    if seed is not None:
        check_seed(graph, seed, op)
    modifier = check_modifier(seed_modifier, op)
    keep = _probability(keep_probability, "keep_probability", op)
    factor = _real(scale, "scale", op)
    check_prog(prog, op)
    if input.dtype not in _FLOATS:
        raise PoplibsError(f"{op}: input '{input.name}' is {input.dtype.name}; dropout takes FLOAT or HALF")
    _check_mapped(graph, reference if output_clones_ref else input, "reference" if output_clones_ref else "input",
                  op)
    add_codelets(graph)
    name = name or "poprand/dropout"
    out = graph.clone(reference if output_clones_ref else input, f"{name}/out", dtype=input.dtype)
    state, after = op_state(graph, seed, modifier, prog, name)
    _add_vertices(graph, "dropout", out, input.dtype, state, {"keep": keep, "scale": factor}, prog, name,
                  inputs=input)
    after()
    return out
