"""Signals of how onnxruntime was installed and called: two distributions at once, web backends, provider order,
data bound on a device the session does not use.

Split from knowledge/signals.py (which runs every extractor); the same rules hold: bounded patterns on the bounded
lines of a Paste.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["device_not_in_session", "installed_packages", "provider_order", "two_packages_in_prose", "web_backend"]

_FLAVOUR = r"onnxruntime(?:[-_](?:gpu|directml|openvino|rocm|qnn|silicon))?"
# `pip show X` prints "Name: X"; pip install prints "Requirement already satisfied: X" for what is there already
_NAME_LINE = re.compile(rf"^\s{{0,4}}Name:\s{{0,4}}(?P<pkg>{_FLAVOUR})\s{{0,4}}$", re.IGNORECASE)
_SATISFIED = re.compile(rf"Requirement already satisfied:\s{{0,3}}(?P<pkg>{_FLAVOUR})(?![\w-])", re.IGNORECASE)
# "Successfully installed ... onnxruntime-1.16.0 onnxruntime-gpu-1.16.0": name-version tokens
_INSTALLED_TOKEN = re.compile(rf"(?<![\w-])(?P<pkg>{_FLAVOUR})-\d{{1,3}}\.\d{{1,3}}", re.IGNORECASE)


def installed_packages(line: str) -> list[str]:
    """The onnxruntime distributions a line of pip's output says are installed (normalised names)."""
    found = [m.group("pkg") for m in (_NAME_LINE.match(line), _SATISFIED.search(line)) if m]
    if line.lstrip().startswith("Successfully installed"):
        found += [m.group("pkg") for m in itertools.islice(_INSTALLED_TOKEN.finditer(line), 16)]
    return [p.lower().replace("_", "-") for p in found]


# prose or a tool's own diagnosis: both distributions named on one line with a word that puts them side by side
_PACKAGE_WORD = re.compile(rf"(?<![\w./\\-])({_FLAVOUR})(?![\w-])", re.IGNORECASE)
_TOGETHER = re.compile(
    r"\b(?:both|conflict\w{0,4}|together|alongside|simultaneous\w{0,4}|at the same time|side by side|shadow\w{0,3}"
    r"|(?:also|still) installed|installed (?:as well|too))\b",
    re.IGNORECASE,
)
_GPU_FLAVOURS = frozenset({"onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-openvino", "onnxruntime-rocm"})


def two_packages_in_prose(paste: Paste) -> Iterator[Signal]:
    """A line naming the CPU package and a GPU flavour together ("pip installs both onnxruntime (CPU) and
    onnxruntime-gpu", optimum's "a conflicting install between `onnxruntime` and `onnxruntime-gpu`")."""
    if "onnxruntime" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        if "onnxruntime" not in line.lower() or not _TOGETHER.search(line):
            continue
        words = {w.lower().replace("_", "-") for w in itertools.islice(_PACKAGE_WORD.findall(line), 16)}
        if "onnxruntime" in words and words & _GPU_FLAVOURS:
            packages = ", ".join(sorted(words))
            yield Signal(SignalKind.BOTH_PACKAGES, index, paste.starts[index], {}, {"packages": packages})
            return


# ---------------------------------------------------------------- onnxruntime-web / onnxruntime-node backends

_NO_BACKEND = re.compile(r"no available backend found", re.IGNORECASE)
_WASM_FAILED = re.compile(
    r"\[wasm\]|initializeWebAssembly|WebAssembly\.instantiate|\.wasm\b|\bwasm\b[^\n]{0,80}?(?:fail|error|abort)"
    r"|memory access out of bounds|Aborted\(",
    re.IGNORECASE,
)
_WEBGPU_FAILED = re.compile(
    r"\[webgpu\]|\bwebgpu\b[^\n]{0,80}?(?:not supported|not available|unavailable|failed|no adapter)"
    r"|requestAdapter|navigator\.gpu",
    re.IGNORECASE,
)
_NOT_REGISTERED = re.compile(r"\[wasm\] backend not found", re.IGNORECASE)
_NATIVE_EP = re.compile(r"\b(?:cuda|dml|directml|tensorrt|coreml|webnn)\b", re.IGNORECASE)


def web_backend(paste: Paste) -> Iterator[Signal]:
    """onnxruntime-web / -node's "no available backend found": the WebAssembly (or WebGPU) backend failed to start
    (evidence "wasm" / "webgpu"), or a native EP backend (cuda, dml) the package does not register ("missing_ep")."""
    if "no available backend" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        m = _NO_BACKEND.search(line)
        if m is None:
            continue
        window = "\n".join(paste.lines[max(0, index - 3) : index + 6])
        if _NOT_REGISTERED.search(window):
            # "[wasm] backend not found": no package registered that backend at all (onnxruntime-node has no wasm)
            evidence = "missing_ep"
        elif _WASM_FAILED.search(window):
            evidence = "wasm"
        elif _WEBGPU_FAILED.search(window):
            evidence = "webgpu"
        elif _NATIVE_EP.search(paste.joined[:20_000]):
            evidence = "missing_ep"
        else:
            evidence = "wasm"  # no ERR detail: the default backends of onnxruntime-web are the wasm ones
        attributes: dict[str, str | int] = {"evidence": evidence}
        yield Signal(SignalKind.WEB_BACKEND, index, paste.starts[index] + m.start(), attributes, {"backend": evidence})
        return


# ---------------------------------------------------------------- the CPU registered before a GPU provider

_APPEND = re.compile(
    r"Append_?Execution_?Provider_?(?P<ep>CPU|CUDA|Tensorrt|TensorRT|DML|ROCm|MIGraphX|OpenVINO|CoreML)\b"
    r"|append_execution_provider_(?P<ep2>cpu|cuda|tensorrt|dml|rocm|openvino|coreml)\b",
    re.IGNORECASE,
)
_LIST_CONTEXT = re.compile(r"\bproviders\s{0,3}=\s{0,3}\[|execution_providers\s{0,3}\(?\s{0,3}\[", re.I)
_EP_NAME = re.compile(
    r"(?<![A-Za-z])(?P<ep>CPU|CUDA|Tensorrt|TensorRT|Dml|ROCM|ROCm|MIGraphX|OpenVINO|CoreML)"
    r"(?:ExecutionProvider|::default\(\))"
)
_LOOKAHEAD_LINES = 30


def provider_order(paste: Paste) -> Iterator[Signal]:
    """The CPU provider registered before a GPU one (providers are tried in the order given, and the CPU takes
    every node): `AppendExecutionProvider_CPU()` then `_CUDA()`, or `providers=['CPUExecutionProvider', 'CUDA...']`."""
    low = paste.lowered
    if "provider" not in low or "cpu" not in low:
        return
    cpu_at: int | None = None
    for index, line in enumerate(paste.lines):
        list_context = _LIST_CONTEXT.search(line)
        if list_context:
            close = line.find("]", list_context.end())  # the names inside the list only
            end = close if close >= 0 else len(line)
            names = [m.group("ep") for m in itertools.islice(_EP_NAME.finditer(line, list_context.end(), end), 8)]
            if len(names) >= 2 and names[0].upper() == "CPU" and any(n.upper() != "CPU" for n in names[1:]):
                yield _order_signal(paste, index, names[1:])
                return
        for m in itertools.islice(_APPEND.finditer(line), 8):
            ep = (m.group("ep") or m.group("ep2")).upper()
            if ep == "CPU":
                cpu_at = index if cpu_at is None else cpu_at
            elif cpu_at is not None and index - cpu_at <= _LOOKAHEAD_LINES:
                yield _order_signal(paste, index, [ep])
                return


def _order_signal(paste: Paste, index: int, after: list[str]) -> Signal:
    gpu = next(n for n in after if n.upper() != "CPU")
    return Signal(SignalKind.PROVIDER_ORDER, index, paste.starts[index], {}, {"provider": gpu})


# ---------------------------------------------------------------- data bound on a device the session does not use

# the providers the code gives the session, and data (an OrtValue, an IO binding) placed on a CUDA device
_SESSION_PROVIDERS = re.compile(r"\bproviders\s{0,3}=\s{0,3}\[(?P<list>[^\]\n]{0,300})\]")
_GPU_PROVIDER = re.compile(
    r"(?:CUDA|Tensorrt|TensorRT|ROCM|MIGraphX)ExecutionProvider|['\"](?:cuda|tensorrt)['\"]", re.I
)
_CUDA_DATA = re.compile(
    r"\bdevice_type\s{0,3}=\s{0,3}['\"]cuda['\"]"
    r"|\b(?:ortvalue_from_numpy|ortvalue_from_shape_and_type|bind_input|bind_output)\s{0,2}\([^\n]{0,200}?['\"]cuda['\"]"
    r"|\bOrtDevice\.cuda\b|\b(?:Ort::MemoryInfo|OrtMemoryInfo)\s{0,2}\(\s{0,3}\\?\"Cuda\\?\"",
    re.IGNORECASE,
)


def device_not_in_session(paste: Paste) -> Iterator[Signal]:
    """Inputs or outputs bound on a CUDA device while every provider list the code gives the session is CPU-only:
    ORT does not check the binding's device against the session's providers (a crash or a wrong-device error)."""
    text = paste.joined[:200_000]
    if "cuda" not in paste.lowered or "providers" not in paste.lowered:
        return
    lists = [m.group("list") for m in itertools.islice(_SESSION_PROVIDERS.finditer(text), 8)]
    if not lists or any(_GPU_PROVIDER.search(names) for names in lists) or not any("CPU" in n for n in lists):
        return
    for index, line in enumerate(paste.lines):
        m = _CUDA_DATA.search(line)
        if m:
            values = {"option": "a CUDA OrtValue / IO binding in a session with only the CPU provider"}
            yield Signal(SignalKind.DEVICE_NOT_IN_SESSION, index, paste.starts[index] + m.start(), {}, values)
            return
