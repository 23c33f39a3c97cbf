"""Explain's rules widened after the twentieth set: runtime shapes computed in the graph (a negative output shape,
Gather's index range quoted alone), a contrib op's CUDA kernel lacking an optional input, nodes ORT's own fusions
created, TensorRT provider DLLs failing with error 126 (a wrapped path, the append call naming the provider, the CUDA
provider failing too), and an OrtCUDAProviderOptions struct left uninitialised before a crash. Texts are composed,
not copied from any labelled set; the learned fallback is off so that the rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

# ---------------------------------------------------------------- a negative shape computed inside the graph


@pytest.mark.parametrize(
    "text",
    [
        "Non-zero status code returned while running Expand node. Name:'/dec/Expand_3' Status Message: "
        "/build/onnxruntime/core/framework/op_kernel.cc:83 virtual OrtValue* "
        "onnxruntime::OpKernelContext::OutputMLValue(int, const onnxruntime::TensorShape&) status.IsOK() was false. "
        "Tensor shape cannot contain any negative value",
        # wrapped by the terminal, inside a Loop body
        "[E:onnxruntime:, sequential_executor.cc:514 ExecuteKernel] Non-zero status code returned while running Scan "
        "node.\nName:'scan_7' Status Message: Non-zero status code returned while running Tile node.\n"
        "Name:'tile_2' Status Message: op_kernel.cc:83\nstatus.IsOK() was false. Tensor shape cannot contain any "
        "negative value",
    ],
)
def test_a_negative_output_shape_is_a_runtime_shape_error(text: str) -> None:
    assert top(text) == "NG-10"


def test_a_negative_dimension_in_prose_is_not_a_runtime_shape_error() -> None:
    assert "NG-10" not in rule_ids("my model's input shape has a -1 value for the batch, is a negative value ok?")


# ---------------------------------------------------------------- Gather's index range quoted on its own


def test_gathers_index_range_quoted_alone_is_a_runtime_shape_error() -> None:
    assert top("ORT fails on the lookup: idx=12 must be within the inclusive range [-12,11]") == "NG-10"


def test_an_index_range_of_another_wording_is_not_claimed() -> None:
    assert "NG-10" not in rule_ids("the slider's idx=12 is within the range 0 to 20")


# ---------------------------------------------------------------- a CUDA kernel without an optional input


@pytest.mark.parametrize(
    "text",
    [
        "Non-zero status code returned while running MultiHeadAttention node. Name:'/blk.3/mha' Status Message: "
        "relative_position_bias is not supported in MultiHeadAttention cuda kernel.",
        # the status message wrapped after the input's name
        "Non-zero status code returned while running PackedAttention node.\nName:'/l0/PackedAttention' Status "
        "Message: past_key\nis not supported in PackedAttention CUDA kernel",
    ],
)
def test_an_input_the_cuda_kernel_does_not_implement_is_a_missing_cuda_kernel(text: str) -> None:
    assert top(text) == "FM-54"


def test_the_same_words_of_a_cpu_kernel_are_not_the_cuda_one() -> None:
    text = (
        "Non-zero status code returned while running Attention node. Name:'a1' Status Message: "
        "past_key is not supported in Attention cpu kernel."
    )
    assert "FM-54" not in rule_ids(text)


# ---------------------------------------------------------------- a node that ORT's own fusion created


def test_an_invalid_node_that_a_fusion_created_is_an_optimizer_bug() -> None:
    text = (
        "onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : This "
        "is an invalid model. Error in Node:fused Conv_41 : Unrecognized attribute: activation_params for operator "
        "FusedConv"
    )
    assert top(text) == "FM-142"


def test_an_invalid_node_of_the_model_itself_is_not_an_optimizer_bug() -> None:
    text = (
        "onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : This "
        "is an invalid model. Error in Node:Conv_41 : Unrecognized attribute: activation_params for operator Conv"
    )
    assert "FM-142" not in rule_ids(text)


# ---------------------------------------------------------------- error 126 and the TensorRT provider DLL


def test_a_tensorrt_provider_dll_path_wrapped_onto_the_next_line_is_the_tensorrt_dll() -> None:
    text = (
        "Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:RuntimeException] provider_bridge_ort.cc:1209 "
        'onnxruntime::ProviderLibrary::Get \n[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" '
        'when trying to load \n"D:\\apps\\Detector\\bin\\Release\\net8.0\\runtimes\\win-x64\\native\\\n'
        'onnxruntime_providers_tensorrt.dll"'
    )
    assert top(text) == "FM-59"


def test_the_tensorrt_append_call_failing_with_126_is_the_tensorrt_dll() -> None:
    text = (
        "[E:onnxruntime:app, provider_bridge_ort.cc:640 onnxruntime::ProviderLibrary::ProviderLibrary] Failed to "
        "load library, error code: 126\nOrtSessionOptionsAppendExecutionProvider_Tensorrt: Failed to load shared "
        "library"
    )
    assert top(text) == "FM-59"


def test_the_cuda_append_call_failing_with_126_stays_the_cuda_dependencies() -> None:
    text = (
        "[E:onnxruntime:app, provider_bridge_ort.cc:640 onnxruntime::ProviderLibrary::ProviderLibrary] Failed to "
        "load library, error code: 126\nOrtSessionOptionsAppendExecutionProvider_CUDA: Failed to load shared library"
    )
    assert top(text) == "FM-21"


def test_the_cuda_provider_failing_too_puts_the_cuda_dependencies_first() -> None:
    text = (
        "EP Error provider_bridge_ort.cc:1193 onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : "
        'LoadLibrary failed with error 126 "" when trying to load "E:\\tools\\venv\\Lib\\site-packages\\onnxruntime'
        '\\capi\\onnxruntime_providers_tensorrt.dll"\n'
        " when using ['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']\n"
        "Falling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying.\n"
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1480 onnxruntime::TryGetProviderInfo_CUDA] "
        "provider_bridge_ort.cc:1193 onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary "
        'failed with error 126 "" when trying to load "E:\\tools\\venv\\Lib\\site-packages\\onnxruntime\\capi\\'
        'onnxruntime_providers_cuda.dll"'
    )
    ids = rule_ids(text)
    assert ids[0] == "FM-21"


def test_only_the_tensorrt_provider_failing_stays_the_tensorrt_dll() -> None:
    text = (
        "EP Error provider_bridge_ort.cc:1193 onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : "
        'LoadLibrary failed with error 126 "" when trying to load "E:\\tools\\venv\\Lib\\site-packages\\onnxruntime'
        '\\capi\\onnxruntime_providers_tensorrt.dll"\n'
        "Falling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying."
    )
    assert top(text) == "FM-59"


# ---------------------------------------------------------------- OrtCUDAProviderOptions left uninitialised


@pytest.mark.parametrize(
    "crash",
    [
        "Segmentation fault (core dumped)",
        "Exception thrown at 0x00007FF81C2B1A2E (onnxruntime_providers_cuda.dll) in infer.exe: 0xC0000005: Access "
        "violation reading location 0x0000000000000040.",
    ],
)
def test_a_crash_after_an_uninitialised_cuda_options_struct_is_the_options(crash: str) -> None:
    text = (
        "Ort::SessionOptions so;\nOrtCUDAProviderOptions cuda_opts;\ncuda_opts.device_id = 1;\n"
        "cuda_opts.gpu_mem_limit = SIZE_MAX;\nso.AppendExecutionProvider_CUDA(cuda_opts);\n"
        f'Ort::Session session(env, L"net.onnx", so);  // crashes here\n{crash}'
    )
    assert top(text) == "FM-81"


@pytest.mark.parametrize(
    "declaration",
    ["OrtCUDAProviderOptions cuda_opts{};", "OrtCUDAProviderOptions cuda_opts = {};", "OrtCUDAProviderOptionsV2* o;"],
)
def test_an_initialised_cuda_options_struct_before_a_crash_is_not_claimed(declaration: str) -> None:
    text = f"{declaration}\ncuda_opts.device_id = 0;\nSegmentation fault (core dumped)"
    assert "FM-81" not in rule_ids(text)


def test_an_uninitialised_struct_without_a_crash_is_not_claimed() -> None:
    text = "OrtCUDAProviderOptions cuda_opts;\ncuda_opts.device_id = 0;\nit runs but the GPU is not faster"
    assert "FM-81" not in rule_ids(text)


# ---------------------------------------------------------------- onnxruntime-genai: a real provider its package lacks


@pytest.mark.parametrize("name", ["qnn", "webgpu"])
def test_a_genai_provider_name_the_package_lacks_is_the_wrong_build(name: str) -> None:
    text = (
        "Unhandled exception. Microsoft.ML.OnnxRuntimeGenAI.OnnxRuntimeGenAIException: Unknown provider type: "
        f"{name}\n   at Microsoft.ML.OnnxRuntimeGenAI.Model..ctor(String modelPath)"
    )
    assert top(text) == "FM-02"


def test_a_short_provider_name_given_to_onnxruntime_itself_stays_a_typo() -> None:
    text = "Ort::Exception: Unknown Provider Type: dml (session_options.AppendExecutionProvider)"
    assert top(text) == "FM-86"
