"""Structure in a paste where what crosses the session's boundary is of a kind the caller or host cannot handle.

Classes, each told by who raises it and what it names, not by one wording:

- `non_tensor_output`: a host that returns tensors only refusing a sequence/map output (a classifier's ZipMap
  `output_probability`): the ORT server's `MLValueToTensorProto` (`Don't support Non-Tensor values`), onnxruntime-node
  (`Non tensor type is ... not supported`), onnxruntime-web's wasm (`Can't access output tensor data`) or its JS graph
  loader (`tensorValueTypeFromProto` reading `elemType` of a null tensor type); also a bare number thrown by
  onnxruntime-web/node for a model the paste says came from an sklearn converter (FM-210).
- `serving_config_dtype`: Triton's onnxruntime backend comparing config.pbtxt with the model: `unexpected datatype X
  for input 'n', expecting TYPE_Y` (FM-133).
- `serving_dtype_unsupported`: the serving backend that has no mapping for a declared dtype (`unsupported datatype
  TYPE_BF16 for input`) (FM-169).
- `feed_name_not_in_metadata` / `feed_count_mismatch`: the Java binding's own feed checks before the run (`Unknown
  input name x, expected one of [...]`, `Unexpected number of inputs, expected [a,b) found n`) (NG-05).
- `resize_scale_invalid`: Resize/Upsample's `ScalesValidation` (`Scale value should be greater than 0`): the scale is
  computed from a fed value (a size input), wrong or unset (NG-10).
- `trt_unsupported_dtype`: TensorRT's ONNX parser naming a data type it does not take (`Unsupported ONNX data type:
  BOOL (9)`, `Found unsupported input`): those nodes are left to the CUDA/CPU EPs (FM-74).
- `not_installed`: a wrapper's own import guard (`ImportError: 'onnxruntime' must be installed to use ...`): the
  Python that runs has no onnxruntime (FM-111).
- `cpu_only_applied`: insightface's `Applied providers: ['CPUExecutionProvider']` on every model with no GPU provider,
  GPU library or error named anywhere: the CPU package is what is installed (FM-02).
Every whole-paste scan is gated by a cheap word test first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.binding_data_signals import gpu_package_named
from ortgpu.knowledge.evidence import evidence_signal, first_evidence, first_line_match
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal

__all__ = ["io_kinds", "trt_probe_only"]

_NON_TENSOR = re.compile(
    r"\bDon'?t support Non-?Tensor values?\b|\bNon[- ]?tensor type is (?:temporarily )?not supported\b"
    r"|\bCan'?t access output tensor data\b",
    re.IGNORECASE,
)
_NULL_TENSOR_TYPE = re.compile(r"\bCannot read propert(?:y|ies) of (?:null|undefined) \(reading '(?:elemType|shape)'\)")
_JS_RUNTIME = re.compile(r"\bonnxruntime[- _](?:web|node)\b|\bort[- _]web\b|\bort(?:\.\w{1,20})?\.min\.js\b", re.I)
_SKLEARN_CONVERTER = re.compile(r"\b(?:skl2onnx|sklearn[- _]onnx|convert_sklearn|onnxmltools)\b", re.IGNORECASE)
# a number thrown in place of an error (a wasm C++ exception's pointer): "Uncaught 7508808", "error ... is: 7508808"
_BARE_NUMBER = re.compile(
    r"\bUncaught (?:\(in promise\) )?\d{5,12}\b"
    r"|\berror(?: message)?(?: is)?(?: only)?\s{0,3}:\s{0,3}\d{5,12}(?![\w.]\w)",
    re.IGNORECASE,
)
_CONFIG_DTYPE = re.compile(
    r"\bunexpected datatype (?:TYPE_)?\w{1,12} for (?:input|output) '[^'\n]{1,200}', expecting (?:TYPE_)?\w{1,12}",
    re.IGNORECASE,
)
_BACKEND_DTYPE = re.compile(r"\bunsupported datatype TYPE_\w{1,12} for (?:input|output)\b", re.IGNORECASE)
_JAVA_FEED_NAME = re.compile(r"\bUnknown input name \S{1,200}, expected one of \[")
_JAVA_FEED_COUNT = re.compile(r"\bUnexpected number of inputs, expected \[\d{1,6}, ?\d{1,6}\) found \d{1,6}")
_RESIZE_SCALE = re.compile(r"\bScale value should be greater than 0\b")
_TRT_DTYPE = re.compile(r"\bUnsupported ONNX data type: \w{1,20} \(\d{1,3}\)|\bFound unsupported input: \S")
_WRAPPER_GUARD = re.compile(
    r"\b(?:Import|ModuleNotFound|Runtime|Value|OS)Error: [^\n]{0,120}?['\"`]?onnxruntime['\"`]?(?![\w-]) "
    r"(?:must|needs to|has to|should) be installed\b"
)
_APPLIED = re.compile(r"\bApplied providers: \[(?P<list>[^\]\n]{1,400})\]")
_NOT_CPU_ONLY = re.compile(
    r"cuda|tensorrt|\bgpu|directml|\bdml|rocm|openvino|coreml|error|exception|warning|fail|\bnan\b|\.dll\b|\.so\b",
    re.IGNORECASE,
)


def io_kinds(paste: Paste) -> Iterator[Signal]:
    """The first line of each class the paste shows (see the module's docstring)."""
    low = paste.lowered
    yield from _non_tensor(paste)
    if "datatype" in low:
        yield from first_evidence(paste, _CONFIG_DTYPE, "serving_config_dtype")
        yield from first_evidence(paste, _BACKEND_DTYPE, "serving_dtype_unsupported")
    if "unknown input name" in low:
        yield from first_evidence(paste, _JAVA_FEED_NAME, "feed_name_not_in_metadata")
    if "unexpected number of inputs" in low:
        yield from first_evidence(paste, _JAVA_FEED_COUNT, "feed_count_mismatch")
    if "scale value" in low:
        yield from first_evidence(paste, _RESIZE_SCALE, "resize_scale_invalid")
    if "unsupported onnx data type" in low or "found unsupported input" in low:
        yield from first_evidence(paste, _TRT_DTYPE, "trt_unsupported_dtype")
    if "be installed" in low and not gpu_package_named(paste):
        yield from first_evidence(paste, _WRAPPER_GUARD, "not_installed")
    if "applied providers" in low:
        yield from _cpu_only_applied(paste)


def _non_tensor(paste: Paste) -> Iterator[Signal]:
    low = paste.lowered
    if "non" in low or "output tensor data" in low:
        hit = first_line_match(paste, _NON_TENSOR)
        if hit is not None:
            yield evidence_signal(paste, hit[0], hit[1].start(), "non_tensor_output")
            return
    if "tensorvaluetypefromproto" in low:
        hit = first_line_match(paste, _NULL_TENSOR_TYPE)
        if hit is not None:
            yield evidence_signal(paste, hit[0], hit[1].start(), "non_tensor_output")
            return
    if "onnx" not in low or ("web" not in low and "node" not in low and ".min.js" not in low):
        return
    text = paste.joined[:200_000]
    if _SKLEARN_CONVERTER.search(text) and _JS_RUNTIME.search(text):
        yield from first_evidence(paste, _BARE_NUMBER, "non_tensor_output")


def _cpu_only_applied(paste: Paste) -> Iterator[Signal]:
    if _NOT_CPU_ONLY.search(paste.joined[:200_000]):
        return
    first: tuple[int, int] | None = None
    for index, line in enumerate(paste.lines):
        for m in _APPLIED.finditer(line):
            if [n.strip(" '\"") for n in m.group("list").split(",")] != ["CPUExecutionProvider"]:
                return
            first = first or (index, m.start())
    if first is not None:
        yield evidence_signal(paste, first[0], first[1], "cpu_only_applied")


def trt_probe_only(paste: Paste) -> bool:
    """Whether TensorRT's messages are its parser probing what it can take (an unsupported data type found) and ORT
    logged every line of them below error level, with no error of ORT's own: the nodes fall back, nothing failed."""
    low = paste.lowered
    if "unsupported onnx data type" not in low and "found unsupported input" not in low:
        return False
    if _TRT_DTYPE.search(paste.joined[:200_000]) is None:
        return False
    errors = ("[e:onnxruntime", "exception", "traceback", "fail", "[onnxruntimeerror]")
    if any(word in low for word in errors):
        return False
    return all(i in paste.warned for i, line in enumerate(paste.lines) if "ERROR]" in line)
