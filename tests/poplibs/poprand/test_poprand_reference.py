"""The host reference's Philox4x32-10 against the known-answer vectors published with
Random123 (kat_vectors: philox4x32 10 rounds), so the device is checked against a
generator that is itself right."""
import numpy as np
import pytest

import poprand_reference as R


@pytest.mark.parametrize("counter, key, expected", [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
])
def test_philox_known_answers(counter, key, expected):
    assert [int(w) for w in R.philox4x32_10(*counter, *key)] == list(expected)


def test_unit_intervals_are_exact_24_bit_grids():
    w = np.array([0, 255, 256, 0xFFFFFFFF], np.uint32)
    assert R.unit(w).tolist() == [0.0, 0.0, 2.0 ** -24, 1.0 - 2.0 ** -24]
    assert R.unit_open_low(w).tolist() == [2.0 ** -24, 2.0 ** -24, 2.0 ** -23, 1.0]


def test_ks_statistic_of_a_perfect_grid_is_small():
    x = (np.arange(1000) + 0.5) / 1000
    assert R.ks_statistic(x, lambda v: v) == pytest.approx(0.0005)
