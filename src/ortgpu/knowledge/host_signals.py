"""Structure in a paste about the host itself: a CPU without the build's instruction set, a Windows too old for it.

The process dies on an illegal instruction (`Illegal instruction (core dumped)`, `SIGILL`, Python's
`died with <Signals.SIGILL: 4>`, Windows' `0xC000001D` / `STATUS_ILLEGAL_INSTRUCTION` / exit code -1073741795), or
the CPU is said not to support the instruction set a build needs (AVX, AVX2, AVX-512, FMA, F16C, NEON ...), in a
paste about onnxruntime or an ONNX model. CUDA's own `an illegal instruction was encountered`
(cudaErrorIllegalInstruction, a GPU kernel fault) is not this: it names the device, not the CPU.

Onnxruntime's own library (not a provider's) failing to load in a paste that names Windows 7, 8, 8.1, Vista, XP or
Server 2008/2012 as the system: current releases support Windows 10 and later.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["cpu_instructions", "old_windows"]

# the operating system's words for a process killed by an instruction the CPU does not have
_ILLEGAL = re.compile(
    r"\bIllegal instruction\b|\bSIGILL\b|\b0xC000001D\b|\bSTATUS_ILLEGAL_INSTRUCTION\b|(?<![\w-])-1073741795\b"
    r"|\b3221225501\b",
    re.IGNORECASE,
)
# CUDA's illegal instruction is a GPU kernel fault (error 715), not the CPU's
_GPU_FAULT = re.compile(r"illegal instruction was encountered|cudaErrorIllegalInstruction|\bCUDA\b", re.IGNORECASE)
# the CPU said to lack the instruction set a build needs
_UNSUPPORTED_SET = re.compile(
    r"\b(?:cpu|processor)\b[^\n]{0,60}?\b(?:does not|doesn't|do not|don't|cannot|can't|not)\s(?:support|have)\b"
    r"[^\n]{0,30}?\b(?P<set>AVX-?512\w{0,8}|AVX2|AVX|FMA3?|F16C|SSE4(?:\.[12])?|NEON|BMI2?)\b"
    r"|\b(?P<set2>AVX-?512\w{0,8}|AVX2|AVX|FMA3?|F16C|SSE4(?:\.[12])?|NEON)\b\s(?:instructions?\s)?"
    r"(?:is |are )?(?:not supported|unsupported|missing|not available)\b[^\n]{0,30}?\b(?:cpu|processor)\b",
    re.IGNORECASE,
)
_ONNX = ("onnx",)  # the paste is about onnxruntime or an ONNX model (.onnx, onnxruntime, Microsoft.ML.OnnxRuntime)


def cpu_instructions(paste: Paste) -> Iterator[Signal]:
    """The first line where the process died on an illegal CPU instruction, or the CPU lacks a needed set."""
    low = paste.lowered
    if not any(word in low for word in _ONNX):
        return
    words = "illegal" in low or "sigill" in low or "c000001d" in low or "1073741795" in low or "3221225501" in low
    sets = "avx" in low or "sse4" in low or "fma" in low or "f16c" in low or "neon" in low or "bmi" in low
    if not (words or sets):
        return
    for index, line in enumerate(paste.lines):
        found = _ILLEGAL.search(line) if words else None
        if found is not None and _GPU_FAULT.search(line) is None:
            values = {"evidence": found.group(0)}
            yield Signal(SignalKind.CPU_INSTRUCTIONS, index, paste.starts[index] + found.start(), {}, values)
            return
        unsupported = _UNSUPPORTED_SET.search(line) if sets else None
        if unsupported is not None:
            values = {"evidence": unsupported.group("set") or unsupported.group("set2")}
            yield Signal(SignalKind.CPU_INSTRUCTIONS, index, paste.starts[index] + unsupported.start(), {}, values)
            return


# a Windows release older than onnxruntime supports, named by the user or the tool ("win7", "Windows 8.1", "Vista")
_OLD_WINDOWS = re.compile(
    r"(?<![\w.])win(?:dows)?[\s_-]?(?P<version>7|8\.1|8|vista|xp)(?![\d.]\d|[a-z])"
    r"|(?<![\w.])windows server (?P<server>2008|2012)(?!\d)",
    re.IGNORECASE,
)
# a supported Windows named next to the old one ("Windows 7 x64 (also tested on Windows 10)")
_NEW_WINDOWS = re.compile(
    r"(?<![\w.])win(?:dows)?[\s_-]?(?:10|11)(?![\d.]\d)|\bwindows server 20(?:16|19|22|25)\b", re.IGNORECASE
)
# onnxruntime's own native library failing to load, in any binding (a provider library's load is another problem)
_MAIN_LOAD_FAILED = re.compile(
    r"OnnxRuntime\.NativeMethods|DllNotFoundException[^\n]{0,80}?onnxruntime|DLL load failed[^\n]{0,60}?onnxruntime"
    r"|UnsatisfiedLinkError[^\n]{0,200}?onnxruntime|onnxruntime_binding\.node|(?<![\w-])onnxruntime\.dll",
    re.IGNORECASE,
)


def old_windows(paste: Paste) -> Iterator[Signal]:
    """Onnxruntime's own library failing to load on a Windows release older than 10 named in the paste."""
    low = paste.lowered
    if "win" not in low or "onnxruntime" not in low:
        return
    failed = next((i for i, line in enumerate(paste.lines) if _MAIN_LOAD_FAILED.search(line)), None)
    if failed is None:
        return
    if _NEW_WINDOWS.search(paste.joined[:200_000]):
        return  # the same failure on Windows 10/11 too: the old release is not what decides it
    for line in paste.lines:
        found = _OLD_WINDOWS.search(line)
        if found is not None:
            version = found.group("version") or found.group("server")
            values = {"version": f"Windows {version}"}
            yield Signal(SignalKind.OLD_WINDOWS, failed, paste.starts[failed], {}, values)
            return
