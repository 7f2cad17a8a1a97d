"""popnn.lstm: PopLibs' basic LSTM layer (popnn/Lstm.hpp) over a sequence: forward,
backward (BPTT) and weight update.

Per step, with the gates in ``params.cell_order`` (FORGET, INPUT, CANDIDATE, OUTPUT by
default), ``act`` = params.activation (TANH) and ``rec`` = params.recurrent_activation
(SIGMOID)::

    f, i, o = rec(x W_x + h_prev W_h + b)    g = act(x W_x + h_prev W_h + b)
    c = f * c_prev + i * g                    h = o * act(c)

Built as PopLibs builds it: the input is weighted for all steps by one matmul up front
(the biases added as it is copied into the per-step layout), then a device loop over time
(rnn_util.TimeLoop) whose body multiplies h_prev by the output weights (poplin.mat_mul),
applies the gate activations in place and updates the cell with popops element-wise ops
and map expressions. The forward intermediates are PopLibs' (Lstm.cpp FwdIntermediates,
recomputation mode "none"): [T, 6, B, out] = forget, input, candidate, output gate,
act(c), c_prev, plus the output h when output_full_sequence is false. The backward
intermediates are the gradients at the gates' pre-activations, [T, 4, B, out] in cell
order; the weight update turns them into weight and bias gradients with one matmul per
weight matrix over all steps and one reduction for the biases.
"""
import enum
from dataclasses import dataclass
from typing import List

import popsim
from popsim import FLOAT, HALF
from popsim.program import Copy

from .. import poplin, popops
from ..popops import expr as pe
from ..poputil.checks import check_prog
from . import rnn_util as ru


class BasicLstmCellUnit(enum.IntEnum):
    """PopLibs' BasicLstmCellUnit (BASIC_LSTM_CELL_FORGET_GATE ...)."""
    FORGET_GATE = 0
    INPUT_GATE = 1
    CANDIDATE = 2
    OUTPUT_GATE = 3
    FORGET = 0
    INPUT = 1
    OUTPUT = 3


NUM_UNITS = 4
#: PopLibs' FwdIntermediates, in order (OUTPUT only without output_full_sequence)
FWD_INTERMEDIATES = ("FORGET_GATE", "INPUT_GATE", "CAND_TANH", "OUTPUT_GATE", "OUTPUT_TANH",
                     "PREV_CELL_STATE", "OUTPUT")


def get_default_basic_lstm_cell_order() -> List[BasicLstmCellUnit]:
    """[FORGET, INPUT, CANDIDATE, OUTPUT] (PopLibs' getDefaultBasicLstmCellOrder)."""
    return [BasicLstmCellUnit.FORGET_GATE, BasicLstmCellUnit.INPUT_GATE, BasicLstmCellUnit.CANDIDATE,
            BasicLstmCellUnit.OUTPUT_GATE]


class LstmParams(ru.RnnParams):
    """PopLibs' LstmParams: the layer's type and sizes (layer_sizes = [input_size,
    output_size]), with output_full_sequence, calc_input_gradients and cell_order to set
    as attributes."""

    default_cell_order = staticmethod(get_default_basic_lstm_cell_order)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        check_params(self, "popnn.lstm.LstmParams")


@dataclass
class LstmState:
    """The recurrent state: output h and cell state c, each [B, output_size]."""
    output: popsim.Tensor
    cell: popsim.Tensor

    @property
    def cell_state(self):
        """PopLibs' name for ``cell``."""
        return self.cell


@dataclass
class LstmWeights:
    """input_weights [4, in, out], output_weights [4, out, out], biases [4, out] (gates in
    the params' cell order), or the gradients of those."""
    input_weights: popsim.Tensor
    output_weights: popsim.Tensor
    biases: popsim.Tensor


def check_params(params, what: str):
    ru.check_common_params(params, LstmParams, NUM_UNITS, what)
    return ru.activation_names(params, what)

def _check_weights(graph, params, weights, what: str, role: str = "weights"):
    if not isinstance(weights, LstmWeights):
        raise popsim.TypeError(f"{what}: expected popnn.lstm.LstmWeights as the {role}, found {type(weights).__name__}")
    n_in, n_out, dt = params.input_size, params.output_size, params.data_type
    ru.check_shape(graph, weights.input_weights, (NUM_UNITS, n_in, n_out), dt, what, f"{role}.input_weights",
                   "[4 gates, input_size, output_size]")
    ru.check_shape(graph, weights.output_weights, (NUM_UNITS, n_out, n_out), dt, what,
                   f"{role}.output_weights", "[4 gates, output_size, output_size]")
    ru.check_shape(graph, weights.biases, (NUM_UNITS, n_out), dt, what, f"{role}.biases",
                   "[4 gates, output_size]")


def _check_state(graph, params, state, what: str, role: str = "init_state"):
    if not isinstance(state, LstmState):
        raise popsim.TypeError(f"{what}: expected popnn.lstm.LstmState as the {role}, found {type(state).__name__}")
    shape = (params.batch_size, params.output_size)
    for field in ("output", "cell"):
        ru.check_shape(graph, getattr(state, field), shape, params.data_type, what, f"{role}.{field}",
                       "[batch_size, output_size]")


def _num_intermediates(params) -> int:
    return 6 if params.output_full_sequence else 7


def _check_intermediates(graph, params, inter, what: str):
    ru.check_intermediates(graph, params, inter, _num_intermediates(params), "lstm_fwd", what)


def _check_bwd_intermediates(graph, params, t, what: str):
    ru.check_shape(graph, t, (params.time_steps, NUM_UNITS, params.batch_size, params.output_size),
                   params.data_type, what, "bwd_intermediates",
                   "[time_steps, 4 gates, batch_size, output_size] (lstm_bwd's third result)")


_CHECKS = ru.LayerChecks(check_params, _check_state, _check_weights, _check_intermediates, _check_bwd_intermediates)


# ---- creating tensors ---------------------------------------------------------------------------------------------

def create_input(graph, params, name: str = "", options=None):
    """The input [time_steps, batch_size, input_size], each step mapped linearly."""
    ru.creating(graph, params, options, check_params, "popnn.lstm.create_input")
    return ru.create_input(graph, params, name or "lstm/input")


def create_initial_state(graph, params, name: str = "", options=None) -> LstmState:
    """An LstmState of two [batch_size, output_size] variables, mapped linearly."""
    ru.creating(graph, params, options, check_params, "popnn.lstm.create_initial_state")
    shape, base = (params.batch_size, params.output_size), name or "lstm"
    return LstmState(ru.state_tensor(graph, params.data_type, shape, f"{base}/initialOutput"),
                     ru.state_tensor(graph, params.data_type, shape, f"{base}/initialCellState"))


def zero_initial_state(graph, state: LstmState, prog, name: str = "") -> None:
    """Zero both parts of ``state``."""
    what = "popnn.lstm.zero_initial_state"
    check_prog(prog, what)
    if not isinstance(state, LstmState):
        raise popsim.TypeError(f"{what}: expected popnn.lstm.LstmState, found {type(state).__name__}")
    popops.zero(graph, popsim.concat([state.output.flatten(), state.cell.flatten()]), prog,
                name or "lstm/zeroInitialState")


def create_weights_kernel(graph, params, name: str = "", options=None):
    """(input_weights [4, in, out], output_weights [4, out, out]): slices of one matmul
    right-hand side [in + out, 4 * out], as PopLibs creates them."""
    opts = ru.creating(graph, params, options, check_params, "popnn.lstm.create_weights_kernel")
    return ru.create_kernel(graph, params, NUM_UNITS, f"{name or 'lstm'}/weights", opts)


def create_weights_biases(graph, params, name: str = "", options=None):
    """The biases [4, output_size], mapped linearly."""
    ru.creating(graph, params, options, check_params, "popnn.lstm.create_weights_biases")
    return ru.state_tensor(graph, params.data_type, (NUM_UNITS, params.output_size), f"{name or 'lstm'}/biases")


def create_weights(graph, params, name: str = "", options=None) -> LstmWeights:
    """LstmWeights: create_weights_kernel's two tensors and create_weights_biases'."""
    w_in, w_out = create_weights_kernel(graph, params, name, options)
    return LstmWeights(w_in, w_out, create_weights_biases(graph, params, name, options))


# ---- forward ------------------------------------------------------------------------------------------------------

def lstm_fwd(graph, params, init_state, input, weights, prog, name: str = "", options=None,  # noqa: A002
             return_intermediates: bool = False):
    """The LSTM over the sequence ``input`` [T, B, in] from ``init_state``: (output, cell)
    with output [T, B, out] (or the last step's [B, out] without output_full_sequence) and
    the final cell state [B, out]; with ``return_intermediates`` also PopLibs'
    intermediatesSeq [T, 6 (7), B, out] that lstm_bwd and lstm_wu take."""
    what = "popnn.lstm.lstm_fwd"
    act_name, rec_name = _CHECKS.fwd(graph, params, prog, what, init_state, input, weights)
    opts = ru.parse_options(options, what)
    T, B, n_in, n_out, dt = ru.sizes(params)
    base = name or "lstm"
    fc = "INFERENCE_FWD" if opts.get("inferenceOnly") == "true" else "TRAINING_FWD"
    mm = ru.mat_mul_options(opts, fc)
    pos = ru.gate_positions(params, NUM_UNITS)
    U = BasicLstmCellUnit

    weighted_seq = ru.weigh_input(graph, params, input, weights.input_weights, weights.biases, NUM_UNITS, prog, base,
                                  mm)
    h = ru.state_tensor(graph, dt, (B, n_out), f"{base}/output")
    c = ru.state_tensor(graph, dt, (B, n_out), f"{base}/cellState")
    prog.add(Copy(init_state.output, h))
    prog.add(Copy(init_state.cell, c))
    out_seq, inter = ru.fwd_sequences(graph, params, _num_intermediates(params), return_intermediates, base)

    loop = ru.TimeLoop(graph, T, f"{base}/fwd")
    body = loop.body
    units = poplin.mat_mul(graph, h, ru.units_matrix(weights.output_weights), body, f"{base}/weighOutput", mm)
    popops.add_in_place(graph, units, loop.slice(weighted_seq, "weightedInput"), body, f"{base}/addWeightedInput")
    units = units.reshape([B, NUM_UNITS, n_out])
    sig = ru.gates(units, [pos[U.FORGET_GATE], pos[U.INPUT_GATE], pos[U.OUTPUT_GATE]])
    ru.activate_in_place(graph, rec_name, sig, body, f"{base}/gateActivation")
    f, i, o = (ru.gate(units, pos[u]) for u in (U.FORGET_GATE, U.INPUT_GATE, U.OUTPUT_GATE))
    g = ru.gate(units, pos[U.CANDIDATE])
    ru.activate_in_place(graph, act_name, g, body, f"{base}/candidateActivation")
    c_new = popops.map(graph, pe._1 * pe._2 + pe._3 * pe._4, [f, c, i, g], body, f"{base}/cellUpdate")
    act_c = ru.activate(graph, act_name, c_new, body, f"{base}/outputActivation")
    h_new = popops.mul(graph, o, act_c, body, f"{base}/outputGate")
    ru.save_step(loop, params, out_seq, inter, [f, i, g, o, act_c, c], h_new)
    body.add(Copy(h_new, h))
    body.add(Copy(c_new, c))
    loop.close(prog)

    output = out_seq if out_seq is not None else h
    return (output, c, inter) if return_intermediates else (output, c)


# ---- backward and weight update ----------------------------------------------------------------------------------

def lstm_bwd(graph, params, prog, init_state, intermediates, weights, input, output, output_grad,  # noqa: A002
             last_cell_state_grad=None, name: str = "", options=None):
    """Backpropagation through time: (init_state_grad LstmState, input_grad [T, B, in] or
    None without params.calc_input_gradients, bwd_intermediates [T, 4, B, out]: the
    gradients at the gates' pre-activations, for lstm_wu). ``output_grad`` is the gradient
    of the output lstm_fwd returned; ``last_cell_state_grad`` [B, out] that of its final
    cell state (none: zero)."""
    what = "popnn.lstm.lstm_bwd"
    act_name, rec_name = _CHECKS.bwd(graph, params, prog, what, init_state, intermediates, weights, input, output,
                                     output_grad)
    T, B, n_in, n_out, dt = ru.sizes(params)
    ru.optional_tensor(graph, last_cell_state_grad, (B, n_out), dt, what, "last_cell_state_grad",
                       "[batch_size, output_size]")
    opts = ru.parse_options(options, what)
    base = name or "lstm"
    mm = ru.mat_mul_options(opts, "TRAINING_BWD")
    pos = ru.gate_positions(params, NUM_UNITS)
    U = BasicLstmCellUnit

    dh = ru.state_tensor(graph, dt, (B, n_out), f"{base}/outputGrad")
    dc = ru.state_tensor(graph, dt, (B, n_out), f"{base}/cellStateGrad")
    ru.init_output_grad(graph, params, dh, output_grad, prog, base)
    if last_cell_state_grad is not None:
        prog.add(Copy(last_cell_state_grad, dc))
    else:
        popops.zero(graph, dc, prog, f"{base}/zeroCellStateGrad")
    grads_seq = ru.sequence_tensor(graph, dt, T, (B, NUM_UNITS * n_out), f"{base}/bwdIntermediates")

    loop = ru.TimeLoop(graph, T, f"{base}/bwd", reverse=True)
    body = loop.body
    saved = loop.slice(intermediates, "intermediates")
    f, i, g, o, act_c, c_prev = (saved[k] for k in range(6))
    dh_t = ru.step_output_grad(graph, params, loop, dh, output_grad, base)
    # dc_t = dc_{t+1} f_{t+1} (carried) + dh o act'(c)
    d_cell = popops.map(graph, pe._1 + pe._2 * pe._3 * ru.act_grad(act_name, pe._4, dt), [dc, dh_t, o, act_c],
                        body, f"{base}/cellGrad")
    grads = ru.state_tensor(graph, dt, (B, NUM_UNITS * n_out), f"{base}/gateGrads")
    g3 = grads.reshape([B, NUM_UNITS, n_out])
    rec_grad = pe._1 * pe._2 * ru.act_grad(rec_name, pe._3, dt)
    popops.map_with_output(graph, rec_grad, [dh_t, act_c, o], ru.gate(g3, pos[U.OUTPUT_GATE]), body,
                           f"{base}/outputGateGrad")
    popops.map_with_output(graph, rec_grad, [d_cell, g, i], ru.gate(g3, pos[U.INPUT_GATE]), body,
                           f"{base}/inputGateGrad")
    popops.map_with_output(graph, rec_grad, [d_cell, c_prev, f], ru.gate(g3, pos[U.FORGET_GATE]), body,
                           f"{base}/forgetGateGrad")
    popops.map_with_output(graph, pe._1 * pe._2 * ru.act_grad(act_name, pe._3, dt), [d_cell, i, g],
                           ru.gate(g3, pos[U.CANDIDATE]), body, f"{base}/candidateGrad")
    popops.mul_with_output(graph, d_cell, f, dc, body, f"{base}/prevCellStateGrad")
    dh_prev = poplin.mat_mul(graph, grads, ru.units_matrix(weights.output_weights).transpose(), body,
                             f"{base}/prevStepGrad", mm)
    body.add(Copy(dh_prev, dh))
    loop.update(grads_seq, grads, "saveGateGrads")
    loop.close(prog)

    input_grad = None
    if params.calc_input_gradients:
        input_grad = poplin.mat_mul(graph, grads_seq.reshape([T * B, NUM_UNITS * n_out]),
                                    ru.units_matrix(weights.input_weights).transpose(), prog,
                                    f"{base}/inputGrad", mm).reshape([T, B, n_in])
    bwd_intermediates = grads_seq.reshape([T, B, NUM_UNITS, n_out]).dim_shuffle([0, 2, 1, 3])
    return LstmState(dh, dc), input_grad, bwd_intermediates


def lstm_wu(graph, params, prog, init_state, intermediates, bwd_intermediates, weights, input, output,  # noqa: A002
            name: str = "", options=None) -> LstmWeights:
    """The weight and bias gradients (LstmWeights) from lstm_bwd's bwd_intermediates: one
    matmul per weight matrix over all steps and batch entries, one reduction for the biases
    (in weightAccumulatorsType, default the data type)."""
    what = "popnn.lstm.lstm_wu"
    _CHECKS.wu(graph, params, prog, what, init_state, intermediates, bwd_intermediates, weights, input, output)
    opts = ru.parse_options(options, what)
    return _weight_grads(graph, params, prog, init_state.output, intermediates, bwd_intermediates, input, output,
                         opts, name or "lstm")


def _weight_grads(graph, params, prog, init_output, intermediates, bwd_intermediates, input, output,  # noqa: A002
                  opts, base) -> LstmWeights:
    T, B, n_in, n_out = params.time_steps, params.batch_size, params.input_size, params.output_size
    acc = FLOAT if opts.get("weightAccumulatorsType", params.data_type.name.lower()) == "float" else HALF
    mm = ru.mat_mul_options(opts, "TRAINING_WU")
    grads = bwd_intermediates.dim_shuffle([0, 2, 1, 3])               # [T, B, 4, out]
    flat = grads.reshape([T * B, NUM_UNITS * n_out])
    outputs = output if params.output_full_sequence else intermediates.slice(6, 7, 1).squeeze([1])
    h_prev = ru.previous_outputs(init_output, outputs).reshape([T * B, n_out])
    d_in = poplin.mat_mul(graph, input.reshape([T * B, n_in]).transpose(), flat, prog, f"{base}/inputWeightsGrad",
                          mm, output_type=acc)
    d_out = poplin.mat_mul(graph, h_prev.transpose(), flat, prog, f"{base}/outputWeightsGrad", mm, output_type=acc)
    if acc != params.data_type:
        grads = popops.cast(graph, grads, acc, prog, f"{base}/castGrads")
    d_b = ru.sum_over_steps_and_batch(graph, grads, prog, f"{base}/biasesGrad")
    return LstmWeights(d_in.reshape([n_in, NUM_UNITS, n_out]).dim_roll(1, 0),
                       d_out.reshape([n_out, NUM_UNITS, n_out]).dim_roll(1, 0), d_b)


def lstm_bwd_with_wu(graph, params, prog, init_state, intermediates, weights, input, output,  # noqa: A002
                     output_grad, last_cell_state_grad=None, name: str = "", options=None):
    """lstm_bwd then lstm_wu: (init_state_grad, input_grad, weights_grad LstmWeights)."""
    state_grad, input_grad, bwd = lstm_bwd(graph, params, prog, init_state, intermediates, weights, input, output,
                                           output_grad, last_cell_state_grad, name, options)
    opts = ru.parse_options(options, "popnn.lstm.lstm_bwd_with_wu")
    weights_grad = _weight_grads(graph, params, prog, init_state.output, intermediates, bwd, input, output, opts,
                                 name or "lstm")
    return state_grad, input_grad, weights_grad


__all__ = ["BasicLstmCellUnit", "LstmParams", "LstmState", "LstmWeights", "create_initial_state", "create_input",
           "create_weights", "create_weights_biases", "create_weights_kernel", "get_default_basic_lstm_cell_order",
           "lstm_bwd", "lstm_bwd_with_wu", "lstm_fwd", "lstm_wu", "zero_initial_state"]
