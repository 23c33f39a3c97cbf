"""Structure in a paste: a GPU provider library that failed to load while the reason is cut off, garbled or absent.

ORT says why its CUDA/TensorRT provider library did not load ("... which depends on X which is missing", "with error:
X: cannot open shared object file", "LoadLibrary failed with error 126"); the specific rules decide those. Pastes often
lose that part: a log line cut after the path, a wide-character (UTF-16) log whose middle is unreadable, a title that
says only "failed to load onnxruntime_providers_cuda.dll". What is left still says which library and which platform:
on Windows a provider DLL that Windows found but could not load almost always lacks one of the DLLs it imports; on
Linux the provider `.so` most often lacks a CUDA/cuDNN/TensorRT library it needs (the `with error:` part names it).
The signal carries the platform, the provider (`component`) and the wording (`evidence`: "error_loading" for
ORT >= 1.22's own words, whose full form names the missing DLL; "other" for the older `LoadLibrary failed` and prose).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["provider_load_unexplained"]

_LIB = r"(?P<lib>(?:lib)?onnxruntime_providers_(?P<provider>cuda|tensorrt)\.(?P<ext>dll|so)(?!\.?\w))"
# the words of a load failure before the library's name, on the same line
_FAILURE = re.compile(
    r"\b(?P<error_loading>Error loading)\s{0,3}(?:[\"'`][^\n\"'`]{0,300}?|[^\s\"'`]{0,300}?)"
    + _LIB.replace("?P<", "?P<a_")
    # the garbled middle of a wide-character log: "Error ... onnxruntime_providers_cuda.dll"
    + r"|\bError\s{0,3}(?:\.{2,}|\u2026)[^\n]{0,300}?"
    + _LIB.replace("?P<", "?P<b_")
    + r"|\b(?:LoadLibrary(?:Ex\w?)? failed|Failed to load library|(?:failed|fails|failing|unable|not able|fail)"
    r" to (?:load|open|dlopen)|(?:cannot|can't|could not|couldn't|won't|will not|does not|doesn't|did not|didn't)"
    r" (?:be )?(?:load|open|dlopen)(?:ed)?|error (?:while|when) loading)\b[^\n]{0,300}?"
    + _LIB.replace("?P<", "?P<c_")
    # the library first: "onnxruntime_providers_cuda.dll failed to load / could not be loaded"
    + r"|"
    + _LIB.replace("?P<", "?P<d_")
    + r"[`\"']?[^\n]{0,60}?\b(?:fail(?:s|ed)? to load|(?:cannot|can't|could not|"
    r"couldn't) be loaded|(?:is |was )?not loaded|won't load|doesn't load|does not load)\b",
    re.IGNORECASE,
)
# the single spaces of a letter-spaced line that the general repair left (its "..." broke the alternation)
_CLOSE_UP = re.compile(r"(?<=\S) (?=\S)")
# a reason the paste does name: the specific rules (FM-21/22/23/59/71/72, the DLL-init and binding entries) decide
_REASON = re.compile(
    r"which depends on|which is missing|with error[ \t]{0,3}:[ \t]{0,3}[^\s\"'`]"
    r"|error(?: code)?\s{0,3}[:=]?\s{0,3}\(?\d|\(Error \d|cannot open shared object|undefined symbol|symbol lookup"
    r"|not defined in file|could not be found|entry point|not a valid win32|initiali[sz]ation routine|0x8007"
    r"|no such file|wrong ELF|GLIBC|permission denied|cuda driver version is insufficient|is not a valid"
    r"|Require cuDNN|requires? (?:cuda|cudnn) \d",
    re.IGNORECASE,
)
# signals that already say why (a named library, a symbol, a DLL start-up, the GPU or package itself)
_EXPLAINED = frozenset(
    {
        SignalKind.MISSING_LIBRARY,
        SignalKind.SYMBOL_MISMATCH,
        SignalKind.DLL_INIT_FAILED,
        SignalKind.TWO_RUNTIMES,
        SignalKind.NON_NVIDIA_GPU,
        SignalKind.NO_GPU_VISIBLE,
        SignalKind.PYBIND_LOAD_FAILED,
        SignalKind.ORT_LIBRARY_MISSING,
        SignalKind.CPU_ONLY_PROVIDERS,
        SignalKind.OTHER_EP_BUILD,
        SignalKind.CUDA_ERROR,
        SignalKind.CUDNN_STATUS,
    }
)


def provider_load_unexplained(paste: Paste, found: tuple[Signal, ...]) -> Iterator[Signal]:
    """The first line where a CUDA/TensorRT provider library failed to load, when the paste names no reason."""
    low = paste.lowered
    if "providers_" not in low and "p r o v i d e r s _" not in low:
        return  # no provider library named: skip the whole-paste reason scan (a megabyte costs 0.1 s)
    if any(s.kind in _EXPLAINED for s in found) or _REASON.search(paste.joined) is not None:
        return
    for index, line in enumerate(paste.lines):
        if "p r o v i d e r s _" in line.lower():  # letter-spaced (UTF-16 read as bytes) with punctuation in it
            line = _CLOSE_UP.sub("", line)
        if "providers_" not in line.lower():
            continue
        m = _FAILURE.search(line)
        if m is None:
            continue
        prefix = next(p for p in ("a_", "b_", "c_", "d_") if m.group(p + "lib"))
        lib = m.group(prefix + "lib")
        wording = "error_loading" if prefix == "a_" else "other"
        platform = "windows" if m.group(prefix + "ext").lower() == "dll" else "linux"
        attributes: dict[str, str | int] = {
            "platform": platform,
            "component": m.group(prefix + "provider").lower(),
            "evidence": wording,
        }
        yield Signal(SignalKind.PROVIDER_LOAD_FAILED, index, paste.starts[index] + m.start(), attributes, {"lib": lib})
        return
