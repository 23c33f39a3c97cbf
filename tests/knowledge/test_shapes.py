"""Problem shapes over wordings: a missing library, a CUDA-library status, an EP's missing kernel, an installer with no
wheel, an app's own "no GPU provider" line, a TensorRT logger error, each in wordings no entry pattern was written for;
and the guards that keep ordinary lines from becoming GPU problems."""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_with_library

from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge.paste import prepare
from ortgpu.knowledge.signals import SignalKind, extract_signals

# ---------------------------------------------------------------- 1. a missing library, any wording


@pytest.mark.parametrize(
    ("text", "entry", "lib"),
    [
        # an app's short form of the Windows loader message: the provider DLL first, the culprit after it
        ("Failed loading onnxruntime_providers_cuda.dll: cudnn64_9.dll is missing", "FM-22", "cudnn64_9.dll"),
        ("error: onnxruntime_providers_cuda.dll -> cufft64_11.dll not found", "FM-22", "cufft64_11.dll"),
        # a loader that lists every name it tried, most specific first
        (
            "Could not load any of [libcudnn_cnn.so.9.2.1, libcudnn_cnn.so.9, libcudnn_cnn.so]",
            "FM-13",
            "libcudnn_cnn.so.9.2.1",
        ),
        ("Unable to find one of {libcudnn.so.8.9.7, libcudnn.so.8, libcudnn.so}", "FM-11", "libcudnn.so.8.9.7"),
        (
            "./server: error while loading shared libraries: libcurand.so.10: wrong ELF class",
            "FM-15",
            "libcurand.so.10",
        ),
        ("we could not find libnvrtc.so.12 on this box", "FM-17", "libnvrtc.so.12"),
        ("[loader] failed to load /opt/cuda/lib64/libcudart.so.13", "FM-67", "libcudart.so.13"),
        ("Warning: cublas64_12.dll could not be loaded, GPU disabled", "FM-22", "cublas64_12.dll"),
        ("dlopen(libnvinfer.so.10) returned NULL", "FM-58", "libnvinfer.so.10"),
    ],
)
def test_a_missing_library_in_any_wording_is_mapped_by_its_name(text: str, entry: str, lib: str) -> None:
    assert top_with_library(text) == (entry, lib)


@pytest.mark.parametrize(
    "text",
    [
        "Loaded libstdc++.so.6 fine, but the model file was not found",  # an unknown library, failure elsewhere
        "works without libgomp.so.1 too",
        "Successfully opened dynamic library libcudart.so.12",  # a library named with no failure
        "Found libcublasLt.so.12 in /usr/local/cuda/lib64",
        "garbled: depN0Rc)Lt64_12.dll",  # a fragment of a name inside garbled text is not a name
    ],
)
def test_a_library_name_without_a_loader_failure_is_not_a_missing_library(text: str) -> None:
    kinds = {s.kind for s in extract_signals(prepare(text))}
    assert SignalKind.MISSING_LIBRARY not in kinds
    assert explain(text).verdict is not PasteKind.GPU_PROBLEM


# ---------------------------------------------------------------- 2. CUDA-library statuses, by name or number


@pytest.mark.parametrize(
    ("text", "entry", "status"),
    [
        # cuBLAS: a number only, a name only, only the failing call, prose
        ("Status Message: CUBLAS failure 14 ; GPU=0 ; expr=cublasGemmEx(...)", "FM-45", "CUBLAS_STATUS_INTERNAL_ERROR"),
        ("CUBLAS failure 3 ; GPU=0 ; expr=cublasCreate(&handle)", "FM-44", "CUBLAS_STATUS_ALLOC_FAILED"),
        ("CUBLAS error executing cublasLtMatmul( handle, desc, ...)", "FM-45", None),
        ("after a while I get a CUBLAS fault 13 in the Gemm node", "FM-45", "CUBLAS_STATUS_EXECUTION_FAILED"),
        ("cublas returned CUBLAS_STATUS_NOT_SUPPORTED for this GEMM", "FM-45", "CUBLAS_STATUS_NOT_SUPPORTED"),
        ("CUBLAS failure 8 ; expr=cublasGemmStridedBatchedEx", "FM-199", "CUBLAS_STATUS_ARCH_MISMATCH"),
        # cuDNN 8 and 9 numbers without the name, the frontend, a named call
        ("CUDNN failure 4 ; GPU=0 ; expr=cudnnCreate(&handle)", "FM-42", "CUDNN_STATUS_INTERNAL_ERROR"),
        ("CUDNN failure 4000 ; expr=cudnnBackendFinalize", "FM-42", "CUDNN_STATUS_INTERNAL_ERROR"),
        ("CUDNN failure 3007 in the conv", "FM-41", "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"),
        ("CUDNN failure 2000 ; expr=cudnnSetTensorNdDescriptor", "FM-43", "CUDNN_STATUS_BAD_PARAM"),
        ("Status Message: Failed to initialize CUDNN Frontend (conv node)", "FM-43", None),
        ("cudnnFindConvolutionForwardAlgorithmEx failed for this shape", "FM-43", None),
        # the CUDA runtime: number, name, message text
        ("CUDA failure 35 ; GPU=0 ; expr=cudaSetDevice(0)", "FM-34", "cudaErrorInsufficientDriver"),
        ("cudaErrorSystemDriverMismatch while creating the session", "FM-34", "cudaErrorSystemDriverMismatch"),
        ("RuntimeError: CUDA error: no CUDA-capable device is detected", "FM-37", "cudaErrorNoDevice"),
        ("CUDA failure 101 ; GPU=3 ; expr=cudaSetDevice(info_.device_id)", "FM-38", "cudaErrorInvalidDevice"),
        (
            "CUDA error cudaErrorInvalidDeviceFunction: invalid device function",
            "FM-41",
            "cudaErrorInvalidDeviceFunction",
        ),
        ("CUDA failure 218: a PTX JIT compilation failed", "FM-41", "cudaErrorInvalidPtx"),
        ("CUDA error 2 while allocating the arena", "FM-46", "cudaErrorMemoryAllocation"),
        ("CUDA failure 3: initialization error ; GPU=0", "FM-40", "cudaErrorInitializationError"),
    ],
)
def test_a_library_status_is_named_and_mapped(text: str, entry: str, status: str | None) -> None:
    top = explain(text).matches[0]
    assert top.id == entry
    if status is not None:
        assert status in (top.detail or "")


def test_invalid_device_function_is_not_an_invalid_device_ordinal() -> None:
    """Claims accept a status by prefix; the closest claim wins ("InvalidDeviceFunction" is not "InvalidDevice")."""
    assert top_with_library("cudaErrorInvalidDeviceFunction")[0] == "FM-41"
    assert top_with_library("cudaErrorInvalidDevice")[0] == "FM-38"


@pytest.mark.parametrize(
    "text",
    [
        "TensorRT was linked against cuBLAS/cuBLAS LT 11.6.3 but loaded cuBLAS/cuBLAS LT 11.5.1",  # a benign note
        "we use cuDNN 9 and CUDA 12 on this box",
        "CUDA failure 1: invalid argument ; GPU=0",  # a status no entry claims stays unclaimed
    ],
)
def test_library_names_without_a_status_are_not_status_failures(text: str) -> None:
    ids = [m.id for m in explain(text).matches]
    assert not {"FM-41", "FM-42", "FM-43", "FM-44", "FM-45", "FM-46"} & set(ids)


# ---------------------------------------------------------------- 8. TensorRT's own errors, logged through ORT


@pytest.mark.parametrize(
    "text",
    [
        # a CUDA error inside tactic selection, through ORT's TensorRT logger (old and new logger prefixes)
        "2021-01-02 03:04:05.000 [W:onnxruntime:Default, tensorrt_execution_provider.h:53 log] [2021-01-02 03:04:05 "
        "  ERROR] ../builder/tacticOptimizer.cpp (120) - Cuda Error in findFastestTactic: 700 (an illegal memory "
        "access was encountered)",
        "[E:onnxruntime:sess, tensorrt_execution_provider.h:88 log] [2025-03-01 10:00:00   ERROR] 10: "
        "[optimizer.cpp::computeCosts::4100] Error Code 10: Internal Error (Could not find any implementation for node "
        "{ForeignNode[/blocks.0/Add...]})",
        "[TensorRT EP] Failed to build the engine for subgraph 3, falling back",
        "TensorRT EP error: the builder returned a null engine for the fused node",
        "[TRT] [E] 2: [myelinBuilderUtils.cpp::getMyelinSupportType::1270] Error Code 2: Internal Error (ForeignNode "
        "does not support)",
    ],
)
def test_tensorrt_builder_errors_are_engine_build_failures(text: str) -> None:
    assert top_with_library(text)[0] == "FM-75"


def test_a_cuda_error_inside_tensorrt_output_is_not_a_cuda_runtime_problem() -> None:
    text = (
        "[W:onnxruntime:x, tensorrt_execution_provider.h:84 log] [2024-01-01 00:00:00 WARNING] Skipping tactic 0x0 due "
        "to exception: CUDA error 2 allocating 12345678-byte buffer: out of memory\n"
        "[E:onnxruntime:x, tensorrt_execution_provider.h:82 log] [2024-01-01 00:00:00   ERROR] 2: "
        "[builder.cpp::buildSerializedNetwork::751] Error Code 2: Internal Error (Assertion engine != nullptr failed.)"
    )
    kinds = {s.kind for s in extract_signals(prepare(text))}
    assert SignalKind.CUDA_ERROR not in kinds and SignalKind.TRT_BUILD_ERROR in kinds
    assert top_with_library(text)[0] == "FM-75"


def test_tensorrt_warnings_and_info_lines_are_not_build_errors() -> None:
    text = (
        "[W:onnxruntime:Default, tensorrt_execution_provider.h:60 log] [2024-01-01 00:00:00 WARNING] onnx2trt_utils: "
        "Your ONNX model has been generated with INT64 weights, attempting to cast down to INT32.\n"
        "[I:onnxruntime:Default, tensorrt_execution_provider.h:60 log] [2024-01-01 00:00:00 INFO] Detected 1 inputs"
    )
    assert SignalKind.TRT_BUILD_ERROR not in {s.kind for s in extract_signals(prepare(text))}


# ---------------------------------------------------------------- 4. a missing kernel: which EP lacks it


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        # the CUDA EP named: a CUDA kernel is missing
        ("Failed to find kernel for LayerNormalization(17) (node:'/ln/LayerNorm' ep:'CUDAExecutionProvider')", "FM-54"),
        ("Could not find an implementation for Col2Im(18) node with name 'c2i' for CUDAExecutionProvider", "FM-54"),
        # the CPU EP named, or no EP named: not a CUDA problem
        (
            "Failed to find kernel for GroupNorm(1) (node:'/gn' ep:'CPUExecutionProvider'). Kernel not found",
            "NG-08",
        ),
        ("Error: Failed to find kernel for NhwcConv(1) (node conv_17). Kernel not found", "NG-08"),
        ("NOT_IMPLEMENTED : Could not find an implementation for the node Upsample(9)", "NG-08"),
        ("[ErrorCode:NotImplemented] Could not find an implementation for FusedMatMul(1) node with name 'fm'", "NG-08"),
    ],
)
def test_a_missing_kernel_is_a_cuda_problem_only_when_the_cuda_ep_lacks_it(text: str, entry: str) -> None:
    assert top_with_library(text)[0] == entry


def test_a_cuda_only_contrib_op_on_the_cpu_says_so() -> None:
    top = explain("Failed to find kernel for BiasSplitGelu(1) (node mid/bsg). Kernel not found").matches[0]
    assert top.id == "NG-08"
    assert "only the CUDA EP implements" in (top.detail or "")
    assert explain("Failed to find kernel for BiasSplitGelu(1) (node mid/bsg)").verdict is PasteKind.NOT_GPU


# ---------------------------------------------------------------- 5. installers other than pip: no build to install


@pytest.mark.parametrize(
    ("text", "installer"),
    [
        (
            "$ uv add onnxruntime-gpu\nerror: Distribution `onnxruntime-gpu==1.20.1 @ registry+https://pypi.org/simple`"
            " "
            "can't be installed because it doesn't have a source distribution or wheel for the current platform\n"
            "hint: You're on Linux (`manylinux_2_35_armv7l`)",
            "uv",
        ),
        (
            "$ poetry add onnxruntime-gpu\nInstalling onnxruntime-gpu (1.19.2): Failed\n"
            "RuntimeError\nUnable to find installation candidates for onnxruntime-gpu (1.19.2)",
            "poetry",
        ),
        (
            "pipenv install onnxruntime\nCRITICAL: Could not find a version that matches onnxruntime==1.8.0 "
            "(from -r requirements.txt (line 3)) on Python 3.13",
            "pipenv",
        ),
        (
            "$ conda install onnxruntime-gpu\nPackagesNotFoundError: The following packages are not available from "
            "current channels:\n\n  - onnxruntime-gpu\n\nCurrent channels:\n  - https://repo.anaconda.com/pkgs/main/win-32",
            "conda",
        ),
        ("error: onnxruntime (v1.21.0) has no wheels with a matching Python ABI tag (e.g., `cp314`)", None),
    ],
)
def test_an_installer_with_nothing_to_install_is_no_wheel(text: str, installer: str | None) -> None:
    top = explain(text).matches[0]
    assert top.id == "FM-04"
    if installer:
        assert f"installer: {installer}" in (top.detail or "")


def test_the_no_wheel_detail_names_python_and_platform_when_given() -> None:
    text = (
        "Using CPython 3.13.1\nerror: Distribution `onnxruntime-gpu==1.22.0` can't be installed because it doesn't "
        "have a source distribution or wheel for the current platform\nhint: You're on Linux (`manylinux_2_39_aarch64`)"
    )
    detail = explain(text).matches[0].detail or ""
    assert "Python 3.13" in detail and "aarch64" in detail


def test_another_packages_missing_wheel_is_not_an_onnxruntime_problem() -> None:
    text = "ERROR: No matching distribution found for tensorflow-gpu==1.15\n(then onnxruntime installed fine)"
    assert all(m.id != "FM-04" for m in explain(text).matches)


# ---------------------------------------------------------------- 6. an application's own "no GPU provider" line


@pytest.mark.parametrize(
    "text",
    [
        "UserWarning: onnxruntime is missing or does not come with GPU providers, using OpenCV on the CPU (slow)",
        "[facefusion] CUDA execution provider is not available, falling back to CPU",
        "ort: GPU provider not available -- running on CPU",
        "onnx backend: CUDA not available, fall back to CPU (onnxruntime 1.18.0)",
        "WARNING: no GPU execution providers available in onnxruntime; inference will be slow",
    ],
)
def test_an_apps_own_no_gpu_provider_line_is_the_cpu_package(text: str) -> None:
    assert top_with_library(text)[0] == "FM-02"


@pytest.mark.parametrize(
    "text",
    [
        # the GPU provider was there and failed: "not available" is the consequence, not a CPU build
        "Failed to create CUDAExecutionProvider. ... \nCUDA execution provider is not available, falling back to CPU",
        "torch: CUDA not available, falling back to CPU",  # not about onnxruntime at all
    ],
)
def test_not_available_after_a_failure_or_outside_onnxruntime_is_not_the_cpu_package(text: str) -> None:
    assert all(m.id != "FM-02" for m in explain(text).matches)


# ---------------------------------------------------------------- 7. tool output outweighs the user's prose


def test_the_printed_warning_outranks_a_complaint_in_prose() -> None:
    text = (
        "2025-02-01 09:00:00.1 [W:onnxruntime:, session_state.cc:1280 VerifyEachNodeIsAssignedToAnEp] Some nodes were "
        "not assigned to the preferred execution providers which may or may not have an negative impact on "
        "performance.\n"
        "We see that the first inference for each new image shape is really slow with our GPU build."
    )
    ids = [m.id for m in explain(text).matches]
    assert ids[0] == "FM-65" and "FM-48" in ids  # the complaint is still listed, below the log evidence


def test_prose_alone_is_still_diagnosed() -> None:
    text = "I see that the first inference for every new input shape is really slow on the GPU"
    assert top_with_library(text)[0] == "FM-48"


def test_a_bare_error_line_is_not_demoted_below_a_logged_warning() -> None:
    """An error line without log marks is not prose: it keeps its rank above a benign logged warning."""
    text = (
        "[W:onnxruntime:, session_state.cc:1280 VerifyEachNodeIsAssignedToAnEp] Some nodes were not assigned to the "
        "preferred execution providers\nCUDA failure 35: CUDA driver version is insufficient for CUDA runtime version"
    )
    assert top_with_library(text)[0] == "FM-34"


def test_a_one_line_lookahead_does_not_match_across_glued_lines() -> None:
    """Lines are glued to repair mid-word wrapping; a test of one line ("slow" and "shape" on it) must not span two."""
    text = "It prints a warning about shape related ops on the CPU.\nOverall inference remains very slow for us."
    assert "FM-48" not in [m.id for m in explain(text).matches]


def test_a_path_with_a_pronoun_in_it_is_not_prose() -> None:
    text = (
        '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load '
        '"C:\\Users\\me\\our\\onnxruntime_providers_cuda.dll"\nFailed to create CUDAExecutionProvider.'
    )
    assert top_with_library(text)[0] == "FM-21"
