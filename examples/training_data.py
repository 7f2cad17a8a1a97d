"""The examples' data: scikit-learn's bundled handwritten digits (8x8, no download) or real
MNIST read from the standard IDX files (``--mnist DIR``).

Images come back as float32 [N, H, W] in [0, 1], labels as uint32 [N] (Poplar's
UNSIGNED_INT), split into (train, test) pairs.
"""
import gzip
import os
from typing import NamedTuple

import numpy as np

#: IDX element types by their type byte (the format's table)
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class Split(NamedTuple):
    images: np.ndarray  # float32 [N, H, W] in [0, 1]
    labels: np.ndarray  # uint32 [N]


class Dataset(NamedTuple):
    name: str
    train: Split
    test: Split


def read_idx(path: str) -> np.ndarray:
    """One IDX file (optionally gzipped): two zero bytes, the element type, the rank, the
    big-endian 32-bit sizes, then the elements."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] or data[1] or data[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file (it must start with two zero bytes and a type byte in "
                         f"{sorted(hex(t) for t in _IDX_TYPES)}, found {data[:4]!r})")
    rank = data[3]
    shape = tuple(int(s) for s in np.frombuffer(data, ">u4", rank, 4))
    dtype = np.dtype(_IDX_TYPES[data[2]])
    count = int(np.prod(shape))
    if len(data) != 4 + 4 * rank + count * dtype.itemsize:
        raise ValueError(f"{path}: an IDX file of shape {shape} and type {dtype} has "
                         f"{4 + 4 * rank + count * dtype.itemsize} bytes, found {len(data)}")
    return np.frombuffer(data, dtype, count, 4 + 4 * rank).reshape(shape)


def _idx_file(directory: str, stem: str) -> str:
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"--mnist {directory}: no {stem}[.gz] there (the standard MNIST files are "
                            "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
                            "t10k-labels-idx1-ubyte)")


def load_mnist(directory: str) -> Dataset:
    """MNIST from its four IDX files in ``directory``: 60,000 training and 10,000 test images."""
    def split(prefix):
        images = read_idx(_idx_file(directory, f"{prefix}-images-idx3-ubyte"))
        labels = read_idx(_idx_file(directory, f"{prefix}-labels-idx1-ubyte"))
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise ValueError(f"--mnist {directory}: {prefix} images {images.shape} and labels {labels.shape} do "
                             "not pair up (expected [N, H, W] and [N])")
        return Split((images / np.float32(255)).astype(np.float32), labels.astype(np.uint32))
    return Dataset("MNIST", split("train"), split("t10k"))


def load_digits(test_fraction: float = 0.2, seed: int = 0) -> Dataset:
    """scikit-learn's 1,797 8x8 handwritten digits (bundled with it: no download), shuffled
    with ``seed`` and split into train and test."""
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError as e:
        raise SystemExit("the digits set comes with scikit-learn: pip install \".[examples]\" "
                         "(or pass --mnist DIR with the MNIST IDX files)") from e
    digits = sklearn_digits()
    images = (digits.images / np.float32(16)).astype(np.float32)
    labels = digits.target.astype(np.uint32)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(round(len(labels) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return Dataset("digits", Split(images[train], labels[train]), Split(images[test], labels[test]))


def load(mnist_dir=None, percent: float = 100.0) -> Dataset:
    """The digits, or MNIST from ``mnist_dir``; ``percent`` keeps that share of the training
    images (the regression demo's argument), at least one."""
    data = load_mnist(mnist_dir) if mnist_dir else load_digits()
    if not 0 < percent <= 100:
        raise SystemExit(f"percent of images must be in (0, 100], found {percent}")
    keep = max(1, int(len(data.train.labels) * percent / 100))
    return data._replace(train=Split(data.train.images[:keep], data.train.labels[:keep]))


def epoch_batches(split: Split, batch_size: int, rng=None):
    """The whole batches of one epoch (shuffled when ``rng`` is given), as contiguous
    arrays a FIFO stream reads in order: images [n, B, H, W], labels [n, B]."""
    n = len(split.labels) // batch_size
    if n == 0:
        raise SystemExit(f"{len(split.labels)} images make no whole batch of {batch_size}; lower --batch-size")
    order = rng.permutation(len(split.labels)) if rng is not None else np.arange(len(split.labels))
    order = order[:n * batch_size]
    return (np.ascontiguousarray(split.images[order].reshape((n, batch_size) + split.images.shape[1:])),
            np.ascontiguousarray(split.labels[order].reshape(n, batch_size)))


def padded_batches(split: Split, batch_size: int, masked_label: int):
    """Every image in batches of ``batch_size``, the last one padded with blank images whose
    label is ``masked_label`` (popops.MASKED_LABEL_CODE: no loss, never counted correct)."""
    n = -(-len(split.labels) // batch_size)
    pad = n * batch_size - len(split.labels)
    images = np.concatenate([split.images, np.zeros((pad,) + split.images.shape[1:], np.float32)])
    labels = np.concatenate([split.labels, np.full(pad, masked_label, np.uint32)])
    return images.reshape((n, batch_size) + split.images.shape[1:]), labels.reshape(n, batch_size)
