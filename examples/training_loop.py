"""What both training examples share: a graph on an IPUModel, its two programs (0: one
training epoch, a Repeat over batches read from host FIFOs; 1: testing, counting correct
answers), the host side that feeds them, and the loop that trains, tests and reports.

A network subclasses Trainer, builds its graph between ``__init__`` and ``finish``:
``self.x`` (the batch of images, any shape of B * H * W elements), ``self.labels`` [B],
``self.loss`` [B], and hands ``finish`` its training step and the probabilities its
forward pass ends with.
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

    def __init__(self, tiles: int, batch_size: int, image_shape, train_batches: int, test_batches: int):
        model = popsim.IPUModel("ipu2")
        model.tiles_per_ipu = tiles
        self.device = model.create_device()
        self.graph = popsim.Graph(self.device.target)
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

    def finish(self, train_step, test_step, probs) -> None:
        """The two programs around the network's steps (which follow the batch's Copy
        from the FIFOs), and the engine."""
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
        programs = [Repeat(self.train_batches, Sequence(feed, train_step, Copy(self.loss, losses_out))),
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

    def _feed(self, images: np.ndarray, labels: np.ndarray, bar=None) -> None:
        self.engine.connect_stream("images", np.ascontiguousarray(images, np.float32).reshape(-1))
        if bar is None:
            self.engine.connect_stream("labels", np.ascontiguousarray(labels, np.uint32).reshape(-1))
            return
        batches = iter(np.ascontiguousarray(labels, np.uint32))

        def next_labels(buffer):  # one call per batch: the bar moves while the device trains
            buffer[:] = next(batches)
            bar.advance()
        self.engine.connect_stream_to_callback("labels", next_labels)

    def train_epoch(self, images: np.ndarray, labels: np.ndarray, bar=None) -> np.ndarray:
        """One epoch over images [n, B, ...], labels [n, B] (n = train_batches) in one run:
        the loss of every image of every step, [n, B]."""
        losses = np.zeros((self.train_batches, self.batch_size), np.float32)
        self._feed(images, labels, bar)
        self.engine.connect_stream("losses", losses.reshape(-1))
        self.engine.run(self.TRAIN)
        return losses

    def test(self, images: np.ndarray, labels: np.ndarray) -> int:
        """How many test images [n, B, ...] the network classifies as ``labels`` [n, B]
        (n = test_batches; rows labelled MASKED_LABEL_CODE never count)."""
        correct = np.zeros(1, np.uint32)
        self._feed(images, labels)
        self.engine.connect_stream("numCorrect", correct)
        self.engine.run(self.TEST)
        return int(correct[0])

    def modelled_cycles(self) -> int:
        """IPU cycles the model counted since the last call."""
        cycles = self.engine.get_report().execution.total_cycles
        self.engine.reset_execution_profile()
        return int(cycles)


def fit(net: Trainer, data: training_data.Dataset, epochs: int, seed: int, started: float) -> float:
    """Train ``epochs`` epochs (each shuffled by a generator seeded with ``seed``), test
    after each, print a line per epoch and the summary; returns the test accuracy (%)."""
    rng = np.random.default_rng(seed)
    test_images, test_labels = training_data.padded_batches(data.test, net.batch_size, popsim.popops.MASKED_LABEL_CODE)
    train_cycles = train_seconds = 0.0
    accuracy = 0.0
    for epoch in range(1, epochs + 1):
        images, labels = training_data.epoch_batches(data.train, net.batch_size, rng)
        bar = ProgressBar(net.train_batches, f"Epoch {epoch}/{epochs}")
        t0 = time.perf_counter()
        losses = net.train_epoch(images, labels, bar)
        train_seconds += time.perf_counter() - t0
        train_cycles += net.modelled_cycles()
        accuracy = 100.0 * net.test(test_images, test_labels) / len(data.test.labels)
        net.modelled_cycles()
        bar.finish(f"  loss {losses.mean():.4f}, test accuracy {accuracy:.1f}%")
    steps = epochs * net.train_batches
    step_seconds = train_cycles / steps / net.device.target.tile_clock_frequency
    print(f"test accuracy: {accuracy:.1f}%")
    print(f"modelled IPU: {step_seconds * 1e6:.1f} us per training step of {net.batch_size} images, "
          f"{net.batch_size / step_seconds:,.0f} samples/s; host: {train_seconds / steps * 1e3:.2f} ms per step, "
          f"{net.batch_size * steps / train_seconds:,.0f} samples/s ({time.perf_counter() - started:.1f} s in all, "
          "graph building and codelet compilation included)")
    return accuracy
