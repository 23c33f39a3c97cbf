"""Structure in a paste: problem classes anticipated from ONNX Runtime's, CUDA's and the loader's own messages."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["anticipated_classes"]

# (evidence, words one of which every form holds (lowered), pattern). Each message is the producer's own wording
# (ORT, the CUDA driver, NVML, glibc's loader, Windows, pip, TensorRT, torch.onnx); every pattern is bounded.
_CLASSES: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (evidence, words, re.compile(pattern, re.IGNORECASE))
    for evidence, words, pattern in (
        (  # NVML / the kernel log: the loaded user-space driver is not the kernel module's version
            "driver_mismatch",
            ("version mismatch", "api mismatch"),
            r"Failed to initiali[sz]e NVML:?\s{0,3}Driver/library version mismatch"
            r"|API mismatch:? the NVIDIA kernel module has version",
        ),
        (  # a container that lost its device nodes' cgroup access (runtime reloaded) says only this
            "nvml_unknown",
            ("nvml",),
            r"Failed to initiali[sz]e NVML:?\s{0,3}Unknown Error",
        ),
        (  # glibc >= 2.41 refuses a library flagged as needing an executable stack
            "execstack",
            ("executable stack",),
            r"cannot enable executable stack as shared object requires",
        ),
        ("static_tls", ("static tls",), r"cannot allocate memory in static TLS block"),
        (  # a 4 KiB-aligned ELF on a kernel with 16/64 KiB pages (Grace, some aarch64 servers)
            "page_align",
            ("page-aligned",),
            r"ELF load command (?:address/offset|alignment) not page-aligned",
        ),
        (
            "paging_file",
            ("paging file", "1455"),
            r"paging file is too small for this operation|\[?WinError 1455\b|\(os error 1455\)|\berror 1455\b",
        ),
        (
            "long_path",
            ("long path", "long-paths", "longpathsenabled"),
            r"Windows Long Path support (?:is )?not enabled|does not have Windows Long Path support|enable-long-paths"
            r"|LongPathsEnabled",
        ),
        ("no_space", ("no space left",), r"\bNo space left on device\b"),
        (  # onnx.save / torch.onnx.export / SerializeToString of a model past protobuf's 2 GiB
            "protobuf_2gb",
            ("protobuf",),
            r"exceeds maximum protobuf size of 2\s?GB|larger than the 2\s?GiB limit imposed by the protobuf",
        ),
        (
            "trt_sm",
            ("is not supported by this tensorrt", "unsupported sm"),
            r"Target GPU SM \d{2,3} is not supported by this TensorRT release"
            r"|trtSmToCask\b[^\n]{0,120}?\bUnsupported SM\b",
        ),
        (  # pip replacing a file that a running process holds open (Windows)
            "file_in_use",
            ("winerror 5]", "winerror 32]"),
            r"\[WinError (?:5|32)\][^\n]{0,300}?onnxruntime",
        ),
        (  # initializer.cc: external data of a model whose path ORT does not know (loaded from bytes)
            "no_model_path",
            ("model_path",),
            r"model_path must not be empty|!model_path\.empty\(\) was false",
        ),
        (  # Smart App Control / WDAC / AppLocker / Group Policy refusing a DLL
            "app_control",
            ("application control", "4551", "group policy"),
            r"Application Control policy has blocked this file|\[?WinError 4551\b"
            r"|This program is blocked by group policy",
        ),
        (  # InferenceSession.__init__: neither a path (str / os.PathLike) nor bytes
            "load_type",
            ("unable to load from type",),
            r"Unable to load from type\s{0,3}'?<class '[\w.]{1,100}'>",
        ),
        (  # onnxruntime_pybind_mlvalue.cc: an OrtValue on "cuda" asked of a package without the CUDA provider
            "cpu_package_cuda_memory",
            ("using this package of onnxruntime",),
            r"Can't allocate memory on the CUDA device using this package of OnnxRuntime",
        ),
        (  # OrtGetApiBase()->GetApi(N): the native library is older than the headers the binding was built with
            "api_version",
            ("api version",),
            r"requested API version \[\d{1,4}\] is not available",
        ),
        (  # BFCArena::Extend past gpu_mem_limit (or the device's free memory)
            "arena_cap",
            ("available memory of",),
            r"Available memory of \d{1,20} is smaller than requested bytes of \d{1,20}",
        ),
    )
)


def anticipated_classes(paste: Paste) -> Iterator[Signal]:
    """For each anticipated class whose words the paste holds, the first line where its message appears."""
    for evidence, words, pattern in _CLASSES:
        if not any(w in paste.lowered for w in words):
            continue
        for index, line in enumerate(paste.lines):
            found = pattern.search(line)
            if found is not None:
                values = {"message": found.group(0)}
                yield Signal(
                    SignalKind.ANTICIPATED, index, paste.starts[index] + found.start(), {"evidence": evidence}, values
                )
                break
