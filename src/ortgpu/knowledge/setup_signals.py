"""Structure in a paste: a container or VM that shows the process no NVIDIA GPU at all, while the CUDA provider runs.

Docker's own refusal (`could not select device driver "" with capabilities: [[gpu]]`) and a missing `/dev/nvidia*`
device node say it on their own. A statement that the container has no GPU ("Docker with NO GPU", "a pod without
GPUs") says it only together with the CUDA/TensorRT provider visibly at work or crashing (its library named, a JVM
`hs_err` report, a segmentation fault): without that, the paste may be about something else that merely ran there.
The host itself said to have no NVIDIA GPU, driver or runtime counts the same way, with the provider at work.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["no_gpu_visible"]

# what the container runtime or the missing device nodes print: enough on their own
_RUNTIME = re.compile(
    r"could not select device driver \"?\"? with capabilities:?\s{0,3}\[\[gpu\]\]"
    r"|(?P<node>/dev/nvidia(?:\d{1,2}|ctl|-uvm|-uvm-tools|\*)?)'?\s{0,3}:\s{0,3}No such file or directory"
    r"|cannot access '?(?P<glob>/dev/nvidia\*?)'?",
    re.IGNORECASE,
)
# a statement that the environment has no GPU
_NO_GPU = re.compile(
    r"\b(?P<where>docker|container|pod|kubernetes|k8s|vm|virtual machine|sandbox|runner)\b[^\n]{0,40}?"
    r"\b(?:with no|without(?: an?| any)?|has no|have no|had no|there is no|no)\s(?:nvidia\s|cuda\s|physical\s)?gpus?\b"
    r"|\bno (?:nvidia |cuda )?gpus? (?:is |are )?(?:visible|available|attached|exposed|present|mounted|passed)\b"
    r"[^\n]{0,40}?\b(?P<where2>container|pod|docker|vm)\b"
    # the host itself said to have no NVIDIA GPU, driver or CUDA runtime ("CPU: AMD Ryzen (no NVIDIA CUDA runtime)")
    r"|\b(?:no|without(?: an?| any)?|lacks?(?: an?| any)?)\s(?P<host>nvidia)\s(?:cuda\s)?"
    r"(?:gpus?|cards?|drivers?|runtime)\b",
    re.IGNORECASE,
)
# the GPU provider at work or the process dying in native code
_PROVIDER_OR_CRASH = re.compile(
    r"onnxruntime_providers_(?:cuda|tensorrt)|CUDAExecutionProvider|TensorrtExecutionProvider"
    r"|AppendExecutionProvider_(?:Cuda|CUDA|Tensorrt|TensorRT)"
    r"|\bSIGSEGV\b|\bSIGABRT\b|Segmentation fault|core dumped|A fatal error has been detected by the Java Runtime"
    r"|Problematic frame|\bhs_err_pid",
    re.IGNORECASE,
)


# one of these words is in every _PROVIDER_OR_CRASH form (lowered): without them the scan of the whole paste is skipped
_PROVIDER_OR_CRASH_WORDS = (
    "onnxruntime_providers_",
    "executionprovider",
    "sigsegv",
    "sigabrt",
    "segmentation fault",
    "core dumped",
    "java runtime",
    "problematic frame",
    "hs_err_pid",
)


def no_gpu_visible(paste: Paste) -> Iterator[Signal]:
    """The first line that shows no GPU reaches the process (by the runtime's words, or stated with the provider)."""
    # every _RUNTIME form holds one of these words: without them the per-line scan cannot find anything
    runtime_words = "/dev/nvidia" in paste.lowered or "could not select device driver" in paste.lowered
    for index, line in enumerate(paste.lines if runtime_words else ()):
        found = _RUNTIME.search(line)
        if found is not None:
            node = found.group("node") or found.group("glob") or "gpu capability"
            yield Signal(SignalKind.NO_GPU_VISIBLE, index, paste.starts[index] + found.start(), {}, {"device": node})
            return
    low = paste.lowered
    if not any(w in low for w in _PROVIDER_OR_CRASH_WORDS) or _PROVIDER_OR_CRASH.search(paste.joined) is None:
        return
    for index, line in enumerate(paste.lines):
        found = _NO_GPU.search(line)
        if found is not None:
            where = (
                found.group("where") or found.group("where2") or ("host" if found.group("host") else "container")
            ).lower()
            yield Signal(SignalKind.NO_GPU_VISIBLE, index, paste.starts[index] + found.start(), {}, {"where": where})
            return
