"""Fixtures shared by the popnn tests."""
from popnn_nl_harness import g  # noqa: F401 - a graph on the small device
