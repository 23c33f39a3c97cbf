"""explain by problem family (second widening): EP packages, bindings' native libraries, silent CPU fallback, the
missing-kernel direction, CUDA kernel bugs, option errors, fp16 without an EP named; status numbers from the headers.

Every paste here is composed (paraphrased wordings of each family), not taken from a measured set.
"""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_id

from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge.statuses import CUBLAS, CUDA_RUNTIME, CUDNN, cuda_name


def _first(text: str):
    result = explain(text)
    assert result.matches, text
    return result.matches[0]


# ---------------------------------------------------------------- 1. a build for another EP, the package per EP


@pytest.mark.parametrize(
    ("text", "package"),
    [
        (
            "UserWarning: Specified provider 'DmlExecutionProvider' is not in available provider names.Available "
            "providers: 'TensorrtExecutionProvider, CUDAExecutionProvider, CPUExecutionProvider'",
            "onnxruntime-directml",
        ),
        ("main.py: error: argument --provider: invalid choice: 'openvino' (choose from 'cuda', 'cpu')", None),
        ("swap.py: error: argument --ep: invalid choice: 'rocm' (choose from 'tensorrt', 'cuda', 'cpu')", "ROCm"),
        (
            "Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: "
            "'DmlExecutionProvider, CPUExecutionProvider'",
            "onnxruntime-gpu",
        ),
        (
            "Specified provider 'QNNExecutionProvider' is not in available provider names.Available providers: "
            "'AzureExecutionProvider, CPUExecutionProvider'",
            "onnxruntime-qnn",
        ),
    ],
)
def test_a_provider_missing_from_the_build_names_the_package_that_carries_it(text: str, package: str | None) -> None:
    match = _first(text)
    assert match.id == "FM-02"
    if package:
        assert package in (match.detail or ""), match.detail
    assert "onnxruntime-directml" in match.fix and "onnxruntime-openvino" in match.fix


def test_a_gpu_flavour_installed_but_only_the_cpu_listed_is_the_cpu_package_shadowing_it() -> None:
    text = (
        "pip install onnxruntime-directml\n\nimport onnxruntime\nprint(onnxruntime.get_available_providers())\n\n"
        "it only lists CPUExecutionProvider, nothing else"
    )
    match = _first(text)
    assert match.id in ("FM-02", "FM-01")
    assert "shadows" in (match.detail or "")


def test_both_nuget_native_packages_referenced_is_two_packages_installed_together() -> None:
    text = (
        '<PackageReference Include="Microsoft.ML.OnnxRuntime" Version="1.17.1" />\n'
        '<PackageReference Include="Microsoft.ML.OnnxRuntime.DirectML" Version="1.17.1" />'
    )
    assert top_id(text) == "FM-01"


def test_a_csharp_namespace_is_not_a_package_reference() -> None:
    text = (
        'using Microsoft.ML.OnnxRuntime;\n<PackageReference Include="Microsoft.ML.OnnxRuntime.Gpu" Version="1.18.0" />'
    )
    assert top_id(text) != "FM-01"


# ---------------------------------------------------------------- 2. bindings' native libraries


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        (
            "Unhandled exception. System.EntryPointNotFoundException: Unable to find an entry point named "
            "'OrtSessionOptionsAppendExecutionProvider_CUDA' in DLL 'onnxruntime'.",
            "FM-32",
        ),
        (
            "EntryPointNotFoundException: Unable to find an entry point named "
            "OrtSessionOptionsAppendExecutionProvider_DML",
            "FM-32",
        ),
        ("ai.onnxruntime.OrtException: This binary was not compiled with CUDA support.", "FM-32"),
        ("/usr/bin/ld: app.o: undefined reference to `OrtSessionOptionsAppendExecutionProvider_CUDA'", "FM-32"),
        ("GenAIException: 'CUDA and/or ROCM execution provider is either not enabled or not available.'", "FM-32"),
        ("ort error: ROCM execution provider is not enabled in this build.", "FM-32"),
        ("Error: no available backend found. ERR: [cuda] backend not found.", "FM-32"),
        ("The given version [21] is not supported, only version 1 to 11 is supported in this build.", "FM-82"),
        (
            "System.TypeInitializationException: The type initializer for 'Microsoft.ML.OnnxRuntime.NativeMethods' "
            "threw an exception.\n ---> System.DllNotFoundException: Unable to load DLL 'onnxruntime' or one of its "
            "dependencies",
            "FM-82",
        ),
        ('Exception in thread "main" java.lang.UnsatisfiedLinkError: no onnxruntime in java.library.path', "FM-82"),
        (
            "Process Monitor shows C:\\Windows\\System32\\onnxruntime.dll being loaded, not the one next to my exe",
            "FM-82",
        ),
    ],
)
def test_bindings_native_library_failures(text: str, entry: str) -> None:
    assert top_id(text) == entry


def test_the_provider_library_of_a_binding_is_not_the_onnxruntime_library_itself() -> None:
    text = (
        "System.DllNotFoundException: Unable to load DLL 'onnxruntime_providers_cuda.dll': "
        "The specified module could not be found."
    )
    assert top_id(text) != "FM-82"


# ---------------------------------------------------------------- 3. silent CPU fallback: name what to do next


@pytest.mark.parametrize(
    "text",
    [
        "available: ['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']\n"
        "session providers: ['CPUExecutionProvider']",
        "sess = ort.InferenceSession('m.onnx', providers=['CUDAExecutionProvider'])\n>>> sess.get_providers()\n"
        "sess.get_providers() returns ['CPUExecutionProvider']",
        "[WARN] could not start the onnxruntime session with CUDA, falling back to CPU",
        "onnxruntime-gpu 1.19: providers: ['CPUExecutionProvider'] even though I passed CUDAExecutionProvider",
    ],
)
def test_a_session_that_ended_on_the_cpu_points_to_doctor_and_the_verbose_log(text: str) -> None:
    match = _first(text)
    assert match.id == "FM-33"
    assert "ortgpu doctor" in match.fix and "log_severity_level = 0" in match.fix


def test_an_app_saying_cuda_is_not_available_stays_the_cpu_package() -> None:
    assert top_id("onnxruntime: CUDA is not available, falling back to CPU") == "FM-02"


# ---------------------------------------------------------------- 4. which EP lacks the kernel


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        (
            "fine with the CUDAExecutionProvider, while with the CPUExecutionProvider: NOT_IMPLEMENTED : Could not "
            "find an implementation for Resize(19) node with name '/up/Resize'",
            "NG-08",
        ),
        (
            "the half model loads on the CPUExecutionProvider but on the CUDAExecutionProvider: Could not find an "
            "implementation for GridSample(16) node with name 'gs'",
            "FM-54",
        ),
        ("Failed to find kernel for Trilu(14) (node:'tri' ep:'CUDAExecutionProvider'). Kernel not found", "FM-54"),
        (
            "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for Add(14) node with name ''",
            "NG-08",
        ),
    ],
)
def test_a_missing_kernel_is_decided_by_the_ep_it_concerns(text: str, entry: str) -> None:
    assert top_id(text) == entry


# ---------------------------------------------------------------- 5. a CUDA kernel failing inside one op


@pytest.mark.parametrize(
    "text",
    [
        "Non-zero status code returned while running Loop node. Name:'post/Loop_7' Status Message: Non-zero status "
        "code returned while running TopK node. Name:'post/TopK' Status Message: CUDA error "
        "cudaErrorInvalidConfiguration:invalid configuration argument",
        "CUDA failure 700: an illegal memory access was encountered ; GPU=0 ; expr=cudaMemcpyAsync(...)",
        "Status Message: CUDA failure 9: invalid configuration argument ; GPU=0",
        "Non-zero status code returned while running ScatterND node. Name:'sc' Status Message: CUDA error "
        "cudaErrorLaunchFailure:unspecified launch failure",
    ],
)
def test_a_kernel_failure_inside_an_op_is_a_kernel_bug_with_a_repro_path(text: str) -> None:
    match = _first(text)
    assert match.id == "FM-80"
    assert "ortgpu debug reduce" in match.fix and "Update onnxruntime" in match.fix


def test_the_failing_op_is_named_for_a_kernel_bug() -> None:
    text = (
        "Non-zero status code returned while running GatherND node. Name:'map/GatherNd_2' Status Message: CUDA error "
        "cudaErrorInvalidConfiguration:invalid configuration argument"
    )
    assert "GatherND" in (_first(text).detail or "")


def test_an_illegal_access_on_a_second_gpu_stays_the_device_id_entry() -> None:
    text = "CUDA failure 700: an illegal memory access was encountered ; GPU=1 ; expr=cudaMemcpyAsync"
    assert top_id(text) == "FM-39"


# ---------------------------------------------------------------- 6. options the session, run or provider refuse


@pytest.mark.parametrize(
    ("text", "option"),
    [
        (
            "InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Did not find an arena based allocator "
            "registered for device-id  combination in the memory arena shrink list: gpu:1",
            "gpu:1",
        ),
        ('[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Unknown provider option: "cuda_mem_limit".', "cuda_mem_limit"),
        ('Failed to parse provider option "gpu_mem_limit": "4GB"', "gpu_mem_limit"),
        ("trt_max_workspace_size: value -1 is not a valid size", "trt_max_workspace_size"),
    ],
)
def test_an_option_error_names_the_option(text: str, option: str) -> None:
    match = _first(text)
    assert match.id == "FM-81"
    assert option in (match.detail or ""), match.detail


# ---------------------------------------------------------------- 7. fp16 without an EP named


@pytest.mark.parametrize(
    "text",
    [
        "python export.py --fp16\npython run.py --model out-fp16\nRuntimeWarning: invalid value encountered in cast\n"
        "the picture comes out black",
        "after converting the VAE to float16 every output is NaN (fp32 is fine)",
        "half precision model: the decoded images are all black",
    ],
)
def test_fp16_symptoms_without_an_ep_are_fp16_overflow(text: str) -> None:
    assert top_id(text) == "FM-52"


def test_a_black_image_without_half_precision_is_not_fp16() -> None:
    # no rule claims fp16; the nearest-entry fallback may offer it only as a lead, not as a diagnosis
    result = explain("the output image is black, what is wrong with my onnx export?")
    assert result.verdict in (PasteKind.NOT_RECOGNISED, PasteKind.CLOSEST)
    assert all(m.matched_by == "closest" for m in result.matches)


# ---------------------------------------------------------------- status numbers, checked against the headers


def test_status_numbers_match_the_public_headers() -> None:
    """cublas_api.h cublasStatus_t; cudnn_graph.h (cuDNN 9) cudnnStatus_t, cudnn_ops_infer.h / cudnn.h (cuDNN 8);
    driver_types.h cudaError_t (CUDA >= 10.1)."""
    assert (CUBLAS[3], CUBLAS[13], CUBLAS[14], CUBLAS[15]) == (
        "ALLOC_FAILED",
        "EXECUTION_FAILED",
        "INTERNAL_ERROR",
        "NOT_SUPPORTED",
    )
    assert (CUDNN[4], CUDNN[8], CUDNN[13]) == ("INTERNAL_ERROR", "EXECUTION_FAILED", "RUNTIME_FP_OVERFLOW")
    # cuDNN 9: the initialisation/version category starts at 1001; there is no status 1000
    assert 1000 not in CUDNN
    assert (CUDNN[1001], CUDNN[1002], CUDNN[1008]) == (
        "NOT_INITIALIZED",
        "SUBLIBRARY_VERSION_MISMATCH",
        "SUBLIBRARY_LOADING_FAILED",
    )
    assert (CUDNN[2001], CUDNN[3007], CUDNN[5000]) == (
        "INVALID_VALUE",
        "NOT_SUPPORTED_ARCH_MISMATCH",
        "EXECUTION_FAILED",
    )
    assert (CUDA_RUNTIME[9], CUDA_RUNTIME[700], CUDA_RUNTIME[716], CUDA_RUNTIME[719], CUDA_RUNTIME[222]) == (
        "InvalidConfiguration",
        "IllegalAddress",
        "MisalignedAddress",
        "LaunchFailure",
        "UnsupportedPtxVersion",
    )
    assert cuda_name(None, "invalid configuration argument") == "InvalidConfiguration"
    assert cuda_name(None, "invalid argument") == "InvalidValue"


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("CUDNN failure 1008: ; GPU=0 ; expr=cudnnConvolutionForward", "FM-13"),
        ("CUDNN failure 1001 ; GPU=0 ; expr=cudnnCreate(&handle)", "FM-42"),
    ],
)
def test_cudnn9_numbers_reach_the_right_entry(text: str, entry: str) -> None:
    assert top_id(text) == entry


def test_model_errors_stay_not_gpu_next_to_the_new_families() -> None:
    text = (
        "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions for input: images for the following indices"
    )
    assert explain(text).verdict is PasteKind.NOT_GPU
