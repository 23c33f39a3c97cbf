"""The layer-wise engine: intermediate tensors in topological order, engines, chunks, roots, NaN origins."""

from __future__ import annotations

from pathlib import Path

import crafted
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortgpu.accuracy.engines import OrtEngine, ReferenceEngine
from ortgpu.accuracy.graph import GraphError, intermediate_tensors, load_model, topological_order
from ortgpu.accuracy.layerwise import TensorStatus, compare_layers
from ortgpu.check import CheckRequest, run_check
from ortgpu.config import ExecutionProvider


def _ids(batch: int = 2) -> dict[str, np.ndarray]:
    return {"input_ids": np.random.default_rng(0).integers(0, 50, (batch, 8))}


def test_tensors_come_in_topological_order_with_types_and_sizes(tmp_path: Path) -> None:
    model = load_model(crafted.small_transformer(tmp_path / "t.onnx"))
    reversed_nodes = list(model.graph.node)[::-1]
    del model.graph.node[:]
    model.graph.node.extend(reversed_nodes)
    slots, skipped = intermediate_tensors(model, {"input_ids": (2, 8)})
    assert not skipped and slots[0].name == "tok_emb" and slots[-1].name == "hidden_states"
    positions = {s.name: s.position for s in slots}
    assert positions["l0.Q"] < positions["l0.S"] < positions["l0.P"]
    assert next(s for s in slots if s.name == "l0.S").elements == 2 * 8 * 8
    assert all(s.elem_type == TensorProto.FLOAT for s in slots)


def test_a_cycle_is_a_one_line_error() -> None:
    nodes = [helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["b"], name="r2")]
    with pytest.raises(GraphError, match="cycle"):
        topological_order(nodes, {"x"})


def test_the_first_diverging_tensor_is_named_with_op_and_node(tmp_path: Path) -> None:
    path = crafted.small_transformer(tmp_path / "t.onnx")
    model = load_model(path)
    changed = load_model(path)
    weight = next(t for t in changed.graph.initializer if t.name == "l1.k")
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * 1.5, "l1.k"))
    slots, skipped = intermediate_tensors(model, {"input_ids": (2, 8)})
    with ReferenceEngine(changed, _ids()) as tested, OrtEngine(model, _ids(), ExecutionProvider.CPU) as cpu:
        report, results = compare_layers(slots, skipped, tested, cpu, rtol=1e-3, atol_scale=1e-5)
    root = report.roots[0]
    assert (root.name, root.op_type, root.node_name) == ("l1.K", "MatMul", "l1/k")
    assert len(report.roots) == 1 and report.first_divergent[0].name == "l1.K"
    before = [r for r in results if r.position < root.position]
    assert before and all(r.status is TensorStatus.MATCH for r in before)
    assert report.diverged > 1 and "first: 'l1.K' from MatMul node 'l1/k'" in report.summary()
    assert root.reference_max_abs is not None and root.max_abs is not None and root.max_abs > 0


def test_chunks_bound_memory_and_give_the_same_answer(tmp_path: Path) -> None:
    model = load_model(crafted.small_transformer(tmp_path / "t.onnx"))
    slots, skipped = intermediate_tensors(model, {"input_ids": (2, 8)})
    with ReferenceEngine(model, _ids()) as tested, OrtEngine(model, _ids(), ExecutionProvider.CPU) as cpu:
        whole, all_at_once = compare_layers(slots, skipped, tested, cpu, 1e-3, 1e-5)
        chunked, in_chunks = compare_layers(slots, skipped, tested, cpu, 1e-3, 1e-5, byte_budget=4096)
    assert whole.chunks == 1 and chunked.chunks > 5
    assert any("chunks" in note for note in chunked.notes)
    assert [r.status for r in all_at_once] == [r.status for r in in_chunks]
    assert whole.diverged == 0 and whole.compared == len(slots)


def test_tensors_without_a_known_tensor_type_are_skipped_and_said(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("SplitToSequence", ["r"], ["seq"], name="split", axis=1),
        helper.make_node("SequenceAt", ["seq", "zero"], ["first"], name="at"),
        helper.make_node("Neg", ["first"], ["y"], name="neg"),
    ]
    graph = helper.make_graph(
        nodes,
        "seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array(0, np.int64), "zero")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    slots, skipped = intermediate_tensors(model)
    assert [s.name for s in skipped] == ["seq"] and skipped[0].reason == "not a tensor"
    assert [s.name for s in slots] == ["r", "first", "y"]


def test_check_layerwise_on_cpu_finds_where_nan_starts(tmp_path: Path) -> None:
    path = crafted.nan_deep_chain(tmp_path / "deep.onnx")
    result = run_check(CheckRequest(model=path, ep=ExecutionProvider.CPU, warm_runs=0, layerwise=True))
    layerwise = result.layerwise
    assert layerwise is not None and layerwise.reference is None
    (root,) = layerwise.roots
    assert (root.name, root.op_type, root.node_name, root.nonfinite) == ("t9", "Sqrt", "n9_sqrt", 8)
    assert [t.name for t in layerwise.first_divergent] == ["t9", "t10", "t11", "t12", "t13", "y"]
    assert onnx.load(str(path)).graph.output[0].name == "y"  # the file on disk is untouched


def test_cli_layerwise_table_and_package_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ortgpu.cli.main import main

    path = crafted.nan_deep_chain(tmp_path / "deep.onnx")
    assert main(["check", str(path), "--ep", "cpu", "--layerwise", "--warm-runs", "0"]) == 1
    out = capsys.readouterr().out
    assert "Layer-wise" in out and "n9_sqrt" in out and "Sqrt" in out
    assert main(["check", str(path), "--ep", "cpu", "--layerwise", "--package", str(tmp_path)]) == 2
    assert "--layerwise runs through the onnxruntime wheel" in capsys.readouterr().err


@pytest.mark.gpu
def test_check_layerwise_on_cuda_compares_every_tensor_with_the_cpu_ep(tmp_path: Path) -> None:
    path = crafted.small_transformer(tmp_path / "t.onnx")
    result = run_check(CheckRequest(model=path, ep=ExecutionProvider.CUDA, warm_runs=0, layerwise=True))
    layerwise = result.layerwise
    assert layerwise is not None and layerwise.reference == "the CPU EP"
    assert layerwise.compared == layerwise.tensors and layerwise.tested == "CUDAExecutionProvider"


def test_an_ort_engine_asks_for_tensors_in_its_own_models_types(tmp_path: Path) -> None:
    from ortgpu.fp16 import convert_to_fp16

    fp32 = load_model(crafted.small_cnn(tmp_path / "cnn.onnx"))
    fp16 = convert_to_fp16(fp32).model
    feeds = {"image": np.random.default_rng(0).random((1, 3, 16, 16), dtype=np.float32)}
    slots, _ = intermediate_tensors(fp32, {"image": (1, 3, 16, 16)})
    with OrtEngine(fp16, feeds, ExecutionProvider.CPU) as engine:
        values = engine.values(slots)
    assert values["c1"].dtype == np.float16 and values["probs"].dtype == np.float32  # keep_io_types
