"""The twelfth widening of explain: logs pasted without spaces, the provider bridge's shared library, a swap of one
onnxruntime distribution for another, crashes inside ORT's logging manager, a failed lookup of the GPU provider in
what the session got, data bound on a device the session does not use, GridSample's GPU-only rank limit, and the CUDA
provider on a GPU that is not NVIDIA's (FM-101). Texts are composed, not copied from any labelled set."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids, top_id

from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge.text import repair

# ---------------------------------------------------------------- 1. an ORT log pasted with its spaces stripped


def test_a_log_line_without_spaces_gets_its_phrases_and_punctuation_back() -> None:
    line = (
        "2024-02-1113:05:44.1234567[E:onnxruntime:Default,provider_bridge_ort.cc:1548onnxruntime::TryGetProviderInfo_"
        "CUDA]C:\\build\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1209onnxruntime::ProviderLibrary::Get"
        '[ONNXRuntimeError]:1:FAIL:LoadLibraryfailedwitherror126""whentryingtoload"C:\\app\\onnxruntime_providers_cuda.dll"'
    )
    fixed = repair(line)
    assert "2024-02-11 13:05:44.1234567 [E:onnxruntime:Default, provider_bridge_ort.cc:1548 onnxruntime::" in fixed
    assert "[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126" in fixed
    assert "when trying to load" in fixed


def test_a_stripped_provider_load_failure_is_diagnosed_like_the_spaced_one() -> None:
    text = (
        "gpu build of my tool fails, running from source is fine\n"
        "2024-02-1113:05:44.1234567[E:onnxruntime:Default,provider_bridge_ort.cc:1548onnxruntime::TryGetProviderInfo_"
        "CUDA]C:\\build\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1209onnxruntime::ProviderLibrary::Get"
        '[ONNXRuntimeError]:1:FAIL:LoadLibraryfailedwitherror126""whentryingtoload"C:\\app\\onnxruntime_providers_cuda.dll"'
    )
    spaced = (
        "gpu build of my tool fails, running from source is fine\n"
        "2024-02-11 13:05:44.1234567 [E:onnxruntime:Default, provider_bridge_ort.cc:1548 onnxruntime::TryGetProvider"
        "Info_CUDA] C:\\build\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1209 onnxruntime::"
        'ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load '
        '"C:\\app\\onnxruntime_providers_cuda.dll"'
    )
    assert top_id(text) == top_id(spaced) is not None


def test_ordinary_prose_and_short_lines_are_left_alone() -> None:
    text = "I use onnxruntime with CUDA and it is slow.\nonnxruntime==1.18.0"
    assert repair(text) == text


# ---------------------------------------------------------------- 2. the provider bridge's shared library


@pytest.mark.parametrize(
    "text",
    [
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1480 onnxruntime::TryGetProviderInfo_TensorRT] "
        "C:\\ws\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1102 onnxruntime::ProviderSharedLibrary::Ensure "
        "[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126",
        "onnxruntime::ProviderSharedLibrary::Ensure [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
        "libonnxruntime_providers_shared.so with error: cannot open",
    ],
)
def test_the_bridge_failing_to_load_its_shared_library_is_the_providers_shared_library(text: str) -> None:
    assert top_id(text) == "FM-31"


def test_the_init_provider_bridge_warning_alone_stays_benign() -> None:
    text = (
        "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:1671 "
        "onnxruntime::python::CreateInferencePybindStateModule] Init provider bridge failed."
    )
    assert explain(text).verdict is PasteKind.BENIGN


# ---------------------------------------------------------------- 3. one distribution swapped for another


@pytest.mark.parametrize(
    "prose",
    [
        "I switched from onnxruntime to onnxruntime-gpu to speed it up and now the import fails:",
        "After replacing onnxruntime-gpu with onnxruntime-directml:",
        "pip uninstall onnxruntime\npip install onnxruntime-gpu==1.17.1\nthen:",
    ],
)
def test_cannot_import_name_right_after_a_package_swap_is_the_half_replaced_package(prose: str) -> None:
    text = (
        f'{prose}\n  File "C:\\Users\\me\\venv\\lib\\site-packages\\onnxruntime\\__init__.py", line 24, in <module>\n'
        "    from onnxruntime.capi._pybind_state import ExecutionMode\n"
        "ImportError: cannot import name 'ExecutionMode' from 'onnxruntime.capi._pybind_state'"
    )
    assert top_id(text) == "FM-01"


def test_cannot_import_name_on_windows_without_a_swap_stays_the_native_module_load() -> None:
    text = (
        "pip install onnxruntime-gpu==1.17.1\n"
        '  File "C:\\Users\\me\\venv\\lib\\site-packages\\onnxruntime\\__init__.py", line 24, in <module>\n'
        "ImportError: cannot import name 'ExecutionMode' from 'onnxruntime.capi._pybind_state'"
    )
    assert top_id(text) == "FM-28"


# ---------------------------------------------------------------- 4. a crash inside ORT's logging manager


@pytest.mark.parametrize(
    "trace",
    [
        'Thread 1 "infer" received signal SIGSEGV, Segmentation fault.\n'
        "#0  0x00007ffff7a1b2c3 in onnxruntime::logging::LoggingManager::Log(std::string const&, "
        "onnxruntime::logging::Capture const&) const () from /opt/ort/lib/libonnxruntime.so.1.16.3\n"
        "#1  0x00007ffff7a1c000 in onnxruntime::logging::Capture::~Capture() ()",
        "0  onnxruntime::logging::Capture::~Capture()  0x7ffff0001234\n"
        "1  onnxruntime::InferenceSession::Run(...)  0x7ffff0005678",
    ],
)
def test_a_crash_in_the_logging_manager_is_an_environment_gone_or_missing(trace: str) -> None:
    assert top_id(trace) == "FM-97"


def test_the_logging_manager_deep_in_a_trace_without_a_crash_is_not_claimed() -> None:
    text = "#12 0x0000 in onnxruntime::logging::LoggingManager::Log(std::string const&) const ()\nall good otherwise"
    assert "FM-97" not in rule_ids(text)


# ---------------------------------------------------------------- 5. the GPU provider looked up and not there


@pytest.mark.parametrize(
    "error",
    [
        "KeyError: 'CUDAExecutionProvider'",
        "ValueError: 'TensorrtExecutionProvider' is not in list",
    ],
)
def test_a_failed_lookup_of_the_gpu_provider_in_the_session_is_a_cpu_fallback(error: str) -> None:
    text = (
        "sess = onnxruntime.InferenceSession(path, providers=['CUDAExecutionProvider'])\n"
        "opts = sess.get_provider_options()\nTraceback (most recent call last):\n"
        f'  File "bench.py", line 40, in <module>\n{error}'
    )
    assert top_id(text) == "FM-33"


def test_a_key_error_naming_something_else_is_not_a_fallback() -> None:
    text = "sess = onnxruntime.InferenceSession(path, providers=['CUDAExecutionProvider'])\nKeyError: 'input_ids'"
    assert "FM-33" not in rule_ids(text)


# ---------------------------------------------------------------- 6. data bound on a device the session does not use


@pytest.mark.parametrize(
    "binding",
    [
        "io.bind_input('x', device_type='cuda', device_id=0, element_type=np.float32, shape=x.shape, buffer_ptr=p)",
        "y = onnxruntime.OrtValue.ortvalue_from_numpy(arr, 'cuda', 0)\nio.bind_ortvalue_input('x', y)",
    ],
)
def test_cuda_data_in_a_cpu_only_session_is_an_option_the_session_does_not_use(binding: str) -> None:
    text = (
        "s = onnxruntime.InferenceSession('m.onnx', providers=['CPUExecutionProvider'])\nio = s.io_binding()\n"
        f"{binding}\ns.run_with_iobinding(io)\nFatal Python error: Segmentation fault"
    )
    assert top_id(text) == "FM-81"


def test_cuda_data_in_a_session_with_the_cuda_provider_is_not_claimed() -> None:
    text = (
        "s = onnxruntime.InferenceSession('m.onnx', providers=['CUDAExecutionProvider', 'CPUExecutionProvider'])\n"
        "io.bind_input('x', device_type='cuda', device_id=0, element_type=np.float32, shape=x.shape, buffer_ptr=p)\n"
        "Fatal Python error: Segmentation fault"
    )
    assert "FM-81" not in rule_ids(text)


# ---------------------------------------------------------------- 7. GridSample's rank limit is the GPU kernel's


def test_gridsample_only_4d_is_the_gpu_kernel_even_with_no_provider_named() -> None:
    text = (
        "InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Non-zero status code returned while running "
        "GridSample node. Name:'/motion/GridSample_1' Status Message: Only 4-D tensor is supported"
    )
    assert top_id(text) == "FM-54"


def test_the_cpu_kernels_own_rank_message_is_not_read_as_the_gpu() -> None:
    text = (
        "Non-zero status code returned while running GridSample node. Name:'/g' "
        "Status Message: Only 4-D or 5-D tensor is supported"
    )
    assert "FM-54" not in rule_ids(text)


# ---------------------------------------------------------------- 8. the CUDA provider on a GPU that is not NVIDIA's


@pytest.mark.parametrize(
    "text",
    [
        "python launch.py --use-zluda --api\n[E:onnxruntime:, inference_session.cc:2045 Initialize] Exception during "
        "initialization: cuda_call.cc:116 onnxruntime::CudaCall CUDNN failure 1: CUDNN_STATUS_NOT_INITIALIZED",
        "ZLUDA 3.8 on Windows, onnxruntime-gpu 1.18\nCUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED",
        "GPU: AMD Radeon RX 6700 XT\nFailed to create CUDAExecutionProvider. Please reference the requirements page.",
        "my card is an Intel Arc A770\nCUDAExecutionProvider fails: CUDA failure 100: no CUDA-capable device",
    ],
)
def test_the_cuda_provider_on_an_amd_or_intel_gpu_is_the_wrong_vendor(text: str) -> None:
    assert top_id(text) == "FM-101"


@pytest.mark.parametrize(
    "text",
    [
        "CPU: AMD Ryzen 9 7950X, GPU: GeForce RTX 4090\nCUDNN failure 4: CUDNN_STATUS_INTERNAL_ERROR",
        "Laptop: AMD Radeon 780M integrated + RTX 4060\nFailed to create CUDAExecutionProvider.",
        "AMD Radeon RX 7900 XTX with onnxruntime-directml\nDmlExecutionProvider: 887A0005 device removed",
    ],
)
def test_an_nvidia_gpu_named_or_no_cuda_provider_is_not_the_wrong_vendor(text: str) -> None:
    assert "FM-101" not in rule_ids(text)


# ---------------------------------------------------------------- 9. the session's own answer, asked in a REPL


@pytest.mark.parametrize(
    "text",
    [
        "In [3]: s = ort.InferenceSession(p, providers=['TensorrtExecutionProvider', 'CUDAExecutionProvider'])\n"
        "In [4]: s.get_providers()\nOut[4]: ['CPUExecutionProvider']",
        ">>> session = onnxruntime.InferenceSession('net.onnx', providers=['CUDAExecutionProvider'])\n"
        ">>> session.get_providers()\n['CPUExecutionProvider']",
        "    assert 'CUDAExecutionProvider' in session.get_providers()\nAssertionError",
    ],
)
def test_the_session_answering_without_the_gpu_provider_is_a_cpu_fallback(text: str) -> None:
    assert top_id(text) == "FM-33"


def test_the_session_answering_with_the_gpu_provider_is_not_a_fallback() -> None:
    text = (
        ">>> session = onnxruntime.InferenceSession('net.onnx', providers=['CUDAExecutionProvider'])\n"
        ">>> session.get_providers()\n['CUDAExecutionProvider', 'CPUExecutionProvider']"
    )
    assert "FM-33" not in rule_ids(text)


# ---------------------------------------------------------------- 10. Java: a native method the JNI library lacks


def test_a_native_method_of_the_java_classes_missing_is_the_bindings_native_library() -> None:
    text = (
        'Exception in thread "main" java.lang.UnsatisfiedLinkError: '
        "ai.onnxruntime.OrtSession$SessionOptions.addCUDA(JJI)V\n"
        "\tat ai.onnxruntime.OrtSession$SessionOptions.addCUDA(Native Method)"
    )
    assert top_id(text) == "FM-82"


def test_an_unsatisfied_link_of_another_library_is_not_claimed_as_onnxruntimes() -> None:
    text = "java.lang.UnsatisfiedLinkError: org.opencv.core.Mat.n_Mat()J\nonnxruntime 1.17 is on the classpath"
    assert "FM-82" not in rule_ids(text)


def test_a_stripped_linux_provider_load_failure_names_the_same_library_as_the_spaced_one() -> None:
    spaced = (
        "2024-05-01 10:00:00.123 [E:onnxruntime:Default, provider_bridge_ort.cc:1744 onnxruntime::TryGetProviderInfo_"
        "CUDA] /src/provider_bridge_ort.cc:1426 onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : "
        "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared "
        "object file: No such file or directory"
    )
    stripped = spaced.replace(" ", "")
    assert "with error:libcublasLt.so.12:cannot open shared object file:No such file" in repair(stripped)
    assert top_id(stripped) == top_id(spaced) is not None
