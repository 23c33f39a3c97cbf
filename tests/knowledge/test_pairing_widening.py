"""Explain's rules for pairs that must match and do not: a binding and the allocation-device names an EP reports
(FM-200), the OpenVINO EP and its device option (FM-201), an op's ONNX function body and the model's opset (FM-202),
the onnxruntime-genai extension and its own native library (FM-203), a wrapper and the onnxruntime Python API it
calls (FM-204), and ORT's generation ops and the release that exported their subgraphs (FM-144). Texts are composed,
not copied from any labelled set; the learned fallback is off so that the rules decide. Each class has its
false-positive guards."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top


@pytest.mark.parametrize(
    "text",
    [
        "thread 'main' panicked: called `Result::unwrap()` on an `Err` value: UnknownAllocationDevice(\"Cuda Pinned\")",
        "extracting the output tensor fails: unknown memory device 'OpenVINO_GPU' reported by the session",
    ],
)
def test_unknown_allocation_device(text: str) -> None:
    assert top(text) == "FM-200"


@pytest.mark.parametrize(
    "text",
    [
        "allocation device: Cuda, memory type default; the output is all zeros",
        "Error: unknown device 'cuda:3' passed to the memory info",
    ],
)
def test_unknown_allocation_device_guards(text: str) -> None:
    assert "FM-200" not in rule_ids(text)


def test_openvino_default_device() -> None:
    text = (
        "session.get_providers() -> ['OpenVINOExecutionProvider', 'CPUExecutionProvider'] yet inference runs on\n"
        "the CPU only; openvino.Core().available_devices prints ['CPU', 'GPU.0'] on this Iris Xe laptop"
    )
    assert top(text) == "FM-201"


@pytest.mark.parametrize(
    "text",
    [
        # the device option is set: not the default-device class
        "providers=['OpenVINOExecutionProvider'], provider_options=[{'device_type': 'GPU'}] but it still runs on\n"
        "the CPU; available_devices is ['CPU', 'GPU']",
        # OpenVINO lists no GPU: nothing says a GPU was there to use
        "OpenVINOExecutionProvider is selected and the model runs on the CPU, which is all this box has",
    ],
)
def test_openvino_default_device_guards(text: str) -> None:
    assert "FM-201" not in rule_ids(text)


def test_function_body_opset() -> None:
    text = (
        "InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model. In Node, "
        '("", Split, "", -1) : ("_0xabc_In": tensor(float16),) -> ("_0xabc_A","_0xabc_B",) , '
        "Error Unrecognized attribute: split for operator Split"
    )
    assert top(text) == "FM-202"


def test_function_body_opset_guard_named_node() -> None:
    # the exporter's own node (it has a name) with an attribute of an older opset: the model is invalid (NG-11)
    text = (
        "[ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model. In Node, "
        '("/encoder/ReduceMean_3", ReduceMean, "", -1) : ("x": tensor(float),) -> ("m",) , '
        "Error Unrecognized attribute: axes for operator ReduceMean"
    )
    ids = rule_ids(text)
    assert "FM-202" not in ids
    assert ids[:1] == ["NG-11"]


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: dlopen(/opt/venv/lib/python3.12/site-packages/onnxruntime_genai/onnxruntime_genai.cpython-312-"
        "darwin.so, 0x0002): Library not loaded: @rpath/libonnxruntime-genai.dylib",
        "import onnxruntime_genai\nImportError: libonnxruntime-genai.so: cannot open shared object file: "
        "No such file or directory",
    ],
)
def test_genai_own_library(text: str) -> None:
    assert top(text) == "FM-203"


def test_genai_own_library_guard_other_library() -> None:
    # the genai extension loads, but a CUDA library it needs is missing: a CUDA setup problem, not genai's wheel
    text = (
        "import onnxruntime_genai\nImportError: libcublasLt.so.12: cannot open shared object file: "
        "No such file or directory"
    )
    assert "FM-203" not in rule_ids(text)


@pytest.mark.parametrize(
    "text",
    [
        "Failed to load detector: __init__() got an unexpected keyword argument 'provider_options'",
        "TypeError: InferenceSession.__init__() got an unexpected keyword argument 'providers'",
        "sess = rt.InferenceSession(path, providers=providers)\n"
        "TypeError: __init__() got an unexpected keyword argument 'providers'",
    ],
)
def test_ort_python_api_too_old(text: str) -> None:
    assert top(text) == "FM-204"


@pytest.mark.parametrize(
    "text",
    [
        # another library's own class refuses the keyword: that library's API, not onnxruntime's
        "TypeError: FaceAnalysis.__init__() got an unexpected keyword argument 'providers'",
        # a bare __init__() and `providers` with no InferenceSession in sight
        "app = FaceAnalysis(providers=['CUDAExecutionProvider'])\n"
        "TypeError: __init__() got an unexpected keyword argument 'providers'",
    ],
)
def test_ort_python_api_too_old_guards(text: str) -> None:
    assert "FM-204" not in rule_ids(text)


def test_generation_subgraph_check() -> None:
    text = (
        "OrtException: [ErrorCode:Fail] subgraph_t5_decoder.cc:87 Validate number of inputs expected to be "
        "2 + 2 * layers, got:14"
    )
    assert top(text) == "FM-144"


def test_generation_subgraph_guard() -> None:
    # a subgraph that fails with a CUDA error is not the release pairing
    text = "subgraph_gpt.cc:120 Validate: CUDA failure 2: out of memory ; GPU=0"
    assert "FM-144" not in rule_ids(text)
