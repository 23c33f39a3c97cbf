"""`ortgpu.explain.explain`: the verdict, the specifics a user needs, and honest 'not recognised' / 'not GPU'."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from ortgpu.explain import ExplainInputError, PasteKind, explain
from ortgpu.results import envelope

LINUX_CUBLAS11 = (
    "2024-05-01 10:00:00.123 [E:onnxruntime:Default, provider_bridge_ort.cc:1548 TryGetProviderInfo_CUDA] "
    "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1209 onnxruntime::Provider& "
    "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
    "libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object file: No such file "
    "or directory"
)
WINDOWS_126 = (
    '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load '
    '"C:\\Users\\me\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"'
)


def test_cuda11_library_missing_names_the_library_and_cuda_11() -> None:
    result = explain("libcublasLt.so.11: cannot open shared object file: No such file or directory")
    assert result.verdict is PasteKind.GPU_PROBLEM and result.recognised
    top = result.matches[0]
    assert top.id == "FM-08"
    assert top.library == "libcublasLt.so.11"
    assert "CUDA 11" in top.detail and "libcublasLt.so.11" in top.detail
    assert "1.14–1.18 (PyPI)" in top.detail  # which ORT builds are CUDA 11, from the matrix
    assert "CUDA 11" in top.meaning and "libcublasLt.so.11" in result.summary


def test_cudnn9_missing_says_cudnn_9_and_preload() -> None:
    result = explain(LINUX_CUBLAS11.replace("libcublasLt.so.11", "libcudnn.so.9"))
    top = result.matches[0]
    assert (top.id, top.library) == ("FM-12", "libcudnn.so.9")
    assert "cuDNN 9" in top.detail
    assert "preload_dlls" in top.fix
    assert result.facts.platform.value == "linux"
    assert top.fix == top.fix_linux


def test_windows_error_126_is_a_missing_dependent_dll() -> None:
    result = explain(WINDOWS_126)
    top = result.matches[0]
    assert top.id == "FM-21"
    assert top.specifics["code"] == "126"
    assert "module (a DLL) could not be found" in top.detail
    for dll in ("cudart64_12.dll", "cudnn64_9.dll", "zlibwapi.dll"):  # the usual suspects, per CUDA major
        assert dll in top.detail
    assert top.fix == top.fix_windows


def test_windows_error_126_with_the_builds_own_warning_lists_that_builds_dlls() -> None:
    text = (
        WINDOWS_126 + "\nFailed to create CUDAExecutionProvider. Require cuDNN 8.* and CUDA 11.*, and the latest MSVC"
    )
    top = explain(text).matches[0]
    assert "needs CUDA 11 and cuDNN 8" in top.detail
    assert "cudart64_110.dll" in top.detail and "zlibwapi.dll" in top.detail
    assert "cudart64_12.dll" not in top.detail


def test_windows_named_dll_is_mapped_to_its_component() -> None:
    text = (
        'Error loading "C:\\x\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll" which depends on "cublasLt64_12.dll" '
        'which is missing. (Error 126: "The specified module could not be found.")'
    )
    top = explain(text).matches[0]
    assert (top.id, top.library) == ("FM-22", "cublasLt64_12.dll")
    assert "cuBLASLt from CUDA 12" in top.detail


def test_the_cuda11_windows_1_19_0_zip_is_not_described_as_cuda_12() -> None:
    result = explain(
        WINDOWS_126.replace(
            "C:\\Users\\me\\venv\\Lib\\site-packages\\onnxruntime\\capi",
            "C:\\libs\\onnxruntime-win-x64-gpu-1.19.0\\lib",
        )
    )
    assert [m.id for m in result.matches] == ["FM-30", "FM-21"]
    assert "cudart64_110.dll" in result.matches[1].detail
    assert "CUDA 11" in result.build_note


def test_driver_error_uses_the_build_major_for_the_minimum_driver() -> None:
    text = (
        "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 13.*\n"
        "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version ; GPU=-1 ; hostname=h ; "
        "expr=cudaSetDevice(info_.device_id);"
    )
    result = explain(text)
    assert result.matches[0].id == "FM-34"
    assert "driver >= 580.65.06" in result.matches[0].detail
    assert result.build_note == "The ORT build in this paste needs CUDA 13 and cuDNN 9 (from its own warning)."


def test_absurd_allocation_is_called_a_shape_bug() -> None:
    result = explain("Failed to allocate memory for requested buffer of size 4585490524328388608")
    assert "shape bug" in result.matches[0].detail
    small = explain("Failed to allocate memory for requested buffer of size 1073741824")
    assert "1.0 GiB" in small.matches[0].detail and "shape bug" not in small.matches[0].detail


def test_ort_version_in_the_paste_brings_the_matrix_row() -> None:
    result = explain("pip install onnxruntime-gpu==1.18.0\n" + LINUX_CUBLAS11)
    assert result.build_note.startswith("ORT 1.18.0 (default build) needs CUDA 11 (built with 11.8), cuDNN 8")


@pytest.mark.parametrize(
    ("text", "top"),
    [
        (
            "onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "
            "Got invalid dimensions for input: image for the following indices\n index: 2 Got: 225 Expected: 224\n "
            "Please fix either the inputs or the model.",
            "NG-01",
        ),
        ("ValueError: Required inputs (['position_ids']) are missing from input feed (['input_ids']).", "NG-03"),
        ("INVALID_ARGUMENT : Unexpected input data type. Actual: (tensor(int64)) , expected: (tensor(float))", "NG-04"),
        ("Unsupported model IR version: 11, max supported IR version: 10", "NG-06"),
        (
            "ONNX Runtime only *guarantees* support for models stamped with official released onnx opset versions. "
            "Opset 24 is under development and support for this is limited.",
            "NG-07",
        ),
        ("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Invalid Feed Input Name:imgs", "NG-05"),
    ],
)
def test_model_and_input_errors_are_not_gpu(text: str, top: str) -> None:
    result = explain(text)
    assert result.verdict is PasteKind.NOT_GPU and result.recognised
    assert result.matches[0].id == top
    assert "Not a GPU setup problem" in result.summary
    assert all(m.family.value == "not_gpu" for m in result.matches)
    for m in result.matches:  # no GPU fix offered
        assert "CUDA" not in m.fix and "driver" not in m.fix


def test_shape_error_names_the_input() -> None:
    top = explain("Got invalid dimensions for input: pixel_values for the following indices").matches[0]
    assert "pixel_values" in top.detail


def test_a_model_error_after_a_fallback_warning_is_the_failure_and_the_warning_is_listed() -> None:
    text = (
        "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] Failed to create "
        "CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*.\n"
        "Got invalid dimensions for input: x for the following indices"
    )
    result = explain(text)
    assert result.verdict is PasteKind.NOT_GPU
    assert [m.id for m in result.matches] == ["NG-01", "FM-33"]
    assert "also shows a GPU problem" in result.summary


def test_a_gpu_error_logged_as_an_error_still_comes_first() -> None:
    text = (
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1548 TryGetProviderInfo_CUDA] Failed to load library "
        "libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared object file: No such file "
        "or directory\n"
        "Got invalid dimensions for input: x for the following indices"
    )
    assert explain(text).verdict is PasteKind.GPU_PROBLEM


def test_benign_warning() -> None:
    result = explain(
        "Some nodes were not assigned to the preferred execution providers which may or may not have an negative "
        "impact on performance. e.g. ORT explicitly assigns shape related ops to CPU to improve perf."
    )
    assert result.verdict is PasteKind.BENIGN and result.recognised
    assert "Nothing to fix" in result.summary


def test_unrecognised_text_points_to_doctor() -> None:
    result = explain("something odd happened on my machine yesterday")
    assert result.verdict is PasteKind.NOT_RECOGNISED and not result.recognised
    assert result.matches == ()
    assert "ortgpu doctor" in result.next_step


@pytest.mark.parametrize(
    "text",
    [
        "Segmentation fault (core dumped)",
        "Exception thrown at 0x00007FFB1A2B3C4D (onnxruntime.dll) in app.exe: 0xC0000005: Access violation reading",
    ],
)
def test_a_bare_crash_asks_for_the_lines_that_name_the_cause(text: str) -> None:
    # blind expert readers could not name a cause from a bare crash either: the verbose log usually holds it
    result = explain(text)
    assert not result.recognised
    assert "log_severity_level" in result.next_step and "ortgpu doctor" in result.next_step


@pytest.mark.parametrize("text", ["", "   \n\t  "])
def test_empty_text_is_bad_input(text: str) -> None:
    with pytest.raises(ExplainInputError) as info:
        explain(text)
    assert info.value.exit_code == 2


def test_oversized_text_is_refused() -> None:
    with pytest.raises(ExplainInputError, match="characters"):
        explain("x" * 1_000_001)


def test_result_is_frozen_and_serialises() -> None:
    result = explain(LINUX_CUBLAS11)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.summary = "x"  # type: ignore[misc]
    doc = json.loads(json.dumps(envelope("explain", result)))
    assert doc["schema"] == "ortgpu.explain/v1"
    assert doc["result"]["verdict"] == "gpu_problem"
    assert doc["result"]["matches"][0]["library"] == "libcublasLt.so.11"


def test_import_stays_light() -> None:
    code = "import ortgpu.explain, sys; print(sorted({'onnxruntime', 'onnx', 'numpy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
