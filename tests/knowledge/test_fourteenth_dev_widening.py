"""Explain's integration rules from the fourteenth set's dev half: custom-op registration and API versions, serving
configs that disagree with the model, a C++ null environment, one component choosing the CPU, EXHAUSTIVE conv search,
TensorRT's INT64 cast. Texts are composed, not copied from any labelled set; the learned fallback is off so that the
rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

from ortgpu.explain import PasteKind, explain

# ---------------------------------------------------------------- custom-domain operators and custom-op libraries


@pytest.mark.parametrize(
    "text",
    [
        "InferenceSession failed: [ONNXRuntimeError] : 1 : FAIL : Load model from seg.onnx failed:Fatal error: "
        "mycompany.vision:DeformConv2d(-1) is not a registered function/op",
        "Ort::Exception: Load model from ./ocr.onnx failed:Fatal error: ai.onnx.contrib:StringRegexReplace(1) is not "
        "a registered function/op",
        "onnxruntime error: com.microsoft:MyFancyScatter(-1) is not a registered function/op",  # not a contrib op
    ],
)
def test_an_op_of_a_custom_domain_without_its_library_is_fm131(text: str) -> None:
    result = explain(text, closest=False)
    assert result.matches[0].id == "FM-131"
    assert result.verdict is PasteKind.NOT_GPU


@pytest.mark.parametrize(
    "text",
    [
        "Fatal error: com.microsoft:SkipLayerNormalization(-1) is not a registered function/op",  # ORT's own contrib op
        "Fatal error: ai.onnx.ml:TreeEnsembleRegressor(5) is not a registered function/op",  # ONNX's ml domain
    ],
)
def test_ort_and_onnx_domains_stay_with_the_opset_or_build_entry(text: str) -> None:
    assert top(text) == "NG-08"


@pytest.mark.parametrize(
    "text",
    [
        "sess_opts.register_custom_ops_library(lib_path)\nonnxruntime.capi.onnxruntime_pybind11_state.Fail: The given "
        "version [21] is not supported, only version 1 to 17 is supported in this build.",
        "RegisterCustomOps failed while loading libtokenizer_ops.so: The given version [19] is not supported, only "
        "version 1 to 14 is supported in this build.",
    ],
)
def test_a_custom_op_library_built_for_a_newer_api_is_fm132(text: str) -> None:
    assert top(text) == "FM-132"


def test_the_api_version_message_without_a_custom_op_library_stays_with_the_binding_entry() -> None:
    text = (
        "Unhandled exception. System.TypeInitializationException: The given version [22] is not supported, only "
        "version 1 to 16 is supported in this build."
    )
    assert "FM-132" not in rule_ids(text)
    assert top(text) == "FM-82"


# ---------------------------------------------------------------- a serving config that disagrees with the model


@pytest.mark.parametrize(
    "text",
    [
        "I1201 model_lifecycle.cc:459] failed to load 'ranker' version 3: Invalid argument: model 'ranker', tensor "
        "'ids': the model expects 2 dimensions (shape [-1,128]) but the model configuration specifies 2 dimensions "
        "(shape [1,512])",
        "UNAVAILABLE: Invalid argument: unexpected datatype TYPE_FP32 for inference input 'pixel_values', expecting "
        "TYPE_FP16 for model configuration of 'clip_visual'",
    ],
)
def test_a_serving_config_that_disagrees_with_the_model_is_fm133(text: str) -> None:
    result = explain(text, closest=False)
    assert result.matches[0].id == "FM-133"
    assert result.verdict is PasteKind.NOT_GPU


def test_a_config_mentioned_in_prose_is_not_a_mismatch() -> None:
    text = "The model configuration looks fine to me and the model loads; inference is just slow."
    assert "FM-133" not in rule_ids(text)


# ---------------------------------------------------------------- a C++ session given an empty environment


@pytest.mark.parametrize("init", ["{nullptr}", "( nullptr )"])
def test_a_session_built_on_a_null_env_is_fm97(init: str) -> None:
    text = (
        "int main() {\n  Ort::Env environment" + init + ";\n  Ort::SessionOptions so;\n"
        '  Ort::Session s(environment, "yolo.onnx", so);\n}\nProgram received signal SIGSEGV, Segmentation fault.\n'
        "#0 0x00007f in OrtApis::CreateSession (env=0x0, ...) at onnxruntime_c_api.cc:731"
    )
    assert top(text) == "FM-97"


def test_a_null_env_member_assigned_later_is_not_claimed_without_a_session() -> None:
    text = "class Runner { Ort::Env env_{nullptr}; };  // filled in init()\nwarning: unused variable 'x'"
    assert "FM-97" not in rule_ids(text)


# ---------------------------------------------------------------- one component chose the CPU


def test_one_component_on_cpu_while_another_gets_cuda_is_fm96() -> None:
    text = (
        "[FaceRestore] session providers: ['CPUExecutionProvider']\n"
        "[Upscaler] active providers = ['CUDAExecutionProvider', 'CPUExecutionProvider']"
    )
    assert top(text) == "FM-96"


def test_a_session_that_fell_back_is_not_a_component_choice() -> None:
    text = (
        "[Detector] providers: ['CPUExecutionProvider']\n"
        "available: ['CUDAExecutionProvider', 'CPUExecutionProvider']\n"
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1548] Failed to create CUDAExecutionProvider"
    )
    assert "FM-96" not in rule_ids(text)


def test_repl_lists_without_a_component_label_are_not_claimed() -> None:
    text = (
        ">>> ort.get_available_providers()\n['CUDAExecutionProvider', 'CPUExecutionProvider']\n>>> s.get_providers()\n"
    )
    text += "['CPUExecutionProvider']"
    assert "FM-96" not in rule_ids(text)


# ---------------------------------------------------------------- EXHAUSTIVE convolution search, TensorRT's INT64 cast


def test_exhaustive_conv_search_named_with_timings_is_fm48() -> None:
    text = (
        "profiling shows the encoder convs dominate; cudnn_conv_algo_search is left at EXHAUSTIVE (the default)\n"
        '{"cat":"Node","dur":48810,"name":"/encoder/conv3/Conv_kernel_time"}'
    )
    assert top(text) == "FM-48"


def test_exhaustive_named_next_to_an_error_is_not_a_slow_run() -> None:
    text = (
        "providers=[('CUDAExecutionProvider', {'cudnn_conv_algo_search': 'EXHAUSTIVE'})] took 3 s then\n"
        "onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : CUDNN failure 9"
    )
    assert "FM-48" not in rule_ids(text)


def test_tensorrts_int64_cast_alone_is_benign() -> None:
    text = (
        "2024-03-02 11:00:01 [W:onnxruntime:Default, tensorrt_execution_provider.h:83 log] [2024-03-02 11:00:01 "
        "WARNING] onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights, while TensorRT does "
        "not natively support INT64. Attempting to cast down to INT32."
    )
    result = explain(text, closest=False)
    assert result.matches[0].id == "FM-65"
    assert result.verdict is PasteKind.BENIGN


def test_tensorrts_int64_cast_next_to_a_real_error_is_not_benign() -> None:
    text = (
        "WARNING] Your ONNX model has been generated with INT64 weights, while TensorRT does not natively support "
        "INT64. Attempting to cast down to INT32.\n"
        "[E:onnxruntime:Default, tensorrt_execution_provider.cc:1020] TensorRT EP failed to create engine from network"
    )
    assert top(text) != "FM-65"


# ---------------------------------------------------------------- the .NET GPU package's older loader wording


def test_dotnet_gpu_package_whose_onnxruntime_dll_cannot_load_is_fm21() -> None:
    text = (
        "Using Microsoft.ML.OnnxRuntime.Gpu 1.6.0 on Windows 10, CUDA 10.1 installed\n"
        "System.DllNotFoundException: Unable to load DLL 'onnxruntime': The specified module could not be found. "
        "(Exception from HRESULT: 0x8007007E)"
    )
    assert top(text) == "FM-21"


def test_dotnet_cpu_package_whose_onnxruntime_dll_cannot_load_stays_fm82() -> None:
    text = (
        "Microsoft.ML.OnnxRuntime 1.16.3, published single-file for linux-x64\n"
        "System.DllNotFoundException: Unable to load DLL 'onnxruntime': The specified module could not be found."
    )
    assert top(text) == "FM-82"
