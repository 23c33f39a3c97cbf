"""The fourteenth widening of explain: a CPU without the build's instruction set, custom-op libraries that do not load
or are not ORT's, musl libc, a binding that cannot hold an empty output, onnxruntime-genai older than the model,
onnxruntime-node's CUDA install script, a Windows older than 10, a DLL start-up failure outside CUDA, and the shared
provider library missing. Texts are composed, not copied from any labelled
set; the rules decide (the closest-entry fallback is off), and each family has guards: the same words, another problem.
"""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids

from ortgpu.explain import explain


def rule_top(text: str) -> str | None:
    """explain's first match by its rules alone (no closest-entry fallback), or None."""
    result = explain(text, closest=False)
    return result.matches[0].id if result.matches else None


# ---------------------------------------------------------------- FM-104: the CPU lacks an instruction set


@pytest.mark.parametrize(
    "text",
    [
        "$ python3 detect.py --weights yolo.onnx\nIllegal instruction",
        "After upgrading onnxruntime to the new release the container exits: Fatal Python error: "
        "Illegal instruction\nCurrent thread 0x00007f (most recent call first):\n"
        "  File onnxruntime/capi/_pybind_state.py",
        "subprocess.CalledProcessError: Command '['/venv/bin/python', 'tts.py', '--voice', 'en.onnx']' "
        "died with <Signals.SIGILL: 4>.",
        "Process finished with exit code -1073741795 (0xC000001D)\n(the script only creates ort.InferenceSession for "
        "model.onnx)",
        "The CPU (a Celeron N4020) does not support AVX2, and importing onnxruntime kills the interpreter.",
    ],
)
def test_a_process_killed_by_an_illegal_cpu_instruction_is_the_build_baseline(text: str) -> None:
    assert rule_top(text) == "FM-104"


@pytest.mark.parametrize(
    "text",
    [
        # CUDA's own illegal instruction is a GPU kernel fault (error 715), not the CPU's
        "onnxruntime.capi.onnxruntime_pybind11_state.Fail: CUDA error cudaErrorIllegalInstruction: an illegal "
        "instruction was encountered",
        # not about onnxruntime at all
        "Illegal instruction (core dumped) when I run tensorflow on the old laptop",
    ],
)
def test_illegal_instruction_words_elsewhere_are_not_the_cpu_baseline(text: str) -> None:
    assert "FM-104" not in rule_ids(text)


# ---------------------------------------------------------------- FM-105 / FM-106: custom-op libraries


@pytest.mark.parametrize(
    "text",
    [
        'Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:Fail] LoadLibrary failed with error 126 "" '
        'when trying to load "D:\\tools\\app\\custom_tokenizer_ops.dll"',
        "so.register_custom_ops_library('./libmyops.so')\nonnxruntime.capi.onnxruntime_pybind11_state.Fail: "
        "[ONNXRuntimeError] : 1 : FAIL : Failed to load library ./libmyops.so with error: ./libmyops.so: cannot "
        "open shared object file: No such file or directory",
        "Caused by: ai.onnxruntime.OrtException: Error code - ORT_FAIL - message: Failed to load library "
        "/opt/models/libortextensions.so with error: libopencv_core.so.4.5: cannot open shared object file",
    ],
)
def test_a_custom_op_library_the_loader_cannot_load(text: str) -> None:
    assert rule_top(text) == "FM-105"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # the provider bridge uses the same words for ORT's own provider libraries
        (
            "provider_bridge_ort.cc:1209 onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : "
            'LoadLibrary failed with error 126 "" when trying to load "C:\\app\\onnxruntime_providers_cuda.dll"',
            "FM-105",
        ),
        # a custom-op library that loaded, missing onnxruntime's own library: the binding's load
        (
            "Failed to load library /usr/lib/mmdeploy/libmmdeploy_onnxruntime_ops.so with error: "
            "libonnxruntime.so.1.8.1: cannot open shared object file: No such file or directory",
            "FM-105",
        ),
    ],
)
def test_provider_and_ort_library_loads_are_not_custom_op_libraries(text: str, not_expected: str) -> None:
    assert rule_top(text) != not_expected


@pytest.mark.parametrize(
    "text",
    [
        "onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : Failed to get symbol "
        "RegisterCustomOps with error: /home/u/ext/relu_ext.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
        "RegisterCustomOps",
        "The library loads but ORT says: undefined symbol: RegisterCustomOps",
    ],
)
def test_a_library_without_the_registercustomops_entry_point_is_not_an_ort_custom_op_library(text: str) -> None:
    assert rule_top(text) == "FM-106"


def test_registercustomopslibrary_in_a_working_snippet_is_not_a_missing_entry_point() -> None:
    text = "I call RegisterCustomOpsLibrary_V2 and then the run fails with Non-zero status code returned while running"
    assert "FM-106" not in rule_ids(text)


# ---------------------------------------------------------------- FM-107: musl libc


@pytest.mark.parametrize(
    "text",
    [
        "Error: Error loading shared library ld-linux-aarch64.so.1: No such file or directory (needed by "
        "/srv/node_modules/onnxruntime-node/bin/napi-v3/linux/arm64/libonnxruntime.so.1.16.0)",
        "ImportError: Error relocating /usr/local/lib/python3.12/site-packages/onnxruntime/capi/"
        "onnxruntime_pybind11_state.so: __sprintf_chk: symbol not found",
    ],
)
def test_glibc_builds_on_musl_are_the_musl_entry(text: str) -> None:
    assert rule_top(text) == "FM-107"


def test_a_missing_onnxruntime_library_on_glibc_stays_the_binding_load() -> None:
    text = (
        "Error: libonnxruntime.so.1.14.0: cannot open shared object file: No such file or directory\n"
        "    at Object.Module._extensions..node (node:internal/modules/cjs/loader:1189:18) "
        "{ code: 'ERR_DLOPEN_FAILED' }"
    )
    assert rule_top(text) == "FM-82"


# ---------------------------------------------------------------- FM-108: a binding cannot hold an empty output


@pytest.mark.parametrize(
    "text",
    [
        "ai.onnxruntime.OrtException: This tensor is not representable in Java, it's too big - shape = [1, 0, 85]",
        "err: Error creating tensor from ort: Invalid tensor shape: Dimension 1 of the shape has invalid value 0",
    ],
)
def test_a_zero_length_output_the_binding_cannot_wrap(text: str) -> None:
    assert rule_top(text) == "FM-108"


def test_a_zero_dimension_in_ort_s_own_run_error_is_not_the_binding() -> None:
    text = (
        "ai.onnxruntime.OrtException: Error code - ORT_INVALID_ARGUMENT - message: Got invalid dimensions for "
        "input: images for the following indices index: 0 Got: 0 Expected: 1 shape = [0, 3]"
    )
    assert "FM-108" not in rule_ids(text)


# ---------------------------------------------------------------- FM-109: onnxruntime-genai older than the model


@pytest.mark.parametrize(
    "text",
    [
        "    model = og.Model('./gemma-onnx')\nRuntimeError: Unsupported model_type in config.json: gemma3_text",
        "RuntimeError: Error encountered while parsing './phi-mini/genai_config.json' JSON Error: Unknown value: "
        "rope_scaling at line 1 index 412",
    ],
)
def test_a_genai_package_older_than_the_model(text: str) -> None:
    assert rule_top(text) == "FM-109"


def test_a_transformers_config_error_is_not_genai() -> None:
    text = "ValueError: Unrecognized model in ./m. Should have a `model_type` key in its config.json"
    assert "FM-109" not in rule_ids(text)


# ---------------------------------------------------------------- FM-110: onnxruntime-node's CUDA install script


@pytest.mark.parametrize(
    "text",
    [
        "npm ERR! path /builds/web/node_modules/onnxruntime-node\nnpm ERR! command failed\n"
        "npm ERR! command sh -c node ./script/install\nnpm ERR! Error: getaddrinfo ENOTFOUND api.nuget.org",
        "Error: Failed to find runtimes/linux-x64/native/libonnxruntime_providers_tensorrt.so in NuGet package",
    ],
)
def test_onnxruntime_node_s_install_script_failing(text: str) -> None:
    assert rule_top(text) == "FM-110"


def test_onnxruntime_node_failing_at_run_time_is_not_the_install_script() -> None:
    text = (
        "Error: libonnxruntime_providers_cuda.so: cannot open shared object file (needed by "
        "/app/node_modules/onnxruntime-node/bin/napi-v3/linux/x64/onnxruntime_binding.node)"
    )
    assert "FM-110" not in rule_ids(text)


# ---------------------------------------------------------------- FM-93: Windows older than 10 (old_windows)


@pytest.mark.parametrize(
    "text",
    [
        "Unhandled exception. System.TypeInitializationException: The type initializer for "
        "'Microsoft.ML.OnnxRuntime.NativeMethods' threw an exception.\nThe customer PC runs Windows 8.1.",
        "win7系统上报错: System.DllNotFoundException: Unable to load DLL 'onnxruntime.dll'",
    ],
)
def test_ort_s_own_library_failing_on_a_windows_older_than_10(text: str) -> None:
    assert rule_top(text) == "FM-93"


def test_windows_10_with_the_same_failure_stays_the_binding_load() -> None:
    text = (
        "System.TypeInitializationException: The type initializer for 'Microsoft.ML.OnnxRuntime.NativeMethods' "
        "threw an exception.\nOS: Windows 10 22H2"
    )
    assert rule_top(text) == "FM-82"


# ---------------------------------------------------------------- FM-28: a DLL's start-up failing outside CUDA


def test_genai_s_cuda_path_hint_after_a_dll_init_failure_is_no_cuda_evidence() -> None:
    text = (
        "ImportError: DLL load failed while importing onnxruntime_genai: A dynamic link library (DLL) "
        "initialization routine failed.\n\nDuring handling of the above exception, another exception occurred:\n"
        "ImportError: Could not find the CUDA libraries. Please set the CUDA_PATH environment variable."
    )
    assert rule_top(text) == "FM-28"


def test_a_dll_init_failure_loading_the_cuda_provider_stays_fm78() -> None:
    text = (
        'LoadLibrary failed with error 1114 "" when trying to load '
        '"C:\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"'
    )
    assert rule_top(text) == "FM-78"


# ---------------------------------------------------------------- FM-31: the shared provider library


def test_a_load_failure_followed_by_init_provider_bridge_failed_is_providers_shared() -> None:
    text = (
        "2024-02-01 10:00:00.1 [E:onnxruntime:Default, provider_bridge_ort.cc:1103 "
        "onnxruntime::ProviderSharedLibrary::Ensure] Failed to load library, error code: 126\n"
        "2024-02-01 10:00:00.2 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:1700 "
        "onnxruntime::python::pybind11_init_onnxruntime_pybind11_state] Init provider bridge failed."
    )
    assert rule_top(text) == "FM-31"


def test_error_126_alone_stays_the_cuda_provider_dependency() -> None:
    assert rule_top("Failed to load library, error code: 126") == "FM-21"
