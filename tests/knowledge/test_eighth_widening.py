"""The eighth widening of explain: installs that answer CPU or lack their API, every binding's native file, subgraph
errors, and three new classes (a non-ASCII path, a wrapper's own provider check, ORT used before its environment).
Texts are composed, not copied from any labelled set."""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_id

from ortgpu.explain import PasteKind, explain

# ---------------------------------------------------------------- 1. get_device() says CPU after a GPU install


@pytest.mark.parametrize(
    "text",
    [
        "$ pip install onnxruntime-gpu==1.19.2\n>>> import onnxruntime\n>>> onnxruntime.get_device()\n'CPU'",
        "!pip install -q facefusion-kit[gpu]\nIn [3]: import onnxruntime as rt\nIn [4]: rt.get_device()\nOut[4]: 'CPU'",
        "I ran `pip install insightface onnxruntime-gpu` in the image.\n```\nprint(ort.get_device())\n```\n"
        "still prints CPU and nothing runs on the card.",
        "uv pip install 'mytool[cuda]'\npython -c 'import onnxruntime; print(onnxruntime.get_available_providers())'\n"
        "['AzureExecutionProvider', 'CPUExecutionProvider']",
    ],
)
def test_the_cpu_answer_after_a_gpu_install_is_the_shadowing_cpu_package(text: str) -> None:
    assert top_id(text) == "FM-01"


def test_get_device_cpu_without_any_gpu_install_is_a_cpu_build_not_two_packages() -> None:
    assert top_id(">>> import onnxruntime\n>>> onnxruntime.get_device()\n'CPU'") == "FM-02"


def test_get_device_gpu_is_no_problem() -> None:
    result = explain("pip install onnxruntime-gpu\n>>> onnxruntime.get_device()\n'GPU'")
    assert not result.matches or result.matches[0].id != "FM-01"


# ---------------------------------------------------------------- 2. a module without its API


@pytest.mark.parametrize(
    "text",
    [
        '  File "/srv/app/infer.py", line 9, in load\n    opts = ort.SessionOptions()\n'
        "AttributeError: module 'onnxruntime' has no attribute 'SessionOptions'",
        "sess = onnxruntime.InferenceSession(path)\nAttributeError: module 'onnxruntime' has no attribute 'Infer",
        "AttributeError: module 'onnxruntime' has no attribute 'get_available_providers'",
        '  File "/home/u/.venv/lib/python3.12/site-packages/onnxruntime/__init__.py", line 23, in <module>\n'
        "    from onnxruntime.capi._pybind_state import ExecutionMode\n"
        "ImportError: cannot import name 'ExecutionMode' from 'onnxruntime.capi._pybind_state'",
    ],
)
def test_a_package_folder_without_its_api_is_fm01(text: str) -> None:
    assert top_id(text) == "FM-01"


def test_the_answer_names_the_reinstall_and_a_local_file_shadowing_the_package() -> None:
    result = explain("AttributeError: module 'onnxruntime' has no attribute 'InferenceSession'")
    assert "--force-reinstall" in result.matches[0].fix
    assert "onnxruntime.py" in result.matches[0].fix


@pytest.mark.parametrize(
    "text",
    [
        "import onnxruntime\nImportError: cannot import name 'SessionIOBinding' from "
        "'onnxruntime.capi._pybind_state' (D:\\envs\\x\\lib\\site-packages\\onnxruntime\\capi\\_pybind_state.py)",
        "ImportError: cannot import name 'get_all_providers' from 'onnxruntime.capi.onnxruntime_pybind11_state'\n"
        "It went away after I installed the Visual C++ runtime.",
    ],
)
def test_missing_pybind_names_on_windows_are_the_native_module_not_loading(text: str) -> None:
    assert top_id(text) == "FM-28"


def test_missing_pybind_names_next_to_a_missing_cuda_library_stay_with_the_library() -> None:
    text = (
        "UserWarning: Cannot load onnxruntime.capi. Error: 'libcublasLt.so.11: cannot open shared object file: "
        'No such file or directory\'\n  File "/usr/lib/python3/dist-packages/onnxruntime/__init__.py", line 20\n'
        "ImportError: cannot import name 'NodeArg' from 'onnxruntime.capi._pybind_state'"
    )
    assert top_id(text) != "FM-01"


def test_another_packages_import_error_is_not_claimed() -> None:
    result = explain("ImportError: cannot import name 'soft_unicode' from 'markupsafe'")
    assert all(m.id not in ("FM-01", "FM-28") for m in result.matches)


# ---------------------------------------------------------------- 3. every binding's native file


@pytest.mark.parametrize(
    "text",
    [
        "Uncaught Error: The specified module could not be found.\n"
        "\\\\?\\D:\\proj\\node_modules\\onnxruntime-node\\bin\\napi-v3\\win32\\x64\\onnxruntime_binding.node\n"
        "    at process.func [as dlopen] (node:electron/js2c/asar_bundle:2:1869)",
        "Error: libonnxruntime.so.1: cannot open shared object file: No such file or directory\n"
        "    at Module._extensions..node: /app/node_modules/onnxruntime-node/bin/napi-v3/linux/x64/"
        "onnxruntime_binding.node",
        "java.lang.UnsatisfiedLinkError: C:\\Temp\\onnxruntime-java123\\onnxruntime4j_jni.dll: Can't find dependent "
        "libraries",
        'E/AndroidRuntime: java.lang.UnsatisfiedLinkError: dlopen failed: library "libonnxruntimejsihelper.so" not '
        "found",
        "panic: could not load onnxruntime_arm64.so: dlopen: cannot open shared object file",
    ],
)
def test_a_bindings_native_file_that_does_not_load_is_fm82(text: str) -> None:
    assert top_id(text) == "FM-82"


# ---------------------------------------------------------------- 4. graph validity found at run time


@pytest.mark.parametrize(
    "text",
    [
        "onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code "
        "returned while running Loop node. Name:'decoder_loop' Status Message: Subgraph must have the shape set for "
        "all outputs but seq_out did not.",
        "Non-zero status code returned while running If node. Name:'cond_7' Status Message: the then_branch subgraph "
        "output 0 has rank 2 but the node's output expects rank 1",
    ],
)
def test_subgraph_errors_while_running_are_invalid_graphs(text: str) -> None:
    result = explain(text)
    assert result.verdict is PasteKind.NOT_GPU
    assert result.matches[0].id == "NG-11"


def test_a_plain_reshape_error_stays_a_runtime_shape_error() -> None:
    text = (
        "Non-zero status code returned while running Reshape node. Name:'/r' Status Message: The input tensor "
        "cannot be reshaped to the requested shape. Input shape:{1,10}, requested shape:{3,4}"
    )
    assert top_id(text) == "NG-10"


# ---------------------------------------------------------------- 5. new classes


@pytest.mark.parametrize(
    "text",
    [
        "LoadLibrary failed with error 126 for onnxruntime_providers_cuda.dll. My user folder name contains Chinese "
        "characters; in D:\\tools it works.",
        "It only fails when the model folder has accented letters (C:\\Users\\Hélène\\models).",
        "原因是安装目录是中文路径，换成英文路径就好了",
    ],
)
def test_a_non_ascii_path_is_fm95(text: str) -> None:
    assert top_id(text) == "FM-95"


def test_a_wrapper_refusing_a_provider_while_only_the_gpu_package_is_listed_is_fm96() -> None:
    text = (
        "$ pip freeze | grep onnx\nonnxruntime-gpu==1.17.1\n"
        "ImportError: `onnxruntime-gpu` is installed, but GPU dependencies are not loaded. It is likely there is a "
        "conflicting install between `onnxruntime` and `onnxruntime-gpu`."
    )
    assert top_id(text) == "FM-96"
    assert top_id("ImportError: Asked to use CUDAExecutionProvider, but `onnxruntime-gpu` package was not found.") == (
        "FM-96"
    )


def test_the_same_wrapper_message_with_both_packages_listed_is_fm01() -> None:
    text = (
        "onnxruntime==1.17.1\nonnxruntime-gpu==1.17.1\n"
        "ImportError: `onnxruntime-gpu` is installed, but GPU dependencies are not loaded."
    )
    assert top_id(text) == "FM-01"


def test_ort_used_before_its_environment_is_fm97_in_rust_and_fm79_in_dotnet() -> None:
    rust = (
        "thread 'main' panicked at src/main.rs:14:10:\nErr(ExecutionProvider(Msg(\"logging.h:320 "
        'Attempt to use DefaultLogger but none has been registered.")))'
    )
    assert top_id(rust) == "FM-97"
    assert "ort::init()" in explain(rust).matches[0].fix
    dotnet = (
        "Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:RuntimeException] logging.h:313 Attempt to use "
        "DefaultLogger but none has been registered.\n at Microsoft.ML.OnnxRuntime.SessionOptions."
        "MakeSessionOptionWithCudaProvider(Int32 deviceId)"
    )
    assert top_id(dotnet) != "FM-97"


@pytest.mark.parametrize(
    "text",
    [
        "onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : This session cannot use "
        "the graph capture feature as requested by the user as all compute graph nodes have not been partitioned to "
        "the CUDAExecutionProvider",
        "[E:onnxruntime:, inference_session.cc:2045 Initialize] This session cannot use the CUDA Graph feature as "
        "requested by the user as the model has control flow nodes which can't be supported by CUDAExecutionProvider",
    ],
)
def test_cuda_graphs_refused_for_the_model_is_fm98_and_says_how_to_fit_or_turn_off(text: str) -> None:
    result = explain(text)
    assert result.matches[0].id == "FM-98"
    assert "enable_cuda_graph" in result.matches[0].fix
