"""Explain's contract rules from the eighteenth set's dev half: TensorRT plugin asserts, genai tokenizer classes and
removed APIs, provider_options lengths, missing model paths, `.ort` verification, duplicate kernel registration,
serving dtypes, arena sources. Texts are composed, not copied from any labelled set; the learned fallback is off so
that the rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

# ---------------------------------------------------------------- TensorRT plugin assertions


@pytest.mark.parametrize(
    "text",
    [
        "2023-04-01 10:00:00.1 [E:onnxruntime:Default, tensorrt_execution_provider.h:77 log] [2023-04-01 10:00:00 "
        "BUG] Assertion failed: inputs[0].nbDims == 3\ngroupNormalizationPlugin/groupNormPlugin.cpp:96\nAborting...",
        "[TRT] Assertion failed: mNbGroups > 0 (skipLayerNormPlugin.cu:212)\nSegmentation fault",
    ],
)
def test_a_tensorrt_plugin_assertion_is_fm74(text: str) -> None:
    assert top(text) == "FM-74"


def test_an_assertion_in_a_plugin_without_tensorrt_is_not_fm74() -> None:
    text = "Assertion failed: size > 0\nvideoDecoderPlugin/decoder.cpp:40\nAborted (core dumped)"
    assert "FM-74" not in rule_ids(text)


# ---------------------------------------------------------------- onnxruntime-genai: tokenizer class, removed API


def test_a_tokenizer_class_genai_does_not_know_is_fm109() -> None:
    text = (
        "import onnxruntime_genai as og\nmodel = og.Model('./qwen-int4')\ntok = og.Tokenizer(model)\n"
        "RuntimeError: Unsupported tokenizer class: Qwen2TokenizerFast"
    )
    assert top(text) == "FM-109"


def test_unsupported_tokenizer_class_outside_genai_is_not_fm109() -> None:
    text = "ValueError: Unsupported tokenizer class: MyTok (transformers AutoTokenizer)"
    assert "FM-109" not in rule_ids(text)


@pytest.mark.parametrize(
    "text",
    [
        "AttributeError: 'onnxruntime_genai.onnxruntime_genai.GeneratorParams' object has no attribute 'input_ids'",
        'Traceback (most recent call last):\n  File "chat.py", line 30\n    generator.compute_logits()\n'
        "AttributeError: "
        "'onnxruntime_genai.onnxruntime_genai.Generator' object has no attribute 'compute_logits'",
        "AttributeError: module 'onnxruntime_genai' has no attribute 'set_search_options'",
    ],
)
def test_code_calling_another_genai_api_is_fm167(text: str) -> None:
    assert top(text) == "FM-167"


def test_an_attribute_error_on_plain_onnxruntime_is_not_fm167() -> None:
    text = "AttributeError: 'onnxruntime.capi.onnxruntime_inference_collection.InferenceSession' has no attribute 'x'"
    assert "FM-167" not in rule_ids(text)


# ---------------------------------------------------------------- providers and provider_options of unequal length


def test_provider_options_of_another_length_is_fm81() -> None:
    text = (
        "ValueError: 'providers' and 'provider_options' should be the same length if both are given\n"
        "EP Error using ['TensorrtExecutionProvider', 'CUDAExecutionProvider']"
    )
    assert top(text) == "FM-81"


# ---------------------------------------------------------------- the model file is not where it is read


@pytest.mark.parametrize(
    "text",
    [
        "[FACE-ANALYSER] could not load: model_file D:\\apps\\swap\\models\\det_10g.onnx should exist",
        "ai.onnxruntime.OrtException: Error code - ORT_INVALID_ARGUMENT - message: Load model from "
        "/C:/work/app/build/resources/main/net.onnx failed:"
        "Load model /C:/work/app/build/resources/main/net.onnx failed",
    ],
)
def test_a_model_path_that_does_not_exist_is_ng09(text: str) -> None:
    assert top(text) == "NG-09"


def test_a_unix_model_path_load_failure_is_not_read_as_a_drive_path() -> None:
    text = "Load model from /opt/models/a.onnx failed: Protobuf parsing failed."
    assert top(text) != "FM-76"


# ---------------------------------------------------------------- .ort verification, duplicate kernels, serving dtype


def test_an_ort_format_model_that_fails_verification_is_fm159() -> None:
    text = (
        "OrtException: Error code - ORT_FAIL - message: inference_session.cc:1500 LoadOrtModelWithLoader ORT model "
        "verification failed.\n\tat ai.onnxruntime.OrtSession.createSession(Native Method)"
    )
    assert top(text) == "FM-159"


def test_a_kernel_registered_twice_is_fm168() -> None:
    text = (
        "terminate called: Failed to add kernel for Transpose: Conflict with existing kernel def hash. "
        "kernel_registry.cc:280 (sessions created from 4 worker threads)"
    )
    assert top(text) == "FM-168"


def test_a_serving_backend_refusing_a_dtype_is_fm169() -> None:
    text = "ERROR router: Could not start ORT backend: Could not start backend: DType bfloat16 is not supported"
    assert top(text) == "FM-169"


def test_a_dtype_mismatch_of_an_input_is_not_fm169() -> None:
    text = "INVALID_ARGUMENT : Unexpected input data type. Actual: (tensor(double)) , expected: (tensor(float)) backend"
    assert "FM-169" not in rule_ids(text)


# ---------------------------------------------------------------- the arena's own source, message cut off


def test_an_exception_from_the_arena_cut_after_its_function_names_fm46() -> None:
    text = (
        "[E:onnxruntime:, inference_session.cc:1600 operator()] Exception during initialization: "
        "/onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 void* onnxruntime::BFCArena::"
        "AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bo"
    )
    assert top(text) == "FM-46"
