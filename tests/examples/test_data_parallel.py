"""examples/cnn_training.py's data parallelism (examples/data_parallel.py): R replicas, each
on its micro-batch, train like one replica on the R-times batch; gradient accumulation;
the sharded optimizer; the command line."""
import numpy as np
import pytest

import training_data
from cnn_training import PARAMETERS, CnnConfig, CnnOnIpu, initial_weights, main
from data_parallel import momentum_memory, shard_length, tile_bytes
from numpy_networks import NumpyCnn
from popsim import popops

GLOBAL_BATCH, STEPS, TILES = 16, 8, 16
STATE = PARAMETERS + ("running_mean", "running_var")


_RUNS = {}


def _train(digits, replicas=1, batch=GLOBAL_BATCH, accumulate=1, shard=False):
    """A net of ``replicas`` replicas of micro-batch ``batch`` trained STEPS steps of the
    same shuffled data (global batches of ``replicas * batch``), in two runs (the state
    carries over): (net, losses [STEPS, R B], the state read back: replica 0's, after
    checking that the replicas agree; the momentum shards [R, ...]). Cached by arguments."""
    key = (replicas, batch, accumulate, shard)
    if key not in _RUNS:
        _RUNS[key] = _train_now(digits, *key)
    return _RUNS[key]


def _train_now(digits, replicas, batch, accumulate, shard):
    config = CnnConfig(batch_size=batch, tiles=TILES, replicas=replicas, accumulate=accumulate,
                       shard_optimizer=shard)
    images, labels = training_data.epoch_batches(digits.train, replicas * batch, np.random.default_rng(1))
    test = training_data.padded_batches(digits.test, replicas * batch, popops.MASKED_LABEL_CODE)
    half = STEPS // 2
    net = CnnOnIpu(config, half, len(test[1]), initial_weights(config, seed=3))
    losses = np.concatenate([net.train_epoch(images[i:i + half], labels[i:i + half]) for i in (0, half)])
    state = net.read()
    if replicas > 1:   # every replica applied the same updates: identical, bit for bit (but their shards)
        for name, value in state.items():
            assert value.shape[0] == replicas
            assert name == "velocity/shard" or (value == value[0]).all(), name
        state = {name: value if name == "velocity/shard" else value[0] for name, value in state.items()}
    net.correct = net.test(*test)
    return net, losses, state


def _assert_same_training(losses, state, ref_losses, ref_state):
    """float32 sums in another order: every step's mean loss within 1e-5 relative (1e-4 is
    the target), every weight within 1e-5 of its tensor's largest magnitude."""
    np.testing.assert_allclose(losses.mean(axis=1), ref_losses.mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4, atol=1e-6)
    for name in STATE:
        scale = np.abs(ref_state[name]).max()
        np.testing.assert_allclose(state[name], ref_state[name], rtol=0, atol=1e-5 * scale, err_msg=name)


@pytest.fixture(scope="module")
def one_replica(digits):
    return _train(digits)


@pytest.mark.parametrize("replicas", [2, 4])
def test_replicas_train_like_one_replica_on_the_r_times_batch(digits, one_replica, replicas):
    ref_net, ref_losses, ref_state = one_replica
    net, losses, state = _train(digits, replicas, GLOBAL_BATCH // replicas)
    assert losses.shape == ref_losses.shape == (STEPS, GLOBAL_BATCH)
    _assert_same_training(losses, state, ref_losses, ref_state)
    assert ref_losses.mean(axis=1)[-2:].mean() < ref_losses.mean(axis=1)[:2].mean()   # it learned
    assert net.correct == ref_net.correct   # testing over the replicas' shares of the test set


def test_accumulation_takes_the_mean_gradient_of_the_micro_batches(digits):
    """accumulate=2 of micro-batch 8 against numpy's accumulated step (batch norm takes
    each micro-batch's statistics, so it is not batch 16's training), and 2 replicas of
    micro-batch 4, accumulating 2, against it: the same training."""
    config = CnnConfig(batch_size=8, tiles=TILES, accumulate=2)
    net, losses, state = _train(digits, 1, 8, accumulate=2)
    images, labels = training_data.epoch_batches(digits.train, 8, np.random.default_rng(1))
    twin = NumpyCnn(initial_weights(config, seed=3), config.learning_rate, config.momentum, config.bn_eps,
                    config.bn_momentum)
    numpy_losses = np.concatenate([twin.accumulated_step(list(zip(images[i:i + 2], labels[i:i + 2])))
                                   for i in range(0, STEPS, 2)])
    np.testing.assert_allclose(losses.mean(axis=1), numpy_losses.mean(axis=1), rtol=1e-4)
    for name, value in twin.p.items():
        np.testing.assert_allclose(state[name], value, rtol=1e-4, atol=1e-5, err_msg=name)

    _, replicated_losses, replicated_state = _train(digits, 2, 4, accumulate=2)
    _assert_same_training(replicated_losses, replicated_state, losses, state)


def test_sharded_optimizer_gives_the_same_results_and_saves_momentum_memory(digits, one_replica):
    """4 replicas (6,106 parameters: shards of 1,527, the last one padded)."""
    _, ref_losses, ref_state = one_replica
    unsharded, _, unsharded_state = _train(digits, 4, GLOBAL_BATCH // 4)
    net, losses, state = _train(digits, 4, GLOBAL_BATCH // 4, shard=True)
    _assert_same_training(losses, state, ref_losses, ref_state)

    # each replica holds its slice of the momentum buffer: together, the unsharded buffers
    total = sum(ref_state[name].size for name in PARAMETERS)
    chunk = shard_length(total, 4)
    assert chunk * 4 > total
    shards = state["velocity/shard"]
    assert shards.shape == (4, chunk)
    velocities = np.concatenate([unsharded_state[f"{name}/velocity"].ravel() for name in PARAMETERS])
    np.testing.assert_allclose(shards.ravel()[:total], velocities, rtol=1e-4, atol=1e-6)
    assert not shards.ravel()[total:].any()   # the padding stays zero

    sharded_bytes = tile_bytes(net.graph, net.optimizer.state.values())
    unsharded_bytes = tile_bytes(unsharded.graph, unsharded.optimizer.state.values())
    assert sharded_bytes.sum() == 4 * chunk and unsharded_bytes.sum() == 4 * total
    assert sharded_bytes.max() < unsharded_bytes.max()
    line = momentum_memory(net.graph, net.optimizer)
    assert f"{4 * chunk:,} bytes per replica" in line and f"unsharded: {4 * total:,} bytes" in line
    assert "sharded over 4 replicas" in line


def test_command_line_trains_two_replicas(capsys, digits):  # (digits: skipped without them)
    assert main(["--replicas", "2", "--epochs", "1", "--shard-optimizer"]) == 0
    out = capsys.readouterr().out
    assert "2 IPUs of 64 tiles, one replica each" in out and "Epoch 1/1" in out
    assert "momentum buffers:" in out and "sharded over 2 replicas" in out
    assert "us per training step of 64 images (2 replicas of 32)" in out and "samples/s" in out
    samples_per_second = float(out.split("images (2 replicas of 32), ")[1].split(" samples/s")[0].replace(",", ""))
    assert samples_per_second > 0


@pytest.mark.slow
def test_two_replicas_reach_the_single_replica_accuracy(capsys):
    """README's run (10 epochs) with --replicas 2: batches of 2 x 32, >= 97% as one replica."""
    assert main(["--replicas", "2"]) == 0
    out = capsys.readouterr().out
    assert float(out.split("test accuracy: ")[1].split("%")[0]) >= 97.0
