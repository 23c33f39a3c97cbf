"""The fifth widening of explain: C/C++ build and link failures, Windows process deaths, DLLs copied by hand, app
provider choices, logger messages, Rust features, DirectML HRESULTs and other EPs' runtimes. Texts are composed
(paraphrased), not copied from any labelled set."""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_id

from ortgpu.explain import PasteKind, explain

# ---------------------------------------------------------------- 1. the C/C++ build does not find ORT's libraries


@pytest.mark.parametrize(
    "text",
    [
        "[ 98%] Linking CXX executable demo\n/usr/bin/ld: warning: /opt/ort/lib/libonnxruntime_providers_cuda.so, "
        "needed by libmyapp.so, not found (try using -rpath or -rpath-link)",
        "/usr/bin/ld: cannot find -lonnxruntime_providers_cuda\ncollect2: error: ld returned 1 exit status",
        "LINK : fatal error LNK1181: cannot open input file 'onnxruntime_providers_cuda.lib'",
    ],
)
def test_the_linker_not_finding_an_ort_provider_library_is_fm31(text: str) -> None:
    assert top_id(text) == "FM-31"


@pytest.mark.parametrize(
    "text",
    [
        "/usr/bin/ld: cannot find -lonnxruntime: No such file or directory\ncollect2: error: ld returned 1 exit status",
        "main.obj : error LNK2019: unresolved external symbol OrtGetApiBase referenced in function main\n"
        "fatal error LNK1120: 1 unresolved externals",
        "infer.cpp:3:10: fatal error: onnxruntime_cxx_api.h: No such file or directory\n    3 | #include "
        "<onnxruntime_cxx_api.h>\ncompilation terminated.",
        "In file included from app.cc:2:\ninclude/cuda_provider_factory.h:6:10: fatal error: "
        "core/framework/provider_options.h: No such file or directory",
        "error C1083: Cannot open include file: 'onnxruntime_cxx_api.h': No such file or directory",
    ],
)
def test_the_build_not_finding_ort_itself_or_its_headers_is_the_build_entry(text: str) -> None:
    assert top_id(text) == "FM-91"


def test_an_unresolved_cuda_append_function_is_still_the_cpu_library() -> None:
    text = (
        "main.obj : error LNK2019: unresolved external symbol OrtSessionOptionsAppendExecutionProvider_CUDA "
        'referenced in function "void __cdecl setup(void)"'
    )
    assert top_id(text) == "FM-32"


# ---------------------------------------------------------------- 2. the Windows process dies without an exception


@pytest.mark.parametrize(
    "text",
    [
        "The app closes without any error. Event Viewer: Faulting module name: cudnn_cnn_infer64_8.dll, version: "
        "6.14.11.8050 Exception code: 0xc0000409",
        "Process finished with exit code -1073740791 (0xC0000409) as soon as the first Run on CUDA starts; the "
        "cuDNN 8 bin folder is on PATH",
        "The program '[1234] Detector.exe' has exited with code 3221226505 (0xc0000409). It uses cudnn64_8.dll",
    ],
)
def test_a_process_death_in_cudnn8_is_the_cudnn_dll_family(text: str) -> None:
    result = explain(text)
    assert result.matches and result.matches[0].id in ("FM-25", "FM-26")
    assert result.matches[0].id == "FM-25"  # nothing in these says the versions are mixed: the commoner first


def test_a_crash_in_a_cudnn_sub_dll_with_two_cudnn_copies_is_fm26() -> None:
    text = (
        "Exception thrown at 0x00007FF81234 (cudnn_ops_infer64_8.dll) in app.exe. I have two cuDNN versions on "
        "PATH: 8.2 from CUDA\\v11.3\\bin and 8.9 in the app folder"
    )
    assert top_id(text) == "FM-26"


def test_an_access_violation_in_onnxruntime_dll_is_not_unrecognised() -> None:
    text = "Faulting module name: onnxruntime_providers_cuda.dll, version: 1.16.3 Exception code: 0xc0000005"
    assert top_id(text) is not None


# ---------------------------------------------------------------- 3. works only after copying DLLs / setting PATH


@pytest.mark.parametrize(
    "text",
    [
        "On Windows onnxruntime_providers_cuda.dll cannot be loaded due to an unsatisfied link, with CUDA 11.4 "
        "and cuDNN 8.2.",
        "onnxruntime_providers_cuda.dll would not load until I copied the CUDA and cuDNN DLLs next to it",
        "It works only after adding C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.2\\bin to PATH",
    ],
)
def test_a_provider_dll_that_loads_only_with_its_dependencies_at_hand_is_fm21(text: str) -> None:
    assert top_id(text) == "FM-21"


def test_the_linux_twin_is_the_loader_path_entry() -> None:
    text = (
        "libonnxruntime_providers_cuda.so does not load until I export LD_LIBRARY_PATH=/usr/local/cuda/lib64; "
        "then the CUDA provider works"
    )
    assert top_id(text) == "FM-71"


# ---------------------------------------------------------------- 4. an app's CLI refuses a provider: FM-02


@pytest.mark.parametrize(
    ("text", "package"),
    [
        ("main.py: error: argument --execution-provider: invalid choice: 'directml'", "onnxruntime-directml"),
        ("run.py: error: argument --providers: invalid choice: 'openvino' (choose from 'cpu')", "onnxruntime-openvino"),
        ("cli.py: error: argument --ep: invalid choice: 'cuda' (choose from 'cpu', 'azure')", "onnxruntime-gpu"),
    ],
)
def test_an_app_refusing_a_provider_choice_is_fm02_naming_the_package(text: str, package: str) -> None:
    result = explain(text)
    assert result.matches and result.matches[0].id == "FM-02"
    where = result.matches[0].fix if package == "onnxruntime-gpu" else (result.matches[0].detail or "")
    assert package in where


def test_an_unrelated_invalid_choice_is_not_fm02() -> None:
    # no rule names FM-02; the nearest-paste fallback may offer it as a lead (its labelled pastes are argparse
    # "invalid choice" refusals of a provider), never as a diagnosis
    result = explain("train.py: error: argument --optimizer: invalid choice: 'adamw' (choose from 'sgd', 'adam')")
    assert result.verdict is PasteKind.CLOSEST or not result.matches or result.matches[0].id != "FM-02"


# ---------------------------------------------------------------- 5. the logger message with a CUDA provider call


@pytest.mark.parametrize(
    "text",
    [
        "OnnxRuntimeException: [ErrorCode:RuntimeException] logging.h:300 DefaultLogger() Attempt to use "
        "DefaultLogger but none has been registered.\n at SessionOptions.AppendExecutionProvider_CUDA(Int32 id)",
        "Attempt to use DefaultLogger but none has been registered.\n   at Microsoft.ML.OnnxRuntime.SessionOptions."
        "MakeSessionOptionWithCudaProvider(Int32 deviceId)",
    ],
)
def test_the_default_logger_message_on_a_cuda_call_is_fm79(text: str) -> None:
    assert top_id(text) == "FM-79"


# ---------------------------------------------------------------- 6. Rust ort features: FM-32


@pytest.mark.parametrize(
    "text",
    [
        'ort = { version = "2.0.0-rc.9", features = ["cuda", "rocm"] }\nCUDAExecutionProvider::default()'
        ".is_available() returns false although CUDA and cuDNN are installed",
        "With the ort crate and features cuda + coreml the CUDA execution provider is not registered and the "
        "session falls back to the CPU",
        "ort crate: download-binaries fetched a CPU build, so the CUDA execution provider is not available",
    ],
)
def test_rust_ort_feature_mixups_are_fm32_with_the_feature_fix(text: str) -> None:
    result = explain(text)
    assert result.matches and result.matches[0].id == "FM-32"
    assert "features" in result.matches[0].fix


# ---------------------------------------------------------------- 7. DirectML HRESULTs


@pytest.mark.parametrize(
    "text",
    [
        "onnxruntime\\core\\providers\\dml\\DmlExecutionProvider\\src\\FusedGraphKernel.cpp(70)\\onnxruntime.dll!"
        "00007FF8: Exception(1) tid(1a2b) 80004002 No such interface supported",
        "DmlGraphFusionHelper.cpp(300)\\onnxruntime.dll!00007FF9 Exception(2) 80004005 Unspecified error",
        "the DmlExecutionProvider failed while creating the session: DXGI_ERROR_INVALID_CALL",
    ],
)
def test_directml_graph_and_session_hresults_are_the_directml_family(text: str) -> None:
    result = explain(text)
    assert result.matches and result.matches[0].id in ("FM-83", "FM-84")
    assert "DirectML.dll" in result.matches[0].cause + result.matches[0].fix


# ---------------------------------------------------------------- 8. another EP's runtime of another version


@pytest.mark.parametrize(
    "text",
    [
        "Failed to load library libonnxruntime_providers_openvino.so with error: /usr/lib/libopenvino_onnx_"
        "frontend.so.2440: undefined symbol: _ZN2ov4Node12get_type_infoEv",
        "/opt/venv/lib/libonnxruntime_providers_openvino.so: undefined symbol: _ZN2ov4Core10read_modelERKSs",
    ],
)
def test_an_ep_library_loading_another_runtime_version_is_fm72(text: str) -> None:
    result = explain(text)
    assert result.matches and result.matches[0].id == "FM-72"
    assert "OpenVINO" in result.matches[0].fix


# ---------------------------------------------------------------- a shape that matched by luck: Java's JNI library


@pytest.mark.parametrize(
    "text",
    [
        "loading the JNI library (onnxruntime4j_jni99887766.dll, extracted to the temp folder) throws "
        "UnsatisfiedLinkError; with onnxruntime.dll on PATH it works",
        "java.lang.UnsatisfiedLinkError: C:\\Temp\\onnxruntime4j_jni.dll: Can't find dependent libraries",
    ],
)
def test_the_java_jni_library_not_resolving_onnxruntime_is_fm82(text: str) -> None:
    assert top_id(text) == "FM-82"


def test_an_unsatisfied_link_on_the_cuda_provider_dll_stays_fm21() -> None:
    text = "java.lang.UnsatisfiedLinkError: C:\\Temp\\onnxruntime_providers_cuda.dll: Can't find dependent libraries"
    assert top_id(text) == "FM-21"
