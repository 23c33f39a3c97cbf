"""Signals in what users write and in provider lists: a GPU run described as slow, a provider name that is no provider.

The same rules as knowledge/signals.py: bounded patterns on the bounded lines of a Paste, linear in its size.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.provider_signals import canonical_ep
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["KNOWN_PROVIDERS", "closest_provider", "provider_typo", "slow_gpu"]

# ---------------------------------------------------------------- "it is slow on the GPU"

# a run described as slow, a time per item, a GPU that idles; English, Chinese and Japanese prose
_SLOW = re.compile(
    r"\bslow(?:er|ly|ness|s)?\b|\btakes? (?:about |around |over |more than |almost )?\d{1,5}(?:\.\d{1,3})?\s?"
    r"(?:s|secs?|seconds?|minutes?|mins?)\b"
    r"|\b\d{1,5}(?:\.\d{1,3})?\s?(?:s|secs?|seconds?) (?:per|for each|for every|each|for an?|for one) "
    r"(?:image|frame|picture|page|document|call|inference|run|face|request)"
    r"|\butili[sz]ation\b[^\n]{0,40}?(?:\blow\b|below|under|only|\b\d{1,2}\s?%)"
    r"|\b(?:gpu|cuda) (?:usage|load)\b[^\n]{0,40}?(?:\blow\b|below|under|only|\b\d{1,2}\s?%)"
    r"|更慢|很慢|变慢|慢了|太慢|速度慢|遅い|遅く|遅くな",
    re.IGNORECASE,
)
_GPU_WORD = re.compile(r"\bgpu\b|\bcuda|tensorrt|directml|\bdml\b|显卡|显存|GPU|CUDA", re.IGNORECASE)
# what points at one cause, strongest first: the conv search named, a first-run-only slowness, per-call copies or an
# idle GPU, varying shapes
_EVIDENCE = (
    ("shapes", re.compile(r"EXHAUSTIVE|cudnn_conv_algo_search", re.IGNORECASE)),
    ("first", re.compile(r"\bfirst (?:run|inference|call|image|frame|time|request)|warm[- ]?up|第一次|首次|初回")),
    (
        "copies",
        re.compile(
            r"utili[sz]ation|\bgpu (?:usage|load)\b|memcpy|\bcop(?:y|ies|ying)\b|per (?:face|call|frame)"
            r"|batch size (?:of )?1\b|small batch|io ?binding|利用率|使用率",
            re.IGNORECASE,
        ),
    ),
    ("shapes", re.compile(r"dynamic|\bshapes?\b|resolution|\bocr\b|different sizes|动态|形状|尺寸|OCR", re.IGNORECASE)),
)
# the run is on the CPU (a fallback): slowness is then its consequence, not a GPU performance problem
_ON_CPU = re.compile(
    r"\b(?:run(?:s|ning)?|using|uses|used|fell back|falls? back|fallback|executes?|executing)\s(?:on\s|to\s)?"
    r"(?:the\s)?cpu\b(?!\s(?:than|vs|versus)\b)(?![^\n]{0,20}\bthan\b)"
    r"|Failed to create (?:CUDA|Tensorrt)ExecutionProvider|\bonly\s\[?['\"]?CPUExecutionProvider",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(r"\b\w{2,60}(?:Error|Exception)\b\s?:|\[ONNXRuntimeError\]|\bfailed\b|\bfailure\b", re.I)


def slow_gpu(paste: Paste) -> Iterator[Signal]:
    """The first line that says a GPU run is slow (a GPU word on it or next to it), with what points at a cause."""
    low = paste.lowered
    # every _GPU_WORD form holds one of these; every _ON_CPU form holds "cpu" or "failed to create" (each scan of a
    # megabyte costs 0.05 s, so the words decide first)
    if not any(w in low for w in ("gpu", "cuda", "tensorrt", "directml", "dml", "显卡", "显存")):
        return
    if ("cpu" in low or "failed to create" in low) and _ON_CPU.search(paste.joined):
        return  # on the CPU: slowness is the fallback's consequence
    if not _GPU_WORD.search(paste.joined):
        return  # no GPU word anywhere, so none next to a slow line
    lines = paste.lines
    for index, line in enumerate(lines):
        m = _SLOW.search(line)
        if m is None or _ERROR_LINE.search(line):
            continue
        window = "\n".join(lines[max(0, index - 1) : index + 2])
        if not _GPU_WORD.search(window):
            continue
        evidence = next((name for name, p in _EVIDENCE if p.search(paste.joined)), "none")
        values = {"said": line[:200]}
        yield Signal(SignalKind.SLOW_GPU, index, paste.starts[index] + m.start(), {"evidence": evidence}, values)
        return


# ---------------------------------------------------------------- a provider name that is no provider

KNOWN_PROVIDERS = (
    "CPUExecutionProvider",
    "CUDAExecutionProvider",
    "TensorrtExecutionProvider",
    "NvTensorRTRTXExecutionProvider",
    "DmlExecutionProvider",
    "ROCMExecutionProvider",
    "MIGraphXExecutionProvider",
    "OpenVINOExecutionProvider",
    "CoreMLExecutionProvider",
    "QNNExecutionProvider",
    "AzureExecutionProvider",
    "DnnlExecutionProvider",
    "NnapiExecutionProvider",
    "XnnpackExecutionProvider",
    "WebGpuExecutionProvider",
    "VitisAIExecutionProvider",
    "ACLExecutionProvider",
    "ArmNNExecutionProvider",
    "CANNExecutionProvider",
    "JsExecutionProvider",
    "SNPEExecutionProvider",
    "RknpuExecutionProvider",
)
_CANONICAL_TO_NAME = {
    "CUDA": "CUDAExecutionProvider",
    "TensorRT": "TensorrtExecutionProvider",
    "DirectML": "DmlExecutionProvider",
    "ROCm": "ROCMExecutionProvider",
    "MIGraphX": "MIGraphXExecutionProvider",
    "OpenVINO": "OpenVINOExecutionProvider",
    "CoreML": "CoreMLExecutionProvider",
    "QNN": "QNNExecutionProvider",
    "CPU": "CPUExecutionProvider",
    "Azure": "AzureExecutionProvider",
}
MAX_TYPO_DISTANCE = 3
# set_providers / InferenceSession: "['X'] does not contain a subset of available providers [...]"; the warning
# "Specified provider 'X' is not in available provider names"; the C/C++ "Unknown Provider Type: X"
_SUBSET = re.compile(r"(?P<req>\[[^\[\]\n]{1,400}\]|[\w'\"]{2,80}) does not contain a subset of available providers")
_SPECIFIED = re.compile(r"Specified provider '(?P<req>[\w-]{1,60})' is not in available provider names")
_UNKNOWN_TYPE = re.compile(r"Unknown Provider Type:?\s{0,3}['\"]?(?P<req>[\w-]{1,60})", re.IGNORECASE)
_QUOTED = re.compile(r"['\"]([\w-]{1,60})['\"]")
# onnxruntime-genai names its providers in short ("cuda", "dml"): such a name it calls unknown is a real provider this
# genai package was not built with (the CUDA package asked for DirectML), not a misspelling
_GENAI = re.compile(r"onnxruntime[_-]?genai", re.IGNORECASE)
_GENAI_PROVIDERS = frozenset({"cuda", "dml", "qnn", "webgpu", "openvino", "rocm", "coreml", "nvtensorrtrtx", "vitisai"})


def _distance(a: str, b: str) -> int:
    """Levenshtein distance of two short strings (both at most 60 characters here)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def closest_provider(name: str) -> str | None:
    """The real provider a misspelt or shortened name means ('cuda', 'CUDAExecutionprovider' ->
    'CUDAExecutionProvider'); None for a real name or one close to none."""
    if name in KNOWN_PROVIDERS:
        return None
    lowered = {p.lower(): p for p in KNOWN_PROVIDERS}
    if name.lower() in lowered:
        return lowered[name.lower()]
    ep = canonical_ep(name)
    if ep is not None:
        return _CANONICAL_TO_NAME.get(ep)
    best = min(KNOWN_PROVIDERS, key=lambda p: _distance(name.lower(), p.lower()))
    return best if _distance(name.lower(), best.lower()) <= MAX_TYPO_DISTANCE else None


def provider_typo(paste: Paste) -> Iterator[Signal]:
    """A requested provider that is no provider but close to one, or providers given as one string."""
    if "provider" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        if "provider" not in line.lower():
            continue
        for pattern in (_SUBSET, _SPECIFIED, _UNKNOWN_TYPE):
            m = pattern.search(line)
            if m is None:
                continue
            request = m.group("req")
            at = paste.starts[index] + m.start()
            if pattern is _SUBSET and not request.startswith("["):  # a string: its characters were compared
                name = request.strip("'\"")
                values = {"requested": name, "problem": "string", "correct": f"['{closest_provider(name) or name}']"}
                yield Signal(SignalKind.PROVIDER_TYPO, index, at, {"evidence": "string"}, values)
                return
            if pattern is _UNKNOWN_TYPE and request.lower() in _GENAI_PROVIDERS and _GENAI.search(paste.joined):
                values = {"requested": request, "offered": "other providers", "ep_package": "its own genai package"}
                yield Signal(SignalKind.OTHER_EP_BUILD, index, at, {"ep": request.lower()}, values)
                return
            names = _QUOTED.findall(request) if pattern is _SUBSET else [request]
            for name in itertools.islice(names, 8):
                correct = closest_provider(name)
                if correct is not None:
                    values = {"requested": name, "problem": "spelling", "correct": correct}
                    yield Signal(SignalKind.PROVIDER_TYPO, index, at, {"evidence": "spelling"}, values)
                    return
