"""Structure over phrasing: new wordings of known problems are diagnosed from library names, provider lists,
package listings, cuDNN statuses, TensorRT errors and fp16 numbers; mangled text is repaired first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.explain_top import top_with_library

from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge.matcher import find_hits
from ortgpu.knowledge.paste import prepare
from ortgpu.knowledge.signals import SignalKind, extract_signals
from ortgpu.knowledge.text import repair

# ---------------------------------------------------------------- missing libraries, any wording


@pytest.mark.parametrize(
    ("text", "entry", "lib"),
    [
        # wordings no knowledge-base pattern was written for: the library name and a loader failure suffice
        (
            "ImportError: libcudnn_graph.so.9: cannot open shared object file: No such file or directory",
            "FM-13",
            "libcudnn_graph.so.9",
        ),
        (
            "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object "
            "file",
            "FM-11",
            "libcudnn_cnn_infer.so.8",
        ),
        (
            "RuntimeError: Unable to load DLL 'cublasLt64_13.dll': The specified module could not be found.",
            "FM-22",
            "cublasLt64_13.dll",
        ),
        ("kernel32.LoadLibrary():'cudart64_110.dll' not found", "FM-22", "cudart64_110.dll"),
        ("The reason is that nvinfer_10.dll cannot be located.", "FM-59", "nvinfer_10.dll"),
        (
            "OSError: libnvinfer_plugin.so.10: cannot open shared object file: No such file or directory",
            "FM-58",
            "libnvinfer_plugin.so.10",
        ),
        (
            "Failed to load library libonnxruntime_providers_cuda.so with error: libcufft.so.12: cannot open shared "
            "object file",
            "FM-67",
            "libcufft.so.12",
        ),
        ("UserWarning: Could not locate zlibwapi.dll, falling back", "FM-24", "zlibwapi.dll"),
        ('depends on "vcruntime140_1.dll" which is missing', "FM-28", "vcruntime140_1.dll"),
        ("libcuda.so.1: cannot open shared object file", "FM-70", "libcuda.so.1"),
        # a CUDA major no ORT build in the matrix uses: still named, with what that means
        ("OSError: libcudart.so.10.1: cannot open shared object file", "FM-71", "libcudart.so.10.1"),
    ],
)
def test_a_missing_library_is_mapped_by_its_name(text: str, entry: str, lib: str) -> None:
    assert top_with_library(text) == (entry, lib)


def test_the_library_named_by_the_loader_is_not_the_culprit() -> None:
    text = (
        "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared "
        "object file: No such file or directory"
    )
    signals = [s for s in extract_signals(prepare(text)) if s.kind is SignalKind.MISSING_LIBRARY]
    assert [s.values["lib"] for s in signals] == ["libcublasLt.so.12"]
    assert signals[0].attributes["major"] == 12 and signals[0].attributes["family"] == "cuda"


def test_cuda_9_dll_names_carry_major_and_minor() -> None:
    top = explain("Message=[ErrorCode:NoSuchFile] kernel32.LoadLibrary():'cublas64_91.dll' not found.").matches[0]
    assert top.library == "cublas64_91.dll"
    assert "CUDA 9" in top.detail and "no ORT release" in top.detail


def test_the_detail_names_the_builds_that_need_the_library() -> None:
    top = explain("ImportError: libcublasLt.so.12: cannot open shared object file").matches[0]
    assert top.id == "FM-10" and top.matched_by in ("pattern", "structure")
    assert "CUDA 12 builds" in top.detail and "1.19" in top.detail


# ---------------------------------------------------------------- CPU package, wrapped or as a transcript


def test_provider_message_wrapped_at_any_column_is_recognised() -> None:
    message = (
        "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available "
        "providers: 'AzureExecutionProvider, CPUExecutionProvider'"
    )
    for width in (37, 53, 61, 77):  # mid-word breaks, no two lines of one length in the short ones
        wrapped = "\n".join(message[i : i + width] for i in range(0, len(message), width))
        assert top_with_library(wrapped)[0] == "FM-02", width


def test_repl_transcript_with_cpu_only_providers_is_the_cpu_package() -> None:
    transcript = (
        ">>> import onnxruntime as ort\n>>> ort.get_device()\n'CPU'\n>>> ort.get_available_providers()\n"
        "['AzureExecutionProvider', 'CPUExecutionProvider']\n"
    )
    result = explain(transcript)
    assert result.verdict is PasteKind.GPU_PROBLEM and result.matches[0].id == "FM-02"
    assert "CPU build" in result.matches[0].detail


def test_repl_with_a_gpu_provider_listed_is_not_the_cpu_package() -> None:
    transcript = (
        ">>> ort.get_available_providers()\n['TensorrtExecutionProvider', 'CUDAExecutionProvider', "
        "'CPUExecutionProvider']\nApplied providers: ['CPUExecutionProvider']"
    )
    assert all(m.id != "FM-02" for m in explain(transcript).matches)


def test_an_apps_provider_choices_without_cuda_are_the_cpu_package() -> None:
    text = "run.py: error: argument --execution-provider: invalid choice: 'cuda' (choose from 'azure', 'cpu')"
    assert top_with_library(text)[0] == "FM-02"


def test_pip_listing_with_both_packages_is_the_shadowing_problem() -> None:
    listing = "Package          Version\nnumpy            1.26.4\nonnxruntime      1.17.1\nonnxruntime-gpu  1.20.1\n"
    result = explain(listing + "only CPUExecutionProvider is used")
    assert result.matches[0].id == "FM-01"
    assert "onnxruntime, onnxruntime-gpu" in result.matches[0].detail


def test_onnxruntime_tools_next_to_onnxruntime_gpu_is_not_a_conflict() -> None:
    listing = "onnxruntime-gpu 1.20.1\nonnxruntime-tools 1.7.0\n"
    assert all(s.kind is not SignalKind.BOTH_PACKAGES for s in extract_signals(prepare(listing)))


# ---------------------------------------------------------------- mangled text


def test_utf16_read_as_bytes_is_decoded() -> None:
    message = 'Error loading "C:\\x\\onnxruntime_providers_cuda.dll" which depends on "cudnn64_9.dll" which is missing.'
    as_bytes = message.encode("utf-16-le").decode("latin-1")  # NULs between the letters
    assert top_with_library(as_bytes) == ("FM-22", "cudnn64_9.dll")
    spaced = as_bytes.replace("\x00", " ")  # the same log after a tool turned the NULs into spaces
    assert top_with_library(spaced) == ("FM-22", "cudnn64_9.dll")


def test_ansi_colours_and_windows_paths_do_not_hide_the_library() -> None:
    text = (
        '\x1b[1;31mError loading "D:\\AI\\ComfyUI\\venv\\Lib\\site-packages\\onnxruntime\\capi\\'
        'onnxruntime_providers_cuda.dll" which depends on "cublasLt64_12.dll" which is missing.\x1b[0m'
    )
    top = explain(text).matches[0]
    assert (top.id, top.library) == ("FM-22", "cublasLt64_12.dll")
    assert "CUDA 12" in top.detail


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("libcudnn.so.9: 共有オブジェクトファイルを開けません: そのようなファイルやディレクトリはありません", "FM-12"),
        ("libcublasLt.so.11: 无法打开共享对象文件: 没有那个文件或目录", "FM-08"),
        ("libcudart.so.12: Kann die Shared-Object-Datei nicht öffnen: Datei oder Verzeichnis nicht gefunden", "FM-10"),
        (
            'エラー: Error loading "C:\\a\\onnxruntime_providers_cuda.dll" which depends on "cudnn64_9.dll" which is '
            'missing. (Error 126: "指定されたモジュールが見つかりません。")',
            "FM-22",
        ),
    ],
)
def test_localised_os_messages_around_the_english_part(text: str, entry: str) -> None:
    assert top_with_library(text)[0] == entry


def test_repair_keeps_ordinary_text() -> None:
    text = "LoadLibrary failed with error 126 when trying to load x.dll\nsecond line"
    assert repair(text) == text


# ---------------------------------------------------------------- cuDNN, TensorRT, fp16


def test_cudnn_failure_names_the_onnx_op_of_the_failing_node() -> None:
    text = (
        "[E:onnxruntime:, sequential_executor.cc:516 ExecuteKernel] Non-zero status code returned while running "
        "ConvTranspose node. Name:'/up3/ConvTranspose' Status Message: CUDNN failure 5003: "
        "CUDNN_STATUS_EXECUTION_FAILED_CUDART ; GPU=0"
    )
    top = explain(text).matches[0]
    assert top.id == "FM-43"
    assert "ConvTranspose '/up3/ConvTranspose'" in top.detail and "ONNX op ConvTranspose" in top.detail
    assert "CUDNN_STATUS_EXECUTION_FAILED_CUDART" in top.detail


def test_a_fused_node_is_traced_to_the_onnx_op_it_replaces() -> None:
    text = (
        "Non-zero status code returned while running If node. Name:'If_25' Status Message: Non-zero status code "
        "returned while running FusedConv node. Name:'Conv_139' Status Message: CUDNN failure 3: "
        "CUDNN_STATUS_BAD_PARAM"
    )
    detail = explain(text).matches[0].detail
    assert "FusedConv 'Conv_139'" in detail and "Conv (fused by ORT" in detail and "ORT_ENABLE_BASIC" in detail


def test_cudnn_not_initialised_under_cudnn_9_numbering() -> None:
    assert top_with_library("Status Message: CUDNN failure 1001: CUDNN_STATUS_NOT_INITIALIZED ; GPU=0")[0] == "FM-42"


@pytest.mark.parametrize(
    "text",
    [
        "[TensorRT] ERROR: Network has dynamic or shape inputs, but no optimization profile has been defined.",
        "EP_FAIL : Users need to specify all the dynamic shape inputs with associated profiles if they want to "
        "explicitly specify profiles through provider options.",
        "[E] [TRT] input_image: dynamic input is missing dimensions in profile 0.",
    ],
)
def test_tensorrt_dynamic_shapes_without_profiles(text: str) -> None:
    result = explain(text)
    assert result.matches[0].id == "FM-73"
    assert "trt_profile_min_shapes" in result.matches[0].fix


def test_tensorrt_unsupported_op_names_the_op() -> None:
    text = (
        "[E:onnxruntime:Default, tensorrt_execution_provider.h:51 log] [2021-05-25 09:13:26   ERROR] "
        "INVALID_ARGUMENT: getPluginCreator could not find plugin NonMaxSuppression version 1"
    )
    top = explain(text).matches[0]
    assert top.id == "FM-74" and "NonMaxSuppression" in top.detail


def test_unsupported_wording_outside_tensorrt_is_not_a_tensorrt_problem() -> None:
    assert all(m.id != "FM-74" for m in explain("operator Foo is not supported by this exporter").matches)


def test_fp16_overflow_in_prose_with_numbers_and_ops() -> None:
    text = (
        "After converting to float16 the logits are all NaN.\n"
        "The ReduceMean before the LayerNorm reaches 131,072 in fp32 runs."
    )
    top = explain(text).matches[0]
    assert top.id == "FM-52"
    assert "131,072" in top.detail and "ReduceMean" in top.detail and "65504" in top.detail


def test_fp16_mentioned_without_bad_values_is_not_an_overflow() -> None:
    assert all(m.id != "FM-52" for m in explain("I converted the model to fp16 and it is 2x faster").matches)


# ---------------------------------------------------------------- the dev half of the real pastes


DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "explain_pastes.json"
_DOC = json.loads(DATA.read_text(encoding="utf-8"))
_NEW = {"NEW:trt_profile": "FM-73", "NEW:trt_unsupported_op": "FM-74"}
DEV = [p for p in _DOC["pastes"] if p["split"] == "dev"]  # the held-out half is never used in tests


@pytest.mark.parametrize("paste", DEV, ids=[p["id"] for p in DEV])
def test_dev_pastes_get_their_expected_diagnosis(paste: dict) -> None:
    hits = find_hits(paste["text"])
    assert hits, paste["source"]
    assert hits[0].entry.id in {_NEW.get(e, e) for e in paste["expected"]}, paste["source"]


# ---------------------------------------------------------------- rules added after the held-out measurement


def test_an_apps_not_available_check_is_the_cpu_package() -> None:
    assert top_with_library("Detector error: TensorrtExecutionProvider is not avaliable in onnxruntime")[0] == "FM-02"


def test_a_library_named_after_missing() -> None:
    text = "the TensorRT provider fails because of the missing 'libnvinfer.so.10' in the container"
    assert top_with_library(text) == (
        "FM-58",
        "libnvinfer.so.10",
    )


def test_the_available_list_is_read_apart_from_the_requested_provider() -> None:
    text = (
        "ValueError: Asked to use TensorrtExecutionProvider, but the available execution providers are "
        "['CPUExecutionProvider']."
    )
    assert top_with_library(text)[0] == "FM-02"


def test_the_bare_error_126_line_is_the_cuda_provider_dll() -> None:
    assert top_with_library("FAIL : LoadLibrary failed with error 126")[0] == "FM-21"
    tensorrt = 'LoadLibrary failed with error 126 "" when trying to load "C:\\x\\onnxruntime_providers_tensorrt.dll"'
    assert top_with_library(tensorrt)[0] == "FM-59"
