"""The third widening of explain: provider libraries, .NET HRESULTs, ROCm and DirectML, prose, installers, provider
names, host memory, and a model error after fallback warnings. Texts are composed, not copied from any labelled set."""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_id

from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge.prose_signals import closest_provider

# ---------------------------------------------------------------- 1. ORT's own provider library not found


@pytest.mark.parametrize(
    "text",
    [
        "OSError: /opt/app/lib/libonnxruntime_providers_tensorrt.so: cannot open shared object file: No such file "
        "or directory",
        "[E:onnxruntime:ort-java, provider_bridge_ort.cc:1600 TryGetProviderInfo_CUDA] Failed to load library "
        "libonnxruntime_providers_cuda.so with error: libonnxruntime_providers_cuda.so: cannot open shared object "
        "file: No such file or directory",
        "error while running ./demo: ../build/_deps/ort/lib/libonnxruntime_providers_cuda.so: cannot open shared "
        "object file: No such file or directory",
    ],
)
def test_the_provider_library_itself_missing_is_fm31_not_a_cuda_library(text: str) -> None:
    assert top_id(text) == "FM-31"


def test_the_provider_dll_itself_missing_on_windows_is_fm31() -> None:
    text = (
        'Error loading "D:\\svc\\onnxruntime_providers_tensorrt.dll" which is missing. (Error 126: "The specified '
        'module could not be found.")'
    )
    assert top_id(text) == "FM-31"


def test_a_cuda_library_missing_behind_the_provider_is_still_the_cuda_library() -> None:
    text = (
        "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared "
        "object file: No such file or directory"
    )
    assert top_id(text) == "FM-12"


# ---------------------------------------------------------------- 2. .NET DllNotFoundException and HRESULTs


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        (
            "System.DllNotFoundException: Unable to load DLL 'onnxruntime-genai' or one of its dependencies: The "
            "specified module could not be found. (0x8007007E)",
            "FM-21",
        ),
        (
            "System.DllNotFoundException: Unable to load DLL 'onnxruntime_providers_cuda' or one of its dependencies: "
            "The specified module could not be found. (0x8007007E)",
            "FM-21",
        ),
        (
            "using the Microsoft.ML.OnnxRuntime.Gpu package\nSystem.DllNotFoundException: Unable to load DLL "
            "'onnxruntime' or one of its dependencies: The specified module could not be found. (0x8007007E)",
            "FM-21",
        ),
        (
            "System.DllNotFoundException: Unable to load DLL 'onnxruntime' or one of its dependencies: The specified "
            "module could not be found. (0x8007007E)",
            "FM-82",
        ),
        (
            "Unable to load DLL 'onnxruntime' or one of its dependencies: %1 is not a valid Win32 application. "
            "(0x800700C1)",
            "FM-77",
        ),
        (
            "Unable to load DLL 'onnxruntime_providers_cuda.dll' or one of its dependencies: A dynamic link library "
            "(DLL) initialization routine failed. (0x8007045A)",
            "FM-78",
        ),
    ],
)
def test_dotnet_dll_not_found_by_hresult_and_context(text: str, entry: str) -> None:
    assert top_id(text) == entry


# ---------------------------------------------------------------- 3. ROCm and DirectML runtime failures


def test_hip_invalid_device_function_is_the_architecture_entry_and_says_rocm() -> None:
    result = explain(
        "Non-zero status code returned while running Conv node. Name:'conv1' Status Message: HIP error "
        "hipErrorInvalidDeviceFunction: invalid device function"
    )
    top = result.matches[0]
    assert top.id == "FM-41"
    assert "ROCm" in (top.detail or "") and "CMAKE_HIP_ARCHITECTURES" in top.fix


@pytest.mark.parametrize(
    ("text", "entry", "who"),
    [
        ("MIOpen Error: convolution.cpp:88: miopenStatusInternalError while running Conv", "FM-42", "MIOpen"),
        ("rocblas_status_memory_error returned by rocblas_create_handle", "FM-44", "rocBLAS"),
    ],
)
def test_rocm_library_statuses_map_to_their_cuda_twins(text: str, entry: str, who: str) -> None:
    top = explain(text).matches[0]
    assert top.id == entry and who in (top.detail or "")


def test_hip_out_of_memory_is_the_gpu_memory_entry() -> None:
    assert top_id("rocm_call.cc: HIP failure: hipErrorOutOfMemory while allocating the arena") == "FM-46"


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("onnxruntime\\core\\providers\\dml\\DmlExecutionProvider\\src\\Foo.cpp(10): Exception(1) 8007000E", "FM-46"),
        ("dml_provider_factory.cc(100)\\onnxruntime.dll: Exception(1) tid(10) 887A0004 garbled text", "FM-83"),
        ("DirectML device lost: DXGI_ERROR_DEVICE_REMOVED after a long run", "FM-83"),
        ("DmlExecutionProvider\\src\\DmlGraphFusionHelper.cpp(300): Exception(1) 80070057 bad parameter", "FM-84"),
    ],
)
def test_directml_hresults(text: str, entry: str) -> None:
    assert top_id(text) == entry


def test_an_hresult_without_directml_context_is_not_claimed_by_directml() -> None:
    assert top_id("Exception 887A0004 while opening the file") not in ("FM-83", "FM-84")


# ---------------------------------------------------------------- 4. prose: fp16 results and a slow GPU


def test_fp16_strange_outputs_in_prose() -> None:
    assert top_id("The float16 model I converted gives garbage outputs while the fp32 one is fine") == "FM-52"


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("With the CUDA provider each image takes 12 seconds, slower than on the CPU", "FM-48"),
        ("GPU utilization stays under 5% and it is slower than the CPU; one session.run per face", "FM-51"),
        ("options: {'cudnn_conv_algo_search': 'EXHAUSTIVE'} and the GPU is slow, 20 s per image", "FM-48"),
        ("only the first inference is slow on the GPU, 9 seconds; the next ones take 15 ms", "FM-50"),
        ("开启GPU以后推理更慢了，每张图要十几秒", "FM-48"),
        ("CUDAで実行すると CPU より遅いです", "FM-48"),
    ],
)
def test_a_slow_gpu_in_prose_points_at_the_evidenced_cause(text: str, entry: str) -> None:
    assert top_id(text) == entry


@pytest.mark.parametrize(
    "text",
    [
        "inference is slow, onnxruntime is using the CPU instead of the GPU",
        "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] Failed to create "
        "CUDAExecutionProvider.\nand now each image takes 3 seconds on my GPU machine",
    ],
)
def test_slowness_of_a_session_that_runs_on_the_cpu_is_not_a_gpu_performance_problem(text: str) -> None:
    assert top_id(text) not in ("FM-48", "FM-50", "FM-51")


def test_faster_on_the_cpu_than_on_the_gpu_is_still_a_slow_gpu() -> None:
    assert top_id("it is faster running on the CPU than with CUDA, the GPU run is slow") == "FM-48"


def test_fp16_wrong_results_in_chinese_prose() -> None:
    assert top_id("模型转成fp16以后推理结果不对，fp32是正常的") == "FM-52"


def test_slowness_words_without_a_gpu_are_not_a_gpu_problem() -> None:
    assert top_id("the web page loads slowly and takes 12 seconds") is None


# ---------------------------------------------------------------- 5. installers


def test_pip_verbose_skipping_every_wheel_is_no_wheel_for_this_python() -> None:
    text = (
        "Skipping link https://files.pythonhosted.org/packages/x/onnxruntime_gpu-1.15.0-cp311-cp311-win_amd64.whl "
        "(from https://pypi.org/simple/onnxruntime-gpu/); none of the wheel's tags match: cp311-cp311-win_amd64"
    )
    assert top_id(text) == "FM-04"


def test_a_wheel_that_is_not_supported_on_this_platform_is_fm04() -> None:
    assert top_id(
        "ERROR: onnxruntime_gpu-1.20.1-cp313-cp313-linux_aarch64.whl is not a supported wheel on this platform."
    ) == ("FM-04")


def test_an_index_url_that_replaces_pypi_is_its_own_cause() -> None:
    text = (
        "Looking in indexes: https://example.invalid/simple\n"
        "ERROR: Could not find a version that satisfies the requirement onnxruntime-gpu (from versions: none)\n"
        "ERROR: No matching distribution found for onnxruntime-gpu"
    )
    result = explain(text)
    assert result.matches[0].id == "FM-85" and "--extra-index-url" in result.matches[0].fix


def test_a_pypi_mirror_is_not_an_index_that_replaces_pypi() -> None:
    text = (
        "Looking in indexes: https://mirrors.example.invalid/pypi/simple\n"
        "ERROR: No matching distribution found for onnxruntime-gpu==1.20.0"
    )
    assert top_id(text) == "FM-04"


# ---------------------------------------------------------------- 6. the final error beats earlier warnings


def test_an_input_name_error_after_tensorrt_and_cuda_warnings_is_the_failure() -> None:
    text = (
        "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:500 CreateExecutionProviderInstance] Failed to create "
        "TensorrtExecutionProvider. Please reference the requirements.\n"
        "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:520 CreateExecutionProviderInstance] Failed to create "
        "CUDAExecutionProvider. Please reference the requirements.\n"
        "onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "
        "Invalid Feed Input Name:pixels"
    )
    result = explain(text)
    assert result.verdict is PasteKind.NOT_GPU
    assert result.matches[0].id == "NG-05" and "FM-60" in [m.id for m in result.matches]


def test_invalid_input_name_with_a_garbage_name_from_cpp() -> None:
    assert top_id("loaded the model\nInvalid input name: \ufffd\ufffdx") == "NG-05"


def test_java_not_implemented_with_a_node_name_prefix() -> None:
    text = (
        "OrtException: Error code - ORT_NOT_IMPLEMENTED - message: Could not find an implementation for the node "
        "n7:Mul(1)"
    )
    result = explain(text)
    assert result.matches[0].id == "NG-08" and result.matches[0].specifics.get("op") == "Mul"


# ---------------------------------------------------------------- 7. provider names


@pytest.mark.parametrize(
    ("text", "correct"),
    [
        (
            "['CUDAExecutionprovider'] does not contain a subset of available providers ['CUDAExecutionProvider', "
            "'CPUExecutionProvider']",
            "CUDAExecutionProvider",
        ),
        (
            "UserWarning: Specified provider 'TensorRTExecutionProviders' is not in available provider names."
            "Available providers: 'TensorrtExecutionProvider, CPUExecutionProvider'",
            "TensorrtExecutionProvider",
        ),
        ("UserWarning: Specified provider 'cuda' is not in available provider names.", "CUDAExecutionProvider"),
        (
            "ValueError: CUDAExecutionProvider does not contain a subset of available providers "
            "['CUDAExecutionProvider', 'CPUExecutionProvider']",
            "['CUDAExecutionProvider']",
        ),
    ],
)
def test_a_provider_name_that_is_no_provider_names_the_right_spelling(text: str, correct: str) -> None:
    result = explain(text)
    top = result.matches[0]
    assert top.id == "FM-86"
    assert correct in (top.detail or "")


def test_a_real_provider_missing_from_the_build_is_not_a_typo() -> None:
    text = (
        "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names."
        "Available providers: 'CPUExecutionProvider'"
    )
    assert top_id(text) != "FM-86"


def test_closest_provider() -> None:
    assert closest_provider("OpenVINOExecutionProviders") == "OpenVINOExecutionProvider"
    assert closest_provider("dml") == "DmlExecutionProvider"
    assert closest_provider("CUDAExecutionProvider") is None
    assert closest_provider("FrobnicatorThing") is None


# ---------------------------------------------------------------- 8. host memory


@pytest.mark.parametrize(
    "text",
    [
        "[ONNXRuntimeError] : 1 : FAIL : Load model from /data/big.onnx failed:bad allocation",
        "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc",
        "MemoryError while reading model.onnx with onnx.load",
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.20 GiB for an array with shape (1, 3, 8192)",
    ],
)
def test_host_memory_exhausted_is_not_gpu_memory(text: str) -> None:
    assert top_id(text) == "FM-87"
