"""The seventh widening of explain (GPU/setup side): a serving stack without ORT's backend, Windows older than the
build, no GPU visible in a container, and the family of provider options the installed release rejects.
Texts are composed, not copied from any labelled set."""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_id

from ortgpu.explain import PasteKind, explain

# ---------------------------------------------------------------- 1. the server has no onnxruntime backend


@pytest.mark.parametrize(
    "text",
    [
        "I0301 model_lifecycle.cc:700] failed to load 'ranker' version 3: Invalid argument: unable to find backend "
        "library for backend 'onnxruntime', try specifying runtime on the model configuration.",
        "failed to load 'tok' version 1: Invalid argument: unable to find 'libtriton_onnxruntime.so' for model 'tok', "
        "searched: /srv/repo/tok/1, /srv/repo/tok, /opt/tritonserver/backends/onnxruntime",
        "E0912 backend_manager.cc:40] /opt/tritonserver/backends/onnxruntime/libtriton_onnxruntime.so: cannot open "
        "shared object file: No such file or directory",
        "Internal: unexpected platform type 'onnxruntime_onnx' for classifier",
    ],
)
def test_a_server_without_the_onnxruntime_backend_is_fm92(text: str) -> None:
    assert top_id(text) == "FM-92"


def test_the_backend_entry_tells_which_image_has_it() -> None:
    result = explain("unable to find backend library for backend 'onnxruntime'")
    assert result.matches[0].id == "FM-92"
    assert "tritonserver" in result.matches[0].fix


# ---------------------------------------------------------------- 2. Windows older than the build supports


@pytest.mark.parametrize(
    "text",
    [
        "python.exe - Entry Point Not Found\nThe procedure entry point SetThreadDescription could not be located in "
        "the dynamic link library C:\\venv\\Lib\\site-packages\\onnxruntime\\capi\\KERNEL32.dll.",
        "Dependency Walker: api-ms-win-core-synch-l1-2-0.dll is missing; onnxruntime.dll will not start",
        "UserWarning: Unsupported Windows version (8.1). ONNX Runtime supports Windows 10 and above, only.",
        "On Windows 7 x64 the import stops with ImportError: DLL load failed while importing "
        "onnxruntime_pybind11_state: The specified procedure could not be found.",
        "ImportError: DLL load failed while importing onnxruntime_pybind11_state: 找不到指定的程序。\n"
        "depends says GetSystemTimePreciseAsFileTime is missing from kernel32",
    ],
)
def test_an_os_too_old_for_the_build_is_fm93_not_the_msvc_runtime(text: str) -> None:
    assert top_id(text) == "FM-93"


def test_windows_11_version_warning_stays_benign() -> None:
    result = explain("Unsupported Windows version (11). ONNX Runtime supports Windows 10 and above, only.")
    assert result.verdict is PasteKind.BENIGN
    assert result.matches[0].id == "FM-65"


def test_the_plain_procedure_not_found_without_an_old_windows_stays_fm28() -> None:
    text = (
        "ImportError: DLL load failed while importing onnxruntime_pybind11_state: The specified procedure could "
        "not be found."
    )
    assert top_id(text) == "FM-28"


# ---------------------------------------------------------------- 3. no GPU visible in the container


@pytest.mark.parametrize(
    "text",
    [
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
        "$ ls -l /dev/nvidia*\nls: cannot access '/dev/nvidia*': No such file or directory",
        "Environment: k8s pod without any GPU, onnxruntime-gpu 1.10\n"
        "Fatal Python error: Segmentation fault\n"
        '  File "serve.py", line 12 in <module>  (libonnxruntime_providers_cuda.so)',
        "Runs inside a container with no NVIDIA GPU.\n#  SIGSEGV (0xb) at pc=0x00007f12, pid=77\n"
        "# Problematic frame:\n# C  [libonnxruntime_providers_cuda.so+0x2b1c00]",
    ],
)
def test_no_gpu_visible_in_the_container_is_fm70(text: str) -> None:
    assert top_id(text) == "FM-70"


def test_a_container_without_gpu_next_to_a_model_error_stays_a_model_error() -> None:
    text = (
        "We run in a docker container without GPU.\n"
        "onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "
        "Got invalid dimensions for input: x for the following indices index: 1 Got: 5 Expected: 3"
    )
    result = explain(text)
    assert result.matches[0].id.startswith("NG-")
    assert all(m.id != "FM-70" for m in result.matches)


# ---------------------------------------------------------------- 4. provider options the release rejects


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: onnxruntime_pybind_state.cc:650 CreateExecutionProviderInstance Invalid TensorRT EP option: "
        "trt_cuda_graph_enable\nFalling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying.",
        "Invalid CUDA EP option: use_tf32",
        "[ERROR] [TensorRT] The value for the key 'trt_int8_enable' should be 'True' or 'False'. Default value is "
        "'False'.",
        "[ONNXRuntimeError] : 1 : FAIL : Failed to map enum name to value: EXHAUSTIVE_SEARCH",
        "[TensorRT EP] The format of provider option 'trt_profile_opt_shapes' is wrong, please follow the format",
    ],
)
def test_a_provider_option_the_release_rejects_is_fm81_before_the_fallback(text: str) -> None:
    assert top_id(text) == "FM-81"


# ---------------------------------------------------------------- 5. the Python module and NumPy's ABI


@pytest.mark.parametrize(
    "text",
    [
        "import onnxruntime\nA module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.1.3 as it may crash.",
        "RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xd",
        "ImportError: numpy.core._multiarray_umath failed to import",
    ],
)
def test_a_numpy_abi_mismatch_at_import_is_fm94(text: str) -> None:
    assert top_id(text) == "FM-94"


def test_the_python_modules_own_vc_runtime_warning_is_fm28() -> None:
    text = (
        "UserWarning: Please install the 2019 Visual C++ runtime and then try again. If you've installed the "
        "runtime in a non-standard location, make sure it can be found by setting the correct path."
    )
    assert top_id(text) == "FM-28"


@pytest.mark.parametrize(
    "text",
    ["Invalid device id 2: the machine has 1 GPU", "ValueError: device_id 4 should be less than the device count (2)"],
)
def test_a_device_id_past_the_gpus_is_an_option_problem_fm81(text: str) -> None:
    assert top_id(text) == "FM-81"
