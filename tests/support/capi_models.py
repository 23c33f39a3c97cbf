"""Small models for the C-API tests, built in code with onnx.helper (loadable by ORT 1.14 and newer)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def save(model, path: Path) -> Path:
    import onnx

    model.ir_version = 8  # loadable by ORT >= 1.14
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def mlp_model(path: Path) -> Path:
    """X [batch, 8] float -> MatMul, Add, Relu, MatMul -> Y [batch, 3]; fixed random weights."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "W1"),
        numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "B1"),
        numpy_helper.from_array(rng.standard_normal((16, 3)).astype(np.float32), "W2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["X", "W1"], ["h"], name="mm1"),
        helper.make_node("Add", ["h", "B1"], ["hb"], name="add1"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
        helper.make_node("MatMul", ["r", "W2"], ["Y"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 3])],
        weights,
    )
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


# numpy dtype name -> ONNX element type name; every numeric type ORT's CPU Identity kernel takes, bool and string
IDENTITY_TYPES = {
    "float32": "FLOAT",
    "float64": "DOUBLE",
    "float16": "FLOAT16",
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "uint8": "UINT8",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "uint64": "UINT64",
    "bool": "BOOL",
    "str": "STRING",
}


def identity_model(path: Path) -> Path:
    """One Identity per type: input in_<dtype> -> output out_<dtype>, shape [n] (dynamic)."""
    from onnx import TensorProto, helper

    nodes, inputs, outputs = [], [], []
    for name, onnx_type in IDENTITY_TYPES.items():
        element = getattr(TensorProto, onnx_type)
        nodes.append(helper.make_node("Identity", [f"in_{name}"], [f"out_{name}"], name=f"id_{name}"))
        inputs.append(helper.make_tensor_value_info(f"in_{name}", element, ["n"]))
        outputs.append(helper.make_tensor_value_info(f"out_{name}", element, ["n"]))
    graph = helper.make_graph(nodes, "identities", inputs, outputs)
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def identity_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    feeds: dict[str, np.ndarray] = {}
    for name in IDENTITY_TYPES:
        if name == "str":
            feeds[f"in_{name}"] = np.array(["a", "héllo wörld", "", "大"], dtype=object)
        elif name == "bool":
            feeds[f"in_{name}"] = np.array([True, False, True, True])
        else:
            info = np.finfo(name) if name.startswith("float") else np.iinfo(name)
            values = rng.uniform(max(float(info.min), -1e4), min(float(info.max), 1e4), size=4)
            feeds[f"in_{name}"] = values.astype(name)
    return feeds
