"""Structure in a paste that shows what the loaded onnxruntime lacks: a GPU provider, its module, a custom op.

Three classes, each decided by the producer's own wording plus a second kind of evidence in the same paste:

- IO binding of device memory (`bind_input` / `bind_output` with a CUDA buffer) failing with `There's no data
  transfer registered for copying tensors from Device:[DeviceType:1 ...] to Device:[DeviceType:0 ...]`: the
  session has no GPU provider, so nothing can move GPU memory into it: the onnxruntime imported is the CPU package
  (alone, or shadowing onnxruntime-gpu), FM-02 / FM-01. Not when the paste passes only the CPU provider itself
  (then the session is CPU by the caller's own choice);
- `No module named 'onnxruntime'` while the paste says onnxruntime-gpu is what is installed or used: the GPU
  distribution's module directory is gone, which is what swapping packages that share one directory does
  (uninstalling the CPU package after installing the GPU one removes the folder both wrote), FM-01;
- older releases' `Fatal error: X is not a registered function/op` (no `domain:Op(version)`) for an X that is no
  ONNX operator of any domain (onnx's own schema registry says so): a custom op (PyTorch's ATen fallback, a
  TorchScript custom op) with no library registered, FM-131. A standard op there is an opset/build problem, left
  to the other rules.

Every pattern is bounded and runs only on pastes that hold its words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["binding_data"]

# DeviceType 1 is OrtDevice::GPU, 0 is OrtDevice::CPU (framework/ortdevice.h)
_NO_TRANSFER = re.compile(
    r"no data transfer registered for copying tensors from Device:\s{0,2}\[DeviceType:\s{0,2}1\b[^\]\n]{0,80}\]"
    r"\s{0,4}to Device:\s{0,2}\[DeviceType:\s{0,2}0\b",
    re.IGNORECASE,
)
# the caller asked for the CPU provider alone: a CPU session by choice, not by package
_CPU_ONLY_ASKED = re.compile(
    r"providers\s{0,2}=\s{0,2}\[\s{0,2}['\"]CPUExecutionProvider['\"]\s{0,2}\]"
    r"|(?:device|providers?)\s{0,2}=\s{0,2}['\"]cpu['\"]",
    re.IGNORECASE,
)
_NOT_INSTALLED = re.compile(r"No module named ['\"]?onnxruntime['\"]?(?![\w.-])")
# the GPU distribution said to be the one installed or used (a pip command, a `using`, an `installed`)
_GPU_DISTRIBUTION = re.compile(
    r"\b(?:using|use|used|installed|install(?:ing)?|have|with)\s(?:the\s)?[`'\"]?onnxruntime-gpu\b",
    re.IGNORECASE,
)


_LEGACY_UNREGISTERED = re.compile(r"Fatal error:\s{0,3}(?P<op>[A-Za-z_]\w{0,80}) is not a registered function/op")


def _anticipated(paste: Paste, found: re.Match[str], evidence: str) -> Signal:
    index = paste.line_index(found.start())
    values = {"message": found.group(0)[:200]}
    return Signal(SignalKind.ANTICIPATED, index, found.start(), {"evidence": evidence}, values)


def gpu_package_named(paste: Paste) -> bool:
    """Whether the paste says onnxruntime-gpu is the distribution installed or used."""
    return "onnxruntime-gpu" in paste.lowered and _GPU_DISTRIBUTION.search(paste.joined[:200_000]) is not None


def binding_data(paste: Paste) -> Iterator[Signal]:
    """GPU memory bound to a session without a GPU provider; the GPU package's module gone after a swap."""
    low = paste.lowered
    text = paste.joined[:200_000]
    if "no data transfer registered" in low and not _CPU_ONLY_ASKED.search(text):
        found = _NO_TRANSFER.search(text)
        if found is not None:
            yield _anticipated(paste, found, "gpu_data_cpu_session")
    if "no module named" in low and gpu_package_named(paste):
        found = _NOT_INSTALLED.search(text)
        if found is not None:
            yield _anticipated(paste, found, "gpu_package_module_gone")
    if "registered function/op" in low:
        yield from _legacy_custom_op(paste)


def _legacy_custom_op(paste: Paste) -> Iterator[Signal]:
    found = _LEGACY_UNREGISTERED.search(paste.joined[:200_000])
    if found is None:
        return
    import onnx.defs  # heavy: only for the pastes that hold this message

    op = found.group("op")
    if onnx.defs.has(op):  # a standard operator: an opset or build problem, not a custom op
        return
    index = paste.line_index(found.start())
    yield Signal(SignalKind.CUSTOM_OP_UNREGISTERED, index, found.start(), {}, {"domain": "", "op": op})
