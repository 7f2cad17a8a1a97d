"""Vertex code calling helper functions (popsim/codelet/inline.py): inlined before type
checking, so compiled and interpreted runs agree bit for bit; names inside a helper are
its own module's; misuse is a CodeletSyntaxError at the call that names the helper."""
import math

import numpy as np
import pytest

import popsim
from popsim import Input, MultiVertex, Output, Vector, Vertex, VectorList
from popsim.codelet.python_compile import vertex_types_from_classes

import sample_helpers as h
from vertex_harness import F32, arr, load_vertex, run_both


def _reference_sigmoid(x):
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x.astype(np.float32)))


class Sigmoid(MultiVertex):
    data: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self, worker_id):
        for i in range(worker_id, len(self.out), self.num_workers()):
            self.out[i] = h.sigmoid(self.data[i])
        return True


class Mixed(Vertex):
    rows: Input[VectorList[float]]
    out: Output[Vector[float]]

    def compute(self):
        for r in range(len(self.rows)):
            s = h.row_sum(self.rows[r])
            t = h.scaled(s) + h.scaled(s, k=0.5) + h.scaled(s, 3.0)
            c = h.clamp(t, -10.0, 10.0)
            self.out[r] = c if s > 0.0 else h.sigmoid(s)
        return True


class Nested(Vertex):
    data: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.out)):
            x = self.data[i]
            self.out[i] = h.soft_clamp(x) + h.soft_clamp(-x)
        return True


@pytest.mark.compiler
def test_a_helper_runs_the_same_compiled_and_interpreted():
    x = arr(np.linspace(-6, 6, 25))
    out, cycles, ok = run_both(Sigmoid, [x, np.zeros_like(x)])
    assert ok and cycles > 0
    np.testing.assert_allclose(out[1], _reference_sigmoid(x), rtol=1e-6)


@pytest.mark.compiler
def test_statements_defaults_keywords_and_conditional_calls():
    rows = [arr([1.0, 2.0]), arr([-3.0, 0.5]), arr([4.0, 4.0, 4.0])]
    out, _, ok = run_both(Mixed, [rows, np.zeros(3, F32)])
    sums = [sum(r) for r in rows]
    want = [min(max(s * 2 + s * 0.5 + s * 3, -10), 10) if s > 0 else 1 / (1 + math.exp(-s)) for s in sums]
    assert ok
    np.testing.assert_allclose(out[1], want, rtol=1e-6)


@pytest.mark.compiler
def test_a_helper_calling_a_helper_gets_fresh_locals_each_time():
    x = arr([-3.0, -0.1, 0.0, 0.2, 5.0])
    out, _, _ = run_both(Nested, [x, np.zeros_like(x)])
    s = lambda v: np.clip(1 / (1 + np.exp(-v)), 0.25, 0.75)  # noqa: E731
    np.testing.assert_allclose(out[1], s(x) + s(-x), rtol=1e-6)


def _load(tmp_path, body):
    return load_vertex(tmp_path, body, imports="import sample_helpers as h\n")


@pytest.mark.parametrize("body, words", [
    ("self.out[0] = h.early(self.in_[0])\nreturn True", ["h.early", "returns before its last line"]),
    ("self.out[0] = h.forever(self.in_[0])\nreturn True", ["forever", "nested more than", "cannot recurse"]),
    ("self.out[0] = 1.0 if self.k > 0.0 else h.row_sum(self.in_)\nreturn True",
     ["row_sum", "has statements", "on a line of its own"]),
    ("self.out[0] = 1.0 if self.k > 0.0 else h.twice(self.in_[0])\nreturn True",
     ["twice", "uses a parameter twice"]),
    ("self.out[0] = h.sigmoid(self)\nreturn True", ["cannot be passed to helper"]),
    ("self.out[0] = h.wrapped(self.k)\nreturn True", ["wrapped by a decorator"]),
    ("self.out[0] = h.clamp(self.k, 1.0)\nreturn True", ["clamp", "missing its argument 'hi'"]),
    ("self.out[0] = h.sigmoid(self.k, 1.0)\nreturn True", ["takes 1 arguments, 2 given"]),
    ("self.out[0] = h.clamp(self.k, 0.0, hi=1.0, lo=2.0)\nreturn True", ["unexpected or repeated argument 'lo'"]),
])
def test_misuse_is_an_error_at_the_call(tmp_path, body, words):
    (cls, line) = _load(tmp_path, body)
    with pytest.raises(popsim.CodeletSyntaxError) as e:
        vertex_types_from_classes([cls])
    for w in words:
        assert w in str(e.value)
    assert e.value.lineno == line


def test_an_error_inside_a_helper_names_the_helper(tmp_path):
    (cls, line) = _load(tmp_path, "self.out[0] = h.row_sum(self.k)\nreturn True")
    with pytest.raises(popsim.CodeletSyntaxError) as e:
        vertex_types_from_classes([cls])
    assert "inlined from helper row_sum (sample_helpers.py:" in str(e.value)
    assert e.value.lineno == line


def test_a_local_shadowing_a_helper_is_not_called(tmp_path):
    (cls, _) = _load(tmp_path, "sigmoid = 1.0\nself.out[0] = sigmoid(2.0)\nreturn True")
    with pytest.raises(popsim.CodeletSyntaxError, match="is a local variable, not a function"):
        vertex_types_from_classes([cls])


ACTIVATIONS = {"sigmoid": h.sigmoid, "soft_clamp": h.soft_clamp}


@popsim.vertex_template("test::Activation", dtype=[popsim.FLOAT, popsim.HALF], kind=list(ACTIVATIONS))
def Activation(dtype, kind):
    fn = ACTIVATIONS[kind]  # a template's instantiations close over their own helper

    class Activation(MultiVertex):
        data: popsim.InOut[Vector[dtype]]

        def compute(self, worker_id):
            for i in range(worker_id, len(self.data), self.num_workers()):
                self.data[i] = fn(self.data[i])
            return True
    return Activation


@pytest.mark.compiler
def test_a_template_instantiation_inlines_the_function_it_closes_over():
    x = arr([-2.0, 0.0, 3.0])
    (sig,), _, _ = run_both(Activation[popsim.FLOAT, "sigmoid"], [x])
    (soft,), _, _ = run_both(Activation[popsim.FLOAT, "soft_clamp"], [x])
    np.testing.assert_allclose(sig, _reference_sigmoid(x), rtol=1e-6)
    np.testing.assert_allclose(soft, np.clip(_reference_sigmoid(x), 0.25, 0.75), rtol=1e-6)
    assert Activation.vertex_name(popsim.FLOAT, "sigmoid") == "test::Activation<float,sigmoid>"


ADD, SUB, NEG = h.TABLE["add"], h.TABLE["sub"], h.TABLE["neg"]


class Lambdas(Vertex):
    data: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.out)):
            self.out[i] = NEG(SUB(ADD(h.halved(self.data[i]), 1.0), 10.0))
        return True


@pytest.mark.compiler
def test_lambdas_sharing_a_line_each_inline_their_own_body():
    x = arr([0.0, 2.5, -7.0])
    out, _, _ = run_both(Lambdas, [x, np.zeros_like(x)])
    np.testing.assert_array_equal(out[1], -((x * 0.5 + 1) - 10))  # h.halved: a registering decorator
