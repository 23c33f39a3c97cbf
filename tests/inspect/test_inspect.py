"""inspect_model_file: I/O with symbolic dims and their ties, ops, subgraphs, weights, external data, CUDA kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortgpu.errors import ExitCode
from ortgpu.inspect import InspectRequest, KernelStatus, OpOrigin, inspect_model_file
from ortgpu.model import zoo
from ortgpu.model.inspect import ModelError

CPU_ONLY_ORT = "CUDAExecutionProvider" not in __import__("onnxruntime").get_available_providers()


def _save(graph: onnx.GraphProto, path: Path, opsets: dict[str, int] | None = None) -> Path:
    imports = [helper.make_opsetid(d, v) for d, v in (opsets or {"": 17}).items()]
    model = helper.make_model(graph, opset_imports=imports, producer_name="tests.inspect", producer_version="2")
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def _tokens_model(path: Path) -> Path:
    """input_ids / attention_mask share batch and seq; one output declares them, one leaves both dims unknown."""
    table = numpy_helper.from_array(np.zeros((100, 8), np.float32), "embedding")
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["embedding", "input_ids"], ["emb"], name="lookup"),
            helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT, name="cast"),
            helper.make_node("Unsqueeze", ["maskf", "axis"], ["mask3"], name="unsq"),
            helper.make_node("Mul", ["emb", "mask3"], ["hidden"], name="mask"),
            helper.make_node("ReduceSum", ["hidden", "axis1"], ["pooled"], keepdims=0, name="pool"),
        ],
        "tokens",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", 8]),
            helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [None, None]),
        ],
        [
            table,
            numpy_helper.from_array(np.array([-1], np.int64), "axis"),
            numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        ],
    )
    return _save(graph, path)


def test_demo_model_summary(tmp_path: Path) -> None:
    path = zoo.build_demo_model(tmp_path / "demo.onnx")
    result = inspect_model_file(InspectRequest(path, top=3))
    assert [(t.name, t.dtype, t.shape) for t in result.inputs] == [("image", "float32", ("batch", 3, 32, 32))]
    assert [(t.name, t.shape) for t in result.outputs] == [("logits", ("batch", 10))]
    assert (result.ir_version, result.opsets, result.producer) == (8, {"ai.onnx": zoo.OPSET}, "ortgpu.zoo 1")
    model = onnx.load(path)
    assert result.node_count == result.main_graph_nodes == len(model.graph.node)
    counts = {(o.domain, o.op_type): o.count for o in result.op_histogram}
    assert counts[("ai.onnx", "MatMul")] == sum(n.op_type == "MatMul" for n in model.graph.node)
    assert [o.count for o in result.op_histogram] == sorted((o.count for o in result.op_histogram), reverse=True)
    weights = {t.name: numpy_helper.to_array(t).nbytes for t in model.graph.initializer}
    assert result.initializer_count == len(weights) and result.initializer_bytes == sum(weights.values())
    assert [w.name for w in result.top_initializers] == sorted(weights, key=lambda n: -weights[n])[:3]
    assert result.top_initializers[0].size_bytes == max(weights.values())
    assert result.custom_ops == () and result.subgraphs == () and result.external_data == ()


def test_symbolic_dims_shared_by_inputs_reach_the_outputs(tmp_path: Path) -> None:
    result = inspect_model_file(InspectRequest(_tokens_model(tmp_path / "tokens.onnx"), kernels=False))
    dims = {d.name: d for d in result.symbolic_dims}
    assert set(dims) == {"batch", "seq"}
    batch = dims["batch"]
    assert [(u.tensor, u.axis) for u in batch.inputs] == [("input_ids", 0), ("attention_mask", 0)]
    assert batch.shared
    assert [(u.tensor, u.axis, u.inferred) for u in batch.outputs] == [("hidden", 0, False), ("pooled", 0, True)]
    assert [(u.tensor, u.axis, u.inferred) for u in dims["seq"].outputs] == [("hidden", 1, False)]
    pooled = next(o for o in result.outputs if o.name == "pooled")
    assert pooled.shape == (None, None) and pooled.inferred_shape == ("batch", 8)
    assert result.shape_inference.startswith("ONNX shape inference")


def test_subgraphs_are_counted_per_owner(tmp_path: Path) -> None:
    result = inspect_model_file(InspectRequest(zoo.build_scalar_if_model(tmp_path / "if.onnx"), kernels=False))
    assert result.subgraph_counts == {"If": 1}
    assert sorted((s.attribute, s.node_count, s.depth) for s in result.subgraphs) == [
        ("else_branch", 1, 1),
        ("then_branch", 1, 1),
    ]
    assert result.node_count == result.main_graph_nodes + 2


def test_custom_domain_ops_say_who_provides_them(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [
            helper.make_node("FusedMatMul", ["x", "x"], ["a"], domain="com.microsoft", name="fm"),
            helper.make_node("MyOp", ["a"], ["y"], domain="my.company", name="mine"),
        ],
        "custom",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
    )
    path = _save(graph, tmp_path / "custom.onnx", {"": 17, "com.microsoft": 1, "my.company": 1})
    result = inspect_model_file(InspectRequest(path, kernels=False))
    origins = {(c.domain, c.op_type): c.origin for c in result.custom_ops}
    assert origins == {("com.microsoft", "FusedMatMul"): OpOrigin.ORT_CONTRIB, ("my.company", "MyOp"): OpOrigin.CUSTOM}


def test_external_data_is_described_from_metadata(tmp_path: Path) -> None:
    path = zoo.build_external_data_model(tmp_path / "ext.onnx")
    result = inspect_model_file(InspectRequest(path, kernels=False))
    assert len(result.external_data) == 1
    file = result.external_data[0]
    assert file.size_bytes == (tmp_path / file.location).stat().st_size and file.tensors >= 1
    assert file.bytes_referenced <= file.size_bytes
    external = [w for w in result.top_initializers if w.location is not None]
    assert external and all(w.location == file.location for w in external)


@pytest.mark.parametrize("damage", ["missing", "outside"])
def test_unusable_external_data_is_exit_2(tmp_path: Path, damage: str) -> None:
    path = zoo.build_external_data_model(tmp_path / "ext.onnx")
    if damage == "missing":
        for data in tmp_path.glob("*.data"):
            data.unlink()
    else:
        model = onnx.load(path, load_external_data=False)
        for tensor in model.graph.initializer:
            for entry in tensor.external_data:
                if entry.key == "location":
                    entry.value = "../../etc/passwd"
        path.write_bytes(model.SerializeToString())
    with pytest.raises(ModelError) as exc:
        inspect_model_file(InspectRequest(path))
    assert exc.value.exit_code == ExitCode.BAD_INPUT
    assert ("missing" if damage == "missing" else "leaves the model's folder") in exc.value.message


@pytest.mark.skipif(not CPU_ONLY_ORT, reason="needs the CPU-only onnxruntime build")
def test_kernels_not_determined_without_a_cuda_ep_say_so_plainly(tmp_path: Path) -> None:
    result = inspect_model_file(InspectRequest(zoo.build_tiny_model(tmp_path / "tiny.onnx")))
    kernels = result.kernels
    assert kernels.status is KernelStatus.NOT_DETERMINED
    assert kernels.reason.startswith("not determined: CUDA EP not available here")
    assert kernels.off_ep == () and kernels.nodes_on_ep == 0


def test_kernels_can_be_skipped(tmp_path: Path) -> None:
    result = inspect_model_file(InspectRequest(zoo.build_tiny_model(tmp_path / "tiny.onnx"), kernels=False))
    assert result.kernels.status is KernelStatus.SKIPPED
