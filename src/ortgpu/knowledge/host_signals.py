"""Structure in a paste about the host itself: a CPU that lacks an instruction set the onnxruntime build uses.

The process dies on an illegal instruction (`Illegal instruction (core dumped)`, `SIGILL`, Python's
`died with <Signals.SIGILL: 4>`, Windows' `0xC000001D` / `STATUS_ILLEGAL_INSTRUCTION` / exit code -1073741795), or
the CPU is said not to support the instruction set a build needs (AVX, AVX2, AVX-512, FMA, F16C, NEON ...), in a
paste about onnxruntime or an ONNX model. CUDA's own `an illegal instruction was encountered`
(cudaErrorIllegalInstruction, a GPU kernel fault) is not this: it names the device, not the CPU.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["cpu_instructions"]

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
