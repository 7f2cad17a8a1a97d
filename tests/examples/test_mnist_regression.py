"""examples/mnist_regression.py: the device's training against numpy's, step by step; the
demo's command line and output; --mnist reading IDX files."""
import numpy as np
import pytest

import training_data
from mnist_regression import RegressionOnIpu, initial_weights, main
from numpy_networks import NumpyRegression
from popsim import popops
from test_training_data import write_idx


def test_first_epoch_matches_numpy_step_by_step(digits):
    batch, lr = 32, 0.5
    images, labels = training_data.epoch_batches(digits.train, batch, np.random.default_rng(2))
    test_images, test_labels = training_data.padded_batches(digits.test, batch, popops.MASKED_LABEL_CODE)
    weights = initial_weights(64, seed=5)
    net = RegressionOnIpu((8, 8), batch, lr, len(labels), len(test_labels), weights)
    twin = NumpyRegression(weights, lr)

    device_losses = net.train_epoch(images, labels)
    numpy_losses = np.stack([twin.step(x, y) for x, y in zip(images, labels)])
    np.testing.assert_allclose(device_losses.mean(axis=1), numpy_losses.mean(axis=1), rtol=1e-4)
    assert abs(device_losses.mean() / numpy_losses.mean() - 1) < 1e-4
    trained = net.read()
    np.testing.assert_allclose(trained["weights"], twin.w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(trained["biases"], twin.b, rtol=1e-4, atol=1e-5)

    _, logits = twin.logits(digits.test.images)
    expected = int((logits.argmax(axis=1) == digits.test.labels).sum())
    assert net.test(test_images, test_labels) == expected


def test_demo_command_line(capsys, digits):  # (digits: skipped without them)
    """The demo's test runs ``regression-demo 1 1.0`` and looks for these strings."""
    assert main(["1", "1.0"]) == 0
    out = capsys.readouterr().out
    for expected in ("Using the IPU Model", "Epoch", "100%", "test accuracy: "):
        assert expected in out


def test_reaches_90_percent_on_digits(capsys, digits):
    main(["20"])
    accuracy = float(capsys.readouterr().out.split("test accuracy: ")[1].split("%")[0])
    assert accuracy >= 90.0


def test_reads_mnist_idx_files(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 64), ("t10k", 20)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = (labels[:, None, None] * 25 + rng.integers(0, 5, (n, 28, 28))).astype(np.uint8)
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte", images)
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", labels)
    assert main(["2", "--mnist", str(tmp_path), "--batch-size", "16"]) == 0
    out = capsys.readouterr().out
    assert "MNIST: 64 training and 20 test images of 28x28, batches of 16" in out


def test_ipu_flag_says_what_to_do(capsys):
    with pytest.raises(SystemExit):
        main(["-IPU"])
    assert "drop -IPU" in capsys.readouterr().err
