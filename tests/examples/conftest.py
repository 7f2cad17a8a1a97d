"""The examples are scripts in examples/: their modules import each other by plain name,
as they do when run from there."""
import os
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))
