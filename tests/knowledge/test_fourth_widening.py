"""The fourth widening of explain: two distributions at once, garbled options, async CUDA failures, web backends,
provider order and IO binding. Texts are composed (paraphrased), not copied from any labelled set."""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_id

# ---------------------------------------------------------------- 1. two distributions: FM-01 over FM-02


@pytest.mark.parametrize(
    "text",
    [
        # only the CPU in the list, but pip show finds both distributions
        "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available "
        "providers: 'CPUExecutionProvider'\n$ pip show onnxruntime\nName: onnxruntime\nVersion: 1.19.2\n"
        "$ pip show onnxruntime-gpu\nName: onnxruntime-gpu\nVersion: 1.19.2",
        "Requirement already satisfied: onnxruntime-gpu in /usr/lib/python3/site-packages (1.20.1)\n"
        "Requirement already satisfied: onnxruntime>=1.14 in /usr/lib/python3/site-packages (from rembg) (1.20.1)\n"
        "ort.get_available_providers() -> ['CPUExecutionProvider']",
        "Successfully installed onnxruntime-1.18.1 onnxruntime-gpu-1.18.1 numpy-1.26.4",
        "uv resolves our package to both onnxruntime and onnxruntime-gpu, so only CPUExecutionProvider is available",
        "It looks like a conflicting install between onnxruntime and onnxruntime-directml: DML is missing",
    ],
)
def test_evidence_of_two_distributions_is_fm01_even_with_a_cpu_only_list(text: str) -> None:
    assert top_id(text) == "FM-01"


def test_one_cpu_distribution_alone_stays_fm02() -> None:
    text = (
        "ort.get_available_providers() returns ['CPUExecutionProvider']\n$ pip show onnxruntime\nName: onnxruntime\n"
        "Version: 1.19.2"
    )
    assert top_id(text) == "FM-02"


# ---------------------------------------------------------------- 2. an option value that is no value: FM-81


@pytest.mark.parametrize(
    "text",
    [
        "Code [1]: provider_options_utils.h:41 onnxruntime::EnumToName [ONNXRuntimeError] : 1 : FAIL : "
        "Failed to map enum value to name: 98211",
        "terminate called after throwing an instance of 'Ort::Exception'\n  what():  tensorrt_execution_provider.cc:"
        "600 TensorrtExecutionProvider [ONNXRuntimeError] : 11 : EP_FAIL : TensorRT EP could not open shared "
        "library from \ufffd\ufffdX",
    ],
)
def test_garbled_provider_option_values_are_the_options_fault_not_a_trt_build(text: str) -> None:
    assert top_id(text) == "FM-81"


def test_a_real_trt_build_failure_stays_fm75() -> None:
    text = "[E:onnxruntime:Default, tensorrt_execution_provider.h:88 log] [2024 ERROR] 4: [network.cpp::validate] "
    text += "Error Code 4: Internal Error (Network has dynamic or shape inputs)\nTensorRT EP failed to create engine"
    assert top_id(text) != "FM-81"


# ---------------------------------------------------------------- 3. CUDA kernel failures surfacing at the copy


def test_a_failure_at_the_device_to_host_copy_is_an_earlier_kernel_failure() -> None:
    text = "RuntimeException: [ONNXRuntimeError] : 1 : FAIL : CUDA error executing cudaMemcpyAsync(dst, src, n, "
    text += "cudaMemcpyDeviceToHost, stream)"
    assert top_id(text) == "FM-80"


# ---------------------------------------------------------------- 4. fallback, web backends, provider order


def test_rust_ort_registering_nothing_falls_back_to_cpu() -> None:
    text = "WARN ort::execution_providers: No execution providers registered successfully. Falling back to CPU."
    assert top_id(text) == "FM-33"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Error: no available backend found. ERR: [wasm] Aborted(CompileError: WebAssembly.instantiate())", "FM-88"),
        ("no available backend found. ERR: [webgpu] Error: WebGPU is not supported in current environment", "FM-88"),
        ("onnxruntime-node: executionProviders ['cuda'] gives Error: no available backend found.", "FM-32"),
    ],
)
def test_onnxruntime_web_and_node_backends(text: str, expected: str) -> None:
    assert top_id(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "so.AppendExecutionProvider_CPU(0);\nif (useGpu)\n    so.AppendExecutionProvider_CUDA(0);\nalways CPU, why?",
        "session = ort.InferenceSession(path, providers=['CPUExecutionProvider', 'CUDAExecutionProvider'])",
        "OrtSessionOptionsAppendExecutionProvider_CPU(opts, 1);\n"
        "OrtSessionOptionsAppendExecutionProvider_CUDA(opts, 0);",
    ],
)
def test_the_cpu_registered_before_a_gpu_provider_is_fm89(text: str) -> None:
    assert top_id(text) == "FM-89"


@pytest.mark.parametrize(
    "text",
    [
        "session = ort.InferenceSession(path, providers=['CUDAExecutionProvider', 'CPUExecutionProvider'])",
        "Available providers: ['CPUExecutionProvider']  (I passed providers=['CUDAExecutionProvider'])",
    ],
)
def test_the_gpu_first_is_not_a_provider_order_mistake(text: str) -> None:
    assert top_id(text) != "FM-89"


def test_io_binding_on_a_model_class_without_it_is_fm90() -> None:
    text = "NotImplementedError: IO Binding for ORTModelForSpeechSeq2Seq is currently not supported."
    assert top_id(text) == "FM-90"


@pytest.mark.parametrize(
    "text",
    [
        "System.DllNotFoundException: Unable to load shared library 'onnxruntime.dll' or one of its dependencies.\n"
        "  dlopen(onnxruntime.dll.dylib, 0x0001): tried: 'onnxruntime.dll.dylib' (no such file)",
        "Unhandled exception: Unable to load shared library 'libonnxruntime.so' or one of its dependencies",
    ],
)
def test_the_binding_not_loading_ort_itself_is_fm82_not_a_provider_dependency(text: str) -> None:
    assert top_id(text) == "FM-82"
