"""Structure in a paste about what extends ORT: custom-op libraries loaded by path, and bindings' output tensors.

A custom-op library (onnxruntime-extensions' ortextensions.dll / libortextensions.so, a user's own .so) registered
with `register_custom_ops_library` / `RegisterCustomOpLibrary` / `registerCustomOpLibrary` is loaded by ORT's own
loader, whose words are `Failed to load library X with error: ...` (Linux, macOS) and `LoadLibrary failed with error
126 "" when trying to load "X"` (Windows). The same words are printed for ORT's provider libraries: a library whose
name is onnxruntime's own (`onnxruntime_providers_cuda`, `onnxruntime`) is never a custom-op library.

A binding (Java, Go, C#, Rust) that converts an output into its own array type can refuse one with a zero-length
dimension (`shape = [0, 4]`, `Dimension 0 of the shape has invalid value 0`): the run succeeded and produced an empty
result (no detections); the binding's conversion failed. ORT's own errors (`[ErrorCode:`, `ORT_INVALID_ARGUMENT`,
`[ONNXRuntimeError]`) are the run's, not the binding's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["custom_op_library", "empty_output"]

# ORT's loader: Env::LoadDynamicLibrary on POSIX and on Windows
_LOAD_FAILED = re.compile(
    r"Failed to load library (?P<lib>[^\s\"'`]{1,300}) with error:?\s{0,3}(?P<error>[^\n]{0,200})"
    r"|LoadLibrary failed with error (?P<code>\d{1,6})[^\n]{0,200}? when trying to load\s{0,2}"
    r"[\"'`]?(?P<wlib>[^\"'`\n]{1,300})",
    re.IGNORECASE,
)
# the calls that register a custom-op library by path, in every binding
_REGISTRATION = re.compile(
    r"register_?custom_?ops?_?library(?:_v2)?|RegisterOrtExtensions|register_?custom_?op_?library",
    re.IGNORECASE,
)
# onnxruntime's own libraries (main, providers, bindings' glue): the provider or binding signals' business
_ORT_OWN = re.compile(r"^(?:lib)?onnxruntime(?:[_ ]providers[_ ]\w{1,30}|4j_jni|_binding)?(?:[.\d]|$)", re.IGNORECASE)
# a library file name (a path cut short by the terminal names none)
_LIBRARY_FILE = re.compile(r"\.(?:so(?:\.\d{1,6}){0,4}|dll|dylib)$", re.IGNORECASE)
# the provider bridge loads ORT's provider libraries with the same words
_PROVIDER_BRIDGE = re.compile(r"provider_?bridge|ProviderLibrary|ProviderSharedLibrary|providers_", re.IGNORECASE)
# a dependency that other signals explain: onnxruntime's own library (the binding's load), CUDA's and NVIDIA's
_EXPLAINED_DEPENDENCY = re.compile(
    r"^(?:lib)?(?:onnxruntime|cuda|cudart|cudnn|cublas|cufft|curand|cusparse|cusolver|nvinfer|nvrtc|nvonnxparser)",
    re.IGNORECASE,
)


def custom_op_library(paste: Paste) -> Iterator[Signal]:
    """The first line where ORT's loader could not load a library that is not one of onnxruntime's own."""
    low = paste.lowered
    if "failed to load library" not in low and "when trying to load" not in low:
        return
    registered = _REGISTRATION.search(paste.joined) is not None
    for index, line in enumerate(paste.lines):
        found = _LOAD_FAILED.search(line)
        if found is None or _PROVIDER_BRIDGE.search(line):
            continue
        path = (found.group("lib") or found.group("wlib") or "").rstrip(".,;:")
        name = re.split(r"[\\/]", path)[-1]
        if not _LIBRARY_FILE.search(name) or _ORT_OWN.match(name):
            continue
        attributes: dict[str, str | int] = {"evidence": "registration" if registered else "loader"}
        values = {"lib": name}
        error = found.group("error") or ""
        other = error.split(":", 1)[0].strip() if ":" in error else ""
        if other and other != name and other != path and re.search(r"\.(?:so|dll|dylib)\b", other):
            if _EXPLAINED_DEPENDENCY.match(other):
                continue  # the custom-op library loaded; onnxruntime's or a CUDA library it needs did not
            values["dependency"] = other  # one of its own dependencies did not load
        yield Signal(SignalKind.CUSTOM_OP_LIBRARY, index, paste.starts[index] + found.start(), attributes, values)
        return


# a binding's own conversion failure, with the shape (or the dimension) that holds a zero
_ZERO_SHAPE = re.compile(
    r"not representable in (?P<lang>Java|\.NET|C#|Go|Rust)[^\n]{0,80}?shape\s{0,2}[=:]?\s{0,2}"
    r"[\[(](?P<shape>(?:\d{1,12},\s{0,2}){0,8}0(?:,\s{0,2}\d{1,12}){0,8})[\])]"
    r"|\bInvalid tensor shape:?\s{0,3}Dimension (?P<dim>\d{1,3}) of the shape has invalid value 0\b"
    r"|(?P<tensor>Error creating tensor|cannot (?:create|wrap|convert) (?:a |the )?(?:output )?tensor)"
    r"[^\n]{0,120}?(?:shape|dimension)[^\n]{0,40}?[\[(]\s{0,2}(?:\d{1,12},\s{0,2}){0,8}0\s{0,2}[,\])]",
    re.IGNORECASE,
)
_ORT_ERROR = re.compile(r"\[ErrorCode:|\bORT_[A-Z_]{3,30}\b|\[ONNXRuntimeError\]|Non-zero status code")


def empty_output(paste: Paste) -> Iterator[Signal]:
    """The first line where a binding refused to wrap an output that has a zero-length dimension."""
    low = paste.lowered
    if "shape" not in low:
        return
    if "representable" not in low and "invalid value 0" not in low and "tensor" not in low:
        return
    for index, line in enumerate(paste.lines):
        found = _ZERO_SHAPE.search(line)
        if found is None or _ORT_ERROR.search(line):
            continue
        values = {"shape": found.group("shape") or f"dimension {found.group('dim') or '?'} = 0"}
        lang = found.group("lang") or ("Go" if found.group("dim") else "")
        if lang:
            values["binding"] = lang
        yield Signal(SignalKind.EMPTY_OUTPUT, index, paste.starts[index] + found.start(), {}, values)
        return
