"""What popnn's recurrent layers (lstm.py, gru.py) share, as PopLibs' RnnUtil and rnn::Rnn
do: argument and option checks, the gate activations as popops expressions, the [T, ...]
sequence tensors (each step's slice mapped linearly, so a step moves between the sequence
and the cell without exchange), views of per-gate weights as one matrix, and the device
loop over time.

The loop is a popsim Repeat of one body built once (the graph does not grow with the
number of steps): an UNSIGNED_INT counter on tile 0 selects each step's slice of the
sequences with popops.dynamic_slice / dynamic_update (as poplin's serial loop does),
counting up for the forward pass and down for the backward pass.
"""
import numbers
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence as Seq

import popsim
from popsim import FLOAT, HALF, UNSIGNED_INT
from popsim.program import Copy, Repeat, Sequence

from .. import poplin, popops
from ..popops import expr as pe
from ..poputil import PoplibsError, map_tensor_linearly
from ..poputil.checks import check_graph, check_prog, check_tensor
from .non_linearity import non_linearity, non_linearity_in_place
from .non_linearity_vertices import NonLinearityType

#: the activations a gate may use (PopLibs' NonLinearityType members, by name)
ACTIVATIONS = ("SIGMOID", "TANH", "RELU")

#: the option keys PopLibs' LSTM and GRU accept (Lstm.cpp / Gru.cpp parseOptions)
_OPTION_VALUES = {
    "inferenceOnly": ("true", "false"),
    "preCalcWeights": ("true", "false"),
    "partialsType": ("float", "half"),
    "weightAccumulatorsType": ("float", "half"),
    "recomputationMode": ("none", "cellAndTanh", "full"),
    "availableMemoryProportion": None,
    "numShards": None,
}


class RnnParams:
    """What LstmParams and GruParams share (PopLibs' RnnParams): the layer's type and sizes
    (layer_sizes = [input_size, output_size]), with output_full_sequence,
    calc_input_gradients and cell_order to set as attributes. A subclass gives
    ``default_cell_order`` and its module's ``check``."""

    def __init__(self, data_type, batch_size, time_steps, layer_sizes, activation="TANH",
                 recurrent_activation="SIGMOID"):
        self.data_type, self.batch_size, self.time_steps = data_type, batch_size, time_steps
        self.layer_sizes = list(layer_sizes)
        self.activation, self.recurrent_activation = activation, recurrent_activation
        self.output_full_sequence = True
        self.calc_input_gradients = True
        self.cell_order = self.default_cell_order()

    @property
    def input_size(self) -> int:
        return self.layer_sizes[0]

    @property
    def output_size(self) -> int:
        return self.layer_sizes[1]

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self):
        return (f"{type(self).__name__}({self.data_type}, batch_size={self.batch_size}, time_steps={self.time_steps}, "
                f"layer_sizes={self.layer_sizes}{self._extra_repr()})")


def activation_name(value, what: str, role: str) -> str:
    """The name of a NonLinearityType member (or its name as a string) that a gate can use."""
    name = value if isinstance(value, str) else getattr(value, "name", None)
    if name not in ACTIVATIONS:
        raise PoplibsError(f"{what}: {role} must be one of NonLinearityType {', '.join(ACTIVATIONS)}, "
                           f"found {value!r}")
    return name


def activate_in_place(graph, name: str, t, prog, debug: str) -> None:
    """A gate's activation on its own, as PopLibs applies it: popnn's NonLinearity
    vertices (nonLinearityInPlace) on ``t``'s tiles."""
    non_linearity_in_place(graph, NonLinearityType[name], t, prog, debug)


def activate(graph, name: str, t, prog, debug: str):
    """The same into a new tensor (nonLinearity)."""
    return non_linearity(graph, NonLinearityType[name], t, prog, debug)


def act(name: str, e):
    """The activation ``name`` applied to the expression ``e``."""
    if name == "SIGMOID":
        return pe.sigmoid(e)
    if name == "TANH":
        return pe.tanh(e)
    return pe.max(e, pe.Const(0.0))


def act_grad(name: str, y, dtype):
    """d act / d x in terms of the activation's output ``y`` (PopLibs'
    nonLinearityInputGradient takes the output too); ``dtype`` is y's type."""
    if name == "SIGMOID":
        return y * (1.0 - y)
    if name == "TANH":
        return 1.0 - y * y
    return pe.Cast(y > 0.0, dtype)


def parse_options(options, what: str) -> dict:
    """PopLibs' RNN options (strings); an unknown key or value is an InvalidOptionError."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise popsim.TypeError(f"{what}: options must be a dict of str -> str, found {type(options).__name__}")
    for key, value in options.items():
        if key not in _OPTION_VALUES:
            raise popsim.InvalidOptionError(f"{what}: unknown option {key!r}; the options are "
                                            f"{', '.join(_OPTION_VALUES)}")
        allowed = _OPTION_VALUES[key]
        if allowed is not None and value not in allowed:
            raise popsim.InvalidOptionError(f"{what}: option {key} must be one of {', '.join(allowed)}, "
                                            f"found {value!r}")
    if options.get("numShards", "1") != "1":
        raise popsim.InvalidOptionError(f"{what}: option numShards must be 1 (popsim runs an RNN on one "
                                        f"IPU), found {options['numShards']!r}")
    if options.get("recomputationMode", "none") != "none":
        raise popsim.InvalidOptionError(f"{what}: recomputationMode {options['recomputationMode']!r} is not "
                                        "built: popsim keeps every intermediate (use 'none')")
    return dict(options)


def mat_mul_options(options: dict, fc_pass: str) -> dict:
    """The matmul options an RNN passes on (PopLibs' getMMOpts), for the pass ``fc_pass``."""
    out = {k: v for k, v in options.items() if k in ("partialsType", "availableMemoryProportion")}
    out["fullyConnectedPass"] = fc_pass
    return out


def gate_positions(params, units: int) -> list:
    """Position of each gate (by its unit enum's value) in the weights' outer dimension."""
    pos = [0] * units
    for i, unit in enumerate(params.cell_order):
        pos[int(unit)] = i
    return pos


def check_input(graph, params, t, what: str, role: str = "input") -> None:
    check_shape(graph, t, (params.time_steps, params.batch_size, params.input_size), params.data_type, what,
                role, "[time_steps, batch_size, input_size]")


def creating(graph, params, options, check_params, what: str) -> dict:
    """The checks every create_* of LstmParams / GruParams starts with; its options."""
    check_graph(graph, what)
    check_params(params, what)
    return parse_options(options, what)


def create_input(graph, params, name: str) -> "popsim.Tensor":
    """The input [time_steps, batch_size, input_size], each step mapped linearly."""
    return sequence_tensor(graph, params.data_type, params.time_steps, (params.batch_size, params.input_size), name)


def create_kernel(graph, params, units: int, name: str, opts: dict):
    """(input_weights [units, in, out], output_weights [units, out, out]): slices of one
    matmul right-hand side [in + out, units * out], as PopLibs creates them."""
    n_in, n_out = params.input_size, params.output_size
    w = poplin.create_mat_mul_input_rhs(graph, params.data_type, (params.batch_size, n_in + n_out),
                                        (n_in + n_out, units * n_out), name, mat_mul_options(opts, "TRAINING_FWD"))
    as_units = w.reshape([n_in + n_out, units, n_out]).dim_roll(1, 0)
    return as_units.slice(0, n_in, 1), as_units.slice(n_in, n_in + n_out, 1)


def check_common_params(params, cls, units: int, what: str):
    """``params`` is a ``cls`` (LstmParams / GruParams) with a valid data type, sizes and
    cell order."""
    if not isinstance(params, cls):
        raise popsim.TypeError(f"{what}: expected popnn.{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}, found "
                               f"{type(params).__name__}")
    if params.data_type not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: params.data_type must be FLOAT or HALF, found {params.data_type}")
    for name in ("batch_size", "time_steps"):
        v = getattr(params, name)
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise PoplibsError(f"{what}: params.{name} must be a whole number >= 0, found {v!r}")
    sizes = list(params.layer_sizes)
    if len(sizes) != 2 or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0
                              for v in sizes):
        raise PoplibsError(f"{what}: params.layer_sizes must be [input_size, output_size] (two whole "
                           f"numbers >= 0), found {params.layer_sizes!r}")
    order = [int(u) for u in params.cell_order]
    if sorted(order) != list(range(units)):
        raise PoplibsError(f"{what}: params.cell_order must name each of the {units} gates once, found "
                           f"{list(params.cell_order)!r}")


def activation_names(params, what: str):
    """(activation, recurrent activation) of ``params``, by name, each one a gate can use."""
    return (activation_name(params.activation, what, "params.activation"),
            activation_name(params.recurrent_activation, what, "params.recurrent_activation"))


@dataclass(frozen=True)
class LayerChecks:
    """A layer module's checks of its own arguments (lstm.py, gru.py): ``params(params,
    what)`` (returning the activations' names), the others ``(graph, params, value, what)``.
    fwd, bwd and wu run them, and rnn_util's own, in the order of each pass's arguments,
    after the graph, the params and the program; each returns the activations' names."""
    params: Callable
    state: Callable
    weights: Callable
    intermediates: Callable
    bwd_intermediates: Callable

    def _start(self, graph, params, prog, what: str):
        check_graph(graph, what)
        names = self.params(params, what)
        check_prog(prog, what)
        return names

    def fwd(self, graph, params, prog, what: str, init_state, input, weights):  # noqa: A002
        names = self._start(graph, params, prog, what)
        self.state(graph, params, init_state, what)
        check_input(graph, params, input, what)
        self.weights(graph, params, weights, what)
        return names

    def bwd(self, graph, params, prog, what: str, init_state, intermediates, weights, input,  # noqa: A002
            output, output_grad):
        names = self._start(graph, params, prog, what)
        self.state(graph, params, init_state, what)
        self.intermediates(graph, params, intermediates, what)
        self._weights_input_output(graph, params, what, weights, input, output)
        check_output(graph, params, output_grad, what, "output_grad")
        return names

    def wu(self, graph, params, prog, what: str, init_state, intermediates, bwd_intermediates, weights,
           input, output):  # noqa: A002
        names = self._start(graph, params, prog, what)
        self.state(graph, params, init_state, what)
        self.intermediates(graph, params, intermediates, what)
        self.bwd_intermediates(graph, params, bwd_intermediates, what)
        self._weights_input_output(graph, params, what, weights, input, output)
        return names

    def _weights_input_output(self, graph, params, what: str, weights, input, output) -> None:  # noqa: A002
        self.weights(graph, params, weights, what)
        check_input(graph, params, input, what)
        check_output(graph, params, output, what, "output")


def sizes(params):
    """(time_steps, batch_size, input_size, output_size, data_type) of ``params``."""
    return params.time_steps, params.batch_size, params.input_size, params.output_size, params.data_type


def check_output(graph, params, output, what: str, role: str) -> None:
    """A layer's output (or its gradient): [T, B, out], the last step's [B, out] without
    output_full_sequence."""
    steps, batch, n_out = params.time_steps, params.batch_size, params.output_size
    shape = (steps, batch, n_out) if params.output_full_sequence else (batch, n_out)
    layout = "[time_steps, batch_size, output_size]" if params.output_full_sequence else \
        "[batch_size, output_size] (output_full_sequence is false)"
    check_shape(graph, output, shape, params.data_type, what, role, layout)


def check_intermediates(graph, params, inter, k: int, fwd: str, what: str) -> None:
    """The forward intermediates [T, k, B, out] the pass ``fwd`` returned."""
    check_shape(graph, inter, (params.time_steps, k, params.batch_size, params.output_size), params.data_type,
                what, "intermediates", f"[time_steps, {k} intermediates, batch_size, output_size] ({fwd}'s "
                "return_intermediates)")


def check_shape(graph, t, shape, dtype, what: str, role: str, layout: str) -> None:
    """``t`` is a tensor of ``graph`` of ``shape`` ([...] names the dimensions) and ``dtype``."""
    check_tensor(graph, t, what, role)
    if tuple(t.shape) != tuple(shape):
        raise PoplibsError(f"{what}: {role} '{t.name}' must have shape {tuple(shape)} {layout}, found "
                           f"{tuple(t.shape)}")
    if t.dtype != dtype:
        raise PoplibsError(f"{what}: {role} '{t.name}' must be {dtype} (params.data_type), found {t.dtype}")


def sequence_tensor(graph, dtype, steps: int, inner: Seq[int], name: str):
    """A [steps, *inner] variable with each step's slice mapped linearly (PopLibs maps its
    RNN sequences per step, so that slicing a step moves nothing between tiles)."""
    t = graph.add_variable(dtype, (steps, *inner), name)
    for s in range(steps):
        map_tensor_linearly(graph, t[s])
    return t


def state_tensor(graph, dtype, shape, name: str):
    t = graph.add_variable(dtype, tuple(shape), name)
    map_tensor_linearly(graph, t)
    return t


def units_matrix(w):
    """Per-gate weights [U, rows, out] as the [rows, U * out] matrix that multiplies all the
    gates at once (PopLibs' flattenUnits)."""
    units, rows, out = w.shape
    return w.dim_roll(0, 1).reshape([rows, units * out])


def gate(t, unit: int):
    """Gate ``unit`` of gate values laid out [B, U, out]: a [B, out] view."""
    return t.slice(unit, unit + 1, 1).squeeze([1])


def gates(t, units: Iterable[int]):
    """The gates ``units`` of [B, U, out] gate values as one [B, len(units), out] view."""
    return popsim.concat([t.slice(u, u + 1, 1) for u in units], 1)


class TimeLoop:
    """One Repeat over the time steps, forward (0 .. T-1) or reverse (T-1 .. 0), with a
    device counter selecting each step's slices. With no time steps the body is built
    (its slices are unwritten temporaries) but never added to the program."""

    def __init__(self, graph, steps: int, name: str, reverse: bool = False):
        self.graph, self.steps, self.name, self.reverse = graph, steps, name, reverse
        self.counter = graph.add_variable(UNSIGNED_INT, (1,), f"{name}/step")
        graph.set_tile_mapping(self.counter, 0)
        self.body = Sequence()

    def slice(self, seq, what: str):
        """This step's slice of the [T, ...] tensor ``seq`` (a [...] temporary)."""
        if self.steps == 0:
            return state_tensor(self.graph, seq.dtype, tuple(seq.shape[1:]), f"{self.name}/{what}")
        s = popops.dynamic_slice(self.graph, seq, self.counter, [0], [1], self.body, f"{self.name}/{what}")
        return s.squeeze([0])

    def update(self, seq, value, what: str) -> None:
        """Write ``value`` [...] into this step's slice of ``seq`` [T, ...]."""
        if self.steps == 0:
            return
        popops.dynamic_update(self.graph, seq, value.expand([0]), self.counter, [0], [1], self.body,
                              f"{self.name}/{what}")

    def close(self, prog) -> None:
        """Append to ``prog``: the counter set to the first step, then the body (followed by
        the counter's step) once per time step."""
        if self.steps == 0:
            return
        one = self.graph.add_constant(UNSIGNED_INT, (1,), 1, f"{self.name}/one")
        self.graph.set_tile_mapping(one, 0)
        popops.fill(self.graph, self.counter, self.steps - 1 if self.reverse else 0, prog,
                    f"{self.name}/initStep")
        step = popops.sub_in_place if self.reverse else popops.add_in_place
        step(self.graph, self.counter, one, self.body, f"{self.name}/nextStep")
        prog.add(Repeat(self.steps, self.body))


# ---- steps both layers take, in this order ----------------------------------------------------

def weigh_input(graph, params, input, input_weights, biases, units: int, prog, base: str, mm: dict):  # noqa: A002
    """All steps' input weighted at once by one matmul, the biases [units, out] added on the
    way into the per-step layout: the sequence [T, B, units * out] the loop slices."""
    steps, batch, n_in, n_out, dt = sizes(params)
    weighted = poplin.mat_mul(graph, input.reshape([steps * batch, n_in]), units_matrix(input_weights), prog,
                              f"{base}/weighInput", mm)
    weighted_seq = sequence_tensor(graph, dt, steps, (batch, units * n_out), f"{base}/weightedInput")
    popops.add_with_output(graph, weighted.reshape([steps, batch, units, n_out]), biases,
                           weighted_seq.reshape([steps, batch, units, n_out]), prog, f"{base}/addBias")
    return weighted_seq


def fwd_sequences(graph, params, num_intermediates: int, return_intermediates: bool, base: str):
    """(the output sequence [T, B, out], None without output_full_sequence; the forward
    intermediates [T, num_intermediates, B, out], None unless asked for)."""
    steps, batch, _, n_out, dt = sizes(params)
    out_seq = sequence_tensor(graph, dt, steps, (batch, n_out), f"{base}/outputSeq") if params.output_full_sequence \
        else None
    inter = (sequence_tensor(graph, dt, steps, (num_intermediates, batch, n_out), f"{base}/fwdIntermediatesSeq")
             if return_intermediates else None)
    return out_seq, inter


def save_step(loop, params, out_seq, inter, saved, output) -> None:
    """In the forward loop: the step's intermediates ``saved`` (then its ``output``, without
    output_full_sequence) into ``inter``, and its output into ``out_seq``, those there are."""
    if inter is not None:
        saved = saved + ([] if params.output_full_sequence else [output])
        loop.update(inter, popsim.concat([t.expand([0]) for t in saved]), "saveIntermediates")
    if out_seq is not None:
        loop.update(out_seq, output, "saveOutput")


def init_output_grad(graph, params, dh, output_grad, prog, base: str) -> None:
    """The backward pass's carried output gradient ``dh`` [B, out] before the last step: zero
    with output_full_sequence (each step adds its own, step_output_grad), else the gradient
    of the one output."""
    if params.output_full_sequence:
        popops.zero(graph, dh, prog, f"{base}/zeroOutputGrad")
    else:
        prog.add(Copy(output_grad, dh))


def step_output_grad(graph, params, loop, dh, output_grad, base: str):
    """The gradient at this step's output: the carried ``dh``, plus the step's slice of
    ``output_grad`` with output_full_sequence."""
    if not params.output_full_sequence:
        return dh
    return popops.add(graph, dh, loop.slice(output_grad, "outputGrad"), loop.body, f"{base}/addOutputGrad")


def previous_outputs(init_output, outputs):
    """h_{t-1} for every step: the initial output, then outputs 0 .. T-2 ([T, B, out] view)."""
    steps = outputs.shape[0]
    if steps == 0:
        return outputs
    parts = [init_output.expand([0])]
    if steps > 1:
        parts.append(outputs.slice(0, steps - 1, 0))
    return popsim.concat(parts, 0)


def sum_over_steps_and_batch(graph, t, prog, name: str):
    """[T, B, ...] summed over T and B (the bias gradients)."""
    return popops.reduce(graph, t, [0, 1], popops.ReduceParams(popops.Operation.ADD), prog, name)


def optional_tensor(graph, t: Optional[popsim.Tensor], shape, dtype, what: str, role: str, layout: str):
    if t is not None:
        check_shape(graph, t, shape, dtype, what, role, layout)
    return t


__all__ = ["ACTIVATIONS", "TimeLoop", "act", "act_grad", "activation_name", "activation_names", "check_common_params",
           "check_intermediates", "check_output", "LayerChecks", "check_shape", "fwd_sequences", "gate", "gates",
           "init_output_grad", "mat_mul_options", "parse_options", "previous_outputs", "save_step", "sequence_tensor",
           "sizes", "state_tensor", "step_output_grad", "sum_over_steps_and_batch", "units_matrix", "weigh_input"]
