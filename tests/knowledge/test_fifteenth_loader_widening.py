"""Explain's loader, package and binding rules from the fifteenth set's misses: onnxruntime absent from the running
interpreter, macOS without libomp, musl's loader wording, ORT's internal C++ API, a frozen app without the provider
bridge, an app demanding GPU libraries in CPU mode; and the precision guards (an old Windows named next to Windows
10, Ruby's `require "onnxruntime"`, several versions installed over each other). Texts are composed, not copied
from any labelled set; the learned fallback is off so that the rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

# ---------------------------------------------------------------- FM-111: the interpreter has no onnxruntime


@pytest.mark.parametrize(
    "text",
    [
        'Traceback (most recent call last):\n  File "/srv/app/.venv/lib/python3.11/site-packages/facelib/core.py", '
        "line 9, in <module>\n    import onnxruntime\nModuleNotFoundError: No module named 'onnxruntime'",
        'File "D:\\AI\\portable\\nodes\\swapper\\loader.py", line 2, in <module>\n    import onnxruntime as ort\n'
        'ImportError: No module named "onnxruntime"',
        "python3 run.py\nModuleNotFoundError: No module named onnxruntime",
    ],
)
def test_onnxruntime_missing_from_the_running_python_is_fm111(text: str) -> None:
    assert top(text) == "FM-111"


@pytest.mark.parametrize(
    "text",
    [
        # a submodule of an installed package is a broken install, not an absent one
        "ModuleNotFoundError: No module named 'onnxruntime.capi.onnxruntime_pybind11_state'",
        "ModuleNotFoundError: No module named 'onnxruntime_genai'",
        # the import broke right after one of two distributions sharing the directory was uninstalled
        "I ran pip uninstall onnxruntime to keep only onnxruntime-gpu, now:\n"
        "ModuleNotFoundError: No module named 'onnxruntime'",
    ],
)
def test_other_module_errors_are_not_fm111(text: str) -> None:
    assert "FM-111" not in rule_ids(text)


# ---------------------------------------------------------------- FM-112: macOS without libomp


def test_dyld_without_libomp_for_onnxruntime_is_fm112() -> None:
    text = (
        "UserWarning: Cannot load onnxruntime.capi. Error: 'dlopen(/Users/kim/env/lib/python3.7/site-packages/"
        "onnxruntime/capi/onnxruntime_pybind11_state.so, 2): Library not loaded: /opt/homebrew/opt/libomp/lib/"
        "libomp.dylib\n  Referenced from: /Users/kim/env/lib/python3.7/site-packages/onnxruntime/capi/"
        "onnxruntime_pybind11_state.so\n  Reason: image not found'"
    )
    assert top(text) == "FM-112"


def test_libomp_named_without_a_load_failure_is_not_fm112() -> None:
    assert "FM-112" not in rule_ids("brew install libomp finished; onnxruntime 1.17 runs fine on my M2")


# ---------------------------------------------------------------- FM-107: musl's loader wording


@pytest.mark.parametrize(
    "text",
    [
        "Caused by: java.lang.UnsatisfiedLinkError: /tmp/ort-native-42/libonnxruntime.so: Error loading shared "
        "library libgcc_s.so.1: No such file or directory (needed by /tmp/ort-native-42/libonnxruntime.so)",
        # a console wrapped the one line
        "Error: /srv/node_modules/onnxruntime-node/bin/napi-v3/linux/x64/onnxruntime_binding.node: Error loading "
        "shared library libstdc++.so.6:\n   No such file or directory (needed by /srv/node_modules/onnxruntime-node/"
        "bin/napi-v3/linux/x64/libonnxruntime.so.1.18.0)",
    ],
)
def test_musl_loader_words_for_an_onnxruntime_library_are_fm107(text: str) -> None:
    assert top(text) == "FM-107"


def test_glibc_loader_words_are_not_fm107() -> None:
    text = (
        "java.lang.UnsatisfiedLinkError: /tmp/ort/libonnxruntime.so: libgomp.so.1: cannot open shared object file: "
        "No such file or directory"
    )
    assert "FM-107" not in rule_ids(text)


# ---------------------------------------------------------------- FM-134: ORT's internal C++ classes


@pytest.mark.parametrize(
    "text",
    [
        "/usr/bin/ld: demo.o: in function `main':\ndemo.cc:(.text+0x91): undefined reference to "
        "`onnxruntime::InferenceSession::Initialize()'\ncollect2: error: ld returned 1 exit status",
        'runner.obj : error LNK2019: unresolved external symbol "public: __cdecl onnxruntime::SessionOptions::'
        'SessionOptions(void)" referenced in function main',
        'demo.cc:3:10: fatal error: "core/framework/tensor.h" No such file or directory',
    ],
)
def test_internal_cpp_symbols_or_headers_are_fm134(text: str) -> None:
    assert top(text) == "FM-134"


def test_public_api_link_errors_stay_fm91() -> None:
    text = "main.cpp:(.text+0x10): undefined reference to `OrtGetApiBase'\ncollect2: error: ld returned 1 exit status"
    ids = rule_ids(text)
    assert ids and ids[0] == "FM-91"
    assert "FM-134" not in ids


# ---------------------------------------------------------------- FM-31: a frozen app without the provider bridge


@pytest.mark.parametrize("bundler", ["pyinstaller --onefile app.py", "python -m nuitka --standalone main.py"])
def test_provider_bridge_failing_in_a_frozen_app_is_fm31(bundler: str) -> None:
    text = (
        f"{bundler}\n...\n2024-02-02 10:00:01.1 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:1983 "
        "onnxruntime::python::CreateInferencePybindStateModule] Init provider bridge failed.\nruns on CPU only"
    )
    assert top(text) == "FM-31"


def test_provider_bridge_warning_alone_stays_benign() -> None:
    text = (
        "2024-02-02 10:00:01.1 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:1983 "
        "onnxruntime::python::CreateInferencePybindStateModule] Init provider bridge failed."
    )
    assert top(text) == "FM-65"


# ---------------------------------------------------------------- FM-113: GPU libraries demanded in CPU mode


def test_an_app_demanding_cudnn_in_cpu_mode_is_fm113() -> None:
    text = (
        "[error] Startup check: cannot locate cudnn_ops64_9.dll, install cuDNN 9\n[error] pipeline could not start\n"
        "The laptop has no CUDA GPU, I start the tool in CPU mode and it still asks for this."
    )
    assert top(text) == "FM-113"


def test_a_missing_cudnn_without_cpu_mode_is_not_fm113() -> None:
    text = "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object"
    assert "FM-113" not in rule_ids(text)


# ---------------------------------------------------------------- precision guards


def test_an_old_windows_named_next_to_windows_10_is_not_fm93() -> None:
    text = (
        "System.DllNotFoundException: Unable to load DLL 'onnxruntime': The specified module could not be found.\n"
        "   at Microsoft.ML.OnnxRuntime.NativeMethods..cctor()\nOS: Windows 8.1 x64, same on Windows 11"
    )
    ids = rule_ids(text)
    assert "FM-93" not in ids
    assert ids[0] == "FM-82"


def test_an_old_windows_alone_stays_fm93() -> None:
    text = (
        "System.DllNotFoundException: Unable to load DLL 'onnxruntime': The specified module could not be found.\n"
        "   at Microsoft.ML.OnnxRuntime.NativeMethods..cctor()\nOS: Windows 7 SP1 x64"
    )
    assert top(text) == "FM-93"


def test_ruby_require_is_not_a_wrapper_refusing_a_provider() -> None:
    text = (
        'require "onnxruntime"\nsess = OnnxRuntime::InferenceSession.new("m.onnx")\nsess.providers\n'
        '=> ["CUDAExecutionProvider", "CPUExecutionProvider"]\nbut it still computes on the CPU'
    )
    assert "FM-96" not in rule_ids(text)


def test_a_wrapper_saying_it_requires_onnxruntime_still_counts() -> None:
    text = (
        ">>> onnxruntime.get_available_providers()\n['CUDAExecutionProvider', 'CPUExecutionProvider']\n"
        "facekit: this feature requires onnxruntime, please install it"
    )
    assert top(text) == "FM-96"


def test_several_versions_installed_over_each_other_is_a_mixed_install_not_msvc() -> None:
    text = (
        "ImportError: cannot import name 'ModelCompiler' from 'onnxruntime.capi._pybind_state' "
        "(C:\\Python311\\Lib\\site-packages\\onnxruntime\\capi\\_pybind_state.py)\n"
        "I tried pip install onnxruntime==1.21.1 and then onnxruntime==1.22.0, same error"
    )
    ids = rule_ids(text)
    assert ids[0] == "FM-01"


def test_one_version_on_windows_stays_the_native_module_load() -> None:
    text = (
        "ImportError: cannot import name 'get_all_providers' from 'onnxruntime.capi._pybind_state' "
        "(C:\\Python38\\lib\\site-packages\\onnxruntime\\capi\\_pybind_state.py)\npip install onnxruntime==1.4.0"
    )
    assert top(text) == "FM-28"


# ---------------------------------------------------------------- FM-03: a binding given no provider


@pytest.mark.parametrize(
    "text",
    [
        'var session = new InferenceSession("detector.onnx");\nOrtEnv.Instance().GetAvailableProviders() gives '
        '["CUDAExecutionProvider", "CPUExecutionProvider"]\nyet it only runs on the CPU, the GPU is never used',
        'sess = OnnxRuntime::InferenceSession.new("seg.onnx")\nCUDAExecutionProvider is available in this build '
        "but inference is still using the CPU",
    ],
)
def test_a_session_created_without_any_provider_while_cuda_is_available_is_fm03(text: str) -> None:
    assert top(text) == "FM-03"


@pytest.mark.parametrize(
    "text",
    [
        # the provider was passed: another problem, not this one
        "s = ort.InferenceSession('m.onnx', providers=['CUDAExecutionProvider'])\n"
        "['CUDAExecutionProvider', 'CPUExecutionProvider']\nstill using the CPU",
        # no word that the run is on the CPU
        'session = InferenceSession("m.onnx")\n["CUDAExecutionProvider", "CPUExecutionProvider"]\nit is fast',
    ],
)
def test_a_session_with_providers_or_no_cpu_claim_is_not_the_missing_provider_rule(text: str) -> None:
    assert "FM-03" not in rule_ids(text)


# ---------------------------------------------------------------- FM-135: the CUDA runtime older than the build


def test_a_kernel_symbol_not_found_while_running_a_node_is_fm135() -> None:
    text = (
        "2025-06-01 [E:onnxruntime:, sequential_executor.cc:516 ExecuteKernel] Non-zero status code returned while "
        "running LayerNormalization node. Name:'/blocks.3/norm1/LayerNorm' Status Message: CUDA error "
        "cudaErrorSymbolNotFound:named symbol not found"
    )
    assert top(text) == "FM-135"


def test_other_cuda_errors_are_not_fm135() -> None:
    text = (
        "Non-zero status code returned while running Conv node. Name:'conv1' Status Message: CUDA error "
        "cudaErrorNoKernelImageForDevice:no kernel image is available for execution on the device"
    )
    assert "FM-135" not in rule_ids(text)


# ---------------------------------------------------------------- a library said absent next to a listing


def test_a_cudnn_major_said_absent_next_to_a_listing_of_another_major_is_that_library_missing() -> None:
    text = (
        "The plugin hangs with CUDA. My guess: I don't have libcudnn.so.9 at all.\n$ ls /usr/local/cuda/lib64 | "
        "grep cudnn\nlibcudnn.so.8\nlibcudnn_cnn_infer.so.8\nlibcudnn_ops_infer.so.8"
    )
    assert top(text) == "FM-12"


@pytest.mark.parametrize(
    "text",
    [
        # no listing: a guess alone decides nothing
        "maybe the problem is that I don't have libcudnn.so.9? the plugin hangs with CUDA",
        # the listing shows the very major said absent: the guess is contradicted
        "I don't have libcudnn.so.9 I think\n$ ldconfig -p | grep cudnn\n"
        "libcudnn_ops.so.9 => /usr/lib/libcudnn_ops.so.9",
    ],
)
def test_a_library_said_absent_without_a_contrary_listing_is_not_a_missing_library(text: str) -> None:
    assert "FM-12" not in rule_ids(text)


# ---------------------------------------------------------------- FM-136: no asynchronous copy in a mixed session


def test_copy_tensor_async_not_implemented_is_fm136() -> None:
    text = (
        "calib.py: running the augmented model with providers TensorrtExecutionProvider, CUDAExecutionProvider, "
        "CPUExecutionProvider\nOrt::Exception: CopyTensorAsync is not implemented"
    )
    assert top(text) == "FM-136"


# ---------------------------------------------------------------- a Jetson wheel's import failing is no mixed install


def test_a_jetson_wheel_failing_to_import_is_not_a_mixed_install() -> None:
    text = (
        "Orin container (l4t-base r35), wheel from the Jetson download page:\n>>> import onnxruntime\n"
        "ImportError: cannot import name 'get_all_providers' from 'onnxruntime.capi._pybind_state' "
        "(/usr/local/lib/python3.8/dist-packages/onnxruntime/capi/_pybind_state.py)"
    )
    assert "FM-01" not in rule_ids(text)


def test_the_same_import_failing_on_a_linux_pc_stays_a_broken_install() -> None:
    text = (
        ">>> import onnxruntime\nImportError: cannot import name 'get_all_providers' from "
        "'onnxruntime.capi._pybind_state' (/usr/local/lib/python3.8/dist-packages/onnxruntime/capi/_pybind_state.py)"
    )
    assert top(text) == "FM-01"
