"""Per-node placement from ORT's own verbose log and profiling output, subgraphs and Memcpy nodes included."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ortgpu.placement import (
    OffReason,
    PlacedNode,
    PlacementSource,
    build_report,
    parse_profile,
    parse_profile_file,
    parse_verbose_log,
)
from ortgpu.session.capture import capture_native_stderr

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def _if_model(path: Path) -> Path:
    """Add -> ReduceSum -> Greater -> If, with one node in each branch: six nodes, two in subgraphs."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def branch(op: str, out: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node(op, ["a"], [out], name=f"{op.lower()}_in_branch")],
            f"{op}_branch",
            [],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", 4])],
        )

    nodes = [
        helper.make_node("Add", ["x", "c"], ["a"], name="add"),
        helper.make_node("ReduceSum", ["a"], ["s"], keepdims=0, name="sum"),
        helper.make_node("Greater", ["s", "zero"], ["cond"], name="greater"),
        helper.make_node("If", ["cond"], ["y"], then_branch=branch("Relu", "t"), else_branch=branch("Neg", "e"),
                         name="choose"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "if_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [
            numpy_helper.from_array(np.ones(4, np.float32), "c"),
            numpy_helper.from_array(np.array(0, np.float32), "zero"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _session(path: Path, *, verbose: bool = False, profile_dir: Path | None = None, logid: str = "t") -> tuple:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # keep every node
    options.logid = logid
    if verbose:
        options.log_severity_level = 0
    if profile_dir is not None:
        options.enable_profiling = True
        options.profile_file_prefix = str(profile_dir / "profile")
    with capture_native_stderr() as log:
        session = ort.InferenceSession(str(path), options, providers=[CPU])
    return session, log.text


def test_real_verbose_log_counts_every_node_including_subgraphs(tmp_path: Path) -> None:
    _, log = _session(_if_model(tmp_path / "if.onnx"), verbose=True, logid="ortgpu-a")
    report = parse_verbose_log(log, CPU, logid="ortgpu-a")
    assert report is not None
    assert report.source is PlacementSource.LOG and report.complete
    assert report.node_count == 6  # 4 in the main graph + one per If branch, taken or not
    assert report.compute_per_provider == {CPU: 6}
    assert report.all_on_requested and report.memcpy_count == 0
    assert not report.names_known  # ORT lists no names when every node is on one EP
    assert parse_verbose_log(log, CPU, logid="another-session") is None


def test_log_without_verbose_lines_gives_no_placement(tmp_path: Path) -> None:
    _, log = _session(_if_model(tmp_path / "if.onnx"), verbose=False)
    assert parse_verbose_log(log, CPU) is None


def _line(message: str, logid: str = "ortgpu-gpu") -> str:
    return (
        f"2026-12-01 10:00:00.000 [V:onnxruntime:{logid}, session_state.cc:1598 VerifyEachNodeIsAssignedToAnEp] "
        f"{message}"
    )


# The block ORT's session_state.cc logs for a CUDA session with a node it has no CUDA kernel for.
MIXED_LOG = "\n".join(
    [
        "2026-12-01 10:00:00.000 [I:onnxruntime:ortgpu-gpu, cuda_execution_provider.cc:2580 GetCapability] "
        "CUDA kernel not found in registries for Op type: Det node name: det",
        "2026-12-01 10:00:00.000 [I:onnxruntime:Default, fallback_cpu_capability.cc:150 GetCpuPreferredNodes] "
        "ORT optimization- Force fallback to CPU execution for node: shape_of_x because the CPU execution path is "
        "deemed faster than overhead involved with execution on other EPs  capable of executing this node",
        _line("Node placements"),
        _line(" Node(s) placed on [CPUExecutionProvider]. Number of nodes: 2"),
        _line("  Det (det)"),
        _line("  Shape (shape_of_x)"),
        _line(" Node(s) placed on [CUDAExecutionProvider]. Number of nodes: 5"),
        _line("  Mul (scale)"),
        _line("  MemcpyToHost (Memcpy)"),
        _line("  MemcpyFromHost (Memcpy_token_1)"),
        _line("  Add (offset)"),
        _line("  Relu ()"),
        _line(" All nodes placed on [CPUExecutionProvider]. Number of nodes: 9", logid="other-session"),
        "2026-12-01 10:00:00.001 [V:onnxruntime:ortgpu-gpu, session_state.cc:196 CreateGraphInfo] Done",
    ]
)


def test_mixed_placement_lists_nodes_off_the_requested_ep_and_memcpy() -> None:
    report = parse_verbose_log(MIXED_LOG, CUDA, logid="ortgpu-gpu")
    assert report is not None and report.names_known
    assert report.node_count == 7
    assert report.compute_count == 5 and report.memcpy_count == 2
    assert report.compute_per_provider == {CPU: 2, CUDA: 3}
    assert [(n.op_type, n.name, n.reason) for n in report.off_requested] == [
        ("Det", "det", OffReason.NO_KERNEL),
        ("Shape", "shape_of_x", OffReason.CPU_PREFERRED),
    ]
    assert report.off_reasons == {"no-kernel": 1, "cpu-preferred": 1}
    assert {n.op_type for n in report.memcpy_nodes} == {"MemcpyToHost", "MemcpyFromHost"}
    assert report.off_requested_count == 2 and not report.all_on_requested
    assert report.summary() == (
        "3/5 compute nodes on CUDAExecutionProvider, 2 on CPU, 2 Memcpy (off the EP: 1 cpu-preferred, 1 no-kernel)"
    )


def test_real_profile_sees_the_executed_subgraph_node_with_its_provider(tmp_path: Path) -> None:
    session, _ = _session(_if_model(tmp_path / "if.onnx"), profile_dir=tmp_path)
    session.run(None, {"x": np.ones((2, 4), np.float32)})  # sum > 0: the then-branch (Relu) runs
    report = parse_profile_file(Path(session.end_profiling()), CPU)
    assert report is not None
    assert report.source is PlacementSource.PROFILE and not report.complete
    assert report.all_on_requested
    assert report.compute_count == 5  # the else-branch Neg never ran, so a profile cannot see it
    assert "(nodes that ran)" in report.summary()


def test_profile_counts_a_loop_body_node_once_and_reads_providers() -> None:
    events = [
        {"cat": "Session", "name": "model_run"},
        *[{"cat": "Node", "name": "body_add_kernel_time", "args": {"op_name": "Add", "provider": CUDA}}] * 10,
        {"cat": "Node", "name": "body_add_fence_before", "args": {"op_name": "Add", "provider": CUDA}},
        {"cat": "Node", "name": "Memcpy_kernel_time", "args": {"op_name": "MemcpyToHost", "provider": CUDA}},
        {"cat": "Node", "name": "topk_kernel_time", "args": {"op_name": "TopK", "provider": CPU}},
    ]
    report = parse_profile(events, CUDA)
    assert report is not None
    assert report.compute_per_provider == {CPU: 1, CUDA: 1}
    assert report.memcpy_count == 1
    assert [(n.name, n.reason) for n in report.off_requested] == [("topk", OffReason.UNKNOWN)]
    assert parse_profile([{"cat": "Session", "name": "x"}], CUDA) is None


def test_profile_file_wrapped_in_trace_events_is_read(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"traceEvents": [
        {"cat": "Node", "name": "n_kernel_time", "args": {"op_name": "Relu", "provider": CUDA}}
    ]}), encoding="utf-8")  # fmt: skip
    report = parse_profile_file(path, CUDA)
    assert report is not None and report.all_on_requested


@pytest.mark.parametrize("memcpy_op", ["MemcpyToHost", "MemcpyFromHost"])
def test_memcpy_nodes_are_not_compute_nodes(memcpy_op: str) -> None:
    node = PlacedNode("m", memcpy_op, CUDA)
    assert node.is_memcpy
    report = build_report([node, PlacedNode("c", "Conv", CUDA)], CUDA, PlacementSource.LOG)
    assert report.compute_count == 1 and report.memcpy_count == 1 and report.all_on_requested
