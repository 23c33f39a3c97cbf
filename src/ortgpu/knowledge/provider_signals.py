"""Signals about which execution providers a paste asked for and got: builds for another EP, silent CPU fallback, the
CUDA provider on a GPU that is not NVIDIA's.

Split from knowledge/signals.py (the same rules hold: bounded patterns on the bounded lines of a Paste). The EP names
are mapped to the pip package that carries each EP, so the answer can name the right package for the user's GPU.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["EP_PACKAGES", "canonical_ep", "ep_package", "non_nvidia_gpu", "other_ep_build", "silent_fallback"]

# The provider names users and apps write, as ORT's canonical EP name.
_EP_ALIASES: dict[str, str] = {
    "cuda": "CUDA",
    "gpu": "CUDA",
    "tensorrt": "TensorRT",
    "trt": "TensorRT",
    "dml": "DirectML",
    "directml": "DirectML",
    "rocm": "ROCm",
    "migraphx": "MIGraphX",
    "openvino": "OpenVINO",
    "coreml": "CoreML",
    "qnn": "QNN",
    "cpu": "CPU",
    "azure": "Azure",
}
# Which package carries each EP (Python first, then the NuGet package for C# users).
EP_PACKAGES: dict[str, str] = {
    "CUDA": "onnxruntime-gpu (NVIDIA GPUs; NuGet Microsoft.ML.OnnxRuntime.Gpu)",
    "TensorRT": "onnxruntime-gpu plus TensorRT (NVIDIA GPUs; NuGet Microsoft.ML.OnnxRuntime.Gpu)",
    "DirectML": "onnxruntime-directml (Windows, any DirectX 12 GPU: AMD, Intel, NVIDIA; NuGet "
    "Microsoft.ML.OnnxRuntime.DirectML)",
    "ROCm": "the ROCm build of onnxruntime (AMD GPUs on Linux: AMD's onnxruntime-rocm wheels for your ROCm version)",
    "MIGraphX": "the ROCm/MIGraphX build of onnxruntime (AMD GPUs on Linux: AMD's onnxruntime-rocm wheels)",
    "OpenVINO": "onnxruntime-openvino (Intel CPUs, GPUs and NPUs)",
    "CoreML": "onnxruntime (the macOS wheels include CoreML; NuGet Microsoft.ML.OnnxRuntime)",
    "QNN": "onnxruntime-qnn (Qualcomm NPUs, Windows on Arm)",
}
_GPU_SIDE = {"CUDA", "TensorRT", "DirectML", "ROCm", "MIGraphX", "OpenVINO", "CoreML", "QNN"}
_EP_WORD = re.compile(
    r"(?<![A-Za-z])(CUDA|Tensorrt|TensorRT|Dml|DirectML|ROCM|ROCm|MIGraphX|OpenVINO|CoreML|QNN|CPU|Azure)"
    r"(?:ExecutionProvider)?(?![A-Za-z])",
    re.IGNORECASE,
)


def canonical_ep(name: str) -> str | None:
    """ORT's EP name for what a user wrote ('dml', 'DmlExecutionProvider', 'directml' -> 'DirectML')."""
    key = name.lower().removesuffix("executionprovider").strip("'\" ")
    return _EP_ALIASES.get(key)


def ep_package(name: str) -> str | None:
    """The package that carries an EP, for a user who asked for it and has a build without it."""
    ep = canonical_ep(name)
    return EP_PACKAGES.get(ep) if ep else None


# ---------------------------------------------------------------- a build for another EP

# "Specified provider 'DmlExecutionProvider' is not in available provider names.Available providers: '...'"
_SPECIFIED = re.compile(
    r"Specified provider '(?P<req>\w{2,40})' is not in available provider names(?P<rest>[^\n]{0,400})"
)
# an app's choices: "invalid choice: 'directml' (choose from 'tensorrt', 'cuda', 'cpu')"
_INVALID_CHOICE = re.compile(
    r"invalid choice:\s{0,3}'(?P<req>[\w-]{2,30})'\s{0,3}\(choose from (?P<rest>(?:'[\w-]{1,30}'(?:,\s?)?){1,12})\)",
    re.IGNORECASE,
)


def _listed(text: str) -> list[str]:
    names = [canonical_ep(m.group(1)) for m in itertools.islice(_EP_WORD.finditer(text), 16)]
    return [n for n in dict.fromkeys(names) if n]


def other_ep_build(paste: Paste) -> Iterator[Signal]:
    """A provider was asked for that this onnxruntime build does not carry, while it does carry another GPU EP: an
    AMD/Intel user with the CUDA build asking for DirectML, a CUDA user with onnxruntime-directml. (A build with only
    the CPU is the CPU_ONLY_PROVIDERS signal.)"""
    low = paste.lowered
    if "provider" not in low and "choice" not in low and "execution" not in low:
        return
    for index, line in enumerate(paste.lines):
        for pattern in (_SPECIFIED, _INVALID_CHOICE):
            m = pattern.search(line)
            if m is None:
                continue
            requested = canonical_ep(m.group("req"))
            offered = _listed(m.group("rest"))
            others = [e for e in offered if e in _GPU_SIDE and e != requested]
            if requested in _GPU_SIDE and others and requested not in offered:
                yield _build_signal(requested, offered, index, paste, m.start())
                return


def _build_signal(requested: str, offered: list[str], index: int, paste: Paste, at: int) -> Signal:
    values = {"requested": requested, "offered": ", ".join(offered), "ep_package": EP_PACKAGES[requested]}
    return Signal(SignalKind.OTHER_EP_BUILD, index, paste.starts[index] + at, {"ep": requested.lower()}, values)


# ---------------------------------------------------------------- the session runs on CPU, the reason not shown

# the providers the session got: "Session Providers: [...]", "sess.get_providers()" -> [...], "using providers [...]"
_SESSION_LIST = re.compile(
    r"(?:session|get_providers\(\)|providers? (?:used|in use|active|applied)|(?:using|running with|active|applied)"
    r" providers?)[^\n\[]{0,40}\[(?P<list>[^\[\]\n]{1,300})\]",
    re.IGNORECASE,
)
_FALLING_BACK = re.compile(
    r"\b(?:fall(?:ing|s)? ?back|fell back|defaulting|reverting|switching) to (?:the )?CPU\b"
    r"|\b(?:will |is )?(?:use|using|run(?:s|ning)?(?: on)?) (?:the )?CPU (?:instead|only)\b"
    r"|\bonly (?:the )?CPUExecutionProvider (?:is |was )?(?:used|active|applied)",
    re.IGNORECASE,
)
# the app says the GPU provider is not there at all: that is a CPU build (FM-02), not a fallback
_NOT_THERE = re.compile(
    r"not (?:available|found|installed|supported)|unavailable|doesn't come with|does not come with|no (?:gpu|cuda)"
    r" (?:execution )?providers?",
    re.IGNORECASE,
)
_BRACKETS = re.compile(r"\[(?P<list>[^\[\]\n]{1,300})\]")
_ASKED_ON_LINE = re.compile(
    r"\b(?:even though|although|despite|but|while|though)\b[^\n]{0,60}?(?:CUDA|TensorRT|GPU)", re.IGNORECASE
)
_ASKED_GPU = re.compile(r"CUDAExecutionProvider|TensorrtExecutionProvider|\bcuda\b|\bgpu\b|device[=: ]{1,3}0", re.I)
_ORT = re.compile(r"onnxruntime|\bort\b|ExecutionProvider|\.onnx\b|onnx", re.IGNORECASE)
# user code looking the GPU provider up in what the session got (get_provider_options()[...], providers.index(...))
# and not finding it: the session came up without that provider
_GPU_LOOKUP_FAILED = re.compile(
    r"\bKeyError:\s{0,3}\\?['\"](?P<ep>(?:CUDA|Tensorrt|ROCM|MIGraphX|Dml)ExecutionProvider)\\?['\"]"
    r"|\bValueError:\s{0,3}['\"](?P<ep2>(?:CUDA|Tensorrt|ROCM|MIGraphX|Dml)ExecutionProvider)['\"] is not in list",
)


# the session's providers asked for in one line and answered in the next ones (a REPL, a notebook, print output), or
# asserted to hold the GPU provider and the assertion failing
_GET_PROVIDERS = re.compile(r"\bget_providers\s{0,2}\(\s{0,2}\)")
_ANSWER_LIST = re.compile(r"^\s{0,8}(?:Out\[\d{1,4}\]:\s{0,3})?\[(?P<list>[^\[\]\n]{1,200})\]\s{0,3}$")
_ASSERT_GPU = re.compile(
    r"\bassert\b[^\n]{0,40}?['\"](?P<ep>(?:CUDA|Tensorrt|ROCM|MIGraphX|Dml)ExecutionProvider)['\"]\s{1,3}in\s{1,3}"
    r"[^\n]{0,60}?get_providers\(\)"
)


def _answered_cpu_only(paste: Paste, index: int) -> int | None:
    """The line (within three after ``index``) that answers a get_providers() call with a CPU-only list."""
    for j in range(index + 1, min(len(paste.lines), index + 4)):
        m = _ANSWER_LIST.match(paste.lines[j])
        if m:
            names = _listed(m.group("list"))
            return j if names and set(names) <= {"CPU", "Azure"} else None
    return None


def _session_answers(paste: Paste) -> Iterator[Signal]:
    for index, line in enumerate(paste.lines):
        if "get_providers" not in line:
            continue
        m = _ASSERT_GPU.search(line)
        if m and any("AssertionError" in x for x in paste.lines[index : index + 4]):
            values = {"session": f"without {m.group('ep')}"}
            yield Signal(SignalKind.SILENT_FALLBACK, index, paste.starts[index] + m.start(), {}, values)
            return
        if _GET_PROVIDERS.search(line) and "[" not in line[line.index("get_providers") :]:
            j = _answered_cpu_only(paste, index)
            if j is not None:
                yield Signal(SignalKind.SILENT_FALLBACK, j, paste.starts[j], {}, {"session": "CPU only"})
                return


def silent_fallback(paste: Paste) -> Iterator[Signal]:
    """The session ended up on the CPU although a GPU provider was asked for or is compiled in, and the paste does not
    say why: the session's own provider list holds only the CPU, or an app says it falls back to the CPU."""
    if not _ORT.search(paste.joined) or not _ASKED_GPU.search(paste.joined):
        return
    if "get_providers" in paste.joined:
        answered = next(_session_answers(paste), None)
        if answered is not None:
            yield answered
            return
    for index, line in enumerate(paste.lines):
        m = _GPU_LOOKUP_FAILED.search(line) if "Error" in line else None
        if m:
            values = {"session": f"without {m.group('ep') or m.group('ep2')}"}
            yield Signal(SignalKind.SILENT_FALLBACK, index, paste.starts[index] + m.start(), {}, values)
            return
        m = _SESSION_LIST.search(line)
        said = line[m.start() : m.start("list")].lower() if m else ""
        if m and "available" not in line[: m.start("list")].lower() and "providers=" not in said.replace(" ", ""):
            names = _listed(m.group("list"))
            if names and set(names) <= {"CPU", "Azure"}:
                yield Signal(
                    SignalKind.SILENT_FALLBACK, index, paste.starts[index] + m.start(), {}, {"session": "CPU only"}
                )
                return
        m = _BRACKETS.search(line)
        if m and _ASKED_ON_LINE.search(line, m.end()) and set(_listed(m.group("list"))) <= {"CPU", "Azure"}:
            # "providers: ['CPUExecutionProvider'] even though I passed CUDAExecutionProvider"
            yield Signal(SignalKind.SILENT_FALLBACK, index, paste.starts[index] + m.start(), {}, {"session": "CPU"})
            return
        m = _FALLING_BACK.search(line)
        if m and not _NOT_THERE.search(line):
            yield Signal(SignalKind.SILENT_FALLBACK, index, paste.starts[index] + m.start(), {}, {"session": "CPU"})
            return


# ---------------------------------------------------------------- the CUDA provider on a GPU that is not NVIDIA's

# a CUDA translation layer (ZLUDA) or a GPU of another vendor named as the one in use, with no NVIDIA GPU named
_TRANSLATION = re.compile(r"\bzluda\b", re.IGNORECASE)
_OTHER_VENDOR_GPU = re.compile(
    r"\b(?:AMD\s{1,3})?Radeon(?:\(TM\))?\s{1,3}(?:RX|Pro|VII|Vega|\d{3,4}M?)\b|\bRX\s{0,2}[5-9]\d00\s{0,2}(?:XTX?|XT|GRE)?\b"
    r"|\bIntel(?:\(R\))?\s{1,3}Arc\b",
    re.IGNORECASE,
)
_NVIDIA_GPU = re.compile(r"\b(?:GeForce|Quadro|Tesla|Jetson|TITAN|RTX|GTX)\b|\bnvidia-smi\b", re.IGNORECASE)
# what the CUDA provider does on such a machine: its CUDA/cuDNN/cuBLAS calls fail, or it fails to come up
_CUDA_PATH_FAILED = re.compile(
    r"CUDNN(?:_STATUS_\w{3,40}| failure)|CUBLAS(?:_STATUS_\w{3,40}| failure)|CUDA failure|cuda_call\.cc|CudaCall"
    r"|Failed to create CUDAExecutionProvider|CUDAExecutionProvider|onnxruntime[-_]gpu|providers_cuda",
    re.IGNORECASE,
)


def non_nvidia_gpu(paste: Paste) -> Iterator[Signal]:
    """onnxruntime-gpu's CUDA provider running on a GPU that is not NVIDIA's: a CUDA translation layer (ZLUDA) passes
    CUDA calls to an AMD GPU but cuDNN's fail, or an AMD/Intel GPU is the only one the paste names."""
    text = paste.joined[:200_000]
    failed = _CUDA_PATH_FAILED.search(text)
    if failed is None:
        return
    translated = _TRANSLATION.search(text)
    other = translated or (None if _NVIDIA_GPU.search(text) else _OTHER_VENDOR_GPU.search(text))
    if other is None:
        return
    index = paste.line_index(failed.start())  # the failure is the evidence shown; the GPU's name is what explains it
    gpu = "an AMD GPU behind ZLUDA (a CUDA translation layer)" if translated else other.group(0)
    yield Signal(SignalKind.NON_NVIDIA_GPU, index, failed.start(), {}, {"gpu": gpu})
