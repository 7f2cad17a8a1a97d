"""popnn.gru: PopLibs' basic GRU layer (popnn/Gru.hpp) over a sequence: forward, backward
(BPTT) and weight update.

Per step, with the gates in ``params.cell_order`` (RESET, UPDATE, CANDIDATE by default),
``act`` = params.activation (TANH) and ``rec`` = params.recurrent_activation (SIGMOID)::

    r = rec(x W_r + h_prev U_r + b_r)        u = rec(x W_u + h_prev U_u + b_u)
    c = act(x W_c + (r * h_prev) U_c + b_c)                      (reset before, default)
    c = act(x W_c + b_c + r * (h_prev U_c + b'_c))               (params.reset_after)
    h = u * h_prev + (1 - u) * c

With reset_after the biases are [3, 2, out]: [:, 0] added to the weighted input, [:, 1]
(the recurrent biases b') to the weighted previous output; otherwise [3, out].

Built like popnn.lstm (see there): the input weighted for all steps by one matmul up
front, then a device loop over time with poplin.mat_mul for the recurrent weights and
popops element-wise ops and map expressions for the gates. Forward intermediates, [T, K,
B, out]: reset gate, update gate, candidate (PopLibs' FwdIntermediates), then the
weighted previous output of the candidate (h_prev U_c + b'_c) with reset_after, then the
output h without output_full_sequence. Backward intermediates, [T, 3 (4), B, out]: the
gradients at the gates' input pre-activations in cell order, then with reset_after the
gradient at the candidate's recurrent pre-activation.
"""
import enum
from dataclasses import dataclass
from typing import List

import popsim
from popsim import FLOAT, HALF
from popsim.program import Copy

from .. import poplin, popops
from ..popops import expr as pe
from ..poputil import PoplibsError
from ..poputil.checks import check_prog
from . import rnn_util as ru


class BasicGruCellUnit(enum.IntEnum):
    """PopLibs' BasicGruCellUnit (BASIC_GRU_CELL_RESET_GATE ...)."""
    RESET_GATE = 0
    UPDATE_GATE = 1
    CANDIDATE = 2
    RESET = 0
    UPDATE = 1


NUM_UNITS = 3


def get_default_basic_gru_cell_order() -> List[BasicGruCellUnit]:
    """[RESET, UPDATE, CANDIDATE] (PopLibs' getDefaultBasicGruCellOrder)."""
    return [BasicGruCellUnit.RESET_GATE, BasicGruCellUnit.UPDATE_GATE, BasicGruCellUnit.CANDIDATE]


class GruParams(ru.RnnParams):
    """PopLibs' GruParams (layer_sizes = [input_size, output_size]), with
    output_full_sequence, calc_input_gradients, cell_order and reset_after to set as
    attributes."""

    default_cell_order = staticmethod(get_default_basic_gru_cell_order)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reset_after = False
        check_params(self, "popnn.gru.GruParams")

    def _extra_repr(self) -> str:
        return f", reset_after={self.reset_after}"


@dataclass
class GruWeights:
    """input_weights [3, in, out], output_weights [3, out, out], biases [3, out] ([3, 2, out]
    with reset_after), gates in the params' cell order; or the gradients of those."""
    input_weights: popsim.Tensor
    output_weights: popsim.Tensor
    biases: popsim.Tensor


def check_params(params, what: str):
    ru.check_common_params(params, GruParams, NUM_UNITS, what)
    if not isinstance(params.reset_after, bool):
        raise PoplibsError(f"{what}: params.reset_after must be True or False, found {params.reset_after!r}")
    return ru.activation_names(params, what)

def _bias_shape(params):
    return (NUM_UNITS, 2, params.output_size) if params.reset_after else (NUM_UNITS, params.output_size)


def _check_weights(graph, params, weights, what: str):
    if not isinstance(weights, GruWeights):
        raise popsim.TypeError(f"{what}: expected popnn.gru.GruWeights as the weights, found {type(weights).__name__}")
    n_in, n_out, dt = params.input_size, params.output_size, params.data_type
    ru.check_shape(graph, weights.input_weights, (NUM_UNITS, n_in, n_out), dt, what, "weights.input_weights",
                   "[3 gates, input_size, output_size]")
    ru.check_shape(graph, weights.output_weights, (NUM_UNITS, n_out, n_out), dt, what, "weights.output_weights",
                   "[3 gates, output_size, output_size]")
    layout = "[3 gates, 2 (input, recurrent), output_size] (reset_after)" if params.reset_after else \
        "[3 gates, output_size]"
    ru.check_shape(graph, weights.biases, _bias_shape(params), dt, what, "weights.biases", layout)


def _check_state(graph, params, state, what: str, role: str = "init_state"):
    ru.check_shape(graph, state, (params.batch_size, params.output_size), params.data_type, what, role,
                   "[batch_size, output_size]")


def _num_intermediates(params) -> int:
    return 3 + int(params.reset_after) + int(not params.output_full_sequence)


def _check_intermediates(graph, params, inter, what: str):
    ru.check_intermediates(graph, params, inter, _num_intermediates(params), "gru_fwd", what)


def _num_grads(params) -> int:
    return NUM_UNITS + int(params.reset_after)


def _check_bwd_intermediates(graph, params, t, what: str):
    k = _num_grads(params)
    ru.check_shape(graph, t, (params.time_steps, k, params.batch_size, params.output_size), params.data_type, what,
                   "bwd_intermediates", f"[time_steps, {k}, batch_size, output_size] (gru_bwd's third result)")


_CHECKS = ru.LayerChecks(check_params, _check_state, _check_weights, _check_intermediates, _check_bwd_intermediates)


def _select(w, units):
    """Gates ``units`` of per-gate weights [3, rows, out] as [len(units), rows, out]."""
    return popsim.concat([w.slice(u, u + 1, 0) for u in units], 0)


# ---- creating tensors ---------------------------------------------------------------------------------------------

def create_input(graph, params, name: str = "", options=None):
    """The input [time_steps, batch_size, input_size], each step mapped linearly."""
    ru.creating(graph, params, options, check_params, "popnn.gru.create_input")
    return ru.create_input(graph, params, name or "gru/input")


def create_initial_state(graph, params, name: str = "", options=None):
    """The initial output [batch_size, output_size], mapped linearly."""
    ru.creating(graph, params, options, check_params, "popnn.gru.create_initial_state")
    return ru.state_tensor(graph, params.data_type, (params.batch_size, params.output_size),
                           f"{name or 'gru'}/initialOutput")


def zero_initial_state(graph, init_output, prog, name: str = "") -> None:
    """Zero the initial output."""
    check_prog(prog, "popnn.gru.zero_initial_state")
    popops.zero(graph, init_output, prog, name or "gru/zeroInitialState")


def create_weights_kernel(graph, params, name: str = "", options=None):
    """(input_weights [3, in, out], output_weights [3, out, out]): slices of one matmul
    right-hand side [in + out, 3 * out]."""
    opts = ru.creating(graph, params, options, check_params, "popnn.gru.create_weights_kernel")
    return ru.create_kernel(graph, params, NUM_UNITS, f"{name or 'gru'}/weights", opts)


def create_weights_biases(graph, params, name: str = "", options=None):
    """The biases [3, output_size] ([3, 2, output_size] with reset_after), mapped linearly."""
    ru.creating(graph, params, options, check_params, "popnn.gru.create_weights_biases")
    return ru.state_tensor(graph, params.data_type, _bias_shape(params), f"{name or 'gru'}/biases")


def create_weights(graph, params, name: str = "", options=None) -> GruWeights:
    """GruWeights: create_weights_kernel's two tensors and create_weights_biases'."""
    w_in, w_out = create_weights_kernel(graph, params, name, options)
    return GruWeights(w_in, w_out, create_weights_biases(graph, params, name, options))


# ---- forward ------------------------------------------------------------------------------------------------------

def gru_fwd(graph, params, init_state, input, weights, prog, name: str = "", options=None,  # noqa: A002
            return_intermediates: bool = False):
    """The GRU over ``input`` [T, B, in] from the initial output ``init_state`` [B, out]:
    the output [T, B, out] (the last step's [B, out] without output_full_sequence); with
    ``return_intermediates`` (output, intermediates) for gru_bwd and gru_wu."""
    what = "popnn.gru.gru_fwd"
    act_name, rec_name = _CHECKS.fwd(graph, params, prog, what, init_state, input, weights)
    opts = ru.parse_options(options, what)
    T, B, n_in, n_out, dt = ru.sizes(params)
    base = name or "gru"
    mm = ru.mat_mul_options(opts, "INFERENCE_FWD" if opts.get("inferenceOnly") == "true" else "TRAINING_FWD")
    pos = ru.gate_positions(params, NUM_UNITS)
    R, Uu, C = pos[BasicGruCellUnit.RESET_GATE], pos[BasicGruCellUnit.UPDATE_GATE], pos[BasicGruCellUnit.CANDIDATE]
    in_bias = weights.biases[:, 0] if params.reset_after else weights.biases

    weighted_seq = ru.weigh_input(graph, params, input, weights.input_weights, in_bias, NUM_UNITS, prog, base, mm)
    h = ru.state_tensor(graph, dt, (B, n_out), f"{base}/output")
    prog.add(Copy(init_state, h))
    out_seq, inter = ru.fwd_sequences(graph, params, _num_intermediates(params), return_intermediates, base)

    loop = ru.TimeLoop(graph, T, f"{base}/fwd")
    body = loop.body
    wx = loop.slice(weighted_seq, "weightedInput").reshape([B, NUM_UNITS, n_out])
    saved = []
    if params.reset_after:
        rec = poplin.mat_mul(graph, h, ru.units_matrix(weights.output_weights), body, f"{base}/weighOutput", mm)
        rec = rec.reshape([B, NUM_UNITS, n_out])
        popops.add_in_place(graph, rec, weights.biases[:, 1], body, f"{base}/addRecurrentBias")
        ru_gates = popops.map(graph, ru.act(rec_name, pe._1 + pe._2), [ru.gates(rec, [R, Uu]), ru.gates(wx, [R, Uu])],
                              body, f"{base}/gateActivation")
        r, u = ru_gates[:, 0], ru_gates[:, 1]
        cand = popops.map(graph, ru.act(act_name, pe._1 + pe._2 * pe._3), [ru.gate(wx, C), r, ru.gate(rec, C)], body,
                          f"{base}/candidate")
        saved = [r, u, cand, ru.gate(rec, C)]
    else:
        ru_units = poplin.mat_mul(graph, h, ru.units_matrix(_select(weights.output_weights, [R, Uu])), body,
                                  f"{base}/weighOutput", mm).reshape([B, 2, n_out])
        popops.add_in_place(graph, ru_units, ru.gates(wx, [R, Uu]), body, f"{base}/addWeightedInput")
        ru.activate_in_place(graph, rec_name, ru_units, body, f"{base}/gateActivation")
        r, u = ru_units[:, 0], ru_units[:, 1]
        rh = popops.mul(graph, r, h, body, f"{base}/resetGate")
        cand_pre = poplin.mat_mul(graph, rh, weights.output_weights[C], body, f"{base}/weighCandidate", mm)
        cand = popops.map(graph, ru.act(act_name, pe._1 + pe._2), [cand_pre, ru.gate(wx, C)], body,
                          f"{base}/candidate")
        saved = [r, u, cand]
    h_new = popops.map(graph, pe._1 + pe._2 * (pe._3 - pe._1), [cand, u, h], body, f"{base}/nextOutput")
    ru.save_step(loop, params, out_seq, inter, saved, h_new)
    body.add(Copy(h_new, h))
    loop.close(prog)
    output = out_seq if out_seq is not None else h
    return (output, inter) if return_intermediates else output


# ---- backward and weight update ----------------------------------------------------------------------------------

def _outputs(params, output, intermediates):
    return output if params.output_full_sequence else intermediates[:, _num_intermediates(params) - 1]


def gru_bwd(graph, params, prog, init_state, intermediates, weights, input, output, output_grad,  # noqa: A002
            name: str = "", options=None):
    """Backpropagation through time: (init_state_grad [B, out], input_grad [T, B, in] or
    None without params.calc_input_gradients, bwd_intermediates [T, 3 (4), B, out])."""
    what = "popnn.gru.gru_bwd"
    act_name, rec_name = _CHECKS.bwd(graph, params, prog, what, init_state, intermediates, weights, input, output,
                                     output_grad)
    opts = ru.parse_options(options, what)
    T, B, n_in, n_out, dt = ru.sizes(params)
    base = name or "gru"
    mm = ru.mat_mul_options(opts, "TRAINING_BWD")
    pos = ru.gate_positions(params, NUM_UNITS)
    R, Uu, C = pos[BasicGruCellUnit.RESET_GATE], pos[BasicGruCellUnit.UPDATE_GATE], pos[BasicGruCellUnit.CANDIDATE]
    n_grads = _num_grads(params)

    dh = ru.state_tensor(graph, dt, (B, n_out), f"{base}/outputGrad")
    ru.init_output_grad(graph, params, dh, output_grad, prog, base)
    grads_seq = ru.sequence_tensor(graph, dt, T, (B, n_grads * n_out), f"{base}/bwdIntermediates")
    h_prev_seq = ru.previous_outputs(init_state, _outputs(params, output, intermediates))

    loop = ru.TimeLoop(graph, T, f"{base}/bwd", reverse=True)
    body = loop.body
    saved = loop.slice(intermediates, "intermediates")
    r, u, cand = saved[0], saved[1], saved[2]
    h_prev = loop.slice(h_prev_seq, "prevOutput")
    dh_t = ru.step_output_grad(graph, params, loop, dh, output_grad, base)
    grads = ru.state_tensor(graph, dt, (B, n_grads * n_out), f"{base}/gateGrads")
    g3 = grads.reshape([B, n_grads, n_out])
    d_c, d_u, d_r = ru.gate(g3, C), ru.gate(g3, Uu), ru.gate(g3, R)
    popops.map_with_output(graph, pe._1 * (1.0 - pe._2) * ru.act_grad(act_name, pe._3, dt), [dh_t, u, cand], d_c,
                           body, f"{base}/candidateGrad")
    popops.map_with_output(graph, pe._1 * (pe._2 - pe._3) * ru.act_grad(rec_name, pe._4, dt), [dh_t, h_prev, cand, u],
                           d_u, body, f"{base}/updateGateGrad")
    rec_grad = pe._1 * pe._2 * ru.act_grad(rec_name, pe._3, dt)
    if params.reset_after:
        d_rec_c = ru.gate(g3, NUM_UNITS)
        popops.mul_with_output(graph, d_c, r, d_rec_c, body, f"{base}/candidateRecurrentGrad")
        popops.map_with_output(graph, rec_grad, [d_c, saved[3], r], d_r, body, f"{base}/resetGateGrad")
        rec_units = [NUM_UNITS if k == C else k for k in range(NUM_UNITS)]
        recurrent = poplin.mat_mul(graph, ru.gates(g3, rec_units).reshape([B, NUM_UNITS * n_out]),
                                   ru.units_matrix(weights.output_weights).transpose(), body, f"{base}/prevStepGrad",
                                   mm)
        dh_new = popops.map(graph, pe._1 + pe._2 * pe._3, [recurrent, dh_t, u], body, f"{base}/prevOutputGrad")
    else:
        d_rh = poplin.mat_mul(graph, d_c, weights.output_weights[C].transpose(), body, f"{base}/resetOutputGrad", mm)
        popops.map_with_output(graph, rec_grad, [d_rh, h_prev, r], d_r, body, f"{base}/resetGateGrad")
        recurrent = poplin.mat_mul(graph, ru.gates(g3, [R, Uu]).reshape([B, 2 * n_out]),
                                   ru.units_matrix(_select(weights.output_weights, [R, Uu])).transpose(), body,
                                   f"{base}/prevStepGrad", mm)
        dh_new = popops.map(graph, pe._1 + pe._2 * pe._3 + pe._4 * pe._5, [recurrent, dh_t, u, d_rh, r], body,
                            f"{base}/prevOutputGrad")
    body.add(Copy(dh_new, dh))
    loop.update(grads_seq, grads, "saveGateGrads")
    loop.close(prog)

    grads4 = grads_seq.reshape([T, B, n_grads, n_out])
    input_grad = None
    if params.calc_input_gradients:
        d_in = grads4.slice(0, NUM_UNITS, 2).reshape([T * B, NUM_UNITS * n_out])
        input_grad = poplin.mat_mul(graph, d_in, ru.units_matrix(weights.input_weights).transpose(), prog,
                                    f"{base}/inputGrad", mm).reshape([T, B, n_in])
    return dh, input_grad, grads4.dim_shuffle([0, 2, 1, 3])


def gru_wu(graph, params, prog, init_state, intermediates, bwd_intermediates, weights, input, output,  # noqa: A002
           name: str = "", options=None) -> GruWeights:
    """The weight and bias gradients (GruWeights) from gru_bwd's bwd_intermediates."""
    what = "popnn.gru.gru_wu"
    _CHECKS.wu(graph, params, prog, what, init_state, intermediates, bwd_intermediates, weights, input, output)
    opts = ru.parse_options(options, what)
    return _weight_grads(graph, params, prog, init_state, intermediates, bwd_intermediates, input, output, opts,
                         name or "gru")


def _weight_grads(graph, params, prog, init_state, intermediates, bwd_intermediates, input, output,  # noqa: A002
                  opts, base) -> GruWeights:
    T, B, n_in, n_out, dt = ru.sizes(params)
    acc = FLOAT if opts.get("weightAccumulatorsType", dt.name.lower()) == "float" else HALF
    mm = ru.mat_mul_options(opts, "TRAINING_WU")
    pos = ru.gate_positions(params, NUM_UNITS)
    R, Uu, C = pos[BasicGruCellUnit.RESET_GATE], pos[BasicGruCellUnit.UPDATE_GATE], pos[BasicGruCellUnit.CANDIDATE]
    grads = bwd_intermediates.dim_shuffle([0, 2, 1, 3])                       # [T, B, k, out]
    d_in = grads.slice(0, NUM_UNITS, 2)
    flat_in = d_in.reshape([T * B, NUM_UNITS * n_out])
    h_prev_seq = ru.previous_outputs(init_state, _outputs(params, output, intermediates))
    h_prev = h_prev_seq.reshape([T * B, n_out])
    d_w_in = poplin.mat_mul(graph, input.reshape([T * B, n_in]).transpose(), flat_in, prog,
                            f"{base}/inputWeightsGrad", mm, output_type=acc)
    d_w_in = d_w_in.reshape([n_in, NUM_UNITS, n_out]).dim_roll(1, 0)
    if acc != dt:
        grads = popops.cast(graph, grads, acc, prog, f"{base}/castGrads")
        d_in = grads.slice(0, NUM_UNITS, 2)
    if params.reset_after:
        rec_units = [NUM_UNITS if k == C else k for k in range(NUM_UNITS)]
        d_rec = ru.gates(bwd_intermediates.dim_shuffle([0, 2, 1, 3]).reshape([T * B, NUM_UNITS + 1, n_out]),
                         rec_units)
        d_w_out = poplin.mat_mul(graph, h_prev.transpose(), d_rec.reshape([T * B, NUM_UNITS * n_out]), prog,
                                 f"{base}/outputWeightsGrad", mm, output_type=acc)
        d_w_out = d_w_out.reshape([n_out, NUM_UNITS, n_out]).dim_roll(1, 0)
        sums = ru.sum_over_steps_and_batch(graph, grads, prog, f"{base}/biasesGrad")       # [4, out]
        rec_sums = ru.gates(sums.expand([0]), rec_units).squeeze([0])
        d_b = popsim.concat([sums.slice(0, NUM_UNITS, 0).expand([1]), rec_sums.expand([1])], 1)
    else:
        d_ru = ru.gates(bwd_intermediates.dim_shuffle([0, 2, 1, 3]).reshape([T * B, NUM_UNITS, n_out]), [R, Uu])
        d_w_ru = poplin.mat_mul(graph, h_prev.transpose(), d_ru.reshape([T * B, 2 * n_out]), prog,
                                f"{base}/gateWeightsGrad", mm, output_type=acc).reshape([n_out, 2, n_out])
        rh = popops.mul(graph, intermediates[:, 0], h_prev_seq, prog, f"{base}/resetOutput")
        d_w_c = poplin.mat_mul(graph, rh.reshape([T * B, n_out]).transpose(),
                               bwd_intermediates[:, C].reshape([T * B, n_out]), prog, f"{base}/candidateWeightsGrad",
                               mm, output_type=acc)
        pieces = {R: d_w_ru[:, 0], Uu: d_w_ru[:, 1], C: d_w_c}
        d_w_out = popsim.concat([pieces[k].expand([0]) for k in range(NUM_UNITS)], 0)
        d_b = ru.sum_over_steps_and_batch(graph, d_in, prog, f"{base}/biasesGrad")
    return GruWeights(d_w_in, d_w_out, d_b)


def gru_bwd_with_wu(graph, params, prog, init_state, intermediates, weights, input, output,  # noqa: A002
                    output_grad, name: str = "", options=None):
    """gru_bwd then gru_wu: (init_state_grad, input_grad, weights_grad GruWeights)."""
    state_grad, input_grad, bwd = gru_bwd(graph, params, prog, init_state, intermediates, weights, input, output,
                                          output_grad, name, options)
    opts = ru.parse_options(options, "popnn.gru.gru_bwd_with_wu")
    return state_grad, input_grad, _weight_grads(graph, params, prog, init_state, intermediates, bwd, input, output,
                                                 opts, name or "gru")


__all__ = ["BasicGruCellUnit", "GruParams", "GruWeights", "create_initial_state", "create_input", "create_weights",
           "create_weights_biases", "create_weights_kernel", "get_default_basic_gru_cell_order", "gru_bwd",
           "gru_bwd_with_wu", "gru_fwd", "gru_wu", "zero_initial_state"]
