"""tune's fp16 variant: the converted model must pass ONNX validation and load in ORT (on the H200 it did not)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ortgpu.tune.variants import convert_fp16_for_tune


def _conv_model(path: Path) -> Path:
    """x float32 [batch, 3, 8, 8] -> Conv -> Relu -> y: the smallest dynamic-batch conv net."""
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"], name="relu"),
        ],
        "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 8, 8])],
        [
            numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "w"),
            numpy_helper.from_array(rng.standard_normal(4).astype("float32"), "b"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_the_fp16_variant_of_a_dynamic_batch_conv_passes_the_onnx_checker_and_loads(tmp_path: Path) -> None:
    import onnxruntime as ort

    target = tmp_path / "conv.fp16.onnx"
    convert_fp16_for_tune(_conv_model(tmp_path / "conv.onnx"), target)
    session = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    out = session.run(None, {"x": np.ones((2, 3, 8, 8), "float32")})[0]
    assert out.shape == (2, 4, 8, 8) and out.dtype == np.float32  # inputs and outputs stay fp32
    onnx.checker.check_model(onnx.load(str(target)))  # ORT's converter alone: "Nodes ... topologically sorted"
