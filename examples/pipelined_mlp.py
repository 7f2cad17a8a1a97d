"""Pipeline a 4-layer MLP over 4 simulated IPUs, one layer per IPU, and compare it with the
same MLP on one IPU.

Each layer is a fully connected layer: poplin.mat_mul, then the bias (poplin.add_bias) and,
except in the last layer, a ReLU (popnn). Inference runs over a batch split into M
micro-batches, read from a host FIFO and written back to another, in two programs built
from the same layer-building function:

- "1 IPU": the whole model on one IPU, each micro-batch through the four layers in turn;
- "pipelined on 4 IPUs": layer s on IPU s (its own virtual graph), as PopART pipelines a
  model: each stage is a Function, and each pipeline cycle Calls the active stages, then
  copies every stage's output over the IPU-Links into the next stage's input. The first
  stages-1 cycles fill the pipeline, a Repeat runs the cycles where all stages are busy,
  and stages-1 more cycles flush it.

The script prints the modelled time of one batch in each program (from the engine's
report) and checks that the two give the same outputs.

Run: python examples/pipelined_mlp.py [--micro-batches M] [--micro-batch-size B]
                                      [--tiles-per-ipu T] [--width W]
"""
import argparse
import sys
from dataclasses import dataclass
from typing import List, Sequence as Seq, Tuple

import numpy as np

import popsim
from popsim import FLOAT, poplin, popnn
from popsim.program import Call, Copy, Repeat, Sequence

STAGES = 4  # one layer per stage, one stage per IPU
RELU = popnn.NonLinearityType.RELU
SINGLE, PIPELINED = "1 IPU", f"pipelined on {STAGES} IPUs"  # the two programs, as printed


@dataclass(frozen=True)
class MlpConfig:
    micro_batches: int = 16      # M: micro-batches per batch
    micro_batch_size: int = 8    # B: samples per micro-batch
    tiles_per_ipu: int = 32      # T: tiles of each IPU (the 1-IPU run has the same)
    width: int = 128             # W: features in and out of every layer

    def __post_init__(self):
        for field in ("micro_batches", "micro_batch_size", "tiles_per_ipu", "width"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{field} must be a positive integer, found {value!r}")
        if self.micro_batches < STAGES:
            # the main phase needs at least one cycle in which every stage is busy
            raise ValueError(f"the pipeline of {STAGES} stages needs at least {STAGES} micro-batches, found "
                             f"micro_batches={self.micro_batches}")

    @property
    def batch_size(self) -> int:
        return self.micro_batches * self.micro_batch_size

    @property
    def micro_batch_shape(self) -> Tuple[int, int]:
        return (self.micro_batch_size, self.width)


Weights = List[Tuple[np.ndarray, np.ndarray]]  # per layer: weights [W, W], biases [W]


def initial_weights(config: MlpConfig, seed: int = 0) -> Weights:
    """He-normal weights and small random biases (float32), the same for both programs."""
    rng = np.random.default_rng(seed)
    w = config.width
    return [((rng.standard_normal((w, w)) * np.sqrt(2.0 / w)).astype(np.float32),
             (rng.standard_normal(w) * 0.1).astype(np.float32)) for _ in range(STAGES)]


def make_inputs(config: MlpConfig, seed: int = 1) -> np.ndarray:
    """A batch as its micro-batches: [M, B, W] float32."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((config.micro_batches,) + config.micro_batch_shape).astype(np.float32)


def numpy_mlp(weights: Weights, inputs: np.ndarray) -> np.ndarray:
    """The same MLP in float64: the reference both programs are checked against."""
    x = inputs.astype(np.float64)
    for layer, (w, b) in enumerate(weights):
        x = x @ w.astype(np.float64) + b.astype(np.float64)
        if layer < STAGES - 1:
            x = np.maximum(x, 0.0)
    return x


def build_layer(graph, x, layer: int, weights: Weights, prog: Sequence, cache):
    """Layer ``layer`` on ``graph`` (the whole device, or one IPU's virtual graph): its
    weights and biases, initialised from ``weights``, and its work appended to ``prog``;
    returns its output [B, W], a new tensor on the graph's tiles."""
    w_values, b_values = weights[layer]
    name = f"layer{layer}"
    w = poplin.create_mat_mul_input_rhs(graph, FLOAT, tuple(x.shape), w_values.shape, f"{name}/weights",
                                        cache=cache)
    graph.set_initial_value(w, w_values)  # part of the loaded image: no run spends cycles on it
    y = poplin.mat_mul(graph, x, w, prog, f"{name}/fc", cache=cache)
    b = poplin.create_biases(graph, y, f"{name}/biases")  # on the tiles of the columns it is added to
    graph.set_initial_value(b, b_values)
    poplin.add_bias(graph, y, b, prog, f"{name}/bias")
    if layer < STAGES - 1:
        popnn.non_linearity_in_place(graph, RELU, y, prog, f"{name}/relu")
    return y


def create_input(graph, config: MlpConfig, name: str, cache):
    """A layer input laid out as the matmul wants its left-hand side."""
    w = config.width
    return poplin.create_mat_mul_input_lhs(graph, FLOAT, config.micro_batch_shape, (w, w), name, cache=cache)


def add_streams(graph, config: MlpConfig):
    n = config.micro_batch_size * config.width
    return (graph.add_host_to_device_fifo("micro-batches", FLOAT, n),
            graph.add_device_to_host_fifo("results", FLOAT, n))


def create_device(config: MlpConfig, num_ipus: int) -> popsim.Device:
    """An ipu2 IPU Model of ``num_ipus`` IPUs of ``config.tiles_per_ipu`` tiles each."""
    model = popsim.IPUModel("ipu2")
    model.num_ipus = num_ipus
    model.tiles_per_ipu = config.tiles_per_ipu
    return model.create_device()


@dataclass
class MlpProgram:
    """One way of running the MLP: its graph and program, and per layer its input buffer
    and output (the tensors the tests look at)."""

    graph: popsim.Graph
    program: popsim.program.Program
    inputs: list
    outputs: list


# -- the two programs ------------------------------------------------------------------------------
def build_single_ipu(config: MlpConfig, weights: Weights, device: popsim.Device) -> MlpProgram:
    """Every micro-batch through the four layers in turn, on one IPU."""
    graph = popsim.Graph(device)
    cache = poplin.PlanningCache()
    micro_batches, results = add_streams(graph, config)
    x = create_input(graph, config, "input", cache)
    body = Sequence(Copy(micro_batches, x))
    outputs = []
    for layer in range(STAGES):  # each layer reads the previous one's output where it is
        outputs.append(build_layer(graph, outputs[-1] if outputs else x, layer, weights, body, cache))
    body.add(Copy(outputs[-1], results))
    return MlpProgram(graph, Repeat(config.micro_batches, body), [x], outputs)


def pipeline_schedule(micro_batches: int, stages: int = STAGES) -> List[Tuple[str, List[int]]]:
    """The pipeline cycles in order, as (phase, active stages). In cycle c stage s works on
    micro-batch c - s, so it is active when 0 <= c - s < micro_batches: the first
    stages - 1 cycles fill the pipeline, the last stages - 1 flush it."""
    if micro_batches < stages:
        raise ValueError(f"a pipeline of {stages} stages needs at least {stages} micro-batches, found "
                         f"{micro_batches}")
    cycles = []
    for c in range(micro_batches + stages - 1):
        phase = "fill" if c < stages - 1 else "main" if c < micro_batches else "flush"
        cycles.append((phase, [s for s in range(stages) if 0 <= c - s < micro_batches]))
    return cycles


def build_pipelined(config: MlpConfig, weights: Weights, device: popsim.Device) -> MlpProgram:
    """Layer s on IPU s, pipelined over the micro-batches."""
    t = config.tiles_per_ipu
    graph = popsim.Graph(device)
    ipus = [graph.create_virtual_graph(i * t, (i + 1) * t) for i in range(STAGES)]
    cache = poplin.PlanningCache()
    micro_batches, results = add_streams(graph, config)

    # Each stage reads its own input buffer, on its IPU. One buffer per stage is enough:
    # within a pipeline cycle every active stage computes first and the inter-IPU copies
    # run after, so the copy into stage s's input never overwrites what stage s is still
    # using, and each stage's output is copied away before the stage computes again.
    inputs = [create_input(ipu, config, f"stage{s}/input", cache) for s, ipu in enumerate(ipus)]
    outputs, stages = [], []
    for s, ipu in enumerate(ipus):
        body = Sequence()
        if s == 0:  # the first stage reads its micro-batch from the host
            body.add(Copy(micro_batches, inputs[0]))
        outputs.append(build_layer(ipu, inputs[s], s, weights, body, cache))
        if s == STAGES - 1:  # the last stage hands its result to the host
            body.add(Copy(outputs[s], results))
        stages.append(graph.add_function(body, f"stage{s}"))

    # All inter-IPU copies as one Copy (one exchange, as PopART merges them), run every
    # cycle: a copy out of an idle stage only feeds a stage that is idle next cycle too.
    sources = popsim.concat([outputs[s].flatten() for s in range(STAGES - 1)])
    destinations = popsim.concat([inputs[s].flatten() for s in range(1, STAGES)])
    ipu_copies = graph.add_function(Sequence(Copy(sources, destinations)), "ipuCopies")

    def cycle(active: Seq[int]) -> Sequence:
        return Sequence(*[Call(stages[s]) for s in active], Call(ipu_copies))

    schedule = pipeline_schedule(config.micro_batches)
    fill = Sequence(*[cycle(active) for phase, active in schedule if phase == "fill"])
    steady = Repeat(sum(phase == "main" for phase, _ in schedule), cycle(range(STAGES)))  # its cycles are alike
    flush = Sequence(*[cycle(active) for phase, active in schedule if phase == "flush"])
    return MlpProgram(graph, Sequence(fill, steady, flush), inputs, outputs)


def run(config: MlpConfig, build, weights: Weights, inputs: np.ndarray, device: popsim.Device):
    """Build one program on ``device`` and run it once over ``inputs`` [M, B, W]: its
    outputs [M, B, W] and the engine's report of that run."""
    mlp = build(config, weights, device)
    outputs = np.zeros_like(inputs)
    with popsim.Engine(mlp.graph, mlp.program) as engine:
        engine.load(device)
        engine.connect_stream("micro-batches", inputs.reshape(-1))
        engine.connect_stream("results", outputs.reshape(-1))
        engine.run(0)
        return outputs, engine.get_report()


def main(argv=None) -> int:
    defaults = MlpConfig()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--micro-batches", type=int, default=defaults.micro_batches, metavar="M",
                        help=f"micro-batches per batch (at least {STAGES})")
    parser.add_argument("--micro-batch-size", type=int, default=defaults.micro_batch_size, metavar="B")
    parser.add_argument("--tiles-per-ipu", type=int, default=defaults.tiles_per_ipu, metavar="T")
    parser.add_argument("--width", type=int, default=defaults.width, metavar="W", help="features of every layer")
    parser.add_argument("--seed", type=int, default=0, help="seeds the weights and the inputs")
    args = parser.parse_args(argv)
    try:
        config = MlpConfig(args.micro_batches, args.micro_batch_size, args.tiles_per_ipu, args.width)
        devices = {SINGLE: create_device(config, 1), PIPELINED: create_device(config, STAGES)}
    except (ValueError, popsim.PopsimError) as e:  # e.g. more tiles than an IPU has
        parser.error(str(e))  # exits with status 2, the message and the usage

    target = devices[SINGLE].target
    print(f"Using the IPU Model ({target.arch}, {target.tile_clock_frequency / 1e9:.2f} GHz): 1 IPU of "
          f"{config.tiles_per_ipu} tiles, then {STAGES} IPUs of {config.tiles_per_ipu} tiles")
    print(f"MLP of {STAGES} layers of width {config.width}; a batch of {config.batch_size} samples as "
          f"{config.micro_batches} micro-batches of {config.micro_batch_size}")
    weights = initial_weights(config, args.seed)
    inputs = make_inputs(config, args.seed + 1)
    outputs, times = {}, {}
    for label, build in ((SINGLE, build_single_ipu), (PIPELINED, build_pipelined)):
        outputs[label], report = run(config, build, weights, inputs, devices[label])
        # Only the report's figure: how far the stages overlap is the engine's to model
        # (each IPU keeps its own clock between the syncs that join them).
        cycles = report.execution.total_cycles
        times[label] = cycles / devices[label].target.tile_clock_frequency * 1e6
        print(f"modelled time per batch, {label}: {times[label]:.2f} us ({cycles:,.0f} cycles)")
    print(f"1 IPU / pipelined: {times[SINGLE] / times[PIPELINED]:.2f}x")

    single, piped = outputs[SINGLE], outputs[PIPELINED]
    if not np.array_equal(piped, single):  # same matmul plans, so the same sums in the same order
        print(f"outputs differ: max |pipelined - 1 IPU| = {np.abs(piped - single).max():.3g}")
        return 1
    error = float(np.abs(piped - numpy_mlp(weights, inputs)).max())
    print(f"outputs agree: pipelined == 1 IPU bit for bit, max |IPU - numpy float64| = {error:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
