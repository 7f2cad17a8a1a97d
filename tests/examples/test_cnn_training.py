"""examples/cnn_training.py: the device's training against numpy's, step by step, from the
same initial weights and batches; the script's output."""
import numpy as np
import pytest

import training_data
from cnn_training import CnnConfig, CnnOnIpu, initial_weights, main
from numpy_networks import NumpyCnn
from popsim import popops


def _numpy_twin(config, weights):
    return NumpyCnn(weights, config.learning_rate, config.momentum, config.bn_eps, config.bn_momentum)


def test_first_epoch_matches_numpy_step_by_step(digits):
    config = CnnConfig()
    images, labels = training_data.epoch_batches(digits.train, config.batch_size, np.random.default_rng(1))
    test_images, test_labels = training_data.padded_batches(digits.test, config.batch_size, popops.MASKED_LABEL_CODE)
    weights = initial_weights(config, seed=3)
    net = CnnOnIpu(config, len(labels), len(test_labels), weights)
    twin = _numpy_twin(config, weights)

    device_losses = net.train_epoch(images, labels)
    numpy_losses = np.stack([twin.step(x, y) for x, y in zip(images, labels)])
    # every step's mean loss, and the epoch's, within 1e-4 relative (FLOAT on the device)
    np.testing.assert_allclose(device_losses.mean(axis=1), numpy_losses.mean(axis=1), rtol=1e-4)
    assert abs(device_losses.mean() / numpy_losses.mean() - 1) < 1e-4
    assert numpy_losses.mean(axis=1)[-5:].mean() < 0.5 * numpy_losses.mean(axis=1)[:5].mean()  # it learned

    trained = net.read()
    for name, value in twin.p.items():
        np.testing.assert_allclose(trained[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(trained["running_mean"], twin.running_mean, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(trained["running_var"], twin.running_var, rtol=1e-3, atol=1e-5)

    # testing uses the running statistics: the same answers as numpy's
    logits, _ = twin.forward(digits.test.images, training=False)
    expected = int((logits.argmax(axis=1) == digits.test.labels).sum())
    assert net.test(test_images, test_labels) == expected


@pytest.mark.slow
def test_script_reaches_97_percent_on_digits(capsys):
    """README's main job, as it runs it (10 epochs; the quick start runs it too, and the
    test above checks its training step by step)."""
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "Using the IPU Model" in out and "Epoch 10/10" in out and "100%" in out
    accuracy = float(out.split("test accuracy: ")[1].split("%")[0])
    assert accuracy >= 97.0
    assert "us per training step of 32 images" in out and "samples/s" in out
