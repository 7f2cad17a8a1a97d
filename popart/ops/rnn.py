"""LSTM and GRU onto popnn.lstm.lstm_fwd / popnn.gru.gru_fwd, one layer per direction.

ONNX keeps a direction's gates stacked along W's rows ([D, 4H, I] in the order i, o, f, c
for LSTM; [D, 3H, I] in z, r, h for GRU); popnn takes [gates, I, H] in the params'
``cell_order``. So W[d] is viewed as [gates, H, I] and transposed (a view, no copy), and
``cell_order`` names ONNX's order: LSTM [INPUT, OUTPUT, FORGET, CANDIDATE], GRU [UPDATE
(z), RESET (r), CANDIDATE (h)]. ONNX's two biases (Wb and Rb, [D, 2 * gates * H]) are summed
by popops.add for LSTM and for GRU with linear_before_reset=0; with linear_before_reset=1
they are popnn's reset_after biases [3, 2, H] (a view). ``reverse`` runs popnn on the
sequence reversed in time (a view) and reverses its output back; ``bidirectional`` runs both
and concatenates. ``layout=1`` (batch first) is a dim_shuffle of X, initial states and
outputs.

A constant ``sequence_lens`` shorter than the sequence (PopART hands it to popnn's layers)
runs the whole sequence and keeps, for batch element b of length n, the first n steps: in
the forward direction later steps cannot change earlier ones; in the reverse direction
element b's first n steps are reversed (a view), so popnn starts it at step n - 1. Y's
steps from n on are zero (popops.select against a constant mask, as ONNX defines them),
Y_h is the output of element b's step n - 1 and Y_c its cell state after that step (popnn's
per-step intermediates, a view).

An LSTM with peepholes (P) or ``clip``, which popnn's cell has not (PopART refused both:
"Popart does not support peephole connections", "LSTMOp attribute `clip' is not
supported"), runs on a cell composed from PopLibs ops instead (lstm_cell.py), which also
reads a ``sequence_lens`` streamed or computed on the device; every other LSTM stays on
popnn.lstm_fwd.

Refused, naming the node and the attribute: GRU's ``clip``, ``input_forget``, activations
popnn's cells do not have (LSTM's g and h must be the same; each of Sigmoid, Tanh, Relu),
``activation_alpha``/``beta``; and, but for the composed LSTM, a ``sequence_lens`` computed
on the device or streamed; a constant one with a length of 0 or over the sequence."""
import numpy as np

import popsim
from popsim import popnn, popops

from ..errors import popart_exception
from ..op_table import op
from .lstm_cell import lengths, lstm_composed

_ACTIVATIONS = {"sigmoid": "SIGMOID", "tanh": "TANH", "relu": "RELU"}


def _refuse(node, what: str):
    raise popart_exception(f"node {node.name!r} ({node.op_type}): {what}")


def _check_attrs(node, defaults):
    """The (recurrent, candidate) activation names of every direction; refuses what popnn lacks."""
    if "clip" in node.attrs and node.op_type != "LSTM":
        _refuse(node, f"attribute clip={node.attrs['clip']!r} is not supported: PopART refuses it (\"{node.op_type}Op "
                      "attribute `clip' is not supported\"), popnn's cells have no cell clip, and popsim composes "
                      "a clipped cell for LSTM only; remove it")
    if "clip" in node.attrs and not float(node.attrs["clip"]) > 0:
        _refuse(node, f"attribute clip={node.attrs['clip']!r} must be a positive number (the gates' pre-activations "
                      "are bounded to [-clip, clip])")
    for key in ("activation_alpha", "activation_beta"):
        if key in node.attrs:
            _refuse(node, f"attribute {key}={node.attrs[key]!r} is not supported (popnn's {node.op_type} has no "
                          f"{key}); remove it")
    if int(node.attrs.get("input_forget", 0)):
        _refuse(node, "attribute input_forget=1 (coupled input and forget gates) is not supported by popnn.lstm")
    if int(node.attrs.get("layout", 0)) not in (0, 1):
        _refuse(node, f"attribute layout={node.attrs['layout']} must be 0 or 1")
    direction = node.attrs.get("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        _refuse(node, f"attribute direction={direction!r} must be forward, reverse or bidirectional")
    dirs = 2 if direction == "bidirectional" else 1
    names = [str(a).lower() for a in node.attrs.get("activations", defaults * dirs)]
    if len(names) != len(defaults) * dirs:
        _refuse(node, f"attribute activations={names} must name {len(defaults)} activations per direction "
                      f"({dirs} direction(s))")
    out = []
    for d in range(dirs):
        mine = names[d * len(defaults):(d + 1) * len(defaults)]
        bad = [a for a in mine if a not in _ACTIVATIONS]
        if bad or len(set(mine[1:])) != 1:
            _refuse(node, f"attribute activations={names} is not supported: popnn's cells take Sigmoid, Tanh or "
                          "Relu" + (", with the same activation for g and h" if len(defaults) == 3 else ""))
        out.append((_ACTIVATIONS[mine[0]], _ACTIVATIONS[mine[1]]))
    return direction, out


def _sequence_lens(ctx, node, inputs, steps, batch, composed=False):
    """The batch elements' lengths (a list), or None when every one runs all ``steps``;
    ``composed`` (lstm_cell's LSTM): the lengths as they are, a device tensor or an array
    (None when absent or all ``steps``)."""
    lens = inputs[4] if len(inputs) > 4 else None
    if lens is None:
        return None
    if not isinstance(lens, np.ndarray):
        if composed:
            if tuple(lens.shape) != (batch,):
                _refuse(node, f"input 4 (sequence_lens) has shape {tuple(lens.shape)}: it must be [{batch}] "
                              "(batch_size)")
            return lens
        _refuse(node, "input 4 (sequence_lens) is computed on the device or streamed; popsim.popart needs it as a "
                      "constant (an initializer) or absent (or the LSTM to have peepholes or clip, which popsim "
                      "composes with lengths read as the step runs)")
    if lens.shape != (batch,) or np.any(lens < 1) or np.any(lens > steps):
        _refuse(node, f"input 4 (sequence_lens) is {lens.tolist()}: it must give each of the {batch} batch elements "
                      f"a length from 1 to the sequence length {steps}")
    if np.all(lens == steps):
        return None
    return lens if composed else [int(n) for n in lens]


def _first_steps_reversed(t, lens):
    """A view of ``t`` [T, B, ...] with each batch element's first lens[b] steps reversed (the
    rest kept): the order the reverse direction takes element b's valid steps in; its own
    inverse."""
    steps, cols = t.shape[0], []
    for b, n in enumerate(lens):
        col = t.slice(b, b + 1, 1)
        cols.append(popsim.concat([col.slice(0, n, 0).reverse(0)] + ([col.slice(n, steps, 0)] if n < steps else []),
                                  0))
    return popsim.concat(cols, 1)


def _at_lengths(t, lens, after=None):
    """[B, H] of ``t`` [T, B, H]: element b at step lens[b] - 1 (with ``after``, [T, B, H] of
    the states before each step and the final one, the state after step lens[b] - 1)."""
    steps = t.shape[0]
    rows = []
    for b, n in enumerate(lens):
        src = t[n - 1] if after is None else (t[n] if n < steps else after)
        rows.append(src.slice(b, b + 1, 0))
    return popsim.concat(rows, 0)


def _rnn(ctx, node, inputs, gates, defaults, has_cell):
    direction, acts = _check_attrs(node, defaults)
    batch_first = int(node.attrs.get("layout", 0)) == 1
    x = ctx.tensor(inputs[0], node, "input 0 (X)")
    if x.rank != 3:
        _refuse(node, f"X {tuple(x.shape)} must be [seq_length, batch_size, input_size] (layout 0) or "
                      "[batch_size, seq_length, input_size] (layout 1)")
    if batch_first:
        x = x.dim_shuffle([1, 0, 2])
    steps, batch, n_in = x.shape
    w = ctx.tensor(inputs[1], node, "input 1 (W)")
    r = ctx.tensor(inputs[2], node, "input 2 (R)")
    dirs = 2 if direction == "bidirectional" else 1
    hidden = int(node.attrs.get("hidden_size", r.shape[-1]))
    if tuple(w.shape) != (dirs, gates * hidden, n_in) or tuple(r.shape) != (dirs, gates * hidden, hidden):
        _refuse(node, f"W {tuple(w.shape)} and R {tuple(r.shape)} must be [{dirs}, {gates} * {hidden}, {n_in}] and "
                      f"[{dirs}, {gates} * {hidden}, {hidden}] (num_directions, gates * hidden_size, ...)")
    peep = inputs[7] if has_cell and len(inputs) > 7 else None
    composed = peep is not None or "clip" in node.attrs   # popnn's cell has neither: lstm_cell's
    if composed and steps == 0:
        _refuse(node, "X has no time steps: an LSTM with peepholes or clip needs at least one")
    if peep is not None:
        peep = ctx.tensor(peep, node, "input 7 (P)")
        if tuple(peep.shape) != (dirs, 3 * hidden):
            _refuse(node, f"input 7 (P) {tuple(peep.shape)} must be [{dirs}, 3 * {hidden}] (num_directions, "
                          "peephole weights i, o, f)")
    lens = _sequence_lens(ctx, node, inputs, steps, batch, composed) if steps else None
    dt = x.dtype
    b = inputs[3] if len(inputs) > 3 else None
    b = ctx.tensor(b if b is not None else np.zeros((dirs, 2 * gates * hidden), dt.numpy), node, "input 3 (B)")
    initial = []
    for slot in ((5, 6) if has_cell else (5,)):
        v = inputs[slot] if len(inputs) > slot else None
        if v is None:
            initial.append(ctx.tensor(np.zeros((dirs, batch, hidden), dt.numpy), node, f"input {slot}"))
        else:
            v = ctx.tensor(v, node, f"input {slot}")
            initial.append(v.dim_shuffle([1, 0, 2]) if batch_first else v)
    roles = [("W", w), ("R", r), ("B", b)] + ([("P", peep)] if peep is not None else [])
    for role, t in roles + [(f"initial state {i}", t) for i, t in enumerate(initial)]:
        if t.dtype != dt:
            _refuse(node, f"{role} is {t.dtype} and X {dt}: the inputs of an {node.op_type} must share one type")
    ys, hs, cs = [], [], []
    if composed and lens is not None:
        lens = lengths(ctx, node, lens, steps, node.name)
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        if composed:
            name = f"{node.name}/{'reverse' if reverse else 'forward'}"
            y, h, c = lstm_composed(ctx, name, x, w[d], r[d], b[d].reshape([2, gates, hidden]),
                                    peep[d] if peep is not None else None,
                                    float(node.attrs["clip"]) if "clip" in node.attrs else None,
                                    initial[0][d], initial[1][d], lens, reverse, acts[d])
            ys.append(y)
            hs.append(h)
            cs.append(c)
            continue
        if lens is not None:   # each element's valid steps, in the order this direction takes them
            seq = _first_steps_reversed(x, lens) if reverse else x
        else:
            seq = x.reverse(0) if reverse and steps else x
        name = f"{node.name}/{'reverse' if reverse else 'forward'}"
        w_in = w[d].reshape([gates, hidden, n_in]).dim_shuffle([0, 2, 1])
        w_out = r[d].reshape([gates, hidden, hidden]).dim_shuffle([0, 2, 1])
        two = b[d].reshape([2, gates, hidden])
        rec_act, act = acts[d]
        if has_cell:
            params = popnn.lstm.LstmParams(dt, batch, steps, [n_in, hidden], act, rec_act)
            U = popnn.lstm.BasicLstmCellUnit  # noqa: N806 - the gate enum, as popnn.lstm spells it
            params.cell_order = [U.INPUT_GATE, U.OUTPUT_GATE, U.FORGET_GATE, U.CANDIDATE]
            biases = popops.add(ctx.graph, two[0], two[1], ctx.prog, f"{name}/biases")
            state = popnn.lstm.LstmState(initial[0][d], initial[1][d])
            weights = popnn.lstm.LstmWeights(w_in, w_out, biases)
            if lens is None:
                y, c = popnn.lstm.lstm_fwd(ctx.graph, params, state, seq, weights, ctx.prog, name,
                                           {"inferenceOnly": "true"})
            else:   # the cell state of each step: the intermediates' (f, i, g, o, act(c), c_prev)
                y, c, inter = popnn.lstm.lstm_fwd(ctx.graph, params, state, seq, weights, ctx.prog, name,
                                                  {"inferenceOnly": "true"}, return_intermediates=True)
                c = _at_lengths(inter.slice(5, 6, 1).squeeze([1]), lens, after=c)
            cs.append(c)
        else:
            params = popnn.gru.GruParams(dt, batch, steps, [n_in, hidden], act, rec_act)
            U = popnn.gru.BasicGruCellUnit  # noqa: N806 - the gate enum, as popnn.gru spells it
            params.cell_order = [U.UPDATE_GATE, U.RESET_GATE, U.CANDIDATE]
            params.reset_after = bool(int(node.attrs.get("linear_before_reset", 0)))
            biases = two.dim_shuffle([1, 0, 2]) if params.reset_after else \
                popops.add(ctx.graph, two[0], two[1], ctx.prog, f"{name}/biases")
            y = popnn.gru.gru_fwd(ctx.graph, params, initial[0][d], seq,
                                  popnn.gru.GruWeights(w_in, w_out, biases), ctx.prog, name, {"inferenceOnly": "true"})
        if lens is not None:
            hs.append(_at_lengths(y, lens))
            ys.append(_masked(ctx, node, _first_steps_reversed(y, lens) if reverse else y, lens, name))
            continue
        hs.append(y[steps - 1] if steps else initial[0][d])
        ys.append(y.reverse(0) if reverse and steps else y)
    y = popsim.concat([t.expand([1]) for t in ys], 1)                     # [T, D, B, H]
    states = [popsim.concat([t.expand([0]) for t in s], 0) for s in ([hs, cs] if has_cell else [hs])]
    if batch_first:
        y, states = y.dim_shuffle([2, 0, 1, 3]), [s.dim_shuffle([1, 0, 2]) for s in states]
    return [y] + states


def _masked(ctx, node, y, lens, name):
    """``y`` [T, B, H] with each element's steps from lens[b] on set to zero (popops.select)."""
    steps = y.shape[0]
    keep = np.broadcast_to((np.arange(steps)[:, None] < np.array(lens)[None, :])[:, :, None], y.shape)
    zeros = ctx.constant(np.zeros(y.shape, y.dtype.numpy), node, "zeros past sequence_lens")
    return popops.select(ctx.graph, y, zeros, ctx.constant(np.ascontiguousarray(keep), node, "sequence_lens mask"),
                         ctx.prog, f"{name}/pastSequenceLens")


@op("LSTM", 7, summary="popnn.lstm.lstm_fwd per direction (ONNX's iofc gates as cell_order, W and R as "
                       "transposed views, popops.add of the two biases); reverse as a reversed view; with "
                       "peepholes or clip a cell of poplin.mat_mul and popops.map in a Repeat over time")
def lstm(ctx, node, inputs):
    return _rnn(ctx, node, inputs, 4, ["sigmoid", "tanh", "tanh"], True)


@op("GRU", 7, summary="popnn.gru.gru_fwd per direction (zrh gates as cell_order; linear_before_reset=1 as "
                      "reset_after); reverse as a reversed view")
def gru(ctx, node, inputs):
    return _rnn(ctx, node, inputs, 3, ["sigmoid", "tanh"], False)
