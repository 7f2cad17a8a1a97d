"""examples/onnx_resnet50.py: its batch list, and its table on a small model (ResNet-50 itself
takes minutes to build; the example's default runs it)."""
import argparse

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX example needs the onnx package: pip install 'popsim[onnx]'")

import onnx_resnet50  # noqa: E402
from onnx import helper  # noqa: E402


def test_batches_reads_lists_and_ranges():
    assert onnx_resnet50.batches("1-4,8,16") == [1, 2, 3, 4, 8, 16]
    for bad in ("0", "4-2", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            onnx_resnet50.batches(bad)


def test_the_resnet50_file_ships_with_onnx():
    import os
    assert os.path.isfile(onnx_resnet50.resnet50_path())


def test_the_table_on_a_small_model(tmp_path, capsys):
    w = onnx.numpy_helper.from_array(np.full((8, 4), 0.5, np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], "mlp",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])], [w])
    path = tmp_path / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), str(path))
    assert onnx_resnet50.main(["--model", str(path), "--batches", "1,4", "--tiles-per-ipu", "8",
                               "--replicas", "2", "--report", str(tmp_path / "r.html")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "img/s, 2 IPUs" in lines[1]
    rows = [line.split() for line in lines[2:4]]
    assert [r[0] for r in rows] == ["1", "4"] and all(r[1] == "yes" for r in rows)
    for r in rows:   # the replicated column is twice the one-IPU one
        assert float(r[-2].replace(",", "")) == pytest.approx(2 * float(r[-3].replace(",", "")), rel=1e-3)
    assert (tmp_path / "r.html").is_file()
    assert onnx_resnet50.main(["--model", str(path), "--batches", "2", "--tiles-per-ipu", "8", "--train"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "one training step per batch" in lines[0] and lines[2].split()[:2] == ["2", "yes"]
