"""examples/training_data.py: the IDX reader against files written from the format's
definition, the digits split and the batching."""
import gzip

import numpy as np
import pytest

import training_data

_TYPE_BYTES = {np.dtype(np.uint8): 0x08, np.dtype(">i4"): 0x0C, np.dtype(">f4"): 0x0D}


def write_idx(path, array: np.ndarray) -> None:
    """An IDX file: 0, 0, the type byte, the rank, big-endian uint32 sizes, the elements."""
    dtype = array.dtype.newbyteorder(">") if array.dtype.itemsize > 1 else array.dtype
    data = bytes([0, 0, _TYPE_BYTES[dtype], array.ndim]) + np.asarray(array.shape, ">u4").tobytes() \
        + array.astype(dtype).tobytes()
    path = str(path)
    with (gzip.open if path.endswith(".gz") else open)(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_idx_round_trip(tmp_path, dtype, suffix):
    array = (np.arange(24).reshape(2, 3, 4) * 7 % 251).astype(dtype)
    write_idx(tmp_path / f"a{suffix}", array.astype(np.dtype(dtype).newbyteorder(">")))
    got = training_data.read_idx(str(tmp_path / f"a{suffix}"))
    assert got.shape == (2, 3, 4) and np.array_equal(got.astype(dtype), array)


def test_idx_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x01\x02\x08\x01")
    with pytest.raises(ValueError, match="not an IDX file"):
        training_data.read_idx(str(bad))
    short = tmp_path / "short"
    short.write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 5, 1, 2]))
    with pytest.raises(ValueError, match=r"shape \(5,\).*has 13 bytes, found 10"):
        training_data.read_idx(str(short))
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        training_data.load_mnist(str(tmp_path))


def test_digits_split_and_batches(digits):
    data = digits
    assert len(data.train.labels) + len(data.test.labels) == 1797
    assert data.train.images.shape[1:] == (8, 8) and data.train.images.dtype == np.float32
    assert 0 <= data.train.images.min() and data.train.images.max() <= 1
    images, labels = training_data.epoch_batches(data.train, 32, np.random.default_rng(0))
    assert images.shape == (len(data.train.labels) // 32, 32, 8, 8) and labels.shape == images.shape[:2]
    padded_images, padded_labels = training_data.padded_batches(data.test, 32, 0xFFFFFFFF)
    n = len(data.test.labels)
    assert padded_labels.size == -(-n // 32) * 32
    assert np.array_equal(padded_labels.reshape(-1)[:n], data.test.labels)
    assert (padded_labels.reshape(-1)[n:] == 0xFFFFFFFF).all() and not padded_images.reshape(-1, 64)[n:].any()
