"""The sixth widening of explain: a binding that cannot load ORT's own library in any wording or language, provider
lists the session applied or "only" shows, a CUDA_CALL error cut before its code, and ORT's own wordings generalised.
Texts are composed, not copied from any labelled set."""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_id

from ortgpu.explain import PasteKind, explain

# ---------------------------------------------------------------- 1. ORT's main library not loaded by a binding


@pytest.mark.parametrize(
    "text",
    [
        # the dynamic loader running a Rust / C++ program linked against a versioned ORT
        "./bin/detector: error while loading shared libraries: libonnxruntime.so.1.19.2: cannot open shared object "
        "file: No such file or directory",
        # .NET in French, Spanish and German: only the exception type and the quoted name are in English
        "System.DllNotFoundException: Impossible de charger la DLL « onnxruntime » : le module spécifié est "
        "introuvable. (Exception de HRESULT : 0x8007007E)",
        "Unhandled exception. System.DllNotFoundException: No se puede cargar el archivo DLL 'onnxruntime': No se "
        "puede encontrar el módulo especificado.",
        "System.DllNotFoundException: Die DLL 'onnxruntime' kann nicht geladen werden.",
        # macOS: dlopen of the dylib a Go program points at
        "panic: dlopen(/opt/ort/lib/libonnxruntime.dylib, 0x0005): tried: '/opt/ort/lib/libonnxruntime.dylib' "
        "(no such file)",
        # Java in any words: the JNI library
        "java.lang.UnsatisfiedLinkError: Can't find dependent libraries: onnxruntime4j_jni.dll",
    ],
)
def test_a_binding_missing_onnxruntimes_own_library_is_fm82(text: str) -> None:
    assert top_id(text) == "FM-82"


def test_a_cuda_library_missing_behind_libonnxruntime_is_that_library_not_the_binding() -> None:
    # the loader names libonnxruntime as the one that needs it: cuDNN 8 is what is missing
    text = (
        "./serve: error while loading shared libraries: libonnxruntime.so.1.15.1: libcudnn.so.8: cannot open "
        "shared object file: No such file or directory"
    )
    assert top_id(text) == "FM-11"


def test_onnxruntime_dll_failing_its_own_initialisation_is_the_binding_not_the_cuda_provider() -> None:
    text = (
        "System.DllNotFoundException: Unable to load DLL 'onnxruntime' or one of its dependencies: A dynamic link "
        "library (DLL) initialization routine failed. (0x8007045A)"
    )
    assert top_id(text) == "FM-82"


def test_the_cuda_providers_dll_failing_initialisation_stays_fm78() -> None:
    text = (
        '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 1114 "" when trying to load '
        '"C:\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"'
    )
    assert top_id(text) == "FM-78"


# ---------------------------------------------------------------- 2. provider lists


def test_applied_providers_cpu_only_with_the_gpu_package_is_a_fallback() -> None:
    text = (
        "pip install onnxruntime-gpu done, yet the face app prints\n"
        "Applied providers: ['CPUExecutionProvider'], with options: {'CPUExecutionProvider': {}}"
    )
    assert top_id(text) == "FM-33"


def test_only_a_list_of_cpu_side_providers_is_a_build_without_the_gpu_provider() -> None:
    text = (
        "Inside the container onnxruntime only has ['AzureExecutionProvider', 'CPUExecutionProvider'] so the "
        "card is never used"
    )
    assert top_id(text) == "FM-02"


def test_only_a_list_with_a_gpu_provider_is_no_cpu_build() -> None:
    text = "we only pass ['CUDAExecutionProvider', 'CPUExecutionProvider'] to the session and it runs fine"
    assert top_id(text) != "FM-02"


def test_cpu_only_unless_torch_is_imported_is_the_hidden_torch_dependency() -> None:
    assert top_id("CUDAExecutionProvider missing, only CPUExecutionProvider, unless importing torch beforehand") in (
        "FM-18",
    )
    assert top_id("Only CPUExecutionProvider shows up if not importing torch in the script") == "FM-18"


# ---------------------------------------------------------------- 3. CUDA_CALL cut before its code


def test_a_cuda_call_error_cut_off_at_provider_start_is_a_cuda_error_at_init() -> None:
    text = (
        "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Exception during initialization: "
        "C:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:123 onnxrun"
    )
    result = explain(text)
    assert result.matches[0].id == "FM-34"
    assert "cut off" in (result.matches[0].detail or "")


def test_a_cuda_call_with_its_cublas_status_is_not_guessed_as_the_driver() -> None:
    text = (
        "Exception during initialization: /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:121 "
        "CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; expr=cublasCreate(&cublas_handle_);"
    )
    assert top_id(text) == "FM-44"


# ---------------------------------------------------------------- 4. ORT's wordings generalised


def test_the_node_placement_warning_without_its_prefix_is_benign() -> None:
    text = (
        "2025-03-02 10:00:01 [W:onnxruntime:, fallback_cpu_capability.h:155 GetCpuPreferredNodes] Force fallback "
        "to CPU execution for node: /encoder/Shape_3"
    )
    result = explain(text)
    assert result.matches[0].id == "FM-65"
    assert result.verdict is PasteKind.BENIGN


def test_tensorrt_engine_creation_failing_in_present_tense_is_fm75() -> None:
    assert top_id("Session crashes after the TensorRT EP fails to create engine from network for subgraph 3") == (
        "FM-75"
    )


@pytest.mark.parametrize(
    "text",
    [
        "Error: please rebuild onnxruntime with CUDA to use the gpu feature",
        "RuntimeError: you need to compile ORT with TensorRT before asking for it",
    ],
)
def test_asked_to_rebuild_ort_with_a_provider_is_a_build_without_it(text: str) -> None:
    assert top_id(text) == "FM-32"


def test_a_model_shape_error_is_still_not_a_gpu_problem() -> None:
    text = (
        "onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "
        "Got invalid dimensions for input: pixel_values for the following indices index: 2 Got: 320 Expected: 224"
    )
    result = explain(text)
    assert result.matches[0].id == "NG-01"
    assert result.verdict is PasteKind.NOT_GPU


@pytest.mark.parametrize(
    "text",
    [
        "WARNING: Package 'onnxruntime' not found, installing the plain CPU wheel instead",
        "ModuleNotFoundError: No module named 'onnxruntime'",
    ],
)
def test_a_quoted_package_name_is_not_a_native_library_load_failure(text: str) -> None:
    assert top_id(text) != "FM-82"
