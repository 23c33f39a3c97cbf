"""Problem shapes over wordings: a missing library, a CUDA-library status, an EP's missing kernel, an installer with no
wheel, an app's own "no GPU provider" line, a TensorRT logger error, each in wordings no entry pattern was written for;
and the guards that keep ordinary lines from becoming GPU problems."""

from __future__ import annotations

import pytest

from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge.paste import prepare
from ortgpu.knowledge.signals import SignalKind, extract_signals


def _top(text: str) -> tuple[str | None, str | None]:
    result = explain(text)
    if not result.matches:
        return None, None
    return result.matches[0].id, result.matches[0].library


# ---------------------------------------------------------------- 1. a missing library, any wording


@pytest.mark.parametrize(
    ("text", "entry", "lib"),
    [
        # an app's short form of the Windows loader message: the provider DLL first, the culprit after it
        ("Failed loading onnxruntime_providers_cuda.dll: cudnn64_9.dll is missing", "FM-22", "cudnn64_9.dll"),
        ("error: onnxruntime_providers_cuda.dll -> cufft64_11.dll not found", "FM-22", "cufft64_11.dll"),
        # a loader that lists every name it tried, most specific first
        (
            "Could not load any of [libcudnn_cnn.so.9.2.1, libcudnn_cnn.so.9, libcudnn_cnn.so]",
            "FM-13",
            "libcudnn_cnn.so.9.2.1",
        ),
        ("Unable to find one of {libcudnn.so.8.9.7, libcudnn.so.8, libcudnn.so}", "FM-11", "libcudnn.so.8.9.7"),
        (
            "./server: error while loading shared libraries: libcurand.so.10: wrong ELF class",
            "FM-15",
            "libcurand.so.10",
        ),
        ("we could not find libnvrtc.so.12 on this box", "FM-17", "libnvrtc.so.12"),
        ("[loader] failed to load /opt/cuda/lib64/libcudart.so.13", "FM-67", "libcudart.so.13"),
        ("Warning: cublas64_12.dll could not be loaded, GPU disabled", "FM-22", "cublas64_12.dll"),
        ("dlopen(libnvinfer.so.10) returned NULL", "FM-58", "libnvinfer.so.10"),
    ],
)
def test_a_missing_library_in_any_wording_is_mapped_by_its_name(text: str, entry: str, lib: str) -> None:
    assert _top(text) == (entry, lib)


@pytest.mark.parametrize(
    "text",
    [
        "Loaded libstdc++.so.6 fine, but the model file was not found",  # an unknown library, failure elsewhere
        "works without libgomp.so.1 too",
        "Successfully opened dynamic library libcudart.so.12",  # a library named with no failure
        "Found libcublasLt.so.12 in /usr/local/cuda/lib64",
        "garbled: depN0Rc)Lt64_12.dll",  # a fragment of a name inside garbled text is not a name
    ],
)
def test_a_library_name_without_a_loader_failure_is_not_a_missing_library(text: str) -> None:
    kinds = {s.kind for s in extract_signals(prepare(text))}
    assert SignalKind.MISSING_LIBRARY not in kinds
    assert explain(text).verdict is not PasteKind.GPU_PROBLEM
