"""Shared test setup: the `gpu` marker skips unless an NVIDIA GPU and onnxruntime-gpu are present."""

from __future__ import annotations

import functools
import importlib.util

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # ortgpu depends on no ONNX Runtime (docs/install.md); the suite runs models, so it needs one installed
    if importlib.util.find_spec("onnxruntime") is None:
        raise pytest.UsageError(
            "the test suite needs an ONNX Runtime here: pip install -e '.[cpu,test]' (or '.[gpu,test]' with a GPU)"
        )


@functools.cache
def gpu_available() -> bool:
    try:
        import onnxruntime as ort
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
    except Exception:
        return False
    return count > 0 and "CUDAExecutionProvider" in ort.get_available_providers()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and onnxruntime-gpu")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def build_shape_subgraph_model(path, denotation: str | None = None):
    """x float32 [batch, 4] + bias expanded to Shape(x): a dynamic-batch model whose shape subgraph (Shape, Gather,
    Unsqueeze, Concat, Expand) ORT folds away only when the batch dim is fixed — the CUDA EP keeps such nodes on
    the CPU. ``denotation``: leave the batch dim unnamed and mark it with this denotation instead."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None if denotation else "batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None if denotation else "batch", 4])
    if denotation:
        x.type.tensor_type.shape.dim[0].denotation = denotation
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0, name="gather"),
        helper.make_node("Unsqueeze", ["b", "axes"], ["bu"], name="unsqueeze"),
        helper.make_node("Concat", ["bu", "four"], ["target"], axis=0, name="concat"),
        helper.make_node("Expand", ["bias", "target"], ["wide"], name="expand"),
        helper.make_node("Add", ["x", "wide"], ["y"], name="add"),
    ]
    initializers = [
        helper.make_tensor("zero", TensorProto.INT64, [], [0]),
        helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
        helper.make_tensor("four", TensorProto.INT64, [1], [4]),
        helper.make_tensor("bias", TensorProto.FLOAT, [1, 4], [0.5, -0.5, 1.0, 2.0]),
    ]
    graph = helper.make_graph(nodes, "shape_subgraph", [x], [y], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture(scope="session")
def shape_subgraph_model(tmp_path_factory: pytest.TempPathFactory):
    return build_shape_subgraph_model(tmp_path_factory.mktemp("models") / "shape_subgraph.onnx")


@pytest.fixture(scope="session")
def denoted_batch_model(tmp_path_factory: pytest.TempPathFactory):
    return build_shape_subgraph_model(tmp_path_factory.mktemp("models") / "denoted.onnx", denotation="DATA_BATCH")
