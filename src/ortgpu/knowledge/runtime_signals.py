"""Signals of runtime and install failures: CUDA-library statuses, nodes without a kernel, installers with no build.

Split from knowledge/signals.py (which runs every extractor); the same rules hold: bounded patterns on the bounded
lines of a Paste.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import FailingNode, Signal, SignalKind, node_values
from ortgpu.knowledge.statuses import CUBLAS, cuda_name

__all__ = ["CUDA_ONLY_OPS", "library_statuses", "missing_kernels", "no_wheel", "rocm_library_statuses", "trt_logged"]

_TRT_LINE = re.compile(r"tensorrt|\btrt\b|\[TRT\]|tactic|IBuilder|nvinfer|\bmyelin\b", re.IGNORECASE)


# an application's guess about what failed ("This is likely a fatal TensorRT/CUDA error") is not TensorRT's output
_HEDGED = re.compile(r"\b(?:likely|probably|possibly|perhaps|may be|might be|could be)\b", re.IGNORECASE)


def trt_logged(paste: Paste, index: int) -> bool:
    """Whether a line is TensorRT's own output: logged through ORT's TensorRT logger, or naming TensorRT (and not
    an application's hedged guess about it)."""
    if paste.origin_of(index).startswith("tensorrt"):
        return True
    line = paste.lines[index]
    return bool(_TRT_LINE.search(line)) and not _HEDGED.search(line)


# ---------------------------------------------------------------- cuBLAS and CUDA runtime statuses

_CUBLAS_STATUS = re.compile(
    r"CUBLAS(?:_?LT)? (?:failure|error|fault|status)\s{0,3}(?:code\s{0,3})?[:=]?\s{0,3}(?P<code>\d{1,3})\b"
    r"(?:\s{0,3}:?\s{0,3}(?P<status>CUBLAS_STATUS_[A-Z_]{3,40}))?"
    r"|(?<![A-Z_])(?P<bare>CUBLAS_STATUS_[A-Z_]{3,40})"
    r"|CUBLAS(?:_?LT)? error executing (?P<call>\w{1,60})"
    r"|(?P<fn>cublas(?:Lt)?[A-Z]\w{0,60})[^\n]{0,120}?\b(?:failed|returned an? error|error code)\b",
    re.IGNORECASE,
)
_CUDA_STATUS = re.compile(
    r"CUDA (?:failure|error)\s{0,3}(?:code\s{0,3})?[:=]?\s{0,3}(?P<code>\d{1,3})\b\s{0,3}[:(]?\s{0,3}"
    r"(?P<msg>[a-z][^;()\n]{2,90})?"
    r"|(?<![A-Za-z])cudaError(?P<name>[A-Z]\w{2,40})"
    r"|Cuda Error in (?P<fn>\w{1,60}):\s{0,3}(?P<code2>\d{1,3})\s{0,3}\((?P<msg2>[^()\n]{2,90})\)"
    r"|CUDA error:\s{0,3}(?P<msg3>[a-z][^;\n]{2,90})",
    re.IGNORECASE,
)


# ROCm's HIP runtime errors as their CUDA twins (cudaError_t names without the prefix): the same diagnosis on AMD GPUs
HIP_TO_CUDA: dict[str, str] = {
    "InvalidDeviceFunction": "InvalidDeviceFunction",
    "NoBinaryForGpu": "NoKernelImageForDevice",
    "InvalidKernelFile": "InvalidKernelImage",
    "OutOfMemory": "MemoryAllocation",
    "MemoryAllocation": "MemoryAllocation",
    "NoDevice": "NoDevice",
    "InvalidDevice": "InvalidDevice",
    "IllegalAddress": "IllegalAddress",
    "LaunchFailure": "LaunchFailure",
    "InvalidConfiguration": "InvalidConfiguration",
    "InsufficientDriver": "InsufficientDriver",
}
_HIP_STATUS = re.compile(r"(?<![A-Za-z])hipError(?P<name>[A-Z]\w{2,40})")


def _hip_status(paste: Paste, nodes: tuple[FailingNode, ...]) -> Signal | None:
    if "hiperror" not in paste.lowered:
        return None
    for index, line in enumerate(paste.lines):
        m = _HIP_STATUS.search(line)
        if m is None or m.group("name") not in HIP_TO_CUDA:
            continue
        values = {"status": f"hipError{m.group('name')}", "returned_by": "HIP (ROCm, AMD GPU)"}
        values.update(node_values(nodes, index))
        attributes: dict[str, str | int] = {"status": HIP_TO_CUDA[m.group("name")]}
        return Signal(SignalKind.CUDA_ERROR, index, paste.starts[index] + m.start(), attributes, values)
    return None


# ROCm's MIOpen (cuDNN's twin) and rocBLAS (cuBLAS's) statuses, as the cuDNN / cuBLAS status names entries claim
MIOPEN_TO_CUDNN: dict[str, str] = {
    "InternalError": "INTERNAL_ERROR",
    "UnknownError": "INTERNAL_ERROR",
    "NotInitialized": "NOT_INITIALIZED",
    "AllocFailed": "ALLOC_FAILED",
    "BadParm": "BAD_PARAM",
    "InvalidValue": "BAD_PARAM",
    "NotImplemented": "NOT_SUPPORTED",
    "UnsupportedOp": "NOT_SUPPORTED",
}
ROCBLAS_TO_CUBLAS: dict[str, str] = {
    "memory_error": "ALLOC_FAILED",
    "invalid_handle": "NOT_INITIALIZED",
    "internal_error": "INTERNAL_ERROR",
    "not_implemented": "NOT_SUPPORTED",
    "invalid_value": "INVALID_VALUE",
    "invalid_size": "INVALID_VALUE",
}
_ROCM_STATUS = re.compile(
    r"(?<![A-Za-z])(?:miopenStatus(?P<miopen>[A-Z]\w{2,40})|rocblas_status_(?P<rocblas>[a-z_]{3,40}))"
)


def rocm_library_statuses(paste: Paste, nodes: tuple[FailingNode, ...]) -> Iterator[Signal]:
    """The first MIOpen or rocBLAS status of the paste, as the cuDNN / cuBLAS status of the same meaning."""
    if "miopenstatus" not in paste.lowered and "rocblas_status_" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        m = _ROCM_STATUS.search(line)
        if m is None:
            continue
        if m.group("miopen"):
            name, status = f"miopenStatus{m.group('miopen')}", MIOPEN_TO_CUDNN.get(m.group("miopen"))
            kind, who = SignalKind.CUDNN_STATUS, "MIOpen (ROCm, AMD GPU)"
        else:
            name, status = f"rocblas_status_{m.group('rocblas')}", ROCBLAS_TO_CUBLAS.get(m.group("rocblas"))
            kind, who = SignalKind.CUBLAS_STATUS, "ROCm's rocBLAS (AMD GPU)"
        if status is None:
            continue
        values = {"status": name, "returned_by": who}
        values.update(node_values(nodes, index))
        yield Signal(kind, index, paste.starts[index] + m.start(), {"status": status}, values)
        return


# where ORT's CUDA EP reports a failed CUDA, cuBLAS or cuDNN call (cuda_call.cc: CudaCall<>), with or without the code
_CUDA_CALL_SITE = re.compile(r"cuda_call\.cc|\bCudaCall\b", re.IGNORECASE)
_AT_INIT = re.compile(r"Exception during initiali[sz]ation|CUDAExecutionProvider::CUDAExecutionProvider", re.I)


def library_statuses(paste: Paste, nodes: tuple[FailingNode, ...]) -> Iterator[Signal]:
    """The first cuBLAS status and the first CUDA (or HIP) runtime error of the paste, named from their numbers if
    need be."""
    low = paste.lowered
    cublas_done = "cublas" not in low
    cuda_done = "cuda" not in low
    hip = _hip_status(paste, nodes)
    if hip is not None:
        cuda_done = True
        yield hip
    unnamed: int | None = None  # the first CUDA_CALL error line whose status is cut off
    for index, line in enumerate(paste.lines):
        if cublas_done and cuda_done:
            return
        line_low = line.lower()
        if unnamed is None and not cuda_done and _CUDA_CALL_SITE.search(line):
            unnamed = index
        if not cublas_done and "cublas" in line_low:
            m = _CUBLAS_STATUS.search(line)
            if m is not None:
                cublas_done = True
                yield _cublas_signal(m, index, paste, nodes)
        if not cuda_done and "cuda" in line_low and not trt_logged(paste, index):
            m = _CUDA_STATUS.search(line)
            if m is not None:
                code_text = m.group("code") or m.group("code2")
                code = int(code_text) if code_text else None
                name = m.group("name") or cuda_name(code, m.group("msg") or m.group("msg2") or m.group("msg3"))
                if name is None:
                    continue
                cuda_done = True
                values = {"status": f"cudaError{name}", "returned_by": "the CUDA runtime"}
                if code is not None:
                    values["code"] = str(code)
                if m.group("fn"):
                    values["call"] = m.group("fn")
                # the op whose kernel failed (a kernel bug is the op's, not the setup's)
                values.update(node_values(nodes, index))
                yield Signal(SignalKind.CUDA_ERROR, index, paste.starts[index] + m.start(), {"status": name}, values)
    if not cuda_done and unnamed is not None and "cublas" not in low and "cudnn" not in low and _AT_INIT.search(low):
        # ORT's CUDA_CALL template cut before its code (an issue title): a CUDA call failed while the provider started
        values = {
            "returned_by": "a CUDA call",
            "call": "the CUDA provider's start-up (its error code is cut off in the paste; at start-up the usual cause"
            " is a driver older than the CUDA runtime, CUDA failure 35)",
        }
        yield Signal(SignalKind.CUDA_ERROR, unnamed, paste.starts[unnamed], {"status": "UnnamedAtInit"}, values)


def _cublas_signal(m: re.Match[str], index: int, paste: Paste, nodes: tuple[FailingNode, ...]) -> Signal:
    full = m.group("status") or m.group("bare")
    values: dict[str, str] = {"returned_by": "cuBLAS"}
    attributes: dict[str, str | int] = {}
    if full is None and m.group("code"):
        name = CUBLAS.get(int(m.group("code")))
        full = f"CUBLAS_STATUS_{name}" if name else None
    if full is not None:
        values["status"] = full.upper()
        attributes["status"] = full.upper().removeprefix("CUBLAS_STATUS_")
    if m.group("code"):
        values["code"] = m.group("code")
    call = m.group("call") or m.group("fn")
    if call:
        values["call"] = call
    values.update(node_values(nodes, index))
    return Signal(SignalKind.CUBLAS_STATUS, index, paste.starts[index] + m.start(), attributes, values)


# ---------------------------------------------------------------- a node without a kernel, on which EP

_NO_KERNEL = re.compile(
    r"(?:Could not find an implementation for|Failed to find kernel for|No kernel (?:registered|found) for)"
    r"\s{1,3}(?:the\s)?(?:node\s)?(?:op\s)?(?:(?P<domain>[a-z][a-z0-9_]{0,30}(?:\.[a-z0-9_]{1,30}){0,4})\.)?"
    r"(?P<op>\w{1,80})\((?P<version>\d{1,4})\)(?P<rest>[^\n]{0,300})",
    re.IGNORECASE,
)
_KERNEL_EP = re.compile(r"(?<![A-Za-z])(?P<ep>[A-Za-z]{2,20})ExecutionProvider\b")
_GPU_EPS = ("cuda", "tensorrt", "rocm", "migraphx", "dml")
# com.microsoft contrib ops that only the CUDA (or ROCm) EP implements: a model that uses them needs that EP
CUDA_ONLY_OPS = frozenset(
    {
        "BiasSplitGelu",
        "BiasAdd",
        "GroupNorm",
        "SkipGroupNorm",
        "NhwcConv",
        "DecoderMaskedSelfAttention",
        "DecoderMaskedMultiHeadAttention",
        "GemmFloat8",
        "PackedAttention",
        "PackedMultiHeadAttention",
        "RemovePadding",
        "RestorePadding",
        "GatedRelativePositionBias",
        "LongformerAttention",
        "DecoderAttention",
        "BeamSearch",
        "GreedySearch",
        "Sampling",
    }
)


def _kernel_ep(line: str, m: re.Match[str]) -> re.Match[str] | None:
    """The EP a kernel-lookup message is about: the one it names after the op (`ep:'X'`), else the one named last
    before the message on its line ("works with CUDA, fails with the CPUExecutionProvider: Could not find ...")."""
    after = _KERNEL_EP.search(m.group("rest"))
    if after:
        return after
    named = list(itertools.islice(_KERNEL_EP.finditer(line, 0, m.start()), 16))
    return named[-1] if named else None


def missing_kernels(paste: Paste) -> Iterator[Signal]:
    """The first node ORT has no kernel for, with the EP the message names ("cpu" when it names none: the CPU EP
    is where ORT looks last, and a GPU EP would have taken the node or said so)."""
    if "kernel" not in paste.lowered and "implementation" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        m = _NO_KERNEL.search(line)
        if m is None or m.group("op").startswith("Memcpy"):  # Memcpy nodes are their own entry (NG-13)
            continue
        named = _kernel_ep(line, m)
        ep = named.group("ep").lower() if named else "cpu"
        op = m.group("op")
        values = {"op": op, "ep": f"{named.group('ep')}ExecutionProvider" if named else "the CPU (none named)"}
        if m.group("domain"):
            values["domain"] = m.group("domain")
        if op in CUDA_ONLY_OPS and ep not in _GPU_EPS:
            values["cuda_only"] = op
        attributes: dict[str, str | int] = {"ep": "gpu" if ep in _GPU_EPS else ep, "op": op}
        yield Signal(SignalKind.MISSING_KERNEL, index, paste.starts[index] + m.start(), attributes, values)
        return


# ---------------------------------------------------------------- an installer finds no onnxruntime for this platform

# Each installer's "nothing to install" wording; the package must be onnxruntime* on the same line or the next ones.
_NO_CANDIDATE = re.compile(
    r"No matching distribution found for|Could not find a version that (?:satisfies|matches)"
    r"|Unable to find (?:installation )?candidates for|doesn't have a source distribution or wheel"
    r"|does not have a source distribution or wheel|has no wheels? (?:with|for) a matching"
    r"|only has wheels for the following|no wheels? (?:are )?available for|PackagesNotFoundError"
    r"|nothing provides (?:requested )?|not available from current channels|is not available for this platform"
    r"|Could not solve for environment specs"
    r"|no (?:compatible|matching) (?:wheel|distribution|version)s? (?:found )?for",
    re.IGNORECASE,
)
_ORT_PACKAGE = re.compile(r"(?<![\w-])(onnxruntime(?:[-_][a-z]{2,12}){0,2})(?![\w-])", re.IGNORECASE)
_INSTALLERS = (
    ("uv", re.compile(r"\buv (?:sync|pip|add|lock|run)\b|tool\.uv|\bhint: You're on\b", re.IGNORECASE)),
    ("poetry", re.compile(r"\bpoetry\b", re.IGNORECASE)),
    ("pipenv", re.compile(r"\bpipenv\b|Pipfile", re.IGNORECASE)),
    ("pdm", re.compile(r"\bpdm\b", re.IGNORECASE)),
    ("conda", re.compile(r"\b(?:conda|mamba|micromamba)\b|PackagesNotFoundError|current channels", re.IGNORECASE)),
    ("pip", re.compile(r"\bpip3?\b|from versions:", re.IGNORECASE)),
)
_ARCH = re.compile(
    r"(?<![A-Za-z0-9])(aarch64|arm64|armv7l|armv6l|ppc64le|s390x|riscv64|x86_64|amd64|win32|win_arm64|i686"
    r"|macosx_\w{1,40})(?![A-Za-z0-9])"
)
_PYTHON = re.compile(r"\b(?:CPython|Python)\s{0,2}v?(3\.\d{1,2})(?:\.\d{1,3})?|\bcp(3\d{1,2})\b")


def no_wheel(paste: Paste) -> Iterator[Signal]:
    if "onnxruntime" not in paste.lowered:
        return
    lines = paste.lines
    for index, line in enumerate(lines):
        m = _NO_CANDIDATE.search(line)
        if m is None:
            continue
        package = _ORT_PACKAGE.search(line)
        listing = line.rstrip().endswith(":") or not re.search(r"\w", line[m.end() :].split(":", 1)[-1][:80])
        if package is None and listing:
            # the packages listed under the message (conda's "- onnxruntime-gpu")
            package = _ORT_PACKAGE.search("\n".join(lines[index + 1 : index + 5]))
        if package is None:
            continue
        context = "\n".join(lines[max(0, index - 6) : index + 6])
        values = {"package": package.group(1)}
        installer = next((name for name, p in _INSTALLERS if p.search(context)), None)
        if installer:
            values["installer"] = installer
        arch = _ARCH.search(context)
        if arch:
            values["arch"] = arch.group(1)
        py = _PYTHON.search(context)
        if py:
            values["python"] = py.group(1) or f"3.{py.group(2)[1:]}"
        yield Signal(SignalKind.NO_WHEEL, index, paste.starts[index] + m.start(), {}, values)
        return
