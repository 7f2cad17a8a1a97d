"""poputil/checks.py's shared checks, as the ops that use them report them: a debug name
that is not a str is refused with the op's name in the message, and tensors are named the
same way (describe) in every library."""
import pytest

import popsim
from popsim import FLOAT
from poplibs import popnn, popops
from poplibs.poputil.checks import describe

from graph_helpers import mapped, small_device

pe = popops.expr
CALLS = {   # each with a (2, 4) float tensor t, a program and a debug name
    "popops.add": lambda g, t, p, n: popops.add(g, t, t, p, n),
    "popops.map": lambda g, t, p, n: popops.map(g, pe._1 + pe._2, [t, t], p, n),
    "popops.fill": lambda g, t, p, n: popops.fill(g, t, 1.0, p, n),
    "popops.cast": lambda g, t, p, n: popops.cast(g, t, popsim.HALF, p, n),
    "popops.sort": lambda g, t, p, n: popops.sort(g, t, 1, p, n),
    "popops.reduce": lambda g, t, p, n: popops.reduce(g, t, [0], popops.ReduceParams(popops.Operation.ADD), p, n),
    "popops.select": lambda g, t, p, n: popops.select(g, t, t, popops.map(g, pe._1 > 0, [t], p), p, n),
    "popnn.non_linearity": lambda g, t, p, n: popnn.non_linearity(g, popnn.NonLinearityType.RELU, t, p, n),
    "popnn.arg_max": lambda g, t, p, n: popnn.arg_max(g, t, p, n),
}


@pytest.mark.parametrize("op", sorted(CALLS))
def test_a_name_that_is_not_a_str_is_refused_naming_the_op(op):
    g = popsim.Graph(small_device())
    t = mapped(g, FLOAT, [2, 4], "t")
    with pytest.raises(popsim.TypeError, match=r"name must be a str, found int"):
        CALLS[op](g, t, popsim.Sequence(), 3)


def test_describe_names_a_tensor_by_name_type_and_shape():
    g = popsim.Graph(small_device())
    assert describe(mapped(g, FLOAT, [2, 4], "acts")) == "tensor 'acts' (FLOAT, shape (2, 4))"
