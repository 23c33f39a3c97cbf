"""Small models with a known op mix for the profile tests, built in code."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests.profile")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return path


def build_matmul_heavy(path: Path, width: int = 256, layers: int = 4) -> Path:
    """x[batch, width] through ``layers`` MatMul (width x width) and one Sigmoid: MatMul is almost all the time."""
    rng = np.random.default_rng(0)
    nodes, weights, current = [], [], "x"
    for i in range(layers):
        weights.append(numpy_helper.from_array((rng.standard_normal((width, width)) * 0.05).astype("float32"), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [f"h{i}"], name=f"mm{i}"))
        current = f"h{i}"
    nodes.append(helper.make_node("Sigmoid", [current], ["y"], name="out"))
    graph = helper.make_graph(
        nodes,
        "matmul_heavy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])],
        weights,
    )
    return _save(graph, path)


def build_fusable(path: Path) -> Path:
    """Conv + Relu (fused by ORT into FusedConv) and MatMul + Add (fused into Gemm) on the CPU EP."""
    rng = np.random.default_rng(1)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"], name="relu"),
            helper.make_node("Flatten", ["r"], ["f"], name="flat"),
            helper.make_node("MatMul", ["f", "w"], ["m"], name="mm"),
            helper.make_node("Add", ["m", "b"], ["y"], name="add"),
        ],
        "fusable",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [
            numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "cw"),
            numpy_helper.from_array(np.zeros(4, "float32"), "cb"),
            numpy_helper.from_array(rng.standard_normal((256, 10)).astype("float32"), "w"),
            numpy_helper.from_array(np.zeros(10, "float32"), "b"),
        ],
    )
    return _save(graph, path)


@pytest.fixture
def models() -> SimpleNamespace:
    """The builders above, for the test modules (conftest is not importable by name next to others)."""
    return SimpleNamespace(matmul_heavy=build_matmul_heavy, fusable=build_fusable)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    build_matmul_heavy(tmp_path / "heavy.onnx")
    build_fusable(tmp_path / "fuse.onnx")
    return tmp_path
