"""What both training examples share: a graph on an IPUModel, its two programs (0: one
training epoch, a Repeat over batches read from host FIFOs; 1: testing, counting correct
answers), the host side that feeds them, and the loop that trains, tests and reports.

A network subclasses Trainer, builds its graph between ``__init__`` and ``finish``:
``self.x`` (the batch of images, any shape of B * H * W elements), ``self.labels`` [B],
``self.loss`` [B], and hands ``finish`` its training step and the probabilities its
forward pass ends with.

With ``replicas`` R > 1 the graph is replicated (data parallelism, docs/multi_ipu.md): an
IPUModel of R IPUs, one replica on each, and B is each replica's micro-batch. The host side
still speaks in global batches of R * B samples: replica r reads rows [r B, (r + 1) B) of
each, from its own side of the (REPLICATE) FIFOs. Under MPI (``mpiexec -n N``,
docs/scale_out.md) each process feeds and reads the replicas it holds, and the losses and
counts it reports are summed over the processes.
"""
import time

import numpy as np

import popsim
from popsim import FLOAT, UNSIGNED_INT, popnn
from popsim.program import Copy, Repeat, Sequence

import training_data
from progress_bar import ProgressBar


class Trainer:
    TRAIN, TEST = 0, 1

    def __init__(self, tiles: int, batch_size: int, image_shape, train_batches: int, test_batches: int,
                 replicas: int = 1):
        model = popsim.IPUModel("ipu2")
        model.tiles_per_ipu, model.num_ipus = tiles, replicas
        self.device = model.create_device()
        self.graph = popsim.Graph(self.device, replication_factor=replicas)
        self.replicas = replicas
        # Under MPI this process holds replicas [first, first + local) (popsim.dist).
        self.first, self.local = popsim.dist.replica_index_offset(), popsim.dist.num_local_replicas()
        self.batch_size, self.image_shape = batch_size, tuple(image_shape)
        self.train_batches, self.test_batches = train_batches, test_batches
        self.parameters = {}  # name -> tensor, host-readable and -writable under its name
        self.labels = self.graph.add_variable(UNSIGNED_INT, (batch_size,), "labels")
        self.loss = self.graph.add_variable(FLOAT, (batch_size,), "loss")
        for t in (self.labels, self.loss):
            self.graph.set_tile_mapping(t, 0)

    def add_parameter(self, name: str, tensor):
        self.parameters[name] = tensor
        self.graph.create_host_write(name, tensor)
        self.graph.create_host_read(name, tensor)
        return tensor

    @property
    def global_batch_size(self) -> int:
        """The samples of one training step over all replicas."""
        return self.replicas * self.batch_size

    def finish(self, train_step, test_step, probs, update=None, accumulate: int = 1, prologue=None) -> None:
        """The two programs around the network's steps (which follow the batch's Copy
        from the FIFOs), and the engine. With ``update``, training runs ``update`` after
        every ``accumulate`` steps (gradient accumulation; train_batches a multiple of it);
        ``prologue`` before the first step of each training run."""
        g, b = self.graph, self.batch_size
        image_elements = b * int(np.prod(self.image_shape))
        feed = Sequence(Copy(g.add_host_to_device_fifo("images", FLOAT, image_elements),
                             self.x.reshape((image_elements,))),
                        Copy(g.add_host_to_device_fifo("labels", UNSIGNED_INT, b), self.labels))
        losses_out = g.add_device_to_host_fifo("losses", FLOAT, b)
        num_correct = g.add_variable(UNSIGNED_INT, (1,), "numCorrect")
        zero = g.add_constant(UNSIGNED_INT, (1,), 0, "zero")
        for t in (num_correct, zero):
            g.set_tile_mapping(t, 0)
        popnn.calc_accuracy(g, probs, self.labels, num_correct, test_step, "accuracy")
        step = Sequence(feed, train_step, Copy(self.loss, losses_out))
        self.accumulate = accumulate if update is not None else 1
        if update is not None:
            assert self.train_batches % accumulate == 0, "train_batches must be a multiple of accumulate"
            step = Sequence(Repeat(accumulate, step), update) if accumulate > 1 else Sequence(step, update)
        train = Repeat(self.train_batches // accumulate if update is not None else self.train_batches, step)
        programs = [train if prologue is None else Sequence(prologue, train),
                    Sequence(Copy(zero, num_correct), Repeat(self.test_batches, Sequence(feed, test_step)),
                             Copy(num_correct, g.add_device_to_host_fifo("numCorrect", UNSIGNED_INT, 1)))]
        self.engine = popsim.Engine(g, programs)
        self.engine.load(self.device)

    # -- host side ----------------------------------------------------------------------------
    def write(self, values: dict) -> None:
        for name, value in values.items():
            self.engine.write_tensor(name, np.ascontiguousarray(value, np.float32))

    def read(self, names=None) -> dict:
        return {name: self.engine.read_tensor(name) for name in (names or self.parameters)}

    def per_replica(self, batches: np.ndarray) -> np.ndarray:
        """Global batches [n, R B, ...] as the FIFO buffers of the replicas this process
        holds: [n B ...] with one replica, else [local, n B ...], replica r's row holding
        rows [r B, (r + 1) B) of each batch."""
        n, r, b = len(batches), self.replicas, self.batch_size
        if r == 1:
            return np.ascontiguousarray(batches).reshape(-1)
        split = batches.reshape((n, r, b) + batches.shape[2:])[:, self.first:self.first + self.local]
        return np.ascontiguousarray(np.moveaxis(split, 1, 0)).reshape(self.local, -1)

    def _feed(self, images: np.ndarray, labels: np.ndarray, bar=None) -> None:
        self.engine.connect_stream("images", self.per_replica(np.asarray(images, np.float32)))
        labels = np.asarray(labels, np.uint32)
        if bar is None:
            self.engine.connect_stream("labels", self.per_replica(labels))
            return
        for replica in range(self.first, self.first + self.local):
            batches = iter(labels.reshape(len(labels), self.replicas, self.batch_size)[:, replica])

            def next_labels(buffer, batches=batches, replica=replica):  # one call per batch and replica:
                buffer[:] = next(batches)                               # the bar moves while the device trains
                if replica == self.first:
                    bar.advance()
            if self.replicas == 1:
                self.engine.connect_stream_to_callback("labels", next_labels)
            else:
                self.engine.connect_stream_to_callback("labels", replica, next_labels)

    def train_epoch(self, images: np.ndarray, labels: np.ndarray, bar=None) -> np.ndarray:
        """One epoch over images [n, R B, ...], labels [n, R B] (the first train_batches
        global batches) in one run: the loss of every image of every step, [n, R B] (under
        MPI, of this process's replicas: [n, local B])."""
        n, r, b = self.train_batches, self.local, self.batch_size
        losses = np.zeros((r, n, b), np.float32)
        self._feed(images[:n], labels[:n], bar)
        self.engine.connect_stream("losses", losses.reshape(-1) if self.replicas == 1 else losses.reshape(r, -1))
        self.engine.run(self.TRAIN)
        return np.moveaxis(losses, 0, 1).reshape(n, r * b)

    def test(self, images: np.ndarray, labels: np.ndarray) -> int:
        """How many test images [n, R B, ...] the network classifies as ``labels`` [n, R B]
        (n = test_batches; rows labelled MASKED_LABEL_CODE never count)."""
        correct = np.zeros((self.local, 1), np.uint32)
        self._feed(images, labels)
        self.engine.connect_stream("numCorrect", correct if self.replicas > 1 else correct[0])
        self.engine.run(self.TEST)
        return int(sum_over_processes(np.array([correct.sum()], np.int64))[0])

    def modelled_cycles(self) -> int:
        """IPU cycles the model counted since the last call."""
        cycles = self.engine.get_report().execution.total_cycles
        self.engine.reset_execution_profile()
        return int(cycles)


def sum_over_processes(values: np.ndarray) -> np.ndarray:
    """``values`` summed over the MPI processes (host-side figures only; the device's
    arithmetic never goes through MPI)."""
    if popsim.dist.num_instances() == 1:
        return values
    from mpi4py import MPI
    total = np.empty_like(values)
    MPI.COMM_WORLD.Allreduce(np.ascontiguousarray(values), total, MPI.SUM)
    return total


def mean_over_processes(losses: np.ndarray) -> float:
    """The mean of every process's ``losses``."""
    if popsim.dist.num_instances() == 1:
        return float(losses.mean())
    total, count = sum_over_processes(np.array([losses.astype(np.float64).sum(), losses.size]))
    return float(total / count)


def fit(net: Trainer, data: training_data.Dataset, epochs: int, seed: int, started: float) -> float:
    """Train ``epochs`` epochs (each shuffled by a generator seeded with ``seed``), test
    after each, print a line per epoch and the summary; returns the test accuracy (%)."""
    rng = np.random.default_rng(seed)
    batch = net.global_batch_size
    test_images, test_labels = training_data.padded_batches(data.test, batch, popsim.popops.MASKED_LABEL_CODE)
    train_cycles = train_seconds = 0.0
    accuracy = 0.0
    for epoch in range(1, epochs + 1):
        images, labels = training_data.epoch_batches(data.train, batch, rng)
        bar = ProgressBar(net.train_batches, f"Epoch {epoch}/{epochs}") if popsim.dist.instance_index() == 0 else None
        t0 = time.perf_counter()
        losses = net.train_epoch(images, labels, bar)
        train_seconds += time.perf_counter() - t0
        train_cycles += net.modelled_cycles()
        accuracy = 100.0 * net.test(test_images, test_labels) / len(data.test.labels)
        net.modelled_cycles()
        if bar is not None:
            bar.finish(f"  loss {mean_over_processes(losses):.4f}, test accuracy {accuracy:.1f}%")
        elif popsim.dist.num_instances() > 1:
            mean_over_processes(losses)  # every process takes part in the sum
    steps = epochs * net.train_batches
    step_seconds = train_cycles / steps / net.device.target.tile_clock_frequency
    print(f"test accuracy: {accuracy:.1f}%")
    replicas = f" ({net.replicas} replicas of {net.batch_size})" if net.replicas > 1 else ""
    if net.accumulate > 1:
        replicas += f", an update every {net.accumulate}"
    print(f"modelled IPU: {step_seconds * 1e6:.1f} us per training step of {batch} images{replicas}, "
          f"{batch / step_seconds:,.0f} samples/s; host: {train_seconds / steps * 1e3:.2f} ms per step, "
          f"{batch * steps / train_seconds:,.0f} samples/s ({time.perf_counter() - started:.1f} s in all, "
          "graph building and codelet compilation included)")
    return accuracy
