"""The compile cache of C++ codelet files (popsim.codelet.cpp): a file is compiled again
when anything it reads changes, its own headers included, even when a replacement keeps
the old size and time."""
import os

import numpy as np
import pytest

from popsim.codelet import cpp
from popsim.codelet.abi import run_compiled


pytestmark = pytest.mark.compiler


def f32(*values):
    return np.array(values, dtype=np.float32)


def zeros(n, dtype=np.float32):
    return np.zeros(n, dtype=dtype)


def run_ok(vt, values, **kw):
    ret, ctx = run_compiled(vt, values, **kw)
    assert ret == 1 and ctx.error == 0
    return ctx


def test_changing_an_included_header_recompiles(tmp_path):
    """The cache key covers the codelet's own headers, not just the file itself."""
    (tmp_path / "scale.hpp").write_text("constexpr float kScale = 2.0f;\n")
    src = tmp_path / "scaled.cpp"
    src.write_text('#include <poplar/Vertex.hpp>\n#include <scale.hpp>  // the file\'s directory is on the path\n'
                   "struct Scaled : poplar::Vertex {\n  poplar::Input<float> in;\n  poplar::Output<float> out;\n"
                   "  void compute() { *out = in * kScale; }\n};\n")
    out = zeros(1)
    run_ok(cpp.vertex_types_from_file(src)[0], [f32(3.0), out])
    assert out[0] == 6.0
    (tmp_path / "scale.hpp").write_text("constexpr float kScale = 10.0f;\n")
    run_ok(cpp.vertex_types_from_file(src)[0], [f32(3.0), out])
    assert out[0] == 30.0


def test_a_file_replaced_by_one_of_the_same_size_and_time_recompiles(tmp_path):
    """cp -p, tar and rsync -a keep a file's size and time: the cache keys the file by
    its content, in this process and in the next."""
    src = tmp_path / "scaled.cpp"

    def write(scale: str):
        src.write_text("#include <poplar/Vertex.hpp>\nstruct Scaled : poplar::Vertex {\n  poplar::Input<float> in;\n"
                       f"  poplar::Output<float> out;\n  void compute() {{ *out = in * {scale}f; }}\n}};\n")
        os.utime(src, ns=(1_000_000_000, 1_000_000_000))
    write("2.0")
    out = zeros(1)
    run_ok(cpp.vertex_types_from_file(src)[0], [f32(3.0), out])
    assert out[0] == 6.0
    write("7.0")   # same length, same time
    run_ok(cpp.vertex_types_from_file(src)[0], [f32(3.0), out])
    assert out[0] == 21.0
    cpp._memo.clear()  # a new process: from the record in the cache directory
    write("5.0")
    run_ok(cpp.vertex_types_from_file(src)[0], [f32(3.0), out])
    assert out[0] == 15.0
