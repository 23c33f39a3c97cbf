"""Small ONNX models with hostile input/output names and dims, built by the hostile-input tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["save_model"]


def save_model(path: Path, inputs: Sequence[tuple[str, Sequence[Any]]], outputs: Sequence[str] | None = None) -> Path:
    """A model of Identity nodes: one float input per (name, dims) pair, copied to an output.

    ``outputs`` names the outputs (default ``y0``, ``y1`` ...). Dims may be ints, strings (symbolic) or None.
    Names and dims are written as given, however hostile: that is the point.
    """
    import onnx
    from onnx import TensorProto, helper

    out_names = list(outputs) if outputs is not None else [f"y{i}" for i in range(len(inputs))]
    nodes, graph_inputs, graph_outputs = [], [], []
    for i, ((name, dims), out) in enumerate(zip(inputs, out_names, strict=True)):
        nodes.append(helper.make_node("Identity", [name], [out], name=f"copy{i}"))
        graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims)))
        graph_outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, list(dims)))
    model = helper.make_model(
        helper.make_graph(nodes, "hostile", graph_inputs, graph_outputs),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    onnx.save(model, path)
    return path
