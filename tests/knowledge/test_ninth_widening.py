"""The ninth widening of explain: a model newer than the runtime, a DLL whose start-up failed (1114) in any language,
a GPU library lacking a symbol (two releases mixed), two copies of onnxruntime in one process.
Texts are composed, not copied from any labelled set."""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_id

from ortgpu.explain import explain

# ---------------------------------------------------------------- 1. a model written for a newer onnxruntime


@pytest.mark.parametrize(
    "text",
    [
        "InferenceSession('det.onnx') raised onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : "
        "1 : FAIL : Load model from det.onnx failed:Unknown model file format version.",
        "Error: Load model failed: Unsupported model IR version: 11, max supported IR version: 10",
        "onnx exported with onnx 1.17 on the desktop; on the Jetson (onnxruntime-gpu 1.12) the model's ir_version 10 "
        "is higher than what the runtime reads.",
    ],
)
def test_an_ir_version_past_the_runtime_is_ng06(text: str) -> None:
    assert top_id(text) == "NG-06"


@pytest.mark.parametrize(
    "text",
    [
        "2025-03-02 10:11:12 [W:onnxruntime:, model_load_utils.h:46 ValidateOpsetForDomain] Opset 23 is under "
        "development and support for this is limited. Current official support for domain ai.onnx is till opset 21.",
        "OrtException: Load model failed: opset 22 is not supported by this version of onnxruntime",
        "RuntimeError: onnx domain_version 24 is greater than the maximum this onnxruntime build supports",
    ],
)
def test_an_opset_past_the_runtime_is_ng07(text: str) -> None:
    assert top_id(text) == "NG-07"


def test_a_cuda_version_not_supported_is_not_a_model_opset() -> None:
    result = explain("The installed CUDA version 13 is not supported by this version of onnxruntime-gpu")
    assert all(m.id not in ("NG-06", "NG-07") for m in result.matches)


# ---------------------------------------------------------------- 2. a DLL's start-up failed (1114), any language


@pytest.mark.parametrize(
    "text",
    [
        # German Windows, genai's CUDA flavour
        "pip install onnxruntime-genai-cuda\n>>> import onnxruntime_genai\nImportError: DLL load failed while "
        "importing onnxruntime_genai: Eine DLL-Initialisierungsroutine ist fehlgeschlagen.",
        # Japanese Windows, the GPU package, CUDA on PATH
        "set PATH=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\bin;%PATH%\n"
        "ImportError: DLL load failed while importing onnxruntime_pybind11_state: "
        "ダイナミック リンク ライブラリ (DLL) 初期化ルーチンの実行に失敗しました。",
        # only the number, with the CUDA provider named
        "OSError: [WinError 1114] while loading onnxruntime_providers_cuda.dll from C:\\venv\\Lib\\site-packages",
        # Java loading the CUDA provider it unpacked
        "java.lang.UnsatisfiedLinkError: C:\\Users\\me\\AppData\\Local\\Temp\\onnxruntime-java\\"
        "onnxruntime_providers_cuda.dll: A dynamic link library (DLL) initialization routine failed",
    ],
)
def test_dll_initialisation_failure_while_importing_a_cuda_build_is_fm78(text: str) -> None:
    assert top_id(text) == "FM-78"


def test_dll_initialisation_failure_of_a_cpu_build_stays_the_vc_runtime() -> None:
    text = (
        "ImportError: DLL load failed while importing onnxruntime_pybind11_state: "
        "Une routine d'initialisation d'une bibliothèque de liens dynamiques (DLL) a échoué."
    )
    assert top_id(text) == "FM-28"


# ---------------------------------------------------------------- 3. a GPU library lacking a symbol: releases mixed


@pytest.mark.parametrize(
    "text",
    [
        "python3: symbol lookup error: /usr/local/cuda-11.8/lib64/libcudnn_cnn_infer.so.8: undefined symbol: "
        "_ZN5cudnn14backend_helper7getInfoE, version libcudnn_ops_infer.so.8",
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1744] Failed to load library "
        "libonnxruntime_providers_tensorrt.so with error: /opt/tensorrt/lib/libnvonnxparser.so.10: undefined "
        "symbol: _ZN8nvinfer114getBuilderPluginRegistryEv",
        "python.exe - Entry Point Not Found\nThe procedure entry point cublasLtMatmulAlgoGetHeuristic could not be "
        "located in the dynamic link library C:\\tools\\cuda\\bin\\cublasLt64_12.dll.",
    ],
)
def test_an_unresolved_symbol_in_a_gpu_library_is_mixed_versions(text: str) -> None:
    assert top_id(text) == "FM-72"


def test_a_missing_tensorrt_file_is_still_a_missing_library() -> None:
    text = (
        "Failed to load library libonnxruntime_providers_tensorrt.so with error: libnvinfer.so.8: cannot open "
        "shared object file: No such file or directory"
    )
    assert top_id(text) == "FM-57"


# ---------------------------------------------------------------- 4. two copies of onnxruntime in one process


@pytest.mark.parametrize(
    "text",
    [
        "$ node server.mjs\nterminate called after throwing an instance of 'onnxruntime::OnnxRuntimeException'\n"
        "  what():  ort_env.cc:92 static void OrtEnv::Release(OrtEnv*) env_ptr == p_instance_.get() was false.\n"
        "Aborted (core dumped)",
        "$ npm ls onnxruntime-node\napp@1.0.0\n├── onnxruntime-node@1.22.0\n└─┬ @xenova/transformers@2.17.2\n"
        "  └── onnxruntime-node@1.14.0\n\nSegmentation fault (core dumped) as soon as both are imported",
    ],
)
def test_two_copies_of_the_native_runtime_are_mixed_versions(text: str) -> None:
    assert top_id(text) == "FM-72"


def test_one_onnxruntime_node_in_the_tree_is_not_two_copies() -> None:
    text = "$ npm ls onnxruntime-node\napp@1.0.0\n└── onnxruntime-node@1.22.0\nSegmentation fault (core dumped)"
    assert top_id(text) != "FM-72"
