"""Rules for the fresh set's miss classes: Windows loader codes, bindings' CPU-only and C API wordings, old
TensorRT wording, and Memcpy nodes on the CPU EP. Texts are paraphrases, not the measured pastes."""

from __future__ import annotations

import pytest

from ortgpu.explain import explain
from ortgpu.knowledge.paste import prepare
from ortgpu.knowledge.signals import SignalKind, extract_signals


def _ids(text: str) -> list[str]:
    return [m.id for m in explain(text).matches]


_PROVIDER = "C:\\env\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"


@pytest.mark.parametrize(
    ("code", "entry"),
    [("126", "FM-21"), ("127", "FM-76"), ("193", "FM-77"), ("1114", "FM-78")],
)
def test_each_windows_loader_code_has_its_own_diagnosis(code: str, entry: str) -> None:
    text = (
        "onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : "
        f'LoadLibrary failed with error {code} "" when trying to load "{_PROVIDER}"'
    )
    assert _ids(text)[0] == entry


def test_loader_code_is_a_whole_number() -> None:
    # 11140 and 1270 are not the codes above; nothing claims them
    for code in ("11140", "1270", "1930"):
        ids = _ids(f"FAIL : LoadLibrary failed with error {code} when trying to load the provider")
        assert not {"FM-76", "FM-77", "FM-78"} & set(ids), code


def test_error_1114_says_dll_initialisation_and_names_driver_and_conflicts() -> None:
    result = explain(f'LoadLibrary failed with error 1114 "" when trying to load "{_PROVIDER}"')
    top = result.matches[0]
    assert top.id == "FM-78"
    text = " ".join([top.title, top.meaning, top.cause, top.fix]).lower()
    assert "initiali" in text and "driver" in text and "conda" in text


def test_python_winerror_193_is_a_bad_image() -> None:
    text = 'OSError: [WinError 193] %1 is not a valid Win32 application. Error loading "D:\\py\\onnxruntime.dll"'
    assert _ids(text)[0] == "FM-77"


def test_winerror_1114_importing_onnxruntime_stays_the_msvc_runtime_entry() -> None:
    text = "ImportError: DLL load failed while importing onnxruntime_pybind11_state: [WinError 1114]"
    assert _ids(text)[0] == "FM-28"


@pytest.mark.parametrize(
    "text",
    [
        "GetSessionOptionsImpl:170 Please compile with -DSHERPA_ONNX_ENABLE_GPU=ON. Available providers: "
        "CPUExecutionProvider, .\nFallback to cpu!",
        "warning: cuda provider requested, but this library was compiled without CUDA; rebuild it with "
        "-DMYAPP_USE_CUDA=ON",
    ],
)
def test_a_bindings_own_cpu_only_build_message(text: str) -> None:
    assert _ids(text)[0] == "FM-32"


def test_an_unquoted_provider_list_with_only_cpu_is_a_cpu_only_build() -> None:
    paste = prepare("Requested CUDA. Available providers: CPUExecutionProvider, AzureExecutionProvider")
    kinds = [s.kind for s in extract_signals(paste)]
    assert SignalKind.CPU_ONLY_PROVIDERS in kinds
    # a GPU provider in the unquoted list is not a CPU-only build
    paste = prepare("Available providers: CUDAExecutionProvider, CPUExecutionProvider")
    assert SignalKind.CPU_ONLY_PROVIDERS not in [s.kind for s in extract_signals(paste)]
    # an unquoted CPU provider without any word about availability says nothing
    paste = prepare("session created with CPUExecutionProvider in 12 ms")
    assert SignalKind.CPU_ONLY_PROVIDERS not in [s.kind for s in extract_signals(paste)]


@pytest.mark.parametrize(
    "api", ["OrtSessionOptionsAppendExecutionProvider_Cuda", "SessionOptionsAppendExecutionProvider_CUDA"]
)
def test_c_api_failed_to_load_shared_library(api: str) -> None:
    text = f"Error: {api}: Failed to load shared library\n    at new OnnxruntimeSessionHandler (backend.js:40:12)"
    result = explain(text)
    top = result.matches[0]
    assert top.id == "FM-79"
    assert "ortgpu doctor" in top.fix and "driver" in top.cause.lower()


def test_the_loader_line_before_the_c_api_message_wins() -> None:
    text = (
        "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared "
        "object file: No such file or directory\n"
        "Error: OrtSessionOptionsAppendExecutionProvider_Cuda: Failed to load shared library"
    )
    ids = _ids(text)
    assert ids[0] != "FM-79" and "FM-79" in ids


@pytest.mark.parametrize(
    "text",
    [
        "EP_FAIL : TensorRT EP could not build Engine for fused node: TensorrtExecutionProvider_TRTKernel_7_0",
        "EP_FAIL : TensorRT EP failed to create engine from network for fused node: TRTKernel_graph_1_0",
    ],
)
def test_tensorrt_engine_build_wordings_old_and_new(text: str) -> None:
    assert _ids(text)[0] == "FM-75"


@pytest.mark.parametrize(
    "text",
    [
        "NOT_IMPLEMENTED : Could not find an implementation for MemcpyFromHost(1) node with name 'Memcpy_7'",
        "[ErrorCode:NotImplemented] Failed to find kernel for MemcpyToHost(1) (node:'Memcpy_2' "
        "ep:'CPUExecutionProvider'). Kernel not found",
    ],
)
def test_memcpy_nodes_on_the_cpu_ep_point_at_the_saved_optimised_model(text: str) -> None:
    result = explain(text)
    top = result.matches[0]
    assert top.id == "NG-13"
    assert "FM-54" not in [m.id for m in result.matches]  # not a missing CUDA kernel
    assert "optimized_model_filepath" in top.cause and "ORT_ENABLE_BASIC" in top.fix


def test_other_missing_kernels_keep_their_entries() -> None:
    assert _ids("Could not find an implementation for ConvInteger(10) node with name 'c1'")[0] == "NG-08"
    assert (
        _ids("Failed to find kernel for SkipLayerNormalization(1) (node:'sln' ep:'CUDAExecutionProvider')")[0]
        == "FM-54"
    )
