"""The eleventh widening of explain: provider libraries preloaded without global symbols, ORTModule's unbuilt
extensions, a binding's onnxruntime.dll failing on its own dependencies, op errors in old and empty-message forms,
Python warnings superseded by the error after them, a wrapper's check against onnxruntime's own provider list,
legacy-opset warnings, version and image-format mismatches of a binding's library, TensorRT's missing plugin.
Texts are composed, not copied from any labelled set; the rules decide (the closest-entry fallback is off)."""

from __future__ import annotations

import pytest

from ortgpu.explain import PasteKind, explain


def rule_top(text: str) -> str | None:
    """explain's first match by its rules alone (no closest-entry fallback), or None."""
    result = explain(text, closest=False)
    return result.matches[0].id if result.matches else None


# ---------------------------------------------------------------- 1. Provider_GetHost: providers_shared loaded local


@pytest.mark.parametrize(
    "text",
    [
        "java: symbol lookup error: /srv/app/lib/libonnxruntime_providers_tensorrt.so: undefined symbol: "
        "Provider_GetHost",
        "OSError: /opt/venv/ort/libonnxruntime_providers_cuda.so: undefined symbol: Provider_GetHost",
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1862 TryGetProviderInfo_CUDA] Failed to load library "
        "libonnxruntime_providers_cuda.so with error: libonnxruntime_providers_cuda.so: undefined symbol: "
        "Provider_GetHost",
    ],
)
def test_an_unresolved_provider_gethost_is_the_provider_bridge_loaded_without_global_symbols(text: str) -> None:
    assert rule_top(text) == "FM-99"


def test_another_undefined_symbol_in_a_provider_stays_mixed_versions() -> None:
    text = "libonnxruntime_providers_cuda.so: undefined symbol: _ZN11onnxruntime12CUDAProviderC1Ev"
    assert rule_top(text) == "FM-72"


# ---------------------------------------------------------------- 2. ORTModule's torch extensions


@pytest.mark.parametrize(
    "text",
    [
        "onnxruntime.training.ortmodule._fallback.ORTModuleInitException: ORTModule's extensions were not detected "
        "at '/home/u/.venv/lib/python3.11/site-packages/onnxruntime/training/ortmodule/torch_cpp_extensions' folder.",
        "raise ORTModuleInitException(...)\nRun `python -m torch_ort.configure` before using `ORTModule` frontend.",
    ],
)
def test_ortmodule_without_its_built_extensions_says_to_configure(text: str) -> None:
    result = explain(text, closest=False)
    assert result.matches[0].id == "FM-100"
    assert "torch_ort.configure" in result.matches[0].fix


def test_an_extension_in_the_onnxruntime_package_missing_a_torch_symbol_is_mixed_versions() -> None:
    text = (
        "ImportError: /venv/lib/python3.11/site-packages/onnxruntime/training/ortmodule/torch_cpp_extensions/"
        "aten_op_executor.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev"
    )
    assert rule_top(text) == "FM-72"


# ---------------------------------------------------------------- 3. a binding's onnxruntime.dll and its dependencies


@pytest.mark.parametrize(
    "text",
    [
        "java.lang.UnsatisfiedLinkError: D:\\tmp\\onnxruntime-java998\\onnxruntime.dll: Can't find dependent libraries",
        "Caused by: java.lang.UnsatisfiedLinkError: C:\\Users\\a\\AppData\\Local\\Temp\\ort42\\onnxruntime.dll: "
        "Eine DLL-Initialisierungsroutine ist fehlgeschlagen",
        "java.lang.UnsatisfiedLinkError: C:\\Temp\\onnxruntime-java1\\onnxruntime.dll: "
        "ダイナミック リンク ライブラリ (DLL) 初期化ルーチンの実行に失敗しました。",
    ],
)
def test_the_main_dll_found_but_failing_on_its_dependencies_is_the_vc_runtime(text: str) -> None:
    assert rule_top(text) == "FM-28"


def test_the_main_dll_not_found_at_all_stays_the_bindings_load() -> None:
    text = "java.lang.UnsatisfiedLinkError: no onnxruntime4j_jni in java.library.path: /usr/java/packages/lib"
    assert rule_top(text) == "FM-82"


@pytest.mark.parametrize(
    "text",
    [
        "thread 'main' panicked: ort 1.17 is not compatible with the ONNX Runtime binary found at `onnxruntime.dll`; "
        "expected GetVersionString to return '1.17.x', but got '1.8.1'",
        "error: process didn't exit successfully: `target\\release\\detect.exe` (exit code: 0xc000007b)",
        "The application was unable to start correctly (0xc000007b). Click OK to close the application.",
    ],
)
def test_a_binding_that_picked_up_another_onnxruntime_dll(text: str) -> None:
    assert rule_top(text) in {"FM-82", "FM-77"}


# ---------------------------------------------------------------- 4. op errors: old form, empty message, CPU fallback


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: Method run failed due to: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Non-zero status code "
        "returned while running Node: LabelEncoder Status Message: Input keys_per_row[3] != number of values[7]",
        "[ErrorCode:RuntimeException] Non-zero status code returned while running Expand node. "
        "Name:'/decoder/Expand_2' Status Message: ",
        "app.py:12: UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names."
        "Available providers: 'CPUExecutionProvider'\n"
        "[E:onnxruntime:, sequential_executor.cc:514 ExecuteKernel] Non-zero status code returned while running "
        "GatherElements node. Name:'/GatherElements_7' Status Message: GatherElements op: Out of range value in "
        "index tensor",
    ],
)
def test_an_op_rejecting_its_data_is_a_model_or_input_error(text: str) -> None:
    result = explain(text, closest=False)
    assert result.matches[0].id == "NG-10"
    assert result.verdict is PasteKind.NOT_GPU


def test_an_empty_status_on_a_compute_op_with_cuda_named_is_not_claimed_as_a_shape_error() -> None:
    text = (
        "Non-zero status code returned while running Conv node. Name:'/conv1/Conv' Status Message: \n"
        "CUDA failure 700: an illegal memory access was encountered"
    )
    assert rule_top(text) != "NG-10"


def test_the_cpu_only_warning_alone_still_says_the_cpu_package() -> None:
    text = (
        "infer.py:9: UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names."
        "Available providers: 'AzureExecutionProvider, CPUExecutionProvider'"
    )
    assert rule_top(text) in {"FM-01", "FM-02"}


@pytest.mark.parametrize(
    "text",
    [
        "[ONNXRuntimeError] : 1 : FAIL : Load model from seg.onnx failed:Type Error: Type (tensor(float)) of output "
        "arg (logits) of node (Cast_12) does not match expected type (tensor(double)).",
        "Ort::Exception: Type Error: Type (tensor(int32)) of output arg (idx) of node (ArgMax_3) does not match "
        "expected type (tensor(int64)).",
    ],
)
def test_a_declared_type_the_node_does_not_produce_is_an_invalid_graph(text: str) -> None:
    assert rule_top(text) == "NG-11"


def test_a_model_file_that_is_no_protobuf_in_any_binding() -> None:
    text = "Error: Could not load local model: Failed to load model because protobuf parsing failed."
    assert rule_top(text) == "NG-09"


# ---------------------------------------------------------------- 5. warnings that are only warnings


def test_a_legacy_opset_warning_with_a_result_is_benign() -> None:
    text = (
        "[W:onnxruntime:, model.cc:183 Model] ONNX Runtime only *guarantees* support for models stamped with opset "
        "version 7 or above for opset domain 'ai.onnx'. Please upgrade your model to opset 7 or higher. For now, "
        "this opset 5 model may run depending upon legacy support of some older opset version operators.\n"
        "[W:onnxruntime:, ort_transpose_optimizer.cc:28 ApplyImpl] Transpose optimizer failed: Unsupported ONNX opset"
    )
    assert rule_top(text) == "FM-65"


def test_a_model_stamped_with_a_newer_opset_stays_too_new() -> None:
    text = (
        "[W:onnxruntime:, model.cc:210 Model] ONNX Runtime only *guarantees* support for models stamped with "
        "official released onnx opset versions. Opset 23 is under development and support for this is limited."
    )
    assert rule_top(text) == "NG-07"


def test_the_provider_bridge_warning_alone_is_benign() -> None:
    text = (
        "2025-03-02 10:11:12.1 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:2158 "
        "onnxruntime::python::CreateInferencePybindStateModule] Init provider bridge failed.\nresult ok"
    )
    assert rule_top(text) == "FM-65"


# ---------------------------------------------------------------- 6. a wrapper's check against a working GPU install


@pytest.mark.parametrize(
    "text",
    [
        ">>> onnxruntime.get_available_providers()\n['TensorrtExecutionProvider', 'CUDAExecutionProvider', "
        "'CPUExecutionProvider']\nbut the pipeline raises: onnxruntime is not available, please install onnxruntime",
        "print(ort.get_available_providers()) -> ['CUDAExecutionProvider', 'CPUExecutionProvider']\n"
        "the library still says ONNX Runtime not installed and wants me to install onnxruntime",
    ],
)
def test_a_wrapper_denying_onnxruntime_next_to_a_gpu_provider_list(text: str) -> None:
    assert rule_top(text) == "FM-96"


def test_a_cpu_only_provider_list_with_the_same_complaint_is_not_the_wrapper() -> None:
    text = "['CPUExecutionProvider']\nonnxruntime is not available"
    assert rule_top(text) != "FM-96"


# ---------------------------------------------------------------- 7. TensorRT: the missing plugin on the next line


def test_a_missing_plugin_logged_under_the_tensorrt_logger_line_is_an_unsupported_node() -> None:
    text = (
        "[E:onnxruntime:Default, tensorrt_execution_provider.h:88 onnxruntime::TensorrtLogger::log] "
        "[2024-05-01 10:00:00   ERROR] 3:\ngetPluginCreator could not find plugin: InstanceNormalization_TRT "
        "version: 1\nRUNTIME_EXCEPTION : Exception during initialization: tensorrt_execution_provider.cc:1400 "
        "GetSupportedList graph_build.Resolve().IsOK() was false."
    )
    assert rule_top(text) == "FM-74"


@pytest.mark.parametrize(
    "text",
    [
        "$ python -c 'import onnxruntime as o; print(o.get_available_providers())'\n"
        "['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']\n"
        "$ python -c 'import tensorrt'\nModuleNotFoundError: No module named 'tensorrt'",
        "ImportError: No module named tensorrt\nbut providers=['TensorrtExecutionProvider'] is what the app asks for",
    ],
)
def test_a_listed_tensorrt_provider_without_tensorrt_installed(text: str) -> None:
    assert rule_top(text) == "FM-60"


def test_a_missing_tensorrt_module_without_the_tensorrt_provider_is_not_claimed() -> None:
    assert rule_top("ModuleNotFoundError: No module named 'tensorrt'\nwhile importing torch2trt") != "FM-60"


def test_an_applications_guess_naming_tensorrt_is_not_tensorrts_own_error() -> None:
    text = "[ERROR] Inference worker exited. This is probably a TensorRT/CUDA error, check your drivers."
    assert rule_top(text) != "FM-75"


def test_a_wrapper_saying_it_requires_onnxruntime_next_to_a_gpu_provider_list() -> None:
    text = (
        "In [3]: ort.get_available_providers()\nOut[3]: ['CUDAExecutionProvider', 'CPUExecutionProvider']\n"
        "In [4]: pipe = Pipeline(backend='onnx')\nValueError: This backend requires onnxruntime. Install it first."
    )
    assert rule_top(text) == "FM-96"
