"""The worker count comes from the target: convolutions (every vertex method) and pooling
run right, against numpy, on targets whose num_worker_contexts is not the hardware's 6;
their cycle estimates use the target's count; the one named hardware count
(popsim.target.HARDWARE_WORKER_CONTEXTS) is what C++ codelets see as numWorkers(); and no
new bare 6 stands for the workers in popsim or PopLibs."""
import ast
import functools
import json
import os
import pathlib
import re
import sys

import numpy as np
import pytest

import popsim
from graph_helpers import load_and_run, small_model
from popsim import FLOAT, HALF, poplin, popnn, popops
from popsim.poplin import conv_estimates, conv_nx1
from popsim.popnn import non_linearity_vertices, pooling_vertices
from popsim.popops import elementwise_vertices
from popsim.poputil import map_tensor_linearly
from popsim.program import Sequence
from popsim.target import HARDWARE_WORKER_CONTEXTS

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for folder in ("poplin", "popnn"):
    sys.path.insert(0, os.path.join(HERE, folder))
import poplin_conv_reference as conv_ref  # noqa: E402
import popnn_pooling_reference as pool_ref  # noqa: E402

#: Counts other than the hardware's: one context (as the CPU target), fewer, more.
OTHER_COUNTS = (1, 4, 8)


def _device(workers: int, tiles: int = 4):
    return small_model(tiles, num_worker_contexts=workers).create_device()


def test_the_hardware_count_is_the_targets_default_and_the_codelets_num_workers():
    header = (ROOT / "src" / "popsim" / "codelet" / "include" / "poplar" / "Vertex.hpp").read_text()
    codelet = re.search(r"numWorkers\(\)\s*\{\s*return\s+(\d+);", header)
    assert codelet and int(codelet.group(1)) == HARDWARE_WORKER_CONTEXTS
    assert popsim.Target().num_worker_contexts == HARDWARE_WORKER_CONTEXTS
    assert popsim.Target.HARDWARE_WORKER_CONTEXTS == HARDWARE_WORKER_CONTEXTS   # poplibs' spelling
    assert _device(4).target.num_worker_contexts == 4


# (params, method) covering each conv vertex: ConvPartialnx1, ConvPartial1x1Out, HMAC, VMAC
CONVS = [
    (poplin.ConvParams(FLOAT, 2, (7, 9), (3, 3), 8, 8, 1, padding_lower=(1, 1), padding_upper=(1, 1)), "AMP",
     "ConvPartialnx1"),
    (poplin.ConvParams(FLOAT, 1, (5, 6), (1, 1), 8, 8, 1), "AMP", "ConvPartial1x1Out"),
    (poplin.ConvParams(FLOAT, 1, (6, 7), (3, 2), 3, 2, 1, stride=(2, 1)), "HMAC", "ConvPartialHorizontalMac"),
    (poplin.ConvParams(HALF, 1, (8, 8), (3, 3), 1, 1, 8, padding_lower=(1, 1), padding_upper=(1, 1)), "VMAC",
     "ConvPartialVerticalMac"),
]


@pytest.mark.parametrize("workers", OTHER_COUNTS)
@pytest.mark.parametrize("params, method, vertex", CONVS, ids=[c[2] for c in CONVS])
def test_a_convolution_is_right_on_any_worker_count(workers, params, method, vertex):
    """The conv vertices' worklists follow the codelets' numWorkers(), which popsim runs in
    full on any target (conv_worklists.WORKERS); a plan and its estimates follow the
    target's count."""
    device = _device(workers)
    g = popsim.Graph(device)
    options = {"planConstraints": json.dumps({"method": method})}
    x = poplin.create_input(g, params, "x", options)
    w = poplin.create_weights(g, params, "w", options)
    prog = Sequence()
    y = poplin.convolution(g, x, w, params, False, prog, "conv", options)
    rng = np.random.default_rng(workers)
    hx, hw = rng.standard_normal(params.input_shape()), rng.standard_normal(params.weights_shape())
    engine, (out,) = load_and_run(g, device, [prog], [y], {x: hx, w: hw})
    names = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert any(n.startswith(f"poplin::{vertex}<") for n in names), names
    dt = params.data_type.numpy
    tol = 1e-4 if params.data_type == FLOAT else 3e-2
    np.testing.assert_allclose(out[0], conv_ref.conv(hx.astype(dt), hw.astype(dt), params), rtol=tol, atol=tol)


@pytest.mark.parametrize("workers", OTHER_COUNTS)
def test_pooling_and_its_gradient_are_right_on_any_worker_count(workers):
    kernel, stride, lower, upper = (3, 2), (2, 2), (1, 0), (1, 1)
    for kind in (popnn.PoolingType.MAX, popnn.PoolingType.AVG):
        pp = popnn.PoolParams(kind, (9, 7), kernel, stride, lower, upper, 8, 2, FLOAT)
        device = _device(workers)
        g = popsim.Graph(device)
        x = g.add_variable(FLOAT, pp.input_shape(), "x")
        dy = g.add_variable(FLOAT, pp.output_shape(), "dy")
        for t in (x, dy):
            map_tensor_linearly(g, t)
        prog = Sequence()
        y = popnn.pool(g, pp, x, prog)
        dx = popnn.pool_input_gradient(g, pp, x, y, dy, False, prog)
        rng = np.random.default_rng(workers)
        xv, dyv = rng.standard_normal(pp.input_shape()), rng.standard_normal(pp.output_shape())
        _, (out,) = load_and_run(g, device, [prog], [y, dx], {x: xv, dy: dyv})
        xf = xv.astype(np.float32)
        np.testing.assert_allclose(out[0], pool_ref.pool(kind.name, xf, kernel, stride, lower, upper),
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out[1], pool_ref.pool_grad(kind.name, xf, dyv.astype(np.float32), kernel, stride,
                                                              lower, upper), rtol=1e-4, atol=1e-4)


class _Info:
    """A vertex's initial values, as an estimator reads them (popsim's VertexInfo)."""

    def __init__(self, **values):
        self.values = values

    def initial_value(self, name):
        return self.values.get(name)


@pytest.mark.parametrize("workers", OTHER_COUNTS + (HARDWARE_WORKER_CONTEXTS,))
def test_the_vertex_estimates_use_the_targets_count(workers):
    target = _device(workers).target
    width, positions, row = 8, 30, 10
    nx1 = _Info(outChansPerGroup=width, zerosInfo=width * positions, outFieldRowSize=row, kernelOuterSizeM1=0,
                kernelInnerElementsM1=0, ampKernelHeightM1=0, kernelHeight=1, numInGroups=1, inChansPerGroup=8,
                numOutGroupsM1=0, numConvGroupsM1=0)
    tile = conv_estimates.conv_partial_nx1_cycles(
        [conv_estimates.worker_item_sizes(positions, row, workers)], 1, 1, 1, 1, 1, 1, width, 8, 2, 8, True, True,
        positions, workers)
    assert conv_nx1.estimator(FLOAT, FLOAT, 8, False)(nx1, target) == -(-tile // workers)
    rows, work = np.array([0, 1, 3, 4]), np.array([0, 0, 4, 4, 1, 2, 8, 2, 3, 12, 3, 4])
    pool = _Info(rowStarts=rows, workList=work, rowSize=4, chansPerGroup=2)
    tile = pooling_vertices.pooling_tile_cycles(rows, work, 4, 2, FLOAT, True, False, workers)
    assert pooling_vertices._pooling_estimator(FLOAT, True, False)(pool, target) == -(-tile // workers)


def test_elementwise_and_non_linearity_estimates_use_the_targets_count():
    """popops.add and popnn.relu on a 4-worker target: right against numpy, and each 1D
    MultiVertex charged the 4-worker figure on each of its 4 workers (not the 6-worker one)."""
    workers, sizes = 4, (16, 24)   # one region a tile: a 1D vertex on tiles 0 and 1
    device = _device(workers)
    g = popsim.Graph(device)
    x, y = g.add_variable(FLOAT, (sum(sizes),), "x"), g.add_variable(FLOAT, (sum(sizes),), "y")
    for t in (x, y):
        g.set_tile_mapping(t[:sizes[0]], 0)
        g.set_tile_mapping(t[sizes[0]:], 1)
    prog = Sequence()
    total, relu = popops.add(g, x, y, prog), popnn.relu(g, x, prog)
    rng = np.random.default_rng(workers)
    xv, yv = rng.standard_normal(sum(sizes)).astype(np.float32), rng.standard_normal(sum(sizes)).astype(np.float32)
    engine, (out,) = load_and_run(g, device, [prog], [total, relu], {x: xv, y: yv})
    np.testing.assert_allclose(out[0], xv + yv, rtol=1e-6)
    np.testing.assert_array_equal(out[1], np.maximum(xv, 0))
    kinds = {v["name"]: v["cycles"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}

    def charged(per_worker, count):
        """The two tiles' vertices, each charged on all ``workers`` of its tile, were the
        estimate worked out for ``count`` workers."""
        return sum(workers * per_worker([n], count) for n in sizes)

    add = functools.partial(elementwise_vertices.worker_cycles, popops.BinaryOpType.ADD, FLOAT, False, False,
                            width=g.target.vector_width(FLOAT))
    nl = functools.partial(non_linearity_vertices.worker_cycles, "1D", popnn.NonLinearityType.RELU, FLOAT)
    for name, per_worker in (("popops::BinaryOp1D<ADD,float>", add),
                             ("popnn::NonLinearity1D<float,popnn::NonLinearityType::RELU>", nl)):
        assert kinds[name] == charged(per_worker, workers)
        # the check tells the counts apart: the 6-worker estimate is another number
        assert kinds[name] != charged(per_worker, HARDWARE_WORKER_CONTEXTS)


# Files that still write the hardware's count as a bare 6 (owned elsewhere): listed so that
# no other file starts to. Take a file off the list when it asks its target instead.
KNOWN_BARE_COUNTS: set = set()


def _bare_counts(path: pathlib.Path):
    """Lines of ``path`` that write the worker count as the literal 6: a default of a
    ``*worker*`` parameter, a ``*worker*`` name set to 6, ``... if hasattr(...) else 6``
    after a worker count, or ``.get("...workers", 6)``."""
    def six(n):
        return isinstance(n, ast.Constant) and type(n.value) is int and n.value == HARDWARE_WORKER_CONTEXTS
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            pos = a.posonlyargs + a.args
            pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
            lines += [node.lineno for arg, d in pairs if d is not None and "worker" in arg.arg.lower() and six(d)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if six(node.value) and any(isinstance(t, ast.Name) and "worker" in t.id.lower() for t in targets):
                lines.append(node.lineno)
        elif isinstance(node, ast.IfExp) and six(node.orelse) and "worker" in ast.unparse(node.body).lower():
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and len(node.args) == 2 and six(node.args[1]) and "worker" in ast.unparse(node.args[0]).lower()):
            lines.append(node.lineno)
    return lines


def test_no_new_bare_worker_counts():
    """The hardware's count is written once (popsim.target.HARDWARE_WORKER_CONTEXTS); code
    with a target asks it (target.num_worker_contexts)."""
    found = {}
    for folder in ("src/popsim", "poplibs", "popart"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            lines = _bare_counts(path)
            if lines and rel != "src/popsim/target.py" and rel not in KNOWN_BARE_COUNTS:
                found[rel] = lines
    assert not found, f"the worker count written as a bare 6 (ask the target, or use HARDWARE_WORKER_CONTEXTS): {found}"
