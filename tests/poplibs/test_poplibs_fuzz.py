"""Fuzzing PopLibs' entry points (popops, poplin, popnn, poprand, poputil; the harness is
tests/api_fuzz.py): wrong types and extreme values raise a PopsimError (PoplibsError is
one) or work; nothing else escapes. popsim's own API: tests/test_api_fuzz.py.

The default run takes a few seconds and sees the same examples every time; a long run,
by hand:

    POPSIM_FUZZ_EXAMPLES=5000 python -m pytest tests/test_api_fuzz.py tests/poplibs/test_poplibs_fuzz.py
"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from popsim import FLOAT, INT, poplin, popnn, popops, poprand, poputil
from popsim.popops import expr as pe

from api_fuzz import Env, Pick, Ref, check_call, entry, fuzz_settings

G, P = Ref("g"), Ref("p")
M, V, D = Ref("m"), Ref("v"), Ref("d")
ADD = popops.ReduceParams(popops.Operation.ADD)

POPOPS = [
    entry("popops.add", lambda env, g, a, b, p: popops.add(g, a, b, p), G, M, M, P),
    entry("popops.add_in_place", lambda env, g, a, b, p: popops.add_in_place(g, a, b, p), G, M, 2.0, P),
    entry("popops.mul_with_output", lambda env, a, b, o: popops.mul_with_output(env.g, a, b, o, env.p), M, M, D),
    entry("popops.exp", lambda env, g, a, p, n: popops.exp(g, a, p, n), G, M, P, "e"),
    entry("popops.abs_in_place", lambda env, a: popops.abs_in_place(env.g, a, env.p), M),
    entry("popops.map", lambda env, g, x, ts, p: popops.map(g, x, ts, p), G, pe._1 * 2.0 + pe._2, [M, D], P),
    entry("popops.map_in_place", lambda env, x, ts: popops.map_in_place(env.g, x, ts, env.p), pe.exp(pe._1), [M]),
    entry("popops expr", lambda env, a, b: popops.map(env.g, pe.add(a, b), [env.m], env.p), pe._1, 1.0),
    entry("pe.Const", lambda env, x: popops.map(env.g, pe._1 + pe.Const(x), [env.m], env.p), 2.0),
    entry("popops.reduce", lambda env, g, t, d, r, p: popops.reduce(g, t, d, r, p), G, M, [0], ADD, P),
    entry("popops.reduce(options)", lambda env, t, d, o: popops.reduce(env.g, t, d, ADD, env.p, options=o), M, [1],
          {"accumType.interTile": "float"}),
    entry("popops.reduce_with_output", lambda env, t, o, d: popops.reduce_with_output(env.g, t, o, d, ADD, env.p),
          M, Ref("row"), [0]),
    entry("popops.ReduceParams", lambda env, op, u, s: popops.reduce(env.g, env.m, [0],
                                                                       popops.ReduceParams(op, u, s), env.p),
          popops.Operation.MUL, False, 1.0),
    entry("popops.cast", lambda env, g, t, d, p: popops.cast(g, t, d, p), G, M, INT, P),
    entry("popops.fill", lambda env, t, x: popops.fill(env.g, t, x, env.p), M, 1.5),
    entry("popops.zero", lambda env, g, t, p: popops.zero(g, t, p), G, M, P),
    entry("popops.scaled_add_to", lambda env, a, b, k: popops.scaled_add_to(env.g, a, b, k, env.p), M, D, 0.5),
    entry("popops.all_true", lambda env, t: popops.all_true(env.g, t, env.p), Ref("b")),
    entry("popops.has_nan", lambda env, t: popops.has_nan(env.g, t, env.p), M),
    entry("popops.iota", lambda env, t, s: popops.iota(env.g, t, s, env.p), Ref("u"), 3),
    entry("popops.pad", lambda env, t, lo, hi, x: popops.pad(env.g, t, lo, hi, x), M, [1, 0], [0, 2], 0.0),
    entry("popops.clamp", lambda env, x, lo, hi: popops.clamp(env.g, x, lo, hi, env.p), M, D, D),
    entry("popops.select", lambda env, a, b, c: popops.select(env.g, a, b, c, env.p), V, V, Ref("b")),
    entry("popops.create_sliceable_tensor",
          lambda env, d, s, ds, ss: popops.create_sliceable_tensor(env.g, d, s, ds, ss), FLOAT, [8, 4], [0], [1]),
    entry("popops.dynamic_slice", lambda env, t, o, d, s: popops.dynamic_slice(env.g, t, o, d, s, env.p),
          M, Ref("off"), [0], [2]),
    entry("popops.dynamic_update", lambda env, t, s, o, d, z: popops.dynamic_update(env.g, t, s, o, d, z, env.p),
          M, Ref("sq"), Ref("off"), [0], [3]),
    entry("popops.multi_slice", lambda env, t, o, d, s: popops.multi_slice(env.g, t, o, d, s, env.p),
          M, Ref("offs"), [0], [1]),
    entry("popops.multi_update_add", lambda env, t, s, o, k: popops.multi_update_add(env.g, t, s, o, k, [0], [1],
                                                                                       env.p),
          M, Ref("slices"), Ref("offs"), 1.0),
    entry("popops.multi_update_max", lambda env, t, s, o: popops.multi_update_max(env.g, t, s, o, [0], [1], env.p),
          M, Ref("slices"), Ref("offs")),
    entry("popops.encode_one_hot", lambda env, i, e, on: popops.encode_one_hot(env.g, i, e, env.p, on),
          Ref("lab"), D, 1),
    entry("popops.encode_one_hot(tensors)", lambda env, e, on: popops.encode_one_hot(
        env.g, env.lab, e, env.p, on[0] if on is env.v else on, env.v[1]), D, V),  # on: v[0], off: v[1]
    entry("popops.reduce(css)", lambda env, t, d, css: popops.reduce(env.g, t, d, ADD, css), M, [0], []),
    entry("popops.gather", lambda env, t, i, a: popops.gather(env.g, t, i, a, env.p), M, Ref("u"), 0),
    entry("popops.sort", lambda env, t, d: popops.sort(env.g, t, d, env.p), M, 1),
    entry("popops.sort_key_value", lambda env, k, v, d: popops.sort_key_value(env.g, k, v, d, env.p), M, D, 1),
    entry("popops.sort_in_place", lambda env, t, d: popops.sort_in_place(env.g, t, d, env.p), M, 0),
    entry("popops.sort_key_value_in_place", lambda env, k, v, d: popops.sort_key_value_in_place(env.g, k, v, d,
                                                                                                 env.p), M, D, 1),
    entry("popops.top_k_with_permutation", lambda env, t, k, big: popops.top_k_with_permutation(
        env.g, env.p, t, popops.TopKParams(k, big)), M, 2, True),
]

POPLIN = [
    entry("poplin.mat_mul", lambda env, g, a, b, p: poplin.mat_mul(g, a, b, p), G, M, Ref("sq"), P),
    entry("poplin.mat_mul K=0", lambda env, a, b, t: poplin.mat_mul(env.g, a, b, env.p, output_type=t),
          Ref("e"), Ref("e2"), FLOAT),
    entry("poplin.mat_mul(options)", lambda env, o: poplin.mat_mul(env.g, env.m, env.sq, env.p, options=o),
          {"partialsType": "float"}),
    entry("poplin.mat_mul_acc", lambda env, c, k, a, b: poplin.mat_mul_acc(env.g, c, k, a, b, env.p),
          D, 0.5, M, Ref("sq")),
    entry("poplin.mat_mul_grouped", lambda env, a, b: poplin.mat_mul_grouped(env.g, a, b, env.p),
          Ref("t3"), Ref("t3t")),
    entry("poplin.create_mat_mul_input_lhs", lambda env, d, a, b: poplin.create_mat_mul_input_lhs(env.g, d, a, b),
          FLOAT, [4, 3], [3, 2]),
    entry("poplin.create_mat_mul_input_rhs", lambda env, d, a, b: poplin.create_mat_mul_input_rhs(env.g, d, a, b),
          FLOAT, [4, 3], [3, 2]),
    entry("poplin.ConvParams", lambda env, *a: poplin.create_input(env.g, poplin.ConvParams(*a)),
          FLOAT, 1, [4, 4], [3, 3], 1, 1),
    entry("poplin.convolution",
          lambda env, k, t: poplin.convolution(env.g, *_conv_tensors(env)[::k], _conv(), t, env.p),
          Pick(1, -1), False),  # -1: input and weights swapped
    entry("poplin.convolution_weight_update", lambda env, k, s: poplin.convolution_weight_update(
        env.g, poplin.create_conv_output(env.g, _conv()), *_conv_tensors(env)[::k], _conv(), s, env.p), -1, 0.5),
    entry("poplin.cholesky", lambda env, a, lower: poplin.cholesky(env.g, a, lower, env.p), Ref("sq"), True),
    entry("poplin.triangular_solve", lambda env, a, b, l1, l2, u: poplin.triangular_solve(env.g, a, b, l1, l2, u,
                                                                                           env.p),
          Ref("sq"), Ref("sq"), True, True, False),
    entry("poplin.add_bias", lambda env, a, b: poplin.add_bias(env.g, a, b, env.p), Ref("t3"), Ref("row")),
    entry("poplin.mat_mul_flops", lambda env, *a: poplin.mat_mul_flops(*a), 1, 4, 3, 2),
    entry("poplin.peak_flops", lambda env, t, d: poplin.peak_flops(t, d), Ref("target"), FLOAT),
]


def _conv():
    return poplin.ConvParams(FLOAT, 1, [4, 4], [3, 3], 1, 1)


def _conv_tensors(env):
    """The input and weights of _conv(), made by poplin as a program would."""
    return poplin.create_input(env.g, _conv()), poplin.create_weights(env.g, _conv())


POPNN = [
    entry("popnn.non_linearity", lambda env, k, t: popnn.non_linearity(env.g, k, t, env.p),
          popnn.NonLinearityType.RELU, M),
    entry("popnn.relu", lambda env, g, t, p: popnn.relu(g, t, p), G, M, P),
    entry("popnn.softmax", lambda env, t: popnn.softmax(env.g, t, env.p), M),
    entry("popnn.log_softmax", lambda env, t, n: popnn.log_softmax(env.g, t, env.p, n), M, "ls"),
    entry("popnn.PoolParams", lambda env, *a: popnn.pool(env.g, popnn.PoolParams(*a), env.t3.reshape([1, 2, 3, 4]),
                                                          env.p),
          popnn.PoolingType.MAX, [3, 4], [2, 2], [1, 1], [0, 0], [0, 0], 2, 1, FLOAT),
    entry("popnn.calc_loss", lambda env, o, y, l, d: popnn.calc_loss(env.g, o, y, l, d), M, Ref("lab"), V, D),
    entry("popnn.calc_accuracy", lambda env, o, y, n: popnn.calc_accuracy(env.g, o, y, n, env.p),
          M, Ref("lab"), Ref("off")),
    entry("popnn.arg_max", lambda env, t: popnn.arg_max(env.g, t, env.p), M),
    entry("popnn.bn.batch_norm_statistics", lambda env, a, eps: popnn.bn.batch_norm_statistics(env.g, a, eps,
                                                                                                env.p),
          Ref("t3"), 1e-5),
]

POPRAND = [
    entry("poprand.uniform", lambda env, s, r, t, lo, hi: poprand.uniform(env.g, s, 1, r, t, lo, hi, env.p),
          Ref("u"), M, FLOAT, 0.0, 1.0),
    entry("poprand.normal", lambda env, m, sd: poprand.normal(env.g, None, 0, env.m, FLOAT, m, sd, env.p), 0.0, 1.0),
    entry("poprand.truncated_normal", lambda env, a: poprand.truncated_normal(env.g, None, 0, env.m, FLOAT, 0.0, 1.0,
                                                                              a, env.p), 2.0),
    entry("poprand.bernoulli", lambda env, r, t, prob: poprand.bernoulli(env.g, None, 0, r, t, prob, env.p),
          M, INT, 0.5),
    entry("poprand.dropout", lambda env, x, k, s: poprand.dropout(env.g, None, 0, x, x, k, s, env.p), M, 0.5, 2.0),
    entry("poprand.set_seed", lambda env, s, m: poprand.set_seed(env.g, s, m, env.p), Ref("u"), 7),
    entry("poprand.log_uniform", lambda env, lo, hi, b: poprand.log_uniform(env.g, None, 0, env.m, FLOAT, lo, hi,
                                                                            env.p, b), 1.0, 4.0, 2.0),
]

POPUTIL = [
    entry("poputil.broadcast_to_match", lambda env, a, b: poputil.broadcast_to_match(a, b), M, Ref("row")),
    entry("poputil.expand_to_match_ranks", lambda env, a, b: poputil.expand_to_match_ranks(a, b), M, V),
    entry("poputil.duplicate", lambda env, g, t, p: poputil.duplicate(g, t, p), G, M, P),
    entry("poputil.map_tensor_linearly", lambda env, g, t, a, b: poputil.map_tensor_linearly(g, t, a, b), G, M, 1, 1),
    entry("poputil.calc_linear_tile_mapping", lambda env, t, a, b, o: poputil.calc_linear_tile_mapping(
        env.g, t, a, b, o), M, 2, 1, 1),
    entry("poputil.split_regions", lambda env, *a: poputil.split_regions(*a), [(0, 10), (12, 20)], 2, 3),
    entry("poputil.split_regions_between_workers", lambda env, t, r, n: poputil.split_regions_between_workers(
        t, r, n), Ref("target"), [(0, 10)], 1),
]


@pytest.mark.parametrize("entries", [POPOPS, POPLIN, POPNN, POPRAND, POPUTIL],
                         ids=["popops", "poplin", "popnn", "poprand", "poputil"])
@given(data=st.data())
@fuzz_settings(40)
def test_poplibs_raise_only_popsim_errors(entries, data):
    check_call(data, entries)


def test_the_fuzzed_calls_work_with_their_good_arguments():
    """Each entry's good call works: the fuzzing starts from calls that build, so an odd
    argument is what any error is about."""
    for e in POPOPS + POPLIN + POPNN + POPRAND + POPUTIL:
        env = Env()
        e.fn(env, *[env.resolve(a.choices[0] if isinstance(a, Pick) else a) for a in e.good])
