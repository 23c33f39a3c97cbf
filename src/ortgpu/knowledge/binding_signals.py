"""Structure in a paste: a binding (C#, Java, Rust, Go, Node, C/C++) that cannot load onnxruntime's own library.

Every binding's native file counts: `onnxruntime.dll`/`libonnxruntime.so`/`.dylib` (C, C++, C#, Rust, Go),
`onnxruntime4j_jni` (Java), `onnxruntime_binding.node` (Node, Electron), `libonnxruntimejsihelper.so` (React Native),
`onnxruntime_arm64.so`-style names that Go wrappers ship; the loader's words may sit on the line above the file.

Whatever the language of the message, the shape is the same: ORT's main library (`libonnxruntime.so.1.17.3`,
`onnxruntime.dll`, `libonnxruntime.dylib`, `onnxruntime4j_jni`) named on a line that says a library failed to load,
in English wording or by a language-independent marker (`DllNotFoundException`, `UnsatisfiedLinkError`, the Windows
HRESULT of "module not found", the dynamic loader's own prefix). A provider library or a CUDA library named as the
culprit on that line is the missing-library signal's, not this one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["ort_library_missing"]

# the main library by its file name, or as .NET names it in DllImport ('onnxruntime', "onnxruntime")
_MAIN = re.compile(
    r"(?<![\w.+-])(?P<lib>(?:lib)?onnxruntime(?:4j_jni|_binding|jsihelper|_go|-android|_(?:arm64|amd64|x64))?"
    r"(?:\.dll|\.dylib|\.node|\.so(?:\.\d{1,4}){0,4}))(?![\w-])"
    r"|[\"'`«„“]\s?(?P<bare>onnxruntime)\s?[\"'`»“”]",
    re.IGNORECASE,
)
# English loader wordings, and the markers that do not depend on the message language
_FAILED = re.compile(
    r"cannot open shared object|error while loading shared librar|no such file|\bdlopen|\bdlerror|image not found"
    r"|\b(?:cannot|can't|could not|couldn't|unable to|failed to|fail to|not able to) (?:be )?(?:load|find|open|locate)"
    r"|\b(?:not found|is missing|was not found|library not loaded|(?:could|can) ?not be (?:found|loaded))\b"
    r"|specified module could not|specified procedure could not|\bWin32 error\b|\bError 126\b"
    r"|DllNotFoundException|UnsatisfiedLinkError|BadImageFormatException|0x8007007E|0x8007045A|\bERR_DLOPEN_FAILED",
    re.IGNORECASE,
)
# another library named as what failed on the same line: "libonnxruntime.so.1: libcudnn.so.8: cannot open ..."
_OTHER_CULPRIT = re.compile(
    r"(?<![\w.+-])(?!(?:lib)?onnxruntime(?:4j_jni)?\.)[\w+-]{1,80}\.(?:so(?:\.\d{1,4}){0,4}|dll|dylib)"
    r"\s{0,3}:\s{0,3}cannot open shared object",
    re.IGNORECASE,
)


# onnxruntime.dll was found but its start-up failed or its own dependencies are missing: it needs only the VC++
# runtime and the system (FM-28), whatever the binding; .NET's "or one of its dependencies" decides nothing
_DEPENDENCY = re.compile(
    r"can't find dependent librar|cannot find dependent librar|\bdependent librar\w{0,3} (?:not found|missing)"
    r"|\b(?:WinError|error|error code)\s{0,3}:?\s{0,3}\[?1114\b|0x8007045A"
    r"|DLL\)?[^\n]{0,60}?(?:initiali[sz]ation|Initialisierung|inicializ|inizializz|инициализ|初始化|初期化|초기화)",
    re.IGNORECASE,
)


# Java: a native method of ORT's classes not found in the JNI library that loaded (the jar and the native library are
# from different releases, or another onnxruntime4j_jni on the path): the binding's load, whatever the method
_JNI_METHOD = re.compile(
    r"UnsatisfiedLinkError:\s{0,3}(?:['\"]?[\w\s]{0,40}\s)?(?P<method>ai\.onnxruntime\.[\w$.]{1,120})\s{0,2}\(",
    re.IGNORECASE,
)


def ort_library_missing(paste: Paste) -> Iterator[Signal]:
    """The first line where ORT's own native library is what could not be loaded."""
    if "onnxruntime" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        jni = _JNI_METHOD.search(line) if "UnsatisfiedLinkError" in line else None
        if jni:
            values = {"lib": "onnxruntime4j_jni", "method": jni.group("method")}
            attributes: dict[str, str | int] = {"platform": "unknown", "evidence": "entry_point"}
            yield Signal(SignalKind.ORT_LIBRARY_MISSING, index, paste.starts[index] + jni.start(), attributes, values)
            return
        if "onnxruntime" not in line.lower():
            continue
        main = _MAIN.search(line)
        if main is None or _OTHER_CULPRIT.search(line):
            continue
        near = paste.lines[max(0, index - 2) : index + 1] if main.group("lib") else [line]
        if not any(_FAILED.search(text) for text in near):  # the loader's words, on the line or just above
            continue
        if main.group("bare") and "dll" not in line.lower():
            continue  # a bare quoted name is .NET's DllImport only; "Package 'onnxruntime' not found" is pip's
        lib = main.group("lib") or main.group("bare")
        attributes = {"platform": _platform(lib, line)}
        # onnxruntime.dll itself, not a binding's glue (onnxruntime4j_jni.dll, onnxruntime_binding.node), whose
        # missing dependency is onnxruntime.dll: the binding's load (FM-82)
        dependency = lib.lower() == "onnxruntime.dll" and _DEPENDENCY.search(" ".join(paste.lines[index : index + 3]))
        if dependency:
            attributes["evidence"] = "dependency"
        yield Signal(
            SignalKind.ORT_LIBRARY_MISSING, index, paste.starts[index] + main.start(), attributes, {"lib": lib}
        )
        return


def _platform(lib: str, line: str) -> str:
    low = lib.lower()
    if low.endswith(".dll") or "dllnotfound" in line.lower() or "0x8007" in line.lower() or "win32" in line.lower():
        return "windows"
    if low.endswith(".dylib"):
        return "macos"
    return "linux" if ".so" in low else "unknown"
