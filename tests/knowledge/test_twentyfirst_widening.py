"""Explain's rules from the twenty-first set's misses: non-tensor outputs a tensor-only host cannot return (FM-210),
Triton's onnxruntime backend refusing a config dtype (FM-133) or an unsupported one (FM-169), the Java binding's feed
checks (NG-05), Resize's scale validation (NG-10), TensorRT's parser probing unsupported types while nodes fall back
(FM-74), a wrapper's import guard (FM-111), insightface applying only the CPU provider (FM-02), and aborts while the
process tears down (FM-211, FM-212). Texts are composed, not copied from any labelled set; the learned fallback is off
so that the rules decide. Each class has its false-positive guards."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

# ---------------------------------------------------------------- FM-210: non-tensor outputs


@pytest.mark.parametrize(
    "text",
    [
        "MLValueToTensorProto() failed. Output name: probabilities. Error Message: Don't support Non-Tensor values",
        "ONNX Runtime Status Code: 9. Dont support Non-Tensor value",
        "Uncaught (in promise) Error: Non-tensor type is not supported.\n    at OnnxruntimeSessionHandler.run",
        "Error: Can't access output tensor data on index 1. ERROR_CODE: 1",
        "TypeError: Cannot read properties of null (reading 'elemType')\n"
        "    at Function.tensorValueTypeFromProto (util.ts:460)\n    at new Graph (graph.ts:99)",
        "My pipeline was exported with skl2onnx and loaded in onnxruntime-web 1.12;\n"
        "session.run throws Uncaught 5123456",
    ],
)
def test_non_tensor_output(text: str) -> None:
    assert top(text) == "FM-210"


@pytest.mark.parametrize(
    "text",
    [
        "Error: Can't create a session. ERROR_CODE: 7",
        "TypeError: Cannot read properties of null (reading 'elemType')\n    at Tensor.fromImage (tensor.ts:40)",
        "converted with skl2onnx and run in onnxruntime (Python); the error message is only: 7508808",
        "onnxruntime-web: error code = 1 while fetching the output tensor of a resnet (converted with tf2onnx)",
    ],
)
def test_non_tensor_output_guard(text: str) -> None:
    assert "FM-210" not in rule_ids(text)


# ---------------------------------------------------------------- FM-133 / FM-169: Triton's onnxruntime backend dtypes


def test_triton_config_dtype_disagrees() -> None:
    text = (
        "E0301 model_lifecycle.cc] failed to load 'ranker': "
        "unexpected datatype TYPE_INT32 for input 'ids', expecting TYPE_INT64"
    )
    assert top(text) == "FM-133"


def test_triton_backend_dtype_unsupported() -> None:
    text = (
        "load failed for model 'unet': version 3 is at UNAVAILABLE state: "
        "Internal: unsupported datatype TYPE_BF16 for output 'latents'"
    )
    assert top(text) == "FM-169"


def test_triton_dtype_guard() -> None:
    text = "numpy raised: unexpected datatype for this operation; expecting float32 arrays"
    assert not {"FM-133", "FM-169"} & set(rule_ids(text))


# ---------------------------------------------------------------- NG-05: the Java binding's feed checks


@pytest.mark.parametrize(
    "text",
    [
        "ai.onnxruntime.OrtException: Unknown input name pixel_values, expected one of [images, orig_size]\n"
        "\tat ai.onnxruntime.OrtSession.run(OrtSession.java:300)",
        "java.lang.RuntimeException: ai.onnxruntime.OrtException: Unexpected number of inputs, expected [2,3) found 4",
    ],
)
def test_java_feed_checks(text: str) -> None:
    assert top(text) == "NG-05"


def test_java_feed_guard() -> None:
    text = "ValueError: Unknown input name in the tokenizer config; expected one of the known special tokens"
    assert "NG-05" not in rule_ids(text)


# ---------------------------------------------------------------- NG-10: Resize's scale validation


def test_resize_scale_invalid() -> None:
    text = (
        "Non-zero status code returned while running Resize node. Name:'/up/Resize' Status Message: "
        "upsamplebase.h:300 ScalesValidation Scale value should be greater than 0."
    )
    assert top(text) == "NG-10"


def test_resize_scale_guard() -> None:
    text = "The learning-rate scale value should be greater than the warmup ratio"
    assert "NG-10" not in rule_ids(text)


# ---------------------------------------------------------------- FM-74: TensorRT probing unsupported types


def test_trt_dtype_probe_is_fallback() -> None:
    text = (
        "Unsupported ONNX data type: INT8 (3)\n"
        "Found unsupported input: mask:0\n"
        "2020-01-02 10:00:00.000000000 [W:onnxruntime:Default, tensorrt_execution_provider.h:28 log] "
        "[2020-01-02 02:00:00   ERROR] (Unnamed Layer* 3) [Pooling]: at least 3 dimensions are required for input"
    )
    assert top(text) == "FM-74"


def test_trt_build_error_stays_with_a_real_failure() -> None:
    text = (
        "Unsupported ONNX data type: DOUBLE (11)\n"
        "2020-01-02 10:00:00.000000000 [E:onnxruntime:Default, tensorrt_execution_provider.h:28 log] "
        "[2020-01-02 02:00:00   ERROR] Network validation failed.\n"
        "TensorRT EP failed to create engine from network for fused node: TRTKernel_graph_0"
    )
    assert top(text) != "FM-74"


# ---------------------------------------------------------------- FM-111: a wrapper's import guard


def test_wrapper_import_guard() -> None:
    text = "ImportError: 'onnxruntime' must be installed to use the 'silero' voice activity detector."
    assert top(text) == "FM-111"


def test_wrapper_import_guard_gpu_package_guard() -> None:
    text = "ImportError: 'onnxruntime-gpu' must be installed to use CUDA acceleration"
    assert "FM-111" not in rule_ids(text)


# ---------------------------------------------------------------- FM-02: insightface applies only the CPU provider


def test_insightface_cpu_only_applied() -> None:
    text = (
        "Applied providers: ['CPUExecutionProvider'], with options: {'CPUExecutionProvider': {}}\n"
        "find model: /home/u/.insightface/models/antelopev2/scrfd_10g.onnx detection [1, 3, '?', '?'] 127.5 128.0\n"
        "Applied providers: ['CPUExecutionProvider'], with options: {'CPUExecutionProvider': {}}\n"
        "find model: /home/u/.insightface/models/antelopev2/glintr100.onnx recognition ['None', 3, 112, 112] 127.5"
    )
    assert top(text) == "FM-02"


@pytest.mark.parametrize(
    "text",
    [
        "Applied providers: ['CPUExecutionProvider'], with options: {'CPUExecutionProvider': {}}\n"
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1862 onnxruntime::TryGetProviderInfo_CUDA] LoadLibrary failed "
        'with error 126 "" when trying to load "C:\\venv\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"',
        "Applied providers: ['CUDAExecutionProvider', 'CPUExecutionProvider'], with options: {}\n"
        "Applied providers: ['CPUExecutionProvider'], with options: {'CPUExecutionProvider': {}}",
    ],
)
def test_insightface_cpu_only_guard(text: str) -> None:
    assert top(text) != "FM-02"


# ---------------------------------------------------------------- FM-211 / FM-212: aborts at teardown


def test_mutex_abort_at_exit() -> None:
    text = (
        "after the model loads the script ends and node aborts:\n"
        "libc++abi: terminating due to uncaught exception of type std::__1::system_error: mutex lock failed: "
        "Invalid argument\nzsh: abort      node vad.mjs"
    )
    assert top(text) == "FM-211"


def test_mutex_guard() -> None:
    text = "pthread_mutex_lock returned 22 while creating the session (invalid argument)"
    assert "FM-211" not in rule_ids(text)


def test_env_release_at_shutdown() -> None:
    text = (
        "When the worker receives SIGTERM it dies with: terminate called after throwing an instance of "
        "'onnxruntime::OnnxRuntimeException' what(): onnxruntime/core/session/ort_env.cc:85 "
        "static void OrtEnv::Release(OrtEnv*) env_ptr == p_instance_.get() was false."
    )
    assert top(text) == "FM-212"


def test_env_release_two_copies_stays_fm72() -> None:
    text = (
        "importing both packages aborts:\n"
        "libc++abi: terminating due to uncaught exception of type onnxruntime::OnnxRuntimeException: "
        "ort_env.cc:92 static void OrtEnv::Release(OrtEnv *) env_ptr == p_instance_.get() was false.\n"
        "zsh: abort      node index.js"
    )
    assert top(text) == "FM-72"
