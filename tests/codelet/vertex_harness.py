"""Running the sample vertices (sample_vertices.py) without an engine, compiled and
interpreted, and writing one-vertex modules for the tests of the translator's errors."""
import functools
import importlib.util
import itertools
import sys
import textwrap

import numpy as np

from popsim.codelet.abi import run_compiled
from popsim.codelet.interpret import run_all_workers
from popsim.codelet.python_compile import vertex_types_from_classes

from sample_vertices import VERTICES

F32, I32 = np.float32, np.int32


@functools.lru_cache(maxsize=None)
def library():
    return {vt.python_class: vt for vt in vertex_types_from_classes(VERTICES)}


def vt(cls):
    """The vertex type of a sample vertex, or of any other class (compiled on first use)."""
    types = library()
    if cls not in types:
        (types[cls],) = vertex_types_from_classes([cls])
    return types[cls]


def arr(values, dtype=F32):
    return np.array(values, dtype=dtype)


def clone(values):
    return [[a.copy() for a in v] if isinstance(v, list) else v.copy() for v in values]


def assert_same(a, b):
    """Bit-for-bit equality of field values."""
    for x, y in zip(a, b):
        if isinstance(x, list):
            assert_same(x, y)
        else:
            assert x.dtype == y.dtype and x.shape == y.shape
            assert x.tobytes() == y.tobytes(), f"{x!r} != {y!r}"


def run_both(cls, values, num_workers=6, worker=0):
    """Run compiled and interpreted on copies of ``values``; they must agree exactly.
    Returns (compiled values, cycles, ok)."""
    t = vt(cls)
    cv, iv = clone(values), clone(values)
    ret, ctx = run_compiled(t, cv, worker, num_workers)
    assert ret in (0, 1), f"compiled run failed: error {ctx.error} field {ctx.error_field} index {ctx.error_index}"
    ok, cycles = run_all_workers(t, iv, num_workers, worker)
    assert ok == (ret == 1)
    assert cycles == ctx.cycles, f"cycles: interpreted {cycles}, compiled {ctx.cycles}"
    assert_same(cv, iv)
    return cv, ctx.cycles, ok


def f32(x):
    return np.float32(x)

def clip_reference(x, k, lo, hi):
    out = []
    for v in x:
        v = f32(v * f32(k))
        if v < f32(lo):
            v = f32(lo)
        elif v > f32(hi):
            v = f32(hi)
        else:
            v = f32(v + f32(0.5)) if v >= 0 else f32(v - f32(0.5))
        out.append(v)
    return arr(out)


def floor_divmod(a, b, bits=32):
    if b == 0:
        return 0, a
    q, r = a // b, a % b
    q = (q + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
    return q, r


HEADER = "import math\nimport popsim\nfrom popsim import *\nLIMIT = 'text'\n\n"


_counter = itertools.count()


def load_vertex(tmp_path, body, fields=("in_: Input[Vector[float]]", "out: Output[Vector[float]]", "k: float"),
                base="Vertex", params="self", imports=""):
    """Write a module with one vertex class (after ``imports``, module-level lines);
    returns (class, line of compute's first body statement)."""
    header = HEADER + imports
    lines = [f"class V({base}):"] + [f"    {f}" for f in fields] + [f"    def compute({params}):"]
    first = header.count("\n") + len(lines) + 1
    source = header + "\n".join(lines) + "\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8) + "\n"
    path = tmp_path / f"vmod{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module.V, first
