"""Asking ORT which nodes an EP takes: its kernel registry matched per node (checked against real sessions), and
"not determined" with the cause when neither a session nor the registry can answer."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ortgpu.inspect import KernelSource, KernelStatus
from ortgpu.inspect import kernels as kernels_module
from ortgpu.inspect.graph import infer_shapes
from ortgpu.inspect.registry import RegistryError, _failure, read_registry
from ortgpu.model import zoo
from ortgpu.model.inspect import load_model

CPU = "CPUExecutionProvider"
# (op, element type): the CPU EP of onnxruntime has a kernel for the first two, none for the last two.
CASES = [
    ("Relu", TensorProto.FLOAT),
    ("Erf", TensorProto.FLOAT),
    ("Relu", TensorProto.INT64),
    ("Erf", TensorProto.DOUBLE),
]


def _one_node(op: str, elem: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], name=f"{op}_{TensorProto.DataType.Name(elem).lower()}")],
        "one",
        [helper.make_tensor_value_info("x", elem, [2])],
        [helper.make_tensor_value_info("y", elem, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _session_builds(model: onnx.ModelProto) -> bool:
    try:
        ort.InferenceSession(model.SerializeToString(), providers=[CPU])
    except ort.capi.onnxruntime_pybind11_state.NotImplemented:
        return False
    return True


def test_registry_matching_agrees_with_real_sessions(tmp_path: Path) -> None:
    nodes, inputs, outputs = [], [], []
    for i, (op, elem) in enumerate(CASES):
        name = f"{op}_{TensorProto.DataType.Name(elem).lower()}"
        nodes.append(helper.make_node(op, [f"x{i}"], [f"y{i}"], name=name))
        inputs.append(helper.make_tensor_value_info(f"x{i}", elem, [2]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", elem, [2]))
    model = helper.make_model(
        helper.make_graph(nodes, "mix", inputs, outputs), opset_imports=[helper.make_opsetid("", 17)]
    )
    model.ir_version = 8
    path = tmp_path / "mix.onnx"
    onnx.save(model, path)
    _, proto = load_model(path)
    coverage = kernels_module.registry_coverage(proto, infer_shapes(proto), CPU)
    assert coverage.status is KernelStatus.DETERMINED and coverage.source is KernelSource.REGISTRY
    assert coverage.nodes_checked == 4 and coverage.nodes_on_ep == 2
    flagged = {n.name for n in coverage.off_ep}
    assert flagged == {"Relu_int64", "Erf_double"}
    assert all(n.reason == "no-kernel" and "not for these types (tensor(" in (n.detail or "") for n in coverage.off_ep)
    for op, elem in CASES:  # what the registry says is what ORT does when it builds a session
        name = f"{op}_{TensorProto.DataType.Name(elem).lower()}"
        assert _session_builds(_one_node(op, elem)) is (name not in flagged), name


def test_registry_without_kernels_for_the_provider_is_no_answer() -> None:
    with pytest.raises(RegistryError, match="registers no kernel at all for NoSuchExecutionProvider"):
        read_registry("NoSuchExecutionProvider", [("", "Relu")])


def test_a_crashed_registry_child_is_described() -> None:
    stderr = (
        "2026-12-01 [E:onnxruntime:Default, provider_bridge_ort.cc:2202 operator()] ... FAIL : Failed to load "
        "library /x/libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: cannot open shared object file: "
        "No such file or directory\n"
    )
    text = _failure(-11, stderr)
    assert text.startswith("crashed (SIGSEGV)") and "libcublasLt.so.13" in text


def test_gpu_build_without_a_gpu_is_not_determined_with_both_causes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime-gpu on a machine without CUDA: the CUDA session falls back, the registry child crashes."""
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", CPU])

    def crashed(provider: str, ops: object, timeout_s: float = 0.0) -> None:
        raise RegistryError("crashed (SIGSEGV); libonnxruntime_providers_cuda.so could not be loaded")

    monkeypatch.setattr(kernels_module, "read_registry", crashed)
    path = zoo.build_tiny_model(tmp_path / "tiny.onnx")
    info, proto = load_model(path)
    coverage = kernels_module.kernel_coverage(info, proto, infer_shapes(proto))
    assert coverage.status is KernelStatus.NOT_DETERMINED
    assert coverage.reason.startswith("not determined: CUDA EP not available here (")
    assert "CUDAExecutionProvider was requested" in coverage.reason
    assert "get_all_opkernel_def crashed (SIGSEGV)" in coverage.reason


def test_gpu_build_falls_back_to_the_registry_when_no_session_can_be_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", CPU])
    real = kernels_module.read_registry
    monkeypatch.setattr(kernels_module, "read_registry", lambda provider, ops, timeout_s: real(CPU, ops, timeout_s))
    path = zoo.build_tiny_model(tmp_path / "tiny.onnx")
    info, proto = load_model(path)
    coverage = kernels_module.kernel_coverage(info, proto, infer_shapes(proto))
    assert coverage.status is KernelStatus.DETERMINED and coverage.source is KernelSource.REGISTRY
    assert coverage.reason.startswith("a CUDA session could not be built (")
    assert coverage.nodes_checked == coverage.nodes_on_ep == info.node_count
    assert any("shows exactly what runs where" in note for note in coverage.notes)
