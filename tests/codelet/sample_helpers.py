"""Helper functions for tests/codelet/test_helpers.py: vertex code calls them and the
translator inlines them (popsim/codelet/inline.py). Their names, math included, are
this module's, not the calling vertex's."""
import functools
import math

SCALE = 2.0


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def scaled(x, k=SCALE):
    """A docstring, a default and a module constant."""
    return x * k


def clamp(x, lo, hi):
    y = x
    if y < lo:
        y = lo
    elif y > hi:
        y = hi
    return y


def row_sum(row):
    s = 0.0
    for v in row:
        s += v
    return s


def soft_clamp(x):
    return clamp(sigmoid(x), 0.25, 0.75)


def early(x):
    if x > 0.0:
        return x
    return -x


def forever(x):
    return forever(x)


def twice(x):
    return x + x


#: several lambdas on one line: each call inlines its own
TABLE = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "neg": lambda x: -x}


REGISTRY = []


def registered(fn):
    REGISTRY.append(fn)
    return fn


@registered
def halved(x):
    return x * 0.5


def wrapping(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args) + 1.0
    return wrapper


@wrapping
def wrapped(x):
    return x
