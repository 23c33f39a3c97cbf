"""The thirteenth widening of explain: a GPU provider library that failed to load with its reason cut off, garbled or
absent (decided by platform and wording), and ORT's benign warnings of working runs as one family. Texts are composed,
not copied from any labelled set; the learned fallback is off so that the rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

from ortgpu.explain import PasteKind, explain

# ---------------------------------------------------------------- 1. a provider library's load failure, reason lost


def _spaced(text: str) -> str:
    """What a UTF-16 log read as bytes looks like: a space after every character."""
    return " ".join(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # ORT >= 1.22's own words, the line cut right after the path
            "2025-06-02 09:14:03.5512 [E:onnxruntime:Default, provider_bridge_ort.cc:2195 onnxruntime::TryGetProvider"
            "Info_CUDA] D:\\a\\_work\\1\\s\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1778 onnxruntime::"
            'ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : Error loading "E:\\tools\\comfy\\python_embeded\\'
            'Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"',
            "FM-22",
        ),
        (  # a wide-character log whose middle is unreadable, letter-spaced
            "My launcher prints this twice when it starts:\n" + _spaced("Error ... onnxruntime_providers_cuda.dll"),
            "FM-21",
        ),
        (  # letter-spaced, quoted and elided by the user ("..."), so the alternation of spaces is broken
            "each launch shows, in a terminal window:\n'"
            + " ".join("Error")
            + " ... "
            + _spaced("onnxruntime_providers_cuda.dll")
            + "'",
            "FM-21",
        ),
        (  # prose only
            "After upgrading the wheel, my app can't load onnxruntime_providers_cuda.dll any more and runs on the CPU.",
            "FM-21",
        ),
        (  # the library first, then the failure
            "onnxruntime_providers_cuda.dll could not be loaded, so inference silently uses the CPU provider",
            "FM-21",
        ),
        (  # the TensorRT provider DLL, reason lost
            'FAIL : Error loading "C:\\deploy\\bin\\onnxruntime_providers_tensorrt.dll"',
            "FM-59",
        ),
        (  # Linux, cut before "with error:"
            "[E:onnxruntime:Default, provider_bridge_ort.cc:1848 TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/"
            "core/session/provider_bridge_ort.cc:1539 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() "
            "[ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so",
            "FM-71",
        ),
        (  # Linux, TensorRT, "with error:" and nothing after it
            "Failed to load library libonnxruntime_providers_tensorrt.so with error: ",
            "FM-71",
        ),
    ],
)
def test_a_provider_load_failure_without_its_reason_is_decided_by_platform_and_wording(
    text: str, expected: str
) -> None:
    assert top(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # the reason IS named: the specific rule decides (the DLL named, not the cut-off answer)
            'FAIL : Error loading "C:\\w\\onnxruntime_providers_cuda.dll" which depends on "cufft64_11.dll" which is '
            'missing. (Error 126: "The specified module could not be found.")',
            "FM-22",
        ),
        (
            "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn_adv.so.9: cannot open "
            "shared object file: No such file or directory",
            "FM-13",  # the cuDNN library named: cuDNN's own entry
        ),
        (
            "Failed to load library libonnxruntime_providers_cuda.so with error: /opt/ort/lib/libonnxruntime_providers"
            "_cuda.so: undefined symbol: cudnnGetLastErrorString",  # cuDNN 9's only: an older cuDNN loaded (a mix)
            "FM-72",
        ),
    ],
)
def test_a_named_reason_is_left_to_the_specific_rules(text: str, expected: str) -> None:
    assert top(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I copied onnxruntime_providers_cuda.dll next to my exe and now everything works.",
        "The wheel ships onnxruntime_providers_cuda.dll and onnxruntime_providers_shared.dll in capi/.",
        "Error loading the model weights from disk; the file onnxruntime_providers_cuda.dll is present and fine",
        "failed to load onnxruntime_providers_cuda.dll.bak (a backup I renamed)",
    ],
)
def test_a_provider_library_merely_named_is_not_a_load_failure(text: str) -> None:
    assert not any(i in ("FM-21", "FM-22", "FM-59", "FM-71") for i in rule_ids(text))


# ---------------------------------------------------------------- 2. ORT's benign warnings


@pytest.mark.parametrize(
    "text",
    [
        "2023-03-09 11:20:31.771 [W:onnxruntime:, execution_frame.cc:812 VerifyOutputSizes] Expected shape from model "
        "of {-1,25} does not match actual shape of {3,40} for output logits",
        "[W:onnxruntime:, graph.cc:1271 Graph] Initializer backbone.fc.bias appears in graph inputs and will not be "
        "treated as constant value/weight. This may prevent some of the graph optimizations, like const folding.",
        "[W:onnxruntime:, graph.cc:3490 CleanUnusedInitializersAndNodeArgs] Removing initializer 'head.scale'. It is "
        "not used by any node and should be removed from the model.",
        "[W:onnxruntime:Default, cpuid_info.cc:91 LogEarlyWarning] Unknown CPU vendor. cpuinfo_vendor value: 0",
        "[E:onnxruntime:Default, env.cc:228 ThreadMain] pthread_setaffinity_np failed for thread: 77, index: 3, mask: "
        "{4, 5, }, error code: 22 error msg: Invalid argument. Specify the number of threads explicitly so the "
        "affinity is not set.",
        "[W:onnxruntime:Default, device_discovery.cc:164 DiscoverDevicesForPlatform] GPU device discovery failed: "
        'device_discovery.cc:89 ReadFileContents Failed to open file: "/sys/class/drm/card1/device/vendor"',
    ],
)
def test_a_benign_ort_warning_alone_is_benign(text: str) -> None:
    result = explain(text, closest=False)
    assert [m.id for m in result.matches][:1] == ["FM-65"]
    assert result.verdict is PasteKind.BENIGN


def test_a_benign_warning_next_to_a_real_error_does_not_hide_it() -> None:
    text = (
        "[W:onnxruntime:, graph.cc:1271 Graph] Initializer w0 appears in graph inputs and will not be treated as "
        "constant value/weight.\n"
        "[E:onnxruntime:Default, cuda_call.cc:118 CudaCall] CUDA failure 100: no CUDA-capable device is detected ; "
        "GPU=0 ; hostname=box ; expr=cudaSetDevice(info_.device_id);"
    )
    assert top(text) != "FM-65"


def test_a_warning_word_in_prose_is_not_claimed_as_benign() -> None:
    assert "FM-65" not in rule_ids("the expected shape of my output differs from the actual shape after export")


# ---------------------------------------------------------------- 3. a Triton backend built for another server release


@pytest.mark.parametrize("backend", ["onnxruntime", "tensorrt", "python"])
def test_a_triton_backend_of_another_release_is_fm_102(backend: str) -> None:
    text = (
        "E0807 10:22:41.001 1 model_lifecycle.cc:621] failed to load 'ranker' version 3: Unsupported: Triton "
        f"TRITONBACKEND API version: 1.11 does not support '{backend}' TRITONBACKEND API version: 1.18"
    )
    assert top(text) == "FM-102"


def test_a_triton_api_version_merely_mentioned_is_not_fm_102() -> None:
    assert "FM-102" not in rule_ids("Our server reports TRITONBACKEND API version 1.16 in its startup banner.")


# ---------------------------------------------------------------- 4. a provider library built without a CUDA library


@pytest.mark.parametrize("symbol", ["nvrtcCompileProgram", "cudnnCreate", "cublasCreate_v2", "curandCreateGenerator"])
def test_an_undefined_base_api_symbol_in_the_provider_is_an_underlinked_build(symbol: str) -> None:
    text = (
        "building onnxruntime 1.21 from our distro recipe; at run time:\n"
        "Failed to load library /usr/lib64/libonnxruntime_providers_cuda.so with error: "
        f"/usr/lib64/libonnxruntime_providers_cuda.so: undefined symbol: {symbol}"
    )
    assert top(text) == "FM-103"


@pytest.mark.parametrize(
    "text",
    [  # a symbol only some releases have: two versions mixed (FM-72), not an under-linked build
        "/opt/app/libonnxruntime_providers_cuda.so: undefined symbol: cudnnGetRNNDescriptor_v6",
        "symbol cublasLtGetVersion version libcublasLt.so.12 not defined in file libcublasLt.so.12 with link time "
        "reference",
        "ImportError: /site-packages/onnxruntime/capi/libonnxruntime_providers_cuda.so: undefined symbol: "
        "nvrtcGetNVVMSize",
    ],
)
def test_a_symbol_of_some_releases_only_stays_a_version_mix(text: str) -> None:
    assert top(text) == "FM-72"
