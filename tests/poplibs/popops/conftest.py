"""Fixtures of the popops tests."""
import pytest

import popsim


@pytest.fixture
def g(small_device):
    """A graph on the small test device."""
    return popsim.Graph(small_device)
