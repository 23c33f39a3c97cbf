"""Structure in a paste where the build, the GPU or the engine lacks something the run needs.

Classes, each told by who raises it and what it names, not by one wording:

- `pybind_names_mismatch`: onnxruntime's Python files import a name (`cannot import name 'X' from
  'onnxruntime.capi._pybind_state'`) that its compiled module does not define: the Python part and the binary part
  come from two onnxruntime packages or versions installed over each other in one site-packages (FM-01). A name
  every release defines (`get_all_providers`) is left out: then the compiled module failed to load, no proof of two
  installs.
- `batchnorm_training_mode`: the inference build's BatchNormalization kernel refusing a node in training mode
  (`!is_train_ was false. Training mode is not supported in this build`): a model exported with training_mode set or
  an old onnxruntime that reads the attribute that way (FM-197).
- `trt_output_no_address`: TensorRT's enqueueV3 check that an output has `Neither address or allocator` set: a
  data-dependent output with zero elements for this input gets no buffer from the TensorRT EP (FM-198).
Every whole-paste scan is gated by a cheap word test first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.evidence import first_evidence
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal

__all__ = ["capability_gaps", "names_a_newer_binding"]

# Names every release's compiled module defines: when one of these is missing the module itself failed to load
# (older _pybind_state.py only warns `Cannot load onnxruntime.capi`), which is no proof of two installs.
_CORE_NAMES = (
    r"get_all_providers|get_available_providers|get_device|set_seed|set_default_logger_severity|InferenceSession"
    r"|SessionOptions|RunOptions|OrtValue|NodeArg|ModelMetadata|GraphOptimizationLevel|ExecutionMode|ExecutionOrder"
    r"|SessionIOBinding|OrtDevice|OrtMemType|OrtAllocatorType|OrtArenaCfg|OrtSparseFormat|get_build_info"
    r"|enable_telemetry_events|disable_telemetry_events"
)
_PYBIND_NAME = re.compile(
    r"\bcannot import name '?(?!(?:" + _CORE_NAMES + r")\b)\w{1,120}'? from "
    r"'?onnxruntime\.capi\.(?:_pybind_state|onnxruntime_pybind11_state)\b"
)
_BATCHNORM_TRAIN = re.compile(
    r"\bTraining mode is not supported in this build\b|\bbatch_norm\.h(?::\d{1,6})?[^\n]{0,300}?!is_train_ was false\b"
)
_TRT_NO_ADDRESS = re.compile(r"\bNeither address or allocator is set for output tensor\b")


def capability_gaps(paste: Paste) -> Iterator[Signal]:
    """The first line of each capability class the paste shows (see the module's docstring)."""
    low = paste.lowered
    if "cannot import name" in low and "pybind" in low and "cannot load onnxruntime.capi" not in low:
        yield from first_evidence(paste, _PYBIND_NAME, "pybind_names_mismatch")
    if "is_train_" in low or "training mode is not supported in this build" in low:
        yield from first_evidence(paste, _BATCHNORM_TRAIN, "batchnorm_training_mode")
    if "neither address or allocator" in low:
        yield from first_evidence(paste, _TRT_NO_ADDRESS, "trt_output_no_address")


def names_a_newer_binding(paste: Paste, line: str) -> bool:
    """Whether this line's missing name, from onnxruntime's compiled module, is one only some releases define."""
    return "cannot load onnxruntime.capi" not in paste.lowered and _PYBIND_NAME.search(line) is not None
