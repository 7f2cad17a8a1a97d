"""The examples are scripts in examples/: their modules import each other by plain name,
as they do when run from there. The training examples' digits come with scikit-learn (the
examples extra): a test that needs them takes the ``digits`` fixture, which skips it, with
the reason, where scikit-learn is not installed."""
import os
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))

NO_DIGITS = "the examples' digits come with scikit-learn, which is not installed: pip install \".[examples]\""


@pytest.fixture(scope="module")
def digits():
    """examples/training_data.py's digits (train and test splits)."""
    pytest.importorskip("sklearn", reason=NO_DIGITS)
    import training_data
    return training_data.load_digits()
