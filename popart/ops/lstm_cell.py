"""One direction of an ONNX LSTM with peepholes (P) and/or a cell ``clip``, composed from
PopLibs ops: popnn's LSTM cell has neither (and PopART refused both), so rnn.py sends only
those LSTMs here; the others stay on popnn.lstm.lstm_fwd.

Built as popnn's own LSTM is: X is weighted for all steps by one poplin.mat_mul (W^T, a
view) and the bias sum (Wb + Rb) added as it is copied into a per-step sequence; then one
Repeat over time (popnn.rnn_util.TimeLoop: a device step counter selecting each step's
slices with popops.dynamic_slice / dynamic_update, counting down for ``reverse``) whose
body multiplies H by R^T (poplin.mat_mul), adds the step's weighted input and applies
ONNX's equations as two popops.map expressions (gates i, o, f, c as ONNX stacks them)::

    i = f(clip(Xi + Pi . C_prev))   f' = f(clip(Xf + Pf . C_prev))   c = g(clip(Xc))
    C = f' . C_prev + i . c          H = f(clip(Xo + Po . C)) . h(C)

``clip`` bounds each gate's pre-activation (the peephole and biases included) to
[-clip, clip]: ONNX's "applied to the input of activations", where onnxruntime applies it;
the cell state C itself is not clipped (onnx.reference ignores ``clip`` altogether).

``sequence_lens`` (a constant, streamed or computed on the device) is a per-step mask,
``step < lens[b]`` (popops.map of the counter against the lengths): where it is false H and
C keep their values and Y's step is zero. Forward, element b stops after its step n - 1;
reverse, the loop counts from T - 1 down, skips the steps from n on and so starts element b
at step n - 1 from its initial state, ONNX's order. Y_h and Y_c are the final H and C.
Lengths on the device outside [1, T] stop the run (AbortOnCondition), as constant ones are
refused."""
import numpy as np

import popsim
from popsim import INT, AbortOnCondition, poplin, popops
from popsim.popnn import rnn_util as ru
from popsim.popops import expr as pe
from popsim.program import Copy

from ..errors import popart_exception


def lengths(ctx, node, value, steps: int, name: str):
    """The lengths [B] as an INT device tensor; those read as the step runs are checked
    there (AbortOnCondition) to lie in [1, steps]."""
    if isinstance(value, np.ndarray):   # checked by rnn.py as the graph is built
        return ctx.constant(value.astype(np.int32), node, "input 4 (sequence_lens)")
    lens = ctx.tensor(value, node, "input 4 (sequence_lens)")
    if lens.dtype not in (INT, popsim.UNSIGNED_INT):
        raise popart_exception(f"node {node.name!r} ({node.op_type}): input 4 (sequence_lens) is {lens.dtype}, "
                               "expected int32 (ONNX's type for it); give the lengths as int32")
    if lens.dtype != INT:
        lens = popops.cast(ctx.graph, lens, INT, ctx.prog, f"{name}/sequenceLens")
    bad = popops.map(ctx.graph, pe.logical_or(pe._1 < pe.Const(1, INT), pe._1 > pe.Const(steps, INT)), [lens],
                     ctx.prog, f"{name}/sequenceLensInvalid")
    any_bad = popops.reduce(ctx.graph, bad, [0], popops.ReduceParams(popops.Operation.LOGICAL_OR), ctx.prog,
                            f"{name}/sequenceLensCheck")
    ctx.prog.add(AbortOnCondition(any_bad.reshape(()), f"node {node.name!r} ({node.op_type}): input 4 "
                                  f"(sequence_lens) has a length outside 1 to the sequence length {steps}; give "
                                  "each batch element a length in that range"))
    return lens


def lstm_composed(ctx, name, x, w, r, two, p, clip, h0, c0, lens, reverse: bool, acts):
    """(Y [T, B, H] in time order, Y_h [B, H], Y_c [B, H]) of one direction: ``x`` [T, B, I]
    in time order, ``w`` [4H, I], ``r`` [4H, H], ``two`` the biases [2, 4, H], ``p`` [3H]
    (i, o, f) or None, ``clip`` a float or None, ``lens`` an INT [B] tensor or None, ``acts``
    the (f, g = h) activation names."""
    graph, prog = ctx.graph, ctx.prog
    steps, batch, n_in = x.shape
    hidden, dt = r.shape[1], x.dtype
    rec, act = acts

    bias = popops.add(graph, two[0], two[1], prog, f"{name}/biases").reshape([4 * hidden])
    weighted = poplin.mat_mul(graph, x.reshape([steps * batch, n_in]), w.transpose(), prog, f"{name}/weighInput",
                              {"fullyConnectedPass": "INFERENCE_FWD"})
    seq = ru.sequence_tensor(graph, dt, steps, (batch, 4 * hidden), f"{name}/weightedInput")
    popops.add_with_output(graph, weighted.reshape([steps, batch, 4 * hidden]), bias, seq, prog, f"{name}/addBias")

    h = ru.state_tensor(graph, dt, (batch, hidden), f"{name}/output")
    c = ru.state_tensor(graph, dt, (batch, hidden), f"{name}/cellState")
    prog.add(Copy(h0, h))
    prog.add(Copy(c0, c))
    y_seq = ru.sequence_tensor(graph, dt, steps, (batch, hidden), f"{name}/outputSeq")

    loop = ru.TimeLoop(graph, steps, f"{name}/fwd", reverse=reverse)
    body = loop.body
    units = poplin.mat_mul(graph, h, r.transpose(), body, f"{name}/weighOutput",
                           {"fullyConnectedPass": "INFERENCE_FWD"})
    popops.add_in_place(graph, units, loop.slice(seq, "weightedInput"), body, f"{name}/addWeightedInput")
    gi, go, gf, gc = (ru.gate(units.reshape([batch, 4, hidden]), k) for k in range(4))

    def bound(e):
        return e if clip is None else pe.clamp(e, pe.Const(-clip), pe.Const(clip))

    # C = f(clip(Xf + Pf C_prev)) C_prev + f(clip(Xi + Pi C_prev)) g(clip(Xc)): _1 i, _2 f, _3 c, _4 C_prev
    peep_i, peep_f = (pe._1 + pe._5 * pe._4, pe._2 + pe._6 * pe._4) if p is not None else (pe._1, pe._2)
    cell = ru.act(rec, bound(peep_f)) * pe._4 + ru.act(rec, bound(peep_i)) * ru.act(act, bound(pe._3))
    ins = [gi, gf, gc, c] + ([p.slice(0, hidden), p.slice(2 * hidden, 3 * hidden)] if p is not None else [])
    c_new = popops.map(graph, cell, ins, body, f"{name}/cellUpdate")
    # H = f(clip(Xo + Po C)) h(C): _1 o, _2 C
    peep_o = pe._1 + pe._3 * pe._2 if p is not None else pe._1
    ins = [go, c_new] + ([p.slice(hidden, 2 * hidden)] if p is not None else [])
    h_new = popops.map(graph, ru.act(rec, bound(peep_o)) * ru.act(act, pe._2), ins, body, f"{name}/outputGate")

    if lens is None:
        loop.update(y_seq, h_new, "saveOutput")
        body.add(Copy(h_new, h))
        body.add(Copy(c_new, c))
    else:   # step < lens[b]: the step counts for element b
        valid = popops.map(graph, pe.Cast(pe._1, INT) < pe._2, [loop.counter, lens], body,
                           f"{name}/inSequence").reshape([batch, 1])
        y_t = popops.map(graph, pe.select(pe._1, pe.Const(0.0), pe._2), [h_new, valid], body, f"{name}/maskOutput")
        loop.update(y_seq, y_t, "saveOutput")
        for new, old, what in ((h_new, h, "keepOutput"), (c_new, c, "keepCellState")):
            body.add(Copy(popops.map(graph, pe.select(pe._1, pe._2, pe._3), [new, old, valid], body,
                                     f"{name}/{what}"), old))
    loop.close(prog)
    return y_seq, h, c
